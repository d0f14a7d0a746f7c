//! HTTP API tests: the store's conformance behaviours as an HTTP twin, driven through
//! `router(...)` with `oneshot` on a file-backed store, plus auth, limits, bad input and a
//! real listener for races. Every test goes through [`TestServer`] so the API's Rust surface can
//! change without touching them.

mod bad_input;
mod catalogue;
mod changes;
mod conditional;
mod console;
mod cross_site;
mod filters;
mod items;
mod listener;
mod listing;
mod migrations;
mod namespaces;
mod openapi;
mod operations;
mod patch;
mod secrets;
mod tokens;
mod transactions;
mod tree;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, Request, StatusCode};
use pathdb_server::{AllowedOrigins, App, AppState, Auth, Console, Scope, app};
use pathdb_store::backend::{FileBackend, FileOptions};
use pathdb_store::{ManualClock, Store, StoreOptions, Timestamp};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use tower::ServiceExt;

/// A router over a store in a temporary file, with a clock the test moves.
pub struct TestServer {
    app: App<FileBackend>,
    /// The store behind the router, for setting what HTTP cannot (namespace history).
    pub store: Store<FileBackend>,
    /// The store's clock: starts at the real time and moves only when told.
    pub clock: Arc<ManualClock>,
    /// Sent as `Authorization: Bearer ...` unless a request sets its own.
    token: Option<String>,
    _dir: tempfile::TempDir,
}

/// One response.
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "{}: body is not JSON ({e}): {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8(self.body.to_vec()).expect("UTF-8 body")
    }

    /// Asserts the status and returns the JSON body.
    pub fn expect(&self, status: u16) -> Value {
        assert_eq!(
            self.status.as_u16(),
            status,
            "body: {}",
            String::from_utf8_lossy(&self.body)
        );
        self.json()
    }

    /// Asserts an error response: the status, and the one error shape with this code.
    pub fn expect_error(&self, status: u16, code: &str) -> String {
        let body = self.expect(status);
        let error = body
            .get("error")
            .and_then(Value::as_object)
            .unwrap_or_else(|| panic!("not the error shape: {body}"));
        // A transaction's failed condition or refused value also names its operation, an
        // import's refused value its line; a refused value carries its path and violations.
        let index = error.get("index").map(|i| {
            assert!(i.is_u64(), "index is an operation's index: {body}");
            assert!(
                matches!(
                    code,
                    "condition_failed"
                        | "schema_violation"
                        | "alias_taken"
                        | "alias_invalid"
                        | "forbidden"
                ),
                "only a failed condition, a refused value or alias has one: {body}"
            );
        });
        let line = error.get("line").map(|l| {
            assert!(l.is_u64(), "line is a line number: {body}");
            assert_eq!(
                code, "schema_violation",
                "only a refused value has one: {body}"
            );
        });
        let refused = code == "schema_violation";
        if refused {
            assert!(error["path"].is_string(), "{body}");
            let violations = error["violations"].as_array().expect("violations");
            assert!((1..=20).contains(&violations.len()), "{body}");
        }
        // An alias error names what it is about (docs/aliases.md).
        let details: &[&str] = match code {
            "alias_taken" => &["alias", "holder"],
            "path_is_alias" => &["path", "item"],
            "alias_invalid" => &["path", "member"],
            "alias_building" => &["template", "state", "checked"],
            // Where in the filter (docs/filters.md).
            "invalid_filter" => &["position"],
            // What a new definition version would break (docs/migrations.md).
            "incompatible_schema" => &["problems"],
            "migration_failed" => &["path"],
            // Access control (docs/access.md): why a token was refused, and what was.
            "unauthorized" => &["reason"],
            "forbidden" if error.contains_key("operation") => {
                if error.contains_key("path") {
                    &["operation", "path"]
                } else {
                    &["operation"]
                }
            }
            _ => &[],
        };
        for member in details {
            assert!(error.contains_key(*member), "{member} missing: {body}");
        }
        assert_eq!(
            error.len(),
            2 + usize::from(index.is_some())
                + usize::from(line.is_some())
                + 2 * usize::from(refused)
                + details.len(),
            "error has code and message only (and a failed condition's index): {body}"
        );
        assert_eq!(error["code"], code, "{body}");
        let message = error["message"].as_str().expect("message is a string");
        assert!(!message.is_empty(), "{body}");
        assert_eq!(
            self.headers["content-type"], "application/json",
            "errors are JSON"
        );
        message.to_owned()
    }

    /// The paths of `items` in the body.
    pub fn paths(&self) -> Vec<String> {
        paths_of(&self.json())
    }
}

/// The `path` of each element of `body.items`.
pub fn paths_of(body: &Value) -> Vec<String> {
    body["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items: {body}"))
        .iter()
        .map(|i| i["path"].as_str().expect("path").to_owned())
        .collect()
}

impl Default for TestServer {
    fn default() -> Self {
        TestServer::new()
    }
}

impl TestServer {
    /// Local-only mode: no tokens.
    pub fn new() -> TestServer {
        TestServer::with_tokens(&[])
    }

    /// Bearer tokens with their scopes.
    pub fn with_tokens(tokens: &[(&str, Scope)]) -> TestServer {
        TestServer::with_origins(tokens, &[])
    }

    /// Bearer tokens, and web origins allowed besides the server's own.
    pub fn with_origins(tokens: &[(&str, Scope)], origins: &[&str]) -> TestServer {
        TestServer::build(tokens, origins, Console::Served)
    }

    /// Local-only mode, with the web console served or not.
    pub fn with_console(console: Console) -> TestServer {
        TestServer::build(&[], &[], console)
    }

    fn build(tokens: &[(&str, Scope)], origins: &[&str], console: Console) -> TestServer {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = Arc::new(ManualClock::new(Timestamp::now()));
        let options = StoreOptions {
            clock: clock.clone(),
            // Expired items are hidden by every read; the tests sweep explicitly.
            sweep_interval: None,
            ..StoreOptions::default()
        };
        let backend =
            FileBackend::open(dir.path().join("t.pathdb"), FileOptions::default()).expect("open");
        let store = Store::new(backend, options).expect("store");
        let tokens: HashMap<String, Scope> =
            tokens.iter().map(|(t, s)| ((*t).to_owned(), *s)).collect();
        let app = app(
            AppState::new(store.clone()),
            Auth::new(tokens),
            AllowedOrigins::new(origins).expect("valid origins"),
            console,
        );
        TestServer {
            app,
            store,
            clock,
            token: None,
            _dir: dir,
        }
    }

    /// Sends `Authorization: Bearer token` on every request from now on.
    pub fn use_token(&mut self, token: &str) {
        self.token = Some(token.to_owned());
    }

    /// Sends any request.
    pub async fn send(&self, request: Request<Body>) -> Reply {
        let response = self
            .app
            .clone()
            .oneshot(request)
            .await
            .expect("the router is infallible");
        let status = response.status();
        let headers = response.headers().clone();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("read body");
        Reply {
            status,
            headers,
            body,
        }
    }

    /// A request with headers and a body (JSON content type unless a header says otherwise).
    pub async fn call(
        &self,
        method: Method,
        uri: &str,
        headers: &[(&str, &str)],
        body: impl Into<Body>,
    ) -> Reply {
        let mut request = Request::builder().method(method).uri(uri);
        if !headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        {
            request = request.header("content-type", "application/json");
        }
        if let Some(token) = &self.token
            && !headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        self.send(request.body(body.into()).expect("valid request"))
            .await
    }

    pub async fn get(&self, uri: &str) -> Reply {
        self.call(Method::GET, uri, &[], Body::empty()).await
    }

    pub async fn put(&self, uri: &str, body: &str) -> Reply {
        self.call(Method::PUT, uri, &[], body.to_owned()).await
    }

    pub async fn delete(&self, uri: &str) -> Reply {
        self.call(Method::DELETE, uri, &[], Body::empty()).await
    }

    pub async fn post(&self, uri: &str, body: &Value) -> Reply {
        self.call(Method::POST, uri, &[], body.to_string()).await
    }

    /// Puts a JSON value at a key path (text form, with its leading '/') and expects success.
    pub async fn put_item(&self, path: &str, value: &str) -> Value {
        let reply = self.put(&format!("/v1/items{path}"), value).await;
        assert!(
            reply.status.is_success(),
            "put {path}: {} {}",
            reply.status,
            reply.text()
        );
        reply.json()
    }

    /// The listing's item paths.
    pub async fn list_paths(&self, uri: &str) -> Vec<String> {
        let reply = self.get(uri).await;
        reply.expect(200);
        reply.paths()
    }

    /// Every item and revision, as export writes them.
    pub async fn export(&self) -> String {
        let reply = self.get("/v1/export").await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
        assert_eq!(reply.headers["content-type"], "application/x-ndjson");
        reply.text()
    }
}
