//! A local fixture site for the daemon throughput benchmark
//! (`bench/daemon/run.py`, issue 4):
//!
//! ```sh
//! fixture_site --listen 127.0.0.1:PORT --pages N
//! ```
//!
//! serves `/p/{i}.html` for `i` in `0..N`: a quote page of a few KB (a
//! heading, a table of 20 rows x 5 numeric columns whose values derive from
//! `i`, a nav list, a footer). Pages are rendered once at start and served
//! from memory without `ETag` or `Last-Modified`, so every check downloads
//! and parses the whole page (the worst case for a monitor). `/health`
//! answers `ok` once the listener is up; the process stops on SIGTERM or
//! Ctrl-C.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

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

async fn serve_page(State(pages): State<Arc<Vec<Bytes>>>, Path(name): Path<String>) -> Response {
    let found = name
        .strip_suffix(".html")
        .and_then(|n| n.parse::<usize>().ok())
        .and_then(|i| pages.get(i));
    match found {
        Some(body) => (
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            body.clone(),
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "no such page\n").into_response(),
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
    let pages: Vec<Bytes> = (0..args.pages).map(|i| Bytes::from(page(i))).collect();
    let app = Router::new()
        .route("/p/{name}", get(serve_page))
        .route("/health", get(|| async { "ok\n" }))
        .with_state(Arc::new(pages));
    // One worker thread: the site must leave the other core to the tool measured.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(&args.listen).await?;
        eprintln!(
            "fixture_site: {} pages on http://{}/p/{{i}}.html",
            args.pages,
            listener.local_addr()?
        );
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown())
            .await?;
        Ok(())
    })
}
