//! What the handlers of items (handlers.rs) and of the change feed (changes.rs) share: running
//! a store call off or on the async worker, answering with an item, reading a create's target.
//! Below both: it knows no route.

use crate::AppState;
use crate::error::ApiError;
use crate::precondition;
use crate::telemetry;
use crate::wire::item_json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use pathdb_store::backend::Backend;
use pathdb_store::{Item, Parent, Store};

pub(crate) fn task_failed() -> ApiError {
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        "request task failed",
    )
}

/// Runs a store call on the blocking pool.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|_| task_failed())?
}

/// Runs one store operation on the blocking pool, counted and timed as `op` in `/metrics`.
pub(crate) async fn store_call<T: Send + 'static>(
    op: &'static str,
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    let started = std::time::Instant::now();
    let result = blocking(f).await;
    telemetry::store_operation(op, started, result.is_ok());
    result
}

/// Runs a store read of a few keys, counted and timed as `op` in `/metrics`: right here on the
/// async worker when the backend says its point reads never block (a redb lookup takes a few
/// microseconds, far less than handing it to the blocking pool and waking this task again), on
/// the blocking pool otherwise (DynamoDB blocks on its own runtime). Scans go to the pool
/// ([`store_call`]), and so does every write but a single put on such a backend (`put_item`).
pub(crate) async fn point_read<B: Backend, T: Send + 'static>(
    state: AppState<B>,
    op: &'static str,
    f: impl FnOnce(&Store<B>) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    if !state.store.backend().fast_point_reads() {
        return store_call(op, move || f(&state.store)).await;
    }
    point_read_here(&state.store, op, f)
}

/// A point read right here, on the calling thread, counted and timed as `op`: only for a backend
/// whose point reads never block ([`Backend::fast_point_reads`]).
pub(crate) fn point_read_here<B: Backend, T>(
    store: &Store<B>,
    op: &'static str,
    f: impl FnOnce(&Store<B>) -> Result<T, ApiError>,
) -> Result<T, ApiError> {
    let started = std::time::Instant::now();
    // A panic answers 500, as it does from the blocking pool, rather than dropping the connection.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(store)))
        .unwrap_or_else(|_| Err(task_failed()));
    telemetry::store_operation(op, started, result.is_ok());
    result
}

/// An item ([`item_json`]) with `ETag: "<version>"`, so HTTP caches and `If-Match` speak the
/// same versions.
pub(crate) fn item_response(status: StatusCode, item: &Item) -> Response {
    let mut response = Response::new(axum::body::Body::from(item_json(item)));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Ok(etag) = HeaderValue::from_str(&precondition::etag(item.version)) {
        headers.insert(header::ETAG, etag);
    }
    response
}

/// A page's `limit` query parameter: `default` when not given, else 1 to `max` (400 outside).
pub(crate) fn page_limit(
    asked: Option<usize>,
    default: usize,
    max: usize,
) -> Result<usize, ApiError> {
    let limit = asked.unwrap_or(default);
    if !(1..=max).contains(&limit) {
        return Err(ApiError::bad_request(format!("limit must be 1..={max}")));
    }
    Ok(limit)
}

/// The JSON value of a write's body (a put's, a create's): UTF-8 and JSON, else 400
/// `invalid_json`.
pub(crate) fn body_value(body: &[u8]) -> Result<pathdb_store::Json, ApiError> {
    let text = std::str::from_utf8(body)
        .map_err(|_| ApiError::new(StatusCode::BAD_REQUEST, "invalid_json", "body is not UTF-8"))?;
    Ok(pathdb_store::Json::parse(text)?)
}

/// The status of a write that creates or replaces: 201 or 200.
pub(crate) fn created_or_ok(created: bool) -> StatusCode {
    if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    }
}

/// [`pathdb_store::parse_create_target`], its errors answered as `invalid_path`.
pub(crate) fn create_target(text: &str) -> Result<(Parent, String), ApiError> {
    pathdb_store::parse_create_target(text).map_err(|e| match e {
        pathdb_store::Error::InvalidRequest(message) => {
            ApiError::new(StatusCode::BAD_REQUEST, "invalid_path", message)
        }
        other => other.into(),
    })
}

/// A write's options from the API's `history` and `ttl_seconds` (query or transaction fields):
/// one reading for PUT, PATCH, create and transactions.
pub(crate) fn put_options(
    condition: Option<pathdb_store::Condition>,
    history: Option<bool>,
    ttl_seconds: Option<u64>,
) -> pathdb_store::PutOptions {
    pathdb_store::PutOptions {
        condition,
        history: history.unwrap_or(false),
        expires: ttl_seconds
            .map(|s| pathdb_store::Expiry::After(std::time::Duration::from_secs(s))),
        schema_version: None,
    }
}
