//! The heading a page gives a list of records (for naming a clip).

use crate::extract::Records;
use crate::page::dom::{Dom, NodeId};

/// Longest heading (characters) given to a list ([`heading`]).
pub const MAX_HEADING: usize = 80;

/// Levels above the first record searched for the list's heading.
const HEADING_LEVELS: usize = 6;

/// Preceding siblings looked at per level for the list's heading.
const HEADING_SIBLINGS: usize = 6;

/// A preceding sibling holding more text than this is content of its own
/// (another section), not the list's title block.
const HEADING_BLOCK_TEXT: usize = 200;

/// The heading a page gives the list whose first record is the first of
/// `records` (for naming a clip): going up from that record at most
/// [`HEADING_LEVELS`] levels, the container's `aria-label` or a table's
/// `<caption>`, else the nearest heading (`h1`-`h6`, `role="heading"`)
/// among the preceding siblings, itself or inside a short title block
/// ([`HEADING_BLOCK_TEXT`]). A sibling with more text than that is
/// another section: the search goes up a level instead. Whitespace
/// collapsed, cut at [`MAX_HEADING`] characters at a word boundary.
pub fn heading(dom: &Dom, records: &Records) -> Option<String> {
    let first = records.records.first()?.xpaths.first()?;
    let mut cur = resolve_index_xpath(dom, first)?;
    for _ in 0..HEADING_LEVELS {
        let parent = dom.parent(cur)?;
        let kids: Vec<NodeId> = dom
            .children(parent)
            .filter(|&c| dom.element(c).is_some())
            .collect();
        let at = kids.iter().position(|&k| k == cur).unwrap_or(0);
        for &sib in kids[..at].iter().rev().take(HEADING_SIBLINGS) {
            if is_heading(dom, sib) {
                return cut_heading(&dom.text_content(sib));
            }
            let text = dom.text_content(sib);
            if text.chars().count() > HEADING_BLOCK_TEXT {
                break;
            }
            if let Some(h) = first_heading(dom, sib) {
                return cut_heading(&dom.text_content(h));
            }
        }
        let el = dom.element(parent)?;
        if &*el.name == "body" {
            return None;
        }
        if let Some(l) = el.attr("aria-label").and_then(cut_heading) {
            return Some(l);
        }
        if &*el.name == "table"
            && let Some(c) = dom.child_element(parent, "caption")
            && let Some(l) = cut_heading(&dom.text_content(c))
        {
            return Some(l);
        }
        cur = parent;
    }
    None
}

/// An `h1`-`h6` or an element with `role="heading"`.
fn is_heading(dom: &Dom, n: NodeId) -> bool {
    dom.element(n).is_some_and(|e| {
        matches!(&*e.name, "h1" | "h2" | "h3" | "h4" | "h5" | "h6")
            || e.attr("role") == Some("heading")
    })
}

/// The first heading inside `n`, in document order.
fn first_heading(dom: &Dom, n: NodeId) -> Option<NodeId> {
    let mut stack: Vec<NodeId> = dom.children(n).collect();
    stack.reverse();
    while let Some(c) = stack.pop() {
        if is_heading(dom, c) {
            return Some(c);
        }
        let mark = stack.len();
        stack.extend(dom.children(c));
        stack[mark..].reverse();
    }
    None
}

/// A heading's text, whitespace collapsed and cut at [`MAX_HEADING`]
/// characters at a word boundary; `None` when empty.
fn cut_heading(text: &str) -> Option<String> {
    let text = crate::extract::collapse_whitespace(text);
    if text.is_empty() {
        return None;
    }
    if text.chars().count() <= MAX_HEADING {
        return Some(text);
    }
    let mut out = String::new();
    for w in text.split(' ') {
        if out.chars().count() + w.chars().count() + 1 > MAX_HEADING {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    if out.is_empty() {
        out = text.chars().take(MAX_HEADING).collect();
    }
    Some(out)
}

/// The element an index XPath of this module (`/body[1]/div[3]/li[2]`)
/// names in `dom`.
fn resolve_index_xpath(dom: &Dom, xpath: &str) -> Option<NodeId> {
    let mut steps = xpath.split('/').filter(|s| !s.is_empty());
    if steps.next()? != "body[1]" {
        return None;
    }
    let mut cur = dom.body()?;
    for step in steps {
        let (name, index) = step.strip_suffix(']')?.split_once('[')?;
        let index: usize = index.parse().ok()?;
        cur = dom
            .children(cur)
            .filter(|&c| dom.element(c).is_some_and(|e| &*e.name == name))
            .nth(index.checked_sub(1)?)?;
    }
    Some(cur)
}
