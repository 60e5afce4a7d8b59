//! `semclip init URL [-o FILE]`: fetches a page the way a watch would
//! (the daemon file's fence, fetch settings and page budget) and writes a
//! commented starter watch file for it (see [`crate::config::starter`]) to stdout
//! or to a new file, which `semclip validate` accepts as written.
//!
//! A path is taken as a file and becomes a `file://` URL; like a `file://`
//! watch, it must lie under the fence's file roots (by default the
//! watches directory's parent, so: the project directory).

use std::io::Write;
use std::sync::Arc;

use anyhow::Context;
use url::Url;

use super::Outcome;
use crate::cli::InitArgs;
use crate::config::DaemonConfig;
use crate::hierarchy::Hierarchy;
use crate::page::fetch::{self, Clients, Fetched, HostLimiter, PageRequest};
use crate::page::source::{self, FetchOptions};

/// Runs the command, writing the watch file to `out` or to `args.output`.
pub async fn run(args: &InitArgs, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let config = crate::cli::ConfigArgs {
        config: args.config.clone(),
        watches: None,
    }
    .config_file();
    let daemon = match &config {
        Some(path) => crate::config::load_daemon(path)
            .map_err(|diagnostics| crate::daemon::invalid(&diagnostics))?,
        None => crate::config::daemon_defaults(),
    };
    let url = page_url(&args.url)?;
    let page = fetch_page(&daemon, &url).await?;
    let text = crate::config::starter::watch_file(url.as_str(), &page);
    match &args.output {
        None => out.write_all(text.as_bytes())?,
        Some(path) => {
            // `create_new`: a starter never overwrites a watch someone wrote.
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
                .with_context(|| format!("cannot create `{}`", path.display()))?;
            file.write_all(text.as_bytes())
                .with_context(|| format!("cannot write `{}`", path.display()))?;
            writeln!(out, "wrote {}", path.display())?;
        }
    }
    Ok(Outcome::Success)
}

/// The page's URL: an `http(s)` or `file` URL as given, a path as a
/// `file://` URL of its absolute form.
fn page_url(spec: &str) -> anyhow::Result<Url> {
    if let Ok(url) = Url::parse(spec)
        && matches!(url.scheme(), "http" | "https" | "file")
    {
        return Ok(url);
    }
    let path = std::path::absolute(spec).with_context(|| format!("cannot read `{spec}`"))?;
    Url::from_file_path(&path)
        .map_err(|()| anyhow::anyhow!("`{spec}` is neither a URL nor a file path"))
}

/// Fetches `url` within the daemon's fence and settings and builds its
/// hierarchy within the page budget.
async fn fetch_page(daemon: &DaemonConfig, url: &Url) -> anyhow::Result<Hierarchy> {
    let fence = Arc::new(daemon.fence());
    if url.scheme() == "file" {
        let path = url
            .to_file_path()
            .map_err(|()| anyhow::anyhow!("`{url}` is not a local file URL"))?;
        fence.check_file_url(&path)?;
    } else {
        fence.check_watch_url(url)?;
    }
    let f = &daemon.fetch;
    let request = PageRequest {
        url: url.clone(),
        opts: FetchOptions {
            max_body_bytes: f.max_body,
            connect_timeout: f.connect_timeout,
            request_timeout: f.timeout,
            max_redirects: f.max_redirects,
            proxy: f.proxy.clone(),
        },
        retries: 0,
        headers: Vec::new(),
        cookies: Vec::new(),
        jar: None,
        credentials: None,
        etag: None,
        last_modified: None,
    };
    let clients = Clients::new(fence);
    let limiter = HostLimiter::new(daemon.limits.per_host, daemon.limits.host_spacing);
    let page = match fetch::fetch(&clients, &limiter, &request).await? {
        Fetched::Page { page, .. } => page,
        // Nothing was sent to make a 304 possible; a server that answers one
        // anyway gave no page.
        Fetched::NotModified => anyhow::bail!("`{url}` answered 304 Not Modified to a plain GET"),
    };
    let limits = daemon.limits.page;
    let name = url.to_string();
    tokio::task::spawn_blocking(move || -> anyhow::Result<Hierarchy> {
        let decoded = source::decode(&page.bytes, page.content_type.as_deref(), page.url.as_ref());
        Hierarchy::from_html_within(&decoded.text, Some(&name), limits)
            .with_context(|| format!("{name} cannot be read"))
    })
    .await
    .context("the page worker failed")?
}
