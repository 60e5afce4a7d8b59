//! `semclip run`: the scheduler, the outbox and the service plumbing.
//!
//! One scheduler task keeps every watch's next run in an ordered set and
//! starts checks as they fall due, at most `limits.concurrency` at a time
//! (the per-host limits apply inside each fetch) and never two of one watch
//! at once. Each check stores its watch's next run in the same transaction
//! as its result, so a restart resumes the schedule: a run missed while the
//! daemon was down happens once at start, not once per missed slot, and a
//! run that completed is not repeated.
//!
//! Signals: SIGTERM and Ctrl-C stop scheduling, let the checks in flight
//! finish (up to [`DRAIN_TIMEOUT`]) and the requests in flight (up to
//! [`SERVER_DRAIN_TIMEOUT`]) and exit; with nothing in flight, at once. SIGHUP, or a change in the
//! watches directory, reloads the watch files: if they are all valid the new
//! set replaces the old one (state is kept in the store, by watch id), and
//! otherwise every error is logged and the old set keeps running.
//!
//! Under systemd (`Type=notify`) the daemon reports readiness, reloads and
//! stopping, and pings the watchdog when one is configured.

pub mod demo;
pub mod outbox;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use chrono::{DateTime, Utc};
use tokio::sync::{Notify, Semaphore, mpsc};
use tokio::task::JoinSet;

use crate::config::{self, DaemonConfig, Diagnostic, Loaded, Watch};
use crate::monitor::check::{self, CheckReport, Engine, PageOutcome};
use crate::notify::Notifier;
use crate::store::pool::StorePool;

/// How long checks in flight may take to finish at shutdown.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// How long requests in flight and the outbox's last round may take at
/// shutdown, after the checks drained.
pub const SERVER_DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// How long the watches directory must be quiet before a change reloads it.
const RELOAD_SETTLE: Duration = Duration::from_millis(300);

/// The longest the outbox task sleeps without looking.
const OUTBOX_POLL: Duration = Duration::from_secs(30);

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
        .parent()
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
    };
    format!("{}: {what}", report.watch)
}

fn to_utc(t: SystemTime) -> DateTime<Utc> {
    DateTime::<Utc>::from(t)
}

/// The next run of `watch` after `now`, with jitter.
fn next_run(watch: &Watch, now: SystemTime) -> SystemTime {
    watch
        .schedule
        .next_with_jitter(to_utc(now))
        .map_or(now + Duration::from_secs(86_400), SystemTime::from)
}

/// Events the scheduler reacts to besides the clock.
enum Event {
    Done(
        String,
        SystemTime,
        Box<Result<CheckReport, check::CheckError>>,
    ),
    Reload,
    /// A client asked for a check now (the API's `check`).
    CheckNow(String),
    Stop,
}

/// Runs the daemon until SIGTERM or Ctrl-C.
pub async fn run(config_path: Option<PathBuf>, watches_dir: Option<PathBuf>) -> anyhow::Result<()> {
    let loaded =
        load(config_path.as_deref(), watches_dir.as_deref()).context("refusing to start")?;
    let daemon = Arc::new(loaded.daemon);
    let stores = open_store(&daemon)?;
    let notifiers = Arc::new(notifiers(&daemon)?);
    let engine = Arc::new(Engine::new(Arc::clone(&daemon), Arc::clone(&stores)));
    tracing::info!(
        database = %daemon.database.display(),
        watches = loaded.watches.len(),
        dir = %daemon.watches_dir.display(),
        "semclip starting"
    );

    let metrics = Arc::new(crate::serve::metrics::Metrics::new());
    let stop_server = Arc::new(Notify::new());
    let (events_tx, mut events) = mpsc::unbounded_channel::<Event>();
    // Tasks that finish on their own once told to stop (the server after
    // its requests in flight, the outbox after its round): shutdown waits
    // for them. Tasks that never finish (retention, the demo site) go in
    // `endless` and are aborted: waiting for them only ran the shutdown
    // into its timeout, five seconds on every idle stop.
    let mut background = JoinSet::new();
    let mut endless = JoinSet::new();
    // The clip server, when `listen` is set. Binding fails before anything
    // else starts: a daemon that cannot serve what it was told to is not
    // half-started.
    let server = match daemon.listen {
        None => None,
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("refusing to start: cannot listen on {addr}"))?;
            let local = listener.local_addr().unwrap_or(addr);
            // The server's check-now queue, forwarded into the scheduler's
            // events; the forwarder ends when the server is dropped.
            let (check_tx, mut check_rx) = mpsc::unbounded_channel::<String>();
            let forward = events_tx.clone();
            tokio::spawn(async move {
                while let Some(id) = check_rx.recv().await {
                    if forward.send(Event::CheckNow(id)).is_err() {
                        return;
                    }
                }
            });
            let server = crate::serve::Server::new(
                Arc::clone(&daemon),
                loaded.watches.iter().cloned().map(Arc::new).collect(),
                Arc::clone(&stores),
                Arc::clone(&metrics),
                Some(check_tx),
                local,
            );
            let s = Arc::clone(&server);
            let stop = Arc::clone(&stop_server);
            background.spawn(async move {
                let shutdown = async move { stop.notified().await };
                if let Err(error) = crate::serve::serve(listener, s, shutdown).await {
                    tracing::error!(%error, "the HTTP server failed");
                }
            });
            tracing::info!(addr = %local, "serving clips, feeds, the API and status pages");
            Some(server)
        }
    };
    if let Some(demo) = &daemon.demo {
        let addr = demo.listen;
        endless.spawn(async move {
            if let Err(error) = crate::daemon::demo::serve(addr).await {
                tracing::error!(%addr, %error, "the demo site cannot start");
            }
        });
    }

    // The outbox.
    let wake_outbox = Arc::new(Notify::new());
    let stop_outbox = Arc::new(Notify::new());
    {
        let stores = Arc::clone(&stores);
        let notifiers = Arc::clone(&notifiers);
        let wake = Arc::clone(&wake_outbox);
        let stop = Arc::clone(&stop_outbox);
        let give_up = daemon.alerts.give_up_after;
        let metrics = Arc::clone(&metrics);
        background.spawn(async move {
            outbox_loop(stores, notifiers, give_up, wake, stop, metrics).await;
        });
    }

    {
        let stores = Arc::clone(&stores);
        let retention = daemon.retention;
        endless.spawn(async move {
            let mut every = tokio::time::interval(PRUNE_EVERY);
            loop {
                every.tick().await;
                let pruned = stores
                    .run(move |s| {
                        let now = SystemTime::now();
                        Ok((s.prune(&retention, now)?, s.prune_values(&retention, now)?))
                    })
                    .await;
                match pruned {
                    Ok((p, values)) => tracing::debug!(
                        snapshots = p.snapshots,
                        changes = p.changes,
                        values,
                        "retention applied"
                    ),
                    Err(error) => tracing::error!(error = %format!("{error:#}"), "cannot prune"),
                }
            }
        });
    }

    spawn_signals(events_tx.clone())?;
    let _watcher = watch_directory(&daemon.watches_dir, events_tx.clone());

    // The schedule: stored next runs, or now for new watches.
    let statuses = stores.run(|s| s.statuses()).await?;
    let stored: HashMap<String, Option<SystemTime>> = statuses
        .into_iter()
        .map(|s| (s.watch, s.next_run))
        .collect();
    let now = SystemTime::now();
    let mut watches: HashMap<String, Arc<Watch>> = HashMap::new();
    let mut queue: BTreeSet<(SystemTime, String)> = BTreeSet::new();
    for w in loaded.watches {
        let due = stored.get(&w.id).copied().flatten().unwrap_or(now);
        queue.insert((due, w.id.clone()));
        watches.insert(w.id.clone(), Arc::new(w));
    }
    let slots = Arc::new(Semaphore::new(daemon.limits.concurrency.max(1)));
    let mut in_flight: HashSet<String> = HashSet::new();
    let mut checks = JoinSet::new();
    let watchdog = sd_notify::watchdog_enabled().map(|usec| usec / 2);
    let _ = sd_notify::notify(&[sd_notify::NotifyState::Ready]);
    tracing::info!("ready");

    loop {
        // Start what is due while there are free slots.
        let now = SystemTime::now();
        while let Some((due, id)) = queue.first().cloned() {
            if due > now {
                break;
            }
            let Ok(permit) = Arc::clone(&slots).try_acquire_owned() else {
                break;
            };
            queue.pop_first();
            let Some(watch) = watches.get(&id).cloned() else {
                continue;
            };
            if !in_flight.insert(id.clone()) {
                continue;
            }
            let next = next_run(&watch, now);
            let engine = Arc::clone(&engine);
            let tx = events_tx.clone();
            let wake = Arc::clone(&wake_outbox);
            checks.spawn(async move {
                let report = check::check(&engine, &watch, now, Some(next), false).await;
                drop(permit);
                if report.as_ref().is_ok_and(|r| !r.alerts.is_empty()) {
                    wake.notify_one();
                }
                let _ = tx.send(Event::Done(watch.id.clone(), next, Box::new(report)));
            });
        }
        let sleep = queue
            .first()
            .map(|(due, _)| due.duration_since(SystemTime::now()).unwrap_or_default())
            .unwrap_or(Duration::from_secs(3600));
        let sleep = watchdog.map_or(sleep, |w| sleep.min(w));
        let event = tokio::select! {
            event = events.recv() => event,
            () = tokio::time::sleep(sleep) => None,
            Some(_) = checks.join_next(), if !checks.is_empty() => None,
        };
        if watchdog.is_some() {
            let _ = sd_notify::notify(&[sd_notify::NotifyState::Watchdog]);
        }
        match event {
            None => {}
            Some(Event::Done(id, next, report)) => {
                in_flight.remove(&id);
                // A check may move its next run (backing off a page refused
                // for its size).
                let next = match &*report {
                    Ok(r) => r.next_run.unwrap_or(next),
                    Err(_) => next,
                };
                match *report {
                    Ok(report) => {
                        metrics.checked(&report);
                        if let (Some(server), PageOutcome::First | PageOutcome::Changed(_)) =
                            (&server, &report.outcome)
                        {
                            // Clips follow the new snapshot at once.
                            let server = Arc::clone(server);
                            tokio::spawn(async move { server.poll().await });
                        }
                        let line = describe(&report);
                        if matches!(report.outcome, PageOutcome::Failed(_)) {
                            tracing::warn!("{line}");
                        } else {
                            tracing::info!("{line}");
                        }
                        for alert in &report.alerts {
                            tracing::info!(watch = %id, kind = ?alert.kind, "alert: {}", alert.summary);
                        }
                    }
                    Err(error) => {
                        tracing::error!(watch = %id, error = %crate::error_chain(&error), "check not recorded");
                    }
                }
                if watches.contains_key(&id) {
                    queue.insert((next, id));
                }
            }
            Some(Event::Reload) => {
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
                    Ok(new) => {
                        let before = watches.len();
                        let mut next: HashMap<String, Arc<Watch>> = HashMap::new();
                        for w in new {
                            // Display names every setting of a schedule.
                            let changed_schedule = watches.get(&w.id).is_none_or(|old| {
                                old.schedule.to_string() != w.schedule.to_string()
                            });
                            if changed_schedule {
                                queue.retain(|(_, id)| id != &w.id);
                                if !in_flight.contains(&w.id) {
                                    let due = if watches.contains_key(&w.id) {
                                        next_run(&w, SystemTime::now())
                                    } else {
                                        SystemTime::now()
                                    };
                                    queue.insert((due, w.id.clone()));
                                }
                            }
                            next.insert(w.id.clone(), Arc::new(w));
                        }
                        queue.retain(|(_, id)| next.contains_key(id));
                        tracing::info!(before, after = next.len(), "watches reloaded");
                        if let Some(server) = &server {
                            server.set_watches(next.values().cloned().collect());
                        }
                        watches = next;
                    }
                }
                let _ = sd_notify::notify(&[sd_notify::NotifyState::Ready]);
            }
            Some(Event::CheckNow(id)) if watches.contains_key(&id) && !in_flight.contains(&id) => {
                queue.retain(|(_, q)| q != &id);
                queue.insert((SystemTime::now(), id.clone()));
                tracing::info!(watch = %id, "check requested");
            }
            Some(Event::CheckNow(_)) => {}
            Some(Event::Stop) => break,
        }
    }

    let _ = sd_notify::notify(&[sd_notify::NotifyState::Stopping]);
    tracing::info!(
        in_flight = checks.len(),
        "stopping: letting checks in flight finish"
    );
    let drained = tokio::time::timeout(DRAIN_TIMEOUT, async {
        while checks.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!("checks still running after {DRAIN_TIMEOUT:?}; stopping anyway");
        checks.abort_all();
    }
    endless.abort_all();
    stop_outbox.notify_one();
    stop_server.notify_one();
    // Requests in flight and the outbox's round get a moment to finish;
    // with nothing in flight this returns at once.
    let finished = tokio::time::timeout(SERVER_DRAIN_TIMEOUT, async {
        while background.join_next().await.is_some() {}
    })
    .await;
    if finished.is_err() {
        tracing::warn!("requests still in flight after {SERVER_DRAIN_TIMEOUT:?}; stopping anyway");
    }
    background.abort_all();
    tracing::info!("stopped");
    Ok(())
}

async fn outbox_loop(
    stores: Arc<StorePool>,
    notifiers: Arc<HashMap<String, Notifier>>,
    give_up: Duration,
    wake: Arc<Notify>,
    stop: Arc<Notify>,
    metrics: Arc<crate::serve::metrics::Metrics>,
) {
    loop {
        match outbox::deliver_due(&stores, &notifiers, give_up, SystemTime::now()).await {
            Ok(round) => {
                metrics.alerts_sent.inc_by(round.delivered as u64);
                metrics.alerts_failed.inc_by(round.given_up as u64);
            }
            Err(error) => tracing::error!(error = %format!("{error:#}"), "outbox round failed"),
        }
        let next = stores.run(|s| s.next_alert_due()).await.ok().flatten();
        let sleep = next
            .map(|t| t.duration_since(SystemTime::now()).unwrap_or_default())
            .unwrap_or(OUTBOX_POLL)
            .min(OUTBOX_POLL)
            .max(Duration::from_millis(50));
        tokio::select! {
            () = wake.notified() => {}
            () = tokio::time::sleep(sleep) => {}
            () = stop.notified() => return,
        }
    }
}

fn spawn_signals(tx: mpsc::UnboundedSender<Event>) -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("cannot listen for SIGINT")?;
    let mut hup = signal(SignalKind::hangup()).context("cannot listen for SIGHUP")?;
    tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                _ = term.recv() => Event::Stop,
                _ = int.recv() => Event::Stop,
                _ = hup.recv() => Event::Reload,
            };
            if tx.send(event).is_err() {
                return;
            }
        }
    });
    Ok(())
}

/// Watches the watches directory; a change sends one `Reload` once the
/// directory has been quiet for [`RELOAD_SETTLE`]. Without inotify (or on
/// error) only SIGHUP reloads.
fn watch_directory(
    dir: &Path,
    tx: mpsc::UnboundedSender<Event>,
) -> Option<fswatch::RecommendedWatcher> {
    use fswatch::Watcher;
    let (raw_tx, mut raw_rx) = mpsc::unbounded_channel::<()>();
    let mut watcher =
        match fswatch::recommended_watcher(move |event: fswatch::Result<fswatch::Event>| {
            // Only watch files count: a store or editor swap file kept in
            // the directory must not reload the watches on every write.
            let is_watch_file =
                |p: &std::path::PathBuf| p.extension().is_some_and(|x| x == "yaml" || x == "yml");
            if event.is_ok_and(|e| !e.kind.is_access() && e.paths.iter().any(is_watch_file)) {
                let _ = raw_tx.send(());
            }
        }) {
            Ok(w) => w,
            Err(error) => {
                tracing::warn!(%error, "cannot watch the watches directory; reload with SIGHUP");
                return None;
            }
        };
    if let Err(error) = watcher.watch(dir, fswatch::RecursiveMode::NonRecursive) {
        tracing::warn!(dir = %dir.display(), %error, "cannot watch the watches directory; reload with SIGHUP");
        return None;
    }
    tokio::spawn(async move {
        while raw_rx.recv().await.is_some() {
            // Settle: editors write files in several steps.
            while let Ok(Some(())) = tokio::time::timeout(RELOAD_SETTLE, raw_rx.recv()).await {}
            if tx.send(Event::Reload).is_err() {
                return;
            }
        }
    });
    Some(watcher)
}
