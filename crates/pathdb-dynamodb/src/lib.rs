//! PathDB on DynamoDB: the store's [`Backend`] over one table with a Binary partition key `pk`
//! (the encoded group) and a Binary sort key `sk` (the encoded rest of the path), the layout
//! StatelyDB uses (seed 002). Everything above the backend — metadata, history, conditions,
//! page tokens, limits — is the same code as on the embedded engine.
//!
//! | store operation | DynamoDB request |
//! | --- | --- |
//! | `Reader::get` | one `GetItem` (strongly consistent) |
//! | `Reader::get_many` | one `TransactGetItems` for up to 100 keys (or as many as the endpoint takes, 25 on moto), read together, serializably; more keys in several, read again until two reads agree (read.rs) |
//! | `Reader::get_batch` | one consistent `BatchGetItem` per 100 keys, each key on its own (not together) |
//! | `Reader::scan` | `Query` on `pk` with `BETWEEN`/`<`/`>` on `sk`, `ScanIndexForward` for reverse, `Limit` + `ExclusiveStartKey` until the asked count (a 1 MB page may need several) |
//! | `Reader::scan_all` | `Scan`, resumable from the last key |
//! | `Reader::partitions` | a `Scan` that projects only `pk`, sorted and deduplicated |
//! | a one-operation batch | `PutItem` / `DeleteItem` with a `ConditionExpression`, or a consistent `GetItem` for a lone check |
//! | a larger batch, or any batch with a change log entry (every store write) | `TransactWriteItems` (at most 100 operations) |
//! | batches appending to one group's change log, arriving while another is in flight | one `TransactWriteItems` for all that fit: group commit (group.rs) |
//! | expiry | the store's own expiry index and sweeper, as on every backend (not DynamoDB's TTL, which would delete the record that keeps the path's last version) |
//!
//! Reads are strongly consistent per request but a [`DynamoReader`] is not a snapshot (only one
//! `get_many` is read as one): DynamoDB has no multi-request snapshots. A listing page that needs several queries may see a write
//! that committed between them; page tokens stay exact because they are positions, not offsets.
//!
//! Every request is sent again after throttling, a 5xx, a timeout or a lost connection, within
//! a bounded [`RetryBudget`], then fails with `StorageErrorKind::Unavailable`. A write whose
//! answer was lost is settled by reading what it would have written (write.rs): it is reported
//! committed when it committed, and `StorageErrorKind::OutcomeUnknown` only when reading cannot
//! tell. [`DynamoBackend::connect`] refuses an endpoint without `TransactWriteItems`
//! (probe.rs). docs/dynamodb.md, "Faults and retries", has the whole story.
//!
//! The backend runs its own tokio runtime and blocks on it, so the store stays synchronous; call
//! it from plain threads or `spawn_blocking`, never from inside an async task.
//!
//! The code: this file holds the options, [`DynamoBackend`] and its `Backend` implementation,
//! which hands reads to read.rs and writes to write.rs (with group.rs, the group commit of
//! batches appending to one change log). attrs.rs maps records to attributes and builds key
//! conditions, retry.rs and paging.rs are the retry budget and the adaptive page size every
//! request goes through, metrics.rs counts requests and capacity units, probe.rs checks the
//! endpoint at connect, table.rs creates and deletes the table.

#![deny(missing_docs)]

mod attrs;
mod group;
mod metrics;
mod paging;
mod probe;
mod read;
mod retry;
mod table;
mod write;

pub use metrics::{Counts, Metrics};
pub use read::{DynamoReader, MAX_BATCH_GET_ITEMS, MAX_TRANSACT_GET_ITEMS};
pub use retry::RetryBudget;
pub use table::{create_table, delete_table};

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::AttributeValue;
use pathdb_store::StorageError;
use pathdb_store::backend::{Backend, Key, WriteBatch, WriteError};
use std::collections::HashMap;
use std::sync::Arc;

/// DynamoDB's limit on one `TransactWriteItems`.
pub const MAX_TRANSACTION_ITEMS: usize = 100;

/// Where the table is.
#[derive(Clone, Debug, Default)]
pub struct DynamoOptions {
    /// The table name.
    pub table: String,
    /// An endpoint URL other than AWS's (a local DynamoDB-compatible server).
    pub endpoint: Option<String>,
    /// The region; otherwise the standard AWS chain decides (default `us-east-1` when unset).
    pub region: Option<String>,
    /// Attempts, backoff and timeouts of every request.
    pub retry: RetryBudget,
}

impl DynamoOptions {
    /// The table `table` on AWS, with the region from the AWS configuration and the default
    /// retry budget.
    ///
    /// ```
    /// use pathdb_dynamodb::{DynamoOptions, RetryBudget};
    /// use std::time::Duration;
    ///
    /// // A slow local endpoint: more time per attempt, and longer before giving up.
    /// let options = DynamoOptions::new("pathdb")
    ///     .with_endpoint("http://127.0.0.1:8000")
    ///     .with_region("us-east-1")
    ///     .with_retry(
    ///         RetryBudget::default()
    ///             .with_attempt_timeout(Duration::from_secs(10))
    ///             .with_operation_timeout(Duration::from_secs(60)),
    ///     );
    /// assert_eq!(options.retry.attempt_timeout, Duration::from_secs(10));
    /// ```
    pub fn new(table: impl Into<String>) -> Self {
        DynamoOptions {
            table: table.into(),
            ..DynamoOptions::default()
        }
    }

    /// At an endpoint other than AWS's (a local DynamoDB-compatible server).
    pub fn with_endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = Some(url.into());
        self
    }

    /// In this region.
    pub fn with_region(mut self, region: impl Into<String>) -> Self {
        self.region = Some(region.into());
        self
    }

    /// With these attempts, backoff and timeouts.
    pub fn with_retry(mut self, retry: RetryBudget) -> Self {
        self.retry = retry;
        self
    }
}

/// The DynamoDB backend. Credentials come from the standard AWS chain (environment, profile,
/// instance role).
pub struct DynamoBackend {
    client: Client,
    table: String,
    runtime: Option<tokio::runtime::Runtime>,
    metrics: Arc<Metrics>,
    retry: RetryBudget,
    /// Per change log: its group commit and last entry number (group.rs).
    logs: group::Logs,
    /// Page sizes that shrink after timeouts (paging.rs), one per kind of paged read: their
    /// items cost the endpoint differently.
    pages: read::Pages,
    /// Keys per `TransactGetItems` the endpoint takes ([`MAX_TRANSACT_GET_ITEMS`], or less
    /// when it refused that many).
    transact_get_limit: std::sync::atomic::AtomicUsize,
}

impl DynamoBackend {
    /// Connects to the table (it must exist before the store opens: see [`create_table`]) and
    /// checks that the endpoint implements `TransactWriteItems`, which every PathDB write is:
    /// one request that writes nothing (probe.rs).
    ///
    /// # Errors
    /// The runtime cannot start; the endpoint cannot be reached within the retry budget (kind
    /// `Unavailable`); the endpoint has no `TransactWriteItems` (dynalite, ScyllaDB Alternator:
    /// the message names it).
    pub fn connect(options: &DynamoOptions) -> Result<DynamoBackend, StorageError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("pathdb-dynamodb")
            .enable_all()
            .build()
            .map_err(|e| StorageError::new("cannot start the DynamoDB client runtime", e))?;
        let client = runtime.block_on(client_for(options));
        let backend = DynamoBackend {
            client,
            table: options.table.clone(),
            runtime: Some(runtime),
            metrics: Arc::new(Metrics::default()),
            retry: options.retry.clone(),
            logs: group::Logs::default(),
            pages: read::Pages::default(),
            transact_get_limit: std::sync::atomic::AtomicUsize::new(MAX_TRANSACT_GET_ITEMS),
        };
        backend.block_on(backend.check_transactions())?;
        Ok(backend)
    }

    /// Requests sent so far, by kind.
    pub fn metrics(&self) -> Arc<Metrics> {
        Arc::clone(&self.metrics)
    }

    /// The SDK client (for table administration). It does not retry: the backend does
    /// (`RetryBudget`).
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

    /// The item key of `key` (for the read and the write path alike).
    fn key_map(&self, key: &Key) -> HashMap<String, AttributeValue> {
        attrs::key(key)
    }
}

/// The SDK client. Its own retries are off, since the backend retries (retry.rs says why);
/// its timeouts are the budget's: connecting, and one attempt from sending to the whole answer.
async fn client_for(options: &DynamoOptions) -> Client {
    let budget = &options.retry;
    let timeouts = aws_sdk_dynamodb::config::timeout::TimeoutConfig::builder()
        .connect_timeout(budget.connect_timeout)
        .operation_attempt_timeout(budget.attempt_timeout)
        .build();
    let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled())
        .timeout_config(timeouts);
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

impl Backend for DynamoBackend {
    type Reader<'a> = DynamoReader<'a>;

    fn reader(&self) -> Result<DynamoReader<'_>, StorageError> {
        Ok(DynamoReader::new(self))
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

    /// A `Scan` reads each item as of its own moment: a backup of a table that is being
    /// written is not one snapshot (the table's point-in-time recovery is; docs/backups.md).
    fn backup_reader(
        &self,
    ) -> Result<(DynamoReader<'_>, pathdb_store::backend::BackupPoint), StorageError> {
        Ok((
            DynamoReader::new(self),
            pathdb_store::backend::BackupPoint {
                commit: None,
                snapshot: false,
                database: None,
            },
        ))
    }

    /// One `DescribeTable`: the table is reachable with these credentials and `ACTIVE`.
    fn ready(&self) -> Result<(), StorageError> {
        self.block_on(async {
            let request = self.client.describe_table().table_name(&self.table);
            let out = self
                .read("DescribeTable", || {
                    let request = request.clone();
                    async move {
                        request
                            .send()
                            .await
                            .map_err(|e| retry::classify("DescribeTable", e))
                    }
                })
                .await?;
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
