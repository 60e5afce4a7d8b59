//! Semantic diff cost against building the hierarchy of the same page.
//!
//! `cargo bench --bench diff` prints (after criterion's own groups) a table
//! measured in the same run: the diff of a quote page of 300 issuers x 10
//! values with 10% of the values changed, as a ratio to building that page's
//! hierarchy, and scaling runs at about 1k, 10k and 100k branches with the
//! fitted slope of log(time) over log(branches).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use semclip::diff::{branch_paths, diff};
use semclip::hierarchy::Hierarchy;

#[path = "quote_page.rs"]
mod quote_page;

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

fn main() {
    let old_html = quote_page::quote_page(1, 300);
    let new_html = quote_page::quote_page_revision(1, 300, 1, 10);
    let old = Hierarchy::from_html(&old_html, None);
    let new = Hierarchy::from_html(&new_html, None);

    let mut c = Criterion::default().configure_from_args();
    c.bench_function("quote-300x10/hierarchy", |b| {
        b.iter(|| Hierarchy::from_html(black_box(&new_html), None))
    });
    c.bench_function("quote-300x10/diff-10pct", |b| {
        b.iter(|| diff(black_box(&old), black_box(&new)))
    });
    c.final_summary();

    let changes = diff(&old, &new).len();
    let build = fastest(30, || Hierarchy::from_html(&new_html, None));
    let d = fastest(30, || diff(&old, &new));
    println!("\n| input | branches | changes | build (ms) | diff (ms) | diff / build |");
    println!("|---|---:|---:|---:|---:|---:|");
    let n = branch_paths(&new).len();
    println!(
        "| quote page 300x10, 10% changed | {n} | {changes} | {:.2} | {:.2} | {:.3} |",
        build.as_secs_f64() * 1e3,
        d.as_secs_f64() * 1e3,
        d.as_secs_f64() / build.as_secs_f64()
    );
    let mut points = Vec::new();
    let mut build_points = Vec::new();
    for rows in [111usize, 1_111, 11_111] {
        let a_html = quote_page::quote_page(1, rows);
        let b_html = quote_page::quote_page_revision(1, rows, 1, 10);
        let a = Hierarchy::from_html(&a_html, None);
        let b = Hierarchy::from_html(&b_html, None);
        let n = branch_paths(&b).len();
        let runs = if rows >= 10_000 { 5 } else { 10 };
        let build = fastest(runs, || Hierarchy::from_html(&b_html, None));
        let d = fastest(runs, || diff(&a, &b));
        points.push(((n as f64).ln(), d.as_secs_f64().ln()));
        build_points.push(((n as f64).ln(), build.as_secs_f64().ln()));
        println!(
            "| quote page {rows}x10, 10% changed | {n} | {} | {:.2} | {:.2} | {:.3} |",
            diff(&a, &b).len(),
            build.as_secs_f64() * 1e3,
            d.as_secs_f64() * 1e3,
            d.as_secs_f64() / build.as_secs_f64()
        );
    }
    println!(
        "\nslope of log(time) over log(branches), 1.0 = linear (n log n over this range fits about 1.1):\n  diff  {:.2}\n  build {:.2} (the baseline, same pages, same run)",
        slope(&points),
        slope(&build_points)
    );
}

/// Least-squares slope of `y` over `x`.
fn slope(points: &[(f64, f64)]) -> f64 {
    let k = points.len() as f64;
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let (mx, my) = (sx / k, sy / k);
    let num: f64 = points.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    let den: f64 = points.iter().map(|(x, _)| (x - mx).powi(2)).sum();
    num / den
}
