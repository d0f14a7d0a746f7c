//! Evaluating a filter on one item: the item's names as CEL values, made only when the filter
//! uses them, and the verdict (`true` matches; anything else, an error included, does not).

use super::compile::{ENV, Filter, VARIABLES};
use cel::common::types::{
    CelBool, CelBytes, CelDouble, CelInt, CelList, CelMap, CelMapKey, CelNull, CelString, CelUInt,
};
use cel::common::value::Val;
use cel::{Context, Value};
use pathdb_keys::{Id, KeyPath};
use serde::de::{self, Deserializer as _, MapAccess, SeqAccess, Visitor};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// Stack an evaluation must find left, or it runs on a grown one: CEL's interpreter takes about
/// 60 KiB a level in a debug build, and a filter may be [`MAX_FILTER_DEPTH`] deep.
///
/// [`MAX_FILTER_DEPTH`]: super::MAX_FILTER_DEPTH
pub(super) const RED_ZONE: usize = 3 << 20;
/// The stack grown for an evaluation (or a page of them: see [`Filter::on_stack`]).
pub(super) const EVAL_STACK: usize = 8 << 20;

/// One item as a filter sees it.
pub struct Subject<'a> {
    /// Where the item is listed (or, in a feed, where the change is filed): `path` and `ids`.
    pub path: &'a dyn Fn() -> KeyPath,
    /// The JSON value's text.
    pub value: &'a str,
    /// The item's version.
    pub version: u64,
    /// When it was created, in microseconds.
    pub created_at: i64,
    /// When it was last written, in microseconds.
    pub modified_at: i64,
}

impl Filter {
    /// Whether the item matches: the filter evaluates to `true`. A value that is not JSON, a
    /// missing member or a type mismatch is no match.
    pub fn matches(&self, subject: &Subject<'_>) -> bool {
        stacker::maybe_grow(RED_ZONE, EVAL_STACK, || self.evaluate(subject))
    }

    /// Runs `f` where [`Filter::matches`] finds the stack it needs without growing one each
    /// time: wrap a loop that evaluates many items.
    pub fn on_stack<T>(f: impl FnOnce() -> T) -> T {
        stacker::maybe_grow(RED_ZONE + (1 << 20), EVAL_STACK, f)
    }

    fn evaluate(&self, subject: &Subject<'_>) -> bool {
        let compiled = self.compiled();
        let mut context = Context::with_env(Arc::clone(&ENV));
        let mut path = None;
        for (name, _) in VARIABLES
            .iter()
            .zip(compiled.uses)
            .filter(|(_, used)| *used)
        {
            let value: Box<dyn Val + '_> = match *name {
                "value" => match json_val(subject.value, compiled.value_members.as_deref()) {
                    Some(value) => value,
                    None => return false,
                },
                "path" => Box::new(CelString::from(
                    path.get_or_insert_with(|| (subject.path)()).to_string(),
                )),
                "ids" => ids(path.get_or_insert_with(|| (subject.path)())),
                "version" => Box::new(CelUInt::from(subject.version)),
                "created_at" => Box::new(CelInt::from(subject.created_at)),
                _ => Box::new(CelInt::from(subject.modified_at)),
            };
            context.add_variable_as_val(*name, value);
        }
        matches!(compiled.program.execute(&context), Ok(Value::Bool(true)))
    }
}

/// Each namespace of `path` with an id, to that id: integers as `int` (`uint` past its range),
/// strings and UUIDs as `string`, bytes as `bytes`. A namespace that comes twice maps to its
/// deepest id.
fn ids(path: &KeyPath) -> Box<dyn Val + 'static> {
    let mut map: HashMap<CelMapKey<'static>, Box<dyn Val>> = HashMap::new();
    for element in path.elements() {
        let Some(id) = element.id() else { continue };
        let value: Box<dyn Val> = match id {
            Id::Int(n) | Id::DescInt(n) => match i64::try_from(n.get()) {
                Ok(n) => Box::new(CelInt::from(n)),
                Err(_) => match u64::try_from(n.get()) {
                    Ok(n) => Box::new(CelUInt::from(n)),
                    Err(_) => Box::new(CelString::from(n.to_string())),
                },
            },
            Id::String(s) | Id::DescString(s) => Box::new(CelString::from(s.clone())),
            Id::Uuid(u) => Box::new(CelString::from(u.to_string())),
            Id::Bytes(b) | Id::DescBytes(b) => Box::new(CelBytes::from(b.clone())),
        };
        map.insert(
            CelMapKey::from(element.namespace().as_str().to_owned()),
            value,
        );
    }
    Box::new(CelMap::from(map))
}

/// A JSON text as a CEL value, in one pass and borrowing its strings where it can: integers as
/// `int` (`uint` past its range), other numbers as `double`. With `members`, an object keeps
/// only those members (the rest is skipped unread), as a filter that reads only those sees no
/// difference; a value that is not an object is made whole. `None` if it is not JSON.
fn json_val<'v>(text: &'v str, members: Option<&[String]>) -> Option<Box<dyn Val + 'v>> {
    if let Some(members) = members {
        let mut de = serde_json::Deserializer::from_str(text);
        match de.deserialize_any(Top { members }) {
            Ok(Some(value)) => return de.end().ok().map(|()| value),
            // Not an object: made whole below.
            Ok(None) => {}
            Err(_) => return None,
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    // A stored value nests at most as deep as serde_json reads (128): the recursion here is
    // the parser's own.
    let value = de.deserialize_any(Whole).ok()?;
    de.end().ok()?;
    Some(value)
}

/// The top of a value that a filter reads only some members of.
struct Top<'m> {
    members: &'m [String],
}

impl<'de> Visitor<'de> for Top<'_> {
    type Value = Option<Box<dyn Val + 'de>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
        let mut map = HashMap::with_capacity(self.members.len());
        while let Some(key) = access.next_key_seed(KeySeed)? {
            let wanted = match &key {
                CelMapKey::String(name) => self.members.iter().any(|m| m == name.inner()),
                _ => false,
            };
            if wanted {
                map.insert(key, access.next_value_seed(Seed)?);
            } else {
                access.next_value::<de::IgnoredAny>()?;
            }
        }
        Ok(Some(Box::new(CelMap::from(map))))
    }

    // Anything else is not an object: `None`, and the caller makes it whole.
    not_an_object!();
}

/// A whole JSON value as a CEL value.
struct Whole;

impl<'de> Visitor<'de> for Whole {
    type Value = Box<dyn Val + 'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Box::new(CelBool::from(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Box::new(CelInt::from(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(match i64::try_from(v) {
            Ok(v) => Box::new(CelInt::from(v)),
            Err(_) => Box::new(CelUInt::from(v)),
        })
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Box::new(CelDouble::from(v)))
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Box::new(CelString::from(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Box::new(CelString::from(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Box::new(CelString::from(v)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Box::new(CelNull))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(item) = seq.next_element_seed(Seed)? {
            items.push(item);
        }
        Ok(Box::new(CelList::from(items)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
        let mut map = HashMap::with_capacity(access.size_hint().unwrap_or(0).min(64));
        while let Some(key) = access.next_key_seed(KeySeed)? {
            let value = access.next_value_seed(Seed)?;
            map.insert(key, value);
        }
        Ok(Box::new(CelMap::from(map)))
    }
}

struct Seed;

impl<'de> de::DeserializeSeed<'de> for Seed {
    type Value = Box<dyn Val + 'de>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(Whole)
    }
}

/// An object's member name as a CEL map key, borrowed where the text has no escapes.
struct KeySeed;

impl<'de> de::DeserializeSeed<'de> for KeySeed {
    type Value = CelMapKey<'de>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(KeySeed)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = CelMapKey<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(CelMapKey::String(CelString::from(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(CelMapKey::from(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(CelMapKey::from(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(filter: &str, value: &str) -> bool {
        let filter = Filter::compile(filter).expect("compiles");
        let path: KeyPath = "/user-7/order-12".parse().expect("a path");
        let path = move || path.clone();
        filter.matches(&Subject {
            path: &path,
            value,
            version: 3,
            created_at: 1_000,
            modified_at: 2_000,
        })
    }

    #[test]
    fn the_item_is_visible_by_its_names() {
        let order = r#"{"status": "open", "total": 150.5, "tags": ["a", "b"], "n": 2}"#;
        assert!(matches(
            r#"value.status == "open" && value.total > 100"#,
            order
        ));
        assert!(!matches("value.total > 200", order));
        assert!(matches("ids.user == 7 && ids.order == 12", order));
        assert!(matches(r#"path == "/user-7/order-12""#, order));
        assert!(matches(r#"path.startsWith("/user-7/")"#, order));
        assert!(matches("version == 3u && created_at < modified_at", order));
        assert!(matches("version > 2", order));
        assert!(matches(r#""a" in value.tags && value.n in [1, 2]"#, order));
        assert!(matches(r#"value.tags.exists(t, t == "b")"#, order));
        assert!(matches("has(value.status) && !has(value.missing)", order));
        assert!(matches(r#"value.status.matches("^op")"#, order));
        assert!(matches("size(value.tags) == 2", order));
    }

    #[test]
    fn an_error_is_never_a_match() {
        let order = r#"{"status": "open", "total": "lots"}"#;
        assert!(!matches("value.total > 100", order));
        assert!(!matches("value.missing == 1", order));
        assert!(!matches("!(value.missing == 1)", order));
        assert!(!matches("value.status", order), "not a bool");
        assert!(!matches("value.total > 100", "[1, 2]"));
        assert!(!matches("value.total > 100", "null"));
        assert!(matches("value == null", "null"));
    }

    #[test]
    fn only_the_members_a_filter_reads_are_made_and_it_sees_no_difference() {
        let members = |f: &str| {
            Filter::compile(f)
                .expect(f)
                .compiled()
                .value_members
                .clone()
        };
        assert_eq!(
            members("value.a == 1 && has(value.b) || value.a.c > 2"),
            Some(vec!["a".to_owned(), "b".to_owned()])
        );
        assert_eq!(members("size(value) > 1"), None);
        assert_eq!(members(r#"value == {"a": 1}"#), None);
        assert_eq!(members(r#"value["a"] == 1"#), None);
        // A comprehension's own `value` is not the item's.
        assert_eq!(
            members("value.l.exists(value, value > 1)"),
            Some(vec!["l".to_owned()])
        );
        // The same verdicts as on the whole value, objects or not.
        for value in [
            r#"{"a": 1, "b": [1, 2], "c": {"d": "x"}, "e": null}"#,
            r#"{"a": "1", "z": {"deep": [1, {"x": 2}]}}"#,
            "[1, 2]",
            "7",
            "null",
            r#""text""#,
        ] {
            for filter in [
                "value.a == 1",
                "has(value.a)",
                "!has(value.b)",
                "value.c.d == 'x'",
                "has(value.e) && value.e == null",
                "value.b.exists(x, x == 2)",
            ] {
                let whole = format!("({filter}) && size([value]) == 1");
                assert_eq!(
                    matches(filter, value),
                    matches(&whole, value),
                    "{filter} on {value}"
                );
            }
        }
    }

    #[test]
    fn only_the_names_a_filter_uses_are_made() {
        let f = Filter::compile("value.a == 1 && ids.u == 2").expect("compiles");
        let used = super::super::compile::used(&f);
        assert_eq!(used, ["value", "ids"].into_iter().collect());
    }
}
