//! Point reads: an item, several items from one snapshot, an item's history and one of its
//! versions. Each asks the alias policy (read/aliases.rs) about what it finds, so a read through
//! an alias answers alike in all four.

use crate::backend::{Backend, Direction, Reader};
use crate::encoding::layout;
use crate::encoding::limits::{MAX_GET_MANY, check_key, checked_item_key};
use crate::encoding::record::{resolve, resolve_many, to_item, visible};
use crate::model::error::Error;
use crate::model::item::Item;
use crate::namespaces::definitions::Namespaces;
use crate::read::aliases::{item_path, served};
use pathdb_keys::KeyPath;

/// The item at `path` (or that the alias at `path` names), if it exists and has not expired.
///
/// # Errors
/// Key size limits, [`Error::AliasBuilding`], storage failures.
pub(crate) fn get<B: Backend>(
    namespaces: &Namespaces,
    backend: &B,
    now: i64,
    path: &KeyPath,
) -> Result<Option<Item>, Error> {
    let key = checked_item_key(path)?;
    let reader = backend.reader()?;
    let record = visible(reader.get(&key)?, now);
    if !served(namespaces, &reader, path, record.as_ref())? {
        return Ok(None);
    }
    let Some(record) = record else {
        return Ok(None);
    };
    resolve(&reader, now, to_item(path.clone(), record)?)
}

/// The items that exist among `paths`, in the order asked, read from one snapshot.
///
/// # Errors
/// More than [`MAX_GET_MANY`] paths; as [`get`].
pub(crate) fn get_many<B: Backend>(
    namespaces: &Namespaces,
    backend: &B,
    now: i64,
    paths: &[KeyPath],
) -> Result<Vec<Item>, Error> {
    if paths.len() > MAX_GET_MANY {
        return Err(Error::InvalidRequest(format!(
            "get_many takes at most {MAX_GET_MANY} paths, got {}",
            paths.len()
        )));
    }
    paths.iter().try_for_each(check_key)?;
    let reader = backend.reader()?;
    let keys: Vec<_> = paths.iter().map(layout::item_key).collect();
    let mut items = Vec::new();
    for (path, record) in paths.iter().zip(reader.get_many(&keys)?) {
        let record = visible(record, now);
        if !served(namespaces, &reader, path, record.as_ref())? {
            continue;
        }
        if let Some(r) = record {
            items.push(to_item(path.clone(), r)?);
        }
    }
    Ok(resolve_many(&reader, now, items)?
        .into_iter()
        .flatten()
        .collect())
}

/// Revisions of the item at `path` (or that the alias at `path` names), newest first, at most
/// `limit`.
///
/// # Errors
/// As [`get`].
pub(crate) fn history<B: Backend>(
    namespaces: &Namespaces,
    backend: &B,
    now: i64,
    path: &KeyPath,
    limit: usize,
) -> Result<Vec<Item>, Error> {
    checked_item_key(path)?;
    let reader = backend.reader()?;
    let Some(path) = item_path(namespaces, &reader, path, now)? else {
        return Ok(Vec::new());
    };
    let key = layout::item_key(&path);
    let mut out = Vec::new();
    for (sort, record) in reader.scan(
        &key.partition,
        &layout::revision_range(&key),
        Direction::Forward,
        limit,
    )? {
        if layout::is_revision_of(&key, &sort) {
            out.push(to_item(path.clone(), record)?);
        }
    }
    Ok(out)
}

/// The revision of the item at `path` (or that the alias at `path` names) at `version`, from
/// its history or, if that is the current version, the item itself.
///
/// # Errors
/// As [`get`].
pub(crate) fn get_version<B: Backend>(
    namespaces: &Namespaces,
    backend: &B,
    now: i64,
    path: &KeyPath,
    version: u64,
) -> Result<Option<Item>, Error> {
    checked_item_key(path)?;
    let reader = backend.reader()?;
    let Some(path) = item_path(namespaces, &reader, path, now)? else {
        return Ok(None);
    };
    let key = layout::item_key(&path);
    if let Some(r) = reader.get(&layout::revision_key(&key, version))? {
        return to_item(path, r).map(Some);
    }
    match visible(reader.get(&key)?, now) {
        Some(r) if r.version == version => to_item(path, r).map(Some),
        _ => Ok(None),
    }
}
