//! Alerts that carry their data (issue 37), end to end: the real daemon
//! checks a local quote page; a changed cell of a keyed table reaches a
//! webhook receiver as data (record key, column, values, node ids,
//! numbers) with a link; the link opens the check's change view on the
//! daemon's own server; and the log names the alert's kind as the payload
//! does and shows its change lines.

use std::time::Duration;

use crate::daemon::{Daemon, runtime, setup, wait_until};
use crate::fixture::Site;
use crate::harness::WebhookReceiver;
use crate::serve::{Client, repo_xslt};

/// The daemon's `server.public_url` here (links name it; the test reaches
/// the server on loopback and follows the link's path).
const PUBLIC: &str = "https://semclip.example.org/base";

#[test]
fn a_changed_cell_reaches_the_webhook_as_data_with_a_link_to_its_change_view() {
    let rt = runtime();
    let hook = rt.block_on(WebhookReceiver::start(None));
    let site = Site::start("251,30");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    // `setup` ends its daemon file inside `notifiers:`: the hook goes on
    // that list.
    setup(
        dir,
        &format!(
            "  hook: {{webhook: {{url: \"{}\", timeout: 5s}}}}\n\
             listen: 127.0.0.1:0\nserver:\n  xslt: {}\n  public_url: {PUBLIC}/\n",
            hook.url(),
            repo_xslt()
        ),
        &[(
            "quotes",
            format!(
                "url: {}\nschedule: {{every: 1s}}\nfetch: {{timeout: 5s, retries: 0}}\n\
                 on_change: {{notify: [hook]}}\n",
                site.url("/quotes.html")
            ),
        )],
    );
    let daemon = Daemon::start(dir);
    daemon.wait_log("outcome=first", Duration::from_secs(20));
    site.set_price("268,40");
    wait_until("a webhook call", Duration::from_secs(20), || {
        !hook.requests().is_empty()
    });

    let body = hook.requests()[0].json();
    let alert = &body["alerts"][0];
    assert_eq!(alert["kind"], "changed", "{body:#}");
    let changes = alert["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{body:#}");
    let cell = &changes[0];
    assert_eq!(cell["kind"], "update", "{cell:#}");
    assert_eq!(cell["key"], "GAZP", "{cell:#}");
    assert_eq!(cell["column"], "Last", "{cell:#}");
    assert_eq!(cell["old"], "251,30", "{cell:#}");
    assert_eq!(cell["new"], "268,40", "{cell:#}");
    assert_eq!(cell["old_num"], 251.3, "{cell:#}");
    assert_eq!(cell["new_num"], 268.4, "{cell:#}");
    for side in ["old_xpath", "new_xpath"] {
        let xpath = cell[side].as_str().unwrap_or_default();
        assert!(xpath.contains("[@key='GAZP']"), "{side}: {cell:#}");
    }
    // The words stay as they were.
    assert!(
        cell["text"]
            .as_str()
            .is_some_and(|t| t.contains("251,30 -> 268,40")),
        "{cell:#}"
    );
    assert!(
        cell["path"]
            .as_str()
            .is_some_and(|p| p.ends_with("GAZP / Last"))
    );

    // The link is the check's change view, and it opens there.
    let link = alert["link"].as_str().expect("a link");
    let path = link.strip_prefix(PUBLIC).expect("under the public URL");
    assert!(path.starts_with("/status/quotes/changes/at/"), "{link}");
    let page = Client::new(daemon.port()).get(path, &[]);
    assert_eq!(page.status, 200, "{link}: {}", page.body);
    assert!(
        page.body.contains("251,30") && page.body.contains("268,40"),
        "{}",
        page.body
    );
    // A time no check was made at is no page.
    let none = Client::new(daemon.port()).get("/status/quotes/changes/at/12", &[]);
    assert_eq!(none.status, 404, "{}", none.body);

    // The log: the payload's kind, and the change lines.
    let log = daemon.log();
    assert!(
        log.lines()
            .any(|l| l.contains("alert raised") && l.contains("kind=changed")),
        "{log}"
    );
    assert!(
        log.lines()
            .any(|l| l.contains("alert change") && l.contains("251,30 -> 268,40")),
        "{log}"
    );
}
