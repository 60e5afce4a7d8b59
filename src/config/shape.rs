//! The shape of a file: its YAML tree ([`super::node`]) checked against the
//! JSON Schema of the raw structures ([`super::raw`], from which the schema
//! is derived, so the two never disagree). Every value of the wrong type and
//! every missing key is found in one pass, each as a [`Problem`] naming the
//! value written and an example of a good one
//! (`thresholds[0].above: "high" is not a number; write a number such as
//! 300 or 2.5`), with a value of the right type for the field it is in, so
//! that the rest of the file can still be read ([`super::lenient`]).
//!
//! # Decisions
//!
//! - Scalars are judged as serde-saphyr reads them into the raw types: any
//!   scalar but an empty one is text (`title: 2024` is the text `2024`), a
//!   number or a boolean may be quoted (`"5"`, `"true"`), booleans are
//!   YAML 1.1's (`yes`, `off`), and a whole number must fit its type
//!   (`format` `uint32` and the like; `minimum` is left to validation).
//! - Unknown keys are left to the typed reading, which names them with a
//!   "did you mean"; a value the schema describes more narrowly than the
//!   raw type reads it is left to validation: a secret written inline is
//!   reported there, without printing it ([`ANY_SCALAR`]).
//! - Of `oneOf`/`anyOf` alternatives, a mapping picks the one whose
//!   required key it has when they are told apart by one (`{email: ...}` or
//!   `{webhook: ...}`); otherwise the first that fits without a problem is
//!   taken, or the first that fits at all is checked in depth.
//! - The fix is for the field a problem is in: the nearest mapping entry
//!   around it (`thresholds[0].above` for `above: high`, `outside` for an
//!   element of `outside: [1, x]`), replaced whole by a value of the
//!   field's type.

use std::path::Path;

use serde_json::Value;

use super::Diagnostic;
use super::node::{Key, Located, Node, Scalar};
use super::tree::{DOCUMENT, did_you_mean, join};
use super::value::Pos;

/// Definitions whose raw type takes any scalar and leaves judging it to
/// validation: a secret written inline is an error there, which does not
/// print the secret.
const ANY_SCALAR: &[&str] = &["Secret"];

/// The most characters of a value shown in a message.
const SHOWN: usize = 40;

/// The most keys an example names.
const KEYS_SHOWN: usize = 8;

/// One problem of a file's shape.
pub(crate) struct Problem<'t> {
    /// The field path (`thresholds[0].above`).
    pub path: String,
    /// Where the value was written (for a missing key: its mapping).
    pub at: Pos,
    /// What is wrong and what to write.
    pub message: String,
    /// How to read on past it; `None` for a missing key and a problem of
    /// the document as a whole.
    pub fix: Option<Fix<'t>>,
}

impl Problem<'_> {
    /// The problem as a diagnostic of `file`.
    pub(crate) fn diagnostic(&self, file: &Path) -> Diagnostic {
        Diagnostic {
            file: file.to_path_buf(),
            line: self.at.line,
            column: self.at.column,
            path: self.path.clone(),
            message: self.message.clone(),
        }
    }
}

/// A field to replace: its path, where it is written, and a YAML flow value
/// of its type to write instead.
pub(crate) struct Fix<'t> {
    pub field: String,
    pub key: &'t Located<Key>,
    pub value: &'t Located<Node>,
    pub with: String,
}

/// Every problem of `tree` (read from `text`) against `schema` (a root JSON
/// Schema, its definitions under `$defs`), in the order written.
pub(crate) fn check<'t>(tree: &'t Located<Node>, schema: &Value, text: &str) -> Vec<Problem<'t>> {
    let chars: Vec<char> = text.chars().collect();
    let mut walk = Walk {
        root: schema,
        chars: &chars,
        problems: Vec::new(),
    };
    walk.node(tree, schema, "", None);
    walk.problems
}

/// The field a node lies in: the nearest mapping entry around it, and the
/// schema of the entry's value.
struct Field<'t, 's> {
    path: String,
    key: &'t Located<Key>,
    value: &'t Located<Node>,
    schema: &'s Value,
}

/// A walk over the tree, collecting problems.
struct Walk<'s, 'c, 't> {
    root: &'s Value,
    chars: &'c [char],
    problems: Vec<Problem<'t>>,
}

impl<'s, 't> Walk<'s, '_, 't> {
    /// Checks `node` against `schema`; `path` is its field path.
    fn node(
        &mut self,
        node: &'t Located<Node>,
        schema: &'s Value,
        path: &str,
        field: Option<&Field<'t, 's>>,
    ) {
        let (s, name) = self.resolve(schema);
        if takes_any_scalar(name, &node.value) {
            return;
        }
        if let Some(branches) = alternatives(s) {
            self.union(node, schema, branches, path, field);
            return;
        }
        if !fits_here(&node.value, s) {
            self.wrong(node, schema, path, field);
            return;
        }
        match &node.value {
            Node::Map(entries) => self.mapping(node, entries, s, path),
            Node::Seq(items) => {
                if let Some(item) = s.get("items") {
                    for (i, it) in items.iter().enumerate() {
                        self.node(it, item, &format!("{path}[{i}]"), field);
                    }
                }
            }
            Node::Scalar(_) => {}
        }
    }

    /// The entries of a mapping against its properties (or the schema of
    /// all its values), and its required keys.
    fn mapping(
        &mut self,
        node: &'t Located<Node>,
        entries: &'t [(Located<Key>, Located<Node>)],
        s: &'s Value,
        path: &str,
    ) {
        let properties = s.get("properties").and_then(Value::as_object);
        let values = s.get("additionalProperties").filter(|v| v.is_object());
        for (key, value) in entries {
            let name = key.value.0.as_str();
            let Some(sub) = properties.and_then(|p| p.get(name)).or(values) else {
                continue;
            };
            let child = join(path, name);
            let field = Field {
                path: child.clone(),
                key,
                value,
                schema: sub,
            };
            self.node(value, sub, &child, Some(&field));
        }
        for name in required(s) {
            if !entries.iter().any(|(k, _)| k.value.0 == name) {
                self.problems.push(Problem {
                    path: join(path, name),
                    at: node.at,
                    message: format!("missing field `{name}`"),
                    fix: None,
                });
            }
        }
    }

    /// `node` against the alternatives `branches` of `schema`.
    fn union(
        &mut self,
        node: &'t Located<Node>,
        schema: &'s Value,
        branches: &'s [Value],
        path: &str,
        field: Option<&Field<'t, 's>>,
    ) {
        let fitting: Vec<&'s Value> = branches.iter().filter(|b| self.fits(node, b)).collect();
        let Some(&first) = fitting.first() else {
            self.wrong(node, schema, path, field);
            return;
        };
        if let Node::Map(entries) = &node.value {
            let tagged = self.tagged(&fitting);
            if tagged.len() >= 2 {
                let has = |k: &str| entries.iter().any(|(key, _)| key.value.0 == k);
                let present: Vec<&(&'s Value, &'s str)> =
                    tagged.iter().filter(|(_, k)| has(k)).collect();
                if let [(branch, _)] = present.as_slice() {
                    self.node(node, branch, path, field);
                    return;
                }
                let message = one_key(entries, &tagged, &present);
                self.problem(node, path, message, field);
                return;
            }
        }
        for branch in &fitting {
            if self.clean(node, branch, path, field) {
                return;
            }
        }
        self.node(node, first, path, field);
    }

    /// Of `branches`, the mappings told apart by one required key, with it.
    fn tagged(&self, branches: &[&'s Value]) -> Vec<(&'s Value, &'s str)> {
        branches
            .iter()
            .filter_map(|b| {
                let (s, _) = self.resolve(b);
                match required(s).as_slice() {
                    [key] if types(s).contains(&"object") => Some((*b, *key)),
                    _ => None,
                }
            })
            .collect()
    }

    /// Whether `node` has no problem against `schema`.
    fn clean(
        &self,
        node: &'t Located<Node>,
        schema: &'s Value,
        path: &str,
        field: Option<&Field<'t, 's>>,
    ) -> bool {
        let mut trial = Walk {
            root: self.root,
            chars: self.chars,
            problems: Vec::new(),
        };
        trial.node(node, schema, path, field);
        trial.problems.is_empty()
    }

    /// Whether `node` is of a kind `schema` allows, its contents unchecked.
    fn fits(&self, node: &Located<Node>, schema: &'s Value) -> bool {
        let (s, name) = self.resolve(schema);
        if takes_any_scalar(name, &node.value) {
            return true;
        }
        match alternatives(s) {
            Some(branches) => branches.iter().any(|b| self.fits(node, b)),
            None => fits_here(&node.value, s),
        }
    }

    /// Reports `node` as not what `schema` wants.
    fn wrong(
        &mut self,
        node: &'t Located<Node>,
        schema: &'s Value,
        path: &str,
        field: Option<&Field<'t, 's>>,
    ) {
        let described = field.map_or(schema, |f| f.schema);
        let mut message = format!(
            "{} is not {}; write {}",
            self.show(node),
            self.noun(schema),
            self.example(schema, described)
        );
        let choices = self.choices(schema);
        if let (Node::Scalar(Scalar::Text(text)), Some(choices)) = (&node.value, choices)
            && let Some(better) = did_you_mean(text, &choices)
        {
            message.push_str(&format!(" (did you mean `{better}`?)"));
        }
        self.problem(node, path, message, field);
    }

    fn problem(
        &mut self,
        node: &'t Located<Node>,
        path: &str,
        message: String,
        field: Option<&Field<'t, 's>>,
    ) {
        let fix = field.map(|f| Fix {
            field: f.path.clone(),
            key: f.key,
            value: f.value,
            with: self.stand_in(f.schema, 0),
        });
        self.problems.push(Problem {
            path: if path.is_empty() {
                DOCUMENT.to_owned()
            } else {
                path.to_owned()
            },
            at: node.at,
            message,
            fix,
        });
    }

    /// `schema` with its `$ref`s followed, and the name of the last
    /// definition followed.
    fn resolve(&self, mut schema: &'s Value) -> (&'s Value, Option<&'s str>) {
        let mut name = None;
        for _ in 0..16 {
            let Some(reference) = schema.get("$ref").and_then(Value::as_str) else {
                break;
            };
            let Some(target) = reference
                .strip_prefix('#')
                .and_then(|pointer| self.root.pointer(pointer))
            else {
                break;
            };
            name = reference.rsplit('/').next();
            schema = target;
        }
        (schema, name)
    }

    /// The value as a message shows it: text quoted, other scalars as
    /// written.
    fn show(&self, node: &Located<Node>) -> String {
        let written: String = self
            .chars
            .get(node.offset..node.offset.saturating_add(node.len))
            .unwrap_or_default()
            .iter()
            .collect();
        let written = (!written.is_empty() && written.len() <= SHOWN && !written.contains('\n'))
            .then_some(written);
        match &node.value {
            Node::Map(_) => "a mapping".to_owned(),
            Node::Seq(_) => "a list".to_owned(),
            Node::Scalar(Scalar::Null) => "an empty value".to_owned(),
            Node::Scalar(Scalar::Text(text)) => {
                let short: String = text.chars().take(SHOWN).collect();
                let more = if short.len() < text.len() { "..." } else { "" };
                format!("{short:?}{more}")
            }
            Node::Scalar(Scalar::Bool(b)) => written.unwrap_or_else(|| b.to_string()),
            Node::Scalar(Scalar::Int(i)) => written.unwrap_or_else(|| i.to_string()),
            Node::Scalar(Scalar::Float(f)) => written.unwrap_or_else(|| f.to_string()),
        }
    }

    /// What `schema` wants, as a noun phrase ("a number", "one of all,
    /// data").
    fn noun(&self, schema: &'s Value) -> String {
        let (s, _) = self.resolve(schema);
        if let Some(choices) = self.choices(schema) {
            return format!("one of {}", choices.join(", "));
        }
        if let Some(branches) = alternatives(s) {
            let refs: Vec<&'s Value> = branches.iter().collect();
            let tagged = self.tagged(&refs);
            if tagged.len() >= 2 {
                let keys: Vec<&str> = tagged.iter().map(|(_, k)| *k).collect();
                return format!("a mapping with one of the keys {}", keys.join(", "));
            }
            let mut nouns: Vec<String> = Vec::new();
            for b in branches.iter().filter(|b| !self.is_null(b)) {
                let noun = self.noun(b);
                if !nouns.contains(&noun) {
                    nouns.push(noun);
                }
            }
            return nouns.join(" or ");
        }
        let nouns: Vec<String> = types(s)
            .into_iter()
            .filter(|t| *t != "null")
            .map(|t| type_noun(t, s))
            .collect();
        if nouns.is_empty() {
            "empty".to_owned()
        } else {
            nouns.join(" or ")
        }
    }

    /// An example of what `schema` wants, from the `e.g.` of `described`'s
    /// description where there is one.
    fn example(&self, schema: &'s Value, described: &'s Value) -> String {
        let (s, _) = self.resolve(schema);
        if self.choices(schema).is_some() {
            return "one of those".to_owned();
        }
        if let Some(branches) = alternatives(s) {
            let refs: Vec<&'s Value> = branches.iter().collect();
            if self.tagged(&refs).len() >= 2 {
                return "exactly one of them".to_owned();
            }
            return branches
                .iter()
                .find(|b| !self.is_null(b))
                .map_or_else(|| "nothing".to_owned(), |b| self.example(b, described));
        }
        let Some(kind) = types(s).into_iter().find(|t| *t != "null") else {
            return "nothing".to_owned();
        };
        match kind {
            "string" => {
                let given = self.description(described).or_else(|| self.description(s));
                given
                    .and_then(example_in)
                    .map_or_else(|| "text".to_owned(), |e| format!("text such as {e}"))
            }
            "number" => "a number such as 300 or 2.5".to_owned(),
            "integer" => "a whole number such as 3".to_owned(),
            "boolean" => "true or false".to_owned(),
            "array" => self.list_example(s),
            "object" => object_example(s),
            other => other.to_owned(),
        }
    }

    /// An example of a list of `s`'s items.
    fn list_example(&self, s: &'s Value) -> String {
        let item = s.get("items").map(|i| self.resolve(i).0);
        let kind = item.and_then(|i| types(i).into_iter().find(|t| *t != "null"));
        match kind {
            Some("number" | "integer") => "a list such as [1, 2]".to_owned(),
            Some("object") => "a list of mappings, one `- key: value` item each".to_owned(),
            _ => "a list such as [a, b]".to_owned(),
        }
    }

    /// The description of `schema` (its own, or its definition's).
    fn description(&self, schema: &'s Value) -> Option<&'s str> {
        schema
            .get("description")
            .or_else(|| self.resolve(schema).0.get("description"))
            .and_then(Value::as_str)
    }

    /// The texts `schema` allows, when it allows nothing else (an enum).
    fn choices(&self, schema: &'s Value) -> Option<Vec<String>> {
        let (s, _) = self.resolve(schema);
        if let Some(branches) = alternatives(s) {
            let mut out = Vec::new();
            for b in branches.iter().filter(|b| !self.is_null(b)) {
                out.extend(self.choices(b)?);
            }
            return (!out.is_empty()).then_some(out);
        }
        if let Some(Value::Array(values)) = s.get("enum") {
            return values
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect();
        }
        s.get("const")?.as_str().map(|c| vec![c.to_owned()])
    }

    /// Whether `schema` allows only null.
    fn is_null(&self, schema: &'s Value) -> bool {
        types(self.resolve(schema).0) == ["null"]
    }

    /// A YAML flow value of `schema`'s type: the first alternative's, the
    /// first constant, or a minimal value with the required keys.
    fn stand_in(&self, schema: &'s Value, depth: usize) -> String {
        let (s, _) = self.resolve(schema);
        if depth > 8 {
            return "~".to_owned();
        }
        if let Some(branches) = alternatives(s) {
            return branches
                .iter()
                .find(|b| !self.is_null(b))
                .map_or_else(|| "~".to_owned(), |b| self.stand_in(b, depth + 1));
        }
        if let Some(c) = s
            .get("const")
            .or_else(|| s.get("enum").and_then(|e| e.get(0)))
        {
            return c
                .as_str()
                .map_or_else(|| c.to_string(), |t| format!("'{}'", t.replace('\'', "''")));
        }
        match types(s).into_iter().find(|t| *t != "null") {
            Some("string") => "''".to_owned(),
            Some("number" | "integer") => "0".to_owned(),
            Some("boolean") => "false".to_owned(),
            Some("array") => "[]".to_owned(),
            Some("object") => {
                let properties = s.get("properties");
                let entries: Vec<String> = required(s)
                    .into_iter()
                    .map(|k| {
                        let value = properties
                            .and_then(|p| p.get(k))
                            .map_or_else(|| "~".to_owned(), |v| self.stand_in(v, depth + 1));
                        format!("{k}: {value}")
                    })
                    .collect();
                format!("{{{}}}", entries.join(", "))
            }
            _ => "~".to_owned(),
        }
    }
}

/// Whether `node` is a scalar a definition of [`ANY_SCALAR`] (named `name`)
/// takes as it is.
fn takes_any_scalar(name: Option<&str>, node: &Node) -> bool {
    name.is_some_and(|n| ANY_SCALAR.contains(&n))
        && matches!(node, Node::Scalar(s) if !matches!(s, Scalar::Null))
}

/// The `oneOf` or `anyOf` alternatives of a schema.
fn alternatives(s: &Value) -> Option<&[Value]> {
    s.get("oneOf")
        .or_else(|| s.get("anyOf"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
}

/// The `type` of a schema: one name or a list; empty when there is none.
fn types(s: &Value) -> Vec<&str> {
    match s.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The `required` keys of a schema.
fn required(s: &Value) -> Vec<&str> {
    s.get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Whether `node` is of a kind the schema `s` (no `$ref`, no alternatives)
/// allows.
fn fits_here(node: &Node, s: &Value) -> bool {
    if let Some(c) = s.get("const") {
        return matches_const(node, c);
    }
    if let Some(values) = s.get("enum").and_then(Value::as_array) {
        return values.iter().any(|c| matches_const(node, c));
    }
    let types = types(s);
    types.is_empty() || types.iter().any(|t| kind_fits(node, t, s))
}

/// Whether `node` is of type `t` as serde-saphyr reads it.
fn kind_fits(node: &Node, t: &str, s: &Value) -> bool {
    let Node::Scalar(scalar) = node else {
        return matches!(
            (t, node),
            ("object", Node::Map(_)) | ("array", Node::Seq(_))
        );
    };
    match (t, scalar) {
        ("null", Scalar::Null) => true,
        ("string", scalar) => !matches!(scalar, Scalar::Null),
        ("boolean", Scalar::Bool(_)) => true,
        ("boolean", Scalar::Text(text)) => yaml_bool(text),
        ("number", Scalar::Int(_) | Scalar::Float(_)) => true,
        ("number", Scalar::Text(text)) => number_text(text),
        ("integer", Scalar::Int(i)) => in_bounds(*i, s),
        ("integer", Scalar::Text(text)) => integer_text(text).is_some_and(|i| in_bounds(i, s)),
        _ => false,
    }
}

/// Whether `node` is the constant `c`.
fn matches_const(node: &Node, c: &Value) -> bool {
    match (node, c) {
        (Node::Scalar(Scalar::Null), Value::Null) => true,
        (Node::Scalar(Scalar::Text(t)), Value::String(s)) => t == s,
        (Node::Scalar(Scalar::Bool(b)), Value::Bool(v)) => b == v,
        (Node::Scalar(Scalar::Int(i)), Value::Number(n)) => n.to_string() == i.to_string(),
        _ => false,
    }
}

/// YAML 1.1's booleans, as serde-saphyr reads a boolean.
fn yaml_bool(text: &str) -> bool {
    let t = text.trim();
    ["true", "false", "yes", "no", "y", "n", "on", "off"]
        .iter()
        .any(|b| t.eq_ignore_ascii_case(b))
}

/// Whether text reads as a number.
fn number_text(text: &str) -> bool {
    let t = text.trim();
    t.parse::<f64>().is_ok()
        || integer_text(t).is_some()
        || [".inf", "+.inf", "-.inf", ".nan"]
            .iter()
            .any(|s| t.eq_ignore_ascii_case(s))
}

/// Text as a whole number (decimal, `0x` hexadecimal or `0o` octal).
fn integer_text(text: &str) -> Option<i128> {
    let t = text.trim();
    let (negative, digits) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let value = if let Some(hex) = digits.strip_prefix("0x") {
        i128::from_str_radix(hex, 16).ok()?
    } else if let Some(octal) = digits.strip_prefix("0o") {
        i128::from_str_radix(octal, 8).ok()?
    } else {
        digits.parse::<i128>().ok()?
    };
    Some(if negative { -value } else { value })
}

/// The range of a whole number of the schema's `format`.
fn bounds(s: &Value) -> (i128, i128) {
    match s.get("format").and_then(Value::as_str) {
        Some("uint8") => (0, u8::MAX.into()),
        Some("uint16") => (0, u16::MAX.into()),
        Some("uint32") => (0, u32::MAX.into()),
        Some("uint" | "uint64") => (0, u64::MAX.into()),
        Some("int8") => (i8::MIN.into(), i8::MAX.into()),
        Some("int16") => (i16::MIN.into(), i16::MAX.into()),
        Some("int32") => (i32::MIN.into(), i32::MAX.into()),
        Some("int" | "int64") => (i64::MIN.into(), i64::MAX.into()),
        _ => (i128::MIN, i128::MAX),
    }
}

fn in_bounds(i: i128, s: &Value) -> bool {
    let (low, high) = bounds(s);
    (low..=high).contains(&i)
}

/// A type's noun: "text", "a number", "a whole number from 0 to 255".
fn type_noun(t: &str, s: &Value) -> String {
    match t {
        "string" => "text".to_owned(),
        "number" => "a number".to_owned(),
        "integer" => match bounds(s) {
            (0, high) if high <= u32::MAX.into() => format!("a whole number from 0 to {high}"),
            (0, _) => "a whole number, 0 or more".to_owned(),
            _ => "a whole number".to_owned(),
        },
        "boolean" => "true or false".to_owned(),
        "array" => "a list".to_owned(),
        "object" => "a mapping".to_owned(),
        other => other.to_owned(),
    }
}

/// An example of a mapping of the schema `s`.
fn object_example(s: &Value) -> String {
    let required = required(s);
    if !required.is_empty() {
        return format!("a mapping with {}", required.join(", "));
    }
    match s.get("properties").and_then(Value::as_object) {
        Some(properties) => {
            let mut keys: Vec<&str> = properties.keys().map(String::as_str).collect();
            keys.sort_unstable();
            let more = if keys.len() > KEYS_SHOWN { ", ..." } else { "" };
            keys.truncate(KEYS_SHOWN);
            format!("a mapping of some of {}{more}", keys.join(", "))
        }
        None => "a mapping of NAME: value entries".to_owned(),
    }
}

/// The example a description gives after `e.g.`, if any: `1h` from "At
/// most one message per interval, e.g. 1h.".
fn example_in(description: &str) -> Option<String> {
    let (_, rest) = description.split_once("e.g. ")?;
    let end = [". ", ", ", ")", ";"]
        .iter()
        .filter_map(|stop| rest.find(stop))
        .min()
        .unwrap_or(rest.len());
    let example = rest[..end].trim().trim_end_matches('.');
    let example = example.trim_matches(['"', '`']);
    (!example.is_empty()).then(|| example.to_owned())
}

/// The message of a mapping that should have exactly one of the keys of
/// `tagged` and has `present` of them.
fn one_key(
    entries: &[(Located<Key>, Located<Node>)],
    tagged: &[(&Value, &str)],
    present: &[&(&Value, &str)],
) -> String {
    let keys: Vec<String> = tagged.iter().map(|(_, k)| (*k).to_owned()).collect();
    let written: Vec<&str> = entries.iter().map(|(k, _)| k.value.0.as_str()).collect();
    if present.is_empty() {
        let hint = match written.as_slice() {
            [only] => did_you_mean(only, &keys)
                .map(|better| format!(" (did you mean `{better}`?)"))
                .unwrap_or_default(),
            _ => String::new(),
        };
        format!(
            "{{{}}} has none of the keys {}; write exactly one{hint}",
            written.join(", "),
            keys.join(", ")
        )
    } else {
        let both: Vec<&str> = present.iter().map(|(_, k)| *k).collect();
        format!(
            "{{{}}} has more than one of the keys {}; write exactly one",
            written.join(", "),
            both.join(" and ")
        )
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::config::node::parse;
    use crate::config::raw::{RawDaemon, RawWatch, Sp};

    /// The problems of `yaml` as a watch file (`watch`) or a daemon file.
    fn problems(yaml: &str, watch: bool) -> Vec<String> {
        let schema = if watch {
            schemars::schema_for!(Option<Sp<RawWatch>>).to_value()
        } else {
            schemars::schema_for!(Option<Sp<RawDaemon>>).to_value()
        };
        let tree = parse(yaml).unwrap().unwrap();
        check(&tree, &schema, yaml)
            .iter()
            .map(|p| {
                let fix = p
                    .fix
                    .as_ref()
                    .map(|f| format!(" [{} = {}]", f.field, f.with))
                    .unwrap_or_default();
                format!(
                    "{}:{}: {}: {}{fix}",
                    p.at.line, p.at.column, p.path, p.message
                )
            })
            .collect()
    }

    #[test]
    fn every_wrong_type_is_found_with_its_value_an_example_and_a_fix() {
        let yaml = "url: https://example.org/\n\
                    schedule: {every: 5m, jitter: [1s]}\n\
                    fetch: {retries: many, headers_cross_origin: maybe, max_redirects: -1}\n\
                    clips:\n  a: [//a]\n  b: {xpath: //b, extract: summary}\n\
                    thresholds:\n  - name: t\n    xpath: //a\n    above: high\n    outside: [1, x]\n\
                    monitor: everything\ntitle: 2024\n";
        assert_eq!(
            problems(yaml, true),
            [
                "2:31: schedule.jitter: a list is not text; write text [schedule.jitter = '']",
                "3:18: fetch.retries: \"many\" is not a whole number from 0 to 4294967295; write a whole number such as 3 [fetch.retries = 0]",
                "3:46: fetch.headers_cross_origin: \"maybe\" is not true or false; write true or false [fetch.headers_cross_origin = false]",
                "3:68: fetch.max_redirects: -1 is not a whole number, 0 or more; write a whole number such as 3 [fetch.max_redirects = 0]",
                "5:6: clips.a: a list is not a mapping; write a mapping of some of cache_control, description, extract, keywords, metrics, public, stylesheet, xpath [clips.a = {}]",
                "6:28: clips.b.extract: \"summary\" is not one of article, records, region; write one of those [clips.b.extract = 'article']",
                "10:12: thresholds[0].above: \"high\" is not a number; write a number such as 300 or 2.5 [thresholds[0].above = 0]",
                "11:18: thresholds[0].outside[1]: \"x\" is not a number; write a number such as 300 or 2.5 [thresholds[0].outside = []]",
                "12:10: monitor: \"everything\" is not one of all, data; write one of those [monitor = 'all']",
            ]
        );
    }

    #[test]
    fn missing_keys_and_alternatives() {
        let yaml = "url: u\nthresholds:\n  - xpath: //a\n";
        assert_eq!(
            problems(yaml, true),
            [
                "3:5: thresholds[0].name: missing field `name`",
                "1:1: schedule: missing field `schedule`",
            ]
        );
        let yaml = "notifiers:\n  a: {emial: {to: [x]}}\n  b: {file: {path: [x]}}\n  \
                    c: {file: {path: p}, email: {to: [x]}}\n\
                    smtp: {host: h, from: f, port: 70000, password: hunter2}\n\
                    listen: [1]\n";
        assert_eq!(
            problems(yaml, false),
            [
                "2:6: notifiers.a: {emial} has none of the keys email, webhook, file, slack, teams, discord, telegram, matrix, ntfy, gotify, url; write exactly one (did you mean `email`?) [notifiers.a = {email: {to: []}}]",
                "3:20: notifiers.b.file.path: a list is not text; write text [notifiers.b.file.path = '']",
                "4:6: notifiers.c: {file, email} has more than one of the keys email and file; write exactly one [notifiers.c = {email: {to: []}}]",
                "5:32: smtp.port: 70000 is not a whole number from 0 to 65535; write a whole number such as 3 [smtp.port = 0]",
                "6:9: listen: a list is not text; write text such as 127.0.0.1:8080 [listen = '']",
            ]
        );
        // Nothing wrong: nothing found (an inline secret is validation's).
        assert!(
            problems(
                "url: u\nschedule: {every: 1s}\nfetch: {auth: {bearer: {token: x}}}\n",
                true
            )
            .is_empty()
        );
    }

    #[test]
    fn examples_come_from_descriptions() {
        assert_eq!(
            example_in("The HTTP server's address, e.g. 127.0.0.1:8080. Without it"),
            Some("127.0.0.1:8080".to_owned())
        );
        assert_eq!(
            example_in("At most one message per interval, e.g. 1h."),
            Some("1h".to_owned())
        );
        assert_eq!(example_in("Host name."), None);
        assert_eq!(integer_text("0x10"), Some(16));
        assert_eq!(integer_text("-3"), Some(-3));
        assert!(number_text("2.5") && number_text(".inf") && !number_text("high"));
    }
}
