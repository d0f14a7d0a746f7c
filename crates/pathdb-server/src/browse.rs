//! What a browser (the console) needs besides items: the groups at the root, a key path's
//! encoding and the equivalent stored keys, and what the presented token may do.

use crate::AppState;
use crate::auth::Access;
use crate::calls::{page_limit, store_call};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{NoQuery, Query, UrlPath};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use pathdb_keys::KeyRange;
use pathdb_store::backend::Backend;
use pathdb_store::{DEFAULT_GROUPS_LIMIT, MAX_GROUPS_LIMIT};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// Options of `GET /v1/groups`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
// Unknown parameters are refused (400), not ignored: a misspelt option must not look applied.
#[serde(deny_unknown_fields)]
pub struct GroupsQuery {
    /// Only the groups whose namespace starts with this (`user` lists `/user-7`, `/users-2`
    /// and `/user_old-1`; compared byte for byte, so case-sensitive). Namespace characters only
    /// (letters, digits, `_`): it never matches into the id. Empty or absent: every group.
    #[param(pattern = "^[A-Za-z0-9_]{0,64}$", example = "user")]
    pub prefix: Option<String>,
    /// Groups per page, 1..=1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<usize>,
    /// Continue after the page that returned this token.
    pub page_token: Option<String>,
}

/// A page of groups.
#[derive(Serialize, ToSchema)]
pub struct GroupsOut {
    /// One-element key paths, in ascending key order.
    #[schema(example = json!(["/season-2026-spring", "/user-7"]))]
    pub groups: Vec<String>,
    /// Present when more groups may follow: pass it as `page_token`.
    pub next_page_token: Option<String>,
}

/// Lists the groups (first elements of stored paths) in key order, one page at a time, all of
/// them or those whose namespace starts with `prefix`. A page token continues only the listing
/// (and prefix) that returned it. A group whose items are all deleted is listed while its
/// tombstones are stored. On DynamoDB every page scans the table's keys.
#[utoipa::path(get, path = "/v1/groups", tag = "items", operation_id = "listGroups",
    params(GroupsQuery),
    responses((status = 200, body = GroupsOut), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, description = "A web origin or Host the server does not allow", body = ErrorBody),
        (status = 503, body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn groups<B: Backend>(
    axum::extract::State(state): axum::extract::State<AppState<B>>,
    access: Access,
    Query(q): Query<GroupsQuery>,
) -> Result<axum::Json<GroupsOut>, ApiError> {
    let limit = page_limit(q.limit, DEFAULT_GROUPS_LIMIT, MAX_GROUPS_LIMIT)?;
    let page = store_call("groups", move || {
        Ok(state.store.groups_with_prefix(
            q.prefix.as_deref().unwrap_or(""),
            limit,
            q.page_token.as_deref(),
        )?)
    })
    .await?;
    Ok(axum::Json(GroupsOut {
        // Only the groups the token may read something in (a page may come out shorter).
        groups: page
            .groups
            .iter()
            .filter(|group| access.reaches(pathdb_store::Op::Read, group))
            .map(ToString::to_string)
            .collect(),
        next_page_token: page.next_page_token,
    }))
}

/// One segment of a key path's encoding.
#[derive(Serialize, ToSchema)]
pub struct SegmentOut {
    /// The namespace, or the id as written in a path.
    pub text: String,
    /// `namespace`, or the id's type (`integer`, `string`, `uuid`, `bytes`, `desc integer`, ...).
    pub kind: String,
    /// The encoded segment, hex.
    pub bytes_hex: String,
    /// The metadata varint, hex.
    pub meta_hex: String,
    /// The segment type code in the metadata.
    pub type_code: u8,
}

/// A sort-key range inside the path's partition, as DynamoDB's `BETWEEN :a AND :z` takes it:
/// `z` is never a stored key, so the inclusive `BETWEEN` reads exactly `[a, z)`.
#[derive(Serialize, ToSchema)]
pub struct SortRangeOut {
    /// The first sort key, base64.
    pub start_base64: String,
    /// The end, base64 (`/w==` (`ff`) where the range runs to the end of the items: revisions
    /// start with `ff` and follow every item).
    pub end_base64: String,
}

/// A key path's encoding and where it is stored.
#[derive(Serialize, ToSchema)]
pub struct KeyOut {
    /// The canonical text form.
    pub path: String,
    /// Namespaces and ids, alternating.
    pub segments: Vec<SegmentOut>,
    /// The whole encoding, hex.
    pub encoded_hex: String,
    /// Sizes in bytes: `encoded`, `segment`, `separator`, `terminator`, `metadata`, `text`.
    pub sizes: std::collections::BTreeMap<String, usize>,
    /// The partition key (`pk`), base64.
    pub pk_base64: String,
    /// The sort key (`sk`), base64.
    pub sk_base64: String,
    /// The node and its subtree.
    pub subtree: SortRangeOut,
    /// The node's descendants without the node (with `children=true`, the store seeks over each
    /// child's subtree inside this range).
    pub descendants: SortRangeOut,
}

fn sort_range(range: KeyRange) -> SortRangeOut {
    SortRangeOut {
        start_base64: STANDARD.encode(&range.start),
        end_base64: STANDARD.encode(range.end.unwrap_or_else(|| vec![0xff])),
    }
}

/// Explains a key path's encoding (as `pathdb key explain`) and the DynamoDB keys and ranges
/// that hold it. Reads no data.
#[utoipa::path(get, path = "/v1/keys/{path}", tag = "items", operation_id = "explainKey",
    params(("path" = String, Path, description = "Key path without its leading '/'", example = "user-7/post-1")),
    responses((status = 200, body = KeyOut), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, description = "A web origin or Host the server does not allow", body = ErrorBody),
        (status = 413, body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn explain_key(_: NoQuery, UrlPath(path): UrlPath) -> axum::Json<KeyOut> {
    let explained = path.explain();
    let sizes = [
        ("encoded", explained.encoded.len()),
        ("segment", explained.segment_bytes()),
        ("separator", explained.separators()),
        ("terminator", 1),
        ("metadata", explained.meta_bytes()),
        ("text", explained.path.len()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    axum::Json(KeyOut {
        segments: explained
            .segments
            .iter()
            .map(|s| SegmentOut {
                text: s.text.clone(),
                kind: s.kind.to_owned(),
                bytes_hex: hex::encode(&s.bytes),
                meta_hex: hex::encode(&s.meta),
                type_code: s.type_code,
            })
            .collect(),
        encoded_hex: hex::encode(&explained.encoded),
        sizes,
        pk_base64: STANDARD.encode(path.partition_key()),
        sk_base64: STANDARD.encode(path.sort_key()),
        subtree: sort_range(path.sort_key_subtree_range()),
        descendants: sort_range(path.sort_key_descendants_range()),
        path: explained.path,
    })
}

/// What the presented credentials allow.
#[derive(Serialize, ToSchema)]
pub struct SessionOut {
    /// Whether the server requires a token at all.
    pub auth_required: bool,
    /// The built-in role's name (`read`, `read-write`, `admin`), else `custom` (kept for clients
    /// of earlier builds; `role` and `rules` say more).
    #[schema(example = "read-write")]
    pub scope: String,
    /// How the request proved who it is: `open` (no tokens configured), `config`, `token` (an
    /// issued token) or `jwt`.
    pub via: String,
    /// The role.
    pub role: String,
    /// The role's rules, as written (`{team}` bound by `vars`).
    pub rules: Vec<RuleOut>,
    /// The variables the rules are bound to.
    #[schema(value_type = Object)]
    pub vars: serde_json::Map<String, serde_json::Value>,
    /// An issued token's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_id: Option<String>,
    /// Whether it may administer the database (definitions, roles, tokens).
    pub admin: bool,
}

/// One rule of a role.
#[derive(Serialize, Deserialize, ToSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct RuleOut {
    /// A key path template: `/team-{team}/**`, `/public-1/doc-*`.
    #[schema(example = "/team-{team}/**")]
    pub path: String,
    /// `read`, `write`, `admin`.
    #[schema(example = json!(["read", "write"]))]
    pub allow: Vec<String>,
}

impl From<&pathdb_store::Rule> for RuleOut {
    fn from(rule: &pathdb_store::Rule) -> RuleOut {
        RuleOut {
            path: rule.path.clone(),
            allow: rule.allow.iter().map(|op| op.as_str().to_owned()).collect(),
        }
    }
}

/// What the request's token (or, without tokens configured, anyone) may do, so a client can
/// hide what it may not.
#[utoipa::path(get, path = "/v1/session", tag = "meta", operation_id = "getSession",
    responses((status = 200, body = SessionOut),
        (status = 400, description = "A query parameter (this route takes none)", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, description = "A web origin or Host the server does not allow", body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn session(_: NoQuery, access: Access) -> axum::Json<SessionOut> {
    let principal = access.principal();
    let builtin = pathdb_store::builtin_role(&principal.role).is_some();
    axum::Json(SessionOut {
        auth_required: principal.via != crate::auth::Via::Open,
        scope: if builtin {
            principal.role.clone()
        } else {
            "custom".into()
        },
        via: principal.via.as_str().to_owned(),
        role: principal.role.clone(),
        rules: principal.rules.iter().map(RuleOut::from).collect(),
        vars: principal.vars.clone(),
        token_id: principal.token_id.clone(),
        admin: access.everywhere(pathdb_store::Op::Admin),
    })
}
