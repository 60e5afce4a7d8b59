//! What happened to the page's data: its outcome (unchanged, first,
//! changed) and the `changed` alert with the changes as lines.

use crate::diff::{Change, RecordChange, RecordChangeKind, by_record};
use crate::monitor::check::report::PageOutcome;
use crate::monitor::compare::Prepared;
use crate::monitor::fingerprint;
use crate::notify::{AlertKind, ChangeLine, RecordLine};
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
            let (records, plain) = by_record(&prepared.changes);
            let name = self.watch.title.as_deref().unwrap_or(&self.watch.id);
            let mut alert = self.alert(
                AlertKind::Changed,
                format!("{name}: {}", changed_summary(&records, plain.len())),
            );
            alert.changes = prepared.changes.iter().map(change_line).collect();
            alert.records = records.iter().map(record_line).collect();
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

/// What a `changed` alert's title says after the watch's name: the one
/// record change itself when it is all (`new: Senior Rust engineer
/// (Berlin, €90,000)`), else counts of records by kind and of the other
/// changes (`2 new, 1 changed, 3 changes`).
fn changed_summary(records: &[RecordChange<'_>], plain: usize) -> String {
    if let ([only], 0) = (records, plain) {
        return only.line();
    }
    let mut parts = Vec::new();
    for kind in [
        RecordChangeKind::Added,
        RecordChangeKind::Removed,
        RecordChangeKind::Changed,
    ] {
        let n = records.iter().filter(|r| r.kind == kind).count();
        if n > 0 {
            parts.push(format!("{n} {}", kind.word()));
        }
    }
    if plain > 0 {
        let other = if records.is_empty() { "" } else { "other " };
        parts.push(format!(
            "{plain} {other}change{}",
            if plain == 1 { "" } else { "s" }
        ));
    }
    parts.join(", ")
}

/// A record change, for notifications.
fn record_line(r: &RecordChange<'_>) -> RecordLine {
    RecordLine {
        kind: r.kind,
        table: r.record.table.clone(),
        key: r.record.key.clone(),
        before: r.before(),
        after: r.after(),
        text: r.line(),
        changes: r.changes.iter().map(|c| change_line(c)).collect(),
    }
}
