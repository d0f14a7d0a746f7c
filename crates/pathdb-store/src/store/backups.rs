//! Backups: the store's side of backup/ (a consistent copy of everything the database holds).

use super::Store;
use crate::backend::Backend;
use crate::backup::{BackupError, BackupInfo, take_backup};
use crate::jobs::open::retire_token_key;
use crate::model::error::Error;
use std::io::Write;

impl<B: Backend> Store<B> {
    /// Writes a backup of the whole database to `out` (backup/format.rs): on the file and
    /// memory backends one snapshot as of one commit, which writers never wait for; on
    /// DynamoDB each row as of its own read ([`BackupInfo::snapshot`] says which).
    ///
    /// # Errors
    /// The backend cannot be read; `out` cannot be written.
    pub fn backup(&self, out: impl Write) -> Result<BackupInfo, BackupError> {
        take_backup(&self.db.backend, out)
    }

    /// Marks the database as restored, a new history: a new token key, so that change tokens
    /// issued before answer 410 (`pathdb restore` does this itself; a DynamoDB table restored
    /// to a point in time needs it once, before it is served: `pathdb dynamodb restored`).
    /// Stores already open keep the old key until they reopen.
    ///
    /// # Errors
    /// Storage failures.
    pub fn mark_restored(&self) -> Result<(), Error> {
        retire_token_key(&self.db.backend)
    }
}
