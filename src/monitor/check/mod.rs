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
//!
//! - [`run`]: the check in order, from the stored state to the report,
//!   with the login and second pass of a session logged out;
//! - [`engine`]: what every check shares ([`Engine`]);
//! - [`fetch`]: getting the page (HTTP, browser, the session's jar, the
//!   login);
//! - [`judge`]: judging the page (failures and blocks, changes,
//!   thresholds, layout);
//! - [`record`]: recording the check (the page half on a worker thread,
//!   the record, the outbox rows);
//! - [`report`]: what a check gives back ([`CheckReport`]) and why it
//!   could not be recorded ([`CheckError`]);
//! - [`hosts`]: the replicas' shared host slots and request spacing.

mod engine;
mod fetch;
mod hosts;
mod judge;
mod record;
mod report;
mod run;

pub use engine::Engine;
pub use judge::{MAX_BACKOFF, alert_id, backed_off, change_line};
pub use report::{CheckError, CheckReport, PageOutcome, failed};
pub use run::{check, check_from};
