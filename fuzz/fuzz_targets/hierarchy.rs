//! Fuzz target: arbitrary bytes -> decode -> semantic hierarchy within the
//! default page budget -> XML, which must be well-formed and re-parse, with
//! every id selecting its element. A page over its budget must say so, and
//! the budget must hold: the fuzzer's own memory and time limits catch an
//! amplification that escapes it. Seeds: `fuzz/seeds/hierarchy/` (the
//! hostile shapes written by `cargo run --example hostile_corpus`); run
//! with `cargo fuzz run hierarchy fuzz/corpus/hierarchy fuzz/seeds/hierarchy`
//! (the first folder is the fuzzer's own, not kept in git).
#![no_main]

use libfuzzer_sys::fuzz_target;
use semclip::page::budget::PageLimits;
use semclip::hierarchy::{HNode, Hierarchy};
use semclip::hierarchy::write::{XmlOptions, to_xml};
use semclip::xpath::HierarchyDoc;

fn ids(nodes: &[HNode], out: &mut Vec<String>) {
    for n in nodes {
        out.push(n.xpath.clone());
        ids(&n.children, out);
    }
}

fuzz_target!(|data: &[u8]| {
    let text = semclip::page::source::decode(data, None, None).text;
    let h = match Hierarchy::from_html_within(&text, None, PageLimits::default()) {
        Ok(h) => h,
        Err(e) => {
            assert!(e.to_string().contains("limits.page."), "{e}");
            return;
        }
    };
    let xml = to_xml(&h, XmlOptions::default());
    let doc = match HierarchyDoc::parse(&xml) {
        Ok(d) => d,
        Err(e) => panic!("not well-formed: {e}\n{xml}"),
    };
    let mut all = Vec::new();
    ids(&h.children, &mut all);
    for id in all.iter().take(200) {
        match doc.select_ids(id) {
            Ok(found) => assert_eq!(found, [id.clone()], "{id}"),
            Err(e) => panic!("{id}: {e}"),
        }
    }
});
