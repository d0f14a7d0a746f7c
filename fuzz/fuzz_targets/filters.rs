//! Filters (docs/filters.md): the input is a filter's text, then a JSON value on the next line.
//! Compiling any text never panics and never overflows the stack (the parser recurses per
//! nesting level: the length and depth limits and the grown stack keep it bounded, debug builds
//! included); a refusal is `InvalidFilter` with a position within the text. A compiled filter
//! evaluates any value without panicking, and a second evaluation agrees with the first. The
//! value's own text also goes through `Fields::parse` as a projection list.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pathdb_keys::KeyPath;
use pathdb_store::{Fields, Filter, Json, Subject};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (source, value) = text.split_once('\n').unwrap_or((text, "{}"));
    if let Ok(fields) = Fields::parse(value) {
        let _ = fields.project(&Json::parse(r#"{"a": {"b": 1}, "c": [2]}"#).expect("json"));
    }
    let filter = match Filter::compile(source) {
        Ok(filter) => filter,
        Err(pathdb_store::Error::InvalidFilter { position, .. }) => {
            assert!(position <= source.chars().count(), "a position past the end");
            return;
        }
        Err(other) => panic!("a bad filter is InvalidFilter, not {other:?}"),
    };
    let path: KeyPath = "/user-7/order-12".parse().expect("a path");
    let path = move || path.clone();
    let subject = Subject {
        path: &path,
        value,
        version: 3,
        created_at: 1,
        modified_at: 2,
    };
    assert_eq!(filter.matches(&subject), filter.matches(&subject));
});
