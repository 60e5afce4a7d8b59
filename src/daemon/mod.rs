//! `semclip run`: the daemon, wired from its tasks.
//!
//! Takes the daemon file and the watches directory; gives a process that
//! checks every watch on its schedule, delivers the alerts, serves clips
//! (when `listen` is set) and reloads the watches on SIGHUP or a change in
//! their directory, until SIGTERM or Ctrl-C.
//!
//! [`run`] only wires tasks together. Each long-lived task is a function
//! here or a module of its own: the [`scheduler`] (the watches' next runs,
//! at most `limits.concurrency` checks at once, never two of one watch),
//! the [`outbox`] deliverer, the clip server, the [`demo`] site, the
//! retention pruner, the signal listener, the directory watcher, the
//! reloader and the systemd watchdog.
//!
//! Each check stores its watch's next run in the same transaction as its
//! result, so a restart resumes the schedule: a run missed while the
//! daemon was down happens once at start, not once per missed slot, and a
//! run that completed is not repeated.
//!
//! # Replicas
//!
//! Several daemons (replicas) may share one PostgreSQL database, with no
//! leader: each runs the same scheduler over its own copy of the watches,
//! and before checking a watch it found due it *claims* it in the database
//! ([`crate::store::Replicas::claim_watch`]: `FOR UPDATE SKIP LOCKED` and a
//! lease of [`lease_for`] the watch, owned by the replica's id). A watch
//! another replica checked already, or is checking, goes back in the
//! scheduler at the stored next run (or the lease's end), so each scheduled
//! run is checked once across replicas and restarts. A claim that takes
//! over an expired lease (its replica died, or its check outlived the
//! lease) is counted (`semclip_checks_rerun_total`) and logged. SQLite has
//! no replicas ([`StorePool::replicas`] is `None`): the daemon checks every
//! run it finds due, and runs no replica view or listener. The outbox is
//! claimed the same way ([`outbox`]).
//!
//! Replicas tell each other news over `LISTEN/NOTIFY`
//! ([`crate::store::replicas::notice`]): a check-now request on one wakes the watch
//! in every replica's scheduler at once (whichever has a free slot claims
//! it first), and a SIGHUP on one reloads the watch files of all. A
//! reload caused by a change in the watches directory is not announced:
//! another replica's directory did not change with it (each has its own,
//! with its own directory watcher), so reloading it would change nothing.
//! A notice is a hint: a replica that missed one (its listening
//! connection was down) leaves the run to the replica that took the
//! request, as the stored next run says.
//!
//! Each replica publishes the watch set it runs (each watch's id and the
//! hash of its file, [`crate::store::replicas::watch_set`]) at start and after each
//! reload, and records a heartbeat every [`HEARTBEAT`]. The set most live
//! replicas run is the reference; a replica whose set differs says so (a
//! warning, `semclip_replica_watch_set_mismatch`, a line on the status
//! page) and does not claim the watches the reference defines
//! differently: a stale or half-deployed replica must not check a page
//! with another URL, other thresholds or other notifiers than the others
//! would. Watches only it has are still its to check (nobody else runs
//! them: a watch added by a rolling deploy starts with its first replica).
//!
//! # Shutdown
//!
//! One [`CancellationToken`] is the shutdown signal: SIGTERM and Ctrl-C
//! cancel it, and every long-lived task selects on it. Every task is
//! spawned on one [`TaskTracker`]. On shutdown the scheduler starts no new
//! check; the checks in flight, the HTTP requests in flight and the
//! outbox's round in progress finish, all within [`DRAIN_TIMEOUT`]; with
//! nothing in flight the daemon exits at once. Tasks that have nothing to
//! finish (the pruner, the demo site, the watchers) return as soon as they
//! see the token.
//!
//! SIGHUP, or a change in the watches directory, reloads the watch files:
//! if they are all valid the new set replaces the old one (state is kept in
//! the store, by watch id), and otherwise every error is logged and the old
//! set keeps running.
//!
//! Under systemd (`Type=notify`) the daemon reports readiness, reloads and
//! stopping, and pings the watchdog when one is configured (from a task of
//! its own: it says the runtime is alive, not that a check is).

pub mod demo;
pub mod outbox;
pub mod scheduler;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use crate::config::{self, DaemonConfig, Diagnostic, Loaded, Watch};
use crate::monitor::check::{self, CheckReport, Engine, PageOutcome};
use crate::notify::Notifier;
use crate::serve::Server;
use crate::serve::metrics::{Metrics, NoticeLabels};
use crate::store::CheckStart;
use crate::store::pool::StorePool;
use crate::store::replicas::notice::{Announcement, Notice};
use crate::store::replicas::watch_set::{ReplicaSummary, WatchSet};
use crate::store::replicas::{Claim, ReplicaPool};

use self::scheduler::{Clock, Scheduler};

/// How long the daemon waits at shutdown for what is in flight (checks,
/// HTTP requests, the outbox's round) before it exits anyway. docs/daemon.md's
/// "Signals" section states the same bound.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// How long the watches directory must be quiet before a change reloads it.
const RELOAD_SETTLE: Duration = Duration::from_millis(300);

/// The longest the outbox task sleeps without looking.
const OUTBOX_POLL: Duration = Duration::from_secs(30);

/// What a lease on a watch's run adds to the longest its fetch may take
/// (every attempt timing out): the waits between attempts and for the
/// host's turn, parsing and the store's write.
pub const LEASE_MARGIN: Duration = Duration::from_secs(60);

/// How soon a watch is claimed again after the claim itself failed (the
/// database unreachable): soon, but not in a tight loop per watch.
const CLAIM_FAILED_RETRY: Duration = Duration::from_secs(10);

/// How long a replica's claim on a watch's run lasts: every attempt of its
/// fetch timing out (`fetch.timeout` × (1 + `fetch.retries`)) plus
/// [`LEASE_MARGIN`]. A check that outlives it may be checked again by
/// another replica, counted in `semclip_checks_rerun_total`; with the
/// defaults (30 s, 2 retries) the lease is 2.5 minutes.
pub fn lease_for(watch: &Watch) -> Duration {
    watch
        .fetch
        .timeout
        .saturating_mul(watch.fetch.retries.saturating_add(1))
        .saturating_add(LEASE_MARGIN)
}

/// This process's id among the replicas sharing a database: host, process
/// id and a random part (a restarted process is another replica, whose
/// predecessor's leases run out).
pub fn replica_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned());
    format!(
        "{host}/{}/{:08x}",
        std::process::id(),
        rand::random::<u32>()
    )
}

/// How often a replica records that it is alive and looks at the other
/// replicas' watch sets (well within [`crate::store::replicas::watch_set::LIVE_FOR`]).
const HEARTBEAT: Duration = Duration::from_secs(5);

/// How often retention is applied to every watch (a page that never
/// changes stores no snapshot, so nothing else would prune it).
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// Loads the configuration, or returns every diagnostic as one error.
pub fn load(config: Option<&Path>, watches: Option<&Path>) -> anyhow::Result<Loaded> {
    config::load(config, watches).map_err(|diagnostics| invalid(&diagnostics))
}

/// One error listing every diagnostic, one per line.
pub fn invalid(diagnostics: &[Diagnostic]) -> anyhow::Error {
    let lines: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
    anyhow::anyhow!(
        "{} error{} in the configuration:\n{}",
        lines.len(),
        if lines.len() == 1 { "" } else { "s" },
        lines.join("\n")
    )
}

/// Builds the notifiers the daemon file defines.
pub fn notifiers(daemon: &DaemonConfig) -> anyhow::Result<HashMap<String, Notifier>> {
    // No HTTP client (a TLS set-up) for a daemon file without notifiers.
    if daemon.notifiers.is_empty() {
        return Ok(HashMap::new());
    }
    let http = crate::page::source::http_client(&crate::page::source::FetchOptions::default())?;
    daemon
        .notifiers
        .iter()
        .map(|(name, cfg)| {
            Notifier::from_config(
                name,
                cfg,
                daemon.smtp.as_ref(),
                &http,
                daemon.server.public_url.as_ref(),
            )
            .map(|n| (name.clone(), n))
            .with_context(|| format!("cannot set up notifier `{name}`"))
        })
        .collect()
}

/// Opens the store the daemon file names, creating its directory.
pub fn open_store(daemon: &DaemonConfig) -> anyhow::Result<Arc<StorePool>> {
    if let Some(parent) = daemon
        .database
        .sqlite_path()
        .and_then(std::path::Path::parent)
        .filter(|p| !p.as_os_str().is_empty())
    {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    Ok(Arc::new(StorePool::open(daemon.database.clone())?))
}

/// One line about a finished check, for the log and for `semclip check`.
pub fn describe(report: &CheckReport) -> String {
    let what = match &report.outcome {
        PageOutcome::NotModified => "not modified (304)".to_owned(),
        PageOutcome::Unchanged => "unchanged".to_owned(),
        PageOutcome::First => "first snapshot stored".to_owned(),
        PageOutcome::Changed(changes) => format!("{} semantic changes", changes.len()),
        PageOutcome::Failed(error) => format!("FAILED: {error}"),
        // (The reason itself begins "blocked: ", as the status shows it.)
        PageOutcome::Blocked(reason) => format!(
            "BLOCKED: {}",
            reason.strip_prefix("blocked: ").unwrap_or(reason)
        ),
    };
    format!("{}: {what}", report.watch)
}

/// Why the watch files are reloaded.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reload {
    /// SIGHUP: announced to the other replicas.
    Signal,
    /// A change in the watches directory.
    Directory,
    /// Another replica's SIGHUP (not announced again).
    Peer(String),
}

/// What every task of the daemon shares.
struct Shared {
    daemon: Arc<DaemonConfig>,
    stores: Arc<StorePool>,
    metrics: Arc<Metrics>,
    /// The shutdown signal: cancelled by SIGTERM or Ctrl-C (and when `run`
    /// returns early), watched by every long-lived task.
    shutdown: CancellationToken,
    /// Every task the daemon spawns, so that shutdown can wait for them.
    tasks: TaskTracker,
    /// This replica's id ([`replica_id`]), the owner of its claims.
    replica: Arc<str>,
    /// This replica's watches that most replicas define differently: left
    /// to them (see "Replicas" above). Written by the replica-view task,
    /// read by every claim.
    withheld: Arc<std::sync::RwLock<std::collections::HashSet<String>>>,
}

/// Runs the daemon until SIGTERM or Ctrl-C; `listen`, when given, stands
/// in for the daemon file's `listen`.
pub async fn run(
    config_path: Option<PathBuf>,
    watches_dir: Option<PathBuf>,
    listen: Option<SocketAddr>,
) -> anyhow::Result<()> {
    let mut loaded =
        load(config_path.as_deref(), watches_dir.as_deref()).context("refusing to start")?;
    loaded.daemon.listen = listen.or(loaded.daemon.listen);
    let watches: Vec<Arc<Watch>> = loaded.watches.into_iter().map(Arc::new).collect();
    let daemon = Arc::new(loaded.daemon);
    let stores = open_store(&daemon)?;
    let notifiers = Arc::new(notifiers(&daemon)?);
    let stored = stored_next_runs(&stores).await?;
    tracing::info!(
        database = %daemon.database,
        watches = watches.len(),
        dir = %daemon.watches_dir.display(),
        "semclip starting"
    );
    let shared = Shared {
        daemon,
        stores,
        metrics: Arc::new(Metrics::new()),
        shutdown: CancellationToken::new(),
        tasks: TaskTracker::new(),
        replica: Arc::from(replica_id()),
        withheld: Arc::default(),
    };
    // A `?` below stops what already started.
    let _stop_on_error = shared.shutdown.clone().drop_guard();

    // The API's check-now requests. The server owns the sender (closed
    // when the server is dropped); the forwarder below owns the receiver,
    // and sends on to the scheduler.
    let (check_now_tx, check_now_rx) = mpsc::unbounded_channel();
    tracing::info!(replica = %shared.replica, "replica id");
    let server = match shared.daemon.listen {
        Some(addr) => Some(start_server(&shared, addr, &watches, check_now_tx).await?),
        None => None,
    };
    if let Some(demo) = &shared.daemon.demo {
        start_demo(&shared, demo.listen);
    }
    let wake_outbox = start_outbox(&shared, notifiers);
    start_pruner(&shared);

    // Reload requests (SIGHUP, the directory watcher), to the reloader;
    // reloaded watch sets, from the reloader to the scheduler. Each channel
    // closes when its senders' tasks end at shutdown.
    let (reload_tx, reload_rx) = mpsc::unbounded_channel::<Reload>();
    let (reloaded_tx, reloaded_rx) = mpsc::unbounded_channel::<Vec<Arc<Watch>>>();
    // Reloaded watch sets, from the reloader to the replica view.
    let (sets_tx, sets_rx) = mpsc::unbounded_channel::<Vec<Arc<Watch>>>();
    listen_for_signals(&shared, reload_tx.clone())?;
    let _watcher = watch_directory(&shared, reload_tx.clone());
    start_reloader(&shared, reload_rx, reloaded_tx, sets_tx, server.clone());
    start_replica_view(&shared, &watches, sets_rx, server.clone()).await;

    let (check_now_rx, wake) = forward_check_now(&shared, check_now_rx);
    start_listener(&shared, wake, reload_tx);
    let engine = Engine::new(Arc::clone(&shared.daemon), Arc::clone(&shared.stores));
    // Killed after the drain, whatever still holds the engine.
    let browsers = Arc::clone(&engine.browsers);
    let checker = Arc::new(Checker {
        engine,
        stores: Arc::clone(&shared.stores),
        replica: Arc::clone(&shared.replica),
        withheld: Arc::clone(&shared.withheld),
        metrics: Arc::clone(&shared.metrics),
        server,
        wake_outbox,
        tasks: shared.tasks.clone(),
    });
    let scheduler = Scheduler::new(
        watches,
        &stored,
        shared.daemon.limits.concurrency,
        Clock::Wall,
        shared.tasks.clone(),
        move |watch, now, next| Arc::clone(&checker).run(watch, now, next),
    );
    shared
        .tasks
        .spawn(scheduler.run(reloaded_rx, check_now_rx, shared.shutdown.clone()));
    start_watchdog(&shared);
    let _ = sd_notify::notify(&[sd_notify::NotifyState::Ready]);
    tracing::info!("ready");

    shared.shutdown.cancelled().await;
    let _ = sd_notify::notify(&[sd_notify::NotifyState::Stopping]);
    drain(&shared.tasks).await;
    browsers.shutdown().await;
    Ok(())
}

/// Passes the API's check-now requests on to the scheduler, after moving
/// the watch's stored next run to now (the claim then finds the run due:
/// with replicas, the stored next run is what a claim goes by) and
/// announcing it to the other replicas. Returns the scheduler's receiver
/// and a sender to it for the listener; the forwarder and the listener
/// own the senders, closed when the server's sender closes or at shutdown.
fn forward_check_now(
    shared: &Shared,
    mut requests: mpsc::UnboundedReceiver<String>,
) -> (
    mpsc::UnboundedReceiver<String>,
    mpsc::UnboundedSender<String>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let wake = tx.clone();
    let stores = Arc::clone(&shared.stores);
    let replica = Arc::clone(&shared.replica);
    let shutdown = shared.shutdown.clone();
    shared.tasks.spawn(async move {
        loop {
            let id = tokio::select! {
                () = shutdown.cancelled() => return,
                id = requests.recv() => match id {
                    Some(id) => id,
                    None => return,
                },
            };
            let watch = id.clone();
            let from = Arc::clone(&replica);
            let requested = stores
                .run(move |s| {
                    s.request_check(&watch, SystemTime::now())?;
                    match s.replicas() {
                        Some(mut replicas) => replicas.announce(&from, Notice::Check { watch }),
                        None => Ok(()),
                    }
                })
                .await;
            if let Err(error) = requested {
                // The local scheduler still checks it if no other replica
                // holds the run.
                tracing::warn!(watch = %id, error = %crate::ErrorChain(&error), "cannot store the check request");
            }
            if tx.send(id).is_err() {
                return;
            }
        }
    });
    (rx, wake)
}

/// On PostgreSQL, listens for the other replicas' notices until shutdown:
/// a check-now wakes the watch in this replica's scheduler (through
/// `wake`), a reload reloads this replica's watch files (through
/// `reload`). This replica's own notices are dropped (it acted on them
/// when it sent them).
fn start_listener(
    shared: &Shared,
    wake: mpsc::UnboundedSender<String>,
    reload: mpsc::UnboundedSender<Reload>,
) {
    let Some(replicas) = shared.stores.replicas().map(Arc::clone) else {
        return;
    };
    let replica = Arc::clone(&shared.replica);
    let metrics = Arc::clone(&shared.metrics);
    let shutdown = shared.shutdown.clone();
    shared.tasks.spawn(async move {
        let heard = |announcement: Announcement| {
            if *announcement.from == *replica {
                return;
            }
            let from = announcement.from;
            match announcement.notice {
                Notice::Check { watch } => {
                    metrics.notices.get_or_create(&NoticeLabels { kind: "check" }).inc();
                    tracing::info!(watch = %watch, from = %from, "check requested on another replica");
                    let _ = wake.send(watch);
                }
                Notice::Reload => {
                    metrics.notices.get_or_create(&NoticeLabels { kind: "reload" }).inc();
                    tracing::info!(from = %from, "reload requested on another replica");
                    let _ = reload.send(Reload::Peer(from));
                }
            }
        };
        let listening = || tracing::info!("listening for other replicas");
        replicas.listen(heard, listening, shutdown).await;
    });
}

/// The watch set of `watches`: each id with its file's bytes (a file that
/// cannot be read now counts as empty: it differs, which is the truth).
fn watch_set(watches: &[Arc<Watch>]) -> WatchSet {
    let files: Vec<(&str, Vec<u8>)> = watches
        .iter()
        .map(|w| (w.id.as_str(), std::fs::read(&w.file).unwrap_or_default()))
        .collect();
    WatchSet::of(files.iter().map(|(id, bytes)| (*id, bytes.as_slice())))
}

/// On PostgreSQL: publishes this replica's watch set, then until shutdown
/// records a heartbeat every [`HEARTBEAT`], publishes each reloaded set
/// (from `sets`) and compares its set with the others' (see "Replicas"
/// above), for the claims, the metrics and the status page. At shutdown
/// its row is deleted. The first comparison is made before this returns,
/// so the first claims already follow it.
async fn start_replica_view(
    shared: &Shared,
    watches: &[Arc<Watch>],
    mut sets: mpsc::UnboundedReceiver<Vec<Arc<Watch>>>,
    server: Option<Arc<Server>>,
) {
    let Some(replicas) = shared.stores.replicas() else {
        return;
    };
    let view = ReplicaView {
        replicas: Arc::clone(replicas),
        replica: Arc::clone(&shared.replica),
        withheld: Arc::clone(&shared.withheld),
        metrics: Arc::clone(&shared.metrics),
        server,
    };
    let mut own = watch_set(watches);
    view.publish(&own).await;
    let mut last = view.compare(&own, None).await;
    let shutdown = shared.shutdown.clone();
    shared.tasks.spawn(async move {
        let mut every = tokio::time::interval(HEARTBEAT);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        every.tick().await;
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                Some(watches) = sets.recv() => {
                    own = watch_set(&watches);
                    view.publish(&own).await;
                }
                _ = every.tick() => view.heartbeat(&own).await,
            }
            last = view.compare(&own, last).await;
        }
        let replica = Arc::clone(&view.replica);
        if let Err(error) = view.replicas.run(move |r| r.leave(&replica)).await {
            tracing::warn!(error = %crate::ErrorChain(&error),
                "cannot remove this replica from the live ones");
        }
    });
}

/// What the replica-view task works with.
struct ReplicaView {
    replicas: Arc<ReplicaPool>,
    replica: Arc<str>,
    withheld: Arc<std::sync::RwLock<std::collections::HashSet<String>>>,
    metrics: Arc<Metrics>,
    server: Option<Arc<Server>>,
}

impl ReplicaView {
    async fn publish(&self, own: &WatchSet) {
        let (replica, set) = (Arc::clone(&self.replica), own.clone());
        let published = self
            .replicas
            .run(move |r| r.publish_watch_set(&replica, &set, SystemTime::now()))
            .await;
        if let Err(error) = published {
            tracing::warn!(error = %crate::ErrorChain(&error),
                "cannot publish this replica's watch set");
        }
    }

    async fn heartbeat(&self, own: &WatchSet) {
        let replica = Arc::clone(&self.replica);
        let beat = self
            .replicas
            .run(move |r| r.heartbeat(&replica, SystemTime::now()))
            .await;
        match beat {
            Ok(true) => {}
            // Deleted as dead (a long pause): publish again.
            Ok(false) => self.publish(own).await,
            Err(error) => tracing::warn!(error = %crate::ErrorChain(&error),
                "cannot record this replica's heartbeat"),
        }
    }

    /// Compares `own` with the live replicas' sets and applies the result;
    /// returns it (`last` is the previous one, to log changes only). A
    /// failed read keeps the previous result.
    async fn compare(
        &self,
        own: &WatchSet,
        last: Option<ReplicaSummary>,
    ) -> Option<ReplicaSummary> {
        let set = own.clone();
        let summary = self
            .replicas
            .run(move |r| {
                let live = r.live_replicas(SystemTime::now())?;
                let reference = crate::store::replicas::watch_set::reference(&live)
                    .filter(|r| **r != set.hash())
                    .map(str::to_owned);
                let reference_set = match reference {
                    Some(hash) => r.published_watch_set(&hash)?,
                    None => None,
                };
                Ok(ReplicaSummary::of(&set, &live, reference_set.as_ref()))
            })
            .await;
        let summary = match summary {
            Ok(summary) => summary,
            Err(error) => {
                tracing::warn!(error = %crate::ErrorChain(&error),
                    "cannot compare the replicas' watch sets");
                return last;
            }
        };
        if last.as_ref() != Some(&summary) {
            if summary.this_differs {
                tracing::warn!(live = summary.live, withheld = ?summary.withheld,
                    "this replica's watch set differs from the other replicas': \
                     the watches they define differently are left to them");
            } else if !summary.differing.is_empty() {
                tracing::warn!(live = summary.live, differing = ?summary.differing,
                    "replicas run a watch set that differs from the others'");
            } else {
                tracing::info!(live = summary.live, "replicas run the same watch set");
            }
        }
        let gauge = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        self.metrics
            .watch_set_mismatch
            .set(i64::from(summary.this_differs));
        self.metrics.replicas_live.set(gauge(summary.live));
        self.metrics
            .replicas_differing
            .set(gauge(summary.differing.len()));
        *self.withheld.write().unwrap_or_else(|p| p.into_inner()) =
            summary.withheld.iter().cloned().collect();
        if let Some(server) = &self.server {
            server.set_replicas(summary.clone());
        }
        Some(summary)
    }
}

/// Waits, at most [`DRAIN_TIMEOUT`], for every tracked task to finish.
async fn drain(tasks: &TaskTracker) {
    tasks.close();
    tracing::info!(
        tasks = tasks.len(),
        "stopping: letting what is in flight finish"
    );
    if tokio::time::timeout(DRAIN_TIMEOUT, tasks.wait())
        .await
        .is_err()
    {
        // What is left is dropped with the runtime.
        tracing::warn!(
            tasks = tasks.len(),
            timeout = ?DRAIN_TIMEOUT,
            "still running at the drain timeout; stopping anyway"
        );
    }
    tracing::info!("stopped");
}

/// Each watch's stored next run.
async fn stored_next_runs(stores: &Arc<StorePool>) -> anyhow::Result<HashMap<String, SystemTime>> {
    let statuses = stores
        .run(|s| s.statuses())
        .await
        .context("cannot read the watches' schedule from the store")?;
    Ok(statuses
        .into_iter()
        .filter_map(|s| Some((s.watch, s.next_run?)))
        .collect())
}

/// Binds the clip server and serves until shutdown, letting the requests
/// in flight finish. Binding fails before anything else starts: a daemon
/// that cannot serve what it was told to is not half-started.
async fn start_server(
    shared: &Shared,
    addr: SocketAddr,
    watches: &[Arc<Watch>],
    check_now: mpsc::UnboundedSender<String>,
) -> anyhow::Result<Arc<Server>> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("refusing to start: cannot listen on {addr}"))?;
    let local = listener.local_addr().unwrap_or(addr);
    let server = Server::new(
        Arc::clone(&shared.daemon),
        watches.to_vec(),
        Arc::clone(&shared.stores),
        Arc::clone(&shared.metrics),
        Some(check_now),
        local,
    );
    let serving = Arc::clone(&server);
    let shutdown = shared.shutdown.clone().cancelled_owned();
    shared.tasks.spawn(async move {
        if let Err(error) = crate::serve::serve(listener, serving, shutdown).await {
            tracing::error!(error = %crate::ErrorChain(&error), "the HTTP server failed");
        }
    });
    tracing::info!(addr = %local, "serving clips, feeds, the API and status pages");
    Ok(server)
}

/// Serves the demo site until shutdown.
fn start_demo(shared: &Shared, addr: SocketAddr) {
    let shutdown = shared.shutdown.clone();
    shared.tasks.spawn(async move {
        tokio::select! {
            () = shutdown.cancelled() => {}
            served = crate::daemon::demo::serve(addr) => {
                if let Err(error) = served {
                    tracing::error!(%addr, error = %crate::ErrorChain(&error), "the demo site cannot start");
                }
            }
        }
    });
}

/// Starts the outbox deliverer; notifying the returned handle wakes it
/// (a check queued alerts).
fn start_outbox(shared: &Shared, notifiers: Arc<HashMap<String, Notifier>>) -> Arc<Notify> {
    let wake = Arc::new(Notify::new());
    shared.tasks.spawn(outbox_loop(
        Arc::clone(&shared.stores),
        notifiers,
        shared.daemon.alerts.give_up_after,
        Arc::clone(&wake),
        shared.shutdown.clone(),
        Arc::clone(&shared.metrics),
    ));
    wake
}

/// Applies retention every [`PRUNE_EVERY`] until shutdown.
fn start_pruner(shared: &Shared) {
    let stores = Arc::clone(&shared.stores);
    let retention = shared.daemon.retention;
    let shutdown = shared.shutdown.clone();
    shared.tasks.spawn(async move {
        let mut every = tokio::time::interval(PRUNE_EVERY);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = every.tick() => {}
            }
            let pruned = stores
                .run(move |s| {
                    let now = SystemTime::now();
                    let values = s.prune_values(&retention, now)?;
                    let points = s.prune_series(&retention, now)?;
                    Ok((s.prune(&retention, now)?, values, points))
                })
                .await;
            match pruned {
                Ok((p, values, points)) => tracing::debug!(
                    snapshots = p.snapshots,
                    changes = p.changes,
                    values,
                    points,
                    "retention applied"
                ),
                Err(error) => tracing::error!(error = %crate::ErrorChain(&error), "cannot prune"),
            }
        }
    });
}

/// Pings the systemd watchdog at half its interval, when one is set.
fn start_watchdog(shared: &Shared) {
    let Some(interval) = sd_notify::watchdog_enabled() else {
        return;
    };
    let shutdown = shared.shutdown.clone();
    shared.tasks.spawn(async move {
        let mut every = tokio::time::interval(interval / 2);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = every.tick() => {
                    let _ = sd_notify::notify(&[sd_notify::NotifyState::Watchdog]);
                }
            }
        }
    });
}

/// Reloads the watch files on each request until shutdown: a valid set
/// goes to the scheduler and the replica view (and the server), an
/// invalid one is logged and
/// the running set kept.
fn start_reloader(
    shared: &Shared,
    mut requests: mpsc::UnboundedReceiver<Reload>,
    reloaded: mpsc::UnboundedSender<Vec<Arc<Watch>>>,
    view: mpsc::UnboundedSender<Vec<Arc<Watch>>>,
    server: Option<Arc<Server>>,
) {
    let daemon = Arc::clone(&shared.daemon);
    // No replicas on SQLite: nobody to tell of a reload.
    let replicas = shared.stores.replicas().map(Arc::clone);
    let replica = Arc::clone(&shared.replica);
    let shutdown = shared.shutdown.clone();
    shared.tasks.spawn(async move {
        loop {
            let cause = tokio::select! {
                () = shutdown.cancelled() => return,
                request = requests.recv() => match request {
                    Some(cause) => cause,
                    None => return,
                },
            };
            // The reload's own lines (its diagnostics, a refusal) in one
            // `reload` span; the scheduler's "watches reloaded" is its own.
            let span = tracing::info_span!("reload", cause = ?cause);
            let go_on = async {
                if cause == Reload::Signal
                    && let Some(replicas) = &replicas
                {
                    let from = Arc::clone(&replica);
                    let announced = replicas
                        .run(move |r| r.announce(&from, Notice::Reload))
                        .await;
                    if let Err(error) = announced {
                        tracing::warn!(error = %crate::ErrorChain(&error),
                            "cannot tell the other replicas to reload");
                    }
                }
                let _ = sd_notify::notify(&[sd_notify::NotifyState::Reloading]);
                match config::load_watches(&daemon.watches_dir, &daemon) {
                    Err(diagnostics) => {
                        for d in &diagnostics {
                            tracing::error!("{d}");
                        }
                        tracing::error!(
                            errors = diagnostics.len(),
                            "reload refused: the previous watches keep running"
                        );
                    }
                    Ok(watches) => {
                        let watches: Vec<Arc<Watch>> = watches.into_iter().map(Arc::new).collect();
                        if let Some(server) = &server {
                            server.set_watches(watches.clone());
                        }
                        // No replica view on SQLite: nobody receives.
                        let _ = view.send(watches.clone());
                        if reloaded.send(watches).is_err() {
                            return false;
                        }
                    }
                }
                let _ = sd_notify::notify(&[sd_notify::NotifyState::Ready]);
                true
            }
            .instrument(span)
            .await;
            if !go_on {
                return;
            }
        }
    });
}

/// One check as the daemon runs it: the check, then its
/// outcome logged and counted, the outbox woken for its alerts and the
/// clips refreshed for a new snapshot.
struct Checker {
    engine: Engine,
    stores: Arc<StorePool>,
    /// The owner of this replica's claims.
    replica: Arc<str>,
    /// Watches left to the other replicas ([`Shared::withheld`]).
    withheld: Arc<std::sync::RwLock<std::collections::HashSet<String>>>,
    metrics: Arc<Metrics>,
    server: Option<Arc<Server>>,
    wake_outbox: Arc<Notify>,
    tasks: TaskTracker,
}

impl Checker {
    /// Checks `watch` (started at `now`, next run `next`); returns the next
    /// run when the check moved it.
    async fn run(
        self: Arc<Self>,
        watch: Arc<Watch>,
        now: SystemTime,
        next: SystemTime,
    ) -> Option<SystemTime> {
        let start = match self.claim(&watch, now, next).await {
            Ok(start) => start,
            Err(later) => return Some(later),
        };
        // The check runs in its own `check` span (see check::check).
        let report = check::check_from(&self.engine, &watch, now, Some(next), start).await;
        match report {
            Ok(report) => {
                if !report.alerts.is_empty() {
                    self.wake_outbox.notify_one();
                }
                self.finished(&report);
                report.next_run
            }
            Err(error) => {
                tracing::error!(
                    watch = %watch.id,
                    error = %crate::ErrorChain(&error),
                    "check not recorded"
                );
                None
            }
        }
    }

    /// Claims the run of `watch` due at `now` (next by this replica's
    /// schedule at `next`): what its check starts from, read with the claim
    /// (`None`: the check reads it, as on SQLite, which has no claims); `Err(time)` when this replica does not
    /// check it now and looks again at `time`: the stored next run when the
    /// run was checked elsewhere; when another replica is checking it, the
    /// end of its lease or this replica's own next run, whichever comes
    /// first (a replica that died is taken over by then, one that is alive
    /// has recorded by then).
    async fn claim(
        &self,
        watch: &Watch,
        now: SystemTime,
        next: SystemTime,
    ) -> Result<Option<CheckStart>, SystemTime> {
        let withheld = self
            .withheld
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&watch.id);
        if withheld {
            tracing::debug!(watch = %watch.id, "defined differently on most replicas: left to them");
            return Err(next);
        }
        let Some(replicas) = self.stores.replicas() else {
            // One daemon per file (SQLite): every run is its own, and the
            // check reads what it starts from.
            return Ok(None);
        };
        let id = watch.id.clone();
        let owner = Arc::clone(&self.replica);
        let lease = lease_for(watch);
        let claim = replicas
            .run(move |r| r.claim_and_start(&id, &owner, now, lease))
            .await;
        match claim {
            Ok((Claim::Mine { rerun_of: None }, start)) => Ok(start),
            Ok((
                Claim::Mine {
                    rerun_of: Some(previous),
                },
                start,
            )) => {
                self.metrics.checks_rerun.inc();
                tracing::warn!(watch = %watch.id, previous = %previous,
                    "a lease on this run expired: checking it again");
                Ok(start)
            }
            Ok((Claim::Done { next_run }, _)) => {
                tracing::debug!(watch = %watch.id, "run checked by another replica");
                Err(next_run)
            }
            Ok((Claim::Held { until }, _)) => {
                tracing::debug!(watch = %watch.id, "run held by another replica");
                Err(until.min(next))
            }
            Err(error) => {
                tracing::error!(watch = %watch.id,
                    error = %crate::ErrorChain(&error),
                    "cannot claim the watch; trying again soon");
                Err(now + CLAIM_FAILED_RETRY)
            }
        }
    }

    fn finished(&self, report: &CheckReport) {
        self.metrics.checked(report);
        if let (Some(server), PageOutcome::First | PageOutcome::Changed(_)) =
            (&self.server, &report.outcome)
        {
            // Clips follow the new snapshot at once.
            let server = Arc::clone(server);
            self.tasks.spawn(async move { server.poll().await });
        }
        log_outcome(report);
    }
}

/// Logs a finished check: one fixed message, the watch, the outcome
/// (`not_modified`, `unchanged`, `first`, `changed` or `failed`), the
/// number of changes, and each alert raised (its kind as the payload
/// names it) with its first change lines.
fn log_outcome(report: &CheckReport) {
    let watch = &report.watch;
    let outcome = report.outcome.kind();
    let changes = match &report.outcome {
        PageOutcome::Changed(changes) => changes.len(),
        _ => 0,
    };
    match &report.outcome {
        PageOutcome::Failed(error) | PageOutcome::Blocked(error) => {
            tracing::warn!(watch = %watch, outcome = %outcome, changes, error = %error, "check finished");
        }
        _ => tracing::info!(watch = %watch, outcome = %outcome, changes, "check finished"),
    }
    for alert in &report.alerts {
        tracing::info!(watch = %watch, kind = %alert.kind.name(), summary = %alert.summary, "alert raised");
        // A few of its change lines, then how many more.
        let (shown, more) = alert.shown_changes();
        for line in shown {
            tracing::info!(watch = %watch, change = %line.text, "alert change");
        }
        if more > 0 {
            tracing::info!(watch = %watch, change = %format!("and {more} more"), "alert change");
        }
    }
}

/// Delivers what is due in the outbox, then sleeps until the next row is
/// due, it is woken, or shutdown (a round in progress finishes first).
async fn outbox_loop(
    stores: Arc<StorePool>,
    notifiers: Arc<HashMap<String, Notifier>>,
    give_up: Duration,
    wake: Arc<Notify>,
    shutdown: CancellationToken,
    metrics: Arc<Metrics>,
) {
    loop {
        match outbox::deliver_due(&stores, &notifiers, give_up, SystemTime::now()).await {
            Ok(round) => {
                metrics.alerts_sent.inc_by(round.delivered as u64);
                metrics.alerts_failed.inc_by(round.given_up as u64);
            }
            Err(error) => {
                tracing::error!(error = %crate::ErrorChain(&error), "outbox round failed")
            }
        }
        let next = stores.run(|s| s.next_alert_due()).await.ok().flatten();
        let sleep = next
            .map(|t| t.duration_since(SystemTime::now()).unwrap_or_default())
            .unwrap_or(OUTBOX_POLL)
            .min(OUTBOX_POLL)
            .max(Duration::from_millis(50));
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = wake.notified() => {}
            () = tokio::time::sleep(sleep) => {}
        }
    }
}

/// SIGTERM and Ctrl-C cancel the shutdown token; SIGHUP asks for a reload.
fn listen_for_signals(
    shared: &Shared,
    reload: mpsc::UnboundedSender<Reload>,
) -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("cannot listen for SIGINT")?;
    let mut hup = signal(SignalKind::hangup()).context("cannot listen for SIGHUP")?;
    let shutdown = shared.shutdown.clone();
    shared.tasks.spawn(async move {
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = term.recv() => shutdown.cancel(),
                _ = int.recv() => shutdown.cancel(),
                _ = hup.recv() => {
                    if reload.send(Reload::Signal).is_err() {
                        return;
                    }
                }
            }
        }
    });
    Ok(())
}

/// Watches the watches directory; a change asks for one reload once the
/// directory has been quiet for [`RELOAD_SETTLE`]. Without inotify (or on
/// error) only SIGHUP reloads. The returned watcher must be kept: dropping
/// it stops the watching.
fn watch_directory(
    shared: &Shared,
    reload: mpsc::UnboundedSender<Reload>,
) -> Option<fswatch::RecommendedWatcher> {
    use fswatch::Watcher;
    let dir = &shared.daemon.watches_dir;
    // Raw file events: the watcher's callback owns the sender, this task
    // the receiver.
    let (raw_tx, mut raw_rx) = mpsc::unbounded_channel::<()>();
    let mut watcher = match fswatch::recommended_watcher(
        move |event: fswatch::Result<fswatch::Event>| {
            // Only watch files count: a store or editor swap file kept in
            // the directory must not reload the watches on every write.
            let is_watch_file =
                |p: &std::path::PathBuf| p.extension().is_some_and(|x| x == "yaml" || x == "yml");
            if event.is_ok_and(|e| !e.kind.is_access() && e.paths.iter().any(is_watch_file)) {
                let _ = raw_tx.send(());
            }
        },
    ) {
        Ok(w) => w,
        Err(error) => {
            tracing::warn!(error = %crate::ErrorChain(&error), "cannot watch the watches directory; reload with SIGHUP");
            return None;
        }
    };
    if let Err(error) = watcher.watch(dir, fswatch::RecursiveMode::NonRecursive) {
        tracing::warn!(dir = %dir.display(), error = %crate::ErrorChain(&error), "cannot watch the watches directory; reload with SIGHUP");
        return None;
    }
    let shutdown = shared.shutdown.clone();
    shared.tasks.spawn(async move {
        let settled = async {
            while raw_rx.recv().await.is_some() {
                // Settle: editors write files in several steps.
                while let Ok(Some(())) = tokio::time::timeout(RELOAD_SETTLE, raw_rx.recv()).await {}
                if reload.send(Reload::Directory).is_err() {
                    return;
                }
            }
        };
        tokio::select! {
            () = shutdown.cancelled() => {}
            () = settled => {}
        }
    });
    Some(watcher)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::sync::lock;

    /// A log sink the test reads back.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            lock(&self.0).extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn report(outcome: PageOutcome) -> CheckReport {
        CheckReport {
            watch: "prices".into(),
            outcome,
            alerts: Vec::new(),
            thresholds: Vec::new(),
            layout: None,
            fetch_time: Duration::ZERO,
            next_run: None,
        }
    }

    /// The JSON lines `log_outcome` writes for `report`.
    fn logged(report: &CheckReport) -> Vec<serde_json::Value> {
        let sink = Sink::default();
        let writer = sink.clone();
        let subscriber = tracing_subscriber::fmt()
            .json()
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || log_outcome(report));
        let text = String::from_utf8(lock(&sink.0).clone()).unwrap();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn a_finished_check_is_one_fixed_message_with_watch_outcome_and_changes_fields() {
        let lines = logged(&report(PageOutcome::First));
        assert_eq!(lines.len(), 1);
        let fields = &lines[0]["fields"];
        assert_eq!(fields["message"], "check finished");
        assert_eq!(fields["watch"], "prices");
        assert_eq!(fields["outcome"], "first");
        assert_eq!(fields["changes"], 0);
        assert_eq!(lines[0]["level"], "INFO");

        let lines = logged(&report(PageOutcome::Failed("timed out".into())));
        let fields = &lines[0]["fields"];
        assert_eq!(fields["message"], "check finished");
        assert_eq!(fields["outcome"], "failed");
        assert_eq!(fields["error"], "timed out");
        assert_eq!(lines[0]["level"], "WARN");
    }
}
