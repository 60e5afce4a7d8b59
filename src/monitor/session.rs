//! The sessions of a daemon's checks: one cookie jar per named session,
//! shared in memory by the checks of the watches that name it, read from
//! the store at first use (and again whenever another process wrote it)
//! and written back right after each fetch or login that changed it.
//!
//! # Decisions
//!
//! - **Written right after the fetch, outside the check's transaction.**
//!   Cookies a server sets are part of the session whatever the check makes
//!   of the page: a check that fails later (a page over its budget, a
//!   block, a full disk for the snapshot) keeps them.
//! - **A store that fails to read or write a jar does not fail the check.**
//!   The jar stays in memory and is written with the next change; the
//!   failure is logged.
//! - **One login at a time per session.** Checks of watches that share a
//!   session and find it logged out at the same time log in once: the
//!   others wait for the first login and fetch their page with its
//!   cookies ([`Session::login_turn`]).
//! - **A dry run (`semclip check`) writes no jar** (it writes nothing), but
//!   still reads the stored one and may log in for its own fetch.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::error_chain;
use crate::page::session::Jar;
use crate::store::pool::StorePool;

/// The sessions of one daemon (or one `semclip check`).
#[derive(Debug, Default)]
pub struct Sessions {
    by_name: Mutex<HashMap<String, Arc<Session>>>,
}

impl Sessions {
    /// The session `name`, made on first use with an empty jar (filled
    /// from the store by [`Session::refresh`]).
    pub fn get(&self, name: &str) -> Arc<Session> {
        let mut map = self.by_name.lock().unwrap_or_else(|p| p.into_inner());
        Arc::clone(map.entry(name.to_owned()).or_insert_with(|| {
            Arc::new(Session {
                name: name.to_owned(),
                jar: Jar::new(),
                revision: Mutex::new(None),
                logins: tokio::sync::Mutex::new(0),
            })
        }))
    }
}

/// One session's jar and its login turn.
#[derive(Debug)]
pub struct Session {
    name: String,
    jar: Jar,
    /// The revision of the stored jar the memory one matches, if any.
    revision: Mutex<Option<i64>>,
    /// Logins so far; held while one logs in.
    logins: tokio::sync::Mutex<u64>,
}

impl Session {
    /// The session's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The jar (shared).
    pub fn jar(&self) -> &Jar {
        &self.jar
    }

    /// The jar as JSON, to tell later whether a fetch changed it (`None`
    /// if it does not serialise, which [`Session::save`] reports).
    pub fn snapshot(&self) -> Option<String> {
        self.jar.to_json().ok()
    }

    /// Takes the stored jar when the store holds a revision the memory one
    /// does not match (at first use, or after `semclip cookies import`).
    pub async fn refresh(&self, stores: &Arc<StorePool>) {
        let name = self.name.clone();
        let known = *self.revision.lock().unwrap_or_else(|p| p.into_inner());
        let read = stores
            .run(move |s| match s.session_revision(&name)? {
                Some(r) if Some(r) != known => s.session_jar(&name),
                _ => Ok(None),
            })
            .await;
        match read {
            Ok(Some(stored)) => match Jar::from_json(&stored.jar) {
                Ok(jar) => {
                    self.jar.replace_with(&jar);
                    *self.revision.lock().unwrap_or_else(|p| p.into_inner()) =
                        Some(stored.revision);
                    tracing::debug!(session = %self.name, revision = stored.revision, cookies = jar.len(), "cookie jar read");
                }
                Err(error) => {
                    tracing::warn!(session = %self.name, error = %error_chain(&error), "the stored cookie jar does not read; kept the one in memory");
                }
            },
            Ok(None) => {}
            Err(error) => {
                tracing::warn!(session = %self.name, error = %error_chain(&error), "cannot read the stored cookie jar");
            }
        }
    }

    /// Writes the jar when it differs from `before` (a [`Session::snapshot`])
    /// or when `logged_in` (the login time is recorded).
    pub async fn save(
        &self,
        stores: &Arc<StorePool>,
        before: Option<&str>,
        logged_in: bool,
        now: SystemTime,
    ) {
        let json = match self.jar.to_json() {
            Ok(json) => json,
            Err(error) => {
                tracing::warn!(session = %self.name, error = %error_chain(&error), "the cookie jar does not serialise");
                return;
            }
        };
        if !logged_in && before == Some(json.as_str()) {
            return;
        }
        let name = self.name.clone();
        match stores
            .run(move |s| s.put_session_jar(&name, &json, now, logged_in))
            .await
        {
            Ok(revision) => {
                *self.revision.lock().unwrap_or_else(|p| p.into_inner()) = Some(revision);
            }
            Err(error) => {
                tracing::warn!(session = %self.name, error = %error_chain(&error), "cannot store the cookie jar; kept in memory");
            }
        }
    }

    /// How many logins the session has made: taken before a fetch, and
    /// given to [`Session::login_turn`].
    pub async fn logins(&self) -> u64 {
        *self.logins.lock().await
    }

    /// Waits for the session's login turn. `Some(turn)` when this check
    /// should log in (no login happened since it counted `seen`): call
    /// [`LoginTurn::done`] after a successful login. `None` when another
    /// check logged in meanwhile: its cookies are in the jar already.
    pub async fn login_turn(&self, seen: u64) -> Option<LoginTurn<'_>> {
        let guard = self.logins.lock().await;
        (*guard == seen).then_some(LoginTurn { guard })
    }
}

/// The right to log a session in, held while logging in.
pub struct LoginTurn<'a> {
    guard: tokio::sync::MutexGuard<'a, u64>,
}

impl LoginTurn<'_> {
    /// Counts the login.
    pub fn done(mut self) {
        *self.guard += 1;
    }
}
