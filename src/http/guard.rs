//! What every request to a local server passes before its route: the checks
//! that keep other sites out, a time limit, and the security headers.
//!
//! - `Host` must name the address the server listens on (a loopback name or
//!   the literal address, with its port): a page of another site that makes
//!   its own name resolve to 127.0.0.1 (DNS rebinding) is answered 421.
//! - A state-changing request (anything but `GET` and `HEAD`) and a
//!   WebSocket upgrade that carry an `Origin` must come from the server's own
//!   origin; browsers always send `Origin` on those from another site, so a
//!   request without one comes from a local program, not a page.
//! - Posts carry the server's [`SessionToken`] where the server has one.
//! - Replies say that no other site may frame the page, load it as a script
//!   or style, or read it, and that pages load nothing but their own files.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::header::{
    CACHE_CONTROL, CONNECTION, CONTENT_SECURITY_POLICY, HOST, ORIGIN, REFERRER_POLICY, UPGRADE,
    X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use base64::Engine;
use sha2::{Digest, Sha256};

use super::json_error;
use super::token::{self, SessionToken};

/// How long a request may take from its head read to its reply (a slow
/// body included).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The most bytes of a request body (forms are a few kilobytes).
pub const MAX_BODY: usize = 64 * 1024;

/// Who may show a server's pages in a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// No one (the viewer, the survey).
    Nobody,
    /// Only the server's own pages (the rating page frames two viewers).
    SameOrigin,
}

/// The checks and headers of one server.
#[derive(Clone, Debug)]
pub struct Guard {
    listening: SocketAddr,
    framing: Framing,
    /// `'sha256-...'` sources of the pages' inline `<style>` blocks.
    styles: Arc<str>,
    token: Option<SessionToken>,
    request_timeout: Duration,
}

impl Guard {
    /// The guard of a server listening on `listening` (the bound address,
    /// with its real port), serving `pages` (their inline styles are allowed
    /// by hash, nothing else inline).
    pub fn new(listening: SocketAddr, framing: Framing, pages: &[&str]) -> Self {
        let styles: String = pages
            .iter()
            .flat_map(|page| inline_styles(page))
            .map(|style| {
                let digest = Sha256::digest(style.as_bytes());
                format!(
                    " 'sha256-{}'",
                    base64::engine::general_purpose::STANDARD.encode(digest)
                )
            })
            .collect();
        Self {
            listening,
            framing,
            styles: styles.into(),
            token: None,
            request_timeout: REQUEST_TIMEOUT,
        }
    }

    /// Posts must carry `token` in the [`token::HEADER`] header.
    pub fn with_token(mut self, token: SessionToken) -> Self {
        self.token = Some(token);
        self
    }

    /// `router` behind this guard, with bodies capped at [`MAX_BODY`].
    pub fn around(self, router: Router) -> Router {
        router
            .layer(axum::middleware::from_fn_with_state(self, check))
            .layer(DefaultBodyLimit::max(MAX_BODY))
    }

    fn policy(&self, host: &str) -> String {
        let (frames, ancestors) = match self.framing {
            Framing::Nobody => ("'none'", "'none'"),
            Framing::SameOrigin => ("'self'", "'self'"),
        };
        format!(
            "default-src 'none'; script-src 'self'; style-src 'self'{}; img-src 'self' data:; \
             connect-src 'self' ws://{host}; frame-src {frames}; frame-ancestors {ancestors}; \
             base-uri 'none'; form-action 'self'",
            self.styles
        )
    }
}

/// The contents of `page`'s `<style>` blocks.
fn inline_styles(page: &str) -> Vec<&str> {
    let mut styles = Vec::new();
    let mut rest = page;
    while let Some(start) = rest.find("<style>") {
        let body = &rest[start + "<style>".len()..];
        let Some(end) = body.find("</style>") else {
            break;
        };
        styles.push(&body[..end]);
        rest = &body[end..];
    }
    styles
}

/// The middleware: refuse what another site could send, bound the time,
/// add the headers.
async fn check(State(guard): State<Guard>, request: Request, next: Next) -> Response {
    let Some(host) = request
        .headers()
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
    else {
        return json_error(StatusCode::BAD_REQUEST, "a request must name its Host");
    };
    if !host_allowed(&host, guard.listening) {
        log::debug!("refused a request for Host {host:?}");
        return json_error(
            StatusCode::MISDIRECTED_REQUEST,
            format!(
                "this server answers only to its own address ({}), not to Host {host:?}",
                guard.listening
            ),
        );
    }
    let upgrade = request.headers().contains_key(UPGRADE);
    let changes_state = upgrade || !matches!(*request.method(), Method::GET | Method::HEAD);
    if changes_state {
        if let Some(origin) = request.headers().get(ORIGIN)
            && origin.as_bytes() != format!("http://{host}").as_bytes()
        {
            log::debug!("refused a request from origin {origin:?}");
            return json_error(
                StatusCode::FORBIDDEN,
                "only this server's own pages may post here or follow it",
            );
        }
        if let Some(token) = &guard.token
            && request.method() == Method::POST
            && !request
                .headers()
                .get(token::HEADER)
                .is_some_and(|sent| token.accepts(sent.as_bytes()))
        {
            return json_error(
                StatusCode::FORBIDDEN,
                "this page's session token is missing or stale: reload the page",
            );
        }
    }
    let mut response = match tokio::time::timeout(guard.request_timeout, next.run(request)).await {
        Ok(response) => response,
        Err(_) => json_error(StatusCode::REQUEST_TIMEOUT, "the request took too long"),
    };
    let status = response.status();
    let headers = response.headers_mut();
    let frame_option = match guard.framing {
        Framing::Nobody => "DENY",
        Framing::SameOrigin => "SAMEORIGIN",
    };
    let fixed: [(HeaderName, &str); 6] = [
        (X_FRAME_OPTIONS, frame_option),
        (X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (CACHE_CONTROL, "no-store"),
        (REFERRER_POLICY, "no-referrer"),
        (
            HeaderName::from_static("cross-origin-resource-policy"),
            "same-origin",
        ),
        (
            HeaderName::from_static("cross-origin-opener-policy"),
            "same-origin",
        ),
    ];
    for (name, value) in fixed {
        headers.insert(name, HeaderValue::from_static(value));
    }
    // One request per connection: a peer that keeps its connection open and
    // idle would hold one of the server's slots. An accepted upgrade keeps
    // its `connection: upgrade`.
    if status != StatusCode::SWITCHING_PROTOCOLS {
        headers.insert(CONNECTION, HeaderValue::from_static("close"));
    }
    // The host was checked above: it is an address or `localhost`, so it is a
    // valid header value.
    if let Ok(policy) = HeaderValue::from_str(&guard.policy(&host)) {
        headers.insert(CONTENT_SECURITY_POLICY, policy);
    }
    response
}

/// Whether a request's `Host` names `listening`: its port, and `localhost`
/// or a loopback address when it listens on loopback, the literal address
/// when it listens on another, any address when it listens on all. A name
/// other than `localhost` is never accepted: that is what DNS rebinding
/// sends.
pub fn host_allowed(host: &str, listening: SocketAddr) -> bool {
    let Some((name, port)) = split_host(host) else {
        return false;
    };
    if port.unwrap_or(80) != listening.port() {
        return false;
    }
    let ip = listening.ip();
    if name.eq_ignore_ascii_case("localhost") {
        return ip.is_loopback() || ip.is_unspecified();
    }
    let Ok(named) = name.parse::<IpAddr>() else {
        return false;
    };
    named == ip || (ip.is_loopback() && named.is_loopback()) || ip.is_unspecified()
}

/// `name` and port of a `Host` value (`[::1]:8080`, `127.0.0.1:80`,
/// `localhost`).
fn split_host(host: &str) -> Option<(&str, Option<u16>)> {
    if let Some(rest) = host.strip_prefix('[') {
        let (name, after) = rest.split_once(']')?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?.parse().ok()?),
        };
        return Some((name, port));
    }
    match host.rsplit_once(':') {
        Some((name, port)) => Some((name, Some(port.parse().ok()?))),
        None => Some((host, None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(addr: &str) -> SocketAddr {
        addr.parse().unwrap()
    }

    #[test]
    fn loopback_names_and_the_address_pass_others_do_not() {
        let local = at("127.0.0.1:8080");
        for ok in [
            "127.0.0.1:8080",
            "localhost:8080",
            "LOCALHOST:8080",
            "[::1]:8080",
        ] {
            assert!(host_allowed(ok, local), "{ok}");
        }
        for bad in [
            "evil.example:8080",
            "evil.example",
            "127.0.0.1:8081",
            "127.0.0.1",
            "localhost.evil.example:8080",
            "10.0.0.5:8080",
            "",
            "[::1",
            "127.0.0.1:port",
        ] {
            assert!(!host_allowed(bad, local), "{bad}");
        }
        let lan = at("192.168.1.5:9000");
        assert!(host_allowed("192.168.1.5:9000", lan));
        assert!(!host_allowed("localhost:9000", lan));
        assert!(!host_allowed("printer.lan:9000", lan));
        let all = at("0.0.0.0:9000");
        assert!(host_allowed("192.168.1.5:9000", all));
        assert!(host_allowed("localhost:9000", all));
        assert!(!host_allowed("rebind.example:9000", all));
    }

    #[test]
    fn inline_styles_are_allowed_by_their_hash() {
        let page = "<html><style>a{}</style><p><style>b{}</style></html>";
        assert_eq!(inline_styles(page), vec!["a{}", "b{}"]);
        let guard = Guard::new(at("127.0.0.1:1"), Framing::Nobody, &[page]);
        let policy = guard.policy("127.0.0.1:1");
        assert_eq!(policy.matches("'sha256-").count(), 2);
        assert!(policy.contains("frame-ancestors 'none'"));
        assert!(policy.contains("script-src 'self';"));
        assert!(!policy.contains("unsafe"));
    }
}
