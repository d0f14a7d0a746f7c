//! The codec's obligations, each a property over generated paths:
//! 1. `decode(encode(p)) == p`, also through the zero-copy decoder and the partition/sort split;
//! 2. `parse(format(p)) == p` and formatting is canonical (idempotent);
//! 3. `memcmp(encode(a), encode(b))` is the typed order (the model) and `Ord`;
//! 4. a path's subtree range holds exactly the paths it covers, its descendants range the same
//!    without itself, in full keys and in sort keys;
//! 5. the decoder never panics, and accepts only canonical encodings;
//! 6. the encoder writes what a byte-at-a-time encoder written from the spec writes, and the
//!    owned decoder (one pass, `KeyPath::decode`) accepts and rejects exactly what the zero-copy
//!    decoder does, with the same error and the same path.

use crate::model::{self, cmp_paths, comparable};
use crate::strategy::{path, related_pair};
use pathdb_keys::{KeyPath, KeyPathRef};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    #[test]
    fn binary_round_trip(p in path()) {
        let enc = p.encode();
        prop_assert_eq!(KeyPath::decode(&enc).expect("own encoding decodes"), p.clone());
        let borrowed = KeyPathRef::decode(&enc).expect("own encoding decodes");
        prop_assert_eq!(borrowed.to_key_path(), p.clone());
        prop_assert_eq!(borrowed.as_bytes(), &enc[..]);
        prop_assert_eq!(borrowed.body(), &p.body()[..]);
        let mut buf = vec![0xaa];
        p.encode_into(&mut buf);
        prop_assert_eq!(&buf[1..], &enc[..]);
    }

    #[test]
    fn split_round_trip(p in path()) {
        let (pk, sk) = (p.partition_key(), p.sort_key());
        prop_assert_eq!(KeyPath::from_partition_and_sort(&pk, &sk).expect("own keys"), p.clone());
        prop_assert!(!sk.is_empty(), "DynamoDB keys cannot be empty");
    }

    #[test]
    fn text_round_trip(p in path()) {
        let text = p.to_string();
        let mut written = String::from("before:");
        p.write_text(&mut written).expect("a String takes any text");
        prop_assert_eq!(written.strip_prefix("before:"), Some(text.as_str()));
        let parsed: KeyPath = text.parse().expect("own text parses");
        prop_assert_eq!(&parsed, &p);
        prop_assert_eq!(parsed.to_string(), text);
        let json = serde_json::to_string(&p).expect("serializes");
        prop_assert_eq!(serde_json::from_str::<KeyPath>(&json).expect("deserializes"), p);
    }

    #[test]
    fn byte_order_is_typed_order((a, b) in related_pair()) {
        let bytes = a.encode().cmp(&b.encode());
        prop_assert_eq!(a.cmp(&b), bytes, "Ord agrees with memcmp for {} vs {}", a, b);
        if let Some(typed) = cmp_paths(&a, &b) {
            prop_assert_eq!(bytes, typed, "{} vs {}", a, b);
        }
        prop_assert_eq!(bytes == std::cmp::Ordering::Equal, a == b);
    }

    #[test]
    fn sort_keys_order_like_full_keys_within_a_group((a, b) in related_pair()) {
        prop_assume!(a.group() == b.group());
        prop_assert_eq!(a.sort_key().cmp(&b.sort_key()), a.encode().cmp(&b.encode()));
    }

    #[test]
    fn subtree_range_holds_exactly_what_the_path_covers((p, q) in related_pair()) {
        // Ranges are in one direction; test both.
        for (p, q) in [(&p, &q), (&q, &p)] {
            let covered = p.covers(q);
            let in_subtree = p.subtree_range().contains(&q.encode());
            let in_descendants = p.descendants_range().contains(&q.encode());
            if covered || comparable(p, q) {
                prop_assert_eq!(in_subtree, covered, "{} subtree vs {}", p, q);
                prop_assert_eq!(in_descendants, covered && p != q, "{} descendants vs {}", p, q);
            }
            if p.group() == q.group() {
                prop_assert_eq!(p.sort_key_subtree_range().contains(&q.sort_key()), in_subtree);
                prop_assert_eq!(p.sort_key_descendants_range().contains(&q.sort_key()), in_descendants);
            }
        }
    }

    #[test]
    fn decoder_accepts_only_canonical_bytes(bytes in prop::collection::vec(any::<u8>(), 0..80)) {
        if let Ok(p) = KeyPath::decode(&bytes) {
            prop_assert_eq!(p.encode(), bytes);
        }
    }

    #[test]
    fn decoder_rejects_mutated_encodings(p in path(), at in any::<prop::sample::Index>(), byte in any::<u8>(), op in 0..3u8) {
        let mut bytes = p.encode();
        let i = at.index(bytes.len());
        match op {
            0 => bytes[i] = byte,
            1 => { bytes.remove(i); }
            _ => bytes.insert(i, byte),
        }
        match KeyPath::decode(&bytes) {
            Ok(q) => prop_assert_eq!(&q.encode(), &bytes, "accepted non-canonical bytes"),
            Err(e) => prop_assert!(e.offset <= bytes.len()),
        }
        if let Some(q) = std::str::from_utf8(&bytes).ok().and_then(|t| t.parse::<KeyPath>().ok()) {
            prop_assert_eq!(q.to_string().parse::<KeyPath>().expect("canonical"), q);
        }
    }

    #[test]
    fn encoder_writes_what_the_spec_says(p in path()) {
        prop_assert_eq!(p.encode(), model::encode(&p), "{}", p);
    }

    #[test]
    fn owned_decoder_agrees_with_zero_copy_decoder_on_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..80)) {
        prop_assert_eq!(KeyPath::decode(&bytes), KeyPathRef::decode(&bytes).map(|r| r.to_key_path()));
    }

    #[test]
    fn owned_decoder_agrees_with_zero_copy_decoder_near_valid_keys(p in path(), at in any::<prop::sample::Index>(), byte in any::<u8>(), op in 0..4u8) {
        let mut bytes = p.encode();
        let i = at.index(bytes.len());
        match op {
            0 => bytes[i] = byte,
            1 => { bytes.remove(i); }
            2 => bytes.insert(i, byte),
            _ => {}
        }
        prop_assert_eq!(KeyPath::decode(&bytes), KeyPathRef::decode(&bytes).map(|r| r.to_key_path()));
    }

    #[test]
    fn parser_never_panics_and_errors_point_inside(s in "\\PC{0,40}|[/a-z0-9%~!_-]{0,24}") {
        match s.parse::<KeyPath>() {
            Ok(p) => prop_assert_eq!(p.to_string().parse::<KeyPath>().expect("canonical"), p),
            Err(e) => prop_assert!(e.offset <= s.len(), "offset {} past {:?}", e.offset, s),
        }
    }
}

proptest! {
    #[test]
    fn with_sort_key_is_from_partition_and_sort((a, b) in related_pair()) {
        prop_assume!(a.group() == b.group());
        prop_assert_eq!(a.with_sort_key(&b.sort_key()).expect("own sort key"), b.clone());
        // Sharing namespaces with another path changes nothing but where they are stored.
        prop_assert_eq!(a.with_sort_key_like(&b.sort_key(), &a).expect("own sort key"), b.clone());
        prop_assert_eq!(b.with_sort_key_like(&b.sort_key(), &b).expect("own sort key"), b.clone());
        prop_assert_eq!(KeyPath::from_partition_and_sort(&a.partition_key(), &b.sort_key()).expect("own keys"), b);
    }
}
