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
//! - **No public-suffix list.** A jar serves the watches of one named
//!   session, normally of one site; the list would have to be loaded at
//!   run time. A site that sets a cookie for a whole public suffix only
//!   reaches the other hosts its own session's watches fetch.
//! - **Cookie values never reach a log.** [`Jar`]'s `Debug` prints the
//!   number of cookies; cookies are inserted one by one rather than through
//!   `cookie_store`'s `store_response_cookies`, which logs them at debug
//!   level; errors name lines and cookie names, never values.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use cookie_store::{CookieStore, RawCookie};
use reqwest::header::{HeaderMap, SET_COOKIE};
use url::Url;

/// The most cookies a jar keeps for one domain (or host), as browsers do
/// (Chromium: 180; RFC 6265 asks for at least 50).
pub const MAX_COOKIES_PER_DOMAIN: usize = 180;

/// The most cookies a jar keeps in all (Chromium: 3300).
pub const MAX_COOKIES: usize = 3000;

/// A session's cookie jar, shared by the requests of one check (and the
/// checks of one session). Cloning shares the jar.
#[derive(Clone, Default)]
pub struct Jar(Arc<Mutex<CookieStore>>);

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

    fn lock(&self) -> MutexGuard<'_, CookieStore> {
        // A panic while holding the lock leaves a jar that is still a jar.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A jar read back from [`Jar::to_json`]; expired cookies are dropped.
    pub fn from_json(json: &str) -> Result<Jar, JarError> {
        cookie_store::serde::json::load(json.as_bytes())
            .map(|store| Jar(Arc::new(Mutex::new(store))))
            .map_err(JarError)
    }

    /// The jar as JSON: its unexpired cookies, session cookies included.
    pub fn to_json(&self) -> Result<String, JarError> {
        let store = self.lock();
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
        String::from_utf8(out).map_err(|e| JarError(Box::new(e)))
    }

    /// The unexpired cookies in the jar.
    pub fn len(&self) -> usize {
        self.lock().iter_unexpired().count()
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
    /// that match its host, path and scheme, or `None`.
    pub fn header(&self, url: &Url) -> Option<String> {
        let store = self.lock();
        let pairs: Vec<String> = store
            .get_request_values(url)
            .map(|(name, value)| format!("{name}={value}"))
            .collect();
        (!pairs.is_empty()).then(|| pairs.join("; "))
    }

    /// Keeps the `Set-Cookie`s of a response from `url`. A header that is
    /// not a cookie, or a cookie the rules refuse (another site's domain),
    /// is left out; a `Secure` cookie is kept but sent only over https.
    pub fn store(&self, headers: &HeaderMap, url: &Url) {
        let mut store = self.lock();
        for value in headers.get_all(SET_COOKIE) {
            let Ok(text) = value.to_str() else { continue };
            let Ok(cookie) = RawCookie::parse(text.to_owned()) else {
                continue;
            };
            if let Err(error) = store.insert_raw(&cookie, url) {
                tracing::debug!(%url, cookie = cookie.name(), %error, "cookie refused");
            }
        }
        evict(&mut store, MAX_COOKIES_PER_DOMAIN, MAX_COOKIES);
    }

    /// Adds the cookies of a Netscape `cookies.txt` (as browsers' export
    /// extensions and curl write it). Nothing is added unless every line
    /// reads; the errors name their lines. Returns the cookies added and
    /// those left out as already expired at `now`.
    pub fn import_cookies_txt(
        &self,
        text: &str,
        now: SystemTime,
    ) -> Result<Imported, Vec<LineError>> {
        let parsed = parse_cookies_txt(text, now)?;
        let mut store = self.lock();
        let mut scratch = store.clone();
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
            return Err(errors);
        }
        *store = scratch;
        evict(&mut store, MAX_COOKIES_PER_DOMAIN, MAX_COOKIES);
        Ok(Imported {
            added: parsed.cookies.len(),
            expired: parsed.expired,
        })
    }
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
        let store = self.lock();
        store
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
        let mut store = self.lock();
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
                tracing::debug!(%url, cookie = %cookie.name, %error, "cookie refused");
            }
        }
        evict(&mut store, MAX_COOKIES_PER_DOMAIN, MAX_COOKIES);
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Imported {
    /// Cookies added (or replacing one of the same domain, path and name).
    pub added: usize,
    /// Lines left out because their cookie had already expired.
    pub expired: usize,
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
}

/// The fields of a `cookies.txt` line, in order.
const FIELDS: &str = "domain, include-subdomains, path, secure, expiry, name, value";

/// Reads a Netscape `cookies.txt`: one cookie a line, seven fields
/// separated by tabs (domain, include-subdomains `TRUE`/`FALSE`, path,
/// secure `TRUE`/`FALSE`, expiry in Unix seconds with `0` for a session
/// cookie, name, value). Blank lines and `#` comments are skipped, except
/// the `#HttpOnly_` prefix curl and browsers write before the domain of an
/// HTTP-only cookie. Every bad line is reported.
fn parse_cookies_txt(text: &str, now: SystemTime) -> Result<Parsed, Vec<LineError>> {
    let now = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    let mut out = Parsed {
        cookies: Vec::new(),
        expired: 0,
    };
    let mut errors = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let (raw, http_only) = match raw.strip_prefix("#HttpOnly_") {
            Some(rest) => (rest, true),
            None => (raw, false),
        };
        if raw.trim().is_empty() || raw.starts_with('#') {
            continue;
        }
        match cookie_line(raw, http_only, now) {
            Ok(Some((cookie, url))) => out.cookies.push((line, cookie, url)),
            Ok(None) => out.expired += 1,
            Err(message) => errors.push(LineError { line, message }),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
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
            .import_cookies_txt(text, now())
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(
            imported,
            Imported {
                added: 3,
                expired: 1
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
        let Err(errors) = jar.import_cookies_txt(text, now()) else {
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
        let errors = jar
            .import_cookies_txt("127.0.0.1\tTRUE\t/\tFALSE\t0\ta\t1\n", now())
            .err();
        // Either refused with a line number or kept host-only: never sent
        // to another host.
        if let Some(errors) = errors {
            assert_eq!(errors[0].line, 1);
        }
        assert_eq!(jar.header(&url("http://127.0.0.2/")), None);
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
        let mut store = jar.lock();
        evict(&mut store, MAX_COOKIES_PER_DOMAIN, 10);
        drop(store);
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
