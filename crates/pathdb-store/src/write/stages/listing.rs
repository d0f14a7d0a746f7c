//! Stage: a listing's check ([`TxOp::CheckList`](crate::write::ops::TxOp::CheckList)). A transaction that
//! decided on a listing ("fewer than 3 open orders") commits only if nothing in that listing's
//! range changed after the listing, so that no phantom gets in (docs/transactions.md).
//!
//! The stage reads the change log of the listing's group after the listing's token. A change in
//! the listing's range fails the plan with [`Error::ListChanged`], the caller's failed condition.
//! On a backend whose listing tokens start a margin back (DynamoDB, docs/changes.md), a change in
//! the margin that the listing shows ([`ListCheck::seen`](crate::read::list_check::ListCheck::seen)) is not one:
//! of each path changed in the margin, the listing must show the last change (an earlier one
//! is superseded), and every change after the margin counts.
//! Otherwise the batch checks that the log has no entry after the newest one read: a commit to
//! the group between this read and the batch's own commit fails the batch, and the store plans
//! it again, reading the log on from where it is. So a write elsewhere in the group costs a new
//! plan, never a failed condition, and no write in the range gets past the check.

use crate::backend::{Expect, Key, Reader, WriteOp, log_entry};
use crate::encoding::changelog::{Change, ChangeToken, MAX_CHANGES_LIMIT};
use crate::encoding::layout;
use crate::feed::reader;
use crate::feed::reader::Filtered;
use crate::model::error::Error;
use crate::namespaces::definitions::{from_record, no_change_log, no_change_log_error};
use crate::namespaces::versions::SchemaVersions;
use crate::read::list::migrations;
use crate::read::list_check::ListCheck;
use crate::write::ops::TxResult;
use crate::write::plan::{Context, Plan};
use pathdb_keys::KeyPath;
use std::collections::HashMap;

/// Plans the check of operation `index`, `check`.
pub(crate) fn stage<R: Reader + ?Sized>(
    ctx: &Context<'_, R>,
    plan: &mut Plan,
    index: usize,
    check: &ListCheck,
) -> Result<(), Error> {
    let token = check.changes_token;
    // A listing token's margin: the entries before its own, which the listing may show.
    let margin_end = token.listing.then_some(token.entry);
    let changed = |path: &KeyPath| Error::ListChanged {
        index,
        prefix: check.range.prefix.clone(),
        path: path.clone(),
    };
    // The last change of each path in the margin: what the listing shows of a path must be
    // at least that (an earlier change of it is superseded).
    let mut margin: HashMap<KeyPath, Change> = HashMap::new();
    let mut since = token;
    let definitions = ctx.definitions()?;
    no_change_log(definitions, &check.range.prefix)?;
    loop {
        let (page, at_end) = reader::read_to(
            ctx.reader,
            ctx.tokens,
            ctx.change_retention,
            ctx.now,
            &check.range.prefix,
            Some(&since),
            MAX_CHANGES_LIMIT,
            check.filter.as_ref().map(|filter| Filtered {
                filter,
                readable: check.readable.as_ref(),
                migrations: migrations(definitions, &SchemaVersions::newest()),
            }),
        )?;
        for entry in page.changes {
            if !check.range.covers(entry.change.key()) {
                continue;
            }
            // With a filter, only an item's own changes count: a node of a children listing
            // never matches one.
            if check.filter.is_some()
                && check.range.children_only
                && entry.change.key().len() > check.range.prefix.len() + 1
            {
                continue;
            }
            if margin_end.is_some_and(|end| entry_of(&entry.token) < end) {
                // A leave (the read made it a delete) is shown as a delete is: by absence.
                margin.insert(entry.change.key().clone(), entry.change);
            } else {
                return Err(changed(entry.change.key()));
            }
        }
        since = page.next_token;
        if at_end {
            break;
        }
    }
    if let Some(unseen) = margin.values().find(|c| !check.shows(c)) {
        return Err(changed(unseen.key()));
    }
    // `since` is now the position after the newest entry read: that the next entry is still
    // absent at commit is the batch's condition. An entry the batch appends itself is numbered
    // at commit, after this check (backend/mod.rs, `WriteOp::Check`).
    let partition = check.range.prefix.partition_key();
    let log = layout::change_log(&partition);
    let next = since.entry.max(1);
    let write = WriteOp::Check {
        key: Key {
            partition,
            sort: log_entry(&log.sort, next),
        },
        expect: Expect::Absent,
    };
    plan.results.push(TxResult::Checked);
    plan.found.push(false);
    // Generated: its failure is not the caller's (nothing in range is known to have changed),
    // so the store plans again.
    plan.push(write, &check.range.prefix, true);
    // The log must be kept until the commit: a definition that stops it in between (on this
    // server, or on another whose copy this one has not read yet) fails the batch, and the
    // plan made again refuses the check.
    let namespace = check.range.prefix.group().namespace();
    let key = layout::namespace_key(namespace.as_str());
    let stored = ctx.reader.get(&key)?;
    if let Some(record) = &stored
        && from_record(namespace.as_str(), record)?.is_some_and(|d| !d.definition.keeps_changes())
    {
        return Err(no_change_log_error(&check.range.prefix));
    }
    let fence = WriteOp::Check {
        key,
        expect: Expect::as_read(stored.as_ref()),
    };
    plan.push(fence, &check.range.prefix, true);
    Ok(())
}

/// The log entry of the change that `after`, the position right after it, follows.
fn entry_of(after: &ChangeToken) -> u64 {
    if after.offset > 0 {
        after.entry
    } else {
        after.entry.saturating_sub(1)
    }
}
