//! Page clustering by structure and per-cluster templates of essential
//! and optional nodes (docs/algorithms.md, "Clustering" and "Templates").
//!
//! Takes pages as [`PageFeatures`] (collapsed sequence, weights, sketch,
//! token histogram; built with one shared [`Interner`]); gives
//!
//! - a [`DistanceMatrix`] of `1 - elcs similarity`, computed in parallel
//!   over tiles of the upper triangle, optionally pruned;
//! - [`agglomerate`]: bottom-up clustering with a distance threshold (no
//!   number of clusters to choose), each cluster with its medoid;
//! - a [`Template`] per cluster: essential nodes, optional nodes per gap
//!   with probabilities, and, for a new page, which of its nodes are
//!   template and which are data ([`Template::data_nodes`]) and how far
//!   it has drifted from the template ([`Template::drift`]);
//! - a [`TemplateSet`] (serde, stored as JSON by the caller) that learns
//!   templates, finds a page's nearest one and keeps pages far from every
//!   template pending until enough of them agree on a new one.
//!
//! # Linkage
//!
//! Qiu's thesis (its algorithm 3) merges "the two closest clusters" without saying
//! how clusters are compared. Average linkage (UPGMA: the mean distance
//! over all cross pairs) is the default: single linkage chains different
//! sites together through one borderline pair (menus and footers make
//! some cross-site pairs look alike), and complete linkage splits one
//! site's pages as soon as a single pair is far (a page with an unusual
//! layout variant). The threshold then reads as "pages of one cluster are
//! on average at most this far apart". `examples/cluster_purity.rs`
//! prints all three on the corpus. The merges use Müllner's
//! nearest-neighbour chain (O(n²) time on the condensed matrix), which
//! yields the same dendrogram as merging the globally closest pair each
//! time, because these three linkages are reducible; cutting it at the
//! threshold is the thesis's stopping rule.
//!
//! # Pruning
//!
//! All pairs are compared, which is the cost centre (docs/algorithms.md, "Similarity":
//! 60,000 pages at 1 ms a pair is 500 hours). Two filters skip the exact
//! weighted LCS for pairs that cannot be close:
//!
//! - an exact upper bound (never wrong): the weighted token-histogram
//!   intersection ([`Histogram::similarity_bound`]) and the weight-length
//!   ratio. A pair whose bound is below `1 - threshold` is farther than
//!   the threshold; its distance is stored as `1 - bound` (a lower bound
//!   of the true distance, itself above the threshold). On the corpus
//!   this alone skips about 98% of cross-site pairs at threshold 0.5.
//! - the min-hash sketches (an estimate): a pair of pages of at least
//!   [`SKETCH_MIN_TOKENS`] tokens whose sketch similarity is below
//!   [`sketch_cutoff`]`(1 - threshold)` is stored as distance 1. Path
//!   shingles are far stricter than the LCS (two pages of one site with
//!   elcs similarity 0.43 shared 5% of shingles), so the cutoff is low
//!   and only applies from similarity 0.45 up; the margin is measured on
//!   the corpus (see [`sketch_cutoff`]).
//!
//! With average linkage the exact value of a far pair still enters the
//! mean, so pruning is not exact in principle; `tests/it/templates.rs`
//! checks that it leaves the clustering of the corpus unchanged.
//!
//! # Templates (docs/algorithms.md, "Templates")
//!
//! Essential nodes: starting from the medoid's sequence, the weighted LCS
//! with every other member in turn (nearest first); what survives is in
//! every member. Each member is then aligned to the essential nodes; its
//! unaligned tokens between essential nodes `g - 1` and `g` form its
//! sub-sequence for gap `g`. The sub-sequences of one gap are grouped
//! (identical ones first, then each joins the first group whose leader it
//! is within the threshold of, a single pass rather than the thesis's full
//! recursive clustering, which would cost a matrix per gap), and each
//! group becomes an alternative: the common subsequence of its members,
//! with probability = its pages / the cluster's pages. So the thesis's
//! example gives `ON(a,b) = thu 2/3 | orz 1/3`.
//!
//! A new page is matched by aligning the essential nodes, then, inside
//! each stretch between aligned essential nodes, the alternatives of the
//! gaps there, most probable first. Tokens matched by an essential node
//! or by an alternative seen in more than half the pages
//! ([`EXPLAINING_PROBABILITY`]) are *template*; everything else is
//! *data*. For change monitoring a false "data" costs a spurious alert,
//! a false "template" hides a change, hence the strict majority.
//!
//! The template is structural: an element aligned to an essential node is
//! template even when its text varies (an article's `<h1>`). Text leaves
//! take the role of their element, and the copies of a collapsed repeat
//! the role of the kept copy.

use rayon::prelude::*;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::elcs::{self, Histogram};
use super::minhash::Sketch;
use super::pattern::Pattern;
use super::seq::{Interner, Sequence};
use super::tree::PageTree;

/// Default distance threshold: pages closer than this (on average, see
/// the linkage) share a template. Qiu's thesis used 0.5 for extraction (its
/// table 6.5: 0.3 to 0.6 gave 16 to 5 clusters); on the corpus 0.5 is
/// where purity and inverse purity meet (`examples/cluster_purity.rs`).
pub const DEFAULT_THRESHOLD: f64 = 0.5;

/// Default number of pages that make a template.
pub const DEFAULT_MIN_CLUSTER: usize = 2;

/// Pending pages kept at most (oldest dropped first), so that a stream of
/// unrelated pages cannot grow a stored template set without bound.
pub const MAX_PENDING: usize = 256;

/// An optional alternative seen in more than this share of a cluster's
/// pages explains the tokens it matches (see the module docs).
pub const EXPLAINING_PROBABILITY: f64 = 0.5;

/// Members kept per template to compare new pages with.
pub const REPRESENTATIVES: usize = 8;

/// Sketch pruning only applies when both pages have at least this many
/// tokens: below it the sketch holds too few shingles to say anything,
/// and the exact comparison costs microseconds anyway.
pub const SKETCH_MIN_TOKENS: usize = 64;

/// Pages per side of a tile of the pairwise matrix.
const TILE: usize = 16;

/// Sketch similarity below which a pair is taken to be less similar than
/// `min_similarity` (= `1 - threshold`) without computing it:
/// `(min_similarity - 0.45) / 2`, and 0 (no pruning) below 0.45.
///
/// Measured on the 216 real corpus pages (23,220 pairs, pages of at least
/// 64 tokens): pairs with elcs similarity in 0.4..0.5 had sketch
/// similarity down to 0.02, so nothing can be pruned there; from 0.5 up
/// the lowest sketch similarity seen was 0.32. At threshold 0.5 the
/// cutoff is 0.025, a margin of 0.3 (seven standard errors of a 128-hash
/// estimate at that Jaccard index) below anything observed.
pub fn sketch_cutoff(min_similarity: f64) -> f64 {
    ((min_similarity - 0.45) * 0.5).max(0.0)
}

/// What clustering and templates need to know about one page. Owned and
/// `Send`; serialised as its sequence and sketch (weights and histogram
/// are recomputed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "FeaturesRepr", into = "FeaturesRepr")]
pub struct PageFeatures {
    /// The collapsed token sequence.
    pub sequence: Sequence,
    /// `f(depth)` of each token ([`elcs::weights`]).
    pub weights: Vec<u32>,
    /// The path-shingle sketch of the elements the sequence kept.
    pub sketch: Sketch,
    /// Token histogram for the exact similarity bound.
    pub histogram: Histogram,
}

#[derive(Serialize, Deserialize, Clone)]
struct FeaturesRepr {
    sequence: Sequence,
    sketch: Sketch,
}

impl From<FeaturesRepr> for PageFeatures {
    fn from(r: FeaturesRepr) -> PageFeatures {
        let mut s = r.sequence;
        // A stored file may have been edited: keep the vectors parallel.
        let n = s.tokens.len().min(s.depths.len());
        s.tokens.truncate(n);
        s.depths.truncate(n);
        s.repeats.resize(n, false);
        s.blocks
            .retain(|b| (b.start as usize) < n && (b.start + b.len) as usize <= n);
        PageFeatures::from_parts(s, r.sketch)
    }
}

impl From<PageFeatures> for FeaturesRepr {
    fn from(p: PageFeatures) -> FeaturesRepr {
        FeaturesRepr {
            sequence: p.sequence,
            sketch: p.sketch,
        }
    }
}

impl PageFeatures {
    /// The features of `tree`, interning its tokens in `interner`.
    pub fn new(tree: &PageTree, interner: &mut Interner) -> PageFeatures {
        PageFeatures::of_sequence(tree, Sequence::uncollapsed(tree, interner))
    }

    /// The features of `tree` from its *uncollapsed* sequence (made with
    /// the shared interner): the expensive part, collapsing and
    /// sketching, needs no interner and can run on many pages in parallel.
    pub fn of_sequence(tree: &PageTree, uncollapsed: Sequence) -> PageFeatures {
        let sequence = uncollapsed.collapsed();
        let sketch = Sketch::of_tree(tree, Some(&sequence.nodes));
        PageFeatures::from_parts(sequence, sketch)
    }

    fn from_parts(sequence: Sequence, sketch: Sketch) -> PageFeatures {
        let weights = elcs::weights(&sequence.depths);
        let histogram = Histogram::new(&sequence.tokens, &weights);
        PageFeatures {
            sequence,
            weights,
            sketch,
            histogram,
        }
    }

    /// Weighted LCS similarity with another page (docs/algorithms.md, "Similarity").
    pub fn similarity(&self, other: &PageFeatures) -> f64 {
        elcs::elcs_similarity(
            &self.sequence.tokens,
            &self.weights,
            &other.sequence.tokens,
            &other.weights,
        )
    }

    /// An upper bound of [`PageFeatures::similarity`] in time linear in
    /// the number of distinct tokens.
    pub fn similarity_bound(&self, other: &PageFeatures) -> f64 {
        let (a, b) = (self.histogram.total, other.histogram.total);
        let ratio = if a.max(b) == 0 {
            1.0
        } else {
            a.min(b) as f64 / a.max(b) as f64
        };
        ratio.min(self.histogram.similarity_bound(&other.histogram))
    }
}

/// How [`DistanceMatrix::new`] computes the pairs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MatrixOptions {
    /// The clustering threshold pruning is relative to (`None`: no
    /// pruning, every pair exact).
    pub threshold: Option<f64>,
    /// Use the min-hash sketches too (the exact bound is always used when
    /// pruning).
    pub sketch: bool,
    /// Spread the tiles over rayon's threads.
    pub parallel: bool,
}

impl MatrixOptions {
    /// Every pair exact, in parallel.
    pub fn exact() -> MatrixOptions {
        MatrixOptions {
            threshold: None,
            sketch: false,
            parallel: true,
        }
    }

    /// Pruned for clustering at `threshold` (bound and sketches), in
    /// parallel.
    pub fn pruned(threshold: f64) -> MatrixOptions {
        MatrixOptions {
            threshold: Some(threshold),
            sketch: true,
            parallel: true,
        }
    }
}

/// How one pair was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Exact,
    Bound,
    Sketch,
}

/// Pairwise distances `1 - elcs similarity`, the upper triangle stored
/// row by row (`f32`: 2 MB for 1,000 pages, 7 GB for 60,000 — beyond
/// some tens of thousands of pages a sparse store of the close pairs
/// would be needed).
#[derive(Debug, Clone, PartialEq)]
pub struct DistanceMatrix {
    n: usize,
    d: Vec<f32>,
    /// Pairs computed exactly.
    pub exact: usize,
    /// Pairs skipped by the exact bound.
    pub pruned_by_bound: usize,
    /// Pairs skipped by the sketches.
    pub pruned_by_sketch: usize,
}

fn tri(n: usize, i: usize, j: usize) -> usize {
    // i < j
    i * n - i * (i + 1) / 2 + (j - i - 1)
}

fn pair(a: &PageFeatures, b: &PageFeatures, opts: &MatrixOptions) -> (f32, Outcome) {
    if let Some(t) = opts.threshold {
        let need = 1.0 - t;
        let bound = a.similarity_bound(b);
        if bound < need {
            return ((1.0 - bound) as f32, Outcome::Bound);
        }
        if opts.sketch
            && a.sequence.len() >= SKETCH_MIN_TOKENS
            && b.sequence.len() >= SKETCH_MIN_TOKENS
            && a.sketch.similarity(&b.sketch) < sketch_cutoff(need)
        {
            return (1.0, Outcome::Sketch);
        }
    }
    ((1.0 - a.similarity(b)) as f32, Outcome::Exact)
}

impl DistanceMatrix {
    /// The distances between all pairs of `pages`. Tiles of 16 × 16 pages
    /// of the upper triangle are the unit of parallel work: a tile's 32
    /// sequences stay in cache while its pairs are compared, and rayon's
    /// work stealing evens out tiles of very different cost.
    pub fn new(pages: &[PageFeatures], opts: &MatrixOptions) -> DistanceMatrix {
        let n = pages.len();
        let blocks = n.div_ceil(TILE);
        let tiles: Vec<(usize, usize)> = (0..blocks)
            .flat_map(|bi| (bi..blocks).map(move |bj| (bi, bj)))
            .collect();
        let run = |&(bi, bj): &(usize, usize)| {
            let mut out = Vec::with_capacity(TILE * TILE);
            for i in bi * TILE..((bi + 1) * TILE).min(n) {
                let from = if bi == bj { i + 1 } else { bj * TILE };
                for j in from..((bj + 1) * TILE).min(n) {
                    let (d, o) = pair(&pages[i], &pages[j], opts);
                    out.push((tri(n, i, j), d, o));
                }
            }
            out
        };
        let results: Vec<Vec<(usize, f32, Outcome)>> = if opts.parallel {
            tiles.par_iter().map(run).collect()
        } else {
            tiles.iter().map(run).collect()
        };
        let mut m = DistanceMatrix {
            n,
            d: vec![0.0; n * n.saturating_sub(1) / 2],
            exact: 0,
            pruned_by_bound: 0,
            pruned_by_sketch: 0,
        };
        for (k, d, o) in results.into_iter().flatten() {
            m.d[k] = d;
            match o {
                Outcome::Exact => m.exact += 1,
                Outcome::Bound => m.pruned_by_bound += 1,
                Outcome::Sketch => m.pruned_by_sketch += 1,
            }
        }
        m
    }

    /// Number of pages.
    pub fn len(&self) -> usize {
        self.n
    }

    /// True for no pages.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Distance between pages `i` and `j` (0 for `i == j`, 1 out of range).
    pub fn get(&self, i: usize, j: usize) -> f32 {
        if i == j {
            return 0.0;
        }
        if i >= self.n || j >= self.n {
            return 1.0;
        }
        let (a, b) = if i < j { (i, j) } else { (j, i) };
        self.d[tri(self.n, a, b)]
    }

    /// The member of `members` with the least sum of distances to the
    /// others (docs/algorithms.md, "Clustering"; as in k-medoids); ties to the first.
    pub fn medoid(&self, members: &[usize]) -> Option<usize> {
        members
            .iter()
            .map(|&i| {
                let s: f64 = members.iter().map(|&j| self.get(i, j) as f64).sum();
                (i, s)
            })
            .fold(None, |best: Option<(usize, f64)>, (i, s)| match best {
                Some((_, bs)) if bs <= s => best,
                _ => Some((i, s)),
            })
            .map(|(i, _)| i)
    }
}

/// How the distance between two clusters is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Linkage {
    /// Mean over all cross pairs (UPGMA); the default.
    Average,
    /// Largest cross pair.
    Complete,
    /// Smallest cross pair.
    Single,
}

/// One cluster: its pages (indices, increasing) and its medoid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cluster {
    /// Page indices.
    pub members: Vec<usize>,
    /// The page at the centre.
    pub medoid: usize,
}

/// Agglomerative clustering: merge the two closest clusters until the
/// closest pair is farther than `threshold` (see the module docs for the
/// linkage and the algorithm). Clusters come ordered by first member.
pub fn agglomerate(matrix: &DistanceMatrix, threshold: f64, linkage: Linkage) -> Vec<Cluster> {
    let n = matrix.n;
    let mut d = matrix.d.clone();
    let mut size = vec![1usize; n];
    let mut active = vec![true; n];
    let mut merges: Vec<(usize, usize, f32)> = Vec::with_capacity(n);
    let mut chain: Vec<usize> = Vec::new();
    let at = |i: usize, j: usize| if i < j { tri(n, i, j) } else { tri(n, j, i) };
    let mut remaining = n;
    while remaining > 1 {
        if chain.is_empty()
            && let Some(first) = active.iter().position(|&a| a)
        {
            chain.push(first);
        }
        while let Some(&x) = chain.last() {
            let prev = chain.len().checked_sub(2).map(|k| chain[k]);
            // The nearest active cluster to x; a tie goes to the previous
            // chain element (which keeps the chain from cycling).
            let mut best = prev;
            let mut best_d = prev.map_or(f32::INFINITY, |p| d[at(x, p)]);
            for y in 0..n {
                if y != x && active[y] {
                    let v = d[at(x, y)];
                    if v < best_d {
                        best_d = v;
                        best = Some(y);
                    }
                }
            }
            let Some(y) = best else { break };
            if Some(y) == prev {
                chain.truncate(chain.len() - 2);
                let (keep, gone) = (x.min(y), x.max(y));
                let (sk, sg) = (size[keep] as f32, size[gone] as f32);
                for k in 0..n {
                    if k != keep && k != gone && active[k] {
                        let (dk, dg) = (d[at(keep, k)], d[at(gone, k)]);
                        d[at(keep, k)] = match linkage {
                            Linkage::Average => (dk * sk + dg * sg) / (sk + sg),
                            Linkage::Complete => dk.max(dg),
                            Linkage::Single => dk.min(dg),
                        };
                    }
                }
                active[gone] = false;
                size[keep] += size[gone];
                merges.push((keep, gone, best_d));
                remaining -= 1;
                break;
            }
            chain.push(y);
        }
    }
    // Replay the merges at or below the threshold. Heights only grow
    // along the dendrogram; a cluster that once failed the threshold is
    // frozen anyway (guards against rounding).
    let mut members: Vec<Vec<usize>> = (0..n).map(|i| vec![i]).collect();
    let mut frozen = vec![false; n];
    for (keep, gone, h) in merges {
        if frozen[keep] || frozen[gone] || h as f64 > threshold {
            frozen[keep] = true;
            continue;
        }
        let moved = std::mem::take(&mut members[gone]);
        members[keep].extend(moved);
    }
    let mut out: Vec<Cluster> = members
        .into_iter()
        .filter(|m| !m.is_empty())
        .map(|mut m| {
            m.sort_unstable();
            let medoid = matrix.medoid(&m).unwrap_or(m[0]);
            Cluster { members: m, medoid }
        })
        .collect();
    out.sort_by_key(|c| c.members[0]);
    out
}

/// A run of template tokens: essential nodes, or one alternative of an
/// optional node.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "PartRepr")]
pub struct Part {
    /// The tokens.
    pub tokens: Vec<u32>,
    /// Their depths.
    pub depths: Vec<u32>,
    /// Which start a may-repeat block in the page they come from.
    pub repeats: Vec<bool>,
}

#[derive(Deserialize)]
struct PartRepr {
    tokens: Vec<u32>,
    depths: Vec<u32>,
    repeats: Vec<bool>,
}

impl From<PartRepr> for Part {
    fn from(mut r: PartRepr) -> Part {
        let n = r.tokens.len().min(r.depths.len());
        r.tokens.truncate(n);
        r.depths.truncate(n);
        r.repeats.resize(n, false);
        Part {
            tokens: r.tokens,
            depths: r.depths,
            repeats: r.repeats,
        }
    }
}

impl Part {
    fn of(seq: &Sequence, positions: &[usize]) -> Part {
        Part {
            tokens: positions.iter().map(|&p| seq.tokens[p]).collect(),
            depths: positions.iter().map(|&p| seq.depths[p]).collect(),
            repeats: positions
                .iter()
                .map(|&p| seq.repeats.get(p).copied().unwrap_or(false))
                .collect(),
        }
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The tokens' weights.
    pub fn weights(&self) -> Vec<u32> {
        elcs::weights(&self.depths)
    }

    /// Renders as `<tag depth>` items, `+` after a may-repeat start.
    pub fn render(&self, interner: &Interner) -> String {
        let mut s = String::new();
        for (k, &t) in self.tokens.iter().enumerate() {
            match interner.resolve(t) {
                Some((tag, depth)) => s.push_str(&format!("<{tag}{depth}>")),
                None => s.push_str(&format!("<?{t}>")),
            }
            if self.repeats[k] {
                s.push('+');
            }
        }
        s
    }
}

/// One alternative of an optional node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alternative {
    /// Its tokens (common to the pages that took it).
    pub part: Part,
    /// Share of the cluster's pages that took it.
    pub probability: f64,
    /// Number of those pages.
    pub pages: usize,
}

/// What a token of a page is, against a template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Aligned to essential node `index`.
    Essential(u32),
    /// Aligned to alternative `alternative` of the optional node of `gap`.
    Optional {
        /// The gap (before essential node `gap`).
        gap: u32,
        /// The alternative within it.
        alternative: u32,
    },
    /// Not explained: data.
    Data,
}

/// The template of one cluster (docs/algorithms.md, "Templates":
/// `[ON0] EN1 ON1 EN2 ... ENn [ONn]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Template {
    /// Members a new page is compared with ([`Template::similarity`]):
    /// the medoid first, then up to [`REPRESENTATIVES`]` - 1` others
    /// spread evenly over their distances to the medoid.
    pub representatives: Vec<PageFeatures>,
    /// Pages the template was learned from.
    pub members: usize,
    /// The essential nodes: in every member, in this order.
    pub essential: Part,
    /// `optional[g]`: the alternatives of the gap before essential node
    /// `g` (`g == essential.len()`: after the last), most probable first.
    pub optional: Vec<Vec<Alternative>>,
    /// The cluster's ne-pattern (docs/algorithms.md, "ne-patterns"), learned from member pages by
    /// `semclip learn` for article extraction by template
    /// ([`crate::extract::article::extract_by_template`]). Absent when the
    /// pages were not at hand (a set learned from features only, or stored
    /// before patterns existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<Pattern>,
}

impl Template {
    /// Learns the template of `pages` (a cluster) around `pages[medoid]`,
    /// grouping gap sub-sequences at `threshold`.
    pub fn learn(pages: &[&PageFeatures], medoid: usize, threshold: f64) -> Option<Template> {
        let centre = *pages.get(medoid)?;
        // Members nearest the medoid first.
        let mut order: Vec<(f64, usize)> = (0..pages.len())
            .filter(|&k| k != medoid)
            .map(|k| (1.0 - centre.similarity(pages[k]), k))
            .collect();
        order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        // Algorithm 4: shrink the medoid's sequence to the LCS with each.
        let mut common: Vec<usize> = (0..centre.sequence.len()).collect();
        for &(_, k) in &order {
            let toks: Vec<u32> = common.iter().map(|&p| centre.sequence.tokens[p]).collect();
            let ws: Vec<u32> = common.iter().map(|&p| centre.weights[p]).collect();
            let pairs = elcs::align(&toks, &ws, &pages[k].sequence.tokens);
            common = pairs.iter().map(|&(i, _)| common[i as usize]).collect();
        }
        let essential = Part::of(&centre.sequence, &common);
        let ew = essential.weights();
        let mut representatives = vec![centre.clone()];
        let others = order.len();
        let keep = others.min(REPRESENTATIVES - 1);
        for r in 0..keep {
            // Evenly spaced ranks, nearest and farthest included.
            let rank = if keep == 1 {
                0
            } else {
                r * (others - 1) / (keep - 1)
            };
            representatives.push(pages[order[rank].1].clone());
        }
        // Gap sub-sequences of every member: positions per gap.
        let e = essential.len();
        let mut gaps: Vec<Vec<(usize, Vec<usize>)>> = vec![Vec::new(); e + 1];
        for (k, page) in pages.iter().enumerate() {
            let pairs = elcs::align(&essential.tokens, &ew, &page.sequence.tokens);
            let mut per_gap: Vec<Vec<usize>> = vec![Vec::new(); e + 1];
            let mut next = 0usize; // index into pairs
            for j in 0..page.sequence.len() {
                while next < pairs.len() && (pairs[next].1 as usize) < j {
                    next += 1;
                }
                if next < pairs.len() && pairs[next].1 as usize == j {
                    continue;
                }
                let g = pairs.get(next).map_or(e, |p| p.0 as usize);
                per_gap[g].push(j);
            }
            for (g, pos) in per_gap.into_iter().enumerate() {
                if !pos.is_empty() {
                    gaps[g].push((k, pos));
                }
            }
        }
        let optional = gaps
            .iter()
            .map(|items| alternatives(pages, items, threshold))
            .collect();
        Some(Template {
            representatives,
            members: pages.len(),
            essential,
            optional,
            pattern: None,
        })
    }

    /// The cluster's medoid.
    pub fn centre(&self) -> Option<&PageFeatures> {
        self.representatives.first()
    }

    /// Mean similarity of `page` to the representatives: average linkage,
    /// the criterion the cluster was formed by, against a sample of it.
    /// (Qiu's thesis compares with the medoid alone; on a cluster whose pages
    /// vary a lot that misses members: a generated news page was 0.49
    /// from the medoid of its seven siblings but 0.62 on average.)
    pub fn similarity(&self, page: &PageFeatures) -> f64 {
        mean(self.representatives.iter().map(|r| r.similarity(page)))
    }

    /// An upper bound of [`Template::similarity`] from the histograms.
    pub fn similarity_bound(&self, page: &PageFeatures) -> f64 {
        mean(
            self.representatives
                .iter()
                .map(|r| r.similarity_bound(page)),
        )
    }

    /// The role of every token of `page` (a collapsed sequence built with
    /// the template set's interner).
    pub fn roles(&self, page: &Sequence) -> Vec<Role> {
        let n = page.len();
        let mut roles = vec![Role::Data; n];
        let ew = self.essential.weights();
        let pairs = elcs::align(&self.essential.tokens, &ew, &page.tokens);
        for &(i, j) in &pairs {
            roles[j as usize] = Role::Essential(i);
        }
        // Stretches between aligned essential nodes: page positions
        // (lo..hi) and the template gaps (g0..=g1) they can hold.
        let mut bounds: Vec<(usize, usize, usize, usize)> = Vec::new();
        let (mut lo, mut g0) = (0usize, 0usize);
        for &(i, j) in &pairs {
            bounds.push((lo, j as usize, g0, i as usize));
            lo = j as usize + 1;
            g0 = i as usize + 1;
        }
        bounds.push((lo, n, g0, self.essential.len()));
        let mut cands: Vec<(f64, u32, u32)> = Vec::new();
        let mut free: Vec<usize> = Vec::new();
        let mut toks: Vec<u32> = Vec::new();
        for (lo, hi, g0, g1) in bounds {
            if lo >= hi {
                continue;
            }
            cands.clear();
            for g in g0..=g1.min(self.optional.len().saturating_sub(1)) {
                for (a, alt) in self.optional[g].iter().enumerate() {
                    cands.push((alt.probability, g as u32, a as u32));
                }
            }
            cands.sort_by(|x, y| y.0.total_cmp(&x.0).then((x.1, x.2).cmp(&(y.1, y.2))));
            for &(_, g, a) in &cands {
                free.clear();
                free.extend((lo..hi).filter(|&j| roles[j] == Role::Data));
                if free.is_empty() {
                    break;
                }
                toks.clear();
                toks.extend(free.iter().map(|&j| page.tokens[j]));
                let part = &self.optional[g as usize][a as usize].part;
                for (_, j) in elcs::align(&part.tokens, &part.weights(), &toks) {
                    roles[free[j as usize]] = Role::Optional {
                        gap: g,
                        alternative: a,
                    };
                }
            }
        }
        roles
    }

    fn explains(&self, role: Role) -> bool {
        match role {
            Role::Essential(_) => true,
            Role::Optional { gap, alternative } => self
                .optional
                .get(gap as usize)
                .and_then(|alts| alts.get(alternative as usize))
                .is_some_and(|alt| alt.probability > EXPLAINING_PROBABILITY),
            Role::Data => false,
        }
    }

    /// Pre-order indices in the page tree of the nodes the template does
    /// not explain: elements aligned to nothing or only to a rare
    /// alternative, with the text leaves under them and the copies of
    /// their collapsed repeats. `page` must come from that tree (its
    /// `tree_pos` links the two; a deserialised sequence has none and
    /// gives an empty list).
    pub fn data_nodes(&self, page: &Sequence) -> Vec<usize> {
        let roles = self.roles(page);
        page.tree_pos
            .iter()
            .enumerate()
            .filter(|&(_, &p)| {
                roles
                    .get(p as usize)
                    .is_none_or(|&role| !self.explains(role))
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// How far `page` has drifted from the template: 0 when everything the
    /// template expects (its essential nodes and its alternatives seen in
    /// more than half the pages) is found in the page, in order; 1 when
    /// none of it is. Weighted by `f(depth)` like the similarity, so a
    /// lost layout node counts more than a lost list item. Extra content
    /// in the page does not count: that is data. Rises when a site is
    /// redesigned, and for a page of another site.
    pub fn drift(&self, page: &Sequence) -> f64 {
        let roles = self.roles(page);
        let mut expected: u64 = elcs::total(&self.essential.weights());
        for alts in &self.optional {
            for alt in alts {
                if alt.probability > EXPLAINING_PROBABILITY {
                    expected += elcs::total(&alt.part.weights());
                }
            }
        }
        if expected == 0 {
            return if page.is_empty() { 0.0 } else { 1.0 };
        }
        let found: u64 = roles
            .iter()
            .zip(&page.depths)
            .filter(|&(&r, _)| r != Role::Data && self.explains(r))
            .map(|(_, &d)| elcs::weight(d) as u64)
            .sum();
        (1.0 - found as f64 / expected as f64).clamp(0.0, 1.0)
    }
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 { 0.0 } else { sum / n as f64 }
}

/// The alternatives of one gap from its members' sub-sequences.
fn alternatives(
    pages: &[&PageFeatures],
    items: &[(usize, Vec<usize>)],
    threshold: f64,
) -> Vec<Alternative> {
    // Identical sub-sequences first, most frequent first.
    let mut distinct: Vec<(Vec<u32>, usize, usize)> = Vec::new(); // (tokens, item, count)
    let mut seen: FxHashMap<Vec<u32>, usize> = FxHashMap::default();
    for (k, (page, pos)) in items.iter().enumerate() {
        let toks: Vec<u32> = pos
            .iter()
            .map(|&p| pages[*page].sequence.tokens[p])
            .collect();
        match seen.get(&toks) {
            Some(&d) => distinct[d].2 += 1,
            None => {
                seen.insert(toks.clone(), distinct.len());
                distinct.push((toks, k, 1));
            }
        }
    }
    distinct.sort_by(|a, b| b.2.cmp(&a.2).then(a.1.cmp(&b.1)));
    // Groups: (leader item, common positions within the leader, pages).
    let mut groups: Vec<(usize, Vec<usize>, usize)> = Vec::new();
    for (toks, item, count) in &distinct {
        let (page, pos) = (&items[*item].0, &items[*item].1);
        let ws: Vec<u32> = pos.iter().map(|&p| pages[*page].weights[p]).collect();
        let mut joined = false;
        for g in groups.iter_mut() {
            let (lp, lpos) = (&items[g.0].0, &items[g.0].1);
            let ltoks: Vec<u32> = lpos
                .iter()
                .map(|&p| pages[*lp].sequence.tokens[p])
                .collect();
            let lws: Vec<u32> = lpos.iter().map(|&p| pages[*lp].weights[p]).collect();
            if elcs::elcs_similarity(&ltoks, &lws, toks, &ws) >= 1.0 - threshold {
                // Shrink the group's common part.
                let ctoks: Vec<u32> = g.1.iter().map(|&k| ltoks[k]).collect();
                let cws: Vec<u32> = g.1.iter().map(|&k| lws[k]).collect();
                let pairs = elcs::align(&ctoks, &cws, toks);
                g.1 = pairs.iter().map(|&(i, _)| g.1[i as usize]).collect();
                g.2 += count;
                joined = true;
                break;
            }
        }
        if !joined {
            groups.push((*item, (0..toks.len()).collect(), *count));
        }
    }
    let total = pages.len().max(1) as f64;
    let mut out: Vec<Alternative> = groups
        .into_iter()
        .filter(|g| !g.1.is_empty())
        .map(|(item, common, count)| {
            let (page, pos) = (&items[item].0, &items[item].1);
            let at: Vec<usize> = common.iter().map(|&k| pos[k]).collect();
            Alternative {
                part: Part::of(&pages[*page].sequence, &at),
                probability: count as f64 / total,
                pages: count,
            }
        })
        .collect();
    out.sort_by_key(|a| std::cmp::Reverse(a.pages));
    out
}

/// What [`TemplateSet::observe`] did with a page.
#[derive(Debug, Clone, PartialEq)]
pub enum Observation {
    /// Close enough to template `template`.
    Matched {
        /// Its index.
        template: usize,
        /// The page's similarity to it ([`Template::similarity`]).
        similarity: f64,
    },
    /// Far from every template; kept with `waiting` pending pages in all.
    Pending {
        /// Pending pages now.
        waiting: usize,
    },
    /// The page and pending ones it resembles made new templates (their
    /// indices); the page belongs to the first.
    Learned {
        /// Indices of the new templates.
        templates: Vec<usize>,
    },
}

impl Observation {
    /// True when a new template was learned.
    pub fn learned(&self) -> bool {
        matches!(self, Observation::Learned { .. })
    }
}

/// The templates of the pages seen so far, with the interner their tokens
/// come from and the pages waiting for a template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TemplateSet {
    /// Token names, shared by every page compared with these templates.
    pub interner: Interner,
    /// Distance threshold.
    pub threshold: f64,
    /// Pages that make a template.
    pub min_cluster: usize,
    /// The templates.
    pub templates: Vec<Template>,
    /// Pages far from every template, oldest first.
    pub pending: Vec<PageFeatures>,
}

impl TemplateSet {
    /// An empty set (threshold clamped to 0..=1, `min_cluster` at least 1).
    pub fn new(threshold: f64, min_cluster: usize) -> TemplateSet {
        TemplateSet {
            interner: Interner::new(),
            threshold: if threshold.is_nan() {
                DEFAULT_THRESHOLD
            } else {
                threshold.clamp(0.0, 1.0)
            },
            min_cluster: min_cluster.max(1),
            templates: Vec::new(),
            pending: Vec::new(),
        }
    }

    /// The features of a page, with this set's interner.
    pub fn features(&mut self, tree: &PageTree) -> PageFeatures {
        PageFeatures::new(tree, &mut self.interner)
    }

    /// Clusters `pages` (built with `interner`) and learns a template for
    /// every cluster of at least `min_cluster` pages; the pages of smaller
    /// clusters are left pending.
    pub fn learn(
        interner: Interner,
        pages: Vec<PageFeatures>,
        threshold: f64,
        min_cluster: usize,
    ) -> TemplateSet {
        let mut set = TemplateSet::new(threshold, min_cluster);
        set.interner = interner;
        let matrix = DistanceMatrix::new(&pages, &MatrixOptions::pruned(set.threshold));
        let clusters = agglomerate(&matrix, set.threshold, Linkage::Average);
        let mut pending = Vec::new();
        for c in &clusters {
            if c.members.len() >= set.min_cluster {
                let refs: Vec<&PageFeatures> = c.members.iter().map(|&i| &pages[i]).collect();
                let m = c.members.iter().position(|&i| i == c.medoid).unwrap_or(0);
                if let Some(t) = Template::learn(&refs, m, set.threshold) {
                    set.templates.push(t);
                }
            } else {
                pending.extend(c.members.iter().copied());
            }
        }
        pending.sort_unstable();
        let mut pages: Vec<Option<PageFeatures>> = pages.into_iter().map(Some).collect();
        set.pending = pending
            .into_iter()
            .filter_map(|i| pages[i].take())
            .collect();
        set.trim_pending();
        set
    }

    /// The template `tree` belongs to: the nearest one, when the page's
    /// similarity to it is within the set's threshold.
    pub fn template_of(&mut self, tree: &PageTree) -> Option<&Template> {
        let features = self.features(tree);
        let (i, similarity) = self.nearest(&features)?;
        if similarity < 1.0 - self.threshold {
            return None;
        }
        self.templates.get(i)
    }

    /// The template most similar to `page` ([`Template::similarity`]),
    /// with that similarity (`None` without templates). Templates whose
    /// exact similarity bound cannot beat the best so far are not
    /// compared.
    pub fn nearest(&self, page: &PageFeatures) -> Option<(usize, f64)> {
        let mut order: Vec<(f64, usize)> = self
            .templates
            .iter()
            .enumerate()
            .filter(|(_, t)| !t.representatives.is_empty())
            .map(|(i, t)| (t.similarity_bound(page), i))
            .collect();
        order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut best: Option<(usize, f64)> = None;
        for (bound, i) in order {
            if best.is_some_and(|(_, s)| bound <= s) {
                break;
            }
            let s = self.templates[i].similarity(page);
            if best.is_none_or(|(_, b)| s > b) {
                best = Some((i, s));
            }
        }
        best
    }

    /// Takes a new page: matched to its nearest template when within the
    /// threshold; otherwise kept pending, and when it and the pending
    /// pages within the threshold of it number `min_cluster`, those are
    /// clustered and every cluster of `min_cluster` pages becomes a new
    /// template (docs/algorithms.md, "Templates"). Costs one comparison per template and
    /// per pending page (bounded by [`MAX_PENDING`]).
    pub fn observe(&mut self, page: PageFeatures) -> Observation {
        let need = 1.0 - self.threshold;
        if let Some((template, similarity)) = self.nearest(&page)
            && similarity >= need
        {
            return Observation::Matched {
                template,
                similarity,
            };
        }
        let close: Vec<usize> = (0..self.pending.len())
            .filter(|&i| {
                let p = &self.pending[i];
                p.similarity_bound(&page) >= need && p.similarity(&page) >= need
            })
            .collect();
        if close.len() + 1 < self.min_cluster {
            self.pending.push(page);
            self.trim_pending();
            return Observation::Pending {
                waiting: self.pending.len(),
            };
        }
        // Cluster the page (first) with its close pending pages.
        let mut group: Vec<PageFeatures> = vec![page];
        group.extend(close.iter().map(|&i| self.pending[i].clone()));
        let matrix = DistanceMatrix::new(&group, &MatrixOptions::exact());
        let clusters = agglomerate(&matrix, self.threshold, Linkage::Average);
        let mut learned = Vec::new();
        let mut used = vec![false; group.len()];
        // The page's own cluster first (cluster 0 holds member 0).
        for c in &clusters {
            if c.members.len() < self.min_cluster {
                continue;
            }
            let refs: Vec<&PageFeatures> = c.members.iter().map(|&i| &group[i]).collect();
            let m = c.members.iter().position(|&i| i == c.medoid).unwrap_or(0);
            if let Some(t) = Template::learn(&refs, m, self.threshold) {
                learned.push(self.templates.len());
                self.templates.push(t);
                for &i in &c.members {
                    used[i] = true;
                }
            }
        }
        // Drop the pending pages that went into templates; keep the rest
        // (and the page itself if it did not).
        let mut taken: Vec<usize> = close
            .iter()
            .enumerate()
            .filter(|&(k, _)| used[k + 1])
            .map(|(_, &i)| i)
            .collect();
        taken.sort_unstable();
        for i in taken.into_iter().rev() {
            self.pending.remove(i);
        }
        let page = group.swap_remove(0);
        if !used[0] {
            self.pending.push(page);
            self.trim_pending();
        }
        if learned.is_empty() {
            Observation::Pending {
                waiting: self.pending.len(),
            }
        } else {
            Observation::Learned { templates: learned }
        }
    }

    fn trim_pending(&mut self) {
        if self.pending.len() > MAX_PENDING {
            let extra = self.pending.len() - MAX_PENDING;
            self.pending.drain(..extra);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::dom::Dom;

    fn features(html: &str, interner: &mut Interner) -> PageFeatures {
        PageFeatures::new(&PageTree::from_dom(&Dom::parse(html)), interner)
    }

    /// A page of site `site` (0: a news list, 1: a shop table, 2: a forum
    /// thread) with `n` records and optional parts by `v`.
    fn page(site: usize, n: usize, v: usize) -> String {
        let mut s = String::from("<body>");
        match site {
            0 => {
                s.push_str("<header><nav><a>Home</a><a>World</a><a>Sport</a></nav></header><main><h1>News</h1>");
                if v.is_multiple_of(2) {
                    s.push_str("<h2>subtitle</h2>");
                }
                s.push_str("<ul class=news>");
                for i in 0..n {
                    s.push_str(&format!("<li><h3><a>story {i}</a></h3><p>lead</p></li>"));
                }
                s.push_str("</ul></main><footer><p>(c)</p></footer>");
            }
            1 => {
                s.push_str(
                    "<div id=top><form><input><button>go</button></form></div><div id=body><table>",
                );
                for i in 0..n {
                    s.push_str(&format!(
                        "<tr><td><img></td><td><a>item {i}</a></td><td>9.99</td></tr>"
                    ));
                }
                s.push_str("</table>");
                if v.is_multiple_of(3) {
                    s.push_str("<div class=ad><img><p>buy</p></div>");
                }
                s.push_str("</div>");
            }
            _ => {
                s.push_str("<div class=forum><div class=crumbs><a>Forum</a><a>Topic</a></div>");
                for i in 0..n {
                    s.push_str(&format!(
                        "<article><div class=user><img><b>u{i}</b></div><div class=post><p>text</p><p>more</p></div></article>"
                    ));
                }
                s.push_str("<section><textarea></textarea></section></div>");
            }
        }
        s.push_str("</body>");
        s
    }

    fn corpus(interner: &mut Interner) -> (Vec<PageFeatures>, Vec<usize>) {
        let mut pages = Vec::new();
        let mut labels = Vec::new();
        for site in 0..3 {
            for v in 0..5 {
                pages.push(features(&page(site, 2 + v * 3, v), interner));
                labels.push(site);
            }
        }
        (pages, labels)
    }

    #[test]
    fn clusters_pages_by_site_with_no_number_of_clusters_given() {
        let mut interner = Interner::new();
        let (pages, labels) = corpus(&mut interner);
        let m = DistanceMatrix::new(&pages, &MatrixOptions::exact());
        assert_eq!(m.exact, 15 * 14 / 2);
        for linkage in [Linkage::Average, Linkage::Complete, Linkage::Single] {
            let clusters = agglomerate(&m, DEFAULT_THRESHOLD, linkage);
            let got: Vec<Vec<usize>> = clusters.iter().map(|c| c.members.clone()).collect();
            assert_eq!(
                got,
                [
                    (0..5).collect::<Vec<_>>(),
                    (5..10).collect(),
                    (10..15).collect()
                ],
                "{linkage:?}"
            );
            for c in &clusters {
                assert_eq!(labels[c.medoid], labels[c.members[0]]);
            }
        }
        // Threshold 0: only identical pages merge (records collapsed, the
        // versions differ only by their optional blocks: subtitle or not,
        // ad or not, nothing for the forum); 1: everything.
        assert_eq!(agglomerate(&m, 0.0, Linkage::Average).len(), 2 + 2 + 1);
        assert_eq!(agglomerate(&m, 1.0, Linkage::Average).len(), 1);
    }

    #[test]
    fn agglomeration_matches_the_naive_closest_pair_loop() {
        // Random-ish distances: the NN-chain cut equals the thesis's loop.
        let n = 23;
        let mut d = Vec::new();
        let mut x = 7u64;
        for _ in 0..n * (n - 1) / 2 {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            d.push(((x >> 40) % 1000) as f32 / 1000.0);
        }
        let m = DistanceMatrix {
            n,
            d,
            exact: 0,
            pruned_by_bound: 0,
            pruned_by_sketch: 0,
        };
        for linkage in [Linkage::Average, Linkage::Complete, Linkage::Single] {
            for t in [0.1, 0.3, 0.45, 0.6] {
                let fast: Vec<Vec<usize>> = agglomerate(&m, t, linkage)
                    .into_iter()
                    .map(|c| c.members)
                    .collect();
                assert_eq!(
                    fast,
                    naive_agglomerate(&m, t, linkage),
                    "{linkage:?} at {t}"
                );
            }
        }
    }

    fn naive_agglomerate(m: &DistanceMatrix, t: f64, linkage: Linkage) -> Vec<Vec<usize>> {
        let mut cl: Vec<Vec<usize>> = (0..m.n).map(|i| vec![i]).collect();
        let dist = |a: &[usize], b: &[usize]| {
            let ds: Vec<f64> = a
                .iter()
                .flat_map(|&i| b.iter().map(move |&j| m.get(i, j) as f64))
                .collect();
            match linkage {
                Linkage::Average => ds.iter().sum::<f64>() / ds.len() as f64,
                Linkage::Complete => ds.iter().copied().fold(0.0, f64::max),
                Linkage::Single => ds.iter().copied().fold(f64::INFINITY, f64::min),
            }
        };
        loop {
            let mut best = (f64::INFINITY, 0, 0);
            for a in 0..cl.len() {
                for b in a + 1..cl.len() {
                    let v = dist(&cl[a], &cl[b]);
                    if v < best.0 {
                        best = (v, a, b);
                    }
                }
            }
            if cl.len() < 2 || best.0 > t + 1e-6 {
                break;
            }
            let moved = cl.remove(best.2);
            cl[best.1].extend(moved);
        }
        for c in cl.iter_mut() {
            c.sort_unstable();
        }
        cl.sort();
        cl
    }

    #[test]
    fn pruned_matrix_skips_pairs_but_clusters_the_same() {
        let mut interner = Interner::new();
        let (pages, _) = corpus(&mut interner);
        let exact = DistanceMatrix::new(&pages, &MatrixOptions::exact());
        let pruned = DistanceMatrix::new(&pages, &MatrixOptions::pruned(DEFAULT_THRESHOLD));
        let seq = DistanceMatrix::new(
            &pages,
            &MatrixOptions {
                parallel: false,
                ..MatrixOptions::pruned(DEFAULT_THRESHOLD)
            },
        );
        assert_eq!(pruned, seq, "parallel and sequential agree");
        assert!(pruned.pruned_by_bound > 0, "{pruned:?}");
        assert_eq!(
            pruned.exact + pruned.pruned_by_bound + pruned.pruned_by_sketch,
            exact.exact
        );
        // Pruned pairs are never closer than the exact distance.
        for i in 0..15 {
            for j in i + 1..15 {
                assert!(pruned.get(i, j) >= exact.get(i, j) - 1e-6, "{i} {j}");
            }
        }
        let a = agglomerate(&exact, DEFAULT_THRESHOLD, Linkage::Average);
        let b = agglomerate(&pruned, DEFAULT_THRESHOLD, Linkage::Average);
        assert_eq!(a, b);
    }

    #[test]
    fn template_of_the_seed_example_has_essential_and_optional_nodes() {
        // Qiu's thesis, §5.2, with letters as tags (custom elements, so that
        // `b`, `u`, `p` are not taken for HTML), all at depth 1:
        // s1 = a orz b c d l x e, s2 = a thu b eat c d l x e,
        // s3 = a thu b eat c d pku e. (The thesis prints s1 as `aorzbcldxe`
        // but aligns it as `a orz b cd lx e`; the alignment is followed.)
        let mut interner = Interner::new();
        let doc = |s: &str| {
            let body: String = s.split(' ').map(|t| format!("<x-{t}></x-{t}>")).collect();
            format!("<body>{body}</body>")
        };
        let p1 = features(&doc("a o r z b c d l x e"), &mut interner);
        let p2 = features(&doc("a t h u b e a t c d l x e"), &mut interner);
        let p3 = features(&doc("a t h u b e a t c d p k u e"), &mut interner);
        let pages = [&p2, &p1, &p3];
        let t = Template::learn(&pages, 0, DEFAULT_THRESHOLD).unwrap_or_else(|| panic!("template"));
        assert_eq!(t.members, 3);
        let ess: Vec<&str> = t
            .essential
            .tokens
            .iter()
            .filter_map(|&x| interner.resolve(x).map(|r| r.0.trim_start_matches("x-")))
            .collect();
        assert_eq!(ess, ["body", "a", "b", "c", "d", "e"]);
        let render = |alts: &[Alternative]| -> Vec<(String, f64)> {
            alts.iter()
                .map(|a| {
                    let s: String = a
                        .part
                        .tokens
                        .iter()
                        .filter_map(|&x| {
                            interner
                                .resolve(x)
                                .map(|r| r.0.trim_start_matches("x-").to_owned())
                        })
                        .collect();
                    (s, (a.probability * 3.0).round())
                })
                .collect()
        };
        // Gaps: before body, a|body, b|a, c|b, d|c, e|d, after e.
        assert_eq!(t.optional.len(), 7);
        assert_eq!(
            render(&t.optional[2]),
            [("thu".to_owned(), 2.0), ("orz".to_owned(), 1.0)]
        );
        assert_eq!(render(&t.optional[3]), [("eat".to_owned(), 2.0)]);
        // lx and pku share no tag: two alternatives.
        assert_eq!(
            render(&t.optional[5]),
            [("lx".to_owned(), 2.0), ("pku".to_owned(), 1.0)]
        );
        assert!(t.optional[4].is_empty() && t.optional[6].is_empty());
        // A new page: the usual "thu"/"eat" are template, "orz"-like
        // rarities and unknown tags are data.
        let q = features(&doc("a t h u b e a t c d q w e"), &mut interner);
        let roles = t.roles(&q.sequence);
        let data: Vec<&str> = roles
            .iter()
            .zip(&q.sequence.tokens)
            .filter(|(r, _)| !t.explains(**r))
            .filter_map(|(_, &x)| interner.resolve(x).map(|r| r.0.trim_start_matches("x-")))
            .collect();
        assert_eq!(data, ["q", "w"]);
        // Expected: body (4096) + 5 essential and 8 optional tokens of
        // the likely alternatives thu, eat, lx (2048 each); missing: lx.
        let expected = 4096.0 + 13.0 * 2048.0;
        assert!((t.drift(&q.sequence) - 2.0 * 2048.0 / expected).abs() < 1e-12);
        let other = features(
            "<body><table><tr><td></td></tr></table></body>",
            &mut interner,
        );
        assert!(
            t.drift(&other.sequence) > 0.7,
            "{}",
            t.drift(&other.sequence)
        );
    }

    #[test]
    fn data_nodes_are_tree_indices_of_unexplained_elements_and_their_text() {
        let mut interner = Interner::new();
        let pages: Vec<PageFeatures> = (0..4)
            .map(|v| features(&page(0, 3 + v, 1), &mut interner))
            .collect();
        let refs: Vec<&PageFeatures> = pages.iter().collect();
        let t = Template::learn(&refs, 0, DEFAULT_THRESHOLD).unwrap_or_else(|| panic!("template"));
        // A new version with an extra block in the main column.
        let html =
            page(0, 7, 1).replace("</ul>", "</ul><div class=poll><form><input></form></div>");
        let tree = PageTree::from_dom(&Dom::parse(&html));
        let f = PageFeatures::new(&tree, &mut interner);
        let data = t.data_nodes(&f.sequence);
        let tags: Vec<&str> = data.iter().map(|&i| &*tree.nodes[i].tag).collect();
        assert_eq!(tags, ["div", "form", "input"]);
        // Same page without the block: nothing is data.
        let plain = PageTree::from_dom(&Dom::parse(&page(0, 7, 1)));
        let f = PageFeatures::new(&plain, &mut interner);
        assert!(t.data_nodes(&f.sequence).is_empty());
        assert!(t.drift(&f.sequence) < 1e-9);
    }

    #[test]
    fn template_set_learns_matches_and_keeps_strangers_pending() {
        let mut set = TemplateSet::new(DEFAULT_THRESHOLD, 3);
        let pages: Vec<PageFeatures> = (0..4)
            .map(|v| set.features(&PageTree::from_dom(&Dom::parse(&page(1, 2 + v, v)))))
            .collect();
        let interner = set.interner.clone();
        let mut set = TemplateSet::learn(interner, pages, DEFAULT_THRESHOLD, 3);
        assert_eq!(set.templates.len(), 1);
        assert!(set.pending.is_empty());
        let new_version = set.features(&PageTree::from_dom(&Dom::parse(&page(1, 9, 4))));
        assert!(matches!(
            set.observe(new_version),
            Observation::Matched { template: 0, .. }
        ));
        // Forum pages: pending until three of them agree.
        let forum: Vec<PageFeatures> = (0..3)
            .map(|v| set.features(&PageTree::from_dom(&Dom::parse(&page(2, 2 + v, v)))))
            .collect();
        let mut it = forum.into_iter();
        if let Some(p) = it.next() {
            assert_eq!(set.nearest(&p).map(|(i, _)| i), Some(0));
            assert_eq!(set.observe(p), Observation::Pending { waiting: 1 });
        }
        if let Some(p) = it.next() {
            assert_eq!(set.observe(p), Observation::Pending { waiting: 2 });
        }
        if let Some(p) = it.next() {
            assert_eq!(set.observe(p), Observation::Learned { templates: vec![1] });
        }
        assert!(set.pending.is_empty());
        assert_eq!(set.templates[1].members, 3);
        // Stored and read back as JSON, it still matches the same way.
        let json = serde_json::to_string(&set).unwrap_or_default();
        let back: TemplateSet =
            serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json:.200}"));
        let probe = {
            let mut s = back.clone();
            s.features(&PageTree::from_dom(&Dom::parse(&page(2, 6, 0))))
        };
        assert_eq!(back.nearest(&probe).map(|(i, _)| i), Some(1));
        assert_eq!(serde_json::to_string(&back).unwrap_or_default(), json);
    }
}
