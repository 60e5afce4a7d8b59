//! Chat and push notifiers: Slack, Microsoft Teams, Discord, Telegram,
//! Matrix, ntfy and Gotify. Each formats one alert or a digest in the
//! service's own markup ([`super::format`]) with a link to the alert's
//! page on semclip's server, the change view of its check or the watch's
//! status page (or without a public URL the watched page:
//! [`super::links`]), and posts it with the shared HTTP client
//! ([`super::http`]). A message shows an alert's first
//! [`SHOWN_CHANGES`](super::SHOWN_CHANGES) change lines and links the rest
//! ("and 7 more") to the change view.
//!
//! Each service is one unit, one file: its message, its request and how it
//! reads the answer (its verdict), behind [`Deliver`], implemented for the
//! service's validated configuration ([`crate::config::channels`]). This
//! file holds the notifier ([`ChannelNotifier`]), the dispatch (one line per
//! service), and what the units share: the target named in errors, JSON
//! bodies, URL paths, and the webhook post and verdict of Slack, Teams and
//! Discord ([`ChannelNotifier::post_hook`]).
//!
//! # Adding a channel
//!
//! After its config unit (see [`crate::config::channels`]): a file here,
//! `NAME.rs`, with `impl Deliver for config::channels::NAME`, and one line
//! in [`ChannelNotifier::deliver`]'s dispatch.
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

mod discord;
mod gotify;
mod matrix;
mod ntfy;
mod slack;
mod teams;
mod telegram;

use std::fmt;
use std::time::Duration;

use reqwest::header::CONTENT_TYPE;
use serde_json::Value;
use tokio::sync::OnceCell;
use url::Url;

use super::http::{self, Answer};
use super::links::Links;
// `text` as one URL path segment, for the units.
use super::links::segment;
use super::{Alert, DeliveryError};
use crate::config::{Channel, ChannelConfig, SecretUrl};

/// One chat or push service on the delivery side: its message, its
/// request and its verdict on the answer.
trait Deliver {
    /// Posts `alerts` (one alert, or a digest of one watch's; never empty)
    /// with `via`'s client, timeout and links, and reads the answer.
    async fn deliver(&self, via: &ChannelNotifier, alerts: &[Alert]) -> Result<(), DeliveryError>;
}

/// Posts alerts to a chat or push service.
pub struct ChannelNotifier {
    name: String,
    channel: Channel,
    timeout: Duration,
    links: Links,
    http: reqwest::Client,
    /// What a service looks up once and keeps: the Matrix room id of an
    /// alias.
    looked_up: OnceCell<String>,
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
    pub(in crate::notify) fn new(
        name: &str,
        cfg: &ChannelConfig,
        links: Links,
        http: reqwest::Client,
    ) -> ChannelNotifier {
        ChannelNotifier {
            name: name.to_owned(),
            channel: cfg.channel.clone(),
            timeout: cfg.timeout,
            links,
            http,
            looked_up: OnceCell::new(),
        }
    }

    /// The notifier's name in the daemon file.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Delivers `alerts` with the service's unit; nothing for none.
    pub(in crate::notify) async fn deliver(&self, alerts: &[Alert]) -> Result<(), DeliveryError> {
        if alerts.is_empty() {
            return Ok(());
        }
        match &self.channel {
            Channel::Telegram(c) => c.deliver(self, alerts).await,
            Channel::Slack(c) => c.deliver(self, alerts).await,
            Channel::Discord(c) => c.deliver(self, alerts).await,
            Channel::Teams(c) => c.deliver(self, alerts).await,
            Channel::Matrix(c) => c.deliver(self, alerts).await,
            Channel::Ntfy(c) => c.deliver(self, alerts).await,
            Channel::Gotify(c) => c.deliver(self, alerts).await,
        }
    }

    /// `slack https://hooks.slack.com`: the kind and origin, never a path.
    fn target(&self, url: &Url) -> String {
        format!(
            "{} {}",
            self.channel.kind(),
            url.origin().ascii_serialization()
        )
    }

    /// Sends `request` to `target` within the notifier's timeout.
    async fn send(
        &self,
        request: reqwest::RequestBuilder,
        target: &str,
    ) -> Result<Answer, DeliveryError> {
        http::send(request, target, self.timeout).await
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
        self.send(request, target).await
    }

    /// Posts `body` to a Slack, Teams or Discord webhook and reads the
    /// answer ([`hook_verdict`]).
    async fn post_hook(&self, url: &SecretUrl, body: &Value) -> Result<(), DeliveryError> {
        let target = self.target(url.expose());
        let answer = self.post_json(url.expose(), body, &target).await?;
        hook_verdict(answer, &target)
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

#[cfg(test)]
#[allow(clippy::expect_used, reason = "tests fail loudly on purpose")]
mod tests {
    use super::*;

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
    }
}
