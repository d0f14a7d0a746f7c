//! Bearer tokens with a read or read-write scope. With no token configured the server runs in
//! local-only mode: no authentication, and it refuses to bind anything but loopback.

use crate::error::ApiError;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::Arc;

/// What a token may do.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// Reads only.
    Read,
    /// Reads and writes.
    ReadWrite,
}

impl std::str::FromStr for Scope {
    type Err = String;
    fn from_str(s: &str) -> Result<Scope, String> {
        match s {
            "read" => Ok(Scope::Read),
            "read-write" | "rw" => Ok(Scope::ReadWrite),
            other => Err(format!(
                "unknown token scope {other:?} (read or read-write)"
            )),
        }
    }
}

/// The configured tokens.
#[derive(Clone, Debug, Default)]
pub struct Auth {
    tokens: Arc<HashMap<String, Scope>>,
}

impl Auth {
    /// Tokens and their scopes; empty means local-only mode.
    pub fn new(tokens: HashMap<String, Scope>) -> Auth {
        Auth {
            tokens: Arc::new(tokens),
        }
    }

    /// Whether any token is configured.
    pub fn enabled(&self) -> bool {
        !self.tokens.is_empty()
    }
}

/// Whether a request writes. `POST /v1/get` reads many items; it is not a write.
fn is_write(method: &Method, path: &str) -> bool {
    match *method {
        Method::GET | Method::HEAD | Method::OPTIONS => false,
        Method::POST => path != "/v1/get",
        _ => true,
    }
}

/// 401, naming the scheme to use (RFC 9110 requires `WWW-Authenticate` on a 401).
fn unauthorized(message: &str) -> Response {
    let mut response =
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message).into_response();
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

/// Middleware: checks the bearer token and its scope.
pub async fn require_token(
    State(auth): State<Auth>,
    request: Request,
    next: Next,
) -> Result<Response, Response> {
    if !auth.enabled() {
        return Ok(next.run(request).await);
    }
    // The scheme is case-insensitive (RFC 9110 section 11.1).
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim());
    let Some(token) = presented else {
        return Err(unauthorized("missing bearer token"));
    };
    let Some(scope) = auth.tokens.get(token).copied() else {
        return Err(unauthorized("unknown token"));
    };
    if scope == Scope::Read && is_write(request.method(), request.uri().path()) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "this token may only read",
        )
        .into_response());
    }
    Ok(next.run(request).await)
}
