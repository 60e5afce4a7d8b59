//! Configuration: the bundled daemon file and watches load, `semclip validate`
//! names every problem as `file:line:column: field: message`, the JSON
//! Schemas in `schema/` match the raw structures and accept every bundled file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use semclip::config::schedule::Schedule;
use semclip::config::{self, Auth, NotifierConfig, Scope, SmtpSecurity};

use crate::util::root;

/// The environment the examples' `{env: ...}` secrets need.
const EXAMPLE_ENV: [(&str, &str); 7] = [
    ("SMTP_PASSWORD", "smtp-secret"),
    (
        "SLACK_WEBHOOK_URL",
        "https://hooks.slack.com/services/T0/B0/x",
    ),
    ("TELEGRAM_BOT_TOKEN", "123456:telegram-token"),
    ("PORTAL_TOKEN", "portal-token"),
    ("ADMIN_TOKEN", "admin-token"),
    ("SHOP_SESSION", "shop-session"),
    ("PORTAL_PASSWORD", "portal-password"),
];

/// Runs `semclip validate ARGS` in `dir` with extra environment variables.
fn validate(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_semclip"));
    cmd.arg("validate").args(args).current_dir(dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.env_remove("STATE_DIRECTORY");
    cmd.output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn the_bundled_daemon_file_and_watches_validate() {
    let out = validate(&root(), &[], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "ok: 2 watches");
    assert!(
        lines[1].starts_with("demo-news\tcron \"*/30 * * * * *\" in Europe/Moscow\tnext "),
        "{stdout}"
    );
    assert!(
        lines[2].starts_with("demo-quotes\tevery 10s\tnext "),
        "{stdout}"
    );
    assert_eq!(lines.len(), 3, "{stdout}");
}

#[test]
fn the_bundled_files_load_with_their_values() {
    let r = root();
    let loaded = config::load(Some(&r.join("semclip.yaml")), None).unwrap();
    let d = &loaded.daemon;
    assert_eq!(d.path.as_deref(), Some(r.join("semclip.yaml").as_path()));
    assert_eq!(d.watches_dir, r.join("watches"));
    assert_eq!(
        d.notifiers["log"],
        NotifierConfig::File {
            path: r.join("alerts.jsonl")
        }
    );
    assert_eq!(
        d.demo.as_ref().unwrap().listen,
        "127.0.0.1:8787".parse().unwrap()
    );
    assert_eq!(d.limits.concurrency, 4);
    assert_eq!(d.limits.host_spacing, Duration::from_millis(500));
    // Untouched sections keep their defaults.
    assert_eq!(d.fetch.max_body, 20 * 1024 * 1024);
    assert_eq!(d.alerts.failures_before_alert, 3);
    assert_eq!(d.retention.keep_versions, 100);

    let ids: Vec<&str> = loaded.watches.iter().map(|w| w.id.as_str()).collect();
    assert_eq!(ids, ["demo-news", "demo-quotes"]);
    let q = &loaded.watches[1];
    assert_eq!(q.file, r.join("watches/demo-quotes.yaml"));
    assert_eq!(q.url.as_str(), "http://127.0.0.1:8787/quotes.html");
    assert!(
        matches!(q.schedule, Schedule::Every { every, .. } if every == Duration::from_secs(10))
    );
    assert_eq!(q.thresholds.len(), 3);
    assert_eq!(q.thresholds[0].name, "gazp-high");
    assert_eq!(q.thresholds[0].above, Some(300.0));
    assert_eq!(q.thresholds[0].hysteresis, 1.0);
    assert!(q.thresholds[0].on_return);
    assert_eq!(q.thresholds[1].outside, Some((290.0, 310.0)));
    assert_eq!(q.thresholds[2].change_pct, Some(2.0));
    assert!(!q.thresholds[2].on_return);
    assert_eq!(q.on_change.as_ref().unwrap().notify, ["log"]);
    assert_eq!(q.failures.alert_after, 3);
    assert!(q.failures.notify.is_empty());
    assert_eq!(q.fetch.timeout, Duration::from_secs(30));
    let n = &loaded.watches[0];
    match &n.schedule {
        Schedule::Cron { tz, expr, .. } => {
            assert_eq!(*tz, chrono_tz::Europe::Moscow);
            assert_eq!(expr, "*/30 * * * * *");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        n.on_change.as_ref().unwrap().digest,
        Some(Duration::from_secs(60))
    );
}

/// The demo thresholds select one number each on the bundled quotes page.
#[test]
fn the_demo_thresholds_select_numbers_on_the_quotes_page() {
    let loaded = config::load(Some(&root().join("semclip.yaml")), None).unwrap();
    let q = loaded
        .watches
        .iter()
        .find(|w| w.id == "demo-quotes")
        .unwrap();
    let html = std::fs::read_to_string(root().join("site/quotes.html")).unwrap();
    let h = semclip::hierarchy::Hierarchy::from_html(&html, None);
    let xml =
        semclip::hierarchy::write::to_xml(&h, semclip::hierarchy::write::XmlOptions::default());
    let doc = semclip::xpath::HierarchyDoc::parse(&xml).unwrap();
    let mut values = Vec::new();
    for t in &q.thresholds {
        match doc.evaluate(&t.xpath).unwrap() {
            semclip::xpath::XPathValue::Nodes(nodes) => {
                assert_eq!(nodes.len(), 1, "{}", t.xpath);
                values.push(nodes[0].value.clone());
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(values, ["251.3", "300.15", "7012.5"]);
    for clip in q.clips.values().map(|c| &c.xpath).chain(&q.ignore) {
        assert!(!doc.select_ids(clip).unwrap().is_empty(), "{clip}");
    }
}

#[test]
fn the_examples_validate_with_their_environment() {
    let out = validate(
        &root(),
        &["--config", "examples/semclip.yaml"],
        &EXAMPLE_ENV,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let ids: Vec<&str> = stdout
        .lines()
        .skip(1)
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    assert_eq!(stdout.lines().next(), Some("ok: 4 watches"));
    assert_eq!(
        ids,
        [
            "members-report",
            "moex-shares",
            "product-price",
            "shop-price"
        ]
    );
    assert!(
        stdout.contains(
            "moex-shares\tcron \"0 */5 9-18 * * MON-FRI\" in Europe/Moscow, jitter 30s\tnext "
        ),
        "{stdout}"
    );

    // Without the environment, each missing variable is named where it is used.
    let out = validate(&root(), &["--config", "examples/semclip.yaml"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    for line in [
        "examples/semclip.yaml:26:13: smtp.password: environment variable SMTP_PASSWORD is not set",
        "examples/watches/members-report.yaml:16:17: fetch.auth.basic.password: environment variable PORTAL_PASSWORD is not set",
    ] {
        assert!(stderr.lines().any(|l| l == line), "{line}\n{stderr}");
    }
}

#[test]
fn validate_syntax_checks_the_secrets_form_and_reads_none() {
    // The examples name secrets in variables this test does not set.
    let out = validate(
        &root(),
        &["--config", "examples/semclip.yaml", "--syntax"],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(
        stdout.lines().next(),
        Some("ok: 4 watches (secrets not read)"),
        "{stdout}"
    );
    assert_eq!(stdout.lines().count(), 5, "{stdout}");

    // An unset variable and a missing file are no problem; a malformed
    // reference, an inline secret and every other problem still are.
    let dir = tree(&[
        (
            "semclip.yaml",
            "smtp:\n  host: mail.example.org\n  from: semclip@example.org\n  username: u\n  \
             password: {env: SEMCLIP_TEST_NEVER_SET}\n\
             notifiers:\n  chat: {slack: {url: {file: no-such-file}}}\n  \
             hook: {webhook: {url: \"https://h.example.org/\", secret: {env: \"\"}}}\n",
        ),
        (
            "watches/a.yaml",
            "url: https://example.org/\nschedule: {every: 1m}\nfetch:\n  auth:\n    \
             bearer: {token: hunter2}\n  cookies:\n    session: {file: \"\"}\n  headers:\n    \
             X-Key: {env: SEMCLIP_TEST_NEVER_SET}\n",
        ),
        (
            "watches/b.yaml",
            "url: https://example.org/\nschedule: {every: soon}\n\
             fetch: {auth: {basic: {username: u, password: {file: no-such-file}}}}\n",
        ),
    ]);
    let out = validate(dir.path(), &["--syntax"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    let expected = [
        "semclip.yaml:8:59: notifiers.hook.webhook.secret: an empty environment variable name: write {env: NAME}",
        "watches/a.yaml:5:21: fetch.auth.bearer.token: secrets are never inline: write {env: NAME} or {file: PATH}",
        "watches/a.yaml:7:14: fetch.cookies.session: an empty secret file path: write {file: PATH}",
        "watches/b.yaml:2:19: schedule.every: invalid duration `soon`: expected number at 0 (write e.g. 30s, 5m, 1h 30m)",
        "semclip: 4 configuration problems found",
    ];
    assert_eq!(stderr.lines().collect::<Vec<_>>(), expected, "{stderr}");

    // Without --syntax the same files need the variable and the files.
    let out = validate(dir.path(), &[], &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    for line in [
        "semclip.yaml:5:13: smtp.password: environment variable SEMCLIP_TEST_NEVER_SET is not set",
        "semclip.yaml:8:59: notifiers.hook.webhook.secret: an empty environment variable name: write {env: NAME}",
        "watches/a.yaml:9:12: fetch.headers.X-Key: environment variable SEMCLIP_TEST_NEVER_SET is not set",
    ] {
        assert!(stderr.lines().any(|l| l == line), "{line}\n{stderr}");
    }
    for part in [
        "notifiers.chat.slack.url: cannot read secret file",
        "fetch.auth.basic.password: cannot read secret file",
    ] {
        assert!(stderr.contains(part), "{part}\n{stderr}");
    }
}

/// The examples, loaded through the library where no environment is needed:
/// the webhook secret and the bearer token come from a file.
#[test]
fn example_secret_files_are_read_and_trimmed() {
    let out = validate(&root(), &["--config", "examples/semclip.yaml"], &[]);
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("webhook.key"), "{stderr}");
    let key = std::fs::read_to_string(root().join("examples/secrets/webhook.key")).unwrap();
    assert!(key.ends_with('\n'));

    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("watches")).unwrap();
    std::fs::write(dir.path().join("key"), "s3cret\n").unwrap();
    std::fs::write(
        dir.path().join("semclip.yaml"),
        "fetch: {file_roots: [/srv]}\n\
         smtp: {host: mail.example.org, security: tls, from: \"semclip <s@example.org>\"}\n\
         notifiers:\n  hook: {webhook: {url: \"https://h.example.org/x\", secret: {file: key}, headers: {X-Team: ops}}}\n  mail: {email: {to: [ops@example.org]}}\n\
         tokens:\n  t: {secret: {file: key}, scopes: [admin, read, admin]}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("watches/w.yml"),
        "url: file:///srv/page.html\nschedule: {every: 1m}\nfetch: {auth: {bearer: {token: {file: ../key}}}, max_body: 1.5KiB}\n",
    )
    .unwrap();
    let loaded = config::load(Some(&dir.path().join("semclip.yaml")), None).unwrap();
    let smtp = loaded.daemon.smtp.as_ref().unwrap();
    assert_eq!(smtp.security, SmtpSecurity::Tls);
    assert_eq!(smtp.port, 465);
    assert_eq!(smtp.timeout, Duration::from_secs(30));
    let NotifierConfig::Webhook(hook) = &loaded.daemon.notifiers["hook"] else {
        panic!("{:?}", loaded.daemon.notifiers);
    };
    let secret = hook.secret.as_ref().unwrap();
    assert_eq!(secret.expose(), "s3cret");
    assert_eq!(format!("{secret:?}"), "\"***\"");
    assert!(!format!("{loaded:?}").contains("s3cret"));
    assert_eq!(hook.timeout, Duration::from_secs(10));
    assert_eq!(hook.headers, [("X-Team".to_owned(), "ops".to_owned())]);
    assert_eq!(
        loaded.daemon.tokens["t"].scopes,
        [Scope::Read, Scope::Admin]
    );
    let w = &loaded.watches[0];
    assert_eq!(w.id, "w");
    assert_eq!(w.url.scheme(), "file");
    assert_eq!(w.fetch.max_body, 1536);
    assert!(matches!(&w.fetch.auth, Some(Auth::Bearer { token }) if token.expose() == "s3cret"));
}

/// Writes `files` (name, contents) under a fresh directory.
fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, contents) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }
    dir
}

#[test]
fn validate_names_every_problem_in_every_file() {
    let dir = tree(&[
        (
            "semclip.yaml",
            "notifiers:\n  log: {file: {path: alerts.jsonl}}\n",
        ),
        // YAML syntax error: an unclosed flow sequence.
        (
            "watches/a-syntax.yaml",
            "url: http://example.org/\nschedule: {every: 10s}\nignore: [\"//a\"\n",
        ),
        (
            "watches/b-unknown.yaml",
            "url: http://example.org/\nschedule: {every: 10s}\ntreshold: 5\n",
        ),
        (
            "watches/c-cron.yaml",
            "url: http://example.org/\nschedule:\n  cron: \"0 25 * * *\"\n",
        ),
        (
            "watches/d-tz.yaml",
            "url: http://example.org/\nschedule:\n  cron: \"0 9 * * MON-FRI\"\n  timezone: Europe/Moskow\n",
        ),
        (
            "watches/e-xpath.yaml",
            "url: http://example.org/\nschedule: {every: 1m}\nclips:\n  gazp: {xpath: \"//row[@key='GAZP'/cell\"}\n",
        ),
        (
            "watches/f-notifier.yaml",
            "url: http://example.org/\nschedule: {every: 1m}\nthresholds:\n  - name: high\n    xpath: //cell/@num\n    above: 300\n    notify: [log, ops-mail]\n",
        ),
        (
            "watches/g-inline.yaml",
            "url: https://example.org/\nschedule: {every: 1m}\nfetch:\n  auth:\n    bearer: {token: hunter2}\n",
        ),
        (
            "watches/h-secret-file.yaml",
            "url: https://example.org/\nschedule: {every: 1m}\nfetch:\n  cookies:\n    session: {file: no-such-secret}\n",
        ),
        (
            "watches/i-fine.yaml",
            "url: https://example.org/\nschedule: {every: 1m}\n",
        ),
        ("watches/notes.txt", "not a watch file"),
    ]);
    let out = validate(dir.path(), &[], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    let expected = [
        "watches/a-syntax.yaml:3:9: (syntax): unclosed bracket '['",
        "watches/b-unknown.yaml:3:1: treshold: unknown field `treshold`, expected one of id, url, title, schedule, fetch, ignore, blocked, clips, thresholds, on_change, failures, monitor, layout, session, metrics, keys (did you mean `thresholds`?)",
        "watches/c-cron.yaml:3:9: schedule.cron: invalid cron expression: Component error: Number out of bounds.",
        "watches/d-tz.yaml:4:13: schedule.timezone: unknown time zone `Europe/Moskow`: write an IANA name like Europe/Moscow or UTC",
        "watches/e-xpath.yaml:4:17: clips.gazp.xpath: invalid XPath at column 18: expected ']' to close the predicate opened at column 6",
        "watches/f-notifier.yaml:7:19: thresholds[0].notify[1]: unknown notifier `ops-mail` (the daemon file defines: log)",
        "watches/g-inline.yaml:5:21: fetch.auth.bearer.token: secrets are never inline: write {env: NAME} or {file: PATH}",
        "watches/h-secret-file.yaml:5:14: fetch.cookies.session: cannot read secret file watches/no-such-secret: no such file",
        "semclip: 8 configuration problems found",
    ];
    assert_eq!(stderr.lines().collect::<Vec<_>>(), expected, "{stderr}");
}

#[test]
fn an_unknown_key_hides_none_of_the_other_problems_of_its_file() {
    let dir = tree(&[
        (
            "semclip.yaml",
            "notifiers:\n  log: {file: {path: alerts.jsonl}}\nlisten: localhost\nretension: {keep_days: 3}\n",
        ),
        (
            "watches/a.yaml",
            "url: http://example.org/\nschedule:\n  cron: \"0 25 * * *\"\n\
             clips:\n  gazp: {xpath: \"//row[@key='GAZP'/cell\", descripton: GAZP}\n\
             thresholds:\n  - name: high\n    xpath: //cell/@num\n    above: 300\n    hysterisis: 1\n    notify: [log, ops]\n",
        ),
        (
            "watches/b.yaml",
            "url: ftp://example.org/\nschedul: {every: 1m}\nschedule: {every: soon}\nlayout:\n  max_drfit: 0.3\n  notify: [log]\n",
        ),
    ]);
    let out = validate(dir.path(), &[], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    let threshold_keys = "name, xpath, each, above, below, outside, change_pct, within, new_high, new_low, hysteresis, notify, on_return, metrics";
    let expected = [
        "semclip.yaml:3:9: listen: invalid address `localhost`: write IP:PORT, e.g. 127.0.0.1:8080".to_owned(),
        "semclip.yaml:4:1: retension: unknown field `retension`, expected one of database, database_password, watches, listen, server, smtp, notifiers, tokens, fetch, limits, alerts, retention, demo, browser, sessions (did you mean `retention`?)".to_owned(),
        "watches/a.yaml:3:9: schedule.cron: invalid cron expression: Component error: Number out of bounds.".to_owned(),
        "watches/a.yaml:5:17: clips.gazp.xpath: invalid XPath at column 18: expected ']' to close the predicate opened at column 6".to_owned(),
        "watches/a.yaml:5:43: clips.gazp.descripton: unknown field `descripton`, expected one of xpath, extract, keywords, description, public, stylesheet, cache_control, metrics (did you mean `description`?)".to_owned(),
        format!("watches/a.yaml:10:5: thresholds[0].hysterisis: unknown field `hysterisis`, expected one of {threshold_keys} (did you mean `hysteresis`?)"),
        "watches/a.yaml:11:19: thresholds[0].notify[1]: unknown notifier `ops` (the daemon file defines: log)".to_owned(),
        "watches/b.yaml:1:6: url: unsupported scheme `ftp`: use http, https or file".to_owned(),
        "watches/b.yaml:2:1: schedul: unknown field `schedul`, expected one of id, url, title, schedule, fetch, ignore, blocked, clips, thresholds, on_change, failures, monitor, layout, session, metrics, keys (did you mean `schedule`?)".to_owned(),
        "watches/b.yaml:3:19: schedule.every: invalid duration `soon`: expected number at 0 (write e.g. 30s, 5m, 1h 30m)".to_owned(),
        "watches/b.yaml:5:3: layout.max_drfit: unknown field `max_drfit`, expected one of template, max_drift, notify (did you mean `max_drift`?)".to_owned(),
        "semclip: 11 configuration problems found".to_owned(),
    ];
    assert_eq!(stderr.lines().collect::<Vec<_>>(), expected, "{stderr}");
}

#[test]
fn every_wrong_type_is_named_with_its_value_and_an_example_and_hides_nothing() {
    let dir = tree(&[
        (
            "semclip.yaml",
            "limits: {concurrency: lots}\nlisten: localhost\n",
        ),
        // Five values of the wrong type, a value validation refuses and an
        // unknown key below them.
        (
            "watches/w.yaml",
            "url: ftp://example.org/\n\
             schedule: {every: 5m, jitter: [1s]}\n\
             fetch: {retries: many, headers_cross_origin: maybe}\n\
             clips:\n  a: [//a]\n\
             thresholds:\n  - name: t\n    xpath: //a\n    above: high\n\
             ignore: []\n\
             titel: x\n",
        ),
    ]);
    let out = validate(dir.path(), &[], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    let expected = [
        "semclip.yaml:1:23: limits.concurrency: \"lots\" is not a whole number, 0 or more; write a whole number such as 3",
        "semclip.yaml:2:9: listen: invalid address `localhost`: write IP:PORT, e.g. 127.0.0.1:8080",
        "watches/w.yaml:1:6: url: unsupported scheme `ftp`: use http, https or file",
        "watches/w.yaml:2:31: schedule.jitter: a list is not text; write text",
        "watches/w.yaml:3:18: fetch.retries: \"many\" is not a whole number from 0 to 4294967295; write a whole number such as 3",
        "watches/w.yaml:3:46: fetch.headers_cross_origin: \"maybe\" is not true or false; write true or false",
        "watches/w.yaml:5:6: clips.a: a list is not a mapping; write a mapping of some of cache_control, description, extract, keywords, metrics, public, stylesheet, xpath",
        "watches/w.yaml:9:12: thresholds[0].above: \"high\" is not a number; write a number such as 300 or 2.5",
        "watches/w.yaml:11:1: titel: unknown field `titel`, expected one of id, url, title, schedule, fetch, ignore, blocked, clips, thresholds, on_change, failures, monitor, layout, session, metrics, keys (did you mean `title`?)",
        "semclip: 9 configuration problems found",
    ];
    assert_eq!(stderr.lines().collect::<Vec<_>>(), expected, "{stderr}");
}

#[test]
fn the_daemon_file_problems_come_first_with_their_paths() {
    let dir = tree(&[
        (
            "conf/daemon.yaml",
            "watches: ../w\nlisten: localhost\nsmtp:\n  host: mail.example.org\n  from: nobody\n  password: plain\n\
             notifiers:\n  hook: {webhook: {url: \"ftp://h.example.org/\", timeout: soon}}\n  mail: {email: {to: []}}\n\
             fetch: {max_body: 20 parsecs}\nlimits: {per_host: 0}\nretention: {keep_days: 0}\n",
        ),
        (
            "w/a.yaml",
            "url: https://example.org/\nschedule: {every: 1m}\non_change: {notify: [hook, mail, sms]}\n",
        ),
    ]);
    let out = validate(dir.path(), &["--config", "conf/daemon.yaml"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    let expected = [
        "conf/daemon.yaml:2:9: listen: invalid address `localhost`: write IP:PORT, e.g. 127.0.0.1:8080",
        "conf/daemon.yaml:4:3: smtp.username: a password needs a username",
        "conf/daemon.yaml:5:9: smtp.from: invalid mailbox `nobody` (Invalid input): write user@example.org or \"Name <user@example.org>\"",
        "conf/daemon.yaml:6:13: smtp.password: secrets are never inline: write {env: NAME} or {file: PATH}",
        "conf/daemon.yaml:8:25: notifiers.hook.webhook.url: unsupported scheme `ftp`: use http or https",
        "conf/daemon.yaml:8:58: notifiers.hook.webhook.timeout: invalid duration `soon`: expected number at 0 (write e.g. 30s, 5m, 1h 30m)",
        "conf/daemon.yaml:9:22: notifiers.mail.email.to: give at least one mailbox",
        "conf/daemon.yaml:10:19: fetch.max_body: invalid byte size `20 parsecs`: write a number of bytes or a number with a unit (B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)",
        "conf/daemon.yaml:11:20: limits.per_host: must be at least 1",
        "conf/daemon.yaml:12:24: retention.keep_days: must be at least 1",
        "conf/../w/a.yaml:3:34: on_change.notify[2]: unknown notifier `sms` (the daemon file defines: hook, mail)",
        "semclip: 11 configuration problems found",
    ];
    assert_eq!(stderr.lines().collect::<Vec<_>>(), expected, "{stderr}");
}

#[test]
fn watch_level_checks() {
    let dir = tree(&[
        (
            "watches/bounds.yaml",
            "id: same\nurl: https://example.org/\nschedule: {every: 500ms, timezone: UTC}\n\
             thresholds:\n  - name: t\n    xpath: \"count(//row) > 2\"\n  - name: t\n    xpath: //x/@num\n    outside: [5, 1]\n    hysteresis: -1\n    change_pct: 0\n",
        ),
        (
            "watches/dup.yaml",
            "id: same\nurl: https://example.org/\nschedule: {cron: \"0 9 * * *\", every: 1h}\n",
        ),
        (
            "watches/dup2.yaml",
            "id: same\nurl: https://example.org/\nschedule: {every: 1h}\n",
        ),
        (
            "watches/bad id.yaml",
            "url: ftp://example.org/\nschedule: {every: 1h}\n",
        ),
        ("watches/empty.yml", "# nothing here\n"),
        ("watches/missing.yaml", "url: https://example.org/\n"),
        (
            "watches/relative.yaml",
            "url: quotes.html\nschedule: {every: 1h}\n",
        ),
        (
            "watches/seven.yaml",
            "url: https://example.org/\nschedule: {cron: \"0 0 9 * * * 2030\"}\n",
        ),
        (
            "watches/type.yaml",
            "url: https://example.org/\nschedule: {every: 1h}\nthresholds:\n  - name: t\n    xpath: //a\n    above: high\n",
        ),
    ]);
    let out = validate(dir.path(), &[], &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    let expected = [
        "watches/bad id.yaml:1:1: id: the file name gives the watch id `bad id`, which may only use A-Z a-z 0-9 . _ -: rename the file or set `id`",
        "watches/bad id.yaml:1:6: url: unsupported scheme `ftp`: use http, https or file",
        "watches/bounds.yaml:3:19: schedule.every: must be at least 1s",
        "watches/bounds.yaml:3:36: schedule.timezone: a time zone applies to cron schedules only",
        "watches/bounds.yaml:5:5: thresholds[0]: give at least one bound: above, below, outside, change_pct, new_high or new_low",
        "watches/bounds.yaml:6:12: thresholds[0].xpath: a threshold XPath must give a node-set or a number, this one gives a boolean",
        "watches/bounds.yaml:7:11: thresholds[1].name: threshold name `t` is used twice in this watch",
        "watches/bounds.yaml:9:14: thresholds[1].outside: the bounds must be [low, high] with low < high, got [5, 1]",
        "watches/bounds.yaml:10:17: thresholds[1].hysteresis: must be 0 or more",
        "watches/bounds.yaml:11:17: thresholds[1].change_pct: must be greater than 0",
        "watches/dup.yaml:3:38: schedule.every: give exactly one of cron and every",
        "watches/empty.yml:1:1: (document): the watch file is empty (it needs at least url and schedule)",
        "watches/missing.yaml:1:1: schedule: missing field `schedule`",
        "watches/relative.yaml:1:6: url: invalid URL `quotes.html`: relative URL without a base (write an absolute URL: https://..., or file:///absolute/path)",
        "watches/seven.yaml:2:18: schedule.cron: a cron expression has 5 fields (minute hour day month weekday) or 6 (seconds first), this one has 7",
        "watches/type.yaml:6:12: thresholds[0].above: \"high\" is not a number; write a number such as 300 or 2.5",
        "semclip: 16 configuration problems found",
    ];
    assert_eq!(stderr.lines().collect::<Vec<_>>(), expected, "{stderr}");

    // Two valid files with one id: the second is named.
    let dir = tree(&[
        (
            "watches/a.yaml",
            "id: same\nurl: https://example.org/\nschedule: {every: 1h}\n",
        ),
        (
            "watches/b.yaml",
            "id: same\nurl: https://example.org/\nschedule: {every: 1h}\n",
        ),
    ]);
    let out = validate(dir.path(), &[], &[]);
    assert_eq!(
        text(&out.stderr).lines().next(),
        Some("watches/b.yaml:1:5: id: watch id `same` is already used by watches/a.yaml")
    );
}

#[test]
fn extract_clips_and_layout_settings_are_checked() {
    let dir = tree(&[
        (
            "watches/bad.yaml",
            "url: https://example.org/\nschedule: {every: 1h}\nmonitor: data\n\
             clips:\n  both: {xpath: //table, extract: records}\n  none: {description: nothing}\n  \
             region: {extract: region}\n  words: {extract: article, keywords: [a]}\n\
             layout: {template: \"no good\", max_drift: 1.5, notify: [nobody]}\n",
        ),
        (
            "watches/kind.yaml",
            "url: https://example.org/\nschedule: {every: 1h}\nclips:\n  kind: {extract: summary}\n",
        ),
        (
            "watches/data.yaml",
            "url: https://example.org/\nschedule: {every: 1h}\nmonitor: data\n",
        ),
        (
            "watches/good.yaml",
            "url: https://example.org/\nschedule: {every: 1h}\nmonitor: data\n\
             clips:\n  quotes: {extract: region, keywords: [Gazprom, \" Sberbank  PAO \"]}\n  \
             story: {extract: article}\n\
             thresholds:\n  - name: rows\n    xpath: \"count(/page/table[@clip='quotes']/row)\"\n    above: 10\n\
             layout: {template: shop.v2, max_drift: 0.3}\n",
        ),
    ]);
    let out = validate(dir.path(), &[], &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    for expected in [
        "clips.both: give either xpath or extract, not both",
        "clips.none: give xpath (what to select) or extract (article, records or region)",
        "clips.region.keywords: `extract: region` needs keywords",
        "clips.words.keywords: keywords belong to `extract: region` clips",
        "watches/kind.yaml:4:19: clips.kind.extract: \"summary\" is not one of article, records, region; write one of those",
        "layout.template: `no good` is not a template set name",
        "layout.max_drift: a drift in (0, 1]",
        "layout.notify",
        "watches/data.yaml:3:10: monitor: `monitor: data` needs an extract clip or layout.template to say where the data is",
    ] {
        assert!(
            lines.iter().any(|l| l.contains(expected)),
            "missing `{expected}` in:\n{stderr}"
        );
    }
    assert!(
        !stderr.contains("good.yaml"),
        "the valid watch has no problem: {stderr}"
    );
}

#[test]
fn browser_render_options_are_checked() {
    let dir = tree(&[
        (
            "semclip.yaml",
            "watches: watches\nbrowser: {max_pages: 0, memory_cap: lots}\n",
        ),
        (
            "watches/engine.yaml",
            "url: https://example.org/\nschedule: {every: 1h}\nfetch: {render: chrome}\n",
        ),
        (
            "watches/http.yaml",
            "url: https://example.org/\nschedule: {every: 1h}\nfetch: {wait_for: \"#q\", block: [images]}\n",
        ),
        (
            "watches/options.yaml",
            "url: https://example.org/\nschedule: {every: 1h}\n\
             fetch: {render: browser, wait_for: \"//td[\", viewport: 1280, block: [images, scripts]}\n",
        ),
        (
            "watches/good.yaml",
            "url: https://example.org/\nschedule: {every: 1h}\n\
             fetch: {render: browser, wait_for: \"#quotes td\", viewport: 390x844, block: [fonts], timeout: 20s}\n",
        ),
        (
            "watches/tree.yaml",
            "url: https://example.org/\nschedule: {every: 1h}\n\
             fetch: {render: browser, wait_for: {hierarchy: \"count(//table[@label='Shares']/row) > 2\"}}\n",
        ),
        (
            "watches/tree-bad.yaml",
            "url: https://example.org/\nschedule: {every: 1h}\n\
             fetch: {render: browser, wait_for: {hierarchy: \"//row[\"}}\n",
        ),
        (
            "watches/tree-form.yaml",
            "url: https://example.org/\nschedule: {every: 1h}\n\
             fetch: {render: browser, wait_for: {css: \"#q\"}}\n",
        ),
    ]);
    let out = validate(dir.path(), &[], &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    for expected in [
        "semclip.yaml:2:22: browser.max_pages: ",
        "semclip.yaml:2:37: browser.memory_cap: invalid byte size `lots`",
        "watches/engine.yaml:3:17: fetch.render: unknown render `chrome`: expected one of http, browser",
        "watches/http.yaml:3:19: fetch.wait_for: only with `render: browser`",
        "watches/http.yaml:3:32: fetch.block: only with `render: browser`",
        "watches/options.yaml:3:36: fetch.wait_for: invalid XPath at column 6",
        "watches/options.yaml:3:55: fetch.viewport: invalid viewport `1280`: expected WIDTHxHEIGHT",
        "watches/options.yaml:3:77: fetch.block[1]: unknown resource `scripts`: expected one of images, fonts, media",
    ] {
        assert!(
            lines.iter().any(|l| l.contains(expected)),
            "missing `{expected}` in:\n{stderr}"
        );
    }
    // A hierarchy `wait_for` is an XPath compiled like any other; its
    // map takes only `hierarchy`.
    let line = |file: &str| {
        lines
            .iter()
            .find(|l| l.starts_with(file))
            .copied()
            .unwrap_or_default()
    };
    let bad = line("watches/tree-bad.yaml:3:");
    assert!(
        bad.contains("fetch.wait_for: invalid XPath at column"),
        "{stderr}"
    );
    let form = line("watches/tree-form.yaml:3:");
    assert!(
        form.contains("unknown field `css`, expected `hierarchy`"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("good.yaml") && !stderr.contains("watches/tree.yaml"),
        "the valid watches have no problem: {stderr}"
    );
}

#[test]
fn a_missing_watches_directory_is_a_problem() {
    let dir = tree(&[("semclip.yaml", "watches: nowhere\n")]);
    let out = validate(dir.path(), &[], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr).lines().next(),
        Some("semclip.yaml:1:10: watches: the watches directory nowhere does not exist")
    );
    // No daemon file, no watches/ directory: the defaults name it.
    let dir = tempfile::tempdir().unwrap();
    let out = validate(dir.path(), &[], &[]);
    assert_eq!(
        text(&out.stderr).lines().next(),
        Some("watches: watches: the watches directory watches does not exist")
    );
    // An empty directory is fine.
    std::fs::create_dir(dir.path().join("watches")).unwrap();
    let out = validate(dir.path(), &[], &[]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "ok: 0 watches\n");
}

#[test]
fn load_watches_checks_against_a_loaded_daemon() {
    let dir = tree(&[
        (
            "semclip.yaml",
            "notifiers:\n  log: {file: {path: a.jsonl}}\nalerts: {failures_before_alert: 7}\nfetch: {retries: 5, proxy: \"socks5://127.0.0.1:1080\"}\n",
        ),
        (
            "watches/b.yaml",
            "url: https://example.org/\nschedule: {every: 1h}\nfetch: {retries: 0}\nfailures: {notify: [log]}\n",
        ),
        (
            "watches/a.yaml",
            "id: zz\nurl: https://example.org/\nschedule: {every: 1h}\n",
        ),
    ]);
    let daemon = config::load_daemon(&dir.path().join("semclip.yaml")).unwrap();
    let watches = config::load_watches(&dir.path().join("watches"), &daemon).unwrap();
    let ids: Vec<&str> = watches.iter().map(|w| w.id.as_str()).collect();
    assert_eq!(ids, ["b", "zz"]);
    assert_eq!(watches[0].fetch.retries, 0);
    assert_eq!(watches[1].fetch.retries, 5);
    assert_eq!(
        watches[1].fetch.proxy.as_deref(),
        Some("socks5://127.0.0.1:1080")
    );
    assert_eq!(watches[0].failures.alert_after, 7);
    assert_eq!(watches[0].failures.notify, ["log"]);

    std::fs::write(
        dir.path().join("watches/c.yaml"),
        "url: https://example.org/\nschedule: {every: 1h}\non_change: {notify: [mail]}\n",
    )
    .unwrap();
    let errs = config::load_watches(&dir.path().join("watches"), &daemon).unwrap_err();
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].file, dir.path().join("watches/c.yaml"));
    assert_eq!((errs[0].line, errs[0].column), (3, 22));
    assert_eq!(errs[0].path, "on_change.notify[0]");
}

/// A header value may be a secret, like a cookie's: read from its file,
/// never written inline in the watch; headers stay with the watch's origin
/// unless it says otherwise.
#[test]
fn header_values_may_come_from_secrets() {
    let dir = tree(&[
        (
            "semclip.yaml",
            "notifiers:\n  log: {file: {path: a.jsonl}}\n",
        ),
        ("api.key", "k3y-from-file\n"),
        (
            "watches/a.yaml",
            "url: https://api.example.org/\nschedule: {every: 1h}\n\
             fetch:\n  headers: {X-Api-Key: {file: ../api.key}, X-Team: ops}\n",
        ),
        (
            "watches/b.yaml",
            "url: https://api.example.org/\nschedule: {every: 1h}\n\
             fetch: {headers: {X-Team: ops}, headers_cross_origin: true}\n",
        ),
    ]);
    let daemon = config::load_daemon(&dir.path().join("semclip.yaml")).unwrap();
    let watches = config::load_watches(&dir.path().join("watches"), &daemon).unwrap();
    let mut headers = watches[0].fetch.headers.clone();
    headers.sort();
    assert_eq!(
        headers,
        [
            ("X-Api-Key".to_owned(), "k3y-from-file".to_owned()),
            ("X-Team".to_owned(), "ops".to_owned())
        ]
    );
    assert!(!watches[0].fetch.headers_cross_origin);
    assert!(watches[1].fetch.headers_cross_origin);

    std::fs::write(
        dir.path().join("watches/c.yaml"),
        "url: https://api.example.org/\nschedule: {every: 1h}\n\
         fetch: {headers: {X-Api-Key: {env: SEMCLIP_TEST_NO_SUCH_VARIABLE}}}\n",
    )
    .unwrap();
    let errs = config::load_watches(&dir.path().join("watches"), &daemon).unwrap_err();
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].path, "fetch.headers.X-Api-Key");
    assert!(
        errs[0].message.contains("SEMCLIP_TEST_NO_SUCH_VARIABLE"),
        "{errs:?}"
    );
}

// ---------------------------------------------------------------- schemas

/// The schema files, regenerated from the raw structures.
fn schemas() -> [(PathBuf, serde_json::Value); 2] {
    [
        (
            root().join("schema/daemon.schema.json"),
            config::daemon_schema(),
        ),
        (
            root().join("schema/watch.schema.json"),
            config::watch_schema(),
        ),
    ]
}

#[test]
fn the_schema_files_match_the_raw_structures() {
    let bless = std::env::var_os("SEMCLIP_BLESS").is_some();
    for (path, schema) in schemas() {
        let fresh = serde_json::to_string_pretty(&schema).unwrap() + "\n";
        if bless {
            std::fs::write(&path, &fresh).unwrap();
            continue;
        }
        let shipped = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            shipped == fresh,
            "{} is out of date with src/config/raw.rs: regenerate it with\n  SEMCLIP_BLESS=1 cargo test --test it config::the_schema_files",
            path.display()
        );
    }
}

/// A YAML file as JSON.
fn yaml_as_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_bundled_file_is_valid_against_its_schema() {
    let [(_, daemon), (_, watch)] = schemas();
    let daemon = jsonschema::validator_for(&daemon).unwrap();
    let watch = jsonschema::validator_for(&watch).unwrap();
    let r = root();
    let mut checked = 0;
    for file in [r.join("semclip.yaml"), r.join("examples/semclip.yaml")] {
        let errors: Vec<String> = daemon
            .iter_errors(&yaml_as_json(&file))
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", file.display());
        checked += 1;
    }
    for dir in ["watches", "examples/watches"] {
        for file in yaml_files(&r.join(dir)) {
            let errors: Vec<String> = watch
                .iter_errors(&yaml_as_json(&file))
                .map(|e| e.to_string())
                .collect();
            assert!(errors.is_empty(), "{}: {errors:?}", file.display());
            checked += 1;
        }
    }
    assert_eq!(checked, 8);

    // The schema rejects what the loader rejects: unknown keys, inline secrets.
    let bad: serde_json::Value =
        serde_saphyr::from_str("url: https://example.org/\nschedule: {every: 1m}\ntreshold: 5\n")
            .unwrap();
    assert!(!watch.is_valid(&bad));
    let inline: serde_json::Value = serde_saphyr::from_str(
        "url: https://example.org/\nschedule: {every: 1m}\nfetch: {auth: {bearer: {token: hunter2}}}\n",
    )
    .unwrap();
    assert!(!watch.is_valid(&inline));
    let ok: serde_json::Value = serde_saphyr::from_str(
        "url: https://example.org/\nschedule: {every: 1m}\nfetch: {auth: {bearer: {token: {env: T}}}, max_body: 5MiB}\n",
    )
    .unwrap();
    assert!(watch.is_valid(&ok));
}

#[test]
fn server_settings_and_clips_are_checked() {
    let dir = tree(&[
        (
            "semclip.yaml",
            "listen: 127.0.0.1:8080\nserver:\n  public_url: \"ftp://x.example.org/\"\n  xslt: nowhere\n  \
             cors_origins: [\"https://portal.example.org/path\", \"*\", \"https://ok.example.org\"]\n  \
             max_in_flight: 0\n  cache_control: \"\"\n",
        ),
        (
            "watches/a.yaml",
            "url: https://example.org/\nschedule: {every: 1m}\nclips:\n  \"bad name\": {xpath: \"//table\"}\n  \
             ok: {xpath: \"//table\", stylesheet: ../evil.xsl}\n  two: {xpath: \"//row\", stylesheet: missing.xsl}\n",
        ),
    ]);
    let out = validate(dir.path(), &["--config", "semclip.yaml"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    // Paths print as given, relative to the daemon file's directory (the cwd here).
    let xslt = Path::new("nowhere");
    let expected = [
        "semclip.yaml:3:15: server.public_url: use an http or https URL without query or fragment".to_owned(),
        format!(
            "semclip.yaml:4:9: server.xslt: no html.xsl in the stylesheet directory {}: set server.xslt to semclip's xslt/ directory",
            xslt.display()
        ),
        format!(
            "semclip.yaml:4:9: server.xslt: no rdf.xsl in the stylesheet directory {}: set server.xslt to semclip's xslt/ directory",
            xslt.display()
        ),
        "semclip.yaml:5:18: server.cors_origins[0]: `https://portal.example.org/path` is not an origin: write SCHEME://HOST[:PORT] (no path), or \"*\"".to_owned(),
        "semclip.yaml:6:18: server.max_in_flight: must be at least 1".to_owned(),
        "semclip.yaml:7:18: server.cache_control: invalid header value: only visible ASCII, spaces and tabs".to_owned(),
    ];
    for line in &expected {
        assert!(
            stderr.lines().any(|l| l == line),
            "missing: {line}\n{stderr}"
        );
    }
    assert!(
        stderr.contains("clips.bad name: clip name `bad name` may only use A-Z a-z 0-9 . _ -"),
        "{stderr}"
    );
    assert!(
        stderr.contains("clips.ok.stylesheet: `../evil.xsl` is not a stylesheet name"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "clips.two.stylesheet: no stylesheet `missing.xsl` in {}",
            xslt.display()
        )),
        "{stderr}"
    );
}

// ------------------------------------------------------------ the fence

#[test]
fn a_public_file_clip_outside_the_file_roots_is_refused_at_validation() {
    let dir = tree(&[
        ("semclip.yaml", "watches: watches\n"),
        ("pages/ok.html", "<p>fine</p>"),
        (
            "watches/a-shadow.yaml",
            "url: file:///etc/shadow\nschedule: {every: 1m}\nclips:\n  all: {xpath: /page, public: true}\n",
        ),
        (
            "watches/b-environ.yaml",
            "url: file:///proc/self/environ\nschedule: {every: 1m}\n",
        ),
        (
            "watches/c-inside.yaml",
            "url: file://DIR/pages/ok.html\nschedule: {every: 1m}\nclips:\n  all: {xpath: /page, public: true}\n",
        ),
        (
            "watches/d-dotdot.yaml",
            "url: file://DIR/pages/..%2F..%2Fetc/passwd\nschedule: {every: 1m}\n",
        ),
    ]);
    let d = dir.path().display().to_string();
    for name in ["c-inside", "d-dotdot"] {
        let path = dir.path().join(format!("watches/{name}.yaml"));
        let text = std::fs::read_to_string(&path).unwrap().replace("DIR", &d);
        std::fs::write(&path, text).unwrap();
    }
    // A symlink under the root that leads out of it.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("pages/link.html")).unwrap();
        std::fs::write(
            dir.path().join("watches/e-link.yaml"),
            format!("url: file://{d}/pages/link.html\nschedule: {{every: 1m}}\n"),
        )
        .unwrap();
    }
    let out = validate(dir.path(), &[], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines[0],
        format!(
            "watches/a-shadow.yaml:1:6: url: `/etc/shadow` is outside the file roots ({}): add a directory holding it to fetch.file_roots in the daemon file (clip `all` would serve it to anyone)",
            dir.path().display()
        ),
        "{stderr}"
    );
    assert!(
        lines[1].starts_with(
            "watches/b-environ.yaml:1:6: url: `/proc/self/environ` is outside the file roots"
        ),
        "{stderr}"
    );
    assert!(
        lines[2].starts_with("watches/d-dotdot.yaml:1:6: url: ")
            && lines[2].contains("has a `..` component"),
        "{stderr}"
    );
    #[cfg(unix)]
    assert!(
        lines[3].starts_with(&format!(
            "watches/e-link.yaml:1:6: url: `{d}/pages/link.html` is outside the file roots"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("c-inside"), "{stderr}");

    // Configured roots, relative to the daemon file: the inside watch alone
    // is fine, and `[]` refuses every file watch.
    for name in ["a-shadow", "b-environ", "d-dotdot", "e-link"] {
        let _ = std::fs::remove_file(dir.path().join(format!("watches/{name}.yaml")));
    }
    std::fs::write(
        dir.path().join("semclip.yaml"),
        "watches: watches\nfetch: {file_roots: [pages]}\n",
    )
    .unwrap();
    let out = validate(dir.path(), &[], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    std::fs::write(
        dir.path().join("semclip.yaml"),
        "watches: watches\nfetch: {file_roots: []}\n",
    )
    .unwrap();
    let out = validate(dir.path(), &[], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("is outside the file roots (none configured)"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn fence_settings_are_read_and_checked() {
    let dir = tree(&[
        (
            "semclip.yaml",
            "fetch:\n  allow_private: true\n  allow_hosts: [wiki.corp, \"10.0.0.0/8\", \"127.0.0.1:8787\", \"10.0.0.0/40\", \"a b\"]\n  file_roots: [pages, /srv, \"\"]\n",
        ),
        (
            "watches/w.yaml",
            "url: http://169.254.169.254/\nschedule: {every: 1m}\n",
        ),
    ]);
    let out = validate(dir.path(), &[], &[]);
    let stderr = text(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines[..3],
        [
            "semclip.yaml:3:60: fetch.allow_hosts[3]: `10.0.0.0/40` has a bad prefix length: write a host name, HOST:PORT, an IP address, IP:PORT or a CIDR network like 10.0.0.0/8",
            "semclip.yaml:3:75: fetch.allow_hosts[4]: `a b` is not a host name: write a host name, HOST:PORT, an IP address, IP:PORT or a CIDR network like 10.0.0.0/8",
            "semclip.yaml:4:29: fetch.file_roots[2]: must not be empty",
        ],
        "{stderr}"
    );
    std::fs::write(
        dir.path().join("semclip.yaml"),
        "fetch:\n  allow_private: true\n  allow_hosts: [wiki.corp, \"10.0.0.0/8\", \"127.0.0.1:8787\"]\n  file_roots: [pages, /srv]\n",
    )
    .unwrap();
    let loaded = config::load(Some(&dir.path().join("semclip.yaml")), None).unwrap();
    let fence = loaded.daemon.fence();
    assert!(fence.allow_private);
    assert!(fence.trust_watch_urls);
    assert_eq!(
        fence
            .allow_hosts
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        ["wiki.corp", "10.0.0.0/8", "127.0.0.1:8787"]
    );
    assert_eq!(
        fence.file_roots,
        [dir.path().join("pages"), PathBuf::from("/srv")]
    );
    // The default root is the watches directory's parent.
    std::fs::write(dir.path().join("semclip.yaml"), "watches: watches\n").unwrap();
    let loaded = config::load(Some(&dir.path().join("semclip.yaml")), None).unwrap();
    assert_eq!(loaded.daemon.fence().file_roots, [dir.path().to_path_buf()]);
    assert!(!loaded.daemon.fence().allow_private);

    // Untrusted watch URLs: a literal internal address is refused at once.
    std::fs::write(
        dir.path().join("semclip.yaml"),
        "fetch: {trust_watch_urls: false}\n",
    )
    .unwrap();
    let out = validate(dir.path(), &[], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr).lines().next().unwrap(),
        "watches/w.yaml:1:6: url: refused watch URL at private address 169.254.169.254 (link-local, cloud metadata) at http://169.254.169.254/: admit it with fetch.allow_private or fetch.allow_hosts in the daemon file"
    );
}

#[test]
fn oversized_and_special_secret_files_are_clear_errors_and_never_hang() {
    let dir = tree(&[
        (
            "semclip.yaml",
            "tokens:\n  big: {secret: {file: big.key}, scopes: [read]}\n  zero: {secret: {file: /dev/zero}, scopes: [read]}\n  fifo: {secret: {file: fifo.key}, scopes: [read]}\n  dir: {secret: {file: watches}, scopes: [read]}\n  ok: {secret: {file: ok.key}, scopes: [read]}\n  environ: {secret: {file: /proc/self/environ}, scopes: [read]}\n  linked: {secret: {file: linked.key}, scopes: [read]}\n",
        ),
        ("big.key", &"k".repeat(64 * 1024 + 1)),
        ("ok.key", &"k".repeat(64 * 1024)),
        (
            "watches/w.yaml",
            "url: https://example.org/\nschedule: {every: 1m}\n",
        ),
    ]);
    let made = Command::new("mkfifo")
        .arg(dir.path().join("fifo.key"))
        .status()
        .unwrap();
    assert!(made.success());
    // A link to a kernel file is judged by where it leads.
    std::os::unix::fs::symlink("/proc/self/environ", dir.path().join("linked.key")).unwrap();
    // A FIFO nobody writes to: a blocking open would wait forever.
    let mut child = Command::new(env!("CARGO_BIN_EXE_semclip"))
        .arg("validate")
        .current_dir(dir.path())
        .env_remove("STATE_DIRECTORY")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(20) {
            child.kill().unwrap();
            panic!("validate hangs on a FIFO secret");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr.lines().collect::<Vec<_>>(),
        [
            "semclip.yaml:2:17: tokens.big.secret: cannot read secret file big.key: larger than 64 KiB",
            "semclip.yaml:3:18: tokens.zero.secret: cannot read secret file /dev/zero: a character device, not a regular file",
            "semclip.yaml:4:18: tokens.fifo.secret: cannot read secret file fifo.key: a FIFO, not a regular file",
            "semclip.yaml:5:17: tokens.dir.secret: cannot read secret file watches: a directory, not a regular file",
            "semclip.yaml:7:21: tokens.environ.secret: cannot read secret file /proc/self/environ: a kernel file (under /proc), not a secret",
            "semclip.yaml:8:20: tokens.linked.secret: cannot read secret file linked.key: a kernel file (under /proc), not a secret",
            "semclip: 6 configuration problems found",
        ],
        "{stderr}"
    );
}

#[test]
fn database_takes_a_path_or_a_postgres_url_and_refuses_other_urls() {
    use semclip::store::Database;
    let load = |daemon: &str| {
        let dir = tree(&[("semclip.yaml", daemon), ("pw", "hunter2\n")]);
        let loaded = config::load_daemon(&dir.path().join("semclip.yaml"));
        (dir, loaded)
    };

    let (dir, loaded) = load("database: state/x.db\n");
    assert_eq!(
        loaded.unwrap().database,
        Database::Sqlite(dir.path().join("state/x.db"))
    );

    let (_dir, loaded) =
        load("database: postgres://semclip@db.example/semclip\ndatabase_password: {file: pw}\n");
    let daemon = loaded.unwrap();
    let Database::Postgres(url) = &daemon.database else {
        panic!("{:?}", daemon.database)
    };
    assert!(!url.tls());
    assert_eq!(
        daemon.database.to_string(),
        "postgres://semclip@db.example/semclip"
    );
    let shown = format!("{daemon:?}");
    assert!(
        !shown.contains("hunter2") && shown.contains("***"),
        "{shown}"
    );

    for (daemon, says) in [
        (
            "database: mysql://u@db/semclip\n",
            "semclip.yaml:1:11: database: `mysql://` URLs are not supported",
        ),
        (
            "database: postgres://u:hunter2@db/semclip\n",
            "semclip.yaml:1:11: database: the URL holds a password: secrets are never inline",
        ),
        (
            "database: x.db\ndatabase_password: {file: pw}\n",
            "semclip.yaml:2:20: database_password: only a PostgreSQL database",
        ),
    ] {
        let (_dir, loaded) = load(daemon);
        let diags = loaded.unwrap_err();
        let text: Vec<String> = diags.iter().map(ToString::to_string).collect();
        assert!(text.iter().any(|d| d.contains(says)), "{daemon}: {text:#?}");
        assert!(!text.iter().any(|d| d.contains("hunter2")), "{text:#?}");
    }
}

#[test]
fn browser_login_steps_are_checked_and_never_print_their_values() {
    let dir = tree(&[
        (
            "semclip.yaml",
            "sessions:\n  shop:\n    login:\n      url: https://shop.example/sign-in\n      \
             steps:\n        - fill: {selector: \"#user\", value: ann}\n        \
             - fill: {selector: \"//input[@type='password']\", value: {file: pw.txt}}\n        \
             - click: \"#go\"\n        - wait_for: \"#orders\"\n      \
             logged_out: [\"//form\"]\n  \
             both:\n    login:\n      url: https://shop.example/\n      fields: {a: b}\n      \
             steps: [{click: \"#go\"}]\n      logged_out: [\"//form\"]\n  \
             bad:\n    login:\n      url: https://shop.example/\n      \
             steps: [{wait_for: \"//input[\"}, {click: \"\"}]\n      logged_out: [\"//form\"]\n",
        ),
        ("pw.txt", "s3cret-step\n"),
        (
            "watches/a.yaml",
            "url: https://shop.example/account\nschedule: {every: 1m}\n",
        ),
    ]);
    let Err(errors) = semclip::config::load(Some(&dir.path().join("semclip.yaml")), None) else {
        panic!("both and bad are refused");
    };
    let shown: Vec<String> = errors.iter().map(|d| d.to_string()).collect();
    let shown = shown.join("\n");
    assert!(
        shown.contains("sessions.both.login.steps: a login has either fields (a form posted) or steps (in the browser), not both"),
        "{shown}"
    );
    assert!(shown.contains("sessions.bad.login.steps[0]"), "{shown}");
    assert!(
        shown.contains("sessions.bad.login.steps[1]: an empty selector"),
        "{shown}"
    );
    assert_eq!(shown.lines().count(), 3, "{shown}");

    std::fs::write(
        dir.path().join("semclip.yaml"),
        "sessions:\n  shop:\n    login:\n      url: https://shop.example/sign-in\n      \
         steps:\n        - fill: {selector: \"#user\", value: ann}\n        \
         - fill: {selector: \"//input[@type='password']\", value: {file: pw.txt}}\n        \
         - click: \"#go\"\n        - wait_for: \"#orders\"\n      \
         logged_out: [\"//form\"]\n",
    )
    .unwrap();
    let loaded = semclip::config::load(Some(&dir.path().join("semclip.yaml")), None)
        .unwrap_or_else(|d| panic!("{d:#?}"));
    let login = loaded.daemon.sessions["shop"].login.as_ref().unwrap();
    use semclip::page::browser::{Step, WaitFor};
    let semclip::config::LoginHow::Steps { url, steps } = &login.how else {
        panic!("browser steps: {login:?}");
    };
    assert_eq!(url.as_str(), "https://shop.example/sign-in");
    assert_eq!(
        steps,
        &[
            Step::Fill {
                selector: WaitFor::Css("#user".into()),
                value: "ann".into()
            },
            Step::Fill {
                selector: WaitFor::XPath("//input[@type='password']".into()),
                value: "s3cret-step".into()
            },
            Step::Click(WaitFor::Css("#go".into())),
            Step::WaitFor(WaitFor::Css("#orders".into())),
        ]
    );
    let shown = format!("{:?} {:#?}", loaded.daemon, login);
    assert!(
        !shown.contains("s3cret-step") && !shown.contains("\"ann\""),
        "{shown}"
    );
}

#[test]
fn sessions_and_their_logins_are_checked_and_never_print_their_secrets() {
    let dir = tree(&[
        (
            "semclip.yaml",
            "sessions:\n  shop:\n    login:\n      url: https://shop.example/login\n      \
             fields: {user: ann, password: {env: SEMCLIP_TEST_SHOP_PASSWORD}}\n      \
             logged_out: [\"//form[@id='login']\"]\n  \
             jar-only: {}\n  \
             \"bad name\": {}\n  \
             broken:\n    login:\n      url: ftp://shop.example/\n      \
             fields: {password: {env: SEMCLIP_TEST_UNSET_PASSWORD}}\n      logged_out: []\n",
        ),
        (
            "watches/a.yaml",
            "url: https://shop.example/account\nschedule: {every: 1m}\nsession: shop\n",
        ),
        (
            "watches/b.yaml",
            "url: https://shop.example/other\nschedule: {every: 1m}\nsession: shpo\n",
        ),
    ]);
    let out = validate(
        dir.path(),
        &[],
        &[("SEMCLIP_TEST_SHOP_PASSWORD", "s3cret-pass")],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    let expected = [
        "semclip.yaml:8:15: sessions.bad name: session name `bad name` may only use A-Z a-z 0-9 . _ - (at least one)",
        "semclip.yaml:11:12: sessions.broken.login.url: unsupported scheme `ftp`: a login is posted over http or https",
        "semclip.yaml:13:19: sessions.broken.login.logged_out: at least one XPath is needed: the login runs only when the page shows one",
        "watches/b.yaml:3:10: session: unknown session `shpo` (declared sessions: jar-only, shop)",
    ];
    for line in expected {
        assert!(stderr.contains(line), "missing {line:?} in:\n{stderr}");
    }
    assert!(
        stderr.contains("sessions.broken.login.fields.password: environment variable SEMCLIP_TEST_UNSET_PASSWORD is not set"),
        "{stderr}"
    );
    assert!(!stderr.contains("s3cret-pass"), "{stderr}");

    // Valid: loaded with the secret read, which no Debug output shows.
    let dir = tree(&[
        (
            "semclip.yaml",
            "sessions:\n  shop:\n    login:\n      url: https://shop.example/login\n      \
             fields: {user: ann, password: {file: pw.txt}}\n      \
             logged_out: [\"//form[@id='login']\"]\n",
        ),
        ("pw.txt", "s3cret-pass\n"),
        (
            "watches/a.yaml",
            "url: https://shop.example/account\nschedule: {every: 1m}\nsession: shop\n",
        ),
    ]);
    let loaded = semclip::config::load(Some(&dir.path().join("semclip.yaml")), None)
        .unwrap_or_else(|d| panic!("{d:#?}"));
    let login = loaded.daemon.sessions["shop"].login.as_ref().unwrap();
    let semclip::config::LoginHow::Form(form) = &login.how else {
        panic!("a form login: {login:?}");
    };
    assert_eq!(form.body(), "password=s3cret-pass&user=ann");
    assert_eq!(login.logged_out, ["//form[@id='login']"]);
    assert_eq!(loaded.watches[0].session.as_deref(), Some("shop"));
    let shown = format!("{:?} {:#?}", loaded.daemon, loaded.watches);
    assert!(!shown.contains("s3cret-pass"), "{shown}");
}
