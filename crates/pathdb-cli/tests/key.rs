//! `pathdb key encode|decode|explain`.

use crate::{fails, ok};

const SEED: &str =
    "/user-4c9d36e5-6b19-4e6a-828c-226ed667458a/post-1234/comment-1678901234/react-42";
const SEED_HEX: &str = concat!(
    "75736572014c9d36e56b194e6a828c226ed667458a01706f7374010904d201",
    "636f6d6d656e74010b6411fff20172656163740108",
    "2a00208301201a382a2812",
);

#[test]
fn encode_prints_lowercase_hex_only() {
    assert_eq!(ok(&["key", "encode", SEED]), format!("{SEED_HEX}\n"));
    assert_eq!(ok(&["key", "encode", "/p-10"]), "7001080a000812\n");
}

#[test]
fn decode_prints_canonical_text() {
    assert_eq!(ok(&["key", "decode", SEED_HEX]), format!("{SEED}\n"));
    assert_eq!(
        ok(&["key", "decode", &SEED_HEX.to_uppercase()]),
        format!("{SEED}\n")
    );
    let upper_uuid = ok(&["key", "encode", "/u-4C9D36E5-6B19-4E6A-828C-226ED667458A"]);
    assert_eq!(
        ok(&["key", "decode", upper_uuid.trim()]),
        "/u-4c9d36e5-6b19-4e6a-828c-226ed667458a\n"
    );
}

#[test]
fn explain_shows_segments_and_sizes() {
    let out = ok(&["key", "explain", SEED]);
    assert!(
        out.contains("4c9d36e5-6b19-4e6a-828c-226ed667458a  uuid"),
        "{out}"
    );
    assert!(out.contains("8301 (len 16, type 3)"), "{out}");
    assert!(out.contains("1234"), "{out}");
    assert!(out.contains("0904d2"), "{out}");
    assert!(out.contains("encoded: 63 bytes"), "{out}");
    assert!(out.contains("text:    80 bytes"), "{out}");
    assert_eq!(
        out.lines().filter(|l| l.contains("namespace")).count(),
        4,
        "{out}"
    );
}

#[test]
fn bad_input_fails_with_a_readable_error() {
    let err = fails(&["key", "encode", "/user-01"]);
    assert!(
        err.contains("at byte 6") && err.contains("leading zeros"),
        "{err}"
    );
    let err = fails(&["key", "explain", "user-1"]);
    assert!(
        err.contains("at byte 0") && err.contains("starts with '/'"),
        "{err}"
    );
    let err = fails(&["key", "decode", "zz"]);
    assert!(err.contains("not hex"), "{err}");
    let err = fails(&["key", "decode", "69010800000812"]);
    assert!(err.contains("not canonical"), "{err}");
    let err = fails(&["key", "decode", ""]);
    assert!(err.contains("at least one element"), "{err}");
}
