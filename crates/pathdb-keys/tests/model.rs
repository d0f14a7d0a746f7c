//! An independent model of PathDB's typed order (docs/key-format.md "Order"), written from the
//! typed values without the encoder, to check that encoded byte order implements it; and a
//! byte-at-a-time encoder written from the spec (keypath-format.md §2), to check the library's
//! encoder against.

use pathdb_keys::{Id, KeyPath};
use std::cmp::Ordering;

/// Rank of an id type in the order across types; `None` for bytes and UUID ids, whose encodings
/// carry no type tag and interleave with other types by their raw bytes.
fn rank(id: &Id) -> Option<u8> {
    match id {
        Id::Int(_) => Some(0),
        Id::DescInt(_) => Some(1),
        Id::String(_) => Some(2),
        Id::DescString(_) => Some(3),
        Id::DescBytes(_) => Some(4),
        Id::Bytes(_) | Id::Uuid(_) => None,
    }
}

fn raw(id: &Id) -> &[u8] {
    match id {
        Id::Bytes(b) => b,
        Id::Uuid(u) => u.as_bytes(),
        _ => unreachable!("raw bytes only for bytes and UUID ids"),
    }
}

/// Compares two ids; `None` where the model makes no claim (the documented aliasing of bytes and
/// UUID ids with ids of another type).
pub fn cmp_id(a: &Id, b: &Id) -> Option<Ordering> {
    match (rank(a), rank(b)) {
        (None, None) => {
            let o = raw(a).cmp(raw(b));
            (o != Ordering::Equal || std::mem::discriminant(a) == std::mem::discriminant(b))
                .then_some(o)
        }
        (Some(_), None) | (None, Some(_)) => None,
        (Some(x), Some(y)) if x != y => Some(x.cmp(&y)),
        _ => Some(match (a, b) {
            (Id::Int(x), Id::Int(y)) => x.get().cmp(&y.get()),
            (Id::DescInt(x), Id::DescInt(y)) => y.get().cmp(&x.get()),
            (Id::String(x), Id::String(y)) => x.as_bytes().cmp(y.as_bytes()),
            (Id::DescString(x), Id::DescString(y)) => y.as_bytes().cmp(x.as_bytes()),
            (Id::DescBytes(x), Id::DescBytes(y)) => y.cmp(x),
            _ => unreachable!("equal ranks are equal types"),
        }),
    }
}

/// The typed order: element by element, namespace by its bytes, then the id (an element without
/// id first); a path before its extensions.
pub fn cmp_paths(a: &KeyPath, b: &KeyPath) -> Option<Ordering> {
    for (x, y) in a.elements().iter().zip(b.elements()) {
        let ns = x
            .namespace()
            .as_str()
            .as_bytes()
            .cmp(y.namespace().as_str().as_bytes());
        if ns != Ordering::Equal {
            return Some(ns);
        }
        let id = match (x.id(), y.id()) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (Some(i), Some(j)) => cmp_id(i, j)?,
        };
        if id != Ordering::Equal {
            return Some(id);
        }
    }
    Some(a.len().cmp(&b.len()))
}

/// Whether the model's claims cover `q` relative to `p`: false when, at the first element where
/// they differ, both have ids that [`cmp_id`] makes no claim about.
pub fn comparable(p: &KeyPath, q: &KeyPath) -> bool {
    cmp_paths(p, q).is_some()
}

/// The binary form of `p`, byte by byte from keypath-format.md §2 and docs/key-format.md
/// (descending ids): segments joined by `01`, `00`, then one LEB128 `(len << 3) | type` per
/// segment.
pub fn encode(p: &KeyPath) -> Vec<u8> {
    let mut body = Vec::new();
    let mut metas = Vec::new();
    for e in p.elements() {
        let ns = e.namespace().as_str().as_bytes();
        segment(&mut body, &mut metas, ns.to_vec(), 0);
        if let Some(id) = e.id() {
            let (bytes, ty) = encode_id(id);
            segment(&mut body, &mut metas, bytes, ty);
        }
    }
    body.push(0x00);
    for m in metas {
        let mut v: u64 = m;
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                body.push(byte);
                break;
            }
            body.push(byte | 0x80);
        }
    }
    body
}

fn segment(body: &mut Vec<u8>, metas: &mut Vec<u64>, bytes: Vec<u8>, ty: u64) {
    if !metas.is_empty() {
        body.push(0x01);
    }
    metas.push(((bytes.len() as u64) << 3) | ty);
    body.extend(bytes);
}

fn encode_id(id: &Id) -> (Vec<u8>, u64) {
    let escape = |raw: &[u8]| -> Vec<u8> {
        raw.iter()
            .flat_map(|&b| if b <= 2 { vec![0x02, b] } else { vec![b] })
            .collect()
    };
    match id {
        Id::String(s) => (s.as_bytes().to_vec(), 0),
        Id::Bytes(b) => (escape(b), 1),
        Id::Int(v) => (int(v.get(), false), 2),
        Id::Uuid(u) => (escape(u.as_bytes()), 3),
        Id::DescInt(v) => (int(v.get(), true), 4),
        Id::DescString(s) => {
            let mut out = vec![0xfe];
            out.extend(s.as_bytes().iter().map(|b| !b));
            out.push(0xff);
            (out, 5)
        }
        Id::DescBytes(b) => {
            let mut out = vec![0xff];
            for &byte in b {
                if byte == 0 {
                    out.extend([0xff, 0x00]);
                } else {
                    out.push(!byte);
                }
            }
            out.extend([0xff, 0xfe]);
            (out, 6)
        }
    }
}

/// Positive n: `7 + nbytes(n)`, bytes of n; zero and negative: `8 - nbytes(|n|)`, inverted
/// bytes of |n|. Descending: the sort byte is `0x1f - sort` and every payload byte inverted.
fn int(v: i128, descending: bool) -> Vec<u8> {
    let magnitude = v.unsigned_abs();
    let mut payload: Vec<u8> = magnitude
        .to_be_bytes()
        .into_iter()
        .skip_while(|&b| b == 0)
        .collect();
    if payload.is_empty() {
        payload.push(0);
    }
    let n = payload.len() as u8;
    let (sort, invert) = if v > 0 { (7 + n, false) } else { (8 - n, true) };
    let (sort, invert) = if descending {
        (0x1f - sort, !invert)
    } else {
        (sort, invert)
    };
    let mut out = vec![sort];
    out.extend(payload.into_iter().map(|b| if invert { !b } else { b }));
    out
}
