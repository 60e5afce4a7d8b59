//! The page tree: HTML text in, an owned, spec-compliant DOM out.
//!
//! html5ever does the parsing (the WHATWG algorithm, so every page, however
//! broken, gives the tree a browser would build). Its tree sink here stores
//! nodes in one `Vec` indexed by [`NodeId`], with owned `String`s, so the
//! finished [`Dom`] is plain `Send` data that can leave the parsing thread.
//! We do not use `markup5ever_rcdom`: its own README says it is not meant for
//! production, and reference-counted nodes would make the tree `!Send`.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};

use html5ever::buffer_queue::BufferQueue;
use html5ever::interface::tree_builder::{
    ElemName, ElementFlags, NodeOrText, QuirksMode, TreeSink,
};
use html5ever::tendril::StrTendril;
use html5ever::tokenizer::{TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts};
use html5ever::tree_builder::{TreeBuilder, TreeBuilderOpts};
use html5ever::{Attribute, LocalName, Namespace, QualName, TokenizerResult, ns};

use crate::page::budget::{Budget, PageLimits};

/// Deepest element nesting the parser builds. Deeper start tags are
/// ignored (their text still lands in the deepest element), as browsers cap
/// depth (Blink at 512): html5ever's tree builder scans its stack of open
/// elements for many tags, so unbounded depth makes parsing quadratic and a
/// page of 100,000 nested `<div>`s would take minutes.
pub const MAX_PARSE_DEPTH: u32 = 512;

/// Index of a node in its [`Dom`].
pub type NodeId = usize;

/// The document node's id (always the first node).
pub const DOCUMENT: NodeId = 0;

/// What a node is.
#[derive(Debug, Clone)]
pub enum NodeData {
    /// The document root.
    Document,
    /// `<!DOCTYPE ...>` (its content is of no use to us).
    Doctype,
    /// Character data, adjacent runs already merged.
    Text(String),
    /// A comment (kept so that tree positions stay faithful; ignored later).
    Comment,
    /// A processing instruction (ignored later).
    ProcessingInstruction,
    /// An element.
    Element(Element),
}

/// An element: name, namespace and attributes in source order.
#[derive(Debug, Clone)]
pub struct Element {
    /// Local name, lower case for HTML elements.
    pub name: LocalName,
    /// Namespace (HTML, SVG or MathML).
    pub ns: Namespace,
    /// Attributes in source order (names are local names; values as written).
    pub attrs: Vec<(LocalName, String)>,
    /// For `<template>`: the document fragment holding its contents.
    template_contents: Option<NodeId>,
    mathml_annotation_xml_integration_point: bool,
}

impl Element {
    /// The value of attribute `name`, if present.
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(n, _)| &**n == name)
            .map(|(_, v)| v.as_str())
    }

    /// True for an element in the HTML namespace.
    pub fn is_html(&self) -> bool {
        self.ns == ns!(html)
    }
}

/// One node with its links.
#[derive(Debug, Clone)]
pub struct Node {
    /// Parent, `None` for the document and for detached nodes.
    pub parent: Option<NodeId>,
    /// First child.
    pub first_child: Option<NodeId>,
    /// Last child.
    pub last_child: Option<NodeId>,
    /// Previous sibling.
    pub prev_sibling: Option<NodeId>,
    /// Next sibling.
    pub next_sibling: Option<NodeId>,
    /// What the node is.
    pub data: NodeData,
    /// Depth below the document when the node was inserted.
    depth: u32,
}

/// A parsed HTML document.
#[derive(Debug, Clone)]
pub struct Dom {
    nodes: Vec<Node>,
}

impl Dom {
    /// Parses `html` with html5ever (never fails: HTML parsing has no
    /// errors), nesting capped at [`MAX_PARSE_DEPTH`], size unbounded: for
    /// pages semclip made or tests hold. Pages from outside go through
    /// [`Dom::parse_within`].
    pub fn parse(html: &str) -> Dom {
        Dom::parse_within(html, &Budget::new(PageLimits::unlimited()))
    }

    /// Parses `html`, charging every node and its bytes to `budget`. Once
    /// the budget is exceeded the rest of the page is dropped token by
    /// token (the caller sees it in [`Budget::check`]): html5ever's
    /// reconstruction of active formatting elements can make one token
    /// create thousands of elements, so input size alone bounds nothing.
    pub fn parse_within(html: &str, budget: &Budget) -> Dom {
        let sink = Sink {
            dom: RefCell::new(Dom {
                nodes: vec![Node::new(NodeData::Document)],
            }),
            depth: Cell::new(0),
            budget,
        };
        let guard = DepthGuard {
            builder: TreeBuilder::new(sink, TreeBuilderOpts::default()),
        };
        let tokenizer = Tokenizer::new(guard, TokenizerOpts::default());
        let input = BufferQueue::default();
        input.push_back(StrTendril::from_slice(html));
        // Scripts are never run and the text is already decoded, so script
        // pauses and encoding hints just continue.
        while !matches!(tokenizer.feed(&input), TokenizerResult::Done) {}
        tokenizer.end();
        tokenizer.sink.builder.sink.finish()
    }

    /// The node `id`.
    ///
    /// Ids come only from this `Dom`, so indexing cannot go out of bounds.
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id]
    }

    /// The element data of `id`, if it is an element.
    pub fn element(&self, id: NodeId) -> Option<&Element> {
        match &self.nodes[id].data {
            NodeData::Element(e) => Some(e),
            _ => None,
        }
    }

    /// The children of `id` in document order.
    pub fn children(&self, id: NodeId) -> Children<'_> {
        Children {
            dom: self,
            next: self.nodes[id].first_child,
        }
    }

    /// The first child element of `id` with HTML name `name`.
    pub fn child_element(&self, id: NodeId, name: &str) -> Option<NodeId> {
        self.children(id).find(|&c| {
            self.element(c)
                .is_some_and(|e| e.is_html() && &*e.name == name)
        })
    }

    /// The first descendant element of `id` (pre-order) with HTML name `name`.
    pub fn find_descendant(&self, id: NodeId, name: &str) -> Option<NodeId> {
        let mut stack: Vec<NodeId> = self.children(id).collect();
        stack.reverse();
        while let Some(n) = stack.pop() {
            if self
                .element(n)
                .is_some_and(|e| e.is_html() && &*e.name == name)
            {
                return Some(n);
            }
            let before = stack.len();
            stack.extend(self.children(n));
            stack[before..].reverse();
        }
        None
    }

    /// Number of nodes (all kinds) in the arena.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True when the arena holds only the document node.
    pub fn is_empty(&self) -> bool {
        self.nodes.len() <= 1
    }

    /// The `<body>` element (or `<frameset>`), if the page has one.
    pub fn body(&self) -> Option<NodeId> {
        let html = self.child_element(DOCUMENT, "html")?;
        self.child_element(html, "body")
            .or_else(|| self.child_element(html, "frameset"))
    }

    /// The text of `id` and its descendants in document order (scripts,
    /// styles and templates left out), whitespace runs collapsed to one
    /// space and trimmed. Block element boundaries separate words; inline
    /// elements (`<b>`, `<a>`, `<span>` ...) do not.
    pub fn text_content(&self, id: NodeId) -> String {
        enum Step {
            Enter(NodeId),
            Boundary,
        }
        let mut out = String::new();
        let mut space = false;
        let mut stack = vec![Step::Enter(id)];
        while let Some(step) = stack.pop() {
            let n = match step {
                Step::Boundary => {
                    space = true;
                    continue;
                }
                Step::Enter(n) => n,
            };
            match &self.nodes[n].data {
                NodeData::Text(t) => {
                    let mut words = t.split_whitespace().peekable();
                    if words.peek().is_none() {
                        space |= !t.is_empty();
                        continue;
                    }
                    space |= t.starts_with(char::is_whitespace);
                    for word in words {
                        if space && !out.is_empty() {
                            out.push(' ');
                        }
                        out.push_str(word);
                        space = true;
                    }
                    space = t.ends_with(char::is_whitespace);
                }
                NodeData::Element(e)
                    if matches!(&*e.name, "script" | "style" | "noscript" | "template") => {}
                NodeData::Element(e) => {
                    let block = !is_inline(&e.name);
                    if block {
                        stack.push(Step::Boundary);
                    }
                    let before = stack.len();
                    stack.extend(self.children(n).map(Step::Enter));
                    stack[before..].reverse();
                    if block {
                        space = true;
                    }
                }
                NodeData::Document => {
                    let before = stack.len();
                    stack.extend(self.children(n).map(Step::Enter));
                    stack[before..].reverse();
                }
                _ => {}
            }
        }
        out
    }

    /// The absolute XPath of element `id` from `<body>`, every step indexed
    /// among same-name element siblings: `/body[1]/div[3]/ul[1]/li[2]`.
    ///
    /// This is the convention of the next-eval record data set (and of a
    /// browser's `document.evaluate` on the same page), so extraction
    /// results can be scored against it and replayed in a browser. Elements
    /// outside `<body>` get a path from `<html>` (`/html[1]/head[1]/...`);
    /// `None` for a node that is not an element.
    pub fn index_xpath(&self, id: NodeId) -> Option<String> {
        self.element(id)?;
        let mut steps: Vec<String> = Vec::new();
        let mut cur = id;
        loop {
            let e = self.element(cur)?;
            let position = 1 + std::iter::successors(self.nodes[cur].prev_sibling, |&s| {
                self.nodes[s].prev_sibling
            })
            .filter(|&s| self.element(s).is_some_and(|o| o.name == e.name))
            .count();
            steps.push(format!("{}[{position}]", e.name));
            if &*e.name == "body" || &*e.name == "html" {
                break;
            }
            match self.nodes[cur].parent {
                Some(p) if self.element(p).is_some() => cur = p,
                _ => break,
            }
        }
        steps.reverse();
        Some(steps.iter().fold(String::new(), |mut acc, s| {
            acc.push('/');
            acc.push_str(s);
            acc
        }))
    }

    /// The parent of `id`.
    pub fn parent(&self, id: NodeId) -> Option<NodeId> {
        self.nodes[id].parent
    }

    fn append(&mut self, parent: NodeId, child: NodeId) {
        self.detach(child);
        self.nodes[child].depth = self.nodes[parent].depth.saturating_add(1);
        let last = self.nodes[parent].last_child;
        self.nodes[child].parent = Some(parent);
        self.nodes[child].prev_sibling = last;
        match last {
            Some(l) => self.nodes[l].next_sibling = Some(child),
            None => self.nodes[parent].first_child = Some(child),
        }
        self.nodes[parent].last_child = Some(child);
    }

    fn insert_before(&mut self, sibling: NodeId, child: NodeId) {
        self.detach(child);
        self.nodes[child].depth = self.nodes[sibling].depth;
        let parent = self.nodes[sibling].parent;
        let prev = self.nodes[sibling].prev_sibling;
        self.nodes[child].parent = parent;
        self.nodes[child].next_sibling = Some(sibling);
        self.nodes[child].prev_sibling = prev;
        self.nodes[sibling].prev_sibling = Some(child);
        match prev {
            Some(p) => self.nodes[p].next_sibling = Some(child),
            None => {
                if let Some(p) = parent {
                    self.nodes[p].first_child = Some(child);
                }
            }
        }
    }

    fn detach(&mut self, id: NodeId) {
        let Node {
            parent,
            prev_sibling,
            next_sibling,
            ..
        } = self.nodes[id];
        match prev_sibling {
            Some(p) => self.nodes[p].next_sibling = next_sibling,
            None => {
                if let Some(par) = parent {
                    self.nodes[par].first_child = next_sibling;
                }
            }
        }
        match next_sibling {
            Some(n) => self.nodes[n].prev_sibling = prev_sibling,
            None => {
                if let Some(par) = parent {
                    self.nodes[par].last_child = prev_sibling;
                }
            }
        }
        let node = &mut self.nodes[id];
        node.parent = None;
        node.prev_sibling = None;
        node.next_sibling = None;
    }

    fn push(&mut self, data: NodeData) -> NodeId {
        self.nodes.push(Node::new(data));
        self.nodes.len() - 1
    }

    /// Appends text to `prev` if it is a text node, else creates a node.
    fn text_node(&mut self, prev: Option<NodeId>, text: &str) -> Option<NodeId> {
        if let Some(p) = prev
            && let NodeData::Text(t) = &mut self.nodes[p].data
        {
            t.push_str(text);
            return None;
        }
        Some(self.push(NodeData::Text(text.to_owned())))
    }
}

impl Node {
    fn new(data: NodeData) -> Node {
        Node {
            parent: None,
            first_child: None,
            last_child: None,
            prev_sibling: None,
            next_sibling: None,
            data,
            depth: 0,
        }
    }
}

/// True for phrasing elements that do not break a line of text.
pub fn is_inline(name: &str) -> bool {
    matches!(
        name,
        "a" | "abbr"
            | "b"
            | "bdi"
            | "bdo"
            | "cite"
            | "code"
            | "data"
            | "dfn"
            | "em"
            | "font"
            | "i"
            | "img"
            | "kbd"
            | "mark"
            | "q"
            | "s"
            | "samp"
            | "small"
            | "span"
            | "strike"
            | "strong"
            | "sub"
            | "sup"
            | "time"
            | "tt"
            | "u"
            | "var"
            | "wbr"
    )
}

/// Iterator over a node's children.
pub struct Children<'a> {
    dom: &'a Dom,
    next: Option<NodeId>,
}

impl Iterator for Children<'_> {
    type Item = NodeId;
    fn next(&mut self) -> Option<NodeId> {
        let cur = self.next?;
        self.next = self.dom.nodes[cur].next_sibling;
        Some(cur)
    }
}

/// The html5ever tree sink filling a [`Dom`].
struct Sink<'b> {
    dom: RefCell<Dom>,
    /// Depth of the most recent insertion point (approximately the tree
    /// builder's current node).
    depth: Cell<u32>,
    /// What the page may cost.
    budget: &'b Budget,
}

impl Sink<'_> {
    fn inserted(&self, dom: &Dom, node: NodeId) {
        let n = &dom.nodes[node];
        let element = matches!(n.data, NodeData::Element(_));
        self.depth.set(if element {
            n.depth
        } else {
            n.depth.saturating_sub(1)
        });
    }
}

/// Sits between tokenizer and tree builder and drops start tags that would
/// nest deeper than [`MAX_PARSE_DEPTH`], and every token once the page is
/// over its budget.
struct DepthGuard<'b> {
    builder: TreeBuilder<NodeId, Sink<'b>>,
}

impl TokenSink for DepthGuard<'_> {
    type Handle = NodeId;

    fn process_token(&self, token: Token, line_number: u64) -> TokenSinkResult<NodeId> {
        if !self.builder.sink.budget.tick() {
            return TokenSinkResult::Continue;
        }
        if let Token::TagToken(tag) = &token
            && tag.kind == TagKind::StartTag
            && !tag.self_closing
            && self.builder.sink.depth.get() >= MAX_PARSE_DEPTH
        {
            return TokenSinkResult::Continue;
        }
        self.builder.process_token(token, line_number)
    }

    fn end(&self) {
        self.builder.end();
    }

    fn adjusted_current_node_present_but_not_in_html_namespace(&self) -> bool {
        self.builder
            .adjusted_current_node_present_but_not_in_html_namespace()
    }
}

/// An element name handed back to html5ever (atoms are cheap to clone).
#[derive(Debug)]
struct Name(QualName);

impl ElemName for Name {
    fn ns(&self) -> &Namespace {
        &self.0.ns
    }
    fn local_name(&self) -> &LocalName {
        &self.0.local
    }
}

impl TreeSink for Sink<'_> {
    type Handle = NodeId;
    type Output = Dom;
    type ElemName<'a>
        = Name
    where
        Self: 'a;

    fn finish(self) -> Dom {
        self.dom.into_inner()
    }

    fn parse_error(&self, _msg: Cow<'static, str>) {}

    fn get_document(&self) -> NodeId {
        DOCUMENT
    }

    fn elem_name(&self, target: &NodeId) -> Name {
        match &self.dom.borrow().nodes[*target].data {
            NodeData::Element(e) => Name(QualName::new(None, e.ns.clone(), e.name.clone())),
            // html5ever only asks for names of elements it created.
            _ => Name(QualName::new(None, ns!(), LocalName::from(""))),
        }
    }

    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> NodeId {
        let bytes: usize = attrs.iter().map(|a| a.value.len()).sum();
        // Over budget the element is still made (html5ever needs a
        // handle), but no further token reaches the tree builder.
        self.budget.dom(1, bytes as u64);
        let mut dom = self.dom.borrow_mut();
        let template_contents = flags.template.then(|| dom.push(NodeData::Document));
        let attrs = attrs
            .into_iter()
            .map(|a| (a.name.local, String::from(&*a.value)))
            .collect();
        dom.push(NodeData::Element(Element {
            name: name.local,
            ns: name.ns,
            attrs,
            template_contents,
            mathml_annotation_xml_integration_point: flags.mathml_annotation_xml_integration_point,
        }))
    }

    fn create_comment(&self, _text: StrTendril) -> NodeId {
        self.budget.dom(1, 0);
        self.dom.borrow_mut().push(NodeData::Comment)
    }

    fn create_pi(&self, _target: StrTendril, _data: StrTendril) -> NodeId {
        self.dom.borrow_mut().push(NodeData::ProcessingInstruction)
    }

    fn append(&self, parent: &NodeId, child: NodeOrText<NodeId>) {
        let mut dom = self.dom.borrow_mut();
        let node = match child {
            NodeOrText::AppendNode(n) => n,
            NodeOrText::AppendText(t) => {
                self.budget.dom(1, t.len() as u64);
                let last = dom.nodes[*parent].last_child;
                match dom.text_node(last, &t) {
                    Some(n) => n,
                    None => return,
                }
            }
        };
        dom.append(*parent, node);
        self.inserted(&dom, node);
    }

    fn append_based_on_parent_node(
        &self,
        element: &NodeId,
        prev_element: &NodeId,
        child: NodeOrText<NodeId>,
    ) {
        let has_parent = self.dom.borrow().nodes[*element].parent.is_some();
        if has_parent {
            self.append_before_sibling(element, child);
        } else {
            self.append(prev_element, child);
        }
    }

    fn append_doctype_to_document(
        &self,
        _name: StrTendril,
        _public_id: StrTendril,
        _system_id: StrTendril,
    ) {
        let mut dom = self.dom.borrow_mut();
        let id = dom.push(NodeData::Doctype);
        dom.append(DOCUMENT, id);
    }

    fn get_template_contents(&self, target: &NodeId) -> NodeId {
        match &self.dom.borrow().nodes[*target].data {
            NodeData::Element(Element {
                template_contents: Some(c),
                ..
            }) => *c,
            // Only called for templates, which always have contents.
            _ => *target,
        }
    }

    fn same_node(&self, x: &NodeId, y: &NodeId) -> bool {
        x == y
    }

    fn set_quirks_mode(&self, _mode: QuirksMode) {}

    fn append_before_sibling(&self, sibling: &NodeId, new_node: NodeOrText<NodeId>) {
        let mut dom = self.dom.borrow_mut();
        let node = match new_node {
            NodeOrText::AppendNode(n) => n,
            NodeOrText::AppendText(t) => {
                self.budget.dom(1, t.len() as u64);
                let prev = dom.nodes[*sibling].prev_sibling;
                match dom.text_node(prev, &t) {
                    Some(n) => n,
                    None => return,
                }
            }
        };
        dom.insert_before(*sibling, node);
        self.inserted(&dom, node);
    }

    fn add_attrs_if_missing(&self, target: &NodeId, attrs: Vec<Attribute>) {
        let mut dom = self.dom.borrow_mut();
        if let NodeData::Element(e) = &mut dom.nodes[*target].data {
            for a in attrs {
                if !e.attrs.iter().any(|(n, _)| *n == a.name.local) {
                    e.attrs.push((a.name.local, String::from(&*a.value)));
                }
            }
        }
    }

    fn remove_from_parent(&self, target: &NodeId) {
        self.dom.borrow_mut().detach(*target);
    }

    fn reparent_children(&self, node: &NodeId, new_parent: &NodeId) {
        let mut dom = self.dom.borrow_mut();
        let mut next = dom.nodes[*node].first_child;
        while let Some(child) = next {
            next = dom.nodes[child].next_sibling;
            dom.append(*new_parent, child);
        }
    }

    fn is_mathml_annotation_xml_integration_point(&self, handle: &NodeId) -> bool {
        match &self.dom.borrow().nodes[*handle].data {
            NodeData::Element(e) => e.mathml_annotation_xml_integration_point,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dom: &Dom, id: NodeId) -> Vec<String> {
        dom.children(id)
            .filter_map(|c| dom.element(c).map(|e| e.name.to_string()))
            .collect()
    }

    #[test]
    fn builds_the_spec_tree_for_broken_markup() {
        // Unclosed cells, an implied tbody and a misnested <b>.
        let dom = Dom::parse("<table><tr><td>a<td><b>b<p>c</b>d</table>");
        let html = dom.child_element(DOCUMENT, "html");
        assert!(html.is_some());
        let table = dom.find_descendant(DOCUMENT, "table");
        let Some(table) = table else {
            panic!("no table")
        };
        assert_eq!(names(&dom, table), ["tbody"]);
        let tr = dom.find_descendant(table, "tr");
        assert!(tr.is_some_and(|tr| names(&dom, tr) == ["td", "td"]));
    }

    #[test]
    fn merges_adjacent_text_and_keeps_attributes() {
        let dom = Dom::parse("<p id=x class='a b'>one &amp; two</p>");
        let Some(p) = dom.find_descendant(DOCUMENT, "p") else {
            panic!("no p")
        };
        let e = dom.element(p);
        assert_eq!(e.and_then(|e| e.attr("class")), Some("a b"));
        let texts: Vec<_> = dom
            .children(p)
            .filter_map(|c| match &dom.node(c).data {
                NodeData::Text(t) => Some(t.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(texts, ["one & two"]);
    }

    #[test]
    fn index_xpath_counts_same_name_siblings_from_body() {
        let dom =
            Dom::parse("<body><div>a</div><p>x</p><div><ul><li>1</li><li>2</li></ul></div></body>");
        let li = dom
            .find_descendant(DOCUMENT, "ul")
            .and_then(|ul| dom.children(ul).nth(1));
        let li = li.unwrap_or_else(|| panic!("no li"));
        assert_eq!(
            dom.index_xpath(li).as_deref(),
            Some("/body[1]/div[2]/ul[1]/li[2]")
        );
        assert_eq!(dom.text_content(DOCUMENT), "a x 1 2");
    }

    #[test]
    fn text_content_joins_inline_text_without_inventing_spaces() {
        let dom = Dom::parse(
            "<div><p>Hel<b>lo</b> wor<i>ld</i><script>x()</script>!</p><p>Next</p>  </div>",
        );
        let div = dom
            .find_descendant(DOCUMENT, "div")
            .unwrap_or_else(|| panic!("no div"));
        assert_eq!(dom.text_content(div), "Hello world! Next");
    }

    #[test]
    fn dom_is_send() {
        fn assert_send<T: Send>() {}
        assert_send::<Dom>();
    }
}
