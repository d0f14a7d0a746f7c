//! Taking a backup: every row of one read view of the backend, in key order.
//!
//! On the file backend the view is a redb read transaction: one snapshot as of one commit, which
//! writers never wait for (redb's MVCC), held for as long as the copy takes. The memory backend's
//! view is a snapshot too. On DynamoDB a `Scan` reads each row as of its own moment: the backup
//! says so (`snapshot: false`), and docs/backups.md points at the table's own point-in-time
//! recovery for a consistent copy.

use super::BackupError;
use super::format::{BackupInfo, BackupWriter, FORMAT};
use crate::backend::{Backend, Reader};
use crate::model::item::Timestamp;
use std::io::Write;

/// Rows read per page of the full scan.
const PAGE: usize = 1_000;

/// Writes a backup of everything `backend` holds to `out`; returns what it holds.
///
/// # Errors
/// The backend cannot be read; `out` cannot be written.
pub fn take_backup<B: Backend>(backend: &B, out: impl Write) -> Result<BackupInfo, BackupError> {
    let (reader, point) = backend.backup_reader()?;
    let info = BackupInfo {
        format: FORMAT,
        commit: point.commit,
        snapshot: point.snapshot,
        taken_at: Timestamp::now().micros(),
        database: point.database,
        rows: 0,
        bytes: 0,
    };
    let io = |e| BackupError::io("the backup being written", e);
    let mut writer = BackupWriter::new(out, info).map_err(io)?;
    let mut after = None;
    loop {
        // Until a page comes back empty: a short page is not the end where a scan skips rows
        // that are not the store's (a shared DynamoDB table).
        let page = reader.scan_all(after.as_ref(), PAGE)?;
        for (key, record) in &page {
            writer.row(key, record).map_err(io)?;
        }
        match page.into_iter().last() {
            Some((key, _)) => after = Some(key),
            None => break,
        }
    }
    let (_, info) = writer.finish().map_err(io)?;
    Ok(info)
}
