//! Stored records as the data API sees them: whether a record is a live item, the tombstone a
//! delete or expiry leaves (encoding/layout.rs), and the conversion of a record into an [`Item`].

use crate::backend::{Key, Reader, Record, RecordView};
use crate::encoding::alias::{alias_value, is_alias, parse_alias};
use crate::encoding::layout;
use crate::encoding::limits::next_version;
use crate::encoding::stamp::split_stored;
use crate::model::error::Error;
use crate::model::item::Item;
use crate::model::item::Json;
use crate::model::item::Timestamp;
use pathdb_keys::KeyPath;

/// Whether an item key's record is an item a read should see: not a tombstone (encoding/layout.rs),
/// not expired.
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
/// the path's next write continues the numbering (encoding/layout.rs).
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

/// The record of `alias`, which `template` gives the item at `item`, written over `read` (what
/// the alias key holds): the next version of the key, the creation time of a live record there
/// (else `now`), the item's expiry.
pub(crate) fn alias_record(
    alias: &KeyPath,
    template: &str,
    item: &KeyPath,
    expires_at: Option<i64>,
    read: Option<&Record>,
    now: i64,
) -> Result<Record, Error> {
    Ok(Record {
        version: match read {
            Some(r) => next_version(alias, r.version)?,
            None => 1,
        },
        created_at: read
            .filter(|r| is_live(r, now))
            .map_or(now, |r| r.created_at),
        modified_at: now,
        expires_at,
        value: alias_value(template, item),
    })
}

/// [`to_item`] for a borrowed record: the value is copied once, into the item.
pub(crate) fn item_from_view(path: KeyPath, record: RecordView<'_>) -> Result<Item, Error> {
    if let Some(unresolved) = unresolved_alias(&path, record)? {
        return Ok(unresolved);
    }
    let (stamp, json) = split_stored(record.value)?;
    Ok(item_with(
        path,
        record,
        Json::from_stored_slice(json)?,
        stamp,
    ))
}

/// The item of a live record at `path`. An alias record (aliases/template.rs) gives an *unresolved
/// alias* ([`is_unresolved`]): the path of the item it names, `alias` the path read, version 0
/// (no stored item has it) and a `null` value. Readers resolve it ([`resolve`]) before anyone
/// sees it.
pub(crate) fn to_item(path: KeyPath, mut record: Record) -> Result<Item, Error> {
    if let Some(unresolved) = unresolved_alias(&path, record.as_view())? {
        return Ok(unresolved);
    }
    let (stamp, json) = split_stored(&record.value)?;
    let value = if stamp == 0 {
        // The value moves into the item; only the metadata is read through the view.
        Json::from_stored(std::mem::take(&mut record.value))?
    } else {
        Json::from_stored_slice(json)?
    };
    Ok(item_with(path, record.as_view(), value, stamp))
}

fn unresolved_alias(path: &KeyPath, record: RecordView<'_>) -> Result<Option<Item>, Error> {
    let Some(of) = parse_alias(record.value)? else {
        return Ok(None);
    };
    let mut item = item_with(of.item, record, Json::null(), 0);
    item.version = 0;
    item.alias = Some(path.clone());
    Ok(Some(item))
}

/// Whether `item` is an alias [`to_item`] has not resolved yet.
pub(crate) fn is_unresolved(item: &Item) -> bool {
    item.version == 0 && item.alias.is_some()
}

/// The item an unresolved alias names, read through `reader` at `now`, with `alias` the path it
/// was found at; `None` if that item is gone (possible only where reads are not snapshots,
/// between two reads). Any other item is returned as it is.
pub(crate) fn resolve<R: Reader + ?Sized>(
    reader: &R,
    now: i64,
    item: Item,
) -> Result<Option<Item>, Error> {
    if !is_unresolved(&item) {
        return Ok(Some(item));
    }
    let record = reader.get(&layout::item_key(&item.path))?;
    with_alias(item, record, now)
}

/// [`resolve`] for many, read together: the items in order, `None` for one that is gone.
pub(crate) fn resolve_many<R: Reader + ?Sized>(
    reader: &R,
    now: i64,
    items: Vec<Item>,
) -> Result<Vec<Option<Item>>, Error> {
    let keys: Vec<_> = items
        .iter()
        .filter(|i| is_unresolved(i))
        .map(|i| layout::item_key(&i.path))
        .collect();
    if keys.is_empty() {
        return Ok(items.into_iter().map(Some).collect());
    }
    let mut records = reader.get_many(&keys)?.into_iter();
    items
        .into_iter()
        .map(|item| match is_unresolved(&item) {
            true => with_alias(item, records.next().flatten(), now),
            false => Ok(Some(item)),
        })
        .collect()
}

/// The item an unresolved alias names, from `record`, read at its path: with the alias.
fn with_alias(unresolved: Item, record: Option<Record>, now: i64) -> Result<Option<Item>, Error> {
    let item = aliased_item(unresolved.path, record, now)?;
    Ok(item.map(|item| Item {
        alias: unresolved.alias,
        ..item
    }))
}

/// The item at `target` that an alias names, from `record`, read there at `now`; `None` if it
/// is gone (or, which never happens, is another alias).
pub(crate) fn aliased_item(
    target: KeyPath,
    record: Option<Record>,
    now: i64,
) -> Result<Option<Item>, Error> {
    let Some(record) = visible(record, now) else {
        return Ok(None);
    };
    let item = to_item(target, record)?;
    Ok((!is_unresolved(&item)).then_some(item))
}

/// An item from a record's metadata and its already converted value.
fn item_with(path: KeyPath, record: RecordView<'_>, value: Json, schema_version: u64) -> Item {
    Item {
        path,
        version: record.version,
        created_at: Timestamp(record.created_at),
        modified_at: Timestamp(record.modified_at),
        expires_at: record.expires_at.map(Timestamp),
        value,
        alias: None,
        schema_version,
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

/// What a record met by a full scan of the database is: the one answer export, schema checks
/// and alias builds share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind<'k> {
    /// The store's own: the system partition, a group's sequences and change log.
    Internal,
    /// A revision of the item whose sort key this is.
    Revision(&'k [u8]),
    /// An alias record; `live` unless it expired with its item.
    Alias {
        /// Whether it is live.
        live: bool,
    },
    /// A live item.
    Item,
    /// A tombstone, or an expired item that the sweeper has not reached yet.
    Gone,
    /// Not a PathDB record: a revision key too short to name its item (written by another
    /// tool).
    Foreign,
}

/// What the record at `key` is, at `now`.
pub(crate) fn classify<'k>(key: &'k Key, record: &Record, now: i64) -> Kind<'k> {
    if key.partition == layout::SYSTEM_PARTITION || layout::is_group_internal(&key.sort) {
        return Kind::Internal;
    }
    if layout::is_revision(&key.sort) {
        return layout::revision_item_sort(&key.sort).map_or(Kind::Foreign, Kind::Revision);
    }
    let live = is_live(record, now);
    if is_alias(&record.value) {
        Kind::Alias { live }
    } else if live {
        Kind::Item
    } else {
        Kind::Gone
    }
}
