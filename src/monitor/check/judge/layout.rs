//! Layout monitoring after a page was read: the new layout state and at
//! most one layout event ([`crate::monitor::layout`]).

use crate::monitor::compare::Prepared;
use crate::monitor::layout::{self, LayoutState};
use crate::monitor::watch_page::WatchPage;
use crate::notify::AlertKind;
use crate::xpath::native::Evaluator;

use super::Work;

impl Work<'_> {
    /// Layout monitoring after a page was read: the new layout state, and
    /// at most one layout event (see [`crate::monitor::layout`]). The event is kept
    /// in the change history (as kind `layout`, apart from data changes) and
    /// logged; it becomes an alert only when the watch names notifiers in
    /// `layout.notify`, so a watch that did not ask for layout alerts never
    /// alerts (nor makes `semclip check` exit 1) for one.
    pub(super) fn layout(
        &mut self,
        previous: &LayoutState,
        page: &WatchPage,
        prepared: &Prepared,
        ev: &Evaluator<'_>,
    ) {
        let watch = self.watch;
        // An unchanged page selects what it selected before.
        let found = if prepared.unchanged || prepared.packed.is_empty() {
            layout::Found::previous(watch, previous)
        } else {
            layout::xpaths_found_on(watch, ev)
        };
        let (state, mut event) = layout::assess(watch, previous, page, &found);
        self.state.layout = serde_json::to_string(&state).ok();
        if let Some(from) = prepared.upgraded_from {
            // Said once: the next check compares with a snapshot of this
            // vocabulary.
            let note = format!(
                "ids changed: the stored version was built under vocabulary {from} and is \
                 compared under {} (rows keyed by the column that names them); this check \
                 reports numeric updates only, and clips or thresholds naming rows by an old \
                 key may need their XPath updated",
                crate::VOCABULARY_VERSION
            );
            tracing::info!(watch = %watch.id, from, to = crate::VOCABULARY_VERSION, "vocabulary upgraded: ids changed");
            match &mut event {
                Some(e) => e.summary = format!("{}; {note}", e.summary),
                None => {
                    event = Some(crate::store::LayoutEvent {
                        drift: 0.0,
                        max_drift: watch.layout.max_drift,
                        against: "previous page".to_owned(),
                        lost: Vec::new(),
                        lost_thresholds: Vec::new(),
                        template: None,
                        moved: Vec::new(),
                        dom_drift: 0.0,
                        dom_against: String::new(),
                        summary: note,
                    })
                }
            }
        }
        if let Some(event) = event {
            let summary = event.summary.clone();
            tracing::warn!(watch = %watch.id, what = %summary, dom_drift = event.dom_drift, "layout changed");
            if !watch.layout.notify.is_empty() {
                let mut alert = self.alert(
                    AlertKind::LayoutChanged,
                    format!(
                        "{}: layout changed: {summary}",
                        watch.title.as_deref().unwrap_or(&watch.id)
                    ),
                );
                alert.error = Some(summary.clone());
                self.alerts.push(alert);
            }
            self.layout_event = Some(summary);
            self.state.layout_event = Some(event);
        }
    }
}
