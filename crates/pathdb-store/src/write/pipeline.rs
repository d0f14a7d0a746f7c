//! `plan`: the stages in their order, for one list of operations, and the limits every write
//! checks before it reads.

use crate::backend::{Reader, WriteOp};
use crate::encoding::limits::{check_expiry, check_item_size_at, check_key, checked_item_key};
use crate::model::error::Error;
use crate::write::ops::{Parent, TxOp};
use crate::write::plan::{Context, Plan};
use crate::write::stages::relocate::{self, Relocation};
use crate::write::stages::{aliases, changelog, expiry, history, ids, items, listing, schema};
use pathdb_keys::KeyPath;

/// Builds the batch for `ops` from `ctx`'s snapshot.
pub(crate) fn plan<R: Reader + ?Sized>(ctx: &Context<'_, R>, ops: &[TxOp]) -> Result<Plan, Error> {
    let mut plan = Plan::default();
    let mut ids = ids::Ids::new(ops);
    let read = items::read_named(ctx, ops)?;
    for (index, op) in ops.iter().enumerate() {
        if let TxOp::CheckList(check) = op {
            listing::stage(ctx, &mut plan, index, check)?;
            continue;
        }
        let (path, fresh) = ids.target(ctx, index, op)?;
        let written = items::stage(ctx, &mut plan, &read, op, path, fresh)?;
        schema::stage(ctx, &plan, index, &written)?;
        aliases::stage_written(ctx, &mut plan, index, &written)?;
        history::stage(ctx, &mut plan, &written)?;
        expiry::stage(ctx, &mut plan, &written);
    }
    ids.stage(ctx, &mut plan)?;
    changelog::stage(ctx, &mut plan)?;
    Ok(plan)
}

/// Builds the batch that relocates `items` (jobs/subtree.rs), with `job`, the write of the
/// operation's job record, if it has one.
pub(crate) fn plan_subtree<R: Reader + ?Sized>(
    ctx: &Context<'_, R>,
    items: &[Relocation],
    job: Option<(WriteOp, &KeyPath)>,
) -> Result<Plan, Error> {
    let mut plan = Plan::default();
    for item in items {
        relocate::stage(ctx, &mut plan, item)?;
    }
    if let Some((op, owner)) = job {
        plan.push(op, owner, false);
    }
    changelog::stage(ctx, &mut plan)?;
    Ok(plan)
}

/// Sleeps a random time below `2^attempt` ms (at most 64 ms), from the second attempt on: a
/// writer that lost a race replans after it, so racers spread out instead of replanning in
/// lockstep.
pub(crate) fn backoff(attempt: u32) {
    if attempt < 2 {
        return;
    }
    let ceiling_us = 1000u64 << attempt.min(6);
    let random = std::hash::BuildHasher::hash_one(
        &std::collections::hash_map::RandomState::new(),
        (attempt, std::time::Instant::now()),
    );
    std::thread::sleep(std::time::Duration::from_micros(random % ceiling_us));
}

/// The limits every write checks before reading anything.
pub(crate) fn check_ops(ops: &[TxOp], now: i64) -> Result<(), Error> {
    for (index, op) in ops.iter().enumerate() {
        // A put's key is encoded once for both of its limits.
        if let Some(path) = op.path().filter(|_| !matches!(op, TxOp::Put { .. })) {
            check_key(path)?;
        }
        match op {
            TxOp::Put {
                path,
                value,
                options,
            } => {
                let key = checked_item_key(path)?;
                check_item_size_at(path, &key, value)?;
                check_expiry(path, options.expires, now)?;
            }
            TxOp::Create {
                parent,
                namespace,
                options,
                ..
            } => {
                // The path is not known yet; the expiry rules do not depend on it.
                let probe = KeyPath::builder()
                    .push(namespace, 1u64)
                    .build()
                    .map_err(|e| Error::InvalidRequest(e.to_string()))?;
                check_expiry(&probe, options.expires, now)?;
                if options.condition.is_some() {
                    return Err(Error::InvalidRequest(
                        "a create takes no condition: its path is new by construction".into(),
                    ));
                }
                if let Parent::Created(earlier) = parent
                    && (*earlier >= index || !matches!(ops[*earlier], TxOp::Create { .. }))
                {
                    return Err(Error::InvalidRequest(format!(
                        "operation {index} creates under operation {earlier}, which is not an earlier create"
                    )));
                }
            }
            TxOp::Patch { path, options, .. } => check_expiry(path, options.expires, now)?,
            TxOp::CheckList(check) => {
                let range = &check.range;
                check_key(&range.prefix)?;
                for bound in [&range.gt, &range.gte, &range.lt, &range.lte]
                    .into_iter()
                    .flatten()
                {
                    check_key(bound)?;
                }
            }
            TxOp::Delete { .. } | TxOp::Check { .. } => {}
        }
    }
    Ok(())
}

/// A planned batch the backend cannot take in one atomic write is the caller's to split.
pub(crate) fn check_batch_size(plan: &Plan, max: usize) -> Result<(), Error> {
    if plan.batch.ops.len() > max {
        return Err(Error::InvalidRequest(format!(
            "this transaction needs {} storage operations (with history, expiry and the change log), more than the backend's {max}: split it",
            plan.batch.ops.len()
        )));
    }
    Ok(())
}
