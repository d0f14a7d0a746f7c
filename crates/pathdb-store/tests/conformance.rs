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
