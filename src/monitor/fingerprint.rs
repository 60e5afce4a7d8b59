//! Fingerprints of a check's inputs: settings in, a short hex digest out,
//! stored beside a watch's status so that work already done is not done
//! again.
//!
//! - [`body_hash`]: a page body with the settings that decide what it
//!   builds into (the page budget, what the watch builds, compares and
//!   looks for): the same bytes with the same settings are not parsed again,
//!   nor refused again when they went over the budget;
//! - [`evaluation`]: a content hash with the thresholds' settings: a
//!   snapshot already judged by the same thresholds is not judged again.
//!
//! The settings are serialised with serde to JSON (fields in declaration
//! order, numbers in their shortest exact form) and hashed with BLAKE3, so a
//! fingerprint depends on the values of the settings only, not on how
//! `Debug` happens to print them. Changing any setting that affects the
//! result changes the fingerprint (tested below, setting by setting); a
//! setting that does not (a watch's schedule, title or notifiers) does not.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::config::{Clip, Layout, PageLimits, TableKey, Threshold, Watch};

/// The hex digits a fingerprint keeps (128 bits).
const DIGITS: usize = 32;

/// What a page body builds into besides its bytes.
#[derive(Serialize)]
struct BuildSettings<'a> {
    /// semclip's version: a new build may build the same bytes otherwise.
    semclip: &'static str,
    /// The hierarchy vocabulary's version.
    vocabulary: &'static str,
    limits: &'a PageLimits,
    url: &'a str,
    data_only: bool,
    ignore: &'a [String],
    /// (Left out when empty: the fingerprints of watches without it stay.)
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    blocked: &'a [String],
    clips: &'a BTreeMap<String, Clip>,
    /// Their XPaths decide a layout event (a threshold selecting nothing).
    thresholds: &'a [Threshold],
    layout: &'a Layout,
    /// The watch's key columns re-key what the bytes build. (Left out when
    /// empty: the fingerprints of watches without them stay.)
    #[serde(skip_serializing_if = "<[TableKey]>::is_empty")]
    keys: &'a [TableKey],
}

/// The hash by which a body is recognised again: its bytes, the page budget
/// and the watch's settings that decide what is built from it and how it is
/// compared (raising `limits.page` or changing what the watch builds gives
/// the page a new chance).
pub fn body_hash(bytes: &[u8], limits: &PageLimits, watch: &Watch) -> String {
    // Every field named, so that a new one is a decision here.
    let Watch {
        id: _,
        file: _,
        url,
        title: _,
        schedule: _,
        fetch: _,
        ignore,
        blocked,
        clips,
        thresholds,
        on_change: _,
        failures: _,
        data_only,
        layout,
        // The jar decides what the server sends, not what is built from
        // the bytes it sent.
        session: _,
        keys,
        // Served, not built.
        metrics: _,
    } = watch;
    let settings = BuildSettings {
        semclip: env!("CARGO_PKG_VERSION"),
        vocabulary: crate::VOCABULARY_VERSION,
        limits,
        url: url.as_str(),
        data_only: *data_only,
        ignore,
        blocked,
        clips,
        thresholds,
        layout,
        keys,
    };
    digest(bytes, &settings)
}

/// The settings thresholds are judged by, as a fingerprint: with the
/// content hash, it tells whether an evaluation is already done.
pub fn evaluation(hash: &str, thresholds: &[Threshold]) -> String {
    digest(hash.as_bytes(), &thresholds)
}

/// BLAKE3 of `data`, a newline and `settings` as JSON, in hex.
fn digest(data: &[u8], settings: &impl Serialize) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(data);
    hasher.update(b"\n");
    if let Err(error) = serde_json::to_writer(&mut hasher, settings) {
        // Not expected (settings hold no maps with non-string keys). A
        // fingerprint no stored one equals: the work is done again.
        tracing::warn!(error = %crate::ErrorChain(&error), "settings do not serialise; fingerprint made unique");
        hasher.update(&rand::random::<[u8; 16]>());
    }
    hasher.finalize().to_hex()[..DIGITS].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ExtractSpec;
    use std::time::Duration;

    fn watch() -> Watch {
        let yaml = "url: https://example.com/quotes\nschedule: {every: 10m}\n\
                    thresholds:\n  - name: gazp\n    xpath: \"//cell[@col='Last']\"\n    above: 300\n";
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("quotes.yaml"), yaml).unwrap_or_else(|e| panic!("{e}"));
        let daemon = crate::config::DaemonConfig::default();
        let watches =
            crate::config::load_watches(dir.path(), &daemon).unwrap_or_else(|e| panic!("{e:?}"));
        watches
            .into_iter()
            .next()
            .unwrap_or_else(|| panic!("one watch"))
    }

    fn threshold(w: &Watch) -> Threshold {
        w.thresholds
            .first()
            .cloned()
            .unwrap_or_else(|| panic!("a threshold"))
    }

    #[test]
    fn every_setting_that_affects_a_build_changes_the_body_hash() {
        let limits = PageLimits::default();
        let w = watch();
        let base = body_hash(b"<p>1</p>", &limits, &w);
        assert_eq!(base.len(), DIGITS);
        assert_eq!(base, body_hash(b"<p>1</p>", &limits, &w), "deterministic");
        assert_ne!(base, body_hash(b"<p>2</p>", &limits, &w), "bytes");
        let more = PageLimits {
            nodes: limits.nodes + 1,
            ..limits
        };
        assert_ne!(base, body_hash(b"<p>1</p>", &more, &w), "limits");
        let cpu = PageLimits {
            cpu: limits.cpu + Duration::from_millis(1),
            ..limits
        };
        assert_ne!(base, body_hash(b"<p>1</p>", &cpu, &w), "cpu limit");
        type Edit = Box<dyn Fn(&mut Watch)>;
        let changed: Vec<(&str, Edit)> = vec![
            ("url", Box::new(|w| w.url.set_path("/other"))),
            ("data_only", Box::new(|w| w.data_only = !w.data_only)),
            ("ignore", Box::new(|w| w.ignore.push("//ad".to_owned()))),
            (
                "clip",
                Box::new(|w| {
                    let clip = Clip {
                        xpath: "/page/*[@clip='a']".to_owned(),
                        extract: Some(ExtractSpec::Article),
                        description: None,
                        public: false,
                        stylesheet: None,
                        cache_control: None,
                        metrics: false,
                    };
                    w.clips.insert("a".to_owned(), clip);
                }),
            ),
            (
                "threshold xpath",
                Box::new(|w| {
                    if let Some(t) = w.thresholds.first_mut() {
                        t.xpath = "//cell[@col='Bid']".to_owned();
                    }
                }),
            ),
            ("max_drift", Box::new(|w| w.layout.max_drift += 0.01)),
            (
                "template",
                Box::new(|w| w.layout.template = Some("news".to_owned())),
            ),
        ];
        for (what, change) in changed {
            let mut other = watch();
            change(&mut other);
            assert_ne!(base, body_hash(b"<p>1</p>", &limits, &other), "{what}");
        }
        // What only schedules or notifies leaves it.
        let mut other = watch();
        other.title = Some("Quotes".to_owned());
        other.failures.alert_after += 1;
        assert_eq!(
            base,
            body_hash(b"<p>1</p>", &limits, &other),
            "title, failures"
        );
    }

    #[test]
    fn every_threshold_setting_changes_the_evaluation_fingerprint() {
        let t = threshold(&watch());
        let base = evaluation("h1", std::slice::from_ref(&t));
        assert_eq!(base, evaluation("h1", std::slice::from_ref(&t)));
        assert_ne!(
            base,
            evaluation("h2", std::slice::from_ref(&t)),
            "content hash"
        );
        assert_ne!(base, evaluation("h1", &[]), "no thresholds");
        type Edit = fn(&mut Threshold);
        let changed: Vec<(&str, Edit)> = vec![
            ("name", |t| t.name.push('2')),
            ("xpath", |t| t.xpath.push_str("[1]")),
            ("above", |t| t.above = Some(300.5)),
            ("below", |t| t.below = Some(10.0)),
            ("outside", |t| t.outside = Some((1.0, 2.0))),
            ("change_pct", |t| t.change_pct = Some(5.0)),
            ("hysteresis", |t| t.hysteresis += 0.1),
            ("notify", |t| t.notify.push("mail".to_owned())),
            ("on_return", |t| t.on_return = !t.on_return),
        ];
        for (what, change) in changed {
            let mut other = t.clone();
            change(&mut other);
            assert_ne!(base, evaluation("h1", &[other]), "{what}");
        }
        // Two thresholds are not one with their settings run together.
        let mut a = t.clone();
        a.name = "a".to_owned();
        let mut b = t.clone();
        b.name = "b".to_owned();
        assert_ne!(
            evaluation("h1", &[a.clone(), b.clone()]),
            evaluation("h1", &[b, a])
        );
    }
}
