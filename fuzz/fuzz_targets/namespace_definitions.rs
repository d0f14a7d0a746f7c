//! Namespace definitions and the values checked against them: the input is a definition and a
//! value, both JSON, on two lines. The store must never panic; a definition it refuses is
//! `InvalidSchema` or `InvalidRequest` and stores nothing; once one is stored, a put of the
//! value is written exactly when the schema (compiled on its own) finds no violation and its
//! alias templates accept its members, a refused put names at most 20 violations and writes
//! nothing, and every alias the templates give a written item reads back as that item.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pathdb_store::backend::InMemoryBackend;
use pathdb_store::{
    AliasState, Definition, Error, Json, PutOptions, Schema, Store, StoreOptions, Template,
};
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
    // Aliases of the items stored before the templates: built (or removed) now.
    store.run_alias_builds().expect("alias builds");
    let built = store
        .alias_builds("f")
        .expect("builds")
        .iter()
        .all(|b| b.state == AliasState::Ready);
    let before = store.get(&path).expect("a read");
    match store.put(&path, value.clone(), PutOptions::default()) {
        Ok(item) => {
            assert!(expected.is_empty(), "written despite {expected:?}");
            if !built {
                return;
            }
            for template in &definition.aliases {
                let template = Template::parse(&template.path).expect("stored, so it parses");
                let alias = template
                    .alias_of(&path, &value.to_value())
                    .expect("written, so its members fit");
                if let Some(alias) = alias {
                    let read = store.get(&alias).expect("a read through the alias");
                    assert_eq!(read.map(|r| r.path), Some(item.path.clone()), "{alias}");
                }
            }
        }
        Err(Error::SchemaViolation { violations, .. }) => {
            assert!(!expected.is_empty());
            assert!(violations.len() <= 20);
            assert_eq!(violations, expected);
            assert_eq!(
                store.get(&path).expect("a read"),
                before,
                "a refused put wrote"
            );
        }
        // A template's member of the wrong type, an alias another path holds (the item's own
        // path, a path stored by an earlier input): refused whole.
        Err(Error::AliasInvalid { .. } | Error::AliasTaken { .. } | Error::PathIsAlias { .. }) => {
            assert_eq!(
                store.get(&path).expect("a read"),
                before,
                "a refused put wrote"
            );
        }
        Err(e) => panic!("the put failed otherwise: {e}"),
    }
});
