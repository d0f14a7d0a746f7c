//! Upgrades of what a database stores, made when a store opens.
//!
//! **Every used path keeps a record.** Since deletes and expiry leave tombstones
//! (encoding/layout.rs), a path that was ever written keeps a record under its key: the item or its
//! tombstone, holding the last version the path used. A write to a path with no record can then
//! start at version 1 without reading anything else, which on DynamoDB saves a `Query` per write of
//! a new path (docs/dynamodb.md, "What an operation costs").
//!
//! Databases written before tombstones may hold revisions of a path that has no record (it was
//! deleted then). [`record_used_paths`] gives each such path the tombstone its delete would
//! leave today (at its newest revision's version), once, then stores a mark saying so; a store
//! that finds the mark reads nothing more at open. A store opens only once this is done, so its
//! writes can rely on it; a read-only handle, which writes nothing, skips it.

use crate::backend::{Backend, Expect, Key, Reader, Record, WriteBatch, WriteOp};
use crate::encoding::layout;
use crate::encoding::record::index_record;
use crate::model::error::Error;
use crate::model::error::StorageError;
use crate::write::commit::{Sent, send};
use crate::write::pipeline::backoff;
use std::collections::{BTreeMap, HashSet};

/// Records read per page of the one-time scan.
const SCAN_PAGE: usize = 1000;
/// Tombstones written per batch, at most (DynamoDB takes 100 operations per transaction).
const WRITE_BATCH: usize = 50;
/// Batches sent again, in all, because a key was held by another write at that moment.
const MAX_HELD_RETRIES: u32 = 20;

/// Makes every used path of the database behind `backend` keep a record (module docs), unless
/// it is marked as done or the backend is read-only.
///
/// # Errors
/// The backend failed.
pub(crate) fn record_used_paths<B: Backend>(backend: &B) -> Result<(), Error> {
    let mark = layout::used_paths_recorded_key();
    if backend.read_only() || backend.reader()?.get(&mark)?.is_some() {
        return Ok(());
    }
    let missing = paths_without_records(backend)?;
    if !missing.is_empty() {
        tracing::info!(
            paths = missing.len(),
            "upgrade: writing the tombstones of paths deleted before tombstones existed"
        );
    }
    for chunk in missing.chunks(WRITE_BATCH) {
        write_absent(backend, chunk.to_vec())?;
    }
    put_mark(backend, mark, "upgrade")
}

/// The write of the mark at `key`: a record whose presence is all it says, as an expiry index
/// entry's.
pub(crate) fn mark_write(key: Key) -> WriteOp {
    WriteOp::Put {
        key,
        record: index_record(0),
        expect: None,
    }
}

/// Writes the mark at `key` (`what` names it in the error).
///
/// # Errors
/// The backend failed.
pub(crate) fn put_mark<B: Backend>(backend: &B, key: Key, what: &str) -> Result<(), Error> {
    match send(
        backend,
        None,
        WriteBatch {
            ops: vec![mark_write(key)],
        },
    )? {
        Sent::Committed => Ok(()),
        Sent::Changed { .. } => Err(StorageError::msg(format!(
            "an unconditional write of the {what} mark failed its condition"
        ))
        .into()),
    }
}

/// The tombstone each path with revisions but no record needs. Within a partition a scan in key
/// order meets every item key before any revision (encoding/layout.rs), and an item's newest
/// revision first. A scan whose order is looser (DynamoDB's splits a large partition by sort-key
/// range) may name a path that has a record: its tombstone is written only where the key is absent
/// ([`write_absent`]), so that costs a failed condition, never a record.
fn paths_without_records<B: Backend>(backend: &B) -> Result<Vec<(Key, Record)>, Error> {
    let reader = backend.reader()?;
    let mut missing = BTreeMap::new();
    let mut partition: Option<Vec<u8>> = None;
    // The item sort keys of `partition` that hold a record.
    let mut recorded: HashSet<Vec<u8>> = HashSet::new();
    let mut after: Option<Key> = None;
    loop {
        let page = reader.scan_all(after.as_ref(), SCAN_PAGE)?;
        let full = page.len() == SCAN_PAGE;
        for (key, record) in &page {
            if partition.as_deref() != Some(key.partition.as_slice()) {
                partition = Some(key.partition.clone());
                recorded.clear();
            }
            if key.partition == layout::SYSTEM_PARTITION {
                continue;
            }
            if !layout::is_revision(&key.sort) {
                if !layout::is_group_internal(&key.sort) {
                    recorded.insert(key.sort.clone());
                }
                continue;
            }
            let Some(item) = layout::revision_item_sort(&key.sort) else {
                continue;
            };
            if recorded.contains(item) {
                continue;
            }
            let item = Key {
                partition: key.partition.clone(),
                sort: item.to_vec(),
            };
            // The newest revision's version: the first met in key order, the largest in any.
            let tombstone = missing.entry(item).or_insert_with(|| Record {
                version: 0,
                created_at: record.created_at,
                modified_at: record.modified_at,
                expires_at: None,
                value: Vec::new(),
            });
            if record.version > tombstone.version {
                tombstone.version = record.version;
                tombstone.modified_at = record.modified_at;
            }
        }
        match page.into_iter().last() {
            Some((key, _)) if full => after = Some(key),
            _ => return Ok(missing.into_iter().collect()),
        }
    }
}

/// Writes each tombstone where its key is still absent: a write that raced this one and put the
/// path meanwhile (another process on a shared table) keeps its record. A failed condition is
/// taken for such a record only once a read finds it: DynamoDB also names an operation whose
/// item another transaction held at that moment, and that tombstone must still be written.
fn write_absent<B: Backend>(backend: &B, mut tombstones: Vec<(Key, Record)>) -> Result<(), Error> {
    let mut attempts = 0u32;
    while !tombstones.is_empty() {
        let ops = tombstones
            .iter()
            .map(|(key, record)| WriteOp::Put {
                key: key.clone(),
                record: record.clone(),
                expect: Some(Expect::Absent),
            })
            .collect();
        match send(backend, None, WriteBatch { ops })? {
            Sent::Committed => return Ok(()),
            Sent::Changed { index } if index < tombstones.len() => {
                if backend.reader()?.get(&tombstones[index].0)?.is_some() {
                    tombstones.remove(index);
                } else {
                    attempts += 1;
                    if attempts > MAX_HELD_RETRIES {
                        return Err(StorageError::msg(
                            "upgrade: a path's tombstone could not be written (its key stays held by other writes)",
                        )
                        .into());
                    }
                    backoff(attempts.min(6));
                }
            }
            Sent::Changed { .. } => {
                return Err(StorageError::msg(
                    "the backend named a failed condition outside the batch",
                )
                .into());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::InMemoryBackend;
    use pathdb_keys::KeyPath;

    fn item_key(path: &str) -> Key {
        layout::item_key(&path.parse::<KeyPath>().expect("path"))
    }

    fn record(version: u64, value: &str) -> Record {
        Record {
            version,
            created_at: 1,
            modified_at: 1 + version as i64,
            expires_at: None,
            value: value.as_bytes().to_vec(),
        }
    }

    /// What an old build leaves of `/h-1/a-1`, deleted at version 3 with its history kept and
    /// no tombstone, and of `/h-1/a-2`, live at version 2 with its history.
    fn old_records() -> Vec<WriteOp> {
        let (gone, kept) = (item_key("/h-1/a-1"), item_key("/h-1/a-2"));
        let mut ops = Vec::new();
        for v in 1..=3 {
            ops.push(WriteOp::Put {
                key: layout::revision_key(&gone, v),
                record: record(v, &format!("{{\"n\":{v}}}")),
                expect: None,
            });
        }
        for v in 1..=2 {
            ops.push(WriteOp::Put {
                key: layout::revision_key(&kept, v),
                record: record(v, "{}"),
                expect: None,
            });
        }
        ops.push(WriteOp::Put {
            key: kept,
            record: record(2, "{}"),
            expect: None,
        });
        ops
    }

    #[test]
    fn paths_deleted_before_tombstones_get_theirs_at_their_newest_version() {
        let backend = InMemoryBackend::new();
        backend
            .write(WriteBatch { ops: old_records() })
            .expect("written");
        record_used_paths(&backend).expect("upgrade");
        let reader = backend.reader().expect("reader");
        let tombstone = reader
            .get(&item_key("/h-1/a-1"))
            .expect("get")
            .expect("a tombstone");
        assert_eq!((tombstone.version, tombstone.value.len()), (3, 0));
        let kept = reader
            .get(&item_key("/h-1/a-2"))
            .expect("get")
            .expect("the live item");
        assert_eq!((kept.version, kept.value.as_slice()), (2, &b"{}"[..]));
        assert!(
            reader
                .get(&layout::used_paths_recorded_key())
                .expect("get")
                .is_some(),
            "marked"
        );
    }

    #[test]
    fn a_marked_database_is_not_read_again() {
        let backend = InMemoryBackend::new();
        record_used_paths(&backend).expect("an empty database is marked");
        // Records that break the rule, written after the mark, are left alone: the mark is all
        // an open reads.
        backend
            .write(WriteBatch { ops: old_records() })
            .expect("written");
        record_used_paths(&backend).expect("upgrade");
        let reader = backend.reader().expect("reader");
        assert_eq!(reader.get(&item_key("/h-1/a-1")).expect("get"), None);
    }
}
