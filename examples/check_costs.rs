//! The cost of one check, round by round, for instruction counting
//! (`bench/check/run.py` drives it under callgrind; see BENCHMARKS.md,
//! "Check cost on a real-sized page").
//!
//! ```text
//! check_costs PAGE MODE
//! ```
//!
//! `PAGE` is `board` (the generated 64 KB exchange board) or the path of an
//! HTML file (a corpus page). Every run does the same set-up: the page's
//! variants, a daemon file and one `file://` watch with one threshold in a
//! temporary directory, the store, the runtime, a first check of an
//! unrelated tiny page. Then `MODE`:
//!
//! - `setup`: nothing more (the baseline every other mode subtracts);
//! - `parse`: html5ever parses the page once (the unit of the goals);
//!   `parse-markup` and `parse-data` parse the version the markup-only and
//!   the data round check (heavier HTML on the board);
//! - `1` to `4`: that many rounds of `semclip check` on the watch, in the
//!   order first check, unchanged bytes, markup-only change, data change
//!   (3 cells). Round k costs `run(k) - run(k-1)`.
//!
//! Each round prints its outcome, so a run shows that the rounds did what
//! they claim (nothing reported on the markup round, 3 changes on the data
//! round).

#[path = "../benches/board_page.rs"]
mod board_page;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use semclip::monitor::check::{Engine, PageOutcome};

/// The page in its four versions: base, markup-only change, data change.
struct Versions {
    base: String,
    markup: String,
    data: String,
}

fn board() -> Versions {
    Versions {
        base: board_page::board_page(300, 0, 0),
        markup: board_page::board_page(300, 1, 0),
        data: board_page::board_page(300, 1, 3),
    }
}

/// A markup-only edit of any page: two wrappers around the body's content
/// and a script of other content.
fn markup_edit(html: &str) -> String {
    let lower = html.to_ascii_lowercase();
    let at = lower
        .find("<body")
        .and_then(|b| lower[b..].find('>').map(|e| b + e + 1))
        .unwrap_or(0);
    format!(
        "{}<div class=\"bench-wrap\"><div class=\"bench-inner\"><script>var bench = {};</script>{}",
        &html[..at],
        html.len(),
        &html[at..]
    )
}

/// A data edit of any page: three visible text runs (numbers preferred),
/// spread over the page, get a character more.
fn data_edit(html: &str) -> String {
    let lower = html.to_ascii_lowercase();
    let mut spans = Vec::new();
    let mut in_raw = false;
    let bytes = html.as_bytes();
    let mut i = 0;
    while let Some(open) = html[i..].find('<').map(|o| i + o) {
        let tag_end = match html[open..].find('>') {
            Some(e) => open + e + 1,
            None => break,
        };
        let tag = &lower[open..tag_end];
        if tag.starts_with("<script") || tag.starts_with("<style") {
            in_raw = true;
        } else if tag.starts_with("</script") || tag.starts_with("</style") {
            in_raw = false;
        }
        let next = html[tag_end..]
            .find('<')
            .map_or(html.len(), |n| tag_end + n);
        let text = &html[tag_end..next];
        if !in_raw && text.trim().chars().any(char::is_alphanumeric) && !text.contains('&') {
            let numeric = text.trim().chars().any(|c| c.is_ascii_digit());
            spans.push((tag_end + text.trim_end().len(), numeric));
        }
        i = next;
        if i >= bytes.len() {
            break;
        }
    }
    let numeric: Vec<usize> = spans.iter().filter(|s| s.1).map(|s| s.0).collect();
    let pool: Vec<usize> = if numeric.len() >= 3 {
        numeric
    } else {
        spans.iter().map(|s| s.0).collect()
    };
    let picks: Vec<usize> = (0..3.min(pool.len()))
        .map(|k| pool[(k * 2 + 1) * pool.len() / 6])
        .collect();
    let mut out = String::with_capacity(html.len() + 8);
    let mut from = 0;
    for at in picks {
        out.push_str(&html[from..at]);
        out.push('7');
        from = at;
    }
    out.push_str(&html[from..]);
    out
}

fn file(path: &Path) -> Versions {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let base = String::from_utf8_lossy(&bytes).into_owned();
    Versions {
        markup: markup_edit(&base),
        data: data_edit(&markup_edit(&base)),
        base,
    }
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// The id of the first node with a number, for the watch's threshold.
fn numeric_node(h: &semclip::hierarchy::Hierarchy) -> Option<String> {
    fn walk(n: &semclip::hierarchy::HNode) -> Option<String> {
        if n.num.is_some() {
            return Some(n.xpath.clone());
        }
        n.children.iter().find_map(walk)
    }
    h.children.iter().find_map(walk)
}

#[expect(
    clippy::too_many_lines,
    reason = "the measurement's steps in order, printed as they go"
)]
fn main() {
    let mut args = std::env::args().skip(1);
    let page = args.next().unwrap_or_else(|| "board".into());
    let mode = args.next().unwrap_or_else(|| "4".into());
    let versions = if page == "board" {
        board()
    } else {
        file(Path::new(&page))
    };
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let root = dir.path();
    let watches = root.join("watches");
    std::fs::create_dir_all(&watches).unwrap_or_else(|e| panic!("{e}"));
    let page_file = root.join("page.html");
    let tiny_file = root.join("tiny.html");
    write(&page_file, &versions.base);
    write(&tiny_file, "<title>t</title><p>1</p>");
    write(
        &root.join("semclip.yaml"),
        &format!(
            "database: {}\nwatches: {}\n",
            root.join("semclip.db").display(),
            watches.display()
        ),
    );
    // The threshold is on the base page's first number, as a user copying
    // an id from `semclip hierarchy` would set it.
    let base_h = semclip::hierarchy::Hierarchy::from_html(&versions.base, None);
    let threshold = match numeric_node(&base_h) {
        Some(id) => format!(
            "thresholds:\n  - name: first\n    xpath: {}\n    above: 1e12\n",
            serde_json::to_string(&format!("{id}/@num")).unwrap_or_default()
        ),
        None => String::new(),
    };
    write(
        &watches.join("page.yaml"),
        &format!(
            "url: file://{}\nschedule: {{every: 1h}}\n{threshold}",
            page_file.display()
        ),
    );
    write(
        &watches.join("tiny.yaml"),
        &format!(
            "url: file://{}\nschedule: {{every: 1h}}\n",
            tiny_file.display()
        ),
    );
    let loaded = semclip::config::load(Some(&root.join("semclip.yaml")), None)
        .unwrap_or_else(|d| panic!("{d:#?}"));
    let daemon = Arc::new(loaded.daemon);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    runtime.block_on(async {
        let stores = semclip::daemon::open_store(&daemon).unwrap_or_else(|e| panic!("{e:#}"));
        let engine = Engine::new(Arc::clone(&daemon), stores);
        let watch = |id: &str| {
            Arc::new(
                loaded
                    .watches
                    .iter()
                    .find(|w| w.id == id)
                    .cloned()
                    .unwrap_or_else(|| panic!("no watch {id}")),
            )
        };
        let (page, tiny) = (watch("page"), watch("tiny"));
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        // Warm every code path a check takes once, on another page.
        semclip::monitor::check::check(&engine, &tiny, start, None, false)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let rounds: usize = match mode.as_str() {
            "setup" => 0,
            "parse" | "parse-markup" | "parse-data" => {
                let html = match mode.as_str() {
                    "parse-markup" => &versions.markup,
                    "parse-data" => &versions.data,
                    _ => &versions.base,
                };
                let dom = semclip::page::dom::Dom::parse(html);
                println!("parsed: {} nodes", dom.len());
                0
            }
            n => n.parse().unwrap_or_else(|e| panic!("mode {n}: {e}")),
        };
        let steps = [
            ("first", &versions.base),
            ("unchanged", &versions.base),
            ("markup", &versions.markup),
            ("data", &versions.data),
        ];
        for (k, (name, html)) in steps.iter().take(rounds).enumerate() {
            write(&page_file, html);
            let at = start + Duration::from_secs(60 * (k as u64 + 1));
            let report = semclip::monitor::check::check(&engine, &page, at, None, false)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            let outcome = match &report.outcome {
                PageOutcome::Changed(changes) => format!("{} changes", changes.len()),
                other => format!("{other:?}"),
            };
            println!(
                "{name}: {outcome}; thresholds {:?}; layout {:?}",
                report.thresholds, report.layout
            );
        }
    });
}
