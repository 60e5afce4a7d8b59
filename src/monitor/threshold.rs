//! Thresholds: a number read from the hierarchy by XPath, bounds, and an
//! edge-triggered alarm state with hysteresis.
//!
//! A threshold is *triggered* by a value strictly beyond any of its bounds
//! (`above`, `below`, `outside`, or a change of at least `change_pct` percent
//! from the previous value). Once in alarm it stays there until the value is
//! *clear* of every bound by the hysteresis margin (`above 300, hysteresis 5`
//! returns at 295 or less), so a value wobbling around a bound alerts once.
//! Alerts are raised on transitions only: into alarm, back to normal, and
//! when the XPath stops selecting a number ("selector lost") or starts again.
//! For `change_pct` the previous value is the one read at the previous
//! evaluation; a jump triggers, and the alarm clears at the next evaluation
//! whose change is under `change_pct` minus the hysteresis (in percent).
//!
//! A threshold that is lost forgets its alarm: when its value comes back it
//! is judged afresh, so a value still beyond the bound alerts again, which
//! after a redesign is what a user wants to hear.

use crate::config::Threshold;
use crate::hierarchy::number::{DecimalStyle, parse_number};
/// A threshold's state (stored, so it lives with the store).
pub use crate::store::Level;
use crate::xpath::native::Evaluator;
use crate::xpath::{HierarchyDoc, NodeKind, XPathError, XPathValue};

/// The bounds of one threshold (from the watch file).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Bounds {
    /// Alarm above this value.
    pub above: Option<f64>,
    /// Alarm below this value.
    pub below: Option<f64>,
    /// Alarm outside `[lo, hi]`.
    pub outside: Option<(f64, f64)>,
    /// Alarm when the value moved by at least this many percent since the
    /// previous evaluation.
    pub change_pct: Option<f64>,
    /// How far back inside the bounds a value must come to clear an alarm,
    /// in the value's units (in percent points for `change_pct`).
    pub hysteresis: f64,
    /// The lowest and highest value of the threshold's history window
    /// (`within`), read from the store before judging: `change_pct`
    /// compares with them instead of the previous value. `None` with a
    /// window: no history yet, nothing to compare with.
    pub window: Option<(f64, f64)>,
    /// The threshold's window (`within`), if it has one.
    pub within: Option<std::time::Duration>,
    /// Alarm above the window's highest value.
    pub new_high: bool,
    /// Alarm below the window's lowest value.
    pub new_low: bool,
}

/// What a threshold's XPath gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Reading {
    /// A number, from the node `node` (its `xpath` id) if it came from one,
    /// with the data context of that node (`Shares / GAZP / Last`).
    Value {
        /// The number.
        value: f64,
        /// The `xpath` id of the node it came from.
        node: Option<String>,
        /// The labels from the page down to the node, joined by ` / `.
        context: String,
    },
    /// Nothing usable: the expression selected nothing, or something that is
    /// not a number (the reason says which).
    Lost {
        /// Why, for people.
        reason: String,
    },
}

/// Reads a threshold's value: a number expression directly; for a node-set,
/// the first node's number: an attribute's or text's value, or an element's
/// `num` attribute (its text when it has none), read as a number.
pub fn read(doc: &HierarchyDoc, xpath: &str) -> Result<Reading, XPathError> {
    match doc.evaluate(xpath)? {
        XPathValue::Number(value) if value.is_finite() => Ok(Reading::Value {
            value,
            node: None,
            context: String::new(),
        }),
        XPathValue::Number(value) => Ok(Reading::Lost {
            reason: format!("the expression gives {value}, not a number"),
        }),
        XPathValue::Nodes(nodes) => {
            let Some(first) = nodes.into_iter().next() else {
                return Ok(Reading::Lost {
                    reason: "the expression selects nothing".to_owned(),
                });
            };
            let text = match (first.kind, &first.id) {
                (NodeKind::Element, Some(id)) => {
                    match doc.evaluate(&format!("string(({id})/@num)"))? {
                        XPathValue::String(num) if !num.is_empty() => num,
                        _ => first.value.clone(),
                    }
                }
                _ => first.value.clone(),
            };
            let owner = first.id.as_deref().map(owner_of);
            let context = match owner {
                Some(owner) => context_of(doc, owner)?,
                None => String::new(),
            };
            match number(&text) {
                Some(value) => Ok(Reading::Value {
                    value,
                    node: first.id,
                    context,
                }),
                None => Ok(Reading::Lost {
                    reason: format!("the selected node holds {text:?}, not a number"),
                }),
            }
        }
        other => Ok(Reading::Lost {
            reason: format!(
                "the expression gives a {}, not a number",
                other.value_type()
            ),
        }),
    }
}

/// [`read`] on a hierarchy: answered on the hierarchy itself for the
/// location paths thresholds use in practice (see
/// [`crate::xpath::native`]), by libxml2 on its XML otherwise. Gives what
/// [`read`] gives on the hierarchy's XML.
pub fn read_on(ev: &Evaluator<'_>, xpath: &str) -> Result<Reading, XPathError> {
    let flat = ev.flat();
    if let Some(hits) = flat.select(xpath) {
        let Some(first) = hits.first() else {
            return Ok(Reading::Lost {
                reason: "the expression selects nothing".to_owned(),
            });
        };
        if let Some(text) = flat.value(first) {
            return Ok(match number(&text) {
                Some(value) => Reading::Value {
                    value,
                    node: Some(flat.id(first)),
                    context: flat.context(first),
                },
                None => Reading::Lost {
                    reason: format!("the selected node holds {text:?}, not a number"),
                },
            });
        }
    }
    read(ev.doc()?, xpath)
}

/// Most records one `each` threshold judges in a check: a list longer
/// than this is judged on its first records only (in page order), so a
/// page cannot make a check judge, store and alert without bound.
pub const MAX_EACH: usize = 1000;

/// One record of an `each` threshold and what its relative XPath gave.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordReading {
    /// The record's key (a row's `key`; its `xpath` id when it has none).
    pub key: String,
    /// The number read within the record.
    pub reading: Reading,
}

/// Reads an `each` threshold: the records `records` selects (at most
/// [`MAX_EACH`], in document order) and, in each, the number the relative
/// path `each` gives (read as [`read_on`] reads `RECORD/EACH`).
/// `Ok(None)` when `records` selects no element.
pub fn read_each(
    ev: &Evaluator<'_>,
    records: &str,
    each: &str,
) -> Result<Option<Vec<RecordReading>>, XPathError> {
    let flat = ev.flat();
    let found: Vec<(String, Option<String>)> = match flat.select(records) {
        Some(hits) => hits
            .iter()
            .filter(|h| flat.element(h))
            .take(MAX_EACH)
            .map(|h| (flat.id(h), flat.attribute_of(h, "key").map(str::to_owned)))
            .collect(),
        None => {
            let doc = ev.doc()?;
            let XPathValue::Nodes(nodes) = doc.evaluate(records)? else {
                return Ok(None);
            };
            let mut found = Vec::new();
            for id in nodes
                .into_iter()
                .filter(|n| n.kind == NodeKind::Element)
                .filter_map(|n| n.id)
                .take(MAX_EACH)
            {
                let key = match doc.evaluate(&format!("string(({id})/@key)"))? {
                    XPathValue::String(k) if !k.is_empty() => Some(k),
                    _ => None,
                };
                found.push((id, key));
            }
            found
        }
    };
    if found.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(found.len());
    for (id, key) in found {
        let reading = read_on(ev, &format!("{id}/{each}"))?;
        out.push(RecordReading {
            key: key.unwrap_or(id),
            reading,
        });
    }
    Ok(Some(out))
}

/// A string as a number: plain (`301.5`, what `num` attributes hold) or as
/// a page writes it (`1 234,56`, `-1,2%`).
fn number(text: &str) -> Option<f64> {
    let text = text.trim();
    text.parse::<f64>()
        .ok()
        .or_else(|| parse_number(text, DecimalStyle::Point)?.parse().ok())
        .filter(|v: &f64| v.is_finite())
}

/// The element an id belongs to: an attribute's or text's owner.
fn owner_of(id: &str) -> &str {
    match id.rfind('/') {
        Some(cut) if id[cut + 1..].starts_with('@') || id[cut + 1..].starts_with("text()") => {
            &id[..cut]
        }
        _ => id,
    }
}

/// The labels (`label`, `key`, `col`) of the element `owner` and its
/// ancestors below the page, joined by ` / `.
fn context_of(doc: &HierarchyDoc, owner: &str) -> Result<String, XPathError> {
    let expr = format!(
        "({owner})/ancestor-or-self::*[parent::*]/@*[name()='label' or name()='key' or name()='col']"
    );
    Ok(match doc.evaluate(&expr)? {
        XPathValue::Nodes(labels) => labels
            .into_iter()
            .map(|n| n.value)
            .collect::<Vec<_>>()
            .join(" / "),
        _ => String::new(),
    })
}

/// What an evaluation decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    /// The new level.
    pub level: Level,
    /// The bound that is crossed (for `Alarm`), as people read it
    /// (`above 300`, `outside [100, 300]`, `change ≥ 5%`); for other
    /// levels, the threshold's bounds.
    pub bound: String,
    /// The transition to alert about, if the level changed.
    pub transition: Option<Transition>,
}

/// A change of level worth an alert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    /// Normal (or first reading) to alarm.
    Crossed,
    /// Alarm to normal.
    Returned,
    /// The XPath stopped giving a number.
    Lost,
    /// The XPath gives a number again.
    Found,
}

/// Decides the new level of a threshold from its previous level (`None`
/// before its first evaluation), the previous value and the new reading.
pub fn judge(
    bounds: &Bounds,
    previous: Option<Level>,
    previous_value: Option<f64>,
    reading: &Reading,
) -> Judgement {
    let Reading::Value { value, .. } = reading else {
        return Judgement {
            level: Level::Lost,
            bound: describe(bounds),
            transition: (previous != Some(Level::Lost)).then_some(Transition::Lost),
        };
    };
    let value = *value;
    let was_alarm = previous == Some(Level::Alarm);
    let crossed = triggered(bounds, value, previous_value);
    let level = if was_alarm {
        if clear(bounds, value, previous_value) {
            Level::Normal
        } else {
            Level::Alarm
        }
    } else if crossed.is_some() {
        Level::Alarm
    } else {
        Level::Normal
    };
    let transition = match (previous, level) {
        (Some(Level::Lost), Level::Alarm) | (None | Some(Level::Normal), Level::Alarm) => {
            Some(Transition::Crossed)
        }
        (Some(Level::Lost), _) => Some(Transition::Found),
        (Some(Level::Alarm), Level::Normal) => Some(Transition::Returned),
        _ => None,
    };
    Judgement {
        level,
        bound: crossed.unwrap_or_else(|| describe(bounds)),
        transition,
    }
}

/// The first bound `value` is strictly beyond, described.
fn triggered(b: &Bounds, value: f64, previous: Option<f64>) -> Option<String> {
    if let Some(above) = b.above.filter(|&a| value > a) {
        return Some(format!("above {}", fmt(above)));
    }
    if let Some(below) = b.below.filter(|&lo| value < lo) {
        return Some(format!("below {}", fmt(below)));
    }
    if let Some((lo, hi)) = b.outside.filter(|&(lo, hi)| value < lo || value > hi) {
        return Some(format!("outside [{}, {}]", fmt(lo), fmt(hi)));
    }
    if let (Some(pct), Some(change)) = (b.change_pct, b.change(value, previous))
        && change >= pct
    {
        return Some(format!("change ≥ {}%{}", fmt(pct), b.window_words()));
    }
    if let (true, Some((_, hi))) = (b.new_high, b.window)
        && value > hi
    {
        return Some(format!(
            "a new high (above {}{})",
            fmt(hi),
            b.window_words()
        ));
    }
    if let (true, Some((lo, _))) = (b.new_low, b.window)
        && value < lo
    {
        return Some(format!("a new low (below {}{})", fmt(lo), b.window_words()));
    }
    None
}

/// Whether `value` is back inside every bound by the hysteresis margin.
fn clear(b: &Bounds, value: f64, previous: Option<f64>) -> bool {
    let h = b.hysteresis;
    b.above.is_none_or(|a| value <= a - h)
        && b.below.is_none_or(|lo| value >= lo + h)
        && b.outside
            .is_none_or(|(lo, hi)| value >= lo + h && value <= hi - h)
        && b.change_pct
            .is_none_or(|pct| b.change(value, previous).is_none_or(|c| c < pct - h))
        && (!b.new_high || b.window.is_none_or(|(_, hi)| value <= hi - h))
        && (!b.new_low || b.window.is_none_or(|(lo, _)| value >= lo + h))
}

/// |value - previous| / |previous| in percent; `None` without a previous
/// value or from zero.
fn change_pct(value: f64, previous: Option<f64>) -> Option<f64> {
    let previous = previous.filter(|p| *p != 0.0)?;
    Some((value - previous).abs() / previous.abs() * 100.0)
}

/// All bounds, for people: `above 300, below 100`.
pub fn describe(b: &Bounds) -> String {
    let mut parts = Vec::new();
    if let Some(a) = b.above {
        parts.push(format!("above {}", fmt(a)));
    }
    if let Some(lo) = b.below {
        parts.push(format!("below {}", fmt(lo)));
    }
    if let Some((lo, hi)) = b.outside {
        parts.push(format!("outside [{}, {}]", fmt(lo), fmt(hi)));
    }
    if let Some(p) = b.change_pct {
        parts.push(format!("change ≥ {}%{}", fmt(p), b.window_words()));
    }
    if b.new_high {
        parts.push(format!("a new high{}", b.window_words()));
    }
    if b.new_low {
        parts.push(format!("a new low{}", b.window_words()));
    }
    parts.join(", ")
}

/// A number as people write it: `300`, `301.5`.
pub fn fmt(v: f64) -> String {
    format!("{v}")
}

impl Bounds {
    /// The bounds of a configured threshold.
    pub fn of(t: &Threshold) -> Bounds {
        Bounds {
            above: t.above,
            below: t.below,
            outside: t.outside,
            change_pct: t.change_pct,
            hysteresis: t.hysteresis,
            window: None,
            within: t.within,
            new_high: t.new_high,
            new_low: t.new_low,
        }
    }

    /// ` within 7days`, for a windowed threshold's descriptions.
    fn window_words(&self) -> String {
        self.within
            .map(|w| format!(" within {}", humantime::format_duration(w)))
            .unwrap_or_default()
    }

    /// The greatest change, in percent, from what `change_pct` compares
    /// with: the previous value, or with a window any value in it.
    fn change(&self, value: f64, previous: Option<f64>) -> Option<f64> {
        if self.within.is_none() {
            return change_pct(value, previous);
        }
        let (lo, hi) = self.window?;
        [change_pct(value, Some(lo)), change_pct(value, Some(hi))]
            .into_iter()
            .flatten()
            .reduce(f64::max)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    fn value(v: f64) -> Reading {
        Reading::Value {
            value: v,
            node: None,
            context: String::new(),
        }
    }

    fn above(a: f64, h: f64) -> Bounds {
        Bounds {
            above: Some(a),
            hysteresis: h,
            ..Bounds::default()
        }
    }

    /// Runs a sequence of values and gives the transitions.
    fn run(b: &Bounds, values: &[Option<f64>]) -> Vec<Option<Transition>> {
        let mut level = None;
        let mut prev = None;
        values
            .iter()
            .map(|v| {
                let reading = match v {
                    Some(v) => value(*v),
                    None => Reading::Lost {
                        reason: "gone".into(),
                    },
                };
                let j = judge(b, level, prev, &reading);
                level = Some(j.level);
                if v.is_some() {
                    prev = *v;
                }
                j.transition
            })
            .collect()
    }

    #[test]
    fn crossing_alerts_once_and_returns_past_the_hysteresis() {
        use Transition::*;
        let t = run(
            &above(300.0, 5.0),
            &[
                Some(290.0),
                Some(301.0),
                Some(310.0),
                Some(298.0),
                Some(302.0),
                Some(295.0),
                Some(296.0),
            ],
        );
        assert_eq!(
            t,
            vec![None, Some(Crossed), None, None, None, Some(Returned), None]
        );
    }

    #[test]
    fn a_first_value_beyond_the_bound_alerts() {
        assert_eq!(
            run(&above(300.0, 0.0), &[Some(301.0)]),
            vec![Some(Transition::Crossed)]
        );
    }

    #[test]
    fn equal_to_the_bound_is_not_beyond_it() {
        assert_eq!(run(&above(300.0, 0.0), &[Some(300.0)]), vec![None]);
    }

    #[test]
    fn lost_and_found() {
        use Transition::*;
        let t = run(
            &above(300.0, 0.0),
            &[Some(310.0), None, None, Some(280.0), None, Some(320.0)],
        );
        assert_eq!(
            t,
            vec![
                Some(Crossed),
                Some(Lost),
                None,
                Some(Found),
                Some(Lost),
                Some(Crossed)
            ]
        );
    }

    #[test]
    fn outside_and_below_describe_the_bound_crossed() {
        let b = Bounds {
            outside: Some((100.0, 200.0)),
            below: Some(50.0),
            ..Bounds::default()
        };
        let j = judge(&b, Some(Level::Normal), None, &value(40.0));
        assert_eq!((j.level, j.bound.as_str()), (Level::Alarm, "below 50"));
        let j = judge(&b, Some(Level::Normal), None, &value(250.0));
        assert_eq!(j.bound, "outside [100, 200]");
        let j = judge(&b, Some(Level::Alarm), None, &value(150.0));
        assert_eq!(j.transition, Some(Transition::Returned));
    }

    #[test]
    fn change_pct_compares_with_the_previous_value() {
        use Transition::*;
        let b = Bounds {
            change_pct: Some(5.0),
            ..Bounds::default()
        };
        let t = run(&b, &[Some(100.0), Some(104.0), Some(110.0), Some(111.0)]);
        assert_eq!(t, vec![None, None, Some(Crossed), Some(Returned)]);
        let j = judge(&b, Some(Level::Normal), Some(0.0), &value(5.0));
        assert_eq!(j.level, Level::Normal, "no percentage from zero");
    }

    #[test]
    fn owner_of_attribute_and_text_ids() {
        assert_eq!(
            owner_of("/page/table[1]/row[@key='a/b']/@num"),
            "/page/table[1]/row[@key='a/b']"
        );
        assert_eq!(owner_of("/page/text[1]/text()"), "/page/text[1]");
        assert_eq!(owner_of("/page/text[1]"), "/page/text[1]");
    }

    #[test]
    fn numbers_as_pages_write_them() {
        assert_eq!(number("301.5"), Some(301.5));
        assert_eq!(number(" 1 234,56 "), Some(1234.56));
        assert_eq!(number("n/a"), None);
        assert_eq!(number("NaN"), None);
    }

    #[test]
    fn reads_values_and_context_from_a_hierarchy() {
        let h = crate::hierarchy::Hierarchy::from_html(
            "<title>Q</title><h1>Market</h1><table><caption>Shares</caption>\
             <tr><th>Ticker<th>Last<tr><td>GAZP<td>251,30<tr><td>SBER<td>300.10</table>",
            None,
        );
        let xml =
            crate::hierarchy::write::to_xml(&h, crate::hierarchy::write::XmlOptions::default());
        let doc = HierarchyDoc::parse(&xml).unwrap();
        let r = read(&doc, "//row[@key='GAZP']/cell[@col='Last']/@num").unwrap();
        let Reading::Value {
            value,
            node,
            context,
        } = r
        else {
            panic!("{r:?}")
        };
        assert_eq!(value, 251.3);
        assert!(
            node.unwrap()
                .ends_with("row[@key='GAZP']/cell[@col='Last']/@num")
        );
        assert_eq!(context, "Market / Shares / GAZP / Last");
        let r = read(&doc, "//row[@key='SBER']/cell[@col='Last']").unwrap();
        assert!(
            matches!(r, Reading::Value { value, .. } if value == 300.1),
            "{r:?}"
        );
        let r = read(&doc, "//row[@key='NONE']/cell").unwrap();
        assert!(matches!(r, Reading::Lost { .. }), "{r:?}");
        let r = read(&doc, "sum(//cell[@col='Last']/@num)").unwrap();
        assert!(
            matches!(r, Reading::Value { value, .. } if (value - 551.4).abs() < 1e-9),
            "{r:?}"
        );
    }
}
