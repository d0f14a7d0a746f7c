//! The change feed over HTTP (`GET /v1/changes/{prefix}`: JSON pages, long polls and Server-Sent
//! Events) and creates with generated ids (`POST /v1/items/{parent}/{namespace}?id=...`).
//! docs/changes.md has the semantics.

use crate::AppState;
use crate::auth::{Access, Auth, REVALIDATE, Resolution};
use crate::calls::{body_value, create_target, item_response, page_limit, put_options, store_call};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Body, Query, Speaks, UrlPath};
use crate::slots::Slots;
use crate::wire::{ChangeOut, ChangesOut, ChangesQuery, CreateQuery};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use pathdb_keys::KeyPath;
use pathdb_store::Op;
use pathdb_store::backend::Backend;
use pathdb_store::{
    ChangePage, ChangeToken, DEFAULT_CHANGES_LIMIT, Filter, IdKind, MAX_CHANGES_LIMIT,
    MAX_CHANGES_WAIT, Parent, Readable, Store,
};
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::Instant;

/// Bumped by [`crate::close_change_streams`] at shutdown: event streams end and long polls answer
/// at once, so a graceful shutdown does not wait for them. A counter, not a flag, so that a
/// server started later in the same process is not affected.
pub(crate) static SHUTDOWN: std::sync::LazyLock<tokio::sync::watch::Sender<u64>> =
    std::sync::LazyLock::new(|| tokio::sync::watch::Sender::new(0));

/// How long an idle event stream waits before reading again when nothing wakes it (a backend
/// other processes write is read every `changes_poll_interval` instead).
const STREAM_IDLE: Duration = Duration::from_secs(15);
/// The `Retry-After` of a stream refused at the cap, in seconds: long polls end within a minute
/// and clients come and go, so a slot is likely free by then.
const STREAM_RETRY_AFTER: u64 = 5;
/// The cap of [`ChangeStreams::default`] (`pathdb serve` sizes its own from its connection cap).
pub const DEFAULT_MAX_CHANGE_STREAMS: usize = 1024;

/// The cap on the change feed's event streams and long polls open at once (issue 22). Each
/// holds a connection, a task and a listener that its group's commits wake; beyond the cap, a
/// request that would open one answers 503 `unavailable` with `Retry-After`, so followers
/// cannot crowd out writes and probes. Clones share the cap.
#[derive(Clone, Debug)]
pub struct ChangeStreams {
    slots: Slots,
    /// [`SHUTDOWN`]'s generation when this server was made: a later one means its shutdown began.
    generation: u64,
}

impl ChangeStreams {
    /// At most `max` streams and long polls at once (at least 1).
    pub fn new(max: usize) -> ChangeStreams {
        ChangeStreams {
            slots: Slots::new(max),
            generation: *SHUTDOWN.borrow(),
        }
    }

    /// The cap.
    pub fn max(&self) -> usize {
        self.slots.max()
    }

    /// A slot for one stream or long poll, held until it ends; or the 503 that refuses it.
    fn admit(&self) -> Result<StreamSlot, ApiError> {
        let permit = self.slots.take(STREAM_RETRY_AFTER, |max| {
            format!(
                "the server already follows {max} change streams and long polls, its limit; retry later"
            )
        });
        match permit {
            Ok(permit) => {
                metrics::gauge!("pathdb_change_streams_open").increment(1.0);
                Ok(StreamSlot {
                    _permit: permit,
                    generation: self.generation,
                })
            }
            Err(refused) => {
                metrics::counter!("pathdb_change_streams_refused_total").increment(1);
                Err(refused)
            }
        }
    }
}

impl Default for ChangeStreams {
    fn default() -> ChangeStreams {
        ChangeStreams::new(DEFAULT_MAX_CHANGE_STREAMS)
    }
}

/// An open stream's or long poll's place under the cap, given back when dropped.
struct StreamSlot {
    _permit: OwnedSemaphorePermit,
    generation: u64,
}

impl StreamSlot {
    /// Completes once this server's shutdown has begun, at once if it already has: a long poll
    /// or stream that arrives on a kept-alive connection just after the signal must not wait out
    /// its time (a receiver made after a change never sees that change).
    async fn closing(&self) {
        let generation = self.generation;
        let mut shutdown = SHUTDOWN.subscribe();
        let _ = shutdown.wait_for(|now| *now != generation).await;
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        metrics::gauge!("pathdb_change_streams_open").decrement(1.0);
    }
}

/// Changes under a prefix after a token: the current position without `since`; a long poll with
/// `wait`; Server-Sent Events with `Accept: text/event-stream` (resumable with `Last-Event-ID`).
/// Event streams and long polls are capped (`pathdb serve --max-streams`): beyond the cap, 503
/// with `Retry-After`.
#[utoipa::path(get, path = "/v1/changes/{prefix}", tag = "items", operation_id = "getChanges",
    params(("prefix" = String, Path, description = "Key path of the subtree to follow (at least a group), without its leading '/'", example = "user-7"), ChangesQuery,
        ("Last-Event-ID" = Option<String>, Header, description = "With Accept: text/event-stream: resume after this event (a change token)")),
    responses(
        (status = 200, description = "Changes after `since` in commit order, and the token to continue from; \
            with `Accept: text/event-stream`, a stream of events, one change each, the event id being the token after it",
            content((ChangesOut = "application/json"), (String = "text/event-stream"))),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, description = "A web origin or Host the server does not allow", body = ErrorBody),
        (status = 410, description = "The token's changes are no longer kept (`token_expired`): list again and follow from the listing's changes_token", body = ErrorBody),
        (status = 413, body = ErrorBody),
        (status = 503, description = "The storage is unavailable, or the server follows as many streams and long polls as it allows (`unavailable`, with `Retry-After`)", body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn changes<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    axum::Extension(auth): axum::Extension<Auth>,
    access: Access,
    UrlPath(prefix): UrlPath,
    Query(q): Query<ChangesQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    // A feed shows what will be written there: only a subtree the token may read entirely.
    access.need_subtree(Op::Read, &prefix)?;
    // Asked again while the feed stays open: a token revoked, expired or narrowed ends it.
    let mut reader = Reader {
        auth,
        authorization: headers.get(axum::http::header::AUTHORIZATION).cloned(),
        access,
        checked: Instant::now(),
    };
    let limit = page_limit(q.limit, DEFAULT_CHANGES_LIMIT, MAX_CHANGES_LIMIT)?;
    let wait = Duration::from_secs(q.wait.unwrap_or(0));
    if wait > MAX_CHANGES_WAIT {
        return Err(ApiError::bad_request(format!(
            "wait must be 0..={} seconds",
            MAX_CHANGES_WAIT.as_secs()
        )));
    }
    let mut since = q
        .since
        .as_deref()
        .map(str::parse::<ChangeToken>)
        .transpose()?;
    let filter = match q.filter.as_deref() {
        Some(source) => Some(FeedFilter {
            filter: Filter::compile(source)?,
            readable: reader.access.readable(),
        }),
        None => None,
    };
    let speaks = Speaks::of(&headers)?;
    if !speaks.0.is_empty() {
        let (store, versions) = (state.store.clone(), speaks.0.clone());
        store_call("changes", move || Ok(store.check_versions(&versions)?)).await?;
    }
    let filter = FeedView { filter, speaks };
    if wants_event_stream(&headers) {
        if let Some(last) = headers.get("last-event-id") {
            let text = last
                .to_str()
                .map_err(|_| ApiError::bad_request("Last-Event-ID is not text"))?;
            since = Some(text.parse()?);
        }
        let slot = state.change_streams.admit()?;
        return event_stream(state.store, reader, prefix, since, limit, filter, slot).await;
    }
    let Some(mut since) = since else {
        let store = state.store.clone();
        let page = store_call("changes", move || Ok(store.changes(&prefix, None, limit)?)).await?;
        need_changes(&reader.access, &page)?;
        return Ok(axum::Json(ChangesOut::from(page)).into_response());
    };
    // Held until the answer: a poll that may wait is one of the streams.
    let slot = if wait.is_zero() {
        None
    } else {
        Some(state.change_streams.admit()?)
    };
    let deadline = Instant::now() + wait;
    loop {
        // Listen before reading: a commit between the read and the wait still wakes it. Only
        // commits of the prefix's group do (the feed reads no other).
        let listener = state.store.commit_listener(&prefix);
        reader.again(&prefix).await?;
        let page = read(&state.store, &prefix, since, limit, filter.clone()).await?;
        need_changes(&reader.access, &page)?;
        let now = Instant::now();
        if !page.changes.is_empty() || now >= deadline {
            return Ok(axum::Json(ChangesOut::from(page)).into_response());
        }
        if page.next_token != since {
            // Read past entries outside the prefix: more may be there already.
            since = page.next_token;
            continue;
        }
        let wake = state
            .store
            .changes_poll_interval()
            .map_or(deadline, |p| deadline.min(now + p));
        tokio::select! {
            _ = tokio::time::timeout_at(wake, listener) => {}
            () = async {
                match &slot {
                    Some(slot) => slot.closing().await,
                    // Without a wait the loop answered above: nothing waits here.
                    None => std::future::pending().await,
                }
            } => {
                return Ok(axum::Json(ChangesOut::from(ChangePage {
                    changes: Vec::new(),
                    next_token: since,
                }))
                .into_response());
            }
        }
    }
}

/// Who follows a feed, asked again every [`REVALIDATE`] while it stays open (a long poll, an
/// event stream): the token resolved anew, so a revocation, an expiry or a narrowed role ends
/// the feed within that bound, as it refuses the next request.
struct Reader {
    auth: Auth,
    authorization: Option<axum::http::HeaderValue>,
    access: Access,
    checked: Instant,
}

impl Reader {
    /// The error that ends the feed, if its token no longer reads all of `prefix`.
    async fn again(&mut self, prefix: &KeyPath) -> Result<(), ApiError> {
        if self.checked.elapsed() < REVALIDATE {
            return Ok(());
        }
        let (auth, authorization) = (self.auth.clone(), self.authorization.clone());
        let resolved =
            tokio::task::spawn_blocking(move || auth.resolve(authorization.as_ref(), true))
                .await
                .map_err(|_| crate::calls::task_failed())?;
        self.access = match resolved {
            Resolution::Granted(access) => access,
            Resolution::Refused(refusal) => return Err(refusal.error()),
            Resolution::Pending => return Err(crate::calls::task_failed()),
        };
        self.checked = Instant::now();
        self.access.need_subtree(Op::Read, prefix)
    }
}

/// 403 unless each change of a page may be read: one filed under an alias shows its item, whose
/// own path must allow reading too.
fn need_changes(access: &Access, page: &ChangePage) -> Result<(), ApiError> {
    if access.everywhere(Op::Read) {
        return Ok(());
    }
    for entry in &page.changes {
        // A change filed under an alias shows its item: refused naming the alias only.
        if !access.may(Op::Read, entry.change.path()) {
            return Err(crate::handlers::behind_alias(Op::Read, entry.change.key()));
        }
    }
    Ok(())
}

/// A feed's filter, and what it may decide on for the token that follows it.
#[derive(Clone)]
struct FeedFilter {
    filter: Filter,
    readable: Option<Readable>,
}

/// What a feed delivers: the changes its filter lets through, in the versions its
/// `Schema-Version` names (docs/migrations.md).
#[derive(Clone)]
struct FeedView {
    filter: Option<FeedFilter>,
    speaks: Speaks,
}

async fn read<B: Backend>(
    store: &Store<B>,
    prefix: &KeyPath,
    since: ChangeToken,
    limit: usize,
    view: FeedView,
) -> Result<ChangePage, ApiError> {
    let (store, prefix) = (store.clone(), prefix.clone());
    store_call("changes", move || {
        let filter = view
            .filter
            .as_ref()
            .map(|f| (&f.filter, f.readable.as_ref()));
        let mut page = store.changes_filtered(&prefix, Some(&since), limit, filter)?;
        store.all_in_versions(page.puts_mut(), &view.speaks.0)?;
        Ok(page)
    })
    .await
}

fn wants_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|v| v.split(';').next().map(str::trim) == Some("text/event-stream"))
}

/// The feed as Server-Sent Events: one change per event, its data the change as JSON and its
/// id the token after it. The first read happens before the stream starts, so an expired or
/// foreign token gets its 410 or 400 as an ordinary answer.
async fn event_stream<B: Backend>(
    store: Store<B>,
    mut reader: Reader,
    prefix: KeyPath,
    since: Option<ChangeToken>,
    limit: usize,
    filter: FeedView,
    slot: StreamSlot,
) -> Result<Response, ApiError> {
    let mut token = match since {
        Some(t) => t,
        None => {
            let (s, p) = (store.clone(), prefix.clone());
            store_call("changes", move || Ok(s.changes_token(&p)?)).await?
        }
    };
    let mut listener = store.commit_listener(&prefix);
    let mut page = read(&store, &prefix, token, limit, filter.clone()).await?;
    need_changes(&reader.access, &page)?;
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Event, Infallible>>(64);
    // The id the client holds: where a reconnect with Last-Event-ID resumes. Without `since`
    // the client has none yet.
    let mut told = since;
    tokio::spawn(async move {
        // The stream's place under the cap, until the task ends (the client gone, shutdown).
        let slot = slot;
        loop {
            let allowed = match reader.again(&prefix).await {
                Ok(()) => need_changes(&reader.access, &page),
                Err(e) => Err(e),
            };
            if let Err(e) = allowed {
                // An alias's item this token may not read: the stream ends rather than show it.
                let event = Event::default().event("failure").data(e.to_string_lossy());
                let _ = tx.send(Ok(event)).await;
                return;
            }
            for entry in page.changes {
                let token = entry.token;
                let id = token.to_string();
                let data = serde_json::to_string(&ChangeOut::from(entry))
                    .unwrap_or_else(|_| "{}".to_owned());
                // Unnamed (a "message"), so that EventSource's `onmessage` receives it.
                let event = Event::default().id(id).data(data);
                if tx.send(Ok(event)).await.is_err() {
                    return; // The client went away.
                }
                told = Some(token);
            }
            if told != Some(page.next_token) {
                // The position moved without a change to send (a new stream, or changes outside
                // the prefix): an id without data is not dispatched as an event, but it sets
                // the client's Last-Event-ID, so a reconnect resumes here.
                let event = Event::default()
                    .id(page.next_token.to_string())
                    .comment("position");
                if tx.send(Ok(event)).await.is_err() {
                    return;
                }
                told = Some(page.next_token);
            }
            let caught_up = page.next_token == token;
            token = page.next_token;
            if caught_up {
                let idle = store.changes_poll_interval().unwrap_or(STREAM_IDLE);
                let until = tokio::time::Instant::now() + idle;
                let mut commit = std::pin::pin!(listener);
                loop {
                    tokio::select! {
                        _ = &mut commit => break,
                        () = tokio::time::sleep_until(until) => break,
                        // A quiet stream asks about its token too (a cached answer, mostly).
                        () = tokio::time::sleep(REVALIDATE) => {
                            if let Err(e) = reader.again(&prefix).await {
                                let event = Event::default().event("failure").data(e.to_string_lossy());
                                let _ = tx.send(Ok(event)).await;
                                return;
                            }
                        }
                        () = tx.closed() => return,
                        () = slot.closing() => return,
                    }
                }
            }
            listener = store.commit_listener(&prefix);
            page = match read(&store, &prefix, token, limit, filter.clone()).await {
                Ok(page) => page,
                Err(e) => {
                    // The answer has started: say so in the stream and end it; the client
                    // reconnects with Last-Event-ID and gets the error as a status.
                    tracing::warn!(status = %e.status(), "change stream ended by an error");
                    let event = Event::default().event("failure").data(format!(
                        "the change feed failed ({}); reconnect",
                        e.status()
                    ));
                    let _ = tx.send(Ok(event)).await;
                    return;
                }
            };
        }
    });
    let stream = tokio_stream::wrappers::ReceiverStream::new(rx);
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// Creates an item with a generated id: `{parent}/{namespace}-{id}`, a new group when there is no
/// parent. The answer's `path` holds the id.
// The path parameter is named like the other item routes' (OpenAPI forbids two templates of one
// path that differ only in their names).
#[utoipa::path(post, path = "/v1/items/{path}", tag = "items", operation_id = "createItem",
    params(("path" = String, Path, description = "The parent's key path (may be empty) and the new element's namespace, without the leading '/': `user-7/post` creates `/user-7/post-{id}`, `user` a new group `/user-{id}`", example = "user-7/post"),
        CreateQuery),
    request_body(content = serde_json::Value, description = "Any JSON value", content_type = "application/json"),
    responses(
        (status = 201, description = "Created", body = crate::wire::ItemOut, headers(("ETag" = String, description = "The version, quoted"), ("Location" = String, description = "The new item's URL"))),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 413, body = ErrorBody),
        (status = 422, description = "`schema_violation`: a value does not fit its namespace's schema; nothing written", body = ErrorBody),
        (status = 415, description = "The body is not declared as application/json", body = ErrorBody),
        (status = 503, body = ErrorBody),
        (status = 507, description = "Disk full (`insufficient_storage`): nothing was written; retry once space is freed", body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn create_item<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    access: Access,
    axum::extract::Path(target): axum::extract::Path<String>,
    Query(q): Query<CreateQuery>,
    speaks: Speaks,
    Body(body): Body,
) -> Result<Response, ApiError> {
    let (parent, namespace) = create_target(&format!("/{}", target.trim_start_matches('/')))?;
    let parent = match parent {
        Parent::Root => None,
        Parent::Path(p) => Some(p),
        Parent::Created(_) => {
            return Err(ApiError::bad_request(
                "`$N` refers to a transaction's operation: use it in POST /v1/transact",
            ));
        }
    };
    // The new id is not known yet: every child of the parent must be writable.
    let allowed = match &parent {
        Some(parent) => access.covers_children(Op::Write, parent),
        None => access.everywhere(Op::Write),
    };
    if !allowed {
        let at = parent
            .as_ref()
            .map_or_else(|| "the root".to_owned(), ToString::to_string);
        return Err(
            ApiError::forbidden(Op::Write, None, None).with_message(format!(
                "this token may not write a new {namespace} item under {at}"
            )),
        );
    }
    let id: IdKind = q.id.as_deref().unwrap_or("uuid").parse()?;
    let value = body_value(&body)?;
    let options = pathdb_store::PutOptions {
        schema_version: speaks.0.get(&namespace),
        ..put_options(None, q.history, q.ttl_seconds)
    };
    let item = store_call("create", move || {
        state.store.check_versions(&speaks.0)?;
        let mut item = state
            .store
            .create(parent.as_ref(), &namespace, id, value, options)?;
        state.store.in_versions(&mut item, &speaks.0)?;
        Ok(item)
    })
    .await
    .map_err(|e| access.hide(e))?;
    let location = format!("/v1/items{}", item.path);
    let mut response = item_response(StatusCode::CREATED, &item);
    if let Ok(location) = axum::http::HeaderValue::from_str(&location) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    Ok(response)
}

impl From<ChangePage> for ChangesOut {
    fn from(page: ChangePage) -> ChangesOut {
        ChangesOut {
            changes: page.changes.into_iter().map(ChangeOut::from).collect(),
            next_token: page.next_token.to_string(),
        }
    }
}
