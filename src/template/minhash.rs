//! Path-shingle min-hash sketches: constant-time estimates of structural
//! similarity between any two pages (docs/algorithms.md, "Cheap similarity measures"; Qiu's thesis,
//! appendix A.3, after Buttler's survey and Broder's shingles).
//!
//! Takes a [`PageTree`] (optionally only some of its elements, e.g. the
//! ones a collapsed [`super::seq::Sequence`] kept); gives a [`Sketch`] of
//! [`SKETCH_SIZE`] minima whose agreement with another page's sketch
//! estimates the Jaccard index of the two pages' shingle sets.
//!
//! - Every element is turned into its *path*, the tag names from the root
//!   down to it (`/body/div/ul/li`), hashed.
//! - Paths are listed in pre-order and every window of [`SHINGLE_PATHS`]
//!   consecutive paths is a shingle (Buttler's `S(D, w)`); a page with
//!   fewer paths than that is one shingle. Shingles form a *set*: repeated
//!   records give the same shingles again and do not weigh more.
//! - For each of [`SKETCH_SIZE`] hash functions the sketch keeps the least
//!   hash over the shingle set. Two sets agree on one function's minimum
//!   with probability equal to their Jaccard index, so the fraction of
//!   equal minima estimates it with standard error
//!   `sqrt(J(1-J)/128) <= 0.044`.
//!
//! Buttler found windows of 1 to 4 paths equally accurate for clustering;
//! 3 lets a shingle see a node with its neighbours (a `li` next to its `a`
//! and the next `li`) without making near-identical pages look different.
//!
//! Hashes are fixed functions, never `RandomState`: a sketch stored today
//! compares with one computed tomorrow on another machine. Tag names go
//! through BLAKE3 (first 8 bytes, little-endian); everything after is the
//! SplitMix64 finaliser with seeds from a fixed SplitMix64 stream.

use html5ever::LocalName;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::tree::{PageTree, walk};
use crate::page::dom::Dom;

/// Number of minima in a sketch.
pub const SKETCH_SIZE: usize = 128;

/// Consecutive paths per shingle.
pub const SHINGLE_PATHS: usize = 3;

/// First state of the seed stream (any fixed value; changing it
/// invalidates stored sketches).
const SEED: u64 = 0x5e3c_11b0_7a1e_d0c5;

/// SplitMix64's finaliser: a bijection on `u64` that spreads every input
/// bit over the output.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The seeds of the [`SKETCH_SIZE`] hash functions.
fn seeds() -> &'static [u64; SKETCH_SIZE] {
    static SEEDS: std::sync::OnceLock<[u64; SKETCH_SIZE]> = std::sync::OnceLock::new();
    SEEDS.get_or_init(|| {
        let mut s = [0u64; SKETCH_SIZE];
        let mut state = SEED;
        for x in s.iter_mut() {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            *x = mix(state);
        }
        s
    })
}

fn tag_hash(tag: &str) -> u64 {
    let h = blake3::hash(tag.as_bytes());
    let mut b = [0u8; 8];
    b.copy_from_slice(&h.as_bytes()[..8]);
    u64::from_le_bytes(b)
}

/// The sorted, de-duplicated shingle hashes of the elements of `tree`
/// (all of them, or only those listed in `only`, pre-order indices in
/// increasing order; an element's path is its tree path either way).
pub fn shingles(tree: &PageTree, only: Option<&[u32]>) -> Vec<u64> {
    let mut tags: FxHashMap<&str, u64> = FxHashMap::default();
    let mut path = vec![0u64; tree.len()];
    let mut paths: Vec<u64> = Vec::new();
    let mut include = |i: usize| {
        let node = &tree.nodes[i];
        if node.is_text() {
            return None;
        }
        let t = *tags
            .entry(&*node.tag)
            .or_insert_with(|| tag_hash(&node.tag));
        let above = node.parent.map_or(0, |p| path[p as usize]);
        path[i] = mix(above.rotate_left(17) ^ t);
        Some(path[i])
    };
    match only {
        None => {
            for i in 0..tree.len() {
                if let Some(h) = include(i) {
                    paths.push(h);
                }
            }
        }
        Some(nodes) => {
            // Ancestors of a listed element come before it in pre-order,
            // and are listed too (a kept element's parent is kept), so the
            // path hashes below are ready when needed. Unlisted ancestors
            // are hashed on the way for robustness.
            let mut next = 0usize;
            for &n in nodes {
                let n = n as usize;
                if n >= tree.len() {
                    continue;
                }
                while next <= n {
                    let h = include(next);
                    if next == n
                        && let Some(h) = h
                    {
                        paths.push(h);
                    }
                    next += 1;
                }
            }
        }
    }
    shingles_of_paths(&paths)
}

/// The sorted, de-duplicated shingles of a pre-order list of path hashes.
fn shingles_of_paths(paths: &[u64]) -> Vec<u64> {
    let mut out: Vec<u64> = if paths.len() <= SHINGLE_PATHS {
        if paths.is_empty() {
            Vec::new()
        } else {
            vec![fold(paths)]
        }
    } else {
        paths.windows(SHINGLE_PATHS).map(fold).collect()
    };
    out.sort_unstable();
    out.dedup();
    out
}

fn fold(window: &[u64]) -> u64 {
    window
        .iter()
        .fold(0x243f_6a88_85a3_08d3u64, |h, &p| mix(h ^ p))
}

/// A min-hash sketch of a page's path shingles (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sketch {
    /// The least hash (top 32 bits) of the shingle set under each of the
    /// [`SKETCH_SIZE`] functions; all `u32::MAX` for an empty set.
    pub mins: Vec<u32>,
}

impl Default for Sketch {
    fn default() -> Sketch {
        Sketch {
            mins: vec![u32::MAX; SKETCH_SIZE],
        }
    }
}

impl Sketch {
    /// The sketch of a set of 64-bit hashes (duplicates do not matter).
    pub fn from_hashes<I: IntoIterator<Item = u64>>(hashes: I) -> Sketch {
        let seeds = seeds();
        let mut mins = [u32::MAX; SKETCH_SIZE];
        for h in hashes {
            for (m, &s) in mins.iter_mut().zip(seeds.iter()) {
                let v = (mix(h ^ s) >> 32) as u32;
                *m = (*m).min(v);
            }
        }
        Sketch {
            mins: mins.to_vec(),
        }
    }

    /// The sketch of a page's elements (see [`shingles`]).
    pub fn of_tree(tree: &PageTree, only: Option<&[u32]>) -> Sketch {
        Sketch::from_hashes(shingles(tree, only))
    }

    /// The sketch of a whole page straight from its DOM: the same as
    /// `Sketch::of_tree(&PageTree::from_dom(dom), None)` without building
    /// the tree (a check that needs only the sketch walks the DOM once and
    /// allocates one list of path hashes).
    pub fn of_dom(dom: &Dom) -> Sketch {
        let Some(root) = PageTree::root(dom) else {
            return Sketch::from_hashes(Vec::new());
        };
        // Tag hashes by atom: comparing atoms is one integer compare,
        // where a string key would be hashed byte by byte on every node.
        // The last tag's hash is kept too: runs of one tag (cells, rows,
        // items) skip the map.
        let mut tags: FxHashMap<&LocalName, u64> = FxHashMap::default();
        let mut last: Option<(&LocalName, u64)> = None;
        let mut paths: Vec<u64> = Vec::new();
        // Text nodes have no path: they are not visited.
        walk(dom, root, 0u64, false, |_, tag, above, _| {
            let Some(tag) = tag else { return above };
            let t = match last {
                Some((name, t)) if name == tag => t,
                _ => {
                    let t = *tags.entry(tag).or_insert_with(|| tag_hash(tag));
                    last = Some((tag, t));
                    t
                }
            };
            let path = mix(above.rotate_left(17) ^ t);
            paths.push(path);
            path
        });
        Sketch::from_hashes(shingles_of_paths(&paths))
    }

    /// Estimated Jaccard index of the two shingle sets, in constant time:
    /// the fraction of equal minima (0 for sketches of different sizes,
    /// e.g. a corrupted stored one).
    pub fn similarity(&self, other: &Sketch) -> f64 {
        if self.mins.len() != other.mins.len() || self.mins.is_empty() {
            return 0.0;
        }
        let same = self
            .mins
            .iter()
            .zip(&other.mins)
            .filter(|(a, b)| a == b)
            .count();
        same as f64 / self.mins.len() as f64
    }
}

/// Exact Jaccard index of two sorted, de-duplicated sets (1 for two empty
/// sets). Also the path-set similarity of the record and region finders.
pub fn jaccard<T: Ord>(a: &[T], b: &[T]) -> f64 {
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    let union = a.len() + b.len() - common;
    if union == 0 {
        1.0
    } else {
        common as f64 / union as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::dom::Dom;

    fn tree(html: &str) -> PageTree {
        PageTree::from_dom(&Dom::parse(html))
    }

    #[test]
    fn the_sketch_from_the_dom_is_the_trees_on_edge_cases() {
        let deep = format!("{}x{}", "<div>".repeat(400), "</div>".repeat(400));
        let deep_formatting = format!("<p>{}x</p>", "<b><i>".repeat(300));
        let pages = [
            "",
            "<p>one</p>",
            "<body><b>bold at the root</b><script>x</script>  <ul><li>a<li>b</ul></body>",
            "<svg><g><circle/></g></svg>",
            "<table><tr><td><span>1</span></td><td><em>2</em></td></tr></table><!-- c -->",
            "<frameset><frame src=a></frameset>",
            deep.as_str(),
            deep_formatting.as_str(),
        ];
        for html in pages {
            let dom = Dom::parse(html);
            assert_eq!(
                Sketch::of_dom(&dom),
                Sketch::of_tree(&PageTree::from_dom(&dom), None),
                "{html:.60}"
            );
        }
        // Not the same sketch for everything: structure tells pages apart.
        let a = Sketch::of_dom(&Dom::parse("<ul><li>a<li>b<li>c</ul>"));
        let b = Sketch::of_dom(&Dom::parse("<table><tr><td>a<td>b</table>"));
        assert!(a.similarity(&b) < 0.5);
    }

    #[test]
    fn estimates_the_jaccard_index_of_generated_sets() {
        // Pairs of sets of 1000 hashes overlapping by 0 to 1000.
        let mut errors = Vec::new();
        for (k, overlap) in (0..=1000u64).step_by(50).enumerate() {
            let salt = (k as u64) << 40;
            let a: Vec<u64> = (0..1000).map(|x| mix(x + salt)).collect();
            let b: Vec<u64> = (1000 - overlap..2000 - overlap)
                .map(|x| mix(x + salt))
                .collect();
            let exact = overlap as f64 / (2000 - overlap) as f64;
            let mut sa = a.clone();
            sa.sort_unstable();
            let mut sb = b.clone();
            sb.sort_unstable();
            assert!((jaccard(&sa, &sb) - exact).abs() < 1e-12);
            let est = Sketch::from_hashes(a).similarity(&Sketch::from_hashes(b));
            // 4 standard errors of one estimate.
            let sd = (exact * (1.0 - exact) / SKETCH_SIZE as f64).sqrt();
            assert!(
                (est - exact).abs() <= 4.0 * sd + 1e-9,
                "overlap {overlap}: estimate {est}, exact {exact}"
            );
            errors.push(est - exact);
        }
        // Unbiased: the mean error over 21 pairs is small.
        let mean = errors.iter().sum::<f64>() / errors.len() as f64;
        assert!(mean.abs() < 0.02, "mean error {mean}");
    }

    #[test]
    fn identical_pages_are_one_and_different_structures_are_not() {
        let page = "<body><div><ul><li><a>x</a></li><li><a>y</a></li></ul></div><p>z</p></body>";
        let a = Sketch::of_tree(&tree(page), None);
        // Same structure, different text.
        let b = Sketch::of_tree(&tree(&page.replace('x', "other")), None);
        assert_eq!(a.similarity(&b), 1.0);
        let c = Sketch::of_tree(
            &tree("<body><table><tr><td>1</td></tr></table><form><input></form></body>"),
            None,
        );
        assert_eq!(a.similarity(&c), 0.0);
        // One element added: some shingles change, not all.
        let d_tree = tree(&page.replace("<p>z</p>", "<p>z</p><h2>new</h2>"));
        let d = Sketch::of_tree(&d_tree, None);
        let exact = jaccard(&shingles(&tree(page), None), &shingles(&d_tree, None));
        assert!(exact > 0.5 && exact < 1.0, "{exact}");
        assert!((a.similarity(&d) - exact).abs() < 0.25);
        // Empty pages: identical; empty against non-empty: nothing shared.
        let e = Sketch::of_tree(&PageTree::default(), None);
        assert_eq!(e.similarity(&Sketch::default()), 1.0);
        assert_eq!(e.similarity(&a), 0.0);
    }

    #[test]
    fn listed_nodes_restrict_the_paths() {
        let t = tree("<body><ul><li><a>x</a></li><li><a>y</a></li></ul></body>");
        // body ul li a #text li a #text: keep body ul li a (one copy).
        let all = shingles(&t, None);
        let kept = shingles(&t, Some(&[0, 1, 2, 3]));
        assert_eq!(kept.len(), 2, "4 paths, windows of 3");
        assert_eq!(all.len(), 4, "6 paths, 4 distinct windows");
        assert_eq!(
            kept,
            shingles(&tree("<body><ul><li><a>x</a></li></ul></body>"), None)
        );
    }

    #[test]
    fn sketches_are_stable_across_runs_and_machines() {
        // Stored sketches must stay comparable: these values pin the
        // hash functions (BLAKE3 of tag names, SplitMix64 seeds). If this
        // fails, the sketch format changed and stored ones are invalid.
        let s = Sketch::of_tree(&tree("<body><div><p>x</p></div></body>"), None);
        let again = Sketch::of_tree(&tree("<body><div><p>y</p></div></body>"), None);
        assert_eq!(s, again);
        let json = serde_json::to_string(&s).unwrap_or_default();
        let back: Sketch = serde_json::from_str(&json).unwrap_or_default();
        assert_eq!(back, s);
        assert_eq!(&s.mins[..3], &PINNED);
    }

    const PINNED: [u32; 3] = [397_044_258, 734_201_286, 536_010_190];
}
