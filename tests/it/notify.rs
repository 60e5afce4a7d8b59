//! Notifications against real servers on loopback: SMTP (aiosmtpd through
//! `tests/smtp_server.py`), an HTTP receiver (axum) and files.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use semclip::config::{NotifierConfig, Secret, SmtpConfig, SmtpSecurity, WebhookConfig};
use semclip::notify::{
    Alert, AlertKind, ChangeLine, DeliveryError, Notifier, NotifyError, PAYLOAD_VERSION,
    ThresholdAlert,
};

use mail_parser::MimeHeaders;

use crate::harness::{Reply, SmtpServer, WebhookReceiver, free_port};

/// The one place tests make a secret (the config module resolves real ones).
fn secret(value: &str) -> Secret {
    Secret::new(value)
}

pub(crate) fn threshold_alert(id: &str) -> Alert {
    Alert {
        id: id.to_owned(),
        kind: AlertKind::ThresholdCrossed,
        watch: "gazp".to_owned(),
        watch_title: Some("Moscow quotes".to_owned()),
        url: "https://example.org/quotes?a=1&b=2".to_owned(),
        at: "2025-03-04T09:05:00Z".to_owned(),
        summary: "GAZP Last 301.5 crossed above 300".to_owned(),
        threshold: Some(ThresholdAlert {
            name: "gazp-high".to_owned(),
            xpath: "//row[@key='GAZP']/cell[@col='Last']/@num".to_owned(),
            value: Some(301.5),
            previous: Some(299.0),
            bound: "above 300".to_owned(),
            context: "Shares <script>alert(1)</script> / GAZP / Last".to_owned(),
            node: Some("/page/table[1]/row[3]/cell[2]".to_owned()),
        }),
        changes: Vec::new(),
        records: Vec::new(),
        error: None,
        failures: None,
    }
}

pub(crate) fn changed_alert(id: &str) -> Alert {
    Alert {
        id: id.to_owned(),
        kind: AlertKind::Changed,
        watch: "gazp".to_owned(),
        watch_title: None,
        url: "https://example.org/quotes".to_owned(),
        at: "2025-03-04T10:00:00Z".to_owned(),
        summary: "2 changes on gazp".to_owned(),
        threshold: None,
        changes: vec![
            ChangeLine {
                kind: "update".to_owned(),
                path: "Shares / GAZP / Last".to_owned(),
                text: "update Shares / GAZP / Last: 299 -> 301.5".to_owned(),
                key: Some("GAZP".to_owned()),
                column: Some("Last".to_owned()),
                old: Some("299".to_owned()),
                new: Some("301.5".to_owned()),
                old_xpath: Some("/page/table[1]/row[3]/cell[2]".to_owned()),
                new_xpath: Some("/page/table[1]/row[3]/cell[2]".to_owned()),
                old_num: Some(299.0),
                new_num: Some(301.5),
            },
            ChangeLine {
                kind: "insert".to_owned(),
                path: "Shares / NVTK".to_owned(),
                text: "insert Shares / NVTK: <b>new</b> row".to_owned(),
                key: Some("NVTK".to_owned()),
                new: Some("<b>new</b> row".to_owned()),
                new_xpath: Some("/page/table[1]/row[4]".to_owned()),
                ..ChangeLine::default()
            },
        ],
        records: Vec::new(),
        error: None,
        failures: None,
    }
}

fn failing_alert(id: &str) -> Alert {
    Alert {
        id: id.to_owned(),
        kind: AlertKind::Failing,
        watch: "gazp".to_owned(),
        watch_title: None,
        url: "https://example.org/quotes".to_owned(),
        at: "2025-03-04T11:00:00Z".to_owned(),
        summary: "gazp failing: 3 checks in a row".to_owned(),
        threshold: None,
        changes: Vec::new(),
        records: Vec::new(),
        error: Some("HTTP 503 Service Unavailable".to_owned()),
        failures: Some(3),
    }
}

fn smtp_config(port: u16, login: Option<(&str, &str)>) -> SmtpConfig {
    SmtpConfig {
        host: "127.0.0.1".to_owned(),
        port,
        security: SmtpSecurity::None,
        username: login.map(|(user, _)| user.to_owned()),
        password: login.map(|(_, password)| secret(password)),
        from: "semclip <semclip@example.org>".to_owned(),
        timeout: Duration::from_secs(10),
    }
}

fn email_notifier(smtp: &SmtpConfig) -> Notifier {
    email_notifier_linking(smtp, None)
}

/// An email notifier whose alerts link under `public` (the daemon's
/// `server.public_url`).
fn email_notifier_linking(smtp: &SmtpConfig, public: Option<&url::Url>) -> Notifier {
    let cfg = NotifierConfig::Email {
        to: vec![
            "Ops Team <ops@example.org>".to_owned(),
            "dev@example.org".to_owned(),
        ],
    };
    Notifier::from_config(
        "ops-mail",
        &cfg,
        Some(smtp),
        &reqwest::Client::new(),
        public,
    )
    .expect("email notifier")
}

fn webhook_notifier(url: url::Url, key: Option<&str>, timeout: Duration) -> Notifier {
    webhook_notifier_linking(url, key, timeout, None)
}

/// A webhook notifier whose alerts link under `public`.
fn webhook_notifier_linking(
    url: url::Url,
    key: Option<&str>,
    timeout: Duration,
    public: Option<&url::Url>,
) -> Notifier {
    let cfg = NotifierConfig::Webhook(WebhookConfig {
        url,
        secret: key.map(secret),
        timeout,
        headers: vec![("X-Team".to_owned(), "ops".to_owned())],
    });
    Notifier::from_config("hook", &cfg, None, &reqwest::Client::new(), public)
        .expect("webhook notifier")
}

/// The daemon's public URL in the link tests.
const PUBLIC: &str = "https://semclip.example.org/base/";

/// The change view of the check that raised [`changed_alert`] under
/// [`PUBLIC`]: its `at` in Unix milliseconds.
const CHANGE_VIEW: &str = "https://semclip.example.org/base/status/gazp/changes/at/1741082400000";

/// The status page of watch `gazp` under [`PUBLIC`].
const STATUS_PAGE: &str = "https://semclip.example.org/base/status/gazp";

fn public() -> url::Url {
    url::Url::parse(PUBLIC).expect("public URL")
}

fn addresses(address: Option<&mail_parser::Address<'_>>) -> Vec<String> {
    address
        .map(|a| {
            a.iter()
                .filter_map(|addr| addr.address().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn email_alert_arrives_with_both_parts_escaped() {
    let server = SmtpServer::start();
    let notifier = email_notifier(&smtp_config(server.port(), None));
    notifier
        .deliver(&[threshold_alert("alert-17")])
        .await
        .expect("delivered");

    let mails = server.messages();
    assert_eq!(mails.len(), 1);
    let mail = &mails[0];
    assert_eq!(mail.mail_from, "semclip@example.org");
    assert_eq!(mail.rcpt_tos, ["ops@example.org", "dev@example.org"]);
    assert_eq!(mail.login, None);

    let message = mail.parsed();
    assert_eq!(
        message.subject(),
        Some("[semclip] GAZP Last 301.5 crossed above 300")
    );
    assert_eq!(addresses(message.from()), ["semclip@example.org"]);
    assert_eq!(
        addresses(message.to()),
        ["ops@example.org", "dev@example.org"]
    );
    assert_eq!(message.message_id(), Some("alert-17@semclip"));
    let content_type = message.content_type().expect("a content type");
    assert_eq!(content_type.ctype(), "multipart");
    assert_eq!(content_type.subtype(), Some("alternative"));
    assert_eq!(message.text_body_count(), 1);
    assert_eq!(message.html_body_count(), 1);

    let text = message.body_text(0).expect("text part");
    for expected in [
        "GAZP Last 301.5 crossed above 300",
        "threshold crossed",
        "Moscow quotes (gazp)",
        "gazp-high (above 300)",
        "Shares <script>alert(1)</script> / GAZP / Last",
        "301.5",
        "299",
        "https://example.org/quotes?a=1&b=2",
        "2025-03-04T09:05:00Z",
    ] {
        assert!(text.contains(expected), "{expected:?} not in\n{text}");
    }
    assert!(
        text.lines()
            .any(|l| l.starts_with("Value:") && l.ends_with(" 301.5"))
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("Previous value:") && l.ends_with(" 299"))
    );

    let html = message.body_html(0).expect("html part");
    assert!(
        html.contains("Shares &lt;script&gt;alert(1)&lt;/script&gt; / GAZP / Last"),
        "{html}"
    );
    assert!(!html.contains("<script>"), "{html}");
    assert!(
        html.contains(
            "<a href=\"https://example.org/quotes?a=1&amp;b=2\">https://example.org/quotes?a=1&amp;b=2</a>"
        ),
        "{html}"
    );
    assert!(html.contains("301.5") && html.contains("299") && html.contains("above 300"));
    assert!(
        html.contains("<code>//row[@key=&#39;GAZP&#39;]/cell[@col=&#39;Last&#39;]/@num</code>")
    );
}

#[tokio::test]
async fn email_digest_lists_changes_and_failures() {
    let server = SmtpServer::start();
    let notifier = email_notifier(&smtp_config(server.port(), None));
    notifier
        .deliver(&[changed_alert("c-1"), failing_alert("f-2")])
        .await
        .expect("delivered");

    let mails = server.messages();
    assert_eq!(mails.len(), 1);
    let message = mails[0].parsed();
    assert_eq!(message.subject(), Some("[semclip] gazp: 2 alerts"));
    assert_eq!(message.message_id(), Some("c-1@semclip"));
    // Mail lines end in CRLF on the wire.
    let text = message
        .body_text(0)
        .expect("text part")
        .replace("\r\n", "\n");
    for expected in [
        "2 alerts for gazp",
        "2 changes on gazp",
        "Changes:\n  update Shares / GAZP / Last: 299 -> 301.5\n  insert Shares / NVTK: <b>new</b> row\n",
        "gazp failing: 3 checks in a row",
        "HTTP 503 Service Unavailable",
    ] {
        assert!(text.contains(expected), "{expected:?} not in\n{text}");
    }
    assert!(
        text.lines()
            .any(|l| l.starts_with("Failed checks in a row:") && l.ends_with(" 3"))
    );
    let html = message.body_html(0).expect("html part");
    assert!(
        html.contains("<li><code>insert Shares / NVTK: &lt;b&gt;new&lt;/b&gt; row</code></li>")
    );
    assert!(html.contains("HTTP 503 Service Unavailable"));
}

#[tokio::test]
async fn email_links_each_alert_to_its_change_view_or_status_page() {
    let server = SmtpServer::start();
    let public = public();
    let notifier = email_notifier_linking(&smtp_config(server.port(), None), Some(&public));
    notifier
        .deliver(&[changed_alert("c-1"), threshold_alert("t-2")])
        .await
        .expect("delivered");

    let mails = server.messages();
    assert_eq!(mails.len(), 1);
    let message = mails[0].parsed();
    let text = message
        .body_text(0)
        .expect("text part")
        .replace("\r\n", "\n");
    assert!(
        text.lines()
            .any(|l| l.starts_with("View changes:") && l.ends_with(&format!(" {CHANGE_VIEW}"))),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("Status page:") && l.ends_with(&format!(" {STATUS_PAGE}"))),
        "{text}"
    );
    let html = message.body_html(0).expect("html part");
    assert!(
        html.contains(&format!("<a href=\"{CHANGE_VIEW}\">{CHANGE_VIEW}</a>")),
        "{html}"
    );
    assert!(
        html.contains(&format!("<a href=\"{STATUS_PAGE}\">{STATUS_PAGE}</a>")),
        "{html}"
    );
}

#[tokio::test]
async fn email_authenticates_and_a_refused_login_is_permanent() {
    let server = SmtpServer::start_with_auth("semclip", "s3cret pass");

    let good = email_notifier(&smtp_config(
        server.port(),
        Some(("semclip", "s3cret pass")),
    ));
    good.deliver(&[threshold_alert("a-1")])
        .await
        .expect("delivered with the right password");
    let mails = server.messages();
    assert_eq!(mails.len(), 1);
    assert_eq!(mails[0].login.as_deref(), Some("semclip"));

    let bad = email_notifier(&smtp_config(server.port(), Some(("semclip", "wrong"))));
    let err = bad
        .deliver(&[threshold_alert("a-2")])
        .await
        .expect_err("a wrong password is refused");
    assert!(!err.transient, "{err:?}");
    assert!(err.message.contains("535"), "{err:?}");

    // Without credentials the server refuses MAIL (530): permanent too.
    let anonymous = email_notifier(&smtp_config(server.port(), None));
    let err = anonymous
        .deliver(&[threshold_alert("a-3")])
        .await
        .expect_err("mail without login is refused");
    assert!(!err.transient, "{err:?}");
    assert_eq!(server.messages().len(), 1);
}

#[tokio::test]
async fn email_server_down_is_transient_and_recovers() {
    let mut server = SmtpServer::start();
    let notifier = email_notifier(&smtp_config(server.port(), None));
    server.stop();
    let err = notifier
        .deliver(&[threshold_alert("d-1")])
        .await
        .expect_err("nobody listens");
    assert!(err.transient, "{err:?}");
    assert!(err.message.starts_with("SMTP: "), "{err:?}");

    server.restart();
    notifier
        .deliver(&[threshold_alert("d-1")])
        .await
        .expect("delivered once the server is back");
    let mails = server.messages();
    assert_eq!(mails.len(), 1);
    assert_eq!(mails[0].parsed().message_id(), Some("d-1@semclip"));
}

#[tokio::test]
async fn email_never_falls_back_to_plain_text() {
    let server = SmtpServer::start();

    // The test server offers no STARTTLS: required STARTTLS sends nothing.
    let mut starttls = smtp_config(server.port(), Some(("semclip", "pass")));
    starttls.security = SmtpSecurity::StartTls;
    let err = email_notifier(&starttls)
        .deliver(&[threshold_alert("tls-1")])
        .await
        .expect_err("no STARTTLS on offer");
    assert!(!err.transient, "{err:?}");
    assert!(err.message.contains("STARTTLS"), "{err:?}");

    // Implicit TLS against a plain server fails the handshake.
    let mut tls = smtp_config(server.port(), None);
    tls.security = SmtpSecurity::Tls;
    let err = email_notifier(&tls)
        .deliver(&[threshold_alert("tls-2")])
        .await
        .expect_err("no TLS handshake");
    assert!(err.transient, "{err:?}");
    assert!(server.messages().is_empty());
}

#[tokio::test]
async fn email_needs_smtp_and_valid_addresses() {
    let http = reqwest::Client::new();
    let cfg = NotifierConfig::Email {
        to: vec!["ops@example.org".to_owned()],
    };
    let err = Notifier::from_config("ops-mail", &cfg, None, &http, None).expect_err("no smtp");
    assert!(matches!(err, NotifyError::MissingSmtp { ref notifier } if notifier == "ops-mail"));

    let bad_to = NotifierConfig::Email {
        to: vec!["not an address".to_owned()],
    };
    let err = Notifier::from_config(
        "ops-mail",
        &bad_to,
        Some(&smtp_config(25, None)),
        &http,
        None,
    )
    .expect_err("bad address");
    assert!(
        err.to_string()
            .starts_with("notifier ops-mail: \"not an address\" is not a mailbox"),
        "{err}"
    );
}

#[tokio::test]
async fn webhook_posts_signed_payload() {
    let receiver = WebhookReceiver::start(Some("hook key")).await;
    let notifier = webhook_notifier(receiver.url(), Some("hook key"), Duration::from_secs(10));
    let alerts = [threshold_alert("w-1"), changed_alert("w-2")];
    notifier.deliver(&alerts).await.expect("delivered");

    let requests = receiver.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.uri.path(), "/hook");
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(
        request.header("user-agent"),
        Some(concat!("semclip/", env!("CARGO_PKG_VERSION")))
    );
    assert_eq!(request.header("x-semclip-delivery"), Some("w-1"));
    assert_eq!(request.header("x-team"), Some("ops"));
    assert_eq!(request.signature_valid, Some(true));

    // The signature is the one docs/notifiers.md tells receivers to compute.
    let signature = request.header("x-semclip-signature").expect("signed");
    let expected = {
        use hmac::{KeyInit, Mac};
        let mut mac =
            <hmac::Hmac<sha2::Sha256> as KeyInit>::new_from_slice(b"hook key").expect("key");
        mac.update(&request.body);
        format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
    };
    assert_eq!(signature, expected);

    let body = request.json();
    assert_eq!(body["version"], PAYLOAD_VERSION);
    assert_eq!(body.as_object().map(|o| o.len()), Some(2));
    assert_eq!(body["alerts"][0]["kind"], "threshold_crossed");
    assert_eq!(body["alerts"][0]["threshold"]["value"], 301.5);
    assert_eq!(body["alerts"][1]["kind"], "changed");
    let back: Vec<Alert> =
        serde_json::from_value(body["alerts"].clone()).expect("alerts deserialise");
    assert_eq!(back, alerts);
}

#[tokio::test]
async fn webhook_changes_carry_their_data_and_each_alert_its_link() {
    let receiver = WebhookReceiver::start(None).await;
    let public = public();
    let notifier =
        webhook_notifier_linking(receiver.url(), None, Duration::from_secs(10), Some(&public));
    let alerts = [changed_alert("l-1"), threshold_alert("l-2")];
    notifier.deliver(&alerts).await.expect("delivered");

    let body = receiver.requests()[0].json();
    assert_eq!(body["version"], PAYLOAD_VERSION);
    let changed = &body["alerts"][0];
    assert_eq!(changed["link"], CHANGE_VIEW, "{changed:#}");
    assert_eq!(body["alerts"][1]["link"], STATUS_PAGE, "{body:#}");
    // The change in a keyed table cell, as data.
    let cell = &changed["changes"][0];
    assert_eq!(cell["kind"], "update");
    assert_eq!(cell["path"], "Shares / GAZP / Last");
    assert_eq!(cell["text"], "update Shares / GAZP / Last: 299 -> 301.5");
    assert_eq!(cell["key"], "GAZP");
    assert_eq!(cell["column"], "Last");
    assert_eq!(cell["old"], "299");
    assert_eq!(cell["new"], "301.5");
    assert_eq!(cell["old_xpath"], "/page/table[1]/row[3]/cell[2]");
    assert_eq!(cell["new_xpath"], "/page/table[1]/row[3]/cell[2]");
    assert_eq!(cell["old_num"], 299.0);
    assert_eq!(cell["new_num"], 301.5);
    // What does not apply is left out: an inserted row has no old side,
    // no column and no numbers.
    let row = changed["changes"][1].as_object().expect("a change object");
    for absent in ["old", "old_xpath", "column", "old_num", "new_num"] {
        assert!(!row.contains_key(absent), "{absent} in {row:?}");
    }
    assert_eq!(row["key"], "NVTK");
    // The payload still reads back as the alerts.
    let back: Vec<Alert> =
        serde_json::from_value(body["alerts"].clone()).expect("alerts deserialise");
    assert_eq!(back, alerts);

    // Without a public URL there is no link to give.
    let unlinked = webhook_notifier(receiver.url(), None, Duration::from_secs(10));
    unlinked.deliver(&alerts).await.expect("delivered");
    let body = receiver.requests()[1].json();
    assert!(body["alerts"][0].get("link").is_none(), "{body:#}");
}

#[tokio::test]
async fn webhook_without_secret_is_unsigned() {
    let receiver = WebhookReceiver::start(None).await;
    let notifier = webhook_notifier(receiver.url(), None, Duration::from_secs(10));
    notifier
        .deliver(&[failing_alert("u-1")])
        .await
        .expect("delivered");
    let requests = receiver.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].header("x-semclip-signature"), None);
    assert_eq!(requests[0].json()["alerts"][0]["failures"], 3);
}

#[tokio::test]
async fn webhook_status_decides_transient_or_permanent() {
    let receiver = WebhookReceiver::start(Some("k")).await;
    let notifier = webhook_notifier(receiver.url(), Some("k"), Duration::from_secs(10));
    let alert = [threshold_alert("s-1")];

    let cases: [(u16, Option<bool>); 7] = [
        (500, Some(true)),
        (503, Some(true)),
        (429, Some(true)),
        (408, Some(true)),
        (404, Some(false)),
        (400, Some(false)),
        (204, None),
    ];
    for (status, transient) in cases {
        receiver.reply(Reply::Status(status));
        let result = notifier.deliver(&alert).await;
        match transient {
            None => assert_eq!(result, Ok(()), "HTTP {status}"),
            Some(transient) => {
                let err: DeliveryError = result.expect_err("a failed delivery");
                assert_eq!(err.transient, transient, "HTTP {status}: {err:?}");
                assert!(err.message.contains(&format!("HTTP {status}")), "{err:?}");
            }
        }
    }
    let requests = receiver.requests();
    assert_eq!(requests.len(), cases.len());
    assert!(requests.iter().all(|r| r.signature_valid == Some(true)));
    assert!(
        requests
            .iter()
            .all(|r| r.header("x-semclip-delivery") == Some("s-1"))
    );
}

#[tokio::test]
async fn webhook_that_never_answers_times_out_transiently() {
    let receiver = WebhookReceiver::start(None).await;
    receiver.reply(Reply::Hang);
    let timeout = Duration::from_millis(800);
    let notifier = webhook_notifier(receiver.url(), None, timeout);
    let started = Instant::now();
    let err = notifier
        .deliver(&[threshold_alert("t-1")])
        .await
        .expect_err("no answer");
    let took = started.elapsed();
    assert!(err.transient, "{err:?}");
    assert!(err.message.contains("no answer within"), "{err:?}");
    assert!(took >= timeout, "gave up after {took:?}");
    assert!(took < timeout + Duration::from_secs(3), "took {took:?}");
    assert_eq!(receiver.requests().len(), 1);
}

#[tokio::test]
async fn webhook_unreachable_is_transient() {
    let url = url::Url::parse(&format!("http://127.0.0.1:{}/hook", free_port())).expect("url");
    let notifier = webhook_notifier(url, None, Duration::from_secs(5));
    let err = notifier
        .deliver(&[threshold_alert("n-1")])
        .await
        .expect_err("nobody listens");
    assert!(err.transient, "{err:?}");
}

#[tokio::test]
async fn webhook_rejects_bad_header_config() {
    let cfg = NotifierConfig::Webhook(WebhookConfig {
        url: url::Url::parse("http://127.0.0.1:9/").expect("url"),
        secret: None,
        timeout: Duration::from_secs(1),
        headers: vec![("Bad Header".to_owned(), "x".to_owned())],
    });
    let err = Notifier::from_config("hook", &cfg, None, &reqwest::Client::new(), None)
        .expect_err("invalid header name");
    assert!(matches!(err, NotifyError::Header { ref header, .. } if header == "Bad Header"));
}

fn file_notifier(path: PathBuf) -> Notifier {
    Notifier::from_config(
        "log",
        &NotifierConfig::File { path },
        None,
        &reqwest::Client::new(),
        None,
    )
    .expect("file notifier")
}

fn read_lines(path: &std::path::Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).expect("alerts file");
    assert!(text.ends_with('\n'), "the file ends with a whole line");
    text.lines()
        .map(|line| serde_json::from_str(line).expect("each line is JSON"))
        .collect()
}

#[tokio::test]
async fn file_notifier_appends_json_lines() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("deep/er/alerts.jsonl");
    let notifier = file_notifier(path.clone());
    let first = threshold_alert("f-1");
    let digest = [changed_alert("f-2"), failing_alert("f-3")];
    notifier
        .deliver(std::slice::from_ref(&first))
        .await
        .expect("written");
    notifier.deliver(&digest).await.expect("appended");
    notifier.deliver(&[]).await.expect("nothing to write");

    let lines = read_lines(&path);
    assert_eq!(lines.len(), 3);
    let expected = [&first, &digest[0], &digest[1]];
    for (line, alert) in lines.iter().zip(expected) {
        assert_eq!(line["version"], PAYLOAD_VERSION);
        let back: Alert = serde_json::from_value(line.clone()).expect("an alert");
        assert_eq!(&back, alert);
    }
    assert_eq!(lines[0]["kind"], "threshold_crossed");
    assert_eq!(lines[0]["watch_title"], "Moscow quotes");
    assert_eq!(lines[2]["error"], "HTTP 503 Service Unavailable");
}

#[tokio::test]
async fn file_lines_carry_the_link_of_each_alert() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("alerts.jsonl");
    let public = public();
    let notifier = Notifier::from_config(
        "log",
        &NotifierConfig::File { path: path.clone() },
        None,
        &reqwest::Client::new(),
        Some(&public),
    )
    .expect("file notifier");
    notifier
        .deliver(&[changed_alert("f-1"), failing_alert("f-2")])
        .await
        .expect("written");
    let lines = read_lines(&path);
    assert_eq!(lines[0]["version"], PAYLOAD_VERSION);
    assert_eq!(lines[0]["link"], CHANGE_VIEW);
    assert_eq!(lines[0]["changes"][0]["key"], "GAZP");
    assert_eq!(lines[1]["link"], STATUS_PAGE);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_notifiers_writing_at_once_never_split_lines() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("alerts.jsonl");
    // Separate notifiers share no lock: only the single append keeps lines whole.
    let mut tasks = Vec::new();
    for writer in 0..8 {
        let notifier = file_notifier(path.clone());
        tasks.push(tokio::spawn(async move {
            for n in 0..25 {
                let mut alert = changed_alert(&format!("{writer}-{n}"));
                alert.summary = "x".repeat(3000);
                notifier.deliver(&[alert]).await.expect("written");
            }
        }));
    }
    for task in tasks {
        task.await.expect("writer task");
    }
    let lines = read_lines(&path);
    assert_eq!(lines.len(), 200);
    let mut ids: Vec<String> = lines
        .iter()
        .map(|l| l["id"].as_str().expect("id").to_owned())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 200);
}

#[test]
fn alert_kinds_are_snake_case() {
    let kinds = [
        (AlertKind::ThresholdCrossed, "threshold_crossed"),
        (AlertKind::ThresholdReturned, "threshold_returned"),
        (AlertKind::SelectorLost, "selector_lost"),
        (AlertKind::SelectorFound, "selector_found"),
        (AlertKind::Changed, "changed"),
        (AlertKind::Failing, "failing"),
        (AlertKind::Recovered, "recovered"),
        (AlertKind::LayoutChanged, "layout_changed"),
    ];
    for (kind, name) in kinds {
        assert_eq!(
            serde_json::to_value(kind).expect("serialises"),
            serde_json::Value::String(name.to_owned())
        );
        assert_eq!(kind.name(), name, "the log names it as the payload does");
    }
}
