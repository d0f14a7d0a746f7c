//! The conformance suite on every backend this crate ships.

mod memory {
    pathdb_store::conformance_tests!(pathdb_store::conformance::InMemory);
}

mod file {
    pathdb_store::conformance_tests!(pathdb_store::conformance::TempFile::default());
}

/// Any `Fn(StoreOptions) -> Store<B>` is a harness too (what another crate's backend may use).
#[test]
fn a_closure_is_a_harness() {
    use pathdb_store::backend::InMemoryBackend;
    use pathdb_store::{Store, StoreOptions};
    let harness = |options: StoreOptions| Store::new(InMemoryBackend::new(), options).unwrap();
    pathdb_store::conformance::put_get_delete(&harness);
    pathdb_store::conformance::conditions(&harness);
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
