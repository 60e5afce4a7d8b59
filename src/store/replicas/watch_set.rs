//! Which watch set each replica runs, when several share a PostgreSQL
//! database.
//!
//! Takes a replica's watch set ([`WatchSet`]: each watch's id and the
//! BLAKE3 hash of its file) and its heartbeats; gives the live replicas
//! and their sets ([`Replicas::live_replicas`]), the *reference* set (the one
//! most live replicas run, [`reference()`]) and which of a replica's
//! watches are defined differently there ([`WatchSet::differing`]).
//!
//! # Decisions
//!
//! - **A watch's definition is its file's bytes** (BLAKE3), not the parsed
//!   settings: replicas are deployed from one checkout, so the same watch
//!   is the same bytes, and bytes do not change meaning between semclip
//!   versions during a rolling upgrade. The set's hash covers every id and
//!   definition, in id order.
//! - **Live** means a heartbeat within [`LIVE_FOR`]; a replica that stops
//!   cleanly deletes its row, one that dies is ignored once its heartbeat
//!   is that old (and its row is deleted by the next replica to publish).
//! - **The reference set** is the hash most live replicas publish; on a
//!   tie (two replicas mid-deploy) the one published last wins, so a
//!   rolling deploy moves forward rather than back.
//! - **SQLite**: one daemon, nothing to compare: it has no [`Replicas`]
//!   to publish with, and the daemon runs no replica view.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use super::Replicas;
use crate::store::core::{StoreError, from_millis, to_millis};
use crate::store::sql::args;

/// How long after its last heartbeat a replica counts as live.
pub const LIVE_FOR: Duration = Duration::from_secs(30);

/// The watches one replica runs, by id, each with its definition's hash.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WatchSet {
    /// Watch id to the hex BLAKE3 hash of its file.
    pub definitions: BTreeMap<String, String>,
}

impl WatchSet {
    /// The set of `watches`, given as (id, file bytes).
    pub fn of<'a>(watches: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> WatchSet {
        WatchSet {
            definitions: watches
                .into_iter()
                .map(|(id, bytes)| (id.to_owned(), blake3::hash(bytes).to_hex().to_string()))
                .collect(),
        }
    }

    /// The hash of the whole set (hex BLAKE3 over each id and definition).
    pub fn hash(&self) -> String {
        let mut hasher = blake3::Hasher::new();
        for (id, definition) in &self.definitions {
            hasher.update(id.as_bytes());
            hasher.update(b"\0");
            hasher.update(definition.as_bytes());
            hasher.update(b"\n");
        }
        hasher.finalize().to_hex().to_string()
    }

    /// This set's watches that `reference` defines differently (a watch
    /// the reference does not have is not among them: nobody else runs
    /// it).
    pub fn differing(&self, reference: &WatchSet) -> Vec<String> {
        self.definitions
            .iter()
            .filter(|(id, def)| reference.definitions.get(*id).is_some_and(|r| r != *def))
            .map(|(id, _)| id.clone())
            .collect()
    }
}

/// A live replica as the database knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaRow {
    /// Its replica id.
    pub id: String,
    /// The hash of its watch set ([`WatchSet::hash`]).
    pub watch_set: String,
    /// How many watches it runs.
    pub watches: u64,
    /// When it published its set.
    pub published: SystemTime,
    /// Its last heartbeat.
    pub heartbeat: SystemTime,
}

/// The reference watch-set hash among `live` replicas: the one most of
/// them run, ties going to the one published last. `None` without replicas.
pub fn reference(live: &[ReplicaRow]) -> Option<&str> {
    let mut counts: BTreeMap<&str, (usize, SystemTime)> = BTreeMap::new();
    for r in live {
        let entry = counts
            .entry(&r.watch_set)
            .or_insert((0, SystemTime::UNIX_EPOCH));
        entry.0 += 1;
        entry.1 = entry.1.max(r.published);
    }
    counts
        .into_iter()
        .max_by_key(|(_, count_and_time)| *count_and_time)
        .map(|(hash, _)| hash)
}

/// What one replica knows of the others, for its status page and metrics.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplicaSummary {
    /// Live replicas, this one included.
    pub live: usize,
    /// The live replicas whose watch set differs from the reference.
    pub differing: Vec<String>,
    /// Whether this replica's set differs from the reference.
    pub this_differs: bool,
    /// This replica's watches it leaves to the others: the reference
    /// defines them differently.
    pub withheld: Vec<String>,
}

impl ReplicaSummary {
    /// The summary for the replica running `own` among `live` replicas,
    /// given the reference set's definitions (`None` when this replica
    /// runs the reference set, or it could not be read).
    pub fn of(own: &WatchSet, live: &[ReplicaRow], reference_set: Option<&WatchSet>) -> Self {
        let own_hash = own.hash();
        let reference = reference(live).unwrap_or(&own_hash).to_owned();
        ReplicaSummary {
            live: live.len(),
            differing: live
                .iter()
                .filter(|r| r.watch_set != reference)
                .map(|r| r.id.clone())
                .collect(),
            this_differs: own_hash != reference,
            withheld: match reference_set {
                Some(set) if own_hash != reference => own.differing(set),
                _ => Vec::new(),
            },
        }
    }
}

impl Replicas<'_> {
    /// Publishes the watch set `replica` runs (at start and after each
    /// reload), with a heartbeat at `now`; deletes the rows of replicas
    /// dead for long (ten times [`LIVE_FOR`]).
    pub fn publish_watch_set(
        &mut self,
        replica: &str,
        set: &WatchSet,
        now: SystemTime,
    ) -> Result<(), StoreError> {
        let now_ms = to_millis(now)?;
        let gone_ms = to_millis(now.checked_sub(LIVE_FOR * 10).unwrap_or(now))?;
        let definitions = serde_json::to_string(&set.definitions).unwrap_or_default();
        let watches = i64::try_from(set.definitions.len()).unwrap_or(i64::MAX);
        let hash = set.hash();
        let err = self.error("publish the watch set");
        self.transaction(&err, |db| {
            db.execute("DELETE FROM replica WHERE heartbeat < ?1", args![gone_ms])
                .map_err(&err)?;
            db.execute(
                "INSERT INTO replica (id, watch_set, watches, definitions, published, heartbeat)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?5)
                 ON CONFLICT (id) DO UPDATE SET watch_set = excluded.watch_set,
                   watches = excluded.watches, definitions = excluded.definitions,
                   published = excluded.published, heartbeat = excluded.heartbeat",
                args![
                    replica,
                    hash.as_str(),
                    watches,
                    definitions.as_str(),
                    now_ms
                ],
            )
            .map_err(&err)?;
            Ok(())
        })
    }

    /// Records that `replica` is alive at `now`. False when it has no row
    /// (never published, or deleted as dead): publish again.
    pub fn heartbeat(&mut self, replica: &str, now: SystemTime) -> Result<bool, StoreError> {
        let now_ms = to_millis(now)?;
        let err = self.error("record a heartbeat");
        let updated = self
            .db()
            .execute(
                "UPDATE replica SET heartbeat = ?2 WHERE id = ?1",
                args![replica, now_ms],
            )
            .map_err(&err)?;
        Ok(updated > 0)
    }

    /// Deletes `replica`'s row (it stops).
    pub fn leave(&mut self, replica: &str) -> Result<(), StoreError> {
        let err = self.error("leave the replicas");
        self.db()
            .execute("DELETE FROM replica WHERE id = ?1", args![replica])
            .map_err(&err)
            .map(drop)
    }

    /// The replicas with a heartbeat since `now` - [`LIVE_FOR`], by id.
    pub fn live_replicas(&mut self, now: SystemTime) -> Result<Vec<ReplicaRow>, StoreError> {
        let since_ms = to_millis(now.checked_sub(LIVE_FOR).unwrap_or(now))?;
        let err = self.error("read the replicas");
        let rows = self
            .db()
            .query(
                "SELECT id, watch_set, watches, published, heartbeat FROM replica
                 WHERE heartbeat >= ?1 ORDER BY id",
                args![since_ms],
            )
            .map_err(&err)?;
        rows.into_iter()
            .map(|mut row| {
                let watches: i64 = row.get(2).map_err(&err)?;
                let published: i64 = row.get(3).map_err(&err)?;
                let heartbeat: i64 = row.get(4).map_err(&err)?;
                let time = |ms| {
                    from_millis(ms).map_err(|source| StoreError::CorruptWatch {
                        watch: "(replica)".to_owned(),
                        source,
                    })
                };
                Ok(ReplicaRow {
                    id: row.get(0).map_err(&err)?,
                    watch_set: row.get(1).map_err(&err)?,
                    watches: u64::try_from(watches).unwrap_or(0),
                    published: time(published)?,
                    heartbeat: time(heartbeat)?,
                })
            })
            .collect()
    }

    /// The watch set a replica with watch-set hash `hash` published (the
    /// most recently published of them), if any.
    pub fn published_watch_set(&mut self, hash: &str) -> Result<Option<WatchSet>, StoreError> {
        let err = self.error("read a published watch set");
        let Some(mut row) = self
            .db()
            .query_opt(
                "SELECT definitions FROM replica WHERE watch_set = ?1
                 ORDER BY published DESC LIMIT 1",
                args![hash],
            )
            .map_err(&err)?
        else {
            return Ok(None);
        };
        let text: String = row.get(0).map_err(&err)?;
        let definitions = serde_json::from_str(&text).map_err(|e| StoreError::CorruptWatch {
            watch: "(replica)".to_owned(),
            source: e.to_string().into(),
        })?;
        Ok(Some(WatchSet { definitions }))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn row(id: &str, set: &str, published: u64) -> ReplicaRow {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(published);
        ReplicaRow {
            id: id.to_owned(),
            watch_set: set.to_owned(),
            watches: 1,
            published: at,
            heartbeat: at,
        }
    }

    #[test]
    fn the_reference_is_the_set_most_replicas_run_and_the_newest_on_a_tie() {
        assert_eq!(reference(&[]), None);
        let three = [row("a", "old", 10), row("b", "new", 20), row("c", "old", 5)];
        assert_eq!(reference(&three), Some("old"), "two against one");
        let two = [row("a", "old", 10), row("b", "new", 20)];
        assert_eq!(reference(&two), Some("new"), "a tie: the newest");
    }

    #[test]
    fn a_set_hash_covers_ids_and_definitions_and_differing_names_changed_watches() {
        let a = WatchSet::of([("w1", &b"url: x"[..]), ("w2", b"url: y")]);
        let same = WatchSet::of([("w2", &b"url: y"[..]), ("w1", b"url: x")]);
        let edited = WatchSet::of([("w1", &b"url: z"[..]), ("w2", b"url: y"), ("w3", b"new")]);
        let renamed = WatchSet::of([("w9", &b"url: x"[..]), ("w2", b"url: y")]);
        assert_eq!(a.hash(), same.hash(), "order does not matter");
        assert_ne!(a.hash(), edited.hash());
        assert_ne!(a.hash(), renamed.hash());
        assert_eq!(
            edited.differing(&a),
            ["w1"],
            "w3 is only here: not withheld"
        );
        assert!(a.differing(&same).is_empty());
    }

    #[test]
    fn a_summary_names_the_replicas_off_the_reference_and_what_this_one_withholds() {
        let common = WatchSet::of([("w1", &b"url: x"[..]), ("w2", b"url: y")]);
        let stale = WatchSet::of([("w1", &b"url: old"[..]), ("w2", b"url: y")]);
        let live = [
            row("a", &common.hash(), 10),
            row("b", &common.hash(), 11),
            row("c", &stale.hash(), 12),
        ];
        let on_c = ReplicaSummary::of(&stale, &live, Some(&common));
        assert_eq!(on_c.live, 3);
        assert_eq!(on_c.differing, ["c"]);
        assert!(on_c.this_differs);
        assert_eq!(on_c.withheld, ["w1"]);
        let on_a = ReplicaSummary::of(&common, &live, None);
        assert!(!on_a.this_differs);
        assert!(on_a.withheld.is_empty());
        assert_eq!(on_a.differing, ["c"]);
        let alone = ReplicaSummary::of(&stale, &[], None);
        assert!(!alone.this_differs, "nothing to differ from");
    }
}
