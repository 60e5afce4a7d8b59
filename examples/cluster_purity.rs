//! How well structural clustering separates sites: pages of many sites
//! mixed together, clustered at several thresholds, scored against the
//! site each page came from.
//!
//! ```sh
//! cargo run --release --example cluster_purity
//! ```
//!
//! Pages (the corpus ones are skipped with a message when
//! `../shared/corpus` is absent; `SEMCLIP_CORPUS` overrides the path):
//!
//! - `articles/readability/*/source.html`: the site is the host of the
//!   page's canonical or `og:url` link, else its `siteName` in
//!   `expected-metadata.json`, else the folder name without a trailing
//!   `-N` (`nytimes-3` -> `nytimes`). Readability's hand-written test
//!   fixtures (fewer than [`MIN_ELEMENTS`] elements, e.g. `rtl-1`,
//!   `replace-brs`) are left out: a few-node page has no template.
//! - `changes/web-monitoring-diff/versions/*`: two versions each of two
//!   government pages (energy.gov, fema.gov), by canonical host.
//! - `records/next-eval/html/*.html`: generated list pages, each its own
//!   site.
//! - four generated sites of eight versions each, made here: a news
//!   front page, a shop grid and a forum thread with different numbers of
//!   records, optional blocks and optional record fields; and the
//!   exchange quote page of `benches/quote_page.rs` with different market
//!   and row counts.
//!
//! Scores: *purity* (each cluster counted by its majority site: are
//! clusters single-site?), *inverse purity* (each site counted by its
//! largest cluster: does a site stay together?) and the clustering
//! F-measure (per site, the best F1 over clusters, weighted by site size).
//! Most corpus sites have one page, so purity alone would reward leaving
//! everything apart; inverse purity and F are driven by the sites with
//! several pages (nytimes, medium, wikipedia, the government pages, the
//! generated sites).
//!
//! The file is also included by `tests/it/templates.rs`, which reuses the
//! page loading and the scores.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use semclip::page::dom::Dom;
use semclip::template::cluster::{
    DEFAULT_THRESHOLD, DistanceMatrix, Linkage, MatrixOptions, PageFeatures, agglomerate,
};
use semclip::template::elcs::{self, Histogram};
use semclip::template::seq::{Interner, Sequence};
use semclip::template::tree::PageTree;

#[path = "../benches/quote_page.rs"]
#[allow(
    dead_code,
    reason = "shared with the benchmarks; only the revisions are used"
)]
mod quote_page;

/// A depth weighting `f(depth)`.
type DepthWeight = fn(u32) -> u32;

/// Pages with fewer elements than this are left out (hand-made fixtures).
pub const MIN_ELEMENTS: usize = 30;

/// One page with the site it belongs to.
#[derive(Debug, Clone)]
pub struct Labelled {
    /// Where it came from (a path, or `gen:site/version`).
    pub name: String,
    /// The site.
    pub site: String,
    /// The page.
    pub html: String,
}

/// `$SEMCLIP_CORPUS` or `../shared/corpus`, if present.
pub fn corpus_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("SEMCLIP_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"));
    dir.is_dir().then_some(dir)
}

fn read(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    let url = url::Url::from_file_path(path).ok();
    Some(semclip::page::source::decode(&bytes, None, url.as_ref()).text)
}

/// The host of the page's canonical or `og:url` link, without `www.`.
pub fn canonical_host(html: &str) -> Option<String> {
    let dom = Dom::parse(html);
    let mut found = None;
    walk(&dom, semclip::page::dom::DOCUMENT, &mut |dom, id| {
        let Some(e) = dom.element(id) else { return };
        let href = match &*e.name {
            "link"
                if e.attr("rel")
                    .is_some_and(|r| r.eq_ignore_ascii_case("canonical")) =>
            {
                e.attr("href")
            }
            "meta" if e.attr("property") == Some("og:url") => e.attr("content"),
            _ => None,
        };
        if found.is_none()
            && let Some(href) = href
        {
            let href = if href.starts_with("//") {
                format!("https:{href}")
            } else {
                href.to_owned()
            };
            if let Ok(u) = url::Url::parse(&href)
                && let Some(h) = u.host_str()
            {
                found = Some(h.trim_start_matches("www.").to_owned());
            }
        }
    });
    found
}

fn walk(
    dom: &Dom,
    id: semclip::page::dom::NodeId,
    f: &mut dyn FnMut(&Dom, semclip::page::dom::NodeId),
) {
    let mut stack = vec![id];
    while let Some(n) = stack.pop() {
        f(dom, n);
        let before = stack.len();
        stack.extend(dom.children(n));
        stack[before..].reverse();
    }
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// The labelled real pages of the corpus (see the module docs), tiny
/// fixtures included (filter with [`elements`]).
pub fn corpus_pages(corpus: &Path) -> Vec<Labelled> {
    let mut out = Vec::new();
    for dir in sorted_entries(&corpus.join("articles/readability")) {
        let Some(html) = read(&dir.join("source.html")) else {
            continue;
        };
        let folder = dir
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let site_name = std::fs::read_to_string(dir.join("expected-metadata.json"))
            .ok()
            .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
            .and_then(|v| {
                v.get("siteName")
                    .and_then(|s| s.as_str())
                    .map(str::to_owned)
            });
        let site = canonical_host(&html).or(site_name).unwrap_or_else(|| {
            let trimmed = folder.trim_end_matches(|c: char| c.is_ascii_digit());
            match trimmed.strip_suffix('-') {
                Some(stem) if trimmed.len() < folder.len() => stem.to_owned(),
                _ => folder.clone(),
            }
        });
        out.push(Labelled {
            name: format!("readability/{folder}"),
            site,
            html,
        });
    }
    for path in sorted_entries(&corpus.join("changes/web-monitoring-diff/versions")) {
        let Some(html) = read(&path) else { continue };
        let name = path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let site = canonical_host(&html).unwrap_or_else(|| name.clone());
        out.push(Labelled {
            name: format!("versions/{name}"),
            site,
            html,
        });
    }
    for path in sorted_entries(&corpus.join("records/next-eval/html")) {
        let Some(html) = read(&path) else { continue };
        let name = path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        out.push(Labelled {
            name: format!("next-eval/{name}"),
            site: format!("next-eval/{name}"),
            html,
        });
    }
    out
}

/// Number of elements of a page's simplified tree.
pub fn elements(html: &str) -> usize {
    PageTree::from_dom(&Dom::parse(html))
        .nodes
        .iter()
        .filter(|n| !n.is_text())
        .count()
}

/// A small deterministic generator (64-bit LCG, high bits).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % n.max(1) as u64) as usize
    }
    fn chance(&mut self, pct: usize) -> bool {
        self.below(100) < pct
    }
}

/// Version `v` of the generated site `site` (0 news, 1 shop, 2 forum).
pub fn generated_page(site: usize, v: usize) -> String {
    let mut r = Rng(0x9e37_79b9 ^ ((site as u64) << 32) ^ v as u64);
    let mut s = String::from("<!DOCTYPE html><html><head><title>t</title></head><body>");
    match site {
        0 => {
            s.push_str(
                "<div id=wrap><header><div class=logo><a href=/><img src=l.png></a></div><nav><ul>",
            );
            for i in 0..8 {
                let _ = write!(s, "<li><a href=/s{i}>Section {i}</a></li>");
            }
            s.push_str("</ul></nav></header>");
            if r.chance(30) {
                s.push_str("<div class=breaking><p>Breaking: something happened</p></div>");
            }
            s.push_str("<div class=cols><main><h1>Front page</h1>");
            for i in 0..5 + r.below(25) {
                let _ = write!(
                    s,
                    "<article class=story><h2><a href=/a{i}>Story {i}</a></h2>"
                );
                if r.chance(50) {
                    s.push_str("<figure><img src=x.jpg><figcaption>Photo</figcaption></figure>");
                }
                s.push_str("<p class=lead>The lead of the story.</p>");
                if r.chance(30) {
                    s.push_str("<p class=byline>By a reporter</p>");
                }
                s.push_str("<ul class=tags>");
                for t in 0..1 + r.below(4) {
                    let _ = write!(s, "<li><a href=/t{t}>tag</a></li>");
                }
                s.push_str("</ul></article>");
            }
            s.push_str("<div class=pager>");
            for p in 0..2 + r.below(8) {
                let _ = write!(s, "<a href=/p{p}>{p}</a>");
            }
            s.push_str("</div></main><aside><h3>Popular</h3><ol>");
            for i in 0..5 + r.below(6) {
                let _ = write!(s, "<li><a href=/pop{i}>Popular {i}</a></li>");
            }
            s.push_str("</ol>");
            if r.chance(50) {
                s.push_str("<div class=ad><a href=/ad><img src=ad.png></a></div>");
            }
            s.push_str("</aside></div><footer><p>(c) News</p><ul><li><a>About</a></li><li><a>Contact</a></li></ul></footer></div>");
        }
        1 => {
            s.push_str("<div class=top><a class=logo href=/>Shop</a><form><input name=q><select>");
            for o in 0..5 {
                let _ = write!(s, "<option>Category {o}</option>");
            }
            s.push_str("</select><button>Search</button></form></div>");
            s.push_str("<div class=crumbs><a href=/>Home</a> &gt; <a href=/c>Category</a></div>");
            s.push_str("<div class=page><div class=filters><h3>Brand</h3><ul>");
            for b in 0..3 + r.below(10) {
                let _ = write!(s, "<li><label><input type=checkbox>Brand {b}</label></li>");
            }
            s.push_str("</ul><h3>Price</h3><div class=range><input><input></div></div><div class=grid><table><tbody>");
            for row in 0..2 + r.below(9) {
                s.push_str("<tr>");
                for c in 0..3 {
                    let _ = write!(
                        s,
                        "<td><div class=item><a href=/i{row}{c}><img src=i.jpg></a><h4><a>Item</a></h4><div class=price>9.99</div>"
                    );
                    if r.chance(25) {
                        s.push_str("<div class=sale>-10%</div>");
                    }
                    s.push_str("</div></td>");
                }
                s.push_str("</tr>");
            }
            s.push_str("</tbody></table></div></div><footer><div class=links><a>Help</a><a>Returns</a></div></footer>");
        }
        _ => {
            s.push_str("<table class=layout><tr><td class=side><ul>");
            for i in 0..6 {
                let _ = write!(s, "<li><a href=/f{i}>Forum {i}</a></li>");
            }
            s.push_str("</ul></td><td class=main><h1>Thread title</h1><div class=thread>");
            for _ in 0..2 + r.below(24) {
                s.push_str("<div class=post><div class=author><img src=a.png><a href=/u>user</a><div class=joined>joined 2009</div></div><div class=body>");
                if r.chance(30) {
                    s.push_str("<blockquote><p>quoted</p></blockquote>");
                }
                for _ in 0..1 + r.below(3) {
                    s.push_str("<p>Some words of the post.</p>");
                }
                if r.chance(40) {
                    s.push_str("<div class=sig><hr><p>signature</p></div>");
                }
                s.push_str("</div></div>");
            }
            s.push_str("</div><form class=reply><textarea></textarea><input type=submit></form></td></tr></table>");
        }
    }
    s.push_str("</body></html>");
    s
}

/// The generated sites: 8 versions each of news, shop, forum and the
/// quote page.
pub fn generated_pages() -> Vec<Labelled> {
    let mut out = Vec::new();
    for (site, name) in ["gen-news", "gen-shop", "gen-forum"].iter().enumerate() {
        for v in 0..8 {
            out.push(Labelled {
                name: format!("gen:{name}/{v}"),
                site: (*name).to_owned(),
                html: generated_page(site, v),
            });
        }
    }
    for (v, (markets, rows)) in [
        (1, 10),
        (2, 15),
        (3, 8),
        (4, 30),
        (2, 40),
        (1, 5),
        (3, 3),
        (2, 22),
    ]
    .into_iter()
    .enumerate()
    {
        out.push(Labelled {
            name: format!("gen:quotes/{v}"),
            site: "gen-quotes".to_owned(),
            html: quote_page::quote_page_revision(markets, rows, v, 10),
        });
    }
    out
}

/// Builds the features of `pages` with one interner: interning in order,
/// collapsing and sketching in parallel.
pub fn features(pages: &[Labelled], interner: &mut Interner) -> Vec<PageFeatures> {
    use rayon::prelude::*;
    let trees: Vec<PageTree> = pages
        .par_iter()
        .map(|p| PageTree::from_dom(&Dom::parse(&p.html)))
        .collect();
    let seqs: Vec<Sequence> = trees
        .iter()
        .map(|t| Sequence::uncollapsed(t, interner))
        .collect();
    trees
        .par_iter()
        .zip(seqs)
        .map(|(t, s)| PageFeatures::of_sequence(t, s))
        .collect()
}

/// Clustering quality against the true sites.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scores {
    /// Share of pages in their cluster's majority site.
    pub purity: f64,
    /// Share of pages in their site's largest cluster.
    pub inverse_purity: f64,
    /// Clustering F-measure.
    pub f_measure: f64,
}

/// Scores `clusters` (page indices) against `sites` (one per page).
pub fn scores(sites: &[String], clusters: &[Vec<usize>]) -> Scores {
    let n: usize = clusters.iter().map(Vec::len).sum();
    if n == 0 {
        return Scores {
            purity: 1.0,
            inverse_purity: 1.0,
            f_measure: 1.0,
        };
    }
    // counts[(cluster, site)]
    let mut counts: HashMap<(usize, &str), usize> = HashMap::new();
    let mut site_size: HashMap<&str, usize> = HashMap::new();
    for (c, members) in clusters.iter().enumerate() {
        for &i in members {
            *counts.entry((c, sites[i].as_str())).or_default() += 1;
            *site_size.entry(sites[i].as_str()).or_default() += 1;
        }
    }
    let mut majority = vec![0usize; clusters.len()];
    let mut largest: HashMap<&str, usize> = HashMap::new();
    let mut best_f: HashMap<&str, f64> = HashMap::new();
    for (&(c, site), &k) in &counts {
        majority[c] = majority[c].max(k);
        let l = largest.entry(site).or_default();
        *l = (*l).max(k);
        let p = k as f64 / clusters[c].len() as f64;
        let r = k as f64 / site_size[site] as f64;
        let f = best_f.entry(site).or_default();
        *f = f.max(2.0 * p * r / (p + r));
    }
    Scores {
        purity: majority.iter().sum::<usize>() as f64 / n as f64,
        inverse_purity: largest.values().sum::<usize>() as f64 / n as f64,
        f_measure: best_f
            .iter()
            .map(|(site, f)| f * site_size[site] as f64)
            .sum::<f64>()
            / n as f64,
    }
}

/// The same pages with other token weights (`f(depth)`), for comparison.
fn reweighted(pages: &[PageFeatures], f: fn(u32) -> u32) -> Vec<PageFeatures> {
    pages
        .iter()
        .map(|p| {
            let mut q = p.clone();
            q.weights = p.sequence.depths.iter().map(|&d| f(d)).collect();
            q.histogram = Histogram::new(&q.sequence.tokens, &q.weights);
            q
        })
        .collect()
}

fn members(clusters: &[semclip::template::cluster::Cluster]) -> Vec<Vec<usize>> {
    clusters.iter().map(|c| c.members.clone()).collect()
}

#[allow(
    dead_code,
    clippy::too_many_lines,
    reason = "the integration tests include this file without main; the report's steps in order"
)]
fn main() {
    let mut pages = generated_pages();
    match corpus_dir() {
        Some(dir) => {
            let all = corpus_pages(&dir);
            let before = all.len();
            pages.extend(
                all.into_iter()
                    .filter(|p| elements(&p.html) >= MIN_ELEMENTS),
            );
            println!(
                "corpus: {} pages, {} hand-made fixtures under {MIN_ELEMENTS} elements left out",
                before,
                before - (pages.len() - 32)
            );
        }
        None => println!("corpus not found (set SEMCLIP_CORPUS): generated sites only"),
    }
    let sites: Vec<String> = pages.iter().map(|p| p.site.clone()).collect();
    let mut distinct: Vec<&String> = sites.iter().collect();
    distinct.sort();
    distinct.dedup();
    let multi = distinct
        .iter()
        .filter(|s| sites.iter().filter(|x| x == *s).count() > 1)
        .count();
    println!(
        "{} pages from {} sites ({} with more than one page)",
        pages.len(),
        distinct.len(),
        multi
    );
    let t = Instant::now();
    let mut interner = Interner::new();
    let feats = features(&pages, &mut interner);
    let tokens: usize = feats.iter().map(|f| f.sequence.len()).sum();
    println!(
        "features: {:.2} s ({} tokens after collapsing, {} distinct tag+depth)",
        t.elapsed().as_secs_f64(),
        tokens,
        interner.len()
    );
    let t = Instant::now();
    let exact = DistanceMatrix::new(&feats, &MatrixOptions::exact());
    println!(
        "exact matrix: {} pairs in {:.2} s\n",
        exact.exact,
        t.elapsed().as_secs_f64()
    );

    println!("f(depth) = 1/(1+depth), average linkage:");
    println!(
        "| threshold | clusters | purity | inverse purity | F-measure | pruned matrix: exact pairs | same clusters |"
    );
    println!("|---|---|---|---|---|---|---|");
    for k in 1..=9 {
        let th = k as f64 / 10.0;
        let clusters = members(&agglomerate(&exact, th, Linkage::Average));
        let s = scores(&sites, &clusters);
        let pruned = DistanceMatrix::new(&feats, &MatrixOptions::pruned(th));
        let same = members(&agglomerate(&pruned, th, Linkage::Average)) == clusters;
        println!(
            "| {th:.1}{} | {} | {:.3} | {:.3} | {:.3} | {} of {} | {} |",
            if th == DEFAULT_THRESHOLD {
                " (default)"
            } else {
                ""
            },
            clusters.len(),
            s.purity,
            s.inverse_purity,
            s.f_measure,
            pruned.exact,
            exact.exact,
            if same { "yes" } else { "no" }
        );
    }

    println!("\nF-measure by weighting and linkage:");
    println!("| f(depth) | linkage | 0.3 | 0.4 | 0.5 | 0.6 | 0.7 |");
    println!("|---|---|---|---|---|---|---|");
    let weightings: [(&str, DepthWeight); 3] = [
        ("1 (plain LCS)", |_| 1),
        ("1/(1+d)", elcs::weight),
        ("2^-d", |d| (elcs::WEIGHT_SCALE >> d.min(31)).max(1)),
    ];
    for (name, f) in weightings {
        let w = reweighted(&feats, f);
        let m = if name == "1/(1+d)" {
            exact.clone()
        } else {
            DistanceMatrix::new(&w, &MatrixOptions::exact())
        };
        for linkage in [Linkage::Average, Linkage::Complete, Linkage::Single] {
            let mut row = format!("| {name} | {linkage:?} |");
            for k in 3..=7 {
                let clusters = members(&agglomerate(&m, k as f64 / 10.0, linkage));
                let _ = write!(row, " {:.3} |", scores(&sites, &clusters).f_measure);
            }
            println!("{row}");
        }
    }

    // The sites with several pages at the default threshold.
    let clusters = members(&agglomerate(&exact, DEFAULT_THRESHOLD, Linkage::Average));
    println!("\nsites with several pages at threshold {DEFAULT_THRESHOLD}: pages -> cluster sizes");
    for site in distinct {
        let of: Vec<usize> = (0..pages.len()).filter(|&i| &sites[i] == site).collect();
        if of.len() < 2 {
            continue;
        }
        let mut sizes: Vec<String> = clusters
            .iter()
            .filter_map(|c| {
                let k = c.iter().filter(|&&i| &sites[i] == site).count();
                (k > 0).then(|| {
                    let others = c.len() - k;
                    if others > 0 {
                        format!("{k}(+{others} other)")
                    } else {
                        k.to_string()
                    }
                })
            })
            .collect();
        sizes.sort();
        println!("  {site}: {} -> {}", of.len(), sizes.join(" "));
    }
}
