//! Extract clips and layout monitoring through `semclip check` on file://
//! pages that the tests rewrite between checks: the extracted records are
//! part of the hierarchy (a threshold counts them), a redesign raises one
//! "layout changed" event naming the clip that lost its target, and data
//! changes or a second look at the redesigned page raise none.

use std::path::Path;

use semclip::store::Store;

use crate::daemon::{file_alerts, setup};
use crate::util::{describe, semclip};

/// The quote page before the redesign: a nav, a heading, a data table.
fn table_page(price: &str, extra_rows: usize) -> String {
    let mut rows = String::new();
    for i in 0..extra_rows {
        rows.push_str(&format!("<tr><td>T{i:02}</td><td>{}</td></tr>", 100 + i));
    }
    format!(
        "<!doctype html><html lang=en><head><title>Quotes</title></head><body>\
         <nav><a href=/>Home</a> <a href=/about>About</a></nav><h1>Market</h1>\
         <table><caption>Shares</caption><tr><th>Ticker</th><th>Last</th></tr>\
         <tr><td>GAZP</td><td>{price}</td></tr><tr><td>SBER</td><td>300,15</td></tr>{rows}\
         </table><footer><p>Prices in roubles.</p></footer></body></html>"
    )
}

/// The same data after a redesign: cards in a grid, a header menu, an aside.
fn card_page(price: &str) -> String {
    let card = |t: &str, p: &str| {
        format!(
            "<div class=card><h3><a href=/q/{t}>{t}</a></h3><div class=px><span>{p}</span></div></div>"
        )
    };
    format!(
        "<!doctype html><html lang=en><head><title>Quotes</title></head><body>\
         <header><div class=logo><img src=logo.png alt=Shop></div><ul class=menu>\
         <li><a href=/>Home</a></li><li><a href=/about>About</a></li><li><a href=/help>Help</a></li></ul></header>\
         <main><section class=grid>{}{}</section></main>\
         <aside><form><input name=q><button>Search</button></form></aside>\
         <footer><div><small>Prices in roubles.</small></div></footer></body></html>",
        card("GAZP", price),
        card("SBER", "300,15")
    )
}

fn write(path: &Path, body: &str) {
    std::fs::write(path, body).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

fn check(config: &Path) -> (i32, String) {
    let args = ["check", "--config", config.to_str().unwrap_or_default()];
    let out = semclip(&args, None);
    let code = out.status.code().unwrap_or(-1);
    assert!(code == 0 || code == 1, "{}", describe(&args, &out));
    (code, String::from_utf8_lossy(&out.stdout).into_owned())
}

fn layout_alerts(dir: &Path) -> Vec<serde_json::Value> {
    file_alerts(dir)
        .into_iter()
        .filter(|a| a["kind"] == "layout_changed")
        .collect()
}

#[test]
fn a_redesign_raises_one_layout_event_naming_the_lost_clip() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let dir = tmp.path();
    let page = dir.join("quotes.html");
    write(&page, &table_page("251,30", 0));
    let url = url::Url::from_file_path(&page).unwrap_or_else(|()| panic!("file url"));
    setup(
        dir,
        "",
        &[(
            "quotes",
            format!(
                "url: {url}\nschedule: {{every: 1h}}\n\
                 clips:\n  shares: {{xpath: \"//table[@label='Shares']\"}}\n\
                 layout: {{notify: [log]}}\n"
            ),
        )],
    );
    let config = dir.join("semclip.yaml");

    let (_, out) = check(&config);
    assert!(out.contains("first snapshot"), "{out}");
    // A data change and more rows: the structure is the same.
    write(&page, &table_page("268,40", 5));
    let (_, out) = check(&config);
    assert!(out.contains("GAZP"), "the data change is reported: {out}");
    assert!(layout_alerts(dir).is_empty(), "{:#?}", file_alerts(dir));

    // The redesign: one layout event, naming the clip and the drift.
    write(&page, &card_page("268,40"));
    let (code, out) = check(&config);
    assert_eq!(code, 1, "an alert is raised: {out}");
    let alerts = layout_alerts(dir);
    assert_eq!(alerts.len(), 1, "{alerts:#?}");
    let summary = alerts[0]["summary"].as_str().unwrap_or_default();
    assert!(summary.contains("layout changed"), "{summary}");
    assert!(summary.contains("shares"), "names the lost clip: {summary}");
    assert!(summary.contains("structure drifted"), "{summary}");

    // The same redesigned page again, then a data change on it: nothing new.
    let _ = check(&config);
    write(&page, &card_page("270,00"));
    let _ = check(&config);
    assert_eq!(layout_alerts(dir).len(), 1, "{:#?}", file_alerts(dir));

    // The event is in the change history (feeds, status page, API).
    let store = Store::open(&dir.join("state/semclip.db")).unwrap_or_else(|e| panic!("{e}"));
    let events = store
        .changes("quotes", None, 100)
        .unwrap_or_else(|e| panic!("{e}"));
    let layout: Vec<_> = events
        .iter()
        .filter(|e| e.change["kind"] == "layout")
        .collect();
    assert_eq!(layout.len(), 1, "{events:#?}");
    assert_eq!(layout[0].change["lost"], serde_json::json!(["shares"]));
    let drift = layout[0].change["drift"].as_f64().unwrap_or_default();
    assert!(drift > 0.5, "drift {drift}");
}

#[test]
fn an_extract_clip_is_part_of_the_hierarchy_and_thresholds_read_it() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let dir = tmp.path();
    let page = dir.join("quotes.html");
    write(&page, &table_page("251,30", 3));
    let url = url::Url::from_file_path(&page).unwrap_or_else(|()| panic!("file url"));
    setup(
        dir,
        "",
        &[(
            "quotes",
            format!(
                "url: {url}\nschedule: {{every: 1h}}\nmonitor: data\n\
                 clips:\n  rows: {{extract: region, keywords: [GAZP, SBER]}}\n\
                 thresholds:\n  - name: rows\n    xpath: \"count(/page/table[@clip='rows']/row)\"\n    \
                 above: 5\n    notify: [log]\n"
            ),
        )],
    );
    let config = dir.join("semclip.yaml");
    let (code, out) = check(&config);
    assert_eq!(code, 0, "5 rows, not above 5: {out}");
    assert!(out.contains("threshold rows: normal (5)"), "{out}");

    // Only the data is compared: the nav and footer may change freely.
    write(
        &page,
        &table_page("251,30", 3)
            .replace("About</a>", "About us</a> <a href=/jobs>Jobs</a>")
            .replace("Prices in roubles.", "Prices in roubles. Updated 12:05."),
    );
    let (code, out) = check(&config);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("unchanged"),
        "nav and footer are not data: {out}"
    );

    // One more record: the region follows it and the threshold fires.
    write(&page, &table_page("251,30", 4));
    let (code, out) = check(&config);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("threshold rows: alarm (6)"), "{out}");
    assert_eq!(
        file_alerts(dir)
            .iter()
            .filter(|a| a["kind"] == "threshold_crossed")
            .count(),
        1
    );
}
