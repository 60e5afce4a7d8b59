//! Reading a file whose only problems may be unknown keys: every unknown
//! key is reported (with a "did you mean" for a misspelt one), and the rest
//! of the file is still read and checked, so one misspelt `hysterisis`
//! hides none of the file's other problems.
//!
//! # Decisions
//!
//! - The raw structs keep `deny_unknown_fields` (the JSON Schemas derive
//!   `additionalProperties: false` from it, and the serde error names the
//!   keys that are allowed). When the typed reading stops at an unknown key,
//!   the key is reported, blanked out of a working copy of the text (its
//!   entry replaced by spaces, so every other line and column stays where it
//!   was written) and the reading starts again, at most [`MAX_UNKNOWN`]
//!   times per file.
//! - A key whose entry cannot be blanked safely (it is not where the error
//!   says) ends the loop: its error is reported as it is, as before.
//! - "Did you mean" names the allowed key nearest in Damerau-Levenshtein
//!   distance ([`strsim`]), when at most a third of the key's letters (and
//!   at least one) differ.

use std::path::Path;

use serde::de::DeserializeOwned;

use super::Diagnostic;
use super::tree;

/// The most unknown keys reported (and blanked) in one file.
pub(crate) const MAX_UNKNOWN: usize = 100;

/// Deserializes `text` (the contents of `file`) as `T`. Unknown keys are
/// pushed to `out` and skipped; the first other deserialization error ends
/// the reading as `Err` (its diagnostic is pushed too).
pub(crate) fn from_str<T: DeserializeOwned>(
    file: &Path,
    text: &str,
    out: &mut Vec<Diagnostic>,
) -> Result<T, ()> {
    let mut work = text.to_owned();
    for _ in 0..=MAX_UNKNOWN {
        let e = match serde_saphyr::from_str_with_options::<T>(
            &work,
            serde_saphyr::options! { with_snippet: false },
        ) {
            Ok(value) => return Ok(value),
            Err(e) => e,
        };
        let mut d = tree::diagnostic(file, &work, &e);
        let Some(key) = unknown_key(&d.message) else {
            out.push(d);
            return Err(());
        };
        let key = key.to_owned();
        if let Some(better) = did_you_mean(&key, &expected(&d.message)) {
            d.message.push_str(&format!(" (did you mean `{better}`?)"));
        }
        // The same key again: blanking did not take it out; stop there.
        let again = out
            .last()
            .is_some_and(|p| (p.line, p.column, &p.path) == (d.line, d.column, &d.path));
        let blanked = blank_entry(&work, d.line, d.column, &key).filter(|_| !again);
        if !again {
            out.push(d);
        }
        match blanked {
            Some(next) => work = next,
            None => return Err(()),
        }
    }
    Err(())
}

/// The key of an "unknown field `KEY`, ..." message.
fn unknown_key(message: &str) -> Option<&str> {
    message
        .strip_prefix("unknown field `")
        .and_then(|rest| rest.split_once('`'))
        .map(|(key, _)| key)
}

/// The keys an "unknown field" message lists as allowed.
fn expected(message: &str) -> Vec<String> {
    let list = if let Some((_, list)) = message.split_once("expected one of ") {
        list.split(", ").collect::<Vec<_>>()
    } else if let Some((_, list)) = message.split_once("expected ") {
        list.split(" or ").collect()
    } else {
        Vec::new()
    };
    list.into_iter()
        .map(|k| k.trim().trim_matches('`').to_owned())
        .filter(|k| !k.is_empty())
        .collect()
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

/// `text` with the mapping entry whose key `key` starts at `line`:`column`
/// (1-based, columns in characters) replaced by spaces, line breaks kept.
/// `None` when the key is not there.
fn blank_entry(text: &str, line: usize, column: usize, key: &str) -> Option<String> {
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
    let mut quote: Option<char> = None;
    let mut i = start;
    while let Some(&c) = chars.get(i) {
        match quote {
            Some('"') if c == '\\' => i += 1,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                '"' | '\'' => quote = Some(c),
                '{' | '[' => depth += 1,
                '}' | ']' if depth == 0 => return Some((i, false)),
                '}' | ']' => depth -= 1,
                ',' if depth == 0 => return Some((i + 1, true)),
                _ => {}
            },
        }
        i += 1;
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::config::raw::{RawWatch, Sp};

    fn read(yaml: &str) -> (bool, Vec<String>) {
        let mut out = Vec::new();
        let ok = from_str::<Option<Sp<RawWatch>>>(Path::new("w.yaml"), yaml, &mut out).is_ok();
        (ok, out.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn every_unknown_key_is_reported_and_the_rest_is_read() {
        let (ok, diags) = read(
            "url: u\nschedule:\n  every: 1s\n  evry: 2s\nthresholds:\n  - name: a\n    xpath: //a\n    hysterisis: 1\n    above: 2\n  - nmae: b\n    name: b\n    xpath: //b\nclips: {a: {xpath: //a, descripton: x}, b: {xpath: //b}}\n",
        );
        assert!(ok, "{diags:#?}");
        assert_eq!(
            diags,
            [
                "w.yaml:4:3: schedule.evry: unknown field `evry`, expected one of cron, timezone, every, jitter (did you mean `every`?)",
                "w.yaml:8:5: thresholds[0].hysterisis: unknown field `hysterisis`, expected one of name, xpath, each, above, below, outside, change_pct, within, new_high, new_low, hysteresis, notify, on_return, metrics (did you mean `hysteresis`?)",
                "w.yaml:10:5: thresholds[1].nmae: unknown field `nmae`, expected one of name, xpath, each, above, below, outside, change_pct, within, new_high, new_low, hysteresis, notify, on_return, metrics (did you mean `name`?)",
                "w.yaml:13:25: clips.a.descripton: unknown field `descripton`, expected one of xpath, extract, keywords, description, public, stylesheet, cache_control, metrics (did you mean `description`?)",
            ]
        );
    }

    #[test]
    fn a_key_like_no_other_gets_no_suggestion_and_other_errors_still_stop() {
        let (ok, diags) = read("url: u\nschedule: {every: 1s}\nzzz: 1\nclips: {c: {xpath: [1]}}\n");
        assert!(!ok);
        assert_eq!(diags.len(), 2, "{diags:#?}");
        assert!(diags[0].starts_with("w.yaml:3:1: zzz: unknown field `zzz`"));
        assert!(!diags[0].contains("did you mean"), "{}", diags[0]);
        assert!(
            diags[1].starts_with("w.yaml:4:20: clips.c.xpath:"),
            "{}",
            diags[1]
        );
    }

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
        assert_eq!(
            did_you_mean("treshold", &["thresholds".into()]),
            Some("thresholds")
        );
        assert_eq!(did_you_mean("cron", &["every".into()]), None);
    }
}
