//! Who checks a watch when several daemons share one database.
//!
//! Takes a watch that one daemon's scheduler found due, the daemon's
//! replica id, the time and a lease length; gives [`Claim::Mine`] (check it
//! now), [`Claim::Done`] (another replica checked this run: the next one is
//! at the time given) or [`Claim::Held`] (another replica is checking it,
//! its lease ends at the time given).
//!
//! # Guarantees (PostgreSQL)
//!
//! - **One check per scheduled run.** A claim takes the watch's row in
//!   `watch_claim` with `SELECT ... FOR UPDATE SKIP LOCKED`, reads the
//!   watch's stored next run and its lease, and takes the lease (owner,
//!   expiry) only when the run is due and nobody else holds an unexpired
//!   lease. The check's results, the watch's next run and the release of
//!   the lease are written in one transaction ([`Store::record_check`]): a
//!   replica that claims after it sees the new next run and does not check
//!   again; one that claims before it finds the lease held.
//! - **No run lost.** A replica that dies, or whose check could not be
//!   recorded, leaves its lease to expire; the next claim after the expiry
//!   takes the watch, and says whose lease it took over
//!   ([`Claim::Mine::rerun_of`]), so the daemon counts and logs the rare
//!   check run again.
//!
//! # Decisions
//!
//! - **The lease** is chosen by the caller from the watch's fetch settings
//!   (see [`crate::daemon::lease_for`]); a check that outlives it may be run
//!   a second time by another replica, which is counted, never silent.
//! - **Times are the replicas' clocks.** Leases and next runs are wall
//!   times written by one replica and compared by another: replicas must
//!   keep their clocks in step (NTP), as any cluster does; a skew shorter
//!   than the lease margin costs nothing.
//! - **SQLite** has one daemon per file: every claim is the caller's and
//!   nothing is written, so a single daemon works exactly as before.
//! - **A row skipped** because another replica is claiming or recording the
//!   same watch at that instant is looked at again [`BUSY_RETRY`] later.

use std::time::{Duration, SystemTime};

use super::sql::{Db, args};
use super::{Engine, Store, StoreError, from_millis, to_millis, watch_error};

/// How soon a watch whose claim row was locked by another replica is
/// looked at again.
pub const BUSY_RETRY: Duration = Duration::from_secs(1);

/// The answer to a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The caller checks the watch now.
    Mine {
        /// The replica whose expired lease this claim took over: the run
        /// it claimed is checked again.
        rerun_of: Option<String>,
    },
    /// Another replica checked this run already.
    Done {
        /// The stored next run.
        next_run: SystemTime,
    },
    /// Another replica is checking it (or claiming it at this instant).
    Held {
        /// When its lease ends (or, for a claim under way, when to look
        /// again).
        until: SystemTime,
    },
}

impl Store {
    /// Claims `watch`, due at `now` by the caller's schedule, for `owner`
    /// with a lease of `lease` (see the module's guarantees). On SQLite the
    /// claim is always the caller's.
    pub fn claim_watch(
        &mut self,
        watch: &str,
        owner: &str,
        now: SystemTime,
        lease: Duration,
    ) -> Result<Claim, StoreError> {
        if matches!(self.engine, Engine::Sqlite(_)) {
            return Ok(Claim::Mine { rerun_of: None });
        }
        let now_ms = to_millis(now)?;
        let until_ms = to_millis(now + lease)?;
        let err = |source| watch_error(watch, "claim", source);
        let corrupt = |source| StoreError::CorruptWatch {
            watch: watch.to_owned(),
            source,
        };
        self.transaction(err, |db| {
            // A row to lock, for a watch never claimed (or released).
            db.execute(
                "INSERT INTO watch_claim (watch) VALUES (?1) ON CONFLICT (watch) DO NOTHING",
                args![watch],
            )
            .map_err(err)?;
            let Some(mut row) = db
                .query_opt(
                    "SELECT owner, lease_until FROM watch_claim WHERE watch = ?1
                     FOR UPDATE SKIP LOCKED",
                    args![watch],
                )
                .map_err(err)?
            else {
                return Ok(Claim::Held {
                    until: now + BUSY_RETRY,
                });
            };
            let owner_now: Option<String> = row.get(0).map_err(err)?;
            let until: Option<i64> = row.get(1).map_err(err)?;
            // Read after the lock: a record that released the lock first is
            // seen (READ COMMITTED: a new snapshot per statement).
            let next_run = stored_next_run(db, watch).map_err(err)?;
            if let Some(next) = next_run.filter(|&next| next > now_ms) {
                return Ok(Claim::Done {
                    next_run: from_millis(next).map_err(corrupt)?,
                });
            }
            let held_by_other = owner_now.as_deref().is_some_and(|o| o != owner);
            if let (true, Some(until)) = (held_by_other, until.filter(|&u| u > now_ms)) {
                return Ok(Claim::Held {
                    until: from_millis(until).map_err(corrupt)?,
                });
            }
            db.execute(
                "UPDATE watch_claim SET owner = ?2, lease_until = ?3 WHERE watch = ?1",
                args![watch, owner, until_ms],
            )
            .map_err(err)?;
            Ok(Claim::Mine {
                rerun_of: owner_now.filter(|_| held_by_other),
            })
        })
    }

    /// Reserves a request start to `host` at least `spacing` after every
    /// start reserved before it, by any replica: returns when the request
    /// may start (`now` or later). PostgreSQL updates the host's row under
    /// its row lock, so replicas reserving at once queue behind each other;
    /// SQLite (one daemon, whose in-process limiter spaces its requests)
    /// returns `now`.
    pub fn reserve_host_start(
        &mut self,
        host: &str,
        now: SystemTime,
        spacing: Duration,
    ) -> Result<SystemTime, StoreError> {
        if matches!(self.engine, Engine::Sqlite(_)) {
            return Ok(now);
        }
        let now_ms = to_millis(now)?;
        let spacing_ms = i64::try_from(spacing.as_millis()).unwrap_or(i64::MAX);
        let err = |source| StoreError::Database {
            path: self.path.clone(),
            action: format!("reserve a request to {host}"),
            source,
        };
        let start: i64 = self
            .db()
            .query_one(
                "INSERT INTO host_turn (host, next_start)
                 VALUES (?1, CAST(?2 AS BIGINT) + CAST(?3 AS BIGINT))
                 ON CONFLICT (host) DO UPDATE SET next_start =
                   GREATEST(host_turn.next_start, CAST(?2 AS BIGINT)) + CAST(?3 AS BIGINT)
                 RETURNING next_start - CAST(?3 AS BIGINT)",
                args![host, now_ms, spacing_ms],
            )
            .and_then(|mut row| row.get(0))
            .map_err(err)?;
        from_millis(start).map_err(|source| StoreError::CorruptWatch {
            watch: format!("(host {host})"),
            source,
        })
    }

    /// Asks for `watch` to be checked at `at` (check now): its stored next
    /// run moves there, so whichever replica claims it next checks it.
    pub fn request_check(&mut self, watch: &str, at: SystemTime) -> Result<(), StoreError> {
        let at_ms = to_millis(at)?;
        self.db()
            .execute(
                "UPDATE watch_status SET next_run = ?2 WHERE watch = ?1",
                args![watch, at_ms],
            )
            .map_err(|source| watch_error(watch, "request a check of", source))
            .map(drop)
    }
}

/// The stored next run of `watch`, in milliseconds.
fn stored_next_run(db: Db<'_>, watch: &str) -> Result<Option<i64>, super::DbError> {
    db.query_opt(
        "SELECT next_run FROM watch_status WHERE watch = ?1",
        args![watch],
    )?
    .map_or(Ok(None), |mut row| row.get(0))
}

/// Releases the lease on `watch`, in the transaction that records its
/// check (a no-op on SQLite, which keeps no leases).
pub(super) fn release(db: Db<'_>, watch: &str) -> Result<(), super::DbError> {
    if let Db::Postgres(..) = db {
        db.execute("DELETE FROM watch_claim WHERE watch = ?1", args![watch])?;
    }
    Ok(())
}
