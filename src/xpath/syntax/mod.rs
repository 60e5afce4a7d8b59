//! The syntax checker: XPath 1.0 expressions checked before libxml2 sees them.
//!
//! [`check_syntax`] and [`result_type`] run [`lex`]'s tokenizer, which follows the
//! lexical rules of XPath 1.0 (§3.7), and [`parse`]'s recursive-descent parser of the
//! whole grammar, which also works out each expression's static type. A problem comes
//! back as an [`XPathSyntaxError`] pointing at it. This file holds the public types
//! and entry points and what both steps share (the limits, the error's rendering, the
//! "did you mean" suggestions); the [module documentation](super) says what is checked.

mod lex;
mod parse;

use std::fmt;

pub(super) use parse::{Analysis, analyze};

/// How deeply parentheses, predicates and function arguments may nest.
pub(super) const MAX_NESTING: usize = 64;

/// The widest stretch of the expression [`XPathSyntaxError`]'s `Display` shows.
pub(super) const SNIPPET_WIDTH: usize = 72;

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
/// errors (see the [module documentation](crate::xpath)).
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
