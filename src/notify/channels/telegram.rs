//! Telegram: the Bot API's `sendMessage` in HTML, and its `ok` verdict.

use std::time::Duration;

use serde_json::{Value, json};

use super::{ChannelNotifier, Deliver, join};
use crate::config::channels::Telegram;
use crate::notify::format::{self, Dialect, Layout, Measure};
use crate::notify::http::{self, Answer};
use crate::notify::links::{Links, SEGMENT};
use crate::notify::{Alert, DeliveryError};

/// Telegram's limit of a message's text.
const TELEGRAM_TEXT: usize = 4096;

impl Deliver for Telegram {
    async fn deliver(&self, via: &ChannelNotifier, alerts: &[Alert]) -> Result<(), DeliveryError> {
        let target = via.target(&self.api_url);
        let bot = format!("bot{}", token_segment(self.token.expose()));
        let url = join(&self.api_url, &[&bot, "sendMessage"]);
        let body = telegram(alerts, &via.links, &self.chat_id);
        let answer = via.post_json(&url, &body, &target).await?;
        telegram_verdict(answer, &target, self.token.expose())
    }
}

/// What a bot token escapes in a path: like [`SEGMENT`], but the
/// colon of `123456:ABC...` kept as Telegram documents it.
const TOKEN: &percent_encoding::AsciiSet = &SEGMENT.remove(b':');

/// A bot token as a path segment.
fn token_segment(token: &str) -> String {
    percent_encoding::utf8_percent_encode(token, TOKEN).to_string()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bot_tokens_keep_their_colon_in_the_path() {
        assert_eq!(token_segment("12:A b"), "12:A%20b");
    }
}
