//! Writes: a batch becomes one `PutItem`, `DeleteItem` or `TransactWriteItems` (the table in
//! lib.rs), sent within the retry budget (retry.rs). When an attempt's answer was lost (a
//! timeout, a reset connection, a 5xx), the write may have committed. It is then settled by
//! reading what it would have written, and never reported as failed when it committed:
//!
//! - A batch with appends (every store write: its change log entry commits with it) marks each
//!   entry it appends with the write's id (`w`, attrs.rs). An entry never changes once written,
//!   so reading it says whether this write committed: its id is there (committed), another
//!   write's is (it did not, and never will: its entry's condition is taken), or there is none
//!   (it may still be in flight: [`StorageErrorKind::OutcomeUnknown`]).
//! - Other batches (the token key, namespace settings, the sweeper's index clean-up) compare
//!   records: each put's record stored exactly as written and each deleted key absent means
//!   committed; anything else is [`StorageErrorKind::OutcomeUnknown`], since a later write may
//!   have replaced them.
//!
//! Every attempt of a request is the same request: same items, same conditions, same
//! `ClientRequestToken`. On DynamoDB the token makes an attempt after a committed one return
//! success without applying it again (for 10 minutes); moto ignores tokens, and the conditions
//! alone keep retries exact: an attempt that arrives after another one committed fails its
//! conditions. And once one attempt found a condition false, every attempt of the request
//! (one still in flight included) finds it false: the store's conditions only ever go from true
//! to false (an entry number once taken stays taken for the retention window; a version once
//! passed never comes back, docs/versions.md). So a condition failure answered after a lost
//! answer is final: the entry read tells whether it was this write's own earlier attempt.

use crate::retry::{self, Attempt, Class, Failure, Sent};
use crate::{DynamoBackend, MAX_TRANSACTION_ITEMS, attrs, group};
use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    ConditionCheck, Delete, Put, ReturnConsumedCapacity, TransactWriteItem,
};
use pathdb_store::backend::{Direction, Key, Record, SortRange, WriteBatch, WriteError, WriteOp};
use pathdb_store::{StorageError, StorageErrorKind};

/// The id of one write request: its `ClientRequestToken` (in hex) and the `w` attribute of the
/// change log entries it appends.
struct WriteId([u8; 16]);

impl WriteId {
    fn new() -> Result<WriteId, StorageError> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes)
            .map_err(|e| StorageError::msg(format!("no random bytes for a write id: {e}")))?;
        Ok(WriteId(bytes))
    }

    fn token(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// How to tell, by reading, whether a write whose answer was lost committed.
enum Proof {
    /// The first change log entry the write appends (a batch commits whole), and the write's id.
    Entry { key: Key, id: [u8; 16] },
    /// What each key the write changes holds once it committed: a put's record, or nothing for a
    /// delete.
    State(Vec<(Key, Option<Record>)>),
    /// The write only checks conditions: it changes nothing, so the answer of any attempt is the
    /// answer.
    Nothing,
}

impl Proof {
    fn of_state(ops: &[WriteOp]) -> Proof {
        let state: Vec<_> = ops
            .iter()
            .filter_map(|op| match op {
                WriteOp::Put { key, record, .. } => Some((key.clone(), Some(record.clone()))),
                WriteOp::Delete { key, .. } => Some((key.clone(), None)),
                WriteOp::Check { .. } | WriteOp::Append { .. } => None,
            })
            .collect();
        if state.is_empty() {
            Proof::Nothing
        } else {
            Proof::State(state)
        }
    }
}

/// What reading found out about a write whose answer was lost.
enum Verdict {
    Committed,
    /// Not committed, and it never will be.
    NotCommitted,
    /// Reading cannot tell.
    Unknown,
}

/// Appends are numbered by `transact_appending` before any request is built.
fn unnumbered_append() -> StorageError {
    StorageError::msg("internal error: an append reached DynamoDB without its number")
}

fn build_error(e: aws_sdk_dynamodb::error::BuildError) -> StorageError {
    StorageError::new("building a write request", e)
}

/// A PutItem or DeleteItem attempt: a failed ConditionExpression is the batch's only op failing.
fn single_attempt<O, E>(what: &'static str, result: Result<O, SdkError<E, HttpResponse>>) -> Attempt
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    match result {
        Ok(_) => Attempt::Applied,
        Err(e)
            if e.as_service_error().and_then(|s| s.code())
                == Some("ConditionalCheckFailedException") =>
        {
            Attempt::ConditionFailed(0)
        }
        Err(e) => Attempt::Failed(retry::classify(what, e)),
    }
}

/// A TransactWriteItems attempt. A cancelled transaction names why per item: a failed
/// condition, a concurrent transaction on the item, or throttling (nothing was written).
fn transact_attempt(
    result: Result<impl Sized, SdkError<TransactWriteItemsError, HttpResponse>>,
) -> Attempt {
    let error = match result {
        Ok(_) => return Attempt::Applied,
        Err(e) => e,
    };
    if let Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) =
        error.as_service_error()
    {
        let reasons = cancelled.cancellation_reasons();
        let find = |code: &str| reasons.iter().position(|r| r.code() == Some(code));
        if let Some(index) = find("ConditionalCheckFailed") {
            return Attempt::ConditionFailed(index);
        }
        if let Some(index) = find("TransactionConflict") {
            return Attempt::Conflict(index);
        }
        let throttled = reasons.iter().any(|r| {
            matches!(
                r.code(),
                Some("ThrottlingError" | "ProvisionedThroughputExceeded")
            )
        });
        if throttled {
            let failure = retry::classify("TransactWriteItems", error);
            return Attempt::Failed(Failure {
                class: Class::Refused,
                ..failure
            });
        }
    }
    Attempt::Failed(retry::classify("TransactWriteItems", error))
}

impl DynamoBackend {
    pub(crate) async fn write_async(&self, batch: WriteBatch) -> Result<(), WriteError> {
        let appends = batch
            .ops
            .iter()
            .any(|op| matches!(op, WriteOp::Append { .. }));
        match batch.ops.len() {
            0 => Ok(()),
            n if n > MAX_TRANSACTION_ITEMS => Err(StorageError::msg(format!(
                "a batch of {n} operations exceeds DynamoDB's {MAX_TRANSACTION_ITEMS}-item transactions"
            ))
            .into()),
            _ if appends => match group::single_log(&batch) {
                Some(log) => {
                    let log = log.clone();
                    self.group_commit(&log, batch).await
                }
                None => self
                    .commit_appending(std::slice::from_ref(&batch))
                    .await
                    .pop()
                    .unwrap_or(Ok(())),
            },
            1 => match batch.ops.into_iter().next() {
                Some(op) => self.write_one(op).await,
                None => Ok(()),
            },
            _ => self.transact(batch.ops, &[]).await,
        }
    }

    /// The number of the last entry of `log` (0 when it has none), read.
    pub(crate) async fn last_log_number(&self, log: &Key) -> Result<u64, StorageError> {
        let (first, last) = pathdb_store::backend::log_bounds(&log.sort);
        let range = SortRange {
            start: std::ops::Bound::Included(first),
            end: std::ops::Bound::Included(last),
        };
        let newest = self
            .query(&log.partition, &range, Direction::Reverse, 1)
            .await?;
        Ok(newest
            .first()
            .and_then(|(sort, _)| pathdb_store::backend::log_number(sort))
            .unwrap_or(0))
    }

    async fn write_one(&self, op: WriteOp) -> Result<(), WriteError> {
        match op {
            WriteOp::Put {
                key,
                record,
                expect,
            } => {
                self.metrics.count_write();
                let (cond, names, values) = attrs::condition(expect);
                let item = attrs::item(&key, &record);
                self.metrics.model_write(attrs::size(&item), false);
                let request = self
                    .client
                    .put_item()
                    .table_name(&self.table)
                    .set_item(Some(item))
                    .set_condition_expression(cond)
                    .set_expression_attribute_names(names)
                    .set_expression_attribute_values(values)
                    .return_consumed_capacity(ReturnConsumedCapacity::Total);
                let metrics = &self.metrics;
                let sent = retry::write(&self.retry, &self.metrics, "PutItem", || {
                    let request = request.clone();
                    async move {
                        let result = request.send().await;
                        if let Ok(out) = &result {
                            metrics.add_write_units(
                                out.consumed_capacity().and_then(|c| c.capacity_units()),
                            );
                        }
                        single_attempt("PutItem", result)
                    }
                })
                .await;
                self.settle("PutItem", sent, &Proof::State(vec![(key, Some(record))]))
                    .await
            }
            WriteOp::Delete { key, expect } => {
                self.metrics.count_write();
                self.metrics.model_write(0, false);
                let (cond, names, values) = attrs::condition(expect);
                let request = self
                    .client
                    .delete_item()
                    .table_name(&self.table)
                    .set_key(Some(self.key_map(&key)))
                    .set_condition_expression(cond)
                    .set_expression_attribute_names(names)
                    .set_expression_attribute_values(values)
                    .return_consumed_capacity(ReturnConsumedCapacity::Total);
                let metrics = &self.metrics;
                let sent = retry::write(&self.retry, &self.metrics, "DeleteItem", || {
                    let request = request.clone();
                    async move {
                        let result = request.send().await;
                        if let Ok(out) = &result {
                            metrics.add_write_units(
                                out.consumed_capacity().and_then(|c| c.capacity_units()),
                            );
                        }
                        single_attempt("DeleteItem", result)
                    }
                })
                .await;
                self.settle("DeleteItem", sent, &Proof::State(vec![(key, None)]))
                    .await
            }
            WriteOp::Check { key, expect } => {
                // A lone check writes nothing: one consistent read decides it.
                let current = self.get_async(&key).await?.map(|r| r.version);
                if expect.holds(current) {
                    Ok(())
                } else {
                    Err(WriteError::ConditionFailed { index: 0 })
                }
            }
            WriteOp::Append { .. } => Err(unnumbered_append().into()),
        }
    }

    /// One TransactWriteItems of `ops`; the puts at `entries` are change log entries, marked
    /// with the write's id.
    pub(crate) async fn transact(
        &self,
        ops: Vec<WriteOp>,
        entries: &[usize],
    ) -> Result<(), WriteError> {
        self.metrics.count_transaction();
        let id = WriteId::new()?;
        let proof = match entries.first().map(|&i| &ops[i]) {
            Some(WriteOp::Put { key, .. }) => Proof::Entry {
                key: key.clone(),
                id: id.0,
            },
            _ => Proof::of_state(&ops),
        };
        let mut items = Vec::with_capacity(ops.len());
        for (index, op) in ops.into_iter().enumerate() {
            let item = match op {
                WriteOp::Put {
                    key,
                    record,
                    expect,
                } => {
                    let (cond, names, values) = attrs::condition(expect);
                    let item = if entries.contains(&index) {
                        let item = attrs::entry_item(&key, &record, &id.0);
                        self.metrics.model_log_write(attrs::size(&item), true);
                        item
                    } else {
                        let item = attrs::item(&key, &record);
                        self.metrics.model_write(attrs::size(&item), true);
                        item
                    };
                    let put = Put::builder()
                        .table_name(&self.table)
                        .set_item(Some(item))
                        .set_condition_expression(cond)
                        .set_expression_attribute_names(names)
                        .set_expression_attribute_values(values)
                        .build()
                        .map_err(build_error)?;
                    TransactWriteItem::builder().put(put).build()
                }
                WriteOp::Delete { key, expect } => {
                    self.metrics.model_write(0, true);
                    let (cond, names, values) = attrs::condition(expect);
                    let delete = Delete::builder()
                        .table_name(&self.table)
                        .set_key(Some(self.key_map(&key)))
                        .set_condition_expression(cond)
                        .set_expression_attribute_names(names)
                        .set_expression_attribute_values(values)
                        .build()
                        .map_err(build_error)?;
                    TransactWriteItem::builder().delete(delete).build()
                }
                WriteOp::Check { key, expect } => {
                    self.metrics.model_write(0, true);
                    let (cond, names, values) = attrs::condition(Some(expect));
                    let check = ConditionCheck::builder()
                        .table_name(&self.table)
                        .set_key(Some(self.key_map(&key)))
                        .set_condition_expression(cond)
                        .set_expression_attribute_names(names)
                        .set_expression_attribute_values(values)
                        .build()
                        .map_err(build_error)?;
                    TransactWriteItem::builder().condition_check(check).build()
                }
                WriteOp::Append { .. } => return Err(unnumbered_append().into()),
            };
            items.push(item);
        }
        // Every attempt sends this same request, token included (see the module docs).
        let request = self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .client_request_token(id.token())
            .return_consumed_capacity(ReturnConsumedCapacity::Total);
        let metrics = &self.metrics;
        let sent = retry::write(&self.retry, &self.metrics, "TransactWriteItems", || {
            let request = request.clone();
            async move {
                let result = request.send().await;
                if let Ok(out) = &result {
                    metrics.add_write_units(crate::metrics::reported(out.consumed_capacity()));
                }
                transact_attempt(result)
            }
        })
        .await;
        self.settle("TransactWriteItems", sent, &proof).await
    }

    /// The store's answer for a write request that ended as `sent`, reading `proof` where an
    /// answer was lost.
    async fn settle(
        &self,
        what: &'static str,
        sent: Sent,
        proof: &Proof,
    ) -> Result<(), WriteError> {
        match sent {
            Sent::Applied => Ok(()),
            Sent::ConditionFailed {
                index,
                after_lost_answer: false,
            }
            // A concurrent transaction held an item: name it, so that a conflict over a change
            // log entry is retried (transact_appending) and one over an item names that item.
            | Sent::Conflict(index) => Err(WriteError::ConditionFailed { index }),
            Sent::ConditionFailed {
                index,
                after_lost_answer: true,
            } => match self.verdict(proof, true).await {
                Ok(Verdict::Committed) => {
                    self.metrics.count_settled();
                    Ok(())
                }
                Ok(Verdict::NotCommitted) => {
                    self.metrics.count_settled();
                    Err(WriteError::ConditionFailed { index })
                }
                Ok(Verdict::Unknown) => Err(StorageError::msg(format!(
                    "{what}: an answer was lost, then a condition failed, and what the write \
                     would have written was changed since"
                ))
                .with_kind(StorageErrorKind::OutcomeUnknown)
                .into()),
                Err(read) => Err(read
                    .context(format!(
                        "{what}: an answer was lost, then a condition failed, and reading \
                         whether the write committed failed"
                    ))
                    .with_kind(StorageErrorKind::OutcomeUnknown)
                    .into()),
            },
            Sent::Lost(error) => match self.verdict(proof, false).await {
                Ok(Verdict::Committed) => {
                    self.metrics.count_settled();
                    Ok(())
                }
                Ok(Verdict::NotCommitted) => {
                    self.metrics.count_settled();
                    Err(error
                        .context("not applied (checked by reading: another write took its place)")
                        .with_kind(StorageErrorKind::Unavailable)
                        .into())
                }
                Ok(Verdict::Unknown) => Err(error
                    .context(
                        "an answer was lost and what the write would have written is not \
                         there (yet): it may or may not be applied",
                    )
                    .with_kind(StorageErrorKind::OutcomeUnknown)
                    .into()),
                Err(read) => Err(error
                    .context(format!(
                        "an answer was lost and reading whether the write committed failed ({})",
                        read.message()
                    ))
                    .with_kind(StorageErrorKind::OutcomeUnknown)
                    .into()),
            },
            Sent::Failed(error) => Err(error.into()),
        }
    }

    /// Reads whether the write behind `proof` committed. `answered`: an attempt of it was
    /// answered with a failed condition, so it cannot commit any more (module docs).
    async fn verdict(&self, proof: &Proof, answered: bool) -> Result<Verdict, StorageError> {
        match proof {
            Proof::Entry { key, id } => match self.entry_write_id(key).await? {
                Some(Some(found)) if found == id.as_slice() => Ok(Verdict::Committed),
                Some(_) => Ok(Verdict::NotCommitted),
                None if answered => Ok(Verdict::NotCommitted),
                None => Ok(Verdict::Unknown),
            },
            Proof::State(expected) => {
                for (key, record) in expected {
                    if self.get_async(key).await? != *record {
                        return Ok(Verdict::Unknown);
                    }
                }
                Ok(Verdict::Committed)
            }
            Proof::Nothing => Ok(Verdict::NotCommitted),
        }
    }

    /// The write id stored with the change log entry at `key`: `None` if there is no entry,
    /// `Some(None)` for an entry without one.
    async fn entry_write_id(&self, key: &Key) -> Result<Option<Option<Vec<u8>>>, StorageError> {
        self.metrics.count_get();
        let request = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(self.key_map(key)))
            .consistent_read(true);
        let out = retry::read(&self.retry, &self.metrics, "GetItem", || {
            let request = request.clone();
            async move {
                request
                    .send()
                    .await
                    .map_err(|e| retry::classify("GetItem", e))
            }
        })
        .await?;
        self.metrics.model_read(out.item().map_or(0, attrs::size));
        Ok(out
            .item()
            .map(|item| attrs::write_id(item).map(<[u8]>::to_vec)))
    }
}
