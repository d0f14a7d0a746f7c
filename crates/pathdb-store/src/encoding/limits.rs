//! The limits every write checks before it reads anything: key and item sizes (DynamoDB's,
//! so that every backend refuses the same inputs), versions, expiry times.

use crate::encoding::layout;
use crate::model::error::Error;
use crate::model::item::Json;
use crate::model::options::Expiry;
use pathdb_keys::KeyPath;

/// Longest encoded group (DynamoDB's partition key limit).
pub const MAX_GROUP_BYTES: usize = 2048;
/// Longest encoded sort key (DynamoDB's sort key limit).
pub const MAX_SORT_KEY_BYTES: usize = 1024;
/// Largest item: value, keys and metadata, under DynamoDB's 400 KB with room for its attribute names.
pub const MAX_ITEM_BYTES: usize = 400_000;
/// Metadata bytes counted against [`MAX_ITEM_BYTES`] besides the value and the keys.
const ITEM_OVERHEAD: usize = 64;
/// Most operations in one transaction (DynamoDB's TransactWriteItems limit).
pub const MAX_TRANSACTION_OPS: usize = 100;
/// Most paths in one `get_many`.
pub const MAX_GET_MANY: usize = 100;
/// The largest version: 2^53 - 1, so that every JSON client (JavaScript's numbers) holds it
/// exactly. Import refuses larger ones; a write past it is refused rather than wrapping.
pub const MAX_VERSION: u64 = (1 << 53) - 1;

/// An expiry must lie in the future: a put that is dead on arrival is a mistake (use delete).
pub(crate) fn check_expiry(path: &KeyPath, expires: Option<Expiry>, now: i64) -> Result<(), Error> {
    match expires {
        Some(Expiry::After(d)) if d.is_zero() => Err(Error::InvalidRequest(format!(
            "{path}: a time to live must be at least 1 second, not 0 (to remove the item, delete it)"
        ))),
        Some(Expiry::At(t)) if t.0 <= now => Err(Error::InvalidRequest(format!(
            "{path}: the expiry time {} is not in the future (to remove the item, delete it)",
            t.0
        ))),
        _ => Ok(()),
    }
}

/// A revision's sort key is the item's plus 9 bytes, and must fit the same limit (DynamoDB
/// refuses longer keys).
pub(crate) fn revision_key_fits(path: &KeyPath, item_sort_len: usize) -> Result<(), Error> {
    let size = item_sort_len + layout::REVISION_OVERHEAD;
    if size > MAX_SORT_KEY_BYTES {
        return Err(Error::KeyTooLarge {
            path: path.clone(),
            part: "sort key with history",
            size,
            max: MAX_SORT_KEY_BYTES,
        });
    }
    Ok(())
}

/// [`revision_key_fits`] for a path.
pub(crate) fn check_revision_key(path: &KeyPath) -> Result<(), Error> {
    revision_key_fits(path, path.sort_key().len())
}

/// The version after `version`, refused past [`MAX_VERSION`] rather than overflowing.
pub(crate) fn next_version(path: &KeyPath, version: u64) -> Result<u64, Error> {
    version
        .checked_add(1)
        .filter(|v| *v <= MAX_VERSION)
        .ok_or_else(|| {
            Error::InvalidRequest(format!(
                "{path} is at version {version}, the largest a version can be"
            ))
        })
}

/// The key size limits.
pub(crate) fn check_key(path: &KeyPath) -> Result<(), Error> {
    checked_item_key(path).map(drop)
}

/// The item's key, after checking the size limits on it (each key encoded once).
pub(crate) fn checked_item_key(path: &KeyPath) -> Result<crate::backend::Key, Error> {
    let key = layout::item_key(path);
    check_key_sizes(path, &key)?;
    Ok(key)
}

/// The key size limits, on `key`, the key of `path` encoded already.
pub(crate) fn check_key_sizes(path: &KeyPath, key: &crate::backend::Key) -> Result<(), Error> {
    if key.partition.len() > MAX_GROUP_BYTES {
        return Err(Error::KeyTooLarge {
            path: path.clone(),
            part: "group",
            size: key.partition.len(),
            max: MAX_GROUP_BYTES,
        });
    }
    if key.sort.len() > MAX_SORT_KEY_BYTES {
        return Err(Error::KeyTooLarge {
            path: path.clone(),
            part: "sort key",
            size: key.sort.len(),
            max: MAX_SORT_KEY_BYTES,
        });
    }
    Ok(())
}

pub(crate) fn check_item_size(path: &KeyPath, value: &Json) -> Result<(), Error> {
    check_value_size(
        path,
        value,
        path.partition_key().len() + path.sort_key().len(),
    )
}

/// [`check_item_size`] for the item at `path`, whose key is `key` (encoded already).
pub(crate) fn check_item_size_at(
    path: &KeyPath,
    key: &crate::backend::Key,
    value: &Json,
) -> Result<(), Error> {
    check_value_size(path, value, key.partition.len() + key.sort.len())
}

fn check_value_size(path: &KeyPath, value: &Json, key_bytes: usize) -> Result<(), Error> {
    let size = value.as_str().len() + key_bytes + ITEM_OVERHEAD;
    if size > MAX_ITEM_BYTES {
        return Err(Error::ItemTooLarge {
            path: path.clone(),
            size,
            max: MAX_ITEM_BYTES,
        });
    }
    Ok(())
}
