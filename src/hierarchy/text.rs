//! Text runs: HTML character data in, normalised text out.
//!
//! Whitespace collapses as a browser renders it (any run of Unicode white
//! space, NBSP included, is one space; none at the ends), invisible
//! characters (soft hyphen, zero-width space, BOM) vanish, and characters
//! XML 1.0 forbids are removed, so every string that leaves here can be
//! written into a well-formed document.

/// True for characters XML 1.0 allows in a document (`Char` production).
pub fn xml_allowed(c: char) -> bool {
    matches!(c, '\u{9}' | '\u{A}' | '\u{D}' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

/// True for characters that render as nothing and carry no data.
fn invisible(c: char) -> bool {
    matches!(c, '\u{AD}' | '\u{200B}' | '\u{2060}' | '\u{FEFF}')
}

/// Accumulates inline text with browser-like whitespace collapsing.
#[derive(Debug, Default)]
pub struct InlineText {
    buf: String,
    pending_space: bool,
    /// Images' `alt` texts of the run, space-separated: the run's text
    /// only when it has no other (a picture-only cell names its picture;
    /// beside text, a flag's "Flag of France" is not part of "France").
    alt: String,
}

impl InlineText {
    /// Appends character data.
    pub fn push_str(&mut self, text: &str) {
        let mut rest = text;
        while !rest.is_empty() {
            // A run of printable ASCII other than space is kept as it is,
            // copied whole rather than a character at a time.
            let run = rest
                .bytes()
                .take_while(|b| (0x21..=0x7E).contains(b))
                .count();
            if run > 0 {
                self.space_if_pending();
                self.buf.push_str(&rest[..run]);
                rest = &rest[run..];
                continue;
            }
            let mut chars = rest.chars();
            if let Some(c) = chars.next() {
                self.push_char(c);
            }
            rest = chars.as_str();
        }
    }

    fn push_char(&mut self, c: char) {
        if c.is_whitespace() {
            if !self.buf.is_empty() {
                self.pending_space = true;
            }
        } else if xml_allowed(c) && !invisible(c) && !c.is_control() {
            self.space_if_pending();
            self.buf.push(c);
        }
    }

    fn space_if_pending(&mut self) {
        if self.pending_space {
            self.buf.push(' ');
            self.pending_space = false;
        }
    }

    /// Asks for a space before the next character (a `<br>`, an image).
    pub fn push_space(&mut self) {
        if !self.buf.is_empty() {
            self.pending_space = true;
        }
    }

    /// Appends an image's `alt` text: kept only if the run holds no other
    /// text when it is taken (see the `alt` field).
    pub fn push_alt(&mut self, alt: &str) {
        self.push_space();
        for w in alt.split_whitespace() {
            if !self.alt.is_empty() {
                self.alt.push(' ');
            }
            self.alt.extend(
                w.chars()
                    .filter(|&c| xml_allowed(c) && !invisible(c) && !c.is_control()),
            );
        }
    }

    /// Takes the collected text (or, when there is none, the images'
    /// `alt` texts), if any, and starts a new run.
    pub fn take(&mut self) -> Option<String> {
        self.pending_space = false;
        let alt = std::mem::take(&mut self.alt);
        if !self.buf.is_empty() {
            Some(std::mem::take(&mut self.buf))
        } else if !alt.is_empty() {
            Some(alt)
        } else {
            None
        }
    }

    /// Length in bytes of the text collected so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// True when no text has been collected since the last
    /// [`take`](Self::take) (images' `alt` texts aside: they give way to
    /// text).
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
}

/// A label as people name the thing: navigation chrome that templates put
/// beside a caption or title left out. Wikipedia's navigation boxes lead
/// their titles with one-letter links (`v t e`, `v · t · e`: view, talk,
/// edit), and editable headings end in `[edit]`; neither names anything.
/// Returns the label unchanged when nothing else would be left.
pub fn clean_label(label: &str) -> String {
    let words: Vec<&str> = label.split_whitespace().collect();
    let chrome = |w: &[&str]| {
        let joined = w.concat().to_lowercase();
        matches!(joined.as_str(), "[edit]" | "[show]" | "[hide]")
    };
    // Leading one-letter words and separators (two letters at least).
    let mut start = 0;
    let mut letters = 0;
    while let Some(w) = words.get(start) {
        let mut chars = w.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) if c.is_alphabetic() => letters += 1,
            (Some('·' | '•' | '|' | '-'), None) => {}
            _ => break,
        }
        start += 1;
    }
    if letters < 2 {
        start = 0;
    }
    let mut end = words.len();
    // `[edit]`, or `[ edit ]` when the brackets are elements of their own.
    'strip: loop {
        for n in [1, 3] {
            if end >= start + n && chrome(&words[end - n..end]) {
                end -= n;
                continue 'strip;
            }
            if end >= start + n && chrome(&words[start..start + n]) {
                start += n;
                continue 'strip;
            }
        }
        break;
    }
    if start >= end {
        return words.join(" ");
    }
    words[start..end].join(" ")
}

/// A label cut for display to at most `max` characters at a word
/// boundary, with `…` when cut (a word longer than `max` is cut inside).
/// Labels are shown whole in the data (ids, API, webhooks); what people
/// read (change lines, alert titles, status rows) shows them cut.
pub fn short_label(label: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if label.chars().count() <= max {
        return std::borrow::Cow::Borrowed(label);
    }
    let budget = max.saturating_sub(1);
    let cut = label
        .char_indices()
        .nth(budget)
        .map_or(label.len(), |(i, _)| i);
    let head = &label[..cut];
    let at_word = match label[cut..].chars().next() {
        Some(c) if c.is_whitespace() => head,
        _ => head
            .rfind(char::is_whitespace)
            .filter(|&i| i > 0)
            .map_or(head, |i| &head[..i]),
    };
    let at_word = at_word.trim_end_matches(|c: char| c.is_whitespace() || c == ',' || c == ';');
    std::borrow::Cow::Owned(format!("{at_word}…"))
}

/// Collapses whitespace in a single string (attribute values, titles).
pub fn normalize(text: &str) -> String {
    let mut t = InlineText::default();
    t.push_str(text);
    t.take().unwrap_or_default()
}

/// Normalises preformatted text: line breaks kept, trailing spaces and
/// leading/trailing blank lines dropped, forbidden characters removed.
pub fn normalize_pre(text: &str) -> String {
    let cleaned: String = text
        .chars()
        .filter(|&c| c == '\n' || c == '\t' || (xml_allowed(c) && !invisible(c) && !c.is_control()))
        .map(|c| {
            if c.is_whitespace() && c != '\n' && c != '\t' {
                ' '
            } else {
                c
            }
        })
        .collect();
    let lines: Vec<&str> = cleaned.lines().map(str::trim_end).collect();
    let start = lines.iter().position(|l| !l.is_empty());
    let end = lines.iter().rposition(|l| !l.is_empty());
    match (start, end) {
        (Some(s), Some(e)) => lines[s..=e].join("\n"),
        _ => String::new(),
    }
}

/// Number of white-space separated words.
pub fn word_count(text: &str) -> usize {
    text.split_whitespace().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_lose_navigation_chrome() {
        assert_eq!(
            clean_label("v t e Kingdom of New Zealand"),
            "Kingdom of New Zealand"
        );
        assert_eq!(clean_label("v · t · e Cities"), "Cities");
        assert_eq!(clean_label("History [edit]"), "History");
        assert_eq!(clean_label("History [ edit ]"), "History");
        assert_eq!(clean_label("[show] Regions"), "Regions");
        // Nothing else left, or no chrome: unchanged.
        assert_eq!(clean_label("[edit]"), "[edit]");
        assert_eq!(clean_label("Talk show"), "Talk show");
        assert_eq!(clean_label("A Team"), "A Team");
    }

    #[test]
    fn long_labels_are_cut_at_a_word() {
        assert_eq!(short_label("Largest cities", 40), "Largest cities");
        assert_eq!(
            short_label("Largest urban areas of New Zealand", 20),
            "Largest urban areas…"
        );
        assert_eq!(short_label("Supercalifragilistic", 8), "Superca…");
        let long = "word ".repeat(100);
        let s = short_label(&long, 30);
        assert!(s.chars().count() <= 30, "{s}");
    }

    #[test]
    fn alt_text_names_a_run_only_when_it_is_all_there_is() {
        let mut t = InlineText::default();
        t.push_alt("Flag of France");
        t.push_str(" France");
        assert_eq!(t.take().as_deref(), Some("France"));
        t.push_alt("Auckland skyline");
        t.push_alt("Harbour");
        assert_eq!(t.take().as_deref(), Some("Auckland skyline Harbour"));
        assert_eq!(t.take(), None);
    }

    #[test]
    fn collapses_like_a_browser() {
        let mut t = InlineText::default();
        t.push_str("  Hel");
        t.push_str("lo\u{A0}\u{A0} world\n");
        t.push_space();
        assert_eq!(t.take().as_deref(), Some("Hello world"));
        assert!(t.take().is_none());
    }

    #[test]
    fn ascii_runs_read_as_characters_do() {
        // Every ASCII character between printable ones and around spaces,
        // against the rule applied a character at a time.
        for b in 0u8..=0x7F {
            let c = char::from(b);
            let text = format!(" a{c}b {c} c{c}{c}d\u{A0}é{c}");
            let mut want = String::new();
            let mut pending = false;
            for c in text.chars() {
                if c.is_whitespace() {
                    pending = !want.is_empty();
                } else if xml_allowed(c) && !invisible(c) && !c.is_control() {
                    if pending {
                        want.push(' ');
                        pending = false;
                    }
                    want.push(c);
                }
            }
            assert_eq!(normalize(&text), want, "{b:#x}");
        }
    }

    #[test]
    fn removes_forbidden_and_invisible_characters() {
        assert_eq!(
            normalize("a\u{0}b\u{1F}c\u{FFFE}d\u{AD}e\u{200B}f"),
            "abcdef"
        );
    }

    #[test]
    fn pre_keeps_lines() {
        assert_eq!(normalize_pre("\n\n  a  b  \r\n\n c\n\n"), "  a  b\n\n c");
    }
}
