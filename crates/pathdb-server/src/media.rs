//! Request bodies are accepted only under their real media type.
//!
//! A browser sends `text/plain`, `application/x-www-form-urlencoded` and `multipart/form-data`
//! bodies cross-origin without a CORS preflight, so a server that reads any body as JSON can be
//! written to by any web page its user visits. Requiring `application/json` (or JSON lines for
//! an import) forces a preflight, which the origin check refuses for foreign pages. The check is
//! a route layer (`gate::RequireMedia`), so it runs before the handler reads the body: a
//! refused request writes nothing.

use crate::error::ApiError;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The media type of `PUT /v1/items/*`, `POST /v1/get` and `POST /v1/transact` bodies.
pub const JSON: &[&str] = &["application/json"];
/// RFC 7396 JSON Merge Patch, a `PATCH /v1/items/*` body.
pub const MERGE_PATCH: &str = "application/merge-patch+json";
/// RFC 6902 JSON Patch, a `PATCH /v1/items/*` body.
pub const JSON_PATCH: &str = "application/json-patch+json";
/// The media types of a `PATCH /v1/items/*` body.
pub const PATCH: &[&str] = &[MERGE_PATCH, JSON_PATCH];
/// The media types of a `POST /v1/import` body: JSON lines under either common name.
pub const JSON_LINES: &[&str] = &["application/x-ndjson", "application/jsonl"];

/// Whether the request's `Content-Type` is one of `accepted` (parameters such as `charset`
/// are allowed).
pub(crate) fn declared_as(request: &Request, accepted: &[&str]) -> bool {
    headers_declare(request.headers(), accepted)
}

/// [`declared_as`] for a request's headers.
pub(crate) fn headers_declare(headers: &axum::http::HeaderMap, accepted: &[&str]) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return false;
    };
    // The common case, the type alone (`application/json`), without parsing a `Mime` (about
    // 400 instructions of every put).
    if accepted
        .iter()
        .any(|a| value.as_bytes().eq_ignore_ascii_case(a.as_bytes()))
    {
        return true;
    }
    value
        .to_str()
        .ok()
        .and_then(|v| v.parse::<mime::Mime>().ok())
        .is_some_and(|m| {
            accepted
                .iter()
                .any(|a| m.essence_str().eq_ignore_ascii_case(a))
        })
}

/// 415, naming the media types `accepted`.
pub(crate) fn unsupported(accepted: &[&str]) -> Response {
    ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
        format!(
            "the body must be sent as Content-Type: {}",
            accepted.join(" or ")
        ),
    )
    .into_response()
}
