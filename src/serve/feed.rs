//! Atom feeds of semantic changes: `/feeds/all.atom` (every watch),
//! `/feeds/{watch}.atom`, and `/feeds/{watch}/{clip}.atom` (the changes
//! that touch what the clip selects now).
//!
//! Takes the stored change events; gives, for each check that found
//! changes (the events of one snapshot), one entry per record that came,
//! went or changed (a keyed row of a table or `extract: records` list:
//! `jobs: new: Senior Rust engineer (Berlin, €90,000)`, see
//! [`crate::diff::record`]) and one entry for the check's other changes
//! (`jobs: 3 changes`); newest first, at most [`ENTRIES`]. Each entry lists
//! its changes in data terms, as `semclip diff` prints them (an added or
//! removed record: its fields), in a text summary and an XHTML-free HTML
//! list (escaped: the values come from foreign pages). Entry ids are stable
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
use maud::html;

use super::Server;
use super::auth::Need;
use super::clip::ClipKey;
use super::clips::clip_data;
use super::error::{Error, Form, require};
use crate::diff::{Change, Field, RecordChangeKind, by_record};
use crate::store::{EventRecord, LAYOUT};

/// Entries per feed.
pub(crate) const ENTRIES: usize = 50;

/// Change events read per watch to make them.
const EVENTS: usize = 2000;

/// The name of the feed of every watch.
const ALL: &str = "all.atom";

fn time(t: SystemTime) -> FixedDateTime {
    chrono::DateTime::<chrono::Utc>::from(t).fixed_offset()
}

/// The events of one watch, grouped by snapshot, newest first.
fn entries_of(
    server: &Server,
    watch: &str,
    events: Vec<EventRecord>,
    only: Option<&[String]>,
) -> Vec<(SystemTime, Entry)> {
    let mut groups: BTreeMap<(bool, i64, i64), Vec<EventRecord>> = BTreeMap::new();
    for e in events {
        // A clip's feed: the data changes that touch what it selects.
        if only.is_some_and(|ids| !e.event.change().is_some_and(|c| c.touches(ids))) {
            continue;
        }
        // Events of one check share a snapshot (and a time, if it was
        // pruned); a layout event is an entry of its own.
        let layout = e.event.is_layout();
        let key = match e.snapshot_id {
            _ if layout => (true, e.id, 0),
            Some(s) => (false, s, 0),
            None => (false, 0, millis(e.at)),
        };
        groups.entry(key).or_default().push(e);
    }
    let mut out: Vec<(SystemTime, Entry)> = Vec::new();
    for group in groups.into_values() {
        let Some(first) = group.first() else { continue };
        if first.event.is_layout() {
            let lines = group.iter().map(|e| e.event.line()).collect();
            out.push(entry(
                server,
                watch,
                first,
                format!("{watch}: layout changed"),
                LAYOUT,
                lines,
            ));
            continue;
        }
        out.extend(check_entries(server, watch, &group));
    }
    out.sort_by_key(|e| std::cmp::Reverse(e.0));
    out
}

/// The entries of one check's data changes: one per record that came,
/// went or changed (`jobs: new: Senior Rust engineer (Berlin, €90,000)`),
/// and one for the changes that lie in no record (`jobs: 3 changes`).
/// Each entry's id is that of its first change event, so an entry keeps
/// its id however often the feed is read, and a check's entry of older
/// stores (whose changes carry no record) keeps the id it always had.
fn check_entries(server: &Server, watch: &str, group: &[EventRecord]) -> Vec<(SystemTime, Entry)> {
    let (events, changes): (Vec<&EventRecord>, Vec<Change>) = group
        .iter()
        .filter_map(|e| Some((e, e.event.change()?.clone())))
        .unzip();
    let (records, plain) = by_record(&changes);
    let mut out = Vec::with_capacity(records.len() + 1);
    for r in &records {
        let lines = match r.kind {
            RecordChangeKind::Changed => r.changes.iter().map(|c| c.line()).collect(),
            RecordChangeKind::Added => field_lines(&r.after()),
            RecordChangeKind::Removed => field_lines(&r.before()),
        };
        let title = format!("{watch}: {}", r.line());
        out.push(entry(
            server,
            watch,
            events[r.first],
            title,
            "change",
            lines,
        ));
    }
    if let Some(&first) = plain.first() {
        let n = plain.len();
        let lines = plain.iter().map(|&i| changes[i].line()).collect();
        let title = format!("{watch}: {n} change{}", if n == 1 { "" } else { "s" });
        out.push(entry(server, watch, events[first], title, "change", lines));
    }
    out
}

/// A record's fields as lines: `salary: €90,000`.
fn field_lines(fields: &[Field]) -> Vec<String> {
    fields
        .iter()
        .map(|f| {
            if f.name.is_empty() {
                f.value.clone()
            } else {
                format!("{}: {}", f.name, f.value)
            }
        })
        .collect()
}

/// One entry: its id from `first` (the first event it shows), linking to
/// the change view of that event's check.
fn entry(
    server: &Server,
    watch: &str,
    first: &EventRecord,
    title: String,
    category: &str,
    lines: Vec<String>,
) -> (SystemTime, Entry) {
    let mut entry = Entry::default();
    entry.set_id(format!(
        "tag:semclip,2026:{}/{}",
        percent_encoding::utf8_percent_encode(watch, percent_encoding::NON_ALPHANUMERIC),
        first.id
    ));
    entry.set_title(Text::plain(title));
    let mut term = Category::default();
    term.set_term(category);
    entry.set_categories(vec![term]);
    entry.set_updated(time(first.at));
    entry.set_summary(Some(Text::plain(lines.join("\n"))));
    entry.set_content(Some(content(&lines)));
    let mut link = Link::default();
    // The change view shows the check's changes side by side, this
    // entry's first one marked.
    link.set_href(format!(
        "{}{}",
        server.base(),
        super::pages::change_href(&super::pages::seg(watch), first.id)
    ));
    link.set_rel("alternate");
    entry.set_links(vec![link]);
    (first.at, entry)
}

/// An entry's HTML content: its lines as a list, escaped by maud (the
/// values come from foreign pages).
fn content(lines: &[String]) -> Content {
    let list = html! { ul { @for l in lines { li { (l) } } } };
    let mut content = Content::default();
    content.set_content_type(Some("html".to_owned()));
    content.set_value(Some(list.into_string()));
    content
}

fn millis(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
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

async fn events(server: &Arc<Server>, watch: String) -> Result<Vec<EventRecord>, Error> {
    server
        .stores
        .run(move |s| s.events(&watch, None, EVENTS))
        .await
        .map_err(|e| Error::internal(&e, Form::Text))
}

/// `/feeds/all.atom` and `/feeds/{watch}.atom`.
pub(crate) async fn watch_feed(
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
pub(crate) async fn clip_feed(
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

    #[test]
    fn entry_content_is_an_escaped_list() {
        let lines = [
            "insert  News: <script>alert(1)</script> & more".to_owned(),
            "b".to_owned(),
        ];
        assert_eq!(
            content(&lines).value(),
            Some(
                "<ul><li>insert  News: &lt;script&gt;alert(1)&lt;/script&gt; &amp; more</li>\
                 <li>b</li></ul>"
            )
        );
    }
}
