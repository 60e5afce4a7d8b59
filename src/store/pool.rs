//! The stores the daemon shares: a few open connections to one database,
//! lent to the blocking threads that run checks, the outbox and the server.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::store::{Store, StoreError};

/// A store call made through the pool failed.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The blocking thread running the call panicked or was cancelled.
    #[error("a store worker thread failed")]
    Worker(#[from] tokio::task::JoinError),
}

/// A few open stores on one file, shared by the blocking threads that run
/// checks (SQLite in WAL mode lets them read side by side; writes queue).
#[derive(Debug)]
pub struct StorePool {
    path: PathBuf,
    idle: Mutex<Vec<Store>>,
}

impl StorePool {
    /// Opens (creating or migrating) the store at `path`.
    pub fn open(path: PathBuf) -> Result<StorePool, StoreError> {
        let first = Store::open(&path)?;
        Ok(StorePool {
            path,
            idle: Mutex::new(vec![first]),
        })
    }

    /// The database file.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Runs `f` with a store (blocking: call from a blocking thread).
    pub fn with<R>(
        &self,
        f: impl FnOnce(&mut Store) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        let taken = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let mut store = match taken {
            Some(store) => store,
            None => Store::open(&self.path)?,
        };
        let result = f(&mut store);
        self.idle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(store);
        result
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
