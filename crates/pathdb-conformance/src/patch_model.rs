//! Random patches against a model: JSON Patch (with `increment`) and JSON Merge Patch applied
//! by hand to a `serde_json::Value`, next to the store applying them to an item. After every
//! patch the stored value equals the model's; a patch the model refuses is refused by the store
//! with the same operation index, and writes nothing.

use crate::{Harness, Rng, open_manual, path};
use pathdb_store::backend::Backend;
use pathdb_store::{Error, Json, Patch, PutOptions, Transaction, TxResult};
use serde_json::{Map, Value, json};

/// Why the model refuses a patch: the operation's index, and whether a `test` failed.
#[derive(Debug, PartialEq)]
struct Refused {
    index: usize,
    test: bool,
}

/// A JSON Pointer's reference tokens (RFC 6901: `~1` is `/`, `~0` is `~`).
fn tokens(pointer: &str) -> Vec<String> {
    pointer
        .split('/')
        .skip(1)
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect()
}

/// An array index token: digits without a leading zero, below `len` (or equal, to insert).
fn array_index(token: &str, len: usize, inserting: bool) -> Option<usize> {
    let canonical = token == "0" || (!token.starts_with('0') && !token.is_empty());
    let i: usize = token.parse().ok().filter(|_| canonical)?;
    (i < len || (inserting && i == len)).then_some(i)
}

fn get<'v>(doc: &'v Value, pointer: &str) -> Option<&'v Value> {
    let mut at = doc;
    for token in tokens(pointer) {
        at = match at {
            Value::Object(m) => m.get(&token)?,
            Value::Array(a) => a.get(array_index(&token, a.len(), false)?)?,
            _ => return None,
        };
    }
    Some(at)
}

/// The container that holds `pointer`'s last token, and that token.
fn parent_mut<'v>(doc: &'v mut Value, pointer: &str) -> Option<(&'v mut Value, String)> {
    let mut tokens = tokens(pointer);
    let last = tokens.pop()?;
    let mut at = doc;
    for token in tokens {
        at = match at {
            Value::Object(m) => m.get_mut(&token)?,
            Value::Array(a) => {
                let i = array_index(&token, a.len(), false)?;
                a.get_mut(i)?
            }
            _ => return None,
        };
    }
    Some((at, last))
}

fn add(doc: &mut Value, pointer: &str, value: Value) -> Option<()> {
    if pointer.is_empty() {
        *doc = value;
        return Some(());
    }
    match parent_mut(doc, pointer)? {
        (Value::Object(m), token) => {
            m.insert(token, value);
        }
        (Value::Array(a), token) => {
            let i = if token == "-" {
                a.len()
            } else {
                array_index(&token, a.len(), true)?
            };
            a.insert(i, value);
        }
        _ => return None,
    }
    Some(())
}

fn remove(doc: &mut Value, pointer: &str) -> Option<Value> {
    match parent_mut(doc, pointer)? {
        (Value::Object(m), token) => m.remove(&token),
        (Value::Array(a), token) => {
            let i = array_index(&token, a.len(), false)?;
            Some(a.remove(i))
        }
        _ => None,
    }
}

/// `a + b` as the increment operation defines it.
fn sum(a: &Value, b: &Value) -> Option<Value> {
    const EXACT: i64 = (1 << 53) - 1;
    match (a.as_i64(), b.as_i64()) {
        (Some(x), Some(y)) => Some(json!(x.checked_add(y).filter(|s| s.abs() <= EXACT)?)),
        _ => serde_json::Number::from_f64(a.as_f64()? + b.as_f64()?).map(Value::Number),
    }
}

fn increment(doc: &mut Value, pointer: &str, by: &Value) -> Option<()> {
    let mut at = doc;
    let tokens = tokens(pointer);
    for (depth, token) in tokens.iter().enumerate() {
        let missing = if depth + 1 == tokens.len() {
            json!(0)
        } else {
            json!({})
        };
        at = match at {
            Value::Object(m) => m.entry(token.clone()).or_insert(missing),
            Value::Array(a) => {
                let i = array_index(token, a.len(), false)?;
                a.get_mut(i)?
            }
            _ => return None,
        };
    }
    if !at.is_number() {
        return None;
    }
    *at = sum(at, by)?;
    Some(())
}

/// RFC 7396, section 2, as pseudocode there.
fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(members) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(t) = target else {
        unreachable!("made an object above")
    };
    for (name, value) in members {
        if value.is_null() {
            t.remove(name);
        } else {
            merge(t.entry(name.clone()).or_insert(Value::Null), value);
        }
    }
}

/// Applies one JSON Patch operation to `doc`; `None` when it does not apply.
fn apply_op(doc: &mut Value, op: &Value) -> Option<()> {
    let path = op["path"].as_str()?;
    match op["op"].as_str()? {
        "add" => add(doc, path, op["value"].clone()),
        "remove" => remove(doc, path).map(drop),
        "replace" => {
            remove(doc, path)?;
            add(doc, path, op["value"].clone())
        }
        "move" => {
            let from = op["from"].as_str()?;
            if from == path {
                return get(doc, from).map(drop);
            }
            if path.starts_with(&format!("{from}/")) {
                return None;
            }
            let value = remove(doc, from)?;
            add(doc, path, value)
        }
        "copy" => {
            let value = get(doc, op["from"].as_str()?)?.clone();
            add(doc, path, value)
        }
        "test" => (get(doc, path)? == &op["value"]).then_some(()),
        "increment" => increment(doc, path, &op["value"]),
        other => panic!("the generator made op {other}"),
    }
}

/// The model: the patched document, or which operation refused it.
fn model(doc: &Value, patch: &Value, merge_patch: bool) -> Result<Value, Refused> {
    let mut out = doc.clone();
    if merge_patch {
        merge(&mut out, patch);
        return Ok(out);
    }
    for (index, op) in patch.as_array().into_iter().flatten().enumerate() {
        if apply_op(&mut out, op).is_none() {
            return Err(Refused {
                index,
                test: op["op"] == "test",
            });
        }
    }
    Ok(out)
}

const NAMES: [&str; 4] = ["a", "b", "n", "x~y/z"];

fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// A small random value: numbers (mostly integers), strings, null, arrays and objects.
fn random_value(rng: &mut Rng, depth: u32) -> Value {
    match rng.below(if depth == 0 { 5 } else { 7 }) {
        0 => json!(rng.below(20) as i64 - 5),
        1 => json!(rng.below(4) as f64 / 2.0),
        2 => json!(["s", "t", ""][rng.below(3) as usize]),
        3 => Value::Null,
        4 => json!(rng.below(2) == 0),
        5 => Value::Array(
            (0..rng.below(3))
                .map(|_| random_value(rng, depth - 1))
                .collect(),
        ),
        _ => Value::Object(
            (0..rng.below(3))
                .map(|_| {
                    let name = NAMES[rng.below(4) as usize].to_owned();
                    (name, random_value(rng, depth - 1))
                })
                .collect(),
        ),
    }
}

/// A pointer that mostly exists in `doc` or names a new member of a container in it, and
/// sometimes goes nowhere.
fn random_pointer(rng: &mut Rng, doc: &Value) -> String {
    let mut pointer = String::new();
    let mut at = Some(doc);
    while let Some(container @ (Value::Object(_) | Value::Array(_))) = at {
        let token = match container {
            Value::Object(m) if !m.is_empty() && rng.below(4) != 0 => m
                .keys()
                .nth(rng.below(m.len() as u64) as usize)
                .cloned()
                .unwrap_or_default(),
            Value::Array(a) if rng.below(8) != 0 => {
                let i = rng.below(a.len() as u64 + 1);
                if i == a.len() as u64 && rng.below(2) == 0 {
                    "-".to_owned()
                } else {
                    i.to_string()
                }
            }
            _ => NAMES[rng.below(4) as usize].to_owned(),
        };
        at = match container {
            Value::Object(m) => m.get(&token),
            Value::Array(a) => token.parse::<usize>().ok().and_then(|i| a.get(i)),
            _ => None,
        };
        pointer.push('/');
        pointer.push_str(&escape(&token));
        if rng.below(2) == 0 {
            break;
        }
    }
    if pointer.is_empty() || (at.is_some() && rng.below(16) == 0) {
        // Under a scalar, or past the end: goes nowhere.
        pointer.push('/');
        pointer.push_str(&escape(NAMES[rng.below(4) as usize]));
    }
    pointer
}

fn random_op(rng: &mut Rng, doc: &Value) -> Value {
    let path = random_pointer(rng, doc);
    match rng.below(8) {
        0 | 1 => json!({"op": "add", "path": path, "value": random_value(rng, 2)}),
        2 => json!({"op": "remove", "path": path}),
        3 => json!({"op": "replace", "path": path, "value": random_value(rng, 2)}),
        4 => json!({"op": "move", "from": random_pointer(rng, doc), "path": path}),
        5 => json!({"op": "copy", "from": random_pointer(rng, doc), "path": path}),
        6 => {
            // Half the tests hold.
            let value = match (rng.below(2), get(doc, &path)) {
                (0, Some(v)) => v.clone(),
                _ => random_value(rng, 1),
            };
            json!({"op": "test", "path": path, "value": value})
        }
        _ => {
            let by = match rng.below(8) {
                0 => json!(0.5),
                1 => json!(1i64 << 53),
                _ => json!(rng.below(7) as i64 - 3),
            };
            json!({"op": "increment", "path": path, "value": by})
        }
    }
}

/// For several seeds, one item takes a run of random patches: JSON Patches of one to three
/// operations (increments included) and merge patches, some inside a transaction after a put
/// of the same item. Each result, accepted or refused, matches the model.
pub fn random_patches_against_a_model<H: Harness>(harness: &H) {
    let (_, store) = open_manual(harness);
    let (seeds, steps) = if store.backend().max_batch_ops() < usize::MAX {
        (3u64, 30)
    } else {
        (12, 80)
    };
    for seed in 1..=seeds {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let at = path(&format!("/model-{seed}"));
        let mut doc = json!({"a": {"n": 1}, "b": [1, "s"]});
        let mut version = store
            .put(&at, Json::from_value(&doc), PutOptions::default())
            .expect("put the start")
            .version;
        for step in 0..steps {
            // A document that is no longer an object gets merged back into one.
            let merge_patch = !doc.is_object() || rng.below(5) == 0;
            let document = if merge_patch {
                // Mostly an object (a merge); now and then a whole new value.
                let mut patch = random_value(&mut rng, 3);
                while !patch.is_object() && (!doc.is_object() || rng.below(8) != 0) {
                    patch = random_value(&mut rng, 3);
                }
                patch
            } else {
                Value::Array(
                    (0..=rng.below(3))
                        .map(|_| random_op(&mut rng, &doc))
                        .collect(),
                )
            };
            let patch = if merge_patch {
                Patch::Merge(document.clone())
            } else {
                Patch::json_patch(&document).unwrap_or_else(|e| panic!("{document}: {e}"))
            };
            let expected = model(&doc, &document, merge_patch);
            let context = format!("seed {seed} step {step}: {document} on {doc}");
            // Every fourth patch follows a put of the same value in one transaction.
            let in_transaction = rng.below(4) == 0;
            let outcome = if in_transaction {
                let tx = Transaction::new()
                    .put(at.clone(), Json::from_value(&doc), PutOptions::default())
                    .patch(at.clone(), patch, PutOptions::default());
                store.transact(tx).map(|results| match &results[..] {
                    [TxResult::Put(put), TxResult::Put(patched)] => {
                        assert_eq!(put, patched, "{context}: one write, one result");
                        patched.clone()
                    }
                    other => panic!("{context}: {other:?}"),
                })
            } else {
                store.patch(&at, patch, PutOptions::default(), false)
            };
            let stored = store.get(&at).unwrap().expect("the item stays");
            let stored_value: Value = serde_json::from_str(stored.value.as_str()).unwrap();
            match (expected, outcome) {
                (Ok(want), Ok(item)) => {
                    assert_eq!(stored_value, want, "{context}");
                    assert_eq!(item.version, version + 1, "{context}");
                    version = item.version;
                    doc = want;
                }
                (Err(refused), Err(Error::PatchTestFailed { index, .. })) if refused.test => {
                    assert_eq!(index, refused.index, "{context}");
                }
                (Err(refused), Err(Error::PatchConflict { index, .. })) if !refused.test => {
                    assert_eq!(index, refused.index, "{context}");
                }
                (expected, outcome) => {
                    panic!("{context}: the model says {expected:?}, the store {outcome:?}")
                }
            }
            assert_eq!(
                stored.version, version,
                "{context}: a refused patch writes nothing"
            );
            assert_eq!(stored_value, doc, "{context}");
        }
    }
}
