//! Apprise-style notifier URLs (`tgram://TOKEN/CHAT`, `ntfys://host/topic`,
//! ...), a shorthand for the written-out forms: [`Parts`] takes one apart,
//! and the helpers here build the URLs of the services from its parts. Each
//! channel unit reads its own schemes ([`super::ChannelKind::from_url`]);
//! [`super::from_url`] asks them in turn.
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

use crate::config::SecretUrl;

/// The parts of `scheme://[user[:password]@]host/seg/seg?key=value`, each
/// percent-decoded.
pub(super) struct Parts {
    pub(super) scheme: String,
    pub(super) user: Option<String>,
    pub(super) password: Option<String>,
    pub(super) host: String,
    pub(super) segments: Vec<String>,
    pub(super) query: Vec<(String, String)>,
}

impl Parts {
    /// Takes `text` apart; the error never repeats it.
    pub(super) fn parse(text: &str) -> Result<Parts, String> {
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

    /// The value of query parameter `key` (lowercase).
    pub(super) fn param(&self, key: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Refuses a second target.
    pub(super) fn at_most(&self, n: usize, what: &str) -> Result<(), String> {
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

/// Whether a token is a plain path segment (no `/`, `?`, spaces).
pub(super) fn token_like(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.~=".contains(c))
}

/// `http://HOST` for `matrix`, `ntfy`, `gotify`; `https://HOST` for the
/// same schemes ending in `s`.
pub(super) fn server_url(p: &Parts, plain: &str) -> Result<Url, String> {
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
pub(super) fn parse_base(text: &str) -> Result<Url, String> {
    Url::parse(text).map_err(|e| format!("not a valid URL: {e}"))
}

/// A webhook URL built from an Apprise URL's parts.
pub(super) fn webhook_url(text: &str) -> Result<SecretUrl, String> {
    parse_base(text).map(SecretUrl)
}
