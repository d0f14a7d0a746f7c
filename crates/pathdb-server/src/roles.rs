//! `/v1/roles` and `/v1/tokens` (docs/access.md): roles as versioned resources (an `ETag` and
//! `If-Match`, like namespace definitions), and tokens issued, listed and revoked at runtime.
//! Every route needs admin; a change made here is seen by this server's next request (its token
//! caches forget what changed) and by other servers sharing the database within
//! [`crate::auth::REVALIDATE`].

use crate::AppState;
use crate::auth::{Access, Auth};
use crate::browse::RuleOut;
use crate::calls::{created_or_ok, store_call};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Json, NoQuery, Preconditions};
use crate::precondition::{self, WritePrecondition};
use axum::Extension;
use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use pathdb_store::backend::Backend;
use pathdb_store::{Condition, NewToken, Op, Role, Rule, StoredRole, Timestamp, TokenInfo};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A role.
#[derive(Serialize, ToSchema)]
pub struct RoleOut {
    /// Its name.
    pub name: String,
    /// Its rules: a path is allowed an operation when any rule allows it there.
    pub rules: Vec<RuleOut>,
    /// For people.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// 1 when first stored, +1 on every change (0 for a built-in role).
    pub version: u64,
    /// Microseconds since the epoch (0 for a built-in role).
    pub created_at: i64,
    /// Microseconds since the epoch (0 for a built-in role).
    pub modified_at: i64,
    /// `read`, `read-write` and `admin` are built in and cannot change.
    pub builtin: bool,
}

impl From<StoredRole> for RoleOut {
    fn from(role: StoredRole) -> RoleOut {
        RoleOut {
            rules: role.role.rules.iter().map(RuleOut::from).collect(),
            description: role.role.description,
            name: role.name,
            version: role.version,
            created_at: role.created_at.micros(),
            modified_at: role.modified_at.micros(),
            builtin: role.builtin,
        }
    }
}

/// Every role.
#[derive(Serialize, ToSchema)]
pub struct RolesOut {
    /// By name, the built-in ones included.
    pub roles: Vec<RoleOut>,
}

/// A role to store.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RoleIn {
    /// The rules (at most 100).
    pub rules: Vec<RuleOut>,
    /// For people.
    #[serde(default)]
    pub description: Option<String>,
}

/// A token to issue.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenIn {
    /// The role whose rules it has.
    pub role: String,
    /// The values of the rules' variables: `{"team": 7}` (integers or strings, read as key path
    /// ids: `7` matches `/team-7`, `"alice"` `/user-alice`).
    #[serde(default)]
    #[schema(value_type = Object)]
    pub vars: serde_json::Map<String, serde_json::Value>,
    /// When it stops working, in microseconds since the epoch; absent: when revoked.
    #[serde(default)]
    pub expires_at: Option<i64>,
    /// For people.
    #[serde(default)]
    pub description: Option<String>,
}

/// An issued token, without its secret.
#[derive(Serialize, ToSchema)]
pub struct TokenOut {
    /// Its id (the part of the token after `pdb_`, up to the next `_`): safe to show and log.
    pub id: String,
    /// Its role.
    pub role: String,
    /// The values of its role's variables.
    #[schema(value_type = Object)]
    pub vars: serde_json::Map<String, serde_json::Value>,
    /// For people.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Microseconds since the epoch.
    pub created_at: i64,
    /// When it stops working (`null`: when revoked).
    pub expires_at: Option<i64>,
    /// When it was last presented, to the minute (`null`: never).
    pub last_used_at: Option<i64>,
}

impl From<TokenInfo> for TokenOut {
    fn from(t: TokenInfo) -> TokenOut {
        TokenOut {
            id: t.id,
            role: t.role,
            vars: t.vars,
            description: t.description,
            created_at: t.created_at.micros(),
            expires_at: t.expires_at.map(Timestamp::micros),
            last_used_at: t.last_used_at.map(Timestamp::micros),
        }
    }
}

/// A token just issued: the only answer that carries its secret.
#[derive(Serialize, ToSchema)]
pub struct IssuedOut {
    /// The whole token, for `Authorization: Bearer ...`: shown only now, stored only as a hash.
    pub token: String,
    /// The token as listed.
    #[serde(flatten)]
    pub info: TokenOut,
}

/// Every issued token.
#[derive(Serialize, ToSchema)]
pub struct TokensOut {
    /// By id, without secrets (expired ones too, until revoked).
    pub tokens: Vec<TokenOut>,
}

fn role_response(status: StatusCode, role: StoredRole) -> Response {
    let etag = precondition::etag(role.version);
    let mut response = (status, axum::Json(RoleOut::from(role))).into_response();
    if let Ok(etag) = HeaderValue::from_str(&etag) {
        response.headers_mut().insert(header::ETAG, etag);
    }
    response
}

fn role_missing(name: &str) -> ApiError {
    ApiError::not_found(format!("there is no role {name}"))
}

/// The store condition of a role write's `If-Match` / `If-None-Match`.
fn condition<B: Backend>(
    precondition: WritePrecondition,
    store: &pathdb_store::Store<B>,
    name: &str,
) -> Result<Option<Condition>, ApiError> {
    precondition.resolve(|| Ok(store.role(name)?.map(|r| r.version)))
}

/// Lists the roles, the built-in ones included (admin).
#[utoipa::path(get, path = "/v1/roles", tag = "access", operation_id = "listRoles",
    responses((status = 200, body = RolesOut), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 503, body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn list_roles<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    access: Access,
    _: NoQuery,
) -> Result<axum::Json<RolesOut>, ApiError> {
    access.need_admin()?;
    let roles = store_call("roles", move || Ok(state.store.roles()?)).await?;
    Ok(axum::Json(RolesOut {
        roles: roles.into_iter().map(Into::into).collect(),
    }))
}

/// Reads a role (admin).
#[utoipa::path(get, path = "/v1/roles/{name}", tag = "access", operation_id = "getRole",
    params(("name" = String, Path, description = "1 to 64 letters, digits, `_`, `-`, `.`", example = "member")),
    responses((status = 200, body = RoleOut, headers(("ETag" = String, description = "The role's version, quoted"))),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 503, body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn get_role<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    access: Access,
    Path(name): Path<String>,
    _: NoQuery,
) -> Result<Response, ApiError> {
    access.need_admin()?;
    let missing = role_missing(&name);
    let role = store_call("role", move || Ok(state.store.role(&name)?))
        .await?
        .ok_or(missing)?;
    Ok(role_response(StatusCode::OK, role))
}

/// Creates or replaces a role (admin). Its tokens have the new rules from their next request
/// here, and on other servers sharing the database within a second.
#[utoipa::path(put, path = "/v1/roles/{name}", tag = "access", operation_id = "putRole",
    params(("name" = String, Path, description = "1 to 64 letters, digits, `_`, `-`, `.`", example = "member"),
        ("If-None-Match" = Option<String>, Header, description = "`*`: fail with 412 if the role exists", pattern = r"^\*$"),
        ("If-Match" = Option<String>, Header, description = "`*` or entity tags: fail with 412 unless the role is at one of these versions")),
    request_body = RoleIn,
    responses((status = 200, description = "Replaced", body = RoleOut), (status = 201, description = "Created", body = RoleOut),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 409, description = "`builtin_role`: read, read-write and admin cannot change", body = ErrorBody),
        (status = 412, description = "If-Match or If-None-Match did not hold; nothing written", body = ErrorBody),
        (status = 413, body = ErrorBody),
        (status = 415, description = "The body is not declared as application/json", body = ErrorBody),
        (status = 422, description = "`invalid_role`: a rule is not valid (the message names it)", body = ErrorBody),
        (status = 503, body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn put_role<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    Extension(auth): Extension<Auth>,
    access: Access,
    Path(name): Path<String>,
    _: NoQuery,
    Preconditions(headers): Preconditions,
    Json(body): Json<RoleIn>,
) -> Result<Response, ApiError> {
    access.need_admin()?;
    let precondition = precondition::write_precondition(&headers)?;
    let mut rules = Vec::with_capacity(body.rules.len());
    for rule in body.rules {
        let allow = rule
            .allow
            .iter()
            .map(|op| match op.as_str() {
                "read" => Ok(Op::Read),
                "write" => Ok(Op::Write),
                "admin" => Ok(Op::Admin),
                other => Err(invalid_role(format!(
                    "rule {:?}: unknown operation {other:?} (read, write or admin)",
                    rule.path
                ))),
            })
            .collect::<Result<_, _>>()?;
        rules.push(Rule {
            path: rule.path,
            allow,
        });
    }
    let role = Role {
        rules,
        description: body.description,
    };
    let forget = name.clone();
    let (stored, created) = store_call("put_role", move || {
        let condition = condition(precondition, &state.store, &name)?;
        state
            .store
            .put_role(&name, &role, condition)
            .map_err(|e| match e {
                pathdb_store::Error::InvalidRequest(message) => invalid_role(message),
                other => other.into(),
            })
    })
    .await?;
    auth.forget_role(&forget);
    Ok(role_response(created_or_ok(created), stored))
}

fn invalid_role(message: String) -> ApiError {
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_role", message)
}

/// Deletes a role (admin). Its tokens stay, and allow nothing while no role has the name.
#[utoipa::path(delete, path = "/v1/roles/{name}", tag = "access", operation_id = "deleteRole",
    params(("name" = String, Path, description = "The role", example = "member"),
        ("If-Match" = Option<String>, Header, description = "`*` or entity tags: fail with 412 unless the role is at one of these versions")),
    responses((status = 204, description = "Deleted"),
        (status = 400, description = "An invalid If-Match", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "`builtin_role`", body = ErrorBody),
        (status = 412, body = ErrorBody), (status = 503, body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn delete_role<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    Extension(auth): Extension<Auth>,
    access: Access,
    Path(name): Path<String>,
    _: NoQuery,
    Preconditions(headers): Preconditions,
) -> Result<Response, ApiError> {
    access.need_admin()?;
    let precondition = precondition::for_delete(precondition::write_precondition(&headers)?)?;
    let missing = role_missing(&name);
    let forget = name.clone();
    store_call("delete_role", move || {
        let condition = condition(precondition, &state.store, &name)?;
        Ok(state.store.delete_role(&name, condition)?)
    })
    .await?
    .ok_or(missing)?;
    auth.forget_role(&forget);
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Issues a token (admin): the answer is the only place its secret is shown.
#[utoipa::path(post, path = "/v1/tokens", tag = "access", operation_id = "createToken",
    request_body = TokenIn,
    responses((status = 201, body = IssuedOut),
        (status = 400, description = "Variables that are not ids, an expiry in the past", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 413, body = ErrorBody),
        (status = 415, description = "The body is not declared as application/json", body = ErrorBody),
        (status = 422, description = "`unknown_role`", body = ErrorBody), (status = 503, body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn create_token<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    access: Access,
    _: NoQuery,
    Json(body): Json<TokenIn>,
) -> Result<Response, ApiError> {
    access.need_admin()?;
    let token = NewToken {
        role: body.role,
        vars: body.vars,
        expires_at: body.expires_at.map(Timestamp),
        description: body.description,
    };
    let (info, secret) = store_call("create_token", move || {
        Ok(state.store.create_token(&token)?)
    })
    .await?;
    let body = IssuedOut {
        token: secret,
        info: info.into(),
    };
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
}

/// Lists the issued tokens, without their secrets (admin).
#[utoipa::path(get, path = "/v1/tokens", tag = "access", operation_id = "listTokens",
    responses((status = 200, body = TokensOut), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 503, body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn list_tokens<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    access: Access,
    _: NoQuery,
) -> Result<axum::Json<TokensOut>, ApiError> {
    access.need_admin()?;
    let tokens = store_call("tokens", move || Ok(state.store.tokens()?)).await?;
    Ok(axum::Json(TokensOut {
        tokens: tokens.into_iter().map(Into::into).collect(),
    }))
}

/// Reads an issued token, without its secret (admin).
#[utoipa::path(get, path = "/v1/tokens/{id}", tag = "access", operation_id = "getToken",
    params(("id" = String, Path, description = "The token's id")),
    responses((status = 200, body = TokenOut), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 503, body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn get_token<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    access: Access,
    Path(id): Path<String>,
    _: NoQuery,
) -> Result<axum::Json<TokenOut>, ApiError> {
    access.need_admin()?;
    let missing = ApiError::not_found(format!("there is no token {id}"));
    let token = store_call("token", move || Ok(state.store.token(&id)?))
        .await?
        .ok_or(missing)?;
    Ok(axum::Json(token.into()))
}

/// Revokes an issued token (admin): refused from this server's next request, and on other
/// servers sharing the database within a second.
#[utoipa::path(delete, path = "/v1/tokens/{id}", tag = "access", operation_id = "revokeToken",
    params(("id" = String, Path, description = "The token's id")),
    responses((status = 204, description = "Revoked"), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 503, body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn revoke_token<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    Extension(auth): Extension<Auth>,
    access: Access,
    Path(id): Path<String>,
    _: NoQuery,
) -> Result<Response, ApiError> {
    access.need_admin()?;
    let missing = ApiError::not_found(format!("there is no token {id}"));
    let forget = id.clone();
    let revoked = store_call("revoke_token", move || Ok(state.store.revoke_token(&id)?)).await?;
    auth.forget_token(&forget);
    if !revoked {
        return Err(missing);
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}
