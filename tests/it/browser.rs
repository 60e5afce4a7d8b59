//! `fetch: {render: browser}` end to end: the real `semclip` binary and
//! Debian's Chromium against a local site whose pages are built by
//! JavaScript, hang, crash their renderer or never show what is waited
//! for. Without Chromium the tests skip with a message, or fail under `CI`.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Path as UrlPath, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::daemon::{Daemon, GAZP, file_alerts, kinds, setup, store, wait_until};
use crate::fixture::Site;
use crate::util::chromium;

/// A site whose quote table is written by a script 300 ms after load.
struct JsSite {
    addr: SocketAddr,
    state: Arc<Mutex<JsState>>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

#[derive(Default)]
struct JsState {
    price: String,
    /// Another local server the escaping pages reach for.
    other: Option<SocketAddr>,
    /// Each request: path and when it arrived.
    seen: Vec<(String, Instant)>,
    /// Each request for `/etag.html`: whether the browser made it, and
    /// the status it got.
    etag: Vec<(bool, u16)>,
}

impl JsSite {
    fn start(price: &str) -> JsSite {
        let state = Arc::new(Mutex::new(JsState {
            price: price.to_owned(),
            ..JsState::default()
        }));
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                let app = Router::new().route("/{page}", get(page)).with_state(shared);
                tokio::select! {
                    _ = axum::serve(listener, app) => {}
                    _ = stop_rx => {}
                }
            });
        });
        let addr = addr_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        JsSite {
            addr,
            state,
            _stop: stop_tx,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn set_price(&self, price: &str) {
        self.state.lock().unwrap().price = price.to_owned();
    }

    fn seen(&self, path: &str) -> usize {
        let state = self.state.lock().unwrap();
        state.seen.iter().filter(|(p, _)| p == path).count()
    }

    fn wait_for(&self, path: &str, n: usize, timeout: Duration) {
        wait_until(&format!("{n} requests for {path}"), timeout, || {
            self.seen(path) >= n
        });
    }
}

/// The quote page as the server sends it: no table, a script that writes
/// it after 300 ms.
fn js_quotes(price: &str) -> String {
    format!(
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>Quotes</title></head>\
         <body><h1>Market</h1><div id=m>Loading...</div><script>\
         setTimeout(function () {{\
           var rows = [['GAZP', '{price}', '249,10'], ['SBER', '300,15', '302,00']];\
           var h = '<table id=quotes><caption>Shares</caption><tr><th>Ticker</th><th>Last</th><th>Open</th></tr>';\
           rows.forEach(function (r) {{ h += '<tr><td><b>' + r[0] + '</b></td><td>' + r[1] + '</td><td>' + r[2] + '</td></tr>'; }});\
           document.getElementById('m').innerHTML = h + '</table>';\
         }}, 300);</script></body></html>"
    )
}

/// The quote page of [`js_quotes`] behind a clock that changes every
/// 20 ms from the start (the DOM never rests), its table written only
/// 1.2 s after load.
fn ticking_quotes(price: &str) -> String {
    js_quotes(price).replace("}, 300);", "}, 1200);").replace(
        "<h1>Market</h1>",
        "<h1>Market</h1><p id=clock>0</p><script>var t = 0; \
             setInterval(function () { document.getElementById('clock').textContent = ++t; }, 20);\
             </script>",
    )
}

async fn page(
    State(state): State<Arc<Mutex<JsState>>>,
    UrlPath(page): UrlPath<String>,
    headers: header::HeaderMap,
) -> Response {
    let body = {
        let mut s = state.lock().unwrap();
        s.seen.push((format!("/{page}"), Instant::now()));
        match page.as_str() {
            // The quote page with an ETag, answering 304 when it matches.
            "etag.html" => {
                let agent = headers.get(header::USER_AGENT);
                let browser = agent.is_some_and(|a| a.to_str().unwrap_or("").contains("Chrome"));
                let tag = "\"q1\"";
                if headers.get(header::IF_NONE_MATCH).is_some_and(|v| v == tag) {
                    s.etag.push((browser, 304));
                    return (axum::http::StatusCode::NOT_MODIFIED, [(header::ETAG, tag)])
                        .into_response();
                }
                s.etag.push((browser, 200));
                let body = js_quotes(&s.price);
                return (
                    [
                        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                        (header::ETAG, tag),
                    ],
                    body,
                )
                    .into_response();
            }
            "js-quotes.html" => js_quotes(&s.price),
            // A static shell whose data comes from `/data.json`, answering
            // 304 to a request that holds its ETag: the shell never
            // changes, the data does.
            "shell.html" => {
                let tag = "\"shell1\"";
                if headers.get(header::IF_NONE_MATCH).is_some_and(|v| v == tag) {
                    return (axum::http::StatusCode::NOT_MODIFIED, [(header::ETAG, tag)])
                        .into_response();
                }
                return (
                    [
                        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                        (header::ETAG, tag),
                    ],
                    SHELL,
                )
                    .into_response();
            }
            "data.json" => {
                let body = serde_json::json!({ "price": s.price }).to_string();
                return ([(header::CONTENT_TYPE, "application/json")], body).into_response();
            }
            "secret.html" => {
                "<!doctype html><title>Secret</title><p>SECRET-B internal</p>".to_owned()
            }
            "escape.html" => escape_page(s.other),
            "navigate.html" => format!(
                "<!doctype html><title>Away</title><p>Leaving.</p><script>\
                 setTimeout(function () {{ location.href = 'http://{}/secret.html'; }}, 100);\
                 </script>",
                s.other.map(|a| a.to_string()).unwrap_or_default()
            ),
            "redirect.html" => {
                let to = format!(
                    "http://{}/secret.html",
                    s.other.map(|a| a.to_string()).unwrap_or_default()
                );
                return (
                    axum::http::StatusCode::FOUND,
                    [(header::LOCATION, to.as_str())],
                )
                    .into_response();
            }
            "never.html" => "<!doctype html><p>Nothing is ever added here.</p>".to_owned(),
            "ticking.html" => ticking_quotes(&s.price),
            "spin.html" => "<!doctype html><script>while (true) {}</script>".to_owned(),
            // Grows its heap until V8 gives up and the renderer dies.
            "crash.html" => "<!doctype html><script>var a = []; \
                for (;;) { a.push(new Array(1000000).fill(Math.random())); }</script>"
                .to_owned(),
            // What is waited for comes after a minute.
            "slow.html" => "<!doctype html><p>Wait.</p><script>setTimeout(function () { \
                document.body.innerHTML += '<p id=late>late</p>'; }, 60000);</script>"
                .to_owned(),
            _ => return axum::http::StatusCode::NOT_FOUND.into_response(),
        }
    };
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response()
}

/// The shell of `/shell.html`: its table is built from `/data.json`.
const SHELL: &str = "<!doctype html><html lang=en><head><meta charset=utf-8><title>Quotes</title></head>\
    <body><h1>Market</h1><div id=m>Loading...</div><script>\
    fetch('/data.json').then(function (r) { return r.json(); }).then(function (d) {\
      document.getElementById('m').innerHTML = '<table id=quotes><caption>Shares</caption>' +\
        '<tr><th>Ticker</th><th>Last</th><th>Open</th></tr>' +\
        '<tr><td><b>GAZP</b></td><td>' + d.price + '</td><td>249,10</td></tr></table>';\
    });</script></body></html>";

/// A page on its own origin whose scripts reach for `other` (another port
/// of the same host) every way a page can: a frame, `fetch`, XHR, a
/// worker's `fetch`, a WebSocket, and the link-local metadata address.
/// Each failure is written into the page, each success with what came.
fn escape_page(other: Option<SocketAddr>) -> String {
    let b = other.map(|a| a.to_string()).unwrap_or_default();
    format!(
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>Escape</title></head>\
         <body><h1>Escape</h1><p id=own>Own content.</p><div id=log></div>\
         <iframe src='http://{b}/secret.html'></iframe><script>\
         function note(t) {{ document.getElementById('log').insertAdjacentHTML('beforeend', '<p>' + t + '</p>'); }}\
         fetch('http://{b}/fetch.html').then(function (r) {{ return r.text(); }})\
           .then(function (t) {{ note('fetched ' + t); }}, function () {{ note('fetch refused'); }});\
         var x = new XMLHttpRequest(); x.open('GET', 'http://{b}/xhr.html');\
         x.onload = function () {{ note('xhr ' + x.responseText); }}; x.onerror = function () {{ note('xhr refused'); }}; x.send();\
         fetch('http://169.254.169.254/latest').then(function () {{ note('metadata reached'); }}, function () {{ note('metadata refused'); }});\
         var w = new Worker(URL.createObjectURL(new Blob([\
           \"fetch('http://{b}/worker.html').then(function (r) {{ return r.text(); }}).then(function (t) {{ postMessage('worker ' + t); }}, function () {{ postMessage('worker refused'); }});\"])));\
         w.onmessage = function (e) {{ note(e.data); }};\
         try {{ var ws = new WebSocket('ws://{b}/ws.html'); ws.onerror = function () {{ note('websocket refused'); }}; }} catch (e) {{ note('websocket refused'); }}\
         </script></body></html>"
    )
}

/// The daemon file's browser settings and limits loose enough that the
/// browser watches of one host do not queue behind each other.
fn daemon_extra(bin: &str) -> String {
    format!(
        "browser: {{executable: {bin}, max_pages: 4}}\n\
         limits: {{per_host: 8, host_spacing: 0s}}\n"
    )
}

/// A browser watch of `url`.
fn browser_watch(url: &str, every: &str, fetch: &str) -> String {
    format!(
        "url: {url}\nschedule: {{every: {every}}}\nfetch: {{render: browser, retries: 0, {fetch}}}\n"
    )
}

/// The processes below `root` whose name starts with `chrom`, with their
/// start times (a pid can be reused; a pid and start time cannot).
fn chromium_processes(root: u32) -> BTreeSet<(u32, u64)> {
    let procs: Vec<(u32, u32, String, u64)> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let open = stat.find('(')?;
            let close = stat.rfind(')')?;
            let name = stat[open + 1..close].to_owned();
            let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
            let ppid = fields.get(1)?.parse().ok()?;
            let start = fields.get(19)?.parse().ok()?;
            Some((pid, ppid, name, start))
        })
        .collect();
    let mut tree = vec![root];
    let mut i = 0;
    while let Some(&p) = tree.get(i) {
        tree.extend(procs.iter().filter(|q| q.1 == p).map(|q| q.0));
        i += 1;
    }
    procs
        .iter()
        .filter(|q| tree[1..].contains(&q.0) && q.2.starts_with("chrom"))
        .map(|q| (q.0, q.3))
        .collect()
}

/// Whether the process `pid` started at `start` still runs (a zombie,
/// dead and waiting for its new parent to reap it, does not).
fn alive(pid: u32, start: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let close = stat.rfind(')')?;
            let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
            let running = *fields.first()? != "Z";
            Some(running && fields.get(19)?.parse::<u64>().ok()? == start)
        })
        .unwrap_or(false)
}

/// The value the first threshold of `watch` last read, if any.
fn first_value(dir: &Path, watch: &str) -> Option<f64> {
    store(dir)
        .thresholds(watch)
        .unwrap()
        .first()
        .and_then(|t| t.value)
}

/// The `check finished` lines of `watch` in `log`.
fn finished<'a>(log: &'a str, watch: &str) -> Vec<&'a str> {
    let field = format!("watch={watch} ");
    log.lines()
        .filter(|l| l.contains("check finished") && l.contains(&field))
        .collect()
}

/// The last error recorded for `watch`.
fn last_error(dir: &Path, watch: &str) -> String {
    store(dir)
        .status(watch)
        .unwrap()
        .and_then(|s| s.last_error)
        .unwrap_or_default()
}

#[test]
fn a_script_built_table_is_clipped_its_threshold_fires_once_and_wait_for_fails_by_its_deadline() {
    let name = "a_script_built_table_is_clipped_its_threshold_fires_once_and_wait_for_fails_by_its_deadline";
    let Some(bin) = chromium(name) else {
        return;
    };
    let site = JsSite::start("251,30");
    // As the server sends it, the page has no quote to read.
    let sent = semclip::hierarchy::Hierarchy::from_html(&js_quotes("251,30"), None);
    let xml =
        semclip::hierarchy::write::to_xml(&sent, semclip::hierarchy::write::XmlOptions::default());
    assert!(
        !xml.contains("GAZP") || !xml.contains("label=\"Shares\""),
        "{xml}"
    );

    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let quotes = format!(
        "{}clips:\n  shares: {{xpath: \"//table[@label='Shares']\"}}\n\
         thresholds:\n  - name: gazp-high\n    xpath: \"{GAZP}\"\n    above: 300\n    notify: [log]\n",
        browser_watch(
            &site.url("/js-quotes.html"),
            "1s",
            "wait_for: \"#quotes td\", timeout: 10s"
        )
    );
    let never = browser_watch(
        &site.url("/never.html"),
        "2s",
        "wait_for: \"//p[@id='never']\", timeout: 3s",
    );
    setup(
        dir,
        &daemon_extra(bin),
        &[("quotes", quotes), ("never", never)],
    );
    let daemon = Daemon::start(dir);
    let reading = |dir: &Path| first_value(dir, "quotes");
    wait_until(
        "the rendered table's first reading",
        Duration::from_secs(60),
        || reading(dir) == Some(251.3),
    );
    assert!(file_alerts(dir).is_empty(), "{:#?}", file_alerts(dir));
    site.set_price("305,40");
    wait_until("the crossing", Duration::from_secs(30), || {
        reading(dir) == Some(305.4)
    });
    // Later renders of the same value raise nothing more.
    let n = site.seen("/js-quotes.html");
    site.wait_for("/js-quotes.html", n + 3, Duration::from_secs(30));
    let alerts = file_alerts(dir);
    assert_eq!(kinds(&alerts), ["threshold_crossed"], "{alerts:#?}");
    assert_eq!(alerts[0]["threshold"]["value"], 305.4);
    assert_eq!(
        alerts[0]["threshold"]["context"],
        "Market / Shares / GAZP / Last"
    );

    // What never appears fails its own watch, by its deadline, and says so
    // (a first check under load may spend its 3 s starting the browser).
    wait_until("the never watch's failure", Duration::from_secs(30), || {
        last_error(dir, "never").contains("matched nothing")
    });
    let error = last_error(dir, "never");
    assert!(
        error.contains("wait_for `//p[@id='never']` matched nothing within 3s"),
        "{error}"
    );
    assert_eq!(last_error(dir, "quotes"), "");

    // The browser runs while the daemon does, and not a moment after.
    let browsers = chromium_processes(daemon.pid());
    assert!(!browsers.is_empty(), "no Chromium under the daemon");
    let log = daemon.log();
    assert_eq!(daemon.stop().code(), Some(0), "{log}");
    // SIGKILL is delivered at once but a process takes a moment to exit.
    let deadline = Instant::now() + Duration::from_secs(5);
    let left = loop {
        let left: Vec<_> = browsers.iter().filter(|(p, s)| alive(*p, *s)).collect();
        if left.is_empty() || Instant::now() > deadline {
            break left;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(left.is_empty(), "Chromium left running: {left:?}\n{log}");

    // The clip holds the rendered table.
    let store = store(dir);
    assert_eq!(store.snapshots("quotes").unwrap().len(), 2);
}

#[test]
fn a_spinning_page_a_crashed_renderer_and_a_killed_browser_fail_only_their_own_watch() {
    let name = "a_spinning_page_a_crashed_renderer_and_a_killed_browser_fail_only_their_own_watch";
    let Some(bin) = chromium(name) else {
        return;
    };
    let site = JsSite::start("251,30");
    // The HTTP watch's own host: per-host politeness is not what is tested.
    let http = Site::start_on("127.0.0.2", "251,30");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let watches = [
        (
            "http",
            format!(
                "url: {}\nschedule: {{every: 1s}}\nfetch: {{timeout: 5s, retries: 0}}\n",
                http.url("/quotes.html")
            ),
        ),
        (
            "good",
            browser_watch(
                &site.url("/js-quotes.html"),
                "2s",
                "wait_for: \"#quotes td\", timeout: 15s",
            ),
        ),
        (
            "spin",
            browser_watch(&site.url("/spin.html"), "4s", "timeout: 3s"),
        ),
        (
            "crash",
            browser_watch(&site.url("/crash.html"), "4s", "timeout: 20s"),
        ),
    ];
    setup(dir, &daemon_extra(bin), &watches);
    let daemon = Daemon::start(dir);
    wait_until(
        "the spinning page's failure",
        Duration::from_secs(60),
        || last_error(dir, "spin").contains("did not render within 3s"),
    );
    wait_until(
        "the crashed renderer's failure",
        Duration::from_secs(60),
        || last_error(dir, "crash").contains("crashed its renderer"),
    );

    // A browser SIGKILLed during a render fails that render. The slow
    // watch is added now, so that it is what renders at the kill.
    std::fs::write(
        dir.join("watches/slow.yaml"),
        browser_watch(
            &site.url("/slow.html"),
            "1h",
            "wait_for: \"#late\", timeout: 30s",
        ),
    )
    .unwrap();
    site.wait_for("/slow.html", 1, Duration::from_secs(30));
    std::thread::sleep(Duration::from_secs(1));
    // The browser the slow page renders on. The spinning and crashing
    // watches retire browsers all along, so on a loaded machine the one
    // rendering may be between a retirement and its successor's start:
    // waited for, not assumed.
    let browsers = || -> Vec<u32> {
        chromium_processes(daemon.pid())
            .into_iter()
            .map(|(p, _)| p)
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/cmdline"))
                    .is_ok_and(|c| c.contains("--remote-debugging-pipe"))
            })
            .collect()
    };
    let looking = Instant::now();
    let mut main = browsers();
    while main.is_empty() && looking.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
        main = browsers();
    }
    assert!(
        !main.is_empty(),
        "no browser process to kill\n{}",
        daemon.log()
    );
    for pid in &main {
        let killed = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
    }
    let killed_at = daemon.log().len();
    wait_until(
        "the killed browser's failure",
        Duration::from_secs(30),
        || last_error(dir, "slow").contains("the browser stopped during the render"),
    );
    // The browser is started again and the good watch renders on it.
    wait_until("a render after the kill", Duration::from_secs(60), || {
        let log = daemon.log();
        let after = &log[killed_at.min(log.len())..];
        after.contains("browser started")
            && finished(after, "good")
                .iter()
                .any(|l| !l.contains("outcome=failed"))
    });
    let log = daemon.log();
    assert_eq!(daemon.stop().code(), Some(0), "{log}");

    // Only the watch that hung, crashed or was rendering at the kill
    // failed: the good watch never for the others' reasons, the HTTP watch
    // never at all.
    for line in finished(&log, "good") {
        assert!(
            !line.contains("did not render") && !line.contains("crashed"),
            "{line}"
        );
    }
    assert!(finished(&log, "http").len() > 5, "{log}");
    for line in finished(&log, "http") {
        assert!(!line.contains("outcome=failed"), "{line}");
    }
    // The HTTP watch, checked every second, never missed its schedule by
    // more than one interval (request starts at most two intervals apart,
    // with half a second for the request itself).
    let starts: Vec<Instant> = http.seen("/quotes.html").iter().map(|s| s.at).collect();
    for pair in starts.windows(2) {
        let gap = pair[1].duration_since(pair[0]);
        assert!(
            gap <= Duration::from_millis(2500),
            "a gap of {gap:?}\n{log}"
        );
    }
}

#[test]
fn a_hierarchy_wait_for_takes_the_page_once_its_xpath_matches_or_fails_by_its_deadline() {
    let name =
        "a_hierarchy_wait_for_takes_the_page_once_its_xpath_matches_or_fails_by_its_deadline";
    let Some(bin) = chromium(name) else {
        return;
    };
    let site = JsSite::start("251,30");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    // The table comes 1.2 s after load, behind a clock that mutates the
    // DOM every 20 ms: taken at load, or at the first mutation, the page
    // has no quote.
    let quotes = format!(
        "{}thresholds:\n  - name: gazp-high\n    xpath: \"{GAZP}\"\n    above: 300\n    notify: [log]\n",
        browser_watch(
            &site.url("/ticking.html"),
            "2s",
            &format!("wait_for: {{hierarchy: \"{GAZP}\"}}, timeout: 10s")
        )
    );
    let never = browser_watch(
        &site.url("/ticking.html"),
        "1s",
        "wait_for: {hierarchy: \"//table[@label='Bonds']\"}, timeout: 3s",
    );
    setup(
        dir,
        &daemon_extra(bin),
        &[("quotes", quotes), ("never", never)],
    );
    let daemon = Daemon::start(dir);
    // (The first check of `never` may spend its 3 s starting the browser
    // under load: the deadline covers the whole render.)
    let read = |dir: &Path| first_value(dir, "quotes");
    let start = Instant::now();
    while read(dir).is_none() || !last_error(dir, "never").contains("matched nothing") {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "not within 60s: the quote read and the never watch's failure\n{}",
            daemon.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = daemon.log();
    assert_eq!(daemon.stop().code(), Some(0), "{log}");

    // The page was taken once the XPath matched: its quote was read.
    let store = store(dir);
    let status = store.status("quotes").unwrap().unwrap();
    assert_eq!(status.last_error, None, "{log}");
    let states = store.thresholds("quotes").unwrap();
    assert_eq!(states[0].value, Some(251.3), "{log}");
    assert_eq!(states[0].state, "normal", "{log}");
    // (Several snapshots: the clock changes between checks.)
    assert!(!store.snapshots("quotes").unwrap().is_empty());
    // One that never matches fails its check by its deadline, and says so.
    let error = last_error(dir, "never");
    assert!(
        error.contains("wait_for `hierarchy: //table[@label='Bonds']` matched nothing within 3s"),
        "{error}"
    );
    assert!(store.snapshots("never").unwrap().is_empty());
}

#[test]
fn with_revalidate_html_a_rendered_page_is_revalidated_first_and_a_304_needs_no_browser() {
    let name =
        "with_revalidate_html_a_rendered_page_is_revalidated_first_and_a_304_needs_no_browser";
    let Some(bin) = chromium(name) else {
        return;
    };
    let site = JsSite::start("251,30");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let quotes = format!(
        "{}thresholds:\n  - name: gazp-high\n    xpath: \"{GAZP}\"\n    above: 300\n    notify: [log]\n",
        browser_watch(
            &site.url("/etag.html"),
            "1s",
            "wait_for: \"#quotes td\", timeout: 10s, revalidate: html"
        )
    );
    setup(dir, &daemon_extra(bin), &[("quotes", quotes)]);
    let daemon = Daemon::start(dir);
    let requests = || site.state.lock().unwrap().etag.clone();
    wait_until("three revalidations", Duration::from_secs(60), || {
        requests().iter().filter(|r| **r == (false, 304)).count() >= 3
    });
    let log = daemon.log();
    assert_eq!(daemon.stop().code(), Some(0), "{log}");

    // One render (the browser's own request, without validators: every
    // render has a fresh context), then only semclip's conditional
    // requests, each answered 304, and no browser navigation.
    let seen = requests();
    assert_eq!(seen[0], (true, 200), "{seen:?}");
    assert!(seen[1..].iter().all(|r| *r == (false, 304)), "{seen:?}");
    assert!(finished(&log, "quotes").len() >= 3, "{log}");
    assert!(log.contains("outcome=not_modified"), "{log}");
    // The rendered page was read and kept.
    let store = store(dir);
    assert_eq!(store.thresholds("quotes").unwrap()[0].value, Some(251.3));
    assert_eq!(store.snapshots("quotes").unwrap().len(), 1);
    let status = store.status("quotes").unwrap().unwrap();
    assert_eq!(status.etag.as_deref(), Some("\"q1\""));
    assert_eq!(status.last_error, None);
}

/// A render whose deadline ends while the browser is still starting does
/// not cancel the start: the next render finds that browser (one start,
/// not two), and a shutdown in the middle of a start leaves no process.
#[test]
fn a_render_timing_out_during_the_browser_start_leaves_the_start_to_the_next_render() {
    use semclip::page::browser::{BrowserSettings, Browsers, Job, RenderOptions, RenderRequest};
    let name = "a_render_timing_out_during_the_browser_start_leaves_the_start_to_the_next_render";
    let Some(bin) = chromium(name) else {
        return;
    };
    let site = JsSite::start("251,30");
    let url = url::Url::parse(&site.url("/never.html")).unwrap();
    let options = RenderOptions::default();
    let fence = semclip::page::fence::Fence::default();
    let request = |timeout: Duration| RenderRequest {
        url: &url,
        options: &options,
        headers: &[],
        headers_cross_origin: false,
        cookies: &[],
        job: Job::Page,
        hierarchy: None,
        timeout,
        max_bytes: 1 << 20,
        fence: &fence,
    };
    // A browser that takes three seconds to start (a wrapper that waits,
    // then execs Chromium), so that a render of 1 ms, and a shutdown, surely
    // come during the start, however loaded the machine.
    let slow = tempfile::tempdir().unwrap();
    let wrapper = slow.path().join("slow-chromium");
    std::fs::write(&wrapper, format!("#!/bin/sh\nsleep 3\nexec {bin} \"$@\"\n")).unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let settings = BrowserSettings {
        executable: Some(wrapper),
        ..BrowserSettings::default()
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let browsers = Browsers::new(settings.clone());
        // 1 ms: far shorter than any start of Chromium.
        let early = browsers.render(request(Duration::from_millis(1))).await;
        let error = early.expect_err("a render of 1 ms cannot have started a browser");
        assert!(
            error.to_string().contains("starting the browser"),
            "{error}"
        );
        assert_eq!(browsers.launches(), 0);
        // The start goes on without the render that asked for it: its
        // browser comes up (were it cancelled, its process would be
        // killed with the start).
        let begun = Instant::now();
        let mut started = our_browsers();
        while started.is_empty() && begun.elapsed() < Duration::from_secs(30) {
            tokio::time::sleep(Duration::from_millis(20)).await;
            started = our_browsers();
        }
        assert!(
            !started.is_empty(),
            "no browser came up after the render gave up"
        );
        let page = browsers
            .render(request(Duration::from_secs(60)))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            page.html.contains("Nothing is ever added here."),
            "{}",
            page.html
        );
        assert_eq!(browsers.launches(), 1, "the first start was taken over");
        let pid = browsers.pid().await.expect("a browser runs");
        assert!(
            started.contains(&pid),
            "{pid} was not started by the first render: {started:?}"
        );
        browsers.shutdown().await;
        assert!(
            our_browsers().is_empty(),
            "left behind: {:?}",
            our_browsers()
        );

        // A shutdown while a start is under way stops it.
        let browsers = Browsers::new(settings);
        let early = browsers.render(request(Duration::from_millis(1))).await;
        assert!(early.is_err());
        browsers.shutdown().await;
        assert_eq!(browsers.launches(), 0);
        assert!(
            our_browsers().is_empty(),
            "left behind: {:?}",
            our_browsers()
        );
    });
}

/// The browser processes (the browser and its helpers) this test process
/// started itself, not those of the daemons other tests run: their command
/// line names a profile directory of this process. Zombies do not count.
fn our_browsers() -> Vec<u32> {
    let mark = format!("semclip-browser-{}-", std::process::id());
    let mut found: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let state = stat[stat.rfind(')')? + 1..]
                .split_whitespace()
                .next()?
                .to_owned();
            let args = String::from_utf8_lossy(&cmdline).into_owned();
            (args.contains(&mark) && state != "Z").then_some(pid)
        })
        .collect();
    found.sort_unstable();
    found
}

/// Every request of a rendered page is judged by the daemon's fence: a
/// page on one local port whose scripts frame, fetch, XHR, a worker and a
/// WebSocket reach for another local port and the link-local metadata
/// address, one that navigates there, and a watch URL redirecting there.
/// The other port sees no request at all, nothing of it is stored, and
/// each refused request is named.
#[test]
fn a_rendered_page_reaches_nothing_the_fence_refuses_and_names_what_it_refused() {
    let name = "a_rendered_page_reaches_nothing_the_fence_refuses_and_names_what_it_refused";
    let Some(bin) = chromium(name) else {
        return;
    };
    let internal = JsSite::start("999,99");
    let site = JsSite::start("251,30");
    let b = internal.addr;
    site.state.lock().unwrap().other = Some(b);
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let watches = [
        (
            "escape",
            browser_watch(&site.url("/escape.html"), "1h", "timeout: 20s"),
        ),
        (
            "navigate",
            browser_watch(&site.url("/navigate.html"), "1h", "timeout: 20s"),
        ),
        (
            "redirect",
            browser_watch(&site.url("/redirect.html"), "1h", "timeout: 20s"),
        ),
    ];
    setup(dir, &daemon_extra(bin), &watches);
    let daemon = Daemon::start(dir);
    let store_ = || store(dir);
    wait_until("the three checks", Duration::from_secs(60), || {
        let log = daemon.log();
        ["escape", "navigate", "redirect"]
            .iter()
            .all(|w| !finished(&log, w).is_empty())
    });
    // The page's own scripts run on after the DOM is taken: a moment for
    // a request that slipped through to arrive.
    std::thread::sleep(Duration::from_secs(1));
    let log = daemon.log();
    assert_eq!(daemon.stop().code(), Some(0), "{log}");

    let reached: Vec<String> = internal
        .state
        .lock()
        .unwrap()
        .seen
        .iter()
        .map(|(p, _)| p.clone())
        .collect();
    assert!(
        reached.is_empty(),
        "the other port was reached: {reached:?}\n{log}"
    );
    let store = store_();
    // The escaping page is stored with its own content and none of B's.
    let snapshots = store.snapshots("escape").unwrap();
    assert_eq!(snapshots.len(), 1, "{log}");
    let xml_of = |id: i64| store.snapshot(id).unwrap().unwrap().xml;
    for watch in ["escape", "navigate", "redirect"] {
        for (id, _, _) in store.snapshots(watch).unwrap() {
            let xml = xml_of(id);
            assert!(!xml.contains("SECRET"), "{watch}: {xml}");
            assert!(
                !xml.contains("fetched") && !xml.contains("xhr <"),
                "{watch}: {xml}"
            );
        }
    }
    let xml = xml_of(snapshots[0].0);
    assert!(xml.contains("Own content."), "{xml}");
    assert!(xml.contains("fetch refused"), "{xml}");
    assert!(xml.contains("xhr refused"), "{xml}");
    assert!(xml.contains("metadata refused"), "{xml}");
    // Each refused request is named in the check's diagnostics.
    let refusals: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("the fence refused requests"))
        .collect();
    let named = refusals.join("\n");
    for path in ["secret.html", "fetch.html", "xhr.html"] {
        assert!(
            named.contains(&format!("http://{b}/{path}")),
            "{path}: {named}"
        );
    }
    assert!(named.contains("http://169.254.169.254/latest"), "{named}");
    assert!(named.contains("loopback"), "{named}");
    // The redirect of the watch URL itself fails the check, naming it.
    let error = last_error(dir, "redirect");
    assert!(
        error.contains(&format!("http://{b}/secret.html")),
        "{error}"
    );
    assert!(store.snapshots("redirect").unwrap().is_empty());
}

/// Without `wait_for`, a page is taken once it is quiet: a table its
/// script writes 300 ms after load is read, and the wait is logged.
#[test]
fn without_wait_for_a_page_is_taken_once_it_has_settled() {
    let name = "without_wait_for_a_page_is_taken_once_it_has_settled";
    let Some(bin) = chromium(name) else {
        return;
    };
    let site = JsSite::start("251,30");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let quotes = gazp_watch(&site.url("/js-quotes.html"), "1h", "timeout: 15s");
    setup(dir, &daemon_extra(bin), &[("quotes", quotes)]);
    let daemon = Daemon::start(dir);
    wait_until("the check", Duration::from_secs(60), || {
        !finished(&daemon.log(), "quotes").is_empty()
    });
    let log = daemon.log();
    assert_eq!(daemon.stop().code(), Some(0), "{log}");
    assert_eq!(first_value(dir, "quotes"), Some(251.3), "{log}");
    assert_eq!(last_error(dir, "quotes"), "");
    let rendered = log
        .lines()
        .find(|l| l.contains("page rendered"))
        .unwrap_or_else(|| panic!("no render logged\n{log}"));
    assert!(rendered.contains("settled"), "{rendered}");
    assert!(
        rendered.contains("no DOM mutation for 500 ms"),
        "{rendered}"
    );
}

/// A page whose HTML shell never changes (and answers 304 to a
/// conditional request) and whose data comes from JSON: each check
/// renders it (`revalidate: render`, the default), so a new value is
/// read at the next check and its threshold fires once.
#[test]
fn data_changing_behind_an_unchanged_html_shell_is_seen_at_the_next_check() {
    let name = "data_changing_behind_an_unchanged_html_shell_is_seen_at_the_next_check";
    let Some(bin) = chromium(name) else {
        return;
    };
    let site = JsSite::start("251,30");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let quotes = gazp_watch(&site.url("/shell.html"), "1s", "timeout: 15s");
    setup(dir, &daemon_extra(bin), &[("quotes", quotes)]);
    let daemon = Daemon::start(dir);
    wait_until("the first reading", Duration::from_secs(60), || {
        first_value(dir, "quotes") == Some(251.3)
    });
    // A second check of the same data, so that the shell has validators.
    let n = site.seen("/data.json");
    site.wait_for("/data.json", n + 1, Duration::from_secs(30));
    site.set_price("305,40");
    wait_until("the new value", Duration::from_secs(30), || {
        first_value(dir, "quotes") == Some(305.4)
    });
    let n = site.seen("/data.json");
    site.wait_for("/data.json", n + 2, Duration::from_secs(30));
    let log = daemon.log();
    assert_eq!(daemon.stop().code(), Some(0), "{log}");
    let alerts = file_alerts(dir);
    assert_eq!(kinds(&alerts), ["threshold_crossed"], "{alerts:#?}");
    assert_eq!(alerts[0]["threshold"]["value"], 305.4);
    assert!(!log.contains("outcome=not_modified"), "{log}");
}

/// A browser watch of `url` with the GAZP threshold (above 300, to the
/// log).
fn gazp_watch(url: &str, every: &str, fetch: &str) -> String {
    format!(
        "{}thresholds:\n  - name: gazp-high\n    xpath: \"{GAZP}\"\n    above: 300\n    notify: [log]\n",
        browser_watch(url, every, fetch)
    )
}

/// The listening TCP sockets (`/proc/net/tcp` and `tcp6`, state `0A`) that
/// one of `pids` holds open.
fn listening_sockets(pids: &BTreeSet<(u32, u64)>) -> Vec<(u32, String)> {
    let mut listening = BTreeSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.get(3) == Some(&"0A")
                && let Some(inode) = fields.get(9)
            {
                listening.insert(format!("socket:[{inode}]"));
            }
        }
    }
    let mut held = Vec::new();
    for (pid, _) in pids {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if let Ok(target) = std::fs::read_link(fd.path()) {
                let target = target.to_string_lossy().into_owned();
                if listening.contains(&target) {
                    held.push((*pid, target));
                }
            }
        }
    }
    held
}

/// The browser belongs to its daemon: it speaks DevTools over a pipe (no
/// TCP port of its own listening while it renders), it does not outlive a
/// daemon killed with SIGKILL, and a new start removes what a killed run
/// left: a planted profile whose owner is dead, and a process using it.
#[test]
fn the_browser_listens_on_no_port_dies_with_its_daemon_and_leftovers_are_reaped() {
    let name = "the_browser_listens_on_no_port_dies_with_its_daemon_and_leftovers_are_reaped";
    let Some(bin) = chromium(name) else {
        return;
    };
    let site = JsSite::start("251,30");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    // A leftover of a run long gone: its owner's pid and start time name
    // no running process.
    let planted = tmp.join("semclip-browser-4194000-0-deadbeef");
    std::fs::create_dir(&planted).unwrap();
    std::fs::write(planted.join("semclip-owner"), "4194000 1\n").unwrap();
    let mut squatter = std::process::Command::new("python3")
        .args(["-c", "import time; time.sleep(300)"])
        .arg(format!("--user-data-dir={}", planted.display()))
        .spawn()
        .unwrap();
    // Another daemon's profile, alive: left alone.
    let live = tmp.join("semclip-browser-1-0-00000001");
    std::fs::create_dir(&live).unwrap();
    let me = std::process::id();
    let stat = std::fs::read_to_string(format!("/proc/{me}/stat")).unwrap();
    let started = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .nth(19)
        .unwrap()
        .to_owned();
    std::fs::write(live.join("semclip-owner"), format!("{me} {started}\n")).unwrap();

    setup(
        dir,
        &daemon_extra(bin),
        &[(
            "quotes",
            gazp_watch(&site.url("/js-quotes.html"), "1s", "timeout: 15s"),
        )],
    );
    let tmp_text = tmp.display().to_string();
    let env = [("TMPDIR", tmp_text.as_str())];
    let daemon = Daemon::start_with_env(dir, &env);
    wait_until("a render", Duration::from_secs(60), || {
        first_value(dir, "quotes") == Some(251.3)
    });
    // The planted leftover went at the browser's first start; the live
    // daemon's profile stayed.
    assert!(!planted.exists(), "{}", daemon.log());
    assert!(live.exists());
    let reaped = Instant::now();
    while squatter.try_wait().unwrap().is_none() {
        assert!(
            reaped.elapsed() < Duration::from_secs(5),
            "the squatter lives"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // While it renders, no process of the browser listens on TCP, and
    // none was told to.
    let browsers = chromium_processes(daemon.pid());
    assert!(!browsers.is_empty(), "no Chromium under the daemon");
    site.wait_for(
        "/js-quotes.html",
        site.seen("/js-quotes.html") + 1,
        Duration::from_secs(30),
    );
    assert_eq!(listening_sockets(&chromium_processes(daemon.pid())), []);
    for (pid, _) in &browsers {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline);
        assert!(!cmdline.contains("--remote-debugging-port"), "{cmdline}");
    }
    // SIGKILL: the daemon cannot clean up, and its browser goes anyway.
    let profiles = |tmp: &Path| -> Vec<String> {
        std::fs::read_dir(tmp)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("semclip-browser-") && !n.ends_with("00000001"))
            .collect()
    };
    daemon.signal("KILL");
    drop(daemon);
    let deadline = Instant::now() + Duration::from_secs(5);
    let left = loop {
        let left: Vec<_> = browsers.iter().filter(|(p, s)| alive(*p, *s)).collect();
        if left.is_empty() || Instant::now() > deadline {
            break left;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(left.is_empty(), "Chromium outlived its daemon: {left:?}");
    // Its profile stays behind, to be removed by the next start.
    let leftover = profiles(&tmp);
    assert_eq!(leftover.len(), 1, "{leftover:?}");
    let daemon = Daemon::start_with_env(dir, &env);
    daemon.wait_log(
        "removed a browser profile an earlier run left",
        Duration::from_secs(60),
    );
    assert!(!tmp.join(&leftover[0]).exists());
    assert!(live.exists());
    assert_eq!(daemon.stop().code(), Some(0));
}
