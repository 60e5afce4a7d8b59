//! Gotify: a Markdown message with a title, priority and a click URL,
//! posted with the application token.

use reqwest::header::CONTENT_TYPE;
use serde_json::{Value, json};

use super::{ChannelNotifier, Deliver, JSON, encode, join};
use crate::config::channels::Gotify;
use crate::notify::format::{self, Dialect, Layout, Measure, is_alarm, title};
use crate::notify::links::Links;
use crate::notify::{Alert, DeliveryError};

/// What semclip puts in one Gotify message.
const GOTIFY_BODY: usize = 8000;

impl Deliver for Gotify {
    async fn deliver(&self, via: &ChannelNotifier, alerts: &[Alert]) -> Result<(), DeliveryError> {
        let target = via.target(&self.server);
        let request = via
            .http
            .post(join(&self.server, &["message"]))
            .header("X-Gotify-Key", self.token.expose())
            .header(CONTENT_TYPE, JSON)
            .body(encode(&gotify(alerts, &via.links, self.priority)));
        via.send(request, &target)
            .await?
            .check(&target, &[self.token.expose()])
            .map(drop)
    }
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
    if let Some((_, url)) = links.of_message(alerts)
        && format::is_web_link(&url)
    {
        extras["client::notification"] = json!({"click": {"url": url}});
    }
    json!({
        "title": title(alerts),
        "message": message,
        "priority": priority,
        "extras": extras,
    })
}
