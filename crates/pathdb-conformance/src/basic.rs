//! Single-item operations, conditions and bad input.

use super::{
    Harness, T0, assert_condition_failed, dump, json, open_manual, path, put, texts, value,
};
use pathdb_keys::KeyPath;
use pathdb_store::{
    Condition, Error, ExportRecord, Json, ListRequest, MAX_GET_MANY, MAX_GROUP_BYTES,
    MAX_ITEM_BYTES, MAX_SORT_KEY_BYTES, PutOptions, Transaction, TxResult,
};
use std::time::Duration;

fn with_condition(condition: Condition) -> PutOptions {
    PutOptions {
        condition: Some(condition),
        ..PutOptions::default()
    }
}

/// put creates at version 1 and replaces at +1, keeping `created_at`; JSON text survives
/// exactly (key order, number spelling, escapes) minus whitespace; get and get_many see what
/// was written; delete returns the deleted item and is idempotent; the group's own item and an
/// element without id are items like any other; clones share the database.
pub fn put_get_delete<H: Harness>(harness: &H) {
    let (clock, store) = open_manual(harness);
    let p1 = path("/u-1/p-1");
    let text = "{ \"b\" : 1,\n \"a\": [1.50, \"x \\u00e9\\n\", 1e3, -0], \"c\": {} }";
    let created = store.put(&p1, json(text), PutOptions::default()).unwrap();
    assert_eq!(
        created.value.as_str(),
        r#"{"b":1,"a":[1.50,"x \u00e9\n",1e3,-0],"c":{}}"#
    );
    assert_eq!(created.path, p1);
    assert_eq!(created.version, 1);
    assert_eq!((created.created_at, created.modified_at), (T0, T0));
    assert_eq!(created.expires_at, None);
    assert_eq!(store.get(&p1).unwrap(), Some(created.clone()));

    clock.advance(Duration::from_secs(1));
    let replaced = store.put(&p1, value(2), PutOptions::default()).unwrap();
    assert_eq!(replaced.version, 2);
    assert_eq!(replaced.created_at, T0, "a replace keeps created_at");
    assert_eq!(replaced.modified_at, T0.plus(Duration::from_secs(1)));
    assert_eq!(store.get(&p1).unwrap(), Some(replaced.clone()));

    // Nothing at the parent although its subtree has items; nothing at a sibling.
    assert_eq!(store.get(&path("/u-1")).unwrap(), None);
    assert_eq!(store.get(&path("/u-1/p-10")).unwrap(), None);

    let group = put(&store, "/u-1", 10);
    let settings = put(&store, "/u-1/settings", 11);
    assert_eq!(store.get(&path("/u-1")).unwrap(), Some(group.clone()));
    assert_eq!(
        store.get(&path("/u-1/settings")).unwrap(),
        Some(settings.clone())
    );

    let many = store
        .get_many(&[
            path("/u-1/settings"),
            path("/u-1/p-2"),
            p1.clone(),
            path("/u-1"),
        ])
        .unwrap();
    assert_eq!(many, [settings, replaced.clone(), group]);
    assert_eq!(store.get_many(&[]).unwrap(), []);
    let hundred: Vec<KeyPath> = (0..MAX_GET_MANY)
        .map(|i| path(&format!("/u-1/p-{i}")))
        .collect();
    assert_eq!(
        store.get_many(&hundred).unwrap(),
        std::slice::from_ref(&replaced)
    );
    let too_many: Vec<KeyPath> = (0..=MAX_GET_MANY)
        .map(|i| path(&format!("/u-1/p-{i}")))
        .collect();
    assert!(matches!(
        store.get_many(&too_many),
        Err(Error::InvalidRequest(_))
    ));

    assert_eq!(store.delete(&p1, None).unwrap(), Some(replaced));
    assert_eq!(store.get(&p1).unwrap(), None);
    assert_eq!(
        store.delete(&p1, None).unwrap(),
        None,
        "deleting twice is fine"
    );

    clock.advance(Duration::from_secs(1));
    let again = put(&store, "/u-1/p-1", 3);
    assert_eq!(
        again.version, 4,
        "a re-created item continues its path's versions (the delete was 3), with or without history"
    );
    assert_condition_failed(
        store.put(
            &p1,
            value(5),
            PutOptions {
                condition: Some(Condition::IfVersion(1)),
                ..PutOptions::default()
            },
        ),
        "/u-1/p-1",
        Condition::IfVersion(1),
        Some(4),
    );
    assert_eq!(again.created_at, T0.plus(Duration::from_secs(2)));

    // put_created tells a create from a replace, also where the version cannot (a re-create).
    let p9 = path("/u-1/p-9");
    let put_created = |v| {
        store
            .put_created(&p9, value(v), PutOptions::default())
            .unwrap()
    };
    let (item, created) = put_created(1);
    assert_eq!((item.version, created), (1, true));
    let (item, created) = put_created(2);
    assert_eq!((item.version, created), (2, false));
    store.delete(&p9, None).unwrap();
    let (item, created) = put_created(3);
    assert_eq!((item.version, created), (4, true), "a re-created item");

    let clone = (*store).clone();
    put(&clone, "/u-1/p-2", 4);
    assert_eq!(
        store.get(&path("/u-1/p-2")).unwrap().unwrap().value,
        value(4)
    );
}

/// `must_not_exist`, `must_exist` and `if_version` on put, delete and transaction checks: a
/// failed condition is [`Error::ConditionFailed`] naming the path, the condition and the
/// version found, and writes nothing.
pub fn conditions<H: Harness>(harness: &H) {
    use Condition::{IfVersion, MustExist, MustNotExist};
    let (_clock, store) = open_manual(harness);
    let (a, b) = ("/c-1/a-1", "/c-1/b-1");

    let first = store
        .put(&path(a), value(1), with_condition(MustNotExist))
        .unwrap();
    assert_eq!(first.version, 1);
    assert_condition_failed(
        store.put(&path(a), value(9), with_condition(MustNotExist)),
        a,
        MustNotExist,
        Some(1),
    );
    assert_condition_failed(
        store.put(&path(b), value(9), with_condition(MustExist)),
        b,
        MustExist,
        None,
    );
    assert_condition_failed(
        store.put(&path(b), value(9), with_condition(IfVersion(1))),
        b,
        IfVersion(1),
        None,
    );
    let second = store
        .put(&path(a), value(2), with_condition(IfVersion(1)))
        .unwrap();
    assert_eq!(second.version, 2);
    assert_condition_failed(
        store.put(&path(a), value(9), with_condition(IfVersion(1))),
        a,
        IfVersion(1),
        Some(2),
    );
    let third = store
        .put(&path(a), value(3), with_condition(MustExist))
        .unwrap();
    assert_eq!(third.version, 3);
    assert_eq!(store.get(&path(a)).unwrap(), Some(third.clone()));
    assert_eq!(store.get(&path(b)).unwrap(), None);

    assert_condition_failed(
        store.delete(&path(a), Some(MustNotExist)),
        a,
        MustNotExist,
        Some(3),
    );
    assert_condition_failed(
        store.delete(&path(a), Some(IfVersion(2))),
        a,
        IfVersion(2),
        Some(3),
    );
    assert_condition_failed(store.delete(&path(b), Some(MustExist)), b, MustExist, None);
    assert_condition_failed(
        store.delete(&path(b), Some(IfVersion(1))),
        b,
        IfVersion(1),
        None,
    );
    assert_eq!(store.delete(&path(b), Some(MustNotExist)).unwrap(), None);
    assert_eq!(store.get(&path(a)).unwrap(), Some(third.clone()));
    assert_eq!(
        store.delete(&path(a), Some(IfVersion(3))).unwrap(),
        Some(third)
    );
    assert_eq!(store.get(&path(a)).unwrap(), None);

    // Checks inside transactions.
    let c = put(&store, "/c-1/c-1", 1);
    let results = store
        .transact(
            Transaction::new()
                .check(path("/c-1/c-1"), IfVersion(1))
                .check(path("/c-1/none-1"), MustNotExist)
                .put(path("/c-1/d-1"), value(1), PutOptions::default()),
        )
        .unwrap();
    assert_eq!(results.len(), 3);
    assert_eq!(results[0], TxResult::Checked);
    assert_eq!(results[1], TxResult::Checked);
    assert!(matches!(&results[2], TxResult::Put(item) if item.version == 1));
    let failed = store.transact(
        Transaction::new()
            .put(path("/c-1/d-1"), value(2), PutOptions::default())
            .check(path("/c-1/c-1"), MustNotExist),
    );
    assert_condition_failed(failed, "/c-1/c-1", MustNotExist, Some(1));
    assert_eq!(store.get(&path("/c-1/d-1")).unwrap().unwrap().version, 1);
    assert_eq!(store.get(&path("/c-1/c-1")).unwrap(), Some(c));

    let error = store
        .put(&path(b), value(1), with_condition(MustExist))
        .unwrap_err();
    assert!(!error.is_retryable(), "a failed condition is not retryable");
    let message = error.to_string();
    assert!(
        message.contains(b) && message.contains("must exist"),
        "{message}"
    );
}

/// The smallest `n` for which `measure(make(n)) == target`.
fn sized(
    make: impl Fn(usize) -> KeyPath,
    measure: impl Fn(&KeyPath) -> usize,
    target: usize,
) -> KeyPath {
    (1..3 * target)
        .map(&make)
        .find(|p| measure(p) == target)
        .unwrap_or_else(|| panic!("no path measures exactly {target}"))
}

#[track_caller]
fn assert_key_too_large<T: std::fmt::Debug>(
    result: Result<T, Error>,
    expected_part: &str,
    expected_size: usize,
) {
    match result {
        Err(Error::KeyTooLarge {
            part, size, max, ..
        }) => {
            assert_eq!(part, expected_part);
            assert_eq!(size, expected_size);
            assert_eq!(
                max,
                if part == "group" {
                    MAX_GROUP_BYTES
                } else {
                    MAX_SORT_KEY_BYTES
                }
            );
        }
        other => panic!("expected KeyTooLarge ({expected_part}), got {other:?}"),
    }
}

/// Oversize keys (group and sort key) and items, and invalid JSON, through every operation
/// that takes them: a clear error naming the limit, and the database unchanged. Keys and items
/// exactly at the limits are accepted.
pub fn bad_input<H: Harness>(harness: &H) {
    let (_clock, store) = open_manual(harness);
    let group_key = |p: &KeyPath| p.partition_key().len();
    let sort_key = |p: &KeyPath| p.sort_key().len();
    let big_group = |n: usize| path(&format!("/g-{}/a-1", "x".repeat(n)));
    let big_sort = |n: usize| path(&format!("/g-1/a-{}", "y".repeat(n)));

    // At the limits: accepted.
    let max_group = sized(big_group, group_key, MAX_GROUP_BYTES);
    let max_sort = sized(big_sort, sort_key, MAX_SORT_KEY_BYTES);
    for p in [&max_group, &max_sort] {
        store.put(p, value(1), PutOptions::default()).unwrap();
        assert_eq!(store.get(p).unwrap().unwrap().value, value(1));
        let listed = store.list(&ListRequest::new(p.clone())).unwrap();
        assert_eq!(listed.items.len(), 1);
    }
    // The largest item: find it from the size the error reports, then cross the line by one.
    let item_path = path("/g-1/big-1");
    let huge = |len: usize| json(&format!("\"{}\"", "z".repeat(len)));
    let over = match store.put(&item_path, huge(MAX_ITEM_BYTES), PutOptions::default()) {
        Err(Error::ItemTooLarge { size, max, path: p }) => {
            assert_eq!((max, p), (MAX_ITEM_BYTES, item_path.clone()));
            size - MAX_ITEM_BYTES
        }
        other => panic!("expected ItemTooLarge, got {other:?}"),
    };
    let largest = MAX_ITEM_BYTES - over;
    let stored = store
        .put(&item_path, huge(largest), PutOptions::default())
        .unwrap();
    assert_eq!(stored.value.as_str().len(), largest + 2);
    put(&store, "/g-1/small-1", 1);
    let before = dump(&store);
    assert!(!before.is_empty());

    // Over the limits: refused by every operation, naming which part and how big.
    let long_group = sized(big_group, group_key, MAX_GROUP_BYTES + 1);
    let long_sort = sized(big_sort, sort_key, MAX_SORT_KEY_BYTES + 1);
    for (p, part, size) in [
        (&long_group, "group", MAX_GROUP_BYTES + 1),
        (&long_sort, "sort key", MAX_SORT_KEY_BYTES + 1),
    ] {
        assert_key_too_large(store.get(p), part, size);
        assert_key_too_large(store.get_many(&[path("/g-1/a-1"), p.clone()]), part, size);
        assert_key_too_large(store.put(p, value(1), PutOptions::default()), part, size);
        assert_key_too_large(store.delete(p, None), part, size);
        assert_key_too_large(store.history(p, 10), part, size);
        assert_key_too_large(store.get_version(p, 1), part, size);
        assert_key_too_large(store.list(&ListRequest::new(p.clone())), part, size);
        assert_key_too_large(
            store.transact(
                Transaction::new()
                    .put(path("/g-1/a-2"), value(1), PutOptions::default())
                    .delete(p.clone(), None),
            ),
            part,
            size,
        );
        assert_key_too_large(
            store.transact(
                Transaction::new()
                    .put(path("/g-1/a-2"), value(1), PutOptions::default())
                    .check(p.clone(), Condition::MustNotExist),
            ),
            part,
            size,
        );
    }
    let mut request = ListRequest::new(path("/g-1"));
    request.lt = Some(long_sort.clone());
    assert_key_too_large(store.list(&request), "sort key", MAX_SORT_KEY_BYTES + 1);

    let too_big = huge(largest + 1);
    for result in [
        store
            .put(&item_path, too_big.clone(), PutOptions::default())
            .map(|_| ()),
        store
            .put(
                &path("/g-1/small-1"),
                too_big.clone(),
                PutOptions::default(),
            )
            .map(|_| ()),
        store
            .transact(
                Transaction::new()
                    .put(path("/g-1/a-3"), value(1), PutOptions::default())
                    .put(item_path.clone(), too_big.clone(), PutOptions::default()),
            )
            .map(|_| ()),
    ] {
        match result {
            Err(Error::ItemTooLarge { size, max, .. }) => {
                assert!(size > max && max == MAX_ITEM_BYTES);
            }
            other => panic!("expected ItemTooLarge, got {other:?}"),
        }
    }

    // Invalid JSON never becomes a value; the error says where.
    for text in [
        "",
        "   ",
        "{",
        r#"{"a":1,}"#,
        "[1 2]",
        "nul",
        "\"unterminated",
        r#"{"a":1} {}"#,
        "NaN",
        "'x'",
        "{\"a\":\"\u{1}\"}",
        &format!("{}{}", "[".repeat(200), "]".repeat(200)),
        "1e400",
        "[true, -1E309]",
        &"9".repeat(400),
        r#""\ud800""#,
        r#"{"\udc00x":1}"#,
    ] {
        match Json::parse(text) {
            Err(error @ Error::InvalidJson(_)) => {
                let message = error.to_string();
                assert!(
                    message.contains("line") && message.contains("column"),
                    "{message}"
                );
            }
            other => panic!("expected InvalidJson for {text:?}, got {other:?}"),
        }
    }
    assert_eq!(Json::parse(" 1 ").unwrap().as_str(), "1");
    // Deep but readable back: accepted, and `to_value` is the value, not a `Null` stand-in.
    let deep = Json::parse(&format!("{}{}", "[".repeat(127), "]".repeat(127))).unwrap();
    assert!(deep.to_value().is_array());
    for (text, read_back) in [
        ("1e-400", serde_json::json!(0.0)),
        ("[true,false,1e2]", serde_json::json!([true, false, 100.0])),
        ("{\"e\":2E+1}", serde_json::json!({"e": 20.0})),
        (r#""\uD83D\uDE00\u0041""#, serde_json::json!("\u{1F600}A")),
    ] {
        let parsed = Json::parse(text).unwrap();
        assert_eq!((parsed.as_str(), parsed.to_value()), (text, read_back));
    }

    assert_eq!(dump(&store), before, "bad input changed the database");
    assert_eq!(
        texts(&store.list(&ListRequest::new(path("/g-1"))).unwrap().items),
        texts(
            &before
                .iter()
                .filter_map(|r| match r {
                    ExportRecord::Item(item) if item.path.group() == path("/g-1").group() => {
                        Some(pathdb_store::ListEntry::Item(item.clone()))
                    }
                    _ => None,
                })
                .collect::<Vec<_>>()
        )
    );
    // And the store still works.
    put(&store, "/g-1/after-1", 1);
}
