//! `PUT /v1/items/{path}` without the router: the route's layers and extractors, in their order,
//! with the same functions, then what the handler does ([`handlers::put_extracted`]).
//!
//! The route runs, outermost first: the API's checks (request metrics, the token), the lookup of
//! a token the check left pending, the request timeout, the body limit, the media type; then the
//! handler's extractors in its arguments' order (the access, the path, the query: none here,
//! the preconditions, `Schema-Version`, the body). A step added to the route must be added here,
//! and to the answer-for-answer test beside this file.

use super::ITEMS_PREFIX;
use crate::auth::Access;
use crate::error::ApiError;
use crate::extract::{Preconditions, Speaks, key_path_in_url};
use crate::gate::{self, ApiChecks, Check, RequireMedia, Who};
use crate::wire::PutQuery;
use crate::{AppState, MAX_BODY_BYTES, REQUEST_TIMEOUT, handlers, media};
use axum::extract::{DefaultBodyLimit, FromRequest, Request};
use axum::response::{IntoResponse, Response};
use pathdb_store::backend::Backend;

/// The answer of the route to a plain put (no query, no percent-encoded path: see
/// `super::plain`), on a backend whose reads never block and whose writes are queued.
pub(super) async fn put<B: Backend>(
    state: AppState<B>,
    checks: ApiChecks,
    mut request: Request,
) -> Response {
    let (mut memo, refusal) = checks.before(&mut request);
    let who = match (refusal, gate::take_access(&mut memo)) {
        (Some(refusal), _) => Who::Refused(refusal),
        (None, Some(access)) => Who::Known(access),
        (None, None) => gate::who_now(&checks, &request),
    };
    let mut response = match who {
        Who::Known(access) => {
            let answer =
                async { Ok::<_, std::convert::Infallible>(answer(state, access, request).await) };
            match gate::within(Some(REQUEST_TIMEOUT), answer).await {
                Ok(response) => response,
                Err(never) => match never {},
            }
        }
        Who::Refused(refusal) => refusal,
    };
    ApiChecks::after(memo, &mut response);
    response
}

/// The body limit, the media type, the extractors and the handler.
async fn answer<B: Backend>(state: AppState<B>, access: Access, mut request: Request) -> Response {
    DefaultBodyLimit::max(MAX_BODY_BYTES).apply(&mut request);
    let media = RequireMedia(media::JSON);
    let ((), refusal) = media.before(&mut request);
    let mut response = match refusal {
        Some(refusal) => refusal,
        None => extracted(state, access, request)
            .await
            .unwrap_or_else(IntoResponse::into_response),
    };
    RequireMedia::after((), &mut response);
    response
}

/// The handler's extractors, in order, then the handler.
async fn extracted<B: Backend>(
    state: AppState<B>,
    access: Access,
    request: Request,
) -> Result<Response, ApiError> {
    let rest = request.uri().path().strip_prefix(ITEMS_PREFIX);
    let path = key_path_in_url(rest.unwrap_or_default())?;
    let Preconditions(preconditions) = Preconditions::of(request.headers());
    let speaks = Speaks::of(request.headers())?;
    let crate::extract::Body(body) = crate::extract::Body::from_request(request, &()).await?;
    handlers::put_extracted(
        state,
        access,
        path,
        PutQuery::default(),
        preconditions,
        speaks,
        &body,
    )
    .await
}

#[cfg(test)]
mod test;
