//! Loading a page and decoding it to text.
//!
//! Takes a page *spec* (`-` for standard input, an `http://`, `https://` or
//! `file://` URL, or a filesystem path) and gives the page's raw bytes
//! ([`load`] → [`RawPage`]), then the page's text ([`decode`] → [`Decoded`]).
//!
//! Loading is bounded: every source is read with a cap on its size
//! ([`FetchOptions::max_body_bytes`]), and HTTP fetches also have timeouts and
//! a redirect limit. The cap applies to the *decoded* body, so a small
//! compressed response that inflates to gigabytes is cut off as soon as it
//! passes the cap.
//!
//! Decoding follows the order browsers use: a byte order mark, then the HTTP
//! `Content-Type` charset, then the WHATWG prescan of the first 1024 bytes for
//! a `<meta>` declaration, then statistical detection with `chardetng`.
//! Decoding never fails: malformed sequences become U+FFFD.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chardetng::{EncodingDetector, Iso2022JpDetection, Utf8Detection};
use encoding_rs::{Encoding, REPLACEMENT, UTF_8, UTF_16BE, UTF_16LE, WINDOWS_1252, X_USER_DEFINED};
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, ETAG, HeaderMap, HeaderValue, LAST_MODIFIED};
use tokio::io::{AsyncRead, AsyncReadExt};
use tracing::debug;
use url::{Host, Url};

use crate::page::blocked;

/// The `User-Agent` semclip sends with every HTTP request.
pub const USER_AGENT: &str = concat!("semclip/", env!("CARGO_PKG_VERSION"));

/// Default cap on a page's size in bytes, after HTTP content decoding
/// (decompression): 20 MiB.
pub const DEFAULT_MAX_BODY_BYTES: u64 = 20 * 1024 * 1024;

/// Default time allowed to establish a connection: 10 seconds.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Default time allowed for a whole HTTP request, from sending it to the last
/// byte of the body: 30 seconds.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Default number of redirects followed before giving up: 10.
pub const DEFAULT_MAX_REDIRECTS: usize = 10;

/// The `Accept` header sent with every request: HTML first, anything else
/// still welcome (a server may label HTML oddly).
const ACCEPT_VALUE: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

/// How many leading bytes the `<meta>` prescan examines (the end condition
/// the WHATWG encoding sniffing algorithm recommends).
const PRESCAN_LIMIT: usize = 1024;

/// How many bytes from the first non-ASCII byte on are fed to the encoding
/// detector. Detection costs about 0.1 s per MiB of non-ASCII text in a
/// release build; a quarter of that is far more text than it needs to settle.
const DETECT_LIMIT: usize = 256 * 1024;

/// How many ASCII bytes before the first non-ASCII byte the detector sees
/// (it scores non-ASCII bytes partly by their ASCII neighbours).
const DETECT_CONTEXT: usize = 1024;

/// Options for loading (the CLI uses defaults; the daemon will pass its own).
///
/// `connect_timeout` and `max_redirects` take effect through the client that
/// [`http_client`] builds; `request_timeout` and `max_body_bytes` are also
/// applied by [`load`] to each request.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FetchOptions {
    /// Largest page accepted, in bytes after decompression. A larger page is
    /// an error, not a truncated page.
    pub max_body_bytes: u64,
    /// Time allowed to establish a connection.
    pub connect_timeout: Duration,
    /// Time allowed for a whole request, including reading the body.
    pub request_timeout: Duration,
    /// Redirects followed before the fetch fails; 0 refuses any redirect.
    pub max_redirects: usize,
    /// A proxy for every request (`http://`, `https://` or `socks5://` URL);
    /// `None` uses the system's proxy settings (`HTTPS_PROXY`, ...).
    pub proxy: Option<String>,
}

impl Default for FetchOptions {
    fn default() -> Self {
        Self {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            max_redirects: DEFAULT_MAX_REDIRECTS,
            proxy: None,
        }
    }
}

/// Why a page could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The spec names a URL scheme semclip does not load.
    #[error(
        "unsupported URL scheme `{scheme}` in `{spec}` (semclip loads http, https and file URLs, \
         paths, and - for standard input)"
    )]
    UnsupportedScheme {
        /// The spec as given.
        spec: String,
        /// Its scheme, lower-cased.
        scheme: String,
    },
    /// The spec has a supported scheme but is not a valid URL.
    #[error("invalid URL `{spec}`")]
    InvalidUrl {
        /// The spec as given.
        spec: String,
        /// What is wrong with it.
        #[source]
        source: url::ParseError,
    },
    /// A `file:` URL that does not name a file on this machine (it has a
    /// host other than `localhost`, or is otherwise not a path).
    #[error("`{url}` does not name a local file")]
    NotLocalFile {
        /// The URL.
        url: Url,
    },
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client")]
    Client {
        /// The cause.
        #[source]
        source: reqwest::Error,
    },
    /// The fetch failed: no connection, a TLS failure, a broken response.
    #[error("cannot fetch {url}")]
    Fetch {
        /// The URL requested.
        url: Url,
        /// The cause.
        #[source]
        source: reqwest::Error,
    },
    /// The connection or the whole request took longer than allowed.
    #[error("timed out fetching {url}")]
    Timeout {
        /// The URL requested.
        url: Url,
        /// The cause.
        #[source]
        source: reqwest::Error,
    },
    /// The server redirected more often than allowed.
    #[error("too many redirects fetching {url} (the limit is {limit})")]
    TooManyRedirects {
        /// The URL requested.
        url: Url,
        /// The redirect limit in force.
        limit: usize,
        /// The cause, when the HTTP client followed the redirects.
        #[source]
        source: Option<reqwest::Error>,
    },
    /// The daemon's fence refused the page: a redirect to an internal
    /// address or to another scheme, a file outside the file roots, a
    /// special file (see [`crate::page::fence`]).
    #[error(transparent)]
    Fenced(#[from] crate::page::fence::FenceError),
    /// A redirect without a usable `Location`.
    #[error("{url} redirected to an invalid location `{location}`")]
    BadRedirect {
        /// The URL that redirected.
        url: Url,
        /// Its `Location` header, as text.
        location: String,
    },
    /// The server answered with a status other than 2xx.
    #[error("{url} answered HTTP {status}")]
    Status {
        /// The URL that answered (after any redirects).
        url: Url,
        /// The status it answered with.
        status: StatusCode,
    },
    /// The login of a session ([`crate::page::session::LoginForm`]) failed:
    /// its form could not be posted or was refused.
    #[error("cannot log in to session `{session}`")]
    Login {
        /// The session.
        session: String,
        /// Why.
        #[source]
        source: Box<SourceError>,
    },
    /// A session's last login failed not long ago: it is not tried again
    /// before its back-off ends (see [`crate::monitor::session`]).
    #[error("the last login failed ({last}); not tried again for {}s", wait.as_secs().max(1))]
    LoginHeld {
        /// What the last login got.
        last: String,
        /// How long until the next login may be tried.
        wait: std::time::Duration,
    },
    /// The page still shows its session logged out after logging in.
    #[error(
        "still logged out after logging in to session `{session}`: the page matches `{marker}`"
    )]
    StillLoggedOut {
        /// The session.
        session: String,
        /// The `logged_out` XPath the page matched.
        marker: String,
    },
    /// The server answered with a block, not the page: a bot challenge,
    /// a firewall's block page, a rate limit ([`crate::page::blocked`]).
    #[error("blocked: {url} answered with {}", blocked.reason)]
    Blocked {
        /// The URL that answered (after any redirects).
        url: Url,
        /// Who blocked and how, and for how long.
        blocked: Box<blocked::Blocked>,
    },
    /// The browser could not render the page (`fetch: {render: browser}`).
    #[error("cannot render {url} in the browser")]
    Browser {
        /// The page.
        url: Url,
        /// Why (boxed: it would make every `SourceError` larger).
        #[source]
        source: Box<crate::page::browser::BrowserError>,
    },
    /// The response body (after decompression) is larger than allowed.
    #[error("{url} is larger than the limit of {limit} bytes")]
    TooLarge {
        /// The URL that answered (after any redirects).
        url: Url,
        /// The limit in force, in bytes.
        limit: u64,
    },
    /// A file could not be opened or read.
    #[error("cannot read `{}`", path.display())]
    Read {
        /// The file's path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A file is larger than allowed.
    #[error("`{}` is larger than the limit of {limit} bytes", path.display())]
    FileTooLarge {
        /// The file's path.
        path: PathBuf,
        /// The limit in force, in bytes.
        limit: u64,
    },
    /// Standard input could not be read.
    #[error("cannot read standard input")]
    Stdin {
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Standard input holds more than allowed.
    #[error("standard input is larger than the limit of {limit} bytes")]
    StdinTooLarge {
        /// The limit in force, in bytes.
        limit: u64,
    },
}

/// Builds the HTTP client semclip fetches with: the one place one is built.
///
/// It uses rustls, accepts gzip, brotli and deflate (decompressed
/// transparently), applies `opts`' timeouts and redirect limit, sends
/// [`USER_AGENT`], and sends no `Referer` on redirects. The client is cheap to
/// clone, and safe to share across the tasks of a multi-thread runtime.
///
/// # Errors
///
/// [`SourceError::Client`] if the client cannot be built (its TLS backend or
/// the system's proxy settings fail to load).
pub fn http_client(opts: &FetchOptions) -> Result<reqwest::Client, SourceError> {
    client_builder(opts)?
        .redirect(reqwest::redirect::Policy::limited(opts.max_redirects))
        .build()
        .map_err(|source| SourceError::Client { source })
}

/// What every semclip client shares: rustls, [`USER_AGENT`], `Accept`,
/// gzip, brotli and deflate, `opts`' timeouts and proxy, no `Referer`.
/// [`http_client`] adds the redirect limit; the daemon's fetcher
/// ([`crate::page::fetch`]) follows redirects itself, through its fence.
///
/// # Errors
///
/// [`SourceError::Client`] if the proxy URL is not one reqwest takes.
pub fn client_builder(opts: &FetchOptions) -> Result<reqwest::ClientBuilder, SourceError> {
    let mut headers = HeaderMap::new();
    headers.insert(ACCEPT, HeaderValue::from_static(ACCEPT_VALUE));
    let mut builder = reqwest::Client::builder();
    if let Some(proxy) = &opts.proxy {
        let proxy = reqwest::Proxy::all(proxy).map_err(|source| SourceError::Client { source })?;
        builder = builder.proxy(proxy);
    }
    Ok(builder
        .tls_backend_rustls()
        .user_agent(USER_AGENT)
        .default_headers(headers)
        .gzip(true)
        .brotli(true)
        .deflate(true)
        .connect_timeout(opts.connect_timeout)
        .timeout(opts.request_timeout)
        .referer(false))
}

/// Raw bytes of a page plus what we know about them.
#[derive(Clone, PartialEq, Eq)]
pub struct RawPage {
    /// The page's bytes, after HTTP content decoding (decompression).
    pub bytes: Vec<u8>,
    /// The HTTP `Content-Type` header, if the page came over HTTP with one.
    pub content_type: Option<String>,
    /// Where the page came from: the final URL after redirects, or the
    /// `file:` URL of a path; `None` for standard input.
    pub url: Option<Url>,
}

impl RawPage {
    /// Decodes the page with everything known about it; see [`decode`].
    #[must_use]
    pub fn decode(&self) -> Decoded {
        decode(&self.bytes, self.content_type.as_deref(), self.url.as_ref())
    }
}

impl fmt::Debug for RawPage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A page can be megabytes: show its size, not its bytes.
        f.debug_struct("RawPage")
            .field("bytes", &format_args!("[{} bytes]", self.bytes.len()))
            .field("content_type", &self.content_type)
            .field("url", &self.url.as_ref().map(Url::as_str))
            .finish()
    }
}

/// What a spec names, once its form is known.
#[derive(Debug, PartialEq, Eq)]
enum Spec<'a> {
    /// `-`.
    Stdin,
    /// An `http:` or `https:` URL.
    Http(Url),
    /// A `file:` URL.
    FileUrl(Url),
    /// Anything without a scheme.
    Path(&'a Path),
}

/// The scheme of `spec`, if it starts with one: a letter, then letters,
/// digits, `+`, `-` or `.`, then `:`. One letter is not taken for a scheme,
/// so a Windows drive (`C:\page.html`) stays a path.
fn scheme_of(spec: &str) -> Option<&str> {
    let (scheme, _) = spec.split_once(':')?;
    let mut bytes = scheme.bytes();
    let first = bytes.next()?;
    let is_scheme = first.is_ascii_alphabetic()
        && scheme.len() > 1
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    is_scheme.then_some(scheme)
}

/// Sorts `spec` into the forms [`load`] accepts.
async fn classify(spec: &str) -> Result<Spec<'_>, SourceError> {
    if spec == "-" {
        return Ok(Spec::Stdin);
    }
    let Some(scheme) = scheme_of(spec) else {
        return Ok(Spec::Path(Path::new(spec)));
    };
    let scheme = scheme.to_ascii_lowercase();
    let parse = || {
        Url::parse(spec).map_err(|source| SourceError::InvalidUrl {
            spec: spec.to_owned(),
            source,
        })
    };
    match scheme.as_str() {
        "http" | "https" => Ok(Spec::Http(parse()?)),
        "file" => Ok(Spec::FileUrl(parse()?)),
        // A relative path may contain a colon (`notes:v2.html`); if such a
        // file exists, that is what the user meant.
        _ if tokio::fs::symlink_metadata(spec).await.is_ok() => Ok(Spec::Path(Path::new(spec))),
        _ => Err(SourceError::UnsupportedScheme {
            spec: spec.to_owned(),
            scheme,
        }),
    }
}

/// Loads `spec`: `-` is standard input, an `http://` or `https://` URL is
/// fetched with `client`, a `file://` URL or anything without a scheme is read
/// as a file.
///
/// Anything else with a scheme is an [`SourceError::UnsupportedScheme`] error,
/// unless a file of that name exists (write `./name:with:colons.html` to be
/// sure a path is taken as one). Every source is capped at
/// `opts.max_body_bytes`; HTTP requests also time out after
/// `opts.request_timeout`.
///
/// # Errors
///
/// A [`SourceError`] naming the spec, URL or path that failed, and why.
pub async fn load(
    spec: &str,
    client: &reqwest::Client,
    opts: &FetchOptions,
) -> Result<RawPage, SourceError> {
    load_with(spec, opts, || Ok(client)).await
}

/// An HTTP client built on first use, so that loading a file or stdin
/// never builds one (building a TLS client costs more than reading a
/// small page).
#[derive(Debug)]
pub struct LazyClient {
    opts: FetchOptions,
    client: std::sync::OnceLock<reqwest::Client>,
}

impl LazyClient {
    /// A client for `opts`, not built yet.
    pub fn new(opts: FetchOptions) -> LazyClient {
        LazyClient {
            opts,
            client: std::sync::OnceLock::new(),
        }
    }

    /// The options loads use.
    pub fn opts(&self) -> &FetchOptions {
        &self.opts
    }

    /// The client, built now if it was not yet.
    pub fn get(&self) -> Result<&reqwest::Client, SourceError> {
        if let Some(client) = self.client.get() {
            return Ok(client);
        }
        let client = http_client(&self.opts)?;
        Ok(self.client.get_or_init(|| client))
    }

    /// [`load`] of `spec`, building the client only for an HTTP(S) URL.
    pub async fn load(&self, spec: &str) -> Result<RawPage, SourceError> {
        load_with(spec, &self.opts, || self.get()).await
    }
}

/// [`load`], with the client asked of `client` only for an HTTP(S) URL.
async fn load_with<'c>(
    spec: &str,
    opts: &FetchOptions,
    client: impl FnOnce() -> Result<&'c reqwest::Client, SourceError>,
) -> Result<RawPage, SourceError> {
    match classify(spec).await? {
        Spec::Stdin => load_stdin(opts.max_body_bytes).await,
        Spec::Http(url) => load_http(url, client()?, opts).await,
        Spec::FileUrl(url) => {
            let path = url
                .to_file_path()
                .map_err(|()| SourceError::NotLocalFile { url: url.clone() })?;
            let bytes = read_file(&path, opts.max_body_bytes).await?;
            Ok(RawPage {
                bytes,
                content_type: None,
                url: Some(url),
            })
        }
        Spec::Path(path) => {
            let bytes = read_file(path, opts.max_body_bytes).await?;
            let url = std::path::absolute(path)
                .ok()
                .and_then(|absolute| Url::from_file_path(absolute).ok());
            Ok(RawPage {
                bytes,
                content_type: None,
                url,
            })
        }
    }
}

/// Fetches `url` with `client`, streaming the body under the size cap.
async fn load_http(
    url: Url,
    client: &reqwest::Client,
    opts: &FetchOptions,
) -> Result<RawPage, SourceError> {
    let request = client.get(url.clone()).timeout(opts.request_timeout);
    match fetch_http(request, url.clone(), opts).await? {
        HttpFetched::Page { page, .. } => Ok(page),
        // No validators were sent, so a 304 is the server's mistake.
        HttpFetched::NotModified { url } => Err(SourceError::Status {
            url,
            status: StatusCode::NOT_MODIFIED,
        }),
    }
}

/// What [`fetch_http`] got.
#[derive(Debug)]
pub enum HttpFetched {
    /// `304 Not Modified`: the page is as it was when it carried the
    /// validators sent; no body was read.
    NotModified {
        /// The URL that answered (after any redirects).
        url: Url,
    },
    /// A 2xx page.
    Page {
        /// The page.
        page: RawPage,
        /// Its `ETag`, for the next conditional request.
        etag: Option<String>,
        /// Its `Last-Modified`, for the next conditional request.
        last_modified: Option<String>,
    },
}

/// Sends `request` (built on a client from [`http_client`], for `url`) and
/// reads the answer: a 304 as [`HttpFetched::NotModified`], a 2xx page with
/// its body streamed under `opts.max_body_bytes` (decompressed bytes are
/// counted, so a compression bomb is cut off at the limit), anything else an
/// error.
///
/// # Errors
///
/// [`SourceError::Status`] for a status other than 2xx and 304,
/// [`SourceError::TooLarge`] past the size cap, and the fetch, timeout and
/// redirect errors of [`load`].
pub async fn fetch_http(
    request: reqwest::RequestBuilder,
    url: Url,
    opts: &FetchOptions,
) -> Result<HttpFetched, SourceError> {
    debug!(%url, "fetching");
    match request.send().await {
        Ok(response) => read_response(response, opts).await,
        Err(error) => Err(fetch_error(url, opts, error)),
    }
}

/// Reads the answer `response`: a 304 as [`HttpFetched::NotModified`], a
/// 2xx page with its body streamed under `opts.max_body_bytes`, anything
/// else an error (see [`fetch_http`]).
///
/// # Errors
///
/// As [`fetch_http`].
pub async fn read_response(
    mut response: reqwest::Response,
    opts: &FetchOptions,
) -> Result<HttpFetched, SourceError> {
    let limit = opts.max_body_bytes;
    let final_url = response.url().clone();
    let status = response.status();
    if status == StatusCode::NOT_MODIFIED {
        return Ok(HttpFetched::NotModified { url: final_url });
    }
    if !status.is_success() {
        return Err(refused(response, final_url).await);
    }
    let header = |name| {
        response
            .headers()
            .get(name)
            .map(|value: &HeaderValue| String::from_utf8_lossy(value.as_bytes()).into_owned())
    };
    let content_type = header(CONTENT_TYPE);
    let etag = header(ETAG);
    let last_modified = header(LAST_MODIFIED);
    // `content_length` is the length of the body as delivered to us: unknown
    // when reqwest decompresses it, so this early check never misjudges a
    // compressed body by its compressed size.
    let announced = response.content_length();
    if announced.is_some_and(|length| length > limit) {
        return Err(SourceError::TooLarge {
            url: final_url,
            limit,
        });
    }
    let capacity = usize::try_from(announced.unwrap_or(0).min(limit)).unwrap_or(0);
    let mut bytes = Vec::with_capacity(capacity);
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(error) => return Err(fetch_error(final_url, opts, error)),
        };
        if exceeds(bytes.len(), chunk.len(), limit) {
            debug!(url = %final_url, limit, "body over the size limit, stopped reading");
            return Err(SourceError::TooLarge {
                url: final_url,
                limit,
            });
        }
        bytes.extend_from_slice(&chunk);
    }
    debug!(url = %final_url, bytes = bytes.len(), ?content_type, "fetched");
    Ok(HttpFetched::Page {
        page: RawPage {
            bytes,
            content_type,
            url: Some(final_url),
        },
        etag,
        last_modified,
    })
}

/// The error for a non-2xx answer: [`SourceError::Blocked`] when it is a
/// block ([`blocked::judge`], which reads at most the first
/// [`blocked::SNIFF_BYTES`] of the body of a 403, 429 or 503),
/// [`SourceError::Status`] otherwise.
async fn refused(mut response: reqwest::Response, url: Url) -> SourceError {
    let status = response.status();
    let mut head = Vec::new();
    if matches!(status.as_u16(), 403 | 429 | 503) {
        // A body that fails half-way is judged on what arrived.
        while head.len() < blocked::SNIFF_BYTES {
            match response.chunk().await {
                Ok(Some(chunk)) => head.extend_from_slice(&chunk),
                _ => break,
            }
        }
    }
    match blocked::judge(
        status,
        response.headers(),
        &head,
        std::time::SystemTime::now(),
    ) {
        Some(b) => SourceError::Blocked {
            url,
            blocked: Box::new(b),
        },
        None => SourceError::Status { url, status },
    }
}

/// Whether `held` bytes plus `more` bytes pass `limit`.
fn exceeds(held: usize, more: usize, limit: u64) -> bool {
    let total = u64::try_from(held.saturating_add(more)).unwrap_or(u64::MAX);
    total > limit
}

/// Sorts a reqwest failure on `url` into the matching [`SourceError`].
pub(crate) fn fetch_error(url: Url, opts: &FetchOptions, error: reqwest::Error) -> SourceError {
    // The error's own URL would repeat ours in the message chain.
    let source = error.without_url();
    if source.is_timeout() {
        SourceError::Timeout { url, source }
    } else if is_redirect_error(&source) {
        SourceError::TooManyRedirects {
            url,
            limit: opts.max_redirects,
            source: Some(source),
        }
    } else {
        SourceError::Fetch { url, source }
    }
}

/// Whether `error`, or a reqwest error it wraps, is a redirect-policy error.
/// The only redirect policy semclip sets is the redirect limit.
fn is_redirect_error(error: &reqwest::Error) -> bool {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(err) = current {
        if err
            .downcast_ref::<reqwest::Error>()
            .is_some_and(reqwest::Error::is_redirect)
        {
            return true;
        }
        current = err.source();
    }
    false
}

/// Reads the file at `path`, refusing one larger than `limit` bytes.
async fn read_file(path: &Path, limit: u64) -> Result<Vec<u8>, SourceError> {
    let read_error = |source| SourceError::Read {
        path: path.to_owned(),
        source,
    };
    let too_large = || SourceError::FileTooLarge {
        path: path.to_owned(),
        limit,
    };
    let file = tokio::fs::File::open(path).await.map_err(read_error)?;
    let metadata = file.metadata().await.map_err(read_error)?;
    if metadata.is_dir() {
        return Err(read_error(io::Error::new(
            io::ErrorKind::IsADirectory,
            "is a directory",
        )));
    }
    // The length is only a hint for special files (0 for a pipe or
    // /dev/zero), so the read below is capped as well.
    if metadata.len() > limit {
        return Err(too_large());
    }
    let bytes = read_capped(file, limit, metadata.len())
        .await
        .map_err(|error| match error {
            CappedReadError::TooLarge => too_large(),
            CappedReadError::Io(source) => read_error(source),
        })?;
    debug!(path = %path.display(), bytes = bytes.len(), "read file");
    Ok(bytes)
}

/// Reads standard input, refusing more than `limit` bytes.
async fn load_stdin(limit: u64) -> Result<RawPage, SourceError> {
    let bytes = read_capped(tokio::io::stdin(), limit, 0)
        .await
        .map_err(|error| match error {
            CappedReadError::TooLarge => SourceError::StdinTooLarge { limit },
            CappedReadError::Io(source) => SourceError::Stdin { source },
        })?;
    debug!(bytes = bytes.len(), "read standard input");
    Ok(RawPage {
        bytes,
        content_type: None,
        url: None,
    })
}

/// Why [`read_capped`] failed.
#[derive(Debug)]
enum CappedReadError {
    /// The reader had more than the limit.
    TooLarge,
    /// The reader failed.
    Io(io::Error),
}

/// Reads `reader` to its end, but never more than `limit + 1` bytes: one past
/// the limit is enough to know it is too large. `size_hint` sizes the buffer
/// up front.
async fn read_capped<R: AsyncRead + Unpin>(
    reader: R,
    limit: u64,
    size_hint: u64,
) -> Result<Vec<u8>, CappedReadError> {
    let capacity = usize::try_from(size_hint.min(limit)).unwrap_or(0);
    let mut bytes = Vec::with_capacity(capacity);
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .await
        .map_err(CappedReadError::Io)?;
    if exceeds(bytes.len(), 0, limit) {
        return Err(CappedReadError::TooLarge);
    }
    Ok(bytes)
}

/// A decoded page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// The page's text; malformed byte sequences are U+FFFD.
    pub text: String,
    /// The encoding the text was decoded from.
    pub encoding: &'static Encoding,
    /// How that encoding was chosen.
    pub how: EncodingSource,
}

/// How [`decode`] chose a page's encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncodingSource {
    /// A byte order mark at the start of the page.
    Bom,
    /// The `charset` parameter of the HTTP `Content-Type` header.
    HttpHeader,
    /// The WHATWG prescan of the first 1024 bytes: a `<meta charset>` or
    /// `<meta http-equiv="Content-Type" content="…; charset=…">`, or, as the
    /// same algorithm specifies, an XML declaration's `encoding`.
    MetaPrescan,
    /// Statistical detection (`chardetng`), using the URL's top-level domain.
    Detected,
    /// Nothing to go on (the page is empty or pure ASCII): UTF-8.
    Default,
}

/// Decodes page bytes to text.
///
/// The encoding is, in order:
/// 1. the one a byte order mark names (the mark is not part of the text);
/// 2. the `charset` of `content_type` (an HTTP `Content-Type` value);
/// 3. the one the WHATWG prescan finds in the first 1024 bytes (a `<meta>`
///    that ends within them; comments and other tags' attribute values are
///    skipped; a UTF-16 label there means UTF-8 and `x-user-defined` means
///    windows-1252, as the spec says);
/// 4. the one `chardetng` guesses, given the top-level domain of `url`, with
///    UTF-8 allowed as a guess;
/// 5. UTF-8, when the page is empty or pure ASCII.
///
/// A label that names no encoding is skipped, and so is one that names the
/// *replacement* encoding (such as `iso-2022-kr`), which would turn the whole
/// page into a single U+FFFD. Malformed sequences decode to U+FFFD: this never
/// fails.
#[must_use]
pub fn decode(bytes: &[u8], content_type: Option<&str>, url: Option<&Url>) -> Decoded {
    let (encoding, how, body) = if let Some((encoding, bom_length)) = Encoding::for_bom(bytes) {
        (encoding, EncodingSource::Bom, &bytes[bom_length..])
    } else if let Some(encoding) = content_type.and_then(charset_from_content_type) {
        (encoding, EncodingSource::HttpHeader, bytes)
    } else if let Some(encoding) = prescan(bytes) {
        (encoding, EncodingSource::MetaPrescan, bytes)
    } else if let Some(encoding) = detect(bytes, url) {
        (encoding, EncodingSource::Detected, bytes)
    } else {
        (UTF_8, EncodingSource::Default, bytes)
    };
    let (text, malformed) = encoding.decode_without_bom_handling(body);
    debug!(
        encoding = encoding.name(),
        ?how,
        malformed,
        bytes = bytes.len(),
        "decoded page"
    );
    Decoded {
        text: text.into_owned(),
        encoding,
        how,
    }
}

/// The encoding `label` names, unless it names none or the replacement
/// encoding (which decodes everything to one U+FFFD: no use to us).
fn usable_label(label: &[u8]) -> Option<&'static Encoding> {
    Encoding::for_label(label).filter(|&encoding| encoding != REPLACEMENT)
}

/// HTTP's optional whitespace.
fn is_http_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

/// The encoding named by the first non-empty `charset` parameter of a
/// `Content-Type` value, parsed as the WHATWG MIME Sniffing standard parses
/// parameters (names are case-insensitive, values may be quoted strings).
fn charset_from_content_type(content_type: &str) -> Option<&'static Encoding> {
    let (_, mut rest) = content_type.split_once(';')?;
    loop {
        rest = rest.trim_start_matches(is_http_whitespace);
        let name_end = rest.find([';', '=']).unwrap_or(rest.len());
        let name = &rest[..name_end];
        rest = &rest[name_end..];
        let value = if let Some(after_equals) = rest.strip_prefix('=') {
            if let Some(quoted) = after_equals.strip_prefix('"') {
                let (value, after) = unquote(quoted);
                // Anything between the closing quote and the next `;` is ignored.
                rest = after.find(';').map_or("", |at| &after[at..]);
                value
            } else {
                let end = after_equals.find(';').unwrap_or(after_equals.len());
                rest = &after_equals[end..];
                after_equals[..end]
                    .trim_end_matches(is_http_whitespace)
                    .to_owned()
            }
        } else {
            String::new()
        };
        if !value.is_empty() && name.eq_ignore_ascii_case("charset") {
            return usable_label(value.as_bytes());
        }
        rest = rest.strip_prefix(';')?;
    }
}

/// Reads an HTTP quoted string whose opening quote is already consumed:
/// gives its value (backslash escapes resolved) and what follows the closing
/// quote (or nothing, when it is unterminated).
fn unquote(quoted: &str) -> (String, &str) {
    let mut value = String::new();
    let mut chars = quoted.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' => return (value, &quoted[at + 1..]),
            '\\' => match chars.next() {
                Some((_, escaped)) => value.push(escaped),
                None => value.push('\\'),
            },
            _ => value.push(c),
        }
    }
    (value, "")
}

/// ASCII whitespace as the HTML prescan knows it.
fn is_space(byte: u8) -> bool {
    matches!(byte, b'\t' | b'\n' | b'\x0C' | b'\r' | b' ')
}

/// Where `needle` first occurs in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// Where `needle` (lower-case ASCII) first occurs in `haystack`, ignoring
/// ASCII case.
fn find_ignoring_case(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window.eq_ignore_ascii_case(needle))
}

/// The WHATWG "prescan a byte stream to determine its encoding" algorithm
/// over the first [`PRESCAN_LIMIT`] bytes of `bytes`, including its fallback
/// to "get an XML encoding"; the replacement encoding counts as no encoding.
fn prescan(bytes: &[u8]) -> Option<&'static Encoding> {
    let input = &bytes[..bytes.len().min(PRESCAN_LIMIT)];
    // `<?x` in UTF-16: the prefix is longer than XML's Appendix F for
    // historical reasons, and the declaration itself is not read.
    if input.starts_with(b"<\0?\0x\0") {
        return Some(UTF_16LE);
    }
    if input.starts_with(b"\0<\0?\0x") {
        return Some(UTF_16BE);
    }
    // The scan only ever ends by finding an encoding or by running out of
    // bytes, and running out falls back to the XML declaration.
    prescan_meta(input).or_else(|| xml_declaration_encoding(input))
}

/// The prescan's main loop: `None` when it runs out of bytes.
fn prescan_meta(input: &[u8]) -> Option<&'static Encoding> {
    let mut pos = 0;
    while pos < input.len() {
        let rest = &input[pos..];
        if rest.starts_with(b"<!--") {
            // To the `>` of the first `-->`; the dashes of `<!--` count, so
            // `<!-->` is a whole comment.
            pos += 2 + find(&rest[2..], b"-->")? + 2;
        } else if is_meta_start(rest) {
            pos += 5;
            if let Some(encoding) = meta_element(input, &mut pos)? {
                return Some(encoding);
            }
        } else if is_tag_start(rest) {
            // Skip the tag name, then its attributes, so that markup inside
            // attribute values is not taken for tags.
            pos += rest.iter().position(|&b| is_space(b) || b == b'>')?;
            while get_attribute(input, &mut pos)?.is_some() {}
        } else if rest.starts_with(b"<!") || rest.starts_with(b"</") || rest.starts_with(b"<?") {
            pos += rest.iter().position(|&b| b == b'>')?;
        }
        pos += 1;
    }
    None
}

/// Whether `rest` starts with `<meta` (any case) and a space or `/`.
fn is_meta_start(rest: &[u8]) -> bool {
    rest.len() > 5
        && rest[0] == b'<'
        && rest[1..5].eq_ignore_ascii_case(b"meta")
        && (is_space(rest[5]) || rest[5] == b'/')
}

/// Whether `rest` starts with `<` or `</` and a letter.
fn is_tag_start(rest: &[u8]) -> bool {
    match rest {
        [b'<', b'/', letter, ..] | [b'<', letter, ..] => letter.is_ascii_alphabetic(),
        _ => false,
    }
}

/// What a `<meta>` element's attributes have set `charset` to.
#[derive(Clone, Copy)]
enum MetaCharset {
    /// Nothing yet.
    Unset,
    /// A `charset` attribute whose label names no usable encoding.
    Failure,
    /// An encoding.
    Is(&'static Encoding),
}

/// The attributes of a `<meta>` element whose name `pos` is just past: the
/// encoding they declare, if any, or `None` (outer) when the input runs out.
fn meta_element(input: &[u8], pos: &mut usize) -> Option<Option<&'static Encoding>> {
    let mut seen: Vec<Vec<u8>> = Vec::new();
    let mut got_pragma = false;
    let mut need_pragma = None;
    let mut charset = MetaCharset::Unset;
    while let Some((name, value)) = get_attribute(input, pos)? {
        // Only an attribute's first occurrence counts.
        if seen.contains(&name) {
            continue;
        }
        match name.as_slice() {
            b"http-equiv" => got_pragma |= value == b"content-type",
            b"content" => {
                if let (MetaCharset::Unset, Some(encoding)) =
                    (charset, charset_from_meta_content(&value))
                {
                    charset = MetaCharset::Is(encoding);
                    need_pragma = Some(true);
                }
            }
            b"charset" => {
                charset = usable_label(&value).map_or(MetaCharset::Failure, MetaCharset::Is);
                need_pragma = Some(false);
            }
            _ => {}
        }
        seen.push(name);
    }
    let declared = match (need_pragma, charset) {
        (Some(need_pragma), MetaCharset::Is(encoding)) if got_pragma || !need_pragma => {
            Some(encoding)
        }
        _ => None,
    };
    // A page that can declare itself in ASCII is not UTF-16, and
    // x-user-defined is windows-1252 on the Web.
    Some(declared.map(|encoding| {
        if encoding == UTF_16BE || encoding == UTF_16LE {
            UTF_8
        } else if encoding == X_USER_DEFINED {
            WINDOWS_1252
        } else {
            encoding
        }
    }))
}

/// A `(name, value)` attribute, names and values lower-cased.
type Attribute = (Vec<u8>, Vec<u8>);

/// The prescan's "get an attribute": the attribute at `pos` (moving `pos`
/// past it), `Some(None)` when the tag ends first, and `None` when the input
/// runs out.
fn get_attribute(input: &[u8], pos: &mut usize) -> Option<Option<Attribute>> {
    let at = |pos: usize| input.get(pos).copied();
    while is_space(at(*pos)?) || at(*pos)? == b'/' {
        *pos += 1;
    }
    if at(*pos)? == b'>' {
        return Some(None);
    }
    let mut name = Vec::new();
    let mut value = Vec::new();
    loop {
        let byte = at(*pos)?;
        if byte == b'=' && !name.is_empty() {
            *pos += 1;
            break;
        }
        if is_space(byte) {
            while is_space(at(*pos)?) {
                *pos += 1;
            }
            if at(*pos)? != b'=' {
                return Some(Some((name, value)));
            }
            *pos += 1;
            break;
        }
        if byte == b'/' || byte == b'>' {
            return Some(Some((name, value)));
        }
        name.push(byte.to_ascii_lowercase());
        *pos += 1;
    }
    while is_space(at(*pos)?) {
        *pos += 1;
    }
    let first = at(*pos)?;
    match first {
        b'"' | b'\'' => loop {
            *pos += 1;
            let byte = at(*pos)?;
            if byte == first {
                *pos += 1;
                return Some(Some((name, value)));
            }
            value.push(byte.to_ascii_lowercase());
        },
        b'>' => return Some(Some((name, value))),
        _ => {
            value.push(first.to_ascii_lowercase());
            *pos += 1;
        }
    }
    loop {
        let byte = at(*pos)?;
        if is_space(byte) || byte == b'>' {
            return Some(Some((name, value)));
        }
        value.push(byte.to_ascii_lowercase());
        *pos += 1;
    }
}

/// The WHATWG "algorithm for extracting a character encoding from a meta
/// element", applied to a `content` attribute's value.
fn charset_from_meta_content(content: &[u8]) -> Option<&'static Encoding> {
    let mut pos = 0;
    loop {
        pos += find_ignoring_case(&content[pos..], b"charset")? + b"charset".len();
        while content.get(pos).copied().is_some_and(is_space) {
            pos += 1;
        }
        if content.get(pos) != Some(&b'=') {
            continue;
        }
        pos += 1;
        while content.get(pos).copied().is_some_and(is_space) {
            pos += 1;
        }
        let first = *content.get(pos)?;
        let label = if first == b'"' || first == b'\'' {
            let quoted = &content[pos + 1..];
            &quoted[..quoted.iter().position(|&b| b == first)?]
        } else {
            let rest = &content[pos..];
            &rest[..rest
                .iter()
                .position(|&b| is_space(b) || b == b';')
                .unwrap_or(rest.len())]
        };
        return usable_label(label);
    }
}

/// The WHATWG "get an XML encoding": the `encoding` of an XML declaration at
/// the very start of `input`.
fn xml_declaration_encoding(input: &[u8]) -> Option<&'static Encoding> {
    if !input.starts_with(b"<?xml") {
        return None;
    }
    let declaration_end = input.iter().position(|&b| b == b'>')?;
    let mut pos = find(&input[..declaration_end], b"encoding")? + b"encoding".len();
    let skip_controls_and_spaces = |pos: &mut usize| {
        while input.get(*pos).is_some_and(|&b| b <= 0x20) {
            *pos += 1;
        }
    };
    skip_controls_and_spaces(&mut pos);
    if input.get(pos) != Some(&b'=') {
        return None;
    }
    pos += 1;
    skip_controls_and_spaces(&mut pos);
    let quote = *input.get(pos)?;
    if quote != b'"' && quote != b'\'' {
        return None;
    }
    let rest = &input[pos + 1..];
    let label = &rest[..rest.iter().position(|&b| b == quote)?];
    if label.iter().any(|&b| b <= 0x20) {
        return None;
    }
    let encoding = usable_label(label)?;
    Some(if encoding == UTF_16BE || encoding == UTF_16LE {
        UTF_8
    } else {
        encoding
    })
}

/// `chardetng`'s guess at the encoding of `bytes`, or `None` when they are
/// all ASCII (every candidate decodes them alike, so there is nothing to
/// detect). The detector sees the stretch from just before the first
/// non-ASCII byte, at most [`DETECT_LIMIT`] bytes of it.
fn detect(bytes: &[u8], url: Option<&Url>) -> Option<&'static Encoding> {
    let first_non_ascii = bytes.iter().position(|b| !b.is_ascii())?;
    // Every byte before the first non-ASCII one is a whole character in any
    // ASCII-compatible encoding, so starting there splits nothing.
    let start = first_non_ascii.saturating_sub(DETECT_CONTEXT);
    let end = first_non_ascii
        .saturating_add(DETECT_LIMIT)
        .min(bytes.len());
    let mut detector = EncodingDetector::new(Iso2022JpDetection::Deny);
    detector.feed(&bytes[start..end], end == bytes.len());
    let tld = url.and_then(top_level_domain);
    Some(detector.guess(tld.as_deref().map(str::as_bytes), Utf8Detection::Allow))
}

/// The top-level domain of `url`'s host, lower-cased, when it has a domain
/// name (not an IP address) whose last label is plain ASCII: `chardetng`
/// panics on anything else, and a URL is user input.
fn top_level_domain(url: &Url) -> Option<String> {
    let Some(Host::Domain(domain)) = url.host() else {
        return None;
    };
    let label = domain
        .trim_end_matches('.')
        .rsplit('.')
        .next()?
        .to_ascii_lowercase();
    let plain = !label.is_empty()
        && label
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    plain.then_some(label)
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly on unexpected values"
)]
mod tests {
    use super::*;
    use encoding_rs::{BIG5, EUC_KR, GBK, KOI8_R, SHIFT_JIS, WINDOWS_1250, WINDOWS_1251};
    use proptest::prelude::*;

    /// Prescans `html`.
    fn scan(html: &str) -> Option<&'static str> {
        prescan(html.as_bytes()).map(Encoding::name)
    }

    #[test]
    fn meta_charset_in_its_forms() {
        assert_eq!(
            scan(r#"<meta charset="windows-1251">"#),
            Some("windows-1251")
        );
        assert_eq!(scan("<meta charset='koi8-r'>"), Some("KOI8-R"));
        assert_eq!(scan("<meta charset=gbk>"), Some("GBK"));
        assert_eq!(scan("<META CHARSET=Shift_JIS>"), Some("Shift_JIS"));
        assert_eq!(scan("<meta charset = \" utf-8 \" >"), Some("UTF-8"));
        assert_eq!(scan("<meta/charset=euc-kr />"), Some("EUC-KR"));
        // An unquoted value runs to a space or `>`: here it takes the `/`.
        assert_eq!(scan("<meta charset=euc-kr/>"), None);
        assert_eq!(scan("<meta\tname=x\ncharset=big5>"), Some("Big5"));
        assert_eq!(scan("<meta charset=latin2>"), Some("ISO-8859-2"));
        // A label is looked up as the Encoding standard says.
        assert_eq!(scan("<meta charset=iso-8859-1>"), Some("windows-1252"));
        assert_eq!(scan("<meta charset=gb2312>"), Some("GBK"));
    }

    #[test]
    fn meta_http_equiv_needs_both_attributes_in_any_order() {
        let ct = "text/html; charset=windows-1251";
        for html in [
            format!(r#"<meta http-equiv="Content-Type" content="{ct}">"#),
            format!(r#"<meta content="{ct}" http-equiv="content-type">"#),
            format!(r#"<meta content='{ct}' name=x HTTP-EQUIV=CONTENT-TYPE>"#),
            r#"<meta http-equiv=content-type content="text/html;charset='windows-1251'">"#
                .to_owned(),
            r#"<meta http-equiv=content-type content="text/html; CHARSET = windows-1251; x=y">"#
                .to_owned(),
        ] {
            assert_eq!(scan(&html), Some("windows-1251"), "{html}");
        }
        // `content` alone, or with another pragma, declares nothing.
        assert_eq!(scan(&format!(r#"<meta content="{ct}">"#)), None);
        assert_eq!(
            scan(&format!(r#"<meta http-equiv=refresh content="{ct}">"#)),
            None
        );
        // A `content` that names no charset declares nothing either.
        assert_eq!(
            scan(r#"<meta http-equiv=content-type content="text/html">"#),
            None
        );
        assert_eq!(
            scan(r#"<meta http-equiv=content-type content="text/html; charset=">"#),
            None
        );
        assert_eq!(
            scan(r#"<meta http-equiv=content-type content="charset='koi8-r">"#),
            None
        );
        // "charset" not followed by `=` is skipped, and the search goes on.
        assert_eq!(
            scan(r#"<meta http-equiv=content-type content="charsetx; charset=koi8-r">"#),
            Some("KOI8-R")
        );
    }

    #[test]
    fn meta_charset_attribute_wins_over_content() {
        assert_eq!(
            scan(
                r#"<meta http-equiv=content-type content="text/html; charset=koi8-r" charset=gbk>"#
            ),
            Some("GBK")
        );
        assert_eq!(
            scan(
                r#"<meta charset=gbk http-equiv=content-type content="text/html; charset=koi8-r">"#
            ),
            Some("GBK")
        );
        // A bad `charset` is not rescued by `content` in the same element.
        assert_eq!(
            scan(r#"<meta charset=bogus http-equiv=content-type content="charset=koi8-r">"#),
            None
        );
    }

    #[test]
    fn only_an_attributes_first_occurrence_counts() {
        assert_eq!(scan("<meta charset=gbk charset=koi8-r>"), Some("GBK"));
        assert_eq!(
            scan(r#"<meta http-equiv=refresh http-equiv=content-type content="charset=gbk">"#),
            None
        );
    }

    #[test]
    fn utf16_and_x_user_defined_in_meta_are_remapped() {
        assert_eq!(scan("<meta charset=utf-16>"), Some("UTF-8"));
        assert_eq!(scan("<meta charset=utf-16be>"), Some("UTF-8"));
        assert_eq!(scan("<meta charset=x-user-defined>"), Some("windows-1252"));
    }

    #[test]
    fn wrong_labels_fall_through_to_the_next_declaration() {
        assert_eq!(
            scan("<meta charset=no-such-thing><meta charset=koi8-r>"),
            Some("KOI8-R")
        );
        // The replacement encoding is no use: it is skipped like a bad label.
        assert_eq!(scan("<meta charset=iso-2022-kr>"), None);
        assert_eq!(
            scan("<meta charset=hz-gb-2312><meta charset=gbk>"),
            Some("GBK")
        );
        assert_eq!(scan("<meta charset=''>"), None);
    }

    #[test]
    fn comments_are_skipped() {
        assert_eq!(
            scan("<!-- <meta charset=koi8-r> --><meta charset=gbk>"),
            Some("GBK")
        );
        // `<!-->` is a whole comment.
        assert_eq!(scan("<!--><meta charset=gbk>-->"), Some("GBK"));
        // `--!>` and `->` do not close a comment here.
        assert_eq!(scan("<!-- x -> <meta charset=koi8-r> --!>"), None);
        // An unterminated comment hides everything after it.
        assert_eq!(scan("<!-- <meta charset=gbk>"), None);
    }

    #[test]
    fn other_markup_is_skipped() {
        // Markup inside another tag's attribute value is not a tag.
        assert_eq!(
            scan(r#"<div title="<meta charset=koi8-r>"><meta charset=gbk>"#),
            Some("GBK")
        );
        assert_eq!(
            scan("<div title='<meta charset=koi8-r>'><meta charset=gbk>"),
            Some("GBK")
        );
        // Closing tags, doctypes and processing instructions are skipped to `>`.
        assert_eq!(
            scan("<!DOCTYPE html><?php x ?></p x='<meta charset=koi8-r>'><meta charset=gbk>"),
            Some("GBK")
        );
        // `<metadata>` and `<meta>` without attributes are not declarations.
        assert_eq!(scan("<metadata charset=koi8-r><meta>"), None);
        // A `<` that opens no tag is plain text.
        assert_eq!(scan("a < b <3 <meta charset=gbk>"), Some("GBK"));
    }

    #[test]
    fn only_the_first_1024_bytes_are_scanned() {
        let pad = |n: usize| format!("<p>{}</p>", "x".repeat(n - 7));
        let meta = "<meta charset=koi8-r>";
        // Ends exactly at byte 1024: found.
        let html = format!("{}{meta}", pad(1024 - meta.len()));
        assert_eq!(html.len(), 1024);
        assert_eq!(scan(&html), Some("KOI8-R"));
        // One byte later, its `>` is past the limit: not found.
        let html = format!("{}{meta}", pad(1025 - meta.len()));
        assert_eq!(scan(&html), None);
        // Wholly past the limit: not found.
        let html = format!("{}{meta}", pad(2000));
        assert_eq!(scan(&html), None);
    }

    #[test]
    fn xml_declarations_are_the_fallback() {
        assert_eq!(
            scan(r#"<?xml version="1.0" encoding="windows-1251"?><html>"#),
            Some("windows-1251")
        );
        assert_eq!(
            scan("<?xml version='1.0' encoding = 'koi8-r' ?>"),
            Some("KOI8-R")
        );
        // A meta declaration comes first.
        assert_eq!(
            scan(r#"<?xml version="1.0" encoding="koi8-r"?><meta charset=gbk>"#),
            Some("GBK")
        );
        assert_eq!(scan(r#"<?xml encoding="utf-16"?>"#), Some("UTF-8"));
        // Only at the very start, case-sensitive, quoted, without spaces.
        assert_eq!(scan(r#" <?xml encoding="koi8-r"?>"#), None);
        assert_eq!(scan(r#"<?XML encoding="koi8-r"?>"#), None);
        assert_eq!(scan("<?xml encoding=koi8-r?>"), None);
        assert_eq!(scan(r#"<?xml encoding="koi8 r"?>"#), None);
        assert_eq!(scan(r#"<?xml version="1.0"?> encoding="koi8-r""#), None);
    }

    #[test]
    fn utf16_xml_declarations_are_sniffed() {
        assert_eq!(
            prescan(b"<\0?\0x\0m\0l\0").map(Encoding::name),
            Some("UTF-16LE")
        );
        assert_eq!(
            prescan(b"\0<\0?\0x\0m\0l").map(Encoding::name),
            Some("UTF-16BE")
        );
    }

    #[test]
    fn prescan_survives_truncated_markup() {
        for html in [
            "<",
            "<m",
            "<meta",
            "<meta ",
            "<meta charset",
            "<meta charset=",
            "<meta charset=\"",
            "<meta charset=\"gbk",
            "<meta charset=gbk",
            "<!",
            "<!-",
            "<!--",
            "<!-- -",
            "</",
            "</x",
            "<x a",
            "<x a=",
            "<x a='",
            "<x a=b",
            "<?xml",
            "<?xml encoding",
            "<?xml encoding='",
        ] {
            assert_eq!(scan(html), None, "{html}");
        }
    }

    #[test]
    fn content_type_charset() {
        let ct = |value: &str| charset_from_content_type(value).map(Encoding::name);
        assert_eq!(ct("text/html; charset=windows-1251"), Some("windows-1251"));
        assert_eq!(ct("text/html;charset=KOI8-R"), Some("KOI8-R"));
        assert_eq!(ct("text/html; CharSet=\"gbk\""), Some("GBK"));
        assert_eq!(
            ct("text/html; a=b; charset=shift_jis ; c=d"),
            Some("Shift_JIS")
        );
        assert_eq!(
            ct("text/html; a=\"x;charset=koi8-r\"; charset=gbk"),
            Some("GBK")
        );
        assert_eq!(ct("text/html; charset=\"g\\bk\" junk; x=y"), Some("GBK"));
        assert_eq!(ct("text/html; flag; charset=gbk"), Some("GBK"));
        // The first non-empty charset counts, even if it is wrong.
        assert_eq!(ct("text/html; charset=; charset=gbk"), Some("GBK"));
        assert_eq!(ct("text/html; charset=bogus; charset=gbk"), None);
        // Utf-16 in HTTP stays UTF-16 (only meta labels are remapped).
        assert_eq!(ct("text/html; charset=utf-16"), Some("UTF-16LE"));
        for value in [
            "text/html",
            "text/html;",
            "text/html; charset",
            "text/html; charset=",
            "text/html; charset=\"",
            "text/html; charset =gbk",
            "text/html; xcharset=gbk",
            "text/html; charset=iso-2022-kr",
            "",
        ] {
            assert_eq!(ct(value), None, "{value}");
        }
    }

    #[test]
    fn decode_order_bom_then_header_then_meta_then_detection() {
        let html = "<meta charset=koi8-r><p>Привет</p>";
        let koi8 = KOI8_R.encode(html).0;
        // Meta alone.
        let decoded = decode(&koi8, None, None);
        assert_eq!(
            (decoded.encoding, decoded.how),
            (KOI8_R, EncodingSource::MetaPrescan)
        );
        assert_eq!(decoded.text, html);
        // The header beats the meta.
        let cp1251 = WINDOWS_1251.encode(html).0;
        let decoded = decode(&cp1251, Some("text/html; charset=windows-1251"), None);
        assert_eq!(
            (decoded.encoding, decoded.how),
            (WINDOWS_1251, EncodingSource::HttpHeader)
        );
        assert_eq!(decoded.text, html);
        // The BOM beats both, and is not part of the text.
        let mut bom = b"\xEF\xBB\xBF".to_vec();
        bom.extend_from_slice(html.as_bytes());
        let decoded = decode(&bom, Some("text/html; charset=windows-1251"), None);
        assert_eq!(
            (decoded.encoding, decoded.how),
            (UTF_8, EncodingSource::Bom)
        );
        assert_eq!(decoded.text, html);
        // A wrong header label falls through to the meta.
        let decoded = decode(&koi8, Some("text/html; charset=nonsense"), None);
        assert_eq!(
            (decoded.encoding, decoded.how),
            (KOI8_R, EncodingSource::MetaPrescan)
        );
    }

    #[test]
    fn ascii_and_empty_pages_default_to_utf8() {
        for bytes in [&b""[..], b"<p>plain ascii</p>", b"\x1B$B"] {
            let decoded = decode(bytes, None, None);
            assert_eq!(
                (decoded.encoding, decoded.how),
                (UTF_8, EncodingSource::Default)
            );
            assert_eq!(decoded.text.as_bytes(), bytes);
        }
    }

    #[test]
    fn malformed_bytes_become_replacement_characters() {
        let decoded = decode(
            b"ok \xFF\xFE\xFD end",
            Some("text/html; charset=utf-8"),
            None,
        );
        assert_eq!(decoded.text, "ok \u{FFFD}\u{FFFD}\u{FFFD} end");
        let decoded = decode(b"\xEF\xBB\xBFa\xC3", None, None);
        assert_eq!(decoded.text, "a\u{FFFD}");
    }

    #[test]
    fn detection_uses_the_top_level_domain() {
        // Too little text to tell: the domain tips the balance.
        let bytes = b"<p>caf\xE9</p>";
        let guess = |url: Option<&str>| {
            let url = url.map(|url| Url::parse(url).unwrap());
            let decoded = decode(bytes, None, url.as_ref());
            assert_eq!(decoded.how, EncodingSource::Detected);
            decoded.encoding
        };
        assert_eq!(guess(None), WINDOWS_1252);
        assert_eq!(guess(Some("http://example.com/")), WINDOWS_1252);
        assert_eq!(guess(Some("http://example.cz/")), WINDOWS_1250);
        assert_eq!(guess(Some("http://127.0.0.1/")), WINDOWS_1252);
        let bytes = b"<p>\xC0\xC1</p>";
        let guess = |url: &str| decode(bytes, None, Some(&Url::parse(url).unwrap())).encoding;
        assert_eq!(guess("https://www.example.jp/"), encoding_rs::EUC_JP);
        assert_eq!(guess("https://www.example.cn/"), GBK);
        assert_eq!(guess("https://www.example.tw/"), BIG5);
    }

    #[test]
    fn top_level_domains() {
        let tld = |s: &str| top_level_domain(&Url::parse(s).unwrap());
        assert_eq!(tld("http://www.Example.RU/x").as_deref(), Some("ru"));
        assert_eq!(tld("http://example.jp./").as_deref(), Some("jp"));
        assert_eq!(tld("http://пример.рф/").as_deref(), Some("xn--p1ai"));
        assert_eq!(tld("http://localhost:8080/").as_deref(), Some("localhost"));
        assert_eq!(tld("http://127.0.0.1/"), None);
        assert_eq!(tld("http://[::1]/"), None);
        assert_eq!(tld("file:///tmp/x.html"), None);
        // Opaque hosts keep their case and may hold anything: lower-cased
        // and checked, never passed through raw.
        assert_eq!(tld("foo://Example.COM/").as_deref(), Some("com"));
        assert_eq!(tld("foo://a.b%C3%A9/"), None);
    }

    #[test]
    fn schemes() {
        assert_eq!(scheme_of("http://x"), Some("http"));
        assert_eq!(scheme_of("HTTPS://x"), Some("HTTPS"));
        assert_eq!(scheme_of("svn+ssh://x"), Some("svn+ssh"));
        assert_eq!(scheme_of("data:text/html,x"), Some("data"));
        assert_eq!(scheme_of("C:\\page.html"), None);
        assert_eq!(scheme_of("./a:b.html"), None);
        assert_eq!(scheme_of("/tmp/a:b.html"), None);
        assert_eq!(scheme_of("page.html"), None);
        assert_eq!(scheme_of("1http://x"), None);
        assert_eq!(scheme_of("ht tp://x"), None);
        assert_eq!(scheme_of(":x"), None);
    }

    #[tokio::test]
    async fn specs_are_classified() {
        assert_eq!(classify("-").await.unwrap(), Spec::Stdin);
        assert_eq!(
            classify("HTTP://Example.com/a").await.unwrap(),
            Spec::Http(Url::parse("http://example.com/a").unwrap())
        );
        assert_eq!(
            classify("file:///tmp/x.html").await.unwrap(),
            Spec::FileUrl(Url::parse("file:///tmp/x.html").unwrap())
        );
        assert_eq!(
            classify("some/page.html").await.unwrap(),
            Spec::Path(Path::new("some/page.html"))
        );
        assert!(matches!(
            classify("http://").await,
            Err(SourceError::InvalidUrl { .. })
        ));
        assert!(matches!(
            classify("gopher://x").await,
            Err(SourceError::UnsupportedScheme { scheme, .. }) if scheme == "gopher"
        ));
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn an_existing_file_with_a_colon_is_a_path() {
        // Relative to the working directory, as a user would type it; the
        // directory is removed when the test ends.
        let dir = tempfile::Builder::new()
            .prefix("semclip-test:")
            .tempdir_in(".")
            .unwrap();
        let name = dir.path().file_name().unwrap().to_str().unwrap();
        std::fs::write(dir.path().join("page.html"), "x").unwrap();
        let spec = format!("{name}/page.html");
        assert_eq!(classify(&spec).await.unwrap(), Spec::Path(Path::new(&spec)));
        let missing = format!("{name}/missing.html");
        assert!(matches!(
            classify(&missing).await,
            Err(SourceError::UnsupportedScheme { scheme, .. }) if scheme == "semclip-test"
        ));
    }

    #[tokio::test]
    async fn capped_reads() {
        let data = vec![7u8; 100];
        assert_eq!(read_capped(&data[..], 100, 0).await.unwrap(), data);
        assert_eq!(read_capped(&data[..], 1000, 100).await.unwrap(), data);
        assert!(matches!(
            read_capped(&data[..], 99, 100).await,
            Err(CappedReadError::TooLarge)
        ));
        assert!(matches!(
            read_capped(&data[..], 0, 0).await,
            Err(CappedReadError::TooLarge)
        ));
        assert_eq!(read_capped(&b""[..], 0, 0).await.unwrap(), b"");
        // An endless reader stops one byte past the limit.
        assert!(matches!(
            read_capped(tokio::io::repeat(0), 1 << 20, 0).await,
            Err(CappedReadError::TooLarge)
        ));
        // A huge limit or size hint allocates only what arrives.
        assert_eq!(read_capped(&data[..], u64::MAX, 0).await.unwrap(), data);
    }

    #[test]
    fn size_arithmetic_does_not_overflow() {
        assert!(!exceeds(10, 0, 10));
        assert!(exceeds(10, 1, 10));
        assert!(exceeds(usize::MAX, usize::MAX, u64::MAX - 1));
        assert!(!exceeds(usize::MAX, 0, u64::MAX));
    }

    #[test]
    fn defaults() {
        let opts = FetchOptions::default();
        assert_eq!(opts.max_body_bytes, 20 * 1024 * 1024);
        assert_eq!(opts.connect_timeout, Duration::from_secs(10));
        assert_eq!(opts.request_timeout, Duration::from_secs(30));
        assert_eq!(opts.max_redirects, 10);
        assert_eq!(USER_AGENT, format!("semclip/{}", env!("CARGO_PKG_VERSION")));
    }

    #[test]
    fn loading_is_usable_from_multi_thread_runtimes() {
        fn send_sync<T: Send + Sync>(_: &T) {}
        fn send<T: Send>(_: &T) {}
        let client = http_client(&FetchOptions::default()).unwrap();
        send_sync(&client);
        let opts = FetchOptions::default();
        let future = load("-", &client, &opts);
        send(&future);
        send_sync(&SourceError::StdinTooLarge { limit: 0 });
    }

    #[test]
    fn raw_page_debug_shows_the_size_not_the_bytes() {
        let page = RawPage {
            bytes: vec![b'x'; 5000],
            content_type: Some("text/html".into()),
            url: None,
        };
        let debug = format!("{page:?}");
        assert!(debug.contains("[5000 bytes]"), "{debug}");
        assert!(debug.len() < 200, "{debug}");
    }

    #[test]
    fn decode_round_trips_through_a_raw_page() {
        let html = "<meta charset=big5><p>繁體中文</p>";
        let page = RawPage {
            bytes: BIG5.encode(html).0.into_owned(),
            content_type: None,
            url: None,
        };
        let decoded = page.decode();
        assert_eq!((decoded.encoding, decoded.text.as_str()), (BIG5, html));
        let page = RawPage {
            bytes: EUC_KR.encode(html).0.into_owned(),
            content_type: Some("text/html; charset=euc-kr".into()),
            url: None,
        };
        assert_eq!(page.decode().text, html);
        let page = RawPage {
            bytes: SHIFT_JIS.encode("<p>日本語</p>").0.into_owned(),
            content_type: Some("text/html; charset=gbk".into()),
            url: None,
        };
        assert_eq!(page.decode().encoding, GBK);
    }

    proptest! {
        #[test]
        fn decode_never_panics(
            bytes in proptest::collection::vec(any::<u8>(), 0..2048),
            content_type in proptest::option::of(".{0,60}"),
            host in "[a-zA-Z0-9.-]{1,20}",
        ) {
            let url = Url::parse(&format!("http://{host}/")).ok();
            let decoded = decode(&bytes, content_type.as_deref(), url.as_ref());
            // Whatever was chosen, the text is what that encoding makes of the bytes.
            if decoded.how != EncodingSource::Bom {
                let (expected, _) = decoded.encoding.decode_without_bom_handling(&bytes);
                prop_assert_eq!(decoded.text, expected);
            }
        }

        #[test]
        fn prescan_never_panics_on_markup(html in r#"[<>!\-/?="' a-zA-Z\t\n]{0,200}"#) {
            let _ = prescan(html.as_bytes());
            let _ = prescan(format!("<meta {html}").as_bytes());
        }

        #[test]
        fn utf8_text_round_trips(text in "\\PC{0,200}") {
            let html = format!("<meta charset=utf-8>{text}");
            prop_assert_eq!(&decode(html.as_bytes(), None, None).text, &html);
            let labelled = decode(html.as_bytes(), Some("text/html; charset=UTF-8"), None);
            prop_assert_eq!(&labelled.text, &html);
            let mut bom = b"\xEF\xBB\xBF".to_vec();
            bom.extend_from_slice(text.as_bytes());
            prop_assert_eq!(decode(&bom, None, None).text, text);
        }
    }
}
