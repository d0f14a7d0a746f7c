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
    let p = KeyPath::builder()
        .push("i", Int::new(n).expect("in range"))
        .build()
        .expect("valid");
    let enc = p.encode();
    // `69 01 <segment> 00 08 <meta>`; the meta is one byte for segments under 16 bytes.
    hex(&enc[2..enc.len() - 3])
}

#[test]
fn reference_vector() {
    let text = "/user-4c9d36e5-6b19-4e6a-828c-226ed667458a/post-1234/comment-1678901234/react-42";
    let expected = concat!(
        "7573657201",
        "4c9d36e56b194e6a828c226ed667458a01",
        "706f737401",
        "0904d201",
        "636f6d6d656e7401",
        "0b6411fff201",
        "726561637401",
        "082a",
        "00",
        "20",
        "8301",
        "20",
        "1a",
        "38",
        "2a",
        "28",
        "12",
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
        let p = KeyPath::builder()
            .push("i", Int::new(n).expect("in range"))
            .build()
            .expect("valid");
        assert_eq!(
            KeyPath::decode(&p.encode()).expect("decodes"),
            p,
            "integer {n}"
        );
    }
}

fn parse_err(s: &str) -> (usize, Rule) {
    match s.parse::<KeyPath>() {
        Ok(p) => panic!("{s:?} parsed as {p}"),
        Err(e) => (e.offset, e.rule),
    }
}

#[test]
fn text_errors_name_offset_and_rule() {
    assert_eq!(parse_err(""), (0, Rule::EmptyPath));
    assert_eq!(parse_err("user-1"), (0, Rule::MissingLeadingSlash));
    assert_eq!(parse_err("/"), (1, Rule::EmptyNamespace));
    assert_eq!(parse_err("/a-1/"), (5, Rule::EmptyNamespace));
    assert_eq!(parse_err("/user"), (1, Rule::GroupWithoutId));
    assert_eq!(parse_err("/a-1/b/c-2"), (6, Rule::MissingId));
    assert_eq!(parse_err("/a-"), (3, Rule::EmptyId));
    assert_eq!(parse_err("/a-01"), (3, Rule::LeadingZero("01".into())));
    assert_eq!(parse_err("/a--007"), (4, Rule::LeadingZero("-007".into())));
    assert_eq!(parse_err("/a--0"), (3, Rule::NegativeZero));
    assert_eq!(
        parse_err("/a-18446744073709551616"),
        (3, Rule::IntegerOutOfRange)
    );
    assert_eq!(
        parse_err("/a--18446744073709551616"),
        (4, Rule::IntegerOutOfRange)
    );
    assert_eq!(parse_err("/a-~"), (4, Rule::EmptyBytes));
    assert!(
        matches!(parse_err("/a-~AB"), (4.., Rule::Base64(_))),
        "non-canonical trailing bits"
    );
    assert!(
        matches!(parse_err("/a-~AA=="), (4.., Rule::Base64(_))),
        "padding"
    );
    assert!(
        matches!(parse_err("/a-~A+"), (4.., Rule::Base64(_))),
        "standard alphabet"
    );
    assert_eq!(parse_err("/a-b%"), (4, Rule::DanglingEscape));
    assert_eq!(parse_err("/a-b\u{1}"), (4, Rule::ControlCharacter('\u{1}')));
    assert_eq!(
        parse_err("/a-b\u{7f}"),
        (4, Rule::ControlCharacter('\u{7f}'))
    );
    assert_eq!(parse_err("/1a-1"), (1, Rule::NamespaceStart('1')));
    assert_eq!(parse_err("/a b-1"), (2, Rule::NamespaceChar(' ')));
    assert_eq!(parse_err("/é-1"), (1, Rule::NamespaceStart('é')));
    assert_eq!(
        parse_err(&format!("/{}-1", "n".repeat(65))),
        (65, Rule::NamespaceTooLong(65))
    );
    assert_eq!(parse_err("/a-!"), (4, Rule::EmptyId));
    assert_eq!(parse_err("/a-!!x"), (4, Rule::DoubleDescending));
    assert_eq!(
        parse_err("/a-!4c9d36e5-6b19-4e6a-828c-226ed667458a"),
        (4, Rule::DescendingUuid)
    );
    assert_eq!(parse_err("/a-!01"), (4, Rule::LeadingZero("01".into())));
    assert_eq!(parse_err("/a-!~"), (5, Rule::EmptyBytes));
    let e = "/a-1/b-x%".parse::<KeyPath>().expect_err("dangling");
    assert_eq!(
        e.to_string(),
        "invalid key path at byte 8: '%' must be followed by the character it escapes"
    );
}

#[test]
fn namespace_of_64_bytes_is_valid() {
    let ns = "n".repeat(64);
    assert!(format!("/{ns}-1").parse::<KeyPath>().is_ok());
}

#[test]
fn canonical_text_escapes() {
    let cases: &[(&str, &str)] = &[
        ("1234", "%1234"),
        ("-5", "%-5"),
        ("007", "%007"),
        ("a/b", "a%/b"),
        ("%", "%%"),
        ("50%", "50%%"),
        ("~x", "%~x"),
        ("!x", "%!x"),
        ("a~!", "a~!"),
        ("-", "-"),
        ("a-b", "a-b"),
        (
            "4c9d36e5-6b19-4e6a-828c-226ed667458a",
            "%4c9d36e5-6b19-4e6a-828c-226ed667458a",
        ),
        (
            "4C9D36E5-6B19-4E6A-828C-226ED667458A",
            "%4C9D36E5-6B19-4E6A-828C-226ED667458A",
        ),
        ("héllo wörld 😀", "héllo wörld 😀"),
    ];
    for &(value, text) in cases {
        let p = KeyPath::builder().push("s", value).build().expect("valid");
        assert_eq!(p.to_string(), format!("/s-{text}"), "string {value:?}");
        assert_eq!(path(&format!("/s-{text}")), p);
        let d = KeyPath::builder()
            .push("s", Desc(value))
            .build()
            .expect("valid");
        assert_eq!(
            d.to_string(),
            format!("/s-!{text}"),
            "desc string {value:?}"
        );
        assert_eq!(path(&format!("/s-!{text}")), d);
    }
    // Any valid escaping parses; formatting gives the shortest one.
    assert_eq!(path("/s-%a%b%-").to_string(), "/s-ab-");
    assert_eq!(
        path("/tag-%1234").last().id(),
        Some(&Id::String("1234".into()))
    );
    assert_eq!(path("/file-a%/b/x-1").len(), 2);
}

#[test]
fn ids_of_each_type_parse_and_format() {
    let p = path(
        "/u-4C9D36E5-6B19-4E6A-828C-226ED667458A/b-~AAEC/d-!-5/e-!~_w/f-!abc/g-18446744073709551615/h--18446744073709551615",
    );
    assert_eq!(
        p.to_string(),
        "/u-4c9d36e5-6b19-4e6a-828c-226ed667458a/b-~AAEC/d-!-5/e-!~_w/f-!abc/g-18446744073709551615/h--18446744073709551615"
    );
    let ids: Vec<_> = p
        .elements()
        .iter()
        .map(|e| e.id().cloned().expect("id"))
        .collect();
    assert_eq!(ids[1], Id::Bytes(vec![0, 1, 2]));
    assert_eq!(ids[2], Id::DescInt(Int::from(-5)));
    assert_eq!(ids[3], Id::DescBytes(vec![0xff]));
    assert_eq!(ids[4], Id::DescString("abc".into()));
    assert_eq!(ids[5], Id::Int(Int::MAX));
    assert_eq!(ids[6], Id::Int(Int::MIN));
    assert_eq!(path("/u-1/settings").last().id(), None);
}

#[test]
fn low_bytes_are_escaped_in_bytes_and_uuid() {
    // `/b-~AAEC` is bytes 00 01 02: each escaped with 02; meta (6 << 3) | 1 = 0x31.
    assert_eq!(hex(&path("/b-~AAEC").encode()), "6201020002010202000831");
    let u = crate::Uuid::from_bytes([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xff]);
    let p = KeyPath::builder().push("u", u).build().expect("valid");
    // 16 bytes + 3 escapes = 19: meta (19 << 3) | 3 = 155 = 9b 01.
    assert_eq!(
        hex(&p.encode()),
        "7501020002010202030405060708090a0b0c0d0eff00089b01"
    );
    assert_eq!(KeyPath::decode(&p.encode()).expect("decodes"), p);
}

#[test]
fn descending_encodings() {
    assert_eq!(hex(&path("/s-!0").encode()), "73011800000814");
    // Descending integers: sort byte 0x1f - s, payload inverted.
    assert_eq!(int_desc_segment("!1"), "17fe");
    assert_eq!(int_desc_segment("!-1"), "1801");
    assert_eq!(int_desc_segment("!1500"), "16fa23");
    // Descending strings: fe, inverted UTF-8, ff.
    assert_eq!(hex(&path("/s-!ab").encode()), "7301fe9e9dff000825");
    // Descending bytes: ff, 00 -> ff 00, others inverted, then ff fe.
    assert_eq!(hex(&path("/s-!~AP8").encode()), "7301ffff0000fffe000836");
    let order = ["/s-!1500", "/s-!240", "/s-!10", "/s-!9", "/s-!0", "/s-!-3"];
    assert_sorted(&order);
    assert_sorted(&["/s-!b", "/s-!ab", "/s-!a"]);
    assert_sorted(&["/s-!~AQ", "/s-!~AAE", "/s-!~AAA", "/s-!~AA"]);
}

fn int_desc_segment(id: &str) -> String {
    let enc = path(&format!("/s-{id}")).encode();
    hex(&enc[2..enc.len() - 3])
}

fn assert_sorted(texts: &[&str]) {
    for w in texts.windows(2) {
        assert!(
            path(w[0]).encode() < path(w[1]).encode(),
            "{} < {}",
            w[0],
            w[1]
        );
        assert!(path(w[0]) < path(w[1]), "{} < {} (Ord)", w[0], w[1]);
    }
}

#[test]
fn order_examples_from_the_seeds() {
    // Integers numerically, no zero-padding; a parent right before its subtree; /p-1 vs /p-10.
    assert_sorted(&["/p-2", "/p-9", "/p-10", "/p-42", "/p-100", "/p-1500"]);
    assert_sorted(&[
        "/u-1/p-1",
        "/u-1/p-1/c-5",
        "/u-1/p-1/c-10",
        "/u-1/p-2",
        "/u-1/p-10",
    ]);
    assert_sorted(&[
        "/x--18446744073709551615",
        "/x--257",
        "/x--256",
        "/x--1",
        "/x-0",
        "/x-1",
        "/x-18446744073709551615",
    ]);
    // Integers before strings; ascending before descending integers; a namespace-only path first.
    assert_sorted(&[
        "/x-1/y",
        "/x-1/y-5",
        "/x-1/y-!5",
        "/x-1/y-a",
        "/x-1/y-!a",
        "/x-1/y-!~YQ",
    ]);
}

fn decode_err(h: &str) -> Rule {
    let bytes: Vec<u8> = (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&h[i..i + 2], 16).expect("hex"))
        .collect();
    match KeyPath::decode(&bytes) {
        Ok(p) => panic!("{h} decoded as {p}"),
        Err(e) => e.rule,
    }
}

#[test]
fn decoder_rejects_non_canonical_input() {
    assert_eq!(hex(&path("/i-42").encode()), "6901082a000812");
    assert!(
        matches!(decode_err("69010800000812"), Rule::NonCanonical(_)),
        "08 00"
    );
    assert!(
        matches!(decode_err("690109002a00081a"), Rule::NonCanonical(_)),
        "09 00 2a"
    );
    assert!(
        matches!(decode_err("6901ff07ff00081a"), Rule::NonCanonical(_)),
        "sort byte 0xff"
    );
    assert!(
        KeyPath::decode(&[0x69, 0x01, 0x08, 0x2a, 0x00, 0x08, 0x12, 0x00]).is_err(),
        "trailing byte"
    );
    assert_eq!(decode_err(""), Rule::EmptyPath);
    assert_eq!(decode_err("69"), Rule::LengthMismatch);
    assert_eq!(
        decode_err("690108"),
        Rule::Separator {
            expected: 0,
            found: 1
        }
    );
    assert!(matches!(
        decode_err("6901082a010812"),
        Rule::Separator {
            expected: 0,
            found: 1
        }
    ));
    assert!(matches!(
        decode_err("6902082a000812"),
        Rule::Separator {
            expected: 1,
            found: 2
        }
    ));
    assert_eq!(decode_err("6901082a000817"), Rule::ReservedType(7));
    assert_eq!(decode_err("690008"), Rule::GroupWithoutId);
    assert!(
        matches!(decode_err("620100000809"), Rule::NonCanonical(_)),
        "raw 00 in bytes"
    );
    assert!(
        matches!(decode_err("62010203000811"), Rule::NonCanonical(_)),
        "02 03 is no escape"
    );
    assert_eq!(decode_err("6901000800"), Rule::EmptyId);
    assert_eq!(decode_err("3101082a000812"), Rule::NamespaceStart('1'));
    // Overlong varint: 0x88 0x00 is a padded 0x08.
    assert_eq!(decode_err("6901082a00880012"), Rule::BadVarint);
}

fn old_decode(
    bytes: &[u8],
    require_group_id: bool,
) -> Result<Vec<crate::Element>, crate::DecodeError> {
    crate::binary::decode_with(bytes, require_group_id).map(|r| r.to_elements())
}

fn new_decode(
    bytes: &[u8],
    require_group_id: bool,
) -> Result<Vec<crate::Element>, crate::DecodeError> {
    crate::binary::decode_owned(bytes, require_group_id, None, &[])
}

proptest::proptest! {
    /// The one-pass owned decoder against the zero-copy one it replaces for owned paths, with
    /// and without the group id rule (sort keys): same elements, same errors.
    #[test]
    fn owned_decoder_agrees_with_decode_with(
        bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
        which in 0..5usize,
        at in proptest::prelude::any::<proptest::sample::Index>(),
        op in 0..4u8,
    ) {
        let base = [
            "/user-4c9d36e5-6b19-4e6a-828c-226ed667458a/post-1234/comment-1678901234/react-42",
            "/a-1/settings",
            "/x-!a/y-!5/z-~AAEC/w",
            "/s-héllo/n-0/m--300",
            "/t-abcdefghijklmnopqrstuvwxyz0123456789/u-18446744073709551615",
        ][which];
        let mut key = path(base).encode();
        let i = at.index(key.len());
        let byte = bytes.first().copied().unwrap_or(0);
        match op {
            0 => key[i] = byte,
            1 => { key.remove(i); }
            2 => key.insert(i, byte),
            _ => key = bytes.clone(),
        }
        for require_group_id in [true, false] {
            proptest::prop_assert_eq!(new_decode(&key, require_group_id), old_decode(&key, require_group_id));
            proptest::prop_assert_eq!(new_decode(&bytes, require_group_id), old_decode(&bytes, require_group_id));
        }
        // The sort key of a one-element path's child, without group id.
        let sort = path(base).sort_key();
        proptest::prop_assert_eq!(new_decode(&sort, false), old_decode(&sort, false));
    }

    /// The word-at-a-time control character test is the byte scan.
    #[test]
    fn control_byte_test_is_the_byte_scan(bytes in proptest::collection::vec(
        proptest::prop_oneof![proptest::prelude::any::<u8>(), proptest::sample::select(vec![0u8, 0x1f, 0x20, 0x7e, 0x7f, 0x80, 0xff])],
        0..40,
    )) {
        proptest::prop_assert_eq!(
            crate::id::has_control_byte(&bytes),
            bytes.iter().any(|&b| b < 0x20 || b == 0x7f)
        );
    }
}

/// An element for the encoder tests: every id type, namespaces up to 64 bytes, integers over
/// the whole range, strings up to 300 characters, UUIDs with and without bytes to escape.
fn any_element() -> impl proptest::strategy::Strategy<Value = crate::Element> {
    use proptest::prelude::*;
    let ns = prop_oneof![
        3 => proptest::sample::select(vec!["a", "user", "post", "comment", "react", "x_1"]).prop_map(str::to_owned),
        1 => "[A-Za-z_][A-Za-z0-9_]{0,20}",
        1 => Just("n".repeat(64)),
    ];
    let int = prop_oneof![
        any::<i64>().prop_map(i128::from),
        Int::MIN.get()..=Int::MAX.get(),
        proptest::sample::select(vec![
            Int::MIN.get(),
            -256,
            -255,
            -1,
            0,
            1,
            255,
            256,
            Int::MAX.get()
        ]),
    ]
    .prop_map(|v| Int::new(v).expect("in range"));
    let string = prop_oneof![3 => "[a-z0-9 é😀/-]{1,20}", 1 => "\\PC{1,300}"];
    let bytes = proptest::collection::vec(any::<u8>(), 1..12);
    let uuid = prop_oneof![
        any::<[u8; 16]>(),
        proptest::array::uniform16(proptest::sample::select(vec![0u8, 1, 2, 3, 0x41])),
    ]
    .prop_map(crate::Uuid::from_bytes);
    let id = prop_oneof![
        4 => int.clone().prop_map(Id::Int),
        1 => int.prop_map(Id::DescInt),
        3 => string.clone().prop_map(Id::String),
        1 => string.prop_map(Id::DescString),
        2 => uuid.prop_map(Id::Uuid),
        1 => bytes.clone().prop_map(Id::Bytes),
        1 => bytes.prop_map(Id::DescBytes),
    ];
    (ns, id).prop_map(|(ns, id)| {
        crate::Element::new(crate::Namespace::new(&ns).expect("valid"), Some(id)).expect("valid")
    })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 2048, ..Default::default() })]

    /// The stack encoder, with either buffer, writes exactly what the general encoder writes
    /// (after what the sink already holds), or nothing when it declines the path; and the
    /// encoder as called writes the general encoder's bytes into both kinds of sink.
    #[test]
    fn stack_encoder_agrees_with_general_encoder(
        mut elements in proptest::collection::vec(any_element(), 1..10),
        bare_last in proptest::prelude::any::<bool>(),
    ) {
        use crate::binary::{LARGE_KEY, SMALL_KEY, STACK_META, encode_elements_into, encode_general, encode_on_stack};
        if bare_last {
            let ns = elements[0].namespace().clone();
            elements.push(crate::Element::new(ns, None).expect("valid"));
        }
        let mut general = vec![0xaa];
        encode_general(&elements, &mut general);
        let mut small = vec![0xaa];
        if encode_on_stack::<_, { SMALL_KEY + STACK_META }>(&elements, &mut small) {
            proptest::prop_assert_eq!(&small, &general);
        } else {
            proptest::prop_assert_eq!(&small, &[0xaa]);
        }
        let mut large = vec![0xaa];
        if encode_on_stack::<_, { LARGE_KEY + STACK_META }>(&elements, &mut large) {
            proptest::prop_assert_eq!(&large, &general);
        } else {
            proptest::prop_assert_eq!(&large, &[0xaa]);
        }
        let mut vec_sink = vec![0xaa];
        encode_elements_into(&elements, &mut vec_sink);
        proptest::prop_assert_eq!(&vec_sink, &general);
        let mut small_vec_sink = smallvec::SmallVec::<[u8; 128]>::from_slice(&[0xaa]);
        encode_elements_into(&elements, &mut small_vec_sink);
        proptest::prop_assert_eq!(&small_vec_sink[..], &general[..]);
    }
}

/// Namespaces that often share their length and their first and last 8 bytes: short ones over
/// a small alphabet, and 16 to 20 bytes made of one of two 8-byte starts, a middle of up to 4
/// bytes and one of two 8-byte ends.
fn similar_names() -> proptest::strategy::BoxedStrategy<String> {
    use proptest::prelude::*;
    let start = proptest::sample::select(vec!["aaaaaaaa", "aaaaaaab"]);
    let end = proptest::sample::select(vec!["bbbbbbbb", "abbbbbbb"]);
    prop_oneof![
        "[ab_]{1,9}",
        (start, "[ab]{0,4}", end).prop_map(|(s, m, e)| format!("{s}{m}{e}")),
    ]
    .boxed()
}

proptest::proptest! {
    /// The recent-namespace set compares keys (length, first and last 8 bytes) instead of the
    /// bytes: it finds only namespaces with exactly the asked bytes (a small alphabet makes
    /// namespaces that share their ends, and lengths over 16 take the full comparison), and it
    /// finds each of the last 8 remembered. Probes include bytes that are not namespaces.
    #[test]
    fn recent_namespaces_find_exactly_the_asked_bytes(
        names in proptest::collection::vec(similar_names(), 1..12),
        probes in proptest::collection::vec(proptest::prop_oneof![similar_names(), proptest::strategy::Strategy::boxed("[ab_1-]{0,20}")], 0..20),
    ) {
        let names: Vec<crate::Namespace> =
            names.iter().map(|n| crate::Namespace::new(n).expect("valid")).collect();
        let (found, kept) = crate::Namespace::with_recent(|recent| {
            for ns in &names {
                recent.remember(ns);
            }
            let found: Vec<(String, Option<String>)> = probes
                .iter()
                .map(String::as_str)
                .chain(names.iter().map(crate::Namespace::as_str))
                .map(|p| (p.to_owned(), recent.find(p.as_bytes()).map(|ns| ns.as_str().to_owned())))
                .collect();
            let kept: Vec<bool> = names[names.len().saturating_sub(8)..]
                .iter()
                .map(|ns| recent.find(ns.as_str().as_bytes()).is_some())
                .collect();
            (found, kept)
        });
        for (probe, hit) in found {
            if let Some(hit) = hit {
                proptest::prop_assert_eq!(hit, probe);
            }
        }
        proptest::prop_assert!(kept.iter().all(|&k| k));
    }

    /// The integer payload reader is the byte-at-a-time big-endian value.
    #[test]
    fn be_uint_is_the_byte_loop(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..=8)) {
        proptest::prop_assert_eq!(
            crate::binary::be_uint(&bytes),
            bytes.iter().fold(0u64, |v, &b| (v << 8) | u64::from(b))
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Namespace representations and the word encoder (issue 23)

/// Namespaces interned in `interner`, and the distinct ones among them in order.
fn intern_all<const SLOTS: usize>(
    interner: &crate::namespace::Interner<SLOTS>,
    names: &[String],
) -> Vec<Option<&'static str>> {
    names.iter().map(|n| interner.intern(n)).collect()
}

proptest::proptest! {
    /// The interner returns exactly the asked name, the same string for equal names, interns
    /// every distinct name until the cap and none after it (but still finds those it has), and
    /// leaks at most the cap.
    #[test]
    fn interner_returns_exactly_the_asked_name_up_to_its_cap(
        names in proptest::collection::vec(similar_names(), 1..60),
        cap in 0..40usize,
    ) {
        let interner = crate::namespace::Interner::<64>::new(cap);
        let first = intern_all(&interner, &names);
        let mut distinct: Vec<&str> = Vec::new();
        for (name, got) in names.iter().zip(&first) {
            let known = distinct.contains(&name.as_str());
            match got {
                Some(s) => {
                    proptest::prop_assert_eq!(*s, name.as_str());
                    if !known {
                        distinct.push(name);
                    }
                }
                None => {
                    proptest::prop_assert!(!known, "{} was interned before", name);
                    proptest::prop_assert_eq!(distinct.len(), cap);
                }
            }
        }
        proptest::prop_assert_eq!(interner.leaked(), distinct.len());
        proptest::prop_assert!(interner.leaked() <= cap);
        // Asked again, every name gives what it gave the first time, the very same string.
        let again = intern_all(&interner, &names);
        for (a, b) in first.iter().zip(&again) {
            match (a, b) {
                (Some(a), Some(b)) => proptest::prop_assert!(std::ptr::eq(*a, *b)),
                (None, None) => {}
                _ => proptest::prop_assert!(false, "{:?} then {:?}", a, b),
            }
        }
    }

    /// A namespace from the interner and one from the reference-counted fallback are equal,
    /// order and hash the same, whichever side each is on; and so are paths built from either.
    #[test]
    fn namespace_representations_compare_and_hash_alike(
        a in similar_names(),
        b in similar_names(),
        id in proptest::prelude::any::<i64>(),
    ) {
        use std::hash::{BuildHasher, RandomState};
        let interner = crate::namespace::Interner::<16>::new(8);
        let interned = |n: &str| crate::Namespace::interned_in(&interner, n).expect("room");
        let shared = crate::Namespace::shared;
        let hash = RandomState::new();
        let (ia, sa, ib, sb) = (interned(&a), shared(&a), interned(&b), shared(&b));
        proptest::prop_assert!(ia.is_interned() && !sa.is_interned());
        proptest::prop_assert_eq!(&ia, &sa);
        proptest::prop_assert_eq!(hash.hash_one(&ia), hash.hash_one(&sa));
        proptest::prop_assert_eq!(hash.hash_one(&ia), hash.hash_one(a.as_str()));
        for (x, y) in [(&ia, &ib), (&ia, &sb), (&sa, &ib), (&sa, &sb)] {
            proptest::prop_assert_eq!(x.cmp(y), a.cmp(&b));
            proptest::prop_assert_eq!(x == y, a == b);
        }
        let path = |ns: &crate::Namespace, ns2: &crate::Namespace| {
            KeyPath::from_elements(vec![
                crate::Element::new(ns.clone(), Some(Id::from(id))).expect("valid"),
                crate::Element::new(ns2.clone(), Some(Id::from(7))).expect("valid"),
                crate::Element::new(ns.clone(), None).expect("valid"),
            ])
            .expect("valid")
        };
        let (p, q) = (path(&ia, &ib), path(&sa, &sb));
        proptest::prop_assert_eq!(&p, &q);
        proptest::prop_assert_eq!(p.cmp(&q), std::cmp::Ordering::Equal);
        proptest::prop_assert_eq!(hash.hash_one(&p), hash.hash_one(&q));
        proptest::prop_assert_eq!(p.encode(), q.encode());
        proptest::prop_assert_eq!(p.to_string(), q.to_string());
        proptest::prop_assert_eq!(KeyPath::decode(&q.encode()).expect("decodes"), p);
    }

    /// Paths of 1 to 6 elements round trip through the binary and text forms, split into
    /// partition and sort keys, and keep their elements through `parent`, `child` and
    /// `from_elements`.
    #[test]
    fn paths_of_one_to_six_elements_round_trip(
        elements in proptest::collection::vec(any_element(), 1..7),
        bare_last in proptest::prelude::any::<bool>(),
    ) {
        let mut elements = elements;
        if bare_last {
            let ns = elements[0].namespace().clone();
            elements.push(crate::Element::new(ns, None).expect("valid"));
        }
        let p = KeyPath::from_elements(elements.clone()).expect("valid");
        proptest::prop_assert_eq!(p.elements(), &elements[..]);
        proptest::prop_assert_eq!(&KeyPath::decode(&p.encode()).expect("decodes"), &p);
        proptest::prop_assert_eq!(&p.to_string().parse::<KeyPath>().expect("parses"), &p);
        proptest::prop_assert_eq!(
            &KeyPath::from_partition_and_sort(&p.partition_key(), &p.sort_key()).expect("splits"),
            &p
        );
        if let Some(parent) = p.parent() {
            proptest::prop_assert_eq!(parent.elements(), &elements[..elements.len() - 1]);
            let last = &elements[elements.len() - 1];
            let again = match last.id() {
                Some(id) => parent.child(last.namespace().as_str(), id.clone()),
                None => parent.child_without_id(last.namespace().as_str()),
            };
            proptest::prop_assert_eq!(&again.expect("valid"), &p);
        }
    }

    /// The word encoder writes exactly the general encoder's bytes, into a `Vec`, a `SmallVec`
    /// and a sink that has only the required methods; and it takes exactly the paths it should.
    #[test]
    fn word_encoder_agrees_with_general_encoder(
        elements in proptest::collection::vec(word_element(), 1..6),
        bare_last in proptest::prelude::any::<bool>(),
    ) {
        use crate::binary::{encode_general, encode_words, word_eligible};
        let mut elements = elements;
        if bare_last {
            let ns = elements[0].namespace().clone();
            elements.push(crate::Element::new(ns, None).expect("valid"));
        }
        let eligible = elements.len() <= 4
            && elements.iter().all(|e| {
                e.namespace().as_str().len() <= 15
                    && match e.id() {
                        None | Some(Id::Int(_) | Id::DescInt(_)) => true,
                        Some(Id::String(s)) => s.len() <= 15,
                        Some(_) => false,
                    }
            });
        proptest::prop_assert_eq!(word_eligible(&elements), eligible);
        let mut general = vec![0xaa];
        encode_general(&elements, &mut general);
        if eligible {
            let mut vec_sink = vec![0xaa];
            encode_words(&elements, &mut vec_sink);
            proptest::prop_assert_eq!(&vec_sink, &general);
            let mut small = smallvec::SmallVec::<[u8; 128]>::from_slice(&[0xaa]);
            encode_words(&elements, &mut small);
            proptest::prop_assert_eq!(&small[..], &general[..]);
            let mut plain = PlainSink(vec![0xaa]);
            encode_words(&elements, &mut plain);
            proptest::prop_assert_eq!(&plain.0, &general);
        }
    }
}

/// A sink with only the required methods: `put_word` is the trait's provided one.
struct PlainSink(Vec<u8>);

impl crate::Sink for PlainSink {
    fn put(&mut self, byte: u8) {
        self.0.push(byte);
    }
    fn put_slice(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }
    fn written(&self) -> usize {
        self.0.len()
    }
}

/// Elements around the word encoder's limits: namespaces and string ids of 1 to 17 bytes
/// (multi-byte characters included), integers of every payload length, mostly eligible ids.
fn word_element() -> impl proptest::strategy::Strategy<Value = crate::Element> {
    use proptest::prelude::*;
    let ns = prop_oneof![
        3 => proptest::sample::select(vec!["a", "ab", "abc", "user", "comment", "abcdefgh", "abcdefghi"]).prop_map(str::to_owned),
        2 => "[A-Za-z_][A-Za-z0-9_]{0,16}",
    ];
    let int = prop_oneof![
        (0u32..=64)
            .prop_flat_map(|bits| {
                let top = if bits == 0 { 0 } else { (1u128 << bits) - 1 };
                (0..=top, any::<bool>())
            })
            .prop_map(
                |(m, neg)| Int::new(if neg { -(m as i128) } else { m as i128 }).expect("in range")
            ),
        proptest::sample::select(vec![Int::MIN, Int::MAX, Int::new(0).expect("zero")]),
    ];
    let id = prop_oneof![
        4 => int.clone().prop_map(Id::Int),
        2 => int.prop_map(Id::DescInt),
        3 => "[a-z0-9é😀-]{1,16}".prop_map(Id::String),
        1 => any::<[u8; 16]>().prop_map(|b| Id::Uuid(crate::Uuid::from_bytes(b))),
        1 => "[a-z]{1,4}".prop_map(Id::DescString),
    ];
    (ns, id).prop_map(|(ns, id)| {
        crate::Element::new(crate::Namespace::new(&ns).expect("valid"), Some(id)).expect("valid")
    })
}

/// Concurrent interning of the same names gives every thread the same strings and leaks each
/// name once, and never more than the cap.
#[test]
fn concurrent_interning_agrees_and_stays_under_the_cap() {
    let interner = crate::namespace::Interner::<64>::new(20);
    let names: Vec<String> = (0..40).map(|i| format!("ns_{i}")).collect();
    let results: Vec<Vec<Option<&'static str>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let (interner, names) = (&interner, &names);
                scope.spawn(move || {
                    // Each thread its own order, so that threads race for the same slots.
                    let mut order: Vec<usize> = (0..names.len()).collect();
                    order.rotate_left(t * 7);
                    let mut got = vec![None; names.len()];
                    for i in order {
                        got[i] = interner.intern(&names[i]);
                    }
                    got
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("no panic"))
            .collect()
    });
    assert!(interner.leaked() <= 20);
    let mut interned = 0;
    for (i, name) in names.iter().enumerate() {
        let hits: Vec<&'static str> = results.iter().filter_map(|r| r[i]).collect();
        assert!(hits.iter().all(|s| *s == name && std::ptr::eq(*s, hits[0])));
        interned += usize::from(!hits.is_empty());
    }
    assert_eq!(interned, interner.leaked());
}

/// Process-wide: `Namespace::new` interns while there is room, and equal names then share one
/// string, also with a decoded path. (Other tests of this process make thousands of random
/// namespaces and may have filled the interner; then both are reference-counted and equal.)
#[test]
fn new_namespaces_are_interned_and_shared() {
    let a = crate::Namespace::new("interned_in_this_test").expect("valid");
    let b = crate::Namespace::new("interned_in_this_test").expect("valid");
    assert_eq!(a, b);
    assert_eq!(a.is_interned(), b.is_interned());
    let decoded = KeyPath::decode(&path("/interned_in_this_test-1").encode()).expect("decodes");
    assert_eq!(decoded.group().namespace(), &a);
    if a.is_interned() {
        assert!(std::ptr::eq(a.as_str(), b.as_str()));
        assert!(std::ptr::eq(
            decoded.group().namespace().as_str(),
            a.as_str()
        ));
    }
}
