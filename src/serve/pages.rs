//! The status pages as server-rendered HTML: takes the plain data of
//! [`super::view`] (and the time to count "12 s ago" from) and gives complete
//! HTML5 documents as strings: the overview of all watches, one watch's
//! page (with an inline SVG chart of each threshold's value history and a
//! sparkline of each value's, drawn by [`super::chart`]), and a small
//! error page. Pure rendering: no I/O, no store, no JavaScript, no external
//! resources; the same input gives the same string.
//!
//! Everything that comes from data is escaped (by `maud`) except
//! [`ClipView::html`], which was sanitized upstream and is inserted as is.

use crate::store::replicas::watch_set::ReplicaSummary;
use std::borrow::Cow;
use std::time::SystemTime;

use chrono::SecondsFormat;
use maud::{DOCTYPE, Markup, PreEscaped, html};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use crate::store::time;

use super::chart::{self, Series};
use super::format::{fmt_value, plural};
use super::view::{ChangeView, ClipView, Health, SeriesView, ThresholdView, WatchPage, WatchRow};

/// Seconds between reloads of the overview and the watch pages.
const REFRESH_SECS: u32 = 30;

/// How many characters of a last error the overview shows.
const ERROR_PREVIEW_CHARS: usize = 200;

/// The representations a clip is served in (`?format=`).
const CLIP_FORMATS: [&str; 5] = ["xml", "json", "html", "rdf", "ttl"];

/// What a dash in an empty cell is.
pub(super) const NONE: &str = "—";

/// Characters percent-encoded in a URL path segment: all but the unreserved
/// ones (RFC 3986 `ALPHA / DIGIT / "-" / "." / "_" / "~"`).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The pages' one style sheet: readable tables, state colours, light and
/// dark, narrow screens.
const STYLE: &str = r#"
:root{color-scheme:light dark;--fg:#1f2328;--bg:#fff;--muted:#59636e;--line:#d1d9e0;--head:#f6f8fa;--ok:#1a7f37;--fail:#cf222e;--warn:#9a6700;--grey:#6e7781;--link:#0969da;--series:#0969da}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--bg:#0d1117;--muted:#9198a1;--line:#3d444d;--head:#151b23;--ok:#238636;--fail:#da3633;--warn:#9e6a03;--grey:#656c76;--link:#4493f8;--series:#4493f8}}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:78rem;margin:0 auto;padding:1rem 1.25rem 3rem}
a{color:var(--link)}
h1{font-size:1.6rem;margin:.5rem 0}
h2{font-size:1.2rem;margin:2rem 0 .75rem;padding-bottom:.25rem;border-bottom:1px solid var(--line)}
h3{font-size:1.05rem;margin:.25rem 0}
.muted,.none{color:var(--muted)}
nav.crumbs{font-size:.9rem;color:var(--muted)}
.table-wrap{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:.92rem}
th,td{padding:.4rem .6rem;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{background:var(--head);font-weight:600;white-space:nowrap}
tbody tr:hover{background:var(--head)}
td.num{text-align:right;font-variant-numeric:tabular-nums}
td.url,.err{word-break:break-all}
time{white-space:nowrap}
.badge{display:inline-block;padding:0 .55em;border-radius:1em;font-size:.8rem;font-weight:600;line-height:1.6;color:#fff;background:var(--grey);white-space:nowrap}
.state-ok,.threshold-normal,.kind-insert,.kind-first{background:var(--ok)}
.state-failing,.state-blocked,.threshold-alarm,.kind-delete{background:var(--fail)}
.state-pending,.threshold-lost,.kind-move{background:var(--warn)}
.kind-update{background:var(--link)}
.alarm{color:var(--fail);font-weight:600}
dl.summary{display:grid;grid-template-columns:max-content 1fr;gap:.3rem 1.25rem;margin:1rem 0}
dl.summary dt{font-weight:600}
dl.summary dd{margin:0;word-break:break-word}
.clip{border:1px solid var(--line);border-radius:6px;padding:.5rem 1rem;margin:1rem 0}
.clip-body{overflow-x:auto;border-top:1px solid var(--line);padding-top:.5rem}
.clip-error,.err{color:var(--fail)}
.formats a{margin-right:.5rem}
code{font:.88em ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;word-break:break-all}
figure.chart{margin:1rem 0;max-width:48rem;color:var(--muted)}
figure.chart svg{display:block;border:1px solid var(--line);border-radius:6px;background:var(--bg)}
figure.chart .series{stroke:var(--series)}
figure.chart circle{fill:var(--series)}
svg .series{stroke:var(--series)}
svg circle.last{fill:var(--series)}
svg circle.mark{fill:none;stroke:var(--fail)}
.spark{display:inline-flex;align-items:center;gap:.4rem;vertical-align:middle;white-space:nowrap}
svg.spark{display:block;overflow:visible}
.spark-labels{font-size:.8rem;color:var(--muted);font-variant-numeric:tabular-nums}
figure.series-chart{margin:.5rem 0}
figcaption{font-size:.9rem;margin-top:.25rem}
ol.changes{list-style:none;padding:0;margin:0}
ol.changes li{padding:.35rem 0;border-bottom:1px solid var(--line);display:flex;gap:.75rem;align-items:baseline;flex-wrap:wrap}
ol.changes .line{word-break:break-word}
details.node{margin:.1rem 0}
details.node>summary{cursor:pointer;padding:.1rem 0}
ul.tree{list-style:none;margin:0;padding-left:1.1rem;border-left:1px dotted var(--line)}
ul.tree.root{padding-left:0;border-left:0}
.node-body{margin:.25rem 0 .5rem .25rem;padding:.4rem .6rem;border:1px solid var(--line);border-radius:6px;background:var(--head)}
.kind{font:.8em ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;color:var(--muted)}
.val{color:var(--muted)}
.more{color:var(--warn);font-style:italic}
pre.snippet{margin:.25rem 0;padding:.4rem .6rem;border:1px solid var(--line);border-radius:4px;background:var(--bg);overflow-x:auto;font-size:.85rem}
button.copy{font:inherit;font-size:.8rem;padding:.05rem .6rem;border:1px solid var(--line);border-radius:4px;background:var(--bg);color:var(--fg);cursor:pointer}
table.sides td.changed{background:rgba(207,34,46,.15);font-weight:600}
table.sides th.side{width:6rem}
ol.changes li.change{display:block}
li.change{border:1px solid var(--line);border-radius:6px;padding:.5rem .75rem;margin:.75rem 0;list-style:none}
li.change.current{border-color:var(--link);box-shadow:0 0 0 1px var(--link)}
@media (max-width:40rem){main{padding:.5rem .75rem 2rem}dl.summary{grid-template-columns:1fr}dl.summary dd{margin-bottom:.5rem}}
"#;

// ---------------------------------------------------------------- pages

/// The overview page of all watches.
pub fn overview(rows: &[WatchRow], replicas: Option<&ReplicaSummary>, now: SystemTime) -> String {
    // A blocked watch is failing too (its badge says why).
    let failing = rows
        .iter()
        .filter(|r| matches!(r.health, Health::Failing | Health::Blocked))
        .count();
    let alarms: usize = rows.iter().map(|r| r.alarms).sum();
    let body = html! {
        h1 { "semclip status" }
        p.summary {
            (plural(rows.len(), "watch", "watches")) ", "
            (failing) " failing, "
            (plural(alarms, "threshold", "thresholds")) " in alarm"
        }
        @if let Some(r) = replicas.filter(|r| r.live > 1 || r.this_differs) {
            (replica_line(r))
        }
        @if rows.is_empty() {
            p.empty { "No watches yet. Add a watch file and semclip will show it here." }
        } @else {
            div.table-wrap {
                table #watches {
                    thead {
                        tr {
                            th { "Watch" } th { "Title" } th { "URL" } th { "State" }
                            th { "Last check" } th { "Last change" } th { "Next run" }
                            th { "Failures" } th { "Last error" } th { "Alarms" }
                        }
                    }
                    tbody {
                        @for row in rows { (overview_row(row, now)) }
                    }
                }
            }
        }
        p.muted {
            "Rendered " (time(Some(now), now)) ". "
            a href="/feeds/all.atom" { "Atom feed of all changes" }
        }
    };
    layout("semclip status", true, Some("/feeds/all.atom"), body)
}

/// One watch's page.
pub fn watch(page: &WatchPage, now: SystemTime) -> String {
    let row = &page.row;
    let id = seg(&row.id);
    let feed = format!("/feeds/{id}.atom");
    let heading = row.title.as_deref().unwrap_or(&row.id);
    let body = html! {
        nav.crumbs { a href="/status" { "semclip status" } " / " (row.id) }
        h1 { (heading) }
        @if row.title.is_some() { p.muted { "Watch " code { (row.id) } } }
        dl.summary {
            dt { "URL" } dd { (url_text(&row.url)) }
            dt { "State" } dd { (health_badge(row.health)) }
            dt { "Last check" } dd { (time(row.last_check, now)) }
            dt { "Last change" } dd { (time(row.last_change, now)) }
            dt { "Next run" } dd { (time(row.next_run, now)) }
            dt { "Failures" } dd { (row.failures) }
            dt { "Last error" } dd {
                @match &row.last_error {
                    Some(e) => span.err { (e) },
                    None => span.none { (NONE) },
                }
            }
            dt { "Alarms" } dd { (alarms(row)) }
            dt { "Feed" } dd { a href=(feed) { "Atom feed of changes" } }
        }

        section #hierarchy {
            h2 { "Hierarchy" }
            p {
                a href={ "/status/" (id) "/tree" } { "Browse the page's hierarchy" }
                ": every node with its XPath, ready clip and threshold YAML to copy."
            }
        }

        section #clips {
            h2 { "Clips" }
            p { "Whole page: " a href={ "/clips/" (id) } { "/clips/" (row.id) } }
            @if page.clips.is_empty() {
                p.empty { "No named clips defined." }
            }
            @for clip in &page.clips { (clip_section(&id, clip)) }
        }

        section #thresholds {
            h2 { "Thresholds" }
            @if page.thresholds.is_empty() {
                p.empty { "No thresholds defined." }
            } @else {
                div.table-wrap {
                    table.thresholds {
                        thead {
                            tr {
                                th { "Name" } th { "XPath" } th { "Bounds" }
                                th { "State" } th { "Value" } th { "Since" }
                            }
                        }
                        tbody {
                            @for t in &page.thresholds { (threshold_row(t, now)) }
                        }
                    }
                }
                @for t in page.thresholds.iter().filter(|t| !t.history.is_empty()) {
                    figure.chart id={ "chart-" (safe_id(&t.name)) } {
                        (chart::chart(Series::Readings(&t.history), &t.lines))
                        figcaption {
                            (t.name) ": " (t.bounds) "; "
                            (plural(t.history.len(), "value", "values"))
                        }
                    }
                }
            }
        }

        (values_section(&id, page, now))

        section #changes {
            h2 { "Recent changes" }
            @if page.changes.is_empty() {
                p.empty { "No changes recorded yet." }
            } @else {
                ol.changes {
                    @for c in &page.changes { (change_item(&id, c, now)) }
                }
            }
        }

        @if !page.layout.is_empty() {
            section #layout {
                h2 { "Layout events" }
                p.empty { "Something this watch depends on moved or vanished; not a data change." }
                ol.changes {
                    @for c in &page.layout { (change_item(&id, c, now)) }
                }
            }
        }
    };
    let title = format!("{heading} — semclip status");
    layout(&title, true, Some(&feed), body)
}

/// An inline SVG line chart of a value history with horizontal bound lines.
pub fn chart(history: &[(SystemTime, f64)], lines: &[f64]) -> String {
    chart::chart(Series::Readings(history), lines).into_string()
}

/// A small HTML error page (404, 401, 503 ...) in the same style.
pub fn error(status: u16, title: &str, message: &str) -> String {
    let body = html! {
        h1 { (status) " " (title) }
        p { (message) }
        p { a href="/status" { "Back to the status overview" } }
    };
    layout(&format!("{status} {title} — semclip"), false, None, body)
}

// ---------------------------------------------------------------- parts

/// The document around a page's body.
pub(super) fn layout(title: &str, refresh: bool, feed: Option<&str>, body: Markup) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                @if refresh { meta http-equiv="refresh" content=(REFRESH_SECS); }
                title { (title) }
                @if let Some(feed) = feed {
                    link rel="alternate" type="application/atom+xml" href=(feed) title="Atom feed";
                }
                style { (PreEscaped(STYLE)) }
            }
            body { main { (body) } }
        }
    }
    .into_string()
}

/// One row of the overview table.
/// The replicas sharing the database, and which run a watch set that
/// differs from the one most of them run.
fn replica_line(r: &ReplicaSummary) -> Markup {
    html! {
        p.replicas #replicas {
            (plural(r.live, "replica", "replicas")) " live"
            @if r.differing.is_empty() {
                ", all running the same watch set."
            } @else {
                "; running a different watch set from the others: "
                (r.differing.join(",")) "."
            }
            @if r.this_differs {
                " " strong.err {
                    "This replica's watch set differs from the others'"
                }
                @if !r.withheld.is_empty() {
                    ": it leaves " (plural(r.withheld.len(), "watch", "watches"))
                    " defined differently there to them (" (r.withheld.join(", ")) ")"
                }
                "."
            }
        }
    }
}

fn overview_row(row: &WatchRow, now: SystemTime) -> Markup {
    html! {
        tr data-watch=(row.id) {
            td { a href={ "/status/" (seg(&row.id)) } { (row.id) } }
            td {
                @match &row.title {
                    Some(t) => (t),
                    None => span.none { (NONE) },
                }
            }
            td.url { (url_text(&row.url)) }
            td { (health_badge(row.health)) }
            td { (time(row.last_check, now)) }
            td { (time(row.last_change, now)) }
            td { (time(row.next_run, now)) }
            td.num { (row.failures) }
            td {
                @match &row.last_error {
                    Some(e) => span.err title=(e) { (truncate(e, ERROR_PREVIEW_CHARS)) },
                    None => span.none { (NONE) },
                }
            }
            td.num { (alarms(row)) }
        }
    }
}

/// "A/T" alarms of thresholds, highlighted while any is in alarm.
fn alarms(row: &WatchRow) -> Markup {
    html! {
        @if row.alarms > 0 {
            span.alarm { (row.alarms) "/" (row.thresholds) }
        } @else {
            (row.alarms) "/" (row.thresholds)
        }
    }
}

/// A watch's page URL: as text, and a link only for http(s).
fn url_text(url: &str) -> Markup {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    let linkable = lower.starts_with("http://") || lower.starts_with("https://");
    html! {
        @if linkable {
            a href=(url) rel="noopener noreferrer" { (url) }
        } @else {
            (url)
        }
    }
}

/// The state badge of a watch.
fn health_badge(health: Health) -> Markup {
    let name = health.name();
    html! { span class={ "badge state-" (name) } { (name) } }
}

/// One clip's section on a watch page; `id` is the watch id, already
/// percent-encoded.
fn clip_section(id: &str, clip: &ClipView) -> Markup {
    let base = format!("/clips/{id}/{}", seg(&clip.name));
    html! {
        section.clip id={ "clip-" (safe_id(&clip.name)) } {
            h3 { (clip.name) }
            @if let Some(d) = &clip.description { p.description { (d) } }
            p.xpath { "XPath: " code { (clip.xpath) } }
            p.formats {
                "As: "
                @for f in CLIP_FORMATS { a href={ (base) "?format=" (f) } { (f) } " " }
            }
            @match (&clip.html, &clip.error) {
                // The clip's HTML was rendered by its stylesheet and
                // sanitized upstream (see `ClipView::html`): it is inserted
                // verbatim, on that assumption; nothing here re-checks it.
                (Some(h), _) => div.clip-body { (PreEscaped(h)) },
                (None, Some(e)) => p.clip-error { (e) },
                (None, None) => p.clip-error { "Not rendered." },
            }
        }
    }
}

/// One row of a watch page's threshold table.
fn threshold_row(t: &ThresholdView, now: SystemTime) -> Markup {
    html! {
        tr data-threshold=(t.name) {
            td {
                @if t.history.is_empty() {
                    (t.name)
                } @else {
                    a href={ "#chart-" (safe_id(&t.name)) } { (t.name) }
                }
            }
            td { code { (t.xpath) } }
            td { (t.bounds) }
            td { span class={ "badge threshold-" (safe_id(&t.state)) } { (t.state) } }
            td.num {
                @match t.value {
                    Some(v) => (fmt_value(v)),
                    None => span.none { (NONE) },
                }
            }
            td { (time(t.since, now)) }
        }
    }
}

/// A watch page's values over time: a row per series shown, with its
/// sparkline and links to its points; `id` is the watch id, already
/// percent-encoded.
fn values_section(id: &str, page: &WatchPage, now: SystemTime) -> Markup {
    let all = series_href(id, None, None);
    let shown = page.values.len();
    html! {
        section #values {
            h2 { "Values" }
            @if page.values.is_empty() {
                p.empty {
                    "No values recorded yet: each number within the watch's clips and "
                    "thresholds gets its history here, a point each time it changes."
                }
            } @else {
                p.muted {
                    "Each number within the watch's clips and thresholds, as it changed; "
                    @if page.series_total > shown {
                        "the first " (shown) " of " (page.series_total) " here (those still on the page first); "
                    }
                    "all of them: "
                    a href=(all) { "JSON" } " · "
                    a href=(series_href(id, None, Some("csv"))) { "CSV" }
                }
                div.table-wrap {
                    table.values {
                        thead {
                            tr {
                                th { "Value of" } th { "Now" } th { "Since" }
                                th { "History" } th { "Points" }
                            }
                        }
                        tbody {
                            @for s in &page.values { (value_row(id, s, now)) }
                        }
                    }
                }
            }
        }
    }
}

/// One row of a watch page's values.
fn value_row(id: &str, s: &SeriesView, now: SystemTime) -> Markup {
    let label = if s.label.is_empty() {
        &s.node
    } else {
        &s.label
    };
    html! {
        tr data-node=(s.node) {
            td {
                (label)
                div.kind { (s.node) }
            }
            td.num {
                @match s.value {
                    Some(v) => (fmt_value(v)),
                    None => span.none { "gone" },
                }
            }
            td { (time(Some(s.since), now)) }
            td { (chart::sparkline(label, &s.points, now, None)) }
            td.formats {
                a href=(series_href(id, Some(&s.node), None)) { "JSON" }
                a href=(series_href(id, Some(&s.node), Some("csv"))) { "CSV" }
            }
        }
    }
}

/// The series API of a watch (`watch` already percent-encoded): one
/// node's points (`node`), or every series' head; in `format` (JSON by
/// default).
pub(super) fn series_href(watch: &str, node: Option<&str>, format: Option<&str>) -> String {
    let query: Vec<String> = node
        .map(|node| format!("xpath={}", seg(node)))
        .into_iter()
        .chain(format.map(|format| format!("format={format}")))
        .collect();
    if query.is_empty() {
        format!("/api/watches/{watch}/series")
    } else {
        format!("/api/watches/{watch}/series?{}", query.join("&"))
    }
}

/// One item of a watch page's change list, linked to its change view.
fn change_item(watch: &str, c: &ChangeView, now: SystemTime) -> Markup {
    html! {
        li {
            (time(Some(c.at), now))
            span class={ "badge kind-" (safe_id(&c.kind)) } { (c.kind) }
            span.line { (c.line) }
            a.view href=(change_href(watch, c.id)) { "view" }
        }
    }
}

/// The change view of event `id` of a watch (`watch` already percent-encoded).
pub(super) fn change_href(watch: &str, id: i64) -> String {
    format!("/status/{watch}/changes/{id}")
}

/// A time as "12 s ago" in a `<time>` with the UTC time in `datetime` and
/// `title`; `None` as a dash.
pub(super) fn time(t: Option<SystemTime>, now: SystemTime) -> Markup {
    match t {
        None => html! { span.none { (NONE) } },
        Some(t) => match time::rfc3339(t, SecondsFormat::Secs) {
            Some(abs) => html! { time datetime=(abs) title=(abs) { (relative(t, now)) } },
            None => html! { (relative(t, now)) },
        },
    }
}

// ---------------------------------------------------------------- helpers

/// An element id from a name: every character outside `[A-Za-z0-9_-]`
/// becomes `-`.
pub(super) fn safe_id(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// A string as one percent-encoded URL path segment (`.` and `..` too, so
/// they stay segments).
pub(super) fn seg(s: &str) -> String {
    if s == "." || s == ".." {
        return s.replace('.', "%2E");
    }
    utf8_percent_encode(s, SEGMENT).to_string()
}

/// At most `max` characters of `s`, with `…` when cut.
pub(super) fn truncate(s: &str, max: usize) -> Cow<'_, str> {
    match s.char_indices().nth(max) {
        None => Cow::Borrowed(s),
        Some((end, _)) => Cow::Owned(format!("{}…", s[..end].trim_end())),
    }
}

/// How far `t` is from `now`: `12 s ago`, `in 3 min`, `2 h ago`, `5 d ago`,
/// `now` within a second.
fn relative(t: SystemTime, now: SystemTime) -> String {
    let (secs, future) = match t.duration_since(now) {
        Ok(d) => (d.as_secs(), true),
        Err(e) => (e.duration().as_secs(), false),
    };
    let amount = match secs {
        0 => return "now".to_owned(),
        1..60 => format!("{secs} s"),
        60..3_600 => format!("{} min", secs / 60),
        3_600..86_400 => format!("{} h", secs / 3_600),
        _ => format!("{} d", secs / 86_400),
    };
    if future {
        format!("in {amount}")
    } else {
        format!("{amount} ago")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use libxml::parser::Parser;
    use libxml::xpath::Context;

    use super::*;
    use crate::store::Point;

    const HOSTILE: &str = "<script>alert(1)</script>\" onmouseover=\"x";
    const HOSTILE_ESCAPED: &str = "&lt;script&gt;alert(1)&lt;/script&gt;&quot; onmouseover=&quot;x";

    /// 2023-11-14T22:13:20Z.
    fn now() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_700_000_000)
    }

    fn ago(secs: u64) -> SystemTime {
        now() - Duration::from_secs(secs)
    }

    fn later(secs: u64) -> SystemTime {
        now() + Duration::from_secs(secs)
    }

    fn row(id: &str, health: Health) -> WatchRow {
        WatchRow {
            id: id.to_owned(),
            title: Some(format!("Title of {id}")),
            url: format!("https://example.org/{id}"),
            health,
            last_check: Some(ago(12)),
            last_change: Some(ago(2 * 3_600 + 5)),
            next_run: Some(later(180)),
            failures: 0,
            last_error: None,
            alarms: 0,
            thresholds: 0,
        }
    }

    fn threshold(name: &str, history: Vec<(SystemTime, f64)>) -> ThresholdView {
        ThresholdView {
            name: name.to_owned(),
            xpath: "//price".to_owned(),
            bounds: "above 300 (hysteresis 1)".to_owned(),
            state: "alarm".to_owned(),
            value: Some(301.5),
            since: Some(ago(5 * 86_400 + 10)),
            lines: vec![300.0],
            history,
        }
    }

    fn page() -> WatchPage {
        WatchPage {
            row: row("shop", Health::Ok),
            clips: vec![
                ClipView {
                    name: "prices".to_owned(),
                    description: Some("The price table".to_owned()),
                    xpath: "//table[@id='p']".to_owned(),
                    html: Some("<table class=\"x\"><tr><td>1 &amp; 2</td></tr></table>".to_owned()),
                    error: None,
                },
                ClipView {
                    name: "news.top".to_owned(),
                    description: None,
                    xpath: "//h2".to_owned(),
                    html: None,
                    error: Some("selects nothing".to_owned()),
                },
            ],
            changes: vec![
                ChangeView {
                    id: 1,
                    at: ago(30),
                    kind: "update".to_owned(),
                    line: "price 299 → 301.5".to_owned(),
                },
                ChangeView {
                    id: 2,
                    at: ago(3_600),
                    kind: "insert".to_owned(),
                    line: "row Widget".to_owned(),
                },
            ],
            layout: vec![ChangeView {
                id: 3,
                at: ago(7_200),
                kind: "layout".to_owned(),
                line: "layout changed: clips selecting nothing now: prices".to_owned(),
            }],
            thresholds: vec![
                threshold("price", vec![(ago(120), 299.0), (ago(60), 301.5)]),
                threshold("stock level", vec![]),
            ],
            values: vec![
                series(
                    GAZP_LAST,
                    "Shares / GAZP / Last",
                    &[(600, Some(251.3)), (300, Some(268.4)), (60, Some(305.4))],
                ),
                series(
                    "/page/table[@label='Shares']/row[@key='VTBR']/cell[@col='Last']",
                    "",
                    &[(900, Some(0.02)), (120, None)],
                ),
            ],
            series_total: 3,
        }
    }

    const GAZP_LAST: &str = "/page/table[@label='Shares']/row[@key='GAZP']/cell[@col='Last']";

    /// A series of `points` (seconds ago, value), its head the last.
    fn series(node: &str, label: &str, points: &[(u64, Option<f64>)]) -> SeriesView {
        let points: Vec<Point> = points
            .iter()
            .map(|&(secs, value)| Point {
                at: ago(secs),
                value,
            })
            .collect();
        let last = points.last().copied().unwrap();
        SeriesView {
            node: node.to_owned(),
            label: label.to_owned(),
            value: last.value,
            since: last.at,
            points,
        }
    }

    /// The text from `start` to the end of its `</tr>`.
    fn row_of<'a>(html: &'a str, start: &str) -> &'a str {
        let from = html.find(start).expect("row present");
        let len = html[from..].find("</tr>").expect("row closed");
        &html[from..from + len]
    }

    fn xpath_count(html: &str, xpath: &str) -> usize {
        let doc = Parser::default_html().parse_string(html).unwrap();
        let context = Context::new(&doc).unwrap();
        context.evaluate(xpath).unwrap().get_nodes_as_vec().len()
    }

    fn assert_document(html: &str) {
        assert!(
            html.starts_with("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">")
        );
        assert!(html.contains("<meta name=\"viewport\""));
        assert!(html.contains("<title>"));
        assert!(html.ends_with("</html>"));
        assert!(!html.contains("<script"), "no JavaScript");
        assert!(!html.contains("src="), "no external resources");
        assert!(!html.contains("@import") && !html.contains("url("));
    }

    #[test]
    fn overview_has_a_row_per_watch_with_state_and_times() {
        let mut failing = row("b", Health::Failing);
        failing.failures = 3;
        failing.last_error = Some("HTTP 503".to_owned());
        failing.alarms = 1;
        failing.thresholds = 2;
        failing.last_change = None;
        let rows = [row("a", Health::Ok), failing, row("c", Health::Pending)];
        let html = overview(&rows, None, now());
        assert_document(&html);
        assert!(html.contains("<meta http-equiv=\"refresh\" content=\"30\">"));
        assert!(html.contains("<h1>semclip status</h1>"));
        assert!(html.contains("3 watches, 1 failing, 1 threshold in alarm"));
        assert!(html.contains("href=\"/feeds/all.atom\""));
        assert_eq!(html.matches("data-watch=").count(), 3);

        let a = row_of(&html, "<tr data-watch=\"a\">");
        assert!(a.contains("<a href=\"/status/a\">a</a>"));
        assert!(a.contains("class=\"badge state-ok\">ok</span>"));
        assert!(a.contains(
            "<time datetime=\"2023-11-14T22:13:08Z\" title=\"2023-11-14T22:13:08Z\">12 s ago</time>"
        ));
        assert!(a.contains(">2 h ago</time>"));
        assert!(a.contains(">in 3 min</time>"));
        assert!(a.contains("<a href=\"https://example.org/a\""));
        assert!(a.contains("<td class=\"num\">0/0</td>"));
        assert!(!html.contains("class=\"\""));

        let b = row_of(&html, "<tr data-watch=\"b\">");
        assert!(b.contains("class=\"badge state-failing\">failing</span>"));
        assert!(b.contains("<td class=\"num\">3</td>"));
        assert!(b.contains("title=\"HTTP 503\">HTTP 503</span>"));
        assert!(b.contains("<span class=\"alarm\">1/2</span>"));
        assert!(
            b.contains("<span class=\"none\">—</span>"),
            "no last change"
        );
        assert!(!b.contains("state-ok"));

        let c = row_of(&html, "<tr data-watch=\"c\">");
        assert!(c.contains("state-pending"));

        assert_eq!(
            xpath_count(&html, "//table[@id='watches']/tbody/tr[@data-watch]"),
            3
        );
        assert_eq!(
            xpath_count(&html, "//span[contains(@class,'state-failing')]"),
            1
        );
    }

    #[test]
    fn overview_empty() {
        let html = overview(&[], None, now());
        assert_document(&html);
        assert!(html.contains("0 watches, 0 failing, 0 thresholds in alarm"));
        assert!(html.contains("No watches yet"));
        assert!(!html.contains("id=\"watches\""));
    }

    #[test]
    fn overview_shows_the_replicas_and_whose_watch_set_differs() {
        let alone = ReplicaSummary {
            live: 1,
            ..ReplicaSummary::default()
        };
        assert!(!overview(&[], Some(&alone), now()).contains("id=\"replicas\""));
        let same = ReplicaSummary {
            live: 2,
            ..ReplicaSummary::default()
        };
        let html = overview(&[], Some(&same), now());
        assert_document(&html);
        assert!(html.contains("2 replicas live, all running the same watch set."));
        let stale = ReplicaSummary {
            live: 3,
            differing: vec!["host-c/7/0000beef".to_owned()],
            this_differs: true,
            withheld: vec!["prices".to_owned()],
        };
        let html = overview(&[], Some(&stale), now());
        assert_document(&html);
        assert!(html.contains("running a different watch set from the others: host-c/7/0000beef."));
        assert!(html.contains("watch set differs from the others"), "{html}");
        assert!(html.contains("it leaves 1 watch defined differently there to them (prices)"));
    }

    #[test]
    fn overview_truncates_long_errors_and_keeps_the_full_text_in_title() {
        let mut r = row("a", Health::Failing);
        let long = "x".repeat(150) + &"é".repeat(150);
        r.last_error = Some(long.clone());
        let html = overview(&[r], None, now());
        let shown = format!("{}{}…</span>", "x".repeat(150), "é".repeat(50));
        assert!(html.contains(&format!("title=\"{long}\">{shown}")));
    }

    #[test]
    fn links_percent_encode_ids_and_only_http_urls_are_links() {
        let mut r = row("a b/c?d", Health::Removed);
        r.url = "javascript:alert(1)".to_owned();
        let html = overview(std::slice::from_ref(&r), None, now());
        assert!(html.contains("<a href=\"/status/a%20b%2Fc%3Fd\">a b/c?d</a>"));
        assert!(html.contains("state-removed"));
        assert!(html.contains("javascript:alert(1)"));
        assert!(!html.contains("href=\"javascript"));
        r.url = "HTTP://EXAMPLE.ORG/".to_owned();
        assert!(overview(&[r], None, now()).contains("href=\"HTTP://EXAMPLE.ORG/\""));
        assert_eq!(seg(".."), "%2E%2E");
        assert_eq!(seg("a.b-c_d~e"), "a.b-c_d~e");
        assert_eq!(seg("ü"), "%C3%BC");

        let mut p = page();
        p.row.id = "a b".to_owned();
        let html = watch(&p, now());
        assert!(html.contains(
            "<link rel=\"alternate\" type=\"application/atom+xml\" href=\"/feeds/a%20b.atom\""
        ));
        assert!(html.contains("href=\"/clips/a%20b\""));
        assert!(html.contains("href=\"/clips/a%20b/news.top?format=ttl\""));
    }

    #[test]
    fn data_is_escaped_everywhere() {
        let mut r = row(HOSTILE, Health::Failing);
        r.title = Some(HOSTILE.to_owned());
        r.url = format!("https://example.org/{HOSTILE}");
        r.last_error = Some(HOSTILE.to_owned());
        let html = overview(std::slice::from_ref(&r), None, now());
        assert!(!html.contains("<script"));
        assert!(!html.contains("\" onmouseover"));
        assert!(html.contains(HOSTILE_ESCAPED));
        assert!(html.contains(&format!("data-watch=\"{HOSTILE_ESCAPED}\"")));

        let h = HOSTILE.to_owned();
        let page = WatchPage {
            row: r,
            clips: vec![ClipView {
                name: h.clone(),
                description: Some(h.clone()),
                xpath: h.clone(),
                html: None,
                error: Some(h.clone()),
            }],
            changes: vec![ChangeView {
                id: 4,
                at: ago(1),
                kind: h.clone(),
                line: h.clone(),
            }],
            layout: vec![],
            thresholds: vec![ThresholdView {
                name: h.clone(),
                xpath: h.clone(),
                bounds: h.clone(),
                state: h.clone(),
                value: None,
                since: None,
                lines: vec![],
                history: vec![(ago(5), 1.0)],
            }],
            values: vec![series(&h, &h, &[(5, Some(1.0)), (1, Some(2.0))])],
            series_total: 1,
        };
        let html = watch(&page, now());
        assert!(!html.contains("<script"));
        assert!(!html.contains("\" onmouseover"));
        assert!(html.matches(HOSTILE_ESCAPED).count() >= 10);
        // Ids and classes derived from names are sanitized.
        let safe = safe_id(HOSTILE);
        assert!(html.contains(&format!("id=\"clip-{safe}\"")));
        assert!(html.contains(&format!("id=\"chart-{safe}\"")));
        assert!(html.contains(&format!("class=\"badge threshold-{safe}\"")));
        assert!(html.contains(&format!("class=\"badge kind-{safe}\"")));
        // A series' node and label, in the row, the sparkline's title and
        // the links to its points.
        assert!(html.contains(&format!("<tr data-node=\"{HOSTILE_ESCAPED}\">")));
        assert!(html.contains(&format!("<title>{HOSTILE_ESCAPED}: 2 values")));
        assert!(html.contains("series?xpath=%3Cscript%3E"));

        let html = error(404, HOSTILE, HOSTILE);
        assert!(!html.contains("<script"));
        assert!(html.contains(HOSTILE_ESCAPED));
    }

    #[test]
    fn watch_page_shows_summary_clips_thresholds_and_changes() {
        let html = watch(&page(), now());
        assert_document(&html);
        assert!(html.contains("<meta http-equiv=\"refresh\" content=\"30\">"));
        assert!(html.contains(
            "<link rel=\"alternate\" type=\"application/atom+xml\" href=\"/feeds/shop.atom\""
        ));
        assert!(html.contains("<title>Title of shop — semclip status</title>"));
        assert!(html.contains("<a href=\"/status\">semclip status</a>"));
        assert!(html.contains("<h1>Title of shop</h1>"));
        assert!(html.contains("<dt>State</dt><dd><span class=\"badge state-ok\">ok</span></dd>"));
        assert!(html.contains("<dt>Last check</dt><dd><time datetime=\"2023-11-14T22:13:08Z\""));

        // Clips: the HTML verbatim, or the error.
        assert!(html.contains(
            "<div class=\"clip-body\"><table class=\"x\"><tr><td>1 &amp; 2</td></tr></table></div>"
        ));
        assert!(html.contains("<section class=\"clip\" id=\"clip-prices\">"));
        assert!(html.contains("<section class=\"clip\" id=\"clip-news-top\">"));
        assert!(html.contains("<p class=\"clip-error\">selects nothing</p>"));
        assert!(html.contains("<code>//table[@id='p']</code>"));
        for f in CLIP_FORMATS {
            assert!(html.contains(&format!("href=\"/clips/shop/prices?format={f}\"")));
        }
        assert!(html.contains("href=\"/clips/shop\""));

        // Thresholds: a row each, a chart only with history.
        assert!(html.contains("class=\"badge threshold-alarm\">alarm</span>"));
        assert!(html.contains("<td class=\"num\">301.5</td>"));
        assert!(html.contains(">5 d ago</time>"));
        assert!(html.contains("<figure class=\"chart\" id=\"chart-price\"><svg"));
        assert!(!html.contains("id=\"chart-stock-level\""));
        assert!(
            html.contains("<figcaption>price: above 300 (hysteresis 1); 2 values</figcaption>")
        );

        // Changes, in the given order.
        let first = html.find("price 299 → 301.5").unwrap();
        let second = html.find("row Widget").unwrap();
        assert!(first < second);
        assert!(html.contains("class=\"badge kind-update\">update</span>"));
        assert!(html.contains(">30 s ago</time>"));

        assert_eq!(xpath_count(&html, "//section[@class='clip']"), 2);
        assert_eq!(xpath_count(&html, "//section[@id='changes']//li"), 2);
        assert_eq!(xpath_count(&html, "//section[@id='layout']//li"), 1);
        assert_eq!(
            xpath_count(&html, "//table[@class='thresholds']/tbody/tr"),
            2
        );
        assert_eq!(xpath_count(&html, "//figure[@class='chart']"), 1);

        // Values: a row per series shown, live ones as given, with a
        // sparkline of its points and links to them.
        assert_eq!(
            xpath_count(&html, "//section[@id='values']//tbody/tr[@data-node]"),
            2
        );
        assert!(html.contains("the first 2 of 3 here"), "{html}");
        assert!(html.contains("href=\"/api/watches/shop/series\">JSON</a>"));
        assert!(html.contains("href=\"/api/watches/shop/series?format=csv\">CSV</a>"));
        let gazp = row_of(&html, &format!("<tr data-node=\"{GAZP_LAST}\">"));
        assert!(
            gazp.contains("Shares / GAZP / Last<div class=\"kind\">"),
            "{gazp}"
        );
        assert!(gazp.contains("<td class=\"num\">305.4</td>"), "{gazp}");
        assert!(gazp.contains(">1 min ago</time>"), "{gazp}");
        assert!(
            gazp.contains("data-points=\"3\" data-values=\"3\""),
            "{gazp}"
        );
        assert!(gazp.contains(
            "<title>Shares / GAZP / Last: 3 values, from 251.3 to 305.4, last 305.4</title>"
        ));
        assert!(gazp.contains("· last <span class=\"spark-last\">305.4</span>"));
        let encoded = seg(GAZP_LAST);
        assert!(gazp.contains(&format!(
            "href=\"/api/watches/shop/series?xpath={encoded}&amp;format=csv\""
        )));
        // A node gone: labelled by its id, its value "gone", its line
        // ending in a gap.
        let vtbr = row_of(
            &html,
            "<tr data-node=\"/page/table[@label='Shares']/row[@key='VTBR']",
        );
        assert!(vtbr.contains("<span class=\"none\">gone</span>"), "{vtbr}");
        assert!(
            vtbr.contains("last <span class=\"spark-last\">gone</span>"),
            "{vtbr}"
        );
        assert!(vtbr.contains("now gone</title>"), "{vtbr}");
        assert!(!vtbr.contains("circle class=\"last\""), "{vtbr}");
    }

    #[test]
    fn watch_page_empty_sections_and_no_title() {
        let mut p = page();
        p.row.title = None;
        p.clips.clear();
        p.changes.clear();
        p.layout.clear();
        p.thresholds.clear();
        p.values.clear();
        p.series_total = 0;
        let html = watch(&p, now());
        assert!(!html.contains("Layout events"), "no section without events");
        assert!(html.contains("<h1>shop</h1>"));
        assert!(html.contains("No changes recorded yet."));
        assert!(html.contains("No thresholds defined."));
        assert!(html.contains("No named clips defined."));
        assert!(html.contains("No values recorded yet"));
        assert!(!html.contains("<figure"));
        assert!(!html.contains("<svg"));
    }

    #[test]
    fn relative_times() {
        assert_eq!(relative(now(), now()), "now");
        assert_eq!(relative(ago(12), now()), "12 s ago");
        assert_eq!(relative(ago(59), now()), "59 s ago");
        assert_eq!(relative(ago(60), now()), "1 min ago");
        assert_eq!(relative(later(180), now()), "in 3 min");
        assert_eq!(relative(later(3_599), now()), "in 59 min");
        assert_eq!(relative(ago(2 * 3_600 + 59), now()), "2 h ago");
        assert_eq!(relative(ago(86_399), now()), "23 h ago");
        assert_eq!(relative(ago(5 * 86_400), now()), "5 d ago");
        assert_eq!(relative(later(400 * 86_400), now()), "in 400 d");
        assert_eq!(relative(now() + Duration::from_millis(300), now()), "now");
    }

    #[test]
    fn absolute_times() {
        let rfc3339 = |t| time::rfc3339(t, SecondsFormat::Secs);
        assert_eq!(rfc3339(now()).unwrap(), "2023-11-14T22:13:20Z");
        assert_eq!(
            rfc3339(now() + Duration::from_millis(999)).unwrap(),
            "2023-11-14T22:13:20Z"
        );
        assert_eq!(
            rfc3339(UNIX_EPOCH - Duration::from_millis(500)).unwrap(),
            "1969-12-31T23:59:59Z"
        );
        let html = overview(&[row("a", Health::Ok)], None, now());
        assert!(html.contains("Rendered <time datetime=\"2023-11-14T22:13:20Z\""));
    }

    #[test]
    fn id_sanitizer() {
        assert_eq!(safe_id("prices"), "prices");
        assert_eq!(safe_id("A-z_09"), "A-z_09");
        assert_eq!(safe_id("news.top"), "news-top");
        assert_eq!(safe_id("a b\"<é>"), "a-b----");
        assert_eq!(safe_id(""), "");
    }

    #[test]
    fn truncation_is_by_characters() {
        assert_eq!(truncate("short", 10), "short");
        assert_eq!(truncate("exactly", 7), "exactly");
        assert_eq!(truncate("ééééé", 3), "ééé…");
        assert_eq!(truncate("ab cd", 3), "ab…");
    }

    #[test]
    fn error_page() {
        let html = error(404, "Not Found", "No watch named nope.");
        assert_document(&html);
        assert!(!html.contains("http-equiv"));
        assert!(html.contains("<title>404 Not Found — semclip</title>"));
        assert!(html.contains("<h1>404 Not Found</h1>"));
        assert!(html.contains("<p>No watch named nope.</p>"));
        assert!(html.contains("<a href=\"/status\">"));
        assert_eq!(xpath_count(&html, "//h1"), 1);
    }
}
