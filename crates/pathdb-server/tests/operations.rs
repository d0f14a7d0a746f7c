//! Operations endpoints: `/healthz` (liveness), `/readyz` (the backend can serve) and
//! `/metrics` (Prometheus text), and who may read them.

use crate::TestServer;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use pathdb_server::{AppState, Auth, Scope, router};
use pathdb_store::backend::{Backend, InMemoryBackend, WriteBatch, WriteError};
use pathdb_store::{StorageError, Store, StoreOptions};
use tower::ServiceExt;

#[tokio::test]
async fn readyz_answers_200_on_an_open_database_without_a_token() {
    let server = TestServer::with_tokens(&[("t0ken", Scope::ReadWrite)]);
    assert_eq!(server.get("/readyz").await.expect(200)["status"], "ready");
    assert_eq!(server.get("/healthz").await.expect(200)["status"], "ok");
}

/// A backend that stores in memory but says it cannot serve.
struct Unready(InMemoryBackend);

impl Backend for Unready {
    type Reader<'a> = <InMemoryBackend as Backend>::Reader<'a>;

    fn reader(&self) -> Result<Self::Reader<'_>, StorageError> {
        self.0.reader()
    }
    fn write(&self, batch: WriteBatch) -> Result<(), WriteError> {
        self.0.write(batch)
    }
    fn ready(&self) -> Result<(), StorageError> {
        Err(StorageError::msg("table is CREATING, not ACTIVE"))
    }
}

#[tokio::test]
async fn readyz_answers_503_when_the_backend_cannot_serve_and_healthz_stays_200() {
    let store =
        Store::new(Unready(InMemoryBackend::new()), StoreOptions::default()).expect("store");
    let app = router(AppState::new(store), Auth::default());
    let get = |uri: &str| {
        app.clone()
            .oneshot(Request::get(uri).body(Body::empty()).expect("request"))
    };
    let ready = get("/readyz").await.expect("infallible");
    assert_eq!(ready.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body = axum::body::to_bytes(ready.into_body(), usize::MAX)
        .await
        .expect("body");
    let body: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(body["error"]["code"], "unavailable");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("not ACTIVE")),
        "{body}"
    );
    let live = get("/healthz").await.expect("infallible");
    assert_eq!(live.status(), StatusCode::OK);
}

#[tokio::test]
async fn metrics_count_requests_by_route_template_and_store_operations() {
    let server = TestServer::new();
    server.put_item("/metric-1/item-17", "1").await;
    server.get("/v1/items/metric-1/item-17").await.expect(200);
    server.get("/v1/items/metric-1/item-99").await;
    server.get("/v1/list/metric-1").await.expect(200);

    let reply = server.get("/metrics").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let content_type = reply.headers["content-type"].to_str().expect("text");
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    let text = reply.text();
    // Route templates, never raw paths: the label set stays bounded.
    assert!(!text.contains("item-17"), "a raw path in the metrics");
    for expected in [
        r#"pathdb_http_requests_total{method="PUT",route="/v1/items/{*path}",status="201"}"#,
        r#"pathdb_http_requests_total{method="GET",route="/v1/items/{*path}",status="404"}"#,
        r#"pathdb_http_requests_total{method="GET",route="/v1/list/{*prefix}",status="200"}"#,
        r#"pathdb_http_request_duration_seconds_bucket{method="GET",route="/v1/items/{*path}",le="#,
        r#"pathdb_store_operations_total{op="put",outcome="ok"}"#,
        r#"pathdb_store_operation_duration_seconds_count{op="list"}"#,
        // The file backend's committer, through the metrics facade.
        "pathdb_commit_seconds_bucket{le=",
        "pathdb_commit_batches_bucket{le=",
    ] {
        assert!(text.contains(expected), "{expected} missing from:\n{text}");
    }
}

#[tokio::test]
async fn metrics_need_a_token_when_tokens_are_configured() {
    let mut server = TestServer::with_tokens(&[("rw", Scope::ReadWrite), ("ro", Scope::Read)]);
    server
        .get("/metrics")
        .await
        .expect_error(401, "unauthorized");
    server.use_token("ro");
    let reply = server
        .call(Method::GET, "/metrics", &[], Body::empty())
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    // Probes stay open.
    let mut open = TestServer::with_tokens(&[("rw", Scope::ReadWrite)]);
    open.get("/readyz").await.expect(200);
    open.use_token("wrong");
    open.get("/readyz").await.expect(200);
}

/// A backend that blocks on a runtime of its own for every read and write, as the DynamoDB
/// backend does: called on an async worker, it panics ("Cannot start a runtime from within a
/// runtime").
struct BlocksOnItsRuntime {
    data: InMemoryBackend,
    runtime: tokio::runtime::Runtime,
}

impl Backend for BlocksOnItsRuntime {
    type Reader<'a> = <InMemoryBackend as Backend>::Reader<'a>;

    fn reader(&self) -> Result<Self::Reader<'_>, StorageError> {
        self.runtime.block_on(async { self.data.reader() })
    }
    fn write(&self, batch: WriteBatch) -> Result<(), WriteError> {
        self.runtime.block_on(async { self.data.write(batch) })
    }
}

/// Point reads run on the async worker only for backends whose reads never block; every other
/// backend's calls, reads included, go to the blocking pool.
#[test]
fn a_blocking_backend_is_never_called_on_an_async_worker() {
    let backend = BlocksOnItsRuntime {
        data: InMemoryBackend::new(),
        runtime: tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime"),
    };
    let options = StoreOptions {
        sweep_interval: None,
        ..StoreOptions::default()
    };
    let store = Store::new(backend, options).expect("store");
    let server = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    server.block_on(async {
        let app = router(AppState::new(store.clone()), Auth::default());
        let send = |method: Method, uri: &str, body: &str| {
            let request = Request::builder()
                .method(method)
                .uri(uri)
                .header("content-type", "application/json")
                .body(Body::from(body.to_owned()))
                .expect("request");
            app.clone().oneshot(request)
        };
        let status = |r: axum::response::Response| r.status().as_u16();
        let put = send(Method::PUT, "/v1/items/t-1", "1").await.expect("ok");
        assert_eq!(status(put), 201);
        let put = send(Method::PUT, "/v1/items/t-1", "2").await.expect("ok");
        assert_eq!(status(put), 200);
        for (method, uri, body) in [
            (Method::GET, "/v1/items/t-1", ""),
            (Method::GET, "/v1/items/t-1?version=2", ""),
            (Method::POST, "/v1/get", r#"{"paths": ["/t-1", "/t-2"]}"#),
            (Method::GET, "/v1/list/t-1", ""),
            (Method::DELETE, "/v1/items/t-1", ""),
        ] {
            let reply = send(method.clone(), uri, body).await.expect("ok");
            assert_eq!(status(reply), 200, "{method} {uri}");
        }
    });
    // Dropped outside the server's runtime, which a runtime cannot be dropped inside.
    drop(server);
    drop(store);
}

/// Every answer carries an `x-request-id`: the client's own if it sent one, otherwise a new
/// random version-4 UUID.
#[tokio::test]
async fn answers_carry_a_request_id() {
    let server = TestServer::new();
    let id = |reply: &crate::Reply| {
        reply.headers["x-request-id"]
            .to_str()
            .expect("text")
            .to_owned()
    };
    let (first, second) = (server.get("/healthz").await, server.get("/healthz").await);
    let (first, second) = (id(&first), id(&second));
    assert_ne!(first, second);
    for text in [&first, &second] {
        let uuid = uuid::Uuid::parse_str(text).expect("a UUID");
        assert_eq!(uuid.get_version_num(), 4, "{text}");
        assert_eq!(
            text,
            &uuid.hyphenated().to_string(),
            "lower-case, hyphenated"
        );
    }
    let own = server
        .call(
            Method::GET,
            "/healthz",
            &[("x-request-id", "client-7")],
            Body::empty(),
        )
        .await;
    assert_eq!(id(&own), "client-7");
}
