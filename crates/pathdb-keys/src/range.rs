//! Byte ranges for scans (keypath-format.md §2) and the partition/sort key split (§4).

use crate::binary::{self, ESCAPE, SEPARATOR, TERMINATOR};
use crate::path::check_elements;
use crate::{DecodeError, KeyPath, Rule};

/// A half-open range `[start, end)` of encoded keys; `end == None` is unbounded.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct KeyRange {
    /// Smallest key in the range.
    pub start: Vec<u8>,
    /// First key past the range, or `None` for no upper bound.
    pub end: Option<Vec<u8>>,
}

impl KeyRange {
    /// Whether `key` lies in the range.
    pub fn contains(&self, key: &[u8]) -> bool {
        key >= self.start.as_slice() && self.end.as_deref().is_none_or(|end| key < end)
    }
}

/// The sort key of a one-element path: sorts before every other sort key (they start with a
/// namespace byte) and is never the encoding of one.
pub const GROUP_SORT_KEY: [u8; 1] = [0x00];

impl KeyPath {
    /// Encodes the path into a new buffer.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64);
        self.encode_into(&mut out);
        out
    }

    /// Appends the encoding to `out`, so callers can reuse one buffer for many keys.
    pub fn encode_into<S: binary::Sink>(&self, out: &mut S) {
        binary::encode_elements_into(self.elements(), out);
    }

    /// Decodes a canonical binary key path.
    ///
    /// # Errors
    /// Any byte string the encoder would not produce, with the offset and the rule broken.
    pub fn decode(bytes: &[u8]) -> Result<KeyPath, DecodeError> {
        Ok(KeyPath::from_checked(binary::decode_owned(
            bytes,
            true,
            None,
            &[],
        )?))
    }

    /// The body `B`: segments and separators, without `00` and metadata.
    pub fn body(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64);
        binary::encode_body_into(self.elements(), &mut out);
        out
    }

    /// The node and its whole subtree, `[B 00, B 02)`: every key [`KeyPath::covers`] (but see
    /// docs/key-format.md on bytes and UUID ids mixed with other types under one namespace).
    pub fn subtree_range(&self) -> KeyRange {
        body_range(self.body(), TERMINATOR)
    }

    /// Children and deeper, without the node itself: `[B 01, B 02)`. For a path ending in a
    /// namespace without id, that is every id of the namespace and their subtrees.
    pub fn descendants_range(&self) -> KeyRange {
        body_range(self.body(), SEPARATOR)
    }

    /// The partition key: the group (first element) encoded alone.
    pub fn partition_key(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(32);
        binary::encode_elements_into(&self.elements()[..1], &mut out);
        out
    }

    /// The sort key: the remaining elements encoded alone, or [`GROUP_SORT_KEY`] when there are none.
    pub fn sort_key(&self) -> Vec<u8> {
        let rest = &self.elements()[1..];
        if rest.is_empty() {
            return GROUP_SORT_KEY.to_vec();
        }
        let mut out = Vec::with_capacity(64);
        binary::encode_elements_into(rest, &mut out);
        out
    }

    /// Reassembles a path from its partition and sort keys.
    ///
    /// # Errors
    /// Either key is not canonical, or the partition key is not exactly one element with an id.
    pub fn from_partition_and_sort(partition: &[u8], sort: &[u8]) -> Result<KeyPath, DecodeError> {
        let group = KeyPath::decode(partition)?;
        if group.len() != 1 {
            return Err(DecodeError {
                offset: 0,
                rule: Rule::NonCanonical("a partition key is one element"),
            });
        }
        group.with_sort_key(sort)
    }

    /// The path in this path's group whose sort key is `sort`: [`KeyPath::from_partition_and_sort`]
    /// without decoding the group again, for scans inside one partition.
    ///
    /// # Errors
    /// `sort` is not a canonical sort key.
    pub fn with_sort_key(&self, sort: &[u8]) -> Result<KeyPath, DecodeError> {
        self.with_sort_key_like(sort, self)
    }

    /// [`KeyPath::with_sort_key`], sharing namespaces with `like` where they are the same at the
    /// same position: for a scan that decodes many neighbouring keys (pass the previous entry's
    /// path), so that their repeated namespaces are not allocated again. The result does not
    /// depend on `like`.
    ///
    /// # Errors
    /// `sort` is not a canonical sort key.
    pub fn with_sort_key_like(&self, sort: &[u8], like: &KeyPath) -> Result<KeyPath, DecodeError> {
        let elements = if sort == GROUP_SORT_KEY {
            vec![self.group().clone()]
        } else {
            binary::decode_owned(sort, false, Some(self.group()), like.elements())?
        };
        check_elements(&elements, true).map_err(|e| DecodeError {
            offset: 0,
            rule: e.rule,
        })?;
        Ok(KeyPath::from_checked(elements))
    }

    /// The sort-key range of the node and its subtree, within its partition.
    pub fn sort_key_subtree_range(&self) -> KeyRange {
        self.sort_key_range(TERMINATOR)
    }

    /// The sort-key range of the descendants only, within its partition.
    pub fn sort_key_descendants_range(&self) -> KeyRange {
        self.sort_key_range(SEPARATOR)
    }

    fn sort_key_range(&self, first: u8) -> KeyRange {
        let rest = &self.elements()[1..];
        if rest.is_empty() {
            // The group's own key is `00`; every other sort key starts with a namespace byte.
            let start = if first == TERMINATOR {
                GROUP_SORT_KEY.to_vec()
            } else {
                vec![SEPARATOR]
            };
            return KeyRange { start, end: None };
        }
        let mut body = Vec::with_capacity(64);
        binary::encode_body_into(rest, &mut body);
        body_range(body, first)
    }
}

fn body_range(body: Vec<u8>, first: u8) -> KeyRange {
    let mut start = body.clone();
    start.push(first);
    let mut end = body;
    end.push(ESCAPE);
    KeyRange {
        start,
        end: Some(end),
    }
}
