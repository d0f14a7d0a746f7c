//! An independent model of PathDB's typed order (docs/key-format.md "Order"), written from the
//! typed values without the encoder, to check that encoded byte order implements it.

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
