//! Prometheus metrics at `/metrics`, and what the server itself measures.
//!
//! The crates below record through the `metrics` facade (the file backend's commit latency and
//! group sizes, DynamoDB requests and read units); the server installs the Prometheus recorder
//! once per process and renders it. Request metrics are labelled with the matched route
//! template (`/v1/items/{*path}`), never the raw path, so their number stays bounded.

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
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

/// Route layer: counts requests by method, route template and status, and times them.
pub async fn track_requests(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = static_label(request.method().as_str(), METHODS);
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let response = next.run(request).await;
    let status = static_label(response.status().as_str(), STATUSES);
    metrics::counter!("pathdb_http_requests_total", "method" => method.clone(), "route" => route.clone(), "status" => status)
        .increment(1);
    metrics::histogram!("pathdb_http_request_duration_seconds", "method" => method, "route" => route)
        .record(started.elapsed());
    response
}

/// Methods and statuses the API answers: labels from these need no allocation per request.
const METHODS: &[&str] = &["GET", "PUT", "POST", "DELETE", "HEAD", "OPTIONS", "PATCH"];
const STATUSES: &[&str] = &[
    "200", "201", "304", "400", "401", "403", "404", "405", "408", "409", "412", "413", "415",
    "431", "500", "503",
];

fn static_label(text: &str, known: &'static [&'static str]) -> metrics::SharedString {
    match known.iter().find(|k| **k == text) {
        Some(k) => metrics::SharedString::const_str(k),
        None => metrics::SharedString::from(text.to_owned()),
    }
}

/// Records one store operation: its outcome and latency.
pub fn store_operation(op: &'static str, started: Instant, ok: bool) {
    let outcome = if ok { "ok" } else { "error" };
    metrics::counter!("pathdb_store_operations_total", "op" => op, "outcome" => outcome)
        .increment(1);
    metrics::histogram!("pathdb_store_operation_duration_seconds", "op" => op)
        .record(started.elapsed());
}
