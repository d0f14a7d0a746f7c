//! Projections: the members of a value a read sends (`?fields=title,author.name`).

use crate::model::error::Error;
use crate::model::item::Json;
use serde::de::{Deserializer as _, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The most members one projection names.
pub const MAX_FIELDS: usize = 64;

/// Members of a value to keep, each a dotted path of object members (`author.name`). Members
/// that are missing, or under a value that is not an object, are left out; a value that is not
/// an object projects to `{}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fields(Vec<Vec<String>>);

impl Fields {
    /// Parses a comma-separated list of dotted member paths (`title,author.name`). Spaces around
    /// a name are ignored.
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] naming `fields` for an empty list or name, or more than
    /// [`MAX_FIELDS`] names.
    pub fn parse(text: &str) -> Result<Fields, Error> {
        let invalid = |why: String| Error::InvalidRequest(format!("fields: {why}"));
        let mut fields = Vec::new();
        for name in text.split(',') {
            let name = name.trim();
            if name.is_empty() {
                return Err(invalid(format!(
                    "an empty member name in {text:?} (write fields=title,author.name)"
                )));
            }
            let segments: Vec<String> = name.split('.').map(|s| s.trim().to_owned()).collect();
            if segments.iter().any(String::is_empty) {
                return Err(invalid(format!("an empty member in {name:?}")));
            }
            fields.push(segments);
        }
        if fields.len() > MAX_FIELDS {
            return Err(invalid(format!(
                "at most {MAX_FIELDS} members, got {}",
                fields.len()
            )));
        }
        Ok(Fields(fields))
    }

    /// `value` with only these members.
    pub fn project(&self, value: &Json) -> Json {
        let paths: Vec<&[String]> = self.0.iter().map(Vec::as_slice).collect();
        let text = project_text(value.as_str(), &paths).unwrap_or_else(|| "{}".to_owned());
        // Members copied whole from a stored (validated, minified) value under names escaped by
        // serde_json: valid JSON already, not parsed again. A `String` is UTF-8, so this holds.
        Json::from_stored(text.into_bytes())
            .unwrap_or_else(|_| Json::from_value(&Value::Object(Map::new())))
    }
}

/// The members `paths` of the JSON object `text`, as JSON text; `None` if it is not an object or
/// holds none of them. Members are copied as their text, never parsed, and the members not asked
/// for are skipped unread: a projection costs about a scan of the value.
fn project_text(text: &str, paths: &[&[String]]) -> Option<String> {
    let wanted: Vec<&str> = paths
        .iter()
        .filter_map(|p| p.first().map(String::as_str))
        .collect();
    let members = top_members(text, &wanted)?;
    let mut out = String::with_capacity(text.len().min(256));
    out.push('{');
    let mut any = false;
    let mut done: Vec<&str> = Vec::new();
    for path in paths {
        let Some(first) = path.first() else { continue };
        if done.contains(&first.as_str()) {
            continue;
        }
        done.push(first);
        let Some((_, raw)) = members.iter().find(|(k, _)| k == first) else {
            continue;
        };
        // The whole member when it is asked for whole; else what its own paths keep of it.
        let whole = paths.iter().any(|p| p.len() == 1 && p[0] == *first);
        let value = if whole {
            Some(raw.get().to_owned())
        } else {
            let below: Vec<&[String]> = paths
                .iter()
                .filter(|p| p.len() > 1 && p[0] == *first)
                .map(|p| &p[1..])
                .collect();
            project_text(raw.get(), &below)
        };
        let Some(value) = value else { continue };
        if any {
            out.push(',');
        }
        any = true;
        out.push_str(&serde_json::to_string(first.as_str()).ok()?);
        out.push(':');
        out.push_str(&value);
    }
    out.push('}');
    any.then_some(out)
}

/// The members named in `wanted` of the JSON object `text`, each as its text; `None` if `text`
/// is not an object.
fn top_members<'t>(text: &'t str, wanted: &[&str]) -> Option<Vec<(String, &'t RawValue)>> {
    struct Members<'w>(&'w [&'w str]);

    impl<'de> Visitor<'de> for Members<'_> {
        type Value = Option<Vec<(String, &'de RawValue)>>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON value")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
            let mut found: Vec<(String, &'de RawValue)> = Vec::new();
            while let Some(key) = access.next_key::<std::borrow::Cow<'de, str>>()? {
                if self.0.contains(&key.as_ref()) {
                    let raw: &'de RawValue = access.next_value()?;
                    // A member named twice: the last, as a JSON reader keeps.
                    found.retain(|(k, _)| *k != key);
                    found.push((key.into_owned(), raw));
                } else {
                    access.next_value::<IgnoredAny>()?;
                }
            }
            Ok(Some(found))
        }

        not_an_object!();
    }

    let mut de = serde_json::Deserializer::from_str(text);
    de.deserialize_any(Members(wanted)).ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(fields: &str, value: &str) -> String {
        let fields = Fields::parse(fields).expect("fields");
        fields
            .project(&Json::parse(value).expect("json"))
            .as_str()
            .to_owned()
    }

    #[test]
    fn keeps_only_the_members_asked_for() {
        let post = r#"{"title": "t", "body": "long", "author": {"name": "n", "mail": "m"}}"#;
        let projected: serde_json::Value =
            serde_json::from_str(&project("title,author.name", post)).expect("json");
        assert_eq!(
            projected,
            serde_json::json!({"title": "t", "author": {"name": "n"}})
        );
        assert_eq!(project("missing, author.none", post), "{}");
        assert_eq!(
            project("author,author.name", post).matches("mail").count(),
            1
        );
        assert_eq!(project("title.x", post), "{}");
        assert_eq!(project("title", "[1]"), "{}");
    }

    #[test]
    fn refuses_empty_names() {
        for bad in ["", "a,,b", "a.", ".a", " , "] {
            let e = Fields::parse(bad).expect_err(bad);
            assert!(e.to_string().contains("fields"), "{e}");
        }
        let many = vec!["a"; MAX_FIELDS + 1].join(",");
        assert!(Fields::parse(&many).is_err());
    }
}
