//! Which database a store lives in: an SQLite file, or a PostgreSQL database
//! named by a `postgres://` URL. The daemon file's `database:` setting is
//! read into a [`Database`] (see `config`); the store opens it.
//!
//! # Decisions
//!
//! - **A URL is used as a URL or refused.** Text that starts with a URL
//!   scheme (`name://`) is a PostgreSQL URL when the scheme is `postgres`
//!   or `postgresql`, and an error otherwise; anything else is a file path.
//! - **No password in the URL.** Like every secret in the configuration, the
//!   password comes from `{env: NAME}` or `{file: PATH}`
//!   ([`PostgresUrl::with_password`]); a URL carrying one (`user:pw@` or
//!   `?password=`) is refused, so that it never sits in a file or a log.
//!   [`Database`]'s `Debug` and `Display` never show the password.
//! - **TLS only when asked for.** Without `sslmode`, or with
//!   `sslmode=disable`, the connection is plain; `sslmode=require` uses TLS
//!   and fails rather than fall back; `sslmode=prefer` uses TLS when the
//!   server offers it. The server's certificate is always verified, against
//!   the system's trust store (stricter than libpq's `require`, which
//!   encrypts without verifying).

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use tokio_postgres::config::SslMode;

/// Where the store lives.
#[derive(Clone, PartialEq)]
pub enum Database {
    /// An SQLite file (created if missing).
    Sqlite(PathBuf),
    /// A PostgreSQL database (which must exist; its schema is created).
    Postgres(PostgresUrl),
}

impl Database {
    /// Reads the `database:` setting: a `postgres://` or `postgresql://` URL,
    /// or a file path (relative paths taken from `base`). Fails, with a
    /// message for the user, on a URL of another scheme or a PostgreSQL URL
    /// that does not parse or carries a password.
    pub fn parse(text: &str, base: &Path) -> Result<Database, String> {
        match url_scheme(text) {
            Some(scheme)
                if scheme.eq_ignore_ascii_case("postgres")
                    || scheme.eq_ignore_ascii_case("postgresql") =>
            {
                PostgresUrl::parse(text).map(Database::Postgres)
            }
            Some(scheme) => Err(format!(
                "`{scheme}://` URLs are not supported: write a file path (SQLite) \
                 or a postgres:// URL (PostgreSQL)"
            )),
            None => Ok(Database::Sqlite(base.join(text))),
        }
    }

    /// The SQLite file, if this is one.
    pub fn sqlite_path(&self) -> Option<&Path> {
        match self {
            Database::Sqlite(path) => Some(path),
            Database::Postgres(_) => None,
        }
    }
}

impl fmt::Display for Database {
    /// The file path, or the URL without its password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Database::Sqlite(path) => write!(f, "{}", path.display()),
            Database::Postgres(url) => url.fmt(f),
        }
    }
}

impl fmt::Debug for Database {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Database::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
            Database::Postgres(url) => f.debug_tuple("Postgres").field(url).finish(),
        }
    }
}

/// The scheme of text that starts like a URL (`scheme://`).
fn url_scheme(text: &str) -> Option<&str> {
    let (scheme, _) = text.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some(scheme)
}

/// A PostgreSQL connection URL, parsed, with the password (if any) given
/// apart. `Debug` and `Display` show the URL as written, which holds no
/// password.
#[derive(Clone)]
pub struct PostgresUrl {
    /// Boxed: it is large, and [`Database`] is mostly a path.
    config: Box<tokio_postgres::Config>,
    shown: String,
}

impl PostgresUrl {
    /// Parses a `postgres://` URL (the form libpq and tokio-postgres take).
    pub fn parse(url: &str) -> Result<PostgresUrl, String> {
        let mut config = tokio_postgres::Config::from_str(url)
            .map_err(|e| format!("not a valid PostgreSQL URL: {e}"))?;
        if config.get_password().is_some() {
            return Err("the URL holds a password: secrets are never inline, \
                        give it as database_password: {env: NAME} or {file: PATH}"
                .to_owned());
        }
        if config.get_hosts().is_empty() {
            return Err("the URL names no host".to_owned());
        }
        if !has_sslmode(url) {
            config.ssl_mode(SslMode::Disable);
        }
        Ok(PostgresUrl {
            config: Box::new(config),
            shown: url.to_owned(),
        })
    }

    /// The same URL, logging in with `password`.
    #[must_use]
    pub fn with_password(mut self, password: &str) -> PostgresUrl {
        self.config.password(password);
        self
    }

    /// Whether the connection uses TLS (`sslmode=require` or `prefer`).
    pub fn tls(&self) -> bool {
        self.config.get_ssl_mode() != SslMode::Disable
    }

    /// The connection settings.
    pub(crate) fn config(&self) -> &tokio_postgres::Config {
        &self.config
    }
}

/// Whether the URL's query sets `sslmode`.
fn has_sslmode(url: &str) -> bool {
    url.split_once('?').is_some_and(|(_, query)| {
        query
            .split('&')
            .any(|pair| pair.split('=').next() == Some("sslmode"))
    })
}

impl PartialEq for PostgresUrl {
    fn eq(&self, other: &Self) -> bool {
        self.shown == other.shown && self.config.get_password() == other.config.get_password()
    }
}

impl fmt::Display for PostgresUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl fmt::Debug for PostgresUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("PostgresUrl");
        d.field("url", &self.shown);
        if self.config.get_password().is_some() {
            d.field("password", &"***");
        }
        d.finish()
    }
}

/// The value of the `application` key in the `meta` table of every store.
pub(crate) const APPLICATION: &str = "semclip";

/// What a file holds, as far as opening it is concerned.
pub(crate) enum Found {
    /// A semclip store at this schema version (0: an empty database).
    Version(u32),
    /// A newer semclip's store.
    TooNew(u32),
    /// Some other application's database.
    Foreign,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Database, String> {
        Database::parse(text, Path::new("/state"))
    }

    #[test]
    fn a_path_is_sqlite_and_a_postgres_url_is_postgres() {
        assert_eq!(
            parse("semclip.db").ok(),
            Some(Database::Sqlite(PathBuf::from("/state/semclip.db")))
        );
        assert_eq!(
            parse("/var/lib/semclip/x.db").ok(),
            Some(Database::Sqlite(PathBuf::from("/var/lib/semclip/x.db")))
        );
        for url in ["postgres://semclip@db/semclip", "postgresql://u@h:5433/d"] {
            let Ok(Database::Postgres(pg)) = parse(url) else {
                panic!("{url} is not PostgreSQL")
            };
            assert_eq!(pg.to_string(), url);
            assert!(!pg.tls(), "{url} asks for no TLS");
        }
    }

    #[test]
    fn other_schemes_and_inline_passwords_are_refused() {
        for (text, says) in [
            ("mysql://u@h/d", "`mysql://` URLs are not supported"),
            ("sqlite://x.db", "`sqlite://` URLs are not supported"),
            ("postgres://u:hunter2@h/d", "secrets are never inline"),
            (
                "postgres://u@h/d?password=hunter2",
                "secrets are never inline",
            ),
            (
                "postgres://u@h/d?sslmode=sometimes",
                "not a valid PostgreSQL URL",
            ),
        ] {
            let err = parse(text).err().unwrap_or_default();
            assert!(err.contains(says), "{text}: {err}");
            assert!(!err.contains("hunter2"), "{text}: {err}");
        }
    }

    #[test]
    fn sslmode_require_means_tls_and_the_password_never_shows() {
        let Ok(Database::Postgres(pg)) = parse("postgres://u@h/d?sslmode=require") else {
            panic!("not parsed")
        };
        assert!(pg.tls());
        let pg = pg.with_password("hunter2");
        let db = Database::Postgres(pg);
        let shown = format!("{db} {db:?} {db:#?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("***"), "{shown}");
        let Ok(Database::Postgres(off)) = parse("postgres://u@h/d?sslmode=disable") else {
            panic!("not parsed")
        };
        assert!(!off.tls());
    }
}
