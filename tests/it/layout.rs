//! Extract clips and layout monitoring through `semclip check` on file://
//! pages that the tests rewrite between checks: the extracted records are
//! part of the hierarchy (a threshold counts them), a redesign raises one
//! "layout changed" event naming the clip that lost its target, and data
//! changes or a second look at the redesigned page raise none.

use std::path::Path;

use semclip::store::Store;

use crate::daemon::{file_alerts, setup};
use crate::util::{describe, semclip};

/// The quote page before the redesign: a nav, a heading, a data table.
fn table_page(price: &str, extra_rows: usize) -> String {
    let mut rows = String::new();
    for i in 0..extra_rows {
        rows.push_str(&format!("<tr><td>T{i:02}</td><td>{}</td></tr>", 100 + i));
    }
    format!(
        "<!doctype html><html lang=en><head><title>Quotes</title></head><body>\
         <nav><a href=/>Home</a> <a href=/about>About</a></nav><h1>Market</h1>\
         <table><caption>Shares</caption><tr><th>Ticker</th><th>Last</th></tr>\
         <tr><td>GAZP</td><td>{price}</td></tr><tr><td>SBER</td><td>300,15</td></tr>{rows}\
         </table><footer><p>Prices in roubles.</p></footer></body></html>"
    )
}

/// The same data after a redesign: cards in a grid, a header menu, an aside.
fn card_page(price: &str) -> String {
    let card = |t: &str, p: &str| {
        format!(
            "<div class=card><h3><a href=/q/{t}>{t}</a></h3><div class=px><span>{p}</span></div></div>"
        )
    };
    format!(
        "<!doctype html><html lang=en><head><title>Quotes</title></head><body>\
         <header><div class=logo><img src=logo.png alt=Shop></div><ul class=menu>\
         <li><a href=/>Home</a></li><li><a href=/about>About</a></li><li><a href=/help>Help</a></li></ul></header>\
         <main><section class=grid>{}{}</section></main>\
         <aside><form><input name=q><button>Search</button></form></aside>\
         <footer><div><small>Prices in roubles.</small></div></footer></body></html>",
        card("GAZP", price),
        card("SBER", "300,15")
    )
}

fn write(path: &Path, body: &str) {
    std::fs::write(path, body).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

fn check(config: &Path) -> (i32, String) {
    let args = ["check", "--config", config.to_str().unwrap_or_default()];
    let out = semclip(&args, None);
    let code = out.status.code().unwrap_or(-1);
    assert!(code == 0 || code == 1, "{}", describe(&args, &out));
    (code, String::from_utf8_lossy(&out.stdout).into_owned())
}

fn layout_alerts(dir: &Path) -> Vec<serde_json::Value> {
    file_alerts(dir)
        .into_iter()
        .filter(|a| a["kind"] == "layout_changed")
        .collect()
}

#[test]
fn a_redesign_raises_one_layout_event_naming_the_lost_clip() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let dir = tmp.path();
    let page = dir.join("quotes.html");
    write(&page, &table_page("251,30", 0));
    let url = url::Url::from_file_path(&page).unwrap_or_else(|()| panic!("file url"));
    setup(
        dir,
        "",
        &[(
            "quotes",
            format!(
                "url: {url}\nschedule: {{every: 1h}}\n\
                 clips:\n  shares: {{xpath: \"//table[@label='Shares']\"}}\n\
                 layout: {{notify: [log]}}\n"
            ),
        )],
    );
    let config = dir.join("semclip.yaml");

    let (_, out) = check(&config);
    assert!(out.contains("first snapshot"), "{out}");
    // A data change and more rows: the structure is the same.
    write(&page, &table_page("268,40", 5));
    let (_, out) = check(&config);
    assert!(out.contains("GAZP"), "the data change is reported: {out}");
    assert!(layout_alerts(dir).is_empty(), "{:#?}", file_alerts(dir));

    // The redesign: one layout event, naming the clip and the drift.
    write(&page, &card_page("268,40"));
    let (code, out) = check(&config);
    assert_eq!(code, 1, "an alert is raised: {out}");
    let alerts = layout_alerts(dir);
    assert_eq!(alerts.len(), 1, "{alerts:#?}");
    let summary = alerts[0]["summary"].as_str().unwrap_or_default();
    assert!(summary.contains("layout changed"), "{summary}");
    assert!(summary.contains("shares"), "names the lost clip: {summary}");
    assert!(summary.contains("structure drifted"), "{summary}");

    // The same redesigned page again, then a data change on it: nothing new.
    let _ = check(&config);
    write(&page, &card_page("270,00"));
    let _ = check(&config);
    assert_eq!(layout_alerts(dir).len(), 1, "{:#?}", file_alerts(dir));

    // The event is in the change history (feeds, status page, API).
    let store = Store::open(&dir.join("state/semclip.db")).unwrap_or_else(|e| panic!("{e}"));
    let events = store
        .changes("quotes", None, 100)
        .unwrap_or_else(|e| panic!("{e}"));
    let layout: Vec<_> = events
        .iter()
        .filter(|e| e.change["kind"] == "layout")
        .collect();
    assert_eq!(layout.len(), 1, "{events:#?}");
    assert_eq!(layout[0].change["lost"], serde_json::json!(["shares"]));
    let drift = layout[0].change["drift"].as_f64().unwrap_or_default();
    assert!(drift > 0.5, "drift {drift}");
}

#[test]
fn an_extract_clip_is_part_of_the_hierarchy_and_thresholds_read_it() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let dir = tmp.path();
    let page = dir.join("quotes.html");
    write(&page, &table_page("251,30", 3));
    let url = url::Url::from_file_path(&page).unwrap_or_else(|()| panic!("file url"));
    setup(
        dir,
        "",
        &[(
            "quotes",
            format!(
                "url: {url}\nschedule: {{every: 1h}}\nmonitor: data\n\
                 clips:\n  rows: {{extract: region, keywords: [GAZP, SBER]}}\n\
                 thresholds:\n  - name: rows\n    xpath: \"count(/page/table[@clip='rows']/row)\"\n    \
                 above: 5\n    notify: [log]\n"
            ),
        )],
    );
    let config = dir.join("semclip.yaml");
    let (code, out) = check(&config);
    assert_eq!(code, 0, "5 rows, not above 5: {out}");
    assert!(out.contains("threshold rows: normal (5)"), "{out}");

    // Only the data is compared: the nav and footer may change freely.
    write(
        &page,
        &table_page("251,30", 3)
            .replace("About</a>", "About us</a> <a href=/jobs>Jobs</a>")
            .replace("Prices in roubles.", "Prices in roubles. Updated 12:05."),
    );
    let (code, out) = check(&config);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("unchanged"),
        "nav and footer are not data: {out}"
    );

    // One more record: the region follows it and the threshold fires.
    write(&page, &table_page("251,30", 4));
    let (code, out) = check(&config);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("threshold rows: alarm (6)"), "{out}");
    assert_eq!(
        file_alerts(dir)
            .iter()
            .filter(|a| a["kind"] == "threshold_crossed")
            .count(),
        1
    );
}

/// Words for the generated stories (every story draws its own sequence).
const WORDS: [&str; 24] = [
    "harbour", "council", "tram", "budget", "river", "bridge", "station", "market", "school",
    "winter", "festival", "library", "museum", "garden", "square", "tower", "ferry", "island",
    "railway", "theatre", "stadium", "forest", "valley", "quarter",
];

/// Sentence `k` of story `i`: twelve words, different for every story.
fn sentence(i: usize, k: usize) -> String {
    let mut words: Vec<&str> = (0..12)
        .map(|w| WORDS[(i * 7 + k * 5 + w * 3) % 24])
        .collect();
    words[0] = if k.is_multiple_of(2) { "The" } else { "A" };
    format!("{} number {i}{k}.", words.join(" "))
}

/// Story page `i` of one news site: a menu, a "most read" box whose links
/// change from page to page, the headline, a standfirst date, five
/// paragraphs of three sentences, a footer.
fn story_page(i: usize) -> String {
    let body: String = (0..5)
        .map(|p| {
            let s: Vec<String> = (0..3).map(|k| sentence(i, p * 3 + k)).collect();
            format!("<p>{}</p>", s.join(" "))
        })
        .collect();
    let most_read: String = (1..=4)
        .map(|k| {
            format!(
                "<li><a href=/s/{}>Story {} of the week</a></li>",
                i + k,
                i + k
            )
        })
        .collect();
    format!(
        "<!doctype html><html lang=en><head><title>Story {i} - City News</title></head><body>\
         <div class=top><a href=/>City News</a><ul><li><a href=/local>Local</a></li>\
         <li><a href=/sport>Sport</a></li><li><a href=/arts>Arts</a></li></ul></div>\
         <div class=wrap><div class=main><h1>Headline {i}: the {} and the {}</h1>\
         <div class=meta>Published {i} November</div><div class=text>{body}</div></div>\
         <div class=side><h2>Most read</h2><ol>{most_read}</ol></div></div>\
         <div class=bottom>City News, 1 Harbour Street</div></body></html>",
        WORDS[i % 24],
        WORDS[(i + 5) % 24]
    )
}

fn article_json(args: &[&str]) -> serde_json::Value {
    let out = semclip(args, None);
    assert!(out.status.success(), "{}", describe(args, &out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", describe(args, &out)))
}

#[test]
fn article_extraction_by_a_learned_template() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let dir = tmp.path();
    setup(dir, "", &[]);
    let config = dir.join("semclip.yaml");
    let config = config.to_str().unwrap_or_default();
    let mut learn = vec!["learn", "news", "--config", config];
    let files: Vec<String> = (1..=5)
        .map(|i| {
            let path = dir.join(format!("story{i}.html"));
            write(&path, &story_page(i));
            path.display().to_string()
        })
        .collect();
    learn.extend(files.iter().map(String::as_str));
    let out = semclip(&learn, None);
    assert!(out.status.success(), "{}", describe(&learn, &out));
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(printed.contains("1 template,"), "{printed}");
    assert!(printed.contains("ne-pattern of"), "{printed}");

    // An unseen story of the site: title and body from the pattern.
    let new = dir.join("story9.html");
    write(&new, &story_page(9));
    let new = new.display().to_string();
    let with_template = |page: &str| {
        article_json(&[
            "extract",
            "article",
            page,
            "--format",
            "json",
            "--template",
            "news",
            "--config",
            config,
        ])
    };
    let a = with_template(&new);
    assert_eq!(a["method"], "template", "{a:#}");
    assert_eq!(
        a["title"],
        format!("Headline 9: the {} and the {}", WORDS[9], WORDS[14])
    );
    let paragraphs: Vec<String> = (0..5)
        .map(|p| {
            let s: Vec<String> = (0..3).map(|k| sentence(9, p * 3 + k)).collect();
            s.join(" ")
        })
        .collect();
    let body = a["body"].as_str().unwrap_or_default();
    assert_eq!(body, paragraphs.join("\n\n"), "{a:#}");

    // Without the option, or on a page that fits no template, the page
    // alone decides.
    let a = article_json(&["extract", "article", &new, "--format", "json"]);
    assert_eq!(a["method"], "single-page");
    let other = dir.join("quotes.html");
    write(&other, &table_page("251,30", 3));
    let other = other.display().to_string();
    let a = with_template(&other);
    assert_eq!(a["method"], "single-page", "{a:#}");

    // A watch of the story with an article clip and the template set:
    // under `monitor: data` its snapshot is the article alone.
    let url = url::Url::from_file_path(&new).unwrap_or_else(|()| panic!("file url"));
    write(
        &dir.join("watches/story.yaml"),
        &format!(
            "url: {url}\nschedule: {{every: 1h}}\nmonitor: data\n\
             clips:\n  story: {{extract: article}}\nlayout: {{template: news}}\n"
        ),
    );
    let (code, out) = check(Path::new(config));
    assert_eq!(code, 0, "{out}");
    let store = Store::open(&dir.join("state/semclip.db")).unwrap_or_else(|e| panic!("{e}"));
    let xml = store
        .current("story")
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("no snapshot"))
        .xml;
    assert!(xml.contains("clip=\"story\""), "{xml}");
    assert!(
        xml.contains(&format!("Headline 9: the {}", WORDS[9])),
        "{xml}"
    );
    assert!(xml.contains(&sentence(9, 14)), "{xml}");
    assert!(!xml.contains("of the week"), "the sidebar stays out: {xml}");

    // An unknown set name is an error that says how to make one.
    let args = [
        "extract",
        "article",
        &new,
        "--template",
        "nope",
        "--config",
        config,
    ];
    let out = semclip(&args, None);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("semclip learn nope"),
        "{}",
        describe(&args, &out)
    );
}

/// Result page `i` of one site: five results whose texts change from page
/// to page, and thirty topic links that every page repeats.
fn results_page(i: usize) -> String {
    let results: String = (0..5)
        .map(|k| {
            let n = i * 10 + k;
            format!(
                "<div class=hit><h3><a href=/r/{n}>Result {n}: the {} by the {}</a></h3>\
                 <p>{}</p></div>",
                WORDS[n % 24],
                WORDS[(n + 3) % 24],
                sentence(i, k)
            )
        })
        .collect();
    let topics: String = (0..30)
        .map(|t| {
            format!(
                "<div><a href=/t/{t}>Topic {} {t}</a> <span>{} stories this week</span></div>",
                WORDS[t % 24],
                t + 3
            )
        })
        .collect();
    format!(
        "<!doctype html><html lang=en><head><title>Search {i}</title></head><body>\
         <div class=results>{results}</div><div class=topics>{topics}</div></body></html>"
    )
}

#[test]
fn record_extraction_by_a_learned_template_keeps_only_lists_that_vary() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let dir = tmp.path();
    setup(dir, "", &[]);
    let config = dir.join("semclip.yaml");
    let config = config.to_str().unwrap_or_default();
    let files: Vec<String> = (1..=4)
        .map(|i| {
            let path = dir.join(format!("results{i}.html"));
            write(&path, &results_page(i));
            path.display().to_string()
        })
        .collect();
    let mut learn = vec!["learn", "search", "--config", config];
    learn.extend(files.iter().map(String::as_str));
    let out = semclip(&learn, None);
    assert!(out.status.success(), "{}", describe(&learn, &out));

    let page = dir.join("results7.html");
    write(&page, &results_page(7));
    let page = page.display().to_string();
    let first_fields = |args: &[&str]| -> Vec<String> {
        let v = article_json(args);
        v["records"]
            .as_array()
            .unwrap_or_else(|| panic!("{v:#}"))
            .iter()
            .map(|r| {
                r["fields"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect()
    };
    // The page alone: the topic links are a list too.
    let alone = first_fields(&["extract", "records", &page, "--format", "json"]);
    assert!(alone.iter().any(|t| t.starts_with("Topic")), "{alone:?}");
    // With the site's template only the results are records.
    let learned = first_fields(&[
        "extract",
        "records",
        &page,
        "--format",
        "json",
        "--template",
        "search",
        "--config",
        config,
    ]);
    let expected: Vec<String> = (70..75)
        .map(|n| {
            format!(
                "Result {n}: the {} by the {}",
                WORDS[n % 24],
                WORDS[(n + 3) % 24]
            )
        })
        .collect();
    assert_eq!(learned, expected);
}

/// A watch of `page` whose clips and thresholds address what its
/// hierarchy `h` holds: its first table and first section as clips, and up
/// to three numbers as thresholds (so a lost XPath would show).
fn watch_of(dir: &Path, h: &semclip::hierarchy::Hierarchy) -> semclip::config::Watch {
    use semclip::hierarchy::{HNode, Kind};
    fn walk<'a>(n: &'a HNode, out: &mut Vec<&'a HNode>) {
        out.push(n);
        for c in &n.children {
            walk(c, out);
        }
    }
    let mut nodes = Vec::new();
    for c in &h.children {
        walk(c, &mut nodes);
    }
    let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let mut clips = String::new();
    for kind in [Kind::Table, Kind::Section] {
        if let Some(n) = nodes.iter().find(|n| n.kind == kind) {
            clips.push_str(&format!("  {}: {{xpath: {}}}\n", kind.name(), q(&n.xpath)));
        }
    }
    let mut thresholds = String::new();
    for (i, n) in nodes.iter().filter(|n| n.num.is_some()).take(3).enumerate() {
        thresholds.push_str(&format!(
            "  - name: n{i}\n    xpath: {}\n    above: 1\n",
            q(&format!("{}/@num", n.xpath))
        ));
    }
    // The page sits in the watch file's own directory tree, inside the
    // default file roots, so the watch validates as the fence asks.
    let page = dir.join("page.html");
    let mut yaml = format!(
        "url: {}\nschedule: {{every: 1h}}\n",
        q(&format!("file://{}", page.display()))
    );
    if !clips.is_empty() {
        yaml.push_str(&format!("clips:\n{clips}"));
    }
    if !thresholds.is_empty() {
        yaml.push_str(&format!("thresholds:\n{thresholds}"));
    }
    let watches = dir.join("watches");
    std::fs::create_dir_all(&watches).unwrap_or_else(|e| panic!("{e}"));
    write(&watches.join("page.yaml"), &yaml);
    let loaded =
        semclip::config::load(None, Some(&watches)).unwrap_or_else(|d| panic!("{yaml}\n{d:#?}"));
    loaded
        .watches
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no watch"))
}

/// One page through the watch pipeline's layout decision: the page as
/// built for `watch`, its XML, what the watch's XPaths select there, and
/// the layout state and event against `previous`.
fn through_layout(
    html: &str,
    watch: &semclip::config::Watch,
    previous: &semclip::monitor::layout::LayoutState,
) -> (
    semclip::monitor::watch_page::WatchPage,
    semclip::monitor::layout::Found,
    semclip::monitor::layout::LayoutState,
    Option<semclip::monitor::layout::LayoutEvent>,
) {
    use semclip::config::PageLimits;
    use semclip::page::budget::Budget;
    let budget = Budget::new(PageLimits::default());
    let page = semclip::monitor::watch_page::build_page(
        html,
        None,
        watch,
        &previous.wrappers,
        None,
        &budget,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let xml = semclip::hierarchy::write::to_xml(
        &page.hierarchy,
        semclip::hierarchy::write::XmlOptions::default(),
    );
    let found = semclip::monitor::layout::xpaths_found(watch, &xml);
    let (state, event) = semclip::monitor::layout::assess(watch, previous, &page, &found);
    (page, found, state, event)
}

#[test]
fn markup_only_edits_raise_no_layout_and_no_change_event_on_the_corpus() {
    use crate::markup::{CHANGES, Change, write_html};
    use crate::util::{corpus, corpus_pages, read_page};
    use semclip::monitor::layout::LayoutState;
    use semclip::page::dom::Dom;
    let Some(corpus) =
        corpus("markup_only_edits_raise_no_layout_and_no_change_event_on_the_corpus")
    else {
        return;
    };
    let pages = corpus_pages(&corpus);
    assert!(pages.len() > 300, "found {} pages", pages.len());
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (mut failures, mut checked, mut xpaths, mut dom_alarms) = (Vec::new(), 0, 0, 0);
    let mut max_dom = 0.0f64;
    for path in &pages {
        let dom = Dom::parse(&read_page(path));
        let base_html = write_html(&dom, Change::None);
        let base_h = semclip::hierarchy::Hierarchy::from_html(&base_html, None);
        let watch = watch_of(tmp.path(), &base_h);
        let (base, found, state, event) =
            through_layout(&base_html, &watch, &LayoutState::default());
        assert!(
            event.is_none(),
            "{}: a first page raises nothing",
            path.display()
        );
        // Every XPath of the watch selects something on the page, so a lost
        // one would raise an event.
        let all: Vec<_> = found.clips.iter().chain(&found.thresholds).collect();
        assert!(
            all.iter().all(|(_, f)| **f),
            "{}: {found:?}",
            path.display()
        );
        xpaths += all.len();
        for change in CHANGES {
            let html = write_html(&dom, change);
            let (page, _, after, event) = through_layout(&html, &watch, &state);
            let changes = semclip::diff::diff(&base.hierarchy, &page.hierarchy);
            checked += 1;
            let dom_drift = after.dom_drift.unwrap_or_default();
            max_dom = max_dom.max(dom_drift);
            if dom_drift > watch.layout.max_drift {
                dom_alarms += 1;
            }
            if let Some(e) = event {
                failures.push(format!(
                    "{} {change:?}: layout event: {}",
                    path.display(),
                    e.summary
                ));
            }
            if !changes.is_empty() {
                failures.push(format!(
                    "{} {change:?}: {} change events, first {:?}",
                    path.display(),
                    changes.len(),
                    changes[0]
                ));
            }
        }
    }
    eprintln!(
        "{} pages, {checked} markup-only edits, {xpaths} clip and threshold XPaths: \
         {} layout or change events; the DOM drift (diagnostic) went up to {max_dom:.2} \
         and was above max_drift on {dom_alarms} edits",
        pages.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The quote page with `rows` (ticker, price), optionally wrapped in two
/// more `<div>`s.
fn quotes(rows: &[(&str, &str)], wrapped: bool) -> String {
    let rows: String = rows
        .iter()
        .map(|(t, p)| format!("<tr><td>{t}</td><td>{p}</td></tr>"))
        .collect();
    let table = format!(
        "<table><caption>Shares</caption><tr><th>Ticker</th><th>Last</th></tr>{rows}</table>"
    );
    let table = if wrapped {
        format!("<div class=outer><div class=inner>{table}</div></div>")
    } else {
        table
    };
    format!(
        "<!doctype html><html lang=en><head><title>Quotes</title></head><body>\
         <h1>Market</h1>{table}<footer><p>Prices in roubles.</p></footer></body></html>"
    )
}

fn layout_events(dir: &Path) -> Vec<serde_json::Value> {
    let store = Store::open(&dir.join("state/semclip.db")).unwrap_or_else(|e| panic!("{e}"));
    store
        .changes("quotes", None, 100)
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .filter(|e| e.kind == "layout")
        .map(|e| e.change)
        .collect()
}

#[test]
fn wrappers_are_silent_and_a_removed_threshold_row_raises_one_layout_event() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let dir = tmp.path();
    let page = dir.join("quotes.html");
    let rows = [("GAZP", "251,30"), ("SBER", "300,15"), ("LKOH", "7 012")];
    write(&page, &quotes(&rows, false));
    let url = url::Url::from_file_path(&page).unwrap_or_else(|()| panic!("file url"));
    setup(
        dir,
        "",
        &[(
            "quotes",
            format!(
                "url: {url}\nschedule: {{every: 1h}}\n\
                 clips:\n  shares: {{xpath: \"//table[@label='Shares']\"}}\n\
                 thresholds:\n  - name: sber\n    \
                 xpath: \"//table[@label='Shares']/row[@key='SBER']/cell[@col='Last']/@num\"\n    \
                 above: 1000\n"
            ),
        )],
    );
    let config = dir.join("semclip.yaml");
    let (code, out) = check(&config);
    assert_eq!(code, 0, "{out}");

    // The table wrapped in two more divs: no change, no layout event, no
    // alert, exit 0 (issue 17: this raised a layout event with drift 1.0).
    write(&page, &quotes(&rows, true));
    let (code, out) = check(&config);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("quotes: unchanged"), "{out}");
    assert!(!out.contains("layout") && !out.contains("alert:"), "{out}");
    assert!(layout_events(dir).is_empty(), "{:#?}", layout_events(dir));

    // A data change (another row, a new price) is a change, not a layout event.
    let more = [
        ("GAZP", "268,40"),
        ("SBER", "300,15"),
        ("LKOH", "7 012"),
        ("ROSN", "550"),
    ];
    write(&page, &quotes(&more, true));
    let (_, out) = check(&config);
    assert!(out.contains("semantic changes"), "{out}");
    assert!(layout_events(dir).is_empty(), "{:#?}", layout_events(dir));

    // The threshold's row is removed: exactly one layout event naming it.
    let without = [("GAZP", "268,40"), ("LKOH", "7 012"), ("ROSN", "550")];
    write(&page, &quotes(&without, true));
    let (_, out) = check(&config);
    assert!(
        out.contains("layout changed: thresholds selecting nothing now: sber"),
        "{out}"
    );
    let events = layout_events(dir);
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(events[0]["lost_thresholds"], serde_json::json!(["sber"]));
    assert_eq!(events[0]["lost"], serde_json::json!([]));
    assert_eq!(events[0]["drift"].as_f64(), Some(0.0), "{:#}", events[0]);
    // The watch did not ask for layout notifications: no layout alert.
    assert!(!out.contains("alert: quotes: layout"), "{out}");
    assert!(layout_alerts(dir).is_empty(), "{:#?}", file_alerts(dir));

    // Still removed, and more data changes: no second event.
    write(
        &page,
        &quotes(&[("GAZP", "270,00"), ("LKOH", "7 012")], false),
    );
    let _ = check(&config);
    assert_eq!(layout_events(dir).len(), 1, "{:#?}", layout_events(dir));
}
