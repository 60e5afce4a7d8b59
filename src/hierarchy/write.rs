//! Serialisation: a [`Hierarchy`] in, the XML document (the public
//! contract, see docs/hierarchy.md, "The vocabulary (version 2)"), its JSON form, or a human-readable
//! outline out.
//!
//! All three are deterministic: the same hierarchy always gives the same
//! bytes. The XML is always well-formed: every string in a hierarchy has
//! been stripped of characters XML forbids when it was built, and here
//! markup characters are escaped (and tabs/newlines in attributes written
//! as character references, so attribute-value normalisation cannot change
//! them when the document is read back).

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use crate::VOCABULARY_VERSION;
use crate::hierarchy::text::xml_allowed;
use crate::hierarchy::{HNode, Hierarchy};

/// Options for [`to_xml`].
#[derive(Debug, Clone, Copy)]
pub struct XmlOptions {
    /// Write `<?xml version="1.0" encoding="UTF-8"?>` first.
    pub declaration: bool,
    /// Indent nested elements by two spaces per level.
    pub indent: bool,
    /// Write the page's `url` attribute (left out of canonical forms).
    pub source_url: bool,
}

impl Default for XmlOptions {
    fn default() -> Self {
        XmlOptions {
            declaration: true,
            indent: true,
            source_url: true,
        }
    }
}

/// The hierarchy as an XML document.
pub fn to_xml(h: &Hierarchy, opts: XmlOptions) -> String {
    let mut out = String::with_capacity(256 + h.size() * 96);
    if opts.declaration {
        out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    }
    out.push_str("<page");
    if let Some(t) = &h.title {
        attr(&mut out, "label", t);
    }
    if let Some(u) = h.url.as_ref().filter(|_| opts.source_url) {
        attr(&mut out, "url", u);
    }
    if let Some(l) = &h.lang {
        attr(&mut out, "lang", l);
    }
    attr(&mut out, "version", VOCABULARY_VERSION);
    attr(&mut out, "xpath", "/page");
    if h.children.is_empty() {
        out.push_str("/>\n");
        return out;
    }
    out.push('>');
    for c in &h.children {
        node_xml(&mut out, c, 1, opts.indent);
    }
    if opts.indent {
        out.push('\n');
    }
    out.push_str("</page>\n");
    out
}

/// One node (and its subtree) as an XML fragment with no declaration:
/// what a portlet embeds.
pub fn node_to_xml(n: &HNode, indent: bool) -> String {
    let mut out = String::new();
    node_xml(&mut out, n, 0, indent);
    if out.starts_with('\n') {
        out.remove(0);
    }
    out.push('\n');
    out
}

fn node_xml(out: &mut String, n: &HNode, depth: usize, indent: bool) {
    if indent {
        out.push('\n');
        for _ in 0..depth {
            out.push_str("  ");
        }
    }
    let name = n.kind.name();
    out.push('<');
    out.push_str(name);
    if let Some(l) = &n.label {
        attr(out, "label", l);
    }
    if let Some(k) = &n.key {
        attr(out, "key", k);
    }
    if let Some(c) = &n.col {
        attr(out, "col", c);
    }
    for (k, v) in &n.attrs {
        attr(out, k, v);
    }
    if let Some(num) = &n.num {
        attr(out, "num", num);
    }
    attr(out, "xpath", &n.xpath);
    match (&n.text, n.children.is_empty()) {
        (Some(t), true) => {
            out.push('>');
            text(out, t);
        }
        (_, true) => {
            out.push_str("/>");
            return;
        }
        (_, false) => {
            out.push('>');
            for c in &n.children {
                node_xml(out, c, depth + 1, indent);
            }
            if indent {
                out.push('\n');
                for _ in 0..depth {
                    out.push_str("  ");
                }
            }
        }
    }
    out.push_str("</");
    out.push_str(name);
    out.push('>');
}

pub(crate) fn attr(out: &mut String, name: &str, value: &str) {
    out.push(' ');
    out.push_str(name);
    out.push_str("=\"");
    for c in value.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\t' => out.push_str("&#9;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            c if xml_allowed(c) => out.push(c),
            _ => {}
        }
    }
    out.push('"');
}

fn text(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\r' => out.push_str("&#13;"),
            c if xml_allowed(c) => out.push(c),
            _ => {}
        }
    }
}

/// The hierarchy as JSON (see docs/hierarchy.md, "JSON form"): every node is an object
/// with `type`, `xpath`, the identifying attributes present, `text` and
/// `num` for leaves, and `children` for the rest.
pub fn to_json(h: &Hierarchy) -> Value {
    let mut page = Map::new();
    page.insert("type".into(), json!("page"));
    if let Some(t) = &h.title {
        page.insert("label".into(), json!(t));
    }
    if let Some(u) = &h.url {
        page.insert("url".into(), json!(u));
    }
    if let Some(l) = &h.lang {
        page.insert("lang".into(), json!(l));
    }
    page.insert("xpath".into(), json!("/page"));
    page.insert(
        "children".into(),
        Value::Array(h.children.iter().map(node_json).collect()),
    );
    json!({ "version": VOCABULARY_VERSION, "page": Value::Object(page) })
}

/// One node (and its subtree) as JSON.
pub fn node_json(n: &HNode) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), json!(n.kind.name()));
    if let Some(l) = &n.label {
        m.insert("label".into(), json!(l));
    }
    if let Some(k) = &n.key {
        m.insert("key".into(), json!(k));
    }
    if let Some(c) = &n.col {
        m.insert("col".into(), json!(&**c));
    }
    for (k, v) in &n.attrs {
        m.insert((*k).into(), json!(v));
    }
    if let Some(t) = &n.text {
        m.insert("text".into(), json!(t));
    }
    if let Some(num) = &n.num {
        m.insert("num".into(), json!(num));
    }
    m.insert("xpath".into(), json!(n.xpath));
    if !n.children.is_empty() {
        m.insert(
            "children".into(),
            Value::Array(n.children.iter().map(node_json).collect()),
        );
    }
    Value::Object(m)
}

/// The hierarchy as an indented outline for people: one line per node,
/// `kind label: text`, two spaces per level; a table adds its key
/// column's header as `(keyed by K)`.
pub fn to_outline(h: &Hierarchy) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", h.title.as_deref().unwrap_or("(untitled page)"));
    for c in &h.children {
        outline_node(&mut out, c, 1);
    }
    out
}

fn outline_node(out: &mut String, n: &HNode, depth: usize) {
    for _ in 0..depth {
        out.push_str("  ");
    }
    out.push_str(n.kind.name());
    let ident = n.label.as_deref().or(n.key.as_deref());
    if let Some(c) = &n.col {
        let _ = write!(out, " [{c}]");
    }
    if let Some(i) = ident {
        let _ = write!(out, " {i}");
    }
    if let Some(k) = n.attr("keycol") {
        // The key column's header (a table's corner) is data too.
        let _ = write!(out, " (keyed by {k})");
    }
    if let Some(t) = &n.text {
        let sep = if ident.is_some() || n.col.is_some() {
            ":"
        } else {
            ""
        };
        let _ = write!(out, "{sep} {}", t.replace('\n', "\n    "));
    }
    out.push('\n');
    for c in &n.children {
        outline_node(out, c, depth + 1);
    }
}

/// The canonical content hash of a hierarchy (BLAKE3 over its compact
/// form without the source URL, as 64 hex digits; no XML is written). Two
/// pages with the same data have the same hash whatever their markup, so
/// this decides whether anything changed at all before any diff is made.
pub use crate::hierarchy::packed::content_hash;

/// The canonical hash of one subtree (what a clip selects).
pub fn node_hash(n: &HNode) -> String {
    blake3::hash(node_to_xml(n, false).as_bytes())
        .to_hex()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_keeps_attribute_whitespace() {
        let mut out = String::new();
        attr(&mut out, "label", "a<b & \"c\"\n\u{1}");
        assert_eq!(out, " label=\"a&lt;b &amp; &quot;c&quot;&#10;\"");
        let mut t = String::new();
        text(&mut t, "x < y & z\u{FFFF}");
        assert_eq!(t, "x &lt; y &amp; z");
    }
}
