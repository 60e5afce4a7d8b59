//! Which numbers of a page have a history (see [`crate::store`]'s
//! `series`): every element holding a number (`num`) within what the
//! watch's clips and thresholds select, each tagged with the first clip
//! (by name) or threshold (in file order) that takes it in.
//!
//! A watch with neither clips nor thresholds keeps no series: what it
//! watches is changes, and its numbers are in its snapshots. An
//! expression that does not evaluate on this version adds nothing (its
//! numbers' series end, as a node that is gone). Dates are not numbers
//! here: the hierarchy keeps them as text.

use crate::config::Watch;
use crate::store::{MAX_SERIES, NodeValue};
use crate::xpath::XPathValue;
use crate::xpath::native::{Evaluator, Hit};

/// The numbers in scope of `watch`'s clips and thresholds on the
/// hierarchy of `ev`, in page order, at most [`MAX_SERIES`].
pub fn values(ev: &Evaluator<'_>, watch: &Watch) -> Vec<NodeValue> {
    let sources: Vec<(String, &str)> = watch
        .clips
        .iter()
        .map(|(name, clip)| (format!("clip:{name}"), clip.xpath.as_str()))
        .chain(
            watch
                .thresholds
                .iter()
                .map(|t| (format!("threshold:{}", t.name), t.xpath.as_str())),
        )
        .collect();
    let mut roots: Vec<(Hit, usize)> = Vec::new();
    for (k, (_, xpath)) in sources.iter().enumerate() {
        roots.extend(selected(ev, xpath).into_iter().map(|hit| (hit, k)));
    }
    if roots.is_empty() {
        return Vec::new();
    }
    ev.flat()
        .numbers_within(&roots, MAX_SERIES)
        .into_iter()
        .map(|(node, k, value)| NodeValue {
            node,
            source: sources[k].0.clone(),
            value,
        })
        .collect()
}

/// The elements `xpath` selects (an attribute standing for its element):
/// natively where it can, by libxml2 otherwise; none when it does not
/// evaluate or gives no node-set.
pub fn selected(ev: &Evaluator<'_>, xpath: &str) -> Vec<Hit> {
    if let Some(hits) = ev.flat().select(xpath) {
        return hits;
    }
    let Ok(XPathValue::Nodes(nodes)) = ev.doc().and_then(|doc| doc.evaluate(xpath)) else {
        return Vec::new();
    };
    let ids: Vec<&str> = nodes
        .iter()
        .filter_map(|n| n.id.as_deref())
        .map(|id| id.split("/@").next().unwrap_or(id))
        .collect();
    ev.flat().elements_with_ids(&ids)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]
mod tests {
    use super::*;
    use crate::hierarchy::Hierarchy;

    fn page() -> Hierarchy {
        let mut h = Hierarchy::from_html(
            "<html><title>Quotes</title><h1>Board</h1>\
             <table><caption>Shares</caption><tr><th>Code<th>Last<th>Volume</tr>\
             <tr><td>GAZP<td>301.5<td>1000</tr><tr><td>SBER<td>250<td>2000</tr></table>\
             <p>Total 12</p>",
            None,
        );
        crate::hierarchy::assign_ids(&mut h);
        h
    }

    fn watch(yaml: &str) -> Watch {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("w.yaml"), yaml).unwrap();
        let loaded = crate::config::load_watches(dir.path(), &crate::config::daemon_defaults())
            .unwrap_or_else(|d| panic!("{d:?}"));
        loaded.into_iter().next().unwrap()
    }

    #[test]
    fn a_clip_takes_in_the_numbers_below_it_and_a_threshold_its_node() {
        let h = page();
        let ev = Evaluator::new(&h);
        let w = watch(
            "url: http://example.com/\nschedule: {every: 1h}\n\
             clips:\n  gazp: {xpath: \"//row[@key='GAZP']\"}\n\
             thresholds:\n  - {name: sber, xpath: \"(//row)[2]/cell[@col='Last']/@num\", above: 1}\n",
        );
        let got = values(&ev, &w);
        let nodes: Vec<(&str, &str, f64)> = got
            .iter()
            .map(|v| (v.node.as_str(), v.source.as_str(), v.value))
            .collect();
        assert_eq!(nodes.len(), 3, "{nodes:?}");
        assert!(
            nodes[0].0.ends_with("row[@key='GAZP']/cell[@col='Last']"),
            "{nodes:?}"
        );
        assert_eq!((nodes[0].1, nodes[0].2), ("clip:gazp", 301.5));
        assert_eq!((nodes[1].1, nodes[1].2), ("clip:gazp", 1000.0));
        // Declined natively (a parenthesised path): found by libxml2.
        assert!(
            nodes[2].0.ends_with("row[@key='SBER']/cell[@col='Last']"),
            "{nodes:?}"
        );
        assert_eq!((nodes[2].1, nodes[2].2), ("threshold:sber", 250.0));
    }

    #[test]
    fn no_clips_nor_thresholds_no_series() {
        let h = page();
        let ev = Evaluator::new(&h);
        assert!(
            values(
                &ev,
                &watch("url: http://example.com/\nschedule: {every: 1h}\n")
            )
            .is_empty()
        );
    }
}
