//! The replicas' side of the daemon's store pool: the coordination its
//! tasks share, on the pool's PostgreSQL connections.
//!
//! Takes the pool's connections ([`StorePool::replicas`] makes one
//! [`ReplicaPool`] per PostgreSQL pool); gives a [`Replicas`] on a pooled
//! connection to a blocking thread ([`ReplicaPool::run`]), the grouped
//! writer of check records ([`ReplicaPool::record`]) and of host slots
//! given back ([`ReplicaPool::give_back_host_slot`]), and the listener for
//! the other replicas' notices ([`ReplicaPool::listen`]).
//!
//! # Decisions
//!
//! - **One writer thread at a time per kind.** The records of checks that
//!   finish while a group is being written wait for it, and are then
//!   written together (at most [`MAX_GROUP`] records, [`MAX_GROUP_BYTES`]
//!   of snapshots, watches all different: [`Replicas::write_records`]).
//!   Slots given back while the previous ones are being written go
//!   together in one statement, by a writer of their own: a slot never
//!   waits for a group of records (which held slots long enough to starve
//!   a busy host shared by replicas).
//! - **A writer that dies fails what waits** (a panic, or a runtime
//!   shutting down before it ran): a record waiting for it is told
//!   [`PoolError::WriterLost`], a slot is free again when its lease ends;
//!   the next one starts a writer again.
//!
//! [`StorePool::replicas`]: crate::store::pool::StorePool::replicas

use std::collections::{HashSet, VecDeque};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::Replicas;
use super::batch::SlotBack;
use super::notice::{self, Announcement};
use crate::store::core::{PoolError, Recorded, StoreError};
use crate::store::database::PostgresUrl;
use crate::store::pg::PgPool;
use crate::store::state::CheckRecord;
use crate::sync::lock;

/// The most check records written in one transaction ([`ReplicaPool::record`]).
pub const MAX_GROUP: usize = 64;

/// The most compressed snapshot bytes in one group (a record over it goes
/// alone): a group is one message per table, and a few pages near the
/// store's size limit must not make one of hundreds of megabytes.
pub const MAX_GROUP_BYTES: usize = 16 << 20;

/// The coordination between replicas that a daemon's tasks share: the
/// PostgreSQL side of its [`StorePool`](crate::store::pool::StorePool).
#[derive(Debug)]
pub struct ReplicaPool {
    /// The database, for the listening connection.
    url: PostgresUrl,
    /// The URL as a path (see [`crate::store::Store::path`]).
    path: PathBuf,
    /// The pool's connections (shared with its [`StorePool`]).
    ///
    /// [`StorePool`]: crate::store::pool::StorePool
    connections: PgPool,
    /// Records waiting to be written as a group.
    waiting: Mutex<Waiting>,
    /// Host slots waiting to be given back.
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

impl ReplicaPool {
    /// The coordination over `connections`, a pool on the database at
    /// `url` (shown as `path`).
    pub(in crate::store) fn new(
        url: PostgresUrl,
        path: PathBuf,
        connections: PgPool,
    ) -> ReplicaPool {
        ReplicaPool {
            url,
            path,
            connections,
            waiting: Mutex::default(),
            slots: Mutex::default(),
        }
    }

    /// Runs `f` with the coordination on a pooled connection (blocking:
    /// call from a blocking thread).
    pub fn with<R>(
        &self,
        f: impl FnOnce(&mut Replicas<'_>) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        let mut conn = self.connections.get().map_err(|source| StoreError::Open {
            path: self.path.clone(),
            source,
        })?;
        // Dropped at the end: the connection goes back to the pool.
        f(&mut Replicas::new(&mut conn, &self.path))
    }

    /// Runs `f` with the coordination on a pooled connection, on a
    /// blocking thread.
    pub async fn run<R: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&mut Replicas<'_>) -> Result<R, StoreError> + Send + 'static,
    ) -> Result<R, PoolError> {
        let pool = Arc::clone(self);
        Ok(tokio::task::spawn_blocking(move || pool.with(f)).await??)
    }

    /// Writes a check's record, as [`Store::write_record`] does, grouped
    /// with the records of the checks that finish while a group is being
    /// written (see the module's decisions): each check is still recorded
    /// whole or not at all, with its next run; what the group shares is the
    /// statements (one per table, not one per row), the round trips and
    /// the commit, which were most of the database's CPU per check
    /// (BENCHMARKS "Scale-out on PostgreSQL"). Alone, a record is written
    /// at once.
    ///
    /// [`Store::write_record`]: crate::store::Store::write_record
    pub async fn record(
        self: &Arc<Self>,
        record: CheckRecord,
    ) -> Result<Option<Recorded>, PoolError> {
        let (reply, written) = oneshot::channel();
        let start = {
            let mut waiting = lock(&self.waiting);
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
    /// ([`Replicas::give_back_host_slot`]), without waiting: the slots
    /// given back while the previous ones are being written go together in
    /// one statement and transaction, written by one thread at a time, so
    /// a slot waits at most for one such statement (a fraction of a
    /// millisecond). A failure is logged: the slot is free again when its
    /// lease ends. Without a runtime (shutting down) nothing is written.
    pub fn give_back_host_slot(self: &Arc<Self>, host: &str, slot: i64, owner: &Arc<str>) {
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let start = {
            let mut waiting = lock(&self.slots);
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

    /// Listens for the replicas' notices on a connection of its own until
    /// `shutdown`, handing each to `heard` (this replica's own included);
    /// `listening` is called each time the connection listens (again).
    /// See [`notice`].
    pub async fn listen(
        &self,
        heard: impl FnMut(Announcement),
        listening: impl FnMut(),
        shutdown: CancellationToken,
    ) {
        notice::listen(&self.url, heard, listening, shutdown).await;
    }
}

/// The thread writing grouped records: while records wait, takes a group
/// and writes it. On its way out, however it goes (done, a panic, never
/// run), it leaves no record waiting without a writer.
struct Writer {
    pool: Arc<ReplicaPool>,
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
        let mut waiting = lock(&self.pool.waiting);
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
        let grouped = self.pool.with(|replicas| {
            each = Some(replicas.write_records(records));
            Ok(())
        });
        match (grouped, each) {
            (Ok(()), Some(results)) => results,
            // No connection: each record tries alone, and says why it failed.
            _ => records
                .iter()
                .map(|r| self.pool.with(|replicas| replicas.write_record(r)))
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
        let mut waiting = lock(&self.pool.waiting);
        waiting.records.clear();
        waiting.writing = false;
    }
}

/// The thread giving back host slots: while slots wait, gives them all
/// back in one statement. Dropped unrun or by a panic, it leaves none
/// waiting without a writer (they are dropped: free when their leases
/// end).
struct SlotWriter {
    pool: Arc<ReplicaPool>,
    /// Stopped with nothing waiting.
    stopped: bool,
}

impl SlotWriter {
    fn write_waiting(mut self) {
        loop {
            let slots = {
                let mut waiting = lock(&self.pool.slots);
                if waiting.slots.is_empty() {
                    waiting.writing = false;
                    self.stopped = true;
                    return;
                }
                std::mem::take(&mut waiting.slots)
            };
            if let Err(error) = self
                .pool
                .with(|replicas| replicas.give_back_host_slots(&slots))
            {
                tracing::warn!(slots = slots.len(),
                    error = %crate::ErrorChain(&error),
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
        let mut waiting = lock(&self.pool.slots);
        waiting.slots.clear();
        waiting.writing = false;
    }
}
