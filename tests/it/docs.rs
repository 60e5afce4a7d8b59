//! Docs that hold: every citation of `docs/algorithms.md` in the code, the
//! benchmarks, the examples, the README and `docs/` names a section that
//! exists, and nothing cites notes a clone of the repository does not have;
//! every relative link of the README and `docs/` leads to a file (and a
//! heading) that exists; and the README's quick-start log sample only
//! shows messages the code still logs.

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

/// The Markdown files of `docs/`, sorted.
fn docs_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    files
}

/// The files that may cite the notes: Rust sources under `src`, `tests`,
/// `benches`, `examples`, `fuzz/fuzz_targets`, the Markdown at the top and
/// the Markdown of `docs/`.
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
    out.extend(docs_files());
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

/// A fence that opens or closes a code block (three or more backticks or
/// tildes at the start of the line, indentation aside), if `line` is one.
fn fence_marker(line: &str) -> Option<&str> {
    let trimmed = line.trim_start();
    let first = trimmed.chars().next()?;
    if first != '`' && first != '~' {
        return None;
    }
    let len = trimmed.len() - trimmed.trim_start_matches(first).len();
    if len >= 3 {
        Some(&trimmed[..len])
    } else {
        None
    }
}

/// The lines of a Markdown text outside its fenced code blocks; each fence
/// leaves an empty line, so that no paragraph runs across a code block.
fn prose_lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut open: Option<&str> = None;
    for line in text.lines() {
        match (open, fence_marker(line)) {
            (Some(fence), Some(close)) if close.starts_with(fence) => {
                open = None;
                lines.push("");
            }
            (Some(_), _) => {}
            (None, Some(fence)) => {
                open = Some(fence);
                lines.push("");
            }
            (None, None) => lines.push(line),
        }
    }
    lines
}

/// GitHub's anchor for a heading: lowercased, punctuation dropped except
/// `-` and `_`, each space a `-`.
fn slug(title: &str) -> String {
    title
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown text's `#` headings (outside code blocks), a
/// repeated one numbered `-1`, `-2`, ... as GitHub numbers it.
fn anchors(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for line in prose_lines(text) {
        let hashes = line.len() - line.trim_start_matches('#').len();
        if !(1..=6).contains(&hashes) {
            continue;
        }
        let Some(title) = line[hashes..].strip_prefix(' ') else {
            continue;
        };
        let base = slug(title.trim().trim_end_matches('#').trim());
        let mut anchor = base.clone();
        let mut n = 0;
        while found.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        found.push(anchor);
    }
    found
}

/// Where the first run of exactly `n` backticks starts in `text`.
fn backtick_run(text: &str, n: usize) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = text[from..].find('`') {
        let start = from + at;
        let len = text[start..].len() - text[start..].trim_start_matches('`').len();
        if len == n {
            return Some(start);
        }
        from = start + len;
    }
    None
}

/// The text without its code spans (`` `x` ``, ``` ``x`` ```); a run of
/// backticks that no run of the same length closes is kept as text.
fn without_code_spans(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('`') {
        out.push_str(&rest[..open]);
        let ticks = rest[open..].len() - rest[open..].trim_start_matches('`').len();
        let after = &rest[open + ticks..];
        match backtick_run(after, ticks) {
            Some(close) => rest = &after[close + ticks..],
            None => {
                out.push_str(&rest[open..open + ticks]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The targets of a Markdown text's inline links and images
/// (`[text](target)`, `![alt](target "title")`), outside code blocks and
/// code spans. Reference-style links are not used in these files.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let lines = prose_lines(text);
    for paragraph in lines.split(|line| line.trim().is_empty()) {
        let prose = without_code_spans(&paragraph.join("\n"));
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else {
                break;
            };
            let target = after[..end].split_whitespace().next().unwrap_or("");
            targets.push(target.trim_matches(['<', '>']).to_owned());
            rest = &after[end..];
        }
    }
    targets
}

/// Every relative link of the README and of `docs/*.md` leads somewhere:
/// `[text](path)` to a file or directory that exists (relative to the
/// linking file), `[text](path#anchor)` to a Markdown file with a heading
/// whose GitHub anchor is `anchor`, and `[text](#anchor)` to a heading of
/// the linking file itself. `http(s)://` and `mailto:` links are not
/// followed. Headings and links inside code blocks and code spans do not
/// count. A moved or renamed section fails here, naming the link.
#[test]
fn relative_links_in_the_readme_and_docs_resolve() {
    let mut files = vec![root().join("README.md")];
    files.extend(docs_files());
    let mut checked = 0;
    let mut broken = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let dir = file.parent().unwrap();
        for target in link_targets(&text) {
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, anchor) = match target.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (target.as_str(), None),
            };
            let linked = if path.is_empty() {
                file.clone()
            } else {
                dir.join(path)
            };
            if !linked.exists() {
                broken.push(format!("{}: ({target}): no such file", relative(file)));
                continue;
            }
            let Some(anchor) = anchor else {
                continue;
            };
            if linked.extension().is_some_and(|e| e == "md") {
                let headings = anchors(&std::fs::read_to_string(&linked).unwrap());
                if !headings.iter().any(|h| h == anchor) {
                    broken.push(format!(
                        "{}: ({target}): no heading of {} has the anchor #{anchor}",
                        relative(file),
                        relative(&linked)
                    ));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    // The README and docs/ link to each other a few hundred times.
    assert!(checked >= 100, "only {checked} relative links found");
}

/// The first `text` block of the README's "Quick start" section: what
/// `make run` logs.
fn readme_log_sample() -> String {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let section = readme
        .split("\n## Quick start")
        .nth(1)
        .expect("the README has a Quick start section");
    let section = section.split("\n## ").next().unwrap_or(section);
    section
        .split("```text\n")
        .nth(1)
        .and_then(|block| block.split("```").next())
        .expect("the Quick start has a text block")
        .to_owned()
}

/// Whether a word of a log line is a `key=value` field.
fn is_field(word: &str) -> bool {
    word.split_once('=').is_some_and(|(key, _)| {
        !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '.')
    })
}

/// The fixed message of a line in tracing's text format
/// (`2026-11-28T13:49:09.664491Z  INFO semclip::daemon: check finished
/// watch=demo-quotes ...`): the words after the `semclip` target up to
/// the first `key=value` field. `None` for a line that is not a log line
/// of semclip's (a shell command, its output).
fn log_message(line: &str) -> Option<String> {
    let mut rest = line.trim();
    if rest.starts_with(|c: char| c.is_ascii_digit()) {
        rest = rest.split_once(' ')?.1.trim_start();
    }
    let (level, rest) = rest.split_once(' ')?;
    if !["TRACE", "DEBUG", "INFO", "WARN", "ERROR"].contains(&level) {
        return None;
    }
    let (target, text) = rest.trim_start().split_once(": ")?;
    if !target.starts_with("semclip") {
        return None;
    }
    let words: Vec<&str> = text.split(' ').take_while(|word| !is_field(word)).collect();
    Some(words.join(" "))
}

/// Every Rust source under `src/`, one after the other.
fn sources() -> String {
    let mut text = String::new();
    let mut stack = vec![root().join("src")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                text.push_str(&std::fs::read_to_string(&path).unwrap());
                text.push('\n');
            }
        }
    }
    text
}

/// The README's quick-start log sample shows what the daemon prints: each
/// of its log lines (`TIMESTAMP  LEVEL target: message field=value ...`;
/// other lines are skipped) has a message, the text between the target
/// and the first field, that is a string literal somewhere under `src/`
/// (`tracing::info!(..., "check finished")`). A log message renamed in the
/// code, and not in the README, fails here, naming the message.
#[test]
fn the_readme_log_sample_is_what_the_daemon_logs() {
    let sample = readme_log_sample();
    let sources = sources();
    let mut lines = 0;
    let mut unknown = Vec::new();
    for line in sample.lines() {
        let Some(message) = log_message(line) else {
            continue;
        };
        lines += 1;
        if message.is_empty() || !sources.contains(&format!("\"{message}\"")) {
            unknown.push(format!("{message:?} in {line:?}"));
        }
    }
    assert!(
        lines >= 3,
        "only {lines} log lines in the README's quick-start sample:\n{sample}"
    );
    assert!(
        unknown.is_empty(),
        "the README's quick-start log sample shows messages that no string literal under src/ \
         holds (renamed in the code? run `make run` and copy what it prints):\n{}",
        unknown.join("\n")
    );
}
