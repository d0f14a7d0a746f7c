//! Backups (docs/backups.md): every backend's backup restores into a database file that holds
//! every row it held, and on which the oldest invariants hold: versions are never reused, and
//! transfers made before the backup still sum exactly.

use crate::{Harness, manual_options};
use pathdb_keys::KeyPath;
use pathdb_store::backend::{Backend, FileOptions, Key, Reader, Record};
use pathdb_store::backup::{restore_backup, verify_backup};
use pathdb_store::{Json, PutOptions, Store, StoreOptions, Transaction};

fn path(text: &str) -> KeyPath {
    text.parse().expect("a key path")
}

fn amount(n: i64) -> Json {
    Json::parse(&format!(r#"{{"amount":{n}}}"#)).expect("JSON")
}

fn increment(by: i64) -> pathdb_store::Patch {
    let ops = serde_json::json!([{"op": "increment", "path": "/amount", "value": by}]);
    pathdb_store::Patch::json_patch(&ops).expect("a patch")
}

/// Every row but the token keys (a restore replaces them: docs/backups.md).
pub(crate) fn rows<B: Backend>(store: &Store<B>) -> Vec<(Key, Record)> {
    let reader = store.backend().reader().expect("a reader");
    let mut out = Vec::new();
    let mut after = None;
    loop {
        let page = reader.scan_all(after.as_ref(), 500).expect("scan");
        let Some((last, _)) = page.last() else { break };
        after = Some(last.clone());
        out.extend(page);
    }
    out.retain(|(k, _)| !(k.partition == [0] && matches!(k.sort.as_slice(), [4] | [10])));
    out
}

/// A backup of any backend restores every row into a new file; there, a deleted path's next
/// version continues its numbering and the accounts still sum to what they did.
pub fn backups_restore_every_row<H: Harness>(harness: &H) {
    let (_clock, options) = manual_options();
    let store = harness.open(options);
    let history = PutOptions {
        history: true,
        ..PutOptions::default()
    };
    store
        .set_namespace_history("doc", Some(2))
        .expect("definition");
    for i in 1..=5 {
        store
            .put(&path("/b-1/doc-1"), amount(i), history.clone())
            .expect("put");
    }
    store.delete(&path("/b-1/doc-1"), None).expect("delete");
    for a in 1..=4 {
        store
            .put(
                &path(&format!("/b-1/acct-{a}")),
                amount(100),
                PutOptions::default(),
            )
            .expect("put");
    }
    for (from, to) in [(1, 2), (2, 3), (3, 4), (4, 1), (1, 3)] {
        let tx = Transaction::new()
            .patch(
                path(&format!("/b-1/acct-{from}")),
                increment(-7),
                PutOptions::default(),
            )
            .patch(
                path(&format!("/b-1/acct-{to}")),
                increment(7),
                PutOptions::default(),
            );
        store.transact(tx).expect("transfer");
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("b.pdbbackup");
    let info = store
        .backup(std::fs::File::create(&file).expect("create"))
        .expect("backup");
    assert_eq!(verify_backup(&file).expect("verified").rows, info.rows);
    // A snapshot where the backend reads one (not DynamoDB's Scan), and then with its commit
    // where the backend numbers commits (the file).
    let (_, point) = store.backend().backup_reader().expect("a backup reader");
    assert_eq!(info.snapshot, point.snapshot);
    assert_eq!(info.commit.is_some(), point.commit.is_some());
    let restored_path = dir.path().join("restored.pathdb");
    restore_backup(&file, &restored_path).expect("restore");
    let restored = Store::open(
        &restored_path,
        FileOptions::default(),
        StoreOptions {
            sweep_interval: None,
            ..StoreOptions::default()
        },
    )
    .expect("open the restored file");
    assert_eq!(rows(&restored), rows(&store), "the restored file's rows");
    let put = restored
        .put(&path("/b-1/doc-1"), amount(0), PutOptions::default())
        .expect("put after the restore");
    assert_eq!(put.version, 7, "five versions and a tombstone came before");
    let total: i64 = (1..=4)
        .map(|a| {
            let item = restored
                .get(&path(&format!("/b-1/acct-{a}")))
                .expect("get")
                .expect("an account");
            item.value.to_value()["amount"].as_i64().expect("a number")
        })
        .sum();
    assert_eq!(
        total, 400,
        "transfers before the backup sum exactly after the restore"
    );
    drop(restored);

    // A store restored another way (a DynamoDB table restored to a point in time) is marked
    // a new history: after a reopen, a change token from before answers 410.
    let prefix = path("/b-1");
    let token = store.changes_token(&prefix).expect("a token");
    store.mark_restored().expect("mark restored");
    let (_clock, options) = manual_options();
    if let Some(store) = harness.reopen(store, options) {
        match store.changes(&prefix, Some(&token), 10) {
            Err(pathdb_store::Error::ChangesExpired(why)) => {
                assert!(why.contains("restored"), "{why}");
            }
            other => panic!("a token from before the restore: {other:?}"),
        }
        let fresh = store.changes_token(&prefix).expect("a new token");
        store
            .changes(&prefix, Some(&fresh), 10)
            .expect("a new token reads");
    }
}
