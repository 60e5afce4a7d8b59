//! The daemon file (`semclip.yaml`) and the watch files (`watches/*.yaml`):
//! read, checked and turned into the validated types below.
//!
//! Reading has two phases. YAML is first deserialized into raw structs that
//! reject unknown keys and remember where every value was written (an
//! unknown key is reported, with a "did you mean", and skipped, and a value
//! of the wrong type is reported, with an example, and stood in for, so that
//! the rest of the file is still read: [`lenient`], [`shape`]); then every
//! value is checked ([`validate`], one file per section: URLs, cron
//! expressions, time zones, durations, byte sizes, XPaths, notifier names,
//! secrets, ...) into the types of this module. Every
//! problem found becomes a [`Diagnostic`] naming the file, line, column and
//! field; loading never stops at the first one: a broken watch file still lets
//! the others be checked.
//!
//! Relative paths in the daemon file are relative to its directory; relative
//! secret files in a watch file are relative to the watch file's directory.
//!
//! Secrets (`{env: NAME}`, `{file: PATH}`) are read while checking, unless
//! the caller asks for their form only ([`Secrets::Unread`], `semclip
//! validate --syntax`). A secret file must be a regular file of at most
//! [`MAX_SECRET_FILE`] bytes: it is opened without blocking, so a FIFO or a
//! device named by mistake (or malice) is an error, never a hang or an
//! endless read.
//!
//! The daemon's fence ([`crate::page::fence`]) is checked here too: a `file://`
//! watch outside the file roots, or (with `fetch.trust_watch_urls: false`) a
//! watch URL at a literal internal address, is a diagnostic on its `url`.

pub mod channels;
mod edit;
mod lenient;
mod node;
mod raw;
pub mod schedule;
mod shape;
pub mod starter;
mod tree;
mod validate;
mod value;

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use url::Url;

pub use validate::{secret_from_env, secret_from_file};

use crate::config::schedule::Schedule;
pub use crate::page::browser::Step;
use crate::page::browser::{BrowserSettings, RenderOptions};
pub use crate::page::budget::PageLimits;
use crate::page::fence::{AllowHost, Fence};
pub use crate::page::session::{FormField, LoginForm};
/// The `database:` setting (defined with the store, which opens it).
pub use crate::store::Database;
use crate::store::Retention;

pub use channels::{Channel, ChannelConfig, NtfyAuth};
pub use raw::{daemon_schema, watch_schema};

/// The largest secret file accepted: 64 KiB (a key or token is far
/// smaller).
pub const MAX_SECRET_FILE: u64 = 64 * 1024;

/// A secret value (password, token, key), read from an environment variable
/// or a file during validation. Its `Debug` prints `"***"`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value (for tests and programmatic configuration).
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

/// The daemon file, validated, with defaults filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct DaemonConfig {
    /// The daemon file, `None` when the built-in defaults were used.
    pub path: Option<PathBuf>,
    /// The store: an SQLite file or a PostgreSQL database.
    pub database: Database,
    /// The directory of watch files.
    pub watches_dir: PathBuf,
    /// The HTTP server's address; `None`: no server.
    pub listen: Option<SocketAddr>,
    /// The HTTP server's settings.
    pub server: ServerConfig,
    /// The mail server, needed by email notifiers.
    pub smtp: Option<SmtpConfig>,
    /// Notifiers by name.
    pub notifiers: BTreeMap<String, NotifierConfig>,
    /// API tokens of the HTTP server, by name.
    pub tokens: BTreeMap<String, TokenConfig>,
    /// Fetch settings every watch starts from.
    pub fetch: FetchDefaults,
    /// Concurrency limits.
    pub limits: Limits,
    /// When failures become alerts and when undeliverable alerts are given up.
    pub alerts: AlertSettings,
    /// How much history to keep.
    pub retention: Retention,
    /// The demo site, when the daemon serves it.
    pub demo: Option<DemoConfig>,
    /// The browser that renders `render: browser` watches.
    pub browser: BrowserSettings,
    /// Sessions by name: cookie jars kept in the store, and their logins.
    pub sessions: BTreeMap<String, SessionConfig>,
}

/// A session: a cookie jar kept in the store, shared by the watches that
/// name it, and how it logs in.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SessionConfig {
    /// The login, if the session has one.
    pub login: Option<Login>,
}

/// How a session logs in when a page shows one of the `logged_out`
/// XPaths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Login {
    /// A form posted or steps in the browser (secrets print as `***`).
    pub how: LoginHow,
    /// XPaths over the hierarchy that show the session logged out.
    pub logged_out: Vec<String>,
}

/// How a login is done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoginHow {
    /// A form posted over HTTP.
    Form(LoginForm),
    /// Steps run in the browser on the login page `url`.
    Steps {
        /// The login page.
        url: url::Url,
        /// The steps (fill values print as `***`).
        steps: Vec<Step>,
    },
}

impl LoginHow {
    /// The URL the login posts to or opens.
    pub fn url(&self) -> &url::Url {
        match self {
            LoginHow::Form(form) => &form.url,
            LoginHow::Steps { url, .. } => url,
        }
    }
}

/// The mail server used by email notifiers.
#[derive(Debug, Clone, PartialEq)]
pub struct SmtpConfig {
    /// Host name.
    pub host: String,
    /// Port (default by security: starttls 587, tls 465, none 25).
    pub port: u16,
    /// Transport security.
    pub security: SmtpSecurity,
    /// Login user name, if the server needs one.
    pub username: Option<String>,
    /// Login password.
    pub password: Option<Secret>,
    /// The From mailbox, e.g. `semclip <semclip@example.org>` (checked).
    pub from: String,
    /// Timeout of one SMTP conversation step.
    pub timeout: Duration,
}

/// How the SMTP connection is secured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmtpSecurity {
    /// Plain connection upgraded with STARTTLS (required).
    StartTls,
    /// TLS from the first byte (SMTPS).
    Tls,
    /// No encryption (a local relay only).
    None,
}

/// One notifier: where alerts go.
#[derive(Debug, Clone, PartialEq)]
pub enum NotifierConfig {
    /// Mail to these mailboxes (each checked, at least one).
    Email {
        /// Recipient mailboxes.
        to: Vec<String>,
    },
    /// An HTTP POST of the alert JSON.
    Webhook(WebhookConfig),
    /// One JSON line per alert appended to a file.
    File {
        /// The file (relative paths resolved against the daemon file's directory).
        path: PathBuf,
    },
    /// A chat or push service (Slack, Teams, Discord, Telegram, Matrix, ntfy,
    /// Gotify), written out or as an Apprise-style URL.
    Channel(ChannelConfig),
}

/// A URL that is itself a credential (a webhook URL with a token in its
/// path or query). Its `Debug` shows the origin only.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretUrl(Url);

impl SecretUrl {
    /// Wraps a URL (for tests and programmatic configuration).
    pub fn new(url: Url) -> SecretUrl {
        SecretUrl(url)
    }

    /// The URL itself.
    pub fn expose(&self) -> &Url {
        &self.0
    }

    /// `https://host[:port]`: what logs and errors may show.
    pub fn origin(&self) -> String {
        self.0.origin().ascii_serialization()
    }
}

impl fmt::Debug for SecretUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}/***\"", self.origin())
    }
}

/// A webhook notifier.
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookConfig {
    /// The endpoint (http or https).
    pub url: Url,
    /// The HMAC-SHA256 signing key, if any.
    pub secret: Option<Secret>,
    /// Request timeout (default 10s).
    pub timeout: Duration,
    /// Extra request headers (names and values checked).
    pub headers: Vec<(String, String)>,
}

/// The HTTP server's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The public base URL (no trailing slash); `None`: `http://LISTEN`.
    pub public_url: Option<Url>,
    /// The directory of XSLT stylesheets.
    pub xslt: PathBuf,
    /// Origins allowed by CORS (`*` for any); empty: no CORS headers.
    pub cors_origins: Vec<String>,
    /// Who may frame HTML answers (CSP `frame-ancestors` sources: origins,
    /// `'self'`, `*`); empty: nobody (`'none'`). Default `['self']`.
    pub frame_ancestors: Vec<String>,
    /// Requests handled at once before shedding with 503.
    pub max_in_flight: usize,
    /// Longest time one request may take.
    pub request_timeout: Duration,
    /// Cache-Control of clips that do not set their own (`None`: `no-cache`,
    /// or `private, no-cache` for clips that need a token).
    pub cache_control: Option<String>,
    /// Longest time a client may take to send a request's headers, and
    /// longest a kept-alive connection may sit idle (default 10s).
    pub header_timeout: Duration,
    /// Connections open at once; more are closed at once (default 512,
    /// and never more than the descriptors the daemon can spare).
    pub max_connections: usize,
    /// Connections open at once from one IP address (default 64).
    pub max_client_connections: usize,
    /// XSLT threads rendering HTML and RDF clips (default 2).
    pub render_threads: usize,
}

impl ServerConfig {
    /// The defaults, the stylesheet directory resolved against `base`.
    pub fn defaults(base: &Path) -> ServerConfig {
        ServerConfig {
            public_url: None,
            xslt: base.join("xslt"),
            cors_origins: Vec::new(),
            frame_ancestors: vec!["'self'".to_owned()],
            max_in_flight: 1024,
            request_timeout: Duration::from_secs(10),
            cache_control: None,
            header_timeout: Duration::from_secs(10),
            max_connections: 512,
            max_client_connections: 64,
            render_threads: 2,
        }
    }
}

/// An API token of the HTTP server.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenConfig {
    /// The token value.
    pub secret: Secret,
    /// What it may do (at least one).
    pub scopes: Vec<Scope>,
}

/// What a token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// Read clips, watches and history.
    Read,
    /// Everything, including changes.
    Admin,
}

/// Fetch settings every watch starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchDefaults {
    /// Largest response body accepted, in bytes (default 20 MiB).
    pub max_body: u64,
    /// Connect timeout (default 10s).
    pub connect_timeout: Duration,
    /// Whole-request timeout (default 30s).
    pub timeout: Duration,
    /// Redirects followed (default 10).
    pub max_redirects: usize,
    /// Extra attempts on transient failures (default 2).
    pub retries: u32,
    /// Proxy URL (http, https, socks5, socks5h).
    pub proxy: Option<String>,
    /// Directories `file://` watches may read under (absolute); `None`: the
    /// watches directory's parent (see [`DaemonConfig::fence`]). Daemon file
    /// only.
    pub file_roots: Option<Vec<PathBuf>>,
    /// Redirects may lead to internal addresses (default false). Daemon file
    /// only.
    pub allow_private: bool,
    /// Hosts and networks redirects may reach even when internal. Daemon
    /// file only.
    pub allow_hosts: Vec<AllowHost>,
    /// Watch URLs may point at internal addresses (default true). Daemon
    /// file only.
    pub trust_watch_urls: bool,
}

impl Default for FetchDefaults {
    fn default() -> Self {
        FetchDefaults {
            max_body: 20 * 1024 * 1024,
            connect_timeout: Duration::from_secs(10),
            timeout: Duration::from_secs(30),
            max_redirects: 10,
            retries: 2,
            proxy: None,
            file_roots: None,
            allow_private: false,
            allow_hosts: Vec::new(),
            trust_watch_urls: true,
        }
    }
}

impl DaemonConfig {
    /// The fence the daemon fetches within: the configured policy, the file
    /// roots defaulting to the watches directory's parent (absolute).
    pub fn fence(&self) -> Fence {
        let roots = self.fetch.file_roots.clone().unwrap_or_else(|| {
            let watches =
                std::path::absolute(&self.watches_dir).unwrap_or_else(|_| self.watches_dir.clone());
            vec![
                watches
                    .parent()
                    .map_or_else(|| watches.clone(), Path::to_path_buf),
            ]
        });
        Fence {
            file_roots: roots,
            allow_private: self.fetch.allow_private,
            allow_hosts: self.fetch.allow_hosts.clone(),
            trust_watch_urls: self.fetch.trust_watch_urls,
        }
    }
}

/// Concurrency limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Checks in flight (default 16, at least 1).
    pub concurrency: usize,
    /// Concurrent requests per host (default 2, at least 1).
    pub per_host: usize,
    /// Minimum time between request starts to one host (default 1s).
    pub host_spacing: Duration,
    /// What one page may cost (`limits.page`).
    pub page: PageLimits,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            concurrency: 16,
            per_host: 2,
            host_spacing: Duration::from_secs(1),
            page: PageLimits::default(),
        }
    }
}

/// When failures become alerts and when undeliverable alerts are given up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertSettings {
    /// Consecutive failed checks before one "failing" alert (default 3, at least 1).
    pub failures_before_alert: u32,
    /// Undeliverable alerts are marked failed after this (default 24h).
    pub give_up_after: Duration,
}

impl Default for AlertSettings {
    fn default() -> Self {
        AlertSettings {
            failures_before_alert: 3,
            give_up_after: Duration::from_secs(24 * 3600),
        }
    }
}

/// The demo site served by the daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoConfig {
    /// Where it listens.
    pub listen: SocketAddr,
}

impl Default for DaemonConfig {
    /// The built-in defaults: `$STATE_DIRECTORY/semclip.db` (or `semclip.db`),
    /// watches in `watches`, no notifiers.
    fn default() -> Self {
        validate::daemon_defaults(None, Path::new(""))
    }
}

/// One watch file, validated and merged with the daemon's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct Watch {
    /// The id (`[A-Za-z0-9._-]+`, unique; default: the file stem).
    pub id: String,
    /// The watch file.
    pub file: PathBuf,
    /// The page (http, https or file).
    pub url: Url,
    /// A title for notifications.
    pub title: Option<String>,
    /// When it runs.
    pub schedule: Schedule,
    /// Fetch settings: the daemon's defaults plus this watch's overrides.
    pub fetch: WatchFetch,
    /// XPaths of what to leave out of diffs and the content hash.
    pub ignore: Vec<String>,
    /// XPaths that mark a block page served as a page
    /// ([`crate::page::blocked`]).
    pub blocked: Vec<String>,
    /// Named clips.
    pub clips: BTreeMap<String, Clip>,
    /// Thresholds, in file order.
    pub thresholds: Vec<Threshold>,
    /// Notification on any semantic change.
    pub on_change: Option<OnChange>,
    /// What happens when checks fail.
    pub failures: FailurePolicy,
    /// Only the page's data is compared (`monitor: data`).
    pub data_only: bool,
    /// Layout monitoring.
    pub layout: Layout,
    /// The session whose cookie jar the page is fetched with.
    pub session: Option<String>,
    /// Key columns chosen by the watch (`keys:`), applied after the page
    /// is built ([`crate::hierarchy::key::rekey`]).
    pub keys: Vec<TableKey>,
    /// All its values exported on /metrics.
    pub metrics: bool,
}

/// A table key chosen by a watch: the tables labelled `table` are keyed by
/// the columns `columns`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TableKey {
    /// The tables' label.
    pub table: String,
    /// The key's column headers, in key order (never empty).
    pub columns: Vec<String>,
}

/// A watch's fetch settings.
#[derive(Debug, Clone, PartialEq)]
pub struct WatchFetch {
    /// Largest response body accepted, in bytes.
    pub max_body: u64,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Whole-request timeout.
    pub timeout: Duration,
    /// Redirects followed.
    pub max_redirects: usize,
    /// Extra attempts on transient failures.
    pub retries: u32,
    /// Proxy URL.
    pub proxy: Option<String>,
    /// Extra request headers (names and values checked; a value may come
    /// from a secret).
    pub headers: Vec<(String, String)>,
    /// Whether the headers go to other origins than the watched page's
    /// (`fetch.headers_cross_origin`).
    pub headers_cross_origin: bool,
    /// Cookies sent with every request.
    pub cookies: Vec<(String, Secret)>,
    /// HTTP authentication.
    pub auth: Option<Auth>,
    /// `render: browser`: rendered by the daemon's browser with these
    /// options; `None`: fetched over HTTP.
    pub render: Option<RenderOptions>,
}

/// HTTP authentication of a watch.
#[derive(Debug, Clone, PartialEq)]
pub enum Auth {
    /// `Authorization: Basic`.
    Basic {
        /// User name.
        username: String,
        /// Password.
        password: Secret,
    },
    /// `Authorization: Bearer`.
    Bearer {
        /// The token.
        token: Secret,
    },
}

/// A named part of the page.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Clip {
    /// XPath over the hierarchy (checked). For an extract clip, the path
    /// of the node its extraction adds to the hierarchy:
    /// `/page/*[@clip='NAME']`.
    pub xpath: String,
    /// What the clip extracts, for a clip without its own XPath.
    pub extract: Option<ExtractSpec>,
    /// What it is.
    pub description: Option<String>,
    /// Served without a token.
    pub public: bool,
    /// The XSLT stylesheet of its HTML form (a file name in the server's
    /// xslt directory); `None`: the default `html.xsl`.
    pub stylesheet: Option<String>,
    /// Its Cache-Control header; `None`: the server's.
    pub cache_control: Option<String>,
    /// Its numbers exported on /metrics (no part of what a check
    /// computes: left out of the fingerprints).
    #[serde(skip)]
    pub metrics: bool,
}

/// An extract clip's extraction.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum ExtractSpec {
    /// The main article.
    Article,
    /// The repeated data records.
    Records,
    /// The DEIP data region holding these keywords.
    Region(Vec<String>),
}

impl ExtractSpec {
    /// The name used in watch files and events.
    pub fn kind(&self) -> &'static str {
        match self {
            ExtractSpec::Article => "article",
            ExtractSpec::Records => "records",
            ExtractSpec::Region(_) => "region",
        }
    }
}

/// Layout monitoring of a watch.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Layout {
    /// The template set drift is measured against (`None`: the page's
    /// previous structure).
    pub template: Option<String>,
    /// Drift beyond which the layout counts as changed.
    pub max_drift: f64,
    /// Notifiers told about layout changes.
    pub notify: Vec<String>,
}

/// Default [`Layout::max_drift`].
pub const DEFAULT_MAX_DRIFT: f64 = 0.5;

impl Default for Layout {
    fn default() -> Layout {
        Layout {
            template: None,
            max_drift: DEFAULT_MAX_DRIFT,
            notify: Vec::new(),
        }
    }
}

/// A numeric threshold on a value of the page.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Threshold {
    /// Unique within the watch.
    pub name: String,
    /// XPath giving a node-set or a number (checked); with `each`, the
    /// records the threshold applies to.
    pub xpath: String,
    /// A relative location path read on each record `xpath` selects: the
    /// threshold is then judged per record, its state kept by record key.
    pub each: Option<String>,
    /// Alarm when the value is above this.
    pub above: Option<f64>,
    /// Alarm when the value is below this.
    pub below: Option<f64>,
    /// Alarm when the value is outside `[lo, hi]` (`lo < hi`).
    pub outside: Option<(f64, f64)>,
    /// Alarm when `|value - previous| / |previous| * 100 >= change_pct`
    /// (with `within`: against any value of the window).
    pub change_pct: Option<f64>,
    /// The window of the threshold's value history that `change_pct`,
    /// `new_high` and `new_low` compare with. (Settings left out of the
    /// fingerprints when unset, so that watches without them keep theirs.)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub within: Option<Duration>,
    /// Alarm above the highest value within the window.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub new_high: bool,
    /// Alarm below the lowest value within the window.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub new_low: bool,
    /// Exported on /metrics (no part of what a check computes).
    #[serde(skip)]
    pub metrics: bool,
    /// Absolute margin, in the value's units, before a return to normal (>= 0).
    pub hysteresis: f64,
    /// Notifier names (each defined in the daemon file).
    pub notify: Vec<String>,
    /// Also notify when the value returns to normal (default true).
    pub on_return: bool,
}

/// Notification on any semantic change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OnChange {
    /// Notifier names.
    pub notify: Vec<String>,
    /// At most one message per interval.
    pub digest: Option<Duration>,
}

/// What happens when a watch's checks fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailurePolicy {
    /// Consecutive failures before one "failing" alert.
    pub alert_after: u32,
    /// Who hears about failing and recovered (default: nobody, logged only).
    pub notify: Vec<String>,
}

/// One problem in a configuration file.
///
/// Displays as `{file}:{line}:{column}: {path}: {message}`, e.g.
/// `watches/gazp.yaml:7:12: thresholds[0].above: expected a number`.
/// `path` is the field (`schedule.cron`, `notifiers.hook.webhook.url`), or
/// `(document)` for the file as a whole and `(syntax)` for YAML syntax errors.
/// A line of 0 means the problem has no position (a missing directory): the
/// display is then `{file}: {path}: {message}`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Diagnostic {
    /// The file (or directory) concerned.
    pub file: PathBuf,
    /// 1-based line, 0 when unknown.
    pub line: usize,
    /// 1-based column (in characters), 0 when unknown.
    pub column: usize,
    /// The field concerned.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(
                f,
                "{}: {}: {}",
                self.file.display(),
                self.path,
                self.message
            )
        } else {
            write!(
                f,
                "{}:{}:{}: {}: {}",
                self.file.display(),
                self.line,
                self.column,
                self.path,
                self.message
            )
        }
    }
}

/// Everything the daemon needs: its settings and the watches.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    /// The daemon file (or the defaults).
    pub daemon: DaemonConfig,
    /// Every watch, sorted by id.
    pub watches: Vec<Watch>,
}

/// Whether loading reads the secrets the files name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Secrets {
    /// Every `{env: NAME}` and `{file: PATH}` is read (what running needs).
    #[default]
    Read,
    /// Each reference is checked for its form only and nothing is read
    /// (`semclip validate --syntax`). The configuration loaded holds
    /// placeholders where the secrets go, and leaves out the notifiers
    /// whose URL is a secret: it is for checking, never for running.
    Unread,
}

/// Loads the daemon file (or defaults when `config` is None; `watches_dir`
/// overrides its `watches`), then every watch file, validating everything
/// and reading every secret. Err holds ALL diagnostics.
pub fn load(config: Option<&Path>, watches_dir: Option<&Path>) -> Result<Loaded, Vec<Diagnostic>> {
    load_with(config, watches_dir, Secrets::Read)
}

/// As [`load`], reading the secrets or not as `secrets` says.
pub fn load_with(
    config: Option<&Path>,
    watches_dir: Option<&Path>,
    secrets: Secrets,
) -> Result<Loaded, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let daemon = match config {
        Some(path) => validate::load_daemon_file(path, secrets, &mut diags),
        None => validate::DaemonOutcome::defaults(),
    };
    let mut config = daemon.config;
    let mut dir_at = daemon.watches_at;
    if let Some(dir) = watches_dir {
        config.watches_dir = dir.to_path_buf();
        dir_at = None;
    }
    let watches = validate::load_watch_dir(
        &config.watches_dir,
        &config,
        daemon.notifier_names.as_ref(),
        dir_at,
        secrets,
        &mut diags,
    );
    if diags.is_empty() {
        Ok(Loaded {
            daemon: config,
            watches,
        })
    } else {
        Err(diags)
    }
}

/// The built-in daemon settings, as without a daemon file.
pub fn daemon_defaults() -> DaemonConfig {
    validate::DaemonOutcome::defaults().config
}

/// Loads and validates the daemon file alone.
pub fn load_daemon(path: &Path) -> Result<DaemonConfig, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let daemon = validate::load_daemon_file(path, Secrets::Read, &mut diags);
    if diags.is_empty() {
        Ok(daemon.config)
    } else {
        Err(diags)
    }
}

/// Loads every watch file in `dir` (`*.yaml`, `*.yml`, not recursive) against
/// an already loaded daemon configuration (used on reload). Watches come
/// sorted by id; Err holds ALL diagnostics.
pub fn load_watches(dir: &Path, daemon: &DaemonConfig) -> Result<Vec<Watch>, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let names = daemon.notifiers.keys().cloned().collect();
    let watches =
        validate::load_watch_dir(dir, daemon, Some(&names), None, Secrets::Read, &mut diags);
    if diags.is_empty() {
        Ok(watches)
    } else {
        Err(diags)
    }
}
