//! Projections: the members of a value a read sends (`?fields=title,author.name`).

use crate::model::error::Error;
use crate::model::item::Json;
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
        let value = value.to_value();
        let mut out = Map::new();
        for field in &self.0 {
            if let Some(found) = member(&value, field) {
                insert(&mut out, field, found.clone());
            }
        }
        Json::from_value(&Value::Object(out))
    }
}

fn member<'a>(mut value: &'a Value, path: &[String]) -> Option<&'a Value> {
    for segment in path {
        value = value.as_object()?.get(segment)?;
    }
    Some(value)
}

fn insert(out: &mut Map<String, Value>, path: &[String], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut at = out;
    for segment in parents {
        let next = at
            .entry(segment.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        // Both `a` and `a.b` asked: `a` whole already holds `a.b`.
        let Value::Object(next) = next else { return };
        at = next;
    }
    at.insert(last.clone(), value);
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
