//! Transactions (all or nothing) and export/import round trips.

use crate::TestServer;
use axum::http::Method;
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn transactions_apply_every_operation() {
    let server = TestServer::new();
    server.put_item("/acct-1", r#"{"balance": 10}"#).await;
    server.put_item("/acct-2", r#"{"balance": 0}"#).await;
    server.put_item("/acct-9", "1").await;
    let reply = server
        .post(
            "/v1/transact",
            &json!({"ops": [
                {"op": "put", "path": "/acct-1", "value": {"balance": 5}, "if_version": 1},
                {"op": "put", "path": "/acct-2", "value": {"balance": 5}, "if_version": 1, "history": true},
                {"op": "put", "path": "/log-1/entry-1", "value": "moved 5", "must_not_exist": true},
                {"op": "delete", "path": "/acct-9"},
                {"op": "delete", "path": "/acct-404"},
                {"op": "check", "path": "/acct-404", "must_not_exist": true},
            ]}),
        )
        .await;
    // A path used twice is refused (checked first, below); here every path is distinct except
    // `/acct-404`, so this transaction is refused as a whole.
    reply.expect_error(400, "invalid_request");
    let reply = server
        .post(
            "/v1/transact",
            &json!({"ops": [
                {"op": "put", "path": "/acct-1", "value": {"balance": 5}, "if_version": 1},
                {"op": "put", "path": "/acct-2", "value": {"balance": 5}, "if_version": 1, "history": true},
                {"op": "put", "path": "/log-1/entry-1", "value": "moved 5", "must_not_exist": true},
                {"op": "delete", "path": "/acct-9"},
                {"op": "delete", "path": "/acct-404"},
                {"op": "check", "path": "/acct-3", "must_not_exist": true},
                {"op": "check", "path": "/acct-2", "if_version": 1},
            ]}),
        )
        .await
        .expect_error(400, "invalid_request");
    assert!(reply.contains("/acct-2"), "{reply}");

    let body = server
        .post(
            "/v1/transact",
            &json!({"ops": [
                {"op": "put", "path": "/acct-1", "value": {"balance": 5}, "if_version": 1},
                {"op": "put", "path": "/acct-2", "value": {"balance": 5}, "if_version": 1, "history": true},
                {"op": "put", "path": "/log-1/entry-1", "value": "moved 5", "must_not_exist": true},
                {"op": "delete", "path": "/acct-9", "if_version": 1},
                {"op": "delete", "path": "/acct-404"},
                {"op": "check", "path": "/acct-3", "must_not_exist": true},
            ]}),
        )
        .await
        .expect(200);
    let results = body["results"].as_array().expect("results");
    assert_eq!(results.len(), 6);
    assert_eq!(results[0]["op"], "put");
    assert_eq!(results[0]["item"]["version"], 2);
    assert_eq!(results[1]["item"]["value"], json!({"balance": 5}));
    assert_eq!(results[2]["item"]["version"], 1);
    assert_eq!(results[3]["op"], "delete");
    assert_eq!(results[3]["deleted"]["path"], "/acct-9");
    assert!(
        results[4]["deleted"].is_null(),
        "deleting nothing is not an error"
    );
    assert_eq!(results[5], json!({"op": "check"}));

    assert_eq!(
        server.get("/v1/items/acct-1").await.expect(200)["value"],
        json!({"balance": 5})
    );
    assert_eq!(
        server.get("/v1/items/log-1/entry-1").await.expect(200)["value"],
        "moved 5"
    );
    server
        .get("/v1/items/acct-9")
        .await
        .expect_error(404, "not_found");
    let history = server.get("/v1/history/acct-2").await.expect(200);
    assert_eq!(history["items"][0]["version"], 2);
}

#[tokio::test]
async fn a_failing_operation_leaves_nothing() {
    let server = TestServer::new();
    server.put_item("/acct-1", r#"{"balance": 10}"#).await;
    server.put_item("/acct-2", r#"{"balance": 0}"#).await;
    server.put_item("/acct-7", "7").await;
    let before = server.export().await;
    let writes = json!([
        {"op": "put", "path": "/acct-1", "value": {"balance": 0}},
        {"op": "put", "path": "/acct-3", "value": {"balance": 10}, "history": true},
        {"op": "delete", "path": "/acct-2"},
    ]);
    let failing = [
        json!({"op": "check", "path": "/acct-4", "must_exist": true}),
        json!({"op": "check", "path": "/acct-7", "must_not_exist": true}),
        json!({"op": "check", "path": "/acct-7", "if_version": 2}),
        json!({"op": "put", "path": "/acct-7", "value": 1, "must_not_exist": true}),
        json!({"op": "put", "path": "/acct-5", "value": 1, "if_version": 1}),
        json!({"op": "delete", "path": "/acct-5", "if_version": 1}),
    ];
    for fail in failing {
        for at_start in [false, true] {
            let mut ops = writes.as_array().expect("ops").clone();
            if at_start {
                ops.insert(0, fail.clone());
            } else {
                ops.push(fail.clone());
            }
            let message = server
                .post("/v1/transact", &json!({ "ops": ops }))
                .await
                .expect_error(409, "condition_failed");
            assert!(
                message.contains(fail["path"].as_str().expect("path")),
                "{message}"
            );
            assert_eq!(server.export().await, before, "{fail} wrote something");
        }
    }

    // Bad transactions are refused before anything is written.
    let big = "x".repeat(400_000);
    let bad = [
        (json!({"ops": []}), 400, "invalid_request"),
        (
            json!({"ops": (0..101).map(|i| json!({"op": "delete", "path": format!("/x-{i}")})).collect::<Vec<_>>()}),
            400,
            "invalid_request",
        ),
        (
            json!({"ops": [{"op": "check", "path": "/acct-1"}]}),
            400,
            "invalid_request",
        ),
        (
            json!({"ops": [{"op": "check", "path": "/acct-1", "must_exist": true, "if_version": 1}]}),
            400,
            "invalid_request",
        ),
        (
            json!({"ops": [{"op": "put", "path": "/acct-1", "value": 1, "must_not_exist": true, "if_version": 1}]}),
            400,
            "invalid_request",
        ),
        (
            json!({"ops": [{"op": "upsert", "path": "/acct-1", "value": 1}]}),
            400,
            "invalid_json",
        ),
        (
            json!({"ops": [{"op": "put", "path": "/acct-1"}]}),
            400,
            "invalid_json",
        ),
        (
            json!({"ops": [{"op": "put", "path": "/acct-1", "value": 1, "bogus": 1}]}),
            400,
            "invalid_json",
        ),
        (json!({"operations": []}), 400, "invalid_json"),
        (json!([1]), 400, "invalid_json"),
        (
            json!({"ops": [writes[0].clone(), {"op": "put", "path": "/acct-01", "value": 1}]}),
            400,
            "invalid_path",
        ),
        (
            json!({"ops": [writes[0].clone(), {"op": "put", "path": "/acct-6", "value": big}]}),
            413,
            "too_large",
        ),
    ];
    for (body, status, code) in bad {
        server
            .post("/v1/transact", &body)
            .await
            .expect_error(status, code);
    }
    assert_eq!(server.export().await, before);
}

#[tokio::test]
async fn export_import_round_trip() {
    let source = TestServer::new();
    source
        .put(
            "/v1/items/g-1/x-!5?history=true",
            r#"{"k": [1, 2.50, "é\n"], "z": 1, "a": 2}"#,
        )
        .await
        .expect(201);
    source.clock.advance(Duration::from_secs(1));
    source
        .put("/v1/items/g-1/x-!5?history=true", r#"{"v": 2}"#)
        .await
        .expect(200);
    source
        .put("/v1/items/g-2/y-~AAEC?ttl_seconds=3600", "true")
        .await
        .expect(201);
    source.put_item("/file-a%25%2Fb", r#""slash""#).await;
    source.put_item("/user-caf%C3%A9", r#""unicode""#).await;
    let dump = source.export().await;
    assert_eq!(
        dump.lines().count(),
        7,
        "4 items + 2 revisions + the last line: {dump}"
    );
    assert!(
        dump.contains(r#""k":[1,2.50,"é\n"],"z":1,"a":2"#),
        "key order and number spelling kept: {dump}"
    );

    let target = TestServer::new();
    let ndjson = [("content-type", "application/x-ndjson")];
    let reply = target
        .call(Method::POST, "/v1/import", &ndjson, dump.clone())
        .await
        .expect(200);
    assert_eq!(
        reply,
        json!({"imported": 6, "unchanged": 0, "skipped": 0, "last_path": "/user-café"})
    );
    assert_eq!(target.export().await, dump);
    // Importing again changes nothing, and says so.
    let again = target
        .call(Method::POST, "/v1/import", &ndjson, dump.clone())
        .await
        .expect(200);
    assert_eq!(
        again,
        json!({"imported": 0, "unchanged": 6, "skipped": 0, "last_path": "/user-café"})
    );
    assert_eq!(target.export().await, dump);
    let item = target.get("/v1/items/g-1/x-!5?version=1").await.expect(200);
    assert_eq!(item["value"]["z"], 1);

    // A bad line anywhere: 400 naming the line, and nothing written.
    let empty = TestServer::new();
    for bad in [
        format!("{dump}{{\"path\": \"/bad\"}}\n"),
        format!("{{not json\n{dump}"),
        dump.replace("\"version\":1", "\"version\":0"),
        dump.replacen("/g-1/", "/g-01/", 1),
    ] {
        let message = empty
            .call(Method::POST, "/v1/import", &ndjson, bad)
            .await
            .expect_error(400, "invalid_request");
        assert!(
            message.contains("line") || message.contains("version"),
            "{message}"
        );
        assert_eq!(empty.export().await, EMPTY_EXPORT);
    }
    assert_eq!(
        empty
            .call(Method::POST, "/v1/import", &ndjson, "\n\n")
            .await
            .expect(200),
        json!({"imported": 0, "unchanged": 0, "skipped": 0, "last_path": null})
    );
}

/// What an empty store exports: only the last line.
const EMPTY_EXPORT: &str = "{\"export\":\"complete\",\"records\":0,\"skipped\":0}\n";

/// `check_list`: a transaction that decided on a listing commits only if nothing in the
/// listing's range changed after its first page's `changes_token`; a failed check is a 409
/// `condition_failed` naming the operation's index, like any failed condition.
#[tokio::test]
async fn a_listing_check_fails_only_on_changes_in_its_range() {
    let server = TestServer::new();
    server.put_item("/user-1/order-1", "{}").await;
    server.put_item("/user-1/profile-1", "{}").await;
    let token = server.get("/v1/list/user-1/order").await.expect(200)["changes_token"]
        .as_str()
        .expect("a first page's changes token")
        .to_owned();
    let check = json!({"op": "check_list", "prefix": "/user-1/order", "changes_token": token});
    server
        .put_item("/user-1/profile-1", r#"{"name": "changed"}"#)
        .await;
    let body = server
        .post(
            "/v1/transact",
            &json!({"ops": [check, {"op": "put", "path": "/user-1/order-2", "value": {}}]}),
        )
        .await
        .expect(200);
    assert_eq!(body["results"][0], json!({"op": "check_list"}));
    // Now the range has changed since the token: order-2 came after it.
    let reply = server
        .post(
            "/v1/transact",
            &json!({"ops": [{"op": "put", "path": "/user-2/x-1", "value": 1}, check]}),
        )
        .await;
    let message = reply.expect_error(409, "condition_failed");
    assert_eq!(reply.json()["error"]["index"], 1);
    assert!(message.contains("/user-1/order-2"), "{message}");
    server.get("/v1/items/user-2/x-1").await.expect(404);
    // Bounds and `seen` are the listing's own options; outside the bounds, nothing changed.
    let bounded = json!({"op": "check_list", "prefix": "/user-1/order", "changes_token": token,
        "lt": "/user-1/order-2", "seen": {"/user-1/order-1": 1}});
    server
        .post("/v1/transact", &json!({"ops": [bounded]}))
        .await
        .expect(200);
    for (op, code) in [
        (
            json!({"op": "check_list", "prefix": "/user-1/order"}),
            "invalid_json",
        ),
        (
            json!({"op": "check_list", "prefix": "/user-1/order", "changes_token": token, "path": "/user-1"}),
            "invalid_json",
        ),
        (
            json!({"op": "check_list", "prefix": "/user-2/order", "changes_token": token}),
            "invalid_change_token",
        ),
        (
            json!({"op": "check_list", "prefix": "/user-1/order", "changes_token": "nope"}),
            "invalid_change_token",
        ),
        (
            json!({"op": "put", "path": "/user-1/order-3", "value": 1, "prefix": "/user-1"}),
            "invalid_json",
        ),
    ] {
        server
            .post("/v1/transact", &json!({"ops": [op]}))
            .await
            .expect_error(400, code);
    }
}
