//! The clip server's accept loop: slow and idle clients cannot hold the
//! server, nor the daemon's own fetches, hostage.
//!
//! `axum::serve` reads request headers without a deadline and accepts
//! connections until the process runs out of file descriptors: 200
//! anonymous connections that send a request line a byte at a time once
//! took a daemon (descriptor limit 160) offline, health probes and its own
//! page fetches failing with "Too many open files". This loop serves the
//! same router with:
//!
//! - **a header deadline** (`server.header_timeout`, default 10 s): a
//!   request's headers must arrive within it, and a kept-alive connection
//!   waiting for its next request is closed after it too (hyper starts the
//!   deadline whenever it waits for a request head);
//! - **a cap on one client's connections** (`server.max_client_connections`,
//!   default 64, by peer IP address): one slow client fills its own share,
//!   not the server, so health probes and other clients still get in;
//! - **a cap on open connections**: a new connection past the cap is
//!   closed at once, before it can take a descriptor for long. The cap is
//!   `server.max_connections` (default 512), lowered so that the
//!   connections can never take the descriptors the daemon needs for its
//!   own work: [`FD_RESERVE`] plus [`FDS_PER_CHECK`] per concurrent check
//!   are kept out of the soft `RLIMIT_NOFILE` (raised to the hard limit at
//!   start);
//! - **accept errors** (`EMFILE`, `ENFILE`, ...) that wait a moment instead
//!   of spinning.
//!
//! HTTP/1.1 only: browsers, portals and `curl` speak it to a plain-HTTP
//! intranet server, and HTTP/2 without TLS (prior knowledge) would add a
//! second protocol whose idle connections need their own bounds.

use std::future::Future;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};

use crate::sync::lock;

/// Descriptors kept for the daemon itself whatever the connection cap: the
/// store's connections, its log, the watches directory watcher, the demo
/// site, the XSLT files.
pub const FD_RESERVE: u64 = 64;

/// Descriptors one check in flight may use (its HTTP connections, with a
/// redirect and a retry, and the store).
pub const FDS_PER_CHECK: u64 = 4;

/// The message of the log line (info level) that reports the address the
/// server actually bound, in its `addr` field: with `listen: 127.0.0.1:0`
/// the system picks the port, and this line is how a test, or a person,
/// learns it (`... clip server listening addr=127.0.0.1:41093`).
pub const LISTENING: &str = "clip server listening";

/// How long shutdown waits for connections to finish their responses.
pub const DRAIN: Duration = Duration::from_secs(30);

/// How long the loop pauses after an accept error that is not about one
/// connection (out of descriptors or memory).
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// The connection limits of one server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Headers deadline and keep-alive idle time.
    pub header_timeout: Duration,
    /// Connections open at once.
    pub max_connections: usize,
    /// Connections open at once from one IP address.
    pub max_client_connections: usize,
}

/// Open connections by peer address.
#[derive(Debug, Default)]
struct Clients(std::sync::Mutex<std::collections::HashMap<IpAddr, usize>>);

/// One connection counted against its client; uncounted when dropped.
struct ClientSlot {
    clients: Arc<Clients>,
    ip: IpAddr,
}

impl Clients {
    /// Counts a connection from `ip`, unless it already has `max`.
    fn admit(self: &Arc<Self>, ip: IpAddr, max: usize) -> Option<ClientSlot> {
        let mut open = lock(&self.0);
        let n = open.entry(ip).or_insert(0);
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(ClientSlot {
            clients: Arc::clone(self),
            ip,
        })
    }
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut open = lock(&self.clients.0);
        if let Some(n) = open.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// Raises the soft descriptor limit to the hard one (as servers do at
/// start) and gives the connection cap that leaves the daemon its own
/// descriptors: `configured`, at most the soft limit less [`FD_RESERVE`]
/// and [`FDS_PER_CHECK`] per check in flight, at least 1.
pub fn connection_cap(configured: usize, concurrency: usize) -> usize {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let mut soft = limit.current;
    if let (Some(current), Some(maximum)) = (limit.current, limit.maximum)
        && maximum > current
    {
        let raised = Rlimit {
            current: Some(maximum),
            maximum: Some(maximum),
        };
        match setrlimit(Resource::Nofile, raised) {
            Ok(()) => soft = Some(maximum),
            Err(error) => {
                tracing::debug!(error = %crate::ErrorChain(&error), "cannot raise the descriptor limit")
            }
        }
    }
    cap_for(configured, concurrency, soft)
}

/// The connection cap under a soft descriptor limit `soft` (`None`:
/// unlimited).
fn cap_for(configured: usize, concurrency: usize, soft: Option<u64>) -> usize {
    let reserve = FD_RESERVE + FDS_PER_CHECK * concurrency as u64;
    let spare = soft.map_or(u64::MAX, |s| s.saturating_sub(reserve).max(1));
    let cap = usize::try_from(spare).unwrap_or(usize::MAX);
    configured.min(cap).max(1)
}

/// Serves `router` on `listener` within `limits` until `shutdown`
/// completes, then lets open connections finish (at most [`DRAIN`]).
/// Logs the bound address first ([`LISTENING`]).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    match listener.local_addr() {
        Ok(addr) => tracing::info!(%addr, "{LISTENING}"),
        Err(error) => {
            tracing::warn!(error = %crate::ErrorChain(&error), "cannot read the address the server is bound to")
        }
    }
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let clients = Arc::new(Clients::default());
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    tokio::pin!(shutdown);
    let mut shed = 0u64;
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) if per_connection(&error) => continue,
            Err(error) => {
                tracing::warn!(error = %crate::ErrorChain(&error), "cannot accept a connection: pausing");
                tokio::time::sleep(ACCEPT_PAUSE).await;
                continue;
            }
        };
        let Some(slot) = clients.admit(peer.ip(), limits.max_client_connections) else {
            // One client over its share: close it now.
            shed += 1;
            if shed.is_power_of_two() {
                tracing::warn!(shed, client = %peer.ip(), "too many connections from one client: closing new ones");
            }
            continue;
        };
        let Ok(permit) = Arc::clone(&permits).try_acquire_owned() else {
            // Over the cap: close it now, before it holds a descriptor.
            shed += 1;
            if shed.is_power_of_two() {
                tracing::warn!(
                    shed,
                    cap = limits.max_connections,
                    "too many open connections: closing new ones"
                );
            }
            continue;
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(router.clone());
        let connection = http.serve_connection(TokioIo::new(stream), service);
        let mut stop = stop_rx.clone();
        tokio::spawn(async move {
            let _held = (permit, slot);
            tokio::pin!(connection);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(error) = result {
                        tracing::debug!(error = %crate::ErrorChain(&error), "connection ended");
                    }
                    return;
                }
                _ = stop.wait_for(|stop| *stop) => {}
            }
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    // Every connection holds a permit: all of them back means all closed.
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(DRAIN, permits.acquire_many(all)).await;
    Ok(())
}

/// Accept errors that concern one connection only (it was reset before it
/// was accepted): the next accept may succeed at once.
fn per_connection(error: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset, Interrupted};
    matches!(
        error.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset | Interrupted
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_leaves_the_daemon_its_descriptors() {
        // The daemon: 160 descriptors, 16 checks in flight.
        assert_eq!(cap_for(512, 16, Some(160)), 160 - 64 - 16 * 4);
        assert_eq!(cap_for(512, 4, Some(65_536)), 512);
        assert_eq!(cap_for(10, 4, None), 10);
        // Too few descriptors for the reserve: still one connection.
        assert_eq!(cap_for(512, 64, Some(100)), 1);
        // Raising the soft limit never lowers the cap.
        assert!(connection_cap(usize::MAX, 16) >= 1);
    }
}
