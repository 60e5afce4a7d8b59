//! The status pages as server-rendered HTML: takes the plain data of
//! [`super::view`] (and the time to count "12 s ago" from) and gives complete
//! HTML5 documents as strings: the overview of all watches, one watch's
//! page, an inline SVG chart of a threshold's value history, and a small
//! error page. Pure rendering: no I/O, no store, no JavaScript, no external
//! resources; the same input gives the same string.
//!
//! Everything that comes from data is escaped (by `maud`) except
//! [`ClipView::html`], which was sanitized upstream and is inserted as is.

use crate::store::replicas::watch_set::ReplicaSummary;
use std::borrow::Cow;
use std::time::{SystemTime, UNIX_EPOCH};

use chrono::SecondsFormat;
use maud::{DOCTYPE, Markup, PreEscaped, html};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use crate::store::time;

use super::view::{ChangeView, ClipView, Health, ThresholdView, WatchPage, WatchRow};

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
                        (chart_markup(&t.history, &t.lines))
                        figcaption {
                            (t.name) ": " (t.bounds) "; "
                            (plural(t.history.len(), "value", "values"))
                        }
                    }
                }
            }
        }

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
    chart_markup(history, lines).into_string()
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

// ---------------------------------------------------------------- chart

/// The chart's coordinate system: `0 0 VIEW_W VIEW_H`.
const VIEW_W: f64 = 600.0;
/// See [`VIEW_W`].
const VIEW_H: f64 = 200.0;
/// The plot area's left edge (the y axis); labels go to its left.
const PLOT_LEFT: f64 = 64.0;
/// The plot area's right edge.
const PLOT_RIGHT: f64 = 588.0;
/// The plot area's top edge.
const PLOT_TOP: f64 = 12.0;
/// The plot area's bottom edge (the x axis); labels go below.
const PLOT_BOTTOM: f64 = 172.0;
/// Room above and below the values, as a share of their span.
const PAD: f64 = 0.05;

/// Maps times and values to chart coordinates.
struct Scale {
    /// The first time, in seconds since the epoch.
    t0: f64,
    /// The last time.
    t1: f64,
    /// The smallest value or bound, halved (halves never overflow when
    /// subtracted).
    lo_half: f64,
    /// The largest value or bound, halved.
    hi_half: f64,
}

impl Scale {
    /// The x of a time (seconds since the epoch); centred when all times
    /// are equal.
    fn x(&self, t: f64) -> f64 {
        if self.t1 > self.t0 {
            PLOT_LEFT + (t - self.t0) / (self.t1 - self.t0) * (PLOT_RIGHT - PLOT_LEFT)
        } else {
            (PLOT_LEFT + PLOT_RIGHT) / 2.0
        }
    }

    /// The y of a value; in the middle when all values and bounds are equal.
    fn y(&self, v: f64) -> f64 {
        let span = self.hi_half - self.lo_half;
        if span > 0.0 {
            let share = (v / 2.0 - self.lo_half) / span;
            PLOT_BOTTOM - (PAD + share) / (1.0 + 2.0 * PAD) * (PLOT_BOTTOM - PLOT_TOP)
        } else {
            (PLOT_TOP + PLOT_BOTTOM) / 2.0
        }
    }
}

/// The chart as markup, to insert in a page.
fn chart_markup(history: &[(SystemTime, f64)], lines: &[f64]) -> Markup {
    let view_box = format!("0 0 {} {}", fmt_coord(VIEW_W), fmt_coord(VIEW_H));
    let points: Vec<(SystemTime, f64, f64)> = history
        .iter()
        .filter(|(_, v)| v.is_finite())
        .map(|&(t, v)| (t, unix_seconds(t), v))
        .collect();
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return html! {
            svg xmlns="http://www.w3.org/2000/svg" viewBox=(view_box) width="100%"
                role="img" aria-label="no values yet" {
                text x=(fmt_coord(VIEW_W / 2.0)) y=(fmt_coord(VIEW_H / 2.0))
                    text-anchor="middle" fill="currentColor" font-size="14" { "no values yet" }
            }
        };
    };
    let bounds: Vec<f64> = lines.iter().copied().filter(|b| b.is_finite()).collect();
    let fold = |(lo, hi): (f64, f64), v: f64| (lo.min(v), hi.max(v));
    let (vmin, vmax) = points
        .iter()
        .map(|p| p.2)
        .fold((f64::INFINITY, f64::NEG_INFINITY), fold);
    let (lo, hi) = bounds.iter().copied().fold((vmin, vmax), fold);
    let (t0, t1) = points
        .iter()
        .map(|p| p.1)
        .fold((f64::INFINITY, f64::NEG_INFINITY), fold);
    let scale = Scale {
        t0,
        t1,
        lo_half: lo / 2.0,
        hi_half: hi / 2.0,
    };
    let polyline = points
        .iter()
        .map(|&(_, t, v)| format!("{},{}", fmt_coord(scale.x(t)), fmt_coord(scale.y(v))))
        .collect::<Vec<_>>()
        .join(" ");
    let label = format!(
        "value history: {}, from {} to {}",
        plural(points.len(), "value", "values"),
        fmt_value(vmin),
        fmt_value(vmax)
    );
    let long = t1 - t0 >= 86_400.0;
    let (first_x, last_x) = (scale.x(first.1), scale.x(last.1));
    let label_y = fmt_coord(PLOT_BOTTOM + 16.0);
    let (left, right, top, bottom) = (
        fmt_coord(PLOT_LEFT),
        fmt_coord(PLOT_RIGHT),
        fmt_coord(PLOT_TOP),
        fmt_coord(PLOT_BOTTOM),
    );
    html! {
        svg xmlns="http://www.w3.org/2000/svg" viewBox=(view_box) width="100%"
            role="img" aria-label=(label) font-size="11" {
            g.axes stroke="currentColor" stroke-width="1" {
                line x1=(left) y1=(top) x2=(left) y2=(bottom) {}
                line x1=(left) y1=(bottom) x2=(right) y2=(bottom) {}
            }
            @for b in &bounds {
                @let y = fmt_coord(scale.y(*b));
                line.bound x1=(left) y1=(y) x2=(right) y2=(y)
                    stroke="#cf222e" stroke-width="1" stroke-dasharray="6 4" {}
                text.bound-label x=(fmt_coord(PLOT_RIGHT - 2.0)) y=(fmt_coord(scale.y(*b) - 3.0))
                    text-anchor="end" fill="#cf222e" { (fmt_value(*b)) }
            }
            polyline.series points=(polyline) fill="none" stroke="#0969da" stroke-width="2"
                stroke-linejoin="round" {}
            @for &(at, t, v) in &points {
                circle cx=(fmt_coord(scale.x(t))) cy=(fmt_coord(scale.y(v))) r="3" fill="#0969da" {
                    title { (fmt_value(v)) " at " (time::rfc3339(at, SecondsFormat::Secs).unwrap_or_default()) }
                }
            }
            g.y-labels text-anchor="end" fill="currentColor" {
                text x=(fmt_coord(PLOT_LEFT - 6.0)) y=(fmt_coord(scale.y(vmax) + 4.0)) { (fmt_value(vmax)) }
                @if vmin < vmax {
                    text x=(fmt_coord(PLOT_LEFT - 6.0)) y=(fmt_coord(scale.y(vmin) + 4.0)) { (fmt_value(vmin)) }
                }
            }
            g.x-labels fill="currentColor" {
                @if t1 > t0 {
                    text x=(fmt_coord(first_x)) y=(label_y) text-anchor="start" { (time_label(first.0, long)) }
                    text x=(fmt_coord(last_x)) y=(label_y) text-anchor="end" { (time_label(last.0, long)) }
                } @else {
                    text x=(fmt_coord(first_x)) y=(label_y) text-anchor="middle" { (time_label(first.0, long)) }
                }
            }
        }
    }
}

/// A time on the chart's x axis: `HH:MM:SS` UTC for spans under a day,
/// else `MM-DD HH:MM`.
fn time_label(t: SystemTime, long: bool) -> String {
    let format = if long { "%m-%d %H:%M" } else { "%H:%M:%S" };
    time::utc(t)
        .map(|d| d.format(format).to_string())
        .unwrap_or_default()
}

// ---------------------------------------------------------------- helpers

/// `1 watch`, `2 watches`.
pub(super) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

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

/// A number for the SVG: at most 2 decimals, no trailing zeros, no `-0`.
fn fmt_coord(x: f64) -> String {
    if !x.is_finite() {
        return "0".to_owned();
    }
    trimmed(&format!("{x:.2}"))
}

/// A formatted decimal without trailing zeros (or point), and `-0` as `0`.
fn trimmed(s: &str) -> String {
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    };
    if s == "-0" {
        "0".to_owned()
    } else {
        s.to_owned()
    }
}

/// A value for people: about 6 significant digits, no trailing zeros.
fn fmt_value(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    let abs = v.abs();
    if abs != 0.0 && !(1e-4..1e15).contains(&abs) {
        return format!("{v:e}");
    }
    let digits = if abs == 0.0 {
        0
    } else {
        abs.log10().floor() as i32
    };
    let decimals = usize::try_from((5 - digits).clamp(0, 6)).unwrap_or(0);
    trimmed(&format!("{v:.decimals$}"))
}

/// Seconds since the epoch (negative before it).
fn unix_seconds(t: SystemTime) -> f64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
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
    use std::time::Duration;

    use libxml::parser::Parser;
    use libxml::xpath::Context;

    use super::*;

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
        }
    }

    /// The text from `start` to the end of its `</tr>`.
    fn row_of<'a>(html: &'a str, start: &str) -> &'a str {
        let from = html.find(start).expect("row present");
        let len = html[from..].find("</tr>").expect("row closed");
        &html[from..from + len]
    }

    /// Every value of `attr="..."` in `html`, in order.
    fn attrs<'a>(html: &'a str, attr: &str) -> Vec<&'a str> {
        let needle = format!(" {attr}=\"");
        html.match_indices(&needle)
            .map(|(i, _)| {
                let rest = &html[i + needle.len()..];
                &rest[..rest.find('"').unwrap()]
            })
            .collect()
    }

    /// The points of the chart's polyline.
    fn polyline(svg: &str) -> Vec<(f64, f64)> {
        let points = attrs(svg, "points");
        assert_eq!(points.len(), 1, "one polyline");
        points[0]
            .split(' ')
            .map(|p| {
                let (x, y) = p.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect()
    }

    /// The y of the `class="bound"` lines.
    fn bound_ys(svg: &str) -> Vec<f64> {
        svg.match_indices("<line class=\"bound\"")
            .map(|(i, _)| {
                let tag = &svg[i..i + svg[i..].find('>').unwrap()];
                attrs(tag, "y1")[0].parse().unwrap()
            })
            .collect()
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
    }

    #[test]
    fn watch_page_empty_sections_and_no_title() {
        let mut p = page();
        p.row.title = None;
        p.clips.clear();
        p.changes.clear();
        p.layout.clear();
        p.thresholds.clear();
        let html = watch(&p, now());
        assert!(!html.contains("Layout events"), "no section without events");
        assert!(html.contains("<h1>shop</h1>"));
        assert!(html.contains("No changes recorded yet."));
        assert!(html.contains("No thresholds defined."));
        assert!(html.contains("No named clips defined."));
        assert!(!html.contains("<figure"));
    }

    #[test]
    fn chart_scales_values_and_bounds() {
        let history = vec![
            (ago(300), 10.0),
            (ago(200), f64::NAN),
            (ago(150), 30.0),
            (ago(100), f64::INFINITY),
            (ago(0), 20.0),
        ];
        let svg = chart(&history, &[25.0, f64::NAN]);
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 600 200\" width=\"100%\" role=\"img\" aria-label=\"value history: 3 values, from 10 to 30\""));
        let points = polyline(&svg);
        assert_eq!(points.len(), 3, "non-finite values are skipped");
        assert_eq!(svg.matches("<circle").count(), 3);

        // x: time from left to right edge.
        assert_eq!(points[0].0, PLOT_LEFT);
        assert_eq!(points[2].0, PLOT_RIGHT);
        assert_eq!(points[1].0, 326.0); // 64 + 150/300 * 524
        // y: max at the top of the plot area, min at the bottom, 5 % in.
        let pad = (PLOT_BOTTOM - PLOT_TOP) * PAD / (1.0 + 2.0 * PAD);
        let top: f64 = fmt_coord(PLOT_TOP + pad).parse().unwrap();
        let bottom: f64 = fmt_coord(PLOT_BOTTOM - pad).parse().unwrap();
        assert_eq!(top, 19.27);
        assert_eq!(points[1].1, top);
        assert_eq!(points[0].1, bottom);
        // 20 is halfway.
        assert_eq!(points[2].1, (PLOT_TOP + PLOT_BOTTOM) / 2.0);
        // The bound 25 at three quarters; NaN bounds are skipped.
        assert_eq!(
            bound_ys(&svg),
            vec![
                fmt_coord(bottom - 0.75 * (bottom - top))
                    .parse::<f64>()
                    .unwrap()
            ]
        );
        assert!(svg.contains("stroke-dasharray"));
        // Labels: min and max values, first and last times.
        assert!(svg.contains(">30</text>") && svg.contains(">10</text>"));
        assert!(svg.contains(">22:08:20</text>") && svg.contains(">22:13:20</text>"));
        assert!(svg.contains("<title>30 at 2023-11-14T22:10:50Z</title>"));
        // Deterministic.
        assert_eq!(svg, chart(&history, &[25.0, f64::NAN]));
        // Everything closed (no void elements inside SVG).
        assert_eq!(svg.matches("<line").count(), svg.matches("</line>").count());
    }

    #[test]
    fn chart_bounds_widen_the_range() {
        let svg = chart(&[(ago(60), 0.0), (ago(0), 100.0)], &[200.0]);
        let points = polyline(&svg);
        let pad = (PLOT_BOTTOM - PLOT_TOP) * PAD / (1.0 + 2.0 * PAD);
        let (top, bottom) = (PLOT_TOP + pad, PLOT_BOTTOM - pad);
        assert_eq!(bound_ys(&svg), vec![fmt_coord(top).parse::<f64>().unwrap()]);
        assert_eq!(points[0].1, fmt_coord(bottom).parse::<f64>().unwrap());
        let mid = fmt_coord((top + bottom) / 2.0).parse::<f64>().unwrap();
        assert_eq!(points[1].1, mid);
    }

    #[test]
    fn chart_degenerate_cases() {
        // Empty, or nothing finite: a message.
        for history in [vec![], vec![(ago(1), f64::NAN)]] {
            let svg = chart(&history, &[1.0]);
            assert!(svg.contains(">no values yet</text>"));
            assert!(svg.contains("aria-label=\"no values yet\""));
            assert!(!svg.contains("<polyline"));
        }
        // One point: centred, in the middle.
        let svg = chart(&[(now(), 5.0)], &[]);
        assert_eq!(polyline(&svg), vec![(326.0, 92.0)]);
        // Equal values: a flat line in the middle, one y label.
        let svg = chart(&[(ago(10), 5.0), (ago(5), 5.0), (now(), 5.0)], &[]);
        assert!(polyline(&svg).iter().all(|&(_, y)| y == 92.0));
        assert_eq!(svg.matches(">5</text>").count(), 1);
        // Equal times: centred.
        let svg = chart(&[(now(), 1.0), (now(), 2.0)], &[]);
        assert!(polyline(&svg).iter().all(|&(x, _)| x == 326.0));
        // Huge values do not overflow.
        let svg = chart(&[(ago(1), -f64::MAX), (now(), f64::MAX)], &[]);
        let points = polyline(&svg);
        assert!(points[0].1 > points[1].1);
        // Spans of a day or more label dates.
        let svg = chart(&[(ago(2 * 86_400), 1.0), (now(), 2.0)], &[]);
        assert!(svg.contains(">11-12 22:13</text>") && svg.contains(">11-14 22:13</text>"));
    }

    #[test]
    fn coordinates_have_at_most_two_decimals() {
        assert_eq!(fmt_coord(1.0), "1");
        assert_eq!(fmt_coord(1.5), "1.5");
        assert_eq!(fmt_coord(17.272_727), "17.27");
        assert_eq!(fmt_coord(-0.001), "0");
        assert_eq!(fmt_coord(f64::NAN), "0");
        let svg = chart(
            &[(ago(7), 1.0 / 3.0), (ago(3), 2.0 / 3.0), (now(), 0.1)],
            &[0.5],
        );
        for value in ["points", "cx", "cy", "x", "y", "x1", "y1"]
            .iter()
            .flat_map(|a| attrs(&svg, a))
        {
            for number in value.split([' ', ',']) {
                let decimals = number.split_once('.').map_or(0, |(_, d)| d.len());
                assert!(decimals <= 2, "{number} in {value}");
            }
        }
    }

    #[test]
    fn values_for_people() {
        assert_eq!(fmt_value(301.5), "301.5");
        assert_eq!(fmt_value(300.0), "300");
        assert_eq!(fmt_value(0.1 + 0.2), "0.3");
        assert_eq!(fmt_value(-2.5), "-2.5");
        assert_eq!(fmt_value(0.0), "0");
        assert_eq!(fmt_value(1_234_567.0), "1234567");
        assert_eq!(fmt_value(1e20), "1e20");
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
