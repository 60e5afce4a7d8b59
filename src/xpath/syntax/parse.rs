//! The parser (XPath 1.0 §2-§3), computing each expression's static type, and the
//! core function library it checks calls against (§4).

use std::borrow::Cow;

use super::lex::{NodeTypeTest, Tok, Token, describe_char, tokenize};
use super::{MAX_NESTING, XPathSyntaxError, XPathType, column_of, suggestion};

/// What the parser learnt about a valid expression.
pub(in crate::xpath) struct Analysis {
    pub(in crate::xpath) ty: XPathType,
    /// Spans of `last()` and `position()` calls outside every predicate.
    context_calls: Vec<(usize, usize)>,
}

impl Analysis {
    /// The expression to hand libxml2. Outside predicates the context is the root
    /// node alone, at position 1 of 1, but libxml2 leaves that size and position
    /// unset and fails on `last()` and `position()` there; they become `(1)`.
    pub(in crate::xpath) fn libxml_expression<'e>(&self, expr: &'e str) -> Cow<'e, str> {
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

/// Tokenizes and parses `expr`: the work behind [`check_syntax`](super::check_syntax)
/// and [`result_type`](super::result_type).
pub(in crate::xpath) fn analyze(expr: &str) -> Result<Analysis, XPathSyntaxError> {
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

// ---------------------------------------------------------------------------
// Parser
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
