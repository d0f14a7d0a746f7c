//! Partial updates ([`Patch`]): RFC 7396 JSON Merge Patch, and RFC 6902 JSON Patch with one
//! extension operation, `{"op": "increment", "path": "/views", "value": 1}`. The `json-patch`
//! crate applies both standards; this module reads the documents (naming a bad operation by
//! its index) and applies `increment`. The write pipeline applies a patch to the value it read
//! and writes the result as a put (write/stages/items.rs), so a patch is as atomic as a put.

use crate::model::error::Error;

use crate::model::item::Json;
use pathdb_keys::KeyPath;
use serde_json::Value;

/// Integers an increment keeps exact: JSON clients read numbers as doubles, exact to 2^53.
pub const MAX_EXACT_INTEGER: i64 = (1 << 53) - 1;

/// A partial update of an item's value.
#[derive(Clone, PartialEq, Debug)]
pub enum Patch {
    /// RFC 7396 JSON Merge Patch: objects merge member by member, `null` removes a member,
    /// anything else replaces.
    Merge(Value),
    /// RFC 6902 JSON Patch, applied in order, all or nothing.
    Json(Vec<PatchOp>),
}

/// One operation of a JSON Patch.
#[derive(Clone, PartialEq, Debug)]
pub enum PatchOp {
    /// `add`, `remove`, `replace`, `move`, `copy` or `test`.
    Standard(json_patch::PatchOperation),
    /// Add `by` to the number at `path` (JSON Pointer); a missing member counts as 0.
    Increment {
        /// JSON Pointer to the number.
        path: String,
        /// What to add.
        by: serde_json::Number,
    },
}

/// Why a patch did not apply to a value.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum PatchError {
    /// A `test` operation did not hold.
    #[error("operation {index}: test failed: {message}")]
    TestFailed {
        /// The operation's index in the patch.
        index: usize,
        /// What did not hold.
        message: String,
    },
    /// An operation does not fit the value (a missing path to remove, an increment of a
    /// string, an integer past 2^53).
    #[error("operation {index}: {message}")]
    Conflict {
        /// The operation's index in the patch.
        index: usize,
        /// Why.
        message: String,
    },
}

impl PatchError {
    /// The store's error for this failure of a patch of the item at `path`.
    pub(crate) fn at(self, path: &KeyPath) -> Error {
        match self {
            PatchError::TestFailed { index, message } => Error::PatchTestFailed {
                path: path.clone(),
                index,
                message,
            },
            PatchError::Conflict { index, message } => Error::PatchConflict {
                path: path.clone(),
                index,
                message,
            },
        }
    }
}

impl Patch {
    /// Reads a JSON Patch document: an array of operations, each `add`, `remove`, `replace`,
    /// `move`, `copy`, `test` or `increment`.
    ///
    /// # Errors
    /// A message naming the first invalid operation's index.
    pub fn json_patch(document: &Value) -> Result<Patch, String> {
        let Value::Array(operations) = document else {
            return Err("a JSON Patch is an array of operations".into());
        };
        let mut out = Vec::with_capacity(operations.len());
        for (index, operation) in operations.iter().enumerate() {
            let bad = |why: String| format!("operation {index}: {why}");
            if operation.get("op").and_then(Value::as_str) == Some("increment") {
                let Some(object) = operation.as_object() else {
                    return Err(bad("not an object".into()));
                };
                if let Some(extra) = object
                    .keys()
                    .find(|k| !["op", "path", "value"].contains(&k.as_str()))
                {
                    return Err(bad(format!("increment has no member {extra:?}")));
                }
                let path = object
                    .get("path")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad("increment needs a string \"path\"".into()))?;
                if !(path.is_empty() || path.starts_with('/')) {
                    return Err(bad(format!("{path:?} is not a JSON Pointer")));
                }
                let by = match object.get("value") {
                    Some(Value::Number(n)) => n.clone(),
                    _ => return Err(bad("increment needs a number \"value\"".into())),
                };
                out.push(PatchOp::Increment {
                    path: path.to_owned(),
                    by,
                });
            } else {
                let standard =
                    serde_json::from_value(operation.clone()).map_err(|e| bad(e.to_string()))?;
                out.push(PatchOp::Standard(standard));
            }
        }
        Ok(Patch::Json(out))
    }

    /// The patch as its JSON document: the merge patch itself, or the array of operations
    /// ([`Patch::json_patch`] reads it back).
    pub fn document(&self) -> Value {
        match self {
            Patch::Merge(document) => document.clone(),
            Patch::Json(operations) => Value::Array(
                operations
                    .iter()
                    .map(|op| match op {
                        // Serializing a parsed operation (strings and values) cannot fail.
                        PatchOp::Standard(op) => serde_json::to_value(op).unwrap_or(Value::Null),
                        PatchOp::Increment { path, by } => serde_json::json!({
                            "op": "increment", "path": path, "value": by
                        }),
                    })
                    .collect(),
            ),
        }
    }

    /// Applies the patch to `value`, which is left as it was if the patch fails.
    ///
    /// # Errors
    /// [`PatchError`] naming the operation that failed.
    pub fn apply(&self, value: &Json) -> Result<Json, PatchError> {
        let mut doc: Value =
            serde_json::from_str(value.as_str()).map_err(|e| PatchError::Conflict {
                index: 0,
                message: format!("the stored value is not JSON: {e}"),
            })?;
        match self {
            Patch::Merge(patch) => json_patch::merge(&mut doc, patch),
            Patch::Json(operations) => {
                for (index, operation) in operations.iter().enumerate() {
                    apply_one(&mut doc, index, operation)?;
                }
            }
        }
        Ok(Json::from_value(&doc))
    }
}

fn apply_one(doc: &mut Value, index: usize, operation: &PatchOp) -> Result<(), PatchError> {
    match operation {
        PatchOp::Standard(op) => json_patch::patch(doc, std::slice::from_ref(op)).map_err(|e| {
            let message = e.kind.to_string();
            match op {
                json_patch::PatchOperation::Test(_) => PatchError::TestFailed { index, message },
                _ => PatchError::Conflict { index, message },
            }
        }),
        PatchOp::Increment { path, by } => {
            increment(doc, path, by).map_err(|message| PatchError::Conflict { index, message })
        }
    }
}

/// Adds `by` to the number at `pointer`, creating missing object members (as 0, or as `{}`
/// on the way to it).
fn increment(doc: &mut Value, pointer: &str, by: &serde_json::Number) -> Result<(), String> {
    let mut at = doc;
    let tokens: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect();
    for (depth, token) in tokens.iter().enumerate() {
        let last = depth + 1 == tokens.len();
        at = match at {
            Value::Object(members) => members.entry(token.clone()).or_insert_with(|| {
                if last {
                    Value::from(0)
                } else {
                    Value::Object(Default::default())
                }
            }),
            Value::Array(items) => {
                let i: usize = token
                    .parse()
                    .map_err(|_| format!("{pointer}: {token:?} is not an array index"))?;
                items
                    .get_mut(i)
                    .ok_or_else(|| format!("{pointer}: index {i} is past the array's end"))?
            }
            _ => return Err(format!("{pointer}: a scalar has no member {token:?}")),
        };
    }
    let Value::Number(current) = at else {
        return Err(format!("{pointer} is not a number"));
    };
    *at = Value::Number(add(current, by).ok_or_else(|| {
        format!("{pointer}: {current} + {by} is past the exact integer range (2^53) or not finite")
    })?);
    Ok(())
}

/// `a + b`: an integer while both are, within ±(2^53 - 1); a finite float otherwise.
fn add(a: &serde_json::Number, b: &serde_json::Number) -> Option<serde_json::Number> {
    match (a.as_i64(), b.as_i64()) {
        (Some(x), Some(y)) => x
            .checked_add(y)
            .filter(|sum| sum.abs() <= MAX_EXACT_INTEGER)
            .map(serde_json::Number::from),
        _ if a.is_f64() || b.is_f64() => serde_json::Number::from_f64(a.as_f64()? + b.as_f64()?),
        // A u64 above i64's range is past 2^53 already.
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_document_reads_back_as_written() {
        let document = json!([
            {"op": "add", "path": "/a/-", "value": {"x": null}},
            {"op": "remove", "path": "/b"},
            {"op": "replace", "path": "", "value": 1},
            {"op": "move", "from": "/c", "path": "/d"},
            {"op": "copy", "from": "/d", "path": "/e~1f"},
            {"op": "test", "path": "/e~1f", "value": [1]},
            {"op": "increment", "path": "/views", "value": -2.5},
        ]);
        let patch = Patch::json_patch(&document).unwrap();
        assert_eq!(patch.document(), document);
        assert_eq!(Patch::json_patch(&patch.document()), Ok(patch));
        let merge = Patch::Merge(json!({"a": null, "b": {"c": 1}}));
        assert_eq!(merge.document(), json!({"a": null, "b": {"c": 1}}));
    }
}
