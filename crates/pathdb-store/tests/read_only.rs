//! `Store::open_read_only`: reads leave the file's bytes as they were, writes are refused with
//! `Error::ReadOnly`, and opens that cannot work say why (missing file, file held by a writer).

use pathdb_keys::KeyPath;
use pathdb_store::backend::{FileBackend, FileOptions};
use pathdb_store::{
    Condition, Error, Json, ListRequest, PutOptions, StorageErrorKind, Store, StoreOptions,
    Transaction,
};
use std::path::Path;

fn path(text: &str) -> KeyPath {
    text.parse().unwrap()
}

fn value(n: i64) -> Json {
    Json::parse(&format!(r#"{{"n":{n}}}"#)).unwrap()
}

fn options() -> StoreOptions {
    StoreOptions {
        sweep_interval: None,
        ..StoreOptions::default()
    }
}

/// A closed database file with items, revisions, an expiring item and a namespace setting.
fn seeded(db: &Path) {
    let store = Store::open(db, FileOptions::default(), options()).unwrap();
    store.set_namespace_history("log", Some(3)).unwrap();
    let history = PutOptions {
        history: true,
        ..PutOptions::default()
    };
    for n in 0..3 {
        store
            .put(&path("/u-1/log-1"), value(n), history.clone())
            .unwrap();
    }
    store
        .put(&path("/u-1/post-2"), value(7), PutOptions::default())
        .unwrap();
    let expiring = PutOptions {
        expires: Some(pathdb_store::Expiry::After(std::time::Duration::from_secs(
            3600,
        ))),
        ..PutOptions::default()
    };
    store.put(&path("/u-2"), value(8), expiring).unwrap();
}

fn open_read_only(db: &Path) -> Result<Store<FileBackend>, Error> {
    // The default options ask for a sweeper: a read-only store must not start one.
    Store::open_read_only(db, FileOptions::default(), StoreOptions::default())
}

#[test]
fn reads_leave_the_file_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.redb");
    seeded(&db);
    let before = std::fs::read(&db).unwrap();
    for _ in 0..2 {
        let store = open_read_only(&db).unwrap();
        assert!(store.backend().is_read_only());
        assert_eq!(
            store.get(&path("/u-1/post-2")).unwrap().unwrap().value,
            value(7)
        );
        let page = store.list(&ListRequest::new(path("/u-1"))).unwrap();
        assert_eq!(page.items.len(), 2);
        assert_eq!(store.history(&path("/u-1/log-1"), 10).unwrap().len(), 3);
        assert!(store.scan(None, 1000).unwrap().records.len() >= 6);
        drop(store);
        assert!(
            std::fs::read(&db).unwrap() == before,
            "a read-only open changed the file"
        );
    }
}

#[test]
fn every_write_is_refused_with_read_only_and_nothing_changes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.redb");
    seeded(&db);
    let before = std::fs::read(&db).unwrap();
    let store = open_read_only(&db).unwrap();
    let results: Vec<(&str, Result<(), Error>)> = vec![
        (
            "put",
            store
                .put(&path("/u-3"), value(1), PutOptions::default())
                .map(drop),
        ),
        (
            "conditional put",
            store
                .put(
                    &path("/u-1/post-2"),
                    value(1),
                    PutOptions {
                        condition: Some(Condition::IfVersion(1)),
                        ..PutOptions::default()
                    },
                )
                .map(drop),
        ),
        ("delete", store.delete(&path("/u-1/post-2"), None).map(drop)),
        (
            "transaction",
            store
                .transact(Transaction::new().put(path("/u-4"), value(1), PutOptions::default()))
                .map(drop),
        ),
        (
            "import",
            store
                .import(
                    &[pathdb_store::ImportRecord::Value {
                        path: path("/u-5"),
                        value: value(1),
                    }],
                    pathdb_store::OnExisting::Replace,
                    &mut |_| {},
                )
                .map(drop)
                .map_err(|e| e.error),
        ),
    ];
    for (what, result) in results {
        match result {
            Err(Error::ReadOnly) => {}
            other => panic!("{what}: expected Error::ReadOnly, got {other:?}"),
        }
    }
    assert_eq!(store.get(&path("/u-3")).unwrap(), None);
    drop(store);
    assert!(
        std::fs::read(&db).unwrap() == before,
        "a refused write changed the file"
    );
}

#[test]
fn read_only_open_of_a_missing_file_fails_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("missing.redb");
    let error = open_read_only(&db).err().expect("opened a missing file");
    assert!(error.to_string().contains("missing.redb"), "{error}");
    assert!(!db.exists(), "a read-only open created the file");
}

#[test]
fn a_file_held_by_a_writer_is_reported_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.redb");
    seeded(&db);
    let writer = Store::open(&db, FileOptions::default(), options()).unwrap();
    for (what, result) in [
        ("read-only", open_read_only(&db).map(drop)),
        (
            "read-write",
            Store::open(&db, FileOptions::default(), options()).map(drop),
        ),
    ] {
        match result {
            Err(Error::Storage(e)) => assert_eq!(e.kind(), StorageErrorKind::InUse, "{what}: {e}"),
            other => panic!("{what}: expected an in-use storage error, got {other:?}"),
        }
    }
    drop(writer);
    // Readers share the file with each other.
    let first = open_read_only(&db).unwrap();
    let second = open_read_only(&db).unwrap();
    assert_eq!(
        first.get(&path("/u-1/post-2")).unwrap(),
        second.get(&path("/u-1/post-2")).unwrap()
    );
}
