//! One check in order: the stored state it starts from, the page
//! ([`super::fetch`]), then on a worker thread the page judged and the
//! check recorded ([`super::record`]), and when the page shows its session
//! logged out, the login and a second pass.

use std::sync::Arc;
use std::time::SystemTime;

use tracing::Instrument;

use crate::config::Watch;
use crate::page::source::SourceError;
use crate::store::{CheckStart, ThresholdRecord, WatchStatus};

use super::engine::Engine;
use super::fetch::{fetch_page, log_in, page_request};
use super::judge::LoggedOutCheck;
use super::record::{Judged, Pending, judge_and_record, record_unrecorded};
use super::report::{CheckError, CheckReport};

/// Runs one check of `watch` at `now`, in a `check` span carrying the watch
/// id. `next_run` is stored as the watch's next run. A dry run writes
/// nothing and queues nothing.
///
/// The steps: read the stored state, fetch, then on a worker thread
/// build the hierarchy, compare it, judge thresholds and layout, raise
/// alerts and record it all ([`judge_and_record`]: `Work::judge`,
/// `Work::record`).
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
/// read with the watch's claim ([`Replicas::claim_and_start`]; `None`:
/// read here, as on SQLite, which has no claims).
///
/// [`Replicas::claim_and_start`]: crate::store::replicas::Replicas::claim_and_start
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

/// [`check`] and [`check_from`] inside their span: at most two passes
/// of fetch, judge and record, the second after a login when the first
/// page showed its session logged out.
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
            None => {
                fetch_page(
                    engine,
                    watch,
                    session.as_deref(),
                    &mut request,
                    now,
                    dry_run,
                )
                .await
            }
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
        // With replicas (PostgreSQL) the record goes to their grouped
        // writer after the worker is done, with other checks'
        // (ReplicaPool::record); without (SQLite) it is written here, on
        // the worker's store.
        let record_here = stores.replicas().is_none();
        let recorded = engine
            .workers
            .run(move || {
                span.in_scope(|| stores.with(|store| judge_and_record(pending, store, record_here)))
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
