//! Fixtures for comparing PathDB's key codec (`pathdb-keys`) with three order-preserving peers:
//! the FoundationDB tuple layer (`foundationdb-tuple`), SurrealDB's `storekey` and RisingWave's
//! `memcomparable` (MyRocks' format, through serde).
//!
//! Every codec encodes the **same typed values**: for `/user-7/post-1234` that is the string
//! `"user"`, the integer 7, the string `"post"` and the integer 1234. Namespaces are strings,
//! integer ids are `i64`, string ids are strings and the UUID is each peer's UUID type
//! (`foundationdb-tuple` and `storekey`) or its 16 raw bytes (`memcomparable`, which has no UUID
//! type; serialising `uuid::Uuid` through serde would give it 19 bytes instead of 16).
//!
//! A [`Fixture`] is one such path as a flat Rust tuple, with an encoder and an owned decoder per
//! peer, plus borrowing decoders for the two peers that have one. `benches/codec.rs` times them
//! with criterion and `examples/sizes.rs` prints the encoded sizes; `docs/benchmarks.md` records
//! the results.
//!
//! Every encoder appends to a caller's `Vec<u8>`, so a benchmark can reuse one buffer and measure
//! no allocation on the encode side. The owned decoders allocate each string (and pathdb's owned
//! [`KeyPath`] also its element vector); the borrowing decoders allocate nothing.

use pathdb_keys::{KeyPath, Uuid};
use std::borrow::Cow;
use std::fmt::Debug;

/// The ~100-byte string id of [`DeepPath`]'s `doc` element.
pub const LONG_STRING_ID: &str = "quarterly-planning-notes-for-the-storage-and-indexing-team-on-compaction-backups-and-replication-v20";

/// One benchmark key path, held as the flat tuple of its typed values
/// (`namespace, id, namespace, id, ...`), with every codec's encoder and decoder for it.
///
/// The decoders panic on malformed input: they only ever see their own encoder's output, and a
/// panic keeps the timed code free of error plumbing that differs between codecs.
pub trait Fixture: Sized + PartialEq + Debug {
    /// A decoded value borrowing its strings from the encoded key where the codec can.
    type Borrowed<'a>: Debug;

    /// The criterion group suffix: `encode/NAME`, `decode/NAME`.
    const NAME: &'static str;
    /// The path's canonical text form.
    const TEXT: &'static str;

    /// The typed values.
    fn values() -> Self;

    /// The same values as a PathDB key path, built without parsing.
    fn key_path(&self) -> KeyPath;

    /// Appends the FoundationDB tuple encoding (`foundationdb_tuple::pack_into`).
    fn fdb_encode(&self, out: &mut Vec<u8>);
    /// Decodes the FoundationDB tuple encoding into owned values.
    fn fdb_decode(bytes: &[u8]) -> Self;
    /// Decodes the FoundationDB tuple encoding, borrowing strings (`Cow<str>`).
    fn fdb_decode_borrowed(bytes: &[u8]) -> Self::Borrowed<'_>;

    /// Appends the storekey encoding (`storekey::encode` into the buffer).
    fn storekey_encode(&self, out: &mut Vec<u8>);
    /// Decodes the storekey encoding into owned values.
    fn storekey_decode(bytes: &[u8]) -> Self;
    /// Decodes the storekey encoding, borrowing strings (`Cow<str>`, `BorrowDecode`).
    fn storekey_decode_borrowed(bytes: &[u8]) -> Self::Borrowed<'_>;

    /// Appends the memcomparable encoding (a `memcomparable::Serializer` over the buffer).
    fn memcomparable_encode(&self, out: &mut Vec<u8>);
    /// Decodes the memcomparable encoding into owned values (it cannot borrow strings).
    fn memcomparable_decode(bytes: &[u8]) -> Self;
}

fn memcomparable_to<T: serde::Serialize>(value: &T, out: &mut Vec<u8>) {
    let mut serializer = memcomparable::Serializer::new(out);
    value
        .serialize(&mut serializer)
        .expect("memcomparable encodes these types");
}

fn storekey_to<T: storekey::Encode>(value: &T, out: &mut Vec<u8>) {
    storekey::encode(out, value).expect("storekey encodes these types into a Vec");
}

/// `/user-4c9d36e5-6b19-4e6a-828c-226ed667458a/post-1234/comment-1678901234/react-42`, the seed's
/// example and the format spec's reference vector: a UUID group and three integer ids.
pub type SeedExample = (String, Uuid, String, i64, String, i64, String, i64);

/// `/user-42/post-7`: the smallest typical path, two integer ids.
pub type ShortPath = (String, i64, String, i64);

/// `/tenant-acme/project-98765/doc-<LONG_STRING_ID>/rev-12/block-3/line-1024`: six elements, a
/// short and a ~100-byte string id and four integers.
pub type DeepPath = (
    String,
    String,
    String,
    i64,
    String,
    String,
    String,
    i64,
    String,
    i64,
    String,
    i64,
);

/// The seed example's UUID.
pub const SEED_UUID: Uuid = Uuid::from_u128(0x4c9d36e5_6b19_4e6a_828c_226ed667458a);

impl Fixture for SeedExample {
    type Borrowed<'a> = (
        Cow<'a, str>,
        Uuid,
        Cow<'a, str>,
        i64,
        Cow<'a, str>,
        i64,
        Cow<'a, str>,
        i64,
    );

    const NAME: &'static str = "seed_example";
    const TEXT: &'static str =
        "/user-4c9d36e5-6b19-4e6a-828c-226ed667458a/post-1234/comment-1678901234/react-42";

    fn values() -> Self {
        (
            "user".into(),
            SEED_UUID,
            "post".into(),
            1234,
            "comment".into(),
            1_678_901_234,
            "react".into(),
            42,
        )
    }

    fn key_path(&self) -> KeyPath {
        KeyPath::builder()
            .push(&self.0, self.1)
            .push(&self.2, self.3)
            .push(&self.4, self.5)
            .push(&self.6, self.7)
            .build()
            .expect("valid path")
    }

    fn fdb_encode(&self, out: &mut Vec<u8>) {
        foundationdb_tuple::pack_into(self, out);
    }
    fn fdb_decode(bytes: &[u8]) -> Self {
        foundationdb_tuple::unpack(bytes).expect("fdb tuple")
    }
    fn fdb_decode_borrowed(bytes: &[u8]) -> Self::Borrowed<'_> {
        foundationdb_tuple::unpack(bytes).expect("fdb tuple")
    }

    // storekey implements tuples of up to 6 fields and adds no framing around a nested tuple, so
    // the path is encoded as a tuple of (namespace, id) pairs: the bytes are those of a flat tuple.
    fn storekey_encode(&self, out: &mut Vec<u8>) {
        let (a, b, c, d, e, f, g, h) = self;
        storekey_to(&((a, b), (c, d), (e, f), (g, h)), out);
    }
    fn storekey_decode(bytes: &[u8]) -> Self {
        type Pairs = ((String, Uuid), (String, i64), (String, i64), (String, i64));
        let ((a, b), (c, d), (e, f), (g, h)): Pairs = storekey::decode(bytes).expect("storekey");
        (a, b, c, d, e, f, g, h)
    }
    fn storekey_decode_borrowed(bytes: &[u8]) -> Self::Borrowed<'_> {
        type Pairs<'a> = (
            (Cow<'a, str>, Uuid),
            (Cow<'a, str>, i64),
            (Cow<'a, str>, i64),
            (Cow<'a, str>, i64),
        );
        let ((a, b), (c, d), (e, f), (g, h)): Pairs<'_> =
            storekey::decode_borrow(bytes).expect("storekey");
        (a, b, c, d, e, f, g, h)
    }

    fn memcomparable_encode(&self, out: &mut Vec<u8>) {
        let (a, b, c, d, e, f, g, h) = self;
        memcomparable_to(&(a, b.as_bytes(), c, d, e, f, g, h), out);
    }
    fn memcomparable_decode(bytes: &[u8]) -> Self {
        type Raw = (String, [u8; 16], String, i64, String, i64, String, i64);
        let (a, b, c, d, e, f, g, h): Raw =
            memcomparable::from_slice(bytes).expect("memcomparable");
        (a, Uuid::from_bytes(b), c, d, e, f, g, h)
    }
}

impl Fixture for ShortPath {
    type Borrowed<'a> = (Cow<'a, str>, i64, Cow<'a, str>, i64);

    const NAME: &'static str = "short_2_elements";
    const TEXT: &'static str = "/user-42/post-7";

    fn values() -> Self {
        ("user".into(), 42, "post".into(), 7)
    }

    fn key_path(&self) -> KeyPath {
        KeyPath::builder()
            .push(&self.0, self.1)
            .push(&self.2, self.3)
            .build()
            .expect("valid path")
    }

    fn fdb_encode(&self, out: &mut Vec<u8>) {
        foundationdb_tuple::pack_into(self, out);
    }
    fn fdb_decode(bytes: &[u8]) -> Self {
        foundationdb_tuple::unpack(bytes).expect("fdb tuple")
    }
    fn fdb_decode_borrowed(bytes: &[u8]) -> Self::Borrowed<'_> {
        foundationdb_tuple::unpack(bytes).expect("fdb tuple")
    }

    fn storekey_encode(&self, out: &mut Vec<u8>) {
        storekey_to(self, out);
    }
    fn storekey_decode(bytes: &[u8]) -> Self {
        storekey::decode(bytes).expect("storekey")
    }
    fn storekey_decode_borrowed(bytes: &[u8]) -> Self::Borrowed<'_> {
        storekey::decode_borrow(bytes).expect("storekey")
    }

    fn memcomparable_encode(&self, out: &mut Vec<u8>) {
        memcomparable_to(self, out);
    }
    fn memcomparable_decode(bytes: &[u8]) -> Self {
        memcomparable::from_slice(bytes).expect("memcomparable")
    }
}

impl Fixture for DeepPath {
    type Borrowed<'a> = (
        Cow<'a, str>,
        Cow<'a, str>,
        Cow<'a, str>,
        i64,
        Cow<'a, str>,
        Cow<'a, str>,
        Cow<'a, str>,
        i64,
        Cow<'a, str>,
        i64,
        Cow<'a, str>,
        i64,
    );

    const NAME: &'static str = "deep_6_elements";
    const TEXT: &'static str = "/tenant-acme/project-98765/doc-quarterly-planning-notes-for-the-storage-and-indexing-team-on-compaction-backups-and-replication-v20/rev-12/block-3/line-1024";

    fn values() -> Self {
        (
            "tenant".into(),
            "acme".into(),
            "project".into(),
            98765,
            "doc".into(),
            LONG_STRING_ID.into(),
            "rev".into(),
            12,
            "block".into(),
            3,
            "line".into(),
            1024,
        )
    }

    fn key_path(&self) -> KeyPath {
        KeyPath::builder()
            .push(&self.0, self.1.as_str())
            .push(&self.2, self.3)
            .push(&self.4, self.5.as_str())
            .push(&self.6, self.7)
            .push(&self.8, self.9)
            .push(&self.10, self.11)
            .build()
            .expect("valid path")
    }

    fn fdb_encode(&self, out: &mut Vec<u8>) {
        foundationdb_tuple::pack_into(self, out);
    }
    fn fdb_decode(bytes: &[u8]) -> Self {
        foundationdb_tuple::unpack(bytes).expect("fdb tuple")
    }
    fn fdb_decode_borrowed(bytes: &[u8]) -> Self::Borrowed<'_> {
        foundationdb_tuple::unpack(bytes).expect("fdb tuple")
    }

    fn storekey_encode(&self, out: &mut Vec<u8>) {
        let (a, b, c, d, e, f, g, h, i, j, k, l) = self;
        storekey_to(&((a, b), (c, d), (e, f), (g, h), (i, j), (k, l)), out);
    }
    fn storekey_decode(bytes: &[u8]) -> Self {
        type Pairs = (
            (String, String),
            (String, i64),
            (String, String),
            (String, i64),
            (String, i64),
            (String, i64),
        );
        let ((a, b), (c, d), (e, f), (g, h), (i, j), (k, l)): Pairs =
            storekey::decode(bytes).expect("storekey");
        (a, b, c, d, e, f, g, h, i, j, k, l)
    }
    fn storekey_decode_borrowed(bytes: &[u8]) -> Self::Borrowed<'_> {
        type Pairs<'a> = (
            (Cow<'a, str>, Cow<'a, str>),
            (Cow<'a, str>, i64),
            (Cow<'a, str>, Cow<'a, str>),
            (Cow<'a, str>, i64),
            (Cow<'a, str>, i64),
            (Cow<'a, str>, i64),
        );
        let ((a, b), (c, d), (e, f), (g, h), (i, j), (k, l)): Pairs<'_> =
            storekey::decode_borrow(bytes).expect("storekey");
        (a, b, c, d, e, f, g, h, i, j, k, l)
    }

    fn memcomparable_encode(&self, out: &mut Vec<u8>) {
        memcomparable_to(self, out);
    }
    fn memcomparable_decode(bytes: &[u8]) -> Self {
        memcomparable::from_slice(bytes).expect("memcomparable")
    }
}

/// Encoded sizes of one path, in bytes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Sizes {
    /// The canonical text form.
    pub text: usize,
    /// `pathdb-keys`' binary form.
    pub pathdb: usize,
    /// `foundationdb-tuple`.
    pub fdb_tuple: usize,
    /// `storekey`.
    pub storekey: usize,
    /// `memcomparable`.
    pub memcomparable: usize,
}

/// Encodes `F`'s values with every codec and returns the sizes.
pub fn sizes<F: Fixture>() -> Sizes {
    let values = F::values();
    let mut fdb = Vec::new();
    values.fdb_encode(&mut fdb);
    let mut sk = Vec::new();
    values.storekey_encode(&mut sk);
    let mut mc = Vec::new();
    values.memcomparable_encode(&mut mc);
    Sizes {
        text: F::TEXT.len(),
        pathdb: values.key_path().encode().len(),
        fdb_tuple: fdb.len(),
        storekey: sk.len(),
        memcomparable: mc.len(),
    }
}

/// Checks that every codec round-trips `F`'s values and that the built path is the parsed text;
/// the benchmark calls it before timing anything.
///
/// # Panics
/// On any mismatch.
pub fn check_round_trips<F: Fixture>() {
    let values = F::values();
    let path = values.key_path();
    let parsed: KeyPath = F::TEXT.parse().expect("fixture text parses");
    assert_eq!(path, parsed, "{}: builder and parser disagree", F::NAME);
    assert_eq!(path.to_string(), F::TEXT, "{}: text form", F::NAME);

    let bytes = path.encode();
    assert_eq!(KeyPath::decode(&bytes).expect("pathdb decode"), path);
    let borrowed = pathdb_keys::KeyPathRef::decode(&bytes).expect("pathdb ref decode");
    assert_eq!(borrowed.to_key_path(), path);

    let mut buf = Vec::new();
    values.fdb_encode(&mut buf);
    assert_eq!(F::fdb_decode(&buf), values, "{}: fdb tuple", F::NAME);
    assert_eq!(
        format!("{:?}", F::fdb_decode_borrowed(&buf)),
        format!("{values:?}")
    );

    buf.clear();
    values.storekey_encode(&mut buf);
    assert_eq!(F::storekey_decode(&buf), values, "{}: storekey", F::NAME);
    assert_eq!(
        format!("{:?}", F::storekey_decode_borrowed(&buf)),
        format!("{values:?}")
    );

    buf.clear();
    values.memcomparable_encode(&mut buf);
    assert_eq!(
        F::memcomparable_decode(&buf),
        values,
        "{}: memcomparable",
        F::NAME
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_codec_round_trips() {
        check_round_trips::<SeedExample>();
        check_round_trips::<ShortPath>();
        check_round_trips::<DeepPath>();
    }

    #[test]
    fn seed_example_is_the_reference_vector() {
        let expected = "75736572014c9d36e56b194e6a828c226ed667458a01706f7374010904d201\
                        636f6d6d656e74010b6411fff201726561637401082a0020830120\
                        1a382a2812";
        let encoded = SeedExample::values().key_path().encode();
        let hex: String = encoded.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, expected);
        assert_eq!(
            sizes::<SeedExample>(),
            Sizes {
                text: 80,
                pathdb: 63,
                fdb_tuple: 55,
                storekey: 64,
                memcomparable: 80
            }
        );
    }

    #[test]
    fn long_string_is_about_100_bytes() {
        assert_eq!(LONG_STRING_ID.len(), 100);
    }
}
