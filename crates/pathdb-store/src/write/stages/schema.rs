//! Stage: the namespace's schema. The value a put, create or patch decided (the patched
//! result, not the patch) must fit the JSON Schema of its namespace's definition
//! (namespaces/mod.rs); a value that does not fails the whole plan, so nothing of it is written:
//! not the item, its history, its change log entry, nor any other operation of a transaction.
//! The relocate stage asks the same of an item that a move or copy puts into another namespace
//! (`/team-3` moved to `/squad-3` becomes a `squad`).

use crate::backend::Reader;
use crate::encoding::stamp::json_of;
use crate::model::error::Error;
use crate::namespaces::definitions::check_value;
use crate::write::plan::{Context, Plan, Written};
use pathdb_keys::KeyPath;

/// Checks the value of the put in `written` (operation `index`) against its namespace's
/// schema.
pub(crate) fn stage<R: Reader + ?Sized>(
    ctx: &Context<'_, R>,
    plan: &Plan,
    index: usize,
    written: &Written<'_>,
) -> Result<(), Error> {
    let Some((at, _)) = written.put else {
        return Ok(());
    };
    match plan.put_record(at) {
        // The value in the newest version, stamped (migrate.rs).
        Some(record) => check(ctx, &written.path, index, json_of(&record.value)),
        None => Ok(()),
    }
}

/// Checks `value` (stored JSON text) for the item at `path`, operation `index`.
pub(crate) fn check<R: Reader + ?Sized>(
    ctx: &Context<'_, R>,
    path: &KeyPath,
    index: usize,
    value: &[u8],
) -> Result<(), Error> {
    check_value(ctx.definitions()?, path, index, value)
}
