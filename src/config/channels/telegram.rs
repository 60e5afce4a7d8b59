//! Telegram: a bot posting to one chat (`telegram: {token, chat_id}`, or
//! `tgram://BOT_TOKEN/CHAT_ID`).

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use url::Url;

use super::ChannelKind;
use super::apprise::Parts;
use crate::config::Secret;
use crate::config::tree::join;
use crate::config::validate::ctx::Ctx;
use crate::config::value::{RawSecret, Sp};

/// The Telegram Bot API.
const TELEGRAM_API: &str = "https://api.telegram.org";

/// A Telegram notifier.
#[allow(
    rustdoc::bare_urls,
    reason = "the doc comments are the JSON schema's descriptions, written for the YAML file's users"
)]
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Telegram")]
pub(crate) struct RawTelegram {
    /// The bot token from @BotFather.
    pub token: Sp<RawSecret>,
    /// The chat: a numeric id or @channelname.
    pub chat_id: Sp<RawChatId>,
    /// The Bot API base URL. Default: https://api.telegram.org.
    pub api_url: Option<Sp<String>>,
    /// Request timeout. Default: 10s.
    pub timeout: Option<Sp<String>>,
}

/// A chat id as written: text (`@channel`) or a number (`-100123`).
#[derive(Debug, Clone)]
pub(crate) struct RawChatId(pub String);

impl<'de> Deserialize<'de> for RawChatId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = RawChatId;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a chat id: a number or @channelname")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawChatId, E> {
                Ok(RawChatId(v.to_owned()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawChatId, E> {
                Ok(RawChatId(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawChatId, E> {
                Ok(RawChatId(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for RawChatId {
    fn schema_name() -> Cow<'static, str> {
        "ChatId".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A Telegram chat: a numeric id (groups and channels are negative) or @channelname.",
            "oneOf": [{"type": "integer"}, {"type": "string"}]
        })
    }
}

/// A Telegram bot posting to one chat.
#[derive(Debug, Clone, PartialEq)]
pub struct Telegram {
    /// The Bot API base (default `https://api.telegram.org`).
    pub api_url: Url,
    /// The bot token from @BotFather.
    pub token: Secret,
    /// The chat: a numeric id or `@channelname`.
    pub chat_id: String,
}

impl ChannelKind for Telegram {
    const NAME: &'static str = "telegram";
    const SCHEMES: &'static [&'static str] = &["tgram"];
    type Raw = RawTelegram;

    fn check(t: &RawTelegram, p: &str, cx: &mut Ctx) -> Option<Telegram> {
        let token = cx.secret(&t.token, &join(p, "token"));
        let api_url = match &t.api_url {
            Some(u) => cx.base_url(u, &join(p, "api_url")),
            None => Url::parse(TELEGRAM_API).ok(),
        };
        let chat_id = t.chat_id.value.0.trim().to_owned();
        let numeric = chat_id
            .strip_prefix('-')
            .unwrap_or(&chat_id)
            .chars()
            .all(|c| c.is_ascii_digit());
        let ok_chat = !chat_id.is_empty()
            && (numeric && chat_id != "-" || chat_id.starts_with('@') && chat_id.len() > 1);
        if !ok_chat {
            cx.err(
                t.chat_id.at,
                &join(p, "chat_id"),
                "a chat id is a number (negative for groups and channels) or @channelname",
            );
        }
        match (token, api_url) {
            (Some(token), Some(api_url)) if ok_chat => Some(Telegram {
                api_url,
                token,
                chat_id,
            }),
            _ => None,
        }
    }

    fn timeout(raw: &RawTelegram) -> Option<&Sp<String>> {
        raw.timeout.as_ref()
    }

    fn from_url(p: &Parts) -> Result<Telegram, String> {
        tgram(p)
    }
}

/// `tgram://BOT_TOKEN/CHAT_ID`.
fn tgram(p: &Parts) -> Result<Telegram, String> {
    // Apprise accepts the token with the `bot` prefix the API path uses.
    let token = p.host.strip_prefix("bot").unwrap_or(&p.host);
    let well_formed = token.split_once(':').is_some_and(|(id, key)| {
        !id.is_empty() && id.chars().all(|c| c.is_ascii_digit()) && !key.is_empty()
    });
    if !well_formed {
        return Err(
            "tgram:// needs a bot token like 123456:ABC-DEF...: tgram://BOT_TOKEN/CHAT_ID"
                .to_owned(),
        );
    }
    p.at_most(1, "chat")?;
    let chat_id = p
        .segments
        .first()
        .ok_or("tgram:// needs a chat id: tgram://BOT_TOKEN/CHAT_ID")?;
    Ok(Telegram {
        api_url: Url::parse(TELEGRAM_API).map_err(|e| e.to_string())?,
        token: Secret(token.to_owned()),
        chat_id: chat_id.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::super::Channel;
    use super::super::tests::{err, ok};
    use super::*;

    #[test]
    fn telegram_urls() {
        let Channel::Telegram(Telegram {
            api_url,
            token,
            chat_id,
        }) = ok("tgram://123456789:AAH-xyz_9/-100200300")
        else {
            panic!("not telegram")
        };
        assert_eq!(api_url.as_str(), "https://api.telegram.org/");
        assert_eq!(token.expose(), "123456789:AAH-xyz_9");
        assert_eq!(chat_id, "-100200300");
        let Channel::Telegram(Telegram { token, chat_id, .. }) = ok("tgram://bot42:k/%40mychannel")
        else {
            panic!("not telegram")
        };
        assert_eq!((token.expose(), chat_id.as_str()), ("42:k", "@mychannel"));
        assert!(err("tgram://123:abc").contains("needs a chat id"));
        assert!(err("tgram://nocolon/42").contains("bot token"));
        assert!(err("tgram://1:a/42/43").contains("one notifier per chat"));
    }
}
