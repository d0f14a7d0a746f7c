//! Request counters: what one store operation costs in DynamoDB requests and capacity units.
//! Each count also goes to the `metrics` facade (`pathdb_dynamodb_requests_total` by request
//! kind, `pathdb_dynamodb_read_units` per request as the endpoint reports it,
//! `pathdb_dynamodb_capacity_units_total` by kind, `read` or `write`, as DynamoDB's pricing rules
//! compute it from the items' sizes, `pathdb_dynamodb_retries_total` by request kind,
//! `pathdb_dynamodb_lost_answers_settled_total`, `pathdb_dynamodb_page_shrinks_total` by request
//! kind), which a server exports.
//!
//! Capacity units two ways: as the endpoint reports them (`ReturnConsumedCapacity`: DynamoDB's
//! bill; moto reports fixed placeholders, and nothing for transactions), and as the pricing
//! rules make them from the sizes of the items sent and received, which any endpoint allows: a
//! consistent read is 1 unit per 4 KB (of all items a `Query` or `Scan` read together, at least
//! 1), a transactional read 2 per 4 KB per item; a write 1 unit per KB per item, a transactional
//! one 2 per KB per item. The model cannot know a replaced or deleted item's size (DynamoDB bills
//! a put the larger of the old and new item): it counts the new item, and 1 KB for a delete or a
//! condition check.

use std::sync::atomic::{AtomicU64, Ordering};

/// Requests sent by a [`crate::DynamoBackend`], by kind.
#[derive(Default, Debug)]
pub struct Metrics {
    gets: AtomicU64,
    queries: AtomicU64,
    scans: AtomicU64,
    writes: AtomicU64,
    transactions: AtomicU64,
    /// `TransactGetItems` requests.
    transact_gets: AtomicU64,
    /// `BatchGetItem` requests.
    batch_gets: AtomicU64,
    /// Read capacity units reported by the server, in thousandths.
    read_milli_units: AtomicU64,
    /// Write capacity units reported by the server, in thousandths.
    write_milli_units: AtomicU64,
    /// Read capacity units by the pricing rules, in thousandths.
    model_read_milli_units: AtomicU64,
    /// Write capacity units by the pricing rules.
    model_write_units: AtomicU64,
    /// The part of them that went to change log entries.
    model_log_write_units: AtomicU64,
    /// Listed items that were not PathDB records (written by another tool), skipped.
    foreign: AtomicU64,
    /// Attempts after the first, of any request.
    retries: AtomicU64,
    /// Writes whose answer was lost, settled by reading what they would have written.
    settled: AtomicU64,
    /// Pages asked again for fewer items after a timeout.
    page_shrinks: AtomicU64,
}

/// A copy of the counters at one moment.
#[derive(Clone, Copy, Default, Debug, PartialEq)]
pub struct Counts {
    /// `GetItem` requests.
    pub gets: u64,
    /// `Query` requests.
    pub queries: u64,
    /// `Scan` requests.
    pub scans: u64,
    /// `PutItem` and `DeleteItem` requests.
    pub writes: u64,
    /// `TransactWriteItems` requests.
    pub transactions: u64,
    /// `TransactGetItems` requests.
    pub transact_gets: u64,
    /// `BatchGetItem` requests.
    pub batch_gets: u64,
    /// Read capacity units consumed, where the server reports them.
    pub read_units: f64,
    /// Write capacity units consumed, where the server reports them.
    pub write_units: f64,
    /// Read capacity units by DynamoDB's pricing rules (module docs).
    pub model_read_units: f64,
    /// Write capacity units by DynamoDB's pricing rules (module docs).
    pub model_write_units: u64,
    /// The part of `model_write_units` spent on change log entries (docs/changes.md): what a
    /// group's log takes of its partition's write capacity.
    pub model_log_write_units: u64,
    /// Listed items skipped because they are not PathDB records.
    pub foreign: u64,
    /// Requests sent again after throttling, a server error, a timeout or a lost connection,
    /// and pages asked again for fewer items (attempts after the first).
    pub retries: u64,
    /// Writes whose answer was lost (a timeout, a reset connection, a 5xx) and whose outcome
    /// was then settled by reading (committed, or certainly not).
    pub settled: u64,
    /// `Scan` or `Query` pages that timed out and were asked again for fewer items (paging.rs).
    pub page_shrinks: u64,
}

impl Counts {
    /// What was counted between `before` and these counts.
    pub fn since(&self, before: &Counts) -> Counts {
        Counts {
            gets: self.gets - before.gets,
            queries: self.queries - before.queries,
            scans: self.scans - before.scans,
            writes: self.writes - before.writes,
            transactions: self.transactions - before.transactions,
            transact_gets: self.transact_gets - before.transact_gets,
            batch_gets: self.batch_gets - before.batch_gets,
            read_units: self.read_units - before.read_units,
            write_units: self.write_units - before.write_units,
            model_read_units: self.model_read_units - before.model_read_units,
            model_write_units: self.model_write_units - before.model_write_units,
            model_log_write_units: self.model_log_write_units - before.model_log_write_units,
            foreign: self.foreign - before.foreign,
            retries: self.retries - before.retries,
            settled: self.settled - before.settled,
            page_shrinks: self.page_shrinks - before.page_shrinks,
        }
    }
}

impl Metrics {
    pub(crate) fn count_get(&self) {
        self.gets.fetch_add(1, Ordering::Relaxed);
        ::metrics::counter!("pathdb_dynamodb_requests_total", "request" => "GetItem").increment(1);
    }
    pub(crate) fn count_query(&self) {
        self.queries.fetch_add(1, Ordering::Relaxed);
        ::metrics::counter!("pathdb_dynamodb_requests_total", "request" => "Query").increment(1);
    }
    pub(crate) fn count_scan(&self) {
        self.scans.fetch_add(1, Ordering::Relaxed);
        ::metrics::counter!("pathdb_dynamodb_requests_total", "request" => "Scan").increment(1);
    }
    pub(crate) fn count_write(&self) {
        self.writes.fetch_add(1, Ordering::Relaxed);
        ::metrics::counter!("pathdb_dynamodb_requests_total", "request" => "PutItem/DeleteItem")
            .increment(1);
    }
    pub(crate) fn count_foreign(&self) {
        self.foreign.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn count_transaction(&self) {
        self.transactions.fetch_add(1, Ordering::Relaxed);
        ::metrics::counter!("pathdb_dynamodb_requests_total", "request" => "TransactWriteItems")
            .increment(1);
    }
    pub(crate) fn count_batch_get(&self) {
        self.batch_gets.fetch_add(1, Ordering::Relaxed);
        ::metrics::counter!("pathdb_dynamodb_requests_total", "request" => "BatchGetItem")
            .increment(1);
    }
    pub(crate) fn count_transact_get(&self) {
        self.transact_gets.fetch_add(1, Ordering::Relaxed);
        ::metrics::counter!("pathdb_dynamodb_requests_total", "request" => "TransactGetItems")
            .increment(1);
    }
    pub(crate) fn count_retry(&self, request: &'static str) {
        self.retries.fetch_add(1, Ordering::Relaxed);
        ::metrics::counter!("pathdb_dynamodb_retries_total", "request" => request).increment(1);
    }
    pub(crate) fn count_page_shrink(&self, request: &'static str) {
        self.page_shrinks.fetch_add(1, Ordering::Relaxed);
        ::metrics::counter!("pathdb_dynamodb_page_shrinks_total", "request" => request)
            .increment(1);
    }
    pub(crate) fn count_settled(&self) {
        self.settled.fetch_add(1, Ordering::Relaxed);
        ::metrics::counter!("pathdb_dynamodb_lost_answers_settled_total").increment(1);
    }
    pub(crate) fn add_read_units(&self, units: Option<f64>) {
        if let Some(u) = units {
            ::metrics::histogram!("pathdb_dynamodb_read_units").record(u);
            self.read_milli_units
                .fetch_add((u * 1000.0).round() as u64, Ordering::Relaxed);
        }
    }

    /// Units the endpoint reported for a write request, if it did.
    pub(crate) fn add_write_units(&self, units: Option<f64>) {
        if let Some(u) = units {
            self.write_milli_units
                .fetch_add((u * 1000.0).round() as u64, Ordering::Relaxed);
        }
    }

    /// A consistent read of `bytes` in one request (a `GetItem`, or a `Query` or `Scan` page):
    /// 1 unit per 4 KB, at least 1.
    pub(crate) fn model_read(&self, bytes: usize) {
        self.add_model_read_milli(bytes.div_ceil(4096).max(1) as u64 * 1000);
    }

    /// The units of one `Query` or `Scan` page: as reported, and by the model from the items it
    /// returned.
    pub(crate) fn count_page_units(
        &self,
        consumed: Option<&aws_sdk_dynamodb::types::ConsumedCapacity>,
        items: &[std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>],
    ) {
        self.add_read_units(consumed.and_then(|c| c.capacity_units()));
        self.model_read(items.iter().map(crate::attrs::size).sum());
    }

    /// One item of a `TransactGetItems`: 2 units per 4 KB, at least 2.
    pub(crate) fn model_transact_read(&self, bytes: usize) {
        self.add_model_read_milli(bytes.div_ceil(4096).max(1) as u64 * 2000);
    }

    fn add_model_read_milli(&self, milli: u64) {
        self.model_read_milli_units
            .fetch_add(milli, Ordering::Relaxed);
        ::metrics::counter!("pathdb_dynamodb_capacity_units_total", "kind" => "read")
            .increment(milli.div_ceil(1000));
    }

    /// One item written of `bytes` (1 KB when unknown): 1 unit per KB, at least 1, twice in a
    /// transaction.
    pub(crate) fn model_write(&self, bytes: usize, transactional: bool) {
        self.add_model_write(bytes, transactional);
    }

    /// [`Metrics::model_write`] of a change log entry, also counted apart.
    pub(crate) fn model_log_write(&self, bytes: usize, transactional: bool) {
        let units = self.add_model_write(bytes, transactional);
        self.model_log_write_units
            .fetch_add(units, Ordering::Relaxed);
    }

    fn add_model_write(&self, bytes: usize, transactional: bool) -> u64 {
        let units = bytes.div_ceil(1024).max(1) as u64 * if transactional { 2 } else { 1 };
        self.model_write_units.fetch_add(units, Ordering::Relaxed);
        ::metrics::counter!("pathdb_dynamodb_capacity_units_total", "kind" => "write")
            .increment(units);
        units
    }

    /// The counters now.
    pub fn counts(&self) -> Counts {
        Counts {
            gets: self.gets.load(Ordering::Relaxed),
            queries: self.queries.load(Ordering::Relaxed),
            scans: self.scans.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            transactions: self.transactions.load(Ordering::Relaxed),
            transact_gets: self.transact_gets.load(Ordering::Relaxed),
            batch_gets: self.batch_gets.load(Ordering::Relaxed),
            read_units: self.read_milli_units.load(Ordering::Relaxed) as f64 / 1000.0,
            write_units: self.write_milli_units.load(Ordering::Relaxed) as f64 / 1000.0,
            model_read_units: self.model_read_milli_units.load(Ordering::Relaxed) as f64 / 1000.0,
            model_write_units: self.model_write_units.load(Ordering::Relaxed),
            model_log_write_units: self.model_log_write_units.load(Ordering::Relaxed),
            foreign: self.foreign.load(Ordering::Relaxed),
            retries: self.retries.load(Ordering::Relaxed),
            settled: self.settled.load(Ordering::Relaxed),
            page_shrinks: self.page_shrinks.load(Ordering::Relaxed),
        }
    }
}

/// The capacity units of a response that names them per table: their sum, if any.
pub(crate) fn reported(consumed: &[aws_sdk_dynamodb::types::ConsumedCapacity]) -> Option<f64> {
    consumed
        .iter()
        .filter_map(|c| c.capacity_units())
        .reduce(|a, b| a + b)
}
