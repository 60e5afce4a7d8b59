//! Docs that hold: every citation of `docs/algorithms.md` in the code, the
//! benchmarks, the examples and the README names a section that exists,
//! and nothing cites notes a clone of the repository does not have.

use std::path::{Path, PathBuf};

use crate::util::root;

/// The section titles of `docs/algorithms.md` (its `#` headings).
fn sections() -> Vec<String> {
    let text = std::fs::read_to_string(root().join("docs/algorithms.md")).unwrap();
    text.lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| l.trim_start_matches('#').trim().to_owned())
        .collect()
}

/// The files that may cite the notes: Rust sources under `src`, `tests`,
/// `benches`, `examples`, `fuzz/fuzz_targets`, and the Markdown at the top.
fn citing_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = ["src", "tests", "benches", "examples", "fuzz/fuzz_targets"]
        .iter()
        .map(|d| root().join(d))
        .collect();
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    for name in ["README.md", "BENCHMARKS.md", "CHANGELOG.md"] {
        out.push(root().join(name));
    }
    out.sort();
    out
}

/// The text with comment markers and line breaks folded away, so that a
/// citation wrapped over two comment lines reads as one.
fn folded(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let line = line.trim_start();
        let line = ["//!", "///", "//"]
            .iter()
            .find_map(|m| line.strip_prefix(m))
            .unwrap_or(line);
        out.push(' ');
        out.push_str(line.trim());
    }
    out
}

/// The section titles cited as `docs/algorithms.md, "Title"` (and
/// `"Title" and "Other"` after it).
fn cited(text: &str) -> Vec<String> {
    let mut titles = Vec::new();
    for (at, _) in text.match_indices("docs/algorithms.md") {
        let mut rest = text[at + "docs/algorithms.md".len()..].trim_start_matches('`');
        let Some(after) = rest.strip_prefix(',') else {
            continue;
        };
        rest = after;
        while let Some(open) = rest.trim_start().strip_prefix('"') {
            let Some(close) = open.find('"') else {
                break;
            };
            titles.push(open[..close].to_owned());
            rest = &open[close + 1..];
            match rest.trim_start().strip_prefix("and ") {
                Some(more) => rest = more,
                None => break,
            }
        }
    }
    titles
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

#[test]
fn every_cited_section_of_docs_algorithms_exists() {
    let sections = sections();
    assert!(sections.len() > 20, "{sections:?}");
    let mut citations = 0;
    let mut broken = Vec::new();
    // This file quotes the citation form without citing anything.
    for path in citing_files()
        .into_iter()
        .filter(|p| !p.ends_with("tests/it/docs.rs"))
    {
        let text = folded(&std::fs::read_to_string(&path).unwrap());
        for title in cited(&text) {
            citations += 1;
            if !sections.contains(&title) {
                broken.push(format!("{}: \"{title}\"", relative(&path)));
            }
        }
    }
    assert!(broken.is_empty(), "no such section:\n{}", broken.join("\n"));
    // The code cites the notes about three dozen times.
    assert!(citations >= 30, "only {citations} citations found");
}

#[test]
fn nothing_cites_notes_outside_the_repository() {
    let mut found = Vec::new();
    for path in citing_files() {
        if path.ends_with("CHANGELOG.md") || path.ends_with("tests/it/docs.rs") {
            // History may name the old notes; this file names them to ban them.
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            if lower.contains("algorithms.md §")
                || lower.contains("shared/design")
                || ["seed 00", "seeds 00", "seed formula"]
                    .iter()
                    .any(|s| lower.contains(s))
            {
                found.push(format!("{}:{}: {}", relative(&path), n + 1, line.trim()));
            }
        }
    }
    // Two benchmark output lines still say "seed 001" (string literals,
    // left alone: issue 15 changes comment lines only).
    let left_alone = |l: &String| {
        l.starts_with("benches/similarity.rs:")
            && (l.contains("println!(") || l.contains("\"60,000 pages at these rates"))
    };
    found.retain(|l| !left_alone(l));
    assert!(found.is_empty(), "{}", found.join("\n"));
}
