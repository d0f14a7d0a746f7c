//! Partial updates: RFC 6902's and RFC 7396's own examples, increments, patches in
//! transactions, and racing increments that lose nothing.

use crate::{Harness, open_manual, path, put};
use pathdb_store::backend::Backend;
use pathdb_store::{Condition, Error, Json, Patch, PutOptions, Store, Transaction, TxResult};
use serde_json::{Value, json};

fn value_of(json: &Json) -> Value {
    serde_json::from_str(json.as_str()).expect("stored values are JSON")
}

/// Writes `doc` at `at`, patches it, and returns the result (or the error); a failed patch
/// must leave the item as it was.
fn patched<B: Backend>(
    store: &Store<B>,
    at: &str,
    doc: &Value,
    patch: Patch,
) -> Result<Value, Error> {
    let p = path(at);
    let before = store
        .put(&p, Json::from_value(doc), PutOptions::default())
        .expect("put the document");
    match store.patch(&p, patch, PutOptions::default(), false) {
        Ok(item) => {
            assert_eq!(item.version, before.version + 1);
            assert_eq!(
                store.get(&p).unwrap().map(|i| value_of(&i.value)),
                Some(value_of(&item.value))
            );
            Ok(value_of(&item.value))
        }
        Err(e) => {
            assert_eq!(
                store.get(&p).unwrap(),
                Some(before),
                "a failed patch writes nothing"
            );
            Err(e)
        }
    }
}

fn json_patch(ops: Value) -> Patch {
    Patch::json_patch(&ops).unwrap_or_else(|e| panic!("{ops}: {e}"))
}

/// RFC 6902, Appendix A: every example with a result or an error to apply (A.13, a document
/// with a duplicate member, is a parser's concern).
pub fn json_patch_rfc6902_examples<H: Harness>(harness: &H) {
    let (_, store) = open_manual(harness);
    let cases: Vec<(&str, Value, Value, Option<Value>)> = vec![
        (
            "A.1",
            json!({"foo": "bar"}),
            json!([{"op": "add", "path": "/baz", "value": "qux"}]),
            Some(json!({"baz": "qux", "foo": "bar"})),
        ),
        (
            "A.2",
            json!({"foo": ["bar", "baz"]}),
            json!([{"op": "add", "path": "/foo/1", "value": "qux"}]),
            Some(json!({"foo": ["bar", "qux", "baz"]})),
        ),
        (
            "A.3",
            json!({"baz": "qux", "foo": "bar"}),
            json!([{"op": "remove", "path": "/baz"}]),
            Some(json!({"foo": "bar"})),
        ),
        (
            "A.4",
            json!({"foo": ["bar", "qux", "baz"]}),
            json!([{"op": "remove", "path": "/foo/1"}]),
            Some(json!({"foo": ["bar", "baz"]})),
        ),
        (
            "A.5",
            json!({"baz": "qux", "foo": "bar"}),
            json!([{"op": "replace", "path": "/baz", "value": "boo"}]),
            Some(json!({"baz": "boo", "foo": "bar"})),
        ),
        (
            "A.6",
            json!({"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}}),
            json!([{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}]),
            Some(json!({"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}})),
        ),
        (
            "A.7",
            json!({"foo": ["all", "grass", "cows", "eat"]}),
            json!([{"op": "move", "from": "/foo/1", "path": "/foo/3"}]),
            Some(json!({"foo": ["all", "cows", "eat", "grass"]})),
        ),
        (
            "A.8",
            json!({"baz": "qux", "foo": ["a", 2, "c"]}),
            json!([{"op": "test", "path": "/baz", "value": "qux"}, {"op": "test", "path": "/foo/1", "value": 2}]),
            Some(json!({"baz": "qux", "foo": ["a", 2, "c"]})),
        ),
        (
            "A.9",
            json!({"baz": "qux"}),
            json!([{"op": "test", "path": "/baz", "value": "bar"}]),
            None,
        ),
        (
            "A.10",
            json!({"foo": "bar"}),
            json!([{"op": "add", "path": "/child", "value": {"grandchild": {}}}]),
            Some(json!({"foo": "bar", "child": {"grandchild": {}}})),
        ),
        (
            "A.11",
            json!({"foo": "bar"}),
            json!([{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}]),
            Some(json!({"foo": "bar", "baz": "qux"})),
        ),
        (
            "A.12",
            json!({"foo": "bar"}),
            json!([{"op": "add", "path": "/baz/bat", "value": "qux"}]),
            None,
        ),
        (
            "A.14",
            json!({"/": 9, "~1": 10}),
            json!([{"op": "test", "path": "/~01", "value": 10}]),
            Some(json!({"/": 9, "~1": 10})),
        ),
        (
            "A.15",
            json!({"/": 9, "~1": 10}),
            json!([{"op": "test", "path": "/~01", "value": "10"}]),
            None,
        ),
        (
            "A.16",
            json!({"foo": ["bar"]}),
            json!([{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}]),
            Some(json!({"foo": ["bar", ["abc", "def"]]})),
        ),
    ];
    for (name, doc, ops, expected) in cases {
        let result = patched(&store, "/rfc-6902/doc-1", &doc, json_patch(ops));
        match (result, expected) {
            (Ok(got), Some(want)) => assert_eq!(got, want, "{name}"),
            (Err(Error::PatchTestFailed { index, .. }), None) if name != "A.12" => {
                assert_eq!(index, 0, "{name}")
            }
            (Err(Error::PatchConflict { index, .. }), None) if name == "A.12" => {
                assert_eq!(index, 0, "{name}")
            }
            (other, want) => panic!("{name}: got {other:?}, expected {want:?}"),
        }
    }
    // A.13 and other invalid documents are refused before anything is read, naming the index.
    for bad in [
        json!({"op": "add"}),
        json!([{"op": "add", "path": "/a", "value": 1}, {"op": "frobnicate", "path": "/a"}]),
        json!([{"op": "increment", "path": "/a", "value": "1"}]),
    ] {
        let message = Patch::json_patch(&bad).expect_err("invalid");
        assert!(
            bad.is_object() || message.starts_with("operation"),
            "{message}"
        );
    }
}

/// RFC 7396, Appendix A: every example.
pub fn merge_patch_rfc7396_examples<H: Harness>(harness: &H) {
    let (_, store) = open_manual(harness);
    let cases = [
        (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
        (
            json!({"a": "b"}),
            json!({"b": "c"}),
            json!({"a": "b", "b": "c"}),
        ),
        (json!({"a": "b"}), json!({"a": null}), json!({})),
        (
            json!({"a": "b", "b": "c"}),
            json!({"a": null}),
            json!({"b": "c"}),
        ),
        (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
        (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
        (
            json!({"a": {"b": "c"}}),
            json!({"a": {"b": "d", "c": null}}),
            json!({"a": {"b": "d"}}),
        ),
        (
            json!({"a": [{"b": "c"}]}),
            json!({"a": [1]}),
            json!({"a": [1]}),
        ),
        (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
        (json!({"a": "b"}), json!(["c"]), json!(["c"])),
        (json!({"a": "foo"}), json!(null), json!(null)),
        (json!({"a": "foo"}), json!("bar"), json!("bar")),
        (
            json!({"e": null}),
            json!({"a": 1}),
            json!({"e": null, "a": 1}),
        ),
        (
            json!([1, 2]),
            json!({"a": "b", "c": null}),
            json!({"a": "b"}),
        ),
        (
            json!({}),
            json!({"a": {"bb": {"ccc": null}}}),
            json!({"a": {"bb": {}}}),
        ),
    ];
    for (doc, merge, want) in cases {
        let got = patched(&store, "/rfc-7396/doc-1", &doc, Patch::Merge(merge.clone()));
        assert_eq!(got.ok(), Some(want), "{doc} merged with {merge}");
    }
}

/// Increments: a missing member starts at 0 (with the objects on the way to it), integers
/// stay integers, and a non-number or a sum past 2^53 is a conflict that writes nothing. A
/// missing item is an error unless the patch may create it; a deleted one counts as missing.
pub fn increments_and_missing_items<H: Harness>(harness: &H) {
    let (_, store) = open_manual(harness);
    let incr =
        |at: &str, by: Value| json_patch(json!([{"op": "increment", "path": at, "value": by}]));
    let doc = json!({"views": 1, "name": "x", "big": (1i64 << 53) - 2});
    assert_eq!(
        patched(&store, "/c-1/doc-1", &doc, incr("/views", json!(41))).unwrap()["views"],
        json!(42)
    );
    let got = patched(&store, "/c-1/doc-1", &doc, incr("/stats/likes", json!(2))).unwrap();
    assert_eq!(got["stats"], json!({"likes": 2}));
    let got = patched(&store, "/c-1/doc-1", &doc, incr("/views", json!(0.5))).unwrap();
    assert_eq!(got["views"], json!(1.5));
    assert_eq!(
        patched(&store, "/c-1/doc-1", &doc, incr("/big", json!(1))).unwrap()["big"],
        json!((1i64 << 53) - 1)
    );
    for (at, by) in [
        ("/name", json!(1)),
        ("/big", json!(2)),
        ("/name/x", json!(1)),
    ] {
        assert!(
            matches!(
                patched(&store, "/c-1/doc-1", &doc, incr(at, by.clone())),
                Err(Error::PatchConflict { index: 0, .. })
            ),
            "{at} + {by}"
        );
    }
    // Missing, then created by the patch; deleted counts as missing again.
    let counter = path("/c-1/counter-1");
    assert!(matches!(
        store.patch(&counter, incr("/n", json!(1)), PutOptions::default(), false),
        Err(Error::ItemNotFound { .. })
    ));
    let created = store
        .patch(&counter, incr("/n", json!(1)), PutOptions::default(), true)
        .unwrap();
    assert_eq!(
        (value_of(&created.value), created.version),
        (json!({"n": 1}), 1)
    );
    store.delete(&counter, None).unwrap();
    assert!(matches!(
        store.patch(
            &counter,
            Patch::Merge(json!({"n": 5})),
            PutOptions::default(),
            false
        ),
        Err(Error::ItemNotFound { .. })
    ));
    let again = store
        .patch(
            &counter,
            Patch::Merge(json!({"n": 5})),
            PutOptions::default(),
            true,
        )
        .unwrap();
    assert_eq!(
        (value_of(&again.value), again.version),
        (json!({"n": 5}), 3)
    );
    // A condition applies as on a put.
    let stale = PutOptions {
        condition: Some(Condition::IfVersion(1)),
        ..PutOptions::default()
    };
    assert!(matches!(
        store.patch(&counter, incr("/n", json!(1)), stale, false),
        Err(Error::ConditionFailed { .. })
    ));
}

/// A patch in a transaction is all or nothing with the rest, and a failed `test` fails the
/// whole transaction.
pub fn patches_in_transactions<H: Harness>(harness: &H) {
    let (_, store) = open_manual(harness);
    put(&store, "/tx-1/a-1", 1);
    store
        .put(
            &path("/tx-1/doc-1"),
            Json::from_value(&json!({"n": 1})),
            PutOptions::default(),
        )
        .unwrap();
    let results = store
        .transact(
            Transaction::new()
                .patch(
                    path("/tx-1/doc-1"),
                    Patch::Merge(json!({"m": 2})),
                    PutOptions::default(),
                )
                .put(
                    path("/tx-1/a-2"),
                    Json::from_value(&json!(2)),
                    PutOptions::default(),
                ),
        )
        .unwrap();
    match &results[0] {
        TxResult::Put(item) => assert_eq!(value_of(&item.value), json!({"n": 1, "m": 2})),
        other => panic!("{other:?}"),
    }
    let failing = Transaction::new()
        .put(
            path("/tx-1/a-3"),
            Json::from_value(&json!(3)),
            PutOptions::default(),
        )
        .patch(
            path("/tx-1/doc-1"),
            json_patch(
                json!([{"op": "test", "path": "/n", "value": 7}, {"op": "remove", "path": "/n"}]),
            ),
            PutOptions::default(),
        );
    assert!(matches!(
        store.transact(failing),
        Err(Error::PatchTestFailed { index: 0, .. })
    ));
    assert_eq!(
        store.get(&path("/tx-1/a-3")).unwrap(),
        None,
        "nothing written"
    );
    assert_eq!(
        store
            .get(&path("/tx-1/doc-1"))
            .unwrap()
            .map(|i| value_of(&i.value)),
        Some(json!({"n": 1, "m": 2}))
    );
}

/// A patch after a put of the same path in one transaction applies to the value put: one
/// write, one new version, both results the item as written. A path named twice otherwise is
/// refused, and so is a condition on the folded patch.
pub fn patches_after_puts_in_transactions<H: Harness>(harness: &H) {
    let (_, store) = open_manual(harness);
    let doc = path("/fold-1/doc-1");
    put(&store, "/fold-1/doc-1", 1);
    let results = store
        .transact(
            Transaction::new()
                .put(
                    doc.clone(),
                    Json::from_value(&json!({"n": 1, "tags": ["a"]})),
                    PutOptions::default(),
                )
                .patch(
                    doc.clone(),
                    json_patch(json!([
                        {"op": "increment", "path": "/n", "value": 2},
                        {"op": "add", "path": "/tags/-", "value": "b"}
                    ])),
                    PutOptions::default(),
                ),
        )
        .unwrap();
    let [TxResult::Put(first), TxResult::Put(second)] = &results[..] else {
        panic!("{results:?}")
    };
    assert_eq!(first, second);
    assert_eq!(value_of(&second.value), json!({"n": 3, "tags": ["a", "b"]}));
    assert_eq!(second.version, 2, "one atomic change is one version");
    assert_eq!(store.get(&doc).unwrap().as_ref(), Some(second));

    // A failing folded patch fails the whole transaction.
    let failing = Transaction::new()
        .put(
            doc.clone(),
            Json::from_value(&json!({"n": "text"})),
            PutOptions::default(),
        )
        .patch(
            doc.clone(),
            json_patch(json!([{"op": "increment", "path": "/n", "value": 1}])),
            PutOptions::default(),
        );
    assert!(matches!(
        store.transact(failing),
        Err(Error::PatchConflict { index: 0, .. })
    ));
    assert_eq!(store.get(&doc).unwrap().as_ref(), Some(second));

    let refused = [
        Transaction::new().delete(doc.clone(), None).patch(
            doc.clone(),
            Patch::Merge(json!({"a": 1})),
            PutOptions::default(),
        ),
        Transaction::new()
            .patch(
                doc.clone(),
                Patch::Merge(json!({"a": 1})),
                PutOptions::default(),
            )
            .patch(
                doc.clone(),
                Patch::Merge(json!({"b": 1})),
                PutOptions::default(),
            ),
        Transaction::new()
            .put(
                doc.clone(),
                Json::from_value(&json!({})),
                PutOptions::default(),
            )
            .patch(
                doc.clone(),
                Patch::Merge(json!({"a": 1})),
                PutOptions {
                    condition: Some(Condition::IfVersion(2)),
                    ..PutOptions::default()
                },
            ),
    ];
    for tx in refused {
        assert!(
            matches!(store.transact(tx.clone()), Err(Error::InvalidRequest(_))),
            "{tx:?}"
        );
    }
    assert_eq!(store.get(&doc).unwrap().as_ref(), Some(second));
}

/// Eight writers increment one counter at once: no increment is lost, none fails, and every
/// version from 1 to the total is a step of one.
pub fn racing_increments<H: Harness>(harness: &H) {
    let (_, store) = open_manual(harness);
    let counter = path("/race-1/counter-1");
    let per_writer = if store.backend().max_batch_ops() < usize::MAX {
        15
    } else {
        100
    };
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for _ in 0..per_writer {
                    let patch = json_patch(json!([{"op": "increment", "path": "/n", "value": 1}]));
                    store
                        .patch(&counter, patch, PutOptions::default(), true)
                        .expect("an increment never fails");
                }
            });
        }
    });
    let item = store.get(&counter).unwrap().expect("the counter");
    assert_eq!(value_of(&item.value), json!({"n": 8 * per_writer}));
    assert_eq!(item.version, 8 * per_writer as u64);
}
