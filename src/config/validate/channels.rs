//! The chat and push notifiers: Slack, Teams and Discord webhooks,
//! Telegram, Matrix, ntfy, Gotify, and Apprise-style URLs.

use std::time::Duration;

use url::Url;

use super::Ctx;
use crate::config::apprise;
use crate::config::raw::{
    RawGotify, RawHookChannel, RawMatrix, RawNotifier, RawNtfy, RawSecretOrText, RawTelegram, Sp,
};
use crate::config::tree::join;
use crate::config::{Channel, ChannelConfig, NtfyAuth, SecretUrl};

/// The default request timeout of chat and push notifiers.
const CHANNEL_TIMEOUT: Duration = Duration::from_secs(10);

/// A chat or push notifier (`path` is `notifiers.NAME`); `None` after
/// reporting its problems.
pub(super) fn channel_config(raw: &RawNotifier, path: &str, cx: &mut Ctx) -> Option<ChannelConfig> {
    let (channel, timeout) = match raw {
        RawNotifier::Email(_) | RawNotifier::Webhook(_) | RawNotifier::File(_) => return None,
        RawNotifier::Slack(h) | RawNotifier::Teams(h) | RawNotifier::Discord(h) => {
            hook_channel(raw, h, path, cx)
        }
        RawNotifier::Telegram(t) => telegram(t, path, cx),
        RawNotifier::Matrix(m) => matrix(m, path, cx),
        RawNotifier::Ntfy(n) => ntfy(n, path, cx),
        RawNotifier::Gotify(g) => gotify(g, path, cx),
        RawNotifier::Url(u) => url_channel(u, path, cx),
    };
    Some(ChannelConfig {
        channel: channel?,
        timeout,
    })
}

/// The `timeout` of a chat or push notifier (`p` is its path), or the
/// default.
fn channel_timeout(t: Option<&Sp<String>>, p: &str, cx: &mut Ctx) -> Duration {
    cx.duration_min(
        t,
        &join(p, "timeout"),
        CHANNEL_TIMEOUT,
        Duration::from_millis(1),
    )
}

/// A Slack, Teams or Discord notifier (`raw` says which): its channel, or
/// `None` after a diagnostic, and its timeout.
fn hook_channel(
    raw: &RawNotifier,
    h: &Sp<RawHookChannel>,
    path: &str,
    cx: &mut Ctx,
) -> (Option<Channel>, Duration) {
    let kind = match raw {
        RawNotifier::Slack(_) => "slack",
        RawNotifier::Teams(_) => "teams",
        _ => "discord",
    };
    let p = join(path, kind);
    let channel = hook_url(&h.value, &p, cx).map(|url| match raw {
        RawNotifier::Slack(_) => Channel::Slack { url },
        RawNotifier::Teams(_) => Channel::Teams { url },
        _ => Channel::Discord { url },
    });
    (channel, channel_timeout(h.value.timeout.as_ref(), &p, cx))
}

/// A Telegram notifier: its channel, or `None` after a diagnostic, and
/// its timeout.
fn telegram(t: &Sp<RawTelegram>, path: &str, cx: &mut Ctx) -> (Option<Channel>, Duration) {
    let p = join(path, "telegram");
    let t = &t.value;
    let token = cx.secret(&t.token, &join(&p, "token"));
    let api_url = match &t.api_url {
        Some(u) => cx.base_url(u, &join(&p, "api_url")),
        None => Url::parse(apprise::TELEGRAM_API).ok(),
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
            &join(&p, "chat_id"),
            "a chat id is a number (negative for groups and channels) or @channelname",
        );
    }
    let channel = match (token, api_url) {
        (Some(token), Some(api_url)) if ok_chat => Some(Channel::Telegram {
            api_url,
            token,
            chat_id,
        }),
        _ => None,
    };
    (channel, channel_timeout(t.timeout.as_ref(), &p, cx))
}

/// A Matrix notifier: its channel, or `None` after a diagnostic, and its
/// timeout.
fn matrix(m: &Sp<RawMatrix>, path: &str, cx: &mut Ctx) -> (Option<Channel>, Duration) {
    let p = join(path, "matrix");
    let m = &m.value;
    let server = cx.base_url(&m.server, &join(&p, "server"));
    let token = cx.secret(&m.token, &join(&p, "token"));
    let room = m.room.value.trim();
    let ok_room = (room.starts_with('!') || room.starts_with('#'))
        && room.find(':').is_some_and(|i| i > 1 && i + 1 < room.len());
    if !ok_room {
        cx.err(
            m.room.at,
            &join(&p, "room"),
            "a room is its id (!abc:example.org) or an alias (#ops:example.org)",
        );
    }
    let channel = match (server, token) {
        (Some(server), Some(token)) if ok_room => Some(Channel::Matrix {
            server,
            room: room.to_owned(),
            token,
        }),
        _ => None,
    };
    (channel, channel_timeout(m.timeout.as_ref(), &p, cx))
}

/// An ntfy notifier: its channel, or `None` after a diagnostic, and its
/// timeout.
fn ntfy(n: &Sp<RawNtfy>, path: &str, cx: &mut Ctx) -> (Option<Channel>, Duration) {
    let p = join(path, "ntfy");
    let n = &n.value;
    let server = match &n.server {
        Some(u) => cx.base_url(u, &join(&p, "server")),
        None => Url::parse(apprise::NTFY_SH).ok(),
    };
    let topic = n.topic.value.trim();
    let ok_topic = apprise::valid_ntfy_topic(topic);
    if !ok_topic {
        cx.err(
            n.topic.at,
            &join(&p, "topic"),
            format!("a topic {}", apprise::NTFY_TOPIC_RULE),
        );
    }
    // `Err` after a reported problem, so the notifier is left out.
    let auth = match (&n.token, &n.username, &n.password) {
        (None, None, None) => Ok(None),
        (Some(t), None, None) => cx
            .secret(t, &join(&p, "token"))
            .map(|s| Some(NtfyAuth::Token(s)))
            .ok_or(()),
        (None, Some(user), Some(password)) => cx
            .secret(password, &join(&p, "password"))
            .map(|password| {
                Some(NtfyAuth::Basic {
                    username: user.value.clone(),
                    password,
                })
            })
            .ok_or(()),
        (Some(t), _, _) => {
            cx.err(
                t.at,
                &join(&p, "token"),
                "give either a token or a username and password, not both",
            );
            Err(())
        }
        (None, Some(u), None) => {
            cx.err(u.at, &join(&p, "username"), "a username needs a password");
            Err(())
        }
        (None, None, Some(s)) => {
            cx.err(s.at, &join(&p, "password"), "a password needs a username");
            Err(())
        }
    };
    let priority = cx.priority(n.priority.as_ref(), &join(&p, "priority"), 1, 5);
    let tags: Vec<String> = n
        .tags
        .iter()
        .flat_map(|t| t.value.iter())
        .map(|t| t.value.trim().to_owned())
        .filter(|t| !t.is_empty())
        .collect();
    let channel = match (server, auth, priority) {
        (Some(server), Ok(auth), Some(priority)) if ok_topic => Some(Channel::Ntfy {
            server,
            topic: topic.to_owned(),
            auth,
            priority,
            tags,
        }),
        _ => None,
    };
    (channel, channel_timeout(n.timeout.as_ref(), &p, cx))
}

/// A Gotify notifier: its channel, or `None` after a diagnostic, and its
/// timeout.
fn gotify(g: &Sp<RawGotify>, path: &str, cx: &mut Ctx) -> (Option<Channel>, Duration) {
    let p = join(path, "gotify");
    let g = &g.value;
    let server = cx.base_url(&g.server, &join(&p, "server"));
    let token = cx.secret(&g.token, &join(&p, "token"));
    let priority = cx.priority(g.priority.as_ref(), &join(&p, "priority"), 0, 10);
    let channel = match (server, token, priority) {
        (Some(server), Some(token), Some(priority)) => Some(Channel::Gotify {
            server,
            token,
            priority,
        }),
        _ => None,
    };
    (channel, channel_timeout(g.timeout.as_ref(), &p, cx))
}

/// An Apprise-style URL notifier: its channel, or `None` after a
/// diagnostic, and the default timeout.
fn url_channel(u: &Sp<RawSecretOrText>, path: &str, cx: &mut Ctx) -> (Option<Channel>, Duration) {
    let p = join(path, "url");
    let text = match &u.value {
        RawSecretOrText::Text(text) => Some(text.clone()),
        RawSecretOrText::Secret(s) => cx
            .secret(
                &Sp {
                    value: s.clone(),
                    at: u.at,
                },
                &p,
            )
            .map(|s| s.expose().to_owned()),
    };
    let channel = text.and_then(|text| match apprise::parse(&text) {
        Ok(channel) if channel.has_credential() && matches!(u.value, RawSecretOrText::Text(_)) => {
            cx.err(
                u.at,
                &p,
                format!(
                    "this {} URL carries a credential: write it as {{env: NAME}} or {{file: PATH}}",
                    channel.kind()
                ),
            );
            None
        }
        Ok(channel) => Some(channel),
        Err(message) => {
            cx.err(u.at, &p, message);
            None
        }
    });
    (channel, CHANNEL_TIMEOUT)
}

/// The webhook URL of a Slack, Teams or Discord notifier, read from its
/// secret. Messages never show the URL: it is the credential.
fn hook_url(h: &RawHookChannel, path: &str, cx: &mut Ctx) -> Option<SecretUrl> {
    let p = join(path, "url");
    let secret = cx.secret(&h.url, &p)?;
    match Url::parse(secret.expose().trim()) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Some(SecretUrl(u)),
        Ok(u) => {
            cx.err(
                h.url.at,
                &p,
                format!(
                    "unsupported scheme `{}`: the webhook URL is http or https",
                    u.scheme()
                ),
            );
            None
        }
        Err(e) => {
            cx.err(h.url.at, &p, format!("the secret is not a URL: {e}"));
            None
        }
    }
}
