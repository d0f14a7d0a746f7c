use super::*;
use crate::auth::Scope;
use crate::gate::{self, Check};
use crate::{AppState, Auth, router};
use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use pathdb_store::Store;
use pathdb_store::backend::FileOptions;
use std::collections::HashMap;
use tower::ServiceExt;

/// A store with one item (`/user-7/post-1`, version 2) and an app over it, with tokens (a
/// reader and a writer). Also the puts' test (put/test.rs).
pub(super) fn app(dir: &tempfile::TempDir) -> crate::App<pathdb_store::backend::FileBackend> {
    let tokens = HashMap::from([
        ("reader".to_owned(), Scope::Read),
        ("writer".to_owned(), Scope::ReadWrite),
    ]);
    app_with(dir, Auth::new(tokens))
}

/// [`app`] with `auth`.
pub(super) fn app_with(
    dir: &tempfile::TempDir,
    auth: Auth,
) -> crate::App<pathdb_store::backend::FileBackend> {
    let store = Store::open(
        dir.path().join("db"),
        FileOptions::default(),
        Default::default(),
    )
    .unwrap();
    let path: pathdb_keys::KeyPath = "/user-7/post-1".parse().unwrap();
    for n in [1, 2] {
        let value =
            pathdb_store::Json::parse(&format!(r#"{{"n":{n},"text":"a \"quoted\" line"}}"#));
        store
            .put(&path, value.unwrap(), Default::default())
            .unwrap();
    }
    let backend = store.backend();
    assert!(backend.fast_point_reads(), "gets are answered here");
    assert!(backend.queues_writes(), "puts are answered here");
    router(AppState::new(store), auth)
}

/// Status, headers but the request id and the date (which differ per request) and the
/// `Content-Length` (the router adds it, hyper adds it on the wire to an answer without it),
/// and body.
async fn answer(
    app: &crate::App<pathdb_store::backend::FileBackend>,
    uri: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, Vec<(String, String)>, String) {
    let (status, headers, body) = answer_to(app, "GET", uri, headers, b"").await;
    (status, headers, String::from_utf8(body).unwrap())
}

/// What `app` answers to `method` `uri` with `headers` and `body`, as [`answer`] keeps it (the
/// body's bytes). Also the puts' test (put/test.rs).
pub(super) async fn answer_to(
    app: &crate::App<pathdb_store::backend::FileBackend>,
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (StatusCode, Vec<(String, String)>, Vec<u8>) {
    let mut request = Request::builder()
        .method(method)
        .uri(uri)
        .header("host", "127.0.0.1:7070");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(Body::from(body.to_vec())).unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let kept = |headers: &HeaderMap| {
        headers
            .iter()
            .filter(|(name, _)| {
                !["x-request-id", "date", "content-length"].contains(&name.as_str())
            })
            .map(|(name, value)| (name.to_string(), value.to_str().unwrap().to_owned()))
            .collect::<Vec<_>>()
    };
    let headers = kept(response.headers());
    let body = axum::body::to_bytes(response.into_body(), 1 << 21)
        .await
        .unwrap();
    (status, headers, body.to_vec())
}

/// A get: the path after `/v1/items/`, request headers, the status expected.
type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], u16);

/// Each case's get, answered here, and the same path with one character percent-encoded (`%2D`
/// for `-`), which goes to the router: the two answers are the same, with the status expected.
async fn answered_alike(app: &crate::App<pathdb_store::backend::FileBackend>, cases: &[Case<'_>]) {
    for (path, headers, status) in cases {
        let here = answer(app, &format!("/v1/items/{path}"), headers).await;
        let routed = path.replacen('-', "%2D", 1);
        let routed = answer(app, &format!("/v1/items/{routed}"), headers).await;
        assert_eq!(here, routed, "GET {path} with {headers:?}");
        assert_eq!(here.0.as_u16(), *status, "GET {path}: {}", here.2);
    }
}

/// Every get this module answers is answered as the router's route answers it: the same path
/// with one character percent-encoded (`%2D` for `-`) goes to the router, and the two answers
/// are compared whole, for items found and not, bad paths, `If-None-Match`, and every check a
/// request can fail: tokens (missing, unknown, another scheme) and origins.
#[tokio::test]
async fn gets_answered_here_are_answered_as_the_route_answers_them() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(&dir);
    let reader = ("authorization", "Bearer reader");
    let foreign = ("origin", "https://elsewhere.example");
    let own = ("origin", "http://127.0.0.1:7070");
    let cases: &[Case] = &[
        ("user-7/post-1", &[reader], 200),
        ("user-7/post-1", &[("authorization", "Bearer writer")], 200),
        ("user-7/post-2", &[reader], 404),
        ("user-7/post-1", &[reader, ("if-none-match", "\"2\"")], 304),
        (
            "user-7/post-1",
            &[reader, ("if-none-match", "\"1\", W/\"2\"")],
            304,
        ),
        ("user-7/post-1", &[reader, ("if-none-match", "\"1\"")], 200),
        (
            "user-7/post-1",
            &[reader, ("if-none-match", "not a tag")],
            400,
        ),
        ("user-7/post-1", &[], 401),
        ("user-7/post-1", &[("authorization", "Bearer nobody")], 401),
        (
            "user-7/post-1",
            &[("authorization", "bearer  reader ")],
            200,
        ),
        ("user-7/post-1", &[("authorization", "Basic reader")], 401),
        ("user-7/post-1", &[("authorization", "Bearer")], 401),
        ("user-7/post-2", &[], 401),
        ("user-7/-1", &[], 401),
        ("user-7/post-1", &[reader, foreign], 403),
        ("user-7/post-1", &[foreign], 403),
        ("user-7/post-1", &[reader, own], 200),
        ("user-7/post-1", &[own], 401),
        ("user-7/-1", &[reader], 400),
        ("user-7//post-1", &[reader], 400),
        ("/user-7/post-1", &[reader], 200),
    ];
    answered_alike(&app, cases).await;
}

/// Without tokens (local-only mode) too: the token check lets everything through, and the Host
/// must be loopback.
#[tokio::test]
async fn gets_answered_here_without_tokens_are_answered_as_the_route_answers_them() {
    let dir = tempfile::tempdir().unwrap();
    let app = app_with(&dir, Auth::default());
    let cases: &[Case] = &[
        ("user-7/post-1", &[], 200),
        ("user-7/post-1", &[("authorization", "Bearer nobody")], 200),
        ("user-7/post-2", &[], 404),
        (
            "user-7/post-1",
            &[("origin", "https://elsewhere.example")],
            403,
        ),
    ];
    answered_alike(&app, cases).await;
}

/// The gets answered here are counted in `/metrics` under the route's template, as the router's
/// routes are: their checks are the API's, told the template ([`gate::unrouted`]).
#[test]
fn gets_answered_here_are_counted_under_the_routes_template() {
    let mut request = Request::get("/v1/items/user-7/post-1")
        .body(Body::empty())
        .unwrap();
    let (track, _) = gate::unrouted(&gate::api_checks(Auth::default()), ITEMS_ROUTE);
    let ((_, method, route), refusal) = track.before(&mut request);
    assert!(refusal.is_none());
    assert_eq!((method.as_str(), route.as_str()), ("GET", ITEMS_ROUTE));
}

/// The item's JSON is what serde writes for `ItemOut`, an item that expires too.
#[test]
fn an_item_is_written_as_serde_writes_it() {
    let at = pathdb_store::Timestamp::now();
    let paths = [
        "/user-7/post-1",
        "/tag-a\"b\\c/note-!12",
        "/file-~AAE/x-é%/y",
    ];
    let cases = paths
        .iter()
        .flat_map(|p| [(p, None, 0), (p, Some(at), 0), (p, None, 3)]);
    for (path, expires_at, schema_version) in cases {
        let path: pathdb_keys::KeyPath = path.parse().unwrap();
        let item = pathdb_store::Item {
            path: path.clone(),
            version: 12,
            created_at: at,
            modified_at: at,
            expires_at,
            value: pathdb_store::Json::parse(r#"{"a": [1, "\u00e9\"x"], "b": null}"#).unwrap(),
            alias: None,
            schema_version,
        };
        let serde = serde_json::to_vec(&crate::wire::ItemOut::from(item.clone())).unwrap();
        assert_eq!(
            String::from_utf8(crate::wire::item_json(&item)).unwrap(),
            String::from_utf8(serde).unwrap()
        );
    }
}

/// What this module leaves to the router: other methods, queries, encoded paths, an empty rest.
#[test]
fn only_plain_gets_of_an_item_are_answered_here() {
    let request = |method: &str, uri: &str| {
        Request::builder()
            .method(method)
            .uri(uri)
            .body(Body::empty())
            .unwrap()
    };
    let here = |method: &str, uri: &str| plain(&request(method, uri));
    assert_eq!(here("GET", "/v1/items/a-1/b-2"), Some(Plain::Get));
    assert_eq!(here("GET", "/v1/items/a-1?"), Some(Plain::Get));
    assert_eq!(here("PUT", "/v1/items/a-1"), Some(Plain::Put));
    assert_eq!(here("HEAD", "/v1/items/a-1"), None);
    assert_eq!(here("POST", "/v1/items/a-1"), None);
    assert_eq!(here("PATCH", "/v1/items/a-1"), None);
    assert_eq!(here("DELETE", "/v1/items/a-1"), None);
    assert_eq!(here("GET", "/v1/items/a-1?version=1"), None);
    assert_eq!(here("GET", "/v1/items/a%2D1"), None);
    assert_eq!(here("GET", "/v1/items/"), None);
    assert_eq!(here("GET", "/v1/list/a-1"), None);
}

/// A request with an issued token: method, path, the token's role, headers, body, the status
/// expected.
type TokenCase<'a> = (
    &'a str,
    &'a str,
    &'a str,
    &'a [(&'a str, &'a str)],
    &'a [u8],
    u16,
);

/// Issued tokens (found in the store by the token check itself on this backend, whose reads
/// never block) and their roles' rules, on gets and puts: each case runs twice with two fresh
/// tokens of the same role, once here and once (with a `-` of the path percent-encoded) through
/// the router, and the answers are compared whole. Only requests that change nothing, so that
/// both find the store alike.
#[tokio::test]
async fn issued_tokens_are_resolved_as_the_route_resolves_them() {
    use pathdb_store::{NewToken, Op, Role, Rule};
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(
        dir.path().join("db"),
        FileOptions::default(),
        Default::default(),
    )
    .unwrap();
    let role = |allow: Vec<Op>| Role {
        rules: vec![Rule {
            path: "/user-{user}/**".into(),
            allow,
        }],
        description: None,
    };
    store
        .put_role("owner", &role(vec![Op::Read, Op::Write]), None)
        .unwrap();
    store
        .put_role("viewer", &role(vec![Op::Read]), None)
        .unwrap();
    let tokens = store.clone();
    // A token of `role`, or (`revoked`) an owner's revoked before its first use.
    let issue = move |role: &str| {
        let revoked = role == "revoked";
        let token = NewToken {
            role: if revoked { "owner" } else { role }.into(),
            vars: serde_json::json!({"user": 7}).as_object().unwrap().clone(),
            expires_at: None,
            description: None,
        };
        let (info, secret) = tokens.create_token(&token).unwrap();
        if revoked {
            assert!(tokens.revoke_token(&info.id).unwrap());
        }
        format!("Bearer {secret}")
    };
    // A configured token turns tokens on (without any, the server is local-only and open).
    let configured = HashMap::from([("writer".to_owned(), Scope::ReadWrite)]);
    let app = router(AppState::new(store), Auth::new(configured));
    let json = ("content-type", "application/json");
    let cases: &[TokenCase] = &[
        ("PUT", "user-8/post-1", "owner", &[json], b"1", 403),
        ("PUT", "user-7/-1", "owner", &[json], b"1", 400),
        ("PUT", "user-7/post-1", "owner", &[], b"1", 415),
        ("PUT", "user-7/post-1", "owner", &[json], b"{", 400),
        ("PUT", "user-7/post-1", "viewer", &[json], b"1", 403),
        ("PUT", "user-7/-1", "viewer", &[], b"{", 403),
        ("PUT", "user-7/-1", "revoked", &[], b"{", 401),
        ("GET", "user-7/post-1", "viewer", &[], b"", 404),
        ("GET", "user-8/post-1", "viewer", &[], b"", 403),
        ("GET", "user-7/-1", "viewer", &[], b"", 400),
        ("GET", "user-7/-1", "revoked", &[], b"", 401),
    ];
    for (method, path, role, headers, body, status) in cases {
        let mut answers = Vec::new();
        for uri in [path.to_string(), path.replacen('-', "%2D", 1)] {
            let token = issue(role);
            let mut all = headers.to_vec();
            all.push(("authorization", &token));
            let uri = format!("/v1/items/{uri}");
            answers.push(answer_to(&app, method, &uri, &all, body).await);
        }
        assert_eq!(answers[0], answers[1], "{method} {path} as {role}");
        assert_eq!(answers[0].0.as_u16(), *status, "{method} {path} as {role}");
    }
}
