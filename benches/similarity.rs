//! Pairwise structural similarity of 1,000 real pages on this machine's
//! cores, against Qiu's thesis's figure of 1 ms per pair single-threaded
//! (500 hours for the 1.8·10⁹ pairs of 60,000 pages).
//!
//! `cargo bench --bench similarity` prints one table, every row measured in
//! the same run:
//!
//! - features per page (simplified tree, `tag+depth` sequence, suffix-array
//!   repeat collapse, path-shingle sketch, histogram);
//! - one pair single-threaded: the exact depth-weighted LCS (`elcs`), the
//!   histogram bound and the sketch comparison, averaged over a fixed
//!   random sample of pairs (the baseline the parallel rows are compared
//!   with);
//! - the whole 1,000 × 1,000 matrix (499,500 pairs): every pair exact on
//!   all cores, then pruned for clustering at the default threshold
//!   (histogram bound and sketches skip the pairs that cannot be close),
//!   with how many pairs each way decided.
//!
//! Pages: every real page of `../shared/corpus` (or `$SEMCLIP_CORPUS`)
//! with at least [`MIN_ELEMENTS`] elements: the 130 readability articles,
//! the 82 next-eval list pages and the 4 web-monitoring captures. That is
//! about 216 pages, from many sites; to reach 1,000 each page also comes in
//! versions with a few random edits of its simplified tree (a subtree
//! deleted or a sibling subtree duplicated, as a site's pages of one
//! template differ), seeded, so every run compares the same pages. Without
//! the corpus the benchmark says so and does nothing.
//!
//! `SEMCLIP_SIM_PAGES=N` changes the page count (for a quick look).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use rayon::prelude::*;
use semclip::page::dom::Dom;
use semclip::template::cluster::{DEFAULT_THRESHOLD, DistanceMatrix, MatrixOptions, PageFeatures};
use semclip::template::seq::{Interner, Sequence};
use semclip::template::tree::{PNode, PageTree};

/// Pages with fewer elements are hand-made fixtures, not pages.
const MIN_ELEMENTS: usize = 30;
/// Pages in the matrix.
const PAGES: usize = 1_000;
/// Pairs in the single-threaded per-pair sample.
const SAMPLE_PAIRS: usize = 2_000;
/// Qiu's thesis (docs/algorithms.md, "Similarity"): 1 ms per pair.
const SEED_MS_PER_PAIR: f64 = 1.0;

fn corpus() -> Option<PathBuf> {
    let dir = std::env::var_os("SEMCLIP_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"));
    dir.is_dir().then_some(dir)
}

fn files(dir: &Path, keep: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    out.retain(|p| keep(p));
    out.sort();
    out
}

/// The corpus pages' simplified trees, fixtures left out.
fn real_pages(root: &Path) -> Vec<PageTree> {
    let mut paths = Vec::new();
    for d in files(&root.join("articles/readability"), |p| p.is_dir()) {
        paths.push(d.join("source.html"));
    }
    paths.extend(files(&root.join("records/next-eval/html"), |p| {
        p.extension().is_some_and(|e| e == "html")
    }));
    paths.extend(files(
        &root.join("changes/web-monitoring-diff/versions"),
        |p| p.is_file(),
    ));
    paths
        .par_iter()
        .filter_map(|p| {
            let bytes = std::fs::read(p).ok()?;
            let text = semclip::page::source::decode(&bytes, None, None).text;
            let tree = PageTree::from_dom(&Dom::parse(&text));
            let elements = tree.nodes.iter().filter(|n| !n.is_text()).count();
            (elements >= MIN_ELEMENTS).then_some(tree)
        })
        .collect()
}

/// Recomputes parents and subtree ends from pre-order depths.
fn relink(mut nodes: Vec<PNode>) -> PageTree {
    let mut stack: Vec<usize> = Vec::new();
    let len = nodes.len();
    for i in 0..len {
        let depth = nodes[i].depth;
        while let Some(&top) = stack.last() {
            if nodes[top].depth >= depth {
                nodes[top].end = i as u32;
                stack.pop();
            } else {
                break;
            }
        }
        nodes[i].parent = stack.last().map(|&p| p as u32);
        stack.push(i);
    }
    for i in stack {
        nodes[i].end = len as u32;
    }
    PageTree { nodes }
}

/// `tree` with `edits` random edits: a subtree of at most 5% of the page
/// deleted, or duplicated beside itself.
fn version(tree: &PageTree, edits: usize, rng: &mut StdRng) -> PageTree {
    let mut t = tree.clone();
    for _ in 0..edits {
        let n = t.nodes.len();
        if n < 3 {
            break;
        }
        let limit = (n / 20).max(1);
        // A non-root node with a small enough subtree (a few tries).
        let Some(i) = (0..20)
            .map(|_| rng.random_range(1..n))
            .find(|&i| t.nodes[i].size(i) <= limit)
        else {
            continue;
        };
        let end = t.nodes[i].end as usize;
        let mut nodes = t.nodes;
        if rng.random_bool(0.5) {
            nodes.drain(i..end);
        } else {
            let copy: Vec<PNode> = nodes[i..end].to_vec();
            nodes.splice(end..end, copy);
        }
        t = relink(nodes);
    }
    t
}

fn per(d: Duration, n: usize) -> f64 {
    d.as_secs_f64() * 1e3 / n.max(1) as f64
}

#[expect(
    clippy::too_many_lines,
    reason = "the benchmark's report, one measure after another"
)]
fn main() {
    let Some(root) = corpus() else {
        eprintln!("corpus not found (../shared/corpus or $SEMCLIP_CORPUS): nothing to benchmark");
        return;
    };
    let want = std::env::var("SEMCLIP_SIM_PAGES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(PAGES);
    let base = real_pages(&root);
    if base.is_empty() {
        eprintln!("no pages under {}", root.display());
        return;
    }
    let mut rng = StdRng::seed_from_u64(1);
    let trees: Vec<PageTree> = (0..want)
        .map(|i| {
            let b = &base[i % base.len()];
            match i / base.len() {
                0 => b.clone(),
                v => version(b, v, &mut rng),
            }
        })
        .collect();
    let nodes: usize = trees.iter().map(|t| t.len()).sum();

    // Features: interning is sequential, the rest parallel.
    let t = Instant::now();
    let mut interner = Interner::new();
    let raw: Vec<Sequence> = trees
        .iter()
        .map(|t| Sequence::uncollapsed(t, &mut interner))
        .collect();
    let feats: Vec<PageFeatures> = trees
        .par_iter()
        .zip(raw)
        .map(|(t, s)| PageFeatures::of_sequence(t, s))
        .collect();
    let features = t.elapsed();
    let tokens: usize = feats.iter().map(|f| f.sequence.len()).sum();

    // Single-threaded per pair, on a fixed sample.
    let mut prng = StdRng::seed_from_u64(2);
    let sample: Vec<(usize, usize)> = (0..SAMPLE_PAIRS)
        .map(|_| {
            loop {
                let (a, b) = (prng.random_range(0..want), prng.random_range(0..want));
                if a != b {
                    break (a, b);
                }
            }
        })
        .collect();
    let time = |f: &dyn Fn(&PageFeatures, &PageFeatures) -> f64| {
        let t = Instant::now();
        for &(a, b) in &sample {
            black_box(f(&feats[a], &feats[b]));
        }
        t.elapsed()
    };
    let exact_one = time(&|a, b| a.similarity(b));
    let bound_one = time(&|a, b| a.similarity_bound(b));
    let sketch_one = time(&|a, b| a.sketch.similarity(&b.sketch));

    let pairs = want * (want - 1) / 2;
    let t = Instant::now();
    let exact = DistanceMatrix::new(&feats, &MatrixOptions::exact());
    let exact_all = t.elapsed();
    let t = Instant::now();
    let pruned = DistanceMatrix::new(&feats, &MatrixOptions::pruned(DEFAULT_THRESHOLD));
    let pruned_all = t.elapsed();
    // The pruned matrix agrees with the exact one wherever it computed.
    let mut close_exact = 0usize;
    let mut close_pruned = 0usize;
    for i in 0..want {
        for j in i + 1..want {
            let need = DEFAULT_THRESHOLD as f32;
            close_exact += usize::from(exact.get(i, j) <= need);
            close_pruned += usize::from(pruned.get(i, j) <= need);
        }
    }

    let threads = rayon::current_num_threads();
    let seed_hours = |ms_per_pair: f64| 60_000f64 * 59_999.0 / 2.0 * ms_per_pair / 3.6e6;
    println!(
        "{want} pages ({} distinct corpus pages, the rest edited versions), {nodes} tree nodes, \
         {tokens} tokens after collapsing; {pairs} pairs; {threads} rayon threads\n",
        base.len().min(want)
    );
    println!("| step | time | per pair / page | vs seed 001 (1 ms/pair) |");
    println!("|---|---|---|---|");
    println!(
        "| features, {want} pages ({threads} threads) | {:.2} s | {:.2} ms/page | |",
        features.as_secs_f64(),
        per(features, want)
    );
    let exact_ms = per(exact_one, SAMPLE_PAIRS);
    println!(
        "| elcs, one pair, 1 thread (baseline; {SAMPLE_PAIRS} sampled pairs) | | {exact_ms:.4} ms | {:.1}× faster |",
        SEED_MS_PER_PAIR / exact_ms
    );
    println!(
        "| histogram bound, one pair, 1 thread | | {:.5} ms | {:.0}× faster |",
        per(bound_one, SAMPLE_PAIRS),
        SEED_MS_PER_PAIR / per(bound_one, SAMPLE_PAIRS)
    );
    println!(
        "| sketch similarity, one pair, 1 thread | | {:.5} ms | {:.0}× faster |",
        per(sketch_one, SAMPLE_PAIRS),
        SEED_MS_PER_PAIR / per(sketch_one, SAMPLE_PAIRS)
    );
    let exact_pp = per(exact_all, pairs);
    println!(
        "| full matrix, every pair exact ({threads} threads) | {:.2} s | {exact_pp:.4} ms | {:.1}× faster; {:.2}× the 1-thread baseline |",
        exact_all.as_secs_f64(),
        SEED_MS_PER_PAIR / exact_pp,
        exact_ms / exact_pp
    );
    let pruned_pp = per(pruned_all, pairs);
    println!(
        "| full matrix, pruned at threshold {DEFAULT_THRESHOLD} ({threads} threads) | {:.2} s | {pruned_pp:.4} ms | {:.0}× faster; {:.1}× the 1-thread baseline |",
        pruned_all.as_secs_f64(),
        SEED_MS_PER_PAIR / pruned_pp,
        exact_ms / pruned_pp
    );
    println!(
        "\npruned matrix: {} pairs exact, {} skipped by the histogram bound, {} by the sketches; \
         pairs within the threshold: {close_pruned} pruned, {close_exact} exact",
        pruned.exact, pruned.pruned_by_bound, pruned.pruned_by_sketch
    );
    println!(
        "60,000 pages at these rates: seed 001 {:.0} h; every pair exact {:.1} h; pruned {:.1} h \
         (on {threads} threads; the matrix itself would need a sparse store at that size)",
        seed_hours(SEED_MS_PER_PAIR),
        seed_hours(exact_pp),
        seed_hours(pruned_pp)
    );
}
