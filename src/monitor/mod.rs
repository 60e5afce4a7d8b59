//! One check of one watch: the page in, changes, threshold alarms and
//! alerts (queued in the outbox) out, recorded in one store transaction.
//!
//! - [`backtest`]: a threshold, clip or ignore list replayed over the
//!   stored versions;
//! - [`check`]: the orchestration of one check and its report, one job
//!   per file: the engine, getting the page (HTTP, browser, login),
//!   judging it (failures and blocks, changes, thresholds, layout),
//!   recording it, and the replicas' shared host slots;
//! - [`watch_page`]: the page a watch compares (its extract clips,
//!   `monitor: data`, a template's regions) and what layout monitoring
//!   measures on it;
//! - [`layout`]: the layout events raised when what the watch's XPaths
//!   address moves or vanishes;
//! - [`compare`]: the hash compare against the stored snapshot, and on a
//!   difference the semantic diff and the new snapshot;
//! - [`fingerprint`]: the settings a check's result depends on, hashed, so
//!   that work already done is not done again;
//! - [`threshold`]: numbers read by XPath, bounds, and the alarm state with
//!   hysteresis;
//! - [`series`]: which numbers of a page keep a history (values over
//!   time);
//! - [`session`]: the sessions' cookie jars shared by the checks, read
//!   from and written to the store, and their login turns;
//! - [`workers`]: the threads, one per CPU, that run the checks' blocking
//!   parts.
//!
//! The daemon schedules checks and `semclip check` runs them once; neither
//! lives here.

pub mod backtest;
pub mod check;
pub mod compare;
pub mod fingerprint;
pub mod layout;
pub mod series;
pub mod session;
pub mod threshold;
pub mod watch_page;
pub mod workers;
