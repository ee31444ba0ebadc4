//! The accept loop every local web server runs: a bounded number of
//! connections, each served by hyper on a task of its own, and a pause with
//! rate-limited logging while accepting fails.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tower::ServiceExt;

/// The most connections a server holds at once when the process may open
/// many more files.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;
/// How long a peer may take to send a request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// At most one log line per this long while accepting keeps failing.
pub const ACCEPT_LOG_EVERY: Duration = Duration::from_secs(10);
/// The first pause after a failed accept; it doubles up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(10);
/// The longest pause between accepts that fail.
const MAX_PAUSE: Duration = Duration::from_secs(1);
/// hyper's read buffer: a request head must fit (hyper's own floor is 8 KiB).
const READ_BUFFER: usize = 16 * 1024;

/// How much of the machine one server may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Connections served at once (a WebSocket counts until it closes);
    /// further ones wait in the listen queue.
    pub max_connections: usize,
    /// How long a peer may take to send a request head before it is closed.
    pub head_timeout: Duration,
}

impl Limits {
    /// [`DEFAULT_MAX_CONNECTIONS`], or half of the files this process may
    /// open where that is fewer, so that a server never runs itself (and the
    /// rest of the process) out of file handles.
    pub fn for_this_process() -> Self {
        let half = open_file_limit().map_or(usize::MAX, |n| (n / 2).max(1));
        Self {
            max_connections: DEFAULT_MAX_CONNECTIONS.min(half),
            head_timeout: HEAD_TIMEOUT,
        }
    }
}

/// The soft limit on open files, from `/proc/self/limits` (Linux); `None`
/// elsewhere or when unlimited. Read from the file rather than through
/// `getrlimit` because the workspace allows no `unsafe`.
pub fn open_file_limit() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Serves `app` on `listener` until `stop` turns true (or its sender goes
/// away). `name` prefixes the log lines. Connections already being served
/// when it stops go on until they end or the runtime does (live pages hear
/// `stop` themselves).
pub async fn serve(
    name: &'static str,
    listener: TcpListener,
    app: Router,
    limits: Limits,
    mut stop: watch::Receiver<bool>,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let mut failures = AcceptFailures::default();
    loop {
        // Waiting for a free slot also watches `stop`, so that a server full
        // of stalled connections still stops at once.
        let permit = tokio::select! {
            permit = slots.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => return,
            },
            _ = stop.changed() => return,
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stop.changed() => return,
        };
        match accepted {
            Ok((stream, peer)) => {
                failures.recovered(name);
                let app = app.clone();
                tokio::spawn(async move {
                    if let Err(e) = connection(stream, permit, app, limits).await {
                        log::debug!("{name}: {peer}: {e}");
                    }
                });
            }
            Err(e) => {
                drop(permit);
                let pause = failures.failed(name, &e);
                tokio::select! {
                    _ = tokio::time::sleep(pause) => {}
                    _ = stop.changed() => return,
                }
            }
        }
    }
}

/// One connection: hyper reads its request, axum answers it (with
/// `connection: close`, set by the guard, so that an idle peer holds no
/// slot), and a WebSocket upgrade keeps the stream and its slot until the
/// socket closes. hyper's own keep-alive switch is left on: turned off, it
/// would answer an upgrade with `connection: close` too.
async fn connection(
    stream: TcpStream,
    permit: OwnedSemaphorePermit,
    app: Router,
    limits: Limits,
) -> Result<(), hyper::Error> {
    let io = TokioIo::new(Held {
        stream,
        _permit: permit,
    });
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        app.clone().oneshot(request.map(axum::body::Body::new))
    });
    hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.head_timeout)
        .max_buf_size(READ_BUFFER)
        .serve_connection(io, service)
        .with_upgrades()
        .await
}

/// A stream that holds its connection slot for as long as it lives: past
/// hyper's part, into a WebSocket that took it over.
#[derive(Debug)]
struct Held {
    stream: TcpStream,
    _permit: OwnedSemaphorePermit,
}

impl AsyncRead for Held {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Held {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// A run of failed accepts: how long to pause, and when to say so.
#[derive(Debug, Default)]
struct AcceptFailures {
    /// Failures in a row.
    streak: u32,
    /// Failures not yet reported.
    unreported: u64,
    /// When the last line was written.
    last_logged: Option<Instant>,
}

impl AcceptFailures {
    /// Notes a failure; returns the pause before the next accept. Logs the
    /// first failure of a run and then at most once per
    /// [`ACCEPT_LOG_EVERY`], with how many went unreported.
    fn failed(&mut self, name: &str, error: &std::io::Error) -> Duration {
        self.streak = self.streak.saturating_add(1);
        self.unreported += 1;
        let due = self
            .last_logged
            .is_none_or(|at| at.elapsed() >= ACCEPT_LOG_EVERY);
        if due {
            log::warn!(
                "{name}: accepting connections fails ({error}; {} time(s) since the last report); pausing up to {} ms between tries",
                self.unreported,
                MAX_PAUSE.as_millis()
            );
            self.unreported = 0;
            self.last_logged = Some(Instant::now());
        }
        pause_after(self.streak)
    }

    /// Notes a success; reports the end of a run of failures.
    fn recovered(&mut self, name: &str) {
        if self.streak > 0 {
            log::warn!(
                "{name}: accepting connections again after {} failure(s)",
                self.streak
            );
            *self = Self::default();
        }
    }
}

/// The pause after `streak` failures in a row: 10 ms, doubling, at most 1 s.
fn pause_after(streak: u32) -> Duration {
    let doublings = streak.saturating_sub(1).min(16);
    (FIRST_PAUSE * 2u32.pow(doublings)).min(MAX_PAUSE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn the_pause_grows_to_a_second() {
        assert_eq!(pause_after(1), Duration::from_millis(10));
        assert_eq!(pause_after(2), Duration::from_millis(20));
        assert_eq!(pause_after(8), Duration::from_secs(1));
        assert_eq!(pause_after(u32::MAX), Duration::from_secs(1));
    }

    #[test]
    fn failures_are_logged_once_per_interval() {
        let mut failures = AcceptFailures::default();
        let e = std::io::Error::other("no handles");
        failures.failed("t", &e);
        let first = failures.last_logged;
        for _ in 0..1000 {
            failures.failed("t", &e);
        }
        assert_eq!(
            failures.last_logged, first,
            "logged again within the interval"
        );
        assert_eq!(failures.unreported, 1000);
        failures.recovered("t");
        assert_eq!(failures.streak, 0);
    }

    #[test]
    fn the_open_file_limit_is_read() {
        if cfg!(target_os = "linux") {
            assert!(open_file_limit().is_some_and(|n| n > 0));
        }
        assert!(Limits::for_this_process().max_connections >= 1);
    }

    /// A server answering "hi" at `/`, with room for one connection and
    /// `head_timeout`: its address, its stop signal and its task.
    async fn hello(
        head_timeout: Duration,
    ) -> (
        std::net::SocketAddr,
        watch::Sender<bool>,
        tokio::task::JoinHandle<()>,
    ) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = watch::channel(false);
        let app = Router::new().route("/", get(|| async { "hi" }));
        let limits = Limits {
            max_connections: 1,
            head_timeout,
        };
        (
            addr,
            stop,
            tokio::spawn(serve("test", listener, app, limits, stopped)),
        )
    }

    /// With room for one connection, a second waits (it is not refused) and
    /// is served once the first ends; `stop` ends the loop.
    #[test]
    fn connections_beyond_the_cap_wait_and_stop_ends_the_loop() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let (addr, stop, serving) = hello(Duration::from_secs(5)).await;
            // The first sends half a head and holds the only slot.
            let mut first = TcpStream::connect(addr).await.unwrap();
            first.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
            tokio::time::sleep(Duration::from_millis(100)).await;
            let mut second = TcpStream::connect(addr).await.unwrap();
            second
                .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                .await
                .unwrap();
            let mut reply = Vec::new();
            let waited =
                tokio::time::timeout(Duration::from_millis(300), second.read_to_end(&mut reply))
                    .await;
            assert!(waited.is_err(), "served beyond the cap");
            first.write_all(b"Host: x\r\n\r\n").await.unwrap();
            let mut answer = Vec::new();
            first.read_to_end(&mut answer).await.unwrap();
            assert!(String::from_utf8_lossy(&answer).ends_with("hi"));
            second.read_to_end(&mut reply).await.unwrap();
            assert!(String::from_utf8_lossy(&reply).ends_with("hi"));
            stop.send(true).unwrap();
            tokio::time::timeout(Duration::from_secs(5), serving)
                .await
                .expect("stopped")
                .unwrap();
        });
    }

    /// A peer that never finishes its head is closed after the head timeout,
    /// and its slot serves the next one.
    #[test]
    fn a_stalled_head_is_closed() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let (addr, _stop, _serving) = hello(Duration::from_millis(200)).await;
            let mut slow = TcpStream::connect(addr).await.unwrap();
            slow.write_all(b"GET / HT").await.unwrap();
            let mut rest = Vec::new();
            let closed =
                tokio::time::timeout(Duration::from_secs(3), slow.read_to_end(&mut rest)).await;
            assert!(closed.is_ok(), "a stalled head kept its connection");
            let mut next = TcpStream::connect(addr).await.unwrap();
            next.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                .await
                .unwrap();
            let mut reply = Vec::new();
            tokio::time::timeout(Duration::from_secs(3), next.read_to_end(&mut reply))
                .await
                .expect("served after the stalled one")
                .unwrap();
            assert!(String::from_utf8_lossy(&reply).ends_with("hi"));
        });
    }
}
