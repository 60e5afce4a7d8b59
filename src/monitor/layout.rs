//! Layout monitoring: the page built for the watch
//! ([`super::watch_page`]), what the watch's XPaths find on it and the
//! stored [`LayoutState`] in; the new state and at most one "layout
//! changed" event out.
//!
//! Layout monitoring answers the complaint users have about every
//! selector-based monitor: after a redesign the selectors silently select
//! nothing, or select the wrong thing and alert on noise. A layout event
//! means that something the watch depends on moved or vanished, measured on
//! what semclip's XPaths address (the hierarchy), never on the DOM. A check
//! raises one `layout` event when
//!
//! - a clip that selected something on the previous page selects nothing
//!   now (an XPath clip, or an extract clip that finds nothing);
//! - a threshold's XPath that selected something selects nothing now (the
//!   row it reads was removed or renamed);
//! - the watch follows a learned template (`layout.template`) and the page
//!   no longer fits it, so the template's data regions are not found;
//! - the hierarchy's own label structure was reorganised: the Jaccard
//!   distance between the sets of label paths ([`label_paths`](super::watch_page::label_paths)) of this
//!   page and the previous one is above `layout.max_drift`.
//!
//! # Decisions
//!
//! - **Label paths, not DOM paths.** A label path is the chain of
//!   hierarchy element names from the root, with the labels that name a
//!   structure rather than a record: a table's `label` (its caption), a
//!   cell's `col` (its column header) and an extract clip's `clip` name.
//!   Row keys, item texts and section headings are left out: they are the
//!   page's data (a new row, a new headline), and the XPaths that name them
//!   are watched one by one above. The hierarchy is built to be the same
//!   whatever wrappers, class names, inline tags and whitespace the page
//!   uses (`tests/it/markup.rs`), so markup-only edits give the same label
//!   paths, hence a drift of 0.
//! - **The DOM measure is a diagnostic.** The path-shingle sketch of the DOM
//!   ([`crate::template::minhash`]) and the drift from the nearest template
//!   are still measured and kept (`dom_drift` in the state and in the event),
//!   because they help to explain an event; they never raise one.
//! - **A moved region is a diagnostic.** When a region clip's wrapper no
//!   longer finds its region but its keywords do, the clip still delivers
//!   its data: the new wrapper is kept, the move is logged and named in an
//!   event raised for another reason, and raises none by itself.
//! - **Once per episode.** While the page stays changed (a clip or
//!   threshold stays lost, the page stays off its template) no new event is
//!   raised; once it is back to normal, the next change raises again. A
//!   label drift is measured against the previous page, so it shows once.
//! - **Backward compatible state.** Every field of [`LayoutState`] has a
//!   serde default: a state stored by an older version (without label
//!   paths) loads, and the first check after the upgrade measures no label
//!   drift (there is nothing to compare with) rather than a false one.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::config::Watch;
use crate::extract::region::Wrapper;
use crate::template::minhash::{Sketch, jaccard};
use crate::xpath::HierarchyDoc;
use crate::xpath::native::Evaluator;

use super::watch_page::WatchPage;
/// The event [`assess`] raises (it is stored, so it lives with the store).
pub use crate::store::LayoutEvent;

/// What the store keeps between checks for layout monitoring (as JSON).
/// Every field has a default, so states written by older versions load.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LayoutState {
    /// The path-shingle sketch of the last page's DOM (diagnostic only).
    #[serde(default)]
    pub sketch: Option<Sketch>,
    /// The label paths of the last page's hierarchy ([`label_paths`](super::watch_page::label_paths));
    /// `None` when no check has kept them yet.
    #[serde(default)]
    pub labels: Option<Vec<u64>>,
    /// Per clip: whether it selected something on the last page.
    #[serde(default)]
    pub found: BTreeMap<String, bool>,
    /// Per threshold: whether its XPath selected something on the last page.
    #[serde(default)]
    pub thresholds_found: BTreeMap<String, bool>,
    /// Per region clip: the wrapper that found its region.
    #[serde(default)]
    pub wrappers: BTreeMap<String, Wrapper>,
    /// Clips that selected something once and nothing since.
    #[serde(default)]
    pub lost: BTreeSet<String>,
    /// Thresholds whose XPath selected something once and nothing since.
    #[serde(default)]
    pub lost_thresholds: BTreeSet<String>,
    /// The DOM drift measured on the last page, for diagnosis: never a
    /// reason for an event.
    #[serde(default)]
    pub dom_drift: Option<f64>,
    /// A layout event was raised and the page has not returned to normal.
    #[serde(default)]
    pub changed: bool,
}

/// What the watch's XPaths select on one page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    /// Per XPath clip: whether it selects something.
    pub clips: BTreeMap<String, bool>,
    /// Per threshold: whether its XPath selects something.
    pub thresholds: BTreeMap<String, bool>,
}

impl Found {
    /// What the previous page selected, as kept in `state` (for a page
    /// whose data did not change).
    pub fn previous(watch: &Watch, state: &LayoutState) -> Found {
        Found {
            clips: state
                .found
                .iter()
                .filter(|(name, _)| watch.clips.get(*name).is_some_and(|c| c.extract.is_none()))
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
            thresholds: state
                .thresholds_found
                .iter()
                .filter(|(name, _)| watch.thresholds.iter().any(|t| &t.name == *name))
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
        }
    }
}

/// The names in `now` that are false and were true in `before`.
fn newly_lost(now: &BTreeMap<String, bool>, before: &BTreeMap<String, bool>) -> Vec<String> {
    now.iter()
        .filter(|&(name, &found)| !found && before.get(name).copied().unwrap_or(false))
        .map(|(name, _)| name.clone())
        .collect()
}

/// `lost` and `newly` minus what `now` finds again.
fn still_lost(
    lost: &BTreeSet<String>,
    newly: &[String],
    now: &BTreeMap<String, bool>,
) -> BTreeSet<String> {
    lost.iter()
        .chain(newly)
        .filter(|name| !now.get(*name).copied().unwrap_or(false))
        .cloned()
        .collect()
}

/// Compares the page with the previous state: the new state to store and
/// the event to raise, if any. `xpaths` tells what the watch's XPath clips
/// and thresholds select on this page.
pub fn assess(
    watch: &Watch,
    previous: &LayoutState,
    page: &WatchPage,
    xpaths: &Found,
) -> (LayoutState, Option<LayoutEvent>) {
    // The trigger: the hierarchy's label structure against the last page's.
    let drift = previous
        .labels
        .as_ref()
        .map_or(0.0, |before| 1.0 - jaccard(before, &page.labels));
    // The diagnostic: the DOM's structure.
    let (dom_drift, dom_against) = match (&watch.layout.template, page.template_drift) {
        (Some(set), Some((index, drift))) => (drift, format!("template {index} of {set}")),
        _ => (
            previous
                .sketch
                .as_ref()
                .map_or(0.0, |s| 1.0 - s.similarity(&page.sketch)),
            "previous page".to_owned(),
        ),
    };
    let template_lost = match (&watch.layout.template, page.template_drift) {
        (Some(set), Some((index, _))) if page.template_regions == Some(false) => {
            Some(format!("template {index} of {set}"))
        }
        _ => None,
    };
    let mut found: BTreeMap<String, bool> = xpaths.clips.clone();
    found.extend(page.extracted.iter().map(|(k, v)| (k.clone(), *v)));
    let newly_lost_clips = newly_lost(&found, &previous.found);
    let newly_lost_thresholds = newly_lost(&xpaths.thresholds, &previous.thresholds_found);
    // Lost clips and thresholds stay lost until they select something again.
    let lost = still_lost(&previous.lost, &newly_lost_clips, &found);
    let lost_thresholds = still_lost(
        &previous.lost_thresholds,
        &newly_lost_thresholds,
        &xpaths.thresholds,
    );
    let drifted = drift > watch.layout.max_drift;
    let abnormal =
        drifted || !lost.is_empty() || !lost_thresholds.is_empty() || template_lost.is_some();
    if !page.moved.is_empty() {
        tracing::info!(
            watch = %watch.id,
            regions = %page.moved.join(", "),
            "region clips found again elsewhere by their keywords"
        );
    }
    tracing::debug!(watch = %watch.id, drift, dom_drift, against = %dom_against, "layout measured");
    let event = (abnormal && !previous.changed).then(|| {
        let mut e = LayoutEvent {
            drift,
            max_drift: watch.layout.max_drift,
            against: "previous page".to_owned(),
            lost: newly_lost_clips,
            lost_thresholds: newly_lost_thresholds,
            template: template_lost.clone(),
            moved: page.moved.clone(),
            dom_drift,
            dom_against,
            summary: String::new(),
        };
        e.summary = e.reasons();
        e
    });
    // A label drift shows once (the next page is compared with this one)
    // and a move is followed by the new wrapper; lost clips and
    // thresholds and a page off its template last until they end.
    let persists = template_lost.is_some() || !lost.is_empty() || !lost_thresholds.is_empty();
    let state = LayoutState {
        sketch: Some(page.sketch.clone()),
        labels: Some(page.labels.clone()),
        found,
        thresholds_found: xpaths.thresholds.clone(),
        wrappers: page.wrappers.clone(),
        lost,
        lost_thresholds,
        dom_drift: Some(dom_drift),
        changed: persists,
    };
    (state, event)
}

/// Whether `xpath` selects something in `doc`: a node, a finite number, a
/// non-empty string, or a boolean. An expression that fails selects
/// nothing.
fn selects(doc: &HierarchyDoc, xpath: &str) -> bool {
    doc.evaluate(xpath)
        .is_ok_and(|value| value.selects_something())
}

/// [`xpaths_found`] on a hierarchy: natively where the expressions allow
/// (see [`crate::xpath::native`]), through its XML otherwise.
pub fn xpaths_found_on(watch: &Watch, ev: &Evaluator<'_>) -> Found {
    Found {
        clips: watch
            .clips
            .iter()
            .filter(|(_, c)| c.extract.is_none())
            .map(|(name, c)| (name.clone(), ev.selects(&c.xpath)))
            .collect(),
        thresholds: watch
            .thresholds
            .iter()
            .map(|t| (t.name.clone(), ev.selects(&t.xpath)))
            .collect(),
    }
}

/// What the XPath clips and the thresholds of `watch` select in the
/// hierarchy `xml` (nothing is recorded when it does not parse).
pub fn xpaths_found(watch: &Watch, xml: &str) -> Found {
    let has_xpath_clips = watch.clips.values().any(|c| c.extract.is_none());
    if !has_xpath_clips && watch.thresholds.is_empty() {
        return Found::default();
    }
    let Ok(doc) = HierarchyDoc::parse(xml) else {
        return Found::default();
    };
    Found {
        clips: watch
            .clips
            .iter()
            .filter(|(_, c)| c.extract.is_none())
            .map(|(name, c)| (name.clone(), selects(&doc, &c.xpath)))
            .collect(),
        thresholds: watch
            .thresholds
            .iter()
            .map(|t| (t.name.clone(), selects(&doc, &t.xpath)))
            .collect(),
    }
}
