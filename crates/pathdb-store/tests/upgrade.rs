//! Opening a database written before tombstones existed (docs/versions.md, "Upgrading data
//! written before this rule"): a path deleted then, with history, continues its numbering.
//! The old records are written straight to the backend, at the keys docs/versions.md and
//! layout.rs document.

use pathdb_keys::KeyPath;
use pathdb_store::backend::{Backend, InMemoryBackend, Key, Record, WriteBatch, WriteOp};
use pathdb_store::{Json, PutOptions, Store, StoreOptions};

/// A revision's key: `ff`, the item's sort key, and `u64::MAX - version`.
fn revision_key(path: &KeyPath, version: u64) -> Key {
    let mut sort = vec![0xff];
    sort.extend_from_slice(&path.sort_key());
    sort.extend_from_slice(&(u64::MAX - version).to_be_bytes());
    Key {
        partition: path.partition_key(),
        sort,
    }
}

#[test]
fn a_path_deleted_before_tombstones_continues_its_numbering() {
    let gone: KeyPath = "/h-1/a-1".parse().unwrap();
    let backend = InMemoryBackend::new();
    let ops = (1..=3)
        .map(|v| WriteOp::Put {
            key: revision_key(&gone, v),
            record: Record {
                version: v,
                created_at: 1,
                modified_at: 1 + v as i64,
                expires_at: None,
                value: format!("{{\"n\":{v}}}").into_bytes(),
            },
            expect: None,
        })
        .collect();
    backend.write(WriteBatch { ops }).unwrap();
    let options = StoreOptions {
        sweep_interval: None,
        default_history_retention: 10,
        ..StoreOptions::default()
    };
    let store = Store::new(backend, options).unwrap();
    assert_eq!(store.get(&gone).unwrap(), None);
    assert_eq!(store.history(&gone, 10).unwrap().len(), 3);
    let put = store
        .put(&gone, Json::parse("{}").unwrap(), PutOptions::default())
        .unwrap();
    assert_eq!(put.version, 4, "above every version the path used");
}
