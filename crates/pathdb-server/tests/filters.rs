//! Filters and projections over HTTP (docs/filters.md): `filter`, `fields`, `max_scan` and
//! `count` on listings, `fields` on reads, `filter` on `POST /v1/get`, feeds and listing checks,
//! and a 400 `invalid_filter` with the position for every bad filter on every route.

use crate::TestServer;
use serde_json::{Value, json};

/// `text` as a query parameter's value: every byte but letters and digits percent-encoded.
fn q(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

async fn seed(server: &TestServer) {
    for n in 1..=30 {
        let status = if n % 3 == 0 { "closed" } else { "open" };
        let value = json!({"status": status, "total": n * 10, "title": format!("t{n}"),
            "author": {"name": format!("n{n}"), "mail": "m"}});
        server
            .put_item(&format!("/u-7/o-{n}"), &value.to_string())
            .await;
    }
}

fn paths(body: &Value) -> Vec<String> {
    body["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["path"].as_str().expect("a path").to_owned())
        .collect()
}

#[tokio::test]
async fn a_filtered_listing_pages_honestly() {
    let server = TestServer::new();
    seed(&server).await;
    let filter = q(r#"value.status == "open" && value.total > 200"#);
    // Every page within its limit and scan budget; empty pages still lead on.
    let mut found = Vec::new();
    let mut uri = format!("/v1/list/u-7?filter={filter}&limit=2&max_scan=4");
    let mut empty_pages = 0;
    loop {
        let body = server.get(&uri).await.expect(200);
        let page = paths(&body);
        assert!(page.len() <= 2);
        assert!(body["scanned"].as_u64().expect("scanned") <= 4);
        empty_pages += usize::from(page.is_empty());
        found.extend(page);
        match body["next_page_token"].as_str() {
            Some(token) => {
                uri = format!("/v1/list/u-7?filter={filter}&limit=2&max_scan=4&page_token={token}")
            }
            None => break,
        }
    }
    let expected: Vec<String> = (21..=30)
        .filter(|n| n % 3 != 0)
        .map(|n| format!("/u-7/o-{n}"))
        .collect();
    assert_eq!(found, expected);
    assert!(
        empty_pages > 0,
        "the first 20 orders never match: some pages are empty"
    );

    // The count of the same range, and a token of this filter refused with another.
    let count = server
        .get(&format!("/v1/list/u-7?filter={filter}&count=true"))
        .await
        .expect(200);
    assert_eq!(count, json!({"count": expected.len(), "scanned": 30}));
    let first = server
        .get(&format!("/v1/list/u-7?filter={filter}&limit=1"))
        .await
        .expect(200);
    let token = first["next_page_token"].as_str().expect("more");
    server
        .get(&format!(
            "/v1/list/u-7?filter={}&page_token={token}",
            q("true")
        ))
        .await
        .expect_error(400, "invalid_page_token");
}

#[tokio::test]
async fn fields_project_reads_and_listings() {
    let server = TestServer::new();
    seed(&server).await;
    let reply = server
        .get("/v1/items/u-7/o-4?fields=title,author.name")
        .await;
    let body = reply.expect(200);
    assert_eq!(
        body["value"],
        json!({"title": "t4", "author": {"name": "n4"}})
    );
    assert_eq!(reply.headers["etag"], "\"1\"", "the ETag stays the item's");
    let listed = server
        .get("/v1/list/u-7?fields=total&limit=2")
        .await
        .expect(200);
    assert_eq!(listed["items"][0]["value"], json!({"total": 10}));
    let many = server
        .post(
            &format!("/v1/get?filter={}&fields=status", q("value.total >= 200")),
            &json!({"paths": ["/u-7/o-1", "/u-7/o-20", "/u-7/o-21", "/u-7/o-99"]}),
        )
        .await
        .expect(200);
    assert_eq!(paths(&many), ["/u-7/o-20", "/u-7/o-21"]);
    assert_eq!(many["items"][1]["value"], json!({"status": "closed"}));
    // One member of 2 KB values: less than half the bytes.
    for n in 1..=10 {
        let value = json!({"total": n, "body": "x".repeat(2000)});
        server
            .put_item(&format!("/big-1/d-{n}"), &value.to_string())
            .await;
    }
    let whole = server.get("/v1/list/big-1").await;
    let projected = server.get("/v1/list/big-1?fields=total").await;
    assert!(
        projected.body.len() * 2 < whole.body.len(),
        "{} of {} bytes",
        projected.body.len(),
        whole.body.len()
    );
}

#[tokio::test]
async fn a_filtered_feed_tells_entering_changing_and_leaving() {
    let server = TestServer::new();
    seed(&server).await;
    let since = server.get("/v1/changes/u-7").await.expect(200)["next_token"]
        .as_str()
        .expect("a token")
        .to_owned();
    server
        .put_item("/u-7/o-25", r#"{"status": "open", "total": 251}"#)
        .await; // changes
    server
        .put_item("/u-7/o-24", r#"{"status": "open", "total": 240}"#)
        .await; // enters
    server
        .put_item("/u-7/o-26", r#"{"status": "closed", "total": 260}"#)
        .await; // leaves
    server
        .put_item("/u-7/o-2", r#"{"status": "open", "total": 21}"#)
        .await; // neither
    server.delete("/v1/items/u-7/o-28").await.expect(200); // leaves
    let filter = q(r#"value.status == "open" && value.total > 200"#);
    let body = server
        .get(&format!("/v1/changes/u-7?since={since}&filter={filter}"))
        .await
        .expect(200);
    let told: Vec<String> = body["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|c| match c["op"].as_str() {
            Some("put") => format!("put {}", c["item"]["path"].as_str().unwrap_or("?")),
            _ => format!(
                "{} {}",
                if c["left"] == json!(true) {
                    "left"
                } else {
                    "delete"
                },
                c["path"].as_str().unwrap_or("?")
            ),
        })
        .collect();
    assert_eq!(
        told,
        [
            "put /u-7/o-25",
            "put /u-7/o-24",
            "left /u-7/o-26",
            "left /u-7/o-28"
        ]
    );
}

#[tokio::test]
async fn a_filtered_check_list_fails_only_on_its_result() {
    let server = TestServer::new();
    seed(&server).await;
    let filter = r#"value.status == "closed""#;
    let listing = server
        .get(&format!("/v1/list/u-7?filter={}", q(filter)))
        .await
        .expect(200);
    let token = listing["changes_token"].as_str().expect("a token");
    let check =
        json!({"op": "check_list", "prefix": "/u-7", "changes_token": token, "filter": filter});
    // An open order changing does not touch the closed ones.
    server
        .put_item("/u-7/o-1", r#"{"status": "open", "total": 11}"#)
        .await;
    server
        .post("/v1/transact", &json!({"ops": [check]}))
        .await
        .expect(200);
    // One closing does.
    server
        .put_item("/u-7/o-2", r#"{"status": "closed", "total": 20}"#)
        .await;
    server
        .post("/v1/transact", &json!({"ops": [check]}))
        .await
        .expect_error(409, "condition_failed");
    let bad = json!({"op": "check_list", "prefix": "/u-7", "changes_token": token, "filter": "value. =="});
    server
        .post("/v1/transact", &json!({"ops": [bad]}))
        .await
        .expect_error(400, "invalid_filter");
}

#[tokio::test]
async fn bad_filters_are_400_on_every_route() {
    let server = TestServer::new();
    seed(&server).await;
    let since = server.get("/v1/changes/u-7").await.expect(200)["next_token"]
        .as_str()
        .expect("a token")
        .to_owned();
    let bad = [
        ("value.total >", Some(13)),
        ("", Some(0)),
        ("nope == 1", Some(0)),
        (&*format!("value.a == '{}'", "x".repeat(5000)), Some(4096)),
        (
            &*format!("{}true{}", "(".repeat(33), ")".repeat(33)),
            Some(32),
        ),
        (&*"(".repeat(4000), None),
        (&*vec!["value.a"; 200].join(" + "), None),
        (&*"[".repeat(2000), None),
        ("\u{0}\u{1}'", None),
    ];
    for (filter, position) in bad {
        let f = q(filter);
        let replies = [
            server.get(&format!("/v1/list/u-7?filter={f}")).await,
            server.get(&format!("/v1/list/u-7?filter={f}&count=true")).await,
            server.get(&format!("/v1/list/u-7?filter={f}&children=true")).await,
            server
                .post(&format!("/v1/get?filter={f}"), &json!({"paths": ["/u-7/o-1"]}))
                .await,
            server
                .get(&format!("/v1/changes/u-7?since={since}&filter={f}"))
                .await,
            server
                .post(
                    "/v1/transact",
                    &json!({"ops": [{"op": "check_list", "prefix": "/u-7", "changes_token": since, "filter": filter}]}),
                )
                .await,
        ];
        for reply in replies {
            let body = reply.json();
            assert_eq!(reply.status, 400, "{filter:.40?}: {body}");
            assert_eq!(body["error"]["code"], "invalid_filter", "{body}");
            if let Some(at) = position {
                assert_eq!(body["error"]["position"], at, "{filter:.40?}: {body}");
            }
        }
    }
    // The other parameters' errors name them.
    for (uri, named) in [
        ("/v1/list/u-7?max_scan=0", "max_scan"),
        ("/v1/list/u-7?max_scan=many", "max_scan"),
        ("/v1/list/u-7?count=maybe", "count"),
        ("/v1/list/u-7?fields=a,,b", "fields"),
        ("/v1/items/u-7/o-1?fields=.", "fields"),
        ("/v1/list/u-7?count=true&fields=a", "fields"),
        ("/v1/list/u-7?limit=x", "limit"),
    ] {
        let message = server.get(uri).await.expect_error(400, "invalid_request");
        assert!(message.contains(named), "{uri}: {message}");
    }
}
