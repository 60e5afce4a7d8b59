//! Validation: raw structures in, the validated types of [`super`] out, and
//! every problem found as a [`Diagnostic`].
//!
//! This module holds what every section shares and what [`super`] calls:
//! the context of one file ([`Ctx`]: its diagnostics, its directory for
//! relative paths, and the checks of durations, byte sizes, secrets, header
//! values, URLs, XPaths and notifier names), the loaders
//! ([`load_daemon_file`], [`load_watch_dir`]) and the built-in defaults
//! ([`daemon_defaults`]). The sections are checked one file each:
//!
//! - [`daemon`](mod@daemon): the daemon file's top level (`database`,
//!   `listen`, `demo`), `server`, `tokens`, the `fetch` defaults and the
//!   fence, `limits`, `alerts`, `retention` and `browser`;
//! - [`notifiers`]: `smtp`, and the email, webhook and file notifiers;
//! - [`channels`]: the chat and push notifiers (Slack, Teams, Discord,
//!   Telegram, Matrix, ntfy, Gotify, Apprise-style URLs);
//! - [`sessions`]: sessions, their logins and login steps;
//! - [`watch`](mod@watch): a watch file: id, url, schedule, clips,
//!   thresholds, `on_change`, `failures`, `layout`, `session` and `keys`;
//! - [`fetch`]: the fetch settings both files share, a watch's `fetch`
//!   section and its render options;
//! - [`secrets`]: secrets read from an environment variable or a file.
//!
//! The section files import from here and from earlier stages; between
//! them only downward: [`daemon`](mod@daemon) uses [`notifiers`],
//! [`sessions`] and [`fetch`], [`notifiers`] uses [`channels`], and
//! [`watch`](mod@watch) uses [`fetch`].

mod channels;
mod daemon;
mod fetch;
mod notifiers;
mod secrets;
mod sessions;
mod watch;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use url::Url;

use super::lenient;
use super::raw::{ByteSize, Pos, RawDaemon, RawSecret, RawSecretOrText, RawWatch, Sp};
use super::tree::{DOCUMENT, join};
use super::{
    AlertSettings, DaemonConfig, Database, Diagnostic, FetchDefaults, Limits, Secret, ServerConfig,
    Watch,
};
use crate::page::browser::BrowserSettings;
use crate::page::fence::Fence;
use crate::store::Retention;
use crate::xpath::{XPathType, result_type};

use daemon::daemon;
pub use secrets::{secret_from_env, secret_from_file};
use watch::watch;

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

/// A watch id, notifier name: `[A-Za-z0-9._-]+`.
fn valid_id(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
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
