//! Values over time: a series of (time, value) points per numeric node of
//! a watch's clips and thresholds, keyed by the node's semantic id (its
//! `xpath` label), so a row that moves or a column that is renamed keeps
//! its series as long as the hierarchy keeps its identity.
//!
//! # Decisions
//!
//! - **Only changes.** A check that stored a new snapshot gives the
//!   store every numeric node in scope with its value
//!   ([`CheckState::series`]); the store compares them with each series'
//!   head (the `series` row: its last value) and writes a point only for
//!   a node whose value differs, at the check's time. A node no longer
//!   there ends its series with a point without a value. A check whose
//!   page did not change writes nothing: its values cannot have moved.
//! - **One row per node, points by reference.** The node's id (a long
//!   XPath) is stored once, in `series`; a point is (series, time, value),
//!   a few bytes. The head row also says which clip or threshold took
//!   the node in (`source`), for `/metrics` labels.
//! - **Retention by age.** Points older than `retention.keep_days` go,
//!   except each series' newest (the value in force); a series ended
//!   before then goes with its points.
//! - **Bounded.** A check gives at most [`MAX_SERIES`] nodes (in page
//!   order): a page cannot make a check write without bound.
//!
//! [`CheckState::series`]: super::CheckState::series

use std::collections::{HashMap, HashSet};
use std::time::SystemTime;

use super::core::{from_millis, retention_cutoff, to_millis, watch_error};
use super::sql::{Db, DbError, Row, args};
use super::{Retention, Store, StoreError};

/// Most numeric nodes a check records series of, per watch.
pub const MAX_SERIES: usize = 2000;

/// A numeric node's value in one check, as the check gives it to the
/// store.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeValue {
    /// The node's semantic id (its `xpath` label).
    pub node: String,
    /// The clip or threshold that took it in (`clip:NAME`,
    /// `threshold:NAME`).
    pub source: String,
    /// Its number (`num`).
    pub value: f64,
}

/// A series' head: the node, where it came from and its last value.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesHead {
    /// The node's semantic id.
    pub node: String,
    /// The clip or threshold that took it in last (`clip:NAME`,
    /// `threshold:NAME`).
    pub source: String,
    /// Its value now; `None` once the node is gone (the series ended).
    pub value: Option<f64>,
    /// Since when it has held that value (or been gone).
    pub since: SystemTime,
}

/// One point of a series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// The check that saw the value first.
    pub at: SystemTime,
    /// The value from then on; `None`: the node was gone from then on.
    pub value: Option<f64>,
}

/// Writes the points of one check of `watch` at `at_ms` whose numeric
/// nodes in scope are `values` (see the module's decisions).
pub(super) fn write_series(
    db: Db<'_>,
    watch: &str,
    at_ms: i64,
    values: &[NodeValue],
) -> Result<(), DbError> {
    let heads: HashMap<String, Option<f64>> = db
        .query(
            "SELECT node, value FROM series WHERE watch = ?1",
            args![watch],
        )?
        .into_iter()
        .map(|mut row| Ok((row.get::<String>(0)?, row.get::<Option<f64>>(1)?)))
        .collect::<Result<_, DbError>>()?;
    let mut seen = HashSet::with_capacity(values.len());
    for v in values.iter().take(MAX_SERIES) {
        if !v.value.is_finite() || !seen.insert(v.node.as_str()) {
            continue;
        }
        match heads.get(&v.node) {
            Some(Some(old)) if old.to_bits() == v.value.to_bits() => continue,
            Some(_) => db.defer(
                "UPDATE series SET value = ?3, at = ?4, source = ?5
                 WHERE watch = ?1 AND node = ?2",
                args![watch, &v.node, v.value, at_ms, &v.source],
            )?,
            None => db.defer(
                "INSERT INTO series (watch, node, source, value, at)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                args![watch, &v.node, &v.source, v.value, at_ms],
            )?,
        }
        add_point(db, watch, &v.node, at_ms, Some(v.value))?;
    }
    for (node, value) in &heads {
        if value.is_some() && !seen.contains(node.as_str()) {
            db.defer(
                "UPDATE series SET value = NULL, at = ?3 WHERE watch = ?1 AND node = ?2",
                args![watch, node.as_str(), at_ms],
            )?;
            add_point(db, watch, node, at_ms, None)?;
        }
    }
    Ok(())
}

fn add_point(
    db: Db<'_>,
    watch: &str,
    node: &str,
    at_ms: i64,
    value: Option<f64>,
) -> Result<(), DbError> {
    db.defer(
        "INSERT INTO series_point (series, at, value)
         VALUES ((SELECT id FROM series WHERE watch = ?1 AND node = ?2), ?3, ?4)
         ON CONFLICT (series, at) DO UPDATE SET value = excluded.value",
        args![watch, node, at_ms, value],
    )
}

fn head_of(watch: &str, mut row: Row) -> Result<SeriesHead, StoreError> {
    let read = |row: &mut Row| -> Result<(String, String, Option<f64>, i64), DbError> {
        Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
    };
    let (node, source, value, at) =
        read(&mut row).map_err(|source| watch_error(watch, "read the series of", source))?;
    Ok(SeriesHead {
        node,
        source,
        value,
        since: corrupt_time(watch, at)?,
    })
}

/// A point from a row of `at, value`.
fn point_of(watch: &str, mut row: Row) -> Result<Point, StoreError> {
    let read =
        |row: &mut Row| -> Result<(i64, Option<f64>), DbError> { Ok((row.get(0)?, row.get(1)?)) };
    let (at, value) =
        read(&mut row).map_err(|source| watch_error(watch, "read the series of", source))?;
    Ok(Point {
        at: corrupt_time(watch, at)?,
        value,
    })
}

fn corrupt_time(watch: &str, at: i64) -> Result<SystemTime, StoreError> {
    from_millis(at).map_err(|source| StoreError::CorruptWatch {
        watch: watch.to_owned(),
        source,
    })
}

impl Store {
    /// The series of `watch`: every node it has points for, ended ones
    /// included, in the order of their ids.
    pub fn series_heads(&self, watch: &str) -> Result<Vec<SeriesHead>, StoreError> {
        let rows = self
            .db()
            .query(
                "SELECT node, source, value, at FROM series WHERE watch = ?1 ORDER BY node",
                args![watch],
            )
            .map_err(|source| watch_error(watch, "read the series of", source))?;
        rows.into_iter().map(|row| head_of(watch, row)).collect()
    }

    /// The head of one node's series, if it has one.
    pub fn series_head(&self, watch: &str, node: &str) -> Result<Option<SeriesHead>, StoreError> {
        let row = self
            .db()
            .query_opt(
                "SELECT node, source, value, at FROM series WHERE watch = ?1 AND node = ?2",
                args![watch, node],
            )
            .map_err(|source| watch_error(watch, "read the series of", source))?;
        row.map(|row| head_of(watch, row)).transpose()
    }

    /// The points of one node's series from `from` to `to` (both
    /// included, either open), oldest first, preceded by the point in
    /// force at `from` when there is one before it (so a chart starts
    /// with the value the node held then).
    pub fn series_points(
        &self,
        watch: &str,
        node: &str,
        from: Option<SystemTime>,
        to: Option<SystemTime>,
    ) -> Result<Vec<Point>, StoreError> {
        let from_ms = from.map(to_millis).transpose()?.unwrap_or(i64::MIN);
        let to_ms = to.map(to_millis).transpose()?.unwrap_or(i64::MAX);
        let err = |source| watch_error(watch, "read the series of", source);
        let (before, within) = self
            .db()
            .query_both(
                (
                    "SELECT p.at, p.value FROM series_point p JOIN series s ON s.id = p.series
                     WHERE s.watch = ?1 AND s.node = ?2 AND p.at < ?3
                     ORDER BY p.at DESC LIMIT 1",
                    args![watch, node, from_ms],
                ),
                (
                    "SELECT p.at, p.value FROM series_point p JOIN series s ON s.id = p.series
                     WHERE s.watch = ?1 AND s.node = ?2 AND p.at >= ?3 AND p.at <= ?4
                     ORDER BY p.at",
                    args![watch, node, from_ms, to_ms],
                ),
            )
            .map_err(err)?;
        before
            .into_iter()
            .chain(within)
            .map(|row| point_of(watch, row))
            .collect()
    }

    /// The newest `limit` points of one node's series, oldest first: what
    /// a chart of its recent history draws, read without reading it all.
    pub fn series_latest(
        &self,
        watch: &str,
        node: &str,
        limit: usize,
    ) -> Result<Vec<Point>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let err = |source| watch_error(watch, "read the series of", source);
        let rows = self
            .db()
            .query(
                "SELECT at, value FROM (SELECT p.at, p.value FROM series_point p
                 JOIN series s ON s.id = p.series WHERE s.watch = ?1 AND s.node = ?2
                 ORDER BY p.at DESC LIMIT ?3) AS newest
                 ORDER BY at",
                args![watch, node, limit],
            )
            .map_err(err)?;
        rows.into_iter().map(|row| point_of(watch, row)).collect()
    }

    /// Removes points older than `retention.keep_days` before `now`,
    /// keeping each series' newest, and series ended before then; returns
    /// how many points went.
    pub fn prune_series(
        &mut self,
        retention: &Retention,
        now: SystemTime,
    ) -> Result<usize, StoreError> {
        retention.validate()?;
        let cutoff = retention_cutoff(retention, to_millis(now)?);
        let err = |source| watch_error("(series)", "prune", source);
        self.transaction(err, |db| {
            let ended = db
                .query(
                    "SELECT id FROM series WHERE value IS NULL AND at < ?1",
                    args![cutoff],
                )
                .map_err(err)?;
            let mut gone = 0;
            for mut row in ended {
                let id: i64 = row.get(0).map_err(err)?;
                gone += db
                    .execute("DELETE FROM series_point WHERE series = ?1", args![id])
                    .map_err(err)?;
                db.execute("DELETE FROM series WHERE id = ?1", args![id])
                    .map_err(err)?;
            }
            gone += db
                .execute(
                    "DELETE FROM series_point WHERE at < ?1 AND at <
                     (SELECT max(q.at) FROM series_point q WHERE q.series = series_point.series)",
                    args![cutoff],
                )
                .map_err(err)?;
            Ok(gone)
        })
    }
}
