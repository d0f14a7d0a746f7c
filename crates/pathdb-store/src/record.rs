//! Stored records as the data API sees them: whether a record is a live item, the tombstone a
//! delete or expiry leaves (layout.rs), and the conversion of a record into an [`Item`].

use crate::backend::{Record, RecordView};
use crate::{Error, Item, Json, Timestamp};
use pathdb_keys::KeyPath;

/// Whether an item key's record is an item a read should see: not a tombstone (layout.rs), not
/// expired.
pub(crate) fn is_live(record: &Record, now: i64) -> bool {
    is_live_view(record.as_view(), now)
}

/// [`is_live`] for a borrowed record.
pub(crate) fn is_live_view(record: RecordView<'_>, now: i64) -> bool {
    !record.value.is_empty() && record.expires_at.is_none_or(|t| t > now)
}

pub(crate) fn visible(record: Option<Record>, now: i64) -> Option<Record> {
    record.filter(|r| is_live(r, now))
}

/// The tombstone that replaces `record` when its item is deleted or expires, at `version`, so
/// the path's next write continues the numbering (layout.rs).
///
/// A delete is a write: its tombstone takes the next version. Were it to keep the deleted
/// version, a write planned against the live item (`If-Match` that version, or a second delete)
/// would still find "that version" stored after the delete and succeed over it. An expiry keeps
/// the item's version: no one wrote.
pub(crate) fn tombstone(record: &Record, version: u64, at: i64) -> Record {
    Record {
        version,
        created_at: record.created_at,
        modified_at: at,
        expires_at: None,
        value: Vec::new(),
    }
}

/// [`to_item`] for a borrowed record: the value is copied once, into the item.
pub(crate) fn item_from_view(path: KeyPath, record: RecordView<'_>) -> Result<Item, Error> {
    Ok(item_with(
        path,
        record,
        Json::from_stored_slice(record.value)?,
    ))
}

pub(crate) fn to_item(path: KeyPath, mut record: Record) -> Result<Item, Error> {
    // The value moves into the item; only the metadata is read through the view.
    let value = Json::from_stored(std::mem::take(&mut record.value))?;
    Ok(item_with(path, record.as_view(), value))
}

/// An item from a record's metadata and its already converted value.
fn item_with(path: KeyPath, record: RecordView<'_>, value: Json) -> Item {
    Item {
        path,
        version: record.version,
        created_at: Timestamp(record.created_at),
        modified_at: Timestamp(record.modified_at),
        expires_at: record.expires_at.map(Timestamp),
        value,
    }
}

pub(crate) fn index_record(now: i64) -> Record {
    Record {
        version: 1,
        created_at: now,
        modified_at: now,
        expires_at: None,
        value: Vec::new(),
    }
}
