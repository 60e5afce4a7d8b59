//! `semclip learn NAME SOURCE...`: pages of one site in; their clusters by
//! structure and one template per cluster out, stored in the store under
//! NAME for watches to name in `layout.template` (docs/algorithms.md, "Template clustering").

use std::io::Write;
use std::path::Path;
use std::time::SystemTime;

use anyhow::Context;

use super::Outcome;
use crate::cli::LearnArgs;
use crate::page::budget::Budget;
use crate::page::dom::Dom;
use crate::page::source::{self, FetchOptions};
use crate::template::cluster::{PageFeatures, TemplateSet};
use crate::template::pattern::Pattern;
use crate::template::seq::Interner;
use crate::template::tree::PageTree;

/// The sources named: directories expand to their `.html`/`.htm` files,
/// sorted.
fn expand(sources: &[String]) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for s in sources {
        let path = Path::new(s);
        if path.is_dir() {
            let mut files: Vec<String> = std::fs::read_dir(path)
                .with_context(|| format!("cannot list {}", path.display()))?
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.extension().is_some_and(|e| {
                        e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm")
                    })
                })
                .map(|p| p.display().to_string())
                .collect();
            files.sort();
            out.extend(files);
        } else {
            out.push(s.clone());
        }
    }
    Ok(out)
}

/// Member pages merged into a template's ne-pattern: each merge is an
/// RTDM run over two whole pages, and a pattern stops changing after a few
/// pages of one template (what varies has become a wildcard).
pub const PATTERN_PAGES: usize = 8;

/// Clusters `pages` (decoded page texts), learns a template per cluster,
/// and gives each template the ne-pattern of (up to [`PATTERN_PAGES`] of)
/// the pages nearest to it. Only the features of every page are kept while
/// clustering; the few pages a pattern is learned from are parsed again,
/// so memory holds the texts, not a parsed DOM per page.
pub fn learn_set(pages: &[String], threshold: f64, min_pages: usize) -> TemplateSet {
    let mut interner = Interner::new();
    let features: Vec<PageFeatures> = pages
        .iter()
        .map(|text| PageFeatures::new(&PageTree::from_dom(&Dom::parse(text)), &mut interner))
        .collect();
    let mut set = TemplateSet::learn(interner, features.clone(), threshold, min_pages);
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); set.templates.len()];
    for (i, f) in features.iter().enumerate() {
        if let Some((t, similarity)) = set.nearest(f)
            && similarity >= 1.0 - threshold
            && let Some(m) = members.get_mut(t)
            && m.len() < PATTERN_PAGES
        {
            m.push(i);
        }
    }
    for (template, m) in set.templates.iter_mut().zip(members) {
        let parsed: Vec<(Dom, PageTree)> = m
            .iter()
            .map(|&i| {
                let dom = Dom::parse(&pages[i]);
                let tree = PageTree::from_dom(&dom);
                (dom, tree)
            })
            .collect();
        let of: Vec<(&Dom, &PageTree)> = parsed.iter().map(|(d, t)| (d, t)).collect();
        template.pattern = Pattern::learn(&of);
    }
    set
}

/// Runs the command.
#[expect(
    clippy::too_many_lines,
    reason = "the command's steps in order, each a few lines"
)]
pub async fn run(args: &LearnArgs, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    if args.name.is_empty()
        || !args
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        anyhow::bail!(
            "`{}` is not a template set name: use A-Z a-z 0-9 . _ -",
            args.name
        );
    }
    if !(args.threshold > 0.0 && args.threshold < 1.0) {
        anyhow::bail!("--threshold must be between 0 and 1");
    }
    let loaded = crate::daemon::load(
        args.config.config_file().as_deref(),
        args.config.watches.as_deref(),
    )?;
    let sources = expand(&args.sources)?;
    let client = source::LazyClient::new(FetchOptions::default());
    let mut pages = Vec::with_capacity(sources.len());
    for spec in &sources {
        // One bad page is reported and skipped; the others still count.
        let raw = match client.load(spec).await {
            Ok(raw) => raw,
            Err(error) => {
                writeln!(out, "skipped {spec}: {}", crate::error_chain(&error))?;
                continue;
            }
        };
        // A page over the daemon's page budget is skipped like an unreadable
        // one: learning parses every page, some several times.
        let limits = loaded.daemon.limits.page;
        let page = tokio::task::spawn_blocking(move || {
            let text = raw.decode().text;
            let budget = Budget::new(limits);
            Dom::parse_within(&text, &budget);
            budget.check().map(|()| text)
        })
        .await
        .context("the page worker failed")?;
        match page {
            Ok(page) => pages.push(page),
            Err(exceeded) => writeln!(out, "skipped {spec}: {exceeded}")?,
        }
    }
    if pages.is_empty() {
        anyhow::bail!("no page could be read");
    }
    let threshold = args.threshold;
    let min_pages = args.min_pages.max(1);
    let n = pages.len();
    let set = tokio::task::spawn_blocking(move || learn_set(&pages, threshold, min_pages))
        .await
        .context("the learning worker failed")?;
    writeln!(
        out,
        "{n} pages: {} template{}, {} page{} pending (threshold {threshold}, at least {min_pages} pages a template)",
        set.templates.len(),
        if set.templates.len() == 1 { "" } else { "s" },
        set.pending.len(),
        if set.pending.len() == 1 { "" } else { "s" },
    )?;
    for (i, t) in set.templates.iter().enumerate() {
        let optional: usize = t.optional.iter().map(Vec::len).sum();
        let pattern = match &t.pattern {
            Some(p) => {
                let [single, plus, option, kleene] = p.wildcard_counts();
                format!(
                    ", ne-pattern of {} nodes ({} wildcards) from {} pages",
                    p.len(),
                    single + plus + option + kleene,
                    p.pages()
                )
            }
            None => String::new(),
        };
        writeln!(
            out,
            "  template {i}: {} pages, {} essential nodes, {optional} optional parts{pattern}",
            t.members,
            t.essential.len(),
        )?;
    }

    if args.dry_run {
        return Ok(Outcome::Success);
    }
    let body = serde_json::to_string(&set).context("cannot serialise the template set")?;
    let stores = crate::daemon::open_store(&loaded.daemon)?;
    let name = args.name.clone();
    stores
        .run(move |s| s.put_template_set(&name, SystemTime::now(), n, &body))
        .await
        .context("cannot store the template set")?;
    writeln!(
        out,
        "stored as `{}` in {}",
        args.name, loaded.daemon.database
    )?;
    Ok(if set.templates.is_empty() {
        Outcome::Negative
    } else {
        Outcome::Success
    })
}
