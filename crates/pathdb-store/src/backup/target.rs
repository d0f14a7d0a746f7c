//! Where an archive keeps its files: base backups under `base/` and segments under
//! `segments/`, by name. A directory ([`DirTarget`]) here; an object store (S3) implements the
//! same trait in its own crate (`pathdb-s3`), so the store never depends on a cloud SDK.
//!
//! A target's `put` is atomic (a reader sees the whole object or none): a directory writes a
//! temporary file, syncs it and renames it; an object store's PUT is atomic by itself.

use std::fmt::Debug;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A failed target operation, naming the target and the object.
#[derive(Debug, thiserror::Error)]
#[error("{target}: {operation} {name}: {message}")]
pub struct TargetError {
    /// The target, as [`ArchiveTarget::describe`] says it.
    pub target: String,
    /// What was being done.
    pub operation: &'static str,
    /// The object.
    pub name: String,
    /// The cause.
    pub message: String,
    /// Whether the object does not exist.
    pub not_found: bool,
}

/// An archive's storage; see the module. Names are relative paths with `/` separators.
pub trait ArchiveTarget: Debug + Send + Sync + 'static {
    /// The target as the user named it (`/backups/db`, `s3://bucket/prefix`).
    fn describe(&self) -> String;

    /// Stores `bytes` as `name`, replacing it, atomically.
    ///
    /// # Errors
    /// The target refused or is unreachable.
    fn put(&self, name: &str, bytes: &[u8]) -> Result<(), TargetError>;

    /// Stores the file at `path` as `name` (a base backup, which may be large).
    ///
    /// # Errors
    /// As [`ArchiveTarget::put`]; the file cannot be read.
    fn put_file(&self, name: &str, path: &Path) -> Result<(), TargetError> {
        let bytes = std::fs::read(path).map_err(|e| self.error("read", name, &e))?;
        self.put(name, &bytes)
    }

    /// The object `name`.
    ///
    /// # Errors
    /// It does not exist (`not_found`), or the target failed.
    fn get(&self, name: &str) -> Result<Vec<u8>, TargetError>;

    /// Copies the object `name` to the file at `path`.
    ///
    /// # Errors
    /// As [`ArchiveTarget::get`]; the file cannot be written.
    fn get_file(&self, name: &str, path: &Path) -> Result<(), TargetError> {
        let bytes = self.get(name)?;
        std::fs::write(path, bytes).map_err(|e| self.error("write", name, &e))
    }

    /// The names under `prefix` (`base/`, `segments/`) with their sizes, in name order.
    ///
    /// # Errors
    /// The target failed.
    fn list(&self, prefix: &str) -> Result<Vec<(String, u64)>, TargetError>;

    /// Removes `name` (nothing if it does not exist).
    ///
    /// # Errors
    /// The target failed.
    fn delete(&self, name: &str) -> Result<(), TargetError>;

    /// An error of this target.
    fn error(
        &self,
        operation: &'static str,
        name: &str,
        cause: &dyn std::fmt::Display,
    ) -> TargetError {
        TargetError {
            target: self.describe(),
            operation,
            name: name.to_string(),
            message: cause.to_string(),
            not_found: false,
        }
    }
}

/// An archive in a local (or mounted) directory.
#[derive(Debug, Clone)]
pub struct DirTarget {
    root: PathBuf,
}

impl DirTarget {
    /// The archive at `root`, created when first written.
    pub fn new(root: impl Into<PathBuf>) -> DirTarget {
        DirTarget { root: root.into() }
    }

    fn path(&self, name: &str) -> PathBuf {
        name.split('/')
            .fold(self.root.clone(), |p, part| p.join(part))
    }

    fn io(&self, operation: &'static str, name: &str, e: &std::io::Error) -> TargetError {
        TargetError {
            not_found: e.kind() == std::io::ErrorKind::NotFound,
            ..self.error(operation, name, e)
        }
    }

    fn write_atomically(
        &self,
        name: &str,
        write: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
    ) -> Result<(), TargetError> {
        let path = self.path(name);
        let dir = path.parent().unwrap_or(&self.root).to_owned();
        let put = || -> std::io::Result<()> {
            std::fs::create_dir_all(&dir)?;
            let mut temporary = path.as_os_str().to_owned();
            temporary.push(format!(".tmp-{}", std::process::id()));
            let temporary = PathBuf::from(temporary);
            let mut file = std::fs::File::create(&temporary)?;
            write(&mut file)?;
            file.sync_all()?;
            drop(file);
            std::fs::rename(&temporary, &path)?;
            sync_dir(&dir)
        };
        put().map_err(|e| self.io("write", name, &e))
    }
}

impl ArchiveTarget for DirTarget {
    fn describe(&self) -> String {
        self.root.display().to_string()
    }

    fn put(&self, name: &str, bytes: &[u8]) -> Result<(), TargetError> {
        self.write_atomically(name, |file| file.write_all(bytes))
    }

    /// A synced file (what the archive hands over) on the same file system is linked into
    /// place, which moves no bytes; elsewhere it is copied.
    fn put_file(&self, name: &str, path: &Path) -> Result<(), TargetError> {
        let dest = self.path(name);
        let dir = dest.parent().unwrap_or(&self.root).to_owned();
        let mut temporary = dest.as_os_str().to_owned();
        temporary.push(format!(".tmp-{}", std::process::id()));
        let temporary = PathBuf::from(temporary);
        let linked = std::fs::create_dir_all(&dir)
            .and_then(|()| {
                let _ = std::fs::remove_file(&temporary);
                std::fs::hard_link(path, &temporary)
            })
            .and_then(|()| std::fs::rename(&temporary, &dest))
            .and_then(|()| sync_dir(&dir));
        if linked.is_ok() {
            return Ok(());
        }
        let _ = std::fs::remove_file(&temporary);
        self.write_atomically(name, |file| {
            std::io::copy(&mut std::fs::File::open(path)?, file).map(drop)
        })
    }

    fn get(&self, name: &str) -> Result<Vec<u8>, TargetError> {
        std::fs::read(self.path(name)).map_err(|e| self.io("read", name, &e))
    }

    fn get_file(&self, name: &str, path: &Path) -> Result<(), TargetError> {
        std::fs::copy(self.path(name), path)
            .map(drop)
            .map_err(|e| self.io("read", name, &e))
    }

    fn list(&self, prefix: &str) -> Result<Vec<(String, u64)>, TargetError> {
        let dir = self.path(prefix.trim_end_matches('/'));
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(self.io("list", prefix, &e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| self.io("list", prefix, &e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            // A temporary file is a write in progress, or one a crash cut short.
            if name.contains(".tmp-") {
                continue;
            }
            let size = entry.metadata().map_or(0, |m| m.len());
            out.push((format!("{prefix}{name}"), size));
        }
        out.sort();
        Ok(out)
    }

    fn delete(&self, name: &str) -> Result<(), TargetError> {
        match std::fs::remove_file(self.path(name)) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(self.io("delete", name, &e)),
        }
    }
}

/// Makes a directory's entries durable (a renamed file's new name).
pub(crate) fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::fs::File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}
