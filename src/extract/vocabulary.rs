//! Extraction results as nodes of the semantic hierarchy: an [`Article`],
//! [`Records`] or a [`Region`] in, an [`HNode`] of the public vocabulary out,
//! so XPath thresholds, diffs, the store and the clip server read them like
//! any other part of a page.
//!
//! The vocabulary (documented in docs/watch-files.md, "Extraction and templates"):
//!
//! ```xml
//! <section role="article" label="Headline" byline="By A. Writer" date="2026-11-02">
//!   <text>First paragraph.</text>
//!   <text>Second paragraph.</text>
//! </section>
//! <table role="records" keycol="title">
//!   <row key="The record's title">
//!     <cell col="price" num="12.5">12,50 €</cell>
//!     <cell col="link" href="/item/1">More</cell>
//!   </row>
//! </table>
//! <table role="region" keycol="f1"> ... the same rows ... </table>
//! ```
//!
//! A record becomes a `row` keyed by its identifying field ([`key_field`]:
//! a title, a name, a link's text; not a price, a date, a rank or an
//! image), made unique as table rows are (`x`, `x #2`, with `ordinal`);
//! the table's `keycol` names that field. The key field is not repeated as
//! a `cell`, as a table's key column is not: the key is the row's
//! identity, and a cell holding it again would double every key and read
//! a renamed record as a changed value. The record's other fields are
//! `cell`s named by the field name. A record without the key field (a
//! second region's records, an empty title) is keyed by its first field
//! that reads as a name, else its first non-empty field, which is then
//! not repeated as a cell either. Positions in the source page (index
//! XPaths, wrappers) are deliberately left out of the hierarchy: they are
//! markup, and an ad inserted above the list would otherwise change every
//! node and the content hash. `semclip extract --format json` carries
//! them.

use std::sync::Arc;

use super::{Article, Record, Records, Region, names};
use crate::hierarchy::key::make_unique;
use crate::hierarchy::number::{DecimalStyle, parse_number};
use crate::hierarchy::{HNode, Kind};

/// The `role` of an article section.
pub const ROLE_ARTICLE: &str = "article";
/// The `role` of a records table.
pub const ROLE_RECORDS: &str = "records";
/// The `role` of a DEIP region table.
pub const ROLE_REGION: &str = "region";

/// The article as a `section role="article"` with one `text` per paragraph.
pub fn article_node(a: &Article) -> HNode {
    let mut s = HNode::new(Kind::Section);
    s.label = a.title.clone().filter(|t| !t.is_empty());
    s.attrs.push(("role", ROLE_ARTICLE.to_owned()));
    if let Some(b) = a.byline.as_ref().filter(|b| !b.is_empty()) {
        s.attrs.push(("byline", b.clone()));
    }
    if let Some(d) = a.date.as_ref().filter(|d| !d.is_empty()) {
        s.attrs.push(("date", d.clone()));
    }
    s.children = a
        .paragraphs
        .iter()
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            let mut t = HNode::new(Kind::Text);
            t.text = Some(p.clone());
            t
        })
        .collect();
    s
}

/// The records as a `table role="records"`.
pub fn records_node(r: &Records, style: DecimalStyle) -> HNode {
    table(ROLE_RECORDS, &r.records, style)
}

/// The region's records as a `table role="region"`.
pub fn region_node(r: &Region, style: DecimalStyle) -> HNode {
    table(ROLE_REGION, &r.records, style)
}

/// Share of the records a key field must cover (hold a non-empty text in).
const KEY_COVERAGE: f64 = 0.5;

/// Share of a key field's texts that must read as names
/// ([`names::reads_as_name`]).
const KEY_NAME_SHARE: f64 = 0.8;

/// Distinct share over the records from which a field counts as
/// identifying them (a list may repeat a title or two).
const KEY_DISTINCT: f64 = 0.95;

/// Longest mean key text (characters) preferred: a title, not a paragraph.
const KEY_SHORT: usize = 120;

/// The name of the field that identifies the records: among the fields
/// whose name does not say they are a value or a picture
/// ([`names::identity_of_name`]: `price`, `date`, `rank`, `image`, ...),
/// which hold a text in at least [`KEY_COVERAGE`] of the records and
/// whose texts read as names ([`KEY_NAME_SHARE`]), the one that is
/// distinct over the records ([`KEY_DISTINCT`] and covering nine in
/// ten), then whose name says it names the record (`title`, `name`,
/// `Company`), then short ([`KEY_SHORT`]), then a link's text, then the
/// one holding most distinct texts, then the first. Without such a field:
/// the field holding most distinct texts, else the first. `None` when no
/// record has a field.
pub fn key_field(records: &[Record]) -> Option<String> {
    // Field names in order of first appearance, with each record's first
    // text under that name.
    let mut order: Vec<&str> = Vec::new();
    let mut texts: Vec<Vec<&str>> = Vec::new();
    let mut links: Vec<usize> = Vec::new();
    let mut index: rustc_hash::FxHashMap<&str, usize> = Default::default();
    for r in records {
        let mut here: rustc_hash::FxHashSet<&str> = Default::default();
        for f in &r.fields {
            let k = *index.entry(f.name.as_str()).or_insert_with(|| {
                order.push(&f.name);
                texts.push(Vec::new());
                links.push(0);
                order.len() - 1
            });
            if !f.text.is_empty() && here.insert(&f.name) {
                texts[k].push(&f.text);
                links[k] += usize::from(f.href.is_some());
            }
        }
    }
    let n = records.len().max(1) as f64;
    let best = order
        .iter()
        .enumerate()
        .filter_map(|(k, name)| {
            let t = &texts[k];
            if t.is_empty() {
                return None;
            }
            let distinct = t.iter().collect::<rustc_hash::FxHashSet<_>>().len();
            let covered = t.len() as f64 / n;
            let named =
                t.iter().filter(|x| names::reads_as_name(x)).count() as f64 / t.len() as f64;
            let eligible = names::identity_of_name(name) >= 0
                && covered >= KEY_COVERAGE
                && named >= KEY_NAME_SHARE;
            let identifies = covered >= 0.9 && distinct as f64 >= KEY_DISTINCT * t.len() as f64;
            let mean = t.iter().map(|x| x.chars().count()).sum::<usize>() / t.len();
            let rank = (
                eligible,
                eligible && identifies,
                eligible && names::identity_of_name(name) > 0,
                mean <= KEY_SHORT,
                links[k] * 2 > t.len(),
                distinct,
                std::cmp::Reverse(k),
            );
            Some((rank, *name))
        })
        .max_by_key(|(rank, _)| *rank)
        .map(|(_, name)| name.to_owned());
    best.or_else(|| order.first().map(|n| (*n).to_owned()))
}

fn table(role: &str, records: &[Record], style: DecimalStyle) -> HNode {
    let mut t = HNode::new(Kind::Table);
    let keycol = key_field(records);
    // Attribute order is the one `document::read` gives back.
    if let Some(k) = &keycol {
        t.attrs.push(("keycol", k.clone()));
    }
    t.attrs.push(("role", role.to_owned()));
    // Per record: the index of the field that keys it.
    let key_index: Vec<Option<usize>> = records
        .iter()
        .map(|r| {
            let nonempty = |f: &&super::Field| !f.text.is_empty();
            r.fields
                .iter()
                .position(|f| Some(&f.name) == keycol.as_ref() && nonempty(&f))
                .or_else(|| {
                    r.fields
                        .iter()
                        .position(|f| nonempty(&f) && names::reads_as_name(&f.text))
                })
                .or_else(|| r.fields.iter().position(|f| nonempty(&f)))
        })
        .collect();
    let mut keys: Vec<String> = records
        .iter()
        .zip(&key_index)
        .map(|(r, k)| k.map(|k| r.fields[k].text.clone()).unwrap_or_default())
        .collect();
    let before = keys.clone();
    make_unique(&mut keys);
    for ((record, key), (k, old)) in records.iter().zip(keys).zip(key_index.iter().zip(before)) {
        let mut row = HNode::new(Kind::Row);
        if key != old {
            // As a table row's: the suffix is the row's ordinal.
            let ordinal = key.rsplit(" #").next().unwrap_or_default().to_owned();
            row.attrs.push(("ordinal", ordinal));
        }
        row.key = Some(key).filter(|k| !k.is_empty());
        for (i, f) in record.fields.iter().enumerate() {
            if Some(i) == *k {
                continue;
            }
            let mut c = HNode::new(Kind::Cell);
            c.col = Some(Arc::<str>::from(f.name.as_str())).filter(|n| !n.is_empty());
            if let Some(h) = &f.href {
                c.attrs.push(("href", h.clone()));
            }
            if !f.text.is_empty() {
                c.num = parse_number(&f.text, style);
                c.text = Some(f.text.clone());
            }
            row.children.push(c);
        }
        if row.key.is_some() || !row.children.is_empty() {
            t.children.push(row);
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::Field;
    use crate::hierarchy::write::{XmlOptions, to_xml};
    use crate::hierarchy::{Hierarchy, assign_ids};

    fn field(name: &str, text: &str, href: Option<&str>) -> Field {
        Field {
            name: name.into(),
            text: text.into(),
            href: href.map(Into::into),
            xpath: "/body[1]".into(),
        }
    }

    #[test]
    fn records_become_keyed_rows_with_numeric_cells() {
        let records = Records {
            records: vec![
                Record {
                    fields: vec![
                        field("title", "GAZP", Some("/q/gazp")),
                        field("price", "1 234,5", None),
                    ],
                    xpaths: vec!["/body[1]/div[1]".into()],
                },
                Record {
                    fields: vec![field("title", "GAZP", None), field("price", "7", None)],
                    xpaths: vec!["/body[1]/div[2]".into()],
                },
            ],
        };
        let mut h = Hierarchy {
            title: None,
            url: None,
            lang: None,
            children: vec![records_node(&records, DecimalStyle::Comma)],
        };
        assign_ids(&mut h);
        let xml = to_xml(&h, XmlOptions::default());
        assert!(
            xml.contains(r#"<table keycol="title" role="records" xpath="/page/table[1]">"#),
            "{xml}"
        );
        assert!(
            xml.contains(r#"<row key="GAZP" xpath="/page/table[1]/row[@key='GAZP']">"#),
            "{xml}"
        );
        assert!(xml.contains(r#"<row key="GAZP #2""#), "{xml}");
        assert!(xml.contains(r#"<cell col="price" num="1234.5""#), "{xml}");
        assert!(
            !xml.contains("/body[1]"),
            "source positions stay out: {xml}"
        );
    }

    #[test]
    fn article_is_a_section_with_paragraphs_and_reads_back() {
        let a = Article {
            title: Some("Headline".into()),
            byline: Some("By A. Writer".into()),
            date: Some("2026-11-02".into()),
            paragraphs: vec!["One.".into(), " ".into(), "Two.".into()],
            xpath: None,
            method: Default::default(),
        };
        let mut h = Hierarchy {
            title: None,
            url: None,
            lang: None,
            children: vec![article_node(&a)],
        };
        assign_ids(&mut h);
        let xml = to_xml(&h, XmlOptions::default());
        let back = crate::hierarchy::read::read(&xml).unwrap_or_else(|e| panic!("{e}: {xml}"));
        assert_eq!(back, h, "the vocabulary reads back unchanged");
        let s = &back.children[0];
        assert_eq!(s.label.as_deref(), Some("Headline"));
        assert_eq!(s.attr("role"), Some("article"));
        assert_eq!(s.attr("byline"), Some("By A. Writer"));
        assert_eq!(s.children.len(), 2);
    }
}
