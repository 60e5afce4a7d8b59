//! What rendering a page in the daemon's browser costs, against fetching
//! it over HTTP (see BENCHMARKS.md, "JavaScript pages").
//!
//! ```text
//! browser_costs [RENDERS] [MAX_TABS] [ROWS]
//! ```
//!
//! A local site serves a quote page whose table (`ROWS` rows, default
//! 200; 0 for a page with only the table's header, which measures what a
//! render costs whatever the page) a script writes 300 ms after load. The example then measures, with Debian's Chromium:
//!
//! 1. the first render (the browser's start included);
//! 2. `RENDERS` (default 20) warm renders one after another, and as many
//!    plain HTTP fetches of the same page: wall time and CPU time per page
//!    (this process and the browser's processes, from `/proc`);
//! 3. the browser's memory (PSS summed over its processes, from
//!    `/proc/PID/smaps_rollup`) with 1, 2, 4 ... `MAX_TABS` (default 8)
//!    tabs open at once, each waiting 3 s for an element.

use std::sync::Arc;
use std::time::{Duration, Instant};

use semclip::page::browser::{
    BrowserSettings, Browsers, Job, Ready, RenderOptions, RenderRequest, WaitFor, tree_pss,
};

fn page(price: &str, hold_ms: u32, rows: u32) -> String {
    format!(
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>Quotes</title></head>\
         <body><h1>Market</h1><div id=m>Loading...</div><script>\
         setTimeout(function () {{\
           var h = '<table id=quotes><caption>Shares</caption><tr><th>Ticker</th><th>Last</th></tr>';\
           for (var i = 0; i < {rows}; i++) h += '<tr><td>T' + i + '</td><td>{price}</td></tr>';\
           document.getElementById('m').innerHTML = h + '</table>';\
         }}, 300);\
         setTimeout(function () {{ document.body.innerHTML += '<p id=done>done</p>'; }}, {hold_ms});\
         </script></body></html>"
    )
}

/// CPU seconds (user + system) of `pid` and its descendants, those
/// already exited and reaped included.
fn tree_cpu(pid: u32) -> f64 {
    let ticks = 100.0; // USER_HZ on Linux
    let mut pids = vec![pid];
    let all: Vec<(u32, u32, u64)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let p: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let f: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
            // utime, stime, and the cutime and cstime of its children
            // already reaped: Chromium's renderers (a new one per browser
            // context, so one per render) exit and are reaped by the
            // zygote, and their CPU would otherwise leave the sum with them.
            let cpu = (11..=14)
                .map(|i| f.get(i)?.parse::<u64>().ok())
                .sum::<Option<u64>>()?;
            Some((p, f.get(1)?.parse().ok()?, cpu))
        })
        .collect();
    let mut i = 0;
    while let Some(&p) = pids.get(i) {
        pids.extend(all.iter().filter(|q| q.1 == p).map(|q| q.0));
        i += 1;
    }
    all.iter()
        .filter(|q| pids.contains(&q.0))
        .map(|q| q.2 as f64 / ticks)
        .sum()
}

fn self_cpu() -> f64 {
    tree_cpu(std::process::id())
}

#[tokio::main]
#[expect(
    clippy::too_many_lines,
    reason = "the measurement's steps in order, printed as they go"
)]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let renders: usize = args.next().map_or(Ok(20), |a| a.parse())?;
    let max_tabs: usize = args.next().map_or(Ok(8), |a| a.parse())?;
    let rows: u32 = args.next().map_or(Ok(200), |a| a.parse())?;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let app = axum::Router::new()
        .route(
            "/quotes.html",
            axum::routing::get(
                move || async move { axum::response::Html(page("305,40", 0, rows)) },
            ),
        )
        .route(
            "/hold.html",
            axum::routing::get(
                move || async move { axum::response::Html(page("305,40", 3000, rows)) },
            ),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    let url = url::Url::parse(&format!("http://{addr}/quotes.html"))?;
    let hold = url::Url::parse(&format!("http://{addr}/hold.html"))?;

    let browsers = Arc::new(Browsers::new(BrowserSettings {
        max_pages: max_tabs,
        ..BrowserSettings::default()
    }));
    let options = RenderOptions {
        wait_for: Some(Ready::Dom(WaitFor::parse("#quotes tr"))),
        ..RenderOptions::default()
    };
    // The default fence: the watch's own origin (the local fixture) is
    // trusted, as a watch URL is.
    let fence = semclip::page::fence::Fence::default();
    let request = |url| RenderRequest {
        fence: &fence,
        url,
        options: &options,
        headers: &[],
        headers_cross_origin: false,
        cookies: &[],
        job: Job::Page,
        hierarchy: None,
        timeout: Duration::from_secs(30),
        max_bytes: 20 << 20,
    };

    let t = Instant::now();
    let html = browsers.render(request(&url)).await?.html;
    println!(
        "first render (browser start included): {:.0} ms, {} bytes",
        t.elapsed().as_secs_f64() * 1e3,
        html.len()
    );
    let pid = browsers.pid().await.unwrap_or(0);

    let (cpu0, own0, t) = (tree_cpu(pid), self_cpu(), Instant::now());
    for _ in 0..renders {
        browsers.render(request(&url)).await?;
    }
    let wall = t.elapsed().as_secs_f64() / renders as f64;
    let browser_cpu = (tree_cpu(pid) - cpu0) / renders as f64;
    // The browser is this process's child: its CPU is in this tree's too.
    let all_cpu = (self_cpu() - own0) / renders as f64;
    let own_cpu = all_cpu - browser_cpu;
    println!(
        "warm render: {:.0} ms wall, {:.1} ms CPU per page ({:.1} ms browser, {:.1} ms semclip); {:.2} pages/s",
        wall * 1e3,
        all_cpu * 1e3,
        browser_cpu * 1e3,
        own_cpu * 1e3,
        1.0 / wall
    );

    let client = reqwest::Client::new();
    let (own0, t) = (self_cpu(), Instant::now());
    for _ in 0..renders {
        client.get(url.clone()).send().await?.text().await?;
    }
    let wall = t.elapsed().as_secs_f64() / renders as f64;
    let own_cpu = (self_cpu() - own0) / renders as f64;
    println!(
        "plain HTTP fetch: {:.2} ms wall, {:.2} ms CPU per page; {:.0} pages/s",
        wall * 1e3,
        own_cpu * 1e3,
        1.0 / wall
    );

    println!("idle browser: PSS {:.1} MB", tree_pss(pid) as f64 / 1e6);
    let mut n = 1;
    while n <= max_tabs {
        let options = RenderOptions {
            wait_for: Some(Ready::Dom(WaitFor::parse("#done"))),
            ..RenderOptions::default()
        };
        let mut tasks = Vec::new();
        for _ in 0..n {
            let (browsers, hold, options) = (Arc::clone(&browsers), hold.clone(), options.clone());
            tasks.push(tokio::spawn(async move {
                let fence = semclip::page::fence::Fence::default();
                browsers
                    .render(RenderRequest {
                        fence: &fence,
                        url: &hold,
                        options: &options,
                        headers: &[],
                        headers_cross_origin: false,
                        cookies: &[],
                        job: Job::Page,
                        hierarchy: None,
                        timeout: Duration::from_secs(30),
                        max_bytes: 20 << 20,
                    })
                    .await
                    .map(|r| r.html.len())
            }));
        }
        tokio::time::sleep(Duration::from_millis(2000)).await;
        let pss = tree_pss(pid);
        for task in tasks {
            task.await??;
        }
        println!("{n} tabs open: PSS {:.1} MB", pss as f64 / 1e6);
        n *= 2;
    }
    println!("browsers started: {}", browsers.launches());
    browsers.shutdown().await;
    Ok(())
}
