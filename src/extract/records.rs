//! Record extraction: the repeated data records of one list page (search
//! results, news lists, product grids, table rows, quote rows built from
//! `<div>`s), from that page alone, without a template.
//!
//! Takes a parsed [`Dom`]; gives [`Records`]: every record's elements as
//! index XPaths and its fields (texts, links, images), named the same way
//! in every record of one data region.
//!
//! The method follows MDR/DEPTA (Liu et al.) and docs/algorithms.md, "Repeated records"
//! ("repeated records ... share a parent"):
//!
//! 1. **Element table.** One pass over `<body>` builds a pre-order table of
//!    elements with their text size, text leaves, text inside links and
//!    images, and a *shape*: the set of hashed tag paths (`div/h3/a/#text`)
//!    from the element down to [`PATH_DEPTH`] levels (the cheap path-set
//!    measure of Buttler's survey, docs/algorithms.md, "Cheap similarity measures", in place of
//!    MDR's string edit distance).
//! 2. **Sibling groups.** Under each parent, the children that carry
//!    content are clustered greedily: same tag and a shape Jaccard index of
//!    at least [`SIMILARITY`] with the cluster's first member. Table cells,
//!    definition terms and options are never records. Text-less
//!    skeletons among records with text are left out
//!    ([`filter::drop_placeholders`]).
//! 3. **Regions.** Which groups are data regions is decided bottom-up over
//!    the tree (a small dynamic programme): a group either *is* a region
//!    (its members are the records) or its members are containers whose
//!    own regions count instead, whichever scores more. A group's score
//!    sums `content^ALPHA` over its members (times [`SINGLE_LEAF_WEIGHT`]
//!    for one-leaf records and [`CHROME_WEIGHT`] in menus, headers and
//!    footers); the power below one rewards several small records over one
//!    big container (a wrapper holding two lists loses to the lists). A
//!    group whose members' own regions hold little of their content
//!    ([`NESTED_COVERAGE`]) is records with lists inside (a card's spec
//!    rows) and wins regardless.
//! 4. **Page filter.** Regions far below the page's best
//!    ([`MIN_SHARE_OF_BEST`]), tiny ones ([`MIN_SCORE`], [`MIN_RECORDS`])
//!    and text-poor ones ([`MIN_TEXT`]) are dropped. Lists of form
//!    controls weigh as chrome ([`filter::is_controls`]).
//! 5. **Record level.** A group member may be only layout around the
//!    record: see [`record_root`].
//! 6. **Fields.** Text leaves, links and images of each record, named by
//!    their tag path inside the record (see [`name_fields`]).
//!
//! Every threshold was set by measuring on the next-eval list pages
//! (bench/records/README.md) and is documented where it is defined with
//! the failure on either side; none refers to a particular site.
//! Cost: linear in the page plus the sibling comparisons, a few
//! milliseconds for a 400 KB page.

use html5ever::LocalName;
use rustc_hash::{FxHashMap, FxHashSet};

use super::{Field, Record, Records, names};
use crate::page::dom::{Dom, NodeData, NodeId};
use crate::template::cluster::Template;
use crate::template::minhash::jaccard;
use crate::template::tree::PageTree;

mod filter;
mod heading;

pub use heading::{MAX_HEADING, heading};

/// Levels of tag path kept in an element's shape. Deep enough to see a
/// card's inner layout (card / body / title / link / text), shallow enough
/// that two cards with differently nested descriptions still look alike.
pub const PATH_DEPTH: usize = 6;

/// Minimum shape Jaccard index for two siblings to be the same kind of
/// record. MDR uses a normalised edit distance threshold of 0.3 (70 %
/// similar) on tag strings; path sets are more forgiving of optional
/// fields, so half the paths in common is enough.
pub const SIMILARITY: f64 = 0.55;

/// Exponent of a record's content size in a region's score (see the module
/// documentation, step 3). 0.5 lets a card's few internal lists outscore
/// the card; 0.8 lets a wrapper of two lists outscore the lists; measured
/// on next-eval, 0.7 sits between the two failures.
pub const ALPHA: f64 = 0.7;

/// Records with fewer text leaves than this on average are *single-leaf*
/// records: one link or one phrase each, the shape of menus, tag clouds
/// and pagers far more often than of data.
pub const SINGLE_LEAF: f64 = 1.5;

/// A single-leaf group is a region only with this many records: a list of
/// 900 job links is data, a row of five category links is navigation.
pub const SINGLE_LEAF_MIN_RECORDS: usize = 10;

/// Score factor of single-leaf regions, so that a list inside a record
/// (its tags, its size options) does not outweigh the records.
pub const SINGLE_LEAF_WEIGHT: f64 = 0.3;

/// Score factor of regions in page chrome ([`in_chrome`]): menus, headers
/// and footers repeat as regularly as data and must lose to it.
pub const CHROME_WEIGHT: f64 = 0.1;

/// A group whose members hold regions covering less than this share of
/// their content is a group of records with lists inside (a product card
/// with its spec rows), whatever the scores say.
pub const NESTED_COVERAGE: f64 = 0.8;

/// ... provided it has at least this many members: two or three big
/// siblings holding lists are columns, not records.
pub const NESTED_MIN_RECORDS: usize = 4;

/// A region's score must reach this (about three records of a short line
/// each) ...
pub const MIN_SCORE: f64 = 20.0;

/// ... and this share of the page's best region: pages are about one or a
/// few lists, and a region far smaller than the main one is a side widget.
pub const MIN_SHARE_OF_BEST: f64 = 0.2;

/// Minimum mean text characters per record (a row of icons is not data).
pub const MIN_TEXT: f64 = 16.0;

/// Minimum records in a region: two similar siblings are too often
/// coincidence (two columns, a pair of buttons).
pub const MIN_RECORDS: usize = 3;

const NONE: u32 = u32::MAX;

/// One element of the page, in pre-order.
#[derive(Debug, Clone)]
struct El {
    dom: NodeId,
    tag: LocalName,
    parent: u32,
    /// Position among same-name element siblings (1-based), for XPaths.
    position: u32,
    depth: u32,
    /// Non-whitespace characters of text in the subtree.
    text: u32,
    /// Non-empty text nodes in the subtree.
    leaves: u32,
    /// `<img>` elements in the subtree (itself included).
    imgs: u32,
    /// Text characters inside links.
    link_text: u32,
    /// Elements in the subtree (itself included).
    elems: u32,
    children: Vec<u32>,
    /// Range of this element's shape in [`Page::paths`].
    paths: (u32, u32),
}

/// The element table of a page.
struct Page<'a> {
    dom: &'a Dom,
    els: Vec<El>,
    paths: Vec<u64>,
}

fn hash_str(s: &str) -> u64 {
    // FNV-1a: stable across runs and platforms, fast on short tag names.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn mix(prefix: u64, tag: u64) -> u64 {
    (prefix.rotate_left(23) ^ tag).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Elements skipped with their content: not part of what a reader sees.
fn is_skipped(name: &str) -> bool {
    matches!(
        name,
        "script" | "style" | "noscript" | "template" | "head" | "meta" | "link" | "title"
    )
}

/// Elements kept as leaves: their inside is not page content (`<svg>`
/// drawing instructions, `<select>` option lists).
fn is_opaque(name: &str) -> bool {
    matches!(
        name,
        "svg" | "select" | "math" | "iframe" | "object" | "canvas"
    )
}

/// Elements never taken as a record: parts of a row or a list entry, pure
/// layout, or a navigation block (a mega menu's `<nav>` columns repeat
/// like cards).
fn never_record(name: &str) -> bool {
    matches!(
        name,
        "nav"
            | "td"
            | "th"
            | "dt"
            | "dd"
            | "option"
            | "optgroup"
            | "thead"
            | "tfoot"
            | "caption"
            | "colgroup"
            | "col"
            | "br"
            | "hr"
            | "wbr"
            | "source"
            | "track"
            | "param"
            | "area"
    )
}

impl<'a> Page<'a> {
    #[expect(
        clippy::too_many_lines,
        reason = "one walk over the DOM filling the page's tables"
    )]
    fn build(dom: &'a Dom) -> Page<'a> {
        let mut page = Page {
            dom,
            els: Vec::new(),
            paths: Vec::new(),
        };
        let Some(body) = dom.body() else {
            return page;
        };
        let text_hash = hash_str("#text");
        // Per element: path hashes from each of its first PATH_DEPTH
        // ancestors down to it (h[k]: from the (k+1)-th ancestor).
        let mut up: Vec<[u64; PATH_DEPTH]> = Vec::new();
        let mut pairs: Vec<(u32, u64)> = Vec::new();
        enum Step {
            Enter(NodeId, u32, u32),
            Exit(u32),
        }
        let mut stack = vec![Step::Enter(body, NONE, 1)];
        while let Some(step) = stack.pop() {
            match step {
                Step::Exit(i) => {
                    let e = &page.els[i as usize];
                    let (p, text, leaves, imgs, elems) =
                        (e.parent, e.text, e.leaves, e.imgs, e.elems);
                    let link_text = if &*e.tag == "a" { e.text } else { e.link_text };
                    page.els[i as usize].link_text = link_text;
                    if p != NONE {
                        let pe = &mut page.els[p as usize];
                        pe.link_text += link_text;
                        pe.text += text;
                        pe.leaves += leaves;
                        pe.imgs += imgs;
                        pe.elems += elems;
                    }
                }
                Step::Enter(n, parent, position) => {
                    let NodeData::Element(el) = &dom.node(n).data else {
                        continue;
                    };
                    let i = page.els.len() as u32;
                    let tag_hash = hash_str(&el.name);
                    let mut h = [0u64; PATH_DEPTH];
                    h[0] = tag_hash;
                    if parent != NONE {
                        let ph = &up[parent as usize];
                        for (hk, &pk) in h[1..].iter_mut().zip(ph.iter()) {
                            *hk = mix(pk, tag_hash);
                        }
                    }
                    let depth = if parent == NONE {
                        0
                    } else {
                        page.els[parent as usize].depth + 1
                    };
                    push_pairs(&page.els, &mut pairs, parent, &h);
                    up.push(h);
                    let name = &*el.name;
                    page.els.push(El {
                        dom: n,
                        tag: el.name.clone(),
                        parent,
                        position,
                        depth,
                        text: 0,
                        leaves: 0,
                        imgs: u32::from(name == "img"),
                        link_text: 0,
                        elems: 1,
                        children: Vec::new(),
                        paths: (0, 0),
                    });
                    if parent != NONE {
                        page.els[parent as usize].children.push(i);
                    }
                    stack.push(Step::Exit(i));
                    if is_opaque(name) {
                        continue;
                    }
                    // Children: texts counted now, elements pushed in
                    // reverse so they pop in document order.
                    let mut counts: FxHashMap<&LocalName, u32> = FxHashMap::default();
                    let mut kids = Vec::new();
                    for c in dom.children(n) {
                        match &dom.node(c).data {
                            NodeData::Text(t) => {
                                let chars = t.chars().filter(|c| !c.is_whitespace()).count();
                                if chars > 0 {
                                    let e = &mut page.els[i as usize];
                                    e.text += chars as u32;
                                    e.leaves += 1;
                                    let mut th = [0u64; PATH_DEPTH];
                                    th[0] = text_hash;
                                    for (tk, &hk) in th[1..].iter_mut().zip(h.iter()) {
                                        *tk = mix(hk, text_hash);
                                    }
                                    push_pairs(&page.els, &mut pairs, i, &th);
                                }
                            }
                            NodeData::Element(ce) if !is_skipped(&ce.name) => {
                                let pos = counts.entry(&ce.name).or_insert(0);
                                *pos += 1;
                                kids.push(Step::Enter(c, i, *pos));
                            }
                            _ => {}
                        }
                    }
                    stack.extend(kids.into_iter().rev());
                }
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        page.paths = pairs.iter().map(|&(_, h)| h).collect();
        let mut start = 0usize;
        while start < pairs.len() {
            let owner = pairs[start].0;
            let mut end = start;
            while end < pairs.len() && pairs[end].0 == owner {
                end += 1;
            }
            page.els[owner as usize].paths = (start as u32, end as u32);
            start = end;
        }
        page
    }

    fn shape(&self, i: u32) -> &[u64] {
        let (a, b) = self.els[i as usize].paths;
        &self.paths[a as usize..b as usize]
    }

    fn similarity(&self, a: u32, b: u32) -> f64 {
        jaccard(self.shape(a), self.shape(b))
    }

    fn has_content(&self, i: u32) -> bool {
        let e = &self.els[i as usize];
        e.text > 0 || e.imgs > 0
    }

    /// Index XPath of element `i` (`/body[1]/div[3]/li[2]`).
    fn xpath(&self, i: u32) -> String {
        let mut steps = Vec::new();
        let mut cur = i;
        while cur != NONE {
            let e = &self.els[cur as usize];
            steps.push((&e.tag, e.position));
            cur = e.parent;
        }
        let mut out = String::new();
        for (tag, pos) in steps.iter().rev() {
            out.push('/');
            out.push_str(tag);
            out.push('[');
            out.push_str(&pos.to_string());
            out.push(']');
        }
        out
    }
}

/// Records the path hashes `h` of a node whose parent element is `parent`
/// in the shapes of its ancestors (`h[k]` belongs to the `(k+1)`-th).
fn push_pairs(els: &[El], pairs: &mut Vec<(u32, u64)>, parent: u32, h: &[u64; PATH_DEPTH]) {
    let mut anc = parent;
    for &hk in h.iter() {
        if anc == NONE {
            break;
        }
        pairs.push((anc, hk));
        anc = els[anc as usize].parent;
    }
}

/// A group of similar siblings.
#[derive(Debug, Clone)]
struct Group {
    members: Vec<u32>,
    score: f64,
    taken: bool,
}

/// A record's content size: its text plus a fixed weight per image (a
/// product photo is worth a short caption).
fn content(e: &El) -> f64 {
    f64::from(e.text) + 10.0 * f64::from(e.imgs)
}

/// Clusters the content-carrying children of `parent` into groups.
fn sibling_groups(page: &Page<'_>, parent: u32) -> Vec<Group> {
    let mut clusters: Vec<Vec<u32>> = Vec::new();
    for &c in &page.els[parent as usize].children {
        let tag = &page.els[c as usize].tag;
        if never_record(tag) || !page.has_content(c) {
            continue;
        }
        // Only the 16 latest clusters are tried: similar siblings sit near
        // each other, and a parent with thousands of unlike children must
        // not cost a quadratic number of comparisons.
        let found = clusters.iter_mut().rev().take(16).find(|cl| {
            let rep = cl[0];
            page.els[rep as usize].tag == *tag && page.similarity(rep, c) >= SIMILARITY
        });
        match found {
            Some(cl) => cl.push(c),
            None => clusters.push(vec![c]),
        }
    }
    clusters
        .into_iter()
        .filter(|m| m.len() >= 2)
        .map(|mut members| {
            filter::drop_placeholders(page, &mut members);
            let score = region_score(page, &members);
            Group {
                members,
                score,
                taken: false,
            }
        })
        .collect()
}

/// The score of a group taken as a data region (0 when it does not look
/// like one).
fn region_score(page: &Page<'_>, members: &[u32]) -> f64 {
    let n = members.len();
    if n < 2 {
        return 0.0;
    }
    // Paragraphs are prose (an article's text, a description), not a list,
    // unless they are mostly links (a `<p>` per related story).
    if &*page.els[members[0] as usize].tag == "p" {
        let text: u32 = members.iter().map(|&m| page.els[m as usize].text).sum();
        let link: u32 = members
            .iter()
            .map(|&m| page.els[m as usize].link_text)
            .sum();
        if 2 * link < text {
            return 0.0;
        }
    }
    let leaves: u32 = members.iter().map(|&m| page.els[m as usize].leaves).sum();
    let mean_leaves = f64::from(leaves) / n as f64;
    let single = mean_leaves < SINGLE_LEAF;
    if single && n < SINGLE_LEAF_MIN_RECORDS {
        return 0.0;
    }
    let mut w = if single { SINGLE_LEAF_WEIGHT } else { 1.0 };
    if in_chrome(page, members[0]) || filter::is_controls(page, members) {
        w *= CHROME_WEIGHT;
    }
    w * members
        .iter()
        .map(|&m| content(&page.els[m as usize]).powf(ALPHA))
        .sum::<f64>()
}

/// Descends from a group member to the element that is the record.
///
/// A member whose content sits in a single child is a wrapper (a grid
/// cell around a card, an `<li>` around a tile). Most lists name the
/// wrapper as the item, and so does the record level of the next-eval
/// annotations, so the member stays the record, unless the chain of
/// single-content wrappers below it reaches an `<article>`: HTML's element
/// for "a self-contained composition" (a product card, a news teaser) is
/// the record by the page author's own word.
fn record_root(page: &Page<'_>, member: u32) -> u32 {
    wrapper_chain(page, member)
        .into_iter()
        .find(|&e| &*page.els[e as usize].tag == "article")
        .unwrap_or(member)
}

/// A group member and the chain of wrappers below it: each next element
/// is the only child of the previous one that carries content, and holds
/// all of its text. The chain ends where content branches.
fn wrapper_chain(page: &Page<'_>, member: u32) -> Vec<u32> {
    let mut chain = vec![member];
    let mut cur = member;
    loop {
        let mut holders = page.els[cur as usize]
            .children
            .iter()
            .copied()
            .filter(|&c| page.has_content(c));
        let (Some(only), None) = (holders.next(), holders.next()) else {
            return chain;
        };
        // Own text beside the child: the wrapper holds content itself.
        if page.els[only as usize].text < page.els[cur as usize].text {
            return chain;
        }
        chain.push(only);
        cur = only;
    }
}

/// A data region chosen on a page, with the measures that chose it (for
/// inspection and tuning: `semclip` itself only needs [`extract`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The index XPath of the region's parent element.
    pub parent: String,
    /// The records' index XPaths (after [`record_root`]).
    pub records: Vec<String>,
    /// The region's score (module documentation, step 3).
    pub score: f64,
    /// Mean text leaves per record.
    pub leaves: f64,
    /// Mean non-whitespace text characters per record.
    pub text: f64,
    /// Share of the text inside links.
    pub link_share: f64,
    /// True when the region lies in page chrome (see [`in_chrome`]).
    pub chrome: bool,
    /// Depth of the region's parent below `<body>`.
    pub depth: u32,
    /// True when the region passes the page filter (module documentation,
    /// step 4): its records are what [`extract`] gives.
    pub kept: bool,
    /// Per record, the XPaths of the group member and of the wrappers
    /// below it down to where its content branches: the levels one could
    /// call the record (see [`record_root`]).
    pub levels: Vec<Vec<String>>,
}

/// The repeated data records of a single page.
pub fn extract(dom: &Dom) -> Records {
    let page = Page::build(dom);
    records_of(&page, regions(&page, &|_| true))
}

/// The records of a page of a site whose template was learned: the
/// single-page method, except that only regions whose records hold data
/// count. Data is what the template's ne-pattern captures on this page:
/// texts that varied between the site's pages the pattern was learned
/// from. A list of category links, a tag cloud or a menu repeats as
/// regularly as the data and often wins on one page alone, but its texts
/// are the same on every page of the site; the filter runs before regions
/// are compared with the page's best, so a data list that such a list
/// outscored comes back.
///
/// Falls back to [`extract`] when `template` has no pattern, the page does
/// not match it, or the match captures no text.
pub fn extract_by_template(dom: &Dom, tree: &PageTree, template: Option<&Template>) -> Records {
    let page = Page::build(dom);
    let captured = template
        .and_then(|t| t.pattern.as_ref())
        .and_then(|p| p.match_page(tree).map(|m| p.captured_text(dom, tree, &m)))
        .unwrap_or_default();
    if captured.is_empty() {
        return records_of(&page, regions(&page, &|_| true));
    }
    // Every element holding a captured node.
    let mut holds_data: FxHashSet<NodeId> = FxHashSet::default();
    for passage in &captured {
        for &n in &passage.nodes {
            let mut cur = tree.nodes.get(n as usize).map(|x| x.dom);
            while let Some(id) = cur {
                if !holds_data.insert(id) {
                    break;
                }
                cur = dom.parent(id);
            }
        }
    }
    let is_data = |g: &Group| {
        let data = g
            .members
            .iter()
            .filter(|&&m| holds_data.contains(&page.els[record_root(&page, m) as usize].dom))
            .count();
        2 * data >= g.members.len()
    };
    records_of(&page, regions(&page, &is_data))
}

fn records_of(page: &Page<'_>, groups: Vec<Group>) -> Records {
    let mut records = Vec::new();
    for g in groups {
        let roots: Vec<u32> = g.members.iter().map(|&m| record_root(page, m)).collect();
        records.extend(make_records(page, &roots));
    }
    records.sort_by_key(|(first, _)| *first);
    Records {
        records: records.into_iter().map(|(_, r)| r).collect(),
    }
}

/// Every region the bottom-up choice takes on a page, kept or not by the
/// page filter, with its measures, in document order (for inspection and
/// for `examples/record_ceiling.rs`).
pub fn candidates(dom: &Dom) -> Vec<Candidate> {
    let page = Page::build(dom);
    let all = chosen(&page);
    let best = all.iter().map(|g| g.score).fold(0.0, f64::max);
    all.into_iter()
        .map(|g| {
            let n = g.members.len() as f64;
            let sum = |f: &dyn Fn(&El) -> u32| -> f64 {
                g.members
                    .iter()
                    .map(|&m| f64::from(f(&page.els[m as usize])))
                    .sum::<f64>()
            };
            let text = sum(&|e| e.text);
            Candidate {
                parent: page.xpath(page.els[g.members[0] as usize].parent),
                records: g
                    .members
                    .iter()
                    .map(|&m| page.xpath(record_root(&page, m)))
                    .collect(),
                score: g.score,
                leaves: sum(&|e| e.leaves) / n,
                text: text / n,
                link_share: if text > 0.0 {
                    sum(&|e| e.link_text) / text
                } else {
                    0.0
                },
                chrome: in_chrome(&page, g.members[0]),
                depth: page.els[g.members[0] as usize].depth - 1,
                kept: passes(&page, &g, best),
                levels: g
                    .members
                    .iter()
                    .map(|&m| {
                        wrapper_chain(&page, m)
                            .into_iter()
                            .map(|e| page.xpath(e))
                            .collect()
                    })
                    .collect(),
            }
        })
        .collect()
}

/// The groups chosen as data regions, in document order.
/// `keep` decides which chosen regions may compete on the page (before
/// the comparison with the page's best).
fn regions(page: &Page<'_>, keep: &dyn Fn(&Group) -> bool) -> Vec<Group> {
    let mut out = chosen(page);
    out.retain(|g| keep(g));
    let best = out.iter().map(|g| g.score).fold(0.0, f64::max);
    out.retain(|g| passes(page, g, best));
    out
}

/// True when chosen region `g` passes the page filter (module
/// documentation, step 4) on a page whose best region scores `best`.
fn passes(page: &Page<'_>, g: &Group, best: f64) -> bool {
    let n = g.members.len() as f64;
    let text: f64 = g
        .members
        .iter()
        .map(|&m| f64::from(page.els[m as usize].text))
        .sum();
    g.score >= MIN_SCORE
        && g.score >= MIN_SHARE_OF_BEST * best
        && n >= MIN_RECORDS as f64
        && text >= MIN_TEXT * n
}

/// The groups the bottom-up choice (module documentation, step 3) takes as
/// regions, before the page filter, in document order.
fn chosen(page: &Page<'_>) -> Vec<Group> {
    if page.els.is_empty() {
        return Vec::new();
    }
    let n = page.els.len();
    let mut value = vec![0.0f64; n];
    // Content of the subtree inside chosen regions.
    let mut covered = vec![0.0f64; n];
    let mut groups: Vec<Vec<Group>> = vec![Vec::new(); n];
    // Members of a group at their parent, and members of a region.
    let mut grouped = vec![false; n];
    let mut taken = vec![false; n];
    // Bottom-up: children come after their parent in pre-order.
    for i in (0..n).rev() {
        let mut gs = sibling_groups(page, i as u32);
        let mut total = 0.0;
        let mut cov = 0.0;
        for g in &mut gs {
            let inner: f64 = g.members.iter().map(|&m| value[m as usize]).sum();
            let inner_cov: f64 = g.members.iter().map(|&m| covered[m as usize]).sum();
            let all: f64 = g
                .members
                .iter()
                .map(|&m| content(&page.els[m as usize]))
                .sum();
            // Regions inside the members that hold little of their content
            // are lists inside records (a card's spec rows), not records.
            let nested = g.members.len() >= NESTED_MIN_RECORDS && inner_cov < NESTED_COVERAGE * all;
            if g.score > 0.0 && (nested || g.score > inner) {
                g.taken = true;
                total += g.score;
                cov += all;
            } else {
                total += inner;
                cov += inner_cov;
            }
            for &m in &g.members {
                grouped[m as usize] = true;
                taken[m as usize] = g.taken;
            }
        }
        for &c in &page.els[i].children {
            if !grouped[c as usize] {
                total += value[c as usize];
                cov += covered[c as usize];
            }
        }
        value[i] = total;
        covered[i] = cov;
        groups[i] = gs;
    }
    // Top-down: collect the regions chosen.
    let mut out = Vec::new();
    let mut stack = vec![0u32];
    while let Some(i) = stack.pop() {
        for g in std::mem::take(&mut groups[i as usize]) {
            if g.taken {
                out.push(g);
            }
        }
        for &c in page.els[i as usize].children.iter().rev() {
            if !taken[c as usize] {
                stack.push(c);
            }
        }
    }
    out.sort_by_key(|g| g.members[0]);
    out
}

/// True when element `i` lies inside page chrome: a `<nav>`, `<header>`,
/// `<footer>`, `<aside>` or `<dialog>`, an element whose ARIA role says
/// navigation, banner, footer (`contentinfo`), menu, complementary, dialog
/// or tooltip, or one whose class or id names a
/// nav, menu, header, footer, breadcrumb or sidebar or an overlay (popover,
/// tooltip, modal, popup, dialog): the naming conventions of every CSS
/// framework and CMS theme. Overlays are hidden until hovered or opened,
/// and one tooltip per product repeats as regularly as the products.
fn in_chrome(page: &Page<'_>, i: u32) -> bool {
    let mut cur = i;
    while cur != NONE {
        let e = &page.els[cur as usize];
        if matches!(
            &*e.tag,
            "nav" | "header" | "footer" | "aside" | "menu" | "dialog"
        ) {
            return true;
        }
        if &*e.tag == "main" {
            return false;
        }
        if let Some(el) = page.dom.element(e.dom) {
            if el.attr("role") == Some("main") {
                return false;
            }
            if let Some(role) = el.attr("role")
                && matches!(
                    role,
                    "navigation"
                        | "banner"
                        | "contentinfo"
                        | "menu"
                        | "menubar"
                        | "complementary"
                        | "dialog"
                        | "alertdialog"
                        | "tooltip"
                )
            {
                return true;
            }
            for a in ["class", "id"] {
                if let Some(v) = el.attr(a)
                    && v.split(|c: char| c.is_whitespace() || c == '-' || c == '_')
                        .any(is_chrome_word)
                {
                    return true;
                }
            }
        }
        cur = e.parent;
    }
    false
}

/// A word of a class, id or custom tag name that marks page chrome (see
/// [`in_chrome`]).
fn is_chrome_word(word: &str) -> bool {
    matches!(
        word.to_ascii_lowercase().as_str(),
        "nav"
            | "navbar"
            | "navigation"
            | "menu"
            | "header"
            | "footer"
            | "breadcrumb"
            | "breadcrumbs"
            | "sidebar"
            | "megamenu"
            | "popover"
            | "tooltip"
            | "modal"
            | "popup"
            | "dialog"
    )
}

/// Where a field's name can come from, strongest evidence first (see
/// [`name_fields`]); the index into [`RawField::hints`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// The column header of the table whose rows are the records (or a
    /// responsive table's `data-label` on the cell).
    Header,
    /// The `dt` before a `dd`, the `th` before a `td` in a row inside the
    /// record, or a short text ending in a colon (`Price:`) before it.
    Label,
    /// `aria-label`, when the same in most records (a label, not content).
    Aria,
    /// Microdata's `itemprop` (`price`, `datePublished`).
    Itemprop,
    /// A test or field id (`data-testid`, `data-field`, ...).
    Data,
    /// The `title` attribute, when the same in most records.
    Title,
    /// A class token that reads as a word ([`names::class_name`]).
    Class,
}

/// Number of [`Source`]s.
const SOURCES: usize = 7;

/// Sources in order of evidence.
const SOURCE_ORDER: [Source; SOURCES] = [
    Source::Header,
    Source::Label,
    Source::Aria,
    Source::Itemprop,
    Source::Data,
    Source::Title,
    Source::Class,
];

/// `data-*` attributes holding a label written for people (responsive
/// tables repeat the column header on each cell).
const DATA_LABEL_ATTRS: [&str; 4] = ["data-label", "data-th", "data-column", "data-header"];

/// `data-*` attributes holding a field or test id (`product-price`).
const DATA_TOKEN_ATTRS: [&str; 8] = [
    "data-field",
    "data-testid",
    "data-test-id",
    "data-test",
    "data-qa",
    "data-cy",
    "data-automation-id",
    "data-e2e",
];

/// One field before naming: its key inside the record, its content and
/// what the page says about it.
struct RawField {
    key: String,
    text: String,
    href: Option<String>,
    xpath: String,
    is_link: bool,
    is_img: bool,
    /// Inside a `<time>` element.
    in_time: bool,
    /// A term (`dt`, a row's `th`) or a colon label naming the text after
    /// it: dropped from the record when its key is a label in most records
    /// (see [`name_fields`]).
    is_label: bool,
    /// Candidate names, indexed by [`Source`].
    hints: [Option<String>; SOURCES],
}

/// The records of one region (one root element each), with named fields;
/// each paired with its first element's pre-order index for sorting.
fn make_records(page: &Page<'_>, roots: &[u32]) -> Vec<(u32, Record)> {
    let headers = column_headers(page, roots);
    let raw: Vec<Vec<RawField>> = roots
        .iter()
        .map(|&r| raw_fields(page, r, &headers))
        .collect();
    let naming = name_fields(&raw);
    roots
        .iter()
        .zip(raw)
        .map(|(&r, fields)| {
            let fields = fields
                .into_iter()
                .filter(|f| !naming.labels.contains(&f.key))
                .map(|f| Field {
                    name: naming
                        .names
                        .get(&f.key)
                        .cloned()
                        .unwrap_or_else(|| f.key.clone()),
                    text: f.text,
                    href: f.href,
                    xpath: f.xpath,
                })
                .collect();
            (
                r,
                Record {
                    fields,
                    xpaths: vec![page.xpath(r)],
                },
            )
        })
        .collect()
}

/// Widest `colspan` believed (HTML's own limit is 1000).
const MAX_COLSPAN: usize = 1000;

/// The cells of row `tr` with the column each starts at (`colspan`s
/// counted; `rowspan`s from rows above are not: a header is then off by
/// the spanned columns, the same as a reader of that row's markup alone).
fn cell_columns(page: &Page<'_>, tr: u32) -> Vec<(u32, usize)> {
    let mut col = 0usize;
    let mut out = Vec::new();
    for &c in &page.els[tr as usize].children {
        let e = &page.els[c as usize];
        if !matches!(&*e.tag, "td" | "th") {
            continue;
        }
        out.push((c, col));
        let span = page
            .dom
            .element(e.dom)
            .and_then(|el| el.attr("colspan"))
            .and_then(|s| s.trim().parse::<usize>().ok())
            .unwrap_or(1)
            .clamp(1, MAX_COLSPAN);
        col = col.saturating_add(span);
    }
    out
}

/// When the records are rows of a table: the header of each column
/// (by start column), read from the table's header row: the last row of
/// its `<thead>`, else its first row, when most of that row's cells are
/// `th` and it is not itself a record.
fn column_headers(page: &Page<'_>, roots: &[u32]) -> FxHashMap<usize, String> {
    let mut out = FxHashMap::default();
    let Some(&first) = roots.first() else {
        return out;
    };
    if &*page.els[first as usize].tag != "tr" {
        return out;
    }
    let tag = |i: u32| -> &str { &page.els[i as usize].tag };
    let mut table = page.els[first as usize].parent;
    if table != NONE && matches!(tag(table), "tbody" | "thead" | "tfoot") {
        table = page.els[table as usize].parent;
    }
    if table == NONE || tag(table) != "table" {
        return out;
    }
    let rows_of = |sec: u32| {
        page.els[sec as usize]
            .children
            .iter()
            .copied()
            .filter(|&r| tag(r) == "tr")
            .collect::<Vec<u32>>()
    };
    let children = &page.els[table as usize].children;
    let header = children
        .iter()
        .find(|&&c| tag(c) == "thead")
        .and_then(|&thead| rows_of(thead).last().copied())
        .or_else(|| {
            children.iter().find_map(|&c| match tag(c) {
                "tr" => Some(c),
                "tbody" => rows_of(c).first().copied(),
                _ => None,
            })
        });
    let Some(header) = header.filter(|h| !roots.contains(h)) else {
        return out;
    };
    let cells = cell_columns(page, header);
    let th = cells.iter().filter(|&&(c, _)| tag(c) == "th").count();
    if th == 0 || th * 2 < cells.len() {
        return out;
    }
    for (c, col) in cells {
        if let Some(name) = names::label_name(&page.dom.text_content(page.els[c as usize].dom)) {
            out.insert(col, name);
        }
    }
    out
}

/// The candidate names an element's own attributes give, filling the
/// sources of `hints` still empty (an element nearer the field came first).
fn attribute_hints(el: &crate::page::dom::Element, hints: &mut [Option<String>; SOURCES]) {
    let mut fill = |s: Source, v: Option<String>| {
        if hints[s as usize].is_none() {
            hints[s as usize] = v;
        }
    };
    fill(
        Source::Aria,
        el.attr("aria-label").and_then(names::label_name),
    );
    fill(
        Source::Itemprop,
        el.attr("itemprop").and_then(names::property_name),
    );
    let data = DATA_LABEL_ATTRS
        .iter()
        .find_map(|a| el.attr(a).and_then(names::label_name));
    fill(Source::Header, data);
    let token = DATA_TOKEN_ATTRS
        .iter()
        .find_map(|a| el.attr(a).and_then(names::token_name));
    fill(Source::Data, token);
    fill(Source::Title, el.attr("title").and_then(names::label_name));
    fill(Source::Class, el.attr("class").and_then(names::class_name));
}

/// The text leaves and images of record `root` in document order: one
/// field per element with its own text (its direct text nodes joined), one
/// per image. A field inside a link carries the link's `href`. `headers`
/// are the column headers when the records are table rows
/// ([`column_headers`]).
///
/// Each field also gets what the page says about it: the header of its
/// column, the term or colon label before it, and the attributes of its
/// element and of the ancestors (below the record) that hold nothing but
/// it (the same text leaves and images): a `<div class="price"><span>`
/// names the span's text, a `<div class="meta">` around a date and an
/// author names neither.
#[expect(
    clippy::too_many_lines,
    reason = "one walk per record, its cases side by side"
)]
fn raw_fields(page: &Page<'_>, root: u32, headers: &FxHashMap<usize, String>) -> Vec<RawField> {
    let end = (root as usize + page.els[root as usize].elems as usize).min(page.els.len());
    // Terms and what they define: `dt` -> `dd`, and `th` -> `td` in a row
    // inside the record (not the record's own row: its `th`s are data).
    let mut last_term: FxHashMap<u32, u32> = FxHashMap::default();
    let mut term_of: FxHashMap<u32, u32> = FxHashMap::default();
    for i in root as usize + 1..end {
        let e = &page.els[i];
        let p = e.parent;
        let in_row = p != root && p != NONE && &*page.els[p as usize].tag == "tr";
        match &*e.tag {
            "dt" => {
                last_term.insert(p, i as u32);
            }
            "th" if in_row => {
                last_term.insert(p, i as u32);
            }
            "dd" | "td" if &*e.tag == "dd" || in_row => {
                if let Some(&t) = last_term.get(&p) {
                    term_of.insert(i as u32, t);
                }
            }
            _ => {}
        }
    }
    let used_terms: FxHashSet<u32> = term_of.values().copied().collect();
    let cell_col: FxHashMap<u32, usize> = if headers.is_empty() {
        FxHashMap::default()
    } else {
        cell_columns(page, root).into_iter().collect()
    };
    let mut out = Vec::new();
    let mut seen: FxHashMap<String, u32> = FxHashMap::default();
    for i in root as usize..end {
        let e = &page.els[i];
        let el = page.dom.element(e.dom);
        let is_img = &*e.tag == "img";
        let mut text = String::new();
        for c in page.dom.children(e.dom) {
            if let NodeData::Text(t) = &page.dom.node(c).data {
                for w in t.split_whitespace() {
                    if !text.is_empty() {
                        text.push(' ');
                    }
                    text.push_str(w);
                }
            }
        }
        if is_img {
            text = el
                .and_then(|el| el.attr("alt"))
                .unwrap_or("")
                .trim()
                .to_owned();
        }
        if text.is_empty() && !is_img {
            continue;
        }
        // Up from the element to the record: the nearest link, what the
        // ancestors holding only this field say, its term and its column.
        let mut link = None;
        let mut hints: [Option<String>; SOURCES] = Default::default();
        let mut in_time = false;
        let mut is_label = false;
        let mut near = true;
        let mut cur = i as u32;
        loop {
            let ce = &page.els[cur as usize];
            let cel = page.dom.element(ce.dom);
            if link.is_none()
                && &*ce.tag == "a"
                && let Some(h) = cel.and_then(|x| x.attr("href"))
            {
                link = Some(h.to_owned());
            }
            if cur == root || ce.parent == NONE {
                break;
            }
            near &= ce.leaves == e.leaves && ce.imgs == e.imgs;
            if near {
                in_time |= &*ce.tag == "time";
                if let Some(cel) = cel {
                    attribute_hints(cel, &mut hints);
                }
            }
            if hints[Source::Label as usize].is_none()
                && let Some(&t) = term_of.get(&cur)
            {
                let term = page.dom.text_content(page.els[t as usize].dom);
                hints[Source::Label as usize] = names::label_name(&term);
            }
            is_label |= used_terms.contains(&cur);
            if ce.parent == root
                && let Some(h) = cell_col.get(&cur).and_then(|c| headers.get(c))
            {
                hints[Source::Header as usize] = Some(h.clone());
            }
            cur = ce.parent;
        }
        let href = if is_img {
            el.and_then(|el| el.attr("src")).map(str::to_owned)
        } else {
            link.clone()
        };
        let mut key = relative_path(page, root, i as u32);
        let k = seen.entry(key.clone()).or_insert(0);
        *k += 1;
        if *k > 1 {
            key.push_str(&format!("#{k}"));
        }
        out.push(RawField {
            key,
            text,
            href,
            xpath: page.xpath(i as u32),
            is_link: link.is_some(),
            is_img,
            in_time,
            is_label,
            hints,
        });
    }
    // A short text ending in a colon labels the field after it.
    for k in 1..out.len() {
        let (before, after) = out.split_at_mut(k);
        let (label, next) = (&mut before[k - 1], &mut after[0]);
        if !label.is_img && !label.is_label && names::is_colon_label(&label.text) {
            label.is_label = true;
            let slot = &mut next.hints[Source::Label as usize];
            if slot.is_none() {
                *slot = names::label_name(&label.text);
            }
        }
    }
    out
}

/// The tag path from `root` (exclusive) down to `i`, with the element's
/// first class name: `div/h3.title/a`; `.` for the root itself.
fn relative_path(page: &Page<'_>, root: u32, i: u32) -> String {
    let mut steps = Vec::new();
    let mut cur = i;
    while cur != root && cur != NONE {
        steps.push(&*page.els[cur as usize].tag);
        cur = page.els[cur as usize].parent;
    }
    if steps.is_empty() {
        return ".".to_owned();
    }
    steps.reverse();
    let mut key = steps.join("/");
    if let Some(class) = page
        .dom
        .element(page.els[i as usize].dom)
        .and_then(|e| e.attr("class"))
        .and_then(|c| c.split_whitespace().next())
    {
        key.push('.');
        key.push_str(class);
    }
    key
}

/// The names of a region's field keys, and the keys that are labels.
struct Naming {
    /// Field key -> name.
    names: FxHashMap<String, String>,
    /// Keys of terms and colon labels whose text named the field after
    /// them: left out of the records (their text is now the name).
    labels: FxHashSet<String>,
}

/// What one field key is over a region's records.
#[derive(Default)]
struct KeyStats<'a> {
    /// Records holding it.
    seen: usize,
    /// Candidate names: (source, name).
    votes: Vec<(u8, &'a str)>,
    links: usize,
    imgs: usize,
    in_time: usize,
    labels: usize,
    label_texts: Vec<&'a str>,
    prices: usize,
    dates: usize,
    times: usize,
    words: usize,
    /// (record, number) where the text is an ordinal (`3`, `#3`, `3.`).
    ordinals: Vec<(usize, i64)>,
}

/// Most common value in `values` and its count (ties: the smallest value).
fn most_common<'a>(values: &mut [&'a str]) -> Option<(&'a str, usize)> {
    values.sort_unstable();
    let mut best: Option<(&str, usize)> = None;
    let mut i = 0;
    while i < values.len() {
        let mut j = i;
        while j < values.len() && values[j] == values[i] {
            j += 1;
        }
        if best.is_none_or(|(_, n)| j - i > n) {
            best = Some((values[i], j - i));
        }
        i = j;
    }
    best
}

/// Mean words per record from which a field is prose (`text`).
const PROSE_WORDS: usize = 6;

/// Names the fields of one region, the same name for the same key in every
/// record. A field's key is its tag path inside the record and its first
/// class name (`div/h3/a.title`, `.` for text of the record element
/// itself), `#2`, `#3` ... appended for repeats inside one record.
///
/// A key's name is, in order of evidence:
///
/// 1. what the page says about it ([`Source`], strongest first): the one
///    candidate of a source that more than half of the key's fields carry
///    (an `aria-label` or `title` must also repeat in two records: one
///    that differs in every record is content, not a label);
/// 2. what its texts are: `image` for images, `title` for the key that
///    most often holds the record's first linked text, `date` inside
///    `<time>` or for dates, `price`, `time`, `rank` for a run of
///    ordinals counting up from record to record, `link` for other links,
///    `text` for prose (at least [`PROSE_WORDS`] words on average);
/// 3. `f1`, `f2` ... in order of first appearance, as a last resort.
///
/// Names are unique in the region: a repeated one gets `-2`, `-3` ... in
/// order of first appearance (evidence names before typed ones), so a page
/// gives the same names on every check. A key whose fields are mostly
/// terms or colon labels of one constant text is a label: its text names
/// the field after it and the key itself is left out.
///
/// Linear in the number of fields, but for sorting each key's candidate
/// names: a table row of 100,000 cells is one record of 100,000 keys.
#[expect(
    clippy::too_many_lines,
    reason = "the naming steps in order, sharing their counts"
)]
fn name_fields(records: &[Vec<RawField>]) -> Naming {
    let mut order: Vec<&str> = Vec::new();
    let mut index: FxHashMap<&str, usize> = FxHashMap::default();
    let mut stats: Vec<KeyStats<'_>> = Vec::new();
    let mut first_link: FxHashMap<&str, usize> = FxHashMap::default();
    for (r, fields) in records.iter().enumerate() {
        if let Some(f) = fields
            .iter()
            .find(|f| f.is_link && !f.is_img && !f.is_label && !f.text.is_empty())
        {
            *first_link.entry(&f.key).or_insert(0) += 1;
        }
        for f in fields {
            let k = *index.entry(&f.key).or_insert_with(|| {
                order.push(&f.key);
                stats.push(KeyStats::default());
                stats.len() - 1
            });
            let s = &mut stats[k];
            s.seen += 1;
            for (source, hint) in f.hints.iter().enumerate() {
                if let Some(h) = hint {
                    s.votes.push((source as u8, h));
                }
            }
            s.links += usize::from(f.is_link && !f.is_img);
            s.imgs += usize::from(f.is_img);
            s.in_time += usize::from(f.in_time);
            if f.is_label {
                s.labels += 1;
                s.label_texts.push(&f.text);
            }
            s.prices += usize::from(names::looks_like_price(&f.text));
            s.dates += usize::from(names::looks_like_date(&f.text));
            s.times += usize::from(names::looks_like_time(&f.text));
            s.words += f.text.split_whitespace().count();
            if let Some(n) = names::ordinal(&f.text) {
                s.ordinals.push((r, n));
            }
        }
    }
    let majority = |n: usize, of: usize| n * 2 > of;
    let mut naming = Naming {
        names: FxHashMap::default(),
        labels: FxHashSet::default(),
    };
    for (k, s) in order.iter().zip(stats.iter_mut()) {
        let constant = most_common(&mut s.label_texts).is_some_and(|(_, n)| majority(n, s.seen));
        if majority(s.labels, s.seen) && constant {
            naming.labels.insert((*k).to_owned());
        }
    }
    let mut taken = std::collections::BTreeSet::new();
    let mut take = |name: &str| super::names::unique(name.to_owned(), &mut taken);
    // 1. What the page says.
    for (k, s) in order.iter().zip(stats.iter_mut()) {
        if naming.labels.contains(*k) {
            continue;
        }
        s.votes.sort_unstable();
        let chosen = SOURCE_ORDER.iter().find_map(|&source| {
            let mut values: Vec<&str> = s
                .votes
                .iter()
                .filter(|(v, _)| *v == source as u8)
                .map(|&(_, h)| h)
                .collect();
            let (name, n) = most_common(&mut values)?;
            let repeats = !matches!(source, Source::Aria | Source::Title) || n >= 2;
            (majority(n, s.seen) && repeats).then_some(name)
        });
        if let Some(name) = chosen {
            let name = take(name);
            naming.names.insert((*k).to_owned(), name);
        }
    }
    // 2. What the texts are.
    let title = first_link
        .iter()
        .max_by_key(|(k, n)| (**n, std::cmp::Reverse(index.get(**k).copied())))
        .filter(|(_, n)| **n * 2 >= records.len())
        .map(|(k, _)| *k);
    for (k, s) in order.iter().zip(stats.iter()) {
        if naming.labels.contains(*k) || naming.names.contains_key(*k) {
            continue;
        }
        let typed = if majority(s.imgs, s.seen) {
            Some("image")
        } else if Some(*k) == title {
            Some("title")
        } else if majority(s.in_time, s.seen) {
            Some(if majority(s.times, s.seen) {
                "time"
            } else {
                "date"
            })
        } else if majority(s.prices, s.seen) {
            Some("price")
        } else if majority(s.dates, s.seen) {
            Some("date")
        } else if majority(s.times, s.seen) {
            Some("time")
        } else if is_rank(s) {
            Some("rank")
        } else if majority(s.links, s.seen) {
            Some("link")
        } else if s.words >= PROSE_WORDS * s.seen {
            Some("text")
        } else {
            None
        };
        if let Some(t) = typed {
            let name = take(t);
            naming.names.insert((*k).to_owned(), name);
        }
    }
    // 3. Positions.
    let mut n = 0;
    for k in order {
        if !naming.labels.contains(k) && !naming.names.contains_key(k) {
            n += 1;
            let name = take(&format!("f{n}"));
            naming.names.insert(k.to_owned(), name);
        }
    }
    naming
}

/// True when a key's texts are mostly ordinals counting up by one from a
/// record to the next (`1.`, `2.`, `3.`): a rank.
fn is_rank(s: &KeyStats<'_>) -> bool {
    let n = s.ordinals.len();
    if n < MIN_RECORDS || n * 2 <= s.seen {
        return false;
    }
    let steps = s
        .ordinals
        .windows(2)
        .filter(|w| w[1].0 == w[0].0 + 1 && w[1].1 == w[0].1 + 1)
        .count();
    steps * 5 >= (n - 1) * 4
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::names::looks_like_price;

    fn records(html: &str) -> Records {
        extract(&Dom::parse(html))
    }

    fn xpaths(r: &Records) -> Vec<String> {
        r.records.iter().map(|r| r.xpaths.join(" ")).collect()
    }

    /// The names of a record's fields, in order.
    fn names(r: &Record) -> Vec<&str> {
        r.fields.iter().map(|f| f.name.as_str()).collect()
    }

    fn field<'r>(r: &'r Record, name: &str) -> &'r Field {
        r.fields
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("no field {name} in {:?}", r.fields))
    }

    const QUOTES: &str = r#"<html><body>
        <div class="header"><h1><a href="/">Quotes to Scrape</a></h1></div>
        <div class="container">
          <div class="quote"><span class="text">"The world as we have created it is a process of our thinking."</span>
            <span>by <small class="author">Albert Einstein</small> <a href="/author/Albert-Einstein">(about)</a></span>
            <div class="tags">Tags: <a class="tag" href="/tag/change">change</a> <a class="tag" href="/tag/thinking">thinking</a></div></div>
          <div class="quote"><span class="text">"It is our choices that show what we truly are, far more than our abilities."</span>
            <span>by <small class="author">J.K. Rowling</small> <a href="/author/J-K-Rowling">(about)</a></span>
            <div class="tags">Tags: <a class="tag" href="/tag/abilities">abilities</a> <a class="tag" href="/tag/choices">choices</a></div></div>
          <div class="quote"><span class="text">"There are only two ways to live your life."</span>
            <span>by <small class="author">Albert Einstein</small> <a href="/author/Albert-Einstein">(about)</a></span>
            <div class="tags">Tags: <a class="tag" href="/tag/life">life</a> <a class="tag" href="/tag/miracles">miracles</a></div></div>
          <div class="quote"><span class="text">"A day without sunshine is like, you know, night."</span>
            <span>by <small class="author">Steve Martin</small> <a href="/author/Steve-Martin">(about)</a></span>
            <div class="tags">Tags: <a class="tag" href="/tag/humor">humor</a> <a class="tag" href="/tag/simile">simile</a></div></div>
        </div></body></html>"#;

    #[test]
    fn div_quote_list_gives_one_record_per_quote_with_consistent_fields() {
        let r = records(QUOTES);
        assert_eq!(
            xpaths(&r),
            (1..=4)
                .map(|k| format!("/body[1]/div[2]/div[{k}]"))
                .collect::<Vec<_>>()
        );
        // Same layout, same field names in every record.
        let first = names(&r.records[0]);
        for rec in &r.records {
            assert_eq!(names(rec), first);
        }
        // The author sits at the same relative place in every quote.
        let authors: Vec<&str> = r
            .records
            .iter()
            .map(|rec| {
                rec.fields
                    .iter()
                    .find(|f| f.xpath.ends_with("/span[2]/small[1]"))
                    .map_or("", |f| f.text.as_str())
            })
            .collect();
        assert_eq!(
            authors,
            [
                "Albert Einstein",
                "J.K. Rowling",
                "Albert Einstein",
                "Steve Martin"
            ]
        );
        let about = field(&r.records[1], "title");
        assert_eq!(about.text, "(about)");
        assert_eq!(about.href.as_deref(), Some("/author/J-K-Rowling"));
        assert!(
            r.records[0].fields[0].text.starts_with("\"The world"),
            "{:?}",
            r.records[0].fields[0]
        );
    }

    #[test]
    fn table_rows_are_records_with_a_price_field() {
        let html = r#"<html><body><h2>Price list</h2><table>
            <thead><tr><th>Item</th><th>Price</th><th></th></tr></thead>
            <tr><td>Walnut writing desk</td><td>$349.00</td><td><a href="/p/1">details</a></td></tr>
            <tr><td>Oak bookcase, five shelves</td><td>$219.50</td><td><a href="/p/2">details</a></td></tr>
            <tr><td>Reading lamp, brass</td><td>$59.99</td><td><a href="/p/3">details</a></td></tr>
            <tr><td>Leather armchair</td><td>$899.00</td><td><a href="/p/4">details</a></td></tr>
            <tr><td>Pine side table</td><td>$75.00</td><td><a href="/p/5">details</a></td></tr>
            </table></body></html>"#;
        let r = records(html);
        assert_eq!(
            xpaths(&r),
            (1..=5)
                .map(|k| format!("/body[1]/table[1]/tbody[1]/tr[{k}]"))
                .collect::<Vec<_>>()
        );
        let prices: Vec<&str> = r
            .records
            .iter()
            .map(|rec| field(rec, "Price").text.as_str())
            .collect();
        assert_eq!(
            prices,
            ["$349.00", "$219.50", "$59.99", "$899.00", "$75.00"]
        );
        assert_eq!(field(&r.records[2], "title").text, "details");
        assert_eq!(field(&r.records[2], "title").href.as_deref(), Some("/p/3"));
        // Named by their column headers; the header-less link column by
        // what it is.
        assert_eq!(names(&r.records[0]), ["Item", "Price", "title"]);
        assert_eq!(field(&r.records[3], "Item").text, "Leather armchair");
        assert_eq!(
            field(&r.records[3], "Item").xpath,
            "/body[1]/table[1]/tbody[1]/tr[4]/td[1]"
        );
    }

    #[test]
    fn a_long_list_of_links_is_a_region_of_one_field_records() {
        let cities = [
            "Berlin", "Lisbon", "Lyon", "Madrid", "Vienna", "Prague", "Oslo", "Dublin", "Krakow",
            "Porto", "Zurich", "Munich",
        ];
        let items: String = cities
            .iter()
            .enumerate()
            .map(|(i, c)| format!(r#"<li><a href="/jobs/{i}">Rust developer jobs in {c}</a></li>"#))
            .collect();
        let html =
            format!("<html><body><div><h1>Jobs by city</h1><ul>{items}</ul></div></body></html>");
        let r = records(&html);
        assert_eq!(r.records.len(), 12);
        assert_eq!(r.records[4].xpaths, ["/body[1]/div[1]/ul[1]/li[5]"]);
        for (rec, c) in r.records.iter().zip(cities) {
            assert_eq!(names(rec), ["title"]);
            assert_eq!(rec.fields[0].text, format!("Rust developer jobs in {c}"));
        }
        assert_eq!(r.records[11].fields[0].href.as_deref(), Some("/jobs/11"));
    }

    #[test]
    fn a_nav_menu_is_left_out_and_the_real_list_comes_out() {
        let menu: String = ["Home", "Laptops", "Phones", "Tablets", "Cameras", "Audio"]
            .iter()
            .map(|m| format!(r#"<li><a href="/{m}">{m} and accessories</a></li>"#))
            .collect();
        let items: String = [
            ("ThinkPad X1 Carbon, 14 inch", "$1,299", "Light business laptop with a matte screen."),
            ("MacBook Air 13", "$999", "Fanless laptop with a long battery life."),
            ("Dell XPS 15", "$1,499", "Large screen and a strong graphics card."),
            ("Framework Laptop 13", "$1,049", "Repairable laptop with swappable ports."),
            ("HP Spectre x360", "$1,199", "Convertible laptop with a pen."),
        ]
        .iter()
        .enumerate()
        .map(|(i, (t, p, d))| {
            format!(
                r#"<div class="item"><h3><a href="/p/{i}">{t}</a></h3><span class="price">{p}</span><p>{d}</p></div>"#
            )
        })
        .collect();
        let html = format!(
            r#"<html><body><nav><ul>{menu}</ul></nav><main><h1>Laptops</h1><div class="results">{items}</div></main>
            <footer><ul><li><a href="/about">About this shop</a></li><li><a href="/contact">Contact the shop</a></li>
            <li><a href="/terms">Terms of service</a></li></ul></footer></body></html>"#
        );
        let r = records(&html);
        assert_eq!(
            xpaths(&r),
            (1..=5)
                .map(|k| format!("/body[1]/main[1]/div[1]/div[{k}]"))
                .collect::<Vec<_>>()
        );
        for rec in &r.records {
            // The description is prose: `text`.
            assert_eq!(names(rec), ["title", "price", "text"]);
        }
        assert_eq!(field(&r.records[1], "title").text, "MacBook Air 13");
        assert_eq!(field(&r.records[1], "title").href.as_deref(), Some("/p/1"));
        assert_eq!(field(&r.records[4], "price").text, "$1,199");
        assert_eq!(
            field(&r.records[4], "price").xpath,
            "/body[1]/main[1]/div[1]/div[5]/span[1]"
        );
    }

    #[test]
    fn article_inside_single_child_wrappers_is_the_record() {
        let cards: String = (1..=4)
            .map(|i| {
                format!(
                    r#"<div class="cell"><div class="inner"><article><h2><a href="/n/{i}">Headline number {i} of the day</a></h2>
                    <p>Teaser text for story {i}, long enough to read.</p></article></div></div>"#
                )
            })
            .collect();
        let html = format!(r#"<html><body><section>{cards}</section></body></html>"#);
        let r = records(&html);
        assert_eq!(
            xpaths(&r),
            (1..=4)
                .map(|k| format!("/body[1]/section[1]/div[{k}]/div[1]/article[1]"))
                .collect::<Vec<_>>()
        );
    }

    /// Five product cards, each `<div class="card">` with a title link, a
    /// price and a line of description.
    fn product_cards() -> String {
        [
            ("ThinkPad X1 Carbon, 14 inch", "$1,299"),
            ("MacBook Air 13", "$999"),
            ("Dell XPS 15", "$1,499"),
            ("Framework Laptop 13", "$1,049"),
            ("HP Spectre x360", "$1,199"),
        ]
        .iter()
        .enumerate()
        .map(|(i, (t, p))| {
            format!(
                r#"<div class="card"><h3><a href="/p/{i}">{t}</a></h3><span>{p}</span><p>In stock, ships tomorrow.</p></div>"#
            )
        })
        .collect()
    }

    /// The XPaths of [`product_cards`] inside the grid at `grid`.
    fn cards_under(grid: &str) -> Vec<String> {
        (1..=5).map(|k| format!("{grid}/div[{k}]")).collect()
    }

    #[test]
    fn tooltips_and_nav_blocks_are_not_records_however_regular() {
        // One hidden tooltip per product, each longer than the product, at
        // the end of <body> (where scripts put overlays), and a mega menu
        // of <nav> columns: both repeat as regularly as the products and
        // outweighed them before overlays and <nav> counted as chrome.
        let tips: String = (0..5)
            .map(|i| {
                format!(
                    r#"<div class="popover-container size-s"><p>Tip {i}: compare the battery life, the weight and the screen of this laptop with the others before you buy it.</p><p>Prices include tax.</p></div>"#
                )
            })
            .collect();
        let columns: String = ["Laptops", "Phones", "Audio", "Cameras"]
            .iter()
            .map(|c| {
                format!(
                    r#"<nav><h4>{c}</h4><a href="/{c}/new">New {c} this week</a><a href="/{c}/deals">{c} deals</a><a href="/{c}/used">Used {c}</a></nav>"#
                )
            })
            .collect();
        let html = format!(
            r#"<html><body><div class="menu-columns">{columns}</div><main><div class="grid">{}</div></main>{tips}
            <div role="tooltip"><p>Free returns within 30 days on every laptop in this shop.</p></div></body></html>"#,
            product_cards()
        );
        assert_eq!(
            xpaths(&records(&html)),
            cards_under("/body[1]/main[1]/div[1]")
        );
    }

    #[test]
    fn paragraphs_of_prose_are_not_records_but_paragraphs_of_links_are() {
        let prose: String = (0..6)
            .map(|i| format!("<p>Paragraph {i} of the review explains how the <em>keyboard</em>, the screen and the battery held up over a month of daily use.</p>"))
            .collect();
        let r = records(&format!(
            "<html><body><article>{prose}</article></body></html>"
        ));
        assert!(r.records.is_empty(), "{:?}", xpaths(&r));
        let related: String = (0..6)
            .map(|i| format!(r#"<p><a href="/story/{i}">Related story number {i} about laptops</a> (3 min)</p>"#))
            .collect();
        let r = records(&format!("<html><body><div>{related}</div></body></html>"));
        assert_eq!(r.records.len(), 6);
    }

    #[test]
    fn a_sidebar_class_above_main_does_not_make_the_main_list_chrome() {
        // A layout wrapper named after the sidebar it sits beside: inside
        // <main> is content whatever the wrappers around <main> are called.
        // The footer list would outscore the products if both counted as
        // chrome (it holds more text).
        let links: String = (0..12)
            .map(|i| format!(r#"<li><a href="/help/{i}">Help topic number {i}: delivery, returns and warranty questions answered</a></li>"#))
            .collect();
        let html = format!(
            r#"<html><body><div class="sidebar-plus-content"><main><div class="grid">{}</div></main></div>
            <div class="site-footer"><ul>{links}</ul></div></body></html>"#,
            product_cards()
        );
        assert_eq!(
            xpaths(&records(&html)),
            cards_under("/body[1]/div[1]/main[1]/div[1]")
        );
    }

    #[test]
    fn pages_without_lists_give_no_records() {
        assert!(records("").records.is_empty());
        assert!(
            records("<p>Just one paragraph of text on this page.</p>")
                .records
                .is_empty()
        );
        // Two similar siblings are not enough evidence of a list.
        let two = "<div><div><b>Alpha</b> first entry text</div><div><b>Beta</b> second entry text</div></div>";
        assert!(records(two).records.is_empty());
    }

    /// The names of the first record's fields, and the row keys and
    /// `keycol` the records get in the hierarchy.
    fn named(html: &str) -> (Vec<String>, Vec<String>, Option<String>) {
        let r = records(html);
        let first = r
            .records
            .first()
            .map(|rec| names(rec).into_iter().map(str::to_owned).collect())
            .unwrap_or_default();
        let node = super::super::vocabulary::records_node(
            &r,
            crate::hierarchy::number::DecimalStyle::Point,
        );
        let keys = node
            .children
            .iter()
            .map(|row| row.key.clone().unwrap_or_default())
            .collect();
        (first, keys, node.attr("keycol").map(str::to_owned))
    }

    #[test]
    fn quote_fields_are_named_by_class_label_and_content() {
        let r = records(QUOTES);
        // `small.author` by its class; the quote is prose (`text`: the
        // class says only how it looks); `Tags:` labels the first tag and
        // is dropped; the other tags by their class; "by" says nothing.
        assert_eq!(
            names(&r.records[0]),
            ["text", "f1", "author", "title", "Tags", "tag"]
        );
        assert!(r.records[0].fields.iter().all(|f| f.text != "Tags:"));
        assert_eq!(field(&r.records[2], "author").text, "Albert Einstein");
    }

    #[test]
    fn dt_and_dd_name_the_definitions_and_the_terms_drop_out() {
        let items: String = [
            ("Rust in Action", "$39.99", "2021-08-10"),
            ("Zero to Production", "$45.00", "2022-03-01"),
            ("Programming Rust", "$59.99", "2021-06-15"),
            ("The Rust Book", "$29.99", "2019-08-12"),
        ]
        .iter()
        .map(|(t, p, d)| {
            format!(
                r#"<div class="book"><h3>{t}</h3><dl><dt>List price</dt><dd>{p}</dd><dt>Published:</dt><dd>{d}</dd></dl></div>"#
            )
        })
        .collect();
        let (first, keys, keycol) = named(&format!("<html><body><div>{items}</div></body></html>"));
        assert_eq!(first, ["f1", "List price", "Published"]);
        assert_eq!(keycol.as_deref(), Some("f1"));
        assert_eq!(keys[1], "Zero to Production");
        // A row's th names its td inside a record the same way.
        let rows: String = ["Alpha", "Beta", "Gamma", "Delta"]
            .iter()
            .map(|n| {
                format!(
                    r#"<li><b>Server {n}</b><table><tr><th>Uptime</th><td>99.9%</td></tr><tr><th>Region</th><td>eu-west-1</td></tr></table></li>"#
                )
            })
            .collect();
        let (first, ..) = named(&format!("<html><body><ul>{rows}</ul></body></html>"));
        assert_eq!(first, ["f1", "Uptime", "Region"]);
    }

    #[test]
    fn itemprop_aria_label_data_and_title_attributes_name_fields() {
        let items: String = (1..=4)
            .map(|i| {
                format!(
                    r#"<article itemscope><h2 itemprop="name">Widget model {i}</h2>
                    <span itemprop="datePublished">Released in spring</span>
                    <span aria-label="Stock level">{i}0 left</span>
                    <span aria-label="Widget model {i} colour">Blue {i}</span>
                    <span data-testid="shipping-info">Ships in {i} days</span>
                    <span title="Warehouse">Depot {i}</span></article>"#
                )
            })
            .collect();
        let (first, keys, keycol) =
            named(&format!("<html><body><main>{items}</main></body></html>"));
        // An aria-label that differs in every record is content, not a
        // name: that span falls through to its position.
        assert_eq!(
            first,
            [
                "name",
                "date-published",
                "Stock level",
                "f1",
                "shipping-info",
                "Warehouse"
            ]
        );
        assert_eq!(keycol.as_deref(), Some("name"));
        assert_eq!(keys[3], "Widget model 4");
    }

    #[test]
    fn class_tokens_name_fields_when_they_read_as_words() {
        let items: String = [
            ("Walnut desk", "$349", "Oak"),
            ("Pine shelf", "$89", "Pine"),
            ("Brass lamp", "$59", "Brass"),
            ("Leather chair", "$899", "Leather"),
        ]
        .iter()
        .map(|(t, p, m)| {
            format!(
                r#"<div class="product-card col-md-3"><div class="product-card__title css-1x2y3"><span>{t}</span></div>
                <div class="mt-2 product-card__price--sale"><span class="css-9k8j7">{p}</span></div>
                <div class="flex px-4"><span class="sc-bdVaJa">{m}</span></div></div>"#
            )
        })
        .collect();
        let (first, keys, keycol) = named(&format!("<html><body><div>{items}</div></body></html>"));
        // BEM element names kept; the hashed and utility classes name
        // nothing, so the material falls back to its position.
        assert_eq!(first, ["title", "price", "f1"]);
        assert_eq!(keycol.as_deref(), Some("title"));
        assert_eq!(
            keys,
            ["Walnut desk", "Pine shelf", "Brass lamp", "Leather chair"]
        );
    }

    #[test]
    fn dates_prices_and_times_are_typed_by_their_texts() {
        let items: String = [
            ("Rust 1.80 released", "2024-07-25", "10:00", "$0"),
            ("Rust 1.81 released", "Sep 5, 2024", "11:30", "$0"),
            ("Rust 1.82 released", "3 days ago", "09:15", "$0"),
            ("Rust 1.83 released", "yesterday", "14:45", "$0"),
        ]
        .iter()
        .map(|(t, d, h, p)| format!(r#"<li><b>{t}</b> <i>{d}</i> <u>{h}</u> <s>{p}</s></li>"#))
        .collect();
        let (first, ..) = named(&format!("<html><body><ul>{items}</ul></body></html>"));
        assert_eq!(first, ["f1", "date", "time", "price"]);
    }

    #[test]
    fn a_ranked_list_is_keyed_by_name_not_rank() {
        let items: String = ["Acme", "Globex", "Initech", "Umbrella", "Hooli"]
            .iter()
            .enumerate()
            .map(|(i, c)| {
                format!(
                    r#"<tr><td>{}.</td><td><a href="/c/{c}">{c} Corporation</a></td><td>{} bn</td></tr>"#,
                    i + 1,
                    500 - i * 40
                )
            })
            .collect();
        let (first, keys, keycol) = named(&format!(
            "<html><body><table><tr><th>#</th><th>Company</th><th>Revenue</th></tr>{items}</table></body></html>"
        ));
        // `#` is not a name: the ordinals are typed `rank`.
        assert_eq!(first, ["rank", "Company", "Revenue"]);
        assert_eq!(keycol.as_deref(), Some("Company"));
        assert_eq!(keys[2], "Initech Corporation");
        // Without headers the ordinal column is typed `rank` and still
        // does not key the rows.
        let items: String = ["Acme", "Globex", "Initech", "Umbrella", "Hooli"]
            .iter()
            .enumerate()
            .map(|(i, c)| {
                format!(
                    r#"<li><span>{}</span> <a href="/c/{c}">{c} Corporation</a> <em>{} points</em></li>"#,
                    i + 1,
                    500 - i * 40
                )
            })
            .collect();
        let (first, keys, keycol) = named(&format!("<html><body><ol>{items}</ol></body></html>"));
        assert_eq!(first, ["rank", "title", "f1"]);
        assert_eq!(keycol.as_deref(), Some("title"));
        assert_eq!(keys[0], "Acme Corporation");
    }

    #[test]
    fn a_list_opening_with_an_image_or_a_price_is_keyed_by_its_title() {
        let items: String = [
            ("Walnut writing desk", "$349"),
            ("Oak bookcase", "$219"),
            ("Reading lamp", "$59"),
            ("Leather armchair", "$899"),
        ]
        .iter()
        .enumerate()
        .map(|(i, (t, p))| {
            format!(
                r#"<div><img src="/i/{i}.jpg" alt="Photo"><span>{p}</span><h3><a href="/p/{i}">{t}</a></h3></div>"#
            )
        })
        .collect();
        let html = format!("<html><body><section>{items}</section></body></html>");
        let (first, keys, keycol) = named(&html);
        assert_eq!(first, ["image", "price", "title"]);
        assert_eq!(keycol.as_deref(), Some("title"));
        assert_eq!(
            keys,
            [
                "Walnut writing desk",
                "Oak bookcase",
                "Reading lamp",
                "Leather armchair"
            ]
        );
        // The key is not repeated as a cell; the price and image are.
        let node = super::super::vocabulary::records_node(
            &records(&html),
            crate::hierarchy::number::DecimalStyle::Point,
        );
        let cols: Vec<&str> = node.children[0]
            .children
            .iter()
            .filter_map(|c| c.col.as_deref())
            .collect();
        assert_eq!(cols, ["image", "price"]);
    }

    #[test]
    fn names_are_unique_in_a_region_and_the_same_on_every_run() {
        let items: String = (1..=4)
            .map(|i| {
                format!(
                    r#"<div class="job"><span class="title">Engineer {i}</span><span class="title">Team {i}</span><span class="price">${i}00</span><span>€{i}0</span></div>"#
                )
            })
            .collect();
        let html = format!("<html><body><div>{items}</div></body></html>");
        let (first, ..) = named(&html);
        assert_eq!(first, ["title", "title-2", "price", "price-2"]);
        for _ in 0..3 {
            assert_eq!(named(&html).0, first);
        }
    }

    #[test]
    fn price_detection() {
        assert!(looks_like_price("$1,299"));
        assert!(looks_like_price("12.50 EUR"));
        assert!(looks_like_price("₩30,000"));
        assert!(!looks_like_price("Albert Einstein"));
        assert!(!looks_like_price("$"));
        assert!(!looks_like_price(
            "$5 off every order over a hundred dollars this whole week"
        ));
    }
}
