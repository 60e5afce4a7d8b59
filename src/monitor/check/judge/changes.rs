//! What happened to the page's data: its outcome (unchanged, first,
//! changed) and the `changed` alert with the changes as lines.

use crate::diff::Change;
use crate::monitor::check::report::PageOutcome;
use crate::monitor::compare::Prepared;
use crate::monitor::fingerprint;
use crate::notify::{AlertKind, ChangeLine};
use crate::xpath::native::Evaluator;

use super::Work;

impl Work<'_> {
    pub(super) fn page(
        &mut self,
        ev: &Evaluator<'_>,
        prepared: &Prepared,
        first: bool,
    ) -> PageOutcome {
        let fp = fingerprint::evaluation(&prepared.hash, &self.watch.thresholds);
        let outcome = if prepared.unchanged {
            PageOutcome::Unchanged
        } else if first {
            PageOutcome::First
        } else {
            PageOutcome::Changed(prepared.changes.clone())
        };
        if !prepared.changes.is_empty() && self.watch.on_change.is_some() {
            let n = prepared.changes.len();
            let mut alert = self.alert(
                AlertKind::Changed,
                format!(
                    "{}: {n} change{}",
                    self.watch.title.as_deref().unwrap_or(&self.watch.id),
                    if n == 1 { "" } else { "s" }
                ),
            );
            alert.changes = prepared.changes.iter().map(change_line).collect();
            self.alerts.push(alert);
        }
        if self.status.evaluated.as_deref() != Some(fp.as_str())
            && !self.watch.thresholds.is_empty()
        {
            self.evaluate(ev);
        }
        self.status.evaluated = Some(fp);
        outcome
    }
}

/// A change in data terms, for notifications.
pub fn change_line(c: &Change) -> ChangeLine {
    ChangeLine {
        kind: c.kind.name().to_owned(),
        path: c
            .context
            .iter()
            .filter(|l| !l.is_empty())
            .cloned()
            .collect::<Vec<_>>()
            .join(" / "),
        text: c.line(),
    }
}
