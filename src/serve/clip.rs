//! Clips: what a named clip (or the whole page) holds in the current
//! snapshot, its semantic hash and the time its data last changed, and a
//! cache of them and of their rendered forms.
//!
//! Takes a watch's current snapshot from the store and the clip's XPath;
//! gives a [`ClipData`]: the clip document (one root element: `<clip>`
//! holding copies of the selected hierarchy elements, or the `<page>`
//! itself), its JSON form, and its hash. The hash is the BLAKE3 hash of the
//! selected subtrees' canonical XML, so it changes exactly when the clip's
//! data changed, never with the page's markup (a snapshot is only stored
//! when the page's data changed at all). It is the ETag of every
//! representation of the clip.
//!
//! The time of the last change of a named clip is found by walking back
//! through the stored snapshots (at most [`HISTORY_WALK`]) to the oldest one
//! in which the clip still had the same hash; after that, each new snapshot
//! either keeps it (same hash) or sets it to the snapshot's time. The whole
//! page's last change is simply its current snapshot's time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};

use super::render::RenderError;
use crate::config::Clip;
use crate::hierarchy::read::{self, DocumentError};
use crate::hierarchy::write;
use crate::hierarchy::{HNode, Hierarchy};
use crate::store::{Snapshot, Store, StoreError};
use crate::sync::lock;
use crate::xpath::{HierarchyDoc, XPathValue};

/// How many older snapshots are read, at most, to find when a named clip's
/// data last changed; beyond that the oldest snapshot read gives the time.
pub const HISTORY_WALK: usize = 100;

/// Rendered representations per clip version (formats times stylesheet
/// parameters), kept or being rendered; a request for one more variant of
/// the same version is refused (503) rather than rendered uncached, so
/// client-chosen parameters (`title`) cannot multiply renders.
pub const MAX_RENDERS: usize = 64;

/// Variants per version of a big clip (over
/// [`super::render::SMALL_CLIP_BYTES`] of XML): each costs seconds of XSLT
/// and memory, so client-chosen parameters get few.
pub const MAX_BIG_RENDERS: usize = 8;

/// How long a failed render is remembered: requests for it meanwhile are
/// answered at once, not rendered again.
pub const FAILURE_MEMORY: Duration = Duration::from_secs(60);

/// The vocabulary version written on `<clip>`.
const VERSION: &str = crate::VOCABULARY_VERSION;

/// Why a clip cannot be given.
#[derive(Debug, thiserror::Error)]
pub enum ClipError {
    /// The watch has no snapshot yet.
    #[error("watch `{0}` has no snapshot yet")]
    NoSnapshot(String),
    /// The store failed reading the watch's snapshots.
    #[error("cannot read the snapshots of `{watch}` from the store")]
    Store {
        /// The watch.
        watch: String,
        /// What failed.
        #[source]
        source: Box<StoreError>,
    },
    /// The stored snapshot does not read back.
    #[error("the stored snapshot of `{watch}` is unreadable")]
    Snapshot {
        /// The watch.
        watch: String,
        /// What failed.
        #[source]
        source: DocumentError,
    },
    /// The clip's XPath failed on the snapshot.
    #[error("clip `{clip}` of `{watch}` cannot be evaluated: {cause}")]
    XPath {
        /// The watch.
        watch: String,
        /// The clip.
        clip: String,
        /// What failed.
        cause: String,
    },
}

/// A render under way: when it started, and the cell its result goes in.
type Pending = (Instant, Arc<tokio::sync::OnceCell<Arc<str>>>);

/// One version of a clip, as the current snapshot holds it.
#[derive(Debug)]
pub struct ClipData {
    /// The snapshot it was taken from.
    pub snapshot_id: i64,
    /// The clip's semantic hash (64 hex digits).
    pub hash: String,
    /// When its data last changed (whole seconds, as HTTP dates carry).
    pub last_modified: SystemTime,
    /// The clip document: one root element, no XML declaration.
    pub xml: String,
    /// The JSON form.
    pub json: Value,
    /// Elements selected (1 for the whole page).
    pub count: usize,
    /// The `xpath` ids of the selected elements (`/page` for the whole page).
    pub ids: Vec<String>,
    /// Rendered forms by variant (format and parameters), with their bytes.
    renders: Mutex<HashMap<String, Arc<str>>>,
    /// Renders under way, by variant, with when they started: later
    /// requests wait for the same one.
    pending: Mutex<HashMap<String, Pending>>,
    /// Renders that failed, by variant, with when.
    failed: Mutex<HashMap<String, Instant>>,
}

impl ClipData {
    /// A rendered form kept for this version, if any.
    pub fn render(&self, variant: &str) -> Option<Arc<str>> {
        lock(&self.renders).get(variant).cloned()
    }

    /// Keeps a rendered form (up to [`MAX_RENDERS`] per version).
    pub fn keep(&self, variant: String, body: Arc<str>) {
        let mut renders = lock(&self.renders);
        if renders.len() < MAX_RENDERS {
            renders.insert(variant, body);
        }
    }

    /// The form `variant` of this version, kept or made now by `make` and
    /// kept (for forms cheap enough to make in the request).
    pub fn kept_or<E>(
        &self,
        variant: String,
        make: impl FnOnce() -> Result<String, E>,
    ) -> Result<Arc<str>, E> {
        if let Some(body) = self.render(&variant) {
            return Ok(body);
        }
        let body: Arc<str> = make()?.into();
        self.keep(variant, Arc::clone(&body));
        Ok(body)
    }

    /// The form `variant` of this version, rendered by `render` at most
    /// once: requests that come while it renders wait for the same render,
    /// and the render runs in a task of its own, so a request that gives up
    /// does not throw it away: it finishes and is kept for the next
    /// request.
    ///
    /// A request waits at most `patience` from the render's start: a render
    /// still running after that, or one that failed within
    /// [`FAILURE_MEMORY`], is answered at once with
    /// [`RenderError::Unfinished`] (a `Retry-After`), never started again.
    /// `None` when this version already has its fill of variants kept or
    /// under way ([`MAX_RENDERS`], [`MAX_BIG_RENDERS`] for a big clip).
    pub async fn render_once<F>(
        self: &Arc<Self>,
        variant: String,
        patience: Duration,
        render: F,
    ) -> Option<Result<Arc<str>, RenderError>>
    where
        F: std::future::Future<Output = Result<String, RenderError>> + Send + 'static,
    {
        if let Some(body) = self.render(&variant) {
            return Some(Ok(body));
        }
        if let Some(at) = lock(&self.failed).get(&variant).copied() {
            let left = FAILURE_MEMORY.saturating_sub(at.elapsed());
            if !left.is_zero() {
                return Some(Err(RenderError::Unfinished {
                    retry_after: left.as_secs().max(1),
                }));
            }
        }
        let max = if self.xml.len() > super::render::SMALL_CLIP_BYTES {
            MAX_BIG_RENDERS
        } else {
            MAX_RENDERS
        };
        let (started, cell, new) = {
            let kept = lock(&self.renders).len();
            let mut pending = lock(&self.pending);
            match pending.get(&variant) {
                Some((started, cell)) => (*started, Arc::clone(cell), false),
                None if kept + pending.len() >= max => return None,
                None => {
                    let now = Instant::now();
                    let cell: Arc<tokio::sync::OnceCell<Arc<str>>> = Arc::default();
                    pending.insert(variant.clone(), (now, Arc::clone(&cell)));
                    (now, cell, true)
                }
            }
        };
        let unfinished = || RenderError::Unfinished {
            retry_after: patience.as_secs().clamp(1, 10),
        };
        let left = patience.saturating_sub(started.elapsed());
        if left.is_zero() {
            return Some(Err(unfinished()));
        }
        if !new {
            // Waits for the render under way; should it fail, this request
            // does not start another (the cell stays empty: the error).
            let waited =
                tokio::time::timeout(left, cell.get_or_try_init(|| async { Err(unfinished()) }))
                    .await;
            return Some(match waited {
                Ok(result) => result.cloned(),
                Err(_) => Err(unfinished()),
            });
        }
        let data = Arc::clone(self);
        let task = tokio::spawn(async move {
            let result = cell
                .get_or_try_init(|| async { render.await.map(Arc::<str>::from) })
                .await
                .cloned();
            match &result {
                Ok(body) => data.keep(variant.clone(), Arc::clone(body)),
                // Busy is the lanes' answer, not the render's: it may be
                // tried again at once; a bad parameter is the request's.
                Err(RenderError::Busy | RenderError::BadParam { .. }) => {}
                Err(_) => {
                    lock(&data.failed).insert(variant.clone(), Instant::now());
                }
            }
            lock(&data.pending).remove(&variant);
            result
        });
        Some(match tokio::time::timeout(left, task).await {
            Ok(joined) => joined.unwrap_or(Err(RenderError::Stopped)),
            // The render goes on in its task, and is kept when done.
            Err(_) => Err(unfinished()),
        })
    }
}

/// Which clip: a named one or the whole page.
#[derive(Debug, Clone, Hash, PartialEq, Eq)]
pub struct ClipKey {
    /// The watch id.
    pub watch: String,
    /// The clip name; `None`: the whole page.
    pub clip: Option<String>,
}

/// The cache: per clip, the version computed from the newest snapshot seen,
/// and per watch, the current snapshot id as last read from the store.
#[derive(Debug, Default)]
pub struct ClipCache {
    clips: Mutex<HashMap<ClipKey, Arc<ClipData>>>,
    current: Mutex<HashMap<String, i64>>,
}

impl ClipCache {
    /// The current snapshot id of a watch, as last polled.
    pub fn current(&self, watch: &str) -> Option<i64> {
        lock(&self.current).get(watch).copied()
    }

    /// Replaces the current snapshot ids (from [`Store::current_ids`]).
    pub fn set_current(&self, ids: Vec<(String, i64)>) {
        let ids: HashMap<String, i64> = ids.into_iter().collect();
        let mut clips = lock(&self.clips);
        // Watches gone from the store lose their clips.
        clips.retain(|k, _| ids.contains_key(&k.watch));
        *lock(&self.current) = ids;
    }

    /// The cached version of a clip if it was taken from `snapshot_id`.
    pub fn get(&self, key: &ClipKey, snapshot_id: i64) -> Option<Arc<ClipData>> {
        lock(&self.clips)
            .get(key)
            .filter(|d| d.snapshot_id == snapshot_id)
            .cloned()
    }

    /// The cached version whatever its snapshot (to carry its last change
    /// time forward).
    pub fn previous(&self, key: &ClipKey) -> Option<Arc<ClipData>> {
        lock(&self.clips).get(key).cloned()
    }

    /// Keeps a computed version, unless a newer one is already there.
    pub fn put(&self, key: ClipKey, data: Arc<ClipData>) {
        let mut clips = lock(&self.clips);
        match clips.get(&key) {
            Some(old) if old.snapshot_id > data.snapshot_id => {}
            _ => {
                clips.insert(key, data);
            }
        }
    }
}

/// Rounds down to whole seconds (HTTP dates have no fractions, and a
/// `Last-Modified` later than the date a client sends back would never match).
fn whole_seconds(t: SystemTime) -> SystemTime {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs)
}

/// Computes the current version of a clip (blocking: store and libxml2).
/// `previous` is the cached version, if any, whose last change time is
/// carried forward when the data did not change.
pub fn compute(
    store: &Store,
    watch: &str,
    clip: Option<(&str, &Clip)>,
    previous: Option<&ClipData>,
) -> Result<ClipData, ClipError> {
    let snapshot = store
        .current(watch)
        .map_err(store_error(watch))?
        .ok_or_else(|| ClipError::NoSnapshot(watch.to_owned()))?;
    let Some((name, clip)) = clip else {
        return whole_page(watch, &snapshot);
    };
    let selected = select(watch, name, &clip.xpath, &snapshot)?;
    let hash = selection_hash(&selected.nodes);
    let last_modified = match previous {
        Some(p) if p.snapshot_id == snapshot.id => p.last_modified,
        Some(p) if p.snapshot_id < snapshot.id && p.hash == hash => p.last_modified,
        Some(p) if p.snapshot_id < snapshot.id => snapshot.taken_at,
        _ => last_change(store, watch, name, clip, &snapshot, &hash)?,
    };
    let xml = clip_document(watch, name, clip, &selected);
    let json = json!({
        "version": VERSION,
        "watch": watch,
        "clip": name,
        "select": clip.xpath,
        "url": selected.page_url,
        "hash": hash,
        "count": selected.nodes.len(),
        "nodes": selected.nodes.iter().map(write::node_json).collect::<Vec<_>>(),
    });
    Ok(ClipData {
        snapshot_id: snapshot.id,
        last_modified: whole_seconds(last_modified),
        count: selected.nodes.len(),
        ids: selected.nodes.iter().map(|n| n.xpath.clone()).collect(),
        hash,
        xml,
        json,
        renders: Mutex::new(HashMap::new()),
        pending: Mutex::new(HashMap::new()),
        failed: Mutex::new(HashMap::new()),
    })
}

fn whole_page(watch: &str, snapshot: &Snapshot) -> Result<ClipData, ClipError> {
    let h = read(watch, &snapshot.xml)?;
    let xml = write::to_xml(
        &h,
        write::XmlOptions {
            declaration: false,
            indent: true,
            source_url: true,
        },
    );
    let mut json = write::to_json(&h);
    if let Some(o) = json.as_object_mut() {
        o.insert("watch".into(), json!(watch));
        o.insert("hash".into(), json!(snapshot.hash));
    }
    Ok(ClipData {
        snapshot_id: snapshot.id,
        hash: snapshot.hash.clone(),
        last_modified: whole_seconds(snapshot.taken_at),
        xml,
        json,
        count: 1,
        ids: vec!["/page".to_owned()],
        renders: Mutex::new(HashMap::new()),
        pending: Mutex::new(HashMap::new()),
        failed: Mutex::new(HashMap::new()),
    })
}

fn read(watch: &str, xml: &str) -> Result<Hierarchy, ClipError> {
    read::read(xml).map_err(|source| ClipError::Snapshot {
        watch: watch.to_owned(),
        source,
    })
}

/// A store error while reading `watch`'s snapshots.
fn store_error(watch: &str) -> impl FnOnce(StoreError) -> ClipError + '_ {
    move |source| ClipError::Store {
        watch: watch.to_owned(),
        source: Box::new(source),
    }
}

/// The elements a clip selects, copied out of the hierarchy, in document order.
struct Selected {
    nodes: Vec<HNode>,
    page_url: Option<String>,
}

fn select(
    watch: &str,
    name: &str,
    xpath: &str,
    snapshot: &Snapshot,
) -> Result<Selected, ClipError> {
    let xpath_err = |cause: String| ClipError::XPath {
        watch: watch.to_owned(),
        clip: name.to_owned(),
        cause,
    };
    let doc = HierarchyDoc::parse(&snapshot.xml).map_err(|e| xpath_err(e.to_string()))?;
    let value = doc.evaluate(xpath).map_err(|e| xpath_err(e.to_string()))?;
    let ids: Vec<String> = match value {
        XPathValue::Nodes(nodes) => nodes.into_iter().filter_map(|n| n.id).collect(),
        _ => return Err(xpath_err("the XPath does not select elements".to_owned())),
    };
    let h = read(watch, &snapshot.xml)?;
    let mut by_id: HashMap<&str, &HNode> = HashMap::new();
    let mut stack: Vec<&HNode> = h.children.iter().collect();
    while let Some(n) = stack.pop() {
        by_id.insert(n.xpath.as_str(), n);
        stack.extend(n.children.iter());
    }
    let mut nodes = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for id in &ids {
        // Attribute and text matches name their element: keep the element.
        let element = id
            .rsplit_once("/@")
            .map_or(id.as_str(), |(e, _)| e)
            .trim_end_matches("/text()");
        if let Some(n) = by_id.get(element) {
            if seen.insert(element.to_owned()) {
                nodes.push((*n).clone());
            }
        } else if element == "/page" && seen.insert("/page".to_owned()) {
            // The root is no hierarchy node: a clip of it holds its children.
            for c in &h.children {
                if seen.insert(c.xpath.clone()) {
                    nodes.push(c.clone());
                }
            }
        }
    }
    Ok(Selected {
        nodes,
        page_url: h.url.clone(),
    })
}

/// The semantic hash of a selection: the selected subtrees' hashes, in order.
fn selection_hash(nodes: &[HNode]) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(format!("clip {}\n", nodes.len()).as_bytes());
    for n in nodes {
        hasher.update(write::node_hash(n).as_bytes());
        hasher.update(b"\n");
    }
    hasher.finalize().to_hex().to_string()
}

/// `<clip watch=.. name=.. select=.. count=.. version="2" url=..>` around
/// the selected elements.
fn clip_document(watch: &str, name: &str, clip: &Clip, selected: &Selected) -> String {
    let mut out = String::from("<clip");
    write::attr(&mut out, "watch", watch);
    write::attr(&mut out, "name", name);
    write::attr(&mut out, "select", &clip.xpath);
    write::attr(&mut out, "count", &selected.nodes.len().to_string());
    write::attr(&mut out, "version", VERSION);
    if let Some(u) = &selected.page_url {
        write::attr(&mut out, "url", u);
    }
    if selected.nodes.is_empty() {
        out.push_str("/>\n");
        return out;
    }
    out.push_str(">\n");
    for n in &selected.nodes {
        for line in write::node_to_xml(n, true).lines() {
            out.push_str("  ");
            out.push_str(line);
            out.push('\n');
        }
    }
    out.push_str("</clip>\n");
    out
}

/// When the clip's data last changed: the time of the oldest snapshot, going
/// back from the current one, in which the clip has the same hash.
fn last_change(
    store: &Store,
    watch: &str,
    name: &str,
    clip: &Clip,
    current: &Snapshot,
    hash: &str,
) -> Result<SystemTime, ClipError> {
    let mut since = current.taken_at;
    for (id, _, _) in store
        .snapshots(watch)
        .map_err(store_error(watch))?
        .into_iter()
        .filter(|(id, _, _)| *id < current.id)
        .take(HISTORY_WALK)
    {
        let Some(older) = store.snapshot(id).map_err(store_error(watch))? else {
            break;
        };
        // An older snapshot that cannot be read ends the walk.
        let Ok(selected) = select(watch, name, &clip.xpath, &older) else {
            break;
        };
        if selection_hash(&selected.nodes) != hash {
            break;
        }
        since = older.taken_at;
    }
    Ok(since)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Retention;
    use std::time::Duration;

    fn page(gazp: &str, sber: &str) -> String {
        let html = format!(
            "<html><body><table><caption>Shares</caption><tr><th>Ticker</th><th>Last</th></tr>\
             <tr><td>GAZP</td><td>{gazp}</td></tr><tr><td>SBER</td><td>{sber}</td></tr></table></body></html>"
        );
        write::to_xml(
            &Hierarchy::from_html(&html, None),
            write::XmlOptions {
                declaration: false,
                indent: false,
                source_url: true,
            },
        )
    }

    fn clip(xpath: &str) -> Clip {
        Clip {
            xpath: xpath.to_owned(),
            extract: None,
            description: None,
            public: false,
            stylesheet: None,
            cache_control: None,
            metrics: false,
        }
    }

    #[test]
    fn a_clip_s_last_change_is_when_its_own_data_last_changed()
    -> Result<(), Box<dyn std::error::Error>> {
        let mut store = Store::open_in_memory()?;
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let versions = [
            ("251,30", "300,15"),
            ("251,30", "301,00"),
            ("251,30", "302,50"),
        ];
        for (i, (g, s)) in versions.iter().enumerate() {
            let xml = page(g, s);
            let at = t0 + Duration::from_secs(60 * i as u64);
            store.record("q", &format!("h{i}"), &xml, at, &[], &Retention::default())?;
        }
        let gazp = clip("//row[@key='GAZP']");
        let sber = clip("//row[@key='SBER']");
        let g = compute(&store, "q", Some(("gazp", &gazp)), None)?;
        let s = compute(&store, "q", Some(("sber", &sber)), None)?;
        assert_eq!(g.last_modified, t0, "GAZP never changed");
        assert_eq!(s.last_modified, t0 + Duration::from_secs(120));
        assert_eq!(g.count, 1);
        assert!(
            g.xml.starts_with("<clip watch=\"q\" name=\"gazp\""),
            "{}",
            g.xml
        );
        assert!(
            g.xml.contains("251,30") && !g.xml.contains("302,50"),
            "{}",
            g.xml
        );
        assert_eq!(g.json["nodes"][0]["key"], "GAZP");

        // A new snapshot where only SBER moved keeps GAZP's hash and time.
        let at = t0 + Duration::from_secs(180);
        store.record(
            "q",
            "h3",
            &page("251,30", "303,00"),
            at,
            &[],
            &Retention::default(),
        )?;
        let g2 = compute(&store, "q", Some(("gazp", &gazp)), Some(&g))?;
        assert_eq!(g2.hash, g.hash);
        assert_eq!(g2.last_modified, t0);
        assert!(g2.snapshot_id > g.snapshot_id);
        let s2 = compute(&store, "q", Some(("sber", &sber)), Some(&s))?;
        assert_ne!(s2.hash, s.hash);
        assert_eq!(s2.last_modified, at);

        // The whole page: the snapshot's hash and time.
        let whole = compute(&store, "q", None, None)?;
        assert_eq!(whole.hash, "h3");
        assert_eq!(whole.last_modified, at);
        assert!(whole.xml.starts_with("<page"), "{}", whole.xml);

        // A clip that selects nothing is empty, not an error.
        let none = compute(
            &store,
            "q",
            Some(("none", &clip("//row[@key='NOPE']"))),
            None,
        )?;
        assert_eq!(none.count, 0);
        assert!(
            none.xml.contains("count=\"0\"") && none.xml.ends_with("/>\n"),
            "{}",
            none.xml
        );
        assert!(matches!(
            compute(&store, "other", None, None),
            Err(ClipError::NoSnapshot(_))
        ));
        Ok(())
    }
}
