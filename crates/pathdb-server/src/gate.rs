//! The checks every request passes, as tower layers with concrete futures.
//!
//! They were `axum::middleware::from_fn` functions. Each of those boxes its future and clones
//! and boxes the service it wraps on every request, and each layer added with `Router::layer`
//! wraps every route separately, boxing once more: on a get, the layers cost more server CPU
//! than the handler and the store together (docs/benchmarks.md, "HTTP server", issue 12). Here a
//! [`Check`] looks at the request before the service it wraps and at the response after it, in
//! a future that is part of the wrapping one, and allocates nothing of its own (but for
//! [`ReadToEnd`], on requests with a body); and the layers
//! are composed into as few `Router::layer`s as their routes allow (see `crate::app`).

use crate::auth::{self, Auth, Resolution};
use crate::error::{ApiError, ServerFailure};
use crate::media;
use crate::origin::{self, OriginPolicy};
use crate::{MAX_HEADER_BYTES, telemetry};
use axum::body::HttpBody;
use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hyper::body::{Frame, SizeHint};
use pin_project_lite::pin_project;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Instant;
use tower::util::Oneshot;
use tower::{Layer, Service, ServiceExt};

/// One check around a service.
pub(crate) trait Check: Clone + Send + Sync + 'static {
    /// What [`Check::after`] needs to know about the request.
    type Memo: Send + 'static;
    /// Looks at the request before the wrapped service sees it. A response in the second place
    /// refuses the request: the wrapped service is not called, and that response (after
    /// [`Check::after`]) is the answer.
    fn before(&self, request: &mut Request) -> (Self::Memo, Option<Response>);
    /// Looks at the answer, the wrapped service's or the refusal, before it goes out.
    fn after(memo: Self::Memo, response: &mut Response);
}

/// Wraps services in [`Checked`] with the check `C`.
#[derive(Clone)]
pub(crate) struct CheckLayer<C>(pub(crate) C);

impl<S, C: Clone> Layer<S> for CheckLayer<C> {
    type Service = Checked<S, C>;
    fn layer(&self, inner: S) -> Checked<S, C> {
        Checked {
            inner,
            check: self.0.clone(),
        }
    }
}

/// A service behind a [`Check`].
#[derive(Clone)]
pub(crate) struct Checked<S, C> {
    inner: S,
    check: C,
}

impl<S, C> Service<Request> for Checked<S, C>
where
    S: Service<Request, Response = Response>,
    C: Check,
{
    type Response = Response;
    type Error = S::Error;
    type Future = CheckedFuture<S::Future, C::Memo>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        let (memo, refusal) = self.check.before(&mut request);
        let state = match refusal {
            None => State::Inner {
                future: self.inner.call(request),
            },
            Some(response) => State::Refused {
                response: Some(response),
            },
        };
        CheckedFuture {
            state,
            memo: Some(memo),
            after: C::after,
        }
    }
}

pin_project! {
    /// The future of a [`Checked`] service.
    pub(crate) struct CheckedFuture<F, M> {
        #[pin]
        state: State<F>,
        memo: Option<M>,
        after: fn(M, &mut Response),
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F> {
        Inner { #[pin] future: F },
        Refused { response: Option<Response> },
    }
}

impl<F, E, M> Future for CheckedFuture<F, M>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut response = match this.state.project() {
            StateProj::Inner { future } => ready!(future.poll(cx))?,
            StateProj::Refused { response } => response
                .take()
                .expect("a CheckedFuture is not polled after it completed"),
        };
        if let Some(memo) = this.memo.take() {
            (this.after)(memo, &mut response);
        }
        Poll::Ready(Ok(response))
    }
}

/// Two checks as one, the first around the second, as two nested [`CheckLayer`]s run them: the
/// second sees the request only if the first let it through, and the first sees every answer
/// after the second. A list of checks is a value of nested pairs (see [`ApiChecks`]).
impl<A: Check, B: Check> Check for (A, B) {
    type Memo = (A::Memo, Option<B::Memo>);

    fn before(&self, request: &mut Request) -> (Self::Memo, Option<Response>) {
        let (outer, refusal) = self.0.before(request);
        if refusal.is_some() {
            return ((outer, None), refusal);
        }
        let (inner, refusal) = self.1.before(request);
        ((outer, Some(inner)), refusal)
    }

    fn after((outer, inner): Self::Memo, response: &mut Response) {
        if let Some(inner) = inner {
            B::after(inner, response);
        }
        A::after(outer, response);
    }
}

/// Runs `check` around an answer made at once, as a [`Checked`] service runs it around its
/// service: for the gets answered without the router (unrouted.rs).
pub(crate) fn answer_now<C: Check>(
    check: &C,
    mut request: Request,
    answer: impl FnOnce(Request, &C::Memo) -> Response,
) -> Response {
    let (memo, refusal) = check.before(&mut request);
    let mut response = refusal.unwrap_or_else(|| answer(request, &memo));
    C::after(memo, &mut response);
    response
}

/// The checks of the API's routes (`/v1/...` and `/metrics`), outermost first: the request
/// metrics ([`TrackRequests`]), then the bearer token ([`RequireToken`]). One list, run by the
/// router's routes (one route layer, see `crate::app`) and by the gets and puts of one item
/// answered before the router (unrouted.rs: [`unrouted`] gives them; [`answer_now`] runs them
/// around a get, unrouted/put.rs around a put): a check added here applies to all of them, and
/// [`unrouted`] must say how it runs without the router.
/// (Checks that only some routes take, such as a media type, are layered on those routes.)
pub(crate) type ApiChecks = (TrackRequests, RequireToken);

/// The [`ApiChecks`] with the server's tokens.
pub(crate) fn api_checks(auth: Auth) -> ApiChecks {
    (TrackRequests::ROUTED, RequireToken::new(auth))
}

/// The same [`ApiChecks`] for requests of the route `template` answered without the router
/// (unrouted.rs): counted under `template` (no router match says it), and the token's
/// [`auth::Access`] kept in the check's memo, which [`answer_now`] hands to the answer, rather
/// than in the request's extensions (whose first insert allocates: an eighth of what the
/// checks cost a get).
pub(crate) fn unrouted((_, token): &ApiChecks, template: &'static str) -> ApiChecks {
    (
        TrackRequests {
            unrouted: Some(template),
        },
        RequireToken {
            auth: token.auth.clone(),
            in_memo: true,
        },
    )
}

/// Who the request is, as [`unrouted`] checks left it in the memo (`None`: the token needs a
/// store read the check may not do).
pub(crate) fn access_in((_, token): &<ApiChecks as Check>::Memo) -> Option<&auth::Access> {
    token.as_ref()?.as_ref()
}

/// The access [`unrouted`] checks left in the memo, taken out of it (the token check's
/// [`Check::after`] has no use for it).
pub(crate) fn take_access((_, token): &mut <ApiChecks as Check>::Memo) -> Option<auth::Access> {
    token.take().flatten()
}

/// The token check's [`Auth`] in a list of [`ApiChecks`].
pub(crate) fn token_auth((_, token): &ApiChecks) -> &Auth {
    &token.auth
}

/// The checks on every request, before any route, in one pass over its headers: the size of
/// the headers (431), the `Host` and `Origin` (403, see [`origin`]), and `Connection: close` on
/// an answer that leaves a request body unread.
#[derive(Clone)]
pub(crate) struct Edge {
    pub(crate) policy: OriginPolicy,
}

impl Check for Edge {
    /// Whether the request's body was read to its end, if it has one.
    type Memo = Option<Arc<AtomicBool>>;

    fn before(&self, request: &mut Request) -> (Self::Memo, Option<Response>) {
        let mut size = 0;
        let (mut host, mut origin, mut content_length) = (None, None, None);
        let mut chunked = false;
        // `HeaderMap::iter` yields each name's values together, the first one first: the first
        // seen is what `HeaderMap::get` answers.
        for (name, value) in request.headers() {
            size += name.as_str().len() + value.len() + 4;
            if name == header::HOST {
                host = host.or(Some(value));
            } else if name == header::ORIGIN {
                origin = origin.or(Some(value));
            } else if name == header::CONTENT_LENGTH {
                content_length = content_length.or(Some(value));
            } else if name == header::TRANSFER_ENCODING {
                chunked = true;
            }
        }
        let has_body = chunked
            || content_length
                .and_then(|v| v.to_str().ok())
                .is_some_and(|n| n != "0");
        // Headers together larger than MAX_HEADER_BYTES: 431, before anything looks at them.
        let refusal = if size > MAX_HEADER_BYTES {
            Some(ApiError::new(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "too_large",
                format!("headers exceed {MAX_HEADER_BYTES} bytes"),
            ))
        } else {
            let host = host
                .and_then(|h| h.to_str().ok())
                .or_else(|| request.uri().authority().map(|a| a.as_str()));
            origin::refusal(&self.policy, host, origin)
        }
        .map(IntoResponse::into_response);
        let read = has_body.then(|| Arc::new(AtomicBool::new(false)));
        if let Some(read) = read.as_ref().filter(|_| refusal.is_none()) {
            let body = std::mem::take(request.body_mut());
            *request.body_mut() = axum::body::Body::new(ReadToEnd {
                inner: body,
                read: Arc::clone(read),
            });
        }
        (read, refusal)
    }

    /// An answer given before the request's body was read to its end (a refusal by a check, an
    /// extractor or a handler: 401, 404, a full import queue, a bad import line) leaves the rest
    /// of that body on the connection, and hyper closes it after the answer unless it can drain
    /// it at once. The answer says so (`Connection: close`), or a client would send its next
    /// request on a connection that may already be gone.
    fn after(read: Self::Memo, response: &mut Response) {
        if read.is_some_and(|read| !read.load(Ordering::Relaxed)) {
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
    }
}

/// A request body that notes when it has been read to its end (for [`Edge`]). It costs two
/// allocations (the flag, and the boxed body), only on requests with a body.
struct ReadToEnd {
    inner: axum::body::Body,
    read: Arc<AtomicBool>,
}

impl HttpBody for ReadToEnd {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let frame = ready!(Pin::new(&mut self.inner).poll_frame(cx));
        // Collecting stops at the last frame when the body says it ended (a Content-Length
        // body), without asking for the `None` after it.
        if frame.is_none() || self.inner.is_end_stream() {
            self.read.store(true, Ordering::Relaxed);
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The bearer token on the API's routes: who the request is ([`auth::Access`], put in its
/// extensions for the handlers, which check each path they touch), or 401. A token that needs a
/// store read the check may not do here is left [`auth::Pending`] for [`Lookups`].
#[derive(Clone)]
pub(crate) struct RequireToken {
    auth: Auth,
    /// Whether the access goes into the memo ([`unrouted`]) instead of the extensions.
    in_memo: bool,
}

impl RequireToken {
    /// The check of `auth`'s tokens.
    pub(crate) fn new(auth: Auth) -> RequireToken {
        RequireToken {
            auth,
            in_memo: false,
        }
    }
}

impl Check for RequireToken {
    /// The access, where [`unrouted`] keeps it there.
    type Memo = Option<auth::Access>;

    fn before(&self, request: &mut Request) -> (Self::Memo, Option<Response>) {
        let authorization = request.headers().get(header::AUTHORIZATION);
        match self.auth.resolve(authorization, false) {
            Resolution::Granted(access) => {
                if let Some(refusal) = access.refuse_early(request.method(), request.uri().path()) {
                    return (None, Some(refusal.into_response()));
                }
                if self.in_memo {
                    return (Some(access), None);
                }
                request.extensions_mut().insert(access);
                (None, None)
            }
            Resolution::Pending => {
                if !self.in_memo {
                    request.extensions_mut().insert(auth::Pending);
                }
                (None, None)
            }
            Resolution::Refused(refusal) => (None, Some(refusal.into_response())),
        }
    }

    fn after(_: Self::Memo, _: &mut Response) {}
}

/// Resolves, on the blocking pool, the tokens [`RequireToken`] left [`auth::Pending`] (a role or
/// an issued token not cached, on a backend whose reads block), then runs the service it wraps;
/// other requests go straight through.
#[derive(Clone)]
pub(crate) struct LookupLayer(pub(crate) Auth);

impl<S> Layer<S> for LookupLayer {
    type Service = Lookups<S>;
    fn layer(&self, inner: S) -> Lookups<S> {
        Lookups {
            inner,
            auth: self.0.clone(),
        }
    }
}

/// See [`LookupLayer`].
#[derive(Clone)]
pub(crate) struct Lookups<S> {
    inner: S,
    auth: Auth,
}

impl<S> Service<Request> for Lookups<S>
where
    S: Service<Request, Response = Response> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = S::Error;
    type Future = LookupFuture<S::Future, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        if request.extensions_mut().remove::<auth::Pending>().is_none() {
            return LookupFuture::Direct {
                future: self.inner.call(request),
            };
        }
        let auth = self.auth.clone();
        // The clone made ready is the one called (tower's rule); this one stays for the next.
        let inner = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, inner);
        LookupFuture::Looked {
            future: Box::pin(async move {
                let authorization = request.headers().get(header::AUTHORIZATION).cloned();
                let resolved =
                    tokio::task::spawn_blocking(move || auth.resolve(authorization.as_ref(), true))
                        .await;
                match resolved.map(|resolution| who(resolution, &request)) {
                    Ok(Who::Known(access)) => {
                        request.extensions_mut().insert(access);
                        inner.oneshot(request).await
                    }
                    Ok(Who::Refused(refusal)) => Ok(refusal),
                    Err(_) => Ok(crate::calls::task_failed().into_response()),
                }
            }),
        }
    }
}

/// Who a request is once its token is resolved, or the answer that refuses it.
pub(crate) enum Who {
    Known(auth::Access),
    Refused(Response),
}

/// What [`Lookups`] makes of the resolution of a token [`RequireToken`] left pending: the access,
/// unless its method and route alone refuse it ([`auth::Access::refuse_early`], as the check
/// does for tokens it resolves itself), or the refusal.
pub(crate) fn who(resolution: Resolution, request: &Request) -> Who {
    match resolution {
        Resolution::Granted(access) => {
            match access.refuse_early(request.method(), request.uri().path()) {
                Some(refusal) => Who::Refused(refusal.into_response()),
                None => Who::Known(access),
            }
        }
        Resolution::Refused(refusal) => Who::Refused(refusal.into_response()),
        Resolution::Pending => Who::Refused(crate::calls::task_failed().into_response()),
    }
}

/// [`who`], resolving the pending token of a request of [`unrouted`] checks right away: on a
/// backend whose reads never block, what [`Lookups`] does on the blocking pool. (On such a
/// backend the check finds issued tokens and roles itself; only what it could not resolve
/// comes here, as it would to the route's lookup layer.)
pub(crate) fn who_now((_, token): &ApiChecks, request: &Request) -> Who {
    let authorization = request.headers().get(header::AUTHORIZATION);
    who(token.auth.resolve(authorization, true), request)
}

pin_project! {
    /// The future of [`Lookups`].
    #[project = LookupProj]
    pub(crate) enum LookupFuture<F, E> {
        Direct { #[pin] future: F },
        Looked { future: Pin<Box<dyn Future<Output = Result<Response, E>> + Send>> },
    }
}

impl<F, E> Future for LookupFuture<F, E>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            LookupProj::Direct { future } => future.poll(cx),
            LookupProj::Looked { future } => future.as_mut().poll(cx),
        }
    }
}

/// A request body only under its media type (see [`media`]): a route layer, so it runs before
/// the handler reads the body.
#[derive(Clone, Copy)]
pub(crate) struct RequireMedia(pub(crate) &'static [&'static str]);

impl Check for RequireMedia {
    type Memo = ();

    fn before(&self, request: &mut Request) -> ((), Option<Response>) {
        if media::declared_as(request, self.0) {
            ((), None)
        } else {
            ((), Some(media::unsupported(self.0)))
        }
    }

    fn after((): (), _: &mut Response) {}
}

/// Route layer: counts requests by method, route template and status, and times them (see
/// [`telemetry`]).
#[derive(Clone, Copy)]
pub(crate) struct TrackRequests {
    /// The route template of requests answered without the router, which sets no
    /// [`MatchedPath`] (unrouted.rs); `None` on the router's routes.
    unrouted: Option<&'static str>,
}

impl TrackRequests {
    /// The check on the router's routes: the route is the router's match.
    pub(crate) const ROUTED: TrackRequests = TrackRequests { unrouted: None };
}

impl Check for TrackRequests {
    type Memo = (Instant, Method, Route);

    fn before(&self, request: &mut Request) -> (Self::Memo, Option<Response>) {
        let route = match (self.unrouted, request.extensions().get::<MatchedPath>()) {
            (Some(template), _) => Route::Template(template),
            (None, Some(matched)) => Route::Matched(matched.clone()),
            (None, None) => Route::Template("unmatched"),
        };
        ((Instant::now(), request.method().clone(), route), None)
    }

    fn after((started, method, route): Self::Memo, response: &mut Response) {
        let route = route.as_str();
        telemetry::record_request(
            method.as_str(),
            route,
            response.status().as_str(),
            started.elapsed(),
        );
    }
}

/// The route a request is counted under: [`TrackRequests`]'s label.
pub(crate) enum Route {
    /// The router's match.
    Matched(MatchedPath),
    /// A template given to [`TrackRequests`], or `unmatched`.
    Template(&'static str),
}

impl Route {
    pub(crate) fn as_str(&self) -> &str {
        match self {
            Route::Matched(matched) => matched.as_str(),
            Route::Template(template) => template,
        }
    }
}

/// The request timeout: 408 with an empty body when the wrapped service has not answered
/// within the limit of the call, as tower-http's `TimeoutLayer::with_status_code` answers. Its
/// timer is armed only if the service has not answered at the first poll: a get on the file
/// backend answers there, and arming a timer (tower-http arms it before the first poll) takes
/// the runtime's timer wheel lock and often wakes the thread that drives it. The deadline is
/// the same, counted from the call. (At the deadline itself an answer that is ready wins over
/// the 408; tower-http, polling its timer first, answers 408.)
///
/// A recursive delete (`DELETE ...?recursive=true`) has no deadline: it takes as long as its
/// batches take, like a subtree move, which is routed outside this layer.
#[derive(Clone, Copy)]
pub(crate) struct TimeoutLayer(pub(crate) std::time::Duration);

impl<S> Layer<S> for TimeoutLayer {
    type Service = Timeout<S>;
    fn layer(&self, inner: S) -> Timeout<S> {
        Timeout {
            inner,
            limit: self.0,
        }
    }
}

/// See [`TimeoutLayer`].
#[derive(Clone)]
pub(crate) struct Timeout<S> {
    inner: S,
    limit: std::time::Duration,
}

impl<S> Service<Request> for Timeout<S>
where
    S: Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = TimeoutFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let unlimited = request.method() == axum::http::Method::DELETE
            && request
                .uri()
                .query()
                .is_some_and(|q| q.split('&').any(|pair| pair == "recursive=true"));
        let limit = (!unlimited).then_some(self.limit);
        within(limit, self.inner.call(request))
    }
}

/// `future`, answered with the 408 of [`TimeoutLayer`] when it takes longer than `limit` from
/// now (`None`: no limit). The timeout of the route layer, and of the puts answered without the
/// router (unrouted/put.rs).
pub(crate) fn within<F>(limit: Option<std::time::Duration>, future: F) -> TimeoutFuture<F> {
    TimeoutFuture {
        inner: future,
        deadline: limit.map(|limit| tokio::time::Instant::now() + limit),
        timer: None,
    }
}

pin_project! {
    /// The future of [`Timeout`].
    pub(crate) struct TimeoutFuture<F> {
        #[pin]
        inner: F,
        deadline: Option<tokio::time::Instant>,
        #[pin]
        timer: Option<tokio::time::Sleep>,
    }
}

impl<F, E> Future for TimeoutFuture<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        if let Poll::Ready(answer) = this.inner.poll(cx) {
            return Poll::Ready(answer);
        }
        let Some(deadline) = *this.deadline else {
            return Poll::Pending;
        };
        if this.timer.is_none() {
            this.timer.set(Some(tokio::time::sleep_until(deadline)));
        }
        if let Some(timer) = this.timer.as_pin_mut() {
            ready!(timer.poll(cx));
        }
        let mut response = Response::new(axum::body::Body::empty());
        *response.status_mut() = StatusCode::REQUEST_TIMEOUT;
        Poll::Ready(Ok(response))
    }
}

/// The `x-request-id` header.
pub(crate) const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Request ids and the request log: a request without an `x-request-id` gets a new one
/// ([`telemetry::new_request_id`]), and the answer carries the request's unless it has its own.
/// When the answer is a 5xx, one `error` event names the request (id, method, URI), its status
/// and the error ([`ServerFailure`]); with `RUST_LOG=pathdb_server::access=debug` every request
/// gets a `debug` line with its latency.
///
/// This replaces tower-http's `TraceLayer` with a span per request: the span's fields were
/// formatted into a new string for every request (about 5,000 instructions of a get's 62,000,
/// issue 23), yet few events ever happened inside it: store calls run on the blocking pool,
/// which a span does not follow. (The ids were tower-http's `SetRequestIdLayer` and
/// `PropagateRequestIdLayer` before that; their `RequestId` extensions are left out: nothing
/// reads them.)
#[derive(Clone, Copy)]
pub(crate) struct RequestIdLayer;

impl<S> Layer<S> for RequestIdLayer {
    type Service = RequestIds<S>;
    fn layer(&self, inner: S) -> RequestIds<S> {
        RequestIds { inner }
    }
}

/// See [`RequestIdLayer`].
#[derive(Clone)]
pub(crate) struct RequestIds<S> {
    inner: S,
}

/// The target of the per-request `debug` lines.
const ACCESS_LOG: &str = "pathdb_server::access";

impl<S, B, ResB> Service<axum::http::Request<B>> for RequestIds<S>
where
    S: Service<axum::http::Request<B>, Response = axum::http::Response<ResB>>,
{
    type Response = axum::http::Response<ResB>;
    type Error = S::Error;
    type Future = RequestIdFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: axum::http::Request<B>) -> Self::Future {
        // A new id goes on the answer only: nothing inside reads the request's.
        let id = match request.headers().get(&REQUEST_ID) {
            Some(id) => Some(id.clone()),
            None => telemetry::new_request_id(),
        };
        let started =
            tracing::enabled!(target: ACCESS_LOG, tracing::Level::DEBUG).then(Instant::now);
        RequestIdFuture {
            method: request.method().clone(),
            uri: request.uri().clone(),
            inner: self.inner.call(request),
            id,
            started,
        }
    }
}

pin_project! {
    /// See [`RequestIdLayer`].
    pub(crate) struct RequestIdFuture<F> {
        #[pin]
        inner: F,
        id: Option<HeaderValue>,
        method: Method,
        uri: axum::http::Uri,
        started: Option<Instant>,
    }
}

impl<F, ResB, E> Future for RequestIdFuture<F>
where
    F: Future<Output = Result<axum::http::Response<ResB>, E>>,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut response = ready!(this.inner.poll(cx))?;
        let id = match response.headers().get(&REQUEST_ID) {
            Some(own) => Some(own.clone()),
            None => {
                let id = this.id.take();
                if let Some(id) = &id {
                    response.headers_mut().insert(REQUEST_ID, id.clone());
                }
                id
            }
        };
        let request_id = id.as_ref().and_then(|v| v.to_str().ok()).unwrap_or("-");
        let status = response.status();
        if status.is_server_error() {
            let failure = response.extensions().get::<ServerFailure>();
            tracing::error!(
                request_id,
                method = %this.method,
                uri = %this.uri,
                status = status.as_u16(),
                code = failure.map_or("", |f| f.code),
                error = failure.map_or("", |f| f.message.as_str()),
                "request failed"
            );
        }
        if let Some(started) = this.started {
            tracing::debug!(
                target: ACCESS_LOG,
                request_id,
                method = %this.method,
                uri = %this.uri,
                status = status.as_u16(),
                micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
                "request"
            );
        }
        Poll::Ready(Ok(response))
    }
}

/// CORS: tower-http's `Cors` for the requests it has work for, and its two fixed headers, added
/// here, for the rest.
///
/// tower-http's `Cors` builds a header map and formats its `Vary` value for every request, and
/// its configuration (with vectors) is cloned with the service stack, which hyper and the router
/// clone per request. A request with no `Origin` that is not an `OPTIONS` preflight (every API
/// client but a browser) gets only [`origin::NO_ORIGIN_VARY`] and [`origin::NO_ORIGIN_EXPOSE`]
/// from it; a test checks that against tower-http's answer. Everything else goes through
/// tower-http, which is kept behind an `Arc` and cloned only then.
#[derive(Clone)]
pub(crate) struct CorsLayer(pub(crate) tower_http::cors::CorsLayer);

impl<S: Clone> Layer<S> for CorsLayer {
    type Service = Cors<S>;
    fn layer(&self, inner: S) -> Cors<S> {
        Cors {
            cors: Arc::new(self.0.layer(inner.clone())),
            inner,
        }
    }
}

/// See [`CorsLayer`].
#[derive(Clone)]
pub(crate) struct Cors<S> {
    cors: Arc<tower_http::cors::Cors<S>>,
    inner: S,
}

impl<S> Service<Request> for Cors<S>
where
    S: Service<Request, Response = Response> + Clone,
{
    type Response = Response;
    type Error = S::Error;
    type Future = CorsFuture<S::Future, Oneshot<tower_http::cors::Cors<S>, Request>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        if request.method() == Method::OPTIONS || request.headers().contains_key(header::ORIGIN) {
            // A clone of its own, made ready before the call (`oneshot`); the readiness of
            // `inner`, unused, reserves nothing (the router is always ready).
            CorsFuture::Cors {
                future: tower_http::cors::Cors::clone(&self.cors).oneshot(request),
            }
        } else {
            CorsFuture::Plain {
                future: self.inner.call(request),
            }
        }
    }
}

pin_project! {
    /// The future of [`Cors`].
    #[project = CorsProj]
    pub(crate) enum CorsFuture<F, C> {
        Plain { #[pin] future: F },
        Cors { #[pin] future: C },
    }
}

impl<F, C, E> Future for CorsFuture<F, C>
where
    F: Future<Output = Result<Response, E>>,
    C: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            CorsProj::Cors { future } => future.poll(cx),
            CorsProj::Plain { future } => {
                let mut response = ready!(future.poll(cx))?;
                // As tower-http adds them: `Vary` after any the response has, the other
                // replacing any the response has.
                let headers = response.headers_mut();
                headers.append(
                    header::VARY,
                    HeaderValue::from_static(origin::NO_ORIGIN_VARY),
                );
                headers.insert(
                    header::ACCESS_CONTROL_EXPOSE_HEADERS,
                    HeaderValue::from_static(origin::NO_ORIGIN_EXPOSE),
                );
                Poll::Ready(Ok(response))
            }
        }
    }
}

#[cfg(test)]
mod test;
