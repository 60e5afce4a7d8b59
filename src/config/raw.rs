//! The raw file structures: what YAML deserializes into before validation.
//! Unknown keys are rejected; every value remembers where it was written.
//! The JSON Schemas in `schema/` are derived from these (doc comments become
//! descriptions).
#![allow(
    rustdoc::bare_urls,
    rustdoc::broken_intra_doc_links,
    rustdoc::invalid_html_tags,
    reason = "the doc comments here are the JSON schemas' descriptions, written for the YAML files' users (`matrix[s]://`, `<id>.yaml`, URLs as text), not rustdoc"
)]

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};

use super::channels::gotify::RawGotify;
use super::channels::hook::RawHookChannel;
use super::channels::matrix::RawMatrix;
use super::channels::ntfy::RawNtfy;
use super::channels::telegram::RawTelegram;
pub(crate) use super::value::{ByteSize, Pos, RawSecret, RawSecretOrText, Sp};

/// A browser watch's `wait_for` as written: text (a CSS selector, or an
/// XPath over the DOM when it starts like one) or `{hierarchy: XPATH}`.
#[derive(Debug, Clone)]
pub(crate) enum RawWaitFor {
    Dom(String),
    Hierarchy(String),
}

impl<'de> Deserialize<'de> for RawWaitFor {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawWaitFor;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a selector, or {hierarchy: XPATH}")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawWaitFor, E> {
                Ok(RawWaitFor::Dom(v.to_owned()))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawWaitFor, A::Error> {
                let mut found = None;
                while let Some(key) = map.next_key::<String>()? {
                    if key != "hierarchy" {
                        return Err(de::Error::custom(format!(
                            "unknown field `{key}`, expected `hierarchy`"
                        )));
                    }
                    if found.is_some() {
                        return Err(de::Error::custom("duplicate field `hierarchy`"));
                    }
                    found = Some(map.next_value::<String>()?);
                }
                found
                    .map(RawWaitFor::Hierarchy)
                    .ok_or_else(|| de::Error::custom("missing field `hierarchy`"))
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for RawWaitFor {
    fn schema_name() -> Cow<'static, str> {
        "WaitFor".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "What must match before a rendered page is taken: a CSS selector, or an XPath over the DOM when it starts with /, (, ./ or .. (text); or an XPath over the page's hierarchy ({hierarchy: XPATH}), judged as XPath's boolean() on the hierarchy built from the DOM, again at DOM mutations (at most every 250 ms).",
            "oneOf": [
                {"type": "string"},
                {
                    "type": "object",
                    "properties": {"hierarchy": {"type": "string", "description": "An XPath over the page's hierarchy."}},
                    "required": ["hierarchy"],
                    "additionalProperties": false
                }
            ]
        })
    }
}

/// The daemon file (semclip.yaml): storage, notifiers, defaults and limits. Every key is optional; unknown keys are rejected. Relative paths are relative to this file's directory. Durations are written like "30s", "5m", "1h 30m".
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "semclip daemon file")]
#[schemars(rename = "Daemon")]
pub(crate) struct RawDaemon {
    /// The store: an SQLite file path, or a PostgreSQL URL (postgres://user@host/db, TLS with ?sslmode=require). Default: $STATE_DIRECTORY/semclip.db when STATE_DIRECTORY is set, else semclip.db next to this file.
    pub database: Option<Sp<String>>,
    /// The PostgreSQL password, when `database` is a PostgreSQL URL: {env: NAME} or {file: PATH}, never in the URL.
    pub database_password: Option<Sp<RawSecret>>,
    /// The directory of watch files (*.yaml, *.yml). Default: watches.
    pub watches: Option<Sp<String>>,
    /// The HTTP server's address, e.g. 127.0.0.1:8080. Without it `semclip run` serves nothing.
    pub listen: Option<Sp<String>>,
    /// The HTTP server's settings (clips, feeds, API, status pages).
    pub server: Option<Sp<RawServer>>,
    /// The mail server; required when any email notifier exists.
    pub smtp: Option<Sp<RawSmtp>>,
    /// Notifiers by name; each is exactly one of email, webhook, file, slack, teams, discord, telegram, matrix, ntfy, gotify, url.
    pub notifiers: Option<BTreeMap<String, Sp<RawNotifier>>>,
    /// API tokens of the HTTP server, by name.
    pub tokens: Option<BTreeMap<String, Sp<RawToken>>>,
    /// Fetch settings every watch starts from.
    pub fetch: Option<Sp<RawFetchDefaults>>,
    /// Concurrency limits.
    pub limits: Option<Sp<RawLimits>>,
    /// When failures become alerts and when undeliverable alerts are given up.
    pub alerts: Option<Sp<RawAlerts>>,
    /// How much history to keep per watch.
    pub retention: Option<Sp<RawRetention>>,
    /// Serve the bundled demo site.
    pub demo: Option<Sp<RawDemo>>,
    /// The local Chromium that renders `fetch: {render: browser}` watches.
    pub browser: Option<Sp<RawBrowser>>,
    /// Sessions by name ([A-Za-z0-9._-]+): a cookie jar kept in the store across checks and restarts, shared by the watches that name it in `session`, and optionally how to log in.
    pub sessions: Option<BTreeMap<String, Sp<RawSession>>>,
}

/// The local Chromium that renders `render: browser` watches: one process, started on first use, restarted when it crashes, hangs or outgrows its memory cap.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Browser")]
pub(crate) struct RawBrowser {
    /// The browser executable. Default: the first of chromium, chromium-browser, google-chrome, google-chrome-stable on PATH.
    pub executable: Option<Sp<String>>,
    /// Pages rendered at once, at least 1. Default: 4.
    pub max_pages: Option<Sp<usize>>,
    /// Memory of all the browser's processes (PSS from /proc/PID/smaps_rollup, shared pages divided among them) beyond which it is killed and restarted. Default: 2GiB.
    pub memory_cap: Option<Sp<ByteSize>>,
}

/// A session: its cookie jar is kept in the store; `semclip cookies import` fills it from a cookies.txt.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Session")]
pub(crate) struct RawSession {
    /// How to log in, when a page of the session shows it logged out. Without it the jar is only kept.
    pub login: Option<Sp<RawLogin>>,
}

/// A login, run when a page shows its session logged out, never on every check: a form posted (`fields`) or steps in the browser (`steps`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Login")]
pub(crate) struct RawLogin {
    /// With `fields`: where the form is posted (http or https), as application/x-www-form-urlencoded. With `steps`: the login page the browser opens.
    pub url: Sp<String>,
    /// The form's fields: name -> text, or a secret ({env: NAME} or {file: PATH}) for credentials.
    pub fields: Option<BTreeMap<String, Sp<RawSecretOrText>>>,
    /// Steps run in the browser on the login page, in order, instead of posting a form: fill, click, wait_for. The cookies the browser holds at the end go into the session's jar.
    pub steps: Option<Sp<Vec<Sp<RawStep>>>>,
    /// XPaths over the page's hierarchy that show the session logged out (a login form, a "sign in" link); at least one. Only a page they select triggers the login.
    pub logged_out: Sp<Vec<Sp<String>>>,
}

/// One step of a browser login. Selectors are CSS, or XPath over the DOM when they start with `/`, `(`, `./` or `..`; each step waits for its element, by the watch's fetch timeout.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
#[schemars(rename = "LoginStep")]
pub(crate) enum RawStep {
    /// Types a value into a field.
    Fill(RawFill),
    /// Clicks an element.
    Click(String),
    /// Waits until an element is there (across the navigation a click started).
    WaitFor(String),
}

/// A `fill` step.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "FillStep")]
pub(crate) struct RawFill {
    /// The field.
    pub selector: String,
    /// What is typed: text, or a secret ({env: NAME} or {file: PATH}) for credentials.
    pub value: RawSecretOrText,
}

/// The mail server used by email notifiers.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Smtp")]
pub(crate) struct RawSmtp {
    /// Host name.
    pub host: Sp<String>,
    /// Port. Default by security: starttls 587, tls 465, none 25.
    pub port: Option<Sp<u16>>,
    /// Transport security. Default: starttls.
    pub security: Option<Sp<RawSecurity>>,
    /// Login user name.
    pub username: Option<Sp<String>>,
    /// Login password.
    pub password: Option<Sp<RawSecret>>,
    /// The From mailbox, e.g. "semclip <semclip@example.org>".
    pub from: Sp<String>,
    /// Timeout of one SMTP step. Default: 30s.
    pub timeout: Option<Sp<String>>,
}

/// How the SMTP connection is secured.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "Security")]
pub(crate) enum RawSecurity {
    /// Plain connection upgraded with STARTTLS (required).
    Starttls,
    /// TLS from the first byte (SMTPS).
    Tls,
    /// No encryption.
    None,
}

/// A notifier: exactly one of email, webhook, file, slack, teams, discord, telegram, matrix, ntfy, gotify, url.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "Notifier")]
pub(crate) enum RawNotifier {
    /// Mail through the daemon's smtp server.
    Email(Sp<RawEmail>),
    /// An HTTP POST of the alert JSON.
    Webhook(Sp<RawWebhook>),
    /// One JSON line per alert appended to a file.
    File(Sp<RawFileNotifier>),
    /// A Slack incoming webhook.
    Slack(Sp<RawHookChannel>),
    /// A Microsoft Teams workflow webhook (Adaptive Card).
    Teams(Sp<RawHookChannel>),
    /// A Discord channel webhook.
    Discord(Sp<RawHookChannel>),
    /// A Telegram bot posting to one chat.
    Telegram(Sp<RawTelegram>),
    /// A Matrix room.
    Matrix(Sp<RawMatrix>),
    /// An ntfy topic.
    Ntfy(Sp<RawNtfy>),
    /// A Gotify application.
    Gotify(Sp<RawGotify>),
    /// An Apprise-style URL: tgram://, slack://, discord://, workflows://, matrix[s]://, ntfy[s]://, gotify[s]:// (docs/notifiers.md, "Chat and push notifiers"). Inline only when it carries no credential; otherwise {env: NAME} or {file: PATH}.
    Url(Sp<RawSecretOrText>),
}

/// An email notifier.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Email")]
pub(crate) struct RawEmail {
    /// Recipient mailboxes, at least one.
    pub to: Sp<Vec<Sp<String>>>,
}

/// A webhook notifier.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Webhook")]
pub(crate) struct RawWebhook {
    /// The endpoint, http or https.
    pub url: Sp<String>,
    /// Key of the X-Semclip-Signature HMAC-SHA256 header.
    pub secret: Option<Sp<RawSecret>>,
    /// Request timeout. Default: 10s.
    pub timeout: Option<Sp<String>>,
    /// Extra request headers: name -> text, or a secret ({env: NAME} or {file: PATH}).
    pub headers: Option<BTreeMap<String, Sp<RawSecretOrText>>>,
}

/// A file notifier.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "FileNotifier")]
pub(crate) struct RawFileNotifier {
    /// The file; created with its directories when missing.
    pub path: Sp<String>,
}

/// The HTTP server's settings.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Server")]
pub(crate) struct RawServer {
    /// The server's public base URL (http or https, no query or fragment): links in feeds and alerts and the RDF IRIs of clips start with it. Default: http://LISTEN (alerts then link the watched page).
    pub public_url: Option<Sp<String>>,
    /// The directory of XSLT stylesheets (html.xsl, rdf.xsl and custom ones). Default: xslt next to this file.
    pub xslt: Option<Sp<String>>,
    /// Origins allowed to read clips and feeds from a browser (CORS), e.g. https://portal.example.org; "*" for any. Default: none.
    pub cors_origins: Option<Sp<Vec<Sp<String>>>>,
    /// Who may frame the HTML clips and status pages (CSP frame-ancestors): origins such as https://portal.example.org, "'self'", or "*"; [] for nobody. Default: ["'self'"].
    pub frame_ancestors: Option<Sp<Vec<Sp<String>>>>,
    /// Requests handled at once; more are refused with 503 at once (load shedding), at least 1. Default: 1024.
    pub max_in_flight: Option<Sp<usize>>,
    /// Longest time one request may take before a 503. Default: 10s.
    pub request_timeout: Option<Sp<String>>,
    /// Cache-Control of clips that do not set their own. Default: "no-cache" ("private, no-cache" for clips that need a token).
    pub cache_control: Option<Sp<String>>,
    /// Longest time a client may take to send a request's headers, and longest a kept-alive connection may stay idle; slower clients are disconnected. Default: 10s.
    pub header_timeout: Option<Sp<String>>,
    /// Client connections open at once, at least 1; further ones are closed at once, and the daemon never lets them take the file descriptors its own fetches need. Default: 512.
    pub max_connections: Option<Sp<usize>>,
    /// Connections open at once from one IP address, at least 1; a client over it has its new connections closed at once, so that one slow client cannot fill the server. Default: 64.
    pub max_client_connections: Option<Sp<usize>>,
    /// Threads rendering HTML and RDF clips with XSLT, at least 1; a long render occupies one. Default: 2.
    pub render_threads: Option<Sp<usize>>,
}

/// An API token.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Token")]
pub(crate) struct RawToken {
    /// The token value.
    pub secret: Sp<RawSecret>,
    /// What it may do, at least one scope.
    pub scopes: Sp<Vec<RawScope>>,
}

/// What a token may do.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "Scope")]
pub(crate) enum RawScope {
    /// Read clips, watches and history.
    Read,
    /// Everything.
    Admin,
}

/// Fetch settings every watch starts from.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "FetchDefaults")]
pub(crate) struct RawFetchDefaults {
    /// Largest response body accepted. Default: 20MiB.
    pub max_body: Option<Sp<ByteSize>>,
    /// Connect timeout. Default: 10s.
    pub connect_timeout: Option<Sp<String>>,
    /// Whole-request timeout. Default: 30s.
    pub timeout: Option<Sp<String>>,
    /// Redirects followed. Default: 10.
    pub max_redirects: Option<Sp<usize>>,
    /// Extra attempts on transient failures. Default: 2.
    pub retries: Option<Sp<u32>>,
    /// Proxy URL (http, https, socks5, socks5h).
    pub proxy: Option<Sp<String>>,
    /// Directories file:// watches may read pages from; relative paths are relative to this file, symlinks are resolved; [] allows no file:// watch. Default: the parent of the watches directory.
    pub file_roots: Option<Sp<Vec<Sp<String>>>>,
    /// Let redirects lead to loopback, private, link-local (cloud metadata), shared and other internal addresses. Default: false.
    pub allow_private: Option<Sp<bool>>,
    /// Hosts and networks redirects may reach even when their addresses are internal: a host name, HOST:PORT, an IP address, IP:PORT or a CIDR network (10.0.0.0/8, fd00::/8).
    pub allow_hosts: Option<Sp<Vec<Sp<String>>>>,
    /// Whether a watch file's own URL (its host and port) may point at an internal address: the operator wrote it. false holds watch URLs to the rule redirects follow. Default: true.
    pub trust_watch_urls: Option<Sp<bool>>,
}

/// Concurrency limits.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Limits")]
pub(crate) struct RawLimits {
    /// Checks in flight, at least 1. Default: 16.
    pub concurrency: Option<Sp<usize>>,
    /// Concurrent requests per host, at least 1. Default: 2.
    pub per_host: Option<Sp<usize>>,
    /// Minimum time between request starts to one host. Default: 1s.
    pub host_spacing: Option<Sp<String>>,
    /// What one page may make semclip build and spend; a page over any of
    /// these fails its check with the reason (see docs/security.md, "Hostile pages: the page budget").
    pub page: Option<Sp<RawPageLimits>>,
}

/// Bounds on one page's output and CPU.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "PageLimits")]
pub(crate) struct RawPageLimits {
    /// DOM nodes the HTML parser may create, at least 1. Default: 500000.
    pub dom_nodes: Option<Sp<u64>>,
    /// Bytes of text and attribute values in the DOM. Default: 32 MiB.
    pub dom_bytes: Option<Sp<ByteSize>>,
    /// Table grid slots after rowspan/colspan expansion, all tables of the
    /// page together, at least 1. Default: 250000.
    pub cells: Option<Sp<u64>>,
    /// Nodes of the semantic hierarchy, at least 1. Default: 500000.
    pub nodes: Option<Sp<u64>>,
    /// Bytes of labels, keys, column headers and texts in the hierarchy.
    /// Default: 32 MiB.
    pub text_bytes: Option<Sp<ByteSize>>,
    /// Bytes of all node ids (XPaths) together. Default: 64 MiB.
    pub id_bytes: Option<Sp<ByteSize>>,
    /// CPU time of the page's work in one check (parse, hierarchy,
    /// extraction, diff). Default: 10s.
    pub cpu: Option<Sp<String>>,
}

/// Alert settings.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Alerts")]
pub(crate) struct RawAlerts {
    /// Consecutive failed checks before one "failing" alert, at least 1. Default: 3.
    pub failures_before_alert: Option<Sp<u32>>,
    /// Undeliverable alerts are marked failed after this. Default: 24h.
    pub give_up_after: Option<Sp<String>>,
}

/// History retention per watch.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Retention")]
pub(crate) struct RawRetention {
    /// Snapshots kept, counting the current one, at least 1. Default: 100.
    pub keep_versions: Option<Sp<u32>>,
    /// Days of snapshots and change events kept, at least 1. Default: 90.
    pub keep_days: Option<Sp<u32>>,
}

/// The demo site.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Demo")]
pub(crate) struct RawDemo {
    /// Where the demo site listens, e.g. 127.0.0.1:8787.
    pub listen: Sp<String>,
}

/// A watch file (watches/<id>.yaml): one watched page. Unknown keys are rejected. Durations are written like "30s", "5m", "1h 30m".
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "semclip watch file")]
#[schemars(rename = "Watch")]
pub(crate) struct RawWatch {
    /// The watch id, [A-Za-z0-9._-]+, unique. Default: the file name without extension.
    pub id: Option<Sp<String>>,
    /// The page: an http, https or file:// URL (file URLs are absolute).
    pub url: Sp<String>,
    /// A title for notifications.
    pub title: Option<Sp<String>>,
    /// When the page is checked: exactly one of cron and every.
    pub schedule: Sp<RawSchedule>,
    /// Overrides of the daemon's fetch settings, plus headers, cookies and auth.
    pub fetch: Option<Sp<RawWatchFetch>>,
    /// XPaths of parts left out of diffs and of the content hash.
    pub ignore: Option<Sp<Vec<Sp<String>>>>,
    /// XPaths over the hierarchy that mark a challenge or block page served as a page (a captcha, a "verify you are human" notice): such a page is a `blocked` failure, never compared or stored.
    pub blocked: Option<Sp<Vec<Sp<String>>>>,
    /// Named clips of the page.
    pub clips: Option<BTreeMap<String, Sp<RawClip>>>,
    /// Numeric thresholds.
    pub thresholds: Option<Sp<Vec<Sp<RawThreshold>>>>,
    /// Notify on any semantic change.
    pub on_change: Option<Sp<RawOnChange>>,
    /// What happens when checks fail.
    pub failures: Option<Sp<RawFailures>>,
    /// What change detection looks at: all (default) or data.
    pub monitor: Option<Sp<RawMonitor>>,
    /// Layout monitoring ("layout changed" events). Default: on, against the page's previous structure, notifying nobody.
    pub layout: Option<Sp<RawLayout>>,
    /// The session (declared under `sessions` in the daemon file) whose cookie jar the page is fetched with, and which logs in when the page shows it logged out.
    pub session: Option<Sp<String>>,
    /// Export the watch's values (the numbers its clips and thresholds select) on /metrics as `semclip_value` gauges. Default: false.
    pub metrics: Option<Sp<bool>>,
    /// Key columns chosen by the watch, where the page's own choice is wrong: each names tables by their label and the column header (or headers, for a key of several columns) whose text keys their rows. A table some row of which lacks the column keeps its own key.
    pub keys: Option<Sp<Vec<Sp<RawTableKey>>>>,
}

/// A key column chosen by the watch.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "TableKey")]
pub(crate) struct RawTableKey {
    /// The tables' label, as in `table/@label`.
    pub table: Sp<String>,
    /// The column header (a string) or headers (a list, joined by ` / ` in the key) whose text keys the rows.
    pub key: Sp<RawKeyColumns>,
}

/// One column header, or several.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum RawKeyColumns {
    /// One column.
    One(String),
    /// Several columns, in key order.
    Many(Vec<String>),
}

/// When the page is checked: exactly one of cron and every.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Schedule")]
pub(crate) struct RawSchedule {
    /// A cron expression: 5 fields (minute hour day month weekday) or 6 (seconds first); L, W and # are allowed.
    pub cron: Option<Sp<String>>,
    /// The IANA time zone the cron fields are read in (only with cron). Default: UTC.
    pub timezone: Option<Sp<String>>,
    /// A fixed interval, at least 1s.
    pub every: Option<Sp<String>>,
    /// A random delay in [0, jitter] added to every run. Default: 0s.
    pub jitter: Option<Sp<String>>,
}

/// A watch's fetch settings.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "WatchFetch")]
pub(crate) struct RawWatchFetch {
    /// Extra request headers: name -> text, or a secret ({env: NAME} or {file: PATH}) for a key or token. Sent to the watched page's origin only (scheme, host and port): a redirect or a rendered page's request to another origin goes without them, unless headers_cross_origin is true.
    pub headers: Option<BTreeMap<String, Sp<RawSecretOrText>>>,
    /// Whether the headers also go to other origins (redirects, and the requests a rendered page makes). Default: false.
    pub headers_cross_origin: Option<Sp<bool>>,
    /// Cookies sent with every request: name -> secret.
    pub cookies: Option<BTreeMap<String, Sp<RawSecret>>>,
    /// HTTP authentication: exactly one of basic and bearer.
    pub auth: Option<Sp<RawAuth>>,
    /// Largest response body accepted.
    pub max_body: Option<Sp<ByteSize>>,
    /// Connect timeout.
    pub connect_timeout: Option<Sp<String>>,
    /// Whole-request timeout.
    pub timeout: Option<Sp<String>>,
    /// Redirects followed.
    pub max_redirects: Option<Sp<usize>>,
    /// Extra attempts on transient failures.
    pub retries: Option<Sp<u32>>,
    /// Proxy URL (http, https, socks5, socks5h).
    pub proxy: Option<Sp<String>>,
    /// How the page is loaded: http (default: the server's HTML as sent) or browser (rendered by the daemon's local Chromium, JavaScript run; http and https URLs only).
    pub render: Option<Sp<String>>,
    /// With render: browser, what must match before the page is taken, waited for until `timeout`: a CSS selector or an XPath over the DOM (text), or {hierarchy: XPATH}, an XPath over the page's hierarchy. Default: the page is taken once it has settled (no request in flight and no DOM mutation for 500 ms, or at the timeout less a reserve).
    pub wait_for: Option<Sp<RawWaitFor>>,
    /// With render: browser, the viewport as WIDTHxHEIGHT in CSS pixels. Default: 1280x800.
    pub viewport: Option<Sp<String>>,
    /// With render: browser, the subresources not loaded: any of images, fonts, media. Default: all three.
    pub block: Option<Sp<Vec<Sp<String>>>>,
    /// With render: browser, what a check asks the server before rendering: render (default: nothing, the page is rendered at every check, so data its scripts fetch is never missed) or html (a conditional request for the HTML with the last render's validators; a 304 ends the check without a render: for pages whose data is in their HTML).
    pub revalidate: Option<Sp<String>>,
}

/// HTTP authentication.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
#[schemars(rename = "Auth")]
pub(crate) enum RawAuth {
    /// Authorization: Basic.
    Basic {
        /// User name.
        username: Sp<String>,
        /// Password.
        password: Sp<RawSecret>,
    },
    /// Authorization: Bearer.
    Bearer {
        /// The token.
        token: Sp<RawSecret>,
    },
}

/// A named part of the page.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Clip")]
pub(crate) struct RawClip {
    /// XPath 1.0 over the page's semantic hierarchy. Exactly one of xpath and extract.
    pub xpath: Option<Sp<String>>,
    /// Extract the clip without XPath: the page's main article, its repeated data records, or the data region holding the keywords (DEIP). Exactly one of xpath and extract.
    pub extract: Option<Sp<RawExtract>>,
    /// For extract: region, two or three texts that appear in the wanted data, each from a different record (e.g. two issuer names).
    pub keywords: Option<Sp<Vec<Sp<String>>>>,
    /// What the clip is.
    pub description: Option<Sp<String>>,
    /// Served without a token (clips, feeds of this clip). Default: false.
    pub public: Option<Sp<bool>>,
    /// The XSLT stylesheet of its HTML form, a file name in the server's xslt directory. Default: html.xsl.
    pub stylesheet: Option<Sp<String>>,
    /// Its Cache-Control header. Default: the server's cache_control.
    pub cache_control: Option<Sp<String>>,
    /// Export the numbers of this clip on /metrics as `semclip_value` gauges. Default: false.
    pub metrics: Option<Sp<bool>>,
}

/// What an extract clip extracts.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "Extract")]
pub(crate) enum RawExtract {
    /// The main article: title, byline, date, body paragraphs.
    Article,
    /// The repeated data records of a list page.
    Records,
    /// The data region holding `keywords`, found once and then followed by its wrapper.
    Region,
}

/// Layout monitoring: one "layout changed" event when something the watch depends on moved or vanished: a clip or threshold XPath that selected something selects nothing, the page no longer fits the learned template, or the hierarchy's label structure was reorganised. Markup alone (wrappers, class names) never raises one.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Layout")]
pub(crate) struct RawLayout {
    /// A template set learned with `semclip learn NAME ...`: the event is raised when the page no longer fits its nearest template (its data regions are not found). Default: no template.
    pub template: Option<Sp<String>>,
    /// Drift of the hierarchy's label structure from the previous page (Jaccard distance of the label paths: 0 = same structure, 1 = nothing in common) beyond which the layout counts as changed. Default: 0.5.
    pub max_drift: Option<Sp<f64>>,
    /// Notifier names from the daemon file told about layout changes; only then is a layout event an alert. Default: nobody (status page, feed and log only).
    pub notify: Option<Sp<Vec<Sp<String>>>>,
}

/// What change detection looks at.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "Monitor")]
pub(crate) enum RawMonitor {
    /// The whole page's hierarchy (default).
    All,
    /// Only the page's data: the extract clips' results, or with layout.template the data regions of the template (navigation, footers, ads and counters drop out).
    Data,
}

/// A numeric threshold: at least one of above, below, outside, change_pct.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Threshold")]
pub(crate) struct RawThreshold {
    /// Unique within the watch.
    pub name: Sp<String>,
    /// XPath 1.0 giving a node-set (the numbers of the selected nodes) or a number. With `each`: the records (rows) the threshold applies to, one by one.
    pub xpath: Sp<String>,
    /// A relative XPath read on each record `xpath` selects (e.g. `cell[@col='Price']/@num`): the threshold is judged per record, with its state kept by the record's key, so it alerts once for each record that crosses and once when that record returns.
    pub each: Option<Sp<String>>,
    /// Alarm when the value is above this.
    pub above: Option<Sp<f64>>,
    /// Alarm when the value is below this.
    pub below: Option<Sp<f64>>,
    /// Alarm when the value is outside [lo, hi], lo < hi.
    #[schemars(length(equal = 2))]
    pub outside: Option<Sp<Vec<f64>>>,
    /// Alarm when |value - previous| / |previous| * 100 >= this (> 0). With `within`: when the value is this many percent away from any value it held within that window (e.g. dropped 10% within 7 days).
    pub change_pct: Option<Sp<f64>>,
    /// A window of the threshold's own value history, e.g. 7d: `change_pct` compares with the values within it, `new_high`/`new_low` with its highest/lowest. While in alarm the window stops at the crossing, so the alarm holds until the value is back.
    pub within: Option<Sp<String>>,
    /// With `within`: alarm on a value above the highest the threshold held within the window (a new high).
    pub new_high: Option<Sp<bool>>,
    /// With `within`: alarm on a value below the lowest the threshold held within the window (a new low).
    pub new_low: Option<Sp<bool>>,
    /// Absolute margin, in the value's units, before a return to normal (>= 0). Default: 0.
    pub hysteresis: Option<Sp<f64>>,
    /// Notifier names from the daemon file.
    pub notify: Option<Sp<Vec<Sp<String>>>>,
    /// Also notify when the value returns to normal. Default: true.
    pub on_return: Option<Sp<bool>>,
    /// Export the threshold's value on /metrics as a `semclip_value` gauge. Default: false.
    pub metrics: Option<Sp<bool>>,
}

/// Notify on any semantic change.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "OnChange")]
pub(crate) struct RawOnChange {
    /// Notifier names from the daemon file.
    pub notify: Sp<Vec<Sp<String>>>,
    /// At most one message per interval, e.g. 1h.
    pub digest: Option<Sp<String>>,
}

/// What happens when checks fail.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Failures")]
pub(crate) struct RawFailures {
    /// Consecutive failures before one "failing" alert; overrides alerts.failures_before_alert.
    pub alert_after: Option<Sp<u32>>,
    /// Who hears about failing and recovered. Default: nobody (logged only).
    pub notify: Option<Sp<Vec<Sp<String>>>>,
}

fn to_json(schema: Schema) -> serde_json::Value {
    schema.to_value()
}

/// The JSON Schema of the daemon file (`schema/daemon.schema.json`).
pub fn daemon_schema() -> serde_json::Value {
    to_json(schemars::schema_for!(RawDaemon))
}

/// The JSON Schema of a watch file (`schema/watch.schema.json`).
pub fn watch_schema() -> serde_json::Value {
    to_json(schemars::schema_for!(RawWatch))
}
