//! The module graph holds the layout `src/lib.rs` names: stages in pipeline
//! order, no import from a stage to one listed after it, and no import
//! circle between modules.
//!
//! The graph is read from the source: every `use` tree and every inline
//! `crate::`/`super::`/`self::` path outside comments and `#[cfg(test)]`
//! modules, resolved to the deepest module file it names. A module and its
//! own ancestors are exempt from the circle check (a folder's `mod.rs`
//! declares its children and holds what they share); siblings and cousins
//! are not.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path (`["serve", "routes"]`) to its file.
type Modules = BTreeMap<Vec<String>, PathBuf>;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn modules() -> Modules {
    fn walk(dir: &Path, prefix: &[String], out: &mut Modules) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .expect("read src")
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        entries.sort();
        for path in entries {
            let name = path
                .file_stem()
                .and_then(|s| s.to_str())
                .expect("utf-8 name")
                .to_owned();
            if path.is_dir() {
                let mut p = prefix.to_vec();
                p.push(name);
                walk(&path, &p, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let module = match name.as_str() {
                    "mod" => prefix.to_vec(),
                    "lib" | "main" if prefix.is_empty() => continue,
                    _ => {
                        let mut p = prefix.to_vec();
                        p.push(name);
                        p
                    }
                };
                out.insert(module, path);
            }
        }
    }
    let mut out = Modules::new();
    walk(&src(), &[], &mut out);
    out
}

/// The code of a file without comments and without its test module.
fn code(text: &str) -> String {
    // The test module: from the `#[cfg(test)]` that opens `mod tests`.
    let text = match text.find("\nmod tests {") {
        Some(i) => text[..i]
            .rfind("#[cfg(test)]")
            .map_or(text, |at| &text[..at]),
        None => text,
    };
    let mut out = String::new();
    for line in text.lines() {
        let line = line.trim_start();
        if line.starts_with("//") {
            continue;
        }
        // A trailing comment; a `//` inside a string literal cuts the line
        // short, which only loses what follows it on that line.
        let line = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The paths a `use` tree names: `a::{b, c::{d, e}}` gives `a::b`,
/// `a::c::d`, `a::c::e`.
fn expand(tree: &str) -> Vec<String> {
    let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
    fn go(prefix: &str, rest: &str, out: &mut Vec<String>) {
        match rest.find('{') {
            None => out.push(format!("{prefix}{rest}")),
            Some(open) => {
                let head = &rest[..open];
                let inner = &rest[open + 1..rest.len() - 1];
                let mut depth = 0;
                let mut start = 0;
                let mut parts = Vec::new();
                for (i, c) in inner.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            parts.push(&inner[start..i]);
                            start = i + 1;
                        }
                        _ => {}
                    }
                }
                parts.push(&inner[start..]);
                for part in parts.into_iter().filter(|p| !p.is_empty()) {
                    go(&format!("{prefix}{head}"), part, out);
                }
            }
        }
    }
    let mut out = Vec::new();
    go("", &tree, &mut out);
    out
}

/// Every path starting at `crate`, `super` or `self` the code names.
fn paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("use ") {
        let before = rest[..i].chars().last();
        let after = &rest[i + 4..];
        rest = after;
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let Some(end) = after.find(';') else { break };
        out.extend(expand(&after[..end]));
    }
    let bytes = code.as_bytes();
    for root in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(i) = code[from..].find(root) {
            let at = from + i;
            from = at + root.len();
            if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
                continue;
            }
            let len = code[at..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(code.len() - at);
            out.push(code[at..at + len].trim_end_matches(':').to_owned());
        }
    }
    out
}

/// The module a path written in `module` names: the deepest module file
/// on the path (`None` for a path from outside the crate).
fn resolve(modules: &Modules, module: &[String], path: &str) -> Option<Vec<String>> {
    let mut segments = path.split("::").filter(|s| !s.is_empty());
    let mut at: Vec<String> = match segments.next()? {
        "crate" => Vec::new(),
        "self" => module.to_vec(),
        "super" => {
            let mut m = module.to_vec();
            m.pop();
            m
        }
        _ => return None,
    };
    for s in segments {
        if s == "super" {
            at.pop();
            continue;
        }
        let mut next = at.clone();
        next.push(s.to_owned());
        if modules.contains_key(&next) {
            at = next;
        } else {
            break;
        }
    }
    Some(at)
}

/// The module graph: each module and the modules it imports.
fn graph() -> Graph {
    let modules = modules();
    let mut graph = BTreeMap::new();
    for (module, file) in &modules {
        let text = std::fs::read_to_string(file).expect("read module");
        let mut targets = BTreeSet::new();
        for path in paths(&code(&text)) {
            if let Some(t) = resolve(&modules, module, &path)
                && !t.is_empty()
                && &t != module
            {
                targets.insert(t);
            }
        }
        graph.insert(module.clone(), targets);
    }
    graph
}

/// The stages `lib.rs`'s `# Layout` section lists, in order: every
/// `[`name`]` on a numbered line.
fn stages() -> Vec<Vec<String>> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).expect("read lib.rs");
    let layout = lib
        .split("//! # Layout")
        .nth(1)
        .expect("lib.rs has a # Layout section");
    let mut stages = Vec::new();
    for line in layout.lines().skip(1).take_while(|l| l.starts_with("//!")) {
        let line = line.trim_start_matches("//!").trim_start();
        if !line.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        let names: Vec<String> = line
            .split("[`")
            .skip(1)
            .filter_map(|s| s.split("`]").next())
            .map(str::to_owned)
            .collect();
        stages.push(names);
    }
    stages
}

#[test]
fn the_layout_names_every_top_level_module_once() {
    let stages = stages();
    let named: Vec<&String> = stages.iter().flatten().collect();
    let unique: BTreeSet<&String> = named.iter().copied().collect();
    assert_eq!(named.len(), unique.len(), "a module is named twice");
    let top: BTreeSet<String> = modules()
        .keys()
        .filter(|m| m.len() == 1)
        .map(|m| m[0].clone())
        .collect();
    let unique: BTreeSet<String> = unique.into_iter().cloned().collect();
    assert_eq!(unique, top, "lib.rs # Layout and src/ differ");
}

#[test]
fn no_stage_imports_from_a_later_stage() {
    let stages = stages();
    let stage_of = |m: &[String]| {
        stages
            .iter()
            .position(|names| names.contains(&m[0]))
            .expect("every module is in a stage")
    };
    let mut upward = Vec::new();
    for (from, targets) in graph() {
        for to in targets {
            if stage_of(&to) > stage_of(&from) {
                upward.push(format!("{} -> {}", from.join("::"), to.join("::")));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports from a stage to a later one:\n{}",
        upward.join("\n")
    );
}

/// The graph of modules and the modules each imports.
type Graph = BTreeMap<Vec<String>, BTreeSet<Vec<String>>>;

/// An import circle in `graph`, as the modules along it, ignoring edges
/// between a module and its own ancestors (depth-first search for a back
/// edge).
fn find_circle(graph: &Graph) -> Option<Vec<String>> {
    fn related(a: &[String], b: &[String]) -> bool {
        a.starts_with(b) || b.starts_with(a)
    }
    fn visit<'g>(
        m: &'g Vec<String>,
        graph: &'g Graph,
        state: &mut BTreeMap<&'g Vec<String>, u8>,
        stack: &mut Vec<&'g Vec<String>>,
    ) -> Option<Vec<String>> {
        state.insert(m, 1);
        stack.push(m);
        for t in graph.get(m).into_iter().flatten() {
            if related(m, t) {
                continue;
            }
            match state.get(t) {
                Some(1) => {
                    let start = stack.iter().position(|s| *s == t).unwrap_or(0);
                    let mut circle: Vec<String> =
                        stack[start..].iter().map(|s| s.join("::")).collect();
                    circle.push(t.join("::"));
                    return Some(circle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(t, graph, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(m, 2);
        None
    }
    let mut state = BTreeMap::new();
    let mut stack = Vec::new();
    for m in graph.keys() {
        if !state.contains_key(m)
            && let Some(circle) = visit(m, graph, &mut state, &mut stack)
        {
            return Some(circle);
        }
    }
    None
}

#[test]
fn no_import_circle() {
    if let Some(circle) = find_circle(&graph()) {
        panic!("import circle: {}", circle.join(" -> "));
    }
}

#[test]
fn the_checker_sees_imports_and_circles() {
    // The reader itself: a `use` tree, an inline path, a comment left out.
    let found = paths(&code(
        "use crate::a::{b, c::{d, e}};\nlet x = super::f::g(); // crate::h\n",
    ));
    let found: BTreeSet<&str> = found.iter().map(String::as_str).collect();
    assert_eq!(
        found,
        BTreeSet::from([
            "crate::a",
            "crate::a::b",
            "crate::a::c::d",
            "crate::a::c::e",
            "super::f::g"
        ])
    );
    let mut modules = Modules::new();
    for m in [&["a"][..], &["a", "c"], &["f"]] {
        modules.insert(m.iter().map(|s| s.to_string()).collect(), PathBuf::new());
    }
    let me = vec!["x".to_owned()];
    assert_eq!(
        resolve(&modules, &me, "crate::a::c::d"),
        Some(vec!["a".to_owned(), "c".to_owned()])
    );
    assert_eq!(
        resolve(&modules, &me, "super::f::g"),
        Some(vec!["f".to_owned()])
    );
    // Circles: siblings that import each other are one; a folder's
    // `mod.rs` and its child are not.
    let m = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mut graph = Graph::new();
    graph.insert(m(&["s"]), BTreeSet::from([m(&["s", "a"])]));
    graph.insert(m(&["s", "a"]), BTreeSet::from([m(&["s"]), m(&["s", "b"])]));
    graph.insert(m(&["s", "b"]), BTreeSet::new());
    assert_eq!(find_circle(&graph), None);
    graph.insert(m(&["s", "b"]), BTreeSet::from([m(&["s", "a"])]));
    assert_eq!(
        find_circle(&graph),
        Some(vec![
            "s::a".to_owned(),
            "s::b".to_owned(),
            "s::a".to_owned()
        ])
    );
}

/// The most lines a source file holds before its test module.
const FILE_BUDGET: usize = 1_200;

/// The files over [`FILE_BUDGET`], each with why it is still one file.
/// The list only shrinks: a listed file back under the budget fails the
/// test too, so that its entry goes.
const OVER_BUDGET: &[(&str, &str)] = &[
    (
        "src/extract/article.rs",
        "one extractor's documented steps; to split by step",
    ),
    (
        "src/store/core.rs",
        "the store's core (Store's open, read and write paths, its error type, snapshot encoding, migrations); to split by concern",
    ),
    (
        "src/page/browser/mod.rs",
        "the browser's supervision and a tab's render; tab.rs is the next seam",
    ),
    (
        "src/hierarchy/mod.rs",
        "the builder's walk over the DOM, one recursion",
    ),
    (
        "src/extract/records.rs",
        "one extractor's documented steps; to split by step",
    ),
    (
        "src/extract/region.rs",
        "one extractor's documented steps; to split by step",
    ),
    (
        "src/diff/mod.rs",
        "the diff and its change lines; the change lines are the seam",
    ),
    (
        "src/page/source.rs",
        "reading a response: decoding, sniffing and caps",
    ),
];

/// Lines of `text` before its test module.
fn lines_before_tests(text: &str) -> usize {
    let text = match text.find("\nmod tests {") {
        Some(i) => text[..i]
            .rfind("#[cfg(test)]")
            .map_or(text, |at| &text[..at]),
        None => text,
    };
    text.lines().count()
}

#[test]
fn files_keep_to_the_size_budget() {
    let mut files: Vec<PathBuf> = modules().into_values().collect();
    files.extend([src().join("lib.rs"), src().join("main.rs")]);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut over = Vec::new();
    let mut listed_under = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read source");
        let lines = lines_before_tests(&text);
        let name = file
            .strip_prefix(root)
            .expect("under the package")
            .to_string_lossy()
            .replace('\\', "/");
        let listed = OVER_BUDGET.iter().any(|(f, _)| *f == name);
        if lines > FILE_BUDGET && !listed {
            over.push(format!("{name}: {lines} lines"));
        }
        if lines <= FILE_BUDGET && listed {
            listed_under.push(format!("{name}: {lines} lines"));
        }
    }
    assert!(
        over.is_empty(),
        "over {FILE_BUDGET} lines: split them, or list them with a reason in OVER_BUDGET: {over:#?}"
    );
    assert!(
        listed_under.is_empty(),
        "back under {FILE_BUDGET} lines: take them off OVER_BUDGET: {listed_under:#?}"
    );
    for (file, why) in OVER_BUDGET {
        assert!(root.join(file).is_file(), "{file} is listed but gone");
        assert!(!why.is_empty(), "{file} is listed without a reason");
    }
}
