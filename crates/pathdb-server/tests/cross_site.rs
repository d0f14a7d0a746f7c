//! Cross-site requests: bodies only under their real media type (so a browser must preflight
//! them), and requests from web pages of origins the server does not allow refused with 403,
//! with or without tokens; CORS preflights for allowed origins.

use crate::TestServer;
use axum::body::Body;
use axum::http::{Method, Request};
use pathdb_server::Scope;
use serde_json::json;

/// Requests a web page can send cross-origin without a preflight: each must write nothing.
#[tokio::test]
async fn bodies_need_their_media_type() {
    let server = TestServer::new();
    server.put_item("/u-1/p-1", "1").await;
    let before = server.export().await;
    let line = before.lines().next().expect("one line").to_owned();
    let transact = json!({"ops": [{"op": "put", "path": "/u-1/p-2", "value": 1}]}).to_string();
    let get_many = json!({"paths": ["/u-1/p-1"]}).to_string();
    let requests: [(Method, &str, String); 4] = [
        (Method::PUT, "/v1/items/u-1/p-2", "2".to_owned()),
        (Method::POST, "/v1/transact", transact.clone()),
        (Method::POST, "/v1/get", get_many.clone()),
        (
            Method::POST,
            "/v1/import",
            line.replace("/u-1/p-1", "/u-1/p-3"),
        ),
    ];
    let wrong = [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        Some("application/jsonx"),
        Some("not a media type"),
        None,
    ];
    for (method, uri, body) in &requests {
        for content_type in wrong {
            let mut request = Request::builder().method(method.clone()).uri(*uri);
            if let Some(ct) = content_type {
                request = request.header("content-type", ct);
            }
            let reply = server
                .send(request.body(Body::from(body.clone())).expect("request"))
                .await;
            let message = reply.expect_error(415, "unsupported_media_type");
            assert!(message.contains("Content-Type"), "{message}");
        }
    }
    // Import is JSON lines, not JSON.
    server
        .call(Method::POST, "/v1/import", &[], requests[3].2.clone())
        .await
        .expect_error(415, "unsupported_media_type");
    // The cross-origin form post from the report: refused, before anything else.
    let form = Request::builder()
        .method(Method::POST)
        .uri("/v1/import")
        .header("origin", "http://evil.example")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from(requests[3].2.clone()))
        .expect("request");
    let reply = server.send(form).await;
    assert_eq!(reply.status.as_u16(), 403, "{}", reply.text());
    assert_eq!(server.export().await, before, "nothing written");

    // Parameters are fine, and so is either JSON-lines name.
    let json_utf8 = [("content-type", "application/json; charset=utf-8")];
    server
        .call(Method::PUT, "/v1/items/u-1/p-2", &json_utf8, "2")
        .await
        .expect(201);
    server
        .call(Method::POST, "/v1/transact", &json_utf8, transact)
        .await
        .expect(200);
    for ct in ["application/x-ndjson", "application/jsonl; charset=utf-8"] {
        let reply = server
            .call(
                Method::POST,
                "/v1/import?partial=true",
                &[("content-type", ct)],
                line.clone(),
            )
            .await;
        // The second import of the same line finds it there already.
        let report = reply.expect(200);
        assert_eq!(
            report["imported"]
                .as_u64()
                .zip(report["unchanged"].as_u64())
                .map(|(a, b)| a + b),
            Some(1),
            "{report}"
        );
    }
}

fn from_origin(method: Method, uri: &str, origin: &str) -> axum::http::request::Builder {
    Request::builder()
        .method(method)
        .uri(uri)
        .header("host", "127.0.0.1:7070")
        .header("origin", origin)
}

#[tokio::test]
async fn foreign_origins_are_refused_with_or_without_tokens() {
    let open = TestServer::with_origins(&[], &["http://localhost:3000"]);
    let mut guarded =
        TestServer::with_origins(&[("s3cret", Scope::ReadWrite)], &["http://localhost:3000"]);
    guarded.use_token("s3cret");
    for server in [&open, &guarded] {
        server.put_item("/u-1", "1").await;
        let before = server.export().await;
        for origin in [
            "http://evil.example",
            "null",
            "http://localhost:3001",
            "https://localhost:3000",
            "http://127.0.0.1:7071",
        ] {
            for (method, uri, body) in [
                (Method::GET, "/v1/items/u-1", ""),
                (Method::PUT, "/v1/items/u-1", "2"),
                (Method::DELETE, "/v1/items/u-1", ""),
                (Method::OPTIONS, "/v1/items/u-1", ""),
                (Method::GET, "/healthz", ""),
            ] {
                let request = from_origin(method.clone(), uri, origin)
                    .header("content-type", "application/json")
                    .header("authorization", "Bearer s3cret")
                    .header("access-control-request-method", "PUT")
                    .body(Body::from(body))
                    .expect("request");
                let reply = server.send(request).await;
                reply.expect_error(403, "origin_not_allowed");
                assert!(
                    !reply.headers.contains_key("access-control-allow-origin"),
                    "{origin} {method} {uri}"
                );
            }
        }
        assert_eq!(server.export().await, before, "nothing written");

        // An allowed origin, and the server's own (the web console), are served.
        for origin in ["http://localhost:3000", "http://127.0.0.1:7070"] {
            let request = from_origin(Method::PUT, "/v1/items/u-1", origin)
                .header("content-type", "application/json")
                .header("authorization", "Bearer s3cret")
                .body(Body::from("3"))
                .expect("request");
            server.send(request).await.expect(200);
        }
    }
    // Tokens still apply to allowed origins.
    let request = from_origin(Method::GET, "/v1/items/u-1", "http://localhost:3000")
        .body(Body::empty())
        .expect("request");
    guarded
        .send(request)
        .await
        .expect_error(401, "unauthorized");
}

#[tokio::test]
async fn allowed_origins_get_cors_preflights_and_headers() {
    let server =
        TestServer::with_origins(&[("s3cret", Scope::ReadWrite)], &["http://localhost:3000"]);
    // A preflight carries no credentials: CorsLayer answers it before auth.
    let preflight = from_origin(Method::OPTIONS, "/v1/items/u-1", "http://localhost:3000")
        .header("access-control-request-method", "PUT")
        .header(
            "access-control-request-headers",
            "authorization, content-type, if-match",
        )
        .body(Body::empty())
        .expect("request");
    let reply = server.send(preflight).await;
    assert!(reply.status.is_success(), "{}", reply.status);
    assert_eq!(
        reply.headers["access-control-allow-origin"],
        "http://localhost:3000"
    );
    let methods = reply.headers["access-control-allow-methods"]
        .to_str()
        .expect("text");
    assert!(methods.contains("PUT"), "{methods}");
    let allowed = reply.headers["access-control-allow-headers"]
        .to_str()
        .expect("text")
        .to_ascii_lowercase();
    for name in ["authorization", "content-type", "if-match"] {
        assert!(allowed.contains(name), "{allowed}");
    }

    let request = from_origin(Method::PUT, "/v1/items/u-1", "http://localhost:3000")
        .header("content-type", "application/json")
        .header("authorization", "Bearer s3cret")
        .body(Body::from("1"))
        .expect("request");
    let reply = server.send(request).await;
    reply.expect(201);
    assert_eq!(
        reply.headers["access-control-allow-origin"],
        "http://localhost:3000"
    );
    let exposed = reply.headers["access-control-expose-headers"]
        .to_str()
        .expect("text")
        .to_ascii_lowercase();
    assert!(exposed.contains("etag"), "{exposed}");
}

#[tokio::test]
async fn requests_without_origin_are_unaffected() {
    let server = TestServer::with_origins(&[], &[]);
    let reply = Request::builder()
        .method(Method::PUT)
        .uri("/v1/items/u-1")
        .header("content-type", "application/json")
        .body(Body::from("1"))
        .expect("request");
    server.send(reply).await.expect(201);
}

/// DNS rebinding: a page at `evil.example:7070` whose name now resolves to 127.0.0.1 is
/// same-origin with the server under that name. Without tokens, only loopback `Host` names are
/// served; with tokens, the page has no token to send.
#[tokio::test]
async fn local_only_servers_answer_only_to_loopback_host_names() {
    let server = TestServer::new();
    server.put_item("/u-1", "1").await;
    let before = server.export().await;
    for (method, origin) in [
        (Method::GET, None),
        (Method::PUT, Some("http://evil.example:7070")),
    ] {
        let mut request = Request::builder()
            .method(method)
            .uri("/v1/items/u-1")
            .header("host", "evil.example:7070")
            .header("content-type", "application/json");
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        let reply = server
            .send(request.body(Body::from("2")).expect("request"))
            .await;
        reply.expect_error(403, "host_not_allowed");
    }
    assert_eq!(server.export().await, before, "nothing written");
    for host in ["localhost:7070", "127.0.0.1:7070", "[::1]:7070"] {
        let request = Request::builder()
            .uri("/v1/items/u-1")
            .header("host", host)
            .body(Body::empty())
            .expect("request");
        server.send(request).await.expect(200);
    }

    let mut guarded = TestServer::with_tokens(&[("s3cret", Scope::ReadWrite)]);
    guarded.use_token("s3cret");
    let request = Request::builder()
        .method(Method::PUT)
        .uri("/v1/items/u-1")
        .header("host", "db.internal:7070")
        .header("origin", "http://db.internal:7070")
        .header("content-type", "application/json")
        .header("authorization", "Bearer s3cret")
        .body(Body::from("1"))
        .expect("request");
    guarded.send(request).await.expect(201);
}

/// A request refused before its body was read says the connection closes, so a client does not
/// send its next request on a connection the server drops (found by the Python client).
#[tokio::test]
async fn a_refused_request_with_a_body_closes_its_connection() {
    let server = TestServer::with_tokens(&[("rw", Scope::ReadWrite)]);
    let reply = server
        .call(
            Method::PUT,
            "/v1/items/u-1/p-1",
            &[("content-length", "1")],
            "1",
        )
        .await;
    assert_eq!(reply.status.as_u16(), 401);
    assert_eq!(reply.headers["connection"], "close");
    // Without a body there is nothing left on the connection: it stays open.
    let reply = server.get("/v1/items/u-1/p-1").await;
    assert_eq!(reply.status.as_u16(), 401);
    assert!(reply.headers.get("connection").is_none());

    // Whatever refuses it: an extractor's bad query, a route that takes no body, a handler.
    let mut server = TestServer::with_tokens(&[("rw", Scope::ReadWrite)]);
    server.use_token("rw");
    let length = [("content-length", "1")];
    let reply = server
        .call(Method::PUT, "/v1/items/u-1/p-1?ttl_seconds=x", &length, "1")
        .await;
    assert_eq!(reply.status.as_u16(), 400);
    assert_eq!(reply.headers["connection"], "close");
    let reply = server.call(Method::PUT, "/v1/nowhere", &length, "1").await;
    assert_eq!(reply.status.as_u16(), 404);
    assert_eq!(reply.headers["connection"], "close");
    // A body read to its end leaves nothing: the connection stays open, whatever the answer.
    let reply = server
        .call(Method::PUT, "/v1/items/u-1/p-1", &length, "1")
        .await;
    assert_eq!(reply.status.as_u16(), 201);
    assert!(reply.headers.get("connection").is_none());
    let reply = server
        .call(
            Method::PUT,
            "/v1/items/u-1/p-1",
            &[("content-length", "1"), ("if-match", "\"9\"")],
            "1",
        )
        .await;
    assert_eq!(reply.status.as_u16(), 412, "{}", reply.text());
    assert!(reply.headers.get("connection").is_none());
}
