//! Starter YAML: what a newcomer pastes into a watch file to begin.
//!
//! Takes hierarchy nodes (or a whole page's hierarchy); gives text in the
//! watch-file format: a clip snippet for any node, a threshold snippet for
//! a node with a number (`num`), and a whole commented starter watch file
//! for a page (`semclip init`), listing its tables as clips and their
//! numeric columns as candidate thresholds, commented out.
//!
//! # Guarantees
//!
//! - Every snippet, pasted under a watch file's `url:` and `schedule:`, is
//!   a watch file `semclip validate` accepts: clip and threshold names use
//!   only `A-Z a-z 0-9 . _ -`, and XPaths and labels are written as
//!   double-quoted YAML scalars (JSON strings, which YAML 1.2 reads the
//!   same), so quotes, colons, `#` and newlines in a page's labels cannot
//!   break the YAML.
//! - The XPaths are the nodes' own `xpath` ids: they select exactly the
//!   node, by label where labels are unique.
//!
//! # Decisions
//!
//! - Threshold snippets propose `above:` the current value (a bound to
//!   edit, not a recommendation) and no `notify:`, since notifier names
//!   live in the daemon file and a name that does not exist there would
//!   make the snippet invalid.
//! - The starter file's thresholds are commented out: a starter that
//!   alerts on its first check would alert on guesses.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::hierarchy::{HNode, Hierarchy, Kind};

/// Tables listed in a starter watch file, at most.
pub const MAX_TABLES: usize = 20;

/// Numeric columns listed per table, at most.
pub const MAX_COLUMNS: usize = 12;

/// Longest clip or threshold name made from a label.
const MAX_NAME: usize = 40;

/// A string as a double-quoted YAML scalar.
pub fn yaml_string(s: &str) -> String {
    // A JSON string is a valid YAML 1.2 double-quoted scalar.
    serde_json::Value::String(s.to_owned()).to_string()
}

/// A name (`A-Z a-z 0-9 . _ -`) made from labels: ASCII letters and
/// digits lowercased, every other run of characters one `-`; empty when
/// nothing ASCII is left (a Cyrillic label).
pub fn slug<'a>(parts: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::new();
    for part in parts {
        for c in part.chars() {
            if c.is_ascii_alphanumeric() {
                out.push(c.to_ascii_lowercase());
            } else if !out.is_empty() && !out.ends_with('-') {
                out.push('-');
            }
        }
        if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let mut out: String = out.chars().take(MAX_NAME).collect();
    while out.ends_with('-') {
        out.pop();
    }
    out
}

/// A name for `node`: its row key and column for a cell, else its key or
/// label, else its kind (`table`, `text`).
pub fn node_name(node: &HNode, parent: Option<&HNode>) -> String {
    let parts: Vec<&str> = match node.kind {
        Kind::Cell => parent
            .and_then(|p| p.key.as_deref())
            .into_iter()
            .chain(node.col.as_deref())
            .collect(),
        _ => node
            .key
            .as_deref()
            .or(node.label.as_deref())
            .or(node.text.as_deref())
            .into_iter()
            .collect(),
    };
    let name = slug(parts.iter().copied());
    if name.is_empty() {
        node.kind.name().to_owned()
    } else {
        name
    }
}

/// A clip snippet: a `clips:` block with one clip selecting `xpath`.
pub fn clip_snippet(name: &str, xpath: &str) -> String {
    format!("clips:\n  {name}:\n    xpath: {}\n", yaml_string(xpath))
}

/// A threshold snippet for the number of the node `xpath`, whose current
/// value is `num`.
pub fn threshold_snippet(name: &str, xpath: &str, num: &str) -> String {
    format!(
        "thresholds:\n  - name: {name}\n    xpath: {}\n    above: {num}   # now {num}: edit the bound\n",
        yaml_string(&format!("{xpath}/@num"))
    )
}

/// One numeric column of a table: its header, how many rows have a number
/// in it, and the first such cell (its row key, id and number).
struct NumericColumn<'a> {
    col: &'a str,
    rows: usize,
    first: &'a HNode,
    first_key: Option<&'a str>,
}

/// The tables of a page, in document order (nested ones too).
fn tables<'a>(nodes: &'a [HNode], out: &mut Vec<(Vec<String>, &'a HNode)>, context: &[String]) {
    for n in nodes {
        let mut here = context.to_vec();
        if n.kind == Kind::Table {
            out.push((here.clone(), n));
        }
        if n.kind == Kind::Section
            && let Some(l) = &n.label
        {
            here.push(l.clone());
        }
        tables(&n.children, out, &here);
    }
}

fn numeric_columns(table: &HNode) -> Vec<NumericColumn<'_>> {
    let mut columns: Vec<NumericColumn<'_>> = Vec::new();
    for row in table.children.iter().filter(|r| r.kind == Kind::Row) {
        for cell in row.children.iter().filter(|c| c.kind == Kind::Cell) {
            let (Some(col), Some(_)) = (cell.col.as_deref(), cell.num.as_deref()) else {
                continue;
            };
            match columns.iter_mut().find(|c| c.col == col) {
                Some(c) => c.rows += 1,
                None => columns.push(NumericColumn {
                    col,
                    rows: 1,
                    first: cell,
                    first_key: row.key.as_deref(),
                }),
            }
        }
    }
    columns
}

/// A name not yet in `taken` (`name`, `name-2`, ...), recorded as taken.
fn unique(name: String, taken: &mut BTreeSet<String>) -> String {
    let mut candidate = name.clone();
    let mut n = 2;
    while taken.contains(&candidate) {
        candidate = format!("{name}-{n}");
        n += 1;
    }
    taken.insert(candidate.clone());
    candidate
}

/// A commented starter watch file for the page at `url` whose hierarchy
/// is `page`: every table as a clip, and each table's numeric columns as
/// candidate thresholds, commented out.
pub fn watch_file(url: &str, page: &Hierarchy) -> String {
    let mut out = String::new();
    let mut found = Vec::new();
    tables(&page.children, &mut found, &[]);
    // Writing to a String cannot fail.
    let _ = writeln!(out, "# A starter watch written by `semclip init`.");
    let _ = writeln!(
        out,
        "# Check it with `semclip validate`; the format is in watches/README.md."
    );
    let _ = writeln!(
        out,
        "# Explore the page: semclip hierarchy {} --format outline",
        shell_word(url)
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "url: {}", yaml_string(url));
    if let Some(title) = page.title.as_deref().filter(|t| !t.trim().is_empty()) {
        let _ = writeln!(out, "title: {}", yaml_string(title.trim()));
    }
    let _ = writeln!(out, "schedule: {{every: 10m}}");
    let _ = writeln!(out);
    if found.is_empty() {
        let _ = writeln!(
            out,
            "# No tables found. Name clips by XPath; every node's id is its `xpath`:"
        );
        let _ = writeln!(out, "# clips:\n#   main:\n#     xpath: \"/page\"");
        return out;
    }
    let mut clip_names = BTreeSet::new();
    let mut threshold_names = BTreeSet::new();
    let mut candidates = String::new();
    let _ = writeln!(out, "clips:");
    for (context, table) in found.iter().take(MAX_TABLES) {
        let name = unique(node_name(table, None), &mut clip_names);
        let rows = table
            .children
            .iter()
            .filter(|r| r.kind == Kind::Row)
            .count();
        let mut path: Vec<&str> = context.iter().map(String::as_str).collect();
        if let Some(l) = &table.label {
            path.push(l);
        }
        let _ = writeln!(
            out,
            "  # {} ({rows} rows)",
            one_line(&if path.is_empty() {
                "a table without caption".to_owned()
            } else {
                path.join(" / ")
            })
        );
        let _ = writeln!(out, "  {name}:");
        let _ = writeln!(out, "    xpath: {}", yaml_string(&table.xpath));
        for column in numeric_columns(table).iter().take(MAX_COLUMNS) {
            let parts = column.first_key.into_iter().chain([column.col]);
            let mut tname = slug(parts);
            if tname.is_empty() {
                tname = format!("{name}-value");
            }
            let tname = unique(tname, &mut threshold_names);
            let num = column.first.num.as_deref().unwrap_or("0");
            let _ = writeln!(
                candidates,
                "#   # {}: numeric in {} of {rows} rows; here row {}",
                one_line(column.col),
                column.rows,
                one_line(column.first_key.unwrap_or("?"))
            );
            let _ = writeln!(candidates, "#   - name: {tname}");
            let _ = writeln!(
                candidates,
                "#     xpath: {}",
                yaml_string(&format!("{}/@num", column.first.xpath))
            );
            let _ = writeln!(candidates, "#     above: {num}   # now {num}");
        }
    }
    if found.len() > MAX_TABLES {
        let _ = writeln!(
            out,
            "  # ... and {} more tables (see the page's hierarchy)",
            found.len() - MAX_TABLES
        );
    }
    if !candidates.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "# Candidate thresholds, one per numeric column (uncomment, edit the bound,"
        );
        let _ = writeln!(
            out,
            "# add `notify: [NAME]` with a notifier of the daemon file):"
        );
        let _ = writeln!(out, "# thresholds:");
        out.push_str(&candidates);
    }
    out
}

/// A label on one comment line: line breaks become spaces.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A URL quoted for a shell command line in a comment.
fn shell_word(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/:._-=?&%+~@".contains(c))
    {
        s.to_owned()
    } else {
        format!("'{}'", one_line(s).replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_and_names() {
        assert_eq!(slug(["GAZP", "Цена Last"]), "gazp-last");
        assert_eq!(slug(["Акции"]), "");
        assert_eq!(slug(["  a--b  "]), "a-b");
        assert!(slug(["x".repeat(100).as_str()]).len() <= MAX_NAME);
        let mut table = HNode::new(Kind::Table);
        table.label = Some("Акции".into());
        assert_eq!(node_name(&table, None), "table");
    }

    #[test]
    fn snippets_quote_what_yaml_would_misread() {
        let xpath = "//row[@key='a \"b\": #c']";
        let clip = clip_snippet("x", xpath);
        assert_eq!(
            clip,
            "clips:\n  x:\n    xpath: \"//row[@key='a \\\"b\\\": #c']\"\n"
        );
        let t = threshold_snippet("x", "/page/cell", "-1.5");
        assert!(t.contains("xpath: \"/page/cell/@num\""));
        assert!(t.contains("above: -1.5"));
    }

    #[test]
    fn a_starter_lists_tables_and_numeric_columns() {
        let html = "<title>Q</title><table><caption>Shares</caption>\
                    <tr><th>Ticker<th>Last<th>Name</tr>\
                    <tr><td>GAZP<td>251,30<td>Gazprom</tr>\
                    <tr><td>SBER<td>300,15<td>Sberbank</tr></table>";
        let h = Hierarchy::from_html(html, None);
        let file = watch_file("file:///tmp/q.html", &h);
        assert!(file.contains("url: \"file:///tmp/q.html\""), "{file}");
        assert!(
            file.contains("  shares:\n    xpath: \"/page/table"),
            "{file}"
        );
        assert!(file.contains("#   - name: gazp-last"), "{file}");
        assert!(file.contains("/cell[@col='Last']/@num\""), "{file}");
        assert!(!file.contains("name: gazp-name"), "{file}");
    }
}
