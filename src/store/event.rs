//! Change events as types: what a check records besides its snapshot, and
//! what feeds, status pages and the API read back.
//!
//! An event is either a data change ([`crate::diff::Change`], kind `update`,
//! `insert`, `delete` or `move`) or a layout event ([`LayoutEvent`], kind
//! `layout`: something the watch depends on moved or vanished). Both are
//! stored as JSON objects carrying their `"kind"`; [`Event`] serialises to
//! exactly that object and reads it back, dispatching on the kind, so the
//! rows of every store written so far read unchanged. Layout events written
//! before `lost_thresholds`, `template`, `dom_drift` and `dom_against`
//! existed read with those fields empty.
//!
//! Reading is strict: a stored body that is not one of these shapes is an
//! error naming its event id ([`super::StoreError::CorruptChange`]), never a
//! silent skip. [`super::Store::changes`] still gives the raw JSON of every
//! row, whatever it holds.

use std::time::SystemTime;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::diff::Change;

/// The `"kind"` of layout events.
pub const LAYOUT: &str = "layout";

/// One change event: a data change or a layout event.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A semantic change of the page's data.
    Change(Change),
    /// Something the watch depends on moved or vanished; not a data change.
    Layout(LayoutEvent),
}

/// A "layout changed" event (made by [`crate::monitor::layout::assess`]).
/// Serialised through [`Event`], which adds `"kind": "layout"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayoutEvent {
    /// The drift of the hierarchy's label structure
    /// ([`crate::monitor::watch_page::label_paths`]) from the previous page:
    /// the Jaccard distance of the two sets, 0..1.
    pub drift: f64,
    /// The drift allowed.
    pub max_drift: f64,
    /// What the drift was measured against: `"previous page"` (events of
    /// older stores may name a template).
    pub against: String,
    /// Clips that selected something before and nothing now.
    pub lost: Vec<String>,
    /// Thresholds whose XPath selected something before and nothing now.
    #[serde(default)]
    pub lost_thresholds: Vec<String>,
    /// The template (`template N of SET`) whose data regions are no longer
    /// found, when that is a reason.
    #[serde(default)]
    pub template: Option<String>,
    /// Region clips found again elsewhere by their keywords (diagnostic).
    pub moved: Vec<String>,
    /// Diagnostic only, never a reason for the event: the estimated Jaccard
    /// distance of the DOM's path shingles from `dom_against`, 0..1.
    #[serde(default)]
    pub dom_drift: f64,
    /// What `dom_drift` was measured against: `"previous page"` or
    /// `"template N of SET"`.
    #[serde(default)]
    pub dom_against: String,
    /// The reasons in one line ([`LayoutEvent::reasons`]).
    pub summary: String,
}

impl LayoutEvent {
    /// The reasons for the event in one line, as [`LayoutEvent::summary`]
    /// keeps them for feeds, status pages and alerts.
    pub fn reasons(&self) -> String {
        let mut parts = Vec::new();
        if self.drift > self.max_drift {
            parts.push(format!(
                "label structure drifted {:.0}% from the {} (allowed {:.0}%)",
                self.drift * 100.0,
                self.against,
                self.max_drift * 100.0
            ));
        }
        if !self.lost.is_empty() {
            parts.push(format!(
                "clips selecting nothing now: {}",
                self.lost.join(", ")
            ));
        }
        if !self.lost_thresholds.is_empty() {
            parts.push(format!(
                "thresholds selecting nothing now: {}",
                self.lost_thresholds.join(", ")
            ));
        }
        if let Some(t) = &self.template {
            parts.push(format!(
                "the page no longer fits {t}: its data regions are not found"
            ));
        }
        if !self.moved.is_empty() {
            parts.push(format!("regions moved: {}", self.moved.join(", ")));
        }
        parts.join("; ")
    }

    /// The event as the JSON object stored for it (with its `"kind"`).
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(&TaggedRef::Layout(self))
    }
}

/// A layout event with its kind, for writing.
#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum TaggedRef<'a> {
    Layout(&'a LayoutEvent),
}

/// A layout event with its kind, for reading.
#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum Tagged {
    Layout(LayoutEvent),
}

impl Event {
    /// The event's kind: `update`, `insert`, `delete`, `move` or `layout`.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Change(c) => c.kind.name(),
            Event::Layout(_) => LAYOUT,
        }
    }

    /// Whether this is a layout event.
    pub fn is_layout(&self) -> bool {
        matches!(self, Event::Layout(_))
    }

    /// The data change, unless this is a layout event.
    pub fn change(&self) -> Option<&Change> {
        match self {
            Event::Change(c) => Some(c),
            Event::Layout(_) => None,
        }
    }

    /// The event as one line with its kind first, as `semclip diff`
    /// prints a change ([`Change::line`]):
    /// `update  Market / GAZP: 251,30 -> 268,40 (+17.1)`.
    pub fn line(&self) -> String {
        match self {
            Event::Change(c) => c.line(),
            Event::Layout(l) => format!("{LAYOUT:<7} {}", layout_line(l)),
        }
    }

    /// The event as one line without its kind, for views that show the
    /// kind apart ([`Change::line_without_kind`]):
    /// `Market / GAZP: 251,30 -> 268,40 (+17.1)`, `layout changed: ...`.
    pub fn line_without_kind(&self) -> String {
        match self {
            Event::Change(c) => c.line_without_kind(),
            Event::Layout(l) => layout_line(l),
        }
    }
}

/// A layout event as one line without its kind.
fn layout_line(l: &LayoutEvent) -> String {
    format!("layout changed: {}", l.summary)
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Event::Change(c) => c.serialize(serializer),
            Event::Layout(l) => TaggedRef::Layout(l).serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Event {
    /// Reads an event by its `"kind"`: `layout` as a [`LayoutEvent`],
    /// anything else as a [`Change`] (whose kind must then be one of its
    /// four).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        let layout = value.get("kind").and_then(serde_json::Value::as_str) == Some(LAYOUT);
        let event = if layout {
            Tagged::deserialize(value).map(|Tagged::Layout(l)| Event::Layout(l))
        } else {
            Change::deserialize(value).map(Event::Change)
        };
        event.map_err(D::Error::custom)
    }
}

/// One stored change event read back as its type ([`super::Store::events`]).
#[derive(Debug, Clone, PartialEq)]
pub struct EventRecord {
    /// The event's id, unique in the store, never reused, increasing in the
    /// order events were recorded.
    pub id: i64,
    /// The watch it belongs to.
    pub watch: String,
    /// The snapshot the change led to; `None` for a layout event, or once
    /// retention has pruned that snapshot.
    pub snapshot_id: Option<i64>,
    /// When it was recorded, to the millisecond.
    pub at: SystemTime,
    /// The event.
    pub event: Event,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::ChangeKind;
    use serde_json::json;

    fn layout() -> LayoutEvent {
        let mut e = LayoutEvent {
            drift: 0.8,
            max_drift: 0.5,
            against: "previous page".to_owned(),
            lost: vec!["shares".to_owned()],
            lost_thresholds: vec!["gazp".to_owned()],
            template: None,
            moved: Vec::new(),
            dom_drift: 0.25,
            dom_against: "previous page".to_owned(),
            summary: String::new(),
        };
        e.summary = e.reasons();
        e
    }

    #[test]
    fn a_layout_event_is_stored_with_its_kind_and_reads_back() {
        let e = layout();
        let body = e.to_json().unwrap_or_default();
        let value: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        assert_eq!(value["kind"], "layout");
        assert_eq!(value["lost"], json!(["shares"]));
        let back: Event = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, Event::Layout(e));
        assert_eq!(
            back.line(),
            "layout  layout changed: label structure drifted 80% from the previous page \
             (allowed 50%); clips selecting nothing now: shares; \
             thresholds selecting nothing now: gazp"
        );
    }

    #[test]
    fn a_layout_event_of_an_older_store_reads_with_the_later_fields_empty() {
        // As semclip wrote them before issue 17 (schema 4).
        let old = json!({"kind": "layout", "drift": 0.7, "max_drift": 0.5,
            "against": "template 2 of news", "lost": ["body"], "moved": [],
            "summary": "structure drifted 70% from the template 2 of news (allowed 50%)"});
        let back = Event::deserialize(old).unwrap_or_else(|e| panic!("{e}"));
        let Event::Layout(l) = &back else {
            panic!("{back:?}")
        };
        assert!(l.lost_thresholds.is_empty() && l.template.is_none());
        assert_eq!((l.dom_drift, l.dom_against.as_str()), (0.0, ""));
        assert_eq!(
            back.line_without_kind(),
            "layout changed: structure drifted 70% from the template 2 of news (allowed 50%)"
        );
    }

    #[test]
    fn a_change_round_trips_as_semclip_diff_writes_it() {
        let stored = json!({"kind": "update", "context": ["Market", "", "GAZP"],
            "old": "251,30", "new": "268,40", "old_xpath": "/page/table[1]/row[1]/cell[2]",
            "new_xpath": "/page/table[1]/row[1]/cell[2]", "old_num": "251.30",
            "new_num": "268.40", "delta": "17.1"});
        let event = Event::deserialize(stored.clone()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(event.kind(), "update");
        assert_eq!(event.change().map(|c| c.kind), Some(ChangeKind::Update));
        assert_eq!(serde_json::to_value(&event).ok(), Some(stored));
        assert_eq!(
            event.line(),
            "update  Market / GAZP: 251,30 -> 268,40 (+17.1)"
        );
        assert_eq!(
            event.line_without_kind(),
            "Market / GAZP: 251,30 -> 268,40 (+17.1)"
        );
    }

    #[test]
    fn what_is_no_event_does_not_read() {
        for bad in [
            json!({"kind": "text", "context": []}),
            json!({"kind": "update"}),
            json!({"kind": "layout", "drift": "far"}),
            json!({"context": ["a"]}),
            json!(["update"]),
        ] {
            assert!(Event::deserialize(bad.clone()).is_err(), "{bad}");
        }
    }
}
