//! One error type for every handler: `{"error": {"code", "message"}}` with the right status.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

/// The error body of every failed request.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// What went wrong.
#[derive(Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable, machine-readable: `invalid_path`, `invalid_json`, `invalid_request`,
    /// `invalid_page_token`, `unauthorized`, `forbidden`, `origin_not_allowed`,
    /// `host_not_allowed`, `not_found`, `method_not_allowed`, `condition_failed`, `conflict` (no
    /// longer answered: a transaction that loses a race plans again and answers
    /// `condition_failed` if its condition no longer holds),
    /// `too_large`, `unsupported_media_type`, `timeout`, `unavailable` (503, with
    /// `Retry-After` when retrying later should help), `insufficient_storage` (507: the disk is
    /// full), `outcome_unknown` (503: a write was sent but its outcome could not be learned),
    /// `internal`, `read_only` (403: the server's database is open read-only),
    /// `schema_violation` (422: a value does not fit its namespace's schema; see
    /// `violations`), `invalid_schema` (400: a namespace definition's schema is not one),
    /// `alias_taken` (409: another item holds an alias the write would give; see `alias` and
    /// `holder`), `path_is_alias` (409: the path written is an alias of `item`),
    /// `alias_invalid` (422: `member` of the value cannot fill an alias id), `alias_building`
    /// (503: the alias's template is still being built; see `template`, `state`, `checked`),
    /// `builtin_role` (409: the built-in roles cannot change), `unknown_role` (422: a token for
    /// a role that does not exist), `invalid_role` (422: a role's rule is not valid),
    /// `invalid_filter` (400: a `filter` that does not compile, is too long or nests too deep;
    /// see `position`), `unknown_schema_version` (400: a `Schema-Version` names a version the
    /// namespace does not have), `incompatible_schema` (409: a definition version that breaks
    /// stored items or older clients, not forced; see `problems`), `migration_failed` (422: a
    /// value written in an older version that its steps cannot bring forward).
    pub code: String,
    /// For people.
    pub message: String,
    /// In a transaction's answer, the index of the operation that failed (a failed condition:
    /// `condition_failed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<usize>,
    /// In an import's answer, the line (from 1) the error is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// With `schema_violation`, `alias_invalid`, `path_is_alias`: the item (or path) written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// With `schema_violation`: what failed (at most 20), each with a JSON pointer into the
    /// value and one into the schema.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub violations: Option<Vec<ViolationOut>>,
    /// With `invalid_filter`: where in the filter (characters from its start, 0-based) the
    /// problem is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<usize>,
    /// With `incompatible_schema`: each thing the new definition version would break
    /// (docs/migrations.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problems: Option<Vec<String>>,
    /// With `alias_taken`: the alias path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    /// With `alias_taken`: the item that holds it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    /// With `path_is_alias`: the item whose alias the path is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item: Option<String>,
    /// With `alias_invalid`: the value's member (`address.city`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub member: Option<String>,
    /// With `alias_building`: the template.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// With `alias_building`: `building` or `conflict`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// With `alias_building`: items the build has checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checked: Option<u64>,
    /// With `forbidden`: the operation refused (`read`, `write`, `admin`); `path` names where.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    /// With `unauthorized`: why (`missing`, `unknown_token`, `expired`, and for a JWT
    /// `not_yet_valid`, `wrong_issuer`, `wrong_audience`, `unknown_key`,
    /// `algorithm_not_allowed`, `bad_signature`, `malformed`, `no_role`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One way a value fails its namespace's schema.
#[derive(Serialize, serde::Deserialize, ToSchema, Clone, Debug)]
pub struct ViolationOut {
    /// JSON pointer to the failing part of the value (`""`: the whole value).
    #[schema(example = "/age")]
    pub instance_path: String,
    /// JSON pointer to the failing keyword in the schema.
    #[schema(example = "/properties/age/type")]
    pub schema_path: String,
    /// For people.
    pub message: String,
}

impl From<pathdb_store::Violation> for ViolationOut {
    fn from(v: pathdb_store::Violation) -> ViolationOut {
        ViolationOut {
            instance_path: v.instance_path,
            schema_path: v.schema_path,
            message: v.message,
        }
    }
}

/// What an error about a value or an alias carries besides its message.
#[derive(Debug, Default)]
struct Refused {
    path: Option<String>,
    violations: Option<Vec<ViolationOut>>,
    alias: Option<String>,
    holder: Option<String>,
    item: Option<String>,
    member: Option<String>,
    template: Option<String>,
    state: Option<String>,
    checked: Option<u64>,
    operation: Option<String>,
    reason: Option<String>,
    position: Option<usize>,
    problems: Option<Vec<String>>,
}

/// A failed request.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    /// Seconds for `Retry-After`, on answers where waiting should help.
    retry_after: Option<u64>,
    /// The transaction operation it is about.
    index: Option<usize>,
    /// The import line it is about.
    line: Option<u64>,
    /// A refused value's path and violations.
    refused: Option<Box<Refused>>,
}

impl ApiError {
    /// An error with a status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            retry_after: None,
            index: None,
            line: None,
            refused: None,
        }
    }

    /// The same error, about line `line` of an import (`error.line`, and named in the
    /// message).
    pub fn at_line(self, line: u64) -> ApiError {
        ApiError {
            message: format!("line {line}: {}", self.message),
            line: Some(line),
            ..self
        }
    }

    /// The same error, about operation `index` of a transaction (`error.index`, and named in
    /// the message).
    pub fn at_operation(self, index: usize) -> ApiError {
        ApiError {
            message: format!("operation {index}: {}", self.message),
            index: Some(index),
            ..self
        }
    }

    /// The same error, telling the client to retry after `seconds` (`Retry-After`).
    pub fn retry_after(self, seconds: u64) -> ApiError {
        ApiError {
            retry_after: Some(seconds),
            ..self
        }
    }

    /// 400 `invalid_request`.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }

    /// 404 `not_found`.
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// The same error with another message (one that adds context).
    pub fn with_message(self, message: impl Into<String>) -> ApiError {
        ApiError {
            message: message.into(),
            ..self
        }
    }

    /// 403 `forbidden`: `op` is not allowed on `path` (`None`: an admin operation), `scope`
    /// says more (`on the whole subtree`). It names the operation and the path, never a value.
    pub fn forbidden(
        op: pathdb_store::Op,
        path: Option<&pathdb_keys::KeyPath>,
        scope: Option<&str>,
    ) -> ApiError {
        let message = match (path, scope) {
            (Some(path), Some(scope)) => format!("this token may not {op} {path} {scope}"),
            (Some(path), None) => format!("this token may not {op} {path}"),
            (None, _) => {
                "this needs a token that may administer the database (admin on /**)".to_owned()
            }
        };
        let mut error = ApiError::new(StatusCode::FORBIDDEN, "forbidden", message);
        error.refused = Some(Box::new(Refused {
            path: path.map(ToString::to_string),
            operation: Some(op.as_str().to_owned()),
            ..Refused::default()
        }));
        error
    }

    /// The same error with `reason` (a 401's).
    pub fn with_reason(mut self, reason: Option<&'static str>) -> ApiError {
        if let Some(reason) = reason {
            self.refused.get_or_insert_with(Box::default).reason = Some(reason.to_owned());
        }
        self
    }

    /// The same error without the paths of other items it names (an alias's holder, the item
    /// behind an alias) that `readable` says the caller may not read: a refusal of a write must
    /// not tell where another tenant's item is.
    pub fn hiding(mut self, readable: impl Fn(&str) -> bool) -> ApiError {
        let Some(refused) = self.refused.as_mut() else {
            return self;
        };
        let mut hidden = false;
        for named in [&mut refused.holder, &mut refused.item] {
            if named.as_deref().is_some_and(|path| !readable(path)) {
                *named = None;
                hidden = true;
            }
        }
        if hidden {
            self.message = match self.code {
                "alias_taken" => format!(
                    "alias {} is taken by an item this token may not read",
                    refused.alias.as_deref().unwrap_or("")
                ),
                "path_is_alias" => format!(
                    "{} is an alias of an item this token may not read",
                    refused.path.as_deref().unwrap_or("")
                ),
                _ => "refused: it concerns an item this token may not read".to_owned(),
            };
        }
        self
    }

    /// The message, for a place that can carry only text (an event stream's last event).
    pub fn to_string_lossy(&self) -> String {
        format!("{}: {}", self.code, self.message)
    }

    /// The status.
    pub fn status(&self) -> StatusCode {
        self.status
    }
}

impl From<pathdb_store::Error> for ApiError {
    fn from(e: pathdb_store::Error) -> ApiError {
        use pathdb_store::Error as E;
        if let E::SchemaViolation {
            path, violations, ..
        } = &e
        {
            let mut error = ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "schema_violation",
                e.to_string(),
            );
            error.refused = Some(Box::new(Refused {
                path: Some(path.to_string()),
                violations: Some(violations.iter().cloned().map(Into::into).collect()),
                ..Refused::default()
            }));
            return error;
        }
        let refused = match &e {
            E::AliasTaken { alias, holder, .. } => Some((
                StatusCode::CONFLICT,
                "alias_taken",
                Refused {
                    alias: Some(alias.to_string()),
                    holder: Some(holder.to_string()),
                    ..Refused::default()
                },
            )),
            E::InvalidFilter { position, .. } => Some((
                StatusCode::BAD_REQUEST,
                "invalid_filter",
                Refused {
                    position: Some(*position),
                    ..Refused::default()
                },
            )),
            E::IncompatibleSchema { problems, .. } => Some((
                StatusCode::CONFLICT,
                "incompatible_schema",
                Refused {
                    problems: Some(problems.clone()),
                    ..Refused::default()
                },
            )),
            E::MigrationFailed { path, .. } => Some((
                StatusCode::UNPROCESSABLE_ENTITY,
                "migration_failed",
                Refused {
                    path: Some(path.to_string()),
                    ..Refused::default()
                },
            )),
            E::Unreadable { path } => {
                return ApiError::forbidden(
                    pathdb_store::Op::Read,
                    Some(path),
                    Some("entirely: the listing reads paths this token may not read"),
                );
            }
            E::PathIsAlias { path, item } => Some((
                StatusCode::CONFLICT,
                "path_is_alias",
                Refused {
                    path: Some(path.to_string()),
                    item: Some(item.to_string()),
                    ..Refused::default()
                },
            )),
            E::AliasInvalid { path, member, .. } => Some((
                StatusCode::UNPROCESSABLE_ENTITY,
                "alias_invalid",
                Refused {
                    path: Some(path.to_string()),
                    member: Some(member.to_string()),
                    ..Refused::default()
                },
            )),
            E::AliasBuilding {
                template,
                state,
                checked,
                ..
            } => Some((
                StatusCode::SERVICE_UNAVAILABLE,
                "alias_building",
                Refused {
                    template: Some(template.clone()),
                    state: Some((*state).to_owned()),
                    checked: Some(*checked),
                    ..Refused::default()
                },
            )),
            _ => None,
        };
        if let Some((status, code, refused)) = refused {
            let mut error = ApiError::new(status, code, e.to_string());
            error.refused = Some(Box::new(refused));
            return match code {
                // A build takes a while; asking again in a second or two is right.
                "alias_building" => error.retry_after(1),
                _ => error,
            };
        }
        let (status, code) = match &e {
            E::ConditionFailed { .. } | E::ListChanged { .. } => {
                (StatusCode::CONFLICT, "condition_failed")
            }
            E::Conflict { .. } => (StatusCode::CONFLICT, "conflict"),
            E::KeyTooLarge { .. } | E::ItemTooLarge { .. } => {
                (StatusCode::PAYLOAD_TOO_LARGE, "too_large")
            }
            E::InvalidJson(_) => (StatusCode::BAD_REQUEST, "invalid_json"),
            E::InvalidPageToken(_) => (StatusCode::BAD_REQUEST, "invalid_page_token"),
            E::InvalidChangeToken(_) => (StatusCode::BAD_REQUEST, "invalid_change_token"),
            E::ChangesExpired(_) => (StatusCode::GONE, "token_expired"),
            E::InvalidRequest(_) => (StatusCode::BAD_REQUEST, "invalid_request"),
            E::NothingBelow { .. } | E::ItemNotFound { .. } => (StatusCode::NOT_FOUND, "not_found"),
            E::PatchTestFailed { .. } => (StatusCode::CONFLICT, "patch_test_failed"),
            E::PatchConflict { .. } => (StatusCode::CONFLICT, "patch_conflict"),
            E::DestinationNotEmpty { .. } => (StatusCode::CONFLICT, "destination_not_empty"),
            E::ReadOnly => (StatusCode::FORBIDDEN, "read_only"),
            E::InvalidSchema(_) => (StatusCode::BAD_REQUEST, "invalid_schema"),
            E::NamespaceNotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            // Only an HTTP precondition puts a condition on a definition.
            E::DefinitionConditionFailed { .. } | E::RoleConditionFailed { .. } => {
                (StatusCode::PRECONDITION_FAILED, "condition_failed")
            }
            E::BuiltinRole(_) => (StatusCode::CONFLICT, "builtin_role"),
            E::UnknownRole(_) => (StatusCode::UNPROCESSABLE_ENTITY, "unknown_role"),
            E::UnknownSchemaVersion { .. } => (StatusCode::BAD_REQUEST, "unknown_schema_version"),
            E::Storage(storage) => return storage_error(storage),
            _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        };
        // A 5xx is logged with its request by gate::RequestIdLayer.
        ApiError::new(status, code, e.to_string())
    }
}

/// A storage failure: 507 for a full disk, 503 otherwise, with `Retry-After` where waiting
/// helps. Counted by kind in `/metrics` (`pathdb_storage_errors_total`).
fn storage_error(e: &pathdb_store::StorageError) -> ApiError {
    use pathdb_store::StorageErrorKind as K;
    let kind = e.kind();
    metrics::counter!("pathdb_storage_errors_total", "kind" => kind.as_str()).increment(1);
    let error = match kind {
        K::Full => ApiError::new(
            StatusCode::INSUFFICIENT_STORAGE,
            "insufficient_storage",
            e.to_string(),
        ),
        K::OutcomeUnknown => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "outcome_unknown",
            e.to_string(),
        ),
        _ => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            e.to_string(),
        ),
    };
    match kind {
        K::Full | K::Unavailable => error.retry_after(1),
        _ => error,
    }
}

impl From<pathdb_keys::ParseError> for ApiError {
    fn from(e: pathdb_keys::ParseError) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_path", e.to_string())
    }
}

/// What a 5xx answer says about its cause, for the request log (`gate::RequestIdLayer`):
/// `ApiError` puts it in the answer's extensions, and the log, above every handler, reads it
/// there (so the log depends on this module, never the other way round).
#[derive(Clone, Debug)]
pub(crate) struct ServerFailure {
    pub(crate) code: &'static str,
    pub(crate) message: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let refused = self.refused.map(|r| *r).unwrap_or_default();
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code.to_owned(),
                message: self.message,
                index: self.index,
                line: self.line,
                path: refused.path,
                violations: refused.violations,
                alias: refused.alias,
                holder: refused.holder,
                item: refused.item,
                member: refused.member,
                template: refused.template,
                state: refused.state,
                checked: refused.checked,
                operation: refused.operation,
                reason: refused.reason,
                position: refused.position,
                problems: refused.problems,
            },
        };
        let failure = self.status.is_server_error().then(|| ServerFailure {
            code: self.code,
            message: body.error.message.clone(),
        });
        let mut response = (self.status, axum::Json(body)).into_response();
        if let Some(failure) = failure {
            response.extensions_mut().insert(failure);
        }
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, seconds.into());
        }
        response
    }
}

#[cfg(test)]
mod test;
