//! Stage: the change-log entry. Every commit appends, in the same batch, one entry per group it
//! changed (several if a commit's changes exceed an entry's budget), and now and then removes
//! the group's entries older than the retention window: when the store's
//! [`TrimSchedule`](crate::encoding::changelog::TrimSchedule) says
//! one may have expired, or, for a group it knows nothing of, in one commit of [`TRIM_EVERY`]. The backend numbers an entry when the
//! batch commits ([`WriteOp::Append`]), so concurrent writers never conflict over the log.

use crate::backend::{Direction, Key, Reader, Record, WriteBatch, WriteOp};
use crate::encoding::changelog::{Change, ENTRY_BUDGET};
use crate::encoding::layout;
use crate::encoding::log_entry::EntryWriter;
use crate::model::error::Error;
use crate::namespaces::definitions::group_logged;
use crate::write::plan::{Context, Plan, PlannedChange};
use pathdb_keys::KeyPath;

/// Of the commits to a group whose oldest entry's time the store has not read, one in this many
/// reads it and removes expired entries (a `Query` on DynamoDB; every commit paying it would be
/// waste).
const TRIM_EVERY: u64 = 8;
/// The keyed hash that spreads trimming over commits and groups.
static TRIM_HASHER: std::sync::LazyLock<std::collections::hash_map::RandomState> =
    std::sync::LazyLock::new(std::collections::hash_map::RandomState::new);
/// Expired entries removed per trim, at most.
const TRIM_BATCH: usize = 16;

/// Appends the plan's changes to the change log (the last stage: it logs what the others
/// decided). Its operations are never the caller's conflict: an append is numbered at commit,
/// and two commits removing the same expired entries just plan again.
pub(crate) fn stage<R: Reader + ?Sized>(
    ctx: &Context<'_, R>,
    plan: &mut Plan,
) -> Result<(), Error> {
    let logged_from = plan.owners.len();
    log_changes(ctx, &mut plan.batch, &mut plan.owners, &plan.changes)?;
    plan.generated
        .resize(plan.generated.len() + plan.owners.len() - logged_from, true);
    Ok(())
}

/// Adds to `batch` the log entries for `changes` (in order, grouped by group) and, now and then,
/// the removal of expired entries. `owners` gets one path per added operation.
pub(crate) fn log_changes<R: Reader + ?Sized>(
    ctx: &Context<'_, R>,
    batch: &mut WriteBatch,
    owners: &mut Vec<KeyPath>,
    changes: &[PlannedChange],
) -> Result<(), Error> {
    let now = ctx.now;
    let mut groups: Vec<(Vec<u8>, Vec<&PlannedChange>)> = Vec::new();
    let definitions = ctx.definitions()?;
    // A group whose namespace keeps no change log gets no entry (and no trimming: it appends
    // nothing that could expire).
    for change in changes
        .iter()
        .filter(|c| group_logged(definitions, c.change.key()))
    {
        let partition = change.change.key().partition_key();
        match groups.iter_mut().find(|(p, _)| *p == partition) {
            Some((_, list)) => list.push(change),
            None => groups.push((partition, vec![change])),
        }
    }
    let commit = ctx.commit;
    for (partition, list) in groups {
        let trim = match ctx.trims.due(&partition) {
            Some(due) => now >= due,
            // One commit in TRIM_EVERY per group, chosen by a hash with a per-process random key
            // rather than by the commit counter alone: a counter shared by the groups would trim
            // a group whose writes always land on the same residue never.
            None => std::hash::BuildHasher::hash_one(&*TRIM_HASHER, (commit, &partition))
                .is_multiple_of(TRIM_EVERY),
        };
        let owner = list[0].change.key().clone();
        let mut entries: Vec<Vec<u8>> = Vec::new();
        let mut entry = EntryWriter::new(ctx.compact_log);
        let mut size = 0;
        for planned in list {
            // The before image goes in the change's own record when both fit one entry (an
            // entry must fit a DynamoDB item); beyond, the record says there was one.
            let image = planned
                .before
                .as_ref()
                .map_or(0, |item| item.value.as_str().len() + 96);
            let change = change_size(&planned.change);
            let fits = change + image <= ENTRY_BUDGET;
            let bytes = change + if fits { image } else { 0 };
            if !entry.is_empty() && size + bytes > ENTRY_BUDGET {
                let next = EntryWriter::new(ctx.compact_log);
                entries.push(std::mem::replace(&mut entry, next).finish(false));
                size = 0;
            }
            size += bytes;
            entry.push(&planned.change, planned.before.as_ref(), fits);
        }
        entries.push(entry.finish(true));
        for value in entries {
            batch.ops.push(WriteOp::Append {
                log: layout::change_log(&partition),
                record: Record {
                    version: 1,
                    created_at: now,
                    modified_at: now,
                    expires_at: None,
                    value,
                },
            });
            owners.push(owner.clone());
        }
        let room = ctx.max_batch_ops.saturating_sub(batch.ops.len());
        if trim && room > 0 {
            trim_expired(ctx, batch, owners, &partition, &owner, room.min(TRIM_BATCH))?;
        }
    }
    Ok(())
}

/// Adds the removal of up to `most` expired entries of the log of `partition`, and tells the
/// store's [`TrimSchedule`](crate::encoding::changelog::TrimSchedule) what the read showed.
fn trim_expired<R: Reader + ?Sized>(
    ctx: &Context<'_, R>,
    batch: &mut WriteBatch,
    owners: &mut Vec<KeyPath>,
    partition: &[u8],
    owner: &KeyPath,
    most: usize,
) -> Result<(), Error> {
    let retention = ctx.change_retention_micros();
    let horizon = ctx.now.saturating_sub(retention);
    let oldest = ctx.reader.scan(
        partition,
        &layout::change_range(1),
        Direction::Forward,
        most,
    )?;
    let mut removed = 0;
    let mut kept = None;
    for (sort, record) in oldest {
        if record.created_at >= horizon {
            kept = Some(record.created_at);
            break;
        }
        batch.ops.push(WriteOp::Delete {
            key: Key {
                partition: partition.to_vec(),
                sort,
            },
            expect: None,
        });
        owners.push(owner.clone());
        removed += 1;
    }
    match (removed, kept) {
        // The oldest entry left expires first. Should this batch not commit, the entries it
        // would have removed wait until then: removal is storage upkeep, never what a feed
        // relies on (feeds check an entry's age themselves).
        (_, Some(oldest)) => ctx.trims.set(partition, oldest.saturating_add(retention)),
        // An empty log: this batch's own entry, or a later one, will be the oldest.
        (0, None) => ctx.trims.set(partition, ctx.now.saturating_add(retention)),
        // Expired entries up to the read's end: more may follow; read again soon.
        _ => ctx.trims.forget(partition),
    }
    Ok(())
}

fn change_size(change: &Change) -> usize {
    match change {
        Change::Put(item) => item.value.as_str().len() + 128 + 2 * encoded_len(&item.path),
        Change::Delete { path, .. } => 64 + 2 * encoded_len(path),
    }
}

/// The length of `path`'s binary key, counted as the encoder writes it, without a buffer.
fn encoded_len(path: &KeyPath) -> usize {
    struct Count(usize);
    impl pathdb_keys::Sink for Count {
        fn put(&mut self, _: u8) {
            self.0 += 1;
        }
        fn put_slice(&mut self, bytes: &[u8]) {
            self.0 += bytes.len();
        }
        fn written(&self) -> usize {
            self.0
        }
    }
    let mut count = Count(0);
    path.encode_into(&mut count);
    count.0
}

#[cfg(test)]
mod tests {
    use super::encoded_len;
    use pathdb_keys::KeyPath;

    /// The count is the encoding's length for every kind of segment, on each of the encoder's
    /// paths (short integer and string paths, long ones, UUIDs, bytes, descending ids).
    #[test]
    fn the_count_is_the_encodings_length() {
        let long = format!("/a-{}/b-1/c-2/d-3/e-4/f-5", "s".repeat(40));
        for text in [
            "/a-1",
            "/user-7/post-1234",
            "/bench-1/item-1",
            "/user-4c9d36e5-6b19-4e6a-828c-226ed667458a/post-1234/comment-1678901234/react-42",
            "/t-~AAEC/u-!5/v-!abc/w-%31x",
            "/a-1/b-2/c-3/d-4/e-5/f-6/g-7/h-8/i-9",
            long.as_str(),
        ] {
            let path: KeyPath = text.parse().expect("a path");
            assert_eq!(encoded_len(&path), path.encode().len(), "{text}");
        }
    }
}
