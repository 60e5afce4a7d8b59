//! Tokens (XPath 1.0 §3.7): splits an expression into tokens, telling `*` the
//! multiplication from `*` the name test and an operator name from a name, a
//! function name or an axis name.

use super::suggestion;

/// The node types a node test can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NodeTypeTest {
    Comment,
    Text,
    ProcessingInstruction,
    Node,
}

/// A token's kind; names, literals and numbers are read back from the token's span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Tok {
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
pub(super) struct Token {
    pub(super) tok: Tok,
    /// Byte offsets of the token in the expression.
    pub(super) start: usize,
    pub(super) end: usize,
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
pub(super) fn describe_char(c: char) -> String {
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
pub(super) fn tokenize(src: &str) -> Vec<Token> {
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
