//! The daemon's state in the store: each watch's status and schedule, the
//! state and value history of its thresholds, and the notification outbox.
//!
//! A check ends with one call, [`Store::record_check`], which writes the
//! snapshot (if the data changed), the watch's new status, its threshold
//! states and values, and the alerts to deliver, in one transaction: a crash
//! leaves either the state before the check or the state after it, never a
//! stored change without its alert. (The daemon makes the record ready
//! first, [`CheckRecord`], and on PostgreSQL writes it in one transaction
//! with the records of other checks that finished at the same moment:
//! [`super::pool::StorePool::record`].)
//!
//! The outbox holds one row per alert and notifier. A row is written before
//! any delivery is tried and deleted only once delivery succeeded; a failed
//! attempt sets the next attempt time, and a row that could not be delivered
//! within the caller's give-up time stays behind as `failed`, visible in
//! [`Store::outbox`].

use std::fmt;
use std::str::FromStr;
use std::sync::LazyLock;
use std::time::{Duration, SystemTime};

use super::core::{
    CheckWrite, CorruptionCause, Recorded, Retention, SnapshotBody, Store, StoreError, change_rows,
    from_millis, to_millis, watch_error, write_check,
};
use super::event::LayoutEvent;
use crate::diff::Change;
use crate::store::sql::{Arg, Db, DbError, FromValue, Row, args};

/// What a check of a watch starts from ([`Store::check_start`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CheckStart {
    /// The watch's status, if it has one.
    pub status: Option<WatchStatus>,
    /// The content hash of its current snapshot, if it has one.
    pub current_hash: Option<String>,
    /// Its layout state (JSON), if it has one.
    pub layout: Option<String>,
    /// Its thresholds' stored states, by name (as [`Store::thresholds`]).
    pub thresholds: Vec<ThresholdRecord>,
}

/// The read of what a check of `?1` starts from ([`Store::check_start`]),
/// with `condition` (SQL after `WHERE`, or empty) on the whole read.
fn check_start_sql(condition: &str) -> String {
    let columns = STATUS_COLUMNS.replace(", ", ", s.");
    format!(
        "SELECT s.{columns}, k.hash, k.layout, s.watch IS NOT NULL,
                t.name, t.state, t.value, t.node, t.since
         FROM (SELECT (SELECT hash FROM snapshot WHERE watch = ?1
                       ORDER BY id DESC LIMIT 1) AS hash,
                      (SELECT state FROM layout_state WHERE watch = ?1) AS layout) k
         LEFT JOIN watch_status s ON s.watch = ?1
         LEFT JOIN threshold_state t ON t.watch = ?1
         {condition}
         ORDER BY t.name"
    )
}

/// [`Store::check_start`]'s read.
static CHECK_START: LazyLock<String> = LazyLock::new(|| check_start_sql(""));

/// The same read, of nothing unless owner `?2` holds the lease on `?1`
/// that ends at `?3` (PostgreSQL: [`Replicas::claim_and_start`]).
///
/// [`Replicas::claim_and_start`]: crate::store::replicas::Replicas::claim_and_start
pub(super) static CHECK_START_IF_CLAIMED: LazyLock<String> = LazyLock::new(|| {
    check_start_sql(
        "WHERE EXISTS (SELECT 1 FROM watch_claim c
                       WHERE c.watch = ?1 AND c.owner = ?2 AND c.lease_until = ?3)",
    )
});

/// What the rows of [`CHECK_START`] say; `None` without a row.
pub(super) fn check_start_of(
    watch: &str,
    rows: Vec<Row>,
) -> Result<Option<CheckStart>, StoreError> {
    let err = |source| watch_error(watch, "read the status of", source);
    // The columns after the status's own: counted, not written out, so
    // a status column added later cannot shift them unnoticed.
    let n = STATUS_COLUMNS.split(',').count();
    type Stored = (String, String, Option<f64>, Option<String>, i64);
    let read = |row: &mut Row| -> Result<Option<Stored>, DbError> {
        let Some(name) = row.get::<Option<String>>(n + 3)? else {
            return Ok(None);
        };
        Ok(Some((
            name,
            row.get(n + 4)?,
            row.get(n + 5)?,
            row.get(n + 6)?,
            row.get(n + 7)?,
        )))
    };
    let mut thresholds = Vec::new();
    let mut first_row = None;
    for mut row in rows {
        if let Some((name, state, value, node, since)) = read(&mut row).map_err(err)? {
            thresholds.push(threshold_record(watch, name, &state, value, node, since)?);
        }
        first_row.get_or_insert(row);
    }
    let Some(mut row) = first_row else {
        return Ok(None);
    };
    let found: bool = row.get(n + 2).map_err(err)?;
    let current_hash = row.get(n).map_err(err)?;
    let layout = row.get(n + 1).map_err(err)?;
    let status = if found {
        Some(decode_status(status_row(row).map_err(err)?)?)
    } else {
        None
    };
    Ok(Some(CheckStart {
        status,
        current_hash,
        layout,
        thresholds,
    }))
}

/// A threshold's stored state, decoded.
fn threshold_record(
    watch: &str,
    name: String,
    state: &str,
    value: Option<f64>,
    node: Option<String>,
    since: i64,
) -> Result<ThresholdRecord, StoreError> {
    let corrupt = |source: CorruptionCause| StoreError::CorruptWatch {
        watch: watch.to_owned(),
        source,
    };
    let since = from_millis(since).map_err(corrupt)?;
    let state = state.parse::<Level>().map_err(|e| corrupt(Box::new(e)))?;
    Ok(ThresholdRecord {
        name,
        state,
        value,
        node,
        since,
    })
}

/// What the daemon knows about one watch between checks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WatchStatus {
    /// The watch.
    pub watch: String,
    /// When it is due next (kept here so a restart neither loses nor
    /// repeats a run).
    pub next_run: Option<SystemTime>,
    /// The page's `ETag` from the last successful fetch.
    pub etag: Option<String>,
    /// The page's `Last-Modified` from the last successful fetch.
    pub last_modified: Option<String>,
    /// When the last check started.
    pub last_attempt: Option<SystemTime>,
    /// When the last check succeeded.
    pub last_success: Option<SystemTime>,
    /// Consecutive failed checks (0 after a success).
    pub failures: u32,
    /// Whether the "failing" alert has been raised for the current run of
    /// failures (so it is raised once, and "recovered" follows it).
    pub failing_alerted: bool,
    /// The last check's error, if it failed.
    pub last_error: Option<String>,
    /// A fingerprint of what thresholds were last evaluated on (the content
    /// hash and the threshold settings): when it matches, an unchanged page
    /// needs no evaluation.
    pub evaluated: Option<String>,
    /// The hash of the page body (with the settings it was built with)
    /// that the current snapshot was built from: the same bytes again
    /// are not parsed.
    pub body_hash: Option<String>,
    /// The hash of the last page body refused for going over the page
    /// budget (see [`crate::page::budget`]): the same bytes again are refused
    /// without being parsed.
    pub rejected_body: Option<String>,
    /// Why the last check was *blocked* (a bot challenge, a rate limit, a
    /// page matching the watch's `blocked` XPaths: see
    /// [`crate::page::blocked`]), when it was; `None` after any other
    /// outcome. The full message is `last_error`.
    pub blocked: Option<String>,
}

/// The state of a threshold. Stored as its name ([`Level::as_str`]), the
/// text the `threshold_state.state` column has always held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Level {
    /// Within bounds.
    Normal,
    /// Beyond a bound.
    Alarm,
    /// The XPath selects no number.
    Lost,
}

impl Level {
    /// The stored name: `normal`, `alarm`, `lost`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Normal => "normal",
            Level::Alarm => "alarm",
            Level::Lost => "lost",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A stored threshold state that is none of `normal`, `alarm`, `lost`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown threshold state `{0}` (expected normal, alarm or lost)")]
pub struct UnknownLevel(pub String);

impl FromStr for Level {
    type Err = UnknownLevel;

    fn from_str(s: &str) -> Result<Level, UnknownLevel> {
        match s {
            "normal" => Ok(Level::Normal),
            "alarm" => Ok(Level::Alarm),
            "lost" => Ok(Level::Lost),
            other => Err(UnknownLevel(other.to_owned())),
        }
    }
}

/// A level compares equal to its stored name.
impl PartialEq<&str> for Level {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// The state of one threshold, as the store keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct ThresholdRecord {
    /// The threshold's name (unique within its watch).
    pub name: String,
    /// Normal, in alarm, or lost (the XPath selected nothing).
    pub state: Level,
    /// The last value read, if any.
    pub value: Option<f64>,
    /// The `xpath` id of the node the value came from.
    pub node: Option<String>,
    /// When the threshold entered `state`.
    pub since: SystemTime,
}

/// An alert to queue: its JSON body for one notifier.
#[derive(Debug, Clone, PartialEq)]
pub struct Queued {
    /// The alert's id (unique per notifier).
    pub alert_id: String,
    /// The notifier's name.
    pub notifier: String,
    /// The alert, as JSON.
    pub body: String,
    /// For digest delivery: the interval (at most one message per interval
    /// per watch and notifier). `None` delivers at once.
    pub digest: Option<Duration>,
}

/// Everything a check writes besides the snapshot.
#[derive(Debug, Clone, Default)]
pub struct CheckState {
    /// The watch's new status.
    pub status: WatchStatus,
    /// Threshold states to write (insert or replace).
    pub thresholds: Vec<ThresholdRecord>,
    /// Values to append to the history: (threshold name, value).
    pub values: Vec<(String, f64)>,
    /// Every numeric node in the scope of the watch's clips and
    /// thresholds with its value, when the check built a new version of
    /// the page: the store writes the points that differ from each
    /// series' last (see [`super::series`]). `None`: nothing to compare.
    pub series: Option<Vec<super::NodeValue>>,
    /// Alerts to queue.
    pub alerts: Vec<Queued>,
    /// The watch's new layout state (JSON), when the page was read.
    pub layout: Option<String>,
    /// A layout event to record as a change event of its own, outside
    /// any snapshot.
    pub layout_event: Option<LayoutEvent>,
}

/// Where an outbox row stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutboxState {
    /// Waiting for (another) delivery attempt.
    Pending,
    /// Given up on; kept as a record.
    Failed,
}

/// One row of the outbox.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxEntry {
    /// The row's id.
    pub id: i64,
    /// The alert's id.
    pub alert_id: String,
    /// The watch that raised it.
    pub watch: String,
    /// The notifier to deliver through.
    pub notifier: String,
    /// When it was queued.
    pub created_at: SystemTime,
    /// When the next attempt is due.
    pub next_attempt: SystemTime,
    /// Attempts made so far.
    pub attempts: u32,
    /// Digest interval, if delivered as a digest.
    pub digest: Option<Duration>,
    /// Pending or failed.
    pub state: OutboxState,
    /// The last attempt's error.
    pub last_error: Option<String>,
    /// The alert, as JSON.
    pub body: String,
}

/// The snapshot part of a check: the new content hash, the hierarchy XML
/// (unused when the hash is unchanged) and the change events.
#[derive(Debug, Clone, Copy)]
pub struct SnapshotPart<'a> {
    /// The content hash.
    pub hash: &'a str,
    /// The hierarchy (may be empty when `hash` is the current hash).
    pub body: SnapshotBody<'a>,
    /// The semantic changes, stored as its change events.
    pub changes: &'a [Change],
    /// Retention applied when a snapshot is stored.
    pub retention: &'a Retention,
}

/// A check's record made ready to write ([`CheckRecord::new`]): checked,
/// compressed and serialised, owning all it writes, so that the write can
/// happen later and elsewhere (with other checks' records: see
/// [`super::pool::StorePool::record`]).
#[derive(Debug, Clone)]
pub struct CheckRecord {
    pub(super) watch: String,
    pub(super) at_ms: i64,
    pub(super) snapshot: Option<SnapshotRecord>,
    pub(super) state: CheckState,
    /// The layout event, as JSON.
    pub(super) layout_event: Option<String>,
    /// Each threshold state's `since`, in ms.
    pub(super) since_ms: Vec<i64>,
    /// The status's next run, in ms.
    pub(super) next_run_ms: Option<i64>,
}

/// The snapshot part of a [`CheckRecord`].
#[derive(Debug, Clone)]
pub(super) struct SnapshotRecord {
    pub(super) hash: String,
    /// The hierarchy, compressed (not looked at when the hash is unchanged).
    pub(super) compressed: Vec<u8>,
    pub(super) format: super::core::SnapshotFormat,
    /// Its uncompressed length.
    pub(super) size: usize,
    /// (kind, JSON body) of each change event.
    pub(super) events: Vec<(&'static str, String)>,
    pub(super) retention: Retention,
}

impl CheckRecord {
    /// The record of one check of `watch` at `at` (see
    /// [`Store::record_check`]): refused as that would refuse it (a
    /// snapshot over the store's limit, a time out of range, bad
    /// retention), without a connection.
    pub fn new(
        watch: &str,
        at: SystemTime,
        snapshot: Option<SnapshotPart<'_>>,
        state: CheckState,
    ) -> Result<CheckRecord, StoreError> {
        let at_ms = to_millis(at)?;
        let snapshot = match snapshot {
            Some(part) => {
                part.retention.validate()?;
                Some(SnapshotRecord {
                    hash: part.hash.to_owned(),
                    compressed: part.body.compressed(watch)?,
                    format: part.body.format(),
                    size: part.body.bytes().len(),
                    events: change_rows(watch, part.changes)?,
                    retention: *part.retention,
                })
            }
            None => None,
        };
        // Serialising a layout event does not fail (no maps, no custom
        // serialisers); were it to, it is refused like a change event.
        let layout_event = state
            .layout_event
            .as_ref()
            .map(LayoutEvent::to_json)
            .transpose()
            .map_err(|_| StoreError::InvalidChange {
                watch: watch.to_owned(),
                index: 0,
            })?;
        let since_ms = state
            .thresholds
            .iter()
            .map(|t| to_millis(t.since))
            .collect::<Result<Vec<_>, _>>()?;
        let next_run_ms = opt_millis(state.status.next_run)?;
        Ok(CheckRecord {
            watch: watch.to_owned(),
            at_ms,
            snapshot,
            state,
            layout_event,
            since_ms,
            next_run_ms,
        })
    }

    /// The watch checked.
    pub fn watch(&self) -> &str {
        &self.watch
    }

    /// The bytes of its compressed snapshot, if it stores one.
    pub fn snapshot_bytes(&self) -> usize {
        self.snapshot.as_ref().map_or(0, |s| s.compressed.len())
    }
}

fn opt_time(ms: Option<i64>) -> Result<Option<SystemTime>, CorruptionCause> {
    ms.map(from_millis).transpose()
}

fn opt_millis(time: Option<SystemTime>) -> Result<Option<i64>, StoreError> {
    time.map(to_millis).transpose()
}

fn millis_of(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

pub(super) const STATUS_COLUMNS: &str = "watch, next_run, etag, last_modified, last_attempt, last_success, \
     failures, failing_alerted, last_error, evaluated, body_hash, rejected_body, blocked";

type StatusRow = (
    String,
    Option<i64>,
    Option<String>,
    Option<String>,
    Option<i64>,
    Option<i64>,
    i64,
    bool,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

fn status_row(mut row: Row) -> Result<StatusRow, DbError> {
    Ok((
        row.get(0)?,
        row.get(1)?,
        row.get(2)?,
        row.get(3)?,
        row.get(4)?,
        row.get(5)?,
        row.get(6)?,
        row.get(7)?,
        row.get(8)?,
        row.get(9)?,
        row.get(10)?,
        row.get(11)?,
        row.get(12)?,
    ))
}

/// Each row read by `read`, stopping at the first error.
fn rows_as<T>(
    rows: Vec<Row>,
    read: impl FnMut(Row) -> Result<T, DbError>,
) -> Result<Vec<T>, DbError> {
    rows.into_iter().map(read).collect()
}

/// The first column of the first row, if there is a row.
fn first<T: FromValue>(row: Option<Row>) -> Result<Option<T>, DbError> {
    row.map(|mut row| row.get(0)).transpose()
}

fn decode_status(row: StatusRow) -> Result<WatchStatus, StoreError> {
    let (
        watch,
        next_run,
        etag,
        last_modified,
        last_attempt,
        last_success,
        failures,
        alerted,
        e,
        ev,
        body,
        rejected,
        blocked,
    ) = row;
    let corrupt = |source| StoreError::CorruptWatch {
        watch: watch.clone(),
        source,
    };
    Ok(WatchStatus {
        next_run: opt_time(next_run).map_err(corrupt)?,
        last_attempt: opt_time(last_attempt).map_err(corrupt)?,
        last_success: opt_time(last_success).map_err(corrupt)?,
        failures: u32::try_from(failures).unwrap_or(u32::MAX),
        failing_alerted: alerted,
        etag,
        last_modified,
        last_error: e,
        evaluated: ev,
        body_hash: body,
        rejected_body: rejected,
        blocked,
        watch,
    })
}

/// The upsert of a watch's status row.
static WRITE_STATUS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO watch_status ({STATUS_COLUMNS})
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
         {STATUS_CONFLICT}"
    )
});

/// What a status written over an existing row replaces: everything.
pub(super) const STATUS_CONFLICT: &str = "ON CONFLICT (watch) DO UPDATE SET
           next_run = excluded.next_run, etag = excluded.etag,
           last_modified = excluded.last_modified, last_attempt = excluded.last_attempt,
           last_success = excluded.last_success, failures = excluded.failures,
           failing_alerted = excluded.failing_alerted, last_error = excluded.last_error,
           evaluated = excluded.evaluated, body_hash = excluded.body_hash,
           rejected_body = excluded.rejected_body, blocked = excluded.blocked";

/// Writes a watch's status (held back in a PostgreSQL transaction, see
/// [`Db::defer`]).
fn write_status(db: Db<'_>, s: &WatchStatus) -> Result<(), StoreError> {
    let next_run = opt_millis(s.next_run)?;
    let last_attempt = opt_millis(s.last_attempt)?;
    let last_success = opt_millis(s.last_success)?;
    db.defer(
        &WRITE_STATUS,
        args![
            &s.watch,
            next_run,
            &s.etag,
            &s.last_modified,
            last_attempt,
            last_success,
            i64::from(s.failures),
            s.failing_alerted,
            &s.last_error,
            &s.evaluated,
            &s.body_hash,
            &s.rejected_body,
            &s.blocked
        ],
    )
    .map_err(|source| watch_error(&s.watch, "write the status of", source))?;
    Ok(())
}

/// Notes `watch`'s next run `next_run_ms` on its claim row, if it has one
/// (PostgreSQL only; SQLite keeps no claims): in the transaction that
/// records its check, releasing the lease too (`release`; the row stays,
/// so the next claim is one update of it), and wherever
/// `watch_status.next_run` is written outside a check (the lease, if any,
/// stays). It stays here, beside the status it copies, rather than in
/// [`crate::store::replicas`]: it is a statement of the transactions that
/// write a status, which are the same on both engines (the claim's
/// reasons are in `replicas/claim.rs`).
pub(super) fn note_next_run(
    db: Db<'_>,
    watch: &str,
    next_run_ms: Option<i64>,
    release: bool,
) -> Result<(), DbError> {
    if let Db::Postgres(..) = db {
        let sql = if release {
            "UPDATE watch_claim SET owner = NULL, lease_until = NULL, next_run = ?2
             WHERE watch = ?1"
        } else {
            "UPDATE watch_claim SET next_run = ?2 WHERE watch = ?1"
        };
        db.defer(sql, args![watch, next_run_ms])?;
    }
    Ok(())
}

/// How a failure to record a check of `watch` reads.
pub(super) fn record_error(watch: &str) -> impl Fn(DbError) -> StoreError + '_ {
    move |source| watch_error(watch, "record a check of", source)
}

/// The writes of [`Store::write_record`], in the transaction `db` (also
/// what [`crate::store::replicas`] writes a record alone with).
pub(super) fn write_record(
    db: Db<'_>,
    record: &CheckRecord,
) -> Result<Option<Recorded>, StoreError> {
    let CheckRecord {
        watch,
        at_ms,
        snapshot,
        state,
        layout_event,
        since_ms,
        next_run_ms,
    } = record;
    let (watch, at_ms) = (watch.as_str(), *at_ms);
    let err = record_error(watch);
    let recorded = match snapshot {
        Some(part) => Some(
            write_check(
                db,
                &CheckWrite {
                    watch,
                    hash: &part.hash,
                    compressed: &part.compressed,
                    format: part.format,
                    size: part.size,
                    at_ms,
                    events: &part.events,
                    retention: &part.retention,
                },
            )
            .map_err(&err)?,
        ),
        None => None,
    };
    write_status(db, &state.status)?;
    note_next_run(db, watch, *next_run_ms, true).map_err(&err)?;
    write_check_state(db, watch, at_ms, state, layout_event.as_deref(), since_ms).map_err(&err)?;
    Ok(recorded)
}

impl Store {
    /// The status of `watch`, or `None` if it has never been scheduled.
    pub fn status(&self, watch: &str) -> Result<Option<WatchStatus>, StoreError> {
        let row = self
            .db()
            .query_opt(
                &format!("SELECT {STATUS_COLUMNS} FROM watch_status WHERE watch = ?1"),
                args![watch],
            )
            .and_then(|row| row.map(status_row).transpose())
            .map_err(|source| watch_error(watch, "read the status of", source))?;
        row.map(decode_status).transpose()
    }

    /// What a check of `watch` starts from, read by one statement: its
    /// status, the content hash of its current snapshot, its layout state
    /// and its thresholds' stored states (one row per threshold, the rest
    /// repeated; one row without a threshold when it has none).
    pub fn check_start(&self, watch: &str) -> Result<CheckStart, StoreError> {
        let err = |source| watch_error(watch, "read the status of", source);
        let rows = self.db().query(&CHECK_START, args![watch]).map_err(err)?;
        check_start_of(watch, rows)?.ok_or_else(|| err(DbError::NoRow))
    }

    /// The status of every watch the store has scheduled, by watch id.
    pub fn statuses(&self) -> Result<Vec<WatchStatus>, StoreError> {
        let rows = self
            .db()
            .query(
                &format!("SELECT {STATUS_COLUMNS} FROM watch_status ORDER BY watch"),
                &[],
            )
            .and_then(|rows| rows_as(rows, status_row))
            .map_err(|source| self.db_error("list watch statuses", source))?;
        rows.into_iter().map(decode_status).collect()
    }

    /// Writes `status` (insert or replace), outside any check: for the
    /// scheduler's next-run times.
    pub fn set_status(&mut self, status: &WatchStatus) -> Result<(), StoreError> {
        let next_run = opt_millis(status.next_run)?;
        let watch = &status.watch;
        let err = |source| watch_error(watch, "write the status of", source);
        self.transaction(err, |db| {
            write_status(db, status)?;
            note_next_run(db, watch, next_run, false).map_err(err)
        })
    }

    /// Asks for `watch` to be checked at `at` (check now): its stored next
    /// run moves there, so the scheduler (with replicas, whichever replica
    /// claims it next) checks it.
    pub fn request_check(&mut self, watch: &str, at: SystemTime) -> Result<(), StoreError> {
        let at_ms = to_millis(at)?;
        let err = |source| watch_error(watch, "request a check of", source);
        self.transaction(err, |db| {
            db.execute(
                "UPDATE watch_status SET next_run = ?2 WHERE watch = ?1",
                args![watch, at_ms],
            )
            .and_then(|_| note_next_run(db, watch, Some(at_ms), false))
            .map_err(err)
        })
    }

    /// The stored layout state of `watch` (JSON), if any.
    pub fn layout_state(&self, watch: &str) -> Result<Option<String>, StoreError> {
        self.db()
            .query_opt(
                "SELECT state FROM layout_state WHERE watch = ?1",
                args![watch],
            )
            .and_then(first)
            .map_err(|source| watch_error(watch, "read the layout state of", source))
    }

    /// Stores (or replaces) the template set `name`: its JSON `body`,
    /// learned at `at` from `pages` pages.
    pub fn put_template_set(
        &mut self,
        name: &str,
        at: SystemTime,
        pages: usize,
        body: &str,
    ) -> Result<(), StoreError> {
        let at_ms = to_millis(at)?;
        let pages = i64::try_from(pages).unwrap_or(i64::MAX);
        self.db()
            .execute(
                "INSERT INTO template_set (name, learned_at, pages, body)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (name) DO UPDATE SET learned_at = excluded.learned_at,
                   pages = excluded.pages, body = excluded.body",
                args![name, at_ms, pages, body],
            )
            .map_err(|source| self.db_error("store a template set", source))?;
        Ok(())
    }

    /// The JSON body of template set `name`, if stored.
    pub fn template_set(&self, name: &str) -> Result<Option<String>, StoreError> {
        self.db()
            .query_opt("SELECT body FROM template_set WHERE name = ?1", args![name])
            .and_then(first)
            .map_err(|source| self.db_error("read a template set", source))
    }

    /// The thresholds' stored states of `watch`, by name.
    pub fn thresholds(&self, watch: &str) -> Result<Vec<ThresholdRecord>, StoreError> {
        let rows = self
            .db()
            .query(
                "SELECT name, state, value, node, since FROM threshold_state
                 WHERE watch = ?1 ORDER BY name",
                args![watch],
            )
            .and_then(|rows| {
                rows_as(rows, |mut row| {
                    Ok((
                        row.get::<String>(0)?,
                        row.get::<String>(1)?,
                        row.get::<Option<f64>>(2)?,
                        row.get::<Option<String>>(3)?,
                        row.get::<i64>(4)?,
                    ))
                })
            })
            .map_err(|source| watch_error(watch, "read the thresholds of", source))?;
        rows.into_iter()
            .map(|(name, state, value, node, since)| {
                threshold_record(watch, name, &state, value, node, since)
            })
            .collect()
    }

    /// The value history of one threshold as (time, value), oldest first,
    /// at most the newest `limit` values.
    pub fn threshold_values(
        &self,
        watch: &str,
        name: &str,
        limit: usize,
    ) -> Result<Vec<(SystemTime, f64)>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self
            .db()
            .query(
                "SELECT at, value FROM (SELECT id, at, value FROM threshold_value
                 WHERE watch = ?1 AND name = ?2 ORDER BY id DESC LIMIT ?3) AS newest
                 ORDER BY id",
                args![watch, name, limit],
            )
            .and_then(|rows| rows_as(rows, |mut row| Ok((row.get::<i64>(0)?, row.get::<f64>(1)?))))
            .map_err(|source| watch_error(watch, "read the threshold values of", source))?;
        rows.into_iter()
            .map(|(at, value)| {
                let at = from_millis(at).map_err(|source| StoreError::CorruptWatch {
                    watch: watch.to_owned(),
                    source,
                })?;
                Ok((at, value))
            })
            .collect()
    }

    /// The lowest and highest value threshold `name` held from `from` up
    /// to (not including) `to`: the values recorded in that span and the
    /// one in force at `from`. `None` when it held none.
    pub fn threshold_range(
        &self,
        watch: &str,
        name: &str,
        from: SystemTime,
        to: SystemTime,
    ) -> Result<Option<(f64, f64)>, StoreError> {
        let (from_ms, to_ms) = (to_millis(from)?, to_millis(to)?);
        let err = |source| watch_error(watch, "read the threshold values of", source);
        let (before, within) = self
            .db()
            .query_both(
                (
                    "SELECT value, value FROM threshold_value
                     WHERE watch = ?1 AND name = ?2 AND at < ?3 ORDER BY at DESC, id DESC LIMIT 1",
                    args![watch, name, from_ms],
                ),
                (
                    "SELECT min(value), max(value) FROM threshold_value
                     WHERE watch = ?1 AND name = ?2 AND at >= ?3 AND at < ?4",
                    args![watch, name, from_ms, to_ms],
                ),
            )
            .map_err(err)?;
        let mut range: Option<(f64, f64)> = None;
        for mut row in before.into_iter().chain(within) {
            let (lo, hi) =
                (|| Ok((row.get::<Option<f64>>(0)?, row.get::<Option<f64>>(1)?)))().map_err(err)?;
            if let (Some(lo), Some(hi)) = (lo, hi) {
                range = Some(match range {
                    None => (lo, hi),
                    Some((a, b)) => (a.min(lo), b.max(hi)),
                });
            }
        }
        Ok(range)
    }

    /// Records one check of `watch` at `at` in one transaction: the
    /// snapshot part as [`Store::record`] does (when `snapshot` is given;
    /// `None` for a check that fetched nothing new, such as a 304 or a
    /// failure), then the status, threshold states, values and queued
    /// alerts of `state`. Alerts to digest notifiers are due at the end of
    /// the digest interval since that notifier's last digest for the watch.
    pub fn record_check(
        &mut self,
        watch: &str,
        at: SystemTime,
        snapshot: Option<SnapshotPart<'_>>,
        state: &CheckState,
    ) -> Result<Option<Recorded>, StoreError> {
        let record = CheckRecord::new(watch, at, snapshot, state.clone())?;
        self.write_record(&record)
    }

    /// Writes one check made ready by [`CheckRecord::new`], in one
    /// transaction (see [`Store::record_check`]).
    pub fn write_record(&mut self, record: &CheckRecord) -> Result<Option<Recorded>, StoreError> {
        self.transaction(record_error(&record.watch), |db| write_record(db, record))
    }

    /// Pending outbox rows due at `now` (oldest first), at most `limit`.
    pub fn due_alerts(
        &self,
        now: SystemTime,
        limit: usize,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        self.outbox_query(
            "WHERE state = 'pending' AND next_attempt <= ?1 ORDER BY id LIMIT ?2",
            args![to_millis(now)?, i64::try_from(limit).unwrap_or(i64::MAX)],
        )
    }

    /// Claims pending outbox rows due at `now` (oldest first, at most
    /// `limit`) for delivery by the caller: their next attempt moves to
    /// `lease_until`, so no other replica takes them before then, and a
    /// replica that dies while delivering leaves them to be taken again
    /// after it. Rows another replica is claiming at this instant are
    /// skipped (PostgreSQL: `FOR UPDATE SKIP LOCKED`; SQLite has one
    /// writer at a time). The rows come back as they are in the outbox
    /// (same alert id, so the delivery id stays the same on a retry).
    pub fn claim_alerts(
        &mut self,
        now: SystemTime,
        limit: usize,
        lease_until: SystemTime,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let lock = match self.engine {
            super::core::Engine::Sqlite(_) => "",
            super::core::Engine::Postgres(_) => "FOR UPDATE SKIP LOCKED",
        };
        let sql = format!(
            "UPDATE outbox SET next_attempt = ?3 WHERE id IN
               (SELECT id FROM outbox WHERE state = 'pending' AND next_attempt <= ?1
                ORDER BY id LIMIT ?2 {lock})
             RETURNING {OUTBOX_COLUMNS}"
        );
        let rows = self
            .db()
            .query(
                &sql,
                args![
                    to_millis(now)?,
                    i64::try_from(limit).unwrap_or(i64::MAX),
                    to_millis(lease_until)?
                ],
            )
            .map_err(outbox_error)?;
        let mut entries = outbox_entries(rows)?;
        entries.sort_by_key(|e| e.id);
        Ok(entries)
    }

    /// Gives claimed rows back, due at `at` (rows not attempted before the
    /// lease ran short).
    pub fn release_alerts(&mut self, ids: &[i64], at: SystemTime) -> Result<(), StoreError> {
        let at_ms = to_millis(at)?;
        self.transaction(outbox_error, |db| {
            for &id in ids {
                db.execute(
                    "UPDATE outbox SET next_attempt = ?2 WHERE id = ?1 AND state = 'pending'",
                    args![id, at_ms],
                )
                .map_err(outbox_error)?;
            }
            Ok(())
        })
    }

    /// Every outbox row (pending and failed), oldest first.
    pub fn outbox(&self) -> Result<Vec<OutboxEntry>, StoreError> {
        self.outbox_query("ORDER BY id", &[])
    }

    /// When the next pending outbox row is due, if any.
    pub fn next_alert_due(&self) -> Result<Option<SystemTime>, StoreError> {
        let ms: Option<i64> = self
            .db()
            .query_one(
                "SELECT min(next_attempt) FROM outbox WHERE state = 'pending'",
                &[],
            )
            .and_then(|mut row| row.get(0))
            .map_err(|source| self.db_error("read the outbox", source))?;
        opt_time(ms).map_err(|source| StoreError::CorruptWatch {
            watch: "(outbox)".to_owned(),
            source,
        })
    }

    /// Deletes delivered rows and notes, for digests, when each (watch,
    /// notifier) pair last sent one.
    pub fn alerts_delivered(&mut self, ids: &[i64], at: SystemTime) -> Result<(), StoreError> {
        let at_ms = to_millis(at)?;
        self.transaction(outbox_error, |db| {
            for &id in ids {
                db.execute(
                    "INSERT INTO digest_sent (watch, notifier, at)
                     SELECT watch, notifier, CAST(?2 AS BIGINT) FROM outbox
                     WHERE id = ?1 AND digest IS NOT NULL
                     ON CONFLICT (watch, notifier) DO UPDATE SET at = excluded.at",
                    args![id, at_ms],
                )
                .and_then(|_| db.execute("DELETE FROM outbox WHERE id = ?1", args![id]))
                .map_err(outbox_error)?;
            }
            Ok(())
        })
    }

    /// Records a failed attempt on each row: the error, one more attempt,
    /// and either the next attempt time or, when `give_up` is set, the
    /// `failed` state.
    pub fn alerts_failed(
        &mut self,
        ids: &[i64],
        error: &str,
        next_attempt: SystemTime,
        give_up: bool,
    ) -> Result<(), StoreError> {
        let next = to_millis(next_attempt)?;
        let state = if give_up { "failed" } else { "pending" };
        self.transaction(outbox_error, |db| {
            for &id in ids {
                db.execute(
                    "UPDATE outbox SET attempts = attempts + 1, last_error = ?2,
                     next_attempt = ?3, state = ?4 WHERE id = ?1",
                    args![id, error, next, state],
                )
                .map_err(outbox_error)?;
            }
            Ok(())
        })
    }

    /// Removes threshold values older than `retention.keep_days` before
    /// `now`, keeping each threshold's newest value; returns how many went.
    pub fn prune_values(
        &mut self,
        retention: &Retention,
        now: SystemTime,
    ) -> Result<usize, StoreError> {
        retention.validate()?;
        let cutoff = super::core::retention_cutoff(retention, to_millis(now)?);
        self.db()
            .execute(
                "DELETE FROM threshold_value WHERE at < ?1 AND id NOT IN
                 (SELECT max(id) FROM threshold_value GROUP BY watch, name)",
                args![cutoff],
            )
            .map_err(|source| self.db_error("prune threshold values", source))
    }

    fn outbox_query(&self, tail: &str, args: &[Arg<'_>]) -> Result<Vec<OutboxEntry>, StoreError> {
        let sql = format!("SELECT {OUTBOX_COLUMNS} FROM outbox {tail}");
        let rows = self.db().query(&sql, args).map_err(outbox_error)?;
        outbox_entries(rows)
    }

    fn db_error(&self, action: &str, source: DbError) -> StoreError {
        StoreError::Database {
            path: self.path.clone(),
            action: action.to_owned(),
            source,
        }
    }
}

/// The columns an [`OutboxEntry`] is read from, in order.
const OUTBOX_COLUMNS: &str = "id, alert_id, watch, notifier, created_at, next_attempt, attempts, \
     digest, state, last_error, body";

/// Outbox rows read with [`OUTBOX_COLUMNS`].
fn outbox_entries(rows: Vec<Row>) -> Result<Vec<OutboxEntry>, StoreError> {
    let rows = rows_as(rows, |mut row| {
        Ok((
            row.get::<i64>(0)?,
            row.get::<String>(1)?,
            row.get::<String>(2)?,
            row.get::<String>(3)?,
            row.get::<i64>(4)?,
            row.get::<i64>(5)?,
            row.get::<i64>(6)?,
            row.get::<Option<i64>>(7)?,
            row.get::<String>(8)?,
            row.get::<Option<String>>(9)?,
            row.get::<String>(10)?,
        ))
    })
    .map_err(outbox_error)?;
    rows.into_iter()
        .map(
            |(id, alert_id, watch, notifier, created, next, attempts, digest, state, e, body)| {
                let corrupt = |source| StoreError::CorruptWatch {
                    watch: watch.clone(),
                    source,
                };
                Ok(OutboxEntry {
                    created_at: from_millis(created).map_err(corrupt)?,
                    next_attempt: from_millis(next).map_err(corrupt)?,
                    attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
                    digest: digest.map(|ms| Duration::from_millis(ms.unsigned_abs())),
                    state: if state == "failed" {
                        OutboxState::Failed
                    } else {
                        OutboxState::Pending
                    },
                    id,
                    alert_id,
                    watch,
                    notifier,
                    last_error: e,
                    body,
                })
            },
        )
        .collect()
}

fn outbox_error(source: DbError) -> StoreError {
    watch_error("(outbox)", "update the outbox of", source)
}

/// The part of a check besides the snapshot and the status: layout state
/// and event, threshold states and values, queued alerts.
fn write_check_state(
    db: Db<'_>,
    watch: &str,
    at_ms: i64,
    state: &CheckState,
    layout_event: Option<&str>,
    since_ms: &[i64],
) -> Result<(), DbError> {
    if let Some(layout) = &state.layout {
        db.defer(
            "INSERT INTO layout_state (watch, state) VALUES (?1, ?2)
             ON CONFLICT (watch) DO UPDATE SET state = excluded.state",
            args![watch, layout],
        )?;
    }
    if let Some(body) = layout_event {
        // Only for a watch the store knows (it has a snapshot).
        db.defer(
            "INSERT INTO change_event (watch, snapshot_id, at, kind, body)
             SELECT CAST(?1 AS TEXT), CAST(NULL AS BIGINT), CAST(?2 AS BIGINT), 'layout', CAST(?3 AS TEXT)
             WHERE EXISTS (SELECT 1 FROM watch WHERE id = ?1)",
            args![watch, at_ms, body],
        )?;
    }
    for (t, &since) in state.thresholds.iter().zip(since_ms) {
        db.defer(
            "INSERT INTO threshold_state (watch, name, state, value, node, since)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (watch, name) DO UPDATE SET state = excluded.state,
               value = excluded.value, node = excluded.node, since = excluded.since",
            args![watch, &t.name, t.state.as_str(), t.value, &t.node, since],
        )?;
    }
    for (name, value) in &state.values {
        db.defer(
            "INSERT INTO threshold_value (watch, name, at, value) VALUES (?1, ?2, ?3, ?4)",
            args![watch, name, at_ms, *value],
        )?;
    }
    if let Some(values) = &state.series {
        super::series::write_series(db, watch, at_ms, values)?;
    }
    for q in &state.alerts {
        let due = match q.digest {
            None => at_ms,
            Some(every) => {
                let last: Option<i64> = first(db.query_opt(
                    "SELECT at FROM digest_sent WHERE watch = ?1 AND notifier = ?2",
                    args![watch, &q.notifier],
                )?)?;
                last.map_or(at_ms, |last| {
                    at_ms.max(last.saturating_add(millis_of(every)))
                })
            }
        };
        db.defer(
            "INSERT INTO outbox
             (alert_id, watch, notifier, created_at, next_attempt, digest, body)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (alert_id, notifier) DO NOTHING",
            args![
                &q.alert_id,
                watch,
                &q.notifier,
                at_ms,
                due,
                q.digest.map(millis_of),
                &q.body
            ],
        )?;
    }
    Ok(())
}
