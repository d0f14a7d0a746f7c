//! Binary codec: any input either fails to decode (with an error, never a panic) or is the
//! canonical encoding of the path it decodes to. The same bytes, split in two, exercise the
//! partition/sort-key reassembly; as a sort key, the fast check `sort_key_body_len` accepts
//! only what the decoder accepts.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pathdb_keys::{KeyPath, KeyPathRef};

/// Longer inputs only slow the fuzzer down without reaching new code.
const MAX_LEN: usize = 4096;

fuzz_target!(|data: &[u8]| {
    if data.len() > MAX_LEN {
        return;
    }

    // The decoder accepts only canonical encodings, so a successful decode re-encodes exactly.
    let owned = KeyPath::decode(data);
    let borrowed = KeyPathRef::decode(data);
    match (&owned, &borrowed) {
        (Ok(path), Ok(r)) => {
            assert_eq!(
                path.encode(),
                data,
                "decode accepted a non-canonical encoding of {path}"
            );
            assert_eq!(
                &r.to_key_path(),
                path,
                "KeyPathRef and KeyPath decode differently"
            );
            assert_eq!(r.as_bytes(), data);
            // The text form must also survive (the decoder hands out only valid paths).
            let text = path.to_string();
            match text.parse::<KeyPath>() {
                Ok(p) => assert_eq!(&p, path, "{text:?} re-parses to a different path"),
                Err(e) => panic!("text {text:?} of a decoded path does not parse: {e}"),
            }
        }
        // The owned decoder's one-pass path hands what it rejects to the zero-copy decoder, so
        // the errors are the same, offset and rule.
        (Err(a), Err(b)) => assert_eq!(a, b, "KeyPath::decode and KeyPathRef::decode fail differently"),
        _ => panic!("KeyPath::decode ({owned:?}) and KeyPathRef::decode ({borrowed:?}) disagree"),
    }

    // The fast sort-key check may say "don't know", never accept what the decoder refuses, and
    // agrees on the body's length.
    if let Some(len) = pathdb_keys::sort_key_body_len(data) {
        let group: KeyPath = "/g-1".parse().expect("a group");
        let path = group
            .with_sort_key(data)
            .unwrap_or_else(|e| panic!("sort_key_body_len accepted {data:x?}, the decoder: {e}"));
        let mut sort_body = path.sort_key();
        sort_body.truncate(len);
        assert_eq!(sort_body, data[..len], "body length of {path}");
        assert_eq!(data.get(len), Some(&pathdb_keys::TERMINATOR), "{path}");
    }

    // Partition/sort split: the first byte picks where the rest is cut into (pk, sk).
    if let Some((&cut, rest)) = data.split_first() {
        let (pk, sk) = rest.split_at(usize::from(cut).min(rest.len()));
        if let Ok(p) = KeyPath::from_partition_and_sort(pk, sk) {
            assert_eq!(
                p.partition_key(),
                pk,
                "partition key of {p} differs from its input"
            );
            assert_eq!(p.sort_key(), sk, "sort key of {p} differs from its input");
        }
    }
});
