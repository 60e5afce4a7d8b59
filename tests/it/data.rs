//! Structured data in the hierarchy: product prices from JSON-LD,
//! microdata, RDFa Lite and OpenGraph, one normalised price each, and a
//! threshold on it through `semclip check`.

use semclip::hierarchy::write::{XmlOptions, to_xml};
use semclip::hierarchy::{HNode, Hierarchy, Kind};
use semclip::xpath::HierarchyDoc;

use crate::util::{describe, fixture, semclip};

/// The threshold XPath the example watch uses: no hunting needed.
const PRICE: &str = "/page/data/item/price/@num";

fn page(name: &str) -> Hierarchy {
    let html = std::fs::read_to_string(fixture(&format!("data/{name}"))).unwrap();
    Hierarchy::from_html(&html, None)
}

/// The prices of the page's `data` element: (num, currency, low, high, text).
fn prices(h: &Hierarchy) -> Vec<(String, String, String, String, String)> {
    fn walk(n: &HNode, out: &mut Vec<(String, String, String, String, String)>) {
        if n.kind == Kind::Price {
            let a = |k: &str| n.attr(k).unwrap_or_default().to_owned();
            out.push((
                n.num.clone().unwrap_or_default(),
                a("currency"),
                a("low"),
                a("high"),
                n.text.clone().unwrap_or_default(),
            ));
        }
        for c in &n.children {
            walk(c, out);
        }
    }
    let mut out = Vec::new();
    for c in h.children.iter().filter(|c| c.kind == Kind::Data) {
        walk(c, &mut out);
    }
    out
}

fn select(h: &Hierarchy, expr: &str) -> String {
    let doc = HierarchyDoc::parse(&to_xml(h, XmlOptions::default())).unwrap();
    let ids = doc.select_ids(expr).unwrap();
    assert_eq!(ids.len(), 1, "{expr}: {ids:?}");
    ids[0].clone()
}

fn p(
    num: &str,
    cur: &str,
    low: &str,
    high: &str,
    text: &str,
) -> (String, String, String, String, String) {
    (num.into(), cur.into(), low.into(), high.into(), text.into())
}

#[test]
fn json_ld_gives_the_main_product_and_skips_bad_scripts() {
    // `@graph`, a nested related product (not the main one), a lower-case
    // currency, and a second script that is not JSON.
    let h = page("jsonld.html");
    assert_eq!(prices(&h), [p("2879.2", "RUB", "", "", "2879.2 RUB")]);
    let xml = to_xml(&h, XmlOptions::default());
    assert!(
        xml.contains(r#"<item label="Acme Widget" type="Product" xpath="/page/data[1]/item[@label='Acme Widget']">"#),
        "{xml}"
    );
    assert!(xml.contains(">InStock</availability>"), "{xml}");
    assert!(!xml.contains("Acme Gadget"), "{xml}");
    assert_eq!(
        select(&h, "/page/data/item/price"),
        "/page/data[1]/item[@label='Acme Widget']/price[1]"
    );
}

#[test]
fn microdata_price_in_the_page_locale() {
    // `2 879,20` as visible text of a Russian page, availability by `href`.
    let h = page("microdata.html");
    assert_eq!(prices(&h), [p("2879.2", "RUB", "", "", "2879.2 RUB")]);
    let xml = to_xml(&h, XmlOptions::default());
    assert!(xml.contains(">OutOfStock</availability>"), "{xml}");
}

#[test]
fn opengraph_price() {
    let h = page("opengraph.html");
    assert_eq!(prices(&h), [p("49.9", "EUR", "", "", "49.9 EUR")]);
    let xml = to_xml(&h, XmlOptions::default());
    assert!(
        xml.contains(r#"<item label="Acme Widget" type="Product""#),
        "{xml}"
    );
    assert!(xml.contains(">InStock</availability>"), "{xml}");
}

#[test]
fn one_price_from_two_encodings_and_the_same_hierarchy_from_either() {
    // changedetection.io #2637: JSON-LD `2879.2`, microdata `2879.20`.
    let html = std::fs::read_to_string(fixture("data/two-encodings.html")).unwrap();
    let both = Hierarchy::from_html(&html, None);
    assert_eq!(prices(&both), [p("2879.2", "RUB", "", "", "2879.2 RUB")]);
    // Either encoding alone gives the same data element.
    let start = html.find("<script").unwrap();
    let end = html.find("</script>").unwrap() + "</script>".len();
    let microdata_only = format!("{}{}", &html[..start], &html[end..]);
    let m = Hierarchy::from_html(&microdata_only, None);
    assert_eq!(m.children[0], both.children[0]);
    assert_eq!(
        semclip::hierarchy::write::content_hash(&m),
        semclip::hierarchy::write::content_hash(&both)
    );
}

#[test]
fn aggregate_offer_is_a_range_and_listed_products_are_not_the_main_one() {
    let h = page("aggregate-rdfa.html");
    assert_eq!(prices(&h), [p("10", "USD", "10", "20", "10 - 20 USD")]);
    let xml = to_xml(&h, XmlOptions::default());
    assert!(
        !xml.contains("type=\"Product\" label=\"Other thing\""),
        "{xml}"
    );
}

#[test]
fn offers_with_different_prices_are_a_range_and_junk_is_no_price() {
    let h = Hierarchy::from_html(
        r#"<title>Thing</title><script type="application/ld+json">
        [{"@type": ["Product"], "name": "Thing", "offers": [
            {"@type": "Offer", "price": "12.50", "priceCurrency": "EUR"},
            {"@type": "Offer", "price": 9.99, "priceCurrency": "EUR"},
            {"@type": "Offer", "price": "call us"}]}]</script>"#,
        None,
    );
    assert_eq!(
        prices(&h),
        [p("9.99", "EUR", "9.99", "12.5", "9.99 - 12.5 EUR")]
    );
    // Nothing usable: no data element, never an error.
    for junk in [
        r#"<script type="application/ld+json">{"@type": "Product", </script>"#,
        r#"<script type="application/ld+json">[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]</script>"#,
        r#"<script type="application/ld+json">"just a string"</script>"#,
    ] {
        let h = Hierarchy::from_html(junk, None);
        assert!(h.children.iter().all(|c| c.kind != Kind::Data), "{junk}");
    }
}

#[test]
fn the_data_element_reads_back_and_diffs_by_name() {
    let h = page("two-encodings.html");
    let xml = to_xml(&h, XmlOptions::default());
    let back = semclip::hierarchy::read::read(&xml).unwrap();
    assert_eq!(to_xml(&back, XmlOptions::default()), xml);
    // A new price is one update named `price`.
    let html = std::fs::read_to_string(fixture("data/two-encodings.html")).unwrap();
    let cheaper = Hierarchy::from_html(
        &html
            .replace("2879.2\"", "2599\"")
            .replace("2879.20", "2599.00"),
        None,
    );
    assert_eq!(prices(&cheaper), [p("2599", "RUB", "", "", "2599 RUB")]);
    let changes = semclip::diff::diff(&h, &cheaper);
    let text = format!("{changes:?}");
    assert!(
        text.contains("2879.2 RUB") && text.contains("2599 RUB"),
        "{text}"
    );
    assert!(text.contains("\"price\""), "{text}");
}

#[test]
fn a_price_threshold_alerts_through_check_on_either_encoding() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let html = std::fs::read_to_string(fixture("data/two-encodings.html")).unwrap();
    let page = dir.join("product.html");
    std::fs::write(&page, &html).unwrap();
    let url = url::Url::from_file_path(&page).unwrap();
    crate::daemon::setup(
        dir,
        "",
        &[(
            "product",
            format!(
                "url: {url}\nschedule: {{every: 1h}}\nthresholds:\n  - name: cheap\n    \
                 xpath: \"{PRICE}\"\n    below: 3000\n    notify: [log]\n"
            ),
        )],
    );
    let config = dir.join("semclip.yaml");
    let args = ["check", "--config", config.to_str().unwrap()];
    let out = semclip(&args, None);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&args, &out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("cheap: 2879.2 is below 3000"),
        "{}",
        describe(&args, &out)
    );
    let alerts = crate::daemon::file_alerts(dir);
    assert_eq!(alerts.len(), 1, "{alerts:#?}");
    assert_eq!(alerts[0]["threshold"]["value"], 2879.2);
    // The page drops its JSON-LD: the microdata gives the same price, so
    // nothing changes and nothing is alerted again.
    let start = html.find("<script").unwrap();
    let end = html.find("</script>").unwrap() + "</script>".len();
    std::fs::write(&page, format!("{}{}", &html[..start], &html[end..])).unwrap();
    let out = semclip(&args, None);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&args, &out));
    assert_eq!(crate::daemon::file_alerts(dir).len(), 1);
}
