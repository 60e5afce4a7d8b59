//! The page a watch compares: page text and the watch in; the hierarchy to
//! compare and store (with one node per extract clip, or only the page's
//! data under `monitor: data`), and what layout monitoring measures on it
//! ([`label_paths`], the DOM sketch, whether the watch's template and
//! region clips still find their data) out.
//!
//! Everything the build makes is charged to the check's page budget: a
//! page over it is an error, never a cut-short hierarchy. What the
//! measurements mean, and when they raise an event, is
//! [`super::layout`]'s business.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use crate::config::{ExtractSpec, TableKey, Watch};
use crate::extract::{self, region::Wrapper, vocabulary};
use crate::hierarchy::number::decimal_style_for_lang;
use crate::hierarchy::{
    HNode, Hierarchy, Kind, assign_ids_within, build_parts_within, build_parts_within_without_ids,
    build_within, build_within_without_ids, charge_ids_within, weigh,
};
use crate::page::budget::{Budget, Exceeded};
use crate::page::dom::Dom;
use crate::template::cluster::{Template, TemplateSet};
use crate::template::minhash::Sketch;
use crate::template::tree::PageTree;

/// A page built for a watch.
#[derive(Debug)]
pub struct WatchPage {
    /// The hierarchy to compare and store.
    pub hierarchy: Hierarchy,
    /// The page's DOM structure sketch (diagnostic).
    pub sketch: Sketch,
    /// The label paths of [`WatchPage::hierarchy`] ([`label_paths`]).
    pub labels: Vec<u64>,
    /// Drift from the nearest template of the watch's template set, when it
    /// has one and the set is not empty (DOM-level: diagnostic).
    pub template_drift: Option<(usize, f64)>,
    /// Whether the nearest template's data regions are found in the page:
    /// the page fits the template and the template finds data in it.
    /// `None` without a template set.
    pub template_regions: Option<bool>,
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
/// regions). `stored` holds the wrappers that found each region clip's
/// region on the previous page (tried first). Everything is charged to
/// `budget`: a page over it is an error, never a cut-short hierarchy.
#[expect(
    clippy::too_many_lines,
    reason = "the page's stages in order: decode, parse, budget, hierarchy, extraction"
)]
pub fn build_page(
    html: &str,
    url: Option<&str>,
    watch: &Watch,
    stored: &BTreeMap<String, Wrapper>,
    templates: Option<&mut TemplateSet>,
    budget: &Budget,
) -> Result<WatchPage, Exceeded> {
    let dom = Dom::parse_within(html, budget);
    budget.check()?;
    let has_extract = watch.clips.values().any(|c| c.extract.is_some());
    // The simplified tree serves only the template set and the extract
    // clips; without either, the sketch is taken straight from the DOM and
    // the tree stays empty.
    let (tree, sketch) = if templates.is_some() || has_extract {
        let tree = PageTree::from_dom(&dom);
        let sketch = Sketch::of_tree(&tree, None);
        (tree, sketch)
    } else {
        (PageTree::default(), Sketch::of_dom(&dom))
    };
    // Drift from the nearest template, and that template's data regions.
    let mut data_roots = Vec::new();
    let mut template: Option<&Template> = None;
    let mut template_regions = None;
    let template_drift = templates.and_then(|set| {
        let features = set.features(&tree);
        let (index, similarity) = set.nearest(&features)?;
        let t = set.templates.get(index)?;
        let data = t.data_nodes(&features.sequence);
        if watch.data_only {
            data_roots = maximal_elements(&tree, &data);
        }
        // Article clips use the template only for a page that fits it.
        let fits = similarity >= 1.0 - set.threshold;
        if fits {
            template = Some(t);
        }
        template_regions = Some(fits && !data.is_empty());
        Some((index, t.drift(&features.sequence).clamp(0.0, 1.0)))
    });
    // The ids are charged to the budget but written only for an ignore
    // list, which is resolved over them: the rest of a check derives the
    // few ids it reports, and the store keeps the hierarchy without them.
    let with_ids = !watch.ignore.is_empty();
    let whole = |budget| {
        if with_ids {
            build_within(&dom, url, budget)
        } else {
            build_within_without_ids(&dom, url, budget)
        }
    };
    let parts = |roots: &[_], budget| {
        if with_ids {
            build_parts_within(&dom, url, roots, budget)
        } else {
            build_parts_within_without_ids(&dom, url, roots, budget)
        }
    };
    let mut hierarchy = if watch.data_only && !has_extract {
        if template_drift.is_some() {
            parts(&data_roots, budget)
        } else {
            // No template learned yet: compare the whole page rather than
            // nothing.
            whole(budget)
        }
    } else if watch.data_only {
        let mut h = parts(&[], budget);
        h.children.clear();
        h
    } else {
        whole(budget)
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
                let stored = stored.get(name);
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
    let rekeyed = apply_keys(&mut hierarchy, &watch.keys);
    if !extracted.is_empty() || rekeyed > 0 {
        // The ids are made again, so their bytes are counted again.
        budget.forget_ids();
        if with_ids {
            assign_ids_within(&mut hierarchy, budget);
        } else {
            charge_ids_within(&hierarchy, budget);
        }
    }
    budget.check()?;
    let labels = label_paths(&hierarchy);
    Ok(WatchPage {
        hierarchy,
        sketch,
        labels,
        template_drift,
        template_regions,
        extracted,
        wrappers,
        moved,
    })
}

/// Re-keys the tables the watch names in `keys:` by the columns it gives
/// ([`crate::hierarchy::key::rekey`]); a table some row of which lacks a
/// column keeps the page's own key. Returns how many tables were re-keyed.
fn apply_keys(h: &mut Hierarchy, keys: &[TableKey]) -> usize {
    fn walk(nodes: &mut [HNode], keys: &[TableKey], n: &mut usize) {
        for node in nodes {
            if node.kind == Kind::Table
                && let Some(k) = keys
                    .iter()
                    .find(|k| node.label.as_deref() == Some(k.table.as_str()))
            {
                let columns: Vec<&str> = k.columns.iter().map(String::as_str).collect();
                if crate::hierarchy::key::rekey(node, &columns) {
                    *n += 1;
                }
            }
            walk(&mut node.children, keys, n);
        }
    }
    let mut n = 0;
    if !keys.is_empty() {
        walk(&mut h.children, keys, &mut n);
    }
    n
}

/// The DOM elements at the tree indices `nodes` that are not inside
/// another of them, in document order: the roots of the data regions.
fn maximal_elements(tree: &PageTree, nodes: &[usize]) -> Vec<crate::page::dom::NodeId> {
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

/// The hierarchy's label structure: one hash per distinct path of element
/// names from the root, with the labels that name a structure (a table's
/// `label`, a cell's `col`, an extract clip's `clip`), sorted. Row keys,
/// item texts and headings are records, not structure, and are left out,
/// so rows and headlines coming and going do not count as drift. Hashes
/// are BLAKE3 (stable across versions and platforms: they are stored).
pub fn label_paths(h: &Hierarchy) -> Vec<u64> {
    fn segment(kind: Kind, label: Option<&str>, clip: Option<&str>) -> String {
        let mut s = kind.name().to_owned();
        if let Some(l) = label {
            s.push_str("[@");
            s.push_str(l);
            s.push(']');
        }
        if let Some(c) = clip {
            s.push_str("[clip=");
            s.push_str(c);
            s.push(']');
        }
        s
    }
    fn chain(parent: &[u8; 8], seg: &str) -> [u8; 8] {
        let mut hasher = blake3::Hasher::new();
        hasher.update(parent);
        hasher.update(seg.as_bytes());
        let mut out = [0u8; 8];
        out.copy_from_slice(&hasher.finalize().as_bytes()[..8]);
        out
    }
    // A path's hash depends only on its parent's and on the node's segment,
    // and a table's rows (its cells column by column) share both: each
    // distinct pair is hashed once, so a table of thousands of cells costs
    // a few BLAKE3 calls, not one per cell.
    type Step<'a> = ([u8; 8], Kind, Option<&'a str>, Option<&'a str>);
    let mut known: FxHashMap<Step<'_>, [u8; 8]> = FxHashMap::default();
    let mut out = Vec::new();
    // Depth-first with an explicit stack: a hostile page's depth is
    // bounded by its budget, not by the thread's stack.
    let mut stack: Vec<(&HNode, [u8; 8])> = h.children.iter().map(|c| (c, [0u8; 8])).collect();
    while let Some((node, parent)) = stack.pop() {
        let label = match node.kind {
            Kind::Table => node.label.as_deref(),
            Kind::Cell => node.col.as_deref(),
            _ => None,
        };
        let step = (parent, node.kind, label, node.attr("clip"));
        let hash = match known.get(&step) {
            Some(hash) => *hash,
            None => {
                let hash = chain(&parent, &segment(node.kind, label, step.3));
                known.insert(step, hash);
                out.push(u64::from_le_bytes(hash));
                hash
            }
        };
        stack.extend(node.children.iter().map(|c| (c, hash)));
    }
    out.sort_unstable();
    out.dedup();
    out
}
