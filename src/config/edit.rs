//! Edits of the working copy of a file's text that keep every other line
//! and column where it was written: an unknown key's entry blanked out
//! ([`blank_entry`]) and wrong values replaced by values of their type
//! ([`replace_values`]). The typed reading runs again on the result
//! ([`super::lenient`]), and its diagnostics still point into the file as
//! written.
//!
//! # Decisions
//!
//! - Blanking writes spaces over the entry and keeps its line breaks.
//! - A replaced value is written right after its key's colon, on the key's
//!   line, where any value may go (a block sequence below a key may start
//!   at the key's own column, where nothing else may); the old value is
//!   blanked, its line breaks kept. The new value takes the room the old
//!   one left on that line; only a longer one (`{}` for `5`) moves what
//!   follows on the same line, which is nothing outside flow collections.
//! - Where a value ends comes from the tree ([`super::node`]): a scalar's
//!   span, a flow collection's closing bracket, a block collection's last
//!   descendant. When an edit cannot be placed (no colon after the key, no
//!   closing bracket) nothing is edited, and the caller reads no further.

use super::node::{Key, Located, Node};

/// `text` with the mapping entry whose key `key` starts at `line`:`column`
/// (1-based, columns in characters) replaced by spaces, line breaks kept.
/// `None` when the key is not there.
pub(crate) fn blank_entry(text: &str, line: usize, column: usize, key: &str) -> Option<String> {
    let mut chars: Vec<char> = text.chars().collect();
    // The start of every line, as an index into `chars`.
    let mut starts = vec![0usize];
    starts.extend(
        chars
            .iter()
            .enumerate()
            .filter(|(_, c)| **c == '\n')
            .map(|(i, _)| i + 1),
    );
    let line_start = *starts.get(line.checked_sub(1)?)?;
    let start = line_start + column.checked_sub(1)?;
    let written: String = chars.get(start..)?.iter().take(key.len() + 2).collect();
    if !(written.starts_with(key) || written.trim_start_matches(['"', '\'']).starts_with(key)) {
        return None;
    }
    let before = chars[line_start..start]
        .iter()
        .rev()
        .find(|c| !c.is_whitespace())
        .copied();
    let end = match before {
        // In a flow mapping: up to the next `,` or closing bracket at the
        // same depth, the comma included (or the one before, at the end).
        Some('{' | ',') => {
            let (end, comma) = flow_end(&chars, start)?;
            if !comma && before == Some(',') {
                let at = chars[line_start..start]
                    .iter()
                    .rposition(|c| *c == ',')
                    .map(|i| line_start + i)?;
                chars[at] = ' ';
            }
            end
        }
        // In a block mapping (after nothing or sequence dashes): the key's
        // line and the lines below indented deeper (or a sequence at the
        // key's own indentation), blank and comment lines inside included.
        None | Some('-') => {
            let mut end = starts
                .get(line)
                .map_or(chars.len(), |s| s.saturating_sub(1));
            let mut next = line;
            while let Some(&s) = starts.get(next) {
                let e = starts.get(next + 1).map_or(chars.len(), |e| e - 1);
                let content = &chars[s..e.max(s)];
                let indent = content.iter().take_while(|c| **c == ' ').count();
                let rest = &content[indent..];
                let blank = rest.iter().all(|c| c.is_whitespace()) || rest.first() == Some(&'#');
                let deeper = indent + 1 > column
                    || (indent + 1 == column
                        && rest.first() == Some(&'-')
                        && rest.get(1).is_none_or(|c| c.is_whitespace()));
                if !blank && !deeper {
                    break;
                }
                if !blank {
                    end = e;
                }
                next += 1;
            }
            end
        }
        Some(_) => return None,
    };
    for c in chars.get_mut(start..end)? {
        if *c != '\n' {
            *c = ' ';
        }
    }
    Some(chars.into_iter().collect())
}

/// Where the flow mapping entry starting at `start` ends: the index of the
/// `,`, `}` or `]` that ends it at its own depth, and whether it is a comma
/// (then the comma is included in the returned end).
fn flow_end(chars: &[char], start: usize) -> Option<(usize, bool)> {
    let mut depth = 0usize;
    for (i, c) in Structure::new(chars, start) {
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' if depth == 0 => return Some((i, false)),
            '}' | ']' => depth -= 1,
            ',' if depth == 0 => return Some((i + 1, true)),
            _ => {}
        }
    }
    None
}

/// The index just after the bracket closing the flow collection opened at
/// `open`.
fn flow_close(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in Structure::new(chars, open) {
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// The characters of flow YAML from a start on that are structure, with
/// their index: whitespace, quoted scalars and comments are skipped. A quote
/// starts a quoted scalar only where a scalar may start (after `{`, `[`,
/// `,`, `:` or at the start), so `it's` stays plain.
struct Structure<'a> {
    chars: &'a [char],
    i: usize,
    /// The last structure character or quoted scalar seen.
    last: Option<char>,
}

impl<'a> Structure<'a> {
    fn new(chars: &'a [char], start: usize) -> Structure<'a> {
        Structure {
            chars,
            i: start,
            last: None,
        }
    }

    /// Moves past the scalar quoted with `quote` whose opening quote was
    /// just read: `\"` escapes in double quotes, `''` in single quotes.
    fn skip_quoted(&mut self, quote: char) {
        while let Some(&c) = self.chars.get(self.i) {
            self.i += 1;
            if quote == '"' && c == '\\' {
                self.i += 1;
            } else if c == quote {
                if quote == '\'' && self.chars.get(self.i) == Some(&'\'') {
                    self.i += 1;
                } else {
                    return;
                }
            }
        }
    }
}

impl Iterator for Structure<'_> {
    type Item = (usize, char);

    fn next(&mut self) -> Option<(usize, char)> {
        loop {
            let at = self.i;
            let c = *self.chars.get(at)?;
            self.i += 1;
            if c.is_whitespace() {
                continue;
            }
            if matches!(c, '"' | '\'') && matches!(self.last, None | Some('{' | '[' | ',' | ':')) {
                self.skip_quoted(c);
                self.last = Some(c);
                continue;
            }
            let after_space = at
                .checked_sub(1)
                .and_then(|p| self.chars.get(p))
                .is_some_and(|p| p.is_whitespace());
            if c == '#' && after_space {
                while self.chars.get(self.i).is_some_and(|c| *c != '\n') {
                    self.i += 1;
                }
                continue;
            }
            self.last = Some(c);
            return Some((at, c));
        }
    }
}

/// A value to replace: the key it is written under, the value's node, and
/// what goes instead (a YAML flow value).
pub(crate) struct Replacement<'t> {
    pub key: &'t Located<Key>,
    pub value: &'t Located<Node>,
    pub with: String,
}

/// `text` with the values of `replacements` replaced, or `None` when one
/// cannot be placed. A replacement inside another (a value within a
/// replaced one) is left to the outer one.
pub(crate) fn replace_values(text: &str, replacements: &[Replacement]) -> Option<String> {
    let mut chars: Vec<char> = text.chars().collect();
    let mut spans: Vec<(usize, usize, &str)> = Vec::new();
    for r in replacements {
        let colon = colon_after(&chars, r.key.offset.checked_add(r.key.len)?)?;
        let from = colon + 1;
        // A value written elsewhere (an alias) is not there to replace.
        if r.value.len > 0 && r.value.offset < from {
            return None;
        }
        let to = value_end(&chars, r.value)?.max(from);
        spans.push((from, to, &r.with));
    }
    // By start, the outer (longer) one first at a shared start.
    spans.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    let mut kept: Vec<(usize, usize, &str)> = Vec::new();
    for span in spans {
        let inside = kept
            .last()
            .is_some_and(|k| span.0 < k.1 || (span.0, span.1) == (k.0, k.1));
        if !inside {
            kept.push(span);
        }
    }
    // From the end, so that the earlier indices stay right.
    for (from, to, with) in kept.into_iter().rev() {
        let mut old: Vec<char> = chars
            .get(from..to)?
            .iter()
            .map(|c| if matches!(c, '\n' | '\r') { *c } else { ' ' })
            .collect();
        let new: Vec<char> = format!(" {with}").chars().collect();
        let room = old.iter().take_while(|c| **c == ' ').count();
        old.drain(..room.min(new.len()));
        chars.splice(from..to, new.into_iter().chain(old));
    }
    Some(chars.into_iter().collect())
}

/// The index of the colon after a key ending at `from` (spaces, tabs and a
/// closing quote between).
fn colon_after(chars: &[char], from: usize) -> Option<usize> {
    let mut i = from;
    loop {
        match chars.get(i)? {
            ' ' | '\t' | '"' | '\'' => i += 1,
            ':' => return Some(i),
            _ => return None,
        }
    }
}

/// The index just after the last character of `node`; 0 for a scalar
/// written as nothing (an empty value). `None` when a part of it is
/// written before it (an alias, a merged mapping).
fn value_end(chars: &[char], node: &Located<Node>) -> Option<usize> {
    let start = node.offset;
    let parts_after = match &node.value {
        Node::Map(entries) => entries.iter().all(|(k, _)| k.offset >= start),
        Node::Seq(items) => items.iter().all(|i| i.len == 0 || i.offset >= start),
        Node::Scalar(_) => true,
    };
    if !parts_after {
        return None;
    }
    match &node.value {
        Node::Scalar(_) if node.len == 0 => Some(0),
        Node::Scalar(_) => {
            let end = start.checked_add(node.len)?;
            let quote = chars.get(start).filter(|c| matches!(c, '"' | '\''));
            // A quoted scalar whose span leaves out its closing quote.
            let end = match quote {
                Some(q) if end < start + 2 || chars.get(end - 1) != Some(q) => {
                    let mut rest = Structure::new(chars, start);
                    rest.i = start + 1;
                    rest.skip_quoted(*q);
                    rest.i
                }
                _ => end,
            };
            (end <= chars.len()).then_some(end)
        }
        Node::Map(_) | Node::Seq(_) if matches!(chars.get(start), Some('{' | '[')) => {
            flow_close(chars, start)
        }
        Node::Map(entries) => entries.iter().try_fold(start, |end, (k, v)| {
            Some(
                end.max(k.offset.saturating_add(k.len))
                    .max(value_end(chars, v)?),
            )
        }),
        Node::Seq(items) => items.iter().try_fold(start + 1, |end, item| {
            Some(end.max(value_end(chars, item)?))
        }),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::config::node::parse;

    #[test]
    fn blanking_keeps_positions_and_yaml() {
        let t = "a: 1\nb:\n  - x\n  - y\nc: {d: 1, e: [1, {f: 2}], g: 3}\n";
        assert_eq!(
            blank_entry(t, 2, 1, "b").unwrap(),
            "a: 1\n  \n     \n     \nc: {d: 1, e: [1, {f: 2}], g: 3}\n"
        );
        assert_eq!(
            blank_entry(t, 5, 11, "e").unwrap(),
            "a: 1\nb:\n  - x\n  - y\nc: {d: 1,                 g: 3}\n"
        );
        assert_eq!(
            blank_entry(t, 5, 27, "g").unwrap(),
            "a: 1\nb:\n  - x\n  - y\nc: {d: 1, e: [1, {f: 2}]      }\n"
        );
        assert_eq!(blank_entry(t, 5, 27, "zz"), None);
        // Quotes and comments do not end a flow entry.
        let t = "c: {d: \"x, }\", e: 'it''s', f: 1}\n";
        assert_eq!(
            blank_entry(t, 1, 5, "d").unwrap(),
            "c: {           e: 'it''s', f: 1}\n"
        );
    }

    /// `text` with the values of the top-level keys `keys` replaced by `with`.
    fn replaced(text: &str, keys: &[&str], with: &str) -> String {
        let root = parse(text).unwrap().unwrap();
        let Node::Map(entries) = &root.value else {
            panic!("a mapping")
        };
        let replacements: Vec<Replacement> = entries
            .iter()
            .filter(|(k, _)| keys.contains(&k.value.0.as_str()))
            .map(|(key, value)| Replacement {
                key,
                value,
                with: with.to_owned(),
            })
            .collect();
        replace_values(text, &replacements).unwrap()
    }

    #[test]
    fn a_replaced_value_goes_after_its_colon_and_the_old_one_is_blanked() {
        assert_eq!(replaced("a: high\nb: 2\n", &["a"], "0"), "a: 0   \nb: 2\n");
        assert_eq!(replaced("a: 5\nb: 2\n", &["a"], "{}"), "a: {}\nb: 2\n");
        assert_eq!(
            replaced("a:\n- x\n- [y, z]\nb: 2\n", &["a"], "{}"),
            "a: {}\n   \n        \nb: 2\n"
        );
        assert_eq!(
            replaced("a:\n  k: v\n  l: {m: 1}\nb: 2\n", &["a"], "[]"),
            "a: []\n      \n           \nb: 2\n"
        );
        assert_eq!(
            replaced("a: [1, 2]  # two\nb: {c: 'x'}\n", &["a", "b"], "''"),
            "a: ''      # two\nb: ''      \n"
        );
        assert_eq!(replaced("a:\nb: 2\n", &["a"], "''"), "a: ''\nb: 2\n");
        // Every other line and column stays.
        let out = replaced("x: 1\na: [1,\n  2]\nb: 2\n", &["a"], "''");
        assert_eq!(out, "x: 1\na: '' \n    \nb: 2\n");
    }
}
