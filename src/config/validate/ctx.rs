//! The context of one file being checked ([`Ctx`]): its diagnostics, its
//! directory for relative paths, and the checks every section shares
//! (durations, byte sizes, secrets, header values, URLs, priorities, XPaths,
//! notifier names). It sits below the sections and the chat channels
//! ([`crate::config::channels`]), which all check with it, and imports no raw
//! file shape, only the shared raw values ([`crate::config::value`]).

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use url::Url;

use super::secrets::{env_name_problem, secret_from_env, secret_from_file};
use crate::config::tree::{DOCUMENT, join};
use crate::config::value::{ByteSize, Pos, RawSecret, RawSecretOrText, Sp};
use crate::config::{Diagnostic, Secret, Secrets};
use crate::xpath::{XPathType, result_type};

/// The message of an inline secret.
const INLINE_SECRET: &str = "secrets are never inline: write {env: NAME} or {file: PATH}";

/// What stands for a secret that was not read ([`Secrets::Unread`]): valid
/// wherever a secret's text goes unparsed (a password, a header value, a
/// cookie).
const UNREAD: &str = "unread";

/// Collects the diagnostics of one file; relative paths are resolved against `dir`.
pub(in crate::config) struct Ctx<'a> {
    /// The file checked.
    pub(in crate::config) file: &'a Path,
    /// Its directory, for relative paths.
    pub(in crate::config) dir: &'a Path,
    /// The problems found so far.
    pub(in crate::config) diags: Vec<Diagnostic>,
    /// Whether secrets are read, or checked for their form only.
    secrets: Secrets,
}

impl<'a> Ctx<'a> {
    pub(in crate::config) fn new(file: &'a Path, secrets: Secrets) -> Ctx<'a> {
        Ctx {
            file,
            dir: file.parent().unwrap_or(Path::new("")),
            diags: Vec::new(),
            secrets,
        }
    }

    /// Whether [`Ctx::secret`] reads what it is given. When it does not,
    /// what a secret's text must be (a URL) goes unchecked.
    pub(in crate::config) fn reads_secrets(&self) -> bool {
        self.secrets == Secrets::Read
    }

    pub(in crate::config) fn err(&mut self, at: Pos, path: &str, message: impl Into<String>) {
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
    pub(in crate::config) fn finish(mut self, out: &mut Vec<Diagnostic>) {
        self.diags.sort_by_key(|d| (d.line, d.column));
        out.append(&mut self.diags);
    }

    pub(in crate::config) fn path(&self, p: &str) -> PathBuf {
        self.dir.join(p)
    }

    pub(in crate::config) fn duration(
        &mut self,
        v: Option<&Sp<String>>,
        path: &str,
        default: Duration,
    ) -> Duration {
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
    pub(in crate::config) fn duration_min(
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

    pub(in crate::config) fn byte_size(
        &mut self,
        v: Option<&Sp<ByteSize>>,
        path: &str,
        default: u64,
    ) -> u64 {
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

    pub(in crate::config) fn at_least_one<T: Copy + TryFrom<u8> + PartialOrd>(
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

    /// The secret `s` names, read; with [`Secrets::Unread`], a placeholder
    /// once the reference is well formed. `None` after a diagnostic.
    pub(in crate::config) fn secret(&mut self, s: &Sp<RawSecret>, path: &str) -> Option<Secret> {
        let read = self.reads_secrets();
        let found = match &s.value {
            RawSecret::Inline => Err(INLINE_SECRET.to_owned()),
            RawSecret::Env(name) if read => secret_from_env(name),
            RawSecret::Env(name) => env_name_problem(name).map_or(Ok(Secret::new(UNREAD)), Err),
            RawSecret::File(p) if read => secret_from_file(&self.path(p)),
            RawSecret::File(p) if p.trim().is_empty() => {
                Err("an empty secret file path: write {file: PATH}".to_owned())
            }
            RawSecret::File(_) => Ok(Secret::new(UNREAD)),
        };
        found.map_err(|message| self.err(s.at, path, message)).ok()
    }

    pub(in crate::config) fn socket_addr(
        &mut self,
        v: &Sp<String>,
        path: &str,
    ) -> Option<SocketAddr> {
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

    pub(in crate::config) fn mailbox(&mut self, v: &Sp<String>, path: &str) -> bool {
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

    pub(in crate::config) fn proxy(
        &mut self,
        v: Option<&Sp<String>>,
        path: &str,
    ) -> Option<String> {
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

    pub(in crate::config) fn headers(
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
    pub(in crate::config) fn secret_header_value(
        &mut self,
        value: &Sp<RawSecretOrText>,
        path: &str,
    ) -> Option<String> {
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
    pub(in crate::config) fn header_value(
        &mut self,
        value: &Sp<String>,
        path: &str,
    ) -> Option<String> {
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
    pub(in crate::config) fn base_url(&mut self, v: &Sp<String>, path: &str) -> Option<Url> {
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
    pub(in crate::config) fn priority(
        &mut self,
        v: Option<&Sp<u8>>,
        path: &str,
        lo: u8,
        hi: u8,
    ) -> Option<Option<u8>> {
        match v {
            None => Some(None),
            Some(p) if (lo..=hi).contains(&p.value) => Some(Some(p.value)),
            Some(p) => {
                self.err(p.at, path, format!("must be {lo} to {hi}"));
                None
            }
        }
    }

    pub(in crate::config) fn xpath(&mut self, v: &Sp<String>, path: &str) -> Option<XPathType> {
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

    pub(in crate::config) fn notifiers(
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
}
