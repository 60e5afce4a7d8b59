//! Replicas telling each other news over PostgreSQL's `LISTEN/NOTIFY`
//! (started by the tests, [`crate::pg`]): two `semclip run` processes on
//! one database. A check-now request on one wakes the watch in the other at
//! once, and a SIGHUP on one reloads the watch files of both.

use std::path::Path;
use std::time::Duration;

use crate::daemon::{Daemon, runtime};
use crate::fixture::Site;

/// The admin token of replica A's API.
const ADMIN: &str = "news-admin-secret";

/// A daemon file on the database at `url`, with `extra` appended, and the
/// watches given.
fn setup(dir: &Path, url: &str, extra: &str, watches: &[(&str, String)]) {
    std::fs::create_dir_all(dir.join("watches")).unwrap();
    let config = format!("database: \"{url}\"\nwatches: watches\n{extra}");
    std::fs::write(dir.join("semclip.yaml"), config).unwrap();
    for (name, body) in watches {
        std::fs::write(dir.join("watches").join(format!("{name}.yaml")), body).unwrap();
    }
}

/// A watch of `url`, hourly.
fn hourly(url: &str, timeout: &str) -> String {
    format!("url: {url}\nschedule: {{every: 1h}}\nfetch: {{timeout: {timeout}, retries: 0}}\n")
}

/// `method path` on `port` (with the admin token when given): the status
/// and body.
fn request(method: reqwest::Method, port: u16, path: &str, token: Option<&str>) -> (u16, String) {
    runtime().block_on(async {
        let mut request = reqwest::Client::builder()
            .no_proxy()
            .build()
            .unwrap()
            .request(method, format!("http://127.0.0.1:{port}{path}"))
            .timeout(Duration::from_secs(20));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.text().await.unwrap())
    })
}

/// `POST /api/watches/{watch}/check` on `port` with the admin token: the
/// status.
fn check_now(port: u16, watch: &str) -> u16 {
    request(
        reqwest::Method::POST,
        port,
        &format!("/api/watches/{watch}/check"),
        Some(ADMIN),
    )
    .0
}

/// `GET path` on `port`: the body.
fn get(port: u16, path: &str) -> String {
    request(reqwest::Method::GET, port, path, None).1
}

#[test]
fn check_now_and_a_reload_reach_the_other_replica_by_notification() {
    let Some(database) = crate::pg::database(module_path!()) else {
        return;
    };
    let url = crate::pg::url_with(&database, "");
    let site = Site::start("251,30");
    let quick = hourly(&site.url("/quotes.html"), "5s");
    // Replica A has one slot, which `slow` holds for a minute (the page
    // never answers); B knows only `quick`.
    let a_dir = tempfile::tempdir().unwrap();
    let b_dir = tempfile::tempdir().unwrap();
    setup(
        a_dir.path(),
        &url,
        &format!(
            "listen: 127.0.0.1:0\nserver: {{xslt: \"{}/xslt\"}}\nlimits: {{concurrency: 1}}\n\
             tokens:\n  ops: {{secret: {{file: admin.token}}, scopes: [admin]}}\n",
            env!("CARGO_MANIFEST_DIR")
        ),
        &[
            ("quick", quick.clone()),
            ("slow", hourly(&site.url("/silent"), "60s")),
        ],
    );
    std::fs::write(a_dir.path().join("admin.token"), format!("{ADMIN}\n")).unwrap();
    setup(b_dir.path(), &url, "", &[("quick", quick)]);
    let b = Daemon::start(b_dir.path());
    b.wait_log("listening for other replicas", Duration::from_secs(10));
    b.wait_log("watch=quick outcome=first", Duration::from_secs(20));
    let a = Daemon::start(a_dir.path());
    a.wait_log("listening for other replicas", Duration::from_secs(10));
    site.wait_for("/silent", 1, Duration::from_secs(20));
    let fetched = site.seen("/quotes.html").len();

    // A takes the request but cannot check `quick` for a minute; B has
    // nothing to do but does not run `quick` for an hour unless told.
    assert_eq!(check_now(a.port(), "quick"), 202);
    b.wait_log_n("watch=quick outcome=", 2, Duration::from_secs(10));
    assert!(
        b.log().contains("check requested on another replica"),
        "{}",
        b.log()
    );
    assert_eq!(site.seen("/quotes.html").len(), fetched + 1);
    assert!(
        !a.log().contains("watch=quick outcome="),
        "A's only slot was taken by `slow`:\n{}",
        a.log()
    );

    // A SIGHUP on A reloads B too, once: B's directory did not change and
    // nobody signalled B. Neither hears its own notice back.
    a.signal("HUP");
    b.wait_log(
        "reload requested on another replica",
        Duration::from_secs(10),
    );
    b.wait_log("watches reloaded", Duration::from_secs(10));
    a.wait_log("watches reloaded", Duration::from_secs(10));
    std::thread::sleep(Duration::from_secs(1));
    for (name, replica) in [("A", &a), ("B", &b)] {
        assert_eq!(
            replica.log().matches("watches reloaded").count(),
            1,
            "replica {name} reloaded once:\n{}",
            replica.log()
        );
    }
    assert!(!a.log().contains("requested on another replica"));
    assert_eq!(b.stop().code(), Some(0));
}

#[test]
fn a_replica_with_another_watch_set_says_so_and_leaves_what_it_defines_differently() {
    let Some(database) = crate::pg::database(module_path!()) else {
        return;
    };
    let url = crate::pg::url_with(&database, "");
    let site = Site::start("251,30");
    let every_second = |extra: &str| {
        format!(
            "url: {}\nschedule: {{every: 1s}}\nfetch: {{timeout: 5s, retries: 0}}\n{extra}",
            site.url("/quotes.html")
        )
    };
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let listen = &format!(
        "listen: 127.0.0.1:0\nserver: {{xslt: \"{}/xslt\"}}\n",
        env!("CARGO_MANIFEST_DIR")
    );
    // A and B run the same set; C (deployed from an older checkout, say)
    // has `w1` with another title, and `w3` nobody else has.
    for dir in &dirs[..2] {
        setup(
            dir.path(),
            &url,
            listen,
            &[
                ("w1", every_second("title: New\n")),
                ("w2", every_second("")),
            ],
        );
    }
    setup(
        dirs[2].path(),
        &url,
        listen,
        &[
            ("w1", every_second("title: Old\n")),
            ("w2", every_second("")),
            ("w3", every_second("")),
        ],
    );
    let a = Daemon::start(dirs[0].path());
    let b = Daemon::start(dirs[1].path());
    let c = Daemon::start(dirs[2].path());
    c.wait_log("this replica's watch set differs", Duration::from_secs(10));
    // Only C has w3: C checks it (a watch only it has is still its own).
    c.wait_log_n("watch=w3 outcome=", 3, Duration::from_secs(20));
    // A and B started alongside C: give their schedules the same seconds.
    let w1_checks = || {
        (
            a.log().matches("watch=w1 outcome=").count(),
            b.log().matches("watch=w1 outcome=").count(),
        )
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while w1_checks().0 + w1_checks().1 < 3 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    let (a_w1, b_w1) = w1_checks();
    assert!(a_w1 + b_w1 >= 3, "A and B check w1: {a_w1} + {b_w1}");
    assert_eq!(
        c.log().matches("watch=w1 outcome=").count(),
        0,
        "C never checks its own w1:\n{}",
        c.log()
    );
    let c_metrics = get(c.port(), "/metrics");
    assert!(
        c_metrics.contains("semclip_replica_watch_set_mismatch 1"),
        "{c_metrics}"
    );
    assert!(c_metrics.contains("semclip_replicas_live 3"), "{c_metrics}");
    assert!(
        get(c.port(), "/status").contains("This replica&#39;s watch set differs")
            || get(c.port(), "/status").contains("This replica's watch set differs"),
        "{}",
        get(c.port(), "/status")
    );
    // A learns of C at its next heartbeat.
    crate::daemon::wait_until("A sees C's set differ", Duration::from_secs(15), || {
        get(a.port(), "/metrics").contains("semclip_replicas_differing 1")
    });
    let a_metrics = get(a.port(), "/metrics");
    assert!(
        a_metrics.contains("semclip_replica_watch_set_mismatch 0"),
        "{a_metrics}"
    );
    let a_status = get(a.port(), "/status");
    assert!(a_status.contains("3 replicas live"), "{a_status}");
    assert!(
        a_status.contains("running a different watch set from the others"),
        "{a_status}"
    );
    for replica in [a, b, c] {
        assert_eq!(replica.stop().code(), Some(0));
    }
    let left = crate::pg::psql(&database, "SELECT count(*) FROM replica");
    assert_eq!(left.trim(), "0", "a replica that stops leaves the table");
}
