//! Errors. Backends fail with [`StorageError`]; the data API fails with [`Error`], whose variants
//! say what the caller did wrong (and so map to HTTP statuses) or that storage failed.

use pathdb_keys::KeyPath;
use serde::{Deserialize, Serialize};

/// The storage engine failed: I/O, a full disk, an unreachable service, corruption, or a closed
/// database. Not the caller's fault.
///
/// The message carries the whole cause (the operating system's or the service's words), so it
/// is complete on its own; [`StorageError::kind`] says what kind of failure it is, for callers
/// that react differently (a server that answers 507 for a full disk, a CLI that suggests going
/// through the server).
#[derive(Debug, Clone)]
pub struct StorageError {
    message: String,
    kind: StorageErrorKind,
}

/// What kind of storage failure a [`StorageError`] is.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Hash)]
#[non_exhaustive]
pub enum StorageErrorKind {
    /// Anything else: corruption, a closed database, an internal error.
    #[default]
    Other,
    /// The database file is held by another process (or another handle in this one), which
    /// locks it while it has it open.
    InUse,
    /// The database was opened read-only and a write was attempted. The store turns this into
    /// [`Error::ReadOnly`].
    ReadOnly,
    /// The operating system refused access to the file: permissions, or a read-only file
    /// system for a writable open.
    PermissionDenied,
    /// The disk, file system or quota is full (`ENOSPC`, `EDQUOT`). Nothing was written; writes
    /// succeed again once space is freed.
    Full,
    /// The operating system reported another I/O error (`EIO` and the like).
    Io,
    /// The service is overloaded or unreachable for now (throttling, its 5xx answers, a
    /// connection that failed before the request was sent) and retries ran out. Nothing was
    /// written; the same request may succeed later.
    Unavailable,
    /// A write was sent but no answer came back (a timeout or a reset connection), and reading
    /// could not tell whether it was applied. It may or may not have been.
    OutcomeUnknown,
}

impl StorageErrorKind {
    /// A short stable name (`disk_full`, `io`, ...), for metrics labels and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            StorageErrorKind::Other => "other",
            StorageErrorKind::InUse => "in_use",
            StorageErrorKind::ReadOnly => "read_only",
            StorageErrorKind::PermissionDenied => "permission_denied",
            StorageErrorKind::Full => "disk_full",
            StorageErrorKind::Io => "io",
            StorageErrorKind::Unavailable => "unavailable",
            StorageErrorKind::OutcomeUnknown => "outcome_unknown",
        }
    }

    /// What a message of this kind starts with: people should not have to parse the rest to
    /// know that the disk is full.
    fn prefix(self) -> &'static str {
        match self {
            StorageErrorKind::Full => "disk full",
            StorageErrorKind::Io => "I/O error",
            StorageErrorKind::Unavailable => "storage unavailable",
            StorageErrorKind::OutcomeUnknown => "write outcome unknown",
            _ => "storage error",
        }
    }
}

impl std::fmt::Display for StorageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind.prefix(), self.message)
    }
}

impl std::error::Error for StorageError {}

impl StorageError {
    /// An error with a message and its cause, whose text (and its causes' texts) the message
    /// takes. An I/O error anywhere in the cause's chain sets the kind ([`StorageError::io`]).
    pub fn new(
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        let mut message = message.into();
        let mut kind = StorageErrorKind::Other;
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&source);
        let mut last = String::new();
        while let Some(e) = cause {
            if let Some(io) = e.downcast_ref::<std::io::Error>() {
                kind = io_kind(io);
            }
            let text = e.to_string();
            // Many errors repeat their source's text in their own: say it once.
            if !last.contains(&text) {
                message.push_str(": ");
                message.push_str(&text);
            }
            last = text;
            cause = e.source();
        }
        StorageError { message, kind }
    }

    /// An error from the operating system, marked [`StorageErrorKind::Full`] for a full disk or
    /// quota and [`StorageErrorKind::Io`] for other I/O failures.
    pub fn io(message: impl Into<String>, error: &std::io::Error) -> Self {
        StorageError {
            message: format!("{}: {error}", message.into()),
            kind: io_kind(error),
        }
    }

    /// An error with a message only.
    pub fn msg(message: impl Into<String>) -> Self {
        StorageError {
            message: message.into(),
            kind: StorageErrorKind::Other,
        }
    }

    /// The same error, marked as `kind`.
    pub fn with_kind(mut self, kind: StorageErrorKind) -> Self {
        self.kind = kind;
        self
    }

    /// The same error with `context` before its message (`context: message`).
    pub fn context(mut self, context: impl std::fmt::Display) -> Self {
        self.message = format!("{context}: {}", self.message);
        self
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> StorageErrorKind {
        self.kind
    }

    /// The message without the kind's prefix.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// The kind of an operating-system error: a full disk or quota, or another I/O failure.
fn io_kind(error: &std::io::Error) -> StorageErrorKind {
    match error.kind() {
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded => {
            StorageErrorKind::Full
        }
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem => {
            StorageErrorKind::PermissionDenied
        }
        _ => StorageErrorKind::Io,
    }
}

/// A condition the caller attached to a write.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Condition {
    /// The item must not exist (expired items do not exist).
    MustNotExist,
    /// The item must exist.
    MustExist,
    /// The item must exist with exactly this version.
    IfVersion(u64),
}

impl Condition {
    /// Whether the condition holds for what is stored at `version` (`None`: nothing live).
    pub fn holds(self, version: Option<u64>) -> bool {
        match self {
            Condition::MustNotExist => version.is_none(),
            Condition::MustExist => version.is_some(),
            Condition::IfVersion(v) => version == Some(v),
        }
    }
}

impl std::fmt::Display for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Condition::MustNotExist => f.write_str("must not exist"),
            Condition::MustExist => f.write_str("must exist"),
            Condition::IfVersion(v) => write!(f, "must be at version {v}"),
        }
    }
}

/// Everything the data API can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A write's condition did not hold; nothing was written.
    #[error("condition failed for {path}: {condition}, but it {}", describe(*.current))]
    ConditionFailed {
        /// The path whose condition failed.
        path: KeyPath,
        /// The condition.
        condition: Condition,
        /// The version found, `None` if the item does not exist.
        current: Option<u64>,
    },
    /// A listing that a transaction depends on ([`TxOp::CheckList`](crate::write::ops::TxOp::CheckList))
    /// changed after its changes token; nothing was written. A failed condition, like
    /// [`Error::ConditionFailed`] (HTTP 409 `condition_failed`).
    #[error("condition failed: the listing of {prefix} changed after its changes_token: {path}")]
    ListChanged {
        /// The index of the transaction's check.
        index: usize,
        /// The listing's prefix.
        prefix: KeyPath,
        /// A path in the listing's range that changed.
        path: KeyPath,
    },
    /// A concurrent write changed what a transaction read; nothing was written. Retry.
    ///
    /// No longer returned by [`Store`](crate::store::Store): a write or transaction that loses a race
    /// plans again, and fails with [`Error::ConditionFailed`] or [`Error::ListChanged`] only if
    /// a condition of the caller's no longer holds. Kept so that callers matching it compile.
    #[error("transaction conflict: a concurrent write changed {path}; retry")]
    Conflict {
        /// A path that changed.
        path: KeyPath,
    },
    /// A key path exceeds the storage limit.
    #[error("key path too long: the {part} of {path} encodes to {size} bytes, the limit is {max}")]
    KeyTooLarge {
        /// The path.
        path: KeyPath,
        /// "group" or "sort key".
        part: &'static str,
        /// Encoded size.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// An item exceeds the storage limit.
    #[error("item too large: {path} is {size} bytes with its key and metadata, the limit is {max}")]
    ItemTooLarge {
        /// The path.
        path: KeyPath,
        /// Size in bytes.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// A value is not valid JSON.
    #[error("invalid JSON value: {0}")]
    InvalidJson(#[source] serde_json::Error),
    /// A page token is malformed or belongs to another query.
    #[error("invalid page token: {0}")]
    InvalidPageToken(&'static str),
    /// A change token is malformed or belongs to another group's feed.
    #[error("invalid change token: {0}")]
    InvalidChangeToken(String),
    /// Changes after a change token are no longer kept (older than the retention window), or the
    /// token is ahead of the database: list again and follow from the listing's token.
    #[error("change token expired: {0}")]
    ChangesExpired(String),
    /// A request is malformed (names what and why).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// A listing read an item its caller may not read
    /// ([`ListRequest::readable`](crate::ListRequest::readable)): it is refused whole.
    #[error("the listing of {path} reads items this caller may not read")]
    Unreadable {
        /// The listing's prefix.
        path: KeyPath,
    },
    /// A filter (docs/filters.md) does not compile, is too long or nests too deep.
    #[error("invalid filter at character {position}: {reason}")]
    InvalidFilter {
        /// Where in the filter (characters from its start, 0-based) the problem is.
        position: usize,
        /// What is wrong.
        reason: String,
    },
    /// A patch found no item to change (and was not asked to create one).
    #[error("{path} not found: a patch changes an existing item")]
    ItemNotFound {
        /// The path.
        path: KeyPath,
    },
    /// A patch's `test` operation did not hold; nothing was written.
    #[error("patch of {path}: {message}")]
    PatchTestFailed {
        /// The item.
        path: KeyPath,
        /// The operation's index in the patch.
        index: usize,
        /// What did not hold.
        message: String,
    },
    /// A patch operation does not fit the item's value (a missing member to remove, an
    /// increment of a non-number or past 2^53); nothing was written.
    #[error("patch of {path}: {message}")]
    PatchConflict {
        /// The item.
        path: KeyPath,
        /// The operation's index in the patch.
        index: usize,
        /// Why.
        message: String,
    },
    /// A subtree delete, move or copy found no live item at or below its path.
    #[error("nothing to {operation}: no item at or below {path}")]
    NothingBelow {
        /// `delete`, `move` or `copy`.
        operation: &'static str,
        /// The subtree's path.
        path: KeyPath,
    },
    /// A move or copy found a live item in its destination's subtree; nothing more was
    /// written.
    #[error("destination {to} is not empty: {item} exists")]
    DestinationNotEmpty {
        /// The destination.
        to: KeyPath,
        /// A live item in it.
        item: KeyPath,
    },
    /// The database was opened read-only (`Store::open_read_only`, `pathdb serve --read-only`);
    /// nothing was written.
    #[error("the database is open read-only: writes are refused")]
    ReadOnly,
    /// A value does not fit the JSON Schema of its namespace's definition; nothing was written
    /// (in a transaction or an import, none of its other writes either).
    #[error("{path} does not fit the schema of namespace {namespace}: {summary}",
        namespace = path.last().namespace().as_str(), summary = summarize(violations))]
    SchemaViolation {
        /// The item whose value was refused.
        path: KeyPath,
        /// The operation's index among the write's operations (an import's: the record's).
        index: usize,
        /// What failed, at most [`MAX_VIOLATIONS`](crate::namespaces::definitions::MAX_VIOLATIONS).
        violations: Vec<Violation>,
    },
    /// A request named a definition version its namespace does not have (docs/migrations.md).
    #[error("namespace {namespace} has no schema version {version} (the newest is {newest})")]
    UnknownSchemaVersion {
        /// The namespace.
        namespace: String,
        /// The version asked for.
        version: u64,
        /// The newest version.
        newest: u64,
    },
    /// A value written in an older version could not be brought to the newest (a rename onto
    /// a member the value has too); nothing was written.
    #[error("{path}: the value cannot be migrated to the newest schema version: {reason}")]
    MigrationFailed {
        /// The item.
        path: KeyPath,
        /// What the migration met.
        reason: String,
    },
    /// A new definition version would break stored items or clients of older versions, and
    /// the write was not forced (docs/migrations.md); nothing was written.
    #[error("the new definition of namespace {namespace} is incompatible with version {version}: {}", problems.join("; "))]
    IncompatibleSchema {
        /// The namespace.
        namespace: String,
        /// The version it would replace.
        version: u64,
        /// Each problem, one sentence.
        problems: Vec<String>,
    },
    /// A condition on a namespace definition did not hold (someone changed it since it was
    /// read); nothing was written.
    #[error("condition failed for the definition of namespace {namespace}: {condition}, but it {}", describe(*.current))]
    DefinitionConditionFailed {
        /// The namespace.
        namespace: String,
        /// The condition.
        condition: Condition,
        /// The definition's version found, `None` if there is none.
        current: Option<u64>,
    },
    /// A namespace has no definition.
    #[error("namespace {0} has no definition")]
    NamespaceNotFound(String),
    /// A condition on a role did not hold; nothing was written.
    #[error("condition failed for role {role}: {condition}, but it {}", describe(*.current))]
    RoleConditionFailed {
        /// The role.
        role: String,
        /// The condition.
        condition: Condition,
        /// The role's version found, `None` if there is none.
        current: Option<u64>,
    },
    /// A change to one of the built-in roles (`read`, `read-write`, `admin`), which cannot change.
    #[error("role {0} is built in and cannot be changed or deleted")]
    BuiltinRole(String),
    /// A token for a role that does not exist.
    #[error("there is no role {0}")]
    UnknownRole(String),
    /// A namespace definition's schema is not a valid JSON Schema (or needs a schema from
    /// elsewhere, which is never fetched); nothing was stored.
    #[error("invalid schema: {0}")]
    InvalidSchema(String),
    /// A write would give an item an alias path that another item holds, or at which an item
    /// is stored (docs/aliases.md); nothing was written.
    #[error("alias {alias} is taken: {holder} holds it")]
    AliasTaken {
        /// The alias path.
        alias: KeyPath,
        /// The item that holds it (its own path, or the item stored at the alias path).
        holder: KeyPath,
        /// The operation's index among the write's operations.
        index: usize,
    },
    /// A put, create or import of an item at a path that is an alias of another item; nothing
    /// was written.
    #[error("{path} is an alias of {item}: write the item at its own path")]
    PathIsAlias {
        /// The path written.
        path: KeyPath,
        /// The item whose alias it is.
        item: KeyPath,
    },
    /// A value's member that an alias template fills an id from is neither a string, an
    /// integer, `null` nor missing; nothing was written.
    #[error("{path}: member {member} is {kind}, but an alias id is a string or an integer")]
    AliasInvalid {
        /// The item.
        path: KeyPath,
        /// The member, as the template names it (`address.city`).
        member: Box<str>,
        /// What it is: `a boolean`, `an array`, `an object`, `a number that is not an integer`.
        kind: &'static str,
        /// The operation's index among the write's operations.
        index: usize,
    },
    /// A read through an alias whose template's build is not done (or waits for a retry
    /// after a conflict).
    #[error("alias {template} of namespace {namespace} is {state}: {checked} items checked so far")]
    AliasBuilding {
        /// The namespace.
        namespace: String,
        /// The template.
        template: String,
        /// `building` or `conflict` ([`AliasState`](crate::aliases::builds::AliasState)).
        state: &'static str,
        /// Items the build has checked.
        checked: u64,
    },
    /// The storage engine failed.
    #[error(transparent)]
    Storage(StorageError),
}

impl Error {
    /// The index of the operation of a write (a transaction's) that the error is about, where
    /// the error names one.
    pub fn operation_index(&self) -> Option<usize> {
        match self {
            Error::ListChanged { index, .. }
            | Error::SchemaViolation { index, .. }
            | Error::AliasTaken { index, .. }
            | Error::AliasInvalid { index, .. } => Some(*index),
            _ => None,
        }
    }
}

impl From<StorageError> for Error {
    /// A refused write on a read-only backend becomes [`Error::ReadOnly`], whichever store path
    /// it came through; every other storage failure stays [`Error::Storage`].
    fn from(e: StorageError) -> Error {
        match e.kind() {
            StorageErrorKind::ReadOnly => Error::ReadOnly,
            _ => Error::Storage(e),
        }
    }
}

fn summarize(violations: &[Violation]) -> String {
    let mut text = violations
        .iter()
        .take(3)
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    if violations.len() > 3 {
        text.push_str(&format!(" (and {} more)", violations.len() - 3));
    }
    text
}

fn describe(current: Option<u64>) -> String {
    match current {
        Some(v) => format!("is at version {v}"),
        None => "does not exist".to_owned(),
    }
}

impl Error {
    /// Whether retrying the same request may succeed (a transaction conflict).
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Conflict { .. })
    }

    /// Whether a condition of the caller's failed: an item's ([`Error::ConditionFailed`]) or a
    /// listing's ([`Error::ListChanged`]). Nothing was written; what the caller read is stale.
    pub fn is_condition_failed(&self) -> bool {
        matches!(
            self,
            Error::ConditionFailed { .. } | Error::ListChanged { .. }
        )
    }
}

/// One way a value fails its namespace's schema.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// JSON pointer to the part of the value that fails (`""`: the whole value).
    pub instance_path: String,
    /// JSON pointer to the schema keyword that fails it.
    pub schema_path: String,
    /// What is wrong, for people.
    pub message: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = if self.instance_path.is_empty() {
            "the value"
        } else {
            &self.instance_path
        };
        write!(f, "{at}: {}", self.message)
    }
}
