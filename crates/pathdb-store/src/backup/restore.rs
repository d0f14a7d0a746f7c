//! Restoring a backup into a new database file: verified first (nothing is created from a file
//! that fails its checksum), written under a temporary name, and put in place only when whole,
//! never over an existing file (as etcd's and Litestream's restores refuse to).
//!
//! A restored database is a new history: its token key is replaced (the old one is kept as
//! retired), so a change token from before the restore answers 410 instead of being read at a
//! position that may mean something else now (docs/changes.md), and the file has a new id, so it
//! starts an archive of its own.

use super::BackupError;
use super::format::{self, BackupInfo};
use crate::backend::{FileBackend, FileLoader, FileOptions};
use crate::jobs::open::retire_token_key;
use std::path::{Path, PathBuf};

/// What a restore wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestoreReport {
    /// The new database file.
    pub path: PathBuf,
    /// The number of the last commit it holds, where known.
    pub commit: Option<u64>,
    /// When that commit was made (a backup: when it was taken), in microseconds since the Unix
    /// epoch.
    pub time: i64,
    /// Rows written from the backup.
    pub rows: u64,
    /// Commits applied from an archive after its base backup.
    pub commits: u64,
    /// Where a restore from an archive stopped short of what was asked, and why.
    pub stopped: Option<String>,
}

/// Restores the backup file `backup` into a new database at `db`; see the module.
///
/// # Errors
/// `db` exists; the backup is not one, is damaged or cut short (naming the file); writing fails.
pub fn restore_backup(backup: &Path, db: &Path) -> Result<RestoreReport, BackupError> {
    refuse_existing(db)?;
    let name = backup.display().to_string();
    let open = || std::fs::File::open(backup).map_err(|e| BackupError::io(&name, e));
    format::verify(&name, open()?)?;
    let mut target = NewDatabase::create(db)?;
    let info = target.load(&name, open()?)?;
    let report = target.finish(info.commit, info.taken_at, 0, None)?;
    Ok(RestoreReport {
        rows: info.rows,
        ..report
    })
}

/// A restore refuses a path that exists, before any work.
pub(crate) fn refuse_existing(db: &Path) -> Result<(), BackupError> {
    if db.exists() {
        return Err(BackupError::Exists(db.to_owned()));
    }
    Ok(())
}

/// The database a restore writes: a file under a temporary name until it is whole.
pub(crate) struct NewDatabase {
    loader: Option<FileLoader>,
    temporary: PathBuf,
    db: PathBuf,
}

impl NewDatabase {
    pub(crate) fn create(db: &Path) -> Result<NewDatabase, BackupError> {
        refuse_existing(db)?;
        let mut name = db.as_os_str().to_owned();
        name.push(".restoring");
        let temporary = PathBuf::from(name);
        // Left by a restore that was killed: it was never put in place.
        let _ = std::fs::remove_file(&temporary);
        Ok(NewDatabase {
            loader: Some(FileLoader::create(&temporary)?),
            temporary,
            db: db.to_owned(),
        })
    }

    pub(crate) fn loader(&mut self) -> Result<&mut FileLoader, BackupError> {
        self.loader
            .as_mut()
            .ok_or_else(|| BackupError::NothingToRestore("the restore was finished".into()))
    }

    /// Loads a verified backup's rows.
    pub(crate) fn load(
        &mut self,
        name: &str,
        input: impl std::io::Read,
    ) -> Result<BackupInfo, BackupError> {
        let loader = self.loader()?;
        format::read_rows(name, input, |partition, sort, value| {
            Ok(loader.put_encoded(partition, sort, value)?)
        })
    }

    /// Replaces the token key, makes the file durable and puts it in place.
    pub(crate) fn finish(
        mut self,
        commit: Option<u64>,
        time: i64,
        commits: u64,
        stopped: Option<String>,
    ) -> Result<RestoreReport, BackupError> {
        let loader = self
            .loader
            .take()
            .ok_or_else(|| BackupError::NothingToRestore("the restore was finished".into()))?;
        loader.finish(commit.unwrap_or(0))?;
        // A new history: opened once as a database, for the one way a token key is replaced.
        {
            let backend = FileBackend::open(&self.temporary, FileOptions::default())?;
            retire_token_key(&backend).map_err(|e| match e {
                crate::model::error::Error::Storage(e) => BackupError::Storage(e),
                other => {
                    BackupError::Storage(crate::model::error::StorageError::msg(other.to_string()))
                }
            })?;
        }
        // A hard link fails if `db` appeared meanwhile: the check and the move in one step.
        std::fs::hard_link(&self.temporary, &self.db).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                BackupError::Exists(self.db.clone())
            } else {
                BackupError::io(self.db.display(), e)
            }
        })?;
        let _ = std::fs::remove_file(&self.temporary);
        Ok(RestoreReport {
            path: self.db.clone(),
            commit,
            time,
            rows: 0,
            commits,
            stopped,
        })
    }
}

impl Drop for NewDatabase {
    fn drop(&mut self) {
        if let Some(loader) = self.loader.take() {
            // Not finished: nothing of it may stay.
            drop(loader);
            let _ = std::fs::remove_file(&self.temporary);
        }
    }
}
