//! The committer's check of a queued batch planned on a snapshot
//! ([`Backend::write_queued_planned_on`]): an expectation is taken as holding only while the
//! snapshot is the committer's own and the overlay has no newer row for its key. And the
//! journal's capacity, sized to the disk, with the room kept past the file to match.

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

#[test]
fn the_journal_is_sized_to_its_disk_and_the_margin_to_the_journal() {
    use crate::backend::file_format::{
        JOURNAL_CAPACITY, JOURNAL_CAPACITY_SMALL, ROOMY_DISK, capacity_for, journal_capacity,
    };
    use crate::backend::reserved::{MARGIN, margin_for};
    assert_eq!(capacity_for(Some(ROOMY_DISK)), JOURNAL_CAPACITY);
    assert_eq!(capacity_for(Some(u64::MAX)), JOURNAL_CAPACITY);
    assert_eq!(capacity_for(Some(ROOMY_DISK - 1)), JOURNAL_CAPACITY_SMALL);
    assert_eq!(capacity_for(Some(0)), JOURNAL_CAPACITY_SMALL);
    assert_eq!(capacity_for(None), JOURNAL_CAPACITY_SMALL);
    // A disk that cannot be asked is taken as small.
    assert_eq!(
        journal_capacity(std::path::Path::new("/no/such/directory/db")),
        JOURNAL_CAPACITY_SMALL
    );
    // Twice the journal, never less than the margin a 4 MiB journal always had.
    assert_eq!(margin_for(JOURNAL_CAPACITY_SMALL), MARGIN);
    assert_eq!(margin_for(JOURNAL_CAPACITY), 2 * JOURNAL_CAPACITY);
    assert_eq!(margin_for(1), MARGIN);
    assert_eq!(margin_for(u64::MAX), u64::MAX);
}

#[test]
fn a_checkpoint_of_several_mib_written_paced_reads_back_after_reopening() {
    let dir = tempfile::tempdir().expect("a directory");
    let path = dir.path().join("db");
    // 48 values of 64 KiB: three journal files' worth, so that checkpoints of more than a
    // pace's MiB each run beside the committer, and the close writes the rest.
    let value = |n: usize| format!("{{\"n\":{n},\"pad\":\"{}\"}}", "x".repeat(64 << 10));
    {
        let backend = FileBackend::open(
            &path,
            FileOptions {
                checkpoint_bytes: Some(1 << 20),
                ..FileOptions::default()
            },
        )
        .expect("open");
        for n in 0..48 {
            let mut batch = put(&key(&format!("k{n:02}")), 1, Expect::Absent);
            if let WriteOp::Put { record, .. } = &mut batch.ops[0] {
                record.value = value(n).into_bytes();
            }
            backend.write(batch).expect("put");
        }
    }
    let backend = FileBackend::open_read_only(&path, FileOptions::default()).expect("reopen");
    let reader = backend.reader().expect("a reader");
    for n in 0..48 {
        let record = reader.get(&key(&format!("k{n:02}"))).expect("read");
        assert_eq!(
            record.map(|r| r.value),
            Some(value(n).into_bytes()),
            "item {n} after the close"
        );
    }
}

/// Bytes the file system has allocated to the file at `path`.
#[cfg(target_os = "linux")]
fn allocated(path: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).expect("the file").blocks() * 512
}

#[test]
#[cfg(target_os = "linux")]
fn a_clean_close_gives_the_margin_back_and_the_next_open_keeps_it_again() {
    use crate::backend::reserved::MARGIN;
    let dir = tempfile::tempdir().expect("a directory");
    let path = dir.path().join("db");
    let len = |path: &std::path::Path| std::fs::metadata(path).expect("the file").len();
    let open = || FileBackend::open(&path, FileOptions::default()).expect("open");
    let k = key("k");
    {
        let backend = open();
        backend.write(put(&k, 1, Expect::Absent)).expect("put k");
        assert!(
            allocated(&path) >= len(&path) + MARGIN,
            "open: {} bytes allocated to a file of {}",
            allocated(&path),
            len(&path)
        );
    }
    // A file system allocates in blocks: a block's worth more than the length is no margin.
    assert!(
        allocated(&path) < len(&path) + (64 << 10),
        "closed: {} bytes allocated to a file of {}",
        allocated(&path),
        len(&path)
    );
    let read_only = FileBackend::open_read_only(&path, FileOptions::default()).expect("reopen");
    assert_eq!(version(&read_only.reader().expect("a reader"), &k), Some(1));
    drop(read_only);
    let backend = open();
    assert!(allocated(&path) >= len(&path) + MARGIN, "reopened");
    assert_eq!(version(&backend.reader().expect("a reader"), &k), Some(1));
}
