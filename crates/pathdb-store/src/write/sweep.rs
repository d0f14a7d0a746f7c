//! The sweeper's writes: each expired item becomes a tombstone at its own version (no one
//! wrote), through the same stages as a delete (`items::delete_write`, `aliases`, `changelog`),
//! one batch per item with its expiry index entry's removal. jobs/sweeper.rs runs it.

use crate::backend::{Backend, Direction, Expect, Key, Reader, WriteBatch, WriteOp};
use crate::encoding::layout;
use crate::model::error::{Error, StorageError};
use crate::write::commit::Db;
use crate::write::plan::Plan;
use crate::write::stages::aliases::stage as alias_stage;
use crate::write::stages::changelog::log_changes;
use crate::write::stages::items::delete_write;
use pathdb_keys::KeyPath;

/// Index entries handled per sweep.
pub(crate) const SWEEP_BATCH: usize = 1000;

/// Removes up to `limit` items expired now, each in a batch of its own with its change-log
/// entry (waking its group's feeds); returns how many index entries it handled.
///
/// # Errors
/// Storage failures.
pub(crate) fn sweep<B: Backend>(db: &Db<B>, limit: usize) -> Result<usize, Error> {
    let now = db.now();
    let settings = db.settings();
    let reader = db.backend.reader()?;
    let entries = reader.scan(
        layout::SYSTEM_PARTITION,
        &layout::expired_range(now),
        Direction::Forward,
        limit,
    )?;
    let handled = entries.len();
    for (sort, _) in entries {
        let index_key = Key {
            partition: layout::SYSTEM_PARTITION.to_vec(),
            sort,
        };
        let remove_entry = WriteOp::Delete {
            key: index_key.clone(),
            expect: None,
        };
        let Some((expires_at, item_key)) = layout::parse_expiry_key(&index_key.sort) else {
            db.send(WriteBatch {
                ops: vec![remove_entry],
            })?;
            continue;
        };
        let stored = reader.get(&item_key)?;
        // Only if the item still carries this expiry: a later write may have changed it.
        let Some(record) = stored.as_ref().filter(|r| r.expires_at == Some(expires_at)) else {
            // The entry is stale for the item as read, so it goes, but only if the item is
            // still as read: a put that committed since may have set this same expiry again
            // (same time, same key) and rewritten this very entry, which it then needs.
            let check = WriteOp::Check {
                key: item_key,
                expect: Expect::as_read(stored.as_ref()),
            };
            db.send(WriteBatch {
                ops: vec![remove_entry, check],
            })?;
            continue;
        };
        let path = KeyPath::from_partition_and_sort(&item_key.partition, &item_key.sort)
            .map_err(|e| StorageError::new("corrupt expiry index entry", e))?;
        let ctx = settings.context(&reader, now);
        let mut plan = Plan::default();
        plan.push(remove_entry, &path, false);
        // A tombstone at the item's version: the path's next version continues from it.
        let expect = Expect::Version(record.version);
        let tombstone = delete_write(
            &mut plan,
            &path,
            item_key,
            record,
            record.version,
            expires_at,
            expect,
        );
        plan.push(tombstone, &path, false);
        // Its aliases expired with it (they carry its expiry): they go in this batch.
        alias_stage(&ctx, &mut plan, 0, Some((&path, record)), None)?;
        log_changes(&ctx, &mut plan.batch, &mut plan.owners, &plan.changes)?;
        // A concurrent write that replaced the item makes this fail; its own index entry
        // handles it.
        db.send(plan.batch)?;
    }
    Ok(handled)
}
