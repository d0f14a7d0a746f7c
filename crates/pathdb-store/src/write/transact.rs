//! A transaction of several operations, all or nothing: its limits, the folding of a patch into
//! the put before it, and its results in the caller's order.

use crate::backend::Backend;
use crate::encoding::limits::MAX_TRANSACTION_OPS;
use crate::model::error::{Error, StorageError};
use crate::write::commit::{Db, execute};
use crate::write::ops::{Transaction, TxResult, fold_into_puts};
use std::sync::Arc;

/// Applies `tx` all or nothing (`Store::transact`); one result per operation.
///
/// # Errors
/// [`Error::ConditionFailed`], [`Error::ListChanged`] (nothing written);
/// [`Error::InvalidRequest`] for an empty transaction, more than [`MAX_TRANSACTION_OPS`]
/// operations or a path used twice (except a patch after a put of its path).
pub(crate) fn transact<B: Backend>(
    db: &Arc<Db<B>>,
    tx: Transaction,
) -> Result<Vec<TxResult>, Error> {
    if tx.ops.is_empty() {
        return Err(Error::InvalidRequest(
            "a transaction needs at least one operation".into(),
        ));
    }
    if tx.ops.len() > MAX_TRANSACTION_OPS {
        return Err(Error::InvalidRequest(format!(
            "a transaction has at most {MAX_TRANSACTION_OPS} operations, got {}",
            tx.ops.len()
        )));
    }
    let (ops, result_of) = fold_into_puts(&tx.ops)?;
    let (results, _) = execute(db, &ops).map_err(|e| match e {
        // Planned on the folded operations: name the caller's.
        Error::ListChanged {
            index,
            prefix,
            path,
        } => Error::ListChanged {
            index: result_of.iter().position(|&i| i == index).unwrap_or(index),
            prefix,
            path,
        },
        other => other,
    })?;
    result_of
        .into_iter()
        .map(|i| {
            results
                .get(i)
                .cloned()
                .ok_or_else(|| StorageError::msg("a transaction lost a result").into())
        })
        .collect()
}
