//! What the local web servers (`view`, `study survey`, `rate serve`) share:
//! one accept loop. Each server brings its listener and its per-connection
//! handler; the loop gives every connection a task of its own, caps how many
//! run at once if asked, and has the one way of stopping: the `stop` signal
//! turning true, or its sender going away.

use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};

/// Accepts connections on `listener` and runs `handle(stream)` for each on a
/// task of its own until `stop` turns true (or its sender is dropped); with
/// `max_connections`, at most that many run at once and further ones wait to
/// be accepted. A handler's error only ends its connection: it is logged at
/// debug level under `name` with the peer's address, as is a failed accept
/// (at warning level: the listener goes on).
pub async fn accept_until_stopped<H, F, E>(
    name: &'static str,
    listener: TcpListener,
    mut stop: watch::Receiver<bool>,
    max_connections: Option<usize>,
    handle: H,
) where
    H: Fn(TcpStream) -> F,
    F: Future<Output = Result<(), E>> + Send + 'static,
    E: Display,
{
    let slots = max_connections.map(|n| Arc::new(Semaphore::new(n)));
    loop {
        // Waiting for a free slot also watches `stop`, so that a server full
        // of stalled connections still stops at once.
        let permit = match &slots {
            Some(slots) => tokio::select! {
                permit = slots.clone().acquire_owned() => match permit {
                    Ok(permit) => Some(permit),
                    Err(_) => return,
                },
                _ = stop.changed() => return,
            },
            None => None,
        };
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let work = handle(stream);
                    tokio::spawn(async move {
                        if let Err(e) = work.await {
                            log::debug!("{name}: {peer}: {e}");
                        }
                        drop(permit);
                    });
                }
                Err(e) => log::warn!("{name}: accepting a connection failed: {e}"),
            },
            _ = stop.changed() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// An echo of one line per connection; two clients at once with room for
    /// one: the second is answered only after the first ends. Then `stop`
    /// ends the loop.
    #[test]
    fn serves_each_connection_caps_them_and_stops() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let (stop, stopped) = watch::channel(false);
            let serving = tokio::spawn(accept_until_stopped(
                "test",
                listener,
                stopped,
                Some(1),
                |mut stream: TcpStream| async move {
                    let mut byte = [0u8; 1];
                    stream.read_exact(&mut byte).await?;
                    stream.write_all(&byte).await?;
                    std::io::Result::Ok(())
                },
            ));
            let mut first = TcpStream::connect(addr).await.unwrap();
            let mut second = TcpStream::connect(addr).await.unwrap();
            second.write_all(b"2").await.unwrap();
            let mut reply = [0u8; 1];
            // The first holds the only slot: the second waits.
            let waited =
                tokio::time::timeout(Duration::from_millis(300), second.read_exact(&mut reply))
                    .await;
            assert!(waited.is_err(), "served beyond the cap");
            first.write_all(b"1").await.unwrap();
            first.read_exact(&mut reply).await.unwrap();
            assert_eq!(&reply, b"1");
            second.read_exact(&mut reply).await.unwrap();
            assert_eq!(&reply, b"2");
            stop.send(true).unwrap();
            tokio::time::timeout(Duration::from_secs(5), serving)
                .await
                .expect("stopped")
                .unwrap();
        });
    }
}
