//! `semclip serve`: the clip server alone, over the store another process
//! (`semclip run`, perhaps on another machine sharing the file) fills. It
//! checks nothing and has no scheduler, so the API's `check` answers 409.
//! SIGTERM or Ctrl-C stop it after the requests in flight.

use std::sync::Arc;

use anyhow::Context;

use super::Outcome;
use crate::cli::ServeArgs;

/// Serves until stopped.
pub async fn run(args: &ServeArgs) -> anyhow::Result<Outcome> {
    let loaded = crate::daemon::load(
        args.config.config_file().as_deref(),
        args.config.watches.as_deref(),
    )
    .context("refusing to start")?;
    let daemon = Arc::new(loaded.daemon);
    let Some(addr) = args.listen.or(daemon.listen) else {
        anyhow::bail!(
            "nothing to listen on: give --listen IP:PORT or set `listen` in the daemon file"
        );
    };
    let stores = crate::daemon::open_store(&daemon)?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr().unwrap_or(addr);
    let server = crate::serve::Server::new(
        Arc::clone(&daemon),
        loaded.watches.into_iter().map(Arc::new).collect(),
        stores,
        Arc::new(crate::serve::metrics::Metrics::new()),
        None,
        local,
    );
    tracing::info!(addr = %local, database = %daemon.database, "serving");
    let _ = sd_notify::notify(&[sd_notify::NotifyState::Ready]);
    crate::serve::serve(listener, server, shutdown_signal()).await?;
    tracing::info!("stopped");
    Ok(Outcome::Success)
}

/// SIGTERM or Ctrl-C.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
