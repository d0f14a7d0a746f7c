//! Items one at a time: CRUD and metadata, conditions, versions and history, expiry, get_many,
//! and key paths that need percent-encoding in a URL.

use crate::TestServer;
use axum::body::Body;
use axum::http::Method;
use serde_json::{Value, json};
use std::time::Duration;

#[tokio::test]
async fn put_get_delete_with_metadata() {
    let server = TestServer::new();
    let created = server
        .put(
            "/v1/items/user-7/post-1",
            r#"{"title": "hi", "n": [1, 2.50]}"#,
        )
        .await;
    let item = created.expect(201);
    assert_eq!(created.headers["etag"], "\"1\"");
    assert_eq!(item["path"], "/user-7/post-1");
    assert_eq!(item["version"], 1);
    assert_eq!(item["value"], json!({"title": "hi", "n": [1, 2.50]}));
    assert!(item["expires_at"].is_null());
    let created_at = item["created_at"].as_i64().expect("created_at µs");
    assert_eq!(item["modified_at"].as_i64(), Some(created_at));
    // Number spelling and key order survive: the value is stored as written.
    assert!(
        created
            .text()
            .contains(r#""value":{"title":"hi","n":[1,2.50]}"#),
        "{}",
        created.text()
    );

    let got = server.get("/v1/items/user-7/post-1").await;
    assert_eq!(got.expect(200), item);
    assert_eq!(got.headers["etag"], "\"1\"");

    server.clock.advance(Duration::from_secs(5));
    let replaced = server.put("/v1/items/user-7/post-1", "[true, null]").await;
    let v2 = replaced.expect(200);
    assert_eq!(replaced.headers["etag"], "\"2\"");
    assert_eq!(v2["version"], 2);
    assert_eq!(v2["value"], json!([true, null]));
    assert_eq!(
        v2["created_at"].as_i64(),
        Some(created_at),
        "creation time is kept"
    );
    assert_eq!(v2["modified_at"].as_i64(), Some(created_at + 5_000_000));

    // Any JSON value is an item: scalars too.
    for value in ["null", "0", "-1.5e3", r#""text""#, "{}", "[]"] {
        server.put_item("/user-7/scalar-1", value).await;
        let got = server.get("/v1/items/user-7/scalar-1").await.expect(200);
        assert_eq!(
            got["value"],
            serde_json::from_str::<Value>(value).expect("json")
        );
    }

    let deleted = server.delete("/v1/items/user-7/post-1").await.expect(200);
    assert_eq!(deleted, v2, "delete returns what it removed");
    server
        .get("/v1/items/user-7/post-1")
        .await
        .expect_error(404, "not_found");
    server
        .delete("/v1/items/user-7/post-1")
        .await
        .expect_error(404, "not_found");

    // Re-created: the path's numbering goes on (no history kept), so an If-Match held from
    // before the delete cannot match the new item.
    assert_eq!(
        server.put("/v1/items/user-7/post-1", "1").await.expect(201)["version"],
        3
    );
}

#[tokio::test]
async fn conditional_writes_fail_with_condition_failed() {
    let server = TestServer::new();
    let star = [("if-none-match", "*")];
    let first = server
        .call(Method::PUT, "/v1/items/acct-1", &star, r#"{"b": 1}"#)
        .await;
    first.expect(201);
    let before = server.export().await;
    let message = server
        .call(Method::PUT, "/v1/items/acct-1", &star, r#"{"b": 2}"#)
        .await
        .expect_error(412, "condition_failed");
    assert!(message.contains("/acct-1"), "{message}");

    // If-Match takes the version, quoted (as ETag sends it) or not.
    for stale in ["\"7\"", "7", "W/\"7\""] {
        server
            .call(
                Method::PUT,
                "/v1/items/acct-1",
                &[("if-match", stale)],
                "{}",
            )
            .await
            .expect_error(412, "condition_failed");
        server
            .call(
                Method::DELETE,
                "/v1/items/acct-1",
                &[("if-match", stale)],
                Body::empty(),
            )
            .await
            .expect_error(412, "condition_failed");
    }
    assert_eq!(
        server.export().await,
        before,
        "failed conditions wrote nothing"
    );

    let ok = server
        .call(
            Method::PUT,
            "/v1/items/acct-1",
            &[("if-match", "\"1\"")],
            r#"{"b": 3}"#,
        )
        .await;
    assert_eq!(ok.expect(200)["version"], 2);
    // The old version no longer matches.
    server
        .call(Method::PUT, "/v1/items/acct-1", &[("if-match", "1")], "{}")
        .await
        .expect_error(412, "condition_failed");
    // If-Match on a missing item fails the condition; it does not create it.
    server
        .call(Method::PUT, "/v1/items/acct-2", &[("if-match", "1")], "{}")
        .await
        .expect_error(412, "condition_failed");
    server
        .get("/v1/items/acct-2")
        .await
        .expect_error(404, "not_found");

    server
        .call(
            Method::DELETE,
            "/v1/items/acct-1",
            &[("if-match", "2")],
            Body::empty(),
        )
        .await
        .expect(200);
    server
        .get("/v1/items/acct-1")
        .await
        .expect_error(404, "not_found");

    // Malformed conditions are bad requests, not failed conditions.
    for (name, value) in [("if-match", "abc"), ("if-none-match", "\"3\"")] {
        server
            .call(Method::PUT, "/v1/items/acct-3", &[(name, value)], "{}")
            .await
            .expect_error(400, "invalid_request");
    }
    server
        .call(Method::DELETE, "/v1/items/acct-3", &star, Body::empty())
        .await
        .expect_error(400, "invalid_request");
    server
        .get("/v1/items/acct-3")
        .await
        .expect_error(404, "not_found");
}

#[tokio::test]
async fn history_versions_and_retention() {
    let server = TestServer::new();
    for n in 1..=4 {
        let item = server
            .put(
                "/v1/items/e-1/audit?history=true",
                &format!(r#"{{"n": {n}}}"#),
            )
            .await
            .json();
        assert_eq!(item["version"], n);
    }
    let history = server.get("/v1/history/e-1/audit").await;
    history.expect(200);
    let versions: Vec<i64> = history.json()["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["version"].as_i64().expect("version"))
        .collect();
    assert_eq!(versions, [4, 3, 2, 1], "newest first");
    let limited = server.get("/v1/history/e-1/audit?limit=2").await.json();
    assert_eq!(limited["items"].as_array().map(Vec::len), Some(2));

    let v2 = server
        .get("/v1/items/e-1/audit?version=2")
        .await
        .expect(200);
    assert_eq!(v2["value"], json!({"n": 2}));
    assert_eq!(v2["version"], 2);
    assert_eq!(
        server
            .get("/v1/items/e-1/audit?version=4")
            .await
            .expect(200)["value"],
        json!({"n": 4})
    );
    server
        .get("/v1/items/e-1/audit?version=9")
        .await
        .expect_error(404, "not_found");
    // Versions start at 1: 0 is a bad request, not a missing item.
    server
        .get("/v1/items/e-1/audit?version=0")
        .await
        .expect_error(400, "invalid_request");

    // Retention (set per namespace on the store): only the newest revisions are kept.
    server
        .store
        .set_namespace_history("ledger", Some(3))
        .expect("namespace history");
    for n in 1..=6 {
        server.put_item("/e-1/ledger-1", &n.to_string()).await;
    }
    let kept = server.get("/v1/history/e-1/ledger-1").await.json();
    let versions: Vec<i64> = kept["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["version"].as_i64().expect("version"))
        .collect();
    assert_eq!(versions, [6, 5, 4]);
    server
        .get("/v1/items/e-1/ledger-1?version=2")
        .await
        .expect_error(404, "not_found");

    // A deleted item keeps its history; re-creating it continues the numbering.
    server.delete("/v1/items/e-1/audit").await.expect(200);
    let recreated = server
        .put("/v1/items/e-1/audit?history=true", r#"{"n": 5}"#)
        .await
        .expect(201);
    assert_eq!(
        recreated["version"], 5,
        "created, with the next version number"
    );

    // An item without history has none.
    server.put_item("/e-1/plain", "1").await;
    server.put_item("/e-1/plain", "2").await;
    assert_eq!(
        server.get("/v1/history/e-1/plain").await.expect(200),
        json!({"items": []})
    );

    for bad in ["limit=0", "limit=1001", "limit=x"] {
        server
            .get(&format!("/v1/history/e-1/audit?{bad}"))
            .await
            .expect_error(400, "invalid_request");
    }
}

#[tokio::test]
async fn ttl_sets_expires_at_and_expired_items_disappear() {
    let server = TestServer::new();
    let item = server
        .put("/v1/items/s-1/token-1?ttl_seconds=60", r#""secret""#)
        .await
        .expect(201);
    let modified = item["modified_at"].as_i64().expect("modified_at");
    assert_eq!(item["expires_at"].as_i64(), Some(modified + 60_000_000));
    server.put_item("/s-1/token-2", r#""kept""#).await;
    assert_eq!(
        server.get("/v1/items/s-1/token-1").await.expect(200)["expires_at"],
        item["expires_at"]
    );

    // A write without a TTL clears it.
    server.put_item("/s-1/token-3", "1").await;
    let cleared = server
        .put("/v1/items/s-1/token-3?ttl_seconds=1", "1")
        .await
        .json();
    assert!(cleared["expires_at"].is_i64());
    assert!(server.put_item("/s-1/token-3", "2").await["expires_at"].is_null());

    // The store's clock passes the expiry: every read hides the item at once, before any sweep.
    server.clock.advance(Duration::from_secs(61));
    server
        .get("/v1/items/s-1/token-1")
        .await
        .expect_error(404, "not_found");
    assert_eq!(
        server.list_paths("/v1/list/s-1").await,
        ["/s-1/token-2", "/s-1/token-3"]
    );
    assert_eq!(
        server
            .list_paths("/v1/list/s-1?children=true&reverse=true")
            .await,
        ["/s-1/token-3", "/s-1/token-2"]
    );
    let many = server
        .post(
            "/v1/get",
            &json!({"paths": ["/s-1/token-1", "/s-1/token-2"]}),
        )
        .await;
    assert_eq!(many.paths(), ["/s-1/token-2"]);
    // Exported only as what it leaves: a tombstone with its last version.
    let export = server.export().await;
    let token_1: Vec<&str> = export.lines().filter(|l| l.contains("token-1")).collect();
    assert_eq!(token_1.len(), 1, "{export}");
    assert!(token_1[0].contains(r#""deleted":true"#), "{export}");
    // An expired item does not exist for conditions either.
    server
        .call(
            Method::PUT,
            "/v1/items/s-1/token-1",
            &[("if-none-match", "*")],
            "2",
        )
        .await
        .expect(201);

    // TTL in a transaction.
    let tx = server
        .post(
            "/v1/transact",
            &json!({"ops": [{"op": "put", "path": "/s-2", "value": 1, "ttl_seconds": 10}]}),
        )
        .await
        .expect(200);
    let put = &tx["results"][0]["item"];
    assert_eq!(
        put["expires_at"].as_i64(),
        put["modified_at"].as_i64().map(|m| m + 10_000_000)
    );
}

#[tokio::test]
async fn get_many_reads_in_the_order_asked_and_skips_missing() {
    let server = TestServer::new();
    for id in [1, 2, 3] {
        server
            .put_item(&format!("/u-{id}/p-1"), &id.to_string())
            .await;
    }
    let reply = server
        .post(
            "/v1/get",
            &json!({"paths": ["/u-3/p-1", "/u-9/p-1", "/u-1/p-1", "/u-2/p-1/c-1"]}),
        )
        .await;
    reply.expect(200);
    assert_eq!(reply.paths(), ["/u-3/p-1", "/u-1/p-1"]);
    assert_eq!(reply.json()["items"][0]["value"], 3);
    assert_eq!(
        server
            .post("/v1/get", &json!({"paths": []}))
            .await
            .expect(200),
        json!({"items": []})
    );

    let too_many: Vec<String> = (0..101).map(|i| format!("/u-{i}")).collect();
    server
        .post("/v1/get", &json!({ "paths": too_many }))
        .await
        .expect_error(400, "invalid_request");
    server
        .post("/v1/get", &json!({"paths": ["/u-1", "/u-01"]}))
        .await
        .expect_error(400, "invalid_path");
    server
        .post("/v1/get", &json!({"paths": ["/u-1"], "extra": 1}))
        .await
        .expect_error(400, "invalid_json");
}

/// Key paths whose text needs escaping in a URL: spaces, `%` escapes, unicode, `!` and `~` ids.
#[tokio::test]
async fn percent_encoded_paths_round_trip() {
    let server = TestServer::new();
    // (URL path after /v1/items, canonical key path)
    let cases = [
        ("/file-a%20b", "/file-a b"),
        // The key path's own `%` escape of '/', percent-encoded for the URL: id "a/b".
        ("/file-a%25%2Fb", "/file-a%/b"),
        ("/file-a%25%25", "/file-a%%"),
        ("/file-%25123", "/file-%123"),
        (
            "/user-caf%C3%A9/doc-%E6%97%A5%E6%9C%AC",
            "/user-café/doc-日本",
        ),
        ("/score-!1500", "/score-!1500"),
        ("/blob-~AAEC", "/blob-~AAEC"),
        ("/tag-%2Bplus%3Fq%23h", "/tag-+plus?q#h"),
    ];
    for (url, canonical) in cases {
        let put = server.put(&format!("/v1/items{url}"), "1").await;
        assert_eq!(put.expect(201)["path"], canonical, "PUT {url}");
        let got = server.get(&format!("/v1/items{url}")).await;
        assert_eq!(got.expect(200)["path"], canonical, "GET {url}");
        let listed = server.list_paths(&format!("/v1/list{url}")).await;
        assert_eq!(listed, [canonical], "list {url}");
        let many = server
            .post("/v1/get", &json!({ "paths": [canonical] }))
            .await;
        assert_eq!(many.paths(), [canonical]);
    }
    // The id "a/b" is one element: it is not /file-a with a child b.
    assert_eq!(
        server.list_paths("/v1/list/file-a?children=true").await,
        Vec::<String>::new()
    );
    // Unescaped UTF-8 in the URL is the same path as its percent-encoding.
    let raw = server.get("/v1/items/user-café/doc-日本").await;
    assert_eq!(raw.expect(200)["path"], "/user-café/doc-日本");
    server.delete("/v1/items/file-a%25%2Fb").await.expect(200);
    server
        .get("/v1/items/file-a%25%2Fb")
        .await
        .expect_error(404, "not_found");
    assert_eq!(
        server.get("/v1/items/file-a%20b").await.expect(200)["path"],
        "/file-a b"
    );
}
