//! What the status pages show, gathered from the store and the watches by
//! the handlers and handed to [`super::pages`] to render. Plain data: no
//! store access, no HTML.

use std::time::SystemTime;

use crate::store::{Point, WatchStatus};

/// The state of a watch as the overview shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// Never checked yet.
    Pending,
    /// The last check succeeded.
    Ok,
    /// The last check failed (`failures` in a row).
    Failing,
    /// The last check failed as *blocked*: a bot challenge, a rate limit
    /// or a page matching the watch's `blocked` XPaths answered instead of
    /// the page (the store keeps the reason).
    Blocked,
    /// In the store but no longer in the watch files.
    Removed,
}

impl Health {
    /// The health of a watch from its status; `configured` is whether the
    /// watch files still hold it.
    pub fn of(configured: bool, status: Option<&WatchStatus>) -> Health {
        match status {
            _ if !configured => Health::Removed,
            None => Health::Pending,
            Some(s) if s.last_attempt.is_none() => Health::Pending,
            Some(s) if s.failures > 0 && s.blocked.is_some() => Health::Blocked,
            Some(s) if s.failures > 0 => Health::Failing,
            Some(_) => Health::Ok,
        }
    }

    /// The word for the state, in the API and as the status pages' CSS
    /// class suffix.
    pub fn name(self) -> &'static str {
        match self {
            Health::Pending => "pending",
            Health::Ok => "ok",
            Health::Failing => "failing",
            Health::Blocked => "blocked",
            Health::Removed => "removed",
        }
    }
}

/// One watch in the overview (and at the top of its own page).
#[derive(Debug, Clone, PartialEq)]
pub struct WatchRow {
    /// The watch id (also the path segment of its URLs).
    pub id: String,
    /// Its title, when the watch file gives one.
    pub title: Option<String>,
    /// The watched page.
    pub url: String,
    /// Its state.
    pub health: Health,
    /// The last check (success or failure).
    pub last_check: Option<SystemTime>,
    /// The last semantic change (or the first snapshot).
    pub last_change: Option<SystemTime>,
    /// When it runs next.
    pub next_run: Option<SystemTime>,
    /// Consecutive failed checks.
    pub failures: u32,
    /// The last error, while failing.
    pub last_error: Option<String>,
    /// Thresholds currently in alarm.
    pub alarms: usize,
    /// Thresholds defined.
    pub thresholds: usize,
}

/// One named clip on a watch page.
#[derive(Debug, Clone, PartialEq)]
pub struct ClipView {
    /// The clip name.
    pub name: String,
    /// Its description, when given.
    pub description: Option<String>,
    /// The XPath that selects it.
    pub xpath: String,
    /// The clip rendered by its HTML stylesheet, already sanitized: safe to
    /// insert as is. `None` when it could not be rendered (see `error`).
    pub html: Option<String>,
    /// Why it could not be rendered (no snapshot yet, selects nothing, ...).
    pub error: Option<String>,
}

/// One semantic change on a watch page.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeView {
    /// The stored event's id (its change view is `/status/{watch}/changes/{id}`).
    pub id: i64,
    /// When it was found.
    pub at: SystemTime,
    /// `update`, `insert`, `delete`, `move`, `first`, ...
    pub kind: String,
    /// The change in data terms, one line (as `semclip diff` prints it).
    pub line: String,
}

/// One threshold on a watch page, with its value history.
#[derive(Debug, Clone, PartialEq)]
pub struct ThresholdView {
    /// The threshold name.
    pub name: String,
    /// Its XPath.
    pub xpath: String,
    /// The bounds in words (`above 300 (hysteresis 1)`).
    pub bounds: String,
    /// `normal`, `alarm`, `lost`, or `unknown` before the first check.
    pub state: String,
    /// The last value read.
    pub value: Option<f64>,
    /// Since when it is in this state.
    pub since: Option<SystemTime>,
    /// Bound lines to draw on the chart (the `above`/`below`/`outside` values).
    pub lines: Vec<f64>,
    /// The value history, oldest first.
    pub history: Vec<(SystemTime, f64)>,
}

/// One number's values over time (a node's series) on a watch page.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesView {
    /// The node's semantic id (its `xpath` label).
    pub node: String,
    /// Its data context on the current version (`Shares / GAZP / Last`);
    /// empty once the node is gone.
    pub label: String,
    /// Its value now; `None` once the node is gone.
    pub value: Option<f64>,
    /// Since when it has held that value (or been gone).
    pub since: SystemTime,
    /// Its newest points, thinned for a sparkline, oldest first.
    pub points: Vec<Point>,
}

/// Everything a watch's own page shows.
#[derive(Debug, Clone, PartialEq)]
pub struct WatchPage {
    /// The summary, as in the overview.
    pub row: WatchRow,
    /// Its clips, in name order.
    pub clips: Vec<ClipView>,
    /// Its recent semantic changes, newest first (data only).
    pub changes: Vec<ChangeView>,
    /// Its recent layout events, newest first: kept apart from the data
    /// changes (see [`crate::monitor::layout`]).
    pub layout: Vec<ChangeView>,
    /// Its thresholds, in file order.
    pub thresholds: Vec<ThresholdView>,
    /// Its series shown: those of nodes still on the page first, each
    /// group in the order of their ids.
    pub values: Vec<SeriesView>,
    /// How many series the watch has (more than `values` when the page
    /// shows only the first).
    pub series_total: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blocked_failure_is_its_own_state_and_a_success_clears_it() {
        let status = |failures: u32, blocked: Option<&str>| WatchStatus {
            watch: "w".into(),
            last_attempt: Some(SystemTime::UNIX_EPOCH),
            failures,
            blocked: blocked.map(str::to_owned),
            ..WatchStatus::default()
        };
        let of = |s: &WatchStatus| Health::of(true, Some(s)).name();
        assert_eq!(of(&status(1, Some("rate limited (HTTP 429)"))), "blocked");
        assert_eq!(of(&status(2, None)), "failing");
        // A reason left over without a failure is not a state.
        assert_eq!(of(&status(0, Some("rate limited (HTTP 429)"))), "ok");
        assert_eq!(
            Health::of(false, Some(&status(1, Some("x")))).name(),
            "removed"
        );
    }
}
