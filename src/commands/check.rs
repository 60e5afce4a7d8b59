//! `semclip check [WATCH...]`: runs watches once, prints what changed and
//! what is alerted, and (unless `--dry-run`) records the checks and delivers
//! the alerts. Exit status: 0 nothing to alert, 1 alerts raised, 2 a check
//! failed or trouble. A layout event is printed as `layout changed: ...`;
//! it is an alert (and exit 1) only for a watch with `layout.notify`.

use std::io::Write;
use std::sync::Arc;
use std::time::SystemTime;

use anyhow::{Context, bail};

use super::Outcome;
use crate::cli::CheckArgs;
use crate::daemon;
use crate::monitor::check::{self, Engine, PageOutcome};

/// Runs the command, writing to `out`.
pub async fn run(args: &CheckArgs, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let loaded = daemon::load(
        args.config.config_file().as_deref(),
        args.config.watches.as_deref(),
    )?;
    let mut selected = Vec::new();
    for id in &args.watch {
        match loaded.watches.iter().find(|w| &w.id == id) {
            Some(w) => selected.push(Arc::new(w.clone())),
            None => {
                let known: Vec<&str> = loaded.watches.iter().map(|w| w.id.as_str()).collect();
                bail!("no watch `{id}` (the watches are: {})", known.join(", "));
            }
        }
    }
    if args.watch.is_empty() {
        selected = loaded.watches.iter().cloned().map(Arc::new).collect();
    }
    let daemon_cfg = Arc::new(loaded.daemon);
    // The bundled watches check the demo site, which only a running
    // process serves: `check` serves it too for as long as it checks, so
    // the quick start's watches work with `check` as they do with `run`.
    let _demo = match &daemon_cfg.demo {
        Some(demo) => Some(start_demo(demo.listen, out).await?),
        None => None,
    };
    let stores = daemon::open_store(&daemon_cfg)?;
    let engine = Arc::new(Engine::new(Arc::clone(&daemon_cfg), Arc::clone(&stores)));
    let now = SystemTime::now();
    // A task is spawned only when fewer than `concurrency` run, so at most
    // that many checks exist at a time: a check's future is large (fetch,
    // decode and store states), and 10,000 of them spawned up front held
    // about 150 MB before the first one ran.
    let concurrency = daemon_cfg.limits.concurrency.max(1);
    let mut tasks = tokio::task::JoinSet::new();
    let mut reports = Vec::new();
    for (i, watch) in selected.iter().enumerate() {
        while tasks.len() >= concurrency {
            let Some(joined) = tasks.join_next().await else {
                break;
            };
            let (i, report) = joined.context("a check task failed")?;
            reports.push((i, report?));
        }
        let engine = Arc::clone(&engine);
        let watch = Arc::clone(watch);
        let dry_run = args.dry_run;
        tasks.spawn(async move { (i, check::check(&engine, &watch, now, None, dry_run).await) });
    }
    while let Some(joined) = tasks.join_next().await {
        let (i, report) = joined.context("a check task failed")?;
        reports.push((i, report?));
    }
    reports.sort_by_key(|(i, _)| *i);
    let (mut alerts, mut failed) = (0, false);
    for (_, report) in &reports {
        writeln!(out, "{}", daemon::describe(report))?;
        if let PageOutcome::Changed(changes) = &report.outcome {
            for c in changes {
                writeln!(out, "  {}", c.line())?;
            }
        }
        for (name, level, value) in &report.thresholds {
            let value = value
                .map(crate::monitor::threshold::fmt)
                .unwrap_or_else(|| "-".into());
            writeln!(out, "  threshold {name}: {} ({value})", level.as_str())?;
        }
        // A layout event is not a data change: it is printed apart, and it
        // is an alert (exit 1) only when the watch has `layout.notify`.
        if let Some(summary) = &report.layout {
            writeln!(out, "  layout changed: {summary}")?;
        }
        for alert in &report.alerts {
            let verb = if args.dry_run { "would alert" } else { "alert" };
            writeln!(out, "  {verb}: {}", alert.summary)?;
        }
        alerts += report.alerts.len();
        failed |= check::failed(report);
    }
    if !args.dry_run && alerts > 0 {
        let notifiers = daemon::notifiers(&daemon_cfg)?;
        let round = crate::daemon::outbox::deliver_due(
            &stores,
            &notifiers,
            daemon_cfg.alerts.give_up_after,
            SystemTime::now(),
        )
        .await?;
        writeln!(
            out,
            "alerts: {} delivered, {} queued for retry, {} given up",
            round.delivered, round.retrying, round.given_up
        )?;
    }
    if failed {
        bail!("some checks failed (see above)");
    }
    Ok(if alerts > 0 {
        Outcome::Negative
    } else {
        Outcome::Success
    })
}

/// The demo site, served while it is held (dropping it aborts the task).
struct DemoSite(Option<tokio::task::JoinHandle<()>>);

impl Drop for DemoSite {
    fn drop(&mut self) {
        if let Some(task) = self.0.take() {
            task.abort();
        }
    }
}

/// Serves the demo site on `addr` for the checks. When the address is
/// taken, most likely by a `semclip run` of the same file serving the same
/// site, the checks go on against whatever answers there, and a note says so.
async fn start_demo(addr: std::net::SocketAddr, out: &mut dyn Write) -> anyhow::Result<DemoSite> {
    match tokio::net::TcpListener::bind(addr).await {
        Ok(listener) => Ok(DemoSite(Some(tokio::spawn(async move {
            if let Err(error) = crate::daemon::demo::serve_on(listener).await {
                tracing::error!(%addr, error = %crate::ErrorChain(&error), "the demo site failed");
            }
        })))),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            writeln!(
                out,
                "note: the demo site's address {addr} is in use (a running `semclip run`?); \
                 checking against what answers there"
            )?;
            Ok(DemoSite(None))
        }
        Err(e) => Err(anyhow::Error::new(e).context(format!(
            "cannot serve the demo site (demo.listen) on {addr}"
        ))),
    }
}
