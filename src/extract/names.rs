//! Words for record fields: what a page's markup says a piece of data is
//! (a class token, a label, an `itemprop`), and what its text looks like
//! (a price, a date, a rank). Used by [`super::records`] to name fields and
//! by [`super::vocabulary`] to choose the field that identifies a record.
//!
//! # Decisions
//!
//! - **Class tokens** name data only when they read as words: a token is
//!   cut at a BEM modifier (`--sale`), its element part is preferred to
//!   its block (`product-card__price` -> `price`), CSS-module names are read
//!   from their local part (`styles_trustScore__dRMDX` -> `trust-score`:
//!   the `__dRMDX` hash is not a word, `styles` is a file name), and it is
//!   split at `-`, `_` and camelCase humps. Every word must be ASCII
//!   letters, at least three of them, with a vowel (so `css-1x2y3`, `mt-2`,
//!   `sc-bdVaJa` are hashes or utilities and name nothing); layout and
//!   presentation words ([`is_layout_word`]: `row`, `col`, `card`, `flex`,
//!   `text`, `bold`, ...) are dropped, and a token with nothing left names
//!   nothing. The name is the remaining words, at most three, lowercase,
//!   joined by `-`.
//! - **Labels** written for people (a column header, a `dt`, an
//!   `aria-label`) are kept as written (`Price`, `Release date`): the same
//!   convention as a table's column headers, so `cell[@col='Price']` reads
//!   the same on a table and on a list. Long texts (over [`MAX_LABEL`]
//!   characters or [`MAX_LABEL_WORDS`] words) are content, not labels.
//! - **Typing** is English-and-digits only (month names, `ago`), like the
//!   rest of the page reading: a date in another language is just text.

use crate::hierarchy::key::MONTHS;
use crate::hierarchy::number::{DecimalStyle, parse_number};

/// Longest label (characters) taken as a field name.
pub const MAX_LABEL: usize = 40;

/// Most words in a label taken as a field name.
pub const MAX_LABEL_WORDS: usize = 5;

/// Most words kept from a class token.
const MAX_TOKEN_WORDS: usize = 3;

/// Words naming what a record's data is, in class tokens: a token holding
/// one of them is preferred to the element's other tokens.
const DATA_WORDS: &[&str] = &[
    "title",
    "name",
    "headline",
    "price",
    "date",
    "time",
    "author",
    "byline",
    "rating",
    "score",
    "comments",
    "location",
    "address",
    "company",
    "salary",
    "description",
    "summary",
    "category",
    "tags",
    "tag",
    "status",
    "version",
    "brand",
    "model",
    "size",
    "count",
    "votes",
    "points",
    "reviews",
    "stock",
    "availability",
    "discount",
    "amount",
    "duration",
    "phone",
    "email",
    "year",
    "rank",
    "excerpt",
    "source",
    "label",
];

/// Words of a field name that say the field identifies its record.
const IDENTITY_WORDS: &[&str] = &[
    "title",
    "name",
    "headline",
    "heading",
    "subject",
    "product",
    "company",
    "model",
    "item",
    "entity",
    "label",
    "organisation",
    "organization",
    "ticker",
    "symbol",
];

/// Words of a field name that say the field does not identify its record
/// (a value that changes, or a picture).
const NON_IDENTITY_WORDS: &[&str] = &[
    "image",
    "img",
    "photo",
    "picture",
    "thumb",
    "thumbnail",
    "logo",
    "icon",
    "avatar",
    "price",
    "cost",
    "amount",
    "discount",
    "date",
    "time",
    "rank",
    "position",
    "rating",
    "score",
    "stars",
    "votes",
    "points",
    "count",
    "comments",
    "reviews",
    "posted",
    "published",
    "updated",
    "ago",
    "stock",
    "availability",
    "status",
];

/// A word of a class token that says how something looks or where it
/// sits, not what it is (Bootstrap, Tailwind and BEM blocks' vocabulary).
#[expect(
    clippy::too_many_lines,
    reason = "a word list: one match over a vocabulary, not logic"
)]
pub fn is_layout_word(w: &str) -> bool {
    matches!(
        w,
        "row"
            | "rows"
            | "col"
            | "cols"
            | "column"
            | "columns"
            | "item"
            | "items"
            | "card"
            | "cards"
            | "wrapper"
            | "wrap"
            | "container"
            | "inner"
            | "outer"
            | "box"
            | "block"
            | "content"
            | "contents"
            | "body"
            | "flex"
            | "grid"
            | "clearfix"
            | "clear"
            | "float"
            | "left"
            | "right"
            | "center"
            | "centre"
            | "top"
            | "bottom"
            | "middle"
            | "small"
            | "large"
            | "big"
            | "medium"
            | "bold"
            | "strong"
            | "italic"
            | "hidden"
            | "visible"
            | "show"
            | "hide"
            | "active"
            | "selected"
            | "disabled"
            | "first"
            | "last"
            | "odd"
            | "even"
            | "main"
            | "section"
            | "panel"
            | "group"
            | "list"
            | "element"
            | "elem"
            | "child"
            | "parent"
            | "cell"
            | "span"
            | "div"
            | "text"
            | "font"
            | "size"
            | "color"
            | "colour"
            | "base"
            | "normal"
            | "primary"
            | "secondary"
            | "tertiary"
            | "muted"
            | "light"
            | "dark"
            | "white"
            | "black"
            | "red"
            | "green"
            | "blue"
            | "gray"
            | "grey"
            | "pull"
            | "push"
            | "offset"
            | "margin"
            | "padding"
            | "border"
            | "rounded"
            | "shadow"
            | "inline"
            | "display"
            | "relative"
            | "absolute"
            | "fixed"
            | "sticky"
            | "full"
            | "width"
            | "height"
            | "auto"
            | "css"
            | "the"
            | "and"
            | "with"
            | "align"
            | "justify"
            | "self"
            | "start"
            | "end"
            | "between"
            | "around"
            | "overflow"
            | "truncate"
            | "truncated"
            | "ellipsis"
            | "nowrap"
            | "break"
            | "space"
            | "spacing"
            | "gap"
            | "order"
            | "mobile"
            | "desktop"
            | "tablet"
            | "only"
            | "responsive"
            | "fluid"
            | "layout"
            | "component"
            | "module"
            | "widget"
            | "area"
            | "region"
            | "holder"
            | "styles"
            | "style"
            | "root"
            | "default"
            | "appearance"
            | "variant"
            | "theme"
            | "typography"
            | "clamp"
            | "line"
            | "lines"
            | "multi"
            | "single"
            | "short"
            | "long"
            | "skeleton"
            | "placeholder"
            | "loading"
            | "link"
            | "links"
            | "anchor"
            | "button"
            | "btn"
            | "icon"
            | "img"
            | "sprite"
            | "container-fluid"
            | "wide"
            | "narrow"
            | "extra"
            | "xsmall"
            | "xlarge"
            | "upper"
            | "uppercase"
            | "lowercase"
            | "capitalize"
            | "underline"
            | "nounderline"
            | "no"
            | "has"
            | "not"
            | "new"
            | "old"
            | "js"
            | "hover"
            | "focus"
            | "visited"
            | "regular"
            | "semibold"
            | "heavy"
            | "thin"
            | "caption"
            | "display-block"
    )
}

/// A camelCase or kebab/snake token split into lowercase words; `None`
/// when a piece is not a readable word (digits, fewer than three letters,
/// no vowel: a hash or a utility class).
fn readable_words(part: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    for piece in part.split(['-', '_']).filter(|p| !p.is_empty()) {
        let mut word = String::new();
        let mut prev_lower = false;
        for c in piece.chars() {
            if !c.is_ascii_alphabetic() {
                return None;
            }
            if c.is_ascii_uppercase() && prev_lower {
                words.push(std::mem::take(&mut word));
            }
            prev_lower = c.is_ascii_lowercase();
            word.push(c.to_ascii_lowercase());
        }
        words.push(word);
    }
    let readable =
        |w: &String| (3..=24).contains(&w.len()) && w.chars().any(|c| "aeiouy".contains(c));
    (!words.is_empty() && words.iter().all(readable)).then_some(words)
}

/// The name one class token gives (module documentation): `None` for
/// hashes, utilities and pure layout.
pub fn token_name(token: &str) -> Option<String> {
    // A BEM modifier says how, not what.
    let token = token.split("--").next().unwrap_or(token);
    // Element parts after `__` first (the most specific), then the block;
    // inside a part, `_`-segments from the last (a CSS module's local name
    // follows its file's name).
    let mut parts: Vec<&str> = token.split("__").filter(|p| !p.is_empty()).collect();
    parts.reverse();
    for part in parts {
        for segment in part.rsplit('_').filter(|s| !s.is_empty()) {
            let Some(words) = readable_words(segment) else {
                continue;
            };
            let kept: Vec<String> = words.into_iter().filter(|w| !is_layout_word(w)).collect();
            if kept.is_empty() {
                continue;
            }
            let from = kept.len().saturating_sub(MAX_TOKEN_WORDS);
            return Some(kept[from..].join("-"));
        }
    }
    None
}

/// The name a `class` attribute gives: the first token naming data
/// ([`DATA_WORDS`]), else the first token that names anything.
pub fn class_name(class: &str) -> Option<String> {
    let names: Vec<String> = class.split_whitespace().filter_map(token_name).collect();
    names
        .iter()
        .find(|n| n.split('-').any(|w| DATA_WORDS.contains(&w)))
        .or(names.first())
        .cloned()
}

/// An `itemprop` (schema.org) or `data-*` token as a name: its words,
/// lowercase, joined by `-` (`datePublished` -> `date-published`).
pub fn property_name(value: &str) -> Option<String> {
    let first = value.split_whitespace().next()?;
    // A schema.org URL property: its last path step.
    let first = first.rsplit('/').next().unwrap_or(first);
    let words = readable_words(first)?;
    let from = words.len().saturating_sub(MAX_TOKEN_WORDS);
    Some(words[from..].join("-"))
}

/// A text written for people as a label (a column header, a `dt`, an
/// `aria-label`), cleaned as a field name: whitespace collapsed, a
/// trailing colon and surrounding punctuation dropped; `None` when it is
/// too long to be a label or has no letter.
pub fn label_name(text: &str) -> Option<String> {
    let collapsed = super::collapse_whitespace(text);
    let trimmed = collapsed
        .trim_matches(|c: char| !c.is_alphanumeric() && !matches!(c, ')' | '%' | '$' | '€' | '£'))
        .trim();
    if trimmed.is_empty()
        || !trimmed.chars().any(char::is_alphabetic)
        || trimmed.chars().count() > MAX_LABEL
        || trimmed.split_whitespace().count() > MAX_LABEL_WORDS
    {
        return None;
    }
    Some(trimmed.to_owned())
}

/// A short text ending in a colon (`Price:`, `Tags:`): a label for the
/// text after it.
pub fn is_colon_label(text: &str) -> bool {
    let t = text.trim_end();
    (t.ends_with(':') || t.ends_with('：')) && label_name(t).is_some()
}

/// A short text holding a currency sign or code next to a number.
pub fn looks_like_price(text: &str) -> bool {
    if text.chars().count() > 40 || !text.chars().any(|c| c.is_ascii_digit()) {
        return false;
    }
    text.chars()
        .any(|c| matches!(c, '$' | '€' | '£' | '¥' | '₩' | '₹' | '₽'))
        || ["USD", "EUR", "GBP", "JPY"]
            .iter()
            .any(|c| text.contains(c))
}

const UNITS: [&str; 8] = [
    "second", "minute", "hour", "day", "week", "month", "year", "min",
];

/// A short text that is a date: an ISO or numeric date (`2026-11-02`,
/// `02.11.2026`, `11/2/26`), a month's name with a number (`Nov 2, 2026`,
/// `2 November`), a relative one (`3 hours ago`, `yesterday`).
pub fn looks_like_date(text: &str) -> bool {
    let t = text.trim();
    if t.is_empty() || t.chars().count() > 40 || t.split_whitespace().count() > 7 {
        return false;
    }
    let lower = t.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    if matches!(lower.as_str(), "today" | "yesterday" | "just now") {
        return true;
    }
    let has_digit = t.chars().any(|c| c.is_ascii_digit());
    if has_digit && words.contains(&"ago") {
        return words.iter().any(|w| {
            let w = w.trim_end_matches('s');
            UNITS.contains(&w) || matches!(w, "h" | "d" | "m" | "w" | "y" | "hr" | "mo" | "yr")
        }) || words.iter().any(|w| w.ends_with(['h', 'd', 'm', 'w', 'y']));
    }
    if has_digit
        && words.iter().any(|w| {
            MONTHS
                .iter()
                .any(|m| *w == *m || ((3..=4).contains(&w.len()) && m.starts_with(w)))
        })
    {
        return true;
    }
    t.split_whitespace().any(numeric_date)
}

/// One word that is a numeric date: three numbers joined by one of `-`,
/// `/`, `.`, with a four-digit year first or last, or (`/` only) day,
/// month and a two-digit year.
fn numeric_date(word: &str) -> bool {
    // An ISO date-time: the date part.
    let word = word.split('T').next().unwrap_or(word);
    let word = word.trim_end_matches([',', ';']);
    for sep in ['-', '/', '.'] {
        let parts: Vec<&str> = word.split(sep).collect();
        if parts.len() != 3
            || parts
                .iter()
                .any(|p| p.is_empty() || p.len() > 4 || !p.bytes().all(|b| b.is_ascii_digit()))
        {
            continue;
        }
        let year = |p: &str| p.len() == 4 && (p.starts_with("19") || p.starts_with("20"));
        let small = |p: &str| p.len() <= 2;
        if (year(parts[0]) && small(parts[1]) && small(parts[2]))
            || (year(parts[2]) && small(parts[0]) && small(parts[1]))
            || (sep == '/' && parts.iter().all(|p| small(p)))
        {
            return true;
        }
    }
    false
}

/// A time of day: `10:30`, `9:05 pm`, `21:00:15`.
pub fn looks_like_time(text: &str) -> bool {
    let t = text.trim().to_lowercase();
    let t = t
        .trim_end_matches("am")
        .trim_end_matches("pm")
        .trim_end_matches("a.m.")
        .trim_end_matches("p.m.")
        .trim();
    let parts: Vec<&str> = t.split(':').collect();
    (2..=3).contains(&parts.len())
        && parts
            .iter()
            .all(|p| (1..=2).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()))
}

/// A rank or ordinal as written in a list (`1`, `2.`, `#3`, `(4)`, `5)`):
/// its number.
pub fn ordinal(text: &str) -> Option<i64> {
    let t = text
        .trim()
        .trim_start_matches(['#', '(', '№'])
        .trim_end_matches(['.', ')', ':']);
    if t.is_empty() || t.len() > 6 || !t.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse().ok()
}

/// A text that reads as a name: it has a letter and is not a number,
/// a price, a date or a time.
pub fn reads_as_name(text: &str) -> bool {
    text.chars().any(char::is_alphabetic)
        && !looks_like_price(text)
        && !looks_like_date(text)
        && !looks_like_time(text)
        && parse_number(text, DecimalStyle::Point).is_none()
}

/// How a field name speaks about identity: 1 when one of its words says
/// it names the record (`title`, `Company name`), -1 when one says it is
/// a value or a picture (`price`, `Posted`, `image-2`), 0 otherwise.
pub fn identity_of_name(name: &str) -> i8 {
    let lower = name.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    if words
        .iter()
        .any(|w| NON_IDENTITY_WORDS.contains(w) || *w == "#")
        || lower.trim() == "#"
        || matches!(
            words.as_slice(),
            ["no"] | ["nr"] | ["num"] | ["number"] | ["pos"]
        )
    {
        -1
    } else if words.iter().any(|w| IDENTITY_WORDS.contains(w)) {
        1
    } else {
        0
    }
}

/// A name not yet in `taken` (`name`, `name-2`, ...), recorded as taken.
pub(crate) fn unique(name: String, taken: &mut std::collections::BTreeSet<String>) -> String {
    let mut candidate = name.clone();
    let mut n = 2;
    while taken.contains(&candidate) {
        candidate = format!("{name}-{n}");
        n += 1;
    }
    taken.insert(candidate.clone());
    candidate
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_tokens_that_name_data() {
        assert_eq!(token_name("price").as_deref(), Some("price"));
        assert_eq!(token_name("product-card__price").as_deref(), Some("price"));
        assert_eq!(
            token_name("product-card__price--sale").as_deref(),
            Some("price")
        );
        assert_eq!(
            token_name("styles_trustScore__dRMDX").as_deref(),
            Some("trust-score")
        );
        assert_eq!(token_name("productTitle").as_deref(), Some("product-title"));
        assert_eq!(token_name("s-item__title").as_deref(), Some("title"));
        assert_eq!(token_name("author").as_deref(), Some("author"));
        // Hashes, utilities and layout name nothing.
        for t in [
            "css-1x2y3",
            "col-md-6",
            "flex",
            "mt-2",
            "row",
            "item",
            "card",
            "wrapper",
            "sc-bdVaJa",
            "CDS_Typography_appearance-default__bedfe1",
            "text-right",
            "x",
            "jsx-123",
        ] {
            assert_eq!(token_name(t), None, "{t}");
        }
        assert_eq!(
            class_name("col-md-6 card-text price").as_deref(),
            Some("price")
        );
        assert_eq!(class_name("meta byline").as_deref(), Some("byline"));
        assert_eq!(class_name("flex mt-2"), None);
        assert_eq!(
            property_name("datePublished").as_deref(),
            Some("date-published")
        );
        assert_eq!(
            property_name("http://schema.org/name").as_deref(),
            Some("name")
        );
    }

    #[test]
    fn labels_are_kept_as_written_when_short() {
        assert_eq!(
            label_name("  Release\n date: ").as_deref(),
            Some("Release date")
        );
        assert_eq!(label_name("Price ($)").as_deref(), Some("Price ($)"));
        assert_eq!(label_name("1234"), None);
        assert_eq!(
            label_name("A long sentence that is content and not a label at all"),
            None
        );
        assert!(is_colon_label("Tags:"));
        assert!(!is_colon_label("Tags"));
        assert!(!is_colon_label("He said this is what he wanted to say:"));
    }

    #[test]
    fn dates_times_ranks() {
        for d in [
            "2026-11-02",
            "2026-11-02T10:00:00Z",
            "02.11.2026",
            "11/2/26",
            "Nov 2, 2026",
            "2 November 2026",
            "March 2024",
            "3 hours ago",
            "5d ago",
            "yesterday",
            "Posted Sep 5",
        ] {
            assert!(looks_like_date(d), "{d}");
        }
        for d in [
            "1.2.3",
            "Albert Einstein",
            "$12.50",
            "2026",
            "May the best win today and always",
        ] {
            assert!(!looks_like_date(d), "{d}");
        }
        assert!(looks_like_time("10:30"));
        assert!(looks_like_time("9:05 pm"));
        assert!(!looks_like_time("10:30 to 11:00"));
        assert_eq!(ordinal("#3"), Some(3));
        assert_eq!(ordinal("12."), Some(12));
        assert_eq!(ordinal("(4)"), Some(4));
        assert_eq!(ordinal("4a"), None);
        assert!(reads_as_name("Acme Corp"));
        assert!(!reads_as_name("1,234"));
        assert!(!reads_as_name("3 hours ago"));
        assert_eq!(identity_of_name("Company name"), 1);
        assert_eq!(identity_of_name("title"), 1);
        assert_eq!(identity_of_name("price-2"), -1);
        assert_eq!(identity_of_name("#"), -1);
        assert_eq!(identity_of_name("Rank"), -1);
        assert_eq!(identity_of_name("f3"), 0);
    }
}
