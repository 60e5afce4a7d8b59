// placeholder: replaced by the config helper's module at merge
//! Validated configuration (placeholder holding only the types the
//! notifications module needs, exactly as the shared contract writes them).

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use url::Url;

/// A resolved secret value; its Debug output never shows the value.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a resolved value. (Placeholder constructor: the tests build
    /// secrets with it; the real module must offer an equivalent.)
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The secret value itself.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"***\"")
    }
}

/// The daemon's outgoing mail server.
#[derive(Debug, Clone, PartialEq)]
pub struct SmtpConfig {
    /// Host name of the relay.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// Transport security.
    pub security: SmtpSecurity,
    /// Login name, with `password`.
    pub username: Option<String>,
    /// Password, with `username`.
    pub password: Option<Secret>,
    /// The From mailbox.
    pub from: String,
    /// Timeout for the connection and each SMTP command.
    pub timeout: Duration,
}

/// How the SMTP connection is secured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmtpSecurity {
    /// Plain connection upgraded with STARTTLS (required).
    StartTls,
    /// Implicit TLS from the first byte.
    Tls,
    /// No encryption.
    None,
}

/// One named notifier.
#[derive(Debug, Clone, PartialEq)]
pub enum NotifierConfig {
    /// Mail to these mailboxes through the daemon's SMTP relay.
    Email {
        /// Recipient mailboxes.
        to: Vec<String>,
    },
    /// HTTP POST of a JSON payload.
    Webhook(WebhookConfig),
    /// JSON lines appended to a file.
    File {
        /// The file.
        path: PathBuf,
    },
}

/// A webhook notifier.
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookConfig {
    /// Where to POST.
    pub url: Url,
    /// HMAC-SHA256 signing key.
    pub secret: Option<Secret>,
    /// Timeout of the whole request.
    pub timeout: Duration,
    /// Extra request headers.
    pub headers: Vec<(String, String)>,
}
