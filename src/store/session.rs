//! The cookie jars of sessions ([`crate::page::session::Jar`] as JSON), by
//! session name: what a check reads before fetching and writes right after
//! it, outside the check's transaction, so that a check that fails later
//! keeps the cookies its requests got.
//!
//! Each write raises the jar's `revision`: a daemon that holds a jar in
//! memory reads the revision before each check of the session and takes
//! the stored jar again when another process (`semclip cookies import`, a
//! replica) wrote it since.

use std::time::SystemTime;

use super::core::{Store, StoreError, from_millis, to_millis};
use super::sql::{DbError, args};

/// A stored jar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredJar {
    /// The jar's JSON.
    pub jar: String,
    /// How many times it was written.
    pub revision: i64,
    /// When it was written last.
    pub updated_at: SystemTime,
    /// When the session last logged in, if ever.
    pub logged_in_at: Option<SystemTime>,
}

impl Store {
    /// The stored jar of session `name`, if any.
    pub fn session_jar(&self, name: &str) -> Result<Option<StoredJar>, StoreError> {
        let row = self
            .db()
            .query_opt(
                "SELECT jar, revision, updated_at, logged_in_at FROM session_jar WHERE name = ?1",
                args![name],
            )
            .map_err(|source| self.session_error("read the cookie jar", source))?;
        let Some(mut row) = row else { return Ok(None) };
        let read = (|| {
            Ok::<_, DbError>((
                row.get::<String>(0)?,
                row.get::<i64>(1)?,
                row.get::<i64>(2)?,
                row.get::<Option<i64>>(3)?,
            ))
        })();
        let (jar, revision, updated_at, logged_in_at) =
            read.map_err(|source| self.session_error("read the cookie jar", source))?;
        let corrupt = |source| StoreError::CorruptWatch {
            watch: format!("session {name}"),
            source,
        };
        Ok(Some(StoredJar {
            jar,
            revision,
            updated_at: from_millis(updated_at).map_err(corrupt)?,
            logged_in_at: logged_in_at.map(from_millis).transpose().map_err(corrupt)?,
        }))
    }

    /// The revision of session `name`'s stored jar, if any: a cheap test of
    /// whether it changed.
    pub fn session_revision(&self, name: &str) -> Result<Option<i64>, StoreError> {
        self.db()
            .query_opt(
                "SELECT revision FROM session_jar WHERE name = ?1",
                args![name],
            )
            .and_then(|row| row.map(|mut row| row.get::<i64>(0)).transpose())
            .map_err(|source| self.session_error("read the cookie jar", source))
    }

    /// Stores (or replaces) session `name`'s jar, written at `at`;
    /// `logged_in` records `at` as the session's last login. Returns the
    /// jar's new revision.
    pub fn put_session_jar(
        &mut self,
        name: &str,
        jar: &str,
        at: SystemTime,
        logged_in: bool,
    ) -> Result<i64, StoreError> {
        let at_ms = to_millis(at)?;
        let login = logged_in.then_some(at_ms);
        self.db()
            .query_one(
                "INSERT INTO session_jar (name, jar, revision, updated_at, logged_in_at)
                 VALUES (?1, ?2, 1, ?3, ?4)
                 ON CONFLICT (name) DO UPDATE SET jar = excluded.jar,
                   revision = session_jar.revision + 1,
                   updated_at = excluded.updated_at,
                   logged_in_at = COALESCE(excluded.logged_in_at, session_jar.logged_in_at)
                 RETURNING revision",
                args![name, jar, at_ms, login],
            )
            .and_then(|mut row| row.get::<i64>(0))
            .map_err(|source| self.session_error("store the cookie jar", source))
    }

    /// Forgets session `name`'s jar; whether there was one.
    pub fn remove_session_jar(&mut self, name: &str) -> Result<bool, StoreError> {
        self.db()
            .execute("DELETE FROM session_jar WHERE name = ?1", args![name])
            .map(|n| n > 0)
            .map_err(|source| self.session_error("remove the cookie jar", source))
    }

    fn session_error(&self, action: &str, source: DbError) -> StoreError {
        StoreError::Database {
            path: self.path.clone(),
            action: format!("{action} of a session"),
            source,
        }
    }
}
