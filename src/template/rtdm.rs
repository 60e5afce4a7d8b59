//! RTDM: the restricted top-down mapping edit distance of Reis et al.,
//! with the mapping as well as the cost (docs/algorithms.md, "RTDM").
//!
//! Takes two [`LTree`]s and a cost model ([`RtdmCosts`]); gives the
//! cheapest *restricted top-down* mapping: a node is mapped only if its
//! parent is mapped, and below two mapped nodes whose labels differ
//! nothing is mapped. Roots are always mapped to each other (the
//! algorithm starts from the roots' children lists).
//!
//! As in the paper, identical subtrees are found first (post-order
//! equivalence classes, linear: each subtree's class is interned from its
//! label and its children's classes) and cost 0 without further work.
//! For two mapped nodes with the same label, their children lists are
//! aligned by dynamic programming:
//!
//! ```text
//! M[i,j] = min( M[i-1,j]   + delete(T1[i]),
//!               M[i,j-1]   + insert(T2[j]),
//!               M[i-1,j-1] + s(T1[i], T2[j]) )
//! ```
//!
//! where `s` is 0 for identical subtrees, the replace cost plus deleting
//! / inserting all descendants when the labels differ or one side is a
//! leaf, and the same computation one level down otherwise; `s` is
//! infinite when `M[i-1,j-1] > ε` (the paper's cut-off: once the prefix is
//! already that expensive, pairing more children is not tried). The
//! thesis starts its borders at 0 (`M[i,0] = M[0,j] = 0`); here they
//! accumulate the deletions and insertions, otherwise leading children
//! would be dropped for free.
//!
//! The thesis adds an `Action` table and a back-trace to return the
//! mapping. Here the cost pass runs with an explicit stack (no recursion,
//! whatever the depth) and remembers the cost of every pair it had to
//! recurse into; the back-trace then redoes the children DP of the mapped
//! pairs only, reading those costs, and records actions. Inner loops
//! allocate nothing: the DP matrices of the pairs on the stack live in one
//! buffer, reused across calls through [`Rtdm`].
//!
//! Delete and insert costs are those of *whole subtrees* and see where the
//! subtree goes ([`Context`]: the other tree's node mapped to its parent,
//! the other tree's child aligned just before it). ne-pattern matching
//! ([`super::pattern`]) needs that: a page subtree inserted right after a
//! `*` wildcard is absorbed by it for free.

use rustc_hash::FxHashMap;

use super::ted::{Cost, Costs, INFINITE, LTree, UnitCosts};

/// Where a whole subtree is deleted or inserted, seen from the other tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Context {
    /// The node of the other tree mapped to this subtree's parent (`None`
    /// for a whole tree deleted or inserted against an empty tree).
    pub parent: Option<usize>,
    /// The other tree's child of `parent` aligned just before this subtree
    /// (the last one mapped or deleted/inserted before it), if any.
    pub left: Option<usize>,
}

/// Costs for RTDM. `replace` must be 0 for two nodes with the same label
/// whenever identical subtrees are to cost 0 (they are skipped).
pub trait RtdmCosts {
    /// Cost of mapping node `i` of `t1` to node `j` of `t2` (the nodes
    /// only, not their descendants).
    fn replace(&self, t1: &LTree, i: usize, t2: &LTree, j: usize) -> Cost;

    /// Cost of deleting the whole subtree of `t1` at `i`.
    fn delete(&self, t1: &LTree, i: usize, t2: &LTree, at: Context) -> Cost;

    /// Cost of inserting the whole subtree of `t2` at `j`.
    fn insert(&self, t1: &LTree, t2: &LTree, j: usize, at: Context) -> Cost;

    /// True when pairing equal leading and trailing children (identical
    /// subtrees) of two mapped nodes is always optimal, so the children
    /// alignment may skip them. Holds when delete and insert costs ignore
    /// the [`Context`] and a subtree pair costs at least the insertions
    /// (deletions) its size difference needs, as for [`UnitCosts`] and
    /// [`Costs`]: matching the first children `x`/`x` costs 0, while any
    /// alignment that does not pays `x` once plus a pair that costs at
    /// least what it saves. Used only without a cut-off: with one, the
    /// skipped pairs would change which cells ε prunes.
    fn skip_equal_ends(&self) -> bool {
        false
    }

    /// Cost of deleting every child subtree of `i` when `i` is mapped to
    /// `j` and their descendants may not be mapped (different labels, or
    /// `j` a leaf).
    fn delete_children(&self, t1: &LTree, i: usize, t2: &LTree, j: usize) -> Cost {
        let at = Context {
            parent: Some(j),
            left: None,
        };
        t1.children(i).fold(0, |acc: Cost, c| {
            acc.saturating_add(self.delete(t1, c, t2, at))
        })
    }

    /// Cost of inserting every child subtree of `j` under `i` (the mirror
    /// of [`RtdmCosts::delete_children`]).
    fn insert_children(&self, t1: &LTree, i: usize, t2: &LTree, j: usize) -> Cost {
        let at = Context {
            parent: Some(i),
            left: None,
        };
        t2.children(j).fold(0, |acc: Cost, c| {
            acc.saturating_add(self.insert(t1, t2, c, at))
        })
    }
}

impl RtdmCosts for UnitCosts {
    fn skip_equal_ends(&self) -> bool {
        true
    }
    fn replace(&self, t1: &LTree, i: usize, t2: &LTree, j: usize) -> Cost {
        Cost::from(t1.label(i) != t2.label(j))
    }
    fn delete(&self, t1: &LTree, i: usize, _: &LTree, _: Context) -> Cost {
        t1.size(i) as Cost
    }
    fn insert(&self, _: &LTree, t2: &LTree, j: usize, _: Context) -> Cost {
        t2.size(j) as Cost
    }
    fn delete_children(&self, t1: &LTree, i: usize, _: &LTree, _: usize) -> Cost {
        t1.size(i) as Cost - 1
    }
    fn insert_children(&self, _: &LTree, _: usize, t2: &LTree, j: usize) -> Cost {
        t2.size(j) as Cost - 1
    }
}

impl RtdmCosts for Costs {
    fn skip_equal_ends(&self) -> bool {
        true
    }
    fn replace(&self, t1: &LTree, i: usize, t2: &LTree, j: usize) -> Cost {
        if t1.label(i) == t2.label(j) {
            0
        } else {
            self.rename
        }
    }
    fn delete(&self, t1: &LTree, i: usize, _: &LTree, _: Context) -> Cost {
        self.delete.saturating_mul(t1.size(i) as Cost)
    }
    fn insert(&self, _: &LTree, t2: &LTree, j: usize, _: Context) -> Cost {
        self.insert.saturating_mul(t2.size(j) as Cost)
    }
    fn delete_children(&self, t1: &LTree, i: usize, _: &LTree, _: usize) -> Cost {
        self.delete.saturating_mul(t1.size(i) as Cost - 1)
    }
    fn insert_children(&self, _: &LTree, _: usize, t2: &LTree, j: usize) -> Cost {
        self.insert.saturating_mul(t2.size(j) as Cost - 1)
    }
}

/// A whole subtree left out of the mapping, with the place it was
/// deleted from or inserted at (pre-order indices).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Aligned {
    /// Root of the deleted (in `t1`) or inserted (in `t2`) subtree.
    pub node: u32,
    /// The other tree's node mapped to its parent.
    pub parent: Option<u32>,
    /// The other tree's child aligned just before it (see [`Context`]).
    pub left: Option<u32>,
}

/// The result of [`Rtdm::mapping`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RtdmResult {
    /// Total cost of the mapping.
    pub cost: Cost,
    /// Mapped pairs `(node of t1, node of t2)`, pre-order indices, sorted.
    pub mapping: Vec<(u32, u32)>,
    /// Subtrees of `t1` deleted whole (their roots), in back-trace order.
    pub deleted: Vec<Aligned>,
    /// Subtrees of `t2` inserted whole (their roots), in back-trace order.
    pub inserted: Vec<Aligned>,
}

/// Structural similarity in `[0, 1]` from a unit-cost RTDM `cost`:
/// `1 - cost / (|t1| + |t2|)`. Identical trees give 1; with roots always
/// mapped the cost is below `|t1| + |t2|`, so different trees stay above
/// 0. (Reis et al. cluster pages at 80% similarity.)
pub fn similarity(cost: Cost, t1: &LTree, t2: &LTree) -> f64 {
    let total = (t1.len() + t2.len()) as f64;
    if total == 0.0 {
        return 1.0;
    }
    (1.0 - cost as f64 / total).clamp(0.0, 1.0)
}

/// RTDM with unit costs and no cut-off: the cost only.
pub fn rtdm_unit(t1: &LTree, t2: &LTree) -> Cost {
    Rtdm::new().distance(t1, t2, &UnitCosts)
}

/// RTDM under `costs` with cut-off `epsilon` ([`INFINITE`]: none): cost
/// and mapping. Use [`Rtdm`] to reuse buffers across many pairs.
pub fn rtdm<C: RtdmCosts>(t1: &LTree, t2: &LTree, costs: &C, epsilon: Cost) -> RtdmResult {
    Rtdm::with_epsilon(epsilon).mapping(t1, t2, costs)
}

/// One pair whose children lists are being aligned in the cost pass.
#[derive(Debug, Clone, Copy)]
struct Frame {
    p: u32,
    q: u32,
    /// Replace cost of `p` by `q`.
    base: Cost,
    /// Offsets of the children lists in the CSR arrays, and their lengths.
    k1: u32,
    m: u32,
    k2: u32,
    n: u32,
    /// Offset of this frame's `(m+1)×(n+1)` matrix in the shared buffer.
    moff: usize,
    /// Next cell to fill.
    i: u32,
    j: u32,
}

/// The children of a mapped pair that remain to be aligned after the
/// equal leading and trailing ones are skipped.
#[derive(Debug, Clone, Copy)]
struct Span {
    /// Offsets into the CSR arrays and lengths of the middle parts.
    k1: usize,
    m: usize,
    k2: usize,
    n: usize,
    /// Number of equal children skipped at the front and at the back.
    pre: usize,
    suf: usize,
}

/// What a child pair costs without aligning its own children.
enum Quick {
    Known(Cost),
    /// Same label, both inner nodes, not identical: align the children;
    /// the replace cost of the pair itself.
    Recurse(Cost),
}

const REPLACE: u8 = 0;
const DELETE: u8 = 1;
const INSERT: u8 = 2;

/// A reusable RTDM workspace: the cut-off and every buffer, so comparing
/// many pairs allocates only when a tree is larger than any seen before.
#[derive(Debug, Clone)]
pub struct Rtdm {
    epsilon: Cost,
    /// Subtree classes: `(label, children-list id) -> class`, and the
    /// children lists as cons cells `(list, class) -> list`.
    class_of: FxHashMap<u64, u32>,
    list_of: FxHashMap<u64, u32>,
    class1: Vec<u32>,
    class2: Vec<u32>,
    /// Children of every node, CSR: `kids[start[i]..start[i+1]]`.
    kids1: Vec<u32>,
    start1: Vec<u32>,
    kids2: Vec<u32>,
    start2: Vec<u32>,
    frames: Vec<Frame>,
    mat: Vec<Cost>,
    actions: Vec<u8>,
    /// Cost of every pair the cost pass aligned, for the back-trace.
    memo: FxHashMap<u64, Cost>,
}

impl Default for Rtdm {
    fn default() -> Rtdm {
        Rtdm::new()
    }
}

fn key(a: usize, b: usize) -> u64 {
    ((a as u64) << 32) | b as u64
}

impl Rtdm {
    /// A workspace without cut-off (exact restricted top-down distance).
    pub fn new() -> Rtdm {
        Rtdm::with_epsilon(INFINITE)
    }

    /// A workspace with the cut-off ε: a child pair is not tried once the
    /// alignment of the children before it costs more than `epsilon`.
    /// The result is then an upper bound of the exact RTDM cost.
    pub fn with_epsilon(epsilon: Cost) -> Rtdm {
        Rtdm {
            epsilon,
            class_of: FxHashMap::default(),
            list_of: FxHashMap::default(),
            class1: Vec::new(),
            class2: Vec::new(),
            kids1: Vec::new(),
            start1: Vec::new(),
            kids2: Vec::new(),
            start2: Vec::new(),
            frames: Vec::new(),
            mat: Vec::new(),
            actions: Vec::new(),
            memo: FxHashMap::default(),
        }
    }

    /// The cut-off.
    pub fn epsilon(&self) -> Cost {
        self.epsilon
    }

    /// The RTDM cost of `t1` to `t2` (no mapping kept).
    pub fn distance<C: RtdmCosts>(&mut self, t1: &LTree, t2: &LTree, costs: &C) -> Cost {
        if let Some(c) = whole_tree_cost(t1, t2, costs) {
            return c;
        }
        self.prepare(t1, t2);
        self.solve(t1, t2, costs, false)
    }

    /// The RTDM cost and its mapping.
    pub fn mapping<C: RtdmCosts>(&mut self, t1: &LTree, t2: &LTree, costs: &C) -> RtdmResult {
        if let Some(cost) = whole_tree_cost(t1, t2, costs) {
            let mut out = RtdmResult {
                cost,
                ..RtdmResult::default()
            };
            if !t1.is_empty() {
                out.deleted.push(Aligned {
                    node: 0,
                    parent: None,
                    left: None,
                });
            }
            if !t2.is_empty() {
                out.inserted.push(Aligned {
                    node: 0,
                    parent: None,
                    left: None,
                });
            }
            return out;
        }
        self.prepare(t1, t2);
        let cost = self.solve(t1, t2, costs, true);
        let mut out = RtdmResult {
            cost,
            ..RtdmResult::default()
        };
        self.trace(t1, t2, costs, &mut out);
        out.mapping.sort_unstable();
        self.memo.clear();
        out
    }

    /// Subtree classes and children lists of both trees.
    fn prepare(&mut self, t1: &LTree, t2: &LTree) {
        self.class_of.clear();
        self.list_of.clear();
        let (class_of, list_of) = (&mut self.class_of, &mut self.list_of);
        for (t, class, kids, start) in [
            (t1, &mut self.class1, &mut self.kids1, &mut self.start1),
            (t2, &mut self.class2, &mut self.kids2, &mut self.start2),
        ] {
            let n = t.len();
            class.clear();
            class.resize(n, 0);
            for i in (0..n).rev() {
                // List ids start at 1; 0 is the empty list.
                let mut list = 0u32;
                for c in t.children(i) {
                    let next = list_of.len() as u32 + 1;
                    list = *list_of
                        .entry((u64::from(list) << 32) | u64::from(class[c]))
                        .or_insert(next);
                }
                let next = class_of.len() as u32;
                class[i] = *class_of
                    .entry((u64::from(t.label(i)) << 32) | u64::from(list))
                    .or_insert(next);
            }
            kids.clear();
            start.clear();
            for i in 0..n {
                start.push(kids.len() as u32);
                kids.extend(t.children(i).map(|c| c as u32));
            }
            start.push(kids.len() as u32);
        }
    }

    fn quick<C: RtdmCosts>(&self, t1: &LTree, a: usize, t2: &LTree, b: usize, costs: &C) -> Quick {
        if self.class1[a] == self.class2[b] {
            return Quick::Known(0);
        }
        let r = costs.replace(t1, a, t2, b);
        if r == INFINITE {
            return Quick::Known(INFINITE);
        }
        if t1.label(a) != t2.label(b) || t1.is_leaf(a) || t2.is_leaf(b) {
            return Quick::Known(
                r.saturating_add(costs.delete_children(t1, a, t2, b))
                    .saturating_add(costs.insert_children(t1, a, t2, b)),
            );
        }
        Quick::Recurse(r)
    }

    /// The children lists of `(p, q)`, without their equal ends when the
    /// costs allow it.
    fn span<C: RtdmCosts>(&self, p: usize, q: usize, costs: &C) -> Span {
        let k1 = self.start1[p] as usize;
        let m = self.start1[p + 1] as usize - k1;
        let k2 = self.start2[q] as usize;
        let n = self.start2[q + 1] as usize - k2;
        let (mut pre, mut suf) = (0, 0);
        if costs.skip_equal_ends() && self.epsilon == INFINITE {
            let same = |x: u32, y: u32| self.class1[x as usize] == self.class2[y as usize];
            while pre < m.min(n) && same(self.kids1[k1 + pre], self.kids2[k2 + pre]) {
                pre += 1;
            }
            while suf < m.min(n) - pre
                && same(self.kids1[k1 + m - 1 - suf], self.kids2[k2 + n - 1 - suf])
            {
                suf += 1;
            }
        }
        Span {
            k1: k1 + pre,
            m: m - pre - suf,
            k2: k2 + pre,
            n: n - pre - suf,
            pre,
            suf,
        }
    }

    /// Pushes a frame for `(p, q)` with its matrix borders filled.
    fn push_frame<C: RtdmCosts>(
        &mut self,
        t1: &LTree,
        p: usize,
        t2: &LTree,
        q: usize,
        base: Cost,
        costs: &C,
    ) {
        let sp = self.span(p, q, costs);
        let left1 = (sp.pre > 0).then(|| self.kids1[sp.k1 - 1]);
        let left2 = (sp.pre > 0).then(|| self.kids2[sp.k2 - 1]);
        let moff = self.mat.len();
        let cols = sp.n + 1;
        self.mat.resize(moff + (sp.m + 1) * cols, 0);
        fill_borders(
            &mut self.mat[moff..],
            t1,
            &self.kids1[sp.k1..sp.k1 + sp.m],
            p,
            left1,
            t2,
            &self.kids2[sp.k2..sp.k2 + sp.n],
            q,
            left2,
            costs,
        );
        self.frames.push(Frame {
            p: p as u32,
            q: q as u32,
            base,
            k1: sp.k1 as u32,
            m: sp.m as u32,
            k2: sp.k2 as u32,
            n: sp.n as u32,
            moff,
            i: 1,
            j: 1,
        });
    }

    /// The cost pass, roots mapped to roots (both trees non-empty).
    fn solve<C: RtdmCosts>(&mut self, t1: &LTree, t2: &LTree, costs: &C, keep: bool) -> Cost {
        self.frames.clear();
        self.mat.clear();
        self.memo.clear();
        match self.quick(t1, 0, t2, 0, costs) {
            Quick::Known(c) => return c,
            Quick::Recurse(r) => self.push_frame(t1, 0, t2, 0, r, costs),
        }
        let eps = self.epsilon;
        let mut ret: Option<Cost> = None;
        while let Some(&f) = self.frames.last() {
            let cols = f.n as usize + 1;
            let (p, q) = (f.p as usize, f.q as usize);
            let mut descend: Option<(usize, usize, Cost)> = None;
            let (mut i, mut j) = (f.i, f.j);
            'rows: while i <= f.m {
                let a = self.kids1[(f.k1 + i - 1) as usize] as usize;
                while j <= f.n {
                    let b = self.kids2[(f.k2 + j - 1) as usize] as usize;
                    let cell = f.moff + i as usize * cols + j as usize;
                    let diag = self.mat[cell - cols - 1];
                    let s = if let Some(c) = ret.take() {
                        c
                    } else if diag > eps {
                        INFINITE
                    } else {
                        match self.quick(t1, a, t2, b, costs) {
                            Quick::Known(c) => c,
                            Quick::Recurse(r) => {
                                descend = Some((a, b, r));
                                break 'rows;
                            }
                        }
                    };
                    let d = self.mat[cell - cols].saturating_add(costs.delete(
                        t1,
                        a,
                        t2,
                        Context {
                            parent: Some(q),
                            left: Some(b),
                        },
                    ));
                    let ins = self.mat[cell - 1].saturating_add(costs.insert(
                        t1,
                        t2,
                        b,
                        Context {
                            parent: Some(p),
                            left: Some(a),
                        },
                    ));
                    self.mat[cell] = d.min(ins).min(diag.saturating_add(s));
                    j += 1;
                }
                i += 1;
                j = 1;
            }
            if let Some((a, b, r)) = descend {
                if let Some(top) = self.frames.last_mut() {
                    top.i = i;
                    top.j = j;
                }
                self.push_frame(t1, a, t2, b, r, costs);
                continue;
            }
            let cost = f
                .base
                .saturating_add(self.mat[f.moff + f.m as usize * cols + f.n as usize]);
            if keep {
                self.memo.insert(key(p, q), cost);
            }
            self.mat.truncate(f.moff);
            self.frames.pop();
            ret = Some(cost);
        }
        ret.unwrap_or(INFINITE)
    }

    /// Back-trace: from the roots down, redo the children alignment of
    /// each mapped pair with the costs remembered by [`Rtdm::solve`].
    #[expect(
        clippy::too_many_lines,
        reason = "the traceback of the RTDM recurrence, kept whole to read against docs/algorithms.md"
    )]
    fn trace<C: RtdmCosts>(&mut self, t1: &LTree, t2: &LTree, costs: &C, out: &mut RtdmResult) {
        let eps = self.epsilon;
        let mut work: Vec<(usize, usize)> = vec![(0, 0)];
        while let Some((a, b)) = work.pop() {
            if self.class1[a] == self.class2[b] {
                out.mapping
                    .extend((0..t1.size(a)).map(|k| ((a + k) as u32, (b + k) as u32)));
                continue;
            }
            out.mapping.push((a as u32, b as u32));
            if t1.label(a) != t2.label(b) || t1.is_leaf(a) || t2.is_leaf(b) {
                out.deleted.extend(t1.children(a).map(|c| Aligned {
                    node: c as u32,
                    parent: Some(b as u32),
                    left: None,
                }));
                out.inserted.extend(t2.children(b).map(|c| Aligned {
                    node: c as u32,
                    parent: Some(a as u32),
                    left: None,
                }));
                continue;
            }
            let sp = self.span(a, b, costs);
            let (k1, m, k2, n) = (sp.k1, sp.m, sp.k2, sp.n);
            // The skipped equal ends are identical pairs.
            for k in 0..sp.pre {
                let x = self.kids1[k1 - sp.pre + k] as usize;
                work.push((x, self.kids2[k2 - sp.pre + k] as usize));
            }
            for k in 0..sp.suf {
                let x = self.kids1[k1 + m + k] as usize;
                work.push((x, self.kids2[k2 + n + k] as usize));
            }
            let left01 = (sp.pre > 0).then(|| self.kids1[k1 - 1]);
            let left02 = (sp.pre > 0).then(|| self.kids2[k2 - 1]);
            let cols = n + 1;
            self.mat.clear();
            self.mat.resize((m + 1) * cols, 0);
            self.actions.clear();
            self.actions.resize((m + 1) * cols, REPLACE);
            let kids1 = &self.kids1[k1..k1 + m];
            let kids2 = &self.kids2[k2..k2 + n];
            fill_borders(
                &mut self.mat,
                t1,
                kids1,
                a,
                left01,
                t2,
                kids2,
                b,
                left02,
                costs,
            );
            for i in 1..=m {
                self.actions[i * cols] = DELETE;
            }
            for j in 1..=n {
                self.actions[j] = INSERT;
            }
            for i in 1..=m {
                let x = kids1[i - 1] as usize;
                for j in 1..=n {
                    let y = kids2[j - 1] as usize;
                    let cell = i * cols + j;
                    let diag = self.mat[cell - cols - 1];
                    let s = if diag > eps {
                        INFINITE
                    } else {
                        match self.quick(t1, x, t2, y, costs) {
                            Quick::Known(c) => c,
                            // Every such pair was aligned by the cost pass.
                            Quick::Recurse(_) => {
                                self.memo.get(&key(x, y)).copied().unwrap_or(INFINITE)
                            }
                        }
                    };
                    let s = diag.saturating_add(s);
                    let d = self.mat[cell - cols].saturating_add(costs.delete(
                        t1,
                        x,
                        t2,
                        Context {
                            parent: Some(b),
                            left: Some(y),
                        },
                    ));
                    let ins = self.mat[cell - 1].saturating_add(costs.insert(
                        t1,
                        t2,
                        y,
                        Context {
                            parent: Some(a),
                            left: Some(x),
                        },
                    ));
                    // Ties as in the thesis: insert, then delete, then
                    // replace. Traced back from the end, this aligns equal
                    // siblings from the front, so the extra ones of the
                    // longer list come last (where a pattern's `*` goes).
                    let (v, act) = if ins <= d && ins <= s {
                        (ins, INSERT)
                    } else if d <= s {
                        (d, DELETE)
                    } else {
                        (s, REPLACE)
                    };
                    self.mat[cell] = v;
                    self.actions[cell] = act;
                }
            }
            let (mut i, mut j) = (m, n);
            while i > 0 || j > 0 {
                let left1 = if i > 0 { Some(kids1[i - 1]) } else { left01 };
                let left2 = if j > 0 { Some(kids2[j - 1]) } else { left02 };
                match self.actions[i * cols + j] {
                    REPLACE => {
                        work.push((kids1[i - 1] as usize, kids2[j - 1] as usize));
                        i -= 1;
                        j -= 1;
                    }
                    DELETE => {
                        out.deleted.push(Aligned {
                            node: kids1[i - 1],
                            parent: Some(b as u32),
                            left: left2,
                        });
                        i -= 1;
                    }
                    _ => {
                        out.inserted.push(Aligned {
                            node: kids2[j - 1],
                            parent: Some(a as u32),
                            left: left1,
                        });
                        j -= 1;
                    }
                }
            }
        }
    }
}

/// The cost when one tree is empty (everything deleted or inserted),
/// `None` when both have a root.
fn whole_tree_cost<C: RtdmCosts>(t1: &LTree, t2: &LTree, costs: &C) -> Option<Cost> {
    if !t1.is_empty() && !t2.is_empty() {
        return None;
    }
    let at = Context {
        parent: None,
        left: None,
    };
    let mut c: Cost = 0;
    if !t1.is_empty() {
        c = c.saturating_add(costs.delete(t1, 0, t2, at));
    }
    if !t2.is_empty() {
        c = c.saturating_add(costs.insert(t1, t2, 0, at));
    }
    Some(c)
}

/// First row and column of a children-alignment matrix: deleting the
/// first `i` children of `p` (to the right of `left2` in the other tree),
/// inserting the first `j` children of `q` (to the right of `left1`).
#[allow(
    clippy::too_many_arguments,
    reason = "both trees, children lists, parents and left contexts are needed"
)]
fn fill_borders<C: RtdmCosts>(
    mat: &mut [Cost],
    t1: &LTree,
    kids1: &[u32],
    p: usize,
    left1: Option<u32>,
    t2: &LTree,
    kids2: &[u32],
    q: usize,
    left2: Option<u32>,
    costs: &C,
) {
    let cols = kids2.len() + 1;
    mat[0] = 0;
    let at = Context {
        parent: Some(q),
        left: left2.map(|l| l as usize),
    };
    for (i, &x) in kids1.iter().enumerate() {
        mat[(i + 1) * cols] = mat[i * cols].saturating_add(costs.delete(t1, x as usize, t2, at));
    }
    let at = Context {
        parent: Some(p),
        left: left1.map(|l| l as usize),
    };
    for (j, &y) in kids2.iter().enumerate() {
        mat[j + 1] = mat[j].saturating_add(costs.insert(t1, t2, y as usize, at));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::ted::{Labels, ted_unit};
    use proptest::prelude::*;

    fn tree(s: &str, labels: &mut Labels) -> LTree {
        LTree::from_bracket(s, labels).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn pair(a: &str, b: &str) -> (LTree, LTree) {
        let mut l = Labels::new();
        (tree(a, &mut l), tree(b, &mut l))
    }

    fn map(a: &str, b: &str) -> RtdmResult {
        let (t1, t2) = pair(a, b);
        rtdm(&t1, &t2, &UnitCosts, INFINITE)
    }

    #[test]
    fn identical_trees_cost_nothing_and_map_every_node() {
        let r = map("{a{b{c}}{d}}", "{a{b{c}}{d}}");
        assert_eq!(r.cost, 0);
        assert_eq!(r.mapping, [(0, 0), (1, 1), (2, 2), (3, 3)]);
        assert!(r.deleted.is_empty() && r.inserted.is_empty());
    }

    #[test]
    fn a_leaf_rename_maps_the_pair() {
        let r = map("{a{b}{c}}", "{a{b}{d}}");
        assert_eq!(r.cost, 1);
        assert_eq!(r.mapping, [(0, 0), (1, 1), (2, 2)]);
    }

    #[test]
    fn an_inserted_subtree_costs_its_size_and_says_where_it_went() {
        let r = map("{a{b}{c}}", "{a{b}{x{y}}{c}}");
        assert_eq!(r.cost, 2);
        assert_eq!(r.mapping, [(0, 0), (1, 1), (2, 4)]);
        assert_eq!(
            r.inserted,
            [Aligned {
                node: 2,
                parent: Some(0),
                left: Some(1)
            }]
        );
        assert!(r.deleted.is_empty());
    }

    #[test]
    fn nothing_is_mapped_below_a_label_mismatch() {
        // b -> e renamed (1), its children deleted (2) and e's inserted
        // (2): 5, cheaper than deleting and inserting both subtrees (6).
        // The exact distance maps x and y through the rename: 1.
        let (t1, t2) = pair("{a{b{x}{y}}{c}}", "{a{e{x}{y}}{c}}");
        let r = rtdm(&t1, &t2, &UnitCosts, INFINITE);
        assert_eq!(r.cost, 5);
        assert_eq!(r.mapping, [(0, 0), (1, 1), (4, 4)]);
        assert_eq!(ted_unit(&t1, &t2), 1);
        // Different roots: rename plus everything below.
        assert_eq!(map("{a{b}}", "{x{b}}").cost, 3);
    }

    #[test]
    fn the_cut_off_stops_pairing_children_after_an_expensive_prefix() {
        // Children a b c against x b c. Without a cut-off only a -> x is
        // renamed (1). With ε = 0, once M[1,1] = 1 no later pair may be
        // replaced, so b c are deleted and inserted: 1 + 4 = 5. With
        // ε = 1 the prefix cost 1 is still allowed.
        let (t1, t2) = pair("{r{a}{b}{c}}", "{r{x}{b}{c}}");
        assert_eq!(rtdm(&t1, &t2, &UnitCosts, INFINITE).cost, 1);
        assert_eq!(rtdm(&t1, &t2, &UnitCosts, 0).cost, 5);
        assert_eq!(Rtdm::with_epsilon(0).distance(&t1, &t2, &UnitCosts), 5);
        assert_eq!(rtdm(&t1, &t2, &UnitCosts, 1).cost, 1);
        let r = rtdm(&t1, &t2, &UnitCosts, 0);
        assert_eq!(r.mapping, [(0, 0), (1, 1)]);
        assert_eq!(r.deleted.len(), 2);
        assert_eq!(r.inserted.len(), 2);
    }

    #[test]
    fn costs_are_pluggable() {
        let (t1, t2) = pair("{a{b}{c}}", "{a{x}{c}}");
        let dear = Costs {
            delete: 1,
            insert: 1,
            rename: 5,
        };
        let r = rtdm(&t1, &t2, &dear, INFINITE);
        assert_eq!(r.cost, 2);
        assert_eq!(r.mapping, [(0, 0), (2, 2)]);

        // A context-aware model: inserting right after a `*` is free.
        struct Star(u32);
        impl RtdmCosts for Star {
            fn replace(&self, t1: &LTree, i: usize, t2: &LTree, j: usize) -> Cost {
                if t1.label(i) == t2.label(j) {
                    0
                } else {
                    INFINITE
                }
            }
            fn delete(&self, t1: &LTree, i: usize, _: &LTree, _: Context) -> Cost {
                if t1.label(i) == self.0 { 0 } else { INFINITE }
            }
            fn insert(&self, t1: &LTree, _: &LTree, _: usize, at: Context) -> Cost {
                match at.left {
                    Some(l) if t1.label(l) == self.0 => 0,
                    _ => INFINITE,
                }
            }
        }
        let mut l = Labels::new();
        let p = tree("{a{h}{*}{f}}", &mut l);
        let star = Star(l.intern("*"));
        let page = tree("{a{h}{p}{p}{p}{f}}", &mut l);
        let r = rtdm(&p, &page, &star, INFINITE);
        assert_eq!(r.cost, 0);
        assert_eq!(r.mapping, [(0, 0), (1, 1), (3, 5)]);
        let mut absorbed: Vec<_> = r.inserted.iter().map(|x| (x.node, x.left)).collect();
        absorbed.sort_unstable();
        assert_eq!(absorbed, [(2, Some(2)), (3, Some(2)), (4, Some(2))]);
        // Nothing after the star: forbidden.
        let page = tree("{a{p}{h}{f}}", &mut l);
        assert_eq!(Rtdm::new().distance(&p, &page, &star), INFINITE);
    }

    #[test]
    fn empty_trees_cost_everything() {
        let mut l = Labels::new();
        let t = tree("{a{b}{c}}", &mut l);
        let e = LTree::default();
        assert_eq!(rtdm_unit(&t, &e), 3);
        assert_eq!(rtdm_unit(&e, &t), 3);
        assert_eq!(rtdm_unit(&e, &e), 0);
        let r = rtdm(&t, &e, &UnitCosts, INFINITE);
        assert!(r.mapping.is_empty());
        assert_eq!(r.deleted.len(), 1);
    }

    #[test]
    fn similarity_is_one_for_equal_trees_and_falls_with_the_cost() {
        let (t1, t2) = pair("{a{b}{c}}", "{a{b}{d}}");
        assert_eq!(similarity(0, &t1, &t1), 1.0);
        let s = similarity(rtdm_unit(&t1, &t2), &t1, &t2);
        assert!((s - (1.0 - 1.0 / 6.0)).abs() < 1e-12);
    }

    #[test]
    fn a_workspace_is_reusable_across_pairs() {
        let mut l = Labels::new();
        let a = tree("{a{b{c}}{d}}", &mut l);
        let b = tree("{a{b}{d}{e}}", &mut l);
        let c = tree("{z}", &mut l);
        let mut w = Rtdm::new();
        for _ in 0..2 {
            assert_eq!(w.distance(&a, &b, &UnitCosts), 2);
            assert_eq!(w.mapping(&a, &c, &UnitCosts).cost, 4);
            assert_eq!(
                w.mapping(&a, &b, &UnitCosts).mapping,
                [(0, 0), (1, 1), (3, 2)]
            );
        }
    }

    #[test]
    fn deep_trees_need_no_recursion() {
        // 100,000 nested nodes, differing at the bottom.
        let depth = 100_000u32;
        let a = LTree::from_depths((0..depth).map(|d| (0, d))).unwrap_or_default();
        let b = LTree::from_depths((0..depth).map(|d| (u32::from(d + 1 == depth), d)))
            .unwrap_or_default();
        let r = rtdm(&a, &b, &UnitCosts, INFINITE);
        assert_eq!(r.cost, 1);
        assert_eq!(r.mapping.len(), depth as usize);
    }

    // ---- properties ----

    /// The straightforward recursive definition, for comparison.
    fn naive(t1: &LTree, a: usize, t2: &LTree, b: usize) -> Cost {
        if t1.label(a) != t2.label(b) {
            return 1 + (t1.size(a) - 1 + t2.size(b) - 1) as Cost;
        }
        let k1: Vec<usize> = t1.children(a).collect();
        let k2: Vec<usize> = t2.children(b).collect();
        let cols = k2.len() + 1;
        let mut m = vec![0 as Cost; (k1.len() + 1) * cols];
        for i in 0..=k1.len() {
            for j in 0..=k2.len() {
                let mut v = INFINITE;
                if i > 0 {
                    v = v.min(m[(i - 1) * cols + j] + t1.size(k1[i - 1]) as Cost);
                }
                if j > 0 {
                    v = v.min(m[i * cols + j - 1] + t2.size(k2[j - 1]) as Cost);
                }
                if i > 0 && j > 0 {
                    v = v.min(m[(i - 1) * cols + j - 1] + naive(t1, k1[i - 1], t2, k2[j - 1]));
                }
                m[i * cols + j] = if i == 0 && j == 0 { 0 } else { v };
            }
        }
        m[k1.len() * cols + k2.len()]
    }

    /// A random tree: labels below `alphabet`, each node at most one
    /// level below the one before it.
    fn arb_tree(max: usize, alphabet: u32) -> impl Strategy<Value = LTree> {
        prop::collection::vec((0..alphabet, 0u32..4), 1..max).prop_map(|v| {
            let mut prev = 0u32;
            let nodes: Vec<(u32, u32)> = v
                .iter()
                .enumerate()
                .map(|(k, &(label, step))| {
                    let depth = if k == 0 { 0 } else { 1 + step % (prev + 1) };
                    prev = depth;
                    (label, depth)
                })
                .collect();
            LTree::from_depths(nodes).unwrap_or_default()
        })
    }

    fn check_restricted_top_down(t1: &LTree, t2: &LTree, r: &RtdmResult) {
        let m = &r.mapping;
        let to2: FxHashMap<u32, u32> = m.iter().copied().collect();
        assert_eq!(to2.len(), m.len(), "a t1 node mapped twice");
        let mut seen2: Vec<u32> = m.iter().map(|&(_, b)| b).collect();
        seen2.sort_unstable();
        seen2.dedup();
        assert_eq!(seen2.len(), m.len(), "a t2 node mapped twice");
        assert_eq!(m.first(), Some(&(0, 0)), "roots mapped");
        for w in m.windows(2) {
            assert!(w[0].0 < w[1].0 && w[0].1 < w[1].1, "order kept: {m:?}");
        }
        for &(a, b) in m {
            if a != 0 {
                let pa = t1.parent(a as usize).unwrap_or(usize::MAX) as u32;
                let pb = t2.parent(b as usize).unwrap_or(usize::MAX) as u32;
                assert_eq!(
                    to2.get(&pa),
                    Some(&pb),
                    "parents of {a}->{b} mapped to each other"
                );
            }
            if t1.label(a as usize) != t2.label(b as usize) {
                for &(x, y) in m {
                    let below1 = x > a && (x as usize) < t1.end(a as usize);
                    let below2 = y > b && (y as usize) < t2.end(b as usize);
                    assert!(!below1 && !below2, "{x}->{y} below mismatch {a}->{b}");
                }
            }
        }
        // The cost is the mapping's cost.
        let renames = m
            .iter()
            .filter(|&&(a, b)| t1.label(a as usize) != t2.label(b as usize))
            .count();
        let cost = renames + (t1.len() - m.len()) + (t2.len() - m.len());
        assert_eq!(r.cost, cost as Cost);
        // Deleted and inserted subtrees cover exactly the unmapped nodes.
        let deleted: usize = r.deleted.iter().map(|d| t1.size(d.node as usize)).sum();
        let inserted: usize = r.inserted.iter().map(|d| t2.size(d.node as usize)).sum();
        assert_eq!(deleted, t1.len() - m.len());
        assert_eq!(inserted, t2.len() - m.len());
    }

    /// `t` (distinct labels) edited top-down: each op relabels an original
    /// leaf to a fresh label, and, depending on `grow`, either inserts a
    /// fresh leaf under an original inner node or deletes an original
    /// leaf. Not both: with insertions *and* deletions the exact distance
    /// can be cheaper than any top-down mapping (delete an inner node
    /// emptied of its leaves, then rename its former siblings), while with
    /// one kind only, every fresh label of the result (or every vanished
    /// label of `t`) needs its own operation, so the exact distance is the
    /// number of edits, which the top-down mapping reaches too.
    fn top_down_edits(t: &LTree, grow: bool, ops: &[(bool, usize, usize)]) -> LTree {
        // Children lists by node id; node ids = original labels, fresh
        // nodes get ids (and labels) from 1000 up.
        let n = t.len();
        let mut kids: Vec<Vec<usize>> = (0..n).map(|i| t.children(i).collect()).collect();
        let mut label: Vec<u32> = (0..n).map(|i| t.label(i)).collect();
        let mut alive = vec![true; n];
        let orig_leaves: Vec<usize> = (1..n).filter(|&i| t.is_leaf(i)).collect();
        let inner: Vec<usize> = (0..n).filter(|&i| !t.is_leaf(i)).collect();
        let mut edited = vec![false; n];
        for (k, &(relabel, pick, pos)) in ops.iter().enumerate() {
            let fresh = 1000 + k as u32;
            let free: Vec<usize> = orig_leaves
                .iter()
                .copied()
                .filter(|&i| alive[i] && !edited[i])
                .collect();
            if relabel && !free.is_empty() {
                let i = free[pick % free.len()];
                label[i] = fresh;
                edited[i] = true;
            } else if grow && !inner.is_empty() {
                let p = inner[pick % inner.len()];
                let at = pos % (kids[p].len() + 1);
                kids[p].insert(at, label.len());
                kids.push(Vec::new());
                label.push(fresh);
                alive.push(true);
                edited.push(true);
            } else if !grow && !free.is_empty() {
                let i = free[pick % free.len()];
                alive[i] = false;
                for list in kids.iter_mut() {
                    list.retain(|&c| c != i);
                }
            }
        }
        let mut out = Vec::new();
        let mut stack = vec![(0usize, 0u32)];
        while let Some((i, d)) = stack.pop() {
            out.push((label[i], d));
            stack.extend(kids[i].iter().rev().map(|&c| (c, d + 1)));
        }
        LTree::from_depths(out).unwrap_or_default()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 400, .. ProptestConfig::default() })]

        #[test]
        fn mapping_is_restricted_top_down_and_cost_is_its_cost(
            t1 in arb_tree(14, 3), t2 in arb_tree(14, 3)
        ) {
            let r = rtdm(&t1, &t2, &UnitCosts, INFINITE);
            check_restricted_top_down(&t1, &t2, &r);
            prop_assert_eq!(r.cost, naive(&t1, 0, &t2, 0));
            prop_assert_eq!(rtdm_unit(&t2, &t1), r.cost);
        }

        #[test]
        fn rtdm_is_never_below_the_exact_distance(
            t1 in arb_tree(12, 3), t2 in arb_tree(12, 3)
        ) {
            prop_assert!(rtdm_unit(&t1, &t2) >= ted_unit(&t1, &t2));
        }

        #[test]
        fn the_cut_off_only_raises_the_cost(
            t1 in arb_tree(12, 3), t2 in arb_tree(12, 3), eps in 0u64..4
        ) {
            let exact = rtdm_unit(&t1, &t2);
            let cut = rtdm(&t1, &t2, &UnitCosts, eps);
            prop_assert!(cut.cost >= exact);
            check_restricted_top_down(&t1, &t2, &cut);
        }

        #[test]
        fn rtdm_equals_the_exact_distance_for_top_down_edits(
            t in arb_tree(16, 1),
            grow in any::<bool>(),
            ops in prop::collection::vec((any::<bool>(), 0usize..64, 0usize..8), 0..6)
        ) {
            // Distinct labels: relabel the random tree 0, 1, 2, ...
            let t = LTree::from_depths((0..t.len()).map(|i| (i as u32, t.depth(i))))
                .unwrap_or_default();
            let u = top_down_edits(&t, grow, &ops);
            let edits = t.len().abs_diff(u.len())
                + ops.iter().filter(|o| o.0).count().min(t.len());
            prop_assert!(rtdm_unit(&t, &u) <= edits as Cost);
            prop_assert_eq!(rtdm_unit(&t, &u), ted_unit(&t, &u));
            prop_assert_eq!(rtdm_unit(&u, &t), ted_unit(&u, &t));
        }
    }
}
