//! Auth, size limits, malformed paths and JSON, unknown routes: each refused in the one error
//! shape with the right status, and none of them changes the database.

use crate::TestServer;
use axum::body::Body;
use axum::http::Method;
use pathdb_server::Scope;
use serde_json::json;

const RW: &str = "rw-secret";
const RO: &str = "ro-secret";

fn auth(token: &str) -> String {
    format!("Bearer {token}")
}

#[tokio::test]
async fn tokens_and_scopes() {
    let mut server = TestServer::with_tokens(&[(RW, Scope::ReadWrite), (RO, Scope::Read)]);
    server.use_token(RW);
    server.put_item("/u-1/p-1", r#"{"n": 1}"#).await;
    let before = server.export().await;
    let get_many = json!({"paths": ["/u-1/p-1"]}).to_string();
    let transact = json!({"ops": [{"op": "put", "path": "/u-1/p-2", "value": 1}]}).to_string();
    let line = before.lines().next().expect("one line").to_owned();
    let writes: [(Method, &str, String); 5] = [
        (Method::PUT, "/v1/items/u-1/p-2", "1".to_owned()),
        (Method::DELETE, "/v1/items/u-1/p-1", String::new()),
        (Method::POST, "/v1/transact", transact),
        (Method::POST, "/v1/import", line),
        (Method::PUT, "/v1/items/u-1/p-1", "2".to_owned()),
    ];
    let reads: [(Method, &str, String); 6] = [
        (Method::GET, "/v1/items/u-1/p-1", String::new()),
        (Method::GET, "/v1/list/u-1", String::new()),
        (Method::GET, "/v1/history/u-1/p-1", String::new()),
        (Method::GET, "/v1/export", String::new()),
        (Method::POST, "/v1/get", get_many),
        (Method::GET, "/v1/items/u-1/p-1?version=1", String::new()),
    ];

    // No token, an unknown token, a malformed header: 401 for every /v1 route.
    let bad_credentials = [
        None,
        Some(auth("wrong")),
        Some(auth("")),
        Some(format!("Basic {RW}")),
        Some(RW.to_owned()),
        Some(format!("Bearer {RW}x")),
    ];
    for credentials in &bad_credentials {
        for (method, uri, body) in writes.iter().chain(&reads) {
            let mut headers = vec![("authorization", credentials.as_deref().unwrap_or(""))];
            if credentials.is_none() {
                headers.clear();
            }
            let mut request = axum::http::Request::builder()
                .method(method.clone())
                .uri(*uri)
                .header("content-type", "application/json");
            for (k, v) in &headers {
                request = request.header(*k, *v);
            }
            let reply = server
                .send(request.body(Body::from(body.clone())).expect("request"))
                .await;
            reply.expect_error(401, "unauthorized");
            assert_eq!(
                reply.headers["www-authenticate"], "Bearer",
                "401 names the scheme"
            );
        }
    }

    // A read token reads, and may not write.
    for (method, uri, body) in &reads {
        let reply = server
            .call(
                method.clone(),
                uri,
                &[("authorization", &auth(RO))],
                body.clone(),
            )
            .await;
        assert_eq!(reply.status, 200, "{method} {uri}: {}", reply.text());
    }
    for (method, uri, body) in &writes {
        server
            .call(
                method.clone(),
                uri,
                &[("authorization", &auth(RO))],
                body.clone(),
            )
            .await
            .expect_error(403, "forbidden");
    }
    assert_eq!(
        server.export().await,
        before,
        "refused writes changed nothing"
    );

    // The scheme is case-insensitive (RFC 9110); the read-write token writes.
    let reply = server
        .call(
            Method::PUT,
            "/v1/items/u-1/p-2",
            &[("authorization", &format!("bearer {RW}"))],
            "1",
        )
        .await;
    reply.expect(201);

    // The OpenAPI document and the health check need no token; unknown routes are 404s.
    let open = TestServer::with_tokens(&[(RW, Scope::ReadWrite)]);
    let doc = open.get("/openapi.json").await.expect(200);
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(
        open.get("/healthz").await.expect(200),
        json!({"status": "ok"})
    );
}

#[tokio::test]
async fn oversize_requests_are_refused() {
    let server = TestServer::new();
    server.put_item("/u-1", "1").await;
    let before = server.export().await;

    // Past the body limit: refused while reading the body.
    let huge = format!("\"{}\"", "x".repeat(pathdb_server::MAX_BODY_BYTES));
    server
        .put("/v1/items/u-2", &huge)
        .await
        .expect_error(413, "too_large");
    let huge_get = json!({"paths": [huge]}).to_string();
    server
        .call(Method::POST, "/v1/get", &[], huge_get)
        .await
        .expect_error(413, "too_large");
    // Within the body limit but past the item limit (400 KB): the store refuses it.
    let big = format!("\"{}\"", "x".repeat(400_000));
    let message = server
        .put("/v1/items/u-2", &big)
        .await
        .expect_error(413, "too_large");
    assert!(message.contains("400000"), "{message}");
    // A key past DynamoDB's sort key limit.
    let long_key = format!("/v1/items/u-1/s-{}", "k".repeat(1100));
    server
        .put(&long_key, "1")
        .await
        .expect_error(413, "too_large");
    server.get(&long_key).await.expect_error(413, "too_large");
    // Headers past 16 KiB.
    let header = "h".repeat(pathdb_server::MAX_HEADER_BYTES);
    server
        .call(Method::PUT, "/v1/items/u-3", &[("x-padding", &header)], "1")
        .await
        .expect_error(431, "too_large");
    server
        .call(
            Method::GET,
            "/healthz",
            &[("x-padding", &header)],
            Body::empty(),
        )
        .await
        .expect_error(431, "too_large");

    assert_eq!(server.export().await, before);
}

#[tokio::test]
async fn malformed_paths_are_invalid_path() {
    let server = TestServer::new();
    server.put_item("/u-1", "1").await;
    let before = server.export().await;
    let bad_paths = [
        "u-01",                   // leading zero
        "user",                   // a group needs an id
        "u-1//p-1",               // empty element
        "u-1/p-",                 // empty id
        "u-1/p/c-1",              // only the last element may lack an id
        "u-1/p-1%25",             // dangling key-path escape
        "u-1/p-a%00b",            // control character
        "u-%FF",                  // not UTF-8
        "1-1",                    // a namespace starts with a letter
        "u-1/p-~!!",              // not base64url
        "u-1/p-!",                // empty descending id
        "u-18446744073709551616", // integer out of range
    ];
    for path in bad_paths {
        for (method, route) in [
            (Method::GET, "items"),
            (Method::PUT, "items"),
            (Method::DELETE, "items"),
            (Method::GET, "list"),
            (Method::GET, "history"),
        ] {
            let uri = format!("/v1/{route}/{path}");
            let message = server
                .call(method.clone(), &uri, &[], "1")
                .await
                .expect_error(400, "invalid_path");
            assert!(!message.is_empty(), "{method} {uri}");
        }
    }
    for bound in ["gt", "gte", "lt", "lte"] {
        server
            .get(&format!("/v1/list/u-1?{bound}=u-1"))
            .await
            .expect_error(400, "invalid_path");
    }
    server
        .post("/v1/get", &json!({"paths": ["u-1"]}))
        .await
        .expect_error(400, "invalid_path");
    let message = server
        .post("/v1/get", &json!({"paths": ["/u-1/p-01"]}))
        .await
        .expect_error(400, "invalid_path");
    assert!(message.contains("leading zeros"), "{message}");
    assert_eq!(server.export().await, before);
}

#[tokio::test]
async fn malformed_json_is_invalid_json() {
    let server = TestServer::new();
    server.put_item("/u-1", "1").await;
    let before = server.export().await;
    for body in [
        "{not json",
        "",
        "{\"a\": 1} trailing",
        "[1,]",
        "'single'",
        "NaN",
        "{\"a\":}",
    ] {
        let message = server
            .put("/v1/items/u-2", body)
            .await
            .expect_error(400, "invalid_json");
        assert!(!message.is_empty());
        for route in ["/v1/get", "/v1/transact"] {
            server
                .call(Method::POST, route, &[], body.to_owned())
                .await
                .expect_error(400, "invalid_json");
        }
    }
    server
        .call(Method::PUT, "/v1/items/u-2", &[], vec![b'"', 0xff, b'"'])
        .await
        .expect_error(400, "invalid_json");
    // Valid JSON of the wrong shape (not declared as JSON: see cross_site).
    for body in [
        json!({"paths": "/u-1"}),
        json!({"paths": [1]}),
        json!(null),
        json!({}),
    ] {
        server
            .post("/v1/get", &body)
            .await
            .expect_error(400, "invalid_json");
    }
    server
        .call(
            Method::POST,
            "/v1/get",
            &[("content-type", "text/plain")],
            r#"{"paths": []}"#,
        )
        .await
        .expect_error(415, "unsupported_media_type");
    for query in ["history=yes", "ttl_seconds=-1", "ttl_seconds=x"] {
        server
            .put(&format!("/v1/items/u-2?{query}"), "1")
            .await
            .expect_error(400, "invalid_request");
    }
    server
        .get("/v1/items/u-1?version=latest")
        .await
        .expect_error(400, "invalid_request");
    assert_eq!(server.export().await, before);
}

/// A request that must be refused: method, route, headers, body, and what its message names.
type Refused<'a> = (Method, &'a str, &'a [(&'a str, &'a str)], &'a str, &'a str);

/// I-JSON (RFC 7493): a member name twice, anywhere in a body, or a lone surrogate escape is a
/// 400 that names it, on every route that takes JSON, and writes nothing.
#[tokio::test]
async fn duplicate_names_and_lone_surrogates_are_refused() {
    let server = TestServer::new();
    server.put_item("/u-1", "1").await;
    let before = server.export().await;
    let duplicates: [Refused; 7] = [
        (
            Method::PUT,
            "/v1/items/u-2",
            &[],
            r#"{"a":1,"a":2}"#,
            r#""a""#,
        ),
        (
            Method::PUT,
            "/v1/items/u-2",
            &[],
            r#"{"x":[{"k":1,"k":1}]}"#,
            "/x/0",
        ),
        (
            Method::POST,
            "/v1/transact",
            &[],
            r#"{"ops":[{"op":"put","path":"/u-2","value":{"b":1,"b":2}}]}"#,
            r#""b""#,
        ),
        (
            Method::POST,
            "/v1/transact",
            &[],
            r#"{"ops":[],"ops":[{"op":"delete","path":"/u-1"}]}"#,
            r#""ops""#,
        ),
        (
            Method::POST,
            "/v1/get",
            &[],
            r#"{"paths":["/u-1"],"paths":[]}"#,
            r#""paths""#,
        ),
        (
            Method::PATCH,
            "/v1/items/u-1",
            &[("content-type", "application/merge-patch+json")],
            r#"{"n":1,"n":2}"#,
            r#""n""#,
        ),
        (
            Method::POST,
            "/v1/import",
            &[("content-type", "application/x-ndjson")],
            r#"{"path":"/u-3","value":{"c":1,"c":2}}"#,
            r#""c""#,
        ),
    ];
    for (method, uri, headers, body, names) in duplicates {
        let message = server
            .call(method.clone(), uri, headers, body.to_owned())
            .await
            .expect_error(
                400,
                if uri == "/v1/import" {
                    "invalid_request"
                } else {
                    "invalid_json"
                },
            );
        assert!(
            message.contains("duplicate member name") && message.contains(names),
            "{method} {uri} {body}: {message}"
        );
    }
    for body in [r#""\ud800""#, r#"{"a":"x\udc00"}"#, r#"["\ud83d"]"#] {
        let message = server
            .put("/v1/items/u-2", body)
            .await
            .expect_error(400, "invalid_json");
        assert!(message.contains("lone surrogate"), "{body}: {message}");
        let tx = format!(r#"{{"ops":[{{"op":"put","path":"/u-2","value":{body}}}]}}"#);
        let message = server
            .call(Method::POST, "/v1/transact", &[], tx)
            .await
            .expect_error(400, "invalid_json");
        assert!(message.contains("lone surrogate"), "{body}: {message}");
    }
    assert_eq!(server.export().await, before);
    // A surrogate pair is one character, and the same name in sibling objects is fine.
    server
        .put_item(
            "/u-4",
            r#"{"e":"\ud83d\ude00","a":{"a":1},"b":[{"a":1},{"a":2}]}"#,
        )
        .await;
}

#[tokio::test]
async fn unknown_routes_and_methods_use_the_error_shape() {
    let server = TestServer::new();
    server.put_item("/u-1", "1").await;
    let before = server.export().await;
    // `/` redirects to the console (console.rs); without it, it is 404 too.
    for (method, uri) in [
        (Method::GET, "/nope"),
        (Method::GET, "/v1"),
        (Method::GET, "/v1/items"),
        (Method::GET, "/v1/items/"),
        (Method::GET, "/v2/items/u-1"),
        (Method::DELETE, "/v1/list"),
    ] {
        server
            .call(method, uri, &[], Body::empty())
            .await
            .expect_error(404, "not_found");
    }
    for (method, uri) in [
        (Method::PATCH, "/v1/list/u-1"),
        (Method::POST, "/v1/changes/u-1"),
        (Method::GET, "/v1/transact"),
        (Method::PUT, "/v1/get"),
        (Method::DELETE, "/v1/export"),
        (Method::POST, "/healthz"),
    ] {
        let reply = server.call(method.clone(), uri, &[], "1").await;
        reply.expect_error(405, "method_not_allowed");
        assert!(reply.headers.contains_key("allow"), "{method} {uri}");
    }
    assert_eq!(server.export().await, before);
}

/// The document states what the handlers enforce, so generated clients and fuzzers send
/// requests the server accepts.
#[tokio::test]
async fn openapi_document_states_the_limits() {
    let server = TestServer::new();
    let doc = server.get("/openapi.json").await.expect(200);
    let schemas = &doc["components"]["schemas"];
    for variant in ["TxOpPut", "TxOpDelete", "TxOpCheck"] {
        assert_eq!(
            schemas[variant]["additionalProperties"], false,
            "{}",
            schemas[variant]
        );
    }
    assert_eq!(schemas["GetManyIn"]["additionalProperties"], false);
    assert_eq!(schemas["GetManyIn"]["properties"]["paths"]["maxItems"], 100);
    assert_eq!(schemas["TransactIn"]["properties"]["ops"]["minItems"], 1);
    assert_eq!(schemas["TransactIn"]["properties"]["ops"]["maxItems"], 100);
    let list = doc["paths"]["/v1/list/{prefix}"]["get"]["parameters"]
        .as_array()
        .expect("parameters");
    let limit = list.iter().find(|p| p["name"] == "limit").expect("limit");
    assert_eq!(
        (&limit["schema"]["minimum"], &limit["schema"]["maximum"]),
        (&json!(1), &json!(1000))
    );
    // The PUT documents 412 and the syntax of its conditions.
    let put = &doc["paths"]["/v1/items/{path}"]["put"];
    assert!(put["responses"]["412"].is_object());
    let if_match = put["parameters"]
        .as_array()
        .expect("parameters")
        .iter()
        .find(|p| p["name"] == "If-Match")
        .expect("If-Match");
    assert!(if_match["schema"]["pattern"].is_string());
}

/// An unknown query parameter is a 400 naming it on every route, those with options (a typo
/// must not look applied: `/v1/groups?prefx=user` would list every group) and those without.
#[tokio::test]
async fn unknown_query_parameters_are_refused_by_name() {
    let server = TestServer::new();
    server.put_item("/u-1/p-1", "1").await;
    let before = server.export().await;
    let transact = json!({"ops": [{"op": "put", "path": "/u-1/p-2", "value": 1}]}).to_string();
    let subtree = json!({"from": "/u-1", "to": "/u-2"}).to_string();
    let get_many = json!({"paths": ["/u-1/p-1"]}).to_string();
    let requests: [(Method, &str, String); 19] = [
        (Method::GET, "/v1/groups?prefx=user", String::new()),
        (Method::GET, "/v1/items/u-1/p-1?versoin=1", String::new()),
        (
            Method::PUT,
            "/v1/items/u-1/p-1?histroy=true",
            "2".to_owned(),
        ),
        (
            Method::POST,
            "/v1/items/u-1/p?id=uuid&ttl=5",
            "2".to_owned(),
        ),
        (
            Method::DELETE,
            "/v1/items/u-1/p-1?recurse=true",
            String::new(),
        ),
        (Method::GET, "/v1/list/u-1?childern=true", String::new()),
        (Method::GET, "/v1/history/u-1/p-1?max=3", String::new()),
        (Method::GET, "/v1/changes/u-1?from=x", String::new()),
        (Method::POST, "/v1/import?mode=skip", String::new()),
        (Method::GET, "/v1/export?format=csv", String::new()),
        (Method::POST, "/v1/transact?dry_run=true", transact),
        (Method::POST, "/v1/move?force=1", subtree.clone()),
        (Method::POST, "/v1/copy?force", subtree),
        (Method::POST, "/v1/get?field=a", get_many),
        (Method::GET, "/v1/keys/u-1?format=hex", String::new()),
        (Method::GET, "/v1/session?x=1", String::new()),
        (Method::GET, "/healthz?x=1", String::new()),
        (Method::GET, "/readyz?x=1", String::new()),
        (Method::GET, "/metrics?x=1", String::new()),
    ];
    for (method, uri, body) in requests {
        let content_type = if uri.starts_with("/v1/import") {
            "application/x-ndjson"
        } else {
            "application/json"
        };
        let reply = server
            .call(method.clone(), uri, &[("content-type", content_type)], body)
            .await;
        let message = reply.expect_error(400, "invalid_request");
        // The unknown parameter is the query's last.
        let last = uri.rsplit(['?', '&']).next().expect("a query");
        let name = last.split_once('=').map_or(last, |(name, _)| name);
        assert!(
            message.starts_with(&format!("unknown query parameter `{name}`")),
            "{method} {uri}: {message}"
        );
    }
    assert_eq!(server.export().await, before, "nothing was written");
    // Known parameters, and an empty query, still work.
    server.get("/v1/groups?limit=5").await.expect(200);
    server.get("/v1/session?").await.expect(200);
}
