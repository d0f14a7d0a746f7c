//! The write of one record of the system partition (a namespace definition, a role, an issued
//! token): over the record read, conditional on it, again on a concurrent change. A delete
//! leaves a tombstone whose version the next write continues from, as an item's does, so a
//! version is never used twice for one key and an `If-Match` held from before a delete never
//! matches what is written after it.

use crate::backend::Key;
use crate::backend::{Backend, Expect, Reader, Record, WriteBatch, WriteOp};
use crate::encoding::record::tombstone;
use crate::model::error::{Condition, Error};
use crate::write::commit::{Attempt, Db};

/// What to make of the live record (`None`: none is live).
pub(crate) enum Next {
    /// Store this value.
    Put(Vec<u8>),
    /// Delete the record (nothing to do if none is live).
    Delete,
    /// Leave it as it is.
    Keep,
}

/// What a [`write`] adds to its batch, from the reader and the live records before and after.
pub(crate) type Extra<'a> =
    dyn FnMut(&dyn Reader, Option<&Record>, Option<&Record>) -> Result<Vec<WriteOp>, Error> + 'a;

/// The live records before and after a [`write`].
pub(crate) struct Written {
    /// What was live before (for a delete: what it removed).
    pub(crate) before: Option<Record>,
    /// What is live after.
    pub(crate) after: Option<Record>,
}

/// Writes the record under `key` as `next` says from the live one, if `condition` holds for it
/// (else the error `refused` makes of the condition and the live version), with the `extra`
/// operations it asks for from the reader and the records before and after, in one batch.
///
/// # Errors
/// `refused`'s error, or what `next` or `extra` answer, or storage failures.
pub(crate) fn write<B: Backend>(
    db: &Db<B>,
    key: &Key,
    condition: Option<Condition>,
    refused: &dyn Fn(Condition, Option<u64>) -> Error,
    next: &mut dyn FnMut(Option<&Record>) -> Result<Next, Error>,
    extra: &mut Extra<'_>,
) -> Result<Written, Error> {
    db.until_committed(|| {
        let now = db.now();
        let reader = db.backend.reader()?;
        let stored = reader.get(key)?;
        let live = stored.as_ref().filter(|r| !r.value.is_empty());
        if let Some(condition) = condition
            && !condition.holds(live.map(|r| r.version))
        {
            return Err(refused(condition, live.map(|r| r.version)));
        }
        let version = stored.as_ref().map_or(1, |r| r.version + 1);
        let record = match (next(live)?, live) {
            (Next::Put(value), _) => Record {
                version,
                created_at: live.map_or(now, |r| r.created_at),
                modified_at: now,
                expires_at: None,
                value,
            },
            (Next::Delete, Some(r)) => tombstone(r, version, now),
            (Next::Delete | Next::Keep, _) => {
                let same = Written {
                    before: live.cloned(),
                    after: live.cloned(),
                };
                return Ok(Attempt::Done(same));
            }
        };
        let after = (!record.value.is_empty()).then(|| record.clone());
        let mut ops = extra(&reader, live, after.as_ref())?;
        ops.push(WriteOp::Put {
            key: key.clone(),
            record,
            expect: Some(Expect::as_read(stored.as_ref())),
        });
        let written = Written {
            before: live.cloned(),
            after,
        };
        Ok(Attempt::Send(WriteBatch { ops }, written))
    })
}
