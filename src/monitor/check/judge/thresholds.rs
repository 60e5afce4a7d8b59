//! The thresholds judged on a page (or on the stored snapshot when only
//! their settings changed): each one's reading, level and alerts.

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
            self.evaluate(&Evaluator::new(&previous.hierarchy));
        }
        self.status.evaluated = Some(fp);
        Ok(())
    }

    /// Judges every threshold on the hierarchy of `ev`.
    pub(super) fn evaluate(&mut self, ev: &Evaluator<'_>) {
        let watch = self.watch;
        if watch.thresholds.is_empty() {
            return;
        }
        let stored = &self.stored_thresholds;
        for t in &watch.thresholds {
            let before = stored.iter().find(|r| r.name == t.name);
            let reading = threshold::read_on(ev, &t.xpath).unwrap_or_else(|e| Reading::Lost {
                reason: error_chain(&e),
            });
            let bounds = Bounds::of(t);
            let previous = before.map(|r| r.state);
            let previous_value = before.and_then(|r| r.value);
            let j = threshold::judge(&bounds, previous, previous_value, &reading);
            let (value, node, context) = match &reading {
                Reading::Value {
                    value,
                    node,
                    context,
                } => (Some(*value), node.clone(), context.clone()),
                Reading::Lost { .. } => (None, None, String::new()),
            };
            if let Some(v) = value {
                self.state.values.push((t.name.clone(), v));
            }
            let since = match before {
                Some(r) if Some(j.level) == previous => r.since,
                _ => self.now,
            };
            self.state.thresholds.push(ThresholdRecord {
                name: t.name.clone(),
                state: j.level,
                value: value.or(previous_value),
                node: node.clone().or_else(|| before.and_then(|r| r.node.clone())),
                since,
            });
            let Some(transition) = j.transition else {
                continue;
            };
            if transition == Transition::Returned && !t.on_return {
                continue;
            }
            let shown = value.map(threshold::fmt).unwrap_or_default();
            // Titles are read by people: the short context; the alert's
            // `threshold.context` keeps the whole path.
            let at = crate::diff::display_context_joined(&context);
            let (kind, summary) = match (&transition, &reading) {
                (Transition::Crossed, _) => (
                    AlertKind::ThresholdCrossed,
                    format!("{}: {shown} is {} ({at})", t.name, j.bound),
                ),
                (Transition::Returned, _) => (
                    AlertKind::ThresholdReturned,
                    format!(
                        "{}: {shown} is back within bounds ({}) ({at})",
                        t.name,
                        threshold::describe(&bounds)
                    ),
                ),
                (Transition::Lost, Reading::Lost { reason }) => (
                    AlertKind::SelectorLost,
                    format!("{}: selector lost: {reason}", t.name),
                ),
                (Transition::Lost, _) => (
                    AlertKind::SelectorLost,
                    format!("{}: selector lost", t.name),
                ),
                (Transition::Found, _) => (
                    AlertKind::SelectorFound,
                    format!("{}: selector found again, value {shown} ({at})", t.name),
                ),
            };
            let mut alert = self.alert(kind, summary);
            alert.threshold = Some(ThresholdAlert {
                name: t.name.clone(),
                xpath: t.xpath.clone(),
                value,
                previous: previous_value,
                bound: j.bound.clone(),
                context: context.clone(),
                node,
            });
            self.alerts.push(alert);
        }
    }
}
