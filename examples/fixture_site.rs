//! A local fixture site for the daemon throughput benchmark
//! (`bench/daemon/run.py`, issue 4):
//!
//! ```sh
//! fixture_site --listen 127.0.0.1:PORT --pages N
//! ```
//!
//! serves, for `i` in `0..N`:
//!
//! - `/p/{i}.html`: a quote page of a few KB (a heading, a table of 20
//!   rows x 5 numeric columns whose values derive from `i`, a nav list, a
//!   footer);
//! - `/b/{i}.html`: the 64 KB exchange board (`benches/board_page.rs`, 300
//!   issuers x 10 values), the same board for every `i` but for its
//!   `<title>`, which ends with `i`. Which variant of the board is served,
//!   to every page at once, is switched by `POST /round/{variant}`:
//!   `base` (at start: `board_page(300, 0, 0)`), `markup` (the same data in
//!   other markup: `board_page(300, 1, 0)`) or `data` (that other markup
//!   with 3 cells changed: `board_page(300, 1, 3)`).
//!
//! Pages are rendered once at start (the board: its three variants, each
//! split at its title) and served from memory without `ETag` or
//! `Last-Modified`, so every check downloads and parses the whole page (the
//! worst case for a monitor). `/health` answers `ok` once the listener is
//! up; the process stops on SIGTERM or Ctrl-C.

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

#[path = "../benches/board_page.rs"]
mod board_page;

const ROWS: usize = 20;
const TICKERS: [&str; ROWS] = [
    "GAZP", "SBER", "LKOH", "GMKN", "NVTK", "ROSN", "TATN", "MGNT", "YNDX", "PLZL", "SNGS", "MTSS",
    "ALRS", "CHMF", "NLMK", "POLY", "VTBR", "IRAO", "AFLT", "PHOR",
];

/// A small deterministic mix of `i` and `salt` (SplitMix64's finaliser).
fn mix(i: u64, salt: u64) -> u64 {
    let mut z = i
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(salt.wrapping_mul(0xBF58_476D_1CE4_E5B9));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Page `i`: values derive from `i` only, so every request gets the same bytes.
fn page(i: u64) -> String {
    let mut s = String::with_capacity(6 * 1024);
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>Quotes board {i}</title>\n\
         <style>.up {{ color: green }} .down {{ color: red }}</style>\n</head>\n<body>\n\
         <nav><ul><li><a href=\"/\">Home</a></li><li><a href=\"/shares\">Shares</a></li>\
         <li><a href=\"/bonds\">Bonds</a></li><li><a href=\"/fx\">Currencies</a></li>\
         <li><a href=\"/about\">About</a></li></ul></nav>\n\
         <main>\n<h1>Trading results, board {i}</h1>\n\
         <p>Data as of the close; values are delayed by 15 minutes.</p>\n\
         <table class=\"quotes\">\n<caption>Shares</caption>\n\
         <thead><tr><th>Ticker</th><th>Last</th><th>Open</th><th>High</th><th>Low</th>\
         <th>Volume</th></tr></thead>\n<tbody>\n"
    );
    for (r, ticker) in TICKERS.iter().enumerate() {
        let h = mix(i, r as u64);
        let last = 1000 + h % 900_000; // hundredths
        let open = last - last / 50 + (h >> 20) % (last / 25 + 1);
        let high = last.max(open) + (h >> 30) % 500;
        let low = last.min(open).saturating_sub((h >> 40) % 500);
        let volume = 10_000 + (h >> 12) % 90_000_000;
        let class = if last >= open { "up" } else { "down" };
        let _ = writeln!(
            s,
            "<tr><td><a href=\"/q/{ticker}\"><b>{ticker}</b></a></td>\
             <td class=\"{class}\">{}.{:02}</td><td>{}.{:02}</td><td>{}.{:02}</td>\
             <td>{}.{:02}</td><td>{volume}</td></tr>",
            last / 100,
            last % 100,
            open / 100,
            open % 100,
            high / 100,
            high % 100,
            low / 100,
            low % 100,
        );
    }
    let _ = write!(
        s,
        "</tbody>\n</table>\n<p>Prices in roubles. Volume in lots.</p>\n</main>\n\
         <footer><p>© 2026 Example Exchange Data. For information only; not an offer.</p>\
         <ul><li><a href=\"/terms\">Terms</a></li><li><a href=\"/privacy\">Privacy</a></li>\
         <li><a href=\"/contact\">Contact</a></li></ul></footer>\n</body>\n</html>\n"
    );
    s
}

struct Args {
    listen: String,
    pages: u64,
}

fn parse_args() -> Result<Args, String> {
    let mut listen = String::from("127.0.0.1:8800");
    let mut pages = 1000u64;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--listen" => listen = it.next().ok_or("--listen needs ADDR:PORT")?,
            "--pages" => {
                let v = it.next().ok_or("--pages needs a number")?;
                pages = v.parse().map_err(|e| format!("--pages {v}: {e}"))?;
            }
            "-h" | "--help" => {
                return Err("usage: fixture_site --listen 127.0.0.1:PORT --pages N".into());
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(Args { listen, pages })
}

/// The board's variants, in the order of [`ROUNDS`].
const ROUNDS: [&str; 3] = ["base", "markup", "data"];

/// One rendering of the board, split just before `</title>` so that page
/// `i` is `head`, ` i`, `tail`.
struct Board {
    head: Bytes,
    tail: Bytes,
}

impl Board {
    fn new(page: &str) -> Self {
        // The board always has a title; without one, ` i` would go last.
        let at = page.find("</title>").unwrap_or(page.len());
        Self {
            head: Bytes::copy_from_slice(&page.as_bytes()[..at]),
            tail: Bytes::copy_from_slice(&page.as_bytes()[at..]),
        }
    }

    fn page(&self, i: usize) -> Vec<u8> {
        let mut body = Vec::with_capacity(self.head.len() + self.tail.len() + 24);
        body.extend_from_slice(&self.head);
        let _ = write!(body, " {i}");
        body.extend_from_slice(&self.tail);
        body
    }
}

struct Site {
    pages: Vec<Bytes>,
    /// The board's variants, indexed like [`ROUNDS`].
    boards: [Board; 3],
    /// Which variant of the board is served (an index into [`ROUNDS`]).
    round: AtomicUsize,
}

/// The page index in `{i}.html`, if below `n`.
fn index(name: &str, n: usize) -> Option<usize> {
    name.strip_suffix(".html")
        .and_then(|stem| stem.parse::<usize>().ok())
        .filter(|&i| i < n)
}

fn html(body: impl Into<axum::body::Body>) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body.into(),
    )
        .into_response()
}

fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "no such page\n").into_response()
}

async fn serve_page(State(site): State<Arc<Site>>, Path(name): Path<String>) -> Response {
    match index(&name, site.pages.len()) {
        Some(i) => html(site.pages[i].clone()),
        None => not_found(),
    }
}

async fn serve_board(State(site): State<Arc<Site>>, Path(name): Path<String>) -> Response {
    match index(&name, site.pages.len()) {
        Some(i) => html(site.boards[site.round.load(Ordering::Relaxed)].page(i)),
        None => not_found(),
    }
}

/// `POST /round/{variant}`: serves that variant of the board from now on.
async fn set_round(State(site): State<Arc<Site>>, Path(variant): Path<String>) -> Response {
    match ROUNDS.iter().position(|r| *r == variant) {
        Some(k) => {
            site.round.store(k, Ordering::Relaxed);
            format!("board: {variant}\n").into_response()
        }
        None => (
            StatusCode::NOT_FOUND,
            format!("no variant `{variant}` (base, markup, data)\n"),
        )
            .into_response(),
    }
}

async fn shutdown() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args()?;
    let site = Site {
        pages: (0..args.pages).map(|i| Bytes::from(page(i))).collect(),
        boards: [(0, 0), (1, 0), (1, 3)]
            .map(|(markup, changed)| Board::new(&board_page::board_page(300, markup, changed))),
        round: AtomicUsize::new(0),
    };
    let app = Router::new()
        .route("/p/{name}", get(serve_page))
        .route("/b/{name}", get(serve_board))
        .route("/round/{variant}", post(set_round))
        .route("/health", get(|| async { "ok\n" }))
        .with_state(Arc::new(site));
    // One worker thread: the site must leave the other core to the tool measured.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(&args.listen).await?;
        eprintln!(
            "fixture_site: {} pages on http://{addr}/p/{{i}}.html and http://{addr}/b/{{i}}.html",
            args.pages,
            addr = listener.local_addr()?
        );
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown())
            .await?;
        Ok(())
    })
}
