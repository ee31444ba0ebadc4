//! The survey's web server (`mbag study survey`): the page and its script
//! (embedded, so it works with no internet), the participant's rateable
//! sessions as JSON, and a `POST` of one session's answers.
//!
//! | request | answer |
//! |---|---|
//! | `GET /` | the page (`assets/survey.html`), `GET /survey.js` its script |
//! | `GET /session` | `{"token"}`: the token every post carries in `x-mbag-token` |
//! | `GET /survey.json` | `{participant, scale, items, sessions}`: the completed sessions by blinded name, with the last answer of each |
//! | `POST /answer` | a [`Submission`] as JSON (`content-type: application/json`); `200 {"saved": Answer}` or `400 {"error": ...}` |
//!
//! It runs on the shared HTTP stack ([`crate::http`]): `Host`, `Origin`, the
//! token, framing (by no one) and the limits on size, time and connections
//! are checked there, so a page of another site can neither post an answer
//! nor show the survey in a frame. Nothing is saved from a `GET` or from
//! URL parameters. Listening is on loopback unless the caller binds
//! elsewhere.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::StudyError;
use super::design::Study;
use super::survey::{self, Submission};
use crate::http::{Framing, Guard, Limits, SessionToken, internal_error, json_error};

const SURVEY_HTML: &str = include_str!("assets/survey.html");
const SURVEY_JS: &str = include_str!("assets/survey.js");

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
    let Ok(listening) = listener.local_addr() else {
        log::warn!("survey: the listener has no address");
        return;
    };
    crate::http::serve(
        "survey",
        listener,
        router(listening, site),
        Limits::for_this_process(),
        stop,
    )
    .await;
}

/// What the routes share.
#[derive(Clone, Debug)]
struct App {
    site: SurveySite,
    token: SessionToken,
}

/// The survey's routes behind its guard.
fn router(listening: SocketAddr, site: SurveySite) -> Router {
    let token = SessionToken::random();
    let page = || async { ([(CONTENT_TYPE, "text/html; charset=utf-8")], SURVEY_HTML) };
    let routes = Router::new()
        .route("/", get(page))
        .route("/index.html", get(page))
        .route(
            "/survey.js",
            get(|| async {
                (
                    [(CONTENT_TYPE, "text/javascript; charset=utf-8")],
                    SURVEY_JS,
                )
            }),
        )
        .route("/session", get(session))
        .route("/survey.json", get(overview))
        .route("/answer", post(answer))
        .fallback(|| async { json_error(StatusCode::NOT_FOUND, "no such page here") })
        .with_state(App {
            site,
            token: token.clone(),
        });
    Guard::new(listening, Framing::Nobody, &[SURVEY_HTML])
        .with_token(token)
        .around(routes)
}

fn json_reply(text: String) -> Response {
    ([(CONTENT_TYPE, "application/json")], text).into_response()
}

async fn session(State(app): State<App>) -> Response {
    json_reply(json!({ "token": app.token.as_str() }).to_string())
}

async fn overview(State(app): State<App>) -> Response {
    match tokio::task::spawn_blocking(move || app.site.overview()).await {
        Ok(Ok(text)) => json_reply(text),
        Ok(Err(e)) => internal_error("survey", e),
        Err(e) => internal_error("survey", e),
    }
}

async fn answer(State(app): State<App>, headers: HeaderMap, body: Bytes) -> Response {
    if !crate::http::sent_as_json(&headers) {
        return json_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "answers are posted as application/json",
        );
    }
    match tokio::task::spawn_blocking(move || app.site.save(&body)).await {
        Ok(Ok(text)) => json_reply(text),
        Ok(Err(e @ StudyError::Answer(_))) => json_error(StatusCode::BAD_REQUEST, e),
        Ok(Err(e)) => internal_error("survey", e),
        Err(e) => internal_error("survey", e),
    }
}
