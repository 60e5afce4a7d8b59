//! Apprise-style notifier URLs (`tgram://TOKEN/CHAT`, `ntfys://host/topic`,
//! ...) turned into a [`Channel`]: a shorthand for the written-out forms.
//!
//! # Guarantees
//!
//! - An error message never repeats the URL or any part of it but its
//!   scheme: the URL usually carries a credential (a bot token, a webhook
//!   signature), and diagnostics are printed and logged.
//!
//! # Decisions
//!
//! - The URL is taken apart by hand rather than with [`url::Url`]: a
//!   Telegram bot token (`123456:ABC...`) sits where a URL has its host and
//!   would be read as a host with a bad port, and Matrix room aliases
//!   (`/#room`) would become a fragment.
//! - One target per notifier: Apprise lets one URL name several chats or
//!   rooms; semclip's outbox retries per notifier, so a second target would
//!   be sent again every time the first fails. Define one notifier each.
//! - Matrix takes an access token, never a password: `matrix://user:TOKEN@host`
//!   reads the part after the colon as the token (semclip does not log in).
//! - `msteams://` (Teams' Office 365 connectors) is refused with a pointer
//!   to `workflows://`, since Microsoft retired those connectors.

use percent_encoding::percent_decode_str;
use url::Url;

use super::{Channel, NtfyAuth, Secret, SecretUrl};

/// The forms accepted, for the unknown-scheme message.
const SCHEMES: &str =
    "tgram, slack, discord, workflows, matrix, matrixs, ntfy, ntfys, gotify, gotifys";

/// The public ntfy server, used by `ntfy://TOPIC`.
pub(crate) const NTFY_SH: &str = "https://ntfy.sh";

/// The Telegram Bot API.
pub(crate) const TELEGRAM_API: &str = "https://api.telegram.org";

/// The parts of `scheme://[user[:password]@]host/seg/seg?key=value`, each
/// percent-decoded.
struct Parts {
    scheme: String,
    user: Option<String>,
    password: Option<String>,
    host: String,
    segments: Vec<String>,
    query: Vec<(String, String)>,
}

impl Parts {
    fn parse(text: &str) -> Result<Parts, String> {
        let (scheme, rest) = text
            .trim()
            .split_once("://")
            .ok_or("not a notifier URL: write SCHEME://..., e.g. ntfys://ntfy.example.org/topic")?;
        let scheme = scheme.to_ascii_lowercase();
        if scheme.is_empty() || !scheme.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err("not a notifier URL: the scheme is not a word".to_owned());
        }
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (userinfo, host) = match authority.rsplit_once('@') {
            Some((userinfo, host)) => (Some(userinfo), host),
            None => (None, authority),
        };
        let (user, password) = match userinfo {
            None => (None, None),
            Some(info) => match info.split_once(':') {
                Some((user, password)) => (Some(decode(user)?), Some(decode(password)?)),
                None => (Some(decode(info)?), None),
            },
        };
        let segments = path
            .split('/')
            .filter(|s| !s.is_empty())
            .map(decode)
            .collect::<Result<Vec<_>, _>>()?;
        let query = url::form_urlencoded::parse(query.as_bytes())
            .map(|(k, v)| (k.to_ascii_lowercase(), v.into_owned()))
            .collect();
        Ok(Parts {
            scheme,
            user: user.filter(|u| !u.is_empty()),
            password: password.filter(|p| !p.is_empty()),
            host: decode(host)?,
            segments,
            query,
        })
    }

    fn param(&self, key: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Refuses a second target.
    fn at_most(&self, n: usize, what: &str) -> Result<(), String> {
        if self.segments.len() > n {
            return Err(format!(
                "{}:// names more than one {what}: define one notifier per {what}",
                self.scheme
            ));
        }
        Ok(())
    }
}

fn decode(text: &str) -> Result<String, String> {
    percent_decode_str(text)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| "a percent-escape in the URL is not UTF-8".to_owned())
}

/// Parses an Apprise-style URL.
pub(crate) fn parse(text: &str) -> Result<Channel, String> {
    let p = Parts::parse(text)?;
    match p.scheme.as_str() {
        "tgram" => telegram(&p),
        "slack" => slack(&p),
        "discord" => discord(&p),
        "workflows" | "workflow" => workflows(&p),
        "msteams" => Err(
            "msteams:// is Teams' retired Office 365 connector: create a \
             Workflows webhook and write workflows://HOST/WORKFLOW/SIGNATURE (or teams: {url: ...})"
                .to_owned(),
        ),
        "matrix" | "matrixs" => matrix(&p),
        "ntfy" | "ntfys" => ntfy(&p),
        "gotify" | "gotifys" => gotify(&p),
        "http" | "https" => Err("a web URL does not say which service it is: write the \
             notifier as slack, teams, discord or webhook with this url"
            .to_owned()),
        other => Err(format!(
            "unknown notifier URL scheme `{other}://`: use one of {SCHEMES}"
        )),
    }
}

/// `tgram://BOT_TOKEN/CHAT_ID`.
fn telegram(p: &Parts) -> Result<Channel, String> {
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
    Ok(Channel::Telegram {
        api_url: Url::parse(TELEGRAM_API).map_err(|e| e.to_string())?,
        token: Secret(token.to_owned()),
        chat_id: chat_id.clone(),
    })
}

/// Whether a token is a plain path segment (no `/`, `?`, spaces).
fn token_like(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.~=".contains(c))
}

/// `slack://[botname@]TOKEN_A/TOKEN_B/TOKEN_C`, the three parts of
/// `https://hooks.slack.com/services/A/B/C`.
fn slack(p: &Parts) -> Result<Channel, String> {
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
    .map(|url| Channel::Slack { url })
}

/// `discord://[botname@]WEBHOOK_ID/WEBHOOK_TOKEN`.
fn discord(p: &Parts) -> Result<Channel, String> {
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
    .map(|url| Channel::Discord { url })
}

/// `workflows://HOST[:PORT]/WORKFLOW/SIGNATURE[?ver=API_VERSION]`, the
/// parts of an Azure Logic Apps / Power Automate HTTP trigger URL.
fn workflows(p: &Parts) -> Result<Channel, String> {
    let [workflow, signature] = p.segments.as_slice() else {
        return Err("workflows:// needs the host, workflow id and signature: \
             workflows://HOST/WORKFLOW/SIGNATURE"
            .to_owned());
    };
    if p.host.is_empty() || !token_like(workflow) || !token_like(signature) {
        return Err("workflows:// needs the host, workflow id and signature: \
             workflows://HOST/WORKFLOW/SIGNATURE"
            .to_owned());
    }
    let version = p
        .param("ver")
        .or_else(|| p.param("api-version"))
        .unwrap_or("2016-06-01");
    let mut url = parse_base(&format!(
        "https://{}/workflows/{workflow}/triggers/manual/paths/invoke",
        p.host
    ))?;
    url.query_pairs_mut()
        .append_pair("api-version", version)
        .append_pair("sp", "/triggers/manual/run")
        .append_pair("sv", "1.0")
        .append_pair("sig", signature);
    Ok(Channel::Teams {
        url: SecretUrl(url),
    })
}

/// `matrix[s]://[user:]TOKEN@HOST[:PORT]/ROOM` where ROOM is `!id[:server]`
/// or `#alias[:server]` (the homeserver's name is added when missing).
fn matrix(p: &Parts) -> Result<Channel, String> {
    let token = p
        .password
        .as_ref()
        .or(p.user.as_ref())
        .ok_or("matrix:// needs an access token: matrixs://USER:ACCESS_TOKEN@HOST/!ROOM_ID")?;
    p.at_most(1, "room")?;
    let room = p
        .segments
        .first()
        .ok_or("matrix:// needs a room: matrixs://USER:ACCESS_TOKEN@HOST/!ROOM_ID or /#ALIAS")?;
    let server = server_url(p, "matrix")?;
    let room = if !(room.starts_with('!') || room.starts_with('#')) {
        return Err("a matrix:// room starts with ! (an id) or # (an alias)".to_owned());
    } else if room.contains(':') {
        room.clone()
    } else {
        // Apprise's rule: a room without a server is on the URL's host.
        let host = server.host_str().unwrap_or_default();
        format!("{room}:{host}")
    };
    Ok(Channel::Matrix {
        server,
        room,
        token: Secret(token.clone()),
    })
}

/// `ntfy://TOPIC` (on ntfy.sh), `ntfy[s]://[USER:PASSWORD@|TOKEN@]HOST[:PORT]/TOPIC`,
/// with `?priority=` (1-5 or min, low, default, high, max, urgent),
/// `?tags=a,b` and `?token=`.
fn ntfy(p: &Parts) -> Result<Channel, String> {
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
    Ok(Channel::Ntfy {
        server,
        topic,
        auth,
        priority,
        tags,
    })
}

/// What an ntfy topic may be (the server's own rule).
pub(crate) const NTFY_TOPIC_RULE: &str = "is 1 to 64 letters, digits, _ or -";

/// Whether `topic` passes ntfy's topic rule.
pub(crate) fn valid_ntfy_topic(topic: &str) -> bool {
    (1..=64).contains(&topic.len())
        && topic
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// `gotify[s]://HOST[:PORT][/PATH]/TOKEN[?priority=N]`.
fn gotify(p: &Parts) -> Result<Channel, String> {
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
    Ok(Channel::Gotify {
        server,
        token: Secret(token.clone()),
        priority,
    })
}

/// `http://HOST` for `matrix`, `ntfy`, `gotify`; `https://HOST` for the
/// same schemes ending in `s`.
fn server_url(p: &Parts, plain: &str) -> Result<Url, String> {
    if p.host.is_empty() {
        return Err(format!("{}:// needs a host", p.scheme));
    }
    let web = if p.scheme == plain { "http" } else { "https" };
    parse_base(&format!("{web}://{}", p.host)).map_err(|_| {
        format!(
            "{}:// has a host that is not a host name or address",
            p.scheme
        )
    })
}

/// A base URL; the message says what is wrong, never what was written.
fn parse_base(text: &str) -> Result<Url, String> {
    Url::parse(text).map_err(|e| format!("not a valid URL: {e}"))
}

fn webhook_url(text: &str) -> Result<SecretUrl, String> {
    parse_base(text).map(SecretUrl)
}

#[cfg(test)]
#[allow(clippy::expect_used, reason = "tests fail loudly on purpose")]
mod tests {
    use super::*;

    fn ok(text: &str) -> Channel {
        match parse(text) {
            Ok(c) => c,
            Err(e) => panic!("{text}: {e}"),
        }
    }

    fn err(text: &str) -> String {
        match parse(text) {
            Ok(c) => panic!("{text} parsed as {c:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn telegram_urls() {
        let Channel::Telegram {
            api_url,
            token,
            chat_id,
        } = ok("tgram://123456789:AAH-xyz_9/-100200300")
        else {
            panic!("not telegram")
        };
        assert_eq!(api_url.as_str(), "https://api.telegram.org/");
        assert_eq!(token.expose(), "123456789:AAH-xyz_9");
        assert_eq!(chat_id, "-100200300");
        let Channel::Telegram { token, chat_id, .. } = ok("tgram://bot42:k/%40mychannel") else {
            panic!("not telegram")
        };
        assert_eq!((token.expose(), chat_id.as_str()), ("42:k", "@mychannel"));
        assert!(err("tgram://123:abc").contains("needs a chat id"));
        assert!(err("tgram://nocolon/42").contains("bot token"));
        assert!(err("tgram://1:a/42/43").contains("one notifier per chat"));
    }

    #[test]
    fn slack_discord_and_workflows_become_webhook_urls() {
        let Channel::Slack { url } = ok("slack://T1ABC/B2DEF/xyz789") else {
            panic!("not slack")
        };
        assert_eq!(
            url.expose().as_str(),
            "https://hooks.slack.com/services/T1ABC/B2DEF/xyz789"
        );
        let Channel::Slack { url } = ok("slack://semclip@T1/B2/C3") else {
            panic!("not slack")
        };
        assert!(url.expose().path().ends_with("/T1/B2/C3"));
        assert!(err("slack://T1/B2").contains("three tokens"));
        assert!(err("slack://T1/B2/C3/#ops").contains("channel"));
        assert!(err("slack://xoxb-1-2/#ops").contains("Web API"));

        let Channel::Discord { url } = ok("discord://1234567890/tok-EN_x") else {
            panic!("not discord")
        };
        assert_eq!(
            url.expose().as_str(),
            "https://discord.com/api/webhooks/1234567890/tok-EN_x"
        );
        assert!(err("discord://1234567890").contains("id and token"));

        let Channel::Teams { url } = ok("workflows://prod-01.westus.logic.azure.com:443/wf1d/s1g")
        else {
            panic!("not teams")
        };
        let url = url.expose();
        assert_eq!(url.host_str(), Some("prod-01.westus.logic.azure.com"));
        assert_eq!(url.path(), "/workflows/wf1d/triggers/manual/paths/invoke");
        let query: Vec<(String, String)> = url.query_pairs().into_owned().collect();
        assert!(query.contains(&("sig".to_owned(), "s1g".to_owned())));
        assert!(query.contains(&("api-version".to_owned(), "2016-06-01".to_owned())));
        assert!(query.contains(&("sp".to_owned(), "/triggers/manual/run".to_owned())));
        assert!(err("msteams://team/a/b/c").contains("workflows://"));
    }

    #[test]
    fn matrix_urls() {
        let Channel::Matrix {
            server,
            room,
            token,
        } = ok("matrixs://bot:syt_T0ken@matrix.example.org/#ops")
        else {
            panic!("not matrix")
        };
        assert_eq!(server.as_str(), "https://matrix.example.org/");
        assert_eq!(room, "#ops:matrix.example.org");
        assert_eq!(token.expose(), "syt_T0ken");
        let Channel::Matrix { server, room, .. } = ok("matrix://tok@localhost:8008/!abc:other.org")
        else {
            panic!("not matrix")
        };
        assert_eq!(server.as_str(), "http://localhost:8008/");
        assert_eq!(room, "!abc:other.org");
        assert!(err("matrixs://matrix.example.org/!abc").contains("access token"));
        assert!(err("matrixs://t@matrix.example.org/ops").contains("starts with"));
    }

    #[test]
    fn ntfy_urls() {
        let Channel::Ntfy {
            server,
            topic,
            auth,
            priority,
            tags,
        } = ok("ntfy://semclip-alerts")
        else {
            panic!("not ntfy")
        };
        assert_eq!(server.as_str(), "https://ntfy.sh/");
        assert_eq!(topic, "semclip-alerts");
        assert_eq!((auth, priority, tags.len()), (None, None, 0));

        let Channel::Ntfy {
            server,
            topic,
            auth,
            priority,
            tags,
        } = ok("ntfys://ops:p%40ss@ntfy.example.org/quotes?priority=high&tags=chart,warning")
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

        let Channel::Ntfy { server, auth, .. } = ok("ntfy://tk_abc@10.0.0.5:8080/t") else {
            panic!("not ntfy")
        };
        assert_eq!(server.as_str(), "http://10.0.0.5:8080/");
        assert_eq!(auth, Some(NtfyAuth::Token(Secret::new("tk_abc"))));
        assert!(err("ntfys://host/a/b").contains("one notifier per topic"));
        assert!(err("ntfy://bad%20topic").contains("topic is"));
        assert!(err("ntfy://t?priority=loud").contains("priority"));
    }

    #[test]
    fn gotify_urls() {
        let Channel::Gotify {
            server,
            token,
            priority,
        } = ok("gotifys://push.example.org/sub/path/AbCdEf123?priority=high")
        else {
            panic!("not gotify")
        };
        assert_eq!(server.as_str(), "https://push.example.org/sub/path/");
        assert_eq!(token.expose(), "AbCdEf123");
        assert_eq!(priority, Some(8));
        let Channel::Gotify { server, .. } = ok("gotify://127.0.0.1:8080/T") else {
            panic!("not gotify")
        };
        assert_eq!(server.as_str(), "http://127.0.0.1:8080/");
        assert!(err("gotify://host").contains("application token"));
        assert!(err("gotify://host/T?priority=11").contains("priority"));
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
        let Channel::Slack { url } = ok("slack://T1/B2/SECRET") else {
            panic!("not slack")
        };
        let shown = format!("{url:?}");
        assert_eq!(shown, "\"https://hooks.slack.com/***\"");
        let all = format!("{:?}", ok("tgram://1:SECRET/5"));
        assert!(!all.contains("SECRET"), "{all}");
        assert!(ok("tgram://1:a/5").has_credential());
        assert!(!ok("ntfy://topic").has_credential());
    }
}
