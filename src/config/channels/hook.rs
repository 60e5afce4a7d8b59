//! What the Slack, Teams and Discord units share: a notifier that is one
//! webhook URL, its raw form ([`RawHookChannel`]) and the check of that URL
//! ([`hook_url`]).

use schemars::JsonSchema;
use serde::Deserialize;
use url::Url;

use crate::config::SecretUrl;
use crate::config::tree::join;
use crate::config::validate::ctx::Ctx;
use crate::config::value::{RawSecret, Sp};

/// A Slack, Teams or Discord notifier: its webhook URL.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "HookChannel")]
pub(crate) struct RawHookChannel {
    /// The webhook URL (http or https); it is a credential, so {env: NAME} or {file: PATH}.
    pub url: Sp<RawSecret>,
    /// Request timeout. Default: 10s.
    pub timeout: Option<Sp<String>>,
}

/// The webhook URL of a Slack, Teams or Discord notifier, read from its
/// secret. Messages never show the URL: it is the credential.
pub(super) fn hook_url(h: &RawHookChannel, path: &str, cx: &mut Ctx) -> Option<SecretUrl> {
    let p = join(path, "url");
    // A secret not read (`validate --syntax`) has no URL to check.
    let secret = cx.secret(&h.url, &p).filter(|_| cx.reads_secrets())?;
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
