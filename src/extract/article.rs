//! Single-page main-article extraction: a parsed page in, its title,
//! byline, date and body paragraphs out ([`Article`]).
//!
//! This is the fallback of issue 6's `article` clip for a page whose site has
//! no learned template yet, and the method `semclip extract article` uses.
//! It works on one page alone, in four steps:
//!
//! 1. **Boilerplate mask.** Scripts, hidden elements, forms controls,
//!    `<nav>`/`<aside>`/`<footer>`, ARIA landmark roles that are never the
//!    article (navigation, complementary, search, dialogs) and elements whose
//!    `class`/`id` name a page furniture role (comments, sidebars, share
//!    bars, related links, menus, ...) are masked out. The DOM itself is
//!    never changed: every later step reads through the mask.
//! 2. **Content scoring** (the readability family of methods): every
//!    paragraph-like block of at least [`MIN_PARAGRAPH_CHARS`] characters
//!    scores `1 + commas + min(chars / 100, 3)` and gives that score to its
//!    ancestors, fully to the parent, half to the grandparent and
//!    `1 / (3 level)` further up ([`ANCESTOR_LEVELS`] levels). Ancestors start
//!    from a tag prior and a `class`/`id` hint (±[`CLASS_WEIGHT`]), and end
//!    scaled by `1 - link density`. The best candidate is widened to an
//!    ancestor when the runners-up share it, and its siblings join when they
//!    score close to it or read like prose.
//! 3. **Cleaning** of the chosen blocks: share widgets, blocks with negative
//!    hints, link farms, form-like and image-gallery blocks, and the heading
//!    that repeats the title are masked (data tables are kept). When the
//!    result is shorter than [`MIN_ARTICLE_CHARS`] and has fewer than
//!    [`MIN_ARTICLE_PARAGRAPHS`] prose paragraphs (the mask probably ate the
//!    article), the whole process runs again with the riskiest heuristic
//!    switched off, and the longest result wins.
//! 4. **Paragraphs**: block elements, list items, headings and table rows
//!    become paragraphs, and `<br><br>` splits one.
//!
//! Metadata comes from what the page declares first (JSON-LD, then `<meta>`
//! tags), then from markup conventions (`<title>` without the site name,
//! `<h1>`, `rel=author`, `.byline`, `<time datetime>`), and for the title
//! finally the labelling rule of Reis et al. (docs/algorithms.md,
//! "Labelling title and body"): the passage of
//! 1..20 words before the body with the highest word overlap with the body
//! relative to its distance from it.
//!
//! All the heuristics are general (no rule names a site); each says why it
//! exists where it is defined.

use rustc_hash::FxHashSet;
use serde_json::Value;

use super::{Article, Method, collapse_whitespace};
use crate::hierarchy::text::word_count;
use crate::page::dom::{DOCUMENT, Dom, NodeData, NodeId, is_inline};
use crate::template::cluster::Template;
use crate::template::pattern::BODY_MIN_WORDS;
use crate::template::tree::PageTree;

/// Shortest block (in characters, whitespace collapsed) that counts as a
/// paragraph when scoring. Shorter blocks are captions, datelines, buttons
/// and link labels: they say little about where the prose is.
pub const MIN_PARAGRAPH_CHARS: u32 = 25;

/// How many ancestors a paragraph's score reaches (parent = level 0). Five
/// covers the usual `article > div > div > div > p` wrappers without letting
/// one long paragraph lift the whole page.
pub const ANCESTOR_LEVELS: usize = 5;

/// The bonus or penalty of a positive or negative `class`/`id` hint. It is
/// worth about eight ordinary paragraphs, enough to overrule a few
/// paragraphs of comments, not an article's worth.
pub const CLASS_WEIGHT: f32 = 25.0;

/// An article body shorter than this (characters) makes the extractor retry
/// with a less aggressive mask: real articles are longer, and a short result
/// usually means a heuristic masked the article itself.
pub const MIN_ARTICLE_CHARS: u32 = 500;

/// An attempt that found this many prose paragraphs (at least
/// [`PROSE_CHARS`] characters each) is accepted however short: it found a
/// brief, not a masked article, and retrying without the furniture mask
/// would let a longer comment thread win.
pub const MIN_ARTICLE_PARAGRAPHS: usize = 3;

/// Characters of a sentence-sized paragraph.
const PROSE_CHARS: u32 = 80;

/// Longest text (characters) a byline element may hold: a longer one is a
/// paragraph that merely mentions an author.
const MAX_BYLINE_CHARS: u32 = 100;

/// Share bars are masked only when they hold less than this much text, so a
/// wrapper that happens to carry a "share" class is not thrown away with
/// the article inside it.
const MAX_SHARE_CHARS: u32 = 500;

/// The main article of a single page.
pub fn extract(dom: &Dom, url: Option<&str>) -> Article {
    let meta = Metadata::collect(dom);
    let Some(body) = dom.body() else {
        return Article {
            title: meta.declared_title(),
            byline: meta.byline(),
            date: meta.date(),
            ..Article::default()
        };
    };
    let page = Page::new(dom, body);
    let headings = page.headings();
    let declared_title = meta.declared_title();
    let title_hint = declared_title
        .clone()
        .or_else(|| meta.title_element.clone())
        .unwrap_or_default();

    // Attempts from most to least aggressive (step 3 of the module doc).
    let mut best: Option<Attempt> = None;
    for flags in [
        Flags::ALL,
        Flags {
            strip_unlikely: false,
            ..Flags::ALL
        },
        Flags {
            strip_unlikely: false,
            weigh_classes: false,
            ..Flags::ALL
        },
        Flags {
            strip_unlikely: false,
            weigh_classes: false,
            clean_conditionally: false,
        },
    ] {
        let attempt = page.attempt(flags, &title_hint);
        let long_enough =
            attempt.chars >= MIN_ARTICLE_CHARS || attempt.prose >= MIN_ARTICLE_PARAGRAPHS;
        if best.as_ref().is_none_or(|b| attempt.chars > b.chars) {
            best = Some(attempt);
        }
        if long_enough {
            break;
        }
    }
    let Some(best) = best else {
        return Article::default();
    };

    let paragraphs = page.paragraphs(&best.roots, &best.mask);
    let host = url.and_then(|u| url::Url::parse(u).ok()).and_then(|u| {
        u.host_str()
            .map(|h| h.trim_start_matches("www.").to_ascii_lowercase())
    });
    let title = declared_title
        .or_else(|| {
            meta.title_element
                .as_deref()
                .map(|t| clean_title(t, &headings, meta.site_name(), host.as_deref()))
                .filter(|t| !t.is_empty())
        })
        .or_else(|| single_h1(dom, &page))
        .or_else(|| page.passage_title(&best, &paragraphs));
    let byline = meta.byline().or_else(|| best.byline.clone());
    let date = meta.date().or_else(|| page.dom_date(&best.roots));
    let xpath = match best.roots.as_slice() {
        [one] => dom.index_xpath(*one),
        [first, ..] => dom.parent(*first).and_then(|p| dom.index_xpath(p)),
        [] => None,
    };
    Article {
        title,
        byline,
        date,
        paragraphs,
        xpath,
        method: Method::SinglePage,
    }
}

/// The article of a page of a site whose template was learned (ne-patterns,
/// docs/algorithms.md, "RTDM and ne-patterns"): the page is matched against the template's
/// ne-pattern, the texts its wildcards and varying text nodes capture are
/// the passages, the body is the longest passage of more than
/// [`BODY_MIN_WORDS`] words with its sibling passages, and the title the
/// short passage sharing most words with the body per node of distance.
/// Byline and date come from the page's own declarations, as on a single
/// page.
///
/// Falls back to [`extract`] when `template` has no pattern, the page does
/// not match it, or no passage is long enough to be a body (a page of the
/// site that is not an article, or a template learned from one page,
/// where nothing varies). The caller decides that the page belongs to the
/// template (its similarity to it is within the set's threshold).
pub fn extract_by_template(
    dom: &Dom,
    tree: &PageTree,
    url: Option<&str>,
    template: Option<&Template>,
) -> Article {
    let single = extract(dom, url);
    let Some(pattern) = template.and_then(|t| t.pattern.as_ref()) else {
        return single;
    };
    let Some(found) = pattern.extract(dom, tree) else {
        return single;
    };
    let Some(body) = found.body.filter(|b| words(b).len() > BODY_MIN_WORDS) else {
        return single;
    };
    let paragraphs = body
        .split("\n\n")
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|p| !p.is_empty())
        .collect();
    Article {
        // The labelling rule finds no title when no short passage shares a
        // word with the body; the page's own title then stands.
        title: found
            .title
            .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|t| !t.is_empty())
            .or(single.title),
        byline: single.byline,
        date: single.date,
        paragraphs,
        xpath: None,
        method: Method::Template,
    }
}

// ---------------------------------------------------------------------------
// Metadata

/// What the page declares about itself.
#[derive(Debug, Default)]
struct Metadata {
    /// `<meta>` values by lower-cased `name`/`property`/`itemprop` key
    /// (a space-separated `property` gives each key), first one wins.
    meta: Vec<(String, String)>,
    /// From JSON-LD objects of an article type.
    ld_title: Option<String>,
    ld_author: Option<String>,
    ld_date: Option<String>,
    /// The `<title>` element's text.
    title_element: Option<String>,
}

/// Schema.org types whose JSON-LD describes the article itself (and not the
/// site, a breadcrumb or the publisher).
fn is_article_type(t: &str) -> bool {
    matches!(
        t,
        "Article"
            | "NewsArticle"
            | "BlogPosting"
            | "Report"
            | "ScholarlyArticle"
            | "TechArticle"
            | "AnalysisNewsArticle"
            | "OpinionNewsArticle"
            | "ReportageNewsArticle"
            | "ReviewNewsArticle"
            | "BackgroundNewsArticle"
            | "SocialMediaPosting"
            | "LiveBlogPosting"
            | "DiscussionForumPosting"
            | "Review"
            | "CreativeWork"
            | "WebPage"
            | "MedicalWebPage"
            | "Recipe"
            | "HowTo"
    )
}

impl Metadata {
    fn collect(dom: &Dom) -> Metadata {
        let mut m = Metadata::default();
        let mut ld_objects: Vec<Value> = Vec::new();
        let mut stack = vec![DOCUMENT];
        while let Some(n) = stack.pop() {
            let Some(e) = dom.element(n) else {
                let before = stack.len();
                stack.extend(dom.children(n));
                stack[before..].reverse();
                continue;
            };
            match &*e.name {
                "meta" => {
                    let Some(content) = e.attr("content") else {
                        continue;
                    };
                    let content = collapse_whitespace(content);
                    if content.is_empty() {
                        continue;
                    }
                    for attr in ["property", "name", "itemprop"] {
                        if let Some(keys) = e.attr(attr) {
                            for key in keys.split_whitespace() {
                                m.meta.push((key.to_ascii_lowercase(), content.clone()));
                            }
                        }
                    }
                }
                "title" if e.is_html() && m.title_element.is_none() => {
                    let t = dom.text_content(n);
                    if !t.is_empty() {
                        m.title_element = Some(t);
                    }
                }
                "script" => {
                    if e.attr("type")
                        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/ld+json"))
                    {
                        let raw = raw_text(dom, n);
                        if let Some(v) = parse_json_ld(&raw) {
                            ld_objects.push(v);
                        }
                    }
                }
                "svg" | "math" => {}
                _ => {
                    let before = stack.len();
                    stack.extend(dom.children(n));
                    stack[before..].reverse();
                }
            }
        }
        for v in &ld_objects {
            m.read_json_ld(v, 0);
        }
        m
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.meta
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The first of `keys` the page declares.
    fn first(&self, keys: &[&str]) -> Option<String> {
        keys.iter().find_map(|k| self.get(k)).map(str::to_owned)
    }

    /// Walks a JSON-LD value for article objects (`@graph` arrays, lists,
    /// `mainEntity` nesting); the first article object wins each field.
    fn read_json_ld(&mut self, v: &Value, depth: usize) {
        if depth > 4 {
            return;
        }
        match v {
            Value::Array(items) => {
                for i in items {
                    self.read_json_ld(i, depth + 1);
                }
            }
            Value::Object(o) => {
                if let Some(g) = o.get("@graph") {
                    self.read_json_ld(g, depth + 1);
                }
                let typed = match o.get("@type") {
                    Some(Value::String(t)) => is_article_type(t),
                    Some(Value::Array(ts)) => {
                        ts.iter().any(|t| t.as_str().is_some_and(is_article_type))
                    }
                    _ => false,
                };
                if typed {
                    let web_page =
                        matches!(o.get("@type"), Some(Value::String(t)) if t.ends_with("WebPage"));
                    if self.ld_title.is_none() {
                        self.ld_title = self.ld_headline(o, web_page);
                    }
                    if self.ld_author.is_none() {
                        self.ld_author = o.get("author").and_then(author_names);
                    }
                    if self.ld_date.is_none() {
                        self.ld_date = o
                            .get("datePublished")
                            .and_then(Value::as_str)
                            .map(collapse_whitespace)
                            .filter(|d| !d.is_empty());
                    }
                }
                if let Some(main) = o.get("mainEntity") {
                    self.read_json_ld(main, depth + 1);
                }
            }
            _ => {}
        }
    }

    /// The headline of a JSON-LD article object. `name` is only taken
    /// from article types (a WebPage's name is often the site's). When an
    /// object has both and they differ, some sites put a summary in one of
    /// them (Wikipedia's `headline` is the short description): the one
    /// that reads more like the page's `<title>` wins.
    fn ld_headline(&self, o: &serde_json::Map<String, Value>, web_page: bool) -> Option<String> {
        let get = |k: &str| {
            o.get(k)
                .and_then(Value::as_str)
                .map(collapse_whitespace)
                .filter(|t| !t.is_empty())
        };
        let headline = get("headline");
        let name = if web_page { None } else { get("name") };
        match (headline, name) {
            (Some(h), Some(n)) if h != n => {
                let title = self.title_element.as_deref().unwrap_or("");
                let (sh, sn) = (dice(title, &h), dice(title, &n));
                Some(if sn > sh { n } else { h })
            }
            (h, n) => h.or(n),
        }
    }

    /// The title the page declares for itself (structured data and sharing
    /// metadata), taken as written: publishers put the headline there as
    /// they want it shown, and when they keep their site name in it, that is
    /// their choice of display title.
    fn declared_title(&self) -> Option<String> {
        self.ld_title.clone().or_else(|| {
            self.first(&[
                "dc:title",
                "dcterm:title",
                "og:title",
                "weibo:article:title",
                "weibo:webpage:title",
                "title",
                "twitter:title",
                "parsely-title",
            ])
        })
    }

    fn site_name(&self) -> Option<&str> {
        ["og:site_name", "application-name", "twitter:site"]
            .iter()
            .find_map(|k| self.get(k))
    }

    fn byline(&self) -> Option<String> {
        self.ld_author
            .clone()
            .or_else(|| {
                self.first(&[
                    "dc:creator",
                    "dcterm:creator",
                    "author",
                    "parsely-author",
                    "sailthru.author",
                    "byl",
                    "article:author",
                ])
            })
            // `article:author` is often a profile URL, not a name.
            .filter(|a| !a.starts_with("http://") && !a.starts_with("https://"))
    }

    fn date(&self) -> Option<String> {
        self.ld_date.clone().or_else(|| {
            self.first(&[
                "article:published_time",
                "og:published_time",
                "datepublished",
                "parsely-pub-date",
                "sailthru.date",
                "dc.date",
                "dc:date",
                "dcterms.date",
                "date",
                "pubdate",
                "publishdate",
            ])
        })
    }
}

/// The raw text of a `<script>` (its text children; the DOM keeps script
/// content as text nodes, but `text_content` leaves scripts out).
fn raw_text(dom: &Dom, n: NodeId) -> String {
    let mut s = String::new();
    for c in dom.children(n) {
        if let NodeData::Text(t) = &dom.node(c).data {
            s.push_str(t);
        }
    }
    s
}

/// Parses a JSON-LD block, tolerating the HTML comment and CDATA wrappers
/// some CMSs put around it.
fn parse_json_ld(raw: &str) -> Option<Value> {
    let mut s = raw.trim();
    for prefix in ["<!--", "//<![CDATA[", "<![CDATA["] {
        s = s.strip_prefix(prefix).unwrap_or(s).trim();
    }
    for suffix in ["-->", "//]]>", "]]>"] {
        s = s.strip_suffix(suffix).unwrap_or(s).trim();
    }
    serde_json::from_str(s).ok()
}

/// Author names from a JSON-LD `author` (a string, a Person, or a list),
/// joined with ", ".
fn author_names(v: &Value) -> Option<String> {
    let mut names = Vec::new();
    let mut push = |v: &Value| {
        let name = match v {
            Value::String(s) => Some(s.as_str()),
            Value::Object(o) => o.get("name").and_then(Value::as_str),
            _ => None,
        };
        if let Some(n) = name.map(collapse_whitespace).filter(|n| !n.is_empty()) {
            names.push(n);
        }
    };
    match v {
        Value::Array(items) => items.iter().for_each(&mut push),
        other => push(other),
    }
    (!names.is_empty()).then(|| names.join(", "))
}

// ---------------------------------------------------------------------------
// Title helpers

/// Separators sites put between a headline and the site or section name in
/// `<title>` (spaced, so hyphenated words and dates are not split).
const TITLE_SEPARATORS: [&str; 10] = [
    " | ", " - ", " – ", " — ", " · ", " » ", " / ", " :: ", " \\ ", " > ",
];

/// `<title>` without the site name. Browsers show `<title>` in tabs and
/// search results, so sites append (or prepend) their name to the headline;
/// the part to drop is found by evidence, in order: a heading equal to one
/// side, a side equal to the site name or host, else the convention that
/// the site name comes last, when what remains still reads as a headline
/// (three words or more).
fn clean_title(title: &str, headings: &[String], site: Option<&str>, host: Option<&str>) -> String {
    let title = collapse_whitespace(title);
    let norm_headings: Vec<String> = headings.iter().map(|h| lowercase_words(h)).collect();
    if norm_headings.contains(&lowercase_words(&title)) {
        return title;
    }
    // Byte ranges of separators, in order.
    let mut cuts: Vec<(usize, usize)> = Vec::new();
    for sep in TITLE_SEPARATORS {
        for (i, _) in title.match_indices(sep) {
            cuts.push((i, i + sep.len()));
        }
    }
    cuts.sort_unstable();
    let (Some(&(first_start, first_end)), Some(&(last_start, last_end))) =
        (cuts.first(), cuts.last())
    else {
        return title;
    };
    let prefix = title[..last_start].trim();
    let suffix = title[first_end..].trim();
    let last = title[last_end..].trim();
    let first = title[..first_start].trim();
    for side in [prefix, suffix] {
        if norm_headings.contains(&lowercase_words(side)) {
            return side.to_owned();
        }
    }
    let is_site = |part: &str| {
        let p: String = lowercase_words(part).replace(' ', "");
        !p.is_empty()
            && (site.is_some_and(|s| lowercase_words(s).replace(' ', "") == p)
                || host.is_some_and(|h| {
                    let core = h.split('.').next().unwrap_or(h);
                    core.len() >= 3 && (p == core || h.contains(&p))
                }))
    };
    if is_site(last) {
        return prefix.to_owned();
    }
    if is_site(first) {
        return suffix.to_owned();
    }
    if word_count(prefix) >= 3 {
        return prefix.to_owned();
    }
    title
}

/// The text of the page's only `<h1>` (outside masked furniture), when it
/// has exactly one.
fn single_h1(dom: &Dom, page: &Page) -> Option<String> {
    let mut found = None;
    for &n in &page.order {
        if page.base_mask[n] {
            continue;
        }
        if dom.element(n).is_some_and(|e| &*e.name == "h1") {
            if found.is_some() {
                return None;
            }
            found = Some(dom.text_content(n));
        }
    }
    found.filter(|t| !t.is_empty())
}

// ---------------------------------------------------------------------------
// The page and its precomputed facts

/// Flags of one extraction attempt (module doc, step 3).
#[derive(Debug, Clone, Copy)]
struct Flags {
    /// Mask elements whose class/id names page furniture.
    strip_unlikely: bool,
    /// Use class/id hints in scores and cleaning.
    weigh_classes: bool,
    /// Mask link farms, forms and galleries inside the chosen blocks.
    clean_conditionally: bool,
}

impl Flags {
    const ALL: Flags = Flags {
        strip_unlikely: true,
        weigh_classes: true,
        clean_conditionally: true,
    };
}

/// One attempt's result.
#[derive(Debug)]
struct Attempt {
    /// The chosen blocks, siblings in document order.
    roots: Vec<NodeId>,
    /// Nodes masked out (boilerplate and cleaning).
    mask: Vec<bool>,
    /// Characters of body text.
    chars: u32,
    /// `<p>` elements of at least [`PROSE_CHARS`] characters in the body.
    prose: usize,
    /// A byline element's text found (and masked) in the page.
    byline: Option<String>,
}

/// Additive text statistics of a subtree (masked nodes left out).
#[derive(Debug, Clone, Copy, Default)]
struct Stats {
    /// Characters, whitespace runs counted as one.
    chars: u32,
    /// Characters inside links, in-page (`#...`) links weighted 0.3: they
    /// are footnotes and tables of contents, not navigation away.
    link_chars: f32,
    /// Commas (Latin, Arabic and CJK forms).
    commas: u32,
    /// `<p>` elements.
    paras: u32,
    /// `<img>` elements.
    imgs: u32,
    /// `<li>` elements.
    items: u32,
    /// Form controls (counted even though they are masked).
    inputs: u32,
    /// Characters inside headings.
    heading_chars: u32,
    /// Embedded frames and objects that are not videos.
    embeds: u32,
}

impl Stats {
    fn add(&mut self, o: &Stats) {
        self.chars += o.chars;
        self.link_chars += o.link_chars;
        self.commas += o.commas;
        self.paras += o.paras;
        self.imgs += o.imgs;
        self.items += o.items;
        self.inputs += o.inputs;
        self.heading_chars += o.heading_chars;
        self.embeds += o.embeds;
    }

    fn sub(&mut self, o: &Stats) {
        self.chars = self.chars.saturating_sub(o.chars);
        self.link_chars = (self.link_chars - o.link_chars).max(0.0);
        self.commas = self.commas.saturating_sub(o.commas);
        self.paras = self.paras.saturating_sub(o.paras);
        self.imgs = self.imgs.saturating_sub(o.imgs);
        self.items = self.items.saturating_sub(o.items);
        self.inputs = self.inputs.saturating_sub(o.inputs);
        self.heading_chars = self.heading_chars.saturating_sub(o.heading_chars);
        self.embeds = self.embeds.saturating_sub(o.embeds);
    }

    fn link_density(&self) -> f32 {
        if self.chars == 0 {
            0.0
        } else {
            (self.link_chars / self.chars as f32).min(1.0)
        }
    }
}

/// Characters of `t` with whitespace runs counted as one, and its commas.
fn text_measure(t: &str) -> (u32, u32) {
    let mut chars = 0u32;
    let mut commas = 0u32;
    let mut in_space = false;
    for c in t.chars() {
        if c.is_whitespace() {
            if !in_space {
                chars += 1;
                in_space = true;
            }
        } else {
            in_space = false;
            chars += 1;
            if matches!(
                c,
                ',' | '\u{060C}'
                    | '\u{FE50}'
                    | '\u{FE10}'
                    | '\u{FE11}'
                    | '\u{2E41}'
                    | '\u{2E34}'
                    | '\u{2E32}'
                    | '\u{FF0C}'
                    | '\u{3001}'
            ) {
                commas += 1;
            }
        }
    }
    (chars, commas)
}

/// The page with everything the attempts share.
struct Page<'a> {
    dom: &'a Dom,
    body: NodeId,
    /// Body nodes in pre-order (body first).
    order: Vec<NodeId>,
    /// Position of each node in `order` (`usize::MAX` outside the body).
    pos: Vec<usize>,
    /// For the node at each position of `order`, the position of its last
    /// descendant: a subtree is the range `pos[n]..=end[pos[n]]`.
    end: Vec<usize>,
    /// Masked by rules that hold in every attempt (scripts, hidden, form
    /// controls, `<nav>`/`<aside>`/`<footer>`).
    base_mask: Vec<bool>,
    /// Masked only when furniture names are stripped.
    unlikely: Vec<bool>,
    /// Lower-cased `class` + ` ` + `id` of each element.
    hints: Vec<String>,
}

/// Elements whose content is never article text.
fn never_content(name: &str) -> bool {
    matches!(
        name,
        "script"
            | "style"
            | "noscript"
            | "template"
            | "iframe"
            | "object"
            | "embed"
            | "svg"
            | "canvas"
            | "button"
            | "input"
            | "select"
            | "textarea"
            | "option"
            | "link"
            | "meta"
            | "dialog"
            | "aside"
            | "footer"
            | "nav"
    )
}

/// Block-level for segmentation and for the "div that is really a
/// paragraph" test: anything that is not phrasing content.
fn is_block(name: &str) -> bool {
    !is_inline(name)
        && !matches!(
            name,
            "br" | "label"
                | "font"
                | "nobr"
                | "big"
                | "del"
                | "ins"
                | "output"
                | "ruby"
                | "rt"
                | "rp"
                | "math"
                | "picture"
                | "source"
                | "video"
                | "audio"
        )
}

/// ARIA roles of page furniture: no article lives inside them.
fn furniture_role(role: &str) -> bool {
    role.split_whitespace().any(|r| {
        matches!(
            r,
            "navigation"
                | "menu"
                | "menubar"
                | "complementary"
                | "search"
                | "dialog"
                | "alert"
                | "alertdialog"
                | "contentinfo"
        )
    })
}

/// Hidden by the page itself (authors hide alternatives, templates and
/// pop-ups; a reader never sees them).
fn is_hidden(e: &crate::page::dom::Element) -> bool {
    if e.attr("hidden").is_some() {
        return true;
    }
    if e.attr("aria-hidden").is_some_and(|v| v.trim() == "true") {
        // Some sites mark decorative image wrappers aria-hidden; a wrapper
        // meant as a fallback image is still content.
        return !e
            .attr("class")
            .is_some_and(|c| c.contains("fallback-image"));
    }
    e.attr("style").is_some_and(|s| {
        let s: String = s
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect::<String>()
            .to_ascii_lowercase();
        s.contains("display:none") || s.contains("visibility:hidden")
    })
}

/// Class/id words of page furniture (substrings: `comment` also names
/// `comments`, `commentlist`). Used to mask elements before scoring.
const UNLIKELY: &[&str] = &[
    "banner",
    "breadcrumb",
    "combx",
    "comment",
    "community",
    "cover-wrap",
    "disqus",
    "extra",
    "footer",
    "gdpr",
    "header",
    "legends",
    "menu",
    "related",
    "remark",
    "replies",
    "rss",
    "shoutbox",
    "sidebar",
    "skyscraper",
    "social",
    "sponsor",
    "supplemental",
    "ad-break",
    "agegate",
    "pagination",
    "pager",
    "popup",
    "yom-remote",
    "-ad-",
    "cookie",
    "newsletter",
];

/// Words that rescue an element matching [`UNLIKELY`]: wrappers named
/// `main-header-and-content` or `article-sidebar-wrap` may hold the article.
const MAYBE: &[&str] = &[
    "and", "article", "body", "column", "content", "main", "mathjax", "shadow",
];

/// Class/id words that lower a candidate's score.
const NEGATIVE: &[&str] = &[
    "-ad-",
    "hidden",
    "banner",
    "combx",
    "comment",
    "com-",
    "contact",
    "footer",
    "gdpr",
    "masthead",
    "media",
    "meta",
    "outbrain",
    "promo",
    "related",
    "scroll",
    "share",
    "shoutbox",
    "sidebar",
    "skyscraper",
    "sponsor",
    "shopping",
    "tags",
    "widget",
];

/// Class/id words that raise a candidate's score.
const POSITIVE: &[&str] = &[
    "article",
    "body",
    "content",
    "entry",
    "hentry",
    "h-entry",
    "main",
    "page",
    "pagination",
    "post",
    "text",
    "blog",
    "story",
];

fn any_in(hint: &str, words: &[&str]) -> bool {
    words.iter().any(|w| hint.contains(w))
}

/// `hid` as a whole class word (a common "hidden" abbreviation) but not
/// inside `hide-and-seek` or `child`.
fn has_word(hint: &str, word: &str) -> bool {
    hint.split(|c: char| !c.is_ascii_alphanumeric())
        .any(|w| w == word)
}

impl<'a> Page<'a> {
    fn new(dom: &'a Dom, body: NodeId) -> Page<'a> {
        let n = dom.len();
        let mut order = Vec::new();
        let mut pos = vec![usize::MAX; n];
        let mut base_mask = vec![false; n];
        let mut unlikely = vec![false; n];
        let mut hints = vec![String::new(); n];
        // (node, masked ancestor, inside table or code)
        let mut stack = vec![(body, false, false)];
        while let Some((id, masked, protected)) = stack.pop() {
            pos[id] = order.len();
            order.push(id);
            let mut masked = masked;
            let mut protected = protected;
            match &dom.node(id).data {
                NodeData::Element(e) => {
                    let hint = {
                        let mut h = e.attr("class").unwrap_or("").to_lowercase();
                        h.push(' ');
                        h.push_str(&e.attr("id").unwrap_or("").to_lowercase());
                        h
                    };
                    let name = &*e.name;
                    if id != body && (never_content(name) || is_hidden(e)) {
                        masked = true;
                    }
                    if masked {
                        base_mask[id] = true;
                    } else if id != body
                        && name != "a"
                        && !protected
                        && (e.attr("role").is_some_and(furniture_role)
                            || (any_in(&hint, UNLIKELY) && !any_in(&hint, MAYBE)))
                    {
                        unlikely[id] = true;
                    }
                    if matches!(name, "table" | "code" | "pre") {
                        protected = true;
                    }
                    hints[id] = hint;
                }
                NodeData::Text(_) => {
                    if masked {
                        base_mask[id] = true;
                    }
                }
                _ => {
                    base_mask[id] = true;
                }
            }
            let before = stack.len();
            stack.extend(dom.children(id).map(|c| (c, masked, protected)));
            stack[before..].reverse();
        }
        let mut end: Vec<usize> = (0..order.len()).collect();
        for (i, &n) in order.iter().enumerate().rev() {
            if n != body
                && let Some(p) = dom.parent(n)
            {
                let pi = pos[p];
                end[pi] = end[pi].max(end[i]);
            }
        }
        Page {
            dom,
            body,
            order,
            pos,
            end,
            base_mask,
            unlikely,
            hints,
        }
    }

    fn name(&self, n: NodeId) -> &str {
        self.dom.element(n).map_or("", |e| &*e.name)
    }

    /// Texts of the page's `<h1>` and `<h2>` headings (for title cleaning).
    fn headings(&self) -> Vec<String> {
        self.order
            .iter()
            .filter(|&&n| !self.base_mask[n] && matches!(self.name(n), "h1" | "h2"))
            .map(|&n| self.dom.text_content(n))
            .filter(|t| !t.is_empty())
            .take(32)
            .collect()
    }

    /// The weight of an element's class/id hints.
    fn class_weight(&self, n: NodeId) -> f32 {
        let e = self.dom.element(n);
        let mut w = 0.0;
        for attr in ["class", "id"] {
            let Some(v) = e.and_then(|e| e.attr(attr)) else {
                continue;
            };
            let v = v.to_lowercase();
            if any_in(&v, NEGATIVE) || has_word(&v, "hid") {
                w -= CLASS_WEIGHT;
            }
            if any_in(&v, POSITIVE) {
                w += CLASS_WEIGHT;
            }
        }
        w
    }

    /// Statistics of every body node under `mask`, children before
    /// parents (reverse pre-order), so one pass sums every subtree.
    fn stats(&self, mask: &[bool]) -> Vec<Stats> {
        let dom = self.dom;
        let mut stats = vec![Stats::default(); dom.len()];
        for &n in self.order.iter().rev() {
            // stats[n] holds the sum over n's children at this point.
            let own = match &dom.node(n).data {
                NodeData::Text(t) if !mask[n] => {
                    let (chars, commas) = text_measure(t);
                    Stats {
                        chars,
                        commas,
                        ..Stats::default()
                    }
                }
                NodeData::Element(e) if mask[n] => Stats {
                    // Masked controls still count: a block full of inputs
                    // is a form even though the inputs are masked.
                    inputs: u32::from(matches!(
                        &*e.name,
                        "input" | "select" | "textarea" | "button"
                    )),
                    ..Stats::default()
                },
                NodeData::Element(e) => {
                    let mut s = stats[n];
                    match &*e.name {
                        "a" => {
                            let weight = if e.attr("href").is_some_and(|h| h.starts_with('#')) {
                                0.3
                            } else {
                                1.0
                            };
                            s.link_chars = s.chars as f32 * weight;
                        }
                        "p" => s.paras += 1,
                        "img" => s.imgs += 1,
                        "li" => s.items += 1,
                        "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => s.heading_chars = s.chars,
                        _ => {}
                    }
                    s
                }
                _ => Stats::default(),
            };
            stats[n] = own;
            if n != self.body
                && let Some(p) = dom.parent(n)
            {
                stats[p].add(&own);
            }
        }
        stats
    }

    /// True when element `n` has a block-level descendant under `mask`.
    fn block_descendants(&self, mask: &[bool]) -> Vec<bool> {
        let mut has = vec![false; self.dom.len()];
        for &n in self.order.iter().rev() {
            if mask[n] || n == self.body {
                continue;
            }
            let Some(p) = self.dom.parent(n) else {
                continue;
            };
            if self.dom.element(n).is_some_and(|e| is_block(&e.name)) || has[n] {
                has[p] = true;
            }
        }
        has
    }

    /// One extraction attempt (module doc, steps 1-3).
    fn attempt(&self, flags: Flags, title: &str) -> Attempt {
        let dom = self.dom;
        let mut mask = self.base_mask.clone();
        if flags.strip_unlikely {
            // An element masked as unlikely masks its subtree.
            for &n in &self.order {
                if !mask[n]
                    && let Some(p) = dom.parent(n)
                    && (self.unlikely[n] || (n != self.body && mask[p]))
                {
                    mask[n] = true;
                }
            }
        }
        // The byline element: taken out of the body (it is metadata) and
        // kept as a byline candidate.
        let byline = self.find_byline(&mut mask);
        // The first heading that repeats the title is the title, not body.
        if !title.is_empty() {
            let t = lowercase_words(title);
            if let Some(&h) = self.order.iter().find(|&&n| {
                !mask[n]
                    && matches!(self.name(n), "h1" | "h2")
                    && word_coverage(&t, &lowercase_words(&dom.text_content(n))) > 0.75
            }) {
                self.mask_subtree(h, &mut mask);
            }
        }

        let stats = self.stats(&mask);
        let has_block = self.block_descendants(&mask);
        let scores = self.score(&mask, &stats, &has_block, flags);
        let (top, roots) = self.choose(&mask, &stats, &has_block, &scores, flags);
        let mut stats = stats;
        self.clean(top, &roots, &mut mask, &mut stats, flags);
        let chars = roots.iter().map(|&r| stats[r].chars).sum();
        let prose = roots
            .iter()
            .flat_map(|&r| self.subtree(r).iter().copied())
            .filter(|&n| !mask[n] && self.name(n) == "p" && stats[n].chars >= PROSE_CHARS)
            .count();
        Attempt {
            roots,
            mask,
            chars,
            prose,
            byline,
        }
    }

    /// `n` and its descendants, in document order (empty outside the body).
    fn subtree(&self, n: NodeId) -> &[NodeId] {
        match self.pos.get(n) {
            Some(&i) if i != usize::MAX => &self.order[i..=self.end[i]],
            _ => &[],
        }
    }

    fn mask_subtree(&self, n: NodeId, mask: &mut [bool]) {
        for &d in self.subtree(n) {
            mask[d] = true;
        }
    }

    /// True when `d` is a proper descendant of `a`.
    fn is_descendant(&self, d: NodeId, a: NodeId) -> bool {
        let (pd, pa) = (self.pos[d], self.pos[a]);
        pd != usize::MAX && pa != usize::MAX && pa < pd && pd <= self.end[pa]
    }

    /// The first element marked as the author line (`rel=author`,
    /// `itemprop=author`, or a byline/author/dateline class) with short
    /// text. It is masked: a byline is metadata, not body. Its value is the
    /// name marked up inside it when there is one (a byline box often adds
    /// a date, a job title or share buttons around the name), and nothing
    /// for a dateline (a date, not a name).
    fn find_byline(&self, mask: &mut [bool]) -> Option<String> {
        let dom = self.dom;
        let marked_up = |e: &crate::page::dom::Element, name_too: bool| {
            e.attr("rel").is_some_and(|r| r.contains("author"))
                || e.attr("itemprop").is_some_and(|r| {
                    r.contains("author") || (name_too && r.split_whitespace().any(|w| w == "name"))
                })
        };
        for &n in &self.order {
            if mask[n] {
                continue;
            }
            let Some(e) = dom.element(n) else { continue };
            let h = &self.hints[n];
            let named = h.contains("byline") || h.contains("author") || h.contains("writtenby");
            let dateline = h.contains("dateline");
            let markup = marked_up(e, false);
            if !(markup || named || dateline) {
                continue;
            }
            if !self.text_shorter_than(n, mask, MAX_BYLINE_CHARS) {
                continue;
            }
            let text = dom.text_content(n);
            if text.is_empty() {
                continue;
            }
            let inner = self.subtree(n)[1..]
                .iter()
                .copied()
                .find(|&d| !mask[d] && dom.element(d).is_some_and(|e| marked_up(e, true)))
                .map(|d| dom.text_content(d))
                .filter(|t| !t.is_empty());
            self.mask_subtree(n, mask);
            if dateline && !named && !markup {
                return None;
            }
            return Some(inner.unwrap_or(text));
        }
        None
    }

    /// True when the unmasked text of `n` is shorter than `limit`
    /// characters; stops reading at the limit, so testing a page-sized
    /// element costs no more than testing a line.
    fn text_shorter_than(&self, n: NodeId, mask: &[bool], limit: u32) -> bool {
        let mut chars = 0u32;
        for &d in self.subtree(n) {
            if let NodeData::Text(t) = &self.dom.node(d).data
                && !mask[d]
            {
                chars += text_measure(t).0;
                if chars >= limit {
                    return false;
                }
            }
        }
        true
    }

    /// Content scores of candidate ancestors (module doc, step 2), already
    /// scaled by link density; zero for nodes never scored.
    fn score(&self, mask: &[bool], stats: &[Stats], has_block: &[bool], flags: Flags) -> Vec<f32> {
        let dom = self.dom;
        let mut raw: Vec<Option<f32>> = vec![None; dom.len()];
        let give = |raw: &mut Vec<Option<f32>>, anchor: NodeId, score: f32| {
            let mut cur = Some(anchor);
            for level in 0..ANCESTOR_LEVELS {
                let Some(a) = cur else { break };
                if dom.element(a).is_none() {
                    break;
                }
                let slot = raw[a].get_or_insert_with(|| {
                    self.prior(a)
                        + if flags.weigh_classes {
                            self.class_weight(a)
                        } else {
                            0.0
                        }
                });
                let divider = match level {
                    0 => 1.0,
                    1 => 2.0,
                    l => l as f32 * 3.0,
                };
                *slot += score / divider;
                if a == self.body {
                    break;
                }
                cur = dom.parent(a);
            }
        };
        let unit_score =
            |chars: u32, commas: u32| 1.0 + commas as f32 + (chars / 100).min(3) as f32;
        for &n in &self.order {
            if mask[n] {
                continue;
            }
            let Some(e) = dom.element(n) else { continue };
            let name = &*e.name;
            let paragraph_like = matches!(name, "p" | "pre")
                || (name == "td" && !has_block[n])
                || (is_container(name) && !has_block[n]);
            // A <section> is scored as one unit as well (its whole text):
            // a page made of sections gives the element holding them
            // weight even when each section's paragraphs are short.
            // Headings count like a paragraph when long.
            if matches!(name, "section" | "h2" | "h3" | "h4" | "h5" | "h6")
                && has_block[n] == (name == "section")
            {
                let s = &stats[n];
                if s.chars >= MIN_PARAGRAPH_CHARS
                    && let Some(p) = dom.parent(n)
                {
                    give(&mut raw, p, unit_score(s.chars, s.commas));
                }
            }
            if paragraph_like {
                let s = &stats[n];
                if s.chars >= MIN_PARAGRAPH_CHARS
                    && let Some(p) = dom.parent(n)
                {
                    give(&mut raw, p, unit_score(s.chars, s.commas));
                }
            } else if is_container(name) || name == "td" || name == "body" {
                // Inline runs directly inside a container are paragraphs
                // without a <p> (text separated by <br>s).
                let mut run = Stats::default();
                let flush = |run: &mut Stats, raw: &mut Vec<Option<f32>>| {
                    if run.chars >= MIN_PARAGRAPH_CHARS {
                        give(raw, n, unit_score(run.chars, run.commas));
                    }
                    *run = Stats::default();
                };
                for c in dom.children(n) {
                    if mask[c] {
                        continue;
                    }
                    let block = dom.element(c).is_some_and(|e| is_block(&e.name));
                    if block {
                        flush(&mut run, &mut raw);
                    } else {
                        run.add(&stats[c]);
                    }
                }
                flush(&mut run, &mut raw);
            }
        }
        raw.iter()
            .enumerate()
            .map(|(n, s)| s.map_or(0.0, |s| s * (1.0 - stats[n].link_density())))
            .collect()
    }

    /// The tag prior of a candidate: generic containers and prose blocks
    /// up, lists and form parts slightly down, headings down (a heading's
    /// parent is more often a teaser than the article).
    fn prior(&self, n: NodeId) -> f32 {
        match self.name(n) {
            "div" | "article" | "main" | "section" => 5.0,
            "pre" | "td" | "blockquote" => 3.0,
            "address" | "ol" | "ul" | "dl" | "dd" | "dt" | "li" | "form" => -3.0,
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "th" => -5.0,
            _ => 0.0,
        }
    }

    /// The chosen blocks: the best candidate, possibly widened, and the
    /// siblings that belong with it.
    #[expect(
        clippy::too_many_lines,
        reason = "the candidate choice step by step as docs/algorithms.md gives it"
    )]
    fn choose(
        &self,
        mask: &[bool],
        stats: &[Stats],
        has_block: &[bool],
        scores: &[f32],
        flags: Flags,
    ) -> (NodeId, Vec<NodeId>) {
        let dom = self.dom;
        let mut ranked: Vec<NodeId> = self
            .order
            .iter()
            .copied()
            .filter(|&n| scores[n] != 0.0 && !mask[n] && dom.element(n).is_some())
            .collect();
        ranked.sort_by(|&a, &b| {
            scores[b]
                .total_cmp(&scores[a])
                .then(self.pos[a].cmp(&self.pos[b]))
        });
        let Some(&first) = ranked.first() else {
            return (self.body, vec![self.body]);
        };
        if first == self.body {
            return (self.body, vec![self.body]);
        }
        let mut top = first;
        // A node no paragraph reached scores its prior.
        let score_of = |n: NodeId| {
            if scores[n] != 0.0 {
                scores[n]
            } else {
                self.prior(n)
                    + if flags.weigh_classes {
                        self.class_weight(n)
                    } else {
                        0.0
                    }
            }
        };

        // Runners-up within 75% of the best that share an ancestor with it
        // are parts of one article split into sections: take the ancestor
        // they share when at least three do.
        let alternatives: Vec<NodeId> = ranked
            .iter()
            .skip(1)
            .take(4)
            .copied()
            .filter(|&c| score_of(c) >= 0.75 * score_of(top))
            .collect();
        if alternatives.len() >= 3 {
            let mut p = dom.parent(top);
            while let Some(a) = p {
                if a == self.body {
                    break;
                }
                let sharing = alternatives
                    .iter()
                    .filter(|&&c| self.is_descendant(c, a))
                    .count();
                if sharing >= 3 {
                    top = a;
                    break;
                }
                p = dom.parent(a);
            }
        }

        // Climb while the parent scores better: the article may be split
        // over several children of the parent.
        let mut last = score_of(top);
        let threshold = last / 3.0;
        let mut p = dom.parent(top);
        while let Some(a) = p {
            if a == self.body {
                break;
            }
            let s = scores[a];
            if s == 0.0 {
                p = dom.parent(a);
                continue;
            }
            if s < threshold {
                break;
            }
            if s > last {
                top = a;
                break;
            }
            last = s;
            p = dom.parent(a);
        }
        // A lone child is its parent's whole content: take the parent.
        while let Some(a) = dom.parent(top) {
            if a == self.body {
                break;
            }
            let elements = dom
                .children(a)
                .filter(|&c| !mask[c] && dom.element(c).is_some())
                .count();
            if elements != 1 {
                break;
            }
            top = a;
        }

        // Siblings.
        let Some(parent) = dom.parent(top) else {
            return (top, vec![top]);
        };
        let top_score = score_of(top);
        let threshold = (top_score * 0.2).max(10.0);
        let top_class = dom.element(top).and_then(|e| e.attr("class")).unwrap_or("");
        let mut roots = Vec::new();
        for s in dom.children(parent) {
            if mask[s] || dom.element(s).is_none() {
                continue;
            }
            if s == top {
                roots.push(s);
                continue;
            }
            let class = dom.element(s).and_then(|e| e.attr("class")).unwrap_or("");
            // Siblings of the same kind as the best candidate (same base
            // class, the first class word by the usual `base modifier`
            // convention) are likely more parts of the article.
            let same_kind = class
                .split_whitespace()
                .next()
                .is_some_and(|c| top_class.split_whitespace().next() == Some(c));
            let bonus = if flags.weigh_classes && same_kind {
                top_score * 0.2
            } else {
                0.0
            };
            let scored = scores[s] != 0.0 && scores[s] + bonus >= threshold;
            // A paragraph, or a container with only inline content (the
            // same thing written as a <div>, like many standfirsts), joins
            // when it reads as prose: long with few links, or a short
            // sentence without links.
            let paragraph = self.name(s) == "p" || (is_container(self.name(s)) && !has_block[s]);
            let prose = paragraph && {
                let st = &stats[s];
                let ld = st.link_density();
                if st.chars > 80 {
                    ld < 0.25
                } else {
                    st.chars > 0 && ld == 0.0 && ends_sentence(&dom.text_content(s))
                }
            };
            if scored || prose {
                roots.push(s);
            }
        }
        (top, roots)
    }

    /// Masks boilerplate inside the chosen blocks (module doc, step 3).
    /// `top` (the best candidate) is never masked itself; its siblings in
    /// `roots` may be.
    fn clean(
        &self,
        top: NodeId,
        roots: &[NodeId],
        mask: &mut [bool],
        stats: &mut [Stats],
        flags: Flags,
    ) {
        let dom = self.dom;
        let nodes: Vec<NodeId> = roots
            .iter()
            .flat_map(|&r| self.subtree(r).iter().copied())
            .collect();
        // Data tables, what lies inside one (or inside code), and what holds
        // one: all kept. Computed once: cleaning never masks a data table.
        let mut keep = vec![false; dom.len()];
        let mut holds = vec![false; dom.len()];
        let mut data = vec![false; dom.len()];
        for &n in &nodes {
            if !mask[n] && self.name(n) == "table" && self.is_data_table(n, mask) {
                data[n] = true;
            }
        }
        for &n in &nodes {
            if let Some(p) = dom.parent(n)
                && !roots.contains(&n)
                && (keep[p] || data[p] || matches!(self.name(p), "code" | "pre"))
            {
                keep[n] = true;
            }
        }
        for &n in nodes.iter().rev() {
            if let Some(p) = dom.parent(n)
                && (holds[n] || data[n])
            {
                holds[p] = true;
            }
        }
        let remove = |n: NodeId, mask: &mut [bool], stats: &mut [Stats]| {
            if mask[n] {
                return;
            }
            let s = stats[n];
            let mut cur = dom.parent(n);
            while let Some(a) = cur {
                stats[a].sub(&s);
                if a == self.body {
                    break;
                }
                cur = dom.parent(a);
            }
            self.mask_subtree(n, mask);
        };
        // Share widgets: small blocks named for sharing.
        for &n in &nodes {
            if mask[n] || roots.contains(&n) {
                continue;
            }
            let h = &self.hints[n];
            if h.contains("share") && stats[n].chars < MAX_SHARE_CHARS {
                remove(n, mask, stats);
            }
        }
        // Headings with negative hints are section labels of furniture
        // ("Related", "Comments").
        if flags.weigh_classes {
            for &n in &nodes {
                if !mask[n] && matches!(self.name(n), "h1" | "h2") && self.class_weight(n) < 0.0 {
                    remove(n, mask, stats);
                }
            }
        }
        // Ad slots and loaders the page labels as such.
        for &n in &nodes {
            if !mask[n] && n != top && stats[n].chars <= 20 && dom.element(n).is_some() {
                let text = dom.text_content(n);
                if is_placeholder_label(&text) {
                    remove(n, mask, stats);
                }
            }
        }
        if !flags.clean_conditionally {
            return;
        }
        // Conditional cleaning, innermost first so that a wrapper is judged
        // on what is left inside it.
        for &n in nodes.iter().rev() {
            if mask[n] || n == top || keep[n] || data[n] || holds[n] {
                continue;
            }
            let name = self.name(n);
            if matches!(
                name,
                "form" | "fieldset" | "table" | "ul" | "ol" | "div" | "section"
            ) && self.should_clean(n, name, stats, flags)
            {
                remove(n, mask, stats);
            }
        }
    }

    /// The conditional-cleaning test for one block. Each clause is a kind of
    /// furniture that looks like content to the scorer:
    /// - a negative class hint;
    /// - unless the block has ten commas or more (prose), then:
    ///   - an image gallery (more images than twice the paragraphs),
    ///   - a form (inputs beyond a third of the paragraphs),
    ///   - a short block that is not a heading and has no or many images
    ///     (labels, buttons, counters),
    ///   - a link farm (link density above 0.2, 0.5 with a positive hint),
    ///   - an embed with little text.
    fn should_clean(&self, n: NodeId, name: &str, stats: &[Stats], flags: Flags) -> bool {
        let weight = if flags.weigh_classes {
            self.class_weight(n)
        } else {
            0.0
        };
        if weight < 0.0 {
            return true;
        }
        let s = &stats[n];
        if s.commas >= 10 {
            return false;
        }
        let is_list = matches!(name, "ul" | "ol") || {
            // A wrapper that is almost all list is judged as a list.
            let mut list_chars = 0u32;
            let range = self.subtree(n);
            let mut i = 1;
            while i < range.len() {
                let d = range[i];
                if matches!(self.name(d), "ul" | "ol") {
                    list_chars += stats[d].chars;
                    // Nested lists are inside this one's count.
                    i = self.end[self.pos[d]] - self.pos[n] + 1;
                } else {
                    i += 1;
                }
            }
            s.chars > 0 && list_chars as f32 / s.chars as f32 > 0.9
        };
        let in_figure = self.has_ancestor(n, "figure");
        let paras = s.paras as f32;
        let imgs = s.imgs as f32;
        let heading_density = if s.chars == 0 {
            0.0
        } else {
            s.heading_chars as f32 / s.chars as f32
        };
        let ld = s.link_density();
        (!in_figure && s.imgs > 1 && paras / imgs < 0.5)
            || (!is_list && s.items as f32 > paras + 100.0)
            || (s.inputs as f32 > (paras / 3.0).floor())
            || (!is_list
                && !in_figure
                && heading_density < 0.9
                && s.chars < MIN_PARAGRAPH_CHARS
                && (s.imgs == 0 || s.imgs > 2)
                && ld > 0.0)
            || (!is_list && weight < CLASS_WEIGHT && ld > 0.2)
            || (weight >= CLASS_WEIGHT && ld > 0.5)
            || ((s.embeds == 1 && s.chars < 75) || s.embeds > 1)
    }

    fn has_ancestor(&self, n: NodeId, name: &str) -> bool {
        let mut cur = self.dom.parent(n);
        while let Some(a) = cur {
            if self.name(a) == name {
                return true;
            }
            if a == self.body {
                break;
            }
            cur = self.dom.parent(a);
        }
        false
    }

    /// A table of data (kept) rather than of layout: declared by its
    /// markup (caption, header cells, summary) or big enough that no layout
    /// needs it; `role=presentation` and nested tables are layout.
    fn is_data_table(&self, t: NodeId, mask: &[bool]) -> bool {
        let dom = self.dom;
        let Some(e) = dom.element(t) else {
            return false;
        };
        if e.attr("role") == Some("presentation") || e.attr("datatable") == Some("0") {
            return false;
        }
        if e.attr("summary").is_some() {
            return true;
        }
        let start = self.pos[t];
        let mut rows = 0usize;
        let mut cells = 0usize;
        let mut max_cols = 0usize;
        let mut cols = 0usize;
        for &d in &self.order[start + 1..] {
            if !self.is_descendant(d, t) {
                break;
            }
            if mask[d] {
                continue;
            }
            match self.name(d) {
                "caption" | "thead" | "tfoot" | "colgroup" | "col" | "th" => return true,
                "table" => return false,
                "tr" => {
                    rows += 1;
                    max_cols = max_cols.max(cols);
                    cols = 0;
                }
                "td" => {
                    cells += 1;
                    cols += 1;
                }
                _ => {}
            }
        }
        max_cols = max_cols.max(cols);
        rows >= 10 || max_cols > 4 || cells > 10
    }

    /// A date from the markup of the chosen blocks or the page:
    /// `itemprop=datePublished`, then the first `<time datetime>`.
    fn dom_date(&self, roots: &[NodeId]) -> Option<String> {
        let dom = self.dom;
        let mut first_time: Option<String> = None;
        let mut first_inside: Option<String> = None;
        for &n in &self.order {
            let Some(e) = dom.element(n) else { continue };
            if e.attr("itemprop")
                .is_some_and(|p| p.contains("datePublished"))
            {
                let v = e
                    .attr("datetime")
                    .or_else(|| e.attr("content"))
                    .map(collapse_whitespace)
                    .unwrap_or_else(|| dom.text_content(n));
                if !v.is_empty() {
                    return Some(v);
                }
            }
            if &*e.name == "time"
                && let Some(d) = e
                    .attr("datetime")
                    .map(collapse_whitespace)
                    .filter(|d| !d.is_empty())
            {
                let inside = roots.iter().any(|&r| r == n || self.is_descendant(n, r));
                if inside && first_inside.is_none() {
                    first_inside = Some(d.clone());
                }
                first_time.get_or_insert(d);
            }
        }
        // A time inside the article is its own; elsewhere it may date a
        // teaser, so it comes second.
        first_inside.or(first_time)
    }

    /// Reis et al.'s title rule (docs/algorithms.md, "Labelling title and
    /// body"): among the text passages
    /// before the body, the one of 1..20 words whose words overlap the
    /// body's most, divided by its distance (in passages) from the body.
    fn passage_title(&self, best: &Attempt, paragraphs: &[String]) -> Option<String> {
        let &first = best.roots.first()?;
        let start = self.pos[first];
        if start == usize::MAX || best.roots == [self.body] {
            return None;
        }
        let body_words: FxHashSet<String> = paragraphs.iter().flat_map(|p| words(p)).collect();
        // Passages: the text of block elements with no block children,
        // before the body, nearest first.
        let has_block = self.block_descendants(&self.base_mask);
        let mut best_passage: Option<(f32, String)> = None;
        let mut distance = 0usize;
        for &n in self.order[..start].iter().rev() {
            if self.base_mask[n] || has_block[n] {
                continue;
            }
            let Some(e) = self.dom.element(n) else {
                continue;
            };
            if !is_block(&e.name) {
                continue;
            }
            let text = self.dom.text_content(n);
            let w = words(&text);
            if w.is_empty() {
                continue;
            }
            distance += 1;
            if w.len() > 20 {
                continue;
            }
            let overlap =
                w.iter().filter(|x| body_words.contains(*x)).count() as f32 / w.len() as f32;
            let score = overlap / distance as f32;
            if score > 0.0 && best_passage.as_ref().is_none_or(|(s, _)| score > *s) {
                best_passage = Some((score, text));
            }
        }
        best_passage.map(|(_, t)| t)
    }

    // -----------------------------------------------------------------------
    // Paragraphs

    /// The body paragraphs of `roots` under `mask` (module doc, step 4).
    fn paragraphs(&self, roots: &[NodeId], mask: &[bool]) -> Vec<String> {
        let mut out = Paragraphs::default();
        for &r in roots {
            self.walk(r, mask, &mut out);
            out.flush();
        }
        out.done
    }

    fn walk(&self, n: NodeId, mask: &[bool], out: &mut Paragraphs) {
        let dom = self.dom;
        if mask[n] && n != self.body {
            return;
        }
        match &dom.node(n).data {
            NodeData::Text(t) => out.text(t),
            NodeData::Element(e) => {
                let name = &*e.name;
                match name {
                    "br" => {
                        // `<br><br>` (whitespace between allowed) ends a
                        // paragraph; a single `<br>` is a line break inside
                        // one.
                        let next_is_br = {
                            let mut s = dom.node(n).next_sibling;
                            loop {
                                match s {
                                    Some(x) => match &dom.node(x).data {
                                        NodeData::Text(t) if t.trim().is_empty() => {
                                            s = dom.node(x).next_sibling
                                        }
                                        NodeData::Element(e) if &*e.name == "br" => break true,
                                        _ => break false,
                                    },
                                    None => break false,
                                }
                            }
                        };
                        let prev_is_br = dom.node(n).prev_sibling.is_some_and(|mut x| {
                            loop {
                                match &dom.node(x).data {
                                    NodeData::Text(t) if t.trim().is_empty() => {
                                        match dom.node(x).prev_sibling {
                                            Some(p) => x = p,
                                            None => break false,
                                        }
                                    }
                                    NodeData::Element(e) => break &*e.name == "br",
                                    _ => break false,
                                }
                            }
                        });
                        if next_is_br || prev_is_br {
                            out.flush();
                        } else {
                            out.space();
                        }
                    }
                    "td" | "th" if !self.has_block_child(n, mask) => {
                        // A cell of a row: cells join one paragraph per row.
                        if !out.cur.is_empty() {
                            out.cur.push_str(" |");
                            out.pending_space = true;
                        }
                        self.children_walk(n, mask, out);
                        out.space();
                    }
                    _ if is_block(name) => {
                        out.flush();
                        self.children_walk(n, mask, out);
                        out.flush();
                    }
                    _ => self.children_walk(n, mask, out),
                }
            }
            _ => {}
        }
    }

    fn children_walk(&self, n: NodeId, mask: &[bool], out: &mut Paragraphs) {
        for c in self.dom.children(n) {
            self.walk(c, mask, out);
        }
    }

    fn has_block_child(&self, n: NodeId, mask: &[bool]) -> bool {
        self.dom
            .children(n)
            .any(|c| !mask[c] && self.dom.element(c).is_some_and(|e| is_block(&e.name)))
    }
}

/// Generic containers that stand for a paragraph when they hold only
/// inline content (pages that write prose in `<div>`s).
fn is_container(name: &str) -> bool {
    matches!(name, "div" | "section" | "article" | "main" | "center")
}

/// The whole text of an ad slot's label or of a loading placeholder, in the
/// languages of the sites such labels are common on. Matched on a block's
/// entire text only, so prose that mentions advertising is untouched.
fn is_placeholder_label(text: &str) -> bool {
    let t = text.trim().trim_end_matches(['.', '…', ':']).to_lowercase();
    matches!(
        t.as_str(),
        "ad" | "ads"
            | "advert"
            | "advertising"
            | "advertisement"
            | "sponsored"
            | "anzeige"
            | "werbung"
            | "publicité"
            | "publicidad"
            | "pubblicità"
            | "anuncio"
            | "реклама"
            | "广告"
            | "広告"
            | "loading"
            | "chargement"
            | "cargando"
            | "wird geladen"
            | "正在加载"
    )
}

/// Ends like a sentence: a full stop followed by a space or the end.
fn ends_sentence(t: &str) -> bool {
    t.contains(". ") || t.trim_end().ends_with('.')
}

/// The paragraph builder.
#[derive(Default)]
struct Paragraphs {
    done: Vec<String>,
    cur: String,
    pending_space: bool,
}

impl Paragraphs {
    fn text(&mut self, t: &str) {
        if t.starts_with(char::is_whitespace) {
            self.pending_space = true;
        }
        for (i, w) in t.split_whitespace().enumerate() {
            if (i > 0 || self.pending_space) && !self.cur.is_empty() {
                self.cur.push(' ');
            }
            self.cur.push_str(w);
            self.pending_space = false;
        }
        if t.ends_with(char::is_whitespace) {
            self.pending_space = true;
        }
    }

    fn space(&mut self) {
        self.pending_space = true;
    }

    fn flush(&mut self) {
        let p = std::mem::take(&mut self.cur);
        let p = p.trim();
        if !p.is_empty() && !p.chars().all(|c| c == '|' || c.is_whitespace()) {
            self.done.push(p.trim_end_matches(" |").to_owned());
        }
        self.pending_space = false;
    }
}

// ---------------------------------------------------------------------------
// Text helpers

/// Lower case, punctuation to spaces, whitespace collapsed: the form two
/// titles are compared in.
fn lowercase_words(s: &str) -> String {
    let mapped: String = s
        .chars()
        .map(|c| {
            if c.is_alphanumeric() {
                c.to_lowercase().next().unwrap_or(c)
            } else {
                ' '
            }
        })
        .collect();
    collapse_whitespace(&mapped)
}

/// Lower-cased words of `s` (letters and digits).
fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Word-set overlap of two texts, `2 |A ∩ B| / (|A| + |B|)`: symmetric,
/// so a short text inside a long one does not count as the same text.
fn dice(a: &str, b: &str) -> f32 {
    let wa: FxHashSet<String> = words(a).into_iter().collect();
    let wb: FxHashSet<String> = words(b).into_iter().collect();
    if wa.is_empty() || wb.is_empty() {
        return 0.0;
    }
    2.0 * wa.intersection(&wb).count() as f32 / (wa.len() + wb.len()) as f32
}

/// How much of `b` ([`lowercase_words`]) is made of words of `a`: 1 minus the share
/// of `b`'s characters in words `a` lacks.
fn word_coverage(a: &str, b: &str) -> f32 {
    let ta: FxHashSet<&str> = a.split(' ').filter(|w| !w.is_empty()).collect();
    let tb: Vec<&str> = b.split(' ').filter(|w| !w.is_empty()).collect();
    if ta.is_empty() || tb.is_empty() {
        return 0.0;
    }
    let total: usize = tb.iter().map(|w| w.len()).sum::<usize>() + tb.len() - 1;
    let unique: Vec<&&str> = tb.iter().filter(|w| !ta.contains(**w)).collect();
    let missing: usize = if unique.is_empty() {
        0
    } else {
        unique.iter().map(|w| w.len()).sum::<usize>() + unique.len() - 1
    };
    1.0 - missing as f32 / total as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(html: &str) -> Article {
        extract(
            &Dom::parse(html),
            Some("https://www.dailyplanet.example/2024/05/tram"),
        )
    }

    const P1: &str = "The city council voted on Tuesday to extend the tram line to the harbour, \
        a decision that planners, residents and shopkeepers had argued about for years.";
    const P2: &str = "Supporters said the extension would cut car traffic in the old town, while \
        critics pointed to the cost, the noise and the loss of parking spaces.";
    const P3: &str = "Construction is due to start next spring and should last two years, \
        according to the transport department, which will publish a timetable in June.";
    const P4: &str = "The mayor, who had backed the plan since her election, called the vote \
        a turning point for the city and thanked the residents who took part.";

    /// A news page: masthead with navigation, the article (headline, byline
    /// box, paragraphs, a subheading, a list, a share bar), a sidebar, a
    /// comment thread and a footer.
    fn news_page() -> String {
        format!(
            r#"<!DOCTYPE html><html><head>
            <title>Council extends the tram line | The Daily Planet</title>
            <meta name="author" content="Lois Lane">
            <meta property="article:published_time" content="2024-05-14T09:30:00Z">
            <meta property="og:site_name" content="The Daily Planet">
            <script>var tracking = "Council extends the tram line, says everyone";</script>
            </head><body>
            <header class="site-header"><a href="/">The Daily Planet</a>
              <nav><ul><li><a href="/news">News</a></li><li><a href="/sport">Sport</a></li>
              <li><a href="/weather">Weather</a></li></ul></nav></header>
            <div id="page"><div class="main-column">
              <article class="story">
                <h1>Council extends the tram line</h1>
                <div class="byline">By <a rel="author" href="/lois">Lois Lane</a>, May 14</div>
                <div class="story-body">
                  <p>{P1}</p>
                  <p>{P2}</p>
                  <h2>What happens next</h2>
                  <p>{P3}</p>
                  <ul><li>Harbour stop opens first.</li><li>Old town stops follow.</li></ul>
                  <p>{P4}</p>
                </div>
                <div class="share-tools"><a href="https://twitter.example/share">Share on
                  Twitter</a> <a href="https://facebook.example/share">Share on Facebook</a></div>
              </article>
              <section class="comments">
                <h3>Comments (2)</h3>
                <div class="comment"><p>I have waited for this tram for ten years, and I will
                  believe it when I see it, frankly, given how these things usually go.</p></div>
                <div class="comment"><p>Another waste of money, as usual, when the buses are
                  late every day, the roads are broken and nobody listens to us.</p></div>
              </section>
            </div>
            <aside class="sidebar"><h3>Most read</h3><ul>
              <li><a href="/a">Storm closes the harbour road for the second time this week</a></li>
              <li><a href="/b">Local bakery wins national prize for its rye bread</a></li></ul></aside>
            </div>
            <footer><p>Copyright The Daily Planet, all rights reserved, since 1938.</p>
              <a href="/privacy">Privacy</a></footer>
            </body></html>"#
        )
    }

    #[test]
    fn keeps_only_the_article_body_split_into_paragraphs() {
        let a = run(&news_page());
        assert_eq!(
            a.paragraphs,
            vec![
                P1.to_owned(),
                P2.to_owned(),
                "What happens next".to_owned(),
                P3.to_owned(),
                "Harbour stop opens first.".to_owned(),
                "Old town stops follow.".to_owned(),
                P4.to_owned(),
            ]
        );
        assert_eq!(a.body(), a.paragraphs.join("\n\n"));
    }

    #[test]
    fn news_page_metadata_comes_from_meta_tags_and_title() {
        let a = run(&news_page());
        // No og:title: <title> without the site name (the h1 matches).
        assert_eq!(a.title.as_deref(), Some("Council extends the tram line"));
        assert_eq!(a.byline.as_deref(), Some("Lois Lane"));
        assert_eq!(a.date.as_deref(), Some("2024-05-14T09:30:00Z"));
        assert_eq!(
            a.xpath.as_deref(),
            Some("/body[1]/div[1]/div[1]/article[1]/div[2]")
        );
    }

    #[test]
    fn byline_box_is_metadata_not_body() {
        // Without meta author, the byline comes from the byline box (the
        // name marked up in it), and the box stays out of the body.
        let page = news_page().replace(r#"<meta name="author" content="Lois Lane">"#, "");
        let a = run(&page);
        assert_eq!(a.byline.as_deref(), Some("Lois Lane"));
        assert!(!a.body().contains("May 14"), "{}", a.body());
    }

    #[test]
    fn json_ld_comes_before_meta_tags() {
        let page = news_page().replace(
            "</head>",
            r#"<script type="application/ld+json">
            {"@context": "https://schema.org", "@graph": [
              {"@type": "WebSite", "name": "The Daily Planet"},
              {"@type": "NewsArticle", "headline": "Tram line to reach the harbour",
               "author": [{"@type": "Person", "name": "Lois Lane"},
                          {"@type": "Person", "name": "Clark Kent"}],
               "datePublished": "2024-05-14T08:00:00+01:00"}]}
            </script></head>"#,
        );
        let a = run(&page);
        assert_eq!(a.title.as_deref(), Some("Tram line to reach the harbour"));
        assert_eq!(a.byline.as_deref(), Some("Lois Lane, Clark Kent"));
        assert_eq!(a.date.as_deref(), Some("2024-05-14T08:00:00+01:00"));
    }

    #[test]
    fn declared_sharing_title_is_taken_as_written() {
        let page = news_page().replace(
            "</head>",
            r#"<meta property="og:title" content="Tram line: council says yes"></head>"#,
        );
        assert_eq!(
            run(&page).title.as_deref(),
            Some("Tram line: council says yes")
        );
    }

    #[test]
    fn title_element_loses_the_site_name() {
        let headings = vec!["Council extends the tram line".to_owned()];
        // A heading equal to one side decides.
        assert_eq!(
            clean_title(
                "Council extends the tram line - Daily Planet",
                &headings,
                None,
                None
            ),
            "Council extends the tram line"
        );
        assert_eq!(
            clean_title(
                "Daily Planet | Council extends the tram line",
                &headings,
                None,
                None
            ),
            "Council extends the tram line"
        );
        // The declared site name decides, even for a short headline.
        assert_eq!(
            clean_title(
                "Tram vote – The Daily Planet",
                &[],
                Some("The Daily Planet"),
                None
            ),
            "Tram vote"
        );
        // So does the host name.
        assert_eq!(
            clean_title(
                "Tram vote · DailyPlanet",
                &[],
                None,
                Some("dailyplanet.example")
            ),
            "Tram vote"
        );
        // Else the site name is taken to come last when three words remain.
        assert_eq!(
            clean_title("Why the tram matters | Opinion | Planet", &[], None, None),
            "Why the tram matters | Opinion"
        );
        // A short title with nothing to go by is left alone, and so are
        // colons and unspaced hyphens, which belong to headlines.
        assert_eq!(
            clean_title("Tram - Planet", &[], None, None),
            "Tram - Planet"
        );
        assert_eq!(
            clean_title("Re-zoning: the tram's next step", &[], None, None),
            "Re-zoning: the tram's next step"
        );
    }

    #[test]
    fn double_br_splits_a_paragraph_and_single_br_does_not() {
        let text = format!("<div class='post'>{P1}<br>{P2}<br> <br>{P3}<br><br><br>{P4}</div>");
        let a = run(&format!(
            "<html><body><div id='x'>{text}</div></body></html>"
        ));
        assert_eq!(
            a.paragraphs,
            vec![format!("{P1} {P2}"), P3.to_owned(), P4.to_owned()]
        );
    }

    #[test]
    fn hidden_text_scripts_and_forms_stay_out() {
        let page = format!(
            "<html><body><div class='entry'><p>{P1}</p><p hidden>Secret draft.</p>\
             <p style='display: none'>Also hidden.</p><p>{P2}</p>\
             <script>document.write('no')</script><noscript>Enable scripts</noscript>\
             <button>Subscribe now</button><div class='slot'>Advertisement</div>\
             <p>{P3}</p><div>Loading…</div></div></body></html>"
        );
        assert_eq!(
            run(&page).paragraphs,
            vec![P1.to_owned(), P2.to_owned(), P3.to_owned()]
        );
    }

    #[test]
    fn standfirst_written_as_a_div_joins_the_body() {
        // The standfirst is a sibling of the body block, a <div> holding
        // only text; a short link-only sibling does not join.
        let page = format!(
            "<html><body><div class='story'><div class='standfirst'>The tram is coming to the \
             harbour. The council said yes on Tuesday.</div><div class='tags'><a href='/t'>Trams</a>\
             </div><div class='body'><p>{P1}</p><p>{P2}</p><p>{P3}</p><p>{P4}</p></div></div>\
             </body></html>"
        );
        let a = run(&page);
        assert_eq!(
            a.paragraphs[0],
            "The tram is coming to the harbour. The council said yes on Tuesday."
        );
        assert_eq!(a.paragraphs.len(), 5, "{:?}", a.paragraphs);
        assert_eq!(a.xpath.as_deref(), Some("/body[1]/div[1]"));
    }

    #[test]
    fn data_tables_keep_their_rows() {
        let page = format!(
            "<html><body><article><p>{P1}</p><table><caption>Stops</caption>\
             <tr><th>Stop</th><th>Opens</th></tr><tr><td>Harbour</td><td>2025</td></tr>\
             </table><p>{P2}</p></article></body></html>"
        );
        assert_eq!(
            run(&page).paragraphs,
            vec![
                P1.to_owned(),
                "Stops".to_owned(),
                "Stop | Opens".to_owned(),
                "Harbour | 2025".to_owned(),
                P2.to_owned()
            ]
        );
    }

    #[test]
    fn passage_rule_of_seed_002_names_an_undeclared_page() {
        // No <title>, no meta, no h1: the short passage just before the
        // body that shares its words wins over the farther, unrelated one.
        let page = format!(
            "<html><body><div class='top'>Weather: sunny</div>\
             <div class='kicker'>Tram line extended to the harbour</div>\
             <div class='text'><p>{P1}</p><p>{P2}</p><p>{P3}</p><p>{P4}</p></div></body></html>"
        );
        assert_eq!(
            run(&page).title.as_deref(),
            Some("Tram line extended to the harbour")
        );
    }

    #[test]
    fn pages_without_content_give_an_empty_article() {
        for html in [
            "",
            "<html><body></body></html>",
            "<p>Hi</p>",
            "<frameset></frameset>",
        ] {
            let a = run(html);
            assert!(
                a.title.is_none() && a.byline.is_none() && a.date.is_none(),
                "{html}: {a:?}"
            );
            assert!(a.body().len() <= 2, "{html}: {a:?}");
        }
    }

    #[test]
    fn comment_thread_longer_than_the_article_does_not_win() {
        // Five long comments against three paragraphs: the comment class
        // and the thread's masking keep the article.
        let comments: String = (0..5)
            .map(|i| format!("<div class='comment'><p>Comment {i}: {P2} {P4}</p></div>"))
            .collect();
        let page = format!(
            "<html><body><div class='article-body'><p>{P1}</p><p>{P3}</p><p>{P4}</p></div>\
             <div id='comments'>{comments}</div></body></html>"
        );
        assert_eq!(
            run(&page).paragraphs,
            vec![P1.to_owned(), P3.to_owned(), P4.to_owned()]
        );
    }

    #[test]
    fn text_helpers() {
        assert_eq!(lowercase_words("  Héllo,  World! "), "héllo world");
        assert!((dice("New Zealand - Wikipedia", "New Zealand") - 0.8).abs() < 1e-6);
        assert!(word_coverage("new zealand wikipedia", "new zealand") > 0.99);
        assert_eq!(text_measure("a,  b\n c"), (6, 1));
        assert_eq!(
            parse_json_ld("<!--//<![CDATA[ {\"a\": 1} //]]>-->"),
            Some(serde_json::json!({"a": 1}))
        );
    }
}
