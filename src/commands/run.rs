//! `semclip run [--listen IP:PORT]`: the daemon (see [`crate::daemon`]),
//! `--listen` standing in for the daemon file's `listen`.

use super::Outcome;
use crate::cli::RunArgs;

/// Runs the daemon until it is stopped.
pub async fn run(args: &RunArgs) -> anyhow::Result<Outcome> {
    crate::daemon::run(
        args.config.config_file(),
        args.config.watches.clone(),
        args.listen,
    )
    .await?;
    Ok(Outcome::Success)
}
