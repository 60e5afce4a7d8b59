//! A page that is not the page: one showing its session logged out (the
//! session's `logged_out` XPaths), or a challenge or block page served as
//! a page (the watch's `blocked` XPaths).

use crate::error_chain;
use crate::hierarchy::Hierarchy;
use crate::monitor::check::report::PageOutcome;
use crate::page::source::SourceError;
use crate::xpath::native::Evaluator;

use super::{PageResult, Work};

/// What tells a page of a session with a login logged out.
pub(in crate::monitor::check) struct LoggedOutCheck {
    /// The session.
    pub(in crate::monitor::check) session: String,
    /// Its `logged_out` XPaths.
    pub(in crate::monitor::check) markers: Vec<String>,
    /// Whether the session logged in during this check already: a page
    /// still logged out is then a failure, not a reason to log in again.
    pub(in crate::monitor::check) after_login: bool,
}

/// The first of `xpaths` that selects something in `h`: of the watch's
/// `blocked` XPaths, the page is a challenge or block page served as a
/// page; of its session's `logged_out` ones, the session is logged out.
fn first_selecting<'x>(xpaths: &'x [String], h: &Hierarchy) -> Option<&'x str> {
    if xpaths.is_empty() {
        return None;
    }
    let ev = Evaluator::new(h);
    xpaths.iter().find(|x| ev.selects(x)).map(String::as_str)
}

impl Work<'_> {
    /// What a page showing its session logged out or a block comes to:
    /// before any login this check, nothing (`needs_login` set); after
    /// one, or for a block, a failure. `None`: the page itself.
    pub(super) fn turned_away(
        &mut self,
        hierarchy: &Hierarchy,
        alert_after: u32,
    ) -> Option<PageResult> {
        if let Some(check) = self.logged_out
            && let Some(marker) = first_selecting(&check.markers, hierarchy)
        {
            if !check.after_login {
                // Not judged, not recorded: the session logs in and the
                // page is fetched and checked again (`checked`).
                self.needs_login = true;
                return Some((PageOutcome::Unchanged, None, None));
            }
            let error = SourceError::StillLoggedOut {
                session: check.session.clone(),
                marker: marker.to_owned(),
            };
            let message = error_chain(&error);
            self.failed(&message, alert_after);
            return Some((PageOutcome::Failed(message), None, None));
        }
        if let Some(xpath) = first_selecting(&self.watch.blocked, hierarchy) {
            // A challenge served as a page: never compared, never stored.
            let reason = format!("the page matches the watch's blocked XPath `{xpath}`");
            let message = format!("blocked: {reason}");
            self.blocked(&message, reason, alert_after);
            return Some((PageOutcome::Blocked(message), None, None));
        }
        None
    }
}
