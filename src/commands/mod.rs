//! Subcommands: parsed arguments in, output on a writer and an exit status out.
//!
//! One file per subcommand. Each returns [`Outcome`]; the binary maps it to
//! the process exit code (see README, "Exit codes").

pub mod backtest;
pub mod check;
pub mod cookies;
pub mod diff;
pub mod extract;
pub mod hierarchy;
pub mod init;
pub mod learn;
pub mod migrate;
pub mod run;
pub mod serve;
pub mod validate;
pub mod xpath;

use anyhow::Context;

use crate::hierarchy::Hierarchy;
use crate::page::budget::PageLimits;
use crate::page::source::{self, FetchOptions};

/// How a command ended, when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Exit 0: done; for `xpath`, the result was non-empty / true.
    Success,
    /// Exit 1: a negative answer (an empty node-set, `false`).
    Negative,
}

/// Loads `spec` (path, `-`, or URL), decodes it and builds its hierarchy on
/// a blocking thread. Every error names `spec` (source errors do already).
pub async fn load_hierarchy(spec: &str) -> anyhow::Result<Hierarchy> {
    let raw = source::LazyClient::new(FetchOptions::default())
        .load(spec)
        .await?;
    let url = raw.url.as_ref().map(|u| u.to_string());
    let name = spec.to_owned();
    tokio::task::spawn_blocking(move || -> anyhow::Result<Hierarchy> {
        let decoded = source::decode(&raw.bytes, raw.content_type.as_deref(), raw.url.as_ref());
        // A saved hierarchy document is read back, not parsed as HTML.
        if crate::hierarchy::read::looks_like_hierarchy(&decoded.text) {
            return crate::hierarchy::read::read(&decoded.text)
                .with_context(|| format!("{name} is not a readable saved hierarchy"));
        }
        Hierarchy::from_html_within(&decoded.text, url.as_deref(), PageLimits::default())
            .with_context(|| format!("{name} cannot be read"))
    })
    .await
    .context("the page worker failed")?
}
