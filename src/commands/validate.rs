//! `semclip validate [--config FILE] [--watches DIR] [--syntax]`: loads the
//! daemon file and every watch file, checking everything (with `--syntax`,
//! everything but the secrets, which are checked for their form and not
//! read). On success prints `ok: N watches` and each watch's next run;
//! otherwise prints every problem on stderr, one
//! `file:line:column: field: message` per line, and fails.

use std::io::Write;

use super::Outcome;
use crate::cli::ValidateArgs;
use crate::config::{self, Diagnostic, Secrets};

/// The error returned after the diagnostics were printed.
#[derive(Debug, thiserror::Error)]
#[error("{count} configuration problem{s} found", s = if *.count == 1 { "" } else { "s" })]
pub struct Invalid {
    /// How many diagnostics were printed.
    pub count: usize,
}

/// Runs the command, writing the summary to `out` and diagnostics to stderr.
pub fn run(args: &ValidateArgs, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let config = args.config.config_file();
    let secrets = if args.syntax {
        Secrets::Unread
    } else {
        Secrets::Read
    };
    match config::load_with(config.as_deref(), args.config.watches.as_deref(), secrets) {
        Ok(loaded) => {
            let n = loaded.watches.len();
            let unread = if args.syntax {
                " (secrets not read)"
            } else {
                ""
            };
            writeln!(
                out,
                "ok: {n} watch{}{unread}",
                if n == 1 { "" } else { "es" }
            )?;
            let now = chrono::Utc::now();
            for w in &loaded.watches {
                let next = w.schedule.next_after(now).map_or_else(
                    || "never".to_owned(),
                    |t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                );
                writeln!(out, "{}\t{}\tnext {next}", w.id, w.schedule)?;
            }
            Ok(Outcome::Success)
        }
        Err(diags) => {
            print_diagnostics(&diags)?;
            Err(Invalid { count: diags.len() }.into())
        }
    }
}

/// Prints diagnostics on stderr, one per line.
pub fn print_diagnostics(diags: &[Diagnostic]) -> std::io::Result<()> {
    let stderr = std::io::stderr();
    let mut err = stderr.lock();
    for d in diags {
        writeln!(err, "{d}")?;
    }
    err.flush()
}
