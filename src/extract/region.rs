//! DEIP data regions (docs/algorithms.md, "DEIP data regions"): a few keywords the user
//! copied from a list page in, the list's region and all its records out,
//! plus a keyword-free [`Wrapper`] that finds the same region again on later
//! versions of the page.
//!
//! # Index paths
//!
//! Every node of `<body>` has an *index path*: the 0-based positions among
//! *element* children on the way down from `<body>` ([`index_path`],
//! [`resolve`]). Text nodes, comments and the invisible elements of
//! [`is_skipped`] (`<script>`, `<style>` ...) are not counted: a page that
//! gains a script tag or a whitespace change keeps its paths, which makes
//! element-only paths more stable than the paper's all-children paths. A text
//! node's index path is its parent element's ([`text_index_paths`]).
//!
//! # Finding a region ([`find`])
//!
//! 1. **Matches.** Keywords and page text are compared lower-cased with
//!    whitespace runs collapsed (substring match). The body's text is one
//!    string built like [`Dom::text_content`], so a keyword split by inline
//!    tags (`Ap<b>ple</b>`) still matches; a match is attributed to the
//!    deepest element holding all of it. A match that crosses a block
//!    boundary (`<td>Apple</td><td>189.50</td>` for `"apple 189.50"`) only
//!    counts when that element is small (at most [`SMALL_FACTOR`] times the
//!    keyword), so a keyword never matches "across" a whole page.
//! 2. **Runs (the paper's improvement, "Runs: records and the main data region").** The matches in
//!    document order (= the paper's depth-first list of index paths) are
//!    cut into runs that hold every matched keyword once. For every match,
//!    the run ending there is the latest match of each keyword; runs are
//!    kept deepest common ancestor first and may not share a match, so
//!    scattered partial matches (a keyword in the menu) are left over as
//!    pseudo-records and dropped. A keyword with no match anywhere is
//!    ignored; no match at all is [`RegionError::NoMatch`].
//! 3. **Templates and data areas.** A run's template is the tag path of its
//!    lowest common ancestor plus each keyword's depth below it (the paper's
//!    relative depths); runs with the same template form one data area.
//! 4. **Region root and record level.** With several runs in an area (each
//!    record holds all keywords, the paper's K > N case), the root is the
//!    runs' longest common prefix and records sit at the shallowest level
//!    that separates the runs. With one run, its matches either sit in
//!    different records (what users do: two company names from two rows)
//!    or are fields of one record (the paper's K = N case). The level that
//!    separates the matches is taken as the record level unless those nodes
//!    are *field-like* (the keywords make up at least [`FIELD_SHARE`] of
//!    their text: a cell, a title); then we climb as the paper does while
//!    the sibling count is small: the first ancestor with at least
//!    [`MIN_REPEAT`] similar siblings that is not field-like is the record,
//!    else the ancestor with most similar siblings.
//! 5. **Denoising.** Records are not only the nodes holding keywords (two
//!    keywords would give two records): every node at the same tag path
//!    below the root whose *shape* has a Jaccard similarity of at least
//!    [`SIMILARITY`] with a keyword-holding record is a record. A shape is
//!    the set of tag paths in a node's subtree, formatting tags lifted;
//!    every node adds its path twice, ending in its tag alone and in its
//!    tag with its first class without digits (`td.title/span` and
//!    `td.title/span.rank`; generated classes such as `css-1x2y` are
//!    skipped): the bare tags keep rows with and without an optional badge
//!    together, the classes tell a title row from a subtext row.
//! 6. **Containers of records.** When the keywords came from different
//!    lists (or rows of a grid), the records found so far are the lists.
//!    If inside each keyword-holding record the first node on the way down
//!    to the keyword with at least two similar children has children that
//!    are not table cells, hold at least [`LIST_SHARE`] of the record's
//!    text (headings aside), and are not field-like unless there are more
//!    of them than records, those children are the records (repeated while
//!    it applies). Records that are chains of single-child wrappers (no
//!    text of their own) around an `<article>`, HTML's element for a
//!    self-contained item, are replaced by the article. Other wrappers are
//!    kept: on next-eval, the truth marks the outer repeated element more
//!    often than the inner one.
//! 7. **Multi-element records.** When the keyword-holding siblings never
//!    follow one another directly (Hacker News: title row, subtext row,
//!    spacer row), a record is a run of siblings from one *starter* (the
//!    earliest sibling kind that repeats about as often) to the next
//!    ([`Grouping::Blocks`]); when the hits sit under different sibling
//!    headings and a section holds more than one kind of element
//!    (`h3 p ul h3 p ul`), a record is a heading and what follows it
//!    ([`Grouping::Sections`]), unless the keyword-holding kind comes in
//!    runs longer than [`MAX_SECTION_RUN`] (dates over hourly rows: the
//!    rows are the records). Elements without text or image are left out
//!    of a record (spacers).
//! 8. **Main data region.** Each area gives a region; the one with most
//!    records is the main data region (paper, definition 3), the area with
//!    most runs winning ties.
//!
//! # Fields
//!
//! A record's fields are its elements that carry text of their own
//! (formatting tags such as `<b>` count as their parent's text), its links
//! without text and its images (text = `alt`, `href` = `src`); a text inside
//! a link gets the link's `href`. A field's *key* is its tag path inside the
//! record with the first class of each step (`td.price/span`) plus its
//! occurrence number; keys are numbered in order of first appearance over
//! the records, field `fN` is key number N. The keys (hashed) are stored in the
//! wrapper, so [`apply`] on a later version names the same field the same.

use std::cell::RefCell;
use std::rc::Rc;

use html5ever::LocalName;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::{Field, Record, Region, collapse_whitespace};
use crate::page::dom::{Dom, NodeData, NodeId, is_inline};
use crate::template::minhash::jaccard;

/// Jaccard similarity of two subtree shapes above which two nodes with the
/// same tag count as the same kind of record. Half the tag paths shared
/// keeps rows with and without an optional link or badge together and
/// separates header rows (`th` instead of `td`) and pagers.
pub const SIMILARITY: f64 = 0.5;

/// Fewest similar siblings for a node to count as a record when climbing
/// from a single record's keywords (the paper's "sibling count below the
/// expected record count", with the expected count unknown).
pub const MIN_REPEAT: usize = 3;

/// Share of a node's text made of keywords above which the node is a field
/// (a cell, a title) rather than a record holding the keyword.
pub const FIELD_SHARE: f64 = 0.5;

/// A match crossing a block boundary counts only in an element whose text
/// is at most this many times the keyword's length.
pub const SMALL_FACTOR: usize = 2;

/// Longest average run of alike keyword-holding siblings under headings
/// for the headings to start records (`h3 p p ul`); longer runs are lists
/// of records under group headings.
pub const MAX_SECTION_RUN: usize = 3;

/// Deepest chain of single-child wrappers looked through for an
/// `<article>` record.
const MAX_WRAPPERS: usize = 3;

/// Share of a container's text its repeated items must hold for the
/// container to be a list of records rather than a record.
pub const LIST_SHARE: f64 = 0.7;

/// Most keyword matches considered (a one-letter keyword matches
/// everywhere; further matches are ignored).
pub const MAX_MATCHES: usize = 20_000;

/// Most nodes of a subtree looked at for its shape.
const MAX_SHAPE_NODES: usize = 3_000;

/// Most example records a wrapper keeps shapes of.
const MAX_EXEMPLARS: usize = 3;

/// How records are made of the nodes found at the record path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grouping {
    /// Every node is one record.
    #[default]
    Single,
    /// Every node starts a record that runs to the next one (its following
    /// siblings, e.g. a title row and its subtext row).
    Blocks,
    /// Like `Blocks`, the starters being headings (`h3` and what follows it).
    Sections,
}

/// A region's wrapper: where its root is and which nodes below it are
/// records, reusable without keywords on later versions of the page
/// ([`apply`]). Stored by the caller (serde).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wrapper {
    /// Element-child indices (0-based, [`is_skipped`] elements not counted)
    /// from `<body>` to the region root.
    pub root: Vec<u32>,
    /// The root's tag name.
    pub root_tag: String,
    /// The root's tag path from `<body>` without indices (`body/div/table`),
    /// used to prefer the right node when the index path no longer fits.
    pub root_path: String,
    /// The root's `id` attribute, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_id: Option<String>,
    /// Tag names from the root (exclusive) down to the record (starter)
    /// nodes: `["tr"]`, or `["li", "div"]` when records are wrapped.
    pub record_path: Vec<String>,
    /// Shapes of up to three example records: sorted 32-bit FNV-1a hashes
    /// of the tag paths in their subtrees.
    pub shapes: Vec<Vec<u32>>,
    /// How record nodes make records.
    #[serde(default)]
    pub grouping: Grouping,
    /// 32-bit FNV-1a hashes of the field keys in naming order: field `f1`
    /// is key 0 (see the module doc). Hashes, because keys are long tag
    /// paths and only their identity matters.
    #[serde(default)]
    pub fields: Vec<u32>,
}

/// Why no region was found.
#[derive(Debug, thiserror::Error)]
pub enum RegionError {
    /// No keyword was given (or all were blank).
    #[error("no keywords given")]
    NoKeywords,
    /// No text on the page contains any of the keywords.
    #[error("no text on the page contains any of the keywords")]
    NoMatch,
}

/// Finds the main data region holding `keywords` (see the module doc).
pub fn find(dom: &Dom, keywords: &[String]) -> Result<Region, RegionError> {
    let kws: Vec<String> = {
        let mut v: Vec<String> = keywords.iter().map(|k| lowercase_collapsed(k)).collect();
        v.retain(|k| !k.is_empty());
        let mut seen = Vec::new();
        v.retain(|k| {
            let new = !seen.contains(k);
            seen.push(k.clone());
            new
        });
        v
    };
    if kws.is_empty() {
        return Err(RegionError::NoKeywords);
    }
    let ix = Index::build(dom).ok_or(RegionError::NoMatch)?;
    let matches = ix.matches(&kws);
    if matches.is_empty() {
        return Err(RegionError::NoMatch);
    }
    let runs = ix.runs(&matches, kws.len());
    let areas = ix.areas(&matches, &runs);
    let mut best: Option<Layout> = None;
    for area in &areas {
        let Some(l) = ix.area_layout(&matches, &runs, area, &kws) else {
            continue;
        };
        // Strictly more records: the first (earliest, most runs) area wins
        // ties.
        if best
            .as_ref()
            .is_none_or(|b| l.records.len() > b.records.len())
        {
            best = Some(l);
        }
    }
    let layout = best.ok_or(RegionError::NoMatch)?;
    Ok(ix.region(&layout, Vec::new()))
}

/// Applies a learned wrapper to a (later version of the) page: the node at
/// the wrapper's index path if it has the root's tag and at least one record
/// below it; otherwise (the layout around the region changed) the element
/// with the root's tag (and `id`, when it had one) that holds most records,
/// at least two, preferring the same tag path from `<body>`. `None` when
/// nothing fits: the page's layout changed.
pub fn apply(dom: &Dom, wrapper: &Wrapper) -> Option<Region> {
    let ix = Index::build(dom)?;
    let shapes: Vec<Rc<Vec<u32>>> = wrapper.shapes.iter().cloned().map(Rc::new).collect();
    let rel: Vec<LocalName> = wrapper
        .record_path
        .iter()
        .map(|t| LocalName::from(t.as_str()))
        .collect();
    let layout_at = |root: NodeId| -> Layout {
        let starters = ix.expand(root, &rel, &shapes, wrapper.grouping);
        let records = ix.group(&starters, wrapper.grouping);
        Layout {
            root,
            rel: rel.clone(),
            shapes: shapes.clone(),
            grouping: wrapper.grouping,
            records,
        }
    };
    if let Some(root) = resolve(dom, &wrapper.root)
        && ix.tag(root).is_some_and(|t| *t == *wrapper.root_tag)
    {
        let l = layout_at(root);
        if !l.records.is_empty() {
            return Some(ix.region(&l, wrapper.fields.clone()));
        }
    }
    let mut best: Option<(usize, bool, Layout)> = None;
    for n in ix.elements() {
        if ix.tag(n).is_none_or(|t| *t != *wrapper.root_tag) {
            continue;
        }
        if let Some(id) = &wrapper.root_id
            && ix.dom.element(n).and_then(|e| e.attr("id")) != Some(id.as_str())
        {
            continue;
        }
        let l = layout_at(n);
        if l.records.len() < 2 {
            continue;
        }
        let same_path = ix.tag_path(n) == wrapper.root_path;
        let key = (l.records.len(), same_path);
        if best
            .as_ref()
            .is_none_or(|(c, p, _)| (key.1, key.0) > (*p, *c))
        {
            best = Some((key.0, key.1, l));
        }
    }
    best.map(|(_, _, l)| ix.region(&l, wrapper.fields.clone()))
}

/// True for elements that are invisible structure: not counted in index
/// paths, shapes or text.
pub fn is_skipped(name: &str) -> bool {
    matches!(
        name,
        "script" | "style" | "noscript" | "template" | "link" | "meta"
    )
}

/// The index path of `node` (an element inside `<body>`): element-child
/// positions from `<body>`, [`is_skipped`] elements not counted. `Some([])`
/// for `<body>` itself; `None` outside the body or for a non-element.
pub fn index_path(dom: &Dom, node: NodeId) -> Option<Vec<u32>> {
    let body = dom.body()?;
    dom.element(node)?;
    let mut path = Vec::new();
    let mut cur = node;
    while cur != body {
        let parent = dom.parent(cur)?;
        let pos = dom
            .children(parent)
            .filter(|&c| counted(dom, c))
            .position(|c| c == cur)?;
        path.push(u32::try_from(pos).ok()?);
        cur = parent;
    }
    path.reverse();
    Some(path)
}

/// The element at index path `path` below `<body>`, if it exists.
pub fn resolve(dom: &Dom, path: &[u32]) -> Option<NodeId> {
    let mut cur = dom.body()?;
    for &i in path {
        cur = dom
            .children(cur)
            .filter(|&c| counted(dom, c))
            .nth(usize::try_from(i).ok()?)?;
    }
    Some(cur)
}

/// Every non-blank text node of `<body>` (outside [`is_skipped`] elements)
/// in document order with its index path (its parent element's).
pub fn text_index_paths(dom: &Dom) -> Vec<(NodeId, Vec<u32>)> {
    let Some(body) = dom.body() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut stack = vec![(body, Vec::new())];
    while let Some((n, path)) = stack.pop() {
        match &dom.node(n).data {
            NodeData::Text(t) if !t.trim().is_empty() => out.push((n, path)),
            NodeData::Element(_) => {
                let mut items = Vec::new();
                let mut i = 0u32;
                for c in dom.children(n) {
                    match &dom.node(c).data {
                        NodeData::Text(_) => items.push((c, path.clone())),
                        NodeData::Element(e) if !is_skipped(&e.name) => {
                            let mut p = path.clone();
                            p.push(i);
                            i += 1;
                            items.push((c, p));
                        }
                        _ => {}
                    }
                }
                stack.extend(items.into_iter().rev());
            }
            _ => {}
        }
    }
    out
}

/// Lower case, whitespace runs collapsed to one space, trimmed.
fn lowercase_collapsed(s: &str) -> String {
    let mut out = String::new();
    for w in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        push_lower(&mut out, w);
    }
    out
}

fn push_lower(out: &mut String, w: &str) {
    for c in w.chars() {
        out.extend(c.to_lowercase());
    }
}

fn counted(dom: &Dom, n: NodeId) -> bool {
    dom.element(n).is_some_and(|e| !is_skipped(&e.name))
}

/// Formatting elements whose text belongs to their parent (for shapes and
/// fields).
fn is_formatting(name: &str) -> bool {
    matches!(
        name,
        "b" | "i"
            | "em"
            | "strong"
            | "u"
            | "s"
            | "small"
            | "big"
            | "font"
            | "mark"
            | "sub"
            | "sup"
            | "tt"
            | "strike"
            | "abbr"
            | "cite"
            | "q"
            | "dfn"
            | "kbd"
            | "var"
            | "samp"
            | "code"
            | "nobr"
            | "wbr"
            | "br"
    )
}

fn heading_level(name: &str) -> Option<u8> {
    match name {
        "h1" => Some(1),
        "h2" => Some(2),
        "h3" => Some(3),
        "h4" => Some(4),
        "h5" => Some(5),
        "h6" => Some(6),
        _ => None,
    }
}

const FNV_OFFSET: u32 = 0x811c_9dc5;
const FNV_PRIME: u32 = 0x0100_0193;

/// One FNV-1a step: the hash of `prefix + "/" + tag`. Written out here (not
/// `std::hash`) because shapes are stored in wrappers and must hash the
/// same in every build.
fn fnv_step(prefix: u32, tag: &str) -> u32 {
    let mut h = prefix;
    for b in std::iter::once(b'/').chain(tag.bytes()) {
        h ^= u32::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// One keyword occurrence.
#[derive(Debug, Clone, Copy)]
struct Match {
    /// The deepest element holding the whole occurrence.
    node: NodeId,
    /// Which keyword (index into the normalised keywords).
    kw: usize,
    /// Byte offset in the body text (document order).
    pos: usize,
}

/// A matched element and the length of the keyword it matched.
type Mark = (NodeId, usize);

/// A run: one match of every matched keyword (indices into the matches).
#[derive(Debug, Clone)]
struct Run {
    members: Vec<usize>,
    lca: NodeId,
}

/// A data area: runs with the same template.
#[derive(Debug, Clone)]
struct Area {
    runs: Vec<usize>,
}

/// A region as found: the root, how its records are reached, the records
/// (each a list of sibling elements).
#[derive(Debug, Clone)]
struct Layout {
    root: NodeId,
    rel: Vec<LocalName>,
    shapes: Vec<Rc<Vec<u32>>>,
    grouping: Grouping,
    records: Vec<Vec<NodeId>>,
}

/// One text node's place in the body text.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: usize,
    end: usize,
    node: NodeId,
    /// Block-boundary counter: two spans on the same line are separated by
    /// inline markup only.
    line: u32,
}

/// The body's text with every element's range in it, and node depths.
struct Index<'a> {
    dom: &'a Dom,
    body: NodeId,
    /// Lower-cased, whitespace-collapsed text of the body.
    text: String,
    /// Per node id: byte range of the element's text in `text`.
    range: Vec<(usize, usize)>,
    /// Per node id: depth below the document with `<body>` at 1; 0 for
    /// nodes outside the body or under skipped elements.
    depth: Vec<u32>,
    spans: Vec<Span>,
    shapes: RefCell<FxHashMap<NodeId, Rc<Vec<u32>>>>,
}

impl<'a> Index<'a> {
    fn build(dom: &'a Dom) -> Option<Index<'a>> {
        enum Step {
            Enter(NodeId),
            Exit(NodeId),
        }
        let body = dom.body()?;
        let mut ix = Index {
            dom,
            body,
            text: String::new(),
            range: vec![(0, 0); dom.len()],
            depth: vec![0; dom.len()],
            spans: Vec::new(),
            shapes: RefCell::new(FxHashMap::default()),
        };
        let mut pending = false;
        let mut line = 0u32;
        let mut stack = vec![Step::Enter(body)];
        while let Some(step) = stack.pop() {
            let n = match step {
                Step::Exit(n) => {
                    ix.range[n].1 = ix.text.len();
                    if ix.dom.element(n).is_some_and(|e| !is_inline(&e.name)) {
                        pending = true;
                        line += 1;
                    }
                    continue;
                }
                Step::Enter(n) => n,
            };
            let parent_depth = dom.parent(n).map_or(0, |p| ix.depth[p]);
            match &dom.node(n).data {
                NodeData::Text(t) => {
                    ix.depth[n] = parent_depth + 1;
                    if t.trim().is_empty() {
                        pending |= !t.is_empty();
                        continue;
                    }
                    pending |= t.starts_with(char::is_whitespace);
                    let mut start = None;
                    for w in t.split_whitespace() {
                        if pending && !ix.text.is_empty() {
                            ix.text.push(' ');
                        }
                        start.get_or_insert(ix.text.len());
                        push_lower(&mut ix.text, w);
                        pending = true;
                    }
                    pending = t.ends_with(char::is_whitespace);
                    if let Some(start) = start {
                        ix.spans.push(Span {
                            start,
                            end: ix.text.len(),
                            node: n,
                            line,
                        });
                    }
                }
                NodeData::Element(e) if is_skipped(&e.name) => {}
                NodeData::Element(e) => {
                    ix.depth[n] = if n == body { 1 } else { parent_depth + 1 };
                    ix.range[n].0 = ix.text.len();
                    if !is_inline(&e.name) {
                        pending = true;
                        line += 1;
                    }
                    stack.push(Step::Exit(n));
                    let before = stack.len();
                    stack.extend(dom.children(n).map(Step::Enter));
                    stack[before..].reverse();
                }
                _ => {}
            }
        }
        Some(ix)
    }

    fn tag(&self, n: NodeId) -> Option<&LocalName> {
        self.dom.element(n).map(|e| &e.name)
    }

    /// Element children that count (not skipped).
    fn kids(&self, n: NodeId) -> Vec<NodeId> {
        self.dom
            .children(n)
            .filter(|&c| counted(self.dom, c))
            .collect()
    }

    /// Every counted element of the body, in document order.
    fn elements(&self) -> Vec<NodeId> {
        let mut out = Vec::new();
        let mut stack = vec![self.body];
        while let Some(n) = stack.pop() {
            out.push(n);
            let before = stack.len();
            stack.extend(self.kids(n));
            stack[before..].reverse();
        }
        out
    }

    /// The element's text (trimmed, lower-cased).
    fn text_of(&self, n: NodeId) -> &str {
        let (s, e) = self.range[n];
        self.text.get(s..e).unwrap_or("").trim()
    }

    fn parent(&self, n: NodeId) -> NodeId {
        match self.dom.parent(n) {
            Some(p) if n != self.body => p,
            _ => n,
        }
    }

    fn lca(&self, mut a: NodeId, mut b: NodeId) -> NodeId {
        while self.depth[a] > self.depth[b] {
            a = self.parent(a);
        }
        while self.depth[b] > self.depth[a] {
            b = self.parent(b);
        }
        while a != b {
            let (pa, pb) = (self.parent(a), self.parent(b));
            if pa == a || pb == b {
                return self.body;
            }
            a = pa;
            b = pb;
        }
        a
    }

    /// The ancestor-or-self of `n` at `depth` (`<body>` if shallower).
    fn ancestor_at(&self, mut n: NodeId, depth: u32) -> NodeId {
        while self.depth[n] > depth && n != self.body {
            n = self.parent(n);
        }
        n
    }

    fn is_ancestor(&self, a: NodeId, mut n: NodeId) -> bool {
        while self.depth[n] > self.depth[a] && n != self.body {
            n = self.parent(n);
        }
        n == a
    }

    /// Tag path from `<body>` without indices: `body/div/table`.
    fn tag_path(&self, n: NodeId) -> String {
        let mut tags = Vec::new();
        let mut cur = n;
        loop {
            if let Some(t) = self.tag(cur) {
                tags.push(t.to_string());
            }
            if cur == self.body || self.depth[cur] <= 1 {
                break;
            }
            cur = self.parent(cur);
        }
        tags.reverse();
        tags.join("/")
    }

    fn span_at(&self, pos: usize) -> Option<&Span> {
        let i = self.spans.partition_point(|s| s.start <= pos);
        let s = self.spans.get(i.checked_sub(1)?)?;
        (pos < s.end).then_some(s)
    }

    /// Every keyword occurrence, in document order, one per (element,
    /// keyword).
    fn matches(&self, kws: &[String]) -> Vec<Match> {
        let mut out = Vec::new();
        'kws: for (k, kw) in kws.iter().enumerate() {
            for (s, _) in self.text.match_indices(kw.as_str()) {
                let e = s + kw.len();
                let (Some(a), Some(b)) = (self.span_at(s), self.span_at(e - 1)) else {
                    continue;
                };
                let mut n = self.parent(a.node);
                while !(self.range[n].0 <= s && self.range[n].1 >= e) && n != self.body {
                    n = self.parent(n);
                }
                if a.line != b.line && self.text_of(n).len() > SMALL_FACTOR * kw.len() {
                    continue;
                }
                out.push(Match {
                    node: n,
                    kw: k,
                    pos: s,
                });
                if out.len() >= MAX_MATCHES {
                    break 'kws;
                }
            }
        }
        out.sort_by_key(|m| (m.pos, m.kw));
        let mut seen = rustc_hash::FxHashSet::default();
        out.retain(|m| seen.insert((m.node, m.kw)));
        out
    }

    /// The paper's runs (module doc, step 2).
    fn runs(&self, matches: &[Match], n_kws: usize) -> Vec<Run> {
        let wanted: Vec<bool> = {
            let mut v = vec![false; n_kws];
            for m in matches {
                v[m.kw] = true;
            }
            v
        };
        let mut last: Vec<Option<usize>> = vec![None; n_kws];
        let mut cands: Vec<(u32, usize, Run)> = Vec::new();
        for (j, m) in matches.iter().enumerate() {
            last[m.kw] = Some(j);
            let complete = last.iter().zip(&wanted).all(|(l, w)| !*w || l.is_some());
            if !complete {
                continue;
            }
            let mut members: Vec<usize> = last.iter().flatten().copied().collect();
            members.sort_unstable();
            let lca = members
                .iter()
                .map(|&i| matches[i].node)
                .reduce(|a, b| self.lca(a, b))
                .unwrap_or(self.body);
            cands.push((self.depth[lca], j, Run { members, lca }));
        }
        // Deepest common ancestor first: runs inside one record beat runs
        // spanning records; a match serves one run.
        cands.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut used = vec![false; matches.len()];
        let mut runs: Vec<(usize, Run)> = Vec::new();
        for (_, j, run) in cands {
            if run.members.iter().any(|&i| used[i]) {
                continue;
            }
            for &i in &run.members {
                used[i] = true;
            }
            runs.push((j, run));
        }
        runs.sort_by_key(|(j, _)| *j);
        runs.into_iter().map(|(_, r)| r).collect()
    }

    /// Groups runs by template (module doc, step 3): areas with most runs
    /// first, in document order of their first run among equals.
    fn areas(&self, matches: &[Match], runs: &[Run]) -> Vec<Area> {
        let mut keys: FxHashMap<(String, Vec<(usize, u32)>), usize> = FxHashMap::default();
        let mut areas: Vec<Area> = Vec::new();
        for (r, run) in runs.iter().enumerate() {
            let d = self.depth[run.lca];
            let rel: Vec<(usize, u32)> = run
                .members
                .iter()
                .map(|&i| (matches[i].kw, self.depth[matches[i].node] - d))
                .collect();
            let key = (self.tag_path(run.lca), rel);
            let next = areas.len();
            let a = *keys.entry(key).or_insert(next);
            if a == next {
                areas.push(Area { runs: Vec::new() });
            }
            areas[a].runs.push(r);
        }
        // Most runs first, so that ties in record count go to them.
        areas.sort_by_key(|a| std::cmp::Reverse(a.runs.len()));
        areas
    }

    /// The shallowest level below the nodes' common ancestor that puts
    /// every node (sorted, none an ancestor of another) in its own subtree,
    /// and the nodes' ancestors at that level.
    fn separating(&self, nodes: &[NodeId]) -> Vec<NodeId> {
        let level = nodes
            .windows(2)
            .map(|w| self.depth[self.lca(w[0], w[1])] + 1)
            .max()
            .unwrap_or(0);
        let mut out: Vec<NodeId> = nodes
            .iter()
            .filter(|&&n| self.depth[n] >= level)
            .map(|&n| self.ancestor_at(n, level))
            .collect();
        out.dedup();
        out
    }

    /// True when keywords make up at least [`FIELD_SHARE`] of the text of
    /// most of `nodes`.
    fn field_like(&self, nodes: &[NodeId], marks: &[Mark]) -> bool {
        let fields = nodes
            .iter()
            .filter(|&&n| {
                let len = self.text_of(n).len().max(1);
                let kw: usize = marks
                    .iter()
                    .filter(|m| self.is_ancestor(n, m.0))
                    .map(|m| m.1)
                    .sum();
                kw as f64 >= FIELD_SHARE * len as f64
            })
            .count();
        2 * fields >= nodes.len()
    }

    /// The region of one data area (module doc, step 4).
    fn area_layout(
        &self,
        matches: &[Match],
        runs: &[Run],
        area: &Area,
        kws: &[String],
    ) -> Option<Layout> {
        let mut area_matches: Vec<Match> = area
            .runs
            .iter()
            .flat_map(|&r| runs[r].members.iter().map(|&i| matches[i]))
            .collect();
        area_matches.sort_by_key(|m| m.pos);
        let marks: Vec<Mark> = area_matches
            .iter()
            .map(|m| (m.node, kws[m.kw].len()))
            .collect();
        let mut xs: Vec<NodeId> = area.runs.iter().map(|&r| runs[r].lca).collect();
        xs.dedup();
        if xs.len() >= 2 {
            let root = xs
                .iter()
                .copied()
                .reduce(|a, b| self.lca(a, b))
                .unwrap_or(self.body);
            let recs = self.separating(&xs);
            return self.layout(root, &recs, &marks, true);
        }
        let x = *xs.first()?;
        // Units: matched elements, an element holding another's match
        // standing for both.
        let mut units: Vec<NodeId> = Vec::new();
        for m in &area_matches {
            if units.iter().any(|&u| self.is_ancestor(u, m.node)) {
                continue;
            }
            units.retain(|&u| !self.is_ancestor(m.node, u));
            units.push(m.node);
        }
        units.sort_by_key(|&u| self.range[u].0);
        if units.len() >= 2 {
            let recs = self.separating(&units);
            let here = self.layout(x, &recs, &marks, true);
            if !self.field_like(&recs, &marks) {
                return here;
            }
            return self.climb(x, here, &marks);
        }
        self.climb(units[0], None, &marks)
    }

    /// The paper's climb from one record's keywords (module doc, step 4).
    fn climb(&self, from: NodeId, fallback: Option<Layout>, marks: &[Mark]) -> Option<Layout> {
        let mut best = fallback;
        let mut a = from;
        while a != self.body {
            let p = self.parent(a);
            if let Some(l) = self.layout(p, &[a], marks, false) {
                if l.records.len() >= MIN_REPEAT && !self.field_like(&[a], marks) {
                    return Some(l);
                }
                if best
                    .as_ref()
                    .is_none_or(|b| l.records.len() > b.records.len())
                {
                    best = Some(l);
                }
            }
            a = p;
        }
        best
    }

    /// The subtree shape of `n`: sorted hashes of the tag paths below it
    /// (`#` for text), each step by tag and by tag and stable class,
    /// formatting tags lifted, at most [`MAX_SHAPE_NODES`] nodes looked at
    /// (module doc, step 5).
    fn shape(&self, n: NodeId) -> Rc<Vec<u32>> {
        if let Some(s) = self.shapes.borrow().get(&n) {
            return s.clone();
        }
        let mut out = Vec::new();
        let mut stack: Vec<(NodeId, u32)> = self.dom.children(n).map(|c| (c, FNV_OFFSET)).collect();
        stack.reverse();
        let mut seen = 0usize;
        while let Some((c, h)) = stack.pop() {
            seen += 1;
            if seen > MAX_SHAPE_NODES {
                break;
            }
            match &self.dom.node(c).data {
                NodeData::Text(t) if !t.trim().is_empty() => out.push(fnv_step(h, "#")),
                NodeData::Element(e) if !is_skipped(&e.name) => {
                    let hc = if is_formatting(&e.name) {
                        h
                    } else {
                        let plain = fnv_step(h, &e.name);
                        out.push(plain);
                        match e.attr("class").and_then(stable_class) {
                            Some(class) => {
                                let hc = fnv_step(plain, class);
                                out.push(hc);
                                hc
                            }
                            _ => plain,
                        }
                    };
                    let before = stack.len();
                    stack.extend(self.dom.children(c).map(|g| (g, hc)));
                    stack[before..].reverse();
                }
                _ => {}
            }
        }
        out.sort_unstable();
        out.dedup();
        let rc = Rc::new(out);
        self.shapes.borrow_mut().insert(n, rc.clone());
        rc
    }

    fn similar_to(&self, n: NodeId, shapes: &[Rc<Vec<u32>>]) -> bool {
        let s = self.shape(n);
        shapes.iter().any(|e| jaccard(&s, e) >= SIMILARITY)
    }

    /// No text and no image: a spacer.
    fn textless(&self, n: NodeId) -> bool {
        self.text_of(n).is_empty()
            && self.dom.find_descendant(n, "img").is_none()
            && self.tag(n).is_none_or(|t| &**t != "img")
    }

    /// Builds the region rooted at `root` whose records include `hits`,
    /// `marks` being the keyword matches (module doc, steps 5 to 7).
    ///
    /// `descend` allows going down into containers of records; the climb
    /// turns it off, as it asks how often the climbed node itself repeats.
    fn layout(
        &self,
        root: NodeId,
        hits: &[NodeId],
        marks: &[Mark],
        descend: bool,
    ) -> Option<Layout> {
        // The record tag path from the root most hits share.
        let mut groups: Vec<(Vec<LocalName>, Vec<NodeId>)> = Vec::new();
        for &h in hits {
            if h == root || !self.is_ancestor(root, h) {
                continue;
            }
            let mut rel = Vec::new();
            let mut cur = h;
            while cur != root {
                rel.push(self.tag(cur)?.clone());
                cur = self.parent(cur);
            }
            rel.reverse();
            match groups.iter_mut().find(|(r, _)| *r == rel) {
                Some((_, v)) => v.push(h),
                None => groups.push((rel, vec![h])),
            }
        }
        let (mut rel, hits) = groups
            .into_iter()
            .reduce(|a, b| if b.1.len() > a.1.len() { b } else { a })?;
        let parent = self.parent(hits[0]);
        let kids = self.kids(parent);
        let hit_kids: Vec<NodeId> = hits
            .iter()
            .copied()
            .filter(|&h| self.parent(h) == parent)
            .collect();
        let (grouping, exemplars) = self.grouping(&kids, &hit_kids);
        if let Some(&first) = exemplars.first()
            && let Some(t) = self.tag(first)
            && let Some(last) = rel.last_mut()
        {
            *last = t.clone();
        }
        let mut shapes: Vec<Rc<Vec<u32>>> = exemplars.iter().map(|&e| self.shape(e)).collect();
        let mut starters = self.expand(root, &rel, &shapes, grouping);
        if grouping == Grouping::Single && descend {
            // Containers of records: descend to the repeated items inside
            // the keyword-holding records while they look like lists.
            let mut ex = exemplars.clone();
            while let Some((path, items)) = self.inner_items(&ex, starters.len(), marks) {
                rel.extend(path);
                ex = items;
                shapes = ex.iter().map(|&e| self.shape(e)).collect();
                starters = self.expand(root, &rel, &shapes, grouping);
            }
            // Wrappers around an `<article>` (HTML's self-contained item):
            // the article is the record.
            if let Some(path) = self.article_chain(&starters) {
                let inner = |n: NodeId| {
                    path.iter()
                        .try_fold(n, |cur, _| self.kids(cur).first().copied())
                };
                starters = starters.iter().filter_map(|&s| inner(s)).collect();
                shapes = ex
                    .iter()
                    .filter_map(|&e| inner(e))
                    .map(|e| self.shape(e))
                    .collect();
                rel.extend(path);
            }
        }
        let records = self.group(&starters, grouping);
        Some(Layout {
            root,
            rel,
            shapes,
            grouping,
            records,
        })
    }

    /// When every node of `nodes` is a chain of wrappers (one element
    /// child, no text of its own) down to an `<article>`, at most
    /// [`MAX_WRAPPERS`] deep and with the same tags, those tags.
    fn article_chain(&self, nodes: &[NodeId]) -> Option<Vec<LocalName>> {
        let mut path: Option<Vec<LocalName>> = None;
        for &n in nodes {
            let mut cur = n;
            let mut tags = Vec::new();
            loop {
                let own_text = self.dom.children(cur).any(
                    |c| matches!(&self.dom.node(c).data, NodeData::Text(t) if !t.trim().is_empty()),
                );
                let kids = self.kids(cur);
                if own_text || kids.len() != 1 || tags.len() >= MAX_WRAPPERS {
                    return None;
                }
                cur = kids[0];
                let tag = self.tag(cur)?.clone();
                let done = &*tag == "article";
                tags.push(tag);
                if done {
                    break;
                }
            }
            if path.as_ref().is_some_and(|p| *p != tags) {
                return None;
            }
            path = Some(tags);
        }
        path
    }

    /// Length of the text of the headings in `n`'s subtree outside
    /// `items` (a list's title does not make its container a record).
    fn heading_text(&self, n: NodeId, items: &[NodeId]) -> usize {
        let mut total = 0;
        let mut stack = vec![n];
        while let Some(c) = stack.pop() {
            if items.contains(&c) {
                continue;
            }
            if self.tag(c).and_then(|t| heading_level(t)).is_some() {
                total += self.text_of(c).len();
                continue;
            }
            stack.extend(self.kids(c));
        }
        total
    }

    /// When every keyword-holding record in `containers` is a container
    /// of records, the tag path from it down to its repeated items and
    /// the items holding the keywords. A container is the first node on
    /// the way down to its keyword with at least two similar children
    /// (the items), whose items are not table cells, not field-like
    /// (unless a container has more items than there are containers), and
    /// hold at least [`LIST_SHARE`] of the container's text (headings
    /// aside): a row of a grid, one of several lists.
    fn inner_items(
        &self,
        containers: &[NodeId],
        n_containers: usize,
        marks: &[Mark],
    ) -> Option<(Vec<LocalName>, Vec<NodeId>)> {
        let mut path: Option<Vec<LocalName>> = None;
        let mut items = Vec::new();
        for &c in containers {
            let Some(&(h, _)) = marks.iter().find(|m| m.0 != c && self.is_ancestor(c, m.0)) else {
                continue;
            };
            let mut v = c;
            let mut found = None;
            while v != h {
                let u = self.ancestor_at(h, self.depth[v] + 1);
                let su = self.shape(u);
                let tag = self.tag(u);
                let similar: Vec<NodeId> = self
                    .kids(v)
                    .into_iter()
                    .filter(|&k| self.tag(k) == tag && jaccard(&self.shape(k), &su) >= SIMILARITY)
                    .collect();
                if similar.len() >= 2 {
                    found = Some((u, similar));
                    break;
                }
                v = u;
            }
            let (u, similar) = found?;
            // Cells are never records; field-like items (a title, a
            // value) are fields of a record unless there are more of them
            // in one container than there are containers (link lists).
            if self.tag(u).is_some_and(|t| matches!(&**t, "td" | "th"))
                || (similar.len() <= n_containers && self.field_like(&[u], marks))
            {
                return None;
            }
            let covered: usize = similar.iter().map(|&k| self.text_of(k).len()).sum();
            let total = self
                .text_of(c)
                .len()
                .saturating_sub(self.heading_text(c, &similar));
            if (covered as f64) < LIST_SHARE * total as f64 {
                return None;
            }
            let mut rel = Vec::new();
            let mut cur = u;
            while cur != c {
                rel.push(self.tag(cur)?.clone());
                cur = self.parent(cur);
            }
            rel.reverse();
            if path.as_ref().is_some_and(|p| *p != rel) {
                return None;
            }
            path = Some(rel);
            items.push(u);
        }
        path.map(|p| (p, items))
    }

    /// Decides how siblings make records (module doc, step 7) and returns
    /// the example starters.
    #[expect(
        clippy::too_many_lines,
        reason = "the grouping's cases side by side, sharing the children's runs"
    )]
    fn grouping(&self, kids: &[NodeId], hit_kids: &[NodeId]) -> (Grouping, Vec<NodeId>) {
        let plain = (
            Grouping::Single,
            hit_kids.iter().copied().take(MAX_EXEMPLARS).collect(),
        );
        if hit_kids.is_empty() {
            return plain;
        }
        // Clusters of the non-spacer siblings: same tag, similar shape.
        let visible: Vec<NodeId> = kids
            .iter()
            .copied()
            .filter(|&k| !self.textless(k))
            .collect();
        let mut reps: Vec<NodeId> = Vec::new();
        let mut cluster = Vec::with_capacity(visible.len());
        for &k in &visible {
            let tag = self.tag(k);
            let s = self.shape(k);
            let c = reps
                .iter()
                .position(|&r| self.tag(r) == tag && jaccard(&self.shape(r), &s) >= SIMILARITY);
            cluster.push(match c {
                Some(c) => c,
                None => {
                    reps.push(k);
                    reps.len() - 1
                }
            });
        }
        let vis_pos: FxHashMap<NodeId, usize> =
            visible.iter().enumerate().map(|(i, &k)| (k, i)).collect();
        let hit_pos: Vec<usize> = hit_kids
            .iter()
            .filter_map(|h| vis_pos.get(h).copied())
            .collect();
        let hit_clusters: Vec<usize> = hit_pos.iter().map(|&i| cluster[i]).collect();
        if hit_clusters.is_empty() {
            return plain;
        }
        let heading = |k: NodeId| self.tag(k).and_then(|t| heading_level(t));
        // Sections: the hits sit under different sibling headings of one
        // level, and a section holds siblings of other tags than the hits
        // (`h3 p ul`); a heading over a run of alike records (dates over
        // hourly rows, runs longer than [`MAX_SECTION_RUN`] on average)
        // leaves the rows the records.
        let mut counts = [0usize; 7];
        for &k in &visible {
            if let Some(l) = heading(k) {
                counts[usize::from(l)] += 1;
            }
        }
        let level = (1..=6usize)
            .filter(|&l| counts[l] >= 2)
            .max_by(|&a, &b| counts[a].cmp(&counts[b]).then(b.cmp(&a)));
        if let Some(level) = level
            && hit_pos.iter().all(|&i| heading(visible[i]).is_none())
        {
            let is_h = |i: usize| heading(visible[i]).is_some_and(|l| usize::from(l) == level);
            let section_of = |i: usize| (0..=i).rev().find(|&j| is_h(j));
            let mut sections: Vec<usize> = hit_pos.iter().filter_map(|&i| section_of(i)).collect();
            sections.dedup();
            let mixed = sections.iter().any(|&s| {
                (s + 1..visible.len()).take_while(|&j| !is_h(j)).any(|j| {
                    heading(visible[j]).is_none()
                        && !hit_pos
                            .iter()
                            .any(|&h| self.tag(visible[h]) == self.tag(visible[j]))
                })
            });
            // Average length of the runs of the hits' kinds.
            let (mut members, mut runs) = (0usize, 0usize);
            for (i, c) in cluster.iter().enumerate() {
                if hit_clusters.contains(c) {
                    members += 1;
                    if i == 0 || cluster[i - 1] != *c {
                        runs += 1;
                    }
                }
            }
            let short_runs = members <= MAX_SECTION_RUN * runs;
            if sections.len() >= 2 && sections.len() == hit_pos.len() && mixed && short_runs {
                let heads: Vec<NodeId> = sections
                    .iter()
                    .map(|&s| visible[s])
                    .take(MAX_EXEMPLARS)
                    .collect();
                return (Grouping::Sections, heads);
            }
        }
        // Blocks: the hits' kinds never follow themselves directly.
        let n = reps.len();
        let mut count = vec![0usize; n];
        let mut adjacent = vec![0usize; n];
        let mut first = vec![usize::MAX; n];
        for (i, &c) in cluster.iter().enumerate() {
            count[c] += 1;
            first[c] = first[c].min(i);
            if i > 0 && cluster[i - 1] == c {
                adjacent[c] += 1;
            }
        }
        let self_adjacent = |c: usize| count[c] < 2 || 2 * adjacent[c] >= count[c] - 1;
        if hit_clusters.iter().any(|&c| self_adjacent(c)) {
            return plain;
        }
        let biggest = hit_clusters.iter().map(|&c| count[c]).max().unwrap_or(0);
        let starter = (0..n)
            .filter(|&c| !self_adjacent(c) && 2 * count[c] >= biggest)
            .min_by_key(|&c| first[c]);
        let Some(starter) = starter else {
            return plain;
        };
        let ex: Vec<NodeId> = visible
            .iter()
            .zip(&cluster)
            .filter(|(_, c)| **c == starter)
            .map(|(&k, _)| k)
            .take(MAX_EXEMPLARS)
            .collect();
        (Grouping::Blocks, ex)
    }

    /// The nodes at tag path `rel` below `root` that look like a record
    /// (sections: every heading of that tag).
    fn expand(
        &self,
        root: NodeId,
        rel: &[LocalName],
        shapes: &[Rc<Vec<u32>>],
        grouping: Grouping,
    ) -> Vec<NodeId> {
        let mut level = vec![root];
        for tag in rel {
            level = level
                .iter()
                .flat_map(|&n| self.kids(n))
                .filter(|&c| self.tag(c) == Some(tag))
                .collect();
        }
        if grouping == Grouping::Sections {
            return level;
        }
        level.retain(|&n| self.similar_to(n, shapes));
        level
    }

    /// Makes records of starter nodes: one node each, or a run of siblings
    /// from each starter to the next (spacers left out). The last run of a
    /// parent takes following siblings whose tags the other runs of the
    /// parent have, up to their longest length; a lone run stops at the
    /// next sibling with the starter's tag.
    fn group(&self, starters: &[NodeId], grouping: Grouping) -> Vec<Vec<NodeId>> {
        if grouping == Grouping::Single {
            return starters.iter().map(|&s| vec![s]).collect();
        }
        let mut out = Vec::new();
        let mut i = 0;
        while i < starters.len() {
            let parent = self.parent(starters[i]);
            let mut j = i;
            while j < starters.len() && self.parent(starters[j]) == parent {
                j += 1;
            }
            let kids = self.kids(parent);
            let pos: Vec<usize> = starters[i..j]
                .iter()
                .filter_map(|s| kids.iter().position(|k| k == s))
                .collect();
            let mut blocks: Vec<Vec<NodeId>> =
                pos.windows(2).map(|w| kids[w[0]..w[1]].to_vec()).collect();
            if let Some(&last) = pos.last() {
                let start_tag = self.tag(kids[last]);
                let mut end = last + 1;
                if blocks.is_empty() {
                    while end < kids.len() && self.tag(kids[end]) != start_tag {
                        end += 1;
                    }
                } else {
                    let longest = blocks.iter().map(Vec::len).max().unwrap_or(1);
                    let tags: Vec<&LocalName> = blocks
                        .iter()
                        .flat_map(|b| b[1..].iter().filter_map(|&k| self.tag(k)))
                        .collect();
                    while end < kids.len()
                        && end - last < longest
                        && self.tag(kids[end]).is_some_and(|t| tags.contains(&t))
                    {
                        end += 1;
                    }
                }
                blocks.push(kids[last..end].to_vec());
            }
            for mut b in blocks {
                let head = b.first().copied();
                b.retain(|&k| Some(k) == head || !self.textless(k));
                out.push(b);
            }
            i = j;
        }
        out
    }

    /// The public region of a layout, naming fields after `keys` (extended
    /// with new keys in order of appearance).
    fn region(&self, l: &Layout, mut keys: Vec<u32>) -> Region {
        let mut records = Vec::with_capacity(l.records.len());
        for rec in &l.records {
            let mut fields = Vec::new();
            let mut seen: FxHashMap<String, usize> = FxHashMap::default();
            for &member in rec {
                self.fields(member, &mut seen, &mut keys, &mut fields);
            }
            records.push(Record {
                fields,
                xpaths: rec
                    .iter()
                    .filter_map(|&n| self.dom.index_xpath(n))
                    .collect(),
            });
        }
        let exemplar_shapes: Vec<Vec<u32>> = l
            .shapes
            .iter()
            .take(MAX_EXEMPLARS)
            .map(|s| s.to_vec())
            .collect();
        let wrapper = Wrapper {
            root: index_path(self.dom, l.root).unwrap_or_default(),
            root_tag: self.tag(l.root).map(|t| t.to_string()).unwrap_or_default(),
            root_path: self.tag_path(l.root),
            root_id: self
                .dom
                .element(l.root)
                .and_then(|e| e.attr("id"))
                .map(str::to_owned),
            record_path: l.rel.iter().map(|t| t.to_string()).collect(),
            shapes: exemplar_shapes,
            grouping: l.grouping,
            fields: keys,
        };
        Region {
            xpath: self.dom.index_xpath(l.root).unwrap_or_default(),
            wrapper,
            records,
        }
    }

    /// Appends the fields of record member `member` (module doc, "Fields").
    fn fields(
        &self,
        member: NodeId,
        seen: &mut FxHashMap<String, usize>,
        keys: &mut Vec<u32>,
        out: &mut Vec<Field>,
    ) {
        // (node, key path, enclosing link)
        let mut stack: Vec<(NodeId, String, Option<String>)> = vec![(
            member,
            self.tag(member).map(|t| t.to_string()).unwrap_or_default(),
            None,
        )];
        while let Some((n, path, href)) = stack.pop() {
            let Some(e) = self.dom.element(n) else {
                continue;
            };
            let link = if &*e.name == "a" {
                e.attr("href").map(str::to_owned).or(href.clone())
            } else {
                href.clone()
            };
            let own = own_text(self.dom, n);
            let field = if &*e.name == "img" {
                Some((
                    e.attr("alt").map(collapse_whitespace).unwrap_or_default(),
                    e.attr("src").map(str::to_owned),
                ))
            } else if !own.is_empty() {
                Some((own, link.clone()))
            } else if &*e.name == "a"
                && self.text_of(n).is_empty()
                && self.dom.find_descendant(n, "img").is_none()
            {
                Some((String::new(), link.clone()))
            } else {
                None
            };
            if let Some((text, href)) = field {
                let k = seen.entry(path.clone()).or_insert(0);
                *k += 1;
                let key = if *k == 1 {
                    path.clone()
                } else {
                    format!("{path}#{k}")
                };
                let key = fnv_step(FNV_OFFSET, &key);
                let idx = match keys.iter().position(|x| *x == key) {
                    Some(i) => i,
                    None => {
                        keys.push(key);
                        keys.len() - 1
                    }
                };
                out.push(Field {
                    name: format!("f{}", idx + 1),
                    text,
                    href,
                    xpath: self.dom.index_xpath(n).unwrap_or_default(),
                });
            }
            // Child elements in document order, those under formatting
            // elements included.
            let mut all = Vec::new();
            nested_fields(self.dom, n, &mut all);
            for &c in all.iter().rev() {
                stack.push((c, format!("{path}/{}", step(self.dom, c)), link.clone()));
            }
        }
    }
}

/// The element children of `n` that are not formatting elements, with
/// those found under its formatting children, in document order.
fn nested_fields(dom: &Dom, n: NodeId, out: &mut Vec<NodeId>) {
    for c in dom.children(n) {
        if let Some(e) = dom.element(c) {
            if is_skipped(&e.name) {
                continue;
            }
            if is_formatting(&e.name) {
                nested_fields(dom, c, out);
            } else {
                out.push(c);
            }
        }
    }
}

/// The text `n` carries itself: its text children and the text of its
/// formatting descendants, whitespace collapsed, case kept.
fn own_text(dom: &Dom, n: NodeId) -> String {
    let mut raw = String::new();
    let mut stack: Vec<NodeId> = dom.children(n).collect();
    stack.reverse();
    while let Some(c) = stack.pop() {
        match &dom.node(c).data {
            NodeData::Text(t) => raw.push_str(t),
            NodeData::Element(e) if is_formatting(&e.name) && !is_skipped(&e.name) => {
                if &*e.name == "br" {
                    raw.push(' ');
                }
                let before = stack.len();
                stack.extend(dom.children(c));
                stack[before..].reverse();
            }
            NodeData::Element(_) => raw.push(' '),
            _ => {}
        }
    }
    collapse_whitespace(&raw)
}

/// The first class token without digits: generated class names
/// (`css-1t96wxq`, `sc-a1b2`) differ between copies of one template.
fn stable_class(class: &str) -> Option<&str> {
    class
        .split_whitespace()
        .find(|c| !c.bytes().any(|b| b.is_ascii_digit()))
}

/// A field-key step: the tag and its first class without digits.
fn step(dom: &Dom, n: NodeId) -> String {
    let Some(e) = dom.element(n) else {
        return String::new();
    };
    match e.attr("class").and_then(stable_class) {
        Some(c) => format!("{}.{c}", e.name),
        None => e.name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kw(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    fn found(html: &str, words: &[&str]) -> Region {
        let dom = Dom::parse(html);
        find(&dom, &kw(words)).unwrap_or_else(|e| panic!("no region for {words:?}: {e}"))
    }

    fn xpaths(r: &Region) -> Vec<String> {
        r.records.iter().map(|r| r.xpaths.join("+")).collect()
    }

    /// A quotes page: a menu that also says "Apple", a table with a header
    /// row and six quote rows, a footer.
    fn quotes() -> String {
        let rows = [
            ("Apple Inc", "AAPL", "189.50"),
            ("Microsoft Corp", "MSFT", "402.10"),
            ("Alphabet Inc", "GOOG", "141.20"),
            ("Amazon.com Inc", "AMZN", "178.00"),
            ("Meta Platforms", "META", "484.30"),
            ("Nvidia Corp", "NVDA", "875.40"),
        ];
        let mut body = String::from(
            "<body><div id=nav><ul><li><a href=/apple>Apple news</a></li>\
             <li><a href=/markets>Markets</a></li><li><a href=/tech>Tech</a></li></ul></div>\
             <div id=main><h1>Quotes</h1><table><thead><tr><th>Name</th><th>Ticker</th><th>Last</th></tr></thead><tbody>",
        );
        for (name, ticker, last) in rows {
            body.push_str(&format!(
                "<tr><td><a href=/q/{ticker}>{name}</a></td><td>{ticker}</td><td class=num>{last}</td></tr>"
            ));
        }
        body.push_str("</tbody></table></div><p>Data by Apple-free sources.</p></body>");
        body
    }

    #[test]
    fn quotes_table_from_two_rows_gives_all_rows_not_the_menu() {
        let r = found(&quotes(), &["Microsoft Corp", "Nvidia"]);
        assert_eq!(r.xpath, "/body[1]/div[2]/table[1]/tbody[1]");
        assert_eq!(r.records.len(), 6);
        assert_eq!(
            r.records[0].xpaths,
            ["/body[1]/div[2]/table[1]/tbody[1]/tr[1]"]
        );
        // Fields are named alike in every row.
        let names: Vec<Vec<&str>> = r
            .records
            .iter()
            .map(|r| r.fields.iter().map(|f| f.name.as_str()).collect())
            .collect();
        assert!(names.iter().all(|n| *n == ["f1", "f2", "f3"]), "{names:?}");
        let first = &r.records[0].fields;
        assert_eq!(first[0].text, "Apple Inc");
        assert_eq!(first[0].href.as_deref(), Some("/q/AAPL"));
        assert_eq!(first[2].text, "189.50");
        assert_eq!(
            first[2].xpath,
            "/body[1]/div[2]/table[1]/tbody[1]/tr[1]/td[3]"
        );
        assert_eq!(r.wrapper.root, [1, 1, 1]);
        assert_eq!(r.wrapper.record_path, ["tr"]);
    }

    #[test]
    fn a_keyword_also_in_the_menu_still_finds_the_table() {
        // "Apple" is in the menu, in the first row and in the footer.
        let r = found(&quotes(), &["apple", "META"]);
        assert_eq!(r.xpath, "/body[1]/div[2]/table[1]/tbody[1]");
        assert_eq!(r.records.len(), 6);
    }

    #[test]
    fn keywords_of_one_row_climb_to_the_table() {
        // Both keywords in one record (the paper's K = N case): the row,
        // not its cells, is the record.
        let r = found(&quotes(), &["Amazon.com", "178.00"]);
        assert_eq!(r.xpath, "/body[1]/div[2]/table[1]/tbody[1]");
        assert_eq!(r.records.len(), 6);
    }

    #[test]
    fn one_keyword_in_many_records() {
        // "Inc" is in three rows, "Meta" in one.
        let r = found(&quotes(), &["inc", "Meta Platforms"]);
        assert_eq!(r.xpath, "/body[1]/div[2]/table[1]/tbody[1]");
        assert_eq!(r.records.len(), 6);
        let r = found(&quotes(), &["corp"]);
        assert_eq!(r.records.len(), 6);
    }

    #[test]
    fn div_rows_at_different_depths_with_noise_siblings() {
        // Cards: some titles wrapped in a link, one card with a badge; a
        // pager and an ad among the siblings.
        let html = "<body><header><a href=/>Home</a></header><main><div class=list>\
            <div class=card><h3><a href=/1>Red kettle</a></h3><p class=price>25 EUR</p></div>\
            <div class=card><h3>Blue toaster</h3><p class=price>40 EUR</p></div>\
            <div class=ad><iframe></iframe><span>Sponsored</span></div>\
            <div class=card><h3><a href=/3>Green mixer</a></h3><p class=price>99 EUR</p><span class=badge>new</span></div>\
            <div class=card><h3><a href=/4>Black grill</a></h3><p class=price>120 EUR</p></div>\
            <div class=pager><a href=?p=2>next</a></div></div></main></body>";
        let r = found(html, &["blue toaster", "Green mixer"]);
        assert_eq!(r.xpath, "/body[1]/main[1]/div[1]");
        assert_eq!(
            xpaths(&r),
            [
                "/body[1]/main[1]/div[1]/div[1]",
                "/body[1]/main[1]/div[1]/div[2]",
                "/body[1]/main[1]/div[1]/div[4]",
                "/body[1]/main[1]/div[1]/div[5]"
            ]
        );
        // The price is the same field whether or not the title is a link.
        let price = |i: usize| {
            r.records[i]
                .fields
                .iter()
                .find(|f| f.text.ends_with("EUR"))
                .map(|f| f.name.clone())
        };
        assert_eq!(price(0), price(1));
        assert_eq!(price(1), price(2));
    }

    #[test]
    fn keyword_split_by_inline_tags_matches() {
        let html = "<body><ul><li>Alpha <b>Cen</b>tauri</li><li>Beta Pictoris</li>\
            <li>Gamma Draconis</li></ul><ul><li>x</li></ul></body>";
        let r = found(html, &["alpha centauri", "GAMMA   draconis"]);
        assert_eq!(r.xpath, "/body[1]/ul[1]");
        assert_eq!(r.records.len(), 3);
        assert_eq!(r.records[0].fields[0].text, "Alpha Centauri");
    }

    #[test]
    fn no_match_and_no_keywords_are_errors() {
        let dom = Dom::parse(&quotes());
        assert!(matches!(
            find(&dom, &kw(&["Berkshire"])),
            Err(RegionError::NoMatch)
        ));
        assert!(matches!(
            find(&dom, &kw(&["  ", ""])),
            Err(RegionError::NoKeywords)
        ));
    }

    #[test]
    fn title_and_subtext_rows_make_one_record() {
        // Hacker News: a title row, a subtext row, a spacer row per story.
        let mut html = String::from(
            "<body><table><tbody><tr><td>Header</td></tr></tbody></table><table><tbody>",
        );
        for (i, t) in ["Rust 2024", "A new GC", "Show HN: clip", "Ask HN: tea"]
            .iter()
            .enumerate()
        {
            html.push_str(&format!(
                "<tr class=athing><td class=rank>{}.</td><td class=title><a href=/s{i}>{t}</a></td></tr>\
                 <tr><td colspan=2 class=subtext><span>{} points</span> by <a href=/u{i}>user{i}</a></td></tr>\
                 <tr class=spacer style='height:5px'></tr>",
                i + 1,
                10 * i + 3
            ));
        }
        html.push_str("<tr><td><a href=/more>More</a></td></tr></tbody></table></body>");
        let r = found(&html, &["A new GC", "user3"]);
        assert_eq!(r.wrapper.grouping, Grouping::Blocks);
        assert_eq!(r.records.len(), 4);
        assert_eq!(
            r.records[1].xpaths,
            [
                "/body[1]/table[2]/tbody[1]/tr[4]",
                "/body[1]/table[2]/tbody[1]/tr[5]"
            ]
        );
        assert_eq!(
            r.records[3].xpaths,
            [
                "/body[1]/table[2]/tbody[1]/tr[10]",
                "/body[1]/table[2]/tbody[1]/tr[11]"
            ]
        );
    }

    #[test]
    fn heading_sections_are_records() {
        let html = "<body><div><h3>Oslo</h3><p>Cold</p><ul><li>Fjords</li><li>Trolls</li></ul>\
            <h3>Rome</h3><p>Warm</p><ul><li>Ruins</li></ul><h3>Lima</h3><p>Mild</p><ul><li>Coast</li></ul></div></body>";
        let r = found(html, &["cold", "mild"]);
        assert_eq!(r.wrapper.grouping, Grouping::Sections);
        assert_eq!(r.records.len(), 3);
        assert_eq!(
            r.records[1].xpaths,
            [
                "/body[1]/div[1]/h3[2]",
                "/body[1]/div[1]/p[2]",
                "/body[1]/div[1]/ul[2]"
            ]
        );
        assert_eq!(r.records[1].fields[0].text, "Rome");
        // Headings over runs of alike rows: the rows are the records.
        let html = "<body><div><h2>Monday</h2><details><summary>9 AM</summary><p>Sun 20°</p></details>\
            <details><summary>10 AM</summary><p>Rain 18°</p></details><h2>Tuesday</h2>\
            <details><summary>9 AM</summary><p>Fog 12°</p></details><details><summary>10 AM</summary><p>Sun 15°</p></details></div></body>";
        let r = found(html, &["rain 18", "fog 12"]);
        assert_eq!(r.wrapper.grouping, Grouping::Single);
        assert_eq!(r.records.len(), 4);
        assert_eq!(r.records[3].xpaths, ["/body[1]/div[1]/details[4]"]);
    }

    #[test]
    fn keywords_in_different_rows_of_a_grid_give_the_cards() {
        // Rows of three cards: keywords from two rows have the grid as
        // their common ancestor; the records are the cards, not the rows.
        let mut html = String::from("<body><div class=grid>");
        for row in 0..3 {
            html.push_str("<div class=row>");
            for c in 0..3 {
                let i = 3 * row + c;
                html.push_str(&format!(
                    "<div class=card><h4>Item {i} name</h4><p>Ships in {c} days from store {row}</p><span class=price>{i}9.00</span></div>"
                ));
            }
            html.push_str("</div>");
        }
        html.push_str("</div></body>");
        let r = found(&html, &["item 1 name", "item 7 name"]);
        assert_eq!(r.xpath, "/body[1]/div[1]");
        assert_eq!(r.wrapper.record_path, ["div", "div"]);
        assert_eq!(r.records.len(), 9);
        assert_eq!(r.records[4].xpaths, ["/body[1]/div[1]/div[2]/div[2]"]);
        // Link lists in footer columns: the links are the records.
        let html = "<body><footer><div class=col><h5>About</h5><ul><li><a href=/a>About us</a></li>\
            <li><a href=/j>Jobs</a></li><li><a href=/p>Press</a></li></ul></div>\
            <div class=col><h5>Help</h5><ul><li><a href=/r>Refunds</a></li><li><a href=/s>Shipping</a></li>\
            <li><a href=/c>Contact</a></li></ul></div></footer></body>";
        let r = found(html, &["press", "shipping"]);
        assert_eq!(r.records.len(), 6);
        assert_eq!(r.records[0].fields[0].href.as_deref(), Some("/a"));
    }

    #[test]
    fn wrapper_finds_the_records_of_a_later_version() {
        let r = found(&quotes(), &["Microsoft Corp", "Nvidia"]);
        let json = serde_json::to_string(&r.wrapper).unwrap_or_else(|e| panic!("{e}"));
        let w: Wrapper = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(w, r.wrapper);
        // Two rows gone, one new, prices changed, a script and a banner
        // added before the table's container.
        let later = quotes()
            .replace("<tr><td><a href=/q/GOOG>Alphabet Inc</a></td><td>GOOG</td><td class=num>141.20</td></tr>", "")
            .replace("<tr><td><a href=/q/AMZN>Amazon.com Inc</a></td><td>AMZN</td><td class=num>178.00</td></tr>", "")
            .replace("189.50", "190.01")
            .replace(
                "</tbody>",
                "<tr><td><a href=/q/TSLA>Tesla Inc</a></td><td>TSLA</td><td class=num>170.00</td></tr></tbody>",
            )
            .replace("<div id=main>", "<script>x()</script><div id=main>");
        let dom = Dom::parse(&later);
        let got = apply(&dom, &w).unwrap_or_else(|| panic!("wrapper did not apply"));
        assert_eq!(got.records.len(), 5);
        assert_eq!(got.records[0].fields[2].text, "190.01");
        assert_eq!(got.records[4].fields[0].text, "Tesla Inc");
        assert!(got.records.iter().all(|r| r.fields.len() == 3));
        // Moved: a new container around the table; the index path now
        // leads elsewhere, the fallback finds the tbody by its rows.
        let moved = quotes()
            .replace("<table>", "<section><div><table>")
            .replace("</table>", "</table></div></section>");
        let got = apply(&Dom::parse(&moved), &w).unwrap_or_else(|| panic!("no fallback"));
        assert_eq!(
            got.xpath,
            "/body[1]/div[2]/section[1]/div[1]/table[1]/tbody[1]"
        );
        assert_eq!(got.records.len(), 6);
        // Layout changed: no table at all.
        let gone = "<body><div id=nav></div><div id=main><p>Closed</p></div></body>";
        assert!(apply(&Dom::parse(gone), &w).is_none());
    }

    #[test]
    fn index_paths_count_elements_only_and_resolve_back() {
        let dom = Dom::parse("<body>a<div><script>s</script>b<p>c</p></div><p>d</p></body>");
        let paths: Vec<Vec<u32>> = text_index_paths(&dom).into_iter().map(|(_, p)| p).collect();
        assert_eq!(paths, [vec![], vec![0], vec![0, 0], vec![1]]);
        let p = dom
            .find_descendant(crate::page::dom::DOCUMENT, "p")
            .unwrap_or_else(|| panic!("no p"));
        assert_eq!(index_path(&dom, p), Some(vec![0, 0]));
        assert_eq!(resolve(&dom, &[0, 0]), Some(p));
        assert_eq!(resolve(&dom, &[0, 1]), None);
    }
}
