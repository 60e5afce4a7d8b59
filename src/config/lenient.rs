//! Reading a file so that no problem hides another: every unknown key is
//! reported (with a "did you mean" for a misspelt one) and skipped, every
//! wrong-typed value and missing key is reported ([`super::shape`]), and the
//! rest of the file is still read and checked, so neither one misspelt
//! `hysterisis` nor one `above: high` hides the file's other problems.
//!
//! # Decisions
//!
//! - The raw structs keep `deny_unknown_fields` (the JSON Schemas derive
//!   `additionalProperties: false` from it, and the serde error names the
//!   keys that are allowed). When the typed reading stops at an unknown key,
//!   the key is reported, blanked out of a working copy of the text
//!   ([`super::edit`]: every other line and column stays where it was
//!   written) and the reading starts again, at most [`MAX_UNKNOWN`] times
//!   per file.
//! - A key whose entry cannot be blanked safely (it is not where the error
//!   says) ends the loop: its error is reported as it is, as before.
//! - When the typed reading stops at anything else, the file's tree is
//!   checked against the JSON Schema of the raw structures
//!   ([`super::shape`]), which finds every wrong-typed value and missing key
//!   in one pass. Each wrong value is reported, and the field holding it is
//!   replaced in the working copy by a value of the field's type; the typed
//!   reading then runs again, and the caller's checks with it. What those
//!   checks say about a replaced field (or anything in it) is about the
//!   stand-in, and is left out ([`Replaced::keeps`]).
//! - A missing key cannot be filled in without moving the lines below it:
//!   a file missing one has its shape problems and unknown keys reported,
//!   and is read no further.
//! - No error goes unreported: when the shape check finds nothing (a problem
//!   it does not know, such as a duplicate key), or the second reading
//!   still fails, the typed reading's own error is reported, unless a shape
//!   problem already covers its field.
//! - "Did you mean" names the allowed key nearest in Damerau-Levenshtein
//!   distance ([`strsim`]), when at most a third of the key's letters (and
//!   at least one) differ.

use std::path::Path;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use super::Diagnostic;
use super::edit::{self, blank_entry};
use super::node;
use super::shape::{self, Problem};
use super::tree::{self, did_you_mean};

/// The most unknown keys reported (and blanked) in one file.
pub(crate) const MAX_UNKNOWN: usize = 100;

/// A file read as `T`, perhaps with wrong values replaced.
pub(crate) struct Read<T> {
    /// What was read.
    pub value: T,
    /// The fields whose wrong value was replaced.
    pub replaced: Replaced,
}

/// The fields whose wrong value was replaced (`thresholds[0].above`).
#[derive(Debug, Default)]
pub(crate) struct Replaced(Vec<String>);

impl Replaced {
    /// Whether a diagnostic of the checks run on the value read is about
    /// the file as written, rather than about a replaced field.
    pub(crate) fn keeps(&self, d: &Diagnostic) -> bool {
        !self.0.iter().any(|field| within(&d.path, field))
    }

    /// Whether any wrong value was replaced.
    pub(crate) fn any(&self) -> bool {
        !self.0.is_empty()
    }

    /// Whether the wrong value of `field` was replaced.
    pub(crate) fn has(&self, field: &str) -> bool {
        self.0.iter().any(|f| f == field)
    }
}

/// Whether the field path `path` is `field` or lies within it.
fn within(path: &str, field: &str) -> bool {
    path.strip_prefix(field)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
}

/// Deserializes `text` (the contents of `file`) as `T`. Every unknown key,
/// wrong-typed value and missing key is pushed to `out`; `Err` when the file
/// could not be read whole even so (a missing key, a syntax error).
pub(crate) fn from_str<T: DeserializeOwned + JsonSchema>(
    file: &Path,
    text: &str,
    out: &mut Vec<Diagnostic>,
) -> Result<Read<T>, ()> {
    let mut work = text.to_owned();
    let error = match typed::<T>(file, &mut work, out) {
        Ok(value) => {
            return Ok(Read {
                value,
                replaced: Replaced::default(),
            });
        }
        Err(None) => return Err(()),
        Err(Some(error)) => error,
    };
    let Ok(Some(tree)) = node::parse(&work) else {
        out.push(error);
        return Err(());
    };
    let schema = schemars::schema_for!(T).to_value();
    let problems = shape::check(&tree, &schema, &work);
    if problems.is_empty() {
        out.push(error);
        return Err(());
    }
    let covered = |d: &Diagnostic| {
        problems
            .iter()
            .any(|p| within(&d.path, &p.path) || within(&p.path, &d.path))
    };
    let fixed = fix(&work, &problems);
    let replaced = Replaced(
        problems
            .iter()
            .filter_map(|p| p.fix.as_ref().map(|f| f.field.clone()))
            .collect(),
    );
    let uncovered = |d: Diagnostic| (!covered(&d)).then_some(d);
    let last = match fixed {
        None => uncovered(error),
        Some(mut fixed) => match typed::<T>(file, &mut fixed, out) {
            Ok(value) => {
                out.extend(problems.iter().map(|p| p.diagnostic(file)));
                return Ok(Read { value, replaced });
            }
            Err(None) => None,
            Err(Some(again)) => uncovered(again),
        },
    };
    out.extend(problems.iter().map(|p| p.diagnostic(file)));
    out.extend(last);
    Err(())
}

/// `text` with the field of every problem replaced by a value of its type,
/// or `None` when some problem has no such fix (a missing key), or an edit
/// cannot be placed or leaves text that is not YAML (which would report a
/// syntax error the file does not have).
fn fix(text: &str, problems: &[Problem]) -> Option<String> {
    let replacements: Vec<edit::Replacement> = problems
        .iter()
        .map(|p| {
            p.fix.as_ref().map(|f| edit::Replacement {
                key: f.key,
                value: f.value,
                with: f.with.clone(),
            })
        })
        .collect::<Option<_>>()?;
    edit::replace_values(text, &replacements).filter(|fixed| node::parse(fixed).is_ok())
}

/// The typed reading of `work`, unknown keys reported (pushed to `out`) and
/// blanked out of it. `Err(Some(d))`: it stopped at another error, `d`, not
/// pushed; `Err(None)`: it gave up on an unknown key it could not blank.
fn typed<T: DeserializeOwned>(
    file: &Path,
    work: &mut String,
    out: &mut Vec<Diagnostic>,
) -> Result<T, Option<Diagnostic>> {
    for _ in 0..=MAX_UNKNOWN {
        let e = match serde_saphyr::from_str_with_options::<T>(
            work,
            serde_saphyr::options! { with_snippet: false },
        ) {
            Ok(value) => return Ok(value),
            Err(e) => e,
        };
        let mut d = tree::diagnostic(file, work, &e);
        let Some(key) = unknown_key(&d.message) else {
            return Err(Some(d));
        };
        let key = key.to_owned();
        if let Some(better) = did_you_mean(&key, &expected(&d.message)) {
            d.message.push_str(&format!(" (did you mean `{better}`?)"));
        }
        // The same key again: blanking did not take it out; stop there.
        let again = out
            .last()
            .is_some_and(|p| (p.line, p.column, &p.path) == (d.line, d.column, &d.path));
        let blanked = blank_entry(work, d.line, d.column, &key).filter(|_| !again);
        if !again {
            out.push(d);
        }
        match blanked {
            Some(next) => *work = next,
            None => return Err(None),
        }
    }
    Err(None)
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
    fn a_key_like_no_other_gets_no_suggestion_and_a_wrong_type_stops_nothing() {
        let (ok, diags) = read("url: u\nschedule: {every: 1s}\nzzz: 1\nclips: {c: {xpath: [1]}}\n");
        assert!(ok, "{diags:#?}");
        assert_eq!(diags.len(), 2, "{diags:#?}");
        assert!(diags[0].starts_with("w.yaml:3:1: zzz: unknown field `zzz`"));
        assert!(!diags[0].contains("did you mean"), "{}", diags[0]);
        assert_eq!(
            diags[1],
            "w.yaml:4:20: clips.c.xpath: a list is not text; write text"
        );
    }

    #[test]
    fn every_wrong_type_is_reported_and_stood_in_for_and_the_rest_is_read() {
        let yaml = "url: u\nschedule: {every: 1s}\nthresholds:\n  - name: a\n    xpath: //a\n    \
                    above: high\n    on_return: maybe\nclips: {c: [x]}\nfetch: {retries: -1}\nlayuot: {}\n";
        let mut out = Vec::new();
        let read = from_str::<Option<Sp<RawWatch>>>(Path::new("w.yaml"), yaml, &mut out).unwrap();
        let diags: Vec<String> = out.iter().map(ToString::to_string).collect();
        assert_eq!(
            diags,
            [
                "w.yaml:10:1: layuot: unknown field `layuot`, expected one of id, url, title, schedule, fetch, ignore, blocked, clips, thresholds, on_change, failures, monitor, layout, session, metrics, keys (did you mean `layout`?)",
                "w.yaml:6:12: thresholds[0].above: \"high\" is not a number; write a number such as 300 or 2.5",
                "w.yaml:7:16: thresholds[0].on_return: \"maybe\" is not true or false; write true or false",
                "w.yaml:8:12: clips.c: a list is not a mapping; write a mapping of some of cache_control, description, extract, keywords, metrics, public, stylesheet, xpath",
                "w.yaml:9:18: fetch.retries: -1 is not a whole number from 0 to 4294967295; write a whole number such as 3",
            ]
        );
        // The rest of the file was read, around the stand-ins.
        let watch = read.value.unwrap().value;
        let threshold = &watch.thresholds.as_ref().unwrap().value[0].value;
        assert_eq!(threshold.name.value, "a");
        assert_eq!(threshold.xpath.value, "//a");
        assert!(threshold.above.is_some());
        assert!(watch.clips.as_ref().unwrap().contains_key("c"));
        let replaced = &read.replaced;
        assert!(replaced.any());
        assert!(replaced.has("thresholds[0].above") && replaced.has("clips.c"));
        assert!(!replaced.has("url") && !replaced.has("thresholds[0]"));
        // What validation says of a stand-in, or of anything in it, is left out.
        let at = |path: &str| Diagnostic {
            file: "w.yaml".into(),
            line: 1,
            column: 1,
            path: path.to_owned(),
            message: String::new(),
        };
        assert!(!replaced.keeps(&at("clips.c")) && !replaced.keeps(&at("clips.c.xpath")));
        assert!(!replaced.keeps(&at("thresholds[0].above")));
        assert!(replaced.keeps(&at("thresholds[0]")) && replaced.keeps(&at("clips.cc")));
    }

    #[test]
    fn a_missing_key_is_reported_with_every_wrong_type_and_ends_the_reading() {
        let (ok, diags) = read("url: u\nthresholds:\n  - xpath: //a\n    above: [1]\n");
        assert!(!ok);
        assert_eq!(
            diags,
            [
                "w.yaml:4:12: thresholds[0].above: a list is not a number; write a number such as 300 or 2.5",
                "w.yaml:3:5: thresholds[0].name: missing field `name`",
                "w.yaml:1:1: schedule: missing field `schedule`",
            ]
        );
    }
}
