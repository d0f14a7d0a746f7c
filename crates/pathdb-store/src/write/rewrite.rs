//! The background rewrite of a namespace's items to its newest definition version
//! (docs/migrations.md). Reads are right without it (an item is translated from the version it
//! is stamped with), but aliases, filters, exports and the bytes a read copies are simplest
//! when every stored item is in one shape, so a definition version with migration steps starts
//! a rewrite in the batch that stores it: a record at `00 0c` + namespace (encoding/layout.rs)
//! with the version to reach, a cursor over the whole key space (the namespace of an item is
//! only known from its path) and counts.
//!
//! A step reads a page after the cursor and commits, in one batch, the items of the namespace
//! stamped older than the target, each brought forward and stamped with it (same version, same
//! times: a rewrite is no write a reader can tell, so it logs no change and keeps no
//! revision), each conditional on the item as read, with the record's new cursor and counts,
//! conditional on the record as read. A crash or a concurrent writer costs at most one step
//! again; a step whose batch fails a condition runs again from what is stored. A newer version
//! with steps starts the rewrite over, to the newer target.

use crate::backend::{Backend, Expect, Reader, Record, WriteBatch, WriteOp};
use crate::encoding::layout;
use crate::encoding::record::{Kind, classify};
use crate::encoding::stamp::{split_stored, stamped};
use crate::model::error::{Error, StorageError};
use crate::namespaces::definitions::of_path;
use crate::namespaces::migrate::OnConflict;
use crate::namespaces::rewrites::{Rewrite, read_rewrite};
use crate::write::commit::{Db, Sent};
use pathdb_keys::KeyPath;

/// Records one step reads.
const STEP_SCAN: usize = 500;
/// Items one step rewrites at most (one batch).
const STEP_WRITES: usize = 50;

/// The operation that starts (or starts over) `namespace`'s rewrite to `to`, over the record
/// `reader` shows: part of the batch that stores version `to`.
///
/// # Errors
/// Storage failures.
pub(crate) fn start_op<R: Reader + ?Sized>(
    reader: &R,
    namespace: &str,
    to: u64,
    now: i64,
) -> Result<WriteOp, Error> {
    let key = layout::rewrite_key(namespace);
    let read = reader.get(&key)?;
    Ok(WriteOp::Put {
        record: Record {
            version: read.as_ref().map_or(1, |r| r.version + 1),
            created_at: now,
            modified_at: now,
            expires_at: None,
            value: Rewrite::start(to, now).to_value(),
        },
        expect: Some(Expect::as_read(read.as_ref())),
        key,
    })
}

/// What a step did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// More to do.
    More,
    /// Nothing left (or no rewrite).
    Done,
}

/// One step of `namespace`'s rewrite.
///
/// # Errors
/// Storage failures.
pub(crate) fn step<B: Backend>(db: &Db<B>, namespace: &str) -> Result<Step, Error> {
    let reader = db.backend.reader()?;
    let Some((mut rewrite, record)) = read_rewrite(&reader, namespace)? else {
        return Ok(Step::Done);
    };
    if rewrite.done {
        return Ok(Step::Done);
    }
    let definitions = db.namespaces.current(&reader)?;
    let now = db.now();
    let after = rewrite.cursor()?;
    let page = reader.scan_all(after.as_ref(), STEP_SCAN)?;
    let mut ops = Vec::new();
    let mut last = after;
    for (key, stored) in &page {
        if ops.len() == STEP_WRITES {
            break;
        }
        last = Some(key.clone());
        if classify(key, stored, now) != Kind::Item {
            continue;
        }
        let Ok(path) = KeyPath::from_partition_and_sort(&key.partition, &key.sort) else {
            continue;
        };
        if path.last().namespace().as_str() != namespace {
            continue;
        }
        rewrite.checked += 1;
        let Some(compiled) = of_path(&definitions, &path) else {
            continue;
        };
        let (stamp, json) = split_stored(&stored.value)?;
        if stamp >= rewrite.to || compiled.newest() != rewrite.to {
            // Written at the target already, or the target is not this store's newest yet
            // (its copy of the definitions is older): leave it for a later step.
            if compiled.newest() < rewrite.to {
                return Ok(Step::More);
            }
            continue;
        }
        let json = std::str::from_utf8(json)
            .map_err(|e| StorageError::new("stored value is not UTF-8", e))?;
        let text = compiled
            .translate(&path, json, stamp, None, OnConflict::Replace)?
            .map_or_else(|| json.to_owned(), |t| t.as_str().to_owned());
        ops.push(WriteOp::Put {
            key: key.clone(),
            record: Record {
                value: stamped(rewrite.to, &text),
                ..stored.clone()
            },
            expect: Some(Expect::as_read(Some(stored))),
        });
        rewrite.rewritten += 1;
    }
    let finished = page.len() < STEP_SCAN && last.as_ref() == page.last().map(|(k, _)| k);
    rewrite.set_cursor(last.as_ref());
    rewrite.done = finished;
    ops.push(WriteOp::Put {
        key: layout::rewrite_key(namespace),
        record: Record {
            version: record.version + 1,
            modified_at: now,
            value: rewrite.to_value(),
            ..record.clone()
        },
        expect: Some(Expect::as_read(Some(&record))),
    });
    // A failed condition (a concurrent write of an item, or another server's step): the next
    // step starts again from what is stored.
    let sent = db.send(WriteBatch { ops })?;
    Ok(if finished && sent == Sent::Committed {
        Step::Done
    } else {
        Step::More
    })
}
