//! Chat and push notifiers: Slack, Microsoft Teams, Discord, Telegram,
//! Matrix, ntfy and Gotify. Each formats one alert or a digest in the
//! service's own markup ([`super::format`]) with a link to the watch's
//! status page (or the watched page), and posts it with the shared HTTP
//! client ([`super::http`]).
//!
//! # Guarantees
//!
//! - Messages stay within each service's documented size limit (Discord
//!   2000 characters of `content`, Telegram 4096, ntfy 4096 bytes, Slack
//!   3000 per section); what does not fit is cut at whole lines.
//! - Tokens and webhook URLs never appear in errors or `Debug` output:
//!   targets are named by origin, answers are quoted with the token blanked.
//! - A Matrix retry reuses its transaction id (the alert's delivery id, or
//!   a hash of a digest's ids), so the homeserver drops the duplicate.
//! - Status: 2xx delivered; 408, 429, 5xx and no answer transient (with the
//!   service's retry delay when it gives one); other 4xx permanent. Telegram
//!   and Slack answers that say `ok: false` are failures even under 2xx.
//!
//! # Decisions
//!
//! - Discord messages go as `content` with `allowed_mentions` empty, so a
//!   page saying `@everyone` pings nobody.
//! - Matrix room aliases are resolved once (the first delivery) and the
//!   room id kept; a failed lookup is not kept.

use std::fmt;
use std::time::Duration;

use base64::Engine as _;
use reqwest::header::{CONTENT_TYPE, HeaderValue};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;
use url::Url;

use super::format::{self, Dialect, Layout, Links, Measure, cut, facts, is_alarm, title};
use super::http::{self, Answer};
use super::{Alert, DeliveryError};
use crate::config::{Channel, ChannelConfig, NtfyAuth};

/// Slack's limit of one section block's text.
const SLACK_SECTION: usize = 3000;
/// Slack's limit of a header block's text.
const SLACK_HEADER: usize = 150;
/// Discord's limit of a message's `content`.
const DISCORD_CONTENT: usize = 2000;
/// Telegram's limit of a message's text.
const TELEGRAM_TEXT: usize = 4096;
/// ntfy's limit of a message body (longer ones become attachments).
const NTFY_BODY: usize = 4096;
/// What semclip puts in one Matrix event body (events are at most 64 KiB).
const MATRIX_BODY: usize = 16_000;
/// What semclip puts in one Gotify message.
const GOTIFY_BODY: usize = 8000;
/// Change lines shown in one Teams card.
const TEAMS_CHANGES: usize = 50;

/// Posts alerts to a chat or push service.
pub struct ChannelNotifier {
    name: String,
    channel: Channel,
    timeout: Duration,
    links: Links,
    http: reqwest::Client,
    /// The Matrix room id, once an alias has been resolved.
    room_id: OnceCell<String>,
}

impl fmt::Debug for ChannelNotifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChannelNotifier")
            .field("name", &self.name)
            .field("channel", &self.channel)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl ChannelNotifier {
    pub(super) fn new(
        name: &str,
        cfg: &ChannelConfig,
        public_url: Option<&Url>,
        http: reqwest::Client,
    ) -> ChannelNotifier {
        ChannelNotifier {
            name: name.to_owned(),
            channel: cfg.channel.clone(),
            timeout: cfg.timeout,
            links: Links::new(public_url),
            http,
            room_id: OnceCell::new(),
        }
    }

    /// The notifier's name in the daemon file.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `slack https://hooks.slack.com`: the kind and origin, never a path.
    fn target(&self, url: &Url) -> String {
        format!(
            "{} {}",
            self.channel.kind(),
            url.origin().ascii_serialization()
        )
    }

    #[expect(
        clippy::too_many_lines,
        reason = "one arm per channel; giving each channel a unit of its own (issue 33) takes it apart"
    )]
    pub(super) async fn deliver(&self, alerts: &[Alert]) -> Result<(), DeliveryError> {
        let Some(first) = alerts.first() else {
            return Ok(());
        };
        match &self.channel {
            Channel::Slack { url } | Channel::Teams { url } | Channel::Discord { url } => {
                let body = match &self.channel {
                    Channel::Slack { .. } => slack(alerts, &self.links),
                    Channel::Teams { .. } => teams(alerts, &self.links),
                    _ => discord(alerts, &self.links),
                };
                let target = self.target(url.expose());
                let answer = self.post_json(url.expose(), &body, &target).await?;
                hook_verdict(answer, &target)
            }
            Channel::Telegram {
                api_url,
                token,
                chat_id,
            } => {
                let target = self.target(api_url);
                let bot = format!("bot{}", token_segment(token.expose()));
                let url = join(api_url, &[&bot, "sendMessage"]);
                let body = telegram(alerts, &self.links, chat_id);
                let answer = self.post_json(&url, &body, &target).await?;
                telegram_verdict(answer, &target, token.expose())
            }
            Channel::Matrix {
                server,
                room,
                token,
            } => {
                let target = self.target(server);
                let room_id = self.room_id(server, room, token.expose(), &target).await?;
                let url = join(
                    server,
                    &[
                        "_matrix/client/v3/rooms",
                        &segment(room_id),
                        "send/m.room.message",
                        &segment(&transaction_id(alerts)),
                    ],
                );
                let request = self
                    .http
                    .put(url)
                    .bearer_auth(token.expose())
                    .header(CONTENT_TYPE, JSON)
                    .body(encode(&matrix(alerts, &self.links)));
                let answer = http::send(request, &target, self.timeout).await?;
                matrix_verdict(answer, &target, token.expose()).map(drop)
            }
            Channel::Ntfy {
                server,
                topic,
                auth,
                priority,
                tags,
            } => {
                let target = self.target(server);
                let mut request = self
                    .http
                    .post(join(server, &[&segment(topic)]))
                    .header(CONTENT_TYPE, "text/plain; charset=utf-8")
                    .header("Title", header_text(&title(alerts)))
                    .header(
                        "Priority",
                        priority
                            .unwrap_or(if alerts.iter().any(|a| is_alarm(a.kind)) {
                                4
                            } else {
                                3
                            })
                            .to_string(),
                    )
                    .header("Tags", ntfy_tags(alerts, tags))
                    .body(format::render(
                        alerts,
                        &self.links,
                        Layout {
                            dialect: Dialect::Plain,
                            measure: Measure::Bytes,
                            limit: NTFY_BODY,
                            title: false,
                            link: false,
                        },
                    ));
                let (_, link) = self.links.of(first);
                if format::is_web_link(&link) {
                    request = request.header("Click", link);
                }
                let secret = match auth {
                    Some(NtfyAuth::Token(token)) => {
                        request = request.bearer_auth(token.expose());
                        token.expose()
                    }
                    Some(NtfyAuth::Basic { username, password }) => {
                        request = request.basic_auth(username, Some(password.expose()));
                        password.expose()
                    }
                    None => "",
                };
                http::send(request, &target, self.timeout)
                    .await?
                    .check(&target, &[secret])
                    .map(drop)
            }
            Channel::Gotify {
                server,
                token,
                priority,
            } => {
                let target = self.target(server);
                let request = self
                    .http
                    .post(join(server, &["message"]))
                    .header("X-Gotify-Key", token.expose())
                    .header(CONTENT_TYPE, JSON)
                    .body(encode(&gotify(alerts, &self.links, *priority)));
                http::send(request, &target, self.timeout)
                    .await?
                    .check(&target, &[token.expose()])
                    .map(drop)
            }
        }
    }

    async fn post_json(
        &self,
        url: &Url,
        body: &Value,
        target: &str,
    ) -> Result<Answer, DeliveryError> {
        let request = self
            .http
            .post(url.clone())
            .header(CONTENT_TYPE, JSON)
            .body(encode(body));
        http::send(request, target, self.timeout).await
    }

    /// The room id: `room` itself, or the id its alias names (looked up
    /// once).
    async fn room_id<'a>(
        &'a self,
        server: &Url,
        room: &'a str,
        token: &str,
        target: &str,
    ) -> Result<&'a str, DeliveryError> {
        if !room.starts_with('#') {
            return Ok(room);
        }
        self.room_id
            .get_or_try_init(|| async {
                let url = join(
                    server,
                    &["_matrix/client/v3/directory/room", &segment(room)],
                );
                let request = self.http.get(url).bearer_auth(token);
                let answer = http::send(request, target, self.timeout).await?;
                let body = matrix_verdict(answer, target, token)?;
                body.get("room_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .ok_or_else(|| {
                        DeliveryError::permanent(format!(
                            "{target}: the room alias lookup answered without a room_id"
                        ))
                    })
            })
            .await
            .map(String::as_str)
    }
}

/// `base` with `segments` (each already percent-encoded) added to its path.
fn join(base: &Url, segments: &[&str]) -> Url {
    let mut url = base.clone();
    let mut path = url.path().trim_end_matches('/').to_owned();
    for s in segments {
        path.push('/');
        path.push_str(s);
    }
    url.set_path(&path);
    url
}

/// The content type of every JSON body.
const JSON: &str = "application/json";

/// A JSON body (serialising a `Value` cannot fail).
fn encode(body: &Value) -> Vec<u8> {
    serde_json::to_vec(body).unwrap_or_default()
}

/// What a bot token escapes in a path: like [`format::SEGMENT`], but the
/// colon of `123456:ABC...` kept as Telegram documents it.
const TOKEN: &percent_encoding::AsciiSet = &format::SEGMENT.remove(b':');

/// `text` as one URL path segment.
fn segment(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, format::SEGMENT).to_string()
}

/// A bot token as a path segment.
fn token_segment(token: &str) -> String {
    percent_encoding::utf8_percent_encode(token, TOKEN).to_string()
}

/// A header value: ASCII as it is, anything else as an RFC 2047 encoded
/// word (ntfy decodes those).
fn header_text(text: &str) -> HeaderValue {
    let plain = text.chars().all(|c| c.is_ascii() && !c.is_ascii_control());
    let value = if plain {
        text.to_owned()
    } else {
        format!(
            "=?UTF-8?B?{}?=",
            base64::engine::general_purpose::STANDARD.encode(text)
        )
    };
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("semclip"))
}

/// ntfy tags: an emoji for the alert (ntfy shows known tags as emojis),
/// `semclip`, then the configured ones.
fn ntfy_tags(alerts: &[Alert], extra: &[String]) -> HeaderValue {
    let emoji = if alerts.iter().any(|a| is_alarm(a.kind)) {
        "warning"
    } else {
        "bell"
    };
    let mut tags = vec![emoji.to_owned(), "semclip".to_owned()];
    tags.extend(extra.iter().cloned());
    header_text(&tags.join(","))
}

/// The Matrix transaction id: the alert id, or for a digest a hash of all
/// its ids (the same rows give the same id on every retry).
fn transaction_id(alerts: &[Alert]) -> String {
    match alerts {
        [one] => one.id.clone(),
        _ => {
            let mut hash = Sha256::new();
            for alert in alerts {
                hash.update(alert.id.as_bytes());
                hash.update(b"\n");
            }
            let hex = hex::encode(hash.finalize());
            format!("digest-{}", &hex[..32])
        }
    }
}

/// Slack: a header block with the title, a section in mrkdwn, a context
/// block with the link, and the title as the notification `text`.
fn slack(alerts: &[Alert], links: &Links) -> Value {
    let section = format::render(
        alerts,
        links,
        Layout {
            dialect: Dialect::Slack,
            measure: Measure::Utf16,
            limit: SLACK_SECTION,
            title: false,
            link: true,
        },
    );
    let title = title(alerts);
    json!({
        // The notification text is mrkdwn: escaped like the section.
        "text": Dialect::Slack.text(&title),
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": cut(&title, SLACK_HEADER)}},
            {"type": "section", "text": {"type": "mrkdwn", "text": section}},
        ],
    })
}

/// Webhooks answer by status. Slack's incoming webhooks answer `ok` (200)
/// or an error word with a 4xx (`invalid_token`, `channel_not_found`,
/// `no_service`, ...); an answer in JSON with `"ok": false` (Slack's Web
/// API shape) is refused as well.
fn hook_verdict(answer: Answer, target: &str) -> Result<(), DeliveryError> {
    let answer = answer.check(target, &[])?;
    match serde_json::from_str::<Value>(&answer.body) {
        Ok(v) if v.get("ok") == Some(&Value::Bool(false)) => {
            let error = v
                .get("error")
                .and_then(Value::as_str)
                .unwrap_or("ok: false");
            Err(DeliveryError::permanent(format!(
                "{target}: refused: {}",
                http::snippet(error, &[])
            )))
        }
        _ => Ok(()),
    }
}

/// Teams: a message with one Adaptive Card (1.4): the title, per alert its
/// facts and its change lines in monospace, and a button to the link.
///
/// Page text goes only into `TextRun`s of `RichTextBlock`s: a `TextBlock`
/// or a `FactSet` value parses Markdown (a page's `[Log in](https://…)`
/// would become a link), a `TextRun` never does.
fn teams(alerts: &[Alert], links: &Links) -> Value {
    /// A block of runs, each (text, extra properties).
    fn runs(parts: &[(&str, Value)], extra: Value) -> Value {
        let inlines: Vec<Value> = parts
            .iter()
            .map(|(text, props)| {
                let mut run = json!({"type": "TextRun", "text": text});
                if let (Some(run), Some(props)) = (run.as_object_mut(), props.as_object()) {
                    run.extend(props.clone());
                }
                run
            })
            .collect();
        let mut block = json!({"type": "RichTextBlock", "inlines": inlines});
        if let (Some(block), Some(extra)) = (block.as_object_mut(), extra.as_object()) {
            block.extend(extra.clone());
        }
        block
    }
    let mut body = vec![runs(
        &[(
            &title(alerts),
            json!({"size": "Medium", "weight": "Bolder"}),
        )],
        json!({}),
    )];
    let mut changes_left = TEAMS_CHANGES;
    for alert in alerts {
        if alerts.len() > 1 {
            let summary = cut(&format::inert(&alert.summary), format::MAX_VALUE_CHARS);
            body.push(runs(
                &[(&summary, json!({"weight": "Bolder"}))],
                json!({"separator": true}),
            ));
        }
        for (label, value) in facts(alert) {
            body.push(runs(
                &[
                    (&format!("{label}: "), json!({"weight": "Bolder"})),
                    (&cut(&value, format::MAX_VALUE_CHARS), json!({})),
                ],
                json!({"spacing": "None"}),
            ));
        }
        let shown = alert.changes.len().min(changes_left);
        for change in &alert.changes[..shown] {
            let line = cut(&format::inert(&change.text), format::MAX_VALUE_CHARS);
            body.push(runs(
                &[(&line, json!({"fontType": "Monospace"}))],
                json!({"spacing": "None"}),
            ));
        }
        changes_left -= shown;
        if shown < alert.changes.len() {
            body.push(json!({
                "type": "TextBlock",
                "text": format!("… {} more changes", alert.changes.len() - shown),
                "isSubtle": true,
            }));
        }
    }
    let mut card = json!({
        "type": "AdaptiveCard",
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "version": "1.4",
        "body": body,
        "msteams": {"width": "Full"},
    });
    if let Some(first) = alerts.first() {
        let (label, url) = links.of(first);
        if format::is_web_link(&url) {
            card["actions"] = json!([{"type": "Action.OpenUrl", "title": label, "url": url}]);
        }
    }
    json!({
        "type": "message",
        "attachments": [{
            "contentType": "application/vnd.microsoft.card.adaptive",
            "contentUrl": null,
            "content": card,
        }],
    })
}

/// Discord: Markdown `content` within 2000 characters, mentions off.
fn discord(alerts: &[Alert], links: &Links) -> Value {
    let content = format::render(
        alerts,
        links,
        Layout {
            dialect: Dialect::Markdown,
            measure: Measure::Utf16,
            limit: DISCORD_CONTENT,
            title: true,
            link: true,
        },
    );
    json!({"content": content, "allowed_mentions": {"parse": []}})
}

/// Telegram: `sendMessage` with HTML within 4096 characters, no link
/// preview.
fn telegram(alerts: &[Alert], links: &Links, chat_id: &str) -> Value {
    let text = format::render(
        alerts,
        links,
        Layout {
            dialect: Dialect::Html,
            measure: Measure::Utf16,
            limit: TELEGRAM_TEXT,
            title: true,
            link: true,
        },
    );
    json!({
        "chat_id": chat_id,
        "text": text,
        "parse_mode": "HTML",
        "link_preview_options": {"is_disabled": true},
    })
}

/// Telegram answers `{"ok": true, ...}` or `{"ok": false, "error_code":
/// 401, "description": ..., "parameters": {"retry_after": 30}}`; the
/// error code decides like an HTTP status.
fn telegram_verdict(answer: Answer, target: &str, token: &str) -> Result<(), DeliveryError> {
    let parsed: Option<Value> = serde_json::from_str(&answer.body).ok();
    let ok = parsed
        .as_ref()
        .and_then(|v| v.get("ok"))
        .and_then(Value::as_bool);
    if answer.status.is_success() && ok != Some(false) {
        return Ok(());
    }
    let Some(v) = parsed else {
        return answer.check(target, &[token]).map(drop);
    };
    let code = v
        .get("error_code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .and_then(|c| reqwest::StatusCode::from_u16(c).ok())
        .unwrap_or(answer.status);
    let description = v
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("ok: false");
    let mut error = Answer {
        status: code,
        headers: answer.headers,
        body: String::new(),
    }
    .refused(target, description, &[token]);
    if error.transient {
        let wait = v
            .pointer("/parameters/retry_after")
            .and_then(Value::as_u64)
            .map(Duration::from_secs);
        error.retry_after = wait
            .map(|w| w.min(http::MAX_RETRY_AFTER))
            .or(error.retry_after);
    }
    // A 2xx with ok: false has no status to go by: it will repeat.
    if code.is_success() {
        error.transient = false;
    }
    Err(error)
}

/// Matrix: an `m.text` event with a plain `body` and an HTML
/// `formatted_body`.
fn matrix(alerts: &[Alert], links: &Links) -> Value {
    let layout = |dialect| Layout {
        dialect,
        measure: Measure::Bytes,
        limit: MATRIX_BODY,
        title: true,
        link: true,
    };
    let html = format::render(alerts, links, layout(Dialect::Html)).replace('\n', "<br>\n");
    json!({
        "msgtype": "m.text",
        "body": format::render(alerts, links, layout(Dialect::Plain)),
        "format": "org.matrix.custom.html",
        "formatted_body": html,
    })
}

/// Matrix errors are `{"errcode": "M_...", "error": ...}`; a rate limit
/// (429, `M_LIMIT_EXCEEDED`) says how long to wait in `retry_after_ms`.
fn matrix_verdict(answer: Answer, target: &str, token: &str) -> Result<Value, DeliveryError> {
    let parsed: Value = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
    if answer.status.is_success() {
        return Ok(parsed);
    }
    let detail = match (
        parsed.get("errcode").and_then(Value::as_str),
        parsed.get("error").and_then(Value::as_str),
    ) {
        (Some(code), Some(text)) => format!("{code}: {text}"),
        (Some(code), None) => code.to_owned(),
        _ => answer.body.clone(),
    };
    let mut error = answer.refused(target, &detail, &[token]);
    if error.transient
        && let Some(ms) = parsed.get("retry_after_ms").and_then(Value::as_u64)
    {
        error.retry_after = Some(Duration::from_millis(ms).min(http::MAX_RETRY_AFTER));
    }
    Err(error)
}

/// Gotify: a Markdown message with a title, priority and a click URL.
fn gotify(alerts: &[Alert], links: &Links, priority: Option<u8>) -> Value {
    let message = format::render(
        alerts,
        links,
        Layout {
            dialect: Dialect::Markdown,
            measure: Measure::Bytes,
            limit: GOTIFY_BODY,
            title: false,
            link: true,
        },
    );
    let priority = priority.unwrap_or(if alerts.iter().any(|a| is_alarm(a.kind)) {
        8
    } else {
        5
    });
    let mut extras = json!({"client::display": {"contentType": "text/markdown"}});
    if let Some(first) = alerts.first() {
        let (_, url) = links.of(first);
        if format::is_web_link(&url) {
            extras["client::notification"] = json!({"click": {"url": url}});
        }
    }
    json!({
        "title": title(alerts),
        "message": message,
        "priority": priority,
        "extras": extras,
    })
}

#[cfg(test)]
#[allow(clippy::expect_used, reason = "tests fail loudly on purpose")]
mod tests {
    use super::*;
    use crate::notify::AlertKind;

    fn alert(id: &str) -> Alert {
        Alert {
            id: id.to_owned(),
            kind: AlertKind::Changed,
            watch: "w".to_owned(),
            watch_title: None,
            url: "https://example.org/".to_owned(),
            at: "2025-01-01T00:00:00Z".to_owned(),
            summary: "Prix €".to_owned(),
            threshold: None,
            changes: Vec::new(),
            records: Vec::new(),
            error: None,
            failures: None,
        }
    }

    #[test]
    fn transaction_ids_are_stable_per_set_of_rows() {
        assert_eq!(transaction_id(&[alert("a-1")]), "a-1");
        let two = transaction_id(&[alert("a-1"), alert("a-2")]);
        assert_eq!(two, transaction_id(&[alert("a-1"), alert("a-2")]));
        assert_ne!(two, transaction_id(&[alert("a-1"), alert("a-3")]));
        assert!(two.starts_with("digest-") && two.len() == 39, "{two}");
    }

    #[test]
    fn non_ascii_headers_are_encoded_words() {
        assert_eq!(header_text("plain title"), "plain title");
        let encoded = header_text("Prix €");
        let text = encoded.to_str().expect("ascii");
        assert!(
            text.starts_with("=?UTF-8?B?") && text.ends_with("?="),
            "{text}"
        );
        let inner = &text[10..text.len() - 2];
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(inner)
            .expect("base64");
        assert_eq!(decoded, "Prix €".as_bytes());
    }

    #[test]
    fn join_keeps_the_base_path() {
        let base = Url::parse("https://h.example/gotify").expect("url");
        assert_eq!(
            join(&base, &["message"]).as_str(),
            "https://h.example/gotify/message"
        );
        let root = Url::parse("https://h.example/").expect("url");
        assert_eq!(
            join(&root, &["a/b", &segment("!a:b.org")]).as_str(),
            "https://h.example/a/b/%21a%3Ab.org"
        );
        assert_eq!(token_segment("12:A b"), "12:A%20b");
    }
}
