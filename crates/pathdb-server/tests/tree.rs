//! The tree: implied nodes in children listings, and subtree delete, move and copy.

use super::TestServer;
use axum::body::Body;
use axum::http::Method;
use serde_json::{Value, json};

/// The issue's leaderboard: two entries below `score-!1500`, no item at `ts-…`.
async fn leaderboard(server: &TestServer) {
    for path in [
        "/season-2026-spring/score-!1500/ts-1719100800/player-nightowl",
        "/season-2026-spring/score-!1500/ts-1719100500/player-p_8842",
    ] {
        server.put_item(path, r#"{"points": 1500}"#).await;
    }
}

#[tokio::test]
async fn a_child_with_items_below_it_is_a_node() {
    let server = TestServer::new();
    leaderboard(&server).await;
    let body = server
        .get("/v1/list/season-2026-spring/score-%211500?children=true")
        .await
        .expect(200);
    assert_eq!(
        body["items"],
        json!([
            {"path": "/season-2026-spring/score-!1500/ts-1719100500", "node": true},
            {"path": "/season-2026-spring/score-!1500/ts-1719100800", "node": true},
        ])
    );
    // One level up: the descending score is a node too; a subtree listing shows no nodes.
    let body = server
        .get("/v1/list/season-2026-spring?children=true")
        .await
        .expect(200);
    assert_eq!(
        body["items"],
        json!([{"path": "/season-2026-spring/score-!1500", "node": true}])
    );
    let subtree = server.get("/v1/list/season-2026-spring").await.expect(200);
    assert!(
        subtree["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i.get("node").is_none() && i["version"] == 1)
    );
}

#[tokio::test]
async fn nodes_page_both_ways_and_respect_bounds() {
    let server = TestServer::new();
    // folder-1 holds an item and files, folder-2 only files, folder-3 only an item,
    // folder-4 files that were all deleted (no node), folder-10 only files.
    for path in [
        "/drive-a91/folder-1",
        "/drive-a91/folder-1/file-1",
        "/drive-a91/folder-2/file-1",
        "/drive-a91/folder-2/file-2",
        "/drive-a91/folder-3",
        "/drive-a91/folder-4/file-1",
        "/drive-a91/folder-10/sub-1/file-1",
    ] {
        server.put_item(path, "{}").await;
    }
    server
        .delete("/v1/items/drive-a91/folder-4/file-1")
        .await
        .expect(200);
    let entry = |v: &Value| {
        let path = v["path"].as_str().unwrap().to_owned();
        if v["node"] == true {
            assert!(
                v.get("version").is_none() && v.get("value").is_none(),
                "{v}"
            );
            format!("{path}/")
        } else {
            path
        }
    };
    let all = [
        "/drive-a91/folder-1",
        "/drive-a91/folder-2/",
        "/drive-a91/folder-3",
        "/drive-a91/folder-10/",
    ];
    for reverse in [false, true] {
        let mut expected: Vec<&str> = all.to_vec();
        if reverse {
            expected.reverse();
        }
        for limit in [1, 2, 3, 100] {
            let mut got = Vec::new();
            let mut token: Option<String> = None;
            loop {
                let mut uri =
                    format!("/v1/list/drive-a91?children=true&limit={limit}&reverse={reverse}");
                if let Some(t) = &token {
                    uri.push_str(&format!("&page_token={t}"));
                }
                let body = server.get(&uri).await.expect(200);
                got.extend(body["items"].as_array().unwrap().iter().map(entry));
                match body["next_page_token"].as_str() {
                    Some(t) => token = Some(t.to_owned()),
                    None => break,
                }
            }
            assert_eq!(got, expected, "limit {limit}, reverse {reverse}");
        }
    }
    // Bounds count a node at its own path, even when its items lie past the bound.
    let bounded = |query: &'static str| {
        let server = &server;
        async move {
            let body = server
                .get(&format!("/v1/list/drive-a91?children=true&{query}"))
                .await
                .expect(200);
            body["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(entry)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        bounded("lte=/drive-a91/folder-2").await,
        ["/drive-a91/folder-1", "/drive-a91/folder-2/"]
    );
    assert_eq!(
        bounded("gt=/drive-a91/folder-2").await,
        ["/drive-a91/folder-3", "/drive-a91/folder-10/"]
    );
    assert_eq!(
        bounded("gte=/drive-a91/folder-2/file-2&reverse=true").await,
        ["/drive-a91/folder-10/", "/drive-a91/folder-3"]
    );
    assert_eq!(
        bounded("lt=/drive-a91/folder-10/sub-1").await,
        all,
        "a bound inside a child's subtree keeps the child"
    );
}

/// Puts each path with `{"n": i}`.
async fn put_all(server: &TestServer, paths: &[&str]) {
    for (i, path) in paths.iter().enumerate() {
        server.put_item(path, &json!({ "n": i }).to_string()).await;
    }
}

#[tokio::test]
async fn recursive_delete_answers_a_count_and_stops_at_the_segment() {
    let server = TestServer::new();
    put_all(
        &server,
        &[
            "/a-1/p-1",
            "/a-1/p-1/c-1",
            "/a-1/p-1/c-2/d-1",
            "/a-1/p-10",
            "/a-1/p-10/c-1",
        ],
    )
    .await;
    let body = server
        .delete("/v1/items/a-1/p-1?recursive=true")
        .await
        .expect(200);
    assert_eq!(body, json!({"deleted": 3}));
    assert_eq!(
        server.list_paths("/v1/list/a-1").await,
        ["/a-1/p-10", "/a-1/p-10/c-1"]
    );
    server
        .get("/v1/items/a-1/p-1/c-1")
        .await
        .expect_error(404, "not_found");
    // Each delete left its tombstone: the next put continues the numbering.
    assert_eq!(server.put_item("/a-1/p-1/c-1", "{}").await["version"], 3);
    // Nothing there: 404. A precondition does not apply.
    server
        .delete("/v1/items/a-1/p-2?recursive=true")
        .await
        .expect_error(404, "not_found");
    server
        .call(
            Method::DELETE,
            "/v1/items/a-1/p-10?recursive=true",
            &[("if-match", "\"1\"")],
            Body::empty(),
        )
        .await
        .expect_error(400, "invalid_request");
    // recursive=false is a plain delete of the item alone.
    let item = server
        .delete("/v1/items/a-1/p-10?recursive=false")
        .await
        .expect(200);
    assert_eq!(item["path"], "/a-1/p-10");
    assert_eq!(
        server.list_paths("/v1/list/a-1/p-10").await,
        ["/a-1/p-10/c-1"]
    );
}

#[tokio::test]
async fn move_keeps_values_times_and_history_and_leaves_tombstones() {
    let server = TestServer::new();
    put_all(
        &server,
        &["/drive-a91/folder-docs", "/drive-a91/folder-docs/file-1"],
    )
    .await;
    let put = server
        .put(
            "/v1/items/drive-a91/folder-docs/file-1?history=true",
            r#"{"text": "v2"}"#,
        )
        .await
        .expect(200);
    put_all(&server, &["/drive-a91/folder-docs0"]).await;
    let body = server
        .post(
            "/v1/move",
            &json!({"from": "/drive-a91/folder-docs", "to": "/drive-b22/folder-docs"}),
        )
        .await
        .expect(200);
    assert_eq!(body, json!({"moved": 2}));
    server
        .get("/v1/items/drive-a91/folder-docs/file-1")
        .await
        .expect_error(404, "not_found");
    assert_eq!(
        server.list_paths("/v1/list/drive-a91").await,
        ["/drive-a91/folder-docs0"]
    );
    let moved = server
        .get("/v1/items/drive-b22/folder-docs/file-1")
        .await
        .expect(200);
    for field in ["value", "version", "created_at", "modified_at"] {
        assert_eq!(moved[field], put[field], "{field}");
    }
    let history = server
        .get("/v1/history/drive-b22/folder-docs/file-1")
        .await
        .expect(200);
    assert_eq!(history["items"][0]["value"], json!({"text": "v2"}));
    // The source's numbering goes on from its tombstone.
    assert_eq!(
        server.put_item("/drive-a91/folder-docs/file-1", "{}").await["version"],
        4
    );
}

#[tokio::test]
async fn copy_leaves_the_source() {
    let server = TestServer::new();
    put_all(
        &server,
        &["/user-7", "/user-7/post-1", "/user-7/post-1/comment-2"],
    )
    .await;
    let body = server
        .post("/v1/copy", &json!({"from": "/user-7", "to": "/user-8"}))
        .await
        .expect(200);
    assert_eq!(body, json!({"copied": 3}));
    assert_eq!(server.list_paths("/v1/list/user-7").await.len(), 3);
    assert_eq!(
        server.list_paths("/v1/list/user-8").await,
        ["/user-8", "/user-8/post-1", "/user-8/post-1/comment-2"]
    );
}

#[tokio::test]
async fn move_and_copy_errors() {
    let server = TestServer::new();
    put_all(&server, &["/e-1/a-1", "/e-1/a-1/b-1", "/e-1/c-1/d-1"]).await;
    for op in ["/v1/move", "/v1/copy"] {
        let server = &server;
        let send = |from: &str, to: &str| {
            let body = json!({"from": from, "to": to});
            async move { server.post(op, &body).await }
        };
        let message = send("/e-1/a-1", "/e-1/c-1")
            .await
            .expect_error(409, "destination_not_empty");
        assert!(message.contains("/e-1/c-1/d-1"), "{message}");
        for (from, to) in [("/e-1/a-1", "/e-1/a-1/b-2"), ("/e-1/a-1/b-1", "/e-1/a-1")] {
            send(from, to).await.expect_error(400, "invalid_request");
        }
        send("/e-1/z-1", "/e-2/z-1")
            .await
            .expect_error(404, "not_found");
        send("/e-1/a-1", "e-2")
            .await
            .expect_error(400, "invalid_path");
        server
            .post(
                op,
                &json!({"from": "/e-1/a-1", "to": "/e-2/a-1", "force": true}),
            )
            .await
            .expect_error(400, "invalid_json");
        server
            .call(
                Method::POST,
                op,
                &[("content-type", "text/plain")],
                json!({"from": "/e-1/a-1", "to": "/e-2/a-1"}).to_string(),
            )
            .await
            .expect_error(415, "unsupported_media_type");
    }
    assert_eq!(
        server.list_paths("/v1/list/e-1").await,
        ["/e-1/a-1", "/e-1/a-1/b-1", "/e-1/c-1/d-1"]
    );
    assert!(server.list_paths("/v1/list/e-2").await.is_empty());
}
