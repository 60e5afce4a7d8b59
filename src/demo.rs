//! The demo site the daemon serves when its file says `demo: {listen: ...}`,
//! so that a newcomer sees checks, semantic changes and threshold alerts on a
//! machine with no internet.
//!
//! `/quotes.html` is the bundled `site/quotes.html` with GAZP's last price
//! stepping through a fixed cycle every [`STEP`] from the moment the site
//! started (it crosses 300 and comes back), the page's clock set to the
//! current time (a change the bundled watch ignores), and a fresh random
//! markup attribute on every request (markup churn the semantic hierarchy
//! never sees).

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

const PAGE: &str = include_str!("../site/quotes.html");

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
    tracing::info!(%addr, "demo site: http://{addr}/quotes.html");
    let app = Router::new()
        .route("/quotes.html", get(quotes))
        .with_state(Instant::now());
    axum::serve(listener, app).await
}

async fn quotes(State(started): State<Instant>) -> Html<String> {
    let step = usize::try_from(started.elapsed().as_secs() / STEP.as_secs()).unwrap_or(0);
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
}
