//! A watch file: its id, url (through the fence), schedule, clips,
//! thresholds, `on_change`, `failures`, `layout`, `session` and `keys`
//! (its `fetch` section is [`super::fetch`]'s).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use url::Url;

use super::fetch::watch_fetch;
use super::{Ctx, valid_id, xpath_list};
use crate::config::raw::{
    Pos, RawClip, RawExtract, RawFailures, RawKeyColumns, RawLayout, RawMonitor, RawOnChange,
    RawSchedule, RawTableKey, RawThreshold, RawWatch, Sp,
};
use crate::config::schedule::{Schedule, parse_cron};
use crate::config::tree::join;
use crate::config::{
    Clip, DEFAULT_MAX_DRIFT, DaemonConfig, ExtractSpec, FailurePolicy, Layout, OnChange, TableKey,
    Threshold, Watch,
};
use crate::page::fence::Fence;
use crate::xpath::XPathType;

pub(super) fn watch(
    raw: Sp<RawWatch>,
    daemon: &DaemonConfig,
    fence: &Fence,
    known: Option<&BTreeSet<String>>,
    cx: &mut Ctx,
) -> Option<(Watch, Pos)> {
    let root_at = raw.at;
    let raw = raw.value;
    let (id, id_at) = watch_id(raw.id.as_ref(), root_at, cx);
    let url = page_url(&raw.url, fence, public_clip(&raw), cx);
    let schedule = schedule(&raw.schedule, cx);
    let fetch = watch_fetch(raw.fetch.as_ref().map(|f| &f.value), &daemon.fetch, cx);
    if let (Some(f), Some(raw_fetch), Some(url)) = (&fetch, &raw.fetch, &url)
        && f.render.is_some()
        && !matches!(url.scheme(), "http" | "https")
    {
        cx.err(
            raw_fetch.at,
            "fetch.render",
            "`render: browser` needs an http or https URL",
        );
    }
    let ignore = xpath_list(raw.ignore.as_ref(), "ignore", cx);
    let blocked = xpath_list(raw.blocked.as_ref(), "blocked", cx);
    let mut clips = BTreeMap::new();
    for (name, c) in raw.clips.iter().flatten() {
        clips.insert(name.clone(), clip(name, c, daemon, cx));
    }
    let thresholds = thresholds(raw.thresholds.as_ref(), known, cx);
    let on_change = raw
        .on_change
        .as_ref()
        .map(|oc| on_change(&oc.value, known, cx));
    let failures = failure_policy(raw.failures.as_ref(), daemon, known, cx);
    let data_only = data_only(&raw, &clips, cx);
    let layout = match &raw.layout {
        None => Layout::default(),
        Some(l) => layout_settings(&l.value, known, cx),
    };
    let session = raw.session.as_ref().map(|s| {
        // Checked against the daemon file's sessions when it parsed, as
        // notifiers are.
        if known.is_some() && !daemon.sessions.contains_key(&s.value) {
            let declared: Vec<&str> = daemon.sessions.keys().map(String::as_str).collect();
            let hint = if declared.is_empty() {
                "declare it under `sessions` in the daemon file".to_owned()
            } else {
                format!("declared sessions: {}", declared.join(", "))
            };
            cx.err(
                s.at,
                "session",
                format!("unknown session `{}` ({hint})", s.value),
            );
        }
        s.value.clone()
    });
    Some((
        Watch {
            id,
            file: cx.file.to_path_buf(),
            url: url?,
            title: raw.title.as_ref().map(|t| t.value.clone()),
            schedule: schedule?,
            fetch: fetch?,
            ignore,
            blocked,
            clips,
            thresholds: thresholds?,
            on_change,
            failures,
            data_only,
            layout,
            session,
            keys: table_keys(raw.keys.as_ref(), cx),
            metrics: raw.metrics.as_ref().is_some_and(|m| m.value),
        },
        id_at,
    ))
}

/// The watch's `keys:`: every entry names a table and at least one column.
fn table_keys(raw: Option<&Sp<Vec<Sp<RawTableKey>>>>, cx: &mut Ctx) -> Vec<TableKey> {
    let mut out = Vec::new();
    for k in raw.map(|l| l.value.as_slice()).unwrap_or_default() {
        let columns = match &k.value.key.value {
            RawKeyColumns::One(c) => vec![c.clone()],
            RawKeyColumns::Many(cs) => cs.clone(),
        };
        if k.value.table.value.trim().is_empty() {
            cx.err(
                k.value.table.at,
                "keys.table",
                "a table label is needed".to_owned(),
            );
            continue;
        }
        if columns.is_empty() || columns.iter().any(|c| c.trim().is_empty()) {
            cx.err(
                k.value.key.at,
                "keys.key",
                "name a column header, or a list of them".to_owned(),
            );
            continue;
        }
        out.push(TableKey {
            table: k.value.table.value.clone(),
            columns,
        });
    }
    out
}

/// The watch's id and where it is given: `id`, or the file's stem.
fn watch_id(id: Option<&Sp<String>>, root_at: Pos, cx: &mut Ctx) -> (String, Pos) {
    if let Some(id) = id {
        if !valid_id(&id.value) {
            cx.err(
                id.at,
                "id",
                format!(
                    "watch id `{}` may only use A-Z a-z 0-9 . _ - (at least one)",
                    id.value
                ),
            );
        }
        return (id.value.clone(), id.at);
    }
    let stem = cx
        .file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !valid_id(&stem) {
        cx.err(
            root_at,
            "id",
            format!(
                "the file name gives the watch id `{stem}`, which may only use A-Z a-z 0-9 . _ -: rename the file or set `id`"
            ),
        );
    }
    (stem, root_at)
}

/// Clip `name`: what it selects (an XPath, or an extractor and the XPath
/// of what it extracts), its stylesheet and cache header.
fn clip(name: &str, clip: &Sp<RawClip>, daemon: &DaemonConfig, cx: &mut Ctx) -> Clip {
    let path = join("clips", name);
    if !valid_clip_name(name) {
        cx.err(
            clip.at,
            &path,
            format!("clip name `{name}` may only use A-Z a-z 0-9 . _ -"),
        );
    }
    let (xpath, extract) = match (&clip.value.xpath, &clip.value.extract) {
        (Some(x), None) => {
            cx.xpath(x, &join(&path, "xpath"));
            if let Some(k) = &clip.value.keywords {
                cx.err(
                    k.at,
                    &join(&path, "keywords"),
                    "keywords belong to `extract: region` clips",
                );
            }
            (x.value.clone(), None)
        }
        (None, Some(e)) => {
            let spec = extract_spec(e, clip.value.keywords.as_ref(), &path, cx);
            (
                format!("/page/*[@clip={}]", crate::hierarchy::xpath_literal(name)),
                spec,
            )
        }
        (Some(_), Some(e)) => {
            cx.err(e.at, &path, "give either xpath or extract, not both");
            (String::new(), None)
        }
        (None, None) => {
            cx.err(
                clip.at,
                &path,
                "give xpath (what to select) or extract (article, records or region)",
            );
            (String::new(), None)
        }
    };
    let stylesheet = clip
        .value
        .stylesheet
        .as_ref()
        .and_then(|s| clip_stylesheet(s, &path, daemon, cx));
    let cache_control = clip
        .value
        .cache_control
        .as_ref()
        .and_then(|cc| cx.header_value(cc, &join(&path, "cache_control")));
    Clip {
        xpath,
        extract,
        description: clip.value.description.as_ref().map(|d| d.value.clone()),
        public: clip.value.public.as_ref().is_some_and(|p| p.value),
        stylesheet,
        cache_control,
        metrics: clip.value.metrics.as_ref().is_some_and(|m| m.value),
    }
}

/// A clip's stylesheet: a file name in the server's stylesheet directory.
fn clip_stylesheet(
    s: &Sp<String>,
    path: &str,
    daemon: &DaemonConfig,
    cx: &mut Ctx,
) -> Option<String> {
    let name = s.value.trim();
    if !valid_stylesheet(name) {
        cx.err(
            s.at,
            &join(path, "stylesheet"),
            format!("`{name}` is not a stylesheet name: a file name ending in .xsl (A-Z a-z 0-9 . _ -), no directories"),
        );
        return None;
    }
    if !daemon.server.xslt.join(name).is_file() {
        cx.err(
            s.at,
            &join(path, "stylesheet"),
            format!("no stylesheet `{name}` in {}", daemon.server.xslt.display()),
        );
        return None;
    }
    Some(name.to_owned())
}

/// An extract clip's extraction, checked: region needs keywords, the
/// others take none.
fn extract_spec(
    e: &Sp<RawExtract>,
    keywords: Option<&Sp<Vec<Sp<String>>>>,
    path: &str,
    cx: &mut Ctx<'_>,
) -> Option<ExtractSpec> {
    match (e.value, keywords) {
        (RawExtract::Region, Some(k)) => {
            let words: Vec<String> = k
                .value
                .iter()
                .map(|w| w.value.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect();
            if words.is_empty() || words.iter().any(String::is_empty) {
                cx.err(
                    k.at,
                    &join(path, "keywords"),
                    "give one to three non-empty keywords, each from a different record",
                );
                return None;
            }
            Some(ExtractSpec::Region(words))
        }
        (RawExtract::Region, None) => {
            cx.err(
                e.at,
                &join(path, "keywords"),
                "`extract: region` needs keywords: texts of the wanted data, each from a different record",
            );
            None
        }
        (_, Some(k)) => {
            cx.err(
                k.at,
                &join(path, "keywords"),
                "keywords belong to `extract: region` clips",
            );
            None
        }
        (RawExtract::Article, None) => Some(ExtractSpec::Article),
        (RawExtract::Records, None) => Some(ExtractSpec::Records),
    }
}

/// A clip name: a URL path segment.
fn valid_clip_name(s: &str) -> bool {
    valid_id(s)
}

/// A stylesheet name: a plain file name ending in `.xsl`.
fn valid_stylesheet(s: &str) -> bool {
    s.len() > 4 && s.ends_with(".xsl") && valid_id(s) && !s.starts_with('.')
}

/// The thresholds, in file order, names unique; `None` when one is invalid
/// (after every problem is reported).
fn thresholds(
    list: Option<&Sp<Vec<Sp<RawThreshold>>>>,
    known: Option<&BTreeSet<String>>,
    cx: &mut Ctx,
) -> Option<Vec<Threshold>> {
    let mut thresholds = Vec::new();
    let mut names: BTreeSet<String> = BTreeSet::new();
    for (i, t) in list.iter().flat_map(|l| l.value.iter()).enumerate() {
        let path = format!("thresholds[{i}]");
        if !names.insert(t.value.name.value.clone()) {
            cx.err(
                t.value.name.at,
                &join(&path, "name"),
                format!(
                    "threshold name `{}` is used twice in this watch",
                    t.value.name.value
                ),
            );
        }
        thresholds.push(threshold(t, &path, known, cx));
    }
    thresholds.into_iter().collect()
}

/// A threshold's `outside` bounds, `[low, high]` with finite `low < high`.
fn outside_bounds(o: &Sp<Vec<f64>>, p: &str, cx: &mut Ctx) -> Option<(f64, f64)> {
    match o.value.as_slice() {
        [lo, hi] if lo.is_finite() && hi.is_finite() && lo < hi => Some((*lo, *hi)),
        [lo, hi] if lo.is_finite() && hi.is_finite() => {
            cx.err(
                o.at,
                p,
                format!("the bounds must be [low, high] with low < high, got [{lo}, {hi}]"),
            );
            None
        }
        [_, _] => {
            cx.err(o.at, p, "the bounds must be finite numbers");
            None
        }
        other => {
            cx.err(
                o.at,
                p,
                format!("give two bounds [low, high], got {} values", other.len()),
            );
            None
        }
    }
}

fn threshold(
    t: &Sp<RawThreshold>,
    path: &str,
    known: Option<&BTreeSet<String>>,
    cx: &mut Ctx,
) -> Option<Threshold> {
    let r = &t.value;
    let xpath_path = join(path, "xpath");
    let ty = cx.xpath(&r.xpath, &xpath_path);
    if let Some(ty) = ty
        && !matches!(ty, XPathType::NodeSet | XPathType::Number)
    {
        cx.err(
            r.xpath.at,
            &xpath_path,
            format!("a threshold XPath must give a node-set or a number, this one gives a {ty}"),
        );
    } else if let Some(ty) = ty
        && r.each.is_some()
        && ty != XPathType::NodeSet
    {
        cx.err(
            r.xpath.at,
            &xpath_path,
            format!(
                "with `each`, the XPath must select the records (a node-set), this one gives a {ty}"
            ),
        );
    }
    let each = r
        .each
        .as_ref()
        .and_then(|e| each(e, &join(path, "each"), cx));
    let above = finite(r.above.as_ref(), &join(path, "above"), cx);
    let below = finite(r.below.as_ref(), &join(path, "below"), cx);
    let outside = r
        .outside
        .as_ref()
        .and_then(|o| outside_bounds(o, &join(path, "outside"), cx));
    let change_pct = finite(r.change_pct.as_ref(), &join(path, "change_pct"), cx);
    if let (Some(c), Some(v)) = (change_pct, &r.change_pct)
        && c <= 0.0
    {
        cx.err(v.at, &join(path, "change_pct"), "must be greater than 0");
    }
    if let (Some(a), Some(b), Some(bv)) = (above, below, &r.below)
        && b >= a
    {
        cx.err(
            bv.at,
            &join(path, "below"),
            format!(
                "below ({b}) must be less than above ({a}), or every value would cross the threshold"
            ),
        );
    }
    let new_high = r.new_high.as_ref().is_some_and(|b| b.value);
    let new_low = r.new_low.as_ref().is_some_and(|b| b.value);
    let within = window(r, path, cx);
    if r.above.is_none()
        && r.below.is_none()
        && r.outside.is_none()
        && r.change_pct.is_none()
        && !new_high
        && !new_low
    {
        cx.err(
            t.at,
            path,
            "give at least one bound: above, below, outside, change_pct, new_high or new_low",
        );
    }
    let hysteresis = finite(r.hysteresis.as_ref(), &join(path, "hysteresis"), cx).unwrap_or(0.0);
    if hysteresis < 0.0
        && let Some(h) = &r.hysteresis
    {
        cx.err(h.at, &join(path, "hysteresis"), "must be 0 or more");
    }
    let notify = r
        .notify
        .as_ref()
        .map(|n| cx.notifiers(n, &join(path, "notify"), known))
        .unwrap_or_default();
    Some(Threshold {
        name: r.name.value.clone(),
        xpath: r.xpath.value.clone(),
        each,
        above,
        below,
        outside,
        change_pct,
        within,
        new_high,
        new_low,
        hysteresis,
        notify,
        on_return: r.on_return.as_ref().is_none_or(|o| o.value),
        metrics: r.metrics.as_ref().is_some_and(|m| m.value),
    })
}

/// A threshold's `within`: a window of its own value history, which only
/// `change_pct`, `new_high` and `new_low` read, and which an `each`
/// threshold has not (its records keep no value history).
fn window(r: &RawThreshold, path: &str, cx: &mut Ctx) -> Option<Duration> {
    let wants = r
        .new_high
        .as_ref()
        .filter(|b| b.value)
        .map(|b| (b.at, "new_high"))
        .or_else(|| {
            r.new_low
                .as_ref()
                .filter(|b| b.value)
                .map(|b| (b.at, "new_low"))
        });
    let Some(w) = &r.within else {
        if let Some((at, name)) = wants {
            cx.err(
                at,
                &join(path, name),
                "needs `within`, the window it compares with (e.g. within: 30d)",
            );
        }
        return None;
    };
    let at_path = join(path, "within");
    if r.each.is_some() {
        cx.err(
            w.at,
            &at_path,
            "an `each` threshold keeps no value history to look back on; drop `within`",
        );
        return None;
    }
    if r.change_pct.is_none() && wants.is_none() {
        cx.err(
            w.at,
            &at_path,
            "`within` is read by change_pct, new_high or new_low: give one of them",
        );
    }
    let d = cx.duration_min(Some(w), &at_path, Duration::ZERO, Duration::from_secs(1));
    (!d.is_zero()).then_some(d)
}

/// A threshold's `each`: one relative location path (it is read as
/// `RECORD/EACH` on every record, so an absolute path, a union or a
/// non-path expression would not mean "within the record").
fn each(e: &Sp<String>, path: &str, cx: &mut Ctx) -> Option<String> {
    let text = e.value.trim();
    let ty = cx.xpath(e, path)?;
    let problem = if text.starts_with('/') {
        Some("must be relative to the record (no leading `/`)")
    } else if text.contains('|') {
        Some("must be one path, not a union")
    } else if ty != XPathType::NodeSet {
        Some("must select nodes within the record")
    } else {
        None
    };
    match problem {
        Some(p) => {
            cx.err(
                e.at,
                path,
                format!("{p}, e.g. `cell[@col='Price']/@num`; got `{text}`"),
            );
            None
        }
        None => Some(text.to_owned()),
    }
}

fn finite(v: Option<&Sp<f64>>, path: &str, cx: &mut Ctx) -> Option<f64> {
    let v = v?;
    if v.value.is_finite() {
        Some(v.value)
    } else {
        cx.err(v.at, path, "must be a finite number");
        None
    }
}

/// The `on_change` section.
fn on_change(oc: &RawOnChange, known: Option<&BTreeSet<String>>, cx: &mut Ctx) -> OnChange {
    if oc.notify.value.is_empty() {
        cx.err(
            oc.notify.at,
            "on_change.notify",
            "name at least one notifier",
        );
    }
    OnChange {
        notify: cx.notifiers(&oc.notify, "on_change.notify", known),
        digest: oc.digest.as_ref().map(|d| {
            cx.duration_min(
                Some(d),
                "on_change.digest",
                Duration::from_secs(3600),
                Duration::from_secs(1),
            )
        }),
    }
}

/// The `failures` section over the daemon file's `alerts` defaults.
fn failure_policy(
    failures: Option<&Sp<RawFailures>>,
    daemon: &DaemonConfig,
    known: Option<&BTreeSet<String>>,
    cx: &mut Ctx,
) -> FailurePolicy {
    let Some(f) = failures else {
        return FailurePolicy {
            alert_after: daemon.alerts.failures_before_alert,
            notify: Vec::new(),
        };
    };
    FailurePolicy {
        alert_after: cx.at_least_one(
            f.value.alert_after.as_ref(),
            "failures.alert_after",
            daemon.alerts.failures_before_alert,
        ),
        notify: f
            .value
            .notify
            .as_ref()
            .map(|n| cx.notifiers(n, "failures.notify", known))
            .unwrap_or_default(),
    }
}

/// Whether only the page's data is compared (`monitor: data`), which needs
/// something saying where the data is.
fn data_only(raw: &RawWatch, clips: &BTreeMap<String, Clip>, cx: &mut Ctx) -> bool {
    let data_only = matches!(
        raw.monitor.as_ref().map(|m| m.value),
        Some(RawMonitor::Data)
    );
    if data_only
        && !clips.values().any(|c: &Clip| c.extract.is_some())
        && raw
            .layout
            .as_ref()
            .and_then(|l| l.value.template.as_ref())
            .is_none()
        && let Some(m) = &raw.monitor
    {
        cx.err(
            m.at,
            "monitor",
            "`monitor: data` needs an extract clip or layout.template to say where the data is",
        );
    }
    data_only
}

/// The `layout` section.
fn layout_settings(l: &RawLayout, known: Option<&BTreeSet<String>>, cx: &mut Ctx) -> Layout {
    Layout {
        template: l.template.as_ref().and_then(|t| {
            if valid_id(&t.value) {
                Some(t.value.clone())
            } else {
                cx.err(
                    t.at,
                    "layout.template",
                    format!(
                        "`{}` is not a template set name (A-Z a-z 0-9 . _ -)",
                        t.value
                    ),
                );
                None
            }
        }),
        max_drift: match &l.max_drift {
            None => DEFAULT_MAX_DRIFT,
            Some(d) if d.value > 0.0 && d.value <= 1.0 => d.value,
            Some(d) => {
                cx.err(d.at, "layout.max_drift", "a drift in (0, 1]");
                DEFAULT_MAX_DRIFT
            }
        },
        notify: l
            .notify
            .as_ref()
            .map(|n| cx.notifiers(n, "layout.notify", known))
            .unwrap_or_default(),
    }
}

/// The name of a public clip of `raw`, if it has one.
fn public_clip(raw: &RawWatch) -> Option<&str> {
    raw.clips
        .iter()
        .flatten()
        .find(|(_, c)| c.value.public.as_ref().is_some_and(|p| p.value))
        .map(|(name, _)| name.as_str())
}

/// The watch's URL, checked, and checked against the fence; `public` names
/// a public clip, which makes a refused file's exposure plain.
fn page_url(v: &Sp<String>, fence: &Fence, public: Option<&str>, cx: &mut Ctx) -> Option<Url> {
    let url = match Url::parse(v.value.trim()) {
        Ok(u) => u,
        Err(e) => {
            let hint = if e == url::ParseError::RelativeUrlWithoutBase {
                " (write an absolute URL: https://..., or file:///absolute/path)"
            } else {
                ""
            };
            cx.err(v.at, "url", format!("invalid URL `{}`: {e}{hint}", v.value));
            return None;
        }
    };
    match url.scheme() {
        "http" | "https" => {
            if let Err(e) = fence.check_watch_url(&url) {
                cx.err(v.at, "url", e.to_string());
                return None;
            }
            Some(url)
        }
        "file" => {
            let Ok(path) = url.to_file_path() else {
                cx.err(
                    v.at,
                    "url",
                    format!(
                        "`{}` is not a local file URL: write file:///absolute/path",
                        v.value
                    ),
                );
                return None;
            };
            if let Err(e) = fence.check_file_url(&path) {
                let exposure = match public {
                    Some(clip) => format!(" (clip `{clip}` would serve it to anyone)"),
                    None => String::new(),
                };
                cx.err(v.at, "url", format!("{e}{exposure}"));
                return None;
            }
            Some(url)
        }
        other => {
            cx.err(
                v.at,
                "url",
                format!("unsupported scheme `{other}`: use http, https or file"),
            );
            None
        }
    }
}

fn schedule(s: &Sp<RawSchedule>, cx: &mut Ctx) -> Option<Schedule> {
    let r = &s.value;
    let jitter = cx.duration(r.jitter.as_ref(), "schedule.jitter", Duration::ZERO);
    match (&r.cron, &r.every) {
        (Some(_), Some(every)) => {
            cx.err(
                every.at,
                "schedule.every",
                "give exactly one of cron and every",
            );
            None
        }
        (None, None) => {
            cx.err(s.at, "schedule", "give exactly one of cron and every");
            None
        }
        (Some(expr), None) => {
            let cron = match parse_cron(&expr.value) {
                Ok(c) => Some(c),
                Err(message) => {
                    cx.err(expr.at, "schedule.cron", message);
                    None
                }
            };
            let tz = match &r.timezone {
                None => Some(chrono_tz::UTC),
                Some(tz) => match tz.value.trim().parse::<chrono_tz::Tz>() {
                    Ok(t) => Some(t),
                    Err(_) => {
                        cx.err(
                            tz.at,
                            "schedule.timezone",
                            format!(
                                "unknown time zone `{}`: write an IANA name like Europe/Moscow or UTC",
                                tz.value
                            ),
                        );
                        None
                    }
                },
            };
            Some(Schedule::Cron {
                expr: expr.value.trim().to_owned(),
                cron: cron?,
                tz: tz?,
                jitter,
            })
        }
        (None, Some(every)) => {
            if let Some(tz) = &r.timezone {
                cx.err(
                    tz.at,
                    "schedule.timezone",
                    "a time zone applies to cron schedules only",
                );
            }
            let d = cx.duration(Some(every), "schedule.every", Duration::ZERO);
            if d < Duration::from_secs(1) {
                if cx.diags.last().is_none_or(|l| l.path != "schedule.every") {
                    cx.err(every.at, "schedule.every", "must be at least 1s");
                }
                return None;
            }
            Some(Schedule::Every { every: d, jitter })
        }
    }
}
