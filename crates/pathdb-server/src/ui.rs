//! The web console: static files embedded in the binary and served under `/ui/`, so it works
//! offline with no build step. Every `/ui/{path}` that is not an asset answers with the same
//! page, which reads the key path from its URL (deep links); assets live under `/ui/.console/`,
//! which no key path can start with (a namespace starts with a letter or `_`).

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

/// Where the console is served.
pub const UI_ROOT: &str = "/ui/";

const INDEX: &str = include_str!("../ui/index.html");
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_str!("../ui/app.js"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_str!("../ui/style.css"),
    ),
];

/// Only our own files run and load: no inline scripts, no other origin, no framing.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

fn page(content_type: &'static str, body: &'static str) -> Response {
    let mut response = (StatusCode::OK, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // The files change with the binary; revalidating is cheap on loopback.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// `/ui/`: the page, which shows the groups.
async fn index() -> Response {
    page("text/html; charset=utf-8", INDEX)
}

/// An asset under `/ui/.console/`, or the page for any other `/ui/{path}` (a deep link).
async fn page_or_asset(Path(rest): Path<String>) -> Response {
    match rest.strip_prefix(".console/") {
        Some(name) => match ASSETS.iter().find(|(n, _, _)| *n == name) {
            Some((_, content_type, body)) => page(content_type, body),
            None => crate::ApiError::not_found("no such console file").into_response(),
        },
        None => page("text/html; charset=utf-8", INDEX),
    }
}

/// `/` and `/ui` redirect to `/ui/`; `/ui/` and every `/ui/{path}` serve the console.
pub fn router() -> Router {
    Router::new()
        .route("/", get(|| async { Redirect::to(UI_ROOT) }))
        .route("/ui", get(|| async { Redirect::to(UI_ROOT) }))
        .route("/ui/", get(index))
        .route("/ui/{*rest}", get(page_or_asset))
}
