//! The snapshot store against real SQLite files in temporary directories: it
//! takes hierarchies, hashes and change events through `semclip::store` and
//! checks what comes back, what retention leaves, how foreign, older and newer
//! files are met, that two handles share a file, and that a writer killed with
//! SIGKILL at random moments leaves a whole, consistent database.

use std::collections::BTreeMap;
use std::hash::{BuildHasher, DefaultHasher, Hash, Hasher, RandomState};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::Connection;
use semclip::store::{
    ChangeRecord, Database, MAX_XML_BYTES, Pruned, Recorded, Retention, SCHEMA_VERSION, Store,
    StoreError,
};
use serde_json::{Value, json};
use tempfile::TempDir;

const DAY: Duration = Duration::from_secs(86_400);

/// Text that takes more than one byte per character in UTF-8.
const MULTIBYTE: &str = "Prix : 12,50 € — naïve café, 日本語のテキスト, Ελληνικά, 🦀🦀";

/// The database a test runs on: a new SQLite file, or a new database in the
/// test cluster ([`crate::pg`]).
struct Engine {
    database: Database,
    _dir: Option<TempDir>,
}

impl Engine {
    fn sqlite() -> Engine {
        let (dir, path) = temp_db();
        Engine {
            database: Database::Sqlite(path),
            _dir: Some(dir),
        }
    }

    /// `None` (after saying why) when PostgreSQL is not installed.
    fn postgres(test: &str) -> Option<Engine> {
        Some(Engine {
            database: crate::pg::database(test)?,
            _dir: None,
        })
    }

    /// A new handle on the test's database.
    fn open(&self) -> Store {
        Store::open_database(&self.database).unwrap_or_else(|e| panic!("{e:#?}"))
    }
}

/// The same test on both engines: `on_both! { fn name(engine: &Engine)
/// { ... } }` becomes `name::sqlite` and `name::postgres`, one body.
macro_rules! on_both {
    ($(fn $name:ident($engine:ident: &Engine) $body:block)*) => {$(
        mod $name {
            use super::*;

            fn body($engine: &Engine) $body

            #[test]
            fn sqlite() {
                body(&Engine::sqlite());
            }

            #[test]
            fn postgres() {
                if let Some(engine) = Engine::postgres(module_path!()) {
                    body(&engine);
                }
            }
        }
    )*};
}

fn temp_db() -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    (dir, path)
}

/// A fixed, whole-millisecond instant, so tests never depend on the clock.
fn t0() -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(1_750_000_000_000)
}

/// The content hash the tests record. `DefaultHasher::new()` has fixed keys,
/// so the crash writer (another process of this binary) hashes the same way.
fn hash_of(xml: &str) -> String {
    let mut hasher = DefaultHasher::new();
    xml.hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}

fn page(n: u64) -> String {
    format!("<page v=\"{n}\"><p>{MULTIBYTE}</p></page>")
}

fn event(kind: &str, n: u64) -> Value {
    json!({ "kind": kind, "n": n, "path": "/page/p[1]" })
}

fn keep(keep_versions: u32, keep_days: u32) -> Retention {
    Retention {
        keep_versions,
        keep_days,
    }
}

/// Records `page(n)` as a change with `events` events, and checks it stored.
fn record_page(store: &mut Store, watch: &str, n: u64, at: SystemTime, events: u64) -> i64 {
    record_page_with(store, watch, n, at, events, &Retention::default())
}

fn record_page_with(
    store: &mut Store,
    watch: &str,
    n: u64,
    at: SystemTime,
    events: u64,
    retention: &Retention,
) -> i64 {
    let xml = page(n);
    let changes: Vec<Value> = (0..events).map(|i| event("text", i)).collect();
    match store
        .record(watch, &hash_of(&xml), &xml, at, &changes, retention)
        .unwrap()
    {
        Recorded::Stored {
            snapshot_id,
            events: stored,
        } => {
            assert_eq!(stored, changes.len());
            snapshot_id
        }
        Recorded::Unchanged => panic!("page {n} of {watch} was taken as unchanged"),
    }
}

/// Every change event of a watch, newest first, fetched in pages of `page`.
fn all_changes(store: &Store, watch: &str, page: usize) -> Vec<ChangeRecord> {
    changes_before(store, watch, None, page)
}

/// The change events of a watch older than `before`, newest first, fetched in
/// pages of `page`.
fn changes_before(
    store: &Store,
    watch: &str,
    mut before: Option<i64>,
    page: usize,
) -> Vec<ChangeRecord> {
    let mut all = Vec::new();
    loop {
        let batch = store.changes(watch, before, page).unwrap();
        assert!(batch.len() <= page);
        let Some(last) = batch.last() else { break };
        before = Some(last.id);
        all.extend(batch);
    }
    all
}

fn raw(path: &Path) -> Connection {
    Connection::open(path).unwrap()
}

fn user_version(path: &Path) -> i64 {
    raw(path)
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap()
}

fn zlib(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

// ---------------------------------------------------------------- open

#[test]
fn open_creates_a_wal_store_and_reopening_keeps_its_data() {
    let (_dir, path) = temp_db();
    let at = t0();
    let id = {
        let mut store = Store::open(&path).unwrap();
        assert_eq!(store.path(), path);
        record_page(&mut store, "w", 1, at, 2)
    };
    assert!(path.is_file());

    let mode: String = raw(&path)
        .pragma_query_value(None, "journal_mode", |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    assert_eq!(user_version(&path), i64::from(SCHEMA_VERSION));

    let store = Store::open(&path).unwrap();
    let current = store.current("w").unwrap().unwrap();
    assert_eq!(current.id, id);
    assert_eq!(current.watch, "w");
    assert_eq!(current.xml, page(1));
    assert_eq!(current.hash, hash_of(&page(1)));
    assert_eq!(current.taken_at, at);
    assert_eq!(store.changes("w", None, 10).unwrap().len(), 2);
}

#[test]
fn an_empty_file_becomes_a_store() {
    let (_dir, path) = temp_db();
    std::fs::File::create(&path).unwrap();
    let mut store = Store::open(&path).unwrap();
    record_page(&mut store, "w", 1, t0(), 0);
    assert_eq!(store.current_hash("w").unwrap(), Some(hash_of(&page(1))));
}

#[test]
fn a_missing_directory_is_an_open_error() {
    let (dir, _) = temp_db();
    let path = dir.path().join("no-such-dir").join("store.db");
    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::Open { .. }), "{err:?}");
    assert!(err.to_string().contains("no-such-dir"), "{err}");
}

#[test]
fn an_in_memory_store_works() {
    let mut store = Store::open_in_memory().unwrap();
    assert_eq!(store.current("w").unwrap(), None);
    record_page(&mut store, "w", 1, t0(), 1);
    assert_eq!(store.current("w").unwrap().unwrap().xml, page(1));
}

#[test]
fn a_store_can_move_to_another_thread() {
    fn assert_send<T: Send>() {}
    assert_send::<Store>();
    assert_send::<StoreError>();
}

// ---------------------------------------------------------------- record

on_both! {
    fn the_same_hash_is_unchanged_and_only_updates_last_checked(engine: &Engine) {
        let mut store = engine.open();
        let first = record_page(&mut store, "w", 1, t0(), 1);

        let later = t0() + Duration::from_secs(600);
        let xml = page(1);
        let again = store
            .record(
                "w",
                &hash_of(&xml),
                &xml,
                later,
                &[event("ignored", 0)],
                &Retention::default(),
            )
            .unwrap();
        assert_eq!(again, Recorded::Unchanged);

        assert_eq!(store.snapshots("w").unwrap().len(), 1);
        assert_eq!(store.changes("w", None, 10).unwrap().len(), 1);
        let state = &store.watches().unwrap()[0];
        assert_eq!(state.snapshot_id, first);
        assert_eq!(state.created_at, t0());
        assert_eq!(state.last_checked, later);
        assert_eq!(state.last_changed, t0());
        assert_eq!(state.snapshots, 1);
}
}

on_both! {
    fn a_new_hash_stores_a_snapshot_with_its_events(engine: &Engine) {
        let mut store = engine.open();
        let first = record_page(&mut store, "w", 1, t0(), 0);

        let at = t0() + Duration::from_secs(60);
        let xml = page(2);
        let changes = vec![
            json!({ "kind": "text", "path": "/page/p[1]", "old": "a", "new": MULTIBYTE }),
            json!({ "kind": "added", "path": "/page/p[2]", "extra": [1, 2.5, null, { "deep": true }] }),
        ];
        let recorded = store
            .record(
                "w",
                &hash_of(&xml),
                &xml,
                at,
                &changes,
                &Retention::default(),
            )
            .unwrap();
        let Recorded::Stored {
            snapshot_id,
            events,
        } = recorded
        else {
            panic!("expected a stored snapshot, got {recorded:?}");
        };
        assert!(snapshot_id > first);
        assert_eq!(events, 2);

        let current = store.current("w").unwrap().unwrap();
        assert_eq!(
            (current.id, current.xml.as_str()),
            (snapshot_id, xml.as_str())
        );
        assert_eq!(store.current_hash("w").unwrap(), Some(hash_of(&xml)));

        let stored = store.changes("w", None, 10).unwrap();
        assert_eq!(stored.len(), 2);
        // Newest first: the later event of the same check comes first.
        assert_eq!(stored[0].kind, "added");
        assert_eq!(stored[0].change, changes[1]);
        assert_eq!(stored[1].kind, "text");
        assert_eq!(stored[1].change, changes[0]);
        for record in &stored {
            assert_eq!(record.watch, "w");
            assert_eq!(record.snapshot_id, Some(snapshot_id));
            assert_eq!(record.at, at);
        }

        let listed = store.snapshots("w").unwrap();
        assert_eq!(
            listed,
            vec![
                (snapshot_id, hash_of(&xml), at),
                (first, hash_of(&page(1)), t0())
            ]
        );
}
}

on_both! {
    fn going_back_to_an_earlier_content_is_a_change(engine: &Engine) {
        let mut store = engine.open();
        record_page(&mut store, "w", 1, t0(), 0);
        record_page(&mut store, "w", 2, t0() + DAY, 0);
        record_page(&mut store, "w", 1, t0() + 2 * DAY, 0);
        assert_eq!(store.snapshots("w").unwrap().len(), 3);
        assert_eq!(store.current("w").unwrap().unwrap().xml, page(1));
}
}

on_both! {
    fn hierarchies_round_trip_exactly(engine: &Engine) {
        let mut store = engine.open();

        // Pseudo-random text that compresses badly and spans many pages.
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let alphabet: Vec<char> = "abcdefghijklmnopqrstuvwxyz0123456789<>&\"' \n€é日本🦀"
            .chars()
            .collect();
        let noisy: String = (0..3_000_000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                alphabet[usize::try_from(state % alphabet.len() as u64).unwrap()]
            })
            .collect();

        let cases = [
            String::new(),
            MULTIBYTE.to_owned(),
            format!("<?xml version=\"1.0\"?>\n<page>\r\n\t{MULTIBYTE}\u{0}\u{feff}</page>"),
            noisy,
        ];
        for (i, xml) in cases.iter().enumerate() {
            let at = t0() + Duration::from_secs(i as u64);
            store
                .record("w", &format!("h{i}"), xml, at, &[], &Retention::default())
                .unwrap();
            let back = store.current("w").unwrap().unwrap();
            assert_eq!(back.xml.len(), xml.len(), "case {i}");
            assert!(back.xml == *xml, "case {i} did not round-trip");
        }
        drop(store);
        let store = engine.open();
        assert!(store.current("w").unwrap().unwrap().xml == cases[3]);
}
}

on_both! {
    fn old_snapshots_can_be_read_by_id(engine: &Engine) {
        let mut store = engine.open();
        let ids: Vec<i64> = (1..=3)
            .map(|n| record_page(&mut store, "w", n, t0() + n as u32 * DAY, 0))
            .collect();
        let second = store.snapshot(ids[1]).unwrap().unwrap();
        assert_eq!(second.xml, page(2));
        assert_eq!(second.taken_at, t0() + 2 * DAY);
        assert_eq!(second.watch, "w");
        assert_eq!(store.snapshot(ids[2] + 100).unwrap(), None);
}
}

on_both! {
    fn invalid_change_events_are_refused_before_anything_is_written(engine: &Engine) {
        let mut store = engine.open();
        record_page(&mut store, "w", 1, t0(), 0);
        let xml = page(2);
        for bad in [
            json!("text"),
            json!(["kind", "text"]),
            json!({ "path": "/p" }),
            json!({ "kind": 3 }),
            json!({ "kind": null }),
        ] {
            let changes = [event("text", 0), bad.clone()];
            let err = store
                .record(
                    "w",
                    &hash_of(&xml),
                    &xml,
                    t0() + DAY,
                    &changes,
                    &Retention::default(),
                )
                .unwrap_err();
            assert!(
                matches!(&err, StoreError::InvalidChange { watch, index: 1 } if watch == "w"),
                "{bad}: {err:?}"
            );
        }
        assert_eq!(store.current("w").unwrap().unwrap().xml, page(1));
        assert!(store.changes("w", None, 10).unwrap().is_empty());
        assert_eq!(store.watches().unwrap()[0].last_checked, t0());
}
}

on_both! {
    fn events_read_back_as_types_and_one_that_does_not_is_an_error_with_its_id(engine: &Engine) {
        use semclip::diff::ChangeKind;
        use semclip::store::Event;
        let mut store = engine.open();
        record_page(&mut store, "w", 1, t0(), 0);
        let update = json!({ "kind": "update", "context": ["Shares", "GAZP"], "old": "1", "new": "2",
                             "old_num": "1", "new_num": "2", "delta": "1" });
        // A layout event as semclip wrote it before issue 17 (no
        // lost_thresholds, template, dom_drift, dom_against).
        let old_layout = json!({ "kind": "layout", "drift": 0.7, "max_drift": 0.5,
            "against": "previous page", "lost": ["shares"], "moved": [], "summary": "clips lost" });
        let xml = page(2);
        store
            .record(
                "w",
                &hash_of(&xml),
                &xml,
                t0() + DAY,
                &[update.clone(), old_layout],
                &Retention::default(),
            )
            .unwrap();
        let events = store.events("w", None, 10).unwrap();
        assert_eq!(events.len(), 2);
        let Event::Layout(layout) = &events[0].event else {
            panic!("{events:?}")
        };
        assert_eq!(layout.lost, ["shares"]);
        assert!(layout.lost_thresholds.is_empty() && layout.template.is_none());
        assert_eq!(events[0].event.line(), "layout  layout changed: clips lost");
        let Event::Change(change) = &events[1].event else {
            panic!("{events:?}")
        };
        assert_eq!(change.kind, ChangeKind::Update);
        assert_eq!(change.line(), "update  Shares / GAZP: 1 -> 2 (+1)");
        // The typed event writes back the JSON stored.
        assert_eq!(serde_json::to_value(&events[1].event).unwrap(), update);

        // An event of no known shape: the raw read still gives it, the typed
        // read names it.
        let xml = page(3);
        store
            .record(
                "w",
                &hash_of(&xml),
                &xml,
                t0() + 2 * DAY,
                &[event("text", 0)],
                &Retention::default(),
            )
            .unwrap();
        let raw = store.changes("w", None, 10).unwrap();
        assert_eq!(raw[0].kind, "text");
        let err = store.events("w", None, 10).unwrap_err();
        assert!(
            matches!(&err, StoreError::CorruptChange { watch, change_id, .. }
                if watch == "w" && *change_id == raw[0].id),
            "{err:?}"
        );
        // Older pages still read.
        assert_eq!(store.events("w", Some(raw[0].id), 10).unwrap().len(), 2);
}
}

#[test]
fn threshold_states_keep_their_stored_text_and_an_unknown_one_is_corrupt() {
    use semclip::store::{CheckState, Level, ThresholdRecord};
    let (_dir, path) = temp_db();
    let mut store = Store::open(&path).unwrap();
    let record = |name: &str, state| ThresholdRecord {
        name: name.into(),
        state,
        value: Some(1.0),
        node: None,
        since: t0(),
    };
    let state = CheckState {
        thresholds: vec![
            record("a", Level::Alarm),
            record("l", Level::Lost),
            record("n", Level::Normal),
        ],
        ..CheckState::default()
    };
    store.record_check("w", t0(), None, &state).unwrap();
    assert_eq!(store.thresholds("w").unwrap(), state.thresholds);
    let conn = Connection::open(&path).unwrap();
    let texts: Vec<String> = conn
        .prepare("SELECT state FROM threshold_state WHERE watch = 'w' ORDER BY name")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(texts, ["alarm", "lost", "normal"]);
    assert_eq!("alarm".parse::<Level>(), Ok(Level::Alarm));
    assert_eq!(Level::Lost.to_string(), "lost");

    conn.execute(
        "UPDATE threshold_state SET state = 'panic' WHERE name = 'a'",
        [],
    )
    .unwrap();
    let err = store.thresholds("w").unwrap_err();
    assert!(
        matches!(&err, StoreError::CorruptWatch { watch, .. } if watch == "w"),
        "{err:?}"
    );
    assert!(
        semclip::error_chain(&err).contains("unknown threshold state `panic`"),
        "{err:#}"
    );
}

#[test]
fn the_latest_points_of_a_series_come_oldest_first_and_at_most_as_many_as_asked() {
    use semclip::store::{CheckState, NodeValue, Point};
    let (_dir, path) = temp_db();
    let mut store = Store::open(&path).unwrap();
    let node = "/page/table[@label='Shares']/row[@key='GAZP']/cell[@col='Last']";
    let check = |store: &mut Store, secs: u64, value: Option<f64>| {
        let state = CheckState {
            series: Some(
                value
                    .map(|value| NodeValue {
                        node: node.to_owned(),
                        source: "clip:gazp".to_owned(),
                        value,
                    })
                    .into_iter()
                    .collect(),
            ),
            ..CheckState::default()
        };
        let at = t0() + Duration::from_secs(secs);
        store.record_check("w", at, None, &state).unwrap();
    };
    // Only changes are points: 2.0 twice is one point; gone, then back.
    for (secs, value) in [
        (0, Some(1.0)),
        (60, Some(2.0)),
        (120, Some(2.0)),
        (180, None),
        (240, Some(3.0)),
    ] {
        check(&mut store, secs, value);
    }
    let point = |secs: u64, value: Option<f64>| Point {
        at: t0() + Duration::from_secs(secs),
        value,
    };
    let all = store.series_points("w", node, None, None).unwrap();
    assert_eq!(
        all,
        vec![
            point(0, Some(1.0)),
            point(60, Some(2.0)),
            point(180, None),
            point(240, Some(3.0))
        ]
    );
    assert_eq!(store.series_latest("w", node, 100).unwrap(), all);
    assert_eq!(
        store.series_latest("w", node, 2).unwrap(),
        all[2..].to_vec()
    );
    assert_eq!(
        store.series_latest("w", node, 0).unwrap(),
        Vec::<Point>::new()
    );
    assert!(
        store
            .series_latest("w", "/page/nothing", 10)
            .unwrap()
            .is_empty()
    );
    assert!(store.series_latest("other", node, 10).unwrap().is_empty());
}

on_both! {
    fn a_check_whose_last_write_fails_is_refused_and_leaves_nothing(engine: &Engine) {
        use semclip::store::{CheckState, Level, ThresholdRecord, WatchStatus};
        let mut store = engine.open();
        // The database refuses threshold values, written after the
        // status and the threshold state (on PostgreSQL, all held back
        // and sent with the commit).
        match &engine.database {
            Database::Sqlite(path) => Connection::open(path)
                .unwrap()
                .execute_batch(
                    "CREATE TRIGGER refused BEFORE INSERT ON threshold_value
                     BEGIN SELECT RAISE(ABORT, 'values refused'); END",
                )
                .unwrap(),
            Database::Postgres(_) => {
                crate::pg::psql(
                    &engine.database,
                    "ALTER TABLE threshold_value ADD CONSTRAINT values_refused CHECK (value < 0)",
                );
            }
        }
        let state = CheckState {
            status: WatchStatus {
                watch: "w".into(),
                next_run: Some(t0() + Duration::from_secs(60)),
                ..WatchStatus::default()
            },
            thresholds: vec![ThresholdRecord {
                name: "price".into(),
                state: Level::Alarm,
                value: Some(1.0),
                node: None,
                since: t0(),
            }],
            values: vec![("price".into(), 1.0)],
            ..CheckState::default()
        };
        let err = store.record_check("w", t0(), None, &state).unwrap_err();
        let chain = semclip::error_chain(&err);
        assert!(chain.contains("values_refused") || chain.contains("values refused"), "{chain}");
        // Nothing of the check was kept, and the store goes on.
        assert_eq!(store.status("w").unwrap(), None);
        assert_eq!(store.thresholds("w").unwrap(), []);
        let fine = CheckState { values: Vec::new(), ..state };
        store.record_check("w", t0(), None, &fine).unwrap();
        assert_eq!(store.thresholds("w").unwrap(), fine.thresholds);
    }
}

on_both! {
    fn a_hierarchy_over_the_limit_is_refused(engine: &Engine) {
        let mut store = engine.open();
        let xml = "x".repeat(MAX_XML_BYTES + 1);
        let err = store
            .record("w", "h", &xml, t0(), &[], &Retention::default())
            .unwrap_err();
        assert!(
            matches!(err, StoreError::TooLarge { size, limit, .. } if size == MAX_XML_BYTES + 1 && limit == MAX_XML_BYTES),
            "{err:?}"
        );
        assert_eq!(store.current("w").unwrap(), None);
}
}

on_both! {
    fn times_are_kept_to_the_millisecond_on_both_sides_of_1970(engine: &Engine) {
        let mut store = engine.open();
        let precise = UNIX_EPOCH + Duration::new(1_750_000_000, 123_456_789);
        record_page(&mut store, "after", 1, precise, 0);
        assert_eq!(
            store.current("after").unwrap().unwrap().taken_at,
            UNIX_EPOCH + Duration::from_millis(1_750_000_000_123)
        );

        let before = UNIX_EPOCH - Duration::from_millis(86_400_123);
        record_page(&mut store, "before", 1, before, 1);
        assert_eq!(store.current("before").unwrap().unwrap().taken_at, before);
        assert_eq!(store.changes("before", None, 1).unwrap()[0].at, before);

        if let Some(far) = UNIX_EPOCH.checked_add(Duration::from_secs(1 << 62)) {
            let err = store
                .record("far", "h", "<x/>", far, &[], &Retention::default())
                .unwrap_err();
            assert!(
                matches!(err, StoreError::TimeOutOfRange { time } if time == far),
                "{err:?}"
            );
        }
}
}

// ---------------------------------------------------------------- sessions

on_both! {
    fn a_session_jar_is_kept_with_its_revision_and_last_login(engine: &Engine) {
        use semclip::page::session::Jar;
        use semclip::store::StoredJar;
        let mut store = engine.open();
        assert_eq!(store.session_jar("shop").unwrap(), None);
        assert_eq!(store.session_revision("shop").unwrap(), None);
        // A jar fed by a response, as a check writes it.
        let jar = Jar::new();
        let mut headers = reqwest::header::HeaderMap::new();
        headers.append(
            reqwest::header::SET_COOKIE,
            reqwest::header::HeaderValue::from_static("sid=abc; Path=/; HttpOnly"),
        );
        let site = url::Url::parse("http://shop.example/login").unwrap();
        jar.store(&headers, &site);
        let json = jar.to_json().unwrap();
        let second = Duration::from_secs(1);
        assert_eq!(store.put_session_jar("shop", "[]", t0(), false).unwrap(), 1);
        assert_eq!(store.put_session_jar("shop", &json, t0() + second, true).unwrap(), 2);
        assert_eq!(store.put_session_jar("other", "[]", t0(), false).unwrap(), 1);
        assert_eq!(store.put_session_jar("shop", &json, t0() + 2 * second, false).unwrap(), 3);
        drop(store);

        // Another handle (a restarted daemon) reads it back whole.
        let mut store = engine.open();
        let stored = store.session_jar("shop").unwrap().unwrap();
        assert_eq!(
            stored,
            StoredJar {
                jar: json,
                revision: 3,
                updated_at: t0() + 2 * second,
                logged_in_at: Some(t0() + second),
            },
            "a write that is not a login keeps the last login time"
        );
        assert_eq!(store.session_revision("shop").unwrap(), Some(3));
        let back = Jar::from_json(&stored.jar).unwrap();
        let page = url::Url::parse("http://shop.example/account").unwrap();
        assert_eq!(back.header(&page).as_deref(), Some("sid=abc"));

        assert!(store.remove_session_jar("shop").unwrap());
        assert!(!store.remove_session_jar("shop").unwrap());
        assert_eq!(store.session_jar("shop").unwrap(), None);
        assert_eq!(store.session_revision("other").unwrap(), Some(1), "other sessions stay");
}
}

// ---------------------------------------------------------------- retention

on_both! {
    fn keep_versions_leaves_the_newest_snapshots(engine: &Engine) {
        let mut store = engine.open();
        let retention = keep(3, 90);
        let ids: Vec<i64> = (1..=10)
            .map(|n| {
                record_page_with(
                    &mut store,
                    "w",
                    n,
                    t0() + n as u32 * 60 * Duration::from_secs(1),
                    1,
                    &retention,
                )
            })
            .collect();
        let kept: Vec<i64> = store.snapshots("w").unwrap().iter().map(|s| s.0).collect();
        assert_eq!(kept, vec![ids[9], ids[8], ids[7]]);
        assert_eq!(store.current("w").unwrap().unwrap().xml, page(10));
        assert_eq!(store.watches().unwrap()[0].snapshots, 3);
}
}

on_both! {
    fn keep_days_prunes_snapshots_by_their_time(engine: &Engine) {
        let mut store = engine.open();
        let now = t0();
        let retention = keep(100, 7);
        // Taken 30, 20, 8, 6 and 1 days before `now`.
        let ids: Vec<i64> = [30, 20, 8, 6, 1]
            .iter()
            .enumerate()
            .map(|(n, days)| {
                record_page_with(&mut store, "w", n as u64, now - *days * DAY, 0, &retention)
            })
            .collect();
        // Each record prunes against its own time: at "1 day ago", the cutoff is
        // 8 days ago, so the snapshots of 30 and 20 days ago went, 8 days stays.
        let kept: Vec<i64> = store.snapshots("w").unwrap().iter().map(|s| s.0).collect();
        assert_eq!(kept, vec![ids[4], ids[3], ids[2]]);

        let pruned = store.prune(&retention, now).unwrap();
        assert_eq!(
            pruned,
            Pruned {
                snapshots: 1,
                changes: 0
            }
        );
        let kept: Vec<i64> = store.snapshots("w").unwrap().iter().map(|s| s.0).collect();
        assert_eq!(kept, vec![ids[4], ids[3]]);
}
}

on_both! {
    fn the_current_snapshot_and_its_events_are_never_pruned(engine: &Engine) {
        let mut store = engine.open();
        let old = t0() - 365 * DAY;
        let first = record_page_with(&mut store, "w", 1, old - DAY, 1, &keep(1, 1));
        let current = record_page_with(&mut store, "w", 2, old, 2, &keep(1, 1));

        let pruned = store.prune(&keep(1, 1), t0()).unwrap();
        // The first snapshot went at the second record (keep 1 version); its
        // event is older than a day now.
        assert_eq!(
            pruned,
            Pruned {
                snapshots: 0,
                changes: 1
            }
        );
        assert_eq!(store.snapshot(first).unwrap(), None);
        let snapshot = store.current("w").unwrap().unwrap();
        assert_eq!((snapshot.id, snapshot.xml), (current, page(2)));
        let events = store.changes("w", None, 10).unwrap();
        assert_eq!(events.len(), 2);
        assert!(events.iter().all(|e| e.snapshot_id == Some(current)));

        // An unchanged check a year later prunes nothing either.
        let xml = page(2);
        assert_eq!(
            store
                .record("w", &hash_of(&xml), &xml, t0(), &[], &keep(1, 1))
                .unwrap(),
            Recorded::Unchanged
        );
        assert_eq!(store.snapshots("w").unwrap().len(), 1);
}
}

on_both! {
    fn events_outlive_their_snapshots_until_keep_days(engine: &Engine) {
        let mut store = engine.open();
        let retention = keep(2, 10);
        let ids: Vec<i64> = (0..5)
            .map(|n| record_page_with(&mut store, "w", n, t0() + n as u32 * DAY, 1, &retention))
            .collect();
        assert_eq!(store.snapshots("w").unwrap().len(), 2);
        let events = store.changes("w", None, 100).unwrap();
        assert_eq!(events.len(), 5, "events are kept when their snapshot goes");
        let links: Vec<Option<i64>> = events.iter().map(|e| e.snapshot_id).collect();
        assert_eq!(links, vec![Some(ids[4]), Some(ids[3]), None, None, None]);

        // Twelve days after the first check, the events of days 0 and 1 are
        // older than 10 days.
        let pruned = store.prune(&retention, t0() + 12 * DAY).unwrap();
        assert_eq!(pruned.changes, 2);
        assert_eq!(store.changes("w", None, 100).unwrap().len(), 3);
}
}

on_both! {
    fn retention_applies_to_one_watch_on_record_and_to_all_on_prune(engine: &Engine) {
        let mut store = engine.open();
        for n in 0..5 {
            record_page(&mut store, "a", n, t0() + n as u32 * DAY, 0);
            record_page(&mut store, "b", n, t0() + n as u32 * DAY, 0);
        }
        record_page_with(&mut store, "a", 9, t0() + 9 * DAY, 0, &keep(2, 90));
        assert_eq!(store.snapshots("a").unwrap().len(), 2);
        assert_eq!(store.snapshots("b").unwrap().len(), 5);

        let pruned = store.prune(&keep(2, 90), t0() + 9 * DAY).unwrap();
        assert_eq!(pruned.snapshots, 3);
        assert_eq!(store.snapshots("b").unwrap().len(), 2);
}
}

on_both! {
    fn zero_retention_bounds_are_refused(engine: &Engine) {
        assert_eq!(Retention::default(), keep(100, 90));
        assert!(Retention::new(1, 1).is_ok());
        let mut store = engine.open();
        for bad in [keep(0, 90), keep(100, 0), keep(0, 0)] {
            let err = Retention::new(bad.keep_versions, bad.keep_days).unwrap_err();
            assert!(
                matches!(err, StoreError::InvalidRetention { .. }),
                "{err:?}"
            );
            assert!(
                err.to_string()
                    .starts_with("retention must keep at least 1"),
                "{err}"
            );

            let err = store.record("w", "h", "<x/>", t0(), &[], &bad).unwrap_err();
            assert!(
                matches!(err, StoreError::InvalidRetention { .. }),
                "{err:?}"
            );
            let err = store.prune(&bad, t0()).unwrap_err();
            assert!(
                matches!(err, StoreError::InvalidRetention { .. }),
                "{err:?}"
            );
        }
        assert!(store.watches().unwrap().is_empty());
}
}

// ---------------------------------------------------------------- listing

on_both! {
    fn changes_page_newest_first_and_stay_stable(engine: &Engine) {
        let mut store = engine.open();
        record_page(&mut store, "other", 1, t0(), 4);
        for n in 1..=6 {
            record_page(&mut store, "w", n, t0() + n as u32 * DAY, n);
        }
        // 1 + 2 + ... + 6 = 21 events.
        let everything = store.changes("w", None, 1000).unwrap();
        assert_eq!(everything.len(), 21);
        assert!(everything.windows(2).all(|w| w[0].id > w[1].id));
        assert!(everything.iter().all(|e| e.watch == "w"));

        for size in [1, 4, 7, 21, 50] {
            assert_eq!(
                all_changes(&store, "w", size),
                everything,
                "page size {size}"
            );
        }

        // New events recorded between pages do not shift the pages after.
        let first_page = store.changes("w", None, 5).unwrap();
        record_page(&mut store, "w", 7, t0() + 7 * DAY, 3);
        let rest = changes_before(&store, "w", Some(first_page.last().unwrap().id), 5);
        let mut joined = first_page;
        joined.extend(rest);
        assert_eq!(joined, everything);

        assert!(store.changes("w", None, 0).unwrap().is_empty());
        assert!(store.changes("nobody", None, 10).unwrap().is_empty());
        assert!(store.changes("w", Some(i64::MIN), 10).unwrap().is_empty());
}
}

on_both! {
    fn watches_and_snapshots_describe_each_watch(engine: &Engine) {
        let mut store = engine.open();
        assert!(store.watches().unwrap().is_empty());
        assert!(store.snapshots("b").unwrap().is_empty());
        assert_eq!(store.current_hash("b").unwrap(), None);
        assert_eq!(store.current("b").unwrap(), None);

        record_page(&mut store, "b", 1, t0(), 0);
        let b2 = record_page(&mut store, "b", 2, t0() + DAY, 0);
        let a1 = record_page(&mut store, "a", 1, t0() + 2 * DAY, 0);
        let xml = page(2);
        store
            .record(
                "b",
                &hash_of(&xml),
                &xml,
                t0() + 3 * DAY,
                &[],
                &Retention::default(),
            )
            .unwrap();

        let watches = store.watches().unwrap();
        assert_eq!(watches.len(), 2);
        let (a, b) = (&watches[0], &watches[1]);
        assert_eq!((a.id.as_str(), a.snapshot_id, a.snapshots), ("a", a1, 1));
        assert_eq!(
            (a.last_checked, a.last_changed),
            (t0() + 2 * DAY, t0() + 2 * DAY)
        );
        assert_eq!((b.id.as_str(), b.snapshot_id, b.snapshots), ("b", b2, 2));
        assert_eq!(b.hash, hash_of(&page(2)));
        assert_eq!(
            (b.last_checked, b.last_changed),
            (t0() + 3 * DAY, t0() + DAY)
        );
}
}

#[test]
fn remove_watch_removes_that_watch_only() {
    let (_dir, path) = temp_db();
    let mut store = Store::open(&path).unwrap();
    for n in 1..=3 {
        record_page(&mut store, "gone", n, t0() + n as u32 * DAY, 2);
        record_page(&mut store, "kept", n, t0() + n as u32 * DAY, 2);
    }
    let gone_ids: Vec<i64> = store
        .snapshots("gone")
        .unwrap()
        .iter()
        .map(|s| s.0)
        .collect();

    assert!(store.remove_watch("gone").unwrap());
    assert!(!store.remove_watch("gone").unwrap());
    assert_eq!(store.current("gone").unwrap(), None);
    assert!(store.snapshots("gone").unwrap().is_empty());
    assert!(store.changes("gone", None, 10).unwrap().is_empty());
    for id in gone_ids {
        assert_eq!(store.snapshot(id).unwrap(), None);
    }
    assert_eq!(store.snapshots("kept").unwrap().len(), 3);
    assert_eq!(store.changes("kept", None, 10).unwrap().len(), 6);
    let names: Vec<String> = store.watches().unwrap().into_iter().map(|w| w.id).collect();
    assert_eq!(names, vec!["kept"]);

    // A removed watch starts again from nothing, with fresh ids.
    let again = record_page(&mut store, "gone", 1, t0() + 9 * DAY, 0);
    assert!(again > store.snapshots("kept").unwrap()[0].0);
    drop(store);
    let check: String = raw(&path)
        .query_row("PRAGMA foreign_key_check", [], |row| row.get(0))
        .unwrap_or_else(|_| "none".to_owned());
    assert_eq!(check, "none");
}

// ---------------------------------------------------------------- schema

#[test]
fn a_store_from_a_newer_semclip_is_refused() {
    let (_dir, path) = temp_db();
    {
        let mut store = Store::open(&path).unwrap();
        record_page(&mut store, "w", 1, t0(), 0);
    }
    let newer = SCHEMA_VERSION + 3;
    raw(&path)
        .pragma_update(None, "user_version", newer)
        .unwrap();

    let err = Store::open(&path).unwrap_err();
    assert!(
        matches!(err, StoreError::TooNew { found, supported, .. } if found == newer && supported == SCHEMA_VERSION),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "`{}` was written by a newer semclip (schema {newer}, this build knows {SCHEMA_VERSION}); \
             upgrade semclip",
            path.display()
        )
    );
    assert_eq!(user_version(&path), i64::from(newer), "left as it was");
}

#[test]
fn a_file_that_is_not_sqlite_is_refused_untouched() {
    let (dir, _) = temp_db();
    for (name, content) in [
        ("text.db", b"this is not a database\n".repeat(200)),
        ("short.db", b"hello\n".to_vec()),
        ("zeros.db", vec![0_u8; 8192]),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, &content).unwrap();
        let err = Store::open(&path).unwrap_err();
        assert!(
            matches!(err, StoreError::NotSqlite { .. }),
            "{name}: {err:?}"
        );
        assert_eq!(
            err.to_string(),
            format!(
                "`{}` is not a semclip snapshot store (not an SQLite database)",
                path.display()
            )
        );
        assert_eq!(
            std::fs::read(&path).unwrap(),
            content,
            "{name} was modified"
        );
        assert!(!dir.path().join(format!("{name}-wal")).exists());
    }
}

#[test]
fn another_applications_sqlite_database_is_refused_untouched() {
    let (dir, _) = temp_db();
    let plain = dir.path().join("plain.db");
    raw(&plain)
        .execute_batch("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);")
        .unwrap();
    // Same table name, other shape, and a user_version of its own.
    let lookalike = dir.path().join("lookalike.db");
    raw(&lookalike)
        .execute_batch(
            "CREATE TABLE meta (name TEXT, data BLOB);
             INSERT INTO meta VALUES ('application', 'semclip');
             PRAGMA user_version = 1;",
        )
        .unwrap();
    // Right shape, wrong application.
    let other = dir.path().join("other.db");
    raw(&other)
        .execute_batch(
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value);
             INSERT INTO meta VALUES ('application', 'otherapp');
             PRAGMA user_version = 1;",
        )
        .unwrap();
    // Nothing in it but a user_version.
    let versioned = dir.path().join("versioned.db");
    raw(&versioned)
        .execute_batch("PRAGMA user_version = 42;")
        .unwrap();

    for path in [plain, lookalike, other, versioned] {
        let before = std::fs::read(&path).unwrap();
        let err = Store::open(&path).unwrap_err();
        assert!(
            matches!(err, StoreError::Foreign { .. }),
            "{}: {err:?}",
            path.display()
        );
        assert_eq!(
            err.to_string(),
            format!(
                "`{}` is an SQLite database but not a semclip snapshot store",
                path.display()
            )
        );
        assert_eq!(
            std::fs::read(&path).unwrap(),
            before,
            "{} was modified",
            path.display()
        );
        let mode: String = raw(&path)
            .pragma_query_value(None, "journal_mode", |row| row.get(0))
            .unwrap();
        assert_eq!(mode, "delete", "{}", path.display());
    }
}

/// Migration 1 as published (a frozen copy: what a build with schema 1 left).
const SCHEMA_1: &str = "
    CREATE TABLE meta (
        key   TEXT PRIMARY KEY NOT NULL,
        value TEXT NOT NULL
    ) STRICT;
    INSERT INTO meta (key, value) VALUES ('application', 'semclip');
    CREATE TABLE watch (
        id           TEXT PRIMARY KEY NOT NULL,
        created_at   INTEGER NOT NULL,
        last_checked INTEGER NOT NULL
    ) STRICT;
    CREATE TABLE snapshot (
        id       INTEGER PRIMARY KEY AUTOINCREMENT,
        watch    TEXT NOT NULL REFERENCES watch (id) ON DELETE CASCADE,
        taken_at INTEGER NOT NULL,
        hash     TEXT NOT NULL,
        size     INTEGER NOT NULL,
        xml      BLOB NOT NULL
    ) STRICT;
    CREATE INDEX snapshot_by_watch ON snapshot (watch, id, hash, taken_at);
    PRAGMA user_version = 1;";

#[test]
fn an_older_store_is_migrated_forward() {
    const {
        assert!(
            SCHEMA_VERSION >= 2,
            "this test needs an older schema to start from"
        );
    }
    let (_dir, path) = temp_db();
    let at = t0();
    let millis = i64::try_from(at.duration_since(UNIX_EPOCH).unwrap().as_millis()).unwrap();
    let xml = page(1);
    {
        let conn = raw(&path);
        conn.execute_batch(SCHEMA_1).unwrap();
        conn.execute(
            "INSERT INTO watch (id, created_at, last_checked) VALUES ('w', ?1, ?1)",
            [millis],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO snapshot (watch, taken_at, hash, size, xml) VALUES ('w', ?1, ?2, ?3, ?4)",
            rusqlite::params![
                millis,
                hash_of(&xml),
                xml.len() as i64,
                zlib(xml.as_bytes())
            ],
        )
        .unwrap();
    }
    assert_eq!(user_version(&path), 1);

    let mut store = Store::open(&path).unwrap();
    assert_eq!(user_version(&path), i64::from(SCHEMA_VERSION));
    let current = store.current("w").unwrap().unwrap();
    assert_eq!((current.xml.as_str(), current.taken_at), (xml.as_str(), at));
    let id = record_page(&mut store, "w", 2, at + DAY, 3);
    assert_eq!(store.changes("w", None, 10).unwrap().len(), 3);
    assert_eq!(store.snapshots("w").unwrap()[0].0, id);

    drop(store);
    Store::open(&path).unwrap();
    assert_eq!(user_version(&path), i64::from(SCHEMA_VERSION));
}

// ---------------------------------------------------------------- damage

#[test]
fn a_damaged_snapshot_is_an_error_not_a_panic() {
    let (_dir, path) = temp_db();
    let id = {
        let mut store = Store::open(&path).unwrap();
        record_page(&mut store, "w", 1, t0(), 0)
    };
    let good = zlib(page(1).as_bytes());
    let size = page(1).len() as i64;
    let mut truncated = good.clone();
    truncated.truncate(good.len() / 2);
    let mut flipped = good.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x55;
    let damage: Vec<(&str, Vec<u8>, i64)> = vec![
        ("garbage", b"not zlib at all".to_vec(), size),
        ("empty blob", Vec::new(), size),
        ("truncated", truncated, size),
        ("bit flip", flipped, size),
        ("size too small", good.clone(), size - 1),
        ("size too large", good.clone(), size + 1),
        ("size negative", good.clone(), -1),
        ("size over the cap", good.clone(), MAX_XML_BYTES as i64 + 1),
        ("not UTF-8", zlib(&[0x3c, 0xff, 0xfe, 0x3e]), 4),
        // Expands far beyond the size recorded: reading stops at the size.
        ("bomb", zlib(&vec![b'a'; 64 << 20]), 10),
    ];
    for (what, blob, size) in damage {
        raw(&path)
            .execute(
                "UPDATE snapshot SET xml = ?1, size = ?2 WHERE id = ?3",
                rusqlite::params![blob, size, id],
            )
            .unwrap();
        let store = Store::open(&path).unwrap();
        for result in [store.current("w"), store.snapshot(id)] {
            let err = result.unwrap_err();
            assert!(
                matches!(&err, StoreError::Corrupt { watch, snapshot_id, .. } if watch == "w" && *snapshot_id == id),
                "{what}: {err:?}"
            );
            assert_eq!(
                err.to_string(),
                format!("snapshot {id} of watch `w` is corrupt")
            );
            assert!(std::error::Error::source(&err).is_some(), "{what}");
        }
        // The cheap paths read no blob and still work.
        assert_eq!(store.current_hash("w").unwrap(), Some(hash_of(&page(1))));
        assert_eq!(store.snapshots("w").unwrap().len(), 1);
        assert_eq!(store.watches().unwrap().len(), 1);
    }
}

#[test]
fn a_damaged_change_event_is_an_error_not_a_panic() {
    let (_dir, path) = temp_db();
    {
        let mut store = Store::open(&path).unwrap();
        record_page(&mut store, "w", 1, t0(), 1);
    }
    raw(&path)
        .execute("UPDATE change_event SET body = '{\"kind\": '", [])
        .unwrap();
    let store = Store::open(&path).unwrap();
    let err = store.changes("w", None, 10).unwrap_err();
    assert!(matches!(err, StoreError::CorruptChange { .. }), "{err:?}");
    assert!(err.to_string().starts_with("change event "), "{err}");
}

// ---------------------------------------------------------------- concurrency

#[test]
fn handles_on_one_file_share_it_without_busy_errors() {
    let (_dir, path) = temp_db();
    let path = Arc::new(path);

    // Several handles creating the same new store at once.
    let start = Arc::new(Barrier::new(4));
    let openers: Vec<_> = (0..4)
        .map(|_| {
            let (path, start) = (Arc::clone(&path), Arc::clone(&start));
            std::thread::spawn(move || {
                start.wait();
                Store::open(&path).map(drop)
            })
        })
        .collect();
    for opener in openers {
        opener.join().unwrap().unwrap();
    }

    const RECORDS: u64 = 150;
    let writers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|watch| {
            let path = Arc::clone(&path);
            std::thread::spawn(move || {
                let mut store = Store::open(&path).unwrap();
                for n in 1..=RECORDS {
                    let at = t0() + Duration::from_secs(n);
                    record_page_with(&mut store, watch, n, at, n % 4, &keep(20, 90));
                    let xml = page(n);
                    // An unchanged check between changes.
                    let again = store
                        .record(watch, &hash_of(&xml), &xml, at, &[], &keep(20, 90))
                        .unwrap();
                    assert_eq!(again, Recorded::Unchanged);
                }
            })
        })
        .collect();

    let reader = Store::open(&path).unwrap();
    let mut reads = 0_u64;
    while writers.iter().any(|w| !w.is_finished()) || reads == 0 {
        for watch in ["a", "b"] {
            if let Some(current) = reader.current(watch).unwrap() {
                assert_eq!(current.hash, hash_of(&current.xml));
            }
            reader.changes(watch, None, 10).unwrap();
            assert!(reader.snapshots(watch).unwrap().len() <= 20);
        }
        reader.watches().unwrap();
        reads += 1;
    }
    for writer in writers {
        writer.join().unwrap();
    }
    for watch in ["a", "b"] {
        let current = reader.current(watch).unwrap().unwrap();
        assert_eq!(current.xml, page(RECORDS));
        let expected: u64 = (1..=RECORDS).map(|n| n % 4).sum();
        assert_eq!(all_changes(&reader, watch, 64).len() as u64, expected);
    }
    assert!(reads > 0);
}

// ---------------------------------------------------------------- crashes

/// The database the crash writer writes to; unset, `crash_writer` does nothing.
const CRASH_DB_ENV: &str = "SEMCLIP_TEST_CRASH_DB";

/// `crash_writer`'s full name in this test binary (`tests/it/main.rs` has this
/// file as module `store`).
const CRASH_WRITER: &str = "store::crash_writer";

/// Retention of the crash writer: few versions, so pruning runs in every
/// transaction; days enough that no change event is ever pruned.
const CRASH_RETENTION: Retention = Retention {
    keep_versions: 25,
    keep_days: 30,
};

/// Snapshot `seq` of the crash writer: its sequence number, then text of a
/// size that varies with it, up to some 100 KB, that compresses badly, so
/// some transactions span many pages.
fn crash_xml(seq: u64) -> String {
    let mut state = seq.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let len = usize::try_from((seq * 7919) % 100_000).unwrap();
    let mut text = String::with_capacity(len + 64);
    while text.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        text.push(char::from(b'a' + u8::try_from(state % 26).unwrap()));
        if state.is_multiple_of(97) {
            text.push('€');
        }
    }
    format!("<page seq=\"{seq}\">{text}</page>")
}

fn crash_seq(xml: &str) -> u64 {
    let rest = xml.strip_prefix("<page seq=\"").unwrap();
    rest[..rest.find('"').unwrap()].parse().unwrap()
}

/// The child of `a_killed_writer_leaves_a_whole_database`: records snapshots
/// until it is killed. Each one's xml carries its sequence number, and it
/// comes with `seq % 7` change events, each naming `seq`; between changes, an
/// unchanged check.
#[test]
#[ignore = "the child process of a_killed_writer_leaves_a_whole_database; runs until killed"]
fn crash_writer() {
    let Some(path) = std::env::var_os(CRASH_DB_ENV) else {
        return;
    };
    let mut store = Store::open(Path::new(&path)).unwrap();
    let mut seq = store.current("w").unwrap().map_or(0, |s| crash_seq(&s.xml));
    loop {
        seq += 1;
        let xml = crash_xml(seq);
        let changes: Vec<Value> = (0..seq % 7)
            .map(|i| json!({ "kind": "crash", "seq": seq, "i": i }))
            .collect();
        let hash = hash_of(&xml);
        let now = SystemTime::now();
        let recorded = store
            .record("w", &hash, &xml, now, &changes, &CRASH_RETENTION)
            .unwrap();
        assert!(matches!(recorded, Recorded::Stored { .. }));
        let again = store
            .record("w", &hash, &xml, now, &[], &CRASH_RETENTION)
            .unwrap();
        assert_eq!(again, Recorded::Unchanged);
    }
}

/// A random number of milliseconds in `range`.
fn random_millis(range: std::ops::Range<u64>) -> u64 {
    range.start + RandomState::new().hash_one(SystemTime::now()) % (range.end - range.start)
}

#[test]
fn a_killed_writer_leaves_a_whole_database() {
    const ROUNDS: usize = 10;
    let (_dir, path) = temp_db();
    let exe = std::env::current_exe().unwrap();
    let mut last_seq = 0;
    let mut killed_with_wal = 0;
    for round in 0..ROUNDS {
        let mut child = Command::new(&exe)
            .args(["--exact", CRASH_WRITER, "--ignored", "--nocapture"])
            .env(CRASH_DB_ENV, &path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(random_millis(50..300)));
        if let Some(status) = child.try_wait().unwrap() {
            let output = child.wait_with_output().unwrap();
            panic!(
                "round {round}: the crash writer exited by itself ({status}); is it still \
                 named {CRASH_WRITER}?\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        child.kill().unwrap();
        child.wait().unwrap();
        if Path::new(&format!("{}-wal", path.display())).exists() {
            killed_with_wal += 1;
        }

        let store = Store::open(&path).unwrap();
        let integrity: String = raw(&path)
            .query_row("PRAGMA integrity_check", [], |row| row.get(0))
            .unwrap();
        assert_eq!(integrity, "ok", "round {round}");

        let Some(current) = store.current("w").unwrap() else {
            // Killed before its first commit.
            assert_eq!(last_seq, 0, "round {round}: the store lost its snapshots");
            continue;
        };
        assert_eq!(current.hash, hash_of(&current.xml), "round {round}");
        let seq = crash_seq(&current.xml);
        assert!(
            seq >= last_seq,
            "round {round}: went back from {last_seq} to {seq}"
        );
        last_seq = seq;

        // The snapshots kept are the newest, without a gap, each whole.
        let snapshots = store.snapshots("w").unwrap();
        let kept = usize::try_from(seq)
            .unwrap()
            .min(CRASH_RETENTION.keep_versions as usize);
        assert_eq!(snapshots.len(), kept, "round {round}");
        let mut seq_of_snapshot = BTreeMap::new();
        for (i, (id, hash, _)) in snapshots.iter().enumerate() {
            let snapshot = store.snapshot(*id).unwrap().unwrap();
            assert_eq!(snapshot.hash, *hash);
            assert_eq!(
                hash_of(&snapshot.xml),
                *hash,
                "round {round}, snapshot {id}"
            );
            let snapshot_seq = crash_seq(&snapshot.xml);
            assert_eq!(snapshot_seq, seq - i as u64, "round {round}");
            assert_eq!(snapshot.xml, crash_xml(snapshot_seq));
            seq_of_snapshot.insert(*id, snapshot_seq);
        }

        // Every check ever committed has all its events and no others.
        let mut events_of_seq: BTreeMap<u64, u64> = BTreeMap::new();
        for change in all_changes(&store, "w", 97) {
            let event_seq = change.change["seq"].as_u64().unwrap();
            *events_of_seq.entry(event_seq).or_default() += 1;
            if let Some(id) = change.snapshot_id {
                assert_eq!(seq_of_snapshot.get(&id), Some(&event_seq), "round {round}");
            }
        }
        for s in 1..=seq {
            let expected = s % 7;
            let found = events_of_seq.remove(&s).unwrap_or(0);
            assert_eq!(found, expected, "round {round}: events of check {s}");
        }
        assert!(
            events_of_seq.is_empty(),
            "round {round}: events of checks never committed"
        );
        drop(store);
    }
    assert!(
        last_seq > 0,
        "the crash writer never committed in {ROUNDS} rounds"
    );
    eprintln!(
        "crash test: {last_seq} checks committed over {ROUNDS} kills, \
         {killed_with_wal} with a WAL left behind"
    );
}

// ---------------------------------------------------------------- daemon state

on_both! {
    fn a_check_writes_status_thresholds_and_outbox_together_and_digests_wait(engine: &Engine) {
        use semclip::store::{CheckState, Level, OutboxState, Queued, ThresholdRecord, WatchStatus};
        let mut store = engine.open();
        let t0 = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let queued = |id: &str, notifier: &str, digest: Option<Duration>| Queued {
            alert_id: id.to_owned(),
            notifier: notifier.to_owned(),
            body: format!("{{\"id\":\"{id}\"}}"),
            digest,
        };
        let hour = Some(Duration::from_secs(3600));
        let state = CheckState {
            status: WatchStatus {
                watch: "w".into(),
                next_run: Some(t0 + Duration::from_secs(60)),
                etag: Some("\"e1\"".into()),
                failures: 0,
                ..WatchStatus::default()
            },
            thresholds: vec![ThresholdRecord {
                name: "high".into(),
                state: Level::Alarm,
                value: Some(301.5),
                node: None,
                since: t0,
            }],
            values: vec![("high".into(), 301.5)],
            series: None,
            alerts: vec![queued("a1", "mail", None), queued("a2", "log", hour)],
            layout: Some("{\"changed\":false}".into()),
            layout_event: None,
        };
        store.record_check("w", t0, None, &state).unwrap();
        assert_eq!(
            store.layout_state("w").unwrap().as_deref(),
            Some("{\"changed\":false}")
        );
        let status = store.status("w").unwrap().unwrap();
        assert_eq!(status.etag.as_deref(), Some("\"e1\""));
        assert_eq!(status.next_run, Some(t0 + Duration::from_secs(60)));
        assert_eq!(store.thresholds("w").unwrap(), state.thresholds);
        assert_eq!(
            store.threshold_values("w", "high", 10).unwrap(),
            [(t0, 301.5)]
        );
        let due = store.due_alerts(t0, 10).unwrap();
        assert_eq!(due.len(), 2, "no digest sent yet: both due now");

        // A failed attempt moves the row; delivery deletes it and starts the digest clock.
        store
            .alerts_failed(
                &[due[0].id],
                "connection refused",
                t0 + Duration::from_secs(5),
                false,
            )
            .unwrap();
        assert_eq!(store.due_alerts(t0, 10).unwrap().len(), 1);
        store.alerts_delivered(&[due[1].id], t0).unwrap();
        let later = t0 + Duration::from_secs(10);
        let again = CheckState {
            status: state.status.clone(),
            alerts: vec![queued("a3", "log", hour)],
            ..CheckState::default()
        };
        store.record_check("w", later, None, &again).unwrap();
        let rows = store.outbox().unwrap();
        assert_eq!(rows.len(), 2);
        let a3 = rows.iter().find(|r| r.alert_id == "a3").unwrap();
        assert_eq!(
            a3.next_attempt,
            t0 + Duration::from_secs(3600),
            "waits for the digest interval"
        );
        let a1 = rows.iter().find(|r| r.alert_id == "a1").unwrap();
        assert_eq!(
            (a1.attempts, a1.last_error.as_deref()),
            (1, Some("connection refused"))
        );

        // Giving up leaves a visible record that is no longer due.
        store
            .alerts_failed(&[a1.id], "still refused", later, true)
            .unwrap();
        let a1 = store
            .outbox()
            .unwrap()
            .into_iter()
            .find(|r| r.alert_id == "a1")
            .unwrap();
        assert_eq!(a1.state, OutboxState::Failed);
        assert!(
            store
                .due_alerts(later + Duration::from_secs(86_400), 10)
                .unwrap()
                .iter()
                .all(|r| r.alert_id != "a1")
        );

        // Old values go, the newest stays.
        let keep = semclip::store::Retention::new(10, 1).unwrap();
        assert_eq!(
            store
                .prune_values(&keep, t0 + Duration::from_secs(3 * 86_400))
                .unwrap(),
            0
        );
}
}

// ---------------------------------------------------------------- PostgreSQL

/// A PostgreSQL test database, or `None` after saying why there is none.
fn pg_engine(test: &str) -> Option<Engine> {
    Engine::postgres(test)
}

#[test]
fn postgres_a_newer_schema_is_refused_by_name_untouched() {
    let Some(engine) = pg_engine("postgres_a_newer_schema_is_refused_by_name_untouched") else {
        return;
    };
    record_page(&mut engine.open(), "w", 1, t0(), 0);
    crate::pg::psql(&engine.database, "UPDATE schema_version SET version = 99");
    let err = Store::open_database(&engine.database).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::TooNew { found: 99, supported, .. }
                if supported == semclip::store::pg::SCHEMA_VERSION
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("was written by a newer semclip (schema 99"),
        "{err}"
    );
    assert_eq!(
        crate::pg::psql(&engine.database, "SELECT version FROM schema_version"),
        "99"
    );
}

#[test]
fn postgres_another_applications_database_is_refused_untouched() {
    let Some(engine) = pg_engine("postgres_another_applications_database_is_refused_untouched")
    else {
        return;
    };
    crate::pg::psql(
        &engine.database,
        "CREATE TABLE users (id BIGINT PRIMARY KEY)",
    );
    let err = Store::open_database(&engine.database).unwrap_err();
    assert!(matches!(err, StoreError::Foreign { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "`{}` is a PostgreSQL database with other tables but not a semclip snapshot store",
            engine.database
        )
    );
    let tables = crate::pg::psql(
        &engine.database,
        "SELECT string_agg(tablename, ',') FROM pg_tables WHERE schemaname = 'public'",
    );
    assert_eq!(tables, "users", "left as it was");
}

#[test]
fn postgres_replicas_opening_an_empty_database_at_once_create_it_once() {
    let Some(engine) =
        pg_engine("postgres_replicas_opening_an_empty_database_at_once_create_it_once")
    else {
        return;
    };
    let barrier = Arc::new(Barrier::new(6));
    let opened: Vec<_> = (0..6)
        .map(|_| {
            let barrier = Arc::clone(&barrier);
            let database = engine.database.clone();
            std::thread::spawn(move || {
                barrier.wait();
                Store::open_database(&database).map(drop)
            })
        })
        .collect();
    for handle in opened {
        handle.join().unwrap().unwrap_or_else(|e| panic!("{e:#?}"));
    }
    assert_eq!(
        crate::pg::psql(&engine.database, "SELECT version FROM schema_version"),
        semclip::store::pg::SCHEMA_VERSION.to_string()
    );
    assert_eq!(
        crate::pg::psql(&engine.database, "SELECT count(*) FROM meta"),
        "1"
    );
    record_page(&mut engine.open(), "w", 1, t0(), 1);
}

#[test]
fn postgres_sslmode_require_uses_tls_and_its_absence_does_not() {
    let Some(engine) = pg_engine("postgres_sslmode_require_uses_tls_and_its_absence_does_not")
    else {
        return;
    };
    // The test cluster has no TLS: asked for, the connection must fail
    // rather than fall back to plain text.
    let url = crate::pg::url_with(&engine.database, "?sslmode=require");
    let database = Database::parse(&url, Path::new("/")).unwrap();
    let err = Store::open_database(&database).unwrap_err();
    let chain = format!("{:#}", anyhow::Error::from(err));
    assert!(chain.contains("TLS"), "{chain}");
    let plain = crate::pg::url_with(&engine.database, "?sslmode=disable");
    Store::open_database(&Database::parse(&plain, Path::new("/")).unwrap()).unwrap();
    engine.open();
}

fn two_worker_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Records a page for each of `w0` to `w7`, all at once, from blocking
/// threads of `pool`.
async fn record_eight_at_once(pool: &Arc<semclip::store::pool::StorePool>) {
    let writes: Vec<_> = (0..8u64)
        .map(|n| {
            let pool = Arc::clone(pool);
            tokio::spawn(async move {
                pool.run(move |store| {
                    let xml = page(n);
                    let hash = hash_of(&xml);
                    store.record(
                        &format!("w{n}"),
                        &hash,
                        &xml,
                        t0(),
                        &[],
                        &Retention::default(),
                    )
                })
                .await
            })
        })
        .collect();
    for write in writes {
        write.await.unwrap().unwrap();
    }
}

#[test]
fn postgres_a_pool_lends_stores_to_blocking_threads_and_an_async_caller_gets_an_error() {
    use semclip::store::pool::StorePool;
    let Some(engine) = pg_engine(
        "postgres_a_pool_lends_stores_to_blocking_threads_and_an_async_caller_gets_an_error",
    ) else {
        return;
    };
    let runtime = two_worker_runtime();
    runtime.block_on(async {
        let pool = Arc::new(StorePool::open(engine.database.clone()).unwrap());
        record_eight_at_once(&pool).await;
        let watches = pool.run(|store| store.watches()).await.unwrap();
        assert_eq!(watches.len(), 8);
        // Called straight from an async task, the store refuses to block.
        let err = pool.with(|store| store.current_hash("w1")).unwrap_err();
        assert!(err.to_string().contains("cannot"), "{err}");
        let chain = format!("{:#}", anyhow::Error::from(err));
        assert!(chain.contains("called from an async task"), "{chain}");
    });
}

#[test]
fn postgres_a_pool_never_lends_a_connection_the_server_closed() {
    use semclip::store::pool::StorePool;
    let Some(engine) = pg_engine("postgres_a_pool_never_lends_a_connection_the_server_closed")
    else {
        return;
    };
    let runtime = two_worker_runtime();
    runtime.block_on(async {
        let pool = Arc::new(StorePool::open(engine.database.clone()).unwrap());
        // Calls at once leave several idle connections in the pool.
        record_eight_at_once(&pool).await;
        // The server ends every session of the database, as a restart or a
        // failover would, while the pool's connections sit idle.
        let ended = crate::pg::psql(
            &engine.database,
            "SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
        );
        assert!(ended.trim().parse::<u32>().unwrap() >= 1, "{ended}");
        // No call is lent a dead connection: each one succeeds.
        for n in 0..8 {
            let watches = pool.run(|store| store.watches()).await;
            match watches {
                Ok(watches) => assert_eq!(watches.len(), 8),
                Err(e) => panic!("call {n} after the sessions ended: {e:#}"),
            }
        }
    });
}

// ---------------------------------------------------------------- replicas

/// A check of `watch` recorded with its next run at `next`.
fn checked(watch: &str, next: SystemTime) -> semclip::store::CheckState {
    semclip::store::CheckState {
        status: semclip::store::WatchStatus {
            watch: watch.into(),
            next_run: Some(next),
            ..Default::default()
        },
        ..Default::default()
    }
}

on_both! {
    fn a_run_is_claimed_by_one_replica_and_taken_over_after_its_lease(engine: &Engine) {
        use semclip::store::Claim;
        let secs = Duration::from_secs;
        let lease = secs(60);
        let mine = Claim::Mine { rerun_of: None };
        let (mut a, mut b, mut c) = (engine.open(), engine.open(), engine.open());
        if matches!(engine.database, Database::Sqlite(_)) {
            // One daemon per file: no replicas, so no claims to make.
            assert!(a.replicas().is_none());
            a.record_check("w", t0(), None, &checked("w", t0() + secs(300))).unwrap();
            assert!(b.replicas().is_none());
            return;
        }
        assert_eq!(a.replicas().unwrap().claim_watch("w", "A", t0(), lease).unwrap(), mine);
        let held = |until| Claim::Held { until };
        let done = |next_run| Claim::Done { next_run };
        assert_eq!(
            b.replicas().unwrap().claim_watch("w", "B", t0(), lease).unwrap(),
            held(t0() + lease),
            "A holds the run: B looks again when A's lease ends"
        );
        assert_eq!(
            a.replicas().unwrap().claim_watch("w", "A", t0() + secs(1), lease).unwrap(),
            mine,
            "a replica's own lease is no obstacle (its check was not recorded)"
        );
        a.record_check("w", t0(), None, &checked("w", t0() + secs(300))).unwrap();
        assert_eq!(
            b.replicas().unwrap().claim_watch("w", "B", t0() + secs(2), lease).unwrap(),
            done(t0() + secs(300)),
            "the run was checked: B waits for the stored next run"
        );
        let next = t0() + secs(300);
        assert_eq!(b.replicas().unwrap().claim_watch("w", "B", next, lease).unwrap(), mine);
        assert_eq!(
            a.replicas().unwrap().claim_watch("w", "A", next, lease).unwrap(),
            held(next + lease)
        );
        // B dies without recording: once its lease is over, C takes the run.
        assert_eq!(
            c.replicas().unwrap().claim_watch("w", "C", next + lease - secs(1), lease).unwrap(),
            held(next + lease)
        );
        assert_eq!(
            c.replicas().unwrap().claim_watch("w", "C", next + lease + secs(1), lease).unwrap(),
            Claim::Mine { rerun_of: Some("B".to_owned()) },
            "the run taken over is named, to be counted"
        );
        c.record_check("w", next, None, &checked("w", next + secs(3600))).unwrap();
        // Check now moves the stored next run: any replica claims it.
        let soon = next + secs(700);
        assert_eq!(
            a.replicas().unwrap().claim_watch("w", "A", soon, lease).unwrap(),
            done(next + secs(3600))
        );
        a.request_check("w", soon).unwrap();
        assert_eq!(a.replicas().unwrap().claim_watch("w", "A", soon, lease).unwrap(), mine);
    }
}

on_both! {
    fn outbox_rows_are_claimed_once_and_taken_again_with_the_same_id_after_the_lease(
        engine: &Engine
    ) {
        use semclip::store::{CheckState, Queued};
        let secs = Duration::from_secs;
        let (mut a, mut b) = (engine.open(), engine.open());
        let state = CheckState {
            alerts: ["a1", "a2", "a3"]
                .map(|id| Queued {
                    alert_id: id.to_owned(),
                    notifier: "hook".to_owned(),
                    body: format!("{{\"id\":\"{id}\"}}"),
                    digest: None,
                })
                .to_vec(),
            ..checked("w", t0() + secs(60))
        };
        a.record_check("w", t0(), None, &state).unwrap();
        let ids = |rows: &[semclip::store::OutboxEntry]| {
            rows.iter().map(|r| r.alert_id.clone()).collect::<Vec<_>>()
        };
        let claimed = a.claim_alerts(t0(), 2, t0() + secs(120)).unwrap();
        assert_eq!(ids(&claimed), ["a1", "a2"], "oldest first, at most the limit");
        let rest = b.claim_alerts(t0() + secs(1), 10, t0() + secs(121)).unwrap();
        assert_eq!(ids(&rest), ["a3"], "claimed rows are not claimed again");
        assert!(b.claim_alerts(t0() + secs(2), 10, t0() + secs(122)).unwrap().is_empty());
        // A delivered a1 and died; after its lease a2 is taken again, same id.
        a.alerts_delivered(&[claimed[0].id], t0() + secs(3)).unwrap();
        assert!(b.claim_alerts(t0() + secs(119), 10, t0() + secs(240)).unwrap().is_empty());
        let again = b.claim_alerts(t0() + secs(120), 10, t0() + secs(240)).unwrap();
        assert_eq!(ids(&again), ["a2"]);
        assert_eq!(again[0].id, claimed[1].id);
        assert_eq!(again[0].body, claimed[1].body);
        // Rows given back are due at once.
        b.release_alerts(&[rest[0].id, again[0].id], t0() + secs(130)).unwrap();
        let back = a.claim_alerts(t0() + secs(130), 10, t0() + secs(250)).unwrap();
        assert_eq!(ids(&back), ["a2", "a3"]);
    }
}

#[test]
fn postgres_replicas_claiming_at_once_each_get_their_own_share() {
    use semclip::store::Claim;
    let Some(engine) = pg_engine(module_path!()) else {
        return;
    };
    const REPLICAS: usize = 6;
    // Watches due now, and 60 alerts waiting in the outbox.
    let mut setup = engine.open();
    let watches: Vec<String> = (0..20).map(|i| format!("w{i}")).collect();
    for (i, watch) in watches.iter().enumerate() {
        let mut state = checked(watch, t0());
        state.alerts = (0..3)
            .map(|n| semclip::store::Queued {
                alert_id: format!("{watch}-{n}"),
                notifier: "hook".to_owned(),
                body: "{}".to_owned(),
                digest: None,
            })
            .collect();
        setup
            .record_check(
                watch,
                t0() - Duration::from_secs(i as u64 + 1),
                None,
                &state,
            )
            .unwrap();
    }
    let barrier = Arc::new(Barrier::new(REPLICAS));
    let shares: Vec<(Vec<String>, Vec<String>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..REPLICAS)
            .map(|r| {
                let barrier = Arc::clone(&barrier);
                let (engine, watches) = (&engine, &watches);
                scope.spawn(move || {
                    let mut store = engine.open();
                    barrier.wait();
                    let mut mine = Vec::new();
                    for watch in watches {
                        let claim = store
                            .replicas()
                            .unwrap()
                            .claim_watch(watch, &format!("r{r}"), t0(), Duration::from_secs(60))
                            .unwrap();
                        if claim == (Claim::Mine { rerun_of: None }) {
                            mine.push(watch.clone());
                        }
                    }
                    let lease = t0() + Duration::from_secs(120);
                    let mut alerts = Vec::new();
                    loop {
                        let rows = store.claim_alerts(t0(), 4, lease).unwrap();
                        if rows.is_empty() {
                            break;
                        }
                        alerts.extend(rows.into_iter().map(|r| r.alert_id));
                    }
                    (mine, alerts)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut watches_claimed: Vec<String> = shares.iter().flat_map(|s| s.0.clone()).collect();
    watches_claimed.sort();
    let mut expected = watches.clone();
    expected.sort();
    assert_eq!(watches_claimed, expected, "each watch claimed exactly once");
    let mut alerts: Vec<String> = shares.iter().flat_map(|s| s.1.clone()).collect();
    alerts.sort();
    let before = alerts.len();
    alerts.dedup();
    assert_eq!(
        (before, alerts.len()),
        (60, 60),
        "each alert claimed exactly once"
    );
}

/// The one-statement claim (insert at a watch's first claim, lock, decide,
/// take) raced by several replicas on every run: each run of each watch is
/// taken by exactly one, the first runs (no claim row yet) too, and a claim
/// after the record sees the run done.
#[test]
fn postgres_replicas_racing_for_every_run_take_each_run_exactly_once() {
    use semclip::store::Claim;
    let Some(engine) = pg_engine(module_path!()) else {
        return;
    };
    const REPLICAS: usize = 4;
    const ROUNDS: u64 = 25;
    let watches = ["a", "b", "c"];
    let run_at = |round: u64| t0() + Duration::from_secs(round);
    let barrier = Arc::new(Barrier::new(REPLICAS));
    /// The (round, watch) runs one replica took, and what its late claims
    /// saw.
    type Share<'a> = (Vec<(u64, &'a str)>, Vec<Claim>);
    let taken: Vec<Share<'_>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..REPLICAS)
            .map(|r| {
                let (barrier, engine) = (Arc::clone(&barrier), &engine);
                scope.spawn(move || {
                    let mut store = engine.open();
                    let owner = format!("r{r}");
                    let (mut mine, mut late) = (Vec::new(), Vec::new());
                    for round in 0..ROUNDS {
                        let now = run_at(round);
                        barrier.wait();
                        let won: Vec<&str> = watches
                            .iter()
                            .copied()
                            .filter(|w| {
                                let claim = store
                                    .replicas()
                                    .unwrap()
                                    .claim_watch(w, &owner, now, Duration::from_secs(60))
                                    .unwrap();
                                assert!(
                                    !matches!(claim, Claim::Mine { rerun_of: Some(_) }),
                                    "no lease expires here: {claim:?}"
                                );
                                claim == Claim::Mine { rerun_of: None }
                            })
                            .collect();
                        barrier.wait();
                        for w in &won {
                            store
                                .record_check(w, now, None, &checked(w, run_at(round + 1)))
                                .unwrap();
                            mine.push((round, *w));
                        }
                        barrier.wait();
                        if r == 0 {
                            for w in watches {
                                late.push(
                                    store
                                        .replicas()
                                        .unwrap()
                                        .claim_watch(w, &owner, now, Duration::from_secs(60))
                                        .unwrap(),
                                );
                            }
                        }
                    }
                    (mine, late)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut runs: Vec<(u64, &str)> = taken.iter().flat_map(|t| t.0.clone()).collect();
    runs.sort();
    let expected: Vec<(u64, &str)> = (0..ROUNDS)
        .flat_map(|round| watches.iter().map(move |w| (round, *w)))
        .collect();
    assert_eq!(
        runs, expected,
        "every run of every watch taken exactly once"
    );
    let late: Vec<Claim> = taken.into_iter().flat_map(|t| t.1).collect();
    let done: Vec<Claim> = (0..ROUNDS)
        .flat_map(|round| {
            watches.iter().map(move |_| Claim::Done {
                next_run: run_at(round + 1),
            })
        })
        .collect();
    assert_eq!(late, done, "a claim after the record finds the run done");
}

/// `limits.per_host` across replicas: replicas racing for one host's
/// request slots never hold more than `per_host` at once, every slot is
/// used, a slot whose holder died is free again at its lease's end, and a
/// late give-back by that holder does not free the slot's new owner.
#[test]
fn postgres_replicas_never_hold_more_request_slots_than_per_host() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let Some(engine) = pg_engine(module_path!()) else {
        return;
    };
    const REPLICAS: usize = 4;
    const PER_HOST: usize = 2;
    const TAKES: usize = 40;
    use semclip::store::SlotWaiter;
    // Asks that never queue: the queue is the test below.
    let first_ask = SlotWaiter {
        ticket: "t",
        since: t0(),
        queues: false,
    };
    let first_ask = &first_ask;
    let in_flight = AtomicUsize::new(0);
    let most = AtomicUsize::new(0);
    let slots_used = std::sync::Mutex::new(std::collections::BTreeSet::new());
    let lease = Duration::from_secs(60);
    std::thread::scope(|scope| {
        for r in 0..REPLICAS {
            let (engine, in_flight, most, slots_used) = (&engine, &in_flight, &most, &slots_used);
            scope.spawn(move || {
                let mut store = engine.open();
                store
                    .replicas()
                    .unwrap()
                    .ensure_host_slots("h.example", PER_HOST)
                    .unwrap();
                let owner = format!("r{r}");
                let mut took = 0;
                while took < TAKES {
                    let now = SystemTime::now();
                    let Some(slot) = store
                        .replicas()
                        .unwrap()
                        .take_host_slot("h.example", PER_HOST, &owner, now, now + lease, first_ask)
                        .unwrap()
                    else {
                        std::thread::sleep(Duration::from_millis(1));
                        continue;
                    };
                    let n = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(n, Ordering::SeqCst);
                    slots_used.lock().unwrap().insert(slot);
                    std::thread::sleep(Duration::from_millis(2));
                    in_flight.fetch_sub(1, Ordering::SeqCst);
                    store
                        .replicas()
                        .unwrap()
                        .give_back_host_slot("h.example", slot, &owner)
                        .unwrap();
                    took += 1;
                }
            });
        }
    });
    assert!(
        most.load(Ordering::SeqCst) <= PER_HOST,
        "never more than per_host in flight: {most:?}"
    );
    assert_eq!(
        slots_used
            .into_inner()
            .unwrap()
            .into_iter()
            .collect::<Vec<_>>(),
        vec![0, 1]
    );

    // A holder that died: its slots stay taken until their lease ends.
    let mut store = engine.open();
    let take = |store: &mut semclip::store::Store, per_host, owner: &str, now: SystemTime| {
        store
            .replicas()
            .unwrap()
            .take_host_slot("h.example", per_host, owner, now, now + lease, first_ask)
            .unwrap()
    };
    let t = t0();
    for expected in [0, 1] {
        let slot = store
            .replicas()
            .unwrap()
            .take_host_slot(
                "h.example",
                PER_HOST,
                "dead",
                t,
                t + Duration::from_secs(10),
                first_ask,
            )
            .unwrap();
        assert_eq!(slot, Some(expected));
    }
    let before_end = t + Duration::from_secs(9);
    assert_eq!(
        take(&mut store, PER_HOST, "live", before_end),
        None,
        "both slots held"
    );
    let after_end = t + Duration::from_secs(11);
    assert_eq!(
        take(&mut store, PER_HOST, "live", after_end),
        Some(0),
        "free once the lease ran out"
    );
    // The dead holder's late give-back leaves the new owner's slot taken.
    store
        .replicas()
        .unwrap()
        .give_back_host_slot("h.example", 0, "dead")
        .unwrap();
    assert_eq!(
        take(&mut store, PER_HOST, "other", before_end),
        None,
        "slot 0 is live's, slot 1 still dead's"
    );
    // A larger per_host needs its rows made; then the new slot is free.
    assert_eq!(take(&mut store, 3, "other", before_end), None);
    store
        .replicas()
        .unwrap()
        .ensure_host_slots("h.example", 3)
        .unwrap();
    assert_eq!(take(&mut store, 3, "other", before_end), Some(2));
}

/// Host slots go first come, first served: a slot given back goes to the
/// request that has waited longest, not to one that just arrived and asks
/// first; a waiter that stopped asking stops counting; one that leaves
/// the queue stops counting at once.
#[test]
fn postgres_host_slots_go_to_the_request_that_waited_longest() {
    use semclip::store::{SlotWaiter, WAIT_ALIVE};
    let Some(engine) = pg_engine(module_path!()) else {
        return;
    };
    let mut store = engine.open();
    store
        .replicas()
        .unwrap()
        .ensure_host_slots("q.example", 1)
        .unwrap();
    let t = t0();
    /// One ask for `q.example`'s one slot.
    fn take(
        store: &mut semclip::store::Store,
        owner: &str,
        now: SystemTime,
        waiter: &SlotWaiter<'_>,
    ) -> Option<i64> {
        store
            .replicas()
            .unwrap()
            .take_host_slot(
                "q.example",
                1,
                owner,
                now,
                now + Duration::from_secs(60),
                waiter,
            )
            .unwrap()
    }
    let ask = |ticket, since, queues| SlotWaiter {
        ticket,
        since,
        queues,
    };
    assert_eq!(take(&mut store, "h", t, &ask("holder", t, false)), Some(0));
    // The old waiter asks (and queues) while the slot is held.
    let old = ask("old", t + Duration::from_millis(100), true);
    assert_eq!(
        take(&mut store, "o", t + Duration::from_millis(200), &old),
        None
    );
    store
        .replicas()
        .unwrap()
        .give_back_host_slot("q.example", 0, "h")
        .unwrap();
    // A newcomer asks first once the slot is free: it is owed to the old
    // waiter, who then takes it.
    let at = t + Duration::from_millis(300);
    let newcomer = ask("new", at, false);
    assert_eq!(
        take(&mut store, "n", at, &newcomer),
        None,
        "the old waiter comes first"
    );
    assert_eq!(take(&mut store, "o", at, &old), Some(0));
    store
        .replicas()
        .unwrap()
        .leave_host_queue("q.example", "old", at)
        .unwrap();
    store
        .replicas()
        .unwrap()
        .give_back_host_slot("q.example", 0, "o")
        .unwrap();
    // With the old waiter gone from the queue, the newcomer takes it.
    let queued_new = ask("new", at, true);
    assert_eq!(take(&mut store, "n", at, &queued_new), Some(0));
    store
        .replicas()
        .unwrap()
        .give_back_host_slot("q.example", 0, "n")
        .unwrap();
    // A waiter that stopped asking (its check cancelled, its process dead)
    // holds nobody back once WAIT_ALIVE has passed since its last ask.
    let gone = ask("gone", at, true);
    // "new" never left the queue: its row counts only while it is fresh,
    // as does that of "gone", who asks once while the slot is held.
    assert_eq!(
        take(&mut store, "h2", at, &ask("holder2", at, false)),
        Some(0)
    );
    assert_eq!(take(&mut store, "g", at, &gone), None);
    store
        .replicas()
        .unwrap()
        .give_back_host_slot("q.example", 0, "h2")
        .unwrap();
    let soon = at + WAIT_ALIVE / 2;
    let later = at + WAIT_ALIVE + Duration::from_millis(1);
    let third = ask("third", soon, false);
    assert_eq!(
        take(&mut store, "x", soon, &third),
        None,
        "gone still counts for a while"
    );
    assert_eq!(
        take(&mut store, "x", later, &third),
        Some(0),
        "then no more"
    );
}

on_both! {
    fn a_check_starts_from_its_status_hash_layout_and_thresholds_read_together(engine: &Engine) {
        use semclip::store::CheckStart;
        let mut store = engine.open();
        assert_eq!(store.check_start("w").unwrap(), CheckStart::default(), "an unknown watch");
        // A snapshot recorded without a check: a hash, no status yet.
        let xml = page(1);
        store
            .record("w", &hash_of(&xml), &xml, t0(), &[], &Retention::default())
            .unwrap();
        let start = store.check_start("w").unwrap();
        assert_eq!(
            (start.status, start.current_hash, start.layout),
            (None, Some(hash_of(&xml)), None)
        );
        let next = t0() + Duration::from_secs(60);
        let mut state = checked("w", next);
        state.status.etag = Some("\"v1\"".to_owned());
        state.layout = Some("{\"wrappers\":[]}".to_owned());
        store.record_check("w", t0(), None, &state).unwrap();
        let start = store.check_start("w").unwrap();
        let status = start.status.unwrap();
        assert_eq!(status, store.status("w").unwrap().unwrap());
        assert_eq!((status.next_run, status.etag.as_deref()), (Some(next), Some("\"v1\"")));
        assert_eq!(start.current_hash, store.current_hash("w").unwrap());
        assert_eq!(start.layout, store.layout_state("w").unwrap());
        assert_eq!(start.layout.as_deref(), Some("{\"wrappers\":[]}"));
        assert_eq!(start.thresholds, [], "no threshold stored yet");
        // Thresholds come with it, by name, one row each in the statement
        // and the rest read once.
        use semclip::store::{Level, ThresholdRecord};
        let record = |name: &str, state, value| ThresholdRecord {
            name: name.into(),
            state,
            value,
            node: Some(format!("/{name}")),
            since: t0(),
        };
        state.thresholds = vec![
            record("z", Level::Normal, Some(2.5)),
            record("a", Level::Alarm, Some(-1.0)),
            record("m", Level::Lost, None),
        ];
        store.record_check("w", t0(), None, &state).unwrap();
        let start = store.check_start("w").unwrap();
        assert_eq!(start.thresholds, store.thresholds("w").unwrap());
        assert_eq!(
            start.thresholds.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
            ["a", "m", "z"]
        );
        assert_eq!(start.thresholds[0], state.thresholds[1]);
        assert_eq!(start.status.unwrap(), status);
        assert_eq!(start.current_hash, store.current_hash("w").unwrap());
        // Another watch's rows are not mixed in.
        assert_eq!(store.check_start("x").unwrap(), CheckStart::default());
    }
}

// ------------------------------------------------------- grouped records

/// A check of `watch` in round `round` of the grouped-record tests: a
/// snapshot of page `page` (none when `None`), changes, two thresholds
/// with values, an alert (every other one to a digest notifier), a layout
/// state, and from round 1 a layout event.
fn grouped_check(
    watch: &str,
    round: u64,
    page_n: Option<u64>,
    retention: &Retention,
) -> semclip::store::CheckRecord {
    use semclip::store::{
        CheckRecord, CheckState, LayoutEvent, Level, Queued, SnapshotBody, SnapshotPart,
        ThresholdRecord,
    };
    let at = t0() + DAY * u32::try_from(round).unwrap();
    let xml = page_n.map(page);
    let changes: Vec<semclip::diff::Change> = (0..round)
        .map(|i| {
            serde_json::from_value(json!({ "kind": "update", "context": ["Shares", watch],
                "old": format!("{i}"), "new": format!("{}", i + 1) }))
            .unwrap()
        })
        .collect();
    let hash = xml.as_deref().map(hash_of);
    let snapshot = xml
        .as_deref()
        .zip(hash.as_deref())
        .map(|(xml, hash)| SnapshotPart {
            hash,
            body: SnapshotBody::Xml(xml),
            changes: &changes,
            retention,
        });
    let mut state: CheckState = checked(watch, at + Duration::from_secs(3600));
    state.status.etag = Some(format!("\"{watch}-{round}\""));
    state.status.failures = u32::try_from(round).unwrap();
    state.status.last_success = Some(at);
    state.thresholds = ["low", "high"]
        .iter()
        .enumerate()
        .map(|(i, name)| ThresholdRecord {
            name: (*name).to_owned(),
            state: if i == 0 { Level::Alarm } else { Level::Normal },
            value: Some(round as f64 + i as f64 / 2.0),
            node: Some(format!("/{watch}/{name}")),
            since: t0(),
        })
        .collect();
    state.values = vec![("low".to_owned(), round as f64), ("high".to_owned(), 1.5)];
    state.alerts = vec![Queued {
        alert_id: format!("{watch}-{round}"),
        notifier: "mail".to_owned(),
        body: format!("{{\"watch\":\"{watch}\",\"round\":{round}}}"),
        digest: (round % 2 == 1).then_some(Duration::from_secs(3600)),
    }];
    state.layout = Some(format!("{{\"round\":{round}}}"));
    state.layout_event = (round > 0).then(|| LayoutEvent {
        drift: 0.75,
        max_drift: 0.5,
        against: "previous page".to_owned(),
        lost: vec!["shares".to_owned()],
        lost_thresholds: Vec::new(),
        template: None,
        moved: Vec::new(),
        dom_drift: 0.0,
        dom_against: String::new(),
        summary: "clips lost".to_owned(),
    });
    CheckRecord::new(watch, at, snapshot, state).unwrap()
}

/// `group` written as the daemon writes it: together, by the replicas'
/// grouped writer, on PostgreSQL; each alone on SQLite, which has no
/// replicas.
fn write_group(
    store: &mut Store,
    group: &[semclip::store::CheckRecord],
) -> Vec<Result<Option<Recorded>, StoreError>> {
    match store.replicas() {
        Some(mut replicas) => replicas.write_records(group),
        None => group.iter().map(|r| store.write_record(r)).collect(),
    }
}

/// All the store shows of `watch`, with its name and ids left out, so
/// that two watches recorded alike compare equal.
fn shown(store: &Store, watch: &str) -> String {
    let anon = |s: String| s.replace(watch, "W");
    let events: Vec<_> = store
        .events(watch, None, 100)
        .unwrap()
        .into_iter()
        .map(|e| (e.snapshot_id.is_some(), e.at, e.event.line()))
        .collect();
    let snapshots: Vec<_> = store
        .snapshots(watch)
        .unwrap()
        .into_iter()
        .map(|(_, hash, at)| (hash, at))
        .collect();
    let mut status = store.status(watch).unwrap();
    if let Some(s) = &mut status {
        s.watch.clear();
    }
    let thresholds = store.thresholds(watch).unwrap();
    let values: Vec<_> = ["low", "high"]
        .iter()
        .map(|name| store.threshold_values(watch, name, 100).unwrap())
        .collect();
    let outbox: Vec<_> = store
        .outbox()
        .unwrap()
        .into_iter()
        .filter(|e| e.watch == watch)
        .map(|e| (e.notifier, e.created_at, e.next_attempt, e.digest, e.body))
        .collect();
    let layout = store.layout_state(watch).unwrap();
    anon(format!(
        "{events:?}\n{snapshots:?}\n{status:?}\n{thresholds:?}\n{values:?}\n{outbox:?}\n{layout:?}"
    ))
}

on_both! {
    fn records_written_as_a_group_are_the_records_written_one_at_a_time(engine: &Engine) {
        use semclip::store::Recorded;
        let mut store = engine.open();
        let keep = Retention::new(2, 3650).unwrap();
        // Rounds: first pages; changed pages for some, the same page for
        // others, nothing fetched for one; again, so that retention prunes.
        let pages = |w: u64, round: u64| match (w, round) {
            (3, r) if r > 0 => None,
            (2, r) => Some(100 + r.min(1)),
            (w, r) => Some(10 * w + r),
        };
        for round in 0..4 {
            let group: Vec<_> = (0..5)
                .map(|w| grouped_check(&format!("g{w}"), round, pages(w, round), &keep))
                .collect();
            let grouped = write_group(&mut store, &group);
            if !store.is_sqlite() {
                // One transaction wrote them all: their rows share an xmin.
                let xmins = crate::pg::psql(
                    &engine.database,
                    "SELECT count(DISTINCT xmin::text) FROM watch_status WHERE watch LIKE 'g%'",
                );
                assert_eq!(xmins.trim(), "1", "round {round}");
            }
            for w in 0..5 {
                let single = grouped_check(&format!("s{w}"), round, pages(w, round), &keep);
                let alone = store.write_record(&single).unwrap();
                let together = grouped[w as usize].as_ref().unwrap();
                // The same outcome, snapshot ids aside.
                let kind = |r: &Option<Recorded>| match r {
                    Some(Recorded::Stored { events, .. }) => format!("stored {events}"),
                    other => format!("{other:?}"),
                };
                assert_eq!(kind(together), kind(&alone), "round {round}, watch {w}");
            }
        }
        for w in 0..5 {
            let (g, s) = (format!("g{w}"), format!("s{w}"));
            assert_eq!(shown(&store, &g), shown(&store, &s), "watch {w}");
            // The claim row was released with the next run, as alone
            // (PostgreSQL: SQLite keeps no claims).
            if let Some(mut replicas) = store.replicas() {
                let mut claim = |watch: &str| {
                    replicas
                        .claim_watch(watch, "other", t0() + DAY, Duration::from_secs(60))
                        .unwrap()
                };
                let (cg, cs) = (claim(&g), claim(&s));
                assert_eq!(cg, cs, "watch {w}");
            }
        }
        // Retention pruned the group's watches as the others.
        assert_eq!(store.snapshots("g0").unwrap().len(), 2);
        assert_eq!(store.snapshots("g2").unwrap().len(), 2, "{}", shown(&store, "g2"));
    }

    fn a_record_the_database_refuses_fails_only_itself_in_a_group(engine: &Engine) {
        let mut store = engine.open();
        let keep = Retention::default();
        let mut group: Vec<_> = (0..4)
            .map(|w| grouped_check(&format!("w{w}"), 0, Some(w), &keep))
            .collect();
        // PostgreSQL refuses a NUL in text; SQLite keeps it.
        let mut state = semclip::store::CheckState::default();
        state.status.watch = "w9".into();
        state.status.last_error = Some("nul \0 byte".into());
        group.insert(2, semclip::store::CheckRecord::new("w9", t0(), None, state).unwrap());
        // The same watch twice: written in order, the second last.
        group.push(grouped_check("w1", 1, Some(11), &keep));
        let results = write_group(&mut store, &group);
        let is_postgres = !store.is_sqlite();
        assert_eq!(results[2].is_err(), is_postgres, "{:?}", results[2]);
        for (i, result) in results.iter().enumerate() {
            if i != 2 {
                assert!(result.is_ok(), "record {i}: {result:?}");
            }
        }
        for w in 0..4 {
            assert_eq!(store.snapshots(&format!("w{w}")).unwrap().len(), if w == 1 { 2 } else { 1 });
        }
        let w1 = store.status("w1").unwrap().unwrap();
        assert_eq!(w1.etag.as_deref(), Some("\"w1-1\""));
        assert_eq!(store.status("w9").unwrap().is_some(), !is_postgres);
    }
}

#[test]
fn a_pool_groups_records_made_at_once_and_loses_none() {
    use semclip::store::pool::StorePool;
    for engine in [
        Some(Engine::sqlite()),
        pg_engine("a_pool_groups_records_made_at_once"),
    ]
    .into_iter()
    .flatten()
    {
        let runtime = two_worker_runtime();
        runtime.block_on(async {
            let pool = Arc::new(StorePool::open(engine.database.clone()).unwrap());
            let keep = Retention::default();
            // 40 checks at once, each watch twice (the second one later
            // in the same group or the next).
            let writes: Vec<_> = (0..40u64)
                .map(|n| {
                    let pool = Arc::clone(&pool);
                    let record = grouped_check(&format!("w{}", n % 20), n / 20, Some(n), &keep);
                    tokio::spawn(async move { pool.record(record).await })
                })
                .collect();
            for write in writes {
                write.await.unwrap().unwrap();
            }
        });
        // Read from this plain thread (a PostgreSQL store blocks).
        let store = engine.open();
        assert_eq!(store.watches().unwrap().len(), 20);
        for w in 0..20 {
            let watch = format!("w{w}");
            assert_eq!(store.snapshots(&watch).unwrap().len(), 2, "{watch}");
            assert_eq!(store.threshold_values(&watch, "low", 10).unwrap().len(), 2);
        }
        assert_eq!(store.outbox().unwrap().len(), 40);
    }
}

#[test]
fn postgres_request_slots_are_given_back_together_if_their_owner_holds_them() {
    use semclip::store::{SlotBack, SlotWaiter};
    let Some(engine) = pg_engine("postgres_request_slots_are_given_back_together") else {
        return;
    };
    let mut store = engine.open();
    let ask = SlotWaiter {
        ticket: "t",
        since: t0(),
        queues: false,
    };
    let lease = t0() + DAY;
    store
        .replicas()
        .unwrap()
        .ensure_host_slots("h.example", 3)
        .unwrap();
    store
        .replicas()
        .unwrap()
        .ensure_host_slots("i.example", 1)
        .unwrap();
    let take = |store: &mut Store, host| {
        store
            .replicas()
            .unwrap()
            .take_host_slot(host, 3, "me", t0(), lease, &ask)
            .unwrap()
    };
    assert_eq!(
        [0, 1, 2, 3].map(|_| take(&mut store, "h.example")),
        [Some(0), Some(1), Some(2), None]
    );
    assert_eq!(take(&mut store, "i.example"), Some(0));
    let back = |host: &str, slot, owner: &str| SlotBack {
        host: host.into(),
        slot,
        owner: Arc::from(owner),
    };
    // Slot 2 is not given back: someone else holds it now (a lease that
    // ran out and was taken since).
    store
        .replicas()
        .unwrap()
        .give_back_host_slots(&[
            back("h.example", 1, "me"),
            back("h.example", 2, "other"),
            back("i.example", 0, "me"),
        ])
        .unwrap();
    assert_eq!(
        [take(&mut store, "h.example"), take(&mut store, "h.example")],
        [Some(1), None]
    );
    assert_eq!(take(&mut store, "i.example"), Some(0));
    store.replicas().unwrap().give_back_host_slots(&[]).unwrap();
}

on_both! {
    fn a_claim_reads_what_its_check_starts_from_only_when_it_takes_the_run(engine: &Engine) {
        use semclip::store::Claim;
        let mut store = engine.open();
        let lease = Duration::from_secs(60);
        let next = t0() + Duration::from_secs(3600);
        let mut state = checked("w", t0());
        state.status.etag = Some("\"v1\"".into());
        store.record_check("w", t0(), None, &state).unwrap();
        if store.is_sqlite() {
            // One daemon per file: no claims; a check reads what it starts
            // from itself.
            assert!(store.replicas().is_none());
            let start = store.check_start("w").unwrap();
            assert_eq!(start.status.unwrap().etag.as_deref(), Some("\"v1\""));
            return;
        }
        let (claim, start) = store.replicas().unwrap().claim_and_start("w", "me", t0(), lease).unwrap();
        assert_eq!(claim, Claim::Mine { rerun_of: None });
        let start = start.expect("read with the claim");
        assert_eq!(start, store.check_start("w").unwrap());
        assert_eq!(start.status.unwrap().etag.as_deref(), Some("\"v1\""));
        // Held by "me": another replica reads nothing.
        let (claim, start) = store.replicas().unwrap().claim_and_start("w", "other", t0(), lease).unwrap();
        assert!(matches!(claim, Claim::Held { .. }), "{claim:?}");
        assert_eq!(start, None);
        // Recorded with its next run: checked, nothing to read.
        store.record_check("w", t0(), None, &checked("w", next)).unwrap();
        let (claim, start) = store.replicas().unwrap().claim_and_start("w", "other", t0(), lease).unwrap();
        assert_eq!(claim, Claim::Done { next_run: next });
        assert_eq!(start, None);
        // Due again: the other replica takes it and reads the newest state.
        let (claim, start) = store.replicas().unwrap().claim_and_start("w", "other", next, lease).unwrap();
        assert_eq!(claim, Claim::Mine { rerun_of: None });
        assert_eq!(start.unwrap().status.unwrap().next_run, Some(next));
    }
}

/// The numbers of one check, as a check hands them to the store.
fn values(pairs: &[(&str, f64)]) -> Option<Vec<semclip::store::NodeValue>> {
    Some(
        pairs
            .iter()
            .map(|(node, value)| semclip::store::NodeValue {
                node: (*node).to_owned(),
                source: "clip:c".to_owned(),
                value: *value,
            })
            .collect(),
    )
}

on_both! {
    fn series_keep_only_changes_end_when_a_node_goes_and_age_out(engine: &Engine) {
        let mut store = engine.open();
        let day = Duration::from_secs(86_400);
        let checks: [&[(&str, f64)]; 4] = [
            &[("/a", 1.0), ("/b", 2.0)],
            // /a the same: no point; /b moved.
            &[("/a", 1.0), ("/b", 3.0)],
            // /b gone: its series ends.
            &[("/a", 1.5)],
            // /b back.
            &[("/a", 1.5), ("/b", 4.0)],
        ];
        for (k, pairs) in checks.iter().enumerate() {
            let state = semclip::store::CheckState {
                series: values(pairs),
                ..checked("w", t0() + day * (k as u32 + 1))
            };
            store.record_check("w", t0() + day * k as u32, None, &state).unwrap();
        }
        let pts = |store: &Store, node: &str| -> Vec<(SystemTime, Option<f64>)> {
            store
                .series_points("w", node, None, None)
                .unwrap()
                .iter()
                .map(|p| (p.at, p.value))
                .collect()
        };
        assert_eq!(pts(&store, "/a"), [(t0(), Some(1.0)), (t0() + day * 2, Some(1.5))]);
        assert_eq!(
            pts(&store, "/b"),
            [
                (t0(), Some(2.0)),
                (t0() + day, Some(3.0)),
                (t0() + day * 2, None),
                (t0() + day * 3, Some(4.0)),
            ]
        );
        let head = store.series_head("w", "/b").unwrap().unwrap();
        assert_eq!((head.value, head.since), (Some(4.0), t0() + day * 3));
        // A range starts with the point in force.
        let from = store
            .series_points("w", "/b", Some(t0() + day + Duration::from_secs(1)), None)
            .unwrap();
        assert_eq!(from[0].value, Some(3.0));
        // A check without values (an unchanged page) writes none.
        store
            .record_check("w", t0() + day * 4, None, &checked("w", t0() + day * 5))
            .unwrap();
        assert_eq!(pts(&store, "/b").len(), 4);
        // Retention of one day, ten days on: every series keeps its newest
        // point, nothing older.
        let keep = Retention::new(10, 1).unwrap();
        let gone = store.prune_series(&keep, t0() + day * 10).unwrap();
        assert_eq!(gone, 4, "/a's first point and /b's first three");
        assert_eq!(pts(&store, "/a"), [(t0() + day * 2, Some(1.5))]);
        assert_eq!(pts(&store, "/b"), [(t0() + day * 3, Some(4.0))]);
    }
}
