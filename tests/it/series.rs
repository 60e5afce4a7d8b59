//! Values over time (issue 35): the series a watch's numbers leave in the
//! store as it is checked through versions of a page, on both engines;
//! the series API in its JSON, CSV, Home Assistant and Infinity shapes;
//! `/metrics` gauges and their cap; `semclip backtest` against what the
//! live checks alerted; a windowed `change_pct` that fires once.
//!
//! Each check is one `semclip check` run against a local quote board whose
//! rows the test sets between runs, so every step is deterministic.

use std::path::Path;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::response::Html;
use axum::routing::get;
use semclip::store::Store;

use crate::daemon::{Daemon, file_alerts, setup};
use crate::fixture::StateSite;
use crate::serve::{Client, repo_xslt};
use crate::util::{describe, semclip};

/// The board: rows of (code, last, volume), and a markup variant.
#[derive(Default)]
struct Board {
    rows: Vec<(&'static str, &'static str, &'static str)>,
    markup: u32,
}

async fn board(State(s): State<Arc<Mutex<Board>>>) -> Html<String> {
    let (rows, markup) = s
        .lock()
        .map(|b| (b.rows.clone(), b.markup))
        .unwrap_or_default();
    let class = if markup % 2 == 0 {
        "quotes"
    } else {
        "q-table v2"
    };
    let body: String = rows
        .iter()
        .map(|(code, last, volume)| {
            format!("<tr><td>{code}</td><td>{last}</td><td>{volume}</td></tr>")
        })
        .collect();
    Html(format!(
        "<html><head><title>Quotes</title></head><body><h1>Board</h1>\
         <div class=\"w{markup}\"><table class=\"{class}\"><caption>Shares</caption>\
         <tr><th>Code</th><th>Last</th><th>Volume</th></tr>{body}</table></div>\
         <footer>About us</footer></body></html>"
    ))
}

fn start_board() -> StateSite<Board> {
    StateSite::start(Board::default(), Router::new().route("/q", get(board)))
}

/// One `semclip check` of every watch in `dir`.
fn check(dir: &Path) {
    let config = dir.join("semclip.yaml");
    let args = ["check", "--config", config.to_str().unwrap()];
    let out = semclip(&args, None);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        describe(&args, &out)
    );
}

/// Sets the board's rows, then checks.
fn version(
    site: &StateSite<Board>,
    dir: &Path,
    rows: &[(&'static str, &'static str, &'static str)],
) {
    site.state().rows = rows.to_vec();
    check(dir);
}

const GAZP_LAST: &str = "//row[@key='GAZP']/cell[@col='Last']";

fn quotes_watch(url: &str) -> String {
    format!(
        "url: {url}\nschedule: {{every: 1h}}\nfetch: {{timeout: 5s, retries: 0}}\n\
         clips:\n  gazp: {{xpath: \"//row[@key='GAZP']\", metrics: true}}\n\
         thresholds:\n  - name: sber\n    xpath: \"//row[@key='SBER']/cell[@col='Last']/@num\"\n    \
         above: 1000\n    metrics: true\n"
    )
}

/// The values of the points of the one series whose node id ends with
/// `suffix`.
fn points(store: &Store, watch: &str, suffix: &str) -> Vec<Option<f64>> {
    let heads = store.series_heads(watch).unwrap();
    let matching: Vec<_> = heads.iter().filter(|h| h.node.ends_with(suffix)).collect();
    assert_eq!(matching.len(), 1, "{suffix} among {heads:#?}");
    store
        .series_points(watch, &matching[0].node, None, None)
        .unwrap()
        .iter()
        .map(|p| p.value)
        .collect()
}

/// Checks the board through five versions (one of them markup only).
fn five_versions(site: &StateSite<Board>, dir: &Path) {
    version(
        site,
        dir,
        &[
            ("GAZP", "100", "10"),
            ("SBER", "50", "7"),
            ("LKOH", "70", "1"),
        ],
    );
    version(
        site,
        dir,
        &[
            ("GAZP", "105", "10"),
            ("SBER", "50", "7"),
            ("LKOH", "70", "1"),
        ],
    );
    // The same data in other markup: no version, no point.
    site.state().markup = 1;
    check(dir);
    // GAZP gone: its series end.
    version(site, dir, &[("SBER", "51", "7"), ("LKOH", "70", "1")]);
    // GAZP back.
    version(
        site,
        dir,
        &[
            ("GAZP", "107", "11"),
            ("SBER", "51", "7"),
            ("LKOH", "70", "1"),
        ],
    );
}

fn expect_the_five_versions(store: &Store) {
    let heads = store.series_heads("q").unwrap();
    assert_eq!(heads.len(), 3, "{heads:#?}");
    assert_eq!(
        points(store, "q", "row[@key='GAZP']/cell[@col='Last']"),
        [Some(100.0), Some(105.0), None, Some(107.0)]
    );
    assert_eq!(
        points(store, "q", "row[@key='GAZP']/cell[@col='Volume']"),
        [Some(10.0), None, Some(11.0)]
    );
    assert_eq!(
        points(store, "q", "row[@key='SBER']/cell[@col='Last']"),
        [Some(50.0), Some(51.0)]
    );
    // LKOH is in no clip nor threshold: no series.
    assert!(heads.iter().all(|h| !h.node.contains("LKOH")), "{heads:#?}");
    let sources: Vec<&str> = heads.iter().map(|h| h.source.as_str()).collect();
    assert!(sources.contains(&"clip:gazp"), "{sources:?}");
    assert!(sources.contains(&"threshold:sber"), "{sources:?}");
}

#[test]
fn a_watch_leaves_a_point_per_changed_value_on_sqlite() {
    let site = start_board();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    setup(
        dir,
        &format!("listen: 127.0.0.1:0\nserver:\n  xslt: {}\n", repo_xslt()),
        &[("q", quotes_watch(&site.url("/q")))],
    );
    five_versions(&site, dir);
    expect_the_five_versions(&Store::open(&dir.join("state/semclip.db")).unwrap());

    // The API, from the daemon.
    let daemon = Daemon::start(dir);
    let c = Client::new(daemon.port());
    let listing = c.get("/api/watches/q/series", &[]);
    assert_eq!(listing.status, 200, "{}", listing.body);
    let listing: serde_json::Value = serde_json::from_str(&listing.body).unwrap();
    assert_eq!(
        listing["series"].as_array().unwrap().len(),
        3,
        "{listing:#}"
    );
    assert!(listing["series"][0].get("points").is_none(), "{listing:#}");

    let path = format!("/api/watches/q/series?xpath={}", urlencode(GAZP_LAST));
    let got: serde_json::Value = serde_json::from_str(&c.get(&path, &[]).body).unwrap();
    let series = &got["series"][0];
    let values: Vec<Option<f64>> = series["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["value"].as_f64())
        .collect();
    assert_eq!(values, [Some(100.0), Some(105.0), None, Some(107.0)]);
    assert_eq!(series["value"], 107.0);
    assert_eq!(series["source"], "clip:gazp");
    assert!(
        series["label"].as_str().unwrap().contains("GAZP"),
        "{series:#}"
    );
    // By the node's id, `/@num` and all: the same series.
    let id = series["node"].as_str().unwrap().to_owned();
    let by_id: serde_json::Value = serde_json::from_str(
        &c.get(
            &format!(
                "/api/watches/q/series?xpath={}",
                urlencode(&format!("{id}/@num"))
            ),
            &[],
        )
        .body,
    )
    .unwrap();
    assert_eq!(by_id["series"][0]["points"], series["points"]);

    // CSV: a header and one row per point, the gone point empty.
    let csv = c.get(&format!("{path}&format=csv"), &[]);
    assert_eq!(csv.status, 200);
    let lines: Vec<&str> = csv.body.lines().collect();
    assert_eq!(lines.len(), 5, "{}", csv.body);
    assert_eq!(lines[0], "time,node,label,value");
    assert!(lines[3].ends_with(','), "{}", csv.body);
    assert!(lines[4].ends_with(",107"), "{}", csv.body);

    // Home Assistant: a REST sensor's state.
    let sber = "//row[@key='SBER']/cell[@col='Last']/@num";
    let ha: serde_json::Value = serde_json::from_str(
        &c.get(
            &format!("/api/watches/q/series?xpath={}&format=ha", urlencode(sber)),
            &[],
        )
        .body,
    )
    .unwrap();
    assert_eq!(ha["state"], "51", "{ha:#}");
    assert!(
        ha["attributes"]["friendly_name"]
            .as_str()
            .unwrap()
            .contains("SBER"),
        "{ha:#}"
    );
    assert_eq!(ha["attributes"]["watch"], "q");

    // Infinity: flat rows.
    let table: serde_json::Value =
        serde_json::from_str(&c.get(&format!("{path}&format=table"), &[]).body).unwrap();
    let rows = table.as_array().unwrap();
    assert_eq!(rows.len(), 4, "{table:#}");
    assert!(
        rows.iter()
            .all(|r| r["time"].is_string() && r["watch"] == "q")
    );

    // Thinned: fewer points, flagged.
    let thin: serde_json::Value =
        serde_json::from_str(&c.get(&format!("{path}&points=2"), &[]).body).unwrap();
    assert_eq!(thin["series"][0]["downsampled"], true, "{thin:#}");
    assert!(thin["series"][0]["points"].as_array().unwrap().len() < 4);

    // A range: the point in force at `from` first.
    let future = c.get(&format!("{path}&from=2999-01-01T00:00:00Z"), &[]);
    let future: serde_json::Value = serde_json::from_str(&future.body).unwrap();
    assert_eq!(future["series"][0]["points"].as_array().unwrap().len(), 1);
    assert_eq!(future["series"][0]["points"][0]["value"], 107.0);

    // Bad input: clear errors.
    let bad = c.get(&format!("{path}&from=yesterday"), &[]);
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert!(bad.body.contains("RFC 3339"), "{}", bad.body);
    assert_eq!(c.get(&format!("{path}&format=xml"), &[]).status, 400);
    assert_eq!(
        c.get("/api/watches/q/series?xpath=//nothing", &[]).status,
        404
    );

    // /metrics: the clip's values and the threshold's, by label.
    let metrics = c.get("/metrics", &[]).body;
    let value_of = |needle: &[&str]| -> Option<f64> {
        metrics
            .lines()
            .filter(|l| l.starts_with("semclip_value{"))
            .find(|l| needle.iter().all(|n| l.contains(n)))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
    };
    assert_eq!(
        value_of(&["clip=\"gazp\"", "GAZP", "Last"]),
        Some(107.0),
        "{metrics}"
    );
    assert_eq!(
        value_of(&["threshold=\"sber\"", "SBER", "Last"]),
        Some(51.0),
        "{metrics}"
    );
    drop(daemon);
}

#[test]
fn a_watch_leaves_a_point_per_changed_value_on_postgres() {
    let Some(database) = crate::pg::database(module_path!()) else {
        return;
    };
    let site = start_board();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    setup(dir, "", &[("q", quotes_watch(&site.url("/q")))]);
    let config = std::fs::read_to_string(dir.join("semclip.yaml")).unwrap();
    std::fs::write(
        dir.join("semclip.yaml"),
        config.replace(
            "database: state/semclip.db",
            &format!("database: \"{}\"", crate::pg::url_with(&database, "")),
        ),
    )
    .unwrap();
    five_versions(&site, dir);
    expect_the_five_versions(&Store::open_database(&database).unwrap());
}

#[test]
fn metrics_export_at_most_a_hundred_values_a_watch() {
    let rows: String = (0..150)
        .map(|i| format!("<tr><td>R{i}</td><td>{i}.5</td></tr>"))
        .collect();
    let page = format!(
        "<html><head><title>Big</title></head><body><h1>Big</h1><table><caption>Rows</caption>\
         <tr><th>Code</th><th>Value</th></tr>{rows}</table></body></html>"
    );
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::write(dir.join("big.html"), page).unwrap();
    let url = url::Url::from_file_path(dir.join("big.html")).unwrap();
    setup(
        dir,
        &format!("listen: 127.0.0.1:0\nserver:\n  xslt: {}\n", repo_xslt()),
        &[(
            "big",
            format!(
                "url: {url}\nschedule: {{every: 1h}}\nmetrics: true\n\
                 clips:\n  rows: {{xpath: \"//table\"}}\n"
            ),
        )],
    );
    check(dir);
    let store = Store::open(&dir.join("state/semclip.db")).unwrap();
    assert_eq!(store.series_heads("big").unwrap().len(), 150);
    drop(store);
    let daemon = Daemon::start(dir);
    let c = Client::new(daemon.port());
    let metrics = c.get("/metrics", &[]).body;
    let exported = metrics
        .lines()
        .filter(|l| l.starts_with("semclip_value{") && l.contains("watch=\"big\""))
        .count();
    assert_eq!(exported, 100, "{metrics}");
    assert!(
        metrics.lines().any(|l| l == "semclip_values_dropped 50"),
        "{metrics}"
    );
    drop(daemon);
}

/// The (kind, value) of each threshold alert of `name`, in order.
fn live_crossings(dir: &Path, name: &str) -> Vec<(String, Option<f64>)> {
    file_alerts(dir)
        .iter()
        .filter(|a| a["threshold"]["name"] == name)
        .map(|a| {
            (
                a["kind"].as_str().unwrap().to_owned(),
                a["threshold"]["value"].as_f64(),
            )
        })
        .collect()
}

/// `semclip backtest` of `dir`'s watch `q` with `rule`, as JSON.
fn backtest(dir: &Path, rule: &[&str]) -> (Option<i32>, serde_json::Value) {
    let config = dir.join("semclip.yaml");
    let mut args = vec![
        "backtest",
        "q",
        "--json",
        "--config",
        config.to_str().unwrap(),
    ];
    args.extend_from_slice(rule);
    let out = semclip(&args, None);
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", describe(&args, &out)));
    (out.status.code(), json)
}

#[test]
fn a_backtest_gives_the_crossings_the_live_checks_gave_and_a_window_fires_once() {
    let site = start_board();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let last = format!("{GAZP_LAST}/@num");
    setup(
        dir,
        "",
        &[(
            "q",
            format!(
                "url: {}\nschedule: {{every: 1h}}\nfetch: {{timeout: 5s, retries: 0}}\n\
                 clips:\n  gazp: {{xpath: \"//row[@key='GAZP']\"}}\n\
                 on_change: {{notify: [log]}}\n\
                 thresholds:\n\
                 \x20 - {{name: high, xpath: \"{last}\", above: 102, notify: [log]}}\n\
                 \x20 - {{name: drop, xpath: \"{last}\", change_pct: 10, within: 7d, notify: [log]}}\n",
                site.url("/q")
            ),
        )],
    );
    for last in ["100", "104", "102", "92", "91", "101"] {
        version(
            &site,
            dir,
            &[
                ("GAZP", last, "1"),
                ("SBER", "50", "7"),
                ("LKOH", "70", "1"),
            ],
        );
    }
    // Live: the drop of more than 10% from the window's high (104 -> 92)
    // fires once, holds at 91, returns at 101.
    let drop = live_crossings(dir, "drop");
    assert_eq!(
        drop,
        [
            ("threshold_crossed".to_owned(), Some(92.0)),
            ("threshold_returned".to_owned(), Some(101.0)),
        ],
        "{:#?}",
        file_alerts(dir)
    );
    let high = live_crossings(dir, "high");
    assert_eq!(
        high,
        [
            ("threshold_crossed".to_owned(), Some(104.0)),
            ("threshold_returned".to_owned(), Some(102.0)),
        ]
    );
    // Replayed: the same crossings, at the versions' times.
    for (name, live) in [("drop", &drop), ("high", &high)] {
        let (code, json) = backtest(dir, &["--threshold", name]);
        assert_eq!(code, Some(1), "{json:#}");
        assert_eq!(json["versions"], 6, "{json:#}");
        let replayed: Vec<(String, Option<f64>)> = json["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["kind"].as_str().unwrap().to_owned(), e["value"].as_f64()))
            .collect();
        assert_eq!(&replayed, live, "{name}: {json:#}");
    }
    // A clip: changed at every version after the first.
    let (_, clip) = backtest(dir, &["--clip", "gazp"]);
    assert_eq!(clip["events"].as_array().unwrap().len(), 5, "{clip:#}");
    assert!(
        clip["events"][0]["lines"][0]
            .as_str()
            .unwrap()
            .contains("104")
    );
    // An ignore list that would silence every change of this history.
    let (code, ignore) = backtest(dir, &["--ignore", "//row[@key='GAZP']"]);
    assert_eq!(code, Some(1));
    let kinds: Vec<&str> = ignore["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["silenced"; 5], "{ignore:#}");
    // One that silences nothing of it.
    let (code, kept) = backtest(dir, &["--ignore", "//footer"]);
    assert_eq!(code, Some(0), "{kept:#}");
    assert!(
        kept["events"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["kind"] == "kept")
    );

    // The text form, and a rule the watch has not.
    let config = dir.join("semclip.yaml");
    let args = [
        "backtest",
        "q",
        "--threshold",
        "drop",
        "--config",
        config.to_str().unwrap(),
    ];
    let out = semclip(&args, None);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("threshold_crossed") && text.contains("92"),
        "{text}"
    );
    assert!(text.contains("6 stored versions"), "{text}");
    let args = [
        "backtest",
        "q",
        "--threshold",
        "nope",
        "--config",
        config.to_str().unwrap(),
    ];
    let out = semclip(&args, None);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&args, &out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no threshold `nope`"),
        "{}",
        describe(&args, &out)
    );

    // Over HTTP, the same replay.
    let daemon_config = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!(
            "{daemon_config}listen: 127.0.0.1:0\nserver:\n  xslt: {}\n",
            repo_xslt()
        ),
    )
    .unwrap();
    let daemon = Daemon::start(dir);
    let c = Client::new(daemon.port());
    let got = c.get("/api/watches/q/backtest?threshold=drop", &[]);
    assert_eq!(got.status, 200, "{}", got.body);
    let got: serde_json::Value = serde_json::from_str(&got.body).unwrap();
    assert_eq!(got["events"][0]["kind"], "threshold_crossed");
    assert_eq!(got["events"][0]["value"], 92.0);
    assert_eq!(
        c.get("/api/watches/q/backtest?threshold=drop&clip=gazp", &[])
            .status,
        400
    );
    assert_eq!(
        c.get("/api/watches/q/backtest?threshold=nope", &[]).status,
        404
    );
    std::mem::drop(daemon);
}

#[test]
fn windows_are_checked_in_the_watch_file() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    setup(
        dir,
        "",
        &[(
            "w",
            "url: http://127.0.0.1:9/\nschedule: {every: 1h}\n\
             thresholds:\n\
             \x20 - {name: a, xpath: \"//row/cell/@num\", new_high: true}\n\
             \x20 - {name: b, xpath: \"//row\", each: \"cell/@num\", change_pct: 5, within: 7d}\n\
             \x20 - {name: c, xpath: \"//row/cell/@num\", above: 3, within: 7d}\n\
             \x20 - {name: d, xpath: \"//row/cell/@num\", new_low: true, within: soon}\n"
                .to_owned(),
        )],
    );
    let config = dir.join("semclip.yaml");
    let args = ["validate", "--config", config.to_str().unwrap()];
    let out = semclip(&args, None);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&args, &out));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    for needle in [
        "thresholds[0].new_high: needs `within`",
        "thresholds[1].within: an `each` threshold keeps no value history",
        "thresholds[2].within: `within` is read by change_pct, new_high or new_low",
        "thresholds[3].within: invalid duration `soon`",
    ] {
        assert!(text.contains(needle), "{needle}\n{text}");
    }
}

/// `text` percent-encoded for a query value.
fn urlencode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}
