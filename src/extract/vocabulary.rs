//! Extraction results as nodes of the semantic hierarchy: an [`Article`],
//! [`Records`] or a [`Region`] in, an [`HNode`] of the public vocabulary out,
//! so XPath thresholds, diffs, the store and the clip server read them like
//! any other part of a page.
//!
//! The vocabulary (documented in the README, "Extraction"):
//!
//! ```xml
//! <section role="article" label="Headline" byline="By A. Writer" date="2026-11-02">
//!   <text>First paragraph.</text>
//!   <text>Second paragraph.</text>
//! </section>
//! <table role="records" keycol="title">
//!   <row key="First record's first field">
//!     <cell col="price" num="12.5">12,50 €</cell>
//!     <cell col="link" href="/item/1">More</cell>
//!   </row>
//! </table>
//! <table role="region" keycol="f1"> ... the same rows ... </table>
//! ```
//!
//! A record becomes a `row` keyed by its first field's text (made unique
//! as table rows are: `x`, `x #2`), its other fields `cell`s named by the
//! field name. Positions in the source page (index XPaths, wrappers) are
//! deliberately left out of the hierarchy: they are markup, and an ad
//! inserted above the list would otherwise change every node and the
//! content hash. `semclip extract --format json` carries them.

use std::sync::Arc;

use super::{Article, Record, Records, Region};
use crate::hierarchy::number::{DecimalStyle, parse_number};
use crate::hierarchy::table::make_unique;
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

fn table(role: &str, records: &[Record], style: DecimalStyle) -> HNode {
    let mut t = HNode::new(Kind::Table);
    // Attribute order is the one `document::read` gives back.
    if let Some(first) = records.iter().find_map(|r| r.fields.first()) {
        t.attrs.push(("keycol", first.name.clone()));
    }
    t.attrs.push(("role", role.to_owned()));
    let mut keys: Vec<String> = records
        .iter()
        .map(|r| r.fields.first().map(|f| f.text.clone()).unwrap_or_default())
        .collect();
    make_unique(&mut keys);
    for (record, key) in records.iter().zip(keys) {
        let mut row = HNode::new(Kind::Row);
        row.key = Some(key).filter(|k| !k.is_empty());
        for f in record.fields.iter().skip(1) {
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
