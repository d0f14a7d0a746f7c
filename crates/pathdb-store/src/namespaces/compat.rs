//! Whether a new definition version can replace the current one without breaking stored items
//! or clients of older versions (docs/migrations.md, "What is refused"). It compares the two
//! schemas' object shapes (`properties`, `required` and `type`, as deep as `properties` nest)
//! with the new version's migration steps; anything else a schema says (`allOf`, `$ref`,
//! patterns) is not compared: the dry run counts what stored items would break.

use crate::namespaces::migrate::{Compiled, Pointer};
use serde_json::Value;

/// The problems of replacing `old` with `new` under `steps`, one sentence each; empty: the
/// change is compatible. `old_version` names the version being replaced.
pub(crate) fn problems(
    old: &Value,
    new: &Value,
    steps: &[Compiled],
    old_version: u64,
) -> Vec<String> {
    let mut out = Vec::new();
    compare(old, new, steps, old_version, &mut Vec::new(), &mut out);
    for step in steps {
        if let Compiled::Rename { from, to } = step
            && declared(old, to)
        {
            out.push(format!(
                "rename from {} to {}: version {old_version} has a member {}, so a stored item \
                 may have both",
                show(from),
                show(to),
                show(to)
            ));
        }
    }
    out
}

fn compare(
    old: &Value,
    new: &Value,
    steps: &[Compiled],
    old_version: u64,
    at: &mut Pointer,
    out: &mut Vec<String>,
) {
    let (old_required, new_required) = (required(old), required(new));
    for name in &new_required {
        if old_required.contains(name) {
            continue;
        }
        at.push(name.clone());
        let given = steps.iter().any(|s| match s {
            Compiled::Add { path, .. } => path == at,
            Compiled::Rename { from, to } => {
                to == at
                    && from.split_last().is_some_and(|(last, parent)| {
                        required(schema_at(old, parent)).contains(last)
                    })
            }
            _ => false,
        });
        if !given {
            out.push(format!(
                "{} is required by the new version, but items of version {old_version} may \
                 lack it: add it with an `add` step and a default",
                show(at)
            ));
        }
        at.pop();
    }
    let new_properties = properties(new);
    for name in &old_required {
        if new_properties.is_none_or(|p| p.contains_key(name)) {
            continue;
        }
        at.push(name.clone());
        let kept = steps.iter().any(|s| match s {
            Compiled::Remove {
                path,
                read_default: Some(_),
            } => path == at,
            Compiled::Rename { from, .. } => from == at,
            _ => false,
        });
        if !kept {
            out.push(format!(
                "{} is required by version {old_version} and the new version drops it: a \
                 `remove` step with a `read_default` gives older readers a value",
                show(at)
            ));
        }
        at.pop();
    }
    let (Some(old_properties), Some(new_properties)) = (properties(old), new_properties) else {
        return;
    };
    for (name, old_member) in old_properties {
        let Some(new_member) = new_properties.get(name) else {
            continue;
        };
        at.push(name.clone());
        let touched = steps.iter().any(|s| match s {
            Compiled::Add { path, .. } | Compiled::Remove { path, .. } => path == at,
            Compiled::Rename { from, to } => from == at || to == at,
            Compiled::RenameValue { .. } => false,
        });
        match (types(old_member), types(new_member)) {
            (Some(was), Some(is)) if was != is && !touched => out.push(format!(
                "{} changes type from {} to {}: no step converts a value's type; give the new \
                 type a new name (an `add`) and `remove` the old one",
                show(at),
                was.join(" or "),
                is.join(" or ")
            )),
            _ => compare(old_member, new_member, steps, old_version, at, out),
        }
        at.pop();
    }
}

/// Whether `schema` declares the member at `pointer` (in `properties`, as deep as they nest).
fn declared(schema: &Value, pointer: &Pointer) -> bool {
    let Some((last, parent)) = pointer.split_last() else {
        return false;
    };
    properties(schema_at(schema, parent)).is_some_and(|p| p.contains_key(last))
}

/// The subschema of the member at `pointer` (`null` where none is declared).
fn schema_at<'s>(schema: &'s Value, pointer: &[String]) -> &'s Value {
    pointer.iter().fold(schema, |at, name| {
        properties(at)
            .and_then(|p| p.get(name))
            .unwrap_or(&Value::Null)
    })
}

fn properties(schema: &Value) -> Option<&serde_json::Map<String, Value>> {
    schema.get("properties")?.as_object()
}

fn required(schema: &Value) -> Vec<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(|n| n.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// A member schema's `type`, as a sorted list (`integer` is a `number`, so a change from
/// `integer` to `number` widens and is no change of type here).
fn types(schema: &Value) -> Option<Vec<String>> {
    let mut out: Vec<String> = match schema.get("type")? {
        Value::String(t) => vec![t.clone()],
        Value::Array(ts) => ts
            .iter()
            .filter_map(|t| t.as_str().map(str::to_owned))
            .collect(),
        _ => return None,
    };
    out.sort();
    out.dedup();
    Some(out)
}

fn show(pointer: &[String]) -> String {
    pointer
        .iter()
        .map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::namespaces::migrate::Step;
    use serde_json::json;

    fn check(old: Value, new: Value, steps: Value) -> Vec<String> {
        let steps: Vec<Step> = serde_json::from_value(steps).expect("steps");
        let steps: Vec<Compiled> = steps.iter().map(|s| s.compile().expect("ok")).collect();
        problems(&old, &new, &steps, 1)
    }

    fn user_v1() -> Value {
        json!({"type": "object", "required": ["name"],
               "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}})
    }

    #[test]
    fn a_new_required_member_needs_a_default() {
        let v2 = json!({"type": "object", "required": ["name", "tier"],
                        "properties": {"name": {"type": "string"}, "tier": {"type": "string"}}});
        let found = check(user_v1(), v2.clone(), json!([]));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("/tier is required"), "{found:?}");
        assert!(
            check(
                user_v1(),
                v2,
                json!([{"op": "add", "path": "/tier", "default": "free"}])
            )
            .is_empty()
        );
    }

    #[test]
    fn a_required_member_dropped_needs_a_read_default_or_a_rename() {
        let v2 = json!({"type": "object", "properties": {"full_name": {"type": "string"}}});
        let found = check(user_v1(), v2.clone(), json!([]));
        assert!(
            found
                .iter()
                .any(|p| p.starts_with("/name is required by version 1")),
            "{found:?}"
        );
        assert!(
            check(
                user_v1(),
                v2.clone(),
                json!([{"op": "rename", "from": "/name", "to": "/full_name"}])
            )
            .is_empty()
        );
        assert!(
            check(
                user_v1(),
                v2.clone(),
                json!([{"op": "remove", "path": "/name", "read_default": ""}])
            )
            .is_empty()
        );
        assert!(!check(user_v1(), v2, json!([{"op": "remove", "path": "/name"}])).is_empty());
    }

    #[test]
    fn a_type_change_is_named_even_nested() {
        let old = json!({"properties": {"a": {"type": "object", "properties": {"n": {"type": "integer"}}}}});
        let new = json!({"properties": {"a": {"type": "object", "properties": {"n": {"type": "string"}}}}});
        let found = check(old, new, json!([]));
        assert_eq!(found, vec!["/a/n changes type from integer to string: no step converts a value's type; give the new type a new name (an `add`) and `remove` the old one".to_owned()]);
    }

    #[test]
    fn a_rename_onto_a_declared_member_is_named() {
        let found = check(
            user_v1(),
            user_v1(),
            json!([{"op": "rename", "from": "/name", "to": "/age"}]),
        );
        assert!(
            found
                .iter()
                .any(|p| p.starts_with("rename from /name to /age")),
            "{found:?}"
        );
    }

    #[test]
    fn compatible_changes_pass() {
        let v2 = json!({"type": "object", "required": ["name"],
                        "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                       "bio": {"type": "string"}}});
        assert!(check(user_v1(), v2, json!([])).is_empty());
    }
}
