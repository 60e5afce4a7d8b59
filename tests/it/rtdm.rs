//! RTDM, Zhang–Shasha and ne-patterns on real pages from the corpus: the
//! two captures of each page in `changes/web-monitoring-diff/versions/`
//! and the small before/after pairs of `example_data/`. Skipped with a
//! message when the corpus is absent.

use std::path::Path;

use semclip::page::dom::Dom;
use semclip::template::pattern::{MatchCosts, Pattern};
use semclip::template::rtdm::{Rtdm, RtdmResult, rtdm, similarity};
use semclip::template::ted::{INFINITE, LTree, Labels, TextLabels, UnitCosts, ted_unit};
use semclip::template::tree::PageTree;

use crate::util::{corpus, read_page};

/// The two captures of each government page (same page, months apart).
const VERSIONS: [(&str, &str, &str); 2] = [
    (
        "energy.gov",
        "775a8b04-9bac-4d0d-8db0-a8e133c4a964",
        "9d4de183-a186-456c-bffb-55d82989877d",
    ),
    (
        "fema.gov",
        "f2d5d701-707a-42e0-8881-653346d01e0a",
        "fc74d750-c651-46b7-bf74-434ad8c62e04",
    ),
];

fn page(path: &Path) -> (Dom, PageTree) {
    let dom = Dom::parse(&read_page(path));
    let tree = PageTree::from_dom(&dom);
    (dom, tree)
}

/// Asserts that `r` is a restricted top-down mapping of `t1` to `t2`
/// whose unit cost is `r.cost`.
fn check_mapping(t1: &LTree, t2: &LTree, r: &RtdmResult) {
    let m = &r.mapping;
    assert_eq!(m.first(), Some(&(0, 0)));
    let mut to2 = vec![u32::MAX; t1.len()];
    let mut used2 = vec![false; t2.len()];
    for &(a, b) in m {
        assert_eq!(to2[a as usize], u32::MAX, "{a} mapped twice");
        assert!(!used2[b as usize], "{b} mapped twice");
        to2[a as usize] = b;
        used2[b as usize] = true;
    }
    for w in m.windows(2) {
        assert!(w[0].0 < w[1].0 && w[0].1 < w[1].1, "order");
    }
    // Walking t1 in pre-order: every mapped node's parent is mapped to
    // its counterpart's parent, and nothing is mapped below a mapped pair
    // whose labels differ.
    let mut renames = 0;
    for &(a, b) in m {
        let (a, b) = (a as usize, b as usize);
        if let Some(p) = t1.parent(a) {
            assert_eq!(Some(to2[p] as usize), t2.parent(b), "top-down at {a}->{b}");
            let q = t2.parent(b).unwrap_or(0);
            assert_eq!(
                t1.label(p),
                t2.label(q),
                "{a}->{b} mapped below a label mismatch"
            );
        }
        renames += usize::from(t1.label(a) != t2.label(b));
    }
    let cost = renames + (t1.len() - m.len()) + (t2.len() - m.len());
    assert_eq!(r.cost, cost as u64);
}

#[test]
fn versions_of_a_page_map_closely_with_a_valid_mapping() {
    let Some(corpus) = corpus("versions_of_a_page_map_closely_with_a_valid_mapping") else {
        return;
    };
    let dir = corpus.join("changes/web-monitoring-diff/versions");
    let mut work = Rtdm::new();
    for (name, a, b) in VERSIONS {
        let (_, pa) = page(&dir.join(a));
        let (_, pb) = page(&dir.join(b));
        let mut labels = Labels::new();
        let t1 = LTree::from_page(&pa, &mut labels, TextLabels::Uniform);
        let t2 = LTree::from_page(&pb, &mut labels, TextLabels::Uniform);
        let r = work.mapping(&t1, &t2, &UnitCosts);
        check_mapping(&t1, &t2, &r);
        assert_eq!(work.distance(&t1, &t2, &UnitCosts), r.cost);
        let s = similarity(r.cost, &t1, &t2);
        eprintln!(
            "{name}: {} and {} nodes, RTDM {} ({} mapped), similarity {s:.3}",
            t1.len(),
            t2.len(),
            r.cost,
            r.mapping.len()
        );
        // Two captures of one page are one template (Reis et al. cluster
        // at 80%).
        assert!(s > 0.8, "{name}: similarity {s}");
        // Symmetric under unit costs.
        assert_eq!(work.distance(&t2, &t1, &UnitCosts), r.cost);
        // With text-sensitive labels the captures differ (their texts
        // changed), and the mapping is still restricted top-down.
        let (da, pa) = page(&dir.join(a));
        let (db, pb) = page(&dir.join(b));
        let c1 = LTree::from_page(&pa, &mut labels, TextLabels::Content(&da));
        let c2 = LTree::from_page(&pb, &mut labels, TextLabels::Content(&db));
        let rc = work.mapping(&c1, &c2, &UnitCosts);
        check_mapping(&c1, &c2, &rc);
        eprintln!("{name}: with texts, RTDM {}", rc.cost);
        assert!(rc.cost > r.cost, "{name}: texts changed");
    }
    // Different sites are far apart.
    let (_, pa) = page(&dir.join(VERSIONS[0].1));
    let (_, pb) = page(&dir.join(VERSIONS[1].1));
    let mut labels = Labels::new();
    let t1 = LTree::from_page(&pa, &mut labels, TextLabels::Uniform);
    let t2 = LTree::from_page(&pb, &mut labels, TextLabels::Uniform);
    let r = rtdm(&t1, &t2, &UnitCosts, INFINITE);
    check_mapping(&t1, &t2, &r);
    let s = similarity(r.cost, &t1, &t2);
    eprintln!("energy.gov vs fema.gov: similarity {s:.3}");
    assert!(s < 0.8, "different sites: similarity {s}");
}

#[test]
fn rtdm_is_never_below_zhang_shasha_on_real_page_pairs() {
    let Some(corpus) = corpus("rtdm_is_never_below_zhang_shasha_on_real_page_pairs") else {
        return;
    };
    let dir = corpus.join("changes/web-monitoring-diff/example_data");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map(|d| {
            d.flatten()
                .filter_map(|e| {
                    e.file_name()
                        .to_str()?
                        .strip_suffix(".before")
                        .map(str::to_owned)
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    assert!(names.len() >= 10, "example pairs: {names:?}");
    let mut equal = 0;
    for name in &names {
        // Text-sensitive labels, so that text edits count.
        let mut labels = Labels::new();
        let (da, pa) = page(&dir.join(format!("{name}.before")));
        let (db, pb) = page(&dir.join(format!("{name}.after")));
        let t1 = LTree::from_page(&pa, &mut labels, TextLabels::Content(&da));
        let t2 = LTree::from_page(&pb, &mut labels, TextLabels::Content(&db));
        let r = rtdm(&t1, &t2, &UnitCosts, INFINITE);
        check_mapping(&t1, &t2, &r);
        let exact = ted_unit(&t1, &t2);
        eprintln!(
            "{name}: {} / {} nodes, RTDM {} TED {exact}",
            t1.len(),
            t2.len(),
            r.cost
        );
        assert!(r.cost >= exact, "{name}: RTDM {} < TED {exact}", r.cost);
        equal += usize::from(r.cost == exact);
    }
    // Most of these pairs are top-down edits (a word, a link, a list
    // added), where the two distances agree.
    assert!(equal * 2 > names.len(), "{equal} of {} equal", names.len());
}

#[test]
fn a_pattern_learned_from_two_versions_fits_both_and_not_the_other_site() {
    let Some(corpus) =
        corpus("a_pattern_learned_from_two_versions_fits_both_and_not_the_other_site")
    else {
        return;
    };
    let dir = corpus.join("changes/web-monitoring-diff/versions");
    let mut patterns = Vec::new();
    for (name, a, b) in VERSIONS {
        let (da, pa) = page(&dir.join(a));
        let (db, pb) = page(&dir.join(b));
        let p = Pattern::learn(&[(&da, &pa), (&db, &pb)]).unwrap_or_else(|| panic!("{name}"));
        let [single, plus, optional, kleene] = p.wildcard_counts();
        eprintln!(
            "{name}: pattern of {} nodes, wildcards · {single} + {plus} ? {optional} * {kleene}",
            p.len()
        );
        // Definition 6: the merge matches every tree either input matched.
        for (dom, tree) in [(&da, &pa), (&db, &pb)] {
            let m = p
                .match_with(tree, MatchCosts::STRICT)
                .unwrap_or_else(|| panic!("{name}: a training page does not match"));
            assert!(m.fits());
            // Some text is data (differs between the versions) and is
            // captured; the rest is boilerplate.
            let passages = p.captured_text(dom, tree, &m);
            assert!(!passages.is_empty(), "{name}: no passage");
        }
        // Round trip through storage.
        let json = serde_json::to_string(&p).unwrap();
        let back: Pattern = serde_json::from_str(&json).unwrap();
        assert_eq!(back, p);
        patterns.push(p);
    }
    // Each site's pattern rejects the other site's page (strict) and
    // scores it low (soft), while its own pages score 1.
    for (k, (name, a, _)) in VERSIONS.iter().enumerate() {
        let other = &patterns[1 - k];
        let (_, tree) = page(&dir.join(a));
        assert!(
            other.match_with(&tree, MatchCosts::STRICT).is_none(),
            "{name}"
        );
        let soft = other.match_page(&tree).unwrap();
        let own = patterns[k].match_page(&tree).unwrap();
        eprintln!(
            "{name}: own pattern similarity {:.3}, other site's {:.3}",
            own.similarity, soft.similarity
        );
        assert_eq!(own.similarity, 1.0);
        assert!(soft.similarity < 0.8, "{name}: {}", soft.similarity);
    }
}
