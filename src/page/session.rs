//! Sessions that stay logged in: a cookie jar in, the `Cookie` header of a
//! request and the jar fed by its response's `Set-Cookie` out; a Netscape
//! `cookies.txt` in, its cookies in a jar out; and the login form a session
//! posts when its page shows it logged out ([`crate::page::fetch::post_form`]).
//!
//! The jar follows RFC 6265's storage model through [`cookie_store`]
//! (domain and host-only cookies, paths, `Expires`/`Max-Age`, `Secure`
//! cookies only over https, an expired `Set-Cookie` deleting its cookie).
//! Its JSON form ([`Jar::to_json`]) is what the store keeps between checks
//! and restarts.
//!
//! # Decisions
//!
//! - **Session cookies are kept.** A cookie without `Expires` lives "until
//!   the browser closes"; a daemon never closes, and browsers that restore
//!   their sessions keep such cookies across restarts too. So the stored
//!   jar holds them, and a restart of the daemon is not a logout. Expired
//!   cookies are dropped when the jar is written.
//! - **Public suffixes refused** ([`psl`], the list compiled in, updated
//!   with each release of the crate): a `Set-Cookie` or a `cookies.txt`
//!   line for `com` or `co.uk` is refused, as browsers refuse it (a host
//!   that is itself a public suffix keeps its cookie, host-only, as RFC
//!   6265 5.3 step 5 says). Only suffixes the list knows count: `localhost`
//!   and intranet names are not public.
//! - **A cookie goes back to the port that set it.** RFC 6265 does not
//!   isolate ports, and browsers send a cookie to every port of its host;
//!   semclip does not, because one host often runs unrelated services on
//!   several ports (an intranet server, `localhost`), and a session's
//!   cookies for one must not reach the other, directly or after a
//!   redirect. The port is kept with the jar; the default ports (80 and
//!   443) count as one, so a site's http cookie reaches its https pages. Cookies whose port is not
//!   known (imported from a `cookies.txt`, which has no ports, taken back
//!   from a browser, which keeps none, or stored before semclip kept
//!   ports) go to any port of their host, as RFC 6265 has it.
//! - **`cookies.txt` is read as a stream under caps**
//!   ([`MAX_COOKIES_TXT_BYTES`], [`MAX_COOKIE_LINE_BYTES`],
//!   [`MAX_COOKIE_VALUE_BYTES`], [`MAX_COOKIES`] cookies): a larger file is
//!   refused before it is read whole; a line over a cap is skipped and
//!   reported, the rest imported.
//! - **Cookie values never reach a log.** [`Jar`]'s `Debug` prints the
//!   number of cookies; cookies are inserted one by one rather than through
//!   `cookie_store`'s `store_response_cookies`, which logs them at debug
//!   level; errors name lines and cookie names, never values.

use std::collections::HashMap;
use std::fmt;
use std::io::BufRead;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use cookie_store::{CookieDomain, CookiePath, CookieStore, RawCookie};
use reqwest::header::{HeaderMap, SET_COOKIE};
use url::Url;

use crate::sync::lock;

/// The most cookies a jar keeps for one domain (or host), as browsers do
/// (Chromium: 180; RFC 6265 asks for at least 50).
pub const MAX_COOKIES_PER_DOMAIN: usize = 180;

/// The most cookies a jar keeps in all (Chromium: 3300).
pub const MAX_COOKIES: usize = 3000;

/// The largest `cookies.txt` read; a larger one is refused whole.
pub const MAX_COOKIES_TXT_BYTES: u64 = 16 << 20;

/// The longest `cookies.txt` line taken; a longer one is skipped.
pub const MAX_COOKIE_LINE_BYTES: usize = 8 << 10;

/// The largest cookie (name and value) taken, as browsers cap it.
pub const MAX_COOKIE_VALUE_BYTES: usize = 4096;

/// A session's cookie jar, shared by the requests of one check (and the
/// checks of one session). Cloning shares the jar.
#[derive(Clone, Default)]
pub struct Jar(Arc<Mutex<Inner>>);

/// The cookies, and the port each came from when known.
#[derive(Clone, Default)]
struct Inner {
    store: CookieStore,
    ports: HashMap<Key, u16>,
}

/// A stored cookie's key: domain, path, name.
type Key = (String, String, String);

impl Inner {
    /// Forgets the ports of cookies no longer in the store.
    fn prune_ports(&mut self) {
        let store = &self.store;
        self.ports
            .retain(|(domain, path, name), _| store.get(domain, path, name).is_some());
    }
}

/// The jar's stored form: the cookies in `cookie_store`'s JSON, and the
/// ports.
#[derive(serde::Serialize, serde::Deserialize)]
struct Stored {
    cookies: String,
    #[serde(default)]
    ports: Vec<(String, String, String, u16)>,
}

impl fmt::Debug for Jar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Jar({} cookies)", self.len())
    }
}

/// Why a stored jar could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("the cookie jar is not valid JSON of a jar")]
pub struct JarError(#[source] cookie_store::Error);

impl Jar {
    /// An empty jar.
    pub fn new() -> Jar {
        Jar::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves a jar that is still a jar.
        lock(&self.0)
    }

    /// A jar read back from [`Jar::to_json`] (or from the plain
    /// `cookie_store` JSON of before ports were kept); expired cookies are
    /// dropped.
    pub fn from_json(json: &str) -> Result<Jar, JarError> {
        let (cookies, ports) = match serde_json::from_str::<Stored>(json) {
            Ok(stored) => (stored.cookies, stored.ports),
            Err(_) => (json.to_owned(), Vec::new()),
        };
        let store = cookie_store::serde::json::load(cookies.as_bytes()).map_err(JarError)?;
        let mut inner = Inner {
            store,
            ports: ports
                .into_iter()
                .map(|(domain, path, name, port)| ((domain, path, name), port))
                .collect(),
        };
        inner.prune_ports();
        Ok(Jar(Arc::new(Mutex::new(inner))))
    }

    /// The jar as JSON: its unexpired cookies, session cookies included,
    /// and their ports.
    pub fn to_json(&self) -> Result<String, JarError> {
        let inner = self.lock();
        let store = &inner.store;
        let live = CookieStore::from_cookies(
            store
                .iter_unexpired()
                .cloned()
                .map(Ok::<_, cookie_store::Error>),
            false,
        )
        .map_err(JarError)?;
        let mut out = Vec::new();
        cookie_store::serde::json::save_incl_expired_and_nonpersistent(&live, &mut out)
            .map_err(JarError)?;
        let cookies = String::from_utf8(out).map_err(|e| JarError(Box::new(e)))?;
        let mut ports: Vec<(String, String, String, u16)> = inner
            .ports
            .iter()
            .filter(|((domain, path, name), _)| live.get(domain, path, name).is_some())
            .map(|((domain, path, name), port)| (domain.clone(), path.clone(), name.clone(), *port))
            .collect();
        ports.sort();
        serde_json::to_string(&Stored { cookies, ports }).map_err(|e| JarError(Box::new(e)))
    }

    /// The unexpired cookies in the jar.
    pub fn len(&self) -> usize {
        self.lock().store.iter_unexpired().count()
    }

    /// Whether the jar holds no unexpired cookie.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Replaces the jar's cookies with `other`'s (a jar stored by another
    /// process, read back).
    pub fn replace_with(&self, other: &Jar) {
        if Arc::ptr_eq(&self.0, &other.0) {
            return;
        }
        let theirs = other.lock().clone();
        *self.lock() = theirs;
    }

    /// The `Cookie` header value for a request to `url`: the jar's cookies
    /// that match its host, path and scheme and came from its port (or
    /// from no known port), or `None`.
    pub fn header(&self, url: &Url) -> Option<String> {
        let inner = self.lock();
        let port = port_of(url);
        let pairs: Vec<String> = inner
            .store
            .matches(url)
            .into_iter()
            .filter(|c| inner.ports.get(&key(c)).is_none_or(|p| *p == port))
            .map(|c| format!("{}={}", c.name(), c.value()))
            .collect();
        (!pairs.is_empty()).then(|| pairs.join("; "))
    }

    /// Keeps the `Set-Cookie`s of a response from `url`, with its port. A
    /// header that is not a cookie, or a cookie the rules refuse (another
    /// site's domain, a public suffix), is left out; a `Secure` cookie is
    /// kept but sent only over https.
    pub fn store(&self, headers: &HeaderMap, url: &Url) {
        let mut inner = self.lock();
        for value in headers.get_all(SET_COOKIE) {
            let Ok(text) = value.to_str() else { continue };
            let Ok(mut cookie) = RawCookie::parse(text.to_owned()) else {
                continue;
            };
            if let Err(why) = public_suffix_rule(&mut cookie, url) {
                tracing::debug!(%url, cookie = cookie.name(), why, "cookie refused");
                continue;
            }
            if let Err(error) = inner.store.insert_raw(&cookie, url) {
                tracing::debug!(%url, cookie = cookie.name(), error = %crate::ErrorChain(&error), "cookie refused");
                continue;
            }
            if let Some(key) = stored_key(&cookie, url)
                && inner.store.get(&key.0, &key.1, &key.2).is_some()
            {
                inner.ports.insert(key, port_of(url));
            }
        }
        evict(&mut inner.store, MAX_COOKIES_PER_DOMAIN, MAX_COOKIES);
        inner.prune_ports();
    }

    /// Adds the cookies of a Netscape `cookies.txt` (as browsers' export
    /// extensions and curl write it), read from `reader` as a stream. A
    /// file over [`MAX_COOKIES_TXT_BYTES`] or with a line that does not read
    /// adds nothing, and the errors name their lines; a line over a cap,
    /// for a public suffix, or past [`MAX_COOKIES`] cookies is skipped and
    /// reported in [`Imported::skipped`]. Returns the cookies added and
    /// those left out as already expired at `now`.
    pub fn import_cookies_txt(
        &self,
        reader: impl BufRead,
        now: SystemTime,
    ) -> Result<Imported, ImportError> {
        let parsed = parse_cookies_txt(reader, now)?;
        let mut inner = self.lock();
        let mut scratch = inner.store.clone();
        let mut errors = Vec::new();
        for (line, cookie, url) in &parsed.cookies {
            if let Err(error) = scratch.insert_raw(cookie, url) {
                errors.push(LineError {
                    line: *line,
                    message: format!("cookie `{}` refused: {error}", cookie.name()),
                });
            }
        }
        if !errors.is_empty() {
            return Err(ImportError::Lines(errors));
        }
        inner.store = scratch;
        evict(&mut inner.store, MAX_COOKIES_PER_DOMAIN, MAX_COOKIES);
        inner.prune_ports();
        Ok(Imported {
            added: parsed.cookies.len(),
            expired: parsed.expired,
            skipped: parsed.skipped,
            skipped_lines: parsed.skipped_lines,
        })
    }
}

/// RFC 6265 5.3 step 5 with the public-suffix list: a `Domain` that is a
/// public suffix is refused, unless it is the request's host itself, when
/// the cookie becomes host-only.
fn public_suffix_rule(cookie: &mut RawCookie<'static>, url: &Url) -> Result<(), &'static str> {
    let Some(domain) = cookie
        .domain()
        .map(|d| d.trim_start_matches('.').to_ascii_lowercase())
    else {
        return Ok(());
    };
    if !is_public_suffix(&domain) {
        return Ok(());
    }
    if url
        .host_str()
        .is_some_and(|h| h.eq_ignore_ascii_case(&domain))
    {
        cookie.unset_domain();
        return Ok(());
    }
    Err("its domain is a public suffix")
}

/// Whether `domain` is a suffix the public-suffix list knows (`com`,
/// `co.uk`, `github.io`), not merely an unknown top-level name.
pub fn is_public_suffix(domain: &str) -> bool {
    let domain = domain.trim_end_matches('.');
    psl::suffix(domain.as_bytes())
        .is_some_and(|s| s.is_known() && s.as_bytes().eq_ignore_ascii_case(domain.as_bytes()))
}

/// The port a cookie is bound to: `url`'s own, or 0 for its scheme's
/// default port (80 and 443 count as one: a site's move from http to https
/// is the same service, not another one on another port).
fn port_of(url: &Url) -> u16 {
    url.port().unwrap_or(0)
}

/// The key `cookie_store` keeps `cookie`, received from `url`, under.
fn stored_key(cookie: &RawCookie<'_>, url: &Url) -> Option<Key> {
    let domain = match cookie.domain() {
        Some(_) => String::from(&CookieDomain::try_from(cookie).ok()?),
        None => url.host_str()?.to_ascii_lowercase(),
    };
    let path = match cookie.path() {
        Some(p) if p.starts_with('/') => p.to_owned(),
        _ => String::from(&CookiePath::default_path(url)),
    };
    Some((domain, path, cookie.name().to_owned()))
}

/// A cookie as a browser is given it and gives it back
/// (DevTools `Storage.setCookies` / `Storage.getCookies`). Its `Debug`
/// never shows the value.
#[derive(Clone, PartialEq, Eq)]
pub struct BrowserCookie {
    /// The name.
    pub name: String,
    /// The value (may be a credential).
    pub value: String,
    /// The host (host-only cookie) or the domain (domain cookie), without a
    /// leading dot.
    pub domain: String,
    /// Sent to `domain` only, not to its subdomains.
    pub host_only: bool,
    /// The path.
    pub path: String,
    /// Sent over https only.
    pub secure: bool,
    /// Hidden from scripts.
    pub http_only: bool,
    /// When it expires, in Unix seconds; `None`: a session cookie.
    pub expires: Option<i64>,
}

impl fmt::Debug for BrowserCookie {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BrowserCookie")
            .field("name", &self.name)
            .field("domain", &self.domain)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl BrowserCookie {
    /// Whether `other` is the same cookie (domain, path and name), whatever
    /// its value.
    fn same_key(&self, other: &BrowserCookie) -> bool {
        self.domain == other.domain && self.path == other.path && self.name == other.name
    }

    /// The cookie as `cookie_store` takes it, with the URL it stands as
    /// received from.
    fn raw(&self) -> Option<(RawCookie<'static>, Url)> {
        let scheme = if self.secure { "https" } else { "http" };
        let url = Url::parse(&format!("{scheme}://{}{}", self.domain, self.path)).ok()?;
        let mut cookie = RawCookie::build((self.name.clone(), self.value.clone()))
            .path(self.path.clone())
            .secure(self.secure)
            .http_only(self.http_only);
        if !self.host_only {
            cookie = cookie.domain(self.domain.clone());
        }
        if let Some(at) = self.expires {
            cookie = cookie.expires(cookie::time::OffsetDateTime::from_unix_timestamp(at).ok()?);
        }
        Some((cookie.build(), url))
    }
}

impl Jar {
    /// The jar's unexpired cookies, to give a browser.
    pub fn browser_cookies(&self) -> Vec<BrowserCookie> {
        let inner = self.lock();
        inner
            .store
            .iter_unexpired()
            .filter_map(|c| {
                let (domain, host_only) = match &c.domain {
                    cookie_store::CookieDomain::HostOnly(h) => (h.clone(), true),
                    cookie_store::CookieDomain::Suffix(s) => (s.clone(), false),
                    _ => return None,
                };
                let expires = match &c.expires {
                    cookie_store::CookieExpiration::AtUtc(at) => Some(at.unix_timestamp()),
                    cookie_store::CookieExpiration::SessionEnd => None,
                };
                Some(BrowserCookie {
                    name: c.name().to_owned(),
                    value: c.value().to_owned(),
                    domain,
                    host_only,
                    path: String::from(&c.path),
                    secure: c.secure().unwrap_or(false),
                    http_only: c.http_only().unwrap_or(false),
                    expires,
                })
            })
            .collect()
    }

    /// Takes back what a browser did to the cookies it was given: `before`
    /// is what it was given ([`Jar::browser_cookies`]), `after` what it
    /// holds at the end. A cookie given and no longer held (deleted or
    /// expired by the page) leaves the jar; one new or changed enters it.
    /// Cookies the jar got meanwhile from elsewhere (another check of the
    /// session) are left alone.
    pub fn take_from_browser(&self, before: &[BrowserCookie], after: &[BrowserCookie]) {
        let mut inner = self.lock();
        let store = &mut inner.store;
        for gone in before
            .iter()
            .filter(|b| !after.iter().any(|a| a.same_key(b)))
        {
            store.remove(&gone.domain, &gone.path, &gone.name);
        }
        for cookie in after.iter().filter(|a| !before.contains(a)) {
            let Some((raw, url)) = cookie.raw() else {
                tracing::debug!(cookie = %cookie.name, domain = %cookie.domain, "a browser cookie does not read");
                continue;
            };
            if let Err(error) = store.insert_raw(&raw, &url) {
                tracing::debug!(%url, cookie = %cookie.name, error = %crate::ErrorChain(&error), "cookie refused");
            }
        }
        evict(store, MAX_COOKIES_PER_DOMAIN, MAX_COOKIES);
        inner.prune_ports();
    }
}

/// Bounds `store`: at most `per_domain` cookies per domain and `total` in
/// all, so that a site setting cookies without end cannot grow the stored
/// jar without bound. Expired cookies go first. Then, in a domain over its
/// bound, the cookies that expire soonest go (session cookies, which
/// expire with no date, last: they are what a login usually sets); over
/// the total, the domain with the most cookies gives one up, so that a
/// site flooding the jar evicts its own cookies, not another site's
/// session. (cookie_store keeps no creation or access time, so "least
/// recently used", browsers' rule, cannot be followed.)
fn evict(store: &mut CookieStore, per_domain: usize, total: usize) {
    let expired: Vec<(String, String, String)> = store
        .iter_any()
        .filter(|c| c.is_expired())
        .map(key)
        .collect();
    for (domain, path, name) in &expired {
        store.remove(domain, path, name);
    }
    let count = store.iter_unexpired().count();
    if count <= total && count <= per_domain {
        return;
    }
    // Per domain, its cookies' keys, the soonest to expire last (popped
    // first).
    let mut domains: std::collections::BTreeMap<String, Vec<(Option<i64>, String, String)>> =
        std::collections::BTreeMap::new();
    for c in store.iter_unexpired() {
        let (domain, path, name) = key(c);
        let expires = match &c.expires {
            cookie_store::CookieExpiration::AtUtc(at) => Some(at.unix_timestamp()),
            cookie_store::CookieExpiration::SessionEnd => None,
        };
        domains
            .entry(domain)
            .or_default()
            .push((expires, path, name));
    }
    for cookies in domains.values_mut() {
        // Sorted latest first, session cookies (None) first of all.
        cookies.sort_by(|a, b| match (a.0, b.0) {
            (None, None) => std::cmp::Ordering::Equal,
            (None, Some(_)) => std::cmp::Ordering::Less,
            (Some(_), None) => std::cmp::Ordering::Greater,
            (Some(x), Some(y)) => y.cmp(&x),
        });
    }
    let mut evicted = Vec::new();
    for (domain, cookies) in &mut domains {
        while cookies.len() > per_domain {
            if let Some((_, path, name)) = cookies.pop() {
                evicted.push((domain.clone(), path, name));
            }
        }
    }
    let mut left: usize = domains.values().map(Vec::len).sum();
    while left > total {
        let Some((domain, cookies)) = domains.iter_mut().max_by_key(|(_, c)| c.len()) else {
            break;
        };
        let Some((_, path, name)) = cookies.pop() else {
            break;
        };
        evicted.push((domain.clone(), path, name));
        left -= 1;
    }
    tracing::debug!(
        evicted = evicted.len(),
        "cookies over the jar's bounds evicted"
    );
    for (domain, path, name) in &evicted {
        store.remove(domain, path, name);
    }
}

/// A stored cookie's key: domain, path, name.
fn key(c: &cookie_store::Cookie<'_>) -> (String, String, String) {
    (
        String::from(&c.domain),
        String::from(&c.path),
        c.name().to_owned(),
    )
}

/// What [`Jar::import_cookies_txt`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    /// Cookies added (or replacing one of the same domain, path and name).
    pub added: usize,
    /// Lines left out because their cookie had already expired.
    pub expired: usize,
    /// Lines left out, each with why: over a cap, or a public suffix's
    /// cookie; the lines past the most cookies a jar keeps are one entry,
    /// at the first of them.
    pub skipped: Vec<LineError>,
    /// How many lines were skipped in all.
    pub skipped_lines: usize,
}

/// Why a `cookies.txt` imported nothing.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file is larger than [`MAX_COOKIES_TXT_BYTES`].
    #[error("the file is larger than {} MiB: nothing imported", MAX_COOKIES_TXT_BYTES >> 20)]
    TooLarge,
    /// Lines that do not read, by number.
    #[error("{} bad line(s): nothing imported", .0.len())]
    Lines(Vec<LineError>),
    /// The file could not be read.
    #[error("cannot read the file")]
    Read(#[source] std::io::Error),
}

/// A line of a `cookies.txt` that does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct LineError {
    /// The line, from 1.
    pub line: usize,
    /// What is wrong with it.
    pub message: String,
}

/// The cookies of a `cookies.txt`, each with its line and the URL it is
/// taken as received from.
struct Parsed {
    cookies: Vec<(usize, RawCookie<'static>, Url)>,
    expired: usize,
    skipped: Vec<LineError>,
    skipped_lines: usize,
}

/// The fields of a `cookies.txt` line, in order.
const FIELDS: &str = "domain, include-subdomains, path, secure, expiry, name, value";

/// Reads a Netscape `cookies.txt`: one cookie a line, seven fields
/// separated by tabs (domain, include-subdomains `TRUE`/`FALSE`, path,
/// secure `TRUE`/`FALSE`, expiry in Unix seconds with `0` for a session
/// cookie, name, value). Blank lines and `#` comments are skipped, except
/// the `#HttpOnly_` prefix curl and browsers write before the domain of an
/// HTTP-only cookie. Every bad line is reported. Read line by line, never
/// more than [`MAX_COOKIE_LINE_BYTES`] of a line held, and never past
/// [`MAX_COOKIES_TXT_BYTES`].
fn parse_cookies_txt(mut reader: impl BufRead, now: SystemTime) -> Result<Parsed, ImportError> {
    let now = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    let mut out = Parsed {
        cookies: Vec::new(),
        expired: 0,
        skipped: Vec::new(),
        skipped_lines: 0,
    };
    // The lines past the most cookies a jar keeps: the first, and how many.
    let mut past_cap: Option<(usize, usize)> = None;
    let mut errors = Vec::new();
    let mut read: u64 = 0;
    let mut buf = Vec::new();
    for line in 1.. {
        buf.clear();
        let (taken, whole) = read_line(&mut reader, &mut buf).map_err(ImportError::Read)?;
        read += taken;
        if read > MAX_COOKIES_TXT_BYTES {
            return Err(ImportError::TooLarge);
        }
        if taken == 0 {
            break;
        }
        if !whole {
            out.skipped_lines += 1;
            out.skipped.push(LineError {
                line,
                message: format!("longer than {MAX_COOKIE_LINE_BYTES} bytes: skipped"),
            });
            continue;
        }
        let Ok(raw) = std::str::from_utf8(&buf) else {
            errors.push(LineError {
                line,
                message: "not UTF-8 text".to_owned(),
            });
            continue;
        };
        let raw = raw.trim_end_matches(['\n', '\r']);
        let (raw, http_only) = match raw.strip_prefix("#HttpOnly_") {
            Some(rest) => (rest, true),
            None => (raw, false),
        };
        if raw.trim().is_empty() || raw.starts_with('#') {
            continue;
        }
        match cookie_line(raw, http_only, now) {
            Ok(Some((cookie, url))) => {
                let size = cookie.name().len() + cookie.value().len();
                let suffix = cookie
                    .domain()
                    .map(|d| d.trim_start_matches('.'))
                    .filter(|d| is_public_suffix(d))
                    .map(str::to_owned);
                let why = if size > MAX_COOKIE_VALUE_BYTES {
                    format!(
                        "cookie `{}` is larger than {MAX_COOKIE_VALUE_BYTES} bytes: skipped",
                        cookie.name()
                    )
                } else if let Some(suffix) = suffix {
                    format!(
                        "cookie `{}` is for `{suffix}`, a public suffix: skipped",
                        cookie.name()
                    )
                } else if out.cookies.len() >= MAX_COOKIES {
                    out.skipped_lines += 1;
                    let (first, count) = past_cap.unwrap_or((line, 0));
                    past_cap = Some((first, count + 1));
                    continue;
                } else {
                    out.cookies.push((line, cookie, url));
                    continue;
                };
                out.skipped_lines += 1;
                out.skipped.push(LineError { line, message: why });
            }
            Ok(None) => out.expired += 1,
            Err(message) => errors.push(LineError { line, message }),
        }
    }
    if let Some((line, count)) = past_cap {
        out.skipped.push(LineError {
            line,
            message: format!(
                "{count} cookie(s) past the {MAX_COOKIES} a jar keeps, from this line on: skipped"
            ),
        });
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(ImportError::Lines(errors))
    }
}

/// Reads one line into `buf`, at most [`MAX_COOKIE_LINE_BYTES`] of it (the
/// rest of a longer line is read and dropped, up to the file cap). Gives
/// the bytes read and whether the line was whole.
fn read_line(reader: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<(u64, bool)> {
    let limit = MAX_COOKIE_LINE_BYTES as u64 + 1;
    let mut taken = std::io::Read::take(&mut *reader, limit).read_until(b'\n', buf)? as u64;
    if buf.len() <= MAX_COOKIE_LINE_BYTES || buf.ends_with(b"\n") {
        return Ok((taken, true));
    }
    // Too long: drop the rest of the line, a buffer at a time.
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok((taken, false));
        }
        let (used, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(at) => (at + 1, true),
            None => (chunk.len(), false),
        };
        reader.consume(used);
        taken += used as u64;
        if done || taken > MAX_COOKIES_TXT_BYTES {
            return Ok((taken, false));
        }
    }
}

/// One cookie line: the cookie and the URL it stands as received from, or
/// `None` when it has expired.
fn cookie_line(
    raw: &str,
    http_only: bool,
    now: i64,
) -> Result<Option<(RawCookie<'static>, Url)>, String> {
    let fields: Vec<&str> = raw.split('\t').collect();
    let [domain, subdomains, path, secure, expiry, name, value] = fields[..] else {
        return Err(format!(
            "expected 7 tab-separated fields ({FIELDS}), found {}",
            fields.len()
        ));
    };
    let flag = |field: &str, what: &str| match field {
        f if f.eq_ignore_ascii_case("TRUE") => Ok(true),
        f if f.eq_ignore_ascii_case("FALSE") => Ok(false),
        other => Err(format!("{what} must be TRUE or FALSE, not `{other}`")),
    };
    let subdomains = flag(subdomains, "include-subdomains")?;
    let secure = flag(secure, "secure")?;
    let host = domain.strip_prefix('.').unwrap_or(domain);
    if host.is_empty() || host.contains(['/', ':', ' ', '?', '#', '@']) {
        return Err(format!("invalid domain `{domain}`"));
    }
    if !path.starts_with('/') {
        return Err(format!("the path must start with `/`, not `{path}`"));
    }
    let expiry: i64 = expiry
        .trim()
        .parse()
        .ok()
        .filter(|e| *e >= 0)
        .ok_or_else(|| {
            format!("the expiry must be Unix seconds (0: a session cookie), not `{expiry}`")
        })?;
    let bad_name = |c: char| c.is_whitespace() || c.is_control() || "=;,".contains(c);
    if name.is_empty() || name.contains(bad_name) {
        return Err(format!("invalid cookie name `{name}`"));
    }
    if value.contains(|c: char| c == ';' || c.is_control()) {
        // The value is not shown: it may be a credential.
        return Err(format!(
            "the value of cookie `{name}` holds `;` or a control character"
        ));
    }
    if expiry != 0 && expiry <= now {
        return Ok(None);
    }
    let scheme = if secure { "https" } else { "http" };
    let url = Url::parse(&format!("{scheme}://{host}{path}"))
        .map_err(|e| format!("invalid domain `{domain}`: {e}"))?;
    let mut cookie = RawCookie::build((name.to_owned(), value.to_owned()))
        .path(path.to_owned())
        .secure(secure)
        .http_only(http_only);
    if subdomains || domain.starts_with('.') {
        cookie = cookie.domain(host.to_owned());
    }
    if expiry != 0 {
        let at = cookie::time::OffsetDateTime::from_unix_timestamp(expiry)
            .map_err(|_| format!("the expiry {expiry} is out of range"))?;
        cookie = cookie.expires(at);
    }
    Ok(Some((cookie.build(), url)))
}

/// A login form: the fields posted, `application/x-www-form-urlencoded`,
/// to its URL. Secret fields (passwords, tokens) print as `***`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginForm {
    /// Where the form is posted.
    pub url: Url,
    /// Its fields, in order.
    pub fields: Vec<FormField>,
}

/// One field of a [`LoginForm`].
#[derive(Clone, PartialEq, Eq)]
pub struct FormField {
    /// The field's name.
    pub name: String,
    /// Its value.
    pub value: String,
    /// Whether the value is a secret: never printed.
    pub secret: bool,
}

impl fmt::Debug for FormField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let value: &dyn fmt::Debug = if self.secret { &"***" } else { &self.value };
        f.debug_struct("FormField")
            .field("name", &self.name)
            .field("value", value)
            .finish()
    }
}

impl LoginForm {
    /// The form's body, URL-encoded.
    pub fn body(&self) -> String {
        let mut body = url::form_urlencoded::Serializer::new(String::new());
        for field in &self.fields {
            body.append_pair(&field.name, &field.value);
        }
        body.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    /// The cookies `jar` sends to `to`, sorted.
    fn sent(jar: &Jar, to: &str) -> Vec<String> {
        let mut sent: Vec<String> = jar
            .header(&url(to))
            .unwrap_or_default()
            .split("; ")
            .map(str::to_owned)
            .collect();
        sent.sort();
        sent
    }

    const NOW: u64 = 1_800_000_000;

    fn now() -> SystemTime {
        SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(NOW)
    }

    #[test]
    fn cookies_txt_lines_become_cookies_by_their_domain_path_and_secure_flags() {
        let text = "# Netscape HTTP Cookie File\n\
            \n\
            .shop.example\tTRUE\t/\tFALSE\t0\tsid\tabc\n\
            #HttpOnly_shop.example\tFALSE\t/account\tTRUE\t1900000000\ttoken\tt0k\r\n\
            shop.example\tFALSE\t/\tFALSE\t1700000000\told\tgone\n\
            other.example\tFALSE\t/\tFALSE\t0\tx\t\n";
        let jar = Jar::new();
        let imported = jar
            .import_cookies_txt(text.as_bytes(), now())
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(
            imported,
            Imported {
                added: 3,
                expired: 1,
                skipped: Vec::new(),
                skipped_lines: 0,
            }
        );
        assert_eq!(jar.len(), 3);
        // A domain cookie reaches subdomains; the secure one only https
        // under its path.
        assert_eq!(
            jar.header(&url("http://www.shop.example/")).as_deref(),
            Some("sid=abc")
        );
        assert_eq!(
            sent(&jar, "https://shop.example/account/orders"),
            ["sid=abc", "token=t0k"]
        );
        assert_eq!(
            jar.header(&url("http://shop.example/account")).as_deref(),
            Some("sid=abc"),
            "a secure cookie is not sent over http"
        );
        assert_eq!(
            jar.header(&url("http://other.example/")).as_deref(),
            Some("x=")
        );
    }

    #[test]
    fn every_bad_cookies_txt_line_is_reported_by_number_and_nothing_is_imported() {
        let text = "shop.example\tFALSE\t/\tFALSE\t0\tgood\t1\n\
            shop.example\tFALSE\t/\tFALSE\t0\tshort\n\
            shop.example\tYES\t/\tFALSE\t0\ta\t1\n\
            shop.example\tFALSE\tnoslash\tFALSE\t0\ta\t1\n\
            shop.example\tFALSE\t/\tFALSE\tsoon\ta\t1\n\
            shop.example\tFALSE\t/\tFALSE\t0\t\t1\n\
            shop.example\tFALSE\t/\tFALSE\t0\tp\tsecret;value\n\
            \tFALSE\t/\tFALSE\t0\ta\t1\n";
        let jar = Jar::new();
        let Err(ImportError::Lines(errors)) = jar.import_cookies_txt(text.as_bytes(), now()) else {
            panic!("a file with bad lines was imported");
        };
        let lines: Vec<usize> = errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, [2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(
            errors[0].to_string(),
            "line 2: expected 7 tab-separated fields (domain, include-subdomains, path, \
             secure, expiry, name, value), found 6"
        );
        assert!(errors[1].message.contains("TRUE or FALSE, not `YES`"));
        assert!(errors[3].message.contains("Unix seconds"));
        assert!(
            !errors[5].message.contains("secret"),
            "a value is never shown: {}",
            errors[5]
        );
        assert!(
            jar.is_empty(),
            "nothing imported from a file with bad lines"
        );
    }

    #[test]
    fn a_cookie_for_another_domain_than_its_line_names_is_refused() {
        // Domain attribute and line domain agree by construction; an IP
        // literal with a domain flag is what the rules refuse.
        let jar = Jar::new();
        let errors =
            match jar.import_cookies_txt(&b"127.0.0.1\tTRUE\t/\tFALSE\t0\ta\t1\n"[..], now()) {
                Err(ImportError::Lines(errors)) => Some(errors),
                Err(other) => panic!("{other:?}"),
                Ok(_) => None,
            };
        // Either refused with a line number or kept host-only: never sent
        // to another host.
        if let Some(errors) = errors {
            assert_eq!(errors[0].line, 1);
        }
        assert_eq!(jar.header(&url("http://127.0.0.2/")), None);
    }

    #[test]
    fn a_cookie_goes_back_to_the_port_that_set_it_and_survives_the_store() {
        let jar = Jar::new();
        let mut headers = HeaderMap::new();
        headers.append(SET_COOKIE, HeaderValue::from_static("sid=one; Path=/"));
        jar.store(&headers, &url("http://127.0.0.1:19100/login"));
        assert_eq!(sent(&jar, "http://127.0.0.1:19100/x"), ["sid=one"]);
        assert_eq!(jar.header(&url("http://127.0.0.1:19103/x")), None);
        // Kept with the stored jar.
        let back = Jar::from_json(&jar.to_json().unwrap_or_else(|e| panic!("{e}")))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back.header(&url("http://127.0.0.1:19103/x")), None);
        assert_eq!(sent(&back, "http://127.0.0.1:19100/x"), ["sid=one"]);
        // The default ports count as one.
        let mut plain = HeaderMap::new();
        plain.append(SET_COOKIE, HeaderValue::from_static("pref=1; Path=/"));
        jar.store(&plain, &url("http://127.0.0.1/"));
        assert_eq!(sent(&jar, "https://127.0.0.1/x"), ["pref=1"]);
        assert_eq!(sent(&jar, "http://127.0.0.1:19103/x"), [""]);
        // A jar stored before ports were kept still reads, its cookies for
        // any port.
        let inner = jar.lock().store.clone();
        let mut legacy = Vec::new();
        cookie_store::serde::json::save_incl_expired_and_nonpersistent(&inner, &mut legacy)
            .unwrap_or_else(|e| panic!("{e}"));
        let old =
            Jar::from_json(&String::from_utf8_lossy(&legacy)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            sent(&old, "http://127.0.0.1:19103/x"),
            ["pref=1", "sid=one"]
        );
    }

    #[test]
    fn cookies_for_a_public_suffix_are_refused() {
        assert!(is_public_suffix("com") && is_public_suffix("co.uk"));
        assert!(!is_public_suffix("example.com") && !is_public_suffix("localhost"));
        let jar = Jar::new();
        let mut headers = HeaderMap::new();
        headers.append(SET_COOKIE, HeaderValue::from_static("wide=1; Domain=co.uk"));
        headers.append(
            SET_COOKIE,
            HeaderValue::from_static("own=1; Domain=shop.co.uk"),
        );
        jar.store(&headers, &url("http://shop.co.uk/"));
        assert_eq!(sent(&jar, "http://shop.co.uk/"), ["own=1"]);
        assert_eq!(jar.header(&url("http://bank.co.uk/")), None);

        let text = ".com\tTRUE\t/\tFALSE\t0\ta\t1\n\
            .co.uk\tTRUE\t/\tFALSE\t0\tb\t1\n\
            shop.example\tFALSE\t/\tFALSE\t0\tc\t1\n";
        let imported = Jar::new()
            .import_cookies_txt(text.as_bytes(), now())
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(imported.added, 1);
        let skipped: Vec<usize> = imported.skipped.iter().map(|e| e.line).collect();
        assert_eq!(skipped, [1, 2]);
        assert!(imported.skipped[0].message.contains("public suffix"));
    }

    #[test]
    fn a_cookies_txt_is_read_under_its_caps() {
        // Over the file cap: refused, read no further than the cap.
        let endless = std::io::Read::take(std::io::repeat(b'a'), MAX_COOKIES_TXT_BYTES + 10);
        let big = Jar::new().import_cookies_txt(std::io::BufReader::new(endless), now());
        assert!(matches!(big, Err(ImportError::TooLarge)), "{big:?}");
        // A long line and a large value are skipped; the rest imported.
        let text = format!(
            "{}\n\
             shop.example\tFALSE\t/\tFALSE\t0\tbig\t{}\n\
             shop.example\tFALSE\t/\tFALSE\t0\tok\t1\n",
            "x".repeat(MAX_COOKIE_LINE_BYTES * 3),
            "v".repeat(MAX_COOKIE_VALUE_BYTES)
        );
        let jar = Jar::new();
        let imported = jar
            .import_cookies_txt(text.as_bytes(), now())
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(imported.added, 1);
        let skipped: Vec<usize> = imported.skipped.iter().map(|e| e.line).collect();
        assert_eq!(skipped, [1, 2]);
        assert_eq!(sent(&jar, "http://shop.example/"), ["ok=1"]);
        // Past the most cookies a jar keeps: the rest skipped.
        let many: String = (0..MAX_COOKIES + 5)
            .map(|i| format!("s{}.example\tFALSE\t/\tFALSE\t0\tc{i}\t1\n", i % 100))
            .collect();
        let imported = Jar::new()
            .import_cookies_txt(many.as_bytes(), now())
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(imported.added, MAX_COOKIES);
        assert_eq!(imported.skipped_lines, 5);
        assert_eq!(imported.skipped.len(), 1, "{:?}", imported.skipped);
        assert_eq!(imported.skipped[0].line, MAX_COOKIES + 1);
        assert!(
            imported.skipped[0]
                .message
                .starts_with("5 cookie(s) past the 3000")
        );
    }

    #[test]
    fn set_cookie_feeds_the_jar_and_an_expired_one_deletes_its_cookie() {
        let jar = Jar::new();
        let at = url("http://shop.example/login");
        let mut headers = HeaderMap::new();
        headers.append(SET_COOKIE, HeaderValue::from_static("sid=one; Path=/"));
        headers.append(
            SET_COOKIE,
            HeaderValue::from_static("lang=en; Path=/; Max-Age=3600"),
        );
        headers.append(
            SET_COOKIE,
            HeaderValue::from_static("evil=1; Domain=other.example"),
        );
        headers.append(SET_COOKIE, HeaderValue::from_static("sec=1; Secure"));
        jar.store(&headers, &at);
        let page = url("http://shop.example/account");
        assert_eq!(sent(&jar, page.as_str()), ["lang=en", "sid=one"]);
        assert_eq!(jar.header(&url("http://other.example/")), None);

        // Stored and read back: the session cookies survive (the secure
        // one too, sent only over https).
        let json = jar.to_json().unwrap_or_else(|e| panic!("{e}"));
        let back = Jar::from_json(&json).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back.len(), 3);
        assert!(
            back.header(&url("https://shop.example/"))
                .is_some_and(|h| h.contains("sec=1"))
        );
        assert!(back.header(&page).is_some_and(|h| h.contains("sid=one")));

        let mut gone = HeaderMap::new();
        gone.append(
            SET_COOKIE,
            HeaderValue::from_static("sid=; Path=/; Max-Age=0"),
        );
        back.store(&gone, &at);
        assert_eq!(back.header(&page).as_deref(), Some("lang=en"));
        let reread = Jar::from_json(&back.to_json().unwrap_or_else(|e| panic!("{e}")))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(reread.len(), 2);
    }

    #[test]
    fn a_jar_and_a_login_form_never_print_their_secrets() {
        let jar = Jar::new();
        let mut headers = HeaderMap::new();
        headers.append(SET_COOKIE, HeaderValue::from_static("sid=hunter2cookie"));
        jar.store(&headers, &url("http://shop.example/"));
        assert_eq!(format!("{jar:?}"), "Jar(1 cookies)");
        let form = LoginForm {
            url: url("http://shop.example/login"),
            fields: vec![
                FormField {
                    name: "user".into(),
                    value: "ann".into(),
                    secret: false,
                },
                FormField {
                    name: "password".into(),
                    value: "hunter2".into(),
                    secret: true,
                },
            ],
        };
        let shown = format!("{form:?} {form:#?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("ann") && shown.contains("***"), "{shown}");
        assert_eq!(form.body(), "user=ann&password=hunter2");
    }

    #[test]
    fn a_jar_keeps_at_most_its_bounds_per_domain_and_in_all_evicting_the_flooding_site() {
        let jar = Jar::new();
        // A real session on one site: a session cookie and a persistent one.
        let mut login = HeaderMap::new();
        login.append(SET_COOKIE, HeaderValue::from_static("sid=real; Path=/"));
        login.append(
            SET_COOKIE,
            HeaderValue::from_static("pref=1; Path=/; Max-Age=86400"),
        );
        jar.store(&login, &url("http://shop.example/"));
        // A hostile site sets cookies without end, one response at a time.
        let hostile = url("http://flood.example/");
        for i in 0..(MAX_COOKIES_PER_DOMAIN + 50) {
            let mut headers = HeaderMap::new();
            let value = format!("c{i}=x; Path=/; Max-Age={}", 1000 + i);
            headers.append(
                SET_COOKIE,
                HeaderValue::from_str(&value).unwrap_or_else(|e| panic!("{e}")),
            );
            jar.store(&headers, &hostile);
        }
        assert_eq!(jar.len(), MAX_COOKIES_PER_DOMAIN + 2);
        // The soonest to expire went; the latest stayed; the other site's
        // session is untouched.
        let header = jar.header(&hostile).unwrap_or_default();
        assert!(
            !header.contains("c0=") && header.contains("c229="),
            "{header}"
        );
        assert_eq!(header.split("; ").count(), MAX_COOKIES_PER_DOMAIN);
        assert_eq!(sent(&jar, "http://shop.example/"), ["pref=1", "sid=real"]);

        // Over the total, the domain with the most cookies gives them up.
        let mut inner = jar.lock();
        evict(&mut inner.store, MAX_COOKIES_PER_DOMAIN, 10);
        drop(inner);
        assert_eq!(jar.len(), 10);
        assert_eq!(sent(&jar, "http://shop.example/"), ["pref=1", "sid=real"]);
        // And the bound holds in what is stored.
        let back = Jar::from_json(&jar.to_json().unwrap_or_else(|e| panic!("{e}")))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back.len(), 10);
    }

    #[test]
    fn cookies_a_browser_changed_deleted_or_set_are_taken_back_and_others_left_alone() {
        let jar = Jar::new();
        let mut headers = HeaderMap::new();
        headers.append(SET_COOKIE, HeaderValue::from_static("sid=one; Path=/"));
        headers.append(SET_COOKIE, HeaderValue::from_static("old=1; Path=/"));
        headers.append(
            SET_COOKIE,
            HeaderValue::from_static("wide=1; Path=/; Domain=shop.example"),
        );
        jar.store(&headers, &url("http://shop.example/"));
        let given = jar.browser_cookies();
        assert_eq!(given.len(), 3);
        let wide = given.iter().find(|c| c.name == "wide");
        assert!(wide.is_some_and(|c| !c.host_only && c.domain == "shop.example"));
        // Meanwhile another check of the session got a cookie.
        let mut other = HeaderMap::new();
        other.append(SET_COOKIE, HeaderValue::from_static("lang=en; Path=/"));
        jar.store(&other, &url("http://shop.example/"));
        // The page changed sid, deleted old, set theme.
        let mut after: Vec<BrowserCookie> = given
            .iter()
            .filter(|c| c.name != "old")
            .cloned()
            .map(|mut c| {
                if c.name == "sid" {
                    c.value = "two".into();
                }
                c
            })
            .collect();
        after.push(BrowserCookie {
            name: "theme".into(),
            value: "dark".into(),
            domain: "shop.example".into(),
            host_only: true,
            path: "/".into(),
            secure: false,
            http_only: false,
            expires: Some(4_000_000_000),
        });
        jar.take_from_browser(&given, &after);
        assert_eq!(
            sent(&jar, "http://shop.example/"),
            ["lang=en", "sid=two", "theme=dark", "wide=1"]
        );
        assert_eq!(
            jar.header(&url("http://www.shop.example/")).as_deref(),
            Some("wide=1")
        );
        assert!(!format!("{:?}", after[0]).contains("two"));
    }

    #[test]
    fn a_damaged_stored_jar_is_an_error_not_a_panic() {
        assert!(Jar::from_json("{not json").is_err());
        let empty = Jar::new().to_json().unwrap_or_else(|e| panic!("{e}"));
        assert!(Jar::from_json(&empty).is_ok_and(|j| j.is_empty()));
    }
}
