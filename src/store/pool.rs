//! The stores the daemon shares: a few open connections to one database,
//! lent to the blocking threads that run checks, the outbox and the server.
//!
//! For SQLite, the pool keeps idle [`Store`]s on the file (WAL lets them
//! read side by side; writes queue). For PostgreSQL it holds a
//! `deadpool-postgres` pool of at most [`super::pg::POOL_SIZE`]
//! connections, and lends each call a [`Store`] on one of them. Either way
//! the code that calls [`StorePool::run`] sees the same [`Store`].

use std::collections::{HashSet, VecDeque};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::store::batch::SlotBack;
use crate::store::core::{Recorded, Store, StoreError};
use crate::store::database::Database;
use crate::store::pg::{POOL_SIZE, PgPool};
use crate::store::state::CheckRecord;

/// The most check records written in one transaction ([`StorePool::record`]).
pub const MAX_GROUP: usize = 64;

/// The most compressed snapshot bytes in one group (a record over it goes
/// alone): a group is one message per table, and a few pages near the
/// store's size limit must not make one of hundreds of megabytes.
pub const MAX_GROUP_BYTES: usize = 16 << 20;

/// A store call made through the pool failed.
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

/// A few open stores on one database, shared by the blocking threads that
/// run checks.
#[derive(Debug)]
pub struct StorePool {
    database: Database,
    /// The file, or the URL as a path (see [`Store::path`]).
    path: PathBuf,
    engine: Engine,
    /// Records waiting to be written as a group (PostgreSQL).
    waiting: Mutex<Waiting>,
    /// Host slots waiting to be given back (PostgreSQL).
    slots: Mutex<SlotsBack>,
}

/// Host request slots waiting to be given back, and whether their writer
/// runs.
#[derive(Debug, Default)]
struct SlotsBack {
    slots: Vec<SlotBack>,
    writing: bool,
}

/// Check records waiting for the writer, and whether it runs.
#[derive(Debug, Default)]
struct Waiting {
    records: VecDeque<(CheckRecord, Reply)>,
    writing: bool,
}

type Reply = oneshot::Sender<Result<Option<Recorded>, StoreError>>;

#[derive(Debug)]
enum Engine {
    Sqlite(Mutex<Vec<Store>>),
    Postgres(PgPool),
}

impl StorePool {
    /// Opens (creating or migrating) the store in `database`.
    ///
    /// May be called from an async task: a PostgreSQL database is opened
    /// and checked on a thread of its own, which this call waits for (as
    /// opening an SQLite file blocks too).
    pub fn open(database: Database) -> Result<StorePool, StoreError> {
        let (path, engine) = match &database {
            Database::Sqlite(path) => {
                let first = Store::open(path)?;
                (path.clone(), Engine::Sqlite(Mutex::new(vec![first])))
            }
            Database::Postgres(url) => {
                let path = PathBuf::from(url.to_string());
                let open_err = |source| StoreError::Open {
                    path: path.clone(),
                    source,
                };
                let pool = PgPool::new(url, POOL_SIZE).map_err(open_err)?;
                std::thread::scope(|scope| {
                    scope
                        .spawn(|| {
                            let conn = pool.get().map_err(open_err)?;
                            Store::set_up_postgres(conn, path.clone()).map(drop)
                        })
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                })?;
                (path, Engine::Postgres(pool))
            }
        };
        Ok(StorePool {
            database,
            path,
            engine,
            waiting: Mutex::default(),
            slots: Mutex::default(),
        })
    }

    /// The database file, or the PostgreSQL URL (without password).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether other processes (replicas) may share the database: true for
    /// PostgreSQL, false for SQLite (one daemon per file).
    pub fn shared_by_replicas(&self) -> bool {
        matches!(self.engine, Engine::Postgres(_))
    }

    /// The database the pool opened.
    pub fn database(&self) -> &Database {
        &self.database
    }

    /// Runs `f` with a store (blocking: call from a blocking thread).
    pub fn with<R>(
        &self,
        f: impl FnOnce(&mut Store) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        match &self.engine {
            Engine::Sqlite(idle) => {
                let taken = idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
                let mut store = match taken {
                    Some(store) => store,
                    None => Store::open(&self.path)?,
                };
                let result = f(&mut store);
                idle.lock().unwrap_or_else(|p| p.into_inner()).push(store);
                result
            }
            Engine::Postgres(pool) => {
                let conn = pool.get().map_err(|source| StoreError::Open {
                    path: self.path.clone(),
                    source,
                })?;
                // Dropped at the end: the connection goes back to the pool.
                let mut store = Store::on_postgres(conn, self.path.clone());
                f(&mut store)
            }
        }
    }

    /// Whether [`StorePool::record`] groups records (PostgreSQL): a caller
    /// that holds a store of its own (SQLite) writes its record with
    /// [`Store::write_record`] there instead, saving a thread hop.
    pub fn groups_records(&self) -> bool {
        matches!(self.engine, Engine::Postgres(_))
    }

    /// Writes a check's record, as [`Store::write_record`] does.
    ///
    /// PostgreSQL groups records: the records of checks that finish while
    /// a group is being written wait for it, and are then written together
    /// in one transaction (at most [`MAX_GROUP`], watches all different:
    /// [`Store::write_records`]), by one writer thread at a time. Each
    /// check is still recorded whole or not at all, with its next run; what
    /// the group shares is the statements (one per table, not one per
    /// row), the round trips and the commit, which were most of the
    /// database's CPU per check (BENCHMARKS "Scale-out on PostgreSQL").
    /// Alone, a record is written at once, as before. SQLite writes it on a
    /// blocking thread.
    pub async fn record(
        self: &Arc<Self>,
        record: CheckRecord,
    ) -> Result<Option<Recorded>, PoolError> {
        if !self.groups_records() {
            return self.run(move |s| s.write_record(&record)).await;
        }
        let (reply, written) = oneshot::channel();
        let start = {
            let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
            waiting.records.push_back((record, reply));
            !std::mem::replace(&mut waiting.writing, true)
        };
        if start {
            let writer = Writer {
                pool: Arc::clone(self),
                stopped: false,
            };
            // Dropped unrun (the runtime shutting down), the writer fails
            // what waits rather than leave it waiting.
            tokio::task::spawn_blocking(move || writer.write_waiting());
        }
        Ok(written.await.map_err(|_| PoolError::WriterLost)??)
    }

    /// Gives back `host`'s request slot `slot` if `owner` still holds it
    /// ([`Store::give_back_host_slot`]), without waiting. On PostgreSQL the
    /// slots given back while the previous ones are being written go
    /// together in one statement and transaction, written by one thread
    /// at a time: a slot waits at most for one such statement (a fraction
    /// of a millisecond), never for a group of check records, which held
    /// slots long enough to starve a busy host shared by replicas. A
    /// failure is logged: the slot is free again when its lease ends.
    /// SQLite keeps no slots; without a runtime (shutting down) nothing is
    /// written either.
    pub fn give_back_host_slot(self: &Arc<Self>, host: &str, slot: i64, owner: &Arc<str>) {
        if !self.shared_by_replicas() || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let start = {
            let mut waiting = self.slots.lock().unwrap_or_else(|p| p.into_inner());
            waiting.slots.push(SlotBack {
                host: host.to_owned(),
                slot,
                owner: Arc::clone(owner),
            });
            !std::mem::replace(&mut waiting.writing, true)
        };
        if start {
            let writer = SlotWriter {
                pool: Arc::clone(self),
                stopped: false,
            };
            tokio::task::spawn_blocking(move || writer.write_waiting());
        }
    }

    /// Runs `f` with a store on a blocking thread.
    pub async fn run<R: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&mut Store) -> Result<R, StoreError> + Send + 'static,
    ) -> Result<R, PoolError> {
        let pool = Arc::clone(self);
        Ok(tokio::task::spawn_blocking(move || pool.with(f)).await??)
    }
}

/// The thread writing grouped records: while records wait, takes a group
/// and writes it. On its way out, however it goes (done, a panic, never
/// run), it leaves no record waiting without a writer.
struct Writer {
    pool: Arc<StorePool>,
    /// Stopped by [`Writer::next_group`], with nothing waiting.
    stopped: bool,
}

impl Writer {
    fn write_waiting(mut self) {
        while let Some((records, replies)) = self.next_group() {
            let written = catch_unwind(AssertUnwindSafe(|| self.write(&records)));
            // A panic drops the replies: those checks get `WriterLost`.
            if let Ok(written) = written {
                for (reply, result) in replies.into_iter().zip(written) {
                    // The check may be gone (cancelled): nothing to tell.
                    let _ = reply.send(result);
                }
            }
        }
        self.stopped = true;
    }

    /// The next group (oldest first, each watch once, at most
    /// [`MAX_GROUP`] records and [`MAX_GROUP_BYTES`] of snapshots, the
    /// first record always); `None`, with the writer marked stopped, when
    /// nothing waits.
    fn next_group(&self) -> Option<(Vec<CheckRecord>, Vec<Reply>)> {
        let mut waiting = self.pool.waiting.lock().unwrap_or_else(|p| p.into_inner());
        if waiting.records.is_empty() {
            waiting.writing = false;
            return None;
        }
        let mut watches = HashSet::new();
        let mut later = VecDeque::new();
        let (mut records, mut replies) = (Vec::new(), Vec::new());
        let mut bytes = 0;
        while records.len() < MAX_GROUP
            && let Some((record, reply)) = waiting.records.pop_front()
        {
            let more = record.snapshot_bytes();
            if !records.is_empty() && bytes + more > MAX_GROUP_BYTES {
                // Over the group's bytes: first in the next group.
                later.push_back((record, reply));
                break;
            }
            if watches.insert(record.watch().to_owned()) {
                bytes += more;
                records.push(record);
                replies.push(reply);
            } else {
                // The same watch again: in the next group, after this one.
                later.push_back((record, reply));
            }
        }
        later.append(&mut waiting.records);
        waiting.records = later;
        Some((records, replies))
    }

    /// Writes a group: one result per record.
    fn write(&self, records: &[CheckRecord]) -> Vec<Result<Option<Recorded>, StoreError>> {
        let mut each = None;
        let grouped = self.pool.with(|store| {
            each = Some(store.write_records(records));
            Ok(())
        });
        match (grouped, each) {
            (Ok(()), Some(results)) => results,
            // No connection: each record tries alone, and says why it failed.
            _ => records
                .iter()
                .map(|r| self.pool.with(|store| store.write_record(r)))
                .collect(),
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if self.stopped {
            return;
        }
        // A panic, or never run: what waits is failed (its replies
        // dropped), and the next record starts a writer again.
        let mut waiting = self.pool.waiting.lock().unwrap_or_else(|p| p.into_inner());
        waiting.records.clear();
        waiting.writing = false;
    }
}

/// The thread giving back host slots: while slots wait, gives them all
/// back in one statement. Dropped unrun or by a panic, it leaves none
/// waiting without a writer (they are dropped: free when their leases
/// end).
struct SlotWriter {
    pool: Arc<StorePool>,
    /// Stopped with nothing waiting.
    stopped: bool,
}

impl SlotWriter {
    fn write_waiting(mut self) {
        loop {
            let slots = {
                let mut waiting = self.pool.slots.lock().unwrap_or_else(|p| p.into_inner());
                if waiting.slots.is_empty() {
                    waiting.writing = false;
                    self.stopped = true;
                    return;
                }
                std::mem::take(&mut waiting.slots)
            };
            if let Err(error) = self.pool.with(|store| store.give_back_host_slots(&slots)) {
                tracing::warn!(slots = slots.len(),
                    error = %format!("{:#}", anyhow::Error::from(error)),
                    "cannot give back request slots; each is free again when its lease ends");
            }
        }
    }
}

impl Drop for SlotWriter {
    fn drop(&mut self) {
        if self.stopped {
            return;
        }
        let mut waiting = self.pool.slots.lock().unwrap_or_else(|p| p.into_inner());
        waiting.slots.clear();
        waiting.writing = false;
    }
}
