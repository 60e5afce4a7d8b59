//! Atom feeds of semantic changes: `/feeds/all.atom` (every watch),
//! `/feeds/{watch}.atom`, and `/feeds/{watch}/{clip}.atom` (the changes
//! that touch what the clip selects now).
//!
//! Takes the stored change events; gives one entry per check that found
//! changes (the events of one snapshot), newest first, at most
//! [`ENTRIES`]. Each entry lists its changes in data terms, as
//! `semclip diff` prints them, in a text summary and an XHTML-free HTML list
//! (escaped: the values come from foreign pages). Entry ids are stable
//! `tag:` URIs, so a feed reader never shows an entry twice.
//!
//! Layout events (kind `layout`: something the watch depends on moved or
//! vanished, see [`crate::monitor::layout`]) are not data changes: each is an entry
//! of its own titled `WATCH: layout changed` with the Atom category
//! `layout`, never counted among a check's changes; data entries carry the
//! category `change`. A watch's clip feeds hold data changes only.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use atom_syndication::{Category, Content, Entry, Feed, FixedDateTime, Link, Person, Text};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::Server;
use super::auth::Need;
use super::clip::ClipKey;
use super::clips::clip_data;
use super::error::{Error, Form, require};
use crate::store::ChangeRecord;

/// The kind of layout events.
const LAYOUT: &str = "layout";

/// Entries per feed.
pub const ENTRIES: usize = 50;

/// Change events read per watch to make them.
const EVENTS: usize = 2000;

/// The name of the feed of every watch.
const ALL: &str = "all.atom";

fn time(t: SystemTime) -> FixedDateTime {
    chrono::DateTime::<chrono::Utc>::from(t).fixed_offset()
}

/// One change event in data terms, with its kind first:
/// `update  Market / GAZP / Last: 251,30 -> 268,40 (+17.1)`.
pub fn kind_line(change: &Value) -> String {
    let kind = change
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("change");
    format!("{kind:<7} {}", line(change))
}

/// The labels a change event holds under `key` (`context`,
/// `new_context`), joined as `Market / GAZP`.
pub fn labels(change: &Value, key: &str) -> String {
    change
        .get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(" / ")
        })
        .unwrap_or_default()
}

/// One change event in data terms: `Market / GAZP / Last: 251,30 -> 268,40 (+17.1)`.
pub fn line(change: &Value) -> String {
    let s = |k: &str| change.get(k).and_then(Value::as_str);
    let labels = |k: &str| labels(change, k);
    let kind = s("kind").unwrap_or("change");
    if kind == "layout" {
        return format!("layout changed: {}", s("summary").unwrap_or(""));
    }
    let context = labels("context");
    let what = match kind {
        "update" => {
            let delta = s("delta").map(|d| {
                if d.starts_with('-') {
                    format!(" ({d})")
                } else {
                    format!(" (+{d})")
                }
            });
            format!(
                "{} -> {}{}",
                s("old").unwrap_or(""),
                s("new").unwrap_or(""),
                delta.unwrap_or_default()
            )
        }
        "insert" => s("new").unwrap_or("").to_owned(),
        "delete" => s("old").unwrap_or("").to_owned(),
        "move" => format!(
            "-> {}: {}",
            labels("new_context"),
            s("new").or(s("old")).unwrap_or("")
        ),
        _ => s("new").or(s("old")).unwrap_or("").to_owned(),
    };
    format!("{context}: {what}")
}

/// Whether a change touches one of the elements `ids` (or what is inside them).
fn touches(change: &Value, ids: &[String]) -> bool {
    ["old_xpath", "new_xpath"].iter().any(|k| {
        change.get(*k).and_then(Value::as_str).is_some_and(|x| {
            ids.iter().any(|id| {
                id == "/page"
                    || x == id
                    || x.strip_prefix(id.as_str())
                        .is_some_and(|r| r.starts_with('/'))
            })
        })
    })
}

/// The events of one watch, grouped by snapshot, newest first.
fn entries_of(
    server: &Server,
    watch: &str,
    events: Vec<ChangeRecord>,
    only: Option<&[String]>,
) -> Vec<(SystemTime, Entry)> {
    let mut groups: BTreeMap<(bool, i64, i64), Vec<ChangeRecord>> = BTreeMap::new();
    for e in events {
        if only.is_some_and(|ids| !touches(&e.change, ids)) {
            continue;
        }
        // Events of one check share a snapshot (and a time, if it was
        // pruned); a layout event is an entry of its own.
        let layout = e.kind == LAYOUT;
        let key = match e.snapshot_id {
            _ if layout => (true, e.id, 0),
            Some(s) => (false, s, 0),
            None => (false, 0, millis(e.at)),
        };
        groups.entry(key).or_default().push(e);
    }
    let mut out: Vec<(SystemTime, Entry)> = groups
        .into_values()
        .filter_map(|group| {
            let first = group.first()?;
            let at = first.at;
            let lines: Vec<String> = group.iter().map(|e| kind_line(&e.change)).collect();
            let mut entry = Entry::default();
            entry.set_id(format!(
                "tag:semclip,2026:{}/{}",
                percent_encoding::utf8_percent_encode(watch, percent_encoding::NON_ALPHANUMERIC),
                first.id
            ));
            let layout = first.kind == LAYOUT;
            entry.set_title(Text::plain(if layout {
                format!("{watch}: layout changed")
            } else {
                format!(
                    "{watch}: {} change{}",
                    lines.len(),
                    if lines.len() == 1 { "" } else { "s" }
                )
            }));
            let mut category = Category::default();
            category.set_term(if layout { LAYOUT } else { "change" });
            entry.set_categories(vec![category]);
            entry.set_updated(time(at));
            entry.set_summary(Some(Text::plain(lines.join("\n"))));
            let mut html = String::from("<ul>");
            for l in &lines {
                html.push_str("<li>");
                html.push_str(&escape(l));
                html.push_str("</li>");
            }
            html.push_str("</ul>");
            let mut content = Content::default();
            content.set_content_type(Some("html".to_owned()));
            content.set_value(Some(html));
            entry.set_content(Some(content));
            let mut link = Link::default();
            // The change view shows the check's changes side by side.
            link.set_href(format!(
                "{}{}",
                server.base(),
                super::pages::change_href(&super::pages::seg(watch), first.id)
            ));
            link.set_rel("alternate");
            entry.set_links(vec![link]);
            Some((at, entry))
        })
        .collect();
    out.sort_by_key(|e| std::cmp::Reverse(e.0));
    out
}

fn millis(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn feed(server: &Server, path: &str, title: String, mut entries: Vec<(SystemTime, Entry)>) -> Feed {
    entries.sort_by_key(|e| std::cmp::Reverse(e.0));
    entries.truncate(ENTRIES);
    let mut feed = Feed::default();
    feed.set_title(Text::plain(title));
    feed.set_id(format!("{}{path}", server.base()));
    feed.set_updated(time(
        entries.first().map_or(SystemTime::UNIX_EPOCH, |(t, _)| *t),
    ));
    let mut me = Link::default();
    me.set_href(format!("{}{path}", server.base()));
    me.set_rel("self");
    me.set_mime_type(Some("application/atom+xml".to_owned()));
    let mut status = Link::default();
    status.set_href(format!("{}/status", server.base()));
    status.set_rel("alternate");
    feed.set_links(vec![me, status]);
    let mut author = Person::default();
    author.set_name("semclip");
    feed.set_authors(vec![author]);
    feed.set_entries(entries.into_iter().map(|(_, e)| e).collect::<Vec<_>>());
    feed
}

fn atom(feed: &Feed) -> Response {
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/atom+xml; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        feed.to_string(),
    )
        .into_response()
}

async fn events(server: &Arc<Server>, watch: String) -> Result<Vec<ChangeRecord>, Error> {
    server
        .stores
        .run(move |s| s.changes(&watch, None, EVENTS))
        .await
        .map_err(|e| Error::internal(&crate::error_chain(&e), Form::Text))
}

/// `/feeds/all.atom` and `/feeds/{watch}.atom`.
pub async fn watch_feed(
    State(server): State<Arc<Server>>,
    Path(file): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Error> {
    require(&server, &headers, Need::Read, Form::Text)?;
    let Some(name) = file.strip_suffix(".atom") else {
        return Err(Error::not_found("feeds end in .atom", Form::Text));
    };
    let watches = server.watches();
    if file == ALL {
        let mut entries = Vec::new();
        for id in watches.keys() {
            let mut e = entries_of(&server, id, events(&server, id.clone()).await?, None);
            e.truncate(ENTRIES);
            entries.extend(e);
        }
        let f = feed(
            &server,
            "/feeds/all.atom",
            "semclip: all changes".to_owned(),
            entries,
        );
        return Ok(atom(&f));
    }
    if !watches.contains_key(name) {
        return Err(Error::not_found(format!("no watch `{name}`"), Form::Text));
    }
    let entries = entries_of(&server, name, events(&server, name.to_owned()).await?, None);
    let title = watches
        .get(name)
        .and_then(|w| w.title.clone())
        .unwrap_or_else(|| name.to_owned());
    let f = feed(
        &server,
        &format!("/feeds/{file}"),
        format!("semclip: {title}"),
        entries,
    );
    Ok(atom(&f))
}

/// `/feeds/{watch}/{clip}.atom`.
pub async fn clip_feed(
    State(server): State<Arc<Server>>,
    Path((watch, file)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, Error> {
    let Some(clip) = file.strip_suffix(".atom") else {
        return Err(Error::not_found("feeds end in .atom", Form::Text));
    };
    let public = server
        .watches()
        .get(&watch)
        .and_then(|w| w.clips.get(clip))
        .is_some_and(|c| c.public);
    require(
        &server,
        &headers,
        if public { Need::Nothing } else { Need::Read },
        Form::Text,
    )?;
    let key = ClipKey {
        watch: watch.clone(),
        clip: Some(clip.to_owned()),
    };
    let data = clip_data(&server, &key, Form::Text).await?;
    let entries = entries_of(
        &server,
        &watch,
        events(&server, watch.clone()).await?,
        Some(&data.ids),
    );
    let f = feed(
        &server,
        &format!("/feeds/{watch}/{file}"),
        format!("semclip: {watch} / {clip}"),
        entries,
    );
    Ok(atom(&f))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lines_read_in_data_terms() {
        let c = json!({"kind": "update", "context": ["Market", "", "GAZP"], "old": "251,30",
                       "new": "268,40", "delta": "17.1"});
        assert_eq!(
            kind_line(&c),
            "update  Market / GAZP: 251,30 -> 268,40 (+17.1)"
        );
        assert_eq!(line(&c), "Market / GAZP: 251,30 -> 268,40 (+17.1)");
        let c = json!({"kind": "delete", "context": ["News"], "old": "Oil up"});
        assert_eq!(kind_line(&c), "delete  News: Oil up");
    }

    #[test]
    fn touches_the_clip_and_what_is_inside() {
        let ids = vec!["/page/table[1]/row[@key='GAZP']".to_owned()];
        let inside = json!({"new_xpath": "/page/table[1]/row[@key='GAZP']/cell[@col='Last']"});
        let same = json!({"old_xpath": "/page/table[1]/row[@key='GAZP']"});
        let other = json!({"new_xpath": "/page/table[1]/row[@key='GAZPX']"});
        assert!(touches(&inside, &ids));
        assert!(touches(&same, &ids));
        assert!(!touches(&other, &ids));
    }
}
