//! The local web servers' one HTTP stack (`mbag view`, `mbag rate serve`,
//! `mbag study survey`). axum routes each server's requests and speaks its
//! WebSockets, hyper reads and writes HTTP/1.1, and this module adds what a
//! server on a researcher's machine needs while a browser there is open on
//! other sites:
//!
//! - [`serve`] accepts connections: at most [`Limits::max_connections`] at
//!   once (further ones wait in the listen queue, none is refused), a time
//!   limit on each request head, one request per connection, and a pause that grows, with
//!   one log line per [`serve::ACCEPT_LOG_EVERY`], while accepting fails
//!   (out of file handles, say);
//! - [`Guard`] checks every request's `Host` (DNS rebinding), the `Origin` of
//!   every state-changing request and WebSocket upgrade, and the per-session
//!   token of form posts; it bounds each request's time and sends the
//!   security headers (no framing by other sites, a strict
//!   Content-Security-Policy, `nosniff`, `no-store`).
//!
//! Each server builds its `Router`, layers its `Guard` on it and hands both to
//! [`serve`]; stopping is the one `watch` signal every server already takes.

pub mod guard;
pub mod serve;
pub mod token;

pub use guard::{Framing, Guard};
pub use serve::{Limits, serve};
pub use token::SessionToken;

use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

/// Whether a request says its body is JSON (`content-type:
/// application/json`, any case, parameters allowed): the only posts the
/// rating and survey servers take, since a page of another site cannot send
/// that type without a preflight they never grant.
pub fn sent_as_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|t| t.to_str().ok())
        .is_some_and(|t| t.to_ascii_lowercase().starts_with("application/json"))
}

/// A JSON error reply, `{"error": message}`, with `status`: what every
/// server answers when it refuses. The message is the caller's; it must not
/// hold file paths (a page of the researcher's browser shows it).
pub fn json_error(status: StatusCode, message: impl std::fmt::Display) -> Response {
    (
        status,
        axum::Json(serde_json::json!({ "error": message.to_string() })),
    )
        .into_response()
}

/// The reply to a failure inside the server (a database, a file): the
/// details go to the log under `server`, the page gets a message without
/// paths.
pub fn internal_error(server: &str, what: impl std::fmt::Display) -> Response {
    log::warn!("{server}: {what}");
    json_error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "the server failed to do this; its log says why",
    )
}
