//! Webhook notifier: one HTTP POST of `{"version":"1","alerts":[...]}`,
//! signed with HMAC-SHA256 when a secret is configured.

use crate::error_chain;
use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, USER_AGENT};
use sha2::Sha256;
use url::Url;

use super::{Alert, DeliveryError, NotifyError, PAYLOAD_VERSION, Payload};
use crate::config::{Secret, WebhookConfig};

/// The header carrying the id of the first alert (an idempotency key).
const DELIVERY_HEADER: &str = "x-semclip-delivery";
/// The header carrying `sha256=<hex HMAC-SHA256(secret, body)>`.
const SIGNATURE_HEADER: &str = "x-semclip-signature";

/// Posts alerts to a URL.
#[derive(Debug)]
pub struct WebhookNotifier {
    name: String,
    url: Url,
    secret: Option<Secret>,
    timeout: Duration,
    headers: HeaderMap,
    http: reqwest::Client,
}

impl WebhookNotifier {
    pub(super) fn new(
        name: &str,
        cfg: &WebhookConfig,
        http: reqwest::Client,
    ) -> Result<WebhookNotifier, NotifyError> {
        let mut headers = HeaderMap::new();
        for (key, value) in &cfg.headers {
            let bad = |message: String| NotifyError::Header {
                notifier: name.to_owned(),
                header: key.clone(),
                message,
            };
            let key_name =
                HeaderName::from_bytes(key.as_bytes()).map_err(|e| bad(e.to_string()))?;
            let value = HeaderValue::from_str(value).map_err(|e| bad(e.to_string()))?;
            headers.append(key_name, value);
        }
        // Our own headers win over configured ones of the same name.
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(
            USER_AGENT,
            HeaderValue::from_static(concat!("semclip/", env!("CARGO_PKG_VERSION"))),
        );
        headers.remove(DELIVERY_HEADER);
        headers.remove(SIGNATURE_HEADER);
        Ok(WebhookNotifier {
            name: name.to_owned(),
            url: cfg.url.clone(),
            secret: cfg.secret.clone(),
            timeout: cfg.timeout,
            headers,
            http,
        })
    }

    /// The notifier's name in the daemon file.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The webhook as error messages name it: its origin only, since the
    /// path or query of a webhook URL is often a credential itself.
    fn target(&self) -> String {
        format!("webhook {}", self.url.origin().ascii_serialization())
    }

    pub(super) async fn deliver(&self, alerts: &[Alert]) -> Result<(), DeliveryError> {
        let body = serde_json::to_vec(&Payload {
            version: PAYLOAD_VERSION,
            alerts,
        })
        .map_err(|e| DeliveryError::permanent(format!("cannot encode the payload: {e}")))?;
        let mut headers = self.headers.clone();
        if let Some(first) = alerts.first() {
            let id = HeaderValue::from_str(&first.id).map_err(|_| {
                DeliveryError::permanent(format!(
                    "alert id {:?} cannot be a header value",
                    first.id
                ))
            })?;
            headers.insert(DELIVERY_HEADER, id);
        }
        if let Some(secret) = &self.secret {
            let signature = format!("sha256={}", sign(secret.expose().as_bytes(), &body)?);
            let value = HeaderValue::from_str(&signature)
                .map_err(|e| DeliveryError::permanent(format!("signature header: {e}")))?;
            headers.insert(SIGNATURE_HEADER, value);
        }
        let response = self
            .http
            .post(self.url.clone())
            .headers(headers)
            .timeout(self.timeout)
            .body(body)
            .send()
            .await
            .map_err(|e| request_error(&self.target(), self.timeout, e))?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        // A little of the answer helps whoever reads the log.
        let text = response.text().await.unwrap_or_default();
        let snippet: String = text.trim().chars().take(200).collect();
        let mut message = format!("{}: HTTP {status}", self.target());
        if !snippet.is_empty() {
            message.push_str(": ");
            message.push_str(&snippet);
        }
        Err(DeliveryError {
            transient: status_is_transient(status),
            message,
        })
    }
}

/// 408, 429 and 5xx are worth retrying; other non-2xx answers repeat.
fn status_is_transient(status: StatusCode) -> bool {
    status == StatusCode::REQUEST_TIMEOUT
        || status == StatusCode::TOO_MANY_REQUESTS
        || status.is_server_error()
}

/// Every failure to get an answer at all (connect, timeout, reset) is
/// transient; a request that cannot even be built is permanent.
fn request_error(target: &str, timeout: Duration, e: reqwest::Error) -> DeliveryError {
    // reqwest's message would repeat the whole URL: leave it out.
    let e = e.without_url();
    if e.is_timeout() {
        DeliveryError::transient(format!("{target}: no answer within {timeout:?}"))
    } else if e.is_builder() {
        DeliveryError::permanent(format!("{target}: {}", error_chain(&e)))
    } else {
        DeliveryError::transient(format!("{target}: {}", error_chain(&e)))
    }
}

/// Hex-encoded HMAC-SHA256 of `body` under `key`.
fn sign(key: &[u8], body: &[u8]) -> Result<String, DeliveryError> {
    // HMAC takes keys of any length, so this cannot fail in practice.
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key)
        .map_err(|e| DeliveryError::permanent(format!("HMAC key: {e}")))?;
    mac.update(body);
    Ok(hex::encode(mac.finalize().into_bytes()))
}
