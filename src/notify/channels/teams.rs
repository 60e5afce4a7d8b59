//! Microsoft Teams: one Adaptive Card posted to a workflow's webhook.

use serde_json::{Value, json};

use super::{ChannelNotifier, Deliver};
use crate::config::channels::Teams;
use crate::notify::format::{self, cut, facts, title};
use crate::notify::links::{CHANGES, Links};
use crate::notify::{Alert, DeliveryError};

/// Change lines shown in one Teams card, at most (a digest's alerts each
/// show at most [`SHOWN_CHANGES`](crate::notify::SHOWN_CHANGES)).
const TEAMS_CHANGES: usize = 50;

impl Deliver for Teams {
    async fn deliver(&self, via: &ChannelNotifier, alerts: &[Alert]) -> Result<(), DeliveryError> {
        via.post_hook(&self.url, &teams(alerts, &via.links)).await
    }
}

/// Teams: a message with one Adaptive Card (1.4): the title, per alert its
/// facts and its first change lines in monospace ("and N more" linking to
/// the change view), and a button to the link.
///
/// Page text goes only into `TextRun`s of `RichTextBlock`s: a `TextBlock`
/// or a `FactSet` value parses Markdown (a page's `[Log in](https://…)`
/// would become a link), a `TextRun` never does.
fn teams(alerts: &[Alert], links: &Links) -> Value {
    /// A block of runs, each (text, extra properties).
    fn runs(parts: &[(&str, Value)], extra: Value) -> Value {
        let inlines: Vec<Value> = parts
            .iter()
            .map(|(text, props)| {
                let mut run = json!({"type": "TextRun", "text": text});
                if let (Some(run), Some(props)) = (run.as_object_mut(), props.as_object()) {
                    run.extend(props.clone());
                }
                run
            })
            .collect();
        let mut block = json!({"type": "RichTextBlock", "inlines": inlines});
        if let (Some(block), Some(extra)) = (block.as_object_mut(), extra.as_object()) {
            block.extend(extra.clone());
        }
        block
    }
    let mut body = vec![runs(
        &[(
            &title(alerts),
            json!({"size": "Medium", "weight": "Bolder"}),
        )],
        json!({}),
    )];
    let mut changes_left = TEAMS_CHANGES;
    for alert in alerts {
        if alerts.len() > 1 {
            let summary = cut(&format::inert(&alert.summary), format::MAX_VALUE_CHARS);
            body.push(runs(
                &[(&summary, json!({"weight": "Bolder"}))],
                json!({"separator": true}),
            ));
        }
        for (label, value) in facts(alert) {
            body.push(runs(
                &[
                    (&format!("{label}: "), json!({"weight": "Bolder"})),
                    (&cut(&value, format::MAX_VALUE_CHARS), json!({})),
                ],
                json!({"spacing": "None"}),
            ));
        }
        let (shown, _) = alert.shown_changes();
        let shown = shown.get(..changes_left).unwrap_or(shown);
        for change in shown {
            let line = cut(&format::inert(&change.text), format::MAX_VALUE_CHARS);
            body.push(runs(
                &[(&line, json!({"fontType": "Monospace"}))],
                json!({"spacing": "None"}),
            ));
        }
        changes_left -= shown.len();
        let more = alert.changes.len() - shown.len();
        let view = links.change_view(alert);
        if more > 0 {
            let words = format!("and {more} more");
            body.push(ours(&words, view.as_deref()));
        }
        // In a digest, each alert about changes links its own check.
        if let Some(url) = view.as_deref().filter(|_| alerts.len() > 1) {
            body.push(ours(CHANGES, Some(url)));
        }
    }
    let mut card = json!({
        "type": "AdaptiveCard",
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "version": "1.4",
        "body": body,
        "msteams": {"width": "Full"},
    });
    if let Some((label, url)) = links.of_message(alerts)
        && format::is_web_link(&url)
    {
        card["actions"] = json!([{"type": "Action.OpenUrl", "title": label, "url": url}]);
    }
    json!({
        "type": "message",
        "attachments": [{
            "contentType": "application/vnd.microsoft.card.adaptive",
            "contentUrl": null,
            "content": card,
        }],
    })
}

/// A line of semclip's own words, as a subtle `TextBlock`: a Markdown link
/// to `url` when it is one (the words and the URL are semclip's, never a
/// page's), else the words.
fn ours(words: &str, url: Option<&str>) -> Value {
    let text = match url.filter(|u| format::is_web_link(u)) {
        Some(url) => format!(
            "[{words}]({})",
            url.replace('(', "%28")
                .replace(')', "%29")
                .replace(' ', "%20")
        ),
        None => words.to_owned(),
    };
    json!({"type": "TextBlock", "text": text, "isSubtle": true, "spacing": "None"})
}
