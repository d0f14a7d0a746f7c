//! Storage faults: injected ones on memory and file (`pathdb_conformance::fault_injection`), and
//! a real full disk (a small tmpfs) on the file backend.

use pathdb_conformance::disk::{Tmpfs, fill};
use pathdb_conformance::{FaultWorkload, fault_injection};
use pathdb_keys::KeyPath;
use pathdb_store::backend::{Backend, FileBackend, FileOptions, InMemoryBackend};
use pathdb_store::{Error, Json, PutOptions, StorageErrorKind, Store, StoreOptions};
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[test]
fn injected_faults_on_memory() {
    let report = fault_injection(InMemoryBackend::new(), FaultWorkload::default());
    eprintln!("memory: {report}");
    assert!(report.injected.refused_writes > 0 && report.injected.lost_answers > 0);
    assert!(report.acknowledged > 0 && report.failed > 0 && report.unknown > 0);
}

#[test]
fn injected_faults_on_file() {
    let dir = tempfile::tempdir().unwrap();
    let backend =
        FileBackend::open(dir.path().join("faults.pathdb"), FileOptions::default()).unwrap();
    let report = fault_injection(backend, FaultWorkload::default());
    eprintln!("file: {report}");
    assert!(report.injected.refused_writes > 0 && report.injected.lost_answers > 0);
    assert!(report.acknowledged > 0 && report.failed > 0 && report.unknown > 0);
}

/// The store options of the full-disk tests: no sweeper writing on its own.
fn options() -> StoreOptions {
    StoreOptions {
        sweep_interval: None,
        ..StoreOptions::default()
    }
}

/// Item `n` of the full-disk tests.
fn at(n: usize) -> KeyPath {
    format!("/disk-1/item-{n}").parse().unwrap()
}

fn value(n: usize) -> Json {
    Json::parse(&format!(r#"{{"n":{n},"pad":"{}"}}"#, "x".repeat(2000))).unwrap()
}

/// The file backend on a full disk: writes fail as "disk full" (nothing half-written), the
/// backend says it is not ready, reads go on, and once space is freed the next write succeeds
/// within 5 s on the same open store; every acknowledged write reads back, and the file closes
/// cleanly (a read-only open accepts it).
#[test]
fn a_full_disk_is_named_and_recovered_from_without_a_restart() {
    full_disk_recovery(16, FileOptions::default(), true);
}

/// The same with the journal a roomy disk gets (16 MiB, and 32 MiB kept past the file), on a
/// disk just large enough for it.
#[test]
fn a_full_disk_is_named_and_recovered_from_with_a_large_journal() {
    full_disk_recovery(
        96,
        FileOptions {
            checkpoint_bytes: Some(16 << 20),
            ..FileOptions::default()
        },
        true,
    );
}

/// The same with a checkpoint every 16 KB of journal: the disk fills while checkpoints run
/// beside the committer, and the commits made beside them are in the overlay. Here a
/// checkpoint frees pages inside the file, and the recovery after a failed journal append
/// cuts the journal, so some writes after the first "disk full" may fit again: each is either
/// acknowledged (and read back at the end) or fails as "disk full".
#[test]
fn a_full_disk_is_recovered_from_while_checkpoints_run_beside_the_committer() {
    full_disk_recovery(
        16,
        FileOptions {
            checkpoint_bytes: Some(16 << 10),
            ..FileOptions::default()
        },
        false,
    );
}

/// Fills a disk of `megabytes` under a store and frees it again; `stays_full`: once a write
/// failed for a full disk, the next ones fail too and the backend is not ready, until space is
/// freed.
fn full_disk_recovery(megabytes: u64, file: FileOptions, stays_full: bool) {
    let Some(fs) = Tmpfs::mount_or_skip(megabytes) else {
        return;
    };
    let db: PathBuf = fs.path().join("full.pathdb");
    let options = options();
    let store = Store::open(&db, file, options.clone()).unwrap();
    let mut acknowledged = Vec::new();
    for n in 0..100 {
        store.put(&at(n), value(n), PutOptions::default()).unwrap();
        acknowledged.push(n);
    }
    let filler = fs.path().join("filler");
    fill(&filler);
    let mut full = None;
    // What fits beside the filler: the file's own free pages, then nothing.
    for n in 100..10_000 {
        match store.put(&at(n), value(n), PutOptions::default()) {
            Ok(_) => acknowledged.push(n),
            Err(Error::Storage(e)) => {
                full = Some(e);
                break;
            }
            Err(e) => panic!("unexpected error on a full disk: {e}"),
        }
    }
    let full = full.expect("the disk never filled");
    assert_eq!(full.kind(), StorageErrorKind::Full, "{full}");
    assert!(full.to_string().starts_with("disk full: "), "{full}");
    assert!(!full.to_string().contains("storage error"), "{full}");
    // Writes keep failing, as "disk full", while the disk is full; the backend is not ready.
    for n in 0..3 {
        match store.put(&at(100_000 + n), value(100_000 + n), PutOptions::default()) {
            Ok(_) if !stays_full => acknowledged.push(100_000 + n),
            Ok(item) => panic!("a write on a full disk was acknowledged: {}", item.path),
            Err(e) => assert!(
                matches!(&e, Error::Storage(s) if s.kind() == StorageErrorKind::Full),
                "{e}"
            ),
        }
    }
    if stays_full {
        let not_ready = store.backend().ready().unwrap_err();
        assert_eq!(not_ready.kind(), StorageErrorKind::Full, "{not_ready}");
    }
    // Reads go on.
    assert_eq!(store.get(&at(7)).unwrap().map(|i| i.value), Some(value(7)));

    std::fs::remove_file(&filler).unwrap();
    let freed = Instant::now();
    let written = loop {
        match store.put(&at(50_000), value(0), PutOptions::default()) {
            Ok(item) => break item,
            Err(e) if freed.elapsed() < Duration::from_secs(5) => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("5 s after space was freed, writes still fail: {e}"),
        }
    };
    eprintln!(
        "{} writes acknowledged before the disk filled; the first write after freeing space \
         succeeded in {:?}",
        acknowledged.len(),
        freed.elapsed()
    );
    assert_eq!(written.version, 1);
    store
        .backend()
        .ready()
        .expect("ready again once a write works");
    for n in &acknowledged {
        let item = store.get(&at(*n)).unwrap();
        assert_eq!(item.map(|i| i.value), Some(value(*n)), "acknowledged {n}");
    }
    drop(store);
    let read_only = Store::open_read_only(&db, FileOptions::default(), options).unwrap();
    assert_eq!(
        read_only.get(&at(50_000)).unwrap().map(|i| i.version),
        Some(1)
    );
}

/// A store dropped while the disk is still full (an import that failed) leaves a file that
/// read-only opens accept, with every acknowledged write: the failed commits left no unbacked
/// pages behind for the close to trip on.
#[test]
fn a_store_closed_on_a_full_disk_opens_read_only() {
    let Some(fs) = Tmpfs::mount_or_skip(16) else {
        return;
    };
    let db: PathBuf = fs.path().join("full.pathdb");
    let options = options();
    let store = Store::open(&db, FileOptions::default(), options.clone()).unwrap();
    for n in 0..50 {
        store.put(&at(n), value(n), PutOptions::default()).unwrap();
    }
    fill(&fs.path().join("filler"));
    // An import-sized batch: 1,000 records of 2 KB.
    let lines = (1_000..2_000).map(|n| {
        Ok::<_, std::convert::Infallible>(format!(r#"{{"path":"{}","value":{}}}"#, at(n), value(n)))
    });
    let records = pathdb_store::parse_import(lines, true).unwrap();
    let failed = store
        .import(&records, pathdb_store::OnExisting::Replace, &mut |_| {})
        .unwrap_err();
    assert!(
        matches!(&failed.error, Error::Storage(e) if e.kind() == StorageErrorKind::Full),
        "{failed}: {}",
        failed.error
    );
    drop(store);
    let read_only = Store::open_read_only(&db, FileOptions::default(), options)
        .expect("a file closed on a full disk opens read-only");
    for n in 0..50 {
        assert_eq!(
            read_only.get(&at(n)).unwrap().map(|i| i.value),
            Some(value(n))
        );
    }
}

/// One put per open, as the CLI writes, into a disk that fills with a little room left (from a
/// few KB to more than a checkpoint writes): every put either fails as "disk full" or is
/// acknowledged, and however it ends, the file closes cleanly, so that a read-only open reads
/// every acknowledged put.
#[test]
fn puts_that_each_open_the_file_leave_it_readable_when_the_disk_fills() {
    for room in [0u64, 64 << 10, 300 << 10, 1 << 20] {
        let Some(fs) = Tmpfs::mount_or_skip(16) else {
            return;
        };
        let db: PathBuf = fs.path().join("full.pathdb");
        let options = options();
        let put = |n: usize| -> Result<(), Error> {
            let store = Store::open(&db, FileOptions::default(), options.clone())?;
            store.put(&at(n), value(n), PutOptions::default()).map(drop)
        };
        put(0).unwrap();
        let filler = fs.path().join("filler");
        fill(&filler);
        let len = std::fs::metadata(&filler).unwrap().len();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&filler)
            .unwrap()
            .set_len(len.saturating_sub(room))
            .unwrap();
        let mut acknowledged = vec![0];
        let mut full = None;
        for n in 1..10_000 {
            match put(n) {
                Ok(()) => acknowledged.push(n),
                Err(e) => {
                    full = Some(e);
                    break;
                }
            }
        }
        let full = full.expect("the disk never filled");
        assert!(
            matches!(&full, Error::Storage(e) if e.kind() == StorageErrorKind::Full),
            "{room} bytes left: {full}"
        );
        let read_only = Store::open_read_only(&db, FileOptions::default(), options.clone())
            .unwrap_or_else(|e| panic!("{room} bytes left, {} puts: {e}", acknowledged.len()));
        for n in &acknowledged {
            assert_eq!(
                read_only.get(&at(*n)).unwrap().map(|i| i.value),
                Some(value(*n)),
                "{room} bytes left: item {n}"
            );
        }
    }
}
