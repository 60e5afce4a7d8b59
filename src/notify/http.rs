//! What every HTTP notifier (webhook, chat and push services) shares: one
//! request sent with its timeout, and the answer classified.
//!
//! # Guarantees
//!
//! - Error messages name the service by a caller-given target (an origin,
//!   never a whole URL: webhook URLs carry tokens), and never hold the
//!   request URL: reqwest's errors are stripped of it. Secrets the caller
//!   names are blanked out of the quoted answer too.
//! - 2xx is delivered; 408, 429, 5xx and every failure to get an answer
//!   (connect, reset, timeout) are transient; any other status (400, 401,
//!   403, 404, 410, ...) is permanent. A `Retry-After` (seconds or an HTTP
//!   date) on a transient answer becomes [`DeliveryError::retry_after`].

use std::time::{Duration, SystemTime};

use reqwest::StatusCode;
use reqwest::header::HeaderMap;

use super::DeliveryError;
use crate::error_chain;

/// The longest `Retry-After` honoured; a longer one is cut to this (the
/// outbox's `give_up_after` still applies).
pub(super) const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);

/// How much of an error answer is quoted in the message.
const SNIPPET_CHARS: usize = 200;

/// An answer, whatever its status.
pub(super) struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

/// Sends `request` (its timeout set here) and reads the answer. `Err` only
/// when there is no answer at all.
pub(super) async fn send(
    request: reqwest::RequestBuilder,
    target: &str,
    timeout: Duration,
) -> Result<Answer, DeliveryError> {
    let response = request
        .timeout(timeout)
        .send()
        .await
        .map_err(|e| request_error(target, timeout, e))?;
    let status = response.status();
    let headers = response.headers().clone();
    // The body of an error explains it; of a success it may hold the
    // service's verdict (Telegram's `ok`). A body that cannot be read
    // costs the explanation only.
    let body = response.text().await.unwrap_or_default();
    Ok(Answer {
        status,
        headers,
        body,
    })
}

impl Answer {
    /// `Ok` for 2xx, else the classified error quoting the answer with
    /// `secrets` blanked out.
    pub(super) fn check(self, target: &str, secrets: &[&str]) -> Result<Answer, DeliveryError> {
        if self.status.is_success() {
            return Ok(self);
        }
        Err(self.refused(target, &self.body, secrets))
    }

    /// The error for this (non-2xx) answer, quoting `detail`.
    pub(super) fn refused(&self, target: &str, detail: &str, secrets: &[&str]) -> DeliveryError {
        let status = self.status;
        let mut message = format!("{target}: HTTP {status}");
        let snippet = snippet(detail, secrets);
        if !snippet.is_empty() {
            message.push_str(": ");
            message.push_str(&snippet);
        }
        let transient = status_is_transient(status);
        DeliveryError {
            transient,
            message,
            retry_after: if transient {
                retry_after(&self.headers, SystemTime::now())
            } else {
                None
            },
        }
    }
}

/// The start of `text` on one line, each of `secrets` replaced by `***`.
pub(super) fn snippet(text: &str, secrets: &[&str]) -> String {
    let mut text = text.trim().to_owned();
    for secret in secrets.iter().filter(|s| !s.is_empty()) {
        text = text.replace(secret, "***");
    }
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(SNIPPET_CHARS)
        .collect()
}

/// 408, 429 and 5xx are worth retrying; other non-2xx answers repeat.
pub(super) fn status_is_transient(status: StatusCode) -> bool {
    status == StatusCode::REQUEST_TIMEOUT
        || status == StatusCode::TOO_MANY_REQUESTS
        || status.is_server_error()
}

/// `Retry-After` as a delay from `now` (the page fetcher's reading of it,
/// [`crate::page::blocked::retry_after`]), at most [`MAX_RETRY_AFTER`].
pub(super) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    crate::page::blocked::retry_after(headers, now).map(|d| d.min(MAX_RETRY_AFTER))
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

#[cfg(test)]
#[allow(clippy::expect_used, reason = "tests fail loudly on purpose")]
mod tests {
    use super::*;
    use reqwest::header::{HeaderValue, RETRY_AFTER};

    #[test]
    fn retry_after_takes_seconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers, now), None);
        headers.insert(RETRY_AFTER, HeaderValue::from_static("120"));
        assert_eq!(retry_after(&headers, now), Some(Duration::from_secs(120)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(90));
        headers.insert(RETRY_AFTER, HeaderValue::from_str(&later).expect("header"));
        assert_eq!(retry_after(&headers, now), Some(Duration::from_secs(90)));
        headers.insert(RETRY_AFTER, HeaderValue::from_static("999999"));
        assert_eq!(retry_after(&headers, now), Some(MAX_RETRY_AFTER));
        headers.insert(RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&headers, now), None);
    }

    #[test]
    fn snippets_hide_secrets_and_stay_short() {
        let text = format!("bad token abc123\n{}", "x".repeat(500));
        let s = snippet(&text, &["abc123", ""]);
        assert!(s.starts_with("bad token *** x"), "{s}");
        assert_eq!(s.chars().count(), SNIPPET_CHARS);
    }
}
