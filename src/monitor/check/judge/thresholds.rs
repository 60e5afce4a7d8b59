//! The thresholds judged on a page (or on the stored snapshot when only
//! their settings changed): each one's reading, level and alerts.

use crate::config::Threshold;
use crate::error_chain;
use crate::monitor::fingerprint;
use crate::monitor::threshold::{self, Bounds, Level, Reading, Transition};
use crate::notify::{AlertKind, ThresholdAlert};
use crate::store::{Store, StoreError, ThresholdRecord};
use crate::xpath::native::Evaluator;

use super::Work;

impl Work<'_> {
    /// Each threshold's level and value as judged (empty when not
    /// evaluated).
    pub(in crate::monitor::check) fn levels(&self) -> Vec<(String, Level, Option<f64>)> {
        self.state
            .thresholds
            .iter()
            .map(|t| (t.name.clone(), t.state, t.value))
            .collect()
    }

    /// A 304 (or nothing new): thresholds are judged on the stored snapshot
    /// only if their settings changed since the last evaluation.
    pub(super) fn evaluate_stored(
        &mut self,
        store: &Store,
        hash: Option<&str>,
    ) -> Result<(), StoreError> {
        let Some(hash) = hash else { return Ok(()) };
        let fp = fingerprint::evaluation(hash, &self.watch.thresholds);
        if self.status.evaluated.as_deref() == Some(fp.as_str()) {
            return Ok(());
        }
        if let Some(previous) = store.current_hierarchy(&self.watch.id)? {
            self.load_windows(store)?;
            self.evaluate(&Evaluator::new(&previous.hierarchy));
        }
        self.status.evaluated = Some(fp);
        Ok(())
    }

    /// Reads the history windows of the thresholds that have one
    /// (`within`): from `within` before now up to now, or up to the
    /// crossing while in alarm (so the alarm holds until the value is
    /// back, not until the window has forgotten what it crossed from).
    pub(super) fn load_windows(&mut self, store: &Store) -> Result<(), StoreError> {
        self.windows.clear();
        for t in self.watch.thresholds.iter().filter(|t| t.each.is_none()) {
            let Some(within) = t.within else { continue };
            let from = self
                .now
                .checked_sub(within)
                .unwrap_or(std::time::UNIX_EPOCH);
            let to = self
                .stored_thresholds
                .iter()
                .find(|r| r.name == t.name && r.state == Level::Alarm)
                .map_or(self.now, |r| r.since);
            let range = store.threshold_range(&self.watch.id, &t.name, from, to)?;
            self.windows.push((t.name.clone(), range));
        }
        Ok(())
    }

    /// Judges every threshold on the hierarchy of `ev`.
    pub(super) fn evaluate(&mut self, ev: &Evaluator<'_>) {
        let watch = self.watch;
        for t in &watch.thresholds {
            match &t.each {
                Some(each) => self.evaluate_each(ev, t, each),
                None => {
                    let reading =
                        threshold::read_on(ev, &t.xpath).unwrap_or_else(|e| Reading::Lost {
                            reason: error_chain(&e),
                        });
                    self.judge_one(t, &t.name, None, &reading);
                }
            }
        }
    }

    /// Judges an `each` threshold record by record, each under its own
    /// state (named [`record_state`]), and the threshold as a whole only
    /// for whether it selects records at all. A record whose value cannot
    /// be read this time keeps its state; a record that is gone ends its
    /// state without an alert (it is a removed record, not a lost value).
    /// More than [`EACH_ALERTS`] transitions of one kind in one check are
    /// told in one alert that counts the rest.
    fn evaluate_each(&mut self, ev: &Evaluator<'_>, t: &Threshold, each: &str) {
        let records = match threshold::read_each(ev, &t.xpath, each) {
            Ok(Some(records)) => records,
            Ok(None) => {
                let reading = Reading::Lost {
                    reason: "the expression selects no record".to_owned(),
                };
                return self.judge_one(t, &t.name, None, &reading);
            }
            Err(e) => {
                let reading = Reading::Lost {
                    reason: error_chain(&e),
                };
                return self.judge_one(t, &t.name, None, &reading);
            }
        };
        // The threshold as a whole: found (its count of records in alarm
        // is what it holds).
        let count = Reading::Value {
            value: 0.0,
            node: None,
            context: String::new(),
        };
        let whole = Threshold {
            above: None,
            below: None,
            outside: None,
            change_pct: None,
            ..t.clone()
        };
        self.judge_one(&whole, &t.name, None, &count);
        let before = self.alerts.len();
        for r in &records {
            let name = record_state(&t.name, &r.key);
            if matches!(r.reading, Reading::Lost { .. }) {
                if let Some(kept) = self.stored_thresholds.iter().find(|s| s.name == name) {
                    self.state.thresholds.push(kept.clone());
                }
                continue;
            }
            self.judge_one(t, &name, Some(&r.key), &r.reading);
        }
        // Records gone since the last evaluation: their states end
        // (marked lost, without an alert), so a record that comes back is
        // judged afresh.
        let present: std::collections::HashSet<String> = records
            .iter()
            .map(|r| record_state(&t.name, &r.key))
            .collect();
        let gone: Vec<ThresholdRecord> = self
            .stored_thresholds
            .iter()
            .filter(|s| is_record_of(&s.name, &t.name) && s.state != Level::Lost)
            .filter(|s| !present.contains(&s.name))
            .map(|s| ThresholdRecord {
                state: Level::Lost,
                since: self.now,
                ..s.clone()
            })
            .collect();
        self.state.thresholds.extend(gone);
        let alarms = self
            .state
            .thresholds
            .iter()
            .filter(|s| s.state == Level::Alarm && is_record_of(&s.name, &t.name))
            .count();
        if let Some(s) = self.state.thresholds.iter_mut().find(|s| s.name == t.name) {
            s.value = Some(alarms as f64);
        }
        self.fold_alerts(before, &t.name);
    }

    /// Folds the alerts raised since `before` beyond [`EACH_ALERTS`] of
    /// each kind into one alert counting them.
    fn fold_alerts(&mut self, before: usize, name: &str) {
        let raised = self.alerts.split_off(before);
        let mut kept: Vec<(AlertKind, usize)> = Vec::new();
        let mut folded: Vec<(AlertKind, usize)> = Vec::new();
        for alert in raised {
            let seen = match kept.iter_mut().find(|(k, _)| *k == alert.kind) {
                Some((_, n)) => {
                    *n += 1;
                    *n
                }
                None => {
                    kept.push((alert.kind, 1));
                    1
                }
            };
            if seen <= EACH_ALERTS {
                self.alerts.push(alert);
            } else if let Some((_, n)) = folded.iter_mut().find(|(k, _)| *k == alert.kind) {
                *n += 1;
            } else {
                folded.push((alert.kind, 1));
            }
        }
        for (kind, n) in folded {
            let what = match kind {
                AlertKind::ThresholdCrossed => "crossed",
                AlertKind::ThresholdReturned => "returned within bounds",
                _ => "changed state",
            };
            let summary = format!("{name}: {n} more records {what}");
            self.alerts.push(self.alert(kind, summary));
        }
    }

    /// Judges one reading under the stored state `name` (a threshold's
    /// name, or a record's state of an `each` threshold, `record` its key)
    /// and raises the alert its transition calls for.
    fn judge_one(&mut self, t: &Threshold, name: &str, record: Option<&str>, reading: &Reading) {
        let before = self.stored_thresholds.iter().find(|r| r.name == name);
        let mut bounds = Bounds::of(t);
        bounds.window = self
            .windows
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, w)| *w);
        let previous = before.map(|r| r.state);
        let previous_value = before.and_then(|r| r.value);
        let j = threshold::judge(&bounds, previous, previous_value, reading);
        let (value, node, context) = match reading {
            Reading::Value {
                value,
                node,
                context,
            } => (Some(*value), node.clone(), context.clone()),
            Reading::Lost { .. } => (None, None, String::new()),
        };
        if let Some(v) = value
            && record.is_none()
            && t.each.is_none()
        {
            self.state.values.push((t.name.clone(), v));
        }
        let since = match before {
            Some(r) if Some(j.level) == previous => r.since,
            _ => self.now,
        };
        self.state.thresholds.push(ThresholdRecord {
            name: name.to_owned(),
            state: j.level,
            value: value.or(previous_value),
            node: node.clone().or_else(|| before.and_then(|r| r.node.clone())),
            since,
        });
        let Some(transition) = j.transition else {
            return;
        };
        if transition == Transition::Returned && !t.on_return {
            return;
        }
        // A record's state is never lost by a reading (a gone record's
        // ends silently), so "found" would only say that it came back.
        if record.is_some() && transition == Transition::Found {
            return;
        }
        let shown = value.map(threshold::fmt).unwrap_or_default();
        // Titles are read by people: the short context; the alert's
        // `threshold.context` keeps the whole path.
        let at = crate::diff::display_context_joined(&context);
        let who = match record {
            Some(key) => format!("{}: {key}", t.name),
            None => t.name.clone(),
        };
        let (kind, summary) = match (&transition, reading) {
            (Transition::Crossed, _) => (
                AlertKind::ThresholdCrossed,
                format!("{who}: {shown} is {} ({at})", j.bound),
            ),
            (Transition::Returned, _) => (
                AlertKind::ThresholdReturned,
                format!(
                    "{who}: {shown} is back within bounds ({}) ({at})",
                    threshold::describe(&bounds)
                ),
            ),
            (Transition::Lost, Reading::Lost { reason }) => (
                AlertKind::SelectorLost,
                format!("{who}: selector lost: {reason}"),
            ),
            (Transition::Lost, _) => (AlertKind::SelectorLost, format!("{who}: selector lost")),
            (Transition::Found, _) if t.each.is_some() && record.is_none() => (
                AlertKind::SelectorFound,
                format!("{who}: selector found again"),
            ),
            (Transition::Found, _) => (
                AlertKind::SelectorFound,
                format!("{who}: selector found again, value {shown} ({at})"),
            ),
        };
        let mut alert = self.alert(kind, summary);
        alert.threshold = Some(ThresholdAlert {
            name: t.name.clone(),
            xpath: match &t.each {
                Some(each) => format!("{}/{each}", t.xpath),
                None => t.xpath.clone(),
            },
            value: value.filter(|_| record.is_some() || t.each.is_none()),
            previous: previous_value.filter(|_| record.is_some() || t.each.is_none()),
            bound: j.bound.clone(),
            context: context.clone(),
            node,
        });
        self.alerts.push(alert);
    }
}

/// Alerts of one kind an `each` threshold raises one by one in a check;
/// beyond them, one alert counts the rest.
pub(in crate::monitor) const EACH_ALERTS: usize = 10;

/// The stored state name of record `key` of `each` threshold `name`:
/// `cheap[Kettle]`.
pub(in crate::monitor) fn record_state(name: &str, key: &str) -> String {
    format!("{name}[{key}]")
}

/// Whether stored state `state` is a record's of `each` threshold `name`.
pub(in crate::monitor) fn is_record_of(state: &str, name: &str) -> bool {
    state
        .strip_prefix(name)
        .is_some_and(|rest| rest.starts_with('[') && rest.ends_with(']'))
}
