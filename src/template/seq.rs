//! Pre-order `tag+depth` token sequences of a [`PageTree`], with repeated
//! records collapsed (docs/algorithms.md, "Simplify" and "Repeated records").
//!
//! Takes a simplified page tree and an [`Interner`] shared by every page
//! that will be compared; gives a [`Sequence`]: one `u32` token per
//! element in pre-order (`#text` leaves are left out: the template is the
//! page's structure), the token standing for the pair (tag, depth) as the
//! seed's `<div2>`. A subtree is the contiguous run that starts at its root.
//!
//! # Repeated records
//!
//! Pages generated from one template differ in how many records they
//! list; comparing them token by token would count every extra `<li>` as a
//! difference. So, as in Qiu's thesis, runs of sibling subtrees repeated
//! back to back under one parent are collapsed into their first copy, which
//! is marked "may repeat" (`(...)+`, the thesis's base node of the second
//! kind). The rules:
//!
//! - a repeat is a *unit* of 1 to [`MAX_UNIT_SIBLINGS`] consecutive whole
//!   sibling subtrees under ONE parent, followed directly by copies equal
//!   to it token for token (so it never crosses a subtree boundary);
//! - it is maximal: among the overlapping candidates under one parent the
//!   one covering the most siblings wins (then the shorter unit, then the
//!   leftmost), and a stretch is taken with all its consecutive copies;
//! - on overlap the deeper repeat wins: the thesis's example
//!   `<div3><div4><div3><div4><a5><img5><div4><a5><img5>` offers
//!   `<div3><div4>` and `<div4><a5><img5>`; here the first is not a repeat
//!   at all (the two `div3` subtrees are not equal), and the second is;
//! - repeats nest: collapsing is repeated until nothing changes, so
//!   `ul > li(a a a), li(a a)` first becomes `ul > li((a)+), li((a)+)` and
//!   then `ul > (li((a)+))+`. A collapsed unit compares equal to a single
//!   copy (`(a)+` = `a`), so records with one or several sub-items still
//!   collapse together; the first copy is the one kept.
//!
//! # Suffix array rather than Ukkonen's suffix tree
//!
//! The thesis builds a Ukkonen suffix tree and walks its internal nodes. The
//! only question this job asks is "is the run of siblings starting at `i`
//! equal to the run starting at `j`?", i.e. a longest-common-extension
//! (LCE) query. A suffix array with its LCP array (Kasai) and a sparse
//! table for range minima answers it in O(1) for units of any length,
//! from three flat `u32` arrays built by prefix doubling with counting
//! sorts (O(n log n), in practice a handful of linear passes). A suffix
//! tree over this alphabet (hundreds of distinct `tag+depth` tokens) needs
//! a child map per node, suffix links, a unique terminator and pointer
//! chasing — several times the memory and poor cache behaviour — and its
//! internal nodes describe repeats that mostly cross subtree boundaries,
//! which the thesis then has to filter out (its Algorithm 2) and fix up for
//! overlaps. Walking each parent's children with O(1) LCE queries
//! produces only valid candidates in the first place.
//!
//! The cost per pass is the suffix array plus, per parent with `m`
//! element children, at most `m * MAX_UNIT_SIBLINGS` LCE queries.

use html5ever::LocalName;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::tree::PageTree;

/// Longest repeated unit, in sibling subtrees. Records are nearly always
/// one subtree (`<li>`, `<tr>`, `<div class=item>`) or a few (`<dt><dd>`,
/// `<h3><p><a>`); Qiu's thesis (its table 6.4) finds repeats of more than 9 *tokens*
/// rare. The bound keeps the search linear in the number of children.
pub const MAX_UNIT_SIBLINGS: usize = 8;

/// Most collapsing passes (each one can reveal repeats one nesting level
/// up). Real pages settle in 2 to 4.
pub const MAX_PASSES: usize = 16;

/// Longest sequence kept, in tokens; later elements are dropped. Keeps the
/// weighted LCS of [`super::elcs`] within `u32` (a page of a million
/// elements is far beyond anything a template is learned from).
pub const MAX_TOKENS: usize = 1 << 20;

/// Maps `(tag, depth)` pairs to dense `u32` tokens, so that the sequences
/// of many pages are comparable. Share one interner between every page
/// that will be compared (a template set owns one).
///
/// Serialised as the list of pairs in token order.
#[derive(Debug, Clone, Default)]
pub struct Interner {
    map: FxHashMap<(LocalName, u32), u32>,
    names: Vec<(LocalName, u32)>,
}

impl Interner {
    /// An empty interner.
    pub fn new() -> Interner {
        Interner::default()
    }

    /// The token of `(tag, depth)`, assigned on first sight.
    pub fn intern(&mut self, tag: &LocalName, depth: u32) -> u32 {
        if let Some(&t) = self.map.get(&(tag.clone(), depth)) {
            return t;
        }
        let t = self.names.len() as u32;
        self.names.push((tag.clone(), depth));
        self.map.insert((tag.clone(), depth), t);
        t
    }

    /// The token of `(tag, depth)` if it was ever interned.
    pub fn get(&self, tag: &str, depth: u32) -> Option<u32> {
        self.map.get(&(LocalName::from(tag), depth)).copied()
    }

    /// The `(tag, depth)` of a token.
    pub fn resolve(&self, token: u32) -> Option<(&str, u32)> {
        self.names
            .get(token as usize)
            .map(|(tag, depth)| (&**tag, *depth))
    }

    /// Number of distinct tokens.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// True when nothing was interned.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

impl PartialEq for Interner {
    fn eq(&self, other: &Interner) -> bool {
        self.names == other.names
    }
}

impl Serialize for Interner {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(Some(self.names.len()))?;
        for (tag, depth) in &self.names {
            seq.serialize_element(&(&**tag, *depth))?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for Interner {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Interner, D::Error> {
        let pairs = Vec::<(String, u32)>::deserialize(d)?;
        let mut out = Interner::new();
        for (tag, depth) in pairs {
            let tag = LocalName::from(tag);
            let t = out.names.len() as u32;
            out.names.push((tag.clone(), depth));
            // A duplicated pair (a hand-edited file) keeps its first token.
            out.map.entry((tag, depth)).or_insert(t);
        }
        Ok(out)
    }
}

/// One may-repeat block of a collapsed [`Sequence`]: the kept first copy
/// of a repeated unit, `start..start + len` in sequence positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Block {
    /// Position of the unit's first token.
    pub start: u32,
    /// Tokens in the (kept copy of the) unit.
    pub len: u32,
}

/// A repeat found in the page: a unit of `siblings` consecutive sibling
/// subtrees under `parent`, present `copies.len()` times back to back.
/// Indices are pre-order indices in the [`PageTree`], so record extraction
/// can walk the original copies: copy `k` is the `siblings` element
/// subtrees starting at `copies[k]` (text leaves between them included).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repeat {
    /// The parent element (tree index).
    pub parent: u32,
    /// Sibling subtrees per unit.
    pub siblings: u32,
    /// Tree index of the first root of each copy, in document order.
    pub copies: Vec<u32>,
}

impl Repeat {
    /// Number of copies (at least 2).
    pub fn count(&self) -> usize {
        self.copies.len()
    }
}

/// A page as a pre-order token sequence (see the module docs).
///
/// The parallel vectors `tokens`, `depths`, `repeats` and `nodes` have one
/// entry per sequence position. After deserialisation only `tokens`,
/// `depths`, `repeats` and `blocks` are present (similarity and template
/// learning need nothing else); the links to a tree are empty.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Sequence {
    /// The interned `tag+depth` tokens.
    pub tokens: Vec<u32>,
    /// Depth of each token (the root is 0).
    pub depths: Vec<u32>,
    /// True where a may-repeat block starts (a `(...)+`).
    pub repeats: Vec<bool>,
    /// The may-repeat blocks, by start (outer block first on a tie).
    pub blocks: Vec<Block>,
    /// Pre-order tree index of the element behind each token.
    #[serde(skip)]
    pub nodes: Vec<u32>,
    /// For every node of the tree: the position that stands for it — its
    /// own token, the matching token of the kept copy for a collapsed
    /// copy, the parent element's for a text leaf (`u32::MAX` for a node
    /// with no element above it, or one past [`MAX_TOKENS`]).
    #[serde(skip)]
    pub tree_pos: Vec<u32>,
    /// Every repeat collapsed, including those inside copies dropped later.
    #[serde(skip)]
    pub detected: Vec<Repeat>,
}

/// The collapsed sequence of `tree` (see the module docs).
pub fn sequence(tree: &PageTree, interner: &mut Interner) -> Sequence {
    Sequence::uncollapsed(tree, interner).collapsed()
}

impl Sequence {
    /// The plain pre-order sequence of `tree`'s elements, nothing collapsed.
    pub fn uncollapsed(tree: &PageTree, interner: &mut Interner) -> Sequence {
        let n = tree.nodes.iter().filter(|n| !n.is_text()).count();
        let n = n.min(MAX_TOKENS);
        let mut s = Sequence {
            tokens: Vec::with_capacity(n),
            depths: Vec::with_capacity(n),
            repeats: vec![false; n],
            blocks: Vec::new(),
            nodes: Vec::with_capacity(n),
            tree_pos: vec![u32::MAX; tree.nodes.len()],
            detected: Vec::new(),
        };
        for (i, node) in tree.nodes.iter().enumerate() {
            if node.is_text() {
                // Pre-order: the parent was seen (and placed) before.
                if let Some(p) = node.parent {
                    s.tree_pos[i] = s.tree_pos[p as usize];
                }
                continue;
            }
            if s.tokens.len() == n {
                continue;
            }
            s.tree_pos[i] = s.tokens.len() as u32;
            s.tokens.push(interner.intern(&node.tag, node.depth));
            s.depths.push(node.depth);
            s.nodes.push(i as u32);
        }
        s
    }

    /// A sequence from raw tokens and their pre-order depths (`None` when
    /// the lengths differ, a depth rises by more than one from one token
    /// to the next, or it is longer than [`MAX_TOKENS`]). Its `nodes` are
    /// the positions themselves.
    pub fn from_tokens(tokens: Vec<u32>, depths: Vec<u32>) -> Option<Sequence> {
        if tokens.len() != depths.len() || tokens.len() > MAX_TOKENS {
            return None;
        }
        if depths.windows(2).any(|w| w[1] > w[0] + 1) {
            return None;
        }
        let n = tokens.len();
        Some(Sequence {
            tokens,
            depths,
            repeats: vec![false; n],
            blocks: Vec::new(),
            nodes: (0..n as u32).collect(),
            tree_pos: (0..n as u32).collect(),
            detected: Vec::new(),
        })
    }

    /// This sequence with its repeated records collapsed. Idempotent:
    /// collapsing a collapsed sequence changes nothing.
    pub fn collapsed(&self) -> Sequence {
        let mut s = self.clone();
        for _ in 0..MAX_PASSES {
            if !collapse_pass(&mut s) {
                break;
            }
        }
        s.repeats = vec![false; s.tokens.len()];
        for b in &s.blocks {
            s.repeats[b.start as usize] = true;
        }
        s.detected
            .sort_by_key(|r| (r.parent, r.copies.first().copied()));
        s
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// True for a page without elements.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// Renders the sequence as `<tag depth>` items with `(`..`)+` around
    /// the blocks, e.g. `<ul1>(<li2><a3>)+` (for tests and debugging).
    pub fn render(&self, interner: &Interner) -> String {
        let mut out = String::new();
        // Ends of the open blocks, innermost last.
        let mut open: Vec<u32> = Vec::new();
        let mut blocks = self.blocks.iter().peekable();
        for (i, &t) in self.tokens.iter().enumerate() {
            while open.last() == Some(&(i as u32)) {
                open.pop();
                out.push_str(")+");
            }
            while let Some(b) = blocks.next_if(|b| b.start as usize == i) {
                open.push(b.start + b.len);
                out.push('(');
            }
            match interner.resolve(t) {
                Some((tag, depth)) => out.push_str(&format!("<{tag}{depth}>")),
                None => out.push_str(&format!("<?{t}>")),
            }
        }
        for _ in open {
            out.push_str(")+");
        }
        out
    }
}

/// `end[i]`: one past the last position of the subtree at `i`.
fn subtree_ends(depths: &[u32]) -> Vec<u32> {
    let n = depths.len();
    let mut end = vec![n as u32; n];
    let mut open: Vec<usize> = Vec::new();
    for (i, &d) in depths.iter().enumerate() {
        while let Some(&top) = open.last() {
            if depths[top] >= d {
                end[top] = i as u32;
                open.pop();
            } else {
                break;
            }
        }
        open.push(i);
    }
    end
}

/// `parent[i]`: position of the parent of `i` (`u32::MAX` for a root).
fn parents(depths: &[u32]) -> Vec<u32> {
    let mut parent = vec![u32::MAX; depths.len()];
    let mut open: Vec<usize> = Vec::new();
    for (i, &d) in depths.iter().enumerate() {
        while open.last().is_some_and(|&top| depths[top] >= d) {
            open.pop();
        }
        if let Some(&top) = open.last() {
            parent[i] = top as u32;
        }
        open.push(i);
    }
    parent
}

/// A chosen repeat of one pass: unit of `siblings` children of the
/// sequence position `parent`, copies starting at `copies` (positions).
struct Run {
    parent: usize,
    siblings: usize,
    copies: Vec<u32>,
    unit_len: u32,
}

/// One collapsing pass; false when it found nothing.
fn collapse_pass(seq: &mut Sequence) -> bool {
    let n = seq.tokens.len();
    if n < 3 {
        return false;
    }
    let lce = Lce::new(&seq.tokens);
    let end = subtree_ends(&seq.depths);
    let parent = parents(&seq.depths);
    // Existing blocks whose unit is a run of children of a given parent.
    let mut blocks_at: FxHashMap<u32, Vec<(u32, u32)>> = FxHashMap::default();
    for b in &seq.blocks {
        let p = parent[b.start as usize];
        if p != u32::MAX {
            blocks_at
                .entry(p)
                .or_default()
                .push((b.start, b.start + b.len));
        }
    }
    let mut runs: Vec<Run> = Vec::new();
    let mut starts: Vec<u32> = Vec::new();
    // (first child, siblings per unit, copies)
    let mut cands: Vec<(usize, usize, usize)> = Vec::new();
    let mut taken: Vec<(usize, usize)> = Vec::new();
    for p in 0..n {
        let e = end[p] as usize;
        if e <= p + 2 {
            continue; // fewer than two children
        }
        starts.clear();
        let mut c = p + 1;
        while c < e {
            starts.push(c as u32);
            c = end[c] as usize;
        }
        let m = starts.len();
        if m < 2 {
            continue;
        }
        starts.push(e as u32);
        let eq = |k: usize, l: usize| {
            let (a, b) = (starts[k] as usize, starts[k + l] as usize);
            let size = starts[k + 1] as usize - a;
            size == starts[k + l + 1] as usize - b && lce.lce(a, b) >= size
        };
        cands.clear();
        for l in 1..=MAX_UNIT_SIBLINGS.min(m / 2) {
            let mut k = 0;
            while k + l < m {
                if !eq(k, l) {
                    k += 1;
                    continue;
                }
                let a = k;
                while k + l < m && eq(k, l) {
                    k += 1;
                }
                // Children a..k+l have period l.
                if k - a >= l {
                    cands.push((a, l, (k - a + l) / l));
                }
            }
        }
        if cands.is_empty() {
            continue;
        }
        cands.sort_by_key(|&(a, l, c)| (std::cmp::Reverse(c * l), l, a));
        let blocks = blocks_at.get(&(p as u32)).map_or(&[][..], |v| &v[..]);
        taken.clear();
        for &(a, l, count) in &cands {
            let (lo, hi) = (a, a + count * l);
            if taken.iter().any(|&(x, y)| lo < y && x < hi) {
                continue;
            }
            let tok = |k: usize| starts[k];
            let compatible = |r0: u32, r1: u32| {
                blocks.iter().all(|&(b0, b1)| {
                    b1 <= r0 || r1 <= b0 || (b0 <= r0 && r1 <= b1) || (r0 <= b0 && b1 <= r1)
                })
            };
            if !compatible(tok(lo), tok(hi))
                || !(0..count).all(|i| compatible(tok(a + i * l), tok(a + (i + 1) * l)))
            {
                continue;
            }
            taken.push((lo, hi));
            runs.push(Run {
                parent: p,
                siblings: l,
                copies: (0..count).map(|i| starts[a + i * l]).collect(),
                unit_len: starts[a + l] - starts[a],
            });
        }
    }
    if runs.is_empty() {
        return false;
    }
    apply(seq, &runs);
    true
}

/// Drops every copy but the first of each run, records the blocks and the
/// repeats, and re-maps positions.
fn apply(seq: &mut Sequence, runs: &[Run]) {
    let n = seq.tokens.len();
    let mut keep = vec![true; n];
    // Where a dropped position's content lives on: always earlier.
    let mut rep: Vec<u32> = (0..n as u32).collect();
    for run in runs {
        let unit = run.copies[0];
        for &copy in &run.copies[1..] {
            for off in 0..run.unit_len {
                keep[(copy + off) as usize] = false;
                rep[(copy + off) as usize] = unit + off;
            }
        }
        seq.blocks.push(Block {
            start: unit,
            len: run.unit_len,
        });
        seq.detected.push(Repeat {
            parent: seq
                .nodes
                .get(run.parent)
                .copied()
                .unwrap_or(run.parent as u32),
            siblings: run.siblings as u32,
            copies: run
                .copies
                .iter()
                .map(|&c| seq.nodes.get(c as usize).copied().unwrap_or(c))
                .collect(),
        });
    }
    // Resolve chains (a copy inside a dropped copy): rep[i] < i.
    let mut fin: Vec<u32> = (0..n as u32).collect();
    for i in 0..n {
        if !keep[i] {
            fin[i] = fin[rep[i] as usize];
        }
    }
    // kept[i]: kept positions before i, i.e. the new position of i.
    let mut kept = vec![0u32; n + 1];
    for (i, &k) in keep.iter().enumerate() {
        kept[i + 1] = kept[i] + k as u32;
    }
    for tp in seq.tree_pos.iter_mut() {
        if (*tp as usize) < n {
            *tp = kept[fin[*tp as usize] as usize];
        }
    }
    let mut blocks: Vec<Block> = seq
        .blocks
        .iter()
        .filter(|b| keep[b.start as usize])
        .map(|b| Block {
            start: kept[b.start as usize],
            len: kept[(b.start + b.len) as usize] - kept[b.start as usize],
        })
        .collect();
    blocks.sort_by_key(|b| (b.start, std::cmp::Reverse(b.len)));
    blocks.dedup();
    seq.blocks = blocks;
    let mut w = 0;
    for (i, _) in keep.iter().enumerate().filter(|(_, k)| **k) {
        seq.tokens[w] = seq.tokens[i];
        seq.depths[w] = seq.depths[i];
        if let Some(&node) = seq.nodes.get(i) {
            seq.nodes[w] = node;
        }
        w += 1;
    }
    seq.tokens.truncate(w);
    seq.depths.truncate(w);
    seq.nodes.truncate(w);
    seq.repeats = vec![false; w];
}

/// Longest-common-extension queries over one sequence: suffix array
/// (prefix doubling), LCP array (Kasai) and a sparse table of LCP minima.
struct Lce {
    rank: Vec<u32>,
    /// `table[k][r]` = min of `lcp[r .. r + 2^k]`; `lcp[r]` is the LCP of
    /// the suffixes ranked `r - 1` and `r`.
    table: Vec<Vec<u32>>,
}

impl Lce {
    fn new(s: &[u32]) -> Lce {
        let sa = suffix_array(s);
        let n = s.len();
        let mut rank = vec![0u32; n];
        for (r, &p) in sa.iter().enumerate() {
            rank[p as usize] = r as u32;
        }
        // Kasai: the LCP with the previous suffix in rank order drops by
        // at most one from position i to i + 1.
        let mut lcp = vec![0u32; n];
        let mut h = 0usize;
        for i in 0..n {
            let r = rank[i] as usize;
            if r == 0 {
                h = 0;
                continue;
            }
            let j = sa[r - 1] as usize;
            while i + h < n && j + h < n && s[i + h] == s[j + h] {
                h += 1;
            }
            lcp[r] = h as u32;
            h = h.saturating_sub(1);
        }
        let mut table = vec![lcp];
        let mut k = 1;
        while 2 * k <= n {
            let prev = &table[table.len() - 1];
            let next: Vec<u32> = (0..=n - 2 * k).map(|r| prev[r].min(prev[r + k])).collect();
            table.push(next);
            k *= 2;
        }
        Lce { rank, table }
    }

    /// Length of the longest common prefix of the suffixes at `i` and `j`.
    fn lce(&self, i: usize, j: usize) -> usize {
        let n = self.rank.len();
        if i == j {
            return n - i;
        }
        let (a, b) = (self.rank[i] as usize, self.rank[j] as usize);
        let (lo, hi) = if a < b { (a + 1, b) } else { (b + 1, a) };
        let len = hi - lo + 1;
        let k = usize::BITS - 1 - len.leading_zeros();
        let row = &self.table[k as usize];
        row[lo].min(row[hi + 1 - (1 << k)]) as usize
    }
}

/// Suffix array by prefix doubling with counting sorts (Manber–Myers):
/// each round sorts by (rank of the first 2^k, rank of the next 2^k) and
/// stops as soon as all ranks differ.
fn suffix_array(s: &[u32]) -> Vec<u32> {
    let n = s.len();
    if n == 0 {
        return Vec::new();
    }
    // Dense initial ranks of the symbols.
    let mut sorted: Vec<u32> = s.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut rank: Vec<u32> = s
        .iter()
        .map(|x| sorted.binary_search(x).unwrap_or(0) as u32)
        .collect();
    let mut classes = sorted.len();
    let mut sa: Vec<u32> = (0..n as u32).collect();
    sa.sort_unstable_by_key(|&i| rank[i as usize]);
    let mut tmp = vec![0u32; n];
    let mut second: Vec<u32> = Vec::with_capacity(n);
    let mut count = vec![0u32; n.max(classes) + 1];
    let mut k = 1;
    while classes < n {
        // Suffixes ordered by their second half: the empty ones first.
        second.clear();
        second.extend((n.saturating_sub(k)..n).map(|i| i as u32));
        second.extend(
            sa.iter()
                .filter(|&&p| p as usize >= k)
                .map(|&p| p - k as u32),
        );
        // Stable counting sort by the first half.
        count[..=classes].fill(0);
        for &r in &rank {
            count[r as usize + 1] += 1;
        }
        for c in 1..=classes {
            count[c] += count[c - 1];
        }
        for &i in &second {
            let r = rank[i as usize] as usize;
            sa[count[r] as usize] = i;
            count[r] += 1;
        }
        let key2 = |i: usize| {
            if i + k < n { rank[i + k] as i64 } else { -1 }
        };
        tmp[sa[0] as usize] = 0;
        let mut c = 0u32;
        for w in 1..n {
            let (a, b) = (sa[w - 1] as usize, sa[w] as usize);
            if rank[a] != rank[b] || key2(a) != key2(b) {
                c += 1;
            }
            tmp[b] = c;
        }
        std::mem::swap(&mut rank, &mut tmp);
        classes = c as usize + 1;
        k *= 2;
    }
    sa
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::dom::Dom;
    use proptest::prelude::*;

    fn page(html: &str) -> (PageTree, Sequence, Interner) {
        let tree = PageTree::from_dom(&Dom::parse(html));
        let mut interner = Interner::new();
        let s = sequence(&tree, &mut interner);
        (tree, s, interner)
    }

    #[test]
    fn five_identical_list_items_collapse_to_one_marked_block() {
        let li = "<li><a href=x>t</a><span>s</span><p>p</p></li>";
        let html = format!("<body><h1>T</h1><ul>{}</ul><p>end</p></body>", li.repeat(5));
        let (tree, s, i) = page(&html);
        assert_eq!(
            s.render(&i),
            "<body0><h11><ul1>(<li2><a3><p3>)+<p1>",
            "span is a formatting tag and disappears in the tree"
        );
        assert_eq!(s.repeats, [false, false, false, true, false, false, false]);
        assert_eq!(s.blocks, [Block { start: 3, len: 3 }]);
        assert_eq!(s.detected.len(), 1);
        let r = &s.detected[0];
        assert_eq!(r.count(), 5);
        assert_eq!(r.siblings, 1);
        assert_eq!(&*tree.nodes[r.parent as usize].tag, "ul");
        for &c in &r.copies {
            assert_eq!(&*tree.nodes[c as usize].tag, "li");
        }
        // The copies' nodes map onto the kept copy, text leaves onto their
        // parent element.
        let last_li = r.copies[4] as usize;
        assert_eq!(s.tree_pos[last_li], 3);
        assert_eq!(s.tree_pos[last_li + 1], 4, "a of the fifth copy");
        assert_eq!(s.tree_pos[last_li + 2], 4, "text of that a");
        let un = Sequence::uncollapsed(&tree, &mut Interner::new());
        assert_eq!(un.len(), 3 + 5 * 3 + 1);
    }

    #[test]
    fn repeats_under_different_parents_do_not_collapse() {
        let (_, s, i) = page("<body><div><p>a</p></div><div><p>b</p></div></body>");
        // The two divs are equal siblings: one repeat of the div.
        assert_eq!(s.render(&i), "<body0>(<div1><p2>)+");
        // One p under each of two parents that differ: nothing to collapse.
        let (_, s, i) = page("<body><div><p>a</p></div><section><p>b</p></section></body>");
        assert_eq!(s.render(&i), "<body0><div1><p2><section1><p2>");
        assert!(s.detected.is_empty());
        // Equal runs that are not adjacent are not a repeat either.
        let (_, s, i) = page("<body><p>a</p><h2>x</h2><p>b</p></body>");
        assert_eq!(s.render(&i), "<body0><p1><h21><p1>");
    }

    #[test]
    fn multi_sibling_units_collapse_as_one_record() {
        let (_, s, i) = page(
            "<body><dl><dt>a</dt><dd>1</dd><dt>b</dt><dd>2</dd><dt>c</dt><dd>3</dd></dl></body>",
        );
        assert_eq!(s.render(&i), "<body0><dl1>(<dt2><dd2>)+");
        assert_eq!(s.detected[0].siblings, 2);
        assert_eq!(s.detected[0].count(), 3);
    }

    #[test]
    fn the_repeat_covering_most_siblings_wins_then_nested_ones_follow() {
        // a a b a a b: `(a)+` twice or `(a a b)+` once; the larger unit
        // wins, then the pair inside its kept copy collapses.
        let item = "<p>a</p><p>a</p><h2>b</h2>";
        let (_, s, i) = page(&format!("<body><div>{}</div></body>", item.repeat(2)));
        assert_eq!(s.render(&i), "<body0><div1>((<p2>)+<h22>)+");
    }

    #[test]
    fn nested_repeats_collapse_bottom_up_and_the_deeper_wins_on_overlap() {
        // Qiu's thesis, §3.3.3: <div3><div4> | <div3><div4><a5><img5><div4><a5><img5>.
        let html = "<body><div><div><div></div></div><div><div><a></a><img></div>\
                    <div><a></a><img></div></div></div></body>";
        let (_, s, i) = page(html);
        assert_eq!(
            s.render(&i),
            "<body0><div1><div2><div3><div2>(<div3><a4><img4>)+"
        );
        // Items with different numbers of links become equal once their
        // links collapse, and then the items collapse.
        let (_, s, i) = page(
            "<body><ul><li><a>1</a><a>2</a><a>3</a></li><li><a>4</a><a>5</a></li>\
             <li><a>6</a></li></ul></body>",
        );
        assert_eq!(s.render(&i), "<body0><ul1>(<li2>(<a3>)+)+");
        assert_eq!(s.detected.len(), 3, "{:?}", s.detected);
    }

    #[test]
    fn suffix_array_and_lce_match_the_naive_ones() {
        let s = [3u32, 1, 2, 3, 1, 2, 3, 1, 0, 3, 1];
        let sa = suffix_array(&s);
        let mut naive: Vec<u32> = (0..s.len() as u32).collect();
        naive.sort_by(|&a, &b| s[a as usize..].cmp(&s[b as usize..]));
        assert_eq!(sa, naive);
        let lce = Lce::new(&s);
        for i in 0..s.len() {
            for j in 0..s.len() {
                let want = s[i..]
                    .iter()
                    .zip(&s[j..])
                    .take_while(|(a, b)| a == b)
                    .count();
                assert_eq!(lce.lce(i, j), want, "lce({i},{j})");
            }
        }
    }

    /// Random pre-order sequences: depths that rise by at most one, tags
    /// from a small alphabet so that repeats are frequent.
    fn arb_sequence() -> impl Strategy<Value = Sequence> {
        proptest::collection::vec((0u32..3, 0u32..4), 1..120).prop_map(|steps| {
            let mut depths = vec![0u32];
            let mut tokens = vec![0u32];
            for (tag, up) in steps {
                let prev = depths[depths.len() - 1];
                // up 0: child; otherwise climb up to `up - 1` levels.
                let d = if up == 0 {
                    prev + 1
                } else {
                    prev.saturating_sub(up - 1).max(1)
                };
                depths.push(d);
                tokens.push(tag * 64 + d);
            }
            Sequence::from_tokens(tokens, depths).unwrap_or_default()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn collapsing_shortens_keeps_a_subsequence_and_is_idempotent(s in arb_sequence()) {
            let c = s.collapsed();
            prop_assert!(c.len() <= s.len());
            // Kept positions are a subsequence of the original.
            prop_assert!(c.nodes.windows(2).all(|w| w[0] < w[1]));
            for (k, &node) in c.nodes.iter().enumerate() {
                prop_assert_eq!(c.tokens[k], s.tokens[node as usize]);
                prop_assert_eq!(c.depths[k], s.depths[node as usize]);
            }
            // Still a pre-order sequence.
            prop_assert!(c.depths.windows(2).all(|w| w[1] <= w[0] + 1));
            // Every dropped node maps to a kept token equal to its own.
            for (node, &p) in c.tree_pos.iter().enumerate() {
                prop_assert_eq!(c.tokens[p as usize], s.tokens[node]);
            }
            // Blocks are whole runs of siblings.
            let end = subtree_ends(&c.depths);
            for b in &c.blocks {
                let (start, stop) = (b.start as usize, (b.start + b.len) as usize);
                let mut x = start;
                while x < stop {
                    prop_assert_eq!(c.depths[x], c.depths[start]);
                    x = end[x] as usize;
                }
                prop_assert_eq!(x, stop);
            }
            let again = c.collapsed();
            prop_assert_eq!(&again.tokens, &c.tokens);
            prop_assert_eq!(&again.blocks, &c.blocks);
            prop_assert_eq!(&again.repeats, &c.repeats);
            // Every detected repeat's copies are siblings in the original.
            let parent = parents(&s.depths);
            for r in &c.detected {
                prop_assert!(r.count() >= 2);
                for &copy in &r.copies {
                    prop_assert_eq!(parent[copy as usize], r.parent);
                }
            }
        }
    }
}
