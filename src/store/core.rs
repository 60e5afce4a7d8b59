//! The store's core, which its siblings share: the [`Store`] handle and its
//! connection ([`Engine`]), opening and migrating a database, the
//! [`StoreError`] type, the snapshot encoding ([`SnapshotBody`], compression),
//! writing one check and retention. The guarantees and decisions they keep
//! are in the [module documentation](super).

use std::error::Error as StdError;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use flate2::read::ZlibDecoder;

use crate::diff::Change;
use crate::hierarchy::read;
use crate::hierarchy::write::{XmlOptions, to_xml};
use crate::hierarchy::{Hierarchy, packed};
use rusqlite::{Connection, ErrorCode, OpenFlags, TransactionBehavior};

use super::database::{APPLICATION, Database, Found};
use super::event::EventRecord;
use super::pg::{PgConn, PgPool};
use super::sql::{Db, DbError, Row, args};

/// The schema version this build writes: the number of migrations it knows.
pub const SCHEMA_VERSION: u32 = 9;

/// The largest hierarchy, in bytes of XML, that the store accepts and returns.
/// Decompression stops there, so a damaged row cannot exhaust memory.
pub const MAX_XML_BYTES: usize = 256 * 1024 * 1024;

/// How long a write waits for another connection's write to finish before it
/// fails with `SQLITE_BUSY`.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The size, in bytes, to which the WAL file is cut back after a checkpoint,
/// so that one large hierarchy does not leave a large file behind.
const JOURNAL_SIZE_LIMIT: i64 = 64 * 1024 * 1024;

const MILLIS_PER_DAY: i64 = 86_400_000;

/// The schema, as migrations numbered by position: `MIGRATIONS[0]` takes an
/// empty file to version 1, and so on. Never edit a published migration; add
/// one. The `meta` table and its `application` row must stay as they are in
/// every version: they are how any build recognises a semclip store, and how
/// an older build learns that it is too old.
const MIGRATIONS: &[&str] = &[
    // 1: the marker, watches and their snapshots.
    "CREATE TABLE meta (
        key   TEXT PRIMARY KEY NOT NULL,
        value TEXT NOT NULL
    ) STRICT;
    INSERT INTO meta (key, value) VALUES ('application', 'semclip');

    CREATE TABLE watch (
        id           TEXT PRIMARY KEY NOT NULL,
        created_at   INTEGER NOT NULL,
        last_checked INTEGER NOT NULL
    ) STRICT;

    -- xml: the hierarchy, zlib-compressed; size: its length uncompressed.
    CREATE TABLE snapshot (
        id       INTEGER PRIMARY KEY AUTOINCREMENT,
        watch    TEXT NOT NULL REFERENCES watch (id) ON DELETE CASCADE,
        taken_at INTEGER NOT NULL,
        hash     TEXT NOT NULL,
        size     INTEGER NOT NULL,
        xml      BLOB NOT NULL
    ) STRICT;
    -- Covers the current-hash check and the snapshot list: no blob is read.
    CREATE INDEX snapshot_by_watch ON snapshot (watch, id, hash, taken_at);",
    // 2: change events. They may outlive their snapshot (ON DELETE SET NULL).
    "CREATE TABLE change_event (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        watch       TEXT NOT NULL REFERENCES watch (id) ON DELETE CASCADE,
        snapshot_id INTEGER REFERENCES snapshot (id) ON DELETE SET NULL,
        at          INTEGER NOT NULL,
        kind        TEXT NOT NULL,
        body        TEXT NOT NULL
    ) STRICT;
    CREATE INDEX change_event_by_watch ON change_event (watch, id);
    CREATE INDEX change_event_by_kind ON change_event (watch, kind, id);
    CREATE INDEX change_event_by_snapshot ON change_event (snapshot_id);",
    // 3: the daemon's state: per-watch status and schedule, threshold states
    // and value history, the notification outbox and digest times. Keyed by
    // watch id without a foreign key: a watch has a status before its first
    // snapshot, and its state outlives a reload that drops it for a while.
    "CREATE TABLE watch_status (
        watch           TEXT PRIMARY KEY NOT NULL,
        next_run        INTEGER,
        etag            TEXT,
        last_modified   TEXT,
        last_attempt    INTEGER,
        last_success    INTEGER,
        failures        INTEGER NOT NULL DEFAULT 0,
        failing_alerted INTEGER NOT NULL DEFAULT 0,
        last_error      TEXT,
        evaluated       TEXT
    ) STRICT;

    CREATE TABLE threshold_state (
        watch TEXT NOT NULL,
        name  TEXT NOT NULL,
        state TEXT NOT NULL,
        value REAL,
        node  TEXT,
        since INTEGER NOT NULL,
        PRIMARY KEY (watch, name)
    ) STRICT;

    CREATE TABLE threshold_value (
        id    INTEGER PRIMARY KEY AUTOINCREMENT,
        watch TEXT NOT NULL,
        name  TEXT NOT NULL,
        at    INTEGER NOT NULL,
        value REAL NOT NULL
    ) STRICT;
    CREATE INDEX threshold_value_by_name ON threshold_value (watch, name, at);

    -- One row per alert and notifier. Deleted once delivered; state 'failed'
    -- once given up, kept as the visible record.
    CREATE TABLE outbox (
        id           INTEGER PRIMARY KEY AUTOINCREMENT,
        alert_id     TEXT NOT NULL,
        watch        TEXT NOT NULL,
        notifier     TEXT NOT NULL,
        created_at   INTEGER NOT NULL,
        next_attempt INTEGER NOT NULL,
        attempts     INTEGER NOT NULL DEFAULT 0,
        digest       INTEGER,
        state        TEXT NOT NULL DEFAULT 'pending',
        last_error   TEXT,
        body         TEXT NOT NULL,
        UNIQUE (alert_id, notifier)
    ) STRICT;
    CREATE INDEX outbox_due ON outbox (state, next_attempt);

    CREATE TABLE digest_sent (
        watch    TEXT NOT NULL,
        notifier TEXT NOT NULL,
        at       INTEGER NOT NULL,
        PRIMARY KEY (watch, notifier)
    ) STRICT;",
    // 4: layout monitoring and learned templates. layout_state.state is the
    // JSON of `layout::LayoutState`; template_set.body the JSON of a
    // `template::cluster::TemplateSet` learned by `semclip learn`.
    "CREATE TABLE layout_state (
        watch TEXT PRIMARY KEY NOT NULL,
        state TEXT NOT NULL
    ) STRICT;

    CREATE TABLE template_set (
        name       TEXT PRIMARY KEY NOT NULL,
        learned_at INTEGER NOT NULL,
        pages      INTEGER NOT NULL,
        body       TEXT NOT NULL
    ) STRICT;",
    // 5: hashes of page bodies: the one the current snapshot was built from
    // (the same bytes again are not parsed), and the one refused for going
    // over its page budget (refused again without parsing).
    "ALTER TABLE watch_status ADD COLUMN body_hash TEXT;
    ALTER TABLE watch_status ADD COLUMN rejected_body TEXT;",
    // 6: what a snapshot blob holds (see `SnapshotFormat`): rows before
    // this one are zlib-compressed XML.
    "ALTER TABLE snapshot ADD COLUMN format INTEGER NOT NULL DEFAULT 0;",
    // 7: the cookie jars of sessions (`page::session::Jar` as JSON), by
    // session name; `revision` counts the writes (see `store::session`).
    "CREATE TABLE session_jar (
        name         TEXT PRIMARY KEY NOT NULL,
        jar          TEXT NOT NULL,
        revision     INTEGER NOT NULL,
        updated_at   INTEGER NOT NULL,
        logged_in_at INTEGER
    ) STRICT;",
    // 8: why the last check was blocked (a bot challenge, a rate limit, a
    // page matching the watch's `blocked` XPaths), when it was.
    "ALTER TABLE watch_status ADD COLUMN blocked TEXT;",
    // 9: values over time (see `super::series`): one row per numeric node
    // of a watch with its last value (NULL once the node is gone), and the
    // points of each, only where the value changed.
    "CREATE TABLE series (
        id     INTEGER PRIMARY KEY AUTOINCREMENT,
        watch  TEXT NOT NULL,
        node   TEXT NOT NULL,
        source TEXT NOT NULL,
        value  REAL,
        at     INTEGER NOT NULL,
        UNIQUE (watch, node)
    ) STRICT;
    CREATE TABLE series_point (
        series INTEGER NOT NULL REFERENCES series (id) ON DELETE CASCADE,
        at     INTEGER NOT NULL,
        value  REAL,
        PRIMARY KEY (series, at)
    ) STRICT;",
];

/// What a snapshot blob holds (the `format` column).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SnapshotFormat {
    /// XML, zlib-compressed (stores before schema 6).
    ZlibXml = 0,
    /// The compact form of the hierarchy, zstd-compressed.
    ZstdPacked = 1,
    /// XML, zstd-compressed.
    ZstdXml = 2,
}

impl SnapshotFormat {
    fn from_column(value: i64) -> Option<SnapshotFormat> {
        match value {
            0 => Some(SnapshotFormat::ZlibXml),
            1 => Some(SnapshotFormat::ZstdPacked),
            2 => Some(SnapshotFormat::ZstdXml),
            _ => None,
        }
    }
}

/// The zstd level snapshots are compressed at: fast, since every changed
/// page pays it, and still several times smaller than the hierarchy.
const ZSTD_LEVEL: i32 = 1;

/// A hierarchy to store: XML, or its compact form.
#[derive(Debug, Clone, Copy)]
pub enum SnapshotBody<'a> {
    /// The hierarchy document.
    Xml(&'a str),
    /// [`crate::hierarchy::packed::pack`] of the hierarchy (with its URL).
    Packed(&'a [u8]),
}

impl SnapshotBody<'_> {
    pub(super) fn bytes(&self) -> &[u8] {
        match self {
            SnapshotBody::Xml(xml) => xml.as_bytes(),
            SnapshotBody::Packed(bytes) => bytes,
        }
    }

    pub(super) fn format(&self) -> SnapshotFormat {
        match self {
            SnapshotBody::Xml(_) => SnapshotFormat::ZstdXml,
            SnapshotBody::Packed(_) => SnapshotFormat::ZstdPacked,
        }
    }

    /// Checks the size and compresses, for `watch`.
    pub(super) fn compressed(&self, watch: &str) -> Result<Vec<u8>, StoreError> {
        let bytes = self.bytes();
        if bytes.len() > MAX_XML_BYTES {
            return Err(StoreError::TooLarge {
                watch: watch.to_owned(),
                size: bytes.len(),
                limit: MAX_XML_BYTES,
            });
        }
        compress(bytes).map_err(|source| StoreError::Compress {
            watch: watch.to_owned(),
            source,
        })
    }
}

// Each migration raises the version by one.
const _: () = assert!(MIGRATIONS.len() == SCHEMA_VERSION as usize);

/// The cause of a damaged row, as found while decoding it.
pub type CorruptionCause = Box<dyn StdError + Send + Sync + 'static>;

/// Everything that can go wrong in the snapshot store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// SQLite could not open or set up the file.
    #[error("cannot open snapshot store `{}`", path.display())]
    Open {
        /// The database file.
        path: PathBuf,
        /// The database's error.
        #[source]
        source: DbError,
    },
    /// The file exists but is not an SQLite database.
    #[error("`{}` is not a semclip snapshot store (not an SQLite database)", path.display())]
    NotSqlite {
        /// The file.
        path: PathBuf,
        /// The database's error.
        #[source]
        source: DbError,
    },
    /// The database belongs to some other application.
    #[error("`{}` is {what} but not a semclip snapshot store", path.display())]
    Foreign {
        /// The file (or PostgreSQL URL).
        path: PathBuf,
        /// What it is: "an SQLite database", "a PostgreSQL database with
        /// other tables".
        what: &'static str,
    },
    /// The store was written by a newer semclip, with a schema this build does
    /// not know.
    #[error(
        "`{}` was written by a newer semclip (schema {found}, this build knows {supported}); \
         upgrade semclip",
        path.display()
    )]
    TooNew {
        /// The database file.
        path: PathBuf,
        /// The schema version found in the file.
        found: u32,
        /// The newest schema version this build knows ([`SCHEMA_VERSION`]).
        supported: u32,
    },
    /// Migrating an older store forward failed; the store is left at `from`.
    #[error("cannot migrate snapshot store `{}` from schema {from} to {to}", path.display())]
    Migrate {
        /// The database file.
        path: PathBuf,
        /// The schema version the file is at.
        from: u32,
        /// The version the failed migration leads to.
        to: u32,
        /// The database's error.
        #[source]
        source: DbError,
    },
    /// The file could not be put in WAL mode (on a network file system, say).
    #[error("cannot put snapshot store `{}` in WAL mode (it stays in {mode} mode)", path.display())]
    NoWal {
        /// The database file.
        path: PathBuf,
        /// The journal mode SQLite kept.
        mode: String,
    },
    /// A query or write about one watch failed.
    #[error("cannot {action} watch `{watch}`")]
    Watch {
        /// The watch.
        watch: String,
        /// What was being done, as a verb phrase ("record a check of").
        action: &'static str,
        /// The database's error.
        #[source]
        source: DbError,
    },
    /// A query or write about the whole store failed.
    #[error("cannot {action} in snapshot store `{}`", path.display())]
    Database {
        /// The database file.
        path: PathBuf,
        /// What was being done, as a verb phrase ("list watches").
        action: String,
        /// The database's error.
        #[source]
        source: DbError,
    },
    /// A stored snapshot does not decode: damaged compressed data, a wrong
    /// length, invalid UTF-8 or a timestamp out of range.
    #[error("snapshot {snapshot_id} of watch `{watch}` is corrupt")]
    Corrupt {
        /// The watch.
        watch: String,
        /// The snapshot.
        snapshot_id: i64,
        /// What is wrong with it.
        #[source]
        source: CorruptionCause,
    },
    /// A stored change event does not decode (invalid JSON, a timestamp out of
    /// range).
    #[error("change event {change_id} of watch `{watch}` is corrupt")]
    CorruptChange {
        /// The watch.
        watch: String,
        /// The change event.
        change_id: i64,
        /// What is wrong with it.
        #[source]
        source: CorruptionCause,
    },
    /// A watch's own row does not decode (a timestamp out of range).
    #[error("the state of watch `{watch}` is corrupt")]
    CorruptWatch {
        /// The watch.
        watch: String,
        /// What is wrong with it.
        #[source]
        source: CorruptionCause,
    },
    /// A retention policy would keep nothing or keep everything.
    #[error(
        "retention must keep at least 1 version and 1 day \
         (got {keep_versions} versions, {keep_days} days)"
    )]
    InvalidRetention {
        /// The `keep_versions` given.
        keep_versions: u32,
        /// The `keep_days` given.
        keep_days: u32,
    },
    /// A change event given to [`Store::record`] is not a JSON object with a
    /// `"kind"` string.
    #[error("change event {index} for watch `{watch}` is not a JSON object with a \"kind\" string")]
    InvalidChange {
        /// The watch.
        watch: String,
        /// The event's position in the slice given.
        index: usize,
    },
    /// A hierarchy given to [`Store::record`] is larger than [`MAX_XML_BYTES`].
    #[error("hierarchy of watch `{watch}` is {size} bytes, more than the store's limit of {limit}")]
    TooLarge {
        /// The watch.
        watch: String,
        /// The hierarchy's size in bytes.
        size: usize,
        /// [`MAX_XML_BYTES`].
        limit: usize,
    },
    /// Compressing a hierarchy failed.
    #[error("cannot compress the hierarchy of watch `{watch}`")]
    Compress {
        /// The watch.
        watch: String,
        /// The compressor's error.
        #[source]
        source: std::io::Error,
    },
    /// A time given to the store is too far from 1970 to be stored as `i64`
    /// milliseconds (about 292 million years either way).
    #[error("time {time:?} is out of the snapshot store's range")]
    TimeOutOfRange {
        /// The time.
        time: SystemTime,
    },
}

/// A store call made through a pool ([`super::pool::StorePool`], or its
/// replicas' side, [`super::replicas::ReplicaPool`]) failed.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The blocking thread running the call panicked or was cancelled.
    #[error("a store worker thread failed")]
    Worker(#[from] tokio::task::JoinError),
    /// The thread writing grouped records panicked or was never run (the
    /// runtime shutting down) before writing this one.
    #[error("the store's record writer stopped before writing this check")]
    WriterLost,
}

/// How much history to keep per watch. Both bounds apply: a snapshot is pruned
/// when it is older than `keep_days` *or* beyond the newest `keep_versions`.
/// The current snapshot is never pruned. Both must be at least 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Retention {
    /// How many snapshots to keep, counting the current one.
    pub keep_versions: u32,
    /// How many days of snapshots and change events to keep.
    pub keep_days: u32,
}

impl Retention {
    /// A policy, checked: both bounds must be at least 1.
    pub fn new(keep_versions: u32, keep_days: u32) -> Result<Retention, StoreError> {
        let retention = Retention {
            keep_versions,
            keep_days,
        };
        retention.validate()?;
        Ok(retention)
    }

    /// Checks that both bounds are at least 1 (the store checks before using a
    /// policy, as the fields are public).
    pub fn validate(&self) -> Result<(), StoreError> {
        if self.keep_versions == 0 || self.keep_days == 0 {
            return Err(StoreError::InvalidRetention {
                keep_versions: self.keep_versions,
                keep_days: self.keep_days,
            });
        }
        Ok(())
    }
}

impl Default for Retention {
    /// 100 versions, 90 days.
    fn default() -> Self {
        Retention {
            keep_versions: 100,
            keep_days: 90,
        }
    }
}

/// One stored version of a watch's hierarchy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The snapshot's id, unique in the store and never reused.
    pub id: i64,
    /// The watch it belongs to.
    pub watch: String,
    /// The caller's content hash of `xml`.
    pub hash: String,
    /// The hierarchy, exactly as recorded.
    pub xml: String,
    /// When it was taken (the `at` of [`Store::record`]), to the millisecond.
    pub taken_at: SystemTime,
}

/// The current snapshot as a check compares with it
/// ([`Store::current_hierarchy`]).
#[derive(Debug, Clone)]
pub struct Previous {
    /// Its content hash.
    pub hash: String,
    /// Its hierarchy: ids derived, except from
    /// [`Store::current_hierarchy_without_ids`].
    pub hierarchy: Hierarchy,
    /// Whether it was stored as XML, by a semclip whose content hashes were
    /// taken over the XML (so a new hash cannot be compared with it).
    pub legacy_hash: bool,
    /// The hierarchy vocabulary it was built under
    /// ([`crate::VOCABULARY_VERSION`]; 1 for snapshots stored as XML).
    pub vocabulary: u32,
}

/// One stored change event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeRecord {
    /// The event's id, unique in the store, never reused, increasing in the
    /// order events were recorded.
    pub id: i64,
    /// The watch it belongs to.
    pub watch: String,
    /// The snapshot the change led to, or `None` once retention has pruned
    /// that snapshot.
    pub snapshot_id: Option<i64>,
    /// When it was recorded (the `at` of [`Store::record`]), to the
    /// millisecond.
    pub at: SystemTime,
    /// The event's `"kind"`.
    pub kind: String,
    /// The whole event, as given.
    pub change: serde_json::Value,
}

/// One change event row, its body not yet decoded.
struct EventRow {
    id: i64,
    watch: String,
    snapshot_id: Option<i64>,
    at: SystemTime,
    kind: String,
    body: String,
}

/// What [`Store::record`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// The hash equals the current one: only the check time was recorded.
    Unchanged,
    /// A new snapshot was stored and made current.
    Stored {
        /// The new snapshot's id.
        snapshot_id: i64,
        /// How many change events were stored with it.
        events: usize,
    },
}

/// One watch as the store knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchState {
    /// The watch's id.
    pub id: String,
    /// The current snapshot's id.
    pub snapshot_id: i64,
    /// The current snapshot's hash.
    pub hash: String,
    /// The `at` of the first check recorded.
    pub created_at: SystemTime,
    /// The `at` of the latest check, changed or not.
    pub last_checked: SystemTime,
    /// When the current snapshot was taken.
    pub last_changed: SystemTime,
    /// How many snapshots are stored, the current one included.
    pub snapshots: usize,
}

/// What [`Store::prune`] removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Snapshots removed.
    pub snapshots: usize,
    /// Change events removed.
    pub changes: usize,
}

/// A snapshot store: one connection to one database, SQLite or PostgreSQL.
#[derive(Debug)]
pub struct Store {
    pub(super) engine: Engine,
    /// The SQLite file, or the PostgreSQL URL (without password) as a path,
    /// for messages.
    pub(super) path: PathBuf,
}

/// The connection underneath.
#[derive(Debug)]
pub(super) enum Engine {
    Sqlite(Connection),
    Postgres(PgConn),
}

/// Creates the store file `path`, if missing, readable and writable by its
/// owner alone (0600) whatever the umask: it holds session cookies and
/// the pages' data (docs/security.md, "What the store holds that is secret"). SQLite gives the `-wal`, `-shm`
/// and `-journal` files it makes the database file's mode. An existing
/// file is left as it is (its owner may share it on purpose), with a
/// warning when others can read it. Errors are left to SQLite's open,
/// which says them better.
fn create_private(path: &Path) {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let created = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path);
    if created.is_err()
        && let Ok(meta) = std::fs::metadata(path)
        && meta.is_file()
        && meta.permissions().mode() & 0o077 != 0
    {
        tracing::warn!(
            path = %path.display(),
            mode = format!("{:o}", meta.permissions().mode() & 0o777),
            "the store is readable by others; it holds session cookies (chmod 600 it)"
        );
    }
}

impl Store {
    /// Opens the store at `path`, creating it if the file is missing or empty,
    /// and migrating it forward if an older semclip wrote it.
    ///
    /// A file that is not a semclip store (not SQLite, or another
    /// application's database) is refused and left untouched; so is a store
    /// written by a newer semclip ([`StoreError::TooNew`]). The parent
    /// directory must exist.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        create_private(path);
        // No SQLITE_OPEN_URI: the path is a path, even if it starts "file:".
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        // Setting up takes locks the busy handler does not wait for: while
        // several handles create the same new file at once, switching it to
        // WAL can answer SQLITE_BUSY at once (SQLite's deadlock avoidance).
        // Such an open is tried again, with a fresh connection, until
        // [`BUSY_TIMEOUT`].
        let started = std::time::Instant::now();
        loop {
            let conn =
                Connection::open_with_flags(path, flags).map_err(|source| StoreError::Open {
                    path: path.to_owned(),
                    source: source.into(),
                })?;
            match Store::set_up(conn, path.to_owned(), true) {
                Err(StoreError::Open { source, .. })
                    if source.sqlite_code() == Some(ErrorCode::DatabaseBusy)
                        && started.elapsed() < BUSY_TIMEOUT =>
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
                other => return other,
            }
        }
    }

    /// Opens the store in `database`: [`Store::open`] for an SQLite file;
    /// for PostgreSQL, one connection to the database (which must exist),
    /// whose schema is created or migrated forward, or refused as for
    /// SQLite. A PostgreSQL store must be used from a thread that is not
    /// running an async task (see [`super::pg`]).
    pub fn open_database(database: &Database) -> Result<Store, StoreError> {
        match database {
            Database::Sqlite(path) => Store::open(path),
            Database::Postgres(url) => {
                let label = PathBuf::from(url.to_string());
                let conn = PgPool::new(url, 1)
                    .and_then(|pool| pool.get())
                    .map_err(|source| StoreError::Open {
                        path: label.clone(),
                        source,
                    })?;
                Store::set_up_postgres(conn, label)
            }
        }
    }

    /// Opens a new, empty store in memory (for tests and dry runs).
    pub fn open_in_memory() -> Result<Store, StoreError> {
        let path = PathBuf::from(":memory:");
        let conn = Connection::open_in_memory().map_err(|source| StoreError::Open {
            path: path.clone(),
            source: source.into(),
        })?;
        Store::set_up(conn, path, false)
    }

    /// The database file (`:memory:` for an in-memory store; the URL for
    /// PostgreSQL).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the store is an SQLite file (else a PostgreSQL database).
    pub fn is_sqlite(&self) -> bool {
        matches!(self.engine, Engine::Sqlite(_))
    }

    /// Where queries outside a transaction run.
    pub(super) fn db(&self) -> Db<'_> {
        match &self.engine {
            Engine::Sqlite(conn) => Db::Sqlite(conn),
            Engine::Postgres(conn) => conn.db(),
        }
    }

    /// Runs `f` in one write transaction (SQLite: `BEGIN IMMEDIATE`),
    /// committed if it returns `Ok`; `err` reports a failure to begin or
    /// commit.
    pub(super) fn transaction<R>(
        &mut self,
        err: impl Fn(DbError) -> StoreError,
        f: impl FnOnce(Db<'_>) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        match &mut self.engine {
            Engine::Sqlite(conn) => {
                let tx = conn
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .map_err(|e| err(e.into()))?;
                let r = f(Db::Sqlite(&tx))?;
                tx.commit().map_err(|e| err(e.into()))?;
                Ok(r)
            }
            Engine::Postgres(conn) => conn.transaction(err, f),
        }
    }

    fn set_up(conn: Connection, path: PathBuf, on_disk: bool) -> Result<Store, StoreError> {
        let open_err = |source: rusqlite::Error| StoreError::Open {
            path: path.clone(),
            source: source.into(),
        };
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open_err)?;
        // Look before writing anything: a file that is not ours stays as it was.
        let found = classify_sqlite(&conn).map_err(|source| read_error(&path, source.into()))?;
        let version = found_version(found, &path, SQLITE_FOREIGN)?;
        conn.pragma_update(None, "foreign_keys", true)
            .map_err(open_err)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(open_err)?;

        if on_disk {
            let mode: String = conn
                .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
                .map_err(open_err)?;
            if !mode.eq_ignore_ascii_case("wal") {
                return Err(StoreError::NoWal { path, mode });
            }
            conn.pragma_update(None, "journal_size_limit", JOURNAL_SIZE_LIMIT)
                .map_err(open_err)?;
        }

        let mut store = Store {
            engine: Engine::Sqlite(conn),
            path,
        };
        // An up-to-date store is opened without taking the write lock.
        if version < SCHEMA_VERSION {
            store.migrate()?;
        }
        Ok(store)
    }

    /// Checks (and creates or migrates) the store behind a new PostgreSQL
    /// connection.
    pub(crate) fn set_up_postgres(conn: PgConn, path: PathBuf) -> Result<Store, StoreError> {
        let found = super::pg::classify(conn.db()).map_err(|source| read_error(&path, source))?;
        let version = found_version(found, &path, POSTGRES_FOREIGN)?;
        let mut store = Store {
            engine: Engine::Postgres(conn),
            path,
        };
        if version < super::pg::SCHEMA_VERSION {
            store.migrate()?;
        }
        Ok(store)
    }

    /// A store on a connection of a pool whose database has been set up.
    pub(crate) fn on_postgres(conn: PgConn, path: PathBuf) -> Store {
        Store {
            engine: Engine::Postgres(conn),
            path,
        }
    }

    /// Applies the missing migrations, each in its own write transaction that
    /// looks at the database again (PostgreSQL: under an advisory lock), so
    /// two processes opening an old store at once each apply a migration at
    /// most once.
    fn migrate(&mut self) -> Result<(), StoreError> {
        let path = self.path.clone();
        let postgres = matches!(self.engine, Engine::Postgres(_));
        let foreign = if postgres {
            POSTGRES_FOREIGN
        } else {
            SQLITE_FOREIGN
        };
        loop {
            let done = self.transaction(
                |source| read_error(&path, source),
                |db| {
                    let found = if postgres {
                        super::pg::lock_migrations(db)
                            .and_then(|()| super::pg::classify(db))
                            .map_err(|source| read_error(&path, source))?
                    } else {
                        let Db::Sqlite(conn) = db else {
                            return Err(StoreError::Foreign {
                                path: path.clone(),
                                what: foreign,
                            });
                        };
                        classify_sqlite(conn).map_err(|source| read_error(&path, source.into()))?
                    };
                    let from = found_version(found, &path, foreign)?;
                    let script = if postgres {
                        super::pg::migration(from)
                    } else {
                        usize::try_from(from)
                            .ok()
                            .and_then(|i| MIGRATIONS.get(i))
                            .copied()
                    };
                    // Up to date; nothing was written, ending the transaction is all.
                    let Some(script) = script else {
                        return Ok(true);
                    };
                    let to = from + 1;
                    let migrate_err = |source| StoreError::Migrate {
                        path: path.clone(),
                        from,
                        to,
                        source,
                    };
                    db.batch(script).map_err(migrate_err)?;
                    match db {
                        Db::Sqlite(conn) => conn
                            .pragma_update(None, "user_version", to)
                            .map_err(|e| migrate_err(e.into()))?,
                        Db::Postgres(..) => super::pg::set_version(db, to).map_err(migrate_err)?,
                    }
                    Ok(false)
                },
            )?;
            if done {
                return Ok(());
            }
        }
    }

    /// The current snapshot's hash, or `None` for an unknown watch. Reads an
    /// index only: cheap enough to call on every check.
    pub fn current_hash(&self, watch: &str) -> Result<Option<String>, StoreError> {
        current_hash(self.db(), watch)
            .map_err(|source| watch_error(watch, "read the current hash of", source))
    }

    /// Every watch's current snapshot id, ordered by watch. Reads an index
    /// only: the clip server polls it to notice new snapshots.
    pub fn current_ids(&self) -> Result<Vec<(String, i64)>, StoreError> {
        self.db()
            .query_map(
                "SELECT watch, max(id) FROM snapshot GROUP BY watch ORDER BY watch",
                &[],
                |mut row| Ok((row.get(0)?, row.get(1)?)),
            )
            .map_err(|source| StoreError::Database {
                path: self.path.clone(),
                action: "read the current snapshot ids".to_owned(),
                source,
            })
    }

    /// The current snapshot's row, not decompressed.
    fn current_row(&self, watch: &str) -> Result<Option<SnapshotRow>, StoreError> {
        self.db()
            .query_opt(
                "SELECT id, watch, hash, taken_at, size, xml, format FROM snapshot
                 WHERE watch = ?1 ORDER BY id DESC LIMIT 1",
                args![watch],
            )
            .and_then(|row| row.map(SnapshotRow::from_row).transpose())
            .map_err(|source| watch_error(watch, "read the current snapshot of", source))
    }
    /// The current snapshot, decompressed, or `None` for an unknown watch.
    pub fn current(&self, watch: &str) -> Result<Option<Snapshot>, StoreError> {
        let row = self.current_row(watch)?;
        row.map(SnapshotRow::decode).transpose()
    }

    /// The current snapshot's hash and hierarchy (ids derived), or `None`
    /// for an unknown watch: what a check compares a new page with. A
    /// compact snapshot is read back without any XML; an older XML one is
    /// parsed.
    pub fn current_hierarchy(&self, watch: &str) -> Result<Option<Previous>, StoreError> {
        self.previous(watch, true)
    }

    /// [`Store::current_hierarchy`] for a diff: a compact snapshot is read
    /// back without deriving its ids (every `xpath` empty; the diff derives
    /// those of the nodes it reports). One stored as XML keeps the ids it
    /// was written with.
    pub fn current_hierarchy_without_ids(
        &self,
        watch: &str,
    ) -> Result<Option<Previous>, StoreError> {
        self.previous(watch, false)
    }

    fn previous(&self, watch: &str, ids: bool) -> Result<Option<Previous>, StoreError> {
        let row = self.current_row(watch)?;
        let Some(row) = row else { return Ok(None) };
        let read = row
            .format()
            .and_then(|format| Ok((format, row.hierarchy_and_vocabulary(ids)?)));
        match read {
            Ok((format, (hierarchy, vocabulary))) => Ok(Some(Previous {
                hash: row.hash,
                hierarchy,
                legacy_hash: format != SnapshotFormat::ZstdPacked,
                vocabulary,
            })),
            Err(source) => Err(StoreError::Corrupt {
                watch: row.watch,
                snapshot_id: row.id,
                source,
            }),
        }
    }

    /// The snapshot with this id, of any watch, decompressed; `None` if there
    /// is none (never stored, pruned, or its watch removed).
    pub fn snapshot(&self, id: i64) -> Result<Option<Snapshot>, StoreError> {
        let row = self
            .db()
            .query_opt(
                "SELECT id, watch, hash, taken_at, size, xml, format FROM snapshot WHERE id = ?1",
                args![id],
            )
            .and_then(|row| row.map(SnapshotRow::from_row).transpose())
            .map_err(|source| StoreError::Database {
                path: self.path.clone(),
                action: format!("read snapshot {id}"),
                source,
            })?;
        row.map(SnapshotRow::decode).transpose()
    }

    /// The hierarchy and time of snapshot `id` of `watch`; `None` if there
    /// is none. Read from the compact form without XML: what replaying a
    /// watch's history reads, version after version. With `ids`, every
    /// node's id is derived; without, the evaluator derives the ids it
    /// needs (what an XPath reading needs: a fraction of the cost).
    pub fn snapshot_hierarchy(
        &self,
        watch: &str,
        id: i64,
        ids: bool,
    ) -> Result<Option<(SystemTime, Hierarchy)>, StoreError> {
        let row = self
            .db()
            .query_opt(
                "SELECT id, watch, hash, taken_at, size, xml, format FROM snapshot
                 WHERE id = ?1 AND watch = ?2",
                args![id, watch],
            )
            .and_then(|row| row.map(SnapshotRow::from_row).transpose())
            .map_err(|source| watch_error(watch, "read a snapshot of", source))?;
        let Some(row) = row else { return Ok(None) };
        let read =
            from_millis(row.taken_at).and_then(|at| Ok((at, row.hierarchy_and_vocabulary(ids)?.0)));
        read.map(Some).map_err(|source| StoreError::Corrupt {
            watch: row.watch,
            snapshot_id: row.id,
            source,
        })
    }

    /// Records one check of `watch`, in one transaction.
    ///
    /// If `hash` equals the current hash, only the watch's `last_checked` is
    /// set to `at` and [`Recorded::Unchanged`] is returned (`xml` and `changes`
    /// are not stored). Otherwise `xml` is compressed and stored as the new
    /// current snapshot, taken at `at`, with `changes` (each a JSON object with
    /// a `"kind"` string) as its change events, and `retention` is applied to
    /// the watch, measuring ages from `at`. An unknown watch is created.
    ///
    /// `hash` is the caller's (the store compares it, byte for byte, and never
    /// checks it against `xml`). `changes`, `retention`, the size of `xml`
    /// (at most [`MAX_XML_BYTES`]) and `at` are checked before anything is
    /// written.
    pub fn record(
        &mut self,
        watch: &str,
        hash: &str,
        xml: &str,
        at: SystemTime,
        changes: &[serde_json::Value],
        retention: &Retention,
    ) -> Result<Recorded, StoreError> {
        let events = event_rows(watch, changes)?;
        self.record_body(watch, hash, SnapshotBody::Xml(xml), at, &events, retention)
    }

    /// [`Store::record`] of a hierarchy's compact form
    /// ([`crate::hierarchy::packed::pack`], with its URL) and its semantic
    /// changes: what checks store.
    pub fn record_packed(
        &mut self,
        watch: &str,
        hash: &str,
        packed: &[u8],
        at: SystemTime,
        changes: &[Change],
        retention: &Retention,
    ) -> Result<Recorded, StoreError> {
        let events = change_rows(watch, changes)?;
        self.record_body(
            watch,
            hash,
            SnapshotBody::Packed(packed),
            at,
            &events,
            retention,
        )
    }

    fn record_body(
        &mut self,
        watch: &str,
        hash: &str,
        body: SnapshotBody<'_>,
        at: SystemTime,
        events: &[(&str, String)],
        retention: &Retention,
    ) -> Result<Recorded, StoreError> {
        retention.validate()?;
        let compressed = body.compressed(watch)?;
        let at_ms = to_millis(at)?;

        let err = |source| watch_error(watch, "record a check of", source);
        self.transaction(err, |db| {
            write_check(
                db,
                &CheckWrite {
                    watch,
                    hash,
                    compressed: &compressed,
                    format: body.format(),
                    size: body.bytes().len(),
                    at_ms,
                    events,
                    retention,
                },
            )
            .map_err(err)
        })
    }

    /// Applies `retention` to every watch, measuring ages from `now`, in one
    /// transaction. [`Store::record`] prunes the watch it stores a snapshot
    /// for; call this now and then so that watches whose page never changes
    /// are pruned too.
    pub fn prune(&mut self, retention: &Retention, now: SystemTime) -> Result<Pruned, StoreError> {
        retention.validate()?;
        let now_ms = to_millis(now)?;
        let path = self.path.clone();
        let err = |source| StoreError::Database {
            path: path.clone(),
            action: "prune the store".to_owned(),
            source,
        };
        self.transaction(err, |db| {
            let watches = db
                .query_map("SELECT id FROM watch ORDER BY id", &[], |mut row| {
                    row.get::<String>(0)
                })
                .map_err(err)?;
            let mut total = Pruned::default();
            for watch in &watches {
                let pruned = apply_retention(db, watch, retention, now_ms, None).map_err(err)?;
                total.snapshots += pruned.snapshots;
                total.changes += pruned.changes;
            }
            Ok(total)
        })
    }

    /// Up to `limit` change events of `watch`, newest first, starting after
    /// (older than) the event `before_id`, or with the newest if `None`. To
    /// page, pass the last id of one page as `before_id` of the next: pages
    /// stay stable while new events are recorded.
    ///
    /// Each event is given as the JSON stored, whatever it holds;
    /// [`Store::events`] reads them as types.
    pub fn changes(
        &self,
        watch: &str,
        before_id: Option<i64>,
        limit: usize,
    ) -> Result<Vec<ChangeRecord>, StoreError> {
        self.read_events(watch, before_id, limit, |row| {
            let change = serde_json::from_str(&row.body)?;
            Ok(ChangeRecord {
                id: row.id,
                watch: row.watch,
                snapshot_id: row.snapshot_id,
                at: row.at,
                kind: row.kind,
                change,
            })
        })
    }

    /// [`Store::changes`] read as [`Event`](super::Event)s: a data change or a layout
    /// event each. A stored event of any other shape is
    /// [`StoreError::CorruptChange`], naming its id.
    pub fn events(
        &self,
        watch: &str,
        before_id: Option<i64>,
        limit: usize,
    ) -> Result<Vec<EventRecord>, StoreError> {
        self.read_events(watch, before_id, limit, |row| {
            let event = serde_json::from_str(&row.body)?;
            Ok(EventRecord {
                id: row.id,
                watch: row.watch,
                snapshot_id: row.snapshot_id,
                at: row.at,
                event,
            })
        })
    }

    /// The change event rows of a page of [`Store::changes`], each decoded
    /// by `decode`; a row that does not decode is
    /// [`StoreError::CorruptChange`].
    fn read_events<T>(
        &self,
        watch: &str,
        before_id: Option<i64>,
        limit: usize,
        decode: impl Fn(EventRow) -> Result<T, serde_json::Error>,
    ) -> Result<Vec<T>, StoreError> {
        let before = before_id.unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self
            .db()
            .query_map(
                "SELECT id, watch, snapshot_id, at, kind, body FROM change_event
                 WHERE watch = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3",
                args![watch, before, limit],
                |mut row| {
                    Ok((
                        row.get::<i64>(0)?,
                        row.get::<String>(1)?,
                        row.get::<Option<i64>>(2)?,
                        row.get::<i64>(3)?,
                        row.get::<String>(4)?,
                        row.get::<String>(5)?,
                    ))
                },
            )
            .map_err(|source| watch_error(watch, "list the changes of", source))?;
        rows.into_iter()
            .map(|(id, watch, snapshot_id, at, kind, body)| {
                let corrupt = |source: CorruptionCause| StoreError::CorruptChange {
                    watch: watch.clone(),
                    change_id: id,
                    source,
                };
                let at = from_millis(at).map_err(corrupt)?;
                let row = EventRow {
                    id,
                    watch: watch.clone(),
                    snapshot_id,
                    at,
                    kind,
                    body,
                };
                decode(row).map_err(|e| corrupt(Box::new(e)))
            })
            .collect()
    }

    /// The stored snapshots of `watch` as (id, hash, taken_at), newest
    /// (current) first; empty for an unknown watch. Decompresses nothing.
    pub fn snapshots(&self, watch: &str) -> Result<Vec<(i64, String, SystemTime)>, StoreError> {
        let rows = self
            .db()
            .query_map(
                "SELECT id, hash, taken_at FROM snapshot WHERE watch = ?1 ORDER BY id DESC",
                args![watch],
                |mut row| {
                    Ok((
                        row.get::<i64>(0)?,
                        row.get::<String>(1)?,
                        row.get::<i64>(2)?,
                    ))
                },
            )
            .map_err(|source| watch_error(watch, "list the snapshots of", source))?;
        rows.into_iter()
            .map(|(id, hash, taken_at)| {
                let taken_at = from_millis(taken_at).map_err(|source| StoreError::Corrupt {
                    watch: watch.to_owned(),
                    snapshot_id: id,
                    source,
                })?;
                Ok((id, hash, taken_at))
            })
            .collect()
    }

    /// Every watch, ordered by id.
    pub fn watches(&self) -> Result<Vec<WatchState>, StoreError> {
        let rows = self
            .db()
            .query_map(
                "SELECT w.id, w.created_at, w.last_checked, s.id, s.hash, s.taken_at,
                        (SELECT count(*) FROM snapshot AS c WHERE c.watch = w.id)
                 FROM watch AS w
                 JOIN snapshot AS s
                   ON s.id = (SELECT max(id) FROM snapshot WHERE watch = w.id)
                 ORDER BY w.id",
                &[],
                |mut row| {
                    Ok((
                        row.get::<String>(0)?,
                        [row.get::<i64>(1)?, row.get::<i64>(2)?],
                        row.get::<i64>(3)?,
                        row.get::<String>(4)?,
                        row.get::<i64>(5)?,
                        row.get::<i64>(6)?,
                    ))
                },
            )
            .map_err(|source| StoreError::Database {
                path: self.path.clone(),
                action: "list watches".to_owned(),
                source,
            })?;
        rows.into_iter()
            .map(
                |(id, [created, checked], snapshot_id, hash, changed, count)| {
                    let watch_time = |millis| {
                        from_millis(millis).map_err(|source| StoreError::CorruptWatch {
                            watch: id.clone(),
                            source,
                        })
                    };
                    let created_at = watch_time(created)?;
                    let last_checked = watch_time(checked)?;
                    let last_changed =
                        from_millis(changed).map_err(|source| StoreError::Corrupt {
                            watch: id.clone(),
                            snapshot_id,
                            source,
                        })?;
                    Ok(WatchState {
                        id,
                        snapshot_id,
                        hash,
                        created_at,
                        last_checked,
                        last_changed,
                        snapshots: usize::try_from(count).unwrap_or(0),
                    })
                },
            )
            .collect()
    }

    /// Removes `watch` with all its snapshots and change events, in one
    /// transaction. Returns whether there was such a watch.
    pub fn remove_watch(&mut self, watch: &str) -> Result<bool, StoreError> {
        let err = |source| watch_error(watch, "remove", source);
        self.transaction(err, |db| {
            // Foreign keys cascade to snapshots and change events.
            let removed = db
                .execute("DELETE FROM watch WHERE id = ?1", args![watch])
                .map_err(err)?;
            Ok(removed > 0)
        })
    }
}

pub(super) fn watch_error(watch: &str, action: &'static str, source: DbError) -> StoreError {
    StoreError::Watch {
        watch: watch.to_owned(),
        action,
        source,
    }
}

/// What [`StoreError::Foreign`] says an SQLite file is.
const SQLITE_FOREIGN: &str = "an SQLite database";
/// What [`StoreError::Foreign`] says a PostgreSQL database is.
const POSTGRES_FOREIGN: &str = "a PostgreSQL database with other tables";

/// The schema version found, or the error refusing the database.
fn found_version(found: Found, path: &Path, what: &'static str) -> Result<u32, StoreError> {
    let supported = if what == POSTGRES_FOREIGN {
        super::pg::SCHEMA_VERSION
    } else {
        SCHEMA_VERSION
    };
    match found {
        Found::Foreign => Err(StoreError::Foreign {
            path: path.to_owned(),
            what,
        }),
        Found::TooNew(found) => Err(StoreError::TooNew {
            path: path.to_owned(),
            found,
            supported,
        }),
        Found::Version(version) => Ok(version),
    }
}

/// The current hash of `watch`.
fn current_hash(db: Db<'_>, watch: &str) -> Result<Option<String>, DbError> {
    db.query_opt(
        "SELECT hash FROM snapshot WHERE watch = ?1 ORDER BY id DESC LIMIT 1",
        args![watch],
    )?
    .map(|mut row| row.get(0))
    .transpose()
}

/// Reads the schema version and the marker. Fails with SQLite's
/// `SQLITE_NOTADB` on a file that is not a database.
fn classify_sqlite(conn: &Connection) -> rusqlite::Result<Found> {
    // PRAGMA user_version is a signed 32-bit field; semclip writes small
    // positive numbers, anything else reads as a version too new to know.
    let version = conn
        .pragma_query_value(None, "user_version", |row| row.get::<_, i32>(0))?
        .cast_unsigned();
    let objects: i64 =
        conn.query_row("SELECT count(*) FROM sqlite_schema", [], |row| row.get(0))?;
    if objects == 0 {
        return Ok(if version == 0 {
            Found::Version(0)
        } else {
            Found::Foreign
        });
    }
    // Checked through table_info first, so a foreign `meta` table of another
    // shape reads as "not ours" rather than as an SQL error.
    let marked: bool = conn.query_row(
        "SELECT (SELECT count(*) FROM pragma_table_info('meta')
                 WHERE name IN ('key', 'value')) = 2",
        [],
        |row| row.get(0),
    )?;
    let marked = marked
        && conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM meta WHERE key = 'application' AND value = ?1)",
            [APPLICATION],
            |row| row.get(0),
        )?;
    Ok(if !marked {
        Found::Foreign
    } else if version > SCHEMA_VERSION {
        Found::TooNew(version)
    } else {
        Found::Version(version)
    })
}

/// One check to write: the snapshot part of [`Store::record`].
pub(super) struct CheckWrite<'a> {
    pub(super) watch: &'a str,
    pub(super) hash: &'a str,
    /// The hierarchy, compressed (not looked at when the hash is unchanged).
    pub(super) compressed: &'a [u8],
    /// What `compressed` holds.
    pub(super) format: SnapshotFormat,
    /// Its uncompressed length.
    pub(super) size: usize,
    pub(super) at_ms: i64,
    /// (kind, JSON body) of each change event.
    pub(super) events: &'a [(&'a str, String)],
    pub(super) retention: &'a Retention,
}

/// Checks change events (JSON objects with a `"kind"` string) and turns
/// them into (kind, body) rows.
fn event_rows<'a>(
    watch: &str,
    changes: &'a [serde_json::Value],
) -> Result<Vec<(&'a str, String)>, StoreError> {
    changes
        .iter()
        .enumerate()
        .map(|(index, change)| {
            let invalid = || StoreError::InvalidChange {
                watch: watch.to_owned(),
                index,
            };
            let kind = change
                .as_object()
                .and_then(|object| object.get("kind"))
                .and_then(serde_json::Value::as_str)
                .ok_or_else(invalid)?;
            let body = serde_json::to_string(change).map_err(|_| invalid())?;
            Ok((kind, body))
        })
        .collect()
}

/// Semantic changes as (kind, JSON body) rows.
pub(super) fn change_rows(
    watch: &str,
    changes: &[Change],
) -> Result<Vec<(&'static str, String)>, StoreError> {
    changes
        .iter()
        .enumerate()
        .map(|(index, change)| {
            let body = serde_json::to_string(change).map_err(|_| StoreError::InvalidChange {
                watch: watch.to_owned(),
                index,
            })?;
            Ok((change.kind.name(), body))
        })
        .collect()
}

/// Inserts a watch's (`?1`) snapshot unless its hash (`?3`) is the
/// current snapshot's, returning its id; `$blob` is the blob parameter as
/// each engine takes it. PostgreSQL types a parameter in a select list as
/// text unless cast; SQLite has no `BYTEA` (its cast would make the blob
/// a number).
macro_rules! insert_snapshot {
    ($blob:literal) => {
        concat!(
            "INSERT INTO snapshot (watch, taken_at, hash, size, xml, format)
             SELECT CAST(?1 AS TEXT), CAST(?2 AS BIGINT), CAST(?3 AS TEXT),
                    CAST(?4 AS BIGINT), ",
            $blob,
            ", CAST(?6 AS BIGINT)
             WHERE ?3 IS DISTINCT FROM
               (SELECT hash FROM snapshot WHERE watch = ?1 ORDER BY id DESC LIMIT 1)
             RETURNING id"
        )
    };
}
const INSERT_SNAPSHOT_SQLITE: &str = insert_snapshot!("?5");
const INSERT_SNAPSHOT_POSTGRES: &str = insert_snapshot!("CAST(?5 AS BYTEA)");

/// Records one check inside a transaction: the check time, and unless the
/// hash is the current one, the new snapshot, its events and retention.
pub(super) fn write_check(db: Db<'_>, check: &CheckWrite<'_>) -> Result<Recorded, DbError> {
    let CheckWrite {
        watch,
        hash,
        compressed,
        format,
        size,
        at_ms,
        events,
        retention,
    } = *check;
    db.defer(
        "INSERT INTO watch (id, created_at, last_checked) VALUES (?1, ?2, ?2)
         ON CONFLICT (id) DO UPDATE SET last_checked = excluded.last_checked",
        args![watch, at_ms],
    )?;
    // Stored unless its hash is the current snapshot's: decided by the
    // insert itself, so that on PostgreSQL the transaction's `BEGIN`, the
    // watch's row and this go out in one round trip.
    let size = i64::try_from(size).unwrap_or(i64::MAX);
    let insert = match db {
        Db::Sqlite(_) => INSERT_SNAPSHOT_SQLITE,
        Db::Postgres(..) => INSERT_SNAPSHOT_POSTGRES,
    };
    let inserted = db.query_opt(
        insert,
        args![watch, at_ms, hash, size, compressed, format as i64],
    )?;
    let Some(mut inserted) = inserted else {
        return Ok(Recorded::Unchanged);
    };
    let snapshot_id: i64 = inserted.get(0)?;
    for (kind, body) in events {
        db.defer(
            "INSERT INTO change_event (watch, snapshot_id, at, kind, body)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            args![watch, snapshot_id, at_ms, *kind, body],
        )?;
    }
    // The snapshot just inserted is the current one (the highest id); the
    // counts pruned are not needed, so the deletes are held back too.
    let cutoff = retention_cutoff(retention, at_ms);
    db.defer(
        PRUNE_SNAPSHOTS,
        args![
            watch,
            snapshot_id,
            cutoff,
            i64::from(retention.keep_versions)
        ],
    )?;
    db.defer(PRUNE_CHANGES, args![watch, cutoff, snapshot_id])?;
    Ok(Recorded::Stored {
        snapshot_id,
        events: events.len(),
    })
}

/// Maps an error met while first reading a database: an SQLite file that is
/// "not a database" gets its own variant.
fn read_error(path: &Path, source: DbError) -> StoreError {
    if source.sqlite_code() == Some(ErrorCode::NotADatabase) {
        StoreError::NotSqlite {
            path: path.to_owned(),
            source,
        }
    } else {
        StoreError::Open {
            path: path.to_owned(),
            source,
        }
    }
}

/// Prunes one watch: snapshots first (their events lose their `snapshot_id`),
/// then events older than the cutoff that do not belong to the current
/// snapshot (`current`, its id when the caller knows it, else read).
fn apply_retention(
    db: Db<'_>,
    watch: &str,
    retention: &Retention,
    now_ms: i64,
    current: Option<i64>,
) -> Result<Pruned, DbError> {
    let cutoff = retention_cutoff(retention, now_ms);
    let current: Option<i64> = match current {
        Some(id) => Some(id),
        None => db
            .query_one(
                "SELECT max(id) FROM snapshot WHERE watch = ?1",
                args![watch],
            )?
            .get(0)?,
    };
    let snapshots = db.execute(
        PRUNE_SNAPSHOTS,
        args![watch, current, cutoff, i64::from(retention.keep_versions)],
    )?;
    let changes = db.execute(PRUNE_CHANGES, args![watch, cutoff, current])?;
    Ok(Pruned { snapshots, changes })
}

/// The oldest time `retention` keeps at `now_ms` (Unix ms).
pub(super) fn retention_cutoff(retention: &Retention, now_ms: i64) -> i64 {
    now_ms.saturating_sub(i64::from(retention.keep_days) * MILLIS_PER_DAY)
}

/// Retention's delete of a watch's snapshots (`?1`) other than the current
/// one (`?2`) older than the cutoff (`?3`) or past the newest `?4`.
const PRUNE_SNAPSHOTS: &str = "DELETE FROM snapshot
     WHERE watch = ?1 AND id IS DISTINCT FROM ?2
       AND (taken_at < ?3
            OR id NOT IN (SELECT id FROM snapshot WHERE watch = ?1
                          ORDER BY id DESC LIMIT ?4))";

/// Retention's delete of a watch's (`?1`) change events older than the
/// cutoff (`?2`), but those of the current snapshot (`?3`).
const PRUNE_CHANGES: &str = "DELETE FROM change_event
     WHERE watch = ?1 AND at < ?2 AND snapshot_id IS DISTINCT FROM ?3";

/// A snapshot row as read, before decompression.
struct SnapshotRow {
    id: i64,
    watch: String,
    hash: String,
    taken_at: i64,
    size: i64,
    blob: Vec<u8>,
    format: i64,
}

impl SnapshotRow {
    fn from_row(mut row: Row) -> Result<SnapshotRow, DbError> {
        Ok(SnapshotRow {
            id: row.get(0)?,
            watch: row.get(1)?,
            hash: row.get(2)?,
            taken_at: row.get(3)?,
            size: row.get(4)?,
            blob: row.get(5)?,
            format: row.get(6)?,
        })
    }

    fn format(&self) -> Result<SnapshotFormat, CorruptionCause> {
        SnapshotFormat::from_column(self.format)
            .ok_or_else(|| format!("unknown snapshot format {}", self.format).into())
    }

    /// The blob uncompressed.
    fn bytes(&self) -> Result<Vec<u8>, CorruptionCause> {
        let format = self.format()?;
        decompress(&self.blob, self.size, format)
    }

    /// The stored hierarchy, read back (a compact one with its ids derived
    /// if `ids`), and the vocabulary it was built under.
    fn hierarchy_and_vocabulary(&self, ids: bool) -> Result<(Hierarchy, u32), CorruptionCause> {
        let bytes = self.bytes()?;
        let vocabulary = packed::vocabulary(&bytes).unwrap_or(1);
        let h = match self.format()? {
            SnapshotFormat::ZstdPacked if ids => packed::unpack(&bytes)?,
            SnapshotFormat::ZstdPacked => packed::unpack_without_ids(&bytes)?,
            SnapshotFormat::ZlibXml | SnapshotFormat::ZstdXml => {
                read::read(&String::from_utf8(bytes)?)?
            }
        };
        Ok((h, vocabulary))
    }

    /// The stored hierarchy as XML.
    fn xml(&self) -> Result<String, CorruptionCause> {
        let bytes = self.bytes()?;
        match self.format()? {
            SnapshotFormat::ZstdPacked => {
                Ok(to_xml(&packed::unpack(&bytes)?, XmlOptions::default()))
            }
            SnapshotFormat::ZlibXml | SnapshotFormat::ZstdXml => Ok(String::from_utf8(bytes)?),
        }
    }

    fn decode(self) -> Result<Snapshot, StoreError> {
        let decoded = from_millis(self.taken_at).and_then(|taken_at| Ok((taken_at, self.xml()?)));
        match decoded {
            Ok((taken_at, xml)) => Ok(Snapshot {
                id: self.id,
                watch: self.watch,
                hash: self.hash,
                xml,
                taken_at,
            }),
            Err(source) => Err(StoreError::Corrupt {
                watch: self.watch,
                snapshot_id: self.id,
                source,
            }),
        }
    }
}

/// zstd at [`ZSTD_LEVEL`], with a frame checksum (see the module doc).
fn compress(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut encoder =
        zstd::stream::write::Encoder::new(Vec::with_capacity(bytes.len() / 4 + 64), ZSTD_LEVEL)?;
    encoder.include_checksum(true)?;
    encoder.set_pledged_src_size(u64::try_from(bytes.len()).ok())?;
    encoder.write_all(bytes)?;
    encoder.finish()
}

/// Uncompresses a stored hierarchy, reading at most its recorded size
/// (itself at most [`MAX_XML_BYTES`]) plus one byte, and checks that the
/// size matches.
fn decompress(blob: &[u8], size: i64, format: SnapshotFormat) -> Result<Vec<u8>, CorruptionCause> {
    let size = usize::try_from(size)
        .ok()
        .filter(|&size| size <= MAX_XML_BYTES)
        .ok_or_else(|| format!("recorded size {size} is out of range"))?;
    let limit = u64::try_from(size).unwrap_or(u64::MAX).saturating_add(1);
    // Allocate for what the blob can plausibly hold, not for what a damaged
    // size field claims.
    let mut xml = Vec::with_capacity(size.min(blob.len().saturating_mul(16)));
    match format {
        SnapshotFormat::ZlibXml => {
            ZlibDecoder::new(blob).take(limit).read_to_end(&mut xml)?;
        }
        SnapshotFormat::ZstdPacked | SnapshotFormat::ZstdXml => {
            zstd::stream::read::Decoder::with_buffer(blob)?
                .take(limit)
                .read_to_end(&mut xml)?;
        }
    }
    if xml.len() != size {
        return Err(format!(
            "decompresses to {}{} bytes, {size} recorded",
            if xml.len() > size { "more than " } else { "" },
            xml.len().min(size)
        )
        .into());
    }
    Ok(xml)
}

/// Unix milliseconds, truncated towards 1970.
pub(super) fn to_millis(time: SystemTime) -> Result<i64, StoreError> {
    let millis = match time.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_millis()),
        Err(before) => i64::try_from(before.duration().as_millis()).map(|millis| -millis),
    };
    millis.map_err(|_| StoreError::TimeOutOfRange { time })
}

pub(super) fn from_millis(millis: i64) -> Result<SystemTime, CorruptionCause> {
    let offset = Duration::from_millis(millis.unsigned_abs());
    let time = if millis >= 0 {
        UNIX_EPOCH.checked_add(offset)
    } else {
        UNIX_EPOCH.checked_sub(offset)
    };
    time.ok_or_else(|| format!("time {millis} ms from 1970 is out of this system's range").into())
}
