//! Webhook notifier: one HTTP POST of `{"version":"1","alerts":[...]}`
//! (each alert with its `link` when the daemon has a public URL), signed
//! with HMAC-SHA256 when a secret is configured.

use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, USER_AGENT};
use sha2::Sha256;
use url::Url;

use super::links::Links;
use super::{Alert, Delivered, DeliveryError, NotifyError, PAYLOAD_VERSION, Payload, http};
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
    /// Each alert's `link`.
    links: Links,
}

impl WebhookNotifier {
    pub(super) fn new(
        name: &str,
        cfg: &WebhookConfig,
        http: reqwest::Client,
        links: Links,
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
            links,
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
            alerts: alerts
                .iter()
                .map(|a| Delivered::new(a, &self.links))
                .collect(),
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
        let request = self.http.post(self.url.clone()).headers(headers).body(body);
        let target = self.target();
        http::send(request, &target, self.timeout)
            .await?
            .check(&target, &[])
            .map(drop)
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
