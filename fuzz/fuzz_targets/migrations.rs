//! Schema migrations (docs/migrations.md): the input is a `Schema-Version` header's text, then
//! a line of migration steps (a JSON array), then a JSON value. Parsing any header text never
//! panics (a refusal is `InvalidRequest`). Steps that parse and define a second version of a
//! namespace make every value written in version 1 either refused with a typed error or stored,
//! and a stored one reads in versions 1 and 2 without panicking, each read valid JSON, the same
//! twice.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pathdb_store::backend::InMemoryBackend;
use pathdb_store::{
    Definition, Json, MigrationStep, PutOptions, SchemaVersions, Store, StoreOptions,
};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut lines = text.splitn(3, '\n');
    let header = lines.next().unwrap_or_default();
    let steps = lines.next().unwrap_or("[]");
    let value = lines.next().unwrap_or("{}");
    match header.parse::<SchemaVersions>() {
        Ok(versions) => {
            // What it prints parses back to the same.
            let again: SchemaVersions = versions.to_string().parse().expect("round trip");
            assert_eq!(again, versions);
        }
        Err(pathdb_store::Error::InvalidRequest(_)) => {}
        Err(other) => panic!("a bad header is InvalidRequest, not {other:?}"),
    }
    let Ok(steps) = serde_json::from_str::<Vec<MigrationStep>>(steps) else {
        return;
    };
    let Ok(value) = Json::parse(value) else {
        return;
    };
    let store = Store::new(InMemoryBackend::new(), StoreOptions::default()).expect("a store");
    store
        .define_namespace("doc", Definition::default(), None)
        .expect("version 1");
    let second = Definition {
        migrate: steps,
        ..Definition::default()
    };
    if store
        .define_namespace_with("doc", second, None, true)
        .is_err()
    {
        return;
    }
    let path = "/doc-1".parse().expect("a path");
    let options = PutOptions {
        schema_version: Some(1),
        ..PutOptions::default()
    };
    match store.put(&path, value, options) {
        Ok(_) => {}
        Err(
            pathdb_store::Error::MigrationFailed { .. } | pathdb_store::Error::ItemTooLarge { .. },
        ) => return,
        Err(other) => panic!("a write in version 1: {other:?}"),
    }
    for version in [1, 2] {
        let versions = SchemaVersions::newest().with("doc", version);
        let read = |_: ()| {
            let mut item = store.get(&path).expect("get").expect("stored");
            store.in_versions(&mut item, &versions).expect("a read");
            item.value
        };
        let first = read(());
        Json::parse(first.as_str()).expect("valid JSON");
        assert_eq!(first, read(()));
    }
});
