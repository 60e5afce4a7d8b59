//! Turning a deserialization error into a [`Diagnostic`]: the YAML is read a
//! second time as a bare tree of positions, and the error's position is looked
//! up in it to name the field (`thresholds[0].above`).
//!
//! # Decisions
//!
//! - **The second read stays.** `serde_path_to_error` gives the field path
//!   in one pass for type errors, but not the place to point at for a
//!   missing field (the mapping that lacks it) or for a YAML syntax error,
//!   and the diagnostics promise `file:line:column: field.path` for every
//!   error. The second read happens only on a file that failed, so a file
//!   that loads is read once.

use std::fmt;
use std::path::Path;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_saphyr::MessageFormatter;

use super::Diagnostic;
use super::value::{Pos, Sp};

/// The path of the file as a whole.
pub(crate) const DOCUMENT: &str = "(document)";
/// The path of a YAML syntax error.
pub(crate) const SYNTAX: &str = "(syntax)";

/// A YAML node, positions only.
enum Node {
    Map(Vec<(Sp<Key>, Sp<Node>)>),
    Seq(Vec<Sp<Node>>),
    Scalar,
}

/// A mapping key as text (`?` for a non-scalar key).
struct Key(String);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(Key(v.to_owned()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Key, E> {
                Ok(Key("~".into()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Key, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Key("?".into()))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Key, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Key("?".into()))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Node;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any YAML node")
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_i128<E: de::Error>(self, _: i128) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_u128<E: de::Error>(self, _: u128) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_none<E: de::Error>(self) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Node, D2::Error> {
                Node::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Node, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = s.next_element::<Sp<Node>>()? {
                    items.push(item);
                }
                Ok(Node::Seq(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Node, A::Error> {
                let mut entries = Vec::new();
                while let Some(key) = m.next_key::<Sp<Key>>()? {
                    let value = m.next_value::<Sp<Node>>()?;
                    entries.push((key, value));
                }
                Ok(Node::Map(entries))
            }
        }
        d.deserialize_any(V)
    }
}

/// Appends a key to a field path.
pub(crate) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// The field at `at`: the deepest node starting at or before it.
/// `whole_mapping`: the error is about a mapping itself (a missing field),
/// which serde reports at the mapping's last key; then the mapping's own
/// position is returned.
fn path_at(node: &Sp<Node>, at: Pos, whole_mapping: bool, path: &mut String) -> Option<Pos> {
    match &node.value {
        Node::Map(entries) => {
            if whole_mapping && node.at == at {
                return Some(node.at);
            }
            let (key, value) = entries.iter().rev().find(|(k, _)| k.at <= at)?;
            if whole_mapping && key.at == at {
                return Some(node.at);
            }
            *path = join(path, &key.value.0);
            if key.at == at {
                None
            } else {
                path_at(value, at, whole_mapping, path)
            }
        }
        Node::Seq(items) => {
            let (i, item) = items.iter().enumerate().rev().find(|(_, n)| n.at <= at)?;
            path.push_str(&format!("[{i}]"));
            path_at(item, at, whole_mapping, path)
        }
        Node::Scalar => None,
    }
}

/// The message of a serde-saphyr error, without its location suffix.
fn message_of(e: &serde_saphyr::Error) -> String {
    serde_saphyr::UserMessageFormatter
        .format_message(e.without_snippet())
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// Where an error is, the start of the file when unknown.
fn position(e: &serde_saphyr::Error) -> Pos {
    e.location()
        .filter(|l| l.line() > 0)
        .map_or(Pos::START, |l| Pos {
            line: usize::try_from(l.line()).unwrap_or(usize::MAX),
            column: usize::try_from(l.column()).unwrap_or(usize::MAX),
        })
}

/// A deserialization error of `text` (the contents of `file`) as a diagnostic.
pub(crate) fn diagnostic(file: &Path, text: &str, e: &serde_saphyr::Error) -> Diagnostic {
    let message = message_of(e);
    let mut at = position(e);
    let missing = message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.split('`').next())
        .map(str::to_owned);
    let path = match serde_saphyr::from_str::<Option<Sp<Node>>>(text) {
        // The YAML itself does not parse: report the syntax error, which may
        // lie beyond the place where the typed reading gave up.
        Err(syntax) => {
            let at = position(&syntax);
            return Diagnostic {
                file: file.to_path_buf(),
                line: at.line,
                column: at.column,
                path: SYNTAX.to_owned(),
                message: message_of(&syntax),
            };
        }
        Ok(root) => {
            let mut path = String::new();
            if let Some(root) = &root
                && let Some(mapping) = path_at(root, at, missing.is_some(), &mut path)
            {
                at = mapping;
            }
            if let Some(field) = &missing {
                path = join(&path, field);
            }
            if path.is_empty() {
                DOCUMENT.to_owned()
            } else {
                path
            }
        }
    };
    Diagnostic {
        file: file.to_path_buf(),
        line: at.line,
        column: at.column,
        path,
        message,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::config::raw::RawWatch;

    fn diag(yaml: &str) -> String {
        let e = serde_saphyr::from_str::<Option<Sp<RawWatch>>>(yaml).unwrap_err();
        diagnostic(Path::new("w.yaml"), yaml, &e).to_string()
    }

    #[test]
    fn serde_errors_name_their_field() {
        assert_eq!(
            diag(
                "url: u\nschedule: {every: 1s}\nthresholds:\n  - name: a\n    xpath: //a\n  - xpath: //b\n    above: 1\n"
            ),
            "w.yaml:6:5: thresholds[1].name: missing field `name`"
        );
        assert_eq!(
            diag("schedule:\n  every: 1s\nfetch:\n  headers:\n    a: b\n"),
            "w.yaml:1:1: url: missing field `url`"
        );
        assert_eq!(
            diag(
                "url: u\nschedule: {every: 1s}\nthresholds:\n  - xpath: //b\n    outside: [1, 2]\n"
            ),
            "w.yaml:4:5: thresholds[0].name: missing field `name`"
        );
        assert_eq!(
            diag("url: u\nschedule:\n  every: 1s\n  evry: 2s\n"),
            "w.yaml:4:3: schedule.evry: unknown field `evry`, expected one of cron, timezone, every, jitter"
        );
        assert_eq!(
            diag("url: u\nschedule: {every: 1s}\nclips:\n  c: {xpath: [1, 2]}\n"),
            "w.yaml:4:14: clips.c.xpath: expected string scalar"
        );
        assert_eq!(
            diag("- url: u\n"),
            "w.yaml:1:1: (document): expected mapping start"
        );
        assert_eq!(
            diag("url: u\nschedule: {every: 1s\n"),
            "w.yaml:2:11: (syntax): unclosed bracket '{'"
        );
    }

    #[test]
    fn a_diagnostic_without_position() {
        let d = Diagnostic {
            file: "watches".into(),
            line: 0,
            column: 0,
            path: "watches".into(),
            message: "missing".into(),
        };
        assert_eq!(d.to_string(), "watches: watches: missing");
    }
}
