//! The conformance suite on every backend this crate ships.

mod memory {
    pathdb_conformance::conformance_tests!(pathdb_conformance::InMemory);
}

mod file {
    pathdb_conformance::conformance_tests!(pathdb_conformance::TempFile::default());
}

/// The file backend checkpointing every few commits: most writes commit while a checkpoint
/// runs beside the committer, and are read through the overlay until it is done
/// (backend/overlay.rs).
mod checkpointing {
    pathdb_conformance::conformance_tests!(pathdb_conformance::TempFile {
        file: pathdb_store::backend::FileOptions {
            checkpoint_bytes: Some(4 << 10),
            ..pathdb_store::backend::FileOptions::default()
        }
    });
}

/// The file backend with the continuous archive on: every workload again, and the archive
/// restored at its end equals the file (pathdb_conformance::ArchivedTempFile).
mod archived {
    pathdb_conformance::conformance_tests!(pathdb_conformance::ArchivedTempFile);
}

/// Any `Fn(StoreOptions) -> Store<B>` is a harness too (what another crate's backend may use).
#[test]
fn a_closure_is_a_harness() {
    use pathdb_store::backend::InMemoryBackend;
    use pathdb_store::{Store, StoreOptions};
    let harness = |options: StoreOptions| Store::new(InMemoryBackend::new(), options).unwrap();
    pathdb_conformance::put_get_delete(&harness);
    pathdb_conformance::conditions(&harness);
}

/// A deleted item's version survives a restart of the file backend: the numbering goes on
/// after the file is closed and opened again, before and after an expiry sweep.
#[test]
fn versions_are_not_reused_after_a_restart() {
    use pathdb_store::backend::FileOptions;
    use pathdb_store::{Expiry, Json, ManualClock, PutOptions, Store, StoreOptions, Timestamp};
    use std::sync::Arc;
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("restart.pathdb");
    let clock = Arc::new(ManualClock::new(Timestamp(1_700_000_000_000_000)));
    let options = StoreOptions {
        clock: clock.clone(),
        sweep_interval: None,
        ..StoreOptions::default()
    };
    let open = || Store::open(&db, FileOptions::default(), options.clone()).unwrap();
    let (deleted, expired) = ("/r-1/a-1".parse().unwrap(), "/r-1/b-1".parse().unwrap());
    let one = || Json::parse("1").unwrap();
    let store = open();
    for _ in 0..3 {
        store.put(&deleted, one(), PutOptions::default()).unwrap();
    }
    store.delete(&deleted, None).unwrap();
    let ttl = PutOptions {
        expires: Some(Expiry::After(Duration::from_secs(1))),
        ..PutOptions::default()
    };
    store.put(&expired, one(), ttl.clone()).unwrap();
    store.put(&expired, one(), ttl).unwrap();
    drop(store);
    clock.advance(Duration::from_secs(2));
    let store = open();
    assert_eq!(store.sweep_expired().unwrap(), 1);
    drop(store);
    let store = open();
    let again = |p| store.put(p, one(), PutOptions::default()).unwrap().version;
    // Deleted at 3 (the delete is 4); expired at 2 (an expiry keeps the version).
    assert_eq!((again(&deleted), again(&expired)), (5, 3));
}

/// An export of the file backend reads one snapshot: writes that commit while it runs are not
/// in it, so an item is never older than its revisions in the export (a copy imported from it
/// would otherwise reuse the revisions' version numbers).
#[test]
fn a_file_export_is_one_snapshot() {
    use pathdb_store::backend::FileOptions;
    use pathdb_store::{ExportLine, ExportRecord, ImportRecord, Json, PutOptions, Store};
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(
        dir.path().join("snapshot.pathdb"),
        FileOptions::default(),
        pathdb_store::StoreOptions::default(),
    )
    .unwrap();
    let history = PutOptions {
        history: true,
        ..PutOptions::default()
    };
    let doc = "/s-1/a-0".parse().unwrap();
    for n in 0..2 {
        store
            .put(&doc, Json::parse(&n.to_string()).unwrap(), history.clone())
            .unwrap();
    }
    for i in 1..2500 {
        let p = format!("/s-1/a-{i}").parse().unwrap();
        store
            .put(&p, Json::parse("1").unwrap(), PutOptions::default())
            .unwrap();
    }
    let mut out = Vec::new();
    let mut pages = 0;
    store
        .export(&mut out, &mut |_| {
            pages += 1;
            if pages == 1 {
                // After the page holding the item, before the one holding its revisions.
                for n in 2..4 {
                    store
                        .put(&doc, Json::parse(&n.to_string()).unwrap(), history.clone())
                        .unwrap();
                }
            }
        })
        .unwrap();
    assert!(pages > 1, "the export fitted in one page: {pages}");
    let versions: Vec<(bool, u64)> = String::from_utf8(out)
        .unwrap()
        .lines()
        .filter_map(|l| match ExportLine::parse(l).unwrap() {
            ExportLine::Record(ImportRecord::Exported(ExportRecord::Item(i))) if i.path == doc => {
                Some((false, i.version))
            }
            ExportLine::Record(ImportRecord::Exported(ExportRecord::Revision(i)))
                if i.path == doc =>
            {
                Some((true, i.version))
            }
            _ => None,
        })
        .collect();
    assert_eq!(versions, [(false, 2), (true, 2), (true, 1)]);
}

/// `put_created_queued` on the file backend: the committer resolves the awaited write, with
/// the same outcome as `put_created` (created, replaced, a failed condition, retries of
/// concurrent writers on one item), and a read-only file refuses it.
#[test]
fn queued_puts_on_the_file_backend() {
    use pathdb_store::backend::{Backend, FileOptions};
    use pathdb_store::{Condition, Error, Json, PutOptions, Store, StoreOptions};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("queued.pathdb");
    let options = StoreOptions {
        sweep_interval: None,
        ..StoreOptions::default()
    };
    let store = Store::open(&db, FileOptions::default(), options.clone()).unwrap();
    assert!(store.backend().queues_writes() && store.backend().fast_point_reads());
    let path = "/q-1/item-1".parse().unwrap();
    let put = |v: &str, options| {
        crate::block_on(store.put_created_queued(&path, Json::parse(v).unwrap(), options))
    };
    let (item, created) = put("1", PutOptions::default()).unwrap();
    assert_eq!((item.version, created), (1, true));
    let (item, created) = put("2", PutOptions::default()).unwrap();
    assert_eq!((item.version, created), (2, false));
    let must_not_exist = PutOptions {
        condition: Some(Condition::MustNotExist),
        ..PutOptions::default()
    };
    assert!(matches!(
        put("3", must_not_exist),
        Err(Error::ConditionFailed { .. })
    ));
    // Eight writers on one item: each lost race retries until its put commits.
    std::thread::scope(|scope| {
        for _ in 0..8 {
            scope.spawn(|| {
                for _ in 0..10 {
                    put("4", PutOptions::default()).unwrap();
                }
            });
        }
    });
    assert_eq!(store.get(&path).unwrap().unwrap().version, 82);
    drop(store);
    let read_only = Store::open_read_only(&db, FileOptions::default(), options).unwrap();
    let refused = crate::block_on(read_only.put_created_queued(
        &path,
        Json::parse("5").unwrap(),
        PutOptions::default(),
    ));
    assert!(matches!(refused, Err(Error::ReadOnly)), "{refused:?}");
}
