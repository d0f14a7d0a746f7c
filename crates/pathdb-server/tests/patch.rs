//! PATCH: merge patches, JSON Patch with increments, and every status they answer.

use super::TestServer;
use axum::http::Method;
use serde_json::{Value, json};

const MERGE: (&str, &str) = ("content-type", "application/merge-patch+json");
const JSON_PATCH: (&str, &str) = ("content-type", "application/json-patch+json");

async fn patch(server: &TestServer, uri: &str, kind: (&str, &str), body: Value) -> super::Reply {
    server
        .call(Method::PATCH, uri, &[kind], body.to_string())
        .await
}

#[tokio::test]
async fn merge_and_json_patch_answer_the_new_item() {
    let server = TestServer::new();
    server
        .put_item(
            "/user-7/post-1",
            r#"{"title": "hi", "views": 1, "tags": ["a"]}"#,
        )
        .await;
    let item = patch(
        &server,
        "/v1/items/user-7/post-1",
        MERGE,
        json!({"title": "hello", "tags": null}),
    )
    .await
    .expect(200);
    assert_eq!(item["value"], json!({"title": "hello", "views": 1}));
    assert_eq!(item["version"], 2);
    let reply = patch(
        &server,
        "/v1/items/user-7/post-1?history=true",
        JSON_PATCH,
        json!([{"op": "test", "path": "/title", "value": "hello"},
               {"op": "increment", "path": "/views", "value": 41},
               {"op": "add", "path": "/tags", "value": ["b"]}]),
    )
    .await;
    assert_eq!(reply.headers["etag"], "\"3\"");
    let item = reply.expect(200);
    assert_eq!(
        item["value"],
        json!({"title": "hello", "views": 42, "tags": ["b"]})
    );
    let history = server.get("/v1/history/user-7/post-1").await.expect(200);
    assert_eq!(history["items"][0]["version"], 3);
}

#[tokio::test]
async fn missing_items_are_404_unless_created() {
    let server = TestServer::new();
    let incr = json!([{"op": "increment", "path": "/n", "value": 1}]);
    patch(&server, "/v1/items/c-1/counter-1", JSON_PATCH, incr.clone())
        .await
        .expect_error(404, "not_found");
    let created = patch(
        &server,
        "/v1/items/c-1/counter-1?create=true",
        JSON_PATCH,
        incr.clone(),
    )
    .await
    .expect(201);
    assert_eq!(created["value"], json!({"n": 1}));
    let again = patch(
        &server,
        "/v1/items/c-1/counter-1?create=true&ttl_seconds=60",
        JSON_PATCH,
        incr,
    )
    .await
    .expect(200);
    assert_eq!(again["value"], json!({"n": 2}));
    assert!(again["expires_at"].is_i64());
}

#[tokio::test]
async fn every_failure_writes_nothing() {
    let server = TestServer::new();
    server
        .put_item("/e-1/doc-1", r#"{"name": "x", "n": 1}"#)
        .await;
    let uri = "/v1/items/e-1/doc-1";
    patch(
        &server,
        uri,
        JSON_PATCH,
        json!([{"op": "test", "path": "/name", "value": "y"}]),
    )
    .await
    .expect_error(409, "patch_test_failed");
    patch(
        &server,
        uri,
        JSON_PATCH,
        json!([{"op": "increment", "path": "/name", "value": 1}]),
    )
    .await
    .expect_error(409, "patch_conflict");
    patch(
        &server,
        uri,
        JSON_PATCH,
        json!([{"op": "remove", "path": "/missing"}]),
    )
    .await
    .expect_error(409, "patch_conflict");
    let message = patch(
        &server,
        uri,
        JSON_PATCH,
        json!([{"op": "add", "path": "/a", "value": 1}, {"op": "jump", "path": "/a"}]),
    )
    .await
    .expect_error(400, "invalid_patch");
    assert!(message.starts_with("operation 1"), "{message}");
    server
        .call(Method::PATCH, uri, &[MERGE], "{not json")
        .await
        .expect_error(400, "invalid_json");
    server
        .call(
            Method::PATCH,
            uri,
            &[("content-type", "application/json")],
            r#"{"n": 2}"#,
        )
        .await
        .expect_error(415, "unsupported_media_type");
    server
        .call(
            Method::PATCH,
            uri,
            &[MERGE, ("if-match", "\"7\"")],
            r#"{"n": 2}"#,
        )
        .await
        .expect_error(412, "condition_failed");
    let item = server.get(uri).await.expect(200);
    assert_eq!(
        (item["version"].clone(), item["value"].clone()),
        (json!(1), json!({"name": "x", "n": 1}))
    );
    // If-Match with the current version holds.
    let item = server
        .call(
            Method::PATCH,
            uri,
            &[MERGE, ("if-match", "\"1\"")],
            r#"{"n": 2}"#,
        )
        .await
        .expect(200);
    assert_eq!(item["value"], json!({"name": "x", "n": 2}));
}

#[tokio::test]
async fn patches_in_transactions_see_earlier_puts_and_fail_as_one() {
    let server = TestServer::new();
    server.put_item("/t-1/doc-1", r#"{"n": 1}"#).await;
    let results = server
        .post(
            "/v1/transact",
            &json!({"ops": [
                {"op": "put", "path": "/t-1/new-1", "value": {"n": 10, "tags": []}},
                {"op": "patch", "path": "/t-1/new-1",
                 "patch": [{"op": "increment", "path": "/n", "value": 5},
                           {"op": "add", "path": "/tags/-", "value": "x"}]},
                {"op": "patch", "path": "/t-1/doc-1", "merge": {"m": true}, "if_version": 1},
                {"op": "patch", "path": "/t-1/counter-1", "create": true,
                 "patch": [{"op": "increment", "path": "/hits", "value": 1}]},
            ]}),
        )
        .await
        .expect(200);
    let values: Vec<Value> = results["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["item"]["value"].clone())
        .collect();
    assert_eq!(
        values,
        [
            json!({"n": 15, "tags": ["x"]}),
            json!({"n": 15, "tags": ["x"]}),
            json!({"n": 1, "m": true}),
            json!({"hits": 1}),
        ]
    );
    assert_eq!(results["results"][1]["op"], "put");

    // Each failure is the transaction's, and writes nothing.
    let failing =
        |op: Value| json!({"ops": [{"op": "put", "path": "/t-1/other-1", "value": 1}, op]});
    for (op, status, code) in [
        (
            json!({"op": "patch", "path": "/t-1/doc-1", "patch": [{"op": "test", "path": "/n", "value": 2}]}),
            409,
            "patch_test_failed",
        ),
        (
            json!({"op": "patch", "path": "/t-1/doc-1", "patch": [{"op": "remove", "path": "/zz"}]}),
            409,
            "patch_conflict",
        ),
        (
            json!({"op": "patch", "path": "/t-1/missing-1", "merge": {"a": 1}}),
            404,
            "not_found",
        ),
        (
            json!({"op": "patch", "path": "/t-1/doc-1", "merge": {"a": 1}, "if_version": 9}),
            409,
            "condition_failed",
        ),
        (
            json!({"op": "patch", "path": "/t-1/doc-1", "patch": [{"op": "jump", "path": "/a"}]}),
            400,
            "invalid_patch",
        ),
        (
            json!({"op": "patch", "path": "/t-1/doc-1", "merge": {}, "patch": []}),
            400,
            "invalid_json",
        ),
        (
            json!({"op": "patch", "path": "/t-1/doc-1"}),
            400,
            "invalid_json",
        ),
        (
            json!({"op": "patch", "path": "/t-1/doc-1", "merge": {}, "value": 1}),
            400,
            "invalid_json",
        ),
        (
            json!({"op": "put", "path": "/t-1/doc-1", "value": 1, "merge": {}}),
            400,
            "invalid_json",
        ),
    ] {
        server
            .post("/v1/transact", &failing(op.clone()))
            .await
            .expect_error(status, code);
        server
            .get("/v1/items/t-1/other-1")
            .await
            .expect_error(404, "not_found");
    }
    let doc = server.get("/v1/items/t-1/doc-1").await.expect(200);
    assert_eq!(doc["value"], json!({"n": 1, "m": true}));

    // `"merge": null` is a merge patch (the value becomes null), not a missing field.
    let result = server
        .post(
            "/v1/transact",
            &json!({"ops": [{"op": "patch", "path": "/t-1/doc-1", "merge": null}]}),
        )
        .await
        .expect(200);
    assert_eq!(result["results"][0]["item"]["value"], Value::Null);
}
