//! Semantic diff: two hierarchies in, the changes of their *data* out
//! (ALGORITHMS.md §2, seed 000).
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

use std::collections::{BTreeMap, HashSet};
use std::hash::{Hash, Hasher};
use std::rc::Rc;

// Fx hashing (rustc's hasher): the keys here are our own labels and
// 64-bit prefix hashes, not attacker-chosen, and SipHash dominated the
// profile.
use rustc_hash::{FxHashMap as HashMap, FxHashSet, FxHasher};

use serde::Serialize;

use crate::hierarchy::{HNode, Hierarchy, Kind};

/// One label of a branch: the text and its ordinal among equal siblings.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Label {
    /// The label text (a heading, key, column header or value), shared
    /// between the branches that pass through it.
    pub text: Rc<str>,
    /// 1-based ordinal among siblings with the same text.
    pub ordinal: u32,
}

/// A root-to-leaf path of labels, with what the leaf's node says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Branch {
    /// Labels from the root (the page title) down to the leaf value.
    pub labels: Vec<Label>,
    /// `xpath` of the node holding the leaf value.
    pub xpath: String,
    /// `xpath` ids of the nodes behind each label (same length as `labels`;
    /// empty for the root, which is `/page`).
    pub ids: Vec<Rc<str>>,
    /// Hash of each prefix `labels[..=d]`, computed incrementally: prefixes
    /// are compared and indexed by these (64-bit; a collision among the
    /// branches of two pages is vanishingly unlikely).
    pub prefix: Vec<u64>,
    /// The leaf's `num`, if it reads as a number.
    pub num: Option<String>,
    /// True when the leaf is a table cell value.
    pub cell: bool,
    /// Position among the branches of its context (document order).
    pub position: usize,
}

impl Branch {
    /// The context: every label but the leaf.
    pub fn context(&self) -> &[Label] {
        &self.labels[..self.labels.len().saturating_sub(1)]
    }

    /// The leaf label.
    pub fn leaf(&self) -> &Label {
        // Branches always hold at least the root and a leaf.
        &self.labels[self.labels.len() - 1]
    }

    /// The labels' texts, for reports.
    pub fn texts(&self) -> Vec<String> {
        self.labels.iter().map(|l| l.text.to_string()).collect()
    }

    /// Recomputes [`Branch::prefix`] after labels changed.
    fn rehash(&mut self) {
        let mut h = 0u64;
        self.prefix.clear();
        for l in &self.labels {
            h = step_hash(h, l);
            self.prefix.push(h);
        }
    }
}

/// The hash of a prefix extended by one label.
fn step_hash(parent: u64, label: &Label) -> u64 {
    let mut h = FxHasher::default();
    parent.hash(&mut h);
    label.text.hash(&mut h);
    label.ordinal.hash(&mut h);
    h.finish()
}

/// Every branch of `h`, in document order. `ignored` holds `xpath` ids of
/// nodes whose subtrees are left out (a watch's `ignore` list, resolved).
pub fn branches(h: &Hierarchy, ignored: &HashSet<String>) -> Vec<Branch> {
    let mut out = Vec::new();
    let root = Label {
        text: Rc::from(h.title.as_deref().unwrap_or_default()),
        ordinal: 1,
    };
    let mut path = vec![root];
    let mut ids: Vec<Rc<str>> = vec![Rc::from("/page")];
    walk(&h.children, &mut path, &mut ids, ignored, &mut out);
    // Prefix hashes, then positions: document order within each context.
    let mut counters: HashMap<u64, usize> = HashMap::default();
    for b in &mut out {
        b.rehash();
        let parent = b.prefix.len().checked_sub(2).map_or(0, |i| b.prefix[i]);
        let c = counters.entry(parent).or_default();
        b.position = *c;
        *c += 1;
    }
    out
}

/// The labels a node contributes (outermost first) and whether it is a leaf
/// value. A cell contributes its column header, then its value or label.
fn node_labels(n: &HNode) -> Vec<&str> {
    let mut v = Vec::new();
    match n.kind {
        Kind::Row => v.extend(n.key.as_deref()),
        Kind::Cell => {
            v.extend(n.col.as_deref());
            v.extend(n.label.as_deref());
        }
        Kind::Keywords | Kind::Address => {
            v.push(n.kind.name());
            v.extend(n.label.as_deref());
        }
        _ => v.extend(n.label.as_deref()),
    }
    if n.children.is_empty() {
        v.extend(n.text.as_deref());
        if let Some(href) = n.attr("href") {
            v.push(href);
        }
    }
    v
}

fn walk(
    nodes: &[HNode],
    path: &mut Vec<Label>,
    ids: &mut Vec<Rc<str>>,
    ignored: &HashSet<String>,
    out: &mut Vec<Branch>,
) {
    walk_siblings(nodes, path, ids, ignored, out, &mut HashMap::default());
}

/// Walks `nodes` as siblings of one label-tree node. Nodes without a label
/// of their own (`list`, a caption-less `table`, a key-less `row`) are
/// transparent: their children join these siblings and share `seen`, so
/// ordinals count across them.
fn walk_siblings<'n>(
    nodes: &'n [HNode],
    path: &mut Vec<Label>,
    ids: &mut Vec<Rc<str>>,
    ignored: &HashSet<String>,
    out: &mut Vec<Branch>,
    seen: &mut HashMap<&'n str, u32>,
) {
    for n in nodes {
        if ignored.contains(&n.xpath) {
            continue;
        }
        let labels = node_labels(n);
        if labels.is_empty() {
            walk_siblings(&n.children, path, ids, ignored, out, seen);
            continue;
        }
        let depth = path.len();
        let id: Rc<str> = Rc::from(n.xpath.as_str());
        for (i, text) in labels.iter().enumerate() {
            let ordinal = if i == 0 {
                let o = seen.entry(text).or_default();
                *o += 1;
                *o
            } else {
                1
            };
            path.push(Label {
                text: Rc::from(*text),
                ordinal,
            });
            ids.push(id.clone());
        }
        if n.children.is_empty() {
            out.push(Branch {
                labels: path.clone(),
                xpath: n.xpath.clone(),
                ids: ids.clone(),
                prefix: Vec::new(),
                num: n.num.clone(),
                cell: n.kind == Kind::Cell,
                position: 0,
            });
        } else {
            walk(&n.children, path, ids, ignored, out);
        }
        path.truncate(depth);
        ids.truncate(depth);
    }
}

/// What kind of change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
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

/// One semantic change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
    /// link, a section): how many values it held.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<usize>,
}

/// The weighted difference δ of two branches (§2): labels missing from the
/// longest common subsequence, each weighing 2^-i at its 1-based position i
/// in its own branch.
pub fn delta(a: &[Label], b: &[Label]) -> f64 {
    let (n, m) = (a.len(), b.len());
    // LCS table (branches are short: depth is capped at 100).
    let mut t = vec![vec![0u16; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            t[i][j] = if a[i] == b[j] {
                t[i + 1][j + 1] + 1
            } else {
                t[i + 1][j].max(t[i][j + 1])
            };
        }
    }
    // Walk one LCS, summing the weights of what it leaves out.
    let (mut i, mut j, mut d) = (0, 0, 0.0);
    while i < n && j < m {
        if a[i] == b[j] {
            i += 1;
            j += 1;
        } else if t[i + 1][j] >= t[i][j + 1] {
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

fn common_prefix(a: &[Label], b: &[Label]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Similarity of two leaf texts in [0, 1]: shared prefix and suffix
/// relative to the longer text (cheap, and enough to pair an edited value
/// with its old self rather than with a neighbour).
fn text_similarity(a: &str, b: &str) -> f64 {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let longest = a.len().max(b.len());
    if longest == 0 {
        return 1.0;
    }
    let pre = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suf = a[pre..]
        .iter()
        .rev()
        .zip(b[pre..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    (pre + suf) as f64 / longest as f64
}

/// A value of enough substance to be recognised when it moves: not a
/// number and not a short token such as `—` or `yes`.
fn movable(b: &Branch) -> bool {
    let t = &b.leaf().text;
    !b.cell && b.num.is_none() && (t.chars().count() >= 12 || t.split_whitespace().count() >= 2)
}

/// How a candidate pair ranks: smaller is better.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
struct Rank {
    delta: f64,
    neg_prefix: i64,
    neg_similarity: f64,
    distance: usize,
    new_index: usize,
    old_index: usize,
}

fn rank(old: &Branch, new: &Branch, oi: usize, ni: usize) -> Rank {
    Rank {
        delta: delta(&old.labels, &new.labels),
        neg_prefix: -(common_prefix(&old.labels, &new.labels) as i64),
        neg_similarity: -text_similarity(&old.leaf().text, &new.leaf().text),
        distance: old.position.abs_diff(new.position),
        new_index: ni,
        old_index: oi,
    }
}

/// Whether a pair may be matched, and as what.
fn acceptable(old: &Branch, new: &Branch) -> Option<ChangeKind> {
    if old.labels.len() == new.labels.len() && old.context() == new.context() {
        Some(ChangeKind::Update)
    } else if old.leaf().text == new.leaf().text && movable(old) && movable(new) {
        Some(ChangeKind::Move)
    } else {
        None
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
    let a = branches(old, old_ignored);
    let b = branches(new, new_ignored);
    compare(a, b, Matcher::Indexed)
}

/// The same result by the all-pairs search of the paper (a test oracle).
pub fn diff_naive(old: &Hierarchy, new: &Hierarchy) -> Vec<Change> {
    compare(
        branches(old, &HashSet::new()),
        branches(new, &HashSet::new()),
        Matcher::AllPairs,
    )
}

#[derive(Clone, Copy)]
enum Matcher {
    Indexed,
    AllPairs,
}

fn compare(mut a: Vec<Branch>, b: Vec<Branch>, matcher: Matcher) -> Vec<Change> {
    let mut changes = Vec::new();
    // 1. Branches present in both are no change.
    let (mut ra, mut rb) = remaining(&a, &b);
    // 2. Renamed intermediate nodes.
    let renames = renames(&a, &b, &ra, &rb);
    if !renames.is_empty() {
        for r in &renames {
            changes.push(r.change.clone());
            for i in &ra {
                let br = &mut a[*i];
                if br.labels.len() > r.depth
                    && br.labels[..r.depth] == r.old_prefix[..]
                    && br.labels[r.depth] == r.old
                {
                    br.labels[r.depth] = r.new.clone();
                    br.rehash();
                }
            }
        }
        let (ra2, rb2) = remaining(&a, &b);
        ra = ra2;
        rb = rb2;
    }
    // 3. Pairing.
    let pairs = match matcher {
        Matcher::Indexed => pair_indexed(&a, &b, &ra, &rb),
        Matcher::AllPairs => pair_all(&a, &b, &ra, &rb),
    };
    let matched_old: FxHashSet<usize> = pairs.iter().map(|p| p.0).collect();
    let matched_new: FxHashSet<usize> = pairs.iter().map(|p| p.1).collect();
    for (oi, ni, kind) in &pairs {
        changes.push(pair_change(&a[*oi], &b[*ni], *kind));
    }
    let gone: Vec<usize> = ra
        .iter()
        .copied()
        .filter(|i| !matched_old.contains(i))
        .collect();
    let born: Vec<usize> = rb
        .iter()
        .copied()
        .filter(|i| !matched_new.contains(i))
        .collect();
    changes.extend(whole_nodes(&a, &b, &gone, ChangeKind::Delete));
    changes.extend(whole_nodes(&b, &a, &born, ChangeKind::Insert));
    changes
}

/// Deletions (or insertions) reported per node: branches `unmatched` of
/// `tree` are grouped under their topmost node that `other` lacks and
/// whose branches are all unmatched, so a removed row or item is one change
/// (`old`/`new` its label, `size` its number of values).
fn whole_nodes(
    tree: &[Branch],
    other: &[Branch],
    unmatched: &[usize],
    kind: ChangeKind,
) -> Vec<Change> {
    let other_prefixes: FxHashSet<u64> = other
        .iter()
        .flat_map(|b| b.prefix.iter().copied())
        .collect();
    let unmatched_set: FxHashSet<usize> = unmatched.iter().copied().collect();
    // Branch count per prefix in `tree`, to know when a node is wholly unmatched.
    let mut total: HashMap<u64, usize> = HashMap::default();
    for b in tree {
        for &p in &b.prefix {
            *total.entry(p).or_default() += 1;
        }
    }
    let mut groups: Vec<(u64, usize, Vec<usize>)> = Vec::new();
    let mut index: HashMap<u64, usize> = HashMap::default();
    for &i in unmatched {
        let b = &tree[i];
        let depth = (1..=b.labels.len())
            .find(|&d| !other_prefixes.contains(&b.prefix[d - 1]))
            .unwrap_or(b.labels.len());
        let prefix = b.prefix[depth - 1];
        match index.get(&prefix) {
            Some(&g) => groups[g].2.push(i),
            None => {
                index.insert(prefix, groups.len());
                groups.push((prefix, depth, vec![i]));
            }
        }
    }
    let mut out = Vec::new();
    for (prefix, depth, members) in groups {
        let whole = members.iter().all(|&m| depth < tree[m].labels.len())
            && total.get(&prefix).copied() == Some(members.len())
            && members.iter().all(|m| unmatched_set.contains(m));
        let items: Vec<(usize, usize)> = if whole {
            vec![(members[0], depth)]
        } else {
            members.iter().map(|&m| (m, tree[m].labels.len())).collect()
        };
        for (m, d) in items {
            let b = &tree[m];
            let value = b.labels[d - 1].text.to_string();
            let xpath = b
                .ids
                .get(d - 1)
                .map_or_else(|| b.xpath.clone(), |x| x.to_string());
            let (old, new, old_xpath, new_xpath) = match kind {
                ChangeKind::Delete => (Some(value), None, Some(xpath), None),
                _ => (None, Some(value), None, Some(xpath)),
            };
            out.push(Change {
                kind,
                context: texts(&b.labels[..d - 1]),
                new_context: None,
                old,
                new,
                old_xpath,
                new_xpath,
                old_num: None,
                new_num: None,
                delta: None,
                size: whole.then_some(members.len()),
            });
        }
    }
    out
}

fn texts(labels: &[Label]) -> Vec<String> {
    labels.iter().map(|l| l.text.to_string()).collect()
}

/// Indexes (into `a`, `b`) of the branches not present in the other tree.
fn remaining(a: &[Branch], b: &[Branch]) -> (Vec<usize>, Vec<usize>) {
    let leaf = |x: &Branch| x.prefix.last().copied().unwrap_or_default();
    let in_b: FxHashSet<u64> = b.iter().map(leaf).collect();
    let in_a: FxHashSet<u64> = a.iter().map(leaf).collect();
    let ra = (0..a.len())
        .filter(|&i| !in_b.contains(&leaf(&a[i])))
        .collect();
    let rb = (0..b.len())
        .filter(|&i| !in_a.contains(&leaf(&b[i])))
        .collect();
    (ra, rb)
}

/// An intermediate node: its parent's labels and its own label.
type NodeKey = (Vec<Label>, Label);
/// The label suffixes below a node, and one branch index reaching it.
type Subtree = (Vec<Vec<Label>>, usize);

struct Rename {
    depth: usize,
    old_prefix: Vec<Label>,
    old: Label,
    new: Label,
    change: Change,
}

/// Intermediate nodes whose label changed while what they own stayed: an
/// old node (prefix) absent from the new tree and a new node under the same
/// parent absent from the old one, sharing at least half of their subtrees'
/// relative branches.
fn renames(a: &[Branch], b: &[Branch], ra: &[usize], rb: &[usize]) -> Vec<Rename> {
    // Prefixes (parent, label) of intermediate nodes that exist in only one tree.
    fn prefixes(set: &[Branch]) -> FxHashSet<u64> {
        set.iter()
            .flat_map(|b| b.prefix[..b.prefix.len().saturating_sub(1)].iter().copied())
            .collect()
    }
    let pa = prefixes(a);
    let pb = prefixes(b);
    // Suffix sets of gone / new nodes, grouped by parent.
    let mut gone: BTreeMap<NodeKey, Subtree> = BTreeMap::new();
    let mut born: BTreeMap<NodeKey, Subtree> = BTreeMap::new();
    for &i in ra {
        let br = &a[i];
        for d in 0..br.labels.len().saturating_sub(1) {
            if !pb.contains(&br.prefix[d]) {
                let e = gone
                    .entry((br.labels[..d].to_vec(), br.labels[d].clone()))
                    .or_insert((Vec::new(), i));
                e.0.push(br.labels[d + 1..].to_vec());
                break;
            }
        }
    }
    for &i in rb {
        let br = &b[i];
        for d in 0..br.labels.len().saturating_sub(1) {
            if !pa.contains(&br.prefix[d]) {
                let e = born
                    .entry((br.labels[..d].to_vec(), br.labels[d].clone()))
                    .or_insert((Vec::new(), i));
                e.0.push(br.labels[d + 1..].to_vec());
                break;
            }
        }
    }
    let mut out = Vec::new();
    let mut used_new: HashSet<(Vec<Label>, Label)> = HashSet::new();
    for ((parent, old_label), (old_suffixes, oi)) in &gone {
        let old_set: HashSet<&Vec<Label>> = old_suffixes.iter().collect();
        let mut best: Option<(f64, &NodeKey, usize)> = None;
        for (key, (new_suffixes, ni)) in born.range(
            (
                parent.clone(),
                Label {
                    text: Rc::from(""),
                    ordinal: 0,
                },
            )..,
        ) {
            if &key.0 != parent {
                break;
            }
            if used_new.contains(key) {
                continue;
            }
            let new_set: HashSet<&Vec<Label>> = new_suffixes.iter().collect();
            let shared = old_set.intersection(&new_set).count();
            let jaccard = shared as f64 / (old_set.len() + new_set.len() - shared).max(1) as f64;
            if jaccard >= 0.5 && best.is_none_or(|(j, _, _)| jaccard > j) {
                best = Some((jaccard, key, *ni));
            }
        }
        if let Some((_, key, ni)) = best {
            used_new.insert(key.clone());
            let depth = parent.len();
            let (ob, nb) = (&a[*oi], &b[ni]);
            out.push(Rename {
                depth,
                old_prefix: parent.clone(),
                old: old_label.clone(),
                new: key.1.clone(),
                change: Change {
                    kind: ChangeKind::Update,
                    context: texts(parent),
                    new_context: None,
                    old: Some(old_label.text.to_string()),
                    new: Some(key.1.text.to_string()),
                    old_xpath: ob.ids.get(depth).map(|x| x.to_string()),
                    new_xpath: nb.ids.get(depth).map(|x| x.to_string()),
                    old_num: None,
                    new_num: None,
                    delta: None,
                    size: None,
                },
            });
        }
    }
    out
}

/// Greedy one-to-one pairing, best rank first, over the candidates the two
/// indexes give (same context, same movable value).
fn pair_indexed(
    a: &[Branch],
    b: &[Branch],
    ra: &[usize],
    rb: &[usize],
) -> Vec<(usize, usize, ChangeKind)> {
    let parent = |b: &Branch| b.prefix.len().checked_sub(2).map_or(0, |i| b.prefix[i]);
    let mut by_context: HashMap<u64, Vec<usize>> = HashMap::default();
    let mut by_value: HashMap<&str, Vec<usize>> = HashMap::default();
    for &i in ra {
        by_context.entry(parent(&a[i])).or_default().push(i);
        if movable(&a[i]) {
            by_value.entry(&*a[i].leaf().text).or_default().push(i);
        }
    }
    let mut candidates = Vec::new();
    for &j in rb {
        let nb = &b[j];
        let mut seen = HashSet::new();
        let ctx = by_context.get(&parent(nb)).into_iter().flatten();
        let val = if movable(nb) {
            by_value.get(&*nb.leaf().text)
        } else {
            None
        };
        for &i in ctx.chain(val.into_iter().flatten()) {
            if !seen.insert(i) {
                continue;
            }
            if let Some(kind) = acceptable(&a[i], nb) {
                candidates.push((rank(&a[i], nb, i, j), i, j, kind));
            }
        }
    }
    greedy(candidates)
}

/// The paper's all-pairs search (quadratic): every old branch against every
/// new one.
fn pair_all(
    a: &[Branch],
    b: &[Branch],
    ra: &[usize],
    rb: &[usize],
) -> Vec<(usize, usize, ChangeKind)> {
    let mut candidates = Vec::new();
    for &j in rb {
        for &i in ra {
            if let Some(kind) = acceptable(&a[i], &b[j]) {
                candidates.push((rank(&a[i], &b[j], i, j), i, j, kind));
            }
        }
    }
    greedy(candidates)
}

fn greedy(
    mut candidates: Vec<(Rank, usize, usize, ChangeKind)>,
) -> Vec<(usize, usize, ChangeKind)> {
    candidates.sort_by(|x, y| x.0.partial_cmp(&y.0).unwrap_or(std::cmp::Ordering::Equal));
    let mut used_old = HashSet::new();
    let mut used_new = HashSet::new();
    let mut out = Vec::new();
    for (_, i, j, kind) in candidates {
        if used_old.contains(&i) || used_new.contains(&j) {
            continue;
        }
        used_old.insert(i);
        used_new.insert(j);
        out.push((i, j, kind));
    }
    out.sort_by_key(|&(i, j, _)| (j, i));
    out
}

fn pair_change(o: &Branch, n: &Branch, kind: ChangeKind) -> Change {
    let numeric = kind == ChangeKind::Update && o.num.is_some() && n.num.is_some();
    Change {
        kind,
        context: texts(o.context()),
        new_context: (kind == ChangeKind::Move).then(|| texts(n.context())),
        old: Some(o.leaf().text.to_string()),
        new: Some(n.leaf().text.to_string()),
        old_xpath: Some(o.xpath.clone()),
        new_xpath: Some(n.xpath.clone()),
        old_num: if numeric { o.num.clone() } else { None },
        new_num: if numeric { n.num.clone() } else { None },
        delta: if numeric {
            match (&o.num, &n.num) {
                (Some(x), Some(y)) => decimal_sub(y, x),
                _ => None,
            }
        } else {
            None
        },
        size: None,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn l(t: &str) -> Label {
        Label {
            text: t.into(),
            ordinal: 1,
        }
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

    #[test]
    fn exact_decimal_difference() {
        assert_eq!(decimal_sub("50", "40").as_deref(), Some("10"));
        assert_eq!(decimal_sub("253.1", "251.3").as_deref(), Some("1.8"));
        assert_eq!(decimal_sub("0.002", "0.003").as_deref(), Some("-0.001"));
        assert_eq!(decimal_sub("1", "1.5").as_deref(), Some("-0.5"));
    }
}
