//! Fetching watched pages politely: conditional GET, per-watch headers,
//! cookies and credentials, retries with exponential backoff on transient
//! failures only, a per-host limit on concurrent requests and a minimum
//! spacing between request starts to one host, and one shared HTTP client
//! per distinct set of client options.
//!
//! Every fetch goes through the daemon's fence ([`crate::page::fence`]): redirects
//! are followed here, hop by hop, not by the HTTP client, so that each hop
//! is judged on its own. A hop to the watch's own host and port, to a public
//! literal address or to an admitted host goes out on an open client; a hop
//! to any other host name goes out on a *fenced* client, whose resolver
//! connects only to addresses the fence admits. The watch's credentials,
//! cookies and headers are dropped from the first hop that changes origin
//! (scheme, host or port) on, as browsers drop credentials; a watch may
//! let its headers (never its credentials) follow with
//! `headers_cross_origin`. The session jar's cookies go wherever its rules
//! send them. The redirect limit and the whole-request timeout cover the
//! whole chain.
//!
//! `file://` URLs are read from disk (under the same size cap), only under
//! the fence's file roots and only from regular files.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use reqwest::StatusCode;
use reqwest::header::{
    AUTHORIZATION, CONTENT_TYPE, COOKIE, IF_MODIFIED_SINCE, IF_NONE_MATCH, LOCATION,
    PROXY_AUTHORIZATION, WWW_AUTHENTICATE,
};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use url::{Host, Url};

use crate::page::blocked::Blocked;
use crate::page::fence::{
    self, Fence, FenceError, FencedRead, FencedResolver, ResolverRefusal, Route,
};
use crate::page::session::{Jar, LoginForm};
use crate::page::source::{self, FetchOptions, HttpFetched, RawPage, SourceError};
use crate::sync::lock;

/// Credentials for a request.
#[derive(Clone)]
pub enum Credentials {
    /// HTTP basic authentication.
    Basic {
        /// The user name.
        username: String,
        /// The password.
        password: String,
    },
    /// A bearer token.
    Bearer(String),
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::Basic { username, .. } => write!(f, "Basic({username}, ***)"),
            Credentials::Bearer(_) => f.write_str("Bearer(***)"),
        }
    }
}

/// One page to fetch.
#[derive(Debug, Clone)]
pub struct PageRequest {
    /// The page.
    pub url: Url,
    /// Size cap, timeouts, redirects, proxy.
    pub opts: FetchOptions,
    /// Extra attempts after a transient failure.
    pub retries: u32,
    /// Extra request headers (validated names and values), sent to the
    /// page's origin only, unless [`PageRequest::headers_cross_origin`].
    pub headers: Vec<(String, String)>,
    /// Whether [`PageRequest::headers`] also go to other origins a
    /// redirect leads to (never those that carry credentials).
    pub headers_cross_origin: bool,
    /// Cookies sent as one `Cookie` header.
    pub cookies: Vec<(String, String)>,
    /// The session's cookie jar: its cookies that match each hop are sent
    /// (after [`PageRequest::cookies`]) and each hop's `Set-Cookie`s kept.
    pub jar: Option<Jar>,
    /// Credentials.
    pub credentials: Option<Credentials>,
    /// The stored `ETag`, sent as `If-None-Match`.
    pub etag: Option<String>,
    /// The stored `Last-Modified`, sent as `If-Modified-Since`.
    pub last_modified: Option<String>,
}

/// What a fetch got.
#[derive(Debug)]
pub enum Fetched {
    /// 304: the page is as it was; nothing to parse.
    NotModified,
    /// The page.
    Page {
        /// The bytes and what is known about them.
        page: RawPage,
        /// Its `ETag`.
        etag: Option<String>,
        /// Its `Last-Modified`.
        last_modified: Option<String>,
    },
}

/// Whether retrying can help: connection failures, timeouts, 408, 429 and
/// 5xx. A too-large page, a redirect loop, other 4xx, local file errors
/// and blocks ([`SourceError::Blocked`]: retrying a bot wall at once only
/// deepens it) are not retried.
pub fn is_transient(error: &SourceError) -> bool {
    match error {
        SourceError::Fetch { .. } | SourceError::Timeout { .. } => true,
        SourceError::Status { status, .. } => {
            status.is_server_error()
                || *status == StatusCode::TOO_MANY_REQUESTS
                || *status == StatusCode::REQUEST_TIMEOUT
        }
        _ => false,
    }
}

/// The delay before retry `attempt` (1-based): 1 s, 2 s, 4 s, ... capped at
/// one minute, plus up to 25% random jitter so that many watches failing
/// together do not retry in lockstep.
pub fn backoff(attempt: u32, base: Duration) -> Duration {
    let factor = 1u32 << attempt.saturating_sub(1).min(16);
    let delay = base.saturating_mul(factor).min(Duration::from_secs(60));
    let jitter = delay.mul_f64(rand::random::<f64>() * 0.25);
    delay + jitter
}

/// A host's politeness kept where other processes see it too (replicas
/// on one database): request starts reserved at least `spacing` after
/// every one before them, and at most `per_host` requests in flight,
/// whichever process makes them.
pub trait SharedHosts: Send + Sync + std::fmt::Debug {
    /// Reserves a start to `host`; resolves to when the request may start,
    /// or `None` when no reservation could be made (the caller goes on
    /// with its own spacing only).
    fn reserve<'a>(
        &'a self,
        host: &'a str,
        spacing: Duration,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Option<SystemTime>> + Send + 'a>>;

    /// Takes one of `host`'s `per_host` request slots until `until` (the
    /// latest the request may still run), for the request `waiter`: first
    /// come, first served among the requests that wait (`waiter.queued`:
    /// every ask after its first).
    fn take_slot<'a>(
        &'a self,
        host: &'a str,
        per_host: usize,
        until: SystemTime,
        waiter: &'a Waiter,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = SlotTake> + Send + 'a>>;

    /// Takes a request that queued out of `host`'s queue (it got its slot
    /// or gave up); from a drop too, so it sends the work off.
    fn leave_queue(&self, host: &str, ticket: &str);

    /// Gives back a slot [`SharedHosts::take_slot`] gave; called when the
    /// request ends (from a drop: it may not wait, so it sends the work
    /// off). A slot not given back is free again at its `until`.
    fn give_back(&self, host: &str, slot: i64);
}

/// A request asking for a shared host slot.
#[derive(Debug, Clone)]
pub struct Waiter {
    /// Unique among all requests of all processes (random).
    pub ticket: String,
    /// When it began to wait.
    pub since: SystemTime,
    /// Whether it queues: noted among the waiters, after a first ask that
    /// found no slot it could take.
    pub queued: bool,
}

/// A request asking for a shared slot; when it drops (it got its slot,
/// gave up, or its wait was cancelled), it leaves its host's queue if it
/// queued.
struct Asking<'a> {
    shared: &'a dyn SharedHosts,
    host: &'a str,
    waiter: Waiter,
}

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        if self.waiter.queued {
            self.shared.leave_queue(self.host, &self.waiter.ticket);
        }
    }
}

/// The answer to [`SharedHosts::take_slot`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotTake {
    /// This slot is the caller's.
    Taken(i64),
    /// Every slot is taken: ask again a little later.
    Full,
    /// The shared count cannot be reached: the caller goes on with its
    /// own count only (and the implementation logs why).
    Unavailable,
}

/// How long a request waiting for a shared slot waits before asking
/// again, plus up to half as much again at random. The order in which
/// waiting requests get slots is kept by [`SharedHosts`] (first come,
/// first served), not by who asks first.
const SLOT_POLL: Duration = Duration::from_millis(100);
/// How long after its request's deadline a shared slot that was never
/// given back is free again (the request's process died, or its give-back
/// failed).
pub const SLOT_MARGIN: Duration = Duration::from_secs(5);

/// A request's place on a host: its slot in this process and, with
/// [`SharedHosts`], its slot among all processes; both are given back
/// when it drops.
#[derive(Debug)]
pub struct HostPermit {
    _local: OwnedSemaphorePermit,
    shared: Option<(Arc<dyn SharedHosts>, String, i64)>,
}

impl Drop for HostPermit {
    fn drop(&mut self) {
        if let Some((shared, host, slot)) = self.shared.take() {
            shared.give_back(&host, slot);
        }
    }
}

/// Per-host politeness: at most `per_host` requests in flight to one host,
/// and request starts to one host at least `spacing` apart; with
/// [`SharedHosts`], both hold across processes too (each request first
/// waits for its place here, then for a slot there, then for its spacing
/// here and its reserved start there).
#[derive(Debug)]
pub struct HostLimiter {
    per_host: usize,
    spacing: Duration,
    hosts: Mutex<HashMap<String, Arc<HostSlot>>>,
    shared: Option<Arc<dyn SharedHosts>>,
}

#[derive(Debug)]
struct HostSlot {
    permits: Arc<Semaphore>,
    /// When the next request may start: the spacing after the last start
    /// reserved, or the end of a hold, whichever is later.
    next_start: tokio::sync::Mutex<Instant>,
    /// The end of the host's own hold (a `Retry-After`), kept apart from
    /// `next_start`: a queue of our own requests waiting out the spacing
    /// is not the host asking to be left alone, and must not make a
    /// check fail as blocked.
    held_until: std::sync::Mutex<Option<Instant>>,
}

impl HostLimiter {
    /// A limiter; `per_host` is at least 1.
    pub fn new(per_host: usize, spacing: Duration) -> HostLimiter {
        HostLimiter {
            per_host: per_host.max(1),
            spacing,
            hosts: Mutex::new(HashMap::new()),
            shared: None,
        }
    }

    /// The limiter, its spacing and its count of requests in flight also
    /// kept through `shared`.
    pub fn with_shared(mut self, shared: Arc<dyn SharedHosts>) -> HostLimiter {
        self.shared = Some(shared);
        self
    }

    /// Waits for a place on `host` (here and, with [`SharedHosts`], among
    /// all processes) and for its spacing; the request may start when
    /// this returns and holds its place until the permit drops. `timeout`
    /// is the request's deadline: a shared slot not given back (its
    /// process died) is free again [`SLOT_MARGIN`] after it and the
    /// longest the spacing may make the request wait.
    pub async fn acquire(&self, host: &str, timeout: Duration) -> Option<HostPermit> {
        // A shared slot is held through the spacing waits too: while it is
        // held, at most `per_host` requests (all holding slots) have
        // reserved starts before this one, here and in the database, so the
        // waits come to at most twice `per_host` spacings.
        let spacing_waits = self.spacing.saturating_mul(
            u32::try_from(self.per_host)
                .unwrap_or(u32::MAX)
                .saturating_mul(2),
        );
        let hold_for = timeout
            .saturating_add(spacing_waits)
            .saturating_add(SLOT_MARGIN);
        let slot = self.slot(host);
        let local = Arc::clone(&slot.permits).acquire_owned().await.ok()?;
        let mut permit = HostPermit {
            _local: local,
            shared: None,
        };
        if let Some(shared) = &self.shared {
            let mut asking = Asking {
                shared: shared.as_ref(),
                host,
                waiter: Waiter {
                    ticket: format!("{:016x}", rand::random::<u64>()),
                    since: SystemTime::now(),
                    queued: false,
                },
            };
            loop {
                let until = SystemTime::now() + hold_for;
                match shared
                    .take_slot(host, self.per_host, until, &asking.waiter)
                    .await
                {
                    SlotTake::Taken(n) => {
                        permit.shared = Some((Arc::clone(shared), host.to_owned(), n));
                        break;
                    }
                    SlotTake::Unavailable => break,
                    SlotTake::Full => {
                        asking.waiter.queued = true;
                        let jitter = SLOT_POLL.mul_f64(rand::random::<f64>() * 0.5);
                        tokio::time::sleep(SLOT_POLL + jitter).await;
                    }
                }
            }
        }
        let start = {
            let mut next = slot.next_start.lock().await;
            let start = (*next).max(Instant::now());
            *next = start + self.spacing;
            start
        };
        tokio::time::sleep_until(start).await;
        if let Some(shared) = self.shared.as_ref().filter(|_| !self.spacing.is_zero())
            && let Some(at) = shared.reserve(host, self.spacing).await
            && let Ok(wait) = at.duration_since(SystemTime::now())
        {
            tokio::time::sleep(wait).await;
        }
        Some(permit)
    }

    /// No request to `host` starts before `until` (a `Retry-After`).
    pub async fn hold(&self, host: &str, until: Instant) {
        let slot = self.slot(host);
        {
            let mut held = lock(&slot.held_until);
            if held.is_none_or(|h| h < until) {
                *held = Some(until);
            }
        }
        let mut next = slot.next_start.lock().await;
        if *next < until {
            *next = until;
        }
    }

    /// How much longer `host` asked to be left alone ([`hold`]), if it
    /// still is; waits for our own spacing do not count.
    ///
    /// [`hold`]: HostLimiter::hold
    pub async fn held(&self, host: &str) -> Option<Duration> {
        let slot = self.slot(host);
        let until = *lock(&slot.held_until);
        until?
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
    }

    fn slot(&self, host: &str) -> Arc<HostSlot> {
        let mut hosts = lock(&self.hosts);
        Arc::clone(hosts.entry(host.to_owned()).or_insert_with(|| {
            Arc::new(HostSlot {
                permits: Arc::new(Semaphore::new(self.per_host)),
                next_start: tokio::sync::Mutex::new(Instant::now()),
                held_until: std::sync::Mutex::new(None),
            })
        }))
    }
}

/// Shared HTTP clients, one per distinct client options (connect timeout,
/// redirect limit, proxy) and [`Route`]: thousands of watches share a few
/// connection pools. They hold the daemon's [`Fence`].
#[derive(Debug)]
pub struct Clients {
    fence: Arc<Fence>,
    clients: Mutex<HashMap<(ClientKey, Route), reqwest::Client>>,
}

/// What sets one client apart: connect timeout, redirect limit, proxy.
type ClientKey = (Duration, usize, Option<String>);

impl Clients {
    /// No clients yet, fetching within `fence`.
    pub fn new(fence: Arc<Fence>) -> Clients {
        Clients {
            fence,
            clients: Mutex::new(HashMap::new()),
        }
    }

    /// The fence the fetches keep to.
    pub fn fence(&self) -> &Fence {
        &self.fence
    }

    /// The client for `opts` on `route`, built on first use. None follows
    /// redirects by itself; a fenced one resolves through
    /// [`FencedResolver`].
    pub fn get(&self, opts: &FetchOptions, route: Route) -> Result<reqwest::Client, SourceError> {
        let key = (
            (opts.connect_timeout, opts.max_redirects, opts.proxy.clone()),
            route,
        );
        let mut clients = lock(&self.clients);
        if let Some(client) = clients.get(&key) {
            return Ok(client.clone());
        }
        let mut builder = source::client_builder(opts)?.redirect(reqwest::redirect::Policy::none());
        if route == Route::Fenced {
            builder = builder.dns_resolver(FencedResolver::new(
                Arc::clone(&self.fence),
                proxy_hosts(opts),
            ));
        }
        let client = builder
            .build()
            .map_err(|source| SourceError::Client { source })?;
        clients.insert(key, client.clone());
        Ok(client)
    }
}

/// The hosts of the proxies requests may go through: `opts.proxy` and the
/// standard environment variables reqwest reads.
fn proxy_hosts(opts: &FetchOptions) -> Vec<String> {
    let from_env = [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
    ]
    .into_iter()
    .filter_map(|name| std::env::var(name).ok());
    opts.proxy
        .iter()
        .cloned()
        .chain(from_env)
        .filter_map(|proxy| {
            let proxy = proxy.trim();
            let url = if proxy.contains("://") {
                Url::parse(proxy)
            } else {
                Url::parse(&format!("http://{proxy}"))
            };
            url.ok()?.host_str().map(str::to_owned)
        })
        .collect()
}

/// A host that asked to be left alone for longer than a request may take
/// (`timeout`) is not waited for: the check fails now as blocked, freeing
/// its place for other hosts' watches, and no request goes out before the
/// time.
pub async fn refuse_if_held(
    limiter: &HostLimiter,
    url: &Url,
    timeout: Duration,
) -> Result<(), SourceError> {
    let host = url.host_str().unwrap_or_default();
    match limiter.held(host).await {
        Some(wait) if wait > timeout => Err(SourceError::Blocked {
            url: url.clone(),
            blocked: Box::new(Blocked {
                reason: format!("{host} asked to be left alone for {}s more", wait.as_secs()),
                retry_after: Some(wait),
            }),
        }),
        _ => Ok(()),
    }
}

/// Fetches `req`, retrying transient failures with [`backoff`], under the
/// host limiter. A `file://` URL is read from disk.
pub async fn fetch(
    clients: &Clients,
    limiter: &HostLimiter,
    req: &PageRequest,
) -> Result<Fetched, SourceError> {
    if req.url.scheme() == "file" {
        return read_file(&clients.fence, req).await;
    }
    let host = req.url.host_str().unwrap_or_default().to_owned();
    refuse_if_held(limiter, &req.url, req.opts.request_timeout).await?;
    let mut attempt = 0;
    loop {
        let result = {
            let _permit = limiter.acquire(&host, req.opts.request_timeout).await;
            follow(clients, req).await
        };
        if let Err(SourceError::Blocked { blocked, .. }) = &result
            && let Some(wait) = blocked.retry_after
        {
            limiter.hold(&host, Instant::now() + wait).await;
        }
        match result {
            Ok(HttpFetched::NotModified { .. }) => return Ok(Fetched::NotModified),
            Ok(HttpFetched::Page {
                page,
                etag,
                last_modified,
            }) => {
                return Ok(Fetched::Page {
                    page,
                    etag,
                    last_modified,
                });
            }
            Err(error) if attempt < req.retries && is_transient(&error) => {
                attempt += 1;
                let delay = backoff(attempt, Duration::from_secs(1));
                tracing::info!(url = %req.url, attempt, ?delay, error = %crate::ErrorChain(&error), "retrying");
                tokio::time::sleep(delay).await;
            }
            Err(error) => return Err(error),
        }
    }
}

/// Reads a `file://` watch's page through the fence, on a blocking thread.
async fn read_file(fence: &Arc<Fence>, req: &PageRequest) -> Result<Fetched, SourceError> {
    let path = req
        .url
        .to_file_path()
        .map_err(|()| SourceError::NotLocalFile {
            url: req.url.clone(),
        })?;
    let limit = req.opts.max_body_bytes;
    let (fence, at) = (Arc::clone(fence), path.clone());
    let read = tokio::task::spawn_blocking(move || fence.read_file(&at, limit))
        .await
        .unwrap_or_else(|join| Err(FencedRead::Io(std::io::Error::other(join.to_string()))));
    let bytes = match read {
        Ok(bytes) => bytes,
        Err(FencedRead::Fence(error)) => return Err(error.into()),
        Err(FencedRead::TooLarge) => return Err(SourceError::FileTooLarge { path, limit }),
        Err(FencedRead::Io(source)) => return Err(SourceError::Read { path, source }),
    };
    tracing::debug!(path = %path.display(), bytes = bytes.len(), "read file");
    Ok(Fetched::Page {
        page: RawPage {
            bytes,
            content_type: None,
            url: Some(req.url.clone()),
        },
        etag: None,
        last_modified: None,
    })
}

/// One attempt at `req`: the request, then each redirect the fence lets
/// through, up to the redirect limit, all within the request timeout.
async fn follow(clients: &Clients, req: &PageRequest) -> Result<HttpFetched, SourceError> {
    let opts = &req.opts;
    let deadline = std::time::Instant::now() + opts.request_timeout;
    let mut url = req.url.clone();
    let mut redirects = 0;
    let mut same_origin = true;
    loop {
        let route = clients.fence.route(&req.url, &url, redirects)?;
        if route == Route::Fenced && !proxy_hosts(opts).is_empty() {
            resolve_before_proxy(&clients.fence, &url, redirects).await?;
        }
        let client = clients.get(opts, route)?;
        let remaining = deadline.saturating_duration_since(std::time::Instant::now());
        let request = build(&client, req, &url, same_origin).timeout(remaining);
        tracing::debug!(%url, redirects, ?route, "fetching");
        let response = match request.send().await {
            Ok(response) => response,
            Err(error) => return Err(hop_error(url, redirects, opts, error)),
        };
        if let Some(jar) = &req.jar {
            jar.store(response.headers(), &url);
        }
        let location = response.headers().get(LOCATION);
        let redirect = matches!(response.status().as_u16(), 301 | 302 | 303 | 307 | 308);
        let (true, Some(location)) = (redirect, location) else {
            return source::read_response(response, opts).await;
        };
        let location = String::from_utf8_lossy(location.as_bytes()).into_owned();
        let Ok(next) = url.join(&location) else {
            return Err(SourceError::BadRedirect { url, location });
        };
        if redirects >= opts.max_redirects {
            return Err(SourceError::TooManyRedirects {
                url: req.url.clone(),
                limit: opts.max_redirects,
                source: None,
            });
        }
        if next.origin() != url.origin() {
            same_origin = false;
        }
        tracing::debug!(from = %url, to = %next, "redirected");
        redirects += 1;
        url = next;
    }
}

/// Through a proxy, the fenced resolver never sees the host name of
/// `url`: it is resolved here and refused when none of its addresses is
/// admitted (best effort: the proxy resolves it again). A name that does
/// not resolve here is left to the proxy.
async fn resolve_before_proxy(
    fence: &Fence,
    url: &Url,
    redirects: usize,
) -> Result<(), SourceError> {
    let Some(Host::Domain(name)) = url.host() else {
        return Ok(());
    };
    let Ok(found) = tokio::net::lookup_host((name, 0)).await else {
        return Ok(());
    };
    fence::admitted(fence, name, found)
        .map(|_| ())
        .map_err(|refusal| refused(url.clone(), redirects, &refusal))
}

/// The fence's refusal of `url`'s addresses.
fn refused(url: Url, redirects: usize, refusal: &ResolverRefusal) -> SourceError {
    SourceError::Fenced(FenceError::PrivateAddress {
        redirect: redirects > 0,
        url: Box::new(url),
        address: refusal.address,
        kind: refusal.kind,
    })
}

/// Sorts a failed request for `url`: the fenced resolver's refusal, or a
/// fetch error.
fn hop_error(
    url: Url,
    redirects: usize,
    opts: &FetchOptions,
    error: reqwest::Error,
) -> SourceError {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&error);
    while let Some(err) = cause {
        if let Some(refusal) = err.downcast_ref::<ResolverRefusal>() {
            return refused(url, redirects, refusal);
        }
        cause = err.source();
    }
    source::fetch_error(url, opts, error)
}

/// The request for `url` on `client`; the credentials, cookies and
/// headers only while `same_origin` (headers that carry no credential also
/// elsewhere when the watch allows it).
fn build(
    client: &reqwest::Client,
    req: &PageRequest,
    url: &Url,
    same_origin: bool,
) -> reqwest::RequestBuilder {
    let mut r = client.get(url.clone());
    let sensitive = [AUTHORIZATION, COOKIE, PROXY_AUTHORIZATION, WWW_AUTHENTICATE];
    for (name, value) in &req.headers {
        let credential = sensitive
            .iter()
            .any(|s| s.as_str().eq_ignore_ascii_case(name));
        if !same_origin && (credential || !req.headers_cross_origin) {
            continue;
        }
        r = r.header(name.as_str(), value.as_str());
    }
    // The watch's own cookies only on its host; the jar's wherever the
    // cookie rules send them.
    let own = req
        .cookies
        .iter()
        .filter(|_| same_origin)
        .map(|(n, v)| format!("{n}={v}"));
    let cookie = own
        .chain(req.jar.as_ref().and_then(|jar| jar.header(url)))
        .collect::<Vec<_>>()
        .join("; ");
    if !cookie.is_empty() {
        r = r.header(COOKIE, cookie);
    }
    match &req.credentials {
        Some(Credentials::Basic { username, password }) if same_origin => {
            r = r.basic_auth(username, Some(password));
        }
        Some(Credentials::Bearer(token)) if same_origin => r = r.bearer_auth(token),
        _ => {}
    }
    if let Some(etag) = &req.etag {
        r = r.header(IF_NONE_MATCH, etag.as_str());
    }
    if let Some(lm) = &req.last_modified {
        r = r.header(IF_MODIFIED_SINCE, lm.as_str());
    }
    r
}

/// Posts a login form with the jar's cookies, keeping the answer's
/// `Set-Cookie`s in the jar, under the host limiter and through the fence,
/// within `opts`' request timeout; no retry (a login is not repeated on its
/// own). A redirect is the usual answer to a login and is not followed:
/// the page is fetched again after it. An answer of 400 or above is an
/// error. Nothing of the form's fields reaches a log or an error.
pub async fn post_form(
    clients: &Clients,
    limiter: &HostLimiter,
    form: &LoginForm,
    jar: &Jar,
    opts: &FetchOptions,
) -> Result<StatusCode, SourceError> {
    let url = &form.url;
    let route = clients.fence.route(url, url, 0)?;
    if route == Route::Fenced && !proxy_hosts(opts).is_empty() {
        resolve_before_proxy(&clients.fence, url, 0).await?;
    }
    let client = clients.get(opts, route)?;
    let host = url.host_str().unwrap_or_default().to_owned();
    let _permit = limiter.acquire(&host, opts.request_timeout).await;
    let mut request = client
        .post(url.clone())
        .timeout(opts.request_timeout)
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(form.body());
    if let Some(cookie) = jar.header(url) {
        request = request.header(COOKIE, cookie);
    }
    tracing::debug!(%url, "posting the login form");
    let response = request
        .send()
        .await
        .map_err(|error| hop_error(url.clone(), 0, opts, error))?;
    jar.store(response.headers(), url);
    let status = response.status();
    if status.is_client_error() || status.is_server_error() {
        return Err(SourceError::Status {
            url: url.clone(),
            status,
        });
    }
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_is_capped() {
        let base = Duration::from_secs(1);
        for (attempt, secs) in [(1, 1), (2, 2), (3, 4), (10, 60), (40, 60)] {
            let d = backoff(attempt, base);
            let lo = Duration::from_secs(secs);
            assert!(d >= lo && d <= lo.mul_f64(1.25), "{attempt}: {d:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_held_host_waits_and_other_hosts_do_not() {
        let limiter = HostLimiter::new(4, Duration::ZERO);
        let t0 = Instant::now();
        assert_eq!(limiter.held("a.example").await, None);
        limiter.hold("a.example", t0 + Duration::from_secs(5)).await;
        // A shorter hold does not shorten it.
        limiter.hold("a.example", t0 + Duration::from_secs(1)).await;
        assert_eq!(
            limiter.held("a.example").await,
            Some(Duration::from_secs(5))
        );
        let _other = limiter.acquire("b.example", Duration::from_secs(1)).await;
        assert_eq!(t0.elapsed(), Duration::ZERO);
        let _p = limiter.acquire("a.example", Duration::from_secs(1)).await;
        assert_eq!(t0.elapsed(), Duration::from_secs(5));
        assert_eq!(limiter.held("a.example").await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_host_held_past_the_request_timeout_fails_at_once_as_blocked() {
        let clients = Clients::new(Arc::new(Fence::default()));
        let limiter = HostLimiter::new(1, Duration::ZERO);
        let url = Url::parse("http://held.example/page").unwrap_or_else(|e| panic!("{e}"));
        limiter
            .hold("held.example", Instant::now() + Duration::from_secs(600))
            .await;
        let req = PageRequest {
            url,
            opts: FetchOptions::default(),
            retries: 3,
            headers: Vec::new(),
            headers_cross_origin: false,
            cookies: Vec::new(),
            jar: None,
            credentials: None,
            etag: None,
            last_modified: None,
        };
        let t0 = Instant::now();
        let Err(SourceError::Blocked { blocked, .. }) = fetch(&clients, &limiter, &req).await
        else {
            panic!("not blocked");
        };
        assert_eq!(t0.elapsed(), Duration::ZERO);
        assert_eq!(blocked.retry_after, Some(Duration::from_secs(600)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_queue_behind_the_spacing_is_not_a_hold() {
        // Three requests reserved 2 s apart put the next start 6 s away,
        // but the host never asked for anything: a check with a 1 s
        // timeout waits its turn, it is not refused as blocked.
        let limiter = HostLimiter::new(4, Duration::from_secs(2));
        for _ in 0..3 {
            let _p = limiter.acquire("a.example", Duration::from_secs(1)).await;
        }
        assert_eq!(limiter.held("a.example").await, None);
        let url = Url::parse("http://a.example/page").unwrap_or_else(|e| panic!("{e}"));
        assert!(
            refuse_if_held(&limiter, &url, Duration::from_secs(1))
                .await
                .is_ok()
        );
        limiter
            .hold("a.example", Instant::now() + Duration::from_secs(30))
            .await;
        assert!(matches!(
            refuse_if_held(&limiter, &url, Duration::from_secs(1)).await,
            Err(SourceError::Blocked { .. })
        ));
    }

    /// Slots counted in memory, as the store counts them for replicas.
    #[derive(Debug, Default)]
    struct CountedSlots {
        taken: std::sync::Mutex<Vec<i64>>,
        asks: std::sync::atomic::AtomicUsize,
        tickets: std::sync::Mutex<Vec<String>>,
        left: std::sync::Mutex<Vec<String>>,
    }

    impl SharedHosts for CountedSlots {
        fn reserve<'a>(
            &'a self,
            _host: &'a str,
            _spacing: Duration,
        ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Option<SystemTime>> + Send + 'a>>
        {
            Box::pin(async { None })
        }

        fn take_slot<'a>(
            &'a self,
            _host: &'a str,
            per_host: usize,
            _until: SystemTime,
            waiter: &'a Waiter,
        ) -> std::pin::Pin<Box<dyn std::future::Future<Output = SlotTake> + Send + 'a>> {
            Box::pin(async move {
                let n = self.asks.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                assert_eq!(waiter.queued, n > 0, "queued from its second ask on");
                lock(&self.tickets).push(waiter.ticket.clone());
                let mut taken = lock(&self.taken);
                let free =
                    (0..i64::try_from(per_host).unwrap_or(i64::MAX)).find(|n| !taken.contains(n));
                match free {
                    Some(n) => {
                        taken.push(n);
                        SlotTake::Taken(n)
                    }
                    None => SlotTake::Full,
                }
            })
        }

        fn give_back(&self, _host: &str, slot: i64) {
            lock(&self.taken).retain(|&n| n != slot);
        }

        fn leave_queue(&self, _host: &str, ticket: &str) {
            lock(&self.left).push(ticket.to_owned());
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_waits_for_a_shared_slot_and_gives_it_back_when_it_ends() {
        let shared = Arc::new(CountedSlots::default());
        // Another process holds slot 0 of 1.
        lock(&shared.taken).push(0);
        let limiter = HostLimiter::new(1, Duration::ZERO)
            .with_shared(Arc::clone(&shared) as Arc<dyn SharedHosts>);
        let waiting = tokio::time::timeout(
            Duration::from_secs(2),
            limiter.acquire("a.example", Duration::from_secs(1)),
        )
        .await;
        assert!(waiting.is_err(), "no slot free among the processes");
        let asked = shared.asks.load(std::sync::atomic::Ordering::SeqCst);
        // Asked again every 100 to 150 ms.
        assert!((14..=21).contains(&asked), "{asked} asks in 2 s");
        // The other process gives its slot back: a new request takes it
        // at its first ask (not queued).
        shared.give_back("a.example", 0);
        shared.asks.store(0, std::sync::atomic::Ordering::SeqCst);
        let permit = limiter.acquire("a.example", Duration::from_secs(1)).await;
        assert!(permit.is_some());
        assert_eq!(*lock(&shared.taken), vec![0]);
        drop(permit);
        assert!(lock(&shared.taken).is_empty());
        // The first request, cancelled while it queued, left the queue
        // under its one ticket; the second never queued.
        let tickets = lock(&shared.tickets).clone();
        let left = lock(&shared.left).clone();
        assert_eq!(left.len(), 1, "{left:?}");
        assert!(
            tickets[..asked].iter().all(|t| *t == left[0]),
            "{tickets:?}"
        );
        assert_ne!(tickets[asked], left[0], "a new request, a new ticket");
    }

    #[tokio::test(start_paused = true)]
    async fn host_spacing_separates_request_starts() {
        let limiter = HostLimiter::new(4, Duration::from_secs(2));
        let t0 = Instant::now();
        let mut starts = Vec::new();
        for _ in 0..3 {
            let _p = limiter.acquire("a.example", Duration::from_secs(1)).await;
            starts.push(t0.elapsed());
        }
        let _other = limiter.acquire("b.example", Duration::from_secs(1)).await;
        assert_eq!(
            starts,
            vec![
                Duration::ZERO,
                Duration::from_secs(2),
                Duration::from_secs(4)
            ]
        );
        assert_eq!(
            t0.elapsed(),
            Duration::from_secs(4),
            "another host waits for nothing"
        );
    }

    #[tokio::test]
    async fn per_host_limits_requests_in_flight() {
        let limiter = HostLimiter::new(2, Duration::ZERO);
        let a = limiter.acquire("h", Duration::from_secs(1)).await;
        let b = limiter.acquire("h", Duration::from_secs(1)).await;
        let third = tokio::time::timeout(
            Duration::from_millis(50),
            limiter.acquire("h", Duration::from_secs(1)),
        )
        .await;
        assert!(third.is_err(), "a third request waits");
        drop(a);
        let third = tokio::time::timeout(
            Duration::from_millis(500),
            limiter.acquire("h", Duration::from_secs(1)),
        )
        .await;
        assert!(third.is_ok());
        drop(b);
    }
}
