//! XPath on the hierarchy itself, without libxml2, for the expressions
//! thresholds and clips use in practice; libxml2 on the XML for the rest.
//!
//! A check used to write the new hierarchy as XML and have libxml2 parse it
//! back only to evaluate a threshold such as
//! `/page/table/row[@key='GAZP']/cell[@col='Last']/@num`. [`Evaluator`]
//! answers such expressions on the [`Hierarchy`] directly and turns to
//! libxml2 (serialising and parsing once, lazily) only for an expression
//! outside the forms below.
//!
//! # The forms answered natively
//!
//! Absolute location paths of child (`/`) and descendant (`//`) steps, each
//! a name test (an element name or `*`) with any number of predicates, the
//! last step optionally an attribute (`/@num`, `/@label`, ...). A
//! predicate is a position (`[2]`), an attribute compared with a literal
//! (`[@key='GAZP']`, either order), or `starts-with(@attr, literal)`; a
//! literal is quoted either way or a `concat()` of literals (what ids use
//! for values holding both quotes). That covers every node id semclip
//! writes and the hand-written paths its README shows.
//!
//! # Guarantees
//!
//! - **Same answers as libxml2.** The document the native evaluator walks
//!   is the one [`crate::hierarchy::write::to_xml`] writes (the `page` root with its
//!   `label`, `url`, `lang`, `version` and `xpath` attributes, then each
//!   node's `label`, `key`, `col`, further attributes, `num` and `xpath`),
//!   and XPath 1.0's rules for document order, positions within each
//!   parent and duplicate removal are followed. Where the XML would answer
//!   something the hierarchy does not hold as such (the string value of an
//!   element with children includes the serialiser's indentation), the
//!   native side declines and libxml2 answers. The integration test
//!   `xpath_native` compares both on every corpus page for generated
//!   expressions.
//! - Anything it does not recognise, it declines: never a wrong answer for
//!   an unusual expression, only a slower one.

use std::cell::OnceCell;

use crate::VOCABULARY_VERSION;
use crate::hierarchy::write::{XmlOptions, to_xml};
use crate::hierarchy::{HNode, Hierarchy, IdsAt, assign_ids};

use super::{HierarchyDoc, XPathError};

/// What an entry of the flattened document is.
#[derive(Clone, Copy)]
enum What<'h> {
    /// The document node (the root of XPath's data model).
    Document,
    /// The `page` element.
    Page,
    /// A hierarchy node.
    Node(&'h HNode),
}

#[derive(Clone, Copy)]
struct Entry<'h> {
    what: What<'h>,
    parent: usize,
    /// Index among its parent's children.
    child: usize,
    /// One past the last entry of this entry's subtree.
    end: usize,
}

/// A hierarchy flattened in document order, for native evaluation.
pub struct Flat<'h> {
    h: &'h Hierarchy,
    entries: Vec<Entry<'h>>,
    /// Derives the ids of a hierarchy built or read without them.
    ids: Option<IdsAt<'h>>,
}

/// One node an expression selects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hit {
    /// An element (its index in document order).
    Element(usize),
    /// An attribute of an element.
    Attribute(usize, String),
}

impl<'h> Flat<'h> {
    /// Flattens `h`.
    pub fn new(h: &'h Hierarchy) -> Flat<'h> {
        let mut entries = Vec::with_capacity(h.size() + 1);
        entries.push(Entry {
            what: What::Document,
            parent: 0,
            child: 0,
            end: 0,
        });
        entries.push(Entry {
            what: What::Page,
            parent: 0,
            child: 0,
            end: 0,
        });
        // Iterative pre-order walk: (node, its parent's index, its index
        // among its siblings).
        let mut stack: Vec<(&HNode, usize, usize)> = h
            .children
            .iter()
            .enumerate()
            .rev()
            .map(|(k, c)| (c, 1, k))
            .collect();
        while let Some((n, parent, child)) = stack.pop() {
            let index = entries.len();
            entries.push(Entry {
                what: What::Node(n),
                parent,
                child,
                end: 0,
            });
            stack.extend(
                n.children
                    .iter()
                    .enumerate()
                    .rev()
                    .map(|(k, c)| (c, index, k)),
            );
        }
        // Subtree ends: a node's subtree runs until the next entry whose
        // parent chain does not include it. Computed backwards: each end is
        // the largest end among its children, or itself plus one.
        let total = entries.len();
        for i in (0..total).rev() {
            if entries[i].end == 0 {
                entries[i].end = i + 1;
            }
            if i > 0 {
                let parent = entries[i].parent;
                let end = entries[i].end;
                if entries[parent].end < end {
                    entries[parent].end = end;
                }
            }
        }
        let ids = (!h.has_ids()).then(|| IdsAt::new(h));
        Flat { h, entries, ids }
    }

    fn children(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        let end = self.entries[i].end;
        let mut next = i + 1;
        std::iter::from_fn(move || {
            if next >= end {
                return None;
            }
            let this = next;
            next = self.entries[this].end;
            Some(this)
        })
    }

    fn name(&self, i: usize) -> &'static str {
        match self.entries[i].what {
            What::Document => "",
            What::Page => "page",
            What::Node(n) => n.kind.name(),
        }
    }

    fn is_element(&self, i: usize) -> bool {
        !matches!(self.entries[i].what, What::Document)
    }

    /// The value of attribute `name` of element `i`, as the XML has it.
    fn attribute(&self, i: usize, name: &str) -> Option<&str> {
        match self.entries[i].what {
            What::Document => None,
            What::Page => match name {
                "label" => self.h.title.as_deref(),
                "url" => self.h.url.as_deref(),
                "lang" => self.h.lang.as_deref(),
                "version" => Some(VOCABULARY_VERSION),
                "xpath" => Some("/page"),
                _ => None,
            },
            What::Node(n) => match name {
                "label" => n.label.as_deref(),
                "key" => n.key.as_deref(),
                "col" => n.col.as_deref(),
                "num" => n.num.as_deref(),
                "xpath" => Some(n.xpath.as_str()),
                _ => n
                    .attrs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.as_str()),
            },
        }
    }

    /// The nodes `expr` selects, in document order; `None` when `expr` is
    /// not one of the forms answered natively.
    pub fn select(&self, expr: &str) -> Option<Vec<Hit>> {
        // Without ids, a predicate on them is left to libxml2 (which is
        // given the XML with ids written).
        if self.ids.is_some() && expr.contains("xpath") {
            return None;
        }
        let path = parse(expr)?;
        let mut context = vec![0usize];
        for step in &path.steps {
            let mut out = Vec::new();
            for &c in &context {
                if step.descendant {
                    let end = self.entries[c].end;
                    for d in c..end {
                        self.step_from(d, step, &mut out);
                    }
                } else {
                    self.step_from(c, step, &mut out);
                }
            }
            out.sort_unstable();
            out.dedup();
            context = out;
        }
        Some(match &path.attribute {
            None => context.into_iter().map(Hit::Element).collect(),
            Some(name) => context
                .into_iter()
                .filter(|&i| self.attribute(i, name).is_some())
                .map(|i| Hit::Attribute(i, name.clone()))
                .collect(),
        })
    }

    /// The children of `parent` that `step` selects, appended to `out`.
    fn step_from(&self, parent: usize, step: &Step, out: &mut Vec<usize>) {
        let mut list: Vec<usize> = self
            .children(parent)
            .filter(|&i| step.name.as_deref().is_none_or(|n| n == self.name(i)))
            .collect();
        for pred in &step.predicates {
            let mut position = 0usize;
            list.retain(|&i| {
                position += 1;
                match pred {
                    Predicate::Position(p) => position == *p,
                    Predicate::Equals(attr, value) => self.attribute(i, attr) == Some(value),
                    Predicate::StartsWith(attr, prefix) => self
                        .attribute(i, attr)
                        .is_some_and(|v| v.starts_with(prefix.as_str())),
                }
            });
        }
        out.extend(list);
    }

    /// The id of a hit, as libxml2's evaluation reports it.
    pub fn id(&self, hit: &Hit) -> String {
        match hit {
            Hit::Element(i) => self.element_id(*i),
            Hit::Attribute(i, name) => format!("{}/@{name}", self.element_id(*i)),
        }
    }

    /// Entry `i`'s id: the one its node holds, or derived for it alone
    /// when the hierarchy has none.
    fn element_id(&self, i: usize) -> String {
        let Some(ids) = &self.ids else {
            return self.attribute(i, "xpath").unwrap_or("").to_owned();
        };
        let mut path = Vec::new();
        let mut at = i;
        while at > 1 {
            let Some(e) = self.entries.get(at) else { break };
            path.push(e.child);
            at = e.parent;
        }
        if at == 0 {
            // The document node: it has no id.
            return String::new();
        }
        path.reverse();
        ids.id_at(&path).unwrap_or_default()
    }

    /// The number a threshold reads from a hit: an attribute's value, an
    /// element's `num` (when not empty), or a leaf element's text. `None`
    /// for an element with children and no `num`: its XPath string value
    /// includes the XML's indentation, which only libxml2 can give.
    pub fn value(&self, hit: &Hit) -> Option<String> {
        match hit {
            Hit::Attribute(i, name) => self.attribute(*i, name).map(str::to_owned),
            Hit::Element(i) => {
                if let Some(num) = self.attribute(*i, "num").filter(|n| !n.is_empty()) {
                    return Some(num.to_owned());
                }
                match self.entries[*i].what {
                    What::Node(n) if n.children.is_empty() => {
                        Some(n.text.clone().unwrap_or_default())
                    }
                    What::Page if self.h.children.is_empty() => Some(String::new()),
                    _ => None,
                }
            }
        }
    }

    /// The labels (`label`, `key`, `col`) of the element a hit belongs to
    /// and its ancestors below the page, joined by ` / `.
    pub fn context(&self, hit: &Hit) -> String {
        let (Hit::Element(i) | Hit::Attribute(i, _)) = hit;
        let mut chain = Vec::new();
        let mut at = *i;
        while at > 1 {
            chain.push(at);
            at = self.entries[at].parent;
        }
        let mut labels = Vec::new();
        for &e in chain.iter().rev() {
            for name in ["label", "key", "col"] {
                if let Some(v) = self.attribute(e, name) {
                    labels.push(v);
                }
            }
        }
        labels.join(" / ")
    }

    /// The value of attribute `name` of the element a hit belongs to (a
    /// row's `key`, a cell's `col`).
    pub fn attribute_of(&self, hit: &Hit, name: &str) -> Option<&str> {
        let (Hit::Element(i) | Hit::Attribute(i, _)) = hit;
        self.attribute(*i, name)
    }

    /// The elements holding a number (a non-empty `num` that reads as a
    /// finite number) within the subtrees of `roots`, in document order,
    /// at most `cap`: each with its id and the tag of the first root (in
    /// `roots`' order) whose subtree holds it. An attribute hit stands for
    /// its element.
    pub fn numbers_within<T: Copy>(&self, roots: &[(Hit, T)], cap: usize) -> Vec<(String, T, f64)> {
        let mut tag: Vec<Option<T>> = vec![None; self.entries.len()];
        for (hit, t) in roots {
            let (Hit::Element(i) | Hit::Attribute(i, _)) = hit;
            if let Some(slot) = tag.get_mut(*i) {
                slot.get_or_insert(*t);
            }
        }
        let mut out = Vec::new();
        for i in 1..self.entries.len() {
            if out.len() >= cap {
                break;
            }
            if tag[i].is_none() {
                tag[i] = tag[self.entries[i].parent];
            }
            let Some(t) = tag[i] else { continue };
            let value = self
                .attribute(i, "num")
                .and_then(|n| n.parse::<f64>().ok())
                .filter(|v| v.is_finite());
            if let Some(value) = value {
                out.push((self.element_id(i), t, value));
            }
        }
        out
    }

    /// The elements whose ids are among `ids`, in document order (one
    /// walk over every element: for the ids libxml2 gives for what the
    /// native side declined).
    pub fn elements_with_ids(&self, ids: &[&str]) -> Vec<Hit> {
        let wanted: std::collections::HashSet<&str> = ids.iter().copied().collect();
        (1..self.entries.len())
            .filter(|&i| wanted.contains(self.element_id(i).as_str()))
            .map(Hit::Element)
            .collect()
    }

    /// Whether `i` is an element (not the document node).
    pub fn element(&self, hit: &Hit) -> bool {
        matches!(hit, Hit::Element(i) if self.is_element(*i))
    }
}

/// A parsed location path of the native forms.
#[derive(Debug, PartialEq)]
struct Path {
    steps: Vec<Step>,
    /// The final attribute step, if any.
    attribute: Option<String>,
}

#[derive(Debug, PartialEq)]
struct Step {
    /// `//` before the step.
    descendant: bool,
    /// The element name; `None` for `*`.
    name: Option<String>,
    predicates: Vec<Predicate>,
}

#[derive(Debug, PartialEq)]
enum Predicate {
    Position(usize),
    Equals(String, String),
    StartsWith(String, String),
}

/// A cursor over an expression, for the native forms only.
struct Cursor<'a> {
    rest: &'a str,
}

impl<'a> Cursor<'a> {
    fn skip_space(&mut self) {
        self.rest = self
            .rest
            .trim_start_matches([' ', '\t', '\n', '\r'].as_slice());
    }

    fn eat(&mut self, token: &str) -> bool {
        self.skip_space();
        match self.rest.strip_prefix(token) {
            Some(rest) => {
                self.rest = rest;
                true
            }
            None => false,
        }
    }

    fn name(&mut self) -> Option<&'a str> {
        self.skip_space();
        let mut chars = self.rest.char_indices();
        let (_, first) = chars.next()?;
        if !(first.is_ascii_alphabetic() || first == '_') {
            return None;
        }
        let end = chars
            .find(|(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
            .map_or(self.rest.len(), |(i, _)| i);
        let (name, rest) = self.rest.split_at(end);
        self.rest = rest;
        Some(name)
    }

    fn quoted(&mut self) -> Option<String> {
        self.skip_space();
        let quote = self
            .rest
            .chars()
            .next()
            .filter(|c| matches!(c, '\'' | '"'))?;
        let body = &self.rest[1..];
        let close = body.find(quote)?;
        self.rest = &body[close + 1..];
        Some(body[..close].to_owned())
    }

    fn literal(&mut self) -> Option<String> {
        let saved = self.rest;
        if self.eat("concat") && self.eat("(") {
            let mut value = self.quoted()?;
            let mut parts = 1;
            while self.eat(",") {
                value.push_str(&self.quoted()?);
                parts += 1;
            }
            // concat() needs two arguments at least.
            if parts < 2 || !self.eat(")") {
                return None;
            }
            return Some(value);
        }
        self.rest = saved;
        self.quoted()
    }

    fn attribute(&mut self) -> Option<String> {
        if !self.eat("@") {
            return None;
        }
        // No space is allowed inside `@name` only by convention; XPath
        // allows it, and so does this.
        self.name().map(str::to_owned)
    }

    fn predicate(&mut self) -> Option<Predicate> {
        self.skip_space();
        let saved = self.rest;
        if let Some(end) = self
            .rest
            .find(|c: char| !c.is_ascii_digit())
            .filter(|&e| e > 0)
        {
            let (digits, rest) = self.rest.split_at(end);
            self.rest = rest;
            self.skip_space();
            if self.rest.starts_with(']') {
                return digits.parse().ok().map(Predicate::Position);
            }
            return None;
        }
        self.rest = saved;
        if let Some(attr) = self.attribute() {
            if !self.eat("=") {
                return None;
            }
            return Some(Predicate::Equals(attr, self.literal()?));
        }
        self.rest = saved;
        if self.eat("starts-with") {
            if !self.eat("(") {
                return None;
            }
            let attr = self.attribute()?;
            if !self.eat(",") {
                return None;
            }
            let prefix = self.literal()?;
            return self.eat(")").then_some(Predicate::StartsWith(attr, prefix));
        }
        self.rest = saved;
        let value = self.literal()?;
        if !self.eat("=") {
            return None;
        }
        Some(Predicate::Equals(self.attribute()?, value))
    }
}

/// Parses `expr` if it is one of the native forms.
fn parse(expr: &str) -> Option<Path> {
    let mut c = Cursor { rest: expr };
    let mut steps = Vec::new();
    let mut attribute = None;
    loop {
        c.skip_space();
        if c.rest.is_empty() {
            break;
        }
        if attribute.is_some() {
            return None;
        }
        let descendant = if c.eat("//") {
            true
        } else if c.eat("/") {
            false
        } else {
            return None;
        };
        c.skip_space();
        if c.rest.starts_with('@') {
            attribute = Some(c.attribute()?);
            if descendant {
                // `//@a` takes attributes of every descendant: leave it
                // to libxml2.
                return None;
            }
            continue;
        }
        let name = if c.eat("*") {
            None
        } else {
            let name = c.name()?;
            c.skip_space();
            // `text()`, `node()`, axes (`child::`) are libxml2's.
            if c.rest.starts_with('(') || c.rest.starts_with("::") {
                return None;
            }
            Some(name.to_owned())
        };
        let mut predicates = Vec::new();
        while c.eat("[") {
            predicates.push(c.predicate()?);
            if !c.eat("]") {
                return None;
            }
        }
        steps.push(Step {
            descendant,
            name,
            predicates,
        });
    }
    (!steps.is_empty()).then_some(Path { steps, attribute })
}

/// A hierarchy to evaluate XPath on: natively where the expression
/// allows, with libxml2 on its XML otherwise (written and parsed at most
/// once, on first need).
pub struct Evaluator<'h> {
    h: &'h Hierarchy,
    flat: Flat<'h>,
    doc: OnceCell<HierarchyDoc>,
}

impl<'h> Evaluator<'h> {
    /// An evaluator over `h`.
    pub fn new(h: &'h Hierarchy) -> Evaluator<'h> {
        Evaluator {
            h,
            flat: Flat::new(h),
            doc: OnceCell::new(),
        }
    }

    /// The flattened hierarchy, for native answers.
    pub fn flat(&self) -> &Flat<'h> {
        &self.flat
    }

    /// The hierarchy's XML parsed by libxml2, for what the native side
    /// declines.
    pub fn doc(&self) -> Result<&HierarchyDoc, XPathError> {
        if let Some(doc) = self.doc.get() {
            return Ok(doc);
        }
        let xml = if self.h.has_ids() {
            to_xml(self.h, XmlOptions::default())
        } else {
            // libxml2 answers over the XML semclip publishes: ids written.
            let mut h = self.h.clone();
            assign_ids(&mut h);
            to_xml(&h, XmlOptions::default())
        };
        let doc = HierarchyDoc::parse(&xml)?;
        Ok(self.doc.get_or_init(|| doc))
    }

    /// Whether `expr` selects anything (a non-empty node-set, or a
    /// finite number, a non-empty string or any boolean).
    pub fn selects(&self, expr: &str) -> bool {
        if let Some(hits) = self.flat.select(expr) {
            return !hits.is_empty();
        }
        self.doc()
            .and_then(|doc| doc.evaluate(expr))
            .is_ok_and(|value| value.selects_something())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xpath::XPathValue;

    fn page() -> Hierarchy {
        Hierarchy::from_html(
            "<html lang=en><title>Quotes</title><h1>Board</h1>\
             <table><caption>Shares</caption><tr><th>Code<th>Last<th>Change</tr>\
             <tr><td>GAZP<td>301.5<td>-1.2%</tr><tr><td>SBER<td>250<td>0.5%</tr>\
             <tr><td>it's \"q\"<td>7<td>1</tr></table>\
             <ul><li>one<li>two<li>three</ul><h2>Board</h2><p>12</p>",
            None,
        )
    }

    #[test]
    fn the_native_forms_parse_and_others_are_declined() {
        for native in [
            "/page",
            "/page/section[@label='Board'][1]/table/row[@key='GAZP']/cell[@col='Last']/@num",
            "//row[@key=\"SBER\"]/cell[2]",
            "//cell[starts-with(@col, 'La')]",
            "/page/*[1]//item[ 3 ]",
            "//row[@key=concat('it', \"'\", 's \"q\"')]",
            "//row['GAZP' = @key]",
        ] {
            assert!(parse(native).is_some(), "{native}");
        }
        for declined in [
            "count(//row)",
            "//row[last()]",
            "//row/text()",
            "//row[@key='a' or @key='b']",
            "/page/child::section",
            "//@num",
            "//row[1.5]",
            "page/section",
            "//row[@key='unterminated]",
            "//row[@key=concat('one')]",
            "/page/@label/x",
            "",
        ] {
            assert!(parse(declined).is_none(), "{declined}");
        }
    }

    #[test]
    fn native_answers_match_libxml2_on_a_page() {
        let h = page();
        let ev = Evaluator::new(&h);
        let doc = ev.doc().unwrap_or_else(|e| panic!("{e}"));
        let mut exprs: Vec<String> = vec![
            "/page".into(),
            "/page/@label".into(),
            "/page/@lang".into(),
            "//section".into(),
            "//section[@label='Board']".into(),
            "//section[@label='Board'][2]".into(),
            "//row[1]".into(),
            "//row[@key='GAZP']/cell[@col='Last']/@num".into(),
            "//cell[2]".into(),
            "//*[@col='Change'][1]".into(),
            "//item[2]".into(),
            "/page/*".into(),
            "//list/item[starts-with(@label, 't')]".into(),
            "//nothing".into(),
            "//row[@key='GAZP'][2]".into(),
        ];
        fn ids(n: &HNode, out: &mut Vec<String>) {
            out.push(n.xpath.clone());
            out.push(format!("{}/@num", n.xpath));
            for c in &n.children {
                ids(c, out);
            }
        }
        for c in &h.children {
            ids(c, &mut exprs);
        }
        for expr in &exprs {
            let native = ev
                .flat()
                .select(expr)
                .unwrap_or_else(|| panic!("declined {expr}"));
            let native: Vec<String> = native.iter().map(|hit| ev.flat().id(hit)).collect();
            let Ok(XPathValue::Nodes(nodes)) = doc.evaluate(expr) else {
                panic!("libxml2 gives no node-set for {expr}");
            };
            let libxml: Vec<String> = nodes.into_iter().filter_map(|n| n.id).collect();
            assert_eq!(native, libxml, "{expr}");
        }
    }

    #[test]
    fn a_hierarchy_without_ids_gives_the_same_answers_and_ids() {
        let with = page();
        let mut without = with.clone();
        fn clear(nodes: &mut [HNode]) {
            for n in nodes {
                n.xpath.clear();
                clear(&mut n.children);
            }
        }
        clear(&mut without.children);
        assert!(with.has_ids() && !without.has_ids());
        let (a, b) = (Evaluator::new(&with), Evaluator::new(&without));
        let mut exprs: Vec<String> = vec![
            "/page".into(),
            "/page/@label".into(),
            "//section[@label='Board']".into(),
            "//row[@key='GAZP']/cell[@col='Last']/@num".into(),
            "//cell[2]".into(),
            "//*[@col='Change'][1]".into(),
            "/page/*".into(),
        ];
        fn ids(n: &HNode, out: &mut Vec<String>) {
            out.push(n.xpath.clone());
            for c in &n.children {
                ids(c, out);
            }
        }
        for c in &with.children {
            ids(c, &mut exprs);
        }
        for expr in &exprs {
            let of = |ev: &Evaluator<'_>| -> Option<Vec<String>> {
                let hits = ev.flat().select(expr)?;
                Some(hits.iter().map(|hit| ev.flat().id(hit)).collect())
            };
            let want = of(&a).unwrap_or_else(|| panic!("declined {expr}"));
            assert!(!want.is_empty(), "{expr}");
            if expr.contains("xpath") {
                // Left to libxml2, over the XML with the ids written.
                assert_eq!(of(&b), None, "{expr}");
            } else {
                assert_eq!(of(&b).as_ref(), Some(&want), "{expr}");
            }
            assert!(a.selects(expr) && b.selects(expr), "{expr}");
        }
        // The ids themselves: every id selects its node on either side, the
        // id-less side through libxml2 on the XML written with ids.
        let doc = b.doc().unwrap_or_else(|e| panic!("{e}"));
        for c in &with.children {
            let Ok(XPathValue::Nodes(nodes)) = doc.evaluate(&format!(
                "//*[@xpath={}]",
                crate::hierarchy::xpath_literal(&c.xpath)
            )) else {
                panic!("no node-set for {}", c.xpath);
            };
            let got: Vec<String> = nodes.into_iter().filter_map(|n| n.id).collect();
            assert_eq!(got, vec![c.xpath.clone()]);
        }
    }
}
