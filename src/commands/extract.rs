//! `semclip extract article|records|region SOURCE`: a page in, its article,
//! its data records, or the data region around keywords out, as a
//! hierarchy document (XML), JSON with source positions, or text.
//!
//! The JSON shapes are a documented interface (docs/watch-files.md, "JSON output"):
//! other tools score them.
//!
//! - article: `{"title", "byline", "date", "body", "xpath", "method"}`,
//!   `body` being plain text with paragraphs separated by blank lines and
//!   `method` `single-page` or `template`;
//! - records: `{"records": [{"fields": [{"name", "text", "href"?, "xpath"}],
//!   "xpaths": ["/body[1]/div[3]/ul[1]/li[1]"]}]}`;
//! - region: `{"xpath", "wrapper", "records": [...]}`.

use std::io::Write;

use anyhow::Context;
use serde_json::json;

use super::Outcome;
use crate::cli::{ConfigArgs, Extract, ExtractArgs, ExtractFormat};
use crate::extract::{self, Article, Record, region, vocabulary};
use crate::hierarchy::number::decimal_style_for_lang;
use crate::hierarchy::write::{XmlOptions, to_xml};
use crate::hierarchy::{HNode, Hierarchy, assign_ids};
use crate::page::budget::Budget;
use crate::page::dom::Dom;
use crate::page::source::{self, FetchOptions};
use crate::template::cluster::TemplateSet;
use crate::template::tree::PageTree;

/// A loaded page: its DOM, URL and language.
struct Page {
    dom: Dom,
    url: Option<String>,
    title: Option<String>,
    lang: Option<String>,
}

/// Loads and parses `spec` on a blocking thread.
async fn load(spec: &str) -> anyhow::Result<Page> {
    let raw = source::LazyClient::new(FetchOptions::default())
        .load(spec)
        .await?;
    let name = spec.to_owned();
    tokio::task::spawn_blocking(move || {
        let decoded = raw.decode();
        let budget = Budget::default_limits();
        let dom = Dom::parse_within(&decoded.text, &budget);
        budget
            .check()
            .with_context(|| format!("{name} cannot be read"))?;
        let (title, lang) = crate::hierarchy::title_and_lang(&dom);
        Ok(Page {
            dom,
            url: raw.url.as_ref().map(ToString::to_string),
            title,
            lang,
        })
    })
    .await
    .context("the page worker failed")?
}

/// Runs the command, writing to `out`. Exit 1 ([`Outcome::Negative`])
/// when nothing was found.
pub async fn run(args: &ExtractArgs, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let (text, found) = match &args.what {
        Extract::Article(a) => {
            let set = match &a.template {
                Some(name) => Some(load_template_set(&a.config, name).await?),
                None => None,
            };
            let page = load(&a.source).await?;
            let article = match set {
                Some(mut set) => {
                    let tree = PageTree::from_dom(&page.dom);
                    let template = set.template_of(&tree);
                    extract::article::extract_by_template(
                        &page.dom,
                        &tree,
                        page.url.as_deref(),
                        template,
                    )
                }
                None => extract::article::extract(&page.dom, page.url.as_deref()),
            };
            let found = !article.paragraphs.is_empty();
            let text = match a.format {
                ExtractFormat::Json => json_text(&article_json(&article))?,
                ExtractFormat::Text => article_text(&article),
                ExtractFormat::Xml => page_xml(&page, vocabulary::article_node(&article)),
            };
            (text, found)
        }
        Extract::Records(a) => {
            let set = match &a.template {
                Some(name) => Some(load_template_set(&a.config, name).await?),
                None => None,
            };
            let page = load(&a.source).await?;
            let records = match set {
                Some(mut set) => {
                    let tree = PageTree::from_dom(&page.dom);
                    let template = set.template_of(&tree);
                    extract::records::extract_by_template(&page.dom, &tree, template)
                }
                None => extract::records::extract(&page.dom),
            };
            let found = !records.records.is_empty();
            let style = decimal_style_for_lang(page.lang.as_deref());
            let text = match a.format {
                ExtractFormat::Json => json_text(&serde_json::to_value(&records)?)?,
                ExtractFormat::Text => records_text(&records.records),
                ExtractFormat::Xml => page_xml(&page, vocabulary::records_node(&records, style)),
            };
            (text, found)
        }
        Extract::Region(a) => {
            let wrapper = match &a.wrapper {
                Some(path) => Some(read_wrapper(path)?),
                None => None,
            };
            let page = load(&a.source).await?;
            let found = match &wrapper {
                Some(w) => region::apply(&page.dom, w).with_context(|| {
                    format!(
                        "the wrapper in {} finds no region on {} (has the layout changed?)",
                        a.wrapper
                            .as_deref()
                            .unwrap_or(std::path::Path::new("-"))
                            .display(),
                        a.source
                    )
                })?,
                None => region::find(&page.dom, &a.keywords).with_context(|| {
                    format!("no data region on {} holds the keywords", a.source)
                })?,
            };
            let style = decimal_style_for_lang(page.lang.as_deref());
            let text = match a.format {
                ExtractFormat::Json => json_text(&serde_json::to_value(&found)?)?,
                ExtractFormat::Text => records_text(&found.records),
                ExtractFormat::Xml => page_xml(&page, vocabulary::region_node(&found, style)),
            };
            (text, !found.records.is_empty())
        }
    };
    out.write_all(text.as_bytes())?;
    Ok(if found {
        Outcome::Success
    } else {
        Outcome::Negative
    })
}

/// Template set `name` from the configured store.
async fn load_template_set(config: &ConfigArgs, name: &str) -> anyhow::Result<TemplateSet> {
    let loaded = crate::daemon::load(config.config_file().as_deref(), config.watches.as_deref())?;
    let stores = crate::daemon::open_store(&loaded.daemon)?;
    let key = name.to_owned();
    let body = stores
        .run(move |s| s.template_set(&key))
        .await
        .context("cannot read the template set")?
        .with_context(|| {
            format!(
                "no template set `{name}` in {}: learn it with `semclip learn {name} PAGES...`",
                loaded.daemon.database
            )
        })?;
    serde_json::from_str(&body).with_context(|| format!("template set `{name}` is unreadable"))
}

/// A saved wrapper: the JSON output of `extract region` or its `wrapper`.
fn read_wrapper(path: &std::path::Path) -> anyhow::Result<region::Wrapper> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the wrapper file {}", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    let inner = value.get("wrapper").cloned().unwrap_or(value);
    serde_json::from_value(inner)
        .with_context(|| format!("{} holds no region wrapper", path.display()))
}

fn article_json(a: &Article) -> serde_json::Value {
    json!({
        "title": a.title,
        "byline": a.byline,
        "date": a.date,
        "body": a.body(),
        "xpath": a.xpath,
        "method": a.method.as_str(),
    })
}

fn json_text(v: &serde_json::Value) -> anyhow::Result<String> {
    let mut s = serde_json::to_string_pretty(v)?;
    s.push('\n');
    Ok(s)
}

fn article_text(a: &Article) -> String {
    let mut s = String::new();
    if let Some(t) = &a.title {
        s.push_str(t);
        s.push('\n');
    }
    let meta: Vec<&str> = [a.byline.as_deref(), a.date.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    if !meta.is_empty() {
        s.push_str(&meta.join(" · "));
        s.push('\n');
    }
    if !s.is_empty() {
        s.push('\n');
    }
    s.push_str(&a.body());
    s.push('\n');
    s
}

/// One line per record, fields separated by tabs.
fn records_text(records: &[Record]) -> String {
    let mut s = String::new();
    for r in records {
        let line: Vec<&str> = r.fields.iter().map(|f| f.text.as_str()).collect();
        s.push_str(&line.join("\t"));
        s.push('\n');
    }
    s
}

/// A hierarchy document whose root holds `node` only.
fn page_xml(page: &Page, node: HNode) -> String {
    let mut h = Hierarchy {
        title: page.title.clone(),
        url: page.url.clone(),
        lang: page.lang.clone(),
        children: vec![node],
    };
    assign_ids(&mut h);
    to_xml(&h, XmlOptions::default())
}
