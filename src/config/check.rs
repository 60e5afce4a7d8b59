//! Validation: raw structures in, the validated types of [`super`] out, and
//! every problem found as a [`Diagnostic`].

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use url::Url;

use super::NtfyAuth;
use super::apprise;
use super::lenient;
use super::raw::{
    ByteSize, Pos, RawAlerts, RawAuth, RawBrowser, RawClip, RawDaemon, RawEmail, RawExtract,
    RawFailures, RawFetchDefaults, RawHookChannel, RawKeyColumns, RawLayout, RawLimits, RawMonitor,
    RawNotifier, RawOnChange, RawRetention, RawSchedule, RawScope, RawSecret, RawSecretOrText,
    RawSecurity, RawServer, RawSession, RawSmtp, RawStep, RawTableKey, RawThreshold, RawToken,
    RawWaitFor, RawWatch, RawWatchFetch, RawWebhook, Sp,
};
use super::tree::{DOCUMENT, join};
use super::{
    AlertSettings, Auth, Channel, ChannelConfig, Clip, DEFAULT_MAX_DRIFT, DaemonConfig, Database,
    DemoConfig, Diagnostic, ExtractSpec, FailurePolicy, FetchDefaults, FormField, Layout, Limits,
    Login, LoginForm, LoginHow, MAX_SECRET_FILE, NotifierConfig, OnChange, PageLimits, Scope,
    Secret, SecretUrl, ServerConfig, SessionConfig, SmtpConfig, SmtpSecurity, TableKey, Threshold,
    TokenConfig, Watch, WatchFetch, WebhookConfig,
};
use crate::config::schedule::{Schedule, parse_cron};
use crate::page::browser::{
    BrowserSettings, Ready, RenderOptions, Resource, Revalidate, Step, WaitFor,
};
use crate::page::fence::{AllowHost, Fence, FencedRead};
use crate::store::Retention;
use crate::xpath::{XPathType, result_type};

/// The message of an inline secret.
const INLINE_SECRET: &str = "secrets are never inline: write {env: NAME} or {file: PATH}";

/// Collects the diagnostics of one file; relative paths are resolved against `dir`.
struct Ctx<'a> {
    file: &'a Path,
    dir: &'a Path,
    diags: Vec<Diagnostic>,
}

impl<'a> Ctx<'a> {
    fn new(file: &'a Path) -> Ctx<'a> {
        Ctx {
            file,
            dir: file.parent().unwrap_or(Path::new("")),
            diags: Vec::new(),
        }
    }

    fn err(&mut self, at: Pos, path: &str, message: impl Into<String>) {
        self.diags.push(Diagnostic {
            file: self.file.to_path_buf(),
            line: at.line,
            column: at.column,
            path: if path.is_empty() {
                DOCUMENT.to_owned()
            } else {
                path.to_owned()
            },
            message: message.into(),
        });
    }

    /// Sorted by position, then handed over.
    fn finish(mut self, out: &mut Vec<Diagnostic>) {
        self.diags.sort_by_key(|d| (d.line, d.column));
        out.append(&mut self.diags);
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.join(p)
    }

    fn duration(&mut self, v: Option<&Sp<String>>, path: &str, default: Duration) -> Duration {
        let Some(v) = v else { return default };
        match humantime::parse_duration(v.value.trim()) {
            Ok(d) => d,
            Err(e) => {
                self.err(
                    v.at,
                    path,
                    format!(
                        "invalid duration `{}`: {e} (write e.g. 30s, 5m, 1h 30m)",
                        v.value
                    ),
                );
                default
            }
        }
    }

    /// A duration that must be at least `min`.
    fn duration_min(
        &mut self,
        v: Option<&Sp<String>>,
        path: &str,
        default: Duration,
        min: Duration,
    ) -> Duration {
        let d = self.duration(v, path, default);
        if d < min {
            if let Some(v) = v {
                let message = if min == Duration::from_millis(1) {
                    "must be longer than 0s".to_owned()
                } else {
                    format!("must be at least {}", humantime::format_duration(min))
                };
                self.err(v.at, path, message);
            }
            return default;
        }
        d
    }

    fn byte_size(&mut self, v: Option<&Sp<ByteSize>>, path: &str, default: u64) -> u64 {
        let Some(v) = v else { return default };
        let parsed = match &v.value {
            ByteSize::Bytes(0) => Err("must be at least 1 byte".to_owned()),
            ByteSize::Bytes(n) => Ok(*n),
            ByteSize::Text(t) => parse_byte_size(t),
        };
        parsed.unwrap_or_else(|message| {
            self.err(v.at, path, message);
            default
        })
    }

    fn at_least_one<T: Copy + TryFrom<u8> + PartialOrd>(
        &mut self,
        v: Option<&Sp<T>>,
        path: &str,
        default: T,
    ) -> T {
        let Some(v) = v else { return default };
        let one = T::try_from(1).unwrap_or(default);
        if v.value < one {
            self.err(v.at, path, "must be at least 1");
            return default;
        }
        v.value
    }

    fn secret(&mut self, s: &Sp<RawSecret>, path: &str) -> Option<Secret> {
        let found = match &s.value {
            RawSecret::Inline => Err(INLINE_SECRET.to_owned()),
            RawSecret::Env(name) => secret_from_env(name),
            RawSecret::File(p) => secret_from_file(&self.path(p)),
        };
        found.map_err(|message| self.err(s.at, path, message)).ok()
    }

    fn socket_addr(&mut self, v: &Sp<String>, path: &str) -> Option<SocketAddr> {
        match v.value.trim().parse::<SocketAddr>() {
            Ok(a) => Some(a),
            Err(_) => {
                self.err(
                    v.at,
                    path,
                    format!(
                        "invalid address `{}`: write IP:PORT, e.g. 127.0.0.1:8080",
                        v.value
                    ),
                );
                None
            }
        }
    }

    fn mailbox(&mut self, v: &Sp<String>, path: &str) -> bool {
        match v.value.parse::<lettre::message::Mailbox>() {
            Ok(_) => true,
            Err(e) => {
                self.err(
                    v.at,
                    path,
                    format!(
                        "invalid mailbox `{}` ({e}): write user@example.org or \"Name <user@example.org>\"",
                        v.value
                    ),
                );
                false
            }
        }
    }

    fn proxy(&mut self, v: Option<&Sp<String>>, path: &str) -> Option<String> {
        let v = v?;
        match Url::parse(v.value.trim()) {
            Ok(u) if ["http", "https", "socks5", "socks5h"].contains(&u.scheme()) => {
                Some(v.value.trim().to_owned())
            }
            Ok(u) => {
                self.err(
                    v.at,
                    path,
                    format!(
                        "unsupported proxy scheme `{}`: use http, https, socks5 or socks5h",
                        u.scheme()
                    ),
                );
                None
            }
            Err(e) => {
                self.err(v.at, path, format!("invalid proxy URL `{}`: {e}", v.value));
                None
            }
        }
    }

    fn headers(
        &mut self,
        headers: Option<&BTreeMap<String, Sp<RawSecretOrText>>>,
        path: &str,
    ) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (name, value) in headers.into_iter().flatten() {
            let p = join(path, name);
            if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                self.err(value.at, &p, format!("invalid header name `{name}`"));
                continue;
            }
            if let Some(v) = self.secret_header_value(value, &p) {
                out.push((name.clone(), v));
            }
        }
        out
    }

    /// A header value that may be a secret: the text, or the secret it
    /// names, checked as [`Ctx::header_value`] checks text.
    fn secret_header_value(&mut self, value: &Sp<RawSecretOrText>, path: &str) -> Option<String> {
        let text = match &value.value {
            RawSecretOrText::Text(text) => text.clone(),
            RawSecretOrText::Secret(secret) => {
                let raw = Sp {
                    value: secret.clone(),
                    at: value.at,
                };
                self.secret(&raw, path)?.expose().to_owned()
            }
        };
        self.header_value(
            &Sp {
                value: text,
                at: value.at,
            },
            path,
        )
    }

    /// A header value (visible ASCII, spaces and tabs, not empty).
    fn header_value(&mut self, value: &Sp<String>, path: &str) -> Option<String> {
        let v = value.value.trim();
        if v.is_empty() || reqwest::header::HeaderValue::from_str(v).is_err() {
            self.err(
                value.at,
                path,
                "invalid header value: only visible ASCII, spaces and tabs",
            );
            return None;
        }
        Some(v.to_owned())
    }

    /// A service's base URL: http or https with a host, no query or
    /// fragment.
    fn base_url(&mut self, v: &Sp<String>, path: &str) -> Option<Url> {
        match Url::parse(v.value.trim()) {
            Ok(u)
                if matches!(u.scheme(), "http" | "https")
                    && u.host().is_some()
                    && u.query().is_none()
                    && u.fragment().is_none() =>
            {
                Some(u)
            }
            Ok(_) => {
                self.err(
                    v.at,
                    path,
                    "use an http or https URL without query or fragment",
                );
                None
            }
            Err(e) => {
                self.err(v.at, path, format!("invalid URL `{}`: {e}", v.value));
                None
            }
        }
    }

    /// An optional priority within `lo..=hi`: `Some(None)` when absent,
    /// `None` after reporting one out of range.
    fn priority(&mut self, v: Option<&Sp<u8>>, path: &str, lo: u8, hi: u8) -> Option<Option<u8>> {
        match v {
            None => Some(None),
            Some(p) if (lo..=hi).contains(&p.value) => Some(Some(p.value)),
            Some(p) => {
                self.err(p.at, path, format!("must be {lo} to {hi}"));
                None
            }
        }
    }

    fn xpath(&mut self, v: &Sp<String>, path: &str) -> Option<XPathType> {
        match result_type(&v.value) {
            Ok(t) => Some(t),
            Err(e) => {
                self.err(
                    v.at,
                    path,
                    format!("invalid XPath at column {}: {}", e.column, e.message),
                );
                None
            }
        }
    }

    fn notifiers(
        &mut self,
        names: &Sp<Vec<Sp<String>>>,
        path: &str,
        known: Option<&BTreeSet<String>>,
    ) -> Vec<String> {
        let mut out = Vec::new();
        for (i, name) in names.value.iter().enumerate() {
            if let Some(known) = known
                && !known.contains(&name.value)
            {
                let defined = if known.is_empty() {
                    "the daemon file defines no notifiers".to_owned()
                } else {
                    let list: Vec<&str> = known.iter().map(String::as_str).collect();
                    format!("the daemon file defines: {}", list.join(", "))
                };
                self.err(
                    name.at,
                    &format!("{path}[{i}]"),
                    format!("unknown notifier `{}` ({defined})", name.value),
                );
            }
            if !out.contains(&name.value) {
                out.push(name.value.clone());
            }
        }
        out
    }
}

/// The reason of an I/O error, without the OS error number.
fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_owned(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        std::io::ErrorKind::InvalidData => "not valid UTF-8".to_owned(),
        _ => e.to_string(),
    }
}

/// Parses `20MiB`, `500kB`, `1GB`, `1048576`, `1.5 MiB`.
pub(crate) fn parse_byte_size(text: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "invalid byte size `{text}`: write a number of bytes or a number with a unit (B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)"
        )
    };
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let multiplier: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        _ => return Err(bad()),
    };
    if number.is_empty() || number.starts_with('.') || number.ends_with('.') {
        return Err(bad());
    }
    let bytes = if let Ok(n) = number.parse::<u64>() {
        n.checked_mul(multiplier)
            .ok_or_else(|| format!("byte size `{text}` is too large"))?
    } else {
        let x: f64 = number.parse().map_err(|_| bad())?;
        let b = (x * multiplier as f64).round();
        if b >= u64::MAX as f64 {
            return Err(format!("byte size `{text}` is too large"));
        }
        b as u64
    };
    if bytes == 0 {
        return Err("must be at least 1 byte".to_owned());
    }
    Ok(bytes)
}

/// What loading the daemon file gave.
pub(crate) struct DaemonOutcome {
    /// The configuration (defaults where the file was wrong).
    pub config: DaemonConfig,
    /// The notifier names the file defines, when it parsed: watch files are
    /// checked against them only then.
    pub notifier_names: Option<BTreeSet<String>>,
    /// Where the watches directory was set (file, position), for a diagnostic
    /// when it is missing.
    pub watches_at: Option<(PathBuf, Pos)>,
}

impl DaemonOutcome {
    /// The built-in defaults.
    pub fn defaults() -> DaemonOutcome {
        DaemonOutcome {
            config: daemon_defaults(None, Path::new("")),
            notifier_names: Some(BTreeSet::new()),
            watches_at: None,
        }
    }
}

/// `$STATE_DIRECTORY` (its first entry), if set.
fn state_directory() -> Option<PathBuf> {
    let v = std::env::var_os("STATE_DIRECTORY")?;
    let s = v.to_string_lossy();
    let first = s.split(':').next().unwrap_or("");
    (!first.is_empty()).then(|| PathBuf::from(first))
}

/// The defaults, relative paths resolved against `base`.
pub(crate) fn daemon_defaults(path: Option<PathBuf>, base: &Path) -> DaemonConfig {
    DaemonConfig {
        path,
        database: Database::Sqlite(
            state_directory().map_or_else(|| base.join("semclip.db"), |d| d.join("semclip.db")),
        ),
        watches_dir: base.join("watches"),
        listen: None,
        server: ServerConfig::defaults(base),
        smtp: None,
        notifiers: BTreeMap::new(),
        tokens: BTreeMap::new(),
        fetch: FetchDefaults::default(),
        limits: Limits::default(),
        alerts: AlertSettings::default(),
        browser: BrowserSettings::default(),
        retention: Retention::default(),
        demo: None,
        sessions: BTreeMap::new(),
    }
}

/// Reads a file as UTF-8 text, or a diagnostic.
fn read_text(file: &Path) -> Result<String, Diagnostic> {
    std::fs::read_to_string(file).map_err(|e| Diagnostic {
        file: file.to_path_buf(),
        line: 0,
        column: 0,
        path: "(file)".to_owned(),
        message: format!("cannot read: {}", io_reason(&e)),
    })
}

/// Loads the daemon file at `file`, pushing its diagnostics.
pub(crate) fn load_daemon_file(file: &Path, out: &mut Vec<Diagnostic>) -> DaemonOutcome {
    let base = file.parent().unwrap_or(Path::new(""));
    let failed = |out: &mut Vec<Diagnostic>, d: Diagnostic| {
        out.push(d);
        DaemonOutcome {
            config: daemon_defaults(Some(file.to_path_buf()), base),
            notifier_names: None,
            watches_at: None,
        }
    };
    let text = match read_text(file) {
        Ok(t) => t,
        Err(d) => return failed(out, d),
    };
    // Unknown keys are reported and skipped, so the rest is still checked.
    let mut unknown = Vec::new();
    let raw = match lenient::from_str::<Option<Sp<RawDaemon>>>(file, &text, &mut unknown) {
        Ok(r) => r,
        Err(()) => {
            unknown.sort_by_key(|d| (d.line, d.column));
            out.append(&mut unknown);
            return DaemonOutcome {
                config: daemon_defaults(Some(file.to_path_buf()), base),
                notifier_names: None,
                watches_at: None,
            };
        }
    };
    let Some(raw) = raw else {
        out.append(&mut unknown);
        return DaemonOutcome {
            config: daemon_defaults(Some(file.to_path_buf()), base),
            notifier_names: Some(BTreeSet::new()),
            watches_at: Some((file.to_path_buf(), Pos::START)),
        };
    };
    let mut cx = Ctx::new(file);
    cx.diags.append(&mut unknown);
    let outcome = daemon(raw, &mut cx);
    cx.finish(out);
    outcome
}

/// `database:` and `database_password:`: a path or a PostgreSQL URL, the
/// password only with a URL.
fn database(raw: &RawDaemon, c: &mut DaemonConfig, cx: &mut Ctx) {
    if let Some(db) = &raw.database {
        match Database::parse(&db.value, cx.dir) {
            Ok(database) => c.database = database,
            Err(message) => cx.err(db.at, "database", message),
        }
    }
    let Some(password) = &raw.database_password else {
        return;
    };
    let secret = cx.secret(password, "database_password");
    match (&mut c.database, secret) {
        (Database::Postgres(url), Some(secret)) => {
            *url = url.clone().with_password(secret.expose());
        }
        (Database::Sqlite(_), _) => cx.err(
            password.at,
            "database_password",
            "only a PostgreSQL database (database: postgres://...) takes a password",
        ),
        (Database::Postgres(_), None) => {}
    }
}

fn daemon(raw: Sp<RawDaemon>, cx: &mut Ctx) -> DaemonOutcome {
    let root_at = raw.at;
    let raw = raw.value;
    let mut c = daemon_defaults(Some(cx.file.to_path_buf()), cx.dir);
    database(&raw, &mut c, cx);
    let watches_at = raw.watches.as_ref().map_or(root_at, |w| w.at);
    if let Some(w) = &raw.watches {
        c.watches_dir = cx.path(&w.value);
    }
    c.listen = raw
        .listen
        .as_ref()
        .and_then(|l| cx.socket_addr(l, "listen"));
    if let Some(server) = &raw.server {
        server_settings(&server.value, &mut c.server, cx);
    }
    if let (Some(_), Some(listen)) = (c.listen, &raw.listen) {
        stylesheets_present(&raw, listen.at, &c.server, cx);
    }
    if let Some(smtp) = &raw.smtp {
        c.smtp = Some(smtp_settings(smtp, cx));
    }
    for (name, n) in raw.notifiers.iter().flatten() {
        if let Some(cfg) = notifier(name, n, raw.smtp.is_some(), cx) {
            c.notifiers.insert(name.clone(), cfg);
        }
    }
    for (name, t) in raw.tokens.iter().flatten() {
        if let Some(token) = token(name, &t.value, cx) {
            c.tokens.insert(name.clone(), token);
        }
    }
    if let Some(f) = &raw.fetch {
        c.fetch = daemon_fetch(&f.value, cx);
    }
    if let Some(l) = &raw.limits {
        c.limits = limits(&l.value, cx);
    }
    if let Some(a) = &raw.alerts {
        c.alerts = alert_settings(&a.value, cx);
    }
    if let Some(r) = &raw.retention {
        c.retention = retention(&r.value, cx);
    }
    if let Some(b) = &raw.browser {
        c.browser = browser_settings(&b.value, cx);
    }
    let fence = c.fence();
    for (name, s) in raw.sessions.iter().flatten() {
        if let Some(session) = session(name, &s.value, &fence, cx) {
            c.sessions.insert(name.clone(), session);
        } else if !valid_id(name) {
            cx.err(
                s.at,
                &join("sessions", name),
                format!("session name `{name}` may only use A-Z a-z 0-9 . _ - (at least one)"),
            );
        }
    }
    if let Some(demo) = &raw.demo {
        c.demo = cx
            .socket_addr(&demo.value.listen, "demo.listen")
            .map(|listen| DemoConfig { listen });
    }
    DaemonOutcome {
        config: c,
        notifier_names: Some(
            raw.notifiers
                .iter()
                .flatten()
                .map(|(k, _)| k.clone())
                .collect(),
        ),
        watches_at: Some((cx.file.to_path_buf(), watches_at)),
    }
}

/// Session `name`: its login form (URL through the fence, fields with
/// their secrets read) and logged-out XPaths. `None` after a diagnostic.
fn session(name: &str, raw: &RawSession, fence: &Fence, cx: &mut Ctx) -> Option<SessionConfig> {
    if !valid_id(name) {
        return None;
    }
    let Some(login) = &raw.login else {
        return Some(SessionConfig::default());
    };
    let path = join(&join("sessions", name), "login");
    let l = &login.value;
    let url = match Url::parse(l.url.value.trim()) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => match fence.check_watch_url(&u) {
            Ok(()) => Some(u),
            Err(e) => {
                cx.err(l.url.at, &join(&path, "url"), e.to_string());
                None
            }
        },
        Ok(u) => {
            cx.err(
                l.url.at,
                &join(&path, "url"),
                format!(
                    "unsupported scheme `{}`: a login is posted over http or https",
                    u.scheme()
                ),
            );
            None
        }
        Err(e) => {
            cx.err(
                l.url.at,
                &join(&path, "url"),
                format!("invalid URL `{}`: {e}", l.url.value),
            );
            None
        }
    };
    let mut fields = Vec::new();
    let mut ok = true;
    let steps = match &l.steps {
        Some(steps) if l.fields.is_some() => {
            cx.err(
                steps.at,
                &join(&path, "steps"),
                "a login has either fields (a form posted) or steps (in the browser), not both",
            );
            ok = false;
            None
        }
        Some(steps) => login_steps(steps, &join(&path, "steps"), cx),
        None => None,
    };
    ok &= l.steps.is_none() || steps.is_some();
    for (field, value) in l.fields.iter().flatten() {
        let at = join(&join(&path, "fields"), field);
        match &value.value {
            RawSecretOrText::Text(text) => fields.push(FormField {
                name: field.clone(),
                value: text.clone(),
                secret: false,
            }),
            RawSecretOrText::Secret(secret) => {
                let raw = Sp {
                    value: secret.clone(),
                    at: value.at,
                };
                match cx.secret(&raw, &at) {
                    Some(s) => fields.push(FormField {
                        name: field.clone(),
                        value: s.expose().to_owned(),
                        secret: true,
                    }),
                    None => ok = false,
                }
            }
        }
    }
    let logged_out = xpath_list(Some(&l.logged_out), &join(&path, "logged_out"), cx);
    if l.logged_out.value.is_empty() {
        cx.err(
            l.logged_out.at,
            &join(&path, "logged_out"),
            "at least one XPath is needed: the login runs only when the page shows one",
        );
        ok = false;
    }
    let url = url?;
    let how = match steps {
        Some(steps) => LoginHow::Steps { url, steps },
        None => LoginHow::Form(LoginForm { url, fields }),
    };
    let login = Login { how, logged_out };
    ok.then_some(SessionConfig { login: Some(login) })
}

/// The steps of a browser login, their secrets read and their XPaths
/// compiled; `None` after a diagnostic.
fn login_steps(raw: &Sp<Vec<Sp<RawStep>>>, path: &str, cx: &mut Ctx) -> Option<Vec<Step>> {
    if raw.value.is_empty() {
        cx.err(raw.at, path, "at least one step is needed");
        return None;
    }
    let mut steps = Vec::new();
    let mut ok = true;
    for (i, step) in raw.value.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let selector = |spec: &str, cx: &mut Ctx| {
            let spec = spec.trim();
            let parsed = WaitFor::parse(spec);
            match &parsed {
                _ if spec.is_empty() => {
                    cx.err(step.at, &at, "an empty selector");
                    None
                }
                WaitFor::XPath(x) => {
                    let x = Sp {
                        value: x.clone(),
                        at: step.at,
                    };
                    cx.xpath(&x, &at).map(|_| parsed.clone())
                }
                WaitFor::Css(_) => Some(parsed.clone()),
            }
        };
        let parsed = match &step.value {
            RawStep::Fill(fill) => {
                let selector = selector(&fill.selector, cx);
                let value = match &fill.value {
                    RawSecretOrText::Text(text) => Some(text.clone()),
                    RawSecretOrText::Secret(secret) => {
                        let raw = Sp {
                            value: secret.clone(),
                            at: step.at,
                        };
                        cx.secret(&raw, &format!("{at}.value"))
                            .map(|s| s.expose().to_owned())
                    }
                };
                selector
                    .zip(value)
                    .map(|(selector, value)| Step::Fill { selector, value })
            }
            RawStep::Click(spec) => selector(spec, cx).map(Step::Click),
            RawStep::WaitFor(spec) => selector(spec, cx).map(Step::WaitFor),
        };
        match parsed {
            Some(step) => steps.push(step),
            None => ok = false,
        }
    }
    ok.then_some(steps)
}

/// The server's default stylesheets must be there when it will serve
/// (`listen_at`: where `listen` is set).
fn stylesheets_present(raw: &RawDaemon, listen_at: Pos, server: &ServerConfig, cx: &mut Ctx) {
    let xslt_at = raw
        .server
        .as_ref()
        .and_then(|s| s.value.xslt.as_ref().map(|x| x.at));
    let (at, path) = match xslt_at {
        Some(at) => (at, "server.xslt"),
        None => (listen_at, "listen"),
    };
    for name in ["html.xsl", "rdf.xsl"] {
        if !server.xslt.join(name).is_file() {
            cx.err(
                at,
                path,
                format!(
                    "no {name} in the stylesheet directory {}: set server.xslt to semclip's xslt/ directory",
                    server.xslt.display()
                ),
            );
        }
    }
}

/// The `smtp` section.
fn smtp_settings(smtp: &Sp<RawSmtp>, cx: &mut Ctx) -> SmtpConfig {
    let s = &smtp.value;
    let security = match s.security.as_ref().map(|s| s.value) {
        None | Some(RawSecurity::Starttls) => SmtpSecurity::StartTls,
        Some(RawSecurity::Tls) => SmtpSecurity::Tls,
        Some(RawSecurity::None) => SmtpSecurity::None,
    };
    let port = s.port.as_ref().map_or(
        match security {
            SmtpSecurity::StartTls => 587,
            SmtpSecurity::Tls => 465,
            SmtpSecurity::None => 25,
        },
        |p| p.value,
    );
    if port == 0
        && let Some(p) = &s.port
    {
        cx.err(p.at, "smtp.port", "must be a port number from 1 to 65535");
    }
    if s.host.value.trim().is_empty() {
        cx.err(s.host.at, "smtp.host", "must not be empty");
    }
    cx.mailbox(&s.from, "smtp.from");
    let password = s
        .password
        .as_ref()
        .and_then(|p| cx.secret(p, "smtp.password"));
    if s.password.is_some() && s.username.is_none() {
        cx.err(smtp.at, "smtp.username", "a password needs a username");
    }
    let timeout = cx.duration_min(
        s.timeout.as_ref(),
        "smtp.timeout",
        Duration::from_secs(30),
        Duration::from_millis(1),
    );
    SmtpConfig {
        host: s.host.value.trim().to_owned(),
        port,
        security,
        username: s.username.as_ref().map(|u| u.value.clone()),
        password,
        from: s.from.value.clone(),
        timeout,
    }
}

/// Notifier `name` (`has_smtp`: whether the daemon file has an `smtp`
/// section); `None` after reporting its problems, when it cannot be built.
fn notifier(
    name: &str,
    n: &Sp<RawNotifier>,
    has_smtp: bool,
    cx: &mut Ctx,
) -> Option<NotifierConfig> {
    let path = join("notifiers", name);
    if !valid_id(name) {
        cx.err(
            n.at,
            &path,
            format!("notifier name `{name}` may only use A-Z a-z 0-9 . _ -"),
        );
    }
    match &n.value {
        RawNotifier::Email(e) => Some(email_notifier(e, &path, has_smtp, cx)),
        RawNotifier::Webhook(w) => webhook_notifier(w, &path, cx).map(NotifierConfig::Webhook),
        RawNotifier::File(f) => {
            if f.value.path.value.trim().is_empty() {
                cx.err(
                    f.value.path.at,
                    &join(&path, "file.path"),
                    "must not be empty",
                );
            }
            Some(NotifierConfig::File {
                path: cx.path(&f.value.path.value),
            })
        }
        channel => channel_config(channel, &path, cx).map(NotifierConfig::Channel),
    }
}

/// An email notifier (`path` is `notifiers.NAME`).
fn email_notifier(e: &Sp<RawEmail>, path: &str, has_smtp: bool, cx: &mut Ctx) -> NotifierConfig {
    let p = join(path, "email");
    if !has_smtp {
        cx.err(
            e.at,
            &p,
            "email notifiers need an `smtp` section in the daemon file",
        );
    }
    let to_path = join(&p, "to");
    if e.value.to.value.is_empty() {
        cx.err(e.value.to.at, &to_path, "give at least one mailbox");
    }
    for (i, m) in e.value.to.value.iter().enumerate() {
        cx.mailbox(m, &format!("{to_path}[{i}]"));
    }
    NotifierConfig::Email {
        to: e.value.to.value.iter().map(|m| m.value.clone()).collect(),
    }
}

/// A webhook notifier (`path` is `notifiers.NAME`); `None` without a
/// valid URL, after every problem is reported.
fn webhook_notifier(w: &Sp<RawWebhook>, path: &str, cx: &mut Ctx) -> Option<WebhookConfig> {
    let p = join(path, "webhook");
    let url = match Url::parse(w.value.url.value.trim()) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => Some(u),
        Ok(u) => {
            cx.err(
                w.value.url.at,
                &join(&p, "url"),
                format!("unsupported scheme `{}`: use http or https", u.scheme()),
            );
            None
        }
        Err(e) => {
            cx.err(
                w.value.url.at,
                &join(&p, "url"),
                format!("invalid URL `{}`: {e}", w.value.url.value),
            );
            None
        }
    };
    let secret = w
        .value
        .secret
        .as_ref()
        .and_then(|s| cx.secret(s, &join(&p, "secret")));
    let timeout = cx.duration_min(
        w.value.timeout.as_ref(),
        &join(&p, "timeout"),
        Duration::from_secs(10),
        Duration::from_millis(1),
    );
    let headers = cx.headers(w.value.headers.as_ref(), &join(&p, "headers"));
    Some(WebhookConfig {
        url: url?,
        secret,
        timeout,
        headers,
    })
}

/// API token `name`; `None` when its secret cannot be read.
fn token(name: &str, t: &RawToken, cx: &mut Ctx) -> Option<TokenConfig> {
    let path = join("tokens", name);
    let secret = cx.secret(&t.secret, &join(&path, "secret"));
    let mut scopes: Vec<Scope> = t
        .scopes
        .value
        .iter()
        .map(|s| match s {
            RawScope::Read => Scope::Read,
            RawScope::Admin => Scope::Admin,
        })
        .collect();
    scopes.sort();
    scopes.dedup();
    if scopes.is_empty() {
        cx.err(
            t.scopes.at,
            &join(&path, "scopes"),
            "give at least one scope (read, admin)",
        );
    }
    Some(TokenConfig {
        secret: secret?,
        scopes,
    })
}

/// The daemon file's `fetch` section: defaults for every watch, and the
/// fence.
fn daemon_fetch(f: &RawFetchDefaults, cx: &mut Ctx) -> FetchDefaults {
    let mut fetch = fetch_settings(
        FetchFields {
            max_body: f.max_body.as_ref(),
            connect_timeout: f.connect_timeout.as_ref(),
            timeout: f.timeout.as_ref(),
            max_redirects: f.max_redirects.as_ref(),
            retries: f.retries.as_ref(),
            proxy: f.proxy.as_ref(),
        },
        &FetchDefaults::default(),
        cx,
    );
    fence_settings(f, &mut fetch, cx);
    fetch
}

/// The `limits` section over the defaults.
fn limits(l: &RawLimits, cx: &mut Ctx) -> Limits {
    let d = Limits::default();
    Limits {
        concurrency: cx.at_least_one(l.concurrency.as_ref(), "limits.concurrency", d.concurrency),
        per_host: cx.at_least_one(l.per_host.as_ref(), "limits.per_host", d.per_host),
        host_spacing: cx.duration(
            l.host_spacing.as_ref(),
            "limits.host_spacing",
            d.host_spacing,
        ),
        page: match &l.page {
            Some(p) => page_limits(&p.value, cx),
            None => d.page,
        },
    }
}

/// The `alerts` section over the defaults.
fn alert_settings(a: &RawAlerts, cx: &mut Ctx) -> AlertSettings {
    let d = AlertSettings::default();
    AlertSettings {
        failures_before_alert: cx.at_least_one(
            a.failures_before_alert.as_ref(),
            "alerts.failures_before_alert",
            d.failures_before_alert,
        ),
        give_up_after: cx.duration_min(
            a.give_up_after.as_ref(),
            "alerts.give_up_after",
            d.give_up_after,
            Duration::from_millis(1),
        ),
    }
}

/// The `retention` section over the defaults.
fn retention(r: &RawRetention, cx: &mut Ctx) -> Retention {
    let d = Retention::default();
    Retention {
        keep_versions: cx.at_least_one(
            r.keep_versions.as_ref(),
            "retention.keep_versions",
            d.keep_versions,
        ),
        keep_days: cx.at_least_one(r.keep_days.as_ref(), "retention.keep_days", d.keep_days),
    }
}

/// A watch id, notifier name: `[A-Za-z0-9._-]+`.
/// The `server` section over its defaults.
/// The default request timeout of chat and push notifiers.
const CHANNEL_TIMEOUT: Duration = Duration::from_secs(10);

/// A chat or push notifier (`path` is `notifiers.NAME`); `None` after
/// reporting its problems.
fn channel_config(raw: &RawNotifier, path: &str, cx: &mut Ctx) -> Option<ChannelConfig> {
    let timeout = |t: Option<&Sp<String>>, p: &str, cx: &mut Ctx| {
        cx.duration_min(
            t,
            &join(p, "timeout"),
            CHANNEL_TIMEOUT,
            Duration::from_millis(1),
        )
    };
    let (channel, timeout) = match raw {
        RawNotifier::Email(_) | RawNotifier::Webhook(_) | RawNotifier::File(_) => return None,
        RawNotifier::Slack(h) | RawNotifier::Teams(h) | RawNotifier::Discord(h) => {
            let kind = match raw {
                RawNotifier::Slack(_) => "slack",
                RawNotifier::Teams(_) => "teams",
                _ => "discord",
            };
            let p = join(path, kind);
            let channel = hook_url(&h.value, &p, cx).map(|url| match raw {
                RawNotifier::Slack(_) => Channel::Slack { url },
                RawNotifier::Teams(_) => Channel::Teams { url },
                _ => Channel::Discord { url },
            });
            (channel, timeout(h.value.timeout.as_ref(), &p, cx))
        }
        RawNotifier::Telegram(t) => {
            let p = join(path, "telegram");
            let t = &t.value;
            let token = cx.secret(&t.token, &join(&p, "token"));
            let api_url = match &t.api_url {
                Some(u) => cx.base_url(u, &join(&p, "api_url")),
                None => Url::parse(apprise::TELEGRAM_API).ok(),
            };
            let chat_id = t.chat_id.value.0.trim().to_owned();
            let numeric = chat_id
                .strip_prefix('-')
                .unwrap_or(&chat_id)
                .chars()
                .all(|c| c.is_ascii_digit());
            let ok_chat = !chat_id.is_empty()
                && (numeric && chat_id != "-" || chat_id.starts_with('@') && chat_id.len() > 1);
            if !ok_chat {
                cx.err(
                    t.chat_id.at,
                    &join(&p, "chat_id"),
                    "a chat id is a number (negative for groups and channels) or @channelname",
                );
            }
            let channel = match (token, api_url) {
                (Some(token), Some(api_url)) if ok_chat => Some(Channel::Telegram {
                    api_url,
                    token,
                    chat_id,
                }),
                _ => None,
            };
            (channel, timeout(t.timeout.as_ref(), &p, cx))
        }
        RawNotifier::Matrix(m) => {
            let p = join(path, "matrix");
            let m = &m.value;
            let server = cx.base_url(&m.server, &join(&p, "server"));
            let token = cx.secret(&m.token, &join(&p, "token"));
            let room = m.room.value.trim();
            let ok_room = (room.starts_with('!') || room.starts_with('#'))
                && room.find(':').is_some_and(|i| i > 1 && i + 1 < room.len());
            if !ok_room {
                cx.err(
                    m.room.at,
                    &join(&p, "room"),
                    "a room is its id (!abc:example.org) or an alias (#ops:example.org)",
                );
            }
            let channel = match (server, token) {
                (Some(server), Some(token)) if ok_room => Some(Channel::Matrix {
                    server,
                    room: room.to_owned(),
                    token,
                }),
                _ => None,
            };
            (channel, timeout(m.timeout.as_ref(), &p, cx))
        }
        RawNotifier::Ntfy(n) => {
            let p = join(path, "ntfy");
            let n = &n.value;
            let server = match &n.server {
                Some(u) => cx.base_url(u, &join(&p, "server")),
                None => Url::parse(apprise::NTFY_SH).ok(),
            };
            let topic = n.topic.value.trim();
            let ok_topic = apprise::valid_ntfy_topic(topic);
            if !ok_topic {
                cx.err(
                    n.topic.at,
                    &join(&p, "topic"),
                    format!("a topic {}", apprise::NTFY_TOPIC_RULE),
                );
            }
            // `Err` after a reported problem, so the notifier is left out.
            let auth = match (&n.token, &n.username, &n.password) {
                (None, None, None) => Ok(None),
                (Some(t), None, None) => cx
                    .secret(t, &join(&p, "token"))
                    .map(|s| Some(NtfyAuth::Token(s)))
                    .ok_or(()),
                (None, Some(user), Some(password)) => cx
                    .secret(password, &join(&p, "password"))
                    .map(|password| {
                        Some(NtfyAuth::Basic {
                            username: user.value.clone(),
                            password,
                        })
                    })
                    .ok_or(()),
                (Some(t), _, _) => {
                    cx.err(
                        t.at,
                        &join(&p, "token"),
                        "give either a token or a username and password, not both",
                    );
                    Err(())
                }
                (None, Some(u), None) => {
                    cx.err(u.at, &join(&p, "username"), "a username needs a password");
                    Err(())
                }
                (None, None, Some(s)) => {
                    cx.err(s.at, &join(&p, "password"), "a password needs a username");
                    Err(())
                }
            };
            let priority = cx.priority(n.priority.as_ref(), &join(&p, "priority"), 1, 5);
            let tags: Vec<String> = n
                .tags
                .iter()
                .flat_map(|t| t.value.iter())
                .map(|t| t.value.trim().to_owned())
                .filter(|t| !t.is_empty())
                .collect();
            let channel = match (server, auth, priority) {
                (Some(server), Ok(auth), Some(priority)) if ok_topic => Some(Channel::Ntfy {
                    server,
                    topic: topic.to_owned(),
                    auth,
                    priority,
                    tags,
                }),
                _ => None,
            };
            (channel, timeout(n.timeout.as_ref(), &p, cx))
        }
        RawNotifier::Gotify(g) => {
            let p = join(path, "gotify");
            let g = &g.value;
            let server = cx.base_url(&g.server, &join(&p, "server"));
            let token = cx.secret(&g.token, &join(&p, "token"));
            let priority = cx.priority(g.priority.as_ref(), &join(&p, "priority"), 0, 10);
            let channel = match (server, token, priority) {
                (Some(server), Some(token), Some(priority)) => Some(Channel::Gotify {
                    server,
                    token,
                    priority,
                }),
                _ => None,
            };
            (channel, timeout(g.timeout.as_ref(), &p, cx))
        }
        RawNotifier::Url(u) => {
            let p = join(path, "url");
            let text = match &u.value {
                RawSecretOrText::Text(text) => Some(text.clone()),
                RawSecretOrText::Secret(s) => cx
                    .secret(
                        &Sp {
                            value: s.clone(),
                            at: u.at,
                        },
                        &p,
                    )
                    .map(|s| s.expose().to_owned()),
            };
            let channel = text.and_then(|text| match apprise::parse(&text) {
                Ok(channel)
                    if channel.has_credential()
                        && matches!(u.value, RawSecretOrText::Text(_)) =>
                {
                    cx.err(
                        u.at,
                        &p,
                        format!(
                            "this {} URL carries a credential: write it as {{env: NAME}} or {{file: PATH}}",
                            channel.kind()
                        ),
                    );
                    None
                }
                Ok(channel) => Some(channel),
                Err(message) => {
                    cx.err(u.at, &p, message);
                    None
                }
            });
            (channel, CHANNEL_TIMEOUT)
        }
    };
    Some(ChannelConfig {
        channel: channel?,
        timeout,
    })
}

/// The webhook URL of a Slack, Teams or Discord notifier, read from its
/// secret. Messages never show the URL: it is the credential.
fn hook_url(h: &RawHookChannel, path: &str, cx: &mut Ctx) -> Option<SecretUrl> {
    let p = join(path, "url");
    let secret = cx.secret(&h.url, &p)?;
    match Url::parse(secret.expose().trim()) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Some(SecretUrl(u)),
        Ok(u) => {
            cx.err(
                h.url.at,
                &p,
                format!(
                    "unsupported scheme `{}`: the webhook URL is http or https",
                    u.scheme()
                ),
            );
            None
        }
        Err(e) => {
            cx.err(h.url.at, &p, format!("the secret is not a URL: {e}"));
            None
        }
    }
}

fn server_settings(raw: &RawServer, c: &mut ServerConfig, cx: &mut Ctx) {
    if let Some(u) = &raw.public_url {
        c.public_url = cx.base_url(u, "server.public_url");
    }
    if let Some(x) = &raw.xslt {
        c.xslt = cx.path(&x.value);
    }
    for (i, o) in raw
        .cors_origins
        .iter()
        .flat_map(|v| v.value.iter())
        .enumerate()
    {
        let origin = o.value.trim();
        let ok = origin == "*"
            || Url::parse(origin).is_ok_and(|u| {
                matches!(u.scheme(), "http" | "https")
                    && u.host().is_some()
                    && u.path() == "/"
                    && !origin.ends_with('/')
                    && u.query().is_none()
                    && u.fragment().is_none()
            });
        if ok {
            c.cors_origins.push(origin.to_owned());
        } else {
            cx.err(
                o.at,
                &format!("server.cors_origins[{i}]"),
                format!(
                    "`{origin}` is not an origin: write SCHEME://HOST[:PORT] (no path), or \"*\""
                ),
            );
        }
    }
    if let Some(list) = &raw.frame_ancestors {
        c.frame_ancestors.clear();
        for (i, o) in list.value.iter().enumerate() {
            let source = o.value.trim();
            if frame_ancestor(source) {
                c.frame_ancestors.push(source.to_owned());
            } else {
                cx.err(
                    o.at,
                    &format!("server.frame_ancestors[{i}]"),
                    format!(
                        "`{source}` is not a frame ancestor: write SCHEME://HOST[:PORT] \
                         (no path), \"'self'\" or \"*\""
                    ),
                );
            }
        }
    }
    c.max_in_flight = cx.at_least_one(
        raw.max_in_flight.as_ref(),
        "server.max_in_flight",
        c.max_in_flight,
    );
    c.request_timeout = cx.duration_min(
        raw.request_timeout.as_ref(),
        "server.request_timeout",
        c.request_timeout,
        Duration::from_millis(1),
    );
    if let Some(cc) = &raw.cache_control {
        c.cache_control = cx.header_value(cc, "server.cache_control");
    }
    c.header_timeout = cx.duration_min(
        raw.header_timeout.as_ref(),
        "server.header_timeout",
        c.header_timeout,
        Duration::from_millis(1),
    );
    c.max_connections = cx.at_least_one(
        raw.max_connections.as_ref(),
        "server.max_connections",
        c.max_connections,
    );
    c.max_client_connections = cx.at_least_one(
        raw.max_client_connections.as_ref(),
        "server.max_client_connections",
        c.max_client_connections,
    );
    c.render_threads = cx.at_least_one(
        raw.render_threads.as_ref(),
        "server.render_threads",
        c.render_threads,
    );
}

/// An extract clip's extraction, checked: region needs keywords, the
/// others take none.
fn extract_spec(
    e: &Sp<RawExtract>,
    keywords: Option<&Sp<Vec<Sp<String>>>>,
    path: &str,
    cx: &mut Ctx<'_>,
) -> Option<ExtractSpec> {
    match (e.value, keywords) {
        (RawExtract::Region, Some(k)) => {
            let words: Vec<String> = k
                .value
                .iter()
                .map(|w| w.value.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect();
            if words.is_empty() || words.iter().any(String::is_empty) {
                cx.err(
                    k.at,
                    &join(path, "keywords"),
                    "give one to three non-empty keywords, each from a different record",
                );
                return None;
            }
            Some(ExtractSpec::Region(words))
        }
        (RawExtract::Region, None) => {
            cx.err(
                e.at,
                &join(path, "keywords"),
                "`extract: region` needs keywords: texts of the wanted data, each from a different record",
            );
            None
        }
        (_, Some(k)) => {
            cx.err(
                k.at,
                &join(path, "keywords"),
                "keywords belong to `extract: region` clips",
            );
            None
        }
        (RawExtract::Article, None) => Some(ExtractSpec::Article),
        (RawExtract::Records, None) => Some(ExtractSpec::Records),
    }
}

/// A clip name: a URL path segment.
fn valid_clip_name(s: &str) -> bool {
    valid_id(s)
}

/// A stylesheet name: a plain file name ending in `.xsl`.
fn valid_stylesheet(s: &str) -> bool {
    s.len() > 4 && s.ends_with(".xsl") && valid_id(s) && !s.starts_with('.')
}

/// A CSP `frame-ancestors` source semclip accepts: `'self'`, `*`, or an
/// origin (`https://portal.example.org`, `https://*.example.org`), so that
/// nothing written there can end the directive or add another.
fn frame_ancestor(source: &str) -> bool {
    if source == "'self'" || source == "*" {
        return true;
    }
    let Some((scheme, host)) = source.split_once("://") else {
        return false;
    };
    matches!(scheme, "http" | "https")
        && !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '*' | '[' | ']'))
}

fn valid_id(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Loads every watch file directly in `dir`, sorted by id.
pub(crate) fn load_watch_dir(
    dir: &Path,
    daemon: &DaemonConfig,
    known: Option<&BTreeSet<String>>,
    dir_at: Option<(PathBuf, Pos)>,
    out: &mut Vec<Diagnostic>,
) -> Vec<Watch> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            let message = if e.kind() == std::io::ErrorKind::NotFound {
                format!("the watches directory {} does not exist", dir.display())
            } else {
                format!(
                    "cannot read the watches directory {}: {}",
                    dir.display(),
                    io_reason(&e)
                )
            };
            let (file, at) = dir_at.unwrap_or_else(|| (dir.to_path_buf(), Pos::default()));
            out.push(Diagnostic {
                file,
                line: at.line,
                column: at.column,
                path: "watches".to_owned(),
                message,
            });
            return Vec::new();
        }
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml") && p.is_file())
        .collect();
    files.sort();
    let mut watches: Vec<Watch> = Vec::new();
    let mut ids: BTreeMap<String, PathBuf> = BTreeMap::new();
    let fence = daemon.fence();
    for file in &files {
        let Some((watch, id_at)) = load_watch_file(file, daemon, &fence, known, out) else {
            continue;
        };
        if let Some(first) = ids.get(&watch.id) {
            out.push(Diagnostic {
                file: file.clone(),
                line: id_at.line,
                column: id_at.column,
                path: "id".to_owned(),
                message: format!(
                    "watch id `{}` is already used by {}",
                    watch.id,
                    first.display()
                ),
            });
            continue;
        }
        ids.insert(watch.id.clone(), file.clone());
        watches.push(watch);
    }
    watches.sort_by(|a, b| a.id.cmp(&b.id));
    watches
}

/// Loads one watch file: the watch and where its id was set, or `None` after
/// pushing its diagnostics.
fn load_watch_file(
    file: &Path,
    daemon: &DaemonConfig,
    fence: &Fence,
    known: Option<&BTreeSet<String>>,
    out: &mut Vec<Diagnostic>,
) -> Option<(Watch, Pos)> {
    let text = match read_text(file) {
        Ok(t) => t,
        Err(d) => {
            out.push(d);
            return None;
        }
    };
    // Unknown keys are reported and skipped, so the rest is still checked.
    let mut unknown = Vec::new();
    let raw = match lenient::from_str::<Option<Sp<RawWatch>>>(file, &text, &mut unknown) {
        Ok(Some(r)) => r,
        Ok(None) => {
            out.append(&mut unknown);
            out.push(Diagnostic {
                file: file.to_path_buf(),
                line: 1,
                column: 1,
                path: DOCUMENT.to_owned(),
                message: "the watch file is empty (it needs at least url and schedule)".to_owned(),
            });
            return None;
        }
        Err(()) => {
            unknown.sort_by_key(|d| (d.line, d.column));
            out.append(&mut unknown);
            return None;
        }
    };
    let mut cx = Ctx::new(file);
    cx.diags.append(&mut unknown);
    let watch = watch(raw, daemon, fence, known, &mut cx);
    let ok = cx.diags.is_empty();
    cx.finish(out);
    if ok { watch } else { None }
}

fn watch(
    raw: Sp<RawWatch>,
    daemon: &DaemonConfig,
    fence: &Fence,
    known: Option<&BTreeSet<String>>,
    cx: &mut Ctx,
) -> Option<(Watch, Pos)> {
    let root_at = raw.at;
    let raw = raw.value;
    let (id, id_at) = watch_id(raw.id.as_ref(), root_at, cx);
    let url = page_url(&raw.url, fence, public_clip(&raw), cx);
    let schedule = schedule(&raw.schedule, cx);
    let fetch = watch_fetch(raw.fetch.as_ref().map(|f| &f.value), &daemon.fetch, cx);
    if let (Some(f), Some(raw_fetch), Some(url)) = (&fetch, &raw.fetch, &url)
        && f.render.is_some()
        && !matches!(url.scheme(), "http" | "https")
    {
        cx.err(
            raw_fetch.at,
            "fetch.render",
            "`render: browser` needs an http or https URL",
        );
    }
    let ignore = xpath_list(raw.ignore.as_ref(), "ignore", cx);
    let blocked = xpath_list(raw.blocked.as_ref(), "blocked", cx);
    let mut clips = BTreeMap::new();
    for (name, c) in raw.clips.iter().flatten() {
        clips.insert(name.clone(), clip(name, c, daemon, cx));
    }
    let thresholds = thresholds(raw.thresholds.as_ref(), known, cx);
    let on_change = raw
        .on_change
        .as_ref()
        .map(|oc| on_change(&oc.value, known, cx));
    let failures = failure_policy(raw.failures.as_ref(), daemon, known, cx);
    let data_only = data_only(&raw, &clips, cx);
    let layout = match &raw.layout {
        None => Layout::default(),
        Some(l) => layout_settings(&l.value, known, cx),
    };
    let session = raw.session.as_ref().map(|s| {
        // Checked against the daemon file's sessions when it parsed, as
        // notifiers are.
        if known.is_some() && !daemon.sessions.contains_key(&s.value) {
            let declared: Vec<&str> = daemon.sessions.keys().map(String::as_str).collect();
            let hint = if declared.is_empty() {
                "declare it under `sessions` in the daemon file".to_owned()
            } else {
                format!("declared sessions: {}", declared.join(", "))
            };
            cx.err(
                s.at,
                "session",
                format!("unknown session `{}` ({hint})", s.value),
            );
        }
        s.value.clone()
    });
    Some((
        Watch {
            id,
            file: cx.file.to_path_buf(),
            url: url?,
            title: raw.title.as_ref().map(|t| t.value.clone()),
            schedule: schedule?,
            fetch: fetch?,
            ignore,
            blocked,
            clips,
            thresholds: thresholds?,
            on_change,
            failures,
            data_only,
            layout,
            session,
            keys: table_keys(raw.keys.as_ref(), cx),
        },
        id_at,
    ))
}

/// The watch's `keys:`: every entry names a table and at least one column.
fn table_keys(raw: Option<&Sp<Vec<Sp<RawTableKey>>>>, cx: &mut Ctx) -> Vec<TableKey> {
    let mut out = Vec::new();
    for k in raw.map(|l| l.value.as_slice()).unwrap_or_default() {
        let columns = match &k.value.key.value {
            RawKeyColumns::One(c) => vec![c.clone()],
            RawKeyColumns::Many(cs) => cs.clone(),
        };
        if k.value.table.value.trim().is_empty() {
            cx.err(
                k.value.table.at,
                "keys.table",
                "a table label is needed".to_owned(),
            );
            continue;
        }
        if columns.is_empty() || columns.iter().any(|c| c.trim().is_empty()) {
            cx.err(
                k.value.key.at,
                "keys.key",
                "name a column header, or a list of them".to_owned(),
            );
            continue;
        }
        out.push(TableKey {
            table: k.value.table.value.clone(),
            columns,
        });
    }
    out
}

/// The watch's id and where it is given: `id`, or the file's stem.
fn watch_id(id: Option<&Sp<String>>, root_at: Pos, cx: &mut Ctx) -> (String, Pos) {
    if let Some(id) = id {
        if !valid_id(&id.value) {
            cx.err(
                id.at,
                "id",
                format!(
                    "watch id `{}` may only use A-Z a-z 0-9 . _ - (at least one)",
                    id.value
                ),
            );
        }
        return (id.value.clone(), id.at);
    }
    let stem = cx
        .file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !valid_id(&stem) {
        cx.err(
            root_at,
            "id",
            format!(
                "the file name gives the watch id `{stem}`, which may only use A-Z a-z 0-9 . _ -: rename the file or set `id`"
            ),
        );
    }
    (stem, root_at)
}

/// The XPaths of the list `key` (`ignore`, `blocked`) that compile.
fn xpath_list(list: Option<&Sp<Vec<Sp<String>>>>, key: &str, cx: &mut Ctx) -> Vec<String> {
    let mut out = Vec::new();
    for (i, x) in list.iter().flat_map(|l| l.value.iter()).enumerate() {
        if cx.xpath(x, &format!("{key}[{i}]")).is_some() {
            out.push(x.value.clone());
        }
    }
    out
}

/// Clip `name`: what it selects (an XPath, or an extractor and the XPath
/// of what it extracts), its stylesheet and cache header.
fn clip(name: &str, clip: &Sp<RawClip>, daemon: &DaemonConfig, cx: &mut Ctx) -> Clip {
    let path = join("clips", name);
    if !valid_clip_name(name) {
        cx.err(
            clip.at,
            &path,
            format!("clip name `{name}` may only use A-Z a-z 0-9 . _ -"),
        );
    }
    let (xpath, extract) = match (&clip.value.xpath, &clip.value.extract) {
        (Some(x), None) => {
            cx.xpath(x, &join(&path, "xpath"));
            if let Some(k) = &clip.value.keywords {
                cx.err(
                    k.at,
                    &join(&path, "keywords"),
                    "keywords belong to `extract: region` clips",
                );
            }
            (x.value.clone(), None)
        }
        (None, Some(e)) => {
            let spec = extract_spec(e, clip.value.keywords.as_ref(), &path, cx);
            (
                format!("/page/*[@clip={}]", crate::hierarchy::xpath_literal(name)),
                spec,
            )
        }
        (Some(_), Some(e)) => {
            cx.err(e.at, &path, "give either xpath or extract, not both");
            (String::new(), None)
        }
        (None, None) => {
            cx.err(
                clip.at,
                &path,
                "give xpath (what to select) or extract (article, records or region)",
            );
            (String::new(), None)
        }
    };
    let stylesheet = clip
        .value
        .stylesheet
        .as_ref()
        .and_then(|s| clip_stylesheet(s, &path, daemon, cx));
    let cache_control = clip
        .value
        .cache_control
        .as_ref()
        .and_then(|cc| cx.header_value(cc, &join(&path, "cache_control")));
    Clip {
        xpath,
        extract,
        description: clip.value.description.as_ref().map(|d| d.value.clone()),
        public: clip.value.public.as_ref().is_some_and(|p| p.value),
        stylesheet,
        cache_control,
    }
}

/// A clip's stylesheet: a file name in the server's stylesheet directory.
fn clip_stylesheet(
    s: &Sp<String>,
    path: &str,
    daemon: &DaemonConfig,
    cx: &mut Ctx,
) -> Option<String> {
    let name = s.value.trim();
    if !valid_stylesheet(name) {
        cx.err(
            s.at,
            &join(path, "stylesheet"),
            format!("`{name}` is not a stylesheet name: a file name ending in .xsl (A-Z a-z 0-9 . _ -), no directories"),
        );
        return None;
    }
    if !daemon.server.xslt.join(name).is_file() {
        cx.err(
            s.at,
            &join(path, "stylesheet"),
            format!("no stylesheet `{name}` in {}", daemon.server.xslt.display()),
        );
        return None;
    }
    Some(name.to_owned())
}

/// The thresholds, in file order, names unique; `None` when one is invalid
/// (after every problem is reported).
fn thresholds(
    list: Option<&Sp<Vec<Sp<RawThreshold>>>>,
    known: Option<&BTreeSet<String>>,
    cx: &mut Ctx,
) -> Option<Vec<Threshold>> {
    let mut thresholds = Vec::new();
    let mut names: BTreeSet<String> = BTreeSet::new();
    for (i, t) in list.iter().flat_map(|l| l.value.iter()).enumerate() {
        let path = format!("thresholds[{i}]");
        if !names.insert(t.value.name.value.clone()) {
            cx.err(
                t.value.name.at,
                &join(&path, "name"),
                format!(
                    "threshold name `{}` is used twice in this watch",
                    t.value.name.value
                ),
            );
        }
        thresholds.push(threshold(t, &path, known, cx));
    }
    thresholds.into_iter().collect()
}

/// The `on_change` section.
fn on_change(oc: &RawOnChange, known: Option<&BTreeSet<String>>, cx: &mut Ctx) -> OnChange {
    if oc.notify.value.is_empty() {
        cx.err(
            oc.notify.at,
            "on_change.notify",
            "name at least one notifier",
        );
    }
    OnChange {
        notify: cx.notifiers(&oc.notify, "on_change.notify", known),
        digest: oc.digest.as_ref().map(|d| {
            cx.duration_min(
                Some(d),
                "on_change.digest",
                Duration::from_secs(3600),
                Duration::from_secs(1),
            )
        }),
    }
}

/// The `failures` section over the daemon file's `alerts` defaults.
fn failure_policy(
    failures: Option<&Sp<RawFailures>>,
    daemon: &DaemonConfig,
    known: Option<&BTreeSet<String>>,
    cx: &mut Ctx,
) -> FailurePolicy {
    let Some(f) = failures else {
        return FailurePolicy {
            alert_after: daemon.alerts.failures_before_alert,
            notify: Vec::new(),
        };
    };
    FailurePolicy {
        alert_after: cx.at_least_one(
            f.value.alert_after.as_ref(),
            "failures.alert_after",
            daemon.alerts.failures_before_alert,
        ),
        notify: f
            .value
            .notify
            .as_ref()
            .map(|n| cx.notifiers(n, "failures.notify", known))
            .unwrap_or_default(),
    }
}

/// Whether only the page's data is compared (`monitor: data`), which needs
/// something saying where the data is.
fn data_only(raw: &RawWatch, clips: &BTreeMap<String, Clip>, cx: &mut Ctx) -> bool {
    let data_only = matches!(
        raw.monitor.as_ref().map(|m| m.value),
        Some(RawMonitor::Data)
    );
    if data_only
        && !clips.values().any(|c: &Clip| c.extract.is_some())
        && raw
            .layout
            .as_ref()
            .and_then(|l| l.value.template.as_ref())
            .is_none()
        && let Some(m) = &raw.monitor
    {
        cx.err(
            m.at,
            "monitor",
            "`monitor: data` needs an extract clip or layout.template to say where the data is",
        );
    }
    data_only
}

/// The `layout` section.
fn layout_settings(l: &RawLayout, known: Option<&BTreeSet<String>>, cx: &mut Ctx) -> Layout {
    Layout {
        template: l.template.as_ref().and_then(|t| {
            if valid_id(&t.value) {
                Some(t.value.clone())
            } else {
                cx.err(
                    t.at,
                    "layout.template",
                    format!(
                        "`{}` is not a template set name (A-Z a-z 0-9 . _ -)",
                        t.value
                    ),
                );
                None
            }
        }),
        max_drift: match &l.max_drift {
            None => DEFAULT_MAX_DRIFT,
            Some(d) if d.value > 0.0 && d.value <= 1.0 => d.value,
            Some(d) => {
                cx.err(d.at, "layout.max_drift", "a drift in (0, 1]");
                DEFAULT_MAX_DRIFT
            }
        },
        notify: l
            .notify
            .as_ref()
            .map(|n| cx.notifiers(n, "layout.notify", known))
            .unwrap_or_default(),
    }
}

/// The name of a public clip of `raw`, if it has one.
fn public_clip(raw: &RawWatch) -> Option<&str> {
    raw.clips
        .iter()
        .flatten()
        .find(|(_, c)| c.value.public.as_ref().is_some_and(|p| p.value))
        .map(|(name, _)| name.as_str())
}

/// The watch's URL, checked, and checked against the fence; `public` names
/// a public clip, which makes a refused file's exposure plain.
fn page_url(v: &Sp<String>, fence: &Fence, public: Option<&str>, cx: &mut Ctx) -> Option<Url> {
    let url = match Url::parse(v.value.trim()) {
        Ok(u) => u,
        Err(e) => {
            let hint = if e == url::ParseError::RelativeUrlWithoutBase {
                " (write an absolute URL: https://..., or file:///absolute/path)"
            } else {
                ""
            };
            cx.err(v.at, "url", format!("invalid URL `{}`: {e}{hint}", v.value));
            return None;
        }
    };
    match url.scheme() {
        "http" | "https" => {
            if let Err(e) = fence.check_watch_url(&url) {
                cx.err(v.at, "url", e.to_string());
                return None;
            }
            Some(url)
        }
        "file" => {
            let Ok(path) = url.to_file_path() else {
                cx.err(
                    v.at,
                    "url",
                    format!(
                        "`{}` is not a local file URL: write file:///absolute/path",
                        v.value
                    ),
                );
                return None;
            };
            if let Err(e) = fence.check_file_url(&path) {
                let exposure = match public {
                    Some(clip) => format!(" (clip `{clip}` would serve it to anyone)"),
                    None => String::new(),
                };
                cx.err(v.at, "url", format!("{e}{exposure}"));
                return None;
            }
            Some(url)
        }
        other => {
            cx.err(
                v.at,
                "url",
                format!("unsupported scheme `{other}`: use http, https or file"),
            );
            None
        }
    }
}

fn schedule(s: &Sp<RawSchedule>, cx: &mut Ctx) -> Option<Schedule> {
    let r = &s.value;
    let jitter = cx.duration(r.jitter.as_ref(), "schedule.jitter", Duration::ZERO);
    match (&r.cron, &r.every) {
        (Some(_), Some(every)) => {
            cx.err(
                every.at,
                "schedule.every",
                "give exactly one of cron and every",
            );
            None
        }
        (None, None) => {
            cx.err(s.at, "schedule", "give exactly one of cron and every");
            None
        }
        (Some(expr), None) => {
            let cron = match parse_cron(&expr.value) {
                Ok(c) => Some(c),
                Err(message) => {
                    cx.err(expr.at, "schedule.cron", message);
                    None
                }
            };
            let tz = match &r.timezone {
                None => Some(chrono_tz::UTC),
                Some(tz) => match tz.value.trim().parse::<chrono_tz::Tz>() {
                    Ok(t) => Some(t),
                    Err(_) => {
                        cx.err(
                            tz.at,
                            "schedule.timezone",
                            format!(
                                "unknown time zone `{}`: write an IANA name like Europe/Moscow or UTC",
                                tz.value
                            ),
                        );
                        None
                    }
                },
            };
            Some(Schedule::Cron {
                expr: expr.value.trim().to_owned(),
                cron: cron?,
                tz: tz?,
                jitter,
            })
        }
        (None, Some(every)) => {
            if let Some(tz) = &r.timezone {
                cx.err(
                    tz.at,
                    "schedule.timezone",
                    "a time zone applies to cron schedules only",
                );
            }
            let d = cx.duration(Some(every), "schedule.every", Duration::ZERO);
            if d < Duration::from_secs(1) {
                if cx.diags.last().is_none_or(|l| l.path != "schedule.every") {
                    cx.err(every.at, "schedule.every", "must be at least 1s");
                }
                return None;
            }
            Some(Schedule::Every { every: d, jitter })
        }
    }
}

/// The fetch settings a daemon file's `fetch` and a watch file's share.
struct FetchFields<'a> {
    max_body: Option<&'a Sp<ByteSize>>,
    connect_timeout: Option<&'a Sp<String>>,
    timeout: Option<&'a Sp<String>>,
    max_redirects: Option<&'a Sp<usize>>,
    retries: Option<&'a Sp<u32>>,
    proxy: Option<&'a Sp<String>>,
}

/// `f` checked, each setting falling back to `d`'s when absent.
fn fetch_settings(f: FetchFields<'_>, d: &FetchDefaults, cx: &mut Ctx) -> FetchDefaults {
    FetchDefaults {
        max_body: cx.byte_size(f.max_body, "fetch.max_body", d.max_body),
        connect_timeout: cx.duration_min(
            f.connect_timeout,
            "fetch.connect_timeout",
            d.connect_timeout,
            Duration::from_millis(1),
        ),
        timeout: cx.duration_min(
            f.timeout,
            "fetch.timeout",
            d.timeout,
            Duration::from_millis(1),
        ),
        max_redirects: f.max_redirects.map_or(d.max_redirects, |v| v.value),
        retries: f.retries.map_or(d.retries, |v| v.value),
        proxy: match f.proxy {
            Some(p) => cx.proxy(Some(p), "fetch.proxy"),
            None => d.proxy.clone(),
        },
        file_roots: d.file_roots.clone(),
        allow_private: d.allow_private,
        allow_hosts: d.allow_hosts.clone(),
        trust_watch_urls: d.trust_watch_urls,
    }
}

/// The fence settings of the daemon file's `fetch` section into `c`.
fn fence_settings(f: &RawFetchDefaults, c: &mut FetchDefaults, cx: &mut Ctx) {
    if let Some(roots) = &f.file_roots {
        let mut out = Vec::new();
        for (i, root) in roots.value.iter().enumerate() {
            let text = root.value.trim();
            if text.is_empty() {
                cx.err(
                    root.at,
                    &format!("fetch.file_roots[{i}]"),
                    "must not be empty",
                );
                continue;
            }
            let path = cx.path(text);
            out.push(std::path::absolute(&path).unwrap_or(path));
        }
        c.file_roots = Some(out);
    }
    if let Some(a) = &f.allow_private {
        c.allow_private = a.value;
    }
    for (i, entry) in f
        .allow_hosts
        .iter()
        .flat_map(|v| v.value.iter())
        .enumerate()
    {
        match AllowHost::parse(&entry.value) {
            Ok(host) => c.allow_hosts.push(host),
            Err(message) => cx.err(entry.at, &format!("fetch.allow_hosts[{i}]"), message),
        }
    }
    if let Some(t) = &f.trust_watch_urls {
        c.trust_watch_urls = t.value;
    }
}

fn watch_fetch(f: Option<&RawWatchFetch>, d: &FetchDefaults, cx: &mut Ctx) -> Option<WatchFetch> {
    let Some(f) = f else {
        return Some(WatchFetch {
            max_body: d.max_body,
            connect_timeout: d.connect_timeout,
            timeout: d.timeout,
            max_redirects: d.max_redirects,
            retries: d.retries,
            proxy: d.proxy.clone(),
            headers: Vec::new(),
            headers_cross_origin: false,
            cookies: Vec::new(),
            auth: None,
            render: None,
        });
    };
    let mut cookies = Vec::new();
    let mut ok = true;
    for (name, secret) in f.cookies.iter().flatten() {
        let path = join("fetch.cookies", name);
        let valid = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_graphic() && !b"()<>@,;:\\\"/[]?={}".contains(&b));
        if !valid {
            cx.err(secret.at, &path, format!("invalid cookie name `{name}`"));
        }
        match cx.secret(secret, &path) {
            Some(s) if valid => cookies.push((name.clone(), s)),
            _ => ok = false,
        }
    }
    let auth = match f.auth.as_ref().map(|a| &a.value) {
        None => None,
        Some(RawAuth::Basic { username, password }) => {
            let password = cx.secret(password, "fetch.auth.basic.password");
            if username.value.contains(':') {
                cx.err(
                    username.at,
                    "fetch.auth.basic.username",
                    "a basic-auth user name cannot contain `:`",
                );
            }
            match password {
                Some(password) => Some(Auth::Basic {
                    username: username.value.clone(),
                    password,
                }),
                None => {
                    ok = false;
                    None
                }
            }
        }
        Some(RawAuth::Bearer { token }) => match cx.secret(token, "fetch.auth.bearer.token") {
            Some(token) => Some(Auth::Bearer { token }),
            None => {
                ok = false;
                None
            }
        },
    };
    let base = fetch_settings(
        FetchFields {
            max_body: f.max_body.as_ref(),
            connect_timeout: f.connect_timeout.as_ref(),
            timeout: f.timeout.as_ref(),
            max_redirects: f.max_redirects.as_ref(),
            retries: f.retries.as_ref(),
            proxy: f.proxy.as_ref(),
        },
        d,
        cx,
    );
    let fetch = WatchFetch {
        max_body: base.max_body,
        connect_timeout: base.connect_timeout,
        timeout: base.timeout,
        max_redirects: base.max_redirects,
        retries: base.retries,
        proxy: base.proxy,
        headers: cx.headers(f.headers.as_ref(), "fetch.headers"),
        headers_cross_origin: f.headers_cross_origin.as_ref().is_some_and(|v| v.value),
        cookies,
        auth,
        render: render_options(f, cx)?,
    };
    ok.then_some(fetch)
}

/// The daemon file's `browser` section over the defaults.
fn browser_settings(b: &RawBrowser, cx: &mut Ctx) -> BrowserSettings {
    let d = BrowserSettings::default();
    BrowserSettings {
        executable: b.executable.as_ref().map(|e| cx.path(&e.value)),
        max_pages: cx.at_least_one(b.max_pages.as_ref(), "browser.max_pages", d.max_pages),
        memory_cap: cx.byte_size(b.memory_cap.as_ref(), "browser.memory_cap", d.memory_cap),
    }
}

/// A watch's `render` and browser options: `None` when they are wrong
/// (reported), `Some(None)` for an HTTP watch.
fn render_options(f: &RawWatchFetch, cx: &mut Ctx) -> Option<Option<RenderOptions>> {
    let browser = match &f.render {
        None => false,
        Some(r) if r.value == "http" => false,
        Some(r) if r.value == "browser" => true,
        Some(r) => {
            cx.err(
                r.at,
                "fetch.render",
                format!(
                    "unknown render `{}`: expected one of http, browser",
                    r.value
                ),
            );
            return None;
        }
    };
    let only_browser = [
        ("fetch.wait_for", f.wait_for.as_ref().map(|w| w.at)),
        ("fetch.viewport", f.viewport.as_ref().map(|v| v.at)),
        ("fetch.block", f.block.as_ref().map(|b| b.at)),
        ("fetch.revalidate", f.revalidate.as_ref().map(|r| r.at)),
    ];
    if !browser {
        let mut ok = true;
        for (path, at) in only_browser {
            if let Some(at) = at {
                cx.err(at, path, "only with `render: browser`");
                ok = false;
            }
        }
        return ok.then_some(None);
    }
    let mut ok = true;
    let mut options = RenderOptions::default();
    if let Some(w) = &f.wait_for {
        let (spec, hierarchy) = match &w.value {
            RawWaitFor::Dom(spec) => (spec.trim(), false),
            RawWaitFor::Hierarchy(xpath) => (xpath.trim(), true),
        };
        let xpath = || Sp {
            value: spec.to_owned(),
            at: w.at,
        };
        let wait_for = if hierarchy {
            Ready::Hierarchy(spec.to_owned())
        } else {
            Ready::Dom(WaitFor::parse(spec))
        };
        match &wait_for {
            _ if spec.is_empty() => {
                cx.err(w.at, "fetch.wait_for", "an empty selector");
                ok = false;
            }
            Ready::Hierarchy(_) | Ready::Dom(WaitFor::XPath(_)) => {
                ok &= cx.xpath(&xpath(), "fetch.wait_for").is_some();
            }
            // CSS syntax is the browser's to judge: a selector it cannot
            // parse fails the check with the browser's message.
            Ready::Dom(WaitFor::Css(_)) => {}
        }
        options.wait_for = Some(wait_for);
    }
    if let Some(v) = &f.viewport {
        match parse_viewport(&v.value) {
            Some(size) => options.viewport = size,
            None => {
                cx.err(
                    v.at,
                    "fetch.viewport",
                    format!(
                        "invalid viewport `{}`: expected WIDTHxHEIGHT, each 1 to 10000, e.g. 1280x800",
                        v.value
                    ),
                );
                ok = false;
            }
        }
    }
    if let Some(b) = &f.block {
        options.block.clear();
        for (i, name) in b.value.iter().enumerate() {
            match Resource::from_name(&name.value) {
                Some(r) if !options.block.contains(&r) => options.block.push(r),
                Some(_) => {}
                None => {
                    cx.err(
                        name.at,
                        &format!("fetch.block[{i}]"),
                        format!(
                            "unknown resource `{}`: expected one of images, fonts, media",
                            name.value
                        ),
                    );
                    ok = false;
                }
            }
        }
    }
    if let Some(r) = &f.revalidate {
        match Revalidate::from_name(r.value.trim()) {
            Some(revalidate) => options.revalidate = revalidate,
            None => {
                cx.err(
                    r.at,
                    "fetch.revalidate",
                    format!(
                        "unknown revalidate `{}`: expected one of render, html",
                        r.value
                    ),
                );
                ok = false;
            }
        }
    }
    ok.then_some(Some(options))
}

/// `WIDTHxHEIGHT`, each from 1 to 10000.
fn parse_viewport(v: &str) -> Option<(u32, u32)> {
    let (w, h) = v.trim().split_once(['x', 'X'])?;
    let side = |s: &str| {
        s.trim()
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=10_000).contains(n))
    };
    Some((side(w)?, side(h)?))
}

fn finite(v: Option<&Sp<f64>>, path: &str, cx: &mut Ctx) -> Option<f64> {
    let v = v?;
    if v.value.is_finite() {
        Some(v.value)
    } else {
        cx.err(v.at, path, "must be a finite number");
        None
    }
}

fn threshold(
    t: &Sp<RawThreshold>,
    path: &str,
    known: Option<&BTreeSet<String>>,
    cx: &mut Ctx,
) -> Option<Threshold> {
    let r = &t.value;
    let xpath_path = join(path, "xpath");
    if let Some(ty) = cx.xpath(&r.xpath, &xpath_path)
        && !matches!(ty, XPathType::NodeSet | XPathType::Number)
    {
        cx.err(
            r.xpath.at,
            &xpath_path,
            format!("a threshold XPath must give a node-set or a number, this one gives a {ty}"),
        );
    }
    let above = finite(r.above.as_ref(), &join(path, "above"), cx);
    let below = finite(r.below.as_ref(), &join(path, "below"), cx);
    let outside = r.outside.as_ref().and_then(|o| {
        let p = join(path, "outside");
        match o.value.as_slice() {
            [lo, hi] if lo.is_finite() && hi.is_finite() && lo < hi => Some((*lo, *hi)),
            [lo, hi] if lo.is_finite() && hi.is_finite() => {
                cx.err(
                    o.at,
                    &p,
                    format!("the bounds must be [low, high] with low < high, got [{lo}, {hi}]"),
                );
                None
            }
            [_, _] => {
                cx.err(o.at, &p, "the bounds must be finite numbers");
                None
            }
            other => {
                cx.err(
                    o.at,
                    &p,
                    format!("give two bounds [low, high], got {} values", other.len()),
                );
                None
            }
        }
    });
    let change_pct = finite(r.change_pct.as_ref(), &join(path, "change_pct"), cx);
    if let (Some(c), Some(v)) = (change_pct, &r.change_pct)
        && c <= 0.0
    {
        cx.err(v.at, &join(path, "change_pct"), "must be greater than 0");
    }
    if let (Some(a), Some(b), Some(bv)) = (above, below, &r.below)
        && b >= a
    {
        cx.err(
            bv.at,
            &join(path, "below"),
            format!(
                "below ({b}) must be less than above ({a}), or every value would cross the threshold"
            ),
        );
    }
    if r.above.is_none() && r.below.is_none() && r.outside.is_none() && r.change_pct.is_none() {
        cx.err(
            t.at,
            path,
            "give at least one bound: above, below, outside or change_pct",
        );
    }
    let hysteresis = finite(r.hysteresis.as_ref(), &join(path, "hysteresis"), cx).unwrap_or(0.0);
    if hysteresis < 0.0
        && let Some(h) = &r.hysteresis
    {
        cx.err(h.at, &join(path, "hysteresis"), "must be 0 or more");
    }
    let notify = r
        .notify
        .as_ref()
        .map(|n| cx.notifiers(n, &join(path, "notify"), known))
        .unwrap_or_default();
    Some(Threshold {
        name: r.name.value.clone(),
        xpath: r.xpath.value.clone(),
        above,
        below,
        outside,
        change_pct,
        hysteresis,
        notify,
        on_return: r.on_return.as_ref().is_none_or(|o| o.value),
    })
}

/// The page budget of `limits.page`.
fn page_limits(p: &super::raw::RawPageLimits, cx: &mut Ctx) -> PageLimits {
    let d = PageLimits::default();
    PageLimits {
        dom_nodes: cx.at_least_one(p.dom_nodes.as_ref(), "limits.page.dom_nodes", d.dom_nodes),
        dom_bytes: cx.byte_size(p.dom_bytes.as_ref(), "limits.page.dom_bytes", d.dom_bytes),
        cells: cx.at_least_one(p.cells.as_ref(), "limits.page.cells", d.cells),
        nodes: cx.at_least_one(p.nodes.as_ref(), "limits.page.nodes", d.nodes),
        text_bytes: cx.byte_size(
            p.text_bytes.as_ref(),
            "limits.page.text_bytes",
            d.text_bytes,
        ),
        id_bytes: cx.byte_size(p.id_bytes.as_ref(), "limits.page.id_bytes", d.id_bytes),
        cpu: cx.duration_min(
            p.cpu.as_ref(),
            "limits.page.cpu",
            d.cpu,
            Duration::from_millis(1),
        ),
    }
}

/// A secret from environment variable `name`, or why there is none.
pub fn secret_from_env(name: &str) -> Result<Secret, String> {
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => Ok(Secret(v)),
        Ok(_) => Err(format!("environment variable {name} is empty")),
        Err(std::env::VarError::NotPresent) => {
            Err(format!("environment variable {name} is not set"))
        }
        Err(std::env::VarError::NotUnicode(_)) => {
            Err(format!("environment variable {name} is not valid UTF-8"))
        }
    }
}

/// A secret from the file at `full` (one trailing line break dropped), or
/// why there is none.
pub fn secret_from_file(full: &Path) -> Result<Secret, String> {
    // Kernel files are nobody's secret: `/proc/self/environ` would hand the
    // daemon's whole environment (every `{env:}` secret) to one field, and
    // reading them is never what a watch means. Judged by the real path, so
    // a link elsewhere to them is refused too.
    if let Ok(real) = std::fs::canonicalize(full)
        && let Some(root) = ["/proc", "/sys"].iter().find(|root| real.starts_with(root))
    {
        return Err(format!(
            "cannot read secret file {}: a kernel file (under {root}), not a secret",
            full.display()
        ));
    }
    let read = crate::page::fence::read_regular(full, MAX_SECRET_FILE).and_then(|bytes| {
        String::from_utf8(bytes)
            .map_err(|_| FencedRead::Io(std::io::Error::from(std::io::ErrorKind::InvalidData)))
    });
    match read {
        Ok(mut text) => {
            if text.ends_with('\n') {
                text.pop();
                if text.ends_with('\r') {
                    text.pop();
                }
            }
            if text.is_empty() {
                return Err(format!("secret file {} is empty", full.display()));
            }
            Ok(Secret(text))
        }
        Err(e) => {
            let reason = match e {
                FencedRead::Io(e) => io_reason(&e),
                FencedRead::TooLarge => format!("larger than {} KiB", MAX_SECRET_FILE / 1024),
                FencedRead::Fence(e) => match e {
                    crate::page::fence::FenceError::NotRegular { kind, .. } => {
                        format!("a {kind}, not a regular file")
                    }
                    other => other.to_string(),
                },
            };
            Err(format!(
                "cannot read secret file {}: {reason}",
                full.display()
            ))
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes() {
        assert_eq!(parse_byte_size("20MiB"), Ok(20 * 1024 * 1024));
        assert_eq!(parse_byte_size("500kB"), Ok(500_000));
        assert_eq!(parse_byte_size("1GB"), Ok(1_000_000_000));
        assert_eq!(parse_byte_size("1.5 KiB"), Ok(1536));
        assert_eq!(parse_byte_size("42"), Ok(42));
        assert_eq!(parse_byte_size("7 b"), Ok(7));
        assert!(parse_byte_size("0MiB").is_err());
        assert!(parse_byte_size("MiB").is_err());
        assert!(
            parse_byte_size("5 parsecs")
                .unwrap_err()
                .contains("invalid byte size")
        );
        assert!(
            parse_byte_size("99999999TiB")
                .unwrap_err()
                .contains("too large")
        );
    }

    #[test]
    fn ids() {
        assert!(valid_id("demo-quotes.v2_x"));
        assert!(!valid_id(""));
        assert!(!valid_id("a b"));
        assert!(!valid_id("котировки"));
    }
}
