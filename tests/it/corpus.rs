//! Whole-corpus checks: for every real page, the document is well-formed,
//! deterministic, and every `xpath` attribute selects exactly its element.

use semclip::hierarchy::write::{XmlOptions, to_xml};
use semclip::hierarchy::{HNode, Hierarchy};
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

/// Every string of the hierarchy: the title and each node's label, key,
/// column header, text and attribute values (`keycol` included).
fn hierarchy_strings(h: &Hierarchy) -> Vec<String> {
    let mut out: Vec<String> = h.title.iter().cloned().collect();
    let mut stack: Vec<&HNode> = h.children.iter().collect();
    while let Some(n) = stack.pop() {
        for s in [&n.label, &n.key, &n.text].into_iter().flatten() {
            out.push(s.clone());
        }
        out.extend(n.col.as_deref().map(str::to_owned));
        for (name, v) in &n.attrs {
            if *name != "href" {
                out.push(v.clone());
            }
        }
        stack.extend(&n.children);
    }
    out
}

/// The visible text nodes of a page, each normalised: the `<title>` and
/// the body's text outside what the hierarchy drops on purpose (docs/hierarchy.md,
/// "What is dropped": scripts, styles, templates, `noscript`, SVG, MathML,
/// iframes, media, form controls, `hidden` and `aria-hidden` content).
fn visible_texts(html: &str) -> Vec<String> {
    use semclip::hierarchy::{TagClass, class_of, text::normalize};
    use semclip::page::dom::{DOCUMENT, Dom, NodeData};
    let dom = Dom::parse(html);
    let mut out = Vec::new();
    let (title, _) = semclip::hierarchy::title_and_lang(&dom);
    out.extend(title);
    let Some(body) = dom.body() else { return out };
    let _ = DOCUMENT;
    let mut stack = vec![body];
    while let Some(n) = stack.pop() {
        match &dom.node(n).data {
            NodeData::Text(t) => {
                let t = normalize(t);
                if !t.is_empty() {
                    out.push(t);
                }
            }
            NodeData::Element(e) => {
                let hidden = e.attr("hidden").is_some()
                    || e.attr("aria-hidden")
                        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
                if !e.is_html()
                    || hidden
                    || matches!(class_of(&e.name), TagClass::Drop | TagClass::Invisible)
                {
                    continue;
                }
                stack.extend(dom.children(n));
            }
            _ => {}
        }
    }
    out
}

/// Words of the page's visible text, and those found in its hierarchy; a
/// few of the missing ones, for the report.
fn visible_text_share(html: &str) -> (usize, usize, Vec<String>) {
    use std::collections::HashSet;
    let h = Hierarchy::from_html(html, None);
    let strings = hierarchy_strings(&h);
    let words: HashSet<&str> = strings.iter().flat_map(|s| s.split_whitespace()).collect();
    let blob = strings.join("\n");
    let (mut total, mut found) = (0, 0);
    let mut missing = Vec::new();
    for t in visible_texts(html) {
        let ws: Vec<&str> = t.split_whitespace().collect();
        for (i, w) in ws.iter().enumerate() {
            total += 1;
            // A word at a text node's edge may be glued to the next inline
            // text (`<b>Hel</b>lo` is `Hello`).
            let edge = i == 0 || i + 1 == ws.len();
            if words.contains(w) || (edge && blob.contains(w)) {
                found += 1;
            } else if missing.len() < 8 {
                missing.push(t.chars().take(80).collect());
            }
        }
    }
    (total, found, missing)
}

#[test]
fn every_visible_text_of_every_corpus_page_is_in_its_hierarchy() {
    let Some(corpus) = corpus("every_visible_text_of_every_corpus_page_is_in_its_hierarchy") else {
        return;
    };
    let pages = corpus_pages(&corpus);
    let (mut total, mut found) = (0usize, 0usize);
    let mut rows = Vec::new();
    for path in &pages {
        let (t, f, missing) = visible_text_share(&read_page(path));
        total += t;
        found += f;
        let share = if t == 0 { 1.0 } else { f as f64 / t as f64 };
        let name = path
            .strip_prefix(&corpus)
            .unwrap_or(path)
            .display()
            .to_string();
        rows.push((share, name, t, f, missing));
    }
    rows.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    let overall = found as f64 / total.max(1) as f64;
    eprintln!(
        "visible text in the hierarchy: {found}/{total} words ({:.4}%) over {} pages",
        overall * 100.0,
        pages.len()
    );
    for (share, name, t, f, missing) in &rows {
        eprintln!("{:>9.4}% {f:>6}/{t:<6} {name} {missing:?}", share * 100.0);
    }
    // Known gaps (issue 17, left open): column headers over columns with
    // no values (inscriptis invalid tables, a grid of images), an ARIA
    // grid's caption (`May 2024`), and texts of a few article pages.
    let known = [
        "articles/readability/hukumusume/expected.html",
        "articles/readability/hukumusume/source.html",
        "articles/readability/keep-tabular-data/expected.html",
        "articles/readability/keep-tabular-data/source.html",
        "records/next-eval/html/72.html",
        "records/next-eval/html/134.html",
        "records/next-eval/html/84.html",
        "tables/inscriptis/invalid-table.html",
        "tables/inscriptis/invalid-table2.html",
        "tables/inscriptis/invalid-table3.html",
    ];
    let lossy: Vec<_> = rows
        .iter()
        .filter(|r| r.2 != r.3 && !known.contains(&r.1.as_str()))
        .map(|r| format!("{} {:?}", r.1, r.4))
        .collect();
    assert!(
        lossy.is_empty(),
        "{} pages lose visible text:\n{}",
        lossy.len(),
        lossy.join("\n")
    );
    assert!(overall > 0.9999, "{overall}");
}

#[test]
fn visible_text_of_the_three_table_shapes_is_kept() {
    for html in [
        "<table><tr><th>Region<th>City<th>Sales<tr><th rowspan=2>North<th>New York<td>100<tr><th>Boston<td>80</table>",
        "<table><tr><th>Name<th>Age<th>City<tr><td>Alice<td>30<td>London<tr><td>Bob<td>25<td>Paris</table>",
        "<table><tr><td>Corner<td>A<td>B<tr><td>x<td>y<td>z<tr><td>u<td>v<td>w</table>",
        "<table><tr><th colspan=2>Companies<tr><th colspan=2>(by changesets)<tr><td>Red Hat<td>8417<tr><td>IBM<td>10</table>",
        "<table><caption>Chur</caption><tr><td colspan=2>Coat of arms<tr><td>a<td>1<tr><td>b<td>2</table>",
    ] {
        let (total, found, missing) = visible_text_share(html);
        assert_eq!(found, total, "{html}: {missing:?}");
    }
}

/// The DOM sketch a check takes straight from the DOM (no simplified tree)
/// is the one the tree gives, on every corpus page: stored sketches stay
/// comparable, and layout drift is measured the same.
#[test]
fn the_sketch_taken_from_the_dom_is_the_trees_on_every_corpus_page() {
    use semclip::page::dom::Dom;
    use semclip::template::minhash::Sketch;
    use semclip::template::tree::PageTree;
    let Some(corpus) = corpus("the_sketch_taken_from_the_dom_is_the_trees_on_every_corpus_page")
    else {
        return;
    };
    let pages = corpus_pages(&corpus);
    assert!(pages.len() > 300, "found {} pages", pages.len());
    let mut differ = Vec::new();
    for path in &pages {
        let dom = Dom::parse(&read_page(path));
        let tree = PageTree::from_dom(&dom);
        if Sketch::of_dom(&dom) != Sketch::of_tree(&tree, None) {
            differ.push(path.display().to_string());
        }
    }
    assert!(differ.is_empty(), "sketches differ on {differ:?}");
}
