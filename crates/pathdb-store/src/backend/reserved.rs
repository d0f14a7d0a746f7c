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
//! left of the margin is for the checkpoints and the clean close. A file closed cleanly gives
//! its margin back ([`Margin::release_on_close`]): a stopped database takes only its own
//! length on the disk, and the next read-write open keeps the margin again.
//!
//! A checkpoint's pages are also written paced: after every [`PACE`] bytes redb writes, the
//! file's dirty pages are written back and waited for (`sync_file_range`). Otherwise they all
//! go to the disk at the checkpoint's `fdatasync`, and the journal's flushes, on the same disk,
//! wait behind them: with a 16 MiB journal, every writer stalled 8-23 ms at each checkpoint
//! (docs/benchmarks.md, issue 52). Paced, a flush waits behind a MiB at most.

use redb::StorageBackend;
use redb::backends::FileBackend;
use std::fs::File;
use std::io;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The least space kept allocated past the end of the file: more than a checkpoint of a full
/// 4 MiB journal grows the file by, and than the commit that closes it does.
pub(super) const MARGIN: u64 = 8 << 20;

/// The space kept past the end of the file for checkpoints of a journal of `checkpoint_bytes`:
/// twice what they hold, as [`MARGIN`] is for 4 MiB.
pub(super) fn margin_for(checkpoint_bytes: u64) -> u64 {
    checkpoint_bytes.saturating_mul(2).max(MARGIN)
}

/// How many bytes redb writes between two waits for their write-back.
const PACE: u64 = 1 << 20;

/// A [`FileBackend`] whose growth is reserved on the disk before redb uses it.
#[derive(Debug)]
pub(super) struct Reserved {
    inner: FileBackend,
    margin: Arc<Margin>,
    /// Bytes written since the last wait for write-back ([`PACE`]).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    unpaced: AtomicU64,
}

/// The space kept past the end of the file, and whether it is whole; shared with the committer.
#[derive(Debug)]
pub(super) struct Margin {
    /// The same open file, for `fallocate` and the growth's `posix_fallocate`.
    #[cfg_attr(not(unix), allow(dead_code))]
    file: File,
    /// How many bytes to keep past the end.
    bytes: u64,
    short: AtomicBool,
    /// Give the margin back when redb closes the file (see [`Margin::release_on_close`]).
    release: AtomicBool,
}

impl Margin {
    /// Keeps the margin's bytes allocated past `len`, and says whether it could.
    #[cfg(target_os = "linux")]
    fn keep(&self, len: u64) -> bool {
        use std::os::fd::AsRawFd;
        let whole = match (
            libc::off_t::try_from(len),
            libc::off_t::try_from(self.bytes),
        ) {
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

    /// How many bytes it keeps past the end of the file.
    pub(super) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Once redb closes the file, after its last write, gives the margin back. For the clean
    /// close only: a handle closed to be reopened after a failed commit keeps it, since space
    /// given back on a full disk may not be there to keep again.
    pub(super) fn release_on_close(&self) {
        self.release.store(true, Ordering::Release);
    }

    /// Gives the space kept past the end of the file back to the file system (best effort: the
    /// file is whole either way). Truncating a file to its own length drops the blocks past it
    /// (a hole punched there is ignored: ext4 punches nothing past the end).
    #[cfg(target_os = "linux")]
    fn release(&self) {
        if let Ok(len) = self.file.metadata().map(|m| m.len()) {
            let _ = self.file.set_len(len);
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn release(&self) {}

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
    /// keeps `margin` bytes past its end if the disk has room for them.
    pub(super) fn open(path: &std::path::Path, margin: u64) -> io::Result<Reserved> {
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
            bytes: margin,
            short: AtomicBool::new(false),
            release: AtomicBool::new(false),
        });
        margin.keep(len);
        Ok(Reserved {
            inner,
            margin,
            unpaced: AtomicU64::new(0),
        })
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

    /// After `written` more bytes: once [`PACE`] have gathered, writes the file's dirty pages
    /// back and waits for them. An error is the write's: the write-back's error is reported
    /// once, here, and the commit's `fdatasync` would not see it again.
    #[cfg(target_os = "linux")]
    fn pace(&self, written: usize) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let written = u64::try_from(written).unwrap_or(u64::MAX);
        let unpaced = self.unpaced.fetch_add(written, Ordering::Relaxed);
        if unpaced.saturating_add(written) < PACE {
            return Ok(());
        }
        self.unpaced.store(0, Ordering::Relaxed);
        let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE
            | libc::SYNC_FILE_RANGE_WRITE
            | libc::SYNC_FILE_RANGE_WAIT_AFTER;
        // SAFETY: the descriptor is open for as long as `self.margin.file` lives; the call reads
        // nothing from memory. Offset 0 and length 0: the whole file.
        if unsafe { libc::sync_file_range(self.margin.file.as_raw_fd(), 0, 0, flags) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            // Not supported there: the commit's fdatasync writes everything, as unpaced.
            Some(libc::ENOSYS | libc::EINVAL | libc::ESPIPE | libc::EOPNOTSUPP) => Ok(()),
            _ => Err(e),
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn pace(&self, _written: usize) -> io::Result<()> {
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
        self.inner.write(offset, data)?;
        self.pace(data.len())
    }

    fn close(&self) -> io::Result<()> {
        let closed = self.inner.close();
        if self.margin.release.load(Ordering::Acquire) {
            self.margin.release();
        }
        closed
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
