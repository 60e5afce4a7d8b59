//! ntfy: a topic (`ntfy: {topic}`, or `ntfy://TOPIC` on ntfy.sh, or
//! `ntfy[s]://[USER:PASSWORD@|TOKEN@]HOST/TOPIC`).

use schemars::JsonSchema;
use serde::Deserialize;
use url::Url;

use super::ChannelKind;
use super::apprise::{Parts, parse_base, server_url};
use crate::config::Secret;
use crate::config::tree::join;
use crate::config::validate::ctx::Ctx;
use crate::config::value::{RawSecret, Sp};

/// The public ntfy server, the default and the one `ntfy://TOPIC` names.
const NTFY_SH: &str = "https://ntfy.sh";

/// An ntfy notifier.
#[allow(
    rustdoc::bare_urls,
    reason = "the doc comments are the JSON schema's descriptions, written for the YAML file's users"
)]
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Ntfy")]
pub(crate) struct RawNtfy {
    /// The ntfy server. Default: https://ntfy.sh.
    pub server: Option<Sp<String>>,
    /// The topic (letters, digits, _ and -, at most 64).
    pub topic: Sp<String>,
    /// An access token (tk_...), sent as a bearer token.
    pub token: Option<Sp<RawSecret>>,
    /// User name for basic authentication (with password).
    pub username: Option<Sp<String>>,
    /// Password for basic authentication.
    pub password: Option<Sp<RawSecret>>,
    /// Priority 1 (min) to 5 (max). Default: 4 for threshold and failing alerts, 3 otherwise.
    pub priority: Option<Sp<u8>>,
    /// Extra tags; ntfy shows known ones as emojis.
    pub tags: Option<Sp<Vec<Sp<String>>>>,
    /// Request timeout. Default: 10s.
    pub timeout: Option<Sp<String>>,
}

/// An ntfy topic.
#[derive(Debug, Clone, PartialEq)]
pub struct Ntfy {
    /// The ntfy server (default `https://ntfy.sh`).
    pub server: Url,
    /// The topic.
    pub topic: String,
    /// Access token or user and password, if the topic needs one.
    pub auth: Option<NtfyAuth>,
    /// Priority 1 to 5; `None`: 4 for alarms, 3 otherwise.
    pub priority: Option<u8>,
    /// Extra tags (ntfy shows known ones as emojis).
    pub tags: Vec<String>,
}

/// How an ntfy client logs in.
#[derive(Debug, Clone, PartialEq)]
pub enum NtfyAuth {
    /// `Authorization: Bearer TOKEN` (an ntfy access token, `tk_...`).
    Token(Secret),
    /// `Authorization: Basic ...`.
    Basic {
        /// The user name.
        username: String,
        /// The password.
        password: Secret,
    },
}

impl ChannelKind for Ntfy {
    const NAME: &'static str = "ntfy";
    const SCHEMES: &'static [&'static str] = &["ntfy", "ntfys"];
    type Raw = RawNtfy;

    fn check(n: &RawNtfy, p: &str, cx: &mut Ctx) -> Option<Ntfy> {
        let server = match &n.server {
            Some(u) => cx.base_url(u, &join(p, "server")),
            None => Url::parse(NTFY_SH).ok(),
        };
        let topic = n.topic.value.trim();
        let ok_topic = valid_ntfy_topic(topic);
        if !ok_topic {
            cx.err(
                n.topic.at,
                &join(p, "topic"),
                format!("a topic {NTFY_TOPIC_RULE}"),
            );
        }
        // `Err` after a reported problem, so the notifier is left out.
        let auth = match (&n.token, &n.username, &n.password) {
            (None, None, None) => Ok(None),
            (Some(t), None, None) => cx
                .secret(t, &join(p, "token"))
                .map(|s| Some(NtfyAuth::Token(s)))
                .ok_or(()),
            (None, Some(user), Some(password)) => cx
                .secret(password, &join(p, "password"))
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
                    &join(p, "token"),
                    "give either a token or a username and password, not both",
                );
                Err(())
            }
            (None, Some(u), None) => {
                cx.err(u.at, &join(p, "username"), "a username needs a password");
                Err(())
            }
            (None, None, Some(s)) => {
                cx.err(s.at, &join(p, "password"), "a password needs a username");
                Err(())
            }
        };
        let priority = cx.priority(n.priority.as_ref(), &join(p, "priority"), 1, 5);
        let tags: Vec<String> = n
            .tags
            .iter()
            .flat_map(|t| t.value.iter())
            .map(|t| t.value.trim().to_owned())
            .filter(|t| !t.is_empty())
            .collect();
        match (server, auth, priority) {
            (Some(server), Ok(auth), Some(priority)) if ok_topic => Some(Ntfy {
                server,
                topic: topic.to_owned(),
                auth,
                priority,
                tags,
            }),
            _ => None,
        }
    }

    fn timeout(raw: &RawNtfy) -> Option<&Sp<String>> {
        raw.timeout.as_ref()
    }

    fn from_url(p: &Parts) -> Result<Ntfy, String> {
        ntfy(p)
    }

    /// Only with a token or a password: a public topic needs none.
    fn has_credential(&self) -> bool {
        self.auth.is_some()
    }
}

/// `ntfy://TOPIC` (on ntfy.sh), `ntfy[s]://[USER:PASSWORD@|TOKEN@]HOST[:PORT]/TOPIC`,
/// with `?priority=` (1-5 or min, low, default, high, max, urgent),
/// `?tags=a,b` and `?token=`.
fn ntfy(p: &Parts) -> Result<Ntfy, String> {
    p.at_most(1, "topic")?;
    let (server, topic) = match p.segments.first() {
        Some(topic) => (server_url(p, "ntfy")?, topic.clone()),
        None => (parse_base(NTFY_SH)?, p.host.clone()),
    };
    if !valid_ntfy_topic(&topic) {
        return Err(format!("{}:// topic {NTFY_TOPIC_RULE}", p.scheme));
    }
    let auth = match (&p.user, &p.password, p.param("token")) {
        (_, _, Some(token)) if !token.is_empty() => Some(NtfyAuth::Token(Secret(token.to_owned()))),
        (Some(user), Some(password), _) => Some(NtfyAuth::Basic {
            username: user.clone(),
            password: Secret(password.clone()),
        }),
        (Some(token), None, _) => Some(NtfyAuth::Token(Secret(token.clone()))),
        _ => None,
    };
    let priority = match p.param("priority") {
        None => None,
        Some(word) => Some(match word.to_ascii_lowercase().as_str() {
            "1" | "min" => 1,
            "2" | "low" => 2,
            "3" | "default" | "normal" => 3,
            "4" | "high" => 4,
            "5" | "max" | "urgent" | "emergency" => 5,
            _ => {
                return Err("ntfy:// priority is 1-5 or min, low, default, high, max".to_owned());
            }
        }),
    };
    let tags = p
        .param("tags")
        .map(|t| {
            t.split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    Ok(Ntfy {
        server,
        topic,
        auth,
        priority,
        tags,
    })
}

/// What an ntfy topic may be (the server's own rule).
const NTFY_TOPIC_RULE: &str = "is 1 to 64 letters, digits, _ or -";

/// Whether `topic` passes ntfy's topic rule.
fn valid_ntfy_topic(topic: &str) -> bool {
    (1..=64).contains(&topic.len())
        && topic
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::super::Channel;
    use super::super::tests::{err, ok};
    use super::*;

    #[test]
    fn ntfy_urls() {
        let Channel::Ntfy(Ntfy {
            server,
            topic,
            auth,
            priority,
            tags,
        }) = ok("ntfy://semclip-alerts")
        else {
            panic!("not ntfy")
        };
        assert_eq!(server.as_str(), "https://ntfy.sh/");
        assert_eq!(topic, "semclip-alerts");
        assert_eq!((auth, priority, tags.len()), (None, None, 0));

        let Channel::Ntfy(Ntfy {
            server,
            topic,
            auth,
            priority,
            tags,
        }) = ok("ntfys://ops:p%40ss@ntfy.example.org/quotes?priority=high&tags=chart,warning")
        else {
            panic!("not ntfy")
        };
        assert_eq!(server.as_str(), "https://ntfy.example.org/");
        assert_eq!(topic, "quotes");
        assert_eq!(
            auth,
            Some(NtfyAuth::Basic {
                username: "ops".to_owned(),
                password: Secret::new("p@ss"),
            })
        );
        assert_eq!(priority, Some(4));
        assert_eq!(tags, ["chart", "warning"]);

        let Channel::Ntfy(Ntfy { server, auth, .. }) = ok("ntfy://tk_abc@10.0.0.5:8080/t") else {
            panic!("not ntfy")
        };
        assert_eq!(server.as_str(), "http://10.0.0.5:8080/");
        assert_eq!(auth, Some(NtfyAuth::Token(Secret::new("tk_abc"))));
        assert!(err("ntfys://host/a/b").contains("one notifier per topic"));
        assert!(err("ntfy://bad%20topic").contains("topic is"));
        assert!(err("ntfy://t?priority=loud").contains("priority"));
    }
}
