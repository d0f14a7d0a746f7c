//! PathDB on DynamoDB: the store's [`Backend`] over one table with a Binary partition key `pk`
//! (the encoded group) and a Binary sort key `sk` (the encoded rest of the path), the layout
//! StatelyDB uses (seed 002). Everything above the backend — metadata, history, conditions,
//! page tokens, limits — is the same code as on the embedded engine.
//!
//! | store operation | DynamoDB request |
//! | --- | --- |
//! | `Reader::get` | one `GetItem` (strongly consistent) |
//! | `Reader::get_many` | one `TransactGetItems` per 25 keys: each group read together, serializably |
//! | `Reader::scan` | `Query` on `pk` with `BETWEEN`/`<`/`>` on `sk`, `ScanIndexForward` for reverse, `Limit` + `ExclusiveStartKey` until the asked count (a 1 MB page may need several) |
//! | `Reader::scan_all` | `Scan`, resumable from the last key |
//! | a one-operation batch | `PutItem` / `DeleteItem` with a `ConditionExpression`, or a consistent `GetItem` for a lone check |
//! | a larger batch | `TransactWriteItems` (at most 100 operations) |
//! | expiry | the store's own expiry index and sweeper, as on every backend (not DynamoDB's TTL, which would delete the record that keeps the path's last version) |
//!
//! Reads are strongly consistent per request but a [`Reader`] is not a snapshot: DynamoDB has no
//! multi-request snapshots. A listing page that needs several queries may see a write that
//! committed between them; page tokens stay exact because they are positions, not offsets.
//!
//! The backend runs its own tokio runtime and blocks on it, so the store stays synchronous; call
//! it from plain threads or `spawn_blocking`, never from inside an async task.

#![deny(missing_docs)]

mod attrs;
mod metrics;
mod table;

pub use metrics::{Counts, Metrics};
pub use table::create_table;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Delete, Get, Put, TransactGetItem, TransactWriteItem,
};
use pathdb_store::StorageError;
use pathdb_store::backend::{
    Backend, Direction, Expect, Key, Reader, Record, SortRange, WriteBatch, WriteError, WriteOp,
};
use std::collections::HashMap;
use std::sync::Arc;

/// DynamoDB's limit on one `TransactWriteItems`.
pub const MAX_TRANSACTION_ITEMS: usize = 100;
/// Keys per `TransactGetItems`: DynamoDB allows 100 today, but 25 before 2022 and in moto, so
/// `get_many` reads atomically in groups of 25.
pub const MAX_TRANSACT_GET_ITEMS: usize = 25;

/// Where the table is.
#[derive(Clone, Debug, Default)]
pub struct DynamoOptions {
    /// The table name.
    pub table: String,
    /// An endpoint URL other than AWS's (a local DynamoDB-compatible server).
    pub endpoint: Option<String>,
    /// The region; otherwise the standard AWS chain decides (default `us-east-1` when unset).
    pub region: Option<String>,
}

/// The DynamoDB backend. Credentials come from the standard AWS chain (environment, profile,
/// instance role).
pub struct DynamoBackend {
    client: Client,
    table: String,
    runtime: Option<tokio::runtime::Runtime>,
    metrics: Arc<Metrics>,
}

fn sdk_error<
    E: std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
>(
    what: &'static str,
) -> impl Fn(SdkError<E, R>) -> StorageError {
    move |e| {
        let detail = match &e {
            SdkError::ServiceError(s) => format!("{what}: {}", s.err()),
            other => format!("{what}: {other}"),
        };
        StorageError::new(detail, e)
    }
}

/// A PutItem or DeleteItem outcome: a failed ConditionExpression is the batch's only op failing.
fn single_write_result<O, E, R>(
    result: Result<O, SdkError<E, R>>,
    what: &'static str,
) -> Result<(), WriteError>
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    match result {
        Ok(_) => Ok(()),
        Err(e)
            if e.as_service_error().and_then(|s| s.code())
                == Some("ConditionalCheckFailedException") =>
        {
            Err(WriteError::ConditionFailed { index: 0 })
        }
        Err(e) => Err(sdk_error(what)(e).into()),
    }
}

/// Appends are numbered by `transact_appending` before any request is built.
fn unnumbered_append() -> StorageError {
    StorageError::msg("internal error: an append reached DynamoDB without its number")
}

impl DynamoBackend {
    /// Connects to the table (it must exist: see [`create_table`]).
    ///
    /// # Errors
    /// The runtime cannot start.
    pub fn connect(options: &DynamoOptions) -> Result<DynamoBackend, StorageError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("pathdb-dynamodb")
            .enable_all()
            .build()
            .map_err(|e| StorageError::new("cannot start the DynamoDB client runtime", e))?;
        let client = runtime.block_on(client_for(options));
        Ok(DynamoBackend {
            client,
            table: options.table.clone(),
            runtime: Some(runtime),
            metrics: Arc::new(Metrics::default()),
        })
    }

    /// Requests sent so far, by kind.
    pub fn metrics(&self) -> Arc<Metrics> {
        Arc::clone(&self.metrics)
    }

    /// The SDK client (for table administration).
    pub fn client(&self) -> &Client {
        &self.client
    }

    pub(crate) fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        let Some(runtime) = &self.runtime else {
            unreachable!("the runtime lives until the backend is dropped")
        };
        runtime.block_on(f)
    }

    /// The table's name.
    pub fn table_name(&self) -> &str {
        &self.table
    }

    fn key_map(&self, key: &Key) -> HashMap<String, AttributeValue> {
        attrs::key(key)
    }

    async fn get_async(&self, key: &Key) -> Result<Option<Record>, StorageError> {
        self.metrics.count_get();
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(self.key_map(key)))
            .consistent_read(true)
            .return_consumed_capacity(aws_sdk_dynamodb::types::ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(sdk_error("GetItem"))?;
        self.metrics
            .add_read_units(out.consumed_capacity().and_then(|c| c.capacity_units()));
        out.item()
            .map(|item| attrs::record(item).map(|(_, r)| r))
            .transpose()
    }

    /// Keys in groups of [`MAX_TRANSACT_GET_ITEMS`], each one TransactGetItems: a serializable
    /// read of the group.
    async fn get_many_async(&self, keys: &[Key]) -> Result<Vec<Option<Record>>, StorageError> {
        let mut out = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(MAX_TRANSACT_GET_ITEMS) {
            if let [key] = chunk {
                out.push(self.get_async(key).await?);
                continue;
            }
            self.metrics.count_transaction();
            let mut items = Vec::with_capacity(chunk.len());
            for key in chunk {
                let get = Get::builder()
                    .table_name(&self.table)
                    .set_key(Some(self.key_map(key)))
                    .build()
                    .map_err(|e| StorageError::new("building TransactGetItems", e))?;
                items.push(TransactGetItem::builder().get(get).build());
            }
            let response = match self
                .client
                .transact_get_items()
                .set_transact_items(Some(items))
                .send()
                .await
            {
                Ok(r) => r,
                // DynamoDB and moto have TransactGetItems; dynalite does not. There, read the
                // keys one by one: each read is consistent, the group is not atomic.
                Err(e)
                    if e.as_service_error().and_then(|s| s.meta().code())
                        == Some("UnknownOperationException") =>
                {
                    tracing::warn!(
                        "this DynamoDB endpoint has no TransactGetItems; get_many reads key by key"
                    );
                    for key in chunk {
                        out.push(self.get_async(key).await?);
                    }
                    continue;
                }
                Err(e) => return Err(sdk_error("TransactGetItems")(e)),
            };
            let responses = response.responses();
            if responses.len() != chunk.len() {
                return Err(StorageError::msg(format!(
                    "TransactGetItems answered {} of {} keys",
                    responses.len(),
                    chunk.len()
                )));
            }
            for r in responses {
                out.push(
                    r.item()
                        .map(|item| attrs::record(item).map(|(_, rec)| rec))
                        .transpose()?,
                );
            }
        }
        Ok(out)
    }

    async fn write_async(&self, batch: WriteBatch) -> Result<(), WriteError> {
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
            _ if appends => self.transact_appending(&batch).await,
            1 => self.write_one(batch.ops.into_iter().next().expect("one op")).await,
            _ => self.transact(batch).await,
        }
    }

    /// A batch with appends: each append becomes a put at the next number of its log, read
    /// (strongly consistent) just before the transaction and conditional on that number being
    /// free. When only such a condition fails, another writer appended first: number again and
    /// retry. The log's end is read after every entry before it committed, so entries become
    /// visible in number order, as [`WriteOp::Append`] promises.
    async fn transact_appending(&self, batch: &WriteBatch) -> Result<(), WriteError> {
        let mut attempt = 0u32;
        loop {
            let mut next: HashMap<&Key, u64> = HashMap::new();
            let mut ops = Vec::with_capacity(batch.ops.len());
            let mut numbered = Vec::new();
            for (index, op) in batch.ops.iter().enumerate() {
                let WriteOp::Append { log, record } = op else {
                    ops.push(op.clone());
                    continue;
                };
                let n = match next.get(log) {
                    Some(n) => n + 1,
                    None => self.last_log_number(log).await? + 1,
                };
                next.insert(log, n);
                numbered.push(index);
                ops.push(WriteOp::Put {
                    key: Key {
                        partition: log.partition.clone(),
                        sort: pathdb_store::backend::log_entry(&log.sort, n),
                    },
                    record: record.clone(),
                    expect: Some(Expect::Absent),
                });
            }
            match self.transact(WriteBatch { ops }).await {
                Err(WriteError::ConditionFailed { index }) if numbered.contains(&index) => {
                    // Writers racing for one log: a short random pause spreads them out.
                    attempt += 1;
                    let jitter = std::hash::BuildHasher::hash_one(
                        &std::collections::hash_map::RandomState::new(),
                        attempt,
                    ) % (1000 << attempt.min(6));
                    tokio::time::sleep(std::time::Duration::from_micros(jitter)).await;
                }
                other => return other,
            }
        }
    }

    async fn last_log_number(&self, log: &Key) -> Result<u64, StorageError> {
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
                let result = self
                    .client
                    .put_item()
                    .table_name(&self.table)
                    .set_item(Some(attrs::item(&key, &record)))
                    .set_condition_expression(cond)
                    .set_expression_attribute_names(names)
                    .set_expression_attribute_values(values)
                    .send()
                    .await;
                single_write_result(result, "PutItem")
            }
            WriteOp::Delete { key, expect } => {
                self.metrics.count_write();
                let (cond, names, values) = attrs::condition(expect);
                let result = self
                    .client
                    .delete_item()
                    .table_name(&self.table)
                    .set_key(Some(self.key_map(&key)))
                    .set_condition_expression(cond)
                    .set_expression_attribute_names(names)
                    .set_expression_attribute_values(values)
                    .send()
                    .await;
                single_write_result(result, "DeleteItem")
            }
            WriteOp::Check { key, expect } => {
                // A lone check writes nothing: one consistent read decides it.
                let current = self.get_async(&key).await?.map(|r| r.version);
                let holds = expect.holds(current);
                if holds {
                    Ok(())
                } else {
                    Err(WriteError::ConditionFailed { index: 0 })
                }
            }
            WriteOp::Append { .. } => Err(unnumbered_append().into()),
        }
    }

    async fn transact(&self, batch: WriteBatch) -> Result<(), WriteError> {
        self.metrics.count_transaction();
        let mut items = Vec::with_capacity(batch.ops.len());
        let build =
            |e: aws_sdk_dynamodb::error::BuildError| StorageError::new("building a transaction", e);
        for op in batch.ops {
            let item = match op {
                WriteOp::Put {
                    key,
                    record,
                    expect,
                } => {
                    let (cond, names, values) = attrs::condition(expect);
                    let put = Put::builder()
                        .table_name(&self.table)
                        .set_item(Some(attrs::item(&key, &record)))
                        .set_condition_expression(cond)
                        .set_expression_attribute_names(names)
                        .set_expression_attribute_values(values)
                        .build()
                        .map_err(build)?;
                    TransactWriteItem::builder().put(put).build()
                }
                WriteOp::Delete { key, expect } => {
                    let (cond, names, values) = attrs::condition(expect);
                    let delete = Delete::builder()
                        .table_name(&self.table)
                        .set_key(Some(self.key_map(&key)))
                        .set_condition_expression(cond)
                        .set_expression_attribute_names(names)
                        .set_expression_attribute_values(values)
                        .build()
                        .map_err(build)?;
                    TransactWriteItem::builder().delete(delete).build()
                }
                WriteOp::Check { key, expect } => {
                    let (cond, names, values) = attrs::condition(Some(expect));
                    let check = ConditionCheck::builder()
                        .table_name(&self.table)
                        .set_key(Some(self.key_map(&key)))
                        .set_condition_expression(cond)
                        .set_expression_attribute_names(names)
                        .set_expression_attribute_values(values)
                        .build()
                        .map_err(build)?;
                    TransactWriteItem::builder().condition_check(check).build()
                }
                WriteOp::Append { .. } => return Err(unnumbered_append().into()),
            };
            items.push(item);
        }
        let result = self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) => {
                if let Some(aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError::TransactionCanceledException(c)) =
                    e.as_service_error()
                {
                    let reasons = c.cancellation_reasons();
                    if let Some(index) = reasons.iter().position(|r| r.code() == Some("ConditionalCheckFailed")) {
                        return Err(WriteError::ConditionFailed { index });
                    }
                    // Cancelled because a concurrent transaction held one of the items: name it, so
                    // that a conflict over a change log entry is retried (transact_appending) and
                    // one over an item names that item.
                    if let Some(index) = reasons.iter().position(|r| r.code() == Some("TransactionConflict")) {
                        return Err(WriteError::ConditionFailed { index });
                    }
                }
                Err(sdk_error("TransactWriteItems")(e).into())
            }
        }
    }

    async fn query(
        &self,
        partition: &[u8],
        range: &SortRange,
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Record)>, StorageError> {
        let mut out = Vec::new();
        if limit == 0 || range.is_empty() {
            return Ok(out);
        }
        let condition = attrs::key_condition(partition, range);
        let mut start_key = None;
        loop {
            // Room for the (at most two) excluded bounds that BETWEEN returns.
            let page =
                i32::try_from((limit - out.len()).saturating_add(2).min(1000)).unwrap_or(1000);
            self.metrics.count_query();
            let response = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression(&condition.expression)
                .set_expression_attribute_values(Some(condition.values.clone()))
                .scan_index_forward(direction == Direction::Forward)
                .consistent_read(true)
                .limit(page)
                .set_exclusive_start_key(start_key.take())
                .return_consumed_capacity(aws_sdk_dynamodb::types::ReturnConsumedCapacity::Total)
                .send()
                .await
                .map_err(sdk_error("Query"))?;
            self.metrics.add_read_units(
                response
                    .consumed_capacity()
                    .and_then(|c| c.capacity_units()),
            );
            for item in response.items() {
                let Some((key, record)) = self.pathdb_record(item) else {
                    continue;
                };
                if condition.excluded.contains(&key.sort) {
                    continue;
                }
                out.push((key.sort, record));
                if out.len() == limit {
                    return Ok(out);
                }
            }
            // Not trusting LastEvaluatedKey to be absent exactly when nothing follows (moto
            // omits it when exactly Limit items match): an empty follow-up query is cheap.
            match response.last_evaluated_key() {
                Some(k) if !k.is_empty() => start_key = Some(k.clone()),
                _ => return Ok(out),
            }
        }
    }

    /// The record in a listed item, or `None` (with a warning and a count) for an item that
    /// another tool wrote into the table: one foreign row must not fail a whole listing or
    /// export.
    fn pathdb_record(&self, item: &HashMap<String, AttributeValue>) -> Option<(Key, Record)> {
        match attrs::record(item) {
            Ok(found) => Some(found),
            Err(e) => {
                self.metrics.count_foreign();
                tracing::warn!(table = %self.table, error = %e, "skipped an item that is not a PathDB record");
                None
            }
        }
    }

    /// Up to `limit` records after `after`, and how many rows it passed over as not PathDB's.
    /// Each page asks for no more rows than are still wanted, so no row is read (or counted)
    /// twice across calls.
    async fn scan_all_async(
        &self,
        after: Option<&Key>,
        limit: usize,
    ) -> Result<(Vec<(Key, Record)>, u64), StorageError> {
        let mut out = Vec::new();
        let mut foreign = 0;
        let mut start_key = after.map(attrs::key);
        while out.len() < limit {
            self.metrics.count_scan();
            let response = self
                .client
                .scan()
                .table_name(&self.table)
                .consistent_read(true)
                .limit(i32::try_from((limit - out.len()).min(1000)).unwrap_or(1000))
                .set_exclusive_start_key(start_key.take())
                .send()
                .await
                .map_err(sdk_error("Scan"))?;
            for item in response.items() {
                match self.pathdb_record(item) {
                    Some(found) => out.push(found),
                    None => foreign += 1,
                }
            }
            match response.last_evaluated_key() {
                Some(k) if !k.is_empty() => start_key = Some(k.clone()),
                _ => break,
            }
        }
        out.truncate(limit);
        Ok((out, foreign))
    }
}

impl DynamoBackend {
    /// Every partition key in the table, sorted and deduplicated, by a Scan that projects only
    /// `pk`: DynamoDB keeps no order across partitions, so listing groups in key order reads
    /// every key of the table (docs/dynamodb.md, "Listing groups").
    async fn partitions_async(
        &self,
        after: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<Vec<u8>>, StorageError> {
        let mut all = std::collections::BTreeSet::new();
        let mut start_key = None;
        loop {
            self.metrics.count_scan();
            let response = self
                .client
                .scan()
                .table_name(&self.table)
                .consistent_read(true)
                .projection_expression("pk")
                .set_exclusive_start_key(start_key.take())
                .send()
                .await
                .map_err(sdk_error("Scan"))?;
            for item in response.items() {
                match item.get("pk") {
                    Some(AttributeValue::B(blob)) => {
                        let pk = blob.as_ref();
                        if after.is_none_or(|a| pk > a) {
                            all.insert(pk.to_vec());
                        }
                    }
                    _ => {
                        self.metrics.count_foreign();
                        tracing::warn!(table = %self.table, "skipped an item without a binary pk");
                    }
                }
            }
            match response.last_evaluated_key() {
                Some(k) if !k.is_empty() => start_key = Some(k.clone()),
                _ => break,
            }
        }
        Ok(all.into_iter().take(limit).collect())
    }
}

async fn client_for(options: &DynamoOptions) -> Client {
    let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest());
    if let Some(region) = &options.region {
        loader = loader.region(aws_config::Region::new(region.clone()));
    }
    if let Some(endpoint) = &options.endpoint {
        loader = loader.endpoint_url(endpoint);
    }
    let mut config = loader.load().await;
    if config.region().is_none() {
        config = config
            .into_builder()
            .region(aws_config::Region::from_static("us-east-1"))
            .build();
    }
    Client::new(&config)
}

impl Drop for DynamoBackend {
    fn drop(&mut self) {
        // Dropping a runtime inside async code panics; this never blocks.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// Reads through a [`DynamoBackend`]: every request strongly consistent, no cross-request snapshot.
pub struct DynamoReader<'a> {
    backend: &'a DynamoBackend,
    /// Rows of other tools the full scan passed over.
    skipped: std::sync::atomic::AtomicU64,
}

impl Backend for DynamoBackend {
    type Reader<'a> = DynamoReader<'a>;

    fn reader(&self) -> Result<DynamoReader<'_>, StorageError> {
        Ok(DynamoReader {
            backend: self,
            skipped: Default::default(),
        })
    }

    fn write(&self, batch: WriteBatch) -> Result<(), WriteError> {
        self.block_on(self.write_async(batch))
    }

    fn max_batch_ops(&self) -> usize {
        MAX_TRANSACTION_ITEMS
    }

    /// Other processes may write the same table.
    fn shared(&self) -> bool {
        true
    }

    /// One `DescribeTable`: the table is reachable with these credentials and `ACTIVE`.
    fn ready(&self) -> Result<(), StorageError> {
        self.block_on(async {
            let out = self
                .client
                .describe_table()
                .table_name(&self.table)
                .send()
                .await
                .map_err(sdk_error("DescribeTable"))?;
            match out.table().and_then(|t| t.table_status()) {
                Some(aws_sdk_dynamodb::types::TableStatus::Active) => Ok(()),
                status => Err(StorageError::msg(format!(
                    "table {} is {}, not ACTIVE",
                    self.table,
                    status.map_or("of unknown status", |s| s.as_str())
                ))),
            }
        })
    }
}

impl Reader for DynamoReader<'_> {
    fn get(&self, key: &Key) -> Result<Option<Record>, StorageError> {
        self.backend.block_on(self.backend.get_async(key))
    }

    fn get_many(&self, keys: &[Key]) -> Result<Vec<Option<Record>>, StorageError> {
        self.backend.block_on(self.backend.get_many_async(keys))
    }

    fn scan(
        &self,
        partition: &[u8],
        range: &SortRange,
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Record)>, StorageError> {
        self.backend
            .block_on(self.backend.query(partition, range, direction, limit))
    }

    fn scan_all(
        &self,
        after: Option<&Key>,
        limit: usize,
    ) -> Result<Vec<(Key, Record)>, StorageError> {
        let (found, foreign) = self
            .backend
            .block_on(self.backend.scan_all_async(after, limit))?;
        self.skipped
            .fetch_add(foreign, std::sync::atomic::Ordering::Relaxed);
        Ok(found)
    }

    fn skipped(&self) -> u64 {
        self.skipped.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn partitions(&self, after: Option<&[u8]>, limit: usize) -> Result<Vec<Vec<u8>>, StorageError> {
        self.backend
            .block_on(self.backend.partitions_async(after, limit))
    }
}
