//! Namespace definitions and the values checked against them: the input is a definition and a
//! value, both JSON, on two lines. The store must never panic; a definition it refuses is
//! `InvalidSchema` or `InvalidRequest` and stores nothing; once one is stored, a put of the
//! value is written exactly when the schema (compiled on its own) finds no violation, and a
//! refused put names at most 20 of them and writes nothing.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pathdb_store::backend::InMemoryBackend;
use pathdb_store::{Definition, Error, Json, PutOptions, Schema, Store, StoreOptions};
use std::sync::OnceLock;

const MAX_LEN: usize = 4096;

fn store() -> &'static Store<InMemoryBackend> {
    static STORE: OnceLock<Store<InMemoryBackend>> = OnceLock::new();
    STORE.get_or_init(|| {
        let options = StoreOptions {
            sweep_interval: None,
            ..StoreOptions::default()
        };
        Store::new(InMemoryBackend::new(), options).expect("an in-memory store")
    })
}

fuzz_target!(|data: &[u8]| {
    if data.len() > MAX_LEN {
        return;
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Some((definition, value)) = text.split_once('\n') else {
        return;
    };
    let Ok(definition) = serde_json::from_str::<Definition>(definition) else {
        return;
    };
    let Ok(value) = Json::parse(value) else {
        return;
    };
    let store = store();
    let path = "/f-1".parse().expect("a valid path");
    match store.define_namespace("f", definition.clone(), None) {
        Ok(_) => {}
        Err(Error::InvalidSchema(_) | Error::InvalidRequest(_)) => {
            if let Some(schema) = &definition.schema {
                assert!(Schema::compile(schema).is_err() || definition.history == Some(0));
            }
            return;
        }
        Err(e) => panic!("defining a namespace failed: {e}"),
    }
    let expected = definition
        .schema
        .as_ref()
        .map(|s| Schema::compile(s).expect("stored, so it compiles"))
        .map(|s| s.violations(&value.to_value()))
        .unwrap_or_default();
    let before = store.get(&path).expect("a read");
    match store.put(&path, value, PutOptions::default()) {
        Ok(_) => assert!(expected.is_empty(), "written despite {expected:?}"),
        Err(Error::SchemaViolation { violations, .. }) => {
            assert!(!expected.is_empty());
            assert!(violations.len() <= 20);
            assert_eq!(violations, expected);
            assert_eq!(store.get(&path).expect("a read"), before, "a refused put wrote");
        }
        Err(e) => panic!("the put failed otherwise: {e}"),
    }
});
