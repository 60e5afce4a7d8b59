//! A YAML document as a bare tree ([`Node`]): mappings and sequences as
//! written, scalars as serde-saphyr reads them untyped (null, boolean,
//! integer, float or text), every node with where it was written
//! ([`Located`]: line and column, and its span in characters). The
//! diagnostics name their fields with it ([`super::tree`]) and the shape of
//! a file is checked on it ([`super::shape`]); the typed reading
//! ([`super::raw`]) never uses it.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::value::Pos;

/// A node with where it was written: its line and column, and its span
/// (character offset and length; the length of a mapping or a sequence is
/// that of its first token only).
pub(crate) struct Located<T> {
    pub value: T,
    pub at: Pos,
    /// Characters before the node in the document.
    pub offset: usize,
    /// Its length in characters (a scalar's, quotes included).
    pub len: usize,
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Located<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = serde_saphyr::Spanned::<T>::deserialize(d)?;
        let span = s.referenced.span();
        Ok(Located {
            value: s.value,
            at: Pos::from_location(s.referenced),
            offset: usize::try_from(span.offset()).unwrap_or(usize::MAX),
            len: usize::try_from(span.len()).unwrap_or(0),
        })
    }
}

/// A YAML node.
pub(crate) enum Node {
    Map(Vec<(Located<Key>, Located<Node>)>),
    Seq(Vec<Located<Node>>),
    Scalar(Scalar),
}

/// A scalar as YAML reads it untyped: `~`, `true`, `5` and `2.5` are not
/// text, `"5"` is.
pub(crate) enum Scalar {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Text(String),
}

/// A mapping key as text (`?` for a key that is a mapping or a sequence).
pub(crate) struct Key(pub String);

/// Reads `text` as a tree; `None` for an empty document.
pub(crate) fn parse(text: &str) -> Result<Option<Located<Node>>, serde_saphyr::Error> {
    serde_saphyr::from_str::<Option<Located<Node>>>(text)
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(Key(v.to_owned()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Key, E> {
                Ok(Key("~".into()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Key, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Key("?".into()))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Key, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Key("?".into()))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Node;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any YAML node")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Node, E> {
                Ok(Node::Scalar(Scalar::Bool(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node, E> {
                Ok(Node::Scalar(Scalar::Int(v.into())))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node, E> {
                Ok(Node::Scalar(Scalar::Int(v.into())))
            }
            fn visit_i128<E: de::Error>(self, v: i128) -> Result<Node, E> {
                Ok(Node::Scalar(Scalar::Int(v)))
            }
            fn visit_u128<E: de::Error>(self, v: u128) -> Result<Node, E> {
                Ok(Node::Scalar(
                    i128::try_from(v).map_or_else(|_| Scalar::Text(v.to_string()), Scalar::Int),
                ))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node, E> {
                Ok(Node::Scalar(Scalar::Float(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Node, E> {
                Ok(Node::Scalar(Scalar::Text(v.to_owned())))
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Node, E> {
                Ok(Node::Scalar(Scalar::Text(
                    String::from_utf8_lossy(v).into_owned(),
                )))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
                Ok(Node::Scalar(Scalar::Null))
            }
            fn visit_none<E: de::Error>(self) -> Result<Node, E> {
                Ok(Node::Scalar(Scalar::Null))
            }
            fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Node, D2::Error> {
                Node::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Node, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = s.next_element::<Located<Node>>()? {
                    items.push(item);
                }
                Ok(Node::Seq(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Node, A::Error> {
                let mut entries = Vec::new();
                while let Some(key) = m.next_key::<Located<Key>>()? {
                    let value = m.next_value::<Located<Node>>()?;
                    entries.push((key, value));
                }
                Ok(Node::Map(entries))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn scalars_keep_their_kind_and_nodes_their_span() {
        let root = parse("a: \"5\"\nb: [5, 2.5, yes, ~, x]\n")
            .unwrap()
            .unwrap();
        let Node::Map(entries) = &root.value else {
            panic!("a mapping")
        };
        let (a, five) = &entries[0];
        assert_eq!(a.value.0, "a");
        assert_eq!((a.at.line, a.at.column, a.offset, a.len), (1, 1, 0, 1));
        assert!(matches!(&five.value, Node::Scalar(Scalar::Text(t)) if t == "5"));
        let Node::Seq(items) = &entries[1].1.value else {
            panic!("a sequence")
        };
        assert_eq!(entries[1].1.offset, 10);
        let kinds: Vec<&str> = items
            .iter()
            .map(|n| match &n.value {
                Node::Scalar(Scalar::Int(5)) => "5",
                Node::Scalar(Scalar::Float(_)) => "float",
                Node::Scalar(Scalar::Bool(true)) => "true",
                Node::Scalar(Scalar::Null) => "null",
                Node::Scalar(Scalar::Text(t)) if t == "x" => "x",
                _ => "other",
            })
            .collect();
        assert_eq!(kinds, ["5", "float", "true", "null", "x"]);
        assert_eq!((items[1].offset, items[1].len), (14, 3));
    }
}
