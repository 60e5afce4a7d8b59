//! The PostgreSQL engine of the store: its schema, how a database is
//! recognised and migrated, and the connections.
//!
//! # Decisions
//!
//! - **A runtime of its own.** The store is synchronous; its PostgreSQL
//!   connections are async (`tokio-postgres`, pooled by
//!   `deadpool-postgres`). The engine drives them on a runtime of its own
//!   ([`PgRuntime`], shared by every store of a pool) and each store call
//!   blocks its thread on it. The runtime is tokio's current-thread one, so
//!   the thread that blocks is the one that drives the I/O: a statement is
//!   written, waited for and read on the caller's thread, where a worker
//!   thread cost two thread wake-ups per round trip. Callers blocking at
//!   once take turns driving the runtime, which
//!   runs each one's connection whoever drives it (tokio's design for
//!   `block_on` from several threads). Nothing else lives on it: the
//!   `LISTEN` connection runs on the daemon's runtime ([`super::replicas::notice`]).
//!   So a store works the same
//!   from the daemon's blocking threads ([`super::pool::StorePool::run`])
//!   and from a plain thread (commands, tests), and the daemon's async
//!   workers never run store I/O.
//! - **Where it may be called from:** any thread that is not running an
//!   async task: a blocking thread (`spawn_blocking`, which is what
//!   `StorePool::run` uses) or a plain thread. Called from an async task,
//!   tokio refuses to block; the store turns that refusal into
//!   [`super::DbError::AsyncContext`] (tokio's message is printed too), never
//!   a silent hang or an unexplained panic.
//! - **Schema.** PostgreSQL has its own numbered migrations
//!   ([`MIGRATIONS`], [`SCHEMA_VERSION`]); the number applied is kept in the
//!   one-row table `schema_version` (SQLite keeps it in `user_version`). The
//!   schema mirrors SQLite's, column for column, with PostgreSQL's types:
//!   `BIGINT` for integers and times, `DOUBLE PRECISION`, `BYTEA`,
//!   `BOOLEAN`, identity columns for ids. The store lives in the
//!   connection's current schema (normally `public`).
//! - **Recognising a database** is as for SQLite: an empty schema becomes a
//!   store; one whose `meta` table says `application = semclip` is ours;
//!   anything else is refused untouched ([`super::StoreError::Foreign`]),
//!   and a newer schema version is refused by name
//!   ([`super::StoreError::TooNew`]).
//! - **Migrations** run one per transaction, each starting with
//!   `pg_advisory_xact_lock` on [`MIGRATION_LOCK`] and looking at the
//!   database again, so replicas that open an empty or old database at the
//!   same moment apply each migration once.
//! - **Transactions** are PostgreSQL's default `READ COMMITTED`. A check's
//!   record is one transaction, as with SQLite, or shares one with the
//!   records of the checks that finished while the previous group was
//!   being written (a group commit, [`super::pool::StorePool::record`] and
//!   `batch.rs`): each check is still recorded whole or not at all, with
//!   its next run and the release of its lease.

use std::sync::Arc;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};

use super::database::{APPLICATION, Found, PostgresUrl};
use super::sql::{Db, DbError, Held, PgRuntime, PgSession, args};

/// The PostgreSQL schema version this build writes: the number of
/// [`MIGRATIONS`] it knows.
pub const SCHEMA_VERSION: u32 = 8;

/// The key of the advisory lock migrations hold (`semclip` as ASCII).
pub const MIGRATION_LOCK: i64 = 0x0073_656d_636c_6970;

/// The most connections a pool opens.
pub const POOL_SIZE: usize = 8;

/// The PostgreSQL schema, as migrations numbered by position. As for
/// SQLite: never edit a published one, add one; `meta` and its
/// `application` row stay as they are.
const MIGRATIONS: &[&str] = &[
    // 1: everything SQLite's schema 6 holds.
    "CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    INSERT INTO meta (key, value) VALUES ('application', 'semclip');
    CREATE TABLE schema_version (version BIGINT NOT NULL);
    INSERT INTO schema_version (version) VALUES (0);

    CREATE TABLE watch (
        id           TEXT PRIMARY KEY,
        created_at   BIGINT NOT NULL,
        last_checked BIGINT NOT NULL
    );

    -- xml: the compressed hierarchy (see `format`); size: its length
    -- uncompressed. Already compressed: stored out of line, not again.
    CREATE TABLE snapshot (
        id       BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        watch    TEXT NOT NULL REFERENCES watch (id) ON DELETE CASCADE,
        taken_at BIGINT NOT NULL,
        hash     TEXT NOT NULL,
        size     BIGINT NOT NULL,
        xml      BYTEA NOT NULL,
        format   BIGINT NOT NULL DEFAULT 0
    );
    ALTER TABLE snapshot ALTER COLUMN xml SET STORAGE EXTERNAL;
    CREATE INDEX snapshot_by_watch ON snapshot (watch, id, hash, taken_at);

    CREATE TABLE change_event (
        id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        watch       TEXT NOT NULL REFERENCES watch (id) ON DELETE CASCADE,
        snapshot_id BIGINT REFERENCES snapshot (id) ON DELETE SET NULL,
        at          BIGINT NOT NULL,
        kind        TEXT NOT NULL,
        body        TEXT NOT NULL
    );
    CREATE INDEX change_event_by_watch ON change_event (watch, id);
    CREATE INDEX change_event_by_kind ON change_event (watch, kind, id);
    CREATE INDEX change_event_by_snapshot ON change_event (snapshot_id);

    CREATE TABLE watch_status (
        watch           TEXT PRIMARY KEY,
        next_run        BIGINT,
        etag            TEXT,
        last_modified   TEXT,
        last_attempt    BIGINT,
        last_success    BIGINT,
        failures        BIGINT NOT NULL DEFAULT 0,
        failing_alerted BOOLEAN NOT NULL DEFAULT FALSE,
        last_error      TEXT,
        evaluated       TEXT,
        body_hash       TEXT,
        rejected_body   TEXT
    );

    CREATE TABLE threshold_state (
        watch TEXT NOT NULL,
        name  TEXT NOT NULL,
        state TEXT NOT NULL,
        value DOUBLE PRECISION,
        node  TEXT,
        since BIGINT NOT NULL,
        PRIMARY KEY (watch, name)
    );

    CREATE TABLE threshold_value (
        id    BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        watch TEXT NOT NULL,
        name  TEXT NOT NULL,
        at    BIGINT NOT NULL,
        value DOUBLE PRECISION NOT NULL
    );
    CREATE INDEX threshold_value_by_name ON threshold_value (watch, name, at);

    CREATE TABLE outbox (
        id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        alert_id     TEXT NOT NULL,
        watch        TEXT NOT NULL,
        notifier     TEXT NOT NULL,
        created_at   BIGINT NOT NULL,
        next_attempt BIGINT NOT NULL,
        attempts     BIGINT NOT NULL DEFAULT 0,
        digest       BIGINT,
        state        TEXT NOT NULL DEFAULT 'pending',
        last_error   TEXT,
        body         TEXT NOT NULL,
        UNIQUE (alert_id, notifier)
    );
    CREATE INDEX outbox_due ON outbox (state, next_attempt);

    CREATE TABLE digest_sent (
        watch    TEXT NOT NULL,
        notifier TEXT NOT NULL,
        at       BIGINT NOT NULL,
        PRIMARY KEY (watch, notifier)
    );

    CREATE TABLE layout_state (
        watch TEXT PRIMARY KEY,
        state TEXT NOT NULL
    );

    CREATE TABLE template_set (
        name       TEXT PRIMARY KEY,
        learned_at BIGINT NOT NULL,
        pages      BIGINT NOT NULL,
        body       TEXT NOT NULL
    );",
    // 2: replicas sharing the work (see `super::claim`): who holds the
    // lease on a watch's current run, and until when (Unix ms), and each
    // host's next request start. A row is
    // deleted when its check is recorded. Outbox rows need no column: a
    // claim moves `next_attempt` to the end of its lease. No SQLite
    // counterpart: one daemon per SQLite file, whose claims are its own.
    "CREATE TABLE watch_claim (
        watch       TEXT PRIMARY KEY,
        owner       TEXT,
        lease_until BIGINT
    );
    -- The next request start to each host any replica may reserve (Unix
    -- ms): `limits.host_spacing` across replicas.
    CREATE TABLE host_turn (
        host       TEXT PRIMARY KEY,
        next_start BIGINT NOT NULL
    );",
    // 3: the cookie jars of sessions, as SQLite's schema 7.
    "CREATE TABLE session_jar (
        name         TEXT PRIMARY KEY,
        jar          TEXT NOT NULL,
        revision     BIGINT NOT NULL,
        updated_at   BIGINT NOT NULL,
        logged_in_at BIGINT
    );",
    // 4: the replicas alive and the watch set each runs (see
    // `super::replica`): its id, the set's hash, how many watches, each
    // watch's definition hash (JSON, id to hash), when it published the
    // set and its last heartbeat (Unix ms).
    "CREATE TABLE replica (
        id          TEXT PRIMARY KEY,
        watch_set   TEXT NOT NULL,
        watches     BIGINT NOT NULL,
        definitions TEXT NOT NULL,
        published   BIGINT NOT NULL,
        heartbeat   BIGINT NOT NULL
    );",
    // 5: why the last check was blocked, as SQLite's schema 8.
    "ALTER TABLE watch_status ADD COLUMN blocked TEXT;",
    // 6: a watch's claim row carries its next run (Unix ms), equal to
    // `watch_status.next_run` (written in the same transactions), and stays
    // after its check is recorded, lease released: a claim is then one
    // statement that locks one row and decides on it (see `super::claim`).
    "ALTER TABLE watch_claim ADD COLUMN next_run BIGINT;
    UPDATE watch_claim c SET next_run = s.next_run FROM watch_status s WHERE s.watch = c.watch;",
    // 7: `limits.per_host` across replicas (see `super::claim`): a host's
    // request slots, numbered from 0, each free or taken by a replica's
    // process (`owner`) until `lease_until` (Unix ms), the latest a request
    // may still run; and the requests waiting for one (`ticket`), since
    // when and when each last asked (Unix ms), so slots go first come,
    // first served.
    "CREATE TABLE host_slot (
        host        TEXT NOT NULL,
        slot        BIGINT NOT NULL,
        owner       TEXT,
        lease_until BIGINT,
        PRIMARY KEY (host, slot)
    );
    CREATE TABLE host_wait (
        host   TEXT NOT NULL,
        ticket TEXT NOT NULL,
        since  BIGINT NOT NULL,
        seen   BIGINT NOT NULL,
        PRIMARY KEY (host, ticket)
    );",
    // 8: values over time, as SQLite's schema 9.
    "CREATE TABLE series (
        id     BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        watch  TEXT NOT NULL,
        node   TEXT NOT NULL,
        source TEXT NOT NULL,
        value  DOUBLE PRECISION,
        at     BIGINT NOT NULL,
        UNIQUE (watch, node)
    );
    CREATE TABLE series_point (
        series BIGINT NOT NULL REFERENCES series (id) ON DELETE CASCADE,
        at     BIGINT NOT NULL,
        value  DOUBLE PRECISION,
        PRIMARY KEY (series, at)
    );",
];

// Each migration raises the version by one.
const _: () = assert!(MIGRATIONS.len() == SCHEMA_VERSION as usize);

/// A pool of connections to one database, with the runtime driving them.
#[derive(Clone)]
pub(crate) struct PgPool {
    pool: Pool,
    rt: Arc<PgRuntime>,
}

impl std::fmt::Debug for PgPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgPool")
            .field("status", &self.pool.status())
            .finish_non_exhaustive()
    }
}

/// One connection of a pool: what a PostgreSQL [`super::Store`] holds.
pub(crate) struct PgConn {
    pub(super) client: deadpool_postgres::Object,
    pub(super) rt: Arc<PgRuntime>,
}

impl std::fmt::Debug for PgConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgConn").finish_non_exhaustive()
    }
}

/// The TLS configuration: the system's trust store, through rustls.
pub(crate) fn tls_config() -> Result<rustls::ClientConfig, std::io::Error> {
    use rustls_platform_verifier::ConfigVerifierExt as _;
    rustls::ClientConfig::with_platform_verifier().map_err(std::io::Error::other)
}

impl PgPool {
    /// A pool of at most `size` connections to `url` (none opened yet).
    pub(crate) fn new(url: &PostgresUrl, size: usize) -> Result<PgPool, DbError> {
        PgPool::build(url, size).map_err(DbError::Setup)
    }

    fn build(url: &PostgresUrl, size: usize) -> Result<PgPool, std::io::Error> {
        let rt = Arc::new(PgRuntime::new()?);
        let manager_config = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let manager = if url.tls() {
            let tls = tokio_postgres_rustls::MakeRustlsConnect::new(tls_config()?);
            Manager::from_config(url.config().clone(), tls, manager_config)
        } else {
            Manager::from_config(url.config().clone(), tokio_postgres::NoTls, manager_config)
        };
        let pool = Pool::builder(manager)
            .max_size(size)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .build()
            .map_err(std::io::Error::other)?;
        Ok(PgPool { pool, rt })
    }

    /// A connection, opened if none is idle.
    pub(crate) fn get(&self) -> Result<PgConn, DbError> {
        // The runtime runs a connection's task only while a caller blocks
        // on it, so an idle connection has not yet seen its server go away
        // (a restart, a failover). Two yields first let the runtime read
        // pending I/O and run those tasks (tokio's current-thread scheduler
        // polls the I/O driver, then runs the tasks it woke, between two
        // polls of this future): a connection that closed is then known
        // closed, and the pool opens a new one instead of lending it.
        let client = self.rt.block_on(async {
            tokio::task::yield_now().await;
            tokio::task::yield_now().await;
            self.pool.get().await
        })??;
        Ok(PgConn {
            client,
            rt: Arc::clone(&self.rt),
        })
    }
}

impl PgConn {
    /// Queries outside a transaction.
    pub(crate) fn db(&self) -> Db<'_> {
        Db::Postgres(PgSession::Client(&self.client), &self.rt)
    }

    /// Runs `f` in one transaction: committed if it returns `Ok`, rolled
    /// back otherwise (or if `f` panics).
    ///
    /// The transaction's `BEGIN` goes out with its first statement and its
    /// `COMMIT` with its last writes ([`Db::defer`]), in the same round
    /// trips: a check's record is two round trips where a statement at a
    /// time took twelve (BENCHMARKS "Scale-out on PostgreSQL").
    pub(crate) fn transaction<R, E>(
        &mut self,
        err: impl Fn(DbError) -> E,
        f: impl FnOnce(Db<'_>) -> Result<R, E>,
    ) -> Result<R, E> {
        let mut open = OpenTx {
            client: &self.client,
            rt: &self.rt,
            held: Held::begin(),
            done: false,
        };
        let session = PgSession::Tx(open.client, &open.held);
        let r = f(Db::Postgres(session, open.rt))?;
        open.held.commit();
        let sent = open.rt.block_on(session.flush());
        sent.and_then(|sent| sent).map_err(&err)?;
        open.done = true;
        Ok(r)
    }
}

/// A transaction under way; one dropped before its commit went through
/// (an error, a panic) is rolled back, so its connection goes back to the
/// pool outside any transaction.
struct OpenTx<'a> {
    client: &'a deadpool_postgres::ClientWrapper,
    rt: &'a PgRuntime,
    held: Held,
    done: bool,
}

impl Drop for OpenTx<'_> {
    fn drop(&mut self) {
        if !self.done && self.held.sent() {
            // Best effort: after a failed commit there may be nothing to
            // roll back (PostgreSQL only warns), and a broken connection
            // is dropped by the pool.
            let _ = self.rt.block_on(self.client.batch_execute("ROLLBACK"));
        }
    }
}

/// What the current schema holds.
pub(crate) fn classify(db: Db<'_>) -> Result<Found, DbError> {
    let tables: i64 = db
        .query_one(
            "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema()",
            &[],
        )?
        .get(0)?;
    if tables == 0 {
        return Ok(Found::Version(0));
    }
    // Looked up through the catalog first, so a foreign `meta` or
    // `schema_version` of another shape reads as "not ours".
    let shaped: bool = db
        .query_one(
            "SELECT (SELECT count(*) FROM information_schema.columns
                     WHERE table_schema = current_schema() AND table_name = 'meta'
                       AND column_name IN ('key', 'value')) = 2
                AND (SELECT count(*) FROM information_schema.columns
                     WHERE table_schema = current_schema() AND table_name = 'schema_version'
                       AND column_name = 'version' AND data_type = 'bigint') = 1",
            &[],
        )?
        .get(0)?;
    if !shaped {
        return Ok(Found::Foreign);
    }
    let marked: bool = db
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM meta WHERE key = 'application' AND value = ?1)",
            args![APPLICATION],
        )?
        .get(0)?;
    if !marked {
        return Ok(Found::Foreign);
    }
    let version: Option<i64> = db
        .query_one("SELECT max(version) FROM schema_version", &[])?
        .get(0)?;
    let version = version.unwrap_or(0);
    Ok(match u32::try_from(version) {
        Ok(v) if v <= SCHEMA_VERSION => Found::Version(v),
        Ok(v) => Found::TooNew(v),
        Err(_) => Found::TooNew(u32::MAX),
    })
}

/// The next migration after `from`, if any.
pub(crate) fn migration(from: u32) -> Option<&'static str> {
    usize::try_from(from)
        .ok()
        .and_then(|i| MIGRATIONS.get(i))
        .copied()
}

/// Takes the migration lock for the rest of the transaction.
pub(crate) fn lock_migrations(db: Db<'_>) -> Result<(), DbError> {
    // `execute`: the function returns `void`, which no row type reads.
    db.execute("SELECT pg_advisory_xact_lock(?1)", args![MIGRATION_LOCK])
        .map(drop)
}

/// Records that migration `to` is applied.
pub(crate) fn set_version(db: Db<'_>, to: u32) -> Result<(), DbError> {
    db.execute(
        "UPDATE schema_version SET version = ?1",
        args![i64::from(to)],
    )
    .map(drop)
}
