//! Evidence for the page filter (module documentation of
//! `extract::records`, steps 2 and 3) beyond a group's shape and size:
//! skeleton records, and lists of form controls.

use super::{NONE, Page};

/// Share of a group's text inside form controls' names (`label`,
/// `legend`, `option`, `select`) from which the group is a set of
/// controls.
pub(super) const CONTROL_SHARE: f64 = 0.5;

/// True when the records `members` are form controls: most of their text
/// names controls (a filter panel's checkbox labels, `Brand (3)`; a
/// questionnaire's radio buttons), or they lie in a `<fieldset>`, HTML's
/// grouping of a form's controls. They repeat as regularly as data, but
/// they are the page's controls, not its content. `<button>` text does
/// not count: data cards carry actions (`Add to cart`, size swatches).
pub(super) fn is_controls(page: &Page<'_>, members: &[u32]) -> bool {
    if members.first().is_some_and(|&m| in_fieldset(page, m)) {
        return true;
    }
    let mut text = 0u64;
    let mut controls = 0u64;
    for &m in members {
        text += u64::from(page.els[m as usize].text);
        let end = m as usize + page.els[m as usize].elems as usize;
        let mut i = m as usize;
        while i < end.min(page.els.len()) {
            let e = &page.els[i];
            if matches!(&*e.tag, "label" | "legend" | "option" | "select") {
                controls += u64::from(e.text);
                // The control's subtree is counted once.
                i += e.elems as usize;
            } else {
                i += 1;
            }
        }
    }
    text > 0 && controls as f64 >= CONTROL_SHARE * text as f64
}

/// True when element `i` lies inside a `<fieldset>`.
fn in_fieldset(page: &Page<'_>, i: u32) -> bool {
    let mut cur = page.els[i as usize].parent;
    while cur != NONE {
        if &*page.els[cur as usize].tag == "fieldset" {
            return true;
        }
        cur = page.els[cur as usize].parent;
    }
    false
}

/// Leaves out of a cluster of similar siblings the members with no text
/// when most members have text: a lazy list renders the records beyond
/// the first screen as empty skeletons (an image frame, grey bars) with
/// the same markup as the records, and they are not records yet. A
/// gallery whose records are all images is left whole.
pub(super) fn drop_placeholders(page: &Page<'_>, members: &mut Vec<u32>) {
    let with_text = members
        .iter()
        .filter(|&&m| page.els[m as usize].text > 0)
        .count();
    if 2 * with_text > members.len() {
        members.retain(|&m| page.els[m as usize].text > 0);
    }
}
