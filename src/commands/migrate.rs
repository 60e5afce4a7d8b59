//! `semclip migrate --to postgres://... [--password-env NAME | --password-file
//! FILE] [--from FILE] [--config FILE]`: copies the SQLite store (the daemon
//! file's `database`, or `--from`) into an empty PostgreSQL database, every
//! table verified by its row count, then says what to put in the daemon
//! file. The password is never taken on the command line, where `ps` shows
//! it: it comes from an environment variable or a file, as every secret.
//! See [`crate::store::migrate`] for what is copied and the guarantees.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, bail};

use super::Outcome;
use crate::cli::MigrateArgs;
use crate::config::{secret_from_env, secret_from_file};
use crate::store::migrate::{copy_store, open_target};
use crate::store::{Database, PostgresUrl, Store};

/// Runs the command, writing what was copied to `out`.
pub async fn run(args: &MigrateArgs, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let mut url = PostgresUrl::parse(&args.to).map_err(|e| anyhow::anyhow!("--to: {e}"))?;
    let password = match (&args.password_env, &args.password_file) {
        (Some(name), _) => {
            Some(secret_from_env(name).map_err(|e| anyhow::anyhow!("--password-env: {e}"))?)
        }
        (None, Some(file)) => {
            Some(secret_from_file(file).map_err(|e| anyhow::anyhow!("--password-file: {e}"))?)
        }
        (None, None) => None,
    };
    if let Some(p) = &password {
        url = url.with_password(p.expose());
    }
    let from = source_path(args)?;
    if !from.is_file() {
        bail!("there is no SQLite store at {} to copy", from.display());
    }
    let shown = args.to.clone();
    // The store is synchronous (PostgreSQL through a runtime of its own):
    // run it where it may block.
    let (copied, lines) = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
        let mut source = Store::open(&from)?;
        let mut target = open_target(&Database::Postgres(url))?;
        let mut lines = Vec::new();
        let copied = copy_store(&mut source, &mut target, |table, rows| {
            lines.push(format!("{table}\t{rows}"));
        })
        .with_context(|| format!("cannot copy {} into {shown}", from.display()))?;
        Ok((copied, lines))
    })
    .await
    .context("the copy's worker failed")??;
    for line in &lines {
        writeln!(out, "{line}")?;
    }
    writeln!(
        out,
        "copied {} watches, {} snapshots, {} change events and {} alerts to deliver into {} \
         (every table's rows counted on both sides)",
        copied.rows("watch").unwrap_or(0),
        copied.rows("snapshot").unwrap_or(0),
        copied.rows("change_event").unwrap_or(0),
        copied.rows("outbox").unwrap_or(0),
        args.to
    )?;
    writeln!(
        out,
        "next: set `database: {}` (and `database_password:`) in the daemon file and start semclip",
        args.to
    )?;
    Ok(Outcome::Success)
}

/// The SQLite store to copy: `--from`, else the daemon file's `database`.
fn source_path(args: &MigrateArgs) -> anyhow::Result<PathBuf> {
    if let Some(from) = &args.from {
        return Ok(from.clone());
    }
    let file = args.config.clone().or_else(|| {
        let default = PathBuf::from("semclip.yaml");
        default.is_file().then_some(default)
    });
    let daemon = match file {
        Some(path) => {
            crate::config::load_daemon(&path).map_err(|diags| crate::daemon::invalid(&diags))?
        }
        None => crate::config::DaemonConfig::default(),
    };
    match daemon.database.sqlite_path() {
        Some(path) => Ok(path.to_owned()),
        None => bail!(
            "the daemon file's database is already PostgreSQL ({}); give the SQLite store with --from",
            daemon.database
        ),
    }
}
