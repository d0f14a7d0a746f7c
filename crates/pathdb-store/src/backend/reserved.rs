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

use redb::StorageBackend;
use redb::backends::FileBackend;
use std::fs::File;
use std::io;
use std::ops::Bound;

/// A [`FileBackend`] whose growth is reserved on the disk before redb uses it.
#[derive(Debug)]
pub(super) struct Reserved {
    inner: FileBackend,
    /// The same open file, for `posix_fallocate`.
    #[cfg_attr(not(unix), allow(dead_code))]
    file: File,
}

impl Reserved {
    /// Opens (creating if needed) the file at `path`, as redb's `Builder::create` does.
    pub(super) fn open(path: &std::path::Path) -> io::Result<Reserved> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        let inner = FileBackend::new(file.try_clone()?).map_err(io::Error::other)?;
        Ok(Reserved { inner, file })
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
        // SAFETY: the descriptor is open for as long as `self.file` lives; posix_fallocate
        // reads nothing from memory.
        match unsafe { libc::posix_fallocate(self.file.as_raw_fd(), offset, extra) } {
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
        self.inner.set_len(len)
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
