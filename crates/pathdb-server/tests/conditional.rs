//! HTTP semantics of conditional requests (RFC 9110 section 13) and version lookups: 412 for a
//! failed precondition, 304 for a matching `If-None-Match`, strong entity tags for writes, and
//! errors that tell a bad version from a missing one.

use crate::TestServer;
use axum::body::Body;
use axum::http::Method;

#[tokio::test]
async fn failed_preconditions_answer_412_and_write_nothing() {
    let server = TestServer::new();
    server.put_item("/acct-1", r#"{"b": 1}"#).await;
    let before = server.export().await;
    let cases: [(Method, &str, &str); 6] = [
        (Method::PUT, "if-none-match", "*"),
        (Method::PUT, "if-match", "\"2\""),
        // A weak tag never satisfies If-Match, even when it names the current version.
        (Method::PUT, "if-match", "W/\"1\""),
        (Method::DELETE, "if-match", "W/\"1\""),
        (Method::DELETE, "if-match", "\"5\", \"6\""),
        (Method::PUT, "if-match", "\"5\", W/\"1\""),
    ];
    for (method, name, value) in cases {
        let message = server
            .call(method.clone(), "/v1/items/acct-1", &[(name, value)], "{}")
            .await
            .expect_error(412, "condition_failed");
        assert!(!message.is_empty(), "{method} {name}: {value}");
    }
    // If-Match on a missing item: 412, and nothing is created.
    for value in ["*", "\"1\""] {
        server
            .call(
                Method::PUT,
                "/v1/items/acct-2",
                &[("if-match", value)],
                "{}",
            )
            .await
            .expect_error(412, "condition_failed");
    }
    assert_eq!(server.export().await, before, "nothing written");
}

#[tokio::test]
async fn if_match_star_means_must_exist_and_lists_match_any_version() {
    let server = TestServer::new();
    server.put_item("/doc-1", "1").await;
    let replaced = server
        .call(Method::PUT, "/v1/items/doc-1", &[("if-match", "*")], "2")
        .await;
    assert_eq!(replaced.expect(200)["version"], 2);
    assert_eq!(replaced.headers["etag"], "\"2\"");
    let listed = server
        .call(
            Method::PUT,
            "/v1/items/doc-1",
            &[("if-match", "\"1\", \"2\", W/\"3\"")],
            "3",
        )
        .await;
    assert_eq!(listed.expect(200)["version"], 3);
    let deleted = server
        .call(
            Method::DELETE,
            "/v1/items/doc-1",
            &[("if-match", "*")],
            Body::empty(),
        )
        .await;
    assert_eq!(deleted.expect(200)["version"], 3);
}

#[tokio::test]
async fn get_with_matching_if_none_match_answers_304_without_body() {
    let server = TestServer::new();
    server.put_item("/page-1", r#"{"t": 1}"#).await;
    server.put_item("/page-1", r#"{"t": 2}"#).await;
    for value in ["\"2\"", "W/\"2\"", "\"1\", \"2\"", "*"] {
        let reply = server
            .call(
                Method::GET,
                "/v1/items/page-1",
                &[("if-none-match", value)],
                Body::empty(),
            )
            .await;
        assert_eq!(reply.status.as_u16(), 304, "{value}: {}", reply.text());
        assert!(reply.body.is_empty(), "304 has no body");
        assert_eq!(reply.headers["etag"], "\"2\"");
    }
    // A stale tag gets the item.
    let fresh = server
        .call(
            Method::GET,
            "/v1/items/page-1",
            &[("if-none-match", "\"1\"")],
            Body::empty(),
        )
        .await;
    assert_eq!(fresh.expect(200)["value"]["t"], 2);
    assert_eq!(fresh.headers["etag"], "\"2\"");
    // A missing item is still 404, whatever the tags.
    server
        .call(
            Method::GET,
            "/v1/items/page-2",
            &[("if-none-match", "*")],
            Body::empty(),
        )
        .await
        .expect_error(404, "not_found");
}

#[tokio::test]
async fn transaction_conditions_stay_409() {
    let server = TestServer::new();
    server.put_item("/t-1", "1").await;
    let body = serde_json::json!({"ops": [{"op": "check", "path": "/t-1", "if_version": 9}]});
    server
        .post("/v1/transact", &body)
        .await
        .expect_error(409, "condition_failed");
}

#[tokio::test]
async fn version_zero_is_a_bad_request_and_a_missing_version_is_named() {
    let server = TestServer::new();
    server.put_item("/t-3", "1").await;
    let message = server
        .get("/v1/items/t-3?version=0")
        .await
        .expect_error(400, "invalid_request");
    assert!(message.contains("start at 1"), "{message}");
    let message = server
        .get("/v1/items/t-3?version=7")
        .await
        .expect_error(404, "not_found");
    assert_eq!(message, "/t-3 has no version 7");
    // The current version is readable by number.
    assert_eq!(
        server.get("/v1/items/t-3?version=1").await.expect(200)["version"],
        1
    );
}
