//! Access control: the tokens of the daemon file and their scopes.
//!
//! Takes a request's `Authorization` header; gives what it may do. A token
//! is sent as `Authorization: Bearer TOKEN`, or as the password of HTTP
//! Basic authentication (any user name), which browsers and feed readers
//! can send by themselves. Tokens are compared in constant time: both sides
//! are digested with SHA-256 and the digests compared with `subtle`, every
//! configured token being compared, so neither the time nor the order of
//! tokens tells anything about a secret.
//!
//! Without any token in the daemon file the server is open for reading
//! (clips, feeds, status pages, the API's reads) and closed for the `admin`
//! operations, and says so once when it starts ([`warn_if_open`]). With
//! tokens, everything but public clips, their feeds and the health checks
//! needs one.

use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use base64::Engine as _;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::config::{Scope, TokenConfig, Watch};

/// The warning of a server started without any token ([`warn_if_open`]).
pub const OPEN: &str = "no token in the daemon file: every clip, public: false ones included, and the status pages, feeds, API and metrics are readable by anyone who reaches the server";

/// How to close it, in the warning's `fix` field.
const FIX: &str = "add a token with the read scope under `tokens:` in the daemon file, e.g. portal: {secret: {env: SEMCLIP_TOKEN}, scopes: [read]}";

/// The most clips the warning names.
const NAMED: usize = 20;

/// The tokens, digested.
#[derive(Debug, Default)]
pub struct Tokens {
    tokens: Vec<([u8; 32], Vec<Scope>)>,
}

/// What a request may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// No credentials were sent.
    Anonymous,
    /// Credentials were sent and match no token.
    Invalid,
    /// A token with these scopes.
    Token {
        /// It has the `read` scope (or `admin`, which includes it).
        read: bool,
        /// It has the `admin` scope.
        admin: bool,
    },
}

/// What an endpoint needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Nothing (a public clip, health checks).
    Nothing,
    /// The `read` scope.
    Read,
    /// The `admin` scope.
    Admin,
}

/// The answer: allowed, or why not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Go ahead.
    Allowed,
    /// 401: no or bad credentials.
    Unauthorized,
    /// 403: a valid token without the scope, or no admin token configured.
    Forbidden,
}

fn digest(s: &[u8]) -> [u8; 32] {
    Sha256::digest(s).into()
}

impl Tokens {
    /// Digests the configured tokens.
    pub fn new(tokens: &std::collections::BTreeMap<String, TokenConfig>) -> Tokens {
        Tokens {
            tokens: tokens
                .values()
                .map(|t| (digest(t.secret.expose().as_bytes()), t.scopes.clone()))
                .collect(),
        }
    }

    /// Whether any token is configured.
    pub fn any(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// What the request's credentials grant.
    pub fn grant(&self, headers: &HeaderMap) -> Grant {
        let Some(value) = headers.get(AUTHORIZATION) else {
            return Grant::Anonymous;
        };
        let Some(secret) = value.to_str().ok().and_then(credential) else {
            return Grant::Invalid;
        };
        let presented = digest(secret.as_bytes());
        let mut scopes: Option<&[Scope]> = None;
        // Every token is compared, whatever matched before.
        for (d, s) in &self.tokens {
            if bool::from(d.ct_eq(&presented)) {
                scopes = Some(s);
            }
        }
        match scopes {
            None => Grant::Invalid,
            Some(s) => {
                let admin = s.contains(&Scope::Admin);
                Grant::Token {
                    read: admin || s.contains(&Scope::Read),
                    admin,
                }
            }
        }
    }

    /// Whether a request with these headers may do what `need` says.
    pub fn check(&self, headers: &HeaderMap, need: Need) -> Verdict {
        let grant = self.grant(headers);
        if grant == Grant::Invalid {
            return Verdict::Unauthorized;
        }
        match (need, grant) {
            (Need::Nothing, _) => Verdict::Allowed,
            (Need::Read, Grant::Anonymous) if !self.any() => Verdict::Allowed,
            (Need::Admin, Grant::Anonymous) if !self.any() => Verdict::Forbidden,
            (_, Grant::Anonymous | Grant::Invalid) => Verdict::Unauthorized,
            (Need::Read, Grant::Token { read, .. }) => allowed(read),
            (Need::Admin, Grant::Token { admin, .. }) => allowed(admin),
        }
    }
}

/// Logs [`OPEN`] (a warning, with the clips that are not `public` and how
/// to set a token) when no token is configured; nothing otherwise. Called
/// once, when the server starts.
pub(crate) fn warn_if_open(tokens: &Tokens, watches: &BTreeMap<String, Arc<Watch>>) {
    if tokens.any() {
        return;
    }
    let private: Vec<String> = watches
        .values()
        .flat_map(|w| {
            w.clips
                .iter()
                .filter(|(_, clip)| !clip.public)
                .map(|(name, _)| format!("{}/{name}", w.id))
        })
        .collect();
    let mut named = private
        .iter()
        .take(NAMED)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(" ");
    if private.len() > NAMED {
        named.push_str(" ...");
    }
    tracing::warn!(
        private_clips = private.len(),
        clips = %named,
        fix = FIX,
        "{OPEN}"
    );
}

fn allowed(yes: bool) -> Verdict {
    if yes {
        Verdict::Allowed
    } else {
        Verdict::Forbidden
    }
}

/// The secret of a `Bearer` or `Basic` Authorization header value.
fn credential(value: &str) -> Option<String> {
    let (scheme, rest) = value.trim().split_once(' ')?;
    let rest = rest.trim();
    if scheme.eq_ignore_ascii_case("bearer") {
        return (!rest.is_empty()).then(|| rest.to_owned());
    }
    if scheme.eq_ignore_ascii_case("basic") {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(rest)
            .ok()?;
        let text = String::from_utf8(decoded).ok()?;
        let (_, password) = text.split_once(':')?;
        return (!password.is_empty()).then(|| password.to_owned());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Secret;
    use axum::http::HeaderValue;

    fn tokens() -> Tokens {
        let mut m = std::collections::BTreeMap::new();
        m.insert(
            "portal".to_owned(),
            TokenConfig {
                secret: Secret::new("r-secret"),
                scopes: vec![Scope::Read],
            },
        );
        m.insert(
            "ops".to_owned(),
            TokenConfig {
                secret: Secret::new("a-secret"),
                scopes: vec![Scope::Admin],
            },
        );
        Tokens::new(&m)
    }

    fn headers(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Ok(v) = HeaderValue::from_str(v) {
            h.insert(AUTHORIZATION, v);
        }
        h
    }

    #[test]
    fn scopes_decide() {
        let t = tokens();
        assert_eq!(
            t.check(&HeaderMap::new(), Need::Read),
            Verdict::Unauthorized
        );
        assert_eq!(t.check(&HeaderMap::new(), Need::Nothing), Verdict::Allowed);
        assert_eq!(
            t.check(&headers("Bearer r-secret"), Need::Read),
            Verdict::Allowed
        );
        assert_eq!(
            t.check(&headers("bearer r-secret"), Need::Admin),
            Verdict::Forbidden
        );
        assert_eq!(
            t.check(&headers("Bearer a-secret"), Need::Read),
            Verdict::Allowed
        );
        assert_eq!(
            t.check(&headers("Bearer a-secret"), Need::Admin),
            Verdict::Allowed
        );
        assert_eq!(
            t.check(&headers("Bearer r-secreT"), Need::Read),
            Verdict::Unauthorized
        );
        assert_eq!(
            t.check(&headers("Bearer r-secret"), Need::Nothing),
            Verdict::Allowed
        );
        // A wrong token is refused even where none is needed.
        assert_eq!(
            t.check(&headers("Bearer nope"), Need::Nothing),
            Verdict::Unauthorized
        );
        // Basic: the password is the token.
        let basic = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("anyone:a-secret")
        );
        assert_eq!(t.check(&headers(&basic), Need::Admin), Verdict::Allowed);
        assert_eq!(
            t.check(&headers("Basic !!!"), Need::Read),
            Verdict::Unauthorized
        );
        assert_eq!(
            t.check(&headers("Digest x"), Need::Read),
            Verdict::Unauthorized
        );
    }

    #[test]
    fn without_tokens_reading_is_open_and_admin_closed() {
        let t = Tokens::default();
        assert_eq!(t.check(&HeaderMap::new(), Need::Read), Verdict::Allowed);
        assert_eq!(t.check(&HeaderMap::new(), Need::Admin), Verdict::Forbidden);
        assert_eq!(
            t.check(&headers("Bearer x"), Need::Read),
            Verdict::Unauthorized
        );
    }
}
