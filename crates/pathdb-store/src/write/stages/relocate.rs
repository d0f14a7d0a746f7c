//! Stage: one item of a subtree delete, move or copy (jobs/subtree.rs reads them, a batch at a
//! time). The source item becomes a tombstone (delete, move) or is only checked (copy); the target,
//! if any, gets the item with its value, times and expiry, and its revisions, renumbered above
//! every version the target path used before. Every write is conditional on the record read, so a
//! concurrent change fails the batch instead of being overwritten.

use crate::backend::{Expect, Key, Reader, Record, WriteOp};
use crate::encoding::alias::is_alias;
use crate::encoding::changelog::Change;
use crate::encoding::layout;
use crate::encoding::limits::{MAX_VERSION, next_version, revision_key_fits};
use crate::encoding::record::{index_record, is_live, to_item};
use crate::encoding::stamp::json_of;
use crate::model::error::Error;
use crate::write::plan::{Context, Plan, PlannedChange};
use crate::write::stages::items::delete_write;
use crate::write::stages::migrate;
use pathdb_keys::KeyPath;

/// A live item of the subtree, with what the stage needs to relocate it.
pub(crate) struct Relocation {
    /// Where the item is.
    pub(crate) path: KeyPath,
    /// Its key.
    pub(crate) key: Key,
    /// Its live record.
    pub(crate) record: Record,
    /// What happens at the source.
    pub(crate) source: Source,
    /// Where it goes, for a move or a copy.
    pub(crate) target: Option<Target>,
}

/// What a subtree operation does to an item's source.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Source {
    /// Replace it with a tombstone (delete, move): its history stays only if nothing takes it.
    Remove,
    /// Leave it, but only as read (copy).
    Keep,
}

/// Where an item goes, as stored before it arrives.
pub(crate) struct Target {
    /// The new path.
    pub(crate) path: KeyPath,
    /// Its key.
    pub(crate) key: Key,
    /// What is stored there: nothing or a tombstone (a live item stops the operation first).
    pub(crate) stored: Option<Record>,
    /// The highest version the path used before, 0 if none: moved versions go above it, so a
    /// version number is never used twice for one path.
    pub(crate) floor: u64,
    /// The source's revisions (sort keys in the source partition) that go along.
    pub(crate) revisions: Vec<(Vec<u8>, Record)>,
}

impl Relocation {
    /// Batch operations the stage writes for this item (without the change log).
    pub(crate) fn ops(&self) -> usize {
        let Some(target) = &self.target else {
            return 1;
        };
        let moved_revisions = match self.source {
            Source::Remove => 2,
            Source::Keep => 1,
        };
        2 + moved_revisions * target.revisions.len() + usize::from(self.record.expires_at.is_some())
    }

    /// Bytes of values the stage writes for this item, the change log's included: the item's
    /// put at the target, and for a move the source's delete with its before image.
    pub(crate) fn bytes(&self) -> usize {
        let revisions = self
            .target
            .as_ref()
            .map_or(0, |t| t.revisions.iter().map(|(_, r)| r.value.len()).sum());
        let copies = match self.source {
            Source::Remove => 3,
            Source::Keep => 2,
        };
        copies * self.record.value.len() + revisions
    }
}

/// Plans the writes of `item`.
pub(crate) fn stage<R: Reader + ?Sized>(
    ctx: &Context<'_, R>,
    plan: &mut Plan,
    item: &Relocation,
) -> Result<(), Error> {
    // Only the subtree's root can change namespace (its last element is the one renamed).
    // A value that changes namespace leaves its old namespace's versions for the new one's
    // (migrate.rs), and must fit the new one's schema.
    let rehome = |value: &[u8]| -> Result<Option<Vec<u8>>, Error> {
        match &item.target {
            Some(target) if target.path.last().namespace() != item.path.last().namespace() => {
                if value.is_empty() || is_alias(value) {
                    return Ok(None);
                }
                migrate::rehomed(ctx, &item.path, &target.path, value).map(Some)
            }
            _ => Ok(None),
        }
    };
    let rehomed = rehome(&item.record.value)?;
    if let (Some(target), Some(value)) = (&item.target, &rehomed) {
        super::schema::check(ctx, &target.path, 0, json_of(value))?;
    }
    let version = item.record.version;
    let source = match item.source {
        Source::Remove => {
            let next = next_version(&item.path, version)?;
            let (key, expect) = (item.key.clone(), Expect::Version(version));
            let write = delete_write(plan, &item.path, key, &item.record, next, ctx.now, expect);
            super::aliases::stage(ctx, plan, 0, Some((&item.path, &item.record)), None)?;
            write
        }
        Source::Keep => WriteOp::Check {
            key: item.key.clone(),
            expect: Expect::Version(version),
        },
    };
    plan.push(source, &item.path, false);
    let Some(target) = &item.target else {
        return Ok(());
    };
    let renumber = |v: u64| {
        target
            .floor
            .checked_add(v)
            .filter(|v| *v <= MAX_VERSION)
            .ok_or_else(|| {
                Error::InvalidRequest(format!(
                    "{} has used version {}: {} cannot go there at version {v}",
                    target.path, target.floor, item.path
                ))
            })
    };
    let mut record = Record {
        version: renumber(version)?,
        ..item.record.clone()
    };
    if let Some(value) = rehomed {
        record.value = value;
    }
    let before = match &target.stored {
        Some(stored) if is_live(stored, ctx.now) => {
            Some(to_item(target.path.clone(), stored.clone())?)
        }
        _ => None,
    };
    plan.changes.push(PlannedChange {
        change: Change::Put(to_item(target.path.clone(), record.clone())?),
        before,
    });
    let expect = Expect::as_read(target.stored.as_ref());
    let put = WriteOp::Put {
        key: target.key.clone(),
        record: record.clone(),
        expect: Some(expect),
    };
    plan.push(put, &target.path, false);
    super::aliases::stage(ctx, plan, 0, None, Some((&target.path, &record)))?;
    if let Some(expires_at) = record.expires_at {
        let entry = WriteOp::Put {
            key: layout::expiry_key(expires_at, &target.key),
            record: index_record(ctx.now),
            expect: None,
        };
        plan.push(entry, &target.path, false);
    }
    if !target.revisions.is_empty() {
        revision_key_fits(&target.path, target.key.sort.len())?;
    }
    for (sort, revision) in &target.revisions {
        let version = renumber(revision.version)?;
        let copy = WriteOp::Put {
            key: layout::revision_key(&target.key, version),
            record: Record {
                version,
                value: rehome(&revision.value)?.unwrap_or_else(|| revision.value.clone()),
                ..revision.clone()
            },
            expect: None,
        };
        plan.push(copy, &target.path, false);
        if item.source == Source::Remove {
            let remove = WriteOp::Delete {
                key: Key {
                    partition: item.key.partition.clone(),
                    sort: sort.clone(),
                },
                expect: None,
            };
            plan.push(remove, &item.path, false);
        }
    }
    Ok(())
}
