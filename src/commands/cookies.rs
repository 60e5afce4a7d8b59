//! `semclip cookies import SESSION FILE` and `semclip cookies clear
//! SESSION`: a Netscape `cookies.txt` in, the session's stored cookie jar
//! (see [`crate::page::session`]) filled or emptied out.
//!
//! The session must be declared in the daemon file, so that a typo does
//! not fill a jar no watch uses. A running daemon takes the new jar at the
//! next check of the session (the jar's revision changed in the store).
//! A file with any bad line imports nothing; every bad line is reported
//! with its number. The file is read as a stream under caps (see
//! [`crate::page::session`]): a file over the size cap imports nothing, a
//! line over a cap (or for a public suffix) is skipped and reported.
//! Cookie values are never printed.

use std::io::{BufRead, BufReader, Write};
use std::time::SystemTime;

use anyhow::{Context, bail};

use super::Outcome;
use crate::cli::{ConfigArgs, CookiesCommand};
use crate::config::DaemonConfig;
use crate::daemon;
use crate::page::session::{ImportError, Jar};

/// Runs the command, writing to `out`.
pub async fn run(command: &CookiesCommand, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    match command {
        CookiesCommand::Import(args) => {
            let daemon = session_daemon(&args.config, &args.session)?;
            let reader = open(&args.file)?;
            import(&daemon, &args.session, &args.file, reader, out).await
        }
        CookiesCommand::Clear(args) => {
            let daemon = session_daemon(&args.config, &args.session)?;
            let stores = daemon::open_store(&daemon)?;
            let name = args.session.clone();
            let removed = stores
                .run(move |s| s.remove_session_jar(&name))
                .await
                .context("cannot clear the cookie jar")?;
            if removed {
                writeln!(out, "cleared the cookie jar of session `{}`", args.session)?;
            } else {
                writeln!(out, "session `{}` has no stored cookie jar", args.session)?;
            }
            Ok(Outcome::Success)
        }
    }
}

/// The daemon settings, when they declare `session`.
fn session_daemon(config: &ConfigArgs, session: &str) -> anyhow::Result<DaemonConfig> {
    let loaded = daemon::load(config.config_file().as_deref(), config.watches.as_deref())?;
    if !loaded.daemon.sessions.contains_key(session) {
        let declared: Vec<&str> = loaded.daemon.sessions.keys().map(String::as_str).collect();
        if declared.is_empty() {
            bail!("no session `{session}`: the daemon file declares no `sessions`");
        }
        bail!(
            "no session `{session}` (the sessions are: {})",
            declared.join(", ")
        );
    }
    Ok(loaded.daemon)
}

/// A reader of `file`, or of stdin for `-`.
fn open(file: &str) -> anyhow::Result<Box<dyn BufRead + Send>> {
    if file == "-" {
        return Ok(Box::new(BufReader::new(std::io::stdin())));
    }
    let f = std::fs::File::open(file).with_context(|| format!("cannot read {file}"))?;
    Ok(Box::new(BufReader::new(f)))
}

/// Adds `text`'s cookies to the stored jar of `session`.
async fn import(
    daemon: &DaemonConfig,
    session: &str,
    file: &str,
    reader: Box<dyn BufRead + Send>,
    out: &mut dyn Write,
) -> anyhow::Result<Outcome> {
    let stores = daemon::open_store(daemon)?;
    let name = session.to_owned();
    let stored = stores
        .run(move |s| s.session_jar(&name))
        .await
        .context("cannot read the cookie jar")?;
    let jar = match stored {
        Some(stored) => Jar::from_json(&stored.jar)
            .with_context(|| format!("the stored cookie jar of session `{session}`"))?,
        None => Jar::new(),
    };
    let imported = match jar.import_cookies_txt(reader, SystemTime::now()) {
        Ok(imported) => imported,
        Err(ImportError::Read(error)) => {
            return Err(anyhow::Error::new(error).context(format!("cannot read {file}")));
        }
        Err(ImportError::TooLarge) => bail!("{file}: {}", ImportError::TooLarge),
        Err(ImportError::Lines(errors)) => {
            let lines: Vec<String> = errors
                .iter()
                .map(|e| format!("{file}:{}: {}", e.line, e.message))
                .collect();
            bail!(
                "{} bad line{} in {file}; nothing imported:\n{}",
                errors.len(),
                if errors.len() == 1 { "" } else { "s" },
                lines.join("\n")
            );
        }
    };
    let json = jar.to_json().context("cannot write the cookie jar")?;
    let name = session.to_owned();
    stores
        .run(move |s| s.put_session_jar(&name, &json, SystemTime::now(), false))
        .await
        .context("cannot store the cookie jar")?;
    for skipped in &imported.skipped {
        writeln!(out, "{file}:{}: {}", skipped.line, skipped.message)?;
    }
    writeln!(
        out,
        "imported {} cookie{} into session `{session}` ({} expired line{} and {} skipped left out); the jar holds {}",
        imported.added,
        if imported.added == 1 { "" } else { "s" },
        imported.expired,
        if imported.expired == 1 { "" } else { "s" },
        imported.skipped_lines,
        jar.len()
    )?;
    Ok(Outcome::Success)
}
