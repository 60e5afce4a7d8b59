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

    /// Takes the collected text, if any, and starts a new run.
    pub fn take(&mut self) -> Option<String> {
        self.pending_space = false;
        if self.buf.is_empty() {
            None
        } else {
            Some(std::mem::take(&mut self.buf))
        }
    }

    /// Length in bytes of the text collected so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// True when nothing has been collected since the last [`take`](Self::take).
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
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
