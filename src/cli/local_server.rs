//! The one way `view`, `rate serve` and `study survey` run their local web
//! servers: a warning when the address is not loopback, a runtime, the
//! address printed, serving until Ctrl-C, then one stop signal.

use std::future::Future;
use std::net::SocketAddr;

use tokio::net::TcpListener;
use tokio::sync::watch;

/// Binds with `bind`, prints `announce(address)`, and runs `serve(listener,
/// stop)` until Ctrl-C. `exposed` is the warning printed when `listen` is not
/// a loopback address.
pub(crate) fn serve_until_ctrl_c<B, E, S, F>(
    listen: SocketAddr,
    exposed: &str,
    bind: B,
    announce: impl FnOnce(SocketAddr) -> String + Send + 'static,
    serve: S,
) -> anyhow::Result<u8>
where
    B: Future<Output = Result<TcpListener, E>> + Send + 'static,
    E: Into<anyhow::Error>,
    S: FnOnce(TcpListener, watch::Receiver<bool>) -> F + Send + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    if !listen.ip().is_loopback() {
        eprintln!("warning: listening on {listen}: {exposed}");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = bind.await.map_err(Into::into)?;
        println!("{}", announce(listener.local_addr()?));
        let (stop, stopped) = watch::channel(false);
        let serving = tokio::spawn(serve(listener, stopped));
        tokio::signal::ctrl_c().await?;
        let _ = stop.send(true);
        let _ = serving.await;
        anyhow::Ok(0)
    })
}
