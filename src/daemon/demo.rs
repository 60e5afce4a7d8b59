//! The demo site the daemon serves when its file says `demo: {listen: ...}`
//! (and `semclip check` too, for the length of its checks), so that a
//! newcomer sees checks, semantic changes and threshold alerts on a
//! machine with no internet.
//!
//! `/quotes.html` is the bundled `site/quotes.html` with GAZP's last price
//! stepping through a fixed cycle every [`STEP`] from the moment the site
//! started (it crosses 300 and comes back), the page's clock set to the
//! current time (a change the bundled watch ignores), and a fresh random
//! markup attribute on every request (markup churn the semantic hierarchy
//! never sees). `/news.html` is a news list that gains a headline every
//! [`STEP`] (the oldest drops off).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::response::Html;
use axum::routing::get;

/// How long each price of the cycle stays on the page.
pub const STEP: Duration = Duration::from_secs(10);

/// GAZP's last price, step by step (the bundled watch alerts above 300).
pub const CYCLE: [f64; 6] = [251.30, 268.40, 305.40, 312.75, 296.10, 288.20];

const PAGE: &str = include_str!("../../site/quotes.html");

/// The page at `step` of the cycle, with `clock` as its time and `noise`
/// as its markup churn.
pub fn quotes_page(step: usize, clock: &str, noise: u32) -> String {
    let price = CYCLE[step % CYCLE.len()];
    let change = (price - 249.10) / 249.10 * 100.0;
    let class = if change >= 0.0 { "up" } else { "down" };
    let comma = |v: f64, digits: usize| format!("{v:.digits$}").replace('.', ",");
    let sign = if change >= 0.0 { "+" } else { "−" };
    PAGE.replace(
        r#"<td class="up">251,30</td><td>249,10</td><td class="up">+0,88%</td>"#,
        &format!(
            r#"<td class="{class}" data-n="{noise}">{}</td><td>249,10</td><td class="{class}">{sign}{}%</td>"#,
            comma(price, 2),
            comma(change.abs(), 2)
        ),
    )
    .replace(
        r#"<span class="time">18:45</span>"#,
        &format!(r#"<span class="time" id="t{noise}">{clock}</span>"#),
    )
}

/// Serves the demo site on `addr` until the task is dropped.
///
/// # Errors
///
/// The address cannot be bound.
pub async fn serve(addr: SocketAddr) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    serve_on(listener).await
}

/// Serves the demo site on a bound listener until the task is dropped
/// (`semclip check` binds first, to know whether it got the address).
///
/// # Errors
///
/// Accepting connections failed.
pub async fn serve_on(listener: tokio::net::TcpListener) -> std::io::Result<()> {
    let addr = listener.local_addr()?;
    tracing::info!(%addr, "demo site: http://{addr}/quotes.html");
    let app = Router::new()
        .route("/quotes.html", get(quotes))
        .route("/news.html", get(news))
        .with_state(Instant::now());
    axum::serve(listener, app).await
}

fn step(started: Instant) -> usize {
    usize::try_from(started.elapsed().as_secs() / STEP.as_secs()).unwrap_or(0)
}

const HEADLINES: [&str; 5] = [
    "GAZP board proposes dividends",
    "SBER reports quarterly profit",
    "LKOH buys back shares",
    "The exchange extends evening trading",
    "YNDX completes restructuring",
];

/// The news page at `step`: the three latest headlines, newest first.
pub fn news_page(step: usize) -> String {
    let items: String = (0..3)
        .map(|i| {
            let n = step + 2 - i;
            format!(
                "<li><a href=\"/news/{n}\">{} (#{n})</a></li>",
                HEADLINES[n % HEADLINES.len()]
            )
        })
        .collect();
    format!(
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>Exchange news</title></head>\
         <body><h1>Exchange news</h1><ul>{items}</ul></body></html>"
    )
}

async fn news(State(started): State<Instant>) -> Html<String> {
    Html(news_page(step(started)))
}

async fn quotes(State(started): State<Instant>) -> Html<String> {
    let step = step(started);
    let clock = chrono::Local::now().format("%H:%M:%S").to_string();
    Html(quotes_page(step, &clock, rand::random()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_carries_the_step_price_and_clock() {
        let page = quotes_page(2, "12:34:56", 7);
        assert!(page.contains(">305,40</td>"), "{page}");
        assert!(page.contains(">+22,60%</td>"));
        assert!(page.contains(">12:34:56</span>"));
        let page = quotes_page(0, "x", 1);
        assert!(page.contains(">251,30</td>") && page.contains(">+0,88%</td>"));
    }

    #[test]
    fn the_news_page_gains_a_headline_per_step() {
        let h0 = crate::hierarchy::Hierarchy::from_html(&news_page(0), None);
        let h1 = crate::hierarchy::Hierarchy::from_html(&news_page(1), None);
        let changes = crate::diff::diff(&h0, &h1);
        assert!(!changes.is_empty());
        assert!(news_page(1).contains("(#3)") && !news_page(1).contains("(#0)"));
    }
}
