//! Listings over HTTP: subtrees at segment boundaries, children over deep subtrees, typed bounds
//! in either direction, and page tokens stitched in both directions, with writes between pages.

use crate::{TestServer, paths_of};
use serde_json::Value;

/// Group `u-1` with shallow and deep subtrees, a child that exists only through its subtree,
/// a sibling namespace, and a neighbouring group whose bytes share a prefix.
async fn seed(server: &TestServer) -> Vec<String> {
    let mut paths: Vec<String> = [
        "/u-1",
        "/u-1/p-1",
        "/u-1/p-1/c-1",
        "/u-1/p-1/c-2",
        "/u-1/p-1/c-2/r-1",
        "/u-1/p-2",
        "/u-1/p-3",
    ]
    .map(str::to_owned)
    .to_vec();
    paths.extend((1..=20).map(|d| format!("/u-1/p-3/d-{d}")));
    paths.extend(
        [
            "/u-1/p-10",
            "/u-1/p-10/c-1",
            "/u-1/p-20/c-1",
            "/u-1/p-20/c-1/x-1",
            "/u-1/q-1",
        ]
        .map(str::to_owned),
    );
    for path in paths.iter().rev() {
        server.put_item(path, r#"{"v": 1}"#).await;
    }
    server.put_item("/u-10/p-1", "1").await;
    server.put_item("/u-1x-1", "1").await;
    paths
}

fn strs(paths: &[&str]) -> Vec<String> {
    paths.iter().map(|p| (*p).to_owned()).collect()
}

/// Follows page tokens from `uri` (which has its query started) to the end.
async fn stitch(server: &TestServer, uri: &str) -> (Vec<String>, usize) {
    stitch_from(server, uri, None).await
}

/// Like [`stitch`], starting from a page token.
async fn stitch_from(
    server: &TestServer,
    uri: &str,
    mut token: Option<String>,
) -> (Vec<String>, usize) {
    let mut all = Vec::new();
    let mut pages = 0;
    loop {
        let page_uri = match &token {
            Some(t) => format!("{uri}&page_token={t}"),
            None => uri.to_owned(),
        };
        let reply = server.get(&page_uri).await;
        let body = reply.expect(200);
        pages += 1;
        all.extend(paths_of(&body));
        match &body["next_page_token"] {
            Value::String(t) => token = Some(t.clone()),
            Value::Null => return (all, pages),
            other => panic!("next_page_token {other}"),
        }
        assert!(pages <= 100, "paging does not end: {uri}");
    }
}

#[tokio::test]
async fn subtree_listing_stops_at_segment_boundaries() {
    let server = TestServer::new();
    let all = seed(&server).await;
    assert_eq!(
        server.list_paths("/v1/list/u-1?limit=1000").await,
        all,
        "key order"
    );
    assert_eq!(
        server.list_paths("/v1/list/u-1/p-1").await,
        strs(&[
            "/u-1/p-1",
            "/u-1/p-1/c-1",
            "/u-1/p-1/c-2",
            "/u-1/p-1/c-2/r-1"
        ]),
        "/u-1/p-1 never returns /u-1/p-10"
    );
    assert_eq!(
        server.list_paths("/v1/list/u-1/p-10").await,
        strs(&["/u-1/p-10", "/u-1/p-10/c-1"])
    );
    // A bare namespace lists every id in it and their subtrees, and nothing of `q`.
    let p_only = server.list_paths("/v1/list/u-1/p?limit=1000").await;
    assert_eq!(p_only, all[1..all.len() - 1].to_vec());
    assert_eq!(
        server.list_paths("/v1/list/u-1/p-4").await,
        Vec::<String>::new()
    );
    let reversed = server
        .list_paths("/v1/list/u-1?limit=1000&reverse=true")
        .await;
    assert_eq!(reversed, all.iter().rev().cloned().collect::<Vec<_>>());
}

#[tokio::test]
async fn children_listing_over_deep_subtrees() {
    let server = TestServer::new();
    seed(&server).await;
    // `/u-1/p-20` has items below it and none of its own: a node, at its own position.
    let children = strs(&[
        "/u-1/p-1",
        "/u-1/p-2",
        "/u-1/p-3",
        "/u-1/p-10",
        "/u-1/p-20",
        "/u-1/q-1",
    ]);
    assert_eq!(
        server.list_paths("/v1/list/u-1?children=true").await,
        children
    );
    let reversed: Vec<String> = children.iter().rev().cloned().collect();
    assert_eq!(
        server
            .list_paths("/v1/list/u-1?children=true&reverse=true")
            .await,
        reversed
    );
    assert_eq!(
        server.list_paths("/v1/list/u-1/p?children=true").await,
        children[..5].to_vec(),
        "a bare namespace's children are its ids"
    );
    assert_eq!(
        server.list_paths("/v1/list/u-1/p-1?children=true").await,
        strs(&["/u-1/p-1/c-1", "/u-1/p-1/c-2"])
    );
    // One item per page still steps over the deep subtrees, in both directions.
    for reverse in [false, true] {
        let (stitched, pages) = stitch(
            &server,
            &format!("/v1/list/u-1?children=true&limit=1&reverse={reverse}"),
        )
        .await;
        assert_eq!(&stitched, if reverse { &reversed } else { &children });
        assert!(pages <= children.len() + 1, "{pages} pages");
    }
}

#[tokio::test]
async fn bounds_are_the_same_in_either_direction() {
    let server = TestServer::new();
    let all = seed(&server).await;
    let cases = [
        ("gte=/u-1/p-2&lt=/u-1/p-10", false),
        ("gt=/u-1/p-2&lte=/u-1/p-10", false),
        ("gt=/u-1/p-1/c-2", false),
        ("lt=/u-1/p-3/d-5", false),
        ("gt=/u-1/p-1&lte=/u-1/p-10", true),
        ("gte=/u-1/p-2&lt=/u-1/q-1", true),
        ("gt=/u-1/p-3/d-7", true),
    ];
    for (bounds, children) in cases {
        let base = format!("/v1/list/u-1?limit=1000&children={children}&{bounds}");
        let forward = server.list_paths(&base).await;
        let backward = server.list_paths(&format!("{base}&reverse=true")).await;
        let mut expected = backward.clone();
        expected.reverse();
        assert_eq!(forward, expected, "{bounds} children={children}");
        assert!(!forward.is_empty(), "{bounds}");
        for reverse in [false, true] {
            let (stitched, _) = stitch(
                &server,
                &format!("/v1/list/u-1?limit=2&children={children}&reverse={reverse}&{bounds}"),
            )
            .await;
            assert_eq!(
                &stitched,
                if reverse { &backward } else { &forward },
                "{bounds}"
            );
        }
    }
    // Spot checks of the typed order: p-2 < p-3's subtree < p-10.
    assert_eq!(
        server
            .list_paths("/v1/list/u-1?gte=/u-1/p-2&lt=/u-1/p-10&limit=1000")
            .await,
        all[5..27].to_vec()
    );
    assert_eq!(
        server
            .list_paths("/v1/list/u-1?children=true&gt=/u-1/p-1&lte=/u-1/p-10&reverse=true")
            .await,
        strs(&["/u-1/p-10", "/u-1/p-3", "/u-1/p-2"])
    );
    // A bound outside the group, or not a key path, is refused.
    server
        .get("/v1/list/u-1?gt=/u-2/p-1")
        .await
        .expect_error(400, "invalid_request");
    server
        .get("/v1/list/u-1?gt=/u-1/p-01")
        .await
        .expect_error(400, "invalid_path");
    for bad in ["limit=0", "limit=1001", "limit=-1", "reverse=maybe"] {
        server
            .get(&format!("/v1/list/u-1?{bad}"))
            .await
            .expect_error(400, "invalid_request");
    }
}

#[tokio::test]
async fn page_tokens_stitch_in_both_directions() {
    let server = TestServer::new();
    let all = seed(&server).await;
    let reversed: Vec<String> = all.iter().rev().cloned().collect();
    for limit in [1, 3, 7, 100] {
        let (forward, pages) = stitch(&server, &format!("/v1/list/u-1?limit={limit}")).await;
        assert_eq!(forward, all, "limit {limit}");
        assert_eq!(
            pages,
            all.len().div_ceil(limit),
            "the last page has no token"
        );
        let (backward, _) =
            stitch(&server, &format!("/v1/list/u-1?limit={limit}&reverse=true")).await;
        assert_eq!(backward, reversed, "limit {limit}");
    }

    // A token belongs to its listing.
    let first = server.get("/v1/list/u-1?limit=2").await.json();
    let token = first["next_page_token"].as_str().expect("token");
    for other in [
        format!("/v1/list/u-1/p-1?limit=2&page_token={token}"),
        format!("/v1/list/u-1?limit=2&children=true&page_token={token}"),
        format!("/v1/list/u-1?limit=2&gt=/u-1/p-1&page_token={token}"),
        "/v1/list/u-1?page_token=garbage!".to_owned(),
        "/v1/list/u-1?page_token=AAAA".to_owned(),
    ] {
        server
            .get(&other)
            .await
            .expect_error(400, "invalid_page_token");
    }
    // The same listing with another page size, or reversed, continues from the same position.
    let rest = server
        .list_paths(&format!("/v1/list/u-1?limit=1000&page_token={token}"))
        .await;
    assert_eq!(rest, all[2..].to_vec());
    let back = server
        .list_paths(&format!(
            "/v1/list/u-1?limit=1000&reverse=true&page_token={token}"
        ))
        .await;
    assert_eq!(back, strs(&["/u-1"]), "reversed from the second item");
}

#[tokio::test]
async fn page_tokens_survive_writes_between_pages() {
    let server = TestServer::new();
    for k in 1..=10 {
        server.put_item(&format!("/g-1/k-{k}"), "1").await;
    }
    // Forward: a write behind the cursor is not seen, one ahead is, a delete ahead is gone,
    // and a replaced item shows its new value.
    let page = server.get("/v1/list/g-1?limit=3").await.json();
    assert_eq!(paths_of(&page), strs(&["/g-1/k-1", "/g-1/k-2", "/g-1/k-3"]));
    let token = page["next_page_token"].as_str().expect("token").to_owned();
    server.put_item("/g-1/k-0", "1").await;
    server.put_item("/g-1/k-2/sub-1", "1").await;
    server.put_item("/g-1/k-5", "2").await;
    server.delete("/v1/items/g-1/k-6").await.expect(200);
    server.put_item("/g-1/k-11", "1").await;
    server.put_item("/g-1/k-3/sub-1", "1").await;
    let (rest, _) = stitch_from(&server, "/v1/list/g-1?limit=3", Some(token)).await;
    assert_eq!(
        rest,
        strs(&[
            "/g-1/k-3/sub-1",
            "/g-1/k-4",
            "/g-1/k-5",
            "/g-1/k-7",
            "/g-1/k-8",
            "/g-1/k-9",
            "/g-1/k-10",
            "/g-1/k-11"
        ])
    );
    let k5 = server.get("/v1/items/g-1/k-5").await.expect(200);
    assert_eq!(k5["version"], 2);

    // Reverse, children only.
    let page = server
        .get("/v1/list/g-1?limit=3&children=true&reverse=true")
        .await
        .json();
    assert_eq!(
        paths_of(&page),
        strs(&["/g-1/k-11", "/g-1/k-10", "/g-1/k-9"])
    );
    let token = page["next_page_token"].as_str().expect("token").to_owned();
    server.put_item("/g-1/k-12", "1").await;
    server.put_item("/g-1/k-9/sub-1", "1").await;
    server.delete("/v1/items/g-1/k-2").await.expect(200);
    server.put_item("/g-1/k-6", "1").await;
    let (rest, _) = stitch_from(
        &server,
        "/v1/list/g-1?limit=3&children=true&reverse=true",
        Some(token),
    )
    .await;
    assert_eq!(
        rest,
        strs(&[
            // k-2's item is deleted, k-2/sub-1 lives: k-2 is a node.
            "/g-1/k-8", "/g-1/k-7", "/g-1/k-6", "/g-1/k-5", "/g-1/k-4", "/g-1/k-3", "/g-1/k-2",
            "/g-1/k-1", "/g-1/k-0"
        ])
    );
}
