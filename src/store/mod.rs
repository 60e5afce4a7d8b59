//! The snapshot store: where the monitoring daemon keeps what it has seen.
//!
//! It takes, per *watch* (a caller-chosen id such as `"prices"`), the semantic
//! hierarchy of each check as XML text, the caller's content hash of that text
//! and the change events found against the previous version (JSON objects with
//! a `"kind"` string). It gives back the current hierarchy, its hash (cheaply,
//! for the "has anything changed?" test on every check), the history of
//! snapshots and change events, and the state of every watch.
//!
//! The store is one SQLite file, used through `rusqlite` with SQLite bundled,
//! or one PostgreSQL database ([`Database`]; the engine is in [`pg`]). Both
//! engines sit behind the same synchronous [`Store`]: the code that decides
//! (checks, thresholds, outbox, clip server) does not know which one it
//! uses. Each query is written once (the common dialect of `sql.rs`) and split per
//! engine only where the dialects differ (the schema, how a database is
//! recognised and versioned). Everything below holds for both, except what
//! is said to be SQLite's (WAL, `user_version`, the files beside the
//! database); PostgreSQL's counterparts are described in [`pg`].
//!
//! What only PostgreSQL does, the coordination between replicas sharing a
//! database (claims, host slots, notices, watch sets, grouped writes), is
//! not among `Store`'s own methods: it is in [`replicas`], reached through
//! [`Store::replicas`] and [`pool::StorePool::replicas`], both `None` on
//! SQLite.
//!
//! # Guarantees
//!
//! - **Atomic writes.** [`Store::record`], [`Store::prune`] and
//!   [`Store::remove_watch`] each run as one transaction (SQLite:
//!   `BEGIN IMMEDIATE`):
//!   a crash at any point leaves either the previous state or the new one.
//! - **Durable writes.** The file is in WAL mode with `synchronous = FULL`: once
//!   a write has returned `Ok`, it survives a crash of the process *and* a
//!   power loss. With `NORMAL`, WAL mode stays atomic and survives a process
//!   crash, but a power loss may roll back the last few commits; a daemon that
//!   has already sent an alert for a change would then see and report it again.
//!   The price of `FULL` is one fsync of the WAL per write, negligible at the
//!   rate pages are checked.
//! - **Concurrent use.** Any number of [`Store`]s, in one process or several,
//!   may use the same file: WAL lets readers run beside the one writer, and a
//!   busy timeout of [`BUSY_TIMEOUT`] makes a writer wait for another rather
//!   than fail. A [`Store`] is `Send` but not `Sync`: one per thread.
//! - **No panics on bad data.** A row that does not decode (a damaged blob, a
//!   timestamp out of range, invalid JSON) is reported as
//!   [`StoreError::Corrupt`] (or its siblings for change events and watches),
//!   and a decompressed hierarchy is capped at [`MAX_XML_BYTES`].
//!
//! # Decisions
//!
//! - **Current snapshot.** A watch's current snapshot is the one recorded last
//!   (the highest id), whatever its `taken_at`. A check whose hash equals the
//!   current hash stores nothing new: it only sets the watch's `last_checked`.
//! - **Stored form.** A snapshot's `format` says what its blob holds:
//!   `1`, the hierarchy's compact form ([`crate::hierarchy::packed`]),
//!   zstd-compressed at a fast level: what checks write, so that neither
//!   writing nor reading a snapshot involves XML, and compressing costs a
//!   small fraction of parsing the page; `2`, XML compressed the same way
//!   (what [`Store::record`] is given); `0`, zlib-compressed XML, as stores
//!   before schema 6 wrote it, still read. Rows are not rewritten by the
//!   migration: old ones age out through retention. The uncompressed length
//!   is stored beside the blob and checked on reading, and zstd's frame
//!   checksum (zlib's Adler-32 for format 0) catches a damaged blob.
//!   [`Snapshot::xml`] is always XML: a compact snapshot is written out
//!   when read that way.
//! - **Time.** Times are stored as integer Unix milliseconds (UTC), so they
//!   come back truncated to the millisecond. Retention ages are measured from
//!   the `at` or `now` the caller passes, never from the machine's clock.
//! - **Retention** ([`Retention`]) is applied to a watch each time a new
//!   snapshot of it is stored, and to every watch by [`Store::prune`] (a page
//!   that never changes never triggers the first). A snapshot is pruned when it
//!   is older than `keep_days` *or* not among the newest `keep_versions`; the
//!   current snapshot is never pruned. Change events are history and may
//!   outlive their snapshot: pruning a snapshot keeps its events, with
//!   [`ChangeRecord::snapshot_id`] set to `None`; an event is pruned only when
//!   it is older than `keep_days`, except the events of the current snapshot,
//!   which are kept as long as it is current. Both bounds are at least 1, so
//!   nothing is kept without bound. Freed pages are reused, the file does not
//!   shrink.
//! - **Schema.** Numbered migrations ([`SCHEMA_VERSION`] of them), each applied
//!   in its own transaction together with the bump of `PRAGMA user_version`,
//!   which holds the number applied. A `meta` table with
//!   `application = 'semclip'` marks the file as ours. A store written by a
//!   newer semclip is refused ([`StoreError::TooNew`]), one written by an older
//!   one is migrated forward on open, and a file that is not a semclip store is
//!   refused without being modified ([`StoreError::NotSqlite`],
//!   [`StoreError::Foreign`]).
//!
//! Next to the database, SQLite keeps the files `<name>-wal` and `<name>-shm`
//! while the store is in use; they belong to it, and copying the database
//! alone while a store is open may lose the latest writes.

mod core;
mod database;
mod event;
pub mod migrate;
pub mod pg;
pub mod pool;
pub mod replicas;
mod series;
mod session;
mod sql;
mod state;
pub mod time;

pub use database::{Database, PostgresUrl};
pub use replicas::{BUSY_RETRY, Claim, ReplicaPool, Replicas, SlotBack, SlotWaiter, WAIT_ALIVE};
pub use session::StoredJar;
pub use sql::DbError;

pub use event::{Event, EventRecord, LAYOUT, LayoutEvent};
pub use series::{MAX_SERIES, NodeValue, Point, SeriesHead};
pub use state::{
    CheckRecord, CheckStart, CheckState, Level, OutboxEntry, OutboxState, Queued, SnapshotPart,
    ThresholdRecord, UnknownLevel, WatchStatus,
};

pub use self::core::{
    BUSY_TIMEOUT, ChangeRecord, CorruptionCause, MAX_XML_BYTES, Previous, Pruned, Recorded,
    Retention, SCHEMA_VERSION, Snapshot, SnapshotBody, Store, StoreError, WatchState,
};
