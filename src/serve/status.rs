//! The status pages: `/status` (every watch) and `/status/{watch}` (its
//! clips rendered, recent changes, layout events apart from them,
//! thresholds with a chart of each value, and its values over time with
//! a sparkline each).
//! Gathers the data into [`super::view`] types; [`super::pages`] renders.

use std::sync::Arc;
use std::time::SystemTime;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};

use super::Server;
use super::auth::Need;
use super::chart::{READ_POINTS, SPARK_POINTS};
use super::clip::ClipKey;
use super::clips::{clip_data, html_of};
use super::error::{Error, Form, require};
use super::gather::{gather, ids, row};
use super::series::{downsample, for_page};
use super::view::{ChangeView, ClipView, SeriesView, ThresholdView, WatchPage, WatchRow};
use crate::config::Watch;
use crate::monitor::threshold::Bounds;
use crate::store::{LAYOUT, Store, StoreError};

/// Recent changes on a watch page.
const CHANGES: usize = 30;

/// Values per chart.
const VALUES: usize = 200;

/// Series listed on a watch page, at most.
const SERIES_SHOWN: usize = 50;

/// A watch page's values (see [`super::series::for_page`]), each with its
/// newest points thinned for a sparkline; and how many series the watch
/// has.
fn series_views(store: &Store, watch: &str) -> Result<(Vec<SeriesView>, usize), StoreError> {
    let (found, total) = for_page(store, watch, SERIES_SHOWN)?;
    let mut views = Vec::with_capacity(found.len());
    for f in found {
        let points = store.series_latest(watch, &f.head.node, READ_POINTS)?;
        views.push(SeriesView {
            points: downsample(points, SPARK_POINTS).0,
            node: f.head.node,
            label: f.label,
            value: f.head.value,
            since: f.head.since,
        });
    }
    Ok((views, total))
}

/// A status page's answer: HTML, revalidated on every view.
pub(super) fn html(body: String) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// `GET /status`.
pub(crate) async fn overview(
    State(server): State<Arc<Server>>,
    headers: HeaderMap,
) -> Result<Response, Error> {
    require(&server, &headers, Need::Read, Form::Html)?;
    let g = gather(&server).await.map_err(html_error)?;
    let rows: Vec<WatchRow> = ids(&server, &g)
        .iter()
        .map(|id| row(&server, &g, id))
        .collect();
    let replicas = server.replicas();
    Ok(html(super::pages::overview(
        &rows,
        replicas.as_ref(),
        SystemTime::now(),
    )))
}

fn html_error(mut e: Error) -> Error {
    e.form = Form::Html;
    e
}

/// The named clips of `watch` (id `id`), each rendered by its HTML
/// stylesheet or with why not.
async fn clip_views(server: &Arc<Server>, id: &str, watch: &Watch) -> Vec<ClipView> {
    let mut clips = Vec::new();
    for (name, c) in &watch.clips {
        let key = ClipKey {
            watch: id.to_owned(),
            clip: Some(name.clone()),
        };
        let (html, error) = match clip_data(server, &key, Form::Html).await {
            Ok(data) if data.count == 0 => (
                None,
                Some("selects nothing in the current snapshot".to_owned()),
            ),
            Ok(data) => match html_of(server, &key, &data, Vec::new()).await {
                Ok(h) => (Some(h.to_string()), None),
                Err(e) => {
                    tracing::error!(watch = %id, clip = %name, error = %crate::ErrorChain(&e), "cannot render a clip");
                    (
                        None,
                        Some("cannot be rendered (see the server log)".to_owned()),
                    )
                }
            },
            Err(e) => (None, Some(e.message)),
        };
        clips.push(ClipView {
            name: name.clone(),
            description: c.description.clone(),
            xpath: c.xpath.clone(),
            html,
            error,
        });
    }
    clips
}

/// `GET /status/{watch}`.
pub(crate) async fn watch(
    State(server): State<Arc<Server>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Error> {
    require(&server, &headers, Need::Read, Form::Html)?;
    let g = gather(&server).await.map_err(html_error)?;
    let watches = server.watches();
    let watch = watches.get(&id).cloned();
    if watch.is_none() && !g.states.contains_key(&id) {
        return Err(Error::not_found(format!("no watch `{id}`"), Form::Html));
    }
    let row = row(&server, &g, &id);

    let clips = match &watch {
        Some(w) => clip_views(&server, &id, w).await,
        None => Vec::new(),
    };

    let w = id.clone();
    let names: Vec<String> = watch
        .iter()
        .flat_map(|w| w.thresholds.iter().map(|t| t.name.clone()))
        .collect();
    let (events, histories, (values, series_total)) = server
        .stores
        .run(move |s| {
            let events = s.events(&w, None, CHANGES)?;
            let mut histories = Vec::new();
            for n in &names {
                histories.push(s.threshold_values(&w, n, VALUES)?);
            }
            Ok((events, histories, series_views(s, &w)?))
        })
        .await
        .map_err(|e| Error::internal(&e, Form::Html))?;
    // Layout events are listed apart: they are not data changes.
    let (layout, changes): (Vec<ChangeView>, Vec<ChangeView>) = events
        .into_iter()
        .map(|e| ChangeView {
            id: e.id,
            at: e.at,
            line: e.event.line_without_kind(),
            kind: e.event.kind().to_owned(),
        })
        .partition(|c| c.kind == LAYOUT);
    let records = g.thresholds.get(&id).map_or(&[][..], Vec::as_slice);
    let thresholds = watch
        .iter()
        .flat_map(|w| w.thresholds.iter())
        .zip(histories)
        .map(|(t, history)| {
            let r = records.iter().find(|r| r.name == t.name);
            let b = Bounds::of(t);
            let mut lines: Vec<f64> = b.above.into_iter().chain(b.below).collect();
            if let Some((lo, hi)) = b.outside {
                lines.extend([lo, hi]);
            }
            ThresholdView {
                name: t.name.clone(),
                xpath: t.xpath.clone(),
                bounds: crate::monitor::threshold::describe(&b),
                state: r.map_or("unknown", |r| r.state.as_str()).to_owned(),
                value: r.and_then(|r| r.value),
                since: r.map(|r| r.since),
                lines,
                history,
            }
        })
        .collect();
    let page = WatchPage {
        row,
        clips,
        changes,
        layout,
        thresholds,
        values,
        series_total,
    };
    Ok(html(super::pages::watch(&page, SystemTime::now())))
}
