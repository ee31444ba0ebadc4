//! The rating page's web server (`mbag rate serve`): the page and its script,
//! the two episodes of a pair as `mbag view` players (the viewer's own page
//! and script under `/episode/ID/`, with a scene that hides who played), the
//! next pending pair for a rater, and the answers.
//!
//! Routes: `GET /`, `/rate.js`, `/session` (the page's token),
//! `/episode/ID/`, `/episode/ID/viewer.js`, `/episode/ID/scene.json`;
//! `POST /next` (`{"rater"}`: the next pair, which starts its answering
//! time) and `POST /answer` (the form as JSON). It runs on the shared HTTP
//! stack ([`crate::http`]): `Host`, `Origin`, the session token, framing (by
//! its own page only) and the limits on size, time and connections are
//! checked there. A post must also say `content-type: application/json`.
//!
//! Every database call opens its own connection on a blocking thread, so a
//! slow disk or another rater's write never stalls the other connections.
//! A failure inside the server is logged in full and answered without
//! paths. Listening is on loopback unless the caller binds elsewhere.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path as RoutePath, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::RateError;
use super::answer::{Answer, AnswerForm, Choice, Factor, MIN_JUSTIFICATION, Rater};
use super::db::{Db, Saved};
use super::episode::resolve;
use crate::http::{Framing, Guard, Limits, SessionToken, internal_error, json_error};
use crate::recording::Recording;
use crate::view::scene::Scene;

const RATE_HTML: &str = include_str!("assets/rate.html");
const RATE_JS: &str = include_str!("assets/rate.js");
// The viewer's own page and script, unchanged: each side of a pair is an
// `mbag view` page in a frame, fetching `scene.json` next to itself.
const VIEW_HTML: &str = include_str!("../view/assets/index.html");
const VIEW_JS: &str = include_str!("../view/assets/viewer.js");

/// Scenes kept ready (replaying a long recording takes a moment).
const SCENE_CACHE: usize = 8;

/// What the server reads.
#[derive(Clone, Debug)]
pub struct ServeSettings {
    /// The rating database (made by `mbag rate pairs`).
    pub db: PathBuf,
    /// The folder the database's episode paths are relative to.
    pub recordings: PathBuf,
}

/// Binds `addr` (before serving, so a caller can print the real port).
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, RateError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| RateError::Io {
            path: PathBuf::from(addr.to_string()),
            source,
        })
}

#[derive(Debug)]
struct Server {
    settings: ServeSettings,
    scenes: Mutex<Vec<(i64, Arc<String>)>>,
    token: SessionToken,
}

/// Serves the rating page on `listener` until `stop` turns true.
pub async fn serve(listener: TcpListener, settings: ServeSettings, stop: watch::Receiver<bool>) {
    let Ok(listening) = listener.local_addr() else {
        log::warn!("rate: the listener has no address");
        return;
    };
    crate::http::serve(
        "rate",
        listener,
        router(listening, settings),
        Limits::for_this_process(),
        stop,
    )
    .await;
}

/// The rating server's routes behind its guard.
fn router(listening: SocketAddr, settings: ServeSettings) -> Router {
    let token = SessionToken::random();
    let server = Arc::new(Server {
        settings,
        scenes: Mutex::new(Vec::new()),
        token: token.clone(),
    });
    let routes = Router::new()
        .route("/", get(|| async { html(RATE_HTML) }))
        .route("/index.html", get(|| async { html(RATE_HTML) }))
        .route("/rate.js", get(|| async { script(RATE_JS) }))
        .route("/session", get(session))
        .route("/episode/{id}/", get(|| async { html(VIEW_HTML) }))
        .route(
            "/episode/{id}/index.html",
            get(|| async { html(VIEW_HTML) }),
        )
        .route("/episode/{id}/viewer.js", get(|| async { script(VIEW_JS) }))
        .route("/episode/{id}/scene.json", get(episode_scene))
        .route("/next", post(next))
        .route("/answer", post(answer))
        .fallback(|| async { json_error(StatusCode::NOT_FOUND, "no such page here") })
        .with_state(server);
    Guard::new(listening, Framing::SameOrigin, &[RATE_HTML, VIEW_HTML])
        .with_token(token)
        .around(routes)
}

fn html(page: &'static str) -> Response {
    ([(CONTENT_TYPE, "text/html; charset=utf-8")], page).into_response()
}

fn script(code: &'static str) -> Response {
    ([(CONTENT_TYPE, "text/javascript; charset=utf-8")], code).into_response()
}

fn json_reply(value: &serde_json::Value) -> Response {
    ([(CONTENT_TYPE, "application/json")], value.to_string()).into_response()
}

/// The page's token for its posts (readable by this server's own pages only).
async fn session(State(server): State<Arc<Server>>) -> Response {
    json_reply(&json!({ "token": server.token.as_str() }))
}

/// Why a post's body is not taken, if it is not: it must be JSON.
fn refuse_body(headers: &HeaderMap) -> Option<Response> {
    (!crate::http::sent_as_json(headers)).then(|| {
        json_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "send the answer as application/json",
        )
    })
}

async fn episode_scene(
    State(server): State<Arc<Server>>,
    RoutePath(id): RoutePath<String>,
) -> Response {
    let Ok(id) = id.parse::<i64>() else {
        return json_error(StatusCode::NOT_FOUND, "no such episode");
    };
    match scene(id, &server).await {
        Ok(Some(json)) => ([(CONTENT_TYPE, "application/json")], json.to_string()).into_response(),
        Ok(None) => json_error(StatusCode::NOT_FOUND, format!("no episode {id}")),
        Err(e) => internal_error("rate", format!("episode {id}: {e}")),
    }
}

/// Episode `id`'s scene as JSON, with who played and the episode's name
/// hidden, so that raters judge what they see rather than whose it is.
async fn scene(id: i64, server: &Server) -> Result<Option<Arc<String>>, String> {
    if let Some((_, json)) = lock(&server.scenes).iter().find(|(i, _)| *i == id) {
        return Ok(Some(json.clone()));
    }
    let settings = server.settings.clone();
    let made = tokio::task::spawn_blocking(move || -> Result<Option<String>, String> {
        let db = Db::connect(&settings.db).map_err(|e| e.to_string())?;
        let Some(episode) = db.episode(id).map_err(|e| e.to_string())? else {
            return Ok(None);
        };
        let file = resolve(&settings.recordings, &episode.info.path)
            .ok_or_else(|| format!("episode path {:?} leaves the folder", episode.info.path))?;
        let rec = Recording::read(&file).map_err(|e| e.to_string())?;
        let mut scene = Scene::of_recording(&rec).map_err(|e| e.to_string())?;
        scene.episode_id = format!("episode {id}");
        for p in &mut scene.players {
            p.controller = "hidden".into();
        }
        serde_json::to_string(&scene)
            .map(Some)
            .map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| e.to_string())??;
    let Some(json) = made else {
        return Ok(None);
    };
    let json = Arc::new(json);
    let mut cache = lock(&server.scenes);
    if cache.len() >= SCENE_CACHE {
        cache.remove(0);
    }
    cache.push((id, json.clone()));
    Ok(Some(json))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The form's questions, for the page to draw.
fn questions() -> serde_json::Value {
    json!({
        "overall": {
            "question": "Which side did better overall?",
            "choices": ["left", "draw", "right"],
        },
        "factors": Factor::ALL.iter().map(|f| json!({
            "key": f.key(),
            "question": f.question(),
            "choices": Choice::ALL.iter().map(|c| c.name()).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "min_justification": MIN_JUSTIFICATION,
    })
}

async fn next(State(server): State<Arc<Server>>, headers: HeaderMap, body: Bytes) -> Response {
    #[derive(serde::Deserialize)]
    struct Ask {
        rater: String,
    }
    if let Some(refusal) = refuse_body(&headers) {
        return refusal;
    }
    let rater = match serde_json::from_slice::<Ask>(&body) {
        Ok(ask) => match Rater::new(&ask.rater) {
            Ok(r) => r,
            Err(e) => return json_error(StatusCode::BAD_REQUEST, e),
        },
        Err(e) => {
            return json_error(
                StatusCode::BAD_REQUEST,
                format!("expected {{\"rater\"}}: {e}"),
            );
        }
    };
    let db = server.settings.db.clone();
    let shown = blocking(move || Db::connect(&db)?.next_for(&rater, super::db::now())).await;
    match shown {
        Ok(Some(s)) => json_reply(&json!({
            "comparison": s.comparison,
            "left": format!("/episode/{}/", s.left),
            "right": format!("/episode/{}/", s.right),
            "pending": s.pending,
            "questions": questions(),
        })),
        Ok(None) => json_reply(&json!({ "done": true })),
        Err(e) => status_of(&e),
    }
}

async fn answer(State(server): State<Arc<Server>>, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(refusal) = refuse_body(&headers) {
        return refusal;
    }
    let form: AnswerForm = match serde_json::from_slice(&body) {
        Ok(f) => f,
        Err(e) => {
            return json_error(
                StatusCode::BAD_REQUEST,
                format!("not a complete answer: {e}"),
            );
        }
    };
    let answer = match Answer::try_from(form) {
        Ok(a) => a,
        Err(e) => return json_error(StatusCode::BAD_REQUEST, e),
    };
    let db = server.settings.db.clone();
    match blocking(move || Db::connect(&db)?.save_answer(&answer, super::db::now())).await {
        Ok(Saved::New { seconds }) => json_reply(&json!({ "stored": "new", "seconds": seconds })),
        Ok(Saved::Already) => json_reply(&json!({ "stored": "already" })),
        Err(e) => status_of(&e),
    }
}

/// The reply to an error: what the rater can fix is a 4xx with its message
/// (the page shows it and stops); anything else is a 500 without paths
/// (the page keeps the answer and sends it again).
fn status_of(e: &RateError) -> Response {
    match e {
        RateError::Answer(_) => json_error(StatusCode::BAD_REQUEST, e),
        RateError::UnknownComparison(_) => json_error(StatusCode::NOT_FOUND, e),
        RateError::NotShown { .. } | RateError::Conflict { .. } => {
            json_error(StatusCode::CONFLICT, e)
        }
        _ => internal_error("rate", e),
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, RateError> + Send + 'static,
) -> Result<T, RateError> {
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|e| {
        Err(RateError::Db {
            path: Path::new("?").to_owned(),
            message: format!("the database call failed: {e}"),
        })
    })
}
