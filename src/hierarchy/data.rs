//! Structured data: the product, price and availability a page publishes
//! for machines in, one `data` element of the hierarchy out.
//!
//! Pages describe their product in up to four encodings, all dropped with
//! the scripts and `meta` elements otherwise: JSON-LD (`<script
//! type="application/ld+json">`, schema.org `Product` with `offers` as an
//! `Offer`, an `AggregateOffer` or an array of them, inside `@graph` or
//! arrays too), microdata (`itemscope`/`itemtype`/`itemprop`), RDFa Lite
//! (`vocab`/`typeof`/`property`) and OpenGraph (`og:title`,
//! `product:price:amount`, `og:price:amount`, `...:currency`,
//! `...:availability`). Each is read into the same schema.org shape and
//! normalised:
//!
//! ```xml
//! <data>
//!   <item type="Product" label="Acme Widget">
//!     <price currency="RUB" num="2879.2">2879.2 RUB</price>
//!     <availability>InStock</availability>
//!   </item>
//! </data>
//! ```
//!
//! # Guarantees
//! - *One price whatever the encoding.* Prices are read as decimals
//!   ([`crate::hierarchy::number`]; machine values with a decimal point, visible
//!   microdata text in the page's locale), so JSON-LD `2879.2` and
//!   microdata `2879.20` are one price, `num="2879.2"`. The element's text
//!   is the canonical number and currency, not either encoding's spelling,
//!   so a page that changes how it encodes a price changes nothing.
//! - *Ranges.* `lowPrice`/`highPrice` (an `AggregateOffer`), or several
//!   offers with different prices, give `low` and `high` attributes and
//!   `num` = the low price (what one pays at least), text `10 - 20 USD`.
//! - *One item, the page's main product*, so that
//!   `/page/data/item/price/@num` needs no XPath hunting. The encodings of
//!   one product are merged into one item (same name or `sku`; OpenGraph
//!   describes the page itself, so it joins the main product). Among
//!   several products the main one is the one whose name the page's title
//!   holds, then one not nested in another item (an `ItemList` of a
//!   category page, `isRelatedTo`), then one with a price, then the first.
//!   Products that are only nested (a listing page) give no item unless
//!   there is exactly one. The other products are left out: they are the
//!   page's visible content, which the rest of the hierarchy holds.
//! - *Never an error.* JSON-LD that does not parse is skipped with a
//!   `debug` log; values of the wrong shape are ignored.
//!
//! # Decisions
//! - When two encodings of the same product disagree on the price, the
//!   first in the order JSON-LD, microdata, RDFa, OpenGraph wins (a
//!   `debug` log names both).
//! - `availability` is the schema.org term without its URL
//!   (`https://schema.org/InStock` is `InStock`).
//! - Bounded work: at most [`MAX_SCRIPTS`] JSON-LD scripts, [`MAX_DEPTH`]
//!   levels of nesting and [`MAX_CANDIDATES`] products are read; the
//!   page's DOM bytes (scripts included) are already charged to its
//!   budget, the nodes made here are charged with the rest of the
//!   hierarchy, and the DOM walk ticks the budget's clock.

use serde_json::{Map, Value};

use super::text::normalize;
use crate::hierarchy::number::{DecimalStyle, parse_number};
use crate::hierarchy::{HNode, Kind};
use crate::page::budget::Budget;
use crate::page::dom::{DOCUMENT, Dom, NodeData, NodeId};

/// JSON-LD scripts read per page.
pub const MAX_SCRIPTS: usize = 64;
/// Nesting read inside one JSON-LD value or microdata item.
pub const MAX_DEPTH: usize = 16;
/// Products considered per page.
pub const MAX_CANDIDATES: usize = 256;

/// Where a product was read from, in the order that wins conflicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Source {
    JsonLd,
    Microdata,
    Rdfa,
    OpenGraph,
}

/// A price: `low` (and `high` for a range) as canonical decimals.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Price {
    low: String,
    high: Option<String>,
    currency: Option<String>,
}

/// One product as one encoding gives it.
#[derive(Debug, Clone)]
struct Product {
    kind: String,
    name: Option<String>,
    sku: Option<String>,
    price: Option<Price>,
    availability: Option<String>,
    /// Not a property of another item.
    top: bool,
    source: Source,
}

/// The `data` element of a page, or `None` when it publishes no product
/// or offer.
pub(super) fn build(
    dom: &Dom,
    title: Option<&str>,
    style: DecimalStyle,
    budget: &Budget,
) -> Option<HNode> {
    let mut found = Vec::new();
    for v in json_ld(dom) {
        products(&v, Source::JsonLd, true, 0, &mut found);
    }
    for (v, source) in embedded(dom, style, budget) {
        products(&v, source, true, 0, &mut found);
    }
    let og = open_graph(dom);
    let main = match (main_product(merge(found), title), og) {
        (Some(main), Some(og)) => join(main, og),
        (main, og) => main.or(og)?,
    };
    Some(node(main))
}

/// The page's product when it has no other encoding than OpenGraph, or
/// the main product with the OpenGraph one merged in.
fn main_product(products: Vec<Product>, title: Option<&str>) -> Option<Product> {
    if products.is_empty() {
        return None;
    }
    let title = title.map(str::to_lowercase).unwrap_or_default();
    let single = products.len() == 1;
    products
        .into_iter()
        .enumerate()
        .filter(|(_, p)| single || p.top)
        .max_by_key(|(i, p)| {
            let named = p
                .name
                .as_deref()
                .is_some_and(|n| !n.is_empty() && title.contains(&n.to_lowercase()));
            (named, p.top, p.price.is_some(), std::cmp::Reverse(*i))
        })
        .map(|(_, p)| p)
}

/// The products of all encodings, each product's encodings merged.
fn merge(found: Vec<Product>) -> Vec<Product> {
    let mut sorted = found;
    sorted.sort_by_key(|p| p.source);
    let mut out: Vec<Product> = Vec::new();
    for p in sorted {
        let same = out.iter().position(|q| {
            let name = |x: &Product| x.name.as_deref().map(|n| normalize(n).to_lowercase());
            (name(q).is_some() && name(q) == name(&p))
                || (q.sku.is_some() && q.sku == p.sku)
                || (p.name.is_none() && p.sku.is_none() && q.source != p.source)
        });
        match same {
            Some(i) => {
                let q = out.remove(i);
                out.insert(i, join(q, p));
            }
            None => out.push(p),
        }
    }
    out
}

/// `a` with what it lacks taken from `b` (`a` wins conflicts).
fn join(mut a: Product, b: Product) -> Product {
    if let (Some(pa), Some(pb)) = (&a.price, &b.price)
        && pa != pb
    {
        tracing::debug!(kept = ?pa, other = ?pb, "structured data: two encodings give different prices");
    }
    a.name = a.name.or(b.name);
    a.sku = a.sku.or(b.sku);
    a.price = a.price.or(b.price);
    a.availability = a.availability.or(b.availability);
    a.top |= b.top;
    if a.kind != "Product" && b.kind == "Product" {
        a.kind = b.kind;
    }
    a
}

/// The hierarchy node of the main product.
fn node(p: Product) -> HNode {
    let mut item = HNode::new(Kind::Item);
    item.label = p.name.filter(|n| !n.is_empty());
    item.attrs.push(("type", p.kind));
    if let Some(price) = p.price {
        let mut n = HNode::new(Kind::Price);
        let mut text = price.low.clone();
        if let Some(high) = &price.high {
            text.push_str(" - ");
            text.push_str(high);
        }
        if let Some(c) = &price.currency {
            text.push(' ');
            text.push_str(c);
            n.attrs.push(("currency", c.clone()));
        }
        if let Some(high) = price.high {
            n.attrs.push(("low", price.low.clone()));
            n.attrs.push(("high", high));
        }
        n.num = Some(price.low);
        n.text = Some(text);
        item.children.push(n);
    }
    if let Some(a) = p.availability {
        let mut n = HNode::new(Kind::Availability);
        n.text = Some(a);
        item.children.push(n);
    }
    let mut data = HNode::new(Kind::Data);
    data.children.push(item);
    data
}

/// The parsed JSON-LD scripts of the page; those that do not parse are
/// skipped with a debug log.
fn json_ld(dom: &Dom) -> Vec<Value> {
    let mut out = Vec::new();
    let mut seen = 0usize;
    for id in 0..dom.len() {
        let Some(e) = dom.element(id) else { continue };
        if &*e.name != "script"
            || !e
                .attr("type")
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/ld+json"))
        {
            continue;
        }
        seen += 1;
        if seen > MAX_SCRIPTS {
            tracing::debug!(
                limit = MAX_SCRIPTS,
                "structured data: further JSON-LD scripts skipped"
            );
            break;
        }
        let mut text = String::new();
        for c in dom.children(id) {
            if let NodeData::Text(t) = &dom.node(c).data {
                text.push_str(t);
            }
        }
        let body = strip_wrappers(&text);
        match serde_json::from_str::<Value>(body) {
            Ok(v) => out.push(v),
            Err(error) => {
                tracing::debug!(error = %crate::ErrorChain(&error), "structured data: JSON-LD script skipped");
            }
        }
    }
    out
}

/// JSON-LD as some pages wrap it: in an HTML comment or CDATA section.
fn strip_wrappers(text: &str) -> &str {
    let mut t = text.trim();
    for (open, close) in [
        ("<!--", "-->"),
        ("//<![CDATA[", "//]]>"),
        ("<![CDATA[", "]]>"),
    ] {
        if let Some(inner) = t.strip_prefix(open).and_then(|r| r.strip_suffix(close)) {
            t = inner.trim();
        }
    }
    t
}

/// The `@type`s of a JSON-LD object, without a vocabulary prefix.
fn types(o: &Map<String, Value>) -> Vec<String> {
    let term = |s: &str| s.rsplit(['/', '#', ':']).next().unwrap_or(s).to_owned();
    match o.get("@type").or_else(|| o.get("type")) {
        Some(Value::String(s)) => vec![term(s)],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).map(term).collect(),
        _ => Vec::new(),
    }
}

fn is_product(t: &str) -> bool {
    matches!(
        t,
        "Product" | "ProductGroup" | "ProductModel" | "IndividualProduct" | "SomeProducts"
    )
}

fn is_offer(t: &str) -> bool {
    matches!(t, "Offer" | "AggregateOffer")
}

/// Finds products (and offers standing alone) in a JSON-LD value. `top`
/// is whether `v` is not a property of another item.
fn products(v: &Value, source: Source, top: bool, depth: usize, out: &mut Vec<Product>) {
    if depth > MAX_DEPTH || out.len() >= MAX_CANDIDATES {
        return;
    }
    match v {
        Value::Array(a) => {
            for x in a {
                products(x, source, top, depth + 1, out);
            }
        }
        Value::Object(o) => {
            let ts = types(o);
            if let Some(t) = ts.iter().find(|t| is_product(t)) {
                out.push(Product {
                    kind: if t == "Product" {
                        t.clone()
                    } else {
                        "Product".to_owned()
                    },
                    name: string(o.get("name")),
                    sku: string(o.get("sku")).or_else(|| string(o.get("gtin13"))),
                    price: o.get("offers").and_then(|x| offers_price(x, 0)),
                    availability: o.get("offers").and_then(|x| offers_availability(x, 0)),
                    top,
                    source,
                });
            } else if top && ts.iter().any(|t| is_offer(t)) {
                out.push(Product {
                    kind: "Offer".to_owned(),
                    name: string(o.get("name")),
                    sku: string(o.get("sku")),
                    price: offers_price(v, 0),
                    availability: offers_availability(v, 0),
                    top,
                    source,
                });
            }
            for (k, x) in o {
                if k == "offers" && !ts.is_empty() {
                    continue;
                }
                // A page's main entity is the page's own item.
                let still_top = matches!(k.as_str(), "@graph" | "mainEntity")
                    || (top && ts.iter().all(|t| t == "WebPage" || t == "ItemPage"));
                products(x, source, still_top, depth + 1, out);
            }
        }
        _ => {}
    }
}

/// A JSON-LD string or number as trimmed text (the first of an array).
fn string(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(normalize(s)).filter(|s| !s.is_empty()),
        Value::Number(n) => Some(n.to_string()),
        Value::Array(a) => string(a.first()),
        Value::Object(o) => string(o.get("@value").or_else(|| o.get("name"))),
        _ => None,
    }
}

/// A machine-written decimal (`2879.20`, `"2,879.20"`) as canonical digits.
fn decimal(v: Option<&Value>) -> Option<String> {
    string(v).and_then(|s| parse_number(&s, DecimalStyle::Point))
}

/// The price of `offers`: one offer, an aggregate, or several (a range
/// when their prices differ).
fn offers_price(v: &Value, depth: usize) -> Option<Price> {
    if depth > MAX_DEPTH {
        return None;
    }
    match v {
        Value::Array(a) => {
            let prices: Vec<Price> = a
                .iter()
                .take(MAX_CANDIDATES)
                .filter_map(|x| offers_price(x, depth + 1))
                .collect();
            let low = prices.iter().min_by(|x, y| cmp(&x.low, &y.low))?;
            let high = prices
                .iter()
                .map(|p| p.high.as_ref().unwrap_or(&p.low))
                .max_by(|x, y| cmp(x, y))?;
            Some(Price {
                low: low.low.clone(),
                high: (*high != low.low).then(|| high.clone()),
                currency: low.currency.clone(),
            })
        }
        Value::Object(o) => {
            let currency = string(o.get("priceCurrency")).map(|c| c.to_uppercase());
            let price = decimal(o.get("price"));
            let low = decimal(o.get("lowPrice"));
            let high = decimal(o.get("highPrice"));
            match (price, low, high) {
                (_, Some(low), high) => Some(Price {
                    high: high.filter(|h| *h != low),
                    low,
                    currency,
                }),
                (Some(p), None, _) => Some(Price {
                    low: p,
                    high: None,
                    currency,
                }),
                (None, None, _) => {
                    let mut p = o
                        .get("priceSpecification")
                        .and_then(|s| offers_price(s, depth + 1))
                        .or_else(|| o.get("offers").and_then(|s| offers_price(s, depth + 1)))?;
                    if p.currency.is_none() {
                        p.currency = currency;
                    }
                    Some(p)
                }
            }
        }
        _ => None,
    }
}

/// The availability of `offers` (the first offer that says), as a
/// schema.org term.
fn offers_availability(v: &Value, depth: usize) -> Option<String> {
    if depth > MAX_DEPTH {
        return None;
    }
    match v {
        Value::Array(a) => a
            .iter()
            .take(MAX_CANDIDATES)
            .find_map(|x| offers_availability(x, depth + 1)),
        Value::Object(o) => string(o.get("availability"))
            .map(|a| availability_term(&a))
            .or_else(|| {
                o.get("offers")
                    .and_then(|x| offers_availability(x, depth + 1))
            }),
        _ => None,
    }
}

/// `https://schema.org/InStock` and `instock` are `InStock`; other values
/// stay as written.
fn availability_term(a: &str) -> String {
    let t = a.rsplit(['/', '#', ':']).next().unwrap_or(a).trim();
    const TERMS: &[&str] = &[
        "InStock",
        "OutOfStock",
        "PreOrder",
        "BackOrder",
        "Discontinued",
        "InStoreOnly",
        "LimitedAvailability",
        "OnlineOnly",
        "PreSale",
        "SoldOut",
        "Reserved",
        "MadeToOrder",
    ];
    let squashed: String = t
        .chars()
        .filter(|c| !matches!(c, ' ' | '_' | '-'))
        .collect();
    TERMS
        .iter()
        .find(|x| x.eq_ignore_ascii_case(&squashed))
        .map_or_else(|| t.to_owned(), |x| (*x).to_owned())
}

/// Orders two canonical decimals by value (the digits are kept as they
/// are; only the order is read through floating point).
fn cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let f = |s: &str| s.parse::<f64>().unwrap_or(f64::NAN);
    f(a).total_cmp(&f(b))
}

/// Microdata and RDFa Lite items of the page, as JSON-LD shaped values.
fn embedded(dom: &Dom, style: DecimalStyle, budget: &Budget) -> Vec<(Value, Source)> {
    let mut out = Vec::new();
    let mut stack = vec![(DOCUMENT, 0usize)];
    while let Some((id, depth)) = stack.pop() {
        if !budget.tick() {
            break;
        }
        if let Some(e) = dom.element(id) {
            for (source, scope, prop) in [
                (Source::Microdata, "itemscope", "itemprop"),
                (Source::Rdfa, "typeof", "property"),
            ] {
                if e.attr(scope).is_some() && e.attr(prop).is_none() {
                    out.push((item(dom, id, source, style, 0), source));
                }
            }
        }
        if depth < 512 {
            let before = stack.len();
            stack.extend(dom.children(id).map(|c| (c, depth + 1)));
            stack[before..].reverse();
        }
    }
    out
}

/// The schema.org type name of a microdata `itemtype` or RDFa `typeof`.
fn scope_type(dom: &Dom, id: NodeId, source: Source) -> Option<String> {
    let e = dom.element(id)?;
    let t = match source {
        Source::Microdata => e.attr("itemtype")?,
        _ => e.attr("typeof")?,
    };
    let first = t.split_ascii_whitespace().next()?;
    Some(
        first
            .rsplit(['/', '#', ':'])
            .next()
            .unwrap_or(first)
            .to_owned(),
    )
}

/// One microdata or RDFa item as a JSON-LD shaped object: its type and
/// its properties (nested items as objects).
fn item(dom: &Dom, id: NodeId, source: Source, style: DecimalStyle, depth: usize) -> Value {
    let (scope, prop_attr) = match source {
        Source::Microdata => ("itemscope", "itemprop"),
        _ => ("typeof", "property"),
    };
    let mut o = Map::new();
    if let Some(t) = scope_type(dom, id, source) {
        o.insert("@type".into(), Value::String(t));
    }
    if depth > MAX_DEPTH {
        return Value::Object(o);
    }
    let mut stack: Vec<NodeId> = dom.children(id).collect();
    stack.reverse();
    while let Some(n) = stack.pop() {
        let Some(e) = dom.element(n) else { continue };
        let nested = e.attr(scope).is_some();
        if let Some(props) = e.attr(prop_attr) {
            let value = if nested {
                Some(item(dom, n, source, style, depth + 1))
            } else {
                let from_attr = e
                    .attr("content")
                    .or_else(|| match &*e.name {
                        "a" | "link" | "area" => e.attr("href"),
                        "img" | "source" => e.attr("src"),
                        "data" | "meter" => e.attr("value"),
                        "time" => e.attr("datetime"),
                        _ => None,
                    })
                    .map(normalize);
                match from_attr {
                    Some(v) => Some(Value::String(v)),
                    None => {
                        let text = normalize(&dom.text_content(n));
                        // Visible text is written in the page's locale.
                        Some(Value::String(
                            parse_number(&text, style)
                                .filter(|_| price_property(props))
                                .unwrap_or(text),
                        ))
                    }
                }
            };
            if let Some(v) = value {
                for p in props.split_ascii_whitespace() {
                    let p = p.rsplit(['/', '#', ':']).next().unwrap_or(p).to_owned();
                    o.entry(p).or_insert_with(|| v.clone());
                }
            }
        }
        if !nested {
            let before = stack.len();
            stack.extend(dom.children(n));
            stack[before..].reverse();
        }
    }
    Value::Object(o)
}

fn price_property(props: &str) -> bool {
    props
        .split_ascii_whitespace()
        .any(|p| matches!(p, "price" | "lowPrice" | "highPrice"))
}

/// The product OpenGraph describes (`og:type` aside: a price is enough).
fn open_graph(dom: &Dom) -> Option<Product> {
    let mut get = std::collections::HashMap::new();
    for id in 0..dom.len() {
        let Some(e) = dom.element(id) else { continue };
        if &*e.name != "meta" {
            continue;
        }
        let (Some(p), Some(c)) = (e.attr("property").or(e.attr("name")), e.attr("content")) else {
            continue;
        };
        get.entry(p.trim().to_ascii_lowercase())
            .or_insert_with(|| normalize(c));
    }
    let pick = |keys: &[&str]| keys.iter().find_map(|k| get.get(*k).cloned());
    let amount = pick(&["product:price:amount", "og:price:amount"])
        .and_then(|a| parse_number(&a, DecimalStyle::Point))?;
    Some(Product {
        kind: "Product".to_owned(),
        name: pick(&["og:title"]),
        sku: None,
        price: Some(Price {
            low: amount,
            high: None,
            currency: pick(&["product:price:currency", "og:price:currency"])
                .map(|c| c.to_uppercase()),
        }),
        availability: pick(&["product:availability", "og:availability"])
            .map(|a| availability_term(&a)),
        top: true,
        source: Source::OpenGraph,
    })
}
