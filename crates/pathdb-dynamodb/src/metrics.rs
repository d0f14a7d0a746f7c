//! Request counters: what one store operation costs in DynamoDB requests and read units. Each
//! count also goes to the `metrics` facade (`pathdb_dynamodb_requests_total` by request kind,
//! `pathdb_dynamodb_read_units` per request, `pathdb_dynamodb_retries_total` by request kind,
//! `pathdb_dynamodb_lost_answers_settled_total`, `pathdb_dynamodb_page_shrinks_total` by request
//! kind), which a server exports.

use std::sync::atomic::{AtomicU64, Ordering};

/// Requests sent by a [`crate::DynamoBackend`], by kind.
#[derive(Default, Debug)]
pub struct Metrics {
    gets: AtomicU64,
    queries: AtomicU64,
    scans: AtomicU64,
    writes: AtomicU64,
    transactions: AtomicU64,
    /// Read capacity units reported by the server, in thousandths.
    read_milli_units: AtomicU64,
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
    /// Read capacity units consumed, where the server reports them.
    pub read_units: f64,
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
        ::metrics::counter!("pathdb_dynamodb_requests_total", "request" => "TransactItems")
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

    /// The counters now.
    pub fn counts(&self) -> Counts {
        Counts {
            gets: self.gets.load(Ordering::Relaxed),
            queries: self.queries.load(Ordering::Relaxed),
            scans: self.scans.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            transactions: self.transactions.load(Ordering::Relaxed),
            read_units: self.read_milli_units.load(Ordering::Relaxed) as f64 / 1000.0,
            foreign: self.foreign.load(Ordering::Relaxed),
            retries: self.retries.load(Ordering::Relaxed),
            settled: self.settled.load(Ordering::Relaxed),
            page_shrinks: self.page_shrinks.load(Ordering::Relaxed),
        }
    }
}
