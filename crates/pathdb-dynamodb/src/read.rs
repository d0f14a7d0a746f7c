//! The read path: [`DynamoReader`], the store's `Reader` on DynamoDB, and the requests behind
//! it (`GetItem`, `BatchGetItem`, `TransactGetItems`, `Query`, `Scan`; the crate's docs have the
//! table of which method sends which). Every read is strongly consistent; none is a snapshot
//! across requests, except `get_many`, which reads its groups again until two reads agree.
//! Every request goes through the retry budget (retry.rs), and every `Query` and `Scan` page
//! through a page size that shrinks after timeouts (paging.rs), one per kind of paged read.
//! The write path (write.rs) reads through here too: a record before a lone write, the change
//! log's last entry.

use crate::DynamoBackend;
use crate::attrs;
use crate::metrics::reported;
use crate::paging::PageSize;
use crate::retry::{self, Class, Failure};
use aws_sdk_dynamodb::types::{AttributeValue, Get, KeysAndAttributes, TransactGetItem};
use pathdb_store::StorageError;
use pathdb_store::backend::{Direction, Key, Reader, Record, SortRange};
use std::collections::HashMap;

/// Keys per `TransactGetItems`: DynamoDB allows 100 (25 before 2022). An endpoint that allows
/// fewer (moto: 25) says so in its refusal, and the backend reads in groups of that size from
/// then on (`get_many` then checks that the groups make one snapshot).
pub const MAX_TRANSACT_GET_ITEMS: usize = 100;
/// Reads of all groups a `get_many` of several `TransactGetItems` makes at most, looking for two
/// in a row that find every version unchanged (one snapshot).
const SNAPSHOT_READS: usize = 16;
/// Keys per `BatchGetItem` (DynamoDB's limit).
pub const MAX_BATCH_GET_ITEMS: usize = 100;

/// Page sizes that shrink after timeouts (paging.rs), one per kind of paged read: their items
/// cost the endpoint differently.
pub(crate) struct Pages {
    query: PageSize,
    scan: PageSize,
    partitions: PageSize,
}

impl Default for Pages {
    fn default() -> Self {
        Pages {
            query: PageSize::new(MAX_PAGE),
            scan: PageSize::new(MAX_PAGE),
            partitions: PageSize::new(PARTITION_PAGE),
        }
    }
}

impl DynamoBackend {
    /// Sends a request that changes nothing within the retry budget (retry.rs): `send` makes
    /// one attempt.
    pub(crate) async fn read<T, F, Fut>(&self, what: &'static str, send: F) -> Result<T, Failure>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, Failure>>,
    {
        retry::read(&self.retry, &self.metrics, what, send).await
    }

    /// One page of a `Scan` or `Query` within the retry budget, its `Limit` adapting to timeouts
    /// (paging.rs): `send` makes one attempt with the `Limit` it is given.
    async fn read_page<T, F, Fut>(
        &self,
        what: &'static str,
        size: &PageSize,
        wanted: u32,
        send: F,
    ) -> Result<T, Failure>
    where
        F: FnMut(u32) -> Fut,
        Fut: std::future::Future<Output = Result<T, Failure>>,
    {
        retry::read_page(&self.retry, &self.metrics, what, size, wanted, send).await
    }

    pub(crate) async fn get_async(&self, key: &Key) -> Result<Option<Record>, StorageError> {
        self.metrics.count_get();
        let request = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(self.key_map(key)))
            .consistent_read(true)
            .return_consumed_capacity(aws_sdk_dynamodb::types::ReturnConsumedCapacity::Total);
        let out = self
            .read("GetItem", || {
                let request = request.clone();
                async move {
                    request
                        .send()
                        .await
                        .map_err(|e| retry::classify("GetItem", e))
                }
            })
            .await?;
        self.metrics
            .add_read_units(out.consumed_capacity().and_then(|c| c.capacity_units()));
        self.metrics.model_read(out.item().map_or(0, attrs::size));
        out.item()
            .map(|item| attrs::record(item).map(|(_, r)| r))
            .transpose()
    }

    /// Keys in groups of [`MAX_BATCH_GET_ITEMS`], each one consistent `BatchGetItem` (1 read unit
    /// per 4 KB of each item, half a `TransactGetItems`), asked again for the keys DynamoDB
    /// leaves unprocessed (throttling, or a response over 16 MB) within the retry budget.
    async fn get_batch_async(&self, keys: &[Key]) -> Result<Vec<Option<Record>>, StorageError> {
        let mut found: HashMap<Key, Record> = HashMap::with_capacity(keys.len());
        for chunk in keys.chunks(MAX_BATCH_GET_ITEMS) {
            let mut pending: Vec<HashMap<String, AttributeValue>> =
                chunk.iter().map(|k| self.key_map(k)).collect();
            let mut rounds = 0u32;
            while !pending.is_empty() {
                let asked_keys = pending.len();
                let asked = KeysAndAttributes::builder()
                    .set_keys(Some(pending))
                    .consistent_read(true)
                    .build()
                    .map_err(|e| StorageError::new("building BatchGetItem", e))?;
                let request = self
                    .client
                    .batch_get_item()
                    .request_items(&self.table, asked)
                    .return_consumed_capacity(
                        aws_sdk_dynamodb::types::ReturnConsumedCapacity::Total,
                    );
                self.metrics.count_batch_get();
                let out = self
                    .read("BatchGetItem", || {
                        let request = request.clone();
                        async move {
                            request
                                .send()
                                .await
                                .map_err(|e| retry::classify("BatchGetItem", e))
                        }
                    })
                    .await?;
                self.metrics
                    .add_read_units(reported(out.consumed_capacity()));
                let items = out
                    .responses()
                    .and_then(|r| r.get(&self.table))
                    .map_or(&[][..], Vec::as_slice);
                for item in items {
                    // Each item is rounded up on its own.
                    self.metrics.model_read(attrs::size(item));
                    let (key, record) = attrs::record(item)?;
                    found.insert(key, record);
                }
                pending = out
                    .unprocessed_keys()
                    .and_then(|u| u.get(&self.table))
                    .map(|k| k.keys().to_vec())
                    .unwrap_or_default();
                // A key read and not found still bills a unit.
                for _ in items.len() + pending.len()..asked_keys {
                    self.metrics.model_read(0);
                }
                if !pending.is_empty() {
                    rounds += 1;
                    if rounds >= self.retry.max_attempts {
                        return Err(StorageError::msg(format!(
                            "BatchGetItem left {} keys unprocessed after {rounds} rounds",
                            pending.len()
                        ))
                        .with_kind(pathdb_store::StorageErrorKind::Unavailable));
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(10 << rounds.min(6))).await;
                }
            }
        }
        Ok(keys.iter().map(|k| found.get(k).cloned()).collect())
    }

    /// The records at `keys`, as one snapshot: one `TransactGetItems` (serializable with
    /// every transaction) when the endpoint takes that many keys at once. In several requests,
    /// each atomic, the groups are read again until two reads in a row find every version the
    /// same: versions only grow, so each key held its version from the first of those reads to
    /// the second, and all of them at once between the two.
    async fn get_many_async(&self, keys: &[Key]) -> Result<Vec<Option<Record>>, StorageError> {
        let (mut read, requests) = self.read_groups(keys).await?;
        if requests < 2 {
            return Ok(read);
        }
        let versions = |records: &[Option<Record>]| -> Vec<Option<u64>> {
            records
                .iter()
                .map(|r| r.as_ref().map(|r| r.version))
                .collect()
        };
        for _ in 1..SNAPSHOT_READS {
            let (again, _) = self.read_groups(keys).await?;
            if versions(&again) == versions(&read) {
                return Ok(read);
            }
            read = again;
        }
        Err(StorageError::msg(format!(
            "get_many of {} keys: the items kept changing while they were read in several \
             requests ({SNAPSHOT_READS} reads), so no snapshot was found; retry",
            keys.len()
        ))
        .with_kind(pathdb_store::StorageErrorKind::Unavailable))
    }

    /// The records at `keys`, in groups of the endpoint's `TransactGetItems` limit, each group
    /// atomic, the groups' requests sent together (so that the read spans as short a time as
    /// the endpoint allows); and how many requests that took.
    async fn read_groups(
        &self,
        keys: &[Key],
    ) -> Result<(Vec<Option<Record>>, usize), StorageError> {
        loop {
            let limit = self
                .transact_get_limit
                .load(std::sync::atomic::Ordering::Relaxed);
            let groups = futures_util::future::join_all(
                keys.chunks(limit)
                    .map(|chunk| self.read_group(chunk, limit)),
            )
            .await;
            let mut out = Vec::with_capacity(keys.len());
            let mut requests = 0;
            let mut fewer = false;
            for group in groups {
                match group? {
                    Some((records, sent)) => {
                        out.extend(records);
                        requests += sent;
                    }
                    None => fewer = true,
                }
            }
            if !fewer {
                return Ok((out, requests));
            }
        }
    }

    /// The records at `chunk` (one `TransactGetItems`), and the requests that took; `None`
    /// when the endpoint takes fewer keys at once than `limit` (the backend's limit is lowered:
    /// read again).
    async fn read_group(
        &self,
        chunk: &[Key],
        limit: usize,
    ) -> Result<Option<(Vec<Option<Record>>, usize)>, StorageError> {
        let mut out = Vec::with_capacity(chunk.len());
        let mut requests = 1;
        if let [key] = chunk {
            out.push(self.get_async(key).await?);
            return Ok(Some((out, requests)));
        }
        self.metrics.count_transact_get();
        let mut items = Vec::with_capacity(chunk.len());
        for key in chunk {
            let get = Get::builder()
                .table_name(&self.table)
                .set_key(Some(self.key_map(key)))
                .build()
                .map_err(|e| StorageError::new("building TransactGetItems", e))?;
            items.push(TransactGetItem::builder().get(get).build());
        }
        let request = self
            .client
            .transact_get_items()
            .set_transact_items(Some(items))
            .return_consumed_capacity(aws_sdk_dynamodb::types::ReturnConsumedCapacity::Total);
        let response = match self
            .read("TransactGetItems", || {
                let request = request.clone();
                async move {
                    request.send().await.map_err(|e| {
                        let failure = retry::classify("TransactGetItems", e);
                        // Cancelled because a transaction was writing one of the items at
                        // that moment (or throttled): it reads fine a moment later.
                        if failure.code.as_deref() == Some("TransactionCanceledException") {
                            Failure {
                                class: Class::Refused,
                                ..failure
                            }
                        } else {
                            failure
                        }
                    })
                }
            })
            .await
        {
            Ok(r) => r,
            // DynamoDB and moto have TransactGetItems; dynalite does not. There, read the
            // keys one by one: each read is consistent, the group is not atomic.
            Err(e) if e.code.as_deref() == Some("UnknownOperationException") => {
                tracing::warn!(
                    "this DynamoDB endpoint has no TransactGetItems; get_many reads key by key"
                );
                for key in chunk {
                    requests += 1;
                    out.push(self.get_async(key).await?);
                }
                return Ok(Some((out, requests)));
            }
            // An endpoint that takes fewer keys at once (moto: 25): read in its groups.
            Err(e) if e.code.as_deref() == Some("ValidationException") => {
                match fewer_keys_allowed(e.error.message()).filter(|&n| n > 0 && n < limit) {
                    Some(allowed) => {
                        tracing::info!(
                            allowed,
                            "this DynamoDB endpoint takes {allowed} keys per TransactGetItems"
                        );
                        self.transact_get_limit
                            .fetch_min(allowed, std::sync::atomic::Ordering::Relaxed);
                        return Ok(None);
                    }
                    None => return Err(e.into()),
                }
            }
            Err(e) => return Err(e.into()),
        };
        self.metrics
            .add_read_units(reported(response.consumed_capacity()));
        let responses = response.responses();
        if responses.len() != chunk.len() {
            return Err(StorageError::msg(format!(
                "TransactGetItems answered {} of {} keys",
                responses.len(),
                chunk.len()
            )));
        }
        for r in responses {
            self.metrics
                .model_transact_read(r.item().map_or(0, attrs::size));
            out.push(
                r.item()
                    .map(|item| attrs::record(item).map(|(_, rec)| rec))
                    .transpose()?,
            );
        }
        Ok(Some((out, requests)))
    }

    pub(crate) async fn query(
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
            let room = condition.leading_excluded(direction == Direction::Reverse);
            let wanted = u32::try_from((limit - out.len()).saturating_add(room))
                .unwrap_or(MAX_PAGE)
                .min(MAX_PAGE);
            let request = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression(&condition.expression)
                .set_expression_attribute_values(Some(condition.values.clone()))
                .scan_index_forward(direction == Direction::Forward)
                .consistent_read(true)
                .set_exclusive_start_key(start_key.take())
                .return_consumed_capacity(aws_sdk_dynamodb::types::ReturnConsumedCapacity::Total);
            self.metrics.count_query();
            let response = self
                .read_page("Query", &self.pages.query, wanted, |page| {
                    let request = request.clone().limit(page_limit(page));
                    async move {
                        request
                            .send()
                            .await
                            .map_err(|e| retry::classify("Query", e))
                    }
                })
                .await?;
            self.metrics
                .count_page_units(response.consumed_capacity(), response.items());
            for item in response.items() {
                let Some((key, record)) = self.pathdb_record(item) else {
                    continue;
                };
                if condition.excludes(&key.sort) {
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
            let wanted = u32::try_from(limit - out.len())
                .unwrap_or(MAX_PAGE)
                .min(MAX_PAGE);
            let request = self
                .client
                .scan()
                .table_name(&self.table)
                .consistent_read(true)
                .set_exclusive_start_key(start_key.take())
                .return_consumed_capacity(aws_sdk_dynamodb::types::ReturnConsumedCapacity::Total);
            self.metrics.count_scan();
            let response = self
                .read_page("Scan", &self.pages.scan, wanted, |page| {
                    let request = request.clone().limit(page_limit(page));
                    async move { request.send().await.map_err(|e| retry::classify("Scan", e)) }
                })
                .await?;
            self.metrics
                .count_page_units(response.consumed_capacity(), response.items());
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
            let request = self
                .client
                .scan()
                .table_name(&self.table)
                .consistent_read(true)
                .projection_expression("pk")
                .set_exclusive_start_key(start_key.take())
                .return_consumed_capacity(aws_sdk_dynamodb::types::ReturnConsumedCapacity::Total);
            self.metrics.count_scan();
            let response = self
                .read_page("Scan", &self.pages.partitions, PARTITION_PAGE, |page| {
                    let request = request.clone().limit(page_limit(page));
                    async move { request.send().await.map_err(|e| retry::classify("Scan", e)) }
                })
                .await?;
            // DynamoDB bills the whole items read, not the projection: the model's is a floor.
            self.metrics
                .count_page_units(response.consumed_capacity(), response.items());
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

/// The most items a `Query` or an item `Scan` asks for in one page.
const MAX_PAGE: u32 = 1000;

/// Keys per page of the partition listing's `Scan` before any timeout: it projects only `pk`,
/// so a page this long stays well inside DynamoDB's 1 MB page.
const PARTITION_PAGE: u32 = 10_000;

/// A page size as the SDK takes it.
fn page_limit(page: u32) -> i32 {
    i32::try_from(page).unwrap_or(i32::MAX)
}

/// Reads through a [`DynamoBackend`]: every request strongly consistent, no cross-request snapshot.
pub struct DynamoReader<'a> {
    backend: &'a DynamoBackend,
    /// Rows of other tools the full scan passed over.
    skipped: std::sync::atomic::AtomicU64,
}

impl<'a> DynamoReader<'a> {
    /// A reader on `backend`, having skipped nothing yet.
    pub(crate) fn new(backend: &'a DynamoBackend) -> DynamoReader<'a> {
        DynamoReader {
            backend,
            skipped: Default::default(),
        }
    }
}

impl Reader for DynamoReader<'_> {
    fn get(&self, key: &Key) -> Result<Option<Record>, StorageError> {
        self.backend.block_on(self.backend.get_async(key))
    }

    fn get_many(&self, keys: &[Key]) -> Result<Vec<Option<Record>>, StorageError> {
        self.backend.block_on(self.backend.get_many_async(keys))
    }

    fn get_batch(&self, keys: &[Key]) -> Result<Vec<Option<Record>>, StorageError> {
        self.backend.block_on(self.backend.get_batch_async(keys))
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

/// The number in a `ValidationException` that refuses a request for holding too many items
/// ("... Member must have length less than or equal to 25").
fn fewer_keys_allowed(message: &str) -> Option<usize> {
    let (_, after) = message.rsplit_once("less than or equal to ")?;
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod limit_test {
    use super::fewer_keys_allowed;

    #[test]
    fn the_allowed_number_is_read_from_a_refusal() {
        // moto's words for 26 keys or more.
        let moto = "1 validation error detected: Value '[com.amazonaws.dynamodb.v20120810.TransactGetItem@10000001]' \
                    at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to 25";
        assert_eq!(fewer_keys_allowed(moto), Some(25));
        assert_eq!(
            fewer_keys_allowed("Member must have length less than or equal to 100."),
            Some(100)
        );
        assert_eq!(
            fewer_keys_allowed("One or more parameter values were invalid"),
            None
        );
    }
}
