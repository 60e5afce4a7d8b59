//! The chat and push notifiers on the config side: Slack, Microsoft Teams,
//! Discord, Telegram, Matrix, ntfy and Gotify, written out or as an
//! Apprise-style URL.
//!
//! Each service is one unit, one file: its raw form (the `slack:`,
//! `telegram:`, ... key of a notifier, whose doc comments the JSON schemas
//! show), its validated form (the struct a [`Channel`] variant holds), its
//! checks and its Apprise URL scheme, behind [`ChannelKind`], with their
//! tests. This file is the registry that lists them once (`channels!`),
//! and holds what they share: [`ChannelConfig`], the `timeout` every
//! written-out channel has, and the `url:` notifier ([`from_url`]); the
//! Apprise URL is taken apart in [`apprise`], and the Slack, Teams and
//! Discord units share their webhook URL's form in [`hook`].
//!
//! # Adding a channel
//!
//! 1. A file here, `NAME.rs`: the raw form `RawNAME` (`Debug`,
//!    `Deserialize`, `JsonSchema`, `deny_unknown_fields`, with a `timeout`),
//!    the validated struct, and `impl ChannelKind` for it.
//! 2. One line in the registry at the end of this file, and the variant
//!    for its key in [`RawNotifier`] (`src/config/raw.rs`, where the daemon
//!    file's keys are listed in schema order; regenerate the schemas).
//! 3. Delivery: a file in `src/notify/channels/` and one line in its
//!    dispatch (the module docs there say how).

pub(super) mod apprise;
pub(super) mod discord;
pub(super) mod gotify;
pub(super) mod hook;
pub(super) mod matrix;
pub(super) mod ntfy;
pub(super) mod slack;
pub(super) mod teams;
pub(super) mod telegram;

use std::time::Duration;

use crate::config::raw::RawNotifier;
use crate::config::tree::join;
use crate::config::validate::ctx::Ctx;
use crate::config::value::{RawSecretOrText, Sp};
use apprise::Parts;

pub use discord::Discord;
pub use gotify::Gotify;
pub use matrix::Matrix;
pub use ntfy::{Ntfy, NtfyAuth};
pub use slack::Slack;
pub use teams::Teams;
pub use telegram::Telegram;

/// The default request timeout of chat and push notifiers.
const CHANNEL_TIMEOUT: Duration = Duration::from_secs(10);

/// One chat or push service as the daemon file writes it: its key, its
/// raw form and how that is checked, and its Apprise URL scheme.
trait ChannelKind: Sized {
    /// Its key in a notifier (`slack`, `telegram`, ...), also its kind in
    /// messages and logs ([`Channel::kind`]).
    const NAME: &'static str;
    /// The Apprise URL schemes the unknown-scheme message lists for it.
    const SCHEMES: &'static [&'static str];
    /// Other schemes it reads, unlisted.
    const ALIASES: &'static [&'static str] = &[];
    /// Its raw form, as written under its `NAME`.
    type Raw;

    /// The validated channel, or `None` after reporting its problems; `p`
    /// is its path (`notifiers.NAME.slack`).
    fn check(raw: &Self::Raw, p: &str, cx: &mut Ctx) -> Option<Self>;

    /// The raw form's `timeout`.
    fn timeout(raw: &Self::Raw) -> Option<&Sp<String>>;

    /// The channel an Apprise URL of one of its schemes names. An error
    /// never repeats the URL (see [`apprise`]).
    fn from_url(p: &Parts) -> Result<Self, String>;

    /// Whether the configuration holds a credential (and so must not be
    /// written inline in the daemon file).
    fn has_credential(&self) -> bool {
        true
    }
}

/// A chat or push notifier: the service and its request timeout.
#[derive(Debug, Clone, PartialEq)]
pub struct ChannelConfig {
    /// Where messages go.
    pub channel: Channel,
    /// Request timeout (default 10s).
    pub timeout: Duration,
}

/// A chat or push notifier (`path` is `notifiers.NAME`); `None` for the
/// other notifiers, and after reporting its problems.
pub(super) fn channel_config(raw: &RawNotifier, path: &str, cx: &mut Ctx) -> Option<ChannelConfig> {
    match raw {
        RawNotifier::Url(u) => url_channel(u, path, cx),
        raw => written(raw, path, cx),
    }
}

/// A written-out channel of kind `K`, wrapped into a [`Channel`] by `wrap`.
fn checked<K: ChannelKind>(
    raw: &Sp<K::Raw>,
    path: &str,
    cx: &mut Ctx,
    wrap: fn(K) -> Channel,
) -> Option<ChannelConfig> {
    let p = join(path, K::NAME);
    let channel = K::check(&raw.value, &p, cx);
    let timeout = cx.duration_min(
        K::timeout(&raw.value),
        &join(&p, "timeout"),
        CHANNEL_TIMEOUT,
        Duration::from_millis(1),
    );
    Some(ChannelConfig {
        channel: wrap(channel?),
        timeout,
    })
}

/// An Apprise-style URL notifier: its channel with the default timeout,
/// or `None` after a diagnostic.
fn url_channel(u: &Sp<RawSecretOrText>, path: &str, cx: &mut Ctx) -> Option<ChannelConfig> {
    let p = join(path, "url");
    let text = match &u.value {
        RawSecretOrText::Text(text) => Some(text.clone()),
        // A secret not read (`validate --syntax`) has no URL to check.
        RawSecretOrText::Secret(s) => cx
            .secret(
                &Sp {
                    value: s.clone(),
                    at: u.at,
                },
                &p,
            )
            .filter(|_| cx.reads_secrets())
            .map(|s| s.expose().to_owned()),
    };
    let channel = text.and_then(|text| match from_url(&text) {
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
    Some(ChannelConfig {
        channel: channel?,
        timeout: CHANNEL_TIMEOUT,
    })
}

/// The channel an Apprise-style URL names; the error says what is wrong
/// without repeating the URL.
pub(crate) fn from_url(text: &str) -> Result<Channel, String> {
    let p = Parts::parse(text)?;
    if let Some(channel) = of_url(&p) {
        return channel;
    }
    match p.scheme.as_str() {
        "http" | "https" => Err("a web URL does not say which service it is: write the \
             notifier as slack, teams, discord or webhook with this url"
            .to_owned()),
        other => Err(format!(
            "unknown notifier URL scheme `{other}://`: use one of {}",
            SCHEMES.concat().join(", ")
        )),
    }
}

/// The registry: every channel once. It writes `Channel` (one variant per
/// line, holding the unit's validated struct), `Channel::kind`,
/// `Channel::has_credential`, the check of a written-out channel
/// (`written`, by the `RawNotifier` variant of the same name), the reading
/// of an Apprise URL (`of_url`) and the schemes the unknown-scheme message
/// lists (`SCHEMES`, in registry order).
macro_rules! channels {
    ($($(#[$doc:meta])* $variant:ident($unit:ident::$kind:ident),)+) => {
        /// A chat or push service and what it needs to post a message.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Channel {
            $($(#[$doc])* $variant($unit::$kind),)+
        }

        impl Channel {
            /// The kind as written in the daemon file (`slack`, `teams`, ...).
            pub fn kind(&self) -> &'static str {
                match self {
                    $(Channel::$variant(_) => <$unit::$kind as ChannelKind>::NAME,)+
                }
            }

            /// Whether the configuration holds a credential (and so must not
            /// be written inline in the daemon file).
            pub fn has_credential(&self) -> bool {
                match self {
                    $(Channel::$variant(c) => c.has_credential(),)+
                }
            }
        }

        /// A written-out chat or push notifier, `None` for any other.
        fn written(raw: &RawNotifier, path: &str, cx: &mut Ctx) -> Option<ChannelConfig> {
            match raw {
                $(RawNotifier::$variant(raw) => checked(raw, path, cx, Channel::$variant),)+
                _ => None,
            }
        }

        /// The channel of the unit whose scheme `p` has, if any.
        fn of_url(p: &Parts) -> Option<Result<Channel, String>> {
            let scheme = p.scheme.as_str();
            $(if <$unit::$kind as ChannelKind>::SCHEMES.contains(&scheme)
                || <$unit::$kind as ChannelKind>::ALIASES.contains(&scheme)
            {
                return Some(<$unit::$kind as ChannelKind>::from_url(p).map(Channel::$variant));
            })+
            None
        }

        /// The Apprise URL schemes, for the unknown-scheme message.
        const SCHEMES: &[&[&str]] = &[$(<$unit::$kind as ChannelKind>::SCHEMES,)+];
    };
}

// In the order the unknown-scheme message lists their schemes.
channels! {
    /// A Telegram bot posting to one chat.
    Telegram(telegram::Telegram),
    /// A Slack incoming webhook (the whole URL is the credential).
    Slack(slack::Slack),
    /// A Discord channel webhook (the URL carries its token).
    Discord(discord::Discord),
    /// A Microsoft Teams workflow ("Post to a channel when a webhook request
    /// is received"); the URL carries its signature.
    Teams(teams::Teams),
    /// A Matrix room, posted to with an access token.
    Matrix(matrix::Matrix),
    /// An ntfy topic.
    Ntfy(ntfy::Ntfy),
    /// A Gotify application.
    Gotify(gotify::Gotify),
}

#[cfg(test)]
#[allow(clippy::expect_used, reason = "tests fail loudly on purpose")]
mod tests {
    use super::*;

    /// The channel `text` names; panics when it names none.
    pub(super) fn ok(text: &str) -> Channel {
        match from_url(text) {
            Ok(c) => c,
            Err(e) => panic!("{text}: {e}"),
        }
    }

    /// Why `text` names no channel; panics when it names one.
    pub(super) fn err(text: &str) -> String {
        match from_url(text) {
            Ok(c) => panic!("{text} parsed as {c:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn unknown_and_broken_urls_are_named_without_their_secrets() {
        let e = err("pushover://user-key-SECRET/token");
        assert!(
            e.contains("unknown notifier URL scheme `pushover://`"),
            "{e}"
        );
        assert!(!e.contains("SECRET"), "{e}");
        assert!(err("just text").contains("SCHEME://"));
        assert!(err("https://hooks.slack.com/services/a/b/c").contains("slack, teams, discord"));
        for text in [
            "tgram://SECRET/1/2",
            "slack://SECRET/b",
            "matrixs://SECRET@h/ops",
            "gotify://h/SECRET?priority=99",
        ] {
            let e = err(text);
            assert!(!e.contains("SECRET"), "{text}: {e}");
        }
    }

    #[test]
    fn secret_urls_print_their_origin_only() {
        let Channel::Slack(Slack { url }) = ok("slack://T1/B2/SECRET") else {
            panic!("not slack")
        };
        let shown = format!("{url:?}");
        assert_eq!(shown, "\"https://hooks.slack.com/***\"");
        let all = format!("{:?}", ok("tgram://1:SECRET/5"));
        assert!(!all.contains("SECRET"), "{all}");
        assert!(ok("tgram://1:a/5").has_credential());
        assert!(!ok("ntfy://topic").has_credential());
    }

    #[test]
    fn the_unknown_scheme_message_lists_every_scheme() {
        assert!(err("pushover://x").ends_with(
            "use one of tgram, slack, discord, workflows, matrix, matrixs, ntfy, ntfys, gotify, gotifys"
        ));
    }
}
