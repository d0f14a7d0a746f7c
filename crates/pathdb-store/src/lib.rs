//! PathDB's data API: JSON items at typed key paths, with subtree and children listing, typed
//! bounds, page tokens in both directions, conditions, transactions, history and expiry, over a
//! small [`Backend`](backend::Backend) trait that an embedded engine (redb, the default) and
//! DynamoDB implement.
//!
//! ```
//! use pathdb_store::{Json, ListRequest, PutOptions, Store, StoreOptions};
//! use pathdb_store::backend::InMemoryBackend;
//!
//! let store = Store::new(InMemoryBackend::new(), StoreOptions::default())?;
//! for id in [1, 2, 10] {
//!     let path = format!("/user-7/post-{id}").parse()?;
//!     store.put(&path, Json::parse(r#"{"title": "hi"}"#)?, PutOptions::default())?;
//! }
//! let page = store.list(&ListRequest::new("/user-7".parse()?))?;
//! let paths: Vec<String> = page.items.iter().map(|e| e.path().to_string()).collect();
//! assert_eq!(paths, ["/user-7/post-1", "/user-7/post-2", "/user-7/post-10"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]

// The layers, bottom up: a module uses only modules ranked below it (folders in this order,
// files in the order their folder's mod.rs lists them); `scripts/check-module-cycles.py` checks
// the rank. lib.rs only declares the layers and re-exports the public API.
mod model;
mod filter;
pub mod backend;
mod encoding;
mod aliases;
mod namespaces;
mod access;
mod feed;
mod read;
mod write;
mod jobs;
pub mod backup;
mod tx;
mod store;

pub use access::roles::{
    BUILTIN_ROLES, Role, StoredRole, builtin as builtin_role, check_name as check_role_name,
};
pub use access::rules::{
    BoundPattern, CompiledRule, Grant, MAX_RULES, Op, PathPattern, Rule, id_of_value,
};
pub use access::tokens::{NewToken, TokenInfo, id_of as token_id_of};
pub use aliases::builds::{AliasBuild, AliasConflict, AliasState, MAX_CONFLICTS};
pub use aliases::template::{MAX_ALIASES, Template};
pub use encoding::changelog::{
    Change, ChangeEntry, ChangePage, ChangeToken, DEFAULT_CHANGES_LIMIT, MAX_CHANGES_LIMIT,
    MAX_CHANGES_WAIT,
};
pub use encoding::limits::{
    MAX_GET_MANY, MAX_GROUP_BYTES, MAX_ITEM_BYTES, MAX_SORT_KEY_BYTES, MAX_TRANSACTION_OPS,
    MAX_VERSION,
};
pub use encoding::log_entry::{decode_log_entry, join_log_entries};
pub use filter::{
    Fields, Filter, MAX_FIELDS, MAX_FILTER_BYTES, MAX_FILTER_DEPTH, Readable, Subject,
};
pub use jobs::subtree::{PendingJob, SubtreeJob, SubtreeOp};
pub use model::error::{Condition, Error, StorageError, StorageErrorKind, Violation};
pub use model::item::{Item, Json, Timestamp};
pub use model::options::{
    Clock, DEFAULT_CHANGE_RETENTION, DEFAULT_DEFINITIONS_REFRESH, Expiry, ManualClock, PutOptions,
    StoreOptions, SystemClock,
};
pub use model::patch::{MAX_EXACT_INTEGER, Patch, PatchError, PatchOp};
pub use model::strict::check as check_json;
pub use namespaces::definitions::{
    AliasDefinition, Definition, Formats, MAX_STEPS, MAX_VIOLATIONS, NamespaceDefinition, Schema,
};
pub use namespaces::migrate::Step as MigrationStep;
pub use namespaces::rewrites::Rewrite;
pub use namespaces::versions::SchemaVersions;
pub use read::export::{ExportEnd, ExportError, ExportRecord, ExportStatus, ScanPage};
pub use read::groups::{DEFAULT_GROUPS_LIMIT, GroupPage, MAX_GROUPS_LIMIT};
pub use read::list::{
    CountPage, DEFAULT_LIST_LIMIT, DEFAULT_MAX_SCAN, ListEntry, ListPage, ListRequest,
    MAX_LIST_LIMIT, MAX_SCAN,
};
pub use read::list_check::{ListCheck, ListRange};
pub use read::listed::{EncodedPath, ListedEntry, ListedItem, ListedPage};
pub use read::violations::{SchemaCheck, ViolatingItem, ViolationPage};
pub use store::Store;
pub use tx::{MAX_TRANSACTION_ATTEMPTS, Tx};
pub use write::import::{
    ExportLine, IMPORT_BATCH, ImportError, ImportRecord, ImportReport, OnExisting, parse_import,
};
pub use write::ops::{IdKind, Parent, Transaction, TxOp, TxResult, parse_create_target};
