//! Whole-corpus checks: for every real page, the document is well-formed,
//! deterministic, and every `xpath` attribute selects exactly its element.

use semclip::hierarchy::{HNode, Hierarchy};
use semclip::output::{XmlOptions, to_xml};
use semclip::xpath::HierarchyDoc;

use crate::util::{corpus, corpus_pages, read_page};

fn ids(nodes: &[HNode], out: &mut Vec<String>) {
    for n in nodes {
        out.push(n.xpath.clone());
        ids(&n.children, out);
    }
}

/// Checks one page; returns a description of each problem.
pub fn check_page(html: &str) -> Vec<String> {
    let h = Hierarchy::from_html(html, Some("https://example.org/page?a=1&b=2"));
    let xml = to_xml(&h, XmlOptions::default());
    let again = to_xml(
        &Hierarchy::from_html(html, Some("https://example.org/page?a=1&b=2")),
        XmlOptions::default(),
    );
    let mut problems = Vec::new();
    if xml != again {
        problems.push("output is not deterministic".to_owned());
    }
    let doc = match HierarchyDoc::parse(&xml) {
        Ok(d) => d,
        Err(e) => return vec![format!("not well-formed: {e}")],
    };
    let mut all = vec!["/page".to_owned()];
    ids(&h.children, &mut all);
    for id in &all {
        match doc.select_ids(id) {
            Ok(found) if found.len() == 1 && &found[0] == id => {}
            Ok(found) => problems.push(format!("{id} selects {found:?}")),
            Err(e) => problems.push(format!("{id}: {e}")),
        }
    }
    problems
}

#[test]
fn every_corpus_page_gives_a_valid_self_addressed_document() {
    let Some(corpus) = corpus("every_corpus_page_gives_a_valid_self_addressed_document") else {
        return;
    };
    let pages = corpus_pages(&corpus);
    assert!(
        pages.len() > 300,
        "expected several hundred pages, found {}",
        pages.len()
    );
    let mut failures = Vec::new();
    let mut nodes = 0usize;
    for path in &pages {
        let html = read_page(path);
        nodes += Hierarchy::from_html(&html, None).size();
        for p in check_page(&html) {
            failures.push(format!("{}: {p}", path.display()));
        }
    }
    assert!(nodes > 10_000, "suspiciously few nodes: {nodes}");
    assert!(
        failures.is_empty(),
        "{} problems:\n{}",
        failures.len(),
        failures[..failures.len().min(40)].join("\n")
    );
}

#[test]
fn hand_made_hard_labels_are_addressable() {
    let html = r#"<html><head><title>It's "quoted"</title></head><body>
        <h2>Bob's "best" prices</h2><h2>Bob's "best" prices</h2><h2>plain</h2>
        <table><caption>a'b"c</caption><tr><th>k<th>it's<th>say "hi"<tr><td>'<td>1<td>2<tr><td>"<td>3<td>4</table>
        <ul><li>x<li>x<li>y</ul></body></html>"#;
    assert_eq!(check_page(html), Vec::<String>::new());
    let xml = to_xml(&Hierarchy::from_html(html, None), XmlOptions::default());
    assert!(xml.contains(r#"xpath="/page/section[@label=concat('Bob', &quot;'&quot;, 's &quot;best&quot; prices')][2]""#), "{xml}");
}

#[test]
fn garbage_and_hostile_input_gives_well_formed_output() {
    let deep_divs = "<div>".repeat(100_000) + "deep text";
    let deep_lists = "<ul><li>".repeat(20_000) + "x";
    let deep_tables = "<table><tr><td>".repeat(5_000) + "y";
    let cases: Vec<String> = vec![
        String::new(),
        "\u{0}\u{1}\u{FFFE}\u{FFFF}<p>\u{B}text\u{7F}</p>".into(),
        "<title>\u{0}</title><table><tr><td colspan=0 rowspan=-5>a".into(),
        "<<<>>>&&&;;<!--<p>".into(),
        deep_divs,
        deep_lists,
        deep_tables,
        "<svg><title>not the page</title><p>escaped</p></svg><math><mi>x</mi></math>".into(),
    ];
    for html in cases {
        let problems = check_page(&html);
        assert!(
            problems.is_empty(),
            "{:?}: {problems:?}",
            &html[..html.len().min(60)]
        );
    }
    // Text past the depth limit is read as text, not lost.
    let xml = to_xml(
        &Hierarchy::from_html(&("<div>".repeat(100_000) + "deep text"), None),
        XmlOptions::default(),
    );
    assert!(xml.contains("deep text"), "{xml}");
}
