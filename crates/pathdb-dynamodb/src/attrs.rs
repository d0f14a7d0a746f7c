//! Items as DynamoDB attributes, and the expressions that query and guard them.
//!
//! | attribute | type | holds |
//! | --- | --- | --- |
//! | `pk` | B | partition key (encoded group, or a system partition) |
//! | `sk` | B | sort key |
//! | `v` | N | version |
//! | `c`, `m` | N | created / modified, µs since the epoch |
//! | `x` | N | expiry, µs since the epoch (absent: never) |
//! | `val` | B | the value bytes (absent when empty) |
//! | `w` | B | change log entries only: the id of the write that appended the entry |

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use pathdb_store::backend::{Expect, Key, Record, SortRange};
use pathdb_store::{MAX_SORT_KEY_BYTES, StorageError};
use std::collections::HashMap;
use std::ops::Bound;

type Attrs = HashMap<String, AttributeValue>;

fn b(bytes: &[u8]) -> AttributeValue {
    AttributeValue::B(Blob::new(bytes))
}

fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

pub(crate) fn key(key: &Key) -> Attrs {
    HashMap::from([
        ("pk".to_owned(), b(&key.partition)),
        ("sk".to_owned(), b(&key.sort)),
    ])
}

pub(crate) fn item(k: &Key, r: &Record) -> Attrs {
    let mut item = key(k);
    item.insert("v".into(), n(r.version));
    item.insert("c".into(), n(r.created_at));
    item.insert("m".into(), n(r.modified_at));
    if let Some(x) = r.expires_at {
        // No `ttl` attribute: DynamoDB's TTL would delete the record that keeps the path's
        // last version (a tombstone must replace it); the store's sweeper does that.
        item.insert("x".into(), n(x));
    }
    if !r.value.is_empty() {
        item.insert("val".into(), b(&r.value));
    }
    item
}

/// An item's size as DynamoDB bills it: every attribute's name and value, a number taking about
/// one byte per two significant digits plus one. Capacity units are computed from it (metrics.rs).
pub(crate) fn size(item: &Attrs) -> usize {
    item.iter()
        .map(|(name, value)| name.len() + value_size(value))
        .sum()
}

fn value_size(value: &AttributeValue) -> usize {
    match value {
        AttributeValue::B(blob) => blob.as_ref().len(),
        AttributeValue::S(text) => text.len(),
        AttributeValue::N(number) => {
            let digits = number
                .trim_start_matches('-')
                .replace('.', "")
                .trim_matches('0')
                .len();
            digits.div_ceil(2) + 1
        }
        // Not PathDB's types (another tool's rows): a byte each, a floor.
        _ => 1,
    }
}

/// The attribute that names the write that appended a change log entry: 16 random bytes, the
/// same as the write's `ClientRequestToken` (in hex). When a write's answer is lost, finding its
/// id under the entry it would have appended is proof that it committed (`write.rs`). Records
/// do not carry it: reads ignore it.
pub(crate) const WRITE_ID: &str = "w";

/// [`item`] for a change log entry appended by write `write_id`.
pub(crate) fn entry_item(k: &Key, r: &Record, write_id: &[u8]) -> Attrs {
    let mut item = item(k, r);
    item.insert(WRITE_ID.into(), b(write_id));
    item
}

/// The id of the write that appended the entry `item`, if it has one.
pub(crate) fn write_id(item: &Attrs) -> Option<&[u8]> {
    match item.get(WRITE_ID) {
        Some(AttributeValue::B(blob)) => Some(blob.as_ref()),
        _ => None,
    }
}

fn corrupt(what: &str) -> StorageError {
    StorageError::msg(format!("item in the table is not a PathDB record: {what}"))
}

fn get_b<'a>(item: &'a Attrs, name: &str) -> Result<&'a [u8], StorageError> {
    match item.get(name) {
        Some(AttributeValue::B(blob)) => Ok(blob.as_ref()),
        _ => Err(corrupt(name)),
    }
}

fn get_n<T: std::str::FromStr>(item: &Attrs, name: &str) -> Result<Option<T>, StorageError> {
    match item.get(name) {
        None => Ok(None),
        Some(AttributeValue::N(text)) => text.parse().map(Some).map_err(|_| corrupt(name)),
        Some(_) => Err(corrupt(name)),
    }
}

pub(crate) fn record(item: &Attrs) -> Result<(Key, Record), StorageError> {
    let key = Key {
        partition: get_b(item, "pk")?.to_vec(),
        sort: get_b(item, "sk")?.to_vec(),
    };
    let record = Record {
        version: get_n(item, "v")?.ok_or_else(|| corrupt("v"))?,
        created_at: get_n(item, "c")?.ok_or_else(|| corrupt("c"))?,
        modified_at: get_n(item, "m")?.ok_or_else(|| corrupt("m"))?,
        expires_at: get_n(item, "x")?,
        value: match item.get("val") {
            None => Vec::new(),
            Some(_) => get_b(item, "val")?.to_vec(),
        },
    };
    Ok((key, record))
}

/// `(ConditionExpression, names, values)` for an expectation.
pub(crate) fn condition(
    expect: Option<Expect>,
) -> (
    Option<String>,
    Option<HashMap<String, String>>,
    Option<Attrs>,
) {
    match expect {
        None => (None, None, None),
        Some(Expect::Absent) => (Some("attribute_not_exists(pk)".into()), None, None),
        Some(Expect::Version(v)) => (
            Some("#v = :v".into()),
            Some(HashMap::from([("#v".to_owned(), "v".to_owned())])),
            Some(HashMap::from([(":v".to_owned(), n(v))])),
        ),
    }
}

/// A key condition and the bound keys to drop from its results (DynamoDB's `BETWEEN` includes
/// both ends; an exclusive bound is dropped client-side).
pub(crate) struct KeyCondition {
    pub expression: String,
    pub values: Attrs,
    /// An excluded start that `BETWEEN` returns (one too long to turn into an included start).
    pub excluded_start: Option<Vec<u8>>,
    /// An excluded end that `BETWEEN` returns.
    pub excluded_end: Option<Vec<u8>>,
}

impl KeyCondition {
    /// Whether `sort` is an excluded bound, to drop from the results.
    pub fn excludes(&self, sort: &[u8]) -> bool {
        [&self.excluded_start, &self.excluded_end]
            .iter()
            .any(|b| b.as_deref() == Some(sort))
    }

    /// Extra items a query in `direction` asks for: the excluded bound it meets first, if any
    /// (the other one comes last, when nothing is left to read).
    pub fn leading_excluded(&self, reverse: bool) -> usize {
        let leading = if reverse {
            &self.excluded_end
        } else {
            &self.excluded_start
        };
        usize::from(leading.is_some())
    }
}

pub(crate) fn key_condition(partition: &[u8], range: &SortRange) -> KeyCondition {
    let mut values = HashMap::from([(":pk".to_owned(), b(partition))]);
    let (mut excluded_start, mut excluded_end) = (None, None);
    let bound = |bound: &Bound<Vec<u8>>| match bound {
        Bound::Included(v) => Some((v.clone(), true)),
        Bound::Excluded(v) => Some((v.clone(), false)),
        Bound::Unbounded => None,
    };
    // The first key after `a` is `a` + 00: an excluded start becomes an included one, so a page
    // that resumes after a key does not read that key again (a read unit's worth of bytes).
    let start = match bound(&range.start) {
        Some((mut a, false)) if a.len() < MAX_SORT_KEY_BYTES => {
            a.push(0);
            Some((a, true))
        }
        start => start,
    };
    let expression = match (start, bound(&range.end)) {
        (None, None) => "pk = :pk".to_owned(),
        (Some((a, inclusive)), None) => {
            values.insert(":a".into(), b(&a));
            format!("pk = :pk AND sk {} :a", if inclusive { ">=" } else { ">" })
        }
        (None, Some((z, inclusive))) => {
            values.insert(":z".into(), b(&z));
            format!("pk = :pk AND sk {} :z", if inclusive { "<=" } else { "<" })
        }
        (Some((a, a_inclusive)), Some((z, z_inclusive))) => {
            if !a_inclusive {
                excluded_start = Some(a.clone());
            }
            if !z_inclusive {
                excluded_end = Some(z.clone());
            }
            values.insert(":a".into(), b(&a));
            values.insert(":z".into(), b(&z));
            "pk = :pk AND sk BETWEEN :a AND :z".to_owned()
        }
    };
    KeyCondition {
        expression,
        values,
        excluded_start,
        excluded_end,
    }
}
