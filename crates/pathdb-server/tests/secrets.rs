//! Secrets stay secret: no token appears in what the server logs about a request, accepted
//! or refused. (Constant-time comparison is a property of the code, tested in `auth`'s unit
//! tests for its results; its timing is not measurable reliably in a test.)

use crate::TestServer;
use axum::body::Body;
use axum::http::Method;
use pathdb_server::Scope;
use std::io::Write;
use std::sync::{Arc, Mutex};

/// Everything the subscriber writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn tokens_never_reach_the_logs() {
    const SECRET: &str = "tok-5f2a9c1e-never-logged";
    const WRONG: &str = "tok-guess-also-never-logged";
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    // Global, not scoped to this thread: callsites that other tests' threads evaluate without a
    // subscriber would otherwise be cached as uninteresting. Other tests log into it too; only
    // this test's tokens are looked for.
    tracing::subscriber::set_global_default(subscriber).expect("the only global subscriber");

    let mut server = TestServer::with_tokens(&[(SECRET, Scope::ReadWrite), ("r", Scope::Read)]);
    server.use_token(SECRET);
    server.put_item("/u-1", "1").await;
    server.get("/v1/items/u-1").await.expect(200);
    server.get("/metrics").await;
    for token in [WRONG, SECRET] {
        for (method, uri) in [
            (Method::GET, "/v1/items/u-1"),
            (Method::PUT, "/v1/items/u-1"),
        ] {
            server
                .call(
                    method,
                    uri,
                    &[
                        ("authorization", &format!("Bearer {token}")),
                        ("origin", "http://evil.example"),
                    ],
                    Body::from("2"),
                )
                .await;
        }
        server
            .call(
                Method::GET,
                "/v1/items/u-1",
                &[("authorization", &format!("Bearer {token}"))],
                Body::empty(),
            )
            .await;
    }

    let logs = String::from_utf8(captured.0.lock().expect("logs").clone()).expect("UTF-8");
    assert!(
        logs.contains("/v1/items/u-1"),
        "requests are logged: {logs}"
    );
    for secret in [SECRET, WRONG] {
        assert!(!logs.contains(secret), "a token in the logs: {logs}");
    }
}
