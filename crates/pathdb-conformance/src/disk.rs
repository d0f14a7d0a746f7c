//! A real full disk for tests: a small tmpfs, and a file that fills it.

use std::path::Path;
use std::process::Command;

/// A tmpfs of a few megabytes mounted on a new directory, unmounted when dropped.
pub struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts a tmpfs of `megabytes`; `Err` with the reason where mounting is not allowed (not
    /// root, no tmpfs, a sandbox), for the test to print as it skips.
    pub fn mount(megabytes: u64) -> Result<Tmpfs, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={megabytes}m"), "tmpfs"])
            .arg(dir.path())
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "mount -t tmpfs failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(Tmpfs { dir })
    }

    /// [`Tmpfs::mount`], or `None` after printing why a test that needs a full disk skips.
    pub fn mount_or_skip(megabytes: u64) -> Option<Tmpfs> {
        match Tmpfs::mount(megabytes) {
            Ok(fs) => Some(fs),
            Err(reason) => {
                eprintln!("skipped: a full disk needs a small tmpfs, and {reason}");
                None
            }
        }
    }

    /// Where it is mounted.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

/// Writes zeros to `file` until the file system refuses more.
///
/// # Panics
/// If `file` cannot be created.
pub fn fill(file: &Path) {
    use std::io::Write;
    let mut out = std::fs::File::create(file).expect("create the filler file");
    let chunk = vec![0u8; 64 << 10];
    while out.write_all(&chunk).is_ok() {}
    let _ = out.sync_all();
}
