//! Replicas of the real daemon sharing one PostgreSQL database (started by
//! the tests, [`crate::pg`]): three `semclip run` processes with the same
//! daemon file and watches, against the local fixture site, a real local
//! SMTP server and a local webhook receiver. Each scheduled run is checked
//! by one replica, each threshold crossing reaches each notifier once, and
//! `limits.host_spacing` holds across the replicas together.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::daemon::{Daemon, GAZP, runtime, wait_until};
use crate::fixture::Site;
use crate::harness::{SmtpServer, WebhookReceiver};

/// Watches the replicas share.
const WATCHES: usize = 30;

/// Their schedule, in seconds.
const EVERY: u64 = 2;

const REPLICAS: usize = 3;

/// `limits.host_spacing`, in milliseconds: every watch is on one host.
const SPACING_MS: u64 = 100;

/// Writes one replica's daemon file (the database at `url`) and the
/// shared watches of `site`.
fn setup(dir: &Path, url: &str, smtp_port: u16, hook: &url::Url, site: &Site) {
    std::fs::create_dir_all(dir.join("watches")).unwrap();
    let config = format!(
        "database: \"{url}\"\nwatches: watches\n\
         limits: {{concurrency: 16, per_host: 16, host_spacing: {SPACING_MS}ms}}\n\
         smtp: {{host: 127.0.0.1, port: {smtp_port}, security: none, \
         from: \"semclip <semclip@test.local>\", timeout: 5s}}\n\
         alerts: {{give_up_after: 1h}}\n\
         notifiers:\n  \
         mail: {{email: {{to: [\"ops@test.local\"]}}}}\n  \
         hook: {{webhook: {{url: \"{hook}\", timeout: 5s}}}}\n"
    );
    std::fs::write(dir.join("semclip.yaml"), config).unwrap();
    for i in 0..WATCHES {
        let watch = format!(
            "url: {}\nschedule: {{every: {EVERY}s}}\nfetch: {{timeout: 5s, retries: 0}}\n\
             thresholds:\n  - name: gazp-high\n    xpath: \"{GAZP}\"\n    above: 300\n    \
             hysteresis: 1\n    notify: [mail, hook]\n",
            site.url("/quotes.html")
        );
        std::fs::write(dir.join("watches").join(format!("w{i:02}.yaml")), watch).unwrap();
    }
}

/// How many checks of each watch each replica logged.
fn checks(replicas: &[Daemon]) -> Vec<BTreeMap<String, usize>> {
    replicas
        .iter()
        .map(|r| {
            let log = r.log();
            (0..WATCHES)
                .map(|i| {
                    let id = format!("w{i:02}");
                    let n = log.matches(&format!("watch={id} outcome=")).count();
                    (id, n)
                })
                .collect()
        })
        .collect()
}

#[test]
fn replicas_check_each_run_once_and_deliver_each_crossing_once() {
    let Some(database) = crate::pg::database(module_path!()) else {
        return;
    };
    let url = crate::pg::url_with(&database, "");
    let rt = runtime();
    let hook = rt.block_on(WebhookReceiver::start(None));
    let smtp = SmtpServer::start();
    let site = Site::start("251,30");
    let dirs: Vec<tempfile::TempDir> = (0..REPLICAS)
        .map(|_| tempfile::tempdir().unwrap())
        .collect();
    for dir in &dirs {
        setup(dir.path(), &url, smtp.port(), &hook.url(), &site);
    }
    let started = Instant::now();
    let replicas: Vec<Daemon> = dirs.iter().map(|d| Daemon::start(d.path())).collect();
    let total =
        |replicas: &[Daemon], id: &str| -> usize { checks(replicas).iter().map(|c| c[id]).sum() };
    wait_until(
        "a first check of every watch",
        Duration::from_secs(30),
        || (0..WATCHES).all(|i| total(&replicas, &format!("w{i:02}")) >= 1),
    );
    std::thread::sleep(Duration::from_secs(EVERY));
    site.set_price("305,40");
    wait_until(
        "one webhook call per watch",
        Duration::from_secs(30),
        || hook.requests().len() >= WATCHES,
    );
    wait_until("one email per watch", Duration::from_secs(30), || {
        smtp.messages().len() >= WATCHES
    });
    // Room for a second check of a run, or a second delivery, to show.
    std::thread::sleep(Duration::from_secs(2 * EVERY));
    let elapsed = started.elapsed();
    let per_replica = checks(&replicas);
    let logs: Vec<String> = replicas.iter().map(Daemon::log).collect();
    for replica in replicas {
        assert_eq!(replica.stop().code(), Some(0));
    }
    let logs = logs.join("\n----\n");

    // Each run checked once: never more checks of a watch than its
    // schedule has runs in the time the replicas ran (one replica alone
    // would do as many; three checking every run would do three times).
    let runs = elapsed.as_secs() / EVERY + 2;
    for i in 0..WATCHES {
        let id = format!("w{i:02}");
        let n: usize = per_replica.iter().map(|c| c[&id]).sum();
        assert!(
            (2..=runs as usize).contains(&n),
            "{id}: {n} checks in {elapsed:?} (at most {runs} runs)\n{logs}"
        );
    }
    let working = per_replica
        .iter()
        .filter(|c| c.values().sum::<usize>() > 0)
        .count();
    assert!(working >= 2, "the work is shared: {per_replica:?}");
    assert!(
        !logs.contains("checking it again"),
        "no lease ran out: no replica died\n{logs}"
    );

    // Each crossing reached each notifier once, with a delivery id each.
    // Request starts to the one host at least the spacing apart, across
    // all replicas: in any second, at most 1000 / SPACING_MS requests
    // arrive, plus two for the time between a request's reserved start and
    // its arrival, which the machine's load varies (a gap between two
    // arrivals is not a sound measure: one late arrival halves it). Each
    // replica spacing only its own requests would let three times as many
    // through.
    let mut arrivals: Vec<Instant> = site.seen("/quotes.html").iter().map(|s| s.at).collect();
    arrivals.sort();
    let most = (1000 / SPACING_MS) as usize + 2;
    let busiest = (0..arrivals.len())
        .map(|i| {
            arrivals[i..]
                .iter()
                .take_while(|&&t| t - arrivals[i] < Duration::from_secs(1))
                .count()
        })
        .max()
        .unwrap();
    assert!(
        busiest <= most,
        "{busiest} requests to one host within a second (spacing {SPACING_MS} ms)"
    );
    assert!(arrivals.len() > 2 * most, "enough requests to tell");

    let calls = hook.requests();
    let watches: BTreeSet<String> = calls
        .iter()
        .map(|c| c.json()["alerts"][0]["watch"].as_str().unwrap().to_owned())
        .collect();
    let ids: BTreeSet<&str> = calls
        .iter()
        .map(|c| c.header("X-Semclip-Delivery").unwrap())
        .collect();
    assert_eq!(
        (calls.len(), watches.len(), ids.len()),
        (WATCHES, WATCHES, WATCHES),
        "one webhook call per crossing"
    );
    let mails = smtp.messages();
    let message_ids: BTreeSet<String> = mails
        .iter()
        .map(|m| m.parsed().message_id().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        (mails.len(), message_ids.len()),
        (WATCHES, WATCHES),
        "one email per crossing"
    );
}
