//! Errors. Backends fail with [`StorageError`]; the data API fails with [`Error`], whose variants
//! say what the caller did wrong (and so map to HTTP statuses) or that storage failed.

use pathdb_keys::KeyPath;

/// The storage engine failed: I/O, corruption, or a closed database. Not the caller's fault.
#[derive(Debug, thiserror::Error)]
#[error("storage error: {message}")]
pub struct StorageError {
    message: String,
    kind: StorageErrorKind,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

/// What kind of storage failure a [`StorageError`] is, for callers that react differently to
/// some of them (a CLI that suggests going through the server, a server that answers 403).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
#[non_exhaustive]
pub enum StorageErrorKind {
    /// Anything else: I/O, corruption, a closed database.
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
}

impl StorageError {
    /// An error with a message and its cause.
    pub fn new(
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        StorageError {
            message: message.into(),
            kind: StorageErrorKind::Other,
            source: Some(Box::new(source)),
        }
    }

    /// An error with a message only.
    pub fn msg(message: impl Into<String>) -> Self {
        StorageError {
            message: message.into(),
            kind: StorageErrorKind::Other,
            source: None,
        }
    }

    /// The same error, marked as `kind`.
    pub fn with_kind(mut self, kind: StorageErrorKind) -> Self {
        self.kind = kind;
        self
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> StorageErrorKind {
        self.kind
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
    /// A concurrent write changed what a transaction read; nothing was written. Retry.
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
    /// The storage engine failed.
    #[error(transparent)]
    Storage(StorageError),
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
}
