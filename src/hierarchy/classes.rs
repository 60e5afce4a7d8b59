//! Tag classes: what every HTML5 element contributes to the hierarchy.
//!
//! docs/algorithms.md, "Tag classes", sorts HTML 4 tags into *type 1* (they build the
//! hierarchy) and *type 2* (they only present data and are removed, their
//! text kept). [`TAG_CLASSES`] extends that to every element of the HTML
//! Living Standard plus the obsolete ones still found on the web, in one
//! table. Elements not listed (custom elements, typos) are treated as
//! [`TagClass::Inline`], which is how a browser displays an unknown element.

/// What an element does to the hierarchy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagClass {
    /// Dropped whole, content included (scripts, styles, embedded content,
    /// form controls, head-only elements).
    Drop,
    /// Type 2, inline: removed, its text joins the surrounding text with no
    /// added space (`<b>Hel</b>lo` is `Hello`).
    Inline,
    /// `<br>`: a line break, read as a space.
    Break,
    /// `<wbr>`: nothing at all.
    Invisible,
    /// Type 2, block: removed, but its edges end a run of text, so
    /// `<div>a</div><div>b</div>` gives two texts, not `ab`.
    Boundary,
    /// `<img>`: type 1, contributes its `alt` text as a word.
    Image,
    /// `<h1>`..`<h6>` with their rank.
    Heading(u8),
    /// Sectioning elements: a section when they hold their own heading,
    /// otherwise a [`TagClass::Boundary`].
    Sectioning,
    /// `<p>`: a paragraph.
    Paragraph,
    /// Preformatted text (line breaks are data).
    Pre,
    /// `<blockquote>`.
    Quote,
    /// Lists: `<ul>`, `<ol>`, `<menu>`, `<dir>`.
    List,
    /// `<li>`.
    ListItem,
    /// `<dl>`.
    DefList,
    /// `<dt>`.
    DefTerm,
    /// `<dd>`.
    DefDesc,
    /// `<table>`.
    Table,
    /// Parts of a table; met outside table building only inside layout
    /// tables, where they act as boundaries.
    TablePart,
    /// `<address>`: its text and first link.
    Address,
}

/// Every known element and its class, sorted by name for binary search.
/// Type 1 in the paper's sense: headings, P, PRE, BLOCKQUOTE, lists, DL,
/// tables, ADDRESS, IMG. Everything else is type 2 or dropped.
pub const TAG_CLASSES: &[(&str, TagClass)] = {
    use TagClass::*;
    &[
        ("a", Inline),
        ("abbr", Inline),
        ("acronym", Inline),
        ("address", Address),
        ("applet", Drop),
        ("area", Drop),
        ("article", Sectioning),
        ("aside", Sectioning),
        ("audio", Drop),
        ("b", Inline),
        ("base", Drop),
        ("basefont", Drop),
        ("bdi", Inline),
        ("bdo", Inline),
        ("bgsound", Drop),
        ("big", Inline),
        ("blink", Inline),
        ("blockquote", Quote),
        ("body", Boundary),
        ("br", Break),
        ("button", Drop),
        ("canvas", Drop),
        ("caption", TablePart),
        ("center", Boundary),
        ("cite", Inline),
        ("code", Inline),
        ("col", TablePart),
        ("colgroup", TablePart),
        ("data", Inline),
        ("datalist", Drop),
        ("dd", DefDesc),
        ("del", Inline),
        ("details", Boundary),
        ("dfn", Inline),
        ("dialog", Boundary),
        ("dir", List),
        ("div", Boundary),
        ("dl", DefList),
        ("dt", DefTerm),
        ("em", Inline),
        ("embed", Drop),
        ("fencedframe", Drop),
        ("fieldset", Boundary),
        ("figcaption", Boundary),
        ("figure", Boundary),
        ("font", Inline),
        ("footer", Sectioning),
        ("form", Boundary),
        ("frame", Drop),
        ("frameset", Drop),
        ("h1", Heading(1)),
        ("h2", Heading(2)),
        ("h3", Heading(3)),
        ("h4", Heading(4)),
        ("h5", Heading(5)),
        ("h6", Heading(6)),
        ("head", Drop),
        ("header", Sectioning),
        ("hgroup", Boundary),
        ("hr", Boundary),
        ("html", Boundary),
        ("i", Inline),
        ("iframe", Drop),
        ("image", Image),
        ("img", Image),
        ("input", Drop),
        ("ins", Inline),
        ("isindex", Drop),
        ("kbd", Inline),
        ("keygen", Drop),
        ("label", Inline),
        ("legend", Boundary),
        ("li", ListItem),
        ("link", Drop),
        ("listing", Pre),
        ("main", Sectioning),
        ("map", Drop),
        ("mark", Inline),
        ("marquee", Inline),
        ("math", Drop),
        ("menu", List),
        ("meta", Drop),
        ("meter", Drop),
        ("multicol", Boundary),
        ("nav", Sectioning),
        ("nobr", Inline),
        ("noembed", Drop),
        ("noframes", Boundary),
        ("noscript", Drop),
        ("object", Drop),
        ("ol", List),
        ("optgroup", Drop),
        ("option", Drop),
        ("output", Inline),
        ("p", Paragraph),
        ("param", Drop),
        ("picture", Inline),
        ("plaintext", Pre),
        ("portal", Drop),
        ("pre", Pre),
        ("progress", Drop),
        ("q", Inline),
        ("rb", Inline),
        ("rp", Drop),
        ("rt", Inline),
        ("rtc", Inline),
        ("ruby", Inline),
        ("s", Inline),
        ("samp", Inline),
        ("script", Drop),
        ("search", Boundary),
        ("section", Sectioning),
        ("select", Drop),
        ("selectedcontent", Drop),
        ("slot", Inline),
        ("small", Inline),
        ("source", Drop),
        ("spacer", Drop),
        ("span", Inline),
        ("strike", Inline),
        ("strong", Inline),
        ("style", Drop),
        ("sub", Inline),
        ("summary", Boundary),
        ("sup", Inline),
        ("svg", Drop),
        ("table", Table),
        ("tbody", TablePart),
        ("td", TablePart),
        ("template", Drop),
        ("textarea", Drop),
        ("tfoot", TablePart),
        ("th", TablePart),
        ("thead", TablePart),
        ("time", Inline),
        ("title", Drop),
        ("tr", TablePart),
        ("track", Drop),
        ("tt", Inline),
        ("u", Inline),
        ("ul", List),
        ("var", Inline),
        ("video", Drop),
        ("wbr", Invisible),
        ("xmp", Pre),
    ]
};

/// The class of an HTML element by its (lower-case) local name.
pub fn class_of(name: &str) -> TagClass {
    match TAG_CLASSES.binary_search_by(|(n, _)| (*n).cmp(name)) {
        Ok(i) => TAG_CLASSES[i].1,
        Err(_) => TagClass::Inline,
    }
}

/// ARIA roles that change an element's class, by the first role token.
/// `table`/`grid`/`treegrid` make div-built tables into tables ("Tag classes");
/// `heading` makes a heading of rank `aria-level` (default 2).
pub fn role_class(role: &str, aria_level: Option<&str>) -> Option<TagClass> {
    let role = role.split_ascii_whitespace().next()?.to_ascii_lowercase();
    match role.as_str() {
        "table" | "grid" | "treegrid" => Some(TagClass::Table),
        "heading" => {
            let level = aria_level
                .and_then(|l| l.trim().parse::<u8>().ok())
                .filter(|l| (1..=6).contains(l))
                .unwrap_or(2);
            Some(TagClass::Heading(level))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_unique() {
        for pair in TAG_CLASSES.windows(2) {
            assert!(pair[0].0 < pair[1].0, "{} before {}", pair[0].0, pair[1].0);
        }
    }

    #[test]
    fn classes_follow_the_paper() {
        assert_eq!(class_of("b"), TagClass::Inline);
        assert_eq!(class_of("div"), TagClass::Boundary);
        assert_eq!(class_of("script"), TagClass::Drop);
        assert_eq!(class_of("h3"), TagClass::Heading(3));
        assert_eq!(class_of("table"), TagClass::Table);
        assert_eq!(class_of("my-widget"), TagClass::Inline);
        assert_eq!(role_class("grid", None), Some(TagClass::Table));
        assert_eq!(role_class("heading", Some("4")), Some(TagClass::Heading(4)));
        assert_eq!(role_class("heading", Some("9")), Some(TagClass::Heading(2)));
        assert_eq!(role_class("button", None), None);
    }
}
