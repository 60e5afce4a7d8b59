//! Chat and push notifiers against local stand-ins of each service (axum on
//! 127.0.0.1): every stand-in checks the request the way the real service
//! documents it (method, path, where the token goes, content type, body
//! shape) and answers the way the real service does, including its refusal
//! of a revoked token, its outage and its rate limit.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use semclip::config::channels::{Discord, Gotify, Matrix, Ntfy, Slack, Teams, Telegram};
use semclip::config::{Channel, ChannelConfig, NotifierConfig, NtfyAuth, Secret, SecretUrl};
use semclip::notify::{Alert, DeliveryError, Notifier};
use serde_json::{Value, json};
use url::Url;

use crate::harness::ReceivedRequest;
use crate::notify::{changed_alert, threshold_alert};

/// The daemon's public base URL in these tests: links go to its status pages.
const PUBLIC: &str = "https://semclip.example.org/base";

/// How the stand-in behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Working, with the right credential.
    Up,
    /// The credential was revoked.
    Revoked,
    /// An outage (the service's 5xx).
    Down,
    /// Too many requests.
    Limited,
}

/// What a stand-in answers: status, headers, body.
type Answer = (u16, Vec<(&'static str, String)>, String);
type Handler = dyn Fn(&ReceivedRequest, Mode) -> Answer + Send + Sync;

struct ServiceState {
    requests: Mutex<Vec<ReceivedRequest>>,
    mode: Mutex<Mode>,
    handler: Box<Handler>,
}

/// A stand-in service; it stops on drop.
struct Service {
    base: Url,
    state: Arc<ServiceState>,
    task: tokio::task::JoinHandle<()>,
}

impl Service {
    async fn start(
        handler: impl Fn(&ReceivedRequest, Mode) -> Answer + Send + Sync + 'static,
    ) -> Service {
        let state = Arc::new(ServiceState {
            requests: Mutex::new(Vec::new()),
            mode: Mutex::new(Mode::Up),
            handler: Box::new(handler),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the stand-in");
        let addr = listener.local_addr().expect("address");
        let app = axum::Router::new()
            .fallback(serve)
            .with_state(Arc::clone(&state));
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.expect("stand-in");
        });
        Service {
            base: Url::parse(&format!("http://{addr}/")).expect("base URL"),
            state,
            task,
        }
    }

    fn url(&self, path: &str) -> Url {
        self.base.join(path).expect("URL")
    }

    fn mode(&self, mode: Mode) {
        *self.state.mode.lock().expect("mode") = mode;
    }

    fn requests(&self) -> Vec<ReceivedRequest> {
        self.state.requests.lock().expect("requests").clone()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(
    State(state): State<Arc<ServiceState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request = ReceivedRequest {
        method,
        uri,
        headers,
        body: body.to_vec(),
        signature_valid: None,
    };
    let mode = *state.mode.lock().expect("mode");
    let (status, headers, body) = (state.handler)(&request, mode);
    state.requests.lock().expect("requests").push(request);
    let mut response = (StatusCode::from_u16(status).expect("status"), body).into_response();
    for (name, value) in headers {
        response
            .headers_mut()
            .insert(name, value.parse().expect("header value"));
    }
    response
}

fn json_answer(status: u16, body: Value) -> Answer {
    (
        status,
        vec![("content-type", "application/json".to_owned())],
        body.to_string(),
    )
}

fn text_answer(status: u16, body: &str) -> Answer {
    (
        status,
        vec![("content-type", "text/plain".to_owned())],
        body.to_owned(),
    )
}

fn is_json(request: &ReceivedRequest) -> bool {
    request
        .header("content-type")
        .is_some_and(|t| t.starts_with("application/json"))
}

fn notifier(channel: Channel) -> Notifier {
    let cfg = NotifierConfig::Channel(ChannelConfig {
        channel,
        timeout: Duration::from_secs(10),
    });
    let public = Url::parse(PUBLIC).expect("public URL");
    Notifier::from_config("chat", &cfg, None, &reqwest::Client::new(), Some(&public))
        .expect("channel notifier")
}

/// A digest: a threshold alert and a changed alert of watch `gazp`.
fn digest() -> [Alert; 2] {
    [threshold_alert("th-1"), changed_alert("ch-2")]
}

/// The message carries the threshold context, the change lines and the
/// status link (after the dialect's escaping, undone by `unescape`).
fn assert_readable(text: &str, unescape: impl Fn(&str) -> String) {
    let plain = unescape(text);
    for expected in [
        "GAZP Last 301.5 crossed above 300",
        "gazp-high (above 300)",
        "Shares <script>alert(1)</script> / GAZP / Last",
        "301.5",
        "update Shares / GAZP / Last: 299 -> 301.5",
        "insert Shares / NVTK: <b>new</b> row",
        "https://semclip.example.org/base/status/gazp",
    ] {
        assert!(plain.contains(expected), "{expected:?} not in\n{text}");
    }
}

fn html_unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

fn markdown_unescape(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Delivers once per failure mode: a revoked credential fails at once and
/// for good; an outage and a rate limit are worth retrying.
async fn assert_failures(service: &Service, notifier: &Notifier) -> [DeliveryError; 3] {
    let alert = [threshold_alert("f-1")];
    service.mode(Mode::Revoked);
    let revoked = notifier.deliver(&alert).await.expect_err("revoked");
    assert!(!revoked.transient, "{revoked:?}");
    assert_eq!(revoked.retry_after, None, "{revoked:?}");
    service.mode(Mode::Down);
    let down = notifier.deliver(&alert).await.expect_err("down");
    assert!(down.transient, "{down:?}");
    service.mode(Mode::Limited);
    let limited = notifier.deliver(&alert).await.expect_err("rate limited");
    assert!(limited.transient, "{limited:?}");
    service.mode(Mode::Up);
    [revoked, down, limited]
}

/// No error message or `Debug` output shows `secret`.
fn assert_hidden(secret: &str, notifier: &Notifier, errors: &[DeliveryError]) {
    let debug = format!("{notifier:?}");
    assert!(!debug.contains(secret), "{debug}");
    for e in errors {
        assert!(!e.message.contains(secret), "{e:?}");
    }
}

// ---------------------------------------------------------------- Slack

/// Slack incoming webhooks: POST JSON to /services/T/B/C; `ok` in plain
/// text, or an error word with 403/404/410 (`invalid_token`,
/// `no_service`, `channel_is_archived`), 500 for `rollup_error`, 429 with
/// Retry-After.
fn slack_service(request: &ReceivedRequest, mode: Mode) -> Answer {
    if request.method != Method::POST || request.uri.path() != "/services/T0001/B0002/XXXX" {
        return text_answer(404, "no_service");
    }
    if !is_json(request) {
        return text_answer(400, "invalid_payload");
    }
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    if !body["text"].is_string() && !body["blocks"].is_array() {
        return text_answer(400, "no_text");
    }
    match mode {
        Mode::Up => text_answer(200, "ok"),
        Mode::Revoked => text_answer(403, "invalid_token"),
        Mode::Down => text_answer(500, "rollup_error"),
        Mode::Limited => (
            429,
            vec![("retry-after", "30".to_owned())],
            "rate_limited".to_owned(),
        ),
    }
}

#[tokio::test]
async fn slack_posts_blocks_to_the_incoming_webhook() {
    let service = Service::start(slack_service).await;
    let hook = service.url("/services/T0001/B0002/XXXX");
    let notifier = notifier(Channel::Slack(Slack {
        url: SecretUrl::new(hook),
    }));
    notifier.deliver(&digest()).await.expect("delivered");

    let requests = service.requests();
    assert_eq!(requests.len(), 1);
    let body = requests[0].json();
    assert_eq!(body["text"], "gazp: 2 alerts");
    assert_eq!(body["blocks"][0]["type"], "header");
    assert_eq!(body["blocks"][0]["text"]["type"], "plain_text");
    assert_eq!(body["blocks"][1]["type"], "section");
    assert_eq!(body["blocks"][1]["text"]["type"], "mrkdwn");
    let section = body["blocks"][1]["text"]["text"].as_str().expect("mrkdwn");
    assert!(section.chars().count() <= 3000);
    // Slack's escaping: only &, < and >; links as <url|label>.
    assert!(section.contains("Shares &lt;script&gt;"), "{section}");
    assert!(
        section.ends_with("<https://semclip.example.org/base/status/gazp|Status page>"),
        "{section}"
    );
    assert_readable(section, |t| {
        html_unescape(&t.replace(
            "<https://semclip.example.org/base/status/gazp|",
            "https://semclip.example.org/base/status/gazp ",
        ))
    });

    let [revoked, down, limited] = assert_failures(&service, &notifier).await;
    assert!(revoked.message.contains("HTTP 403"), "{revoked:?}");
    assert!(revoked.message.contains("invalid_token"), "{revoked:?}");
    assert!(down.message.contains("HTTP 500"), "{down:?}");
    assert_eq!(limited.retry_after, Some(Duration::from_secs(30)));
    assert_hidden("XXXX", &notifier, &[revoked, down, limited]);
}

// ---------------------------------------------------------------- Teams

/// A Teams workflow trigger: POST JSON with `sig` in the query; the body
/// is a message whose attachment is an Adaptive Card. A bad signature is
/// 401; a malformed card 400.
fn teams_service(request: &ReceivedRequest, mode: Mode) -> Answer {
    let query: Vec<(String, String)> =
        url::form_urlencoded::parse(request.uri.query().unwrap_or_default().as_bytes())
            .into_owned()
            .collect();
    let has = |k: &str, v: &str| query.iter().any(|(a, b)| a == k && b == v);
    if request.method != Method::POST
        || request.uri.path() != "/workflows/wf42/triggers/manual/paths/invoke"
        || !has("api-version", "2016-06-01")
    {
        return json_answer(404, json!({"error": {"code": "WorkflowNotFound"}}));
    }
    if mode == Mode::Revoked || !has("sig", "s1gn4ture") {
        return json_answer(
            401,
            json!({"error": {"code": "DirectApiAuthorizationRequired", "message": "The request must be authenticated"}}),
        );
    }
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let attachment = &body["attachments"][0];
    let card_ok = is_json(request)
        && body["type"] == "message"
        && attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
        && attachment["content"]["type"] == "AdaptiveCard"
        && attachment["content"]["version"].is_string()
        && attachment["content"]["body"].is_array();
    if !card_ok {
        return json_answer(400, json!({"error": {"code": "InvalidRequestContent"}}));
    }
    match mode {
        Mode::Up | Mode::Revoked => (202, Vec::new(), String::new()),
        Mode::Down => json_answer(502, json!({"error": {"code": "BadGateway"}})),
        Mode::Limited => (429, vec![("retry-after", "7".to_owned())], String::new()),
    }
}

/// All the text of an Adaptive Card body (TextBlocks, the TextRuns of
/// RichTextBlocks, FactSets).
fn card_text(card: &Value) -> String {
    let mut out = String::new();
    for element in card["body"].as_array().into_iter().flatten() {
        if let Some(text) = element["text"].as_str() {
            out.push_str(text);
            out.push('\n');
        }
        if let Some(inlines) = element["inlines"].as_array() {
            for run in inlines {
                out.push_str(run["text"].as_str().unwrap_or_default());
            }
            out.push('\n');
        }
        for fact in element["facts"].as_array().into_iter().flatten() {
            out.push_str(&format!(
                "{}: {}\n",
                fact["title"].as_str().unwrap_or_default(),
                fact["value"].as_str().unwrap_or_default()
            ));
        }
    }
    for action in card["actions"].as_array().into_iter().flatten() {
        out.push_str(action["url"].as_str().unwrap_or_default());
        out.push('\n');
    }
    out
}

#[tokio::test]
async fn teams_posts_an_adaptive_card_to_the_workflow() {
    let service = Service::start(teams_service).await;
    let mut hook = service.url("/workflows/wf42/triggers/manual/paths/invoke");
    hook.query_pairs_mut()
        .append_pair("api-version", "2016-06-01")
        .append_pair("sp", "/triggers/manual/run")
        .append_pair("sv", "1.0")
        .append_pair("sig", "s1gn4ture");
    let notifier = notifier(Channel::Teams(Teams {
        url: SecretUrl::new(hook),
    }));
    notifier.deliver(&digest()).await.expect("delivered");

    let requests = service.requests();
    assert_eq!(requests.len(), 1);
    let body = requests[0].json();
    let card = &body["attachments"][0]["content"];
    assert_eq!(card["version"], "1.4");
    // Page text in TextRuns only: a TextBlock or a fact value would be
    // read as Markdown.
    let blocks = card["body"].as_array().expect("body");
    assert_eq!(blocks[0]["type"], "RichTextBlock");
    assert_eq!(blocks[0]["inlines"][0]["type"], "TextRun");
    assert!(blocks.iter().all(|e| e["type"] != "FactSet"));
    assert_eq!(card["actions"][0]["type"], "Action.OpenUrl");
    assert_eq!(card["actions"][0]["title"], "Status page");
    let text = card_text(card);
    assert_readable(&text, str::to_owned);
    assert!(text.contains("Threshold: gazp-high (above 300)"), "{text}");

    let [revoked, down, limited] = assert_failures(&service, &notifier).await;
    assert!(revoked.message.contains("HTTP 401"), "{revoked:?}");
    assert!(down.message.contains("HTTP 502"), "{down:?}");
    assert_eq!(limited.retry_after, Some(Duration::from_secs(7)));
    assert_hidden("s1gn4ture", &notifier, &[revoked, down, limited]);
}

// ---------------------------------------------------------------- Discord

/// Discord webhooks: POST JSON to /api/webhooks/ID/TOKEN with `content`
/// (at most 2000) and/or `embeds`; 204 (or 200 with `?wait=true`); a bad
/// token is 401 `{"message": "Invalid Webhook Token", "code": 50027}`; a
/// rate limit is 429 with `retry_after` and Retry-After.
fn discord_service(request: &ReceivedRequest, mode: Mode) -> Answer {
    let Some(token) = request.uri.path().strip_prefix("/api/webhooks/1122334455/") else {
        return json_answer(404, json!({"message": "Unknown Webhook", "code": 10015}));
    };
    if mode == Mode::Revoked || token != "d1sc0rd-t0ken" {
        return json_answer(
            401,
            json!({"message": "Invalid Webhook Token", "code": 50027}),
        );
    }
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let content = body["content"].as_str().unwrap_or_default();
    if request.method != Method::POST
        || !is_json(request)
        || (content.is_empty() && !body["embeds"].is_array())
    {
        return json_answer(
            400,
            json!({"message": "Cannot send an empty message", "code": 50006}),
        );
    }
    if content.encode_utf16().count() > 2000 {
        return json_answer(
            400,
            json!({"content": ["Must be 2000 or fewer in length."]}),
        );
    }
    match mode {
        Mode::Up | Mode::Revoked => {
            if request.uri.query() == Some("wait=true") {
                json_answer(200, json!({"id": "1", "content": content}))
            } else {
                (204, Vec::new(), String::new())
            }
        }
        Mode::Down => json_answer(503, json!({"message": "Service Unavailable"})),
        Mode::Limited => (
            429,
            vec![
                ("retry-after", "3".to_owned()),
                ("content-type", "application/json".to_owned()),
            ],
            json!({"message": "You are being rate limited.", "retry_after": 2.5, "global": false})
                .to_string(),
        ),
    }
}

#[tokio::test]
async fn discord_posts_content_within_its_limit() {
    let service = Service::start(discord_service).await;
    let hook = service.url("/api/webhooks/1122334455/d1sc0rd-t0ken?wait=true");
    let notifier = notifier(Channel::Discord(Discord {
        url: SecretUrl::new(hook),
    }));
    notifier.deliver(&digest()).await.expect("delivered");
    let requests = service.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].uri.query(), Some("wait=true"));
    let body = requests[0].json();
    assert_eq!(body["allowed_mentions"]["parse"], json!([]));
    let content = body["content"].as_str().expect("content");
    assert!(
        content.contains("[Status page](<https://semclip.example.org/base/status/gazp>)"),
        "{content}"
    );
    assert_readable(content, markdown_unescape);

    // A digest far over 2000 characters is cut, and still accepted.
    let big: Vec<Alert> = (0..40)
        .map(|i| {
            let mut alert = changed_alert(&format!("big-{i}"));
            alert.summary = format!("{i}: {}", "many words ".repeat(25));
            alert
        })
        .collect();
    notifier.deliver(&big).await.expect("cut to fit");
    let content = service.requests()[1].json()["content"]
        .as_str()
        .expect("content")
        .to_owned();
    assert!(content.encode_utf16().count() <= 2000);
    assert!(content.contains("more lines"), "{content}");
    assert!(content.ends_with("[Status page](<https://semclip.example.org/base/status/gazp>)"));

    let [revoked, down, limited] = assert_failures(&service, &notifier).await;
    assert!(
        revoked.message.contains("Invalid Webhook Token"),
        "{revoked:?}"
    );
    assert!(down.message.contains("HTTP 503"), "{down:?}");
    assert_eq!(limited.retry_after, Some(Duration::from_secs(3)));
    assert_hidden("d1sc0rd-t0ken", &notifier, &[revoked, down, limited]);
}

// ---------------------------------------------------------------- Telegram

const TG_TOKEN: &str = "123456789:AAHsecret-Token_x";

/// The Bot API: POST /bot<TOKEN>/sendMessage with JSON `chat_id`, `text`,
/// `parse_mode`; answers `{"ok": true, "result": {...}}` or `{"ok": false,
/// "error_code": N, "description": ...}` with the same HTTP status, and
/// `parameters.retry_after` on 429.
fn telegram_service(request: &ReceivedRequest, mode: Mode) -> Answer {
    let refuse = |code: u16, description: &str| {
        json_answer(
            code,
            json!({"ok": false, "error_code": code, "description": description}),
        )
    };
    let expected = format!("/bot{TG_TOKEN}/sendMessage");
    if request.uri.path() != expected || mode == Mode::Revoked {
        // Telegram answers an unknown or revoked token with 401 (and an
        // unknown method with 404).
        return refuse(401, "Unauthorized");
    }
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let text = body["text"].as_str().unwrap_or_default();
    if request.method != Method::POST || !is_json(request) {
        return refuse(400, "Bad Request: message text is empty");
    }
    if body["chat_id"] != "-1001234567890" {
        return refuse(400, "Bad Request: chat not found");
    }
    if text.is_empty() || text.encode_utf16().count() > 4096 {
        return refuse(400, "Bad Request: message is too long");
    }
    if body["parse_mode"] == "HTML" && !html_is_balanced(text) {
        return refuse(400, "Bad Request: can't parse entities");
    }
    match mode {
        Mode::Up | Mode::Revoked => json_answer(
            200,
            json!({"ok": true, "result": {"message_id": 7, "text": text}}),
        ),
        Mode::Down => refuse(502, "Bad Gateway"),
        Mode::Limited => json_answer(
            429,
            json!({"ok": false, "error_code": 429,
                   "description": "Too Many Requests: retry after 41",
                   "parameters": {"retry_after": 41}}),
        ),
    }
}

/// Telegram's HTML check, roughly: only its tags, each closed, and no bare
/// `<` or `&` outside entities.
fn html_is_balanced(text: &str) -> bool {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(['<', '&']) {
        let tail = &rest[i..];
        if let Some(after) = tail.strip_prefix('&') {
            let ok = ["&lt;", "&gt;", "&amp;", "&quot;", "&#39;"]
                .iter()
                .any(|e| tail.starts_with(e));
            if !ok {
                return false;
            }
            rest = after;
            continue;
        }
        let Some(end) = tail.find('>') else {
            return false;
        };
        let tag = &tail[1..end];
        if let Some(name) = tag.strip_prefix('/') {
            if stack.pop().as_deref() != Some(name) {
                return false;
            }
        } else {
            let name = tag.split(' ').next().unwrap_or_default();
            if !["b", "i", "code", "pre", "a"].contains(&name) {
                return false;
            }
            stack.push(name.to_owned());
        }
        rest = &tail[end + 1..];
    }
    stack.is_empty()
}

fn telegram_channel(service: &Service) -> Channel {
    Channel::Telegram(Telegram {
        api_url: service.base.clone(),
        token: Secret::new(TG_TOKEN),
        chat_id: "-1001234567890".to_owned(),
    })
}

#[tokio::test]
async fn telegram_sends_html_to_the_bot_api() {
    let service = Service::start(telegram_service).await;
    let notifier = notifier(telegram_channel(&service));
    notifier.deliver(&digest()).await.expect("delivered");
    let requests = service.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].method, Method::POST);
    let body = requests[0].json();
    assert_eq!(body["parse_mode"], "HTML");
    let text = body["text"].as_str().expect("text");
    assert!(text.starts_with("<b>gazp: 2 alerts</b>\n"), "{text}");
    assert!(
        text.contains("Shares &lt;script&gt;alert(1)&lt;/script&gt; / GAZP / Last"),
        "{text}"
    );
    assert!(
        text.ends_with("<a href=\"https://semclip.example.org/base/status/gazp\">Status page</a>"),
        "{text}"
    );
    assert_readable(text, |t| {
        html_unescape(
            &t.replace("<a href=\"", "")
                .replace("\">Status page</a>", ""),
        )
    });

    let [revoked, down, limited] = assert_failures(&service, &notifier).await;
    assert!(revoked.message.contains("Unauthorized"), "{revoked:?}");
    assert!(down.message.contains("HTTP 502"), "{down:?}");
    assert_eq!(limited.retry_after, Some(Duration::from_secs(41)));
    assert_hidden("AAHsecret-Token_x", &notifier, &[revoked, down, limited]);
}

#[tokio::test]
async fn telegram_ok_false_under_200_is_a_failure() {
    // Some proxies in front of the Bot API answer 200 with the verdict in
    // the body: `ok: false` must not count as delivered.
    let service = Service::start(|_, _| {
        json_answer(
            200,
            json!({"ok": false, "error_code": 400, "description": "Bad Request: chat not found"}),
        )
    })
    .await;
    let err = notifier(telegram_channel(&service))
        .deliver(&[threshold_alert("t-1")])
        .await
        .expect_err("ok: false");
    assert!(!err.transient, "{err:?}");
    assert!(err.message.contains("chat not found"), "{err:?}");
}

// ---------------------------------------------------------------- Matrix

const MATRIX_TOKEN: &str = "syt_bWF0cml4_secret";
const ROOM_ID: &str = "!AbCdEf:matrix.example.org";

/// The client-server API: alias lookup (GET directory/room/{alias}) and
/// PUT rooms/{roomId}/send/m.room.message/{txnId} with a bearer token;
/// `{"event_id": ...}`, or `{"errcode": "M_UNKNOWN_TOKEN"}` (401),
/// `M_LIMIT_EXCEEDED` (429, `retry_after_ms`). The same txnId twice gets
/// the same event id (the homeserver's idempotency).
fn matrix_service() -> impl Fn(&ReceivedRequest, Mode) -> Answer + Send + Sync + 'static {
    let seen: Mutex<Vec<String>> = Mutex::new(Vec::new());
    move |request, mode| {
        if request.header("authorization") != Some(&format!("Bearer {MATRIX_TOKEN}"))
            || mode == Mode::Revoked
        {
            return json_answer(
                401,
                json!({"errcode": "M_UNKNOWN_TOKEN", "error": "Invalid access token passed.", "soft_logout": false}),
            );
        }
        let path = request.uri.path();
        if request.method == Method::GET
            && path == "/_matrix/client/v3/directory/room/%23ops%3Amatrix.example.org"
        {
            return json_answer(
                200,
                json!({"room_id": ROOM_ID, "servers": ["matrix.example.org"]}),
            );
        }
        let Some(txn) = path.strip_prefix(
            "/_matrix/client/v3/rooms/%21AbCdEf%3Amatrix.example.org/send/m.room.message/",
        ) else {
            return json_answer(
                404,
                json!({"errcode": "M_UNRECOGNIZED", "error": "Unrecognized request"}),
            );
        };
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        if request.method != Method::PUT
            || !is_json(request)
            || body["msgtype"] != "m.text"
            || !body["body"].is_string()
        {
            return json_answer(
                400,
                json!({"errcode": "M_BAD_JSON", "error": "Content not JSON."}),
            );
        }
        match mode {
            Mode::Up | Mode::Revoked => {
                let mut seen = seen.lock().expect("seen");
                let index = seen.iter().position(|t| t == txn).unwrap_or_else(|| {
                    seen.push(txn.to_owned());
                    seen.len() - 1
                });
                json_answer(200, json!({"event_id": format!("$event{index}")}))
            }
            Mode::Down => json_answer(502, json!({"errcode": "M_UNKNOWN", "error": "Bad gateway"})),
            Mode::Limited => json_answer(
                429,
                json!({"errcode": "M_LIMIT_EXCEEDED", "error": "Too many requests", "retry_after_ms": 2500}),
            ),
        }
    }
}

#[tokio::test]
async fn matrix_puts_an_event_with_the_delivery_id_as_transaction() {
    let service = Service::start(matrix_service()).await;
    let notifier = notifier(Channel::Matrix(Matrix {
        server: service.base.clone(),
        room: "#ops:matrix.example.org".to_owned(),
        token: Secret::new(MATRIX_TOKEN),
    }));
    let one = [threshold_alert("alert-17")];
    notifier.deliver(&one).await.expect("delivered");
    notifier.deliver(&one).await.expect("a retry is accepted");
    notifier.deliver(&digest()).await.expect("digest delivered");

    let requests = service.requests();
    // One alias lookup, then three PUTs (the room id is kept).
    assert_eq!(requests.len(), 4, "{requests:?}");
    assert_eq!(requests[0].method, Method::GET);
    let puts: Vec<&ReceivedRequest> = requests[1..].iter().collect();
    assert!(puts.iter().all(|r| r.method == Method::PUT));
    assert!(
        puts[0]
            .uri
            .path()
            .ends_with("/send/m.room.message/alert-17"),
        "{:?}",
        puts[0].uri
    );
    assert_eq!(
        puts[0].uri.path(),
        puts[1].uri.path(),
        "a retry reuses the transaction id"
    );
    assert_ne!(puts[2].uri.path(), puts[0].uri.path());
    let body = puts[2].json();
    assert_eq!(body["format"], "org.matrix.custom.html");
    assert_readable(body["body"].as_str().expect("body"), str::to_owned);
    let html = body["formatted_body"].as_str().expect("formatted_body");
    assert!(html.contains("Shares &lt;script&gt;"), "{html}");
    assert!(
        html.contains("<a href=\"https://semclip.example.org/base/status/gazp\">Status page</a>"),
        "{html}"
    );

    let [revoked, down, limited] = assert_failures(&service, &notifier).await;
    assert!(revoked.message.contains("M_UNKNOWN_TOKEN"), "{revoked:?}");
    assert!(down.message.contains("HTTP 502"), "{down:?}");
    assert_eq!(limited.retry_after, Some(Duration::from_millis(2500)));
    assert_hidden("bWF0cml4_secret", &notifier, &[revoked, down, limited]);
}

// ---------------------------------------------------------------- ntfy

/// ntfy: POST /<topic> with the message as the body and Title, Priority,
/// Tags, Click headers; access control answers `{"code":40101,"http":401,
/// "error":"unauthorized"}` (or 403 `forbidden`); rate limits 429.
fn ntfy_service(
    auth: &'static str,
) -> impl Fn(&ReceivedRequest, Mode) -> Answer + Send + Sync + 'static {
    move |request, mode| {
        if request.method != Method::POST || request.uri.path() != "/semclip-ops" {
            return json_answer(
                404,
                json!({"code": 40401, "http": 404, "error": "page not found"}),
            );
        }
        if request.header("authorization") != Some(auth) || mode == Mode::Revoked {
            return json_answer(
                401,
                json!({"code": 40101, "http": 401, "error": "unauthorized"}),
            );
        }
        let priority_ok = request
            .header("priority")
            .and_then(|p| p.parse::<u8>().ok())
            .is_some_and(|p| (1..=5).contains(&p));
        if !priority_ok || request.body.len() > 4096 {
            return json_answer(
                400,
                json!({"code": 40007, "http": 400, "error": "invalid priority"}),
            );
        }
        match mode {
            Mode::Up | Mode::Revoked => json_answer(
                200,
                json!({"id": "x1", "event": "message", "topic": "semclip-ops",
                       "message": String::from_utf8_lossy(&request.body)}),
            ),
            Mode::Down => json_answer(
                500,
                json!({"code": 50001, "http": 500, "error": "internal server error"}),
            ),
            Mode::Limited => json_answer(
                429,
                json!({"code": 42901, "http": 429, "error": "limit reached: too many requests"}),
            ),
        }
    }
}

#[tokio::test]
async fn ntfy_publishes_to_the_topic_with_headers() {
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("ops:n7fy-pass")
    );
    let basic: &'static str = Box::leak(basic.into_boxed_str());
    let service = Service::start(ntfy_service(basic)).await;
    let notifier = notifier(Channel::Ntfy(Ntfy {
        server: service.base.clone(),
        topic: "semclip-ops".to_owned(),
        auth: Some(NtfyAuth::Basic {
            username: "ops".to_owned(),
            password: Secret::new("n7fy-pass"),
        }),
        priority: None,
        tags: vec!["chart".to_owned()],
    }));
    notifier.deliver(&digest()).await.expect("delivered");
    let requests = service.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r.header("title"), Some("gazp: 2 alerts"));
    assert_eq!(
        r.header("priority"),
        Some("4"),
        "a threshold crossing is an alarm"
    );
    assert_eq!(r.header("tags"), Some("warning,semclip,chart"));
    assert_eq!(
        r.header("click"),
        Some("https://semclip.example.org/base/status/gazp")
    );
    let text = String::from_utf8(r.body.clone()).expect("UTF-8 body");
    let with_link = format!("{text}\n{}", r.header("click").unwrap_or_default());
    assert_readable(&with_link, str::to_owned);

    let [revoked, down, limited] = assert_failures(&service, &notifier).await;
    assert!(revoked.message.contains("unauthorized"), "{revoked:?}");
    assert!(down.message.contains("HTTP 500"), "{down:?}");
    assert!(limited.message.contains("HTTP 429"), "{limited:?}");
    assert_hidden("n7fy-pass", &notifier, &[revoked, down, limited]);
}

#[tokio::test]
async fn ntfy_with_a_token_sends_a_bearer_and_a_quiet_priority() {
    let service = Service::start(ntfy_service("Bearer tk_ntfytoken")).await;
    let notifier = notifier(Channel::Ntfy(Ntfy {
        server: service.base.clone(),
        topic: "semclip-ops".to_owned(),
        auth: Some(NtfyAuth::Token(Secret::new("tk_ntfytoken"))),
        priority: None,
        tags: Vec::new(),
    }));
    let mut alert = changed_alert("c-1");
    alert.summary = "Prix € changed".to_owned();
    notifier.deliver(&[alert]).await.expect("delivered");
    let r = &service.requests()[0];
    assert_eq!(r.header("priority"), Some("3"));
    assert_eq!(r.header("tags"), Some("bell,semclip"));
    // Non-ASCII titles go as an RFC 2047 encoded word, which ntfy decodes.
    let title = r.header("title").expect("title");
    let encoded = title
        .strip_prefix("=?UTF-8?B?")
        .and_then(|t| t.strip_suffix("?="))
        .expect("an encoded word");
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .expect("base64");
    assert_eq!(String::from_utf8(decoded).expect("UTF-8"), "Prix € changed");
}

// ---------------------------------------------------------------- Gotify

/// Gotify: POST /message with the app token in X-Gotify-Key (or
/// `?token=`), JSON `message` required; 401 `{"error":"Unauthorized",
/// "errorCode":401,...}` for a bad token.
fn gotify_service(request: &ReceivedRequest, mode: Mode) -> Answer {
    if request.method != Method::POST || request.uri.path() != "/gotify/message" {
        return json_answer(404, json!({"error": "Not Found", "errorCode": 404}));
    }
    if request.header("x-gotify-key") != Some("AppT0kenGotify") || mode == Mode::Revoked {
        return json_answer(
            401,
            json!({"error": "Unauthorized", "errorCode": 401, "errorDescription": "you need to provide a valid access token or user credentials to access this api"}),
        );
    }
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    if !is_json(request) || !body["message"].is_string() || !body["priority"].is_u64() {
        return json_answer(
            400,
            json!({"error": "Bad Request", "errorCode": 400, "errorDescription": "Field 'message' is required"}),
        );
    }
    match mode {
        Mode::Up | Mode::Revoked => json_answer(
            200,
            json!({"id": 1, "appid": 3, "message": body["message"]}),
        ),
        Mode::Down => json_answer(
            503,
            json!({"error": "Service Unavailable", "errorCode": 503}),
        ),
        Mode::Limited => (429, vec![("retry-after", "12".to_owned())], String::new()),
    }
}

#[tokio::test]
async fn gotify_posts_markdown_with_a_click_url() {
    let service = Service::start(gotify_service).await;
    let notifier = notifier(Channel::Gotify(Gotify {
        server: service.url("/gotify/"),
        token: Secret::new("AppT0kenGotify"),
        priority: None,
    }));
    notifier.deliver(&digest()).await.expect("delivered");
    let requests = service.requests();
    assert_eq!(requests.len(), 1);
    let body = requests[0].json();
    assert_eq!(body["title"], "gazp: 2 alerts");
    assert_eq!(body["priority"], 8);
    assert_eq!(
        body["extras"]["client::display"]["contentType"],
        "text/markdown"
    );
    assert_eq!(
        body["extras"]["client::notification"]["click"]["url"],
        "https://semclip.example.org/base/status/gazp"
    );
    assert_readable(
        body["message"].as_str().expect("message"),
        markdown_unescape,
    );

    let [revoked, down, limited] = assert_failures(&service, &notifier).await;
    assert!(revoked.message.contains("HTTP 401"), "{revoked:?}");
    assert!(down.message.contains("HTTP 503"), "{down:?}");
    assert_eq!(limited.retry_after, Some(Duration::from_secs(12)));
    assert_hidden("AppT0kenGotify", &notifier, &[revoked, down, limited]);
}

// ---------------------------------------------------------------- links

/// The change view of the check that raised [`changed_alert`] (its `at`,
/// 2025-03-04T10:00:00Z, in Unix milliseconds), under [`PUBLIC`].
const CHANGE_VIEW: &str = "https://semclip.example.org/base/status/gazp/changes/at/1741082400000";

/// A changed alert of watch `gazp` with `n` change lines (`ROW0`, `ROW1`,
/// ...).
fn many_changes(id: &str, n: usize) -> Alert {
    let mut alert = changed_alert(id);
    alert.changes = (0..n)
        .map(|i| {
            let mut c = alert.changes[0].clone();
            c.text = format!("update Shares / ROW{i} / Last: {i} -> {}", i + 1);
            c
        })
        .collect();
    alert
}

/// Everything a service got in `request`: its body, then its headers
/// (ntfy's link is its `Click` header).
fn request_text(request: &ReceivedRequest) -> String {
    let mut text = String::from_utf8_lossy(&request.body).into_owned();
    for (name, value) in &request.headers {
        text.push_str(&format!(
            "\n{}: {}",
            name.as_str(),
            value.to_str().unwrap_or_default()
        ));
    }
    text
}

#[tokio::test]
async fn every_channel_links_a_changed_alert_to_its_change_view_and_shows_five_changes() {
    let alert = [many_changes("many-1", 12)];
    let mut got: Vec<(&str, String)> = Vec::new();

    let slack = Service::start(slack_service).await;
    notifier(Channel::Slack(Slack {
        url: SecretUrl::new(slack.url("/services/T0001/B0002/XXXX")),
    }))
    .deliver(&alert)
    .await
    .expect("slack");
    got.push(("slack", request_text(&slack.requests()[0])));

    let teams = Service::start(teams_service).await;
    let mut hook = teams.url("/workflows/wf42/triggers/manual/paths/invoke");
    hook.query_pairs_mut()
        .append_pair("api-version", "2016-06-01")
        .append_pair("sig", "s1gn4ture");
    notifier(Channel::Teams(Teams {
        url: SecretUrl::new(hook),
    }))
    .deliver(&alert)
    .await
    .expect("teams");
    let card = teams.requests()[0].json()["attachments"][0]["content"].clone();
    assert_eq!(card["actions"][0]["url"], CHANGE_VIEW, "{card:#}");
    assert_eq!(card["actions"][0]["title"], "View changes", "{card:#}");
    got.push(("teams", request_text(&teams.requests()[0])));

    let discord = Service::start(discord_service).await;
    notifier(Channel::Discord(Discord {
        url: SecretUrl::new(discord.url("/api/webhooks/1122334455/d1sc0rd-t0ken")),
    }))
    .deliver(&alert)
    .await
    .expect("discord");
    let content = discord.requests()[0].json()["content"]
        .as_str()
        .expect("content")
        .to_owned();
    assert!(
        content.contains(&format!("[and 7 more](<{CHANGE_VIEW}>)")),
        "{content}"
    );
    assert!(
        content.ends_with(&format!("[View changes](<{CHANGE_VIEW}>)")),
        "{content}"
    );
    got.push(("discord", request_text(&discord.requests()[0])));

    let telegram = Service::start(telegram_service).await;
    notifier(telegram_channel(&telegram))
        .deliver(&alert)
        .await
        .expect("telegram");
    let text = telegram.requests()[0].json()["text"]
        .as_str()
        .expect("text")
        .to_owned();
    assert!(
        text.contains(&format!("<a href=\"{CHANGE_VIEW}\">and 7 more</a>")),
        "{text}"
    );
    got.push(("telegram", request_text(&telegram.requests()[0])));

    let matrix = Service::start(matrix_service()).await;
    notifier(Channel::Matrix(Matrix {
        server: matrix.base.clone(),
        room: ROOM_ID.to_owned(),
        token: Secret::new(MATRIX_TOKEN),
    }))
    .deliver(&alert)
    .await
    .expect("matrix");
    let put = matrix.requests().last().cloned().expect("a PUT");
    assert_eq!(put.method, Method::PUT);
    got.push(("matrix", request_text(&put)));

    let ntfy = Service::start(ntfy_service("Bearer tk_ntfytoken")).await;
    notifier(Channel::Ntfy(Ntfy {
        server: ntfy.base.clone(),
        topic: "semclip-ops".to_owned(),
        auth: Some(NtfyAuth::Token(Secret::new("tk_ntfytoken"))),
        priority: None,
        tags: Vec::new(),
    }))
    .deliver(&alert)
    .await
    .expect("ntfy");
    assert_eq!(ntfy.requests()[0].header("click"), Some(CHANGE_VIEW));
    got.push(("ntfy", request_text(&ntfy.requests()[0])));

    let gotify = Service::start(gotify_service).await;
    notifier(Channel::Gotify(Gotify {
        server: gotify.url("/gotify/"),
        token: Secret::new("AppT0kenGotify"),
        priority: None,
    }))
    .deliver(&alert)
    .await
    .expect("gotify");
    assert_eq!(
        gotify.requests()[0].json()["extras"]["client::notification"]["click"]["url"],
        CHANGE_VIEW
    );
    got.push(("gotify", request_text(&gotify.requests()[0])));

    assert_eq!(got.len(), 7, "every chat and push service");
    for (service, text) in &got {
        assert!(
            text.contains(CHANGE_VIEW),
            "{service}: no link to the change view in\n{text}"
        );
        assert!(
            text.contains("and 7 more"),
            "{service}: no \"and 7 more\" in\n{text}"
        );
        assert!(
            text.contains("ROW4") && !text.contains("ROW5"),
            "{service}: not the first five changes in\n{text}"
        );
    }
}

#[tokio::test]
async fn without_a_public_url_messages_link_to_the_page() {
    let service = Service::start(gotify_service).await;
    let cfg = NotifierConfig::Channel(ChannelConfig {
        channel: Channel::Gotify(Gotify {
            server: service.url("/gotify/"),
            token: Secret::new("AppT0kenGotify"),
            priority: Some(2),
        }),
        timeout: Duration::from_secs(10),
    });
    let notifier =
        Notifier::from_config("g", &cfg, None, &reqwest::Client::new(), None).expect("notifier");
    notifier
        .deliver(&[threshold_alert("p-1")])
        .await
        .expect("delivered");
    let body = service.requests()[0].json();
    assert_eq!(body["priority"], 2);
    assert_eq!(
        body["extras"]["client::notification"]["click"]["url"],
        "https://example.org/quotes?a=1&b=2"
    );
    let message = body["message"].as_str().expect("message");
    assert!(!message.contains("/status/"), "{message}");
    assert!(
        message.ends_with("[Page](<https://example.org/quotes?a=1&b=2>)"),
        "{message}"
    );
}

// ---------------------------------------------------------------- validate

#[test]
fn validate_names_every_bad_channel_setting() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join("watches")).expect("watches dir");
    std::fs::write(
        dir.path().join("semclip.yaml"),
        "notifiers:\n\
         \x20 tg:\n\
         \x20   telegram: {token: {env: SEMCLIP_TEST_NO_SUCH_VAR}, chat_id: \"ops room\"}\n\
         \x20 room:\n\
         \x20   matrix: {server: ftp://matrix.example.org, room: ops, token: {env: MATRIX_T}}\n\
         \x20 push:\n\
         \x20   ntfy: {topic: \"bad topic!\", priority: 9, username: ops}\n\
         \x20 hook:\n\
         \x20   slack: {url: https://hooks.slack.com/services/T/B/C}\n\
         \x20 short:\n\
         \x20   url: tgram://123456:SECRETTOKEN/42\n\
         \x20 odd:\n\
         \x20   url: pushover://SECRETKEY/x\n\
         \x20 teamsy:\n\
         \x20   teams: {url: {env: TEAMS_URL}, timout: 5s}\n",
    )
    .expect("daemon file");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_semclip"))
        .args(["validate", "--config", "semclip.yaml"])
        .current_dir(dir.path())
        .env("MATRIX_T", "syt_x")
        .env("TEAMS_URL", "not a url SECRETURL")
        .env_remove("SEMCLIP_TEST_NO_SUCH_VAR")
        .output()
        .expect("semclip validate");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for line in [
        "semclip.yaml:3:23: notifiers.tg.telegram.token: environment variable SEMCLIP_TEST_NO_SUCH_VAR is not set",
        "semclip.yaml:3:65: notifiers.tg.telegram.chat_id: a chat id is a number (negative for groups and channels) or @channelname",
        "semclip.yaml:5:22: notifiers.room.matrix.server: use an http or https URL without query or fragment",
        "semclip.yaml:5:54: notifiers.room.matrix.room: a room is its id (!abc:example.org) or an alias (#ops:example.org)",
        "semclip.yaml:7:19: notifiers.push.ntfy.topic: a topic is 1 to 64 letters, digits, _ or -",
        "semclip.yaml:7:43: notifiers.push.ntfy.priority: must be 1 to 5",
        "semclip.yaml:7:56: notifiers.push.ntfy.username: a username needs a password",
        "semclip.yaml:9:18: notifiers.hook.slack.url: secrets are never inline: write {env: NAME} or {file: PATH}",
        "semclip.yaml:11:10: notifiers.short.url: this telegram URL carries a credential: write it as {env: NAME} or {file: PATH}",
        "semclip.yaml:13:10: notifiers.odd.url: unknown notifier URL scheme `pushover://`: use one of tgram, slack, discord, workflows, matrix, matrixs, ntfy, ntfys, gotify, gotifys",
    ] {
        assert!(
            stderr.lines().any(|l| l == line),
            "{line}\nnot in\n{stderr}"
        );
    }
    // The misspelt key is reported with a suggestion, and the bad URL in
    // the secret is named without being shown.
    assert!(
        stderr.lines().any(|l| l.starts_with("semclip.yaml:15:")
            && l.contains("unknown field `timout`")
            && l.contains("did you mean `timeout`")),
        "{stderr}"
    );
    assert!(
        stderr.lines().any(|l| l.starts_with("semclip.yaml:15:18: ")
            && l.contains("notifiers.teamsy.teams.url: the secret is not a URL")),
        "{stderr}"
    );
    for secret in ["SECRETTOKEN", "SECRETKEY", "SECRETURL"] {
        assert!(!stderr.contains(secret), "{secret} shown in\n{stderr}");
    }
}

#[test]
fn channel_notifiers_load_from_the_daemon_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join("watches")).expect("watches dir");
    std::fs::write(dir.path().join("tg.url"), "tgram://42:k3y/@quotes\n").expect("secret");
    std::fs::write(
        dir.path().join("hook.url"),
        "https://hooks.slack.com/services/T/B/C\n",
    )
    .expect("secret");
    let file = dir.path().join("semclip.yaml");
    std::fs::write(
        &file,
        "server: {public_url: https://semclip.example.org/}\n\
         notifiers:\n\
         \x20 tg: {url: {file: tg.url}}\n\
         \x20 phone: {url: \"ntfys://ntfy.example.org/semclip-ops?priority=high\"}\n\
         \x20 hook: {slack: {url: {file: hook.url}, timeout: 3s}}\n\
         \x20 push: {gotify: {server: https://push.example.org, token: {file: hook.url}, priority: 10}}\n",
    )
    .expect("daemon file");
    let loaded = semclip::config::load(Some(&file), None).expect("loads");
    let n = &loaded.daemon.notifiers;
    let NotifierConfig::Channel(tg) = &n["tg"] else {
        panic!("tg: {:?}", n["tg"])
    };
    let Channel::Telegram(Telegram {
        token,
        chat_id,
        api_url,
    }) = &tg.channel
    else {
        panic!("{tg:?}")
    };
    assert_eq!((token.expose(), chat_id.as_str()), ("42:k3y", "@quotes"));
    assert_eq!(api_url.as_str(), "https://api.telegram.org/");
    assert_eq!(tg.timeout, Duration::from_secs(10));
    let NotifierConfig::Channel(phone) = &n["phone"] else {
        panic!("phone")
    };
    assert!(
        matches!(&phone.channel, Channel::Ntfy(Ntfy { topic, priority: Some(4), auth: None, .. }) if topic == "semclip-ops"),
        "{phone:?}"
    );
    let NotifierConfig::Channel(hook) = &n["hook"] else {
        panic!("hook")
    };
    assert_eq!(hook.timeout, Duration::from_secs(3));
    let Channel::Slack(Slack { url }) = &hook.channel else {
        panic!("{hook:?}")
    };
    assert_eq!(url.expose().path(), "/services/T/B/C");
    assert!(
        matches!(
            &n["push"],
            NotifierConfig::Channel(ChannelConfig {
                channel: Channel::Gotify(Gotify {
                    priority: Some(10),
                    ..
                }),
                ..
            })
        ),
        "{:?}",
        n["push"]
    );
    // Debug output of the whole configuration shows no secret.
    let debug = format!("{:?}", loaded.daemon);
    for secret in ["k3y", "/services/T/B/C"] {
        assert!(!debug.contains(secret), "{secret} in {debug}");
    }
}

// ---------------------------------------------------------------- outbox

/// Through the real outbox and store: a revoked token fails the row at
/// once (one attempt, no retry); a rate limit waits as long as the service
/// asked; an outage is retried and then delivered with the same Matrix
/// transaction id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_outbox_gives_up_on_refusals_at_once_and_waits_as_asked() {
    use semclip::store::pool::StorePool;
    use semclip::store::{CheckState, OutboxState, Queued, Store, WatchStatus};
    use std::collections::HashMap;
    use std::time::UNIX_EPOCH;

    let telegram = Service::start(telegram_service).await;
    let matrix = Service::start(matrix_service()).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("store.db");
    let t0 = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    {
        let mut store = Store::open(&path).expect("store");
        let queued = |alert: Alert, notifier: &str| Queued {
            alert_id: alert.id.clone(),
            notifier: notifier.to_owned(),
            body: serde_json::to_string(&alert).expect("alert JSON"),
            digest: None,
        };
        let state = CheckState {
            status: WatchStatus {
                watch: "gazp".into(),
                ..WatchStatus::default()
            },
            alerts: vec![
                queued(threshold_alert("q-revoked"), "tg-revoked"),
                queued(threshold_alert("q-limited"), "tg-limited"),
                queued(threshold_alert("q-matrix"), "room"),
            ],
            ..CheckState::default()
        };
        store
            .record_check("gazp", t0, None, &state)
            .expect("queued");
    }
    let stores = Arc::new(StorePool::open(semclip::store::Database::Sqlite(path)).expect("pool"));
    let revoked = notifier(Channel::Telegram(Telegram {
        api_url: telegram.base.clone(),
        token: Secret::new("123456789:revoked"),
        chat_id: "-1001234567890".to_owned(),
    }));
    // A second stand-in answers this one: rate limited.
    let limited_service = Service::start(telegram_service).await;
    limited_service.mode(Mode::Limited);
    let limited = notifier(telegram_channel(&limited_service));
    let room = notifier(Channel::Matrix(Matrix {
        server: matrix.base.clone(),
        room: ROOM_ID.to_owned(),
        token: Secret::new(MATRIX_TOKEN),
    }));
    let notifiers: HashMap<String, Notifier> = [
        ("tg-revoked".to_owned(), revoked),
        ("tg-limited".to_owned(), limited),
        ("room".to_owned(), room),
    ]
    .into_iter()
    .collect();
    let give_up = Duration::from_secs(24 * 3600);
    let rows = |stores: &Arc<StorePool>| stores.with(|s| s.outbox()).expect("outbox");

    matrix.mode(Mode::Down);
    let now = t0 + Duration::from_secs(1);
    let round = semclip::daemon::outbox::deliver_due(&stores, &notifiers, give_up, now)
        .await
        .expect("round 1");
    assert_eq!((round.delivered, round.retrying, round.given_up), (0, 2, 1));
    let outbox = rows(&stores);
    let row = |id: &str| {
        outbox
            .iter()
            .find(|r| r.alert_id == id)
            .cloned()
            .expect("row")
    };
    let gone = row("q-revoked");
    assert_eq!((gone.state, gone.attempts), (OutboxState::Failed, 1));
    assert!(
        gone.last_error
            .as_deref()
            .is_some_and(|e| e.contains("Unauthorized")),
        "{gone:?}"
    );
    assert!(
        !gone.last_error.unwrap_or_default().contains("revoked"),
        "the token stays out"
    );
    let waiting = row("q-limited");
    assert_eq!(waiting.state, OutboxState::Pending);
    assert!(
        waiting.next_attempt >= now + Duration::from_secs(41),
        "{waiting:?}"
    );
    let retry = row("q-matrix");
    assert_eq!(retry.state, OutboxState::Pending);
    assert!(
        retry.next_attempt < now + Duration::from_secs(41),
        "{retry:?}"
    );

    // Later: Matrix is back; the revoked row is not tried again.
    matrix.mode(Mode::Up);
    let later = retry.next_attempt;
    let round = semclip::daemon::outbox::deliver_due(&stores, &notifiers, give_up, later)
        .await
        .expect("round 2");
    assert_eq!((round.delivered, round.given_up), (1, 0), "{round:?}");
    assert_eq!(
        telegram.requests().len(),
        1,
        "a refused delivery is sent once"
    );
    let puts: Vec<String> = matrix
        .requests()
        .iter()
        .filter(|r| r.method == Method::PUT)
        .map(|r| r.uri.path().to_owned())
        .collect();
    assert_eq!(puts.len(), 2);
    assert_eq!(puts[0], puts[1], "the retry reuses the transaction id");
    assert!(puts[0].ends_with("/q-matrix"), "{puts:?}");
    let mut left: Vec<String> = rows(&stores).into_iter().map(|r| r.alert_id).collect();
    left.sort();
    assert_eq!(left, ["q-limited", "q-revoked"]);
}

// ------------------------------------------------------- hostile page text

/// Page text written to dress up an alert: links in each service's markup
/// and bare, mentions, markup, bidi overrides, control characters, and a
/// very long value.
fn hostile_corpus() -> Vec<String> {
    let mut corpus: Vec<String> = [
        "[Log in again](https://evil.example/x)",
        "<https://evil.example/y|Click to re-login> <!channel> <!here> <@U024BE7LH>",
        "@everyone @here @room @channel",
        "<a href=\"https://evil.example/z\">Open</a> <b>bold</b> **bold** _it_ `code` ~~s~~",
        "www.evil.example and evil.example/login and mailto:boss@evil.example",
        "\u{202E}gnp.exe\u{202C} \u{2066}isolated\u{2069} bell\u{7} esc\u{1b}[31m nul\u{0} new\nline",
    ]
    .map(str::to_owned)
    .to_vec();
    corpus.push(format!("{} https://evil.example/long", "A".repeat(20_000)));
    corpus
}

/// A threshold alert and a changed alert whose every page-made field is
/// hostile.
fn hostile_alerts() -> [Alert; 2] {
    let corpus = hostile_corpus();
    let mut threshold = threshold_alert("h-1");
    threshold.summary = format!("GAZP {} crossed above 300", corpus[0]);
    if let Some(t) = threshold.threshold.as_mut() {
        t.context = corpus[1].clone();
        t.node = Some(corpus[4].clone());
    }
    let mut changed = changed_alert("h-2");
    changed.summary = corpus[2].clone();
    let template = changed.changes[0].clone();
    changed.changes = corpus
        .iter()
        .map(|text| {
            let mut line = template.clone();
            line.text = format!("update Shares / GAZP: {text}");
            line
        })
        .collect();
    [threshold, changed]
}

/// Every string a reader of `request` can see: JSON string values, or the
/// text body, and the title header.
fn visible_strings(request: &ReceivedRequest) -> Vec<String> {
    fn walk(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::String(s) => out.push(s.clone()),
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            Value::Object(map) => map.values().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    if is_json(request) {
        walk(&request.json(), &mut out);
    } else {
        out.push(String::from_utf8_lossy(&request.body).into_owned());
    }
    // ntfy's title, an RFC 2047 encoded word when not ASCII.
    if let Some(title) = request.header("title") {
        let decoded = title
            .strip_prefix("=?UTF-8?B?")
            .and_then(|t| t.strip_suffix("?="))
            .and_then(|t| base64::engine::general_purpose::STANDARD.decode(t).ok())
            .and_then(|b| String::from_utf8(b).ok());
        out.push(decoded.unwrap_or_else(|| title.to_owned()));
    }
    out
}

/// `text` without its backtick code spans.
fn outside_code(text: &str) -> String {
    text.split('`').step_by(2).collect::<Vec<_>>().join(" ")
}

/// No link a page made, no mention, no bidi override, no control character
/// other than a line break, in anything the receiver got; the one link a
/// message carries in markup is semclip's own.
fn assert_inert(service: &str, requests: &[ReceivedRequest]) {
    assert!(!requests.is_empty(), "{service}: nothing delivered");
    for request in requests {
        for text in visible_strings(request) {
            let show = || format!("{service}: {}", text.chars().take(600).collect::<String>());
            for live in [
                "evil.example",
                "://evil",
                "@everyone",
                "@here",
                "@room",
                "@channel",
                "<a href=\"https://evil",
                "](https://evil",
            ] {
                assert!(!text.contains(live), "{live:?} is live in {}", show());
            }
            // Slack's own mention syntax means something to Slack alone
            // (elsewhere it is text, or escaped).
            if service == "slack" {
                for live in ["<!channel>", "<!here>", "<@U"] {
                    assert!(!text.contains(live), "{live:?} is live in {}", show());
                }
            }
            assert!(
                !text
                    .chars()
                    .any(|c| matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')),
                "a bidi control in {}",
                show()
            );
            assert!(
                !text.chars().any(|c| c.is_control() && c != '\n'),
                "a control character in {}",
                show()
            );
        }
        // The only markup links are semclip's own, in each service's markup.
        let body = if is_json(request) {
            request.json()
        } else {
            Value::Null
        };
        let marked: Vec<(&str, &str)> = match service {
            "slack" => vec![
                ("<", body["text"].as_str().unwrap_or_default()),
                (
                    "<",
                    body["blocks"][1]["text"]["text"]
                        .as_str()
                        .unwrap_or_default(),
                ),
            ],
            "discord" => vec![("](", body["content"].as_str().unwrap_or_default())],
            "gotify" => vec![("](", body["message"].as_str().unwrap_or_default())],
            "telegram" => vec![("<a ", body["text"].as_str().unwrap_or_default())],
            "matrix" => vec![("<a ", body["formatted_body"].as_str().unwrap_or_default())],
            _ => Vec::new(),
        };
        for (opening, text) in marked {
            // Inside a code span nothing is markup (Markdown and mrkdwn).
            let text = &outside_code(text);
            let ours = match opening {
                "<" => "<https://semclip.example.org/",
                "](" => "](<https://semclip.example.org/",
                _ => "<a href=\"https://semclip.example.org/",
            };
            for (at, _) in text.match_indices(opening) {
                assert!(
                    text[at..].starts_with(ours),
                    "{service}: a link or mention that is not ours at {:?}",
                    text[at..].chars().take(80).collect::<String>()
                );
            }
        }
        if service == "teams" {
            // Page text only in TextRuns, which Teams never reads as Markdown.
            let card = &request.json()["attachments"][0]["content"];
            for element in card["body"].as_array().into_iter().flatten() {
                assert_ne!(element["type"], "FactSet", "{element}");
                if element["type"] == "TextBlock" {
                    // Only semclip's own words: a cut note, or "and N more"
                    // linking the change view.
                    let text = element["text"].as_str().unwrap_or_default();
                    let ours = text.starts_with("… ")
                        || text.starts_with("[View changes](https://semclip.example.org/")
                        || text
                            .strip_prefix("[and ")
                            .and_then(|rest| rest.split_once(" more](https://semclip.example.org/"))
                            .is_some_and(|(n, _)| n.parse::<usize>().is_ok());
                    assert!(ours, "page text in a TextBlock: {text}");
                }
            }
        }
    }
}

#[tokio::test]
async fn hostile_page_text_reaches_no_channel_as_a_link_or_a_mention() {
    let alerts = hostile_alerts();
    let one = [alerts[0].clone()];

    let slack = Service::start(slack_service).await;
    let teams = Service::start(teams_service).await;
    let mut teams_hook = teams.url("/workflows/wf42/triggers/manual/paths/invoke");
    teams_hook
        .query_pairs_mut()
        .append_pair("api-version", "2016-06-01")
        .append_pair("sig", "s1gn4ture");
    let discord = Service::start(discord_service).await;
    let telegram = Service::start(telegram_service).await;
    let matrix = Service::start(matrix_service()).await;
    let ntfy = Service::start(ntfy_service("Bearer tk_hostile")).await;
    let gotify = Service::start(gotify_service).await;
    let channels: Vec<(&str, &Service, Channel)> = vec![
        (
            "slack",
            &slack,
            Channel::Slack(Slack {
                url: SecretUrl::new(slack.url("/services/T0001/B0002/XXXX")),
            }),
        ),
        (
            "teams",
            &teams,
            Channel::Teams(Teams {
                url: SecretUrl::new(teams_hook),
            }),
        ),
        (
            "discord",
            &discord,
            Channel::Discord(Discord {
                url: SecretUrl::new(discord.url("/api/webhooks/1122334455/d1sc0rd-t0ken")),
            }),
        ),
        ("telegram", &telegram, telegram_channel(&telegram)),
        (
            "matrix",
            &matrix,
            Channel::Matrix(Matrix {
                server: matrix.base.clone(),
                room: "#ops:matrix.example.org".to_owned(),
                token: Secret::new(MATRIX_TOKEN),
            }),
        ),
        (
            "ntfy",
            &ntfy,
            Channel::Ntfy(Ntfy {
                server: ntfy.base.clone(),
                topic: "semclip-ops".to_owned(),
                auth: Some(NtfyAuth::Token(Secret::new("tk_hostile"))),
                priority: None,
                tags: Vec::new(),
            }),
        ),
        (
            "gotify",
            &gotify,
            Channel::Gotify(Gotify {
                server: gotify.url("/gotify/"),
                token: Secret::new("AppT0kenGotify"),
                priority: None,
            }),
        ),
    ];
    for (name, service, channel) in channels {
        let notifier = notifier(channel);
        notifier
            .deliver(&alerts)
            .await
            .unwrap_or_else(|e| panic!("{name}: the digest: {e:?}"));
        notifier
            .deliver(&one)
            .await
            .unwrap_or_else(|e| panic!("{name}: one alert: {e:?}"));
        let requests: Vec<ReceivedRequest> = service
            .requests()
            .into_iter()
            .filter(|r| r.method != Method::GET)
            .collect();
        assert_eq!(requests.len(), 2, "{name}: {requests:?}");
        assert_inert(name, &requests);
        // The readable part survives: the threshold's name and our link.
        let all = requests
            .iter()
            .flat_map(visible_strings)
            .collect::<Vec<_>>()
            .join("\n");
        let readable = markdown_unescape(&html_unescape(&all));
        assert!(readable.contains("gazp-high"), "{name}: {all}");
    }
}
