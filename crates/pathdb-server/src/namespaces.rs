//! `/v1/namespaces`: namespace definitions (a JSON Schema, history, a description) as a
//! resource of their own, versioned with an `ETag` and `If-Match` like items. Changing one needs
//! the `admin` scope (auth.rs). The store checks every write against them (docs/namespaces.md).

use crate::AppState;
use crate::auth::Access;
use crate::calls::{created_or_ok, store_call};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Json, NoQuery, Preconditions, Query};
use crate::precondition::{self, WritePrecondition};
use crate::wire::{
    AliasRetryIn, DefinitionIn, DefinitionOut, DefinitionPutOut, DefinitionPutQuery,
    DefinitionsOut, DryRunOut, NamespacesQuery, VersionsOut, ViolationsOut, ViolationsQuery,
};
use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use pathdb_store::backend::Backend;
use pathdb_store::{AliasDefinition, Condition, Definition, NamespaceDefinition};

/// How long a definition PUT builds new aliases before it answers (then they build on in the
/// background).
const SYNC_BUILD: std::time::Duration = std::time::Duration::from_millis(200);

/// Definitions or refused items per page, by default and at most.
const DEFAULT_LIMIT: usize = 100;
const MAX_LIMIT: usize = 1000;

/// The namespace named in the URL, checked.
fn namespace(name: &str) -> Result<String, ApiError> {
    pathdb_keys::Namespace::new(name).map_err(|rule| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            format!("namespace {name:?}: {rule}"),
        )
    })?;
    Ok(name.to_owned())
}

fn limit(asked: Option<usize>) -> Result<usize, ApiError> {
    match asked.unwrap_or(DEFAULT_LIMIT) {
        n @ 1..=MAX_LIMIT => Ok(n),
        n => Err(ApiError::bad_request(format!(
            "limit must be 1..={MAX_LIMIT}, got {n}"
        ))),
    }
}

/// One definition with its alias builds, with its version as the `ETag`.
fn definition_response(
    status: StatusCode,
    (definition, builds): (NamespaceDefinition, Vec<pathdb_store::AliasBuild>),
    rewrite: Option<pathdb_store::Rewrite>,
) -> Response {
    let etag = precondition::etag(definition.version);
    let mut out = DefinitionOut::new(definition, builds);
    out.rewrite = rewrite.map(Into::into);
    let body = DefinitionPutOut::Stored(out);
    let mut response = (status, axum::Json(body)).into_response();
    if let Ok(etag) = HeaderValue::from_str(&etag) {
        response.headers_mut().insert(header::ETAG, etag);
    }
    response
}

/// 404 for a namespace without a definition.
fn not_found(ns: &str) -> ApiError {
    ApiError::not_found(format!("namespace {ns} has no definition"))
}

/// Lists the namespace definitions, in namespace order.
#[utoipa::path(get, path = "/v1/namespaces", tag = "namespaces", operation_id = "listNamespaces",
    params(NamespacesQuery),
    responses((status = 200, body = DefinitionsOut),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 503, body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn list<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    access: Access,
    Query(q): Query<NamespacesQuery>,
) -> Result<axum::Json<DefinitionsOut>, ApiError> {
    let limit = limit(q.limit)?;
    // The token is the last namespace of the previous page: definitions are few and public to
    // every reader, so there is nothing to seal.
    let after = q.page_token.as_deref().map(namespace).transpose()?;
    let (page, builds) = store_call("namespaces", move || {
        // One more than asked tells whether another page follows.
        let page = state.store.namespaces(after.as_deref(), limit + 1)?;
        let builds = state.store.alias_builds_of(&page)?;
        Ok((page, builds))
    })
    .await?;
    let more = page.len() > limit;
    let namespaces: Vec<DefinitionOut> = page
        .into_iter()
        .zip(builds)
        .take(limit)
        .map(|(d, b)| DefinitionOut::new(d, visible(&access, b)))
        .collect();
    let next_page_token = more
        .then(|| namespaces.last().map(|d| d.namespace.clone()))
        .flatten();
    Ok(axum::Json(DefinitionsOut {
        namespaces,
        next_page_token,
    }))
}

/// Reads a namespace's definition.
#[utoipa::path(get, path = "/v1/namespaces/{namespace}", tag = "namespaces", operation_id = "getNamespace",
    params(("namespace" = String, Path, description = "The namespace: a letter or `_`, then letters, digits and `_` (at most 64)", example = "post", pattern = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"),
        ("If-None-Match" = Option<String>, Header, description = "`*` or entity tags (`\"3\"`, weak ones too): answer 304 if one is the definition's", pattern = r#"^(\*|((W/)?"?[0-9]{1,19}"?)( *, *(W/)?"?[0-9]{1,19}"?)*)$"#)),
    responses(
        (status = 200, body = DefinitionOut, headers(("ETag" = String, description = "The definition's version, quoted"))),
        (status = 304, description = "Not modified: If-None-Match names the definition's entity tag", headers(("ETag" = String, description = "The definition's version, quoted"))),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, description = "The namespace has no definition", body = ErrorBody),
        (status = 503, body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn get<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    access: Access,
    Path(ns): Path<String>,
    _: NoQuery,
    Preconditions(headers): Preconditions,
) -> Result<Response, ApiError> {
    let ns = namespace(&ns)?;
    let missing = not_found(&ns);
    let found = store_call("namespace", move || {
        let Some(definition) = state.store.namespace(&ns)? else {
            return Ok(None);
        };
        let rewrite = state.store.rewrite(&ns)?;
        let (definition, builds) = with_builds(&state.store, definition)?;
        Ok(Some((definition, builds, rewrite)))
    })
    .await?
    .ok_or(missing)?;
    // The ETag is the definition's version: a build's progress is not a new version.
    if let Some(answer) = precondition::not_modified_answer(&headers, found.0.version)? {
        return Ok(answer);
    }
    let (definition, builds, rewrite) = found;
    Ok(definition_response(
        StatusCode::OK,
        (definition, visible(&access, builds)),
        rewrite,
    ))
}

/// The kept versions of a namespace's definition, oldest first: each version's schema and the
/// migration steps from the one before (docs/migrations.md).
#[utoipa::path(get, path = "/v1/namespaces/{namespace}/versions", tag = "namespaces", operation_id = "listNamespaceVersions",
    params(("namespace" = String, Path, description = "The namespace", example = "post", pattern = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")),
    responses((status = 200, body = VersionsOut),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, description = "The namespace has no definition and kept no version", body = ErrorBody),
        (status = 503, body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn versions<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    _: Access,
    Path(ns): Path<String>,
    _: NoQuery,
) -> Result<axum::Json<VersionsOut>, ApiError> {
    let ns = namespace(&ns)?;
    let missing = not_found(&ns);
    let versions = store_call("namespace_versions", move || {
        Ok(state.store.namespace_versions(&ns)?)
    })
    .await?;
    if versions.is_empty() {
        return Err(missing);
    }
    Ok(axum::Json(VersionsOut {
        versions: versions
            .into_iter()
            .map(|d| DefinitionOut::new(d, Vec::new()))
            .collect(),
    }))
}

/// One kept version of a namespace's definition: its schema and the steps from the version
/// before.
#[utoipa::path(get, path = "/v1/namespaces/{namespace}/versions/{version}", tag = "namespaces", operation_id = "getNamespaceVersion",
    params(("namespace" = String, Path, description = "The namespace", example = "post", pattern = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"),
        ("version" = u64, Path, description = "The definition version", minimum = 1)),
    responses((status = 200, body = DefinitionOut),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, description = "No such version kept", body = ErrorBody),
        (status = 503, body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn version<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    _: Access,
    Path((ns, version)): Path<(String, String)>,
    _: NoQuery,
) -> Result<axum::Json<DefinitionOut>, ApiError> {
    let ns = namespace(&ns)?;
    let version: u64 = version.parse().ok().filter(|v| *v > 0).ok_or_else(|| {
        ApiError::bad_request(format!("version {version:?}: versions are 1, 2, ..."))
    })?;
    let missing = ApiError::not_found(format!("namespace {ns} has no version {version} kept"));
    let found = store_call("namespace_version", move || {
        Ok(state.store.namespace_version(&ns, version)?)
    })
    .await?
    .ok_or(missing)?;
    Ok(axum::Json(DefinitionOut::new(found, Vec::new())))
}

/// A definition's alias builds as `access` may see them: a build's conflicts name items from
/// anywhere in the database, so only a token that may read everything sees them (the others see
/// the state and the counts).
fn visible(
    access: &Access,
    mut builds: Vec<pathdb_store::AliasBuild>,
) -> Vec<pathdb_store::AliasBuild> {
    if !access.everywhere(pathdb_store::Op::Read) {
        for build in &mut builds {
            build.conflicts.clear();
        }
    }
    builds
}

/// Creates or replaces a namespace's definition (the `admin` scope). It applies to every write
/// that starts after the answer; items stored already are not checked again. With
/// `dry_run=true` nothing is stored: the answer says how many of the namespace's stored items
/// the schema would refuse (reading every item of the database).
#[utoipa::path(put, path = "/v1/namespaces/{namespace}", tag = "namespaces", operation_id = "putNamespace",
    params(("namespace" = String, Path, description = "The namespace: a letter or `_`, then letters, digits and `_` (at most 64)", example = "post", pattern = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"), DefinitionPutQuery,
        ("If-None-Match" = Option<String>, Header, description = "`*`: fail with 412 if the namespace has a definition", pattern = r"^\*$"),
        ("If-Match" = Option<String>, Header, description = "`*`: fail with 412 unless it has one; entity tags (`\"3\"`): unless it is at one of these versions", pattern = r#"^(\*|((W/)?"?[0-9]{1,19}"?)( *, *(W/)?"?[0-9]{1,19}"?)*)$"#)),
    request_body(content = DefinitionIn, content_type = "application/json"),
    responses(
        (status = 200, description = "Replaced (a definition, with its `ETag`); with `dry_run=true`, what the schema would say about the items stored", body = DefinitionPutOut),
        (status = 201, description = "Created", body = DefinitionOut, headers(("ETag" = String, description = "The new version, quoted"))),
        (status = 400, description = "`invalid_schema`: the schema is not a valid JSON Schema, or refers outside itself; `invalid_request`: an unknown member, a history of 0", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, description = "The token's scope is not `admin`", body = ErrorBody),
        (status = 412, description = "If-Match or If-None-Match did not hold; nothing stored", body = ErrorBody),
        (status = 415, description = "The body is not declared as application/json", body = ErrorBody),
        (status = 503, body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn put<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    access: Access,
    Path(ns): Path<String>,
    Query(q): Query<DefinitionPutQuery>,
    Preconditions(headers): Preconditions,
    Json(body): Json<serde_json::Map<String, serde_json::Value>>,
) -> Result<Response, ApiError> {
    access.need_admin()?;
    let ns = namespace(&ns)?;
    // An object, read here rather than by the extractor: serde would also take an array for a
    // struct, and an unknown member is the caller's mistake to name, not a JSON error.
    let body: DefinitionIn = serde_json::from_value(serde_json::Value::Object(body))
        .map_err(|e| ApiError::bad_request(format!("a namespace definition: {e}")))?;
    let precondition = precondition::write_precondition(&headers)?;
    let migrate = body
        .migrate
        .into_iter()
        .enumerate()
        .map(|(i, step)| {
            serde_json::from_value::<pathdb_store::MigrationStep>(step)
                .map_err(|e| ApiError::bad_request(format!("migrate[{i}]: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let formats = match body.formats.as_deref() {
        None => None,
        Some("assert") => Some(pathdb_store::Formats::Assert),
        Some("annotate") => Some(pathdb_store::Formats::Annotate),
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "formats: {other:?} is neither \"assert\" nor \"annotate\""
            )));
        }
    };
    let definition = Definition {
        schema: body.schema.filter(|s| !s.is_null()),
        history: body.history,
        description: body.description,
        aliases: body
            .aliases
            .into_iter()
            .map(|a| AliasDefinition { path: a.path })
            .collect(),
        migrate,
        formats,
        changes: body.changes,
    };
    let force = q.force.unwrap_or(false);
    if q.dry_run == Some(true) {
        // What the real PUT would refuse first (the definition, its preconditions), then the
        // scan.
        let check = store_call("check_schema", move || {
            let condition = resolve(precondition, &state.store, &ns)?;
            let store = &state.store;
            let problems = store.incompatibilities(&ns, &definition)?;
            let check = match store.check_definition(&ns, &definition, condition)? {
                Some(schema) => {
                    store.check_schema_after(&ns, &schema, &definition.migrate, &mut |_| {})?
                }
                None => pathdb_store::SchemaCheck {
                    checked: 0,
                    violating: 0,
                    first: Vec::new(),
                },
            };
            Ok((check, problems))
        })
        .await?;
        let (check, problems) = check;
        return Ok(axum::Json(DefinitionPutOut::DryRun(DryRunOut {
            checked: check.checked,
            violating: check.violating,
            first: check.first.into_iter().map(Into::into).collect(),
            problems,
        }))
        .into_response());
    }
    let (stored, created) = store_call("define_namespace", move || {
        let condition = resolve(precondition, &state.store, &ns)?;
        let (stored, created) = state
            .store
            .define_namespace_with(&ns, definition, condition, force)?;
        let mut answer = with_builds(&state.store, stored)?;
        // A small database's builds finish within the request: the answer says `ready`.
        // Longer ones go on in the background (their progress in GET).
        if answer
            .1
            .iter()
            .any(|b| b.state != pathdb_store::AliasState::Ready)
        {
            state.store.step_alias_builds(SYNC_BUILD)?;
            answer = with_builds(&state.store, answer.0)?;
        }
        Ok((answer, created))
    })
    .await?;
    Ok(definition_response(created_or_ok(created), stored, None))
}

/// Removes a namespace's definition (the `admin` scope); its items stay.
#[utoipa::path(delete, path = "/v1/namespaces/{namespace}", tag = "namespaces", operation_id = "deleteNamespace",
    params(("namespace" = String, Path, description = "The namespace: a letter or `_`, then letters, digits and `_` (at most 64)", example = "post", pattern = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"),
        ("If-Match" = Option<String>, Header, description = "`*` or entity tags: fail with 412 unless the definition is at one of these versions", pattern = r#"^(\*|((W/)?"?[0-9]{1,19}"?)( *, *(W/)?"?[0-9]{1,19}"?)*)$"#)),
    responses(
        (status = 204, description = "Removed"),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, description = "The token's scope is not `admin`", body = ErrorBody),
        (status = 404, description = "The namespace has no definition", body = ErrorBody),
        (status = 412, description = "If-Match did not hold; nothing removed", body = ErrorBody),
        (status = 503, body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn delete<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    access: Access,
    Path(ns): Path<String>,
    _: NoQuery,
    Preconditions(headers): Preconditions,
) -> Result<Response, ApiError> {
    access.need_admin()?;
    let ns = namespace(&ns)?;
    let precondition = precondition::for_delete(precondition::write_precondition(&headers)?)?;
    let missing = not_found(&ns);
    store_call("delete_namespace", move || {
        let condition = resolve(precondition, &state.store, &ns)?;
        Ok(state.store.delete_namespace(&ns, condition)?)
    })
    .await?
    .ok_or(missing)?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Lists, paged, the stored items of a namespace that its current schema refuses. Reads every
/// item of the database (the namespace of an item is only known from its path), a bounded share
/// per page: a page may hold fewer items than `limit`, even none, and still have a
/// `next_page_token`.
#[utoipa::path(get, path = "/v1/namespaces/{namespace}/violations", tag = "namespaces", operation_id = "listNamespaceViolations",
    params(("namespace" = String, Path, description = "The namespace: a letter or `_`, then letters, digits and `_` (at most 64)", example = "post", pattern = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"), ViolationsQuery),
    responses((status = 200, body = ViolationsOut),
        (status = 400, description = "An invalid namespace, limit or page token", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, description = "The namespace has no definition", body = ErrorBody),
        (status = 503, body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn violations<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    access: Access,
    Path(ns): Path<String>,
    Query(q): Query<ViolationsQuery>,
) -> Result<axum::Json<ViolationsOut>, ApiError> {
    // Paths from anywhere in the database: for a token that may read everything.
    if !access.everywhere(pathdb_store::Op::Read) {
        return Err(
            ApiError::forbidden(pathdb_store::Op::Read, None, None).with_message(
                "violations are found across the whole database: they need read on /**",
            ),
        );
    }
    let ns = namespace(&ns)?;
    let limit = limit(q.limit)?;
    let page = store_call("namespace_violations", move || {
        Ok(state.store.namespace_violations(&ns, q.page_token, limit)?)
    })
    .await?;
    Ok(axum::Json(ViolationsOut {
        items: page.items.into_iter().map(Into::into).collect(),
        checked: page.checked,
        next_page_token: page.cursor,
    }))
}

/// Starts the build of an alias template that stopped in `conflict` again from the beginning
/// (the `admin` scope); fix the items its `conflicts` list first. Answers the definition.
#[utoipa::path(post, path = "/v1/namespaces/{namespace}/aliases/retry", tag = "namespaces", operation_id = "retryAliasBuild",
    params(("namespace" = String, Path, description = "The namespace: a letter or `_`, then letters, digits and `_` (at most 64)", example = "user", pattern = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")),
    request_body(content = AliasRetryIn, content_type = "application/json"),
    responses(
        (status = 200, description = "The build starts again: the definition with its builds", body = DefinitionOut),
        (status = 400, description = "The template's build is not in conflict", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, description = "The token's scope is not `admin`", body = ErrorBody),
        (status = 404, description = "The namespace has no definition", body = ErrorBody),
        (status = 415, description = "The body is not declared as application/json", body = ErrorBody),
        (status = 503, body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn retry_alias<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    access: Access,
    Path(ns): Path<String>,
    _: NoQuery,
    Json(body): Json<AliasRetryIn>,
) -> Result<Response, ApiError> {
    access.need_admin()?;
    let ns = namespace(&ns)?;
    let missing = not_found(&ns);
    let found = store_call("retry_alias_build", move || {
        let Some(definition) = state.store.namespace(&ns)? else {
            return Ok(None);
        };
        state.store.retry_alias_build(&ns, &body.path)?;
        Ok(Some(with_builds(&state.store, definition)?))
    })
    .await?
    .ok_or(missing)?;
    Ok(definition_response(StatusCode::OK, found, None))
}

/// `definition` with where its alias templates stand (the builds are read; the definition,
/// which the caller has, is not read again).
fn with_builds<B: Backend>(
    store: &pathdb_store::Store<B>,
    definition: NamespaceDefinition,
) -> Result<(NamespaceDefinition, Vec<pathdb_store::AliasBuild>), pathdb_store::Error> {
    let builds = store
        .alias_builds_of(std::slice::from_ref(&definition))?
        .pop()
        .unwrap_or_default();
    Ok((definition, builds))
}

/// The store condition of an HTTP precondition on `ns`'s definition.
fn resolve<B: Backend>(
    precondition: WritePrecondition,
    store: &pathdb_store::Store<B>,
    ns: &str,
) -> Result<Option<Condition>, ApiError> {
    precondition.resolve(|| Ok(store.namespace(ns)?.map(|d| d.version)))
}
