//! `GET` and `PUT /v1/items/{path}` without the router, on a backend whose point reads never
//! block (and, for puts, that queues its writes).
//!
//! Gets and single puts are most of what a server of PathDB answers. Through axum's router they
//! also paid for the route match, the route's boxed layer stack (request metrics, the token, the
//! timeout, the body limit, and on puts the media type: each cloned and boxed per request), and
//! the extractors; on a get together more than the store and the answer (docs/benchmarks.md,
//! "Gets against the ceiling", issue 37), on a put a fifth of the HTTP workers' instructions
//! (issue 52). [`Unrouted`] sits in front of the router, inside the checks every request passes
//! (request id, Host/Origin, CORS: see `crate::app`), takes the gets and puts it can answer as
//! the route would and does the same steps as the route in the same order, with the same
//! functions: the route's checks (the one list [`gate::ApiChecks`] the router's API routes run:
//! the request metrics, the token, told the route's template by [`gate::unrouted`]), then what
//! the handler does. For a get: the path ([`key_path_in_url`]), the read and the answer
//! ([`handlers::read_item`], [`handlers::answer_item`]); the route's timeout and body limit have
//! nothing to do (the answer is made in the call, no body is read). For a put, see [`put`].
//! Everything else, including every request it is not sure to answer as the route would (a
//! query, a percent-encoded path, `HEAD`, a JWT to verify, a backend that blocks), goes to the
//! router.

use crate::auth::Access;
use crate::calls::point_read_here;
use crate::error::ApiError;
use crate::extract::key_path_in_url;
use crate::gate::{self, ApiChecks, Who};
use crate::{AppState, handlers};
use axum::Router;
use axum::extract::Request;
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use pathdb_store::backend::Backend;
use pin_project_lite::pin_project;
use std::convert::Infallible;
use std::future::{Future, Ready, ready};
use std::pin::Pin;
use std::task::{Context, Poll};
use tower::Service;

/// The items' route: the router's, and the template the requests answered here are counted under
/// in `/metrics`, as the router counts the route's (its `MatchedPath`).
pub(crate) const ITEMS_ROUTE: &str = "/v1/items/{*path}";

/// The items' route up to the key path.
const ITEMS_PREFIX: &str = "/v1/items/";

/// The router, with the gets and puts of one item answered before it (see the module's docs).
pub(crate) struct Unrouted<B: Backend> {
    pub(crate) routes: Router,
    pub(crate) state: AppState<B>,
    /// The checks of the API's routes, this one's among them.
    pub(crate) checks: ApiChecks,
}

impl<B: Backend> Clone for Unrouted<B> {
    fn clone(&self) -> Self {
        Unrouted {
            routes: self.routes.clone(),
            state: self.state.clone(),
            checks: self.checks.clone(),
        }
    }
}

impl<B: Backend> Service<Request> for Unrouted<B> {
    type Response = Response;
    type Error = Infallible;
    type Future = UnroutedFuture<<Router as Service<Request>>::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Service::<Request>::poll_ready(&mut self.routes, cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        match self.answered_here(&request) {
            Some(Plain::Get) => UnroutedFuture::Answered {
                answer: ready(Ok(self.get(request))),
            },
            Some(Plain::Put) => UnroutedFuture::Put {
                future: Box::pin(put::put(self.state.clone(), self.checks.clone(), request)),
            },
            None => UnroutedFuture::Routed {
                future: self.routes.call(request),
            },
        }
    }
}

pin_project! {
    /// The future of [`Unrouted`].
    #[project = UnroutedProj]
    pub(crate) enum UnroutedFuture<F> {
        Answered { answer: Ready<Result<Response, Infallible>> },
        // One box per put, where the route took one per layer.
        Put { future: Pin<Box<dyn Future<Output = Response> + Send>> },
        Routed { #[pin] future: F },
    }
}

impl<F: Future<Output = Result<Response, Infallible>>> Future for UnroutedFuture<F> {
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            UnroutedProj::Answered { answer } => Pin::new(answer).poll(cx),
            UnroutedProj::Put { future } => future.as_mut().poll(cx).map(Ok),
            UnroutedProj::Routed { future } => future.poll(cx),
        }
    }
}

impl<B: Backend> Unrouted<B> {
    /// Whether this module answers `request`, and how: a [`plain`] get or put, on a backend that
    /// answers it without blocking, with no JWT to verify (the router's token lookups run on the
    /// blocking pool).
    fn answered_here(&self, request: &Request) -> Option<Plain> {
        let plain = plain(request)?;
        let backend = self.state.store.backend();
        let without_blocking =
            backend.fast_point_reads() && (plain == Plain::Get || backend.queues_writes());
        let jwt = gate::token_auth(&self.checks)
            .verifies_jwt(request.headers().get(axum::http::header::AUTHORIZATION));
        (without_blocking && !jwt).then_some(plain)
    }
}

impl<B: Backend> Unrouted<B> {
    /// What the route's checks and `handlers::get_item` answer, in their order: the checks (a
    /// refusal is counted too), then the path, the read and the answer.
    fn get(&self, request: Request) -> Response {
        gate::answer_now(&self.checks, request, |request, memo| {
            // A token the check left pending is resolved first, as the route's lookup layer
            // resolves it before the extractors.
            let pending;
            let access = match gate::access_in(memo) {
                Some(access) => access,
                None => match gate::who_now(&self.checks, &request) {
                    Who::Known(access) => {
                        pending = access;
                        &pending
                    }
                    Who::Refused(refusal) => return refusal,
                },
            };
            self.read(&request, access)
                .unwrap_or_else(IntoResponse::into_response)
        })
    }

    fn read(&self, request: &Request, access: &Access) -> Result<Response, ApiError> {
        let rest = request.uri().path().strip_prefix(ITEMS_PREFIX);
        let path = key_path_in_url(rest.unwrap_or_default())?;
        access.need(pathdb_store::Op::Read, &path)?;
        let speaks = crate::extract::Speaks::of(request.headers())?;
        let (item, path) = point_read_here(&self.state.store, "get", |store| {
            handlers::read_item(store, path, None, &speaks)
        })?;
        // `If-None-Match` is read from the request's own headers, as the route's extractor
        // copies it from them.
        handlers::answer_item(access, item, &path, None, request.headers())
    }
}

/// The requests of the items' route this module answers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Plain {
    Get,
    Put,
}

/// Whether `request` is a get or a put of one item that this module answers as the route would:
/// no query (`?version=`, `?ttl_seconds=` and unknown parameters are the route's), nothing to
/// percent-decode in the path, a path not empty (the route does not match an empty rest).
fn plain(request: &Request) -> Option<Plain> {
    let plain = match *request.method() {
        Method::GET => Plain::Get,
        Method::PUT => Plain::Put,
        _ => return None,
    };
    if request.uri().query().is_some_and(|q| !q.is_empty()) {
        return None;
    }
    let rest = request.uri().path().strip_prefix(ITEMS_PREFIX)?;
    (!rest.is_empty() && !rest.contains('%')).then_some(plain)
}

mod put;

#[cfg(test)]
mod test;
