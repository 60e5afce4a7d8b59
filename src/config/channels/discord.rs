//! Discord: a channel webhook (`discord: {url: ...}`, or
//! `discord://WEBHOOK_ID/WEBHOOK_TOKEN`).

use super::ChannelKind;
use super::apprise::{Parts, token_like, webhook_url};
use super::hook::{RawHookChannel, hook_url};
use crate::config::SecretUrl;
use crate::config::validate::ctx::Ctx;
use crate::config::value::Sp;

/// A Discord channel webhook (the URL carries its token).
#[derive(Debug, Clone, PartialEq)]
pub struct Discord {
    /// `https://discord.com/api/webhooks/ID/TOKEN`.
    pub url: SecretUrl,
}

impl ChannelKind for Discord {
    const NAME: &'static str = "discord";
    const SCHEMES: &'static [&'static str] = &["discord"];
    type Raw = RawHookChannel;

    fn check(raw: &RawHookChannel, p: &str, cx: &mut Ctx) -> Option<Discord> {
        hook_url(raw, p, cx).map(|url| Discord { url })
    }

    fn timeout(raw: &RawHookChannel) -> Option<&Sp<String>> {
        raw.timeout.as_ref()
    }

    fn from_url(p: &Parts) -> Result<Discord, String> {
        discord(p)
    }
}

/// `discord://[botname@]WEBHOOK_ID/WEBHOOK_TOKEN`.
fn discord(p: &Parts) -> Result<Discord, String> {
    let [token] = p.segments.as_slice() else {
        return Err(
            "discord:// needs the webhook id and token: discord://WEBHOOK_ID/WEBHOOK_TOKEN"
                .to_owned(),
        );
    };
    if !token_like(&p.host) || !token_like(token) {
        return Err("discord:// webhook id and token are letters and digits".to_owned());
    }
    webhook_url(&format!(
        "https://discord.com/api/webhooks/{}/{token}",
        p.host
    ))
    .map(|url| Discord { url })
}

#[cfg(test)]
mod tests {
    use super::super::Channel;
    use super::super::tests::{err, ok};
    use super::*;

    #[test]
    fn discord_urls_become_webhook_urls() {
        let Channel::Discord(Discord { url }) = ok("discord://1234567890/tok-EN_x") else {
            panic!("not discord")
        };
        assert_eq!(
            url.expose().as_str(),
            "https://discord.com/api/webhooks/1234567890/tok-EN_x"
        );
        assert!(err("discord://1234567890").contains("id and token"));
    }
}
