//! Evaluating a filter on one item: the item's names as CEL values, made only when the filter
//! uses them, and the verdict (`true` matches; anything else, an error included, does not).

use super::compile::{ENV, Filter, VARIABLES};
use cel::objects::{Key, Map};
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
            let value = match *name {
                "value" => match json_value(subject.value) {
                    Some(value) => value,
                    None => return false,
                },
                "path" => Value::String(Arc::new(
                    path.get_or_insert_with(|| (subject.path)()).to_string(),
                )),
                "ids" => ids(path.get_or_insert_with(|| (subject.path)())),
                "version" => Value::UInt(subject.version),
                "created_at" => Value::Int(subject.created_at),
                _ => Value::Int(subject.modified_at),
            };
            context.add_variable_from_value(*name, value);
        }
        matches!(compiled.program.execute(&context), Ok(Value::Bool(true)))
    }
}

/// Each namespace of `path` with an id, to that id: integers as `int` (`uint` past its range),
/// strings and UUIDs as `string`, bytes as `bytes`. A namespace that comes twice maps to its
/// deepest id.
fn ids(path: &KeyPath) -> Value {
    let mut map = HashMap::new();
    for element in path.elements() {
        let Some(id) = element.id() else { continue };
        let value = match id {
            Id::Int(n) | Id::DescInt(n) => match i64::try_from(n.get()) {
                Ok(n) => Value::Int(n),
                Err(_) => match u64::try_from(n.get()) {
                    Ok(n) => Value::UInt(n),
                    Err(_) => Value::String(Arc::new(n.to_string())),
                },
            },
            Id::String(s) | Id::DescString(s) => Value::String(Arc::new(s.clone())),
            Id::Uuid(u) => Value::String(Arc::new(u.to_string())),
            Id::Bytes(b) | Id::DescBytes(b) => Value::Bytes(Arc::new(b.clone())),
        };
        map.insert(
            Key::String(Arc::new(element.namespace().as_str().to_owned())),
            value,
        );
    }
    Value::Map(Map { map: Arc::new(map) })
}

/// A JSON text as a CEL value, in one pass: integers as `int` (`uint` past its range, `double`
/// past that), other numbers as `double`. `None` if it is not JSON.
fn json_value(text: &str) -> Option<Value> {
    let mut de = serde_json::Deserializer::from_str(text);
    // A stored value nests at most as deep as serde_json reads (128): the recursion here is
    // the parser's own.
    let value = de.deserialize_any(CelVisitor).ok()?;
    de.end().ok()?;
    Some(value)
}

struct CelVisitor;

impl<'de> Visitor<'de> for CelVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Int(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(i64::try_from(v).map_or(Value::UInt(v), Value::Int))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Value::Float(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(Arc::new(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(Arc::new(v)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(item) = seq.next_element_seed(Seed)? {
            items.push(item);
        }
        Ok(Value::List(Arc::new(items)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = HashMap::with_capacity(access.size_hint().unwrap_or(0).min(64));
        while let Some(key) = access.next_key::<String>()? {
            let value = access.next_value_seed(Seed)?;
            map.insert(Key::String(Arc::new(key)), value);
        }
        Ok(Value::Map(Map { map: Arc::new(map) }))
    }
}

struct Seed;

impl<'de> de::DeserializeSeed<'de> for Seed {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(CelVisitor)
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
    fn only_the_names_a_filter_uses_are_made() {
        let f = Filter::compile("value.a == 1 && ids.u == 2").expect("compiles");
        let used = super::super::compile::used(&f);
        assert_eq!(used, ["value", "ids"].into_iter().collect());
    }
}
