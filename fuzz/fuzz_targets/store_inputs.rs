//! The store's own text inputs, as a client sends them: change tokens (`since`, `Last-Event-ID`),
//! page tokens and scan cursors, create targets (`POST /v1/items/{parent}/{namespace}`, a
//! transaction's `create` path), id kinds and export lines. Each either fails with an error,
//! never a panic, or parses to a value whose text form reads back the same. Tokens are sealed
//! with the database's key, so no input the fuzzer makes is a position: each is refused.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pathdb_store::backend::InMemoryBackend;
use pathdb_store::{
    ChangeToken, Error, ExportLine, IdKind, ListRequest, Parent, PutOptions, Store, StoreOptions,
    parse_create_target,
};
use std::sync::OnceLock;

const MAX_LEN: usize = 4096;

/// A small store whose tokens the inputs are tried as.
fn store() -> &'static Store<InMemoryBackend> {
    static STORE: OnceLock<Store<InMemoryBackend>> = OnceLock::new();
    STORE.get_or_init(|| {
        let options = StoreOptions {
            sweep_interval: None,
            ..StoreOptions::default()
        };
        let store = Store::new(InMemoryBackend::new(), options).expect("an in-memory store");
        for text in ["/f-1/a-1", "/f-1/a-2", "/f-2"] {
            let path = text.parse().expect("a path");
            let value = pathdb_store::Json::parse("null").expect("JSON");
            store.put(&path, value, PutOptions::default()).expect("put");
        }
        store
    })
}

fuzz_target!(|data: &[u8]| {
    if data.len() > MAX_LEN {
        return;
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(token) = text.parse::<ChangeToken>() {
        let again: ChangeToken = token
            .to_string()
            .parse()
            .unwrap_or_else(|e| panic!("{text:?} -> {token} does not parse again: {e}"));
        assert_eq!(again, token);
        let group = "/f-1".parse().expect("a path");
        let read = store().changes(&group, Some(&token), 10);
        assert!(
            matches!(read, Err(Error::InvalidChangeToken(_))),
            "{text:?} was read as a position: {read:?}"
        );
    }
    let mut request = ListRequest::new("/f-1".parse().expect("a path"));
    request.limit = 1;
    request.page_token = Some(text.to_owned());
    assert!(matches!(
        store().list(&request),
        Err(Error::InvalidPageToken(_))
    ));
    assert!(matches!(
        store().groups(1, Some(text)),
        Err(Error::InvalidPageToken(_))
    ));
    assert!(matches!(
        store().scan(Some(text), 1),
        Err(Error::InvalidPageToken(_))
    ));
    if let Ok((parent, namespace)) = parse_create_target(text) {
        assert!(!namespace.is_empty(), "{text:?}: empty namespace");
        if let Parent::Path(p) = parent {
            assert_eq!(p.to_string().parse::<pathdb_keys::KeyPath>().ok(), Some(p));
        }
    }
    if let Ok(kind) = text.parse::<IdKind>() {
        assert_eq!(kind.as_str(), text);
    }
    let _ = ExportLine::parse(text);
});
