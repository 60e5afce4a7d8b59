//! Semantic diff: two hierarchies in, the changes of their *data* out
//! (docs/algorithms.md, "Semantic diff").
//!
//! A hierarchy is read as the paper's tree of labels: the page title, then
//! section headings, table captions, row keys, column headers, labels of
//! items that own structure, and finally leaf values. Element kinds that
//! carry no label of their own (`list`, `terms`, a table without caption, a
//! row without key) are the paper's empty intermediate nodes and are
//! skipped. A *branch* is the label path from the root to a leaf; siblings
//! with equal labels are told apart by an ordinal (`o[1]`, `o[2]`).
//!
//! The algorithm:
//! 1. enumerate the branches of both trees and remove those present in both;
//! 2. detect renamed intermediate nodes (a heading, caption or row key whose
//!    whole subtree reappears under a new label): one `update` of that node,
//!    and its old branches are re-labelled before going on;
//! 3. match the remaining branches pairwise by the weighted difference
//!    δ (node at depth i weighs 2^-i; branches compared as ordered multisets
//!    through their longest common subsequence), the least different pair
//!    first, ties to the longer common prefix, then to the more similar leaf
//!    text, then to the nearer sibling position. A pair is accepted only as
//!    an `update` (same context, new leaf) or a `move` (same leaf value under
//!    another context, for values of some substance); everything else is an
//!    `insert` or a `delete`, so a row or item inserted in the middle is one
//!    insertion, not a cascade of updates.
//!
//! The search is not quadratic: candidates come from two indexes (remaining
//! old branches by context, and by leaf value), which hold every acceptable
//! partner; δ within a context is computed once. [`diff_naive`] keeps the
//! all-pairs search as a test oracle.

use std::collections::HashSet;
use std::hash::{Hash, Hasher};

// Fx hashing (rustc's hasher): the keys here are our own labels and
// 64-bit prefix hashes, not attacker-chosen, and SipHash dominated the
// profile.
use rustc_hash::{FxHashMap as HashMap, FxHashSet, FxHasher};

use serde::{Deserialize, Serialize};

use crate::hierarchy::text::short_label;
use crate::hierarchy::{HNode, Hierarchy, Kind};

pub mod record;

pub use record::{Field, RecordChange, RecordChangeKind, RecordOf, by_record};

/// No node (the root's parent).
const NONE: u32 = u32::MAX;

/// One node of the label tree: a label, the labels above it by `parent`.
///
/// The tree is interned: every prefix of every branch is one node, and a
/// branch is just its last node. Nodes are pushed parent first, so a
/// forward pass over `nodes` sees parents before children.
#[derive(Debug, Clone)]
struct Node<'h> {
    parent: u32,
    /// Labels above this one (0 for the root, the page title).
    depth: u32,
    text: &'h str,
    /// 1-based ordinal among siblings with the same text.
    ordinal: u32,
    /// The hierarchy node behind the label (an index into
    /// [`LabelTree::hnodes`]; `NONE` for the root, the page).
    hnode: u32,
    /// Hash of the prefix ending here (64-bit; a collision among the
    /// prefixes of two pages is vanishingly unlikely).
    hash: u64,
    /// Branches ending at or below this node.
    leaves: u32,
    /// The branch ending here, if any.
    branch: u32,
    /// For a cell's column header: which table (numbered in document
    /// order) it heads a column of; `NONE` for every other label.
    header_of: u32,
}

/// A branch: a root-to-leaf label path, held as its leaf node.
#[derive(Debug, Clone)]
struct Leaf<'h> {
    node: u32,
    /// The hierarchy node behind the leaf value (see [`Node::hnode`]).
    hnode: u32,
    num: Option<&'h str>,
    cell: bool,
    /// Position among the branches of its context (document order).
    position: u32,
}

/// The branches of one hierarchy as an interned tree of labels.
#[derive(Debug, Clone)]
struct LabelTree<'h> {
    nodes: Vec<Node<'h>>,
    branches: Vec<Leaf<'h>>,
    /// Derives the ids of the nodes a change reports, from the hierarchy.
    ids: crate::hierarchy::IdsAt<'h>,
    /// The hierarchy nodes walked, in document order.
    hnodes: Vec<HRef<'h>>,
}

/// A hierarchy node the label tree was built from: where it is, so that
/// its `xpath` id is derived only when a change reports it (a hierarchy read
/// back for a diff carries no ids: deriving every node's costs more than
/// the diff).
#[derive(Debug, Clone, Copy)]
struct HRef<'h> {
    /// The node (its `xpath` is empty when the hierarchy's ids were not
    /// derived).
    node: &'h HNode,
    /// The parent's entry (`NONE` for a child of the root).
    parent: u32,
    /// The node's index among its parent's children.
    child: u32,
}

/// Equal-text siblings that own structure (two sections both headed
/// "Price", repeated records with one title) are told apart by ordinals,
/// and ordinals shift when one of them is edited, comes or goes. Before
/// comparing, the old tree's ordinals in such groups are re-assigned so
/// that each old node takes the ordinal of the new sibling whose content
/// (the leaf values below it) it shares most with; old nodes sharing nothing
/// pair up in order, and those left over get ordinals the new tree does not
/// use. Returns whether any
/// ordinal changed (the caller then rehashes).
fn align_ordinals<'h>(a: &mut LabelTree<'h>, b: &LabelTree<'h>) -> bool {
    let parent_hash = |t: &LabelTree<'h>, i: usize| match t.nodes[i].parent {
        NONE => 0,
        p => t.node(p).hash,
    };
    // Groups with a second member on either side.
    let mut keys: FxHashSet<(u64, &'h str)> = FxHashSet::default();
    for t in [&*a, b] {
        for i in 1..t.nodes.len() {
            if t.nodes[i].ordinal >= 2 && t.intermediate(i) {
                keys.insert((parent_hash(t, i), t.nodes[i].text));
            }
        }
    }
    if keys.is_empty() {
        return false;
    }
    let members = |t: &LabelTree<'h>| {
        let mut m: HashMap<(u64, &'h str), Vec<u32>> = HashMap::default();
        for i in 1..t.nodes.len() {
            if t.intermediate(i) {
                let key = (parent_hash(t, i), t.nodes[i].text);
                if keys.contains(&key) {
                    m.entry(key).or_default().push(index(i));
                }
            }
        }
        m
    };
    let (ma, mb) = (members(a), members(b));
    let mut renumber: Vec<(u32, u32)> = Vec::new();
    let mut groups: Vec<_> = ma.iter().collect();
    groups.sort_by_key(|(_, nodes)| nodes[0]);
    for (key, olds) in groups {
        let Some(news) = mb.get(key) else { continue };
        let (so, sn): (Vec<_>, Vec<_>) = (
            olds.iter().map(|&i| a.values(i)).collect(),
            news.iter().map(|&i| b.values(i)).collect(),
        );
        let mut pairs = Vec::new();
        for (x, s) in so.iter().enumerate() {
            for (y, t) in sn.iter().enumerate() {
                let shared = s.intersection(t).count();
                if shared > 0 {
                    let jaccard = shared as f64 / (s.len() + t.len() - shared) as f64;
                    pairs.push((-jaccard, x.abs_diff(y), x, y));
                }
            }
        }
        pairs.sort_by(|p, q| p.partial_cmp(q).unwrap_or(std::cmp::Ordering::Equal));
        let (mut used_o, mut used_n) = (vec![false; olds.len()], vec![false; news.len()]);
        for (_, _, x, y) in pairs {
            if !used_o[x] && !used_n[y] {
                used_o[x] = true;
                used_n[y] = true;
                renumber.push((olds[x], b.node(news[y]).ordinal));
            }
        }
        // Those sharing nothing pair up in order (a node whose heading and
        // content both changed), the rest take unused ordinals.
        let mut free_new = (0..news.len()).filter(|&y| !used_n[y]);
        let mut spare = news.iter().map(|&n| b.node(n).ordinal).max().unwrap_or(0);
        for (x, used) in used_o.iter().enumerate() {
            if !used {
                let ordinal = match free_new.next() {
                    Some(y) => b.node(news[y]).ordinal,
                    None => {
                        spare += 1;
                        spare
                    }
                };
                renumber.push((olds[x], ordinal));
            }
        }
    }
    let mut changed = false;
    for (node, ordinal) in renumber {
        let n = &mut a.nodes[node as usize];
        changed |= n.ordinal != ordinal;
        n.ordinal = ordinal;
    }
    changed
}

/// Ordinals of the labels under one tree node: how many siblings so far
/// carried each text. A short list scanned in order while it is small (most
/// nodes have a handful of children), a hash map beyond that.
#[derive(Debug, Default)]
struct Ordinals<'h> {
    few: Vec<(&'h str, u32)>,
    many: HashMap<&'h str, u32>,
}

impl<'h> Ordinals<'h> {
    const FEW: usize = 16;

    fn clear(&mut self) {
        self.few.clear();
        if !self.many.is_empty() {
            // Dropped, not cleared: clearing costs the map's capacity, and a
            // long list once counted here must not tax every later scope.
            self.many = HashMap::default();
        }
    }

    /// Counts one more `text` and returns its ordinal.
    fn next(&mut self, text: &'h str) -> u32 {
        if self.many.is_empty() {
            if let Some(e) = self.few.iter_mut().find(|e| e.0 == text) {
                e.1 += 1;
                return e.1;
            }
            if self.few.len() < Self::FEW {
                self.few.push((text, 1));
                return 1;
            }
            self.many.extend(self.few.drain(..));
        }
        let o = self.many.entry(text).or_default();
        *o += 1;
        *o
    }
}

/// The hash of a prefix extended by one label.
fn step_hash(parent: u64, text: &str, ordinal: u32) -> u64 {
    let mut h = FxHasher::default();
    parent.hash(&mut h);
    text.hash(&mut h);
    ordinal.hash(&mut h);
    h.finish()
}

/// The labels a node contributes (outermost first), at most four, and how
/// many. A cell contributes its column header, then its value or label; a
/// leaf adds its text and the target of a link that is its whole text.
fn node_labels(n: &HNode) -> ([&str; 4], usize) {
    let (first, second) = match n.kind {
        Kind::Row => (n.key.as_deref(), None),
        Kind::Cell => (n.col.as_deref(), n.label.as_deref()),
        // A price or availability is named by its kind (`Widget / price:
        // 10 USD -> 12 USD`), as keywords and addresses are.
        Kind::Keywords | Kind::Address | Kind::Price | Kind::Availability => {
            (Some(n.kind.name()), n.label.as_deref())
        }
        _ => (n.label.as_deref(), None),
    };
    let (text, href) = if n.children.is_empty() {
        (n.text.as_deref(), n.attr("href"))
    } else {
        (None, None)
    };
    let mut v = [""; 4];
    let mut k = 0;
    for s in [first, second, text, href].into_iter().flatten() {
        v[k] = s;
        k += 1;
    }
    (v, k)
}

fn index(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(NONE)
}

impl<'h> LabelTree<'h> {
    /// The label tree of `h`. `ignored` holds `xpath` ids of nodes whose
    /// subtrees are left out (a watch's `ignore` list, resolved).
    fn new(h: &'h Hierarchy, ignored: &HashSet<String>) -> Self {
        Self::with_capacity(h, ignored, 1024, 512)
    }

    /// [`LabelTree::new`], with room for `nodes` nodes and `branches`
    /// branches reserved (the other tree's sizes are a good guess).
    fn with_capacity(
        h: &'h Hierarchy,
        ignored: &HashSet<String>,
        nodes: usize,
        branches: usize,
    ) -> Self {
        let title = h.title.as_deref().unwrap_or_default();
        let mut t = LabelTree {
            nodes: Vec::with_capacity(nodes),
            branches: Vec::with_capacity(branches),
            ids: crate::hierarchy::IdsAt::new(h),
            hnodes: Vec::with_capacity(nodes),
        };
        t.nodes.push(Node {
            parent: NONE,
            depth: 0,
            text: title,
            ordinal: 1,
            hnode: NONE,
            hash: step_hash(0, title, 1),
            leaves: 0,
            branch: NONE,
            header_of: NONE,
        });
        let mut scopes = vec![Ordinals::default()];
        let mut tables = (0, NONE);
        t.walk(&h.children, 0, 0, ignored, &mut scopes, &mut tables, NONE);
        // Branch counts, children before parents.
        for i in (1..t.nodes.len()).rev() {
            let (p, c) = (t.nodes[i].parent as usize, t.nodes[i].leaves);
            t.nodes[p].leaves += c;
        }
        // Positions: document order within each context.
        let mut counters = vec![0u32; t.nodes.len()];
        for b in &mut t.branches {
            let p = t.nodes[b.node as usize].parent as usize;
            b.position = counters[p];
            counters[p] += 1;
        }
        t
    }

    /// Adds the labels of `nodes` below tree node `at`. Nodes without a
    /// label of their own (`list`, a caption-less `table`, a key-less `row`)
    /// are transparent: their children join these siblings, so ordinals
    /// count across them. `scopes[level]` counts the ordinals of `at`'s
    /// children (one reused counter per depth, no allocation per node).
    /// `hparent` is the entry in `hnodes` of the hierarchy node whose
    /// children `nodes` are.
    #[allow(
        clippy::too_many_arguments,
        reason = "the recursion's state: two trees, their positions and the output"
    )]
    fn walk(
        &mut self,
        nodes: &'h [HNode],
        at: u32,
        level: usize,
        ignored: &HashSet<String>,
        scopes: &mut Vec<Ordinals<'h>>,
        tables: &mut (u32, u32),
        hparent: u32,
    ) {
        for (k, n) in nodes.iter().enumerate() {
            // (`ignored` is non-empty only for hierarchies with ids: the
            // ignore list is resolved over them.)
            if !ignored.is_empty() && ignored.contains(&n.xpath) {
                continue;
            }
            let me = index(self.hnodes.len());
            self.hnodes.push(HRef {
                node: n,
                parent: hparent,
                child: index(k),
            });
            // (tables seen so far, the table being walked)
            let outer = tables.1;
            if n.kind == Kind::Table {
                tables.1 = tables.0;
                tables.0 += 1;
            }
            let (labels, count) = node_labels(n);
            if count == 0 {
                self.walk(&n.children, at, level, ignored, scopes, tables, me);
                tables.1 = outer;
                continue;
            }
            let mut cur = at;
            for (i, text) in labels[..count].iter().enumerate() {
                let ordinal = if i == 0 { scopes[level].next(text) } else { 1 };
                cur = self.push(cur, text, ordinal, me);
                if i == 0 && n.kind == Kind::Cell && n.col.is_some() {
                    self.nodes[cur as usize].header_of = tables.1;
                }
            }
            if n.children.is_empty() {
                let node = &mut self.nodes[cur as usize];
                node.branch = index(self.branches.len());
                node.leaves = 1;
                self.branches.push(Leaf {
                    node: cur,
                    hnode: me,
                    num: n.num.as_deref(),
                    cell: n.kind == Kind::Cell,
                    position: 0,
                });
            } else {
                if scopes.len() == level + 1 {
                    scopes.push(Ordinals::default());
                }
                scopes[level + 1].clear();
                self.walk(&n.children, cur, level + 1, ignored, scopes, tables, me);
            }
            tables.1 = outer;
        }
    }

    fn push(&mut self, parent: u32, text: &'h str, ordinal: u32, hnode: u32) -> u32 {
        let p = &self.nodes[parent as usize];
        let node = Node {
            parent,
            depth: p.depth + 1,
            text,
            ordinal,
            hnode,
            hash: step_hash(p.hash, text, ordinal),
            leaves: 0,
            branch: NONE,
            header_of: NONE,
        };
        self.nodes.push(node);
        index(self.nodes.len() - 1)
    }

    /// Recomputes every prefix hash after labels changed.
    fn rehash(&mut self) {
        for i in 0..self.nodes.len() {
            let parent = match self.nodes[i].parent {
                NONE => 0,
                p => self.nodes[p as usize].hash,
            };
            let n = &self.nodes[i];
            self.nodes[i].hash = step_hash(parent, n.text, n.ordinal);
        }
    }

    fn node(&self, i: u32) -> &Node<'h> {
        &self.nodes[i as usize]
    }

    /// The `xpath` id of hierarchy node `hnode` (an entry of `hnodes`,
    /// `NONE` for the root): the one the hierarchy holds, or, for a
    /// hierarchy read back without ids, derived for this node alone by the
    /// rule that assigns them all ([`crate::hierarchy::IdsAt`]).
    fn id(&self, hnode: u32) -> String {
        let Some(r) = self.hnodes.get(hnode as usize) else {
            return "/page".to_string();
        };
        if !r.node.xpath.is_empty() {
            return r.node.xpath.clone();
        }
        let mut path = Vec::new();
        let mut at = hnode;
        while let Some(r) = self.hnodes.get(at as usize) {
            path.push(r.child as usize);
            at = r.parent;
        }
        path.reverse();
        self.ids.id_at(&path).unwrap_or_default()
    }

    /// Whether hierarchy nodes `x` and `y` have the same id: the same node
    /// (ids are unique), or equal ids held by the hierarchy.
    fn same_id(&self, x: u32, y: u32) -> bool {
        x == y
            || match (self.hnodes.get(x as usize), self.hnodes.get(y as usize)) {
                (Some(a), Some(b)) => !a.node.xpath.is_empty() && a.node.xpath == b.node.xpath,
                _ => false,
            }
    }

    /// The labels from the root down to node `i`, as (text, ordinal).
    fn labels(&self, i: u32) -> Vec<(&'h str, u32)> {
        let mut out = Vec::with_capacity(self.node(i).depth as usize + 1);
        let mut at = i;
        while at != NONE {
            let n = self.node(at);
            out.push((n.text, n.ordinal));
            at = n.parent;
        }
        out.reverse();
        out
    }

    /// The label texts from the root down to node `i`.
    fn texts(&self, i: u32) -> Vec<String> {
        self.labels(i).iter().map(|(t, _)| t.to_string()).collect()
    }

    /// The label texts above node `i` (its context).
    fn context(&self, i: u32) -> Vec<String> {
        match self.node(i).parent {
            NONE => Vec::new(),
            p => self.texts(p),
        }
    }

    /// The hash of a branch's context (its leaf's parent).
    fn context_hash(&self, b: &Leaf<'h>) -> u64 {
        match self.node(b.node).parent {
            NONE => 0,
            p => self.node(p).hash,
        }
    }

    fn leaf(&self, b: u32) -> &Leaf<'h> {
        &self.branches[b as usize]
    }

    fn leaf_text(&self, b: u32) -> &'h str {
        self.node(self.leaf(b).node).text
    }

    /// The leaf values under node `i` (nodes are in pre-order: its
    /// descendants directly follow it).
    fn values(&self, i: u32) -> FxHashSet<&'h str> {
        let depth = self.node(i).depth;
        let mut out = FxHashSet::default();
        for n in self.nodes[i as usize + 1..]
            .iter()
            .take_while(|n| n.depth > depth)
        {
            if n.branch != NONE {
                out.insert(n.text);
            }
        }
        out
    }

    /// Whether node `i` lies on some branch and is not a branch's end.
    fn intermediate(&self, i: usize) -> bool {
        self.nodes[i].leaves > 0 && self.nodes[i].branch == NONE
    }
}

/// A branch written out: the labels from the root (the page title) down to
/// the leaf value, and the `xpath` id of the hierarchy node behind each
/// label (the root's is `/page`). For tools and tests; the diff itself
/// works on an interned label tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchPath {
    /// The labels, root first.
    pub labels: Vec<String>,
    /// The `xpath` id behind each label.
    pub ids: Vec<String>,
}

/// Every branch of `h`, in document order.
pub fn branch_paths(h: &Hierarchy) -> Vec<BranchPath> {
    let t = LabelTree::new(h, &HashSet::new());
    t.branches
        .iter()
        .map(|b| {
            let mut labels = Vec::new();
            let mut ids = Vec::new();
            let mut at = b.node;
            while at != NONE {
                let n = t.node(at);
                labels.push(n.text.to_string());
                ids.push(t.id(n.hnode));
                at = n.parent;
            }
            labels.reverse();
            ids.reverse();
            BranchPath { labels, ids }
        })
        .collect()
}

/// What kind of change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// Same context, new value (or a renamed heading, caption, key).
    Update,
    /// New data.
    Insert,
    /// Data gone.
    Delete,
    /// The same value under another context.
    Move,
}

impl ChangeKind {
    /// The lower-case name used in every output format.
    pub fn name(self) -> &'static str {
        match self {
            ChangeKind::Update => "update",
            ChangeKind::Insert => "insert",
            ChangeKind::Delete => "delete",
            ChangeKind::Move => "move",
        }
    }
}

/// One semantic change: what `semclip diff --format json` writes and the
/// store keeps as a change event (read back by
/// [`crate::store::Event`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// What happened.
    pub kind: ChangeKind,
    /// Labels from the root down to (not including) the changed value; for
    /// a move, the old context.
    pub context: Vec<String>,
    /// For a move: the new context.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_context: Option<Vec<String>>,
    /// The old value (absent for an insert).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old: Option<String>,
    /// The new value (absent for a delete).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<String>,
    /// `xpath` id of the old node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_xpath: Option<String>,
    /// `xpath` id of the new node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_xpath: Option<String>,
    /// Old `num` of a numeric update.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_num: Option<String>,
    /// New `num` of a numeric update.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_num: Option<String>,
    /// `new_num - old_num`, exactly, for numeric updates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta: Option<String>,
    /// For an insert or delete of a whole node (a row, an item with its
    /// link, a section): how many values it held. For an update of a
    /// column header: how many rows it labels (one change for all of them;
    /// `context` is then what those rows share).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<usize>,
    /// The record (a keyed table row) the change lies in, with its fields:
    /// what groups a check's changes by record ([`record::by_record`]).
    /// Absent outside keyed rows, and in changes stored before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<RecordOf>,
}

/// The weighted difference δ of two branches (docs/algorithms.md,
/// "Semantic diff"): labels missing from the
/// longest common subsequence, each weighing 2^-i at its 1-based position i
/// in its own branch.
pub fn delta<T: PartialEq>(a: &[T], b: &[T]) -> f64 {
    let (n, m) = (a.len(), b.len());
    // LCS table, flat (branches are short: depth is capped at 100).
    let w = m + 1;
    let mut t = vec![0u16; (n + 1) * w];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            t[i * w + j] = if a[i] == b[j] {
                t[(i + 1) * w + j + 1] + 1
            } else {
                t[(i + 1) * w + j].max(t[i * w + j + 1])
            };
        }
    }
    // Walk one LCS, summing the weights of what it leaves out.
    let (mut i, mut j, mut d) = (0, 0, 0.0);
    while i < n && j < m {
        if a[i] == b[j] {
            i += 1;
            j += 1;
        } else if t[(i + 1) * w + j] >= t[i * w + j + 1] {
            d += weight(i);
            i += 1;
        } else {
            d += weight(j);
            j += 1;
        }
    }
    d += (i..n).map(weight).sum::<f64>();
    d += (j..m).map(weight).sum::<f64>();
    d
}

fn weight(index0: usize) -> f64 {
    0.5f64.powi(i32::try_from(index0 + 1).unwrap_or(i32::MAX))
}

/// Similarity of two leaf texts in [0, 1]: shared prefix and suffix
/// relative to the longer text (cheap, and enough to pair an edited value
/// with its old self rather than with a neighbour).
fn prefix_suffix_similarity(a: &str, b: &str) -> f64 {
    let longest = a.chars().count().max(b.chars().count());
    if longest == 0 {
        return 1.0;
    }
    let (mut pre, mut pre_bytes) = (0, 0);
    for (x, y) in a.chars().zip(b.chars()) {
        if x != y {
            break;
        }
        pre += 1;
        pre_bytes += x.len_utf8();
    }
    let suf = a[pre_bytes..]
        .chars()
        .rev()
        .zip(b[pre_bytes..].chars().rev())
        .take_while(|(x, y)| x == y)
        .count();
    (pre + suf) as f64 / longest as f64
}

/// A value of enough substance to be recognised when it moves: not a
/// number and not a short token such as `—` or `yes`.
fn movable(t: &LabelTree<'_>, b: u32) -> bool {
    let leaf = t.leaf(b);
    let text = t.leaf_text(b);
    !leaf.cell
        && leaf.num.is_none()
        && (text.chars().count() >= 12 || text.split_whitespace().count() >= 2)
}

/// How a candidate pair ranks: smaller is better.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
struct Rank {
    delta: f64,
    neg_prefix: i64,
    neg_similarity: f64,
    distance: u32,
    new_index: u32,
    old_index: u32,
}

/// The two trees being compared; `a` (old) is relabelled by renames.
struct Pair<'h> {
    a: LabelTree<'h>,
    b: LabelTree<'h>,
}

impl Pair<'_> {
    fn rank(&self, oi: u32, ni: u32, kind: ChangeKind) -> Rank {
        let (o, n) = (self.a.leaf(oi), self.b.leaf(ni));
        let (delta, prefix) = if kind == ChangeKind::Update {
            // Same context, different leaf: the LCS is the context, and
            // what it leaves out is the two leaves at depth k, so
            // δ = 2 · 2^-(k+1) (what `delta` computes, without the walk).
            let k = self.a.node(o.node).depth as usize;
            (2.0 * weight(k), k)
        } else {
            let (lo, ln) = (self.a.labels(o.node), self.b.labels(n.node));
            let prefix = lo.iter().zip(&ln).take_while(|(x, y)| x == y).count();
            (delta(&lo, &ln), prefix)
        };
        Rank {
            delta,
            neg_prefix: -(prefix as i64),
            neg_similarity: -prefix_suffix_similarity(self.a.leaf_text(oi), self.b.leaf_text(ni)),
            distance: o.position.abs_diff(n.position),
            new_index: ni,
            old_index: oi,
        }
    }

    /// Whether a pair may be matched, and as what.
    fn acceptable(&self, oi: u32, ni: u32) -> Option<ChangeKind> {
        let (o, n) = (self.a.leaf(oi), self.b.leaf(ni));
        if self.a.node(o.node).depth == self.b.node(n.node).depth
            && self.a.context_hash(o) == self.b.context_hash(n)
        {
            Some(ChangeKind::Update)
        } else if self.a.leaf_text(oi) == self.b.leaf_text(ni)
            && movable(&self.a, oi)
            && movable(&self.b, ni)
        {
            Some(ChangeKind::Move)
        } else {
            None
        }
    }
}

/// The `xpath` ids of the elements that the XPath expressions `exprs` (a
/// watch's `ignore` list, or `semclip diff --ignore`) select in `h`.
pub fn ignored_ids(
    h: &Hierarchy,
    exprs: &[String],
) -> Result<HashSet<String>, crate::xpath::XPathError> {
    let mut out = HashSet::new();
    if exprs.is_empty() {
        return Ok(out);
    }
    // Natively on the hierarchy where the expression allows; libxml2 on
    // its XML (written once, on first need) otherwise.
    let ev = crate::xpath::native::Evaluator::new(h);
    for e in exprs {
        match ev.flat().select(e) {
            Some(hits) => out.extend(hits.iter().map(|hit| ev.flat().id(hit))),
            None => out.extend(ev.doc()?.select_ids(e)?),
        }
    }
    Ok(out)
}

/// `h` without the subtrees whose `xpath` ids are in `ignored` (ids of the
/// rest unchanged), for hashing what a watch compares.
pub fn without(h: &Hierarchy, ignored: &HashSet<String>) -> Hierarchy {
    fn prune(nodes: &[HNode], ignored: &HashSet<String>) -> Vec<HNode> {
        nodes
            .iter()
            .filter(|n| !ignored.contains(&n.xpath))
            .map(|n| {
                let mut n = n.clone();
                n.children = prune(&n.children, ignored);
                n
            })
            .collect()
    }
    Hierarchy {
        children: prune(&h.children, ignored),
        ..h.clone()
    }
}

/// The changes from `old` to `new`.
pub fn diff(old: &Hierarchy, new: &Hierarchy) -> Vec<Change> {
    diff_ignoring(old, new, &HashSet::new(), &HashSet::new())
}

/// The changes from `old` to `new`, leaving out the subtrees whose `xpath`
/// ids are in `old_ignored` / `new_ignored`.
pub fn diff_ignoring(
    old: &Hierarchy,
    new: &Hierarchy,
    old_ignored: &HashSet<String>,
    new_ignored: &HashSet<String>,
) -> Vec<Change> {
    let a = LabelTree::new(old, old_ignored);
    let b = LabelTree::with_capacity(new, new_ignored, a.nodes.len(), a.branches.len());
    compare(a, b, Matcher::Indexed)
}

/// The same result by the all-pairs search of the paper (a test oracle).
pub fn diff_naive(old: &Hierarchy, new: &Hierarchy) -> Vec<Change> {
    compare(
        LabelTree::new(old, &HashSet::new()),
        LabelTree::new(new, &HashSet::new()),
        Matcher::AllPairs,
    )
}

#[derive(Clone, Copy)]
enum Matcher {
    Indexed,
    AllPairs,
}

fn compare<'h>(a: LabelTree<'h>, b: LabelTree<'h>, matcher: Matcher) -> Vec<Change> {
    let mut p = Pair { a, b };
    let mut changes = Vec::new();
    if align_ordinals(&mut p.a, &p.b) {
        p.a.rehash();
    }
    // 1. Branches present in both are no change.
    let (mut ra, mut rb) = remaining(&p.a, &p.b);
    if ra.is_empty() && rb.is_empty() {
        return changes;
    }
    // 2. Renamed intermediate nodes.
    let renames = renames(&p.a, &p.b, &ra, &rb);
    if !renames.is_empty() {
        // A column header renamed over several rows is one change.
        let mut header_change: HashMap<(u32, &str, &str), usize> = HashMap::default();
        for r in renames {
            let (text, ordinal) = (p.b.node(r.new).text, p.b.node(r.new).ordinal);
            let node = &mut p.a.nodes[r.old as usize];
            // Only the ordinal moved (an equal-text sibling before it came
            // or went): the same data, relabelled silently.
            let silent = node.text == text;
            let (old_text, table) = (node.text, node.header_of);
            node.text = text;
            node.ordinal = ordinal;
            if silent {
                continue;
            }
            if table == NONE {
                changes.push(r.change);
                continue;
            }
            match header_change.get(&(table, old_text, text)) {
                Some(&k) => {
                    let c: &mut Change = &mut changes[k];
                    let common = c
                        .context
                        .iter()
                        .zip(&r.change.context)
                        .take_while(|(x, y)| x == y)
                        .count();
                    c.context.truncate(common);
                    c.size = Some(c.size.unwrap_or(1) + 1);
                }
                None => {
                    header_change.insert((table, old_text, text), changes.len());
                    changes.push(r.change);
                }
            }
        }
        p.a.rehash();
        (ra, rb) = remaining(&p.a, &p.b);
    }
    // 3. Pairing.
    let pairs = match matcher {
        Matcher::Indexed => pair_indexed(&p, &ra, &rb),
        Matcher::AllPairs => pair_all(&p, &ra, &rb),
    };
    let mut matched_old = vec![false; p.a.branches.len()];
    let mut matched_new = vec![false; p.b.branches.len()];
    for &(oi, ni, kind) in &pairs {
        matched_old[oi as usize] = true;
        matched_new[ni as usize] = true;
        // Same context, same text, another ordinal: an equal-text sibling
        // came or went, this value did not change.
        if kind == ChangeKind::Update && p.a.leaf_text(oi) == p.b.leaf_text(ni) {
            continue;
        }
        changes.push(pair_change(&p, oi, ni, kind));
    }
    let gone: Vec<u32> = ra
        .into_iter()
        .filter(|&i| !matched_old[i as usize])
        .collect();
    let born: Vec<u32> = rb
        .into_iter()
        .filter(|&i| !matched_new[i as usize])
        .collect();
    // A node that came or went has only remaining branches below it, and
    // those are unmatched or moved: with neither, there is nothing more.
    if gone.is_empty() && born.is_empty() && pairs.iter().all(|x| x.2 != ChangeKind::Move) {
        return changes;
    }
    let (a_nodes, b_nodes) = (node_hashes(&p.a), node_hashes(&p.b));
    let (deleted, whole_a) = whole_nodes(&p.a, &b_nodes, &gone, ChangeKind::Delete);
    let (inserted, whole_b) = whole_nodes(&p.b, &a_nodes, &born, ChangeKind::Insert);
    changes.extend(deleted);
    changes.extend(bare_labels(&p.a, &b_nodes, &whole_a, ChangeKind::Delete));
    changes.extend(bare_labels(&p.b, &a_nodes, &whole_b, ChangeKind::Insert));
    changes.extend(inserted);
    changes
}

/// Headings, captions, keys and item labels that came or went while what
/// they held moved elsewhere or was reported below them: each is a change
/// of its own with `size` 0 (a label, no values). Deletions come deepest
/// first, insertions outermost first. Labels that go with a value of the
/// same node (a link's text above its target, a column header above its
/// cell) and nodes inside a whole inserted or deleted node are not repeated.
fn bare_labels(
    tree: &LabelTree<'_>,
    other_nodes: &FxHashSet<u64>,
    whole: &[u32],
    kind: ChangeKind,
) -> Vec<Change> {
    let whole: FxHashSet<u32> = whole.iter().copied().collect();
    let mut covered = vec![false; tree.nodes.len()];
    let mut found = Vec::new();
    for i in 0..tree.nodes.len() {
        let n = &tree.nodes[i];
        covered[i] = whole.contains(&index(i)) || (n.parent != NONE && covered[n.parent as usize]);
        if covered[i] || !tree.intermediate(i) || other_nodes.contains(&n.hash) {
            continue;
        }
        let same_node_below = tree
            .nodes
            .get(i + 1)
            .is_some_and(|c| c.parent == index(i) && tree.same_id(c.hnode, n.hnode));
        if !same_node_below {
            found.push(index(i));
        }
    }
    if kind == ChangeKind::Delete {
        found.reverse();
    }
    found
        .into_iter()
        .map(|n| node_change(tree, n, kind, Some(0)))
        .collect()
}

/// An insert or delete of node `n` of `tree` holding `size` values.
fn node_change(tree: &LabelTree<'_>, n: u32, kind: ChangeKind, size: Option<usize>) -> Change {
    let value = tree.node(n).text.to_string();
    let xpath = tree.id(tree.node(n).hnode);
    let (old, new, old_xpath, new_xpath) = match kind {
        ChangeKind::Delete => (Some(value), None, Some(xpath), None),
        _ => (None, Some(value), None, Some(xpath)),
    };
    Change {
        kind,
        context: tree.context(n),
        new_context: None,
        old,
        new,
        old_xpath,
        new_xpath,
        old_num: None,
        new_num: None,
        delta: None,
        size,
        record: record::of(tree, tree.node(n).hnode),
    }
}

/// The hashes of every node of `t` that lies on a branch.
fn node_hashes(t: &LabelTree<'_>) -> FxHashSet<u64> {
    t.nodes
        .iter()
        .filter(|n| n.leaves > 0)
        .map(|n| n.hash)
        .collect()
}

/// Deletions (or insertions) reported per node: branches `unmatched` of
/// `tree` are grouped under their topmost node that `other` lacks, and a
/// node whose branches are all unmatched is one change (`old`/`new` its
/// label, `size` its number of values), so a removed row or item is one
/// change.
fn whole_nodes(
    tree: &LabelTree<'_>,
    other_nodes: &FxHashSet<u64>,
    unmatched: &[u32],
    kind: ChangeKind,
) -> (Vec<Change>, Vec<u32>) {
    if unmatched.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let mut groups: Vec<(u32, Vec<u32>)> = Vec::new();
    let mut group_of: HashMap<u32, usize> = HashMap::default();
    let mut inner: Option<FxHashSet<u64>> = None;
    for &i in unmatched {
        let leaf = tree.leaf(i).node;
        // The topmost node on the path that `other` lacks.
        let mut top = NONE;
        let mut at = leaf;
        while at != NONE {
            let n = tree.node(at);
            if !other_nodes.contains(&n.hash) {
                top = at;
            }
            at = n.parent;
        }
        if top == NONE {
            // `other` holds the whole path, as an inner node. If `tree` has
            // no inner node of that path, the label itself stayed and only
            // its role changed (an item that owned a nested list now stands
            // alone, or the reverse): not new data, and what it gained or
            // lost below is reported on its own. Otherwise `tree` holds the
            // label twice (as here, and as that inner node), and this one
            // really came or went.
            let inner = inner.get_or_insert_with(|| {
                (0..tree.nodes.len())
                    .filter(|&n| tree.intermediate(n))
                    .map(|n| tree.nodes[n].hash)
                    .collect::<FxHashSet<u64>>()
            });
            if !inner.contains(&tree.node(leaf).hash) {
                continue;
            }
            top = leaf;
        }
        match group_of.get(&top) {
            Some(&g) => groups[g].1.push(i),
            None => {
                group_of.insert(top, groups.len());
                groups.push((top, vec![i]));
            }
        }
    }
    let mut items = Vec::new();
    for (top, members) in groups {
        split_whole(tree, top, &members, &mut items);
    }
    let whole = items
        .iter()
        .filter(|(_, size)| size.is_some())
        .map(|(n, _)| *n)
        .collect();
    let changes = items
        .into_iter()
        .map(|(n, size)| node_change(tree, n, kind, size))
        .collect();
    (changes, whole)
}

/// The nodes to report for unmatched branches `members` under `top`: `top`
/// itself when every branch below it is unmatched (with their count),
/// else the same question one level down, child by child, down to single
/// values. So a section whose title changed and one of whose paragraphs
/// moved away is reported as its other subsections, whole, not as every
/// value in them.
fn split_whole(
    tree: &LabelTree<'_>,
    top: u32,
    members: &[u32],
    out: &mut Vec<(u32, Option<usize>)>,
) {
    let node = tree.node(top);
    if node.branch != NONE {
        out.push((top, None));
        return;
    }
    if node.leaves as usize == members.len() {
        out.push((top, Some(members.len())));
        return;
    }
    let mut children: Vec<(u32, Vec<u32>)> = Vec::new();
    let mut child_of: HashMap<u32, usize> = HashMap::default();
    for &m in members {
        let mut at = tree.leaf(m).node;
        while tree.node(at).parent != top && tree.node(at).parent != NONE {
            at = tree.node(at).parent;
        }
        match child_of.get(&at) {
            Some(&k) => children[k].1.push(m),
            None => {
                child_of.insert(at, children.len());
                children.push((at, vec![m]));
            }
        }
    }
    for (child, below) in children {
        split_whole(tree, child, &below, out);
    }
}

/// Indexes (into the branches of `a`, `b`) of the branches not present in
/// the other tree.
fn remaining(a: &LabelTree<'_>, b: &LabelTree<'_>) -> (Vec<u32>, Vec<u32>) {
    let leaves = |t: &LabelTree<'_>| -> FxHashSet<u64> {
        let mut set = FxHashSet::with_capacity_and_hasher(t.branches.len(), Default::default());
        set.extend(t.branches.iter().map(|l| t.node(l.node).hash));
        set
    };
    let (in_a, in_b) = (leaves(a), leaves(b));
    let rest = |t: &LabelTree<'_>, other: &FxHashSet<u64>| -> Vec<u32> {
        (0..index(t.branches.len()))
            .filter(|&i| !other.contains(&t.node(t.leaf(i).node).hash))
            .collect()
    };
    (rest(a, &in_b), rest(b, &in_a))
}

struct Rename {
    /// The node of the old tree.
    old: u32,
    /// The node of the new tree.
    new: u32,
    change: Change,
}

/// Intermediate nodes of `t` absent from `other`, topmost first, each with
/// the hashes of its remaining branches' label suffixes below it, in
/// document order.
fn lost_nodes(
    t: &LabelTree<'_>,
    other: &LabelTree<'_>,
    rest: &[u32],
) -> Vec<(u32, FxHashSet<u64>)> {
    let present: FxHashSet<u64> = (0..other.nodes.len())
        .filter(|&i| other.intermediate(i))
        .map(|i| other.nodes[i].hash)
        .collect();
    let mut groups: Vec<(u32, FxHashSet<u64>)> = Vec::new();
    let mut group_of: HashMap<u32, usize> = HashMap::default();
    for &i in rest {
        let leaf = t.leaf(i).node;
        let mut top = NONE;
        let mut at = t.node(leaf).parent;
        while at != NONE {
            if !present.contains(&t.node(at).hash) {
                top = at;
            }
            at = t.node(at).parent;
        }
        if top == NONE {
            continue;
        }
        // The label suffix below `top`, hashed from the top down.
        let labels = t.labels(leaf);
        let below = t.node(top).depth as usize + 1;
        let suffix = labels[below..]
            .iter()
            .fold(0, |h, (text, ordinal)| step_hash(h, text, *ordinal));
        let g = *group_of.entry(top).or_insert_with(|| {
            groups.push((top, FxHashSet::default()));
            groups.len() - 1
        });
        groups[g].1.insert(suffix);
    }
    groups.sort_by_key(|g| g.0);
    groups
}

/// Intermediate nodes whose label changed while what they own stayed: an
/// old node absent from the new tree and a new node under the same parent
/// absent from the old one, sharing at least half of their subtrees'
/// relative branches.
fn renames(a: &LabelTree<'_>, b: &LabelTree<'_>, ra: &[u32], rb: &[u32]) -> Vec<Rename> {
    let gone = lost_nodes(a, b, ra);
    if gone.is_empty() {
        return Vec::new();
    }
    let born = lost_nodes(b, a, rb);
    let parent_hash = |t: &LabelTree<'_>, i: u32| match t.node(i).parent {
        NONE => 0,
        p => t.node(p).hash,
    };
    let mut born_by_parent: HashMap<u64, Vec<usize>> = HashMap::default();
    for (k, (node, _)) in born.iter().enumerate() {
        born_by_parent
            .entry(parent_hash(b, *node))
            .or_default()
            .push(k);
    }
    let mut used = vec![false; born.len()];
    let mut out = Vec::new();
    for (old, old_set) in &gone {
        let mut best: Option<(f64, usize)> = None;
        // The roots (page titles) pair whatever they hold: a page has one
        // title, and a new one is that title's update.
        let is_root = a.node(*old).parent == NONE;
        for &k in born_by_parent
            .get(&parent_hash(a, *old))
            .into_iter()
            .flatten()
        {
            if used[k] {
                continue;
            }
            let new_set = &born[k].1;
            let shared = old_set.intersection(new_set).count();
            let jaccard = shared as f64 / (old_set.len() + new_set.len() - shared).max(1) as f64;
            if (jaccard >= 0.5 || is_root) && best.is_none_or(|(j, _)| jaccard > j) {
                best = Some((jaccard, k));
            }
        }
        if let Some((_, k)) = best {
            used[k] = true;
            let new = born[k].0;
            out.push(Rename {
                old: *old,
                new,
                change: Change {
                    kind: ChangeKind::Update,
                    context: a.context(*old),
                    new_context: None,
                    old: Some(a.node(*old).text.to_string()),
                    new: Some(b.node(new).text.to_string()),
                    old_xpath: Some(a.id(a.node(*old).hnode)),
                    new_xpath: Some(b.id(b.node(new).hnode)),
                    old_num: None,
                    new_num: None,
                    delta: None,
                    size: None,
                    record: record::of(b, b.node(new).hnode),
                },
            });
        }
    }
    out
}

/// Greedy one-to-one pairing, best rank first, over the candidates the two
/// indexes give (same context, same movable value).
fn pair_indexed(p: &Pair<'_>, ra: &[u32], rb: &[u32]) -> Vec<(u32, u32, ChangeKind)> {
    let mut by_context: HashMap<u64, Vec<u32>> = HashMap::default();
    let mut by_value: HashMap<&str, Vec<u32>> = HashMap::default();
    for &i in ra {
        by_context
            .entry(p.a.context_hash(p.a.leaf(i)))
            .or_default()
            .push(i);
        if movable(&p.a, i) {
            by_value.entry(p.a.leaf_text(i)).or_default().push(i);
        }
    }
    let mut candidates = Vec::new();
    let mut seen = FxHashSet::default();
    for &j in rb {
        seen.clear();
        let ctx = by_context
            .get(&p.b.context_hash(p.b.leaf(j)))
            .into_iter()
            .flatten();
        let val = if movable(&p.b, j) {
            by_value.get(p.b.leaf_text(j))
        } else {
            None
        };
        for &i in ctx.chain(val.into_iter().flatten()) {
            if !seen.insert(i) {
                continue;
            }
            if let Some(kind) = p.acceptable(i, j) {
                candidates.push((p.rank(i, j, kind), i, j, kind));
            }
        }
    }
    greedy(candidates, p.a.branches.len(), p.b.branches.len())
}

/// The paper's all-pairs search (quadratic): every old branch against every
/// new one.
fn pair_all(p: &Pair<'_>, ra: &[u32], rb: &[u32]) -> Vec<(u32, u32, ChangeKind)> {
    let mut candidates = Vec::new();
    for &j in rb {
        for &i in ra {
            if let Some(kind) = p.acceptable(i, j) {
                candidates.push((p.rank(i, j, kind), i, j, kind));
            }
        }
    }
    greedy(candidates, p.a.branches.len(), p.b.branches.len())
}

fn greedy(
    mut candidates: Vec<(Rank, u32, u32, ChangeKind)>,
    old_count: usize,
    new_count: usize,
) -> Vec<(u32, u32, ChangeKind)> {
    candidates.sort_by(|x, y| x.0.partial_cmp(&y.0).unwrap_or(std::cmp::Ordering::Equal));
    let mut used_old = vec![false; old_count];
    let mut used_new = vec![false; new_count];
    let mut out = Vec::new();
    for (_, i, j, kind) in candidates {
        if used_old[i as usize] || used_new[j as usize] {
            continue;
        }
        used_old[i as usize] = true;
        used_new[j as usize] = true;
        out.push((i, j, kind));
    }
    out.sort_by_key(|&(i, j, _)| (j, i));
    out
}

fn pair_change(p: &Pair<'_>, oi: u32, ni: u32, kind: ChangeKind) -> Change {
    let (o, n) = (p.a.leaf(oi), p.b.leaf(ni));
    let numeric = kind == ChangeKind::Update && o.num.is_some() && n.num.is_some();
    let (old_num, new_num, delta) = match (o.num, n.num) {
        (Some(x), Some(y)) if numeric => {
            (Some(x.to_string()), Some(y.to_string()), decimal_sub(y, x))
        }
        _ => (None, None, None),
    };
    Change {
        kind,
        context: p.a.context(o.node),
        new_context: (kind == ChangeKind::Move).then(|| p.b.context(n.node)),
        old: Some(p.a.leaf_text(oi).to_string()),
        new: Some(p.b.leaf_text(ni).to_string()),
        old_xpath: Some(p.a.id(o.hnode)),
        new_xpath: Some(p.b.id(n.hnode)),
        old_num,
        new_num,
        delta,
        size: None,
        record: record::of(&p.b, n.hnode),
    }
}

/// `y - x` for canonical decimal strings, exactly.
pub fn decimal_sub(y: &str, x: &str) -> Option<String> {
    let scale = |s: &str| s.split_once('.').map_or(0, |(_, f)| f.len());
    let s = scale(x).max(scale(y));
    let to_int = |v: &str| -> Option<i128> {
        let neg = v.starts_with('-');
        let v = v.trim_start_matches('-');
        let (i, f) = v.split_once('.').unwrap_or((v, ""));
        let digits = format!("{i}{f}{}", "0".repeat(s - f.len()));
        let n: i128 = digits.parse().ok()?;
        Some(if neg { -n } else { n })
    };
    let d = to_int(y)?.checked_sub(to_int(x)?)?;
    let neg = d < 0;
    let mut digits = d.unsigned_abs().to_string();
    if digits.len() <= s {
        digits = format!("{}{digits}", "0".repeat(s + 1 - digits.len()));
    }
    let (int, frac) = digits.split_at(digits.len() - s);
    let frac = frac.trim_end_matches('0');
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    out.push_str(int);
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    Some(out)
}

/// Labels joined as a path: `Shares / GAZP / Last`.
fn label_path(labels: &[String]) -> String {
    labels
        .iter()
        .filter(|l| !l.is_empty())
        .cloned()
        .collect::<Vec<_>>()
        .join(" / ")
}

/// How many labels, counted from the value up, a line shown to people
/// keeps: the table (or section) label, the row key and the column.
pub const DISPLAY_LABELS: usize = 3;

/// Longest label, in characters, shown in a line for people; longer ones
/// are cut at a word ([`short_label`]).
pub const DISPLAY_LABEL_CHARS: usize = 40;

/// The short context people read (change lines, alert titles, chat
/// messages, status rows): the last [`DISPLAY_LABELS`] non-empty labels,
/// each cut to [`DISPLAY_LABEL_CHARS`]: `Largest cities / Auckland /
/// Pop.`. The whole path stays in the data (a change's `context`, ids,
/// the API and webhooks): a page title and five headings above a value
/// are where it is, not what it is, and repeating them made every line
/// hundreds of characters long.
pub fn display_context<'a>(labels: impl IntoIterator<Item = &'a str>) -> String {
    let mut labels: Vec<&str> = labels.into_iter().filter(|l| !l.is_empty()).collect();
    // A label repeated down the path (a page, its heading and its infobox
    // all named "New Zealand") says nothing the second time.
    labels.dedup();
    let from = labels.len().saturating_sub(DISPLAY_LABELS);
    labels[from..]
        .iter()
        .map(|l| short_label(l, DISPLAY_LABEL_CHARS))
        .collect::<Vec<_>>()
        .join(" / ")
}

/// [`display_context`] of a context already joined by ` / ` (a
/// threshold's).
pub fn display_context_joined(context: &str) -> String {
    display_context(context.split(" / "))
}

impl Change {
    /// The change as one line in data terms, the one rendering every text
    /// output uses (`semclip diff`, `semclip check`, alerts, feeds): its
    /// kind padded to one width, then [`Change::line_without_kind`]:
    /// `update  Shares / GAZP / Last: 251.30 -> 253.10 (+1.8)`.
    pub fn line(&self) -> String {
        format!("{:<7} {}", self.kind.name(), self.line_without_kind())
    }

    /// The change as one line without its kind, for views that show the
    /// kind apart (status pages, the API's `line`):
    /// `Shares / GAZP / Last: 251.30 -> 253.10 (+1.8)`.
    pub fn line_without_kind(&self) -> String {
        let c = self;
        let ctx = display_context(c.context.iter().map(String::as_str));
        let at = if ctx.is_empty() {
            String::new()
        } else {
            format!("{ctx}: ")
        };
        let size = c
            .size
            .map(|n| match n {
                0 => " (label only)".to_string(),
                1 => " (1 value)".to_string(),
                n => format!(" ({n} values)"),
            })
            .unwrap_or_default();
        match c.kind {
            ChangeKind::Update => {
                let delta = c.delta_suffix();
                let places = match c.size {
                    Some(n) if n > 1 => format!(" (column header, {n} rows)"),
                    _ => String::new(),
                };
                format!(
                    "{at}{} -> {}{delta}{places}",
                    c.old.as_deref().unwrap_or(""),
                    c.new.as_deref().unwrap_or("")
                )
            }
            ChangeKind::Insert => format!("{at}{}{size}", c.new.as_deref().unwrap_or("")),
            ChangeKind::Delete => format!("{at}{}{size}", c.old.as_deref().unwrap_or("")),
            ChangeKind::Move => {
                let from = display_context(c.context.iter().map(String::as_str));
                let to = display_context(c.new_context.iter().flatten().map(String::as_str));
                // Short contexts that read alike would hide the move.
                let (from, to) = if from == to {
                    (
                        label_path(&c.context),
                        label_path(c.new_context.as_deref().unwrap_or_default()),
                    )
                } else {
                    (from, to)
                };
                format!("{from} -> {to}: {}", c.old.as_deref().unwrap_or(""))
            }
        }
    }

    /// A numeric update's difference as a line shows it, signed and in
    /// parentheses (` (+1.8)`, ` (-3)`); empty without one.
    pub fn delta_suffix(&self) -> String {
        match self.delta.as_deref() {
            Some(d) if d.starts_with('-') => format!(" ({d})"),
            Some(d) => format!(" (+{d})"),
            None => String::new(),
        }
    }

    /// Its context as a path of labels: `Market / GAZP` (empty labels left
    /// out).
    pub fn context_path(&self) -> String {
        label_path(&self.context)
    }

    /// Whether the change touches one of the hierarchy nodes `ids` (by
    /// `xpath` id) or what is inside them; `/page` holds everything.
    pub fn touches(&self, ids: &[String]) -> bool {
        [&self.old_xpath, &self.new_xpath]
            .into_iter()
            .flatten()
            .any(|x| {
                ids.iter().any(|id| {
                    id == "/page"
                        || x == id
                        || x.strip_prefix(id.as_str())
                            .is_some_and(|r| r.starts_with('/'))
                })
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(t: &str) -> (&str, u32) {
        (t, 1)
    }

    #[test]
    fn delta_weighs_by_depth() {
        let book_war = [l("BookTitle"), l("War and Peace")];
        let book_souls = [l("BookTitle"), l("Dead Souls")];
        let film = [l("FilmTitle"), l("Spring on Zarechnaya Street")];
        assert!(delta(&book_souls, &book_war) < delta(&film, &book_war));
        assert_eq!(delta(&book_war, &book_war), 0.0);
        assert!((delta(&book_souls, &book_war) - 0.5).abs() < 1e-12);
        // Order matters: the same labels in another order differ.
        assert!(delta(&[l("a"), l("b")], &[l("b"), l("a")]) > 0.0);
    }

    fn change(kind: ChangeKind, context: &[&str]) -> Change {
        Change {
            kind,
            context: context.iter().map(|s| (*s).to_owned()).collect(),
            new_context: None,
            old: None,
            new: None,
            old_xpath: None,
            new_xpath: None,
            old_num: None,
            new_num: None,
            delta: None,
            size: None,
            record: None,
        }
    }

    #[test]
    fn a_change_reads_as_one_line_with_and_without_its_kind() {
        let mut c = change(ChangeKind::Update, &["Market", "", "GAZP"]);
        c.old = Some("251,30".to_owned());
        c.new = Some("268,40".to_owned());
        c.delta = Some("17.1".to_owned());
        assert_eq!(c.line(), "update  Market / GAZP: 251,30 -> 268,40 (+17.1)");
        assert_eq!(
            c.line_without_kind(),
            "Market / GAZP: 251,30 -> 268,40 (+17.1)"
        );
        c.delta = Some("-0.5".to_owned());
        c.size = Some(3);
        assert_eq!(
            c.line_without_kind(),
            "Market / GAZP: 251,30 -> 268,40 (-0.5) (column header, 3 rows)"
        );

        let mut c = change(ChangeKind::Delete, &["News"]);
        c.old = Some("Oil up".to_owned());
        assert_eq!(c.line(), "delete  News: Oil up");
        c.size = Some(2);
        assert_eq!(c.line_without_kind(), "News: Oil up (2 values)");

        let mut c = change(ChangeKind::Insert, &[]);
        c.new = Some("Gold".to_owned());
        c.size = Some(0);
        assert_eq!(c.line(), "insert  Gold (label only)");
        assert_eq!(c.line_without_kind(), "Gold (label only)");

        let mut c = change(ChangeKind::Move, &["Top"]);
        c.new_context = Some(vec!["Bottom".to_owned()]);
        c.old = Some("Oil".to_owned());
        c.new = Some("Oil".to_owned());
        assert_eq!(c.line(), "move    Top -> Bottom: Oil");
        assert_eq!(c.line_without_kind(), "Top -> Bottom: Oil");
    }

    #[test]
    fn a_change_touches_the_node_and_what_is_inside() {
        let ids = vec!["/page/table[1]/row[@key='GAZP']".to_owned()];
        let mut inside = change(ChangeKind::Update, &[]);
        inside.new_xpath = Some("/page/table[1]/row[@key='GAZP']/cell[@col='Last']".to_owned());
        let mut same = change(ChangeKind::Delete, &[]);
        same.old_xpath = Some("/page/table[1]/row[@key='GAZP']".to_owned());
        let mut other = change(ChangeKind::Insert, &[]);
        other.new_xpath = Some("/page/table[1]/row[@key='GAZPX']".to_owned());
        assert!(inside.touches(&ids));
        assert!(same.touches(&ids));
        assert!(!other.touches(&ids));
        assert!(other.touches(&["/page".to_owned()]));
        assert!(!change(ChangeKind::Update, &[]).touches(&["/page".to_owned()]));
    }

    #[test]
    fn exact_decimal_difference() {
        assert_eq!(decimal_sub("50", "40").as_deref(), Some("10"));
        assert_eq!(decimal_sub("253.1", "251.3").as_deref(), Some("1.8"));
        assert_eq!(decimal_sub("0.002", "0.003").as_deref(), Some("-0.001"));
        assert_eq!(decimal_sub("1", "1.5").as_deref(), Some("-0.5"));
    }
}
