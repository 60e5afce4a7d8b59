//! The raw values both files share, as written: a position ([`Pos`]), a
//! value with the position it was written at ([`Sp`]), a secret
//! ([`RawSecret`]), text or a secret ([`RawSecretOrText`]) and a byte size
//! ([`ByteSize`]). They sit below [`super::raw`] and the chat channels'
//! raw forms ([`super::channels`]), which both build on them. Their
//! `JsonSchema` impls are the schemas' shared definitions.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};

/// A 1-based line and column in a YAML file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Pos {
    pub line: usize,
    pub column: usize,
}

impl Pos {
    /// The position of a serde-saphyr location.
    pub(super) fn from_location(loc: serde_saphyr::Location) -> Pos {
        Pos {
            line: usize::try_from(loc.line()).unwrap_or(usize::MAX),
            column: usize::try_from(loc.column()).unwrap_or(usize::MAX),
        }
    }

    /// The start of a file.
    pub(crate) const START: Pos = Pos { line: 1, column: 1 };
}

/// A value with the position it was written at.
#[derive(Debug, Clone)]
pub(crate) struct Sp<T> {
    pub value: T,
    pub at: Pos,
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Sp<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = serde_saphyr::Spanned::<T>::deserialize(d)?;
        Ok(Sp {
            value: s.value,
            at: Pos::from_location(s.referenced),
        })
    }
}

impl<T: JsonSchema> JsonSchema for Sp<T> {
    fn inline_schema() -> bool {
        T::inline_schema()
    }
    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }
    fn schema_id() -> Cow<'static, str> {
        T::schema_id()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        T::json_schema(generator)
    }
}

/// A secret as written: `{env: NAME}`, `{file: PATH}`, or (an error) inline.
#[derive(Debug, Clone)]
pub(crate) enum RawSecret {
    Env(String),
    File(String),
    Inline,
}

impl<'de> Deserialize<'de> for RawSecret {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawSecret;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("{env: NAME} or {file: PATH}")
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<RawSecret, E> {
                Ok(RawSecret::Inline)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<RawSecret, E> {
                Ok(RawSecret::Inline)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<RawSecret, E> {
                Ok(RawSecret::Inline)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<RawSecret, E> {
                Ok(RawSecret::Inline)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<RawSecret, E> {
                Ok(RawSecret::Inline)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawSecret, A::Error> {
                secret_from_map(map)
            }
        }
        d.deserialize_any(V)
    }
}

/// The `{env: NAME}` or `{file: PATH}` map of a secret.
fn secret_from_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<RawSecret, A::Error> {
    let mut found: Option<RawSecret> = None;
    while let Some(key) = map.next_key::<String>()? {
        let value: String = map.next_value()?;
        let secret = match key.as_str() {
            "env" => RawSecret::Env(value),
            "file" => RawSecret::File(value),
            other => {
                return Err(de::Error::custom(format!(
                    "unknown secret source `{other}`: write {{env: NAME}} or {{file: PATH}}"
                )));
            }
        };
        if found.is_some() {
            return Err(de::Error::custom(
                "a secret has exactly one source: {env: NAME} or {file: PATH}",
            ));
        }
        found = Some(secret);
    }
    found.ok_or_else(|| de::Error::custom("empty secret: write {env: NAME} or {file: PATH}"))
}

/// Text that may be written inline or, when it carries a credential, read
/// as a secret: an Apprise-style notifier URL.
#[derive(Debug, Clone)]
pub(crate) enum RawSecretOrText {
    Text(String),
    Secret(RawSecret),
}

impl<'de> Deserialize<'de> for RawSecretOrText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawSecretOrText;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("text, {env: NAME} or {file: PATH}")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawSecretOrText, E> {
                Ok(RawSecretOrText::Text(v.to_owned()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawSecretOrText, A::Error> {
                secret_from_map(map).map(RawSecretOrText::Secret)
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for RawSecretOrText {
    fn schema_name() -> Cow<'static, str> {
        "TextOrSecret".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let secret = generator.subschema_for::<RawSecret>();
        json_schema!({
            "description": "Inline text, or a secret ({env: NAME} or {file: PATH}) when it carries a credential.",
            "oneOf": [{"type": "string"}, secret]
        })
    }
}

impl JsonSchema for RawSecret {
    fn schema_name() -> Cow<'static, str> {
        "Secret".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A secret, never inline: read from an environment variable ({env: NAME}) or a file ({file: PATH}, one trailing newline trimmed).",
            "oneOf": [
                {
                    "type": "object",
                    "properties": {"env": {"type": "string", "description": "Environment variable name."}},
                    "required": ["env"],
                    "additionalProperties": false
                },
                {
                    "type": "object",
                    "properties": {"file": {"type": "string", "description": "File path."}},
                    "required": ["file"],
                    "additionalProperties": false
                }
            ]
        })
    }
}

/// A byte size as written: an integer number of bytes or text like `20MiB`.
#[derive(Debug, Clone)]
pub(crate) enum ByteSize {
    Bytes(u64),
    Text(String),
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ByteSize;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a byte size: a number of bytes or text like 20MiB")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ByteSize, E> {
                Ok(ByteSize::Text(v.to_owned()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ByteSize, E> {
                Ok(ByteSize::Bytes(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ByteSize, E> {
                Ok(
                    u64::try_from(v)
                        .map_or_else(|_| ByteSize::Text(v.to_string()), ByteSize::Bytes),
                )
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<ByteSize, E> {
                Ok(ByteSize::Text(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for ByteSize {
    fn schema_name() -> Cow<'static, str> {
        "ByteSize".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A byte size: an integer number of bytes, or a number with a unit: B, kB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), e.g. \"20MiB\".",
            "oneOf": [
                {"type": "integer", "minimum": 1},
                {"type": "string", "pattern": "^\\s*[0-9]+(\\.[0-9]+)?\\s*([kKmMgGtT][iI]?[bB]|[bB])?\\s*$"}
            ]
        })
    }
}
