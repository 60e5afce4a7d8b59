//! Fetching watched pages politely: conditional GET, per-watch headers,
//! cookies and credentials, retries with exponential backoff on transient
//! failures only, a per-host limit on concurrent requests and a minimum
//! spacing between request starts to one host, and one shared HTTP client
//! per distinct set of client options.
//!
//! `file://` URLs are read from disk (under the same size cap).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{COOKIE, IF_MODIFIED_SINCE, IF_NONE_MATCH};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use url::Url;

use crate::source::{self, FetchOptions, HttpFetched, RawPage, SourceError};

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
    /// Extra request headers (validated names and values).
    pub headers: Vec<(String, String)>,
    /// Cookies sent as one `Cookie` header.
    pub cookies: Vec<(String, String)>,
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
/// 5xx. A too-large page, a redirect loop, other 4xx and local file errors
/// are not retried.
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

/// Per-host politeness: at most `per_host` requests in flight to one host,
/// and request starts to one host at least `spacing` apart.
#[derive(Debug)]
pub struct HostLimiter {
    per_host: usize,
    spacing: Duration,
    hosts: Mutex<HashMap<String, Arc<HostSlot>>>,
}

#[derive(Debug)]
struct HostSlot {
    permits: Arc<Semaphore>,
    next_start: tokio::sync::Mutex<Instant>,
}

impl HostLimiter {
    /// A limiter; `per_host` is at least 1.
    pub fn new(per_host: usize, spacing: Duration) -> HostLimiter {
        HostLimiter {
            per_host: per_host.max(1),
            spacing,
            hosts: Mutex::new(HashMap::new()),
        }
    }

    /// Waits for a slot on `host` and for its spacing; the request may
    /// start when this returns and holds the slot until the permit drops.
    pub async fn acquire(&self, host: &str) -> Option<OwnedSemaphorePermit> {
        let slot = {
            let mut hosts = self.hosts.lock().unwrap_or_else(|p| p.into_inner());
            Arc::clone(hosts.entry(host.to_owned()).or_insert_with(|| {
                Arc::new(HostSlot {
                    permits: Arc::new(Semaphore::new(self.per_host)),
                    next_start: tokio::sync::Mutex::new(Instant::now()),
                })
            }))
        };
        let permit = Arc::clone(&slot.permits).acquire_owned().await.ok()?;
        if !self.spacing.is_zero() {
            let start = {
                let mut next = slot.next_start.lock().await;
                let start = (*next).max(Instant::now());
                *next = start + self.spacing;
                start
            };
            tokio::time::sleep_until(start).await;
        }
        Some(permit)
    }
}

/// Shared HTTP clients, one per distinct client options (connect timeout,
/// redirect limit, proxy): thousands of watches share a few connection
/// pools.
#[derive(Debug, Default)]
pub struct Clients {
    clients: Mutex<HashMap<ClientKey, reqwest::Client>>,
}

/// What sets one client apart: connect timeout, redirect limit, proxy.
type ClientKey = (Duration, usize, Option<String>);

impl Clients {
    /// The client for `opts`, built on first use.
    pub fn get(&self, opts: &FetchOptions) -> Result<reqwest::Client, SourceError> {
        let key = (opts.connect_timeout, opts.max_redirects, opts.proxy.clone());
        let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(client) = clients.get(&key) {
            return Ok(client.clone());
        }
        let client = source::http_client(opts)?;
        clients.insert(key, client.clone());
        Ok(client)
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
        let client = clients.get(&req.opts)?;
        let page = source::load(req.url.as_str(), &client, &req.opts).await?;
        return Ok(Fetched::Page {
            page,
            etag: None,
            last_modified: None,
        });
    }
    let client = clients.get(&req.opts)?;
    let host = req.url.host_str().unwrap_or_default().to_owned();
    let mut attempt = 0;
    loop {
        let result = {
            let _permit = limiter.acquire(&host).await;
            source::fetch_http(build(&client, req), req.url.clone(), &req.opts).await
        };
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
                tracing::info!(url = %req.url, attempt, ?delay, error = %error, "retrying");
                tokio::time::sleep(delay).await;
            }
            Err(error) => return Err(error),
        }
    }
}

fn build(client: &reqwest::Client, req: &PageRequest) -> reqwest::RequestBuilder {
    let mut r = client
        .get(req.url.clone())
        .timeout(req.opts.request_timeout);
    for (name, value) in &req.headers {
        r = r.header(name.as_str(), value.as_str());
    }
    if !req.cookies.is_empty() {
        let cookie = req
            .cookies
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join("; ");
        r = r.header(COOKIE, cookie);
    }
    match &req.credentials {
        Some(Credentials::Basic { username, password }) => {
            r = r.basic_auth(username, Some(password));
        }
        Some(Credentials::Bearer(token)) => r = r.bearer_auth(token),
        None => {}
    }
    if let Some(etag) = &req.etag {
        r = r.header(IF_NONE_MATCH, etag.as_str());
    }
    if let Some(lm) = &req.last_modified {
        r = r.header(IF_MODIFIED_SINCE, lm.as_str());
    }
    r
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
    async fn host_spacing_separates_request_starts() {
        let limiter = HostLimiter::new(4, Duration::from_secs(2));
        let t0 = Instant::now();
        let mut starts = Vec::new();
        for _ in 0..3 {
            let _p = limiter.acquire("a.example").await;
            starts.push(t0.elapsed());
        }
        let _other = limiter.acquire("b.example").await;
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
        let a = limiter.acquire("h").await;
        let b = limiter.acquire("h").await;
        let third = tokio::time::timeout(Duration::from_millis(50), limiter.acquire("h")).await;
        assert!(third.is_err(), "a third request waits");
        drop(a);
        let third = tokio::time::timeout(Duration::from_millis(500), limiter.acquire("h")).await;
        assert!(third.is_ok());
        drop(b);
    }
}
