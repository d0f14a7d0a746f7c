//! The binary form (keypath-format.md §2): `{seg1} 01 {seg2} 01 ... {segN} 00 {meta1}...{metaN}`.
//!
//! Encoding writes into a caller's buffer. Decoding reads the metadata varints backwards from the
//! end, never scanning the body for `00`/`01` (integer bodies contain them), checks that every
//! segment is exactly what the encoder would write, and borrows from the input where it can.

use crate::{DecodeError, Element, Id, Int, KeyPath, Namespace, Rule, SegmentType, namespace};
use smallvec::SmallVec;
use std::borrow::Cow;
use uuid::Uuid;

/// Ends the segment list; the metadata follows.
pub const TERMINATOR: u8 = 0x00;
/// Separates segments.
pub const SEPARATOR: u8 = 0x01;
/// Escapes `00`, `01` and `02` inside bytes and UUID segments, and bounds a subtree's scan range.
pub const ESCAPE: u8 = 0x02;

/// First byte of a descending string segment (no string segment starts with it: not UTF-8).
const DESC_STRING_MARK: u8 = 0xfe;
/// Ends a descending string segment: above every inverted UTF-8 byte (which are <= 0xdf).
const DESC_STRING_END: u8 = 0xff;
/// First byte of a descending bytes segment.
const DESC_BYTES_MARK: u8 = 0xff;

/// Where the encoder writes: a `Vec<u8>` or a stack buffer.
pub trait Sink {
    /// Appends one byte.
    fn put(&mut self, byte: u8);
    /// Appends bytes.
    fn put_slice(&mut self, bytes: &[u8]);
    /// Bytes written so far.
    fn written(&self) -> usize;
    /// Appends the first `len` bytes of `word` (`len` <= 8). The encoder assembles short
    /// segments in registers and hands them over 8 bytes at a time; a sink that can append all
    /// 8 and then drop the bytes past `len` (as `Vec` and `SmallVec` do) saves the
    /// variable-length copy of `put_slice`.
    #[inline]
    fn put_word(&mut self, word: [u8; 8], len: usize) {
        self.put_slice(&word[..len]);
    }
}

impl Sink for Vec<u8> {
    #[inline]
    fn put(&mut self, byte: u8) {
        self.push(byte);
    }
    #[inline]
    fn put_slice(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
    #[inline]
    fn written(&self) -> usize {
        self.len()
    }
    #[inline]
    fn put_word(&mut self, word: [u8; 8], len: usize) {
        let keep = self.len() + len;
        // A fixed-size copy (one 8-byte store), then a length update.
        self.extend_from_slice(&word);
        self.truncate(keep);
    }
}

impl<const N: usize> Sink for SmallVec<[u8; N]> {
    #[inline]
    fn put(&mut self, byte: u8) {
        self.push(byte);
    }
    #[inline]
    fn put_slice(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
    #[inline]
    fn written(&self) -> usize {
        self.len()
    }
    #[inline]
    fn put_word(&mut self, word: [u8; 8], len: usize) {
        let keep = self.len() + len;
        self.extend_from_slice(&word);
        self.truncate(keep);
    }
}

// ---------------------------------------------------------------------------------------------
// Encoding

/// Writes the body (segments and separators) of `elements`, recording each segment's metadata.
fn encode_body<S: Sink>(elements: &[Element], out: &mut S, metas: &mut SmallVec<[u64; 16]>) {
    for (i, element) in elements.iter().enumerate() {
        if i > 0 {
            out.put(SEPARATOR);
        }
        let ns = element.namespace().as_str().as_bytes();
        out.put_slice(ns);
        metas.push(meta(ns.len(), SegmentType::String));
        if let Some(id) = element.id() {
            out.put(SEPARATOR);
            let before = out.written();
            encode_id(id, out);
            metas.push(meta(out.written() - before, id.segment_type()));
        }
    }
}

fn meta(len: usize, ty: SegmentType) -> u64 {
    ((len as u64) << 3) | ty as u64
}

/// Keys are assembled on the stack and handed to the sink in one `put_slice`: first in a buffer
/// whose body and terminator fit in [`SMALL_KEY`] bytes, which the compiler zeroes with a few
/// inline stores, then, if the key turns out longer, in one of [`LARGE_KEY`] bytes. Longer keys,
/// and paths with bytes or descending string or bytes ids, take the general path. All write the
/// same bytes (property tests check the stack path against the general one and the encoder
/// against a model of the spec).
pub(crate) const SMALL_KEY: usize = 128;
/// Paths of more elements than this go straight to the [`LARGE_KEY`] buffer.
const SMALL_ELEMENTS: usize = 4;
/// See [`SMALL_KEY`]; also bounds every segment under 2 KiB, so its metadata is 1 or 2 bytes.
pub(crate) const LARGE_KEY: usize = 256;
/// Metadata bytes the stack path holds (2-byte varints for 16 segments, 1-byte for 32), and the
/// slack past a stack key's limit: the metadata array is copied after the terminator whole (a
/// fixed-size, inline copy instead of a `memcpy` call), and only the key is handed out.
pub(crate) const STACK_META: usize = 32;

/// Writes the full encoding of `elements` (segments, `00`, metadata) after `out`'s contents.
pub(crate) fn encode_elements_into<S: Sink>(elements: &[Element], out: &mut S) {
    if word_eligible(elements) {
        encode_words(elements, out);
    } else {
        encode_long(elements, out);
    }
}

/// [`encode_elements_into`] for what the word encoder does not take: the stack encoders, then
/// the general one.
#[inline]
fn encode_long<S: Sink>(elements: &[Element], out: &mut S) {
    // Paths of more elements would mostly not fit the small buffer: skip the attempt.
    let done = (elements.len() <= SMALL_ELEMENTS
        && encode_on_stack::<S, { SMALL_KEY + STACK_META }>(elements, out))
        || encode_on_stack::<S, { LARGE_KEY + STACK_META }>(elements, out);
    if !done {
        encode_general(elements, out);
    }
}

/// Paths of more elements than this go to the stack encoder: the word encoder keeps the
/// metadata, one byte per segment, in one 8-byte word.
const WORD_ELEMENTS: usize = 4;
/// The longest namespace or string id the word encoder takes: its metadata varint is one byte
/// (`15 << 3` is under 0x80), and it is at most two words.
const WORD_SEGMENT: usize = 15;

/// Whether [`encode_words`] takes `elements`: at most [`WORD_ELEMENTS`], every namespace and
/// string id at most [`WORD_SEGMENT`] bytes, ids integers or strings (most keys: `/user-7`).
#[inline]
pub(crate) fn word_eligible(elements: &[Element]) -> bool {
    !elements.is_empty()
        && elements.len() <= WORD_ELEMENTS
        && elements.iter().all(|e| {
            e.namespace().as_str().len() <= WORD_SEGMENT
                // Integers first: a test for one variant is cheaper than a `match` on all.
                && (matches!(e.id(), Some(Id::Int(_)))
                    || match e.id() {
                        None | Some(Id::Int(_) | Id::DescInt(_)) => true,
                        Some(Id::String(s)) => s.len() <= WORD_SEGMENT,
                        Some(_) => false,
                    })
        })
}

/// The encoder for paths [`word_eligible`] takes, appending straight to `out`: each segment and
/// the byte after it (separator or terminator) is assembled in one or two 8-byte words and
/// handed to [`Sink::put_word`], and the metadata, one byte per segment, is collected in
/// another word and written last. No stack buffer: assembling the key in memory and copying it
/// out made the copy's wide loads wait for the narrow stores before them.
#[inline]
pub(crate) fn encode_words<S: Sink>(elements: &[Element], out: &mut S) {
    debug_assert!(word_eligible(elements));
    let mut metas: u64 = 0;
    let mut n_meta = 0;
    let last = elements.len() - 1;
    for (i, element) in elements.iter().enumerate() {
        let ns = element.namespace().as_str().as_bytes();
        let id = element.id();
        let after_ns = if i < last || id.is_some() {
            SEPARATOR
        } else {
            TERMINATOR
        };
        put_short(ns, after_ns, out);
        metas |= meta(ns.len(), SegmentType::String) << (8 * n_meta);
        n_meta += 1;
        let Some(id) = id else { continue };
        let after_id = if i < last { SEPARATOR } else { TERMINATOR };
        let (len, ty) = if let Id::Int(v) = id {
            (put_int_word(*v, false, after_id, out), SegmentType::Int)
        } else {
            match id {
                Id::DescInt(v) => (put_int_word(*v, true, after_id, out), SegmentType::DescInt),
                Id::String(s) => {
                    put_short(s.as_bytes(), after_id, out);
                    (s.len(), SegmentType::String)
                }
                _ => unreachable!("word_eligible takes integer and string ids only"),
            }
        };
        metas |= meta(len, ty) << (8 * n_meta);
        n_meta += 1;
    }
    out.put_word(metas.to_le_bytes(), n_meta);
}

/// Appends `b` (1 to [`WORD_SEGMENT`] bytes) and then `end`: up to 7 bytes as one word built
/// from two overlapping fixed-size loads (their shared bytes are equal, so OR-ing the shifted
/// halves gives the bytes), longer ones as its first 8 bytes and then a word of the rest.
#[inline(always)]
fn put_short<S: Sink>(b: &[u8], end: u8, out: &mut S) {
    let n = b.len();
    debug_assert!((1..=WORD_SEGMENT).contains(&n));
    let (word, tail) = if let Some(f) = b.first_chunk::<8>() {
        out.put_word(*f, 8);
        // The bytes past the first 8 are the top `n - 8` of the last 8.
        let l = b.last_chunk::<8>().map_or(0, |l| u64::from_le_bytes(*l));
        (l >> 8 >> (8 * (15 - n.min(15))), n - 8)
    } else if let (Some(f), Some(l)) = (b.first_chunk::<4>(), b.last_chunk::<4>()) {
        (
            u64::from(u32::from_le_bytes(*f))
                | (u64::from(u32::from_le_bytes(*l)) << (8 * (n - 4))),
            n,
        )
    } else if let (Some(f), Some(l)) = (b.first_chunk::<2>(), b.last_chunk::<2>()) {
        (
            u64::from(u16::from_le_bytes(*f))
                | (u64::from(u16::from_le_bytes(*l)) << (8 * (n - 2))),
            n,
        )
    } else {
        (b.first().map_or(0, |&x| u64::from(x)), n)
    };
    // tail <= 7, so `end` lands inside the word.
    out.put_word(
        (word | (u64::from(end) << (8 * tail))).to_le_bytes(),
        tail + 1,
    );
}

/// Appends an integer segment (sort byte, payload) and then `end`; returns the segment's
/// length. Payloads up to 6 bytes (values below 2^48) take one word.
#[inline(always)]
fn put_int_word<S: Sink>(v: Int, descending: bool, end: u8, out: &mut S) -> usize {
    let (sort, word, len) = int_word(v, descending);
    // Little-endian: the sort byte, then the payload's bytes, whose bytes past `len` are zero.
    let payload = word.swap_bytes();
    let first = u64::from(sort) | (payload << 8);
    if len <= 6 {
        out.put_word(
            (first | (u64::from(end) << (8 * (len + 1)))).to_le_bytes(),
            len + 2,
        );
    } else {
        out.put_word(first.to_le_bytes(), 8);
        let rest = (payload >> 56) | (u64::from(end) << (8 * (len - 7)));
        out.put_word(rest.to_le_bytes(), len - 6);
    }
    len + 1
}

/// The general encoder: any length, any id type.
pub(crate) fn encode_general<S: Sink>(elements: &[Element], out: &mut S) {
    let mut metas = SmallVec::<[u64; 16]>::new();
    encode_body(elements, out, &mut metas);
    out.put(TERMINATOR);
    for m in metas {
        put_varint(m, out);
    }
}

/// Assembles the whole key in a stack buffer of `N` bytes (the key in its first
/// `N - STACK_META`) and hands it to `out`; returns false, having written nothing to `out`, when
/// it might not fit or holds an id type this path does not handle.
///
/// Each segment is followed by a separator, and the last one is then overwritten by the
/// terminator, so the loop has no first-element test.
#[inline]
pub(crate) fn encode_on_stack<S: Sink, const N: usize>(elements: &[Element], out: &mut S) -> bool {
    let limit = N - STACK_META;
    let mut buf = [0u8; N];
    let mut metas = [0u8; STACK_META];
    let mut n_meta = 0;
    let mut pos = 0;
    for element in elements {
        let ns = element.namespace().as_str().as_bytes();
        // Room for the namespace, a separator, a sort byte, an integer's 8-byte word and a
        // separator; and for two 2-byte metadata varints.
        if pos + ns.len() + 11 > limit || n_meta + 4 > STACK_META {
            return false;
        }
        copy_short(&mut buf[pos..pos + ns.len()], ns);
        pos += ns.len();
        buf[pos] = SEPARATOR;
        pos += 1;
        n_meta = push_meta(&mut metas, n_meta, ns.len(), SegmentType::String);
        let Some(id) = element.id() else { continue };
        let start = pos;
        // Integers first and apart: most ids are integers, and a test for one variant is
        // cheaper than the jump table a `match` over all of them compiles to.
        let ty = if let Id::Int(v) = id {
            pos = put_int(&mut buf, pos, *v, false);
            SegmentType::Int
        } else {
            match id {
                Id::Int(_) => unreachable!("handled above"),
                Id::DescInt(v) => {
                    pos = put_int(&mut buf, pos, *v, true);
                    SegmentType::DescInt
                }
                Id::String(s) => {
                    let s = s.as_bytes();
                    if pos + s.len() + 1 > limit {
                        return false;
                    }
                    copy_short(&mut buf[pos..pos + s.len()], s);
                    pos += s.len();
                    SegmentType::String
                }
                Id::Uuid(u) => {
                    if pos + 33 > limit {
                        return false;
                    }
                    pos = put_uuid(&mut buf, pos, u.as_bytes());
                    SegmentType::Uuid
                }
                Id::Bytes(_) | Id::DescString(_) | Id::DescBytes(_) => return false,
            }
        };
        n_meta = push_meta(&mut metas, n_meta, pos - start, ty);
        buf[pos] = SEPARATOR;
        pos += 1;
    }
    if pos == 0 {
        // No elements: the general path writes what it writes for that.
        return false;
    }
    // The separator after the last segment is the terminator; the metadata follows it.
    buf[pos - 1] = TERMINATOR;
    buf[pos..pos + STACK_META].copy_from_slice(&metas);
    out.put_slice(&buf[..pos + n_meta]);
    true
}

/// Writes an integer segment at `pos`: its sort byte, then its payload as one 8-byte store (the
/// bytes past the payload are overwritten later or not handed out). Returns the offset after it.
#[inline]
fn put_int<const N: usize>(buf: &mut [u8; N], pos: usize, v: Int, descending: bool) -> usize {
    let (sort, word, len) = int_word(v, descending);
    buf[pos] = sort;
    buf[pos + 1..pos + 9].copy_from_slice(&word.to_be_bytes());
    pos + 1 + len
}

/// Writes a UUID segment at `pos`, escaping low bytes; returns the offset after it.
#[inline(always)]
fn put_uuid<const N: usize>(buf: &mut [u8; N], mut pos: usize, raw: &[u8; 16]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A byte below 3 sets its high bit in `(w - 0x03 per byte) & !w` (exact for a threshold up
    // to 0x80, see `id::has_control_byte`): most UUIDs have none and are copied whole.
    let word = u128::from_le_bytes(*raw);
    let low = |w: u64| w.wrapping_sub(ONES * 3) & !w & HIGH;
    if low(word as u64) | low((word >> 64) as u64) == 0 {
        buf[pos..pos + 16].copy_from_slice(raw);
        return pos + 16;
    }
    for &b in raw {
        if b <= ESCAPE {
            buf[pos] = ESCAPE;
            pos += 1;
        }
        buf[pos] = b;
        pos += 1;
    }
    pos
}

/// Appends the metadata varint of a segment of `len` bytes (under 2 KiB, so at most 2 bytes);
/// returns the new count.
#[inline]
fn push_meta(metas: &mut [u8; STACK_META], n_meta: usize, len: usize, ty: SegmentType) -> usize {
    debug_assert!(len < 2048);
    let m = meta(len, ty);
    if m < 0x80 {
        metas[n_meta] = m as u8;
        n_meta + 1
    } else {
        metas[n_meta] = (m as u8) | 0x80;
        metas[n_meta + 1] = (m >> 7) as u8;
        n_meta + 2
    }
}

/// `dst.copy_from_slice(src)` for the short slices of namespaces and string ids: 2 to 16 bytes
/// as two overlapping fixed-size copies (inline moves) instead of a `memcpy` call.
#[inline(always)]
fn copy_short(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    if (4..8).contains(&n) {
        dst[..4].copy_from_slice(&src[..4]);
        dst[n - 4..].copy_from_slice(&src[n - 4..]);
    } else if (8..=16).contains(&n) {
        dst[..8].copy_from_slice(&src[..8]);
        dst[n - 8..].copy_from_slice(&src[n - 8..]);
    } else if (2..4).contains(&n) {
        dst[..2].copy_from_slice(&src[..2]);
        dst[n - 2..].copy_from_slice(&src[n - 2..]);
    } else {
        dst.copy_from_slice(src);
    }
}

/// Writes the body only: the `B` of the scan ranges.
pub(crate) fn encode_body_into<S: Sink>(elements: &[Element], out: &mut S) {
    let mut metas = SmallVec::<[u64; 16]>::new();
    encode_body(elements, out, &mut metas);
}

fn put_varint<S: Sink>(mut v: u64, out: &mut S) {
    while v >= 0x80 {
        out.put((v as u8) | 0x80);
        v >>= 7;
    }
    out.put(v as u8);
}

/// Writes one id's segment bytes.
pub(crate) fn encode_id<S: Sink>(id: &Id, out: &mut S) {
    match id {
        Id::String(s) => out.put_slice(s.as_bytes()),
        Id::Int(v) => encode_int(*v, false, out),
        Id::DescInt(v) => encode_int(*v, true, out),
        Id::Uuid(u) => escape_into(u.as_bytes(), out),
        Id::Bytes(b) => escape_into(b, out),
        Id::DescString(s) => {
            out.put(DESC_STRING_MARK);
            for &b in s.as_bytes() {
                out.put(!b);
            }
            out.put(DESC_STRING_END);
        }
        Id::DescBytes(b) => {
            // The inverse of an ascending, self-terminated form (`00` -> `00 ff`, end `00 01`):
            // inverted, `00` -> `ff 00` and the end is `ff fe`, above every other continuation.
            out.put(DESC_BYTES_MARK);
            for &byte in b {
                if byte == 0 {
                    out.put_slice(&[0xff, 0x00]);
                } else {
                    out.put(!byte);
                }
            }
            out.put_slice(&[0xff, 0xfe]);
        }
    }
}

/// An integer segment as a sort byte, its payload as one word, and the payload's length.
///
/// Ascending: positive n -> `7 + len`, bytes of n; zero and negative -> `8 - len`, inverted
/// bytes of |n|. Descending: the same bytes with the sort byte's low nibble and the payload
/// inverted, so sort bytes are `0x10..=0x1f` and the order is reversed. The payload is the
/// word's first `len` big-endian bytes: the (possibly inverted) magnitude shifted to the top, so
/// the encoder stores it with one 8-byte write instead of a loop over bytes.
#[inline]
fn int_word(v: Int, descending: bool) -> (u8, u64, usize) {
    let magnitude = v.magnitude();
    // The payload's length minus one, 0..=7: the index of the highest set bit over 8 (`| 1`:
    // zero takes one byte, like 1..=255).
    let d = (63 - (magnitude | 1).leading_zeros()) / 8;
    let positive = v.get() > 0;
    // With d = len - 1 <= 7: 7 + len = 8 + d = 8 ^ d, and 8 - len = 7 - d = 7 ^ d; descending,
    // 0x1f - sort = 0x1f ^ sort (sort <= 0x0f).
    let sort = ((7 + u8::from(positive)) ^ d as u8) ^ if descending { 0x1f } else { 0 };
    let invert = positive == descending;
    let bits = if invert { !magnitude } else { magnitude };
    // d is 0..=7, so the shift is 0..=56.
    let word = bits << (8 * (7 - d));
    (sort, word, d as usize + 1)
}

fn encode_int<S: Sink>(v: Int, descending: bool, out: &mut S) {
    let (sort, word, len) = int_word(v, descending);
    let mut segment = [0u8; 9];
    segment[0] = sort;
    segment[1..].copy_from_slice(&word.to_be_bytes());
    out.put_slice(&segment[..1 + len]);
}

fn escape_into<S: Sink>(bytes: &[u8], out: &mut S) {
    for &b in bytes {
        if b <= ESCAPE {
            out.put(ESCAPE);
        }
        out.put(b);
    }
}

// ---------------------------------------------------------------------------------------------
// Decoding

/// A decoded id that borrows from the encoded key where its bytes appear verbatim.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum IdRef<'a> {
    /// See [`Id::Int`].
    Int(Int),
    /// See [`Id::Uuid`].
    Uuid(Uuid),
    /// See [`Id::Bytes`]; borrowed unless the bytes held escaped low bytes.
    Bytes(Cow<'a, [u8]>),
    /// See [`Id::String`].
    String(&'a str),
    /// See [`Id::DescInt`].
    DescInt(Int),
    /// See [`Id::DescString`]; its bytes are stored inverted, so it is owned.
    DescString(String),
    /// See [`Id::DescBytes`]; stored inverted, so owned.
    DescBytes(Vec<u8>),
}

impl IdRef<'_> {
    /// An owned [`Id`], moving what is already owned (descending strings and bytes).
    pub fn into_id(self) -> Id {
        match self {
            IdRef::Int(v) => Id::Int(v),
            IdRef::Uuid(u) => Id::Uuid(u),
            IdRef::Bytes(b) => Id::Bytes(b.into_owned()),
            IdRef::String(s) => Id::String(s.to_owned()),
            IdRef::DescInt(v) => Id::DescInt(v),
            IdRef::DescString(s) => Id::DescString(s),
            IdRef::DescBytes(b) => Id::DescBytes(b),
        }
    }

    /// An owned [`Id`].
    pub fn to_id(&self) -> Id {
        match self {
            IdRef::Int(v) => Id::Int(*v),
            IdRef::Uuid(u) => Id::Uuid(*u),
            IdRef::Bytes(b) => Id::Bytes(b.to_vec()),
            IdRef::String(s) => Id::String((*s).to_owned()),
            IdRef::DescInt(v) => Id::DescInt(*v),
            IdRef::DescString(s) => Id::DescString(s.clone()),
            IdRef::DescBytes(b) => Id::DescBytes(b.clone()),
        }
    }
}

/// A decoded element borrowing from the encoded key.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ElementRef<'a> {
    /// The namespace, validated.
    pub namespace: &'a str,
    /// The id, if any.
    pub id: Option<IdRef<'a>>,
}

/// One segment of an encoded key, as `pathdb key explain` shows it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Segment<'a> {
    /// The segment's type code.
    pub ty: SegmentType,
    /// The segment's bytes as encoded.
    pub bytes: &'a [u8],
    /// The segment's metadata varint.
    pub meta: &'a [u8],
}

#[derive(Clone, Copy, Debug)]
struct Span {
    // u32 offsets keep KeyPathRef small (it is moved by value); decode refuses keys >= 4 GiB.
    start: u32,
    len: u32,
    meta_start: u32,
    meta_len: u8,
    ty: SegmentType,
}

impl Span {
    fn start(&self) -> usize {
        self.start as usize
    }

    fn bytes(&self) -> std::ops::Range<usize> {
        self.start()..self.start() + self.len as usize
    }

    fn meta(&self) -> std::ops::Range<usize> {
        let start = self.meta_start as usize;
        start..start + usize::from(self.meta_len)
    }
}

/// A validated encoded key path, decoded without copying where the format allows.
#[derive(Clone, Debug)]
pub struct KeyPathRef<'a> {
    bytes: &'a [u8],
    body_len: usize,
    spans: SmallVec<[Span; 16]>,
    elements: SmallVec<[ElementRef<'a>; 8]>,
}

impl<'a> KeyPathRef<'a> {
    /// Decodes and fully validates an encoded key path.
    ///
    /// # Errors
    /// Any input that the encoder would not produce for a valid key path, with the offset.
    pub fn decode(bytes: &'a [u8]) -> Result<KeyPathRef<'a>, DecodeError> {
        decode_with(bytes, true)
    }

    /// The encoded bytes.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The body: segments and separators, without the terminator and metadata.
    pub fn body(&self) -> &'a [u8] {
        &self.bytes[..self.body_len]
    }

    /// The decoded elements.
    pub fn elements(&self) -> &[ElementRef<'a>] {
        &self.elements
    }

    /// The segments in order, with their metadata bytes.
    pub fn segments(&self) -> impl ExactSizeIterator<Item = Segment<'a>> + '_ {
        self.spans.iter().map(|s| Segment {
            ty: s.ty,
            bytes: &self.bytes[s.bytes()],
            meta: &self.bytes[s.meta()],
        })
    }

    /// An owned [`KeyPath`].
    pub fn to_key_path(&self) -> KeyPath {
        KeyPath::from_checked(self.to_elements())
    }

    pub(crate) fn to_elements(&self) -> Vec<Element> {
        self.elements
            .iter()
            .map(|e| {
                // Validated by `decode`: namespace rules hold, ids are well-formed.
                let ns = Namespace::new_unchecked(e.namespace);
                Element::new_unchecked(ns, e.id.as_ref().map(IdRef::to_id))
            })
            .collect()
    }
}

fn err(offset: usize, rule: Rule) -> DecodeError {
    DecodeError { offset, rule }
}

/// Decodes an element list; `require_group_id` is false for a sort key's remainder (§4).
pub(crate) fn decode_with(
    bytes: &[u8],
    require_group_id: bool,
) -> Result<KeyPathRef<'_>, DecodeError> {
    let (spans, body_len) = decode_spans(bytes)?;
    let mut elements = SmallVec::<[ElementRef<'_>; 8]>::new();
    for pair in spans.chunks(2) {
        let ns_span = pair[0];
        let ns_bytes = &bytes[ns_span.bytes()];
        if ns_span.ty != SegmentType::String {
            return Err(err(
                ns_span.meta().start,
                Rule::NamespaceType(ns_span.ty as u8),
            ));
        }
        let ns =
            std::str::from_utf8(ns_bytes).map_err(|_| err(ns_span.start(), Rule::InvalidUtf8))?;
        namespace::validate(ns).map_err(|(at, rule)| err(ns_span.start() + at, rule))?;
        let id = match pair.get(1) {
            Some(span) => Some(decode_id(&bytes[span.bytes()], span.ty, span.start())?),
            None => None,
        };
        elements.push(ElementRef { namespace: ns, id });
    }
    if require_group_id && elements[0].id.is_none() {
        return Err(err(0, Rule::GroupWithoutId));
    }
    Ok(KeyPathRef {
        bytes,
        body_len,
        spans,
        elements,
    })
}

/// Decodes an element list straight into owned elements, after `group` if given: what
/// [`decode_with`] and then [`KeyPathRef::to_elements`] return, without building the span and
/// element vectors first. Input the one-pass decoder does not accept goes to [`decode_with`], so
/// errors (offset and rule) are exactly the zero-copy decoder's, and so is what is accepted (a
/// property test and the fuzz target check both).
///
/// Where `like` (the elements of a path decoded before, say the previous entry of a scan) has a
/// namespace with the same bytes at the same position in the result, the decoded element shares
/// it instead of allocating another.
pub(crate) fn decode_owned(
    bytes: &[u8],
    require_group_id: bool,
    group: Option<&Element>,
    like: &[Element],
) -> Result<Vec<Element>, DecodeError> {
    if let Some(elements) = decode_one_pass(bytes, require_group_id, group, like) {
        return Ok(elements);
    }
    let decoded = decode_with(bytes, require_group_id)?;
    let mut elements = Vec::with_capacity(decoded.elements.len() + 1);
    elements.extend(group.cloned());
    elements.extend(decoded.to_elements());
    Ok(elements)
}

/// The owned decoder's fast path: `None` for anything it does not accept (the caller then asks
/// [`decode_with`] for the error). Two passes: backwards over the metadata for the body's length
/// and the segment count, then forwards over body and metadata together (segment i's metadata
/// is the i-th varint after the terminator), checking each segment as [`decode_with`] does.
fn decode_one_pass(
    bytes: &[u8],
    require_group_id: bool,
    group: Option<&Element>,
    like: &[Element],
) -> Option<Vec<Element>> {
    if bytes.is_empty() || u32::try_from(bytes.len()).is_err() {
        return None;
    }
    let mut pos = bytes.len();
    let mut body_len: usize = 0;
    let mut n_segments: usize = 0;
    loop {
        // pos >= 1 here: it starts at the length and the loop goes on only while
        // body_len + 1 < pos.
        let last = bytes[pos - 1];
        let (value, start) = if last < 0x80 && (pos == 1 || bytes[pos - 2] < 0x80) {
            (u64::from(last), pos - 1)
        } else {
            read_varint_backwards(bytes, pos).ok()?
        };
        if value & 7 == 7 {
            return None;
        }
        let len = usize::try_from(value >> 3).ok()?;
        body_len = body_len
            .checked_add(len)?
            .checked_add(usize::from(n_segments > 0))?;
        n_segments += 1;
        pos = start;
        match (body_len + 1).cmp(&pos) {
            std::cmp::Ordering::Equal => break,
            std::cmp::Ordering::Greater => return None,
            std::cmp::Ordering::Less => {}
        }
    }
    if bytes[body_len] != TERMINATOR {
        return None;
    }
    // One access to the thread's recent namespaces for the whole key, not one per namespace.
    Namespace::with_recent(|recent| {
        decode_forward(
            bytes,
            body_len,
            n_segments,
            require_group_id,
            group,
            like,
            recent,
        )
    })
}

/// [`decode_one_pass`]'s second pass, over body and metadata together, sharing namespaces from
/// `like` or `recent`.
fn decode_forward(
    bytes: &[u8],
    body_len: usize,
    n_segments: usize,
    require_group_id: bool,
    group: Option<&Element>,
    like: &[Element],
    recent: &mut namespace::Recent,
) -> Option<Vec<Element>> {
    let mut elements = Vec::with_capacity(n_segments.div_ceil(2) + usize::from(group.is_some()));
    elements.extend(group.cloned());
    let mut meta_at = body_len + 1;
    let mut at = 0;
    let mut i = 0;
    while i < n_segments {
        let (value, next) = read_varint_forward(bytes, meta_at)?;
        meta_at = next;
        if i > 0 {
            if bytes.get(at) != Some(&SEPARATOR) {
                return None;
            }
            at += 1;
        }
        if value & 7 != SegmentType::String as u64 {
            return None;
        }
        let ns_bytes = bytes.get(at..at.checked_add(usize::try_from(value >> 3).ok()?)?)?;
        at += ns_bytes.len();
        // The same bytes as a valid namespace of `like` at this position: valid, and shared.
        let namespace = match like.get(elements.len()) {
            Some(e) if e.namespace().as_str().as_bytes() == ns_bytes => e.namespace().clone(),
            // Or one this thread decoded lately (valid too).
            _ => match recent.find(ns_bytes) {
                Some(ns) => ns,
                None => {
                    if !namespace::is_valid(ns_bytes) {
                        return None;
                    }
                    // ASCII, so this cannot fail; the check is what makes it a `&str` without
                    // `unsafe`.
                    let ns = Namespace::new_unchecked(std::str::from_utf8(ns_bytes).ok()?);
                    recent.remember(&ns);
                    ns
                }
            },
        };
        i += 1;
        let id = if i < n_segments {
            let (value, next) = read_varint_forward(bytes, meta_at)?;
            meta_at = next;
            if bytes.get(at) != Some(&SEPARATOR) {
                return None;
            }
            at += 1;
            let ty = SegmentType::from_code((value & 7) as u8)?;
            let seg = bytes.get(at..at.checked_add(usize::try_from(value >> 3).ok()?)?)?;
            let id = match ty {
                SegmentType::Int => Id::Int(decode_int(seg, false, at).ok()?),
                SegmentType::DescInt => Id::DescInt(decode_int(seg, true, at).ok()?),
                SegmentType::String => {
                    let s = std::str::from_utf8(seg).ok()?;
                    crate::id::validate_string(s).ok()?;
                    Id::String(s.to_owned())
                }
                _ => decode_id(seg, ty, at).ok()?.into_id(),
            };
            at += seg.len();
            i += 1;
            Some(id)
        } else {
            None
        };
        elements.push(Element::new_unchecked(namespace, id));
    }
    if require_group_id && elements[0].id().is_none() {
        return None;
    }
    Some(elements)
}

/// Reads a varint forwards from `at`; returns its value and the offset after it. Only for
/// varints [`read_varint_backwards`] has already checked.
#[inline(always)]
fn read_varint_forward(bytes: &[u8], mut at: usize) -> Option<(u64, usize)> {
    let first = *bytes.get(at)?;
    if first < 0x80 {
        return Some((u64::from(first), at + 1));
    }
    let mut value: u64 = 0;
    let mut shift = 0u32;
    loop {
        let b = *bytes.get(at)?;
        at += 1;
        value |= u64::from(b & 0x7f).checked_shl(shift)?;
        if b < 0x80 {
            return Some((value, at));
        }
        shift += 7;
    }
}

/// Reads the metadata backwards and checks the layout; returns the segment spans and body length.
fn decode_spans(bytes: &[u8]) -> Result<(SmallVec<[Span; 16]>, usize), DecodeError> {
    if bytes.is_empty() {
        return Err(err(0, Rule::EmptyPath));
    }
    if u32::try_from(bytes.len()).is_err() {
        return Err(err(0, Rule::LengthMismatch));
    }
    // Metadata in reverse order: (value, varint start, varint len).
    let mut metas = SmallVec::<[(u64, usize, usize); 16]>::new();
    let mut pos = bytes.len();
    let mut body_len: usize = 0;
    loop {
        let (value, start) = read_varint_backwards(bytes, pos)?;
        let ty_code = (value & 7) as u8;
        if SegmentType::from_code(ty_code).is_none() {
            return Err(err(start, Rule::ReservedType(ty_code)));
        }
        let len = usize::try_from(value >> 3).map_err(|_| err(start, Rule::LengthMismatch))?;
        let sep = usize::from(!metas.is_empty());
        body_len = body_len
            .checked_add(len)
            .and_then(|b| b.checked_add(sep))
            .ok_or(err(start, Rule::LengthMismatch))?;
        metas.push((value, start, pos - start));
        pos = start;
        // Unread bytes are the body, the terminator, and the metadata not read yet (each >= 1
        // byte, for a segment of >= 1 byte), so the first exact fit is the only possible one.
        match (body_len + 1).cmp(&pos) {
            std::cmp::Ordering::Equal => break,
            std::cmp::Ordering::Greater => return Err(err(start, Rule::LengthMismatch)),
            std::cmp::Ordering::Less => {}
        }
    }
    if bytes[body_len] != TERMINATOR {
        return Err(err(
            body_len,
            Rule::Separator {
                expected: TERMINATOR,
                found: bytes[body_len],
            },
        ));
    }
    let mut spans = SmallVec::<[Span; 16]>::with_capacity(metas.len());
    let mut offset = 0;
    for (i, &(value, meta_start, meta_len)) in metas.iter().rev().enumerate() {
        if i > 0 {
            if bytes[offset] != SEPARATOR {
                return Err(err(
                    offset,
                    Rule::Separator {
                        expected: SEPARATOR,
                        found: bytes[offset],
                    },
                ));
            }
            offset += 1;
        }
        let len = (value >> 3) as usize;
        let ty = SegmentType::from_code((value & 7) as u8).unwrap_or(SegmentType::String);
        // In range: the key is shorter than 4 GiB (checked above), a varint at most 10 bytes.
        spans.push(Span {
            start: offset as u32,
            len: len as u32,
            ty,
            meta_start: meta_start as u32,
            meta_len: meta_len as u8,
        });
        offset += len;
    }
    Ok((spans, body_len))
}

/// Reads the varint that ends just before `end`; returns its value and start offset.
fn read_varint_backwards(bytes: &[u8], end: usize) -> Result<(u64, usize), DecodeError> {
    if end == 0 {
        return Err(err(0, Rule::Truncated));
    }
    if bytes[end - 1] >= 0x80 {
        return Err(err(end - 1, Rule::Truncated));
    }
    let mut start = end - 1;
    while start > 0 && bytes[start - 1] >= 0x80 {
        start -= 1;
        if end - start > 10 {
            return Err(err(start, Rule::BadVarint));
        }
    }
    let varint = &bytes[start..end];
    // Minimal LEB128: a multi-byte varint's last (most significant) group is non-zero.
    if varint.len() > 1 && varint[varint.len() - 1] == 0 {
        return Err(err(start, Rule::BadVarint));
    }
    let mut value: u64 = 0;
    for (i, &b) in varint.iter().enumerate() {
        let group = u64::from(b & 0x7f);
        let shift = 7 * i as u32;
        if shift == 63 && group > 1 {
            return Err(err(start, Rule::BadVarint));
        }
        value |= group << shift;
    }
    Ok((value, start))
}

fn decode_id(seg: &[u8], ty: SegmentType, at: usize) -> Result<IdRef<'_>, DecodeError> {
    Ok(match ty {
        SegmentType::String => {
            let s = std::str::from_utf8(seg)
                .map_err(|e| err(at + e.valid_up_to(), Rule::InvalidUtf8))?;
            crate::id::validate_string(s).map_err(|(i, rule)| err(at + i, rule))?;
            IdRef::String(s)
        }
        SegmentType::Int => IdRef::Int(decode_int(seg, false, at)?),
        SegmentType::DescInt => IdRef::DescInt(decode_int(seg, true, at)?),
        SegmentType::Uuid => {
            let raw = unescape(seg, at)?;
            let array: [u8; 16] = raw[..]
                .try_into()
                .map_err(|_| err(at, Rule::NonCanonical("a UUID holds 16 bytes")))?;
            IdRef::Uuid(Uuid::from_bytes(array))
        }
        SegmentType::Bytes => {
            let raw = unescape(seg, at)?;
            if raw.is_empty() {
                return Err(err(at, Rule::EmptyBytes));
            }
            IdRef::Bytes(raw)
        }
        SegmentType::DescString => {
            let inner = seg
                .strip_prefix(&[DESC_STRING_MARK])
                .and_then(|s| s.strip_suffix(&[DESC_STRING_END]))
                .ok_or(err(
                    at,
                    Rule::NonCanonical("a descending string is 0xfe, inverted UTF-8, 0xff"),
                ))?;
            let raw: Vec<u8> = inner.iter().map(|b| !b).collect();
            let s = String::from_utf8(raw)
                .map_err(|e| err(at + 1 + e.utf8_error().valid_up_to(), Rule::InvalidUtf8))?;
            crate::id::validate_string(&s).map_err(|(i, rule)| err(at + 1 + i, rule))?;
            IdRef::DescString(s)
        }
        SegmentType::DescBytes => IdRef::DescBytes(decode_desc_bytes(seg, at)?),
    })
}

#[inline]
fn decode_int(seg: &[u8], descending: bool, at: usize) -> Result<Int, DecodeError> {
    let Some((&first, payload)) = seg.split_first() else {
        return Err(err(at, Rule::NonCanonical("an integer needs a sort byte")));
    };
    let sort = if descending {
        if !(0x10..=0x1f).contains(&first) {
            return Err(err(
                at,
                Rule::NonCanonical("a descending integer's sort byte is 0x10..=0x1f"),
            ));
        }
        0x1f - first
    } else {
        if first > 0x0f {
            return Err(err(
                at,
                Rule::NonCanonical("an integer's sort byte is 0x00..=0x0f"),
            ));
        }
        first
    };
    let positive = sort >= 8;
    let len = if positive {
        sort as usize - 7
    } else {
        8 - sort as usize
    };
    if payload.len() != len {
        return Err(err(
            at,
            Rule::NonCanonical("integer length does not match its sort byte"),
        ));
    }
    let invert = positive == descending;
    // len is 1..=8: the payload's low `len` bytes, inverted where the sort byte says.
    let raw = be_uint(payload);
    let magnitude = if invert {
        !raw & (u64::MAX >> (64 - 8 * len))
    } else {
        raw
    };
    // Minimal: the leading magnitude byte is non-zero, except for the one-byte zero (`07 ff`).
    let leading = if invert { !payload[0] } else { payload[0] };
    if leading == 0 && (positive || len > 1) {
        return Err(err(
            at + 1,
            Rule::NonCanonical("integer magnitude has a leading zero byte"),
        ));
    }
    Ok(Int::from_sign_magnitude(!positive, magnitude))
}

/// The big-endian value of 1 to 8 bytes (0 for none): two overlapping fixed-size loads, whose
/// shared bytes are equal, so OR-ing the shifted halves gives the value without a byte loop.
#[inline]
pub(crate) fn be_uint(p: &[u8]) -> u64 {
    let n = p.len();
    if n > 8 {
        // Not called for those.
        return p.iter().fold(0, |v, &b| (v << 8) | u64::from(b));
    }
    if let (Some(hi), Some(lo)) = (p.first_chunk::<4>(), p.last_chunk::<4>()) {
        (u64::from(u32::from_be_bytes(*hi)) << (8 * (n - 4))) | u64::from(u32::from_be_bytes(*lo))
    } else if let (Some(hi), Some(lo)) = (p.first_chunk::<2>(), p.last_chunk::<2>()) {
        (u64::from(u16::from_be_bytes(*hi)) << (8 * (n - 2))) | u64::from(u16::from_be_bytes(*lo))
    } else {
        p.first().map_or(0, |&b| u64::from(b))
    }
}

fn unescape(seg: &[u8], at: usize) -> Result<Cow<'_, [u8]>, DecodeError> {
    if !seg.iter().any(|&b| b <= ESCAPE) {
        return Ok(Cow::Borrowed(seg));
    }
    let mut out = Vec::with_capacity(seg.len());
    let mut i = 0;
    while i < seg.len() {
        let b = seg[i];
        if b == ESCAPE {
            match seg.get(i + 1) {
                Some(&next) if next <= ESCAPE => out.push(next),
                _ => {
                    return Err(err(
                        at + i,
                        Rule::NonCanonical("0x02 escapes only 0x00, 0x01 or 0x02"),
                    ));
                }
            }
            i += 2;
        } else if b < ESCAPE {
            return Err(err(
                at + i,
                Rule::NonCanonical("bytes 0x00 and 0x01 must be escaped"),
            ));
        } else {
            out.push(b);
            i += 1;
        }
    }
    Ok(Cow::Owned(out))
}

fn decode_desc_bytes(seg: &[u8], at: usize) -> Result<Vec<u8>, DecodeError> {
    let inner = seg
        .strip_prefix(&[DESC_BYTES_MARK])
        .and_then(|s| s.strip_suffix(&[0xff, 0xfe]))
        .ok_or(err(
            at,
            Rule::NonCanonical("descending bytes are 0xff, inverted bytes, 0xff 0xfe"),
        ))?;
    let mut out = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        let b = inner[i];
        if b == 0xff {
            if inner.get(i + 1) != Some(&0x00) {
                return Err(err(
                    at + 1 + i,
                    Rule::NonCanonical("inside descending bytes 0xff is followed by 0x00"),
                ));
            }
            out.push(0);
            i += 2;
        } else {
            out.push(!b);
            i += 1;
        }
    }
    if out.is_empty() {
        return Err(err(at, Rule::EmptyBytes));
    }
    Ok(out)
}

// `KeyPath`'s order is defined here, beside the encoding it is the order of.
impl Ord for KeyPath {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // Defined as the encoding's byte order, so that typed and stored order never disagree
        // (docs/key-format.md explains why a structural comparison could not guarantee that for
        // bytes and UUID ids, whose encodings carry no type tag).
        let mut a = SmallVec::<[u8; 128]>::new();
        let mut b = SmallVec::<[u8; 128]>::new();
        encode_elements_into(self.elements(), &mut a);
        encode_elements_into(other.elements(), &mut b);
        a.cmp(&b)
    }
}

impl PartialOrd for KeyPath {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
