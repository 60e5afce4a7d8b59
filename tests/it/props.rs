//! Property tests over generated HTML: no panic, always a well-formed,
//! deterministic document whose ids select their own elements, and a
//! hierarchy unchanged by markup-only changes.

use proptest::prelude::*;
use semclip::hierarchy::Hierarchy;
use semclip::hierarchy::write::{XmlOptions, to_xml};
use semclip::page::dom::Dom;

use crate::corpus::check_page;
use crate::markup::{CHANGES, write_html};

const TAGS: &[&str] = &[
    "div",
    "p",
    "span",
    "b",
    "i",
    "a",
    "h1",
    "h2",
    "h3",
    "h6",
    "ul",
    "ol",
    "li",
    "dl",
    "dt",
    "dd",
    "table",
    "tr",
    "td",
    "th",
    "thead",
    "tbody",
    "caption",
    "section",
    "article",
    "nav",
    "header",
    "pre",
    "blockquote",
    "address",
    "img",
    "br",
    "script",
    "style",
    "font",
    "center",
    "form",
    "select",
    "option",
    "svg",
    "template",
];

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z ]{0,12}",
        "[0-9 ,.%$-]{1,10}",
        "[\\x00-\\x1f\u{a0}\u{fffe}\u{ffff}'\"<>&]{1,6}",
        "[а-яё ]{1,8}",
        Just("  \n\t ".to_owned()),
    ]
}

fn attrs() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            (1u32..5).prop_map(|n| format!(" colspan={n}")),
            (0u32..4).prop_map(|n| format!(" rowspan={n}")),
            Just(" role=table".to_owned()),
            Just(" role=row".to_owned()),
            Just(" role=cell".to_owned()),
            Just(" role=presentation".to_owned()),
            Just(" hidden".to_owned()),
            Just(" lang=ru".to_owned()),
            Just(" alt='a\"b'".to_owned()),
            Just(" class=x".to_owned()),
        ],
        0..3,
    )
    .prop_map(|v| v.concat())
}

fn html() -> impl Strategy<Value = String> {
    let leaf = text().prop_map(|t| t.replace('<', "&lt;"));
    leaf.prop_recursive(5, 64, 6, |inner| {
        (
            prop::sample::select(TAGS),
            attrs(),
            prop::collection::vec(inner, 0..6),
            any::<bool>(),
        )
            .prop_map(|(tag, attrs, children, close)| {
                let body = children.concat();
                if close {
                    format!("<{tag}{attrs}>{body}</{tag}>")
                } else {
                    format!("<{tag}{attrs}>{body}")
                }
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, .. ProptestConfig::default() })]

    #[test]
    fn generated_pages_give_valid_self_addressed_documents(body in html(), title in text()) {
        let page = format!("<title>{}</title>{body}", title.replace('<', ""));
        let problems = check_page(&page);
        prop_assert!(problems.is_empty(), "{problems:?}");
    }

    #[test]
    fn generated_pages_are_markup_invariant(body in html()) {
        let dom = Dom::parse(&body);
        let base = to_xml(&Hierarchy::from_html(&write_html(&dom, crate::markup::Change::None), None), XmlOptions::default());
        for change in CHANGES {
            let changed = to_xml(&Hierarchy::from_html(&write_html(&dom, change), None), XmlOptions::default());
            prop_assert_eq!(&base, &changed, "{:?}", change);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    /// diff(a, a) is empty, and the indexed matcher agrees with the
    /// all-pairs oracle on unrelated and on related (edited) pages.
    #[test]
    fn diff_properties(a in html(), b in html(), edit in text()) {
        let ha = Hierarchy::from_html(&a, None);
        let hb = Hierarchy::from_html(&b, None);
        prop_assert!(semclip::diff::diff(&ha, &ha).is_empty());
        prop_assert_eq!(semclip::diff::diff(&ha, &hb), semclip::diff::diff_naive(&ha, &hb));
        // A related page: the same markup with one text replaced.
        let related = Hierarchy::from_html(&format!("{a}<p>{}</p>", edit.replace('<', "")), None);
        prop_assert_eq!(semclip::diff::diff(&ha, &related), semclip::diff::diff_naive(&ha, &related));
        // Complete and consistent: the changes turn OLD's branches into NEW's.
        for (x, y) in [(&ha, &hb), (&hb, &ha), (&ha, &related), (&related, &ha)] {
            let applied = crate::complete::check(x, y, &semclip::diff::diff(x, y));
            prop_assert!(applied.is_ok(), "{:?}", applied);
        }
        // Equal hashes mean no changes.
        if semclip::hierarchy::write::content_hash(&ha) == semclip::hierarchy::write::content_hash(&hb) {
            prop_assert!(semclip::diff::diff(&ha, &hb).is_empty());
        }
    }
}
