//! Cache refresh (docs/algorithms.md, "The hierarchy in a portal"): a
//! freshly built hierarchy and the store in,
//! "unchanged" or the semantic changes (stored with a new snapshot) out.
//!
//! The canonical content hash decides first: equal to the stored one means
//! nothing in the data changed (markup churn, scripts, ads already dropped
//! by the builder), so nothing is written out, no diff is computed and no
//! snapshot is stored; only the check time is. Only a different hash reads
//! the previous snapshot back, diffs it against the new hierarchy and
//! stores the new snapshot with its change events in one transaction.
//!
//! No XML is involved: the hash is taken over the hierarchy's compact form
//! ([`crate::hierarchy::packed`]), the snapshot is stored in that form and
//! the previous one is read back from it. A snapshot stored as XML by an
//! older semclip carries a hash of another scheme; it is compared by diff
//! once, and when nothing differs the page counts as unchanged (its
//! compact snapshot is stored without change events), so an upgrade
//! raises no change event.
//!
//! Rows are paired by identity: before the diff, a table that the new
//! version keys by other columns is re-keyed in the stored one
//! ([`key::align`]). A snapshot stored under an older vocabulary
//! ([`crate::VOCABULARY_VERSION`]) reports only its numeric updates once,
//! and the check says that ids changed ([`Prepared::upgraded_from`]).

use std::time::SystemTime;

use crate::diff::{Change, ChangeKind, diff_ignoring, ignored_ids, without};
use crate::hierarchy::packed::{self, Url};
use crate::hierarchy::{Hierarchy, key};
use crate::store::{Recorded, Retention, SnapshotBody, SnapshotPart, Store, StoreError};
use crate::xpath::XPathError;

/// Why a refresh failed.
#[derive(Debug, thiserror::Error)]
pub enum RefreshError {
    /// The store failed.
    #[error("store error while refreshing `{watch}`")]
    Store {
        /// The watch.
        watch: String,
        /// The cause (boxed: store errors are large).
        #[source]
        source: Box<StoreError>,
    },
    /// An `ignore` expression of the watch does not evaluate.
    #[error("an ignore expression of `{watch}` does not evaluate")]
    Ignore {
        /// The watch.
        watch: String,
        /// Why.
        #[source]
        source: XPathError,
    },
}

/// What a refresh found.
#[derive(Debug)]
pub struct Refreshed {
    /// The new hierarchy's content hash.
    pub hash: String,
    /// The semantic changes since the stored snapshot (empty when unchanged
    /// or on the first check).
    pub changes: Vec<Change>,
    /// What the store did.
    pub recorded: Recorded,
}

/// A check compared with the store, not yet recorded: what [`prepare`]
/// gives and [`crate::store::Store::record_check`] writes.
#[derive(Debug)]
pub struct Prepared {
    /// The new hierarchy's content hash (over the hierarchy without what
    /// the ignore list selects).
    pub hash: String,
    /// Whether `hash` equals the stored current hash.
    pub unchanged: bool,
    /// The semantic changes since the stored snapshot (empty when unchanged
    /// or on the first check).
    pub changes: Vec<Change>,
    /// The new hierarchy's compact form (with its URL) to store, empty
    /// when the hash is the stored one.
    pub packed: Vec<u8>,
    /// The vocabulary version of the stored snapshot, when it is older
    /// than this semclip's: its ids changed with this check.
    pub upgraded_from: Option<u32>,
}

/// This semclip's vocabulary version as a number.
pub fn current_vocabulary() -> u32 {
    crate::VOCABULARY_VERSION.parse().unwrap_or(u32::MAX)
}

impl Prepared {
    /// The snapshot part of the check, for [`crate::store::Store::record_check`].
    pub fn snapshot_part<'a>(&'a self, retention: &'a Retention) -> SnapshotPart<'a> {
        SnapshotPart {
            hash: &self.hash,
            body: SnapshotBody::Packed(&self.packed),
            changes: &self.changes,
            retention,
        }
    }
}

/// Compares `new` with the stored snapshot of `watch` without writing
/// anything. `ignore` is the watch's ignore list: XPath expressions over the
/// hierarchy whose selections are left out of comparison. They are resolved
/// against each version, and the content hash is taken over the hierarchy
/// without them, so a change only there (a visitor counter, a clock) counts
/// as unchanged. The XML to store is the whole hierarchy.
pub fn prepare(
    store: &Store,
    watch: &str,
    new: &Hierarchy,
    ignore: &[String],
) -> Result<Prepared, RefreshError> {
    let current = store
        .current_hash(watch)
        .map_err(|source| RefreshError::Store {
            watch: watch.to_owned(),
            source: Box::new(source),
        })?;
    prepare_against(store, watch, new, ignore, current.as_deref())
}

/// [`prepare`] with the current snapshot's hash already read (`None`: the
/// watch has no snapshot, and nothing more is read from the store). The
/// daemon's check reads it with the watch's status before fetching
/// ([`Store::check_start`]); it holds the watch's run meanwhile, and
/// the record compares the hash again in its own transaction.
pub fn prepare_against(
    store: &Store,
    watch: &str,
    new: &Hierarchy,
    ignore: &[String],
    current: Option<&str>,
) -> Result<Prepared, RefreshError> {
    let store_err = |source: StoreError| RefreshError::Store {
        watch: watch.to_owned(),
        source: Box::new(source),
    };
    let bad_ignore = |source: XPathError| RefreshError::Ignore {
        watch: watch.to_owned(),
        source,
    };
    let new_ignored = ignored_ids(new, ignore).map_err(bad_ignore)?;
    // Without ignored nodes, the hash comes from the bytes to store.
    let (packed, hash) = if new_ignored.is_empty() {
        let (packed, hash) = packed::pack_and_hash(new);
        (Some(packed), hash)
    } else {
        (None, packed::content_hash(&without(new, &new_ignored)))
    };
    if current == Some(hash.as_str()) {
        return Ok(Prepared {
            hash,
            unchanged: true,
            changes: Vec::new(),
            packed: Vec::new(),
            upgraded_from: None,
        });
    }
    // The previous version is read back only to be diffed, and the diff
    // derives ids just for the nodes it reports, so its ids are not derived
    // on reading. An ignore list is resolved by XPath over the previous
    // hierarchy, which reads every node's id: then they are derived.
    let previous = if current.is_none() {
        Ok(None)
    } else if ignore.is_empty() {
        store.current_hierarchy_without_ids(watch)
    } else {
        store.current_hierarchy(watch)
    };
    let mut upgraded_from = None;
    let (changes, unchanged) = match previous.map_err(store_err)? {
        Some(mut previous) => {
            // Rows pair by identity: a table the new version keys by
            // other columns is re-keyed in the old one first.
            key::align(&mut previous.hierarchy, new);
            let old_ignored = ignored_ids(&previous.hierarchy, ignore).map_err(bad_ignore)?;
            let mut changes = diff_ignoring(&previous.hierarchy, new, &old_ignored, &new_ignored);
            if previous.vocabulary < current_vocabulary() {
                // Stored under an older vocabulary: its labels, keys and
                // ids were made by other rules, and what differs is mostly
                // the rules. Only numeric updates (which a re-labelling
                // cannot make) are reported; the check says once that ids
                // changed ([`Prepared::upgraded_from`]).
                changes.retain(|c| {
                    c.kind == ChangeKind::Update && c.old_num.is_some() && c.new_num.is_some()
                });
                upgraded_from = Some(previous.vocabulary);
            }
            // A hash of an older scheme cannot be compared: the diff says.
            let unchanged = previous.legacy_hash && changes.is_empty();
            (changes, unchanged)
        }
        None => (Vec::new(), false),
    };
    Ok(Prepared {
        hash,
        unchanged,
        changes,
        packed: packed.unwrap_or_else(|| packed::pack(new, Url::Keep)),
        upgraded_from,
    })
}

/// Compares `new` with the stored snapshot of `watch` and records the
/// result: [`prepare`], then [`Store::record`]. `ignore` is as for
/// [`prepare`]; the stored snapshot is the whole hierarchy.
pub fn refresh(
    store: &mut Store,
    watch: &str,
    new: &Hierarchy,
    at: SystemTime,
    retention: &Retention,
    ignore: &[String],
) -> Result<Refreshed, RefreshError> {
    let prepared = prepare(store, watch, new, ignore)?;
    let recorded = store
        .record_packed(
            watch,
            &prepared.hash,
            &prepared.packed,
            at,
            &prepared.changes,
            retention,
        )
        .map_err(|source| RefreshError::Store {
            watch: watch.to_owned(),
            source: Box::new(source),
        })?;
    Ok(Refreshed {
        hash: prepared.hash,
        changes: prepared.changes,
        recorded,
    })
}
