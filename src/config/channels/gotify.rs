//! Gotify: an application (`gotify: {server, token}`, or
//! `gotify[s]://HOST[/PATH]/TOKEN`).

use schemars::JsonSchema;
use serde::Deserialize;
use url::Url;

use super::ChannelKind;
use super::apprise::{Parts, server_url, token_like};
use crate::config::Secret;
use crate::config::tree::join;
use crate::config::validate::ctx::Ctx;
use crate::config::value::{RawSecret, Sp};

/// A Gotify notifier.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Gotify")]
pub(crate) struct RawGotify {
    /// The Gotify server's base URL.
    pub server: Sp<String>,
    /// The application token.
    pub token: Sp<RawSecret>,
    /// Priority 0 to 10. Default: 8 for threshold and failing alerts, 5 otherwise.
    pub priority: Option<Sp<u8>>,
    /// Request timeout. Default: 10s.
    pub timeout: Option<Sp<String>>,
}

/// A Gotify application.
#[derive(Debug, Clone, PartialEq)]
pub struct Gotify {
    /// The Gotify server.
    pub server: Url,
    /// The application token.
    pub token: Secret,
    /// Priority 0 to 10; `None`: 8 for alarms, 5 otherwise.
    pub priority: Option<u8>,
}

impl ChannelKind for Gotify {
    const NAME: &'static str = "gotify";
    const SCHEMES: &'static [&'static str] = &["gotify", "gotifys"];
    type Raw = RawGotify;

    fn check(g: &RawGotify, p: &str, cx: &mut Ctx) -> Option<Gotify> {
        let server = cx.base_url(&g.server, &join(p, "server"));
        let token = cx.secret(&g.token, &join(p, "token"));
        let priority = cx.priority(g.priority.as_ref(), &join(p, "priority"), 0, 10);
        match (server, token, priority) {
            (Some(server), Some(token), Some(priority)) => Some(Gotify {
                server,
                token,
                priority,
            }),
            _ => None,
        }
    }

    fn timeout(raw: &RawGotify) -> Option<&Sp<String>> {
        raw.timeout.as_ref()
    }

    fn from_url(p: &Parts) -> Result<Gotify, String> {
        gotify(p)
    }
}

/// `gotify[s]://HOST[:PORT][/PATH]/TOKEN[?priority=N]`.
fn gotify(p: &Parts) -> Result<Gotify, String> {
    let Some((token, path)) = p.segments.split_last() else {
        return Err("gotify:// needs an application token: gotifys://HOST/TOKEN".to_owned());
    };
    if !token_like(token) {
        return Err("a gotify:// application token is letters and digits".to_owned());
    }
    let mut server = server_url(p, "gotify")?;
    if !path.is_empty() {
        server.set_path(&format!("/{}/", path.join("/")));
    }
    let priority =
        match p.param("priority") {
            None => None,
            Some(word) => Some(match word.to_ascii_lowercase().as_str() {
                "low" => 1,
                "moderate" => 3,
                "normal" => 5,
                "high" => 8,
                "emergency" => 10,
                n => n.parse::<u8>().ok().filter(|n| *n <= 10).ok_or(
                    "gotify:// priority is 0-10 or low, moderate, normal, high, emergency",
                )?,
            }),
        };
    Ok(Gotify {
        server,
        token: Secret(token.clone()),
        priority,
    })
}

#[cfg(test)]
mod tests {
    use super::super::Channel;
    use super::super::tests::{err, ok};
    use super::*;

    #[test]
    fn gotify_urls() {
        let Channel::Gotify(Gotify {
            server,
            token,
            priority,
        }) = ok("gotifys://push.example.org/sub/path/AbCdEf123?priority=high")
        else {
            panic!("not gotify")
        };
        assert_eq!(server.as_str(), "https://push.example.org/sub/path/");
        assert_eq!(token.expose(), "AbCdEf123");
        assert_eq!(priority, Some(8));
        let Channel::Gotify(Gotify { server, .. }) = ok("gotify://127.0.0.1:8080/T") else {
            panic!("not gotify")
        };
        assert_eq!(server.as_str(), "http://127.0.0.1:8080/");
        assert!(err("gotify://host").contains("application token"));
        assert!(err("gotify://host/T?priority=11").contains("priority"));
    }
}
