//! What every check shares: the store, the HTTP clients and host limits,
//! the browser, the daemon settings, the worker threads and the sessions.

use std::sync::Arc;

use crate::config::DaemonConfig;
use crate::monitor::session::Sessions;
use crate::monitor::workers::Workers;
use crate::page::browser::Browsers;
use crate::page::fetch::{Clients, HostLimiter};
use crate::store::pool::StorePool;

use super::hosts::StoreHosts;

/// What every check shares.
#[derive(Debug)]
pub struct Engine {
    /// The store.
    pub stores: Arc<StorePool>,
    /// HTTP clients.
    pub clients: Clients,
    /// Per-host politeness.
    pub limiter: HostLimiter,
    /// The browser of `render: browser` watches, started on first use.
    pub browsers: Arc<Browsers>,
    /// The daemon settings.
    pub daemon: Arc<DaemonConfig>,
    /// The threads that run the checks' blocking parts, one per CPU
    /// (see [`crate::monitor::workers`]).
    pub workers: Workers,
    /// The sessions' cookie jars ([`crate::monitor::session`]).
    pub sessions: Sessions,
}

impl Engine {
    /// An engine over an open store pool.
    pub fn new(daemon: Arc<DaemonConfig>, stores: Arc<StorePool>) -> Engine {
        let mut limiter = HostLimiter::new(daemon.limits.per_host, daemon.limits.host_spacing);
        if let Some(replicas) = stores.replicas() {
            limiter = limiter.with_shared(Arc::new(StoreHosts::new(Arc::clone(replicas))));
        }
        Engine {
            stores,
            clients: Clients::new(Arc::new(daemon.fence())),
            limiter,
            browsers: Arc::new(Browsers::new(daemon.browser.clone())),
            daemon,
            workers: Workers::per_cpu(),
            sessions: Sessions::default(),
        }
    }
}
