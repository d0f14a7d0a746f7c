//! redb's file, growing only into space the file system has reserved for it.
//!
//! redb grows its file with `set_len`, which leaves the new region sparse: the file system
//! promises no space for it, and a full disk shows only later, when a commit writes there. The
//! failed commit is then rolled back, but the file keeps its sparse tail, and redb's allocator
//! counts those pages as free. The next small commit lands there and fails too, including the
//! one that closes the file, so a file that hit a full disk could not be closed cleanly, and
//! read-only opens refused it until someone freed space and wrote.
//!
//! Growing with `posix_fallocate` first makes the growth itself fail on a full disk, before
//! anything is written, and every page redb believes free is backed by real space.
//!
//! That is not enough on its own: a write that fits is acknowledged, and the checkpoint after
//! it, or the one that closes the file, may still need to grow it, on a disk that is now full.
//! That checkpoint failed, the file was left needing its journal replayed, and read-only opens
//! refused it. So the file also keeps a [`MARGIN`] allocated past its end (Linux's
//! `fallocate` with `FALLOC_FL_KEEP_SIZE`: the blocks are the file's, its length does not
//! change), which redb's growth uses first. When the margin cannot be kept whole, the
//! [`Margin`] says so, and the committer refuses writes as "disk full" until it can: what is
//! left of the margin is for the checkpoints and the clean close.

use redb::StorageBackend;
use redb::backends::FileBackend;
use std::fs::File;
use std::io;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Space kept allocated past the end of the file: more than a checkpoint of a full journal
/// (4 MiB of records) grows the file by, and than the commit that closes it does.
pub(super) const MARGIN: u64 = 8 << 20;

/// A [`FileBackend`] whose growth is reserved on the disk before redb uses it.
#[derive(Debug)]
pub(super) struct Reserved {
    inner: FileBackend,
    margin: Arc<Margin>,
}

/// The space kept past the end of the file, and whether it is whole; shared with the committer.
#[derive(Debug)]
pub(super) struct Margin {
    /// The same open file, for `fallocate` and the growth's `posix_fallocate`.
    #[cfg_attr(not(unix), allow(dead_code))]
    file: File,
    short: AtomicBool,
}

impl Margin {
    /// Keeps [`MARGIN`] allocated past `len`, and says whether it could.
    #[cfg(target_os = "linux")]
    fn keep(&self, len: u64) -> bool {
        use std::os::fd::AsRawFd;
        let whole = match (libc::off_t::try_from(len), libc::off_t::try_from(MARGIN)) {
            // SAFETY: the descriptor is open for as long as `self.file` lives; fallocate reads
            // nothing from memory.
            (Ok(offset), Ok(extra)) => match unsafe {
                libc::fallocate(
                    self.file.as_raw_fd(),
                    libc::FALLOC_FL_KEEP_SIZE,
                    offset,
                    extra,
                )
            } {
                0 => true,
                _ => !matches!(
                    io::Error::last_os_error().raw_os_error(),
                    Some(libc::ENOSPC | libc::EDQUOT)
                ),
            },
            _ => true,
        };
        self.short.store(!whole, Ordering::Release);
        whole
    }

    /// Elsewhere there is no margin: the growth's own reservation is what there is.
    #[cfg(not(target_os = "linux"))]
    fn keep(&self, _len: u64) -> bool {
        true
    }

    /// Tries again to keep the margin whole (space may have been freed); `Err`: the disk is
    /// too full to keep it, and writes should wait.
    pub(super) fn check(&self) -> io::Result<()> {
        if !self.short.load(Ordering::Acquire) {
            return Ok(());
        }
        let len = self.file.metadata()?.len();
        if self.keep(len) {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "no room left past the file for the checkpoints it needs",
            ))
        }
    }
}

impl Reserved {
    /// Opens (creating if needed) the file at `path`, as redb's `Builder::create` does, and
    /// keeps the margin past its end if the disk has room for it.
    pub(super) fn open(path: &std::path::Path) -> io::Result<Reserved> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        let len = file.metadata()?.len();
        let inner = FileBackend::new(file.try_clone()?).map_err(io::Error::other)?;
        let margin = Arc::new(Margin {
            file,
            short: AtomicBool::new(false),
        });
        margin.keep(len);
        Ok(Reserved { inner, margin })
    }

    /// The margin, for the committer to check before it takes a write.
    pub(super) fn margin(&self) -> Arc<Margin> {
        Arc::clone(&self.margin)
    }

    #[cfg(unix)]
    fn reserve(&self, len: u64) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let current = self.inner.len()?;
        if len <= current {
            return Ok(());
        }
        let (Ok(offset), Ok(extra)) = (
            libc::off_t::try_from(current),
            libc::off_t::try_from(len - current),
        ) else {
            return Err(io::Error::from(io::ErrorKind::FileTooLarge));
        };
        // SAFETY: the descriptor is open for as long as `self.margin.file` lives;
        // posix_fallocate reads nothing from memory.
        match unsafe { libc::posix_fallocate(self.margin.file.as_raw_fd(), offset, extra) } {
            0 => Ok(()),
            // File systems that cannot reserve space (some network ones) grow sparse as before.
            libc::EOPNOTSUPP | libc::EINVAL => Ok(()),
            code => Err(io::Error::from_raw_os_error(code)),
        }
    }

    #[cfg(not(unix))]
    fn reserve(&self, _len: u64) -> io::Result<()> {
        Ok(())
    }
}

impl StorageBackend for Reserved {
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        self.inner.read(offset, out)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.reserve(len)?;
        self.inner.set_len(len)?;
        self.margin.keep(len);
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        self.inner.sync_data()
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.inner.write(offset, data)
    }

    fn close(&self) -> io::Result<()> {
        self.inner.close()
    }

    fn try_lock_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<bool, redb::BackendError> {
        self.inner.try_lock_range(start, end)
    }

    fn try_lock_shared_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<bool, redb::BackendError> {
        self.inner.try_lock_shared_range(start, end)
    }

    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), redb::BackendError> {
        self.inner.lock_range(start, end)
    }

    fn lock_shared_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<(), redb::BackendError> {
        self.inner.lock_shared_range(start, end)
    }

    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), redb::BackendError> {
        self.inner.unlock_range(start, end)
    }

    fn query_lock_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<bool, redb::BackendError> {
        self.inner.query_lock_range(start, end)
    }
}
