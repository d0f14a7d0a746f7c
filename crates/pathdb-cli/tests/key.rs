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

#[test]
fn encode_and_decode_base64() {
    let base64 = ok(&["key", "encode", "/p-10", "--format", "base64"]);
    assert_eq!(base64, "cAEICgAIEg==\n");
    assert_eq!(
        ok(&["key", "decode", "cAEICgAIEg==", "--format", "base64"]),
        "/p-10\n"
    );
    assert_eq!(
        ok(&["key", "decode", "cAEICgAIEg", "--format", "base64"]),
        "/p-10\n"
    );
    let err = fails(&["key", "decode", "!!", "--format", "base64"]);
    assert!(err.contains("not base64"), "{err}");
    assert_eq!(
        ok(&["key", "encode", "/user-7/post-2", "--split"]),
        "pk 75736572010807002012\nsk 706f7374010802002012\n"
    );
}

/// The store's own keys (crates/pathdb-store/src/encoding/layout.rs), as a DynamoDB `pk`/`sk` pair.
#[test]
fn decode_explains_store_keys() {
    let pk = "75736572010807002012"; // /user-7
    let sk = "706f7374010802002012"; // post-2
    let decode = |key: &str, partition: Option<&str>| {
        let mut args = vec!["key", "decode", key];
        if let Some(p) = partition {
            args.extend(["--partition", p]);
        }
        ok(&args).trim_end().to_owned()
    };
    assert_eq!(decode(sk, Some(pk)), "/user-7/post-2");
    assert_eq!(decode("00", Some(pk)), "/user-7");
    assert!(decode("00", None).contains("group's own item"));
    // Version 3: u64::MAX - 3 in 8 big-endian bytes.
    let revision = format!("ff{sk}fffffffffffffffc");
    assert_eq!(decode(&revision, Some(pk)), "revision 3 of /user-7/post-2");
    assert_eq!(
        decode(&revision, None),
        "revision 3 of <group>/post-2 (pass --partition PK to name the group)"
    );
    // The system partition 00: an expiry index entry at t = 0 and a namespace setting.
    let expiry = format!("018000000000000000{:04x}{pk}{sk}", pk.len() / 2);
    assert_eq!(
        decode(&expiry, Some("00")),
        "expiry index entry: /user-7/post-2 expires at 1970-01-01T00:00:00.000000Z"
    );
    assert_eq!(
        decode("02706f7374", Some("00")),
        "definition of namespace post"
    );
    assert_eq!(decode("02706f7374", None), "definition of namespace post");
    let err = fails(&["key", "decode", "ff01", "--partition", pk]);
    assert!(err.contains("revision key"), "{err}");
    let err = fails(&["key", "decode", "03", "--partition", "00"]);
    assert!(err.contains("system partition"), "{err}");
}
