//! Telling a block from a page. A bot challenge, a firewall's block page
//! or a rate limit is not the page a watch watches: diffing it against the
//! real page would report every value as gone, and storing it would make
//! the real page's return look like a change. So such an answer is a
//! *blocked* failure, with its reason, and the host's `Retry-After` is
//! honoured before the next request to it.
//!
//! What counts as blocked, from the answer alone ([`judge`]):
//! - `429 Too Many Requests`, always (a rate limit);
//! - `403` or `503` carrying the marks of a bot-protection vendor in its
//!   headers or the start of its body ([`VENDORS`]: Cloudflare, Akamai,
//!   Imperva, DataDome, HUMAN/PerimeterX, AWS WAF, Sucuri, and the
//!   `cf-mitigated: challenge` header any Cloudflare answer may carry);
//! - `503` with a `Retry-After` (the server says when to come back).
//!
//! A plain `403` or `503` stays an ordinary HTTP error (`503` is retried as
//! transient; a block is not: retrying a bot wall at once only deepens it).
//! Pages served with `200` that are challenges all the same are caught by
//! a watch's own `blocked` XPaths over the hierarchy, in the check.

use std::time::{Duration, SystemTime};

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, RETRY_AFTER};

/// The longest `Retry-After` honoured: a server asking for more is waited
/// for this long (an hour), so a wrong or hostile header cannot silence a
/// host for days.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);

/// How much of a refusal's body is read to look for vendors' marks: they
/// sit in the first kilobytes (titles, script names), and a refusal is
/// never worth reading whole.
pub const SNIFF_BYTES: usize = 64 * 1024;

/// Why an answer is a block, not the page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    /// For people: who blocked and how (`Cloudflare challenge`,
    /// `rate limited`).
    pub reason: String,
    /// How long the server asked to be left alone, when it said
    /// (capped at [`MAX_RETRY_AFTER`]).
    pub retry_after: Option<Duration>,
}

/// A vendor's marks: any one header (name, and a lower-case value
/// fragment or `""` for any value) or body fragment (lower case) is
/// enough, given a 403 or 503 status.
struct Vendor {
    what: &'static str,
    headers: &'static [(&'static str, &'static str)],
    body: &'static [&'static str],
}

/// The bot-protection vendors whose block and challenge pages semclip
/// recognises, by the marks they document or always show.
const VENDORS: &[Vendor] = &[
    Vendor {
        what: "Cloudflare challenge",
        headers: &[("cf-mitigated", "challenge")],
        body: &[
            "/cdn-cgi/challenge-platform/",
            "cf-browser-verification",
            "cf_chl_opt",
            "<title>just a moment...</title>",
            "attention required! | cloudflare",
        ],
    },
    Vendor {
        what: "Akamai block",
        headers: &[],
        body: &["errors.edgesuite.net", "akamai reference"],
    },
    Vendor {
        what: "Imperva Incapsula block",
        headers: &[("x-iinfo", ""), ("x-cdn", "incapsula")],
        body: &["_incapsula_resource", "incapsula incident id"],
    },
    Vendor {
        what: "DataDome challenge",
        headers: &[("x-datadome", ""), ("x-dd-b", "")],
        body: &["captcha-delivery.com", "datadome"],
    },
    Vendor {
        what: "HUMAN (PerimeterX) challenge",
        headers: &[],
        body: &["px-captcha", "_pxappid", "perimeterx"],
    },
    Vendor {
        what: "AWS WAF challenge",
        headers: &[("x-amzn-waf-action", "")],
        body: &["awswaf", "aws-waf-token"],
    },
    Vendor {
        what: "Sucuri firewall block",
        headers: &[("x-sucuri-id", ""), ("x-sucuri-block", "")],
        body: &["sucuri website firewall", "cloudproxy.sucuri.net"],
    },
];

/// Whether the answer `status` with `headers` and the first bytes of its
/// body (`body`, at most [`SNIFF_BYTES`] are looked at) is a block rather
/// than the page; `now` reads a `Retry-After` date.
pub fn judge(
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
    now: SystemTime,
) -> Option<Blocked> {
    let retry_after = retry_after(headers, now);
    let blocked = |reason: String| {
        Some(Blocked {
            reason,
            retry_after,
        })
    };
    if status == StatusCode::TOO_MANY_REQUESTS {
        return blocked("rate limited (HTTP 429)".to_owned());
    }
    if status != StatusCode::FORBIDDEN && status != StatusCode::SERVICE_UNAVAILABLE {
        return None;
    }
    if let Some(vendor) = vendor(headers, body) {
        return blocked(format!("{vendor} (HTTP {})", status.as_u16()));
    }
    if status == StatusCode::SERVICE_UNAVAILABLE && retry_after.is_some() {
        return blocked("unavailable, asked to come back later (HTTP 503 with Retry-After)".into());
    }
    None
}

/// The vendor whose marks the answer carries.
fn vendor(headers: &HeaderMap, body: &[u8]) -> Option<&'static str> {
    let header = |name: &str| {
        headers
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).to_ascii_lowercase())
    };
    let head = &body[..body.len().min(SNIFF_BYTES)];
    let text = String::from_utf8_lossy(head).to_ascii_lowercase();
    VENDORS
        .iter()
        .find(|v| {
            v.headers
                .iter()
                .any(|(name, value)| header(name).is_some_and(|h| h.contains(value)))
                || v.body.iter().any(|b| text.contains(b))
        })
        .map(|v| v.what)
}

/// `Retry-After` as a delay from `now`: delta-seconds or an HTTP date, at
/// most [`MAX_RETRY_AFTER`]; `None` when absent or unreadable.
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    let delay = match value.parse::<u64>() {
        Ok(seconds) => Duration::from_secs(seconds),
        Err(_) => httpdate::parse_http_date(value)
            .ok()?
            .duration_since(now)
            .unwrap_or_default(),
    };
    Some(delay.min(MAX_RETRY_AFTER))
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::type_complexity,
    reason = "tests fail loudly on purpose; the case table is read in place"
)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    const NOW: SystemTime = SystemTime::UNIX_EPOCH;

    #[test]
    fn vendors_challenges_and_rate_limits_are_blocks() {
        let cases: &[(u16, &[(&'static str, &str)], &str, &str)] = &[
            (
                503,
                &[("server", "cloudflare")],
                "<html><head><title>Just a moment...</title>",
                "Cloudflare challenge (HTTP 503)",
            ),
            (
                403,
                &[("cf-mitigated", "challenge")],
                "",
                "Cloudflare challenge (HTTP 403)",
            ),
            (
                403,
                &[("server", "AkamaiGHost")],
                "<H1>Access Denied</H1> https://errors.edgesuite.net/x",
                "Akamai block (HTTP 403)",
            ),
            (
                403,
                &[],
                "<script src=\"/_Incapsula_Resource?x\"></script>",
                "Imperva Incapsula block (HTTP 403)",
            ),
            (
                403,
                &[("x-datadome", "protected")],
                "",
                "DataDome challenge (HTTP 403)",
            ),
            (
                403,
                &[],
                "<div id=\"px-captcha\"></div>",
                "HUMAN (PerimeterX) challenge (HTTP 403)",
            ),
            (
                403,
                &[("x-amzn-waf-action", "captcha")],
                "",
                "AWS WAF challenge (HTTP 403)",
            ),
            (429, &[], "slow down", "rate limited (HTTP 429)"),
        ];
        for (status, h, body, want) in cases {
            let status = StatusCode::from_u16(*status).unwrap();
            let got = judge(status, &headers(h), body.as_bytes(), NOW);
            assert_eq!(got.map(|b| b.reason).as_deref(), Some(*want), "{body}");
        }
    }

    #[test]
    fn plain_refusals_and_pages_are_not_blocks() {
        let plain = judge(StatusCode::FORBIDDEN, &HeaderMap::new(), b"Forbidden", NOW);
        assert_eq!(plain, None);
        let down = judge(
            StatusCode::SERVICE_UNAVAILABLE,
            &HeaderMap::new(),
            b"<h1>Service Unavailable</h1>",
            NOW,
        );
        assert_eq!(down, None);
        // A page that mentions a vendor is still a page when it is served.
        let ok = judge(
            StatusCode::OK,
            &HeaderMap::new(),
            b"cloudflare datadome",
            NOW,
        );
        assert_eq!(ok, None);
        // Marks past the sniffed start are not looked for.
        let mut late = vec![b' '; SNIFF_BYTES];
        late.extend_from_slice(b"px-captcha");
        assert_eq!(
            judge(StatusCode::FORBIDDEN, &HeaderMap::new(), &late, NOW),
            None
        );
    }

    #[test]
    fn retry_after_is_read_and_capped() {
        let b = judge(
            StatusCode::SERVICE_UNAVAILABLE,
            &headers(&[("retry-after", "5")]),
            b"<h1>Come back later</h1>",
            NOW,
        )
        .unwrap();
        assert_eq!(b.retry_after, Some(Duration::from_secs(5)));
        assert!(b.reason.contains("Retry-After"), "{}", b.reason);
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        let date = httpdate::fmt_http_date(now + Duration::from_secs(90));
        assert_eq!(
            retry_after(&headers(&[("retry-after", &date)]), now),
            Some(Duration::from_secs(90))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "99999999")]), now),
            Some(MAX_RETRY_AFTER)
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")]), now), None);
        assert_eq!(retry_after(&HeaderMap::new(), now), None);
    }
}
