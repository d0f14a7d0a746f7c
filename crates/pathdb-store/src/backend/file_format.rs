//! The embedded backend's file: its tables, its format version, opening it (writable or
//! read-only), replaying the commit journal into it, and its durable commits and checkpoints.

use super::file_read::storage;
use super::journal::{self, Change, Journal};
use super::reserved::Margin;
use crate::model::error::{StorageError, StorageErrorKind};
use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

pub(super) const DATA: TableDefinition<(&[u8], &[u8]), &[u8]> = TableDefinition::new("pathdb_data");
pub(super) const META: TableDefinition<&str, u64> = TableDefinition::new("pathdb_meta");
/// `META` key: the number of the last journaled commit the file holds (see [`super::journal`]).
pub(super) const JOURNALED: &str = "journal";
/// `META` key: this database's id, which its journal carries.
pub(super) const JOURNAL_ID: &str = "journal_id";
/// A commit whose journal record would be larger is a durable redb commit instead: an import's
/// batches gain nothing from being written twice.
pub(super) const JOURNAL_RECORD_MAX: usize = 1 << 20;
/// A journal this long is checkpointed, where the disk has room for it ([`journal_capacity`]).
/// It bounds the replay after a crash and the rows the overlay holds between checkpoints. A
/// larger checkpoint puts more rows into each page it rewrites: at 16 MiB instead of 4, with
/// its pages reaching the disk paced ([`super::reserved`]), the p99 of a put under 32 writers
/// fell from 17-20 to 12-15 ms, and new items with aliases (random rows in large groups) went
/// about a tenth faster (docs/benchmarks.md, issue 52).
pub(super) const JOURNAL_CAPACITY: u64 = 16 << 20;
/// The journal's capacity on a disk with less than [`ROOMY_DISK`] free: its two files, and the
/// room kept past redb's file for a checkpoint ([`super::reserved::margin_for`]), take four
/// times the capacity.
pub(super) const JOURNAL_CAPACITY_SMALL: u64 = 4 << 20;
/// Free space from which a database gets the larger journal: the journal's files and the
/// checkpoint's margin then take at most 1/16 of it.
pub(super) const ROOMY_DISK: u64 = 1 << 30;
/// Under steady writes, a checkpoint at least this often.
pub(super) const CHECKPOINT_EVERY: Duration = Duration::from_secs(10);
/// When writes stop for this long, a checkpoint: an idle database is all in its file.
pub(super) const CHECKPOINT_IDLE: Duration = Duration::from_secs(1);
/// How often the committer looks whether a checkpoint running beside it is done, when no
/// write comes to wake it.
pub(super) const CHECKPOINT_POLL: Duration = Duration::from_millis(1);
/// Where a recovery proves that writes work again (see `probe`); only files that had a failed
/// commit have it.
pub(super) const PROBE: TableDefinition<&str, &[u8]> = TableDefinition::new("pathdb_probe");
/// What the probe writes: more than the largest batch of one item, so that a write the probe
/// lets through is not refused for lack of space a moment later.
pub(super) const PROBE_BYTES: usize = 1 << 20;
/// Version of the record layout and key layout in this file.
pub(super) const FORMAT_VERSION: u64 = 1;
/// How many queued batches one commit takes at most.
pub(super) const MAX_GROUP: usize = 512;
/// While writes fail, how often the committer tries to recover without a write asking it to.
pub(super) const RECOVERY_INTERVAL: Duration = Duration::from_secs(1);
/// While writes fail, the least time between two recoveries a write sets off: under load on a
/// full disk, writes fail fast instead of each reopening the file.
pub(super) const RECOVERY_GAP: Duration = Duration::from_millis(100);
/// How long a recovery waits for read transactions of the broken handle to end (they hold the
/// file's lock, so the file cannot be reopened before).
pub(super) const REOPEN_WAIT: Duration = Duration::from_secs(2);

/// How many bytes of commits the journal of a database file at `path` takes before a
/// checkpoint: [`JOURNAL_CAPACITY`] where the file's disk has [`ROOMY_DISK`] free,
/// [`JOURNAL_CAPACITY_SMALL`] where it has less or cannot say.
pub(super) fn journal_capacity(path: &Path) -> u64 {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    capacity_for(free_space(dir))
}

/// The journal's capacity on a disk with `free` bytes free (`None`: unknown).
pub(super) fn capacity_for(free: Option<u64>) -> u64 {
    match free {
        Some(free) if free >= ROOMY_DISK => JOURNAL_CAPACITY,
        _ => JOURNAL_CAPACITY_SMALL,
    }
}

/// Bytes free for an unprivileged writer on the file system of `dir`.
#[cfg(unix)]
fn free_space(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let dir = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `dir` is a NUL-terminated string and `stat` room for the one struct statvfs fills.
    if unsafe { libc::statvfs(dir.as_ptr(), stat.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it filled `stat`.
    let stat = unsafe { stat.assume_init() };
    #[allow(clippy::unnecessary_cast)] // the fields' widths differ between platforms
    Some((stat.f_bavail as u64).saturating_mul(stat.f_frsize as u64))
}

#[cfg(not(unix))]
fn free_space(_dir: &Path) -> Option<u64> {
    None
}

/// Opens (and, after a crash or a failed commit, repairs) a read-write file, with `margin`
/// bytes kept past its end for checkpoints ([`super::reserved`]).
pub(super) fn open_writable(
    path: &Path,
    cache_size: Option<usize>,
    margin: u64,
) -> Result<(redb::Database, Arc<Margin>), StorageError> {
    let mut builder = redb::Database::builder();
    if let Some(bytes) = cache_size {
        builder.set_cache_size(bytes);
    }
    let file = super::reserved::Reserved::open(path, margin).map_err(|e| {
        open_error(
            path,
            redb::DatabaseError::Storage(redb::StorageError::Io(e)),
        )
    })?;
    let margin = file.margin();
    let db = builder
        .create_with_backend(file)
        .map_err(|e| open_error(path, e))?;
    Ok((db, margin))
}

/// The error for a file redb cannot open, marked [`StorageErrorKind::InUse`] when another
/// handle holds its lock and [`StorageErrorKind::PermissionDenied`] when the operating system
/// refuses access, so that callers can say what to do about it.
pub(super) fn open_error(path: &Path, e: redb::DatabaseError) -> StorageError {
    let kind = match &e {
        redb::DatabaseError::DatabaseAlreadyOpen => StorageErrorKind::InUse,
        redb::DatabaseError::Storage(redb::StorageError::Io(io)) => {
            return StorageError::io(format!("cannot open database file {}", path.display()), io);
        }
        _ => StorageErrorKind::Other,
    };
    StorageError::new(format!("cannot open database file {}", path.display()), e).with_kind(kind)
}

/// Checks the format version of a file opened read-only, without writing it.
pub(super) fn check_format_read_only(
    db: &redb::ReadOnlyDatabase,
    path: &Path,
) -> Result<(), StorageError> {
    let txn = db
        .begin_read()
        .map_err(|e| storage("begin read")(e.into()))?;
    let not_pathdb = || {
        StorageError::msg(format!(
            "{} is a redb file but not a PathDB database (no pathdb_meta table)",
            path.display()
        ))
    };
    let meta = match txn.open_table(META) {
        Ok(meta) => meta,
        Err(redb::TableError::TableDoesNotExist(_)) => return Err(not_pathdb()),
        Err(e) => return Err(storage("open meta table")(e.into())),
    };
    let found = meta
        .get("format")
        .map_err(|e| storage("read format")(e.into()))?
        .map(|g| g.value());
    match found {
        Some(FORMAT_VERSION) => Ok(()),
        None => Err(not_pathdb()),
        Some(other) => Err(StorageError::msg(format!(
            "database format {other} is not supported by this build (format {FORMAT_VERSION})"
        ))),
    }
}

/// Refuses a file whose journal holds commits it lacks (a crash while it was open read-write):
/// only a read-write open replays them.
pub(super) fn check_journal_read_only(
    db: &redb::ReadOnlyDatabase,
    path: &Path,
) -> Result<(), StorageError> {
    // A file written before the journal existed has no id, and no journal.
    let Some(id) = meta_value(db, JOURNAL_ID)? else {
        return Ok(());
    };
    let applied = meta_value(db, JOURNALED)?.unwrap_or(0);
    let [journal, second] = journal::paths_for(path);
    match Journal::has_pending(path, id, applied) {
        Ok(false) => Ok(()),
        Ok(true) => Err(StorageError::msg(format!(
            "database file {} was not closed cleanly (a crash?): its journal ({} and {}) holds \
             commits that only a read-write open applies; open it read-write once (any write \
             does it), then read again",
            path.display(),
            journal.display(),
            second.display()
        ))),
        Err(e) => Err(StorageError::io(
            format!("cannot read {}", journal.display()),
            &e,
        )),
    }
}

/// Creates the tables, checks the format version and returns the database's journal id.
pub(super) fn init(db: &redb::Database) -> Result<u64, StorageError> {
    let txn = begin_write(db)?;
    let id = {
        txn.open_table(DATA)
            .map_err(|e| storage("open data table")(e.into()))?;
        let mut meta = txn
            .open_table(META)
            .map_err(|e| storage("open meta table")(e.into()))?;
        let found = meta
            .get("format")
            .map_err(|e| storage("read format")(e.into()))?
            .map(|g| g.value());
        match found {
            None => {
                meta.insert("format", FORMAT_VERSION)
                    .map_err(|e| storage("write format")(e.into()))?;
            }
            Some(FORMAT_VERSION) => {}
            Some(other) => {
                return Err(StorageError::msg(format!(
                    "database format {other} is not supported by this build (format {FORMAT_VERSION})"
                )));
            }
        }
        let found = meta
            .get(JOURNAL_ID)
            .map_err(|e| storage("read journal id")(e.into()))?
            .map(|g| g.value());
        match found {
            Some(id) => id,
            None => {
                let mut bytes = [0u8; 8];
                getrandom::fill(&mut bytes)
                    .map_err(|e| StorageError::msg(format!("cannot make a journal id: {e}")))?;
                let id = u64::from_le_bytes(bytes);
                meta.insert(JOURNAL_ID, id)
                    .map_err(|e| storage("write journal id")(e.into()))?;
                id
            }
        }
    };
    txn.commit().map_err(|e| storage("commit")(e.into()))?;
    Ok(id)
}

/// Applies the journaled commits that the file's last durable commit lacks (after a crash, or
/// a failed commit that made redb drop what it held in memory), at most up to commit `upto`,
/// in one commit, and returns the number of that durable commit and the payloads applied
/// (commits `applied + 1 ..`), which a [`super::tap::CommitTap`] may lack. Not a durable one: the journal keeps the records until the next checkpoint,
/// and on a full disk, where a durable commit may fail, a non-durable one still lets readers
/// see every acknowledged write.
pub(super) fn replay(
    db: &redb::Database,
    journal: &mut Journal,
    upto: Option<u64>,
) -> Result<(u64, Vec<Vec<u8>>), StorageError> {
    let applied = meta_value(db, JOURNALED)?.unwrap_or(0);
    let records = journal
        .pending(applied, upto)
        .map_err(|e| StorageError::io("cannot read the journal", &e))?;
    if records.is_empty() {
        return Ok((applied, records));
    }
    let mut txn = begin_write(db)?;
    {
        let mut table = txn
            .open_table(DATA)
            .map_err(|e| storage("open data table")(e.into()))?;
        for record in &records {
            // `pending` took only records that decode.
            for change in journal::changes(record).unwrap_or_default() {
                match change {
                    Change::Set {
                        partition,
                        sort,
                        value,
                    } => table.insert((partition, sort), value).map(drop),
                    Change::Remove { partition, sort } => table.remove((partition, sort)).map(drop),
                }
                .map_err(|e| storage("replay the journal")(e.into()))?;
            }
        }
    }
    number(&mut txn, journal.last(), redb::Durability::None)?;
    txn.commit().map_err(|e| storage("commit")(e.into()))?;
    tracing::info!(commits = records.len(), "replayed the journal");
    Ok((applied, records))
}

/// Commits `txn` durably, with the number of the last journaled commit, which it holds with
/// every one before: the journal starts over.
pub(super) fn commit_durably(
    mut txn: redb::WriteTransaction,
    journal: &mut Journal,
) -> Result<(), StorageError> {
    journal.sync_tap();
    number(&mut txn, journal.last(), redb::Durability::Immediate)?;
    txn.set_quick_repair(true);
    txn.commit().map_err(|e| storage("commit")(e.into()))?;
    journal.restart();
    Ok(())
}

/// A `META` value as of the last commit.
pub(super) fn meta_value(
    db: &impl ReadableDatabase,
    key: &str,
) -> Result<Option<u64>, StorageError> {
    let txn = db
        .begin_read()
        .map_err(|e| storage("begin read")(e.into()))?;
    let meta = txn
        .open_table(META)
        .map_err(|e| storage("open meta table")(e.into()))?;
    Ok(meta
        .get(key)
        .map_err(|e| storage("read meta")(e.into()))?
        .map(|g| g.value()))
}

/// Records in `txn` that it holds every journaled commit up to `number`, and sets how durable
/// its commit is.
pub(super) fn number(
    txn: &mut redb::WriteTransaction,
    number: u64,
    durability: redb::Durability,
) -> Result<(), StorageError> {
    txn.open_table(META)
        .map_err(|e| storage("open meta table")(e.into()))?
        .insert(JOURNALED, number)
        .map_err(|e| storage("write meta")(e.into()))?;
    txn.set_durability(durability)
        .map_err(|e| StorageError::new("set durability", e))
}

pub(super) fn begin_write(db: &redb::Database) -> Result<redb::WriteTransaction, StorageError> {
    db.begin_write()
        .map_err(|e| storage("begin write")(e.into()))
}

/// A durable commit of nothing but the journal's position: everything journaled is now in the
/// file.
pub(super) fn checkpoint(db: &redb::Database, journal: &mut Journal) -> Result<(), StorageError> {
    let txn = begin_write(db)?;
    commit_durably(txn, journal)
}
