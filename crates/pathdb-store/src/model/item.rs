//! Items: a JSON value at a key path, with its metadata.

use crate::model::error::Error;
use pathdb_keys::KeyPath;
use serde::{Serialize, Serializer};
use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

/// Microseconds since the Unix epoch, UTC.
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// The current time.
    pub fn now() -> Timestamp {
        let d = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Timestamp(i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
    }

    /// Microseconds since the epoch.
    pub fn micros(self) -> i64 {
        self.0
    }

    /// This time plus a duration (saturating).
    pub fn plus(self, d: std::time::Duration) -> Timestamp {
        Timestamp(
            self.0
                .saturating_add(i64::try_from(d.as_micros()).unwrap_or(i64::MAX)),
        )
    }
}

/// Valid JSON text, kept as text: reads hand it back without parsing it again.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Json(Box<str>);

impl Json {
    /// Validates JSON text and keeps it exactly, minus insignificant whitespace: key order,
    /// number spelling and string escapes survive (lossless export), and one value is one line.
    ///
    /// # Errors
    /// [`Error::InvalidJson`] with serde_json's line and column, also for what serde_json cannot
    /// read into a `Value` (nesting beyond 127 levels, numbers beyond `f64`, a lone surrogate
    /// such as `"\ud800"`), so that [`Json::to_value`] never has to substitute `Null` for a
    /// value the store accepted, and for an object that names a member twice (I-JSON, RFC
    /// 7493; see [`check_json`](crate::model::strict::check)).
    pub fn parse(text: &str) -> Result<Json, Error> {
        // One read that checks the syntax, serde_json's limits (nesting, numbers that overflow
        // an f64) and I-JSON (no duplicate names, no lone surrogates): what is stored is what
        // every client reads back the same way.
        crate::model::strict::check(text).map_err(Error::InvalidJson)?;
        Ok(Json(minify(text).into_boxed_str()))
    }

    /// `null`.
    pub(crate) fn null() -> Json {
        Json(Box::from("null"))
    }

    /// Serializes a value.
    pub fn from_value(value: &serde_json::Value) -> Json {
        Json(value.to_string().into_boxed_str())
    }

    /// Text the store wrote itself (validated when it was written).
    pub(crate) fn from_stored(bytes: Vec<u8>) -> Result<Json, Error> {
        String::from_utf8(bytes)
            .map(|s| Json(s.into_boxed_str()))
            .map_err(|e| {
                Error::Storage(crate::model::error::StorageError::new(
                    "stored value is not UTF-8",
                    e,
                ))
            })
    }

    /// JSON text the store made itself from valid JSON (a translated value): kept without a
    /// check, and without a copy when `text` has no spare capacity.
    pub(crate) fn from_string(text: String) -> Json {
        Json(text.into_boxed_str())
    }

    /// [`Json::from_stored`] from borrowed bytes: one allocation, of the exact size.
    pub(crate) fn from_stored_slice(bytes: &[u8]) -> Result<Json, Error> {
        std::str::from_utf8(bytes)
            .map(|s| Json(Box::from(s)))
            .map_err(|e| {
                Error::Storage(crate::model::error::StorageError::new(
                    "stored value is not UTF-8",
                    e,
                ))
            })
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Parses the text into a value.
    pub fn to_value(&self) -> serde_json::Value {
        // Valid by construction; `Null` only if the stored bytes were corrupted.
        serde_json::from_str(&self.0).unwrap_or(serde_json::Value::Null)
    }
}

/// Drops whitespace outside strings from valid JSON text, copying the runs between dropped
/// bytes. A string is skipped whole, from one `"` or `\\` to the next with `memchr`: in the
/// values clients send most bytes are inside strings, and a byte at a time they cost about 10
/// instructions each (a fifth of a put's body parse). The bytes that matter (whitespace, `"`,
/// `\\`) are ASCII, which never occurs inside a multi-byte UTF-8 character, so every cut is at a
/// character boundary.
fn minify(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    // The start of the bytes not copied yet.
    let mut run = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                // Past the closing quote; an escape's next byte is never one. Text that is not
                // JSON may have none: then the rest is the string.
                i += 1;
                loop {
                    match memchr::memchr2(b'"', b'\\', &bytes[i..]) {
                        Some(at) if bytes[i + at] == b'\\' => i = (i + at + 2).min(bytes.len()),
                        Some(at) => {
                            i += at + 1;
                            break;
                        }
                        None => {
                            i = bytes.len();
                            break;
                        }
                    }
                }
            }
            b' ' | b'\t' | b'\n' | b'\r' => {
                out.push_str(&text[run..i]);
                i += 1;
                run = i;
            }
            _ => i += 1,
        }
    }
    out.push_str(&text[run..]);
    out
}

#[cfg(test)]
pub(crate) mod minify_tests {
    use super::minify;
    use proptest::prelude::*;

    /// The char-by-char version the byte version replaced: the reference.
    fn by_chars(text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let (mut in_string, mut escaped) = (false, false);
        for c in text.chars() {
            if in_string {
                out.push(c);
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == '"' {
                    in_string = false;
                }
            } else if !matches!(c, ' ' | '\t' | '\n' | '\r') {
                in_string = c == '"';
                out.push(c);
            }
        }
        out
    }

    #[test]
    fn keeps_strings_and_drops_the_rest() {
        let text = "{ \"a b\" : [ 1 ,\t\"\\\" x\" ,\n\"é 😀\\\\\" ] }\r\n";
        assert_eq!(minify(text), "{\"a b\":[1,\"\\\" x\",\"é 😀\\\\\"]}");
        assert_eq!(minify(text), by_chars(text));
    }

    proptest! {
        /// Pretty-printed JSON of any shape, with escapes and non-ASCII text in its strings,
        /// minifies as the char version did, and to serde_json's compact text.
        #[test]
        fn matches_the_char_version(value in json(), pretty in any::<bool>()) {
            let text = if pretty {
                serde_json::to_string_pretty(&value).unwrap()
            } else {
                serde_json::to_string(&value).unwrap()
            };
            prop_assert_eq!(minify(&text), by_chars(&text));
            prop_assert_eq!(minify(&text), serde_json::to_string(&value).unwrap());
        }

        /// Any text at all (valid JSON or not) gives the same as the char version.
        #[test]
        fn matches_the_char_version_on_any_text(text in "[ \t\n\r\"\\\\a-zé😀{}\\[\\],:]{0,40}") {
            prop_assert_eq!(minify(&text), by_chars(&text));
        }
    }

    /// JSON of any shape, with escapes, control characters, whitespace and non-ASCII text in
    /// its strings and member names (also the change log writer's test, encoding/changelog.rs).
    pub(crate) fn json() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            "[ a-z\"\\\\\t\n\u{1}é😀]{0,8}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
                prop::collection::btree_map("[ a-z\"]{1,3}", inner, 0..4)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }
}

impl fmt::Display for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let raw: &serde_json::value::RawValue =
            serde_json::from_str(&self.0).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

impl From<serde_json::Value> for Json {
    fn from(v: serde_json::Value) -> Json {
        Json::from_value(&v)
    }
}

impl std::str::FromStr for Json {
    type Err = Error;
    fn from_str(s: &str) -> Result<Json, Error> {
        Json::parse(s)
    }
}

/// Deserializes a field that is `Some` whenever it is present, `null` included: with
/// `#[serde(default, deserialize_with = "present")]`, a missing field is `None` and a JSON
/// `null` is a value (`Option`'s own deserializer would read `null` as `None`, losing it).
pub(crate) fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// An item: its path, metadata and value.
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
pub struct Item {
    /// Where it lives.
    pub path: KeyPath,
    /// 1 on creation, +1 on every write.
    pub version: u64,
    /// When the item was created.
    pub created_at: Timestamp,
    /// When the item was last written.
    pub modified_at: Timestamp,
    /// When the item expires, if it does.
    pub expires_at: Option<Timestamp>,
    /// The JSON value.
    pub value: Json,
    /// The alias path it was read through or listed under (docs/aliases.md); `None`: read at
    /// its own path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alias: Option<KeyPath>,
    /// The definition version its value is in (docs/migrations.md): as read from the store,
    /// the version it was written at, or 0 for one written before its namespace's versions had
    /// migration steps (encoding/stamp.rs); after [`Store::in_versions`](crate::Store::in_versions),
    /// the version asked.
    #[serde(skip_serializing_if = "is_zero")]
    pub schema_version: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
