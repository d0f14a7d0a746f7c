//! Backups and the continuous archive: a consistent copy of everything a database holds, taken
//! while it serves (`take.rs`), in a checksummed file (`format.rs`) that a restore verifies
//! before it creates anything (`restore.rs`); and, for the embedded backend, every commit kept
//! in segments (`segment.rs`) beside base backups in a target (`target.rs`: a directory or an
//! object store), by the archiver (`archive.rs`), so that a database can be rebuilt as of any
//! commit or second (`pitr.rs`); backups on a schedule in a directory (`schedule.rs`).
//! docs/backups.md is the user's side.
//!
//! A backup holds the backend's rows, not items: the items with their revisions and
//! tombstones, and the system records (definitions and their versions, alias records and
//! builds, expiry, the change log and its numbering, generated-id counters, roles and issued
//! tokens) all come back byte for byte, whatever the store keeps next.

mod format;
mod take;
mod segment;
mod target;
mod restore;
mod archive;
mod pitr;
mod schedule;

pub use archive::{Archive, ArchiveOptions, ArchiveStatus, BaseTaker};
pub use format::{BACKUP_EXTENSION, BackupInfo, verify_file as verify_backup};
pub use pitr::{
    ArchiveListing, BaseInfo, RestoreUntil, SegmentInfo, list_archive, restore_archive,
};
pub use restore::{RestoreReport, restore_backup};
pub use schedule::{ScheduledBackup, list_backups, scheduled_name, take_scheduled};
pub use take::take_backup;
pub use target::{ArchiveTarget, DirTarget, TargetError};

use crate::model::error::StorageError;
use std::path::PathBuf;

/// Why a backup, a restore or an archive operation failed.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    /// The file is not a PathDB backup or archive segment at all.
    #[error("{file}: not a PathDB {what} (unknown header)")]
    NotABackup {
        /// The file.
        file: String,
        /// "backup" or "archive segment".
        what: &'static str,
    },
    /// The file's checksum or structure does not hold: it was damaged or cut short.
    #[error("{file}: corrupt: {why}")]
    Corrupt {
        /// The file.
        file: String,
        /// What does not hold.
        why: String,
    },
    /// The backup was written by a newer PathDB.
    #[error("{file}: backup format {found} is newer than this build's ({supported})")]
    Unsupported {
        /// The file.
        file: String,
        /// Its format.
        found: u32,
        /// This build's.
        supported: u32,
    },
    /// A backup or a restore never replaces a file.
    #[error("{0} already exists: PathDB writes a new file here, never over one")]
    Exists(PathBuf),
    /// The archive belongs to another database.
    #[error("{0}")]
    WrongArchive(String),
    /// The archive holds nothing to restore as asked.
    #[error("{0}")]
    NothingToRestore(String),
    /// Reading or writing a file failed.
    #[error("{file}: {cause}")]
    Io {
        /// The file.
        file: String,
        /// The cause (in the message: not also a `source`, which would print it twice).
        cause: std::io::Error,
    },
    /// The archive's target failed.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// The database failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl BackupError {
    pub(crate) fn io(file: impl std::fmt::Display, source: std::io::Error) -> BackupError {
        BackupError::Io {
            file: file.to_string(),
            cause: source,
        }
    }

    pub(crate) fn corrupt(file: impl std::fmt::Display, why: impl Into<String>) -> BackupError {
        BackupError::Corrupt {
            file: file.to_string(),
            why: why.into(),
        }
    }
}
