//! Where an alert links to: its page on semclip's own server, under the
//! daemon's `server.public_url`. An alert about changes (`changed`,
//! `layout_changed`) links to the change view of the check that raised it,
//! `/status/{watch}/changes/at/{ms}`; every other alert to the watch's
//! status page, `/status/{watch}`. Without a public URL there is no server
//! link: messages for people link to the watched page, and payloads carry
//! no `link`.
//!
//! # Decisions
//!
//! - **A check's change view is named by the check's time, not by an
//!   event id.** The change events' ids are assigned when they are
//!   inserted, in the store transaction that also queues the alert, after
//!   the alert's body was serialised (`store::state::write_record`).
//!   Writing the ids back into each queued body would read every insert's
//!   id back (a round trip each on PostgreSQL, where the inserts are
//!   pipelined) and serialise every alert twice. The check's time is known
//!   when the alert is made: an alert's `at` is its check's time to the
//!   millisecond, and the check's change events are stored at that same
//!   millisecond (both are the check's `now`: `monitor::check::judge`
//!   makes the alert, `store::CheckRecord::new` the record). So
//!   `/status/{watch}/changes/at/{ms}` finds them (serve's
//!   `explore::check_changes`), before and after retention prunes the
//!   snapshot they led to. One watch is not checked twice in one
//!   millisecond (a check is a fetch, and one replica holds a watch at a
//!   time); alerts queued before the link existed get it too.
//! - **The link is made at delivery**, from the notifier's public URL, not
//!   stored with the alert: a `public_url` changed while alerts wait in
//!   the outbox applies to them.

use url::Url;

use super::{Alert, AlertKind};

/// What a path segment must escape.
pub(super) const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The label of a link to a change view.
pub(super) const CHANGES: &str = "View changes";

/// The label of a link to a watch's status page.
const STATUS_PAGE: &str = "Status page";

/// Where alerts link to, for one notifier.
#[derive(Debug, Clone, Default)]
pub(super) struct Links {
    public_url: Option<Url>,
}

impl Links {
    pub(super) fn new(public_url: Option<&Url>) -> Links {
        Links {
            public_url: public_url.cloned(),
        }
    }

    /// The public base URL without its trailing slash, if there is one.
    fn base(&self) -> Option<&str> {
        self.public_url
            .as_ref()
            .map(|u| u.as_str().trim_end_matches('/'))
    }

    /// The change view of the check that raised `alert`, for an alert
    /// about changes, when the daemon has a public URL.
    pub(super) fn change_view(&self, alert: &Alert) -> Option<String> {
        let base = self.base()?;
        change_view_path(alert).map(|path| format!("{base}{path}"))
    }

    /// (label, URL) of `alert`'s page on semclip's server: its change view
    /// ([`Links::change_view`]) or else its watch's status page; `None`
    /// without a public URL.
    pub(super) fn server(&self, alert: &Alert) -> Option<(&'static str, String)> {
        match self.change_view(alert) {
            Some(url) => Some((CHANGES, url)),
            None => self.status_page(&alert.watch),
        }
    }

    /// (label, URL) of the link for `alert`: its page on the server, or
    /// the watched page.
    pub(super) fn of(&self, alert: &Alert) -> (&'static str, String) {
        self.server(alert)
            .unwrap_or_else(|| ("Page", alert.url.clone()))
    }

    /// (label, URL) of the link of a whole message: one alert's own
    /// ([`Links::of`]); a digest's, the watch's status page (each alert of
    /// a digest about changes links its own check besides), or without a
    /// public URL the watched page. `None` for no alert.
    pub(super) fn of_message(&self, alerts: &[Alert]) -> Option<(&'static str, String)> {
        match alerts {
            [] => None,
            [one] => Some(self.of(one)),
            [first, ..] => Some(
                self.status_page(&first.watch)
                    .unwrap_or_else(|| ("Page", first.url.clone())),
            ),
        }
    }

    /// (label, URL) of the status page of `watch`, with a public URL.
    fn status_page(&self, watch: &str) -> Option<(&'static str, String)> {
        let base = self.base()?;
        Some((STATUS_PAGE, format!("{base}/status/{}", segment(watch))))
    }
}

/// `text` as one URL path segment.
pub(super) fn segment(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, SEGMENT).to_string()
}

/// The path of the change view of the check that raised `alert`
/// (`/status/{watch}/changes/at/{ms}`, `ms` its `at` in Unix
/// milliseconds), for an alert about changes whose time reads.
fn change_view_path(alert: &Alert) -> Option<String> {
    if !matches!(alert.kind, AlertKind::Changed | AlertKind::LayoutChanged) {
        return None;
    }
    let ms = chrono::DateTime::parse_from_rfc3339(&alert.at)
        .ok()?
        .timestamp_millis();
    Some(format!("/status/{}/changes/at/{ms}", segment(&alert.watch)))
}

#[cfg(test)]
#[allow(clippy::expect_used, reason = "tests fail loudly on purpose")]
mod tests {
    use super::*;

    fn alert(kind: AlertKind, at: &str) -> Alert {
        let mut alert = crate::notify::tests::alert("a-1", kind);
        alert.watch = "gazp quotes".to_owned();
        alert.url = "https://example.org/q".to_owned();
        alert.at = at.to_owned();
        alert
    }

    #[test]
    fn alerts_about_changes_link_their_check_and_the_others_the_status_page() {
        let public = Url::parse("https://semclip.example.org/base/").expect("url");
        let links = Links::new(Some(&public));
        let changed = alert(AlertKind::Changed, "2025-03-04T10:00:00.250Z");
        assert_eq!(
            links.server(&changed),
            Some((
                CHANGES,
                "https://semclip.example.org/base/status/gazp%20quotes/changes/at/1741082400250"
                    .to_owned()
            ))
        );
        let layout = alert(AlertKind::LayoutChanged, "2025-03-04T10:00:00Z");
        assert!(
            links
                .change_view(&layout)
                .is_some_and(|u| u.ends_with("/changes/at/1741082400000"))
        );
        let crossed = alert(AlertKind::ThresholdCrossed, "2025-03-04T10:00:00Z");
        assert_eq!(links.change_view(&crossed), None);
        assert_eq!(
            links.of(&crossed),
            (
                STATUS_PAGE,
                "https://semclip.example.org/base/status/gazp%20quotes".to_owned()
            )
        );
        // A digest links the status page; one alert its own page.
        assert_eq!(
            links.of_message(&[changed.clone(), crossed.clone()]),
            Some(links.of(&crossed))
        );
        assert_eq!(
            links.of_message(std::slice::from_ref(&changed)),
            Some(links.of(&changed))
        );
        assert_eq!(links.of_message(&[]), None);
        // A time that does not read gives the status page, not a bad link.
        let odd = alert(AlertKind::Changed, "yesterday");
        assert_eq!(links.of(&odd), links.of(&crossed));
    }

    #[test]
    fn without_a_public_url_there_is_no_server_link() {
        let links = Links::new(None);
        let changed = alert(AlertKind::Changed, "2025-03-04T10:00:00Z");
        assert_eq!(links.server(&changed), None);
        assert_eq!(links.change_view(&changed), None);
        assert_eq!(
            links.of(&changed),
            ("Page", "https://example.org/q".to_owned())
        );
        assert_eq!(
            links.of_message(&[changed.clone(), changed.clone()]),
            Some(("Page", "https://example.org/q".to_owned()))
        );
    }
}
