//! A check's failures and recoveries: the status they leave, and the
//! `failing` and `recovered` alerts.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use crate::notify::{Alert, AlertKind};
use crate::store::time;

use super::Work;

/// A fresh alert id: time, process-wide sequence and randomness, so ids
/// never repeat across restarts.
pub fn alert_id(now: SystemTime) -> String {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let ms = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let salt: u32 = rand::random();
    format!("{ms:012x}-{seq:04x}-{salt:08x}")
}

impl Work<'_> {
    pub(super) fn alert(&self, kind: AlertKind, summary: String) -> Alert {
        Alert {
            id: alert_id(self.now),
            kind,
            watch: self.watch.id.clone(),
            watch_title: self.watch.title.clone(),
            url: self.watch.url.to_string(),
            at: time::rfc3339(self.now, chrono::SecondsFormat::Millis).unwrap_or_default(),
            summary,
            threshold: None,
            changes: Vec::new(),
            records: Vec::new(),
            error: None,
            failures: None,
        }
    }

    /// A blocked check: a failure (`message` its error) whose `reason`
    /// is kept apart in the status, so status pages and the API tell a
    /// block from a broken page.
    pub(super) fn blocked(&mut self, message: &str, reason: String, alert_after: u32) {
        self.failed(message, alert_after);
        self.status.blocked = Some(reason);
    }

    pub(in crate::monitor::check) fn failed(&mut self, message: &str, alert_after: u32) {
        tracing::warn!(watch = %self.watch.id, error = %message, "check failed");
        self.status.failures = self.status.failures.saturating_add(1);
        self.status.last_error = Some(message.to_owned());
        self.status.blocked = None;
        if self.status.failures >= alert_after.max(1) && !self.status.failing_alerted {
            self.status.failing_alerted = true;
            let mut alert = self.alert(
                AlertKind::Failing,
                format!(
                    "{}: {} failed checks in a row: {message}",
                    self.watch.id, self.status.failures
                ),
            );
            alert.error = Some(message.to_owned());
            alert.failures = Some(self.status.failures);
            self.alerts.push(alert);
        }
    }

    pub(super) fn succeeded(&mut self) {
        if self.status.failing_alerted {
            let alert = self.alert(
                AlertKind::Recovered,
                format!(
                    "{}: checks succeed again after {} failures",
                    self.watch.id, self.status.failures
                ),
            );
            self.alerts.push(alert);
        }
        self.status.failures = 0;
        self.status.failing_alerted = false;
        self.status.last_error = None;
        self.status.blocked = None;
        self.status.last_success = Some(self.now);
    }
}
