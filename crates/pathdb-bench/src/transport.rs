//! The HTTP client the benchmarks share: one pooled hyper client, and a request read whole.

use anyhow::Result;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Request, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// A request body.
pub(crate) type Body = Full<Bytes>;
/// The pooled HTTP/1.1 client every benchmark here uses.
pub(crate) type HttpClient = Client<HttpConnector, Body>;

/// A client keeping up to `connections` connections open to one server.
pub(crate) fn client(connections: usize) -> HttpClient {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(connections)
        .build(connector)
}

/// Sends `request` and reads the whole response.
pub(crate) async fn send(
    client: &HttpClient,
    request: Request<Body>,
) -> Result<(StatusCode, Bytes)> {
    let response = client.request(request).await?;
    let status = response.status();
    let body = response.into_body().collect().await?.to_bytes();
    Ok((status, body))
}
