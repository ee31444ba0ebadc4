//! The survey's web server (`mbag study survey`): the page (embedded, so it
//! works with no internet), the participant's rateable sessions as JSON, and
//! a `POST` of one session's answers.
//!
//! | request | answer |
//! |---|---|
//! | `GET /` | the page (`assets/survey.html`) |
//! | `GET /survey.json` | `{participant, scale, items, sessions}`: the completed sessions by blinded name, with the last answer of each |
//! | `POST /answer` | a [`Submission`] as JSON (`content-type: application/json`); `200 {"saved": Answer}` or `400 {"error": ...}` |
//!
//! Only a JSON body is taken, so that a page of another site cannot post a
//! plain form here (browsers ask such pages' JSON posts first, and no answer
//! allows it). Request heads and bodies are bounded in size and time, as any
//! local peer may connect; listening is on loopback unless the caller binds
//! elsewhere.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::StudyError;
use super::design::Study;
use super::survey::{self, Submission};

const SURVEY_HTML: &str = include_str!("assets/survey.html");

/// The most bytes of a request head.
const MAX_HEAD: usize = 8192;
/// The most bytes of a request body (a comment of [`survey::MAX_COMMENT`]
/// characters and the points fit).
const MAX_BODY: usize = 64 * 1024;
/// How long a peer may take to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// What the server serves: one participant of one study.
#[derive(Clone, Debug)]
pub struct SurveySite {
    dir: PathBuf,
    study: Arc<Study>,
    participant: String,
    /// Saves one at a time: each rewrites the participant's whole file.
    saving: Arc<Mutex<()>>,
}

impl SurveySite {
    /// The survey of `participant` (who must be in the study).
    pub fn new(dir: PathBuf, study: Study, participant: &str) -> Result<Self, StudyError> {
        study.participant(participant)?;
        Ok(Self {
            dir,
            study: Arc::new(study),
            participant: participant.to_owned(),
            saving: Arc::new(Mutex::new(())),
        })
    }

    fn overview(&self) -> Result<String, StudyError> {
        let sessions = survey::sessions(&self.dir, &self.study, &self.participant)?;
        Ok(json!({
            "participant": self.participant,
            "scale": self.study.survey.scale,
            "items": self.study.survey.items,
            "sessions": sessions,
        })
        .to_string())
    }

    fn save(&self, body: &[u8]) -> Result<String, StudyError> {
        let submission: Submission = serde_json::from_slice(body)
            .map_err(|e| StudyError::Answer(format!("not a survey answer: {e}")))?;
        let _one_at_a_time = self.saving.lock().unwrap_or_else(|e| e.into_inner());
        let answer = survey::submit(&self.dir, &self.study, &self.participant, submission)?;
        Ok(json!({ "saved": answer }).to_string())
    }
}

/// Binds `addr` (before serving, so a caller can print the real port).
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, StudyError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| StudyError::Bind { addr, source })
}

/// Serves `site` on `listener` until `stop` turns true.
pub async fn serve(listener: TcpListener, site: SurveySite, stop: watch::Receiver<bool>) {
    crate::http::accept_until_stopped("survey", listener, stop, None, move |stream| {
        connection(stream, site.clone())
    })
    .await;
}

/// A request: method, path, content type and body.
struct Request {
    method: String,
    path: String,
    content_type: String,
    body: Vec<u8>,
}

/// Why a request could not be read.
enum Bad {
    /// The peer left or was too slow: no answer.
    Gone,
    /// A malformed or oversized request: answered with this status.
    Status(&'static str, String),
}

async fn read_request(stream: &mut TcpStream) -> Result<Request, Bad> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        if buf.len() > MAX_HEAD {
            return Err(Bad::Status(
                "431 Request Header Fields Too Large",
                "head too large".into(),
            ));
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return Err(Bad::Gone),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.lines();
    let first = lines.next().unwrap_or_default();
    let mut parts = first.split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Err(Bad::Status("400 Bad Request", "no request line".into()));
    };
    let mut length = 0usize;
    let mut content_type = String::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = value
                .parse()
                .map_err(|_| Bad::Status("400 Bad Request", "bad content-length".into()))?;
        } else if name.eq_ignore_ascii_case("content-type") {
            content_type = value.to_ascii_lowercase();
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(Bad::Status(
                "411 Length Required",
                "send a content-length".into(),
            ));
        }
    }
    if length > MAX_BODY {
        return Err(Bad::Status(
            "413 Content Too Large",
            "body too large".into(),
        ));
    }
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return Err(Bad::Gone),
            Ok(n) => body.extend_from_slice(&chunk[..n]),
        }
    }
    body.truncate(length);
    Ok(Request {
        method: method.to_owned(),
        path: target.split('?').next().unwrap_or("/").to_owned(),
        content_type,
        body,
    })
}

async fn connection(
    mut stream: TcpStream,
    site: SurveySite,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let request = match tokio::time::timeout(REQUEST_TIMEOUT, read_request(&mut stream)).await {
        Err(_) | Ok(Err(Bad::Gone)) => return Ok(()),
        Ok(Err(Bad::Status(status, message))) => {
            let body = json!({ "error": message }).to_string();
            return respond(&mut stream, status, "application/json", &body).await;
        }
        Ok(Ok(r)) => r,
    };
    let error = |status: &'static str, e: &dyn std::fmt::Display| {
        (
            status,
            "application/json",
            json!({ "error": e.to_string() }).to_string(),
        )
    };
    let (status, kind, body) = match (request.method.as_str(), request.path.as_str()) {
        ("GET", "/" | "/index.html") => {
            ("200 OK", "text/html; charset=utf-8", SURVEY_HTML.to_owned())
        }
        ("GET", "/survey.json") => {
            let site = site.clone();
            match tokio::task::spawn_blocking(move || site.overview()).await? {
                Ok(text) => ("200 OK", "application/json", text),
                Err(e) => error("500 Internal Server Error", &e),
            }
        }
        ("POST", "/answer") if !request.content_type.starts_with("application/json") => error(
            "415 Unsupported Media Type",
            &"answers are posted as application/json",
        ),
        ("POST", "/answer") => {
            let site = site.clone();
            let body = request.body;
            match tokio::task::spawn_blocking(move || site.save(&body)).await? {
                Ok(text) => ("200 OK", "application/json", text),
                Err(e @ StudyError::Answer(_)) => error("400 Bad Request", &e),
                Err(e) => error("500 Internal Server Error", &e),
            }
        }
        ("GET", path) => error("404 Not Found", &format!("no {path} here")),
        _ => error("405 Method Not Allowed", &"GET pages, POST /answer"),
    };
    respond(&mut stream, status, kind, &body).await
}

async fn respond(
    stream: &mut TcpStream,
    status: &str,
    kind: &str,
    body: &str,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await?;
    Ok(())
}
