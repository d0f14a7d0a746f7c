//! The change feed over HTTP (JSON pages, long polls, Server-Sent Events) and creates with
//! generated ids.

use crate::TestServer;
use axum::body::Body;
use axum::http::{Method, Request};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tower::ServiceExt;

async fn position(server: &TestServer, prefix: &str) -> String {
    let reply = server.get(&format!("/v1/changes{prefix}")).await;
    let body = reply.expect(200);
    assert_eq!(body["changes"], json!([]), "no `since`: no changes");
    body["next_token"]
        .as_str()
        .expect("a next_token")
        .to_owned()
}

#[tokio::test]
async fn a_listing_then_the_feed_gives_every_change_in_order() {
    let server = TestServer::new();
    server.put_item("/u-1/p-1", r#"{"a":1}"#).await;
    let listing = server.get("/v1/list/u-1").await.expect(200);
    let token = listing["changes_token"]
        .as_str()
        .expect("a first page has changes_token")
        .to_owned();
    server.put_item("/u-1/p-2", r#"{"a":2}"#).await;
    server.put_item("/u-1/p-1", r#"{"a":3}"#).await;
    server.put_item("/u-2/p-1", r#"{"other":true}"#).await;
    server.delete("/v1/items/u-1/p-2").await.expect(200);
    let page = server
        .get(&format!("/v1/changes/u-1?since={token}"))
        .await
        .expect(200);
    let changes = page["changes"].as_array().expect("changes");
    assert_eq!(changes.len(), 3, "{page}");
    assert_eq!(changes[0]["op"], "put");
    assert_eq!(changes[0]["item"]["path"], "/u-1/p-2");
    assert_eq!(changes[0]["item"]["value"], json!({"a": 2}));
    assert_eq!(changes[0]["item"]["version"], 1);
    assert_eq!(changes[1]["item"]["path"], "/u-1/p-1");
    assert_eq!(changes[1]["item"]["version"], 2);
    assert_eq!(
        changes[2],
        json!({"op": "delete", "path": "/u-1/p-2", "version": 1})
    );
    // The next token is the end: nothing more, and the position agrees.
    let next = page["next_token"].as_str().unwrap();
    assert_eq!(next, position(&server, "/u-1").await);
    let empty = server
        .get(&format!("/v1/changes/u-1?since={next}"))
        .await
        .expect(200);
    assert_eq!(empty["changes"], json!([]));
    // A deeper prefix sees only its subtree.
    let deep = server
        .get(&format!("/v1/changes/u-1/p-1?since={token}"))
        .await
        .expect(200);
    assert_eq!(deep["changes"].as_array().unwrap().len(), 1);
    // limit, and bad input.
    let one = server
        .get(&format!("/v1/changes/u-1?since={token}&limit=1"))
        .await
        .expect(200);
    assert_eq!(one["changes"].as_array().unwrap().len(), 1);
    server
        .get("/v1/changes/u-1?since=nonsense")
        .await
        .expect_error(400, "invalid_change_token");
    server
        .get(&format!("/v1/changes/u-2?since={token}"))
        .await
        .expect_error(400, "invalid_change_token");
    server
        .get(&format!("/v1/changes/u-1?since={token}&wait=61"))
        .await
        .expect_error(400, "invalid_request");
    server
        .get(&format!("/v1/changes/u-1?since={token}&limit=0"))
        .await
        .expect_error(400, "invalid_request");
}

#[tokio::test]
async fn an_expired_token_is_410_token_expired() {
    let server = TestServer::new();
    let token = position(&server, "/e-1").await;
    server.put_item("/e-1/a-1", "1").await;
    server.clock.advance(Duration::from_secs(8 * 24 * 3600));
    server
        .get(&format!("/v1/changes/e-1?since={token}"))
        .await
        .expect_error(410, "token_expired");
}

#[tokio::test]
async fn a_long_poll_returns_when_a_change_commits() {
    let server = TestServer::new();
    let token = position(&server, "/w-1").await;
    // Nothing happens: the poll waits its time and answers empty at the same position.
    let started = Instant::now();
    let idle = server
        .get(&format!("/v1/changes/w-1?since={token}&wait=1"))
        .await
        .expect(200);
    assert!(started.elapsed() >= Duration::from_millis(900));
    assert_eq!(idle["changes"], json!([]));
    assert_eq!(idle["next_token"], json!(token));
    // A write during the poll ends it.
    let uri = format!("/v1/changes/w-1?since={token}&wait=60");
    let poll = server.get(&uri);
    let write = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        server.put_item("/w-1/a-1", r#""hello""#).await;
    };
    let (reply, ()) = tokio::join!(poll, write);
    let body = reply.expect(200);
    assert_eq!(body["changes"][0]["item"]["value"], "hello");
}

/// Reads SSE events (id, data) from a streaming body until `n` arrived.
async fn events(body: &mut Body, n: usize) -> Vec<(String, Value)> {
    let mut text = String::new();
    let mut out = Vec::new();
    while out.len() < n {
        let frame = tokio::time::timeout(Duration::from_secs(30), body.frame())
            .await
            .expect("an event within 30 s")
            .expect("the stream continues")
            .expect("a frame");
        if let Ok(data) = frame.into_data() {
            text.push_str(&String::from_utf8_lossy(&data));
        }
        while let Some(end) = text.find("\n\n") {
            let block: String = text.drain(..end + 2).collect();
            let mut id = None;
            let mut data = None;
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id:") {
                    id = Some(v.trim().to_owned());
                } else if let Some(v) = line.strip_prefix("data:") {
                    data = Some(serde_json::from_str(v.trim()).expect("data is JSON"));
                }
            }
            if let (Some(id), Some(data)) = (id, data) {
                out.push((id, data));
            }
        }
    }
    out
}

async fn stream(server: &TestServer, uri: &str, last_event_id: Option<&str>) -> Body {
    let mut request = Request::builder()
        .method(Method::GET)
        .uri(uri)
        .header("accept", "text/event-stream");
    if let Some(id) = last_event_id {
        request = request.header("last-event-id", id);
    }
    let response = server
        .app
        .clone()
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    response.into_body()
}

#[tokio::test]
async fn server_sent_events_stream_changes_and_resume_from_last_event_id() {
    let server = TestServer::new();
    let token = position(&server, "/s-1").await;
    server.put_item("/s-1/a-1", "1").await;
    let mut body = stream(&server, &format!("/v1/changes/s-1?since={token}"), None).await;
    let first = events(&mut body, 1).await;
    assert_eq!(first[0].1["item"]["path"], "/s-1/a-1");
    // Changes committed while connected arrive as they happen.
    server.put_item("/s-1/a-2", "2").await;
    server.delete("/v1/items/s-1/a-1").await.expect(200);
    let more = events(&mut body, 2).await;
    assert_eq!(more[0].1["item"]["path"], "/s-1/a-2");
    assert_eq!(
        more[1].1,
        json!({"op": "delete", "path": "/s-1/a-1", "version": 1})
    );
    drop(body);
    // Reconnecting with the first event's id resumes right after it.
    let mut resumed = stream(&server, "/v1/changes/s-1", Some(&first[0].0)).await;
    let again = events(&mut resumed, 2).await;
    assert_eq!(
        again.iter().map(|(_, d)| d.clone()).collect::<Vec<_>>(),
        more.iter().map(|(_, d)| d.clone()).collect::<Vec<_>>()
    );
    assert_eq!(again[1].0, more[1].0, "event ids are positions");
    // The ids are tokens for the JSON API too.
    let after = server
        .get(&format!("/v1/changes/s-1?since={}", more[0].0))
        .await
        .expect(200);
    assert_eq!(after["changes"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn posting_to_a_namespace_creates_an_item_with_a_generated_id() {
    let server = TestServer::new();
    let reply = server
        .call(
            Method::POST,
            "/v1/items/user-7/post?id=sequence",
            &[],
            r#"{"title":"one"}"#,
        )
        .await;
    let first = reply.expect(201);
    assert_eq!(first["path"], "/user-7/post-1");
    assert_eq!(reply.headers["location"], "/v1/items/user-7/post-1");
    assert_eq!(reply.headers["etag"], "\"1\"");
    let second = server
        .call(Method::POST, "/v1/items/user-7/post-?id=sequence", &[], "2")
        .await
        .expect(201);
    assert_eq!(second["path"], "/user-7/post-2");
    server.delete("/v1/items/user-7/post-2").await.expect(200);
    let third = server
        .call(Method::POST, "/v1/items/user-7/post?id=sequence", &[], "3")
        .await
        .expect(201);
    assert_eq!(
        third["path"], "/user-7/post-3",
        "a deleted id is not reused"
    );
    let group = server
        .call(Method::POST, "/v1/items/user?id=uuid", &[], "{}")
        .await
        .expect(201);
    let path = group["path"].as_str().unwrap();
    assert!(
        path.starts_with("/user-") && path.len() == "/user-".len() + 36,
        "{path}"
    );
    let r = server
        .call(Method::POST, "/v1/items/user-7/r?id=rand53", &[], "{}")
        .await
        .expect(201);
    let id: u64 = r["path"].as_str().unwrap()["/user-7/r-".len()..]
        .parse()
        .unwrap();
    assert!((1..1 << 53).contains(&id));
    server
        .call(Method::POST, "/v1/items/user-7/post?id=serial", &[], "{}")
        .await
        .expect_error(400, "invalid_request");
    server
        .call(Method::POST, "/v1/items/user-7/post-3?id=uuid", &[], "{}")
        .await
        .expect_error(400, "invalid_path");
    // Without `id`, a UUID (docs/changes.md).
    let uuid = server
        .call(Method::POST, "/v1/items/user-7/post", &[], "{}")
        .await
        .expect(201);
    let id = &uuid["path"].as_str().unwrap()["/user-7/post-".len()..];
    assert!(id.parse::<uuid::Uuid>().is_ok(), "{id}");
    // In a transaction: a post, a comment under it, and a reference that is not a create.
    let tx = server
        .post(
            "/v1/transact",
            &json!({"ops": [
                {"op": "create", "path": "/user-7/post", "id": "sequence", "value": {"t": 1}},
                {"op": "create", "path": "$0/comment", "id": "sequence", "value": "first!"},
                {"op": "put", "path": "/user-7/latest-1", "value": 4},
            ]}),
        )
        .await
        .expect(200);
    assert_eq!(tx["results"][0]["item"]["path"], "/user-7/post-4");
    assert_eq!(tx["results"][1]["item"]["path"], "/user-7/post-4/comment-1");
    server
        .post(
            "/v1/transact",
            &json!({"ops": [{"op": "create", "path": "$0/comment", "id": "uuid", "value": 1}]}),
        )
        .await
        .expect_error(400, "invalid_request");
}

/// Issue 18's sequence: a `null` put used to make every feed read of its group answer 503 for
/// good. Every way of writing `null` (PUT, POST create, transaction, import) reaches the JSON
/// follower, a narrower prefix and an SSE stream, and the feed keeps working after it.
#[tokio::test]
async fn a_null_value_reaches_every_follower_of_its_group() {
    let server = TestServer::new();
    let token = position(&server, "/n-1").await;
    let reply = server.put("/v1/items/n-1/a-1", "null").await;
    reply.expect(201);
    let page = server
        .get(&format!("/v1/changes/n-1?since={token}"))
        .await
        .expect(200);
    let item = &page["changes"][0]["item"];
    assert_eq!(item["path"], "/n-1/a-1");
    assert!(item.get("value").is_some_and(Value::is_null), "{page}");
    server
        .get(&format!("/v1/changes/n-1/a-2?since={token}"))
        .await
        .expect(200);
    // The other ways to write null.
    server
        .call(Method::POST, "/v1/items/n-1/c?id=sequence", &[], "null")
        .await
        .expect(201);
    server
        .post(
            "/v1/transact",
            &json!({"ops": [{"op": "put", "path": "/n-1/t-1", "value": null}]}),
        )
        .await
        .expect(200);
    server
        .call(
            Method::POST,
            "/v1/import",
            &[("content-type", "application/x-ndjson")],
            "{\"path\":\"/n-1/i-1\",\"value\":null}\n",
        )
        .await
        .expect(200);
    server.put_item("/n-1/a-2", "[]").await;
    let all = server
        .get(&format!("/v1/changes/n-1?since={token}"))
        .await
        .expect(200);
    let changes = all["changes"].as_array().unwrap();
    let paths: Vec<&str> = changes
        .iter()
        .map(|c| c["item"]["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        ["/n-1/a-1", "/n-1/c-1", "/n-1/t-1", "/n-1/i-1", "/n-1/a-2"]
    );
    for change in &changes[..4] {
        assert!(change["item"]["value"].is_null(), "{change}");
    }
    assert_eq!(changes[4]["item"]["value"], json!([]));
    // An SSE follower receives the null put, and the live changes after it.
    let mut body = stream(&server, &format!("/v1/changes/n-1?since={token}"), None).await;
    let streamed = events(&mut body, 5).await;
    assert!(streamed[0].1["item"]["value"].is_null());
    server.put_item("/n-1/a-3", "null").await;
    let live = events(&mut body, 1).await;
    assert_eq!(live[0].1["item"]["path"], "/n-1/a-3");
    assert!(live[0].1["item"]["value"].is_null());
}

/// A namespace defined with `"changes": false` (docs/changes.md, "Groups without a change
/// log"): its groups are written and listed as any, but have no feed and no listing token, and
/// the setting is shown and cannot be undone.
#[tokio::test]
async fn a_group_without_a_change_log_has_no_feed() {
    let server = TestServer::new();
    let defined = server
        .put("/v1/namespaces/session", r#"{"changes": false}"#)
        .await
        .expect(201);
    assert_eq!(defined["changes"], json!(false), "{defined}");
    let item = server.put_item("/session-1/a-1", r#"{"a":1}"#).await;
    assert_eq!(item["version"], 1);
    let item = server.put_item("/session-1/a-1", r#"{"a":2}"#).await;
    assert_eq!(item["version"], 2);
    let refused = server
        .get("/v1/changes/session-1")
        .await
        .expect_error(400, "invalid_request");
    assert!(refused.contains("keeps no change log"), "{refused}");
    let listing = server.get("/v1/list/session-1").await.expect(200);
    assert_eq!(
        listing["items"].as_array().map(Vec::len),
        Some(1),
        "{listing}"
    );
    assert!(
        listing.get("changes_token").is_none_or(Value::is_null),
        "{listing}"
    );
    // Another group's feed is untouched.
    server.put_item("/u-1/session-1", r#"{"a":1}"#).await;
    assert!(!position(&server, "/u-1").await.is_empty());
    // Once off, it stays off: refused by the dry run as by the save.
    server
        .put(
            "/v1/namespaces/session?dry_run=true",
            r#"{"description": "sessions"}"#,
        )
        .await
        .expect_error(400, "invalid_request");
    server
        .put("/v1/namespaces/session", r#"{"description": "sessions"}"#)
        .await
        .expect_error(400, "invalid_request");
    server
        .delete("/v1/namespaces/session")
        .await
        .expect_error(400, "invalid_request");
    let kept = server
        .put(
            "/v1/namespaces/session",
            r#"{"description": "sessions", "changes": false}"#,
        )
        .await
        .expect(200);
    assert_eq!(kept["changes"], json!(false), "{kept}");
}
