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
//! Also here, a host's politeness across replicas: each request start is
//! reserved on the host's row ([`Store::reserve_host_start`],
//! `limits.host_spacing`), and each request takes one of the host's
//! `per_host` slots for as long as it runs ([`Store::take_host_slot`],
//! `limits.per_host`).
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
//! - **One round trip per claim.** The daemon sends, with the claim, the
//!   read its check starts from, which reads nothing unless the claim took
//!   the run (`Store::claim_and_start`, in `state.rs`): a check's first two
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

use std::time::{Duration, SystemTime};

use super::core::{Engine, Store, StoreError, from_millis, to_millis, watch_error};
use super::sql::{Db, args};

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
    /// Maps a database error met on `host`'s rows while doing `action`.
    fn host_error<'a>(
        &'a self,
        action: &'a str,
        host: &'a str,
    ) -> impl Fn(super::sql::DbError) -> StoreError + 'a {
        move |source| StoreError::Database {
            path: self.path.clone(),
            action: format!("{action} {host}"),
            source,
        }
    }

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
        // One statement, one round trip (see the module's decisions).
        let row = self
            .db()
            .query_opt(CLAIM, args![watch, owner, until_ms, now_ms])
            .map_err(err)?;
        decide(watch, owner, now, row)
    }
}

/// What a claim's row (none: its row was being inserted by another claim
/// at that instant) says to the claimant `owner` at `now`.
pub(super) fn decide(
    watch: &str,
    owner: &str,
    now: SystemTime,
    row: Option<super::sql::Row>,
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

impl Store {
    /// Reserves a request start to `host` at least `spacing` after every
    /// start reserved before it, by any replica: returns when the request
    /// may start (`now` or later). PostgreSQL updates the host's row under
    /// its row lock, so replicas reserving at once queue behind each other,
    /// and commits without waiting for the WAL flush (a database crash can
    /// lose only the reservations of its last moments; the claim's reasons
    /// in the module doc); SQLite (one daemon, whose in-process limiter
    /// spaces its requests) returns `now`.
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
        let err = self.host_error("reserve a request to", host);
        let start: i64 = self
            .db()
            .query_one(
                "INSERT INTO host_turn (host, next_start)
                 SELECT CAST(?1 AS TEXT), CAST(?2 AS BIGINT) + CAST(?3 AS BIGINT)
                 WHERE set_config('synchronous_commit', 'off', true) IS NOT NULL
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

    /// Takes one of `host`'s `per_host` request slots for `owner` until
    /// `until` (the latest the request may still run): gives the slot's
    /// number, or `None` when every slot is taken by an unexpired lease (or
    /// being taken at this instant), or when the slots free now are owed
    /// to requests that have waited longer. PostgreSQL only; SQLite (one
    /// daemon, whose own limiter counts its requests) always gives slot 0.
    ///
    /// **First come, first served.** `waiter` is the request asking: its
    /// ticket (unique), since when it has waited, and whether it queues.
    /// A request that queues (every ask after its first one failed) is
    /// noted in `host_wait` with the time of this ask; a slot free now goes
    /// to this request only if fewer requests than there are free slots
    /// have waited longer and asked within [`WAIT_ALIVE`]. Without this, a
    /// request that just arrived (often the next check of the watch that
    /// just gave a slot back) would take the slot before the requests
    /// asking again at intervals, and could starve them. A request taken
    /// or given up leaves the queue ([`Store::leave_host_queue`]); one that
    /// vanished stops counting once it has not asked for [`WAIT_ALIVE`].
    ///
    /// A host's slot rows are made beforehand ([`ensure`]), once per
    /// host and process. The take is committed without waiting for the WAL
    /// flush (`synchronous_commit` off for its own transaction): a slot is
    /// politeness, not data, and a PostgreSQL crash that loses a take
    /// costs at most a moment with one request more in flight to a host.
    ///
    /// [`ensure`]: Store::ensure_host_slots
    #[allow(
        clippy::too_many_arguments,
        reason = "one statement's parameters: host, owner, lease, limits and clock"
    )]
    pub fn take_host_slot(
        &mut self,
        host: &str,
        per_host: usize,
        owner: &str,
        now: SystemTime,
        until: SystemTime,
        waiter: &SlotWaiter<'_>,
    ) -> Result<Option<i64>, StoreError> {
        if matches!(self.engine, Engine::Sqlite(_)) {
            return Ok(Some(0));
        }
        let per_host = i64::try_from(per_host).unwrap_or(i64::MAX);
        let alive_ms = i64::try_from(WAIT_ALIVE.as_millis()).unwrap_or(i64::MAX);
        let err = self.host_error("take a request slot of", host);
        let row = self
            .db()
            .query_opt(
                TAKE_SLOT,
                args![
                    host,
                    per_host,
                    owner,
                    to_millis(now)?,
                    to_millis(until)?,
                    waiter.ticket,
                    to_millis(waiter.since)?,
                    waiter.queues,
                    alive_ms
                ],
            )
            .map_err(&err)?;
        row.map(|mut row| row.get::<i64>(0))
            .transpose()
            .map_err(err)
    }

    /// Takes `ticket` out of `host`'s queue of requests waiting for a slot
    /// (it got one, or gave up), and clears out waits nobody has renewed
    /// for a minute. Committed without waiting for the WAL flush, as the
    /// take.
    pub fn leave_host_queue(
        &mut self,
        host: &str,
        ticket: &str,
        now: SystemTime,
    ) -> Result<(), StoreError> {
        if matches!(self.engine, Engine::Sqlite(_)) {
            return Ok(());
        }
        self.db()
            .execute(
                "DELETE FROM host_wait
                 WHERE host = ?1 AND (ticket = ?2 OR seen < CAST(?3 AS BIGINT) - 60000)
                   AND set_config('synchronous_commit', 'off', true) IS NOT NULL",
                args![host, ticket, to_millis(now)?],
            )
            .map(drop)
            .map_err(self.host_error("leave the queue for a request slot of", host))
    }

    /// Makes sure `host` has its `per_host` slot rows (slots `0..per_host`;
    /// rows past a lowered `per_host` are left, and ignored by
    /// [`Store::take_host_slot`]).
    pub fn ensure_host_slots(&mut self, host: &str, per_host: usize) -> Result<(), StoreError> {
        if matches!(self.engine, Engine::Sqlite(_)) {
            return Ok(());
        }
        let per_host = i64::try_from(per_host).unwrap_or(i64::MAX);
        self.db()
            .execute(
                "INSERT INTO host_slot (host, slot)
                 SELECT ?1, n FROM generate_series(0, CAST(?2 AS BIGINT) - 1) AS n
                 ON CONFLICT (host, slot) DO NOTHING",
                args![host, per_host],
            )
            .map(drop)
            .map_err(self.host_error("make the request slots of", host))
    }

    /// Gives `host`'s slot `slot` back, if `owner` still holds it (a lease
    /// that ran out may have been taken by another replica since).
    /// Committed without waiting for the WAL flush, as the take.
    pub fn give_back_host_slot(
        &mut self,
        host: &str,
        slot: i64,
        owner: &str,
    ) -> Result<(), StoreError> {
        if matches!(self.engine, Engine::Sqlite(_)) {
            return Ok(());
        }
        self.db()
            .execute(
                "UPDATE host_slot SET owner = NULL, lease_until = NULL
                 WHERE host = ?1 AND slot = ?2 AND owner = ?3
                   AND set_config('synchronous_commit', 'off', true) IS NOT NULL",
                args![host, slot, owner],
            )
            .map(drop)
            .map_err(self.host_error("give back a request slot of", host))
    }

    /// Asks for `watch` to be checked at `at` (check now): its stored next
    /// run moves there, so whichever replica claims it next checks it.
    pub fn request_check(&mut self, watch: &str, at: SystemTime) -> Result<(), StoreError> {
        let at_ms = to_millis(at)?;
        let err = |source| watch_error(watch, "request a check of", source);
        self.transaction(err, |db| {
            db.execute(
                "UPDATE watch_status SET next_run = ?2 WHERE watch = ?1",
                args![watch, at_ms],
            )
            .and_then(|_| note_next_run(db, watch, Some(at_ms), false))
            .map_err(err)
        })
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
pub(super) const CLAIM: &str = "WITH stored AS (
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

/// How long a request waiting for a host slot counts as waiting after it
/// last asked: waiters ask every 100 to 150 ms, so one silent this long is
/// gone (its check cancelled, its process dead) and must not hold others
/// back.
pub const WAIT_ALIVE: Duration = Duration::from_secs(2);

/// A request asking for a host slot (see [`Store::take_host_slot`]).
#[derive(Debug, Clone, Copy)]
pub struct SlotWaiter<'a> {
    /// Unique among all requests of all replicas.
    pub ticket: &'a str,
    /// When it began to wait.
    pub since: SystemTime,
    /// Whether it is noted in the queue (every ask after its first).
    pub queues: bool,
}

/// The take of a request slot (PostgreSQL): `?1` the host, `?2`
/// `per_host`, `?3` the owner, `?4` now, `?5` the lease's end (Unix ms),
/// `?6` the waiter's ticket, `?7` since when it waits, `?8` whether it
/// queues, `?9` [`WAIT_ALIVE`] in ms. One row with the slot taken, or
/// none.
///
/// - `me` notes (or renews) the waiter in `host_wait`, when it queues.
/// - `ahead` counts the live waiters that came before it (earlier
///   `since`, the ticket breaking ties); its `set_config` turns
///   `synchronous_commit` off for this statement's own transaction (see
///   [`Store::take_host_slot`]), in a query that always runs.
/// - `free` locks the lowest free slots below `per_host` (no owner, or a
///   lease run out) with `SKIP LOCKED`, so that replicas taking at once
///   get different slots: one more than there are waiters ahead, no more
///   (locking a row writes it: locking every free slot of a host made this
///   the costliest statement of a check, BENCHMARKS "Scale-out on
///   PostgreSQL").
/// - `pick` is the lowest of them, if there are more free slots than
///   waiters ahead; the update takes it.
const TAKE_SLOT: &str = "WITH me AS (
       INSERT INTO host_wait (host, ticket, since, seen)
       SELECT ?1, ?6, ?7, ?4 WHERE CAST(?8 AS BOOLEAN)
       ON CONFLICT (host, ticket) DO UPDATE SET seen = excluded.seen
     ),
     ahead AS (
       SELECT (SELECT count(*) FROM host_wait
               WHERE host = ?1 AND ticket <> ?6
                 AND seen >= CAST(?4 AS BIGINT) - CAST(?9 AS BIGINT)
                 AND (since < ?7 OR (since = ?7 AND ticket < ?6))) AS n,
              set_config('synchronous_commit', 'off', true) AS config
     ),
     free AS (
       SELECT slot FROM host_slot
       WHERE host = ?1 AND slot < ?2
         AND (lease_until IS NULL OR lease_until <= ?4)
       ORDER BY slot
       LIMIT (SELECT n FROM ahead) + 1
       FOR UPDATE SKIP LOCKED
     ),
     pick AS (
       SELECT min(slot) AS slot FROM free
       HAVING count(*) > (SELECT n FROM ahead WHERE config IS NOT NULL)
     )
     UPDATE host_slot h SET owner = ?3, lease_until = ?5
     FROM pick WHERE h.host = ?1 AND h.slot = pick.slot
     RETURNING h.slot";

/// Notes `watch`'s next run `next_run_ms` on its claim row, if it has one
/// (PostgreSQL only; SQLite keeps no claims): in the transaction that
/// records its check, releasing the lease too (`release`; the row stays,
/// so the next claim is one update of it), and wherever
/// `watch_status.next_run` is written outside a check (the lease, if any,
/// stays).
pub(super) fn note_next_run(
    db: Db<'_>,
    watch: &str,
    next_run_ms: Option<i64>,
    release: bool,
) -> Result<(), super::sql::DbError> {
    if let Db::Postgres(..) = db {
        let sql = if release {
            "UPDATE watch_claim SET owner = NULL, lease_until = NULL, next_run = ?2
             WHERE watch = ?1"
        } else {
            "UPDATE watch_claim SET next_run = ?2 WHERE watch = ?1"
        };
        db.defer(sql, args![watch, next_run_ms])?;
    }
    Ok(())
}
