//! `semclip backtest WATCH --threshold NAME | --clip NAME | --ignore XPATH`:
//! replays a rule over the watch's stored versions and prints what it
//! would have done, one line per event (or JSON). Exit status: 0 it would
//! never have fired (or changed), 1 it would have, 2 trouble.

use std::io::Write;
use std::time::Instant;

use anyhow::{Context, bail};

use super::Outcome;
use crate::cli::BacktestArgs;
use crate::daemon;
use crate::monitor::backtest::{self, Backtest, Rule};

/// Runs the command, writing to `out`.
pub async fn run(args: &BacktestArgs, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let loaded = daemon::load(
        args.config.config_file().as_deref(),
        args.config.watches.as_deref(),
    )?;
    let Some(watch) = loaded.watches.iter().find(|w| w.id == args.watch).cloned() else {
        let known: Vec<&str> = loaded.watches.iter().map(|w| w.id.as_str()).collect();
        bail!(
            "no watch `{}` (the watches are: {})",
            args.watch,
            known.join(", ")
        );
    };
    let stores = daemon::open_store(&loaded.daemon)?;
    let (threshold, clip, ignore) = (
        args.threshold.clone(),
        args.clip.clone(),
        args.ignore.clone(),
    );
    let started = Instant::now();
    let result = stores
        .run(move |s| {
            let rule = if let Some(name) = &threshold {
                match watch.thresholds.iter().find(|t| &t.name == name) {
                    Some(t) => Rule::Threshold(t),
                    None => {
                        return Ok(Err(format!(
                            "watch `{}` has no threshold `{name}`",
                            watch.id
                        )));
                    }
                }
            } else if let Some(name) = &clip {
                match watch.clips.get(name) {
                    Some(c) => Rule::Clip(name, c),
                    None => return Ok(Err(format!("watch `{}` has no clip `{name}`", watch.id))),
                }
            } else {
                Rule::Ignore(&ignore)
            };
            backtest::replay(s, &watch, rule).map(Ok)
        })
        .await
        .context("cannot read the watch's history")?;
    let backtest = match result {
        Ok(b) => b,
        Err(message) => bail!(message),
    };
    let elapsed = started.elapsed();
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &backtest)?;
        writeln!(out)?;
    } else {
        print(&backtest, elapsed, out)?;
    }
    let fired = backtest
        .events
        .iter()
        .any(|e| matches!(e.kind, "threshold_crossed" | "changed" | "silenced"));
    Ok(if fired {
        Outcome::Negative
    } else {
        Outcome::Success
    })
}

fn print(b: &Backtest, elapsed: std::time::Duration, out: &mut dyn Write) -> anyhow::Result<()> {
    let time = |t| crate::store::time::rfc3339(t, chrono::SecondsFormat::Secs).unwrap_or_default();
    for e in &b.events {
        let mut line = format!("{}  {:<18}", time(e.at), e.kind);
        if let Some(record) = &e.record {
            line.push_str(&format!(" [{record}]"));
        }
        if let Some(v) = e.value {
            line.push_str(&format!(" {}", crate::monitor::threshold::fmt(v)));
            if let Some(p) = e.previous {
                line.push_str(&format!(" (was {})", crate::monitor::threshold::fmt(p)));
            }
        }
        line.push_str(&format!("  {}", e.detail));
        writeln!(out, "{line}")?;
        for l in &e.lines {
            writeln!(out, "    {l}")?;
        }
    }
    let span = match (b.from, b.to) {
        (Some(from), Some(to)) => format!(" from {} to {}", time(from), time(to)),
        _ => String::new(),
    };
    writeln!(
        out,
        "{}: {} over {} stored version{}{span}: {} event{} ({} ms)",
        b.watch,
        b.rule,
        b.versions,
        if b.versions == 1 { "" } else { "s" },
        b.events.len(),
        if b.events.len() == 1 { "" } else { "s" },
        elapsed.as_millis()
    )?;
    Ok(())
}
