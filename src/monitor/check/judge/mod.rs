//! Judging a fetched page: a failure or a block, a 304, or a page to
//! build within its budget, compare with the stored snapshot, and judge:
//!
//! - [`blocked`]: a page showing its session logged out, or a challenge
//!   served as a page;
//! - [`status`]: failures, recoveries and the alerts they raise;
//! - [`changes`]: the page's outcome and its `changed` alert;
//! - [`thresholds`]: each threshold's reading, level and alerts;
//! - [`layout`]: the layout state and its event.
//!
//! A page refused for its size backs off ([`backed_off`]).

mod blocked;
mod changes;
mod layout;
mod status;
mod thresholds;

pub(super) use blocked::LoggedOutCheck;
pub use changes::change_line;
pub use status::alert_id;

use std::time::{Duration, SystemTime};

use crate::config::Watch;
use crate::error_chain;
use crate::monitor::compare::{self, Prepared};
use crate::monitor::fingerprint;
use crate::monitor::layout::LayoutState;
use crate::monitor::watch_page::{self, WatchPage};
use crate::notify::Alert;
use crate::page::budget::{Budget, Exceeded, PageLimits};
use crate::page::fetch::Fetched;
use crate::page::source::{RawPage, SourceError};
use crate::store::{CheckState, Store, StoreError, ThresholdRecord, WatchStatus};
use crate::template::cluster::TemplateSet;
use crate::xpath::native::Evaluator;

use super::report::PageOutcome;

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

/// The stored layout state of `watch` (read with its status, see
/// `run::stored_state`); a missing or unreadable one (a store written by an
/// older version, a damaged row) starts afresh.
fn previous_layout(watch: &str, stored: Option<&str>) -> LayoutState {
    match stored {
        Some(json) => serde_json::from_str(json).unwrap_or_else(|error| {
            tracing::warn!(watch, error = %crate::ErrorChain(&error), "unreadable layout state, starting afresh");
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
                tracing::warn!(watch, template = name, error = %crate::ErrorChain(&error), "unreadable template set");
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
            tracing::warn!(watch, template = name, error = %crate::ErrorChain(&error), "cannot read the template set");
            None
        }
    }
}

/// One check's state while it is worked out.
pub(super) struct Work<'a> {
    pub(super) watch: &'a Watch,
    pub(super) now: SystemTime,
    pub(super) status: WatchStatus,
    pub(super) alerts: Vec<Alert>,
    pub(super) state: CheckState,
    /// The summary of the layout event raised, if any.
    pub(super) layout_event: Option<String>,
    /// The session's logged-out XPaths, when it has a login.
    pub(super) logged_out: Option<&'a LoggedOutCheck>,
    /// The page showed the session logged out before any login.
    pub(super) needs_login: bool,
    /// The thresholds' stored states before this check (read with the
    /// status, `run::stored_state`).
    pub(super) stored_thresholds: Vec<ThresholdRecord>,
    /// The history window of each threshold with `within` (name, lowest
    /// and highest value), read before judging ([`Work::load_windows`]).
    pub(super) windows: Vec<(String, Option<(f64, f64)>)>,
}

/// What judging a fetched page needs besides the page.
#[derive(Clone, Copy)]
pub(super) struct PageSettings<'p> {
    /// The content hash of the stored snapshot.
    pub(super) current_hash: Option<&'p str>,
    /// The stored layout state (JSON).
    pub(super) layout: Option<&'p str>,
    pub(super) limits: PageLimits,
    /// The run after this one, as the schedule has it.
    pub(super) next_run: Option<SystemTime>,
    pub(super) alert_after: u32,
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
    pub(super) fn new(watch: &'a Watch, now: SystemTime, status: WatchStatus) -> Work<'a> {
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
            windows: Vec::new(),
        }
    }

    /// What the fetch came to: a failure, a 304 (thresholds judged on
    /// the stored snapshot if their settings changed), or a page to build,
    /// compare and judge ([`Work::fetched_page`]).
    pub(super) fn judge(
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
        if let Some(turned_away) = self.turned_away(&page.hierarchy, settings.alert_after) {
            return Ok(turned_away);
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
        self.load_windows(store)?;
        let outcome = self.page(&ev, &prepared, settings.current_hash.is_none());
        if !prepared.unchanged {
            // A new version: its numbers extend their series.
            self.state.series = Some(crate::monitor::series::values(&ev, self.watch));
        }
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
