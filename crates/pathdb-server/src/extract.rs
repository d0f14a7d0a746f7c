//! Extractors whose rejections use the API's error shape instead of axum's plain text.

use crate::error::ApiError;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use pathdb_keys::KeyPath;
use serde::de::DeserializeOwned;

/// The key path in the rest of the URL (`/v1/items/user-7/post-1` → `/user-7/post-1`).
pub struct UrlPath(pub KeyPath);

impl<S: Send + Sync> FromRequestParts<S> for UrlPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let axum::extract::Path(rest) =
            axum::extract::Path::<String>::from_request_parts(parts, state)
                .await
                .map_err(|e: PathRejection| {
                    ApiError::new(StatusCode::BAD_REQUEST, "invalid_path", e.body_text())
                })?;
        key_path_in_url(&rest).map(UrlPath)
    }
}

/// The key path of a URL's rest after its route (decoded): `user-7/post-1` → `/user-7/post-1`.
pub(crate) fn key_path_in_url(rest: &str) -> Result<KeyPath, ApiError> {
    let rest = rest.trim_start_matches('/');
    let mut text = String::with_capacity(1 + rest.len());
    text.push('/');
    text.push_str(rest);
    // Offsets in errors count from the path's leading '/'.
    Ok(text.parse()?)
}

/// The request's `If-Match` and `If-None-Match` lines: all the item handlers read of its
/// headers. (axum's `HeaderMap` extractor copies every header, on every get.)
pub struct Preconditions(pub HeaderMap);

impl<S: Send + Sync> FromRequestParts<S> for Preconditions {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        _: &S,
    ) -> Result<Self, std::convert::Infallible> {
        Ok(Preconditions::of(&parts.headers))
    }
}

impl Preconditions {
    /// The `If-Match` and `If-None-Match` lines of `headers`.
    pub(crate) fn of(headers: &HeaderMap) -> Preconditions {
        // Empty (and unallocated) for a request without preconditions.
        let mut kept = HeaderMap::new();
        for name in [header::IF_MATCH, header::IF_NONE_MATCH] {
            for value in headers.get_all(&name) {
                kept.append(name.clone(), value.clone());
            }
        }
        Preconditions(kept)
    }
}

/// The `Schema-Version` header (docs/migrations.md): the definition version the request
/// speaks per namespace (`user=1, order=3`; several header lines join with commas). Absent: the
/// newest of every namespace.
#[derive(Clone, Debug, Default)]
pub struct Speaks(pub pathdb_store::SchemaVersions);

/// The header's name.
pub const SCHEMA_VERSION: &str = "schema-version";

impl Speaks {
    /// The `Schema-Version` lines of `headers`.
    ///
    /// # Errors
    /// 400 `invalid_request` naming the header, for text that is not `namespace=version, ...`.
    pub fn of(headers: &HeaderMap) -> Result<Speaks, ApiError> {
        let mut text = String::new();
        for value in headers.get_all(SCHEMA_VERSION) {
            let line = value
                .to_str()
                .map_err(|_| ApiError::bad_request("Schema-Version: not visible ASCII text"))?;
            if !text.is_empty() {
                text.push(',');
            }
            text.push_str(line);
        }
        text.parse().map(Speaks).map_err(|e: pathdb_store::Error| {
            ApiError::bad_request(format!("Schema-Version header: {e}"))
        })
    }

    /// The version named for the namespace of `path`.
    pub fn for_path(&self, path: &pathdb_keys::KeyPath) -> Option<u64> {
        self.0.get(path.last().namespace().as_str())
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Speaks {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        Speaks::of(&parts.headers)
    }
}

/// Query parameters. `T` refuses unknown parameters (`#[serde(deny_unknown_fields)]` on every
/// query struct, none of which flattens), so a misspelt or unsupported option is a 400
/// `invalid_request` naming it, not silently ignored.
pub struct Query<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| Query(q.0))
            .map_err(|e: QueryRejection| ApiError::bad_request(query_message(&e.body_text())))
    }
}

/// A query string's deserialization error in the API's own words: each names the query
/// parameter (serde's "unknown field `x`", "missing field `x`" and "x: reason" otherwise speak
/// of fields and of the deserializer).
fn query_message(text: &str) -> String {
    let text = text
        .strip_prefix("Failed to deserialize query string: ")
        .unwrap_or(text);
    if let Some((_, rest)) = text.split_once("unknown field ") {
        return format!("unknown query parameter {rest}");
    }
    if let Some((_, rest)) = text.split_once("missing field ") {
        return format!("missing query parameter {rest}");
    }
    if let Some((_, rest)) = text.split_once("duplicate field ") {
        return format!("query parameter {rest} is given more than once");
    }
    match text.split_once(": ") {
        Some((name, reason)) if !name.is_empty() && !name.contains(' ') => {
            let reason = match reason {
                "invalid digit found in string" | "cannot parse integer from empty string" => {
                    "expected a whole number, at least 0".to_owned()
                }
                "number too large to fit in target type" => "the number is too large".to_owned(),
                r if r.contains("`true` or `false`") => "expected true or false".to_owned(),
                r => r.to_owned(),
            };
            format!("query parameter `{name}`: {reason}")
        }
        _ => format!("invalid query string: {text}"),
    }
}

/// For routes that take no query parameters: refuses any (400 `invalid_request`), as
/// [`Query`] refuses unknown ones, so that no route ignores what it was asked.
pub struct NoQuery;

impl<S: Send + Sync> FromRequestParts<S> for NoQuery {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        // `?` alone (an empty query) asks nothing.
        match parts.uri.query().filter(|q| !q.is_empty()) {
            None => Ok(NoQuery),
            Some(query) => {
                let name = query.split('&').next().unwrap_or(query);
                let name = name.split_once('=').map_or(name, |(name, _)| name);
                Err(ApiError::bad_request(format!(
                    "unknown query parameter `{name}`: {} takes no query parameters",
                    parts.uri.path()
                )))
            }
        }
    }
}

/// A JSON request body.
pub struct Json<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for Json<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(bytes_rejection)?;
        let text = strict_json_text(&bytes)?;
        serde_json::from_str(text).map(Json).map_err(|e| {
            invalid_json(format!(
                "Failed to deserialize the JSON body into the target type: {e}"
            ))
        })
    }
}

/// A raw body (the JSON value of a put, JSON lines of an import).
pub struct Body(pub axum::body::Bytes);

impl<S: Send + Sync> FromRequest<S> for Body {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        axum::body::Bytes::from_request(req, state)
            .await
            .map(Body)
            .map_err(bytes_rejection)
    }
}

/// A JSON body's text, once it is UTF-8 and I-JSON (no duplicate names, no lone surrogates: what
/// deserializing would silently resolve one way or another); else 400 `invalid_json`.
pub(crate) fn strict_json_text(bytes: &[u8]) -> Result<&str, ApiError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| invalid_json(format!("the body is not UTF-8: {e}")))?;
    pathdb_store::check_json(text).map_err(|e| invalid_json(e.to_string()))?;
    Ok(text)
}

/// 400 `invalid_json`.
pub(crate) fn invalid_json(message: String) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, "invalid_json", message)
}

fn bytes_rejection(e: BytesRejection) -> ApiError {
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "too_large", e.body_text())
    } else {
        ApiError::bad_request(e.body_text())
    }
}

/// Who the request is ([`crate::auth::Access`]), as the token check left it in the request's
/// extensions. A request without one (a route outside the checks, which must not happen) is a
/// 500, never let through.
impl<S: Send + Sync> FromRequestParts<S> for crate::auth::Access {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        parts
            .extensions
            .get::<crate::auth::Access>()
            .cloned()
            .ok_or_else(|| {
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal",
                    "the request's token was not resolved",
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::query_message;

    #[test]
    fn query_errors_name_the_parameter() {
        let cases = [
            (
                "Failed to deserialize query string: missing field `id`",
                "missing query parameter `id`",
            ),
            (
                "Failed to deserialize query string: limit: invalid digit found in string",
                "query parameter `limit`: expected a whole number, at least 0",
            ),
            (
                "Failed to deserialize query string: count: provided string was not `true` or `false`",
                "query parameter `count`: expected true or false",
            ),
            (
                "Failed to deserialize query string: unknown field `bogus`, expected `a`",
                "unknown query parameter `bogus`, expected `a`",
            ),
            (
                "Failed to deserialize query string: duplicate field `limit`",
                "query parameter `limit` is given more than once",
            ),
        ];
        for (serde, ours) in cases {
            assert_eq!(query_message(serde), ours);
        }
    }
}
