//! Reading a hierarchy document back: XML text (as written by
//! [`crate::hierarchy::write::to_xml`]) in, a [`Hierarchy`] out, so saved hierarchies
//! can be diffed and served like freshly built ones.

use std::sync::Arc;

use libxml::parser::Parser;
use libxml::tree::Node;

use crate::hierarchy::{ATTRIBUTES, HNode, Hierarchy, Kind};

/// Why a document could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    /// Not well-formed XML.
    #[error("not a well-formed hierarchy document: {0}")]
    Xml(String),
    /// Well-formed, but not the vocabulary.
    #[error("not a semclip hierarchy document: {0}")]
    Vocabulary(String),
}

/// True when `text` looks like a hierarchy document rather than HTML.
pub fn looks_like_hierarchy(text: &str) -> bool {
    let t = text.trim_start_matches('\u{feff}').trim_start();
    let t = t.strip_prefix("<?xml").map_or(t, |rest| {
        rest.split_once("?>").map_or("", |(_, r)| r).trim_start()
    });
    t.starts_with("<page ") || t.starts_with("<page>") || t.starts_with("<page/>")
}

/// Parses a hierarchy document.
pub fn read(xml: &str) -> Result<Hierarchy, DocumentError> {
    let doc = Parser::default()
        .parse_string(xml)
        .map_err(|e| DocumentError::Xml(format!("{e:?}")))?;
    let root = doc
        .get_root_element()
        .ok_or_else(|| DocumentError::Vocabulary("no root element".into()))?;
    if root.get_name() != "page" {
        return Err(DocumentError::Vocabulary(format!(
            "the root is <{}>, not <page>",
            root.get_name()
        )));
    }
    let mut children = Vec::new();
    for c in root.get_child_elements() {
        children.push(node(&c)?);
    }
    Ok(Hierarchy {
        title: root.get_attribute("label"),
        url: root.get_attribute("url"),
        lang: root.get_attribute("lang"),
        children,
    })
}

fn node(e: &Node) -> Result<HNode, DocumentError> {
    let name = e.get_name();
    let k = Kind::from_name(&name)
        .ok_or_else(|| DocumentError::Vocabulary(format!("unknown element <{name}>")))?;
    let mut n = HNode::new(k);
    n.label = e.get_attribute("label");
    n.key = e.get_attribute("key");
    n.col = e.get_attribute("col").map(Arc::from);
    n.num = e.get_attribute("num");
    n.xpath = e.get_attribute("xpath").unwrap_or_default();
    for a in ATTRIBUTES {
        if let Some(v) = e.get_attribute(a) {
            n.attrs.push((a, v));
        }
    }
    let kids = e.get_child_elements();
    if kids.is_empty() {
        let t = e.get_content();
        if !t.is_empty() {
            n.text = Some(t);
        }
    }
    for c in kids {
        n.children.push(node(&c)?);
    }
    Ok(n)
}
