//! Slack: an incoming webhook (`slack: {url: ...}`, or
//! `slack://TOKEN_A/TOKEN_B/TOKEN_C`).

use super::ChannelKind;
use super::apprise::{Parts, token_like, webhook_url};
use super::hook::{RawHookChannel, hook_url};
use crate::config::SecretUrl;
use crate::config::validate::ctx::Ctx;
use crate::config::value::Sp;

/// A Slack incoming webhook (the whole URL is the credential).
#[derive(Debug, Clone, PartialEq)]
pub struct Slack {
    /// `https://hooks.slack.com/services/...`.
    pub url: SecretUrl,
}

impl ChannelKind for Slack {
    const NAME: &'static str = "slack";
    const SCHEMES: &'static [&'static str] = &["slack"];
    type Raw = RawHookChannel;

    fn check(raw: &RawHookChannel, p: &str, cx: &mut Ctx) -> Option<Slack> {
        hook_url(raw, p, cx).map(|url| Slack { url })
    }

    fn timeout(raw: &RawHookChannel) -> Option<&Sp<String>> {
        raw.timeout.as_ref()
    }

    fn from_url(p: &Parts) -> Result<Slack, String> {
        slack(p)
    }
}

/// `slack://[botname@]TOKEN_A/TOKEN_B/TOKEN_C`, the three parts of
/// `https://hooks.slack.com/services/A/B/C`.
fn slack(p: &Parts) -> Result<Slack, String> {
    if p.host.starts_with("xox") {
        return Err(
            "slack:// with a bot or user token (xox...) needs Slack's Web API, which \
             semclip does not speak: create an incoming webhook and write slack://A/B/C"
                .to_owned(),
        );
    }
    if let Some(extra) = p.segments.get(2) {
        let what = if extra.starts_with('#') || extra.starts_with('@') {
            "a channel: an incoming webhook posts to the channel it was made for"
        } else {
            "more than three tokens"
        };
        return Err(format!("slack:// names {what}"));
    }
    let [b, c] = p.segments.as_slice() else {
        return Err("slack:// needs three tokens: slack://TOKEN_A/TOKEN_B/TOKEN_C".to_owned());
    };
    if ![&p.host, b, c].iter().all(|t| token_like(t)) {
        return Err(
            "slack:// tokens are letters and digits: slack://TOKEN_A/TOKEN_B/TOKEN_C".to_owned(),
        );
    }
    webhook_url(&format!(
        "https://hooks.slack.com/services/{}/{b}/{c}",
        p.host
    ))
    .map(|url| Slack { url })
}

#[cfg(test)]
mod tests {
    use super::super::Channel;
    use super::super::tests::{err, ok};
    use super::*;

    #[test]
    fn slack_urls_become_webhook_urls() {
        let Channel::Slack(Slack { url }) = ok("slack://T1ABC/B2DEF/xyz789") else {
            panic!("not slack")
        };
        assert_eq!(
            url.expose().as_str(),
            "https://hooks.slack.com/services/T1ABC/B2DEF/xyz789"
        );
        let Channel::Slack(Slack { url }) = ok("slack://semclip@T1/B2/C3") else {
            panic!("not slack")
        };
        assert!(url.expose().path().ends_with("/T1/B2/C3"));
        assert!(err("slack://T1/B2").contains("three tokens"));
        assert!(err("slack://T1/B2/C3/#ops").contains("channel"));
        assert!(err("slack://xoxb-1-2/#ops").contains("Web API"));
    }
}
