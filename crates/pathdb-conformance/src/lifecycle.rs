//! Transactions, history, expiry, and the export scan with its import.

use super::{
    Harness, T0, assert_condition_failed, dump, manual_options, open_manual, path, put, texts,
    value,
};
use pathdb_keys::KeyPath;
use pathdb_store::backend::{Backend, Reader};
use pathdb_store::{
    Condition, Error, Expiry, ExportLine, ExportRecord, ExportStatus, ImportRecord, Item,
    ListRequest, MAX_TRANSACTION_OPS, OnExisting, PutOptions, Store, Timestamp, Transaction,
    TxResult,
};
use std::time::Duration;

fn with_history() -> PutOptions {
    PutOptions {
        history: true,
        ..PutOptions::default()
    }
}

fn expiring(expiry: Expiry) -> PutOptions {
    PutOptions {
        expires: Some(expiry),
        ..PutOptions::default()
    }
}

fn versions(items: &[Item]) -> Vec<u64> {
    items.iter().map(|i| i.version).collect()
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// A transaction returns one result per operation, in order (the item written, the item
/// deleted or `None`, `Checked`), spans groups, applies put options (history, expiry), and
/// accepts up to [`MAX_TRANSACTION_OPS`] operations.
pub fn transaction_results<H: Harness>(harness: &H) {
    let (clock, store) = open_manual(harness);
    let old = put(&store, "/tx-1/a-1", 1);
    let doomed = put(&store, "/tx-2/b-1", 2);
    put(&store, "/tx-1/z-1", 3);
    clock.advance(secs(1));
    let results = store
        .transact(
            Transaction::new()
                .put(path("/tx-1/a-1"), value(10), with_history())
                .put(
                    path("/tx-1/new-1"),
                    value(11),
                    expiring(Expiry::After(secs(60))),
                )
                .delete(path("/tx-2/b-1"), Some(Condition::IfVersion(1)))
                .delete(path("/tx-2/missing-1"), None)
                .check(path("/tx-1/z-1"), Condition::IfVersion(1)),
        )
        .unwrap();
    let now = T0.plus(secs(1));
    let [
        TxResult::Put(a),
        TxResult::Put(new),
        TxResult::Deleted(deleted),
        TxResult::Deleted(missing),
        TxResult::Checked,
    ] = &results[..]
    else {
        panic!("unexpected results {results:?}");
    };
    assert_eq!(
        (a.version, a.created_at, a.modified_at),
        (2, old.created_at, now)
    );
    assert_eq!(a.value, value(10));
    assert_eq!(store.get(&path("/tx-1/a-1")).unwrap().as_ref(), Some(a));
    assert_eq!(
        versions(&store.history(&path("/tx-1/a-1"), 10).unwrap()),
        [2]
    );
    assert_eq!(new.expires_at, Some(now.plus(secs(60))));
    assert_eq!(store.get(&path("/tx-1/new-1")).unwrap().as_ref(), Some(new));
    assert_eq!(deleted.as_ref(), Some(&doomed));
    assert_eq!(*missing, None);
    assert_eq!(store.get(&path("/tx-2/b-1")).unwrap(), None);

    // As many operations as the API takes, or, where the backend's atomic write holds fewer,
    // as many as fit with the group's change log entry (DynamoDB: 100 items, so 99 puts).
    let fits = MAX_TRANSACTION_OPS.min(store.backend().max_batch_ops() - 1);
    let full = |n: usize, group: &str| {
        (0..n).fold(Transaction::new(), |tx, i| {
            tx.put(
                path(&format!("/{group}/i-{i}")),
                value(i as i64),
                PutOptions::default(),
            )
        })
    };
    assert_eq!(store.transact(full(fits, "tx-3")).unwrap().len(), fits);
    let listed = store
        .list(&ListRequest {
            limit: 1000,
            ..ListRequest::new(path("/tx-3"))
        })
        .unwrap();
    assert_eq!(listed.items.len(), fits);
    if fits < MAX_TRANSACTION_OPS {
        // One more is refused as a whole, saying why, and writes nothing.
        match store.transact(full(fits + 1, "tx-4")) {
            Err(Error::InvalidRequest(message)) => {
                assert!(message.contains("storage operations"), "{message}")
            }
            other => panic!("expected a clear refusal, got {other:?}"),
        }
        assert!(
            store
                .list(&ListRequest::new(path("/tx-4")))
                .unwrap()
                .items
                .is_empty()
        );
    }
}

/// A transaction that fails (a condition on its last operation, a malformed transaction, an
/// oversize item or key) leaves nothing behind: no item, no revision, no expiry entry, no
/// change of version.
pub fn failed_transactions_leave_nothing<H: Harness>(harness: &H) {
    let (clock, store) = open_manual(harness);
    store.set_namespace_history("h", Some(2)).unwrap();
    store
        .put(&path("/f-1/a-1"), value(1), with_history())
        .unwrap();
    store
        .put(&path("/f-1/a-1"), value(2), with_history())
        .unwrap();
    put(&store, "/f-1/b-1", 1);
    store
        .put(
            &path("/f-1/c-1"),
            value(1),
            expiring(Expiry::After(secs(100))),
        )
        .unwrap();
    put(&store, "/f-1/h-1", 1);
    let before = dump(&store);
    let history_before = store.history(&path("/f-1/a-1"), 10).unwrap();
    assert_eq!(versions(&history_before), [2, 1]);

    let everything = |last: Option<(KeyPath, Condition)>| {
        let mut tx = Transaction::new()
            .put(path("/f-1/a-1"), value(3), with_history())
            .put(
                path("/f-1/d-1"),
                value(1),
                expiring(Expiry::After(secs(10))),
            )
            .delete(path("/f-1/b-1"), None)
            .put(path("/f-2/e-1"), value(1), PutOptions::default())
            .put(path("/f-1/h-1"), value(2), PutOptions::default());
        if let Some((p, condition)) = last {
            tx = tx.check(p, condition);
        }
        tx
    };
    assert_condition_failed(
        store.transact(everything(Some((
            path("/f-1/c-1"),
            Condition::IfVersion(9),
        )))),
        "/f-1/c-1",
        Condition::IfVersion(9),
        Some(1),
    );
    assert_condition_failed(
        store.transact(everything(Some((
            path("/f-1/c-1"),
            Condition::MustNotExist,
        )))),
        "/f-1/c-1",
        Condition::MustNotExist,
        Some(1),
    );
    assert_condition_failed(
        store.transact(everything(Some((path("/f-1/zz-1"), Condition::MustExist)))),
        "/f-1/zz-1",
        Condition::MustExist,
        None,
    );
    let failed = store.transact(
        Transaction::new()
            .put(path("/f-1/g-1"), value(1), PutOptions::default())
            .delete(path("/f-1/b-1"), Some(Condition::IfVersion(7))),
    );
    assert_condition_failed(failed, "/f-1/b-1", Condition::IfVersion(7), Some(1));

    let invalid = |tx: Transaction| {
        let result = store.transact(tx);
        assert!(
            matches!(result, Err(Error::InvalidRequest(_))),
            "expected InvalidRequest, got {result:?}"
        );
    };
    invalid(Transaction::new());
    let mut too_long = everything(None);
    for i in 0..MAX_TRANSACTION_OPS {
        too_long = too_long.put(
            path(&format!("/f-1/n-{i}")),
            value(1),
            PutOptions::default(),
        );
    }
    invalid(too_long);
    invalid(everything(None).delete(path("/f-1/d-1"), None));
    invalid(everything(None).check(path("/f-1/a-1"), Condition::MustExist));
    let huge = super::json(&format!("\"{}\"", "z".repeat(pathdb_store::MAX_ITEM_BYTES)));
    assert!(matches!(
        store.transact(everything(None).put(path("/f-1/big-1"), huge, PutOptions::default())),
        Err(Error::ItemTooLarge { .. })
    ));
    let long_key = path(&format!(
        "/f-1/k-{}",
        "k".repeat(pathdb_store::MAX_SORT_KEY_BYTES)
    ));
    assert!(matches!(
        store.transact(everything(None).delete(long_key, None)),
        Err(Error::KeyTooLarge { .. })
    ));

    assert_eq!(dump(&store), before, "a failed transaction left something");
    assert_eq!(
        store.history(&path("/f-1/a-1"), 10).unwrap(),
        history_before
    );
    assert_eq!(store.history(&path("/f-1/h-1"), 10).unwrap().len(), 1);
    // No expiry entry of /f-1/d-1 was left either: only /f-1/c-1's is due.
    clock.advance(secs(1000));
    assert_eq!(store.sweep_expired().unwrap(), 1);
    // The same transaction without the failing check goes through.
    assert_eq!(store.transact(everything(None)).unwrap().len(), 5);
}

/// History: revisions newest first, with their metadata; a retention count per put (the
/// store's default) or per namespace (set, lowered, removed); `get_version` of a revision, of
/// the current item and of trimmed or unknown versions; revisions of a path are never mixed
/// with those of paths below it; history outlives a delete and continues after re-creation.
pub fn history_retention<H: Harness>(harness: &H) {
    let (clock, store) = open_manual(harness);
    let doc = path("/h-1/doc-1");
    let mut written = Vec::new();
    for n in 1..=5 {
        clock.advance(secs(1));
        written.push(store.put(&doc, value(n), with_history()).unwrap());
    }
    assert_eq!(written.last().unwrap().created_at, T0.plus(secs(1)));
    // Default retention of the harness options: 3.
    let history = store.history(&doc, 10).unwrap();
    assert_eq!(
        history,
        [written[4].clone(), written[3].clone(), written[2].clone()]
    );
    assert_eq!(store.history(&doc, 2).unwrap(), history[..2]);
    assert_eq!(store.history(&doc, 0).unwrap(), []);
    assert_eq!(
        store.get_version(&doc, 4).unwrap(),
        Some(written[3].clone())
    );
    assert_eq!(
        store.get_version(&doc, 5).unwrap(),
        Some(written[4].clone())
    );
    assert_eq!(store.get_version(&doc, 1).unwrap(), None, "trimmed");
    assert_eq!(store.get_version(&doc, 0).unwrap(), None);
    assert_eq!(store.get_version(&doc, 99).unwrap(), None);

    // A put without history adds no revision; the current item is still its version.
    let sixth = put(&store, "/h-1/doc-1", 6);
    assert_eq!(sixth.version, 6);
    assert_eq!(versions(&store.history(&doc, 10).unwrap()), [5, 4, 3]);
    assert_eq!(store.get_version(&doc, 6).unwrap(), Some(sixth));

    // Paths below, and the group's own item, keep their own revisions.
    let below = path("/h-1/doc-1/x-1");
    for n in 0..2 {
        store.put(&below, value(n), with_history()).unwrap();
    }
    let group = path("/h-1");
    store.put(&group, value(0), with_history()).unwrap();
    assert_eq!(versions(&store.history(&doc, 10).unwrap()), [5, 4, 3]);
    assert_eq!(versions(&store.history(&below, 10).unwrap()), [2, 1]);
    assert_eq!(versions(&store.history(&group, 10).unwrap()), [1]);
    assert_eq!(store.history(&path("/h-1/doc-2"), 10).unwrap(), []);

    // Per namespace, by the path's last element.
    store.set_namespace_history("log", Some(2)).unwrap();
    let log = path("/h-1/log-1");
    for n in 0..4 {
        put(&store, "/h-1/log-1", n);
    }
    assert_eq!(versions(&store.history(&log, 10).unwrap()), [4, 3]);
    put(&store, "/h-1/log-1/entry-1", 0);
    assert_eq!(store.history(&path("/h-1/log-1/entry-1"), 10).unwrap(), []);
    store.set_namespace_history("log", Some(1)).unwrap();
    put(&store, "/h-1/log-1", 5);
    assert_eq!(versions(&store.history(&log, 10).unwrap()), [5]);
    store.set_namespace_history("log", None).unwrap();
    put(&store, "/h-1/log-1", 6);
    assert_eq!(versions(&store.history(&log, 10).unwrap()), [5]);
    store.put(&log, value(7), with_history()).unwrap();
    assert_eq!(versions(&store.history(&log, 10).unwrap()), [7, 5]);
    // Lowering a retention far below the revisions kept trims them at the item's next write.
    store.set_namespace_history("big", Some(40)).unwrap();
    let big = path("/h-1/big-1");
    for n in 0..40 {
        put(&store, "/h-1/big-1", n);
    }
    assert_eq!(store.history(&big, 100).unwrap().len(), 40);
    store.set_namespace_history("big", Some(2)).unwrap();
    put(&store, "/h-1/big-1", 40);
    assert_eq!(versions(&store.history(&big, 100).unwrap()), [41, 40]);
    store.set_namespace_history("h", Some(1)).unwrap();
    put(&store, "/h-2", 1);
    assert_eq!(versions(&store.history(&path("/h-2"), 10).unwrap()), [1]);

    // History outlives a delete and a re-created item continues it.
    store.delete(&doc, None).unwrap();
    assert_eq!(versions(&store.history(&doc, 10).unwrap()), [5, 4, 3]);
    assert_eq!(
        store.get_version(&doc, 4).unwrap(),
        Some(written[3].clone())
    );
    let again = store.put(&doc, value(9), with_history()).unwrap();
    assert!(again.version > 5, "re-created at version {}", again.version);
    assert_eq!(
        store.history(&doc, 1).unwrap(),
        std::slice::from_ref(&again)
    );
    assert_eq!(store.history(&doc, 10).unwrap().len(), 3);

    for (namespace, retention) in [
        ("bad-ns", Some(1)),
        ("", Some(1)),
        ("9x", None),
        ("log", Some(0)),
    ] {
        assert!(
            matches!(
                store.set_namespace_history(namespace, retention),
                Err(Error::InvalidRequest(_))
            ),
            "{namespace:?} {retention:?}"
        );
    }
}

fn raw_get<B: Backend>(store: &Store<B>, p: &KeyPath) -> Option<pathdb_store::backend::Record> {
    store
        .backend()
        .reader()
        .unwrap()
        .get(&crate::item_key(p))
        .unwrap()
}

/// Whether the sweeper replaced the item at `p` by its tombstone (layout.rs): an empty value
/// holding the version the item had.
fn swept_to_tombstone<B: Backend>(store: &Store<B>, p: &KeyPath, version: u64) -> bool {
    raw_get(store, p).is_some_and(|r| r.value.is_empty() && r.version == version)
}

/// Expiry: an item is invisible from its `expires_at` on to every read (get, get_many, list,
/// children, scan) and to conditions; a later write sets or clears the expiry; a put that would
/// be dead on arrival (an expiry in the past, a TTL of 0) is refused; [`Store::sweep_expired`]
/// replaces what expired, and only that, by a tombstone, and a re-created item continues its
/// version numbering.
pub fn ttl_expiry<H: Harness>(harness: &H) {
    let (clock, store) = open_manual(harness);
    let at = |offset: u64| T0.plus(secs(offset));
    let a = store
        .put(
            &path("/x-1/a-1"),
            value(1),
            expiring(Expiry::After(secs(10))),
        )
        .unwrap();
    assert_eq!(a.expires_at, Some(at(10)));
    let b = store
        .put(&path("/x-1/b-1"), value(1), expiring(Expiry::At(at(5))))
        .unwrap();
    assert_eq!(b.expires_at, Some(at(5)));
    put(&store, "/x-1/c-1", 1);
    store
        .put(
            &path("/x-1/a-1/d-1"),
            value(1),
            expiring(Expiry::After(secs(5))),
        )
        .unwrap();
    store
        .put(
            &path("/x-1/e-1"),
            value(1),
            expiring(Expiry::After(secs(3))),
        )
        .unwrap();
    let e = put(&store, "/x-1/e-1", 2);
    assert_eq!(e.expires_at, None, "a put without expiry clears it");
    store
        .put(
            &path("/x-1/f-1"),
            value(1),
            expiring(Expiry::After(secs(3))),
        )
        .unwrap();
    store
        .put(
            &path("/x-1/f-1"),
            value(2),
            expiring(Expiry::After(secs(100))),
        )
        .unwrap();
    let past = Timestamp(T0.0 - 1);
    for dead in [Expiry::At(past), Expiry::At(T0), Expiry::After(secs(0))] {
        let refused = store.put(&path("/x-1/g-1"), value(1), expiring(dead));
        assert!(
            matches!(refused, Err(Error::InvalidRequest(_))),
            "{dead:?}: {refused:?}"
        );
        let refused =
            store.transact(Transaction::new().put(path("/x-1/g-1"), value(1), expiring(dead)));
        assert!(
            matches!(refused, Err(Error::InvalidRequest(_))),
            "{dead:?}: {refused:?}"
        );
    }
    assert_eq!(
        raw_get(&store, &path("/x-1/g-1")),
        None,
        "a refused put wrote"
    );
    store
        .transact(Transaction::new().put(
            path("/x-1/h-1"),
            value(1),
            expiring(Expiry::After(secs(5))),
        ))
        .unwrap();

    let all: Vec<KeyPath> = ["a-1", "a-1/d-1", "b-1", "c-1", "e-1", "f-1", "g-1", "h-1"]
        .iter()
        .map(|s| path(&format!("/x-1/{s}")))
        .collect();
    let visible = |expected: &[&str]| {
        let want: Vec<String> = expected.iter().map(|s| format!("/x-1/{s}")).collect();
        assert_eq!(
            super::item_texts(&store.get_many(&all).unwrap()),
            want,
            "get_many"
        );
        let listed = store.list(&ListRequest::new(path("/x-1"))).unwrap();
        assert_eq!(texts(&listed.items), want, "list");
        let mut children = ListRequest::new(path("/x-1"));
        children.children_only = true;
        let listed = store.list(&children).unwrap();
        let direct: Vec<&String> = want
            .iter()
            .filter(|p| p.matches('/').count() == 2)
            .collect();
        assert_eq!(
            texts(&listed.items).iter().collect::<Vec<_>>(),
            direct,
            "children"
        );
        let mut reverse = ListRequest::new(path("/x-1"));
        reverse.reverse = true;
        reverse.limit = 1;
        let mut stitched = super::list_all(&store, &reverse);
        stitched.reverse();
        assert_eq!(texts(&stitched), want, "reverse pages");
        let scanned: Vec<String> = dump(&store)
            .iter()
            .filter_map(|r| match r {
                ExportRecord::Item(item) => Some(item.path.to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(scanned, want, "scan");
        for p in &all {
            let shown = want.contains(&p.to_string());
            assert_eq!(store.get(p).unwrap().is_some(), shown, "get {p}");
        }
    };
    visible(&["a-1", "a-1/d-1", "b-1", "c-1", "e-1", "f-1", "h-1"]);
    clock.advance(secs(3));
    visible(&["a-1", "a-1/d-1", "b-1", "c-1", "e-1", "f-1", "h-1"]);
    // At exactly `expires_at` an item is gone.
    clock.advance(secs(2));
    visible(&["a-1", "c-1", "e-1", "f-1"]);

    // Expired items do not exist for conditions.
    assert_condition_failed(
        store.delete(&path("/x-1/a-1/d-1"), Some(Condition::MustExist)),
        "/x-1/a-1/d-1",
        Condition::MustExist,
        None,
    );
    assert_eq!(store.delete(&path("/x-1/h-1"), None).unwrap(), None);
    let reborn = store
        .put(
            &path("/x-1/b-1"),
            value(2),
            PutOptions {
                condition: Some(Condition::MustNotExist),
                ..PutOptions::default()
            },
        )
        .unwrap();
    assert_eq!((reborn.created_at, reborn.expires_at), (at(5), None));
    visible(&["a-1", "b-1", "c-1", "e-1", "f-1"]);
    clock.advance(secs(5));
    visible(&["b-1", "c-1", "e-1", "f-1"]);

    let versions_before: Vec<u64> = ["/x-1/a-1", "/x-1/a-1/d-1", "/x-1/h-1"]
        .iter()
        .map(|p| raw_get(&store, &path(p)).unwrap().version)
        .collect();
    assert!(store.sweep_expired().unwrap() > 0);
    for (gone, version) in ["/x-1/a-1", "/x-1/a-1/d-1", "/x-1/h-1"]
        .iter()
        .zip(versions_before)
    {
        assert!(
            swept_to_tombstone(&store, &path(gone), version),
            "{gone} was not swept"
        );
    }
    for kept in ["/x-1/b-1", "/x-1/c-1", "/x-1/e-1", "/x-1/f-1"] {
        assert!(
            raw_get(&store, &path(kept)).is_some_and(|r| !r.value.is_empty()),
            "{kept} was swept"
        );
    }
    assert_eq!(
        store.sweep_expired().unwrap(),
        0,
        "a second sweep finds nothing"
    );
    visible(&["b-1", "c-1", "e-1", "f-1"]);
    clock.advance(secs(100));
    visible(&["b-1", "c-1", "e-1"]);
    let f_version = raw_get(&store, &path("/x-1/f-1")).unwrap().version;
    assert_eq!(store.sweep_expired().unwrap(), 1);
    assert!(swept_to_tombstone(&store, &path("/x-1/f-1"), f_version));
    let a_version = raw_get(&store, &path("/x-1/a-1")).unwrap().version;
    let fresh = store
        .put(
            &path("/x-1/a-1"),
            value(3),
            PutOptions {
                condition: Some(Condition::MustNotExist),
                ..PutOptions::default()
            },
        )
        .unwrap();
    assert_eq!(fresh.created_at, at(110));
    assert_eq!(
        fresh.version,
        a_version + 1,
        "a re-created item reused a version"
    );
}

/// The scan returns every current item and revision in key order (each group's items, then
/// its revisions), resumably at any page size, without expired items; its records survive JSON
/// lines; importing them into an empty store reproduces it exactly (versions, timestamps,
/// history, expiry), importing twice changes nothing, and an invalid record (version 0, over a
/// limit, malformed line) is refused before anything is written.
pub fn scan_and_import<H: Harness>(harness: &H) {
    let (clock, options) = manual_options();
    let store = harness.open(options.clone());
    let aliased = KeyPath::builder()
        .push("g", vec![8u8, 3])
        .push("a", 1)
        .build()
        .unwrap();
    for n in 0..3 {
        clock.advance(secs(1));
        store
            .put(&path("/x-1/doc-1"), value(n), with_history())
            .unwrap();
    }
    put(&store, "/x-1", 1);
    put(&store, "/x-1/doc-1/c-1", 1);
    put(&store, "/x-2/a-1", 1);
    put(&store, "/g-3/a-1", 1);
    store
        .put(&aliased, value(1), PutOptions::default())
        .unwrap();
    store
        .put(
            &path("/x-2/soon-1"),
            value(1),
            expiring(Expiry::After(secs(50))),
        )
        .unwrap();
    store
        .put(
            &path("/x-2/gone-1"),
            value(1),
            expiring(Expiry::After(secs(1))),
        )
        .unwrap();
    clock.advance(secs(1));

    let records = dump(&store);
    let one_page = store.scan(None, 1000).unwrap();
    assert_eq!(one_page.cursor, None);
    assert_eq!(one_page.records, records);
    let mut cursor = None;
    let mut single = Vec::new();
    loop {
        let page = store.scan(cursor.as_deref(), 1).unwrap();
        assert!(page.records.len() <= 1);
        single.extend(page.records);
        match page.cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(single, records);

    let current: Vec<&Item> = records
        .iter()
        .filter_map(|r| match r {
            ExportRecord::Item(item) => Some(item),
            _ => None,
        })
        .collect();
    let revisions: Vec<&Item> = records
        .iter()
        .filter_map(|r| match r {
            ExportRecord::Revision(item) => Some(item),
            _ => None,
        })
        .collect();
    let mut expected_current = vec![
        path("/x-1"),
        path("/x-1/doc-1"),
        path("/x-1/doc-1/c-1"),
        path("/x-2/a-1"),
        path("/x-2/soon-1"),
        path("/g-3/a-1"),
        aliased.clone(),
    ];
    expected_current.sort_by_key(|p| (p.partition_key(), p.sort_key()));
    assert_eq!(
        current.iter().map(|i| i.path.clone()).collect::<Vec<_>>(),
        expected_current
    );
    for item in &current {
        assert_eq!(store.get(&item.path).unwrap().as_ref(), Some(*item));
    }
    assert_eq!(
        revisions.into_iter().cloned().collect::<Vec<_>>(),
        store.history(&path("/x-1/doc-1"), 10).unwrap()
    );
    // The expired item is exported as what it leaves: its path's last version.
    assert!(records.contains(&ExportRecord::Tombstone {
        path: path("/x-2/gone-1"),
        version: 1,
        deleted_at: T0.plus(secs(4)),
    }));
    // Key order: within a group, items and tombstones before revisions; groups in
    // partition-key order.
    let group_of = |r: &ExportRecord| r.path().partition_key();
    let is_revision = |r: &ExportRecord| matches!(r, ExportRecord::Revision(_));
    for pair in records.windows(2) {
        let (x, y) = (&pair[0], &pair[1]);
        assert!(group_of(x) <= group_of(y), "groups out of order");
        if group_of(x) == group_of(y) {
            assert!(
                !is_revision(x) || is_revision(y),
                "a revision before an item"
            );
        }
    }

    // Every record survives a JSON line; the export's own text parses back to the same records.
    let mut text = Vec::new();
    let end = store.export(&mut text, &mut |_| {}).unwrap();
    assert_eq!(
        (end.export, end.records, end.skipped),
        (ExportStatus::Complete, records.len() as u64, 0)
    );
    let text = String::from_utf8(text).unwrap();
    let last = text.lines().last().unwrap();
    assert_eq!(ExportLine::parse(last).unwrap(), ExportLine::End(end));
    let lines = || text.lines().map(|l| Ok::<_, String>(l.to_owned()));
    let parsed = pathdb_store::parse_import(lines(), false).unwrap();
    // Without its last line, an export is taken only as a deliberate part.
    let cut = || lines().take(records.len());
    assert!(matches!(
        pathdb_store::parse_import(cut(), false),
        Err(Error::InvalidRequest(_))
    ));
    assert_eq!(
        pathdb_store::parse_import(cut(), true).unwrap().len(),
        records.len()
    );
    let imported: Vec<ImportRecord> = records
        .iter()
        .cloned()
        .map(ImportRecord::Exported)
        .collect();
    assert_eq!(parsed, imported);
    for r in &records {
        let line = serde_json::to_string(r).unwrap();
        assert!(!line.contains('\n'));
        assert_eq!(
            ExportLine::parse(&line).unwrap(),
            ExportLine::Record(ImportRecord::Exported(r.clone())),
            "{line}"
        );
    }
    for line in [
        "",
        "not json",
        "{}",
        r#"{"path":"nope","version":1,"created_at":1,"modified_at":1,"value":1}"#,
        r#"{"path":"/a-1","version":"1","created_at":1,"modified_at":1,"value":1}"#,
        r#"{"path":"/a-1","version":1,"created_at":1,"modified_at":1}"#,
        r#"{"path":"/a-1","version":0,"created_at":1,"modified_at":1,"value":1}"#,
        r#"{"path":"/a-1","version":2,"value":1}"#,
        r#"{"path":"/a-1","value":1,"surprise":1}"#,
        r#"{"path":"/a-1","version":2,"deleted":true}"#,
        r#"{"path":"/a-1","version":2,"deleted":true,"deleted_at":1,"value":1}"#,
        r#"{"export":"done","records":1}"#,
    ] {
        assert!(
            matches!(ExportLine::parse(line), Err(Error::InvalidRequest(_))),
            "{line:?}"
        );
    }
    // A truncated or failed export is refused as a whole.
    let body: Vec<&str> = text.lines().collect();
    let (records_text, _) = body.split_at(body.len() - 1);
    for bad in [
        format!(
            "{}\n{{\"export\":\"complete\",\"records\":{}}}",
            records_text[1..].join("\n"),
            records.len()
        ),
        format!(
            "{}\n{{\"export\":\"incomplete\",\"records\":{},\"error\":\"boom\"}}",
            records_text.join("\n"),
            records.len()
        ),
        format!("{}\n{}\n{}", records_text.join("\n"), last, records_text[0]),
    ] {
        let lines = bad.lines().map(|l| Ok::<_, String>(l.to_owned()));
        assert!(
            matches!(
                pathdb_store::parse_import(lines, true),
                Err(Error::InvalidRequest(_))
            ),
            "{bad}"
        );
    }

    let copy = harness.open(options);
    let report = copy
        .import(&imported, OnExisting::Replace, &mut |_| {})
        .unwrap();
    assert_eq!(
        (report.imported, report.unchanged),
        (records.len() as u64, 0)
    );
    assert_eq!(
        report.last_path.as_ref(),
        records.last().map(ExportRecord::path)
    );
    assert_eq!(dump(&copy), records);
    let again = copy
        .import(&imported, OnExisting::Replace, &mut |_| {})
        .unwrap();
    assert_eq!((again.imported, again.unchanged), (0, records.len() as u64));
    assert_eq!(dump(&copy), records, "importing twice changed the copy");
    for item in &current {
        assert_eq!(copy.get(&item.path).unwrap().as_ref(), Some(*item));
    }
    assert_eq!(
        copy.history(&path("/x-1/doc-1"), 10).unwrap(),
        store.history(&path("/x-1/doc-1"), 10).unwrap()
    );
    // The copy keeps the expired path's version too.
    let reborn = copy
        .put(&path("/x-2/gone-1"), value(2), PutOptions::default())
        .unwrap();
    assert_eq!(reborn.version, 2);
    copy.delete(&path("/x-2/gone-1"), None).unwrap();

    // Invalid records: refused while parsing, before anything is written.
    let fresh = |text: &str, version: u64, value: &str| {
        format!(
            r#"{{"path":"{text}","version":{version},"created_at":1,"modified_at":1,"value":{value}}}"#
        )
    };
    let huge = format!("\"{}\"", "z".repeat(pathdb_store::MAX_ITEM_BYTES));
    let long = format!("/x-3/k-{}", "k".repeat(pathdb_store::MAX_SORT_KEY_BYTES));
    for (bad, check) in [
        (fresh("/x-3/zero-1", 0, "1"), "version"),
        (fresh("/x-3/big-1", 1, &huge), "item size"),
        (fresh(&long, 1, "1"), "key size"),
    ] {
        let input = [fresh("/x-3/ok-1", 1, "1"), fresh("/x-3/ok-2", 1, "1"), bad];
        let result = pathdb_store::parse_import(input.into_iter().map(Ok::<_, String>), true);
        assert!(
            matches!(result, Err(Error::InvalidRequest(_))),
            "{check}: {result:?}"
        );
    }
    // Imported expiry works like written expiry.
    clock.advance(secs(100));
    assert_eq!(copy.get(&path("/x-2/soon-1")).unwrap(), None);
    let soon_version = raw_get(&copy, &path("/x-2/soon-1")).unwrap().version;
    assert_eq!(copy.sweep_expired().unwrap(), 1);
    assert!(swept_to_tombstone(
        &copy,
        &path("/x-2/soon-1"),
        soon_version
    ));
}

/// A version number, once used for a path, is never used again for it: after a delete (single
/// or in a transaction), after an expiry (swept or not), with history on or off. A client
/// holding an old version can never match the re-created item, and a listing never shows a
/// deleted path.
pub fn versions_never_reused<H: Harness>(harness: &H) {
    let (clock, store) = open_manual(harness);
    let stale = |at: &str, version: u64, current: u64| {
        assert_condition_failed(
            store.put(
                &path(at),
                value(0),
                PutOptions {
                    condition: Some(Condition::IfVersion(version)),
                    ..PutOptions::default()
                },
            ),
            at,
            Condition::IfVersion(version),
            Some(current),
        );
    };
    // Delete, then re-create: the numbering goes on. A delete is a write: it takes version 4.
    for n in 1..=3 {
        assert_eq!(put(&store, "/v-1/a-1", n).version, n as u64);
    }
    store.delete(&path("/v-1/a-1"), None).unwrap();
    assert_eq!(store.get(&path("/v-1/a-1")).unwrap(), None);
    assert_eq!(put(&store, "/v-1/a-1", 9).version, 5);
    stale("/v-1/a-1", 1, 5);
    stale("/v-1/a-1", 3, 5);
    // A delete inside a transaction, and a must-not-exist create after it.
    store
        .transact(Transaction::new().delete(path("/v-1/a-1"), Some(Condition::IfVersion(5))))
        .unwrap();
    let created = store
        .put(
            &path("/v-1/a-1"),
            value(1),
            PutOptions {
                condition: Some(Condition::MustNotExist),
                ..PutOptions::default()
            },
        )
        .unwrap();
    assert_eq!(created.version, 7);
    // Expiry, before and after the sweep.
    let ttl = |secs_: u64| PutOptions {
        expires: Some(Expiry::After(secs(secs_))),
        ..PutOptions::default()
    };
    store.put(&path("/v-1/t-1"), value(1), ttl(1)).unwrap();
    store.put(&path("/v-1/t-2"), value(1), ttl(1)).unwrap();
    store.put(&path("/v-1/t-2"), value(2), ttl(1)).unwrap();
    clock.advance(secs(2));
    // Not swept yet: the expired record still holds the version.
    assert_eq!(put(&store, "/v-1/t-1", 2).version, 2);
    // t-2's two writes share one expiry entry; t-1's is stale and only removed.
    assert_eq!(store.sweep_expired().unwrap(), 2);
    assert_eq!(put(&store, "/v-1/t-2", 3).version, 3);
    stale("/v-1/t-2", 1, 3);
    // History on: the same numbering, and the revisions outlive the delete.
    let history = PutOptions {
        history: true,
        ..PutOptions::default()
    };
    store
        .put(&path("/v-1/h-1"), value(1), history.clone())
        .unwrap();
    store.delete(&path("/v-1/h-1"), None).unwrap();
    assert_eq!(
        store
            .put(&path("/v-1/h-1"), value(2), history)
            .unwrap()
            .version,
        3
    );
    assert_eq!(store.history(&path("/v-1/h-1"), 10).unwrap().len(), 2);
    // Deleting what is not there writes nothing and reports nothing.
    store.delete(&path("/v-1/a-1"), None).unwrap();
    assert_eq!(store.delete(&path("/v-1/a-1"), None).unwrap(), None);
    assert_eq!(put(&store, "/v-1/a-1", 1).version, 9);
    // Listings never show a tombstone, in either direction or as a child.
    store.delete(&path("/v-1/t-1"), None).unwrap();
    let mut request = ListRequest::new(path("/v-1"));
    assert_eq!(
        texts(&store.list(&request).unwrap().items),
        ["/v-1/a-1", "/v-1/h-1", "/v-1/t-2"]
    );
    request.children_only = true;
    request.reverse = true;
    assert_eq!(
        texts(&store.list(&request).unwrap().items),
        ["/v-1/t-2", "/v-1/h-1", "/v-1/a-1"]
    );
}

/// Import never takes a version backwards and is idempotent: over an item at version 3, a line
/// at version 1 is written at version 4 (and counted once however many lines name the path);
/// importing the same input again changes nothing; `skip` leaves live items alone and `fail`
/// stops at the first; a tombstone line deletes without lowering the version; lines with only
/// path and value are written as puts.
pub fn import_never_goes_backwards<H: Harness>(harness: &H) {
    let (clock, store) = open_manual(harness);
    for n in 1..=3 {
        put(&store, "/i-1/a-1", n);
    }
    put(&store, "/i-1/b-1", 1);
    clock.advance(secs(10));
    let line =
        |text: &str| pathdb_store::parse_import([Ok::<_, String>(text.to_owned())], true).unwrap();
    let old = r#"{"path":"/i-1/a-1","version":1,"created_at":5,"modified_at":5,"value":"old"}"#;
    let mut records = line(old);
    records.extend(line(old));
    records.extend(line(r#"{"path":"/i-1/c-1","value":{"x":1}}"#));

    let report = store
        .import(&records, OnExisting::Skip, &mut |_| {})
        .unwrap();
    assert_eq!(
        (report.imported, report.unchanged, report.skipped),
        (1, 0, 1),
        "{report:?}"
    );
    assert_eq!(store.get(&path("/i-1/a-1")).unwrap().unwrap().version, 3);

    let failed = store.import(&records, OnExisting::Fail, &mut |_| {});
    let Err(pathdb_store::ImportError { applied, error }) = failed else {
        panic!("fail mode imported over a live item: {failed:?}")
    };
    assert!(matches!(error, Error::ConditionFailed { .. }), "{error}");
    assert_eq!(applied.imported, 0);

    let mut reports = Vec::new();
    let report = store
        .import(&records, OnExisting::Replace, &mut |r| {
            reports.push(r.clone())
        })
        .unwrap();
    assert_eq!((report.imported, report.unchanged), (1, 1), "{report:?}");
    assert_eq!(reports.last(), Some(&report));
    assert_eq!(report.last_path, Some(path("/i-1/c-1")));
    let a = store.get(&path("/i-1/a-1")).unwrap().unwrap();
    assert_eq!((a.version, a.value.as_str()), (4, "\"old\""));
    assert_eq!(store.get(&path("/i-1/c-1")).unwrap().unwrap().version, 1);
    let again = store
        .import(&records, OnExisting::Replace, &mut |_| {})
        .unwrap();
    assert_eq!((again.imported, again.unchanged), (0, 2), "not idempotent");
    assert_eq!(store.get(&path("/i-1/a-1")).unwrap().unwrap().version, 4);

    // A tombstone over a live item deletes it above its version (a delete is a write); an item
    // after it goes above that.
    let deleted = line(r#"{"path":"/i-1/b-1","version":1,"deleted_at":7,"deleted":true}"#);
    store
        .import(&deleted, OnExisting::Replace, &mut |_| {})
        .unwrap();
    assert_eq!(store.get(&path("/i-1/b-1")).unwrap(), None);
    let behind =
        line(r#"{"path":"/i-1/b-1","version":1,"created_at":1,"modified_at":1,"value":2}"#);
    store
        .import(&behind, OnExisting::Replace, &mut |_| {})
        .unwrap();
    assert_eq!(store.get(&path("/i-1/b-1")).unwrap().unwrap().version, 3);
    // A version ahead of the stored one is kept as it is.
    let ahead = line(r#"{"path":"/i-1/b-1","version":9,"created_at":1,"modified_at":1,"value":3}"#);
    store
        .import(&ahead, OnExisting::Replace, &mut |_| {})
        .unwrap();
    assert_eq!(store.get(&path("/i-1/b-1")).unwrap().unwrap().version, 9);
}

/// Import never rewrites history or lets it get ahead of its item: revisions of an item the
/// import skips are skipped; a revision never overwrites another; a revision above the version
/// its item holds is skipped (the next write of the path would take that number). Versions
/// above [`pathdb_store::MAX_VERSION`] are refused; re-running an import of duplicate lines or of
/// items that have since expired changes nothing.
pub fn import_keeps_history_consistent<H: Harness>(harness: &H) {
    let (clock, store) = open_manual(harness);
    let with_history = PutOptions {
        history: true,
        ..PutOptions::default()
    };
    for n in 1..=2 {
        store
            .put(&path("/j-1/a-1"), value(n), with_history.clone())
            .unwrap();
    }
    let history_before = store.history(&path("/j-1/a-1"), 10).unwrap();
    let lines = |text: &[String]| {
        pathdb_store::parse_import(text.iter().map(|l| Ok::<_, String>(l.clone())), true).unwrap()
    };
    let record = |version: u64, revision: bool, value: i64| {
        format!(
            r#"{{"path":"/j-1/a-1","version":{version},"created_at":1,"modified_at":{version},"expires_at":null,"value":{value}{}}}"#,
            if revision { r#","revision":true"# } else { "" }
        )
    };
    // Another store's /j-1/a-1 at version 7 with revisions 7 and 2.
    let other = lines(&[
        record(7, false, 70),
        record(7, true, 70),
        record(2, true, 20),
    ]);

    // Skipped item: its revisions are skipped too, and the history stays ours.
    let report = store.import(&other, OnExisting::Skip, &mut |_| {}).unwrap();
    assert_eq!((report.imported, report.skipped), (0, 3), "{report:?}");
    assert_eq!(
        store.history(&path("/j-1/a-1"), 10).unwrap(),
        history_before
    );

    // Replaced item (7 is above our 2): revision 7 is new and written; revision 2 is ours and
    // stays ours.
    let report = store
        .import(&other, OnExisting::Replace, &mut |_| {})
        .unwrap();
    assert_eq!((report.imported, report.skipped), (2, 1), "{report:?}");
    let history = store.history(&path("/j-1/a-1"), 10).unwrap();
    assert_eq!(
        history.iter().map(|i| i.version).collect::<Vec<_>>(),
        [7, 2, 1]
    );
    assert_eq!(history[1], history_before[0], "revision 2 was rewritten");
    assert_eq!(
        store
            .put(&path("/j-1/a-1"), value(8), with_history.clone())
            .unwrap()
            .version,
        8
    );

    // A revision above its item's version is skipped: the item is at 1, revision 5 stays out.
    let ahead = lines(&[
        r#"{"path":"/j-1/b-1","version":1,"created_at":1,"modified_at":1,"expires_at":null,"value":1}"#.to_owned(),
        r#"{"path":"/j-1/b-1","version":5,"created_at":1,"modified_at":5,"expires_at":null,"value":5,"revision":true}"#.to_owned(),
    ]);
    let report = store
        .import(&ahead, OnExisting::Replace, &mut |_| {})
        .unwrap();
    assert_eq!((report.imported, report.skipped), (1, 1), "{report:?}");
    assert_eq!(store.history(&path("/j-1/b-1"), 10).unwrap(), []);
    // Alone, without its item, a revision is skipped too.
    let alone = lines(&[
        r#"{"path":"/j-1/c-1","version":3,"created_at":1,"modified_at":3,"expires_at":null,"value":3,"revision":true}"#.to_owned(),
    ]);
    let report = store
        .import(&alone, OnExisting::Replace, &mut |_| {})
        .unwrap();
    assert_eq!((report.imported, report.skipped), (0, 1), "{report:?}");

    // Versions a client cannot hold are refused before anything is written.
    let huge = format!(
        r#"{{"path":"/j-1/d-1","version":{},"created_at":1,"modified_at":1,"value":1}}"#,
        pathdb_store::MAX_VERSION + 1
    );
    assert!(matches!(
        pathdb_store::parse_import([Ok::<_, String>(huge)], true),
        Err(Error::InvalidRequest(_))
    ));

    // Duplicate lines, and an item that expires after the first run: the re-run changes nothing.
    let t = T0.plus(secs(1)).0;
    let again = lines(&[
        r#"{"path":"/j-1/e-1","value":1}"#.to_owned(),
        r#"{"path":"/j-1/e-1","value":2}"#.to_owned(),
        format!(
            r#"{{"path":"/j-1/f-1","version":1,"created_at":1,"modified_at":1,"expires_at":{},"value":1}}"#,
            t + 5_000_000
        ),
    ]);
    let first = store
        .import(&again, OnExisting::Replace, &mut |_| {})
        .unwrap();
    assert_eq!(first.imported, 2, "{first:?}");
    clock.advance(secs(100));
    store.sweep_expired().unwrap();
    let second = store
        .import(&again, OnExisting::Replace, &mut |_| {})
        .unwrap();
    assert_eq!((second.imported, second.unchanged), (0, 2), "{second:?}");
    assert_eq!(store.get(&path("/j-1/e-1")).unwrap().unwrap().version, 1);
}
