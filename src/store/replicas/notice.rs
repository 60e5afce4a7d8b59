//! News between replicas sharing a PostgreSQL database: "check this watch
//! now" and "reload your watch files", sent with `NOTIFY` and heard on a
//! connection of its own with `LISTEN`.
//!
//! Takes a [`Notice`] from a replica ([`Replicas::announce`]); gives every
//! other replica listening on the database ([`ReplicaPool::listen`]) that notice, within
//! the database's round trip, without waiting for any poll.
//!
//! # Decisions
//!
//! - **One channel, [`CHANNEL`], JSON payloads** (`{"from": replica,
//!   "kind": "check", "watch": id}` or `{"from": replica, "kind":
//!   "reload"}`), far under PostgreSQL's 8000-byte limit. A replica hears
//!   its own notices too; the listener's caller drops those by `from`.
//! - **A notice is a hint, never the record.** A check-now is stored first
//!   (the watch's next run moves to now, [`Store::request_check`]) and
//!   announced after; the replica that took the request also puts the watch
//!   in its own scheduler. So a replica that misses a notice (its listening
//!   connection was down) only leaves the run to the replica that took the
//!   request, which checks it once a slot is free: the fallback is the
//!   claim on the stored next run, as before notices existed. A notice
//!   nobody understands (a newer replica's kind) is ignored with a debug
//!   line.
//! - **The listening connection is not pooled:** `LISTEN` belongs to a
//!   session, and a pooled connection is lent to anyone. [`listen`] opens
//!   one of its own, and when it drops, opens another after a back-off
//!   from [`BACKOFF_MIN`] doubling up to [`BACKOFF_MAX`] (reset once
//!   listening again), until shutdown.
//! - **SQLite**: one daemon per file, nobody to tell: it has no
//!   [`Replicas`] to announce with and no [`ReplicaPool`] to listen on.
//!
//! [`Store::request_check`]: crate::store::Store::request_check
//! [`ReplicaPool`]: super::ReplicaPool
//! [`ReplicaPool::listen`]: super::ReplicaPool::listen

use std::time::Duration;

use futures::StreamExt as _;
use serde::{Deserialize, Serialize};
use tokio_postgres::AsyncMessage;
use tokio_util::sync::CancellationToken;

use super::Replicas;
use crate::store::core::StoreError;
use crate::store::database::PostgresUrl;
use crate::store::sql::{DbError, args};

/// The `LISTEN`/`NOTIFY` channel of semclip's replicas.
pub const CHANNEL: &str = "semclip";

/// The first wait before listening again after the connection dropped.
pub const BACKOFF_MIN: Duration = Duration::from_secs(1);

/// The longest wait between attempts to listen again.
pub const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// What one replica tells the others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Notice {
    /// Check this watch now (its stored next run was moved to now).
    Check {
        /// The watch's id.
        watch: String,
    },
    /// Reload the watch files (a SIGHUP on the sender).
    Reload,
}

/// A notice and the replica that sent it: the payload of a `NOTIFY`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Announcement {
    /// The sender's replica id.
    pub from: String,
    /// What it says.
    #[serde(flatten)]
    pub notice: Notice,
}

impl Replicas<'_> {
    /// Tells every replica listening on this database `notice`, from
    /// replica `from`.
    pub fn announce(&mut self, from: &str, notice: Notice) -> Result<(), StoreError> {
        let payload = serde_json::to_string(&Announcement {
            from: from.to_owned(),
            notice,
        })
        .map_err(|error| StoreError::Database {
            path: self.path.to_owned(),
            action: "encode a notice".to_owned(),
            source: DbError::Setup(std::io::Error::other(error)),
        })?;
        self.db()
            // `execute`: pg_notify returns `void`, which no row type reads.
            .execute("SELECT pg_notify(?1, ?2)", args![CHANNEL, payload.as_str()])
            .map_err(|source| StoreError::Database {
                path: self.path.to_owned(),
                action: "notify the other replicas".to_owned(),
                source,
            })
            .map(drop)
    }
}

/// Listens for announcements on the database at `url` until `shutdown`,
/// handing each to `heard` (its own replica's included). Reconnects with a
/// back-off when the connection drops; `listening` is called each time
/// the connection listens (again).
pub(super) async fn listen(
    url: &PostgresUrl,
    mut heard: impl FnMut(Announcement),
    mut listening: impl FnMut(),
    shutdown: CancellationToken,
) {
    let mut backoff = BACKOFF_MIN;
    loop {
        let mut on_listening = || {
            backoff = BACKOFF_MIN;
            listening();
        };
        let session = listen_once(url, &mut heard, &mut on_listening);
        let ended = tokio::select! {
            () = shutdown.cancelled() => return,
            ended = session => ended,
        };
        match ended {
            Ok(()) => tracing::warn!(
                retry_in = ?backoff,
                "the connection listening for other replicas closed"
            ),
            Err(error) => tracing::warn!(
                retry_in = ?backoff,
                error = %crate::ErrorChain(&error),
                "cannot listen for other replicas"
            ),
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

/// Why a listening connection ended.
#[derive(Debug, thiserror::Error)]
enum ListenError {
    /// No TLS set-up (the system's trust store unreadable).
    #[error("cannot set up TLS")]
    Tls(#[from] std::io::Error),
    /// The connection failed.
    #[error("the connection failed")]
    Postgres(#[from] tokio_postgres::Error),
}

/// One listening connection, until it closes (`Ok`) or fails.
async fn listen_once(
    url: &PostgresUrl,
    heard: &mut impl FnMut(Announcement),
    listening: &mut impl FnMut(),
) -> Result<(), ListenError> {
    let (client, mut messages) = connect(url).await?;
    // The connection's messages must be read while the client waits for
    // its `LISTEN` to be answered: both run in this one future.
    let subscribe = async {
        client.batch_execute(&format!("LISTEN {CHANNEL}")).await?;
        listening();
        std::future::pending::<Result<(), ListenError>>().await
    };
    let read = async {
        while let Some(message) = messages.next().await {
            if let AsyncMessage::Notification(n) = message? {
                match serde_json::from_str::<Announcement>(n.payload()) {
                    Ok(announcement) => heard(announcement),
                    Err(error) => tracing::debug!(
                        payload = n.payload(),
                        error = %crate::ErrorChain(&error),
                        "a notice this replica does not understand"
                    ),
                }
            }
        }
        Ok::<(), ListenError>(())
    };
    tokio::select! {
        ended = subscribe => ended,
        ended = read => ended,
    }
}

/// The stream of a connection's asynchronous messages.
type Messages = futures::stream::BoxStream<'static, Result<AsyncMessage, tokio_postgres::Error>>;

/// Opens a connection of its own to `url` (TLS when the URL asks for it).
async fn connect(url: &PostgresUrl) -> Result<(tokio_postgres::Client, Messages), ListenError> {
    fn stream<S, T>(mut connection: tokio_postgres::Connection<S, T>) -> Messages
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
        T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        futures::stream::poll_fn(move |cx| connection.poll_message(cx)).boxed()
    }
    if url.tls() {
        let tls = tokio_postgres_rustls::MakeRustlsConnect::new(crate::store::pg::tls_config()?);
        let (client, connection) = url.config().connect(tls).await?;
        Ok((client, stream(connection)))
    } else {
        let (client, connection) = url.config().connect(tokio_postgres::NoTls).await?;
        Ok((client, stream(connection)))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn announcements_are_small_json_and_read_back() {
        let check = Announcement {
            from: "host/12/0000abcd".to_owned(),
            notice: Notice::Check {
                watch: "prices".to_owned(),
            },
        };
        let text = serde_json::to_string(&check).unwrap();
        assert_eq!(
            text,
            r#"{"from":"host/12/0000abcd","kind":"check","watch":"prices"}"#
        );
        assert_eq!(serde_json::from_str::<Announcement>(&text).unwrap(), check);
        let reload: Announcement = serde_json::from_str(r#"{"from":"b","kind":"reload"}"#).unwrap();
        assert_eq!(reload.notice, Notice::Reload);
        assert!(serde_json::from_str::<Announcement>(r#"{"from":"b","kind":"explode"}"#).is_err());
    }
}
