//! Scheduled backups in a directory (`pathdb serve --backup-dir`): each a backup file named by
//! when it was taken and its commit, so that names sort by time; the oldest are removed beyond
//! the number to keep. `pathdb backup ls` lists them.

use super::BackupError;
use super::format::{BACKUP_EXTENSION, BackupInfo};
use super::target::sync_dir;
use std::path::{Path, PathBuf};

/// A backup file in a backup directory, from its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduledBackup {
    /// The file.
    pub path: PathBuf,
    /// When it was taken (microseconds since the Unix epoch).
    pub taken_at: i64,
    /// Its commit (0 where the backend does not number commits).
    pub commit: u64,
    /// Its size.
    pub bytes: u64,
}

/// The name of a scheduled backup: `pathdb-<taken at, µs>-<commit>.pdbbackup`.
pub fn scheduled_name(taken_at: i64, commit: u64) -> String {
    format!("pathdb-{taken_at:017}-{commit:020}.{BACKUP_EXTENSION}")
}

fn parse_scheduled(name: &str) -> Option<(i64, u64)> {
    let stem = name
        .strip_prefix("pathdb-")?
        .strip_suffix(&format!(".{BACKUP_EXTENSION}"))?;
    let (taken, commit) = stem.split_once('-')?;
    Some((taken.parse().ok()?, commit.parse().ok()?))
}

/// The backups in `dir`, oldest first.
///
/// # Errors
/// `dir` cannot be read.
pub fn list_backups(dir: &Path) -> Result<Vec<ScheduledBackup>, BackupError> {
    let entries = std::fs::read_dir(dir).map_err(|e| BackupError::io(dir.display(), e))?;
    let mut out: Vec<_> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let (taken_at, commit) = parse_scheduled(&name)?;
            Some(ScheduledBackup {
                path: e.path(),
                taken_at,
                commit,
                bytes: e.metadata().map_or(0, |m| m.len()),
            })
        })
        .collect();
    out.sort_by_key(|b| b.taken_at);
    Ok(out)
}

/// Takes a backup into `dir` with `take` (written under a temporary name, synced, then
/// renamed), and removes the oldest beyond `keep`. Returns the new file and what it holds.
///
/// # Errors
/// The backup fails or `dir` cannot be written; nothing is removed then.
pub fn take_scheduled(
    dir: &Path,
    keep: usize,
    take: impl FnOnce(&mut std::fs::File) -> Result<BackupInfo, BackupError>,
) -> Result<(PathBuf, BackupInfo), BackupError> {
    std::fs::create_dir_all(dir).map_err(|e| BackupError::io(dir.display(), e))?;
    let temporary = dir.join(format!(".pathdb-backup-{}.tmp", std::process::id()));
    let taken = (|| -> Result<(PathBuf, BackupInfo), BackupError> {
        let mut file = std::fs::File::create(&temporary)
            .map_err(|e| BackupError::io(temporary.display(), e))?;
        let info = take(&mut file)?;
        file.sync_all()
            .map_err(|e| BackupError::io(temporary.display(), e))?;
        let path = dir.join(scheduled_name(info.taken_at, info.commit.unwrap_or(0)));
        std::fs::rename(&temporary, &path).map_err(|e| BackupError::io(path.display(), e))?;
        sync_dir(dir).map_err(|e| BackupError::io(dir.display(), e))?;
        Ok((path, info))
    })();
    if taken.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    let taken = taken?;
    let all = list_backups(dir)?;
    for old in all.iter().take(all.len().saturating_sub(keep.max(1))) {
        std::fs::remove_file(&old.path).map_err(|e| BackupError::io(old.path.display(), e))?;
    }
    Ok(taken)
}
