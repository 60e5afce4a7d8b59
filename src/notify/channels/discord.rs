//! Discord: Markdown `content` posted to a channel webhook, mentions off.

use serde_json::{Value, json};

use super::{ChannelNotifier, Deliver};
use crate::config::channels::Discord;
use crate::notify::format::{self, Dialect, Layout, Measure};
use crate::notify::links::Links;
use crate::notify::{Alert, DeliveryError};

/// Discord's limit of a message's `content`.
const DISCORD_CONTENT: usize = 2000;

impl Deliver for Discord {
    async fn deliver(&self, via: &ChannelNotifier, alerts: &[Alert]) -> Result<(), DeliveryError> {
        via.post_hook(&self.url, &discord(alerts, &via.links)).await
    }
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
