//! The bad-input catalogue: every request a careless or hostile client might send gets a clear
//! 4xx in the API's error shape, and the database is byte-for-byte what it was (its export,
//! tombstones, revisions and versions included, is unchanged).

use super::TestServer;
use axum::http::Method;
use serde_json::json;

/// `(what, method, uri, headers, body, status, code)`.
type Case = (
    &'static str,
    Method,
    String,
    Vec<(&'static str, &'static str)>,
    String,
    u16,
    &'static str,
);

#[tokio::test]
async fn every_bad_request_is_a_clear_4xx_and_changes_nothing() {
    let server = TestServer::new();
    server
        .put("/v1/items/c-1/a-1?history=true", r#"{"n": 1}"#)
        .await
        .expect(201);
    server
        .put("/v1/items/c-1/a-1?history=true", r#"{"n": 2}"#)
        .await
        .expect(200);
    server.put_item("/c-1/b-1", "true").await;
    server.put_item("/c-1/gone-1", "1").await;
    server.delete("/v1/items/c-1/gone-1").await.expect(200);
    let before = server.export().await;

    let json = || vec![("content-type", "application/json")];
    let ndjson = || vec![("content-type", "application/x-ndjson")];
    let line = |path: &str, version: u64| {
        format!(
            r#"{{"path":"{path}","version":{version},"created_at":1,"modified_at":1,"expires_at":null,"value":1}}"#
        )
    };
    let too_many: Vec<String> = (0..=100).map(|i| format!("/c-1/x-{i}")).collect();
    let huge = format!("\"{}\"", "x".repeat(500_000));
    let long_path = format!("/v1/items/c-1/k-{}", "k".repeat(1100));
    let cases: Vec<Case> = vec![
        // Paths and values.
        ("leading zero", Method::PUT, "/v1/items/c-1/a-01".into(), json(), "1".into(), 400, "invalid_path"),
        ("empty path", Method::PUT, "/v1/items/".into(), json(), "1".into(), 404, "not_found"),
        ("bad JSON", Method::PUT, "/v1/items/c-1/a-1".into(), json(), "{nope".into(), 400, "invalid_json"),
        ("empty body", Method::PUT, "/v1/items/c-1/a-1".into(), json(), String::new(), 400, "invalid_json"),
        ("too large", Method::PUT, "/v1/items/c-1/a-1".into(), json(), huge, 413, "too_large"),
        ("key too long", Method::PUT, long_path, json(), "1".into(), 413, "too_large"),
        // Media types (cross-site forms and text bodies).
        ("text body", Method::PUT, "/v1/items/c-1/a-1".into(), vec![("content-type", "text/plain")], "1".into(), 415, "unsupported_media_type"),
        ("form import", Method::POST, "/v1/import".into(), vec![("content-type", "application/x-www-form-urlencoded")], line("/c-1/a-1", 1), 415, "unsupported_media_type"),
        ("foreign origin", Method::POST, "/v1/import".into(), vec![("content-type", "application/x-ndjson"), ("origin", "http://evil.example")], line("/c-1/a-1", 1), 403, "origin_not_allowed"),
        // Preconditions and options.
        ("stale If-Match", Method::PUT, "/v1/items/c-1/a-1".into(), vec![("content-type", "application/json"), ("if-match", "\"1\"")], "3".into(), 412, "condition_failed"),
        ("weak If-Match", Method::PUT, "/v1/items/c-1/a-1".into(), vec![("content-type", "application/json"), ("if-match", "W/\"2\"")], "3".into(), 412, "condition_failed"),
        ("If-None-Match on an item", Method::PUT, "/v1/items/c-1/b-1".into(), vec![("content-type", "application/json"), ("if-none-match", "*")], "3".into(), 412, "condition_failed"),
        ("delete at an old version", Method::DELETE, "/v1/items/c-1/a-1".into(), vec![("if-match", "\"1\"")], String::new(), 412, "condition_failed"),
        ("If-Match on a deleted path", Method::PUT, "/v1/items/c-1/gone-1".into(), vec![("content-type", "application/json"), ("if-match", "\"1\"")], "3".into(), 412, "condition_failed"),
        ("TTL 0", Method::PUT, "/v1/items/c-1/t-1?ttl_seconds=0".into(), json(), "1".into(), 400, "invalid_request"),
        ("TTL negative", Method::PUT, "/v1/items/c-1/t-1?ttl_seconds=-5".into(), json(), "1".into(), 400, "invalid_request"),
        ("history=maybe", Method::PUT, "/v1/items/c-1/t-1?history=maybe".into(), json(), "1".into(), 400, "invalid_request"),
        ("version 0", Method::GET, "/v1/items/c-1/a-1?version=0".into(), vec![], String::new(), 400, "invalid_request"),
        ("missing version", Method::GET, "/v1/items/c-1/a-1?version=9".into(), vec![], String::new(), 404, "not_found"),
        // Reads of several items, listings.
        ("get_many > 100", Method::POST, "/v1/get".into(), json(), json!({"paths": too_many}).to_string(), 400, "invalid_request"),
        ("get_many not a list", Method::POST, "/v1/get".into(), json(), r#"{"paths": "/c-1"}"#.into(), 400, "invalid_json"),
        ("bad page token", Method::GET, "/v1/list/c-1?page_token=zzz".into(), vec![], String::new(), 400, "invalid_page_token"),
        ("bound in another group", Method::GET, "/v1/list/c-1?gt=/d-1/a-1".into(), vec![], String::new(), 400, "invalid_request"),
        ("limit 0", Method::GET, "/v1/list/c-1?limit=0".into(), vec![], String::new(), 400, "invalid_request"),
        // Transactions.
        ("empty transaction", Method::POST, "/v1/transact".into(), json(), r#"{"ops": []}"#.into(), 400, "invalid_request"),
        ("a path twice", Method::POST, "/v1/transact".into(), json(), json!({"ops": [{"op": "delete", "path": "/c-1/a-1"}, {"op": "delete", "path": "/c-1/a-1"}]}).to_string(), 400, "invalid_request"),
        ("unknown op", Method::POST, "/v1/transact".into(), json(), json!({"ops": [{"op": "upsert", "path": "/c-1/a-1"}]}).to_string(), 400, "invalid_json"),
        ("failing check", Method::POST, "/v1/transact".into(), json(), json!({"ops": [{"op": "delete", "path": "/c-1/b-1"}, {"op": "check", "path": "/c-1/a-1", "if_version": 1}]}).to_string(), 409, "condition_failed"),
        // Imports that must write nothing.
        ("bad line last", Method::POST, "/v1/import".into(), ndjson(), format!("{}\n{{\"path\": \"/c-1/z-1\"}}\n", line("/c-1/y-1", 1)), 400, "invalid_request"),
        ("version 0 line", Method::POST, "/v1/import".into(), ndjson(), line("/c-1/y-1", 0), 400, "invalid_request"),
        ("truncated export", Method::POST, "/v1/import".into(), ndjson(), format!("{}\n{{\"export\":\"complete\",\"records\":2}}\n", line("/c-1/y-1", 1)), 400, "invalid_request"),
        ("failed export", Method::POST, "/v1/import".into(), ndjson(), format!("{}\n{{\"export\":\"incomplete\",\"records\":1,\"error\":\"disk\"}}\n", line("/c-1/y-1", 1)), 400, "invalid_request"),
        ("records without the last line", Method::POST, "/v1/import".into(), ndjson(), format!("{}\n", line("/c-1/y-1", 1)), 400, "invalid_request"),
        ("huge version", Method::POST, "/v1/import?partial=true".into(), ndjson(), line("/c-1/y-1", 1 << 60), 400, "invalid_request"),
        ("unknown on_existing", Method::POST, "/v1/import?on_existing=merge".into(), ndjson(), line("/c-1/y-1", 1), 400, "invalid_request"),
        ("on_existing=fail over an item", Method::POST, "/v1/import?on_existing=fail&partial=true".into(), ndjson(), line("/c-1/b-1", 1), 409, "condition_failed"),
        ("not UTF-8", Method::POST, "/v1/import".into(), ndjson(), String::from_utf8_lossy(b"\xff").into_owned() + "\u{0}", 400, "invalid_request"),
    ];
    for (what, method, uri, headers, body, status, code) in cases {
        let reply = server.call(method, &uri, &headers, body).await;
        assert_eq!(reply.status.as_u16(), status, "{what}: {}", reply.text());
        reply.expect_error(status, code);
        assert_eq!(server.export().await, before, "{what} changed the database");
    }
}
