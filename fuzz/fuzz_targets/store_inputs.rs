//! The store's own text inputs, as a client sends them: change tokens (`since`, `Last-Event-ID`),
//! create targets (`POST /v1/items/{parent}/{namespace}`, a transaction's `create` path), id
//! kinds and export lines. Each either fails with an error, never a panic, or parses to a value
//! whose text form reads back the same.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pathdb_store::{ChangeToken, ExportLine, IdKind, Parent, parse_create_target};

const MAX_LEN: usize = 4096;

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
    }
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
