//! Subtree delete, move and copy ([`Store::delete_subtree`](crate::store::Store::delete_subtree)
//! and its siblings): every live item at or below a path, relocated by the write pipeline's
//! `relocate` stage (write/stages/relocate.rs), a batch at a time.
//!
//! A subtree that fits in one batch (the backend's operations per write, and [`BATCH_BYTES`]) is
//! done in one atomic write. A larger one is a job: its record in the system partition
//! (encoding/layout.rs) holds the source key done last and the count so far, and every batch
//! updates it in the same atomic write as the items it relocates, conditional on the version read.
//! So at every moment each item is at its source, its target or both; a crash leaves the record,
//! and running the same operation again continues after the last batch that committed. Two runs of
//! one job take turns (the record's version) instead of doing it twice.
//!
//! Each batch reads the sources after the cursor, the targets' stored records and the two
//! ranges of revisions, each with one backend call (a few on DynamoDB), never one read per
//! item.

use crate::backend::{Backend, Direction, Expect, Key, Reader, Record, WriteOp};
use crate::encoding::alias::is_alias;
use crate::encoding::layout;
use crate::encoding::limits::checked_item_key;
use crate::encoding::record::{is_live, visible};
use crate::model::error::Error;
use crate::model::error::StorageError;
use crate::model::item::Timestamp;
use crate::write::commit::{Db, Sent};
use crate::write::pipeline::{backoff, plan_subtree};
use crate::write::stages::relocate::{Relocation, Source, Target};
use pathdb_keys::KeyPath;
use std::collections::HashMap;
use std::ops::Bound;

/// Items one batch relocates at most, whatever the backend takes: a batch is held in memory,
/// and a job reports progress after each.
const BATCH_ITEMS: usize = 1000;
/// Bytes of values (items and their revisions) one batch writes at most, before the change
/// log repeats them: DynamoDB takes 4 MB per transaction.
pub(crate) const BATCH_BYTES: usize = 1 << 20;
/// Entries read per scan of a subtree.
const SCAN_CHUNK: usize = 256;

/// What a subtree operation does.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum SubtreeOp {
    /// Delete every live item (each leaves its tombstone; history stays).
    Delete,
    /// Re-key every live item under another path, with its history; the sources become
    /// tombstones.
    Move,
    /// Write every live item, with its history, under another path too.
    Copy,
}

impl SubtreeOp {
    /// `delete`, `move` or `copy`.
    pub fn as_str(self) -> &'static str {
        match self {
            SubtreeOp::Delete => "delete",
            SubtreeOp::Move => "move",
            SubtreeOp::Copy => "copy",
        }
    }

    /// What the operation did to an item, as its answers name the count: `deleted`, `moved`
    /// or `copied`.
    pub fn past_tense(self) -> &'static str {
        match self {
            SubtreeOp::Delete => "deleted",
            SubtreeOp::Move => "moved",
            SubtreeOp::Copy => "copied",
        }
    }

    /// The byte that names the operation in its job record's key.
    fn code(self) -> u8 {
        match self {
            SubtreeOp::Delete => b'd',
            SubtreeOp::Move => b'm',
            SubtreeOp::Copy => b'c',
        }
    }
}

/// A subtree delete, move or copy: what to run, or what an unfinished job was asked to do.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SubtreeJob {
    /// What to do.
    pub op: SubtreeOp,
    /// The subtree: this path's item, if any, and every item below it.
    pub from: KeyPath,
    /// Where a move or copy goes (`from`'s elements are replaced by these); `None` for a delete.
    pub to: Option<KeyPath>,
}

impl SubtreeJob {
    /// Delete `path`'s subtree.
    pub fn delete(path: KeyPath) -> SubtreeJob {
        SubtreeJob {
            op: SubtreeOp::Delete,
            from: path,
            to: None,
        }
    }

    /// Move `from`'s subtree to `to`.
    pub fn relocate(from: KeyPath, to: KeyPath) -> SubtreeJob {
        SubtreeJob {
            op: SubtreeOp::Move,
            from,
            to: Some(to),
        }
    }

    /// Copy `from`'s subtree to `to`.
    pub fn copy(from: KeyPath, to: KeyPath) -> SubtreeJob {
        SubtreeJob {
            op: SubtreeOp::Copy,
            from,
            to: Some(to),
        }
    }

    /// The request's own errors, before anything is read.
    fn validate(&self) -> Result<(), Error> {
        let bad = |why: String| Err(Error::InvalidRequest(why));
        checked_item_key(&self.from)?;
        if self.from.last().id().is_none() {
            return bad(format!("{}: a subtree's path ends with an id", self.from));
        }
        let to = match (&self.op, &self.to) {
            (SubtreeOp::Delete, None) => return Ok(()),
            (SubtreeOp::Delete, Some(_)) => return bad("a delete has no destination".into()),
            (_, None) => return bad(format!("a {} needs a destination", self.op.as_str())),
            (_, Some(to)) => to,
        };
        checked_item_key(to)?;
        if to.last().id().is_none() {
            return bad(format!("{to}: a destination ends with an id"));
        }
        let from = &self.from;
        if from.is_prefix_of(to) {
            return bad(format!(
                "{to} is inside {from}: it cannot be its destination"
            ));
        }
        if to.is_prefix_of(from) {
            return bad(format!(
                "{from} is inside {to}: it cannot be its destination"
            ));
        }
        // Typed paths can differ where their keys overlap (a bytes id can alias another type's
        // key, docs/key-format.md): the scans are by key, so the key ranges must be apart too.
        if from.partition_key() == to.partition_key() {
            let source = layout::subtree_items(from);
            let target = layout::subtree_items(to);
            if source.contains(&to.sort_key()) || target.contains(&from.sort_key()) {
                return bad(format!("the keys of {from} and {to} overlap"));
            }
        }
        Ok(())
    }

    fn key(&self) -> Key {
        layout::subtree_job_key(self.op.code(), &self.from, self.to.as_ref())
    }
}

/// An unfinished job ([`Store::subtree_jobs`](crate::store::Store::subtree_jobs)): a large subtree
/// operation that stopped between batches. Running its [`SubtreeJob`] again finishes it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct PendingJob {
    /// What it was asked to do.
    pub job: SubtreeJob,
    /// Items done so far.
    pub done: u64,
    /// When it started.
    pub started_at: Timestamp,
    /// When its last batch committed.
    pub updated_at: Timestamp,
}

/// A job record's value.
#[derive(serde::Serialize, serde::Deserialize)]
struct JobState {
    op: String,
    from: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    to: Option<String>,
    /// The sort key of the last source item done, hex.
    cursor: String,
    done: u64,
    started_at: i64,
}

/// A job record as read.
struct Stored {
    version: u64,
    cursor: Vec<u8>,
    done: u64,
    started_at: i64,
}

fn corrupt(e: impl std::error::Error + Send + Sync + 'static) -> Error {
    StorageError::new("corrupt subtree job record", e).into()
}

fn read_job(record: &Record) -> Result<JobState, Error> {
    serde_json::from_slice(&record.value).map_err(corrupt)
}

/// The unfinished jobs, oldest key first.
pub(crate) fn pending<R: Reader>(reader: &R) -> Result<Vec<PendingJob>, Error> {
    let records = reader.scan(
        layout::SYSTEM_PARTITION,
        &layout::subtree_job_range(),
        Direction::Forward,
        usize::MAX,
    )?;
    let path = |text: &str| text.parse::<KeyPath>().map_err(corrupt);
    records
        .into_iter()
        .map(|(_, record)| {
            let state = read_job(&record)?;
            let op = match state.op.as_str() {
                "delete" => SubtreeOp::Delete,
                "move" => SubtreeOp::Move,
                "copy" => SubtreeOp::Copy,
                other => {
                    return Err(StorageError::msg(format!("unknown subtree job {other:?}")).into());
                }
            };
            Ok(PendingJob {
                job: SubtreeJob {
                    op,
                    from: path(&state.from)?,
                    to: state.to.as_deref().map(path).transpose()?,
                },
                done: state.done,
                started_at: Timestamp(state.started_at),
                updated_at: Timestamp(record.modified_at),
            })
        })
        .collect()
}

/// Runs subtree jobs against one store's database.
pub(crate) struct Relocator<'a, B> {
    /// The database.
    pub(crate) db: &'a Db<B>,
}

impl<B: Backend> Relocator<'_, B> {
    /// Runs `job` (or the rest of it, if it was started before) to the end; returns the items it
    /// did in all, calling `progress` with that count after each batch.
    pub(crate) fn run(
        &self,
        job: &SubtreeJob,
        progress: &mut dyn FnMut(u64),
    ) -> Result<u64, Error> {
        job.validate()?;
        let job_key = job.key();
        let mut attempt = 0u32;
        let settings = self.db.settings();
        loop {
            let reader = self.db.backend.reader()?;
            let now = self.db.now();
            let stored = match reader.get(&job_key)? {
                Some(record) => {
                    let state = read_job(&record)?;
                    Some(Stored {
                        version: record.version,
                        cursor: hex::decode(&state.cursor).map_err(corrupt)?,
                        done: state.done,
                        started_at: state.started_at,
                    })
                }
                None => None,
            };
            let (mut items, mut exhausted) =
                self.read_batch(&reader, job, stored.as_ref().map(|s| &s.cursor[..]), now)?;
            if stored.is_none() {
                // A new job: the source first (a move already done answers that), then the
                // whole destination, not only where this batch goes.
                if items.is_empty() {
                    return Err(Error::NothingBelow {
                        operation: job.op.as_str(),
                        path: job.from.clone(),
                    });
                }
                if let Some(to) = &job.to {
                    check_empty(&reader, to, now)?;
                }
            }
            // Shrink the batch until its plan fits the backend's write.
            let max = settings.max_batch_ops;
            let plan = loop {
                let done = stored.as_ref().map_or(0, |s| s.done) + items.len() as u64;
                let record = match (&stored, exhausted) {
                    // All of it in one atomic write: no job record at all.
                    (None, true) => None,
                    (_, true) => Some(None),
                    (_, false) => Some(Some(JobState {
                        op: job.op.as_str().to_owned(),
                        from: job.from.to_string(),
                        to: job.to.as_ref().map(ToString::to_string),
                        cursor: hex::encode(items.last().map_or(&[][..], |i| &i.key.sort[..])),
                        done,
                        started_at: stored.as_ref().map_or(now, |s| s.started_at),
                    })),
                };
                let job_op = record
                    .map(|state| {
                        job_write(&job_key, stored.as_ref().map(|s| s.version), state, now)
                    })
                    .transpose()?;
                let ctx = settings.context(&reader, now);
                let plan = plan_subtree(&ctx, &items, job_op.map(|op| (op, &job.from)))?;
                let over = plan.batch.ops.len().saturating_sub(max);
                // Revisions and the log's copies come on top of the bytes read_batch counted.
                let heavy = items.iter().map(Relocation::bytes).sum::<usize>() > 3 * BATCH_BYTES;
                if over == 0 && (!heavy || items.len() <= 1) {
                    break plan;
                }
                if over == 0 {
                    items.truncate(items.len() / 2);
                    exhausted = false;
                    continue;
                }
                if items.len() <= 1 {
                    return Err(Error::InvalidRequest(format!(
                        "{} and its history need {} storage operations, more than the backend's {max} in one write",
                        items.first().map_or(&job.from, |i| &i.path),
                        plan.batch.ops.len()
                    )));
                }
                let per_item = items.iter().map(Relocation::ops).sum::<usize>() / items.len();
                let keep = items.len() - over.div_ceil(per_item.max(1)).clamp(1, items.len() - 1);
                items.truncate(keep);
                exhausted = false;
            };
            let count = items.len() as u64;
            match self.db.send(plan.batch)? {
                Sent::Committed => {
                    attempt = 0;
                    let done = stored.as_ref().map_or(0, |s| s.done) + count;
                    progress(done);
                    if exhausted {
                        return Ok(done);
                    }
                }
                // A concurrent write to an item, a target or the job record (another run of
                // the same job): read again and go on from what committed.
                Sent::Changed { .. } => {
                    attempt += 1;
                    backoff(attempt);
                }
            }
        }
    }

    /// The next batch of live source items after `cursor`, with their targets; and whether
    /// they are the last.
    fn read_batch<R: Reader>(
        &self,
        reader: &R,
        job: &SubtreeJob,
        cursor: Option<&[u8]>,
        now: i64,
    ) -> Result<(Vec<Relocation>, bool), Error> {
        let from = &job.from;
        let partition = from.partition_key();
        let mut range = layout::subtree_items(from);
        if let Some(cursor) = cursor {
            range.start = Bound::Excluded(cursor.to_vec());
        }
        // Each item costs at least this many operations in the batch.
        // An alias costs a write at the source and one at the target.
        let aliases = 2 * self.db.namespaces.most_aliases();
        let cost = if job.to.is_some() { 2 } else { 1 } + aliases;
        let want = BATCH_ITEMS
            .min(self.db.backend.max_batch_ops() / cost)
            .max(1);
        let source = match job.op {
            SubtreeOp::Copy => Source::Keep,
            SubtreeOp::Delete | SubtreeOp::Move => Source::Remove,
        };
        let mut items: Vec<Relocation> = Vec::new();
        let mut bytes = 0;
        // One past the batch, to know whether it is the last.
        let mut extra = false;
        'scan: loop {
            let entries = reader.scan(&partition, &range, Direction::Forward, SCAN_CHUNK)?;
            let full = entries.len() == SCAN_CHUNK;
            let mut last = None;
            for (sort, record) in entries {
                last = Some(sort.clone());
                // An alias moves with its item, never by itself (aliases/template.rs).
                if !is_live(&record, now) || is_alias(&record.value) {
                    continue;
                }
                let path = match from.with_sort_key(&sort) {
                    Ok(path) if from.covers(&path) => path,
                    // Another tool's row (DynamoDB), or a key aliasing the subtree's.
                    _ => continue,
                };
                if items.len() == want || (!items.is_empty() && bytes >= BATCH_BYTES) {
                    extra = true;
                    break 'scan;
                }
                bytes += record.value.len();
                items.push(Relocation {
                    path,
                    key: Key {
                        partition: partition.clone(),
                        sort,
                    },
                    record,
                    source,
                    target: None,
                });
            }
            match last {
                Some(last) if full => range.start = Bound::Excluded(last),
                _ => break,
            }
        }
        if let Some(to) = &job.to
            && !items.is_empty()
        {
            self.add_targets(reader, from, to, &mut items, now)?;
        }
        Ok((items, !extra))
    }

    /// Reads where each item goes: the target's stored record (which holds the last version the
    /// path used, jobs/upgrade.rs), and the item's revisions.
    fn add_targets<R: Reader>(
        &self,
        reader: &R,
        from: &KeyPath,
        to: &KeyPath,
        items: &mut [Relocation],
        now: i64,
    ) -> Result<(), Error> {
        let mut targets = Vec::with_capacity(items.len());
        for item in items.iter() {
            let mut elements = to.elements().to_vec();
            elements.extend_from_slice(&item.path.elements()[from.len()..]);
            let path = KeyPath::from_elements(elements)
                .map_err(|e| Error::InvalidRequest(format!("{}: {e}", item.path)))?;
            targets.push((checked_item_key(&path)?, path));
        }
        let keys: Vec<Key> = targets.iter().map(|(key, _)| key.clone()).collect();
        let stored = reader.get_many(&keys)?;
        let mut revisions = revisions_of(reader, items.iter().map(|i| &i.key))?;
        for ((item, (key, path)), stored) in items.iter_mut().zip(targets).zip(stored) {
            if visible(stored.clone(), now).is_some() {
                return Err(Error::DestinationNotEmpty {
                    to: to.clone(),
                    item: path,
                });
            }
            item.target = Some(Target {
                // A used path keeps its last version in its record (jobs/upgrade.rs).
                floor: stored.as_ref().map_or(0, |r| r.version),
                path,
                key,
                stored,
                revisions: revisions.remove(&item.key.sort).unwrap_or_default(),
            });
        }
        Ok(())
    }
}

/// Revisions, newest first, by their item's sort key.
type Revisions = HashMap<Vec<u8>, Vec<(Vec<u8>, Record)>>;

/// The revisions of the items at `keys` (one partition), with one scan over the span of keys
/// they cover; other items' revisions in that span are skipped.
fn revisions_of<'k, R: Reader>(
    reader: &R,
    keys: impl Iterator<Item = &'k Key> + Clone,
) -> Result<Revisions, Error> {
    let sorts = keys.clone().map(|k| &k.sort);
    let (Some(first), Some(last), Some(key)) =
        (sorts.clone().min(), sorts.max(), keys.clone().next())
    else {
        return Ok(HashMap::new());
    };
    let mut found: Revisions = keys.map(|k| (k.sort.clone(), Vec::new())).collect();
    let range = layout::revisions_between(first, last);
    for (sort, record) in reader.scan(&key.partition, &range, Direction::Forward, usize::MAX)? {
        if let Some(list) = layout::revision_item_sort(&sort).and_then(|item| found.get_mut(item)) {
            list.push((sort, record));
        }
    }
    Ok(found)
}

/// Fails with [`Error::DestinationNotEmpty`] if a live item is at or below `to`.
fn check_empty<R: Reader>(reader: &R, to: &KeyPath, now: i64) -> Result<(), Error> {
    let partition = to.partition_key();
    let mut range = layout::subtree_items(to);
    loop {
        let entries = reader.scan(&partition, &range, Direction::Forward, SCAN_CHUNK)?;
        let full = entries.len() == SCAN_CHUNK;
        let mut last = None;
        for (sort, record) in entries {
            if is_live(&record, now)
                && let Ok(path) = to.with_sort_key(&sort)
                && to.covers(&path)
            {
                return Err(Error::DestinationNotEmpty {
                    to: to.clone(),
                    item: path,
                });
            }
            last = Some(sort);
        }
        match last {
            Some(last) if full => range.start = Bound::Excluded(last),
            _ => return Ok(()),
        }
    }
}

/// The write of a job record: `state` after this batch, or `None` when the job ends with it.
fn job_write(
    key: &Key,
    version: Option<u64>,
    state: Option<JobState>,
    now: i64,
) -> Result<WriteOp, Error> {
    let expect = Some(version.map_or(Expect::Absent, Expect::Version));
    Ok(match state {
        None => WriteOp::Delete {
            key: key.clone(),
            expect,
        },
        Some(state) => WriteOp::Put {
            key: key.clone(),
            record: Record {
                version: version.map_or(1, |v| v + 1),
                created_at: state.started_at,
                modified_at: now,
                expires_at: None,
                value: serde_json::to_vec(&state).map_err(corrupt)?,
            },
            expect,
        },
    })
}
