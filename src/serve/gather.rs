//! What the store and the watch files say of every watch, read once per
//! request and shared by the JSON API and the status pages, so both show a
//! watch the same way.

use std::collections::HashMap;
use std::sync::Arc;

use super::Server;
use super::error::{Error, Form};
use super::view::{Health, WatchRow};
use crate::store::{Level, ThresholdRecord, WatchState, WatchStatus};

/// What the store says of every watch.
pub(crate) struct Gathered {
    /// Status by watch.
    pub statuses: HashMap<String, WatchStatus>,
    /// Snapshot state by watch.
    pub states: HashMap<String, WatchState>,
    /// Threshold records by watch.
    pub thresholds: HashMap<String, Vec<ThresholdRecord>>,
}

/// Reads the status of every watch.
pub(crate) async fn gather(server: &Arc<Server>) -> Result<Gathered, Error> {
    server
        .stores
        .run(|s| {
            let statuses: HashMap<String, WatchStatus> = s
                .statuses()?
                .into_iter()
                .map(|st| (st.watch.clone(), st))
                .collect();
            let states: HashMap<String, WatchState> = s
                .watches()?
                .into_iter()
                .map(|w| (w.id.clone(), w))
                .collect();
            let mut thresholds = HashMap::new();
            for id in statuses.keys() {
                thresholds.insert(id.clone(), s.thresholds(id)?);
            }
            Ok(Gathered {
                statuses,
                states,
                thresholds,
            })
        })
        .await
        .map_err(|e| Error::internal(&e, Form::Json))
}

/// Every watch id to show: the configured ones, then the store's others.
pub(crate) fn ids(server: &Server, g: &Gathered) -> Vec<String> {
    let watches = server.watches();
    let mut ids: Vec<String> = watches.keys().cloned().collect();
    let mut extra: Vec<String> = g
        .states
        .keys()
        .filter(|k| !watches.contains_key(*k))
        .cloned()
        .collect();
    extra.sort();
    ids.extend(extra);
    ids
}

/// One watch's state as the store and the watch files give it: the one
/// place both the API and the status pages read it from.
pub(crate) fn row(server: &Server, g: &Gathered, id: &str) -> WatchRow {
    let watches = server.watches();
    let watch = watches.get(id);
    let status = g.statuses.get(id);
    let records = g.thresholds.get(id).map_or(&[][..], Vec::as_slice);
    WatchRow {
        id: id.to_owned(),
        title: watch.and_then(|w| w.title.clone()),
        url: watch.map(|w| w.url.to_string()).unwrap_or_default(),
        health: Health::of(watch.is_some(), status),
        last_check: status.and_then(|s| s.last_attempt),
        last_change: g.states.get(id).map(|s| s.last_changed),
        next_run: status.and_then(|s| s.next_run),
        failures: status.map_or(0, |s| s.failures),
        last_error: status
            .filter(|s| s.failures > 0)
            .and_then(|s| s.last_error.clone()),
        alarms: records.iter().filter(|r| r.state == Level::Alarm).count(),
        thresholds: watch.map_or(records.len(), |w| w.thresholds.len()),
    }
}
