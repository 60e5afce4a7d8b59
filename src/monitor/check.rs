//! One check of one watch: fetch -> hierarchy -> hash compare -> (if
//! changed) semantic diff and snapshot -> thresholds -> alerts queued, all
//! recorded in one store transaction.
//!
//! Fetching is async; decoding, building the hierarchy, diffing, XPath and
//! recording run on a worker thread ([`crate::monitor::workers`], one per
//! CPU; the DOM and libxml2 types are not `Send`), the other SQLite calls
//! on tokio's blocking threads. A check never panics on a page: every
//! failure becomes the watch's `last_error`, and after `alert_after`
//! consecutive failures one `failing` alert, then one `recovered` alert
//! when a check succeeds again.
//!
//! Thresholds are evaluated when the data changed, or when the threshold
//! settings changed since the last evaluation (on a 304 or an unchanged page
//! the stored snapshot is used), so an unchanged page costs one hash
//! comparison.

use crate::error_chain;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use tracing::Instrument;

use crate::config::{Auth, DaemonConfig, Login, LoginHow, Watch};
use crate::diff::Change;
use crate::hierarchy::Hierarchy;
use crate::monitor::compare::{self, Prepared};
use crate::monitor::fingerprint;
use crate::monitor::layout::{self, LayoutState};
use crate::monitor::session::{Session, Sessions, Turn};
use crate::monitor::threshold::{self, Bounds, Level, Reading, Transition};
use crate::monitor::watch_page::{self, WatchPage};
use crate::monitor::workers::{WorkerPanicked, Workers};
use crate::notify::{Alert, AlertKind, ChangeLine, ThresholdAlert};
use crate::page::browser::{
    Browsers, DomTest, Job, Ready, RenderOptions, RenderRequest, Rendered, Revalidate,
};
use crate::page::budget::{Budget, Exceeded, PageLimits};
use crate::page::fetch::{self, Clients, Credentials, Fetched, HostLimiter, PageRequest};
use crate::page::session::BrowserCookie;
use crate::page::source::{FetchOptions, RawPage, SourceError};
use crate::store::pool::{PoolError, StorePool};
use crate::store::time;
use crate::store::{
    CheckRecord, CheckStart, CheckState, Queued, Retention, Store, StoreError, ThresholdRecord,
    WatchStatus,
};
use crate::template::cluster::TemplateSet;
use crate::xpath::native::Evaluator;

/// `limits.host_spacing` and `limits.per_host` across the replicas
/// sharing the store: each request start is reserved in the database
/// ([`Store::reserve_host_start`]), and each request takes one of its
/// host's `per_host` slots there ([`Store::take_host_slot`]) for as long
/// as it runs. If the database cannot be reached for either, the replica
/// goes on with its own spacing and count, and says so.
#[derive(Debug)]
struct StoreHosts {
    stores: Arc<StorePool>,
    /// The owner of this process's slots: its pid and a random part.
    owner: Arc<str>,
    /// The hosts (with the `per_host` they were made for) whose slot rows
    /// this process made sure of.
    ensured: std::sync::Mutex<std::collections::HashSet<(String, usize)>>,
}

impl StoreHosts {
    fn new(stores: Arc<StorePool>) -> StoreHosts {
        StoreHosts {
            stores,
            owner: Arc::from(format!(
                "{}/{:08x}",
                std::process::id(),
                rand::random::<u32>()
            )),
            ensured: std::sync::Mutex::default(),
        }
    }

    fn unavailable(host: &str, what: &str, error: PoolError) {
        tracing::warn!(host, error = %format!("{:#}", anyhow::Error::from(error)),
            "cannot {what} in the store; counting this replica's requests only");
    }
}

impl fetch::SharedHosts for StoreHosts {
    fn reserve<'a>(
        &'a self,
        host: &'a str,
        spacing: Duration,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Option<SystemTime>> + Send + 'a>> {
        Box::pin(async move {
            let owned = host.to_owned();
            let reserved = self
                .stores
                .run(move |s| s.reserve_host_start(&owned, SystemTime::now(), spacing))
                .await;
            match reserved {
                Ok(at) => Some(at),
                Err(error) => {
                    tracing::warn!(host, error = %format!("{:#}", anyhow::Error::from(error)),
                        "cannot reserve a request start in the store; spacing this replica's only");
                    None
                }
            }
        })
    }

    fn take_slot<'a>(
        &'a self,
        host: &'a str,
        per_host: usize,
        until: SystemTime,
        waiter: &'a fetch::Waiter,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = fetch::SlotTake> + Send + 'a>> {
        Box::pin(async move {
            let key = (host.to_owned(), per_host);
            let ensured = self
                .ensured
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains(&key);
            if !ensured {
                let owned = host.to_owned();
                match self
                    .stores
                    .run(move |s| s.ensure_host_slots(&owned, per_host))
                    .await
                {
                    Ok(()) => {
                        self.ensured
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .insert(key);
                    }
                    Err(error) => {
                        Self::unavailable(host, "make a host's request slots", error);
                        return fetch::SlotTake::Unavailable;
                    }
                }
            }
            let owned = host.to_owned();
            let owner = Arc::clone(&self.owner);
            let waiter = waiter.clone();
            let taken = self
                .stores
                .run(move |s| {
                    let asking = crate::store::SlotWaiter {
                        ticket: &waiter.ticket,
                        since: waiter.since,
                        queues: waiter.queued,
                    };
                    s.take_host_slot(&owned, per_host, &owner, SystemTime::now(), until, &asking)
                })
                .await;
            match taken {
                Ok(Some(slot)) => fetch::SlotTake::Taken(slot),
                Ok(None) => fetch::SlotTake::Full,
                Err(error) => {
                    Self::unavailable(host, "take a request slot", error);
                    fetch::SlotTake::Unavailable
                }
            }
        })
    }

    fn give_back(&self, host: &str, slot: i64) {
        // With the slots given back at the same moment, in one statement
        // (StorePool::give_back_host_slot).
        self.stores.give_back_host_slot(host, slot, &self.owner);
    }

    fn leave_queue(&self, host: &str, ticket: &str) {
        let ticket = ticket.to_owned();
        self.in_background(
            host,
            "cannot leave the queue for a request slot; the wait stops counting soon",
            move |s, host| s.leave_host_queue(host, &ticket, SystemTime::now()),
        );
    }
}

impl StoreHosts {
    /// Runs `write` on `host`'s rows from a task of its own (the caller,
    /// a guard being dropped, cannot wait), logging `failed` if it fails.
    /// Without a runtime (shutting down) nothing is written: a slot is free
    /// again when its lease ends, and a wait stops counting once it is not
    /// renewed.
    fn in_background(
        &self,
        host: &str,
        failed: &'static str,
        write: impl FnOnce(&mut Store, &str) -> Result<(), StoreError> + Send + 'static,
    ) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let stores = Arc::clone(&self.stores);
        let host = host.to_owned();
        runtime.spawn(async move {
            let owned = host.clone();
            if let Err(error) = stores.run(move |s| write(s, &owned)).await {
                let error = format!("{:#}", anyhow::Error::from(error));
                tracing::warn!(host, error, "{failed}");
            }
        });
    }
}

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
        if stores.shared_by_replicas() {
            limiter = limiter.with_shared(Arc::new(StoreHosts::new(Arc::clone(&stores))));
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

/// Why a check could not even be recorded (page failures are not errors:
/// they are recorded in the watch's status).
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The store failed reading or recording the check.
    #[error("cannot record the check of watch `{watch}`")]
    Store {
        /// The watch.
        watch: String,
        /// What failed.
        #[source]
        source: PoolError,
    },
    /// The worker thread that builds, compares and records the page
    /// panicked.
    #[error("the check of watch `{watch}` stopped: its worker thread failed")]
    Worker {
        /// The watch.
        watch: String,
        /// Why the thread ended.
        #[source]
        source: WorkerPanicked,
    },
}

impl CheckError {
    /// A store failure in the check of `watch`.
    fn store(watch: &str, source: impl Into<PoolError>) -> CheckError {
        CheckError::Store {
            watch: watch.to_owned(),
            source: source.into(),
        }
    }

    /// The watch whose check failed.
    pub fn watch(&self) -> &str {
        match self {
            CheckError::Store { watch, .. } | CheckError::Worker { watch, .. } => watch,
        }
    }
}

/// What happened to the page.
#[derive(Debug, Clone, PartialEq)]
pub enum PageOutcome {
    /// 304 Not Modified.
    NotModified,
    /// Fetched; its data is the same as stored.
    Unchanged,
    /// The first snapshot of this watch.
    First,
    /// The data changed.
    Changed(Vec<Change>),
    /// The check failed.
    Failed(String),
    /// The answer was a block, not the page (a bot challenge, a rate
    /// limit, a page matching the watch's `blocked` XPaths): a failure that
    /// is never compared or stored ([`crate::page::blocked`]).
    Blocked(String),
}

impl PageOutcome {
    /// The outcome as one word, for logs and metrics: `not_modified`,
    /// `unchanged`, `first`, `changed`, `failed` or `blocked`.
    pub fn kind(&self) -> &'static str {
        match self {
            PageOutcome::NotModified => "not_modified",
            PageOutcome::Unchanged => "unchanged",
            PageOutcome::First => "first",
            PageOutcome::Changed(_) => "changed",
            PageOutcome::Failed(_) => "failed",
            PageOutcome::Blocked(_) => "blocked",
        }
    }
}

/// The result of one check.
#[derive(Debug, Clone)]
pub struct CheckReport {
    /// The watch.
    pub watch: String,
    /// What happened to the page.
    pub outcome: PageOutcome,
    /// The alerts raised (queued, unless a dry run).
    pub alerts: Vec<Alert>,
    /// Each threshold's level and value after the check (empty when not
    /// evaluated).
    pub thresholds: Vec<(String, Level, Option<f64>)>,
    /// The summary of the layout event this check raised (recorded in the
    /// change history; an alert only under `layout.notify`).
    pub layout: Option<String>,
    /// How long the fetch took (retries and per-host waits included).
    pub fetch_time: Duration,
    /// The next run, when this check moved it from the schedule's (a
    /// page refused for its size backs off).
    pub next_run: Option<SystemTime>,
}

/// Why a page was refused for its size.
enum Rejected {
    /// It went over its budget now.
    Now(Exceeded),
    /// It is the same bytes as the page refused last time.
    Again,
}

/// The longest a page refused for its size waits for its next check.
pub const MAX_BACKOFF: Duration = Duration::from_secs(6 * 3600);

/// When a page refused for its size `failures` times in a row is checked
/// next: the schedule's interval (from `now` to `next`) doubled per
/// failure after the first, at most [`MAX_BACKOFF`] (or the interval, if
/// longer), never before `next`.
pub fn backed_off(now: SystemTime, next: SystemTime, failures: u32) -> SystemTime {
    let interval = next
        .duration_since(now)
        .unwrap_or_default()
        .max(Duration::from_secs(1));
    let factor = 1u32 << failures.saturating_sub(1).min(16);
    let delay = interval
        .saturating_mul(factor)
        .min(MAX_BACKOFF.max(interval));
    (now + delay).max(next)
}

/// The first of `xpaths` that selects something in `h`: of the watch's
/// `blocked` XPaths, the page is a challenge or block page served as a
/// page; of its session's `logged_out` ones, the session is logged out.
fn first_selecting<'x>(xpaths: &'x [String], h: &Hierarchy) -> Option<&'x str> {
    if xpaths.is_empty() {
        return None;
    }
    let ev = Evaluator::new(h);
    xpaths.iter().find(|x| ev.selects(x)).map(String::as_str)
}

/// True when `body` is the body of the stored snapshot, fetched again with
/// the same settings: the check can skip decoding, parsing and diffing (as
/// changedetection.io skips identical bytes). A watch with a learned
/// template always rebuilds, since `semclip learn` may have changed the
/// template behind the same name.
fn same_bytes(status: &WatchStatus, body: &str, watch: &Watch, current: Option<&str>) -> bool {
    current.is_some()
        && watch.layout.template.is_none()
        && status.body_hash.as_deref() == Some(body)
}

/// Runs one check of `watch` at `now`, in a `check` span carrying the watch
/// id. `next_run` is stored as the watch's next run. A dry run writes
/// nothing and queues nothing.
///
/// The steps: read the stored state, fetch, then on a worker thread
/// build the hierarchy, compare it, judge thresholds and layout, raise
/// alerts and record it all (`Work::judge`, `Work::record`).
pub async fn check(
    engine: &Engine,
    watch: &Arc<Watch>,
    now: SystemTime,
    next_run: Option<SystemTime>,
    dry_run: bool,
) -> Result<CheckReport, CheckError> {
    let span = tracing::info_span!("check", watch = %watch.id);
    checked(engine, watch, now, next_run, dry_run, None)
        .instrument(span)
        .await
}

/// [`check`] (not a dry run) from `start`, what the check starts from as
/// read with the watch's claim ([`Store::claim_and_start`]; `None`: read
/// here).
pub async fn check_from(
    engine: &Engine,
    watch: &Arc<Watch>,
    now: SystemTime,
    next_run: Option<SystemTime>,
    start: Option<CheckStart>,
) -> Result<CheckReport, CheckError> {
    let span = tracing::info_span!("check", watch = %watch.id);
    checked(engine, watch, now, next_run, false, start)
        .instrument(span)
        .await
}

#[expect(
    clippy::too_many_lines,
    reason = "a check's steps in order; the split of monitor/check.rs (issue 33) takes it apart"
)]
async fn checked(
    engine: &Engine,
    watch: &Arc<Watch>,
    now: SystemTime,
    next_run: Option<SystemTime>,
    dry_run: bool,
    start: Option<CheckStart>,
) -> Result<CheckReport, CheckError> {
    let (status, current_hash, layout, thresholds) =
        stored_state(engine, watch, now, next_run, start).await?;
    let session = watch
        .session
        .as_deref()
        .map(|name| engine.sessions.get(name));
    let login = watch
        .session
        .as_deref()
        .and_then(|name| engine.daemon.sessions.get(name))
        .and_then(|s| s.login.as_ref());
    let started = std::time::Instant::now();
    // At most two passes: the page, and after a login the page again.
    let mut after_login = false;
    let mut login_failed = None;
    loop {
        // Validators only when there is a snapshot to fall back on.
        let mut request = page_request(watch, &status, current_hash.is_some());
        let logins = match &session {
            Some(session) => session.logins().await,
            None => 0,
        };
        let fetched = match login_failed.take() {
            Some(error) => Err(error),
            None => match &watch.fetch.render {
                Some(options) => {
                    let session = session.as_deref();
                    // `revalidate: render` (the default) skips the
                    // conditional request: a 304 on the HTML says nothing
                    // of the data its scripts fetch.
                    let answered = match options.revalidate {
                        Revalidate::Html => {
                            revalidate(engine, session, &mut request, now, dry_run).await
                        }
                        Revalidate::Render => None,
                    };
                    match answered {
                        Some(answered) => answered,
                        None => render(engine, watch, options, session, now, dry_run).await,
                    }
                }
                None => {
                    fetch_in_session(engine, session.as_deref(), &mut request, now, dry_run).await
                }
            },
        };
        let logged_out = match (&session, login) {
            (Some(session), Some(login)) => Some(LoggedOutCheck {
                session: session.name().to_owned(),
                markers: login.logged_out.clone(),
                after_login,
            }),
            _ => None,
        };
        let pending = Pending {
            watch: Arc::clone(watch),
            now,
            next_run,
            dry_run,
            status: status.clone(),
            current_hash: current_hash.clone(),
            layout: layout.clone(),
            thresholds: thresholds.clone(),
            fetched,
            fetch_time: started.elapsed(),
            retention: engine.daemon.retention,
            limits: engine.daemon.limits.page,
            logged_out,
        };
        let stores = Arc::clone(&engine.stores);
        // Events on the worker thread belong to this check's span too.
        let span = tracing::Span::current();
        // A store that groups records (PostgreSQL) is given this one after
        // the worker is done, with other checks' (StorePool::record); one
        // that does not (SQLite) gets it here, on the worker's store.
        let record_here = !stores.groups_records();
        let recorded = engine
            .workers
            .run(move || {
                span.in_scope(|| stores.with(|store| pending.judge_and_record(store, record_here)))
            })
            .await;
        let judged = match recorded {
            Ok(judged) => judged.map_err(|source| CheckError::store(&watch.id, source))?,
            Err(source) => {
                return Err(CheckError::Worker {
                    watch: watch.id.clone(),
                    source,
                });
            }
        };
        match judged {
            Judged::Report(report) => return Ok(*report),
            Judged::Unrecorded(unrecorded) => {
                return record_unrecorded(engine, watch, now, *unrecorded).await;
            }
            Judged::LoggedOut => {}
        }
        // Logged out: only a session with a login says so.
        if let (Some(session), Some(login)) = (&session, login)
            && let Err(source) =
                log_in(engine, session, login, &request, logins, now, dry_run).await
        {
            login_failed = Some(SourceError::Login {
                session: session.name().to_owned(),
                source: Box::new(source),
            });
        }
        after_login = true;
    }
}

/// Fetches `request` with `session`'s jar, if the watch has a session:
/// the stored jar is read first when it changed, and the jar is written
/// right after the fetch when the fetch changed it (not in a dry run).
async fn fetch_in_session(
    engine: &Engine,
    session: Option<&Session>,
    request: &mut PageRequest,
    now: SystemTime,
    dry_run: bool,
) -> Result<Fetched, SourceError> {
    let Some(session) = session else {
        return fetch::fetch(&engine.clients, &engine.limiter, request).await;
    };
    session.refresh(&engine.stores).await;
    let before = session.snapshot();
    request.jar = Some(session.jar().clone());
    let fetched = fetch::fetch(&engine.clients, &engine.limiter, request).await;
    if !dry_run {
        session
            .save(&engine.stores, before.as_deref(), false, now)
            .await;
    }
    fetched
}

/// Logs `session` in by posting `login`'s form with the watch's fetch
/// settings, unless another check logged it in since this one counted
/// `logins`. The jar is written right after (not in a dry run).
async fn log_in(
    engine: &Engine,
    session: &Session,
    login: &Login,
    request: &PageRequest,
    logins: u64,
    now: SystemTime,
    dry_run: bool,
) -> Result<(), SourceError> {
    let turn = match session.login_turn(logins).await {
        Turn::Go(turn) => turn,
        Turn::Done => {
            tracing::info!(
                session = session.name(),
                "logged in by another check meanwhile"
            );
            return Ok(());
        }
        Turn::Held { last, wait } => return Err(SourceError::LoginHeld { last, wait }),
    };
    let before = session.snapshot();
    let posted = match &login.how {
        LoginHow::Form(form) => fetch::post_form(
            &engine.clients,
            &engine.limiter,
            form,
            session.jar(),
            &request.opts,
        )
        .await
        .map(drop),
        LoginHow::Steps { url, steps } => {
            let given = session.jar().browser_cookies();
            let options = RenderOptions::default();
            let browsed = browse(
                engine,
                RenderRequest {
                    url,
                    options: &options,
                    headers: &request.headers,
                    headers_cross_origin: request.headers_cross_origin,
                    cookies: &given,
                    job: Job::Login(steps),
                    hierarchy: None,
                    timeout: request.opts.request_timeout,
                    max_bytes: request.opts.max_body_bytes,
                    fence: engine.clients.fence(),
                },
            )
            .await;
            browsed.map(|rendered| {
                session
                    .jar()
                    .take_from_browser(&rendered.given, &rendered.cookies);
            })
        }
    };
    let ok = posted.is_ok();
    match &posted {
        Ok(()) => {
            turn.done();
            tracing::info!(session = session.name(), url = %login.how.url(), "logged in");
        }
        Err(error) => turn.failed(error_chain(error)),
    }
    if !dry_run {
        session
            .save(&engine.stores, before.as_deref(), ok, now)
            .await;
    }
    posted
}

/// The watch's stored status (this attempt and the next run set), the
/// content hash of its current snapshot, its layout state (JSON) and its
/// thresholds' stored states, read by one statement.
async fn stored_state(
    engine: &Engine,
    watch: &Watch,
    now: SystemTime,
    next_run: Option<SystemTime>,
    start: Option<CheckStart>,
) -> Result<
    (
        WatchStatus,
        Option<String>,
        Option<String>,
        Vec<ThresholdRecord>,
    ),
    CheckError,
> {
    let start = match start {
        Some(start) => start,
        None => {
            let id = watch.id.clone();
            engine
                .stores
                .run(move |s| s.check_start(&id))
                .await
                .map_err(|source| CheckError::store(&watch.id, source))?
        }
    };
    let CheckStart {
        status,
        current_hash,
        layout,
        thresholds,
    } = start;
    let mut status = status.unwrap_or_else(|| WatchStatus {
        watch: watch.id.clone(),
        ..WatchStatus::default()
    });
    status.last_attempt = Some(now);
    if next_run.is_some() {
        status.next_run = next_run;
    }
    Ok((status, current_hash, layout, thresholds))
}

/// A fetched check waiting for its blocking part.
struct Pending {
    watch: Arc<Watch>,
    now: SystemTime,
    /// The run after this one, as the schedule has it.
    next_run: Option<SystemTime>,
    dry_run: bool,
    status: WatchStatus,
    /// The content hash of the stored snapshot.
    current_hash: Option<String>,
    /// The stored layout state (JSON).
    layout: Option<String>,
    /// The thresholds' stored states.
    thresholds: Vec<ThresholdRecord>,
    fetched: Result<Fetched, SourceError>,
    fetch_time: Duration,
    retention: Retention,
    limits: PageLimits,
    /// The session's logged-out XPaths, when it has a login.
    logged_out: Option<LoggedOutCheck>,
}

/// What tells a page of a session with a login logged out.
struct LoggedOutCheck {
    /// The session.
    session: String,
    /// Its `logged_out` XPaths.
    markers: Vec<String>,
    /// Whether the session logged in during this check already: a page
    /// still logged out is then a failure, not a reason to log in again.
    after_login: bool,
}

/// What judging a fetched page came to.
enum Judged {
    /// The check, recorded (unless a dry run).
    Report(Box<CheckReport>),
    /// The check, judged, its record still to be written
    /// ([`record_unrecorded`]).
    Unrecorded(Box<Unrecorded>),
    /// The page shows its session logged out: nothing judged or
    /// recorded; the session logs in and the page is fetched again.
    LoggedOut,
}

impl Pending {
    /// Judges the fetched page and, unless a dry run, records the check:
    /// here when `record_here`, otherwise the record is made ready and
    /// left to the caller ([`Judged::Unrecorded`]).
    fn judge_and_record(self, store: &mut Store, record_here: bool) -> Result<Judged, StoreError> {
        let Pending {
            watch,
            now,
            next_run,
            dry_run,
            status,
            current_hash,
            layout,
            thresholds,
            fetched,
            fetch_time,
            retention,
            limits,
            logged_out,
        } = self;
        let alert_after = watch.failures.alert_after;
        let before = status.clone();
        let mut work = Work::new(&watch, now, status);
        work.logged_out = logged_out.as_ref();
        work.stored_thresholds = thresholds;
        let page = PageSettings {
            current_hash: current_hash.as_deref(),
            layout: layout.as_deref(),
            limits,
            next_run,
            alert_after,
        };
        let (outcome, snapshot, moved_run) = work.judge(store, fetched, page)?;
        if work.needs_login {
            return Ok(Judged::LoggedOut);
        }
        let levels = work.levels();
        let record = (!dry_run).then(|| work.check_record(snapshot.as_ref(), &retention));
        let mut report = CheckReport {
            watch: watch.id.clone(),
            outcome,
            alerts: std::mem::take(&mut work.alerts),
            thresholds: levels,
            layout: work.layout_event.take(),
            fetch_time,
            next_run: moved_run,
        };
        let Some(record) = record else {
            return Ok(Judged::Report(Box::new(report)));
        };
        if !record_here {
            return Ok(Judged::Unrecorded(Box::new(Unrecorded {
                report,
                record,
                before,
                retention,
            })));
        }
        if let Err(error) = record.and_then(|record| store.write_record(&record)) {
            // The results could not be kept (a snapshot over the
            // store's limit, a full disk): the check failed, and that
            // must reach the watch's status and alerts.
            let message = unstored(&error);
            let mut failed = Work::new(&watch, now, before);
            failed.failed(&message, alert_after);
            failed.record(store, None, &retention)?;
            report.outcome = PageOutcome::Failed(message);
            report.thresholds = Vec::new();
            report.alerts = failed.alerts;
            report.layout = failed.layout_event;
        }
        Ok(Judged::Report(Box::new(report)))
    }
}

/// A judged check whose record the caller writes.
struct Unrecorded {
    /// The check as judged.
    report: CheckReport,
    /// Its record, or why it could not be made.
    record: Result<CheckRecord, StoreError>,
    /// The watch's status before the check (for a failure).
    before: WatchStatus,
    retention: Retention,
}

/// Why a check failed when its results could not be kept.
fn unstored(error: &(dyn std::error::Error + 'static)) -> String {
    format!(
        "the check's results could not be stored: {}",
        error_chain(error)
    )
}

/// Writes a judged check's record through the pool (grouped with other
/// checks' on PostgreSQL: [`StorePool::record`]). If the results cannot be
/// kept (a snapshot over the store's limit, a full disk), the check failed,
/// and that must reach the watch's status and alerts: the failure is
/// recorded instead, as [`Pending::judge_and_record`] does.
async fn record_unrecorded(
    engine: &Engine,
    watch: &Watch,
    now: SystemTime,
    unrecorded: Unrecorded,
) -> Result<CheckReport, CheckError> {
    let Unrecorded {
        mut report,
        record,
        before,
        retention,
    } = unrecorded;
    let written = match record {
        Ok(record) => match engine.stores.record(record).await {
            Ok(_) => return Ok(report),
            Err(error) => unstored(&error),
        },
        Err(error) => unstored(&error),
    };
    let mut failed = Work::new(watch, now, before);
    failed.failed(&written, watch.failures.alert_after);
    let record = failed
        .check_record(None, &retention)
        .map_err(|source| CheckError::store(&watch.id, source))?;
    report.outcome = PageOutcome::Failed(written);
    report.thresholds = Vec::new();
    report.alerts = std::mem::take(&mut failed.alerts);
    report.layout = failed.layout_event.take();
    engine
        .stores
        .record(record)
        .await
        .map_err(|source| CheckError::store(&watch.id, source))?;
    Ok(report)
}

/// The stored layout state of `watch` (read with its status, see
/// [`stored_state`]); a missing or unreadable one (a store written by an
/// older version, a damaged row) starts afresh.
fn previous_layout(watch: &str, stored: Option<&str>) -> LayoutState {
    match stored {
        Some(json) => serde_json::from_str(json).unwrap_or_else(|error| {
            tracing::warn!(watch, %error, "unreadable layout state, starting afresh");
            LayoutState::default()
        }),
        None => LayoutState::default(),
    }
}

/// The template set `name` from the store; `None` (with a warning) when it
/// was never learned or cannot be read, so the watch still runs.
fn template_set(store: &Store, watch: &str, name: &str) -> Option<TemplateSet> {
    match store.template_set(name) {
        Ok(Some(json)) => match serde_json::from_str(&json) {
            Ok(set) => Some(set),
            Err(error) => {
                tracing::warn!(watch, template = name, %error, "unreadable template set");
                None
            }
        },
        Ok(None) => {
            tracing::warn!(
                watch,
                template = name,
                "no such template set: learn it with `semclip learn`"
            );
            None
        }
        Err(error) => {
            tracing::warn!(watch, template = name, error = %error_chain(&error), "cannot read the template set");
            None
        }
    }
}

/// The outbox rows for `alerts`: one per alert and notifier.
fn queue(watch: &Watch, alerts: &[Alert]) -> Vec<Queued> {
    let mut out = Vec::new();
    for alert in alerts {
        let (notifiers, digest): (Vec<String>, Option<Duration>) = match alert.kind {
            AlertKind::Changed => match &watch.on_change {
                Some(on) => (on.notify.clone(), on.digest),
                None => (Vec::new(), None),
            },
            AlertKind::Failing | AlertKind::Recovered => (watch.failures.notify.clone(), None),
            AlertKind::LayoutChanged => (watch.layout.notify.clone(), None),
            _ => {
                let name = alert.threshold.as_ref().map(|t| t.name.as_str());
                let notify = watch
                    .thresholds
                    .iter()
                    .find(|t| Some(t.name.as_str()) == name)
                    .map(|t| t.notify.clone())
                    .unwrap_or_default();
                (notify, None)
            }
        };
        let Ok(body) = serde_json::to_string(alert) else {
            continue;
        };
        for notifier in notifiers {
            out.push(Queued {
                alert_id: alert.id.clone(),
                notifier,
                body: body.clone(),
                digest,
            });
        }
    }
    out
}

/// The conditional request before a render, when the watch has stored
/// validators (an `ETag` or `Last-Modified` of the page's own response,
/// kept from the last render, and a snapshot to fall back on): sent
/// through the same client, host limits and session jar as an HTTP
/// watch's. `Some` answer ends the check's fetch: a 304 (unchanged, no
/// render), or a failure (a block is judged as for any fetch). `None`:
/// the page changed or there is nothing to revalidate with; render it.
///
/// Decision: on a 200 the browser navigates to the page itself rather
/// than being handed the body just fetched (`setContent`): a page's
/// scripts need its real origin (relative URLs, same-origin requests,
/// its cookies), which handing over a body would only give through
/// intercepting the tab's requests, an event loop per tab that the
/// supervision keeps out. The cost is the page fetched twice when it
/// changed; an unchanged page costs one 304 and no browser at all.
async fn revalidate(
    engine: &Engine,
    session: Option<&Session>,
    request: &mut PageRequest,
    now: SystemTime,
    dry_run: bool,
) -> Option<Result<Fetched, SourceError>> {
    if request.etag.is_none() && request.last_modified.is_none() {
        return None;
    }
    match fetch_in_session(engine, session, request, now, dry_run).await {
        Ok(Fetched::Page { .. }) => None,
        answered => Some(answered),
    }
}

/// Renders a `render: browser` watch's page in the daemon's browser.
/// The tab starts with the session's cookies (the stored jar read first
/// when it changed) and the watch's own `fetch.cookies`; what the page did
/// to the session's cookies goes back into the jar, written right after
/// (not in a dry run), as after an HTTP fetch. The validators of the
/// page's own response are kept for the next check's conditional request
/// ([`revalidate`]).
async fn render(
    engine: &Engine,
    watch: &Arc<Watch>,
    options: &RenderOptions,
    session: Option<&Session>,
    now: SystemTime,
    dry_run: bool,
) -> Result<Fetched, SourceError> {
    let url = &watch.url;
    let mut given = Vec::new();
    let before = match session {
        Some(session) => {
            session.refresh(&engine.stores).await;
            given = session.jar().browser_cookies();
            session.snapshot()
        }
        None => None,
    };
    let own: Vec<BrowserCookie> = watch
        .fetch
        .cookies
        .iter()
        .filter_map(|(name, value)| {
            Some(BrowserCookie {
                name: name.clone(),
                value: value.expose().to_owned(),
                domain: url.host_str()?.to_owned(),
                host_only: true,
                path: "/".to_owned(),
                secure: false,
                http_only: false,
                expires: None,
            })
        })
        .collect();
    given.extend(own.iter().cloned());
    let hierarchy = match &options.wait_for {
        Some(Ready::Hierarchy(xpath)) => Some(HierarchyTest {
            workers: &engine.workers,
            watch: Arc::clone(watch),
            xpath: xpath.clone(),
            limits: engine.daemon.limits.page,
        }),
        _ => None,
    };
    let rendered = browse(
        engine,
        RenderRequest {
            url,
            options,
            headers: &watch.fetch.headers,
            headers_cross_origin: watch.fetch.headers_cross_origin,
            cookies: &given,
            job: Job::Page,
            hierarchy: hierarchy.as_ref().map(|t| t as &dyn DomTest),
            timeout: watch.fetch.timeout,
            max_bytes: watch.fetch.max_body,
            fence: engine.clients.fence(),
        },
    )
    .await;
    if let Some(session) = session {
        if let Ok(rendered) = &rendered {
            // The watch's own cookies are not the session's: as the page
            // left them, they are not taken into the jar.
            let session_only = |cookies: &[BrowserCookie]| -> Vec<BrowserCookie> {
                cookies
                    .iter()
                    .filter(|c| !own.contains(c))
                    .cloned()
                    .collect()
            };
            session.jar().take_from_browser(
                &session_only(&rendered.given),
                &session_only(&rendered.cookies),
            );
        }
        if !dry_run {
            session
                .save(&engine.stores, before.as_deref(), false, now)
                .await;
        }
    }
    let rendered = rendered?;
    rendered.diagnose(&watch.id);
    Ok(Fetched::Page {
        page: RawPage {
            bytes: rendered.html.into_bytes(),
            content_type: Some("text/html; charset=utf-8".to_owned()),
            url: Some(url.clone()),
        },
        etag: rendered.etag,
        last_modified: rendered.last_modified,
    })
}

/// A `wait_for` over the hierarchy: the rendered DOM built into the
/// page's hierarchy by the check's own builder ([`watch_page::build_page`],
/// the watch's clips included, within the page budget) on a worker
/// thread, and the XPath judged as XPath's `boolean()` judges it (a
/// node-set not empty, a comparison true), so `count(//row) > 2` waits
/// for the third row. Decisions: region clips start without their stored
/// wrappers and a learned template is not applied (both live in the
/// store, and the XPath is about what the page shows, not what the watch
/// keeps of it); the check builds the hierarchy again from the DOM taken
/// (the page is judged and stored exactly as any other).
#[derive(Debug)]
struct HierarchyTest<'e> {
    workers: &'e Workers,
    watch: Arc<Watch>,
    xpath: String,
    limits: PageLimits,
}

impl DomTest for HierarchyTest<'_> {
    fn matches(
        &self,
        html: Arc<str>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<bool, String>> + Send + '_>>
    {
        let watch = Arc::clone(&self.watch);
        let xpath = self.xpath.clone();
        let limits = self.limits;
        Box::pin(async move {
            let judged = self.workers.run(move || {
                let budget = Budget::new(limits);
                let url = watch.url.to_string();
                let page = watch_page::build_page(
                    &html,
                    Some(&url),
                    &watch,
                    &std::collections::BTreeMap::new(),
                    None,
                    &budget,
                )
                .map_err(|exceeded| exceeded.to_string())?;
                Ok(holds(&Evaluator::new(&page.hierarchy), &xpath))
            });
            judged.await.map_err(|panicked| panicked.to_string())?
        })
    }
}

/// Whether `xpath` holds on the hierarchy of `ev`, as XPath's `boolean()`
/// of its value: natively when it is a path the flat evaluator takes,
/// else by libxml2. An XPath that fails to evaluate does not hold.
fn holds(ev: &Evaluator<'_>, xpath: &str) -> bool {
    if let Some(hits) = ev.flat().select(xpath) {
        return !hits.is_empty();
    }
    ev.doc()
        .and_then(|doc| doc.evaluate(xpath))
        .is_ok_and(|value| value.to_boolean())
}

/// Renders `req` in the daemon's browser, under the same fence and
/// per-host politeness (a host's `Retry-After` hold included) as an HTTP
/// fetch of its URL.
async fn browse(engine: &Engine, req: RenderRequest<'_>) -> Result<Rendered, SourceError> {
    let url = req.url;
    engine.clients.fence().route(url, url, 0)?;
    let host = url.host_str().unwrap_or_default();
    fetch::refuse_if_held(&engine.limiter, url, req.timeout).await?;
    let _permit = engine.limiter.acquire(host, req.timeout).await;
    engine
        .browsers
        .render(req)
        .await
        .map_err(|source| SourceError::Browser {
            url: url.clone(),
            source: Box::new(source),
        })
}

fn page_request(watch: &Watch, status: &WatchStatus, validators: bool) -> PageRequest {
    let f = &watch.fetch;
    PageRequest {
        url: watch.url.clone(),
        opts: FetchOptions {
            max_body_bytes: f.max_body,
            connect_timeout: f.connect_timeout,
            request_timeout: f.timeout,
            max_redirects: f.max_redirects,
            proxy: f.proxy.clone(),
        },
        retries: f.retries,
        headers: f.headers.clone(),
        headers_cross_origin: f.headers_cross_origin,
        cookies: f
            .cookies
            .iter()
            .map(|(n, v)| (n.clone(), v.expose().to_owned()))
            .collect(),
        jar: None,
        credentials: f.auth.as_ref().map(|a| match a {
            Auth::Basic { username, password } => Credentials::Basic {
                username: username.clone(),
                password: password.expose().to_owned(),
            },
            Auth::Bearer { token } => Credentials::Bearer(token.expose().to_owned()),
        }),
        etag: status.etag.clone().filter(|_| validators),
        last_modified: status.last_modified.clone().filter(|_| validators),
    }
}

/// A fresh alert id: time, process-wide sequence and randomness, so ids
/// never repeat across restarts.
pub fn alert_id(now: SystemTime) -> String {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let ms = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let salt: u32 = rand::random();
    format!("{ms:012x}-{seq:04x}-{salt:08x}")
}

/// One check's state while it is worked out.
struct Work<'a> {
    watch: &'a Watch,
    now: SystemTime,
    status: WatchStatus,
    alerts: Vec<Alert>,
    state: CheckState,
    /// The summary of the layout event raised, if any.
    layout_event: Option<String>,
    /// The session's logged-out XPaths, when it has a login.
    logged_out: Option<&'a LoggedOutCheck>,
    /// The page showed the session logged out before any login.
    needs_login: bool,
    /// The thresholds' stored states before this check (read with the
    /// status, [`stored_state`]).
    stored_thresholds: Vec<ThresholdRecord>,
}

/// What judging a fetched page needs besides the page.
#[derive(Clone, Copy)]
struct PageSettings<'p> {
    /// The content hash of the stored snapshot.
    current_hash: Option<&'p str>,
    /// The stored layout state (JSON).
    layout: Option<&'p str>,
    limits: PageLimits,
    /// The run after this one, as the schedule has it.
    next_run: Option<SystemTime>,
    alert_after: u32,
}

/// A page fetched for a check, with what its processing needs.
struct FetchedPage<'p> {
    page: &'p RawPage,
    etag: Option<String>,
    last_modified: Option<String>,
    settings: PageSettings<'p>,
}

/// What a fetched page came to: the outcome, the snapshot to store, and
/// the next run when the check moved it.
type PageResult = (PageOutcome, Option<Prepared>, Option<SystemTime>);

impl<'a> Work<'a> {
    fn new(watch: &'a Watch, now: SystemTime, status: WatchStatus) -> Work<'a> {
        Work {
            watch,
            now,
            status,
            alerts: Vec::new(),
            state: CheckState::default(),
            layout_event: None,
            logged_out: None,
            needs_login: false,
            stored_thresholds: Vec::new(),
        }
    }

    /// What the fetch came to: a failure, a 304 (thresholds judged on
    /// the stored snapshot if their settings changed), or a page to build,
    /// compare and judge ([`Work::fetched_page`]).
    fn judge(
        &mut self,
        store: &Store,
        fetched: Result<Fetched, SourceError>,
        settings: PageSettings<'_>,
    ) -> Result<PageResult, StoreError> {
        match fetched {
            Err(error) => {
                let message = error_chain(&error);
                let outcome = match error {
                    SourceError::Blocked { blocked, .. } => {
                        self.blocked(&message, blocked.reason, settings.alert_after);
                        PageOutcome::Blocked(message)
                    }
                    _ => {
                        self.failed(&message, settings.alert_after);
                        PageOutcome::Failed(message)
                    }
                };
                Ok((outcome, None, None))
            }
            Ok(Fetched::NotModified) => {
                self.succeeded();
                self.evaluate_stored(store, settings.current_hash)?;
                Ok((PageOutcome::NotModified, None, None))
            }
            Ok(Fetched::Page {
                page,
                etag,
                last_modified,
            }) => self.fetched_page(
                store,
                FetchedPage {
                    page: &page,
                    etag,
                    last_modified,
                    settings,
                },
            ),
        }
    }

    /// Each threshold's level and value as judged (empty when not
    /// evaluated).
    fn levels(&self) -> Vec<(String, Level, Option<f64>)> {
        self.state
            .thresholds
            .iter()
            .map(|t| (t.name.clone(), t.state, t.value))
            .collect()
    }

    /// Records the check in one transaction: the status (with the next
    /// run), the snapshot when there is a new one, thresholds, layout and
    /// the alerts queued for their notifiers.
    fn record(
        &mut self,
        store: &mut Store,
        snapshot: Option<&Prepared>,
        retention: &Retention,
    ) -> Result<(), StoreError> {
        let record = self.check_record(snapshot, retention)?;
        store.write_record(&record).map(drop)
    }

    /// The check's record, ready to write (see [`Work::record`]).
    fn check_record(
        &mut self,
        snapshot: Option<&Prepared>,
        retention: &Retention,
    ) -> Result<CheckRecord, StoreError> {
        self.state.status = self.status.clone();
        self.state.alerts = queue(self.watch, &self.alerts);
        CheckRecord::new(
            &self.watch.id,
            self.now,
            snapshot.map(|p| p.snapshot_part(retention)),
            std::mem::take(&mut self.state),
        )
    }

    /// A fetched page: skipped when it is the bytes of the stored
    /// snapshot, refused when it goes over its budget (or is the bytes
    /// refused before), otherwise built, compared, its thresholds and
    /// layout judged.
    fn fetched_page(
        &mut self,
        store: &Store,
        f: FetchedPage<'_>,
    ) -> Result<PageResult, StoreError> {
        let settings = f.settings;
        let body = fingerprint::body_hash(&f.page.bytes, &settings.limits, self.watch);
        if same_bytes(&self.status, &body, self.watch, settings.current_hash) {
            // The bytes that made the stored snapshot, with the same
            // settings: nothing to parse or diff.
            tracing::debug!(watch = %self.watch.id, "the bytes of the stored snapshot: not parsed");
            self.succeeded();
            self.status.etag = f.etag;
            self.status.last_modified = f.last_modified;
            self.evaluate_stored(store, settings.current_hash)?;
            return Ok((PageOutcome::Unchanged, None, None));
        }
        let built = if self.status.rejected_body.as_deref() == Some(&body) {
            Err(Rejected::Again)
        } else {
            self.build(store, f.page, settings)
        };
        let (page, previous) = match built {
            Ok(built) => built,
            Err(rejected) => return Ok(self.refused(rejected, body, settings)),
        };
        self.status.rejected_body = None;
        if let Some(check) = self.logged_out
            && let Some(marker) = first_selecting(&check.markers, &page.hierarchy)
        {
            if !check.after_login {
                // Not judged, not recorded: the session logs in and the
                // page is fetched and checked again (`checked`).
                self.needs_login = true;
                return Ok((PageOutcome::Unchanged, None, None));
            }
            let error = SourceError::StillLoggedOut {
                session: check.session.clone(),
                marker: marker.to_owned(),
            };
            let message = error_chain(&error);
            self.failed(&message, settings.alert_after);
            return Ok((PageOutcome::Failed(message), None, None));
        }
        if let Some(xpath) = first_selecting(&self.watch.blocked, &page.hierarchy) {
            // A challenge served as a page: never compared, never stored.
            let reason = format!("the page matches the watch's blocked XPath `{xpath}`");
            let message = format!("blocked: {reason}");
            self.blocked(&message, reason, settings.alert_after);
            return Ok((PageOutcome::Blocked(message), None, None));
        }
        let prepared = match compare::prepare_against(
            store,
            &self.watch.id,
            &page.hierarchy,
            &self.watch.ignore,
            settings.current_hash,
        ) {
            Ok(prepared) => prepared,
            Err(error) => {
                let message = error_chain(&error);
                self.failed(&message, settings.alert_after);
                return Ok((PageOutcome::Failed(message), None, None));
            }
        };
        self.succeeded();
        self.status.etag = f.etag;
        self.status.last_modified = f.last_modified;
        self.status.body_hash = Some(body);
        // One evaluator for thresholds and layout: natively on the
        // hierarchy, its XML written only if an XPath needs libxml2.
        let ev = Evaluator::new(&page.hierarchy);
        let outcome = self.page(&ev, &prepared, settings.current_hash.is_none());
        self.layout(&previous, &page, &prepared, &ev);
        Ok((outcome, Some(prepared), None))
    }

    /// Builds the page's hierarchy within its budget, with the stored
    /// layout state (returned with the page) and the learned templates.
    fn build(
        &self,
        store: &Store,
        raw: &RawPage,
        settings: PageSettings<'_>,
    ) -> Result<(WatchPage, LayoutState), Rejected> {
        let watch = self.watch;
        let budget = Budget::new(settings.limits);
        let decoded = raw.decode();
        let url = raw.url.as_ref().map(ToString::to_string);
        let previous = previous_layout(&watch.id, settings.layout);
        let mut templates = watch
            .layout
            .template
            .as_deref()
            .and_then(|name| template_set(store, &watch.id, name));
        watch_page::build_page(
            &decoded.text,
            url.as_deref(),
            watch,
            &previous.wrappers,
            templates.as_mut(),
            &budget,
        )
        .map(|page| (page, previous))
        .map_err(Rejected::Now)
    }

    /// A page refused for its size: the check failed, the body is
    /// remembered (the same bytes are not parsed again) and the next run
    /// backs off.
    fn refused(
        &mut self,
        rejected: Rejected,
        body: String,
        settings: PageSettings<'_>,
    ) -> PageResult {
        let message = match rejected {
            Rejected::Now(exceeded) => exceeded.to_string(),
            Rejected::Again => format!(
                "{} (the same bytes as the page refused before: not parsed again)",
                self.status
                    .last_error
                    .as_deref()
                    .and_then(|e| e.split(" (the same bytes").next())
                    .unwrap_or("page too large")
            ),
        };
        self.failed(&message, settings.alert_after);
        self.status.rejected_body = Some(body);
        let moved = settings
            .next_run
            .map(|next| backed_off(self.now, next, self.status.failures));
        self.status.next_run = moved.or(self.status.next_run);
        (PageOutcome::Failed(message), None, moved)
    }

    fn alert(&self, kind: AlertKind, summary: String) -> Alert {
        Alert {
            id: alert_id(self.now),
            kind,
            watch: self.watch.id.clone(),
            watch_title: self.watch.title.clone(),
            url: self.watch.url.to_string(),
            at: time::rfc3339(self.now, chrono::SecondsFormat::Millis).unwrap_or_default(),
            summary,
            threshold: None,
            changes: Vec::new(),
            error: None,
            failures: None,
        }
    }

    /// A blocked check: a failure (`message` its error) whose `reason`
    /// is kept apart in the status, so status pages and the API tell a
    /// block from a broken page.
    fn blocked(&mut self, message: &str, reason: String, alert_after: u32) {
        self.failed(message, alert_after);
        self.status.blocked = Some(reason);
    }

    fn failed(&mut self, message: &str, alert_after: u32) {
        tracing::warn!(watch = %self.watch.id, error = %message, "check failed");
        self.status.failures = self.status.failures.saturating_add(1);
        self.status.last_error = Some(message.to_owned());
        self.status.blocked = None;
        if self.status.failures >= alert_after.max(1) && !self.status.failing_alerted {
            self.status.failing_alerted = true;
            let mut alert = self.alert(
                AlertKind::Failing,
                format!(
                    "{}: {} failed checks in a row: {message}",
                    self.watch.id, self.status.failures
                ),
            );
            alert.error = Some(message.to_owned());
            alert.failures = Some(self.status.failures);
            self.alerts.push(alert);
        }
    }

    fn succeeded(&mut self) {
        if self.status.failing_alerted {
            let alert = self.alert(
                AlertKind::Recovered,
                format!(
                    "{}: checks succeed again after {} failures",
                    self.watch.id, self.status.failures
                ),
            );
            self.alerts.push(alert);
        }
        self.status.failures = 0;
        self.status.failing_alerted = false;
        self.status.last_error = None;
        self.status.blocked = None;
        self.status.last_success = Some(self.now);
    }

    /// Layout monitoring after a page was read: the new layout state, and
    /// at most one layout event (see [`crate::monitor::layout`]). The event is kept
    /// in the change history (as kind `layout`, apart from data changes) and
    /// logged; it becomes an alert only when the watch names notifiers in
    /// `layout.notify`, so a watch that did not ask for layout alerts never
    /// alerts (nor makes `semclip check` exit 1) for one.
    fn layout(
        &mut self,
        previous: &LayoutState,
        page: &WatchPage,
        prepared: &Prepared,
        ev: &Evaluator<'_>,
    ) {
        let watch = self.watch;
        // An unchanged page selects what it selected before.
        let found = if prepared.unchanged || prepared.packed.is_empty() {
            layout::Found::previous(watch, previous)
        } else {
            layout::xpaths_found_on(watch, ev)
        };
        let (state, mut event) = layout::assess(watch, previous, page, &found);
        self.state.layout = serde_json::to_string(&state).ok();
        if let Some(from) = prepared.upgraded_from {
            // Said once: the next check compares with a snapshot of this
            // vocabulary.
            let note = format!(
                "ids changed: the stored version was built under vocabulary {from} and is \
                 compared under {} (rows keyed by the column that names them); this check \
                 reports numeric updates only, and clips or thresholds naming rows by an old \
                 key may need their XPath updated",
                crate::VOCABULARY_VERSION
            );
            tracing::info!(watch = %watch.id, from, to = crate::VOCABULARY_VERSION, "vocabulary upgraded: ids changed");
            match &mut event {
                Some(e) => e.summary = format!("{}; {note}", e.summary),
                None => {
                    event = Some(crate::store::LayoutEvent {
                        drift: 0.0,
                        max_drift: watch.layout.max_drift,
                        against: "previous page".to_owned(),
                        lost: Vec::new(),
                        lost_thresholds: Vec::new(),
                        template: None,
                        moved: Vec::new(),
                        dom_drift: 0.0,
                        dom_against: String::new(),
                        summary: note,
                    })
                }
            }
        }
        if let Some(event) = event {
            let summary = event.summary.clone();
            tracing::warn!(watch = %watch.id, what = %summary, dom_drift = event.dom_drift, "layout changed");
            if !watch.layout.notify.is_empty() {
                let mut alert = self.alert(
                    AlertKind::LayoutChanged,
                    format!(
                        "{}: layout changed: {summary}",
                        watch.title.as_deref().unwrap_or(&watch.id)
                    ),
                );
                alert.error = Some(summary.clone());
                self.alerts.push(alert);
            }
            self.layout_event = Some(summary);
            self.state.layout_event = Some(event);
        }
    }

    /// A 304 (or nothing new): thresholds are judged on the stored snapshot
    /// only if their settings changed since the last evaluation.
    fn evaluate_stored(&mut self, store: &Store, hash: Option<&str>) -> Result<(), StoreError> {
        let Some(hash) = hash else { return Ok(()) };
        let fp = fingerprint::evaluation(hash, &self.watch.thresholds);
        if self.status.evaluated.as_deref() == Some(fp.as_str()) {
            return Ok(());
        }
        if let Some(previous) = store.current_hierarchy(&self.watch.id)? {
            self.evaluate(&Evaluator::new(&previous.hierarchy));
        }
        self.status.evaluated = Some(fp);
        Ok(())
    }

    fn page(&mut self, ev: &Evaluator<'_>, prepared: &Prepared, first: bool) -> PageOutcome {
        let fp = fingerprint::evaluation(&prepared.hash, &self.watch.thresholds);
        let outcome = if prepared.unchanged {
            PageOutcome::Unchanged
        } else if first {
            PageOutcome::First
        } else {
            PageOutcome::Changed(prepared.changes.clone())
        };
        if !prepared.changes.is_empty() && self.watch.on_change.is_some() {
            let n = prepared.changes.len();
            let mut alert = self.alert(
                AlertKind::Changed,
                format!(
                    "{}: {n} change{}",
                    self.watch.title.as_deref().unwrap_or(&self.watch.id),
                    if n == 1 { "" } else { "s" }
                ),
            );
            alert.changes = prepared.changes.iter().map(change_line).collect();
            self.alerts.push(alert);
        }
        if self.status.evaluated.as_deref() != Some(fp.as_str())
            && !self.watch.thresholds.is_empty()
        {
            self.evaluate(ev);
        }
        self.status.evaluated = Some(fp);
        outcome
    }

    /// Judges every threshold on the hierarchy of `ev`.
    fn evaluate(&mut self, ev: &Evaluator<'_>) {
        let watch = self.watch;
        if watch.thresholds.is_empty() {
            return;
        }
        let stored = &self.stored_thresholds;
        for t in &watch.thresholds {
            let before = stored.iter().find(|r| r.name == t.name);
            let reading = threshold::read_on(ev, &t.xpath).unwrap_or_else(|e| Reading::Lost {
                reason: error_chain(&e),
            });
            let bounds = Bounds::of(t);
            let previous = before.map(|r| r.state);
            let previous_value = before.and_then(|r| r.value);
            let j = threshold::judge(&bounds, previous, previous_value, &reading);
            let (value, node, context) = match &reading {
                Reading::Value {
                    value,
                    node,
                    context,
                } => (Some(*value), node.clone(), context.clone()),
                Reading::Lost { .. } => (None, None, String::new()),
            };
            if let Some(v) = value {
                self.state.values.push((t.name.clone(), v));
            }
            let since = match before {
                Some(r) if Some(j.level) == previous => r.since,
                _ => self.now,
            };
            self.state.thresholds.push(ThresholdRecord {
                name: t.name.clone(),
                state: j.level,
                value: value.or(previous_value),
                node: node.clone().or_else(|| before.and_then(|r| r.node.clone())),
                since,
            });
            let Some(transition) = j.transition else {
                continue;
            };
            if transition == Transition::Returned && !t.on_return {
                continue;
            }
            let shown = value.map(threshold::fmt).unwrap_or_default();
            // Titles are read by people: the short context; the alert's
            // `threshold.context` keeps the whole path.
            let at = crate::diff::display_context_joined(&context);
            let (kind, summary) = match (&transition, &reading) {
                (Transition::Crossed, _) => (
                    AlertKind::ThresholdCrossed,
                    format!("{}: {shown} is {} ({at})", t.name, j.bound),
                ),
                (Transition::Returned, _) => (
                    AlertKind::ThresholdReturned,
                    format!(
                        "{}: {shown} is back within bounds ({}) ({at})",
                        t.name,
                        threshold::describe(&bounds)
                    ),
                ),
                (Transition::Lost, Reading::Lost { reason }) => (
                    AlertKind::SelectorLost,
                    format!("{}: selector lost: {reason}", t.name),
                ),
                (Transition::Lost, _) => (
                    AlertKind::SelectorLost,
                    format!("{}: selector lost", t.name),
                ),
                (Transition::Found, _) => (
                    AlertKind::SelectorFound,
                    format!("{}: selector found again, value {shown} ({at})", t.name),
                ),
            };
            let mut alert = self.alert(kind, summary);
            alert.threshold = Some(ThresholdAlert {
                name: t.name.clone(),
                xpath: t.xpath.clone(),
                value,
                previous: previous_value,
                bound: j.bound.clone(),
                context: context.clone(),
                node,
            });
            self.alerts.push(alert);
        }
    }
}

/// A change in data terms, for notifications.
pub fn change_line(c: &Change) -> ChangeLine {
    ChangeLine {
        kind: c.kind.name().to_owned(),
        path: c
            .context
            .iter()
            .filter(|l| !l.is_empty())
            .cloned()
            .collect::<Vec<_>>()
            .join(" / "),
        text: c.line(),
    }
}

/// Whether a report's page outcome is a failure.
pub fn failed(report: &CheckReport) -> bool {
    matches!(
        report.outcome,
        PageOutcome::Failed(_) | PageOutcome::Blocked(_)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_error_names_its_watch_and_keeps_its_cause_as_source() {
        let time = SystemTime::UNIX_EPOCH;
        let error = CheckError::store("prices", StoreError::TimeOutOfRange { time });
        assert_eq!(error.watch(), "prices");
        assert_eq!(
            error.to_string(),
            "cannot record the check of watch `prices`"
        );
        assert_eq!(
            format!("{:#}", anyhow::Error::from(error)),
            format!(
                "cannot record the check of watch `prices`: time {time:?} is out of the snapshot store's range"
            ),
            "the chain names each cause once"
        );
    }

    #[test]
    fn outcome_kinds_are_one_word_each() {
        let kinds: Vec<&str> = [
            PageOutcome::NotModified,
            PageOutcome::Unchanged,
            PageOutcome::First,
            PageOutcome::Changed(Vec::new()),
            PageOutcome::Failed("boom".into()),
        ]
        .iter()
        .map(PageOutcome::kind)
        .collect();
        assert_eq!(
            kinds,
            ["not_modified", "unchanged", "first", "changed", "failed"]
        );
    }

    #[test]
    fn a_refused_page_backs_off_doubling_up_to_the_cap_never_before_its_run() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let minute = Duration::from_secs(60);
        let next = now + minute;
        let delays: Vec<Duration> = (1..=4)
            .map(|f| {
                backed_off(now, next, f)
                    .duration_since(now)
                    .unwrap_or_default()
            })
            .collect();
        assert_eq!(delays, [minute, minute * 2, minute * 4, minute * 8]);
        assert_eq!(backed_off(now, next, 60), now + MAX_BACKOFF);
        // A schedule longer than the cap is never shortened.
        let daily = now + Duration::from_secs(86_400);
        assert_eq!(backed_off(now, daily, 9), daily);
        // A run already due waits at least a second.
        assert_eq!(backed_off(now, now, 1), now + Duration::from_secs(1));
    }
}
