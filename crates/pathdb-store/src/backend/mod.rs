//! The storage contract: ordered binary keys grouped in partitions, snapshot reads, and atomic
//! conditional write batches. Everything else (item metadata, history, conditions on user
//! semantics, page tokens, TTL, limits) lives above it in [`crate::store::Store`], written once:
//! a backend never knows items, paths or JSON. `mod.rs` holds the traits; `memory.rs` the
//! reference backend; `file.rs`, `file_format.rs`, `file_read.rs`, `file_record.rs`,
//! `journal.rs`, `overlay.rs` (the commits redb does not hold yet) and `log_ends.rs` (where the
//! committer's logs end) the embedded one.
//!
//! The shape is what both an embedded B-tree and DynamoDB offer without faking: a key is a
//! partition key plus a sort key (DynamoDB's PK/SK; one redb tuple key), range scans stay inside
//! one partition, and a batch is a list of puts, deletes and checks, each with an optional
//! condition on the stored version, applied all or nothing (redb's write transaction;
//! DynamoDB's TransactWriteItems).

mod pending;
mod tap;
mod journal;
mod reserved;
mod memory;
mod file_record;
mod overlay;
mod log_ends;
mod file_read;
mod file_format;
mod file;
mod file_load;

pub use file::{Durability, FileBackend, FileOptions};
pub use file_load::FileLoader;
pub(crate) use file_record::{decode_record, encode_record};
pub use journal::commit_time;
pub use memory::InMemoryBackend;
pub use pending::{PendingWrite, WriteCompleter};
pub use tap::CommitTap;

use crate::model::error::StorageError;
use std::ops::{Bound, ControlFlow};

/// A stored key: the encoded group and the encoded rest of the path (or a system key).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Key {
    /// The partition key; scans never cross partitions.
    pub partition: Vec<u8>,
    /// The sort key, ordered by unsigned bytes within the partition.
    pub sort: Vec<u8>,
}

/// What a backend stores under a key. Backends keep every field and return it unchanged; `version`
/// is what conditions compare. Expiry is the store's (crate::jobs::sweeper): a backend never
/// removes a record by itself.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Record {
    /// Incremented by the store on every write of the key; conditions compare it.
    pub version: u64,
    /// Microseconds since the Unix epoch (UTC).
    pub created_at: i64,
    /// Microseconds since the Unix epoch (UTC).
    pub modified_at: i64,
    /// Microseconds since the Unix epoch (UTC) after which the record is dead.
    pub expires_at: Option<i64>,
    /// Opaque to the backend (the store keeps JSON text here).
    pub value: Vec<u8>,
}

impl Record {
    /// The record, borrowed.
    pub fn as_view(&self) -> RecordView<'_> {
        RecordView {
            version: self.version,
            created_at: self.created_at,
            modified_at: self.modified_at,
            expires_at: self.expires_at,
            value: &self.value,
        }
    }
}

/// A [`Record`] whose value is borrowed from the backend for the length of a
/// [`Reader::scan_each`] visit, so that a caller that keeps only some entries, or only some of
/// each, copies no more than that.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct RecordView<'a> {
    /// See [`Record::version`].
    pub version: u64,
    /// See [`Record::created_at`].
    pub created_at: i64,
    /// See [`Record::modified_at`].
    pub modified_at: i64,
    /// See [`Record::expires_at`].
    pub expires_at: Option<i64>,
    /// See [`Record::value`].
    pub value: &'a [u8],
}

impl RecordView<'_> {
    /// An owned copy.
    pub fn to_record(&self) -> Record {
        Record {
            version: self.version,
            created_at: self.created_at,
            modified_at: self.modified_at,
            expires_at: self.expires_at,
            value: self.value.to_vec(),
        }
    }
}

/// A condition on a key's stored record, checked atomically with the batch.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Expect {
    /// No record is stored under the key.
    Absent,
    /// A record with exactly this version is stored under the key.
    Version(u64),
}

impl Expect {
    /// That the key still holds `read`, the record a plan read there (`None`: none).
    pub fn as_read(read: Option<&Record>) -> Expect {
        read.map_or(Expect::Absent, |r| Expect::Version(r.version))
    }

    /// Whether the expectation holds for the version stored under a key (`None`: no record).
    pub fn holds(self, current: Option<u64>) -> bool {
        match self {
            Expect::Absent => current.is_none(),
            Expect::Version(v) => current == Some(v),
        }
    }
}

/// One operation of a [`WriteBatch`].
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum WriteOp {
    /// Store `record` under `key`, if `expect` holds.
    Put {
        /// Where.
        key: Key,
        /// What.
        record: Record,
        /// Condition, if any.
        expect: Option<Expect>,
    },
    /// Remove `key` (a no-op if absent), if `expect` holds.
    Delete {
        /// Where.
        key: Key,
        /// Condition, if any.
        expect: Option<Expect>,
    },
    /// Write nothing; fail the batch unless `expect` holds.
    ///
    /// Like every condition of a batch, it holds or not in the state before the batch. It may name
    /// a log entry ([`log_entry`]) as absent: that the log has no entry after the one before it (a
    /// listing check, write/stages/listing.rs). The key may then be the one the batch's own
    /// [`WriteOp::Append`] to that log takes at commit, and the check still holds: the append comes
    /// after it.
    Check {
        /// Where.
        key: Key,
        /// Condition.
        expect: Expect,
    },
    /// Add `record` to the end of an ordered log: store it under `log.sort` followed by a
    /// big-endian `u64` one greater than the greatest number stored under that prefix in
    /// `log.partition` (1 when there is none). Every key under the prefix must be the prefix
    /// plus 8 bytes.
    ///
    /// The number is chosen when the batch commits, not when it is planned, so concurrent
    /// batches appending to one log never fail over it; appends to one log in one batch take
    /// consecutive numbers in batch order. Since an append reads the log's end in the state it
    /// commits to, entries become visible in number order: a reader that sees entry `n` sees
    /// every entry before it that has not been deleted. The store's change feed relies on this.
    Append {
        /// The log: a partition and the sort-key prefix of its entries.
        log: Key,
        /// What to store.
        record: Record,
    },
}

/// The first and last sort keys of the entries of a log (see [`WriteOp::Append`]).
pub fn log_bounds(prefix: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let mut first = prefix.to_vec();
    first.extend_from_slice(&[0; 8]);
    let mut last = prefix.to_vec();
    last.extend_from_slice(&[0xff; 8]);
    (first, last)
}

/// The sort key of entry `n` of the log at `prefix`.
pub fn log_entry(prefix: &[u8], n: u64) -> Vec<u8> {
    let mut sort = prefix.to_vec();
    sort.extend_from_slice(&n.to_be_bytes());
    sort
}

/// The number of a log entry, from its sort key (the last 8 bytes).
pub fn log_number(sort: &[u8]) -> Option<u64> {
    let at = sort.len().checked_sub(8)?;
    Some(u64::from_be_bytes(sort[at..].try_into().ok()?))
}

impl WriteOp {
    /// The key the operation touches (for an append, the log's prefix).
    pub fn key(&self) -> &Key {
        match self {
            WriteOp::Put { key, .. } | WriteOp::Delete { key, .. } | WriteOp::Check { key, .. } => {
                key
            }
            WriteOp::Append { log, .. } => log,
        }
    }

    /// The operation's condition, if any.
    pub fn expect(&self) -> Option<Expect> {
        match self {
            WriteOp::Put { expect, .. } | WriteOp::Delete { expect, .. } => *expect,
            WriteOp::Check { expect, .. } => Some(*expect),
            WriteOp::Append { .. } => None,
        }
    }
}

/// Operations applied all or nothing. No key appears twice (DynamoDB forbids it; the store never
/// builds such a batch); several appends to one log are several keys.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct WriteBatch {
    /// In order.
    pub ops: Vec<WriteOp>,
}

/// A failed [`Backend::write`].
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The condition of `ops[index]` did not hold; nothing was written.
    #[error("condition of batch operation {index} failed")]
    ConditionFailed {
        /// Index into [`WriteBatch::ops`].
        index: usize,
    },
    /// The backend could not write; nothing was acknowledged.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// Scan direction.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Direction {
    /// Ascending byte order.
    #[default]
    Forward,
    /// Descending byte order.
    Reverse,
}

/// A sort-key range inside one partition.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SortRange {
    /// Lower bound.
    pub start: Bound<Vec<u8>>,
    /// Upper bound.
    pub end: Bound<Vec<u8>>,
}

impl SortRange {
    /// Whether `sort` lies inside.
    pub fn contains(&self, sort: &[u8]) -> bool {
        let above = match &self.start {
            Bound::Included(s) => sort >= s.as_slice(),
            Bound::Excluded(s) => sort > s.as_slice(),
            Bound::Unbounded => true,
        };
        let below = match &self.end {
            Bound::Included(e) => sort <= e.as_slice(),
            Bound::Excluded(e) => sort < e.as_slice(),
            Bound::Unbounded => true,
        };
        above && below
    }

    /// Whether no key can lie inside.
    pub fn is_empty(&self) -> bool {
        match (&self.start, &self.end) {
            (Bound::Included(s), Bound::Included(e)) => s > e,
            (Bound::Included(s) | Bound::Excluded(s), Bound::Excluded(e))
            | (Bound::Excluded(s), Bound::Included(e)) => s >= e,
            _ => false,
        }
    }
}

/// A stored backend: implementations must be safe to share between threads.
///
/// Implementors guarantee:
/// - a [`Reader`] sees one consistent state: every write acknowledged before it was created and
///   nothing of a batch acknowledged later, or the backend documents the weaker guarantee;
/// - [`Backend::write`] applies every operation or none, checks each condition against the state
///   the batch applies to, and returns only once the batch is as durable as the backend promises;
/// - keys and records come back byte-for-byte as written.
pub trait Backend: Send + Sync + 'static {
    /// A read view; see the trait's guarantees.
    type Reader<'a>: Reader
    where
        Self: 'a;

    /// Opens a consistent read view.
    ///
    /// # Errors
    /// The backend cannot serve reads.
    fn reader(&self) -> Result<Self::Reader<'_>, StorageError>;

    /// Applies a batch atomically.
    ///
    /// # Errors
    /// [`WriteError::ConditionFailed`] names the first failed condition; nothing was written.
    fn write(&self, batch: WriteBatch) -> Result<(), WriteError>;

    /// [`Backend::write`] for a batch that would be planned again from a new snapshot if a
    /// condition failed. A backend that commits batches in groups may instead, when a
    /// condition fails, call `replan` with a reader of the state the batch met (the batches
    /// before it in the same commit applied) and apply the batch it returns, in the same
    /// commit. `replan` answers `None` to give up, and the write then fails as
    /// [`Backend::write`] would. The default never replans.
    ///
    /// This is what makes one hot item cheap: writers that race for it land in one group
    /// commit, one after the other, instead of one commit (and one fsync) per lost race.
    ///
    /// # Errors
    /// As [`Backend::write`].
    fn write_replanning(&self, batch: WriteBatch, replan: Replan) -> Result<(), WriteError> {
        let _ = replan;
        self.write(batch)
    }

    /// Whether [`Backend::write_queued`] queues batches without blocking, so an async caller
    /// can await a write instead of blocking a thread on it. The default, `false`, goes with the
    /// default `write_queued`.
    fn queues_writes(&self) -> bool {
        false
    }

    /// Queues a batch for [`Backend::write`] and returns at once with its result to come; the
    /// batch is applied whether or not the [`PendingWrite`] is awaited. A backend that cannot
    /// queue without blocking hands the batch back (the default); [`Backend::queues_writes`]
    /// says which.
    ///
    /// # Errors
    /// The batch, handed back when the backend does not queue writes.
    fn write_queued(&self, batch: WriteBatch) -> Result<PendingWrite, WriteBatch> {
        Err(batch)
    }

    /// [`Backend::write_queued`] for a batch planned on `planned_on` alone: each of its
    /// expectations is what `planned_on` read at its key. A backend may then take an
    /// expectation as holding, without reading its key again, where it can tell that no commit
    /// has written the key since that reader's snapshot. The default ignores the reader.
    ///
    /// # Errors
    /// As [`Backend::write_queued`].
    fn write_queued_planned_on(
        &self,
        batch: WriteBatch,
        planned_on: &Self::Reader<'_>,
    ) -> Result<PendingWrite, WriteBatch> {
        let _ = planned_on;
        self.write_queued(batch)
    }

    /// The most operations one [`Backend::write`] takes (DynamoDB's TransactWriteItems: 100).
    /// Bulk writers (import) size their batches by it.
    fn max_batch_ops(&self) -> usize {
        usize::MAX
    }

    /// Whether a [`Reader::get`] (and opening the reader for it) finishes in microseconds
    /// without waiting on a network, a lock held across I/O or a runtime of its own: an
    /// in-process B-tree over cached pages. A server may then run point reads on its async
    /// workers instead of handing each to a blocking thread pool, a hand-off that costs more
    /// than the read. The default, `false`, is right for a backend that blocks on a remote
    /// service (DynamoDB), whose reads must stay off async workers.
    fn fast_point_reads(&self) -> bool {
        false
    }

    /// Whether this handle refuses every write (a file opened read-only): the store then
    /// writes nothing at open either. The default, `false`, is right for any backend whose
    /// writes can succeed.
    fn read_only(&self) -> bool {
        false
    }

    /// Whether the backend can serve requests now, for a readiness probe. The default opens a
    /// read view; a remote backend also checks that its storage is reachable and usable.
    ///
    /// # Errors
    /// Why it cannot serve.
    fn ready(&self) -> Result<(), StorageError> {
        self.reader().map(|_| ())
    }

    /// A read view for a backup, and where it stands: the number of the last commit it holds
    /// where the backend numbers its commits (the file backend), and whether it is one
    /// snapshot. The default is [`Backend::reader`], a snapshot without a number.
    ///
    /// # Errors
    /// The backend cannot serve reads.
    fn backup_reader(&self) -> Result<(Self::Reader<'_>, BackupPoint), StorageError> {
        Ok((
            self.reader()?,
            BackupPoint {
                commit: None,
                snapshot: true,
                database: None,
            },
        ))
    }

    /// Whether writers other than this process can change the data (a shared DynamoDB table).
    /// A change feed waiting for new changes is woken by this process's commits; where others
    /// write too, it also reads again every so often (docs/changes.md).
    fn shared(&self) -> bool {
        false
    }
}

/// Where a [`Backend::backup_reader`] stands.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct BackupPoint {
    /// The number of the last commit the view holds, where the backend numbers its commits.
    pub commit: Option<u64>,
    /// Whether the view is one consistent state (`false`: each record is read as of its own
    /// moment, as a DynamoDB `Scan` reads).
    pub snapshot: bool,
    /// The database's id, where it has one (the file backend's, which its journal carries).
    pub database: Option<u64>,
}

/// Plans a batch again from the state a failed batch met; see [`Backend::write_replanning`].
pub type Replan = Box<dyn FnMut(&dyn Reader) -> Option<WriteBatch> + Send>;

/// [`Reader::scan`] for a reader whose [`Reader::scan_each`] is its own: the entries it lends,
/// copied out.
pub(crate) fn scan_by_each(
    reader: &(impl Reader + ?Sized),
    partition: &[u8],
    range: &SortRange,
    direction: Direction,
    limit: usize,
) -> Result<Vec<(Vec<u8>, Record)>, StorageError> {
    let mut out = Vec::with_capacity(limit.min(1024));
    reader.scan_each(partition, range, direction, limit, &mut |sort, record| {
        out.push((sort.to_vec(), record.to_record()));
        ControlFlow::Continue(())
    })?;
    Ok(out)
}

/// Reads from one consistent view of a backend.
pub trait Reader {
    /// The record under `key`.
    ///
    /// # Errors
    /// The backend failed.
    fn get(&self, key: &Key) -> Result<Option<Record>, StorageError>;

    /// The records under `keys`, in order, read as of one moment even where readers are not
    /// snapshots (DynamoDB's TransactGetItems). The default reads them one by one, which is
    /// right for a snapshot reader.
    ///
    /// # Errors
    /// The backend failed.
    fn get_many(&self, keys: &[Key]) -> Result<Vec<Option<Record>>, StorageError> {
        keys.iter().map(|k| self.get(k)).collect()
    }

    /// The records under `keys`, in order, each as fresh as a [`Reader::get`] of it, but not
    /// necessarily read at one moment (unlike [`Reader::get_many`]): what a write plans from,
    /// whose conditions check every record again at commit. A remote backend reads them in one
    /// request (DynamoDB's `BatchGetItem`); the default reads them one by one.
    ///
    /// # Errors
    /// The backend failed.
    fn get_batch(&self, keys: &[Key]) -> Result<Vec<Option<Record>>, StorageError> {
        keys.iter().map(|k| self.get(k)).collect()
    }

    /// Up to `limit` entries of `partition` whose sort key lies in `range`, in `direction`.
    ///
    /// # Errors
    /// The backend failed.
    fn scan(
        &self,
        partition: &[u8],
        range: &SortRange,
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Record)>, StorageError>;

    /// [`Reader::scan`] without the copies: lends each entry's sort key and record to `visit`,
    /// in order, until `limit` entries were visited or `visit` answers `Break`. Listing keeps
    /// every entry it reads but builds its own owned item from it, so copying the entry out
    /// first (as `scan` must) is pure overhead there.
    ///
    /// The default visits what [`Reader::scan`] returns; a backend that can lend its own
    /// buffers (redb's pages) overrides it, and then `scan` is best written with it.
    ///
    /// # Errors
    /// The backend failed.
    fn scan_each(
        &self,
        partition: &[u8],
        range: &SortRange,
        direction: Direction,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], RecordView<'_>) -> ControlFlow<()>,
    ) -> Result<(), StorageError> {
        for (sort, record) in self.scan(partition, range, direction, limit)? {
            if visit(&sort, record.as_view()).is_break() {
                break;
            }
        }
        Ok(())
    }

    /// Up to `limit` entries of the whole store after `after` (exclusive), in (partition, sort)
    /// order: the resumable full scan behind export.
    ///
    /// # Errors
    /// The backend failed.
    fn scan_all(
        &self,
        after: Option<&Key>,
        limit: usize,
    ) -> Result<Vec<(Key, Record)>, StorageError>;

    /// Up to `limit` distinct partition keys that hold at least one record, strictly after
    /// `after`, in ascending byte order: what the store lists as groups. Implementors return
    /// every such partition once, including the system partition and partitions whose records
    /// are all tombstones or revisions (the store decides what to show), and no partition that
    /// holds no record.
    ///
    /// # Errors
    /// The backend failed.
    fn partitions(&self, after: Option<&[u8]>, limit: usize) -> Result<Vec<Vec<u8>>, StorageError>;

    /// Rows [`Reader::scan_all`] has passed over so far because they are not records this
    /// store wrote (another tool's rows in a shared DynamoDB table). A backend that holds only
    /// its own records has none.
    fn skipped(&self) -> u64 {
        0
    }
}
