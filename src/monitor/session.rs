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
//! - **A refused login backs off.** A session whose login failed is not
//!   logged in again before [`LOGIN_BACKOFF`] doubled per failure in a row
//!   (at most [`MAX_LOGIN_BACKOFF`]) has passed: a wrong password on a
//!   watch checked every minute must not post it every minute, which is
//!   how accounts get locked. Meanwhile the checks that find the session
//!   logged out fail at once with the last login's error. A successful
//!   login, or a restart, ends the back-off.
//! - **A dry run (`semclip check`) writes no jar** (it writes nothing), but
//!   still reads the stored one and may log in for its own fetch.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use crate::page::session::Jar;
use crate::store::pool::StorePool;
use crate::sync::lock;

/// How long a session waits after a failed login before it tries again,
/// doubled per failure in a row.
pub const LOGIN_BACKOFF: Duration = Duration::from_secs(10);

/// The longest a session waits between failed logins.
pub const MAX_LOGIN_BACKOFF: Duration = Duration::from_secs(3600);

/// The sessions of one daemon (or one `semclip check`).
#[derive(Debug, Default)]
pub struct Sessions {
    by_name: Mutex<HashMap<String, Arc<Session>>>,
}

impl Sessions {
    /// The session `name`, made on first use with an empty jar (filled
    /// from the store by [`Session::refresh`]).
    pub fn get(&self, name: &str) -> Arc<Session> {
        let mut map = lock(&self.by_name);
        Arc::clone(map.entry(name.to_owned()).or_insert_with(|| {
            Arc::new(Session {
                name: name.to_owned(),
                jar: Jar::new(),
                revision: Mutex::new(None),
                logins: tokio::sync::Mutex::new(Logins::default()),
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
    /// Logins so far and the last failure; held while one logs in.
    logins: tokio::sync::Mutex<Logins>,
}

/// A session's logins.
#[derive(Debug, Default)]
struct Logins {
    /// Successful logins so far.
    done: u64,
    /// Failed logins in a row, when the last one failed at, and its error.
    failed: Option<(u32, Instant, String)>,
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
        let known = *lock(&self.revision);
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
                    *lock(&self.revision) = Some(stored.revision);
                    tracing::debug!(session = %self.name, revision = stored.revision, cookies = jar.len(), "cookie jar read");
                }
                Err(error) => {
                    tracing::warn!(session = %self.name, error = %crate::ErrorChain(&error), "the stored cookie jar does not read; kept the one in memory");
                }
            },
            Ok(None) => {}
            Err(error) => {
                tracing::warn!(session = %self.name, error = %crate::ErrorChain(&error), "cannot read the stored cookie jar");
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
                tracing::warn!(session = %self.name, error = %crate::ErrorChain(&error), "the cookie jar does not serialise");
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
                *lock(&self.revision) = Some(revision);
            }
            Err(error) => {
                tracing::warn!(session = %self.name, error = %crate::ErrorChain(&error), "cannot store the cookie jar; kept in memory");
            }
        }
    }

    /// How many logins the session has made: taken before a fetch, and
    /// given to [`Session::login_turn`].
    pub async fn logins(&self) -> u64 {
        self.logins.lock().await.done
    }

    /// Waits for the session's login turn. `Turn::Go` when this check
    /// should log in (no login happened since it counted `seen`): call
    /// [`LoginTurn::done`] or [`LoginTurn::failed`] after it.
    /// `Turn::Done` when another check logged in meanwhile: its cookies
    /// are in the jar already. `Turn::Held` while a failed login backs off:
    /// the last error and how long is left.
    pub async fn login_turn(&self, seen: u64) -> Turn<'_> {
        let guard = self.logins.lock().await;
        if guard.done != seen {
            return Turn::Done;
        }
        if let Some((failures, at, error)) = &guard.failed {
            let wait = login_backoff(*failures);
            let left = (*at + wait).saturating_duration_since(Instant::now());
            if !left.is_zero() {
                return Turn::Held {
                    last: error.clone(),
                    wait: left,
                };
            }
        }
        Turn::Go(LoginTurn { guard })
    }
}

/// How long a session waits after `failures` failed logins in a row:
/// [`LOGIN_BACKOFF`] doubled per failure after the first, at most
/// [`MAX_LOGIN_BACKOFF`].
pub fn login_backoff(failures: u32) -> Duration {
    let factor = 1u32 << failures.saturating_sub(1).min(16);
    LOGIN_BACKOFF.saturating_mul(factor).min(MAX_LOGIN_BACKOFF)
}

/// What [`Session::login_turn`] says.
pub enum Turn<'a> {
    /// Log in, holding the turn.
    Go(LoginTurn<'a>),
    /// Another check logged in meanwhile.
    Done,
    /// The last login failed; the next may be tried after `wait`.
    Held {
        /// The last login's error.
        last: String,
        /// How long is left.
        wait: Duration,
    },
}

/// The right to log a session in, held while logging in.
pub struct LoginTurn<'a> {
    guard: tokio::sync::MutexGuard<'a, Logins>,
}

impl LoginTurn<'_> {
    /// Counts a successful login; the back-off ends.
    pub fn done(mut self) {
        self.guard.done += 1;
        self.guard.failed = None;
    }

    /// Counts a failed login with its error: the next waits.
    pub fn failed(mut self, error: String) {
        let failures = self.guard.failed.as_ref().map_or(0, |f| f.0) + 1;
        self.guard.failed = Some((failures, Instant::now(), error));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_logins_back_off_doubling_up_to_an_hour() {
        let secs: Vec<u64> = [1, 2, 3, 4, 20]
            .into_iter()
            .map(|f| login_backoff(f).as_secs())
            .collect();
        assert_eq!(secs, [10, 20, 40, 80, 3600]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_login_holds_the_next_until_its_back_off_ends_and_a_success_clears_it() {
        let sessions = Sessions::default();
        let session = sessions.get("shop");
        let Turn::Go(turn) = session.login_turn(0).await else {
            panic!("the first login goes");
        };
        turn.failed("401".into());
        let Turn::Held { last, wait } = session.login_turn(0).await else {
            panic!("held after a failure");
        };
        assert_eq!((last.as_str(), wait), ("401", LOGIN_BACKOFF));
        tokio::time::advance(LOGIN_BACKOFF).await;
        let Turn::Go(turn) = session.login_turn(0).await else {
            panic!("goes again after the back-off");
        };
        turn.failed("401".into());
        let Turn::Held { wait, .. } = session.login_turn(0).await else {
            panic!("held longer after a second failure");
        };
        assert_eq!(wait, 2 * LOGIN_BACKOFF);
        tokio::time::advance(2 * LOGIN_BACKOFF).await;
        let Turn::Go(turn) = session.login_turn(0).await else {
            panic!("goes");
        };
        turn.done();
        assert!(matches!(session.login_turn(0).await, Turn::Done), "counted");
        assert!(
            matches!(session.login_turn(1).await, Turn::Go(_)),
            "no back-off left"
        );
    }
}
