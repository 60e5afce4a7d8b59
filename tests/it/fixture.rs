//! A local fixture site for the daemon tests, on 127.0.0.1 with its own
//! runtime thread (the daemon under test is a separate process):
//!
//! - `/quotes.html`: a quote page whose GAZP price and markup the test sets,
//!   with an `ETag` over the body and `304` for a matching `If-None-Match`;
//! - `/quotes/N`: the same page under as many addresses as a test needs
//!   (each logged under its own path, so fetches are counted per page);
//! - hostile pages: `/silent` (never answers), `/trickle` (a byte a second),
//!   `/huge` (50 MB), `/bomb` (a gzip bomb), `/loop` (a redirect loop),
//!   `/error` (500), `/bad-utf8` (invalid UTF-8 in a page declaring UTF-8),
//!   `/to-port-N` (a redirect to `http://127.0.0.1:N/quotes.html`),
//!   and the page shapes of [`crate::hostile::shapes`] by name.
//!
//! `/quotes.html` can also be set to answer as a bot wall does: `503`, a
//! Cloudflare-style challenge page and `Retry-After: 5`.
//!
//! Every request is logged with its `If-None-Match` and its time.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// One request the site saw.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The path.
    pub path: String,
    /// Its `If-None-Match`, if any.
    pub if_none_match: Option<String>,
    /// The status answered.
    pub status: u16,
    /// All its headers.
    pub headers: HeaderMap,
    /// When it arrived.
    pub at: std::time::Instant,
}

#[derive(Debug, Default)]
struct SiteState {
    price: String,
    markup: u32,
    blocked: bool,
    seen: Vec<Seen>,
}

/// The running site.
pub struct Site {
    /// Its address.
    pub addr: SocketAddr,
    state: Arc<Mutex<SiteState>>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Site {
    /// Starts the site on 127.0.0.1 with GAZP at `price`.
    pub fn start(price: &str) -> Site {
        Site::start_on("127.0.0.1", price)
    }

    /// Starts the site on `ip` (a loopback address) with GAZP at `price`.
    pub fn start_on(ip: &str, price: &str) -> Site {
        let bind = format!("{ip}:0");
        let state = Arc::new(Mutex::new(SiteState {
            price: price.to_owned(),
            ..SiteState::default()
        }));
        let app = Router::new()
            .route("/quotes.html", get(quotes))
            .route("/quotes/{page}", get(numbered_quotes))
            .route("/{hostile}", get(hostile))
            .with_state(Arc::clone(&state));
        let (addr, stop) = serve(&bind, app);
        Site {
            addr,
            state,
            _stop: stop,
        }
    }

    /// The URL of `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Sets GAZP's price as the page writes it (`305,40`).
    pub fn set_price(&self, price: &str) {
        self.state.lock().unwrap().price = price.to_owned();
    }

    /// Makes `/quotes.html` answer with a challenge (`true`) or the page.
    pub fn set_blocked(&self, blocked: bool) {
        self.state.lock().unwrap().blocked = blocked;
    }

    /// Changes the page's markup, not its data.
    pub fn churn_markup(&self) {
        self.state.lock().unwrap().markup += 1;
    }

    /// The requests for `path` so far.
    pub fn seen(&self, path: &str) -> Vec<Seen> {
        let state = self.state.lock().unwrap();
        state
            .seen
            .iter()
            .filter(|s| s.path == path)
            .cloned()
            .collect()
    }

    /// Every request so far, in the order they arrived.
    pub fn all_seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    /// Waits until `path` has been requested `n` times in all.
    pub fn wait_for(&self, path: &str, n: usize, timeout: Duration) {
        let start = std::time::Instant::now();
        while self.seen(path).len() < n {
            assert!(
                start.elapsed() < timeout,
                "{path} requested {} times, not {n}, within {timeout:?}",
                self.seen(path).len()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A test's own little site on loopback: its handlers share `state`, which
/// the test reads and changes; served until dropped.
pub struct StateSite<S> {
    addr: SocketAddr,
    state: Arc<Mutex<S>>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl<S: Send + 'static> StateSite<S> {
    /// Serves `routes` with `state` on a free loopback port.
    pub fn start(state: S, routes: Router<Arc<Mutex<S>>>) -> StateSite<S> {
        let state = Arc::new(Mutex::new(state));
        let (addr, stop) = serve("127.0.0.1:0", routes.with_state(Arc::clone(&state)));
        StateSite {
            addr,
            state,
            _stop: stop,
        }
    }

    /// The URL of `path` on the site.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The shared state, locked.
    pub fn state(&self) -> std::sync::MutexGuard<'_, S> {
        self.state.lock().unwrap()
    }
}

/// Serves `app` on `bind` (a loopback `IP:0`) from a runtime thread of its
/// own: the address bound, and the sender that stops it when dropped.
pub fn serve(bind: &str, app: Router) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
    let bind = bind.to_owned();
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind(bind).await.unwrap();
            addr_tx.send(listener.local_addr().unwrap()).unwrap();
            let server = axum::serve(listener, app);
            tokio::select! {
                _ = server => {}
                _ = stop_rx => {}
            }
        });
    });
    let addr = addr_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    (addr, stop_tx)
}

/// The quote page: the data (GAZP's price) and a markup variant.
pub fn quotes_page(price: &str, markup: u32) -> String {
    // Markup variants: class names, attribute order, wrappers, comments.
    let (class, wrap_open, wrap_close) = match markup % 3 {
        0 => ("quotes", "", ""),
        1 => ("q-table v2", "<div class=\"wrap\">", "</div>"),
        _ => ("t", "<section><div>", "</div></section>"),
    };
    format!(
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>Quotes</title>\
         <script>var build={markup};</script></head><body>\
         <!-- build {markup} --><h1>Market</h1>{wrap_open}\
         <table class=\"{class}\" id=\"t{markup}\"><caption>Shares</caption>\
         <tr><th>Ticker</th><th>Last</th><th>Open</th></tr>\
         <tr><td><b>GAZP</b></td><td>{price}</td><td>249,10</td></tr>\
         <tr><td>SBER</td><td>300,15</td><td>302,00</td></tr>\
         </table>{wrap_close}<p style=\"color:#{markup:03}\">Prices in roubles.</p></body></html>"
    )
}

fn log(state: &Mutex<SiteState>, path: &str, headers: &HeaderMap, status: u16) {
    let if_none_match = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    state.lock().unwrap().seen.push(Seen {
        path: path.to_owned(),
        if_none_match,
        status,
        headers: headers.clone(),
        at: std::time::Instant::now(),
    });
}

async fn quotes(State(state): State<Arc<Mutex<SiteState>>>, headers: HeaderMap) -> Response {
    quotes_at(&state, "/quotes.html", &headers)
}

async fn numbered_quotes(
    State(state): State<Arc<Mutex<SiteState>>>,
    Path(page): Path<u32>,
    headers: HeaderMap,
) -> Response {
    quotes_at(&state, &format!("/quotes/{page}"), &headers)
}

/// The quote page (or the bot wall), logged under `path`.
fn quotes_at(state: &Mutex<SiteState>, path: &str, headers: &HeaderMap) -> Response {
    let (body, blocked) = {
        let s = state.lock().unwrap();
        (quotes_page(&s.price, s.markup), s.blocked)
    };
    if blocked {
        log(state, path, headers, 503);
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (header::RETRY_AFTER, "5"),
                (header::SERVER, "cloudflare"),
            ],
            "<!DOCTYPE html><html><head><title>Just a moment...</title></head><body>\
             <h1>Checking your browser</h1><table><tr><th>Ticker<th>Last</tr>\
             <tr><td>GAZP<td>0</tr></table>\
             <script src=\"/cdn-cgi/challenge-platform/h/b/orchestrate/jsch/v1\"></script>\
             </body></html>",
        )
            .into_response();
    }
    let etag = format!("\"{}\"", &blake3::hash(body.as_bytes()).to_hex()[..16]);
    let matches = headers
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes() == etag.as_bytes());
    let status = if matches { 304 } else { 200 };
    log(state, path, headers, status);
    if matches {
        return (StatusCode::NOT_MODIFIED, [(header::ETAG, etag)]).into_response();
    }
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8".to_owned()),
            (header::ETAG, etag),
        ],
        body,
    )
        .into_response()
}

/// The bomb served at `/bomb`: 100 MiB of zeros, built once.
fn bomb() -> &'static Vec<u8> {
    static BOMB: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BOMB.get_or_init(|| gzip_bomb(100))
}

/// A gzip stream of `mib` MiB of zeros (about 1 KB per MiB).
pub fn gzip_bomb(mib: usize) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..mib {
        encoder.write_all(&zeros).unwrap();
    }
    encoder.finish().unwrap()
}

async fn hostile(
    State(state): State<Arc<Mutex<SiteState>>>,
    Path(which): Path<String>,
    headers: HeaderMap,
) -> Response {
    let path = format!("/{which}");
    let response = match which.as_str() {
        "silent" => {
            log(&state, &path, &headers, 0);
            tokio::time::sleep(Duration::from_secs(3600)).await;
            return StatusCode::OK.into_response();
        }
        "trickle" => {
            let stream = async_stream(Duration::from_secs(1), 3600, b"<p>x</p>".to_vec());
            Response::builder()
                .header(header::CONTENT_TYPE, "text/html")
                .body(Body::from_stream(stream))
                .unwrap()
        }
        "huge" => {
            let chunk = "<p>data data data data</p>".repeat(2048).into_bytes();
            let count = 50_000_000 / chunk.len() + 1;
            let stream = async_stream(Duration::ZERO, count, chunk);
            Response::builder()
                .header(header::CONTENT_TYPE, "text/html")
                .body(Body::from_stream(stream))
                .unwrap()
        }
        "bomb" => Response::builder()
            .header(header::CONTENT_TYPE, "text/html")
            .header(header::CONTENT_ENCODING, "gzip")
            .body(Body::from(bomb().clone()))
            .unwrap(),
        "loop" => Response::builder()
            .status(StatusCode::FOUND)
            .header(header::LOCATION, "/loop")
            .body(Body::empty())
            .unwrap(),
        "error" => (StatusCode::INTERNAL_SERVER_ERROR, "broken").into_response(),
        port if port.starts_with("to-port-") => Response::builder()
            .status(StatusCode::FOUND)
            .header(
                header::LOCATION,
                format!("http://127.0.0.1:{}/quotes.html", &port["to-port-".len()..]),
            )
            .body(Body::empty())
            .unwrap(),
        "bad-utf8" => {
            let mut body = b"<html><head><meta charset=utf-8><title>Bad</title></head><body>\
                <table><caption>Shares</caption><tr><th>Ticker<th>Last<tr><td>GAZP<td>251,30\
                <tr><td>CAF\xC3\x28<td>1,00</table><p>\xFF\xFE broken \xE2\x82</p></body></html>"
                .to_vec();
            body.extend_from_slice(b"\n");
            let mut response = Response::new(Body::from(body));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            );
            response
        }
        other => match crate::hostile::shapes()
            .into_iter()
            .find(|(n, _)| *n == other)
        {
            // The hostile page shapes (`/span-bomb`, `/misnested-formatting` ...).
            Some((_, page)) => {
                let mut response = Response::new(Body::from(page));
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/html; charset=utf-8"),
                );
                response
            }
            None => StatusCode::NOT_FOUND.into_response(),
        },
    };
    log(&state, &path, &headers, response.status().as_u16());
    response
}

/// `count` copies of `chunk`, one every `every`.
fn async_stream(
    every: Duration,
    count: usize,
    chunk: Vec<u8>,
) -> impl tokio_stream::Stream<Item = Result<Vec<u8>, std::io::Error>> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(4);
    tokio::spawn(async move {
        for _ in 0..count {
            if !every.is_zero() {
                tokio::time::sleep(every).await;
            }
            if tx.send(Ok(chunk.clone())).await.is_err() {
                return;
            }
        }
    });
    tokio_stream::wrappers::ReceiverStream::new(rx)
}
