//! `GET /api/watches/{watch}/series`: a watch's values over time (see
//! `crate::store`'s series), in the shapes the tools that chart or
//! act on them read: JSON, CSV, a Home Assistant REST sensor, and a flat
//! table for Grafana's Infinity data source.
//!
//! # Decisions
//!
//! - **Which node.** `xpath` is a node's semantic id (as the hierarchy
//!   labels it; a trailing `/@num` is dropped) or any XPath over the
//!   watch's current version: it then names the series of the nodes it
//!   selects there (at most [`MAX_NODES`]). Without `xpath`, every series
//!   of the watch, heads only (no points): what there is to ask for.
//! - **Time range.** `from` and `to` are RFC 3339 times or durations back
//!   from now (`7d`, `12h`). A series is a step function: the point in
//!   force at `from` comes first, even when it is older.
//! - **Downsampling.** At most `points` points per series (default
//!   [`DEFAULT_POINTS`], at most [`MAX_POINTS`]): over that, the range is
//!   cut into `points / 2` equal spans and each keeps its lowest and
//!   highest point (spikes survive), and every end of a series (a point
//!   without a value) is kept.
//! - **Home Assistant** (`format=ha`): the first node's state as a REST
//!   sensor reads it: `state` is the value (`unavailable` once the node is
//!   gone), `attributes` carry the unit (the node's `currency`, when the
//!   page gives one), a friendly name (the node's data context) and when
//!   it last changed.

use std::sync::Arc;
use std::time::SystemTime;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::SecondsFormat;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Server;
use super::auth::Need;
use super::error::{Error, Form, require};
use super::metrics::ValueLabels;
use crate::config::Watch;
use crate::monitor::series::selected;
use crate::store::{Point, SeriesHead, Store, StoreError, time};
use crate::xpath::native::Evaluator;
use std::collections::{BTreeMap, HashMap};

/// Most series one request gives.
pub(crate) const MAX_NODES: usize = 50;
/// Points per series by default.
pub(crate) const DEFAULT_POINTS: usize = 1000;
/// Most points per series.
pub(crate) const MAX_POINTS: usize = 10_000;

/// The query of a series request.
#[derive(Debug, Deserialize)]
pub(crate) struct SeriesQuery {
    xpath: Option<String>,
    from: Option<String>,
    to: Option<String>,
    points: Option<usize>,
    format: Option<String>,
}

/// A watch's series.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SeriesPage {
    /// The watch id.
    pub watch: String,
    /// One entry per node.
    pub series: Vec<SeriesOut>,
}

/// One node's series.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SeriesOut {
    /// The node's semantic id.
    pub node: String,
    /// Its data context on the current version (`Shares / GAZP / Last`);
    /// empty when the node is gone.
    pub label: String,
    /// Its unit (a currency code), when the page gives one.
    pub unit: Option<String>,
    /// The clip or threshold that took it in (`clip:NAME`, `threshold:NAME`).
    pub source: String,
    /// Its value now; absent once the node is gone.
    pub value: Option<f64>,
    /// Since when it has held that value.
    pub since: String,
    /// Whether `points` were thinned to the requested number.
    pub downsampled: bool,
    /// The points, oldest first (absent when listing series).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub points: Option<Vec<PointOut>>,
}

/// One point.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct PointOut {
    /// When the value was first seen (RFC 3339).
    pub at: String,
    /// The value from then on; absent: the node was gone from then on.
    pub value: Option<f64>,
}

/// A node found for a request: its head and what the current version
/// says of it.
pub(super) struct Found {
    /// The series' head.
    pub head: SeriesHead,
    /// The node's data context on the current version; empty when it is
    /// gone.
    pub label: String,
    /// Its unit (a currency code), when the page gives one.
    pub unit: Option<String>,
}

fn rfc3339(t: SystemTime) -> String {
    time::rfc3339(t, SecondsFormat::Millis).unwrap_or_default()
}

/// A time parameter: RFC 3339, or a duration back from `now`.
fn when(text: &str, name: &str, now: SystemTime) -> Result<SystemTime, Error> {
    let text = text.trim();
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(text) {
        return Ok(SystemTime::from(t));
    }
    humantime::parse_duration(text)
        .ok()
        .and_then(|ago| now.checked_sub(ago))
        .ok_or_else(|| {
            Error::new(
                StatusCode::BAD_REQUEST,
                format!(
                    "{name} must be an RFC 3339 time (2026-11-28T09:00:00Z) or a duration back from now (7d, 12h), not `{text}`"
                ),
                Form::Json,
            )
        })
}

/// The nodes `xpath` names (see the module's decisions), with labels and
/// units from the current version.
fn resolve(store: &Store, watch: &str, xpath: Option<&str>) -> Result<Vec<Found>, StoreError> {
    let heads = store.series_heads(watch)?;
    let current = store.current_hierarchy(watch)?;
    let ev = current.as_ref().map(|c| Evaluator::new(&c.hierarchy));
    let chosen: Vec<SeriesHead> = match xpath {
        None => heads,
        Some(xpath) => {
            let xpath = xpath.trim();
            let id = xpath.strip_suffix("/@num").unwrap_or(xpath);
            if let Some(head) = heads.iter().find(|h| h.node == id) {
                vec![head.clone()]
            } else {
                let ids: Vec<String> = ev
                    .as_ref()
                    .map(|ev| {
                        selected(ev, xpath)
                            .iter()
                            .map(|hit| ev.flat().id(hit))
                            .map(|id| id.split("/@").next().unwrap_or_default().to_owned())
                            .collect()
                    })
                    .unwrap_or_default();
                heads
                    .into_iter()
                    .filter(|h| ids.contains(&h.node))
                    .take(MAX_NODES)
                    .collect()
            }
        }
    };
    Ok(labelled(ev.as_ref(), chosen))
}

/// `heads` with their labels and units from the current version (`ev`).
fn labelled(ev: Option<&Evaluator<'_>>, heads: Vec<SeriesHead>) -> Vec<Found> {
    let mut found: HashMap<String, (String, Option<String>)> = HashMap::new();
    if let Some(ev) = ev {
        let flat = ev.flat();
        let ids: Vec<&str> = heads.iter().map(|h| h.node.as_str()).collect();
        for hit in flat.elements_with_ids(&ids) {
            found.entry(flat.id(&hit)).or_insert_with(|| {
                (
                    flat.context(&hit),
                    flat.attribute_of(&hit, "currency").map(str::to_owned),
                )
            });
        }
    }
    heads
        .into_iter()
        .map(|head| {
            let (label, unit) = found.remove(&head.node).unwrap_or_default();
            Found { head, label, unit }
        })
        .collect()
}

/// The series a watch's status page lists: at most `max` of them, those
/// of nodes still on the page first (each group in the order of their
/// ids), labelled from the current version (unlabelled when it does not
/// read); and how many there are.
pub(super) fn for_page(
    store: &Store,
    watch: &str,
    max: usize,
) -> Result<(Vec<Found>, usize), StoreError> {
    let mut heads = store.series_heads(watch)?;
    let total = heads.len();
    heads.sort_by_key(|h| h.value.is_none());
    heads.truncate(max);
    // Labels are a help: a version that does not read leaves them out
    // rather than the page.
    let current = if heads.is_empty() {
        None
    } else {
        store.current_hierarchy(watch).unwrap_or_else(|error| {
            tracing::warn!(watch, error = %crate::ErrorChain(&error), "cannot label the series from the current version");
            None
        })
    };
    let ev = current.as_ref().map(|c| Evaluator::new(&c.hierarchy));
    Ok((labelled(ev.as_ref(), heads), total))
}

/// The values the watches export on `/metrics` (`metrics: true` on a
/// watch, a clip or a threshold): each series' last value, by the clip or
/// threshold that took its node in, and the value of each exporting
/// threshold whose XPath gives a number rather than a node. Ended series
/// are not exported.
pub(crate) fn exported(
    store: &Store,
    watches: &BTreeMap<String, Arc<Watch>>,
) -> Result<Vec<(ValueLabels, f64)>, StoreError> {
    let mut out = Vec::new();
    for (id, w) in watches {
        let any = w.metrics
            || w.clips.values().any(|c| c.metrics)
            || w.thresholds.iter().any(|t| t.metrics);
        if !any {
            continue;
        }
        for head in store.series_heads(id)? {
            let Some(value) = head.value else { continue };
            let (clip, threshold) = match head.source.split_once(':') {
                Some(("clip", name)) => (name, ""),
                Some(("threshold", name)) => ("", name),
                _ => continue,
            };
            let wanted = w.metrics
                || w.clips.get(clip).is_some_and(|c| c.metrics)
                || w.thresholds
                    .iter()
                    .any(|t| t.name == threshold && t.metrics);
            if wanted {
                out.push((
                    ValueLabels {
                        watch: id.clone(),
                        clip: clip.to_owned(),
                        threshold: threshold.to_owned(),
                        node: head.node,
                    },
                    value,
                ));
            }
        }
        // Thresholds read as numbers (count(), sum()) have no node: their
        // own last value.
        let states = store.thresholds(id)?;
        for t in w
            .thresholds
            .iter()
            .filter(|t| (w.metrics || t.metrics) && t.each.is_none())
        {
            let Some(state) = states.iter().find(|s| s.name == t.name) else {
                continue;
            };
            if let (None, Some(value)) = (&state.node, state.value) {
                out.push((
                    ValueLabels {
                        watch: id.clone(),
                        clip: String::new(),
                        threshold: t.name.clone(),
                        node: String::new(),
                    },
                    value,
                ));
            }
        }
    }
    Ok(out)
}

/// At most `max` points of `points` (see the module's decisions).
pub(crate) fn downsample(points: Vec<Point>, max: usize) -> (Vec<Point>, bool) {
    if points.len() <= max || max < 2 {
        return (points, false);
    }
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return (points, false);
    };
    let start = first.at;
    let span = last.at.duration_since(start).unwrap_or_default();
    let buckets = (max / 2).max(1);
    let width = (span.as_secs_f64() / buckets as f64).max(f64::MIN_POSITIVE);
    let bucket_of = |p: &Point| -> usize {
        let offset = p.at.duration_since(start).unwrap_or_default().as_secs_f64();
        ((offset / width) as usize).min(buckets - 1)
    };
    let mut out: Vec<Point> = Vec::with_capacity(max);
    let mut i = 0;
    while i < points.len() {
        let b = bucket_of(&points[i]);
        let mut j = i;
        while j < points.len() && bucket_of(&points[j]) == b {
            j += 1;
        }
        let run = &points[i..j];
        let valued = || {
            run.iter()
                .enumerate()
                .filter_map(|(k, p)| p.value.map(|v| (k, v)))
        };
        let lo = valued().min_by(|a, b| a.1.total_cmp(&b.1)).map(|(k, _)| k);
        let hi = valued().max_by(|a, b| a.1.total_cmp(&b.1)).map(|(k, _)| k);
        for (k, p) in run.iter().enumerate() {
            if p.value.is_none() || Some(k) == lo || Some(k) == hi {
                out.push(*p);
            }
        }
        i = j;
    }
    (out, true)
}

/// `GET /api/watches/{watch}/series?xpath=…&from=…&to=…&points=N&format=json|csv|ha|table`.
pub(crate) async fn series(
    State(server): State<Arc<Server>>,
    Path(id): Path<String>,
    Query(q): Query<SeriesQuery>,
    headers: HeaderMap,
) -> Result<Response, Error> {
    require(&server, &headers, Need::Read, Form::Json)?;
    let known = server.watches().contains_key(&id);
    let now = SystemTime::now();
    let from = q
        .from
        .as_deref()
        .map(|f| when(f, "from", now))
        .transpose()?;
    let to = q.to.as_deref().map(|t| when(t, "to", now)).transpose()?;
    let max = match q.points {
        Some(0 | 1) => {
            return Err(Error::new(
                StatusCode::BAD_REQUEST,
                "points must be at least 2",
                Form::Json,
            ));
        }
        Some(n) => n.min(MAX_POINTS),
        None => DEFAULT_POINTS,
    };
    let format = q.format.as_deref().unwrap_or("json");
    if !matches!(format, "json" | "csv" | "ha" | "table") {
        return Err(Error::new(
            StatusCode::BAD_REQUEST,
            format!("format must be json, csv, ha or table, not `{format}`"),
            Form::Json,
        ));
    }
    let listing = q.xpath.is_none();
    let (w, xpath) = (id.clone(), q.xpath.clone());
    let found = server
        .stores
        .run(move |s| {
            let found = resolve(s, &w, xpath.as_deref())?;
            let mut out = Vec::with_capacity(found.len());
            for f in found {
                let points = if listing {
                    None
                } else {
                    Some(s.series_points(&w, &f.head.node, from, to)?)
                };
                out.push((f, points));
            }
            Ok(out)
        })
        .await
        .map_err(|e| Error::internal(&e, Form::Json))?;
    if found.is_empty() && (!known || !listing) {
        let what = match &q.xpath {
            Some(x) => format!("watch `{id}` has no series for `{x}`"),
            None => format!("no watch `{id}` with series"),
        };
        return Err(Error::not_found(what, Form::Json));
    }
    let page = SeriesPage {
        watch: id,
        series: found
            .into_iter()
            .map(|(f, points)| {
                let (points, downsampled) = match points {
                    Some(p) => {
                        let (p, thinned) = downsample(p, max);
                        (Some(p), thinned)
                    }
                    None => (None, false),
                };
                SeriesOut {
                    node: f.head.node,
                    label: f.label,
                    unit: f.unit,
                    source: f.head.source,
                    value: f.head.value,
                    since: rfc3339(f.head.since),
                    downsampled,
                    points: points.map(|p| {
                        p.into_iter()
                            .map(|p| PointOut {
                                at: rfc3339(p.at),
                                value: p.value,
                            })
                            .collect()
                    }),
                }
            })
            .collect(),
    };
    Ok(match format {
        "csv" => csv_of(&page)?,
        "ha" => Json(home_assistant(&page)).into_response(),
        "table" => Json(table(&page)).into_response(),
        _ => Json(page).into_response(),
    })
}

/// One row per point (`time,node,label,value`; an empty value: the node
/// was gone), or per series when listing.
fn csv_of(page: &SeriesPage) -> Result<Response, Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let bad = |e: csv::Error| Error::internal(&e, Form::Json);
    w.write_record(["time", "node", "label", "value"])
        .map_err(bad)?;
    for s in &page.series {
        let rows: Vec<(&str, Option<f64>)> = match &s.points {
            Some(points) => points.iter().map(|p| (p.at.as_str(), p.value)).collect(),
            None => vec![(s.since.as_str(), s.value)],
        };
        for (at, value) in rows {
            let value = value.map(|v| v.to_string()).unwrap_or_default();
            w.write_record([at, s.node.as_str(), s.label.as_str(), value.as_str()])
                .map_err(bad)?;
        }
    }
    let body = w
        .into_inner()
        .map_err(|e| Error::internal(e.error(), Form::Json))?;
    Ok(([(header::CONTENT_TYPE, "text/csv; charset=utf-8")], body).into_response())
}

/// The first series as a Home Assistant REST sensor reads a state.
fn home_assistant(page: &SeriesPage) -> serde_json::Value {
    let Some(s) = page.series.first() else {
        return serde_json::json!({ "state": "unavailable", "attributes": {} });
    };
    let state = s
        .value
        .map_or_else(|| "unavailable".to_owned(), |v| v.to_string());
    let mut attributes = serde_json::json!({
        "friendly_name": if s.label.is_empty() { &s.node } else { &s.label },
        "watch": page.watch,
        "node": s.node,
        "source": s.source,
        "last_changed": s.since,
    });
    if let (Some(unit), Some(map)) = (&s.unit, attributes.as_object_mut()) {
        map.insert("unit_of_measurement".into(), unit.clone().into());
    }
    serde_json::json!({ "state": state, "attributes": attributes })
}

/// One flat object per point, as Grafana's Infinity data source reads a
/// table: `time`, `watch`, `node`, `label`, `value`.
fn table(page: &SeriesPage) -> Vec<serde_json::Value> {
    let mut rows = Vec::new();
    for s in &page.series {
        let points: Vec<(&str, Option<f64>)> = match &s.points {
            Some(points) => points.iter().map(|p| (p.at.as_str(), p.value)).collect(),
            None => vec![(s.since.as_str(), s.value)],
        };
        for (at, value) in points {
            rows.push(serde_json::json!({
                "time": at,
                "watch": page.watch,
                "node": s.node,
                "label": s.label,
                "value": value,
            }));
        }
    }
    rows
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(s: u64, v: Option<f64>) -> Point {
        Point {
            at: SystemTime::UNIX_EPOCH + Duration::from_secs(s),
            value: v,
        }
    }

    #[test]
    fn downsampling_keeps_each_spans_extremes_and_every_end() {
        let mut points: Vec<Point> = (0..1000).map(|s| at(s, Some((s % 10) as f64))).collect();
        points[500] = at(500, Some(1e6));
        points[700] = at(700, None);
        let (out, thinned) = downsample(points, 100);
        assert!(thinned);
        assert!(out.len() <= 101, "{}", out.len());
        assert!(
            out.iter().any(|p| p.value == Some(1e6)),
            "the spike survives"
        );
        assert!(out.iter().any(|p| p.value.is_none()), "the end survives");
        assert!(out.windows(2).all(|w| w[0].at <= w[1].at), "in time order");
    }

    #[test]
    fn few_points_are_left_alone() {
        let points = vec![at(1, Some(1.0)), at(2, Some(2.0))];
        assert_eq!(downsample(points.clone(), 10), (points, false));
    }

    #[test]
    fn times_are_rfc3339_or_durations_back() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(10 * 86_400);
        assert_eq!(
            when("7d", "from", now).ok(),
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(3 * 86_400))
        );
        assert_eq!(
            when("1970-01-02T00:00:00Z", "from", now).ok(),
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(86_400))
        );
        assert!(when("last week", "from", now).is_err());
    }
}
