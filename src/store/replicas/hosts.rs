//! A host's politeness across the replicas sharing a PostgreSQL database.
//!
//! Takes a host, the caller's limits (`limits.host_spacing`,
//! `limits.per_host`) and its clock; gives each request start a reserved
//! time on the host's row ([`Replicas::reserve_host_start`]) and each
//! request one of the host's `per_host` slots for as long as it runs
//! ([`Replicas::take_host_slot`]), first come, first served: a request
//! that finds no slot free queues in `host_wait` ([`SlotWaiter`]).
//!
//! # Decisions
//!
//! - **Politeness, not data.** Every write here is committed without
//!   waiting for the WAL flush (`synchronous_commit` off for its own
//!   transaction), as the claims are (see [`super::claim`]): a database
//!   crash can lose only the reservations and takes of its last moments,
//!   which costs at most a moment with one request more to a host.
//! - **No lock held while waiting.** A reservation is one statement on the
//!   host's row; a slot is a lease to the request's deadline, given back
//!   when it ends or freed when the lease runs out. A replica that dies
//!   leaves nothing behind but its leases.
//! - **SQLite** has none of this: one daemon per file, whose own limiter
//!   spaces and counts its requests ([`Store::replicas`] is `None`).
//!
//! [`Store::replicas`]: crate::store::Store::replicas

use std::time::{Duration, SystemTime};

use super::Replicas;
use crate::store::core::{StoreError, from_millis, to_millis};
use crate::store::sql::{DbError, args};

impl Replicas<'_> {
    /// Maps a database error met on `host`'s rows while doing `action`.
    fn host_error<'a>(
        &'a self,
        action: &'a str,
        host: &'a str,
    ) -> impl Fn(DbError) -> StoreError + 'a {
        move |source| StoreError::Database {
            path: self.path.to_owned(),
            action: format!("{action} {host}"),
            source,
        }
    }

    /// Reserves a request start to `host` at least `spacing` after every
    /// start reserved before it, by any replica: returns when the request
    /// may start (`now` or later). The host's row is updated under its row
    /// lock, so replicas reserving at once queue behind each other, and
    /// committed without waiting for the WAL flush (a database crash can
    /// lose only the reservations of its last moments; the claim's reasons
    /// in [`super::claim`]).
    pub fn reserve_host_start(
        &mut self,
        host: &str,
        now: SystemTime,
        spacing: Duration,
    ) -> Result<SystemTime, StoreError> {
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
    /// to requests that have waited longer.
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
    /// or given up leaves the queue ([`Replicas::leave_host_queue`]); one that
    /// vanished stops counting once it has not asked for [`WAIT_ALIVE`].
    ///
    /// A host's slot rows are made beforehand ([`ensure`]), once per
    /// host and process. The take is committed without waiting for the WAL
    /// flush (`synchronous_commit` off for its own transaction): a slot is
    /// politeness, not data, and a PostgreSQL crash that loses a take
    /// costs at most a moment with one request more in flight to a host.
    ///
    /// [`ensure`]: Replicas::ensure_host_slots
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
    /// [`Replicas::take_host_slot`]).
    pub fn ensure_host_slots(&mut self, host: &str, per_host: usize) -> Result<(), StoreError> {
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
}

/// How long a request waiting for a host slot counts as waiting after it
/// last asked: waiters ask every 100 to 150 ms, so one silent this long is
/// gone (its check cancelled, its process dead) and must not hold others
/// back.
pub const WAIT_ALIVE: Duration = Duration::from_secs(2);

/// A request asking for a host slot (see [`Replicas::take_host_slot`]).
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
///   [`Replicas::take_host_slot`]), in a query that always runs.
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
