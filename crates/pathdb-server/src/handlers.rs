//! The `/v1` handlers. Store calls block (redb), so each runs on tokio's blocking pool, except
//! point reads and single puts on a backend that reads without blocking and queues its writes
//! ([`point_read`](crate::calls::point_read), `put_item`).

use crate::AppState;
use crate::auth::Access;
use crate::calls::{
    blocking, body_value, create_target, created_or_ok, item_response, page_limit, point_read,
    put_options, store_call,
};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Body, Json, NoQuery, Preconditions, Query, Speaks, UrlPath};
use crate::precondition::{self, WritePrecondition};
use crate::telemetry;
use crate::wire::*;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use pathdb_keys::KeyPath;
use pathdb_store::backend::Backend;
use pathdb_store::{
    Condition, DEFAULT_LIST_LIMIT, DEFAULT_MAX_SCAN, Fields, Filter, Json as JsonText, ListCheck,
    ListRange, ListRequest, MAX_LIST_LIMIT, MAX_SCAN, Op, PutOptions, SubtreeJob, Transaction,
    TxOp, TxResult,
};

/// Most paths of a `/v1/get` served as a [`point_read`](crate::calls::point_read).
const POINT_READ_MAX_PATHS: usize = 8;

fn parse_path(text: &str) -> Result<KeyPath, ApiError> {
    Ok(text.parse::<KeyPath>()?)
}

/// Reads an item, or one of its past versions.
#[utoipa::path(get, path = "/v1/items/{path}", tag = "items", operation_id = "getItem",
    params(("path" = String, Path, description = "Key path without its leading '/'", example = "user-7/post-1"), GetQuery,
        ("If-None-Match" = Option<String>, Header, description = "`*` or entity tags (`\"3\"`, weak ones too): answer 304 if one is the item's", pattern = r#"^(\*|((W/)?"?[0-9]{1,19}"?)( *, *(W/)?"?[0-9]{1,19}"?)*)$"#)),
    responses(
        (status = 200, description = "The item", body = ItemOut, headers(("ETag" = String, description = "The item's version, quoted: `\"3\"`"))),
        (status = 304, description = "Not modified: If-None-Match names the item's entity tag", headers(("ETag" = String, description = "The item's version, quoted"))),
        (status = 400, description = "Invalid path, version or header", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, description = "No such item, or no such version of it", body = ErrorBody),
        (status = 413, body = ErrorBody), (status = 503, body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn get_item<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    access: Access,
    UrlPath(path): UrlPath,
    Query(q): Query<GetQuery>,
    Preconditions(headers): Preconditions,
    speaks: Speaks,
) -> Result<Response, ApiError> {
    if q.version == Some(0) {
        return Err(ApiError::bad_request("version: versions start at 1"));
    }
    let fields = q.fields.as_deref().map(Fields::parse).transpose()?;
    access.need(Op::Read, &path)?;
    let version = q.version;
    let (item, path) = point_read(state, "get", move |store| {
        read_item(store, path, version, &speaks)
    })
    .await?;
    // The value is projected after the read: the ETag stays the item's version.
    let item = item.map(|mut item| {
        if let Some(fields) = &fields {
            item.value = fields.project(&item.value);
        }
        item
    });
    answer_item(&access, item, &path, version, &headers)
}

/// 403 unless an item read at `asked` (an alias, or its own path) may be read at its own path
/// too: an alias is not a way around a rule. The refusal names `asked`, never the item's own
/// path (which may be another tenant's).
pub(crate) fn need_item(
    access: &Access,
    op: Op,
    asked: &KeyPath,
    item: &pathdb_store::Item,
) -> Result<(), ApiError> {
    if &item.path != asked && !access.may(op, &item.path) {
        return Err(behind_alias(op, asked));
    }
    Ok(())
}

/// [`need_item`] for read on each of `items`, each asked at its alias or its own path.
fn need_items(access: &Access, items: &[pathdb_store::Item]) -> Result<(), ApiError> {
    for item in items {
        need_item(
            access,
            Op::Read,
            item.alias.as_ref().unwrap_or(&item.path),
            item,
        )?;
    }
    Ok(())
}

/// The refusal of `op` on the item behind the alias `alias`, naming the alias only.
pub(crate) fn behind_alias(op: Op, alias: &KeyPath) -> ApiError {
    ApiError::forbidden(op, Some(alias), Some("(the item behind this alias)"))
}

/// The path a patch or delete of `path` acts on, checked for `op`: for a token that may not do
/// `op` everywhere, an alias path is read first, and its item's own path must allow `op` too
/// (the write then goes to that path, so an alias moved meanwhile cannot take it elsewhere).
pub(crate) fn target_of<B: Backend>(
    store: &pathdb_store::Store<B>,
    access: &Access,
    op: Op,
    path: KeyPath,
) -> Result<KeyPath, ApiError> {
    access.need(op, &path)?;
    if access.everywhere(op) {
        return Ok(path);
    }
    match store.get(&path)? {
        Some(item) if item.path != path => {
            if !access.may(op, &item.path) {
                return Err(behind_alias(op, &path));
            }
            Ok(item.path)
        }
        _ => Ok(path),
    }
}

/// The store read of a get: the item, or one of its past versions, and the path it was read at.
pub(crate) fn read_item<B: Backend>(
    store: &pathdb_store::Store<B>,
    path: KeyPath,
    version: Option<u64>,
    speaks: &Speaks,
) -> Result<(Option<pathdb_store::Item>, KeyPath), ApiError> {
    store.check_versions(&speaks.0)?;
    let mut item = match version {
        Some(v) => store.get_version(&path, v)?,
        None => store.get(&path)?,
    };
    if let Some(item) = &mut item {
        store.in_versions(item, &speaks.0)?;
    }
    Ok((item, path))
}

/// A get's answer from what [`read_item`] found: 404, 304 when `If-None-Match` (in `headers`)
/// names its version, or the item.
pub(crate) fn answer_item(
    access: &Access,
    item: Option<pathdb_store::Item>,
    path: &KeyPath,
    version: Option<u64>,
    headers: &axum::http::HeaderMap,
) -> Result<Response, ApiError> {
    let item = item.ok_or_else(|| {
        ApiError::not_found(match version {
            Some(v) => format!("{path} has no version {v}"),
            None => format!("{path} not found"),
        })
    })?;
    // A past version through an alias comes back at the item's own path (no `alias`): the
    // path asked decides what is behind it.
    need_item(access, Op::Read, path, &item)?;
    if let Some(answer) = precondition::not_modified_answer(headers, item.version)? {
        return Ok(answer);
    }
    Ok(item_response(StatusCode::OK, &item))
}

/// Creates or replaces an item with the request body (any JSON value).
#[utoipa::path(put, path = "/v1/items/{path}", tag = "items", operation_id = "putItem",
    params(("path" = String, Path, description = "Key path without its leading '/'", example = "user-7/post-1"), PutQuery,
        ("If-None-Match" = Option<String>, Header, description = "`*`: fail with 412 if the item exists", pattern = r"^\*$"),
        ("If-Match" = Option<String>, Header, description = "`*`: fail with 412 unless the item exists; entity tags (`\"3\"`): unless it is at one of these versions. Weak tags never match.", pattern = r#"^(\*|((W/)?"?[0-9]{1,19}"?)( *, *(W/)?"?[0-9]{1,19}"?)*)$"#)),
    request_body(content = serde_json::Value, description = "Any JSON value", content_type = "application/json"),
    responses(
        (status = 200, description = "Replaced", body = ItemOut, headers(("ETag" = String, description = "The new version, quoted"))),
        (status = 201, description = "Created", body = ItemOut, headers(("ETag" = String, description = "The new version, quoted"))),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 409, description = "A concurrent write changed the item: retry", body = ErrorBody),
        (status = 412, description = "If-Match or If-None-Match did not hold; nothing written", body = ErrorBody),
        (status = 413, body = ErrorBody),
        (status = 422, description = "`schema_violation`: a value does not fit its namespace's schema; nothing written", body = ErrorBody),
        (status = 415, description = "The body is not declared as application/json", body = ErrorBody),
        (status = 503, body = ErrorBody),
        (status = 507, description = "Disk full (`insufficient_storage`): nothing was written; retry once space is freed", body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn put_item<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    access: Access,
    UrlPath(path): UrlPath,
    Query(q): Query<PutQuery>,
    Preconditions(headers): Preconditions,
    speaks: Speaks,
    Body(body): Body,
) -> Result<Response, ApiError> {
    put_extracted(state, access, path, q, headers, speaks, &body).await
}

/// What [`put_item`] does once its extractors have run: also the plain puts answered before the
/// router (unrouted/put.rs), which extract the same things without it.
pub(crate) async fn put_extracted<B: Backend>(
    state: AppState<B>,
    access: Access,
    path: KeyPath,
    q: PutQuery,
    headers: axum::http::HeaderMap,
    speaks: Speaks,
    body: &[u8],
) -> Result<Response, ApiError> {
    // A put at an alias path is refused by the store (`path_is_alias`): it never reaches an item.
    access.need(Op::Write, &path)?;
    let precondition = precondition::write_precondition(&headers)?;
    let value = body_value(body)?;
    let options = PutOptions {
        schema_version: speaks.for_path(&path),
        ..put_options(None, q.history, q.ttl_seconds)
    };
    let backend = state.store.backend();
    let (item, created) = if backend.fast_point_reads() && backend.queues_writes() {
        // Planned here and the commit awaited: no blocking-pool thread waits for the flush.
        let started = std::time::Instant::now();
        let result = async {
            state.store.check_versions(&speaks.0)?;
            let options = with_condition(options, precondition, &state.store, &path)?;
            let (mut item, created) = state
                .store
                .put_created_queued(&path, value, options)
                .await
                .map_err(|e| access.hide(http_condition(e)))?;
            state.store.in_versions(&mut item, &speaks.0)?;
            Ok::<_, ApiError>((item, created))
        }
        .await;
        telemetry::store_operation("put", started, result.is_ok());
        result?
    } else {
        store_call("put", move || {
            state.store.check_versions(&speaks.0)?;
            let options = with_condition(options, precondition, &state.store, &path)?;
            // One read and one commit whether the item exists or not.
            let (mut item, created) = state
                .store
                .put_created(&path, value, options)
                .map_err(|e| access.hide(http_condition(e)))?;
            state.store.in_versions(&mut item, &speaks.0)?;
            Ok((item, created))
        })
        .await?
    };
    Ok(item_response(created_or_ok(created), &item))
}

/// A single-item write's options with the store condition of its HTTP precondition, which
/// reads the item's version when `If-Match` names several.
fn with_condition<B: Backend>(
    options: PutOptions,
    precondition: WritePrecondition,
    store: &pathdb_store::Store<B>,
    path: &KeyPath,
) -> Result<PutOptions, ApiError> {
    let condition = precondition.resolve(|| current_version(store, path))?;
    Ok(PutOptions {
        condition,
        ..options
    })
}

/// The item's current version, for `If-Match` with several entity tags.
fn current_version<B: Backend>(
    store: &pathdb_store::Store<B>,
    path: &KeyPath,
) -> Result<Option<u64>, ApiError> {
    Ok(store.get(path)?.map(|item| item.version))
}

/// A failed condition of a single-item write came from an HTTP precondition: 412, not the 409
/// that a transaction's own conditions answer.
fn http_condition(e: pathdb_store::Error) -> ApiError {
    match e {
        pathdb_store::Error::ConditionFailed { .. } => {
            precondition::precondition_failed(e.to_string())
        }
        other => other.into(),
    }
}

/// Changes part of an item: an RFC 7396 merge patch, or an RFC 6902 JSON Patch with the
/// `increment` operation (`{"op": "increment", "path": "/views", "value": 1}`: a missing member
/// starts at 0; integers stay integers within 2^53). The server applies it to the stored value
/// and writes the result conditionally on what it read; a concurrent write makes it read and
/// apply again, so contention never fails it.
#[utoipa::path(patch, path = "/v1/items/{path}", tag = "items", operation_id = "patchItem",
    params(("path" = String, Path, description = "Key path without its leading '/'", example = "user-7/post-1"), PatchQuery,
        ("If-None-Match" = Option<String>, Header, description = "`*`: fail with 412 if the item exists (with `create=true`)", pattern = r"^\*$"),
        ("If-Match" = Option<String>, Header, description = "`*`: fail with 412 unless the item exists; entity tags (`\"3\"`): unless it is at one of these versions. Weak tags never match.", pattern = r#"^(\*|((W/)?"?[0-9]{1,19}"?)( *, *(W/)?"?[0-9]{1,19}"?)*)$"#)),
    request_body(description = "`application/merge-patch+json` (RFC 7396: objects merge, `null` removes a member) or `application/json-patch+json` (RFC 6902 operations, and `increment`)", content(
        (serde_json::Value = "application/merge-patch+json"),
        (Vec<serde_json::Value> = "application/json-patch+json"))),
    responses(
        (status = 200, description = "Patched", body = ItemOut, headers(("ETag" = String, description = "The new version, quoted"))),
        (status = 201, description = "Created (`create=true`)", body = ItemOut, headers(("ETag" = String, description = "The new version, quoted"))),
        (status = 400, description = "An invalid patch document (naming the operation's index), path or option", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, description = "No item to patch (without `create=true`)", body = ErrorBody),
        (status = 409, description = "`patch_test_failed`: a `test` operation did not hold; `patch_conflict`: an operation does not fit the value. Nothing written.", body = ErrorBody),
        (status = 412, description = "If-Match or If-None-Match did not hold; nothing written", body = ErrorBody),
        (status = 413, body = ErrorBody),
        (status = 422, description = "`schema_violation`: a value does not fit its namespace's schema; nothing written", body = ErrorBody),
        (status = 415, description = "The body is not declared as application/merge-patch+json or application/json-patch+json", body = ErrorBody),
        (status = 503, body = ErrorBody),
        (status = 507, description = "Disk full (`insufficient_storage`): nothing was written; retry once space is freed", body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn patch_item<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    access: Access,
    UrlPath(path): UrlPath,
    Query(q): Query<PatchQuery>,
    Preconditions(headers): Preconditions,
    request_headers: axum::http::HeaderMap,
    Body(body): Body,
) -> Result<Response, ApiError> {
    let speaks = Speaks::of(&request_headers)?;
    let precondition = precondition::write_precondition(&headers)?;
    access.need(Op::Write, &path)?;
    let text = crate::extract::strict_json_text(&body)?;
    let document: serde_json::Value =
        serde_json::from_str(text).map_err(|e| crate::extract::invalid_json(e.to_string()))?;
    // The route accepts only the two patch media types (`media::PATCH`).
    let patch = if crate::media::headers_declare(&request_headers, &[crate::media::JSON_PATCH]) {
        json_patch(&document, "")?
    } else {
        pathdb_store::Patch::Merge(document)
    };
    let options = put_options(None, q.history, q.ttl_seconds);
    let create = q.create.unwrap_or(false);
    let (item, created) = store_call("patch", move || {
        state.store.check_versions(&speaks.0)?;
        let path = target_of(&state.store, &access, Op::Write, path)?;
        let options = PutOptions {
            schema_version: speaks.for_path(&path),
            ..with_condition(options, precondition, &state.store, &path)?
        };
        let (mut item, created) = state
            .store
            .patch_created(&path, patch, options, create)
            .map_err(|e| access.hide(http_condition(e)))?;
        state.store.in_versions(&mut item, &speaks.0)?;
        Ok((item, created))
    })
    .await?;
    Ok(item_response(created_or_ok(created), &item))
}

/// Reads a JSON Patch document (PATCH's body or a transaction's `patch`); a bad one is 400
/// `invalid_patch`, its message after `context` naming the operation's index.
fn json_patch(
    document: &serde_json::Value,
    context: &str,
) -> Result<pathdb_store::Patch, ApiError> {
    pathdb_store::Patch::json_patch(document).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_patch",
            format!("{context}{e}"),
        )
    })
}

/// Deletes an item; with `recursive=true`, the item and every live item below it.
#[utoipa::path(delete, path = "/v1/items/{path}", tag = "items", operation_id = "deleteItem",
    params(("path" = String, Path, description = "Key path without its leading '/'", example = "user-7/post-1"), DeleteQuery,
        ("If-Match" = Option<String>, Header, description = "`*` or entity tags: fail with 412 unless the item is at one of these versions. Weak tags never match. Not with `recursive=true`.", pattern = r#"^(\*|((W/)?"?[0-9]{1,19}"?)( *, *(W/)?"?[0-9]{1,19}"?)*)$"#)),
    responses(
        (status = 200, description = "The deleted item, or with `recursive=true` how many items were deleted", body = DeleteOut, headers(("ETag" = String, description = "The deleted version, quoted (not with `recursive=true`)"))),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, description = "No such item (with `recursive=true`: nothing at or below the path)", body = ErrorBody),
        (status = 409, description = "A concurrent write changed the item: retry", body = ErrorBody),
        (status = 412, description = "If-Match did not hold; nothing deleted", body = ErrorBody),
        (status = 413, body = ErrorBody), (status = 503, body = ErrorBody),
        (status = 507, description = "Disk full (`insufficient_storage`): nothing was written; retry once space is freed", body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn delete_item<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    access: Access,
    UrlPath(path): UrlPath,
    Query(q): Query<DeleteQuery>,
    Preconditions(headers): Preconditions,
    speaks: Speaks,
) -> Result<Response, ApiError> {
    let precondition = precondition::write_precondition(&headers)?;
    access.need(Op::Write, &path)?;
    if q.recursive == Some(true) {
        access.need_subtree(Op::Write, &path)?;
        if precondition != WritePrecondition::None {
            return Err(ApiError::bad_request(
                "If-Match and If-None-Match do not apply to a recursive delete",
            ));
        }
        // On the blocking pool, which finishes the job even if the client goes away.
        let deleted = store_call("delete_subtree", move || {
            Ok(state.store.delete_subtree(&path, &mut |_| {})?)
        })
        .await?;
        return Ok(axum::Json(DeleteOut::Subtree(DeletedOut { deleted })).into_response());
    }
    let precondition = precondition::for_delete(precondition)?;
    let missing = format!("{path} not found");
    let deleted = store_call("delete", move || {
        state.store.check_versions(&speaks.0)?;
        let path = target_of(&state.store, &access, Op::Write, path)?;
        let condition = precondition.resolve(|| current_version(&state.store, &path))?;
        let mut deleted = state
            .store
            .delete(&path, condition)
            .map_err(http_condition)?;
        // The item as it was, in the version the request speaks.
        if let Some(item) = &mut deleted {
            state.store.in_versions(item, &speaks.0)?;
        }
        Ok(deleted)
    })
    .await?
    .ok_or_else(|| ApiError::not_found(missing))?;
    Ok(item_response(StatusCode::OK, &deleted))
}

/// Moves a subtree: every live item at or below `from` to the same place below `to`, with its
/// value, times, expiry and history; the sources become absent. Atomic when it fits in one
/// write; a larger one runs in resumable batches (sending the same request again finishes it).
#[utoipa::path(post, path = "/v1/move", tag = "items", operation_id = "moveSubtree", request_body = SubtreeIn,
    responses((status = 200, body = MovedOut),
        (status = 400, description = "An invalid path, or one path inside the other", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, description = "Nothing at or below `from`", body = ErrorBody),
        (status = 409, description = "`destination_not_empty`: an item exists at or below `to`", body = ErrorBody),
        (status = 413, body = ErrorBody),
        (status = 422, description = "`schema_violation`: a value does not fit its namespace's schema; nothing written", body = ErrorBody),
        (status = 415, description = "The body is not declared as application/json", body = ErrorBody),
        (status = 503, body = ErrorBody),
        (status = 507, description = "Disk full (`insufficient_storage`): nothing was written; retry once space is freed", body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn move_subtree<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    access: Access,
    _: NoQuery,
    Json(body): Json<SubtreeIn>,
) -> Result<axum::Json<MovedOut>, ApiError> {
    let (from, to) = (parse_path(&body.from)?, parse_path(&body.to)?);
    // The sources are read and deleted, the destinations written.
    access.need_subtree(Op::Read, &from)?;
    access.need_subtree(Op::Write, &from)?;
    access.need_subtree(Op::Write, &to)?;
    let job = SubtreeJob::relocate(from, to);
    let moved = run_subtree_job(state, &access, "move", job).await?;
    Ok(axum::Json(MovedOut { moved }))
}

/// Copies a subtree: like `POST /v1/move`, but the source stays as it is.
#[utoipa::path(post, path = "/v1/copy", tag = "items", operation_id = "copySubtree", request_body = SubtreeIn,
    responses((status = 200, body = CopiedOut),
        (status = 400, description = "An invalid path, or one path inside the other", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, description = "Nothing at or below `from`", body = ErrorBody),
        (status = 409, description = "`destination_not_empty`: an item exists at or below `to`", body = ErrorBody),
        (status = 413, body = ErrorBody),
        (status = 422, description = "`schema_violation`: a value does not fit its namespace's schema; nothing written", body = ErrorBody),
        (status = 415, description = "The body is not declared as application/json", body = ErrorBody),
        (status = 503, body = ErrorBody),
        (status = 507, description = "Disk full (`insufficient_storage`): nothing was written; retry once space is freed", body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn copy_subtree<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    access: Access,
    _: NoQuery,
    Json(body): Json<SubtreeIn>,
) -> Result<axum::Json<CopiedOut>, ApiError> {
    let (from, to) = (parse_path(&body.from)?, parse_path(&body.to)?);
    access.need_subtree(Op::Read, &from)?;
    access.need_subtree(Op::Write, &to)?;
    let job = SubtreeJob::copy(from, to);
    let copied = run_subtree_job(state, &access, "copy", job).await?;
    Ok(axum::Json(CopiedOut { copied }))
}

/// Runs a subtree job on the blocking pool, which finishes it even if the client goes away.
async fn run_subtree_job<B: Backend>(
    state: AppState<B>,
    access: &Access,
    op: &'static str,
    job: SubtreeJob,
) -> Result<u64, ApiError> {
    store_call(op, move || {
        Ok(state.store.run_subtree_job(&job, &mut |_| {})?)
    })
    .await
    .map_err(|e| access.hide(e))
}

/// Reads several items from one snapshot; missing ones are left out.
#[utoipa::path(post, path = "/v1/get", tag = "items", operation_id = "getMany", request_body = GetManyIn,
    responses((status = 200, body = ItemsOut), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 413, body = ErrorBody),
        (status = 415, description = "The body is not declared as application/json", body = ErrorBody),
        (status = 503, body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn get_many<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    access: Access,
    Query(q): Query<GetManyQuery>,
    speaks: Speaks,
    Json(body): Json<GetManyIn>,
) -> Result<axum::Json<ItemsOut>, ApiError> {
    let filter = q.filter.as_deref().map(Filter::compile).transpose()?;
    let fields = q.fields.as_deref().map(Fields::parse).transpose()?;
    let paths = body
        .paths
        .iter()
        .map(|p| parse_path(p))
        .collect::<Result<Vec<_>, _>>()?;
    // The first path refused is named, before anything is read.
    for path in &paths {
        access.need(Op::Read, path)?;
    }
    // A few keys are a read like a get; up to MAX_GET_MANY take long enough for the pool.
    // The filter decides on each value in its newest version, as a listing's does; the
    // answer is in the versions asked, then projected (docs/migrations.md).
    let few = paths.len() <= POINT_READ_MAX_PATHS;
    let reader = access.clone();
    // Every item read must be readable, filtered out or not: the filter decides on nothing
    // else. It decides on each value in its newest version, as a listing's does; the answer
    // is in the versions asked, then projected (docs/migrations.md).
    let read = move |store: &pathdb_store::Store<B>| -> Result<Vec<pathdb_store::Item>, ApiError> {
        store.check_versions(&speaks.0)?;
        let mut items = store.get_many(&paths)?;
        need_items(&reader, &items)?;
        store.all_in_versions(&mut items, &pathdb_store::SchemaVersions::newest())?;
        let mut items = shape_items(items, filter.as_ref(), None);
        store.all_in_versions(&mut items, &speaks.0)?;
        Ok(shape_items(items, None, fields.as_ref()))
    };
    let items = if few {
        point_read(state, "get_many", read).await?
    } else {
        let store = state.store.clone();
        store_call("get_many", move || read(&store)).await?
    };
    Ok(axum::Json(items.into()))
}

/// Lists a subtree or direct children, one page at a time.
#[utoipa::path(get, path = "/v1/list/{prefix}", tag = "items", operation_id = "listItems",
    params(("prefix" = String, Path, description = "Key path without its leading '/'", example = "user-7"), ListQuery),
    responses((status = 200, description = "A page of items (`ListOut`), or with `count=true` a count (`CountOut`)", body = ListAnswer), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, description = "A web origin or Host the server does not allow", body = ErrorBody),
        (status = 413, body = ErrorBody), (status = 503, body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn list<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    access: Access,
    UrlPath(prefix): UrlPath,
    Query(q): Query<ListQuery>,
    speaks: Speaks,
) -> Result<Response, ApiError> {
    let bound = |b: &Option<String>| b.as_deref().map(parse_path).transpose();
    let limit = page_limit(q.limit, DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT)?;
    let filter = q.filter.as_deref().map(Filter::compile).transpose()?;
    let count = q.count.unwrap_or(false);
    if count && q.fields.is_some() {
        return Err(ApiError::bad_request(
            "fields: a count has no values to project (leave out fields or count)",
        ));
    }
    let fields = q.fields.as_deref().map(Fields::parse).transpose()?;
    let max_scan = match q.max_scan {
        Some(n) if (1..=MAX_SCAN).contains(&n) => n,
        Some(n) => {
            return Err(ApiError::bad_request(format!(
                "max_scan must be 1..={MAX_SCAN}, got {n}"
            )));
        }
        // A count reads the whole range in one answer unless it is longer than the cap.
        None if count => MAX_SCAN,
        None => DEFAULT_MAX_SCAN,
    };
    // A filter or a count reads items it does not return: each must be readable too.
    let readable = if filter.is_some() || count {
        access.readable()
    } else {
        None
    };
    let request = ListRequest {
        prefix,
        children_only: q.children.unwrap_or(false),
        gt: bound(&q.gt)?,
        gte: bound(&q.gte)?,
        lt: bound(&q.lt)?,
        lte: bound(&q.lte)?,
        reverse: q.reverse.unwrap_or(false),
        limit,
        page_token: q.page_token,
        filter,
        fields,
        max_scan,
        readable,
        versions: speaks.0,
    };
    // Paths stay encoded until they are written as text.
    let prefix = request.prefix.clone();
    // A prefix the token reaches nowhere is refused before anything is read.
    need_listed(&access, &prefix, &[])?;
    if count {
        let page = store_call("count", move || Ok(state.store.count(&request)?)).await?;
        return Ok(axum::Json(ListAnswer::Count(CountOut {
            count: page.count,
            scanned: page.scanned,
            next_page_token: page.next_page_token,
        }))
        .into_response());
    }
    let page = store_call("list", move || {
        state.store.check_versions(&request.versions)?;
        Ok(state.store.list_encoded(&request)?)
    })
    .await?;
    need_listed(&access, &prefix, &page.items)?;
    Ok(axum::Json(ListAnswer::Page(ListOut {
        items: page.items.into_iter().map(Into::into).collect(),
        next_page_token: page.next_page_token,
        changes_token: page.changes_token.map(|t| t.to_string()),
        scanned: page.scanned,
    }))
    .into_response())
}

/// `items` that `filter` matches, each value with only `fields`.
fn shape_items(
    items: Vec<pathdb_store::Item>,
    filter: Option<&Filter>,
    fields: Option<&Fields>,
) -> Vec<pathdb_store::Item> {
    let keep = |item: &pathdb_store::Item| filter.is_none_or(|f| item.matches(f));
    let shape = |mut item: pathdb_store::Item| {
        if let Some(fields) = fields {
            item.value = fields.project(&item.value);
        }
        item
    };
    match filter {
        Some(_) => Filter::on_stack(|| items.into_iter().filter(keep).map(shape).collect()),
        None => items.into_iter().map(shape).collect(),
    }
}

/// 403 unless every entry of a listing of `prefix` may be read: its path, and for an item listed
/// under an alias the item's own path. As in Firestore, rules are not filters: a listing that
/// would show one path the token may not read is refused whole (naming the prefix, not what it
/// found), never thinned out.
pub(crate) fn need_listed(
    access: &Access,
    prefix: &KeyPath,
    entries: &[pathdb_store::ListedEntry],
) -> Result<(), ApiError> {
    if access.everywhere(Op::Read) {
        return Ok(());
    }
    let refused = || {
        ApiError::forbidden(
            Op::Read,
            Some(prefix),
            Some("entirely: the listing includes paths this token may not read"),
        )
    };
    // Before the page: a prefix the token reaches nowhere is refused even when it is empty.
    if !access.reaches(Op::Read, prefix) {
        return Err(refused());
    }
    for entry in entries {
        let readable = match entry {
            pathdb_store::ListedEntry::Item(item) => {
                access.may(Op::Read, &item.path.decode())
                    && item
                        .alias
                        .as_ref()
                        .is_none_or(|alias| access.may(Op::Read, &alias.decode()))
            }
            // A path with items below it but none of its own: shown if something there may be read.
            pathdb_store::ListedEntry::Node(path) => access.reaches(Op::Read, &path.decode()),
        };
        if !readable {
            return Err(refused());
        }
    }
    Ok(())
}

/// An item's revisions, newest first.
#[utoipa::path(get, path = "/v1/history/{path}", tag = "items", operation_id = "getHistory",
    params(("path" = String, Path, description = "Key path without its leading '/'", example = "user-7/post-1"), HistoryQuery),
    responses((status = 200, body = ItemsOut), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, description = "A web origin or Host the server does not allow", body = ErrorBody),
        (status = 413, body = ErrorBody), (status = 503, body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn history<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    access: Access,
    UrlPath(path): UrlPath,
    Query(q): Query<HistoryQuery>,
    speaks: Speaks,
) -> Result<axum::Json<ItemsOut>, ApiError> {
    let limit = page_limit(q.limit, 100, MAX_LIST_LIMIT)?;
    access.need(Op::Read, &path)?;
    let reader = access.clone();
    let items = store_call("history", move || {
        state.store.check_versions(&speaks.0)?;
        // Through an alias, the history of its item: that item's own path decides.
        let path = target_of(&state.store, &reader, Op::Read, path)?;
        // Each revision in the version the request speaks, whichever it was written at.
        let mut items = state.store.history(&path, limit)?;
        state.store.all_in_versions(&mut items, &speaks.0)?;
        Ok(items)
    })
    .await?;
    need_items(&access, &items)?;
    Ok(axum::Json(items.into()))
}

fn condition_of(
    if_version: Option<u64>,
    must_exist: bool,
    must_not_exist: bool,
) -> Result<Option<Condition>, ApiError> {
    match (if_version, must_exist, must_not_exist) {
        (Some(v), false, false) => Ok(Some(Condition::IfVersion(v))),
        (None, true, false) => Ok(Some(Condition::MustExist)),
        (None, false, true) => Ok(Some(Condition::MustNotExist)),
        (None, false, false) => Ok(None),
        _ => Err(ApiError::bad_request(
            "give at most one of if_version, must_exist, must_not_exist",
        )),
    }
}

/// Applies puts, patches, deletes, checks (of items and of listings) and creates on any paths,
/// all or nothing.
#[utoipa::path(post, path = "/v1/transact", tag = "items", operation_id = "transact", request_body = TransactIn,
    responses((status = 200, body = TransactOut), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody),
        (status = 404, description = "A patch found no item (`not_found`; use `create`). Nothing was written.", body = ErrorBody),
        (status = 409, description = "An operation's condition failed (`condition_failed`, with the operation's `index`: a check, a listing's check, an `if_version` or `must_not_exist`, whether it failed before the commit or in a race with it), a patch's `test` failed (`patch_test_failed`) or did not fit the value (`patch_conflict`). Nothing was written.", body = ErrorBody),
        (status = 413, body = ErrorBody),
        (status = 422, description = "`schema_violation`: a value does not fit its namespace's schema; nothing written", body = ErrorBody),
        (status = 415, description = "The body is not declared as application/json", body = ErrorBody),
        (status = 503, body = ErrorBody),
        (status = 507, description = "Disk full (`insufficient_storage`): nothing was written; retry once space is freed", body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn transact<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    access: Access,
    _: NoQuery,
    speaks: Speaks,
    Json(body): Json<TransactIn>,
) -> Result<axum::Json<TransactOut>, ApiError> {
    let mut tx = Transaction::new();
    let listings: Vec<bool> = body
        .ops
        .iter()
        .map(|op| matches!(op, TxOpIn::CheckList { .. }))
        .collect();
    for op in body.ops {
        tx.ops.push(match op {
            TxOpIn::Put {
                path,
                value,
                if_version,
                must_not_exist,
                history,
                ttl_seconds,
            } => TxOp::Put {
                path: parse_path(&path)?,
                value: JsonText::parse(value.get())?,
                options: put_options(
                    condition_of(if_version, false, must_not_exist.unwrap_or(false))?,
                    history,
                    ttl_seconds,
                ),
            },
            TxOpIn::Patch {
                path,
                merge,
                patch,
                if_version,
                must_not_exist,
                create,
                history,
                ttl_seconds,
            } => TxOp::Patch {
                path: parse_path(&path)?,
                patch: match (merge, patch) {
                    (Some(merge), _) => pathdb_store::Patch::Merge(merge),
                    (None, document) => {
                        json_patch(&document.unwrap_or_default(), &format!("{path}: "))?
                    }
                },
                options: put_options(
                    condition_of(if_version, false, must_not_exist.unwrap_or(false))?,
                    history,
                    ttl_seconds,
                ),
                create: create.unwrap_or(false),
            },
            TxOpIn::Delete { path, if_version } => TxOp::Delete {
                path: parse_path(&path)?,
                condition: if_version.map(Condition::IfVersion),
            },
            TxOpIn::Check {
                path,
                if_version,
                must_exist,
                must_not_exist,
            } => TxOp::Check {
                path: parse_path(&path)?,
                condition: condition_of(
                    if_version,
                    must_exist.unwrap_or(false),
                    must_not_exist.unwrap_or(false),
                )?
                .ok_or_else(|| {
                    ApiError::bad_request("a check needs if_version, must_exist or must_not_exist")
                })?,
            },
            TxOpIn::CheckList {
                prefix,
                changes_token,
                children,
                gt,
                gte,
                lt,
                lte,
                seen,
                filter,
            } => {
                let bound = |b: Option<String>| b.as_deref().map(parse_path).transpose();
                let filter = filter.as_deref().map(Filter::compile).transpose()?;
                let readable = filter.as_ref().and_then(|_| access.readable());
                let seen = seen
                    .map(|seen| {
                        seen.iter()
                            .map(|(path, version)| Ok((parse_path(path)?, *version)))
                            .collect::<Result<_, ApiError>>()
                    })
                    .transpose()?;
                TxOp::CheckList(ListCheck {
                    range: ListRange {
                        prefix: parse_path(&prefix)?,
                        children_only: children.unwrap_or(false),
                        gt: bound(gt)?,
                        gte: bound(gte)?,
                        lt: bound(lt)?,
                        lte: bound(lte)?,
                    },
                    changes_token: changes_token.parse()?,
                    seen,
                    filter,
                    readable,
                })
            }
            TxOpIn::Create {
                path,
                id,
                value,
                history,
                ttl_seconds,
            } => {
                let (parent, namespace) = create_target(&path)?;
                TxOp::Create {
                    parent,
                    namespace,
                    id: id.as_deref().unwrap_or("uuid").parse()?,
                    value: JsonText::parse(value.get())?,
                    options: put_options(None, history, ttl_seconds),
                }
            }
        });
    }
    for (index, op) in tx.ops.iter().enumerate() {
        need_op(&access, &tx.ops, op).map_err(|e| e.at_operation(index))?;
    }
    // Each value in the version the request speaks for its namespace (docs/migrations.md).
    for op in &mut tx.ops {
        match op {
            TxOp::Put { path, options, .. } | TxOp::Patch { path, options, .. } => {
                options.schema_version = speaks.for_path(path);
            }
            TxOp::Create {
                namespace, options, ..
            } => options.schema_version = speaks.0.get(namespace),
            TxOp::Delete { .. } | TxOp::Check { .. } | TxOp::CheckList(_) => {}
        }
    }
    let results = store_call("transact", move || {
        state.store.check_versions(&speaks.0)?;
        // Patches, deletes and checks through an alias act on its item, which must allow them.
        for (index, op) in tx.ops.iter_mut().enumerate() {
            through_alias(&state.store, &access, op).map_err(|e| e.at_operation(index))?;
        }
        let paths: Vec<Option<KeyPath>> = tx.ops.iter().map(|op| op.path().cloned()).collect();
        let mut results = state.store.transact(tx).map_err(|e| {
            // A failed condition names its operation: a listing's check by its index, an
            // item's by its path (a path appears once in a transaction).
            let index = match &e {
                pathdb_store::Error::ConditionFailed { path, .. } => {
                    paths.iter().position(|p| p.as_ref() == Some(path))
                }
                other => other.operation_index(),
            };
            let error = access.hide(ApiError::from(e));
            match index {
                Some(index) => error.at_operation(index),
                None => error,
            }
        })?;
        let items = results.iter_mut().filter_map(|result| match result {
            TxResult::Put(item) | TxResult::Deleted(Some(item)) => Some(item),
            TxResult::Deleted(None) | TxResult::Checked => None,
        });
        state.store.all_in_versions(items, &speaks.0)?;
        Ok(results)
    })
    .await?;
    Ok(axum::Json(TransactOut {
        results: results
            .into_iter()
            .zip(listings)
            .map(|(result, listing)| match result {
                TxResult::Checked if listing => TxResultOut::CheckList,
                other => other.into(),
            })
            .collect(),
    }))
}

/// 403 unless the token may do what a transaction's operation does where it does it: write a
/// put's, patch's, delete's or create's path (a create's parent's subtree: its id is not known
/// yet), read a check's path, read all of a listing check's range.
fn need_op(access: &Access, ops: &[TxOp], op: &TxOp) -> Result<(), ApiError> {
    match op {
        TxOp::Put { path, .. } | TxOp::Patch { path, .. } | TxOp::Delete { path, .. } => {
            access.need(Op::Write, path)
        }
        TxOp::Check { path, .. } => access.need(Op::Read, path),
        TxOp::CheckList(check) => {
            let range = &check.range;
            let covered = if range.children_only {
                access.covers_children(Op::Read, &range.prefix)
            } else {
                access.covers_subtree(Op::Read, &range.prefix)
            };
            if covered {
                Ok(())
            } else {
                Err(ApiError::forbidden(
                    Op::Read,
                    Some(&range.prefix),
                    Some("entirely: a listing check reads all of it"),
                ))
            }
        }
        TxOp::Create {
            parent, namespace, ..
        } => {
            let refused = |at: String| {
                ApiError::forbidden(Op::Write, None, None).with_message(format!(
                    "this token may not write a new {namespace} item under {at}"
                ))
            };
            match parent {
                pathdb_store::Parent::Path(parent) => {
                    if access.covers_children(Op::Write, parent) {
                        Ok(())
                    } else {
                        Err(refused(parent.to_string()))
                    }
                }
                // Under an item this transaction creates: in the subtree of that item's parent.
                pathdb_store::Parent::Created(_) => match created_root(ops, op) {
                    Some(root) if access.covers_subtree(Op::Write, root) => Ok(()),
                    Some(root) => Err(refused(format!("{root}'s subtree"))),
                    None if access.everywhere(Op::Write) => Ok(()),
                    None => Err(refused("a new group".into())),
                },
                pathdb_store::Parent::Root => {
                    if access.everywhere(Op::Write) {
                        Ok(())
                    } else {
                        Err(refused("the root".into()))
                    }
                }
            }
        }
    }
}

/// The path under which a chain of creates (each under the item an earlier one creates) starts;
/// `None`: at the root.
fn created_root<'a>(ops: &'a [TxOp], mut op: &'a TxOp) -> Option<&'a KeyPath> {
    for _ in 0..ops.len() {
        match op {
            TxOp::Create {
                parent: pathdb_store::Parent::Created(index),
                ..
            } => op = ops.get(*index)?,
            TxOp::Create {
                parent: pathdb_store::Parent::Path(path),
                ..
            } => return Some(path),
            _ => return None,
        }
    }
    None
}

/// Points a transaction's patch, delete or check at an alias's item (see [`target_of`]).
fn through_alias<B: Backend>(
    store: &pathdb_store::Store<B>,
    access: &Access,
    op: &mut TxOp,
) -> Result<(), ApiError> {
    let (path, need) = match op {
        TxOp::Patch { path, .. } | TxOp::Delete { path, .. } => (path, Op::Write),
        TxOp::Check { path, .. } => (path, Op::Read),
        _ => return Ok(()),
    };
    *path = target_of(store, access, need, path.clone())?;
    Ok(())
}

/// Every item, tombstone and revision as JSON lines in key order, streamed, ending with the
/// line that says whether the export is complete (`{"export": "complete", "records": N, ...}`).
#[utoipa::path(get, path = "/v1/export", tag = "transfer", operation_id = "exportItems",
    responses((status = 200, description = "JSON lines; the last line is `{\"export\": \"complete\"|\"incomplete\", \"records\": N, \"skipped\": K}`: \
        without a complete last line the export was cut short", content_type = "application/x-ndjson", body = String),
        (status = 400, description = "A query parameter (this route takes none)", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 503, body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn export<B: Backend>(
    _: NoQuery,
    access: Access,
    speaks: Speaks,
    axum::extract::State(state): axum::extract::State<AppState<B>>,
) -> Response {
    // The whole database, revisions and tombstones included.
    if !access.everywhere(Op::Read) {
        return ApiError::forbidden(Op::Read, None, None)
            .with_message("an export is of the whole database: it needs read on /**")
            .into_response();
    }
    // A version that does not exist is an ordinary 400, before the stream starts.
    if let Err(e) = state.store.check_versions(&speaks.0) {
        return ApiError::from(e).into_response();
    }
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(4);
    tokio::task::spawn_blocking(move || {
        let mut out = ChannelWriter {
            buffer: Vec::new(),
            tx,
        };
        // A store failure is already the stream's last line (`incomplete`) and logged by the
        // store; an output failure means the client went away.
        if let Err(e) = state.store.export_in(&mut out, &mut |_| {}, &speaks.0) {
            tracing::warn!(error = %e, "export ended early");
        }
    });
    let body = axum::body::Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx));
    ([(header::CONTENT_TYPE, "application/x-ndjson")], body).into_response()
}

/// Sends what is written to a response body, a chunk per flush.
pub(crate) struct ChannelWriter {
    pub(crate) buffer: Vec<u8>,
    pub(crate) tx: tokio::sync::mpsc::Sender<Result<Vec<u8>, std::io::Error>>,
}

impl std::io::Write for ChannelWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::take(&mut self.buffer);
        self.tx.blocking_send(Ok(chunk)).map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client went away")
        })
    }
}

/// Writes JSON lines as export produces them, or `{"path", "value"}` lines. Every line is
/// checked before anything is written (nothing written if one is bad, or if the input is a
/// truncated export); then the records go in atomic batches. A version never goes backwards, a
/// record already there with the same content is left alone (a re-run converges), and
/// `on_existing` says what happens to a path that holds another live item.
#[utoipa::path(post, path = "/v1/import", tag = "transfer", operation_id = "importItems",
    params(ImportParams),
    request_body(description = "JSON lines, as export writes them", content(
        (String = "application/x-ndjson"), (String = "application/jsonl"))),
    responses((status = 200, body = ImportOut), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 408, body = ErrorBody), (status = 409, body = ErrorBody),
        (status = 413, body = ErrorBody),
        (status = 422, description = "`schema_violation`: a value does not fit its namespace's schema; nothing written", body = ErrorBody),
        (status = 415, description = "The body is not declared as application/x-ndjson or application/jsonl", body = ErrorBody),
        (status = 503, body = ErrorBody),
        (status = 507, description = "Disk full (`insufficient_storage`): nothing was written; retry once space is freed", body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn import<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    access: Access,
    Query(params): Query<ImportParams>,
    request: axum::extract::Request,
) -> Result<axum::Json<ImportOut>, ApiError> {
    let on_existing: pathdb_store::OnExisting =
        params.on_existing.as_deref().unwrap_or("replace").parse()?;
    // Before the body is read: a refused import costs no memory.
    let _slot = state.imports.admit()?;
    let records = crate::import::read_records(
        request.into_body(),
        crate::MAX_IMPORT_BYTES,
        crate::REQUEST_TIMEOUT,
        params.partial.unwrap_or(false),
    )
    .await?;
    // Every line's path before anything is written: a refused import changes nothing.
    if !access.everywhere(Op::Write) {
        for (index, record) in records.records.iter().enumerate() {
            if let Err(e) = access.need(Op::Write, record.path()) {
                return Err(match records.line(index) {
                    Some(line) => e.at_line(line),
                    None => e,
                });
            }
        }
    }
    let hider = access.clone();
    let report = blocking(move || {
        let report = state
            .store
            .import(&records.records, on_existing, &mut |_| {})
            .map_err(|e| {
                let message = format!("{e}: {}", e.error);
                tracing::error!(error = %message, "import stopped");
                let line = match &e.error {
                    pathdb_store::Error::SchemaViolation { index, .. } => records.line(*index),
                    _ => None,
                };
                let error = hider.hide(ApiError::from(e.error).with_message(message));
                match line {
                    Some(line) => error.at_line(line),
                    None => error,
                }
            });
        drop(records);
        crate::import::release_memory();
        report
    })
    .await?;
    Ok(axum::Json(report.into()))
}

/// Liveness: the process answers. Needs no token.
#[utoipa::path(get, path = "/healthz", tag = "meta", operation_id = "healthz",
    responses((status = 200, description = "The server is running", body = HealthOut),
        (status = 400, description = "A query parameter (this route takes none)", body = ErrorBody)))]
pub async fn healthz(_: NoQuery) -> axum::Json<HealthOut> {
    axum::Json(HealthOut {
        status: "ok".to_owned(),
    })
}

/// Readiness: the storage can serve requests (the database file is open; on DynamoDB, the
/// table is reachable and ACTIVE). Needs no token.
#[utoipa::path(get, path = "/readyz", tag = "meta", operation_id = "readyz",
    responses((status = 200, description = "Ready to serve", body = HealthOut),
        (status = 400, description = "A query parameter (this route takes none)", body = ErrorBody),
        (status = 503, description = "The storage cannot serve requests", body = ErrorBody)))]
pub async fn readyz<B: Backend>(
    _: NoQuery,
    axum::extract::State(state): axum::extract::State<AppState<B>>,
) -> Result<axum::Json<HealthOut>, ApiError> {
    blocking(move || {
        state.store.backend().ready().map_err(|e| {
            tracing::warn!(error = %e, "not ready");
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                format!("not ready: {e}"),
            )
        })
    })
    .await?;
    Ok(axum::Json(HealthOut {
        status: "ready".to_owned(),
    }))
}

/// Metrics in the Prometheus text format: requests by route and status, latencies, store
/// operations, commits, DynamoDB requests. Needs a token (read scope) when tokens are
/// configured.
#[utoipa::path(get, path = "/metrics", tag = "meta", operation_id = "metrics",
    responses((status = 200, description = "Prometheus text exposition format", content_type = "text/plain", body = String),
        (status = 400, description = "A query parameter (this route takes none)", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 503, body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn metrics(_: NoQuery) -> Result<Response, ApiError> {
    let handle = telemetry::prometheus().ok_or_else(|| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "metrics are unavailable: another metrics recorder is installed",
        )
    })?;
    // Every request answered before this one is counted (see `telemetry::fold_all`).
    telemetry::fold_all();
    Ok((
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        handle.render(),
    )
        .into_response())
}
