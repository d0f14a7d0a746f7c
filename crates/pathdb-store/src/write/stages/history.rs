//! Stage: history revisions. A put of an item whose namespace keeps history (or that asks for it)
//! also writes the version as a revision (`ff` + item key + version, encoding/layout.rs), and
//! removes the revisions beyond the retention. Revisions outlive their item.

use crate::backend::{Direction, Key, Reader, WriteOp};
use crate::encoding::layout;
use crate::encoding::limits::revision_key_fits;
use crate::model::error::Error;
use crate::write::plan::{Context, Plan, Written};

/// Plans the revisions of the put in `written`, if it keeps history.
pub(crate) fn stage<R: Reader + ?Sized>(
    ctx: &Context<'_, R>,
    plan: &mut Plan,
    written: &Written<'_>,
) -> Result<(), Error> {
    let Some((index, options)) = written.put else {
        return Ok(());
    };
    let definitions = ctx.definitions()?;
    let Some(retention) = ctx
        .namespaces
        .retention(definitions, &written.path, options.history)
    else {
        return Ok(());
    };
    let Some(record) = plan.put_record(index).cloned() else {
        return Ok(());
    };
    revision_key_fits(&written.path, written.key.sort.len())?;
    for old in old_revisions(ctx.reader, &written.key, retention)? {
        let delete = WriteOp::Delete {
            key: old,
            expect: None,
        };
        plan.push(delete, &written.path, written.fresh);
    }
    let revision = WriteOp::Put {
        key: layout::revision_key(&written.key, record.version),
        record,
        expect: None,
    };
    plan.push(revision, &written.path, written.fresh);
    Ok(())
}

/// Revisions beyond the newest `retention - 1` (the put adds one more).
fn old_revisions<R: Reader + ?Sized>(
    reader: &R,
    key: &Key,
    retention: u32,
) -> Result<Vec<Key>, Error> {
    let keep = retention.saturating_sub(1) as usize;
    // Trimming on every write keeps the excess at one revision, so reading a few beyond `keep`
    // finds it. A full read means the retention was lowered since the last write: read them all,
    // or the excess would shrink by only a batch per write.
    let range = layout::revision_range(key);
    let mut entries = reader.scan(&key.partition, &range, Direction::Forward, keep + 16)?;
    if entries.len() == keep + 16 {
        entries = reader.scan(&key.partition, &range, Direction::Forward, usize::MAX)?;
    }
    Ok(entries
        .into_iter()
        .filter(|(sort, _)| layout::is_revision_of(key, sort))
        .skip(keep)
        .map(|(sort, _)| Key {
            partition: key.partition.clone(),
            sort,
        })
        .collect())
}
