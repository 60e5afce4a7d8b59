//! Turning a deserialization error into a [`Diagnostic`]: the YAML is read a
//! second time as a bare tree ([`super::node`]), and the error's position is
//! looked up in it to name the field (`thresholds[0].above`).
//!
//! # Decisions
//!
//! - **The second read stays.** `serde_path_to_error` gives the field path
//!   in one pass for type errors, but not the place to point at for a
//!   missing field (the mapping that lacks it) or for a YAML syntax error,
//!   and the diagnostics promise `file:line:column: field.path` for every
//!   error. The second read happens only on a file that failed, so a file
//!   that loads is read once.

use std::path::Path;

use serde_saphyr::MessageFormatter;

use super::Diagnostic;
use super::node::{self, Located, Node};
use super::value::Pos;

/// The path of the file as a whole.
pub(crate) const DOCUMENT: &str = "(document)";
/// The path of a YAML syntax error.
pub(crate) const SYNTAX: &str = "(syntax)";

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
fn path_at(node: &Located<Node>, at: Pos, whole_mapping: bool, path: &mut String) -> Option<Pos> {
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
        Node::Scalar(_) => None,
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
    let path = match node::parse(text) {
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

/// The allowed key `key` was most likely meant to be.
pub(crate) fn did_you_mean<'a>(key: &str, allowed: &'a [String]) -> Option<&'a str> {
    let lower = key.to_lowercase();
    let limit = (key.chars().count() / 3).max(1);
    allowed
        .iter()
        .map(|k| (strsim::damerau_levenshtein(&lower, &k.to_lowercase()), k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k.as_str())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::config::raw::{RawWatch, Sp};

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
