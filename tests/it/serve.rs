//! The clip server end to end: the real `semclip run` binary serving clips,
//! feeds, the API and status pages over loopback, fed by a local fixture
//! site; the status pages are loaded in headless Chromium.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::daemon::{Daemon, setup};
use crate::fixture::Site;
use crate::util::chromium;

const GAZP_ROW: &str = "//table[@label='Shares']/row[@key='GAZP']";

/// A response, read whole.
pub struct Got {
    pub status: u16,
    headers: reqwest::header::HeaderMap,
    pub body: String,
}

impl Got {
    fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }
}

/// A blocking HTTP client for the tests (reqwest on a private runtime).
pub struct Client {
    rt: tokio::runtime::Runtime,
    http: reqwest::Client,
    base: String,
}

impl Client {
    pub fn new(port: u16) -> Client {
        Client {
            rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
            http: reqwest::Client::builder().no_proxy().build().unwrap(),
            base: format!("http://127.0.0.1:{port}"),
        }
    }

    fn try_send(
        &self,
        method: reqwest::Method,
        path: &str,
        headers: &[(&str, &str)],
    ) -> reqwest::Result<Got> {
        self.rt.block_on(async {
            let mut req = self
                .http
                .request(method, format!("{}{path}", self.base))
                .timeout(Duration::from_secs(20));
            for (k, v) in headers {
                req = req.header(*k, *v);
            }
            let resp = req.send().await?;
            let status = resp.status().as_u16();
            let headers = resp.headers().clone();
            let body = resp.text().await?;
            Ok(Got {
                status,
                headers,
                body,
            })
        })
    }

    fn send(&self, method: reqwest::Method, path: &str, headers: &[(&str, &str)]) -> Got {
        self.try_send(method, path, headers).unwrap()
    }

    pub fn get(&self, path: &str, headers: &[(&str, &str)]) -> Got {
        self.send(reqwest::Method::GET, path, headers)
    }

    /// Waits until `path` answers 200 with a body satisfying `f`.
    fn wait_for(&self, path: &str, headers: &[(&str, &str)], f: impl Fn(&Got) -> bool) -> Got {
        let start = Instant::now();
        loop {
            // Connection refused while the server starts is not an answer yet.
            let last = match self.try_send(reqwest::Method::GET, path, headers) {
                Ok(got) if got.status == 200 && f(&got) => return got,
                Ok(got) => format!("{} {}", got.status, got.body),
                Err(e) => e.to_string(),
            };
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "{path} never became ready: last {last}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

pub fn repo_xslt() -> String {
    format!("{}/xslt", env!("CARGO_MANIFEST_DIR"))
}

/// A daemon file with the server on a port the system picks (read it
/// with [`Daemon::port`]), and `extra`.
fn server_setup(dir: &Path, extra: &str, watches: &[(&str, String)]) {
    setup(
        dir,
        &format!(
            "listen: 127.0.0.1:0\nserver:\n  xslt: {}\n{extra}",
            repo_xslt()
        ),
        watches,
    );
}

/// A quotes watch with a GAZP row clip and the shares table.
fn clip_watch(url: &str, public: bool) -> String {
    format!(
        "url: {url}\nschedule: {{every: 1s}}\nfetch: {{timeout: 5s, retries: 0}}\n\
         clips:\n  gazp:\n    xpath: \"{GAZP_ROW}\"\n    public: {public}\n  \
         shares:\n    xpath: \"//table[@label='Shares']\"\n\
         thresholds:\n  - name: gazp-high\n    \
         xpath: \"{GAZP_ROW}/cell[@col='Last']/@num\"\n    above: 300\n    notify: [log]\n"
    )
}

/// The fixture site with GAZP at 251,30 and a daemon serving a quotes
/// watch of it (clips `gazp` and `shares`, the GAZP threshold).
fn quotes_server() -> (Site, tempfile::TempDir, Daemon, Client) {
    let site = Site::start("251,30");
    let dir = tempfile::tempdir().unwrap();
    server_setup(
        dir.path(),
        "",
        &[("quotes", clip_watch(&site.url("/quotes.html"), false))],
    );
    let daemon = Daemon::start(dir.path());
    let port = daemon.port();
    (site, dir, daemon, Client::new(port))
}

#[test]
fn a_clip_s_etag_follows_its_data_not_the_page_s_markup() {
    let (site, _dir, daemon, c) = quotes_server();

    let first = c.wait_for("/clips/quotes/gazp", &[], |g| g.body.contains("251,30"));
    let etag = first.header("etag").expect("an ETag");
    let modified = first.header("last-modified").expect("a Last-Modified");
    assert_eq!(first.header("cache-control").as_deref(), Some("no-cache"));
    assert!(first.body.starts_with("<?xml"), "{}", first.body);
    assert!(first.body.contains("<clip watch=\"quotes\" name=\"gazp\""));
    assert!(first.body.contains("num=\"251.3\""));
    let fragment = c.get("/clips/quotes/gazp?fragment=1", &[]);
    assert!(fragment.body.starts_with("<clip "), "{}", fragment.body);
    assert_ne!(fragment.header("etag"), Some(etag.clone()));

    // A portal's conditional request: 304 without a body.
    let again = c.get("/clips/quotes/gazp", &[("if-none-match", &etag)]);
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());

    // Markup churn upstream: checked, but the clip keeps its ETag.
    let seen = site.seen("/quotes.html").len();
    site.churn_markup();
    site.wait_for("/quotes.html", seen + 3, Duration::from_secs(20));
    let churned = c.get("/clips/quotes/gazp", &[("if-none-match", &etag)]);
    assert_eq!(churned.status, 304, "markup churn changed the ETag");
    let whole = c.get("/clips/quotes", &[]);
    assert_eq!(whole.status, 200);
    assert!(whole.body.contains("<page"), "{}", whole.body);

    // A data change: a new ETag, a later Last-Modified, the new value in every format.
    site.set_price("268,40");
    let changed = c.wait_for("/clips/quotes/gazp", &[], |g| g.body.contains("268,40"));
    let new_etag = changed.header("etag").unwrap();
    assert_ne!(new_etag, etag);
    let new_modified = changed.header("last-modified").unwrap();
    assert!(
        httpdate::parse_http_date(&new_modified).unwrap()
            >= httpdate::parse_http_date(&modified).unwrap()
    );
    assert_eq!(
        c.get("/clips/quotes/gazp", &[("if-none-match", &etag)])
            .status,
        200,
        "the old ETag must not match any more"
    );
    let json = c.get("/clips/quotes/gazp?format=json", &[]);
    assert_eq!(
        json.header("content-type").as_deref(),
        Some("application/json")
    );
    let v: serde_json::Value = serde_json::from_str(&json.body).unwrap();
    assert_eq!(v["count"], 1);
    assert_eq!(v["nodes"][0]["key"], "GAZP");
    assert_eq!(v["nodes"][0]["children"][0]["num"], "268.4");
    let html = c.get("/clips/quotes/gazp?format=html", &[]);
    assert_eq!(html.status, 200, "{}", html.body);
    assert!(html.body.contains("268,40"), "{}", html.body);
    let by_accept = c.get("/clips/quotes/gazp", &[("accept", "text/html")]);
    assert_eq!(by_accept.header("etag"), html.header("etag"));
    let rdf = c.get("/clips/quotes/gazp?format=rdf", &[]);
    assert_eq!(rdf.status, 200, "{}", rdf.body);
    assert!(rdf.body.contains("268.4"), "{}", rdf.body);
    let ttl = c.get("/clips/quotes/gazp", &[("accept", "text/turtle")]);
    assert_eq!(ttl.status, 200, "{}", ttl.body);
    assert!(ttl.body.contains("268.4"), "{}", ttl.body);
    let etags: BTreeSet<Option<String>> = [&changed, &json, &html, &rdf, &ttl]
        .iter()
        .map(|g| g.header("etag"))
        .collect();
    assert_eq!(etags.len(), 5, "one ETag per representation: {etags:?}");
    for g in [&json, &html, &rdf, &ttl] {
        let tag = g.header("etag").unwrap();
        assert_eq!(
            c.get(
                &format!("/clips/quotes/gazp?format={}", format_of(g)),
                &[("if-none-match", &tag)]
            )
            .status,
            304
        );
    }

    // The RDF/XML and the Turtle parse and hold the same triples.
    let from_xml = rdf_triples(&rdf.body, false);
    let from_ttl = rdf_triples(&ttl.body, true);
    assert!(from_xml.len() > 10, "{}", rdf.body);
    assert_eq!(from_xml, from_ttl);
    assert!(
        from_xml
            .iter()
            .any(|t| t.contains("268.4") && t.contains("#decimal")),
        "{from_xml:?}"
    );

    assert_eq!(c.get("/clips/quotes/nope", &[]).status, 404);
    assert_eq!(c.get("/clips/nope", &[]).status, 404);
    assert_eq!(c.get("/clips/quotes/gazp?format=pdf", &[]).status, 400);

    // The feeds list the change in data terms.
    let feed = c.get("/feeds/quotes.atom", &[]);
    assert_eq!(feed.status, 200);
    let parsed = atom_syndication::Feed::read_from(feed.body.as_bytes()).unwrap();
    let summaries: Vec<String> = parsed
        .entries()
        .iter()
        .filter_map(|e| e.summary().map(|s| s.value.clone()))
        .collect();
    assert!(
        summaries
            .iter()
            .any(|s| s.contains("GAZP") && s.contains("251,30 -> 268,40")),
        "{summaries:?}"
    );
    let clip_feed =
        atom_syndication::Feed::read_from(c.get("/feeds/quotes/gazp.atom", &[]).body.as_bytes())
            .unwrap();
    assert!(!clip_feed.entries().is_empty());
    let all =
        atom_syndication::Feed::read_from(c.get("/feeds/all.atom", &[]).body.as_bytes()).unwrap();
    assert_eq!(all.entries().len(), parsed.entries().len());

    // Metrics count clip requests by status.
    let metrics = c.get("/metrics", &[]).body;
    assert!(
        metrics.contains("semclip_clip_requests_total{format=\"xml\",status=\"304\"}"),
        "{metrics}"
    );
    assert!(metrics.contains("semclip_checks_total{outcome=\"changed\"}"));
    assert_eq!(c.get("/healthz", &[]).status, 200);
    assert_eq!(c.get("/readyz", &[]).status, 200);
    drop(daemon);
}

fn format_of(g: &Got) -> &'static str {
    match g.header("content-type").unwrap_or_default().as_str() {
        "application/json" => "json",
        "application/rdf+xml" => "rdf",
        t if t.starts_with("text/html") => "html",
        t if t.starts_with("text/turtle") => "ttl",
        _ => "xml",
    }
}

/// The triples of an RDF document, as sorted N-Triples lines.
fn rdf_triples(body: &str, turtle: bool) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    if turtle {
        for t in oxttl::TurtleParser::new().for_slice(body.as_bytes()) {
            out.insert(t.unwrap().to_string());
        }
    } else {
        for t in oxrdfxml::RdfXmlParser::new().for_slice(body.as_bytes()) {
            out.insert(t.unwrap().to_string());
        }
    }
    out
}

#[test]
fn tokens_decide_who_reads_and_who_checks_and_public_clips_need_none() {
    let site = Site::start("251,30");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("read.token"), "reader-token\n").unwrap();
    server_setup(
        dir.path(),
        "tokens:\n  portal: {secret: {file: read.token}, scopes: [read]}\n  \
         ops: {secret: {env: SEMCLIP_TEST_ADMIN}, scopes: [admin]}\n",
        &[("quotes", clip_watch(&site.url("/quotes.html"), true))],
    );
    let daemon = Daemon::start_with_env(dir.path(), &[("SEMCLIP_TEST_ADMIN", "admin-token")]);
    let port = daemon.port();
    let c = Client::new(port);
    let read = [("authorization", "Bearer reader-token")];
    let admin = [("authorization", "Bearer admin-token")];
    c.wait_for("/clips/quotes/shares", &read, |_| true);

    // Public clip: no token needed; the others need one.
    let public = c.get("/clips/quotes/gazp", &[]);
    assert_eq!(public.status, 200);
    assert_eq!(public.header("cache-control").as_deref(), Some("no-cache"));
    let denied = c.get("/clips/quotes/shares", &[]);
    assert_eq!(denied.status, 401);
    let challenges: Vec<&str> = denied
        .headers
        .get_all("www-authenticate")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    assert!(challenges[0].starts_with("Basic "), "{challenges:?}");
    assert!(
        challenges.iter().any(|c| c.starts_with("Bearer ")),
        "{challenges:?}"
    );
    let private = c.get("/clips/quotes/shares", &read);
    assert_eq!(private.status, 200);
    assert_eq!(
        private.header("cache-control").as_deref(),
        Some("private, no-cache")
    );
    assert_eq!(
        c.get("/clips/quotes/shares", &[("authorization", "Bearer wrong")])
            .status,
        401
    );
    // A wrong token is refused even on a public clip.
    assert_eq!(
        c.get("/clips/quotes/gazp", &[("authorization", "Bearer wrong")])
            .status,
        401
    );
    for path in [
        "/status",
        "/status/quotes",
        "/api/watches",
        "/feeds/all.atom",
        "/metrics",
    ] {
        assert_eq!(c.get(path, &[]).status, 401, "{path}");
        assert_eq!(c.get(path, &read).status, 200, "{path}");
    }
    // Basic authentication carries the token as its password (browsers, feed readers).
    let basic = format!(
        "Basic {}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            "me:reader-token"
        )
    );
    assert_eq!(c.get("/status", &[("authorization", &basic)]).status, 200);
    assert_eq!(c.get("/healthz", &[]).status, 200);

    // Check now: admin only.
    let post = |h: &[(&str, &str)]| c.send(reqwest::Method::POST, "/api/watches/quotes/check", h);
    assert_eq!(post(&[]).status, 401);
    assert_eq!(post(&read).status, 403);
    let before = site.seen("/quotes.html").len();
    let queued = post(&admin);
    assert_eq!(queued.status, 202, "{}", queued.body);
    daemon.wait_log("check requested", Duration::from_secs(10));
    site.wait_for("/quotes.html", before + 1, Duration::from_secs(10));
    assert_eq!(
        c.send(reqwest::Method::POST, "/api/watches/nope/check", &admin)
            .status,
        404
    );
}

/// The API's response schema for `GET path` (status 200 or 202) from the
/// OpenAPI document, as a standalone JSON Schema.
fn response_schema(
    doc: &serde_json::Value,
    path: &str,
    method: &str,
    status: &str,
) -> serde_json::Value {
    let schema =
        &doc["paths"][path][method]["responses"][status]["content"]["application/json"]["schema"];
    assert!(!schema.is_null(), "no schema for {method} {path} {status}");
    serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "components": doc["components"],
        "allOf": [schema],
    })
}

fn assert_valid(doc: &serde_json::Value, path: &str, method: &str, status: &str, body: &str) {
    let schema = response_schema(doc, path, method, status);
    let validator = jsonschema::validator_for(&schema).unwrap();
    let value: serde_json::Value = serde_json::from_str(body).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{method} {path}: {errors:?}\n{body}");
}

#[test]
fn the_api_answers_as_its_openapi_document_says() {
    // The served document is the committed one.
    let generated = serde_json::to_string_pretty(&semclip::serve::openapi()).unwrap() + "\n";
    let committed_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/openapi.json");
    if std::env::var_os("SEMCLIP_BLESS").is_some() {
        std::fs::write(&committed_path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&committed_path).unwrap_or_default();
    assert!(
        committed == generated,
        "schema/openapi.json is out of date with src/serve: regenerate it with\n  \
         SEMCLIP_BLESS=1 cargo test --test it serve::the_api_answers"
    );

    let (site, _dir, daemon, c) = quotes_server();
    let doc: serde_json::Value =
        serde_json::from_str(&c.get("/api/openapi.json", &[]).body).unwrap();
    assert_eq!(
        serde_json::to_string_pretty(&doc).unwrap() + "\n",
        generated
    );

    c.wait_for("/clips/quotes/gazp", &[], |g| g.body.contains("251,30"));
    for price in ["268,40", "305,40", "296,10"] {
        site.set_price(price);
        c.wait_for("/clips/quotes/gazp", &[], |g| g.body.contains(price));
    }
    let watches = c.get("/api/watches", &[]);
    assert_valid(&doc, "/api/watches", "get", "200", &watches.body);
    let list: serde_json::Value = serde_json::from_str(&watches.body).unwrap();
    assert_eq!(list[0]["id"], "quotes");
    assert_eq!(list[0]["state"], "ok");
    assert_eq!(list[0]["clips"].as_array().unwrap().len(), 2);

    let one = c.get("/api/watches/quotes", &[]);
    assert_valid(&doc, "/api/watches/{watch}", "get", "200", &one.body);
    let thresholds = c.get("/api/watches/quotes/thresholds", &[]);
    assert_valid(
        &doc,
        "/api/watches/{watch}/thresholds",
        "get",
        "200",
        &thresholds.body,
    );
    let t: serde_json::Value = serde_json::from_str(&thresholds.body).unwrap();
    assert_eq!(t[0]["name"], "gazp-high");
    assert_eq!(t[0]["state"], "normal");
    assert_eq!(t[0]["value"], 296.1);

    let values = c.get(
        "/api/watches/quotes/thresholds/gazp-high/values?limit=500",
        &[],
    );
    assert_valid(
        &doc,
        "/api/watches/{watch}/thresholds/{name}/values",
        "get",
        "200",
        &values.body,
    );
    let v: serde_json::Value = serde_json::from_str(&values.body).unwrap();
    let read: Vec<f64> = v["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["value"].as_f64().unwrap())
        .collect();
    let mut distinct = read.clone();
    distinct.dedup();
    assert_eq!(distinct, vec![251.3, 268.4, 305.4, 296.1], "{read:?}");

    // Paging: one event per page, each older than the last, until the end.
    let mut ids = Vec::new();
    let mut before: Option<i64> = None;
    loop {
        let path = match before {
            Some(b) => format!("/api/watches/quotes/changes?limit=1&before={b}"),
            None => "/api/watches/quotes/changes?limit=1".to_owned(),
        };
        let page = c.get(&path, &[]);
        assert_valid(
            &doc,
            "/api/watches/{watch}/changes",
            "get",
            "200",
            &page.body,
        );
        let p: serde_json::Value = serde_json::from_str(&page.body).unwrap();
        for ch in p["changes"].as_array().unwrap() {
            ids.push(ch["id"].as_i64().unwrap());
        }
        match p["next_before"].as_i64() {
            Some(b) => before = Some(b),
            None => break,
        }
        assert!(ids.len() < 100);
    }
    let all = c.get("/api/watches/quotes/changes?limit=500", &[]);
    let all: serde_json::Value = serde_json::from_str(&all.body).unwrap();
    let all_ids: Vec<i64> = all["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, all_ids);
    assert!(
        ids.len() >= 3 && ids.windows(2).all(|w| w[0] > w[1]),
        "{ids:?}"
    );

    let err = c.get("/api/watches/nope", &[]);
    assert_eq!(err.status, 404);
    assert_valid(&doc, "/api/watches/{watch}", "get", "404", &err.body);
    assert_eq!(
        c.get("/api/watches/quotes/changes?limit=0", &[]).status,
        400
    );
    // Without tokens, check-now is refused: no admin can be identified.
    let refused = c.send(reqwest::Method::POST, "/api/watches/quotes/check", &[]);
    assert_eq!(refused.status, 403);
    assert_valid(
        &doc,
        "/api/watches/{watch}/check",
        "post",
        "403",
        &refused.body,
    );
    drop(daemon);
}

/// Runs headless Chromium on `url` with `args` (no network beyond loopback,
/// a fresh profile); gives stdout.
fn run_chromium(bin: &str, profile: &Path, args: &[&str], url: &str) -> String {
    let out = std::process::Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "chromium failed on {url}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_status_pages_render_in_headless_chromium() {
    let Some(bin) = chromium("the_status_pages_render_in_headless_chromium") else {
        return;
    };
    let site = Site::start("251,30");
    let dir = tempfile::tempdir().unwrap();
    server_setup(
        dir.path(),
        "",
        &[
            ("quotes", clip_watch(&site.url("/quotes.html"), false)),
            (
                "broken",
                "url: http://127.0.0.1:9/nothing.html\nschedule: {every: 1s}\n\
                 fetch: {timeout: 1s, retries: 0}\n"
                    .to_owned(),
            ),
        ],
    );
    let daemon = Daemon::start(dir.path());
    let port = daemon.port();
    let c = Client::new(port);
    c.wait_for("/clips/quotes/gazp", &[], |g| g.body.contains("251,30"));
    for price in ["268,40", "305,40"] {
        site.set_price(price);
        c.wait_for("/clips/quotes/gazp", &[], |g| g.body.contains(price));
    }
    c.wait_for("/api/watches/broken", &[], |g| {
        g.body.contains("\"failing\"")
    });

    let profile = tempfile::tempdir().unwrap();
    let overview = run_chromium(
        bin,
        profile.path(),
        &["--dump-dom"],
        &format!("{}/status", c.base),
    );
    assert!(overview.contains("data-watch=\"quotes\""), "{overview}");
    assert!(overview.contains("data-watch=\"broken\""), "{overview}");
    assert!(overview.contains("state-ok"), "{overview}");
    assert!(overview.contains("state-failing"), "{overview}");

    let page = run_chromium(
        bin,
        profile.path(),
        &["--dump-dom"],
        &format!("{}/status/quotes", c.base),
    );
    // The clip, rendered by its stylesheet, inside the page.
    let gazp = page
        .split("id=\"clip-gazp\"")
        .nth(1)
        .and_then(|rest| rest.split("id=\"clip-shares\"").next())
        .unwrap_or_else(|| panic!("no gazp clip section: {page}"));
    assert!(gazp.contains("<table"), "{gazp}");
    assert!(gazp.contains("305,40"), "{gazp}");
    assert!(!gazp.contains("300,15"), "the gazp clip shows SBER: {gazp}");
    // The recent changes, in data terms.
    assert!(
        page.contains("268,40 -&gt; 305,40")
            || page.contains("268,40 → 305,40")
            || page.contains("268,40 -> 305,40"),
        "{page}"
    );
    // The chart of the threshold's value: one point per value read.
    assert!(page.contains("id=\"chart-gazp-high\""), "{page}");
    assert!(page.contains("class=\"series\""), "{page}");
    assert!(page.matches("<circle").count() >= 3, "{page}");
    assert!(page.contains("threshold-alarm"), "{page}");

    // Screenshots, kept for a person to look at.
    screenshot(bin, profile.path(), &c, "status-overview.png", "/status");
    screenshot(
        bin,
        profile.path(),
        &c,
        "status-quotes.png",
        "/status/quotes",
    );
    drop(daemon);
}

/// A screenshot of `path` in headless Chromium, 1280 by 1800 pixels, kept
/// for a person to look at as `CARGO_TARGET_TMPDIR/name`: a PNG, and not
/// nearly empty.
fn screenshot(bin: &str, profile: &Path, c: &Client, name: &str, path: &str) {
    let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_file(&file);
    run_chromium(
        bin,
        profile,
        &[
            &format!("--screenshot={}", file.display()),
            // Tall enough for a watch page down to its Values section.
            "--window-size=1280,2600",
        ],
        &format!("{}{path}", c.base),
    );
    let png = std::fs::read(&file).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "{name} is not a PNG");
    assert!(
        png.len() > 10_000,
        "{name} is nearly empty ({} bytes)",
        png.len()
    );
}

/// The text from `start` to the first `end` after it.
fn between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let from = text
        .find(start)
        .unwrap_or_else(|| panic!("no {start} in {text}"));
    let rest = &text[from..];
    &rest[..rest.find(end).unwrap_or(rest.len())]
}

/// The value of the first `attr="..."` in `html`, its `&amp;`s undone.
fn first_attr(html: &str, attr: &str) -> String {
    let start = format!(" {attr}=\"");
    let value = &between(html, &start, "\">")[start.len()..];
    value[..value.find('"').unwrap_or(value.len())].replace("&amp;", "&")
}

/// The values of a series API answer's first series.
fn api_values(body: &str) -> Vec<Option<f64>> {
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    v["series"][0]["points"]
        .as_array()
        .unwrap_or_else(|| panic!("no points: {body}"))
        .iter()
        .map(|p| p["value"].as_f64())
        .collect()
}

#[test]
fn values_over_time_are_drawn_on_the_watch_page_the_tree_and_the_change_view() {
    let (site, _dir, daemon, c) = quotes_server();
    c.wait_for("/clips/quotes/gazp", &[], |g| g.body.contains("251,30"));
    for price in ["268,40", "305,40"] {
        site.set_price(price);
        c.wait_for("/clips/quotes/gazp", &[], |g| g.body.contains(price));
    }
    // GAZP's last price changed twice: three points. Its id, from the API.
    let last: String =
        url::form_urlencoded::byte_serialize(format!("{GAZP_ROW}/cell[@col='Last']").as_bytes())
            .collect();
    let api = c.get(&format!("/api/watches/quotes/series?xpath={last}"), &[]);
    assert_eq!(api.status, 200, "{}", api.body);
    assert_eq!(
        api_values(&api.body),
        vec![Some(251.3), Some(268.4), Some(305.4)]
    );
    let v: serde_json::Value = serde_json::from_str(&api.body).unwrap();
    let node = v["series"][0]["node"].as_str().unwrap().to_owned();
    assert!(
        node.ends_with("row[@key='GAZP']/cell[@col='Last']"),
        "{node}"
    );
    let open_node = node.replace("[@col='Last']", "[@col='Open']");
    let title = ": 3 values, from 251.3 to 305.4, last 305.4</title>";
    let three = "data-points=\"3\" data-values=\"3\"";
    let spark_labels = "min <span class=\"spark-min\">251.3</span> · \
         max <span class=\"spark-max\">305.4</span> · last <span class=\"spark-last\">305.4</span>";

    // The watch page: a row per series, GAZP's with its sparkline and
    // links to its points in the series API.
    let page = c.get("/status/quotes", &[]).body;
    let values = between(&page, "<section id=\"values\">", "</section>");
    let gazp = between(values, &format!("<tr data-node=\"{node}\">"), "</tr>");
    assert!(gazp.contains("Shares / GAZP / Last"), "{gazp}");
    assert!(gazp.contains("<td class=\"num\">305.4</td>"), "{gazp}");
    assert!(gazp.contains(three), "{gazp}");
    assert!(gazp.contains(title), "{gazp}");
    assert!(gazp.contains(spark_labels), "{gazp}");
    let open = between(values, &format!("<tr data-node=\"{open_node}\">"), "</tr>");
    assert!(
        open.contains("data-points=\"1\" data-values=\"1\""),
        "the Open price never changed: {open}"
    );
    assert!(
        values.matches("<svg class=\"spark\"").count() >= 2,
        "{values}"
    );
    let json = first_attr(between(gazp, "<td class=\"formats\">", "</td>"), "href");
    assert!(
        json.starts_with("/api/watches/quotes/series?xpath="),
        "{json}"
    );
    let linked = c.get(&json, &[]);
    assert_eq!(linked.status, 200, "{json}: {}", linked.body);
    assert_eq!(
        api_values(&linked.body),
        vec![Some(251.3), Some(268.4), Some(305.4)]
    );
    let csv = c.get(&format!("{json}&format=csv"), &[]);
    assert_eq!(csv.status, 200, "{}", csv.body);
    assert_eq!(
        csv.body.lines().count(),
        4,
        "a header and 3 points: {}",
        csv.body
    );

    // The tree: the sparkline beside the number, its chart in the node's
    // body, the tree open down to it.
    let tree = c.get("/status/quotes/tree", &[]).body;
    let li = between(&tree, &format!("<li data-xpath=\"{node}\">"), "</li>");
    let summary = between(li, "<summary>", "</summary>");
    assert!(summary.contains(three), "{summary}");
    assert!(summary.contains(title), "{summary}");
    assert!(summary.contains(spark_labels), "{summary}");
    assert!(
        li.contains("<figure class=\"chart series-chart\"><svg"),
        "{li}"
    );
    assert!(
        li.contains("aria-label=\"value history: 3 values, from 251.3 to 305.4\""),
        "{li}"
    );
    assert!(
        tree.contains(&format!(
            "<li data-xpath=\"{}\"><details class=\"node\" open>",
            node.trim_end_matches("/cell[@col='Last']")
        )),
        "the GAZP row is open: {tree}"
    );

    // The change views: the changed number's sparkline, a ring on the
    // value each change brought (268.4 a third of the way up, 305.4 at
    // the top of the 24-pixel line).
    let changes: serde_json::Value =
        serde_json::from_str(&c.get("/api/watches/quotes/changes?limit=50", &[]).body).unwrap();
    let change_id = |from: &str, to: &str| {
        changes["changes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|ch| {
                let line = ch["line"].as_str().unwrap_or_default();
                line.contains(from) && line.contains(to)
            })
            .and_then(|ch| ch["id"].as_i64())
            .unwrap_or_else(|| panic!("no change {from} -> {to}: {changes}"))
    };
    for (from, to, ring) in [
        ("251,30", "268,40", "cy=\"15.31\" r=\"3.5\""),
        ("268,40", "305,40", "cy=\"3\" r=\"3.5\""),
    ] {
        let id = change_id(from, to);
        let view = c.get(&format!("/status/quotes/changes/{id}"), &[]);
        assert_eq!(view.status, 200, "{}", view.body);
        let block = between(&view.body, &format!("id=\"change-{id}\""), "</li>");
        assert!(block.contains(three), "{block}");
        assert!(block.contains(title), "{block}");
        assert_eq!(
            block.matches("<circle class=\"mark\"").count(),
            1,
            "{block}"
        );
        assert!(block.contains(ring), "{from} -> {to}: {block}");
    }

    // Screenshots of the charts, kept for a person to look at.
    if let Some(bin) =
        chromium("values_over_time_are_drawn_on_the_watch_page_the_tree_and_the_change_view")
    {
        let profile = tempfile::tempdir().unwrap();
        let shot = |name: &str, path: &str| screenshot(bin, profile.path(), &c, name, path);
        shot("series-explorer.png", "/status/quotes/tree");
        shot("series-watch.png", "/status/quotes");
    }
    drop(daemon);
}

/// The header lines of a raw `GET path` answer, as sent (names lowercased).
fn raw_header_lines(port: u16, path: &str) -> Vec<(String, String)> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let answer = String::from_utf8_lossy(&answer);
    let head = answer.split("\r\n\r\n").next().unwrap_or_default();
    head.lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect()
}

#[test]
fn a_browser_signs_in_to_the_status_pages_with_basic() {
    let site = Site::start("251,30");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("read.token"), "reader-token\n").unwrap();
    server_setup(
        dir.path(),
        "tokens:\n  portal: {secret: {file: read.token}, scopes: [read]}\n",
        &[("quotes", clip_watch(&site.url("/quotes.html"), false))],
    );
    let daemon = Daemon::start(dir.path());
    let port = daemon.port();
    let c = Client::new(port);
    c.wait_for(
        "/clips/quotes/gazp",
        &[("authorization", "Bearer reader-token")],
        |g| g.body.contains("251,30"),
    );

    // One challenge per header line, Basic first: Chromium reads only the
    // first scheme of a line, and only Basic makes it sign in.
    let challenges: Vec<String> = raw_header_lines(port, "/status")
        .into_iter()
        .filter(|(k, _)| k == "www-authenticate")
        .map(|(_, v)| v)
        .collect();
    assert_eq!(
        challenges,
        [
            "Basic realm=\"semclip\", charset=\"UTF-8\"",
            "Bearer realm=\"semclip\""
        ]
    );

    let Some(bin) = chromium("a_browser_signs_in_to_the_status_pages_with_basic (browser part)")
    else {
        return;
    };
    let profile = tempfile::tempdir().unwrap();
    // Credentials in the URL are what a browser sends after its sign-in
    // dialog: any user name, the token as the password.
    let page = run_chromium(
        bin,
        profile.path(),
        &["--dump-dom"],
        &format!("http://me:reader-token@127.0.0.1:{port}/status/quotes"),
    );
    assert!(page.contains("id=\"clip-gazp\""), "{page}");
    assert!(page.contains("251,30"), "{page}");
    // Without them (and a fresh profile) no status page: headless Chromium
    // has no sign-in dialog to show and dumps nothing.
    let fresh = tempfile::tempdir().unwrap();
    let refused = run_chromium(
        bin,
        fresh.path(),
        &["--dump-dom"],
        &format!("http://127.0.0.1:{port}/status/quotes"),
    );
    assert!(!refused.contains("id=\"clip-gazp\""), "{refused}");
    drop(daemon);
}

/// Payloads a hostile page may hold, in text, attributes and links.
const XSS: &[&str] = &[
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)>",
    "<a href=\"javascript:alert(1)\">js link</a>",
    "<a href=\" JaVaScRiPt:alert(1)\">mixed case</a>",
    "<a href=\"&#106;avascript:alert(1)\">entity</a>",
    "<a href=\"&#x6A;avascript:alert(1)\">hex entity</a>",
    "<a href=\"java&#9;script:alert(1)\">tab</a>",
    "<a href=\"vbscript:msgbox(1)\">vb</a>",
    "<a href=\"data:text/html,&lt;script&gt;alert(1)&lt;/script&gt;\">data</a>",
    "<div style=\"background:url(javascript:alert(1))\">css url</div>",
    "<div style=\"width: expression(alert(1))\">css expression</div>",
    "<iframe src=\"javascript:alert(1)\"></iframe>",
    "<object data=\"x.swf\"></object>",
    "<math><mi xlink:href=\"javascript:alert(1)\">m</mi></math>",
    "\"><script>alert(1)</script>",
    "</textarea><script>alert(1)</script>",
    "<!--<script>alert(1)</script>-->",
    "<style>@import 'http://evil.example/x.css';</style>",
    "<base href=\"http://evil.example/\">",
    "<meta http-equiv=\"refresh\" content=\"0;url=http://evil.example\">",
    "<form action=\"http://evil.example\"><button>go</button></form>",
    "&lt;script&gt;alert(1)&lt;/script&gt;",
    "<p onmouseover=\"alert(1)\">hover</p>",
    "<body onload=alert(1)>",
];

/// The XSS page: every payload in a heading, a table cell (as text and as
/// link), a list item and a paragraph.
fn xss_page() -> String {
    let mut rows = String::new();
    let mut items = String::new();
    for (i, p) in XSS.iter().enumerate() {
        rows.push_str(&format!("<tr><td>k{i}</td><td>{p}</td><td>{i}</td></tr>"));
        items.push_str(&format!("<li>{p}</li>"));
    }
    format!(
        "<!doctype html><html><head><title>XSS {}</title></head><body>\
         <h1>Hostile {}</h1><table><caption>Payloads</caption>\
         <tr><th>Key</th><th>Payload</th><th>N</th></tr>{rows}</table>\
         <ul>{items}</ul><p>{}</p></body></html>",
        XSS[0],
        XSS[3],
        XSS.join(" ")
    )
}

/// Whether an HTML fragment could run script or restyle the portal.
fn dangers(html: &str) -> Vec<String> {
    let lower = html.to_ascii_lowercase();
    let mut found = Vec::new();
    for bad in [
        "<script",
        "<iframe",
        "<svg",
        "<style",
        "<object",
        "<math",
        "<base",
        "<meta",
        "<form",
        "<img",
        "<embed",
        "<link",
        "style=",
        "javascript:",
        "vbscript:",
        "data:text",
        "expression(",
    ] {
        if lower.contains(bad) {
            found.push(bad.to_owned());
        }
    }
    // Event handlers: an attribute named on... inside a tag.
    let doc = libxml::parser::Parser::default_html()
        .parse_string(html)
        .unwrap();
    let mut stack = vec![doc.get_root_element().unwrap()];
    while let Some(n) = stack.pop() {
        for (name, value) in n.get_properties() {
            if name.to_ascii_lowercase().starts_with("on") {
                found.push(format!("{}[{name}]", n.get_name()));
            }
            if name == "href"
                && !(value.starts_with("http://")
                    || value.starts_with("https://")
                    || value.starts_with("mailto:"))
            {
                found.push(format!("href={value}"));
            }
        }
        stack.extend(n.get_child_elements());
    }
    found
}

#[test]
fn html_clips_of_a_page_full_of_xss_payloads_carry_none_of_them() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("xss.html");
    std::fs::write(&page, xss_page()).unwrap();
    let url = url::Url::from_file_path(&page).unwrap();
    server_setup(
        dir.path(),
        "",
        &[(
            "xss",
            format!(
                "url: {url}\nschedule: {{every: 1h}}\n\
                 clips:\n  table:\n    xpath: \"//table\"\n  items:\n    xpath: \"//list/item\"\n  \
                 all:\n    xpath: \"/page\"\n"
            ),
        )],
    );
    let daemon = Daemon::start(dir.path());
    let port = daemon.port();
    let c = Client::new(port);
    let xml = c.wait_for("/clips/xss/table", &[], |_| true);
    // The payloads are in the data (as text), so the test is not vacuous.
    assert!(
        xml.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{}",
        xml.body
    );
    assert!(xml.body.contains("javascript:alert(1)"), "{}", xml.body);
    for clip in ["table", "items", "all"] {
        for query in [
            "format=html",
            "format=html&title=%3Cscript%3Ealert(1)%3C%2Fscript%3E",
        ] {
            let html = c.get(&format!("/clips/xss/{clip}?{query}"), &[]);
            assert_eq!(html.status, 200, "{clip}: {}", html.body);
            assert!(
                html.body.contains("alert(1)"),
                "{clip}: the payload text should remain as text"
            );
            let found = dangers(&html.body);
            assert!(
                found.is_empty(),
                "{clip} ?{query}: {found:?}\n{}",
                html.body
            );
        }
    }
    let page = c.get("/status/xss", &[]);
    assert_eq!(page.status, 200);
    assert!(
        !page.body.to_ascii_lowercase().contains("<script"),
        "{}",
        page.body
    );
    drop(daemon);
}

#[test]
fn semclip_serve_serves_a_store_alone_with_cors_for_the_portal() {
    let (site, dir, daemon, c) = quotes_server();
    let etag = c
        .wait_for("/clips/quotes/gazp", &[], |g| g.body.contains("251,30"))
        .header("etag")
        .unwrap();
    assert!(daemon.stop().success());
    drop(site);

    // The same store and watches, served by `semclip serve` on another port.
    let config = dir.path().join("semclip.yaml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("  cors_origins: [\"https://portal.example.org\"]\n");
    text.push_str("tokens:\n  ops: {secret: {env: SEMCLIP_TEST_OPS}, scopes: [admin]}\n");
    std::fs::write(&config, text).unwrap();
    let log = std::fs::File::create(dir.path().join("serve.log")).unwrap();
    let mut child = Killed(
        std::process::Command::new(env!("CARGO_BIN_EXE_semclip"))
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(&config)
            .env("SEMCLIP_TEST_OPS", "ops-token")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap(),
    );
    let port =
        crate::util::bound_addr(&dir.path().join("serve.log"), Duration::from_secs(30)).port();
    let c = Client::new(port);
    let ops = ("authorization", "Bearer ops-token");
    let got = c.wait_for(
        "/clips/quotes/gazp",
        &[("origin", "https://portal.example.org"), ops],
        |_| true,
    );
    assert_eq!(
        got.header("etag"),
        Some(etag.clone()),
        "same data, same ETag"
    );
    assert_eq!(
        got.header("access-control-allow-origin").as_deref(),
        Some("https://portal.example.org")
    );
    assert!(
        got.header("access-control-expose-headers")
            .unwrap()
            .to_ascii_lowercase()
            .contains("etag")
    );
    let other = c.get(
        "/clips/quotes/gazp",
        &[("origin", "https://evil.example.org"), ops],
    );
    assert_eq!(other.status, 200);
    assert_eq!(other.header("access-control-allow-origin"), None);
    assert_eq!(
        c.get("/clips/quotes/gazp", &[("if-none-match", &etag), ops])
            .status,
        304
    );
    // No scheduler here: check-now is a conflict, even for an admin.
    let refused = c.send(reqwest::Method::POST, "/api/watches/quotes/check", &[ops]);
    assert_eq!(refused.status, 409, "{}", refused.body);
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.0.id().to_string()])
        .status();
    let start = Instant::now();
    let exit = loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "serve did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(exit.success(), "{exit:?}");
}

/// Starts `semclip serve --listen 127.0.0.1:0 --config CONFIG` with `env`,
/// logging to `log`, and waits until it listens.
fn serve_alone(config: &Path, env: &[(&str, &str)], log: &Path) -> Killed {
    let file = std::fs::File::create(log).unwrap();
    let child = Killed(
        std::process::Command::new(env!("CARGO_BIN_EXE_semclip"))
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(config)
            .env_remove("RUST_LOG")
            .envs(env.iter().copied())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(file)
            .spawn()
            .unwrap(),
    );
    crate::util::bound_addr(log, Duration::from_secs(30));
    child
}

#[test]
fn a_server_without_tokens_warns_once_at_start_that_every_clip_is_readable() {
    use semclip::serve::auth::OPEN;
    // `semclip run`, no token: of the watch's clips, `gazp` is public and
    // `shares` is not; the warning names the second.
    let dir = tempfile::tempdir().unwrap();
    server_setup(
        dir.path(),
        "",
        &[("quotes", clip_watch("http://127.0.0.1:9/quotes.html", true))],
    );
    let daemon = Daemon::start(dir.path());
    // The warning comes before the "clip server listening" line.
    daemon.addr();
    let log = daemon.log();
    assert_eq!(log.matches(OPEN).count(), 1, "one warning:\n{log}");
    let warning = log.lines().find(|l| l.contains(OPEN)).unwrap();
    assert!(warning.contains("WARN"), "{warning}");
    assert!(warning.contains("private_clips=1"), "{warning}");
    assert!(
        warning.contains("quotes/shares") && !warning.contains("quotes/gazp"),
        "{warning}"
    );
    assert!(warning.contains("under `tokens:`"), "{warning}");
    drop(daemon);

    // `semclip serve` warns the same.
    let config = dir.path().join("semclip.yaml");
    let open_log = dir.path().join("serve-open.log");
    let serve = serve_alone(&config, &[], &open_log);
    let log = std::fs::read_to_string(&open_log).unwrap();
    assert_eq!(log.matches(OPEN).count(), 1, "one warning:\n{log}");
    drop(serve);

    // With a token, neither says anything of the kind.
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("tokens:\n  portal: {secret: {env: SEMCLIP_TEST_PORTAL}, scopes: [read]}\n");
    std::fs::write(&config, text).unwrap();
    let closed_log = dir.path().join("serve-closed.log");
    let serve = serve_alone(
        &config,
        &[("SEMCLIP_TEST_PORTAL", "portal-token")],
        &closed_log,
    );
    let log = std::fs::read_to_string(&closed_log).unwrap();
    assert!(!log.contains(OPEN), "{log}");
    drop(serve);
}

/// A child process killed when dropped (a failing test leaves none behind).
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The text of the first `<pre class="...{class}...">` after `from` in a
/// dumped DOM, unescaped.
fn pre_after(dom: &str, from: &str, class: &str) -> String {
    let at = dom
        .find(from)
        .unwrap_or_else(|| panic!("no {from} in the page: {dom}"));
    let rest = &dom[at..];
    let open = rest
        .find(&format!("class=\"snippet {class}\""))
        .unwrap_or_else(|| panic!("no {class} after {from}"));
    let rest = &rest[open..];
    let start = rest.find('>').unwrap() + 1;
    let end = rest.find("</pre>").unwrap();
    rest[start..end]
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// Runs `semclip validate` on a daemon-less directory holding `watch` as
/// its only watch file; gives the output.
fn validate_watch(watch: &str) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("watches")).unwrap();
    std::fs::write(dir.path().join("watches/picked.yaml"), watch).unwrap();
    let watches = dir.path().join("watches").display().to_string();
    crate::util::semclip(&["validate", "--watches", watches.as_str()], None)
}

#[test]
fn the_hierarchy_tree_and_the_change_view_render_in_headless_chromium() {
    let Some(bin) = chromium("the_hierarchy_tree_and_the_change_view_render_in_headless_chromium")
    else {
        return;
    };
    let (site, _dir, daemon, c) = quotes_server();
    c.wait_for("/clips/quotes/gazp", &[], |g| g.body.contains("251,30"));
    site.set_price("268,40");
    c.wait_for("/clips/quotes/gazp", &[], |g| g.body.contains("268,40"));

    // The status page links the tree and each change's view.
    let status = c.get("/status/quotes", &[]);
    assert!(status.body.contains("href=\"/status/quotes/tree\""));
    let change = status
        .body
        .split("href=\"/status/quotes/changes/")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no change link: {}", status.body))
        .to_owned();
    let csp = status.header("content-security-policy").unwrap();
    assert!(csp.contains("script-src 'self'"), "{csp}");
    // The feed's entries link the change views too.
    let feed = c.get("/feeds/quotes.atom", &[]);
    assert!(
        feed.body
            .contains(&format!("/status/quotes/changes/{change}\"")),
        "{}",
        feed.body
    );

    let profile = tempfile::tempdir().unwrap();
    let tree = run_chromium(
        bin,
        profile.path(),
        &["--dump-dom"],
        &format!("{}/status/quotes/tree", c.base),
    );
    let row = "data-xpath=\"/page/section[@label='Итоги торгов']/section[@label='Акции']/table[@label='Shares']/row[@key='GAZP']\"";
    let row = if tree.contains(row) {
        row.to_owned()
    } else {
        // Whatever the GAZP row's id is, it ends with its key.
        let at = tree
            .find("row[@key='GAZP']\"")
            .unwrap_or_else(|| panic!("no GAZP row in the tree: {tree}"));
        let start = tree[..at].rfind("data-xpath=\"").unwrap();
        tree[start..at + "row[@key='GAZP']\"".len()].to_owned()
    };
    // The row's clip snippet, pasted into a watch file, validates.
    let clip = pre_after(&tree, &row, "clip-snippet");
    assert!(clip.starts_with("clips:\n  gazp:\n    xpath: \""), "{clip}");
    let watch = format!(
        "url: {}\nschedule: {{every: 1m}}\n{clip}",
        site.url("/quotes.html")
    );
    let out = validate_watch(&watch);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{watch}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A numeric cell of the row gives a threshold that validates too, and
    // reads the value on the page.
    let threshold = pre_after(&tree, &row, "threshold-snippet");
    assert!(threshold.contains("/@num\""), "{threshold}");
    assert!(threshold.contains("above: 268.4"), "{threshold}");
    let watch = format!(
        "url: {}\nschedule: {{every: 1m}}\n{threshold}",
        site.url("/quotes.html")
    );
    let out = validate_watch(&watch);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{watch}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let view = run_chromium(
        bin,
        profile.path(),
        &["--dump-dom"],
        &format!("{}/status/quotes/changes/{change}", c.base),
    );
    assert!(view.contains("class=\"changed\">251,30</td>"), "{view}");
    assert!(view.contains("class=\"changed\">268,40</td>"), "{view}");
    assert!(view.contains(&format!("id=\"change-{change}\"")), "{view}");
    assert_eq!(
        c.get("/status/quotes/changes/999999", &[]).status,
        404,
        "an unknown change"
    );

    let shots = Path::new(env!("CARGO_TARGET_TMPDIR"));
    for (name, path) in [
        ("status-tree.png", "/status/quotes/tree".to_owned()),
        (
            "status-change.png",
            format!("/status/quotes/changes/{change}"),
        ),
    ] {
        let file = shots.join(name);
        let _ = std::fs::remove_file(&file);
        run_chromium(
            bin,
            profile.path(),
            &[
                &format!("--screenshot={}", file.display()),
                "--window-size=1280,1400",
            ],
            &format!("{}{path}", c.base),
        );
        let png = std::fs::read(&file).unwrap();
        assert!(png.starts_with(b"\x89PNG"), "{name} is not a PNG");
    }
    drop(daemon);
}

/// `semclip_clip_requests_total` for `format` and `status`, from `/metrics`.
fn clip_requests(c: &Client, format: &str, status: u16) -> u64 {
    let metrics = c.get("/metrics", &[]).body;
    metrics
        .lines()
        .filter(|l| l.starts_with("semclip_clip_requests_total{"))
        .filter(|l| {
            l.contains(&format!("format=\"{format}\""))
                && l.contains(&format!("status=\"{status}\""))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// A portal site on its own origin, on `listener` (a plain thread, no
/// runtime): `/` answers `page`; `/changed` calls `changed` and answers
/// when it returns. Gives the port.
fn portal_on(
    listener: std::net::TcpListener,
    page: String,
    changed: impl Fn() + Send + 'static,
) -> u16 {
    use std::io::{BufRead, Write};
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
            let mut request = String::new();
            let _ = reader.read_line(&mut request);
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
            }
            let path = request.split(' ').nth(1).unwrap_or("/");
            let (kind, body) = if path == "/changed" {
                changed();
                ("text/plain", String::from("ok"))
            } else {
                ("text/html; charset=utf-8", page.clone())
            };
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

#[test]
fn the_embed_element_shows_a_clip_on_another_origin_and_revalidates_with_its_etag() {
    let Some(bin) =
        chromium("the_embed_element_shows_a_clip_on_another_origin_and_revalidates_with_its_etag")
    else {
        return;
    };
    let site = Site::start("251,30");
    let dir = tempfile::tempdir().unwrap();
    // The portal's port is known before its page is: its origin goes into
    // the server's CORS and frame-ancestors lists.
    let portal = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let portal_port = portal.local_addr().unwrap().port();
    let origin = format!("http://127.0.0.1:{portal_port}");
    server_setup(
        dir.path(),
        &format!("  cors_origins: [\"{origin}\"]\n  frame_ancestors: [\"'self'\", \"{origin}\"]\n"),
        &[("quotes", clip_watch(&site.url("/quotes.html"), true))],
    );
    let daemon = Daemon::start(dir.path());
    let port = daemon.port();
    let c = Client::new(port);
    c.wait_for("/clips/quotes/gazp", &[], |g| g.body.contains("251,30"));

    // Framing is governed by the CSP, not X-Frame-Options.
    let framed = c.get("/clips/quotes/gazp?format=html", &[]);
    let csp = framed.header("content-security-policy").unwrap();
    assert!(
        csp.ends_with(&format!("frame-ancestors 'self' {origin}")),
        "{csp}"
    );
    assert_eq!(framed.header("x-frame-options"), None);
    let js = c.get("/embed.js", &[]);
    assert_eq!(js.status, 200);
    assert!(js.body.contains("customElements.define(\"semclip-clip\""));

    let base = &c.base;
    let page = format!(
        "<!doctype html><html><head><meta charset=utf-8><title>Portal</title>\
         <script src=\"{base}/embed.js\"></script></head><body><h1>Portal</h1>\
         <semclip-clip id=clip src=\"{base}/clips/quotes/gazp\" interval=\"1\">loading</semclip-clip>\
         <iframe src=\"{base}/clips/quotes/gazp?format=html\" width=600 height=120></iframe>\
         <ol id=log></ol><script>\
         var el = document.getElementById('clip'), n = 0;\
         function log(cls, text) {{ var li = document.createElement('li'); li.className = cls;\
           li.textContent = text; document.getElementById('log').appendChild(li); }}\
         el.addEventListener('semclip-update', function () {{ n += 1;\
           log('update', el.shadowRoot.innerHTML); if (n === 1) fetch('/changed'); }});\
         el.addEventListener('semclip-error', function (e) {{ log('error', e.detail.error); }});\
         </script></body></html>"
    );
    // `/changed` (asked once the clip shows) changes the data and answers
    // when semclip serves the new clip: the browser's virtual time stands
    // still while it waits.
    let (asked, changed) = std::sync::mpsc::channel::<()>();
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let finished = std::sync::Mutex::new(finished);
    let first = std::sync::atomic::AtomicBool::new(true);
    let bound = portal_on(portal, page, move || {
        // Only the first page load waits for the change (not the screenshot's).
        if first.swap(false, std::sync::atomic::Ordering::SeqCst) {
            let _ = asked.send(());
            let _ = finished
                .lock()
                .unwrap()
                .recv_timeout(Duration::from_secs(30));
        }
    });
    assert_eq!(bound, portal_port);
    let before_304 = clip_requests(&c, "html", 304);

    let profile = tempfile::tempdir().unwrap();
    let profile_path = profile.path().to_owned();
    let url = format!("{origin}/");
    let browser = std::thread::spawn(move || {
        run_chromium(
            bin,
            &profile_path,
            &["--dump-dom", "--virtual-time-budget=8000"],
            &url,
        )
    });
    changed
        .recv_timeout(Duration::from_secs(60))
        .expect("the element never showed the clip");
    site.set_price("268,40");
    c.wait_for("/clips/quotes/gazp", &[], |g| g.body.contains("268,40"));
    done.send(()).unwrap();
    let dom = browser.join().unwrap();

    let updates: Vec<&str> = dom.split("<li class=\"update\">").skip(1).collect();
    assert!(!dom.contains("class=\"error\""), "{dom}");
    assert_eq!(updates.len(), 2, "{dom}");
    assert!(
        updates[0].contains("251,30") && updates[0].contains("&lt;table"),
        "{dom}"
    );
    assert!(
        updates[1].contains("268,40") && !updates[1].contains("251,30"),
        "{dom}"
    );
    // Between and after the changes, the element's polls were 304s.
    let answered_304 = clip_requests(&c, "html", 304) - before_304;
    assert!(answered_304 >= 2, "only {answered_304} 304s: {dom}");

    // The server-side include: the portal stylesheet shown in
    // docs/http-api.md ("Portals") over the XML fragment (libxslt here, as
    // xsltproc would).
    let stylesheet = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/portal/clip-table.xsl");
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/http-api.md"))
            .unwrap();
    for line in std::fs::read_to_string(&stylesheet).unwrap().lines() {
        assert!(
            doc.contains(line.trim()),
            "the copy in docs/http-api.md lacks {line:?}"
        );
    }
    let fragment = c.get("/clips/quotes/gazp?format=xml&fragment=1", &[]);
    assert!(fragment.body.starts_with("<clip "), "{}", fragment.body);
    let xslt = tempfile::tempdir().unwrap();
    std::fs::copy(&stylesheet, xslt.path().join("clip-table.xsl")).unwrap();
    let renderer = semclip::serve::render::Renderer::start(xslt.path().to_owned());
    let table =
        c.rt.block_on(renderer.html("clip-table.xsl", fragment.body, Vec::new()))
            .unwrap();
    assert!(table.contains("GAZP</th>"), "{table}");
    assert!(table.contains(">268,40</td>"), "{table}");

    // A screenshot of the portal: the element and the framed clip.
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("portal-embed.png");
    let _ = std::fs::remove_file(&shot);
    run_chromium(
        bin,
        profile.path(),
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1000,700",
            "--virtual-time-budget=3000",
        ],
        &format!("{origin}/"),
    );
    assert!(std::fs::read(&shot).unwrap().starts_with(b"\x89PNG"));
    drop(daemon);
}
