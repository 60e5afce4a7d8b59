//! Generators of hostile page shapes: tiny inputs that make a parser or a
//! hierarchy builder amplify. Shared by the integration tests
//! (`hostile.rs`, the fixture site) and `examples/hostile_corpus.rs`, which
//! writes small instances as the fuzz target's seeds; std only, so both
//! can include it.

use std::fmt::Write as _;

/// `tables` tables whose first cell spans `span` x `span` slots: 70 bytes
/// each for a million cells at the default span cap (the 1,000 rows the
/// span adds below the table each repeat the cell 1,000 times).
pub(crate) fn span_bomb(tables: usize, span: usize) -> String {
    let mut s = String::from("<title>spans</title>");
    for _ in 0..tables {
        let _ = write!(
            s,
            "<table><tr><td rowspan={span} colspan={span}>x<td>y</tr><tr><td>z</table>"
        );
    }
    s
}

/// One heading of `label` bytes over `paragraphs` paragraphs: every
/// paragraph's id used to copy the whole heading.
pub(crate) fn long_heading(label: usize, paragraphs: usize) -> String {
    let mut s = String::from("<title>heading</title><h1>");
    s.extend(std::iter::repeat_n('h', label));
    s.push_str("</h1>");
    for i in 0..paragraphs {
        let _ = write!(s, "<p>paragraph {i}</p>");
    }
    s
}

/// `open` formatting elements with distinct attributes (so the parser's
/// "Noah's Ark" clause keeps them all), closed by their block but left in
/// the list of active formatting elements; then `rounds` blocks of text:
/// html5ever reconstructs every one of them inside each block, `open *
/// rounds` elements from a dozen bytes a round.
pub(crate) fn misnested_formatting(open: usize, rounds: usize) -> String {
    let mut s = String::from("<title>formatting</title><div>");
    for i in 0..open {
        let _ = write!(s, "<b id=b{i}>");
    }
    s.push_str("</div>");
    for _ in 0..rounds {
        s.push_str("<div>x</div>");
    }
    s
}

/// A table whose row keys collide with the ` #n` suffixes duplicates get:
/// `k`, `k #2` ... `k #n`, then `k` another `n` times.
pub(crate) fn colliding_keys(n: usize) -> String {
    let mut s = String::from("<title>keys</title><table><tr><th>Key<th>Value</tr>");
    for i in 1..=n {
        if i == 1 {
            s.push_str("<tr><td>k<td>1</tr>");
        } else {
            let _ = write!(s, "<tr><td>k #{i}<td>{i}</tr>");
        }
    }
    for i in 0..n {
        let _ = write!(s, "<tr><td>k<td>{i}</tr>");
    }
    s.push_str("</table>");
    s
}

/// A table of a header row and `rows` data rows of `cols` columns: every
/// data row is one record of `cols` fields to `extract records`.
pub(crate) fn wide_table(rows: usize, cols: usize) -> String {
    let mut s = String::from("<title>wide</title><table><tr>");
    for i in 0..cols {
        let _ = write!(s, "<th>c{i}</th>");
    }
    s.push_str("</tr>");
    for r in 0..rows {
        s.push_str("<tr>");
        for i in 0..cols {
            let _ = write!(s, "<td>{}</td>", r * cols + i);
        }
        s.push_str("</tr>");
    }
    s.push_str("</table>");
    s
}

/// Every shape at attack size, by name.
pub(crate) fn shapes() -> Vec<(&'static str, String)> {
    vec![
        ("span-bomb", span_bomb(8, 1000)),
        ("long-heading", long_heading(1 << 20, 2000)),
        ("misnested-formatting", misnested_formatting(400, 10_000)),
        ("colliding-keys", colliding_keys(20_000)),
        ("wide-table", wide_table(3, 40_000)),
    ]
}

/// Every shape at a few KB, for fuzz seeds (the fuzzer grows the counts).
pub(crate) fn seeds() -> Vec<(&'static str, String)> {
    vec![
        ("span-bomb", span_bomb(2, 1000)),
        ("long-heading", long_heading(300, 20)),
        ("misnested-formatting", misnested_formatting(30, 60)),
        ("colliding-keys", colliding_keys(40)),
        ("wide-table", wide_table(2, 60)),
    ]
}
