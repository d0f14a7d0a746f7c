//! What the web console stands on: its files under `/ui/` (and `/` redirecting there, both off
//! with `Console::Off`), the groups listing, the key explanation and the session's scope.

use crate::TestServer;
use axum::body::Body;
use axum::http::Method;
use pathdb_server::{Console, Scope};

#[tokio::test]
async fn root_redirects_to_the_console_and_every_ui_path_serves_the_page() {
    let server = TestServer::new();
    for from in ["/", "/ui"] {
        let reply = server.get(from).await;
        assert!(reply.status.is_redirection(), "{from}: {}", reply.status);
        assert_eq!(reply.headers["location"], "/ui/", "{from}");
    }
    // The root, a deep link (encoded as for /v1/items) and one that is not a key path: the same
    // page, which reads its URL and shows the API's error for a bad path.
    for page in [
        "/ui/",
        "/ui/season-2026-spring",
        "/ui/user-7/tag-%2501",
        "/ui/not%20a%20path",
    ] {
        let reply = server.get(page).await;
        assert_eq!(reply.status, 200, "{page}");
        assert!(
            reply.headers["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/html")
        );
        assert!(reply.text().contains("/ui/.console/app.js"), "{page}");
        let csp = reply.headers["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("default-src 'self'"), "{csp}");
    }
    let script = server.get("/ui/.console/app.js").await;
    assert_eq!(script.status, 200);
    assert!(
        script.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/javascript")
    );
    assert!(script.text().contains("/v1/groups"), "the console's code");
    let css = server.get("/ui/.console/style.css").await;
    assert!(
        css.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/css")
    );
    server
        .get("/ui/.console/nope.js")
        .await
        .expect_error(404, "not_found");
}

#[tokio::test]
async fn the_console_needs_no_token_but_keeps_the_origin_check() {
    let server = TestServer::with_tokens(&[("rw", Scope::ReadWrite)]);
    assert_eq!(server.get("/ui/user-7").await.status, 200);
    server
        .get("/v1/groups")
        .await
        .expect_error(401, "unauthorized");
    let foreign = server
        .call(
            Method::GET,
            "/ui/",
            &[("origin", "https://evil.example")],
            Body::empty(),
        )
        .await;
    assert_eq!(foreign.status, 403);
}

#[tokio::test]
async fn without_the_console_root_and_ui_are_404_and_the_api_stays() {
    let server = TestServer::with_console(Console::Off);
    for page in ["/", "/ui/", "/ui/user-7", "/ui/.console/app.js"] {
        server.get(page).await.expect_error(404, "not_found");
    }
    server.get("/v1/groups").await.expect(200);
}

#[tokio::test]
async fn groups_are_listed_in_key_order_and_paged() {
    let server = TestServer::new();
    assert_eq!(
        server.get("/v1/groups").await.expect(200)["groups"],
        serde_json::json!([])
    );
    for path in [
        "/user-10/post-1",
        "/user-2",
        "/season-2026-spring/score-!1500",
        "/user-!3",
        "/gone-1",
    ] {
        server.put_item(path, "1").await;
    }
    server.delete("/v1/items/gone-1").await.expect(200);
    // A whole group moved: the old one holds only what the move left behind (issue 33).
    server
        .post(
            "/v1/move",
            &serde_json::json!({"from": "/season-2026-spring", "to": "/season-2027-spring"}),
        )
        .await
        .expect(200);
    let all = server.get("/v1/groups").await.expect(200);
    assert_eq!(
        all["groups"],
        serde_json::json!(["/season-2027-spring", "/user-2", "/user-10", "/user-!3"]),
        "typed order; a group with no live item (deleted, moved away) is not listed"
    );
    assert!(all["next_page_token"].is_null());
    let mut listed = Vec::new();
    let mut uri = "/v1/groups?limit=2".to_owned();
    loop {
        let page = server.get(&uri).await.expect(200);
        listed.extend(page["groups"].as_array().unwrap().iter().cloned());
        match page["next_page_token"].as_str() {
            Some(token) => uri = format!("/v1/groups?limit=2&page_token={token}"),
            None => break,
        }
    }
    assert_eq!(serde_json::Value::from(listed), all["groups"]);
    server
        .get("/v1/groups?limit=0")
        .await
        .expect_error(400, "invalid_request");
    server
        .get("/v1/groups?page_token=xyz")
        .await
        .expect_error(400, "invalid_page_token");
}

/// `?prefix=` lists the groups whose namespace starts with it, in key order, paged, and its
/// page tokens continue only the same prefix.
#[tokio::test]
async fn groups_are_listed_by_namespace_prefix() {
    let server = TestServer::new();
    for path in [
        "/user-10/post-1",
        "/user-2",
        "/users-1",
        "/user_old-!3",
        "/use-1",
        "/User-1",
        "/season-2026-spring",
        "/zebra-1",
    ] {
        server.put_item(path, "1").await;
    }
    let groups = |reply: serde_json::Value| reply["groups"].clone();
    assert_eq!(
        groups(server.get("/v1/groups?prefix=user").await.expect(200)),
        serde_json::json!(["/user-2", "/user-10", "/user_old-!3", "/users-1"]),
        "namespaces starting with `user`, case-sensitive, in key order"
    );
    assert_eq!(
        groups(server.get("/v1/groups?prefix=users").await.expect(200)),
        serde_json::json!(["/users-1"])
    );
    assert_eq!(
        groups(server.get("/v1/groups?prefix=nobody").await.expect(200)),
        serde_json::json!([])
    );
    assert_eq!(
        groups(server.get("/v1/groups?prefix=").await.expect(200)),
        groups(server.get("/v1/groups").await.expect(200)),
        "an empty prefix is every group"
    );
    let mut listed = Vec::new();
    let mut uri = "/v1/groups?prefix=user&limit=1".to_owned();
    let mut first_token = None;
    loop {
        let page = server.get(&uri).await.expect(200);
        listed.extend(page["groups"].as_array().unwrap().iter().cloned());
        match page["next_page_token"].as_str() {
            Some(token) => {
                first_token.get_or_insert_with(|| token.to_owned());
                uri = format!("/v1/groups?prefix=user&limit=1&page_token={token}");
            }
            None => break,
        }
    }
    assert_eq!(listed.len(), 4, "{listed:?}");
    let token = first_token.expect("more than one page");
    server
        .get(&format!("/v1/groups?prefix=use&page_token={token}"))
        .await
        .expect_error(400, "invalid_page_token");
    server
        .get(&format!("/v1/groups?page_token={token}"))
        .await
        .expect_error(400, "invalid_page_token");
    let message = server
        .get("/v1/groups?prefix=user-7")
        .await
        .expect_error(400, "invalid_request");
    assert!(message.contains("namespace"), "{message}");
}

#[tokio::test]
async fn a_key_is_explained_as_the_cli_explains_it_with_its_stored_keys() {
    let server = TestServer::new();
    let key = server
        .get("/v1/keys/season-2026-spring/score-!1500")
        .await
        .expect(200);
    assert_eq!(key["path"], "/season-2026-spring/score-!1500");
    let kinds: Vec<&str> = key["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["namespace", "string", "namespace", "desc integer"]);
    assert_eq!(key["segments"][3]["text"], "!1500");
    assert_eq!(key["segments"][3]["bytes_hex"], "16fa23");
    assert_eq!(key["segments"][3]["meta_hex"], "1c");
    assert_eq!(
        key["encoded_hex"],
        "736561736f6e01323032362d737072696e670173636f72650116fa23003058281c"
    );
    assert_eq!(key["sizes"]["encoded"], 33);
    assert_eq!(key["sizes"]["metadata"], 4);
    // The README's `pathdb key encode /user-7/post-2 --split --format base64`.
    let post = server.get("/v1/keys/user-7/post-2").await.expect(200);
    assert_eq!(post["pk_base64"], "dXNlcgEIBwAgEg==");
    assert_eq!(post["sk_base64"], "cG9zdAEIAgAgEg==");
    // A group's ranges run to the revisions (`ff`), which follow every item.
    let group = server.get("/v1/keys/user-7").await.expect(200);
    assert_eq!(group["sk_base64"], "AA==");
    assert_eq!(group["subtree"]["start_base64"], "AA==");
    assert_eq!(group["subtree"]["end_base64"], "/w==");
    assert_eq!(group["descendants"]["start_base64"], "AQ==");
    server
        .get("/v1/keys/user-01")
        .await
        .expect_error(400, "invalid_path");
}

#[tokio::test]
async fn the_session_says_what_the_token_may_do() {
    let open = TestServer::new().get("/v1/session").await.expect(200);
    assert_eq!(
        open,
        serde_json::json!({"auth_required": false, "scope": "admin", "via": "open",
            "role": "admin", "rules": [{"path": "/**", "allow": ["read", "write", "admin"]}],
            "vars": {}, "admin": true})
    );
    let mut server = TestServer::with_tokens(&[("rw", Scope::ReadWrite), ("ro", Scope::Read)]);
    server
        .get("/v1/session")
        .await
        .expect_error(401, "unauthorized");
    server.use_token("ro");
    let read = server.get("/v1/session").await.expect(200);
    assert_eq!(
        read,
        serde_json::json!({"auth_required": true, "scope": "read", "via": "config",
            "role": "read", "rules": [{"path": "/**", "allow": ["read"]}], "vars": {},
            "admin": false})
    );
    server.use_token("rw");
    assert_eq!(
        server.get("/v1/session").await.expect(200)["scope"],
        "read-write"
    );
}
