//! The committer's check of a queued batch planned on a snapshot
//! ([`Backend::write_queued_planned_on`]): an expectation is taken as holding only while the
//! snapshot is the committer's own and the overlay has no newer row for its key.

use super::{FileBackend, FileOptions};
use crate::backend::{Backend, Expect, Key, Reader, Record, WriteBatch, WriteError, WriteOp};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn key(sort: &str) -> Key {
    Key {
        partition: b"p".to_vec(),
        sort: sort.as_bytes().to_vec(),
    }
}

/// A put of `key` at `version`, expecting `expect` there.
fn put(key: &Key, version: u64, expect: Expect) -> WriteBatch {
    WriteBatch {
        ops: vec![WriteOp::Put {
            key: key.clone(),
            record: Record {
                version,
                created_at: 1,
                modified_at: 1,
                expires_at: None,
                value: b"{}".to_vec(),
            },
            expect: Some(expect),
        }],
    }
}

/// `batch`, queued as planned on `reader`.
fn queued(
    backend: &FileBackend,
    batch: WriteBatch,
    reader: &super::FileReader,
) -> Result<(), WriteError> {
    match backend.write_queued_planned_on(batch, reader) {
        Ok(pending) => pathdb_conformance::block_on(pending),
        Err(_) => panic!("the file backend queues writes"),
    }
}

/// Waits until what `ready` says of a new reader holds.
fn wait_until(backend: &FileBackend, what: &str, ready: impl Fn(&super::FileReader) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ready(&backend.reader().expect("a reader")) {
        assert!(Instant::now() < deadline, "waited 60 s: {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Whether `reader`'s overlay has a row for `key`.
fn in_overlay(reader: &super::FileReader, key: &Key) -> bool {
    reader
        .overlay
        .as_ref()
        .is_some_and(|v| v.get(&key.partition, &key.sort).is_some())
}

fn version(reader: &super::FileReader, key: &Key) -> Option<u64> {
    reader.get(key).expect("read").map(|r| r.version)
}

#[test]
fn a_batch_planned_on_a_snapshot_fails_on_what_changed_since() {
    let dir = tempfile::tempdir().expect("a directory");
    let backend = FileBackend::open(
        dir.path().join("db"),
        FileOptions {
            // Every commit starts a checkpoint when none is running.
            checkpoint_bytes: Some(1),
            ..FileOptions::default()
        },
    )
    .expect("open");
    let k = key("k");
    backend.write(put(&k, 1, Expect::Absent)).expect("put k");
    wait_until(&backend, "k in redb", |r| !in_overlay(r, &k));

    // Planned on a snapshot whose redb holds k: nothing wrote k since, so the expectation
    // holds (whether the committer reads k again or not).
    let planned = backend.reader().expect("a reader");
    assert_eq!(version(&planned, &k), Some(1));
    queued(&backend, put(&k, 2, Expect::Version(1)), &planned).expect("k unchanged since");
    // k changed since, and the overlay has the change: refused.
    match queued(&backend, put(&k, 2, Expect::Version(1)), &planned) {
        Err(WriteError::ConditionFailed { index: 0 }) => {}
        other => panic!("k at version 2 in the overlay, yet: {other:?}"),
    }

    // k changes after the snapshot a batch is planned on, and a checkpoint then moves the
    // change into redb: the overlay no longer has it, and the committer's snapshot is a new one.
    // Refused as well: the batch's snapshot is not the committer's, so k is read again.
    let planned = backend.reader().expect("a reader");
    assert_eq!(version(&planned, &k), Some(2));
    backend
        .write(put(&k, 3, Expect::Version(2)))
        .expect("put k again");
    wait_until(&backend, "k's change in a new snapshot of redb", |r| {
        !Arc::ptr_eq(&r.table, &planned.table) && !in_overlay(r, &k)
    });
    match queued(&backend, put(&k, 3, Expect::Version(2)), &planned) {
        Err(WriteError::ConditionFailed { index: 0 }) => {}
        other => panic!("a stale expectation was taken: {other:?}"),
    }
    assert_eq!(version(&backend.reader().expect("a reader"), &k), Some(3));
}
