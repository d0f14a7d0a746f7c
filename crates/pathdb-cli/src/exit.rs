//! Exit statuses that tell failures apart, for scripts: the one place that maps an error to a
//! status. Local errors come typed from the store ([`pathdb_store::Error`]); in `--server` mode
//! the client turns HTTP answers into [`Failure::Server`], so both modes end with the same
//! status for the same failure.

use pathdb_store::backup::BackupError;
use std::process::ExitCode;

/// The documented exit statuses (see `pathdb --help` and the README).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Status {
    /// 0: done.
    Ok = 0,
    /// 1: the item (or version) asked for, or to patch, does not exist.
    NotFound = 1,
    /// 2: usage or invalid input: bad arguments, key path, JSON, page token, size limits, a
    /// filter that does not compile, a database file that does not exist for a read.
    Usage = 2,
    /// 3: a condition (`--must-not-exist`, `--if-version`) failed, a write conflicted, or a
    /// patch did not apply to the value.
    Condition = 3,
    /// 4: the server or storage is unavailable: cannot connect to `--server`, 5xx, a
    /// `--server` that answers but is not PathDB, a database
    /// file held by another process, DynamoDB unreachable, I/O errors.
    Unavailable = 4,
    /// 5: refused: the token is missing or lacks the scope, the database is read-only, or the
    /// operating system denies access to the file.
    Refused = 5,
    /// 6: a value does not fit the JSON Schema of its namespace, or a member an alias takes its
    /// id from is not a string or an integer (nothing was written); the error lists what
    /// failed, each with a JSON pointer into the value.
    SchemaViolation = 6,
    /// 7: a backup or archive file is damaged, cut short or not a backup: nothing was created.
    Damaged = 7,
    /// 8: a restore from an archive stopped before the point asked for (a gap, a damaged
    /// segment): the new database holds everything up to the commit it names.
    Incomplete = 8,
}

/// The text for `pathdb --help`; kept next to [`Status`] so that the two agree.
pub const HELP: &str = "\
Exit status:
  0  success
  1  not found: `get` of a missing path or version, `rm` of a missing path, `patch` of a
     missing item (without --create), `rm -r`, `mv` or `cp` of a path with nothing at or
     below it
  2  usage or invalid input (arguments, key path, JSON, limits, a --filter that does not
     compile, a --schema-version its namespace does not have; a missing --db file for a
     read)
  3  condition failed (--must-not-exist, --if-version), write conflict, a `mv`/`cp`
     destination that is not empty, a patch that does not apply (a failed `test`, an
     increment of a non-number), an alias another item holds, a put at an alias path, or a
     namespace definition that would break stored items or older clients (`ns set --force`)
  4  unavailable: cannot reach --server, server error (5xx; an alias still being built), a
     --server that is not PathDB,
     database file in use by another process, storage or DynamoDB failure, an export that did
     not complete
  5  refused: missing or read-only access token, read-only database, or no permission to
     open the file (e.g. a write to a file you may only read)
  6  schema violation: a value does not fit its namespace's JSON Schema (or a member an
     alias takes its id from is not a string or an integer, or a value written in an older
     --schema-version that its migration steps cannot bring forward); nothing was written,
     and each failure is printed with its JSON pointer (`pathdb ns get NS` shows the schema)
  7  damaged: a backup or archive segment fails its checksum, is cut short or is not a
     backup (the error names the file); nothing was created
  8  restore incomplete: the archive has a gap or a damaged segment before the point asked
     for; the new database holds everything up to the commit the message names";

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
        /// With `schema_violation`: what failed.
        violations: Vec<pathdb_store::Violation>,
    },
    /// The database file is locked by another process.
    #[error("{}", in_use_message(path, server.as_deref()))]
    InUse {
        /// The file.
        path: std::path::PathBuf,
        /// The URL a live `pathdb serve` recorded for it (see `address_file`), if any.
        server: Option<String>,
    },
    /// `--server` answered, but not as PathDB does: another program listens there.
    #[error("{server} is not a PathDB server (it answered {answered})")]
    NotPathdb {
        /// The server's base URL.
        server: String,
        /// The status, content type and start of the body.
        answered: String,
    },
    /// An export stream that did not end with its complete last line: what arrived is a prefix.
    #[error("export incomplete: {0}")]
    IncompleteExport(String),
    /// An alias build stopped: items share an alias the template makes unique.
    #[error("{0}")]
    AliasConflict(String),
    /// A restore from an archive stopped before the point asked for.
    #[error("{0}")]
    RestoreIncomplete(String),
    /// A `--filter` that does not compile (on a local file or on the server): printed with the
    /// filter and a caret under the position ([`filter_excerpt`]).
    #[error("invalid filter at character {position}: {reason}")]
    InvalidFilter {
        /// The filter as given.
        filter: String,
        /// Where the problem is: characters from the filter's start, 0-based.
        position: usize,
        /// What is wrong.
        reason: String,
    },
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

/// Names the server only when one recorded its address and still answers there: the lock is
/// also held by a local `pathdb watch` or any other pathdb command on the file.
fn in_use_message(path: &std::path::Path, server: Option<&str>) -> String {
    let path = path.display();
    match server {
        Some(url) => format!(
            "{path} is in use by `pathdb serve` at {url}; use --server {url} to go through the server"
        ),
        None => format!(
            "{path} is in use by another pathdb process (a `pathdb watch`, another command, or \
             a server); stop it or wait for it, give this command another file with --db, or \
             if a server runs on the file, go through it with --server URL"
        ),
    }
}

impl Failure {
    fn status(&self) -> Status {
        match self {
            Failure::NotFound(_) => Status::NotFound,
            Failure::InUse { .. } | Failure::NotPathdb { .. } | Failure::IncompleteExport(_) => {
                Status::Unavailable
            }
            Failure::NoDatabase { .. } | Failure::InvalidFilter { .. } => Status::Usage,
            Failure::AliasConflict(_) => Status::Condition,
            Failure::RestoreIncomplete(_) => Status::Incomplete,
            Failure::Server { status, code, .. } => http_status(*status, code),
        }
    }
}

/// The status for an HTTP error answer, by the server's error code first, then by HTTP status.
fn http_status(status: u16, code: &str) -> Status {
    match (status, code) {
        // A role or token refused for what it says: bad input, as from a local file.
        (_, "unknown_role" | "invalid_role") => Status::Usage,
        (_, "schema_violation") | (422, _) => Status::SchemaViolation,
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
        | E::ListChanged { .. }
        | E::Conflict { .. }
        | E::DestinationNotEmpty { .. }
        | E::PatchTestFailed { .. }
        | E::PatchConflict { .. }
        | E::DefinitionConditionFailed { .. }
        | E::RoleConditionFailed { .. }
        | E::BuiltinRole(_)
        | E::AliasTaken { .. }
        | E::PathIsAlias { .. }
        | E::IncompatibleSchema { .. } => Status::Condition,
        E::AliasInvalid { .. } | E::MigrationFailed { .. } => Status::SchemaViolation,
        E::AliasBuilding { .. } => Status::Unavailable,
        E::NothingBelow { .. } | E::ItemNotFound { .. } | E::NamespaceNotFound(_) => {
            Status::NotFound
        }
        E::SchemaViolation { .. } => Status::SchemaViolation,
        E::ReadOnly => Status::Refused,
        E::Storage(e) if e.kind() == pathdb_store::StorageErrorKind::PermissionDenied => {
            Status::Refused
        }
        E::Storage(_) => Status::Unavailable,
        _ => Status::Usage,
    }
}

/// The stable code of a store error: the one the server answers for it (`pathdb-server`'s
/// `ApiError`), so that `--json` errors read the same from a file and through `--server`.
fn store_code(error: &pathdb_store::Error) -> &'static str {
    use pathdb_store::Error as E;
    use pathdb_store::StorageErrorKind as K;
    match error {
        E::ConditionFailed { .. }
        | E::ListChanged { .. }
        | E::DefinitionConditionFailed { .. }
        | E::RoleConditionFailed { .. } => "condition_failed",
        E::BuiltinRole(_) => "builtin_role",
        E::UnknownRole(_) => "unknown_role",
        E::SchemaViolation { .. } => "schema_violation",
        E::InvalidSchema(_) => "invalid_schema",
        E::AliasTaken { .. } => "alias_taken",
        E::PathIsAlias { .. } => "path_is_alias",
        E::AliasInvalid { .. } => "alias_invalid",
        E::AliasBuilding { .. } => "alias_building",
        E::NamespaceNotFound(_) => "not_found",
        E::Conflict { .. } => "conflict",
        E::KeyTooLarge { .. } | E::ItemTooLarge { .. } => "too_large",
        E::InvalidJson(_) => "invalid_json",
        E::InvalidPageToken(_) => "invalid_page_token",
        E::InvalidChangeToken(_) => "invalid_change_token",
        E::InvalidFilter { .. } => "invalid_filter",
        E::IncompatibleSchema { .. } => "incompatible_schema",
        E::MigrationFailed { .. } => "migration_failed",
        E::UnknownSchemaVersion { .. } => "unknown_schema_version",
        E::ChangesExpired(_) => "token_expired",
        E::NothingBelow { .. } | E::ItemNotFound { .. } => "not_found",
        E::PatchTestFailed { .. } => "patch_test_failed",
        E::PatchConflict { .. } => "patch_conflict",
        E::DestinationNotEmpty { .. } => "destination_not_empty",
        E::ReadOnly => "read_only",
        E::Storage(e) => match e.kind() {
            K::Full => "insufficient_storage",
            K::OutcomeUnknown => "outcome_unknown",
            K::InUse => "in_use",
            K::PermissionDenied => "permission_denied",
            _ => "unavailable",
        },
        _ => "invalid_request",
    }
}

/// The stable code of a failed command (`--json` errors): the first cause in the chain that
/// names one, else the kind of its exit status.
pub fn code_of(error: &anyhow::Error) -> String {
    for cause in error.chain() {
        if let Some(failure) = cause.downcast_ref::<Failure>() {
            return match failure {
                Failure::NotFound(_) => "not_found",
                Failure::Server { code, .. } => return code.clone(),
                Failure::InUse { .. } => "in_use",
                Failure::NotPathdb { .. } => "not_pathdb",
                Failure::IncompleteExport(_) => "export_incomplete",
                Failure::NoDatabase { .. } => "no_database",
                Failure::InvalidFilter { .. } => "invalid_filter",
                Failure::AliasConflict(_) => "alias_conflict",
                Failure::RestoreIncomplete(_) => "restore_incomplete",
            }
            .to_owned();
        }
        if let Some(store) = cause.downcast_ref::<pathdb_store::Error>() {
            return store_code(store).to_owned();
        }
        if let Some(backup) = cause.downcast_ref::<BackupError>() {
            return backup_code(backup).to_owned();
        }
        if cause.downcast_ref::<pathdb_keys::ParseError>().is_some() {
            return "invalid_path".to_owned();
        }
        if cause.downcast_ref::<ureq::Error>().is_some() {
            return "unreachable".to_owned();
        }
        if cause.downcast_ref::<pathdb_store::StorageError>().is_some() {
            return "unavailable".to_owned();
        }
    }
    match status_of(error) {
        Status::NotFound => "not_found",
        Status::Condition => "condition_failed",
        Status::Unavailable => "unavailable",
        Status::Refused => "forbidden",
        Status::SchemaViolation => "schema_violation",
        Status::Damaged => "damaged",
        Status::Incomplete => "restore_incomplete",
        Status::Ok | Status::Usage => "invalid_request",
    }
    .to_owned()
}

/// A failed command as `--json` prints it on stderr: one line,
/// `{"error": {"code": "...", "message": "...", "exit": N}}`, with a schema violation its
/// `"violations"` and with an invalid filter its `"position"` (as the server answers them).
pub fn json_error(
    code: &str,
    message: &str,
    status: Status,
    violations: &[pathdb_store::Violation],
    position: Option<usize>,
) -> String {
    let mut error = serde_json::json!({"code": code, "message": message, "exit": status as u8});
    if !violations.is_empty() {
        error["violations"] = serde_json::json!(violations);
    }
    if let Some(position) = position {
        error["position"] = serde_json::json!(position);
    }
    serde_json::json!({ "error": error }).to_string()
}

/// Where an invalid filter went wrong (characters from its start), for `--json` errors.
pub fn filter_position_of(error: &anyhow::Error) -> Option<usize> {
    error.chain().find_map(|cause| {
        match cause.downcast_ref::<Failure>() {
            Some(Failure::InvalidFilter { position, .. }) => return Some(*position),
            Some(_) => return None,
            None => {}
        }
        match cause.downcast_ref::<pathdb_store::Error>() {
            Some(pathdb_store::Error::InvalidFilter { position, .. }) => Some(*position),
            _ => None,
        }
    })
}

/// Characters of a long filter line shown on each side of the position.
const EXCERPT_SIDE: usize = 40;

/// The lines printed under an invalid filter's error, as a compiler points at a mistake: the
/// filter's line that holds the position (an excerpt of a long one), and a caret under it.
pub fn filter_excerpt(error: &anyhow::Error) -> Option<String> {
    let (filter, position) = error.chain().find_map(|cause| match cause.downcast_ref() {
        Some(Failure::InvalidFilter {
            filter, position, ..
        }) => Some((filter.as_str(), *position)),
        _ => None,
    })?;
    Some(excerpt(filter, position))
}

fn excerpt(filter: &str, position: usize) -> String {
    let chars: Vec<char> = filter.chars().collect();
    let position = position.min(chars.len());
    // The line around the position (a filter may span lines).
    let start = chars[..position]
        .iter()
        .rposition(|c| *c == '\n')
        .map_or(0, |i| i + 1);
    let end = chars[position..]
        .iter()
        .position(|c| *c == '\n')
        .map_or(chars.len(), |i| position + i);
    let line_number = chars[..start].iter().filter(|c| **c == '\n').count() + 1;
    let from = start.max(position.saturating_sub(EXCERPT_SIDE));
    let to = end.min(position + EXCERPT_SIDE);
    let (before, after) = (from > start, to < end);
    let mut shown = String::from("  ");
    if line_number > 1 || end < chars.len() {
        shown.push_str(&format!("(line {line_number}) "));
    }
    if before {
        shown.push_str("...");
    }
    // What the terminal shows for each character: control characters (a tab) as a space, so
    // that the caret lines up.
    let visible = |c: &char| if c.is_control() { ' ' } else { *c };
    let lead = shown.chars().count() + (position - from);
    shown.extend(chars[from..to].iter().map(visible));
    if after {
        shown.push_str("...");
    }
    format!("{shown}\n{}^", " ".repeat(lead))
}

/// One violation as the CLI prints it, indented under its item or error:
/// `  /age: "x" is not of type "integer" [schema /properties/age/type]`.
pub fn violation_line(v: &pathdb_store::Violation) -> String {
    let at = if v.instance_path.is_empty() {
        "(the value)"
    } else {
        &v.instance_path
    };
    format!("  {at}: {} [schema {}]", v.message, v.schema_path)
}

/// What a refused value broke, from a local store error or a server's answer.
pub fn violations_of(error: &anyhow::Error) -> &[pathdb_store::Violation] {
    for cause in error.chain() {
        if let Some(Failure::Server { violations, .. }) = cause.downcast_ref::<Failure>() {
            return violations;
        }
        if let Some(pathdb_store::Error::SchemaViolation { violations, .. }) =
            cause.downcast_ref::<pathdb_store::Error>()
        {
            return violations;
        }
    }
    &[]
}

fn backup_status(error: &BackupError) -> Status {
    match error {
        BackupError::NotABackup { .. }
        | BackupError::Corrupt { .. }
        | BackupError::Unsupported { .. } => Status::Damaged,
        BackupError::Exists(_) => Status::Condition,
        BackupError::WrongArchive(_) => Status::Usage,
        BackupError::NothingToRestore(_) => Status::NotFound,
        BackupError::Io { .. } | BackupError::Target(_) | BackupError::Storage(_) => {
            Status::Unavailable
        }
    }
}

fn backup_code(error: &BackupError) -> &'static str {
    match error {
        BackupError::NotABackup { .. } => "not_a_backup",
        BackupError::Corrupt { .. } => "damaged",
        BackupError::Unsupported { .. } => "unsupported_format",
        BackupError::Exists(_) => "exists",
        BackupError::WrongArchive(_) => "wrong_archive",
        BackupError::NothingToRestore(_) => "nothing_to_restore",
        BackupError::Io { .. } | BackupError::Target(_) | BackupError::Storage(_) => "unavailable",
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
        if let Some(backup) = cause.downcast_ref::<BackupError>() {
            return backup_status(backup);
        }
        if cause.downcast_ref::<pathdb_store::StorageError>().is_some()
            || cause.downcast_ref::<ureq::Error>().is_some()
        {
            return Status::Unavailable;
        }
    }
    Status::Usage
}

#[cfg(test)]
mod tests {
    use super::excerpt;

    #[test]
    fn a_caret_points_at_the_position() {
        let caret = |column: usize| format!("{}^", " ".repeat(column));
        assert_eq!(
            excerpt("value.total > > 100", 14),
            format!("  value.total > > 100\n{}", caret(16))
        );
        // At the end of the filter (an expression cut short).
        assert_eq!(
            excerpt("value.a &&", 10),
            format!("  value.a &&\n{}", caret(12))
        );
        // A tab is shown as a space; the caret still lines up.
        assert_eq!(excerpt("a\t== 1", 2), format!("  a == 1\n{}", caret(4)));
        // The line of a filter of several lines.
        assert_eq!(
            excerpt("value.a == 1 &&\n  value.b ==", 28),
            format!("  (line 2)   value.b ==\n{}", caret(23))
        );
        // An excerpt of a long line.
        let long = format!("{} && )", "value.a == 1 && ".repeat(10));
        let shown = excerpt(&long, long.len() - 1);
        let (line, caret) = shown.split_once('\n').expect("two lines");
        assert!(line.starts_with("  ...") && line.ends_with(')'), "{shown}");
        assert_eq!(caret.len(), line.chars().count(), "{shown}");
    }
}
