//! Article extraction on the 130 pages of the Mozilla Readability test set
//! (`../shared/corpus/articles/readability/<name>/`): body F1 over 4-word
//! shingles against `expected.html`, and title accuracy against
//! `expected-metadata.json`, with the metric of bench/articles/run.py (see
//! bench/articles/README.md; keep the two in step).
//!
//! The floors sit just under what was measured when they were set; the
//! benchmark script reports the same numbers beside trafilatura and
//! readability-lxml. Extraction time is printed (run with `--nocapture` in
//! release for a meaningful figure), never asserted.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use semclip::extract::article;
use semclip::page::dom::{DOCUMENT, Dom};

use crate::util::{corpus, read_page};

/// Body F1 measured when the floor was set: 0.984 (P 0.987, R 0.980).
const F1_FLOOR: f64 = 0.98;
/// Title accuracy measured when the floor was set: 0.954 exact, 0.985
/// lenient.
const TITLE_FLOOR: f64 = 0.945;
const TITLE_LENIENT_FLOOR: f64 = 0.975;

/// Han ideographs and kana: each character is a token (those scripts have
/// no spaces, a whole sentence would otherwise be one word).
fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF)
}

/// Lower-cased words: runs of letters and digits, each CJK character alone.
fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        if is_cjk(c) {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            out.push(c.to_string());
        } else if c.is_alphanumeric() {
            cur.push(c);
        } else if !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The multiset of 4-word shingles (one of all the words when fewer).
fn shingles(text: &str) -> HashMap<String, usize> {
    let t = tokens(text);
    let mut m = HashMap::new();
    if t.is_empty() {
        return m;
    }
    if t.len() < 4 {
        m.insert(t.join(" "), 1);
        return m;
    }
    for w in t.windows(4) {
        *m.entry(w.join(" ")).or_insert(0) += 1;
    }
    m
}

/// Per-page precision and recall; an empty prediction scores 0 and 0.
fn page_pr(pred: &str, truth: &str) -> (f64, f64) {
    let (p, t) = (shingles(pred), shingles(truth));
    let total = |m: &HashMap<String, usize>| m.values().sum::<usize>() as f64;
    if t.is_empty() {
        return if p.is_empty() { (1.0, 1.0) } else { (0.0, 1.0) };
    }
    if p.is_empty() {
        return (0.0, 0.0);
    }
    let common: usize = p
        .iter()
        .map(|(k, &n)| n.min(t.get(k).copied().unwrap_or(0)))
        .sum();
    (common as f64 / total(&p), common as f64 / total(&t))
}

/// Lower case, punctuation removed, whitespace collapsed.
fn norm_title(s: &str) -> String {
    let mapped: String = s
        .chars()
        .flat_map(char::to_lowercase)
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect();
    mapped.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// (exact, lenient) title match, as in run.py.
fn title_match(pred: &str, truth: &str) -> (bool, bool) {
    let (p, t) = (norm_title(pred), norm_title(truth));
    if p == t {
        return (true, true);
    }
    if p.is_empty() || t.is_empty() {
        return (false, false);
    }
    if p.contains(&t) || t.contains(&p) {
        return (false, true);
    }
    fn count(s: &str) -> HashMap<&str, usize> {
        let mut m = HashMap::new();
        for w in s.split(' ') {
            *m.entry(w).or_insert(0) += 1;
        }
        m
    }
    let (pw, tw) = (count(&p), count(&t));
    let common: usize = pw
        .iter()
        .map(|(k, &n)| n.min(tw.get(k).copied().unwrap_or(0)))
        .sum();
    let longer = pw.values().sum::<usize>().max(tw.values().sum::<usize>());
    (false, common as f64 / longer as f64 >= 0.8)
}

struct PageScore {
    name: String,
    p: f64,
    r: f64,
    title_ok: bool,
    title_lenient: bool,
}

fn score_page(dir: &Path, elapsed: &mut Duration) -> PageScore {
    let source = dir.join("source.html");
    let html = read_page(&source);
    let truth_html = std::fs::read_to_string(dir.join("expected.html")).unwrap();
    let truth = Dom::parse(&truth_html).text_content(DOCUMENT);
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("expected-metadata.json")).unwrap())
            .unwrap();
    let true_title = meta["title"].as_str().unwrap_or("");
    // The URL the CLI passes for a file.
    let url = url::Url::from_file_path(&source).ok().map(String::from);
    let start = Instant::now();
    let dom = Dom::parse(&html);
    let a = article::extract(&dom, url.as_deref());
    *elapsed += start.elapsed();
    let (p, r) = page_pr(&a.body(), &truth);
    let (title_ok, title_lenient) = title_match(a.title.as_deref().unwrap_or(""), true_title);
    PageScore {
        name: dir.file_name().unwrap().to_string_lossy().into_owned(),
        p,
        r,
        title_ok,
        title_lenient,
    }
}

#[test]
fn metric_counts_shingle_multisets() {
    assert_eq!(
        tokens("Hello, World_2 東京abc"),
        ["hello", "world", "2", "東", "京", "abc"]
    );
    assert_eq!(page_pr("a b c d e", "a b c d e"), (1.0, 1.0));
    // Pred "a b c d a b c d" has 5 shingles, truth "a b c d" one: one in
    // common.
    assert_eq!(page_pr("a b c d a b c d", "a b c d"), (0.2, 1.0));
    assert_eq!(page_pr("", "a b c d"), (0.0, 0.0));
    assert_eq!(page_pr("x y", "x y"), (1.0, 1.0));
    assert_eq!(title_match("The Title!", "the  title"), (true, true));
    assert_eq!(title_match("Mozilla", "Mozilla - Wikipedia"), (false, true));
    assert_eq!(title_match("Other", "Mozilla - Wikipedia"), (false, false));
}

#[test]
fn readability_corpus_body_f1_and_title_accuracy() {
    let Some(corpus) = corpus("readability_corpus_body_f1_and_title_accuracy") else {
        return;
    };
    let root = corpus.join("articles/readability");
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("source.html").is_file())
        .collect();
    dirs.sort();
    assert_eq!(dirs.len(), 130, "pages under {}", root.display());
    let mut elapsed = Duration::ZERO;
    let scores: Vec<PageScore> = dirs.iter().map(|d| score_page(d, &mut elapsed)).collect();
    let n = scores.len() as f64;
    let p = scores.iter().map(|s| s.p).sum::<f64>() / n;
    let r = scores.iter().map(|s| s.r).sum::<f64>() / n;
    let f1 = 2.0 * p * r / (p + r);
    let title = scores.iter().filter(|s| s.title_ok).count() as f64 / n;
    let lenient = scores.iter().filter(|s| s.title_lenient).count() as f64 / n;
    let mut worst: Vec<&PageScore> = scores.iter().collect();
    worst.sort_by(|a, b| (a.p + a.r).total_cmp(&(b.p + b.r)));
    let worst: Vec<String> = worst
        .iter()
        .take(8)
        .map(|s| format!("{} P={:.2} R={:.2}", s.name, s.p, s.r))
        .collect();
    eprintln!(
        "readability corpus: P={p:.4} R={r:.4} F1={f1:.4} title={title:.3} lenient={lenient:.3}; \
         parse+extract {:.2} ms/page; worst: {}",
        elapsed.as_secs_f64() * 1000.0 / n,
        worst.join(", ")
    );
    assert!(
        f1 >= F1_FLOOR,
        "body F1 {f1:.4} < {F1_FLOOR} (P={p:.4} R={r:.4})"
    );
    assert!(
        title >= TITLE_FLOOR,
        "title accuracy {title:.3} < {TITLE_FLOOR}"
    );
    assert!(
        lenient >= TITLE_LENIENT_FLOOR,
        "lenient title accuracy {lenient:.3} < {TITLE_LENIENT_FLOOR}"
    );
}
