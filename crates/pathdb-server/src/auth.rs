//! Bearer tokens with a read or read-write scope. With no token configured the server runs in
//! local-only mode: no authentication, and it refuses to bind anything but loopback.

use crate::error::ApiError;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// What a token may do.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// Reads only.
    Read,
    /// Reads and writes.
    ReadWrite,
    /// Reads, writes, and changes to namespace definitions (`PUT`/`DELETE /v1/namespaces/..`).
    Admin,
}

impl std::str::FromStr for Scope {
    type Err = String;
    fn from_str(s: &str) -> Result<Scope, String> {
        match s {
            "read" => Ok(Scope::Read),
            "read-write" | "rw" => Ok(Scope::ReadWrite),
            "admin" => Ok(Scope::Admin),
            other => Err(format!(
                "unknown token scope {other:?} (read, read-write or admin)"
            )),
        }
    }
}

/// The configured tokens. Its `Debug` shows how many there are, never the tokens.
#[derive(Clone, Default)]
pub struct Auth {
    tokens: Arc<Vec<(Box<[u8]>, Scope)>>,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auth")
            .field("tokens", &self.tokens.len())
            .finish_non_exhaustive()
    }
}

impl Auth {
    /// Tokens and their scopes; empty means local-only mode.
    pub fn new(tokens: HashMap<String, Scope>) -> Auth {
        Auth {
            tokens: Arc::new(
                tokens
                    .into_iter()
                    .map(|(token, scope)| (token.into_bytes().into_boxed_slice(), scope))
                    .collect(),
            ),
        }
    }

    /// Whether any token is configured.
    pub fn enabled(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// The scope of a presented token, if it is one of ours.
    ///
    /// Every configured token is compared, each in constant time, and the loop does not stop
    /// at a match, so the time taken does not tell how much of a guess was right or which token
    /// it resembled. (A token's length can still show; tokens should be long random strings.)
    pub fn scope_of(&self, presented: &str) -> Option<Scope> {
        let presented = presented.as_bytes();
        let mut found = None;
        for (token, scope) in self.tokens.iter() {
            if bool::from(token.as_ref().ct_eq(presented)) {
                found = Some(*scope);
            }
        }
        found
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

/// Whether a request changes a namespace definition or its alias builds (the `admin` scope's).
/// A dry run is a `PUT` too: it reads the whole database, which is the admin's to ask for.
fn is_admin(method: &Method, path: &str) -> bool {
    matches!(*method, Method::PUT | Method::DELETE | Method::POST)
        && path.starts_with("/v1/namespaces/")
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

/// What [`check`] let through, in the request's extensions for handlers that show it.
#[derive(Clone, Copy, Debug)]
pub struct Granted {
    /// Whether the server has tokens at all (without, everyone may read and write).
    pub auth_required: bool,
    /// What the request may do.
    pub scope: Scope,
}

/// Why [`check`] refused a request.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Refusal {
    /// No bearer token: 401.
    MissingToken,
    /// A bearer token that is not configured: 401.
    UnknownToken,
    /// A write with a read-only token: 403.
    ReadOnly,
    /// A change to a namespace definition without the `admin` scope: 403.
    NotAdmin,
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self {
            Refusal::MissingToken => unauthorized("missing bearer token"),
            Refusal::UnknownToken => unauthorized("unknown token"),
            Refusal::ReadOnly => ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                "this token may only read",
            )
            .into_response(),
            Refusal::NotAdmin => ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                "changing a namespace definition needs a token with the admin scope",
            )
            .into_response(),
        }
    }
}

/// Checks the bearer token and its scope: what the request may do, or why not. Without tokens
/// everyone may read and write, and change definitions. (Run on the API's routes, before their handlers: see `gate`.)
///
/// # Errors
/// The refusal; its response is the answer to send.
pub fn check<B>(auth: &Auth, request: &axum::http::Request<B>) -> Result<Granted, Refusal> {
    if !auth.enabled() {
        return Ok(Granted {
            auth_required: false,
            scope: Scope::Admin,
        });
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
        return Err(Refusal::MissingToken);
    };
    let Some(scope) = auth.scope_of(token) else {
        return Err(Refusal::UnknownToken);
    };
    let (method, path) = (request.method(), request.uri().path());
    if scope == Scope::Read && is_write(method, path) {
        return Err(Refusal::ReadOnly);
    }
    if scope != Scope::Admin && is_admin(method, path) {
        return Err(Refusal::NotAdmin);
    }
    Ok(Granted {
        auth_required: true,
        scope,
    })
}

#[cfg(test)]
mod test;
