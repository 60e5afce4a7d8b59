//! Record extraction against the next-eval ground truth: 82 real list
//! pages, every data record marked as a list of index XPaths.
//!
//! Scored the way the data set's authors score (corpus SOURCES.md): a
//! record is a set of XPaths; a predicted and a true record overlap by
//! their Jaccard index; records are paired one to one to maximise the total
//! overlap (Hungarian assignment); precision = matched overlap / predicted
//! records, recall = matched overlap / true records. Reported both *micro*
//! (sums over all records of all pages) and *page-averaged* (the mean of
//! each page's P, R and F1).

use std::path::Path;

use semclip::extract::records;
use semclip::page::dom::Dom;

use crate::util::{corpus, read_page};

#[path = "../../examples/support/record_scoring.rs"]
mod scoring;

use scoring::{f1, matched_overlap};

fn rec(xpaths: &[&str]) -> Vec<String> {
    xpaths.iter().map(|s| s.to_string()).collect()
}

#[test]
fn scoring_pairs_records_one_to_one_by_jaccard_overlap() {
    // Exact hits count 1 each; a miss counts nothing.
    let truth = [rec(&["/a"]), rec(&["/b"]), rec(&["/c"])];
    let pred = [rec(&["/a"]), rec(&["/c"]), rec(&["/d"])];
    assert_eq!(matched_overlap(&pred, &truth), 2.0);
    // A two-element true record and a predicted one sharing one element:
    // Jaccard 1/2.
    let truth = [rec(&["/tr1", "/tr2"])];
    assert_eq!(matched_overlap(&[rec(&["/tr1"])], &truth), 0.5);
    // One to one: two predictions touching one true record count once,
    // the better one.
    let pred = [rec(&["/tr1"]), rec(&["/tr1", "/tr2", "/tr3"])];
    assert!((matched_overlap(&pred, &truth) - 2.0 / 3.0).abs() < 1e-12);
    // The assignment maximises the total: taking records in order, x1
    // would take t1 (2/3 beats 2/4), but giving t1 to x2 (1) and t2 to x1
    // scores more.
    let truth = [rec(&["/p", "/q"]), rec(&["/p", "/r", "/s"])];
    let pred = [rec(&["/p", "/q", "/r"]), rec(&["/p", "/q"])];
    // x1-t2 = 2/4, x2-t1 = 1: total 1.5 (x1-t1 = 2/3 with x2-t2 = 1/4
    // would give 0.917).
    assert!((matched_overlap(&pred, &truth) - 1.5).abs() < 1e-12);
    assert_eq!(matched_overlap(&[], &truth), 0.0);
}

/// P, R, F1 micro and page-averaged over the next-eval pages.
struct Scores {
    micro: (f64, f64, f64),
    pages: (f64, f64, f64),
    worst: Vec<(f64, String)>,
}

fn score_corpus(dir: &Path) -> Scores {
    let mut names: Vec<(u32, String)> = std::fs::read_dir(dir.join("html"))
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.strip_suffix(".html")?.to_owned();
            Some((name.parse().ok()?, name))
        })
        .collect();
    names.sort();
    let (mut matched, mut n_pred, mut n_true) = (0.0, 0usize, 0usize);
    let (mut sp, mut sr, mut sf) = (0.0, 0.0, 0.0);
    let mut worst = Vec::new();
    for (_, name) in &names {
        let html = read_page(&dir.join(format!("html/{name}.html")));
        let truth: Vec<Vec<String>> = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("groundTruth/{name}.json"))).unwrap(),
        )
        .unwrap();
        let found = records::extract(&Dom::parse(&html));
        let pred: Vec<Vec<String>> = found.records.into_iter().map(|r| r.xpaths).collect();
        let m = matched_overlap(&pred, &truth);
        let p = if pred.is_empty() {
            0.0
        } else {
            m / pred.len() as f64
        };
        let r = if truth.is_empty() {
            0.0
        } else {
            m / truth.len() as f64
        };
        sp += p;
        sr += r;
        sf += f1(p, r);
        worst.push((f1(p, r), name.clone()));
        matched += m;
        n_pred += pred.len();
        n_true += truth.len();
    }
    worst.sort_by(|a, b| a.0.total_cmp(&b.0));
    worst.truncate(10);
    let (p, r) = (matched / n_pred as f64, matched / n_true as f64);
    let n = names.len() as f64;
    Scores {
        micro: (p, r, f1(p, r)),
        pages: (sp / n, sr / n, sf / n),
        worst,
    }
}

#[test]
fn next_eval_records_f1() {
    let Some(corpus) = corpus("next_eval_records_f1") else {
        return;
    };
    let dir = corpus.join("records/next-eval");
    if crate::util::require_dir("next_eval_records_f1", dir.join("groundTruth")).is_none() {
        return;
    }
    let s = score_corpus(&dir);
    eprintln!(
        "next-eval records: micro P {:.4} R {:.4} F1 {:.4}; page-averaged P {:.4} R {:.4} F1 {:.4}",
        s.micro.0, s.micro.1, s.micro.2, s.pages.0, s.pages.1, s.pages.2
    );
    eprintln!("worst pages (F1, page): {:?}", s.worst);
    // Floors just under the measured 0.7611 micro / 0.7117 page-averaged
    // F1, P 0.8748, R 0.6736 (bench/records/README.md): a regression
    // fails, noise does not.
    assert!(s.micro.2 >= 0.76, "micro F1 {:.4} < 0.76", s.micro.2);
    assert!(
        s.pages.2 >= 0.71,
        "page-averaged F1 {:.4} < 0.71",
        s.pages.2
    );
    assert!(s.micro.0 >= 0.87, "micro precision {:.4} < 0.87", s.micro.0);
    assert!(s.micro.1 >= 0.67, "micro recall {:.4} < 0.67", s.micro.1);
}

/// Field names and row keys of `extract: records` over the next-eval
/// pages: the share of fields named by position (`f1`, `f2` ...) and the
/// share of rows whose key needed a ` #N` suffix.
struct Naming {
    fields: usize,
    positional: usize,
    rows: usize,
    suffixed: usize,
    unkeyed: usize,
}

fn is_positional(name: &str) -> bool {
    name.strip_prefix('f')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn naming_over(dir: &Path) -> Naming {
    let mut n = Naming {
        fields: 0,
        positional: 0,
        rows: 0,
        suffixed: 0,
        unkeyed: 0,
    };
    for path in crate::util::html_files(&dir.join("html")) {
        let html = read_page(&path);
        let found = records::extract(&Dom::parse(&html));
        for r in &found.records {
            n.fields += r.fields.len();
            n.positional += r.fields.iter().filter(|f| is_positional(&f.name)).count();
        }
        let table = semclip::extract::vocabulary::records_node(
            &found,
            semclip::hierarchy::number::DecimalStyle::Point,
        );
        let mut keys = std::collections::HashSet::new();
        for row in &table.children {
            n.rows += 1;
            match &row.key {
                Some(k) => {
                    assert!(
                        keys.insert(k.clone()),
                        "{}: key {k:?} twice",
                        path.display()
                    );
                    n.suffixed += usize::from(row.attr("ordinal").is_some());
                }
                None => n.unkeyed += 1,
            }
        }
    }
    n
}

#[test]
fn next_eval_fields_have_names_and_records_distinct_keys() {
    let Some(corpus) = corpus("next_eval_fields_have_names") else {
        return;
    };
    let dir = corpus.join("records/next-eval");
    if crate::util::require_dir("next_eval_fields_have_names", dir.join("html")).is_none() {
        return;
    }
    let n = naming_over(&dir);
    let share = n.positional as f64 / n.fields.max(1) as f64;
    let suffixed = n.suffixed as f64 / n.rows.max(1) as f64;
    eprintln!(
        "next-eval names: {} of {} fields named f… ({share:.3}); rows {}, key with ' #N' {} ({suffixed:.3}), no key {}",
        n.positional, n.fields, n.rows, n.suffixed, n.unkeyed
    );
    // Bounds just above the measured shares (bench/records/README.md,
    // "Field names and keys"): positional names were 0.818 of all fields
    // before fields were named from the page.
    assert!(
        share <= POSITIONAL_BOUND,
        "f… share {share:.3} > {POSITIONAL_BOUND}"
    );
    assert!(
        suffixed <= SUFFIXED_BOUND,
        "#N share {suffixed:.3} > {SUFFIXED_BOUND}"
    );
    assert!(
        n.unkeyed * 100 <= n.rows,
        "{} of {} rows without a key",
        n.unkeyed,
        n.rows
    );
}

/// Upper bound on the share of next-eval fields named `f…` (measured
/// 0.134).
const POSITIONAL_BOUND: f64 = 0.15;

/// Upper bound on the share of next-eval rows whose key needed ` #N`
/// (measured 0.237; 0.281 when rows were keyed by their first field).
const SUFFIXED_BOUND: f64 = 0.26;

/// A list page without tables: ten job posts in `<div>`s.
fn job_list() -> String {
    let jobs: String = [
        ("Rust engineer", "Acme", "Berlin", "2026-11-02"),
        ("Backend developer", "Globex", "Lisbon", "2026-11-01"),
        (
            "Site reliability engineer",
            "Initech",
            "Remote",
            "2026-10-30",
        ),
        ("Data engineer", "Umbrella", "Madrid", "2026-10-29"),
        ("Platform engineer", "Hooli", "Vienna", "2026-10-28"),
        ("Embedded developer", "Stark", "Prague", "2026-10-27"),
    ]
    .iter()
    .enumerate()
    .map(|(i, (t, c, l, d))| {
        format!(
            r#"<div class="job-card"><h3 class="job-card__title"><a href="/jobs/{i}">{t}</a></h3>
            <span class="job-card__company">{c}</span><span class="job-card__location">{l}</span>
            <time datetime="{d}">{d}</time><span class="job-card__salary">€{}0,000</span></div>"#,
            6 + i
        )
    })
    .collect();
    format!(
        r#"<!doctype html><html lang="en"><head><title>Jobs</title></head><body>
        <nav><table><tr><td><a href="/">Home</a></td><td><a href="/jobs">Jobs</a></td><td><a href="/about">About</a></td><td><a href="/blog">Blog</a></td></tr>
        <tr><td><a href="/help">Help</a></td><td><a href="/faq">FAQ</a></td><td><a href="/terms">Terms</a></td><td><a href="/contact">Contact</a></td></tr>
        <tr><td><a href="/rss">RSS</a></td><td><a href="/api">API</a></td><td><a href="/press">Press</a></td><td><a href="/team">Team</a></td></tr></table></nav>
        <main><h2>Latest Rust jobs in Europe</h2><div class="results">{jobs}</div></main></body></html>"#
    )
}

#[test]
fn init_proposes_extract_records_on_a_list_page() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("jobs.html"), job_list()).unwrap();
    std::fs::create_dir_all(dir.path().join("watches")).unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_semclip"))
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let args = ["init", "jobs.html"];
    let out = run(&args);
    let said = crate::util::describe(&args, &out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("  latest-rust-jobs:\n    extract: records\n    description: \"Latest Rust jobs in Europe\"\n"),
        "{said}"
    );
    assert!(text.contains("each keyed by its `title`"), "{said}");
    assert!(text.contains("company"), "{said}");
    assert!(!text.contains("No tables found"), "{said}");
    // The table of menu links is navigation, not a clip.
    assert!(text.contains("Left out: 1 navigation table"), "{said}");
    // (No clip by XPath: the list is the only clip, by `extract: records`.)
    assert!(
        !text.lines().any(|l| l.starts_with("    xpath: ")),
        "{said}"
    );
    // The salaries are candidate thresholds on the extract clip's table.
    assert!(
        text.contains("/page/table[@clip='latest-rust-jobs']/row[@key='Rust engineer']/cell[@col='salary']/@num"),
        "{said}"
    );
    let args = ["init", "jobs.html", "-o", "watches/jobs.yaml"];
    let out = run(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        crate::util::describe(&args, &out)
    );
    let args = ["validate"];
    let out = run(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        crate::util::describe(&args, &out)
    );
}

#[test]
fn init_proposes_extract_records_on_corpus_list_pages() {
    let Some(corpus) = corpus("init_on_corpus_list_pages") else {
        return;
    };
    let html = corpus.join("records/next-eval/html");
    if crate::util::require_dir("init_on_corpus_list_pages", html.clone()).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("watches")).unwrap();
    let (mut proposed, mut pages) = (0, 0);
    for path in crate::util::html_files(&html).into_iter().take(12) {
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        std::fs::copy(&path, dir.path().join(&name)).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_semclip"))
            .args(["init", name.as_str()])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{name}");
        pages += 1;
        let text = String::from_utf8_lossy(&out.stdout);
        proposed += usize::from(text.contains("\n    extract: records\n"));
    }
    eprintln!("init proposes extract: records on {proposed} of {pages} next-eval pages");
    // Every one of these pages is a list page; a few also hold a data
    // table, which is then the proposed clip (measured: 10 of 12).
    assert!(proposed * 4 >= pages * 3, "{proposed} of {pages}");
}
