//! The native XPath evaluator against libxml2: a differential test on every
//! corpus page.
//!
//! A check answers threshold and clip XPaths on the hierarchy itself when
//! they are location paths of the forms `src/xpath/native.rs` lists, and
//! hands anything else to libxml2 on the hierarchy's XML. Both must give the
//! same answer. Expressions are generated from each page's own hierarchy:
//! every node's id, its `@num`, `@label` and `@key`, descendant forms keyed
//! by row key and column, positions, `*` and `starts-with()` prefixes, and
//! variants that select nothing. For each, the node-set (as ids, in order)
//! and the threshold reading must be equal.

use semclip::hierarchy::{HNode, Hierarchy, xpath_literal};
use semclip::monitor::threshold::{read, read_on};
use semclip::xpath::native::Evaluator;
use semclip::xpath::{HierarchyDoc, XPathValue};

use crate::util::{corpus, corpus_pages, read_page};

/// Expressions generated from `h`: at most `limit` nodes, spread over the page.
fn expressions(h: &Hierarchy, limit: usize) -> Vec<String> {
    fn walk<'a>(n: &'a HNode, out: &mut Vec<&'a HNode>) {
        out.push(n);
        for c in &n.children {
            walk(c, out);
        }
    }
    let mut nodes = Vec::new();
    for c in &h.children {
        walk(c, &mut nodes);
    }
    let step = (nodes.len() / limit.max(1)).max(1);
    let mut out = vec![
        "/page".to_owned(),
        "/page/@label".to_owned(),
        "/page/*".to_owned(),
        "//row[1]".to_owned(),
        "//cell[2]/@num".to_owned(),
        "//*[@num][3]".to_owned(),
        "//section//item[2]".to_owned(),
        "/page/section[1]/*[1]".to_owned(),
        "//nothing[@key='x']".to_owned(),
    ];
    for n in nodes.iter().step_by(step) {
        let id = &n.xpath;
        out.push(id.clone());
        out.push(format!("{id}/@num"));
        out.push(format!("{id}/@label"));
        out.push(format!("{id}/*[1]"));
        out.push(format!("{id}[2]"));
        let name = n.kind.name();
        if let Some(key) = &n.key {
            out.push(format!("//{name}[@key={}]", xpath_literal(key)));
            for c in n.children.iter().take(3) {
                if let Some(col) = &c.col {
                    out.push(format!(
                        "//row[@key={}]/cell[@col={}]/@num",
                        xpath_literal(key),
                        xpath_literal(col)
                    ));
                }
            }
        }
        if let Some(label) = &n.label {
            out.push(format!("//{name}[@label={}]", xpath_literal(label)));
            out.push(format!("//*[@label={}][1]", xpath_literal(label)));
            let prefix: String = label.chars().take(3).collect();
            out.push(format!(
                "//{name}[starts-with(@label, {})]",
                xpath_literal(&prefix)
            ));
        }
        if let Some(col) = &n.col {
            out.push(format!("//cell[@col={}][2]", xpath_literal(col)));
        }
    }
    out
}

fn ids(doc: &HierarchyDoc, expr: &str) -> Vec<String> {
    match doc.evaluate(expr) {
        Ok(XPathValue::Nodes(nodes)) => nodes.into_iter().filter_map(|n| n.id).collect(),
        other => panic!("{expr}: libxml2 gave {other:?}"),
    }
}

#[test]
fn native_answers_equal_libxml2_on_every_corpus_page() {
    let Some(corpus) = corpus("native_answers_equal_libxml2_on_every_corpus_page") else {
        return;
    };
    let pages = corpus_pages(&corpus);
    assert!(pages.len() > 300, "found {} pages", pages.len());
    let (mut compared, mut native) = (0usize, 0usize);
    let mut failures = Vec::new();
    for path in &pages {
        let h = Hierarchy::from_html(&read_page(path), None);
        let ev = Evaluator::new(&h);
        let doc = ev
            .doc()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for expr in expressions(&h, 40) {
            compared += 1;
            let Some(hits) = ev.flat().select(&expr) else {
                continue;
            };
            native += 1;
            let got: Vec<String> = hits.iter().map(|hit| ev.flat().id(hit)).collect();
            let want = ids(doc, &expr);
            if got != want {
                failures.push(format!(
                    "{} {expr}: native {got:?}, libxml2 {want:?}",
                    path.display()
                ));
                continue;
            }
            let fast = read_on(&ev, &expr).map_err(|e| e.to_string());
            let slow = read(doc, &expr).map_err(|e| e.to_string());
            if fast != slow {
                failures.push(format!(
                    "{} {expr}: reading native {fast:?}, libxml2 {slow:?}",
                    path.display()
                ));
            }
            if ev.selects(&expr) == want.is_empty() {
                failures.push(format!("{} {expr}: selects differs", path.display()));
            }
        }
    }
    eprintln!(
        "native XPath: {native} of {compared} generated expressions answered natively on {} pages",
        pages.len()
    );
    assert!(
        failures.is_empty(),
        "{} disagreements, first: {:#?}",
        failures.len(),
        &failures[..failures.len().min(10)]
    );
    // Nearly all of them are native forms: ids and the paths users write.
    assert!(
        native * 10 >= compared * 9,
        "only {native} of {compared} were answered natively"
    );
}
