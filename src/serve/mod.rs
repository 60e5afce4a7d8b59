//! The clip server: clips, Atom feeds, the JSON API, the status pages,
//! metrics and health checks over HTTP (axum), inside `semclip run` or alone
//! as `semclip serve` over an existing store.
//!
//! Takes the daemon settings, the watches, the store and the metrics; gives
//! [`app`], the router (handlers tested with `oneshot`), and [`serve`],
//! which runs it on a listener until shutdown with the production layers:
//! load shedding past `server.max_in_flight` requests in flight (503 at
//! once rather than a queue), a per-request timeout (503), a 64 KiB body
//! limit, compression and request tracing.
//!
//! Clips are computed from the current snapshot and cached in memory, with
//! their rendered forms, until a new snapshot is stored: a background task
//! polls the store's current snapshot ids every [`POLL`] (the daemon also
//! asks for a poll right after a check stored a snapshot), so a portal's
//! request costs a hash lookup, and a conditional one a 304.
//!
//! Nothing here fetches a URL: every response is made from the store, the
//! watch files and the stylesheet directory.

pub mod auth;
pub mod clip;
pub mod listen;
pub mod metrics;
pub mod pages;
pub mod render;
pub mod view;

mod api;
mod backtest;
mod chart;
mod clips;
mod error;
mod explore;
mod feed;
mod format;
mod gather;
mod openapi;
mod routes;
mod series;
mod status;

use crate::store::replicas::watch_set::ReplicaSummary;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::config::{DaemonConfig, Watch};
use crate::serve::metrics::Metrics;
use crate::store::pool::StorePool;

pub use openapi::openapi;
pub use routes::app;

/// How often the store's current snapshot ids are read.
pub const POLL: Duration = Duration::from_secs(1);

/// How old the last successful read of the store may be for the server to
/// call itself ready: a few polls, so one slow read does not flap
/// `/readyz`, while a store that hangs (a PostgreSQL server gone without a
/// word) is noticed in seconds.
pub const READY_WITHIN: Duration = Duration::from_secs(5);

/// The largest request body accepted (the API takes no large bodies).
pub const MAX_BODY: usize = 64 * 1024;

/// What every handler shares.
#[derive(Debug)]
pub struct Server {
    /// The daemon settings.
    pub daemon: Arc<DaemonConfig>,
    watches: RwLock<Arc<BTreeMap<String, Arc<Watch>>>>,
    /// The store.
    pub stores: Arc<StorePool>,
    /// XSLT rendering.
    pub renderer: render::Renderer,
    /// Clips computed from the current snapshots.
    pub cache: clip::ClipCache,
    /// The process's metrics.
    pub metrics: Arc<Metrics>,
    /// Where "check now" requests go: the scheduler of `semclip run`;
    /// `None` under `semclip serve`. The scheduler owns the receiver.
    check_now: Option<mpsc::UnboundedSender<String>>,
    /// The public base URL, without a trailing slash.
    base: String,
    /// Tokens, digested for constant-time comparison.
    tokens: auth::Tokens,
    /// When a poll of the store last succeeded; `None` before the first
    /// and after a failed one.
    last_read: RwLock<Option<Instant>>,
    /// What the daemon last learned of the other replicas (PostgreSQL).
    replicas: RwLock<Option<ReplicaSummary>>,
}

impl Server {
    /// A server over `stores` for `watches`. `listen` gives the default
    /// public URL; `check_now` the scheduler's queue, if any.
    pub fn new(
        daemon: Arc<DaemonConfig>,
        watches: Vec<Arc<Watch>>,
        stores: Arc<StorePool>,
        metrics: Arc<Metrics>,
        check_now: Option<mpsc::UnboundedSender<String>>,
        listen: SocketAddr,
    ) -> Arc<Server> {
        let base = daemon.server.public_url.as_ref().map_or_else(
            || format!("http://{listen}"),
            |u| u.as_str().trim_end_matches('/').to_owned(),
        );
        Arc::new(Server {
            renderer: render::Renderer::start_pool(
                daemon.server.xslt.clone(),
                daemon.server.render_threads,
            ),
            tokens: auth::Tokens::new(&daemon.tokens),
            daemon,
            watches: RwLock::new(Arc::new(
                watches.into_iter().map(|w| (w.id.clone(), w)).collect(),
            )),
            stores,
            cache: clip::ClipCache::default(),
            metrics,
            check_now,
            base,
            last_read: RwLock::new(None),
            replicas: RwLock::new(None),
        })
    }

    /// The current watches, by id.
    pub fn watches(&self) -> Arc<BTreeMap<String, Arc<Watch>>> {
        Arc::clone(&self.watches.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// Replaces the watches (after a reload).
    pub fn set_watches(&self, watches: Vec<Arc<Watch>>) {
        *self.watches.write().unwrap_or_else(|p| p.into_inner()) =
            Arc::new(watches.into_iter().map(|w| (w.id.clone(), w)).collect());
    }

    /// Sets what the daemon learned of the other replicas.
    pub fn set_replicas(&self, summary: ReplicaSummary) {
        *self.replicas.write().unwrap_or_else(|p| p.into_inner()) = Some(summary);
    }

    /// What the daemon last learned of the other replicas, if it shares
    /// its database with any.
    pub fn replicas(&self) -> Option<ReplicaSummary> {
        self.replicas
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The public base URL, without a trailing slash.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// Reads the current snapshot ids from the store.
    pub async fn poll(&self) {
        match self.stores.run(|s| s.current_ids()).await {
            Ok(ids) => {
                self.cache.set_current(ids);
                *self.last_read.write().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
            }
            Err(error) => {
                *self.last_read.write().unwrap_or_else(|p| p.into_inner()) = None;
                tracing::error!(error = %crate::ErrorChain(&error), "cannot read the current snapshots");
            }
        }
    }

    /// Whether the store was read within [`READY_WITHIN`] and its last
    /// read did not fail: false before the first read, at once when a read
    /// fails, and soon when reads hang.
    pub fn is_ready(&self) -> bool {
        self.last_read
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_some_and(|at| at.elapsed() <= READY_WITHIN)
    }
}

/// Serves `app(server)` on `listener` until `shutdown` completes, then
/// lets requests in flight finish. Polls the store in the background.
/// Warns first when no token guards the clips ([`auth::warn_if_open`]).
pub async fn serve(
    listener: tokio::net::TcpListener,
    server: Arc<Server>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    auth::warn_if_open(&server.tokens, &server.watches());
    server.poll().await;
    let poller = {
        let server = Arc::clone(&server);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(POLL);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                server.poll().await;
            }
        })
    };
    let router = routes::with_layers(app(Arc::clone(&server)), &server.daemon);
    let settings = &server.daemon.server;
    let limits = listen::Limits {
        header_timeout: settings.header_timeout,
        max_connections: listen::connection_cap(
            settings.max_connections,
            server.daemon.limits.concurrency,
        ),
        max_client_connections: settings.max_client_connections,
    };
    tracing::debug!(?limits, "connection limits");
    let result = listen::serve(listener, router, limits, shutdown).await;
    poller.abort();
    result
}
