//! The daemon end to end: the real `semclip` binary against a local fixture
//! site, a real local SMTP server and a local webhook receiver, on loopback.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use semclip::store::{OutboxState, Store};

use crate::fixture::Site;
use crate::harness::{Reply, SmtpServer, WebhookReceiver};
use crate::serve::{Client, repo_xslt};
use crate::util::{describe, semclip};

/// The GAZP threshold every test watch uses.
pub const GAZP: &str = "//table[@label='Shares']/row[@key='GAZP']/cell[@col='Last']/@num";

/// A running `semclip run`, killed when dropped.
pub struct Daemon {
    child: Child,
    log: PathBuf,
}

impl Daemon {
    /// Starts `semclip run --config dir/semclip.yaml`, logging to
    /// `dir/daemon-N.log`.
    pub fn start(dir: &Path) -> Daemon {
        Daemon::start_with_env(dir, &[])
    }

    /// As [`Daemon::start`], with these environment variables set.
    pub fn start_with_env(dir: &Path, env: &[(&str, &str)]) -> Daemon {
        Daemon::start_under(dir, env, &[])
    }

    /// As [`Daemon::start`], run through `wrapper` (a command that execs
    /// the rest, such as `prlimit --nofile=160:160 --`).
    pub fn start_under(dir: &Path, env: &[(&str, &str)], wrapper: &[&str]) -> Daemon {
        Daemon::launch(dir, env, wrapper, &[])
    }

    /// As [`Daemon::start`], with more arguments for `semclip run`.
    pub fn start_with_args(dir: &Path, args: &[&str]) -> Daemon {
        Daemon::launch(dir, &[], &[], args)
    }

    fn launch(dir: &Path, env: &[(&str, &str)], wrapper: &[&str], args: &[&str]) -> Daemon {
        let n = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("daemon-"))
            .count();
        let log = dir.join(format!("daemon-{n}.log"));
        let file = std::fs::File::create(&log).unwrap();
        let mut command = match wrapper.split_first() {
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args).arg(env!("CARGO_BIN_EXE_semclip"));
                c
            }
            None => Command::new(env!("CARGO_BIN_EXE_semclip")),
        };
        let child = command
            .args(["run", "--log-level", "info", "--config"])
            .arg(dir.join("semclip.yaml"))
            .args(args)
            .env_remove("RUST_LOG")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .unwrap();
        let daemon = Daemon { child, log };
        daemon.wait_log("ready", Duration::from_secs(30));
        daemon
    }

    /// The address its clip server bound: give `listen: 127.0.0.1:0` in
    /// the daemon file and read the port here (never a port found free
    /// beforehand, which another process may take meanwhile).
    pub fn addr(&self) -> std::net::SocketAddr {
        crate::util::bound_addr(&self.log, Duration::from_secs(30))
    }

    /// The port of [`Daemon::addr`].
    pub fn port(&self) -> u16 {
        self.addr().port()
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What it logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until the log contains `needle` (`count` times).
    pub fn wait_log_n(&self, needle: &str, count: usize, timeout: Duration) {
        let start = Instant::now();
        while self.log().matches(needle).count() < count {
            assert!(
                start.elapsed() < timeout,
                "no {count}× {needle:?} in the log within {timeout:?}:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the log contains `needle`.
    pub fn wait_log(&self, needle: &str, timeout: Duration) {
        self.wait_log_n(needle, 1, timeout);
    }

    /// Sends a signal by name (`TERM`, `HUP`).
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// SIGTERM, and the exit status.
    pub fn stop(mut self) -> std::process::ExitStatus {
        self.signal("TERM");
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                start.elapsed() < Duration::from_secs(40),
                "no exit after SIGTERM:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes the daemon file (with `extra` appended) and the watches.
pub fn setup(dir: &Path, extra: &str, watches: &[(&str, String)]) {
    std::fs::create_dir_all(dir.join("watches")).unwrap();
    let config = format!(
        "database: state/semclip.db\nwatches: watches\n\
         notifiers:\n  log: {{file: {{path: alerts.jsonl}}}}\n{extra}"
    );
    std::fs::write(dir.join("semclip.yaml"), config).unwrap();
    for (name, body) in watches {
        std::fs::write(dir.join("watches").join(format!("{name}.yaml")), body).unwrap();
    }
}

/// A watch of `url` every second with the GAZP threshold above 300.
pub fn quotes_watch(url: &str, notify: &str) -> String {
    format!(
        "url: {url}\nschedule: {{every: 1s}}\nfetch: {{timeout: 5s, retries: 0}}\n\
         thresholds:\n  - name: gazp-high\n    xpath: \"{GAZP}\"\n    above: 300\n    \
         hysteresis: 1\n    notify: [{notify}]\n"
    )
}

/// The alerts the file notifier wrote.
pub fn file_alerts(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("alerts.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub fn kinds(alerts: &[serde_json::Value]) -> Vec<String> {
    alerts
        .iter()
        .map(|a| a["kind"].as_str().unwrap().to_owned())
        .collect()
}

pub fn store(dir: &Path) -> Store {
    Store::open(&dir.join("state/semclip.db")).unwrap()
}

#[test]
fn the_fixture_page_reads_as_the_tests_expect() {
    let h =
        semclip::hierarchy::Hierarchy::from_html(&crate::fixture::quotes_page("305,40", 1), None);
    let xml =
        semclip::hierarchy::write::to_xml(&h, semclip::hierarchy::write::XmlOptions::default());
    let doc = semclip::xpath::HierarchyDoc::parse(&xml).unwrap();
    let r = semclip::monitor::threshold::read(&doc, GAZP).unwrap();
    assert!(
        matches!(&r, semclip::monitor::threshold::Reading::Value { value, context, .. }
            if *value == 305.4 && context == "Market / Shares / GAZP / Last"),
        "{r:?}\n{xml}"
    );
    // Markup variants carry the same data.
    for m in 0..3 {
        let other = semclip::hierarchy::Hierarchy::from_html(
            &crate::fixture::quotes_page("305,40", m),
            None,
        );
        assert_eq!(
            semclip::hierarchy::write::content_hash(&other),
            semclip::hierarchy::write::content_hash(&h),
            "variant {m}"
        );
    }
}

#[test]
fn thresholds_alert_once_per_crossing_and_markup_churn_stores_nothing() {
    let site = Site::start("251,30");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    setup(
        dir,
        "",
        &[("quotes", quotes_watch(&site.url("/quotes.html"), "log"))],
    );
    let daemon = Daemon::start(dir);
    let page = "/quotes.html";
    let mut n = 2;
    site.wait_for(page, n, Duration::from_secs(20));
    // Steps: (markup churn?, price, alerts expected after it in all).
    let steps: [(bool, &str, usize); 6] = [
        (true, "251,30", 0),
        (false, "305,40", 1), // crosses above 300
        (true, "305,40", 1),  // markup only
        (false, "310,00", 1), // still above
        (false, "299,50", 1), // below 300 but within the hysteresis
        (false, "298,00", 2), // back
    ];
    for (churn, price, alerts) in steps {
        if churn {
            site.churn_markup();
        }
        site.set_price(price);
        // Two checks see each step (the first may have started before it).
        n += 3;
        site.wait_for(page, n, Duration::from_secs(30));
        let got = file_alerts(dir);
        assert_eq!(
            got.len(),
            alerts,
            "after {price}: {got:#?}\n{}",
            daemon.log()
        );
    }
    let alerts = file_alerts(dir);
    assert_eq!(kinds(&alerts), ["threshold_crossed", "threshold_returned"]);
    assert_eq!(alerts[0]["threshold"]["value"], 305.4);
    assert_eq!(alerts[0]["threshold"]["bound"], "above 300");
    assert_eq!(
        alerts[0]["threshold"]["context"],
        "Market / Shares / GAZP / Last"
    );
    assert_eq!(alerts[1]["threshold"]["value"], 298.0);
    assert_eq!(daemon.stop().code(), Some(0));

    // Five data versions; the markup churn stored nothing.
    let store = store(dir);
    assert_eq!(store.snapshots("quotes").unwrap().len(), 5);
    let states = store.thresholds("quotes").unwrap();
    assert_eq!(states[0].state, "normal");
    assert_eq!(states[0].value, Some(298.0));
}

#[test]
fn a_challenge_is_blocked_not_data_and_its_retry_after_holds_the_host() {
    let site = Site::start("305,40");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let page = "/quotes.html";
    let listen = format!("listen: 127.0.0.1:0\nserver:\n  xslt: {}\n", repo_xslt());
    setup(
        dir,
        &listen,
        &[("quotes", quotes_watch(&site.url(page), "log"))],
    );
    let daemon = Daemon::start(dir);
    daemon.wait_log("outcome=first", Duration::from_secs(30));
    // The site turns into a bot wall (503, a challenge page whose table
    // reads GAZP 0, Retry-After: 5) for a while, then comes back.
    site.set_blocked(true);
    daemon.wait_log("outcome=blocked", Duration::from_secs(30));
    let status = store(dir).status("quotes").unwrap().unwrap();
    let error = status.last_error.unwrap_or_default();
    assert!(
        error.starts_with("blocked: ") && error.contains("Cloudflare challenge (HTTP 503)"),
        "{error}"
    );
    // Stored as a block, with its reason, and shown as one by the API and
    // the status page.
    assert_eq!(
        status.blocked.as_deref(),
        Some("Cloudflare challenge (HTTP 503)")
    );
    let c = Client::new(daemon.port());
    let api: serde_json::Value =
        serde_json::from_str(&c.get("/api/watches/quotes", &[]).body).unwrap();
    assert_eq!(api["watch"]["state"], "blocked", "{api}");
    assert_eq!(api["watch"]["blocked"], "Cloudflare challenge (HTTP 503)");
    let overview = c.get("/status", &[]);
    assert!(
        overview
            .body
            .contains("class=\"badge state-blocked\">blocked</span>"),
        "{}",
        overview.body
    );
    std::thread::sleep(Duration::from_secs(7));
    site.set_blocked(false);
    let after = site.seen(page).len();
    site.wait_for(page, after + 2, Duration::from_secs(30));
    // The page is back (unchanged: a 304 on its old ETag).
    let back = || {
        let log = daemon.log();
        log.rfind("outcome=blocked")
            .is_some_and(|at| log[at..].contains("outcome=not_modified"))
    };
    wait_until("a check after the wall", Duration::from_secs(30), back);
    let log = daemon.log();
    assert_eq!(daemon.stop().code(), Some(0));

    // Every request after a challenge waited its Retry-After (the site's
    // clock: the daemon heard the answer after the site logged it).
    let seen = site.seen(page);
    let challenges = seen.iter().filter(|s| s.status == 503).count();
    assert!(challenges >= 1, "{seen:#?}");
    for pair in seen.windows(2) {
        if pair[0].status == 503 {
            let gap = pair[1].at.duration_since(pair[0].at);
            assert!(gap >= Duration::from_secs(5), "{gap:?} after a 503");
        }
    }
    // The challenge was never compared or stored: one snapshot, no change
    // event, no threshold crossing to 0, and the watch is healthy again.
    let store = store(dir);
    assert_eq!(store.snapshots("quotes").unwrap().len(), 1);
    assert_eq!(store.changes("quotes", None, 100).unwrap().len(), 0);
    let states = store.thresholds("quotes").unwrap();
    assert_eq!(states[0].value, Some(305.4));
    let status = store.status("quotes").unwrap().unwrap();
    assert_eq!(status.failures, 0);
    assert_eq!(status.last_error, None);
    assert_eq!(status.blocked, None);
    assert!(
        log.contains("outcome=blocked") && !log.contains("retrying"),
        "{log}"
    );
}

#[test]
fn a_broken_watch_file_stops_run_from_starting_with_validate_s_messages() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    setup(
        dir,
        "",
        &[
            (
                "good",
                quotes_watch("http://127.0.0.1:9/quotes.html", "log"),
            ),
            (
                "bad",
                "url: http://127.0.0.1:9/\nschedule: {cron: \"61 * * * *\"}\n".to_owned(),
            ),
            ("worse", "url: http://127.0.0.1:9/\nbogus: 1\n".to_owned()),
        ],
    );
    let config = dir.join("semclip.yaml");
    let config = config.to_str().unwrap();
    let validate = semclip(&["validate", "--config", config], None);
    assert_eq!(
        validate.status.code(),
        Some(2),
        "{}",
        describe(&["validate"], &validate)
    );
    let run = semclip(&["run", "--config", config], None);
    assert_eq!(run.status.code(), Some(2), "{}", describe(&["run"], &run));
    let stderr = String::from_utf8_lossy(&run.stderr);
    let messages = String::from_utf8_lossy(&validate.stderr);
    let lines: Vec<&str> = messages
        .lines()
        .filter(|l| l.contains("bad.yaml:2:") || l.contains("worse.yaml:2:"))
        .collect();
    assert_eq!(lines.len(), 2, "one error in each file: {messages}");
    for line in lines {
        assert!(stderr.contains(line), "run lacks {line:?}:\n{stderr}");
    }
    assert!(
        !dir.join("state/semclip.db").exists(),
        "nothing was started"
    );
}

#[test]
fn run_listen_stands_in_for_the_daemon_file_s_listen() {
    // The daemon file names a port this test holds: a daemon that used it
    // could not start. `--listen` gives another, which the system picks.
    let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = holder.local_addr().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    setup(
        dir,
        &format!("listen: {taken}\nserver:\n  xslt: {}\n", repo_xslt()),
        &[],
    );
    let daemon = Daemon::start_with_args(dir, &["--listen", "127.0.0.1:0"]);
    let addr = daemon.addr();
    assert_ne!(addr, taken, "{}", daemon.log());
    assert_ne!(addr.port(), 0);
    let c = Client::new(addr.port());
    let health = c.get("/healthz", &[]);
    assert_eq!(health.status, 200, "{}", health.body);
    assert_eq!(daemon.stop().code(), Some(0));
    drop(holder);
}

#[test]
fn a_reload_with_a_broken_file_keeps_the_watches_running() {
    let site = Site::start("251,30");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    setup(
        dir,
        "",
        &[("quotes", quotes_watch(&site.url("/quotes.html"), "log"))],
    );
    let daemon = Daemon::start(dir);
    site.wait_for("/quotes.html", 2, Duration::from_secs(20));
    std::fs::write(
        dir.join("watches/broken.yaml"),
        "url: nope\nschedule: {every: 1s}\n",
    )
    .unwrap();
    daemon.wait_log("reload refused", Duration::from_secs(20));
    assert!(daemon.log().contains("broken.yaml:1:"), "{}", daemon.log());
    let seen = site.seen("/quotes.html").len();
    site.wait_for("/quotes.html", seen + 2, Duration::from_secs(20));

    // A valid change is taken, on SIGHUP as well as on the directory change.
    std::fs::remove_file(dir.join("watches/broken.yaml")).unwrap();
    std::fs::write(
        dir.join("watches/second.yaml"),
        format!("url: {}\nschedule: {{every: 1s}}\n", site.url("/error")),
    )
    .unwrap();
    daemon.signal("HUP");
    daemon.wait_log("watches reloaded", Duration::from_secs(20));
    site.wait_for("/error", 1, Duration::from_secs(20));
    assert_eq!(daemon.stop().code(), Some(0));
}

#[test]
fn hostile_upstreams_get_a_clear_status_and_leave_other_watches_alone() {
    // The hostile site and the good one are different hosts (per-host
    // politeness would otherwise rightly make the good watch wait).
    let hostile = Site::start("251,30");
    let good = Site::start_on("127.0.0.2", "251,30");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let mut watches = vec![("good", quotes_watch(&good.url("/quotes.html"), "log"))];
    let cases = [
        ("silent", "timed out"),
        ("trickle", "timed out"),
        ("huge", "larger than the limit"),
        ("bomb", "larger than the limit"),
        ("loop", "too many redirects"),
        ("error", "HTTP 500"),
    ];
    for (name, _) in cases {
        watches.push((
            name,
            format!(
                "url: {}\nschedule: {{every: 1s}}\nfetch: {{timeout: 2s, retries: 0}}\n\
                 failures: {{alert_after: 2, notify: [log]}}\n",
                hostile.url(&format!("/{name}"))
            ),
        ));
    }
    watches.push(("bad-utf8", quotes_watch(&hostile.url("/bad-utf8"), "log")));
    setup(
        dir,
        "limits: {concurrency: 16, per_host: 8, host_spacing: 0s}\n",
        &watches,
    );
    let daemon = Daemon::start(dir);
    let start = Instant::now();
    good.wait_for("/quotes.html", 6, Duration::from_secs(12));
    let elapsed = start.elapsed();
    // Every hostile watch has failed at least twice by now.
    hostile.wait_for("/silent", 2, Duration::from_secs(30));
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(daemon.stop().code(), Some(0));
    assert!(elapsed < Duration::from_secs(12), "{elapsed:?}");

    let store = store(dir);
    let statuses = store.statuses().unwrap();
    for (name, expected) in cases {
        let s = statuses.iter().find(|s| s.watch == name).unwrap();
        let error = s.last_error.as_deref().unwrap_or_default();
        assert!(error.contains(expected), "{name}: {error:?}");
        assert!(s.failures >= 1, "{name}: {s:?}");
    }
    for name in ["good", "bad-utf8"] {
        let s = statuses.iter().find(|s| s.watch == name).unwrap();
        assert_eq!((s.failures, &s.last_error), (0, &None), "{name}");
    }
    // The page with broken UTF-8 still gives its numbers.
    let t = store.thresholds("bad-utf8").unwrap();
    assert_eq!(t[0].value, Some(251.3), "{t:?}");
    // One "failing" alert per failing watch, not one per failure.
    let alerts = file_alerts(dir);
    for (name, _) in cases {
        let failing = alerts
            .iter()
            .filter(|a| a["watch"] == name && a["kind"] == "failing")
            .count();
        assert_eq!(failing, 1, "{name}: {alerts:#?}");
    }
}

/// A new store holds session cookies: its files are its owner's alone
/// (0600) under the usual umask of 022, SQLite's `-wal` and `-shm` files
/// too.
#[test]
fn a_new_store_is_readable_by_its_owner_alone_whatever_the_umask() {
    let site = Site::start("251,30");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    setup(
        dir,
        "",
        &[("quotes", quotes_watch(&site.url("/quotes.html"), "log"))],
    );
    let config = dir.join("semclip.yaml");
    let out = std::process::Command::new("sh")
        .args(["-c", "umask 022 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_semclip"))
        .args(["check", "quotes", "--config", config.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let state = dir.join("state");
    let mut seen = Vec::new();
    for entry in std::fs::read_dir(&state).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let mode =
            std::os::unix::fs::PermissionsExt::mode(&entry.metadata().unwrap().permissions());
        assert_eq!(mode & 0o077, 0, "{name} is {:o}", mode & 0o777);
        seen.push(name);
    }
    assert!(seen.contains(&"semclip.db".to_owned()), "{seen:?}");
}

#[test]
fn an_unchanged_page_is_fetched_conditionally_and_not_parsed() {
    let site = Site::start("251,30");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    setup(
        dir,
        "",
        &[("quotes", quotes_watch(&site.url("/quotes.html"), "log"))],
    );
    let config = dir.join("semclip.yaml");
    let args = ["check", "quotes", "--config", config.to_str().unwrap()];
    let first = semclip(&args, None);
    assert_eq!(first.status.code(), Some(0), "{}", describe(&args, &first));
    assert!(String::from_utf8_lossy(&first.stdout).contains("quotes: first snapshot stored"));
    let second = semclip(&args, None);
    assert_eq!(
        second.status.code(),
        Some(0),
        "{}",
        describe(&args, &second)
    );
    assert!(
        String::from_utf8_lossy(&second.stdout).contains("quotes: not modified (304)"),
        "{}",
        describe(&args, &second)
    );
    let seen = site.seen("/quotes.html");
    assert_eq!(seen[0].if_none_match, None);
    assert!(seen[1].if_none_match.is_some());
    assert_eq!(seen[1].status, 304);
    // A data change is fetched in full and reported.
    site.set_price("305,40");
    let third = semclip(&args, None);
    assert_eq!(
        third.status.code(),
        Some(1),
        "an alert: {}",
        describe(&args, &third)
    );
    let out = String::from_utf8_lossy(&third.stdout);
    assert!(
        out.contains("  update  Shares / GAZP / Last: 251,30 -> 305,40"),
        "{out}"
    );
    assert!(
        out.contains("alert: gazp-high: 305.4 is above 300"),
        "{out}"
    );
    assert_eq!(kinds(&file_alerts(dir)), ["threshold_crossed"]);
}

#[test]
fn check_dry_run_records_and_sends_nothing() {
    let site = Site::start("305,40");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    setup(
        dir,
        "",
        &[("quotes", quotes_watch(&site.url("/quotes.html"), "log"))],
    );
    let config = dir.join("semclip.yaml");
    let args = ["check", "--dry-run", "--config", config.to_str().unwrap()];
    let out = semclip(&args, None);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&args, &out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("would alert: gazp-high: 305.4 is above 300")
    );
    assert!(file_alerts(dir).is_empty());
    let store = store(dir);
    assert!(store.statuses().unwrap().is_empty());
    assert!(
        store
            .outbox()
            .unwrap()
            .iter()
            .all(|e| e.state == OutboxState::Pending)
    );
    assert!(store.outbox().unwrap().is_empty());
}

#[test]
fn check_runs_more_watches_than_its_concurrency_each_once_reported_in_order() {
    // `check` starts a watch's task only when fewer than
    // `limits.concurrency` run: every watch is still checked once, and the
    // report keeps the watches' order.
    let site = Site::start("305,40");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let names = ["w1", "w2", "w3", "w4", "w5", "w6", "w7"];
    let watches: Vec<(&str, String)> = names
        .iter()
        .map(|name| (*name, quotes_watch(&site.url("/quotes.html"), "log")))
        .collect();
    setup(dir, "limits: {concurrency: 2}\n", &watches);
    let config = dir.join("semclip.yaml");
    let args = ["check", "--dry-run", "--config", config.to_str().unwrap()];
    let out = semclip(&args, None);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&args, &out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let reported: Vec<&str> = stdout
        .lines()
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| l.split(':').next())
        .collect();
    assert_eq!(reported, names, "{stdout}");
    assert_eq!(
        stdout.matches("would alert: gazp-high").count(),
        names.len(),
        "{stdout}"
    );
    assert_eq!(site.seen("/quotes.html").len(), names.len());
}

/// A runtime for the webhook receiver, alive as long as the test holds it.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// Writes a daemon file with the `log`, `mail` (SMTP on `smtp_port`) and
/// `hook` notifiers, and the watches.
pub fn setup_with_mail(dir: &Path, smtp_port: u16, hook: &url::Url, watches: &[(&str, String)]) {
    setup(dir, "", watches);
    std::fs::write(dir.join("hook.secret"), "s3cret\n").unwrap();
    let config = format!(
        "database: state/semclip.db\nwatches: watches\n\
         smtp: {{host: 127.0.0.1, port: {smtp_port}, security: none, \
         from: \"semclip <semclip@test.local>\", timeout: 5s}}\n\
         alerts: {{give_up_after: 1h}}\n\
         notifiers:\n  log: {{file: {{path: alerts.jsonl}}}}\n  \
         mail: {{email: {{to: [\"ops@test.local\"]}}}}\n  \
         hook: {{webhook: {{url: \"{hook}\", secret: {{file: hook.secret}}, timeout: 5s}}}}\n"
    );
    std::fs::write(dir.join("semclip.yaml"), config).unwrap();
}

/// Waits until `f` holds.
pub fn wait_until(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < timeout, "not within {timeout:?}: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn each_crossing_reaches_smtp_and_the_webhook_once_with_value_and_context() {
    let rt = runtime();
    let hook = rt.block_on(WebhookReceiver::start(Some("s3cret")));
    let smtp = SmtpServer::start();
    let site = Site::start("251,30");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    setup_with_mail(
        dir,
        smtp.port(),
        &hook.url(),
        &[(
            "quotes",
            quotes_watch(&site.url("/quotes.html"), "mail, hook"),
        )],
    );
    let daemon = Daemon::start(dir);
    site.wait_for("/quotes.html", 2, Duration::from_secs(20));
    site.set_price("305,40");
    wait_until("one webhook call", Duration::from_secs(20), || {
        hook.requests().len() == 1
    });
    let n = site.seen("/quotes.html").len();
    site.churn_markup();
    site.set_price("310,00");
    site.wait_for("/quotes.html", n + 3, Duration::from_secs(20));
    assert_eq!(hook.requests().len(), 1, "no alert while it stays above");
    site.set_price("297,00");
    wait_until("a second webhook call", Duration::from_secs(20), || {
        hook.requests().len() == 2
    });
    wait_until("two emails", Duration::from_secs(20), || {
        smtp.messages().len() == 2
    });
    let n = site.seen("/quotes.html").len();
    site.wait_for("/quotes.html", n + 3, Duration::from_secs(20));
    assert_eq!(daemon.stop().code(), Some(0));

    let calls = hook.requests();
    assert_eq!(calls.len(), 2);
    let expected = [("threshold_crossed", 305.4), ("threshold_returned", 297.0)];
    for (call, (kind, value)) in calls.iter().zip(expected) {
        assert_eq!(call.signature_valid, Some(true));
        let body = call.json();
        assert_eq!(body["version"], "1");
        let alert = &body["alerts"][0];
        assert_eq!(alert["kind"], kind);
        assert_eq!(alert["threshold"]["value"], value);
        assert_eq!(
            alert["threshold"]["context"],
            "Market / Shares / GAZP / Last"
        );
        assert_eq!(alert["url"], site.url("/quotes.html"));
        assert_eq!(call.header("X-Semclip-Delivery"), alert["id"].as_str());
    }
    let mails = smtp.messages();
    assert_eq!(mails.len(), 2);
    let first = mails[0].parsed();
    let subject = first.subject().unwrap_or_default().to_owned();
    assert!(
        subject.contains("305.4") && subject.contains("above 300"),
        "{subject}"
    );
    let text = first.body_text(0).unwrap_or_default().into_owned();
    assert!(
        text.contains("Where:           Shares / GAZP / Last"),
        "{text}"
    );
    assert!(text.contains(&site.url("/quotes.html")), "{text}");
    assert_eq!(mails[0].rcpt_tos, ["ops@test.local"]);
    let second = mails[1].parsed().subject().unwrap_or_default().to_owned();
    assert!(second.contains("297"), "{second}");
}

#[test]
fn an_alert_queued_while_smtp_and_the_webhook_are_down_is_delivered_once_after_sigkill() {
    let rt = runtime();
    let hook = rt.block_on(WebhookReceiver::start(Some("s3cret")));
    hook.reply(Reply::Status(500));
    let mut smtp = SmtpServer::start();
    smtp.stop();
    let site = Site::start("305,40");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    setup_with_mail(
        dir,
        smtp.port(),
        &hook.url(),
        &[(
            "quotes",
            quotes_watch(&site.url("/quotes.html"), "mail, hook"),
        )],
    );
    let daemon = Daemon::start(dir);
    // Both deliveries have failed at least once, and the alert is stored.
    wait_until(
        "failed attempts in the outbox",
        Duration::from_secs(30),
        || {
            let rows = store(dir).outbox().unwrap();
            rows.len() == 2 && rows.iter().all(|r| r.attempts >= 1)
        },
    );
    assert!(!hook.requests().is_empty(), "the webhook was tried");
    drop(daemon); // SIGKILL
    smtp.restart();
    let failed_calls = hook.requests().len();
    hook.reply(Reply::Status(200));
    let daemon = Daemon::start(dir);
    wait_until("the outbox empties", Duration::from_secs(40), || {
        store(dir).outbox().unwrap().is_empty()
    });
    // Checks go on at the same price: no new crossing after the restart.
    let n = site.seen("/quotes.html").len();
    site.wait_for("/quotes.html", n + 3, Duration::from_secs(20));
    assert_eq!(daemon.stop().code(), Some(0));
    assert_eq!(smtp.messages().len(), 1, "exactly one email");
    let calls = hook.requests();
    let ids: std::collections::BTreeSet<_> = calls
        .iter()
        .map(|r| r.header("X-Semclip-Delivery").unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 1, "one alert, retried: {ids:?}");
    assert_eq!(
        calls.len(),
        failed_calls + 1,
        "delivered once after the restart"
    );
    assert_eq!(
        calls[failed_calls].json()["alerts"][0]["kind"],
        "threshold_crossed"
    );
    assert_eq!(store(dir).thresholds("quotes").unwrap()[0].state, "alarm");
}

#[test]
fn headers_cookies_and_credentials_from_secrets_are_sent() {
    let site = Site::start("251,30");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::write(dir.join("session.txt"), "abc123\n").unwrap();
    let watch = format!(
        "url: {}\nschedule: {{every: 1h}}\nfetch:\n  headers: {{Accept-Language: ru}}\n  \
         cookies: {{session: {{file: ../session.txt}}}}\n  \
         auth: {{bearer: {{token: {{env: SEMCLIP_TEST_TOKEN}}}}}}\n",
        site.url("/quotes.html")
    );
    setup(dir, "", &[("quotes", watch)]);
    let config = dir.join("semclip.yaml");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_semclip"))
        .args(["check", "--config", config.to_str().unwrap()])
        .env("SEMCLIP_TEST_TOKEN", "t0ken")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen = &site.seen("/quotes.html")[0];
    let header = |name: &str| {
        seen.headers
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    assert_eq!(header("accept-language").as_deref(), Some("ru"));
    assert_eq!(header("cookie").as_deref(), Some("session=abc123"));
    assert_eq!(header("authorization").as_deref(), Some("Bearer t0ken"));
    assert!(header("user-agent").unwrap().starts_with("semclip/"));
    // Without the variable the watch is invalid, by name.
    let out = semclip(&["check", "--config", config.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("SEMCLIP_TEST_TOKEN"));
}

#[test]
fn sigterm_lets_the_check_in_flight_finish_and_record() {
    let site = Site::start("251,30");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let watch = format!(
        "url: {}\nschedule: {{every: 1h}}\nfetch: {{timeout: 3s, retries: 0}}\n",
        site.url("/silent")
    );
    setup(dir, "", &[("slow", watch)]);
    let daemon = Daemon::start(dir);
    site.wait_for("/silent", 1, Duration::from_secs(20));
    let stopping = Instant::now();
    let status = daemon.stop();
    assert_eq!(status.code(), Some(0));
    assert!(
        stopping.elapsed() >= Duration::from_secs(1),
        "it waited for the check"
    );
    let s = store(dir).status("slow").unwrap().unwrap();
    assert!(
        s.last_error
            .as_deref()
            .unwrap_or_default()
            .contains("timed out"),
        "{s:?}"
    );
    assert!(
        s.next_run.is_some(),
        "the next run was stored with the check"
    );
}

#[test]
fn a_restart_keeps_the_schedule_neither_repeating_nor_losing_a_run() {
    let site = Site::start("251,30");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let watch = |every: &str| {
        format!(
            "url: {}\nschedule: {{every: {every}}}\n",
            site.url("/quotes.html")
        )
    };
    setup(dir, "", &[("hourly", watch("1h"))]);
    let daemon = Daemon::start(dir);
    site.wait_for("/quotes.html", 1, Duration::from_secs(20));
    daemon.wait_log("watch=hourly outcome=first", Duration::from_secs(20));
    assert_eq!(daemon.stop().code(), Some(0));
    // Restarted within the hour: the run is not repeated.
    let daemon = Daemon::start(dir);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(site.seen("/quotes.html").len(), 1, "{}", daemon.log());
    assert_eq!(daemon.stop().code(), Some(0));
    // A run that fell due while the daemon was down happens once at start.
    let mut s = store(dir);
    let mut status = s.status("hourly").unwrap().unwrap();
    status.next_run = Some(std::time::SystemTime::now() - Duration::from_secs(7200));
    s.set_status(&status).unwrap();
    drop(s);
    let daemon = Daemon::start(dir);
    site.wait_for("/quotes.html", 2, Duration::from_secs(20));
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        site.seen("/quotes.html").len(),
        2,
        "once, not once per missed slot"
    );
    assert_eq!(daemon.stop().code(), Some(0));
}

#[test]
fn a_redirect_to_another_local_port_is_refused_and_the_other_watches_go_on() {
    let site = Site::start("251,30");
    let internal = Site::start("999,99");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let sneaky = format!(
        "url: {}\nschedule: {{every: 1s}}\nfetch: {{timeout: 5s, retries: 0}}\n\
         failures: {{alert_after: 1}}\n",
        site.url(&format!("/to-port-{}", internal.addr.port()))
    );
    setup(
        dir,
        "",
        &[
            ("good", quotes_watch(&site.url("/quotes.html"), "log")),
            ("sneaky", sneaky),
        ],
    );
    let daemon = Daemon::start(dir);
    daemon.wait_log(
        "refused redirect to private address",
        Duration::from_secs(20),
    );
    let n = site.seen("/quotes.html").len();
    site.wait_for("/quotes.html", n + 2, Duration::from_secs(20));
    let sneaky_tries = site
        .seen(&format!("/to-port-{}", internal.addr.port()))
        .len();
    assert!(sneaky_tries >= 2, "the refused watch keeps its schedule");
    assert_eq!(daemon.stop().code(), Some(0));
    assert!(internal.seen("/quotes.html").is_empty(), "never fetched");
    let statuses = store(dir).statuses().unwrap();
    let status = |id: &str| statuses.iter().find(|s| s.watch == id).unwrap().clone();
    let error = status("sneaky").last_error.unwrap_or_default();
    assert_eq!(
        error,
        format!(
            "refused redirect to private address 127.0.0.1 (loopback) at {}: admit it with fetch.allow_private or fetch.allow_hosts in the daemon file",
            internal.url("/quotes.html")
        )
    );
    assert_eq!(status("good").last_error, None);

    // Admitted: the same watches both succeed.
    std::fs::write(
        dir.join("semclip.yaml"),
        "database: state/semclip.db\nwatches: watches\nnotifiers:\n  log: {file: {path: alerts.jsonl}}\n\
         fetch: {allow_private: true}\n",
    )
    .unwrap();
    let config = dir.join("semclip.yaml");
    let args = ["check", "sneaky", "--config", config.to_str().unwrap()];
    let out = semclip(&args, None);
    // 1: the watch had been failing (alerted after 1), so it raises "recovered".
    assert_eq!(out.status.code(), Some(1), "{}", describe(&args, &out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("sneaky: first snapshot stored"),
        "{}",
        describe(&args, &out)
    );
    assert_eq!(internal.seen("/quotes.html").len(), 1);
}

/// A watch of the fixture site's quotes that runs once an hour: after its
/// first check, nothing is in flight.
fn idle_watch(site: &Site) -> (&'static str, String) {
    (
        "idle",
        format!(
            "url: {}\nschedule: {{every: 1h}}\n",
            site.url("/quotes.html")
        ),
    )
}

#[test]
fn an_idle_daemon_stops_at_once_on_sigterm_and_its_log_file_has_no_colour_codes() {
    let site = Site::start("251,30");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    // The server and the demo site too: their tasks are what made an idle
    // stop wait out the five-second drain. Both on ports the system picks.
    setup(
        dir,
        &format!(
            "listen: 127.0.0.1:0\nserver:\n  xslt: {}/xslt\ndemo:\n  listen: 127.0.0.1:0\n",
            env!("CARGO_MANIFEST_DIR")
        ),
        &[idle_watch(&site)],
    );
    let daemon = Daemon::start(dir);
    daemon.wait_log("watch=idle outcome=first", Duration::from_secs(20));
    // The server is up (on the port the log reports) before the stop is timed.
    let addr = daemon.addr();
    assert_ne!(addr.port(), 0);
    assert!(std::net::TcpStream::connect(addr).is_ok(), "{addr}");
    let log = daemon.log();
    let stopping = Instant::now();
    let status = daemon.stop();
    let took = stopping.elapsed();
    assert_eq!(status.code(), Some(0));
    assert!(
        took < Duration::from_secs(3),
        "an idle daemon took {took:?} to stop"
    );
    // stderr is a file here: plain text, no ANSI escape sequences.
    assert!(log.contains("INFO"), "{log}");
    assert!(
        !log.contains("\x1b["),
        "colour codes in a log file:\n{log:?}"
    );
}

#[test]
fn the_log_is_json_lines_when_asked() {
    let site = Site::start("251,30");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    setup(dir, "", &[idle_watch(&site)]);
    let daemon = Daemon::start_with_env(dir, &[("SEMCLIP_LOG_FORMAT", "json")]);
    daemon.wait_log("\"outcome\":\"first\"", Duration::from_secs(20));
    let log = daemon.log();
    let status = daemon.stop();
    assert_eq!(status.code(), Some(0));
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    assert!(
        lines
            .iter()
            .any(|l| l["level"] == "INFO" && l["fields"]["message"] == "ready"),
        "{log}"
    );
    assert!(!log.contains("\x1b["));

    // The option says the same as the variable, for any command.
    let args = [
        "validate",
        "--log-format",
        "json",
        "--config",
        "/nonexistent.yaml",
    ];
    let out = semclip(&args, None);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&args, &out));
}

#[test]
fn check_serves_the_demo_site_for_the_bundled_watches() {
    // The bundled example (semclip.yaml, watches/), moved to other ports:
    // the server's to one the system picks (`check` serves no clips); the
    // demo site's must be known beforehand, as the watches' URLs name it.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let demo = crate::harness::free_port();
    let port = |text: String| {
        text.replace("127.0.0.1:8787", &format!("127.0.0.1:{demo}"))
            .replace("127.0.0.1:8080", "127.0.0.1:0")
    };
    std::fs::write(
        dir.join("semclip.yaml"),
        port(std::fs::read_to_string(root.join("semclip.yaml")).unwrap()),
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("watches")).unwrap();
    for entry in std::fs::read_dir(root.join("watches")).unwrap().flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap();
        std::fs::write(dir.join("watches").join(entry.file_name()), port(text)).unwrap();
    }
    std::fs::create_dir_all(dir.join("xslt")).unwrap();
    for name in ["html.xsl", "rdf.xsl"] {
        std::fs::copy(root.join("xslt").join(name), dir.join("xslt").join(name)).unwrap();
    }
    let config = dir.join("semclip.yaml").display().to_string();
    let args = ["check", "--config", config.as_str()];
    let out = semclip(&args, None);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        describe(&args, &out)
    );
    for watch in ["demo-quotes", "demo-news"] {
        assert!(
            stdout.contains(&format!("{watch}: first snapshot stored")),
            "{}",
            describe(&args, &out)
        );
    }
    // The site is gone with the command.
    assert!(std::net::TcpStream::connect(("127.0.0.1", demo)).is_err());
}
