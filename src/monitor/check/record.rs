//! Recording a check: what a fetched check carries to its worker thread
//! ([`Pending`]), the page half of a check ([`judge_and_record`]: judged,
//! then recorded in one store transaction, or left to the pool to group
//! with other checks' records), and the outbox rows of its alerts.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::config::Watch;
use crate::error_chain;
use crate::monitor::compare::Prepared;
use crate::notify::{Alert, AlertKind};
use crate::page::budget::PageLimits;
use crate::page::fetch::Fetched;
use crate::page::source::SourceError;
use crate::store::{
    CheckRecord, Queued, Retention, Store, StoreError, ThresholdRecord, WatchStatus,
};

use super::engine::Engine;
use super::judge::{LoggedOutCheck, PageSettings, Work};
use super::report::{CheckError, CheckReport, PageOutcome};

/// A fetched check waiting for its blocking part, on a worker thread
/// ([`judge_and_record`]).
pub(super) struct Pending {
    pub(super) watch: Arc<Watch>,
    pub(super) now: SystemTime,
    /// The run after this one, as the schedule has it.
    pub(super) next_run: Option<SystemTime>,
    pub(super) dry_run: bool,
    pub(super) status: WatchStatus,
    /// The content hash of the stored snapshot.
    pub(super) current_hash: Option<String>,
    /// The stored layout state (JSON).
    pub(super) layout: Option<String>,
    /// The thresholds' stored states.
    pub(super) thresholds: Vec<ThresholdRecord>,
    pub(super) fetched: Result<Fetched, SourceError>,
    pub(super) fetch_time: Duration,
    pub(super) retention: Retention,
    pub(super) limits: PageLimits,
    /// The session's logged-out XPaths, when it has a login.
    pub(super) logged_out: Option<LoggedOutCheck>,
}

/// What judging a fetched page came to.
pub(super) enum Judged {
    /// The check, recorded (unless a dry run).
    Report(Box<CheckReport>),
    /// The check, judged, its record still to be written
    /// ([`record_unrecorded`]).
    Unrecorded(Box<Unrecorded>),
    /// The page shows its session logged out: nothing judged or
    /// recorded; the session logs in and the page is fetched again.
    LoggedOut,
}

/// The page half of a check, on a worker thread with a store of the
/// pool: judges the fetched page and, unless a dry run, records the check:
/// here when `record_here`, otherwise the record is made ready and
/// left to the caller ([`Judged::Unrecorded`]).
pub(super) fn judge_and_record(
    pending: Pending,
    store: &mut Store,
    record_here: bool,
) -> Result<Judged, StoreError> {
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
    } = pending;
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

/// A judged check whose record the caller writes.
pub(super) struct Unrecorded {
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
/// recorded instead, as [`judge_and_record`] does.
///
/// [`StorePool::record`]: crate::store::pool::StorePool::record
pub(super) async fn record_unrecorded(
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

impl Work<'_> {
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
}
