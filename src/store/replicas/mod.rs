//! Replicas as a capability: what daemons sharing one PostgreSQL database
//! coordinate through it.
//!
//! Takes a store on PostgreSQL ([`Store::replicas`]) or the daemon's store
//! pool on PostgreSQL ([`StorePool::replicas`]); gives a [`Replicas`] on
//! one connection, or the pool's [`ReplicaPool`], whose methods are
//! everything replicas do together:
//!
//! - the claims of scheduled runs, a lease per run ([`claim`]);
//! - each host's request starts, request slots and queue of waiting
//!   requests ([`hosts`]);
//! - the notices between replicas, `NOTIFY` and `LISTEN` ([`notice`]);
//! - the watch sets the replicas run and their heartbeats ([`watch_set`]);
//! - the grouped writes: several checks' records in one transaction, and
//!   host slots given back in one statement ([`batch`]), by the pool's
//!   writer threads ([`pool`]).
//!
//! # Decisions
//!
//! - **A capability, not a mode.** SQLite has one daemon per file: there
//!   is nothing to claim, reserve, announce or compare, so nothing here
//!   has an SQLite version. [`Store::replicas`] and
//!   [`StorePool::replicas`] are `None` on SQLite, and the caller
//!   branches once on that: the daemon's claim, its replica view, its
//!   notices and its listener, and the check engine's shared host limits.
//!   No method here does nothing on one engine, and none asks which engine
//!   it runs on: a [`Replicas`] holds a PostgreSQL connection. This is the
//!   shape of atuin's per-engine database code (what one engine does is
//!   that engine's type, not a branch inside a shared one); before, a
//!   dozen `Store` methods began with "on SQLite, return at once".
//! - **Moved, not changed.** The statements, their number and the round
//!   trips per check are the ones BENCHMARKS.md measured ("Scale-out on
//!   PostgreSQL"); only where they live changed.
//! - **Two handles, as the store has two.** A [`Replicas`] borrows one
//!   store's connection, as a [`Store`] is one connection. A
//!   [`ReplicaPool`] is the pool's, shared by the daemon's tasks: it lends
//!   a [`Replicas`] on a pooled connection ([`ReplicaPool::run`]), owns
//!   the writers that group records and slot give-backs, and listens for
//!   notices. A [`StorePool`] on PostgreSQL holds one, on the same
//!   connections; [`StorePool::record`] hands records to it.
//! - **What stays outside.** A check's record, written alike on both
//!   engines, also copies the watch's next run onto its claim row on
//!   PostgreSQL, in the record's own transaction (`note_next_run` in
//!   `state.rs`); a check-now moves the stored next run on both engines
//!   ([`Store::request_check`]). Those are writes of a watch's status,
//!   not coordination, and stay with the status. The outbox's claim
//!   ([`Store::claim_alerts`]) stays with the outbox: it is the same
//!   statement on both engines, SQLite's without `SKIP LOCKED`.
//!
//! [`StorePool::replicas`]: crate::store::pool::StorePool::replicas
//! [`StorePool::record`]: crate::store::pool::StorePool::record
//! [`StorePool`]: crate::store::pool::StorePool

use std::path::Path;

use super::core::{Engine, Store, StoreError};
use super::pg::PgConn;
use super::sql::{Db, DbError};

mod batch;
mod claim;
mod hosts;
pub mod notice;
mod pool;
pub mod watch_set;

pub use batch::SlotBack;
pub use claim::{BUSY_RETRY, Claim};
pub use hosts::{SlotWaiter, WAIT_ALIVE};
pub use pool::{MAX_GROUP, MAX_GROUP_BYTES, ReplicaPool};

/// The coordination between replicas, on one PostgreSQL connection: what
/// a [`Store`] on PostgreSQL offers besides its data ([`Store::replicas`]).
/// Its methods are in the files of this module, one per concern.
#[derive(Debug)]
pub struct Replicas<'a> {
    conn: &'a mut PgConn,
    /// The URL as a path (see [`Store::path`]), for messages.
    path: &'a Path,
}

impl<'a> Replicas<'a> {
    fn new(conn: &'a mut PgConn, path: &'a Path) -> Replicas<'a> {
        Replicas { conn, path }
    }

    /// Where statements outside a transaction run.
    fn db(&self) -> Db<'_> {
        self.conn.db()
    }

    /// Runs `f` in one transaction (see [`Store::transaction`]).
    fn transaction<R>(
        &mut self,
        err: impl Fn(DbError) -> StoreError,
        f: impl FnOnce(Db<'_>) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        self.conn.transaction(err, f)
    }

    /// A function making a [`StoreError::Database`] for `action`.
    fn error(&self, action: &str) -> impl Fn(DbError) -> StoreError + use<> {
        let path = self.path.to_owned();
        let action = action.to_owned();
        move |source| StoreError::Database {
            path: path.clone(),
            action: action.clone(),
            source,
        }
    }
}

impl Store {
    /// The coordination between replicas on this store's connection:
    /// `Some` on PostgreSQL, which several daemons may share; `None` on
    /// SQLite, which one daemon has to itself (see [`crate::store::replicas`]).
    pub fn replicas(&mut self) -> Option<Replicas<'_>> {
        match &mut self.engine {
            Engine::Postgres(conn) => Some(Replicas::new(conn, &self.path)),
            Engine::Sqlite(_) => None,
        }
    }
}
