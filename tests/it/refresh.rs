//! Cache refresh against a real SQLite store: markup-only changes store
//! nothing new; data changes store a snapshot and their change events.

use std::time::{Duration, SystemTime};

use semclip::hierarchy::Hierarchy;
use semclip::monitor::compare::refresh;
use semclip::page::dom::Dom;
use semclip::store::{Recorded, Retention, Store};

use crate::markup::{CHANGES, Change, write_html};

const PAGE: &str = "<html lang=en><title>Quotes</title><h1>Shares</h1>\
    <table><tr><th>Ticker<th>Last<tr><td>GAZP<td>251.30<tr><td>SBER<td>300.10</table>\
    <p>Updated every <b>five</b> minutes.</p>";

#[test]
fn markup_only_changes_store_nothing_and_data_changes_store_events() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("semclip.db")).unwrap();
    let retention = Retention::default();
    let none: Vec<String> = Vec::new();
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);

    let dom = Dom::parse(PAGE);
    let first = Hierarchy::from_html(&write_html(&dom, Change::None), None);
    let r = refresh(&mut store, "quotes", &first, t0, &retention, &none).unwrap();
    assert!(
        matches!(r.recorded, Recorded::Stored { events: 0, .. }),
        "{r:?}"
    );

    for (i, change) in CHANGES.iter().enumerate() {
        let h = Hierarchy::from_html(&write_html(&dom, *change), None);
        let at = t0 + Duration::from_secs(60 * (i as u64 + 1));
        let r = refresh(&mut store, "quotes", &h, at, &retention, &none).unwrap();
        assert!(
            matches!(r.recorded, Recorded::Unchanged),
            "{change:?}: {r:?}"
        );
        assert!(r.changes.is_empty());
    }
    assert_eq!(store.snapshots("quotes").unwrap().len(), 1);

    let changed = Hierarchy::from_html(&PAGE.replace("251.30", "253.10"), None);
    let r = refresh(
        &mut store,
        "quotes",
        &changed,
        t0 + Duration::from_secs(3600),
        &retention,
        &none,
    )
    .unwrap();
    assert!(
        matches!(r.recorded, Recorded::Stored { events: 1, .. }),
        "{r:?}"
    );
    assert_eq!(store.snapshots("quotes").unwrap().len(), 2);
    let events = store.changes("quotes", None, 10).unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind, "update");
    assert_eq!(
        events[0].change["context"],
        serde_json::json!(["Quotes", "Shares", "GAZP", "Last"])
    );
    assert_eq!(events[0].change["delta"], "1.8");
    // The stored snapshot reads back as the same data.
    let current = store.current("quotes").unwrap().unwrap();
    let back = semclip::hierarchy::read::read(&current.xml).unwrap();
    assert!(semclip::diff::diff(&back, &changed).is_empty());
    assert_eq!(semclip::hierarchy::write::content_hash(&back), r.hash);
}

/// A watch's `ignore` list: a part that changes on every load (a visitor
/// counter) stores nothing and reports nothing; data outside it still does;
/// a bad expression is an error naming the watch, and stores nothing.
#[test]
fn ignore_list_leaves_parts_out_of_comparison() {
    let page = |counter: u32, last: &str| {
        format!(
            "<title>Quotes</title><h1>Shares</h1>\
             <table><tr><th>Ticker<th>Last<tr><td>GAZP<td>{last}</table>\
             <h2>Visitors</h2><p>{counter} visitors today</p>"
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("semclip.db")).unwrap();
    let retention = Retention::default();
    let ignore = vec!["//section[@label='Visitors']".to_string()];
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let at = |m: u64| t0 + Duration::from_secs(60 * m);

    let first = Hierarchy::from_html(&page(1, "251.30"), None);
    refresh(&mut store, "q", &first, at(0), &retention, &ignore).unwrap();
    let counted = Hierarchy::from_html(&page(2, "251.30"), None);
    let r = refresh(&mut store, "q", &counted, at(1), &retention, &ignore).unwrap();
    assert!(matches!(r.recorded, Recorded::Unchanged), "{r:?}");
    assert!(r.changes.is_empty());
    // Without the ignore list the counter is a change.
    let none: Vec<String> = Vec::new();
    let dir2 = tempfile::tempdir().unwrap();
    let mut plain = Store::open(&dir2.path().join("semclip.db")).unwrap();
    refresh(&mut plain, "q", &first, at(0), &retention, &none).unwrap();
    let r = refresh(&mut plain, "q", &counted, at(1), &retention, &none).unwrap();
    assert_eq!(r.changes.len(), 1, "{:?}", r.changes);
    assert_eq!(r.changes[0].new.as_deref(), Some("2 visitors today"));

    let moved = Hierarchy::from_html(&page(3, "253.10"), None);
    let r = refresh(&mut store, "q", &moved, at(2), &retention, &ignore).unwrap();
    assert!(
        matches!(r.recorded, Recorded::Stored { events: 1, .. }),
        "{r:?}"
    );
    assert_eq!(r.changes[0].context, ["Quotes", "Shares", "GAZP", "Last"]);
    assert_eq!(store.snapshots("q").unwrap().len(), 2);

    let bad = vec!["//section[".to_string()];
    let err = refresh(&mut store, "q", &moved, at(3), &retention, &bad).unwrap_err();
    assert!(err.to_string().contains("`q`"), "{err}");
    assert_eq!(store.snapshots("q").unwrap().len(), 2);
}

/// `semclip check` on a `file://` watch of `page`, with debug logs.
fn check_file(dir: &std::path::Path, above: u32) -> (i32, String, String) {
    let watch = format!(
        "url: {}\nschedule: {{every: 1h}}\nthresholds:\n  - name: gazp-high\n    \
         xpath: \"{}\"\n    above: {above}\n    notify: [log]\n",
        url::Url::from_file_path(dir.join("page.html")).unwrap(),
        crate::daemon::GAZP
    );
    crate::daemon::setup(dir, "", &[("quotes", watch)]);
    let config = dir.join("semclip.yaml");
    let args = [
        "check",
        "--log-level",
        "debug",
        "--config",
        config.to_str().unwrap(),
    ];
    let out = crate::util::semclip(&args, None);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn identical_bytes_are_not_parsed_again_and_new_bytes_or_settings_are() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let skipped = "the bytes of the stored snapshot: not parsed";
    let page = |price: &str, markup: u32| {
        std::fs::write(
            dir.join("page.html"),
            crate::fixture::quotes_page(price, markup),
        )
        .unwrap();
    };
    page("251,30", 0);
    let (code, out, err) = check_file(dir, 300);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("first snapshot stored"), "{out}");
    assert!(!err.contains(skipped), "{err}");
    // The same bytes: not decoded, parsed or diffed.
    let (code, out, err) = check_file(dir, 300);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("quotes: unchanged"), "{out}");
    assert!(err.contains(skipped), "{err}");
    // New bytes: parsed and compared.
    page("252,10", 0);
    let (code, out, err) = check_file(dir, 300);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("quotes: 1 semantic changes"), "{out}");
    assert!(!err.contains(skipped), "{err}");
    // The same bytes under a changed watch: built again, and the new bound
    // is judged on them.
    let (code, out, err) = check_file(dir, 200);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("alert: gazp-high: 252.1 is above 200"),
        "{out}"
    );
    assert!(!err.contains(skipped), "{err}");
}
