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

/// A change in data terms, for notifications: its line, and its data
/// (the record's key and the column when it lies in a keyed row, the
/// values, the nodes' ids, and the numbers of a numeric update).
pub fn change_line(c: &Change) -> ChangeLine {
    let record = c.record.as_ref();
    ChangeLine {
        kind: c.kind.name().to_owned(),
        path: c.context_path(),
        text: c.line(),
        key: record.map(|r| r.key.clone()),
        column: record
            .and_then(|r| r.field.clone())
            .filter(|f| !f.is_empty()),
        old: c.old.clone(),
        new: c.new.clone(),
        old_xpath: c.old_xpath.clone(),
        new_xpath: c.new_xpath.clone(),
        old_num: number(c.old_num.as_deref()),
        new_num: number(c.new_num.as_deref()),
    }
}

/// A `num` (a canonical decimal) as a JSON number; `None` for one a
/// double cannot hold.
fn number(num: Option<&str>) -> Option<f64> {
    num.and_then(|n| n.parse::<f64>().ok())
        .filter(|v| v.is_finite())
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

#[cfg(test)]
#[allow(clippy::expect_used, reason = "tests fail loudly on purpose")]
mod tests {
    use super::*;
    use crate::hierarchy::Hierarchy;

    const PAGE: &str = "<title>Q</title><table><caption>Shares</caption>\
        <tr><th>Ticker<th>Last<th>Name</tr>\
        <tr><td>GAZP<td>251.30<td>Gazprom</tr>\
        <tr><td>SBER<td>300.15<td>Sberbank</tr></table>";

    #[test]
    fn a_changed_cell_of_a_keyed_row_carries_its_data() {
        let old = Hierarchy::from_html(PAGE, None);
        let new = Hierarchy::from_html(&PAGE.replace("251.30", "268.40"), None);
        let changes = crate::diff::diff(&old, &new);
        assert_eq!(changes.len(), 1, "{changes:?}");
        let line = change_line(&changes[0]);
        assert_eq!(line.kind, "update");
        assert_eq!(line.key.as_deref(), Some("GAZP"));
        assert_eq!(line.column.as_deref(), Some("Last"));
        assert_eq!(line.old.as_deref(), Some("251.30"));
        assert_eq!(line.new.as_deref(), Some("268.40"));
        assert_eq!(line.old_num, Some(251.3));
        assert_eq!(line.new_num, Some(268.4));
        let xpath = line.new_xpath.clone().expect("new xpath");
        assert!(xpath.contains("row[@key='GAZP']"), "{xpath}");
        assert_eq!(line.old_xpath.as_deref(), Some(xpath.as_str()));
        assert_eq!(line.text, changes[0].line());
        assert_eq!(line.path, changes[0].context_path());
        // Each absent field is left out of the JSON.
        let json = serde_json::to_value(&line).expect("json");
        assert_eq!(json["old_num"], 251.3);
        let mut renamed = changes[0].clone();
        renamed.record = None;
        renamed.old_num = None;
        renamed.new_num = None;
        let plain = serde_json::to_value(change_line(&renamed)).expect("json");
        for absent in ["key", "column", "old_num", "new_num"] {
            assert!(plain.get(absent).is_none(), "{absent}: {plain}");
        }
    }
}
