//! Prometheus metrics of one semclip process: what the daemon's checks,
//! outbox and HTTP server count, encoded in the text exposition format at
//! `GET /metrics`.
//!
//! One [`Metrics`] is made per process (per server in tests) and shared by
//! `Arc`; the counters are lock-free. Gauges that describe the store (watches,
//! alerts waiting in the outbox) are read from it at scrape time by the
//! server, not kept here.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

use crate::monitor::check::{CheckReport, PageOutcome};

/// Labels of a check: its outcome.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CheckLabels {
    /// `first`, `changed`, `unchanged`, `not_modified` or `failed`.
    pub outcome: &'static str,
}

/// Labels of a clip request: the representation and the status code.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClipLabels {
    /// `xml`, `json`, `html`, `rdf`, `ttl`, or `none` before it was chosen.
    pub format: &'static str,
    /// The response status (`200`, `304`, `404`, ...).
    pub status: u16,
}

/// Labels of a notice heard from another replica: its kind.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NoticeLabels {
    /// `check` or `reload`.
    pub kind: &'static str,
}

/// Labels of an exported value (`metrics: true`): its watch, the clip or
/// threshold that takes it in (the other one empty) and the node's
/// semantic id, cut to [`MAX_NODE_LABEL`] bytes.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ValueLabels {
    /// The watch id.
    pub watch: String,
    /// The clip's name, for a clip's value.
    pub clip: String,
    /// The threshold's name, for a threshold's value.
    pub threshold: String,
    /// The node's semantic id (empty for a threshold whose XPath gives a
    /// number, not a node).
    pub node: String,
}

/// Most bytes of a `node` label: a label value is bounded, whatever the
/// page's keys.
pub const MAX_NODE_LABEL: usize = 256;

/// Most values one watch exports: a page cannot add series to a scrape
/// without bound.
pub const MAX_VALUES_PER_WATCH: usize = 100;

/// Every metric of the process.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// Checks finished, by outcome.
    pub checks: Family<CheckLabels, Counter>,
    /// Fetch durations, in seconds (retries and host spacing included).
    pub fetch_seconds: Histogram,
    /// Semantic changes found.
    pub changes: Counter,
    /// Layout events raised (not counted among the changes).
    pub layout_events: Counter,
    /// Alerts queued (one per alert, whatever the number of notifiers).
    pub alerts_queued: Counter,
    /// Outbox rows delivered.
    pub alerts_sent: Counter,
    /// Outbox rows given up on.
    pub alerts_failed: Counter,
    /// Checks of a run claimed after another replica's lease on it
    /// expired (the run is checked a second time).
    pub checks_rerun: Counter,
    /// Notices heard from other replicas (`LISTEN/NOTIFY`), by kind.
    pub notices: Family<NoticeLabels, Counter>,
    /// 1 when this replica's watch set differs from the one most live
    /// replicas run, else 0.
    pub watch_set_mismatch: Gauge,
    /// Live replicas sharing the database (0 on SQLite).
    pub replicas_live: Gauge,
    /// Live replicas whose watch set differs from the one most run.
    pub replicas_differing: Gauge,
    /// Clip requests, by format and status.
    pub clip_requests: Family<ClipLabels, Counter>,
    /// Watches in the store (set at scrape time).
    pub watches: Gauge,
    /// Outbox rows waiting for delivery (set at scrape time).
    pub outbox_pending: Gauge,
    /// Outbox rows given up on and kept (set at scrape time).
    pub outbox_failed: Gauge,
    /// The values watches export (set at scrape time: see
    /// [`Metrics::set_values`]).
    values: Family<ValueLabels, Gauge<f64, AtomicU64>>,
    /// Values left out by [`MAX_VALUES_PER_WATCH`] (set at scrape time).
    pub values_dropped: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// A registry with every metric at zero.
    #[expect(
        clippy::too_many_lines,
        reason = "registers every metric: a list, not logic"
    )]
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("semclip");
        let checks = Family::<CheckLabels, Counter>::default();
        registry.register("checks", "Checks finished, by outcome", checks.clone());
        // 5 ms .. about 82 s.
        let fetch_seconds = Histogram::new(
            prometheus_client::metrics::histogram::exponential_buckets(0.005, 2.0, 15),
        );
        registry.register_with_unit(
            "fetch_duration",
            "Duration of page fetches, retries included",
            prometheus_client::registry::Unit::Seconds,
            fetch_seconds.clone(),
        );
        let changes = Counter::default();
        registry.register("changes", "Semantic changes found", changes.clone());
        let layout_events = Counter::default();
        registry.register(
            "layout_events",
            "Layout events raised (something a watch depends on moved or vanished; not changes)",
            layout_events.clone(),
        );
        let alerts_queued = Counter::default();
        registry.register(
            "alerts_queued",
            "Alerts raised and queued",
            alerts_queued.clone(),
        );
        let alerts_sent = Counter::default();
        registry.register(
            "alerts_sent",
            "Alert deliveries that succeeded (per notifier)",
            alerts_sent.clone(),
        );
        let alerts_failed = Counter::default();
        registry.register(
            "alerts_failed",
            "Alert deliveries given up on (per notifier)",
            alerts_failed.clone(),
        );
        let checks_rerun = Counter::default();
        registry.register(
            "checks_rerun",
            "Checks of a run taken over after another replica's lease on it expired",
            checks_rerun.clone(),
        );
        let watch_set_mismatch = Gauge::default();
        registry.register(
            "replica_watch_set_mismatch",
            "1 when this replica's watch set differs from the one most live replicas run",
            watch_set_mismatch.clone(),
        );
        let replicas_live = Gauge::default();
        registry.register(
            "replicas_live",
            "Live replicas sharing the database, this one included",
            replicas_live.clone(),
        );
        let replicas_differing = Gauge::default();
        registry.register(
            "replicas_differing",
            "Live replicas whose watch set differs from the one most run",
            replicas_differing.clone(),
        );
        let notices = Family::<NoticeLabels, Counter>::default();
        registry.register(
            "replica_notices",
            "Notices heard from other replicas (LISTEN/NOTIFY), by kind",
            notices.clone(),
        );
        let clip_requests = Family::<ClipLabels, Counter>::default();
        registry.register(
            "clip_requests",
            "Clip requests, by format and status (304: served from the client's cache)",
            clip_requests.clone(),
        );
        let watches = Gauge::default();
        registry.register(
            "watches",
            "Watches with a snapshot in the store",
            watches.clone(),
        );
        let outbox_pending = Gauge::default();
        registry.register(
            "outbox_pending",
            "Alert deliveries waiting in the outbox",
            outbox_pending.clone(),
        );
        let outbox_failed = Gauge::default();
        registry.register(
            "outbox_failed",
            "Alert deliveries given up on and kept in the outbox",
            outbox_failed.clone(),
        );
        let values = Family::<ValueLabels, Gauge<f64, AtomicU64>>::default();
        registry.register(
            "value",
            "A watched value (metrics: true on the watch, clip or threshold)",
            values.clone(),
        );
        let values_dropped = Gauge::default();
        registry.register(
            "values_dropped",
            "Watched values not exported: over the per-watch cap",
            values_dropped.clone(),
        );
        Metrics {
            registry,
            values,
            values_dropped,
            checks,
            fetch_seconds,
            changes,
            layout_events,
            alerts_queued,
            alerts_sent,
            alerts_failed,
            checks_rerun,
            notices,
            watch_set_mismatch,
            replicas_live,
            replicas_differing,
            clip_requests,
            watches,
            outbox_pending,
            outbox_failed,
        }
    }

    /// Counts a finished check.
    pub fn checked(&self, report: &CheckReport) {
        let outcome = match &report.outcome {
            PageOutcome::First => "first",
            PageOutcome::Changed(changes) => {
                self.changes.inc_by(changes.len() as u64);
                "changed"
            }
            PageOutcome::Unchanged => "unchanged",
            PageOutcome::NotModified => "not_modified",
            PageOutcome::Failed(_) => "failed",
            PageOutcome::Blocked(_) => "blocked",
        };
        self.checks.get_or_create(&CheckLabels { outcome }).inc();
        self.fetch_seconds.observe(report.fetch_time.as_secs_f64());
        self.alerts_queued.inc_by(report.alerts.len() as u64);
        if report.layout.is_some() {
            self.layout_events.inc();
        }
    }

    /// Counts a clip request.
    pub fn clip_request(&self, format: &'static str, status: u16) {
        self.clip_requests
            .get_or_create(&ClipLabels { format, status })
            .inc();
    }

    /// Replaces the exported values with `values` (those of a watch past
    /// [`MAX_VALUES_PER_WATCH`] counted in `values_dropped`, not set): a
    /// value no longer exported leaves the scrape.
    pub fn set_values(&self, values: Vec<(ValueLabels, f64)>) {
        self.values.clear();
        let mut per_watch: std::collections::HashMap<String, usize> =
            std::collections::HashMap::new();
        let mut dropped = 0i64;
        for (mut labels, value) in values {
            let n = per_watch.entry(labels.watch.clone()).or_default();
            *n += 1;
            if *n > MAX_VALUES_PER_WATCH {
                dropped += 1;
                continue;
            }
            if labels.node.len() > MAX_NODE_LABEL {
                let mut cut = MAX_NODE_LABEL;
                while !labels.node.is_char_boundary(cut) {
                    cut -= 1;
                }
                labels.node.truncate(cut);
            }
            self.values.get_or_create(&labels).set(value);
        }
        self.values_dropped.set(dropped);
    }

    /// The text exposition of every metric.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}
