//! A watched page as the watch sees it, and layout monitoring: page text
//! and the watch in; the hierarchy to compare (with the extract clips'
//! results, or only the page's data under `monitor: data`), the page's
//! structure, and at most one "layout changed" event out.
//!
//! Layout monitoring answers the complaint users have about every
//! selector-based monitor: after a redesign the selectors silently select
//! nothing, or select the wrong thing and alert on noise. Here a check
//! raises one `layout` event when
//!
//! - the page's structure drifted: the estimated Jaccard distance of its
//!   path shingles ([`crate::template::minhash`]) from the previous page's,
//!   or from the nearest template of the watch's template set, is above
//!   `layout.max_drift`. Path shingles ignore how many records a list has
//!   and what the text says, so data changes do not count as drift;
//! - a clip that selected something on the previous page selects nothing
//!   now (an XPath clip, or an extract clip that finds nothing);
//! - a region clip's wrapper no longer finds its region and the keywords
//!   found it elsewhere ("moved").
//!
//! The event names what moved. It is raised once: while the page stays
//! changed (drift from a template persists, a clip stays lost) no new one
//! is raised; once it is back to normal, the next change raises again.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::budget::{Budget, Exceeded};
use crate::config::{ExtractSpec, Watch};
use crate::dom::Dom;
use crate::extract::{self, region::Wrapper, vocabulary};
use crate::hierarchy::{Hierarchy, assign_ids_within, build_parts_within, build_within, weigh};
use crate::number::decimal_style_for_lang;
use crate::template::cluster::{Template, TemplateSet};
use crate::template::minhash::Sketch;
use crate::template::tree::PageTree;
use crate::xpath::HierarchyDoc;

/// What the store keeps between checks for layout monitoring (as JSON).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LayoutState {
    /// The path-shingle sketch of the last page.
    #[serde(default)]
    pub sketch: Option<Sketch>,
    /// Per clip: whether it selected something on the last page.
    #[serde(default)]
    pub found: BTreeMap<String, bool>,
    /// Per region clip: the wrapper that found its region.
    #[serde(default)]
    pub wrappers: BTreeMap<String, Wrapper>,
    /// Clips that selected something once and nothing since.
    #[serde(default)]
    pub lost: BTreeSet<String>,
    /// A layout event was raised and the page has not returned to normal.
    #[serde(default)]
    pub changed: bool,
}

/// A page built for a watch.
#[derive(Debug)]
pub struct WatchPage {
    /// The hierarchy to compare and store.
    pub hierarchy: Hierarchy,
    /// The page's structure sketch.
    pub sketch: Sketch,
    /// Drift from the nearest template of the watch's template set, when it
    /// has one and the set is not empty.
    pub template_drift: Option<(usize, f64)>,
    /// Per extract clip: whether it found something.
    pub extracted: BTreeMap<String, bool>,
    /// Per region clip: the wrapper of the region found now.
    pub wrappers: BTreeMap<String, Wrapper>,
    /// Region clips whose stored wrapper failed and whose keywords found
    /// the region elsewhere.
    pub moved: Vec<String>,
}

/// Builds the page for `watch`: parses `html`, adds one node per extract
/// clip (marked `clip="NAME"`) to the page's hierarchy, or, under
/// `monitor: data`, keeps only those nodes (or the template's data
/// regions). Everything is charged to `budget`: a page over it is an
/// error, never a cut-short hierarchy.
pub fn build_page(
    html: &str,
    url: Option<&str>,
    watch: &Watch,
    previous: &LayoutState,
    templates: Option<&mut TemplateSet>,
    budget: &Budget,
) -> Result<WatchPage, Exceeded> {
    let dom = Dom::parse_within(html, budget);
    budget.check()?;
    let tree = PageTree::from_dom(&dom);
    let sketch = Sketch::of_tree(&tree, None);
    // Drift from the nearest template, and that template's data regions.
    let mut data_roots = Vec::new();
    let mut template: Option<&Template> = None;
    let template_drift = templates.and_then(|set| {
        let features = set.features(&tree);
        let (index, similarity) = set.nearest(&features)?;
        let t = set.templates.get(index)?;
        if watch.data_only {
            data_roots = maximal_elements(&tree, &t.data_nodes(&features.sequence));
        }
        // Article clips use the template only for a page that fits it.
        if similarity >= 1.0 - set.threshold {
            template = Some(t);
        }
        Some((index, t.drift(&features.sequence).clamp(0.0, 1.0)))
    });
    let has_extract = watch.clips.values().any(|c| c.extract.is_some());
    let mut hierarchy = if watch.data_only && !has_extract {
        if template_drift.is_some() {
            build_parts_within(&dom, url, &data_roots, budget)
        } else {
            // No template learned yet: compare the whole page rather than
            // nothing.
            build_within(&dom, url, budget)
        }
    } else if watch.data_only {
        let mut h = build_parts_within(&dom, url, &[], budget);
        h.children.clear();
        h
    } else {
        build_within(&dom, url, budget)
    };
    budget.check()?;
    let style = decimal_style_for_lang(hierarchy.lang.as_deref());
    let mut extracted = BTreeMap::new();
    let mut wrappers = BTreeMap::new();
    let mut moved = Vec::new();
    for (name, clip) in &watch.clips {
        let Some(spec) = &clip.extract else { continue };
        let mut node = match spec {
            ExtractSpec::Article => vocabulary::article_node(
                &extract::article::extract_by_template(&dom, &tree, url, template),
            ),
            ExtractSpec::Records => vocabulary::records_node(
                &extract::records::extract_by_template(&dom, &tree, template),
                style,
            ),
            ExtractSpec::Region(keywords) => {
                let stored = previous.wrappers.get(name);
                let by_wrapper = stored.and_then(|w| extract::region::apply(&dom, w));
                let region = match by_wrapper {
                    Some(r) => Some(r),
                    None => {
                        let found = extract::region::find(&dom, keywords).ok();
                        if stored.is_some() && found.is_some() {
                            moved.push(name.clone());
                        }
                        found
                    }
                };
                match region {
                    Some(r) => {
                        wrappers.insert(name.clone(), r.wrapper.clone());
                        vocabulary::region_node(&r, style)
                    }
                    None => {
                        // Keep following the old wrapper: the region may
                        // come back.
                        if let Some(w) = stored {
                            wrappers.insert(name.clone(), w.clone());
                        }
                        let mut empty = vocabulary::region_node(
                            &extract::Region {
                                xpath: String::new(),
                                wrapper: Wrapper::default(),
                                records: Vec::new(),
                            },
                            style,
                        );
                        empty.children.clear();
                        empty
                    }
                }
            }
        };
        extracted.insert(name.clone(), !node.children.is_empty());
        node.attrs.push(("clip", name.clone()));
        let (nodes, bytes) = weigh(std::slice::from_ref(&node));
        budget.nodes(nodes, bytes);
        budget.cpu_now();
        budget.check()?;
        hierarchy.children.push(node);
    }
    if !extracted.is_empty() {
        // The ids are made again, so their bytes are counted again.
        budget.forget_ids();
        assign_ids_within(&mut hierarchy, budget);
    }
    budget.check()?;
    Ok(WatchPage {
        hierarchy,
        sketch,
        template_drift,
        extracted,
        wrappers,
        moved,
    })
}

/// The DOM elements at the tree indices `nodes` that are not inside
/// another of them, in document order: the roots of the data regions.
fn maximal_elements(tree: &PageTree, nodes: &[usize]) -> Vec<crate::dom::NodeId> {
    let mut sorted: Vec<usize> = nodes
        .iter()
        .copied()
        .filter(|&i| tree.nodes.get(i).is_some_and(|n| !n.is_text()))
        .collect();
    sorted.sort_unstable();
    sorted.dedup();
    let mut roots = Vec::new();
    let mut covered_until = 0usize;
    for i in sorted {
        if i < covered_until {
            continue;
        }
        covered_until = tree.nodes[i].end as usize;
        roots.push(tree.nodes[i].dom);
    }
    roots
}

/// A "layout changed" event.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayoutEvent {
    /// Always `"layout"` (change events carry their kind).
    pub kind: &'static str,
    /// The structural drift measured, 0..1.
    pub drift: f64,
    /// The drift allowed.
    pub max_drift: f64,
    /// What the drift was measured against: `"previous page"` or
    /// `"template N of SET"`.
    pub against: String,
    /// Clips that selected something before and nothing now.
    pub lost: Vec<String>,
    /// Region clips found again elsewhere by their keywords.
    pub moved: Vec<String>,
    /// All of it in one line ([`LayoutEvent::summary`]).
    pub summary: String,
}

impl LayoutEvent {
    /// One line for feeds, status pages and alerts.
    fn summary(&self) -> String {
        let mut parts = Vec::new();
        if self.drift > self.max_drift {
            parts.push(format!(
                "structure drifted {:.0}% from the {} (allowed {:.0}%)",
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
        if !self.moved.is_empty() {
            parts.push(format!("regions moved: {}", self.moved.join(", ")));
        }
        parts.join("; ")
    }
}

/// Compares the page with the previous state: the new state to store and
/// the event to raise, if any. `xpath_found` tells, per XPath clip, whether
/// it selects something on this page.
pub fn assess(
    watch: &Watch,
    previous: &LayoutState,
    page: &WatchPage,
    xpath_found: &BTreeMap<String, bool>,
) -> (LayoutState, Option<LayoutEvent>) {
    let (drift, against) = match (&watch.layout.template, page.template_drift) {
        (Some(set), Some((index, drift))) => (drift, format!("template {index} of {set}")),
        _ => (
            previous
                .sketch
                .as_ref()
                .map_or(0.0, |s| 1.0 - s.similarity(&page.sketch)),
            "previous page".to_owned(),
        ),
    };
    let mut found: BTreeMap<String, bool> = xpath_found.clone();
    found.extend(page.extracted.iter().map(|(k, v)| (k.clone(), *v)));
    let newly_lost: Vec<String> = found
        .iter()
        .filter(|&(name, &now)| !now && previous.found.get(name).copied().unwrap_or(false))
        .map(|(name, _)| name.clone())
        .collect();
    // Lost clips stay lost until they select something again.
    let lost: BTreeSet<String> = previous
        .lost
        .iter()
        .chain(&newly_lost)
        .filter(|name| !found.get(*name).copied().unwrap_or(false))
        .cloned()
        .collect();
    let drifted = drift > watch.layout.max_drift;
    let abnormal = drifted || !lost.is_empty() || !page.moved.is_empty();
    let event = (abnormal && !previous.changed).then(|| {
        let mut e = LayoutEvent {
            kind: "layout",
            drift,
            max_drift: watch.layout.max_drift,
            against,
            lost: newly_lost,
            moved: page.moved.clone(),
            summary: String::new(),
        };
        e.summary = e.summary();
        e
    });
    // Against the previous page, a drift shows once (the next page is
    // compared with this one) and a move is followed by the new wrapper;
    // drift from a template and lost clips last until they end.
    let persists = (watch.layout.template.is_some() && drifted) || !lost.is_empty();
    let state = LayoutState {
        sketch: Some(page.sketch.clone()),
        found,
        wrappers: page.wrappers.clone(),
        lost,
        changed: persists,
    };
    (state, event)
}

/// Per XPath clip of `watch`, whether it selects something in `xml`.
pub fn xpath_clips_found(watch: &Watch, xml: &str) -> BTreeMap<String, bool> {
    let clips: Vec<(&String, &String)> = watch
        .clips
        .iter()
        .filter(|(_, c)| c.extract.is_none())
        .map(|(n, c)| (n, &c.xpath))
        .collect();
    if clips.is_empty() {
        return BTreeMap::new();
    }
    let Ok(doc) = HierarchyDoc::parse(xml) else {
        return BTreeMap::new();
    };
    clips
        .into_iter()
        .map(|(name, xpath)| {
            let any = doc.select_ids(xpath).is_ok_and(|ids| !ids.is_empty());
            (name.clone(), any)
        })
        .collect()
}
