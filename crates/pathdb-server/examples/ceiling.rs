//! The ceiling for `pathdb serve` on this machine: a bare axum server (the same hyper, tokio
//! runtime, allocator and listener as `pathdb serve`, no middleware, no store) that answers every
//! `GET`/`PUT /v1/items/{*path}` with the same bytes a PathDB get of a bench item returns, from
//! memory. Whatever a load generator measures here is the most any handler could reach; see
//! docs/benchmarks.md, "HTTP server".
//!
//! ```sh
//! cargo build --release -p pathdb-server --example ceiling
//! target/release/examples/ceiling 127.0.0.1:0 [BODY_FILE]   # prints "listening on http://..."
//! ```
//!
//! `BODY_FILE` holds the response body (default: a bench item as `pathdb bench http` writes it,
//! `{"n":0,"payload":"<100 x>"}`, with PathDB's metadata). A `PUT` reads its whole body first.

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderName, HeaderValue, header};
use axum::response::IntoResponse;
use axum::routing::get;

/// What a PathDB get of `/bench-0/item-0` answers after `pathdb bench http` preloads it.
const DEFAULT_BODY: &str = concat!(
    r#"{"path":"/bench-0/item-0","version":1,"created_at":1795431909944313,"#,
    r#""modified_at":1795431909944313,"expires_at":null,"value":{"n":0,"payload":""#,
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    r#""}}"#
);

/// The `pathdb` binary's allocator, so that the two differ only in what PathDB does per request.
#[global_allocator]
static ALLOCATOR: pathdb_server::allocator::Allocator = pathdb_server::allocator::Allocator;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:0".to_owned());
    let body = match args.next() {
        Some(file) => Bytes::from(std::fs::read(file)?),
        None => Bytes::from_static(DEFAULT_BODY.as_bytes()),
    };
    // The headers PathDB sends with an item (its request id is a UUID: same length).
    let headers = [
        (
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        ),
        (header::ETAG, HeaderValue::from_static("\"1\"")),
        (
            HeaderName::from_static("x-request-id"),
            HeaderValue::from_static("00000000-0000-4000-8000-000000000000"),
        ),
        (
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static("etag,www-authenticate,x-request-id"),
        ),
        (
            header::VARY,
            HeaderValue::from_static(
                "origin, access-control-request-method, access-control-request-headers",
            ),
        ),
    ];
    let answer = move || {
        let (body, headers) = (body.clone(), headers.clone());
        async move { (headers, body).into_response() }
    };
    let put = {
        let answer = answer.clone();
        // Reading the request body (the `Bytes` extractor) is part of what a put costs.
        move |_: Bytes| answer()
    };
    let app = Router::new().route("/v1/items/{*path}", get(answer).put(put));
    // The same runtime as `pathdb serve`: multi-threaded, one worker per core.
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&addr).await?;
        println!("listening on http://{}", listener.local_addr()?);
        axum::serve(listener, app).await
    })
}
