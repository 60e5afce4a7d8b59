//! Locale-aware reading of numbers in page text.
//!
//! Takes a text value from a page (already whitespace-collapsed; it may still
//! contain no-break or thin spaces) together with the [`DecimalStyle`] of the
//! page's language, found from its BCP 47 tag by [`decimal_style_for_lang`].
//! Gives the value as a canonical decimal string such as `-1234.5`, which the
//! hierarchy stores in its `num` attribute so that thresholds compare numbers
//! rather than strings, or `None` when the text is not a plain number.
//!
//! The work is done on digit strings, never on `f64`: nothing is rounded and
//! digit strings of any length are kept exactly.
//!
//! What is deliberately not read as a number:
//! - exponents (`1e5`): rare in page values and easily confused with codes
//!   and hex fragments, and the canonical form has no exponent to carry one;
//! - a trailing separator (`5.`): in German and other languages that is an
//!   ordinal ("5th"), and elsewhere usually the end of a sentence;
//! - Indian lakh grouping (`1,23,456`): it cannot be told from a list of
//!   numbers, and only 3-digit groups are checked to keep dates, times and
//!   phone numbers (`12.05.2024`, `8 800 555 35 35`) out;
//! - digits of other scripts (Arabic-Indic, fullwidth, ...): the locales that
//!   use them also use other separators (`٫`, `٬`), which are not handled.

use std::borrow::Cow;

use smallvec::SmallVec;

/// How a locale writes the decimal separator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecimalStyle {
    /// `1,234.5`: the decimal separator is a point.
    Point,
    /// `1.234,5` or `1 234,5`: the decimal separator is a comma.
    Comma,
}

/// Languages whose decimal separator is a comma, sorted for binary search.
///
/// Source: CLDR 48 (as shipped in ICU 78), `symbols` for the Latin digits of
/// each language's default locale. `in`, `mo` and `sh` are the deprecated
/// codes of `id`, `ro` and `sr-Latn`, which pages still use.
const COMMA_LANGUAGES: &[&str] = &[
    "af", "agq", "ast", "az", "bas", "be", "bg", "blo", "br", "bs", "bua", "ca", "cs", "cv", "da",
    "de", "dsb", "dua", "dyo", "el", "eo", "es", "et", "eu", "ewo", "ff", "fi", "fo", "fr", "fur",
    "fy", "gl", "hr", "hsb", "hu", "hy", "ia", "id", "ie", "in", "is", "it", "jgo", "jv", "ka",
    "kab", "kea", "kgp", "kk", "kkj", "kl", "ksf", "ksh", "ku", "ky", "lb", "lij", "lmo", "ln",
    "lo", "lt", "lu", "lv", "mgh", "mk", "mo", "mua", "nb", "nds", "nl", "nmg", "nn", "nnh", "no",
    "oc", "os", "pl", "pms", "prg", "ps", "pt", "rm", "rn", "ro", "ru", "rw", "sah", "sc", "scn",
    "se", "seh", "sg", "sh", "shi", "sk", "sl", "smn", "sq", "sr", "su", "sv", "szl", "tg", "tk",
    "tok", "tr", "tt", "tzm", "uk", "uz", "vec", "vi", "vmw", "wae", "wo", "yav", "yrl", "zgh",
];

/// Script or region subtags that override a language's style, from the same
/// CLDR data. Notable: `de-CH`, `de-LI` and `it-CH` write `1’234.5`, while
/// `fr-CH` writes `1 234,5` in current CLDR (older releases had a point) and
/// so needs no entry.
const OVERRIDES: &[(&str, DecimalStyle, &str)] = &[
    ("ar", DecimalStyle::Comma, "dz lb ly ma mr tn"),
    ("de", DecimalStyle::Point, "ch li"),
    (
        "en",
        DecimalStyle::Comma,
        "at be cz de dk ee es fi fr ge hu id it lt lv nl no pl pt ro se si sk ua za",
    ),
    (
        "es",
        DecimalStyle::Point,
        "419 br bz cu do gt hn mx ni pa pe pr sv us",
    ),
    ("ff", DecimalStyle::Point, "adlm"),
    ("it", DecimalStyle::Point, "ch"),
    ("kk", DecimalStyle::Point, "arab cn"),
    ("ku", DecimalStyle::Point, "iq"),
    ("ms", DecimalStyle::Comma, "bn id"),
    ("qu", DecimalStyle::Comma, "bo"),
    ("sw", DecimalStyle::Comma, "cd"),
];

/// The decimal style of a BCP 47 language tag such as `ru`, `de-CH`, `en-US`,
/// `pt-BR` or `zh-Hans`.
///
/// Matching ignores case and accepts `_` as a separator; a POSIX suffix such
/// as `.UTF-8` or `@latin` is ignored. A missing, empty or unknown tag gives
/// [`DecimalStyle::Point`].
pub fn decimal_style_for_lang(lang: Option<&str>) -> DecimalStyle {
    let tag = lang.unwrap_or("").trim();
    let tag = tag
        .split(['.', '@'])
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    let mut subtags = tag.split(['-', '_']);
    let language = subtags.next().unwrap_or("");
    // Script and region subtags come before any singleton-led extension
    // (`-u-…`, `-x-…`), whose contents say nothing about the region.
    for subtag in subtags.take_while(|s| s.len() > 1) {
        let hit = OVERRIDES
            .iter()
            .find(|(l, _, tags)| *l == language && tags.split(' ').any(|t| t == subtag));
        if let Some(&(_, style, _)) = hit {
            return style;
        }
    }
    if COMMA_LANGUAGES.binary_search(&language).is_ok() {
        DecimalStyle::Comma
    } else {
        DecimalStyle::Point
    }
}

/// Currency signs, a few ISO 4217 codes and the percent sign, any one of which
/// may stand before or after the number, with or without a space. The
/// longest match wins, so `US$` is not read as `$` and `руб.` not as `руб`.
const UNITS: &[&str] = &[
    "%", "$", "€", "£", "¥", "￥", "₽", "₴", "₹", "₩", "₪", "₺", "₸", "₫", "₱", "₦", "₼", "₾", "¢",
    "円", "元", "R$", "US$", "C$", "A$", "NZ$", "HK$", "S$", "zł", "Kč", "kr", "kr.", "Ft", "lei",
    "лв", "лв.", "руб", "руб.", "р.", "грн", "USD", "EUR", "GBP", "JPY", "CNY", "RUB", "UAH",
    "BYN", "KZT", "CHF", "CAD", "AUD", "NZD", "HKD", "SGD", "SEK", "NOK", "DKK", "ISK", "PLN",
    "CZK", "HUF", "RON", "BGN", "TRY", "INR", "BRL", "MXN", "ARS", "KRW", "ZAR", "ILS",
];

/// Reads `text` (already whitespace-collapsed, may contain NBSP/thin spaces)
/// as a number; returns the canonical decimal string or `None`.
///
/// The canonical form is an optional `-`, the integer digits without leading
/// zeros (`0` when there are none), then `.` and the fraction digits without
/// trailing zeros, if any remain; `-0` becomes `0`.
///
/// Accepted around the digits: one sign (`+`, `-`, `−`) or accounting
/// parentheses (`(1,234)` is negative); one currency sign, currency code or
/// `%`, before or after (`%40` is how Turkish writes percentages).
///
/// Separators: spaces of any kind and apostrophes (`1’234.5`) only group;
/// when a point and a comma both occur, the last one is the decimal
/// separator; a point or comma repeated is grouping. Groups must be 3 digits
/// after a first group of 1 to 3 digits not starting with `0`. A single
/// point or comma is decimal, except that when it is followed by exactly 3
/// digits after a 1-3 digit integer part not starting with `0` (`1,234`), it
/// is taken as decimal only if it is `style`'s decimal separator. A leading
/// separator is decimal (`.5` is `0.5`); a trailing one is rejected (`5.`).
pub fn parse_number(text: &str, style: DecimalStyle) -> Option<String> {
    if let Some(n) = simple_decimal(text, style) {
        return Some(n);
    }
    parse_number_general(text, style)
}

/// The most common numbers in a table, read in one pass: an optional
/// ASCII sign (`+`, `-`), ASCII digits, or digits, one point and digits,
/// where the point can only be the decimal one (`12.5`, `0.250`,
/// `1141.29`, `-0.45`; `1.234` only where the point is the decimal
/// separator), and an optional `%` right after the digits (`+0.52%`).
/// `None` for anything else, which the general reading handles; where this
/// answers, it answers the same.
fn simple_decimal(text: &str, style: DecimalStyle) -> Option<String> {
    let (negative, body) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let body = body.strip_suffix('%').unwrap_or(body);
    let bytes = body.as_bytes();
    let mut point = None;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'0'..=b'9' => {}
            b'.' if point.is_none() => point = Some(i),
            _ => return None,
        }
    }
    let Some(at) = point else {
        return (!bytes.is_empty()).then(|| canonical(negative, body, ""));
    };
    let (int, frac) = (&body[..at], &body[at + 1..]);
    let could_group = frac.len() == 3 && int.len() <= 3 && !int.starts_with('0');
    if int.is_empty() || frac.is_empty() || (could_group && style != DecimalStyle::Point) {
        return None;
    }
    Some(canonical(negative, int, frac))
}

/// [`parse_number`] without its fast path.
fn parse_number_general(text: &str, style: DecimalStyle) -> Option<String> {
    // Fast paths: most texts on a page are words (no digit) or plain
    // numbers (nothing to strip); only the rest needs the unit search.
    let first = text.bytes().position(|b| b.is_ascii_digit())?;
    let last = text.bytes().rposition(|b| b.is_ascii_digit())?;
    if first > MAX_AFFIX_BYTES || text.len() - 1 - last > MAX_AFFIX_BYTES {
        return None;
    }
    let plain = text
        .bytes()
        .all(|b| b.is_ascii_digit() || b == b'.' || b == b',');
    let (negative, core) = if plain {
        (false, text)
    } else {
        strip_affixes(text)?
    };
    let (int, frac) = split_core(core, style)?;
    Some(canonical(negative, &int, frac))
}

/// Removes parentheses, sign and unit; returns whether the number is
/// negative, and the digits with their separators.
fn strip_affixes(text: &str) -> Option<(bool, &str)> {
    let mut rest = text.trim();
    let parenthesised = match rest.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        Some(inner) => {
            rest = inner.trim();
            true
        }
        None => false,
    };
    let (mut sign, mut unit) = (None, false);
    // Before the digits: a sign and a unit in either order (`-$5`, `$ -5`).
    // No space may follow a sign: `- 5` is more often a dash than a minus.
    loop {
        if sign.is_none()
            && let Some((negative, after)) = strip_sign(rest)
        {
            sign = Some(negative);
            rest = after;
        } else if !unit
            && !rest.starts_with(|c: char| c.is_ascii_digit())
            && let Some(after) = strip_unit(rest, str::strip_prefix)
        {
            unit = true;
            rest = after.trim_start();
        } else {
            break;
        }
    }
    if !unit
        && !rest.ends_with(|c: char| c.is_ascii_digit())
        && let Some(before) = strip_unit(rest, str::strip_suffix)
    {
        rest = before.trim_end();
    }
    match (parenthesised, sign) {
        (true, Some(_)) => None,
        (true, None) => Some((true, rest)),
        (false, sign) => Some((sign.unwrap_or(false), rest)),
    }
}

/// Strips a leading sign; returns whether it was a minus, and the rest.
fn strip_sign(text: &str) -> Option<(bool, &str)> {
    let mut chars = text.chars();
    let negative = match chars.next()? {
        '+' => false,
        '-' | '\u{2212}' => true,
        _ => return None,
    };
    Some((negative, chars.as_str()))
}

/// Strips the longest unit that `strip` (a prefix or suffix stripper) finds.
fn strip_unit<'a>(
    text: &'a str,
    strip: fn(&'a str, &'a str) -> Option<&'a str>,
) -> Option<&'a str> {
    // Compare only units that share the text's first and last byte with
    // it at the end being stripped: a cheap filter before the string compare.
    let (first, last) = (*text.as_bytes().first()?, *text.as_bytes().last()?);
    UNITS
        .iter()
        .filter(|unit| {
            let u = unit.as_bytes();
            u.first() == Some(&first) || u.last() == Some(&last)
        })
        .filter_map(|unit| strip(text, unit))
        .min_by_key(|rest| rest.len())
}

/// Most bytes before the first digit or after the last one (a sign, a
/// parenthesis, a unit and spaces); anything longer is prose, not a number.
const MAX_AFFIX_BYTES: usize = 16;

/// A character that may stand between digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sep {
    Point,
    Comma,
    /// Any space, including NBSP (U+00A0), U+202F and U+2009: grouping only.
    Space,
    /// `'` or `’`, Swiss grouping: grouping only.
    Apostrophe,
}

impl Sep {
    fn of(c: char) -> Option<Self> {
        match c {
            '.' => Some(Self::Point),
            ',' => Some(Self::Comma),
            '\'' | '\u{2019}' => Some(Self::Apostrophe),
            c if c.is_whitespace() => Some(Self::Space),
            _ => None,
        }
    }
}

/// Splits digits-and-separators into the integer digits (ungrouped) and the
/// fraction digits, deciding which separator, if any, is the decimal one.
fn split_core(core: &str, style: DecimalStyle) -> Option<(Cow<'_, str>, &str)> {
    // Inline room for the groups of any everyday number (a number of
    // more groups spills to the heap and reads the same).
    let mut runs: SmallVec<[&str; 8]> = SmallVec::new();
    let mut seps: SmallVec<[Sep; 8]> = SmallVec::new();
    let mut start = 0;
    for (i, c) in core.char_indices() {
        if !c.is_ascii_digit() {
            seps.push(Sep::of(c)?);
            runs.push(&core[start..i]);
            start = i + c.len_utf8();
        }
    }
    runs.push(&core[start..]);

    if runs.iter().any(|run| run.is_empty()) {
        // The only gap allowed is a missing integer part: `.5`, `,5`.
        return match (runs.as_slice(), seps.as_slice()) {
            (["", frac], [Sep::Point | Sep::Comma]) if !frac.is_empty() => {
                Some((Cow::Borrowed(""), frac))
            }
            _ => None,
        };
    }
    let (int_runs, int_seps, frac) = if has_decimal(&runs, &seps, style) {
        let (frac, int_runs) = runs.split_last()?;
        let (_, int_seps) = seps.split_last()?;
        (int_runs, int_seps, *frac)
    } else {
        (runs.as_slice(), seps.as_slice(), "")
    };
    if !valid_grouping(int_runs, int_seps) {
        return None;
    }
    let int = match int_runs {
        [one] => Cow::Borrowed(*one),
        _ => Cow::Owned(int_runs.concat()),
    };
    Some((int, frac))
}

/// Whether the last separator is the decimal one (it is the only candidate).
fn has_decimal(runs: &[&str], seps: &[Sep], style: DecimalStyle) -> bool {
    let Some(&last) = seps.last() else {
        return false;
    };
    if !matches!(last, Sep::Point | Sep::Comma) || seps.iter().filter(|&&s| s == last).count() > 1 {
        return false;
    }
    if seps.len() > 1 {
        // Other separators before it group the integer part.
        return true;
    }
    let [int, frac] = runs else {
        return false;
    };
    let could_group = frac.len() == 3 && int.len() <= 3 && !int.starts_with('0');
    let own = match style {
        DecimalStyle::Point => Sep::Point,
        DecimalStyle::Comma => Sep::Comma,
    };
    !could_group || last == own
}

/// Whether the integer part is ungrouped, or grouped by one separator into
/// 3-digit groups after a first group of 1-3 digits not starting with `0`.
fn valid_grouping(runs: &[&str], seps: &[Sep]) -> bool {
    let Some((first_sep, other_seps)) = seps.split_first() else {
        return true;
    };
    let Some((first, groups)) = runs.split_first() else {
        return false;
    };
    other_seps.iter().all(|s| s == first_sep)
        && (1..=3).contains(&first.len())
        && !first.starts_with('0')
        && groups.iter().all(|group| group.len() == 3)
}

/// Builds the canonical form from a sign and ASCII digit strings.
fn canonical(negative: bool, int: &str, frac: &str) -> String {
    let int = int.trim_start_matches('0');
    let frac = frac.trim_end_matches('0');
    let mut out = String::with_capacity(int.len() + frac.len() + 3);
    if negative && !(int.is_empty() && frac.is_empty()) {
        out.push('-');
    }
    out.push_str(if int.is_empty() { "0" } else { int });
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::DecimalStyle::{Comma, Point};
    use super::*;

    #[test]
    fn the_fast_path_reads_as_the_general_one() {
        let mut texts: Vec<String> = [
            "", ".", "..", "0", "00", "007", "1.", ".5", "1..2", "1.2.3", "0.0", "00.500", "1.234",
            "12.345", "123.456", "1234.567", "0.123", "01.234", "1.23", "1.2345", "1141.29", "12",
            "1 234", "1,234", "1.234,5", "-1.5", "+2", "١٢",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        for int in ["", "0", "7", "10", "999", "1000", "0123"] {
            for frac in ["", "0", "5", "50", "500", "123", "1234"] {
                for (sign, unit) in [("", ""), ("-", ""), ("+", ""), ("", "%"), ("-", "%")] {
                    texts.push(format!("{sign}{int}.{frac}{unit}"));
                    texts.push(format!("{sign}{int}{frac}{unit}"));
                }
            }
        }
        texts.extend(
            [
                "-",
                "+",
                "%",
                "-%",
                "+-1",
                "--1",
                "1%%",
                "%1",
                "1 %",
                "-0",
                "-0.00%",
                "\u{2212}1",
            ]
            .map(str::to_owned),
        );
        for text in &texts {
            for style in [Point, Comma] {
                if let Some(fast) = simple_decimal(text, style) {
                    assert_eq!(
                        Some(fast),
                        parse_number_general(text, style),
                        "{text:?} in {style:?}"
                    );
                }
            }
        }
        assert!(simple_decimal("1.234", Point).is_some());
        assert!(simple_decimal("1.234", Comma).is_none());
        // Signs and a percent sign take the fast path too.
        assert_eq!(simple_decimal("-0.450", Point).as_deref(), Some("-0.45"));
        assert_eq!(simple_decimal("+0.52%", Comma).as_deref(), Some("0.52"));
    }

    /// Asserts `text` reads as `want` in both styles.
    fn both(text: &str, want: Option<&str>) {
        for style in [Point, Comma] {
            assert_eq!(
                parse_number(text, style).as_deref(),
                want,
                "{text:?} in {style:?}"
            );
        }
    }

    #[test]
    fn spaces_only_group() {
        for space in [' ', '\u{a0}', '\u{202f}', '\u{2009}'] {
            both(&format!("1{space}234,56"), Some("1234.56"));
            both(&format!("1{space}234{space}567"), Some("1234567"));
            both(&format!("1{space}234 ₽"), Some("1234"));
        }
    }

    #[test]
    fn both_separators_last_is_decimal() {
        both("1,234.56", Some("1234.56"));
        both("1.234,56", Some("1234.56"));
        both("1.234.567,5", Some("1234567.5"));
        both("1'234.5", Some("1234.5"));
        both("1’234.5", Some("1234.5"));
        both("1.2,3", None);
        both("1,234.567,8", None);
        both("1 234,567.5", None);
    }

    #[test]
    fn signs_units_and_parentheses() {
        both("-1,2%", Some("-1.2"));
        both("40%", Some("40"));
        both("40 %", Some("40"));
        both("%40", Some("40"));
        both("$1,234.50", Some("1234.5"));
        both("-$5", Some("-5"));
        both("$ -5", Some("-5"));
        both("\u{2212}3.2", Some("-3.2"));
        both("+5.3%", Some("5.3"));
        both("€ 12,50", Some("12.5"));
        both("12,50 €", Some("12.5"));
        // A lone `,000` is grouping only in Point style; in Comma style it is 1.000.
        assert_eq!(parse_number("¥1,000", Point).as_deref(), Some("1000"));
        assert_eq!(parse_number("¥1,000", Comma).as_deref(), Some("1"));
        both("£3", Some("3"));
        both("R$ 1.234,56", Some("1234.56"));
        both("US$5", Some("5"));
        both("5 руб.", Some("5"));
        both("USD 12.5", Some("12.5"));
        both("12.5 USD", Some("12.5"));
        both("RUB 7", Some("7"));
        both("7 EUR", Some("7"));
        assert_eq!(parse_number("(1,234)", Point).as_deref(), Some("-1234"));
        both("($12.50)", Some("-12.5"));
        both("(-5)", None);
        both("$5%", None);
        both("- 5", None);
        both("5 usd", None);
    }

    #[test]
    fn single_separator_before_three_digits_follows_style() {
        assert_eq!(parse_number("1,234", Point).as_deref(), Some("1234"));
        assert_eq!(parse_number("1,234", Comma).as_deref(), Some("1.234"));
        assert_eq!(parse_number("1.234", Point).as_deref(), Some("1.234"));
        assert_eq!(parse_number("1.234", Comma).as_deref(), Some("1234"));
        both("0,123", Some("0.123"));
        both("1234,567", Some("1234.567"));
        both("1,5", Some("1.5"));
        both("1.5", Some("1.5"));
        both("12,3456", Some("12.3456"));
    }

    #[test]
    fn repeated_separator_groups() {
        both("1,234,567", Some("1234567"));
        both("1.234.567", Some("1234567"));
        both("12.05.2024", None);
        both("1,23,456", None);
        both("0.123.456", None);
    }

    #[test]
    fn zeros_and_bare_fractions() {
        both(".5", Some("0.5"));
        both(",5", Some("0.5"));
        both("-.5", Some("-0.5"));
        both("5.", None);
        both("007", Some("7"));
        both("0", Some("0"));
        both("-0", Some("0"));
        both("-0,00", Some("0"));
        both("100.0100", Some("100.01"));
    }

    #[test]
    fn long_digit_strings_are_exact() {
        let digits = "123456789".repeat(8);
        both(
            &format!("{digits}.{digits}"),
            Some(&format!("{digits}.{digits}")),
        );
        both(
            "0.1000000000000000000000000000001",
            Some("0.1000000000000000000000000000001"),
        );
    }

    #[test]
    fn non_numbers() {
        for text in [
            "",
            " ",
            "-",
            "+",
            "abc",
            "12 kg",
            "2024-01-05",
            "12:30",
            "8 800 555 35 35",
            "1e5",
            "1 2",
            "--5",
            "5-",
            "$",
            "%",
            "RUB",
            "1,,2",
            "1..2",
            "12a",
            "a12",
            "1 234 567 8",
            "1_000",
            "１２３",
            "١٢٣",
            "12 345.6.7",
        ] {
            both(text, None);
        }
    }

    #[test]
    fn styles_of_tags() {
        let comma = [
            "ru",
            "uk",
            "de",
            "de-AT",
            "de-DE.UTF-8",
            "de-x-ch",
            "en-ZA",
            "en_za",
            "EN-za",
            "pt-BR",
            "pt-PT",
            "es",
            "es-ES",
            "es-AR",
            "fr",
            "fr-CH",
            "fr-CA",
            "sr-Latn-RS",
            "ar-MA",
            "in",
        ];
        for tag in comma {
            assert_eq!(decimal_style_for_lang(Some(tag)), Comma, "{tag}");
        }
        let point = [
            "de-CH",
            "DE_ch",
            "de-LI",
            "it-CH",
            "en",
            "en-US",
            "en-GB",
            "en-IN",
            "es-MX",
            "es-419",
            "es-US",
            "kk-Arab-CN",
            "zh-Hans",
            "zh",
            "ja",
            "xx",
            "",
            " ",
            "-",
        ];
        for tag in point {
            assert_eq!(decimal_style_for_lang(Some(tag)), Point, "{tag:?}");
        }
        assert_eq!(decimal_style_for_lang(None), Point);
    }

    #[test]
    fn comma_languages_are_sorted_for_binary_search() {
        assert!(COMMA_LANGUAGES.windows(2).all(|w| w[0] < w[1]));
    }

    /// A small deterministic generator (xorshift64), so the check needs no crate.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }

        fn digits(&mut self, len: usize) -> String {
            (0..len)
                .map(|_| char::from(b'0' + self.below(10) as u8))
                .collect()
        }
    }

    /// Writes `int` with `group` every 3 digits from the right.
    fn grouped(int: &str, group: &str) -> String {
        let mut out = String::new();
        for (i, digit) in int.chars().enumerate() {
            if i > 0 && (int.len() - i).is_multiple_of(3) {
                out.push_str(group);
            }
            out.push(digit);
        }
        out
    }

    #[test]
    fn formatted_numbers_read_back_canonically() {
        let mut rng = Rng(0x5eed_cafe_f00d_1234);
        for _ in 0..20_000 {
            // The expected canonical value, built directly.
            let int = match rng.below(4) {
                0 => "0".to_owned(),
                _ => {
                    let len = 1 + rng.below(25);
                    format!("{}{}", 1 + rng.below(9), rng.digits(len - 1))
                }
            };
            let frac = match rng.below(3) {
                0 => String::new(),
                _ => {
                    let len = rng.below(8);
                    format!("{}{}", rng.digits(len), 1 + rng.below(9))
                }
            };
            let negative = rng.below(2) == 0;
            let zero = int == "0" && frac.is_empty();
            let mut want = if negative && !zero {
                "-".to_owned()
            } else {
                String::new()
            };
            want += &int;
            if !frac.is_empty() {
                want = format!("{want}.{frac}");
            }

            // The same value as a page in `style` might write it.
            let style = [Point, Comma][rng.below(2)];
            let (decimal, groups): (&str, &[&str]) = match style {
                Point => (".", &["", ",", " ", "\u{a0}", "\u{202f}", "'", "’"]),
                Comma => (",", &["", ".", " ", "\u{a0}", "\u{202f}", "\u{2009}"]),
            };
            let mut text = grouped(&int, groups[rng.below(groups.len())]);
            if !frac.is_empty() {
                text = format!("{text}{decimal}{frac}{}", "0".repeat(rng.below(3)));
            }
            let sign = if negative {
                ["-", "\u{2212}"][rng.below(2)]
            } else {
                ["", "+"][rng.below(2)]
            };
            text = match rng.below(4) {
                0 => format!("{sign}{text}"),
                1 => format!("{sign}{text}%"),
                2 => format!("{sign}$ {text}"),
                _ if negative => format!("({text} €)"),
                _ => format!("{sign}{text}\u{a0}RUB"),
            };
            assert_eq!(
                parse_number(&text, style),
                Some(want),
                "{text:?} in {style:?}"
            );
        }
    }

    #[test]
    fn arbitrary_text_never_panics_and_reads_canonically() {
        let alphabet: Vec<char> = "0123456789.,'’ \u{a0}-+−()$€%kE".chars().collect();
        let mut rng = Rng(42);
        for _ in 0..50_000 {
            let len = rng.below(10);
            let text: String = (0..len)
                .map(|_| alphabet[rng.below(alphabet.len())])
                .collect();
            for style in [Point, Comma] {
                let Some(num) = parse_number(&text, style) else {
                    continue;
                };
                let unsigned = num.strip_prefix('-').unwrap_or(&num);
                let (int, frac) = unsigned.split_once('.').unwrap_or((unsigned, ""));
                let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
                assert!(
                    digits(int) && (int == "0" || !int.starts_with('0')),
                    "{text:?} -> {num}"
                );
                assert!(
                    frac.is_empty() || (digits(frac) && !frac.ends_with('0')),
                    "{num}"
                );
                assert_ne!(num, "-0", "{text:?}");
            }
        }
    }
}
