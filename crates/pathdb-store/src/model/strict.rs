//! I-JSON (RFC 7493) on input: JSON text whose meaning depends on the reader is refused.
//!
//! - An object with the same member name twice: serde_json keeps the last, JavaScript too, other
//!   parsers the first or an error; the value read back would depend on the client.
//! - A string with a lone surrogate escape (`"\ud800"`): it is not Unicode text, and readers
//!   replace, drop or refuse it.
//!
//! [`check`] reads the text once and names what it found and where (the member's JSON pointer,
//! or the escape's line and column).

use serde::de::{DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// Checks that `text` is one JSON value with no duplicate member names and no lone surrogate
/// escapes.
///
/// # Errors
/// The first problem found (a syntax error included), worded for people.
pub fn check(text: &str) -> Result<(), serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let mut pointer = String::new();
    Strict {
        pointer: &mut pointer,
    }
    .deserialize(&mut de)
    .map_err(|e| name_surrogate(e, text))?;
    de.end()
}

/// The JSON pointer of the value being read, for messages.
struct Strict<'p> {
    pointer: &'p mut String,
}

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let base = self.pointer.len();
        let mut index = 0usize;
        loop {
            self.pointer.truncate(base);
            self.pointer.push('/');
            self.pointer.push_str(itoa::Buffer::new().format(index));
            let more = seq.next_element_seed(Strict {
                pointer: self.pointer,
            })?;
            if more.is_none() {
                break;
            }
            index += 1;
        }
        self.pointer.truncate(base);
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let base = self.pointer.len();
        // Most objects are small: a linear search beats hashing them.
        let mut names: Vec<Cow<'de, str>> = Vec::new();
        let mut many: Option<std::collections::HashSet<Cow<'de, str>>> = None;
        while let Some(name) = map.next_key_seed(Name)? {
            let repeated = match &mut many {
                Some(set) => !set.insert(name.clone()),
                None => names.contains(&name),
            };
            if repeated {
                let at = if base == 0 {
                    "the top-level object".to_owned()
                } else {
                    format!("the object at {}", &self.pointer[..base])
                };
                return Err(A::Error::custom(format!(
                    "duplicate member name {:?} in {at}: each name may appear once (I-JSON, RFC 7493)",
                    name.as_ref()
                )));
            }
            self.pointer.truncate(base);
            self.pointer.push('/');
            push_escaped(self.pointer, &name);
            if many.is_none() {
                names.push(name);
                if names.len() > 16 {
                    many = Some(names.drain(..).collect());
                }
            }
            map.next_value_seed(Strict {
                pointer: self.pointer,
            })?;
        }
        self.pointer.truncate(base);
        Ok(())
    }
}

/// Appends a member name as a JSON pointer's reference token (RFC 6901: `~` as `~0`, `/` as
/// `~1`), copying it whole when it has neither (every name of every value is pushed).
fn push_escaped(pointer: &mut String, name: &str) {
    if !name.contains(['~', '/']) {
        pointer.push_str(name);
        return;
    }
    for c in name.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            c => pointer.push(c),
        }
    }
}

/// A member name, borrowed from the text when it has no escapes.
struct Name;

impl<'de> DeserializeSeed<'de> for Name {
    type Value = Cow<'de, str>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Name {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(s))
    }

    fn visit_str<E>(self, s: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(s.to_owned()))
    }
}

/// serde_json words a lone surrogate as a hex-escape problem ("unexpected end of hex escape"):
/// say what it is.
fn name_surrogate(e: serde_json::Error, text: &str) -> serde_json::Error {
    let message = e.to_string();
    let surrogate = ["hex escape", "invalid unicode code point"]
        .iter()
        .any(|m| message.contains(m));
    if !surrogate || !has_lone_surrogate(text) {
        return e;
    }
    serde_json::Error::custom(format!(
        "a string holds a lone surrogate escape (\\uD800 to \\uDFFF without its pair) near line \
         {} column {}: JSON strings must be Unicode text (I-JSON, RFC 7493)",
        e.line(),
        e.column()
    ))
}

/// Whether some `\u` escape in `text` is a surrogate without its pair.
fn has_lone_surrogate(text: &str) -> bool {
    let bytes = text.as_bytes();
    let escape = |at: usize| -> Option<u16> {
        let hex = bytes.get(at..at + 6)?;
        if &hex[..2] != b"\\u" {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(&hex[2..]).ok()?, 16).ok()
    };
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            match escape(i) {
                Some(0xD800..=0xDBFF) => {
                    if !matches!(escape(i + 6), Some(0xDC00..=0xDFFF)) {
                        return true;
                    }
                    i += 12;
                    continue;
                }
                Some(0xDC00..=0xDFFF) => return true,
                // `\\` is one escape: skip both, so `\\ud800` is not read as an escape.
                _ => i += 2,
            }
        } else {
            i += 1;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn refuses_duplicates_anywhere_and_names_them() {
        for (text, name, at) in [
            (r#"{"a":1,"a":2}"#, "\"a\"", "top-level"),
            (r#"{"x":{"b":1,"c":2,"b":3}}"#, "\"b\"", "/x"),
            (r#"[0,{"x":[{"k":1,"k":1}]}]"#, "\"k\"", "/1/x/0"),
            (r#"{"a":1,"\u0061":2}"#, "\"a\"", "top-level"),
            // The pointer escapes `~` and `/` in names (RFC 6901), and only those.
            (r#"{"a/b~c":{"é~":{"k":1,"k":2}}}"#, "\"k\"", "/a~1b~0c/é~0"),
            (r#"{"plain é":[{"k":1,"k":2}]}"#, "\"k\"", "/plain é/0"),
        ] {
            let e = check(text).unwrap_err().to_string();
            assert!(e.contains(name) && e.contains(at), "{text}: {e}");
        }
        let wide: String = (0..40).map(|i| format!("\"k{i}\":{i},")).collect();
        let e = check(&format!("{{{wide}\"k3\":0}}"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"k3\""), "{e}");
        check(r#"{"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}]}"#).unwrap();
        check(&format!("{{{wide}\"z\":0}}")).unwrap();
    }

    #[test]
    fn names_lone_surrogates_and_keeps_pairs() {
        for text in [
            r#""\ud800""#,
            r#"{"a":"x\udc00y"}"#,
            r#"["\ud83d"]"#,
            r#"{"\ud800":1}"#,
        ] {
            let e = check(text).unwrap_err().to_string();
            assert!(e.contains("lone surrogate"), "{text}: {e}");
        }
        check(r#""\ud83d\ude00""#).unwrap();
        check(r#""\\ud800""#).unwrap();
        let e = check(r#"{"a":"#).unwrap_err().to_string();
        assert!(e.contains("EOF"), "{e}");
    }
}
