//! The viewer's web server: the page and its script (embedded, so it works
//! with no internet), the scene as JSON, and for live viewing a WebSocket that
//! pushes each new frame.
//!
//! It answers only `GET`s of four paths, so a small reader of the request's
//! head does (bounded in size and time, as any peer may connect); the
//! WebSocket handshake and framing are tungstenite's. The request is peeked,
//! not read, so that for `/live` tungstenite reads the same bytes itself.
//! Listening is on loopback unless the caller binds elsewhere.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::SinkExt;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{broadcast, watch};
use tokio_tungstenite::tungstenite::Message;

use super::scene::{Frame, Scene};

const INDEX_HTML: &str = include_str!("assets/index.html");
const VIEWER_JS: &str = include_str!("assets/viewer.js");

/// The most bytes of a request head read before giving up on the peer.
const MAX_HEAD: usize = 8192;
/// How long a peer may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
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
    // Live followers hear `stop` too, to close their WebSockets.
    let followers = stop.clone();
    crate::http::accept_until_stopped("view", listener, stop, None, move |stream| {
        connection(stream, shown.clone(), followers.clone())
    })
    .await;
}

/// The request's method and path, from its head (peeked, not consumed).
async fn request_line(stream: &TcpStream) -> std::io::Result<Option<(String, String)>> {
    let mut buf = vec![0u8; MAX_HEAD];
    let read = async {
        loop {
            let n = stream.peek(&mut buf).await?;
            if n == 0 {
                return Ok(None);
            }
            if buf[..n].windows(4).any(|w| w == b"\r\n\r\n") || n == MAX_HEAD {
                let head = String::from_utf8_lossy(&buf[..n]).into_owned();
                let first = head.lines().next().unwrap_or_default().to_owned();
                let mut parts = first.split_whitespace();
                return Ok(match (parts.next(), parts.next()) {
                    (Some(m), Some(p)) => Some((m.to_owned(), p.to_owned())),
                    _ => None,
                });
            }
            // Wait for more bytes: peek returns at once with what is there.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(HEAD_TIMEOUT, read)
        .await
        .unwrap_or(Ok(None))
}

async fn connection(
    mut stream: TcpStream,
    shown: Shown,
    stop: watch::Receiver<bool>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let Some((method, target)) = request_line(&stream).await? else {
        return Ok(());
    };
    let path = target.split('?').next().unwrap_or("/");
    if path == "/live" {
        return follow(stream, shown, stop).await;
    }
    // Consume the head (it was only peeked).
    let mut sink = vec![0u8; MAX_HEAD];
    let _ = tokio::time::timeout(Duration::from_millis(50), async {
        use tokio::io::AsyncReadExt;
        stream.read(&mut sink).await
    })
    .await;
    let (status, kind, body) = match (method.as_str(), path) {
        ("GET", "/" | "/index.html") => ("200 OK", "text/html; charset=utf-8", INDEX_HTML.into()),
        ("GET", "/viewer.js") => ("200 OK", "text/javascript; charset=utf-8", VIEWER_JS.into()),
        ("GET", "/scene.json") => ("200 OK", "application/json", shown.scene_json()),
        ("GET", _) => ("404 Not Found", "text/plain", format!("no {path} here\n")),
        _ => (
            "405 Method Not Allowed",
            "text/plain",
            "only GET is served\n".to_owned(),
        ),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await?;
    Ok(())
}

/// A live page: the scene so far, then each frame as it comes.
async fn follow(
    stream: TcpStream,
    shown: Shown,
    mut stop: watch::Receiver<bool>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut ws = tokio_tungstenite::accept_async(stream).await?;
    // Subscribed and serialised under the lock `push` holds while appending
    // and sending: every frame is in the scene or on the channel, never both.
    let (mut frames, scene) = {
        let guard = shown.lock();
        (shown.frames.subscribe(), serde_json::to_string(&*guard)?)
    };
    ws.send(Message::text(format!("{{\"scene\":{scene}}}")))
        .await?;
    loop {
        tokio::select! {
            frame = frames.recv() => match frame {
                Ok(frame) => {
                    let text = format!("{{\"frame\":{}}}", serde_json::to_string(&*frame)?);
                    ws.send(Message::text(text)).await?;
                }
                // Too slow to keep up, or the run ended: the page reloads.
                Err(_) => break,
            },
            _ = stop.changed() => break,
        }
    }
    ws.close(None).await?;
    Ok(())
}
