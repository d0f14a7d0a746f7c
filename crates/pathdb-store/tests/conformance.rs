//! The conformance suite on every backend this crate ships.

mod memory {
    pathdb_store::conformance_tests!(pathdb_store::conformance::InMemory);
}

mod file {
    pathdb_store::conformance_tests!(pathdb_store::conformance::TempFile::default());
}
