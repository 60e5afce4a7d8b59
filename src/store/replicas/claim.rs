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
//! - **One check per scheduled run.** A claim locks the watch's row in
//!   `watch_claim` with `SELECT ... FOR UPDATE SKIP LOCKED`, reads the
//!   run's next time and its lease *from that row*, and takes the lease
//!   (owner, expiry) only when the run is due and nobody else holds an
//!   unexpired lease. The check's results, the watch's next run (in
//!   `watch_status` and on its claim row) and the release of the lease are
//!   written in one transaction ([`Store::record_check`]): a replica that
//!   claims after it sees the new next run and does not check again; one
//!   that claims before it finds the lease held.
//! - **No run lost.** A replica that dies, or whose check could not be
//!   recorded, leaves its lease to expire; the next claim after the expiry
//!   takes the watch, and says whose lease it took over
//!   ([`Claim::Mine::rerun_of`]), so the daemon counts and logs the rare
//!   check run again.
//!
//! A host's politeness across replicas (`limits.host_spacing`,
//! `limits.per_host`) is kept the same way, in [`super::hosts`].
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
//! - **SQLite** has one daemon per file and keeps no claims
//!   ([`Store::replicas`] is `None`): the daemon checks every run it finds
//!   due, as a single daemon always did.
//! - **A row skipped** because another replica is claiming or recording the
//!   same watch at that instant is looked at again [`BUSY_RETRY`] later.
//! - **One round trip per claim.** The daemon sends, with the claim, the
//!   read its check starts from, which reads nothing unless the claim took
//!   the run ([`Replicas::claim_and_start`]): a check's first two
//!   round trips became one.
//! - **One statement per claim** ([`CLAIM`]): the row is
//!   inserted at a watch's first claim, locked, decided on and updated by
//!   one statement run on its own (its own transaction). Deciding inside
//!   one statement is safe because everything decided on is in the locked
//!   row, which READ COMMITTED reads in its newest committed version; the
//!   run's next time was once read from `watch_status` by a second
//!   statement after the lock (a first statement's snapshot may predate a
//!   record that committed before the lock was taken), and the claim was
//!   then five round trips in a transaction. So the claim row carries a
//!   copy of `watch_status.next_run`, written in the same transactions as
//!   it ([`note_next_run`]: at a check's record, with the lease's release;
//!   at a check request; where a status is written outside a check), and
//!   rows are kept after a record (lease released) instead of deleted.
//! - **A claim's commit is not waited for on disk** (`synchronous_commit`
//!   off for its own transaction, as for host slots): a lease is
//!   coordination, not history. PostgreSQL still makes it visible to every
//!   other session at once, and the check's record, committed durably
//!   later, flushes it with it (the WAL is written in order). A server
//!   crash can lose only the leases taken in its last moments (at most
//!   three `wal_writer_delay`s, 600 ms by default): their runs are due
//!   again, so another replica may check one while the first, once
//!   reconnected, records it too. That is the one case of a run checked
//!   twice that no lease records, and it needs a database crash. It saved
//!   one WAL flush per check.
//! - **Only a claim that takes the run writes.** A run already checked or
//!   held by another replica is answered from the statement's snapshot,
//!   with no lock: with several replicas, each one's claims of the runs
//!   the others took cost no write, no transaction id and no WAL flush.
//!
//! [`Store::record_check`]: crate::store::Store::record_check
//! [`Store::replicas`]: crate::store::Store::replicas
//! [`note_next_run`]: crate::store::state::note_next_run

use std::time::{Duration, SystemTime};

use super::Replicas;
use crate::store::core::{StoreError, from_millis, to_millis, watch_error};
use crate::store::sql::{Row, args};
use crate::store::state::{CHECK_START_IF_CLAIMED, CheckStart, check_start_of};

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

impl Replicas<'_> {
    /// Claims `watch`, due at `now` by the caller's schedule, for `owner`
    /// with a lease of `lease` (see the module's guarantees).
    pub fn claim_watch(
        &mut self,
        watch: &str,
        owner: &str,
        now: SystemTime,
        lease: Duration,
    ) -> Result<Claim, StoreError> {
        let now_ms = to_millis(now)?;
        let until_ms = to_millis(now + lease)?;
        let err = |source| watch_error(watch, "claim", source);
        // One statement, one round trip (see the module's decisions).
        let row = self
            .db()
            .query_opt(CLAIM, args![watch, owner, until_ms, now_ms])
            .map_err(err)?;
        decide(watch, owner, now, row)
    }

    /// Claims `watch` as [`Replicas::claim_watch`] does and, when the claim
    /// is the caller's, reads what its check starts from
    /// ([`Store::check_start`]). The read goes out with the claim, in the
    /// same round trip, as a statement of its own (so it sees the database
    /// after the claim, records committed just before included), and reads
    /// nothing unless the caller now holds the lease.
    ///
    /// [`Store::check_start`]: crate::store::Store::check_start
    pub fn claim_and_start(
        &mut self,
        watch: &str,
        owner: &str,
        now: SystemTime,
        lease: Duration,
    ) -> Result<(Claim, Option<CheckStart>), StoreError> {
        let now_ms = to_millis(now)?;
        let until_ms = to_millis(now + lease)?;
        let err = |source| watch_error(watch, "claim", source);
        let (claim, start) = self
            .db()
            .query_both(
                (CLAIM, args![watch, owner, until_ms, now_ms]),
                (&CHECK_START_IF_CLAIMED, args![watch, owner, until_ms]),
            )
            .map_err(err)?;
        let claim = decide(watch, owner, now, claim.into_iter().next())?;
        let start = match claim {
            Claim::Mine { .. } => check_start_of(watch, start)?,
            _ => None,
        };
        Ok((claim, start))
    }
}

/// What a claim's row (none: its row was being inserted by another claim
/// at that instant) says to the claimant `owner` at `now`.
fn decide(
    watch: &str,
    owner: &str,
    now: SystemTime,
    row: Option<Row>,
) -> Result<Claim, StoreError> {
    let now_ms = to_millis(now)?;
    let err = |source| watch_error(watch, "claim", source);
    let corrupt = |source| StoreError::CorruptWatch {
        watch: watch.to_owned(),
        source,
    };
    let Some(mut row) = row else {
        // Its row inserted by another claim at this instant.
        return Ok(Claim::Held {
            until: now + BUSY_RETRY,
        });
    };
    let owner_now: Option<String> = row.get(0).map_err(err)?;
    let until: Option<i64> = row.get(1).map_err(err)?;
    let next_run: Option<i64> = row.get(2).map_err(err)?;
    let taken: bool = row.get(3).map_err(err)?;
    let held_by_other = owner_now.as_deref().is_some_and(|o| o != owner);
    if taken {
        return Ok(Claim::Mine {
            rerun_of: owner_now.filter(|_| held_by_other),
        });
    }
    if let Some(next) = next_run.filter(|&next| next > now_ms) {
        return Ok(Claim::Done {
            next_run: from_millis(next).map_err(corrupt)?,
        });
    }
    match until.filter(|&until| held_by_other && until > now_ms) {
        Some(until) => Ok(Claim::Held {
            until: from_millis(until).map_err(corrupt)?,
        }),
        // Free in this statement's snapshot, but locked (another
        // replica claiming or recording it) or changed since.
        None => Ok(Claim::Held {
            until: now + BUSY_RETRY,
        }),
    }
}

/// The claim of one watch, in one statement (PostgreSQL): `?1` the watch,
/// `?2` the owner, `?3` the lease's end, `?4` now (Unix ms). Gives one row
/// (the lease's owner and end as found, the next run, whether the caller
/// took the lease) or none (the row is being inserted by another claim).
///
/// - `fresh` inserts the watch's row when it has none (its first claim):
///   with the caller's lease when the stored next run is due. A row
///   another claim is inserting at this instant makes it wait for that
///   claim and then do nothing.
/// - `found` locks an existing row with `FOR UPDATE SKIP LOCKED` only if
///   the caller may take it: its run due and no other replica's lease
///   unexpired. READ COMMITTED checks that condition again on the row's
///   newest version when a record committed since this statement began,
///   so the decision rests on the locked row alone; it carries the next
///   run ([`note_next_run`] keeps it equal to `watch_status.next_run`, in
///   the same transactions).
/// - `took` takes the lease on the row `found` locked.
/// - Otherwise the row as this statement's snapshot has it (`seen`) says
///   why not: done (a later next run), held (another's lease), or a row
///   that looked free but was locked or changed meanwhile. A run done or
///   held elsewhere is thus answered without locking or writing anything.
///   Such an answer may be a moment stale, and only ever on the side of
///   not checking: a snapshot older than a record shows the earlier next
///   run and a lease, both of which send the claim to the lock; the one
///   write that moves a next run earlier, a check request, also wakes
///   every replica's scheduler after it commits, whose claims see it.
///
/// [`note_next_run`]: crate::store::state::note_next_run
const CLAIM: &str = "WITH stored AS (
       SELECT (SELECT next_run FROM watch_status WHERE watch = ?1) AS next_run,
              set_config('synchronous_commit', 'off', true) AS config
     ),
     fresh AS (
       INSERT INTO watch_claim (watch, owner, lease_until, next_run)
       SELECT ?1,
              CASE WHEN due THEN CAST(?2 AS TEXT) END,
              CASE WHEN due THEN CAST(?3 AS BIGINT) END,
              next_run
       FROM (SELECT next_run, next_run IS NULL OR next_run <= CAST(?4 AS BIGINT) AS due
             FROM stored WHERE config IS NOT NULL) d
       ON CONFLICT (watch) DO NOTHING
       RETURNING CAST(NULL AS TEXT) AS owner, CAST(NULL AS BIGINT) AS lease_until,
                 next_run, owner IS NOT NULL AS taken
     ),
     found AS (
       SELECT owner, lease_until, next_run FROM watch_claim
       WHERE watch = ?1
         AND (next_run IS NULL OR next_run <= ?4)
         AND (owner IS NULL OR owner = ?2 OR lease_until IS NULL OR lease_until <= ?4)
       FOR UPDATE SKIP LOCKED
     ),
     took AS (
       UPDATE watch_claim c SET owner = ?2, lease_until = ?3
       FROM found f
       WHERE c.watch = ?1
       RETURNING c.watch
     )
     SELECT owner, lease_until, next_run, taken FROM fresh
     UNION ALL
     SELECT owner, lease_until, next_run, EXISTS (SELECT 1 FROM took) FROM found
     UNION ALL
     SELECT owner, lease_until, next_run, FALSE FROM watch_claim
     WHERE watch = ?1 AND NOT EXISTS (SELECT 1 FROM found)";
