//! Alias paths (docs/aliases.md): more key paths for one item, filled from its value by the
//! templates its namespace declares (`/email-{email}`, `/status-{status}/order-{@order}`,
//! `/top-1/score-{!points}`), and the records that hold them.
//!
//! An alias is stored under its own key, in the item key space, so it sorts, pages and lists
//! like any path and no item and no other alias can take it. Its record's value is not JSON: a
//! `00` byte (no JSON text starts with one), then the template it came from and the encoded path
//! of its item. It carries the item's expiry, so an alias is invisible exactly when its item is.
//! The write pipeline's alias stage (write/stages/aliases.rs) writes them in the same batch as the
//! item; reads resolve them to the item (read/aliases.rs).

use crate::model::error::Error;
use pathdb_keys::{Desc, Element, Id, Int, KeyPath, Namespace};
use serde_json::Value;

/// Most alias templates per namespace: each is one more write in a transaction (DynamoDB takes
/// at most 100 per transaction).
pub const MAX_ALIASES: usize = 8;

/// One element of a template: a fixed element, or one whose id comes from the item.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    /// Copied as written.
    Fixed(Element),
    /// The id comes from the item.
    Filled(Namespace, Source),
}

/// Where a filled id comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Source {
    /// `{a.b}`: the value's member (a string or an integer); `descending`: `{!a.b}`.
    Member {
        names: Vec<String>,
        descending: bool,
    },
    /// `{@ns}`: the id of the item path's (last) element of namespace `ns`.
    PathId(String),
}

/// A compiled alias template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    text: String,
    parts: Vec<Part>,
}

/// Why an item gives no alias for a template it should: a member of the wrong type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Unfit {
    /// The member, as the template names it.
    pub(crate) member: String,
    /// What it is instead of a string or an integer.
    pub(crate) kind: &'static str,
}

impl Template {
    /// Compiles a template: a key path whose ids may be `{member}` (a dotted path into the
    /// value: `{address.city}`), `{!member}` (the same, as a descending id) or `{@ns}` (the id of
    /// the item path's element of namespace `ns`).
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] naming what is wrong.
    pub fn parse(text: &str) -> Result<Template, Error> {
        let bad = |why: String| Error::InvalidRequest(format!("alias template {text:?}: {why}"));
        let Some(rest) = text.strip_prefix('/') else {
            return Err(bad("a template is a key path: it starts with `/`".into()));
        };
        let mut parts = Vec::new();
        for segment in split_segments(rest) {
            let (namespace, id) = match segment.split_once('-') {
                Some((ns, id)) => (ns, Some(id)),
                None => (segment, None),
            };
            let ns = Namespace::new(namespace)
                .map_err(|rule| bad(format!("namespace {namespace:?}: {rule}")))?;
            let filled = id.and_then(|id| id.strip_prefix('{')?.strip_suffix('}'));
            match filled {
                Some(inner) => parts.push(Part::Filled(ns, parse_source(inner).map_err(bad)?)),
                None => {
                    let path: KeyPath = format!("/{segment}")
                        .parse()
                        .map_err(|e| bad(format!("{e}")))?;
                    parts.push(Part::Fixed(path.last().clone()));
                }
            }
        }
        if !parts.iter().any(|p| matches!(p, Part::Filled(..))) {
            return Err(bad(
                "it fills no id from the item (`{member}`, `{!member}` or `{@namespace}`): every item would take the same path".into(),
            ));
        }
        if let Some(Part::Fixed(first)) = parts.first()
            && first.id().is_none()
        {
            return Err(bad("the first element needs an id".into()));
        }
        if parts[..parts.len() - 1]
            .iter()
            .any(|p| matches!(p, Part::Fixed(e) if e.id().is_none()))
        {
            return Err(bad("only the last element may omit its id".into()));
        }
        let template = Template {
            text: text.to_owned(),
            parts,
        };
        // A template whose every filled id were an integer must still make a valid path.
        template
            .build(|_| Some(Id::Int(Int::from(1u64))))
            .map_err(bad)?;
        Ok(template)
    }

    /// The template as declared.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The top-level members of an item's value this template reads (`address` for
    /// `{address.city}`): [`read_members`] builds only those.
    pub(crate) fn members_read(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|part| match part {
            Part::Filled(_, Source::Member { names, .. }) => names.first().map(String::as_str),
            _ => None,
        })
    }

    /// The alias this template gives the item at `path` whose value is `value`; `Ok(None)`
    /// when a member it needs is missing or `null` (a sparse alias), the path has no element it
    /// names, or a filled id is not a valid id.
    ///
    /// # Errors
    /// [`Error::AliasInvalid`] (index 0) for a member that is not a string or an integer.
    pub fn alias_of(&self, path: &KeyPath, value: &Value) -> Result<Option<KeyPath>, Error> {
        self.render(path, value)
            .map_err(|unfit| Error::AliasInvalid {
                path: path.clone(),
                member: unfit.member.into(),
                kind: unfit.kind,
                index: 0,
            })
    }

    /// The alias of the item at `path` whose value is `value`; `Ok(None)` when a member it
    /// needs is missing or `null` (a sparse alias) or the path has no element it names.
    pub(crate) fn render(&self, path: &KeyPath, value: &Value) -> Result<Option<KeyPath>, Unfit> {
        let mut unfit = None;
        let built = self.build(|source| match source {
            Source::PathId(ns) => path
                .elements()
                .iter()
                .rev()
                .find(|e| e.namespace().as_str() == ns)
                .and_then(|e| e.id().cloned()),
            Source::Member { names, descending } => {
                match id_of(member(value, names), *descending) {
                    Ok(id) => id,
                    Err(kind) => {
                        unfit.get_or_insert(Unfit {
                            member: names.join("."),
                            kind,
                        });
                        None
                    }
                }
            }
        });
        if let Some(unfit) = unfit {
            return Err(unfit);
        }
        // An id the key format refuses (an empty string, a control character) gives no alias
        // rather than refusing the item: the value is valid JSON, only not a valid id.
        Ok(built.ok().flatten())
    }

    /// The path with each filled id from `fill`; `Ok(None)` when `fill` gives none for one.
    fn build(
        &self,
        mut fill: impl FnMut(&Source) -> Option<Id>,
    ) -> Result<Option<KeyPath>, String> {
        let mut elements = Vec::with_capacity(self.parts.len());
        for (i, part) in self.parts.iter().enumerate() {
            elements.push(match part {
                Part::Fixed(e) => e.clone(),
                Part::Filled(ns, source) => match fill(source) {
                    Some(id) => Element::new(ns.clone(), Some(id))
                        .map_err(|rule| format!("element {i}: {rule}"))?,
                    None => return Ok(None),
                },
            });
        }
        KeyPath::from_elements(elements)
            .map(Some)
            .map_err(|e| e.to_string())
    }

    /// Whether `path` could be an alias of this template: the same namespaces, the same fixed
    /// ids (a path that does not is none of its aliases).
    pub(crate) fn could_make(&self, path: &KeyPath) -> bool {
        path.len() == self.parts.len()
            && self
                .parts
                .iter()
                .zip(path.elements())
                .all(|(part, e)| match part {
                    Part::Fixed(fixed) => fixed == e,
                    Part::Filled(ns, _) => e.namespace() == ns && e.id().is_some(),
                })
    }

    /// Whether every alias this template makes lies under `prefix`, or some could (a listing
    /// of `prefix` may meet them).
    pub(crate) fn may_lie_under(&self, prefix: &KeyPath) -> bool {
        prefix.len() <= self.parts.len()
            && self
                .parts
                .iter()
                .zip(prefix.elements())
                .all(|(part, e)| match part {
                    Part::Fixed(fixed) => fixed == e,
                    Part::Filled(ns, _) => e.namespace() == ns,
                })
    }
}

impl std::fmt::Display for Template {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// The segments of a template after its leading `/`, split at each `/` that a `%` does not
/// escape.
pub(crate) fn split_segments(rest: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in rest.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '%' => escaped = true,
            '/' => {
                out.push(&rest[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&rest[start..]);
    out
}

fn parse_source(inner: &str) -> Result<Source, String> {
    if let Some(ns) = inner.strip_prefix('@') {
        Namespace::new(ns).map_err(|rule| format!("`{{@{ns}}}`: {rule}"))?;
        return Ok(Source::PathId(ns.to_owned()));
    }
    let (descending, member) = match inner.strip_prefix('!') {
        Some(m) => (true, m),
        None => (false, inner),
    };
    let names: Vec<String> = member.split('.').map(str::to_owned).collect();
    if names.iter().any(String::is_empty) {
        return Err(format!(
            "`{{{inner}}}`: a member is one or more names joined by `.` (`{{address.city}}`)"
        ));
    }
    Ok(Source::Member { names, descending })
}

/// The value of JSON text as templates reading only the top-level members `wanted` see it: an
/// object of those members, or `null` when the text is not an object (a template finds no member
/// in either). Every other member is skipped without being built: rendering aliases from a
/// 100-byte value should not copy its long strings.
pub(crate) fn read_members(text: &str, wanted: &[&str]) -> Value {
    if wanted.is_empty() {
        return Value::Null;
    }
    let mut de = serde_json::Deserializer::from_str(text);
    serde::Deserializer::deserialize_any(&mut de, Members { wanted }).unwrap_or(Value::Null)
}

/// [`read_members`]' visitor: an object keeps the wanted members; anything else is `null`.
struct Members<'w> {
    wanted: &'w [&'w str],
}

impl<'de> serde::de::Visitor<'de> for Members<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(name) = map.next_key_seed(Wanted(self.wanted))? {
            match name {
                Some(name) => {
                    out.insert(name.to_owned(), map.next_value()?);
                }
                None => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(Value::Object(out))
    }

    // Not an object: no member to find. (The text was checked when it was stored.)
    fn visit_bool<E>(self, _: bool) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_str<E>(self, _: &str) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(Value::Null)
    }
}

/// A member name, as the wanted one it equals (`None`: not wanted), without copying it.
struct Wanted<'w>(&'w [&'w str]);

impl<'de, 'w> serde::de::DeserializeSeed<'de> for Wanted<'w> {
    type Value = Option<&'w str>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de, 'w> serde::de::Visitor<'de> for Wanted<'w> {
    type Value = Option<&'w str>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E>(self, name: &str) -> Result<Self::Value, E> {
        Ok(self.0.iter().copied().find(|w| *w == name))
    }
}

/// The member of `value` at `names` (`None`: missing).
fn member<'v>(value: &'v Value, names: &[String]) -> Option<&'v Value> {
    names
        .iter()
        .try_fold(value, |v, name| v.as_object()?.get(name))
}

/// The id a member gives: a string or an integer; `Ok(None)` for a missing or `null` member.
fn id_of(value: Option<&Value>, descending: bool) -> Result<Option<Id>, &'static str> {
    let kind = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) => {
            return Ok(Some(if descending {
                Id::from(Desc(s.as_str()))
            } else {
                Id::from(s.as_str())
            }));
        }
        Some(Value::Number(n)) => {
            let int = n
                .as_u64()
                .map(Int::from)
                .or_else(|| n.as_i64().map(Int::from));
            if let Some(int) = int {
                return Ok(Some(if descending {
                    Id::from(Desc(int))
                } else {
                    Id::Int(int)
                }));
            }
            "a number that is not an integer"
        }
        Some(Value::Bool(_)) => "a boolean",
        Some(Value::Array(_)) => "an array",
        Some(Value::Object(_)) => "an object",
    };
    Err(kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn path(s: &str) -> KeyPath {
        s.parse().unwrap()
    }

    #[test]
    fn renders_members_path_ids_and_descending_ints() {
        let t = Template::parse("/leaderboard-2026/score-{!points}/player-{@player}").unwrap();
        let alias = t
            .render(&path("/player-7"), &json!({"points": 1500}))
            .unwrap()
            .unwrap();
        assert_eq!(alias.to_string(), "/leaderboard-2026/score-!1500/player-7");
        let t = Template::parse("/city-{address.city}/user-{@user}").unwrap();
        let alias = t
            .render(&path("/user-3"), &json!({"address": {"city": "Oslo"}}))
            .unwrap();
        assert_eq!(alias.unwrap().to_string(), "/city-Oslo/user-3");
    }

    #[test]
    fn missing_or_null_members_give_no_alias_and_wrong_types_are_unfit() {
        let t = Template::parse("/email-{email}").unwrap();
        let p = path("/user-1");
        assert_eq!(t.render(&p, &json!({})).unwrap(), None);
        assert_eq!(t.render(&p, &json!({"email": null})).unwrap(), None);
        for bad in [json!(true), json!([1]), json!({"a": 1}), json!(1.5)] {
            let unfit = t.render(&p, &json!({ "email": bad })).unwrap_err();
            assert_eq!(unfit.member, "email");
        }
        // A string that reads as an integer stays a string id.
        let alias = t.render(&p, &json!({"email": "12"})).unwrap().unwrap();
        assert_eq!(alias.to_string(), "/email-%12");
    }

    #[test]
    fn refuses_templates_that_fill_nothing_or_are_not_paths() {
        for bad in [
            "email-{email}",
            "/email-x",
            "/a b-{x}",
            "/x-{}",
            "/x-{a..b}",
            "/x/y-{a}",
        ] {
            assert!(Template::parse(bad).is_err(), "{bad}");
        }
        assert!(Template::parse("/folder-a%/b/file-{name}").is_ok());
    }

    #[test]
    fn matches_the_paths_it_could_make() {
        let t = Template::parse("/status-{status}/order-{@order}").unwrap();
        assert!(t.could_make(&path("/status-open/order-4")));
        assert!(!t.could_make(&path("/status-open")));
        assert!(!t.could_make(&path("/state-open/order-4")));
        assert!(t.may_lie_under(&path("/status-open")));
        assert!(!t.may_lie_under(&path("/user-1")));
    }

    #[test]
    fn read_members_keeps_what_templates_read() {
        let p = path("/user-1");
        let text = r#"{"payload": "xxxxxxxx", "email": "ada@example.org", "address": {"city": "Oslo"}, "n": 7}"#;
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(
            read_members(text, &["email", "address"]),
            json!({"email": "ada@example.org", "address": {"city": "Oslo"}})
        );
        let t = Template::parse("/city-{address.city}/top-{!n}/user-{@user}").unwrap();
        let wanted: Vec<&str> = t.members_read().collect();
        assert_eq!(wanted, ["address", "n"]);
        assert_eq!(
            t.render(&p, &read_members(text, &wanted)).unwrap(),
            t.render(&p, &value).unwrap()
        );
        for not_an_object in ["[1, {\"email\": 1}]", "\"email\"", "12", "null", "true"] {
            assert_eq!(read_members(not_an_object, &["email"]), Value::Null);
        }
        assert_eq!(read_members(text, &[]), Value::Null);
    }

    proptest::proptest! {
        /// A template renders the same alias (or refuses the same member) from the members it
        /// reads as from the whole value.
        #[test]
        fn renders_the_same_from_the_members_it_reads(
            members in proptest::collection::btree_map(
                "[ab]|[a-z\"]{1,3}",
                crate::model::item::minify_tests::json(),
                0..5,
            ),
            top in crate::model::item::minify_tests::json(),
            whole in proptest::bool::ANY,
        ) {
            let value = if whole { top } else { Value::Object(members.into_iter().collect()) };
            let text = serde_json::to_string(&value).unwrap();
            let p = path("/user-1");
            for t in ["/x-{a}/user-{@user}", "/x-{!b}", "/x-{a.b}/y-{b}", "/x-{b.a.b}"] {
                let t = Template::parse(t).unwrap();
                let wanted: Vec<&str> = t.members_read().collect();
                proptest::prop_assert_eq!(
                    t.render(&p, &read_members(&text, &wanted)),
                    t.render(&p, &value)
                );
            }
        }
    }
}
