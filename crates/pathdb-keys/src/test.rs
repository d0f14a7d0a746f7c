//! Unit tests of the spec's examples: the reference vector, every integer of the seed's table
//! and the errata, escapes, and the canonical text form.

use crate::{Desc, Id, Int, KeyPath, Rule};

fn path(s: &str) -> KeyPath {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The integer's segment bytes, via a one-element path `/i-<n>`.
fn int_segment(n: i128) -> String {
    let p = KeyPath::builder().push("i", Int::new(n).expect("in range")).build().expect("valid");
    let enc = p.encode();
    // `69 01 <segment> 00 08 <meta>`; the meta is one byte for segments under 16 bytes.
    hex(&enc[2..enc.len() - 3])
}

#[test]
fn reference_vector() {
    let text = "/user-4c9d36e5-6b19-4e6a-828c-226ed667458a/post-1234/comment-1678901234/react-42";
    let expected = concat!(
        "7573657201", "4c9d36e56b194e6a828c226ed667458a01", "706f737401", "0904d201",
        "636f6d6d656e7401", "0b6411fff201", "726561637401", "082a", "00",
        "20", "8301", "20", "1a", "38", "2a", "28", "12",
    );
    let p = path(text);
    let enc = p.encode();
    assert_eq!(hex(&enc), expected);
    assert_eq!(enc.len(), 63);
    assert_eq!(text.len(), 80);
    assert_eq!(KeyPath::decode(&enc).expect("decodes"), p);
    assert_eq!(p.to_string(), text);
}

#[test]
fn seed_integer_table() {
    let two = |k: u32| 1i128 << k;
    let cases: &[(i128, &str)] = &[
        (-(two(64) - 1), "000000000000000000"),
        (-(two(64) - 2), "000000000000000001"),
        (-(two(56) + 1), "00fefffffffffffffe"),
        (-two(56), "00feffffffffffffff"),
        (-(two(56) - 1), "0100000000000000"),
        (-(two(48) - 1), "02000000000000"),
        (-(two(40) - 1), "030000000000"),
        (-(two(32) - 1), "0400000000"),
        (-257, "06fefe"),
        (-256, "06feff"),
        (-17, "07ee"),
        (-16, "07ef"),
        (-2, "07fd"),
        (-1, "07fe"),
        (0, "07ff"),
        (1, "0801"),
        (2, "0802"),
        (3, "0803"),
        (6, "0806"),
        (16, "0810"),
        (17, "0811"),
        (42, "082a"),
        (255, "08ff"),
        (256, "090100"),
        (1234, "0904d2"),
        (1678901234, "0b6411fff2"),
        (two(32) - 1, "0bffffffff"),
        (two(40) - 1, "0cffffffffff"),
        (two(48) - 1, "0dffffffffffff"),
        (two(56) - 1, "0effffffffffffff"),
        (two(56), "0f0100000000000000"),
        (two(56) + 1, "0f0100000000000001"),
        (two(64) - 2, "0ffffffffffffffffe"),
        (two(64) - 1, "0fffffffffffffffff"),
    ];
    for &(n, want) in cases {
        assert_eq!(int_segment(n), want, "integer {n}");
        let p = KeyPath::builder().push("i", Int::new(n).expect("in range")).build().expect("valid");
        assert_eq!(KeyPath::decode(&p.encode()).expect("decodes"), p, "integer {n}");
    }
}
