//! Microsoft Teams: a workflow's webhook, posted an Adaptive Card
//! (`teams: {url: ...}`, or `workflows://HOST/WORKFLOW/SIGNATURE`).

use super::ChannelKind;
use super::apprise::{Parts, parse_base, token_like};
use super::hook::{RawHookChannel, hook_url};
use crate::config::SecretUrl;
use crate::config::validate::ctx::Ctx;
use crate::config::value::Sp;

/// A Microsoft Teams workflow ("Post to a channel when a webhook request
/// is received"); the URL carries its signature.
#[derive(Debug, Clone, PartialEq)]
pub struct Teams {
    /// The workflow's HTTP trigger URL.
    pub url: SecretUrl,
}

impl ChannelKind for Teams {
    const NAME: &'static str = "teams";
    const SCHEMES: &'static [&'static str] = &["workflows"];
    /// `workflow`, and `msteams` to say what replaced it.
    const ALIASES: &'static [&'static str] = &["workflow", "msteams"];
    type Raw = RawHookChannel;

    fn check(raw: &RawHookChannel, p: &str, cx: &mut Ctx) -> Option<Teams> {
        hook_url(raw, p, cx).map(|url| Teams { url })
    }

    fn timeout(raw: &RawHookChannel) -> Option<&Sp<String>> {
        raw.timeout.as_ref()
    }

    fn from_url(p: &Parts) -> Result<Teams, String> {
        if p.scheme == "msteams" {
            return Err(
                "msteams:// is Teams' retired Office 365 connector: create a \
             Workflows webhook and write workflows://HOST/WORKFLOW/SIGNATURE (or teams: {url: ...})"
                    .to_owned(),
            );
        }
        workflows(p)
    }
}

/// `workflows://HOST[:PORT]/WORKFLOW/SIGNATURE[?ver=API_VERSION]`, the
/// parts of an Azure Logic Apps / Power Automate HTTP trigger URL.
fn workflows(p: &Parts) -> Result<Teams, String> {
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
    Ok(Teams {
        url: SecretUrl(url),
    })
}

#[cfg(test)]
mod tests {
    use super::super::Channel;
    use super::super::tests::{err, ok};
    use super::*;

    #[test]
    fn workflows_urls_become_webhook_urls() {
        let Channel::Teams(Teams { url }) =
            ok("workflows://prod-01.westus.logic.azure.com:443/wf1d/s1g")
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
}
