//! A lean check of a stored sort key, for readers that keep keys encoded (the store's listing
//! pages).
//!
//! A listing must skip a stored key that is not a key path (a row another tool wrote into a
//! DynamoDB table), so it checks every key it returns. The decoders check keys only while
//! decoding them: into an owned `KeyPath` (the cost an encoded listing avoids) or into a
//! `KeyPathRef`, whose span and element vectors (several hundred bytes, moved on return) cost
//! more per key than the rest of a listed entry. This checks the common shapes (namespaces and
//! integer, string, UUID and bytes ids, the metadata varints of segments under 2 KiB) in place,
//! exactly as the decoder does (docs/key-format.md), and answers "don't know" for everything
//! else, which the caller hands to the decoder. So it may only ever accept what the decoder
//! accepts; the tests below and the `decode_binary` fuzz target check that against the decoder
//! on valid, mutated and random keys.

use crate::{ESCAPE, SEPARATOR, SegmentType, TERMINATOR};

/// Segments this check reads (16 elements); longer keys go to the decoder.
const MAX_SEGMENTS: usize = 32;

/// The length of `sort`'s body (its segments and separators) when it is the canonical encoding of
/// a sort key (a path's encoding after its group element, [`KeyPath::sort_key`](crate::KeyPath::sort_key))
/// of the shapes this check knows; `None` when it is not, or when this check does not know (the
/// caller then asks the decoder, [`KeyPath::with_sort_key`](crate::KeyPath::with_sort_key)).
pub fn sort_key_body_len(sort: &[u8]) -> Option<usize> {
    // Backwards over the metadata, as the decoder reads it: one varint per segment, last segment
    // first, until the segments and separators exactly fill what is left before a terminator.
    let mut metas = [0u16; MAX_SEGMENTS];
    let mut n = 0;
    let mut pos = sort.len();
    let mut body_len = 0usize;
    loop {
        let (value, start) = varint_before(sort, pos)?;
        if n == MAX_SEGMENTS {
            return None;
        }
        metas[n] = value;
        body_len += usize::from(value >> 3) + usize::from(n > 0);
        n += 1;
        pos = start;
        match (body_len + 1).cmp(&pos) {
            std::cmp::Ordering::Equal => break,
            std::cmp::Ordering::Greater => return None,
            std::cmp::Ordering::Less => {}
        }
    }
    if sort[body_len] != TERMINATOR {
        return None;
    }
    // Forwards over the body: separators between segments, namespaces at even positions, ids
    // at odd ones.
    let mut at = 0;
    for (i, &meta) in metas[..n].iter().rev().enumerate() {
        if i > 0 {
            if sort[at] != SEPARATOR {
                return None;
            }
            at += 1;
        }
        let segment = &sort[at..at + usize::from(meta >> 3)];
        at += segment.len();
        let ty = SegmentType::from_code((meta & 7) as u8)?;
        let ok = if i % 2 == 0 {
            ty == SegmentType::String && crate::namespace::is_valid(segment)
        } else {
            match ty {
                SegmentType::Int => int_ok(segment, false),
                SegmentType::DescInt => int_ok(segment, true),
                SegmentType::String => string_ok(segment),
                SegmentType::Uuid => unescaped_len(segment) == Some(16),
                SegmentType::Bytes => unescaped_len(segment).is_some_and(|len| len > 0),
                // Descending strings and bytes: the decoder's.
                SegmentType::DescString | SegmentType::DescBytes => return None,
            }
        };
        if !ok {
            return None;
        }
    }
    Some(body_len)
}

/// The metadata varint that ends at `end` and its start, if it is one or two bytes long (a
/// segment under 2 KiB) and minimal; longer ones are left to the decoder.
#[inline]
fn varint_before(bytes: &[u8], end: usize) -> Option<(u16, usize)> {
    let last = *bytes.get(end.checked_sub(1)?)?;
    if last >= 0x80 {
        return None;
    }
    // A varint reaches back over every byte with the continuation bit.
    match end.checked_sub(2).map(|i| bytes[i]) {
        Some(first) if first >= 0x80 => {
            // Two bytes, unless a third reaches back further; minimal: the last group non-zero.
            if end >= 3 && bytes[end - 3] >= 0x80 || last == 0 {
                return None;
            }
            Some((u16::from(first & 0x7f) | (u16::from(last) << 7), end - 2))
        }
        _ => Some((u16::from(last), end - 1)),
    }
}

/// An integer segment in its one canonical form: a sort byte in range (`0x10..=0x1f`
/// descending), the payload length it announces, no leading zero byte in the magnitude (but the
/// one-byte zero).
fn int_ok(segment: &[u8], descending: bool) -> bool {
    let Some((&first, payload)) = segment.split_first() else {
        return false;
    };
    let sort = if descending {
        if !(0x10..=0x1f).contains(&first) {
            return false;
        }
        0x1f - first
    } else {
        if first > 0x0f {
            return false;
        }
        first
    };
    let positive = sort >= 8;
    let len = if positive {
        usize::from(sort) - 7
    } else {
        8 - usize::from(sort)
    };
    if payload.len() != len {
        return false;
    }
    let invert = positive == descending;
    let leading = if invert { !payload[0] } else { payload[0] };
    !(leading == 0 && (positive || len > 1))
}

/// A string id: non-empty UTF-8 without the control characters U+0000..U+001F and U+007F.
fn string_ok(segment: &[u8]) -> bool {
    !segment.is_empty()
        && std::str::from_utf8(segment).is_ok()
        && !segment.iter().any(|&b| b < 0x20 || b == 0x7f)
}

/// The length of a UUID or bytes segment once unescaped, if it is canonical: `02` escapes
/// exactly `00`, `01` and `02`, which appear only escaped.
fn unescaped_len(segment: &[u8]) -> Option<usize> {
    let mut len = 0;
    let mut i = 0;
    while i < segment.len() {
        match segment[i] {
            ESCAPE => match segment.get(i + 1) {
                Some(&next) if next <= ESCAPE => i += 2,
                _ => return None,
            },
            b if b < ESCAPE => return None,
            _ => i += 1,
        }
        len += 1;
    }
    Some(len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{KeyPath, KeyPathRef};
    use proptest::prelude::*;

    /// What the decoder says of `sort` as a sort key of the group `/g-1`: its body length, or
    /// that it is not a sort key.
    fn decoder(sort: &[u8]) -> Option<usize> {
        let group: KeyPath = "/g-1".parse().unwrap();
        group.with_sort_key(sort).ok()?;
        // The body length, from the path's own encoding of the rest (`B 00 M`).
        let mut body = group
            .with_sort_key(sort)
            .ok()?
            .sort_key_subtree_range()
            .start;
        body.pop();
        Some(body.len())
    }

    /// This check accepts only what the decoder accepts, with the same body length.
    fn agrees(sort: &[u8]) {
        if let Some(len) = sort_key_body_len(sort) {
            assert_eq!(decoder(sort), Some(len), "{sort:x?}");
        }
    }

    const VALID: &[&str] = &[
        "/g-1/p",
        "/g-1/p-1",
        "/g-1/p-0",
        "/g-1/p--1",
        "/g-1/p-18446744073709551615",
        "/g-1/p--18446744073709551615",
        "/g-1/p-!0",
        "/g-1/p-!-300",
        "/g-1/p-!70000",
        "/g-1/p-abc/c-héllo",
        "/g-1/p-~AAECAw/c-~_w",
        "/g-1/p-00000000-0000-0000-0000-000000000000/c",
        "/g-1/p-7f0c7ad8-0bd7-4f7e-9a53-2d4c2a6d1e11/c-1/d-2/e-3",
        "/g-1/_x9-1/Y_-2",
    ];

    #[test]
    fn accepts_the_common_shapes_with_their_body_length() {
        for text in VALID {
            let path: KeyPath = text.parse().unwrap();
            let sort = path.sort_key();
            assert_eq!(sort_key_body_len(&sort), decoder(&sort), "{text}");
            assert!(sort_key_body_len(&sort).is_some(), "{text}");
            if let Ok(view) = KeyPathRef::decode(&sort) {
                assert_eq!(sort_key_body_len(&sort), Some(view.body().len()), "{text}");
            }
        }
    }

    #[test]
    fn leaves_the_rest_to_the_decoder() {
        for text in ["/g-1/p-!desc", "/g-1/p-!~AAEC"] {
            let path: KeyPath = text.parse().unwrap();
            assert_eq!(sort_key_body_len(&path.sort_key()), None, "{text}");
        }
        let long: KeyPath = format!("/g-1/p-{}", "x".repeat(3000)).parse().unwrap();
        assert_eq!(sort_key_body_len(&long.sort_key()), None);
        for junk in [
            &b""[..],
            &[0],
            &[0, 0],
            b"zz not a key path",
            &[b'p', 0, 0x08, 0x80],
        ] {
            agrees(junk);
            assert_eq!(sort_key_body_len(junk), None, "{junk:x?}");
        }
    }

    #[test]
    fn every_single_byte_change_of_valid_keys_agrees_with_the_decoder() {
        for text in VALID {
            let sort = text.parse::<KeyPath>().unwrap().sort_key();
            for i in 0..sort.len() {
                for b in 0..=255u8 {
                    let mut changed = sort.clone();
                    changed[i] = b;
                    agrees(&changed);
                }
                let mut shorter = sort.clone();
                shorter.remove(i);
                agrees(&shorter);
            }
        }
    }

    proptest! {
        #[test]
        fn random_bytes_agree_with_the_decoder(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            agrees(&bytes);
        }

        #[test]
        fn random_splices_of_valid_keys_agree_with_the_decoder(
            a in 0..VALID.len(), b in 0..VALID.len(), cut in 0usize..60, tail in 0usize..60,
        ) {
            let x = VALID[a].parse::<KeyPath>().unwrap().sort_key();
            let y = VALID[b].parse::<KeyPath>().unwrap().sort_key();
            let mut spliced = x[..cut.min(x.len())].to_vec();
            spliced.extend_from_slice(&y[tail.min(y.len())..]);
            agrees(&spliced);
        }
    }
}
