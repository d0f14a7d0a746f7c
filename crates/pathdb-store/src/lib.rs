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

// The layers, bottom up. A module uses only modules listed above it (scripts/check-module-cycles.py
// keeps the imports acyclic); lib.rs only declares and re-exports.
//
// Foundations: what is stored and how it is addressed.
mod alias_builds;
mod aliases;
pub mod backend;
mod changelog;
mod error;
mod item;
mod layout;
mod limits;
mod namespaces;
mod ops;
mod options;
mod patch;
mod record;
mod strict;
mod token;
mod waiters;
// The change feed's reader: the write pipeline's listing check reads the log through it.
mod feed;
// Writes: the pipeline of stages that turns operations into one batch.
mod write;
// Reads, and the writers that are not operations (the sweeper, import, subtree jobs).
mod export;
mod groups;
mod list;
mod listed;
mod namespace_scan;
// Interactive transactions: reads recorded as the checks of one commit.
mod interactive;
mod subtree;
mod ttl;
mod upgrade;
// The facade.
mod store;

pub use alias_builds::{AliasBuild, AliasConflict, AliasState, MAX_CONFLICTS};
pub use aliases::{MAX_ALIASES, Template};
pub use changelog::{
    Change, ChangeEntry, ChangePage, ChangeToken, DEFAULT_CHANGES_LIMIT, MAX_CHANGES_LIMIT,
    MAX_CHANGES_WAIT, join_log_entries,
};
pub use error::{Condition, Error, StorageError, StorageErrorKind, Violation};
pub use export::{
    ExportEnd, ExportError, ExportLine, ExportRecord, ExportStatus, IMPORT_BATCH, ImportError,
    ImportRecord, ImportReport, OnExisting, ScanPage, parse_import,
};
pub use groups::{DEFAULT_GROUPS_LIMIT, GroupPage, MAX_GROUPS_LIMIT};
pub use interactive::{MAX_TRANSACTION_ATTEMPTS, Tx};
pub use item::{Item, Json, Timestamp};
pub use limits::{
    MAX_GET_MANY, MAX_GROUP_BYTES, MAX_ITEM_BYTES, MAX_SORT_KEY_BYTES, MAX_TRANSACTION_OPS,
    MAX_VERSION,
};
pub use list::{DEFAULT_LIST_LIMIT, ListEntry, ListPage, ListRequest, MAX_LIST_LIMIT};
pub use listed::{EncodedPath, ListedEntry, ListedItem, ListedPage};
pub use namespace_scan::{SchemaCheck, ViolatingItem, ViolationPage};
pub use namespaces::{AliasDefinition, Definition, MAX_VIOLATIONS, NamespaceDefinition, Schema};
pub use ops::{
    IdKind, ListCheck, ListRange, Parent, Transaction, TxOp, TxResult, parse_create_target,
};
pub use options::{
    Clock, DEFAULT_CHANGE_RETENTION, DEFAULT_DEFINITIONS_REFRESH, Expiry, ManualClock, PutOptions,
    StoreOptions, SystemClock,
};
pub use patch::{MAX_EXACT_INTEGER, Patch, PatchError, PatchOp};
pub use store::Store;
pub use strict::check as check_json;
pub use subtree::{PendingJob, SubtreeJob, SubtreeOp};
