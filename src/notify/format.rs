//! The words of an alert, shared by every notifier that writes for people
//! (email, chat and push services): its facts as (label, value) rows, its
//! first few change lines ("and N more" linking to the check's change
//! view), and one renderer of the whole message for each markup dialect
//! (plain text, HTML, Slack mrkdwn, Markdown) within a size limit, ending
//! in the link to follow ([`super::links`]).
//!
//! # Guarantees
//!
//! - Every string that comes from a page or a watch file (summary, context,
//!   change lines, errors) is made inert ([`inert`]) and then escaped for the
//!   dialect: page text cannot add markup, links or mentions to a message,
//!   not even the links and mentions a client finds in plain text.
//! - A rendered message never exceeds its limit; what does not fit is cut
//!   at whole lines, and a last line says how many lines were left out. The
//!   title and the link are always kept.
//!
//! # Decisions
//!
//! - **One escaper for the HTML-speaking services** ([`escape`]: Telegram,
//!   Matrix and the email body), not `maud`: it escapes the apostrophe too
//!   (`&#39;`, which maud leaves alone), so the same text is safe in
//!   element content and in attributes whichever quote they use.
//! - **Inert rather than escaped, for what clients find by themselves.**
//!   Escaping stops markup, but Slack, Telegram, Teams and the ntfy and
//!   Matrix apps turn `https://…`, `www.…` and `evil.example` in plain text
//!   into links, and Matrix notifies a whole room for `@room` in a body. So
//!   page text loses what a linkifier or a mention parser looks for, with
//!   characters that read the same: a word joiner after `:` in `://` and
//!   after `@`, and a one-dot leader (`․`) for a dot between a word and a
//!   letter (`301.5` keeps its dot). Bidi overrides and isolates are
//!   dropped and other control characters become spaces, so a value cannot
//!   reorder or hide the text around it. The exact text is on the status
//!   page; the link each message ends with is semclip's own.
//! - One value is cut to [`MAX_VALUE_CHARS`] before markup, so a cut never
//!   splits a tag or an entity, and a single line always fits.

use super::links::{CHANGES, Links};
use super::{Alert, AlertKind};

/// The longest value (a change line, an error) shown, in characters.
pub(super) const MAX_VALUE_CHARS: usize = 300;

/// Formats a number the way people write it: 300 rather than 300.0.
pub(super) fn number(value: f64) -> String {
    format!("{value}")
}

/// Page text made inert for every reader: no link or mention a client would
/// find in it, no bidi override, no control character (see the module's
/// decisions). Apply before a dialect's escaping.
pub(super) fn inert(text: &str) -> String {
    /// U+2060 WORD JOINER: invisible, and it ends a scheme or a mention.
    const JOINER: char = '\u{2060}';
    /// U+2024 ONE DOT LEADER: a dot to the eye, not to a linkifier.
    const DOT: char = '\u{2024}';
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        let before = i.checked_sub(1).and_then(|j| chars.get(j)).copied();
        let after = chars.get(i + 1).copied();
        match c {
            '\u{202A}'..='\u{202E}'
            | '\u{2066}'..='\u{2069}'
            | '\u{200E}'
            | '\u{200F}'
            | '\u{061C}' => {}
            c if c.is_control() => out.push(' '),
            '.' if before.is_some_and(|b| b.is_alphanumeric() || b == '-')
                && after.is_some_and(char::is_alphabetic) =>
            {
                out.push(DOT);
            }
            '@' if after.is_some_and(char::is_alphanumeric) => {
                out.push('@');
                out.push(JOINER);
            }
            ':' if after == Some('/') => {
                out.push(':');
                out.push(JOINER);
            }
            c => out.push(c),
        }
    }
    out
}

/// The facts of one alert as (label, value) rows; every value is
/// [`inert`] but the watch file's own (the watched page's address, the
/// threshold's XPath, to copy as written) and the time.
pub(super) fn facts(alert: &Alert) -> Vec<(&'static str, String)> {
    let rows = raw_facts(alert);
    rows.into_iter()
        .map(|(label, value)| match label {
            "Page" | "XPath" | "When" => (label, value),
            _ => (label, inert(&value)),
        })
        .collect()
}

fn raw_facts(alert: &Alert) -> Vec<(&'static str, String)> {
    let mut rows = Vec::new();
    rows.push(("What", alert.kind.label().to_owned()));
    let watch = match &alert.watch_title {
        Some(title) => format!("{title} ({})", alert.watch),
        None => alert.watch.clone(),
    };
    rows.push(("Watch", watch));
    if let Some(t) = &alert.threshold {
        rows.push(("Threshold", format!("{} ({})", t.name, t.bound)));
        rows.push(("Where", crate::diff::display_context_joined(&t.context)));
        rows.push((
            "Value",
            t.value
                .map_or_else(|| "none (nothing selected)".to_owned(), number),
        ));
        rows.push((
            "Previous value",
            t.previous.map_or_else(|| "none".to_owned(), number),
        ));
        rows.push(("XPath", t.xpath.clone()));
        if let Some(node) = &t.node {
            rows.push(("Node", node.clone()));
        }
    }
    if let Some(error) = &alert.error {
        rows.push(("Error", error.clone()));
    }
    if let Some(failures) = alert.failures {
        rows.push(("Failed checks in a row", failures.to_string()));
    }
    rows.push(("When", alert.at.clone()));
    rows.push(("Page", alert.url.clone()));
    rows
}

/// Only http(s) links become clickable; anything else stays text.
pub(super) fn is_web_link(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// Escapes text for HTML element content and quoted attribute values.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// Whether an alert asks for attention now (a higher push priority).
pub(super) fn is_alarm(kind: AlertKind) -> bool {
    matches!(
        kind,
        AlertKind::ThresholdCrossed | AlertKind::SelectorLost | AlertKind::Failing
    )
}

/// One line, e.g. "GAZP Last 301.5 crossed above 300" for one alert or
/// "gazp: 3 alerts" for a digest; [`inert`].
pub(super) fn title(alerts: &[Alert]) -> String {
    let text = match alerts {
        [one] => one.summary.clone(),
        _ => {
            let watch = alerts.first().map_or("", |a| a.watch.as_str());
            format!("{watch}: {} alerts", alerts.len())
        }
    };
    cut(inert(&text).trim(), MAX_VALUE_CHARS)
}

/// `text` cut to `max` characters, with `…` when cut.
pub(super) fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// A markup language of a chat or push service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dialect {
    /// No markup (ntfy, Matrix `body`).
    Plain,
    /// The HTML subset of Telegram and Matrix (`<b>`, `<code>`, `<a>`).
    Html,
    /// Slack's mrkdwn (`*bold*`, `<url|label>`).
    Slack,
    /// CommonMark as Discord and Gotify show it.
    Markdown,
}

impl Dialect {
    pub(super) fn text(self, text: &str) -> String {
        let text = cut(text, MAX_VALUE_CHARS);
        match self {
            Dialect::Plain => text,
            Dialect::Html => escape(&text),
            // Slack's own rule: escape these three, nothing else.
            Dialect::Slack => text
                .replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;"),
            Dialect::Markdown => {
                let mut out = String::with_capacity(text.len());
                for c in text.chars() {
                    if "\\`*_{}[]()<>#+-.!|~@:".contains(c) {
                        out.push('\\');
                    }
                    out.push(c);
                }
                out
            }
        }
    }

    fn bold(self, text: &str) -> String {
        let inner = self.text(text);
        match self {
            Dialect::Plain => inner,
            Dialect::Html => format!("<b>{inner}</b>"),
            Dialect::Slack => format!("*{inner}*"),
            Dialect::Markdown => format!("**{inner}**"),
        }
    }

    /// Code: the text verbatim in a monospace span. Backticks inside would
    /// end the span early, so they become a look-alike.
    fn code(self, text: &str) -> String {
        let text = cut(text, MAX_VALUE_CHARS);
        match self {
            Dialect::Plain => text,
            Dialect::Html => format!("<code>{}</code>", escape(&text)),
            Dialect::Slack => format!("`{}`", Dialect::Slack.text(&text.replace('`', "\u{2035}"))),
            Dialect::Markdown => format!("`{}`", text.replace('`', "\u{2035}")),
        }
    }

    fn link(self, label: &str, url: &str) -> String {
        if !is_web_link(url) {
            return format!("{}: {}", self.text(label), self.text(url));
        }
        match self {
            Dialect::Plain => format!("{label}: {url}"),
            Dialect::Html => format!("<a href=\"{}\">{}</a>", escape(url), escape(label)),
            Dialect::Slack => format!(
                "<{}|{}>",
                url.replace('|', "%7C").replace('>', "%3E"),
                self.text(label)
            ),
            Dialect::Markdown => format!(
                "[{}](<{}>)",
                self.text(label),
                url.replace('>', "%3E").replace(' ', "%20")
            ),
        }
    }
}

/// How a message's size is counted.
#[derive(Debug, Clone, Copy)]
pub(super) enum Measure {
    /// UTF-16 code units (Telegram, Discord and Slack count these; never
    /// fewer than characters).
    Utf16,
    /// UTF-8 bytes (ntfy).
    Bytes,
}

impl Measure {
    fn of(self, text: &str) -> usize {
        match self {
            Measure::Utf16 => text.encode_utf16().count(),
            Measure::Bytes => text.len(),
        }
    }
}

/// What to render.
#[derive(Debug, Clone, Copy)]
pub(super) struct Layout {
    pub dialect: Dialect,
    pub measure: Measure,
    pub limit: usize,
    /// Whether the first line is the title (off where the service shows a
    /// title of its own: ntfy, Gotify, a Slack header block).
    pub title: bool,
    /// Whether the last line is the link (off where the service links
    /// elsewhere: ntfy's Click header).
    pub link: bool,
}

/// The change lines of `alert` in a message: a heading, the first
/// [`SHOWN_CHANGES`](super::SHOWN_CHANGES), and "and N more" linking to the
/// check's change view (plain text without a public URL).
fn change_lines(alert: &Alert, links: &Links, d: Dialect) -> Vec<String> {
    let (shown, more) = alert.shown_changes();
    if shown.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![d.bold("Changes")];
    lines.extend(shown.iter().map(|c| d.code(&inert(&c.text))));
    if more > 0 {
        let words = format!("and {more} more");
        lines.push(match links.change_view(alert) {
            Some(url) => d.link(&words, &url),
            None => d.text(&words),
        });
    }
    lines
}

/// The whole message for `alerts` as one text in `layout`.
pub(super) fn render(alerts: &[Alert], links: &Links, layout: Layout) -> String {
    let d = layout.dialect;
    let mut lines: Vec<String> = Vec::new();
    for alert in alerts {
        if alerts.len() > 1 {
            if !lines.is_empty() {
                lines.push(String::new());
            }
            lines.push(d.bold(&inert(&alert.summary)));
        }
        for (label, value) in facts(alert) {
            // The page is the link's business when the link goes there.
            if label == "Page" && layout.link && links.of(alert).1 == alert.url {
                continue;
            }
            let value = if matches!(label, "XPath" | "Node") {
                d.code(&value)
            } else {
                d.text(&value)
            };
            lines.push(format!("{}: {value}", d.bold(label)));
        }
        lines.extend(change_lines(alert, links, d));
        // In a digest, each alert about changes links its own check (the
        // message's link is the watch's).
        if alerts.len() > 1
            && let Some(url) = links.change_view(alert)
        {
            lines.push(d.link(CHANGES, &url));
        }
    }
    let head = if layout.title {
        format!("{}\n", d.bold(&title(alerts)))
    } else {
        String::new()
    };
    let tail = match links.of_message(alerts) {
        Some((label, url)) if layout.link => format!("\n{}", d.link(label, &url)),
        _ => String::new(),
    };
    let size = |s: &str| layout.measure.of(s);
    let fixed = size(&head) + size(&tail);
    let mut body = String::new();
    for (i, line) in lines.iter().enumerate() {
        let rest = lines.len() - i;
        let note = d.text(&format!("… {rest} more lines"));
        // Room for this line, and for the note should the next not fit.
        let reserve = if rest > 1 { size(&note) + 1 } else { 0 };
        if fixed + size(&body) + size(line) + 1 + reserve > layout.limit {
            body.push_str(&note);
            body.push('\n');
            break;
        }
        body.push_str(line);
        body.push('\n');
    }
    let out = format!("{head}{}{tail}", body.trim_end_matches('\n'));
    if size(&out) <= layout.limit {
        return out;
    }
    // Only a limit smaller than the title and link themselves gets here:
    // cut by characters.
    let mut used = 0;
    out.chars()
        .take_while(|c| {
            used += size(c.encode_utf8(&mut [0; 4]));
            used <= layout.limit
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::expect_used, reason = "tests fail loudly on purpose")]
mod tests {
    use super::*;
    use crate::notify::{ChangeLine, ThresholdAlert};

    fn alert(changes: usize) -> Alert {
        Alert {
            id: "a-1".to_owned(),
            kind: AlertKind::Changed,
            watch: "gazp".to_owned(),
            watch_title: None,
            url: "https://example.org/q".to_owned(),
            at: "2025-03-04T10:00:00Z".to_owned(),
            summary: "<b>changes</b> & more".to_owned(),
            threshold: Some(ThresholdAlert {
                name: "high".to_owned(),
                xpath: "//a[`x`]".to_owned(),
                value: Some(3.5),
                previous: None,
                bound: "above 3".to_owned(),
                context: "T / *R* / C".to_owned(),
                node: None,
            }),
            changes: (0..changes)
                .map(|i| ChangeLine {
                    kind: "update".to_owned(),
                    path: "T".to_owned(),
                    text: format!("update T / row {i}: 1 -> 2"),
                    ..ChangeLine::default()
                })
                .collect(),
            records: Vec::new(),
            error: None,
            failures: None,
        }
    }

    fn layout(dialect: Dialect, limit: usize) -> Layout {
        Layout {
            dialect,
            measure: Measure::Utf16,
            limit,
            title: true,
            link: true,
        }
    }

    #[test]
    fn inert_text_keeps_numbers_and_loses_links_mentions_and_overrides() {
        assert_eq!(inert("301.5 -> 299.75"), "301.5 -> 299.75");
        assert_eq!(inert("see evil.example/x"), "see evil\u{2024}example/x");
        assert_eq!(inert("https://x"), "https:\u{2060}//x");
        assert_eq!(inert("@everyone"), "@\u{2060}everyone");
        assert_eq!(inert("a\u{202E}b\u{7}c\nd"), "ab c d");
        assert_eq!(inert("e-mail: a @ b."), "e-mail: a @ b.");
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape(r#"<script>alert("x&y")</script>'"#),
            "&lt;script&gt;alert(&quot;x&amp;y&quot;)&lt;/script&gt;&#39;"
        );
    }

    #[test]
    fn every_dialect_escapes_page_text() {
        let links = Links::new(None);
        let html = render(&[alert(1)], &links, layout(Dialect::Html, 4096));
        assert!(
            html.starts_with("<b>&lt;b&gt;changes&lt;/b&gt; &amp; more</b>\n"),
            "{html}"
        );
        assert!(html.contains("<code>//a[`x`]</code>"), "{html}");
        assert!(
            html.ends_with("<a href=\"https://example.org/q\">Page</a>"),
            "{html}"
        );
        let slack = render(&[alert(1)], &links, layout(Dialect::Slack, 4096));
        assert!(
            slack.starts_with("*&lt;b&gt;changes&lt;/b&gt; &amp; more*\n"),
            "{slack}"
        );
        assert!(slack.ends_with("<https://example.org/q|Page>"), "{slack}");
        let md = render(&[alert(1)], &links, layout(Dialect::Markdown, 4096));
        assert!(md.contains("T / \\*R\\* / C"), "{md}");
        assert!(md.contains("`//a[\u{2035}x\u{2035}]`"), "{md}");
        assert!(md.ends_with("[Page](<https://example.org/q>)"), "{md}");
    }

    #[test]
    fn long_messages_are_cut_at_lines_within_the_limit() {
        let links = Links::new(Some(
            &url::Url::parse("https://semclip.example.org/base/").expect("url"),
        ));
        let view = "https://semclip.example.org/base/status/gazp/changes/at/1741082400000";
        let mut long = alert(3);
        long.summary = "word ".repeat(60);
        let digest = [long.clone(), long.clone(), long.clone(), long];
        for limit in [300, 700, 1500] {
            let text = render(&digest, &links, layout(Dialect::Html, limit));
            assert!(
                text.encode_utf16().count() <= limit,
                "{limit}: {}",
                text.len()
            );
            assert!(text.contains("more lines"), "{text}");
            assert!(
                text.ends_with(
                    "<a href=\"https://semclip.example.org/base/status/gazp\">Status page</a>"
                ),
                "{text}"
            );
        }
        let all = render(&[alert(3)], &links, layout(Dialect::Plain, 4000));
        assert!(
            !all.contains("more lines") && !all.contains(" more: "),
            "{all}"
        );
        assert!(all.contains("update T / row 2: 1 -> 2"), "{all}");
        assert!(all.ends_with(&format!("View changes: {view}")), "{all}");
    }

    #[test]
    fn a_few_changes_are_shown_and_the_rest_linked_to_the_change_view() {
        let public = url::Url::parse("https://semclip.example.org/base/").expect("url");
        let view = "https://semclip.example.org/base/status/gazp/changes/at/1741082400000";
        let text = render(
            &[alert(200)],
            &Links::new(Some(&public)),
            layout(Dialect::Html, 4096),
        );
        assert_eq!(text.matches("<code>update T / row").count(), 5, "{text}");
        assert!(text.contains("update T / row 4: 1 -&gt; 2"), "{text}");
        assert!(!text.contains("row 5:"), "{text}");
        assert!(
            text.contains(&format!("<a href=\"{view}\">and 195 more</a>")),
            "{text}"
        );
        assert!(!text.contains("more lines"), "{text}");
        assert!(
            text.ends_with(&format!("<a href=\"{view}\">View changes</a>")),
            "{text}"
        );
        // In a digest, each alert about changes links its own check.
        let slack = render(
            &[alert(2), alert(7)],
            &Links::new(Some(&public)),
            layout(Dialect::Slack, 3000),
        );
        assert_eq!(slack.matches(&format!("<{view}|View changes>")).count(), 2);
        assert!(slack.contains(&format!("<{view}|and 2 more>")), "{slack}");
        assert!(
            slack.ends_with("<https://semclip.example.org/base/status/gazp|Status page>"),
            "{slack}"
        );
        // Without a public URL the rest are counted, not linked.
        let plain = render(&[alert(8)], &Links::new(None), layout(Dialect::Plain, 4096));
        assert!(plain.contains("\nand 3 more\n"), "{plain}");
        assert!(plain.ends_with("Page: https://example.org/q"), "{plain}");
    }
}
