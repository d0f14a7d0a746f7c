//! The overlay's keys: partitions and sort keys, ordered as their bytes are (as redb orders
//! them), compared eight bytes at a time.
//!
//! The overlay's maps are searched for every row a commit sets, every expectation the committer
//! checks and every read a plan makes. `[u8]`'s own order calls `memcmp` for each comparison,
//! whose call costs more than comparing a key of ten or twenty bytes: the searches were a third
//! of the commit thread's instructions (docs/benchmarks.md).

use std::borrow::Borrow;
use std::cmp::Ordering;

/// An owned key, as the maps hold it.
#[derive(Clone, Debug, Default)]
pub(super) struct Bytes(pub(super) Vec<u8>);

/// A borrowed key: what the maps are searched with, without copying the caller's bytes.
#[derive(Debug)]
#[repr(transparent)]
pub(super) struct Slice([u8]);

impl Slice {
    pub(super) fn new(bytes: &[u8]) -> &Slice {
        // SAFETY: `Slice` is `repr(transparent)` over `[u8]`: the same layout and the same
        // metadata (the length), so the cast keeps the pointer valid for the same lifetime.
        unsafe { &*(std::ptr::from_ref::<[u8]>(bytes) as *const Slice) }
    }
}

impl Borrow<Slice> for Bytes {
    fn borrow(&self) -> &Slice {
        Slice::new(&self.0)
    }
}

impl Ord for Slice {
    #[inline]
    fn cmp(&self, other: &Slice) -> Ordering {
        compare(&self.0, &other.0)
    }
}

impl PartialOrd for Slice {
    fn partial_cmp(&self, other: &Slice) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Slice {
    fn eq(&self, other: &Slice) -> bool {
        self.0 == other.0
    }
}

impl Eq for Slice {}

impl Ord for Bytes {
    #[inline]
    fn cmp(&self, other: &Bytes) -> Ordering {
        compare(&self.0, &other.0)
    }
}

impl PartialOrd for Bytes {
    fn partial_cmp(&self, other: &Bytes) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Bytes {
    fn eq(&self, other: &Bytes) -> bool {
        self.0 == other.0
    }
}

impl Eq for Bytes {}

/// `a.cmp(b)`, inline: whole words while both have one, then bytes.
#[inline]
fn compare(mut a: &[u8], mut b: &[u8]) -> Ordering {
    while let (Some(x), Some(y)) = (a.first_chunk::<8>(), b.first_chunk::<8>()) {
        if x != y {
            // Big-endian: the first byte that differs decides, as in the bytes' own order.
            return u64::from_be_bytes(*x).cmp(&u64::from_be_bytes(*y));
        }
        a = &a[8..];
        b = &b[8..];
    }
    for (x, y) in a.iter().zip(b) {
        if x != y {
            return x.cmp(y);
        }
    }
    a.len().cmp(&b.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Keys that share long prefixes, as a partition's rows do, and that differ anywhere.
    fn key() -> impl Strategy<Value = Vec<u8>> {
        (
            prop::collection::vec(
                prop::sample::select(vec![0u8, 1, 0x7f, 0x80, 0xfe, 0xff]),
                0..20,
            ),
            prop::collection::vec(any::<u8>(), 0..3),
        )
            .prop_map(|(mut common, tail)| {
                common.extend(tail);
                common
            })
    }

    proptest! {
        #[test]
        fn keys_order_as_their_bytes(a in key(), b in key()) {
            prop_assert_eq!(compare(&a, &b), a.as_slice().cmp(b.as_slice()));
            prop_assert_eq!(Bytes(a.clone()).cmp(&Bytes(b.clone())), a.cmp(&b));
            prop_assert_eq!(Slice::new(&a) == Slice::new(&b), a == b);
        }
    }

    #[test]
    fn a_prefix_comes_first_at_every_length() {
        let long: Vec<u8> = (0..=24).collect();
        for n in 0..long.len() {
            assert_eq!(compare(&long[..n], &long), Ordering::Less, "{n}");
            assert_eq!(compare(&long, &long[..n]), Ordering::Greater, "{n}");
            assert_eq!(compare(&long[..n], &long[..n]), Ordering::Equal, "{n}");
        }
    }
}
