//! The JSON shapes of requests and responses. Private to the server: the store's types are not
//! the wire format, so either can change without breaking the other silently.

use pathdb_store::{Item, Json as JsonText, ListedEntry, ListedItem, TxResult};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// An item and its metadata.
#[derive(Serialize, ToSchema)]
pub struct ItemOut {
    /// Canonical key path text.
    #[schema(example = "/user-7/post-1")]
    pub path: String,
    /// 1 on creation, +1 on every write.
    pub version: u64,
    /// Microseconds since the Unix epoch, UTC.
    pub created_at: i64,
    /// Microseconds since the Unix epoch, UTC.
    pub modified_at: i64,
    /// Microseconds since the Unix epoch, UTC; null if the item never expires.
    pub expires_at: Option<i64>,
    /// The JSON value as stored.
    #[schema(value_type = serde_json::Value)]
    pub value: JsonText,
    /// Present when the item was read through an alias path, or is listed (or fed) under
    /// one: that alias (docs/aliases.md). `path` is always the item's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "/email-ada@example.org")]
    pub alias: Option<String>,
    /// The definition version of its namespace the value is in (the one the request's
    /// `Schema-Version` named, else the newest; docs/migrations.md); absent for a namespace
    /// without a definition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<u64>,
}

impl From<Vec<Item>> for ItemsOut {
    fn from(items: Vec<Item>) -> ItemsOut {
        ItemsOut {
            items: items.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<Item> for ItemOut {
    fn from(i: Item) -> ItemOut {
        ItemOut {
            path: i.path.to_string(),
            version: i.version,
            created_at: i.created_at.micros(),
            modified_at: i.modified_at.micros(),
            expires_at: i.expires_at.map(|t| t.micros()),
            alias: i.alias.map(|a| a.to_string()),
            value: i.value,
            schema_version: (i.schema_version != 0).then_some(i.schema_version),
        }
    }
}

/// `item` as JSON: the text serde writes for its [`ItemOut`] (a test holds them equal), written
/// straight into one buffer sized for it. Every answer of one item is this (`calls::
/// item_response`); through serde it took a copy of the path as a `String`, a buffer grown
/// twice, and a parse of the stored value to hand it on as raw JSON (docs/benchmarks.md, issue
/// 37).
pub(crate) fn item_json(item: &Item) -> Vec<u8> {
    let value = item.value.as_str();
    // The metadata takes at most 128 bytes; a path element rarely more than 48.
    let mut out = Vec::with_capacity(128 + 48 * item.path.len() + value.len());
    out.extend_from_slice(b"{\"path\":");
    // The path's text straight into the buffer; a path with a character JSON escapes (`"` or
    // `\` in a string id; key paths have no control characters) is written again by
    // serde_json's string writer, as `ItemOut`'s `String` is.
    out.push(b'"');
    let text = out.len();
    let _ = item.path.write_text(&mut Utf8(&mut out));
    if out[text..]
        .iter()
        .any(|&b| b < 0x20 || b == b'"' || b == b'\\')
    {
        out.truncate(text - 1);
        // Writing to a `Vec` cannot fail.
        let _ = serde_json::to_writer(&mut out, &item.path.to_string());
    } else {
        out.push(b'"');
    }
    let mut number = itoa::Buffer::new();
    out.extend_from_slice(b",\"version\":");
    out.extend_from_slice(number.format(item.version).as_bytes());
    out.extend_from_slice(b",\"created_at\":");
    out.extend_from_slice(number.format(item.created_at.micros()).as_bytes());
    out.extend_from_slice(b",\"modified_at\":");
    out.extend_from_slice(number.format(item.modified_at.micros()).as_bytes());
    out.extend_from_slice(b",\"expires_at\":");
    match item.expires_at {
        Some(at) => out.extend_from_slice(number.format(at.micros()).as_bytes()),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"value\":");
    out.extend_from_slice(value.as_bytes());
    if let Some(alias) = &item.alias {
        out.extend_from_slice(b",\"alias\":");
        // Rare: serde_json's string writer, no fast path.
        let _ = serde_json::to_writer(&mut out, &alias.to_string());
    }
    if item.schema_version != 0 {
        out.extend_from_slice(b",\"schema_version\":");
        out.extend_from_slice(number.format(item.schema_version).as_bytes());
    }
    out.push(b'}');
    out
}

/// Text written into a byte buffer.
struct Utf8<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for Utf8<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// Several items.
#[derive(Serialize, ToSchema)]
pub struct ItemsOut {
    /// In the requested order.
    pub items: Vec<ItemOut>,
}

/// A child path that has no item of its own but items below it (a folder); only children
/// listings return nodes.
#[derive(Serialize, ToSchema)]
pub struct NodeOut {
    /// Canonical key path text.
    #[schema(example = "/drive-a91/folder-photos")]
    pub path: String,
    /// Always true: tells a node from an item.
    #[schema(example = true)]
    pub node: bool,
}

/// One entry of a listing: an item, or in a children listing a node.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum EntryOut {
    /// An item.
    Item(ItemOut),
    /// A node: a child with items below it and none of its own.
    Node(NodeOut),
}

/// A listed item's path is written as text straight from its encoded form: no owned `KeyPath`.
impl From<ListedItem> for ItemOut {
    fn from(i: ListedItem) -> ItemOut {
        ItemOut {
            path: i.path.to_string(),
            version: i.version,
            created_at: i.created_at.micros(),
            modified_at: i.modified_at.micros(),
            expires_at: i.expires_at.map(|t| t.micros()),
            alias: i.alias.map(|a| a.to_string()),
            value: i.value,
            schema_version: (i.schema_version != 0).then_some(i.schema_version),
        }
    }
}

impl From<ListedEntry> for EntryOut {
    fn from(entry: ListedEntry) -> EntryOut {
        match entry {
            ListedEntry::Item(item) => EntryOut::Item(item.into()),
            ListedEntry::Node(path) => EntryOut::Node(NodeOut {
                path: path.to_string(),
                node: true,
            }),
        }
    }
}

/// A page of a listing.
#[derive(Serialize, ToSchema)]
pub struct ListOut {
    /// In the requested order. A children listing also holds nodes (`{"path", "node": true}`):
    /// children with items below them and none of their own.
    pub items: Vec<EntryOut>,
    /// Present when more items follow: pass it as `page_token`.
    pub next_page_token: Option<String>,
    /// On a first page (no `page_token`): the change feed's position at this listing, to
    /// follow `GET /v1/changes/{prefix}?since=` from without a gap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changes_token: Option<String>,
    /// Items this page read: those on it and those `filter` left out. A filtered page may be
    /// empty and still have a `next_page_token`.
    pub scanned: usize,
}

/// The answer of `GET /v1/list/{prefix}`: a page of items, or with `count=true` a count.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum ListAnswer {
    /// A page of items.
    Page(ListOut),
    /// With `count=true`: how many match, and how many were read.
    Count(CountOut),
}

/// The answer of `GET /v1/list/{prefix}?count=true`.
#[derive(Serialize, ToSchema)]
pub struct CountOut {
    /// Entries of the range that match `filter` (every entry, without one), among those read.
    pub count: usize,
    /// Items read (at most `max_scan`).
    pub scanned: usize,
    /// Present when the range goes on past `max_scan`: count on with it as `page_token` and add.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

/// Options of `POST /v1/get`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
// Unknown parameters are refused (400), not ignored: a misspelt option must not look applied.
#[serde(deny_unknown_fields)]
pub struct GetManyQuery {
    /// Only the items this CEL expression matches (docs/filters.md); the others are left out
    /// as missing ones are.
    #[param(max_length = 4096)]
    pub filter: Option<String>,
    /// Only these members of each value: comma-separated dotted paths (`title,author.name`).
    pub fields: Option<String>,
}

/// Options of `GET /v1/changes/{prefix}`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
// Unknown parameters are refused (400), not ignored: a misspelt option must not look applied.
#[serde(deny_unknown_fields)]
pub struct ChangesQuery {
    /// A token from a previous answer (`next_token`), a listing (`changes_token`) or an event id;
    /// without it, the answer is the current position and no changes.
    pub since: Option<String>,
    /// Changes per answer, 1..=1000 (default 100); an answer never ends inside a transaction.
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<usize>,
    /// Seconds to wait for a change when there is none yet (long poll), 0..=60.
    #[param(minimum = 0, maximum = 60)]
    pub wait: Option<u64>,
    /// Follow a filter's result (docs/filters.md): only an item entering it or changing in it
    /// (a `put`) and an item leaving it (a `delete` with `left`), never a change to an item it
    /// matched neither before nor after.
    #[param(max_length = 4096)]
    pub filter: Option<String>,
}

/// One change of the feed, chosen by `op`.
#[derive(Serialize, ToSchema)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum ChangeOut {
    /// The item was created or replaced: the item as written.
    Put {
        /// The item, as `GET /v1/items/{path}` returns it.
        item: ItemOut,
    },
    /// The item was deleted or expired, or (with `alias`) left that alias path.
    Delete {
        /// Its key path.
        path: String,
        /// The version it had.
        version: u64,
        /// The alias path it left (a feed of an alias prefix, docs/aliases.md).
        #[serde(skip_serializing_if = "Option::is_none")]
        alias: Option<String>,
        /// In a filtered feed: the item left the filter's result (it matched before this
        /// change and does not after); it may still exist, at `version`.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        left: bool,
    },
}

impl From<pathdb_store::ChangeEntry> for ChangeOut {
    fn from(entry: pathdb_store::ChangeEntry) -> ChangeOut {
        match entry.change {
            pathdb_store::Change::Put(item) => ChangeOut::Put { item: item.into() },
            pathdb_store::Change::Delete {
                path,
                version,
                alias,
            } => ChangeOut::Delete {
                path: path.to_string(),
                version,
                alias: alias.map(|a| a.to_string()),
                left: entry.left,
            },
        }
    }
}

/// A page of the change feed.
#[derive(Serialize, ToSchema)]
pub struct ChangesOut {
    /// In commit order.
    pub changes: Vec<ChangeOut>,
    /// Where to continue: pass it as `since`.
    pub next_token: String,
}

/// Options of `POST /v1/items/{parent}/{namespace}`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
// Unknown parameters are refused (400), not ignored: a misspelt option must not look applied.
#[serde(deny_unknown_fields)]
pub struct CreateQuery {
    /// How the id is generated: `uuid` (random v4, the default), `rand53` (random integer in
    /// [1, 2^53)) or `sequence` (the next integer for this parent and namespace, never reused).
    #[param(pattern = "^(uuid|rand53|sequence)$")]
    pub id: Option<String>,
    /// Keep this version in the item's history.
    pub history: Option<bool>,
    /// Expire the item this many seconds from now.
    pub ttl_seconds: Option<u64>,
}

/// `POST /v1/get`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GetManyIn {
    /// Key paths in text form, at most 100.
    #[schema(max_items = 100)]
    pub paths: Vec<String>,
}

/// Options of `PATCH /v1/items/{path}`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
// Unknown parameters are refused (400), not ignored: a misspelt option must not look applied.
#[serde(deny_unknown_fields)]
pub struct PatchQuery {
    /// Keep the new version in the item's history.
    pub history: Option<bool>,
    /// Expire the item this many seconds from now.
    pub ttl_seconds: Option<u64>,
    /// Apply the patch to `{}` when no item is there (otherwise 404).
    pub create: Option<bool>,
}

/// Options of `DELETE /v1/items/{path}`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
// Unknown parameters are refused (400), not ignored: a misspelt option must not look applied.
#[serde(deny_unknown_fields)]
pub struct DeleteQuery {
    /// Delete the item, if any, and every live item below it, and answer
    /// `{"deleted": N}`: atomic when it fits in one write, in resumable batches when not.
    pub recursive: Option<bool>,
}

/// What `DELETE /v1/items/{path}` answers: the item, or with `recursive=true` a count.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum DeleteOut {
    /// The deleted item.
    #[expect(
        dead_code,
        reason = "built by `item_response` with its ETag; here for the schema"
    )]
    Item(ItemOut),
    /// How many items a recursive delete deleted.
    Subtree(DeletedOut),
}

/// The answer of a recursive delete.
#[derive(Serialize, ToSchema)]
pub struct DeletedOut {
    /// Items deleted (the item at the path included).
    pub deleted: u64,
}

/// `POST /v1/move` and `POST /v1/copy`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SubtreeIn {
    /// The subtree: this path's item, if any, and every live item below it.
    #[schema(example = "/drive-a91/folder-docs")]
    pub from: String,
    /// Where it goes: `from`'s elements are replaced by these. Must hold no live item, and
    /// neither path may be inside the other.
    #[schema(example = "/drive-b22/folder-docs")]
    pub to: String,
}

/// The answer of `POST /v1/move`.
#[derive(Serialize, ToSchema)]
pub struct MovedOut {
    /// Items moved.
    pub moved: u64,
}

/// The answer of `POST /v1/copy`.
#[derive(Serialize, ToSchema)]
pub struct CopiedOut {
    /// Items copied.
    pub copied: u64,
}

/// Options of `PUT /v1/items/{path}` (the default: none given).
#[derive(Deserialize, IntoParams, Default)]
#[into_params(parameter_in = Query)]
// Unknown parameters are refused (400), not ignored: a misspelt option must not look applied.
#[serde(deny_unknown_fields)]
pub struct PutQuery {
    /// Keep this version in the item's history.
    pub history: Option<bool>,
    /// Expire the item this many seconds from now.
    pub ttl_seconds: Option<u64>,
}

/// Options of `GET /v1/items/{path}`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
// Unknown parameters are refused (400), not ignored: a misspelt option must not look applied.
#[serde(deny_unknown_fields)]
pub struct GetQuery {
    /// A past version from the item's history.
    pub version: Option<u64>,
    /// Only these members of the value: comma-separated dotted paths (`title,author.name`);
    /// missing ones are left out. The ETag stays the item's.
    pub fields: Option<String>,
}

/// Options of `GET /v1/history/{path}`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
// Unknown parameters are refused (400), not ignored: a misspelt option must not look applied.
#[serde(deny_unknown_fields)]
pub struct HistoryQuery {
    /// At most this many revisions (default 100, at most 1000).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<usize>,
}

/// Options of `GET /v1/list/{prefix}`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
// Unknown parameters are refused (400), not ignored: a misspelt option must not look applied.
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// Only the direct children of the prefix.
    pub children: Option<bool>,
    /// Descending key order.
    pub reverse: Option<bool>,
    /// Items per page, 1..=1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<usize>,
    /// Only keys after this path.
    pub gt: Option<String>,
    /// Only keys at or after this path.
    pub gte: Option<String>,
    /// Only keys before this path.
    pub lt: Option<String>,
    /// Only keys at or before this path.
    pub lte: Option<String>,
    /// Continue from a previous page, in either direction.
    pub page_token: Option<String>,
    /// Only the items this CEL expression matches (docs/filters.md), e.g.
    /// `value.status == "open" && value.total > 100`. A children listing's nodes never match.
    #[param(max_length = 4096)]
    pub filter: Option<String>,
    /// Only these members of each value: comma-separated dotted paths (`title,author.name`).
    pub fields: Option<String>,
    /// Items a page reads at most, 1..=100000 (default 1000): a page stops after `limit`
    /// matches or `max_scan` items read, whichever comes first.
    #[param(minimum = 1, maximum = 100000)]
    pub max_scan: Option<usize>,
    /// Answer `{"count", "scanned"}` for the (filtered) range instead of the items, reading at
    /// most `max_scan` items (default 100000 here) per answer.
    pub count: Option<bool>,
}

/// One operation of a transaction, chosen by `op`.
// Read through `TxOpFields`: serde buffers an internally tagged enum before picking the
// variant, and a buffered value cannot become a `RawValue`, so deriving `Deserialize` here
// refused every put. The derived schema still describes the wire format.
#[derive(Deserialize, ToSchema)]
#[serde(
    tag = "op",
    rename_all = "snake_case",
    deny_unknown_fields,
    try_from = "TxOpFields"
)]
pub enum TxOpIn {
    /// Create or replace an item.
    Put {
        /// Key path text.
        path: String,
        /// Any JSON value.
        #[schema(value_type = serde_json::Value)]
        value: Box<serde_json::value::RawValue>,
        /// Fail unless the item exists at this version.
        if_version: Option<u64>,
        /// Fail if the item exists.
        must_not_exist: Option<bool>,
        /// Keep this version in history.
        history: Option<bool>,
        /// Expire after this many seconds.
        ttl_seconds: Option<u64>,
    },
    /// Delete an item.
    Delete {
        /// Key path text.
        path: String,
        /// Fail unless the item exists at this version.
        if_version: Option<u64>,
    },
    /// Check a condition without writing.
    Check {
        /// Key path text.
        path: String,
        /// The item exists at this version.
        if_version: Option<u64>,
        /// The item exists.
        must_exist: Option<bool>,
        /// The item does not exist.
        must_not_exist: Option<bool>,
    },
    /// Change part of an item: `merge` (an RFC 7396 merge patch) or `patch` (RFC 6902
    /// operations, and `increment`), exactly one. After a put of the same path in this
    /// transaction, it applies to the value put.
    Patch {
        /// Key path text.
        path: String,
        /// An RFC 7396 JSON Merge Patch.
        #[schema(value_type = Option<serde_json::Value>)]
        merge: Option<serde_json::Value>,
        /// An RFC 6902 JSON Patch: `add`, `remove`, `replace`, `move`, `copy`, `test` and
        /// `increment` (`{"op": "increment", "path": "/views", "value": 1}`).
        #[schema(value_type = Option<Vec<std::collections::HashMap<String, serde_json::Value>>>)]
        patch: Option<serde_json::Value>,
        /// Fail unless the item exists at this version.
        if_version: Option<u64>,
        /// Fail if the item exists (with `create`: only create).
        must_not_exist: Option<bool>,
        /// With no item there, apply the patch to `{}` instead of failing with 404.
        create: Option<bool>,
        /// Keep this version in history.
        history: Option<bool>,
        /// Expire after this many seconds.
        ttl_seconds: Option<u64>,
    },
    /// Write nothing; fail (409 `condition_failed`) if anything in a listing's range was put,
    /// patched, deleted, expired, moved or copied after the listing whose first page returned
    /// `changes_token`. The range is the listing's own: `prefix`, its bounds and `children`.
    CheckList {
        /// The listing's prefix (key path text).
        prefix: String,
        /// The `changes_token` of the listing's first page.
        changes_token: String,
        /// The listing was of the prefix's direct children.
        children: Option<bool>,
        /// The listing's `gt` bound.
        gt: Option<String>,
        /// The listing's `gte` bound.
        gte: Option<String>,
        /// The listing's `lt` bound.
        lt: Option<String>,
        /// The listing's `lte` bound.
        lte: Option<String>,
        /// The items the listing showed, path to version (a client's `transaction` sends them).
        /// On DynamoDB a listing's token starts a margin before the listing, and a change in
        /// that margin that the listing already shows is then not counted; without `seen`
        /// every change in the margin counts. Ignored by the embedded store, whose tokens have
        /// no margin.
        seen: Option<std::collections::BTreeMap<String, u64>>,
        /// The listing's `filter` (docs/filters.md): then only an item entering, changing in
        /// or leaving the filtered result fails the check, and a write to an item it matched
        /// neither before nor after does not.
        filter: Option<String>,
    },
    /// Create an item with a generated id at `{path}-{id}`.
    Create {
        /// The parent's key path and the new element's namespace (`/user-7/post`; `/user` for a
        /// new group; `$0/comment` under the item operation 0 creates).
        path: String,
        /// `uuid` (the default), `rand53` or `sequence`.
        id: Option<String>,
        /// Any JSON value.
        #[schema(value_type = serde_json::Value)]
        value: Box<serde_json::value::RawValue>,
        /// Keep this version in history.
        history: Option<bool>,
        /// Expire after this many seconds.
        ttl_seconds: Option<u64>,
    },
}

/// Every field any operation has, read straight from the JSON text.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TxOpFields {
    op: String,
    path: Option<String>,
    #[serde(default, deserialize_with = "present")]
    value: Option<Box<serde_json::value::RawValue>>,
    if_version: Option<u64>,
    must_exist: Option<bool>,
    must_not_exist: Option<bool>,
    history: Option<bool>,
    ttl_seconds: Option<u64>,
    id: Option<String>,
    #[serde(default, deserialize_with = "present")]
    merge: Option<serde_json::Value>,
    patch: Option<serde_json::Value>,
    create: Option<bool>,
    prefix: Option<String>,
    changes_token: Option<String>,
    children: Option<bool>,
    gt: Option<String>,
    gte: Option<String>,
    lt: Option<String>,
    lte: Option<String>,
    seen: Option<std::collections::BTreeMap<String, u64>>,
    filter: Option<String>,
}

/// A field that is present, even as `null` (a value to put or a merge patch that replaces
/// with `null`, not an absent one).
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

impl TryFrom<TxOpFields> for TxOpIn {
    type Error = String;

    fn try_from(f: TxOpFields) -> Result<TxOpIn, String> {
        let op = f.op.as_str();
        let stray = |name: &str, present: bool| -> Result<(), String> {
            if present {
                Err(format!("unknown field `{name}` for op {op:?}"))
            } else {
                Ok(())
            }
        };
        if op != "patch" {
            stray("merge", f.merge.is_some())?;
            stray("patch", f.patch.is_some())?;
            stray("create", f.create.is_some())?;
        }
        if op == "check_list" {
            stray("path", f.path.is_some())?;
            stray("value", f.value.is_some())?;
            stray("if_version", f.if_version.is_some())?;
            stray("must_exist", f.must_exist.is_some())?;
            stray("must_not_exist", f.must_not_exist.is_some())?;
            stray("history", f.history.is_some())?;
            stray("ttl_seconds", f.ttl_seconds.is_some())?;
            stray("id", f.id.is_some())?;
            return Ok(TxOpIn::CheckList {
                prefix: f.prefix.ok_or("missing field `prefix`")?,
                changes_token: f.changes_token.ok_or("missing field `changes_token`")?,
                children: f.children,
                gt: f.gt,
                gte: f.gte,
                lt: f.lt,
                lte: f.lte,
                seen: f.seen,
                filter: f.filter,
            });
        }
        for (name, present) in [
            ("prefix", f.prefix.is_some()),
            ("changes_token", f.changes_token.is_some()),
            ("children", f.children.is_some()),
            ("gt", f.gt.is_some()),
            ("gte", f.gte.is_some()),
            ("lt", f.lt.is_some()),
            ("lte", f.lte.is_some()),
            ("seen", f.seen.is_some()),
            ("filter", f.filter.is_some()),
        ] {
            stray(name, present)?;
        }
        let path = f.path.ok_or("missing field `path`")?;
        match op {
            "create" => {
                stray("must_exist", f.must_exist.is_some())?;
                stray("must_not_exist", f.must_not_exist.is_some())?;
                stray("if_version", f.if_version.is_some())?;
                Ok(TxOpIn::Create {
                    path,
                    id: f.id,
                    value: f.value.ok_or("missing field `value`")?,
                    history: f.history,
                    ttl_seconds: f.ttl_seconds,
                })
            }
            "put" => {
                stray("id", f.id.is_some())?;
                stray("must_exist", f.must_exist.is_some())?;
                Ok(TxOpIn::Put {
                    path,
                    value: f.value.ok_or("missing field `value`")?,
                    if_version: f.if_version,
                    must_not_exist: f.must_not_exist,
                    history: f.history,
                    ttl_seconds: f.ttl_seconds,
                })
            }
            "patch" => {
                stray("id", f.id.is_some())?;
                stray("value", f.value.is_some())?;
                stray("must_exist", f.must_exist.is_some())?;
                if f.merge.is_some() == f.patch.is_some() {
                    return Err("a patch needs exactly one of `merge` and `patch`".into());
                }
                Ok(TxOpIn::Patch {
                    path,
                    merge: f.merge,
                    patch: f.patch,
                    if_version: f.if_version,
                    must_not_exist: f.must_not_exist,
                    create: f.create,
                    history: f.history,
                    ttl_seconds: f.ttl_seconds,
                })
            }
            "delete" => {
                stray("id", f.id.is_some())?;
                stray("value", f.value.is_some())?;
                stray("must_exist", f.must_exist.is_some())?;
                stray("must_not_exist", f.must_not_exist.is_some())?;
                stray("history", f.history.is_some())?;
                stray("ttl_seconds", f.ttl_seconds.is_some())?;
                Ok(TxOpIn::Delete {
                    path,
                    if_version: f.if_version,
                })
            }
            "check" => {
                stray("id", f.id.is_some())?;
                stray("value", f.value.is_some())?;
                stray("history", f.history.is_some())?;
                stray("ttl_seconds", f.ttl_seconds.is_some())?;
                Ok(TxOpIn::Check {
                    path,
                    if_version: f.if_version,
                    must_exist: f.must_exist,
                    must_not_exist: f.must_not_exist,
                })
            }
            other => Err(format!(
                "unknown op {other:?}, expected one of `put`, `patch`, `delete`, `check`, `check_list`, `create`"
            )),
        }
    }
}

/// `POST /v1/transact`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TransactIn {
    /// 1..=100 operations on distinct paths, applied all or nothing.
    #[schema(min_items = 1, max_items = 100)]
    pub ops: Vec<TxOpIn>,
}

/// The result of one transaction operation.
#[derive(Serialize, ToSchema)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum TxResultOut {
    /// The item as written.
    Put {
        /// The item.
        item: ItemOut,
    },
    /// The deleted item, null if there was none.
    Delete {
        /// The item.
        deleted: Option<ItemOut>,
    },
    /// The check held.
    Check,
    /// Nothing in the listing's range changed.
    CheckList,
}

impl From<TxResult> for TxResultOut {
    fn from(r: TxResult) -> TxResultOut {
        match r {
            TxResult::Put(item) => TxResultOut::Put { item: item.into() },
            TxResult::Deleted(item) => TxResultOut::Delete {
                deleted: item.map(Into::into),
            },
            TxResult::Checked => TxResultOut::Check,
        }
    }
}

/// `POST /v1/transact` result.
#[derive(Serialize, ToSchema)]
pub struct TransactOut {
    /// One per operation, in order.
    pub results: Vec<TxResultOut>,
}

/// `POST /v1/import` query.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
// Unknown parameters are refused (400), not ignored: a misspelt option must not look applied.
#[serde(deny_unknown_fields)]
pub struct ImportParams {
    /// What to do with a record whose path holds another live item: `replace` (the default;
    /// written above the stored version), `skip`, or `fail` (409, nothing of its batch written).
    pub on_existing: Option<String>,
    /// `true` to accept export records without the export's last line: a deliberate part of an
    /// export. Without it, such input is refused as possibly cut short.
    pub partial: Option<bool>,
}

/// `POST /v1/import` result.
#[derive(Serialize, ToSchema)]
pub struct ImportOut {
    /// Records written: distinct items, revisions and tombstones, however many lines named them.
    pub imported: u64,
    /// Records already there with the same content.
    pub unchanged: u64,
    /// Records left alone because their path held another live item (`on_existing=skip`).
    pub skipped: u64,
    /// The path of the last record applied.
    pub last_path: Option<String>,
}

impl From<pathdb_store::ImportReport> for ImportOut {
    fn from(r: pathdb_store::ImportReport) -> ImportOut {
        ImportOut {
            imported: r.imported,
            unchanged: r.unchanged,
            skipped: r.skipped,
            last_path: r.last_path.map(|p| p.to_string()),
        }
    }
}

/// `GET /healthz` and `GET /readyz`.
#[derive(Serialize, ToSchema)]
pub struct HealthOut {
    /// "ok" (alive) or "ready".
    pub status: String,
}

/// Turns the tagged enums [`TxOpIn`] and [`TxResultOut`] into discriminated unions that
/// generated clients read as one tagged type: each variant becomes a named schema (`TxOpPut`,
/// `TxResultPut`, ...) and the union a `oneOf` of references with a `discriminator` on `op`
/// and its mapping. The derive inlines the variants and has no mapping. Request variants are
/// also closed (`additionalProperties: false`), as their reading is.
pub struct TaggedUnions;

impl utoipa::Modify for TaggedUnions {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::schema::{AdditionalProperties, Discriminator, Schema};
        use utoipa::openapi::{Ref, RefOr};
        let Some(components) = openapi.components.as_mut() else {
            return;
        };
        for (union, prefix, closed) in [
            ("TxOpIn", "TxOp", true),
            ("TxResultOut", "TxResult", false),
            ("ChangeOut", "Change", false),
        ] {
            let Some(RefOr::T(Schema::OneOf(mut one_of))) = components.schemas.remove(union) else {
                continue;
            };
            let mut mapping = Vec::new();
            for variant in &mut one_of.items {
                let RefOr::T(Schema::Object(object)) = variant else {
                    continue;
                };
                let Some(tag) = tag_of(object, "op") else {
                    continue;
                };
                let name = format!("{prefix}{}", upper_camel(&tag));
                let mut object = object.clone();
                if closed {
                    object.additional_properties =
                        Some(Box::new(AdditionalProperties::FreeForm(false)));
                }
                object.title = Some(name.clone());
                let reference = format!("#/components/schemas/{name}");
                components
                    .schemas
                    .insert(name, RefOr::T(Schema::Object(object)));
                *variant = RefOr::Ref(Ref::new(reference.clone()));
                mapping.push((tag, reference));
            }
            one_of.discriminator = Some(Discriminator::with_mapping("op", mapping));
            components
                .schemas
                .insert(union.to_owned(), RefOr::T(Schema::OneOf(one_of)));
        }
    }
}

/// The single value of an object's `property` (`{"enum": ["put"]}`), if it has one.
fn tag_of(object: &utoipa::openapi::schema::Object, property: &str) -> Option<String> {
    use utoipa::openapi::RefOr;
    use utoipa::openapi::schema::Schema;
    match object.properties.get(property)? {
        RefOr::T(Schema::Object(tag)) => match tag.enum_values.as_deref()? {
            [serde_json::Value::String(value)] => Some(value.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// A tag's schema name part: `check_list` -> `CheckList`.
fn upper_camel(text: &str) -> String {
    text.split('_')
        .map(|word| {
            let mut chars = word.chars();
            chars
                .next()
                .map(|c| c.to_uppercase().chain(chars).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}

/// A namespace definition as stored (`GET`/`PUT /v1/namespaces/{ns}`).
#[derive(Serialize, ToSchema)]
pub struct DefinitionOut {
    /// The namespace: items whose path's last element has it.
    #[schema(example = "post")]
    pub namespace: String,
    /// 1 when first defined, +1 on every change (the `ETag`).
    pub version: u64,
    /// Microseconds since the Unix epoch, UTC.
    pub created_at: i64,
    /// Microseconds since the Unix epoch, UTC.
    pub modified_at: i64,
    /// The JSON Schema every value of the namespace must fit; null: any JSON.
    pub schema: Option<serde_json::Value>,
    /// Revisions kept per item; null: history only for puts that ask for it.
    pub history: Option<u32>,
    /// For people.
    pub description: Option<String>,
    /// Its alias templates, each with where its aliases stand, then the templates being
    /// removed (docs/aliases.md).
    pub aliases: Vec<AliasOut>,
    /// The steps from the previous version's values to this one's (docs/migrations.md).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub migrate: Vec<serde_json::Value>,
    /// `assert`: `format` is checked; `annotate`: never; absent: as the schema's draft says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub formats: Option<String>,
    /// `false`: the groups of this namespace (paths whose first element is of it) keep no
    /// change log, so they have no change feed, listing `changes_token` or listing checks;
    /// absent: they keep one (docs/changes.md, "Groups without a change log").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changes: Option<bool>,
    /// The rewrite of stored items to this version, when it has steps (in
    /// `GET /v1/namespaces/{ns}` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rewrite: Option<RewriteOut>,
}

/// An alias template of a namespace and its build.
#[derive(Serialize, ToSchema)]
pub struct AliasOut {
    /// The template.
    #[schema(example = "/email-{email}")]
    pub path: String,
    /// `ready` (reads are served), `building` (reads answer 503 `alias_building`; writes keep
    /// it already), `conflict` (the build found two items with one alias; see `conflicts`),
    /// `removing` (the template was removed; its aliases are being deleted).
    #[schema(example = "ready")]
    pub state: String,
    /// Items the build (or removal) has checked.
    pub checked: u64,
    /// Alias records it wrote (or removed).
    pub written: u64,
    /// With `conflict`: the aliases two items would share (at most 20).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<AliasConflictOut>,
}

/// An alias the build found for more than one item.
#[derive(Serialize, ToSchema)]
pub struct AliasConflictOut {
    /// The alias path.
    pub alias: String,
    /// The items it would name.
    pub items: Vec<String>,
}

impl From<pathdb_store::AliasBuild> for AliasOut {
    fn from(b: pathdb_store::AliasBuild) -> AliasOut {
        AliasOut {
            path: b.template,
            state: b.state.to_string(),
            checked: b.checked,
            written: b.written,
            conflicts: b
                .conflicts
                .into_iter()
                .map(|c| AliasConflictOut {
                    alias: c.alias.to_string(),
                    items: c.items.iter().map(ToString::to_string).collect(),
                })
                .collect(),
        }
    }
}

impl DefinitionOut {
    /// A stored definition with its templates' builds.
    pub fn new(
        d: pathdb_store::NamespaceDefinition,
        builds: Vec<pathdb_store::AliasBuild>,
    ) -> DefinitionOut {
        DefinitionOut {
            namespace: d.namespace,
            version: d.version,
            created_at: d.created_at.micros(),
            modified_at: d.modified_at.micros(),
            schema: d.definition.schema,
            history: d.definition.history,
            description: d.definition.description,
            aliases: builds.into_iter().map(Into::into).collect(),
            migrate: d
                .definition
                .migrate
                .iter()
                .filter_map(|step| serde_json::to_value(step).ok())
                .collect(),
            formats: d.definition.formats.map(|f| match f {
                pathdb_store::Formats::Assert => "assert".to_owned(),
                pathdb_store::Formats::Annotate => "annotate".to_owned(),
            }),
            changes: d.definition.changes,
            rewrite: None,
        }
    }
}

/// Where the rewrite of a namespace's stored items to its newest definition version stands
/// (docs/migrations.md).
#[derive(Serialize, ToSchema)]
pub struct RewriteOut {
    /// The version it brings items to.
    pub to: u64,
    /// Items of the namespace read so far.
    pub checked: u64,
    /// Items rewritten so far.
    pub rewritten: u64,
    /// Whether every stored item has been read.
    pub done: bool,
}

impl From<pathdb_store::Rewrite> for RewriteOut {
    fn from(r: pathdb_store::Rewrite) -> RewriteOut {
        RewriteOut {
            to: r.to,
            checked: r.checked,
            rewritten: r.rewritten,
            done: r.done,
        }
    }
}

/// A namespace's kept definition versions, oldest first.
#[derive(Serialize, ToSchema)]
pub struct VersionsOut {
    /// Each version: its schema and the steps from the version before.
    pub versions: Vec<DefinitionOut>,
}

/// The body of `PUT /v1/namespaces/{ns}`. Unknown members are refused.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DefinitionIn {
    /// A JSON Schema (draft 2020-12, or the draft its `$schema` names); absent or null: any
    /// JSON. References must point inside the schema: none is fetched.
    #[serde(default)]
    pub schema: Option<serde_json::Value>,
    /// Revisions kept per item, at least 1; absent or null: history only for puts that ask.
    #[serde(default)]
    #[schema(minimum = 1)]
    pub history: Option<u32>,
    /// For people.
    #[serde(default)]
    pub description: Option<String>,
    /// Alias templates (at most 8): key paths whose ids may be `{member}` (a dotted path into
    /// the value), `{!member}` (a descending id) or `{@namespace}` (an id of the item's own
    /// path). Adding one to a namespace with items starts its build (docs/aliases.md).
    #[serde(default)]
    #[schema(max_items = 8)]
    pub aliases: Vec<AliasIn>,
    /// The steps from the previous version's values to this one's (docs/migrations.md):
    /// `{"op": "rename", "from": "/name", "to": "/full_name"}`, `{"op": "add", "path":
    /// "/tier", "default": "free"}`, `{"op": "remove", "path": "/legacy", "read_default": 0}`,
    /// `{"op": "rename_value", "path": "/status", "from": "shipped", "to": "sent"}`.
    #[serde(default)]
    #[schema(max_items = 256)]
    pub migrate: Vec<serde_json::Value>,
    /// `assert`: check `format` (`email`, `date-time`, ...); `annotate`: never; absent: as the
    /// schema's draft says (an annotation in 2020-12 and 2019-09).
    #[serde(default)]
    #[schema(pattern = "^(assert|annotate)$")]
    pub formats: Option<String>,
    /// `false`: the groups of this namespace (paths whose first element is of it, such as
    /// `/session-7/...` for `session`) keep no change log: a write there is the item alone (on
    /// DynamoDB one conditional `PutItem`, no transaction), and the group has no change feed,
    /// listing `changes_token` or listing checks. Once `false`, it cannot be set back or the
    /// definition deleted (docs/changes.md, "Groups without a change log").
    #[serde(default)]
    pub changes: Option<bool>,
}

/// An alias template in a namespace definition.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AliasIn {
    /// The template.
    #[schema(example = "/email-{email}")]
    pub path: String,
}

/// The body of `POST /v1/namespaces/{ns}/aliases/retry`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AliasRetryIn {
    /// The template whose build stopped in `conflict`.
    #[schema(example = "/email-{email}")]
    pub path: String,
}

/// Options of `GET /v1/namespaces`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct NamespacesQuery {
    /// Definitions per page, 1..=1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<usize>,
    /// `next_page_token` of the previous page.
    pub page_token: Option<String>,
}

/// A page of definitions, in namespace order.
#[derive(Serialize, ToSchema)]
pub struct DefinitionsOut {
    /// The definitions.
    pub namespaces: Vec<DefinitionOut>,
    /// Present when more follow: pass it as `page_token`.
    pub next_page_token: Option<String>,
}

/// Options of `PUT /v1/namespaces/{ns}`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DefinitionPutQuery {
    /// `true`: store nothing; answer what the schema would say about the items stored (each
    /// brought through the new version's steps first).
    pub dry_run: Option<bool>,
    /// `true`: store a version that breaks stored items or older clients (409
    /// `incompatible_schema` otherwise).
    pub force: Option<bool>,
}

/// A stored item that a schema refuses.
#[derive(Serialize, ToSchema)]
pub struct ViolatingItemOut {
    /// The item's path.
    pub path: String,
    /// Its version.
    pub version: u64,
    /// What fails (at most 20).
    pub violations: Vec<crate::error::ViolationOut>,
}

impl From<pathdb_store::ViolatingItem> for ViolatingItemOut {
    fn from(v: pathdb_store::ViolatingItem) -> ViolatingItemOut {
        ViolatingItemOut {
            path: v.path.to_string(),
            version: v.version,
            violations: v.violations.into_iter().map(Into::into).collect(),
        }
    }
}

/// The answer of a dry run (`PUT /v1/namespaces/{ns}?dry_run=true`).
#[derive(Serialize, ToSchema)]
pub struct DryRunOut {
    /// Items of the namespace read.
    pub checked: u64,
    /// How many of them the schema refuses.
    pub violating: u64,
    /// The first of those (at most 20), in key order.
    pub first: Vec<ViolatingItemOut>,
    /// What the new version would break without `force=true` (409 `incompatible_schema`).
    pub problems: Vec<String>,
}

/// Options of `GET /v1/namespaces/{ns}/violations`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ViolationsQuery {
    /// Refused items per page at most, 1..=1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<usize>,
    /// `next_page_token` of the previous page.
    pub page_token: Option<String>,
}

/// A page of the stored items the namespace's schema refuses. A page reads a bounded share of
/// the database: it may hold fewer items than `limit` (even none) and still have a
/// `next_page_token`.
#[derive(Serialize, ToSchema)]
pub struct ViolationsOut {
    /// The refused items, in key order.
    pub items: Vec<ViolatingItemOut>,
    /// Items of the namespace this page read.
    pub checked: u64,
    /// Present when the scan goes on: pass it as `page_token`.
    pub next_page_token: Option<String>,
}

/// The answer of `PUT /v1/namespaces/{ns}`: the definition stored, or with `dry_run=true` what
/// the schema would say about the items stored.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum DefinitionPutOut {
    /// The definition stored.
    Stored(DefinitionOut),
    /// The dry run's answer.
    DryRun(DryRunOut),
}
