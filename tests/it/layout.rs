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
