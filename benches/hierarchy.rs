//! Hierarchy build time against bare html5ever parsing of the same bytes.
//!
//! `cargo bench --bench hierarchy` runs criterion groups per input (parse,
//! hierarchy, hierarchy + XML) and then prints a ratio table measured in
//! the same run by interleaving the two jobs, so machine noise hits both.
//! Inputs: a generated ~1 MB quote page and the largest real pages of
//! `../shared/corpus/` (skipped with a message when absent).

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use semclip::hierarchy::write::{XmlOptions, to_xml};
use semclip::hierarchy::{Hierarchy, build};
use semclip::page::dom::Dom;

#[path = "quote_page.rs"]
mod quote_page;

fn inputs() -> Vec<(String, String)> {
    let mut v = vec![("quote-page-1mb".to_owned(), quote_page::quote_page(4, 330))];
    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if !corpus.is_dir() {
        eprintln!(
            "corpus not found at {}: benchmarking the generated page only",
            corpus.display()
        );
        return v;
    }
    for rel in [
        "articles/readability/wikipedia/source.html",
        "articles/readability/yahoo-2/source.html",
        "records/next-eval/html/22.html",
        "changes/web-monitoring-diff/versions/f2d5d701-707a-42e0-8881-653346d01e0a",
    ] {
        let p = corpus.join(rel);
        if let Ok(bytes) = std::fs::read(&p) {
            let text = semclip::page::source::decode(&bytes, None, None).text;
            v.push((rel.to_owned(), text));
        }
    }
    v
}

fn bench(c: &mut Criterion, inputs: &[(String, String)]) {
    for (name, html) in inputs {
        let mut g = c.benchmark_group(name.as_str());
        g.throughput(Throughput::Bytes(html.len() as u64));
        g.sample_size(20);
        g.bench_function("html5ever-parse", |b| {
            b.iter(|| Dom::parse(black_box(html)))
        });
        g.bench_function("hierarchy", |b| {
            b.iter(|| Hierarchy::from_html(black_box(html), None))
        });
        g.bench_function("hierarchy+xml", |b| {
            b.iter(|| {
                to_xml(
                    &Hierarchy::from_html(black_box(html), None),
                    XmlOptions::default(),
                )
            })
        });
        g.finish();
    }
}

/// The fastest run: for CPU-bound work the minimum is the least noisy
/// estimate (noise only ever adds time).
fn fastest(v: Vec<Duration>) -> Duration {
    v.into_iter().min().unwrap_or_default()
}

/// Interleaved timing: parse, build-only, parse+build, parse+build+xml.
fn ratios(inputs: &[(String, String)]) {
    println!("\n| input | bytes | parse (ms) | hierarchy / parse | hierarchy+XML / parse |");
    println!("|---|---:|---:|---:|---:|");
    for (name, html) in inputs {
        let (mut p, mut h, mut x) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..25 {
            let t = Instant::now();
            black_box(Dom::parse(html));
            p.push(t.elapsed());
            let t = Instant::now();
            let dom = Dom::parse(html);
            black_box(build(&dom, None));
            h.push(t.elapsed());
            let t = Instant::now();
            black_box(to_xml(
                &Hierarchy::from_html(html, None),
                XmlOptions::default(),
            ));
            x.push(t.elapsed());
        }
        let (p, h, x) = (fastest(p), fastest(h), fastest(x));
        println!(
            "| {name} | {} | {:.2} | {:.2} | {:.2} |",
            html.len(),
            p.as_secs_f64() * 1e3,
            h.as_secs_f64() / p.as_secs_f64(),
            x.as_secs_f64() / p.as_secs_f64()
        );
    }
}

fn main() {
    let inputs = inputs();
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c, &inputs);
    c.final_summary();
    ratios(&inputs);
}
