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
//! - [`check_syntax`] and [`result_type`] run a tokenizer that follows the lexical
//!   rules of XPath 1.0 (§3.7, with its rules for telling `*` the multiplication from
//!   `*` the name test and an operator name from a name, a function name or an axis
//!   name) and a recursive-descent parser of the whole XPath 1.0 grammar, before
//!   libxml2 ever sees the expression. Besides syntax they reject what cannot work on
//!   the hierarchy document: functions other than the 27 core functions, or with the
//!   wrong number of arguments; variables (none are bound); namespace prefixes (the
//!   document has no namespaces); and XPath 1.0's static type errors, such as a
//!   predicate, a `/` or a `|` applied to something that is not a node-set, or
//!   `count()` of a number. XPath 1.0 types are static, so the parser also works out
//!   the type of the result.
//! - [`HierarchyDoc`] parses the document with libxml2 and evaluates checked
//!   expressions with libxml2's exact XPath 1.0 engine, through one reused XPath
//!   context. The statically known result type decides how libxml2's answer is read.
//! - [`native`] answers the location paths thresholds and clips use in practice on
//!   the hierarchy itself, without writing or parsing XML, and hands everything else
//!   to [`HierarchyDoc`]; both give the same answers.

pub mod native;

use std::borrow::Cow;
use std::fmt;

use libxml::parser::{Parser as XmlParser, ParserOptions, XmlParseFailure};
use libxml::readonly::RoNode;
use libxml::tree::{Document, Node, NodeType};
use libxml::xpath::{Context, Object};

/// The attribute of every hierarchy element that holds the XPath selecting it.
const ID_ATTRIBUTE: &str = "xpath";

/// How deeply parentheses, predicates and function arguments may nest.
const MAX_NESTING: usize = 64;

/// The widest stretch of the expression [`XPathSyntaxError`]'s `Display` shows.
const SNIPPET_WIDTH: usize = 72;

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

/// Where and why an expression is not valid XPath 1.0 over the hierarchy document.
///
/// `Display` renders the message and then the expression with a caret under the
/// problem:
///
/// ```text
/// invalid XPath at column 18: expected ']' to close the predicate opened at column 6
///   //row[@key='GAZP'/cell
///                    ^
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XPathSyntaxError {
    /// The expression as given.
    pub expression: String,
    /// The byte offset of the problem in `expression` (its length when the expression ended too soon).
    pub offset: usize,
    /// The 1-based character column of the problem (counting characters, not bytes).
    pub column: usize,
    /// What is wrong, naming the problem.
    pub message: String,
}

impl XPathSyntaxError {
    fn new(expression: &str, offset: usize, message: impl Into<String>) -> Self {
        XPathSyntaxError {
            expression: expression.to_owned(),
            offset,
            column: column_of(expression, offset),
            message: message.into(),
        }
    }
}

impl fmt::Display for XPathSyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid XPath at column {}: {}",
            self.column, self.message
        )?;
        let (line, caret) = snippet(&self.expression, self.column.saturating_sub(1));
        write!(f, "\n  {line}\n  {}^", " ".repeat(caret))
    }
}

impl std::error::Error for XPathSyntaxError {}

/// The 1-based character column of byte `offset` in `text`.
fn column_of(text: &str, offset: usize) -> usize {
    text.get(..offset)
        .map_or_else(|| text.chars().count(), |before| before.chars().count())
        + 1
}

/// The part of `expression` to show under an error (control characters as spaces,
/// long expressions cut to a window around the caret) and the caret's position in it.
fn snippet(expression: &str, caret: usize) -> (String, usize) {
    let chars: Vec<char> = expression
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let caret = caret.min(chars.len());
    if chars.len() <= SNIPPET_WIDTH {
        return (chars.into_iter().collect(), caret);
    }
    let start = caret
        .saturating_sub(SNIPPET_WIDTH / 2)
        .min(chars.len() + 1 - SNIPPET_WIDTH);
    let end = (start + SNIPPET_WIDTH).min(chars.len());
    let mut line = String::new();
    let mut caret_at = caret - start;
    if start > 0 {
        line.push_str("...");
        caret_at += 3;
    }
    line.extend(&chars[start..end]);
    if end < chars.len() {
        line.push_str("...");
    }
    (line, caret_at)
}

/// The type of an XPath 1.0 value; XPath 1.0 fixes it statically for every expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum XPathType {
    /// An unordered set of nodes without duplicates (libxml2 gives it in document order).
    NodeSet,
    /// An IEEE 754 double.
    Number,
    /// True or false.
    Boolean,
    /// A string of characters.
    String,
}

impl fmt::Display for XPathType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            XPathType::NodeSet => "node-set",
            XPathType::Number => "number",
            XPathType::Boolean => "boolean",
            XPathType::String => "string",
        })
    }
}

/// Checks that `expr` is XPath 1.0 that can be evaluated on the hierarchy document.
///
/// Beyond the grammar this rejects variables, namespace prefixes, functions other
/// than the 27 core functions, wrong argument counts and XPath 1.0's static type
/// errors (see the [module documentation](self)).
pub fn check_syntax(expr: &str) -> Result<(), XPathSyntaxError> {
    result_type(expr).map(|_| ())
}

/// Checks `expr` as [`check_syntax`] does and gives the type of its value.
///
/// A location path, a union or a filtered node-set gives a node-set; arithmetic and
/// the number functions give a number; comparisons, `and`, `or` and the boolean
/// functions give a boolean; literals and the string functions give a string.
pub fn result_type(expr: &str) -> Result<XPathType, XPathSyntaxError> {
    analyze(expr).map(|analysis| analysis.ty)
}

/// What the parser learnt about a valid expression.
struct Analysis {
    ty: XPathType,
    /// Spans of `last()` and `position()` calls outside every predicate.
    context_calls: Vec<(usize, usize)>,
}

impl Analysis {
    /// The expression to hand libxml2. Outside predicates the context is the root
    /// node alone, at position 1 of 1, but libxml2 leaves that size and position
    /// unset and fails on `last()` and `position()` there; they become `(1)`.
    fn libxml_expression<'e>(&self, expr: &'e str) -> Cow<'e, str> {
        if self.context_calls.is_empty() {
            return Cow::Borrowed(expr);
        }
        let mut rewritten = String::with_capacity(expr.len());
        let mut copied = 0;
        for &(start, end) in &self.context_calls {
            rewritten.push_str(&expr[copied..start]);
            rewritten.push_str("(1)");
            copied = end;
        }
        rewritten.push_str(&expr[copied..]);
        Cow::Owned(rewritten)
    }
}

/// Tokenizes and parses `expr`: the work behind [`check_syntax`] and [`result_type`].
fn analyze(expr: &str) -> Result<Analysis, XPathSyntaxError> {
    let mut parser = ExprParser {
        src: expr,
        tokens: tokenize(expr),
        pos: 0,
        depth: 0,
        open: Vec::new(),
        context_calls: Vec::new(),
    };
    if parser.peek().tok == Tok::Eof {
        return Err(XPathSyntaxError::new(expr, 0, "empty expression"));
    }
    let ty = parser.parse_expr()?;
    let token = parser.peek();
    let message = match &token.tok {
        Tok::Eof => {
            return Ok(Analysis {
                ty,
                context_calls: parser.context_calls,
            });
        }
        Tok::Error(message) => message.as_str(),
        Tok::RParen => "unmatched ')'",
        Tok::RBracket => "unmatched ']'",
        _ => "trailing input after expression",
    };
    Err(XPathSyntaxError::new(expr, token.start, message))
}

// ---------------------------------------------------------------------------
// Tokens (XPath 1.0 §3.7)
// ---------------------------------------------------------------------------

/// The node types a node test can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NodeTypeTest {
    Comment,
    Text,
    ProcessingInstruction,
    Node,
}

/// A token's kind; names, literals and numbers are read back from the token's span.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    LParen,
    RParen,
    LBracket,
    RBracket,
    Dot,
    DotDot,
    At,
    Comma,
    ColonColon,
    Slash,
    DoubleSlash,
    Pipe,
    Plus,
    Minus,
    Equal,
    NotEqual,
    Less,
    LessEqual,
    Greater,
    GreaterEqual,
    /// `*` where an operator stands.
    Multiply,
    And,
    Or,
    Mod,
    Div,
    /// An NCName where an operator must stand that is none of `and`, `or`, `mod`, `div`.
    NotAnOperator,
    /// `*` as a name test.
    Star,
    /// An NCName as a name test.
    Name,
    NodeType(NodeTypeTest),
    /// An NCName followed by `(`.
    Function,
    /// One of the 13 axis names, followed by `::`.
    Axis,
    Literal,
    Number,
    Variable,
    Eof,
    /// A lexical error; always the last token.
    Error(String),
}

impl Tok {
    /// Whether an operand, not an operator, comes next (the first rule of §3.7:
    /// after `@`, `::`, `(`, `[`, `,` or an operator).
    fn expects_operand_after(&self) -> bool {
        matches!(
            self,
            Tok::At
                | Tok::ColonColon
                | Tok::LParen
                | Tok::LBracket
                | Tok::Comma
                | Tok::Slash
                | Tok::DoubleSlash
                | Tok::Pipe
                | Tok::Plus
                | Tok::Minus
                | Tok::Equal
                | Tok::NotEqual
                | Tok::Less
                | Tok::LessEqual
                | Tok::Greater
                | Tok::GreaterEqual
                | Tok::Multiply
                | Tok::And
                | Tok::Or
                | Tok::Mod
                | Tok::Div
                | Tok::NotAnOperator
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Token {
    tok: Tok,
    /// Byte offsets of the token in the expression.
    start: usize,
    end: usize,
}

/// A lexical error: byte offset and message.
type LexError = (usize, String);

/// The 13 axes of XPath 1.0.
const AXES: [&str; 13] = [
    "ancestor",
    "ancestor-or-self",
    "attribute",
    "child",
    "descendant",
    "descendant-or-self",
    "following",
    "following-sibling",
    "namespace",
    "parent",
    "preceding",
    "preceding-sibling",
    "self",
];

fn is_xpath_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

/// NCName's first character: XML 1.0 (fifth edition) NameStartChar without `:`.
fn is_name_start(c: char) -> bool {
    matches!(c,
        'A'..='Z' | '_' | 'a'..='z'
        | '\u{C0}'..='\u{D6}' | '\u{D8}'..='\u{F6}' | '\u{F8}'..='\u{2FF}'
        | '\u{370}'..='\u{37D}' | '\u{37F}'..='\u{1FFF}' | '\u{200C}'..='\u{200D}'
        | '\u{2070}'..='\u{218F}' | '\u{2C00}'..='\u{2FEF}' | '\u{3001}'..='\u{D7FF}'
        | '\u{F900}'..='\u{FDCF}' | '\u{FDF0}'..='\u{FFFD}' | '\u{10000}'..='\u{EFFFF}')
}

/// NCName's other characters: XML 1.0 (fifth edition) NameChar without `:`.
fn is_name_char(c: char) -> bool {
    is_name_start(c)
        || matches!(c,
            '-' | '.' | '0'..='9' | '\u{B7}' | '\u{300}'..='\u{36F}' | '\u{203F}'..='\u{2040}')
}

/// XML's Char production, which bounds the characters of an XPath expression.
fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

/// A character as an error message shows it: quoted if visible, else as U+XXXX.
fn describe_char(c: char) -> String {
    let invisible = c.is_whitespace()
        || c.is_control()
        || matches!(c, '\u{200B}'..='\u{200F}' | '\u{2060}' | '\u{FEFF}');
    if invisible {
        format!("U+{:04X}", u32::from(c))
    } else {
        format!("'{c}'")
    }
}

/// The byte offset where the NCName starting at `start` ends.
fn name_end(src: &str, start: usize) -> usize {
    src[start..]
        .char_indices()
        .find(|&(i, c)| {
            if i == 0 {
                !is_name_start(c)
            } else {
                !is_name_char(c)
            }
        })
        .map_or(src.len(), |(i, _)| start + i)
}

/// Splits `src` into tokens, ending with [`Tok::Eof`] or, at the first lexical error, [`Tok::Error`].
fn tokenize(src: &str) -> Vec<Token> {
    let mut tokens: Vec<Token> = Vec::new();
    let mut pos = 0;
    loop {
        pos += src[pos..]
            .find(|c| !is_xpath_whitespace(c))
            .unwrap_or(src.len() - pos);
        let operator_position = tokens
            .last()
            .is_some_and(|t| !t.tok.expects_operand_after());
        match next_token(src, pos, operator_position) {
            Ok(Some(token)) => {
                pos = token.end;
                tokens.push(token);
            }
            Ok(None) => {
                tokens.push(Token {
                    tok: Tok::Eof,
                    start: src.len(),
                    end: src.len(),
                });
                return tokens;
            }
            Err((offset, message)) => {
                tokens.push(Token {
                    tok: Tok::Error(message),
                    start: offset,
                    end: offset,
                });
                return tokens;
            }
        }
    }
}

/// Reads the token at `start` (past any whitespace); `None` at the end of the input.
fn next_token(src: &str, start: usize, operator_position: bool) -> Result<Option<Token>, LexError> {
    let rest = &src[start..];
    let mut chars = rest.chars();
    let Some(c) = chars.next() else {
        return Ok(None);
    };
    let next = chars.next();
    let token = |tok: Tok, len: usize| {
        Ok(Some(Token {
            tok,
            start,
            end: start + len,
        }))
    };
    match c {
        '(' => token(Tok::LParen, 1),
        ')' => token(Tok::RParen, 1),
        '[' => token(Tok::LBracket, 1),
        ']' => token(Tok::RBracket, 1),
        '@' => token(Tok::At, 1),
        ',' => token(Tok::Comma, 1),
        '+' => token(Tok::Plus, 1),
        '-' => token(Tok::Minus, 1),
        '|' if next == Some('|') => Err((
            start,
            "'||' is not an XPath 1.0 operator; use 'or' (or concat() to join strings)".into(),
        )),
        '|' => token(Tok::Pipe, 1),
        '=' if next == Some('=') => Err((start, "'==' is not an XPath operator; use '='".into())),
        '=' => token(Tok::Equal, 1),
        '!' if next == Some('=') => token(Tok::NotEqual, 2),
        '!' => Err((
            start,
            "unexpected character '!'; XPath writes 'not equal' as '!=' and negation as not(...)"
                .into(),
        )),
        '&' => Err((
            start,
            "unexpected character '&'; XPath combines conditions with 'and'".into(),
        )),
        '<' if next == Some('=') => token(Tok::LessEqual, 2),
        '<' => token(Tok::Less, 1),
        '>' if next == Some('=') => token(Tok::GreaterEqual, 2),
        '>' => token(Tok::Greater, 1),
        '/' if next == Some('/') => token(Tok::DoubleSlash, 2),
        '/' => token(Tok::Slash, 1),
        ':' if next == Some(':') => token(Tok::ColonColon, 2),
        '.' if next == Some('.') => token(Tok::DotDot, 2),
        '.' if next.is_some_and(|n| n.is_ascii_digit()) => lex_number(src, start).map(Some),
        '.' => token(Tok::Dot, 1),
        '0'..='9' => lex_number(src, start).map(Some),
        '"' | '\'' => lex_literal(src, start, c).map(Some),
        '$' => lex_variable(src, start).map(Some),
        '*' if operator_position => token(Tok::Multiply, 1),
        '*' => token(Tok::Star, 1),
        c if is_name_start(c) => lex_name(src, start, operator_position).map(Some),
        c if !is_xml_char(c) => Err((
            start,
            format!(
                "character {} is not allowed in an XPath expression",
                describe_char(c)
            ),
        )),
        c => Err((start, format!("unexpected character {}", describe_char(c)))),
    }
}

/// Number ::= Digits ('.' Digits?)? | '.' Digits
fn lex_number(src: &str, start: usize) -> Result<Token, LexError> {
    let bytes = src.as_bytes();
    let digits_from = |mut i: usize| {
        while bytes.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        i
    };
    let mut end = digits_from(start);
    if bytes.get(end) == Some(&b'.') {
        end = digits_from(end + 1);
    }
    if matches!(bytes.get(end), Some(b'e' | b'E')) {
        let exponent_digit = match bytes.get(end + 1) {
            Some(b'+' | b'-') => bytes.get(end + 2),
            other => other,
        };
        if exponent_digit.is_some_and(u8::is_ascii_digit) {
            return Err((
                end,
                "XPath 1.0 numbers have no exponent; write the number out in full".into(),
            ));
        }
    }
    Ok(Token {
        tok: Tok::Number,
        start,
        end,
    })
}

/// Literal ::= '"' [^"]* '"' | "'" [^']* "'"
fn lex_literal(src: &str, start: usize, quote: char) -> Result<Token, LexError> {
    let body_start = start + 1;
    let Some(length) = src[body_start..].find(quote) else {
        return Err((start, "unterminated string literal".into()));
    };
    let body = &src[body_start..body_start + length];
    if let Some((i, c)) = body.char_indices().find(|&(_, c)| !is_xml_char(c)) {
        return Err((
            body_start + i,
            format!(
                "character {} is not allowed in an XPath expression",
                describe_char(c)
            ),
        ));
    }
    Ok(Token {
        tok: Tok::Literal,
        start,
        end: body_start + length + 1,
    })
}

/// VariableReference ::= '$' QName
fn lex_variable(src: &str, start: usize) -> Result<Token, LexError> {
    let name_start = start + 1;
    if !src[name_start..].starts_with(is_name_start) {
        return Err((name_start, "expected a variable name after '$'".into()));
    }
    let mut end = name_end(src, name_start);
    if src[end..].starts_with(':') && src[end + 1..].starts_with(is_name_start) {
        end = name_end(src, end + 1);
    }
    Ok(Token {
        tok: Tok::Variable,
        start,
        end,
    })
}

/// An NCName, classified by the rules of §3.7: an operator name where an operator
/// must stand; else an axis name before `::`, a node type or function name before
/// `(`, and a name test otherwise.
fn lex_name(src: &str, start: usize, operator_position: bool) -> Result<Token, LexError> {
    let end = name_end(src, start);
    let name = &src[start..end];
    let token = |tok: Tok| Ok(Token { tok, start, end });
    if operator_position {
        return token(match name {
            "and" => Tok::And,
            "or" => Tok::Or,
            "mod" => Tok::Mod,
            "div" => Tok::Div,
            _ => Tok::NotAnOperator,
        });
    }
    let after = &src[end..];
    let after_space = after.trim_start_matches(is_xpath_whitespace);
    if after_space.starts_with("::") {
        return if AXES.contains(&name) {
            token(Tok::Axis)
        } else {
            Err((
                start,
                format!("unknown axis '{name}'{}", suggestion(name, &AXES)),
            ))
        };
    }
    if let Some(local) = after.strip_prefix(':') {
        if local.starts_with(is_name_start) || local.starts_with('*') {
            let local_end = if local.starts_with('*') {
                end + 2
            } else {
                name_end(src, end + 1)
            };
            return Err((
                start,
                format!(
                    "namespaces are not used in the hierarchy document (prefix '{name}' in '{}')",
                    &src[start..local_end]
                ),
            ));
        }
        return Err((end, "unexpected character ':'".into()));
    }
    if after_space.starts_with('(') {
        return token(match name {
            "comment" => Tok::NodeType(NodeTypeTest::Comment),
            "text" => Tok::NodeType(NodeTypeTest::Text),
            "processing-instruction" => Tok::NodeType(NodeTypeTest::ProcessingInstruction),
            "node" => Tok::NodeType(NodeTypeTest::Node),
            _ => Tok::Function,
        });
    }
    token(Tok::Name)
}

// ---------------------------------------------------------------------------
// Functions
// ---------------------------------------------------------------------------

/// A core function: its arity and result type.
struct Function {
    name: &'static str,
    min_args: usize,
    /// `None`: any number from `min_args` on.
    max_args: Option<usize>,
    returns: XPathType,
    /// Whether every argument must be a node-set.
    node_set_args: bool,
}

const fn function(
    name: &'static str,
    min_args: usize,
    max_args: Option<usize>,
    returns: XPathType,
    node_set_args: bool,
) -> Function {
    Function {
        name,
        min_args,
        max_args,
        returns,
        node_set_args,
    }
}

/// The 27 functions of the XPath 1.0 core function library (§4).
const FUNCTIONS: [Function; 27] = {
    use XPathType::{Boolean, NodeSet, Number, String};
    [
        function("last", 0, Some(0), Number, false),
        function("position", 0, Some(0), Number, false),
        function("count", 1, Some(1), Number, true),
        function("id", 1, Some(1), NodeSet, false),
        function("local-name", 0, Some(1), String, true),
        function("namespace-uri", 0, Some(1), String, true),
        function("name", 0, Some(1), String, true),
        function("string", 0, Some(1), String, false),
        function("concat", 2, None, String, false),
        function("starts-with", 2, Some(2), Boolean, false),
        function("contains", 2, Some(2), Boolean, false),
        function("substring-before", 2, Some(2), String, false),
        function("substring-after", 2, Some(2), String, false),
        function("substring", 2, Some(3), String, false),
        function("string-length", 0, Some(1), Number, false),
        function("normalize-space", 0, Some(1), String, false),
        function("translate", 3, Some(3), String, false),
        function("boolean", 1, Some(1), Boolean, false),
        function("not", 1, Some(1), Boolean, false),
        function("true", 0, Some(0), Boolean, false),
        function("false", 0, Some(0), Boolean, false),
        function("lang", 1, Some(1), Boolean, false),
        function("number", 0, Some(1), Number, false),
        function("sum", 1, Some(1), Number, true),
        function("floor", 1, Some(1), Number, false),
        function("ceiling", 1, Some(1), Number, false),
        function("round", 1, Some(1), Number, false),
    ]
};

impl Function {
    fn arity(&self) -> String {
        let plural = |n: usize| if n == 1 { "argument" } else { "arguments" };
        match self.max_args {
            Some(0) => "takes no arguments".to_owned(),
            Some(max) if max == self.min_args => format!("takes {max} {}", plural(max)),
            Some(max) if max == self.min_args + 1 => {
                format!("takes {} or {max} arguments", self.min_args)
            }
            Some(max) => format!("takes {} to {max} arguments", self.min_args),
            None => format!("takes at least {} {}", self.min_args, plural(self.min_args)),
        }
    }

    fn accepts(&self, count: usize) -> bool {
        count >= self.min_args && self.max_args.is_none_or(|max| count <= max)
    }
}

/// The message for a function name that is not a core function.
fn unknown_function(name: &str) -> String {
    let hint = match name {
        "ends-with" => {
            "; XPath 1.0 has no ends-with(): compare substring(s, string-length(s) - string-length(t) + 1) = t"
                .to_owned()
        }
        "lower-case" | "upper-case" => format!(
            "; XPath 1.0 has no {name}(): change case with translate(s, 'ABC...', 'abc...')"
        ),
        "matches" | "replace" | "tokenize" => format!(
            "; XPath 1.0 has no regular expressions ({name}() is XPath 2.0): use contains(), starts-with() or translate()"
        ),
        _ => {
            let names: Vec<&str> = FUNCTIONS.iter().map(|f| f.name).collect();
            suggestion(name, &names)
        }
    };
    format!("unknown function '{name}'{hint}")
}

/// ", did you mean 'x'?" for the candidate closest to `name`, if close enough.
fn suggestion(name: &str, candidates: &[&str]) -> String {
    let name_len = name.chars().count();
    candidates
        .iter()
        .map(|candidate| (edit_distance(name, candidate), *candidate))
        .filter(|&(distance, _)| distance <= 2 && distance * 3 <= name_len)
        .min_by_key(|&(distance, _)| distance)
        .map_or_else(String::new, |(_, best)| format!("; did you mean '{best}'?"))
}

/// Levenshtein distance between two short strings, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

// ---------------------------------------------------------------------------
// Parser (XPath 1.0 §2-§3), computing each expression's static type
// ---------------------------------------------------------------------------

/// A bracket the parser is inside of.
#[derive(Debug, Clone, Copy)]
enum Open {
    /// A predicate, with the column of its `[`.
    Predicate(usize),
    /// Parentheses or an argument list.
    Group,
}

type Parsed = Result<XPathType, XPathSyntaxError>;

struct ExprParser<'a> {
    src: &'a str,
    tokens: Vec<Token>,
    pos: usize,
    depth: usize,
    open: Vec<Open>,
    /// See [`Analysis::context_calls`].
    context_calls: Vec<(usize, usize)>,
}

impl ExprParser<'_> {
    fn peek(&self) -> &Token {
        // `tokenize` always ends the list with `Eof` or `Error`, and `advance` never passes it.
        &self.tokens[self.pos.min(self.tokens.len() - 1)]
    }

    fn advance(&mut self) -> Token {
        let token = self.peek().clone();
        if !matches!(token.tok, Tok::Eof | Tok::Error(_)) {
            self.pos += 1;
        }
        token
    }

    fn eat(&mut self, tok: &Tok) -> bool {
        let found = self.peek().tok == *tok;
        if found {
            self.advance();
        }
        found
    }

    fn text(&self, token: &Token) -> &str {
        &self.src[token.start..token.end]
    }

    fn column(&self, offset: usize) -> usize {
        column_of(self.src, offset)
    }

    fn error_at(&self, offset: usize, message: impl Into<String>) -> XPathSyntaxError {
        XPathSyntaxError::new(self.src, offset, message)
    }

    /// An error at the next token: its lexical error if it is one, else `message`.
    fn fail(&self, message: impl Into<String>) -> XPathSyntaxError {
        let token = self.peek();
        match &token.tok {
            Tok::Error(lexical) => self.error_at(token.start, lexical.clone()),
            _ => self.error_at(token.start, message),
        }
    }

    /// An error for a next token that cannot start an expression.
    fn unexpected(&self) -> XPathSyntaxError {
        let token = self.peek();
        match &token.tok {
            Tok::Eof => match self.pos.checked_sub(1).and_then(|i| self.tokens.get(i)) {
                Some(previous) => self.fail(format!(
                    "expected an expression after '{}'",
                    self.text(previous)
                )),
                None => self.fail("empty expression"),
            },
            _ => self.fail(format!("unexpected token '{}'", self.text(token))),
        }
    }

    fn require_node_set(
        &self,
        ty: XPathType,
        offset: usize,
        what: &str,
    ) -> Result<(), XPathSyntaxError> {
        if ty == XPathType::NodeSet {
            Ok(())
        } else {
            Err(self.error_at(offset, format!("{what}, but this is a {ty}")))
        }
    }

    /// Expr ::= OrExpr
    fn parse_expr(&mut self) -> Parsed {
        if self.depth >= MAX_NESTING {
            return Err(self.fail(format!(
                "expression nests more than {MAX_NESTING} levels deep"
            )));
        }
        self.depth += 1;
        let parsed = self.parse_or();
        self.depth -= 1;
        parsed
    }

    /// One left-associative level of binary operators.
    fn parse_binary(
        &mut self,
        operators: &[Tok],
        result: XPathType,
        operand: fn(&mut Self) -> Parsed,
    ) -> Parsed {
        let mut ty = operand(self)?;
        while operators.contains(&self.peek().tok) {
            self.advance();
            operand(self)?;
            ty = result;
        }
        Ok(ty)
    }

    /// OrExpr ::= AndExpr ('or' AndExpr)*
    fn parse_or(&mut self) -> Parsed {
        self.parse_binary(&[Tok::Or], XPathType::Boolean, Self::parse_and)
    }

    /// AndExpr ::= EqualityExpr ('and' EqualityExpr)*
    fn parse_and(&mut self) -> Parsed {
        self.parse_binary(&[Tok::And], XPathType::Boolean, Self::parse_equality)
    }

    /// EqualityExpr ::= RelationalExpr (('=' | '!=') RelationalExpr)*
    fn parse_equality(&mut self) -> Parsed {
        self.parse_binary(
            &[Tok::Equal, Tok::NotEqual],
            XPathType::Boolean,
            Self::parse_relational,
        )
    }

    /// RelationalExpr ::= AdditiveExpr (('<' | '>' | '<=' | '>=') AdditiveExpr)*
    fn parse_relational(&mut self) -> Parsed {
        self.parse_binary(
            &[Tok::Less, Tok::Greater, Tok::LessEqual, Tok::GreaterEqual],
            XPathType::Boolean,
            Self::parse_additive,
        )
    }

    /// AdditiveExpr ::= MultiplicativeExpr (('+' | '-') MultiplicativeExpr)*
    fn parse_additive(&mut self) -> Parsed {
        self.parse_binary(
            &[Tok::Plus, Tok::Minus],
            XPathType::Number,
            Self::parse_multiplicative,
        )
    }

    /// MultiplicativeExpr ::= UnaryExpr (('*' | 'div' | 'mod') UnaryExpr)*
    fn parse_multiplicative(&mut self) -> Parsed {
        self.parse_binary(
            &[Tok::Multiply, Tok::Div, Tok::Mod],
            XPathType::Number,
            Self::parse_unary,
        )
    }

    /// UnaryExpr ::= UnionExpr | '-' UnaryExpr
    fn parse_unary(&mut self) -> Parsed {
        let mut negated = false;
        while self.eat(&Tok::Minus) {
            negated = true;
        }
        let ty = self.parse_union()?;
        Ok(if negated { XPathType::Number } else { ty })
    }

    /// UnionExpr ::= PathExpr ('|' PathExpr)*
    fn parse_union(&mut self) -> Parsed {
        let start = self.peek().start;
        let ty = self.parse_path()?;
        if self.peek().tok != Tok::Pipe {
            return Ok(ty);
        }
        self.require_node_set(ty, start, "'|' joins node-sets")?;
        while self.eat(&Tok::Pipe) {
            let start = self.peek().start;
            let ty = self.parse_path()?;
            self.require_node_set(ty, start, "'|' joins node-sets")?;
        }
        Ok(XPathType::NodeSet)
    }

    fn starts_step(&self) -> bool {
        matches!(
            self.peek().tok,
            Tok::Name | Tok::Star | Tok::Dot | Tok::DotDot | Tok::At | Tok::Axis | Tok::NodeType(_)
        )
    }

    fn starts_primary(&self) -> bool {
        matches!(
            self.peek().tok,
            Tok::LParen | Tok::Literal | Tok::Number | Tok::Function | Tok::Variable
        )
    }

    /// PathExpr ::= LocationPath | FilterExpr (('/' | '//') RelativeLocationPath)?
    fn parse_path(&mut self) -> Parsed {
        match self.peek().tok {
            Tok::Slash => {
                self.advance();
                if self.starts_step() {
                    self.require_libxml_step_start()?;
                    self.parse_relative_path()?;
                }
                Ok(XPathType::NodeSet)
            }
            Tok::DoubleSlash => {
                self.advance();
                self.parse_relative_path_after("//")?;
                Ok(XPathType::NodeSet)
            }
            _ if self.starts_step() => {
                self.parse_relative_path()?;
                Ok(XPathType::NodeSet)
            }
            _ if self.starts_primary() => self.parse_filter_path(),
            _ => Err(self.unexpected()),
        }
    }

    /// libxml2 reads a leading `/` as the whole path unless the next
    /// character is an ASCII letter, `_`, `.`, `@` or `*`: `/é` is `/`
    /// followed by trailing input there. Such a step is refused here, with
    /// the spelling libxml2 reads (the axis name makes the first character
    /// ASCII).
    fn require_libxml_step_start(&self) -> Result<(), XPathSyntaxError> {
        let token = self.peek();
        let text = self.text(token);
        match text.chars().next() {
            Some(c) if c.is_ascii_alphabetic() || matches!(c, '_' | '.' | '@' | '*') => Ok(()),
            Some(c) => Err(self.error_at(
                token.start,
                format!(
                    "libxml2 cannot read a step starting with {} right after a leading '/'; \
                     write /child::{text}",
                    describe_char(c)
                ),
            )),
            None => Ok(()),
        }
    }

    /// A relative location path that must follow `/` or `//`.
    fn parse_relative_path_after(&mut self, slash: &str) -> Result<(), XPathSyntaxError> {
        if !self.starts_step() {
            return Err(self.fail(format!("expected a location step after '{slash}'")));
        }
        self.parse_relative_path()
    }

    /// RelativeLocationPath ::= Step (('/' | '//') Step)*
    fn parse_relative_path(&mut self) -> Result<(), XPathSyntaxError> {
        self.parse_step()?;
        loop {
            let slash = match self.peek().tok {
                Tok::Slash => "/",
                Tok::DoubleSlash => "//",
                _ => return Ok(()),
            };
            self.advance();
            if !self.starts_step() {
                return Err(self.fail(format!("expected a location step after '{slash}'")));
            }
            self.parse_step()?;
        }
    }

    /// Step ::= AxisSpecifier NodeTest Predicate* | '.' | '..'
    fn parse_step(&mut self) -> Result<(), XPathSyntaxError> {
        match self.peek().tok {
            Tok::Dot | Tok::DotDot => {
                let step = self.advance();
                if self.peek().tok == Tok::LBracket {
                    let full = if step.tok == Tok::Dot {
                        "self::node()"
                    } else {
                        "parent::node()"
                    };
                    return Err(self.fail(format!(
                        "a predicate cannot follow '{}' in XPath 1.0; write {full}[...]",
                        self.text(&step)
                    )));
                }
                return Ok(());
            }
            Tok::Axis => {
                let axis = self.advance();
                if !self.eat(&Tok::ColonColon) {
                    return Err(self.fail("expected '::' after the axis name"));
                }
                let after = format!("'{}::'", self.text(&axis));
                self.parse_node_test(&after)?;
            }
            Tok::At => {
                self.advance();
                self.parse_node_test("'@'")?;
            }
            _ => self.parse_node_test("the step")?,
        }
        while self.peek().tok == Tok::LBracket {
            self.parse_predicate()?;
        }
        Ok(())
    }

    /// NodeTest ::= NameTest | NodeType '(' ')' | 'processing-instruction' '(' Literal ')'
    fn parse_node_test(&mut self, after: &str) -> Result<(), XPathSyntaxError> {
        match self.peek().tok {
            Tok::Name | Tok::Star => {
                self.advance();
                Ok(())
            }
            Tok::NodeType(kind) => {
                let name_token = self.advance();
                let name = self.text(&name_token).to_owned();
                if !self.eat(&Tok::LParen) {
                    return Err(self.fail(format!("expected '(' after '{name}'")));
                }
                if kind == NodeTypeTest::ProcessingInstruction {
                    self.eat(&Tok::Literal);
                }
                if self.eat(&Tok::RParen) {
                    return Ok(());
                }
                Err(self.fail(match (self.peek().tok == Tok::Eof, kind) {
                    (true, _) => format!("expected ')' to close '{name}('"),
                    (false, NodeTypeTest::ProcessingInstruction) => {
                        "node test 'processing-instruction()' takes only a string literal"
                            .to_owned()
                    }
                    (false, _) => format!("node test '{name}()' takes no argument"),
                }))
            }
            _ => Err(self.fail(format!("expected a node test after {after}"))),
        }
    }

    /// Predicate ::= '[' Expr ']'
    fn parse_predicate(&mut self) -> Result<(), XPathSyntaxError> {
        let open = self.advance();
        let column = self.column(open.start);
        if self.peek().tok == Tok::RBracket {
            return Err(self.fail("empty predicate"));
        }
        self.open.push(Open::Predicate(column));
        self.parse_expr()?;
        self.open.pop();
        if !self.eat(&Tok::RBracket) {
            return Err(self.fail(format!(
                "expected ']' to close the predicate opened at column {column}"
            )));
        }
        Ok(())
    }

    /// FilterExpr (('/' | '//') RelativeLocationPath)?, where FilterExpr ::= PrimaryExpr Predicate*
    fn parse_filter_path(&mut self) -> Parsed {
        // `[@key='GAZP'/cell`: a compared literal before a slash inside a predicate
        // is most likely a predicate that was never closed.
        let compared = matches!(self.peek().tok, Tok::Literal | Tok::Number)
            && self.pos.checked_sub(1).is_some_and(|i| {
                matches!(
                    self.tokens[i].tok,
                    Tok::Equal
                        | Tok::NotEqual
                        | Tok::Less
                        | Tok::LessEqual
                        | Tok::Greater
                        | Tok::GreaterEqual
                )
            });
        let ty = self.parse_primary()?;
        if self.peek().tok == Tok::LBracket {
            let start = self.peek().start;
            self.require_node_set(ty, start, "a predicate filters a node-set")?;
            while self.peek().tok == Tok::LBracket {
                self.parse_predicate()?;
            }
        }
        let slash = match self.peek().tok {
            Tok::Slash => "/",
            Tok::DoubleSlash => "//",
            _ => return Ok(ty),
        };
        if ty != XPathType::NodeSet {
            return Err(self.fail(match self.open.last() {
                Some(Open::Predicate(column)) if compared => {
                    format!("expected ']' to close the predicate opened at column {column}")
                }
                _ => format!("'{slash}' continues a path from a node-set, but this is a {ty}"),
            }));
        }
        self.advance();
        self.parse_relative_path_after(slash)?;
        Ok(XPathType::NodeSet)
    }

    /// PrimaryExpr ::= VariableReference | '(' Expr ')' | Literal | Number | FunctionCall
    fn parse_primary(&mut self) -> Parsed {
        match self.peek().tok {
            Tok::LParen => {
                let open = self.advance();
                let column = self.column(open.start);
                self.open.push(Open::Group);
                let ty = self.parse_expr()?;
                self.open.pop();
                if !self.eat(&Tok::RParen) {
                    return Err(self.fail(format!(
                        "expected ')' to close the '(' opened at column {column}"
                    )));
                }
                Ok(ty)
            }
            Tok::Literal => {
                self.advance();
                Ok(XPathType::String)
            }
            Tok::Number => {
                self.advance();
                Ok(XPathType::Number)
            }
            Tok::Variable => Err(self.fail(format!(
                "variables are not supported: the hierarchy document binds none (found '{}')",
                self.text(self.peek())
            ))),
            Tok::Function => self.parse_call(),
            _ => Err(self.unexpected()),
        }
    }

    /// FunctionCall ::= FunctionName '(' (Argument (',' Argument)*)? ')'
    fn parse_call(&mut self) -> Parsed {
        let name_token = self.advance();
        let name = self.text(&name_token).to_owned();
        let Some(function) = FUNCTIONS.iter().find(|f| f.name == name) else {
            return Err(self.error_at(name_token.start, unknown_function(&name)));
        };
        let open_column = self.column(self.peek().start);
        if !self.eat(&Tok::LParen) {
            return Err(self.fail(format!("expected '(' after '{name}'")));
        }
        let mut arguments: Vec<(usize, XPathType)> = Vec::new();
        if self.peek().tok == Tok::RParen {
            let close = self.advance();
            let in_predicate = self.open.iter().any(|o| matches!(o, Open::Predicate(_)));
            if matches!(function.name, "last" | "position") && !in_predicate {
                self.context_calls.push((name_token.start, close.end));
            }
        } else {
            self.open.push(Open::Group);
            loop {
                let start = self.peek().start;
                arguments.push((start, self.parse_expr()?));
                if self.eat(&Tok::Comma) {
                    continue;
                }
                if self.eat(&Tok::RParen) {
                    break;
                }
                return Err(self.fail(format!(
                    "expected ',' or ')' in the arguments of '{name}' opened at column {open_column}"
                )));
            }
            self.open.pop();
        }
        if !function.accepts(arguments.len()) {
            return Err(self.error_at(
                name_token.start,
                format!(
                    "function '{name}' {}, got {}",
                    function.arity(),
                    arguments.len()
                ),
            ));
        }
        if function.node_set_args {
            for &(start, ty) in &arguments {
                let what = format!("function '{name}' takes a node-set");
                self.require_node_set(ty, start, &what)?;
            }
        }
        Ok(function.returns)
    }
}

// ---------------------------------------------------------------------------
// Evaluation with libxml2
// ---------------------------------------------------------------------------

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
