//! Lists as data (issue 34): a check's changes told per record (one feed
//! entry and one webhook object per record that came, went or changed),
//! and thresholds judged on each record with a state per record key.
//!
//! Each check is one `semclip check` run against a local job board whose
//! list the test sets between runs, so every step is deterministic.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::response::Html;
use axum::routing::get;

use crate::daemon::{Daemon, file_alerts, kinds, setup};
use crate::fixture::StateSite;
use crate::serve::{Client, repo_xslt};
use crate::util::{describe, semclip};

/// One job card: title (links to the job), city, salary.
type Job = (&'static str, &'static str, &'static str);

/// The board's jobs, in page order.
#[derive(Default)]
struct Board {
    jobs: Vec<Job>,
}

async fn board(State(s): State<Arc<Mutex<Board>>>) -> Html<String> {
    let jobs = s.lock().map(|b| b.jobs.clone()).unwrap_or_default();
    let items: String = jobs
        .iter()
        .map(|(title, city, salary)| {
            let slug: String = title.chars().filter(char::is_ascii_alphanumeric).collect();
            format!(
                "<li class=\"job\"><h3><a href=\"/jobs/{slug}\">{title}</a></h3>\
                 <span class=\"city\">{city}</span><span class=\"salary\">{salary}</span></li>"
            )
        })
        .collect();
    Html(format!(
        "<html><head><title>Rust jobs</title></head><body><h1>Latest Rust jobs</h1>\
         <ul class=\"jobs\">{items}</ul><footer>About us</footer></body></html>"
    ))
}

fn start_board(jobs: &[Job]) -> StateSite<Board> {
    StateSite::start(
        Board {
            jobs: jobs.to_vec(),
        },
        Router::new().route("/jobs", get(board)),
    )
}

/// A watch of the board: its records as a clip, every change to the file
/// notifier, and `extra` appended.
fn board_watch(url: &str, extra: &str) -> String {
    format!(
        "url: {url}\nschedule: {{every: 1h}}\nfetch: {{timeout: 5s, retries: 0}}\n\
         clips:\n  jobs: {{extract: records}}\n{extra}"
    )
}

/// One `semclip check` of every watch in `dir`.
fn check(dir: &std::path::Path) {
    let config = dir.join("semclip.yaml");
    let args = ["check", "--config", config.to_str().unwrap()];
    let out = semclip(&args, None);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        describe(&args, &out)
    );
}

const BERLIN: Job = ("Senior Rust engineer", "Berlin", "€90,000");
const PARIS: Job = ("Backend developer", "Paris", "€70,000");
const MADRID: Job = ("Data engineer", "Madrid", "€60,000");
const LISBON: Job = ("Site reliability engineer", "Lisbon", "€65,000");
const ROME: Job = ("Frontend developer", "Rome", "€55,000");

#[test]
fn a_check_tells_each_record_that_came_went_or_changed_once() {
    let site = start_board(&[BERLIN, PARIS, MADRID, LISBON, ROME]);
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    setup(
        dir,
        &format!("listen: 127.0.0.1:0\nserver:\n  xslt: {}\n", repo_xslt()),
        &[(
            "jobs",
            // Only the records: the page's own rendering of the list
            // would tell each change a second time.
            board_watch(
                &site.url("/jobs"),
                "monitor: data\non_change: {notify: [log]}\n",
            ),
        )],
    );
    check(dir);
    // Reordered, one new, one gone, one raise: three record changes, the
    // reorder none.
    site.state().jobs = vec![
        PARIS,
        BERLIN,
        ("Platform engineer", "Vienna", "€80,000"),
        MADRID,
        ("Site reliability engineer", "Lisbon", "€68,000"),
    ];
    check(dir);

    let alerts = file_alerts(dir);
    assert_eq!(kinds(&alerts), ["changed"], "{alerts:#?}");
    let changed = &alerts[0];
    let mut lines: Vec<&str> = changed["records"]
        .as_array()
        .expect("records")
        .iter()
        .map(|r| r["text"].as_str().unwrap())
        .collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        [
            "changed: Site reliability engineer: salary €65,000 -> €68,000 (+3000)",
            "new: Platform engineer (Vienna, €80,000)",
            "removed: Frontend developer (Rome, €55,000)",
        ],
        "{changed:#}"
    );
    let raise = changed["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "changed")
        .unwrap();
    assert_eq!(raise["key"], "Site reliability engineer");
    let field = |side: &str, name: &str| {
        raise[side]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name)
            .map(|f| f["value"].as_str().unwrap().to_owned())
    };
    assert_eq!(field("before", "salary").as_deref(), Some("€65,000"));
    assert_eq!(field("after", "salary").as_deref(), Some("€68,000"));
    assert_eq!(field("after", "city").as_deref(), Some("Lisbon"));
    assert!(
        changed["summary"]
            .as_str()
            .is_some_and(|s| s.contains("1 new")
                && s.contains("1 removed")
                && s.contains("1 changed")),
        "{changed:#}"
    );

    // The feed: one entry per record, each with its own id.
    let daemon = Daemon::start(dir);
    let c = Client::new(daemon.port());
    let feed = c.get("/feeds/jobs.atom", &[]);
    assert_eq!(feed.status, 200, "{}", feed.body);
    let parsed = atom_syndication::Feed::read_from(feed.body.as_bytes()).unwrap();
    let mut titles: Vec<&str> = parsed
        .entries()
        .iter()
        .map(|e| e.title().as_str())
        .collect();
    titles.sort_unstable();
    assert_eq!(
        titles,
        [
            "jobs: changed: Site reliability engineer: salary €65,000 -> €68,000 (+3000)",
            "jobs: new: Platform engineer (Vienna, €80,000)",
            "jobs: removed: Frontend developer (Rome, €55,000)",
        ]
    );
    let ids: std::collections::BTreeSet<&str> = parsed.entries().iter().map(|e| e.id()).collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
    let new = parsed
        .entries()
        .iter()
        .find(|e| e.title().as_str().contains("new:"))
        .unwrap();
    let summary = new.summary().map(|s| s.value.clone()).unwrap_or_default();
    assert!(summary.contains("city: Vienna"), "{summary}");
    assert!(
        new.links()
            .first()
            .is_some_and(|l| l.href().contains("/changes/")),
        "{:?}",
        new.links()
    );
    // Read again, the same ids.
    let again =
        atom_syndication::Feed::read_from(c.get("/feeds/jobs.atom", &[]).body.as_bytes()).unwrap();
    let again: std::collections::BTreeSet<&str> = again.entries().iter().map(|e| e.id()).collect();
    assert_eq!(again, ids);
    drop(daemon);
}

const KETTLE: &str = "Electric kettle, 1.7 litres";
const LAMP: &str = "Desk lamp with dimmer";
const FAN: &str = "Tower fan, 3 speeds";

/// `items` and two that stay above every bound (a list is a list from
/// three records on).
fn shop(items: &[Job]) -> Vec<Job> {
    let mut all = items.to_vec();
    all.extend([
        ("Standing desk, oak", "Oslo", "900"),
        ("Office chair, mesh back", "Bern", "800"),
    ]);
    all
}

#[test]
fn an_each_threshold_alerts_once_per_record_that_crosses_and_once_when_it_returns() {
    let site = start_board(&shop(&[
        (KETTLE, "Berlin", "600"),
        (LAMP, "Rome", "450"),
        (FAN, "Madrid", "700"),
    ]));
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    setup(
        dir,
        "",
        &[(
            "shop",
            board_watch(
                &site.url("/jobs"),
                "thresholds:\n  - name: cheap\n    xpath: \"/page/table[@clip='jobs']/row\"\n    \
                 each: \"cell[@col='salary']/@num\"\n    below: 500\n    notify: [log]\n",
            ),
        )],
    );
    let summaries = || -> Vec<String> {
        file_alerts(dir)
            .iter()
            .map(|a| a["summary"].as_str().unwrap().to_owned())
            .collect()
    };
    // Lamp is already below: one crossing.
    check(dir);
    let first = summaries();
    assert_eq!(first.len(), 1, "{first:?}");
    assert!(
        first[0].starts_with(&format!("cheap: {LAMP}: 450 is below 500")),
        "{first:?}"
    );
    // Kettle crosses, Lamp stays below: one more.
    site.state().jobs = shop(&[
        (KETTLE, "Berlin", "480"),
        (LAMP, "Rome", "440"),
        (FAN, "Madrid", "700"),
    ]);
    check(dir);
    let second = summaries();
    assert_eq!(second.len(), 2, "{second:?}");
    assert!(
        second[1].starts_with(&format!("cheap: {KETTLE}: 480 is below 500")),
        "{second:?}"
    );
    // Kettle returns, Lamp is gone (no alert), Fan stays.
    site.state().jobs = shop(&[(KETTLE, "Berlin", "520"), (FAN, "Madrid", "700")]);
    check(dir);
    let third = summaries();
    assert_eq!(third.len(), 3, "{third:?}");
    assert!(
        third[2].starts_with(&format!("cheap: {KETTLE}: 520 is back within bounds")),
        "{third:?}"
    );
    // Lamp comes back below: judged afresh, it crosses again.
    site.state().jobs = shop(&[
        (KETTLE, "Berlin", "520"),
        (FAN, "Madrid", "700"),
        (LAMP, "Rome", "430"),
    ]);
    check(dir);
    let all = file_alerts(dir);
    assert_eq!(
        kinds(&all),
        [
            "threshold_crossed",
            "threshold_crossed",
            "threshold_returned",
            "threshold_crossed"
        ],
        "{all:#?}"
    );
    assert_eq!(all[3]["threshold"]["value"], 430.0);
    assert_eq!(all[3]["threshold"]["name"], "cheap");
    // Nothing changed: nothing more.
    check(dir);
    assert_eq!(file_alerts(dir).len(), 4);
}

#[test]
fn an_each_threshold_must_read_within_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    setup(
        dir,
        "",
        &[(
            "shop",
            board_watch(
                "https://shop.example/jobs",
                "thresholds:\n  - name: cheap\n    xpath: \"count(//row)\"\n    \
                 each: \"/page//cell/@num\"\n    below: 500\n",
            ),
        )],
    );
    let config = dir.join("semclip.yaml");
    let args = ["validate", "--config", config.to_str().unwrap()];
    let out = semclip(&args, None);
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert_ne!(out.status.code(), Some(0), "{}", describe(&args, &out));
    assert!(
        text.contains("thresholds[0].each: must be relative to the record"),
        "{text}"
    );
    assert!(
        text.contains("thresholds[0].xpath: with `each`, the XPath must select the records"),
        "{text}"
    );
}

/// The records of `html` as a watch with `monitor: data` and one
/// `extract: records` clip holds them.
fn records_page(html: &str) -> semclip::hierarchy::Hierarchy {
    use semclip::extract::{records, vocabulary};
    let found = records::extract(&semclip::page::dom::Dom::parse(html));
    semclip::hierarchy::Hierarchy {
        title: Some("List".to_owned()),
        children: vec![vocabulary::records_node(
            &found,
            semclip::hierarchy::number::DecimalStyle::Point,
        )],
        ..Default::default()
    }
}

/// The record changes between two pages, as a check finds them (rows
/// re-keyed to the new version's choice, then the diff), as
/// `(kind, key)` sorted.
fn record_changes(old: &str, new: &str) -> Vec<(String, String)> {
    let (mut old, new) = (records_page(old), records_page(new));
    semclip::hierarchy::key::align(&mut old, &new);
    let changes = semclip::diff::diff(&old, &new);
    let (records, plain) = semclip::diff::by_record(&changes);
    assert!(plain.is_empty(), "changes outside records: {changes:#?}");
    let mut out: Vec<(String, String)> = records
        .iter()
        .map(|r| (r.kind.word().to_owned(), r.record.key.clone()))
        .collect();
    out.sort();
    out
}

/// A small deterministic generator (a linear congruential one): the
/// test's lists differ per seed and never per run.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

/// An item of a generated shop list: a product name, a city, a price.
type Item = (String, &'static str, u32);

const NOUNS: [&str; 12] = [
    "kettle",
    "lamp",
    "tower fan",
    "desk",
    "office chair",
    "bookshelf",
    "toaster",
    "blender",
    "rice cooker",
    "coffee grinder",
    "floor mat",
    "wall clock",
];
const ADJECTIVES: [&str; 8] = [
    "Compact",
    "Deluxe",
    "Cordless",
    "Vintage",
    "Smart",
    "Foldable",
    "Quiet",
    "Stainless",
];
const CITIES: [&str; 6] = ["Berlin", "Paris", "Madrid", "Lisbon", "Rome", "Vienna"];

fn item(rng: &mut Lcg, n: usize) -> Item {
    let name = format!(
        "{} {} model {}",
        ADJECTIVES[rng.below(ADJECTIVES.len())],
        NOUNS[rng.below(NOUNS.len())],
        100 + n
    );
    (
        name,
        CITIES[rng.below(CITIES.len())],
        20 + 10 * rng.below(90) as u32,
    )
}

/// The list as one of three page shapes: cards in a `<ul>`, `<div>`
/// cards, or the rows of a `<table>`.
fn shop_page(shape: usize, items: &[Item]) -> String {
    let body: String = match shape {
        0 => {
            let lis: String = items
                .iter()
                .map(|(name, city, price)| {
                    format!(
                        "<li class=\"product\"><h3><a href=\"/p/{}\">{name}</a></h3>\
                         <span class=\"city\">Ships from {city}</span>\
                         <span class=\"price\">€{price}.00</span></li>",
                        name.replace(' ', "-")
                    )
                })
                .collect();
            format!("<ul class=\"products\">{lis}</ul>")
        }
        1 => items
            .iter()
            .map(|(name, city, price)| {
                format!(
                    "<div class=\"card\"><h2 class=\"title\">{name}</h2>\
                     <p class=\"where\">In stock in {city}</p>\
                     <div class=\"price\">{price}.00 EUR</div></div>"
                )
            })
            .collect::<String>(),
        _ => {
            let rows: String = items
                .iter()
                .map(|(name, city, price)| {
                    format!("<tr><td>{name}</td><td>{city}</td><td>{price}.00</td></tr>")
                })
                .collect();
            format!(
                "<table><tr><th>Product</th><th>Warehouse</th><th>Price</th></tr>{rows}</table>"
            )
        }
    };
    format!(
        "<html><head><title>Shop</title></head><body><header><a href=\"/\">Home</a> \
         <a href=\"/about\">About</a></header><main><h1>Our products</h1>{body}</main>\
         <footer>© Shop</footer></body></html>"
    )
}

#[test]
fn inserted_removed_and_edited_records_are_reported_with_their_keys_and_a_reorder_is_not() {
    for seed in 0..24u64 {
        let mut rng = Lcg(seed);
        let shape = (seed % 3) as usize;
        let n = 8 + rng.below(8);
        let old: Vec<Item> = (0..n).map(|i| item(&mut rng, i)).collect();
        let mut new = old.clone();
        let mut expected: Vec<(String, String)> = Vec::new();
        // Edit one price, remove one record, insert one, swap two.
        let e = rng.below(new.len());
        new[e].2 += 5;
        expected.push(("changed".to_owned(), new[e].0.clone()));
        let mut r = rng.below(new.len());
        if r == e {
            r = (r + 1) % new.len();
        }
        let gone = new.remove(r);
        expected.push(("removed".to_owned(), gone.0));
        let added = item(&mut rng, 500);
        let at = rng.below(new.len() + 1);
        new.insert(at, added.clone());
        expected.push(("new".to_owned(), added.0));
        let (a, b) = (rng.below(new.len()), rng.below(new.len()));
        new.swap(a, b);
        expected.sort();
        let (before, after) = (shop_page(shape, &old), shop_page(shape, &new));
        assert_eq!(
            record_changes(&before, &after),
            expected,
            "seed {seed}, shape {shape}\n{before}\n{after}"
        );
        // A pure reorder is no change.
        let mut shuffled = old.clone();
        shuffled.reverse();
        assert_eq!(
            record_changes(&before, &shop_page(shape, &shuffled)),
            Vec::<(String, String)>::new(),
            "seed {seed}, shape {shape}: reversed"
        );
    }
}

#[test]
fn an_edited_record_of_a_corpus_list_page_is_one_changed_record_with_its_key() {
    let Some(corpus) = crate::util::corpus("record_changes_corpus") else {
        return;
    };
    let dir = corpus.join("records/next-eval/html");
    let mut pages: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    pages.sort();
    let mut tried = 0;
    for path in &pages {
        let html = std::fs::read_to_string(path).unwrap();
        let h = records_page(&html);
        let Some(table) = h.children.first() else {
            continue;
        };
        // A field of a record in the middle of the list whose text the
        // page's source holds exactly once, so that editing the source
        // edits that field alone.
        let rows = &table.children;
        let candidate = rows.iter().skip(rows.len() / 2).find_map(|row| {
            let key = row.key.clone()?;
            row.children.iter().find_map(|cell| {
                let text = cell.text.as_deref()?;
                (text.len() >= 6
                    && !text.contains(['&', '<', '>'])
                    && html.matches(text).count() == 1)
                    .then(|| (key.clone(), text.to_owned()))
            })
        });
        let Some((key, text)) = candidate else {
            continue;
        };
        let edited = html.replacen(&text, &format!("{text} (edited)"), 1);
        let got = record_changes(&html, &edited);
        assert_eq!(
            got,
            [("changed".to_owned(), key.clone())],
            "{}: editing {text:?} of record {key:?}",
            path.display()
        );
        tried += 1;
    }
    assert!(
        tried >= 20,
        "only {tried} corpus pages had an editable record"
    );
}
