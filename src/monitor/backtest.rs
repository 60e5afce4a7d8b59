//! Testing a rule before trusting it: a threshold, a clip or an `ignore:`
//! replayed over a watch's stored versions, oldest first, telling when it
//! would have fired, returned or changed, with the values.
//!
//! # Decisions
//!
//! - **The versions the store keeps.** A check stores a version only when
//!   the page's data changed, and thresholds are judged exactly then; so
//!   replaying the stored versions judges what the live checks judged,
//!   and a rule already in the watch file gives the crossings its alerts
//!   gave (as far back as retention keeps versions).
//! - **The same judgement.** A threshold is judged by
//!   [`threshold::judge`] with its state carried from version to version
//!   as the store carries it; a window (`within`) reads the values
//!   replayed before, as a live check reads the stored ones.
//! - **Clips and ignores by diff.** A clip "changes" when the semantic
//!   diff between two versions touches a node it selects (on either
//!   side); an `ignore:` list is replayed by diffing each pair with and
//!   without it, telling what it would have silenced.
//! - **Bounded.** At most [`MAX_VERSIONS`] versions (the newest), and at
//!   most [`LINES`] change lines per event.

use std::collections::{HashMap, HashSet};
use std::time::SystemTime;

use serde::Serialize;

use crate::config::{Clip, Threshold, Watch};
use crate::diff::{self, Change};
use crate::hierarchy::Hierarchy;
use crate::monitor::series::selected;
use crate::monitor::threshold::{self, Bounds, Level, Reading, Transition};
use crate::store::{Store, StoreError};
use crate::xpath::native::Evaluator;

/// Most versions one backtest replays (the newest).
pub const MAX_VERSIONS: usize = 100_000;
/// Most change lines an event carries.
pub const LINES: usize = 5;

/// What to replay.
#[derive(Debug, Clone, Copy)]
pub enum Rule<'a> {
    /// A threshold (from the watch file, or written for the backtest).
    Threshold(&'a Threshold),
    /// A clip, by name.
    Clip(&'a str, &'a Clip),
    /// An ignore list, in place of the watch's own.
    Ignore(&'a [String]),
}

/// One thing the rule would have done.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Event {
    /// The version's time (when the check that stored it ran).
    #[serde(serialize_with = "rfc3339")]
    #[schemars(with = "String")]
    pub at: SystemTime,
    /// The stored version's id.
    pub snapshot: i64,
    /// `threshold_crossed`, `threshold_returned`, `selector_lost`,
    /// `selector_found` (thresholds), `changed` (clips), `silenced` or
    /// `kept` (ignores).
    pub kind: &'static str,
    /// For an `each` threshold: the record's key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<String>,
    /// The value read (thresholds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    /// The value before (thresholds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous: Option<f64>,
    /// What it means: the bound crossed, or the changes in short.
    pub detail: String,
    /// Change lines (clips, ignores), at most [`LINES`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<String>,
}

fn rfc3339<S: serde::Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(
        &crate::store::time::rfc3339(*t, chrono::SecondsFormat::Millis).unwrap_or_default(),
    )
}

/// A backtest's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Backtest {
    /// The watch.
    pub watch: String,
    /// What was replayed (`threshold gazp-high`, `clip shares`, `ignore`).
    pub rule: String,
    /// Versions replayed.
    pub versions: usize,
    /// The first version's time.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "opt_rfc3339"
    )]
    #[schemars(with = "Option<String>")]
    pub from: Option<SystemTime>,
    /// The last version's time.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "opt_rfc3339"
    )]
    #[schemars(with = "Option<String>")]
    pub to: Option<SystemTime>,
    /// What the rule would have done, in order.
    pub events: Vec<Event>,
}

#[expect(
    clippy::ref_option,
    reason = "serde's serialize_with passes the field by reference"
)]
fn opt_rfc3339<S: serde::Serializer>(t: &Option<SystemTime>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => rfc3339(t, s),
        None => s.serialize_none(),
    }
}

/// Replays `rule` over the stored versions of `watch`.
pub fn replay(store: &Store, watch: &Watch, rule: Rule<'_>) -> Result<Backtest, StoreError> {
    let mut ids = store.snapshots(&watch.id)?;
    ids.truncate(MAX_VERSIONS);
    ids.reverse();
    let mut replayer = match rule {
        Rule::Threshold(t) => Replayer::Threshold(Box::new(ThresholdReplay::new(t))),
        Rule::Clip(_, clip) => Replayer::Clip(clip, None),
        Rule::Ignore(list) => Replayer::Ignore(list, &watch.ignore, None),
    };
    let mut events = Vec::new();
    let (mut from, mut to, mut versions) = (None, None, 0);
    // A threshold reads a few nodes: their ids are derived on demand. A
    // clip or an ignore list diffs whole versions, which needs every id.
    let every_id = !matches!(rule, Rule::Threshold(_));
    for (id, _, _) in ids {
        let Some((at, h)) = store.snapshot_hierarchy(&watch.id, id, every_id)? else {
            // Pruned while we read: the next one follows.
            continue;
        };
        versions += 1;
        from.get_or_insert(at);
        to = Some(at);
        replayer.step(at, id, h, &mut events);
    }
    Ok(Backtest {
        watch: watch.id.clone(),
        rule: match rule {
            Rule::Threshold(t) => format!("threshold {}", t.name),
            Rule::Clip(name, _) => format!("clip {name}"),
            Rule::Ignore(_) => "ignore".to_owned(),
        },
        versions,
        from,
        to,
        events,
    })
}

enum Replayer<'a> {
    Threshold(Box<ThresholdReplay<'a>>),
    /// The clip and the previous version.
    Clip(&'a Clip, Option<Hierarchy>),
    /// The list tried, the watch's own, and the previous version.
    Ignore(&'a [String], &'a [String], Option<Hierarchy>),
}

impl Replayer<'_> {
    fn step(&mut self, at: SystemTime, id: i64, h: Hierarchy, events: &mut Vec<Event>) {
        match self {
            Replayer::Threshold(t) => t.step(at, id, &h, events),
            Replayer::Clip(clip, previous) => {
                if let Some(old) = previous.as_ref() {
                    clip_step(clip, old, &h, at, id, events);
                }
                *previous = Some(h);
            }
            Replayer::Ignore(tried, own, previous) => {
                if let Some(old) = previous.as_ref() {
                    ignore_step(tried, own, old, &h, at, id, events);
                }
                *previous = Some(h);
            }
        }
    }
}

/// A state as the store keeps it between checks.
#[derive(Debug, Clone, Copy)]
struct State {
    level: Level,
    value: Option<f64>,
    since: SystemTime,
}

struct ThresholdReplay<'a> {
    t: &'a Threshold,
    states: HashMap<String, State>,
    /// The threshold's values so far (a window's history).
    values: Vec<(SystemTime, f64)>,
}

impl<'a> ThresholdReplay<'a> {
    fn new(t: &'a Threshold) -> ThresholdReplay<'a> {
        ThresholdReplay {
            t,
            states: HashMap::new(),
            values: Vec::new(),
        }
    }

    fn step(&mut self, at: SystemTime, id: i64, h: &Hierarchy, events: &mut Vec<Event>) {
        let ev = Evaluator::new(h);
        let t = self.t;
        let Some(each) = &t.each else {
            let reading = threshold::read_on(&ev, &t.xpath).unwrap_or_else(|e| Reading::Lost {
                reason: crate::error_chain(&e),
            });
            let name = t.name.clone();
            self.judge(&name, None, &reading, at, id, events);
            if let Reading::Value { value, .. } = reading {
                self.values.push((at, value));
            }
            return;
        };
        let records = match threshold::read_each(&ev, &t.xpath, each) {
            Ok(Some(records)) => records,
            _ => return,
        };
        let present: HashSet<String> = records.iter().map(|r| r.key.clone()).collect();
        for r in &records {
            if matches!(r.reading, Reading::Lost { .. }) {
                continue;
            }
            self.judge(&r.key.clone(), Some(&r.key), &r.reading, at, id, events);
        }
        // A gone record's state ends silently, as in a live check.
        for (key, state) in &mut self.states {
            if !present.contains(key) {
                state.level = Level::Lost;
            }
        }
    }

    fn judge(
        &mut self,
        name: &str,
        record: Option<&str>,
        reading: &Reading,
        at: SystemTime,
        id: i64,
        events: &mut Vec<Event>,
    ) {
        let t = self.t;
        let before = self.states.get(name).copied();
        let mut bounds = Bounds::of(t);
        if let Some(within) = t.within {
            let from = at.checked_sub(within).unwrap_or(SystemTime::UNIX_EPOCH);
            let to = before
                .filter(|s| s.level == Level::Alarm)
                .map_or(at, |s| s.since);
            bounds.window = window(&self.values, from, to);
        }
        let previous_value = before.and_then(|s| s.value);
        let j = threshold::judge(&bounds, before.map(|s| s.level), previous_value, reading);
        let value = match reading {
            Reading::Value { value, .. } => Some(*value),
            Reading::Lost { .. } => None,
        };
        let since = match before {
            Some(s) if s.level == j.level => s.since,
            _ => at,
        };
        self.states.insert(
            name.to_owned(),
            State {
                level: j.level,
                value: value.or(previous_value),
                since,
            },
        );
        let Some(transition) = j.transition else {
            return;
        };
        if record.is_some() && transition == Transition::Found {
            return;
        }
        let kind = match transition {
            Transition::Crossed => "threshold_crossed",
            Transition::Returned => "threshold_returned",
            Transition::Lost => "selector_lost",
            Transition::Found => "selector_found",
        };
        let detail = match (transition, reading) {
            (Transition::Lost, Reading::Lost { reason }) => reason.clone(),
            (Transition::Returned, _) => {
                format!("back within bounds ({})", threshold::describe(&bounds))
            }
            _ => j.bound.clone(),
        };
        events.push(Event {
            at,
            snapshot: id,
            kind,
            record: record.map(str::to_owned),
            value,
            previous: previous_value,
            detail,
            lines: Vec::new(),
        });
    }
}

/// The lowest and highest of `values` from `from` up to (not including)
/// `to`, with the one in force at `from`.
fn window(values: &[(SystemTime, f64)], from: SystemTime, to: SystemTime) -> Option<(f64, f64)> {
    let in_force = values.iter().rev().find(|(at, _)| *at < from);
    in_force
        .into_iter()
        .chain(values.iter().filter(|(at, _)| *at >= from && *at < to))
        .map(|(_, v)| *v)
        .fold(None, |acc, v| match acc {
            None => Some((v, v)),
            Some((lo, hi)) => Some((f64::min(lo, v), f64::max(hi, v))),
        })
}

/// The ids of the elements `xpath` selects on `h`.
fn selected_ids(h: &Hierarchy, xpath: &str) -> Vec<String> {
    let ev = Evaluator::new(h);
    selected(&ev, xpath)
        .iter()
        .map(|hit| ev.flat().id(hit))
        .collect()
}

/// Whether node `id` lies within one of `roots` (itself or below).
fn within(id: &str, roots: &[String]) -> bool {
    roots.iter().any(|r| {
        id.strip_prefix(r.as_str())
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    })
}

fn lines(changes: &[&Change]) -> Vec<String> {
    changes.iter().take(LINES).map(|c| c.line()).collect()
}

fn clip_step(
    clip: &Clip,
    old: &Hierarchy,
    new: &Hierarchy,
    at: SystemTime,
    id: i64,
    events: &mut Vec<Event>,
) {
    let (old_roots, new_roots) = (
        selected_ids(old, &clip.xpath),
        selected_ids(new, &clip.xpath),
    );
    let changes = diff::diff(old, new);
    let touched: Vec<&Change> = changes
        .iter()
        .filter(|c| {
            c.old_xpath
                .as_deref()
                .is_some_and(|x| within(x, &old_roots))
                || c.new_xpath
                    .as_deref()
                    .is_some_and(|x| within(x, &new_roots))
        })
        .collect();
    if touched.is_empty() {
        return;
    }
    events.push(Event {
        at,
        snapshot: id,
        kind: "changed",
        record: None,
        value: None,
        previous: None,
        detail: format!(
            "{} change{}",
            touched.len(),
            if touched.len() == 1 { "" } else { "s" }
        ),
        lines: lines(&touched),
    });
}

fn ignore_step(
    tried: &[String],
    own: &[String],
    old: &Hierarchy,
    new: &Hierarchy,
    at: SystemTime,
    id: i64,
    events: &mut Vec<Event>,
) {
    let ignoring = |list: &[String]| -> Vec<Change> {
        let (Ok(a), Ok(b)) = (diff::ignored_ids(old, list), diff::ignored_ids(new, list)) else {
            return diff::diff(old, new);
        };
        diff::diff_ignoring(old, new, &a, &b)
    };
    let before = ignoring(own);
    let after = ignoring(tried);
    let kept: HashSet<String> = after.iter().map(Change::line).collect();
    let silenced: Vec<&Change> = before
        .iter()
        .filter(|c| !kept.contains(&c.line()))
        .collect();
    if before.is_empty() && after.is_empty() {
        return;
    }
    let (kind, detail) = if after.is_empty() {
        (
            "silenced",
            format!(
                "all {} change(s) ignored: no change would be reported",
                before.len()
            ),
        )
    } else {
        (
            "kept",
            format!(
                "{} change(s) still reported, {} ignored",
                after.len(),
                silenced.len()
            ),
        )
    };
    let shown: Vec<&Change> = if after.is_empty() {
        silenced
    } else {
        after.iter().collect()
    };
    events.push(Event {
        at,
        snapshot: id,
        kind,
        record: None,
        value: None,
        previous: None,
        detail,
        lines: lines(&shown),
    });
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;
    use std::time::Duration;

    fn t(s: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(s)
    }

    #[test]
    fn a_window_holds_the_value_in_force_at_its_start() {
        let values = [(t(10), 5.0), (t(20), 9.0), (t(30), 1.0)];
        assert_eq!(window(&values, t(15), t(40)), Some((1.0, 9.0)));
        assert_eq!(window(&values, t(25), t(40)), Some((1.0, 9.0)));
        assert_eq!(window(&values, t(25), t(30)), Some((9.0, 9.0)));
        assert_eq!(window(&values, t(5), t(10)), None);
    }

    #[test]
    fn within_is_the_node_or_below_it() {
        let roots = vec!["/page/table[1]".to_owned()];
        assert!(within("/page/table[1]", &roots));
        assert!(within("/page/table[1]/row[2]", &roots));
        assert!(!within("/page/table[10]/row[2]", &roots));
    }
}
