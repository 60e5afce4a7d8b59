//! Inline SVG charts of values over time for the status pages: takes a
//! threshold's readings or a numeric node's series (see `crate::store`'s
//! series) and gives markup to insert in a page: a chart with axes and
//! labels ([`chart`]) or a sparkline small enough to stand beside a value
//! ([`sparkline`]).
//!
//! Pure rendering, as [`super::pages`]: no script and nothing loaded from
//! elsewhere, only inline SVG with presentation attributes that the pages'
//! style sheet recolours, so the pages' content security policy
//! (`default-src 'none'`, scripts from the server only, inline styles)
//! holds; every text from data (a label, a value) is escaped by `maud`.
//! The same input gives the same string.
//!
//! # Decisions
//!
//! - **Readings or steps.** A threshold's values are readings, one per
//!   check: joined by straight lines, a dot each. A series stores a point
//!   only when its value changes, so it is drawn as the step function it
//!   is: each value holds (flat) until the next point, the last until the
//!   chart's end (the time the page shows the data as of); a point without
//!   a value (the node was gone) leaves a gap until the next value.
//! - **Bounded by the caller.** The handlers read at most [`READ_POINTS`]
//!   points of a series and thin them (`series::downsample`) to
//!   [`SPARK_POINTS`] for a sparkline, [`CHART_POINTS`] for a chart; a
//!   step chart draws a dot per change only up to [`DOTS`] of them.
//! - **Accessible.** A chart is an `img` with a label that says how many
//!   values and their range; a sparkline's `<title>` names its node and
//!   says the same, and its lowest, highest and last values are text
//!   beside it.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use chrono::SecondsFormat;
use maud::{Markup, html};

use super::format::{fmt_value, plural, trimmed};
use crate::store::{Point, time};

/// Points a sparkline draws at most.
pub(super) const SPARK_POINTS: usize = 60;
/// Points a chart of a series draws at most.
pub(super) const CHART_POINTS: usize = 200;
/// The newest points of a series read for its charts, before thinning.
pub(super) const READ_POINTS: usize = 1000;
/// The most changes a step chart marks with a dot each (more would hide
/// the line under them).
const DOTS: usize = 60;

/// The colour of a series (the style sheet's `--series` overrides it).
const SERIES: &str = "#0969da";
/// The colour of bounds and marks.
const ALARM: &str = "#cf222e";

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

/// A sparkline's width, in CSS pixels and in its own coordinates.
const SPARK_W: f64 = 120.0;
/// A sparkline's height.
const SPARK_H: f64 = 24.0;
/// Room around a sparkline's line for its dots.
const SPARK_INSET: f64 = 3.0;

/// Where in its coordinate system a chart plots.
#[derive(Debug, Clone, Copy)]
struct Frame {
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
    /// Room above and below the values, as a share of their span.
    pad: f64,
}

/// The plot area of a [`chart`].
const CHART: Frame = Frame {
    left: PLOT_LEFT,
    right: PLOT_RIGHT,
    top: PLOT_TOP,
    bottom: PLOT_BOTTOM,
    pad: PAD,
};

/// The plot area of a [`sparkline`].
const SPARK: Frame = Frame {
    left: SPARK_INSET,
    right: SPARK_W - SPARK_INSET,
    top: SPARK_INSET,
    bottom: SPARK_H - SPARK_INSET,
    pad: 0.0,
};

/// What a chart draws.
#[derive(Debug, Clone, Copy)]
pub(super) enum Series<'a> {
    /// Readings (a threshold's values, one per check, oldest first),
    /// joined by straight lines; non-finite ones are left out.
    Readings(&'a [(SystemTime, f64)]),
    /// A step function (a node's series, oldest first): each point's
    /// value holds until the next point and the last until `end` (or its
    /// own time, when that is later); a point without a value starts a gap.
    Steps {
        /// The points.
        points: &'a [Point],
        /// Where the chart ends: the time its page shows the data as of.
        end: SystemTime,
    },
}

/// One point made ready to plot.
#[derive(Debug, Clone, Copy)]
struct Knot {
    at: SystemTime,
    /// `at` in seconds since the epoch.
    t: f64,
    /// The value; `None` for a gap (and for a value that is not finite).
    value: Option<f64>,
}

/// A series made ready to plot: its points, their span of time and range
/// of values.
#[derive(Debug)]
struct Plot {
    knots: Vec<Knot>,
    /// Drawn as steps (else as readings).
    steps: bool,
    /// The first time.
    start: SystemTime,
    /// The last time: the last reading's, or a step chart's end.
    end: SystemTime,
    /// The lowest value.
    vmin: f64,
    /// The highest value.
    vmax: f64,
    /// How many points have a value.
    valued: usize,
}

impl Plot {
    /// The plot of `series`; `None` when it has no finite value.
    fn of(series: Series<'_>) -> Option<Plot> {
        let knot = |at: SystemTime, value: Option<f64>| Knot {
            at,
            t: unix_seconds(at),
            value: value.filter(|v| v.is_finite()),
        };
        let (knots, end): (Vec<Knot>, Option<SystemTime>) = match series {
            Series::Readings(history) => (
                history
                    .iter()
                    .filter(|(_, v)| v.is_finite())
                    .map(|&(at, v)| knot(at, Some(v)))
                    .collect(),
                None,
            ),
            Series::Steps { points, end } => (
                points.iter().map(|p| knot(p.at, p.value)).collect(),
                Some(end),
            ),
        };
        let (vmin, vmax) = knots
            .iter()
            .filter_map(|k| k.value)
            .fold((f64::INFINITY, f64::NEG_INFINITY), widen);
        let valued = knots.iter().filter(|k| k.value.is_some()).count();
        let (first, last) = (knots.first()?.at, knots.last()?.at);
        (valued > 0).then(|| Plot {
            steps: end.is_some(),
            start: first,
            end: end.map_or(last, |end| end.max(last)),
            knots,
            vmin,
            vmax,
            valued,
        })
    }

    /// The value in force at `t` (seconds since the epoch): the last
    /// point's at or before it.
    fn value_at(&self, t: f64) -> Option<f64> {
        self.knots
            .iter()
            .take_while(|k| k.t <= t)
            .last()
            .and_then(|k| k.value)
    }

    /// The value now: the last point's (`None`: the node is gone).
    fn last(&self) -> Option<f64> {
        self.knots.last().and_then(|k| k.value)
    }
}

/// `(lo, hi)` widened to take in `v`.
fn widen((lo, hi): (f64, f64), v: f64) -> (f64, f64) {
    (lo.min(v), hi.max(v))
}

/// Maps times and values to coordinates within a [`Frame`].
struct Scale {
    frame: Frame,
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
    /// The scale of `plot` in `frame`, its values' range widened to take
    /// in `bounds`.
    fn new(frame: Frame, plot: &Plot, bounds: &[f64]) -> Scale {
        let (lo, hi) = bounds.iter().copied().fold((plot.vmin, plot.vmax), widen);
        Scale {
            frame,
            t0: unix_seconds(plot.start),
            t1: unix_seconds(plot.end),
            lo_half: lo / 2.0,
            hi_half: hi / 2.0,
        }
    }

    /// The x of a time (seconds since the epoch); centred when all times
    /// are equal.
    fn x(&self, t: f64) -> f64 {
        let Frame { left, right, .. } = self.frame;
        if self.t1 > self.t0 {
            left + (t - self.t0) / (self.t1 - self.t0) * (right - left)
        } else {
            f64::midpoint(left, right)
        }
    }

    /// The y of a value; in the middle when all values and bounds are equal.
    fn y(&self, v: f64) -> f64 {
        let Frame {
            top, bottom, pad, ..
        } = self.frame;
        let span = self.hi_half - self.lo_half;
        if span > 0.0 {
            let share = (v / 2.0 - self.lo_half) / span;
            bottom - (pad + share) / (1.0 + 2.0 * pad) * (bottom - top)
        } else {
            f64::midpoint(top, bottom)
        }
    }
}

/// The line of a plot: a polyline through readings, a path of steps.
fn trace(plot: &Plot, scale: &Scale, width: &str) -> Markup {
    if plot.steps {
        html! {
            path.series d=(step_path(plot, scale)) fill="none" stroke=(SERIES) stroke-width=(width)
                stroke-linejoin="round" {}
        }
    } else {
        let points = plot
            .knots
            .iter()
            .filter_map(|k| k.value.map(|v| (k.t, v)))
            .map(|(t, v)| format!("{},{}", fmt_coord(scale.x(t)), fmt_coord(scale.y(v))))
            .collect::<Vec<_>>()
            .join(" ");
        html! {
            polyline.series points=(points) fill="none" stroke=(SERIES) stroke-width=(width)
                stroke-linejoin="round" {}
        }
    }
}

/// The `d` of a step function: a value runs flat to the next point's
/// time, rises or falls there to the next value; a gap ends the subpath
/// and the next value starts a new one; the last value runs to the end.
fn step_path(plot: &Plot, scale: &Scale) -> String {
    let mut d = String::new();
    let mut open = false;
    for k in &plot.knots {
        let x = fmt_coord(scale.x(k.t));
        match (k.value, open) {
            (Some(v), false) => {
                let _ = write!(d, "M{x},{}", fmt_coord(scale.y(v)));
                open = true;
            }
            (Some(v), true) => {
                let _ = write!(d, "H{x}V{}", fmt_coord(scale.y(v)));
            }
            (None, true) => {
                let _ = write!(d, "H{x}");
                open = false;
            }
            (None, false) => {}
        }
    }
    if open {
        let _ = write!(d, "H{}", fmt_coord(scale.x(unix_seconds(plot.end))));
    }
    d
}

/// A chart of `series` with axes, its range and first and last times as
/// labels, a dot per reading (per change, for up to [`DOTS`] changes) and
/// horizontal dashed lines at `lines` (a threshold's bounds).
pub(super) fn chart(series: Series<'_>, lines: &[f64]) -> Markup {
    let view_box = format!("0 0 {} {}", fmt_coord(VIEW_W), fmt_coord(VIEW_H));
    let Some(plot) = Plot::of(series) else {
        return html! {
            svg xmlns="http://www.w3.org/2000/svg" viewBox=(view_box) width="100%"
                role="img" aria-label="no values yet" {
                text x=(fmt_coord(VIEW_W / 2.0)) y=(fmt_coord(VIEW_H / 2.0))
                    text-anchor="middle" fill="currentColor" font-size="14" { "no values yet" }
            }
        };
    };
    let bounds: Vec<f64> = lines.iter().copied().filter(|b| b.is_finite()).collect();
    let scale = Scale::new(CHART, &plot, &bounds);
    let (vmin, vmax) = (plot.vmin, plot.vmax);
    let label = format!(
        "value history: {}, from {} to {}",
        plural(plot.valued, "value", "values"),
        fmt_value(vmin),
        fmt_value(vmax)
    );
    let dots = !plot.steps || plot.valued <= DOTS;
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
                    stroke=(ALARM) stroke-width="1" stroke-dasharray="6 4" {}
                text.bound-label x=(fmt_coord(PLOT_RIGHT - 2.0)) y=(fmt_coord(scale.y(*b) - 3.0))
                    text-anchor="end" fill=(ALARM) { (fmt_value(*b)) }
            }
            (trace(&plot, &scale, "2"))
            @if dots {
                @for k in &plot.knots {
                    @if let Some(v) = k.value {
                        circle cx=(fmt_coord(scale.x(k.t))) cy=(fmt_coord(scale.y(v))) r="3" fill=(SERIES) {
                            title { (fmt_value(v)) " at " (time::rfc3339(k.at, SecondsFormat::Secs).unwrap_or_default()) }
                        }
                    }
                }
            }
            g.y-labels text-anchor="end" fill="currentColor" {
                text x=(fmt_coord(PLOT_LEFT - 6.0)) y=(fmt_coord(scale.y(vmax) + 4.0)) { (fmt_value(vmax)) }
                @if vmin < vmax {
                    text x=(fmt_coord(PLOT_LEFT - 6.0)) y=(fmt_coord(scale.y(vmin) + 4.0)) { (fmt_value(vmin)) }
                }
            }
            (time_labels(&plot, &scale))
        }
    }
}

/// The first and last times under a chart's x axis (one, centred, when
/// they are equal).
fn time_labels(plot: &Plot, scale: &Scale) -> Markup {
    let (t0, t1) = (unix_seconds(plot.start), unix_seconds(plot.end));
    let long = t1 - t0 >= 86_400.0;
    let y = fmt_coord(PLOT_BOTTOM + 16.0);
    let (first, last) = (time_label(plot.start, long), time_label(plot.end, long));
    html! {
        g.x-labels fill="currentColor" {
            @if t1 > t0 {
                text x=(fmt_coord(scale.x(t0))) y=(y) text-anchor="start" { (first) }
                text x=(fmt_coord(scale.x(t1))) y=(y) text-anchor="end" { (last) }
            } @else {
                text x=(fmt_coord(scale.x(t0))) y=(y) text-anchor="middle" { (first) }
            }
        }
    }
}

/// A sparkline of a node's series: `points` as steps up to `end` in a
/// small SVG whose `<title>` names the node (`label`) and says how many
/// values it held and their range, a dot on the value now, a ring on the
/// value in force at `mark` (a change the page is about) when that falls
/// within, and the lowest, highest and last values as text beside it.
pub(super) fn sparkline(
    label: &str,
    points: &[Point],
    end: SystemTime,
    mark: Option<SystemTime>,
) -> Markup {
    let Some(plot) = Plot::of(Series::Steps { points, end }) else {
        return html! { span.spark.none title=(label) { "no values kept" } };
    };
    let scale = Scale::new(SPARK, &plot, &[]);
    let (vmin, vmax, last) = (plot.vmin, plot.vmax, plot.last());
    let now = match last {
        Some(v) => format!("last {}", fmt_value(v)),
        None => "now gone".to_owned(),
    };
    let title = format!(
        "{label}: {}, from {} to {}, {now}",
        plural(plot.valued, "value", "values"),
        fmt_value(vmin),
        fmt_value(vmax),
    );
    let ring = mark.and_then(|m| {
        let t = unix_seconds(m);
        let within = plot.start <= m && m <= plot.end;
        within
            .then(|| plot.value_at(t))
            .flatten()
            .map(|v| (fmt_coord(scale.x(t)), fmt_coord(scale.y(v))))
    });
    let end_x = fmt_coord(scale.x(unix_seconds(plot.end)));
    html! {
        span.spark {
            svg.spark xmlns="http://www.w3.org/2000/svg"
                viewBox={ "0 0 " (fmt_coord(SPARK_W)) " " (fmt_coord(SPARK_H)) }
                width=(fmt_coord(SPARK_W)) height=(fmt_coord(SPARK_H))
                role="img" data-points=(plot.knots.len()) data-values=(plot.valued) {
                title { (title) }
                (trace(&plot, &scale, "1.5"))
                @if let Some(v) = last {
                    circle.last cx=(end_x) cy=(fmt_coord(scale.y(v))) r="2" fill=(SERIES) {}
                }
                @if let Some((x, y)) = ring {
                    circle.mark cx=(x) cy=(y) r="3.5" fill="none" stroke=(ALARM) stroke-width="1.5" {}
                }
            }
            " "
            span.spark-labels {
                @if vmin < vmax {
                    "min " span.spark-min { (fmt_value(vmin)) }
                    " · max " span.spark-max { (fmt_value(vmax)) } " · "
                }
                "last " span.spark-last {
                    @match last {
                        Some(v) => (fmt_value(v)),
                        None => "gone",
                    }
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

/// A number for the SVG: at most 2 decimals, no trailing zeros, no `-0`.
fn fmt_coord(x: f64) -> String {
    if !x.is_finite() {
        return "0".to_owned();
    }
    trimmed(&format!("{x:.2}"))
}

/// Seconds since the epoch (negative before it).
fn unix_seconds(t: SystemTime) -> f64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]
mod tests {
    use std::time::Duration;

    use super::*;

    /// 2023-11-14T22:13:20Z.
    fn now() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_700_000_000)
    }

    fn ago(secs: u64) -> SystemTime {
        now() - Duration::from_secs(secs)
    }

    /// A chart of readings, as a string.
    fn readings(history: &[(SystemTime, f64)], lines: &[f64]) -> String {
        chart(Series::Readings(history), lines).into_string()
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

    #[test]
    fn chart_scales_values_and_bounds() {
        let history = vec![
            (ago(300), 10.0),
            (ago(200), f64::NAN),
            (ago(150), 30.0),
            (ago(100), f64::INFINITY),
            (ago(0), 20.0),
        ];
        let svg = readings(&history, &[25.0, f64::NAN]);
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
        assert_eq!(svg, readings(&history, &[25.0, f64::NAN]));
        // Everything closed (no void elements inside SVG).
        assert_eq!(svg.matches("<line").count(), svg.matches("</line>").count());
    }

    #[test]
    fn chart_bounds_widen_the_range() {
        let svg = readings(&[(ago(60), 0.0), (ago(0), 100.0)], &[200.0]);
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
            let svg = readings(&history, &[1.0]);
            assert!(svg.contains(">no values yet</text>"));
            assert!(svg.contains("aria-label=\"no values yet\""));
            assert!(!svg.contains("<polyline"));
        }
        // One point: centred, in the middle.
        let svg = readings(&[(now(), 5.0)], &[]);
        assert_eq!(polyline(&svg), vec![(326.0, 92.0)]);
        // Equal values: a flat line in the middle, one y label.
        let svg = readings(&[(ago(10), 5.0), (ago(5), 5.0), (now(), 5.0)], &[]);
        assert!(polyline(&svg).iter().all(|&(_, y)| y == 92.0));
        assert_eq!(svg.matches(">5</text>").count(), 1);
        // Equal times: centred.
        let svg = readings(&[(now(), 1.0), (now(), 2.0)], &[]);
        assert!(polyline(&svg).iter().all(|&(x, _)| x == 326.0));
        // Huge values do not overflow.
        let svg = readings(&[(ago(1), -f64::MAX), (now(), f64::MAX)], &[]);
        let points = polyline(&svg);
        assert!(points[0].1 > points[1].1);
        // Spans of a day or more label dates.
        let svg = readings(&[(ago(2 * 86_400), 1.0), (now(), 2.0)], &[]);
        assert!(svg.contains(">11-12 22:13</text>") && svg.contains(">11-14 22:13</text>"));
    }

    #[test]
    fn coordinates_have_at_most_two_decimals() {
        assert_eq!(fmt_coord(1.0), "1");
        assert_eq!(fmt_coord(1.5), "1.5");
        assert_eq!(fmt_coord(17.272_727), "17.27");
        assert_eq!(fmt_coord(-0.001), "0");
        assert_eq!(fmt_coord(f64::NAN), "0");
        let svg = readings(
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

    /// `(seconds ago, value)` as points.
    fn points(of: &[(u64, Option<f64>)]) -> Vec<Point> {
        of.iter()
            .map(|&(secs, value)| Point {
                at: ago(secs),
                value,
            })
            .collect()
    }

    /// The `d` of the one series path.
    fn path_d(svg: &str) -> &str {
        let ds = attrs(svg, "d");
        assert_eq!(ds.len(), 1, "one path: {svg}");
        ds[0]
    }

    #[test]
    fn a_step_chart_holds_each_value_until_the_next_and_gaps_where_the_node_was_gone() {
        let series = points(&[
            (300, Some(10.0)),
            (200, Some(30.0)),
            (150, None),
            (100, Some(20.0)),
        ]);
        let svg = chart(
            Series::Steps {
                points: &series,
                end: now(),
            },
            &[],
        )
        .into_string();
        assert!(svg.contains("aria-label=\"value history: 3 values, from 10 to 30\""));
        // 10 from the left edge to 200 s ago (64 + 100/300 * 524), up to
        // 30 until the node went 150 s ago; back 100 s ago at 20, which
        // holds to the end (now, the right edge).
        assert_eq!(path_d(&svg), "M64,164.73H238.67V19.27H326M413.33,92H588");
        assert!(!svg.contains("<polyline"));
        assert_eq!(svg.matches("<circle").count(), 3, "a dot per value");
        assert!(svg.contains("<title>30 at 2023-11-14T22:10:00Z</title>"));
        // The time axis runs to the end, not to the last point.
        assert!(svg.contains(">22:08:20</text>") && svg.contains(">22:13:20</text>"));
        // An end before the last point is the last point's time.
        let early = chart(
            Series::Steps {
                points: &series,
                end: ago(500),
            },
            &[],
        )
        .into_string();
        assert!(path_d(&early).ends_with("M588,92H588"), "{early}");
    }

    #[test]
    fn a_step_chart_of_many_changes_draws_the_line_alone() {
        let many: Vec<(u64, Option<f64>)> = (0..=DOTS as u64)
            .map(|i| (1000 - i, Some(i as f64)))
            .collect();
        let svg = chart(
            Series::Steps {
                points: &points(&many),
                end: now(),
            },
            &[],
        )
        .into_string();
        assert_eq!(svg.matches("<circle").count(), 0);
        assert_eq!(path_d(&svg).matches('V').count(), DOTS);
        let fewer = chart(
            Series::Steps {
                points: &points(&many[1..]),
                end: now(),
            },
            &[],
        )
        .into_string();
        assert_eq!(fewer.matches("<circle").count(), DOTS);
    }

    #[test]
    fn a_sparkline_names_its_node_and_says_its_range_and_last_value() {
        let series = points(&[(600, Some(251.3)), (300, Some(268.4)), (60, Some(305.4))]);
        let html = sparkline("Shares / GAZP / Last", &series, now(), Some(ago(300))).into_string();
        assert!(
            html.starts_with("<span class=\"spark\"><svg class=\"spark\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 120 24\" width=\"120\" height=\"24\" role=\"img\" data-points=\"3\" data-values=\"3\"><title>Shares / GAZP / Last: 3 values, from 251.3 to 305.4, last 305.4</title>"),
            "{html}"
        );
        // Steps over the whole width (3 to 117), lowest at the bottom (21),
        // highest at the top (3); 268.4 is 17.1/54.1 of the way up.
        assert_eq!(path_d(&html), "M3,21H60V15.31H105.6V3H117");
        assert!(
            html.contains("<circle class=\"last\" cx=\"117\" cy=\"3\""),
            "{html}"
        );
        // The change 300 s ago: a ring on the value it brought.
        assert!(
            html.contains("<circle class=\"mark\" cx=\"60\" cy=\"15.31\""),
            "{html}"
        );
        assert!(html.contains(
            "min <span class=\"spark-min\">251.3</span> · max <span class=\"spark-max\">305.4</span> · last <span class=\"spark-last\">305.4</span>"
        ), "{html}");
        // No mark outside the series' time, or without one.
        for mark in [Some(ago(700)), Some(now() + Duration::from_secs(1)), None] {
            let html = sparkline("x", &series, now(), mark).into_string();
            assert!(!html.contains("class=\"mark\""), "{mark:?}: {html}");
        }
        // Deterministic, and nothing but inline SVG: no script, no style
        // element, nothing loaded.
        assert_eq!(
            html,
            sparkline("Shares / GAZP / Last", &series, now(), Some(ago(300))).into_string()
        );
        assert!(!html.contains("<script") && !html.contains("<style") && !html.contains("href"));
    }

    #[test]
    fn sparkline_edge_cases() {
        // One value: a flat line in the middle, only its last value.
        let one = sparkline("n", &points(&[(60, Some(249.1))]), now(), None).into_string();
        assert_eq!(path_d(&one), "M3,12H117");
        assert!(one.contains("data-points=\"1\" data-values=\"1\""), "{one}");
        assert!(
            !one.contains("spark-min") && !one.contains("spark-max"),
            "{one}"
        );
        assert!(
            one.contains("last <span class=\"spark-last\">249.1</span>"),
            "{one}"
        );
        // Gone now: the line stops where it went, no dot on a last value.
        let gone = sparkline(
            "n",
            &points(&[(600, Some(1.0)), (300, Some(2.0)), (60, None)]),
            now(),
            None,
        )
        .into_string();
        assert_eq!(path_d(&gone), "M3,21H60V3H105.6");
        assert!(
            gone.contains("data-points=\"3\" data-values=\"2\""),
            "{gone}"
        );
        assert!(gone.contains("now gone</title>"), "{gone}");
        assert!(!gone.contains("class=\"last\""), "{gone}");
        assert!(
            gone.contains("last <span class=\"spark-last\">gone</span>"),
            "{gone}"
        );
        // Nothing with a value kept: a word, no SVG.
        for nothing in [vec![], points(&[(60, None)])] {
            let html = sparkline("n", &nothing, now(), None).into_string();
            assert_eq!(
                html,
                "<span class=\"spark none\" title=\"n\">no values kept</span>"
            );
        }
        // Text from a page is escaped.
        let hostile = "<script>alert(1)</script>\" onload=\"x";
        let html = sparkline(hostile, &points(&[(60, Some(1.0))]), now(), None).into_string();
        assert!(!html.contains("<script"), "{html}");
        assert!(
            html.contains(
                "<title>&lt;script&gt;alert(1)&lt;/script&gt;&quot; onload=&quot;x: 1 value"
            ),
            "{html}"
        );
    }
}
