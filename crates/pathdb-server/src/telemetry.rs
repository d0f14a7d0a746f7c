//! Prometheus metrics at `/metrics`, and what the server itself measures.
//!
//! The crates below record through the `metrics` facade (the file backend's commit latency and
//! group sizes, DynamoDB requests and read units); the server installs the Prometheus recorder
//! once per process and renders it. Request metrics are labelled with the matched route
//! template (`/v1/items/{*path}`), never the raw path, so their number stays bounded.

use axum::http::HeaderValue;
use metrics::{Counter, Histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::OnceLock;
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

/// A metric's handle by its labels, per thread: `metrics::counter!` with labels builds the key
/// (allocating) and looks it up in the recorder's registry under a lock on every request; a
/// handle is a shared atomic. Routes are templates, so the maps stay small.
type Handles<K> = HashMap<K, (Counter, Histogram)>;
type RequestHandles = HashMap<String, Handles<(&'static str, &'static str)>>;

thread_local! {
    static REQUEST_HANDLES: RefCell<RequestHandles> = RefCell::new(HashMap::new());
    static STORE_HANDLES: RefCell<Handles<(&'static str, bool)>> = RefCell::new(HashMap::new());
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
    REQUEST_HANDLES.with_borrow_mut(|handles| {
        if !handles.contains_key(route) {
            handles.insert(route.to_owned(), HashMap::new());
        }
        let Some(by_route) = handles.get_mut(route) else {
            return;
        };
        let (counter, histogram) = by_route.entry((method, status)).or_insert_with(|| {
            (
                metrics::counter!("pathdb_http_requests_total", "method" => method, "route" => route.to_owned(), "status" => status),
                metrics::histogram!("pathdb_http_request_duration_seconds", "method" => method, "route" => route.to_owned()),
            )
        });
        counter.increment(1);
        histogram.record(took);
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
    let took = started.elapsed();
    STORE_HANDLES.with_borrow_mut(|handles| {
        let (counter, histogram) = handles.entry((op, ok)).or_insert_with(|| {
            let outcome = if ok { "ok" } else { "error" };
            (
                metrics::counter!("pathdb_store_operations_total", "op" => op, "outcome" => outcome),
                metrics::histogram!("pathdb_store_operation_duration_seconds", "op" => op),
            )
        });
        counter.increment(1);
        histogram.record(took);
    });
}
