//! Notifications: the alerts the daemon raises and the notifiers that deliver
//! them (email over SMTP, webhook POST, JSON lines in a file, and chat and
//! push services: Slack, Teams, Discord, Telegram, Matrix, ntfy, Gotify).
//!
//! An [`Alert`] is what the outbox stores (as JSON) and what every notifier
//! delivers. A [`Notifier`] is built once from its configuration and then
//! asked to [`deliver`](Notifier::deliver) one alert, or a digest of several
//! alerts of one watch. Delivery does not retry: a [`DeliveryError`] says
//! whether retrying later can help, and the outbox decides.

mod channels;
mod email;
mod file;
mod format;
mod http;
mod links;
mod webhook;

use serde::{Deserialize, Serialize};

use url::Url;

use crate::config::{NotifierConfig, SmtpConfig};
use crate::diff::{Field, RecordChangeKind};
use links::Links;

pub use channels::ChannelNotifier;
pub use email::EmailNotifier;
pub use file::FileNotifier;
pub use webhook::WebhookNotifier;

/// The version of the JSON shape of a delivered alert (webhook payload and
/// file lines). Bump it only on purpose (see docs/notifiers.md, "Webhook payload, version 1").
pub const PAYLOAD_VERSION: &str = "1";

/// The change lines a short account of one alert shows (a chat or push
/// message, the daemon's log); the rest are counted ("and 7 more") and
/// linked to the change view.
pub const SHOWN_CHANGES: usize = 5;

/// One alert, as stored in the outbox and delivered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alert {
    /// Unique and stable across retries (the outbox id); the delivery id.
    pub id: String,
    /// What happened.
    pub kind: AlertKind,
    /// The watch's id.
    pub watch: String,
    /// The watch's title, if it has one.
    #[serde(default)]
    pub watch_title: Option<String>,
    /// The watched page.
    pub url: String,
    /// RFC 3339 UTC time the alert was raised.
    pub at: String,
    /// One line, e.g. "GAZP Last 301.5 crossed above 300".
    pub summary: String,
    /// For threshold alerts: which threshold, the values and where.
    #[serde(default)]
    pub threshold: Option<ThresholdAlert>,
    /// For `changed` alerts (and digests): the changes in data terms.
    #[serde(default)]
    pub changes: Vec<ChangeLine>,
    /// For `changed` alerts: the records (keyed rows of tables and
    /// `extract: records` lists) that came, went or changed, one object
    /// each; `changes` still lists every change.
    #[serde(default)]
    pub records: Vec<RecordLine>,
    /// For `failing`: the last error.
    #[serde(default)]
    pub error: Option<String>,
    /// For `failing`: the number of consecutive failed checks.
    #[serde(default)]
    pub failures: Option<u32>,
}

impl Alert {
    /// The change lines a short account of the alert shows (at most
    /// [`SHOWN_CHANGES`]), and how many more it has.
    pub fn shown_changes(&self) -> (&[ChangeLine], usize) {
        let (shown, rest) = self.changes.split_at(self.changes.len().min(SHOWN_CHANGES));
        (shown, rest.len())
    }
}

/// What an alert is about (serialised in snake_case: [`AlertKind::name`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertKind {
    /// A watched value crossed its threshold.
    ThresholdCrossed,
    /// A watched value returned to normal.
    ThresholdReturned,
    /// A threshold's XPath no longer selects anything.
    SelectorLost,
    /// A threshold's XPath selects something again.
    SelectorFound,
    /// The page's data changed.
    Changed,
    /// The watch failed several checks in a row.
    Failing,
    /// The watch works again after failing.
    Recovered,
    /// The page's structure drifted from its previous one (or its
    /// template), or a clip stopped selecting anything.
    LayoutChanged,
}

impl AlertKind {
    /// Its name in the payload and the logs, as serialised:
    /// `threshold_crossed`, `changed`, ...
    pub fn name(self) -> &'static str {
        match self {
            AlertKind::ThresholdCrossed => "threshold_crossed",
            AlertKind::ThresholdReturned => "threshold_returned",
            AlertKind::SelectorLost => "selector_lost",
            AlertKind::SelectorFound => "selector_found",
            AlertKind::Changed => "changed",
            AlertKind::Failing => "failing",
            AlertKind::Recovered => "recovered",
            AlertKind::LayoutChanged => "layout_changed",
        }
    }

    /// A short human label ("threshold crossed", "changed", ...).
    pub fn label(self) -> &'static str {
        match self {
            AlertKind::ThresholdCrossed => "threshold crossed",
            AlertKind::ThresholdReturned => "threshold returned to normal",
            AlertKind::SelectorLost => "selector lost",
            AlertKind::SelectorFound => "selector found again",
            AlertKind::Changed => "changed",
            AlertKind::Failing => "failing",
            AlertKind::Recovered => "recovered",
            AlertKind::LayoutChanged => "layout changed",
        }
    }
}

/// The threshold side of an alert.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThresholdAlert {
    /// The threshold's name.
    pub name: String,
    /// The threshold's XPath.
    pub xpath: String,
    /// The value now, if the XPath selected one.
    #[serde(default)]
    pub value: Option<f64>,
    /// The value at the previous check, if known.
    #[serde(default)]
    pub previous: Option<f64>,
    /// The bound, as words: "above 300", "outside [100, 300]", "change ≥ 5%".
    pub bound: String,
    /// The data context of the value: "Shares / GAZP / Last".
    pub context: String,
    /// The xpath id of the selected node.
    #[serde(default)]
    pub node: Option<String>,
}

/// One change in data terms: as words (`path`, `text`) and as data (the
/// record key and column, the values before and after, the nodes' XPaths,
/// the numbers). The data fields are absent where they do not apply (new
/// in version 1: receivers ignore keys they do not know).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChangeLine {
    /// insert, delete, update or move.
    pub kind: String,
    /// Where: "Shares / GAZP / Last".
    pub path: String,
    /// The whole line as `semclip diff` prints it.
    pub text: String,
    /// The key of the record (a keyed table row, an `extract: records`
    /// record) the change lies in: `GAZP`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The column (the record's field) the change lies in, when it lies
    /// in one named cell of a keyed row: `Last`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<String>,
    /// The value before (absent for an insert).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old: Option<String>,
    /// The value after (absent for a delete; a move's is its `old`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new: Option<String>,
    /// The `xpath` id of the node before the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_xpath: Option<String>,
    /// The `xpath` id of the node after the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_xpath: Option<String>,
    /// The number `old` reads as (the hierarchy's `num`), for an update of
    /// a number to a number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_num: Option<f64>,
    /// The number `new` reads as, for an update of a number to a number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_num: Option<f64>,
}

/// One record that came, went or changed, in a `changed` alert: its
/// identity, its fields before and after, and its changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordLine {
    /// `added`, `removed` or `changed`.
    pub kind: RecordChangeKind,
    /// The `xpath` id of the table or list holding the record.
    pub table: String,
    /// The record's key: its identity in that table.
    pub key: String,
    /// Its fields before the check (empty for an added record).
    pub before: Vec<Field>,
    /// Its fields after the check (empty for a removed record).
    pub after: Vec<Field>,
    /// The record as one line: `new: Senior Rust engineer (Berlin,
    /// €90,000)`.
    pub text: String,
    /// Its changes, as in `changes`.
    pub changes: Vec<ChangeLine>,
}

/// A notifier that cannot be built from its configuration.
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    /// An email notifier without an `smtp` section in the daemon file.
    #[error("notifier {notifier}: email needs the daemon file's smtp section")]
    MissingSmtp {
        /// The notifier's name.
        notifier: String,
    },
    /// An email notifier without recipients.
    #[error("notifier {notifier}: email needs at least one recipient")]
    NoRecipients {
        /// The notifier's name.
        notifier: String,
    },
    /// A From or To address that is not a mailbox.
    #[error("notifier {notifier}: {address:?} is not a mailbox: {message}")]
    Address {
        /// The notifier's name.
        notifier: String,
        /// The address as written.
        address: String,
        /// Why it does not parse.
        message: String,
    },
    /// The SMTP transport cannot be set up (e.g. TLS parameters).
    #[error("notifier {notifier}: cannot set up the SMTP transport")]
    Transport {
        /// The notifier's name.
        notifier: String,
        /// What went wrong.
        #[source]
        source: lettre::transport::smtp::Error,
    },
    /// A webhook header name or value that HTTP does not allow.
    #[error("notifier {notifier}: header {header:?}: {message}")]
    Header {
        /// The notifier's name.
        notifier: String,
        /// The header name.
        header: String,
        /// What is wrong with it.
        message: String,
    },
}

/// A failed delivery.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct DeliveryError {
    /// Whether trying again later can help (network errors, HTTP 408/429/5xx,
    /// SMTP 4xx and connection failures). False for errors that will repeat
    /// (HTTP 4xx, SMTP 5xx such as a refused login): the outbox gives up on
    /// them at once.
    pub transient: bool,
    /// What went wrong, for the log and the outbox.
    pub message: String,
    /// How long the service asked to be left alone (`Retry-After`, Telegram's
    /// `retry_after`, Matrix's `retry_after_ms`), for transient errors.
    pub retry_after: Option<std::time::Duration>,
}

impl DeliveryError {
    /// An error worth retrying.
    pub fn transient(message: impl Into<String>) -> DeliveryError {
        DeliveryError {
            transient: true,
            message: message.into(),
            retry_after: None,
        }
    }

    /// An error that will happen again.
    pub fn permanent(message: impl Into<String>) -> DeliveryError {
        DeliveryError {
            transient: false,
            message: message.into(),
            retry_after: None,
        }
    }
}

/// A configured notifier, ready to deliver.
#[derive(Debug)]
pub enum Notifier {
    /// Mail through the daemon's SMTP relay.
    Email(EmailNotifier),
    /// HTTP POST of the JSON payload.
    Webhook(WebhookNotifier),
    /// JSON lines appended to a file.
    File(FileNotifier),
    /// A chat or push service.
    Channel(ChannelNotifier),
}

impl Notifier {
    /// Builds the notifier called `name` from its configuration; email
    /// notifiers need the daemon's `smtp` section, webhooks and channels use
    /// `http`. Alerts link to their page under `public_url` (the daemon's
    /// `server.public_url`): the change view of the check for an alert
    /// about changes, else the watch's status page (`notify/links.rs`); without
    /// one, messages for people link to the watched page and payloads
    /// carry no `link`.
    pub fn from_config(
        name: &str,
        cfg: &NotifierConfig,
        smtp: Option<&SmtpConfig>,
        http: &reqwest::Client,
        public_url: Option<&Url>,
    ) -> Result<Notifier, NotifyError> {
        let links = Links::new(public_url);
        Ok(match cfg {
            NotifierConfig::Email { to } => {
                let smtp = smtp.ok_or_else(|| NotifyError::MissingSmtp {
                    notifier: name.to_owned(),
                })?;
                Notifier::Email(EmailNotifier::new(name, to, smtp, links)?)
            }
            NotifierConfig::Webhook(webhook) => {
                Notifier::Webhook(WebhookNotifier::new(name, webhook, http.clone(), links)?)
            }
            NotifierConfig::File { path } => Notifier::File(FileNotifier::new(name, path, links)),
            NotifierConfig::Channel(channel) => {
                Notifier::Channel(ChannelNotifier::new(name, channel, links, http.clone()))
            }
        })
    }

    /// The notifier's name in the daemon file.
    pub fn name(&self) -> &str {
        match self {
            Notifier::Email(n) => n.name(),
            Notifier::Webhook(n) => n.name(),
            Notifier::File(n) => n.name(),
            Notifier::Channel(n) => n.name(),
        }
    }

    /// Delivers one alert (or a digest of several, all for one watch).
    /// Nothing is sent for an empty slice. Err says whether retrying can
    /// help; there is no retry loop here (the outbox retries).
    pub async fn deliver(&self, alerts: &[Alert]) -> Result<(), DeliveryError> {
        if alerts.is_empty() {
            return Ok(());
        }
        match self {
            Notifier::Email(n) => n.deliver(alerts).await,
            Notifier::Webhook(n) => n.deliver(alerts).await,
            Notifier::File(n) => n.deliver(alerts).await,
            Notifier::Channel(n) => n.deliver(alerts).await,
        }
    }
}

/// One alert as a payload carries it: the alert, and its `link` when the
/// daemon has a public URL (made at delivery, not stored: see [`links`]).
#[derive(Serialize)]
struct Delivered<'a> {
    #[serde(flatten)]
    alert: &'a Alert,
    #[serde(skip_serializing_if = "Option::is_none")]
    link: Option<String>,
}

impl<'a> Delivered<'a> {
    fn new(alert: &'a Alert, links: &Links) -> Delivered<'a> {
        Delivered {
            alert,
            link: links.server(alert).map(|(_, url)| url),
        }
    }
}

/// The webhook body: `{"version":"1","alerts":[...]}`.
#[derive(Serialize)]
struct Payload<'a> {
    version: &'static str,
    alerts: Vec<Delivered<'a>>,
}

/// One file line: `{"version":"1", ...alert}`.
#[derive(Serialize)]
struct Line<'a> {
    version: &'static str,
    #[serde(flatten)]
    alert: Delivered<'a>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An alert for the notifiers' tests: `kind`, of watch `w`, at
    /// 2025-01-01T00:00:00Z, with nothing else to tell.
    pub(super) fn alert(id: &str, kind: AlertKind) -> Alert {
        Alert {
            id: id.to_owned(),
            kind,
            watch: "w".to_owned(),
            watch_title: None,
            url: "https://example.org/".to_owned(),
            at: "2025-01-01T00:00:00Z".to_owned(),
            summary: "Prix €".to_owned(),
            threshold: None,
            changes: Vec::new(),
            records: Vec::new(),
            error: None,
            failures: None,
        }
    }

    #[test]
    fn a_short_account_shows_the_first_changes_and_counts_the_rest() {
        let mut a = alert("a-1", AlertKind::Changed);
        assert_eq!(a.shown_changes(), (&[][..], 0));
        a.changes = (0..SHOWN_CHANGES + 3)
            .map(|i| ChangeLine {
                text: format!("line {i}"),
                ..ChangeLine::default()
            })
            .collect();
        let (shown, more) = a.shown_changes();
        assert_eq!(shown.len(), SHOWN_CHANGES);
        assert_eq!(shown[0].text, "line 0");
        assert_eq!(more, 3);
        a.changes.truncate(2);
        assert_eq!(a.shown_changes().0.len(), 2);
        assert_eq!(a.shown_changes().1, 0);
    }
}
