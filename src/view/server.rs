//! The viewer's web server: the page and its script (embedded, so it works
//! with no internet), the scene as JSON, and for live viewing a WebSocket that
//! pushes each new frame. It runs on the shared HTTP stack ([`crate::http`]):
//! `Host`, `Origin` and framing are checked there. Listening is on loopback
//! unless the caller binds elsewhere.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::net::TcpListener;
use tokio::sync::{broadcast, watch};

use super::scene::{Frame, Scene};
use crate::http::{Framing, Guard, Limits};

const INDEX_HTML: &str = include_str!("assets/index.html");
const VIEWER_JS: &str = include_str!("assets/viewer.js");

/// Frames a slow live page may fall behind before it is dropped.
const LIVE_BACKLOG: usize = 1024;

/// Why the viewer could not serve.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// What the server shows: a finished scene, or one that grows.
#[derive(Clone, Debug)]
pub struct Shown {
    scene: Arc<Mutex<Scene>>,
    live: bool,
    frames: broadcast::Sender<Arc<Frame>>,
}

impl Shown {
    /// A recording's scene.
    pub fn finished(scene: Scene) -> Self {
        let (frames, _) = broadcast::channel(1);
        Self {
            scene: Arc::new(Mutex::new(scene)),
            live: false,
            frames,
        }
    }

    /// A scene that grows as frames are [`Shown::push`]ed; pages follow it.
    pub fn live(scene: Scene) -> Self {
        let (frames, _) = broadcast::channel(LIVE_BACKLOG);
        Self {
            scene: Arc::new(Mutex::new(scene)),
            live: true,
            frames,
        }
    }

    /// Adds a frame and sends it to every following page.
    pub fn push(&self, frame: Frame) {
        let frame = Arc::new(frame);
        // Appended and sent under one lock: a page that subscribes and takes
        // the scene under it sees each frame exactly once.
        let mut scene = self.lock();
        scene.frames.push((*frame).clone());
        // No page following is not an error.
        let _ = self.frames.send(frame);
        drop(scene);
    }

    /// Starts over with a new scene (the next episode of a live run).
    pub fn replace(&self, scene: Scene) {
        *self.lock() = scene;
    }

    /// The scene as it stands.
    pub fn snapshot(&self) -> Scene {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Scene> {
        self.scene.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn scene_json(&self) -> String {
        let mut value = serde_json::to_value(&*self.lock()).unwrap_or_default();
        if let Some(map) = value.as_object_mut() {
            map.insert("live".into(), self.live.into());
        }
        value.to_string()
    }
}

/// Binds `addr` (before serving, so a caller can print the real port).
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, ViewError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| ViewError::Bind { addr, source })
}

/// Serves `shown` on `listener` until `stop` turns true.
pub async fn serve(listener: TcpListener, shown: Shown, stop: watch::Receiver<bool>) {
    let Ok(listening) = listener.local_addr() else {
        log::warn!("view: the listener has no address");
        return;
    };
    crate::http::serve(
        "view",
        listener,
        router(listening, shown, stop.clone()),
        Limits::for_this_process(),
        stop,
    )
    .await;
}

/// What the routes share.
#[derive(Clone, Debug)]
struct App {
    shown: Shown,
    /// Live followers hear `stop` too, to close their WebSockets.
    stop: watch::Receiver<bool>,
}

/// The viewer's routes behind its guard.
fn router(listening: SocketAddr, shown: Shown, stop: watch::Receiver<bool>) -> Router {
    let routes = Router::new()
        .route("/", get(page))
        .route("/index.html", get(page))
        .route("/viewer.js", get(script))
        .route("/scene.json", get(scene))
        .route("/live", get(live))
        .fallback(|| async { (StatusCode::NOT_FOUND, "no such page here\n") })
        .with_state(App { shown, stop });
    Guard::new(listening, Framing::Nobody, &[INDEX_HTML]).around(routes)
}

async fn page() -> Response {
    ([(CONTENT_TYPE, "text/html; charset=utf-8")], INDEX_HTML).into_response()
}

async fn script() -> Response {
    (
        [(CONTENT_TYPE, "text/javascript; charset=utf-8")],
        VIEWER_JS,
    )
        .into_response()
}

async fn scene(State(app): State<App>) -> Response {
    ([(CONTENT_TYPE, "application/json")], app.shown.scene_json()).into_response()
}

async fn live(State(app): State<App>, upgrade: WebSocketUpgrade) -> Response {
    upgrade.on_upgrade(move |socket| async move {
        if let Err(e) = follow(socket, app.shown, app.stop).await {
            log::debug!("view: a live page: {e}");
        }
    })
}

/// A live page: the scene so far, then each frame as it comes, until the
/// page goes away, falls behind, or the server stops. The socket is read as
/// well as written, so that a page that closes while no frame is coming (a
/// finished recording, a paused run) releases its connection at once.
async fn follow(
    mut socket: WebSocket,
    shown: Shown,
    mut stop: watch::Receiver<bool>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    // Subscribed and serialised under the lock `push` holds while appending
    // and sending: every frame is in the scene or on the channel, never both.
    let (mut frames, scene) = {
        let guard = shown.lock();
        (shown.frames.subscribe(), serde_json::to_string(&*guard)?)
    };
    socket
        .send(Message::Text(format!("{{\"scene\":{scene}}}").into()))
        .await?;
    loop {
        tokio::select! {
            frame = frames.recv() => match frame {
                Ok(frame) => {
                    let text = format!("{{\"frame\":{}}}", serde_json::to_string(&*frame)?);
                    socket.send(Message::Text(text.into())).await?;
                }
                // Too slow to keep up, or the run ended: the page reloads.
                Err(_) => break,
            },
            incoming = socket.recv() => match incoming {
                // The page sends nothing but its close.
                Some(Ok(Message::Close(_)) | Err(_)) | None => return Ok(()),
                Some(Ok(_)) => {}
            },
            _ = stop.changed() => break,
        }
    }
    // The page may already be gone.
    let _ = socket.send(Message::Close(None)).await;
    Ok(())
}
