//! Structural similarity of two token sequences by their longest common
//! subsequence, plain and depth-weighted (docs/algorithms.md, "Similarity"; Qiu's thesis, §4.1
//! and §4.2.4); and the alignment itself, for template building.
//!
//! Takes token slices ([`super::seq::Sequence::tokens`]) and, for the
//! weighted measure, one weight per token ([`weights`]); gives
//!
//! - `sim = |lcs| / max(|S1|, |S2|)` ([`lcs_similarity`]);
//! - `sim = elcs / max(Σf(S1), Σf(S2))` ([`elcs_similarity`]), where a
//!   matched token adds `f(depth)` instead of 1 (the thesis's formula 4-2);
//! - the matched index pairs of a maximal weighted common subsequence in
//!   linear space (Hirschberg, [`align`]).
//!
//! # The weight f(depth)
//!
//! `f(d) = 1 / (1 + d)`, in fixed point ([`WEIGHT_SCALE`]` / (1 + d)`).
//! Qiu's thesis only asks for a function that decreases with depth (shallow
//! nodes are more likely template). A geometric `2^-d` decays far too
//! fast for real pages, whose elements sit at depths 5 to 30: everything
//! below depth ~10 would weigh less than a thousandth of the root, and the
//! similarity would be decided by the few generic wrappers at the top
//! (`body > div > div`), which most sites share. The harmonic weight still
//! ranks a depth-2 layout node 5 times above a depth-14 item, but the bulk
//! of the page keeps a say. `examples/cluster_purity.rs` prints the
//! clustering quality of the three choices (1, 1/(1+d), 2^-d) side by side
//! on the corpus.
//!
//! Weights are integers so that scores are exact and identical across
//! machines: with [`WEIGHT_SCALE`] = 4096 and sequences capped at
//! [`super::seq::MAX_TOKENS`] (2^20) every sum fits in a `u32` (only the
//! root has depth 0; everything else weighs at most 2048).
//!
//! # Cost
//!
//! The dynamic programme is O(|S1|·|S2|) time and O(min(|S1|, |S2|))
//! memory: one row plus the running diagonal, which is the thesis's two
//! rows folded into one. Common prefixes and suffixes (long in two
//! versions of one page) are matched first in linear time. The row loop
//! works on four rows of the table at once: each cell depends on its left
//! neighbour, so one row at a time is a chain of dependent `max`es; four
//! interleaved chains keep the processor's ALUs busy (about twice the
//! speed, see `benches/similarity.rs`). The plain LCS also has a
//! bit-parallel form ([`lcs_len_bits`], Hyyrö 2004: 64 cells per word
//! operation), which the weighted measure cannot use.
//!
//! The recurrence takes a match whenever the tokens are equal, which is
//! optimal only because a weight is a function of the token (the token
//! encodes the depth): callers must keep it so.

use std::cell::RefCell;

/// Fixed-point scale of the weights: `f(0) = WEIGHT_SCALE`.
pub const WEIGHT_SCALE: u32 = 4096;

/// `f(depth)`: the weight of a token at `depth`, `WEIGHT_SCALE / (1 + d)`.
pub fn weight(depth: u32) -> u32 {
    WEIGHT_SCALE / depth.saturating_add(1)
}

/// The weights of a sequence's tokens from their depths.
pub fn weights(depths: &[u32]) -> Vec<u32> {
    depths.iter().map(|&d| weight(d)).collect()
}

/// Sum of weights.
pub fn total(weights: &[u32]) -> u64 {
    weights.iter().map(|&w| w as u64).sum()
}

thread_local! {
    /// The DP row, reused across calls on one thread.
    static ROW: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
}

/// Length of a longest common subsequence (plain dynamic programme).
pub fn lcs_len(a: &[u32], b: &[u32]) -> u32 {
    let (p, s) = trim(a, b);
    let (a, b) = (&a[p..a.len() - s], &b[p..b.len() - s]);
    let (a, b) = if a.len() < b.len() { (b, a) } else { (a, b) };
    let ones = vec![1u32; a.len()];
    (p + s) as u32 + dp_score(a, &ones, b)
}

/// `|lcs| / max(|S1|, |S2|)` (1 for two empty sequences).
pub fn lcs_similarity(a: &[u32], b: &[u32]) -> f64 {
    let max = a.len().max(b.len());
    if max == 0 {
        return 1.0;
    }
    lcs_len_bits(a, b) as f64 / max as f64
}

/// Length of a longest common subsequence, bit-parallel (Hyyrö 2004,
/// after Allison–Dix and Crochemore et al.): the DP column differences are
/// kept as a bit vector over `b` and updated for each token of `a` with
/// one add, and, or, sub per 64 cells. Same result as [`lcs_len`].
pub fn lcs_len_bits(a: &[u32], b: &[u32]) -> u32 {
    let (p, s) = trim(a, b);
    let (a, b) = (&a[p..a.len() - s], &b[p..b.len() - s]);
    if a.is_empty() || b.is_empty() {
        return (p + s) as u32;
    }
    let (a, b) = if b.len() > a.len() { (b, a) } else { (a, b) };
    let words = b.len().div_ceil(64);
    // Match masks of b, one per distinct token, found by binary search.
    let mut keys: Vec<u32> = b.to_vec();
    keys.sort_unstable();
    keys.dedup();
    let mut masks = vec![0u64; keys.len() * words];
    for (j, t) in b.iter().enumerate() {
        let k = keys.binary_search(t).unwrap_or(0);
        masks[k * words + j / 64] |= 1 << (j % 64);
    }
    let mut v = vec![u64::MAX; words];
    for t in a {
        let Ok(k) = keys.binary_search(t) else {
            continue;
        };
        let m = &masks[k * words..(k + 1) * words];
        let mut carry = 0u64;
        let mut borrow = 0u64;
        for (vw, &mw) in v.iter_mut().zip(m) {
            let x = *vw;
            let u = x & mw;
            let (s1, c1) = x.overflowing_add(u);
            let (s2, c2) = s1.overflowing_add(carry);
            carry = (c1 | c2) as u64;
            let (d1, b1) = x.overflowing_sub(u);
            let (d2, b2) = d1.overflowing_sub(borrow);
            borrow = (b1 | b2) as u64;
            *vw = s2 | d2;
        }
    }
    let mut zeros = 0u32;
    for (w, x) in v.iter().enumerate() {
        let bits = if w + 1 == words && b.len() % 64 != 0 {
            b.len() % 64
        } else {
            64
        };
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        zeros += (!x & mask).count_ones();
    }
    (p + s) as u32 + zeros
}

/// The weighted LCS score `elcs`: the largest total weight of a common
/// subsequence, a match of `a[i]` adding `wa[i]` (`wa`, `wb`: the weights
/// of `a` and `b`, functions of the token).
pub fn elcs(a: &[u32], wa: &[u32], b: &[u32], wb: &[u32]) -> u64 {
    let (p, s) = trim(a, b);
    let fixed: u64 = total(&wa[..p]) + total(&wa[a.len() - s..]);
    let (a, wa) = (&a[p..a.len() - s], &wa[p..wa.len() - s]);
    let (b, wb) = (&b[p..b.len() - s], &wb[p..wb.len() - s]);
    // The row runs over the shorter sequence.
    let score = if b.len() <= a.len() {
        dp_score(a, wa, b)
    } else {
        dp_score(b, wb, a)
    };
    fixed + score as u64
}

/// `elcs / max(Σf(S1), Σf(S2))` (1 for two empty sequences).
pub fn elcs_similarity(a: &[u32], wa: &[u32], b: &[u32], wb: &[u32]) -> f64 {
    let max = total(wa).max(total(wb));
    if max == 0 {
        return 1.0;
    }
    elcs(a, wa, b, wb) as f64 / max as f64
}

/// Lengths of the common prefix and of the common suffix of what is left.
fn trim(a: &[u32], b: &[u32]) -> (usize, usize) {
    let p = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let s = a[p..]
        .iter()
        .rev()
        .zip(b[p..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    (p, s)
}

/// The last cell of the weighted DP table of `a` (rows, weights `wa`)
/// against `b` (the row).
fn dp_score(a: &[u32], wa: &[u32], b: &[u32]) -> u32 {
    if a.is_empty() || b.is_empty() {
        return 0;
    }
    ROW.with(|row| {
        let mut row = row.borrow_mut();
        row.clear();
        row.resize(b.len(), 0);
        dp_rows(a, wa, b, &mut row);
        row[b.len() - 1]
    })
}

/// Runs the DP rows of `a` over `row` (which holds the row above, all
/// zeros for the first), four rows per sweep.
fn dp_rows(a: &[u32], wa: &[u32], b: &[u32], row: &mut [u32]) {
    let mut i = 0;
    while i + 4 <= a.len() {
        let (x0, x1, x2, x3) = (a[i], a[i + 1], a[i + 2], a[i + 3]);
        let (w0, w1, w2, w3) = (wa[i], wa[i + 1], wa[i + 2], wa[i + 3]);
        // l_k: the cell left of the current one in row i+k; d0: the cell
        // above-left of row i (row i-1, previous column).
        let (mut l0, mut l1, mut l2, mut l3, mut d0) = (0u32, 0u32, 0u32, 0u32, 0u32);
        for (cell, &y) in row.iter_mut().zip(b) {
            let up = *cell;
            let v0 = if y == x0 { d0 + w0 } else { up.max(l0) };
            let v1 = if y == x1 { l0 + w1 } else { v0.max(l1) };
            let v2 = if y == x2 { l1 + w2 } else { v1.max(l2) };
            let v3 = if y == x3 { l2 + w3 } else { v2.max(l3) };
            d0 = up;
            l0 = v0;
            l1 = v1;
            l2 = v2;
            l3 = v3;
            *cell = v3;
        }
        i += 4;
    }
    for (&x, &w) in a[i..].iter().zip(&wa[i..]) {
        let (mut left, mut diag) = (0u32, 0u32);
        for (cell, &y) in row.iter_mut().zip(b) {
            let up = *cell;
            let v = if y == x { diag + w } else { up.max(left) };
            diag = up;
            left = v;
            *cell = v;
        }
    }
}

/// Below this many table cells [`align`] solves a sub-problem with the
/// full table and a traceback instead of splitting it further.
const FULL_TABLE_CELLS: usize = 1 << 14;

/// A maximal weighted common subsequence of `a` and `b` as matched index
/// pairs `(i, j)` (`a[i] == b[j]`, both increasing), in linear space:
/// Hirschberg's divide and conquer (the score of the top half of `a`
/// against every prefix of `b`, of the bottom half against every suffix,
/// split `b` where their sum is largest, recurse), which does about twice
/// the work of [`elcs`]. Its total weight equals [`elcs`]`(a, wa, b, _)`.
pub fn align(a: &[u32], wa: &[u32], b: &[u32]) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let mut fwd = Vec::new();
    let mut bwd = Vec::new();
    hirschberg(a, wa, b, 0, 0, &mut out, &mut fwd, &mut bwd);
    out
}

#[allow(
    clippy::too_many_arguments,
    reason = "recursion state: inputs, offsets and two reused buffers"
)]
fn hirschberg(
    a: &[u32],
    wa: &[u32],
    b: &[u32],
    ao: usize,
    bo: usize,
    out: &mut Vec<(u32, u32)>,
    fwd: &mut Vec<u32>,
    bwd: &mut Vec<u32>,
) {
    let (p, s) = trim(a, b);
    out.extend((0..p).map(|k| ((ao + k) as u32, (bo + k) as u32)));
    let (a, wa, b) = (&a[p..a.len() - s], &wa[p..wa.len() - s], &b[p..b.len() - s]);
    let (ao2, bo2) = (ao + p, bo + p);
    let suffix = |out: &mut Vec<(u32, u32)>| {
        out.extend((0..s).map(|k| ((ao2 + a.len() + k) as u32, (bo2 + b.len() + k) as u32)));
    };
    if a.is_empty() || b.is_empty() {
        suffix(out);
        return;
    }
    if a.len() == 1 {
        if let Some(j) = b.iter().position(|&y| y == a[0]) {
            out.push((ao2 as u32, (bo2 + j) as u32));
        }
        suffix(out);
        return;
    }
    if a.len() * b.len() <= FULL_TABLE_CELLS {
        full_table(a, wa, b, ao2, bo2, out);
        suffix(out);
        return;
    }
    let mid = a.len() / 2;
    let m = b.len();
    // fwd[j]: score of a[..mid] against b[..j].
    fwd.clear();
    fwd.resize(m + 1, 0);
    dp_rows(&a[..mid], &wa[..mid], b, &mut fwd[1..]);
    // bwd[j]: score of a[mid..] against b[m - j..] (both reversed).
    let ra: Vec<u32> = a[mid..].iter().rev().copied().collect();
    let rw: Vec<u32> = wa[mid..].iter().rev().copied().collect();
    let rb: Vec<u32> = b.iter().rev().copied().collect();
    bwd.clear();
    bwd.resize(m + 1, 0);
    dp_rows(&ra, &rw, &rb, &mut bwd[1..]);
    let mut best = (0u64, 0usize);
    for k in 0..=m {
        let v = fwd[k] as u64 + bwd[m - k] as u64;
        if v > best.0 || k == 0 {
            best = (v, k);
        }
    }
    let k = best.1;
    hirschberg(&a[..mid], &wa[..mid], &b[..k], ao2, bo2, out, fwd, bwd);
    hirschberg(
        &a[mid..],
        &wa[mid..],
        &b[k..],
        ao2 + mid,
        bo2 + k,
        out,
        fwd,
        bwd,
    );
    suffix(out);
}

/// Full DP table with traceback, for small sub-problems.
fn full_table(a: &[u32], wa: &[u32], b: &[u32], ao: usize, bo: usize, out: &mut Vec<(u32, u32)>) {
    let (n, m) = (a.len(), b.len());
    let w = m + 1;
    let mut t = vec![0u32; (n + 1) * w];
    for i in 1..=n {
        for j in 1..=m {
            t[i * w + j] = if a[i - 1] == b[j - 1] {
                t[(i - 1) * w + j - 1] + wa[i - 1]
            } else {
                t[(i - 1) * w + j].max(t[i * w + j - 1])
            };
        }
    }
    let start = out.len();
    let (mut i, mut j) = (n, m);
    while i > 0 && j > 0 {
        if a[i - 1] == b[j - 1] {
            out.push(((ao + i - 1) as u32, (bo + j - 1) as u32));
            i -= 1;
            j -= 1;
        } else if t[(i - 1) * w + j] >= t[i * w + j - 1] {
            i -= 1;
        } else {
            j -= 1;
        }
    }
    out[start..].reverse();
}

/// A token histogram with weights, for a cheap exact upper bound of the
/// weighted similarity: a common subsequence uses each token at most
/// `min(count in S1, count in S2)` times, so
/// `elcs <= Σ_t min(c1(t), c2(t)) · f(t)` (Buttler's weighted tag
/// similarity, docs/algorithms.md, "Cheap similarity measures", is this bound normalised).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Histogram {
    /// `(token, count, weight)` sorted by token.
    pub entries: Vec<(u32, u32, u32)>,
    /// Σ f over the sequence.
    pub total: u64,
}

impl Histogram {
    /// The histogram of `tokens` with their `weights`.
    pub fn new(tokens: &[u32], weights: &[u32]) -> Histogram {
        let mut pairs: Vec<(u32, u32)> = tokens
            .iter()
            .copied()
            .zip(weights.iter().copied())
            .collect();
        pairs.sort_unstable();
        let mut entries: Vec<(u32, u32, u32)> = Vec::new();
        for (t, w) in pairs {
            match entries.last_mut() {
                Some(e) if e.0 == t => e.1 += 1,
                _ => entries.push((t, 1, w)),
            }
        }
        Histogram {
            entries,
            total: total(weights),
        }
    }

    /// An upper bound of [`elcs_similarity`] of the two sequences.
    pub fn similarity_bound(&self, other: &Histogram) -> f64 {
        let max = self.total.max(other.total);
        if max == 0 {
            return 1.0;
        }
        let (mut i, mut j, mut common) = (0, 0, 0u64);
        let (x, y) = (&self.entries, &other.entries);
        while i < x.len() && j < y.len() {
            match x[i].0.cmp(&y[j].0) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    common += x[i].1.min(y[j].1) as u64 * x[i].2 as u64;
                    i += 1;
                    j += 1;
                }
            }
        }
        common as f64 / max as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Full-matrix DP taking the best of all three moves (the textbook
    /// recurrence, no assumption on the weights).
    fn naive(a: &[u32], wa: &[u32], b: &[u32]) -> u64 {
        let (n, m) = (a.len(), b.len());
        let mut t = vec![vec![0u64; m + 1]; n + 1];
        for i in 1..=n {
            for j in 1..=m {
                let mut v = t[i - 1][j].max(t[i][j - 1]);
                if a[i - 1] == b[j - 1] {
                    v = v.max(t[i - 1][j - 1] + wa[i - 1] as u64);
                }
                t[i][j] = v;
            }
        }
        t[n][m]
    }

    /// Weights as a function of the token, as in real use.
    fn w_of(t: &[u32]) -> Vec<u32> {
        t.iter().map(|&x| weight(x % 7)).collect()
    }

    #[test]
    fn identical_is_one_disjoint_is_zero() {
        let a = [1, 2, 3, 2, 4];
        let wa = w_of(&a);
        assert_eq!(elcs_similarity(&a, &wa, &a, &wa), 1.0);
        assert_eq!(lcs_similarity(&a, &a), 1.0);
        let b = [5, 6, 7];
        let wb = w_of(&b);
        assert_eq!(elcs_similarity(&a, &wa, &b, &wb), 0.0);
        assert_eq!(lcs_similarity(&a, &b), 0.0);
        assert_eq!(elcs_similarity(&[], &[], &[], &[]), 1.0);
        assert_eq!(elcs_similarity(&a, &wa, &[], &[]), 0.0);
    }

    #[test]
    fn hand_computed_cases() {
        // Qiu's thesis, §5.2: lcs(aorzbcldxe, athubeatcdlxe) = abcdxe or abclxe
        // (6: `l` and `d` come in opposite orders).
        let s1: Vec<u32> = "aorzbcldxe".bytes().map(u32::from).collect();
        let s2: Vec<u32> = "athubeatcdlxe".bytes().map(u32::from).collect();
        assert_eq!(lcs_len(&s1, &s2), 6);
        assert_eq!(lcs_len_bits(&s1, &s2), 6);
        assert!((lcs_similarity(&s1, &s2) - 6.0 / 13.0).abs() < 1e-12);
        // Weighted: <body0><div1><p2><p2> vs <body0><p2><div1><p2>:
        // the shallow div outweighs a p, so elcs keeps body, div, p:
        // 4096 + 2048 + 1365 = 7509 (plain LCS would say 3 either way).
        let a = [10, 11, 12, 12];
        let da = [0, 1, 2, 2];
        let b = [10, 12, 11, 12];
        let db = [0, 2, 1, 2];
        let (wa, wb) = (weights(&da), weights(&db));
        assert_eq!(wa, [4096, 2048, 1365, 1365]);
        assert_eq!(elcs(&a, &wa, &b, &wb), 7509);
        let total = 4096 + 2048 + 2 * 1365;
        assert!((elcs_similarity(&a, &wa, &b, &wb) - 7509.0 / total as f64).abs() < 1e-12);
        let pairs = align(&a, &wa, &b);
        assert_eq!(pairs, [(0, 0), (1, 2), (3, 3)]);
    }

    #[test]
    fn long_sequences_take_the_hirschberg_path() {
        // Enough cells to split several times.
        let a: Vec<u32> = (0..700u32).map(|i| (i * 7919) % 13).collect();
        let b: Vec<u32> = (0..500u32).map(|i| (i * 104_729) % 11).collect();
        let (wa, wb) = (w_of(&a), w_of(&b));
        let pairs = align(&a, &wa, &b);
        let got: u64 = pairs.iter().map(|&(i, _)| wa[i as usize] as u64).sum();
        assert_eq!(got, naive(&a, &wa, &b));
        assert_eq!(got, elcs(&a, &wa, &b, &wb));
        assert!(pairs.windows(2).all(|p| p[0].0 < p[1].0 && p[0].1 < p[1].1));
    }

    #[test]
    fn histogram_bounds_the_similarity() {
        let a = [1, 2, 3, 1, 2, 3, 4];
        let b = [3, 2, 1, 1, 5];
        let (wa, wb) = (w_of(&a), w_of(&b));
        let (ha, hb) = (Histogram::new(&a, &wa), Histogram::new(&b, &wb));
        let bound = ha.similarity_bound(&hb);
        // Common multiset: 1, 1, 2, 3.
        let common = 2 * weight(1) + weight(2) + weight(3);
        let max = total(&wa).max(total(&wb));
        assert!((bound - common as f64 / max as f64).abs() < 1e-12);
        assert!(elcs_similarity(&a, &wa, &b, &wb) <= bound);
    }

    fn seqs() -> impl Strategy<Value = (Vec<u32>, Vec<u32>)> {
        let s = proptest::collection::vec(0u32..6, 0..60);
        (s.clone(), s)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn matches_the_naive_full_matrix((a, b) in seqs()) {
            let (wa, wb) = (w_of(&a), w_of(&b));
            let want = naive(&a, &wa, &b);
            prop_assert_eq!(elcs(&a, &wa, &b, &wb), want);
            // Symmetric.
            prop_assert_eq!(elcs(&b, &wb, &a, &wa), want);
            let ones_a = vec![1; a.len()];
            let plain = naive(&a, &ones_a, &b) as u32;
            prop_assert_eq!(lcs_len(&a, &b), plain);
            prop_assert_eq!(lcs_len_bits(&a, &b), plain);
            prop_assert_eq!(lcs_len_bits(&b, &a), plain);
            let s = elcs_similarity(&a, &wa, &b, &wb);
            prop_assert!((0.0..=1.0).contains(&s));
            prop_assert_eq!(s, elcs_similarity(&b, &wb, &a, &wa));
            let bound = Histogram::new(&a, &wa).similarity_bound(&Histogram::new(&b, &wb));
            prop_assert!(s <= bound + 1e-12);
            // The alignment is a common subsequence of the best weight.
            let pairs = align(&a, &wa, &b);
            prop_assert!(pairs.windows(2).all(|p| p[0].0 < p[1].0 && p[0].1 < p[1].1));
            prop_assert!(pairs.iter().all(|&(i, j)| a[i as usize] == b[j as usize]));
            let got: u64 = pairs.iter().map(|&(i, _)| wa[i as usize] as u64).sum();
            prop_assert_eq!(got, want);
        }

        #[test]
        fn long_inputs_cross_word_boundaries_and_split_in_hirschberg(
            a in proptest::collection::vec(0u32..4, 60..300),
            b in proptest::collection::vec(0u32..4, 60..300),
        ) {
            let ones = vec![1; a.len()];
            prop_assert_eq!(lcs_len_bits(&a, &b) as u64, naive(&a, &ones, &b));
            // Large enough for Hirschberg to split before the full table.
            let wa = w_of(&a);
            let pairs = align(&a, &wa, &b);
            prop_assert!(pairs.windows(2).all(|p| p[0].0 < p[1].0 && p[0].1 < p[1].1));
            prop_assert!(pairs.iter().all(|&(i, j)| a[i as usize] == b[j as usize]));
            let got: u64 = pairs.iter().map(|&(i, _)| wa[i as usize] as u64).sum();
            prop_assert_eq!(got, naive(&a, &wa, &b));
        }
    }
}
