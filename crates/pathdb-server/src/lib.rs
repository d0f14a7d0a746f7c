//! PathDB's HTTP/JSON API over a [`Store`]: items, listings, history, transactions, export and
//! import under `/v1`, an OpenAPI 3.1 document generated from the handlers at `/openapi.json`,
//! bearer-token auth with read and read-write scopes, graceful shutdown, and a web console at
//! `/ui/` ([`ui`]) that browses and edits the data through the same API.
//!
//! Entry points: [`router`] (for tests: drive it with `tower::ServiceExt::oneshot`) and
//! [`serve`] (a listener and a shutdown future).

#![deny(missing_docs)]

pub mod allocator;
pub mod auth;
mod backups;
pub use backups::schedule_backups;
mod browse;
mod calls;
mod changes;
pub mod config;
mod connection;
mod error;
mod eviction;
mod extract;
mod gate;
mod handlers;
mod import;
pub mod jwt;
mod media;
mod namespaces;
pub mod origin;
mod precondition;
mod roles;
mod slots;
mod telemetry;
mod timeouts;
pub mod ui;
mod unrouted;
mod wire;

pub use auth::{Access, Auth, ConfiguredToken, REVALIDATE, Scope};
pub use changes::{ChangeStreams, DEFAULT_MAX_CHANGE_STREAMS};
pub use config::{ConfigError, DEFAULT_ADDR, ServerConfig, TokenConfig};
pub use connection::{
    ConnectionLimits, DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT, MAX_DEFAULT_CONNECTIONS,
    connections_within, default_max_connections, open_file_limit, raise_open_file_limit,
    reserved_files, serve_with,
};
pub use error::{ApiError, ErrorBody, ErrorDetail};
pub use import::{DEFAULT_MAX_IMPORTS, Imports};
pub use origin::{AllowedOrigins, InvalidOrigin};

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::handler::Handler;
use axum::http::StatusCode;
use axum::routing::{get, post};
use gate::{CheckLayer, Edge, RequestIdLayer, RequireMedia, TrackRequests};
use pathdb_store::Store;
use pathdb_store::backend::Backend;
use std::future::Future;
use std::time::Duration;
use tower::ServiceBuilder;
use utoipa::OpenApi;
use wire::TaggedUnions;

/// Largest request body for item requests: an item is at most 400 KB.
pub const MAX_BODY_BYTES: usize = 1 << 20;
/// Largest import body.
pub const MAX_IMPORT_BYTES: usize = 256 << 20;
/// Largest total size of a request's headers.
pub const MAX_HEADER_BYTES: usize = 16 << 10;
/// How long one request may take before it is answered with 408 (for an import: how long its
/// body may go without data).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// What every handler shares.
pub struct AppState<B: Backend> {
    /// The data.
    pub store: Store<B>,
    /// The cap on change streams and long polls.
    pub change_streams: ChangeStreams,
    /// The cap on imports running at once.
    pub imports: Imports,
    /// The continuous archive, when `serve --archive` runs one (`/v1/archive`).
    pub archive: Option<pathdb_store::backup::Archive>,
}

impl<B: Backend> AppState<B> {
    /// The state for `store`, with the default caps on change streams
    /// ([`DEFAULT_MAX_CHANGE_STREAMS`]) and imports ([`DEFAULT_MAX_IMPORTS`]).
    pub fn new(store: Store<B>) -> AppState<B> {
        AppState {
            store,
            change_streams: ChangeStreams::default(),
            imports: Imports::default(),
            archive: None,
        }
    }
}

impl<B: Backend> Clone for AppState<B> {
    fn clone(&self) -> Self {
        AppState {
            store: self.store.clone(),
            change_streams: self.change_streams.clone(),
            imports: self.imports.clone(),
            archive: self.archive.clone(),
        }
    }
}

/// The OpenAPI document, generated from the handlers' annotations.
#[derive(OpenApi)]
#[openapi(
    info(title = "PathDB", description = "A document database addressed by typed key paths that sort the way people mean them."),
    paths(
        handlers::get_item, handlers::put_item, handlers::patch_item, handlers::delete_item, handlers::move_subtree,
        handlers::copy_subtree, handlers::get_many, handlers::list,
        handlers::history, handlers::transact, handlers::export, handlers::import, handlers::healthz,
        handlers::readyz, handlers::metrics, browse::groups, browse::explain_key, browse::session,
        changes::changes, changes::create_item, namespaces::list, namespaces::get, namespaces::put,
        namespaces::delete, namespaces::violations, namespaces::retry_alias,
        namespaces::versions, namespaces::version,
        roles::list_roles, roles::get_role, roles::put_role, roles::delete_role,
        roles::create_token, roles::list_tokens, roles::get_token, roles::revoke_token,
        backups::backup, backups::archive
    ),
    modifiers(&BearerAuth, &TaggedUnions),
    tags((name = "items", description = "Items, listings, history, transactions"),
         (name = "transfer", description = "Export and import as JSON lines"),
         (name = "namespaces", description = "Namespace definitions: a JSON Schema checked on every write, history"),
         (name = "access", description = "Roles (path rules) and issued tokens: docs/access.md"),
         (name = "backups", description = "Online backups and the continuous archive: docs/backups.md"),
         (name = "meta", description = "Liveness, readiness and metrics"))
)]
pub struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The OpenAPI document as JSON.
pub fn openapi_json() -> String {
    ApiDoc::openapi()
        .to_pretty_json()
        .unwrap_or_else(|_| "{}".to_owned())
}

/// Unknown routes answer in the API's error shape.
async fn not_found() -> ApiError {
    ApiError::not_found("no such endpoint")
}

/// A known route with another method: 405 in the API's error shape (axum adds `Allow`).
async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this endpoint does not take this method",
    )
}

/// The application with no web origin allowed but the server's own, and the console; see
/// [`router_with`].
pub fn router<B: Backend>(state: AppState<B>, auth: Auth) -> App<B> {
    router_with(state, auth, AllowedOrigins::default())
}

/// The application: `/v1` routes and `/metrics` behind auth, `/openapi.json`, `/healthz` and
/// `/readyz` open; requests from web pages of other origins than `origins` and the server's own
/// are refused (and, without tokens, requests to a `Host` that is not loopback).
///
/// The first call installs the process-wide Prometheus recorder of the `metrics` facade, which
/// `/metrics` renders.
pub fn router_with<B: Backend>(state: AppState<B>, auth: Auth, origins: AllowedOrigins) -> App<B> {
    app(state, auth, origins, Console::Served)
}

/// Whether [`app`] serves the web console.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Console {
    /// At `/ui/`, with `/` redirecting there (the default).
    Served,
    /// Not at all (`pathdb serve --no-ui`): `/` and `/ui/` are 404.
    Off,
}

/// [`router_with`], with the web console on or off. The console's files need no token (they
/// hold no data; the page asks for one when the API answers 401) but pass the same origin and
/// Host checks as the API.
pub fn app<B: Backend>(
    state: AppState<B>,
    auth: Auth,
    origins: AllowedOrigins,
    console: Console,
) -> App<B> {
    let policy = origin::OriginPolicy {
        origins: origins.clone(),
        local_only: !auth.enabled(),
    };
    // Each route's checks are one route layer: every `Router::layer` or `route_layer` wraps
    // each route on its own, and per request the router clones a route's layers (one box each,
    // nested) and boxes each one's future. On the API, the list of checks in
    // `gate::ApiChecks` (request metrics, then the bearer token); elsewhere the request
    // metrics. (Route layers leave the fallbacks alone: 404 and 405 are neither counted nor
    // behind auth, as when auth was a `Router::layer`, since the 405 fallback set below
    // replaces the default ones the layer wrapped.)
    let counted = || CheckLayer(TrackRequests::ROUTED);
    // Roles and issued tokens are read from this app's store.
    let auth = auth.with_source(std::sync::Arc::new(state.store.clone()));
    let api_checks = gate::api_checks(auth.clone());
    // For the gets and puts answered before the router (unrouted.rs): the same checks.
    let unrouted_state = state.clone();
    let unrouted_checks = gate::unrouted(&api_checks, unrouted::ITEMS_ROUTE);
    let guarded = ServiceBuilder::new()
        .layer(CheckLayer(api_checks))
        .layer(gate::LookupLayer(auth.clone()));
    let json = || CheckLayer(RequireMedia(media::JSON));
    let items = Router::new()
        .route(
            unrouted::ITEMS_ROUTE,
            get(handlers::get_item::<B>)
                .put(handlers::put_item::<B>.layer(json()))
                .post(changes::create_item::<B>.layer(json()))
                .patch(handlers::patch_item::<B>.layer(CheckLayer(RequireMedia(media::PATCH))))
                .delete(handlers::delete_item::<B>),
        )
        .route("/v1/get", post(handlers::get_many::<B>).route_layer(json()))
        .route("/v1/list/{*prefix}", get(handlers::list::<B>))
        .route("/v1/history/{*path}", get(handlers::history::<B>))
        .route(
            "/v1/transact",
            post(handlers::transact::<B>).route_layer(json()),
        )
        .route("/v1/export", get(handlers::export::<B>))
        .route("/v1/groups", get(browse::groups::<B>))
        .route("/v1/keys/{*path}", get(browse::explain_key))
        .route("/v1/session", get(browse::session))
        .route("/v1/namespaces", get(namespaces::list::<B>))
        .route_layer(
            guarded
                .clone()
                .layer(gate::TimeoutLayer(REQUEST_TIMEOUT))
                .layer(DefaultBodyLimit::max(MAX_BODY_BYTES)),
        );
    // No timeout on the whole import: it allows REQUEST_TIMEOUT between chunks of its body, and
    // then takes as long as its batches take (its limit is MAX_IMPORT_BYTES, checked as it
    // reads). The media type is checked around the import handler, not in it: see `media`.
    let import = Router::new()
        .route(
            "/v1/import",
            post(handlers::import::<B>).route_layer(CheckLayer(RequireMedia(media::JSON_LINES))),
        )
        .route_layer(guarded.clone());
    // A subtree move or copy takes as long as its batches take (a recursive delete too: the
    // timeout lets it through, gate.rs).
    let subtree = Router::new()
        .route("/v1/move", post(handlers::move_subtree::<B>))
        .route("/v1/copy", post(handlers::copy_subtree::<B>))
        .route_layer(
            guarded
                .clone()
                .layer(json())
                .layer(DefaultBodyLimit::max(MAX_BODY_BYTES)),
        );
    // A definition's dry run reads the whole database, and a page of its violations a bounded
    // share of it, which on a slow backend can outlast the request timeout.
    let scans = Router::new()
        .route(
            "/v1/namespaces/{namespace}",
            get(namespaces::get::<B>)
                .put(namespaces::put::<B>.layer(json()))
                .delete(namespaces::delete::<B>),
        )
        .route(
            "/v1/namespaces/{namespace}/violations",
            get(namespaces::violations::<B>),
        )
        .route(
            "/v1/namespaces/{namespace}/versions",
            get(namespaces::versions::<B>),
        )
        .route(
            "/v1/namespaces/{namespace}/versions/{version}",
            get(namespaces::version::<B>),
        )
        .route(
            "/v1/namespaces/{namespace}/aliases/retry",
            post(namespaces::retry_alias::<B>.layer(json())),
        )
        .route_layer(guarded.clone().layer(DefaultBodyLimit::max(MAX_BODY_BYTES)));
    // A backup streams for as long as the copy takes: no request timeout.
    let backups = Router::new()
        .route("/v1/backup", get(backups::backup::<B>))
        .route("/v1/archive", get(backups::archive::<B>))
        .route_layer(guarded.clone());
    // Roles and tokens: their changes make this server's token caches forget what changed.
    let access = Router::new()
        .route("/v1/roles", get(roles::list_roles::<B>))
        .route(
            "/v1/roles/{name}",
            get(roles::get_role::<B>)
                .put(roles::put_role::<B>.layer(json()))
                .delete(roles::delete_role::<B>),
        )
        .route(
            "/v1/tokens",
            get(roles::list_tokens::<B>).post(roles::create_token::<B>.layer(json())),
        )
        .route(
            "/v1/tokens/{id}",
            get(roles::get_token::<B>).delete(roles::revoke_token::<B>),
        )
        .route_layer(
            guarded
                .clone()
                .layer(axum::Extension(auth.clone()))
                .layer(gate::TimeoutLayer(REQUEST_TIMEOUT))
                .layer(DefaultBodyLimit::max(MAX_BODY_BYTES)),
        );
    // Long polls (up to 60 s) and event streams outlive the request timeout.
    // They ask about the token again while they stay open (`auth`: a revocation ends them).
    let feed = Router::new()
        .route("/v1/changes/{*prefix}", get(changes::changes::<B>))
        .route_layer(guarded.clone().layer(axum::Extension(auth)));
    let api = items
        .merge(subtree)
        .merge(import)
        .merge(scans)
        .merge(access)
        .merge(backups)
        .merge(feed)
        .route("/metrics", get(handlers::metrics).route_layer(guarded))
        .with_state(state.clone());
    let probes = Router::new()
        .route("/readyz", get(handlers::readyz::<B>))
        .with_state(state);
    // Installed before the first request, so every request and commit is counted.
    let _ = telemetry::prometheus();
    let console = match console {
        Console::Served => ui::router(),
        Console::Off => Router::new(),
    };
    let routes = Router::new()
        .merge(console)
        .route(
            "/openapi.json",
            get(|| async {
                (
                    [(axum::http::header::CONTENT_TYPE, "application/json")],
                    openapi_json(),
                )
            }),
        )
        .route("/healthz", get(handlers::healthz))
        .merge(probes)
        .route_layer(counted())
        .merge(api)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed);
    // What every request passes, outermost first: a request id and the request log (5xx
    // answers, and every request at debug level), the header-size, Host and Origin checks and
    // `Connection: close` after a refusal (`gate::Edge`), then CORS; then the gets and puts of
    // one item that need no router (unrouted.rs) are answered, and the rest routed. The checks
    // wrap the router once ([`App`]), rather than as a `Router::layer`, which would wrap every
    // route (and the fallbacks) on its own, boxing once per layer per request.
    let edge = ServiceBuilder::new()
        .layer(RequestIdLayer)
        .layer(CheckLayer(Edge { policy }))
        .layer(gate::CorsLayer(origins.cors_layer()));
    App(edge.service(unrouted::Unrouted {
        routes,
        state: unrouted_state,
        checks: unrouted_checks,
    }))
}

/// The checks every request passes around the gets and puts of one item and the router (see
/// [`app`]).
type Stack<B> = gate::RequestIds<gate::Checked<gate::Cors<unrouted::Unrouted<B>>, Edge>>;

/// PathDB's HTTP application ([`app`]): a tower service that takes requests with any body
/// (hyper's, or axum's in tests driven with `tower::ServiceExt::oneshot`). Cloning it is cheap.
pub struct App<B: Backend>(Stack<B>);

impl<B: Backend> Clone for App<B> {
    fn clone(&self) -> Self {
        App(self.0.clone())
    }
}

impl<B, ReqBody> tower::Service<axum::http::Request<ReqBody>> for App<B>
where
    B: Backend,
    ReqBody: axum::body::HttpBody<Data = axum::body::Bytes> + Send + 'static,
    ReqBody::Error: Into<axum::BoxError>,
{
    type Response = axum::response::Response;
    type Error = std::convert::Infallible;
    type Future = AppFuture<B>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: axum::http::Request<ReqBody>) -> AppFuture<B> {
        AppFuture {
            inner: self.0.call(request.map(axum::body::Body::new)),
        }
    }
}

pin_project_lite::pin_project! {
    /// The future of [`App`].
    pub struct AppFuture<B: Backend> {
        #[pin]
        inner: <Stack<B> as tower::Service<axum::extract::Request>>::Future,
    }
}

impl<B: Backend> Future for AppFuture<B> {
    type Output = Result<axum::response::Response, std::convert::Infallible>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        self.project().inner.poll(cx)
    }
}

/// Serves until `shutdown` completes, then stops accepting, finishes in-flight requests and
/// returns, within the default [`ConnectionLimits`] (see [`serve_with`]). Dropping the state
/// afterwards lets the store finish its queued commits.
///
/// # Errors
/// The listener fails.
pub async fn serve<B: Backend>(
    listener: tokio::net::TcpListener,
    app: App<B>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(listener, app, shutdown, ConnectionLimits::default()).await
}

/// Finishes, on a thread of its own, the subtree jobs an earlier process left part-way (a crash
/// in the middle of a large move or delete): each runs to the end as its request would have.
/// Failures are logged; the job stays, for the next start or the same request to finish.
pub fn resume_subtree_jobs<B: Backend>(store: Store<B>) {
    let resume = move || {
        let jobs = match store.subtree_jobs() {
            Ok(jobs) => jobs,
            Err(e) => return tracing::warn!(error = %e, "could not read unfinished subtree jobs"),
        };
        for pending in jobs {
            let job = &pending.job;
            let to = job.to.as_ref().map(ToString::to_string).unwrap_or_default();
            tracing::info!(op = job.op.as_str(), from = %job.from, %to, done = pending.done,
                "resuming an unfinished subtree job");
            match store.run_subtree_job(job, &mut |_| {}) {
                Ok(done) => tracing::info!(op = job.op.as_str(), from = %job.from, %to, done,
                    "finished the subtree job"),
                Err(e) => tracing::warn!(op = job.op.as_str(), from = %job.from, %to, error = %e,
                    "the subtree job failed; it stays, to finish on the next start or request"),
            }
        }
    };
    if let Err(e) = std::thread::Builder::new()
        .name("pathdb-resume".into())
        .spawn(resume)
    {
        tracing::warn!(error = %e, "could not start resuming subtree jobs");
    }
}

/// Ends the change feed's event streams and answers its long polls now, in every app of this
/// process: they never end by themselves, so a graceful shutdown (see [`serve`]) would wait for
/// them. Call it when the shutdown signal arrives. Streams opened afterwards are not affected.
pub fn close_change_streams() {
    changes::SHUTDOWN.send_modify(|generation| *generation += 1);
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM. The handlers are installed by this call, not when
/// the future is first polled: call it before the server says it listens, so that a signal sent
/// as soon as it does is never met by the default action (an exit without the clean shutdown).
/// Call it inside the runtime.
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut terminate = signal(SignalKind::terminate()).ok();
        let mut interrupt = signal(SignalKind::interrupt()).ok();
        async move {
            let terminate = async {
                match terminate.as_mut() {
                    Some(s) => drop(s.recv().await),
                    None => std::future::pending::<()>().await,
                }
            };
            let interrupt = async {
                match interrupt.as_mut() {
                    Some(s) => drop(s.recv().await),
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                () = terminate => {},
                () = interrupt => {},
            }
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
    }
}
