//! Several checks' records written in one PostgreSQL transaction (a group
//! commit): what the [`ReplicaPool`]'s writer does with the checks that
//! finish while the previous group is being written; and host slots given
//! back together, in one statement.
//!
//! # Decisions
//!
//! - **The same rows as one record at a time.** Each table gets one
//!   statement for the whole group, its rows passed as arrays and expanded
//!   by `unnest`, where [`Store::write_record`] sends one statement
//!   per row: the rows and values written are the same (the store's tests
//!   run both), only the number of statements, round trips and commits
//!   shrinks. Per check, PostgreSQL's CPU went mostly to the work around
//!   each statement and each round trip, not to the rows (BENCHMARKS
//!   "Scale-out on PostgreSQL").
//! - **Two round trips.** `BEGIN`, the watches and the snapshots (whose
//!   ids the change events need) go out together; then every other write
//!   and `COMMIT`. A statement without rows is not sent.
//! - **Each check stays atomic.** A group commits or rolls back as a whole;
//!   any error rolls it back and fails the group, and the caller then
//!   writes each record alone ([`Replicas::write_records`]), so a
//!   record the database refuses fails only its own check, and a crash
//!   leaves each check either fully recorded or not at all, as before.
//! - **Watches differ within a group** (an upsert cannot touch one row
//!   twice in one statement): the pool groups them so, and a group with a
//!   watch twice is refused here.
//!
//! [`ReplicaPool`]: super::ReplicaPool
//! [`Store::write_record`]: crate::store::Store::write_record

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use tokio_postgres::types::{ToSql, Type};

use super::Replicas;
use crate::store::core::{Recorded, StoreError, retention_cutoff, to_millis};
use crate::store::pg::PgConn;
use crate::store::sql::DbError;
use crate::store::state::{
    CheckRecord, STATUS_COLUMNS, STATUS_CONFLICT, record_error, write_record,
};

type Param<'a> = &'a (dyn ToSql + Sync);

/// A statement of the group's second round trip.
enum Send<'a> {
    /// Prepared once per connection, its plan cached (an insert's plan
    /// has no choice to make).
    Prepared(&'a tokio_postgres::Statement, Vec<Param<'a>>),
    /// Planned afresh for its arrays, at each execution (an unnamed
    /// statement): for the statements that find existing rows, whose plan
    /// depends on how many rows the arrays hold and how big the table is
    /// *now*. A plan cached while the tables were small (a new store, the
    /// first checks of many watches) kept scanning whole tables once they
    /// had grown, until statistics caught up.
    Planned(&'static str, Vec<(Param<'a>, Type)>),
}

impl Send<'_> {
    async fn execute(&self, client: &tokio_postgres::Client) -> Result<u64, tokio_postgres::Error> {
        match self {
            Send::Prepared(stmt, params) => client.execute(*stmt, params).await,
            Send::Planned(sql, params) => client.execute_typed(sql, params).await,
        }
    }
}

const WATCHES: &str = "INSERT INTO watch (id, created_at, last_checked)
     SELECT w, at, at FROM unnest($1::text[], $2::int8[]) AS u(w, at)
     ON CONFLICT (id) DO UPDATE SET last_checked = excluded.last_checked";

/// As `insert_snapshot!` in `crate::store::core`: stored unless the hash is the
/// watch's current snapshot's.
const SNAPSHOTS: &str = "INSERT INTO snapshot (watch, taken_at, hash, size, xml, format)
     SELECT u.w, u.at, u.hash, u.size, u.xml, u.format
     FROM unnest($1::text[], $2::int8[], $3::text[], $4::int8[], $5::bytea[], $6::int8[])
       AS u(w, at, hash, size, xml, format)
     WHERE u.hash IS DISTINCT FROM
       (SELECT s.hash FROM snapshot s WHERE s.watch = u.w ORDER BY s.id DESC LIMIT 1)
     RETURNING watch, id";

const EVENTS: &str = "INSERT INTO change_event (watch, snapshot_id, at, kind, body)
     SELECT * FROM unnest($1::text[], $2::int8[], $3::int8[], $4::text[], $5::text[])";

/// `crate::store::core::PRUNE_SNAPSHOTS` for each watch with a new snapshot.
///
/// The rows are found watch by watch (a `LATERAL` subquery that `OFFSET 0`
/// keeps from being flattened into a join), so each is an index scan on
/// its watch, and deleted by their `ctid`s (a TID scan). Written as a join
/// of the arrays with the table, the planner hashed the whole table for
/// every group once its statistics underestimated how many watches there
/// are (seen: a sequential scan of every snapshot per group).
const PRUNE_SNAPSHOTS: &str = "DELETE FROM snapshot WHERE ctid = ANY (ARRAY(
       SELECT x.ctid
       FROM unnest($1::text[], $2::int8[], $3::int8[], $4::int8[]) AS p(w, cur, cutoff, keep),
       LATERAL (SELECT s.ctid FROM snapshot s
                WHERE s.watch = p.w AND s.id <> p.cur
                  AND (s.taken_at < p.cutoff
                       OR s.id NOT IN (SELECT id FROM snapshot WHERE watch = p.w
                                       ORDER BY id DESC LIMIT p.keep))
                OFFSET 0) AS x))";

/// `crate::store::core::PRUNE_CHANGES` for each watch with a new snapshot, found as
/// [`PRUNE_SNAPSHOTS`] finds them.
const PRUNE_CHANGES: &str = "DELETE FROM change_event WHERE ctid = ANY (ARRAY(
       SELECT x.ctid
       FROM unnest($1::text[], $2::int8[], $3::int8[]) AS p(w, cutoff, cur),
       LATERAL (SELECT e.ctid FROM change_event e
                WHERE e.watch = p.w AND e.at < p.cutoff
                  AND e.snapshot_id IS DISTINCT FROM p.cur
                OFFSET 0) AS x))";

/// `crate::store::state::note_next_run`, releasing the lease: the rows found by
/// their key (`= ANY`: an index scan), each one's next run looked up in
/// the arrays (the watches differ).
const CLAIMS: &str = "UPDATE watch_claim
     SET owner = NULL, lease_until = NULL,
         next_run = ($2::int8[])[array_position($1::text[], watch)]
     WHERE watch = ANY ($1::text[])";

const LAYOUTS: &str = "INSERT INTO layout_state (watch, state)
     SELECT * FROM unnest($1::text[], $2::text[])
     ON CONFLICT (watch) DO UPDATE SET state = excluded.state";

/// Only for a watch the store knows (it has a snapshot).
const LAYOUT_EVENTS: &str = "INSERT INTO change_event (watch, snapshot_id, at, kind, body)
     SELECT u.w, NULL, u.at, 'layout', u.body
     FROM unnest($1::text[], $2::int8[], $3::text[]) AS u(w, at, body)
     WHERE EXISTS (SELECT 1 FROM watch WHERE id = u.w)";

const THRESHOLDS: &str = "INSERT INTO threshold_state (watch, name, state, value, node, since)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::float8[], $5::text[], $6::int8[])
     ON CONFLICT (watch, name) DO UPDATE SET state = excluded.state,
       value = excluded.value, node = excluded.node, since = excluded.since";

const VALUES: &str = "INSERT INTO threshold_value (watch, name, at, value)
     SELECT * FROM unnest($1::text[], $2::text[], $3::int8[], $4::float8[])";

/// An alert to a digest notifier is due a digest interval after that
/// notifier's last digest for the watch, and not before the check.
const OUTBOX: &str = "INSERT INTO outbox
       (alert_id, watch, notifier, created_at, next_attempt, digest, body)
     SELECT u.id, u.w, u.n, u.at,
            CASE WHEN u.digest IS NULL THEN u.at
                 ELSE GREATEST(u.at, COALESCE(
                   (SELECT d.at + u.digest FROM digest_sent d
                    WHERE d.watch = u.w AND d.notifier = u.n), u.at)) END,
            u.digest, u.body
     FROM unnest($1::text[], $2::text[], $3::text[], $4::int8[], $5::int8[], $6::text[])
       AS u(id, w, n, at, digest, body)
     ON CONFLICT (alert_id, notifier) DO NOTHING";

/// A host's request slot to give back ([`Replicas::give_back_host_slots`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotBack {
    /// The host.
    pub host: String,
    /// The slot's number.
    pub slot: i64,
    /// Who took it: given back only if it still holds it.
    pub owner: std::sync::Arc<str>,
}

/// `Replicas::give_back_host_slot` for each slot, in one statement committed
/// without waiting for the WAL flush, as one slot alone is.
const GIVE_BACK: &str = "UPDATE host_slot h SET owner = NULL, lease_until = NULL
     FROM unnest($1::text[], $2::int8[], $3::text[]) AS g(host, slot, owner)
     WHERE h.host = g.host AND h.slot = g.slot AND h.owner = g.owner
       AND set_config('synchronous_commit', 'off', true) IS NOT NULL";

impl Replicas<'_> {
    /// Gives back each of `slots` that its owner still holds, as
    /// [`Replicas::give_back_host_slot`] does, in one statement (planned
    /// for its arrays at each execution).
    pub fn give_back_host_slots(&mut self, slots: &[SlotBack]) -> Result<(), StoreError> {
        let hosts: Vec<&str> = slots.iter().map(|s| s.host.as_str()).collect();
        let numbers: Vec<i64> = slots.iter().map(|s| s.slot).collect();
        let owners: Vec<&str> = slots.iter().map(|s| &*s.owner).collect();
        let send = Send::Planned(
            GIVE_BACK,
            vec![
                (&hosts, Type::TEXT_ARRAY),
                (&numbers, Type::INT8_ARRAY),
                (&owners, Type::TEXT_ARRAY),
            ],
        );
        let conn = &*self.conn;
        conn.rt
            .block_on(send.execute(&conn.client))
            .and_then(|sent| sent.map_err(DbError::from))
            .map(drop)
            .map_err(self.error("give back request slots"))
    }

    /// Writes several checks' records, each as [`Store::write_record`]
    /// would, with one result per record in their order: in one
    /// transaction (a group commit: see [`ReplicaPool::record`]) when
    /// there are several and their watches differ; if that transaction
    /// fails, each record is written again alone, so a record the
    /// database refuses fails only its own check.
    ///
    /// [`ReplicaPool::record`]: super::ReplicaPool::record
    /// [`Store::write_record`]: crate::store::Store::write_record
    pub fn write_records(
        &mut self,
        records: &[CheckRecord],
    ) -> Vec<Result<Option<Recorded>, StoreError>> {
        // A record with series values compares them with the stored
        // heads, a read the group's two round trips have no place for:
        // it is written alone (only checks that stored a new version of
        // their page carry values; most checks find the page unchanged).
        let grouped: Vec<usize> = (0..records.len())
            .filter(|&i| records[i].state.series.is_none())
            .collect();
        let mut out: Vec<Option<Result<Option<Recorded>, StoreError>>> =
            (0..records.len()).map(|_| None).collect();
        if grouped.len() > 1 {
            let cloned: Vec<CheckRecord>;
            let group = if grouped.len() == records.len() {
                records
            } else {
                cloned = grouped.iter().map(|&i| records[i].clone()).collect();
                &cloned
            };
            match write(self.conn, group) {
                Ok(recorded) => {
                    for (&i, r) in grouped.iter().zip(recorded) {
                        out[i] = Some(Ok(r));
                    }
                }
                Err(error) => {
                    tracing::debug!(records = group.len(), error = %crate::ErrorChain(&error),
                        "a group of check records failed; writing each alone");
                }
            }
        }
        for (i, slot) in out.iter_mut().enumerate() {
            if slot.is_none() {
                *slot = Some(self.write_record(&records[i]));
            }
        }
        out.into_iter().flatten().collect()
    }

    /// Writes one check's record alone, as
    /// [`Store::write_record`](crate::store::Store::write_record) does.
    pub(super) fn write_record(
        &mut self,
        record: &CheckRecord,
    ) -> Result<Option<Recorded>, StoreError> {
        self.transaction(record_error(&record.watch), |db| write_record(db, record))
    }
}

/// Writes `records` in one transaction: what each came to, in order.
fn write(conn: &PgConn, records: &[CheckRecord]) -> Result<Vec<Option<Recorded>>, DbError> {
    let mut watches = HashSet::new();
    if !records.iter().all(|r| watches.insert(r.watch.as_str())) {
        return Err(DbError::Group("a watch appears twice"));
    }
    let rows = Rows::of(records)?;
    let mut guard = Rollback { conn, open: false };
    let stored = conn.rt.block_on(rows.write(conn, &mut guard))??;
    guard.open = false;
    Ok(records
        .iter()
        .map(|r| {
            r.snapshot
                .as_ref()
                .map(|part| match stored.get(r.watch.as_str()) {
                    Some(&snapshot_id) => Recorded::Stored {
                        snapshot_id,
                        events: part.events.len(),
                    },
                    None => Recorded::Unchanged,
                })
        })
        .collect())
}

/// Rolls back a transaction left open by an error or a panic (best
/// effort, as [`crate::store::pg`]'s own guard).
struct Rollback<'a> {
    conn: &'a PgConn,
    open: bool,
}

impl Drop for Rollback<'_> {
    fn drop(&mut self) {
        if self.open {
            let _ = self
                .conn
                .rt
                .block_on(self.conn.client.batch_execute("ROLLBACK"));
        }
    }
}

/// The group's rows, as one array per column.
#[derive(Default)]
struct Rows<'a> {
    records: &'a [CheckRecord],
    // Watches with a snapshot to store (unless unchanged).
    s_watch: Vec<&'a str>,
    s_at: Vec<i64>,
    s_hash: Vec<&'a str>,
    s_size: Vec<i64>,
    s_xml: Vec<&'a [u8]>,
    s_format: Vec<i64>,
    // Every record's status and claim.
    status: [Vec<Option<&'a str>>; 7],
    status_ms: [Vec<Option<i64>>; 3],
    status_watch: Vec<&'a str>,
    c_watch: Vec<&'a str>,
    failures: Vec<i64>,
    alerted: Vec<bool>,
    // Layout states and events.
    l_watch: Vec<&'a str>,
    l_state: Vec<&'a str>,
    le_watch: Vec<&'a str>,
    le_at: Vec<i64>,
    le_body: Vec<&'a str>,
    // Threshold states and values.
    t_watch: Vec<&'a str>,
    t_name: Vec<&'a str>,
    t_state: Vec<&'a str>,
    t_value: Vec<Option<f64>>,
    t_node: Vec<Option<&'a str>>,
    t_since: Vec<i64>,
    v_watch: Vec<&'a str>,
    v_name: Vec<&'a str>,
    v_at: Vec<i64>,
    v_value: Vec<f64>,
    // Alerts.
    o_id: Vec<&'a str>,
    o_watch: Vec<&'a str>,
    o_notifier: Vec<&'a str>,
    o_at: Vec<i64>,
    o_digest: Vec<Option<i64>>,
    o_body: Vec<&'a str>,
}

fn opt_ms(t: Option<std::time::SystemTime>) -> Result<Option<i64>, DbError> {
    t.map(to_millis)
        .transpose()
        .map_err(|_| DbError::Group("a time out of range"))
}

impl<'a> Rows<'a> {
    fn of(records: &'a [CheckRecord]) -> Result<Rows<'a>, DbError> {
        let mut rows = Rows {
            records,
            ..Rows::default()
        };
        for r in records {
            let watch = r.watch.as_str();
            if let Some(part) = &r.snapshot {
                rows.s_watch.push(watch);
                rows.s_at.push(r.at_ms);
                rows.s_hash.push(&part.hash);
                rows.s_size
                    .push(i64::try_from(part.size).unwrap_or(i64::MAX));
                rows.s_xml.push(&part.compressed);
                rows.s_format.push(part.format as i64);
            }
            let s = &r.state.status;
            rows.status_watch.push(&s.watch);
            for (column, value) in rows.status.iter_mut().zip([
                &s.etag,
                &s.last_modified,
                &s.last_error,
                &s.evaluated,
                &s.body_hash,
                &s.rejected_body,
                &s.blocked,
            ]) {
                column.push(value.as_deref());
            }
            rows.c_watch.push(watch);
            for (column, value) in rows.status_ms.iter_mut().zip([
                opt_ms(s.next_run)?,
                opt_ms(s.last_attempt)?,
                opt_ms(s.last_success)?,
            ]) {
                column.push(value);
            }
            rows.failures.push(i64::from(s.failures));
            rows.alerted.push(s.failing_alerted);
            if let Some(layout) = &r.state.layout {
                rows.l_watch.push(watch);
                rows.l_state.push(layout);
            }
            if let Some(body) = &r.layout_event {
                rows.le_watch.push(watch);
                rows.le_at.push(r.at_ms);
                rows.le_body.push(body);
            }
            for (t, &since) in r.state.thresholds.iter().zip(&r.since_ms) {
                rows.t_watch.push(watch);
                rows.t_name.push(&t.name);
                rows.t_state.push(t.state.as_str());
                rows.t_value.push(t.value);
                rows.t_node.push(t.node.as_deref());
                rows.t_since.push(since);
            }
            for (name, value) in &r.state.values {
                rows.v_watch.push(watch);
                rows.v_name.push(name);
                rows.v_at.push(r.at_ms);
                rows.v_value.push(*value);
            }
            for q in &r.state.alerts {
                rows.o_id.push(&q.alert_id);
                rows.o_watch.push(watch);
                rows.o_notifier.push(&q.notifier);
                rows.o_at.push(r.at_ms);
                rows.o_digest.push(
                    q.digest
                        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
                );
                rows.o_body.push(&q.body);
            }
        }
        Ok(rows)
    }

    /// Sends the group: `BEGIN`, watches and snapshots; then the rest and
    /// `COMMIT`. The new snapshots' ids by watch.
    #[expect(
        clippy::too_many_lines,
        reason = "one transaction's statements in order, one per table: apart they would hide the round trips BENCHMARKS.md counts"
    )]
    async fn write(
        &self,
        conn: &PgConn,
        guard: &mut Rollback<'_>,
    ) -> Result<HashMap<String, i64>, DbError> {
        let client = &conn.client;
        // Every statement, prepared once per connection (cached).
        let sqls = [
            "BEGIN",
            WATCHES,
            SNAPSHOTS,
            EVENTS,
            STATUS.as_str(),
            LAYOUTS,
            THRESHOLDS,
            VALUES,
            OUTBOX,
            "COMMIT",
        ];
        let prepared =
            futures::future::try_join_all(sqls.iter().map(|sql| client.prepare_cached(sql)))
                .await?;
        let [
            begin,
            watches,
            snapshots,
            events,
            status,
            layouts,
            thresholds,
            values,
            outbox,
            commit,
        ] = <[tokio_postgres::Statement; 10]>::try_from(prepared)
            .map_err(|_| DbError::Group("a statement could not be prepared"))?;

        guard.open = true;
        let mut stored = HashMap::new();
        if !self.s_watch.is_empty() {
            let first: [Param<'_>; 2] = [&self.s_watch, &self.s_at];
            let snapshot_rows: [Param<'_>; 6] = [
                &self.s_watch,
                &self.s_at,
                &self.s_hash,
                &self.s_size,
                &self.s_xml,
                &self.s_format,
            ];
            let (_, _, inserted) = futures::future::try_join3(
                client.execute(&begin, &[]),
                client.execute(&watches, &first),
                client.query(&snapshots, &snapshot_rows),
            )
            .await?;
            for row in inserted {
                stored.insert(row.try_get(0)?, row.try_get(1)?);
            }
        }

        // The events and retention of each new snapshot.
        let (mut e_watch, mut e_id, mut e_at, mut e_kind, mut e_body) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut p_watch, mut p_id, mut p_cutoff, mut p_keep) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for r in self.records {
            let (Some(part), Some(&id)) = (&r.snapshot, stored.get(r.watch.as_str())) else {
                continue;
            };
            for (kind, body) in &part.events {
                e_watch.push(r.watch.as_str());
                e_id.push(id);
                e_at.push(r.at_ms);
                e_kind.push(*kind);
                e_body.push(body.as_str());
            }
            p_watch.push(r.watch.as_str());
            p_id.push(id);
            p_cutoff.push(retention_cutoff(&part.retention, r.at_ms));
            p_keep.push(i64::from(part.retention.keep_versions));
        }

        let mut rest: Vec<Send<'_>> = Vec::new();
        if self.s_watch.is_empty() {
            rest.push(Send::Prepared(&begin, Vec::new()));
        }
        if !e_watch.is_empty() {
            rest.push(Send::Prepared(
                &events,
                vec![&e_watch, &e_id, &e_at, &e_kind, &e_body],
            ));
        }
        if !p_watch.is_empty() {
            rest.push(Send::Planned(
                PRUNE_SNAPSHOTS,
                vec![
                    (&p_watch, Type::TEXT_ARRAY),
                    (&p_id, Type::INT8_ARRAY),
                    (&p_cutoff, Type::INT8_ARRAY),
                    (&p_keep, Type::INT8_ARRAY),
                ],
            ));
            rest.push(Send::Planned(
                PRUNE_CHANGES,
                vec![
                    (&p_watch, Type::TEXT_ARRAY),
                    (&p_cutoff, Type::INT8_ARRAY),
                    (&p_id, Type::INT8_ARRAY),
                ],
            ));
        }
        let [next_run, last_attempt, last_success] = &self.status_ms;
        let [
            etag,
            last_modified,
            last_error,
            evaluated,
            body_hash,
            rejected,
            blocked,
        ] = &self.status;
        rest.push(Send::Prepared(
            &status,
            vec![
                &self.status_watch,
                next_run,
                etag,
                last_modified,
                last_attempt,
                last_success,
                &self.failures,
                &self.alerted,
                last_error,
                evaluated,
                body_hash,
                rejected,
                blocked,
            ],
        ));
        rest.push(Send::Planned(
            CLAIMS,
            vec![
                (&self.c_watch, Type::TEXT_ARRAY),
                (next_run, Type::INT8_ARRAY),
            ],
        ));
        if !self.l_watch.is_empty() {
            rest.push(Send::Prepared(&layouts, vec![&self.l_watch, &self.l_state]));
        }
        if !self.le_watch.is_empty() {
            rest.push(Send::Planned(
                LAYOUT_EVENTS,
                vec![
                    (&self.le_watch, Type::TEXT_ARRAY),
                    (&self.le_at, Type::INT8_ARRAY),
                    (&self.le_body, Type::TEXT_ARRAY),
                ],
            ));
        }
        if !self.t_watch.is_empty() {
            rest.push(Send::Prepared(
                &thresholds,
                vec![
                    &self.t_watch,
                    &self.t_name,
                    &self.t_state,
                    &self.t_value,
                    &self.t_node,
                    &self.t_since,
                ],
            ));
        }
        if !self.v_watch.is_empty() {
            rest.push(Send::Prepared(
                &values,
                vec![&self.v_watch, &self.v_name, &self.v_at, &self.v_value],
            ));
        }
        if !self.o_id.is_empty() {
            rest.push(Send::Prepared(
                &outbox,
                vec![
                    &self.o_id,
                    &self.o_watch,
                    &self.o_notifier,
                    &self.o_at,
                    &self.o_digest,
                    &self.o_body,
                ],
            ));
        }
        rest.push(Send::Prepared(&commit, Vec::new()));
        // In order, one round trip; the first error is the one reported
        // (the transaction is aborted from there, and its `COMMIT` rolls
        // it back).
        futures::future::try_join_all(rest.iter().map(|send| send.execute(client))).await?;
        guard.open = false;
        Ok(stored)
    }
}

/// The status upsert, from one array per status column.
static STATUS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO watch_status ({STATUS_COLUMNS})
         SELECT * FROM unnest($1::text[], $2::int8[], $3::text[], $4::text[], $5::int8[],
           $6::int8[], $7::int8[], $8::bool[], $9::text[], $10::text[], $11::text[],
           $12::text[], $13::text[])
         {STATUS_CONFLICT}"
    )
});
