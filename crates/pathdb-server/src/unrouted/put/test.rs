use crate::Auth;
use crate::unrouted::test::{answer_to, app as app_with_tokens, app_with};
use axum::body::Body;
use axum::extract::Request;
use axum::http::StatusCode;
use pathdb_store::backend::FileBackend;

type App = crate::App<FileBackend>;

/// The gets' test app (a fresh store holding `/user-7/post-1` at version 2), with its tokens, or
/// without any (local-only mode).
fn app(dir: &tempfile::TempDir, tokens: bool) -> App {
    if tokens {
        app_with_tokens(dir)
    } else {
        app_with(dir, Auth::default())
    }
}

/// Status, headers but those that differ per request (see `answer_to`), and the body, with an
/// item's times (which differ between two stores) taken out.
type Answer = (StatusCode, Vec<(String, String)>, String);

async fn answer(
    app: &App,
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Answer {
    let (status, headers, body) = answer_to(app, method, uri, headers, body).await;
    let body = match serde_json::from_slice::<serde_json::Value>(&body) {
        Ok(serde_json::Value::Object(mut item)) => {
            item.remove("created_at");
            item.remove("modified_at");
            serde_json::Value::Object(item).to_string()
        }
        _ => String::from_utf8_lossy(&body).into_owned(),
    };
    (status, headers, body)
}

/// A put: the path after `/v1/items/`, request headers, body, the status expected.
type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a [u8], u16);

/// Each case's put goes to `here` (answered before the router) and, with one character of the
/// path percent-encoded (`%2D` for `-`), to `routed`, over a store in the same state: the two
/// answers are the same, with the status expected. Then every path the cases name reads back
/// the same from both stores.
async fn answered_alike(here: &App, routed: &App, cases: &[Case<'_>]) {
    for (path, headers, body, status) in cases {
        assert!(
            path.contains('-'),
            "{path}: the routed request encodes a '-'"
        );
        let uri = format!("/v1/items/{path}");
        let request = Request::put(&uri).body(Body::empty()).unwrap();
        assert_eq!(
            super::super::plain(&request),
            Some(super::super::Plain::Put)
        );
        let a = answer(here, "PUT", &uri, headers, body).await;
        let encoded = format!("/v1/items/{}", path.replacen('-', "%2D", 1));
        let b = answer(routed, "PUT", &encoded, headers, body).await;
        assert_eq!(a, b, "PUT {path} with {headers:?}");
        assert_eq!(
            a.0.as_u16(),
            *status,
            "PUT {path} with {headers:?}: {}",
            a.2
        );
    }
    let writer = [("authorization", "Bearer writer")];
    for (path, _, _, _) in cases {
        let uri = format!("/v1/items/{path}");
        let a = answer(here, "GET", &uri, &writer, b"").await;
        let b = answer(routed, "GET", &uri, &writer, b"").await;
        assert_eq!(a, b, "GET {path} after the puts");
    }
}

/// Every put this module answers is answered as the router's route answers it, and leaves the
/// store as the route leaves it: new and replaced items, every value type, each check a request
/// can fail in the route's order (the token and its scope, the media type, the path, the
/// preconditions, `Schema-Version`, the body's size and JSON), origins.
#[tokio::test]
async fn puts_answered_here_are_answered_as_the_route_answers_them() {
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (here, routed) = (app(&one, true), app(&two, true));
    let writer = ("authorization", "Bearer writer");
    let reader = ("authorization", "Bearer reader");
    let json = ("content-type", "application/json");
    let large = vec![b' '; crate::MAX_BODY_BYTES + 1];
    let cases: &[Case] = &[
        ("user-7/post-2", &[writer, json], br#"{"n":1}"#, 201),
        ("user-7/post-2", &[writer, json], br#"{"n":2}"#, 200),
        ("user-7/post-1", &[writer, json], b"[1, 2.5, null]", 200),
        ("user-7/post-3", &[writer, json], br#""text""#, 201),
        ("user-7/post-4", &[writer, json], b"null", 201),
        ("user-7", &[writer, json], b"true", 201),
        (
            "user-7/post-2",
            &[writer, ("content-type", "application/json; charset=utf-8")],
            b"{}",
            200,
        ),
        ("user-7/post-2", &[writer], b"{}", 415),
        (
            "user-7/post-2",
            &[writer, ("content-type", "text/plain")],
            b"{}",
            415,
        ),
        ("user-7/post-2", &[writer, json], b"{", 400),
        ("user-7/post-2", &[writer, json], b"", 400),
        ("user-7/post-2", &[writer, json], b"\xff\xfe", 400),
        ("user-7/post-2", &[writer, json], br#"{"a":1,"a":2}"#, 400),
        ("user-7/post-2", &[writer, json], &large, 413),
        (
            "user-7/post-2",
            &[writer, json, ("if-match", "\"3\"")],
            b"1",
            200,
        ),
        (
            "user-7/post-2",
            &[writer, json, ("if-match", "\"3\"")],
            b"2",
            412,
        ),
        (
            "user-7/post-2",
            &[writer, json, ("if-match", "\"1\", \"4\"")],
            b"3",
            200,
        ),
        (
            "user-7/post-2",
            &[writer, json, ("if-match", "W/\"5\"")],
            b"4",
            412,
        ),
        (
            "user-7/post-2",
            &[writer, json, ("if-match", "*")],
            b"5",
            200,
        ),
        (
            "user-7/post-9",
            &[writer, json, ("if-match", "*")],
            b"5",
            412,
        ),
        (
            "user-7/post-2",
            &[writer, json, ("if-none-match", "*")],
            b"6",
            412,
        ),
        (
            "user-7/post-8",
            &[writer, json, ("if-none-match", "*")],
            b"6",
            201,
        ),
        (
            "user-7/post-2",
            &[writer, json, ("if-match", "not a tag")],
            b"7",
            400,
        ),
        (
            "user-7/post-2",
            &[writer, json, ("if-none-match", "\"3\"")],
            b"7",
            400,
        ),
        ("user-7/-1", &[writer, json], b"1", 400),
        ("user-7//post-1", &[writer, json], b"1", 400),
        ("/user-7/post-5", &[writer, json], b"1", 201),
        (
            "user-7/post-5",
            &[writer, json, ("schema-version", "nope")],
            b"1",
            400,
        ),
        (
            "user-7/post-5",
            &[writer, json, ("schema-version", "post=1")],
            b"1",
            400,
        ),
        ("user-7/post-2", &[json], b"1", 401),
        (
            "user-7/post-2",
            &[("authorization", "Bearer nobody"), json],
            b"1",
            401,
        ),
        (
            "user-7/post-2",
            &[("authorization", "Basic writer"), json],
            b"1",
            401,
        ),
        ("user-7/post-2", &[reader, json], b"1", 403),
        ("user-7/post-2", &[reader], b"{", 403),
        ("user-7/-1", &[reader, json], b"1", 403),
        ("user-7/post-2", &[], b"{", 401),
        (
            "user-7/post-2",
            &[writer, json, ("origin", "https://elsewhere.example")],
            b"1",
            403,
        ),
        (
            "user-7/post-2",
            &[writer, json, ("origin", "http://127.0.0.1:7070")],
            b"1",
            200,
        ),
    ];
    answered_alike(&here, &routed, cases).await;
}

/// Without tokens (local-only mode) too: the token check lets everything through.
#[tokio::test]
async fn puts_answered_here_without_tokens_are_answered_as_the_route_answers_them() {
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (here, routed) = (app(&one, false), app(&two, false));
    let json = ("content-type", "application/json");
    let cases: &[Case] = &[
        ("user-7/post-2", &[json], br#"{"n":1}"#, 201),
        (
            "user-7/post-1",
            &[("authorization", "Bearer nobody"), json],
            b"1",
            200,
        ),
        ("user-7/post-2", &[], b"1", 415),
        ("user-7/post-2", &[json, ("if-match", "\"9\"")], b"1", 412),
    ];
    answered_alike(&here, &routed, cases).await;
}

/// What this module leaves to the router among puts: a query, an encoded path, an empty rest.
#[test]
fn only_plain_puts_of_an_item_are_answered_here() {
    let plain = |uri: &str| super::super::plain(&Request::put(uri).body(Body::empty()).unwrap());
    assert_eq!(plain("/v1/items/a-1/b-2"), Some(super::super::Plain::Put));
    assert_eq!(plain("/v1/items/a-1?"), Some(super::super::Plain::Put));
    assert_eq!(plain("/v1/items/a-1?ttl_seconds=5"), None);
    assert_eq!(plain("/v1/items/a-1?history=true"), None);
    assert_eq!(plain("/v1/items/a%2D1"), None);
    assert_eq!(plain("/v1/items/"), None);
    assert_eq!(plain("/v1/transact"), None);
}
