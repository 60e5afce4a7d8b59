//! The semantic diff: the HTML 4 table, the web-monitoring-diff pairs,
//! markup-only changes over the corpus, data edits, and the fast matcher
//! against the all-pairs oracle.

use semclip::diff::{Change, ChangeKind, diff, diff_naive};
use semclip::hierarchy::Hierarchy;
use semclip::hierarchy::write::content_hash;
use semclip::page::dom::Dom;

use crate::markup::{CHANGES, Change as Markup, write_html};
use crate::util::{corpus, corpus_pages, describe, fixture, read_page, semclip};

fn h(html: &str) -> Hierarchy {
    Hierarchy::from_html(html, None)
}

fn lines(changes: &[Change]) -> Vec<String> {
    changes.iter().map(semclip::diff::Change::line).collect()
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
    let mut incomplete = 0;
    for a in &pages {
        for b in &pages {
            let changes = diff(a, b);
            assert_eq!(changes, diff_naive(a, b));
            if let Err(e) = crate::complete::check(a, b, &changes) {
                eprintln!("{e}");
                incomplete += 1;
            }
        }
    }
    // Completeness over every ordered pair of captures: two pairs (FEMA
    // captures whose sections were re-nested, both directions) are not
    // complete today (a value moved under a label the change list does not
    // create). Known gap, listed in docs/diff.md; the bound only falls.
    assert!(
        incomplete <= 2,
        "{incomplete} of {} pairs incomplete",
        pages.len() * pages.len()
    );
}

/// Changes applied to OLD give NEW, on pairs of unrelated real pages (the
/// hardest case: everything differs) across the whole corpus.
#[test]
fn changes_are_complete_on_real_page_pairs() {
    let Some(corpus) = corpus("changes_are_complete_on_real_page_pairs") else {
        return;
    };
    let pages: Vec<_> = corpus_pages(&corpus);
    let trees: Vec<Hierarchy> = pages.iter().map(|p| h(&read_page(p))).collect();
    let mut problems = Vec::new();
    for i in 0..trees.len() {
        let j = (i + 1) % trees.len();
        let changes = diff(&trees[i], &trees[j]);
        if let Err(e) = crate::complete::check(&trees[i], &trees[j], &changes) {
            problems.push(format!(
                "{} -> {}: {e}",
                pages[i].display(),
                pages[j].display()
            ));
        }
    }
    // Unrelated pages are the hardest case (everything differs, values
    // move between re-nested sections). 21 of 402 pairs are not complete
    // today; docs/diff.md lists the kinds. The bound only falls.
    eprintln!(
        "{} of {} pairs incomplete:\n{}",
        problems.len(),
        trees.len(),
        problems.join("\n")
    );
    assert!(
        problems.len() <= 21,
        "{} pairs:\n{}",
        problems.len(),
        problems.join("\n")
    );
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
        "update  Quotes / GAZP / Last: 251.30 -> 253.10 (+1.8)\n"
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
    use semclip::page::dom::NodeData;
    let Some(corpus) = corpus("data_edits_on_real_pages_give_exactly_those_changes") else {
        return;
    };
    let mut checked = 0;
    let mut skipped = 0;
    let mut failures = Vec::new();
    let mut incomplete = Vec::new();
    for path in corpus_pages(&corpus) {
        let dom = Dom::parse(&read_page(&path));
        let base_html = write_html(&dom, Markup::None);
        let base = h(&base_html);
        let base_paths = semclip::diff::branch_paths(&base);
        let base_labels: std::collections::HashSet<&str> = base_paths
            .iter()
            .flat_map(|b| b.labels.iter().map(String::as_str))
            .collect();
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
            // Only edits to data the hierarchy holds: a header cell that
            // labels no value, or content the builder leaves out, rightly
            // gives no change.
            let text: String = dom
                .children(target)
                .filter_map(|c| match &dom.node(c).data {
                    NodeData::Text(t) => Some(t.split_whitespace().collect::<Vec<_>>().join(" ")),
                    _ => None,
                })
                .collect();
            if !base_labels.contains(text.as_str()) {
                skipped += 1;
                continue;
            }
            for make in edits {
                let edit = make(target);
                let after = h(&write_html(&dom, edit));
                let changes = diff(&base, &after);
                if let Err(e) = crate::complete::check(&base, &after, &changes) {
                    incomplete.push(format!("{} {name} {edit:?}: {e}", path.display()));
                }
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
    // Every edit to data the hierarchy holds comes out exactly, with one
    // known exception: in next-eval 84 the edited cell is the first row of
    // a header-less table, and a number turned into words makes the
    // builder read that row as the header, so the table's shape changes
    // (docs/diff.md, "Known limit"). Any other miss fails, and so does this one
    // the day it is fixed, to be struck from the list.
    let total = checked + failures.len();
    assert!(total > 300, "only {total} edits tried");
    eprintln!(
        "{skipped} targets hold no data; {} of {total} edits not exact:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // Complete and consistent for every edit but three, whose change lists
    // miss a label that a duplicated or reshaped node brings (docs/diff.md,
    // known gaps); the list only shrinks.
    let known_incomplete = [
        "readability/wapo-1/source.html li Duplicate",
        "readability/wapo-2/source.html li Duplicate",
        "next-eval/html/84.html td EditText",
        "next-eval/html/128.html td EditText",
        // Keyed by its name column now, the nested table's column header
        // labels both rows: one update of size 2 for one header cell.
        "inscriptis/nested-table.html td EditText",
    ];
    let unexpected: Vec<&String> = incomplete
        .iter()
        .filter(|f| !known_incomplete.iter().any(|k| f.contains(k)))
        .collect();
    assert!(unexpected.is_empty(), "{unexpected:#?}");
    // 128: the edited cell is in the column that names the records and
    // repeats (`Double 100% up to $30 #2`), so the edit renames a row
    // whose twin holds other values: a rename among repeated keys.
    let known = [
        "records/next-eval/html/84.html td EditText",
        "records/next-eval/html/128.html td EditText",
    ];
    let unexpected: Vec<&String> = failures
        .iter()
        .filter(|f| !known.iter().any(|k| f.contains(k)))
        .collect();
    assert!(unexpected.is_empty(), "{unexpected:#?}");
    for k in known {
        assert!(
            failures.iter().any(|f| f.contains(k)),
            "{k} is exact now: strike it from the known list"
        );
    }
}

#[path = "../../benches/board_page.rs"]
mod board_page;

/// `h` as a hierarchy read back for a diff: every `xpath` empty.
fn without_ids(h: &Hierarchy) -> Hierarchy {
    fn clear(nodes: &mut [semclip::hierarchy::HNode]) {
        for n in nodes {
            n.xpath.clear();
            clear(&mut n.children);
        }
    }
    let mut h = h.clone();
    clear(&mut h.children);
    h
}

/// A data edit of every kind the diff reports: leaf values edited, nodes
/// dropped and duplicated, labels renamed, spread over the tree; ids
/// assigned again.
fn mutated(h: &Hierarchy) -> Hierarchy {
    fn mutate(nodes: &mut Vec<semclip::hierarchy::HNode>, seen: &mut usize) {
        let mut i = 0;
        while i < nodes.len() {
            *seen += 1;
            match *seen % 13 {
                3 if nodes[i].children.is_empty() => {
                    let t = nodes[i].text.take().unwrap_or_default();
                    nodes[i].text = Some(format!("{t} edited"));
                    nodes[i].num = None;
                }
                5 if nodes.len() > 1 => {
                    nodes.remove(i);
                    continue;
                }
                7 => {
                    let copy = nodes[i].clone();
                    nodes.insert(i, copy);
                    i += 1;
                }
                11 if nodes[i].label.is_some() => {
                    nodes[i].label = nodes[i].label.take().map(|l| format!("{l} renamed"));
                }
                _ => {}
            }
            mutate(&mut nodes[i].children, seen);
            i += 1;
        }
    }
    let mut h = h.clone();
    mutate(&mut h.children, &mut 0);
    semclip::hierarchy::assign_ids(&mut h);
    h
}

/// Every node's id derived alone ([`semclip::hierarchy::id_at`]) equals
/// the one [`semclip::hierarchy::assign_ids`] gave it.
fn assert_ids_at(name: &str, h: &Hierarchy) {
    fn walk(name: &str, h: &Hierarchy, nodes: &[semclip::hierarchy::HNode], path: &mut Vec<usize>) {
        for (i, n) in nodes.iter().enumerate() {
            path.push(i);
            assert_eq!(
                semclip::hierarchy::id_at(h, path).as_deref(),
                Some(n.xpath.as_str()),
                "{name}"
            );
            walk(name, h, &n.children, path);
            path.pop();
        }
    }
    walk(name, h, &h.children, &mut Vec::new());
}

/// The diff of hierarchies read back without ids derives the ids of the
/// nodes its changes report: they equal those of the hierarchies with every
/// id assigned, whichever side lacks them, over the corpus and the board.
#[test]
fn change_ids_without_assigned_ids_equal_those_with() {
    use semclip::hierarchy::packed::{Url, pack, unpack_without_ids};
    let mut pages: Vec<(String, Hierarchy)> = vec![
        ("board".to_string(), h(&board_page::board_page(300, 0, 0))),
        (
            "board with 3 cells changed".to_string(),
            h(&board_page::board_page(300, 1, 3)),
        ),
    ];
    if let Some(corpus) = corpus("change_ids_without_assigned_ids_equal_those_with") {
        for p in corpus_pages(&corpus) {
            pages.push((p.display().to_string(), h(&read_page(&p))));
        }
    }
    let mut changes = 0;
    let mut check = |name: &str, a: &Hierarchy, b: &Hierarchy| {
        let with = diff(a, b);
        assert_eq!(
            diff(&without_ids(a), b),
            with,
            "{name}: old side without ids"
        );
        assert_eq!(
            diff(a, &without_ids(b)),
            with,
            "{name}: new side without ids"
        );
        assert_eq!(
            diff(&without_ids(a), &without_ids(b)),
            with,
            "{name}: neither with ids"
        );
        changes += with.len();
    };
    for (name, page) in &pages {
        assert_ids_at(name, page);
        // What the store reads back for a diff.
        let packed = pack(page, Url::Keep);
        assert_eq!(
            unpack_without_ids(&packed).ok().as_ref(),
            Some(&without_ids(page)),
            "{name}"
        );
        let edited = mutated(page);
        check(name, page, &edited);
        check(name, &edited, page);
    }
    // Board versions against each other, and unrelated pages (everything
    // differs: renames, moves, whole nodes).
    check("board", &pages[0].1, &pages[1].1);
    check("board", &pages[1].1, &pages[0].1);
    for i in 2..pages.len() {
        let j = 2 + (i - 1) % (pages.len() - 2);
        check(&pages[i].0, &pages[i].1, &pages[j].1);
    }
    assert!(changes > 100, "only {changes} changes compared");
}
