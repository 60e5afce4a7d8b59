//! Labelled ordered trees and the exact tree edit distance (Zhang–Shasha),
//! the oracle that RTDM ([`super::rtdm`]) is checked against.
//!
//! Takes: a tree in APTED bracket notation (`{a{b}{c}}`), a
//! [`PageTree`] (labels are tag names, text leaves `#text` or a hash of
//! their text), or a pre-order list of `(label, depth)`. Gives: [`LTree`],
//! a compact pre-order tree of interned `u32` labels with subtree ends
//! (a subtree is the contiguous run `i..end(i)`), and [`ted`], the exact
//! edit distance under a [`CostModel`] (delete, insert, rename).
//!
//! Zhang and Shasha (1989) run in O(n1·n2·min(depth, leaves)²) time and
//! O(n1·n2) memory: fine for trees of a few thousand nodes, far too slow
//! for whole pages compared pairwise, which is why templates use RTDM.
//! Here it is the reference: the unit tests assert the exact distances of
//! the public APTED correctness cases (`tests/data/apted/`).

use rustc_hash::FxHashMap;

use crate::page::dom::{Dom, NodeData};
use crate::template::tree::{PageTree, TEXT};

/// An edit cost. Costs add with saturation, so [`INFINITE`] stays
/// infinite ("this edit is forbidden").
pub type Cost = u64;

/// The cost of a forbidden edit.
pub const INFINITE: Cost = Cost::MAX;

/// Interned labels: each distinct string gets a dense `u32` id, so trees
/// compare labels as integers. Trees compared with each other must share
/// one `Labels`.
#[derive(Debug, Clone, Default)]
pub struct Labels {
    ids: FxHashMap<String, u32>,
    names: Vec<String>,
}

impl Labels {
    /// An empty interner.
    pub fn new() -> Labels {
        Labels::default()
    }

    /// The id of `name`, added if new.
    pub fn intern(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.ids.insert(name.to_owned(), id);
        self.names.push(name.to_owned());
        id
    }

    /// The id of `name` if it was interned.
    pub fn get(&self, name: &str) -> Option<u32> {
        self.ids.get(name).copied()
    }

    /// The string of label `id`.
    pub fn name(&self, id: u32) -> Option<&str> {
        self.names.get(id as usize).map(String::as_str)
    }

    /// Number of distinct labels.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// True when no label was interned.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// Why a tree could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TreeError {
    /// The bracket string holds no tree.
    #[error("empty bracket tree")]
    Empty,
    /// A node must start with `{`.
    #[error("expected '{{' at byte {0}")]
    ExpectedOpen(usize),
    /// A `{` was never closed.
    #[error("unclosed '{{' opened at byte {0}")]
    Unclosed(usize),
    /// Something follows the root's closing `}`.
    #[error("text after the root's closing '}}' at byte {0}")]
    Trailing(usize),
    /// A backslash at the very end of the input.
    #[error("dangling escape at byte {0}")]
    DanglingEscape(usize),
    /// In a `(label, depth)` list: the first node is not at depth 0, a
    /// later one is, or a node is more than one level below its
    /// predecessor.
    #[error("node {index} has depth {depth}, which cannot follow the node before it")]
    BadDepth {
        /// Pre-order index of the offending node.
        index: usize,
        /// Its depth.
        depth: u32,
    },
    /// More nodes than a `u32` index can address.
    #[error("tree has more than {} nodes", u32::MAX - 1)]
    TooLarge,
}

/// How [`LTree::from_page`] labels text leaves.
#[derive(Debug, Clone, Copy)]
pub enum TextLabels<'a> {
    /// Every text leaf is `#text`: the structure only. Pages of one
    /// template then compare equal however their texts differ, which is
    /// what clustering and pattern matching need.
    Uniform,
    /// A text leaf is `#text:` plus a 64-bit hash of its text
    /// (whitespace-normalised), read from this DOM: equal texts get equal
    /// labels, so boilerplate text can be told from data.
    Content(&'a Dom),
}

const NO_PARENT: u32 = u32::MAX;

/// A labelled ordered tree stored in pre-order: node 0 is the root, the
/// subtree of `i` is `i..end(i)`, its first child (if any) is `i + 1`.
/// May be empty (no node).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LTree {
    labels: Vec<u32>,
    end: Vec<u32>,
    parent: Vec<u32>,
    depth: Vec<u32>,
}

impl LTree {
    /// Builds a tree from its nodes in pre-order as `(label, depth)`: the
    /// first node has depth 0 (the root, and the only node at depth 0),
    /// each next node is at most one level deeper than its predecessor.
    pub fn from_depths(nodes: impl IntoIterator<Item = (u32, u32)>) -> Result<LTree, TreeError> {
        let mut t = LTree::default();
        // Open ancestors of the next node, root first.
        let mut open: Vec<u32> = Vec::new();
        for (index, (label, depth)) in nodes.into_iter().enumerate() {
            if index >= (u32::MAX - 1) as usize {
                return Err(TreeError::TooLarge);
            }
            let ok = if index == 0 {
                depth == 0
            } else {
                depth >= 1 && depth as usize <= open.len()
            };
            if !ok {
                return Err(TreeError::BadDepth { index, depth });
            }
            while open.len() > depth as usize {
                if let Some(done) = open.pop() {
                    t.end[done as usize] = index as u32;
                }
            }
            t.labels.push(label);
            t.end.push(index as u32 + 1);
            t.parent.push(open.last().copied().unwrap_or(NO_PARENT));
            t.depth.push(depth);
            open.push(index as u32);
        }
        let len = t.labels.len() as u32;
        for i in open {
            t.end[i as usize] = len;
        }
        Ok(t)
    }

    /// Parses APTED bracket notation: a node is `{label children}`, e.g.
    /// `{a{b}{c{d}}}`. Inside a label `\{`, `\}` and `\\` stand for the
    /// characters themselves; any other character (spaces included) is
    /// part of the label. Whitespace around the whole tree is ignored.
    pub fn from_bracket(text: &str, labels: &mut Labels) -> Result<LTree, TreeError> {
        let lead = text.len() - text.trim_start().len();
        let s = text.trim_end().as_bytes();
        let mut pos = lead;
        if pos >= s.len() {
            return Err(TreeError::Empty);
        }
        let mut nodes: Vec<(u32, u32)> = Vec::new();
        // Byte offsets of the open `{`s.
        let mut open: Vec<usize> = Vec::new();
        let mut label: Vec<u8> = Vec::new();
        loop {
            // At a `{`: read the label.
            if s.get(pos) != Some(&b'{') {
                return Err(TreeError::ExpectedOpen(pos));
            }
            let depth = open.len() as u32;
            open.push(pos);
            pos += 1;
            label.clear();
            while let Some(&c) = s.get(pos) {
                match c {
                    b'{' | b'}' => break,
                    b'\\' => {
                        let Some(&next) = s.get(pos + 1) else {
                            return Err(TreeError::DanglingEscape(pos));
                        };
                        if matches!(next, b'{' | b'}' | b'\\') {
                            label.push(next);
                            pos += 2;
                        } else {
                            label.push(c);
                            pos += 1;
                        }
                    }
                    _ => {
                        label.push(c);
                        pos += 1;
                    }
                }
            }
            nodes.push((labels.intern(&String::from_utf8_lossy(&label)), depth));
            // Close as many nodes as there are `}`s, then expect a child.
            while s.get(pos) == Some(&b'}') {
                open.pop();
                pos += 1;
                if open.is_empty() {
                    if pos < s.len() {
                        return Err(TreeError::Trailing(pos));
                    }
                    return LTree::from_depths(nodes);
                }
            }
            if pos >= s.len() {
                let at = open.last().copied().unwrap_or(lead);
                return Err(TreeError::Unclosed(at));
            }
        }
    }

    /// The tree of a simplified page: labels are tag names; text leaves
    /// are labelled as `text` says.
    pub fn from_page(tree: &PageTree, labels: &mut Labels, text: TextLabels<'_>) -> LTree {
        let text_id = labels.intern(TEXT);
        let mut scratch = String::new();
        let nodes = tree.nodes.iter().map(|n| {
            let label = match text {
                TextLabels::Content(dom) if n.is_text() => match &dom.node(n.dom).data {
                    NodeData::Text(t) => {
                        scratch.clear();
                        scratch.push_str(TEXT);
                        scratch.push(':');
                        scratch.push_str(&text_hash_hex(t));
                        labels.intern(&scratch)
                    }
                    _ => text_id,
                },
                _ if n.is_text() => text_id,
                _ => labels.intern(&n.tag),
            };
            (label, n.depth)
        });
        // A PageTree is a well-formed pre-order tree (depths start at 0
        // and grow by at most one), so this cannot fail; fall back to an
        // empty tree rather than panic if that invariant ever broke.
        LTree::from_depths(nodes).unwrap_or_default()
    }

    /// The tree in bracket notation (labels escaped), the inverse of
    /// [`LTree::from_bracket`]. Empty string for an empty tree.
    pub fn to_bracket(&self, labels: &Labels) -> String {
        let mut out = String::new();
        let mut open: Vec<usize> = Vec::new();
        for i in 0..self.len() {
            while let Some(&top) = open.last() {
                if i >= self.end(top) {
                    out.push('}');
                    open.pop();
                } else {
                    break;
                }
            }
            out.push('{');
            for c in labels.name(self.labels[i]).unwrap_or("").chars() {
                if matches!(c, '{' | '}' | '\\') {
                    out.push('\\');
                }
                out.push(c);
            }
            open.push(i);
        }
        for _ in open {
            out.push('}');
        }
        out
    }

    /// The subtree rooted at `i` as a tree of its own.
    pub fn subtree(&self, i: usize) -> LTree {
        if i >= self.len() {
            return LTree::default();
        }
        let base = self.depth[i];
        let nodes = (i..self.end(i)).map(|k| (self.labels[k], self.depth[k] - base));
        LTree::from_depths(nodes).unwrap_or_default()
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// True for the empty tree.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Label of node `i`.
    pub fn label(&self, i: usize) -> u32 {
        self.labels[i]
    }

    /// All labels in pre-order.
    pub fn labels(&self) -> &[u32] {
        &self.labels
    }

    /// One past the last node of the subtree of `i`.
    pub fn end(&self, i: usize) -> usize {
        self.end[i] as usize
    }

    /// Number of nodes in the subtree of `i`, itself included.
    pub fn size(&self, i: usize) -> usize {
        self.end[i] as usize - i
    }

    /// Parent of `i` (`None` for the root).
    pub fn parent(&self, i: usize) -> Option<usize> {
        match self.parent[i] {
            NO_PARENT => None,
            p => Some(p as usize),
        }
    }

    /// Depth of `i` (the root is 0).
    pub fn depth(&self, i: usize) -> u32 {
        self.depth[i]
    }

    /// True when `i` has no child.
    pub fn is_leaf(&self, i: usize) -> bool {
        self.end[i] as usize == i + 1
    }

    /// The children of `i` in order.
    pub fn children(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        let end = self.end(i);
        std::iter::successors(Some(i + 1).filter(|&c| c < end), move |&c| {
            Some(self.end(c)).filter(|&n| n < end)
        })
    }
}

/// The 16 hex digits of a 64-bit hash of `text` with whitespace runs
/// collapsed (so re-indented markup does not change the label).
pub fn text_hash_hex(text: &str) -> String {
    let mut h = blake3::Hasher::new();
    for (k, w) in text.split_whitespace().enumerate() {
        if k > 0 {
            h.update(b" ");
        }
        h.update(w.as_bytes());
    }
    let bytes = h.finalize();
    hex::encode(&bytes.as_bytes()[..8])
}

/// Costs of the three edit operations, per node.
pub trait CostModel {
    /// Cost of deleting node `i` of `t1`.
    fn delete(&self, t1: &LTree, i: usize) -> Cost;
    /// Cost of inserting node `j` of `t2`.
    fn insert(&self, t2: &LTree, j: usize) -> Cost;
    /// Cost of renaming node `i` of `t1` into node `j` of `t2`; must be 0
    /// when the labels are equal (RTDM costs identical subtrees 0).
    fn rename(&self, t1: &LTree, i: usize, t2: &LTree, j: usize) -> Cost;
}

/// Unit costs: delete 1, insert 1, rename 1 when the labels differ.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnitCosts;

impl CostModel for UnitCosts {
    fn delete(&self, _: &LTree, _: usize) -> Cost {
        1
    }
    fn insert(&self, _: &LTree, _: usize) -> Cost {
        1
    }
    fn rename(&self, t1: &LTree, i: usize, t2: &LTree, j: usize) -> Cost {
        Cost::from(t1.label(i) != t2.label(j))
    }
}

/// Constant per-node costs: `delete`, `insert`, and `rename` when the
/// labels differ (0 when they are equal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Costs {
    /// Cost of deleting one node.
    pub delete: Cost,
    /// Cost of inserting one node.
    pub insert: Cost,
    /// Cost of renaming a node to a different label.
    pub rename: Cost,
}

impl Default for Costs {
    fn default() -> Costs {
        Costs {
            delete: 1,
            insert: 1,
            rename: 1,
        }
    }
}

impl CostModel for Costs {
    fn delete(&self, _: &LTree, _: usize) -> Cost {
        self.delete
    }
    fn insert(&self, _: &LTree, _: usize) -> Cost {
        self.insert
    }
    fn rename(&self, t1: &LTree, i: usize, t2: &LTree, j: usize) -> Cost {
        if t1.label(i) == t2.label(j) {
            0
        } else {
            self.rename
        }
    }
}

/// A tree in post-order, as Zhang–Shasha walks it.
struct PostOrder {
    /// Pre-order index of each post-order position.
    pre: Vec<u32>,
    /// Post-order index of the leftmost leaf of each post-order node.
    lml: Vec<u32>,
    /// Key roots (the root and every node with a left sibling), ascending
    /// in post-order.
    keyroots: Vec<u32>,
}

impl PostOrder {
    fn new(t: &LTree) -> PostOrder {
        let n = t.len();
        // In pre-order, node i is preceded by its depth(i) ancestors and
        // by the nodes of finished subtrees; in post-order by those and
        // its own descendants.
        let post_of = |i: usize| i - t.depth(i) as usize + t.size(i) - 1;
        let mut left_leaf = vec![0u32; n];
        for i in (0..n).rev() {
            left_leaf[i] = if t.is_leaf(i) {
                i as u32
            } else {
                left_leaf[i + 1]
            };
        }
        let mut pre = vec![0u32; n];
        let mut lml = vec![0u32; n];
        let mut keyroots = Vec::new();
        for (i, &leaf) in left_leaf.iter().enumerate() {
            let k = post_of(i);
            pre[k] = i as u32;
            lml[k] = post_of(leaf as usize) as u32;
            match t.parent(i) {
                Some(p) if p + 1 == i => {}
                _ => keyroots.push(k as u32),
            }
        }
        keyroots.sort_unstable();
        PostOrder { pre, lml, keyroots }
    }
}

/// The exact tree edit distance between `t1` and `t2` under `costs`
/// (Zhang–Shasha). O(n1·n2) memory.
pub fn ted<C: CostModel>(t1: &LTree, t2: &LTree, costs: &C) -> Cost {
    let (n1, n2) = (t1.len(), t2.len());
    if n1 == 0 || n2 == 0 {
        let del = (0..n1).fold(0, |a: Cost, i| a.saturating_add(costs.delete(t1, i)));
        return (0..n2).fold(del, |a, j| a.saturating_add(costs.insert(t2, j)));
    }
    let p1 = PostOrder::new(t1);
    let p2 = PostOrder::new(t2);
    // Per-node costs in post-order, read in the inner loop.
    let del: Vec<Cost> = p1
        .pre
        .iter()
        .map(|&i| costs.delete(t1, i as usize))
        .collect();
    let ins: Vec<Cost> = p2
        .pre
        .iter()
        .map(|&j| costs.insert(t2, j as usize))
        .collect();
    let mut td = vec![0 as Cost; n1 * n2];
    let mut fd = vec![0 as Cost; (n1 + 1) * (n2 + 1)];
    for &x in &p1.keyroots {
        let (x, l1) = (x as usize, p1.lml[x as usize] as usize);
        for &y in &p2.keyroots {
            let (y, l2) = (y as usize, p2.lml[y as usize] as usize);
            let rows = x - l1 + 2;
            let cols = y - l2 + 2;
            fd[0] = 0;
            for a in 1..rows {
                fd[a * cols] = fd[(a - 1) * cols].saturating_add(del[l1 + a - 1]);
            }
            for b in 1..cols {
                fd[b] = fd[b - 1].saturating_add(ins[l2 + b - 1]);
            }
            for a in 1..rows {
                let xa = l1 + a - 1;
                let row = a * cols;
                let up = row - cols;
                let whole_x = p1.lml[xa] as usize == l1;
                let dx = del[xa];
                for b in 1..cols {
                    let yb = l2 + b - 1;
                    let d = fd[up + b].saturating_add(dx);
                    let i = fd[row + b - 1].saturating_add(ins[b + l2 - 1]);
                    let v = if whole_x && p2.lml[yb] as usize == l2 {
                        let r = costs.rename(t1, p1.pre[xa] as usize, t2, p2.pre[yb] as usize);
                        let v = d.min(i).min(fd[up + b - 1].saturating_add(r));
                        td[xa * n2 + yb] = v;
                        v
                    } else {
                        let pa = p1.lml[xa] as usize - l1;
                        let pb = p2.lml[yb] as usize - l2;
                        d.min(i)
                            .min(fd[pa * cols + pb].saturating_add(td[xa * n2 + yb]))
                    };
                    fd[row + b] = v;
                }
            }
        }
    }
    td[n1 * n2 - 1]
}

/// [`ted`] with [`UnitCosts`].
pub fn ted_unit(t1: &LTree, t2: &LTree) -> Cost {
    ted(t1, t2, &UnitCosts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(s: &str, labels: &mut Labels) -> LTree {
        LTree::from_bracket(s, labels).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[derive(serde::Deserialize)]
    struct Case {
        #[serde(rename = "testID")]
        id: u32,
        t1: String,
        t2: String,
        d: u64,
    }

    #[test]
    fn zhang_shasha_gives_every_apted_correctness_distance() {
        let cases: Vec<Case> = serde_json::from_str(include_str!(
            "../../tests/data/apted/correctness_test_cases.json"
        ))
        .unwrap_or_else(|e| panic!("test cases: {e}"));
        assert_eq!(cases.len(), 77);
        for c in &cases {
            let mut labels = Labels::new();
            let t1 = tree(&c.t1, &mut labels);
            let t2 = tree(&c.t2, &mut labels);
            assert_eq!(
                ted_unit(&t1, &t2),
                c.d,
                "case {}: {} vs {}",
                c.id,
                c.t1,
                c.t2
            );
            // The distance is symmetric under unit costs.
            assert_eq!(ted_unit(&t2, &t1), c.d, "case {} reversed", c.id);
        }
    }

    #[test]
    fn bracket_notation_round_trips_with_escapes() {
        let mut labels = Labels::new();
        let t = tree(r"{a{b\{x\}}{c{d}{e\\}}}", &mut labels);
        assert_eq!(t.len(), 5);
        assert_eq!(labels.name(t.label(1)), Some("b{x}"));
        assert_eq!(labels.name(t.label(4)), Some(r"e\"));
        assert_eq!(t.end(0), 5);
        assert_eq!(t.end(2), 5);
        assert_eq!(t.children(0).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(t.children(2).collect::<Vec<_>>(), [3, 4]);
        assert_eq!(t.parent(4), Some(2));
        assert_eq!(t.depth(3), 2);
        assert_eq!(t.to_bracket(&labels), r"{a{b\{x\}}{c{d}{e\\}}}");
        // Spaces belong to labels; an empty label is allowed.
        let u = tree(" {a b{}} ", &mut labels);
        assert_eq!(labels.name(u.label(0)), Some("a b"));
        assert_eq!(labels.name(u.label(1)), Some(""));
    }

    #[test]
    fn malformed_bracket_strings_are_errors_with_positions() {
        let mut l = Labels::new();
        assert_eq!(LTree::from_bracket("", &mut l), Err(TreeError::Empty));
        assert_eq!(LTree::from_bracket("   ", &mut l), Err(TreeError::Empty));
        assert_eq!(
            LTree::from_bracket("a{b}", &mut l),
            Err(TreeError::ExpectedOpen(0))
        );
        assert_eq!(
            LTree::from_bracket("{a{b}", &mut l),
            Err(TreeError::Unclosed(0))
        );
        assert_eq!(
            LTree::from_bracket("{a{b{c}", &mut l),
            Err(TreeError::Unclosed(2))
        );
        assert_eq!(
            LTree::from_bracket("{a}{b}", &mut l),
            Err(TreeError::Trailing(3))
        );
        assert_eq!(
            LTree::from_bracket("{a}}", &mut l),
            Err(TreeError::Trailing(3))
        );
        assert_eq!(
            LTree::from_bracket("{a{b}x}", &mut l),
            Err(TreeError::ExpectedOpen(5))
        );
        assert_eq!(
            LTree::from_bracket("{a\\", &mut l),
            Err(TreeError::DanglingEscape(2))
        );
    }

    #[test]
    fn depth_lists_must_describe_one_rooted_tree() {
        assert_eq!(
            LTree::from_depths([(0, 1)]),
            Err(TreeError::BadDepth { index: 0, depth: 1 })
        );
        assert_eq!(
            LTree::from_depths([(0, 0), (1, 2)]),
            Err(TreeError::BadDepth { index: 1, depth: 2 })
        );
        assert_eq!(
            LTree::from_depths([(0, 0), (1, 1), (2, 0)]),
            Err(TreeError::BadDepth { index: 2, depth: 0 })
        );
        let t =
            LTree::from_depths([(0, 0), (1, 1), (2, 2), (3, 1)]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((t.end(0), t.end(1), t.end(2), t.end(3)), (4, 3, 3, 4));
        assert!(LTree::from_depths([]).is_ok_and(|t| t.is_empty()));
    }

    #[test]
    fn page_trees_label_text_uniformly_or_by_content() {
        let dom = Dom::parse("<body><div><p>one  two</p><p>three</p></div><p>one two</p></body>");
        let page = PageTree::from_dom(&dom);
        let mut labels = Labels::new();
        let plain = LTree::from_page(&page, &mut labels, TextLabels::Uniform);
        assert_eq!(
            plain.to_bracket(&labels),
            "{body{div{p{#text}}{p{#text}}}{p{#text}}}"
        );
        let content = LTree::from_page(&page, &mut labels, TextLabels::Content(&dom));
        let texts: Vec<u32> = (0..content.len())
            .filter(|&i| content.is_leaf(i))
            .map(|i| content.label(i))
            .collect();
        assert_eq!(texts.len(), 3);
        // "one  two" and "one two" are the same text; "three" is not.
        assert_eq!(texts[0], texts[2]);
        assert_ne!(texts[0], texts[1]);
        assert!(
            labels
                .name(texts[1])
                .is_some_and(|n| n.starts_with("#text:"))
        );
        // Element labels are shared with the uniform tree.
        assert_eq!(plain.label(1), content.label(1));
    }

    #[test]
    fn cost_models_weigh_each_operation() {
        let mut l = Labels::new();
        let a = tree("{a{b}{c}}", &mut l);
        let b = tree("{a{x}}", &mut l);
        assert_eq!(ted_unit(&a, &b), 2);
        // Renaming dear: delete b, delete c, insert x is cheaper.
        let dear = Costs {
            delete: 1,
            insert: 1,
            rename: 5,
        };
        assert_eq!(ted(&a, &b, &dear), 3);
        // Deleting dear: rename one, delete the other is still forced.
        let keep = Costs {
            delete: 4,
            insert: 1,
            rename: 1,
        };
        assert_eq!(ted(&a, &b, &keep), 5);
        assert_eq!(ted(&a, &LTree::default(), &keep), 12);
        assert_eq!(ted(&LTree::default(), &b, &keep), 2);
    }

    #[test]
    fn subtrees_are_trees_of_their_own() {
        let mut l = Labels::new();
        let t = tree("{a{b{c}{d}}{e}}", &mut l);
        assert_eq!(t.subtree(1).to_bracket(&l), "{b{c}{d}}");
        assert_eq!(t.subtree(4).to_bracket(&l), "{e}");
        assert!(t.subtree(9).is_empty());
    }
}
