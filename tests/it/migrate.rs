//! `semclip migrate`: an SQLite store with history, threshold states and a
//! pending alert moved into an empty PostgreSQL database, then run there.

use std::time::Duration;

use semclip::store::{Database, Store};

use crate::daemon::{Daemon, quotes_watch, runtime, setup_with_mail, wait_until};
use crate::fixture::Site;
use crate::harness::{Reply, SmtpServer, WebhookReceiver};
use crate::pg;
use crate::util::{describe, semclip};

/// Everything a user would miss: watches, every snapshot and change event,
/// threshold states and values, the outbox.
#[derive(Debug, PartialEq)]
struct Contents {
    watches: Vec<semclip::store::WatchState>,
    snapshots: Vec<(i64, String, std::time::SystemTime)>,
    changes: Vec<semclip::store::ChangeRecord>,
    thresholds: Vec<semclip::store::ThresholdRecord>,
    outbox: Vec<semclip::store::OutboxEntry>,
    status: Option<semclip::store::WatchStatus>,
}

fn contents(store: &Store) -> Contents {
    Contents {
        watches: store.watches().unwrap(),
        snapshots: store.snapshots("quotes").unwrap(),
        changes: store.changes("quotes", None, 1000).unwrap(),
        thresholds: store.thresholds("quotes").unwrap(),
        outbox: store.outbox().unwrap(),
        status: store.status("quotes").unwrap(),
    }
}

#[test]
fn a_sqlite_store_moves_to_postgres_keeping_history_and_its_pending_alert_is_delivered_once() {
    let Some(database) = pg::database("migrate_round_trip") else {
        return;
    };
    let url = pg::url_with(&database, "");
    let rt = runtime();
    let hook = rt.block_on(WebhookReceiver::start(Some("s3cret")));
    hook.reply(Reply::Status(500));
    let smtp = SmtpServer::start();
    let site = Site::start("251,30");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let watch = quotes_watch(&site.url("/quotes.html"), "hook");
    setup_with_mail(dir, smtp.port(), &hook.url(), &[("quotes", watch)]);

    // History on SQLite: a first snapshot, a price change that crosses the
    // threshold (a second snapshot, a change event), and its alert left
    // pending by a webhook that fails.
    let daemon = Daemon::start(dir);
    site.wait_for("/quotes.html", 2, Duration::from_secs(20));
    site.set_price("305,40");
    let sqlite = dir.join("state/semclip.db");
    wait_until("a failed delivery", Duration::from_secs(30), || {
        Store::open(&sqlite)
            .unwrap()
            .outbox()
            .unwrap()
            .iter()
            .any(|r| r.attempts >= 1)
    });
    assert_eq!(daemon.stop().code(), Some(0));
    let before = contents(&Store::open(&sqlite).unwrap());
    assert_eq!(before.snapshots.len(), 2, "{before:?}");
    assert!(!before.changes.is_empty());
    assert_eq!(before.thresholds[0].state, "alarm");
    assert_eq!(before.outbox.len(), 1);
    let alert_id = before.outbox[0].alert_id.clone();
    let failed_calls = hook.requests().len();

    let config = dir.join("semclip.yaml");
    let args = [
        "migrate",
        "--to",
        &url,
        "--config",
        config.to_str().unwrap(),
    ];
    let out = semclip(&args, None);
    assert!(out.status.success(), "{}", describe(&args, &out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("snapshot\t2\n"), "{stdout}");
    assert!(stdout.contains("outbox\t1\n"), "{stdout}");
    let target = Database::parse(&url, dir).unwrap();
    let after = contents(&Store::open_database(&target).unwrap());
    assert_eq!(after, before, "every row as it was, ids and times included");

    // A second copy into the same database is refused and changes nothing.
    let out = semclip(&args, None);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&args, &out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not empty"), "{stderr}");
    assert_eq!(contents(&Store::open_database(&target).unwrap()), before);

    // Run on PostgreSQL: the pending alert goes out once, with the same
    // delivery id; the threshold stays in alarm (no second crossing), and
    // new snapshots number on from the copied ones.
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace(
            "database: state/semclip.db",
            &format!("database: \"{url}\""),
        ),
    )
    .unwrap();
    hook.reply(Reply::Status(200));
    site.set_price("306,10");
    let daemon = Daemon::start(dir);
    wait_until("the outbox empties", Duration::from_secs(40), || {
        Store::open_database(&target)
            .unwrap()
            .outbox()
            .unwrap()
            .is_empty()
    });
    let n = site.seen("/quotes.html").len();
    site.wait_for("/quotes.html", n + 2, Duration::from_secs(20));
    assert_eq!(daemon.stop().code(), Some(0));
    let calls = hook.requests();
    assert_eq!(
        calls.len(),
        failed_calls + 1,
        "delivered once after the move"
    );
    assert_eq!(
        calls[failed_calls].header("X-Semclip-Delivery"),
        Some(alert_id.as_str())
    );
    let now = contents(&Store::open_database(&target).unwrap());
    assert_eq!(now.thresholds[0].state, "alarm");
    // Newest first; retention keeps the default two versions.
    assert_eq!(now.snapshots[1], before.snapshots[0], "{now:?}");
    assert_eq!(
        now.snapshots[0].0,
        before.snapshots[0].0 + 1,
        "the new price is the next snapshot id after the copied ones"
    );
    assert!(sqlite.is_file(), "the SQLite file is left in place");
}

#[test]
fn the_copied_tables_are_every_table_and_column_of_the_postgres_schema() {
    let Some(database) = pg::database("migrate_schema") else {
        return;
    };
    drop(Store::open_database(&database).unwrap());
    let listed = pg::psql(
        &database,
        "SELECT table_name || '.' || column_name FROM information_schema.columns \
         WHERE table_schema = 'public' AND table_name NOT IN ('meta', 'schema_version') \
         ORDER BY table_name, ordinal_position",
    );
    let not_copied = semclip::store::migrate::NOT_COPIED;
    let mut schema: Vec<&str> = listed
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .filter(|l| !not_copied.iter().any(|t| l.starts_with(&format!("{t}."))))
        .collect();
    schema.sort_unstable();
    let mut copied: Vec<String> = semclip::store::migrate::copied_tables()
        .flat_map(|(t, cols)| cols.into_iter().map(move |c| format!("{t}.{c}")))
        .collect();
    copied.sort_unstable();
    assert_eq!(copied, schema);
}

#[test]
fn migrate_refuses_a_target_that_is_not_postgres_and_a_missing_store() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.db");
    let args = [
        "migrate",
        "--to",
        "postgresql://semclip@localhost/db",
        "--from",
        missing.to_str().unwrap(),
    ];
    let out = semclip(&args, None);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&args, &out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("there is no SQLite store at"),
        "{}",
        describe(&args, &out)
    );
    let args = [
        "migrate",
        "--to",
        "other.db",
        "--from",
        missing.to_str().unwrap(),
    ];
    let out = semclip(&args, None);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&args, &out));
    let args = [
        "migrate",
        "--to",
        "postgresql://semclip:hunter2@localhost/db",
        "--from",
        missing.to_str().unwrap(),
    ];
    let out = semclip(&args, None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("holds a password"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
}
