//! Slack: a header block with the title, a section in mrkdwn and the
//! link, posted to an incoming webhook.

use serde_json::{Value, json};

use super::{ChannelNotifier, Deliver};
use crate::config::channels::Slack;
use crate::notify::format::{self, Dialect, Layout, Measure, cut, title};
use crate::notify::links::Links;
use crate::notify::{Alert, DeliveryError};

/// Slack's limit of one section block's text.
const SLACK_SECTION: usize = 3000;
/// Slack's limit of a header block's text.
const SLACK_HEADER: usize = 150;

impl Deliver for Slack {
    async fn deliver(&self, via: &ChannelNotifier, alerts: &[Alert]) -> Result<(), DeliveryError> {
        via.post_hook(&self.url, &slack(alerts, &via.links)).await
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
