//! Cache refresh against a real SQLite store: markup-only changes store
//! nothing new; data changes store a snapshot and their change events.

use std::time::{Duration, SystemTime};

use semclip::dom::Dom;
use semclip::hierarchy::Hierarchy;
use semclip::refresh::refresh;
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
    let back = semclip::document::read(&current.xml).unwrap();
    assert!(semclip::diff::diff(&back, &changed).is_empty());
    assert_eq!(semclip::output::content_hash(&back), r.hash);
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
