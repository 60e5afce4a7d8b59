//! Markup-only changes must not change the hierarchy.
//!
//! A page is parsed, then written back as HTML twice: once as it is (the
//! baseline) and once with a markup-only change applied while writing
//! (presentational tags added or removed, attributes changed and reordered,
//! wrapper `div`s, whitespace, comments, scripts and styles). Both go
//! through the same writer, so only the change differs.

use std::fmt::Write as _;

use semclip::hierarchy::Hierarchy;
use semclip::hierarchy::write::{XmlOptions, to_xml};
use semclip::page::dom::{DOCUMENT, Dom, NodeData, NodeId};

use crate::util::{corpus, corpus_pages, read_page};

/// One markup-only change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    None,
    AddInline,
    RemoveInline,
    Attributes,
    WrapperDivs,
    Whitespace,
    Comments,
    ScriptsAndStyles,
    /// A data edit, not markup: append " semclip-edit" to the text of the
    /// given element's first non-blank text node.
    EditText(NodeId),
    /// A data edit: leave the given element out.
    Drop(NodeId),
    /// A data edit: write the given element twice, the first copy with
    /// edited text.
    Duplicate(NodeId),
}

pub const CHANGES: [Change; 7] = [
    Change::AddInline,
    Change::RemoveInline,
    Change::Attributes,
    Change::WrapperDivs,
    Change::Whitespace,
    Change::Comments,
    Change::ScriptsAndStyles,
];

const VOID: &[&str] = &[
    "area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr", "image", "img",
    "input", "keygen", "link", "meta", "param", "source", "track", "wbr",
];
const RAW: &[&str] = &[
    "script",
    "style",
    "xmp",
    "iframe",
    "noembed",
    "noframes",
    "noscript",
    "plaintext",
    "title",
    "textarea",
];
const PRE: &[&str] = &["pre", "textarea", "listing", "xmp", "plaintext"];
const UNWRAP: &[&str] = &[
    "b", "i", "em", "strong", "span", "font", "u", "small", "big", "tt", "mark", "cite",
];
const WRAP: &[&str] = &[
    "p",
    "ul",
    "ol",
    "dl",
    "table",
    "pre",
    "blockquote",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "address",
    "div",
];
const FLOW: &[&str] = &[
    "body",
    "div",
    "section",
    "article",
    "main",
    "aside",
    "nav",
    "header",
    "footer",
    "td",
    "th",
    "li",
    "dd",
    "blockquote",
    "form",
    "center",
    "figure",
];
const NO_TEXT_WRAP: &[&str] = &[
    "table", "tbody", "thead", "tfoot", "tr", "colgroup", "select", "option", "optgroup",
    "datalist", "html", "head", "frameset", "ruby",
];

/// Writes `dom` as HTML with `change` applied.
pub fn write_html(dom: &Dom, change: Change) -> String {
    let mut w = Writer {
        dom,
        change,
        out: String::new(),
        counter: 0,
    };
    w.out.push_str("<!DOCTYPE html>");
    for c in dom.children(DOCUMENT) {
        w.node(c, false, None);
    }
    w.out
}

struct Writer<'a> {
    dom: &'a Dom,
    change: Change,
    out: String,
    counter: usize,
}

impl Writer<'_> {
    fn node(&mut self, id: NodeId, in_pre: bool, parent: Option<&str>) {
        match &self.dom.node(id).data {
            NodeData::Text(t) => self.text(t, in_pre, parent),
            NodeData::Comment => self.out.push_str("<!---->"),
            NodeData::Element(e) => {
                if self.change == Change::Drop(id) {
                    return;
                }
                if self.change == Change::Duplicate(id) {
                    self.change = Change::EditText(id);
                    self.node(id, in_pre, parent);
                    self.change = Change::None;
                    self.node(id, in_pre, parent);
                    self.change = Change::Duplicate(id);
                    return;
                }
                let name = e.name.to_string();
                let html = e.is_html();
                let hidden = e.attr("hidden").is_some()
                    || e.attr("aria-hidden").is_some()
                    || e.attr("role").is_some();
                if self.change == Change::RemoveInline
                    && html
                    && UNWRAP.contains(&name.as_str())
                    && !hidden
                    && !self.holds_blocks(id)
                {
                    self.children(id, in_pre, parent);
                    return;
                }
                let wrap = self.change == Change::WrapperDivs
                    && html
                    && WRAP.contains(&name.as_str())
                    && e.attr("hidden").is_none()
                    && parent.is_some_and(|p| FLOW.contains(&p));
                if wrap {
                    self.out.push_str("<div class=\"semclip-wrap\">");
                }
                self.out.push('<');
                self.out.push_str(&name);
                let mut attrs: Vec<(String, String)> = e
                    .attrs
                    .iter()
                    .map(|(n, v)| (n.to_string(), v.clone()))
                    .collect();
                if self.change == Change::Attributes && html {
                    attrs.reverse();
                    for (n, v) in &mut attrs {
                        if n == "class" {
                            *v = "semclip-test changed".into();
                        } else if n == "style" {
                            *v = "color: #123456; margin: 1px".into();
                        }
                    }
                    attrs.push(("data-semclip".into(), "x".into()));
                    if !attrs.iter().any(|(n, _)| n == "class") {
                        attrs.push(("class".into(), "semclip-added".into()));
                    }
                }
                for (n, v) in &attrs {
                    let v = v.replace('&', "&amp;").replace('"', "&quot;");
                    let _ = write!(self.out, " {n}=\"{v}\"");
                }
                self.out.push('>');
                if html && VOID.contains(&name.as_str()) {
                    if wrap {
                        self.out.push_str("</div>");
                    }
                    return;
                }
                let raw = html && RAW.contains(&name.as_str());
                let pre = in_pre || (html && PRE.contains(&name.as_str()));
                if html && PRE.contains(&name.as_str()) {
                    // The parser drops one newline right after these start tags.
                    self.out.push('\n');
                }
                if self.change == Change::Comments && !raw {
                    self.out.push_str("<!-- semclip test comment -->");
                }
                if self.change == Change::ScriptsAndStyles && html {
                    match name.as_str() {
                        "head" => self.out.push_str("<style>p { color: red }</style><script>var a = '<p>x</p>';</script>"),
                        "body" => self.out.push_str(
                            "<script>document.write('<table><tr><td>1</td></tr></table>');</script><style>td{}</style>",
                        ),
                        "div" => self.out.push_str("<script>if (1 < 2) { x = \"</p>\"; }</script>"),
                        _ => {}
                    }
                }

                if raw {
                    for c in self.dom.children(id) {
                        if let NodeData::Text(t) = &self.dom.node(c).data {
                            if name == "title" || name == "textarea" {
                                self.out
                                    .push_str(&t.replace('&', "&amp;").replace('<', "&lt;"));
                            } else {
                                self.out.push_str(t);
                            }
                        }
                    }
                } else {
                    let p = if html {
                        Some(name.as_str())
                    } else {
                        Some("svg")
                    };
                    self.children(id, pre, p);
                }
                let _ = write!(self.out, "</{name}>");
                if wrap {
                    self.out.push_str("</div>");
                }
            }
            _ => {}
        }
    }

    /// True when an element below `id` is not inline: unwrapping an inline
    /// element around blocks changes how the parser nests them (a heading
    /// inside `<span>` inside a heading stays nested; without the span it
    /// closes the outer heading), so that is not a markup-only change.
    fn holds_blocks(&self, id: NodeId) -> bool {
        let mut stack: Vec<NodeId> = self.dom.children(id).collect();
        while let Some(n) = stack.pop() {
            if let Some(e) = self.dom.element(n) {
                if !matches!(
                    semclip::hierarchy::class_of(&e.name),
                    semclip::hierarchy::TagClass::Inline | semclip::hierarchy::TagClass::Break
                ) {
                    return true;
                }
                stack.extend(self.dom.children(n));
            }
        }
        false
    }

    fn children(&mut self, id: NodeId, in_pre: bool, parent: Option<&str>) {
        let mut edit = self.change == Change::EditText(id);
        for c in self.dom.children(id) {
            self.node(c, in_pre, parent);
            if edit
                && let NodeData::Text(t) = &self.dom.node(c).data
                && !t.trim().is_empty()
            {
                self.out.push_str(" semclip-edit");
                edit = false;
            }
        }
    }

    fn text(&mut self, t: &str, in_pre: bool, parent: Option<&str>) {
        let escaped = t
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('\u{A0}', "&nbsp;");
        let blank = t.chars().all(|c| c.is_ascii_whitespace());
        let wrappable =
            !blank && !in_pre && parent.is_some_and(|p| p != "svg" && !NO_TEXT_WRAP.contains(&p));
        match self.change {
            Change::AddInline if wrappable => {
                self.counter += 1;
                let tag = ["span", "b", "font", "em", "i"][self.counter % 5];
                let _ = write!(self.out, "<{tag} class=\"semclip\">{escaped}</{tag}>");
            }
            Change::Whitespace if !in_pre => {
                let mut last_ws = false;
                for c in escaped.chars() {
                    if c.is_ascii_whitespace() {
                        if !last_ws {
                            self.out.push_str("\n  \t ");
                        }
                        last_ws = true;
                    } else {
                        self.out.push(c);
                        last_ws = false;
                    }
                }
            }
            Change::Comments if wrappable => match escaped.split_once(' ') {
                Some((a, b)) => {
                    let _ = write!(self.out, "{a}<!-- c --> {b}");
                }
                None => self.out.push_str(&escaped),
            },
            _ => self.out.push_str(&escaped),
        }
    }
}

fn hierarchy_xml(html: &str) -> String {
    to_xml(&Hierarchy::from_html(html, None), XmlOptions::default())
}

/// First differing line of two documents, for messages.
fn first_difference(a: &str, b: &str) -> String {
    for (i, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        if x != y {
            return format!("line {}:\n- {x}\n+ {y}", i + 1);
        }
    }
    format!(
        "lengths differ: {} vs {} lines",
        a.lines().count(),
        b.lines().count()
    )
}

#[test]
fn hand_made_page_is_markup_invariant() {
    let html = r#"<html lang="en"><head><title>Quotes</title><meta name="keywords" content="a, b"></head><body>
        <h1>Market</h1><p>Prices <b>today</b> at 12:00.</p>
        <div>Shares:</div><table><caption>Shares</caption><tr><th>Ticker<th>Last<th>Change
        <tr><td>GAZP<td>251.30<td>-1,2%<tr><td>SBER<td>300.10<td>+0.5%</table>
        <h2>Notes</h2><ul><li>One <i>item</i><li>Two<ul><li>nested</li></ul></ul>
        <dl><dt>Term<dd>Definition</dl><address>Contact <a href="mailto:x@y">us</a></address>
        <pre>  line 1
   line 2</pre></body></html>"#;
    let dom = Dom::parse(html);
    let base = hierarchy_xml(&write_html(&dom, Change::None));
    assert!(base.contains("<cell col=\"Last\" num=\"251.3\""), "{base}");
    for change in CHANGES {
        let changed = hierarchy_xml(&write_html(&dom, change));
        assert!(
            base == changed,
            "{change:?}: {}",
            first_difference(&base, &changed)
        );
    }
}

#[test]
fn corpus_pages_are_markup_invariant() {
    let Some(corpus) = corpus("corpus_pages_are_markup_invariant") else {
        return;
    };
    let pages = corpus_pages(&corpus);
    assert!(
        pages.len() > 300,
        "expected several hundred pages, found {}",
        pages.len()
    );
    let mut failures = Vec::new();
    for path in &pages {
        let dom = Dom::parse(&read_page(path));
        let base = hierarchy_xml(&write_html(&dom, Change::None));
        for change in CHANGES {
            let changed = hierarchy_xml(&write_html(&dom, change));
            if base != changed {
                failures.push(format!(
                    "{} {change:?}: {}",
                    path.display(),
                    first_difference(&base, &changed)
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
