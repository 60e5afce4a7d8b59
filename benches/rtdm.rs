//! RTDM time per pair against Zhang–Shasha (the exact tree edit distance)
//! on real page trees, and RTDM, pattern learning and matching on whole
//! pages of one template.
//!
//! `cargo bench --bench rtdm` runs criterion groups, then prints a table
//! measured in the same run (fastest of several runs each, both
//! algorithms on the same pair): RTDM cost only, RTDM with its mapping,
//! Zhang–Shasha, and the ratio ZS / RTDM. Inputs come from
//! `../shared/corpus/changes/web-monitoring-diff/versions/` (or
//! `$SEMCLIP_CORPUS`): two captures each of an energy.gov and a fema.gov
//! page, labelled with texts (a text leaf's label is its text's hash, so
//! the captures differ where texts changed) and structure only.
//! Zhang–Shasha needs O(n1·n2) memory and much more time, so besides the
//! whole pages (up to 2,500 nodes) it runs on subtrees of about 100, 300
//! and 1,000 nodes that the whole-page mapping pairs and that differ.
//! RTDM's identical-subtree detection makes equal pairs nearly free; the
//! rows show pairs with real differences. Without the corpus the benchmark
//! says so and does nothing.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use criterion::Criterion;
use semclip::page::dom::Dom;
use semclip::template::pattern::Pattern;
use semclip::template::rtdm::Rtdm;
use semclip::template::ted::{Cost, LTree, Labels, TextLabels, UnitCosts, ted_unit};
use semclip::template::tree::PageTree;

const VERSIONS: [(&str, &str, &str); 2] = [
    (
        "energy.gov",
        "775a8b04-9bac-4d0d-8db0-a8e133c4a964",
        "9d4de183-a186-456c-bffb-55d82989877d",
    ),
    (
        "fema.gov",
        "f2d5d701-707a-42e0-8881-653346d01e0a",
        "fc74d750-c651-46b7-bf74-434ad8c62e04",
    ),
];

/// Whole pages above this many nodes (either side) skip Zhang–Shasha.
const ZS_MAX_NODES: usize = 2_500;

fn corpus() -> Option<PathBuf> {
    let dir = std::env::var_os("SEMCLIP_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"));
    dir.is_dir().then_some(dir)
}

struct Page {
    dom: Dom,
    tree: PageTree,
}

fn load(path: &std::path::Path) -> Option<Page> {
    let bytes = std::fs::read(path).ok()?;
    let text = semclip::page::source::decode(&bytes, None, None).text;
    let dom = Dom::parse(&text);
    let tree = PageTree::from_dom(&dom);
    Some(Page { dom, tree })
}

fn fastest<T>(runs: usize, mut f: impl FnMut() -> T) -> Duration {
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            black_box(f());
            t.elapsed()
        })
        .min()
        .unwrap_or_default()
}

/// A pair of trees to compare.
struct Pair {
    name: String,
    t1: LTree,
    t2: LTree,
}

/// Matched subtrees of about `target` nodes that differ: among the pairs
/// of the whole-page RTDM mapping whose subtrees are not equal, the one
/// whose `t1` side is closest to `target` nodes.
fn matched_subtrees(t1: &LTree, t2: &LTree, target: usize) -> Option<(LTree, LTree)> {
    let r = Rtdm::new().mapping(t1, t2, &UnitCosts);
    let mut candidates: Vec<(u32, u32)> = r
        .mapping
        .iter()
        .copied()
        .filter(|&(a, b)| t1.size(a as usize) > 1 && t2.size(b as usize) > 1)
        .collect();
    candidates.sort_by_key(|&(a, _)| t1.size(a as usize).abs_diff(target));
    candidates
        .iter()
        .map(|&(a, b)| (t1.subtree(a as usize), t2.subtree(b as usize)))
        .find(|(s1, s2)| s1 != s2)
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

#[expect(
    clippy::too_many_lines,
    reason = "the benchmark's report, one measure after another"
)]
fn main() {
    let Some(dir) = corpus() else {
        eprintln!(
            "corpus not found (../shared/corpus or $SEMCLIP_CORPUS): nothing to benchmark for RTDM"
        );
        return;
    };
    let dir = dir.join("changes/web-monitoring-diff/versions");
    let mut labels = Labels::new();
    let mut sites = Vec::new();
    // Pairs for the RTDM / ZS table.
    let mut pairs: Vec<Pair> = Vec::new();
    for (name, a, b) in VERSIONS {
        let (Some(pa), Some(pb)) = (load(&dir.join(a)), load(&dir.join(b))) else {
            eprintln!("{name}: captures missing under {}, skipped", dir.display());
            continue;
        };
        // Text-sensitive labels: the captures differ where texts changed.
        let c1 = LTree::from_page(&pa.tree, &mut labels, TextLabels::Content(&pa.dom));
        let c2 = LTree::from_page(&pb.tree, &mut labels, TextLabels::Content(&pb.dom));
        for target in [100, 300, 1_000] {
            if let Some((s1, s2)) = matched_subtrees(&c1, &c2, target) {
                pairs.push(Pair {
                    name: format!("{name} changed subtree ~{target}, texts"),
                    t1: s1,
                    t2: s2,
                });
            }
        }
        pairs.push(Pair {
            name: format!("{name} whole page, texts"),
            t1: c1,
            t2: c2,
        });
        // Structure only (what clustering and patterns compare).
        let t1 = LTree::from_page(&pa.tree, &mut labels, TextLabels::Uniform);
        let t2 = LTree::from_page(&pb.tree, &mut labels, TextLabels::Uniform);
        pairs.push(Pair {
            name: format!("{name} whole page, structure"),
            t1: t1.clone(),
            t2: t2.clone(),
        });
        sites.push((name, pa, pb, t1, t2));
    }
    if sites.is_empty() {
        return;
    }
    if sites.len() == 2 {
        // Different templates: subtrees of about 300 nodes of each site.
        let pick = |t: &LTree| {
            (0..t.len())
                .min_by_key(|&i| t.size(i).abs_diff(300))
                .map(|i| t.subtree(i))
        };
        if let (Some(s1), Some(s2)) = (pick(&sites[0].3), pick(&sites[1].3)) {
            pairs.push(Pair {
                name: "energy.gov vs fema.gov subtree ~300, structure".to_owned(),
                t1: s1,
                t2: s2,
            });
        }
    }

    let mut c = Criterion::default()
        .sample_size(10)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_millis(500))
        .configure_from_args();
    for (name, pa, pb, t1, t2) in &sites {
        let mut g = c.benchmark_group(format!("rtdm/{name}"));
        let mut w = Rtdm::new();
        g.bench_function("whole-page-cost", |b| {
            b.iter(|| w.distance(black_box(t1), black_box(t2), &UnitCosts))
        });
        g.bench_function("whole-page-mapping", |b| {
            b.iter(|| w.mapping(black_box(t1), black_box(t2), &UnitCosts))
        });
        g.bench_function("learn-pattern-2-pages", |b| {
            b.iter(|| Pattern::learn(&[(&pa.dom, &pa.tree), (&pb.dom, &pb.tree)]))
        });
        if let Some(p) = Pattern::learn(&[(&pa.dom, &pa.tree), (&pb.dom, &pb.tree)]) {
            g.bench_function("match-page", |b| {
                b.iter(|| p.match_page(black_box(&pb.tree)))
            });
        }
        g.finish();
    }
    if let Some(p) = pairs.iter().find(|p| p.name.contains("~300")) {
        let mut g = c.benchmark_group(format!("ted-vs-rtdm/{}", p.name));
        let mut w = Rtdm::new();
        g.bench_function("rtdm-cost", |b| {
            b.iter(|| w.distance(black_box(&p.t1), black_box(&p.t2), &UnitCosts))
        });
        g.bench_function("zhang-shasha", |b| {
            b.iter(|| ted_unit(black_box(&p.t1), black_box(&p.t2)))
        });
        g.finish();
    }
    c.final_summary();

    println!("\nRTDM against Zhang–Shasha, unit costs, same pairs, fastest of several runs:\n");
    println!(
        "| pair | nodes | RTDM | TED | RTDM cost (µs) | RTDM + mapping (µs) | ZS (µs) | ZS / RTDM |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut w = Rtdm::new();
    for p in &pairs {
        let cost: Cost = w.distance(&p.t1, &p.t2, &UnitCosts);
        let runs = if p.t1.len() > 1_000 { 5 } else { 20 };
        let rt = fastest(runs, || w.distance(&p.t1, &p.t2, &UnitCosts));
        let rm = fastest(runs, || w.mapping(&p.t1, &p.t2, &UnitCosts));
        let (exact, zs) = if p.t1.len().max(p.t2.len()) <= ZS_MAX_NODES {
            let zruns = if p.t1.len() > 500 { 1 } else { 5 };
            (
                ted_unit(&p.t1, &p.t2).to_string(),
                Some(fastest(zruns, || ted_unit(&p.t1, &p.t2))),
            )
        } else {
            ("-".to_owned(), None)
        };
        println!(
            "| {} | {} / {} | {cost} | {exact} | {:.1} | {:.1} | {} | {} |",
            p.name,
            p.t1.len(),
            p.t2.len(),
            secs(rt) * 1e6,
            secs(rm) * 1e6,
            zs.map_or("skipped (too large)".to_owned(), |z| format!(
                "{:.0}",
                secs(z) * 1e6
            )),
            zs.map_or("-".to_owned(), |z| format!("{:.0}×", secs(z) / secs(rt))),
        );
    }
    println!("\nne-patterns on the two captures of each page:\n");
    println!("| page | nodes | learn from 2 pages (ms) | match a page (ms) | pattern nodes |");
    println!("|---|---:|---:|---:|---:|");
    for (name, pa, pb, _, _) in &sites {
        let pages = [(&pa.dom, &pa.tree), (&pb.dom, &pb.tree)];
        let learn = fastest(5, || Pattern::learn(&pages));
        if let Some(p) = Pattern::learn(&pages) {
            let m = fastest(10, || p.match_page(&pb.tree));
            println!(
                "| {name} | {} / {} | {:.2} | {:.2} | {} |",
                pa.tree.len(),
                pb.tree.len(),
                secs(learn) * 1e3,
                secs(m) * 1e3,
                p.len()
            );
        }
    }
}
