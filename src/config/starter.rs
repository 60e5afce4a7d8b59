//! Starter YAML: what a newcomer pastes into a watch file to begin.
//!
//! Takes hierarchy nodes (or a whole page's hierarchy); gives text in the
//! watch-file format: a clip snippet for any node, a threshold snippet for
//! a node with a number (`num`), and a whole commented starter watch file
//! for a page (`semclip init`), listing its data tables as clips (or, on a
//! list page without data tables, its records as an `extract: records`
//! clip) and their numeric columns as candidate thresholds, commented out.
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
//! - Navigation tables are left out ([`is_navigation`]): a Wikipedia
//!   navbox (`v t e`) or a table of links changes with the site, not with
//!   the data someone watches.
//! - A list page gets an `extract: records` clip when record extraction
//!   found a list and the page has no data table of two rows or more: a
//!   table the page marked up is a sharper clip than the extractor's
//!   guess, so with one the list is only mentioned in a comment.
//! - Clip names are short slugs ([`MAX_CLIP_WORDS`] words) of the table's
//!   caption or the heading above it (the list's heading for records),
//!   and the whole caption or heading is the clip's `description`.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::extract::names::unique;
use crate::hierarchy::{HNode, Hierarchy, Kind};

/// Tables listed in a starter watch file, at most.
pub const MAX_TABLES: usize = 20;

/// Numeric columns listed per table, at most.
pub const MAX_COLUMNS: usize = 12;

/// Longest clip or threshold name made from a label.
const MAX_NAME: usize = 40;

/// Most words of a caption or heading kept in a clip name.
pub const MAX_CLIP_WORDS: usize = 4;

/// Share of a table's texts that are links from which it is navigation.
const NAV_LINK_SHARE: f64 = 0.7;

/// Fewest texts in a table before its links make it navigation.
const NAV_MIN_TEXTS: usize = 4;

/// The records `extract: records` finds on a page, for the starter.
pub struct RecordList {
    /// The list's heading on the page
    /// ([`crate::extract::records::heading`]).
    pub heading: Option<String>,
    /// The records as the hierarchy holds them: a `table role="records"`
    /// ([`crate::extract::vocabulary::records_node`]) with its ids
    /// assigned as the only child of a page.
    pub table: HNode,
}

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

/// A clip name from a caption or heading: its first [`MAX_CLIP_WORDS`]
/// words as a slug, without a dangling `of`, `in`, `the` ... at the end;
/// empty when nothing ASCII is left.
pub fn clip_name(title: &str) -> String {
    let mut words: Vec<&str> = title
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(MAX_CLIP_WORDS)
        .collect();
    while words.len() > 1
        && words.last().is_some_and(|w| {
            matches!(
                w.to_ascii_lowercase().as_str(),
                "a" | "an"
                    | "the"
                    | "of"
                    | "in"
                    | "on"
                    | "for"
                    | "to"
                    | "and"
                    | "by"
                    | "at"
                    | "with"
                    | "from"
                    | "or"
            )
        })
    {
        words.pop();
    }
    slug(words)
}

/// True when a table is navigation, not data: a navbox whose label
/// starts with its `v t e` (view, talk, edit) links, or a table most of
/// whose texts ([`NAV_LINK_SHARE`], from [`NAV_MIN_TEXTS`] texts) are
/// links.
pub fn is_navigation(table: &HNode) -> bool {
    if let Some(label) = &table.label {
        let words: Vec<String> = label
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .take(3)
            .map(str::to_lowercase)
            .collect();
        if words == ["v", "t", "e"] {
            return true;
        }
    }
    // Cells and the texts inside them; row keys are not counted, as the
    // hierarchy keeps no link on a key.
    let (mut texts, mut links) = (0usize, 0usize);
    let mut stack: Vec<&HNode> = table.children.iter().collect();
    while let Some(n) = stack.pop() {
        if n.text.as_deref().is_some_and(|t| !t.trim().is_empty()) {
            texts += 1;
            links += usize::from(n.attr("href").is_some());
        }
        stack.extend(n.children.iter());
    }
    texts >= NAV_MIN_TEXTS && links as f64 >= NAV_LINK_SHARE * texts as f64
}

/// The rows of a table.
fn row_count(table: &HNode) -> usize {
    table
        .children
        .iter()
        .filter(|r| r.kind == Kind::Row)
        .count()
}

/// Writes the candidate thresholds of `table`'s numeric columns to
/// `candidates`; `xpath` turns a cell's id into the XPath the watch uses.
fn numeric_candidates(
    table: &HNode,
    clip: &str,
    xpath: &dyn Fn(&HNode) -> String,
    threshold_names: &mut BTreeSet<String>,
    candidates: &mut String,
) {
    let rows = row_count(table);
    for column in numeric_columns(table).iter().take(MAX_COLUMNS) {
        let parts = column.first_key.into_iter().chain([column.col]);
        let mut tname = slug(parts);
        if tname.is_empty() {
            tname = format!("{clip}-value");
        }
        let tname = unique(tname, threshold_names);
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
            yaml_string(&format!("{}/@num", xpath(column.first)))
        );
        let _ = writeln!(candidates, "#     above: {num}   # now {num}");
    }
}

/// A commented starter watch file for the page at `url` whose hierarchy
/// is `page`: every table that is not navigation as a clip, named after
/// its caption or heading, and each table's numeric columns as candidate
/// thresholds, commented out. `list` is what `extract: records` finds on
/// the page: proposed as a clip when no table has two rows or more,
/// mentioned in a comment otherwise.
#[expect(
    clippy::too_many_lines,
    reason = "writes one YAML file top to bottom, a section after another"
)]
pub fn watch_file(url: &str, page: &Hierarchy, list: Option<&RecordList>) -> String {
    let mut out = String::new();
    let mut all = Vec::new();
    tables(&page.children, &mut all, &[]);
    let navigation = all.iter().filter(|(_, t)| is_navigation(t)).count();
    let found: Vec<_> = all.into_iter().filter(|(_, t)| !is_navigation(t)).collect();
    let list = list.filter(|l| row_count(&l.table) > 0);
    let propose_list = list.is_some() && found.iter().all(|(_, t)| row_count(t) < 2);
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
    if navigation > 0 {
        let _ = writeln!(
            out,
            "# Left out: {navigation} navigation table(s) (mostly links, or `v t e` boxes)."
        );
    }
    if let Some(l) = list.filter(|_| !propose_list) {
        let _ = writeln!(
            out,
            "# The page also holds a list of {} records: `extract: records` makes it a clip.",
            row_count(&l.table)
        );
    }
    if found.is_empty() && !propose_list {
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
    if let Some(l) = list.filter(|_| propose_list) {
        let title = l.heading.as_deref().map(one_line);
        let mut name = title.as_deref().map(clip_name).unwrap_or_default();
        if name.is_empty() {
            name = "records".to_owned();
        }
        let name = unique(name, &mut clip_names);
        let keycol = l.table.attr("keycol");
        let mut fields: Vec<&str> = keycol.into_iter().collect();
        for row in &l.table.children {
            for c in &row.children {
                if let Some(col) = c.col.as_deref()
                    && !fields.contains(&col)
                {
                    fields.push(col);
                }
            }
        }
        let mut shown = fields
            .iter()
            .take(MAX_COLUMNS)
            .copied()
            .collect::<Vec<_>>()
            .join(", ");
        if fields.len() > MAX_COLUMNS {
            let _ = write!(shown, " and {} more", fields.len() - MAX_COLUMNS);
        }
        let _ = writeln!(
            out,
            "  # {}: a list of {} records, each keyed by its `{}`; fields: {}",
            title.as_deref().unwrap_or("a list without heading"),
            row_count(&l.table),
            one_line(keycol.unwrap_or("?")),
            one_line(&shown)
        );
        let _ = writeln!(out, "  {name}:");
        let _ = writeln!(out, "    extract: records");
        if let Some(t) = &title {
            let _ = writeln!(out, "    description: {}", yaml_string(t));
        }
        // The extract clip's table sits at `/page/*[@clip='NAME']` in a
        // watch, not where the starter's own page put it.
        let prefix = format!("/page/table[@clip='{name}']");
        let rewrite = |n: &HNode| match n.xpath.strip_prefix(l.table.xpath.as_str()) {
            Some(rest) => format!("{prefix}{rest}"),
            None => n.xpath.clone(),
        };
        numeric_candidates(
            &l.table,
            &name,
            &rewrite,
            &mut threshold_names,
            &mut candidates,
        );
    }
    for (context, table) in found.iter().take(MAX_TABLES) {
        let title = table
            .label
            .as_deref()
            .or(context.last().map(String::as_str))
            .map(one_line);
        let mut name = title.as_deref().map(clip_name).unwrap_or_default();
        if name.is_empty() {
            name = node_name(table, None);
        }
        let name = unique(name, &mut clip_names);
        let rows = row_count(table);
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
        if let Some(t) = &title {
            let _ = writeln!(out, "    description: {}", yaml_string(t));
        }
        numeric_candidates(
            table,
            &name,
            &|n: &HNode| n.xpath.clone(),
            &mut threshold_names,
            &mut candidates,
        );
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
        let file = watch_file("file:///tmp/q.html", &h, None);
        assert!(file.contains("url: \"file:///tmp/q.html\""), "{file}");
        assert!(
            file.contains("  shares:\n    xpath: \"/page/table"),
            "{file}"
        );
        assert!(file.contains("#   - name: gazp-last"), "{file}");
        assert!(file.contains("/cell[@col='Last']/@num\""), "{file}");
        assert!(!file.contains("name: gazp-name"), "{file}");
    }

    #[test]
    fn navigation_tables_are_left_out_and_clips_named_after_captions_or_headings() {
        let html = "<title>Cities</title>\
            <h2>Largest urban areas of the country today</h2><table>\
            <tr><th>City<th>Pop.</tr><tr><td>Auckland<td>1,712,300</tr>\
            <tr><td>Wellington<td>215,400</tr></table>\
            <table><caption>v t e Cities of the country</caption>\
            <tr><td><a href=/a>Auckland</a><td><a href=/w>Wellington</a><td><a href=/n>Napier</a></tr>\
            <tr><td><a href=/c>Christchurch</a><td><a href=/h>Hamilton</a><td><a href=/d>Dunedin</a></tr>\
            <tr><td><a href=/t>Tauranga</a><td><a href=/p>Picton</a><td><a href=/o>Oamaru</a></tr></table>\
            <table><tr><td><a href=/1>Home</a><td><a href=/2>News</a><td><a href=/5>Travel</a></tr>\
            <tr><td><a href=/3>Sport</a><td><a href=/4>Weather</a><td><a href=/6>Arts</a></tr>\
            <tr><td><a href=/7>Food</a><td><a href=/8>Science</a><td><a href=/9>Video</a></tr></table>";
        let h = Hierarchy::from_html(html, None);
        let file = watch_file("file:///tmp/c.html", &h, None);
        assert!(file.contains("Left out: 2 navigation table(s)"), "{file}");
        assert!(
            file.contains("  largest-urban-areas:\n    xpath: \"/page/"),
            "{file}"
        );
        assert!(
            file.contains("    description: \"Largest urban areas of the country today\"\n"),
            "{file}"
        );
        assert!(!file.contains("Christchurch"), "{file}");
        let clips = file
            .lines()
            .filter(|l| l.starts_with("    xpath: "))
            .count();
        assert_eq!(clips, 1, "{file}");
        assert_eq!(clip_name("The list of the"), "the-list");
        assert_eq!(clip_name("Акции"), "");
    }

    /// A records table as `semclip init` builds it.
    fn record_list(heading: Option<&str>) -> RecordList {
        use crate::extract::{Field, Record, Records, vocabulary};
        let field = |name: &str, text: &str| Field {
            name: name.into(),
            text: text.into(),
            href: None,
            xpath: "/body[1]".into(),
        };
        let records = Records {
            records: ["Acme", "Globex", "Initech"]
                .iter()
                .enumerate()
                .map(|(i, c)| Record {
                    fields: vec![field("price", &format!("${i}0")), field("title", c)],
                    xpaths: vec![format!("/body[1]/div[{}]", i + 1)],
                })
                .collect(),
        };
        let mut page = Hierarchy {
            title: None,
            url: None,
            lang: None,
            children: vec![vocabulary::records_node(
                &records,
                crate::hierarchy::number::DecimalStyle::Point,
            )],
        };
        crate::hierarchy::assign_ids(&mut page);
        RecordList {
            heading: heading.map(str::to_owned),
            table: page.children.remove(0),
        }
    }

    #[test]
    fn a_list_page_without_data_tables_gets_an_extract_records_clip() {
        let h = Hierarchy::from_html("<title>Shop</title><p>Hello</p>", None);
        let list = record_list(Some("Deals of the week"));
        let file = watch_file("file:///tmp/s.html", &h, Some(&list));
        assert!(
            file.contains(
                "  deals-of-the-week:\n    extract: records\n    description: \"Deals of the week\"\n"
            ),
            "{file}"
        );
        assert!(
            file.contains("a list of 3 records, each keyed by its `title`; fields: title, price"),
            "{file}"
        );
        assert!(
            file.contains("xpath: \"/page/table[@clip='deals-of-the-week']/row[@key='Acme']/cell[@col='price']/@num\""),
            "{file}"
        );
        // Without a heading the clip is `records`.
        let file = watch_file("file:///tmp/s.html", &h, Some(&record_list(None)));
        assert!(
            file.contains("  records:\n    extract: records\n"),
            "{file}"
        );
        // A page with a data table keeps the table as its clip and only
        // mentions the list.
        let html = "<table><caption>Shares</caption><tr><th>Ticker<th>Last</tr>\
                    <tr><td>GAZP<td>251,30</tr><tr><td>SBER<td>300,15</tr></table>";
        let h = Hierarchy::from_html(html, None);
        let file = watch_file("file:///tmp/q.html", &h, Some(&list));
        assert!(!file.contains("extract: records\n"), "{file}");
        assert!(file.contains("also holds a list of 3 records"), "{file}");
        assert!(file.contains("  shares:\n"), "{file}");
    }
}
