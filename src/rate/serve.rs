//! The rating page's web server (`mbag rate serve`): the page and its script,
//! the two episodes of a pair as `mbag view` players (the viewer's own page
//! and script under `/episode/ID/`, with a scene that hides who played), the
//! next pending pair for a rater, and the answers.
//!
//! Routes: `GET /`, `/rate.js`, `/episode/ID/`, `/episode/ID/viewer.js`,
//! `/episode/ID/scene.json`; `POST /next` (`{"rater"}`: the next pair, which
//! starts its answering time) and `POST /answer` (the form as JSON). A POST
//! must say `content-type: application/json`, which a page of another site
//! cannot send here without a preflight this server never grants, and must
//! come from this server's own origin when the browser names one.
//!
//! Requests are small, so a bounded reader of head and body does (limits on
//! size and time, as any local program may connect); every database call opens
//! its own connection on a blocking thread, so a slow disk or another rater's
//! write never stalls the other connections. Listening is on loopback unless
//! the caller binds elsewhere.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::RateError;
use super::answer::{Answer, AnswerForm, Choice, Factor, MIN_JUSTIFICATION, Rater};
use super::db::{Db, Saved};
use super::episode::resolve;
use crate::recording::Recording;
use crate::view::scene::Scene;

const RATE_HTML: &str = include_str!("assets/rate.html");
const RATE_JS: &str = include_str!("assets/rate.js");
// The viewer's own page and script, unchanged: each side of a pair is an
// `mbag view` page in a frame, fetching `scene.json` next to itself.
const VIEW_HTML: &str = include_str!("../view/assets/index.html");
const VIEW_JS: &str = include_str!("../view/assets/viewer.js");

/// The most bytes of a request head.
const MAX_HEAD: usize = 8192;
/// The most bytes of a request body (an answer is a few kilobytes).
const MAX_BODY: usize = 64 * 1024;
/// How long a peer may take to send its whole request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once; more wait to be accepted.
const MAX_CONNECTIONS: usize = 64;
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
}

/// Serves the rating page on `listener` until `stop` turns true.
pub async fn serve(listener: TcpListener, settings: ServeSettings, stop: watch::Receiver<bool>) {
    let server = Arc::new(Server {
        settings,
        scenes: Mutex::new(Vec::new()),
    });
    crate::http::accept_until_stopped(
        "rate",
        listener,
        stop,
        Some(MAX_CONNECTIONS),
        move |stream| {
            let server = server.clone();
            async move { connection(stream, &server).await }
        },
    )
    .await;
}

/// A request as far as this server reads it.
#[derive(Debug, Default)]
struct Request {
    method: String,
    path: String,
    host: Option<String>,
    origin: Option<String>,
    content_type: Option<String>,
    body: Vec<u8>,
}

/// Why a request was not read.
#[derive(Debug)]
enum Unreadable {
    /// The peer closed, stalled or spoke something else: just close.
    Gone,
    /// Too large: answer so.
    TooLarge,
}

async fn read_request(stream: &mut TcpStream) -> Result<Request, Unreadable> {
    let read = async {
        let mut buf = Vec::with_capacity(1024);
        let mut chunk = [0u8; 4096];
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            if buf.len() >= MAX_HEAD {
                return Err(Unreadable::TooLarge);
            }
            let n = stream
                .read(&mut chunk)
                .await
                .map_err(|_| Unreadable::Gone)?;
            if n == 0 {
                return Err(Unreadable::Gone);
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let mut lines = head.split("\r\n");
        let mut parts = lines.next().unwrap_or_default().split_whitespace();
        let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
            return Err(Unreadable::Gone);
        };
        let mut request = Request {
            method: method.to_owned(),
            path: target.split('?').next().unwrap_or("/").to_owned(),
            ..Request::default()
        };
        let mut length = 0usize;
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim().to_owned();
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = value.parse().map_err(|_| Unreadable::Gone)?,
                "content-type" => request.content_type = Some(value),
                "host" => request.host = Some(value),
                "origin" => request.origin = Some(value),
                _ => {}
            }
        }
        if length > MAX_BODY {
            return Err(Unreadable::TooLarge);
        }
        let mut body = buf[head_end..].to_vec();
        while body.len() < length {
            let n = stream
                .read(&mut chunk)
                .await
                .map_err(|_| Unreadable::Gone)?;
            if n == 0 {
                return Err(Unreadable::Gone);
            }
            body.extend_from_slice(&chunk[..n]);
        }
        body.truncate(length);
        request.body = body;
        Ok(request)
    };
    tokio::time::timeout(REQUEST_TIMEOUT, read)
        .await
        .unwrap_or(Err(Unreadable::Gone))
}

/// A response: status line, content type, body.
struct Reply {
    status: &'static str,
    kind: &'static str,
    body: Vec<u8>,
}

impl Reply {
    fn text(status: &'static str, kind: &'static str, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status,
            kind,
            body: body.into(),
        }
    }

    fn json(status: &'static str, value: &serde_json::Value) -> Self {
        Self::text(status, "application/json", value.to_string())
    }

    fn error(status: &'static str, message: impl std::fmt::Display) -> Self {
        Self::json(status, &json!({ "error": message.to_string() }))
    }
}

async fn connection(mut stream: TcpStream, server: &Server) -> std::io::Result<()> {
    let reply = match read_request(&mut stream).await {
        Ok(request) => route(request, server).await,
        Err(Unreadable::TooLarge) => Reply::error("413 Content Too Large", "request too large"),
        Err(Unreadable::Gone) => return Ok(()),
    };
    let head = format!(
        "HTTP/1.1 {}\r\ncontent-type: {}\r\ncontent-length: {}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n",
        reply.status,
        reply.kind,
        reply.body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(&reply.body).await?;
    stream.shutdown().await
}

async fn route(request: Request, server: &Server) -> Reply {
    let path = request.path.as_str();
    match (request.method.as_str(), path) {
        ("GET", "/" | "/index.html") => {
            Reply::text("200 OK", "text/html; charset=utf-8", RATE_HTML)
        }
        ("GET", "/rate.js") => Reply::text("200 OK", "text/javascript; charset=utf-8", RATE_JS),
        ("GET", _) if path.starts_with("/episode/") => episode_route(path, server).await,
        ("POST", "/next" | "/answer") => {
            if let Some(refusal) = refuse_post(&request) {
                return refusal;
            }
            if path == "/next" {
                next(&request.body, server).await
            } else {
                answer(&request.body, server).await
            }
        }
        ("GET" | "POST", _) => Reply::error("404 Not Found", format!("no {path} here")),
        _ => Reply::error("405 Method Not Allowed", "only GET and POST are served"),
    }
}

/// Why a POST is not taken, if it is not.
fn refuse_post(request: &Request) -> Option<Reply> {
    let json = request
        .content_type
        .as_deref()
        .is_some_and(|t| t.to_ascii_lowercase().starts_with("application/json"));
    if !json {
        return Some(Reply::error(
            "415 Unsupported Media Type",
            "send the answer as application/json",
        ));
    }
    if let (Some(origin), Some(host)) = (&request.origin, &request.host)
        && origin != &format!("http://{host}")
    {
        return Some(Reply::error(
            "403 Forbidden",
            "only this server's own page may post",
        ));
    }
    None
}

async fn episode_route(path: &str, server: &Server) -> Reply {
    let rest = &path["/episode/".len()..];
    let (id, file) = rest.split_once('/').unwrap_or((rest, ""));
    let Ok(id) = id.parse::<i64>() else {
        return Reply::error("404 Not Found", format!("no {path} here"));
    };
    match file {
        "" | "index.html" => Reply::text("200 OK", "text/html; charset=utf-8", VIEW_HTML),
        "viewer.js" => Reply::text("200 OK", "text/javascript; charset=utf-8", VIEW_JS),
        "scene.json" => match scene(id, server).await {
            Ok(Some(json)) => Reply::text("200 OK", "application/json", json.as_bytes()),
            Ok(None) => Reply::error("404 Not Found", format!("no episode {id}")),
            Err(e) => {
                log::warn!("rate: episode {id}: {e}");
                Reply::error("500 Internal Server Error", e)
            }
        },
        _ => Reply::error("404 Not Found", format!("no {path} here")),
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

async fn next(body: &[u8], server: &Server) -> Reply {
    #[derive(serde::Deserialize)]
    struct Ask {
        rater: String,
    }
    let rater = match serde_json::from_slice::<Ask>(body) {
        Ok(ask) => match Rater::new(&ask.rater) {
            Ok(r) => r,
            Err(e) => return Reply::error("400 Bad Request", e),
        },
        Err(e) => return Reply::error("400 Bad Request", format!("expected {{\"rater\"}}: {e}")),
    };
    let db = server.settings.db.clone();
    let shown = blocking(move || Db::connect(&db)?.next_for(&rater, super::db::now())).await;
    match shown {
        Ok(Some(s)) => Reply::json(
            "200 OK",
            &json!({
                "comparison": s.comparison,
                "left": format!("/episode/{}/", s.left),
                "right": format!("/episode/{}/", s.right),
                "pending": s.pending,
                "questions": questions(),
            }),
        ),
        Ok(None) => Reply::json("200 OK", &json!({ "done": true })),
        Err(e) => status_of(&e),
    }
}

async fn answer(body: &[u8], server: &Server) -> Reply {
    let form: AnswerForm = match serde_json::from_slice(body) {
        Ok(f) => f,
        Err(e) => return Reply::error("400 Bad Request", format!("not a complete answer: {e}")),
    };
    let answer = match Answer::try_from(form) {
        Ok(a) => a,
        Err(e) => return Reply::error("400 Bad Request", e),
    };
    let db = server.settings.db.clone();
    match blocking(move || Db::connect(&db)?.save_answer(&answer, super::db::now())).await {
        Ok(Saved::New { seconds }) => {
            Reply::json("200 OK", &json!({ "stored": "new", "seconds": seconds }))
        }
        Ok(Saved::Already) => Reply::json("200 OK", &json!({ "stored": "already" })),
        Err(e) => status_of(&e),
    }
}

/// The HTTP status of an error: the page retries 5xx, not 4xx.
fn status_of(e: &RateError) -> Reply {
    match e {
        RateError::Answer(_) => Reply::error("400 Bad Request", e),
        RateError::UnknownComparison(_) => Reply::error("404 Not Found", e),
        RateError::Conflict { .. } => Reply::error("409 Conflict", e),
        _ => {
            log::warn!("rate: {e}");
            Reply::error("500 Internal Server Error", e)
        }
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
