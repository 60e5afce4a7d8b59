//! Finding what to watch, in the browser: a watch's current hierarchy as a
//! collapsible tree (`/status/{watch}/tree`) and the change view of one
//! stored change event (`/status/{watch}/changes/{id}`) or of the check
//! made at a time (`/status/{watch}/changes/at/{ms}`, where alerts link);
//! and the two
//! scripts the server serves: the tree's copy buttons (`/status.js`) and
//! the portals' `<semclip-clip>` element (`/embed.js`).
//!
//! Takes the current snapshot (through the clip cache) or the snapshots a
//! change lies between; gives server-rendered HTML pages in the status
//! pages' style.
//!
//! # Guarantees
//!
//! - **Bounded.** The tree shows at most [`MAX_TREE_NODES`] nodes (in
//!   document order); where nodes are left out, an "N more" note says how
//!   many. It draws the values over time (see `crate::store`'s series) of
//!   at most [`MAX_SPARKLINES`] of the numbers it shows, a change view of
//!   at most [`MAX_CHANGE_SPARKLINES`], each from the newest points of
//!   its series, thinned (see [`super::chart`]). The rendered tree is kept
//!   with the snapshot's clip data, so it is built once per snapshot, not
//!   per view; that is right for its series too, which gain points only
//!   with a new snapshot (in the same transaction).
//! - **Works without JavaScript.** Every snippet is visible text in a
//!   `<pre>`; the copy buttons are a convenience from `/status.js`, a
//!   served script (the pages' `Content-Security-Policy` allows scripts
//!   from the server itself only, no inline script).
//! - Everything from a page is escaped (maud); nothing is inserted raw.
//!
//! # Decisions
//!
//! - The tree has a page of its own rather than a section of the watch's
//!   status page: the status page reloads itself every 30 s, which would
//!   fold the tree up under the reader's hands.
//! - A change view shows every change of the same check (the changes
//!   stored with one snapshot), the one asked for marked: an update of one
//!   cell makes sense next to its row, and a check's changes together.
//!   A changed number with a series shows its sparkline, a ring on the
//!   value this check brought.
//! - A check's change view is also found by the check's time
//!   (`/changes/at/{ms}`), which every event of the check is stored at:
//!   alerts link there, since they are queued in the same transaction that
//!   gives the events their ids (`notify/links.rs` says why). That view
//!   shows the check's data changes and its layout event, none marked.
//! - A number with a series shows its sparkline beside its value in the
//!   tree, and its chart (with links to its points in the series API) in
//!   the node's body on expanding it; the tree opens on load down to
//!   every number it draws, so the sparklines show without a click. The
//!   charts end at the time of the data shown, not at "now": the page is
//!   kept for the snapshot's life.

use std::sync::Arc;
use std::time::SystemTime;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};

use super::Server;
use super::auth::Need;
use super::chart::{CHART_POINTS, READ_POINTS, SPARK_POINTS, Series, chart, sparkline};
use super::clip::ClipKey;
use super::clips::clip_data;
use super::error::{Error, Form, require};
use super::format::plural;
use super::pages::{self, NONE, layout, seg, series_href, time, truncate};
use super::series::downsample;
use crate::config::starter;
use crate::diff::Change;
use crate::hierarchy::{HNode, Hierarchy, Kind};
use crate::store::{Event, EventRecord, Point, Store, StoreError, time};
use chrono::SecondsFormat;
use std::collections::{HashMap, HashSet};

/// Nodes shown in a tree, at most.
pub(crate) const MAX_TREE_NODES: usize = 1500;

/// Levels of the tree open when the page loads.
const OPEN_DEPTH: usize = 1;

/// Characters of a node's text shown in its summary line.
const SUMMARY_CHARS: usize = 80;

/// Change events read to find one and the others of its check.
const EVENTS: usize = 2000;

/// Sparklines on a tree page, at most (each node's also has a chart).
pub(crate) const MAX_SPARKLINES: usize = 200;

/// Sparklines on a change view, at most.
const MAX_CHANGE_SPARKLINES: usize = 50;

/// The cache key of a snapshot's rendered tree among its clip data's renders.
const TREE_VARIANT: &str = "status-tree";

/// The copy buttons' script, served at `/status.js`: copies the text of
/// the `<pre>` a button names, with the Clipboard API, or (plain-HTTP
/// intranet pages are not a secure context) by selecting it and `copy`.
pub(crate) const SCRIPT: &str = r#"document.addEventListener("click", function (e) {
  var b = e.target.closest("button[data-copy]");
  if (!b) return;
  var pre = document.getElementById(b.getAttribute("data-copy"));
  if (!pre) return;
  var text = pre.textContent;
  var done = function () { b.textContent = "Copied"; setTimeout(function () { b.textContent = b.getAttribute("data-label"); }, 1500); };
  var fallback = function () {
    var r = document.createRange(); r.selectNodeContents(pre);
    var s = window.getSelection(); s.removeAllRanges(); s.addRange(r);
    try { if (document.execCommand("copy")) done(); } catch (_) {}
  };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(done, fallback);
  } else {
    fallback();
  }
});
"#;

/// `GET /status.js`.
pub(crate) async fn script() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        SCRIPT,
    )
        .into_response()
}

/// The `<semclip-clip>` custom element, served at `/embed.js`: a portal
/// page's live clip (see docs/http-api.md, "Portals").
pub(crate) const EMBED: &str = include_str!("assets/embed.js");

/// `GET /embed.js`: public, like the public clips it shows.
pub(crate) async fn embed() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        EMBED,
    )
        .into_response()
}

// ---------------------------------------------------------------- tree

/// `GET /status/{watch}/tree`.
pub(crate) async fn tree(
    State(server): State<Arc<Server>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Error> {
    require(&server, &headers, Need::Read, Form::Html)?;
    let key = ClipKey {
        watch: id.clone(),
        clip: None,
    };
    let data = clip_data(&server, &key, Form::Html).await?;
    if let Some(body) = data.render(TREE_VARIANT) {
        return Ok(super::status::html(body.to_string()));
    }
    let xml = data.xml.clone();
    let title = server
        .watches()
        .get(&id)
        .and_then(|w| w.title.clone())
        .unwrap_or_else(|| id.clone());
    let taken = data.last_modified;
    let (page, numbers) = tokio::task::spawn_blocking(move || {
        crate::hierarchy::read::read(&xml).map(|h| {
            let numbers = numbers_shown(&h);
            (h, numbers)
        })
    })
    .await
    .map_err(|e| Error::internal(&e, Form::Html))?
    .map_err(|e| Error::internal(&e, Form::Html))?;
    let w = id.clone();
    let series = server
        .stores
        .run(move |s| tree_series(s, &w, &numbers))
        .await
        .map_err(|e| Error::internal(&e, Form::Html))?;
    let watch = id.clone();
    let body =
        tokio::task::spawn_blocking(move || tree_page(&watch, &title, &page, taken, &series))
            .await
            .map_err(|e| Error::internal(&e, Form::Html))?;
    let body: Arc<str> = body.into();
    data.keep(TREE_VARIANT.to_owned(), Arc::clone(&body));
    Ok(super::status::html(body.to_string()))
}

/// The ids of the nodes with a number among those the tree shows (the
/// first [`MAX_TREE_NODES`] in document order), in document order.
fn numbers_shown(page: &Hierarchy) -> Vec<String> {
    fn walk(nodes: &[HNode], seen: &mut usize, out: &mut Vec<String>) {
        for n in nodes {
            if *seen >= MAX_TREE_NODES {
                return;
            }
            *seen += 1;
            if n.num.is_some() {
                out.push(n.xpath.clone());
            }
            walk(&n.children, seen, out);
        }
    }
    let mut out = Vec::new();
    walk(&page.children, &mut 0, &mut out);
    out
}

/// A node's series as the tree draws it: thinned for its sparkline and
/// for its chart.
#[derive(Debug, Clone, Default)]
pub(crate) struct Drawn {
    /// At most [`SPARK_POINTS`] points, oldest first.
    pub spark: Vec<Point>,
    /// At most [`CHART_POINTS`] points, oldest first.
    pub chart: Vec<Point>,
}

/// The series the tree draws: of the numbers it shows that have one, the
/// first [`MAX_SPARKLINES`] (in document order).
#[derive(Debug, Clone, Default)]
pub(crate) struct TreeSeries {
    /// The series drawn, by node id.
    pub drawn: HashMap<String, Drawn>,
    /// How many of the numbers shown have a series (more than `drawn`
    /// holds when the tree stops drawing them).
    pub with_series: usize,
}

/// The ids of the nodes `watch` has a series of.
fn series_nodes(store: &Store, watch: &str) -> Result<HashSet<String>, StoreError> {
    Ok(store
        .series_heads(watch)?
        .into_iter()
        .map(|h| h.node)
        .collect())
}

/// The series of `numbers` (ids, in document order) that the tree draws.
fn tree_series(store: &Store, watch: &str, numbers: &[String]) -> Result<TreeSeries, StoreError> {
    let heads = series_nodes(store, watch)?;
    let mut out = TreeSeries::default();
    for node in numbers.iter().filter(|n| heads.contains(*n)) {
        out.with_series += 1;
        if out.drawn.len() < MAX_SPARKLINES {
            let points = store.series_latest(watch, node, READ_POINTS)?;
            let drawn = Drawn {
                spark: downsample(points.clone(), SPARK_POINTS).0,
                chart: downsample(points, CHART_POINTS).0,
            };
            out.drawn.insert(node.clone(), drawn);
        }
    }
    Ok(out)
}

/// What the tree has shown so far, and what it draws with.
struct TreeState<'a> {
    shown: usize,
    /// Nodes drawn with their values over time so far.
    drawn: usize,
    /// The watch id, percent-encoded.
    watch: &'a str,
    /// The series to draw, by node id.
    series: &'a HashMap<String, Drawn>,
    /// The labels (`label`, `key`, `col`) from the root down to the node
    /// being shown: a drawn node's name.
    path: Vec<&'a str>,
    /// Where the series' charts end: the time of the data shown.
    end: SystemTime,
}

/// The tree page of a watch's hierarchy `page`, taken at `taken`, with
/// the values over time of `series`.
pub(crate) fn tree_page(
    watch: &str,
    title: &str,
    page: &Hierarchy,
    taken: SystemTime,
    series: &TreeSeries,
) -> String {
    let id = seg(watch);
    let total = page.size() - 1;
    let mut state = TreeState {
        shown: 0,
        drawn: 0,
        watch: &id,
        series: &series.drawn,
        path: Vec::new(),
        end: taken,
    };
    let tree = children(&mut state, &page.children, None, 0);
    let drawn = series.drawn.len();
    let body = html! {
        nav.crumbs {
            a href="/status" { "semclip status" } " / "
            a href={ "/status/" (id) } { (watch) } " / hierarchy"
        }
        h1 { "Hierarchy of " (title) }
        p.muted {
            (page.title.as_deref().unwrap_or(NONE)) " · "
            (plural(total, "node", "nodes")) " · data as of "
            (time::rfc3339(taken, SecondsFormat::Secs).unwrap_or_default()) " UTC"
            @if total > state.shown {
                " · showing the first " (state.shown) " of " (total)
                " (the rest are counted where they start)"
            }
            @if series.with_series > 0 {
                " · " (plural(series.with_series, "number", "numbers")) " with values over time"
                @if series.with_series > drawn {
                    " (the first " (drawn) " drawn)"
                }
            }
        }
        p {
            "Open a node for its XPath id and a clip to paste into "
            code { "watches/" (watch) ".yaml" }
            "; a node with a number also gives a threshold. "
            "Check the file with " code { "semclip validate" } "."
        }
        div #tree { (tree) }
        script src="/status.js" {}
    };
    layout(
        &format!("Hierarchy of {title} — semclip"),
        false,
        None,
        body,
    )
}

/// A list of sibling nodes, within the budget; the rest as "N more".
fn children<'a>(
    state: &mut TreeState<'a>,
    nodes: &'a [HNode],
    parent: Option<&'a HNode>,
    depth: usize,
) -> Markup {
    let mut items = Vec::new();
    let mut hidden = 0;
    for n in nodes {
        if state.shown >= MAX_TREE_NODES {
            hidden += n.size();
        } else {
            items.push(node(state, n, parent, depth));
        }
    }
    html! {
        ul.tree.root[depth == 0] {
            @for item in items { (item) }
            @if hidden > 0 {
                li.more { (plural(hidden, "more node", "more nodes")) " not shown" }
            }
        }
    }
}

/// One node: its summary line (with its sparkline, when its number has
/// a series drawn), its id, snippets and chart, its children. It is open
/// on load at the first levels and where it holds a number drawn.
fn node<'a>(
    state: &mut TreeState<'a>,
    n: &'a HNode,
    parent: Option<&'a HNode>,
    depth: usize,
) -> Markup {
    state.shown += 1;
    let k = state.shown;
    let name = starter::node_name(n, parent);
    let clip = starter::clip_snippet(&name, &n.xpath);
    let threshold = n
        .num
        .as_deref()
        .map(|num| starter::threshold_snippet(&name, &n.xpath, num));
    let ident = n.ident().map(|(_, v)| v);
    state.path.extend(ident);
    let series = state.series;
    let drawn = n.num.as_ref().and_then(|_| series.get(&n.xpath));
    let values = drawn.map(|d| {
        let label = if state.path.is_empty() {
            n.xpath.clone()
        } else {
            state.path.join(" / ")
        };
        values_of(state.watch, &n.xpath, &label, d, state.end)
    });
    state.drawn += usize::from(drawn.is_some());
    let drawn_before = state.drawn;
    let kids = (!n.children.is_empty()).then(|| children(state, &n.children, Some(n), depth + 1));
    if ident.is_some() {
        state.path.pop();
    }
    // Open down to every number drawn, so its sparkline shows on load.
    let open = depth < OPEN_DEPTH || state.drawn > drawn_before;
    html! {
        li data-xpath=(n.xpath) {
            details.node open[open] {
                summary {
                    span.kind { (n.kind.name()) } " "
                    @if let Some(i) = ident { strong { (truncate(i, SUMMARY_CHARS)) } " " }
                    @if let Some(t) = &n.text { span.val { (truncate(t, SUMMARY_CHARS)) } }
                    @if let Some(num) = &n.num { " " span.kind { "num " (num) } }
                    @if let Some((spark, _)) = &values { " " (spark) }
                    @if !n.children.is_empty() {
                        " " span.kind { "(" (plural(n.size() - 1, "node", "nodes")) ")" }
                    }
                }
                div.node-body {
                    div { "XPath " code.xpath { (n.xpath) } }
                    div {
                        button.copy type="button" data-copy={ "clip-" (k) } data-label="Copy clip YAML" {
                            "Copy clip YAML"
                        }
                        pre.snippet.clip-snippet id={ "clip-" (k) } { (clip) }
                    }
                    @if let Some(t) = threshold {
                        div {
                            button.copy type="button" data-copy={ "threshold-" (k) }
                                data-label="Copy threshold YAML" { "Copy threshold YAML" }
                            pre.snippet.threshold-snippet id={ "threshold-" (k) } { (t) }
                        }
                    }
                    @if let Some((_, chart)) = &values { (chart) }
                }
                @if let Some(kids) = kids { (kids) }
            }
        }
    }
}

/// A drawn node's sparkline and its chart with links to its points.
fn values_of(
    watch: &str,
    node: &str,
    label: &str,
    drawn: &Drawn,
    end: SystemTime,
) -> (Markup, Markup) {
    let spark = sparkline(label, &drawn.spark, end, None);
    let chart = html! {
        figure.chart.series-chart {
            (chart(Series::Steps { points: &drawn.chart, end }, &[]))
            figcaption {
                (label) ": values over time, as "
                a href=(series_href(watch, Some(node), None)) { "JSON" } " or "
                a href=(series_href(watch, Some(node), Some("csv"))) { "CSV" }
            }
        }
    };
    (spark, chart)
}

// ---------------------------------------------------------------- changes

/// A table row on both sides of a change, in data terms.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RowSides {
    /// The row's key.
    pub key: Option<String>,
    /// The columns of either side, the new row's order first.
    pub cols: Vec<String>,
    /// The old row's cells by column (`None`: the row did not exist).
    pub old: Option<Vec<Option<String>>>,
    /// The new row's cells by column.
    pub new: Option<Vec<Option<String>>>,
}

/// One change of a check, for the change view.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChangeDetail {
    /// The event id.
    pub id: i64,
    /// `update`, `insert`, `delete`, `move`, `layout`, ...
    pub kind: String,
    /// The change in data terms, one line.
    pub line: String,
    /// The labels from the root down to the changed node.
    pub context: String,
    /// The old value (text), when there was one.
    pub old: Option<String>,
    /// The new value.
    pub new: Option<String>,
    /// The node's id in the old and the new snapshot.
    pub xpaths: (Option<String>, Option<String>),
    /// The table row around the change, when it is in a table.
    pub row: Option<RowSides>,
    /// The changed node whose number has a series (its id), with the
    /// series' newest points thinned for a sparkline.
    pub series: Option<(String, Vec<Point>)>,
}

/// Which change view a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wanted {
    /// One change event, marked among the others of its check
    /// (`/status/{watch}/changes/{id}`).
    Event(i64),
    /// Every change event of the check made at this time, in Unix
    /// milliseconds, none marked (`/status/{watch}/changes/at/{ms}`): the
    /// link alerts carry, made before their check's events had ids (the
    /// reasons are in `notify/links.rs`).
    Check(i64),
}

impl Wanted {
    /// The events the view shows, oldest first, out of a watch's newest
    /// `events` (newest first, as [`crate::store::Store::events`] reads
    /// them); `None` when the wanted ones are not among them.
    fn group(self, events: Vec<EventRecord>) -> Option<Vec<EventRecord>> {
        let mut group: Vec<EventRecord> = match self {
            Wanted::Event(id) => {
                let target = events.iter().find(|e| e.id == id)?;
                let (snapshot, layout) = (target.snapshot_id, target.event.is_layout());
                // The others of the same check: same snapshot, not layout.
                events
                    .into_iter()
                    .filter(|e| {
                        e.id == id
                            || (snapshot.is_some()
                                && e.snapshot_id == snapshot
                                && !e.event.is_layout()
                                && !layout)
                    })
                    .collect()
            }
            // Every event of one check is stored at the check's time: its
            // data changes and its layout event (the snapshot of the data
            // changes may be pruned, their time stays).
            Wanted::Check(ms) => events
                .into_iter()
                .filter(|e| time::utc(e.at).map(|t| t.timestamp_millis()) == Some(ms))
                .collect(),
        };
        group.reverse();
        (!group.is_empty()).then_some(group)
    }

    /// The event marked in the view, if one is.
    fn marked(self) -> Option<i64> {
        match self {
            Wanted::Event(id) => Some(id),
            Wanted::Check(_) => None,
        }
    }
}

/// `GET /status/{watch}/changes/{id}`.
pub(crate) async fn change(
    State(server): State<Arc<Server>>,
    Path((watch, event)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, Error> {
    change_view(
        &server,
        &headers,
        (watch, &event),
        Wanted::Event,
        "no change",
    )
    .await
}

/// `GET /status/{watch}/changes/at/{ms}`: the change view of the check
/// made at `ms` (Unix milliseconds), where alerts link.
pub(crate) async fn check_changes(
    State(server): State<Arc<Server>>,
    Path((watch, at)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, Error> {
    change_view(
        &server,
        &headers,
        (watch, &at),
        Wanted::Check,
        "no changes recorded at",
    )
    .await
}

/// The change view of `watch` that `raw` (the path's last segment, a
/// number) names as `wanted` says: the check's changes, each beside its
/// old and new values from the snapshots they lie between; not found
/// ("watch `w` has `nothing` `raw`") when `raw` is no number or the store
/// no longer holds them.
async fn change_view(
    server: &Arc<Server>,
    headers: &HeaderMap,
    (watch, raw): (String, &str),
    wanted: fn(i64) -> Wanted,
    nothing: &str,
) -> Result<Response, Error> {
    require(server, headers, Need::Read, Form::Html)?;
    let missing = || Error::not_found(format!("watch `{watch}` has {nothing} `{raw}`"), Form::Html);
    let Ok(n) = raw.parse::<i64>() else {
        return Err(missing());
    };
    let wanted = wanted(n);
    let w = watch.clone();
    let found = server
        .stores
        .run(move |s| {
            let Some(group) = wanted.group(s.events(&w, None, EVENTS)?) else {
                return Ok(None);
            };
            let (mut old, mut new) = (None, None);
            // (A layout event has no snapshot; the check's data changes do,
            // until retention prunes it.)
            if let Some(snapshot) = group.iter().find_map(|e| e.snapshot_id) {
                new = s.snapshot(snapshot)?.map(|s| s.xml);
                let ids = s.snapshots(&w)?;
                let before = ids
                    .iter()
                    .skip_while(|(id, _, _)| *id != snapshot)
                    .nth(1)
                    .map(|(id, _, _)| *id);
                if let Some(before) = before {
                    old = s.snapshot(before)?.map(|s| s.xml);
                }
            }
            let series = change_series(s, &w, &group)?;
            let read = |xml: Option<String>| {
                xml.and_then(|x| match crate::hierarchy::read::read(&x) {
                    Ok(h) => Some(h),
                    Err(error) => {
                        tracing::warn!(watch = %w, error = %crate::ErrorChain(&error), "a stored snapshot does not read back");
                        None
                    }
                })
            };
            Ok(Some((group, read(old), read(new), series)))
        })
        .await
        .map_err(|e| Error::internal(&e, Form::Html))?;
    let Some((group, old, new, series)) = found else {
        return Err(missing());
    };
    let at = group.first().map_or(SystemTime::UNIX_EPOCH, |e| e.at);
    let details: Vec<ChangeDetail> = group
        .iter()
        .map(|e| {
            let mut d = detail(e.id, &e.event, old.as_ref(), new.as_ref());
            d.series = series_node(&e.event, |id| series.contains_key(id))
                .and_then(|node| Some((node.to_owned(), series.get(node)?.clone())));
            d
        })
        .collect();
    let title = server
        .watches()
        .get(&watch)
        .and_then(|w| w.title.clone())
        .unwrap_or_else(|| watch.clone());
    Ok(super::status::html(change_page(
        &watch,
        &title,
        wanted.marked(),
        at,
        &details,
        SystemTime::now(),
    )))
}

/// The node of a change that has a series (`has` says which do): its
/// new node's, else its old node's.
fn series_node(event: &Event, has: impl Fn(&str) -> bool) -> Option<&str> {
    let change = event.change()?;
    [&change.new_xpath, &change.old_xpath]
        .into_iter()
        .flatten()
        .map(String::as_str)
        .find(|id| has(id))
}

/// The series of the changed nodes of `group` (at most
/// [`MAX_CHANGE_SPARKLINES`]), by node id, thinned for a sparkline.
fn change_series(
    store: &Store,
    watch: &str,
    group: &[EventRecord],
) -> Result<HashMap<String, Vec<Point>>, StoreError> {
    let heads = series_nodes(store, watch)?;
    let mut out = HashMap::new();
    for e in group {
        if out.len() >= MAX_CHANGE_SPARKLINES {
            break;
        }
        if let Some(node) = series_node(&e.event, |id| heads.contains(id))
            && !out.contains_key(node)
        {
            let points = store.series_latest(watch, node, READ_POINTS)?;
            out.insert(node.to_owned(), downsample(points, SPARK_POINTS).0);
        }
    }
    Ok(out)
}

/// A node by its `xpath` id, with its parent.
fn find<'a>(
    nodes: &'a [HNode],
    parent: Option<&'a HNode>,
    id: &str,
) -> Option<(&'a HNode, Option<&'a HNode>)> {
    for n in nodes {
        if n.xpath == id {
            return Some((n, parent));
        }
        // Ids are paths: only a node whose id starts the wanted one holds it.
        if id.starts_with(n.xpath.as_str())
            && let Some(found) = find(&n.children, Some(n), id)
        {
            return Some(found);
        }
    }
    None
}

/// The row holding (or being) the node `id` of `page`.
fn row_of<'a>(page: Option<&'a Hierarchy>, id: Option<&str>) -> Option<&'a HNode> {
    let (n, parent) = find(&page?.children, None, id?)?;
    match n.kind {
        Kind::Row => Some(n),
        Kind::Cell => parent.filter(|p| p.kind == Kind::Row),
        _ => None,
    }
}

/// The cells of `row` by column header.
fn cells(row: &HNode) -> Vec<(String, String)> {
    row.children
        .iter()
        .filter(|c| c.kind == Kind::Cell)
        .map(|c| {
            (
                c.col.as_deref().unwrap_or_default().to_owned(),
                c.text
                    .clone()
                    .or_else(|| c.label.clone())
                    .unwrap_or_default(),
            )
        })
        .collect()
}

/// A change event with the table row around it, from the snapshots.
fn detail(
    id: i64,
    event: &Event,
    old: Option<&Hierarchy>,
    new: Option<&Hierarchy>,
) -> ChangeDetail {
    let change = event.change();
    let s = |f: fn(&Change) -> &Option<String>| change.and_then(|c| f(c).clone());
    let context = change.map(Change::context_path).unwrap_or_default();
    let (old_xpath, new_xpath) = (s(|c| &c.old_xpath), s(|c| &c.new_xpath));
    let old_row = row_of(old, old_xpath.as_deref());
    let new_row = row_of(new, new_xpath.as_deref());
    let row = (old_row.is_some() || new_row.is_some()).then(|| {
        let old_cells = old_row.map(cells);
        let new_cells = new_row.map(cells);
        let mut cols: Vec<String> = Vec::new();
        for (c, _) in new_cells.iter().chain(old_cells.iter()).flatten() {
            if !cols.contains(c) {
                cols.push(c.clone());
            }
        }
        let by_col = |side: &Option<Vec<(String, String)>>| {
            side.as_ref().map(|cells| {
                cols.iter()
                    .map(|c| cells.iter().find(|(k, _)| k == c).map(|(_, v)| v.clone()))
                    .collect()
            })
        };
        RowSides {
            key: new_row.or(old_row).and_then(|r| r.key.clone()),
            old: by_col(&old_cells),
            new: by_col(&new_cells),
            cols,
        }
    });
    ChangeDetail {
        id,
        kind: event.kind().to_owned(),
        line: event.line_without_kind(),
        context,
        old: s(|c| &c.old),
        new: s(|c| &c.new),
        xpaths: (old_xpath, new_xpath),
        row,
        series: None,
    }
}

/// The change view: the check's changes, `wanted` marked (if one is),
/// each beside its old and new values (a table row with its changed cells
/// marked).
pub(crate) fn change_page(
    watch: &str,
    title: &str,
    wanted: Option<i64>,
    at: SystemTime,
    changes: &[ChangeDetail],
    now: SystemTime,
) -> String {
    let id = seg(watch);
    let name = match wanted {
        Some(n) => format!("change {n}"),
        None => "changes".to_owned(),
    };
    let body = html! {
        nav.crumbs {
            a href="/status" { "semclip status" } " / "
            a href={ "/status/" (id) } { (watch) } " / " (name)
        }
        h1 { (title) ": " (plural(changes.len(), "change", "changes")) }
        p.muted { "Found " (time(Some(at), now)) ". "
            a href={ "/status/" (id) "#changes" } { "All recent changes" } }
        ol.changes #change-list {
            @for c in changes { (change_block(&id, wanted, c, at, now)) }
        }
    };
    layout(&format!("{title}: {name} — semclip"), false, None, body)
}

/// One change of the check (found at `at`), with the sparkline of its
/// node's values up to `now`, the point of this check marked.
fn change_block(
    watch: &str,
    wanted: Option<i64>,
    c: &ChangeDetail,
    at: SystemTime,
    now: SystemTime,
) -> Markup {
    let current = wanted == Some(c.id);
    html! {
        li.change.current[current] id={ "change-" (c.id) } {
            p {
                span class={ "badge kind-" (pages::safe_id(&c.kind)) } { (c.kind) } " "
                @if current { (c.line) } @else {
                    a href=(pages::change_href(watch, c.id)) { (c.line) }
                }
            }
            @if let Some(row) = &c.row {
                (row_table(row))
            } @else {
                div.table-wrap {
                    table.sides {
                        thead { tr { th { "Where" } th { "Before" } th { "After" } } }
                        tbody {
                            // A value is marked only where the two sides
                            // differ: a move keeps its value and changes
                            // only where it stands.
                            @let differs = c.old != c.new;
                            tr {
                                td { (c.context) }
                                td.changed[differs && c.old.is_some()] { (c.old.as_deref().unwrap_or(NONE)) }
                                td.changed[differs && c.new.is_some()] { (c.new.as_deref().unwrap_or(NONE)) }
                            }
                        }
                    }
                }
            }
            @if let Some((node, points)) = &c.series {
                @let label = if c.context.is_empty() { node } else { &c.context };
                p.series {
                    "Its values over time: " (sparkline(label, points, now, Some(at)))
                    " " a href=(series_href(watch, Some(node), None)) { "JSON" }
                    " · " a href=(series_href(watch, Some(node), Some("csv"))) { "CSV" }
                }
            }
            p.muted {
                @if let Some(x) = &c.xpaths.0 { "Old node " code { (x) } " " }
                @if let Some(x) = &c.xpaths.1 { "New node " code { (x) } }
            }
        }
    }
}

/// A row before and after, a cell marked where the two sides differ.
fn row_table(row: &RowSides) -> Markup {
    let cell = |side: &Option<Vec<Option<String>>>, i: usize| {
        side.as_ref()
            .and_then(|cells| cells.get(i).cloned().flatten())
    };
    let sides = [("Before", &row.old), ("After", &row.new)];
    html! {
        div.table-wrap {
            table.sides data-key=[row.key.as_deref()] {
                thead {
                    tr {
                        th.side { "" }
                        @for c in &row.cols { th { (c) } }
                    }
                }
                tbody {
                    @for (name, side) in sides {
                        tr data-side=(name.to_ascii_lowercase()) {
                            th.side { (name) }
                            @if side.is_none() {
                                td.changed colspan=(row.cols.len().max(1)) { "(no such row)" }
                            } @else {
                                @for i in 0..row.cols.len() {
                                    @let here = cell(side, i);
                                    @let changed = here != cell(&row.old, i) || here != cell(&row.new, i);
                                    td.changed[changed] { (here.as_deref().unwrap_or(NONE)) }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    const PAGE: &str = "<title>Q</title><table><caption>Shares</caption>\
        <tr><th>Ticker<th>Last<th>Name</tr>\
        <tr><td>GAZP<td>251,30<td>Gazprom</tr>\
        <tr><td>SBER<td>300,15<td>Sberbank</tr></table>";

    #[test]
    fn the_tree_shows_ids_and_snippets_and_caps_huge_pages() {
        let h = Hierarchy::from_html(PAGE, None);
        let html = tree_page(
            "q",
            "Quotes",
            &h,
            SystemTime::UNIX_EPOCH,
            &TreeSeries::default(),
        );
        assert!(html.contains("data-xpath=\"/page/table[@label='Shares']/row[@key='GAZP']\""));
        assert!(html.contains("<pre class=\"snippet clip-snippet\""));
        assert!(html.contains("class=\"snippet threshold-snippet\""));
        assert!(html.contains("name: gazp-last"));
        assert!(html.contains("<script src=\"/status.js\"></script>"));
        assert!(!html.contains("more nodes not shown"));

        let rows: String = (0..MAX_TREE_NODES)
            .map(|i| format!("<tr><td>k{i}<td>{i}</tr>"))
            .collect();
        let big = format!("<table><tr><th>K<th>V</tr>{rows}</table>");
        let h = Hierarchy::from_html(&big, None);
        let html = tree_page(
            "q",
            "Big",
            &h,
            SystemTime::UNIX_EPOCH,
            &TreeSeries::default(),
        );
        assert_eq!(html.matches("<li data-xpath").count(), MAX_TREE_NODES);
        assert!(html.contains("more nodes not shown"), "capped");
        assert!(html.contains(&format!("showing the first {MAX_TREE_NODES} of")));
        // The numbers the tree may draw are those it shows.
        let numbers = numbers_shown(&h);
        assert!(numbers.len() > 100, "{}", numbers.len());
        for id in &numbers {
            assert!(html.contains(&format!("data-xpath=\"{id}\"")), "{id}");
        }
        let last = format!("row[@key='k{}']", MAX_TREE_NODES - 1);
        assert!(!numbers.iter().any(|n| n.contains(&last)));
    }

    const GAZP_LAST: &str = "/page/table[@label='Shares']/row[@key='GAZP']/cell[@col='Last']";

    /// 2023-11-14T22:13:20Z.
    fn t0() -> SystemTime {
        SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000)
    }

    /// GAZP's last price as it changed twice: 3 points, a minute apart.
    fn gazp_points() -> Vec<Point> {
        [(0, 251.3), (60, 268.4), (120, 305.4)]
            .into_iter()
            .map(|(secs, v)| Point {
                at: t0() + std::time::Duration::from_secs(secs),
                value: Some(v),
            })
            .collect()
    }

    #[test]
    fn a_number_with_a_series_has_a_sparkline_and_a_chart_in_the_tree() {
        let h = Hierarchy::from_html(PAGE, None);
        let mut series = TreeSeries::default();
        series.drawn.insert(
            GAZP_LAST.to_owned(),
            Drawn {
                spark: gazp_points(),
                chart: gazp_points(),
            },
        );
        series.with_series = 1;
        let taken = t0() + std::time::Duration::from_secs(180);
        let html = tree_page("q", "Quotes", &h, taken, &series);
        let li = html
            .split(&format!("<li data-xpath=\"{GAZP_LAST}\">"))
            .nth(1)
            .expect("the GAZP Last node");
        let li = &li[..li.find("</li>").expect("closed")];
        // The sparkline, in the summary beside the number.
        let summary = &li[..li.find("</summary>").expect("a summary")];
        assert!(summary.contains("num 251.3"), "{summary}");
        assert!(
            summary.contains("data-points=\"3\" data-values=\"3\""),
            "{summary}"
        );
        assert!(
            summary.contains(
                "<title>Shares / GAZP / Last: 3 values, from 251.3 to 305.4, last 305.4</title>"
            ),
            "{summary}"
        );
        assert!(
            summary.contains("last <span class=\"spark-last\">305.4</span>"),
            "{summary}"
        );
        // The chart, in the node's body, with links to the points.
        assert!(
            li.contains("<figure class=\"chart series-chart\"><svg"),
            "{li}"
        );
        assert!(
            li.contains("aria-label=\"value history: 3 values, from 251.3 to 305.4\""),
            "{li}"
        );
        let encoded = seg(GAZP_LAST);
        assert!(
            li.contains(&format!(
                "href=\"/api/watches/q/series?xpath={encoded}\">JSON</a>"
            )),
            "{li}"
        );
        assert!(
            li.contains(&format!(
                "href=\"/api/watches/q/series?xpath={encoded}&amp;format=csv\">CSV</a>"
            )),
            "{li}"
        );
        // The tree opens down to it, not further, and not elsewhere.
        let opens = |id: &str, open: bool| {
            let tag = if open {
                "<details class=\"node\" open>"
            } else {
                "<details class=\"node\">"
            };
            html.contains(&format!("<li data-xpath=\"{id}\">{tag}"))
        };
        assert!(opens("/page/table[@label='Shares']/row[@key='GAZP']", true));
        assert!(opens(GAZP_LAST, false));
        assert!(opens(
            "/page/table[@label='Shares']/row[@key='SBER']",
            false
        ));
        // Only that node is drawn.
        assert_eq!(html.matches("<svg class=\"spark\"").count(), 1);
        assert_eq!(html.matches("<figure").count(), 1);
        assert!(html.contains(" · 1 number with values over time"), "{html}");
        assert!(!html.contains(" drawn)"));
        // A tree with more numbers with series than it draws says so.
        series.with_series = 250;
        let html = tree_page("q", "Quotes", &h, taken, &series);
        assert!(html.contains(" · 250 numbers with values over time (the first 1 drawn)"));
    }

    #[test]
    fn a_change_view_marks_the_changed_cell() {
        let old = Hierarchy::from_html(PAGE, None);
        let new = Hierarchy::from_html(&PAGE.replace("251,30", "268,40"), None);
        let changes = crate::diff::diff(&old, &new);
        assert_eq!(changes.len(), 1);
        let event = Event::Change(changes[0].clone());
        let d = detail(7, &event, Some(&old), Some(&new));
        let row = d.row.clone().expect("a table row");
        assert_eq!(row.key.as_deref(), Some("GAZP"));
        let html = change_page(
            "q",
            "Quotes",
            Some(7),
            SystemTime::UNIX_EPOCH,
            &[d],
            SystemTime::UNIX_EPOCH,
        );
        assert!(html.contains("<td class=\"changed\">251,30</td>"), "{html}");
        assert!(html.contains("<td class=\"changed\">268,40</td>"), "{html}");
        // The unchanged cells are shown, not marked.
        assert!(html.contains("Gazprom"), "{html}");
        assert!(!html.contains("class=\"changed\">Gazprom"), "{html}");
        assert!(
            html.contains("class=\"change current\" id=\"change-7\""),
            "{html}"
        );
        assert!(!html.contains("<svg"), "no series, no sparkline");
    }

    #[test]
    fn a_change_view_shows_the_changed_number_s_series_with_this_change_marked() {
        let old = Hierarchy::from_html(PAGE, None);
        let new = Hierarchy::from_html(&PAGE.replace("251,30", "268,40"), None);
        let changes = crate::diff::diff(&old, &new);
        let event = Event::Change(changes[0].clone());
        // The series is found by the changed node's id.
        assert_eq!(series_node(&event, |id| id == GAZP_LAST), Some(GAZP_LAST));
        assert_eq!(series_node(&event, |_| false), None);
        let mut d = detail(7, &event, Some(&old), Some(&new));
        d.series = Some((GAZP_LAST.to_owned(), gazp_points()));
        let at = t0() + std::time::Duration::from_secs(60);
        let now = t0() + std::time::Duration::from_secs(600);
        let html = change_page("q", "Quotes", Some(7), at, &[d], now);
        assert!(
            html.contains("data-points=\"3\" data-values=\"3\""),
            "{html}"
        );
        assert!(
            html.contains(": 3 values, from 251.3 to 305.4, last 305.4</title>"),
            "{html}"
        );
        assert_eq!(html.matches("<circle class=\"mark\"").count(), 1, "{html}");
        assert!(html.contains(&format!(
            "href=\"/api/watches/q/series?xpath={}\"",
            seg(GAZP_LAST)
        )));
        assert_eq!(xpath_nodes(&html, "//li[@id='change-7']//svg"), 1);
    }

    fn xpath_nodes(html: &str, xpath: &str) -> usize {
        let doc = libxml::parser::Parser::default_html()
            .parse_string(html)
            .unwrap();
        let context = libxml::xpath::Context::new(&doc).unwrap();
        context.evaluate(xpath).unwrap().get_nodes_as_vec().len()
    }

    #[test]
    fn a_check_is_found_by_its_time_and_an_event_with_its_check() {
        let at = |ms: u64| SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(ms);
        // Events as the store keeps them (JSON with their kind).
        let event =
            |json: serde_json::Value| -> Event { serde_json::from_value(json).expect("an event") };
        let change = |id: i64, snapshot: i64, ms: u64| EventRecord {
            id,
            watch: "q".to_owned(),
            snapshot_id: Some(snapshot),
            at: at(ms),
            event: event(serde_json::json!(
                {"kind": "insert", "context": ["T"], "new": format!("v{id}")}
            )),
        };
        let layout = EventRecord {
            id: 4,
            watch: "q".to_owned(),
            snapshot_id: None,
            at: at(2_000),
            event: event(serde_json::json!({
                "kind": "layout", "drift": 0.5, "max_drift": 0.3,
                "against": "previous page", "lost": [], "moved": [], "summary": "drifted"
            })),
        };
        // Newest first, as the store reads them: two checks.
        let events = vec![
            layout,
            change(3, 2, 2_000),
            change(2, 2, 2_000),
            change(1, 1, 1_000),
        ];
        let ids = |w: Wanted| {
            w.group(events.clone())
                .map(|g| g.iter().map(|e| e.id).collect::<Vec<_>>())
        };
        assert_eq!(ids(Wanted::Check(2_000)), Some(vec![2, 3, 4]));
        assert_eq!(ids(Wanted::Check(1_000)), Some(vec![1]));
        assert_eq!(ids(Wanted::Check(1_500)), None);
        assert_eq!(ids(Wanted::Event(3)), Some(vec![2, 3]));
        assert_eq!(ids(Wanted::Event(4)), Some(vec![4]));
        assert_eq!(ids(Wanted::Event(9)), None);
        assert_eq!(Wanted::Check(2_000).marked(), None);
        let html = change_page("q", "Q", None, at(2_000), &[], SystemTime::UNIX_EPOCH);
        assert!(html.contains("Q: changes — semclip"), "{html}");
        assert!(!html.contains("change current"), "{html}");
    }

    #[test]
    fn a_moved_value_is_not_marked_as_changed() {
        let change = Change {
            kind: crate::diff::ChangeKind::Move,
            context: vec!["Box".into(), "Capital".into()],
            new_context: Some(vec!["Box".into(), "Largest city".into()]),
            old: Some("Wellington".into()),
            new: Some("Wellington".into()),
            old_xpath: None,
            new_xpath: None,
            old_num: None,
            new_num: None,
            delta: None,
            size: None,
            record: None,
        };
        let d = detail(3, &Event::Change(change), None, None);
        assert!(d.row.is_none());
        let html = change_page(
            "q",
            "Q",
            Some(3),
            SystemTime::UNIX_EPOCH,
            &[d],
            SystemTime::UNIX_EPOCH,
        );
        assert!(html.contains(">Wellington</td>"), "{html}");
        assert!(!html.contains("class=\"changed\""), "{html}");
    }
}
