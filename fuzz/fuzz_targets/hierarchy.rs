//! Fuzz target: arbitrary bytes -> decode -> semantic hierarchy -> XML, which
//! must be well-formed and re-parse, with every id selecting its element.
#![no_main]

use libfuzzer_sys::fuzz_target;
use semclip::hierarchy::{HNode, Hierarchy};
use semclip::output::{XmlOptions, to_xml};
use semclip::xpath::HierarchyDoc;

fn ids(nodes: &[HNode], out: &mut Vec<String>) {
    for n in nodes {
        out.push(n.xpath.clone());
        ids(&n.children, out);
    }
}

fuzz_target!(|data: &[u8]| {
    let text = semclip::source::decode(data, None, None).text;
    let h = Hierarchy::from_html(&text, None);
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
