//! `semclip init URL [-o FILE]`: fetches a page the way a watch would
//! (the daemon file's fence, fetch settings and page budget) and writes a
//! commented starter watch file for it (see [`crate::config::starter`]) to stdout
//! or to a new file, which `semclip validate` accepts as written. The
//! page's records (`extract: records`, with the heading above them) are
//! found on the same parse and offered to the starter, which proposes
//! them on a list page.
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
use crate::config::starter::RecordList;
use crate::extract::{records, vocabulary};
use crate::hierarchy::number::decimal_style_for_lang;
use crate::hierarchy::{Hierarchy, assign_ids};
use crate::page::budget::Budget;
use crate::page::dom::Dom;
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
    let (page, list) = fetch_page(&daemon, &url).await?;
    let text = crate::config::starter::watch_file(url.as_str(), &page, list.as_ref());
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
/// hierarchy within the page budget, with the records found on it.
async fn fetch_page(
    daemon: &DaemonConfig,
    url: &Url,
) -> anyhow::Result<(Hierarchy, Option<RecordList>)> {
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
        headers_cross_origin: false,
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
    tokio::task::spawn_blocking(move || -> anyhow::Result<(Hierarchy, Option<RecordList>)> {
        let decoded = source::decode(&page.bytes, page.content_type.as_deref(), page.url.as_ref());
        let budget = Budget::new(limits);
        let dom = Dom::parse_within(&decoded.text, &budget);
        let cannot = || format!("{name} cannot be read");
        budget.check().with_context(cannot)?;
        let hierarchy = crate::hierarchy::build_within(&dom, Some(&name), &budget);
        budget.check().with_context(cannot)?;
        let list = record_list(&dom, hierarchy.lang.as_deref());
        Ok((hierarchy, list))
    })
    .await
    .context("the page worker failed")?
}

/// The records of the page (`extract: records`) as the starter takes
/// them, numbers read in the page's language `lang`; `None` when there
/// are none.
fn record_list(dom: &Dom, lang: Option<&str>) -> Option<RecordList> {
    let found = records::extract(dom);
    if found.records.is_empty() {
        return None;
    }
    let table = vocabulary::records_node(&found, decimal_style_for_lang(lang));
    let mut page = Hierarchy {
        title: None,
        url: None,
        lang: None,
        children: vec![table],
    };
    assign_ids(&mut page);
    let table = page.children.pop()?;
    Some(RecordList {
        heading: records::heading(dom, &found),
        table,
    })
}
