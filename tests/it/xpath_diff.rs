//! The XPath checker against libxml2: a differential property test.
//!
//! `semclip validate` accepts an XPath when [`check_syntax`] does, and the
//! daemon later hands it to libxml2. The two must agree: whatever the checker
//! accepts, libxml2 compiles and evaluates (on a hierarchy document, through
//! [`HierarchyDoc::evaluate`], the daemon's own path); whatever libxml2
//! compiles and evaluates, the checker accepts, except for what it refuses on
//! purpose (static type errors, unbound variables and namespace prefixes,
//! functions outside the core library; see `src/xpath/mod.rs`).
//!
//! Expressions are generated from the XPath 1.0 grammar (steps, axes, node
//! tests, predicates, operators, function calls, literals, numbers), then
//! mutated (a character deleted, inserted or the text cut short), so both
//! valid and nearly valid expressions are tried; a third property makes the
//! near misses people write (a bracket dropped, an operator doubled, a
//! function misnamed) and asks that the two accept or refuse together.
//! Shrunk failures are kept in
//! `tests/proptest-regressions/`, and each disagreement found is a unit test
//! in `src/xpath/mod.rs`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Mutex, OnceLock};

use proptest::prelude::*;
use semclip::xpath::{HierarchyDoc, XPathError, XPathSyntaxError, check_syntax};

/// A small hierarchy document.
const DOC: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<page label="Quotes" xpath="/page"><!-- c --><?pi x?>
  <table label="Shares" xpath="/page/table[@label='Shares']">
    <row key="GAZP" xpath="/page/table[@label='Shares']/row[@key='GAZP']">
      <cell col="Last" num="251.3" xpath="/page/table[@label='Shares']/row[@key='GAZP']/cell[@col='Last']">251,30</cell>
    </row>
  </table>
  <text xpath="/page/text">and or div mod</text>
</page>"#;

const NAMES: &[&str] = &[
    "page", "table", "row", "cell", "text", "node", "comment", "and", "or", "div", "mod", "child",
    "self", "x-y", "a.b", "_u", "é", "ряд", "Ωx", "x\u{b7}y", "日本",
];

const AXES: &[&str] = &[
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
    "bogus",
];

const FUNCTIONS: &[&str] = &[
    "last",
    "position",
    "count",
    "id",
    "local-name",
    "namespace-uri",
    "name",
    "string",
    "concat",
    "starts-with",
    "contains",
    "substring-before",
    "substring-after",
    "substring",
    "string-length",
    "normalize-space",
    "translate",
    "boolean",
    "not",
    "true",
    "false",
    "lang",
    "number",
    "sum",
    "floor",
    "ceiling",
    "round",
    "escape-uri",
    "foo",
    "text",
    "node",
    "key",
];

const OPERATORS: &[&str] = &[
    "or", "and", "=", "!=", "<", "<=", ">", ">=", "+", "-", "*", "div", "mod", "|",
];

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(NAMES).prop_map(str::to_owned),
        1 => "[a-z]{1,3}:[a-z]{1,3}",
        1 => "[a-z]{1,3}:\\*",
    ]
}

fn node_test() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => name(),
        2 => Just("*".to_owned()),
        1 => Just("text()".to_owned()),
        1 => Just("node()".to_owned()),
        1 => Just("comment()".to_owned()),
        1 => Just("processing-instruction()".to_owned()),
        1 => Just("processing-instruction('pi')".to_owned()),
        1 => Just("processing-instruction(1)".to_owned()),
    ]
}

fn step() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => node_test(),
        2 => node_test().prop_map(|t| format!("@{t}")),
        2 => (prop::sample::select(AXES), node_test()).prop_map(|(a, t)| format!("{a}::{t}")),
        1 => Just(".".to_owned()),
        1 => Just("..".to_owned()),
    ]
}

fn literal() -> impl Strategy<Value = String> {
    prop_oneof![
        "'[a-z \"]{0,4}'",
        "\"[a-z ']{0,4}\"",
        "[0-9]{1,3}",
        "[0-9]{0,2}\\.[0-9]{0,2}",
        "\\$[a-z]{1,3}",
    ]
}

/// Space around an operator: none at times when `glued` (libxml2 reads
/// `a orb` where XPath 1.0 sees the name `orb`), else one.
fn space(glued: bool) -> BoxedStrategy<&'static str> {
    if glued {
        prop::sample::select(&["", "", "", " ", "\n"][..]).boxed()
    } else {
        prop::sample::select(&[" ", "\n", "  "][..]).boxed()
    }
}

/// Expressions from the XPath 1.0 grammar; `glued` lets operators touch
/// their operands.
fn expr(glued: bool) -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        4 => step(),
        2 => literal(),
        1 => step().prop_map(|s| format!("/{s}")),
        1 => step().prop_map(|s| format!("//{s}")),
        1 => Just("/".to_owned()),
    ];
    leaf.prop_recursive(4, 40, 4, move |inner| {
        prop_oneof![
            3 => (inner.clone(), space(glued), prop::sample::select(OPERATORS), space(glued), inner.clone())
                .prop_map(|(a, s, op, t, b)| format!("{a}{s}{op}{t}{b}")),
            1 => inner.clone().prop_map(|a| format!("-{a}")),
            3 => (prop::sample::select(FUNCTIONS), prop::collection::vec(inner.clone(), 0..4))
                .prop_map(|(f, args)| format!("{f}({})", args.join(", "))),
            1 => inner.clone().prop_map(|a| format!("({a})")),
            2 => (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a}[{b}]")),
            3 => (inner.clone(), prop::sample::select(&["/", "//"][..]), step())
                .prop_map(|(a, sep, s)| format!("{a}{sep}{s}")),
            2 => (step(), inner.clone()).prop_map(|(s, p)| format!("{s}[{p}]")),
        ]
    })
}

/// An edit of a generated expression.
#[derive(Debug, Clone)]
enum Mutation {
    None,
    Delete(usize),
    Insert(usize, char),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => Just(Mutation::None),
        1 => any::<usize>().prop_map(Mutation::Delete),
        2 => (any::<usize>(), prop::sample::select(&[
            '[', ']', '(', ')', '/', '@', ':', '*', '.', ',', '|', '=', '!', '<', '>', '\'', '"',
            '$', '-', '+', ' ', '0', 'a', 'e', '\t', '\u{a0}', '\u{b7}', '\u{300}',
        ][..])).prop_map(|(i, c)| Mutation::Insert(i, c)),
        1 => any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn mutate(expr: &str, m: &Mutation) -> String {
    let chars: Vec<char> = expr.chars().collect();
    let at = |i: usize, len: usize| if len == 0 { 0 } else { i % len };
    let mut out = chars.clone();
    match *m {
        Mutation::None => {}
        Mutation::Delete(i) if !chars.is_empty() => {
            out.remove(at(i, chars.len()));
        }
        Mutation::Delete(_) => {}
        Mutation::Insert(i, c) => out.insert(at(i, chars.len() + 1), c),
        Mutation::Truncate(i) => out.truncate(at(i, chars.len() + 1)),
    }
    out.into_iter().collect()
}

/// libxml2's own verdict on `expr`: compiled and evaluated on [`DOC`] from
/// the root node, with no checker in front.
///
/// libxml2 prints every XPath error on standard error, and no safe API
/// silences it, so the verdict comes from a child process (this test binary
/// again, running [`libxml_oracle`] alone, its standard error discarded):
/// one JSON line per expression in, one verdict line out.
fn libxml_accepts(expr: &str) -> bool {
    static ORACLE: OnceLock<Mutex<Oracle>> = OnceLock::new();
    let oracle = ORACLE.get_or_init(|| {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "xpath_diff::libxml_oracle",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env(ORACLE_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Mutex::new(Oracle {
            stdin: child.stdin.take().unwrap(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            _child: child,
        })
    });
    let mut oracle = oracle.lock().unwrap_or_else(|p| p.into_inner());
    writeln!(oracle.stdin, "{}", serde_json::to_string(expr).unwrap()).unwrap();
    oracle.stdin.flush().unwrap();
    let mut line = String::new();
    loop {
        line.clear();
        assert_ne!(
            oracle.stdout.read_line(&mut line).unwrap(),
            0,
            "the oracle died"
        );
        // The harness's "test ... " may start the first line.
        if let Some(at) = line.find(VERDICT) {
            return line[at + VERDICT.len()..].trim_end() == "ok";
        }
    }
}

/// Set in the oracle's environment.
const ORACLE_ENV: &str = "SEMCLIP_LIBXML_ORACLE";

/// What starts a verdict line (the test harness prints lines of its own).
const VERDICT: &str = "libxml2 verdict: ";

/// The oracle process: it ends when its standard input closes, that is
/// when this process ends.
struct Oracle {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    _child: Child,
}

/// The oracle: does nothing unless started by [`libxml_accepts`]; then
/// reads JSON strings line by line and answers whether libxml2 compiles and
/// evaluates each.
#[test]
fn libxml_oracle() {
    if std::env::var_os(ORACLE_ENV).is_none() {
        return;
    }
    let Ok(doc) = libxml::parser::Parser::default().parse_string(DOC) else {
        panic!("the sample document parses");
    };
    let Ok(context) = libxml::xpath::Context::new(&doc) else {
        panic!("an XPath context");
    };
    let root = doc.as_node();
    let mut out = std::io::stdout();
    for line in std::io::stdin().lines() {
        let expr: String = serde_json::from_str(&line.unwrap()).unwrap();
        let ok = libxml::xpath::Expression::compile(&expr).is_ok()
            && context.node_evaluate(&expr, &root).is_ok();
        writeln!(out, "{VERDICT}{}", if ok { "ok" } else { "refused" }).unwrap();
        out.flush().unwrap();
    }
}

/// What the checker refuses on purpose although libxml2 may evaluate it:
/// its static checks (libxml2 meets a type error, an unbound variable or
/// prefix, an unknown function or a wrong argument count only if it
/// evaluates that branch: `false() and $x` runs), and a non-ASCII step
/// right after a leading `/` (libxml2's XPath compiler cannot read it; its
/// pattern compiler, which takes simple top-level paths, can). A `/` after
/// a compared literal in a predicate (`[@key='GAZP'/cell`) is read as the
/// predicate's missing `]`, the likelier mistake than a path from a string.
fn deliberate(error: &XPathSyntaxError) -> bool {
    let message = error.message.as_str();
    if message.starts_with("expected ']' to close the predicate")
        && error.expression[error.offset..].starts_with('/')
    {
        return true;
    }
    [
        "continues a path from a node-set",
        "a predicate filters a node-set",
        "joins node-sets",
        "takes a node-set",
        "unknown function",
        "namespaces are not used",
        "variables are not supported",
        "arguments, got",
        "argument, got",
        "libxml2 cannot read a step",
    ]
    .iter()
    .any(|m| message.contains(m))
}

/// Whether `expr` has `/` followed (after blanks) by `/` and a third `/`,
/// or `/ /`: XPath 1.0 has no such path, libxml2 reads it (its leading-`/`
/// loop), and the checker refuses it.
fn libxml2_slash_run(expr: &str) -> bool {
    let squeezed: String = expr.split_whitespace().collect::<Vec<_>>().join("\u{1}");
    squeezed.contains("///") || squeezed.contains("/\u{1}/")
}

/// A near miss of a well-formed expression: what a person editing a
/// watch file gets wrong.
#[derive(Debug, Clone)]
enum NearMiss {
    /// Left as generated.
    None,
    /// The n-th of its brackets (`[`, `]`, `(`, `)`) dropped.
    DropBracket(usize),
    /// The n-th binary operator written twice (`a = = b`).
    DoubleOperator(usize),
    /// The whole expression passed to a function that does not exist, so
    /// libxml2 meets it whatever the expression's value is.
    UnknownFunction(&'static str),
}

/// Names that are no XPath 1.0 core function: other libraries' functions
/// (XPath 2.0, EXSLT, XSLT) and typos of core ones.
const UNKNOWN_FUNCTIONS: &[&str] = &[
    "matches",
    "lower-case",
    "ends-with",
    "str:tokenize",
    "current",
    "document",
    "cont",
    "coount",
    "string-lenght",
];

fn near_miss() -> impl Strategy<Value = NearMiss> {
    prop_oneof![
        1 => Just(NearMiss::None),
        3 => any::<usize>().prop_map(NearMiss::DropBracket),
        3 => any::<usize>().prop_map(NearMiss::DoubleOperator),
        1 => prop::sample::select(UNKNOWN_FUNCTIONS).prop_map(NearMiss::UnknownFunction),
    ]
}

/// Binary operators as [`expr`] spaces them (`space(false)`: blanks on
/// both sides): the byte ranges of each operator token.
fn spaced_operators(expr: &str) -> Vec<(usize, usize)> {
    let bytes = expr.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i + 1;
        let longest = OPERATORS
            .iter()
            .filter(|op| {
                expr[start..].starts_with(**op)
                    && expr[start + op.len()..]
                        .chars()
                        .next()
                        .is_some_and(char::is_whitespace)
            })
            .map(|op| op.len())
            .max();
        match longest {
            // Blanks on both sides: a binary operator (a unary `-` is
            // glued to its operand, a name test `*` to its axis or `/`).
            Some(len) => {
                found.push((start, start + len));
                i = start + len;
            }
            None => i += 1,
        }
    }
    found
}

fn apply(expr: &str, miss: &NearMiss) -> String {
    match *miss {
        NearMiss::None => expr.to_owned(),
        NearMiss::DropBracket(n) => {
            let brackets: Vec<usize> = expr
                .char_indices()
                .filter(|(_, c)| matches!(c, '[' | ']' | '(' | ')'))
                .map(|(i, _)| i)
                .collect();
            match brackets.len() {
                0 => expr.to_owned(),
                len => {
                    let at = brackets[n % len];
                    format!("{}{}", &expr[..at], &expr[at + 1..])
                }
            }
        }
        NearMiss::DoubleOperator(n) => {
            let ops = spaced_operators(expr);
            match ops.len() {
                0 => expr.to_owned(),
                len => {
                    let (start, end) = ops[n % len];
                    format!("{} {}", &expr[..end], &expr[start..])
                }
            }
        }
        NearMiss::UnknownFunction(name) => format!("{name}({expr})"),
    }
}

/// Whether `error` is the checker refusing an expression cut short of the
/// `)` that close it (`-local-name(`, `count(//a`): libxml2 closes calls
/// and parentheses left open at the end of the expression, XPath 1.0 and
/// the checker do not (a watch file with `count(//row` is a mistake to
/// point at, not to guess at). Recognised by the checker accepting the
/// expression once the missing parentheses are added, or refusing it then
/// only for one of its [`deliberate`] reasons (`false() and concat(`).
fn libxml2_closes_at_the_end(expr: &str, error: &XPathSyntaxError) -> bool {
    if error.offset != expr.len() {
        return false;
    }
    let open = expr
        .matches('(')
        .count()
        .saturating_sub(expr.matches(')').count());
    (1..=open).any(
        |n| match check_syntax(&format!("{expr}{}", ")".repeat(n))) {
            Ok(()) => true,
            Err(closed) => deliberate(&closed),
        },
    )
}

/// The number of cases: `PROPTEST_CASES`, or 512.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(512)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        // About 2% are slash runs, skipped.
        max_global_rejects: cases() / 10 + 1024,
        .. ProptestConfig::default()
    })]

    /// Whatever `validate` accepts, the daemon's libxml2 evaluation runs:
    /// grammar-made expressions, operators glued to operands at times, and
    /// a character deleted, inserted or the end cut off.
    #[test]
    fn what_the_checker_accepts_libxml2_evaluates(e in expr(true), m in mutation()) {
        let expr = mutate(&e, &m);
        if check_syntax(&expr).is_ok() {
            let doc = HierarchyDoc::parse(DOC).unwrap();
            let result = doc.evaluate(&expr);
            prop_assert!(
                !matches!(result, Err(XPathError::Evaluation { .. })),
                "the checker accepts {expr:?} but libxml2 refuses it: {result:?}"
            );
            prop_assert!(libxml::xpath::Expression::compile(&expr).is_ok(), "{expr:?} does not compile");
        }
    }

    /// The near misses people write: the checker and libxml2 both accept
    /// or both refuse, but where the checker is stricter on purpose:
    /// [`deliberate`] (libxml2 meets an unknown function, a type error or
    /// an unbound name only in a branch it evaluates, the checker
    /// everywhere) and [`libxml2_closes_at_the_end`] (a dropped `)` at the
    /// end). Slash runs are skipped as above.
    #[test]
    fn the_checker_and_libxml2_agree_on_near_misses(e in expr(false), miss in near_miss()) {
        let expr = apply(&e, &miss);
        prop_assume!(!libxml2_slash_run(&expr));
        match check_syntax(&expr) {
            // Accepted: the daemon's own evaluation runs it (which sends
            // `last()` and `position()` outside predicates as `(1)`;
            // libxml2 alone refuses them there).
            Ok(()) => {
                let doc = HierarchyDoc::parse(DOC).unwrap();
                let result = doc.evaluate(&expr);
                prop_assert!(
                    !matches!(result, Err(XPathError::Evaluation { .. })),
                    "the checker accepts {expr:?} ({miss:?} of {e:?}) but libxml2 refuses it: {result:?}"
                );
                prop_assert!(
                    libxml::xpath::Expression::compile(&expr).is_ok(),
                    "{expr:?} does not compile"
                );
                prop_assert!(
                    !matches!(miss, NearMiss::UnknownFunction(_)),
                    "the checker accepts an unknown function: {expr:?}"
                );
            }
            Err(error) => {
                let libxml = libxml_accepts(&expr);
                prop_assert!(
                    !libxml || deliberate(&error) || libxml2_closes_at_the_end(&expr, &error),
                    "libxml2 evaluates {expr:?} ({miss:?} of {e:?}) but the checker refuses it: {error}"
                );
                if let NearMiss::UnknownFunction(name) = miss {
                    // Called on the whole expression, it is always
                    // evaluated: libxml2 refuses it too.
                    prop_assert!(!libxml, "libxml2 evaluates {expr:?}");
                    // Refused for the name, or for a problem inside its
                    // argument that the parser meets before the call ends.
                    prop_assert!(
                        error.message.contains("unknown function")
                            || error.message.contains("namespaces are not used")
                            || error.offset > name.len(),
                        "{expr:?}: {error}"
                    );
                }
            }
        }
    }

    /// Whatever libxml2 evaluates of the XPath 1.0 grammar, the checker
    /// accepts, but for its deliberate refusals. (Where libxml2 is more
    /// lenient than XPath 1.0, the checker keeps to XPath 1.0: `text()orb`,
    /// an unclosed `true(` at the end, `1e3`, `///a`; so these are
    /// generated with spaced operators and unmutated.)
    #[test]
    fn what_libxml2_evaluates_the_checker_accepts(expr in expr(false)) {
        prop_assume!(!libxml2_slash_run(&expr));
        if let Err(error) = check_syntax(&expr)
            && libxml_accepts(&expr)
        {
            prop_assert!(
                deliberate(&error),
                "libxml2 evaluates {expr:?} but the checker refuses it: {error}"
            );
        }
    }
}
