//! Text syntax: any input either fails to parse (with an error, never a panic) or parses to a
//! path whose canonical text re-parses to the same path, formats identically again, and
//! survives the binary codec unchanged.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pathdb_keys::{KeyPath, KeyPathRef};

/// Longer inputs only slow the fuzzer down without reaching new code.
const MAX_LEN: usize = 4096;

fuzz_target!(|data: &[u8]| {
    if data.len() > MAX_LEN {
        return;
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(path) = text.parse::<KeyPath>() else {
        return;
    };

    // format(parse(s)) re-parses to the same path.
    let canonical = path.to_string();
    let reparsed: KeyPath = match canonical.parse() {
        Ok(p) => p,
        Err(e) => panic!("canonical text {canonical:?} (from {text:?}) does not re-parse: {e}"),
    };
    assert_eq!(
        reparsed, path,
        "text {text:?} -> canonical {canonical:?} re-parses differently"
    );

    // Formatting is idempotent.
    assert_eq!(
        reparsed.to_string(),
        canonical,
        "formatting of {text:?} is not idempotent"
    );

    // decode(encode(p)) == p, for the owned and the zero-copy decoder.
    let bytes = path.encode();
    match KeyPath::decode(&bytes) {
        Ok(decoded) => assert_eq!(
            decoded, path,
            "{canonical:?} does not round-trip through {bytes:02x?}"
        ),
        Err(e) => panic!("encoding of {canonical:?} ({bytes:02x?}) does not decode: {e}"),
    }
    match KeyPathRef::decode(&bytes) {
        Ok(r) => assert_eq!(
            r.to_key_path(),
            path,
            "KeyPathRef disagrees for {canonical:?}"
        ),
        Err(e) => panic!("KeyPathRef rejects the encoding of {canonical:?} ({bytes:02x?}): {e}"),
    }
});
