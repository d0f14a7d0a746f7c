//! The tree: implied nodes in children listings, and subtree delete, move and copy.

use super::TestServer;
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
