//! The stores the daemon shares: a few open connections to one database,
//! lent to the blocking threads that run checks, the outbox and the server.
//!
//! For SQLite, the pool keeps idle [`Store`]s on the file (WAL lets them
//! read side by side; writes queue). For PostgreSQL it holds a
//! `deadpool-postgres` pool of at most [`super::pg::POOL_SIZE`]
//! connections, and lends each call a [`Store`] on one of them. Either way
//! the code that calls [`StorePool::run`] sees the same [`Store`].
//!
//! On PostgreSQL the pool also holds the replicas' side of it
//! ([`StorePool::replicas`], a [`ReplicaPool`] on the same connections):
//! the coordination between the daemons sharing the database, and the
//! writer that groups check records ([`StorePool::record`] hands them to
//! it). SQLite has none: one daemon per file.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::store::core::{Recorded, Store, StoreError};
use crate::store::database::Database;
use crate::store::pg::{POOL_SIZE, PgPool};
use crate::store::replicas::ReplicaPool;
use crate::store::state::CheckRecord;
use crate::sync::lock;

pub use crate::store::core::PoolError;

/// A few open stores on one database, shared by the blocking threads that
/// run checks.
#[derive(Debug)]
pub struct StorePool {
    database: Database,
    /// The file, or the URL as a path (see [`Store::path`]).
    path: PathBuf,
    engine: Engine,
}

#[derive(Debug)]
enum Engine {
    Sqlite(Mutex<Vec<Store>>),
    /// The connections, and the replicas' coordination on them.
    Postgres(PgPool, Arc<ReplicaPool>),
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
                let replicas = ReplicaPool::new(url.clone(), path.clone(), pool.clone());
                (path, Engine::Postgres(pool, Arc::new(replicas)))
            }
        };
        Ok(StorePool {
            database,
            path,
            engine,
        })
    }

    /// The database file, or the PostgreSQL URL (without password).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The coordination between the replicas sharing the database, on
    /// this pool's connections: `Some` on PostgreSQL, which other processes
    /// (replicas) may share; `None` on SQLite (one daemon per file). See
    /// [`crate::store::replicas`].
    pub fn replicas(&self) -> Option<&Arc<ReplicaPool>> {
        match &self.engine {
            Engine::Sqlite(_) => None,
            Engine::Postgres(_, replicas) => Some(replicas),
        }
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
                let taken = lock(idle).pop();
                let mut store = match taken {
                    Some(store) => store,
                    None => Store::open(&self.path)?,
                };
                let result = f(&mut store);
                lock(idle).push(store);
                result
            }
            Engine::Postgres(pool, _) => {
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

    /// Writes a check's record, as [`Store::write_record`] does: on
    /// PostgreSQL grouped with other checks' records
    /// ([`ReplicaPool::record`]); on SQLite on a blocking thread (a caller
    /// that holds a store of its own writes it there instead, saving a
    /// thread hop).
    pub async fn record(
        self: &Arc<Self>,
        record: CheckRecord,
    ) -> Result<Option<Recorded>, PoolError> {
        match self.replicas() {
            Some(replicas) => replicas.record(record).await,
            None => self.run(move |s| s.write_record(&record)).await,
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
