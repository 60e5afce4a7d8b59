//! The JSON API under `/api/` (described by `/api/openapi.json`), and
//! `/metrics`.
//!
//! Reads: the watches with their status, a watch's change history (pages of
//! at most [`MAX_LIMIT`] events, newest first, continued with `before`),
//! threshold states and each threshold's value history. Write: `POST
//! /api/watches/{watch}/check` asks the scheduler to check a watch now
//! (`admin` scope; `semclip serve` has no scheduler and answers 409).
//! Times are RFC 3339 in UTC.

use std::sync::Arc;
use std::time::SystemTime;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Server;
use super::auth::Need;
use super::error::{Error, Form, require};
use super::gather::{Gathered, gather, ids, row};
use crate::monitor::threshold::Bounds;
use crate::store::{Event, time};
use chrono::SecondsFormat;

/// Most change events or values in one page.
pub(crate) const MAX_LIMIT: usize = 500;

/// Default page size.
const DEFAULT_LIMIT: usize = 50;

/// RFC 3339, UTC, milliseconds (empty outside chrono's range).
fn rfc3339(t: SystemTime) -> String {
    time::rfc3339(t, SecondsFormat::Millis).unwrap_or_default()
}

/// A watch and its status.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct WatchSummary {
    /// The watch id.
    pub id: String,
    /// Its title, if the watch file gives one.
    pub title: Option<String>,
    /// The watched page; absent for a watch only the store still knows.
    pub url: Option<String>,
    /// `pending` (never checked), `ok`, `failing`, `blocked` (failing: the last check got a bot challenge, a rate limit or a page matching the watch's `blocked` XPaths instead of the page), or `removed` (no longer in the watch files).
    pub state: String,
    /// The last check, successful or not.
    pub last_check: Option<String>,
    /// The last successful check.
    pub last_success: Option<String>,
    /// The last semantic change (or the first snapshot).
    pub last_change: Option<String>,
    /// The next scheduled check.
    pub next_run: Option<String>,
    /// Consecutive failed checks.
    pub failures: u32,
    /// The last error while failing.
    pub last_error: Option<String>,
    /// Why the last check was blocked, while `state` is `blocked`.
    pub blocked: Option<String>,
    /// Snapshots stored.
    pub snapshots: usize,
    /// Thresholds defined.
    pub thresholds: usize,
    /// Thresholds in alarm.
    pub alarms: usize,
    /// Its named clips.
    pub clips: Vec<ClipInfo>,
}

/// A named clip.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ClipInfo {
    /// The clip name.
    pub name: String,
    /// What it is.
    pub description: Option<String>,
    /// Its XPath.
    pub xpath: String,
    /// Served without a token.
    pub public: bool,
    /// Its URL (add `?format=json|html|rdf|ttl`).
    pub url: String,
}

/// A watch with its threshold states.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct WatchDetail {
    /// The watch and its status.
    pub watch: WatchSummary,
    /// Its thresholds.
    pub thresholds: Vec<ThresholdInfo>,
}

/// A threshold and its state.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ThresholdInfo {
    /// The threshold name.
    pub name: String,
    /// Its XPath.
    pub xpath: String,
    /// Its bounds in words.
    pub bounds: String,
    /// `normal`, `alarm`, `lost`, or `unknown` before its first evaluation.
    pub state: String,
    /// The last value read.
    pub value: Option<f64>,
    /// The `xpath` id of the node the value came from.
    pub node: Option<String>,
    /// Since when it is in this state.
    pub since: Option<String>,
}

/// A page of change events.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ChangePage {
    /// The watch.
    pub watch: String,
    /// The events, newest first.
    pub changes: Vec<ChangeItem>,
    /// Pass as `before` for the next (older) page; absent on the last page.
    pub next_before: Option<i64>,
}

/// One semantic change.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ChangeItem {
    /// The event id (increasing).
    pub id: i64,
    /// When it was found.
    pub at: String,
    /// `update`, `insert`, `delete` or `move` for a data change; `layout`
    /// for a layout event (something the watch depends on moved or
    /// vanished), which is not a data change.
    pub kind: String,
    /// The snapshot that holds the new data, unless pruned.
    pub snapshot_id: Option<i64>,
    /// The change in data terms, one line.
    pub line: String,
    /// The change as `semclip diff --format json` gives it.
    #[schemars(with = "serde_json::Value")]
    pub change: Event,
}

/// A threshold's value history.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ValuePage {
    /// The watch.
    pub watch: String,
    /// The threshold.
    pub threshold: String,
    /// The newest values, oldest first.
    pub values: Vec<ValuePoint>,
}

/// One value read.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ValuePoint {
    /// When.
    pub at: String,
    /// The value.
    pub value: f64,
}

/// A check was queued.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct CheckQueued {
    /// The watch.
    pub watch: String,
    /// Always true: the scheduler runs it as soon as a slot is free.
    pub queued: bool,
}

/// An error.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ErrorBody {
    /// What went wrong.
    pub error: String,
}

/// Paging of change events.
#[derive(Debug, Deserialize)]
pub(crate) struct ChangeQuery {
    before: Option<i64>,
    limit: Option<usize>,
}

/// Paging of values.
#[derive(Debug, Deserialize)]
pub(crate) struct ValueQuery {
    limit: Option<usize>,
}

/// The summary of one watch.
pub(crate) fn summary(server: &Server, g: &Gathered, id: &str) -> WatchSummary {
    let watches = server.watches();
    let watch = watches.get(id);
    let r = row(server, g, id);
    WatchSummary {
        url: watch.is_some().then_some(r.url),
        state: r.health.name().to_owned(),
        last_check: r.last_check.map(rfc3339),
        last_success: g.statuses.get(id).and_then(|s| s.last_success).map(rfc3339),
        last_change: r.last_change.map(rfc3339),
        next_run: r.next_run.map(rfc3339),
        failures: r.failures,
        last_error: r.last_error,
        blocked: g
            .statuses
            .get(id)
            .filter(|s| s.failures > 0)
            .and_then(|s| s.blocked.clone()),
        snapshots: g.states.get(id).map_or(0, |s| s.snapshots),
        thresholds: r.thresholds,
        alarms: r.alarms,
        clips: watch
            .map(|w| {
                w.clips
                    .iter()
                    .map(|(name, c)| ClipInfo {
                        name: name.clone(),
                        description: c.description.clone(),
                        xpath: c.xpath.clone(),
                        public: c.public,
                        url: format!("{}/clips/{id}/{name}", server.base()),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        id: r.id,
        title: r.title,
    }
}

/// The thresholds of a configured watch with their stored states.
pub(crate) fn threshold_infos(server: &Server, g: &Gathered, id: &str) -> Vec<ThresholdInfo> {
    let watches = server.watches();
    let Some(watch) = watches.get(id) else {
        return Vec::new();
    };
    let records = g.thresholds.get(id).map_or(&[][..], Vec::as_slice);
    watch
        .thresholds
        .iter()
        .map(|t| {
            let r = records.iter().find(|r| r.name == t.name);
            ThresholdInfo {
                name: t.name.clone(),
                xpath: t.xpath.clone(),
                bounds: crate::monitor::threshold::describe(&Bounds::of(t)),
                state: r.map_or("unknown", |r| r.state.as_str()).to_owned(),
                value: r.and_then(|r| r.value),
                node: r.and_then(|r| r.node.clone()),
                since: r.map(|r| rfc3339(r.since)),
            }
        })
        .collect()
}

fn known(server: &Server, g: &Gathered, id: &str) -> Result<(), Error> {
    if server.watches().contains_key(id) || g.states.contains_key(id) {
        Ok(())
    } else {
        Err(Error::not_found(format!("no watch `{id}`"), Form::Json))
    }
}

/// `GET /api/watches`.
pub(crate) async fn watches(
    State(server): State<Arc<Server>>,
    headers: HeaderMap,
) -> Result<Json<Vec<WatchSummary>>, Error> {
    require(&server, &headers, Need::Read, Form::Json)?;
    let g = gather(&server).await?;
    Ok(Json(
        ids(&server, &g)
            .iter()
            .map(|id| summary(&server, &g, id))
            .collect(),
    ))
}

/// `GET /api/watches/{watch}`.
pub(crate) async fn watch(
    State(server): State<Arc<Server>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Json<WatchDetail>, Error> {
    require(&server, &headers, Need::Read, Form::Json)?;
    let g = gather(&server).await?;
    known(&server, &g, &id)?;
    Ok(Json(WatchDetail {
        watch: summary(&server, &g, &id),
        thresholds: threshold_infos(&server, &g, &id),
    }))
}

/// `GET /api/watches/{watch}/thresholds`.
pub(crate) async fn thresholds(
    State(server): State<Arc<Server>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Json<Vec<ThresholdInfo>>, Error> {
    require(&server, &headers, Need::Read, Form::Json)?;
    let g = gather(&server).await?;
    known(&server, &g, &id)?;
    Ok(Json(threshold_infos(&server, &g, &id)))
}

fn limit(l: Option<usize>) -> Result<usize, Error> {
    match l {
        None => Ok(DEFAULT_LIMIT),
        Some(0) => Err(Error::new(
            StatusCode::BAD_REQUEST,
            "limit must be at least 1",
            Form::Json,
        )),
        Some(n) => Ok(n.min(MAX_LIMIT)),
    }
}

/// `GET /api/watches/{watch}/changes?before=ID&limit=N`.
pub(crate) async fn changes(
    State(server): State<Arc<Server>>,
    Path(id): Path<String>,
    Query(q): Query<ChangeQuery>,
    headers: HeaderMap,
) -> Result<Json<ChangePage>, Error> {
    require(&server, &headers, Need::Read, Form::Json)?;
    let limit = limit(q.limit)?;
    let g = gather(&server).await?;
    known(&server, &g, &id)?;
    let watch = id.clone();
    let before = q.before;
    // One more than asked tells whether there is a next page.
    let mut rows = server
        .stores
        .run(move |s| s.events(&watch, before, limit + 1))
        .await
        .map_err(|e| Error::internal(&e, Form::Json))?;
    let more = rows.len() > limit;
    rows.truncate(limit);
    let next_before = if more {
        rows.last().map(|r| r.id)
    } else {
        None
    };
    Ok(Json(ChangePage {
        watch: id,
        changes: rows
            .into_iter()
            .map(|r| ChangeItem {
                id: r.id,
                at: rfc3339(r.at),
                line: r.event.line_without_kind(),
                kind: r.event.kind().to_owned(),
                snapshot_id: r.snapshot_id,
                change: r.event,
            })
            .collect(),
        next_before,
    }))
}

/// `GET /api/watches/{watch}/thresholds/{name}/values?limit=N`.
pub(crate) async fn values(
    State(server): State<Arc<Server>>,
    Path((id, name)): Path<(String, String)>,
    Query(q): Query<ValueQuery>,
    headers: HeaderMap,
) -> Result<Json<ValuePage>, Error> {
    require(&server, &headers, Need::Read, Form::Json)?;
    let limit = limit(q.limit)?;
    let configured = server
        .watches()
        .get(&id)
        .is_some_and(|w| w.thresholds.iter().any(|t| t.name == name));
    if !configured {
        return Err(Error::not_found(
            format!("watch `{id}` has no threshold `{name}`"),
            Form::Json,
        ));
    }
    let (w, n) = (id.clone(), name.clone());
    let values = server
        .stores
        .run(move |s| s.threshold_values(&w, &n, limit))
        .await
        .map_err(|e| Error::internal(&e, Form::Json))?;
    Ok(Json(ValuePage {
        watch: id,
        threshold: name,
        values: values
            .into_iter()
            .map(|(at, value)| ValuePoint {
                at: rfc3339(at),
                value,
            })
            .collect(),
    }))
}

/// `POST /api/watches/{watch}/check`.
pub(crate) async fn check_now(
    State(server): State<Arc<Server>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<(StatusCode, Json<CheckQueued>), Error> {
    require(&server, &headers, Need::Admin, Form::Json)?;
    if !server.watches().contains_key(&id) {
        return Err(Error::not_found(format!("no watch `{id}`"), Form::Json));
    }
    let Some(tx) = &server.check_now else {
        return Err(Error::new(
            StatusCode::CONFLICT,
            "no scheduler runs in this process (semclip serve): use semclip run",
            Form::Json,
        ));
    };
    tx.send(id.clone()).map_err(|_| {
        Error::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the scheduler is stopping",
            Form::Json,
        )
    })?;
    Ok((
        StatusCode::ACCEPTED,
        Json(CheckQueued {
            watch: id,
            queued: true,
        }),
    ))
}

/// `GET /metrics` (Prometheus text format; `read` scope when tokens exist).
pub(crate) async fn metrics(
    State(server): State<Arc<Server>>,
    headers: HeaderMap,
) -> Result<Response, Error> {
    require(&server, &headers, Need::Read, Form::Text)?;
    let counts = server
        .stores
        .run(|s| Ok((s.watches()?.len(), s.outbox()?)))
        .await;
    let watches = server.watches();
    match server
        .stores
        .run(move |s| super::series::exported(s, &watches))
        .await
    {
        Ok(values) => server.metrics.set_values(values),
        Err(error) => {
            tracing::warn!(error = %crate::ErrorChain(&error), "cannot read the exported values");
        }
    }
    if let Ok((watches, outbox)) = counts {
        let failed = outbox
            .iter()
            .filter(|o| o.state == crate::store::OutboxState::Failed)
            .count();
        server
            .metrics
            .watches
            .set(i64::try_from(watches).unwrap_or(i64::MAX));
        server
            .metrics
            .outbox_pending
            .set(i64::try_from(outbox.len() - failed).unwrap_or(i64::MAX));
        server
            .metrics
            .outbox_failed
            .set(i64::try_from(failed).unwrap_or(i64::MAX));
    }
    Ok((
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        server.metrics.encode(),
    )
        .into_response())
}
