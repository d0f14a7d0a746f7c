//! Patch documents against values: the input is a value and a patch, both JSON, on two lines
//! (the first byte chooses a JSON Merge Patch when odd, a JSON Patch when even). The store must
//! never panic; a patch it refuses writes nothing; a patch it applies writes exactly what
//! `Patch::apply` makes of the value, as one new version; and a JSON Patch reads back from its
//! own document.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pathdb_store::backend::InMemoryBackend;
use pathdb_store::{Json, Patch, PutOptions, Store, StoreOptions};
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
    let Some((&kind, rest)) = data.split_first() else {
        return;
    };
    if rest.len() > MAX_LEN {
        return;
    }
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let Some((value, document)) = text.split_once('\n') else {
        return;
    };
    let (Ok(value), Ok(document)) = (
        Json::parse(value),
        serde_json::from_str::<serde_json::Value>(document),
    ) else {
        return;
    };
    let patch = if kind % 2 == 1 {
        Patch::Merge(document)
    } else {
        match Patch::json_patch(&document) {
            Ok(patch) => {
                assert_eq!(Patch::json_patch(&patch.document()).as_ref(), Ok(&patch));
                patch
            }
            Err(_) => return,
        }
    };
    let path = "/fuzz-1".parse().expect("a path");
    let store = store();
    let Ok(before) = store.put(&path, value.clone(), PutOptions::default()) else {
        // Over a limit (depth, size): not this target's concern.
        return;
    };
    let expected = patch.apply(&value);
    let outcome = store.patch(&path, patch, PutOptions::default(), false);
    let stored = store.get(&path).expect("a read").expect("the item");
    match (outcome, expected) {
        (Ok(item), Ok(want)) => {
            assert_eq!(item.version, before.version + 1);
            assert_eq!(item.value, want);
            assert_eq!(stored, item);
        }
        (Err(_), _) => assert_eq!(stored, before, "a refused patch wrote"),
        (Ok(item), Err(e)) => panic!("applied {item:?} where apply says {e}"),
    }
});
