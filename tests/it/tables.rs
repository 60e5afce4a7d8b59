//! Tables: the HTML 4 merged-cells example (golden), the rvest span cases
//! against the grids in the corpus's `table.md`, and table heuristics.

use std::collections::BTreeMap;

use semclip::hierarchy::write::{XmlOptions, to_xml};
use semclip::hierarchy::{Hierarchy, pseudo_tables};

use crate::util::{corpus, fixture};

fn xml(html: &str) -> String {
    to_xml(&Hierarchy::from_html(html, None), XmlOptions::default())
}

#[test]
fn html4_merged_cells_golden() {
    let html = std::fs::read_to_string(fixture("html4-merged-cells.html")).unwrap();
    let expected = std::fs::read_to_string(fixture("html4-merged-cells.xml")).unwrap();
    assert_eq!(xml(&html), expected);
}

#[test]
fn html4_merged_cells_branches() {
    let html = std::fs::read_to_string(fixture("html4-merged-cells.html")).unwrap();
    let h = Hierarchy::from_html(&html, None);
    let table = &h.children[0];
    assert_eq!(
        table.label.as_deref(),
        Some("A test table with merged cells.")
    );
    let mut branches = Vec::new();
    for row in &table.children {
        for cell in &row.children {
            branches.push(format!(
                "{} / {} / {} = {} ({})",
                table.label.as_deref().unwrap_or(""),
                row.key.as_deref().unwrap_or(""),
                cell.col.as_deref().unwrap_or(""),
                cell.text.as_deref().unwrap_or(""),
                cell.num.as_deref().unwrap_or("")
            ));
        }
    }
    let c = "A test table with merged cells.";
    assert_eq!(
        branches,
        [
            format!("{c} / males / Average height = 1.9 (1.9)"),
            format!("{c} / males / Average weight = 0.003 (0.003)"),
            format!("{c} / males / Red eyes = 40% (40)"),
            format!("{c} / females / Average height = 1.7 (1.7)"),
            format!("{c} / females / Average weight = 0.002 (0.002)"),
            format!("{c} / females / Red eyes = 43% (43)"),
        ]
    );
}

/// The rvest test cases, written from the grids in `table.md` (the
/// corpus's `table.html` holds only the simple table).
fn rvest_cases() -> BTreeMap<&'static str, &'static str> {
    BTreeMap::from([
        (
            "can parse simple table",
            "<tr><th>x<th>y<th>z<tr><td>1<td>Eve<td>Jackson<tr><td>2<td>John<td>Doe",
        ),
        (
            "can parse with colspan",
            "<tr><th>x<th>y<th>z<tr><td colspan=3>1<tr><td colspan=2>1<td>2<tr><td>1<td colspan=2>2",
        ),
        (
            "can parse with rowspan",
            "<tr><th>x<th>y<th>z<tr><td rowspan=3>1<td>2<td>3<tr><td rowspan=2>2<td>3<tr><td>3",
        ),
        (
            "can handle wobbling rowspan",
            "<tr><th>x<th>y<th>z<tr><td rowspan=2>1a<td>1b<td rowspan=2>1c<tr><td rowspan=2>2b<tr><td>3a<td>3c",
        ),
        (
            "can handle trailing rowspans",
            "<tr><th>x<th>y<th>z<tr><td>1<td rowspan=4>2<td rowspan=2>3",
        ),
        (
            "can handle blank colspans",
            "<tr><th>x<th>y<tr><td colspan=''>1<td colspan=''>2<tr><td colspan=2>3",
        ),
        (
            "can handle blank rowspans",
            "<tr><th>x<th>y<tr><td rowspan=''>1<td rowspan=''>2<tr><td colspan=2>3",
        ),
        ("can handle empty row", "<tr><th>x<tr><tr><td>2"),
        ("no conversion", "<tr><th>x<th>y<tr><td>001<td>100.0"),
        ("can handle empty tables", ""),
        (
            "can handle tables consisting of a single empty row",
            "<tr></tr>",
        ),
        (
            "can handle tables consisting of only empty rows",
            "<tr></tr><tr><td></td></tr><tr></tr>",
        ),
    ])
}

/// Parses `table.md`: case name -> (column names, rows); `NA` is empty.
fn expected_grids(md: &str) -> BTreeMap<String, (Vec<String>, Vec<Vec<String>>)> {
    let mut out = BTreeMap::new();
    let mut lines = md.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(name) = line.strip_prefix("# ") else {
            continue;
        };
        // Find the tibble header of this case, if it has one.
        while lines.peek().is_some_and(|l| l.trim().is_empty()) {
            lines.next();
        }
        let Some(head) = lines.peek().map(|l| l.trim().to_owned()) else {
            break;
        };
        if !head.starts_with("# A tibble:") {
            continue;
        }
        lines.next();
        let mut rows = Vec::new();
        let mut names = Vec::new();
        if !head.contains("0 x 0") {
            names = lines
                .next()
                .unwrap()
                .split_whitespace()
                .map(str::to_owned)
                .collect();
            lines.next(); // column types
            while let Some(l) = lines.peek() {
                if l.trim().is_empty() {
                    break;
                }
                let cells: Vec<String> = l
                    .split_whitespace()
                    .skip(1)
                    .map(|c| {
                        if c == "NA" {
                            String::new()
                        } else {
                            c.to_owned()
                        }
                    })
                    .collect();
                rows.push(cells);
                lines.next();
            }
        }
        out.insert(name.to_owned(), (names, rows));
    }
    out
}

#[test]
fn rvest_span_cases_match_table_md() {
    let Some(corpus) = corpus("rvest_span_cases_match_table_md") else {
        return;
    };
    let md = std::fs::read_to_string(corpus.join("tables/rvest/table.md")).unwrap();
    let expected = expected_grids(&md);
    let cases = rvest_cases();
    let mut checked = 0;
    for (name, (names, rows)) in &expected {
        let html = cases
            .get(name.as_str())
            .unwrap_or_else(|| panic!("table.md has a case {name:?} this test does not know"));
        let tables = pseudo_tables(&format!("<table>{html}</table>"));
        if rows.is_empty() {
            assert!(
                tables.is_empty() || tables[0].grid.len() <= tables[0].header_rows,
                "{name}: {tables:?}"
            );
        } else {
            assert_eq!(tables.len(), 1, "{name}");
            let t = &tables[0];
            assert_eq!(t.header_rows, 1, "{name}");
            assert_eq!(&t.grid[0], names, "{name}: header");
            assert_eq!(&t.grid[1..], rows.as_slice(), "{name}: body");
        }
        checked += 1;
    }
    assert!(checked >= 11, "only {checked} cases found in table.md");
}

#[test]
fn rvest_simple_page() {
    let Some(corpus) = corpus("rvest_simple_page") else {
        return;
    };
    let html = std::fs::read_to_string(corpus.join("tables/rvest/table.html")).unwrap();
    let t = pseudo_tables(&html);
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].grid[0], ["Header 1", "Header 2", "Header 3"]);
    assert_eq!(
        t[0].grid[2],
        ["Row 2, Cell 1", "Row 2, Cell 2", "Row 2, Cell 3"]
    );
    let out = xml(&html);
    assert!(out.contains(r#"<row key="Row 1, Cell 1""#), "{out}");
    assert!(out.contains(r#"<cell col="Header 3" xpath="/page/table[1]/row[@key='Row 1, Cell 1']/cell[@col='Header 3']">Row 1, Cell 3</cell>"#), "{out}");
}

#[test]
fn inscriptis_snapshots() {
    let Some(corpus) = corpus("inscriptis_snapshots") else {
        return;
    };
    let dir = corpus.join("tables/inscriptis");
    let mut n = 0;
    for path in crate::util::html_files(&dir) {
        let html = crate::util::read_page(&path);
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let h = Hierarchy::from_html(&html, None);
        insta::assert_snapshot!(
            format!("inscriptis__{name}"),
            semclip::hierarchy::write::to_outline(&h)
        );
        n += 1;
    }
    assert!(n > 20);
}

#[test]
fn duplicate_and_empty_keys_stay_addressable() {
    let out = xml(
        "<table><tr><th>Item<th>Qty<tr><td>Total<td>1<tr><td>Total<td>2<tr><td>Total<td>3<tr><td><td>4</table>",
    );
    assert!(
        out.contains(r#"<row key="Total" xpath="/page/table[1]/row[@key='Total']">"#),
        "{out}"
    );
    assert!(
        out.contains(
            r#"<row key="Total #2" ordinal="2" xpath="/page/table[1]/row[@key='Total #2']">"#
        ),
        "{out}"
    );
    assert!(out.contains(r#"<row key="Total #3" ordinal="3""#), "{out}");
    assert!(
        out.contains(r#"<row xpath="/page/table[1]/row[4]">"#),
        "{out}"
    );
}

#[test]
fn layout_tables_are_containers() {
    // One cell, one row, and a page-layout grid with headings inside.
    let h = Hierarchy::from_html(
        "<table><tr><td><h1>News</h1><p>Story one.</p></td></tr></table>\
         <table><tr><td>left</td><td>right</td></tr></table>\
         <table><tr><td>Menu</td><td><h2>Body</h2><p>Text</p></td></tr><tr><td>a</td><td>b</td></tr></table>",
        None,
    );
    let out = semclip::hierarchy::write::to_outline(&h);
    assert!(
        !out.contains("table"),
        "layout tables must not become data:\n{out}"
    );
    assert!(out.contains("section News"), "{out}");
    assert!(
        out.contains("text left") && out.contains("text right"),
        "{out}"
    );
}

#[test]
fn aria_grid_is_a_table() {
    let html = r#"<div role="table" aria-label="Quotes">
        <div role="row"><span role="columnheader">Ticker</span><span role="columnheader">Last</span></div>
        <div role="row"><span role="rowheader">GAZP</span><span role="cell">251,30</span></div>
        <div role="row"><span role="rowheader">SBER</span><span role="cell">300,10</span></div>
      </div>"#;
    let out = xml(&format!("<html lang=ru><body>{html}"));
    assert!(
        out.contains(r#"<table label="Quotes" keycol="Ticker""#),
        "{out}"
    );
    assert!(out.contains(r#"<cell col="Last" num="251.3" xpath="/page/table[@label='Quotes']/row[@key='GAZP']/cell[@col='Last']">251,30</cell>"#), "{out}");
}

#[test]
fn td_only_first_row_header_and_numeric_first_row() {
    let out = xml("<table><tr><td>Name<td>Price<tr><td>Tea<td>3.50<tr><td>Coffee<td>4</table>");
    assert!(out.contains(r#"<cell col="Price" num="3.5""#), "{out}");
    // A first row of numbers is data, not a header.
    let out = xml("<table><tr><td>a<td>1<tr><td>b<td>2</table>");
    assert!(
        out.contains(r#"<row key="a""#) && out.contains(r#"<row key="b""#),
        "{out}"
    );
    assert!(!out.contains("col="), "{out}");
}

#[test]
fn nested_table_with_lead_text_is_labelled() {
    let out = xml(
        "<table><tr><th>k<th>v<tr><td>a<td>Details: <table><tr><th>x<th>y<tr><td>1<td>2</table></table>",
    );
    assert!(out.contains(r#"<cell label="Details:" col="v""#), "{out}");
    assert!(out.contains(r#"<cell col="y" num="2""#), "{out}");
}

#[test]
fn hostile_spans_are_capped() {
    let mut html = String::from("<table><tr><th>a<th>b");
    for _ in 0..50 {
        html.push_str("<tr><td colspan=100000 rowspan=100000>x<td>y");
    }
    html.push_str("</table>");
    let t = pseudo_tables(&html);
    let slots: usize = t
        .iter()
        .map(|t| t.grid.iter().map(Vec::len).sum::<usize>())
        .sum();
    assert!(
        slots <= semclip::hierarchy::table::MAX_SLOTS + 2000,
        "{slots}"
    );
}

/// The three table shapes of issue 17, each with its exact hierarchy.
#[test]
fn row_headers_in_two_columns_give_a_hierarchical_key() {
    let out = xml("<table><caption>Sales</caption>\
         <tr><th>Region<th>City<th>Sales\
         <tr><th rowspan=2>North<th>New York<td>100\
         <tr><th>Boston<td>80\
         <tr><th>South<th>Miami<td>90</table>");
    let t = "/page/table[@label='Sales']";
    let expected = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<page version="2" xpath="/page">
  <table label="Sales" keycol="Region / City" xpath="{t}">
    <row key="North / New York" xpath="{t}/row[@key='North / New York']">
      <cell col="Sales" num="100" xpath="{t}/row[@key='North / New York']/cell[@col='Sales']">100</cell>
    </row>
    <row key="North / Boston" xpath="{t}/row[@key='North / Boston']">
      <cell col="Sales" num="80" xpath="{t}/row[@key='North / Boston']/cell[@col='Sales']">80</cell>
    </row>
    <row key="South / Miami" xpath="{t}/row[@key='South / Miami']">
      <cell col="Sales" num="90" xpath="{t}/row[@key='South / Miami']/cell[@col='Sales']">90</cell>
    </row>
  </table>
</page>
"#
    );
    assert_eq!(out, expected);
}

#[test]
fn a_first_row_header_keeps_the_key_column_header() {
    let html = "<table><tr><th>Name<th>Age<th>City\
         <tr><td>Alice<td>30<td>London<tr><td>Bob<td>25<td>Paris</table>";
    let out = xml(html);
    let t = "/page/table[1]";
    let expected = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<page version="2" xpath="/page">
  <table keycol="Name" xpath="{t}">
    <row key="Alice" xpath="{t}/row[@key='Alice']">
      <cell col="Age" num="30" xpath="{t}/row[@key='Alice']/cell[@col='Age']">30</cell>
      <cell col="City" xpath="{t}/row[@key='Alice']/cell[@col='City']">London</cell>
    </row>
    <row key="Bob" xpath="{t}/row[@key='Bob']">
      <cell col="Age" num="25" xpath="{t}/row[@key='Bob']/cell[@col='Age']">25</cell>
      <cell col="City" xpath="{t}/row[@key='Bob']/cell[@col='City']">Paris</cell>
    </row>
  </table>
</page>
"#
    );
    assert_eq!(out, expected);
    // `Name -> Alice` is found by XPath, and the outline shows the header.
    let doc = semclip::xpath::HierarchyDoc::parse(&out).unwrap();
    let found = doc
        .select_ids("//table[@keycol='Name']/row[@key='Alice']")
        .unwrap();
    assert_eq!(found, [format!("{t}/row[@key='Alice']")]);
    let outline = semclip::hierarchy::write::to_outline(&Hierarchy::from_html(html, None));
    assert!(outline.contains("table (keyed by Name)"), "{outline}");
}

#[test]
fn a_table_without_headers_keeps_its_corner_and_its_title_rows() {
    // No TH: the first row is the header, its corner heads the key column
    // (`keycol`); the caption labels the table and the two full-width
    // title rows stay as label rows, so none of their text is lost.
    let out = xml(
        "<table><caption>Cap</caption><tr><td colspan=3>One<tr><td colspan=3>Two\
         <tr><td>Corner<td>A<td>B<tr><td>x<td>p<td>q<tr><td>y<td>r<td>s</table>",
    );
    let t = "/page/table[@label='Cap']";
    let expected = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<page version="2" xpath="/page">
  <table label="Cap" keycol="Corner" xpath="{t}">
    <row key="One" xpath="{t}/row[@key='One']"/>
    <row key="Two" xpath="{t}/row[@key='Two']"/>
    <row key="x" xpath="{t}/row[@key='x']">
      <cell col="A" xpath="{t}/row[@key='x']/cell[@col='A']">p</cell>
      <cell col="B" xpath="{t}/row[@key='x']/cell[@col='B']">q</cell>
    </row>
    <row key="y" xpath="{t}/row[@key='y']">
      <cell col="A" xpath="{t}/row[@key='y']/cell[@col='A']">r</cell>
      <cell col="B" xpath="{t}/row[@key='y']/cell[@col='B']">s</cell>
    </row>
  </table>
</page>
"#
    );
    assert_eq!(out, expected);
}

#[test]
fn one_row_header_column_keeps_keys_and_ids() {
    // A TH key column with TD values is keyed as before (ids unchanged).
    let out = xml("<table><tr><th>k<th>v<tr><th>a<td>1<tr><th>b<td>2</table>");
    assert!(
        out.contains(r#"<table keycol="k" xpath="/page/table[1]">"#),
        "{out}"
    );
    assert!(
        out.contains(r#"<row key="a" xpath="/page/table[1]/row[@key='a']">"#),
        "{out}"
    );
}
