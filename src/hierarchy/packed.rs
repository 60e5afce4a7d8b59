//! The compact form of a hierarchy: what the store keeps and the check
//! compares, so that semclip never parses XML it wrote itself.
//!
//! The XML document stays the public representation (clips, `semclip
//! hierarchy`, the API). Internally a hierarchy is packed into a flat list
//! of nodes in document order, each with its child count, encoded with
//! `postcard` (varint lengths, no field names). Ids are not stored: they
//! are derived from the labels by [`super::assign_ids`] when a packed
//! hierarchy is read back, which is also how a freshly built one gets them
//! ([`unpack_without_ids`] skips that, for a check's diff, which derives
//! only the ids of the nodes it reports).
//!
//! # Guarantees
//!
//! - **Round trip.** `unpack(&pack(h, Url::Keep))` equals `h` (ids derived
//!   again, attribute order kept), for every hierarchy the builder makes.
//! - **Canonical.** [`content_hash`] is the hash of the packed form without
//!   the page's URL: two hierarchies have the same hash exactly when they
//!   hold the same data (labels, keys, columns, text, numbers, attributes,
//!   shape). It is computed without writing any XML.
//! - **No panics on bad bytes.** A damaged or foreign blob is a
//!   [`PackError`]; a child count that does not fit the list, an unknown
//!   element kind or attribute name, or a tree deeper than
//!   [`super::MAX_TREE_DEPTH`] are refused. Reading is iterative, so no
//!   blob can exhaust the stack.
//!
//! # Decisions
//!
//! - A format tag leads the bytes ([`FORMAT`]): a later layout gets a new
//!   tag and this one stays readable.
//! - postcard rather than a hand-made encoding: it is made for compact
//!   serde encodings, checks every length, and borrows strings when
//!   reading.

use std::borrow::Cow;
use std::sync::Arc;

use serde::ser::{SerializeSeq, SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};

use super::{ATTRIBUTES, HNode, Hierarchy, Kind, MAX_TREE_DEPTH, assign_ids};

/// The tag of this layout, first in every packed hierarchy: `sch` and the
/// vocabulary version the hierarchy was built under
/// ([`crate::VOCABULARY_VERSION`]), so that a check can tell a snapshot
/// stored under an older vocabulary ([`vocabulary`]).
pub const FORMAT: &[u8; 4] = b"sch2";

/// Tags of the same layout written under earlier vocabularies: still read.
const EARLIER: [&[u8; 4]; 1] = [b"sch1"];

// The tag follows the vocabulary.
const _: () = assert!(FORMAT[3] == crate::VOCABULARY_VERSION.as_bytes()[0]);

/// The vocabulary version packed bytes were written under (`None` when
/// they are not a packed hierarchy).
pub fn vocabulary(bytes: &[u8]) -> Option<u32> {
    let tag = bytes.get(..4)?;
    if tag != FORMAT && !EARLIER.iter().any(|e| tag == *e) {
        return None;
    }
    char::from(tag[3]).to_digit(10)
}

/// Why packed bytes could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// The bytes do not start with [`FORMAT`].
    #[error("not a packed hierarchy (unknown format tag)")]
    Format,
    /// postcard could not decode them.
    #[error("damaged packed hierarchy")]
    Decode(#[from] postcard::Error),
    /// They decode, but not to a hierarchy.
    #[error("damaged packed hierarchy: {0}")]
    Shape(String),
}

/// Whether the page's URL goes into the packed form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Url {
    /// Kept (what the store keeps).
    Keep,
    /// Left out (the canonical form that [`content_hash`] hashes).
    Drop,
}

#[derive(Serialize, Deserialize)]
struct Page<'a> {
    #[serde(borrow)]
    title: Option<Cow<'a, str>>,
    #[serde(borrow)]
    url: Option<Cow<'a, str>>,
    #[serde(borrow)]
    lang: Option<Cow<'a, str>>,
    /// The root's children and all below, in document order.
    #[serde(borrow)]
    nodes: Vec<Node<'a>>,
    /// How many of `nodes` are the root's children.
    top: u32,
}

#[derive(Serialize, Deserialize)]
struct Node<'a> {
    kind: u8,
    #[serde(borrow)]
    label: Option<Cow<'a, str>>,
    #[serde(borrow)]
    key: Option<Cow<'a, str>>,
    #[serde(borrow)]
    col: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow)]
    num: Option<Cow<'a, str>>,
    #[serde(borrow)]
    attrs: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    children: u32,
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The writing side of [`Page`]: the same fields in the same order, so the
/// same bytes, with the nodes serialised straight from the tree rather
/// than gathered into a list of [`Node`]s first.
struct PageOut<'h> {
    h: &'h Hierarchy,
    url: Url,
}

impl Serialize for PageOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let h = self.h;
        let mut page = s.serialize_struct("Page", 5)?;
        page.serialize_field("title", &h.title)?;
        page.serialize_field("url", &h.url.as_ref().filter(|_| self.url == Url::Keep))?;
        page.serialize_field("lang", &h.lang)?;
        page.serialize_field("nodes", &NodesOut(&h.children))?;
        page.serialize_field("top", &count(h.children.len()))?;
        page.end()
    }
}

/// Nodes and everything below them, in document order.
struct NodesOut<'h>(&'h [HNode]);

impl Serialize for NodesOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        fn walk<S: SerializeSeq>(nodes: &[HNode], seq: &mut S) -> Result<(), S::Error> {
            for n in nodes {
                seq.serialize_element(&NodeOut(n))?;
                walk(&n.children, seq)?;
            }
            Ok(())
        }
        let total = self.0.iter().map(HNode::size).sum();
        let mut seq = s.serialize_seq(Some(total))?;
        walk(self.0, &mut seq)?;
        seq.end()
    }
}

/// The writing side of [`Node`] for one node.
struct NodeOut<'h>(&'h HNode);

impl Serialize for NodeOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let n = self.0;
        let mut node = s.serialize_struct("Node", 8)?;
        node.serialize_field("kind", &(n.kind as u8))?;
        node.serialize_field("label", &n.label)?;
        node.serialize_field("key", &n.key)?;
        node.serialize_field("col", &n.col.as_deref())?;
        node.serialize_field("text", &n.text)?;
        node.serialize_field("num", &n.num)?;
        node.serialize_field("attrs", &n.attrs)?;
        node.serialize_field("children", &count(n.children.len()))?;
        node.end()
    }
}

/// `h` in its compact form.
pub fn pack(h: &Hierarchy, url: Url) -> Vec<u8> {
    // Serialising into a Vec cannot fail: every type above has a plain
    // serde form.
    match postcard::to_extend(&PageOut { h, url }, FORMAT.to_vec()) {
        Ok(bytes) => bytes,
        Err(error) => unreachable!("postcard cannot fail on a Vec: {error}"),
    }
}

/// The canonical content hash of `h` (blake3 of its packed form without
/// the URL, hex): what tells a changed page from an unchanged one. The
/// packed bytes are hashed as they are written, never held whole.
pub fn content_hash(h: &Hierarchy) -> String {
    let mut hashing = Hashing {
        hasher: blake3::Hasher::new(),
        buf: [0; Hashing::BUF],
        len: 0,
    };
    hashing.hasher.update(FORMAT);
    let page = PageOut { h, url: Url::Drop };
    match postcard::serialize_with_flavor(&page, hashing) {
        Ok(hash) => hash,
        Err(error) => unreachable!("postcard cannot fail on a hasher: {error}"),
    }
}

/// [`pack`] with the URL kept (what the store keeps) and the
/// [`content_hash`] of the same hierarchy, from one serialisation: the hash
/// is taken over the packed bytes with the URL's field read as absent.
pub fn pack_and_hash(h: &Hierarchy) -> (Vec<u8>, String) {
    /// Bytes postcard writes for an optional string.
    fn field_len(s: &Option<String>) -> usize {
        s.as_ref().map_or(1, |s| {
            let mut varint = 1;
            let mut n = s.len() >> 7;
            while n > 0 {
                varint += 1;
                n >>= 7;
            }
            1 + varint + s.len()
        })
    }
    let bytes = pack(h, Url::Keep);
    let url_at = FORMAT.len() + field_len(&h.title);
    let url_end = url_at + field_len(&h.url);
    let mut hasher = blake3::Hasher::new();
    hasher.update(&bytes[..url_at]);
    hasher.update(&[0]);
    hasher.update(&bytes[url_end..]);
    (bytes, hasher.finalize().to_hex().to_string())
}

/// A postcard output that hashes what it is given, through a small buffer
/// (postcard writes a byte at a time for tags and lengths).
struct Hashing {
    hasher: blake3::Hasher,
    buf: [u8; Hashing::BUF],
    len: usize,
}

impl Hashing {
    const BUF: usize = 4096;

    fn flush(&mut self) {
        self.hasher.update(&self.buf[..self.len]);
        self.len = 0;
    }
}

impl postcard::ser_flavors::Flavor for Hashing {
    type Output = String;

    fn try_push(&mut self, data: u8) -> postcard::Result<()> {
        if self.len == Hashing::BUF {
            self.flush();
        }
        self.buf[self.len] = data;
        self.len += 1;
        Ok(())
    }

    fn try_extend(&mut self, data: &[u8]) -> postcard::Result<()> {
        if self.len + data.len() > Hashing::BUF {
            self.flush();
        }
        if data.len() > Hashing::BUF {
            self.hasher.update(data);
        } else {
            self.buf[self.len..self.len + data.len()].copy_from_slice(data);
            self.len += data.len();
        }
        Ok(())
    }

    fn finalize(mut self) -> postcard::Result<String> {
        self.flush();
        Ok(self.hasher.finalize().to_hex().to_string())
    }
}

fn owned(s: Option<Cow<'_, str>>) -> Option<String> {
    s.map(Cow::into_owned)
}

fn attribute(name: &str) -> Result<&'static str, PackError> {
    ATTRIBUTES
        .iter()
        .copied()
        .find(|a| *a == name)
        .ok_or_else(|| PackError::Shape(format!("unknown attribute `{name}`")))
}

/// Reads a packed hierarchy back, with ids derived again.
pub fn unpack(bytes: &[u8]) -> Result<Hierarchy, PackError> {
    let mut h = unpack_without_ids(bytes)?;
    assign_ids(&mut h);
    Ok(h)
}

/// Reads a packed hierarchy back with every `xpath` left empty: for a
/// reader that needs the ids of a few nodes at most (the diff of a check
/// derives those of its changes with [`super::id_at`]), as deriving them
/// all costs as much as reading the rest.
pub fn unpack_without_ids(bytes: &[u8]) -> Result<Hierarchy, PackError> {
    let body = std::iter::once(FORMAT)
        .chain(EARLIER)
        .find_map(|tag| bytes.strip_prefix(tag))
        .ok_or(PackError::Format)?;
    let page: Page<'_> = postcard::from_bytes(body)?;
    // Build bottom-up without recursion: a stack of (node, children still
    // to come), the root's children gathered in `top`.
    // Capacities are capped by what the bytes hold, never taken from them.
    let mut top: Vec<HNode> = Vec::with_capacity((page.top as usize).min(page.nodes.len()));
    let mut open: Vec<(HNode, u32)> = Vec::new();
    let mut wanted_top = page.top;
    // A column's cells share one header string, as when it was built.
    let mut cols: rustc_hash::FxHashMap<&str, Arc<str>> = rustc_hash::FxHashMap::default();
    for n in page.nodes {
        if open.is_empty() {
            if wanted_top == 0 {
                return Err(PackError::Shape("more nodes than the tree holds".into()));
            }
            wanted_top -= 1;
        }
        let kind = Kind::from_index(n.kind)
            .ok_or_else(|| PackError::Shape(format!("unknown node kind {}", n.kind)))?;
        let mut node = HNode::new(kind);
        node.label = owned(n.label);
        node.key = owned(n.key);
        node.col = n.col.map(|c| match c {
            Cow::Borrowed(c) => Arc::clone(cols.entry(c).or_insert_with(|| Arc::from(c))),
            Cow::Owned(c) => Arc::from(c),
        });
        node.text = owned(n.text);
        node.num = owned(n.num);
        node.attrs = n
            .attrs
            .into_iter()
            .map(|(k, v)| Ok((attribute(&k)?, v.into_owned())))
            .collect::<Result<_, PackError>>()?;
        node.children = Vec::with_capacity((n.children as usize).min(1024));
        if open.len() > MAX_TREE_DEPTH {
            return Err(PackError::Shape("deeper than a hierarchy can be".into()));
        }
        open.push((node, n.children));
        // Close every node whose children are all in.
        while let Some((_, 0)) = open.last() {
            let Some((done, _)) = open.pop() else { break };
            match open.last_mut() {
                Some((parent, left)) => {
                    parent.children.push(done);
                    *left -= 1;
                }
                None => top.push(done),
            }
        }
    }
    if !open.is_empty() || wanted_top != 0 {
        return Err(PackError::Shape("fewer nodes than the tree holds".into()));
    }
    Ok(Hierarchy {
        title: owned(page.title),
        url: owned(page.url),
        lang: owned(page.lang),
        children: top,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Hierarchy {
        Hierarchy::from_html(
            "<html lang=en><title>Quotes</title><h1>Board</h1><p>Updated daily.</p>\
             <table><caption>Shares</caption><tr><th>Code<th>Last<th>Change</tr>\
             <tr><td>GAZP<td>301.5<td>-1.2%</tr><tr><td>SBER<td>250<td>0.5%</tr></table>\
             <ul><li>one<li>two <a href=/x>link</a><ul><li>deep</ul></ul>\
             <h2>Second</h2><dl><dt>Term<dd>Definition</dl>",
            Some("https://example.com/q"),
        )
    }

    #[test]
    fn kinds_keep_their_index() {
        for k in Kind::ALL {
            assert_eq!(Kind::from_index(k as u8), Some(k));
            assert_eq!(Kind::from_name(k.name()), Some(k));
        }
        assert_eq!(Kind::from_index(Kind::ALL.len() as u8), None);
    }

    #[test]
    fn a_hierarchy_comes_back_whole_with_its_ids() {
        let h = sample();
        assert!(h.size() > 10);
        let back = unpack(&pack(&h, Url::Keep)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, h);
        let no_url = unpack(&pack(&h, Url::Drop)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(no_url.url, None);
        assert_eq!(no_url.children, h.children);
    }

    /// The old writer: nodes gathered into [`Node`]s, then [`Page`].
    fn pack_through_nodes(h: &Hierarchy, url: Url) -> Vec<u8> {
        fn borrowed(s: &Option<String>) -> Option<Cow<'_, str>> {
            s.as_deref().map(Cow::Borrowed)
        }
        fn flatten<'h>(nodes: &'h [HNode], out: &mut Vec<Node<'h>>) {
            for n in nodes {
                out.push(Node {
                    kind: n.kind as u8,
                    label: borrowed(&n.label),
                    key: borrowed(&n.key),
                    col: n.col.as_deref().map(Cow::Borrowed),
                    text: borrowed(&n.text),
                    num: borrowed(&n.num),
                    attrs: n
                        .attrs
                        .iter()
                        .map(|(k, v)| (Cow::Borrowed(*k), Cow::Borrowed(v.as_str())))
                        .collect(),
                    children: count(n.children.len()),
                });
                flatten(&n.children, out);
            }
        }
        let mut nodes = Vec::new();
        flatten(&h.children, &mut nodes);
        let page = Page {
            title: borrowed(&h.title),
            url: borrowed(&h.url).filter(|_| url == Url::Keep),
            lang: borrowed(&h.lang),
            nodes,
            top: count(h.children.len()),
        };
        postcard::to_extend(&page, FORMAT.to_vec()).unwrap_or_default()
    }

    #[test]
    fn the_tree_is_written_as_the_list_of_nodes_reads_it() {
        let h = sample();
        for url in [Url::Keep, Url::Drop] {
            assert_eq!(pack(&h, url), pack_through_nodes(&h, url));
        }
        // The streamed hash is the hash of the packed bytes, also past
        // the hasher's buffer.
        let board: String = (0..400)
            .map(|i| format!("<tr><td>R{i}<td>{i}.5<td><a href=/r/{i}>more</a></tr>"))
            .collect();
        let big = Hierarchy::from_html(
            &format!("<table><tr><th>K<th>V<th>L</tr>{board}</table>"),
            None,
        );
        let long_title = Hierarchy {
            title: Some("t".repeat(300)),
            url: Some(format!("https://example.com/{}", "u".repeat(20_000))),
            ..big.clone()
        };
        let no_url = Hierarchy {
            url: None,
            ..h.clone()
        };
        for h in [h, big, long_title, no_url] {
            let bytes = pack(&h, Url::Drop);
            let hash = content_hash(&h);
            assert_eq!(hash, blake3::hash(&bytes).to_hex().to_string());
            assert_eq!(pack_and_hash(&h), (pack(&h, Url::Keep), hash));
        }
    }

    #[test]
    fn the_hash_follows_the_data_not_the_url() {
        let h = sample();
        let mut moved = h.clone();
        moved.url = Some("https://elsewhere.example/".into());
        assert_eq!(content_hash(&h), content_hash(&moved));
        let mut edited = h.clone();
        edited.children[0].label = Some("Board!".into());
        assert_ne!(content_hash(&h), content_hash(&edited));
        // Shape counts: the same texts nested differently hash differently.
        let flat = Hierarchy {
            children: vec![HNode::new(Kind::Text), HNode::new(Kind::Text)],
            ..Hierarchy::default()
        };
        let mut nested = flat.clone();
        let inner = nested.children.remove(1);
        nested.children[0].children.push(inner);
        assert_ne!(content_hash(&flat), content_hash(&nested));
    }

    #[test]
    fn damaged_bytes_are_errors_never_panics() {
        let bytes = pack(&sample(), Url::Keep);
        assert!(matches!(unpack(b"nope"), Err(PackError::Format)));
        for cut in 0..bytes.len() {
            let _ = unpack(&bytes[..cut]);
        }
        for i in FORMAT.len()..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[i] ^= 0xA5;
            let _ = unpack(&flipped);
        }
        // A chain of single children deeper than a hierarchy can be.
        let deep: Vec<Node<'_>> = (0..=MAX_TREE_DEPTH + 1)
            .map(|_| Node {
                kind: Kind::Item as u8,
                label: None,
                key: None,
                col: None,
                text: None,
                num: None,
                attrs: Vec::new(),
                children: 1,
            })
            .collect();
        let page = Page {
            title: None,
            url: None,
            lang: None,
            nodes: deep,
            top: 1,
        };
        let bytes = postcard::to_extend(&page, FORMAT.to_vec()).unwrap_or_default();
        assert!(
            matches!(unpack(&bytes), Err(PackError::Shape(m)) if m.contains("deeper")),
            "{:?}",
            unpack(&bytes)
        );
    }
}
