//! Exit statuses that tell failures apart, for scripts: the one place that maps an error to a
//! status. Local errors come typed from the store ([`pathdb_store::Error`]); in `--server` mode
//! the client turns HTTP answers into [`Failure::Server`], so both modes end with the same
//! status for the same failure.

use std::process::ExitCode;

/// The documented exit statuses (see `pathdb --help` and the README).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Status {
    /// 0: done.
    Ok = 0,
    /// 1: the item (or version) asked for, or to patch, does not exist.
    NotFound = 1,
    /// 2: usage or invalid input: bad arguments, key path, JSON, page token, size limits, a
    /// database file that does not exist for a read.
    Usage = 2,
    /// 3: a condition (`--must-not-exist`, `--if-version`) failed, a write conflicted, or a
    /// patch did not apply to the value.
    Condition = 3,
    /// 4: the server or storage is unavailable: cannot connect to `--server`, 5xx, a database
    /// file held by another process, DynamoDB unreachable, I/O errors.
    Unavailable = 4,
    /// 5: refused: the token is missing or lacks the scope, the database is read-only, or the
    /// operating system denies access to the file.
    Refused = 5,
}

/// The text for `pathdb --help`; kept next to [`Status`] so that the two agree.
pub const HELP: &str = "\
Exit status:
  0  success
  1  not found: `get` of a missing path or version, `rm` of a missing path, `patch` of a
     missing item (without --create), `rm -r`, `mv` or `cp` of a path with nothing at or
     below it
  2  usage or invalid input (arguments, key path, JSON, limits; a missing --db file for a read)
  3  condition failed (--must-not-exist, --if-version), write conflict, a `mv`/`cp`
     destination that is not empty, or a patch that does not apply (a failed `test`, an
     increment of a non-number)
  4  unavailable: cannot reach --server, server error (5xx), database file in use by another
     process, storage or DynamoDB failure, an export that did not complete
  5  refused: missing or read-only access token, read-only database, or no permission to
     open the file (e.g. a write to a file you may only read)";

impl From<Status> for ExitCode {
    fn from(status: Status) -> ExitCode {
        ExitCode::from(status as u8)
    }
}

/// Failures the CLI names itself, each with its status.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The item or version does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The server answered with an error.
    #[error("{message} ({code})")]
    Server {
        /// HTTP status.
        status: u16,
        /// The error body's `code`, or `http_<status>` without one.
        code: String,
        /// The error body's message (or the body).
        message: String,
    },
    /// The database file is locked by another process.
    #[error(
        "{} is in use by another process (is `pathdb serve` running on it?); use --server http://127.0.0.1:7070 to go through the server",
        path.display()
    )]
    InUse {
        /// The file.
        path: std::path::PathBuf,
    },
    /// An export stream that did not end with its complete last line: what arrived is a prefix.
    #[error("export incomplete: {0}")]
    IncompleteExport(String),
    /// A read command was pointed at a file that does not exist.
    #[error(
        "{} does not exist: a read does not create a database (--db FILE names another; a put creates one)",
        path.display()
    )]
    NoDatabase {
        /// The file.
        path: std::path::PathBuf,
    },
}

impl Failure {
    fn status(&self) -> Status {
        match self {
            Failure::NotFound(_) => Status::NotFound,
            Failure::InUse { .. } | Failure::IncompleteExport(_) => Status::Unavailable,
            Failure::NoDatabase { .. } => Status::Usage,
            Failure::Server { status, code, .. } => http_status(*status, code),
        }
    }
}

/// The status for an HTTP error answer, by the server's error code first, then by HTTP status.
fn http_status(status: u16, code: &str) -> Status {
    match (status, code) {
        (_, "condition_failed" | "conflict") | (409 | 412, _) => Status::Condition,
        (_, "not_found") | (404, _) => Status::NotFound,
        (_, "unauthorized" | "forbidden" | "read_only") | (401 | 403, _) => Status::Refused,
        (_, "unavailable" | "timeout" | "internal") | (408 | 429 | 500.., _) => Status::Unavailable,
        _ => Status::Usage,
    }
}

/// The status for a store error, the same as its HTTP mapping in `pathdb-server`.
fn store_status(error: &pathdb_store::Error) -> Status {
    use pathdb_store::Error as E;
    match error {
        E::ConditionFailed { .. }
        | E::Conflict { .. }
        | E::DestinationNotEmpty { .. }
        | E::PatchTestFailed { .. }
        | E::PatchConflict { .. } => Status::Condition,
        E::NothingBelow { .. } | E::ItemNotFound { .. } => Status::NotFound,
        E::ReadOnly => Status::Refused,
        E::Storage(e) if e.kind() == pathdb_store::StorageErrorKind::PermissionDenied => {
            Status::Refused
        }
        E::Storage(_) => Status::Unavailable,
        _ => Status::Usage,
    }
}

/// The exit status for a failed command: the first cause in the chain that says.
pub fn status_of(error: &anyhow::Error) -> Status {
    for cause in error.chain() {
        if let Some(failure) = cause.downcast_ref::<Failure>() {
            return failure.status();
        }
        if let Some(store) = cause.downcast_ref::<pathdb_store::Error>() {
            return store_status(store);
        }
        if cause.downcast_ref::<pathdb_store::StorageError>().is_some()
            || cause.downcast_ref::<ureq::Error>().is_some()
        {
            return Status::Unavailable;
        }
    }
    Status::Usage
}
