//! Matrix: an `m.text` event put into a room (an alias resolved once),
//! with a transaction id that makes a retry a duplicate the homeserver
//! drops.

use std::time::Duration;

use reqwest::header::CONTENT_TYPE;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{ChannelNotifier, Deliver, JSON, encode, join, segment};
use crate::config::channels::Matrix;
use crate::notify::format::{self, Dialect, Layout, Measure};
use crate::notify::http::{self, Answer};
use crate::notify::links::Links;
use crate::notify::{Alert, DeliveryError};

/// What semclip puts in one Matrix event body (events are at most 64 KiB).
const MATRIX_BODY: usize = 16_000;

impl Deliver for Matrix {
    async fn deliver(&self, via: &ChannelNotifier, alerts: &[Alert]) -> Result<(), DeliveryError> {
        let token = self.token.expose();
        let target = via.target(&self.server);
        let room_id = room_id(via, &self.server, &self.room, token, &target).await?;
        let url = join(
            &self.server,
            &[
                "_matrix/client/v3/rooms",
                &segment(room_id),
                "send/m.room.message",
                &segment(&transaction_id(alerts)),
            ],
        );
        let request = via
            .http
            .put(url)
            .bearer_auth(token)
            .header(CONTENT_TYPE, JSON)
            .body(encode(&matrix(alerts, &via.links)));
        let answer = via.send(request, &target).await?;
        matrix_verdict(answer, &target, token).map(drop)
    }
}

/// The room id: `room` itself, or the id its alias names (looked up once,
/// and kept in `via`).
async fn room_id<'a>(
    via: &'a ChannelNotifier,
    server: &url::Url,
    room: &'a str,
    token: &str,
    target: &str,
) -> Result<&'a str, DeliveryError> {
    if !room.starts_with('#') {
        return Ok(room);
    }
    via.looked_up
        .get_or_try_init(|| async {
            let url = join(
                server,
                &["_matrix/client/v3/directory/room", &segment(room)],
            );
            let request = via.http.get(url).bearer_auth(token);
            let answer = via.send(request, target).await?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::AlertKind;

    fn alert(id: &str) -> Alert {
        crate::notify::tests::alert(id, AlertKind::Changed)
    }

    #[test]
    fn transaction_ids_are_stable_per_set_of_rows() {
        assert_eq!(transaction_id(&[alert("a-1")]), "a-1");
        let two = transaction_id(&[alert("a-1"), alert("a-2")]);
        assert_eq!(two, transaction_id(&[alert("a-1"), alert("a-2")]));
        assert_ne!(two, transaction_id(&[alert("a-1"), alert("a-3")]));
        assert!(two.starts_with("digest-") && two.len() == 39, "{two}");
    }
}
