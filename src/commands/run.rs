//! `semclip run`: the daemon (see [`crate::daemon`]).

use super::Outcome;
use crate::cli::RunArgs;

/// Runs the daemon until it is stopped.
pub async fn run(args: &RunArgs) -> anyhow::Result<Outcome> {
    crate::daemon::run(args.config.config_file(), args.config.watches.clone()).await?;
    Ok(Outcome::Success)
}
