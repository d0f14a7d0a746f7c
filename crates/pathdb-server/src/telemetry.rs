//! Prometheus metrics at `/metrics`, and what the server itself measures.
//!
//! The crates below record through the `metrics` facade (the file backend's commit latency and
//! group sizes, DynamoDB requests and read units); the server installs the Prometheus recorder
//! once per process and renders it. Request metrics are labelled with the matched route
//! template (`/v1/items/{*path}`), never the raw path, so their number stays bounded.

use axum::http::HeaderValue;
use metrics::{Counter, Histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// Latency buckets in seconds: 100 µs to 10 s.
const SECONDS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];
/// Group-commit sizes: how many write batches one commit took.
const BATCHES: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0];
/// DynamoDB read capacity units per request.
const UNITS: &[f64] = &[0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0];

static RECORDER: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// The process's Prometheus recorder, installed on first use. `None` if another global
/// recorder was installed first (then `/metrics` answers 503).
pub fn prometheus() -> Option<PrometheusHandle> {
    RECORDER.get_or_init(install).clone()
}

fn install() -> Option<PrometheusHandle> {
    let recorder = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), SECONDS)
        .and_then(|b| {
            b.set_buckets_for_metric(Matcher::Full("pathdb_commit_batches".into()), BATCHES)
        })
        .and_then(|b| {
            b.set_buckets_for_metric(Matcher::Full("pathdb_dynamodb_read_units".into()), UNITS)
        })
        .map_err(|e| tracing::warn!(error = %e, "metrics buckets"))
        .ok()?
        .build_recorder();
    let handle = recorder.handle();
    if metrics::set_global_recorder(recorder).is_err() {
        tracing::warn!("another metrics recorder is installed: /metrics is unavailable");
        return None;
    }
    // Histogram samples are buffered until upkeep folds them in; keep that bounded between
    // scrapes.
    let upkeep = handle.clone();
    let spawned = std::thread::Builder::new()
        .name("pathdb-metrics".into())
        .spawn(move || {
            loop {
                std::thread::sleep(Duration::from_secs(5));
                upkeep.run_upkeep();
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot start the metrics upkeep thread");
    }
    Some(handle)
}

/// Methods and statuses the API answers: their labels are static, and their handles cached.
const METHODS: &[&str] = &["GET", "PUT", "POST", "DELETE", "HEAD", "OPTIONS", "PATCH"];
const STATUSES: &[&str] = &[
    "200", "201", "304", "400", "401", "403", "404", "405", "408", "409", "412", "413", "415",
    "431", "500", "503",
];

fn known(text: &str, labels: &'static [&'static str]) -> Option<&'static str> {
    labels.iter().copied().find(|l| *l == text)
}

/// A counter and a histogram of the same thing (requests of a route, operations of the store),
/// with this thread's samples not yet folded into them.
struct Series {
    counter: Counter,
    histogram: Histogram,
    /// Seconds.
    pending: Vec<f64>,
}

impl Series {
    fn new(counter: Counter, histogram: Histogram) -> Series {
        Series {
            counter,
            histogram,
            pending: Vec::with_capacity(FOLD_EVERY),
        }
    }

    fn fold(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        self.counter.increment(self.pending.len() as u64);
        for seconds in self.pending.drain(..) {
            self.histogram.record(seconds);
        }
    }
}

/// One thread's series, by their labels. `metrics::counter!` with labels builds the key
/// (allocating) and looks it up in the recorder's registry under a lock on every request; here
/// each thread keeps the handles it has used (routes are templates, so the maps stay small).
/// And a handle is shared: counting into it is an atomic write to a line every worker thread
/// writes, several per request (the counter, the histogram's sample list, and the generation
/// counter of each), which bounced between the cores on every get. So a thread gathers
/// [`FOLD_EVERY`] samples before it folds them in, and `/metrics` folds every thread's in
/// before it renders ([`fold_all`]): a scrape still counts every request answered before it.
#[derive(Default)]
struct ThreadSeries {
    requests: Map<String, Map<(&'static str, &'static str), Series>>,
    store: Map<(&'static str, bool), Series>,
    pending: usize,
}

/// Looked up twice per request: foldhash rather than SipHash, whose resistance to chosen keys
/// these maps do not need (their keys are the server's own labels).
type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Samples a thread gathers before it folds them into the shared handles.
const FOLD_EVERY: usize = 64;

impl ThreadSeries {
    /// Adds one sample to `series`, folding this thread's samples in every [`FOLD_EVERY`].
    fn add(&mut self, series: impl FnOnce(&mut ThreadSeries) -> &mut Series, seconds: f64) {
        series(self).pending.push(seconds);
        self.pending += 1;
        if self.pending >= FOLD_EVERY {
            self.fold();
        }
    }

    fn fold(&mut self) {
        for by_status in self.requests.values_mut() {
            by_status.values_mut().for_each(Series::fold);
        }
        self.store.values_mut().for_each(Series::fold);
        self.pending = 0;
    }
}

type Shared = Arc<Mutex<ThreadSeries>>;

/// Every thread's series, for [`fold_all`]; a thread's own is locked by that thread alone but
/// for a scrape's fold, so the lock costs no contention. A thread that has ended stays until its
/// samples are folded in by another (folding records into the histograms, which read a clock
/// kept in thread-local storage: not on a thread that is ending).
static THREADS: Mutex<Vec<(Shared, Arc<AtomicBool>)>> = Mutex::new(Vec::new());

/// A thread's series, and whether the thread has ended.
struct Local(Shared, Arc<AtomicBool>);

impl Drop for Local {
    fn drop(&mut self) {
        self.1.store(true, Ordering::Release);
    }
}

thread_local! {
    static LOCAL: Local = {
        let series = Shared::default();
        let ended = Arc::new(AtomicBool::new(false));
        let mut threads = lock(&THREADS);
        fold_ended(&mut threads);
        threads.push((Arc::clone(&series), Arc::clone(&ended)));
        Local(series, ended)
    };
}

/// Folds in the samples of the threads that have ended, and forgets them.
fn fold_ended(threads: &mut Vec<(Shared, Arc<AtomicBool>)>) {
    threads.retain(|(series, ended)| {
        let ended = ended.load(Ordering::Acquire);
        if ended {
            lock(series).fold();
        }
        !ended
    });
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `f` on this thread's series. A thread that is ending (its thread-local storage being
/// destroyed) records nothing: the histograms' own clock is thread-local storage too.
fn with_series(f: impl FnOnce(&mut ThreadSeries)) {
    let _ = LOCAL.try_with(|local| f(&mut lock(&local.0)));
}

/// Folds every thread's gathered samples into the shared handles: before `/metrics` renders.
pub(crate) fn fold_all() {
    let mut threads = lock(&THREADS);
    fold_ended(&mut threads);
    for (series, _) in threads.iter() {
        lock(series).fold();
    }
}

/// Counts one request by method, route template and status, and records its latency (the
/// route layer `gate::TrackRequests`).
pub(crate) fn record_request(method: &str, route: &str, status: &str, took: Duration) {
    let (Some(method), Some(status)) = (known(method, METHODS), known(status, STATUSES)) else {
        // Rare (an unusual method or status): not worth a cached handle.
        let (method, status) = (method.to_owned(), status.to_owned());
        metrics::counter!("pathdb_http_requests_total", "method" => method.clone(), "route" => route.to_owned(), "status" => status)
            .increment(1);
        metrics::histogram!("pathdb_http_request_duration_seconds", "method" => method, "route" => route.to_owned())
            .record(took);
        return;
    };
    let series = || {
        Series::new(
            metrics::counter!("pathdb_http_requests_total", "method" => method, "route" => route.to_owned(), "status" => status),
            metrics::histogram!("pathdb_http_request_duration_seconds", "method" => method, "route" => route.to_owned()),
        )
    };
    with_series(|thread| {
        thread.add(
            |thread| {
                // Looked up by `&str`: `entry` would take an owned key, allocating.
                if !thread.requests.contains_key(route) {
                    thread.requests.insert(route.to_owned(), Map::default());
                }
                let by_status = thread.requests.get_mut(route).expect("inserted above");
                by_status.entry((method, status)).or_insert_with(series)
            },
            took.as_secs_f64(),
        );
    });
}

thread_local! {
    static ID_STATE: Cell<u64> = Cell::new({
        let (a, b) = uuid::Uuid::new_v4().as_u64_pair();
        a ^ b
    });
}

/// SplitMix64.
fn next_u64() -> u64 {
    ID_STATE.with(|state| {
        let mut z = state.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
        state.set(z);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    })
}

/// A new `x-request-id` value: a random version-4 UUID from a per-thread generator seeded once
/// from the operating system, instead of a `getrandom` system call per request (as tower-http's
/// `MakeRequestUuid` makes them). Request ids need to be unique, not unguessable.
pub(crate) fn new_request_id() -> Option<HeaderValue> {
    let bytes = (u128::from(next_u64()) << 64 | u128::from(next_u64())).to_le_bytes();
    let id = uuid::Builder::from_random_bytes(bytes).into_uuid();
    let mut text = [0u8; uuid::fmt::Hyphenated::LENGTH];
    HeaderValue::from_str(id.hyphenated().encode_lower(&mut text)).ok()
}

/// Records one store operation: its outcome and latency.
pub fn store_operation(op: &'static str, started: Instant, ok: bool) {
    let took = started.elapsed().as_secs_f64();
    let series = || {
        let outcome = if ok { "ok" } else { "error" };
        Series::new(
            metrics::counter!("pathdb_store_operations_total", "op" => op, "outcome" => outcome),
            metrics::histogram!("pathdb_store_operation_duration_seconds", "op" => op),
        )
    };
    with_series(|thread| {
        thread.add(
            |thread| thread.store.entry((op, ok)).or_insert_with(series),
            took,
        );
    });
}

#[cfg(test)]
mod test;
