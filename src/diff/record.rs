//! Changes by record: the keyed table row (a list record, a table row) a
//! change lies in, and a check's changes grouped into one change per
//! record (issue 34, "a change stream per record").
//!
//! The diff reports values: a new row is one `insert` of the row, a new
//! price one `update` of a cell. A person watching a job board or a price
//! list reads records: "new: Senior Rust engineer (Berlin, €90,000)",
//! "removed: …", "changed: SRE: salary €65,000 -> €68,000". So every
//! change inside a keyed row carries that row ([`RecordOf`]: its table,
//! its key and its fields), set by the diff where it has both trees at
//! hand, and stored with the change; [`by_record`] groups the changes of
//! one check into [`RecordChange`]s, which feeds, webhooks and alert titles
//! show.
//!
//! # Decisions
//!
//! - A record is a row with a key, in a table (`extract: records` clips
//!   are tables with `role="records"`; HTML tables are tables too). A row
//!   without a key has no identity to follow and its changes stay plain.
//! - A record's identity is its table's id and its key: the key is the
//!   identifying field the hierarchy chose (a title, a link, a name;
//!   combined when one is not unique), so it survives reordering, growth
//!   and shrinking of the list. Rows are paired by that identity before
//!   the diff, so a pure reorder is no change at all.
//! - The fields stored with a change are the record's fields after it (or
//!   before it, for a removed record); the fields before a changed record
//!   are those with each changed field's old value put back
//!   ([`RecordChange::before`]). A record with several changed fields
//!   stores its fields once per change: a record is a few short fields,
//!   and a change must stand alone in the store.

use serde::{Deserialize, Serialize};

use super::{Change, ChangeKind, LabelTree};
use crate::hierarchy::{HNode, Kind};

/// One field of a record: its column name and its text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Field {
    /// The field's name (its column; empty for a column without a name).
    pub name: String,
    /// The field's text.
    pub value: String,
}

/// The record (a keyed table row) a change lies in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordOf {
    /// `xpath` id of the table (or records list) holding the row.
    pub table: String,
    /// The name of the field the key comes from (the table's `keycol`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keycol: Option<String>,
    /// The row's key: the record's identity within its table.
    pub key: String,
    /// The field the change lies in, when it lies in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Whether the change is the row itself (a new or removed record, or a
    /// new key), not a value inside it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub whole: bool,
    /// The record's fields after the change (before it, for a removed
    /// record), in page order.
    pub fields: Vec<Field>,
}

/// The record that hierarchy node `hnode` of `tree` lies in, if it lies
/// in a keyed row of a table.
pub(super) fn of(tree: &LabelTree<'_>, hnode: u32) -> Option<RecordOf> {
    let mut field = None;
    let mut at = hnode;
    let mut whole = true;
    loop {
        let r = tree.hnodes.get(at as usize)?;
        match r.node.kind {
            Kind::Row => {
                let table = tree.hnodes.get(r.parent as usize)?;
                if table.node.kind != Kind::Table {
                    return None;
                }
                return Some(RecordOf {
                    table: tree.id(r.parent),
                    keycol: table.node.attr("keycol").map(str::to_owned),
                    key: r.node.key.clone()?,
                    field,
                    whole,
                    fields: fields(r.node),
                });
            }
            Kind::Cell if field.is_none() => {
                field = Some(r.node.col.as_deref().unwrap_or_default().to_owned());
            }
            // A table inside a cell: its rows are records of their own.
            Kind::Table => return None,
            _ => {}
        }
        whole = false;
        at = r.parent;
    }
}

/// A row's fields: each cell's column and text (a cell owning structure
/// gives its label).
fn fields(row: &HNode) -> Vec<Field> {
    row.children
        .iter()
        .filter(|c| c.kind == Kind::Cell)
        .filter_map(|c| {
            Some(Field {
                name: c.col.as_deref().unwrap_or_default().to_owned(),
                value: c.own_text()?.to_owned(),
            })
        })
        .collect()
}

/// What happened to a record in one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RecordChangeKind {
    /// A record that was not there.
    Added,
    /// A record that is gone.
    Removed,
    /// A record whose fields (or key) changed.
    Changed,
}

impl RecordChangeKind {
    /// The word people read: `new`, `removed`, `changed`.
    pub fn word(self) -> &'static str {
        match self {
            RecordChangeKind::Added => "new",
            RecordChangeKind::Removed => "removed",
            RecordChangeKind::Changed => "changed",
        }
    }
}

/// One record's changes in one check.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordChange<'c> {
    /// Added, removed or changed.
    pub kind: RecordChangeKind,
    /// The record, as its first change carries it.
    pub record: &'c RecordOf,
    /// The changes, in the check's order.
    pub changes: Vec<&'c Change>,
    /// The index of the first of them in the check's changes.
    pub first: usize,
}

impl RecordChange<'_> {
    /// The record's fields before the check (none for an added record).
    pub fn before(&self) -> Vec<Field> {
        match self.kind {
            RecordChangeKind::Added => Vec::new(),
            RecordChangeKind::Removed => self.record.fields.clone(),
            RecordChangeKind::Changed => {
                let mut fields = self.after();
                for c in &self.changes {
                    let Some(name) = c.record.as_ref().and_then(|r| r.field.as_ref()) else {
                        continue;
                    };
                    let at = fields.iter().position(|f| &f.name == name);
                    match (c.kind, at, c.old.as_ref()) {
                        (ChangeKind::Update, Some(i), Some(old)) => fields[i].value.clone_from(old),
                        (ChangeKind::Insert, Some(i), _) => {
                            fields.remove(i);
                        }
                        (ChangeKind::Delete, None, Some(old)) => fields.push(Field {
                            name: name.clone(),
                            value: old.clone(),
                        }),
                        _ => {}
                    }
                }
                fields
            }
        }
    }

    /// The record's fields after the check (none for a removed record).
    pub fn after(&self) -> Vec<Field> {
        match self.kind {
            RecordChangeKind::Removed => Vec::new(),
            _ => self
                .changes
                .iter()
                .rev()
                .find_map(|c| c.record.as_ref())
                .map_or_else(Vec::new, |r| r.fields.clone()),
        }
    }

    /// The record as one line: `new: Senior Rust engineer (Berlin,
    /// €90,000)`, `removed: …`, `changed: SRE: salary €65,000 -> €68,000
    /// (+3000)`.
    pub fn line(&self) -> String {
        let key = &self.record.key;
        match self.kind {
            RecordChangeKind::Added | RecordChangeKind::Removed => {
                let fields = if self.kind == RecordChangeKind::Added {
                    self.after()
                } else {
                    self.before()
                };
                let values: Vec<&str> = fields
                    .iter()
                    .map(|f| f.value.as_str())
                    .filter(|v| !v.is_empty() && v != key)
                    .collect();
                if values.is_empty() {
                    format!("{}: {key}", self.kind.word())
                } else {
                    format!("{}: {key} ({})", self.kind.word(), values.join(", "))
                }
            }
            RecordChangeKind::Changed => {
                let parts: Vec<String> = self.changes.iter().map(|c| field_change(c)).collect();
                format!("changed: {key}: {}", parts.join("; "))
            }
        }
    }
}

/// One change of a changed record, named by its field: `salary €65,000 ->
/// €68,000 (+3000)`, `key Old -> New`, `new rating 4.5`.
fn field_change(c: &Change) -> String {
    let name = c
        .record
        .as_ref()
        .and_then(|r| r.field.clone())
        .filter(|f| !f.is_empty());
    let old = c.old.as_deref().unwrap_or("");
    let new = c.new.as_deref().unwrap_or("");
    let field = name.as_deref().unwrap_or("key");
    match c.kind {
        ChangeKind::Update | ChangeKind::Move => {
            format!("{field} {old} -> {new}{}", c.delta_suffix())
        }
        ChangeKind::Insert => format!("new {} {new}", name.as_deref().unwrap_or("value")),
        ChangeKind::Delete => format!("no {} {old}", name.as_deref().unwrap_or("value")),
    }
}

/// A check's changes grouped by record: one [`RecordChange`] per record
/// (by table and key, in the order of each record's first change), and
/// the indices of the changes that lie in no record.
pub fn by_record(changes: &[Change]) -> (Vec<RecordChange<'_>>, Vec<usize>) {
    let mut records: Vec<RecordChange<'_>> = Vec::new();
    let mut plain = Vec::new();
    for (i, c) in changes.iter().enumerate() {
        let Some(r) = c.record.as_ref() else {
            plain.push(i);
            continue;
        };
        let kind = match c.kind {
            ChangeKind::Insert if r.whole => RecordChangeKind::Added,
            ChangeKind::Delete if r.whole => RecordChangeKind::Removed,
            _ => RecordChangeKind::Changed,
        };
        // The changes of one record join; a record removed and one added
        // under the same key (a row replaced) stay two.
        let same = records
            .iter_mut()
            .find(|g| g.kind == kind && g.record.table == r.table && g.record.key == r.key);
        match same {
            Some(g) => g.changes.push(c),
            None => records.push(RecordChange {
                kind,
                record: r,
                changes: vec![c],
                first: i,
            }),
        }
    }
    (records, plain)
}

#[cfg(test)]
#[allow(clippy::expect_used, reason = "tests fail loudly on purpose")]
mod tests {
    use super::*;
    use crate::diff::diff;
    use crate::hierarchy::Hierarchy;

    /// A price list: one keyed row per product.
    fn page(rows: &[(&str, &str, &str)]) -> Hierarchy {
        let rows: String = rows
            .iter()
            .map(|(name, city, price)| {
                format!("<tr><td>{name}</td><td>{city}</td><td>{price}</td></tr>")
            })
            .collect();
        Hierarchy::from_html(
            &format!(
                "<html><body><h1>Shop</h1><table><tr><th>Product</th><th>City</th>\
                 <th>Price</th></tr>{rows}</table></body></html>"
            ),
            None,
        )
    }

    fn lines(changes: &[Change]) -> Vec<String> {
        by_record(changes)
            .0
            .iter()
            .map(RecordChange::line)
            .collect()
    }

    #[test]
    fn each_record_that_came_went_or_changed_is_one_record_change() {
        let old = page(&[
            ("Kettle", "Berlin", "30"),
            ("Toaster", "Paris", "45"),
            ("Lamp", "Rome", "20"),
        ]);
        let new = page(&[
            ("Toaster", "Lyon", "49"),
            ("Kettle", "Berlin", "30"),
            ("Fan", "Madrid", "25"),
        ]);
        let changes = diff(&old, &new);
        let (records, plain) = by_record(&changes);
        assert!(plain.is_empty(), "{changes:#?}");
        let mut got: Vec<String> = records.iter().map(RecordChange::line).collect();
        got.sort();
        assert_eq!(
            got,
            [
                "changed: Toaster: City Paris -> Lyon; Price 45 -> 49 (+4)",
                "new: Fan (Madrid, 25)",
                "removed: Lamp (Rome, 20)",
            ],
            "{changes:#?}"
        );
        let toaster = records
            .iter()
            .find(|r| r.record.key == "Toaster")
            .expect("the toaster");
        let has = |fields: &[Field], name: &str, value: &str| {
            fields.iter().any(|f| f.name == name && f.value == value)
        };
        let (before, after) = (toaster.before(), toaster.after());
        assert!(
            has(&before, "City", "Paris") && has(&before, "Price", "45"),
            "{before:?}"
        );
        assert!(
            has(&after, "City", "Lyon") && has(&after, "Price", "49"),
            "{after:?}"
        );
        assert_eq!(toaster.changes.len(), 2);
    }

    #[test]
    fn a_reordered_list_has_no_record_change() {
        let old = page(&[("Kettle", "Berlin", "30"), ("Toaster", "Paris", "45")]);
        let new = page(&[("Toaster", "Paris", "45"), ("Kettle", "Berlin", "30")]);
        assert_eq!(lines(&diff(&old, &new)), Vec::<String>::new());
    }

    #[test]
    fn changes_outside_keyed_rows_stay_plain() {
        let html = |p: &str| {
            Hierarchy::from_html(
                &format!("<html><body><h1>News</h1><h2>Today</h2><p>{p}</p></body></html>"),
                None,
            )
        };
        let changes = diff(&html("Rain."), &html("Sun."));
        let (records, plain) = by_record(&changes);
        assert!(records.is_empty(), "{records:?}");
        assert_eq!(plain.len(), changes.len());
        assert!(!plain.is_empty());
    }

    #[test]
    fn a_record_survives_a_store_round_trip() {
        let old = page(&[("Kettle", "Berlin", "30")]);
        let new = page(&[("Kettle", "Berlin", "32")]);
        let changes = diff(&old, &new);
        let json = serde_json::to_string(&changes).expect("json");
        let back: Vec<Change> = serde_json::from_str(&json).expect("read back");
        assert_eq!(back, changes);
        assert_eq!(lines(&back), ["changed: Kettle: Price 30 -> 32 (+2)"]);
        // A change stored before records existed reads as a plain change.
        let legacy: Change = serde_json::from_str(
            r#"{"kind":"update","context":["Shop","Kettle","Price"],"old":"30","new":"32"}"#,
        )
        .expect("legacy change");
        assert!(legacy.record.is_none());
    }
}
