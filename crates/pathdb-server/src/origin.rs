//! Which web pages may call the API from a browser.
//!
//! A request that carries an `Origin` header comes from a page. It is served only if that
//! origin is the server's own (same host and port as the request's `Host`, for a console served
//! by this server) or one configured with `--cors-origin` / `cors_origins`; any other is
//! refused with 403 before a handler runs, with or without tokens. Requests without `Origin`
//! (curl, the CLI, other servers) are not affected. For configured origins, tower-http's
//! [`CorsLayer`] answers preflights and adds the CORS response headers.
//!
//! Without tokens, the `Host` must also be a loopback name (`localhost`, `127.0.0.1`, `[::1]`):
//! a page whose DNS name is rebound to 127.0.0.1 is "same-origin" with the server under that
//! name, and its requests (reads without `Origin` too) would otherwise be served.

use crate::error::ApiError;
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, header};
use std::sync::Arc;
use std::time::Duration;
use tower_http::cors::{AllowOrigin, CorsLayer};

/// A CORS origin that is not `http://` or `https://` followed by a host and optional port.
#[derive(Debug, thiserror::Error)]
#[error("invalid CORS origin {0:?}: expected scheme://host[:port], e.g. http://localhost:3000")]
pub struct InvalidOrigin(pub String);

/// Origins (`scheme://host[:port]`) whose pages may call the API, besides the server's own.
#[derive(Clone, Debug, Default)]
pub struct AllowedOrigins {
    origins: Arc<Vec<HeaderValue>>,
}

impl AllowedOrigins {
    /// Checks and keeps the origins, as a browser writes them: `http://localhost:3000`.
    ///
    /// # Errors
    /// [`InvalidOrigin`]: not `http://` or `https://` followed by a host (and
    /// port), or with a path, query or trailing slash.
    pub fn new<S: AsRef<str>>(
        origins: impl IntoIterator<Item = S>,
    ) -> Result<AllowedOrigins, InvalidOrigin> {
        let origins = origins
            .into_iter()
            .map(|o| parse_origin(o.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(AllowedOrigins {
            origins: Arc::new(origins),
        })
    }

    /// Whether a page at `origin` may call a server reached as `host` (the `Host` header).
    pub fn allows(&self, origin: &HeaderValue, host: Option<&str>) -> bool {
        let Ok(origin) = origin.to_str() else {
            return false;
        };
        self.origins
            .iter()
            .any(|o| o.as_bytes().eq_ignore_ascii_case(origin.as_bytes()))
            || host.is_some_and(|host| same_origin(origin, host))
    }

    /// The CORS layer for the configured origins: preflights, and the response headers that let
    /// their pages read answers. (A request with no `Origin` that is not a preflight gets only
    /// [`NO_ORIGIN_VARY`] and [`NO_ORIGIN_EXPOSE`] from it.)
    pub fn cors_layer(&self) -> CorsLayer {
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(self.origins.iter().cloned()))
            .allow_methods([
                Method::GET,
                Method::PUT,
                Method::PATCH,
                Method::DELETE,
                Method::POST,
            ])
            .allow_headers([
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                header::IF_MATCH,
                header::IF_NONE_MATCH,
                HeaderName::from_static("x-request-id"),
            ])
            .expose_headers([
                header::ETAG,
                header::WWW_AUTHENTICATE,
                HeaderName::from_static("x-request-id"),
            ])
            .max_age(Duration::from_secs(600))
    }
}

/// The `Vary` value [`AllowedOrigins::cors_layer`] appends to the answer to a request with no
/// `Origin` that is not an `OPTIONS` preflight (tower-http's default: the request headers a
/// preflight looks at). `gate::Cors` adds it without tower-http's per-request work; a test
/// checks that both answer the same.
pub const NO_ORIGIN_VARY: &str =
    "origin, access-control-request-method, access-control-request-headers";
/// The `Access-Control-Expose-Headers` value [`AllowedOrigins::cors_layer`] sets on the answer to
/// a request with no `Origin` that is not an `OPTIONS` preflight; see [`NO_ORIGIN_VARY`].
pub const NO_ORIGIN_EXPOSE: &str = "etag,www-authenticate,x-request-id";

fn parse_origin(text: &str) -> Result<HeaderValue, InvalidOrigin> {
    let invalid = || InvalidOrigin(text.to_owned());
    let lower = text.trim().to_ascii_lowercase();
    let authority = lower
        .strip_prefix("http://")
        .or_else(|| lower.strip_prefix("https://"))
        .ok_or_else(invalid)?;
    let host_port = axum::http::uri::Authority::try_from(authority).map_err(|_| invalid())?;
    // An origin has no user info, path, query or fragment: exactly scheme://host[:port].
    if authority.is_empty() || host_port.as_str() != authority || authority.contains('@') {
        return Err(invalid());
    }
    HeaderValue::from_str(&lower).map_err(|_| invalid())
}

/// `http://host:port` or `https://host:port` whose authority is `host` (case-insensitive).
fn same_origin(origin: &str, host: &str) -> bool {
    origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .is_some_and(|authority| authority.eq_ignore_ascii_case(host))
}

/// Whether `host` (a `Host` header: name or address, optional port) names this machine's
/// loopback interface.
fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        // [::1]:7070
        Some(bracketed) => bracketed.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, _port)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// What [`refusal`] needs: the allowed origins, and whether the server runs without tokens
/// (then the `Host` must be a loopback name).
#[derive(Clone, Debug)]
pub struct OriginPolicy {
    /// Origins allowed besides the server's own.
    pub origins: AllowedOrigins,
    /// No token is configured.
    pub local_only: bool,
}

/// The answer to a request from a page the server does not allow: 403 `origin_not_allowed`;
/// and, in local-only mode, 403 `host_not_allowed` for a `Host` that is not a loopback name.
/// `host` is the request's `Host` (or its URI's authority), `origin` its `Origin` header.
/// `None`: the request may go on. (Checked on every request, before any route: see `gate`.)
pub fn refusal(
    policy: &OriginPolicy,
    host: Option<&str>,
    origin: Option<&HeaderValue>,
) -> Option<ApiError> {
    if policy.local_only
        && let Some(host) = host
        && !is_loopback_host(host)
    {
        return Some(ApiError::new(
            StatusCode::FORBIDDEN,
            "host_not_allowed",
            "without access tokens the server answers only to a loopback Host (localhost, 127.0.0.1, [::1])",
        ));
    }
    if let Some(origin) = origin
        && !policy.origins.allows(origin, host)
    {
        return Some(ApiError::new(
            StatusCode::FORBIDDEN,
            "origin_not_allowed",
            "requests from this web origin are not allowed (see pathdb serve --cors-origin)",
        ));
    }
    None
}

#[cfg(test)]
mod test;
