//! ntfy: the message as plain text, the title, priority, tags and click
//! link as headers, posted to the topic.

use base64::Engine as _;
use reqwest::header::{CONTENT_TYPE, HeaderValue};

use super::{ChannelNotifier, Deliver, join, segment};
use crate::config::NtfyAuth;
use crate::config::channels::Ntfy;
use crate::notify::format::{self, Dialect, Layout, Measure, is_alarm, title};
use crate::notify::{Alert, DeliveryError};

/// ntfy's limit of a message body (longer ones become attachments).
const NTFY_BODY: usize = 4096;

impl Deliver for Ntfy {
    async fn deliver(&self, via: &ChannelNotifier, alerts: &[Alert]) -> Result<(), DeliveryError> {
        let target = via.target(&self.server);
        let mut request = via
            .http
            .post(join(&self.server, &[&segment(&self.topic)]))
            .header(CONTENT_TYPE, "text/plain; charset=utf-8")
            .header("Title", header_text(&title(alerts)))
            .header(
                "Priority",
                self.priority
                    .unwrap_or(if alerts.iter().any(|a| is_alarm(a.kind)) {
                        4
                    } else {
                        3
                    })
                    .to_string(),
            )
            .header("Tags", ntfy_tags(alerts, &self.tags))
            .body(format::render(
                alerts,
                &via.links,
                Layout {
                    dialect: Dialect::Plain,
                    measure: Measure::Bytes,
                    limit: NTFY_BODY,
                    title: false,
                    link: false,
                },
            ));
        if let Some((_, link)) = via.links.of_message(alerts)
            && format::is_web_link(&link)
        {
            request = request.header("Click", link);
        }
        let secret = match &self.auth {
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
        via.send(request, &target)
            .await?
            .check(&target, &[secret])
            .map(drop)
    }
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

#[cfg(test)]
#[allow(clippy::expect_used, reason = "tests fail loudly on purpose")]
mod tests {
    use super::*;

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
}
