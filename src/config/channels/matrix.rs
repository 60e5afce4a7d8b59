//! Matrix: a room, posted to with an access token (`matrix: {server, room,
//! token}`, or `matrix[s]://[USER:]TOKEN@HOST/ROOM`).

use schemars::JsonSchema;
use serde::Deserialize;
use url::Url;

use super::ChannelKind;
use super::apprise::{Parts, server_url};
use crate::config::Secret;
use crate::config::tree::join;
use crate::config::validate::ctx::Ctx;
use crate::config::value::{RawSecret, Sp};

/// A Matrix notifier.
#[allow(
    rustdoc::bare_urls,
    reason = "the doc comments are the JSON schema's descriptions, written for the YAML file's users"
)]
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Matrix")]
pub(crate) struct RawMatrix {
    /// The homeserver's base URL, e.g. https://matrix.example.org.
    pub server: Sp<String>,
    /// The room: its id (!abc:example.org) or an alias (#ops:example.org).
    pub room: Sp<String>,
    /// An access token of the posting user.
    pub token: Sp<RawSecret>,
    /// Request timeout. Default: 10s.
    pub timeout: Option<Sp<String>>,
}

/// A Matrix room, posted to with an access token.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    /// The homeserver's client-server API base.
    pub server: Url,
    /// `!roomid:server`, or an alias `#room:server` (resolved once).
    pub room: String,
    /// The access token.
    pub token: Secret,
}

impl ChannelKind for Matrix {
    const NAME: &'static str = "matrix";
    const SCHEMES: &'static [&'static str] = &["matrix", "matrixs"];
    type Raw = RawMatrix;

    fn check(m: &RawMatrix, p: &str, cx: &mut Ctx) -> Option<Matrix> {
        let server = cx.base_url(&m.server, &join(p, "server"));
        let token = cx.secret(&m.token, &join(p, "token"));
        let room = m.room.value.trim();
        let ok_room = (room.starts_with('!') || room.starts_with('#'))
            && room.find(':').is_some_and(|i| i > 1 && i + 1 < room.len());
        if !ok_room {
            cx.err(
                m.room.at,
                &join(p, "room"),
                "a room is its id (!abc:example.org) or an alias (#ops:example.org)",
            );
        }
        match (server, token) {
            (Some(server), Some(token)) if ok_room => Some(Matrix {
                server,
                room: room.to_owned(),
                token,
            }),
            _ => None,
        }
    }

    fn timeout(raw: &RawMatrix) -> Option<&Sp<String>> {
        raw.timeout.as_ref()
    }

    fn from_url(p: &Parts) -> Result<Matrix, String> {
        matrix(p)
    }
}

/// `matrix[s]://[user:]TOKEN@HOST[:PORT]/ROOM` where ROOM is `!id[:server]`
/// or `#alias[:server]` (the homeserver's name is added when missing).
fn matrix(p: &Parts) -> Result<Matrix, String> {
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
    Ok(Matrix {
        server,
        room,
        token: Secret(token.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::super::Channel;
    use super::super::tests::{err, ok};
    use super::*;

    #[test]
    fn matrix_urls() {
        let Channel::Matrix(Matrix {
            server,
            room,
            token,
        }) = ok("matrixs://bot:syt_T0ken@matrix.example.org/#ops")
        else {
            panic!("not matrix")
        };
        assert_eq!(server.as_str(), "https://matrix.example.org/");
        assert_eq!(room, "#ops:matrix.example.org");
        assert_eq!(token.expose(), "syt_T0ken");
        let Channel::Matrix(Matrix { server, room, .. }) =
            ok("matrix://tok@localhost:8008/!abc:other.org")
        else {
            panic!("not matrix")
        };
        assert_eq!(server.as_str(), "http://localhost:8008/");
        assert_eq!(room, "!abc:other.org");
        assert!(err("matrixs://matrix.example.org/!abc").contains("access token"));
        assert!(err("matrixs://t@matrix.example.org/ops").contains("starts with"));
    }
}
