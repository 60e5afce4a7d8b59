//! The semantic hierarchy: a parsed page in, a tree of its data out.
//!
//! This is docs/algorithms.md, "Semantic hierarchy". Type 2 tags vanish and
//! leave their text; type 1 tags build the tree: the TITLE is the root,
//! headings own what follows them until the next heading of the same or
//! higher rank, text that precedes nested structure labels it, lists and
//! definition lists nest, and tables become pseudo-tables read as
//! `caption -> row key -> column header -> value` (see [`table`]).
//!
//! Decisions where the paper is silent, so that users can rely on them:
//! - *Boundaries.* Type 2 block elements (`div`, `form`, `center`, ...) do
//!   not make nodes but do end a run of text: `<div>a</div><div>b</div>` is
//!   two texts. Inline type 2 elements add no space (`<b>Hel</b>lo` is
//!   `Hello`), as a browser renders them; `<br>` reads as a space. An image
//!   reads as its `alt` text only where a run holds nothing else (a picture
//!   names itself; beside text, "Flag of France" is not part of "France").
//! - *Lead-in text.* A run of text of at most [`LEAD_IN_MAX_WORDS`] words
//!   directly followed by a list, table, definition list or quote labels
//!   it (rule 4). Inside a list item, definition or cell the item's own
//!   leading text labels its nested structure whatever its length.
//!   A paragraph (`<p>`) is a sibling of a following table, not its label
//!   (P and TABLE share a precedence rank: docs/algorithms.md, "Precedence").
//! - *Sectioning elements* (`section`, `article`, `main`, `nav`, `aside`,
//!   `header`, `footer`) become a section labelled by their own first
//!   heading; without one they are boundaries only.
//! - *Hidden content* (`hidden`, `aria-hidden="true"`) is not data.
//! - *Structured data* (JSON-LD, microdata, RDFa Lite, OpenGraph) gives one
//!   `data` element after `keywords`, holding the page's main product with
//!   one normalised price (see [`data`]). [`build_parts`] leaves it out, as
//!   it leaves out the keywords: it is not in the page's data regions.
//! - *Depth.* Element nesting deeper than [`MAX_DEPTH`] is read as plain text
//!   so that hostile pages cannot exhaust the stack.

mod classes;
pub mod data;
pub mod key;
pub mod number;
pub mod packed;
pub mod read;
pub mod table;
pub mod text;
pub mod write;

use std::collections::HashSet;
use std::sync::Arc;

use html5ever::{LocalName, local_name};

pub use classes::{TAG_CLASSES, TagClass, class_of, role_class};

use crate::hierarchy::number::{DecimalStyle, decimal_style_for_lang, parse_number};
use crate::page::budget::{Budget, Exceeded, PageLimits};
use crate::page::dom::{DOCUMENT, Dom, Element, NodeData, NodeId};
use text::{InlineText, normalize, normalize_pre, word_count};

/// Longest run of text (in words) that labels the structure after it.
pub const LEAD_IN_MAX_WORDS: usize = 20;

/// Element nesting depth beyond which content is read as plain text.
pub const MAX_DEPTH: usize = 160;

/// The names of the further attributes ([`HNode::attrs`]) a hierarchy
/// node may carry, in the order they are read back from XML.
pub const ATTRIBUTES: [&str; 12] = [
    "level", "href", "keycol", "ordinal", "role", "byline", "date", "clip", "type", "currency",
    "low", "high",
];

/// Deepest hierarchy node below the root. Deeper nodes are lifted to this
/// depth in document order (their text kept), so that every document stays
/// within the nesting XML tools accept (libxml2 refuses more than 256).
pub const MAX_TREE_DEPTH: usize = 100;

/// The kind of a hierarchy node: the element name in the XML document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `<meta name="keywords">` content.
    Keywords,
    /// An `<address>` with its link.
    Address,
    /// A heading (or a sectioning element with one) and what it owns.
    Section,
    /// A paragraph or a run of text.
    Text,
    /// Preformatted text.
    Pre,
    /// A block quotation.
    Quote,
    /// A list.
    List,
    /// A list item.
    Item,
    /// A definition list.
    Terms,
    /// A defined term.
    Term,
    /// A definition.
    Def,
    /// A data table.
    Table,
    /// A table row (`key` is its row key).
    Row,
    /// A table cell (`col` is its column header).
    Cell,
    /// The structured data a page publishes for machines (see [`data`]).
    Data,
    /// A price (`num`, `currency`; `low` and `high` for a range).
    Price,
    /// A product's availability (a schema.org term such as `InStock`).
    Availability,
}

impl Kind {
    /// Every kind, in declaration order (`ALL[k as usize] == k`).
    pub const ALL: [Kind; 17] = [
        Kind::Keywords,
        Kind::Address,
        Kind::Section,
        Kind::Text,
        Kind::Pre,
        Kind::Quote,
        Kind::List,
        Kind::Item,
        Kind::Terms,
        Kind::Term,
        Kind::Def,
        Kind::Table,
        Kind::Row,
        Kind::Cell,
        Kind::Data,
        Kind::Price,
        Kind::Availability,
    ];

    /// The kind whose `k as u8` is `index`.
    pub fn from_index(index: u8) -> Option<Kind> {
        Kind::ALL.get(usize::from(index)).copied()
    }

    /// The kind whose element name is `name`.
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The element name used in the XML document.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Keywords => "keywords",
            Kind::Address => "address",
            Kind::Section => "section",
            Kind::Text => "text",
            Kind::Pre => "pre",
            Kind::Quote => "quote",
            Kind::List => "list",
            Kind::Item => "item",
            Kind::Terms => "terms",
            Kind::Term => "term",
            Kind::Def => "def",
            Kind::Table => "table",
            Kind::Row => "row",
            Kind::Cell => "cell",
            Kind::Data => "data",
            Kind::Price => "price",
            Kind::Availability => "availability",
        }
    }

    /// Kinds whose leaf text may be read as a number (`num`).
    fn numeric(self) -> bool {
        matches!(
            self,
            Kind::Text | Kind::Item | Kind::Cell | Kind::Def | Kind::Term
        )
    }
}

/// One node of the hierarchy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HNode {
    /// What the node is.
    pub kind: Kind,
    /// The node's label: a section's heading, a table's caption, or the
    /// leading text of an item/cell/text that owns nested structure.
    pub label: Option<String>,
    /// A row's key (first-column text, made unique).
    pub key: Option<String>,
    /// A cell's column header, shared by the column's cells (one string,
    /// not one copy per row).
    pub col: Option<Arc<str>>,
    /// Leaf text (present exactly when the node holds no children).
    pub text: Option<String>,
    /// The leaf text read as a number in the page's locale.
    pub num: Option<String>,
    /// Further attributes, in output order (`level`, `href`, `keycol`, `ordinal`).
    pub attrs: Vec<(&'static str, String)>,
    /// Child nodes.
    pub children: Vec<HNode>,
    /// XPath 1.0 expression selecting exactly this node in the document
    /// (filled by [`assign_ids`]).
    pub xpath: String,
}

impl HNode {
    /// A node of `kind` with nothing set.
    pub fn new(kind: Kind) -> HNode {
        HNode {
            kind,
            label: None,
            key: None,
            col: None,
            text: None,
            num: None,
            attrs: Vec::new(),
            children: Vec::new(),
            xpath: String::new(),
        }
    }

    /// The attribute that tells this node apart from its siblings
    /// (`key` for rows, `col` for cells, `label` otherwise) and its value.
    pub fn ident(&self) -> Option<(&'static str, &str)> {
        match self.kind {
            Kind::Row => self.key.as_deref().map(|k| ("key", k)),
            Kind::Cell => self.col.as_deref().map(|c| ("col", c)),
            _ => self.label.as_deref().map(|l| ("label", l)),
        }
    }

    /// The node's own string: its label, key or leaf text.
    pub fn own_text(&self) -> Option<&str> {
        self.label.as_deref().or(self.text.as_deref())
    }

    /// The value of extra attribute `name`.
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    fn is_text_leaf(&self) -> bool {
        self.kind == Kind::Text && self.children.is_empty() && self.text.is_some()
    }

    /// Turns a leaf into a labelled node that owns `children`.
    fn own(&mut self, children: impl IntoIterator<Item = HNode>) {
        if let Some(t) = self.text.take() {
            self.label = Some(t);
            self.num = None;
        }
        self.children.extend(children);
    }

    /// Number of nodes in this subtree, itself included.
    pub fn size(&self) -> usize {
        1 + self.children.iter().map(HNode::size).sum::<usize>()
    }
}

/// The semantic hierarchy of one page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hierarchy {
    /// The page's title (the root's label).
    pub title: Option<String>,
    /// Where the page came from.
    pub url: Option<String>,
    /// The page's language (`<html lang>` or `Content-Language`).
    pub lang: Option<String>,
    /// The root's children.
    pub children: Vec<HNode>,
}

impl Hierarchy {
    /// Builds the hierarchy of an HTML page (decoded text), its size
    /// unbounded: for pages semclip made or tests hold.
    pub fn from_html(html: &str, url: Option<&str>) -> Hierarchy {
        build(&Dom::parse(html), url)
    }

    /// Builds the hierarchy of a page from outside within `limits`, or
    /// says which bound the page went over (see [`crate::page::budget`]).
    pub fn from_html_within(
        html: &str,
        url: Option<&str>,
        limits: PageLimits,
    ) -> Result<Hierarchy, Exceeded> {
        let budget = Budget::new(limits);
        let dom = Dom::parse_within(html, &budget);
        budget.check()?;
        let h = build_within(&dom, url, &budget);
        budget.check()?;
        Ok(h)
    }

    /// Whether the nodes hold their ids (`xpath`): false for a hierarchy
    /// built or read back without them ([`build_within_without_ids`],
    /// [`packed::unpack_without_ids`]) until [`assign_ids`] fills them.
    pub fn has_ids(&self) -> bool {
        self.children.first().is_none_or(|c| !c.xpath.is_empty())
    }

    /// Total number of nodes, the root included.
    pub fn size(&self) -> usize {
        1 + self.children.iter().map(HNode::size).sum::<usize>()
    }
}

/// Builds the hierarchy of a parsed page, its size unbounded.
pub fn build(dom: &Dom, url: Option<&str>) -> Hierarchy {
    build_within(dom, url, &Budget::new(PageLimits::unlimited()))
}

/// Builds the hierarchy of a parsed page, charging its cells, nodes, text
/// and ids to `budget`. Once the budget is exceeded the result is cut
/// short and is not the page: the caller must check the budget and fail.
pub fn build_within(dom: &Dom, url: Option<&str>, budget: &Budget) -> Hierarchy {
    build_page(dom, url, None, budget, Ids::Assign)
}

/// [`build_within`] leaving every node's `xpath` empty: the ids' bytes
/// are charged to `budget` all the same, but no id is written. For a
/// check, which derives the few ids it reports ([`IdsAt`]) and stores
/// the hierarchy without them; [`assign_ids`] fills them when wanted.
pub fn build_within_without_ids(dom: &Dom, url: Option<&str>, budget: &Budget) -> Hierarchy {
    build_page(dom, url, None, budget, Ids::Charge)
}

/// Whether a build writes the ids or only charges their bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ids {
    Assign,
    Charge,
}

/// The hierarchy of the whole page (`roots` `None`) or of the parts
/// under `roots` (see [`build_parts`]).
fn build_page(
    dom: &Dom,
    url: Option<&str>,
    roots: Option<&[NodeId]>,
    budget: &Budget,
    ids: Ids,
) -> Hierarchy {
    let head = Head::read(dom);
    let style = decimal_style_for_lang(head.lang.as_deref());
    let mut b = Builder::new(dom, style, budget);
    let mut children = Vec::new();
    match roots {
        Some(roots) => {
            for &root in roots {
                let mut c = Collector::default();
                b.element(root, &mut c);
                children.extend(b.assemble(c.finish()));
            }
        }
        None => {
            let body = dom.child_element(DOCUMENT, "html").and_then(|html| {
                dom.child_element(html, "body")
                    .or(dom.child_element(html, "frameset"))
            });
            if let Some(k) = head.keywords {
                let mut n = HNode::new(Kind::Keywords);
                n.text = Some(k);
                children.push(n);
            }
            if let Some(d) = data::build(dom, head.title.as_deref(), style, budget) {
                children.push(d);
            }
            if let Some(body) = body {
                let mut c = Collector::default();
                b.collect(body, &mut c);
                children.extend(b.assemble(c.finish()));
            }
        }
    }
    finish(head.title, head.lang, url, children, budget, ids)
}

/// Caps the depth, charges the nodes and assigns (or charges) the ids.
fn finish(
    title: Option<String>,
    lang: Option<String>,
    url: Option<&str>,
    mut children: Vec<HNode>,
    budget: &Budget,
    ids: Ids,
) -> Hierarchy {
    cap_depth(&mut children, 1);
    let mut h = Hierarchy {
        title,
        url: url.map(str::to_owned),
        lang,
        children,
    };
    let (nodes, bytes) = weigh(&h.children);
    if budget.settle_nodes(nodes, bytes) {
        match ids {
            Ids::Assign => assign_ids_within(&mut h, budget),
            Ids::Charge => charge_ids_within(&h, budget),
        }
    }
    budget.cpu_now();
    h
}

/// Nodes and text bytes (labels, keys, column headers, texts, numbers and
/// attributes) of `nodes` and their subtrees.
pub(crate) fn weigh(nodes: &[HNode]) -> (u64, u64) {
    // Recursive: a hierarchy is at most `MAX_DEPTH` deep (deeper markup is
    // read as text), and most calls weigh one cell's leaf.
    let mut count = 0u64;
    let mut bytes = 0u64;
    for n in nodes {
        let own = [&n.label, &n.key, &n.text, &n.num]
            .iter()
            .map(|s| s.as_ref().map_or(0, String::len))
            .sum::<usize>()
            + n.col.as_ref().map_or(0, |c| c.len())
            + n.attrs.iter().map(|(_, v)| v.len()).sum::<usize>();
        let (below, below_bytes) = weigh(&n.children);
        count += 1 + below;
        bytes += own as u64 + below_bytes;
    }
    (count, bytes)
}

/// The hierarchy of only the parts of a page under `roots` (DOM
/// elements, in document order, none inside another): what
/// `monitor: data` compares when a template says where the data is. The
/// page's title and language are kept; the keywords are not (they are not
/// in the data regions).
pub fn build_parts(dom: &Dom, url: Option<&str>, roots: &[NodeId]) -> Hierarchy {
    build_parts_within(dom, url, roots, &Budget::new(PageLimits::unlimited()))
}

/// [`build_parts`] charging `budget` (see [`build_within`]).
pub fn build_parts_within(
    dom: &Dom,
    url: Option<&str>,
    roots: &[NodeId],
    budget: &Budget,
) -> Hierarchy {
    build_page(dom, url, Some(roots), budget, Ids::Assign)
}

/// [`build_parts_within`] without ids (see [`build_within_without_ids`]).
pub fn build_parts_within_without_ids(
    dom: &Dom,
    url: Option<&str>,
    roots: &[NodeId],
    budget: &Budget,
) -> Hierarchy {
    build_page(dom, url, Some(roots), budget, Ids::Charge)
}

/// The page's `<title>` and language, as the hierarchy's root reads them,
/// without building the rest.
pub fn title_and_lang(dom: &Dom) -> (Option<String>, Option<String>) {
    let head = Head::read(dom);
    (head.title, head.lang)
}

/// What the head gives: title, language, keywords.
struct Head {
    title: Option<String>,
    lang: Option<String>,
    keywords: Option<String>,
}

impl Head {
    fn read(dom: &Dom) -> Head {
        let html = dom.child_element(DOCUMENT, "html");
        let head = html.and_then(|h| dom.child_element(h, "head"));
        let title = head
            .and_then(|h| dom.child_element(h, "title"))
            .map(|t| normalize(&text_content(dom, t)))
            .filter(|t| !t.is_empty());
        let mut lang = html
            .and_then(|h| dom.element(h))
            .and_then(|e| e.attr("lang").or(e.attr("xml:lang")))
            .map(normalize)
            .filter(|l| !l.is_empty());
        let mut keywords = None;
        if let Some(head) = head {
            for m in dom.children(head) {
                let Some(e) = dom.element(m) else { continue };
                if &*e.name != "meta" {
                    continue;
                }
                let content = e.attr("content").map(normalize).filter(|c| !c.is_empty());
                if keywords.is_none()
                    && e.attr("name")
                        .is_some_and(|n| n.eq_ignore_ascii_case("keywords"))
                {
                    keywords = content.clone();
                }
                if lang.is_none()
                    && e.attr("http-equiv")
                        .is_some_and(|n| n.eq_ignore_ascii_case("content-language"))
                {
                    lang = content.and_then(|c| c.split(',').next().map(|s| s.trim().to_owned()));
                }
            }
        }
        Head {
            title,
            lang,
            keywords,
        }
    }
}

/// All character data under `id` (scripts and styles excluded), iteratively.
pub(crate) fn text_content(dom: &Dom, id: NodeId) -> String {
    let mut out = String::new();
    let mut stack = vec![id];
    while let Some(n) = stack.pop() {
        match &dom.node(n).data {
            NodeData::Text(t) => out.push_str(t),
            NodeData::Element(e) if matches!(&*e.name, "script" | "style" | "template") => continue,
            _ => {
                let before = stack.len();
                stack.extend(dom.children(n));
                stack[before..].reverse();
            }
        }
    }
    out
}

/// A step of a container's content, before headings and lead-ins are applied.
#[derive(Debug)]
enum Item {
    /// A run of text from type 2 context.
    Text(String, Option<String>),
    /// A heading of rank 1..=6.
    Heading(u8, String),
    /// A built node; `structure` marks what lead-in text may label.
    Block(HNode, bool),
    /// Nodes spliced in place (a paragraph that held only structure).
    Nodes(Vec<HNode>),
}

/// Gathers the items of one container.
#[derive(Default)]
struct Collector {
    items: Vec<Item>,
    inline: InlineText,
    /// A link that makes up the whole run so far: its `href` and the run's
    /// length when the link ended (more text after it means it does not).
    link: Option<(String, usize)>,
}

impl Collector {
    fn flush(&mut self) {
        if let Some((t, href)) = self.take_run() {
            self.items.push(Item::Text(t, href));
        }
    }

    /// The run of text so far, if any, and the link that makes it up whole.
    fn take_run(&mut self) -> Option<(String, Option<String>)> {
        let link = self.link.take();
        let len = self.inline.len();
        let t = self.inline.take()?;
        Some((t, link.filter(|(_, end)| *end == len).map(|(h, _)| h)))
    }

    fn push(&mut self, item: Item) {
        self.flush();
        self.items.push(item);
    }

    fn finish(mut self) -> Vec<Item> {
        self.flush();
        self.items
    }
}

struct Builder<'a> {
    dom: &'a Dom,
    /// What the page may cost.
    budget: &'a Budget,
    /// [`TagClass`] of every node by id (non-elements are `Drop`).
    classes: Vec<TagClass>,
    style: DecimalStyle,
    /// Headings already used as a sectioning element's label.
    consumed: HashSet<NodeId>,
    depth: usize,
}

impl<'a> Builder<'a> {
    /// The class of element `id`, roles and hiding considered.
    fn new(dom: &'a Dom, style: DecimalStyle, budget: &'a Budget) -> Builder<'a> {
        Builder {
            dom,
            budget,
            classes: Builder::classify_all(dom),
            style,
            consumed: HashSet::new(),
            depth: 0,
        }
    }

    fn class(&self, id: NodeId) -> TagClass {
        self.classes[id]
    }

    /// Classes of every node, computed once (elements are classified many
    /// times: while collecting, gathering table rows, checking layout).
    fn classify_all(dom: &Dom) -> Vec<TagClass> {
        let mut names = NameClasses::default();
        (0..dom.len())
            .map(|id| Self::compute_class(dom, id, &mut names))
            .collect()
    }

    fn compute_class(dom: &Dom, id: NodeId, names: &mut NameClasses) -> TagClass {
        let Some(e) = dom.element(id) else {
            return TagClass::Drop;
        };
        if !e.is_html() {
            return TagClass::Drop;
        }
        // One pass over the attributes, compared as atoms.
        let (mut role, mut aria_level) = (None, None);
        for (name, value) in &e.attrs {
            match *name {
                local_name!("hidden") => return TagClass::Drop,
                local_name!("aria-hidden") if value.trim().eq_ignore_ascii_case("true") => {
                    return TagClass::Drop;
                }
                local_name!("role") if role.is_none() => role = Some(value.as_str()),
                local_name!("aria-level") if aria_level.is_none() => {
                    aria_level = Some(value.as_str());
                }
                _ => {}
            }
        }
        let base = names.class_of(&e.name);
        if base == TagClass::Drop {
            return base;
        }
        if let Some(role) = role
            && let Some(c) = role_class(role, aria_level)
        {
            return c;
        }
        base
    }

    /// The text under `id` on one line, as rendered: inline elements join,
    /// blocks and line breaks separate words, dropped content is skipped,
    /// images give their `alt`. Used for headings and addresses.
    fn flat_text(&self, id: NodeId) -> String {
        enum Step {
            Node(NodeId),
            Space,
        }
        let mut t = InlineText::default();
        let mut stack: Vec<Step> = self.dom.children(id).map(Step::Node).collect();
        stack.reverse();
        while let Some(step) = stack.pop() {
            let n = match step {
                Step::Space => {
                    t.push_space();
                    continue;
                }
                Step::Node(n) => n,
            };
            match &self.dom.node(n).data {
                NodeData::Text(s) => t.push_str(s),
                NodeData::Element(e) => match self.class(n) {
                    TagClass::Drop | TagClass::Invisible => {}
                    TagClass::Break => t.push_space(),
                    TagClass::Image => {
                        if let Some(alt) = e.attr("alt") {
                            t.push_alt(alt);
                        }
                    }
                    class => {
                        let block = class != TagClass::Inline;
                        if block {
                            t.push_space();
                            stack.push(Step::Space);
                        }
                        let before = stack.len();
                        stack.extend(self.dom.children(n).map(Step::Node));
                        stack[before..].reverse();
                    }
                },
                _ => {}
            }
        }
        t.take().unwrap_or_default()
    }

    /// Walks the children of `id` into `c`.
    fn collect(&mut self, id: NodeId, c: &mut Collector) {
        if self.depth >= MAX_DEPTH {
            c.inline.push_str(&text_content(self.dom, id));
            return;
        }
        self.depth += 1;
        let dom = self.dom;
        for child in dom.children(id) {
            if !self.budget.tick() {
                break;
            }
            match &dom.node(child).data {
                NodeData::Text(t) => c.inline.push_str(t),
                NodeData::Element(_) => self.element(child, c),
                _ => {}
            }
        }
        self.depth -= 1;
    }

    /// Adds element `id` to `c` according to its class.
    fn element(&mut self, id: NodeId, c: &mut Collector) {
        match self.class(id) {
            TagClass::Drop => {
                if self.dom.element(id).is_some_and(separates) {
                    c.flush();
                }
            }
            TagClass::Inline => {
                let href = self.dom.element(id).and_then(|e| whole_link(e, c));
                self.collect(id, c);
                if let Some(h) = href {
                    c.link = Some((h, c.inline.len()));
                }
            }
            TagClass::Break => c.inline.push_space(),
            TagClass::Invisible => {}
            TagClass::Image => {
                if let Some(e) = self.dom.element(id) {
                    push_alt(e, c);
                }
            }
            TagClass::Boundary | TagClass::TablePart => {
                c.flush();
                self.collect(id, c);
                c.flush();
            }
            TagClass::Heading(level) => {
                c.flush();
                if !self.consumed.contains(&id) {
                    let t = self.flat_text(id);
                    if !t.is_empty() {
                        c.items.push(Item::Heading(level, t));
                    }
                }
            }
            TagClass::Sectioning => self.sectioning(id, c),
            TagClass::Paragraph | TagClass::ListItem | TagClass::DefTerm | TagClass::DefDesc => {
                c.flush();
                let nodes = self.content(id);
                match wrap(Kind::Text, nodes) {
                    Wrapped::One(n) => c.items.push(Item::Block(n, false)),
                    Wrapped::Many(ns) => c.items.push(Item::Nodes(ns)),
                }
            }
            TagClass::Pre => {
                c.flush();
                let t = normalize_pre(&text_content(self.dom, id));
                if !t.is_empty() {
                    let mut n = HNode::new(Kind::Pre);
                    n.text = Some(t);
                    c.push(Item::Block(n, false));
                }
            }
            TagClass::Quote => {
                c.flush();
                let nodes = self.content(id);
                if let Some(n) = wrap_node(Kind::Quote, nodes) {
                    c.items.push(Item::Block(n, true));
                }
            }
            TagClass::List => {
                c.flush();
                if let Some(n) = self.list(id) {
                    c.items.push(Item::Block(n, true));
                }
            }
            TagClass::DefList => {
                c.flush();
                if let Some(n) = self.terms(id) {
                    c.items.push(Item::Block(n, true));
                }
            }
            TagClass::Table => {
                c.flush();
                match table::classify(self, id) {
                    table::Shape::Data(spec) => {
                        if let Some(n) = table::build(self, spec) {
                            c.items.push(Item::Block(n, true));
                        }
                    }
                    table::Shape::Layout => {
                        self.collect(id, c);
                        c.flush();
                    }
                }
            }
            TagClass::Address => {
                c.flush();
                let t = self.flat_text(id);
                if !t.is_empty() {
                    let mut n = HNode::new(Kind::Address);
                    n.text = Some(t);
                    if let Some(href) = self.first_link(id) {
                        n.attrs.push(("href", href));
                    }
                    c.push(Item::Block(n, false));
                }
            }
        }
    }

    /// The content of an element that holds nothing but inline text
    /// (text, inline elements, line breaks, images' `alt`, dropped
    /// content): its one run of text and the link that makes it up whole,
    /// gathered without the collector's items and their assembly (most
    /// table cells). `Some(None)` when it is empty; `None` when anything
    /// else is inside, for [`content`](Self::content) to build. On the
    /// elements it accepts, the result is what `content` builds.
    fn inline_only(&mut self, id: NodeId) -> Option<Option<(String, Option<String>)>> {
        let mut c = Collector::default();
        if !self.inline_run(id, &mut c) {
            return None;
        }
        Some(c.take_run())
    }

    /// Walks the children of `id` into `c.inline`; `false` as soon as one
    /// is not inline text (or the page is over its budget).
    fn inline_run(&mut self, id: NodeId, c: &mut Collector) -> bool {
        if self.depth >= MAX_DEPTH {
            return false;
        }
        self.depth += 1;
        let dom = self.dom;
        let mut inline = true;
        for child in dom.children(id) {
            if !self.budget.tick() {
                inline = false;
                break;
            }
            let e = match &dom.node(child).data {
                NodeData::Text(t) => {
                    c.inline.push_str(t);
                    continue;
                }
                NodeData::Element(e) => e,
                _ => continue,
            };
            match self.class(child) {
                TagClass::Drop => inline = !separates(e),
                TagClass::Inline => {
                    let href = whole_link(e, c);
                    inline = self.inline_run(child, c);
                    if let Some(h) = href {
                        c.link = Some((h, c.inline.len()));
                    }
                }
                TagClass::Break => c.inline.push_space(),
                TagClass::Invisible => {}
                TagClass::Image => push_alt(e, c),
                _ => inline = false,
            }
            if !inline {
                break;
            }
        }
        self.depth -= 1;
        inline
    }

    /// The built content of a type 1 element: its items, assembled.
    fn content(&mut self, id: NodeId) -> Vec<HNode> {
        let mut inner = Collector::default();
        self.collect(id, &mut inner);
        self.assemble(inner.finish())
    }

    /// A sectioning element: a section if it has its own heading.
    fn sectioning(&mut self, id: NodeId, c: &mut Collector) {
        c.flush();
        match self.own_heading(id) {
            Some((h, level)) => {
                self.consumed.insert(h);
                let label = self.flat_text(h);
                let children = self.content(id);
                let mut n = HNode::new(Kind::Section);
                n.label = Some(label);
                n.attrs.push(("level", level.to_string()));
                n.children = children;
                c.items.push(Item::Block(n, false));
            }
            None => {
                self.collect(id, c);
                c.flush();
            }
        }
    }

    /// The first non-empty heading of a sectioning element that belongs to it:
    /// found through boundaries and inline elements (and `header`/`hgroup`),
    /// not inside nested sections, lists or tables.
    fn own_heading(&self, id: NodeId) -> Option<(NodeId, u8)> {
        let mut stack: Vec<NodeId> = self.dom.children(id).collect();
        stack.reverse();
        while let Some(n) = stack.pop() {
            if self.dom.element(n).is_none() {
                continue;
            }
            let descend = match self.class(n) {
                TagClass::Heading(level) => {
                    if !self.consumed.contains(&n) && !self.flat_text(n).is_empty() {
                        return Some((n, level));
                    }
                    false
                }
                TagClass::Boundary | TagClass::Inline => true,
                TagClass::Sectioning => self
                    .dom
                    .element(n)
                    .is_some_and(|e| matches!(&*e.name, "header" | "hgroup")),
                _ => false,
            };
            if descend {
                let before = stack.len();
                stack.extend(self.dom.children(n));
                stack[before..].reverse();
            }
        }
        None
    }

    fn first_link(&self, id: NodeId) -> Option<String> {
        let a = self.dom.find_descendant(id, "a")?;
        self.dom
            .element(a)
            .and_then(|e| e.attr("href"))
            .map(|h| h.trim().to_owned())
            .filter(|h| !h.is_empty())
    }

    /// A list: one item per `li`; text or other content directly in the
    /// list becomes an item; a list nested directly in a list belongs to
    /// the item before it.
    fn list(&mut self, id: NodeId) -> Option<HNode> {
        let dom = self.dom;
        let mut list = HNode::new(Kind::List);
        let mut stray = Collector::default();
        for child in dom.children(id) {
            let class = match &dom.node(child).data {
                NodeData::Element(_) => self.class(child),
                NodeData::Text(t) => {
                    stray.inline.push_str(t);
                    continue;
                }
                _ => continue,
            };
            match class {
                TagClass::ListItem => {
                    self.flush_stray(&mut stray, &mut list);
                    if let Some(item) = wrap_node(Kind::Item, self.content(child)) {
                        list.children.push(item);
                    }
                }
                TagClass::List => {
                    self.flush_stray(&mut stray, &mut list);
                    if let Some(sub) = self.list(child) {
                        match list.children.last_mut() {
                            Some(prev) => prev.own([sub]),
                            None => {
                                let mut item = HNode::new(Kind::Item);
                                item.children.push(sub);
                                list.children.push(item);
                            }
                        }
                    }
                }
                _ => self.element(child, &mut stray),
            }
        }
        self.flush_stray(&mut stray, &mut list);
        (!list.children.is_empty()).then_some(list)
    }

    fn flush_stray(&mut self, stray: &mut Collector, list: &mut HNode) {
        let items = std::mem::take(stray).finish();
        if items.is_empty() {
            return;
        }
        if let Some(item) = wrap_node(Kind::Item, self.assemble(items)) {
            list.children.push(item);
        }
    }

    /// A definition list: each term owns the definitions after it; terms
    /// in a row share them (each carries its own copy, as a rowspan does).
    fn terms(&mut self, id: NodeId) -> Option<HNode> {
        let mut entries: Vec<(bool, NodeId)> = Vec::new();
        self.dl_entries(id, &mut entries, 0);
        let mut out = HNode::new(Kind::Terms);
        let mut terms: Vec<HNode> = Vec::new();
        let mut defs: Vec<HNode> = Vec::new();
        let close = |terms: &mut Vec<HNode>, defs: &mut Vec<HNode>, out: &mut HNode| {
            if terms.is_empty() {
                out.children.append(defs);
            } else {
                for mut t in terms.drain(..) {
                    if !defs.is_empty() {
                        t.own(defs.iter().cloned());
                    }
                    out.children.push(t);
                }
                defs.clear();
            }
        };
        for (is_term, n) in entries {
            let content = self.content(n);
            if is_term {
                if !defs.is_empty() {
                    close(&mut terms, &mut defs, &mut out);
                }
                if let Some(t) = wrap_node(Kind::Term, content) {
                    terms.push(t);
                }
            } else if let Some(d) = wrap_node(Kind::Def, content) {
                defs.push(d);
            }
        }
        close(&mut terms, &mut defs, &mut out);
        (!out.children.is_empty()).then_some(out)
    }

    fn dl_entries(&self, id: NodeId, out: &mut Vec<(bool, NodeId)>, depth: usize) {
        for child in self.dom.children(id) {
            match self.class(child) {
                TagClass::DefTerm => out.push((true, child)),
                TagClass::DefDesc => out.push((false, child)),
                TagClass::Boundary | TagClass::Inline if depth < 4 => {
                    self.dl_entries(child, out, depth + 1)
                }
                _ => {}
            }
        }
    }

    /// Applies the heading outline and lead-in labelling to a container's items.
    fn assemble(&self, items: Vec<Item>) -> Vec<HNode> {
        let mut out: Vec<HNode> = Vec::new();
        let mut stack: Vec<(u8, HNode)> = Vec::new();
        let mut lead_in = false;
        for item in items {
            match item {
                Item::Heading(level, label) => {
                    while stack.last().is_some_and(|(l, _)| *l >= level) {
                        if let Some((_, s)) = stack.pop() {
                            target(&mut stack, &mut out).push(s);
                        }
                    }
                    let mut s = HNode::new(Kind::Section);
                    s.label = Some(label);
                    s.attrs.push(("level", level.to_string()));
                    stack.push((level, s));
                    lead_in = false;
                }
                Item::Text(t, href) => {
                    lead_in = word_count(&t) <= LEAD_IN_MAX_WORDS;
                    target(&mut stack, &mut out).push(text_leaf(t, href, self.style));
                }
                Item::Block(node, structure) => {
                    let tgt = target(&mut stack, &mut out);
                    match tgt.last_mut() {
                        Some(prev) if structure && lead_in && prev.is_text_leaf() => {
                            prev.own([node])
                        }
                        _ => tgt.push(node),
                    }
                    lead_in = false;
                }
                Item::Nodes(nodes) => {
                    target(&mut stack, &mut out).extend(nodes);
                    lead_in = false;
                }
            }
        }
        while let Some((_, s)) = stack.pop() {
            target(&mut stack, &mut out).push(s);
        }
        out
    }
}

/// [`class_of`] remembered by element name: a page uses a few dozen tag
/// names over thousands of elements, and an atom compares as one integer
/// where the class table is searched by string.
struct NameClasses {
    /// Direct-mapped by the atom's hash; a collision only costs a search.
    slots: [Option<(LocalName, TagClass)>; 64],
}

impl Default for NameClasses {
    fn default() -> Self {
        NameClasses {
            slots: std::array::from_fn(|_| None),
        }
    }
}

impl NameClasses {
    fn class_of(&mut self, name: &LocalName) -> TagClass {
        let slot = &mut self.slots[(name.get_hash() % 64) as usize];
        match slot {
            Some((n, class)) if n == name => *class,
            _ => {
                let class = class_of(name);
                *slot = Some((name.clone(), class));
                class
            }
        }
    }
}

/// Whether dropped element `e` still ends a run of text: `aria-hidden`
/// content is not data, but a block that is still displayed still
/// separates the text around it.
fn separates(e: &Element) -> bool {
    e.attr("hidden").is_none()
        && e.is_html()
        && !matches!(
            class_of(&e.name),
            TagClass::Inline
                | TagClass::Image
                | TagClass::Break
                | TagClass::Invisible
                | TagClass::Drop
        )
}

/// The target of inline element `e` when it is a link starting a run of
/// text: a text that is nothing but one link keeps the link's target as
/// data (`href`), so a changed target is a change.
fn whole_link(e: &Element, c: &Collector) -> Option<String> {
    if &*e.name != "a" || !c.inline.is_empty() {
        return None;
    }
    let h = e.attr("href")?.trim();
    (!h.is_empty()).then(|| h.to_owned())
}

/// An image's `alt` text: the run's text when it has no other
/// ([`InlineText::push_alt`]).
fn push_alt(e: &Element, c: &mut Collector) {
    if let Some(alt) = e.attr("alt") {
        c.inline.push_alt(alt);
    }
}

/// Where new nodes go: the innermost open section, or the container.
fn target<'a>(stack: &'a mut [(u8, HNode)], out: &'a mut Vec<HNode>) -> &'a mut Vec<HNode> {
    match stack.last_mut() {
        Some((_, s)) => &mut s.children,
        None => out,
    }
}

/// A leaf node holding `text`, with `num` when it reads as a number.
fn leaf(kind: Kind, text: String, style: DecimalStyle) -> HNode {
    let mut n = HNode::new(kind);
    if kind.numeric() {
        n.num = parse_number(&text, style);
    }
    n.text = Some(text);
    n
}

/// The text leaf of a run of text, with the link that makes it up whole.
fn text_leaf(text: String, href: Option<String>, style: DecimalStyle) -> HNode {
    let mut n = leaf(Kind::Text, text, style);
    if let Some(h) = href {
        n.attrs.push(("href", h));
    }
    n
}

/// The result of wrapping a type 1 element's content.
enum Wrapped {
    One(HNode),
    Many(Vec<HNode>),
}

/// Wraps content as one node of `kind` where the content has a text of its
/// own (a leaf, or a label owning the rest); otherwise hands the nodes back
/// to be spliced into the parent (a `<p>` holding only structure).
fn wrap(kind: Kind, mut nodes: Vec<HNode>) -> Wrapped {
    let labelled = nodes
        .first()
        .is_some_and(|f| f.kind == Kind::Text && f.own_text().is_some())
        && nodes.get(1).is_none_or(|s| !s.is_text_leaf());
    if !labelled {
        return Wrapped::Many(nodes);
    }
    let rest = nodes.split_off(1);
    let Some(first) = nodes.pop() else {
        return Wrapped::Many(rest);
    };
    if first.children.is_empty() && rest.is_empty() {
        // A text leaf becomes a leaf of `kind`; its `num` was read when the
        // text leaf was made (every numeric kind reads numbers alike).
        let mut n = first;
        if !kind.numeric() {
            n.num = None;
        }
        n.kind = kind;
        return Wrapped::One(n);
    }
    let mut n = HNode::new(kind);
    n.label = first.label.or(first.text);
    n.children = first.children;
    n.children.extend(rest);
    Wrapped::One(n)
}

/// Like [`wrap`] but always one node (items, cells, definitions keep their
/// place even without text); `None` for empty content.
fn wrap_node(kind: Kind, nodes: Vec<HNode>) -> Option<HNode> {
    if nodes.is_empty() {
        return None;
    }
    match wrap(kind, nodes) {
        Wrapped::One(n) => Some(n),
        Wrapped::Many(ns) => {
            let mut n = HNode::new(kind);
            n.children = ns;
            Some(n)
        }
    }
}

/// Lifts nodes deeper than [`MAX_TREE_DEPTH`] to that depth.
fn cap_depth(nodes: &mut [HNode], depth: usize) {
    for n in nodes.iter_mut() {
        if n.children.is_empty() {
            continue;
        }
        if depth + 1 < MAX_TREE_DEPTH {
            cap_depth(&mut n.children, depth + 1);
            continue;
        }
        let mut flat = Vec::new();
        let mut stack: Vec<HNode> = std::mem::take(&mut n.children);
        stack.reverse();
        while let Some(mut c) = stack.pop() {
            let mut grand = std::mem::take(&mut c.children);
            if c.text.is_none()
                && !matches!(
                    c.kind,
                    Kind::Section | Kind::Table | Kind::Row | Kind::List | Kind::Terms
                )
            {
                c.text = c.label.take();
            }
            if c.own_text().is_some() || c.key.is_some() || c.col.is_some() {
                flat.push(c);
            }
            grand.reverse();
            stack.extend(grand);
        }
        n.children = flat;
    }
}

/// Fills every node's `xpath`: label predicates where a node's identifying
/// attribute is unique among same-named siblings, positions otherwise.
///
/// An identifying value longer than [`MAX_ID_LABEL_CHARS`] characters
/// appears in ids only by its first [`MAX_ID_LABEL_CHARS`] characters, as
/// `[starts-with(@label, '...')]` (with an ordinal among the siblings that
/// share that prefix when more than one does), so that a long heading is
/// not copied whole into the id of every node below it.
pub fn assign_ids(h: &mut Hierarchy) {
    assign_ids_within(h, &Budget::new(PageLimits::unlimited()));
}

/// [`assign_ids`] charging the ids' bytes to `budget`; stops (leaving the
/// remaining ids empty) once it is exceeded.
pub fn assign_ids_within(h: &mut Hierarchy, budget: &Budget) {
    assign_children("/page", &mut h.children, budget);
}

/// Characters of an identifying value that ids quote in full.
pub const MAX_ID_LABEL_CHARS: usize = 200;

/// How a value is quoted in ids: whole, or by its first
/// [`MAX_ID_LABEL_CHARS`] characters (`true`).
fn id_value(v: &str) -> (&str, bool) {
    // At most one character per byte: a short value is never cut.
    if v.len() <= MAX_ID_LABEL_CHARS {
        return (v, false);
    }
    match v.char_indices().nth(MAX_ID_LABEL_CHARS) {
        Some((end, _)) => (&v[..end], true),
        None => (v, false),
    }
}

/// A node's kind, identifying value (whole or quoted prefix) and whether
/// it is a prefix.
type IdKey<'a> = (Kind, &'a str, bool);

/// The siblings a node's id predicate selects, as a key: exact value
/// (`[@label='v']`, `false`) or quoted prefix (`[starts-with(...)]`,
/// `true`). Beside its own key, a value of exactly
/// [`MAX_ID_LABEL_CHARS`] characters is also selected by the prefix
/// predicate of longer values that start with it.
fn id_keys(c: &HNode) -> (Option<IdKey<'_>>, Option<IdKey<'_>>) {
    let Some((_, v)) = c.ident() else {
        return (None, None);
    };
    let (quoted, cut) = id_value(v);
    if cut {
        (Some((c.kind, quoted, true)), None)
    } else if v.len() >= MAX_ID_LABEL_CHARS && v.chars().count() == MAX_ID_LABEL_CHARS {
        (Some((c.kind, v, false)), Some((c.kind, v, true)))
    } else {
        (Some((c.kind, v, false)), None)
    }
}

/// For every child of `children`: how many siblings its id predicate
/// selects, its ordinal among them, and its position among same-kind
/// siblings (both 0-based), as ids count them.
fn all_sibling_counts(children: &[HNode]) -> Vec<SiblingCounts> {
    use rustc_hash::FxHashMap as HashMap;
    // Per child: how many siblings its id predicate selects, and its
    // ordinal among them; and its position among same-named siblings.
    let n = children.len();
    let mut totals = vec![0usize; n];
    let mut ordinals = vec![0usize; n];
    let mut positions = vec![0usize; n];
    if n <= 16 {
        // Small sibling lists (most of them): quadratic over keys read once,
        // without hashing.
        let mut keys = [(None, None); 16];
        for (k, c) in keys.iter_mut().zip(children.iter()) {
            *k = id_keys(c);
        }
        for i in 0..n {
            let (own, _) = keys[i];
            for (j, other) in children.iter().enumerate() {
                if other.kind == children[i].kind && j < i {
                    positions[i] += 1;
                }
                let (other_own, other_also) = keys[j];
                if own.is_some() && (other_own == own || other_also == own) {
                    totals[i] += 1;
                    if j < i {
                        ordinals[i] += 1;
                    }
                }
            }
        }
    } else {
        let keys: Vec<_> = children.iter().map(id_keys).collect();
        let mut by_key: HashMap<IdKey<'_>, usize> = HashMap::default();
        for (own, also) in &keys {
            for k in own.iter().chain(also) {
                *by_key.entry(*k).or_default() += 1;
            }
        }
        let mut seen_kind: HashMap<Kind, usize> = HashMap::default();
        let mut seen_key: HashMap<IdKey<'_>, usize> = HashMap::default();
        for (i, c) in children.iter().enumerate() {
            let p = seen_kind.entry(c.kind).or_default();
            positions[i] = *p;
            *p += 1;
            let (own, also) = keys[i];
            if let Some(k) = own {
                totals[i] = by_key.get(&k).copied().unwrap_or(1);
                let o = seen_key.entry(k).or_default();
                ordinals[i] = *o;
                *o += 1;
            }
            if let Some(k) = also {
                *seen_key.entry(k).or_default() += 1;
            }
        }
    }
    (0..n)
        .map(|i| (totals[i], ordinals[i], positions[i]))
        .collect()
}

/// Charges to `budget` the bytes [`assign_ids_within`] would write, without
/// writing them: each id is its parent's plus one step, whose bytes are
/// counted, not written. Counting siblings for the exact ordinals would
/// cost more than the rest of the charge, so each step is counted as if
/// its ordinal were its sibling list's length: an upper bound, exact for
/// a node no sibling shares a kind and key with, at most a few bytes over
/// for the others (a bound against pages whose ids would take gigabytes
/// needs no more).
pub fn charge_ids_within(h: &Hierarchy, budget: &Budget) {
    fn charge(parent: usize, children: &[HNode], budget: &Budget) -> bool {
        let n = children.len();
        for c in children {
            let mut step = ByteCount(0);
            push_step(&mut step, c, n, n - 1, n - 1);
            let len = parent + step.0;
            if !budget.ids(len as u64) || !charge(len, &c.children, budget) {
                return false;
            }
        }
        true
    }
    charge("/page".len(), &h.children, budget);
}

/// A writer that only counts the bytes written to it.
struct ByteCount(usize);

impl std::fmt::Write for ByteCount {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0 += s.len();
        Ok(())
    }
}

fn assign_children(parent: &str, children: &mut [HNode], budget: &Budget) {
    let counts = all_sibling_counts(children);
    for (i, c) in children.iter_mut().enumerate() {
        let name = c.kind.name();
        let mut id = String::with_capacity(parent.len() + name.len() + 24);
        id.push_str(parent);
        let (total, ordinal, position) = counts[i];
        push_step(&mut id, c, total, ordinal, position);
        if !budget.ids(id.len() as u64) {
            return;
        }
        assign_children(&id, &mut c.children, budget);
        c.xpath = id;
    }
}

/// Appends the step of `c`'s id below its parent's: `/kind` and its
/// predicate. `total` is how many siblings `c`'s id predicate selects,
/// `ordinal` its 0-based ordinal among them, `position` its 0-based
/// position among same-kind siblings.
fn push_step(
    id: &mut impl std::fmt::Write,
    c: &HNode,
    total: usize,
    ordinal: usize,
    position: usize,
) {
    // Writing to a `String` or a byte count cannot fail.
    for part in ["/", c.kind.name()] {
        let _ = id.write_str(part);
    }
    match c.ident() {
        Some((attr, v)) => {
            let (quoted, cut) = id_value(v);
            if cut {
                for part in ["[starts-with(@", attr, ", "] {
                    let _ = id.write_str(part);
                }
                push_xpath_literal(id, quoted);
                let _ = id.write_str(")]");
            } else {
                for part in ["[@", attr, "="] {
                    let _ = id.write_str(part);
                }
                push_xpath_literal(id, v);
                let _ = id.write_char(']');
            }
            if total > 1 {
                push_ordinal(id, ordinal + 1);
            }
        }
        None => push_ordinal(id, position + 1),
    }
}

/// Appends `[n]`, its digits written straight from the number (this runs
/// for every node whose ids are charged or written: `write!` would go
/// through the formatting machinery for each).
fn push_ordinal(id: &mut impl std::fmt::Write, mut n: usize) {
    let mut buf = [0u8; 22];
    let mut at = buf.len() - 1;
    buf[at] = b']';
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    at -= 1;
    buf[at] = b'[';
    // Only ASCII was written; writing to a `String` or a count cannot fail.
    if let Ok(text) = std::str::from_utf8(&buf[at..]) {
        let _ = id.write_str(text);
    }
}

/// The id [`assign_ids`] gives the node reached from the root by the child
/// indexes `path` (the root's children first), computed for that node
/// alone: for a hierarchy read back without ids, when only a few nodes'
/// ids are wanted (those of a diff's changes). `None` when `path` leads
/// nowhere; `"/page"` for the empty path (the root).
pub fn id_at(h: &Hierarchy, path: &[usize]) -> Option<String> {
    let mut id = String::from("/page");
    let mut siblings = h.children.as_slice();
    for &i in path {
        let c = siblings.get(i)?;
        let (total, ordinal, position) = sibling_counts(siblings, i);
        push_step(&mut id, c, total, ordinal, position);
        siblings = &c.children;
    }
    Some(id)
}

/// A node's id counts among its siblings: how many its predicate selects,
/// its ordinal among them, its position among same-kind siblings.
type SiblingCounts = (usize, usize, usize);

/// [`id_at`] for many nodes of one hierarchy: the sibling counts of a long
/// sibling list are worked out once and kept, so deriving the ids of all
/// of a list's children costs linear, not quadratic, time (a page whose
/// thousands of rows all change).
#[derive(Debug, Clone)]
pub struct IdsAt<'h> {
    h: &'h Hierarchy,
    /// Counts per sibling list longer than [`IdsAt::SHORT`], by the
    /// address of its first node.
    counts: std::cell::RefCell<std::collections::HashMap<usize, Vec<SiblingCounts>>>,
}

impl<'h> IdsAt<'h> {
    /// Lists up to this long are counted for each node asked (cheaper than
    /// keeping them).
    const SHORT: usize = 16;

    /// A deriver for the ids of `h`.
    pub fn new(h: &'h Hierarchy) -> IdsAt<'h> {
        IdsAt {
            h,
            counts: Default::default(),
        }
    }

    /// The id of the node at `path` (see [`id_at`]).
    pub fn id_at(&self, path: &[usize]) -> Option<String> {
        let mut id = String::from("/page");
        let mut siblings = self.h.children.as_slice();
        for &i in path {
            let c = siblings.get(i)?;
            let (total, ordinal, position) = if siblings.len() <= Self::SHORT {
                sibling_counts(siblings, i)
            } else {
                let mut kept = self.counts.borrow_mut();
                let list = kept
                    .entry(siblings.as_ptr() as usize)
                    .or_insert_with(|| all_sibling_counts(siblings));
                list.get(i).copied()?
            };
            push_step(&mut id, c, total, ordinal, position);
            siblings = &c.children;
        }
        Some(id)
    }
}

/// For child `i` of `children`, what [`assign_children`] counts: how many
/// siblings its id predicate selects, its ordinal among them, and its
/// position among same-kind siblings (both 0-based).
fn sibling_counts(children: &[HNode], i: usize) -> SiblingCounts {
    let (mut total, mut ordinal, mut position) = (0, 0, 0);
    let Some(c) = children.get(i) else {
        return (total, ordinal, position);
    };
    let (own, _) = id_keys(c);
    for (j, other) in children.iter().enumerate() {
        if other.kind == c.kind && j < i {
            position += 1;
        }
        if own.is_some() {
            let (other_own, other_also) = id_keys(other);
            if other_own == own || other_also == own {
                total += 1;
                if j < i {
                    ordinal += 1;
                }
            }
        }
    }
    (total, ordinal, position)
}

/// An XPath 1.0 string literal for `s`: single or double quotes, or
/// `concat()` when `s` holds both kinds.
pub fn xpath_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_xpath_literal(&mut out, s);
    out
}

fn push_xpath_literal(out: &mut impl std::fmt::Write, s: &str) {
    // Writing to a `String` or a byte count cannot fail.
    if !s.contains('\'') {
        for part in ["'", s, "'"] {
            let _ = out.write_str(part);
        }
    } else if !s.contains('"') {
        for part in ["\"", s, "\""] {
            let _ = out.write_str(part);
        }
    } else {
        let _ = out.write_str("concat(");
        for (i, part) in s.split('\'').enumerate() {
            if i > 0 {
                let _ = out.write_str(", \"'\", ");
            }
            for piece in ["'", part, "'"] {
                let _ = out.write_str(piece);
            }
        }
        let _ = out.write_char(')');
    }
}

/// The pseudo-tables (span-resolved grids) of every data table in a page,
/// in document order; layout tables are left out.
pub fn pseudo_tables(html: &str) -> Vec<table::PseudoTable> {
    let dom = Dom::parse(html);
    let head = Head::read(&dom);
    let budget = Budget::new(PageLimits::unlimited());
    let mut b = Builder::new(&dom, decimal_style_for_lang(head.lang.as_deref()), &budget);
    table::pseudo_tables(&mut b, DOCUMENT)
}

#[cfg(test)]
mod tests {
    #[test]
    fn ordinals_are_written_as_formatting_would() {
        for n in [0, 1, 9, 10, 11, 99, 100, 12_345, usize::MAX] {
            let mut out = String::from("x");
            super::push_ordinal(&mut out, n);
            assert_eq!(out, format!("x[{n}]"));
        }
    }

    use super::*;

    /// Every node's id as [`id_at`] derives it alone, and as [`IdsAt`]
    /// derives it with its kept counts, equals the one [`assign_ids`] gave
    /// it.
    fn assert_ids_at(h: &Hierarchy) -> usize {
        fn walk(
            h: &Hierarchy,
            ids: &IdsAt<'_>,
            nodes: &[HNode],
            path: &mut Vec<usize>,
            seen: &mut usize,
        ) {
            for (i, n) in nodes.iter().enumerate() {
                path.push(i);
                assert_eq!(id_at(h, path).as_deref(), Some(n.xpath.as_str()));
                assert_eq!(ids.id_at(path).as_deref(), Some(n.xpath.as_str()));
                *seen += 1;
                walk(h, ids, &n.children, path, seen);
                path.pop();
            }
        }
        assert_eq!(id_at(h, &[]).as_deref(), Some("/page"));
        let mut seen = 0;
        let ids = IdsAt::new(h);
        walk(h, &ids, &h.children, &mut Vec::new(), &mut seen);
        seen
    }

    #[test]
    fn id_at_equals_assign_ids_on_every_node() {
        let long = "L".repeat(MAX_ID_LABEL_CHARS + 5);
        let exact = "E".repeat(MAX_ID_LABEL_CHARS);
        let wide = "й".repeat(MAX_ID_LABEL_CHARS + 1);
        let mut html = String::from("<html><title>Ids</title><body>");
        // Equal, long (a shared prefix), exactly-200 and quoted headings.
        for heading in [
            "Same",
            "Same",
            &long,
            &long,
            &exact,
            "It's",
            "It's \"so\"",
            &wide,
            "Other",
        ] {
            html.push_str(&format!(
                "<h2>{heading}</h2><p>text of {heading}</p><p>more</p>"
            ));
        }
        html.push_str(&format!("<h2>{exact}x</h2><p>prefix of it</p>"));
        // More than 16 siblings (the hashed path), with repeats.
        html.push_str("<h2>List</h2><ul>");
        for i in 0..40 {
            html.push_str(&format!("<li>item {}</li>", i % 7));
        }
        html.push_str("</ul>");
        // A table with repeated keys and a long column header.
        html.push_str(&format!(
            "<table><tr><th>Key</th><th>{long}</th><th>B</th></tr>"
        ));
        for i in 0..30 {
            html.push_str(&format!(
                "<tr><td>k{}</td><td>{i}</td><td>x</td></tr>",
                i % 4
            ));
        }
        html.push_str("</table></body></html>");
        let h = Hierarchy::from_html(&html, None);
        assert!(assert_ids_at(&h) > 100);
        assert_eq!(id_at(&h, &[usize::MAX]), None);

        // Built without ids, at least the same bytes are charged (a few
        // more where siblings share a key: an ordinal is counted as the
        // list's length), none written; the ids assigned afterwards are the
        // ones built with them.
        let dom = Dom::parse(&html);
        let (a, b) = (
            Budget::new(PageLimits::unlimited()),
            Budget::new(PageLimits::unlimited()),
        );
        let with = build_within(&dom, None, &a);
        let mut without = build_within_without_ids(&dom, None, &b);
        assert!(with.has_ids() && !without.has_ids());
        let (written, charged) = (a.costs().id_bytes, b.costs().id_bytes);
        assert!(written > 10_000);
        // Every step is at most `[n]` (n < 1000 here) longer, and a node's
        // id holds the steps of its ancestors and its own.
        fn steps(nodes: &[HNode], depth: u64) -> u64 {
            nodes
                .iter()
                .map(|n| depth + steps(&n.children, depth + 1))
                .sum()
        }
        let slack = 5 * steps(&h.children, 1);
        assert!(
            charged >= written && charged <= written + slack,
            "{written} {charged}"
        );
        assign_ids(&mut without);
        assert_eq!(with, without);
        // And a limit on them fails either build before ids take more.
        let tight = |id_bytes| PageLimits {
            id_bytes,
            ..PageLimits::unlimited()
        };
        let (a, b) = (
            Budget::new(tight(written - 1)),
            Budget::new(tight(written - 1)),
        );
        build_within(&dom, None, &a);
        build_within_without_ids(&dom, None, &b);
        assert!(a.check().is_err() && b.check().is_err());
        let (a, b) = (Budget::new(tight(charged)), Budget::new(tight(charged)));
        build_within(&dom, None, &a);
        build_within_without_ids(&dom, None, &b);
        assert!(a.check().is_ok() && b.check().is_ok());
    }
}
