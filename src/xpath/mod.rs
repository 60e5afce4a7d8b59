//! XPath 1.0 over the hierarchy document: a syntax checker and an evaluator.
//!
//! Takes an XPath 1.0 expression (a threshold, a clip, an element's `xpath` id) and,
//! for evaluation, the hierarchy document as XML text. Gives either an
//! [`XPathSyntaxError`] that points at the problem (byte offset, character column and
//! a caret under the expression) or the expression's value on the document, an
//! [`XPathValue`]: a node-set of [`NodeMatch`]es, each carrying the node's id, or a
//! number, a boolean or a string.
//!
//! The module has three parts:
//!
//! - [`check_syntax`] and [`result_type`] (in `syntax/`) run a tokenizer (`lex.rs`)
//!   that follows the lexical rules of XPath 1.0 (§3.7, with its rules for telling
//!   `*` the multiplication from `*` the name test and an operator name from a name,
//!   a function name or an axis name) and a recursive-descent parser (`parse.rs`) of
//!   the whole XPath 1.0 grammar, before libxml2 ever sees the expression. Besides
//!   syntax they reject what cannot work on the hierarchy document: functions other
//!   than the 27 core functions, or with the wrong number of arguments; variables
//!   (none are bound); namespace prefixes (the document has no namespaces); and XPath
//!   1.0's static type errors, such as a predicate, a `/` or a `|` applied to
//!   something that is not a node-set, or `count()` of a number. XPath 1.0 types are
//!   static, so the parser also works out the type of the result.
//! - [`HierarchyDoc`] (in this file) parses the document with libxml2 and evaluates
//!   checked expressions with libxml2's exact XPath 1.0 engine, through one reused
//!   XPath context. The statically known result type decides how libxml2's answer
//!   is read.
//! - [`native`] answers the location paths thresholds and clips use in practice on
//!   the hierarchy itself, without writing or parsing XML, and hands everything else
//!   to [`HierarchyDoc`]; both give the same answers.

pub mod native;
mod syntax;

use std::fmt;

use libxml::parser::{Parser as XmlParser, ParserOptions, XmlParseFailure};
use libxml::readonly::RoNode;
use libxml::tree::{Document, Node, NodeType};
use libxml::xpath::{Context, Object};

use syntax::{Analysis, analyze};
pub use syntax::{XPathSyntaxError, XPathType, check_syntax, result_type};

/// The attribute of every hierarchy element that holds the XPath selecting it.
const ID_ATTRIBUTE: &str = "xpath";

/// libxml2's options for documents semclip made itself: strict (no
/// recovery), silent (problems come back as values), no network, UTF-8
/// whatever the declaration says (a `&str` is UTF-8).
pub(crate) fn strict_options() -> ParserOptions<'static> {
    ParserOptions {
        recover: false,
        no_error: true,
        no_warning: true,
        no_net: true,
        encoding: Some("UTF-8"),
        ..ParserOptions::default()
    }
}

/// An error of this stage: checking an expression, parsing the document or evaluating.
#[derive(Debug, thiserror::Error)]
pub enum XPathError {
    /// The expression is not valid XPath 1.0 over the hierarchy document.
    #[error(transparent)]
    Syntax(#[from] XPathSyntaxError),
    /// The hierarchy document is not well-formed XML.
    #[error("the hierarchy document is not well-formed XML{}: {cause}", location(*.line, *.column))]
    Xml {
        /// libxml2's description of the first problem.
        cause: String,
        /// The 1-based line of the problem in the document, when libxml2 gives it.
        line: Option<usize>,
        /// The 1-based column of the problem in that line, when libxml2 gives it.
        column: Option<usize>,
    },
    /// libxml2 could not set up XPath evaluation for a parsed document.
    #[error("libxml2 could not create an XPath context for the hierarchy document")]
    Context,
    /// libxml2 failed to evaluate an expression that passed the syntax check.
    #[error("libxml2 could not evaluate `{expression}`: {cause}")]
    Evaluation {
        /// The expression.
        expression: String,
        /// What libxml2 reported, or what could not be read from its answer.
        cause: String,
    },
    /// A node-set was needed (as by [`HierarchyDoc::select_ids`]) but the expression gives another type.
    #[error("`{expression}` gives a {found}, not a node-set")]
    NotNodeSet {
        /// The expression.
        expression: String,
        /// The type the expression gives.
        found: XPathType,
    },
}

/// Renders " at line L, column C" for [`XPathError::Xml`], or nothing when unknown.
fn location(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(line), Some(column)) => format!(" at line {line}, column {column}"),
        (Some(line), None) => format!(" at line {line}"),
        _ => String::new(),
    }
}

/// The value of an expression on the hierarchy document.
#[derive(Debug, Clone, PartialEq)]
pub enum XPathValue {
    /// A node-set, in document order.
    Nodes(Vec<NodeMatch>),
    /// A number. libxml2 hands numbers over as XPath's string form, which keeps 15
    /// significant digits, so a value such as `1 div 3` reads back as 0.333333333333333.
    Number(f64),
    /// A boolean.
    Boolean(bool),
    /// A string.
    String(String),
}

impl XPathValue {
    /// The value's type.
    pub fn value_type(&self) -> XPathType {
        match self {
            XPathValue::Nodes(_) => XPathType::NodeSet,
            XPathValue::Number(_) => XPathType::Number,
            XPathValue::Boolean(_) => XPathType::Boolean,
            XPathValue::String(_) => XPathType::String,
        }
    }

    /// Whether the value counts as selecting something (for clips and
    /// layout monitoring): a non-empty node-set, a finite number, a
    /// non-empty string, or any boolean.
    pub fn selects_something(&self) -> bool {
        match self {
            XPathValue::Nodes(nodes) => !nodes.is_empty(),
            XPathValue::Number(n) => n.is_finite(),
            XPathValue::String(s) => !s.is_empty(),
            XPathValue::Boolean(_) => true,
        }
    }

    /// The value converted as XPath's `boolean()` converts it: a node-set is true
    /// when not empty, a number when neither zero nor NaN, a string when not empty.
    pub fn to_boolean(&self) -> bool {
        match self {
            XPathValue::Nodes(nodes) => !nodes.is_empty(),
            XPathValue::Number(number) => *number != 0.0 && !number.is_nan(),
            XPathValue::Boolean(boolean) => *boolean,
            XPathValue::String(string) => !string.is_empty(),
        }
    }
}

/// The kind of a node in a node-set result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeKind {
    /// An element.
    Element,
    /// An attribute.
    Attribute,
    /// A text node (CDATA sections included).
    Text,
    /// Any other node: the root (document) node, a comment, a processing
    /// instruction or a namespace node.
    Other,
}

/// One node of a node-set result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeMatch {
    /// What kind of node this is.
    pub kind: NodeKind,
    /// The element's or attribute's name, a processing instruction's target, and ""
    /// for text, comments, namespace nodes and the root node.
    pub name: String,
    /// An XPath expression that selects the node: an element's `xpath` attribute; for
    /// an attribute, the owner element's `xpath` followed by `/@name`; for a text node,
    /// the parent's `xpath` followed by `/text()` (`/text()[n]` when the parent has
    /// several text nodes); `/` for the root node. `None` when the element involved
    /// has no `xpath` attribute and for comments, processing instructions and
    /// namespace nodes.
    pub id: Option<String>,
    /// The node's XPath string-value (for an element, all its descendant text).
    pub value: String,
}

/// A parsed hierarchy document ready for queries.
///
/// It holds libxml2 types, so it is neither `Send` nor `Sync`: create it on the thread
/// that uses it. It keeps one XPath context for all its queries.
pub struct HierarchyDoc {
    // Declared in drop order: the context and the root node wrapper go before the document.
    context: Context,
    root: Node,
    document: Document,
}

impl fmt::Debug for HierarchyDoc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let root = self
            .document
            .get_root_readonly()
            .map(RoNode::get_name)
            .unwrap_or_default();
        f.debug_struct("HierarchyDoc")
            .field("root_element", &root)
            .finish_non_exhaustive()
    }
}

impl HierarchyDoc {
    /// Parses the hierarchy document from its XML text.
    ///
    /// The text is read as UTF-8 whatever its XML declaration says, since a `&str`
    /// is UTF-8. Malformed XML is an [`XPathError::Xml`] naming libxml2's first
    /// complaint and where it is; libxml2 prints nothing.
    pub fn parse(xml: &str) -> Result<Self, XPathError> {
        let document =
            match XmlParser::default().parse_string_with_diagnostics(xml, strict_options()) {
                Ok((document, _warnings)) => document,
                Err(failure) => return Err(xml_error(failure)),
            };
        let mut context = Context::new(&document).map_err(|()| XPathError::Context)?;
        // Relative expressions start at the root node, as in XSLT: `page/section` works.
        let root = document.as_node();
        context
            .set_context_node(&root)
            .map_err(|()| XPathError::Context)?;
        Ok(HierarchyDoc {
            context,
            root,
            document,
        })
    }

    /// Evaluates `expr` on the document.
    ///
    /// The expression is checked first ([`check_syntax`]), so a mistake comes back
    /// as an [`XPathError::Syntax`] with its column; its static type decides which
    /// [`XPathValue`] variant it gives. Relative expressions start at the root node.
    pub fn evaluate(&self, expr: &str) -> Result<XPathValue, XPathError> {
        let analysis = analyze(expr)?;
        let object = self.run(expr, &analysis)?;
        Ok(match analysis.ty {
            XPathType::NodeSet => XPathValue::Nodes(
                object
                    .get_readonly_nodes_as_vec()
                    .into_iter()
                    .map(node_match)
                    .collect(),
            ),
            XPathType::Number => XPathValue::Number(read_number(expr, &object)?),
            XPathType::Boolean => XPathValue::Boolean(read_boolean(expr, &object)?),
            XPathType::String => XPathValue::String(object.to_string()),
        })
    }

    /// The ids ([`NodeMatch::id`]) of the nodes `expr` selects, in document order;
    /// for elements, their `xpath` attributes. Nodes without an id are left out.
    ///
    /// Cheaper than [`evaluate`](Self::evaluate) as it reads no string-values. An
    /// expression that does not give a node-set is an [`XPathError::NotNodeSet`].
    pub fn select_ids(&self, expr: &str) -> Result<Vec<String>, XPathError> {
        let analysis = analyze(expr)?;
        if analysis.ty != XPathType::NodeSet {
            return Err(XPathError::NotNodeSet {
                expression: expr.to_owned(),
                found: analysis.ty,
            });
        }
        Ok(self
            .run(expr, &analysis)?
            .get_readonly_nodes_as_vec()
            .into_iter()
            .filter_map(node_id)
            .collect())
    }

    /// Runs a checked expression through libxml2 from the root node.
    fn run(&self, expr: &str, analysis: &Analysis) -> Result<Object, XPathError> {
        self.context
            .node_evaluate_checked(&analysis.libxml_expression(expr), &self.root)
            .map_err(|error| XPathError::Evaluation {
                expression: expr.to_owned(),
                cause: error.message.as_deref().map_or_else(
                    || "libxml2 gave no detail".to_owned(),
                    |message| message.trim().to_owned(),
                ),
            })
    }
}

/// The [`XPathError::Xml`] for a failed parse.
fn xml_error(failure: XmlParseFailure) -> XPathError {
    let XmlParseFailure::ParseFailed(diagnostics) = failure else {
        return XPathError::Xml {
            cause: failure.to_string(),
            line: None,
            column: None,
        };
    };
    match diagnostics.first() {
        Some(first) => XPathError::Xml {
            cause: first
                .message
                .as_deref()
                .map_or("libxml2 gave no detail", str::trim)
                .to_owned(),
            line: first.line.and_then(|line| usize::try_from(line).ok()),
            column: first.col.and_then(|column| usize::try_from(column).ok()),
        },
        None => XPathError::Xml {
            cause: "libxml2 returned no document".to_owned(),
            line: None,
            column: None,
        },
    }
}

/// Reads a number result from libxml2's XPath string form of it.
fn read_number(expr: &str, object: &Object) -> Result<f64, XPathError> {
    let text = object.to_string();
    match text.as_str() {
        "NaN" => Ok(f64::NAN),
        "Infinity" => Ok(f64::INFINITY),
        "-Infinity" => Ok(f64::NEG_INFINITY),
        _ => text.parse().map_err(|_| XPathError::Evaluation {
            expression: expr.to_owned(),
            cause: format!("libxml2 gave '{text}' where a number was expected"),
        }),
    }
}

/// Reads a boolean result from libxml2's XPath string form of it.
fn read_boolean(expr: &str, object: &Object) -> Result<bool, XPathError> {
    match object.to_string().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        other => Err(XPathError::Evaluation {
            expression: expr.to_owned(),
            cause: format!("libxml2 gave '{other}' where a boolean was expected"),
        }),
    }
}

/// What kind of node this is, and whether it is the root node.
fn kind_of(node: RoNode) -> (NodeKind, bool) {
    match node.get_type() {
        Some(NodeType::ElementNode) => (NodeKind::Element, false),
        Some(NodeType::AttributeNode) => (NodeKind::Attribute, false),
        Some(NodeType::TextNode | NodeType::CDataSectionNode) => (NodeKind::Text, false),
        Some(NodeType::DocumentNode | NodeType::HtmlDocumentNode) => (NodeKind::Other, true),
        _ => (NodeKind::Other, false),
    }
}

fn node_match(node: RoNode) -> NodeMatch {
    let (kind, _) = kind_of(node);
    let name = match (kind, node.get_type()) {
        (NodeKind::Element | NodeKind::Attribute, _) | (_, Some(NodeType::PiNode)) => {
            node.get_name()
        }
        // libxml2 names text and comment nodes "text" and "comment", and a namespace
        // node's name slot holds its URI; XPath names none of them.
        _ => String::new(),
    };
    NodeMatch {
        kind,
        name,
        id: node_id(node),
        value: node.get_content(),
    }
}

/// The id of a node, as [`NodeMatch::id`] describes it.
fn node_id(node: RoNode) -> Option<String> {
    match kind_of(node) {
        (NodeKind::Element, _) => node.get_property(ID_ATTRIBUTE),
        (NodeKind::Attribute, _) => {
            let owner = node.get_parent()?.get_property(ID_ATTRIBUTE)?;
            Some(format!("{owner}/@{}", node.get_name()))
        }
        (NodeKind::Text, _) => text_id(node),
        (NodeKind::Other, true) => Some("/".to_owned()),
        (NodeKind::Other, false) => None,
    }
}

/// `parent/text()`, or `parent/text()[n]` when the parent has several text nodes.
fn text_id(node: RoNode) -> Option<String> {
    let parent = node.get_parent()?;
    let parent_id = parent.get_property(ID_ATTRIBUTE)?;
    let mut count = 0;
    let mut index = 0;
    let mut child = parent.get_first_child();
    while let Some(current) = child {
        if kind_of(current).0 == NodeKind::Text {
            count += 1;
            if current.node_ptr() == node.node_ptr() {
                index = count;
            }
        }
        child = current.get_next_sibling();
    }
    Some(if count > 1 {
        format!("{parent_id}/text()[{index}]")
    } else {
        format!("{parent_id}/text()")
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]
mod tests {
    use super::syntax::{MAX_NESTING, SNIPPET_WIDTH};
    use super::*;

    /// Builds the `xpath` id of a row or cell of the Shares table.
    const SHARES: &str = "/page/section[@label='Shares']/table[@label='Shares']";

    fn sample() -> String {
        let row = |key: &str| format!("{SHARES}/row[@key='{key}']");
        let cell = |key: &str, col: &str| format!("{}/cell[@col='{col}']", row(key));
        let quoted =
            r#"/page/section[@label=concat('He said &quot;it', &quot;'&quot;, 's&quot;')]"#;
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<page label="Quotes" lang="en" version="2" xpath="/page">
  <!-- made by hand -->
  <section label="Shares" xpath="/page/section[@label='Shares']">
    <table label="Shares" keycol="Ticker" xpath="{SHARES}">
      <row key="GAZP" xpath="{}">
        <cell col="Ticker" xpath="{}">GAZP</cell>
        <cell col="Last" num="251.3" xpath="{}">251.30</cell>
      </row>
      <row key="SBER" xpath="{}">
        <cell col="Ticker" xpath="{}">SBER</cell>
        <cell col="Last" num="300.5" xpath="{}">300.50</cell>
      </row>
    </table>
  </section>
  <section label="He said &quot;it's&quot;" xpath="{quoted}">
    <para xpath="{quoted}/para">Мир <b xpath="{quoted}/para/b">жирный</b> текст</para>
  </section>
</page>"#,
            row("GAZP"),
            cell("GAZP", "Ticker"),
            cell("GAZP", "Last"),
            row("SBER"),
            cell("SBER", "Ticker"),
            cell("SBER", "Last"),
        )
    }

    fn doc() -> HierarchyDoc {
        HierarchyDoc::parse(&sample()).unwrap()
    }

    const VALID: &[&str] = &[
        // location paths, absolute and relative, abbreviated
        "/",
        "/page",
        "page",
        "//row",
        ".",
        "..",
        "*",
        "/*/*",
        "@*",
        "//@key",
        "//row/@*",
        "//row/..",
        "//row/./cell",
        "..//cell",
        // non-ASCII names after a leading '/', as libxml2 reads them
        "/child::é",
        "//é",
        "cell[//ряд]",
        "/ | //row",
        "/page/section[@label='Shares']/table[@label='Shares']",
        "//row[@key='GAZP']/cell[@col='Last']",
        // all 13 axes
        "child::page",
        "descendant::row",
        "/descendant-or-self::node()/child::row",
        "//row/parent::node()",
        "//cell/ancestor::section",
        "//cell/ancestor-or-self::*",
        "//row/following-sibling::row[1]",
        "//row/preceding-sibling::row",
        "//row/following::cell",
        "//row/preceding::cell",
        "//row/attribute::key",
        "//row/namespace::*",
        "self::node()",
        "self::node()[1]",
        // node tests
        "//cell/text()",
        "//comment()",
        "//processing-instruction()",
        "//processing-instruction('xml-stylesheet')",
        "//node()",
        "@node()",
        // predicates, nested and chained
        "//row[cell[@col='Last'][@num > 1]]",
        "//row[position() = last()]",
        "//row[1][last()]",
        "//row[not(@key)]",
        "//*[@label='Щит']",
        "//данные",
        // filter expressions and unions
        "(//row)[last()]",
        "(//row | //cell)[1]/@xpath",
        "//row | //cell | //page",
        "id('x')/cell",
        // every core function, each arity
        "last()",
        "position()",
        "count(//row)",
        "local-name()",
        "local-name(//row)",
        "namespace-uri()",
        "namespace-uri(/*)",
        "name()",
        "name(/*)",
        "string()",
        "string(//page/@label)",
        "concat('a', 'b')",
        "concat('a', \"'\", 'b')",
        "concat(1, 2, 3, 4, 5, 6)",
        "starts-with('abc', 'a')",
        "contains(//page/@label, 'Q')",
        "substring-before('a-b', '-')",
        "substring-after('a-b', '-')",
        "substring('abc', 2)",
        "substring('abc', 2, 1)",
        "string-length()",
        "string-length('abc')",
        "normalize-space()",
        "normalize-space('  a  b ')",
        "translate('abc', 'abc', 'ABC')",
        "boolean(//row)",
        "not(//row)",
        "true()",
        "false()",
        "lang('en')",
        "number()",
        "number('1')",
        "sum(//cell/@num)",
        "floor(1.5)",
        "ceiling(1.5)",
        "round(1.5)",
        // numbers, literals, operators and precedence
        ".5",
        "5.",
        "5.5",
        "'10' > 9",
        "\"double\" = 'single'",
        "1 - -1",
        "--1",
        "- - 1",
        "1-1",
        "-//cell/@num",
        "1 div 2 mod 3",
        "(1 + 2) * 3",
        "1 = 1 and 2 != 3 or 4 < 5",
        "1 <= 2 and 2 >= 1 and 3 > 2",
        // names that look like operators, and '*' both ways
        "a-b",
        "//a-b",
        "a -b",
        "//div",
        "div",
        "div div div",
        "mod mod mod",
        "and and and",
        "a or or",
        "//div div //mod",
        "* * *",
        "*[1] * 2",
        "child::*",
        // whitespace between tokens
        "  //row  [ @key = 'GAZP' ]  ",
        "//row\n\t[@key='GAZP']",
        "count ( //row )",
        "child :: page",
        "//text ( )",
    ];

    #[test]
    fn valid_expressions_pass_the_checker_and_libxml2() {
        let doc = doc();
        for expr in VALID {
            if let Err(error) = check_syntax(expr) {
                panic!("{expr:?} was rejected:\n{error}");
            }
            if let Err(error) = doc.evaluate(expr) {
                panic!("{expr:?} failed in libxml2: {error}");
            }
        }
    }

    /// (expression, column, start of the message)
    const INVALID: &[(&str, usize, &str)] = &[
        ("", 1, "empty expression"),
        // Found by the differential test (tests/it/xpath_diff.rs): libxml2
        // takes `/` alone when a non-ASCII character follows it.
        (
            "cell[/é]",
            7,
            "libxml2 cannot read a step starting with 'é' right after a leading '/'; write /child::é",
        ),
        ("/ ряд", 3, "libxml2 cannot read a step starting with 'р'"),
        ("   ", 1, "empty expression"),
        (
            "//row[@key='GAZP'/cell",
            18,
            "expected ']' to close the predicate opened at column 6",
        ),
        (
            "//row[@key='GAZP'",
            18,
            "expected ']' to close the predicate opened at column 6",
        ),
        (
            "//row[@key='A' nd @b='B']",
            16,
            "expected ']' to close the predicate opened at column 6",
        ),
        ("//row[@key='GAZP]", 12, "unterminated string literal"),
        ("concat(\"a, 'b')", 8, "unterminated string literal"),
        ("//row[", 7, "expected an expression after '['"),
        ("//row[]", 7, "empty predicate"),
        ("//row[position() = ]", 20, "unexpected token ']'"),
        ("foo(1)", 1, "unknown function 'foo'"),
        ("//row[foo(@key)]", 7, "unknown function 'foo'"),
        (
            "cont(//row)",
            1,
            "unknown function 'cont'; did you mean 'count'?",
        ),
        (
            "ends-with(@key, 'P')",
            1,
            "unknown function 'ends-with'; XPath 1.0 has no",
        ),
        (
            "substring('abc')",
            1,
            "function 'substring' takes 2 or 3 arguments, got 1",
        ),
        (
            "concat('a')",
            1,
            "function 'concat' takes at least 2 arguments, got 1",
        ),
        ("count()", 1, "function 'count' takes 1 argument, got 0"),
        (
            "//row[true(1)]",
            7,
            "function 'true' takes no arguments, got 1",
        ),
        (
            "name(//a, //b)",
            1,
            "function 'name' takes 0 or 1 arguments, got 2",
        ),
        ("()", 2, "unexpected token ')'"),
        ("//row)", 6, "unmatched ')'"),
        ("//row[1]]", 9, "unmatched ']'"),
        ("1 2", 3, "trailing input after expression"),
        ("//row foo", 7, "trailing input after expression"),
        ("$x", 1, "variables are not supported"),
        ("//row[@key=$k]", 12, "variables are not supported"),
        (
            "a:b",
            1,
            "namespaces are not used in the hierarchy document",
        ),
        (
            "//x:*",
            3,
            "namespaces are not used in the hierarchy document",
        ),
        (
            "fn:count(//a)",
            1,
            "namespaces are not used in the hierarchy document",
        ),
        ("a: b", 2, "unexpected character ':'"),
        ("//row/", 7, "expected a location step after '/'"),
        ("//", 3, "expected a location step after '//'"),
        ("//row//[1]", 8, "expected a location step after '//'"),
        ("1 +", 4, "expected an expression after '+'"),
        (
            "count(//row) > 1 and",
            21,
            "expected an expression after 'and'",
        ),
        ("foo::bar", 1, "unknown axis 'foo'"),
        (
            "childs::row",
            1,
            "unknown axis 'childs'; did you mean 'child'?",
        ),
        ("child::", 8, "expected a node test after 'child::'"),
        ("//row/@", 8, "expected a node test after '@'"),
        ("text(1)", 6, "node test 'text()' takes no argument"),
        ("//text(", 8, "expected ')' to close 'text('"),
        (
            "processing-instruction(1)",
            24,
            "node test 'processing-instruction()' takes only a string literal",
        ),
        ("a == b", 3, "'==' is not an XPath operator"),
        ("a || b", 3, "'||' is not an XPath 1.0 operator"),
        ("a && b", 3, "unexpected character '&'"),
        ("!a", 1, "unexpected character '!'"),
        ("//row[@key # 1]", 12, "unexpected character '#'"),
        ("\u{a0}//row", 1, "unexpected character U+00A0"),
        ("'a\u{0}b'", 3, "character U+0000 is not allowed"),
        ("1e3", 2, "XPath 1.0 numbers have no exponent"),
        (
            "count(1)",
            7,
            "function 'count' takes a node-set, but this is a number",
        ),
        (
            "sum(//row/@key = 'A')",
            5,
            "function 'sum' takes a node-set, but this is a boolean",
        ),
        ("1 | //row", 1, "'|' joins node-sets, but this is a number"),
        (
            "//row | 'x'",
            9,
            "'|' joins node-sets, but this is a string",
        ),
        (
            "'a'[1]",
            4,
            "a predicate filters a node-set, but this is a string",
        ),
        (
            "count(//row)/x",
            13,
            "'/' continues a path from a node-set, but this is a number",
        ),
        (
            "//row[1/x]",
            8,
            "'/' continues a path from a node-set, but this is a number",
        ),
        (
            "//row[@num > 1//x]",
            15,
            "expected ']' to close the predicate opened at column 6",
        ),
        (
            ".[1]",
            2,
            "a predicate cannot follow '.' in XPath 1.0; write self::node()[...]",
        ),
        (
            "..[1]",
            3,
            "a predicate cannot follow '..' in XPath 1.0; write parent::node()[...]",
        ),
        (
            "concat('a', 'b'",
            16,
            "expected ',' or ')' in the arguments of 'concat' opened at column 7",
        ),
        (
            "(1 + 2",
            7,
            "expected ')' to close the '(' opened at column 1",
        ),
        ("$", 2, "expected a variable name after '$'"),
        // columns count characters, offsets count bytes
        ("//row[@key='é' and foo()]", 20, "unknown function 'foo'"),
        ("//ряд[@ключ='газ'][bar()]", 20, "unknown function 'bar'"),
    ];

    #[test]
    fn invalid_expressions_are_rejected_at_the_right_column() {
        for &(expr, column, message) in INVALID {
            let error = match check_syntax(expr) {
                Ok(()) => panic!("{expr:?} was accepted"),
                Err(error) => error,
            };
            assert_eq!(
                (error.column, error.message.starts_with(message)),
                (column, true),
                "{expr:?} gave column {} {:?}",
                error.column,
                error.message
            );
            assert_eq!(error.expression, expr);
            assert_eq!(error.column, expr[..error.offset].chars().count() + 1);
        }
    }

    #[test]
    fn offsets_are_bytes_and_columns_are_characters() {
        let error = check_syntax("//row[@key='é' and foo()]").unwrap_err();
        assert_eq!((error.offset, error.column), (20, 20));
        let error = check_syntax("//ряд[@ключ='газ'][bar()]").unwrap_err();
        assert_eq!((error.offset, error.column), (29, 20));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let deep = format!("{}1{}", "(".repeat(200), ")".repeat(200));
        let error = check_syntax(&deep).unwrap_err();
        assert!(
            error.message.contains("nests more than 64 levels"),
            "{error}"
        );
        assert_eq!(error.column, MAX_NESTING + 1);
        let fine = format!("{}1{}", "(".repeat(60), ")".repeat(60));
        assert_eq!(result_type(&fine), Ok(XPathType::Number));
        let predicates = format!("//a{}", "[b".repeat(100) + &"]".repeat(100));
        assert!(check_syntax(&predicates).is_err());
        let minus = format!("{}1", "-".repeat(10_000));
        assert_eq!(result_type(&minus), Ok(XPathType::Number));
    }

    #[test]
    fn display_puts_a_caret_under_the_problem() {
        let error = check_syntax("//row[@key='GAZP'/cell").unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid XPath at column 18: expected ']' to close the predicate opened at column 6\n  \
             //row[@key='GAZP'/cell\n                   ^"
        );
        let error = check_syntax("//ряд[@ключ='газ'][bar()]").unwrap_err();
        let rendered = error.to_string();
        let lines: Vec<&str> = rendered.lines().collect();
        assert_eq!(lines[2].chars().count(), 2 + 19 + 1);
        assert_eq!(lines[1].chars().nth(2 + 19), Some('b'));
        // at the end of the input the caret stands just past it
        let error = check_syntax("1 +").unwrap_err();
        assert!(error.to_string().ends_with("\n  1 +\n     ^"), "{error}");
        // tabs and newlines are shown as spaces so the caret stays aligned
        let error = check_syntax("//row\n\t[foo()]").unwrap_err();
        let expected = format!("\n  //row  [foo()]\n  {}^", " ".repeat(8));
        assert!(error.to_string().ends_with(&expected), "{error}");
    }

    #[test]
    fn display_windows_long_expressions() {
        let expr = format!("{} and foo() and {}", "//a".repeat(40), "//b".repeat(40));
        let error = check_syntax(&expr).unwrap_err();
        let rendered = error.to_string();
        let lines: Vec<&str> = rendered.lines().collect();
        assert!(
            lines[1].starts_with("  ...") && lines[1].ends_with("..."),
            "{rendered}"
        );
        assert!(lines[1].chars().count() <= 2 + 3 + SNIPPET_WIDTH + 3);
        let caret = lines[2].chars().count() - 1;
        assert_eq!(&lines[1][caret..caret + 5], "foo()");
    }

    #[test]
    fn result_types_are_static() {
        use XPathType::{Boolean, NodeSet, Number, String};
        let cases = [
            ("//row", NodeSet),
            ("(//row)[1]", NodeSet),
            ("//row | //cell", NodeSet),
            ("id('x')", NodeSet),
            ("(//row)", NodeSet),
            ("count(//row)", Number),
            ("-//cell/@num", Number),
            ("//cell/@num * 2", Number),
            ("sum(//cell/@num) div 2", Number),
            ("1", Number),
            ("(1)", Number),
            ("'10' > 9", Boolean),
            ("//row and //cell", Boolean),
            ("not(//row)", Boolean),
            ("contains('a', 'b')", Boolean),
            ("'x'", String),
            ("concat('a', 'b')", String),
            ("name()", String),
        ];
        for (expr, ty) in cases {
            assert_eq!(result_type(expr), Ok(ty), "{expr}");
        }
    }

    #[test]
    fn comparisons_numbers_strings_and_booleans() {
        let doc = doc();
        assert_eq!(doc.evaluate("'10' > 9").unwrap(), XPathValue::Boolean(true));
        assert_eq!(
            doc.evaluate("'10' < 9").unwrap(),
            XPathValue::Boolean(false)
        );
        assert_eq!(
            doc.evaluate("count(//row)").unwrap(),
            XPathValue::Number(2.0)
        );
        assert_eq!(
            doc.evaluate("//row[@key='GAZP']/cell[@col='Last']/@num > 250")
                .unwrap(),
            XPathValue::Boolean(true)
        );
        assert_eq!(
            doc.evaluate("//row[@key='GAZP']/cell[@col='Last']/@num > 260")
                .unwrap(),
            XPathValue::Boolean(false)
        );
        assert_eq!(
            doc.evaluate("string(//page/@label)").unwrap(),
            XPathValue::String("Quotes".into())
        );
        assert_eq!(
            doc.evaluate("sum(//cell/@num)").unwrap(),
            XPathValue::Number(551.8)
        );
        assert_eq!(
            doc.evaluate("substring(//para, 1, 3)").unwrap(),
            XPathValue::String("Мир".into())
        );
        // relative expressions start at the root node
        assert_eq!(
            doc.evaluate("count(page)").unwrap(),
            XPathValue::Number(1.0)
        );
        assert_eq!(doc.evaluate("count(.)").unwrap(), XPathValue::Number(1.0));
    }

    #[test]
    fn last_and_position_outside_predicates_see_the_root_context() {
        let doc = doc();
        assert_eq!(doc.evaluate("last()").unwrap(), XPathValue::Number(1.0));
        assert_eq!(
            doc.evaluate("position ( ) = last()").unwrap(),
            XPathValue::Boolean(true)
        );
        assert_eq!(
            doc.evaluate("string(position())").unwrap(),
            XPathValue::String("1".into())
        );
        // inside predicates they keep their meaning
        assert_eq!(
            doc.evaluate("count(//row[position() = last()]) + last()")
                .unwrap(),
            XPathValue::Number(2.0)
        );
        assert_eq!(
            doc.select_ids("(//row)[last()]/@key").unwrap(),
            [format!("{SHARES}/row[@key='SBER']/@key")]
        );
    }

    #[test]
    fn special_numbers() {
        let doc = doc();
        let number = |expr: &str| match doc.evaluate(expr).unwrap() {
            XPathValue::Number(number) => number,
            other => panic!("{expr}: {other:?}"),
        };
        assert_eq!(number("1 div 0"), f64::INFINITY);
        assert_eq!(number("-1 div 0"), f64::NEG_INFINITY);
        assert!(number("0 div 0").is_nan());
        assert!(number("number('abc')").is_nan());
        assert_eq!(number("-0.5"), -0.5);
        assert_eq!(number("100000000000000000000000"), 1e23);
        assert!((number("1 div 3") - 1.0 / 3.0).abs() < 1e-14);
    }

    #[test]
    fn node_sets_give_ids_names_and_values() {
        let doc = doc();
        let XPathValue::Nodes(rows) = doc.evaluate("//row").unwrap() else {
            panic!("not a node-set");
        };
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].kind, NodeKind::Element);
        assert_eq!(rows[0].name, "row");
        assert_eq!(
            rows[0].id.as_deref(),
            Some(format!("{SHARES}/row[@key='GAZP']").as_str())
        );
        assert_eq!(
            rows[1].value.split_whitespace().collect::<Vec<_>>(),
            ["SBER", "300.50"]
        );

        let gazp_last = format!("{SHARES}/row[@key='GAZP']/cell[@col='Last']");
        let XPathValue::Nodes(attributes) = doc.evaluate(&format!("{gazp_last}/@num")).unwrap()
        else {
            panic!("not a node-set");
        };
        assert_eq!(
            attributes,
            [NodeMatch {
                kind: NodeKind::Attribute,
                name: "num".into(),
                id: Some(format!("{gazp_last}/@num")),
                value: "251.3".into(),
            }]
        );

        let XPathValue::Nodes(texts) = doc.evaluate(&format!("{gazp_last}/text()")).unwrap() else {
            panic!("not a node-set");
        };
        assert_eq!(
            texts,
            [NodeMatch {
                kind: NodeKind::Text,
                name: String::new(),
                id: Some(format!("{gazp_last}/text()")),
                value: "251.30".into(),
            }]
        );

        assert_eq!(
            doc.evaluate("//nothing").unwrap(),
            XPathValue::Nodes(Vec::new())
        );
    }

    #[test]
    fn other_nodes() {
        let doc = doc();
        let XPathValue::Nodes(nodes) = doc
            .evaluate("/ | //comment() | /page/namespace::*")
            .unwrap()
        else {
            panic!("not a node-set");
        };
        let summary: Vec<(NodeKind, &str, Option<&str>)> = nodes
            .iter()
            .map(|n| (n.kind, n.name.as_str(), n.id.as_deref()))
            .collect();
        assert_eq!(
            summary,
            [
                (NodeKind::Other, "", Some("/")),
                (NodeKind::Other, "", None),
                (NodeKind::Other, "", None),
            ]
        );
        assert!(nodes.iter().any(|n| n.value == " made by hand "));
        assert!(
            nodes
                .iter()
                .any(|n| n.value == "http://www.w3.org/XML/1998/namespace")
        );
    }

    #[test]
    fn text_ids_are_numbered_when_a_parent_has_several() {
        let doc = doc();
        let ids = doc.select_ids("//para/text()").unwrap();
        assert_eq!(ids.len(), 2);
        assert!(ids[0].ends_with("/para/text()[1]"), "{}", ids[0]);
        assert!(ids[1].ends_with("/para/text()[2]"), "{}", ids[1]);
        for id in &ids {
            assert_eq!(&doc.select_ids(id).unwrap(), std::slice::from_ref(id));
        }
        let XPathValue::Nodes(texts) = doc.evaluate(&ids[1]).unwrap() else {
            panic!("not a node-set");
        };
        assert_eq!(texts[0].value, " текст");
    }

    #[test]
    fn labels_with_both_quotes_are_selected_with_concat() {
        let doc = doc();
        let expr = r#"//section[@label=concat('He said "it', "'", 's"')]/@label"#;
        let XPathValue::Nodes(labels) = doc.evaluate(expr).unwrap() else {
            panic!("not a node-set");
        };
        assert_eq!(labels.len(), 1);
        assert_eq!(labels[0].value, r#"He said "it's""#);
        let ids = doc
            .select_ids(r#"//section[@label=concat('He said "it', "'", 's"')]"#)
            .unwrap();
        assert_eq!(ids.len(), 1);
        assert_eq!(doc.select_ids(&ids[0]).unwrap(), ids);
    }

    #[test]
    fn every_element_id_selects_exactly_that_element() {
        let doc = doc();
        let ids = doc.select_ids("//*").unwrap();
        assert_eq!(ids.len(), 12);
        for id in &ids {
            assert_eq!(&doc.select_ids(id).unwrap(), std::slice::from_ref(id));
        }
        let attribute_ids = doc.select_ids("//@key | //@num").unwrap();
        assert_eq!(attribute_ids.len(), 4);
        for id in &attribute_ids {
            assert_eq!(&doc.select_ids(id).unwrap(), std::slice::from_ref(id));
        }
    }

    #[test]
    fn thousands_of_ids_evaluate_quickly() {
        let mut xml = String::from(r#"<page label="Big" xpath="/page">"#);
        for s in 0..10 {
            let section = format!("/page/section[@label='S{s}']");
            xml += &format!(r#"<section label="S{s}" xpath="{section}">"#);
            let table = format!("{section}/table[@label='T']");
            xml += &format!(r#"<table label="T" xpath="{table}">"#);
            for r in 0..100 {
                let row = format!("{table}/row[@key='R{r}']");
                xml += &format!(r#"<row key="R{r}" xpath="{row}">"#);
                for c in 0..3 {
                    xml += &format!(
                        r#"<cell col="C{c}" num="{r}.{c}" xpath="{row}/cell[@col='C{c}']">{r}.{c}</cell>"#
                    );
                }
                xml += "</row>";
            }
            xml += "</table></section>";
        }
        xml += "</page>";
        let doc = HierarchyDoc::parse(&xml).unwrap();
        let ids = doc.select_ids("//*").unwrap();
        assert_eq!(ids.len(), 1 + 10 * (2 + 100 * 4));
        for id in &ids {
            assert_eq!(&doc.select_ids(id).unwrap(), std::slice::from_ref(id));
        }
    }

    #[test]
    fn malformed_xml_is_an_xml_error() {
        for xml in ["<page><row></page>", "", "not xml", "<page a='1' a='2'/>"] {
            match HierarchyDoc::parse(xml) {
                Err(XPathError::Xml { cause, .. }) => assert!(!cause.is_empty()),
                other => panic!("{xml:?}: {other:?}"),
            }
        }
        let error = HierarchyDoc::parse("<page>\n<row></page>").unwrap_err();
        let XPathError::Xml { line, .. } = &error else {
            panic!("{error:?}");
        };
        assert_eq!(*line, Some(2));
        assert!(
            error
                .to_string()
                .starts_with("the hierarchy document is not well-formed XML at line 2"),
            "{error}"
        );
    }

    #[test]
    fn the_text_is_read_as_utf8_whatever_its_declaration_says() {
        let doc =
            HierarchyDoc::parse("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><page>é</page>")
                .unwrap();
        assert_eq!(
            doc.evaluate("string(/page)").unwrap(),
            XPathValue::String("é".into())
        );
    }

    #[test]
    fn syntax_errors_come_back_from_evaluate_with_their_column() {
        let doc = doc();
        let error = doc.evaluate("//row[foo(@key)]").unwrap_err();
        let XPathError::Syntax(syntax) = &error else {
            panic!("{error:?}");
        };
        assert_eq!(
            (syntax.column, syntax.message.as_str()),
            (7, "unknown function 'foo'")
        );
        assert!(
            error
                .to_string()
                .starts_with("invalid XPath at column 7: unknown function 'foo'")
        );
        assert!(matches!(
            doc.select_ids("count(//row)"),
            Err(XPathError::NotNodeSet {
                found: XPathType::Number,
                ..
            })
        ));
        assert!(matches!(doc.select_ids("1 +"), Err(XPathError::Syntax(_))));
    }

    #[test]
    fn values_convert_to_boolean_as_xpath_does() {
        assert!(!XPathValue::Nodes(Vec::new()).to_boolean());
        assert!(XPathValue::Number(-1.0).to_boolean());
        assert!(!XPathValue::Number(0.0).to_boolean());
        assert!(!XPathValue::Number(f64::NAN).to_boolean());
        assert!(XPathValue::String("0".into()).to_boolean());
        assert!(!XPathValue::String(String::new()).to_boolean());
        assert_eq!(XPathValue::Boolean(true).value_type(), XPathType::Boolean);
        let doc = doc();
        for expr in ["//row", "count(//row)", "string(//row)", "//row and 1"] {
            let value = doc.evaluate(expr).unwrap();
            assert_eq!(
                doc.evaluate(&format!("boolean({expr})")).unwrap(),
                XPathValue::Boolean(value.to_boolean()),
                "{expr}"
            );
            assert_eq!(Ok(value.value_type()), result_type(expr));
        }
    }
}
