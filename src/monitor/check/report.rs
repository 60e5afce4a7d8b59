//! What a check gives back: its report, what happened to the page, and
//! why a check could not even be recorded.

use std::time::{Duration, SystemTime};

use crate::diff::Change;
use crate::monitor::threshold::Level;
use crate::monitor::workers::WorkerPanicked;
use crate::notify::Alert;
use crate::store::pool::PoolError;

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
    pub(super) fn store(watch: &str, source: impl Into<PoolError>) -> CheckError {
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
    use crate::store::StoreError;

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
}
