//! The embedded backend: one redb file, with group commit.
//!
//! redb allows one write transaction at a time and a durable commit costs about two fsyncs, so
//! concurrent writers hand their batches to one committer thread, which applies every batch
//! waiting in the queue inside one write transaction and acknowledges them all after its single
//! commit. Each batch's conditions are checked against the state that includes the batches
//! before it in the same transaction, and a batch whose condition fails writes nothing, so
//! grouping changes throughput, never outcomes.
//!
//! A small commit is made durable by the commit journal ([`super::journal`]): one append and one
//! `fdatasync` of the rows it changed, after which redb commits it without a flush. Large commits
//! (imports), and a checkpoint when the journal has grown (or after a while, or when writes stop
//! for a moment), are durable redb commits, which leave the journal empty. Opening the file
//! replays the journal's commits that redb's last durable commit lacks; a clean close
//! checkpoints and removes the journal, so a closed database is one file.
//!
//! Quick-repair is on for durable commits: each also saves the allocator state, so that opening
//! the file after a crash does not walk the whole file (about 1 s per 0.5 GB without it). A
//! database server that restarts after a crash should come back in milliseconds, not minutes.
//!
//! After a failed commit (a full disk, an I/O error) redb refuses every later transaction on that
//! handle. The committer then reopens the file, which runs redb's repair, and proves with a small
//! commit that writes work again; until one does, writes fail fast with the cause and
//! [`Backend::ready`] reports it. It tries again with each write and every second, so freeing
//! space is enough: no restart. Nothing a failed commit held was acknowledged, and redb's
//! copy-on-write keeps the last successful commit intact.
//!
//! [`FileBackend::open_read_only`] opens a file without ever writing to it (redb's
//! `ReadOnlyDatabase`): no committer thread, no format-version write, no repair, so reading a
//! file leaves its bytes (and a backup copied from it) exactly as they were, and works on a
//! read-only file or mount. Several read-only handles may share a file; none may share it with
//! a writer.

use super::file_format::{
    CHECKPOINT_EVERY, CHECKPOINT_IDLE, DATA, JOURNAL_CAPACITY, JOURNAL_ID, JOURNAL_RECORD_MAX,
    JOURNALED, MAX_GROUP, META, PROBE, PROBE_BYTES, RECOVERY_GAP, RECOVERY_INTERVAL, REOPEN_WAIT,
    begin_write, check_format_read_only, check_journal_read_only, checkpoint, commit_durably, init,
    number, open_error, open_writable, replay,
};
use super::file_read::{FileReader, TableReader, decode_version, encode_record, storage};
use super::journal::{self, Change, Journal};
use super::reserved::Margin;
use super::tap::CommitTap;
use super::{
    Backend, BackupPoint, PendingWrite, Replan, WriteBatch, WriteCompleter, WriteError, WriteOp,
};
use crate::model::error::StorageError;
use crate::model::error::StorageErrorKind;
use redb::{ReadableDatabase, ReadableTable};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, PoisonError, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How durable an acknowledged write is.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Durability {
    /// fsync before acknowledging: an acknowledged write survives a crash or power loss.
    #[default]
    Immediate,
    /// No fsync: commits are written to the journal but not flushed. A crash of the process
    /// loses nothing and never tears a batch, but a power loss may lose the most recent
    /// acknowledged writes (they are durable after the next checkpoint).
    Relaxed,
}

/// Options for [`FileBackend::open`].
#[derive(Clone, Debug, Default)]
pub struct FileOptions {
    /// Durability of acknowledged writes.
    pub durability: Durability,
    /// redb's page cache, in bytes; `None` keeps redb's default.
    pub cache_size: Option<usize>,
    /// Receives every commit (the continuous archive); see [`CommitTap`].
    pub tap: Option<Arc<dyn CommitTap>>,
}

struct Job {
    batch: WriteBatch,
    /// Plans the batch again if it loses a race to a batch before it in the group.
    replan: Option<Replan>,
    reply: Reply,
}

/// Where a batch's result goes: a thread blocked in [`Backend::write`], or an async caller of
/// [`Backend::write_queued`].
enum Reply {
    Blocking(mpsc::SyncSender<Result<(), WriteError>>),
    Queued(WriteCompleter),
}

/// A database in one redb file.
pub struct FileBackend {
    db: Engine,
    /// `None` when read-only: writes are refused without a thread to hand them to.
    queue: Mutex<Option<mpsc::Sender<Job>>>,
    committer: Mutex<Option<JoinHandle<()>>>,
}

/// The redb handle: read-write (behind the committer) or read-only.
enum Engine {
    ReadWrite(Arc<Writable>),
    ReadOnly(redb::ReadOnlyDatabase),
}

/// A read-write file, whose handle the committer replaces after a failed commit.
struct Writable {
    path: PathBuf,
    cache_size: Option<usize>,
    /// `None` while the file is being reopened.
    db: RwLock<Option<Arc<redb::Database>>>,
    /// The space the file keeps past its end for checkpoints (see [`super::reserved`]).
    margin: Mutex<Arc<Margin>>,
    health: Mutex<Health>,
    /// Signalled when a recovery ends, for readers waiting on it.
    recovered: Condvar,
    /// The snapshot readers share until the next commit (see [`Writable::snapshot`]).
    latest: Mutex<Latest>,
}

/// The shared snapshot: opening a read transaction and its table costs more than the B-tree
/// lookup of a get (about 4,000 instructions and 14 allocations, issue 23), and every reader
/// between two commits would see the same state anyway.
#[derive(Default)]
struct Latest {
    /// Counts the commits and reopens that made the shared snapshot stale.
    generation: u64,
    snapshot: Option<FileReader>,
}

#[derive(Default)]
struct Health {
    /// Why writes fail, while they do; cleared by the next commit that succeeds.
    fault: Option<StorageError>,
    /// Counts finished recoveries, so that a waiting reader knows one happened.
    recoveries: u64,
}

impl FileBackend {
    /// Opens or creates the database file at `path`.
    ///
    /// # Errors
    /// The file cannot be opened (in use by another process, not a PathDB file, I/O).
    pub fn open(path: impl AsRef<Path>, options: FileOptions) -> Result<FileBackend, StorageError> {
        let path = path.as_ref();
        let (db, margin) = open_writable(path, options.cache_size)?;
        let id = init(&db)?;
        let mut journal = Journal::open(path, id).map_err(|e| {
            StorageError::io(
                format!("cannot open {}", journal::path_for(path).display()),
                &e,
            )
        })?;
        let (applied, replayed) = replay(&db, &mut journal, None)?;
        if let Some(tap) = options.tap.clone() {
            journal.attach(tap, applied, &replayed);
        }
        let writable = Arc::new(Writable {
            path: path.to_owned(),
            cache_size: options.cache_size,
            db: RwLock::new(Some(Arc::new(db))),
            margin: Mutex::new(margin),
            health: Mutex::new(Health::default()),
            recovered: Condvar::new(),
            latest: Mutex::new(Latest::default()),
        });
        let (queue, jobs) = mpsc::channel::<Job>();
        let committer_file = Arc::clone(&writable);
        let committer = std::thread::Builder::new()
            .name("pathdb-commit".into())
            .spawn(move || committer_loop(&committer_file, journal, &jobs, options.durability))
            .map_err(|e| StorageError::new("cannot start the commit thread", e))?;
        Ok(FileBackend {
            db: Engine::ReadWrite(writable),
            queue: Mutex::new(Some(queue)),
            committer: Mutex::new(Some(committer)),
        })
    }

    /// Opens the existing database file at `path` for reading only. Nothing is ever written to
    /// the file: writes fail with a [`StorageErrorKind::ReadOnly`] error (the store's
    /// [`Error::ReadOnly`](crate::model::error::Error::ReadOnly)), there is no committer thread, and the
    /// format version is checked, not recorded. `options.durability` does not apply.
    ///
    /// # Errors
    /// The file does not exist, is open in a writer (kind [`StorageErrorKind::InUse`]), is not
    /// a PathDB file, or needs the repair after a crash that only a writable open performs.
    pub fn open_read_only(
        path: impl AsRef<Path>,
        options: FileOptions,
    ) -> Result<FileBackend, StorageError> {
        let path = path.as_ref();
        let mut builder = redb::Database::builder();
        if let Some(bytes) = options.cache_size {
            builder.set_cache_size(bytes);
        }
        let db = builder.open_read_only(path).map_err(|e| match e {
            // After a crash redb must repair the file, which writes it; a read-only open refuses
            // (even with quick-repair on: the header still says "not closed cleanly").
            redb::DatabaseError::RepairAborted => StorageError::msg(format!(
                "database file {} was not closed cleanly (a crash?) and needs the recovery that \
                 only a read-write open performs; open it read-write once (any write does it), \
                 then read again",
                path.display()
            )),
            e => open_error(path, e),
        })?;
        check_format_read_only(&db, path)?;
        check_journal_read_only(&db, path)?;
        Ok(FileBackend {
            db: Engine::ReadOnly(db),
            queue: Mutex::new(None),
            committer: Mutex::new(None),
        })
    }

    /// Whether this handle was opened with [`FileBackend::open_read_only`].
    pub fn is_read_only(&self) -> bool {
        matches!(self.db, Engine::ReadOnly(_))
    }
}

impl Drop for FileBackend {
    fn drop(&mut self) {
        // Closing the queue ends the committer after it finishes what is queued.
        if let Ok(mut q) = self.queue.lock() {
            q.take();
        }
        if let Some(handle) = self.committer.lock().ok().and_then(|mut h| h.take()) {
            let _ = handle.join();
        }
    }
}

fn committer_loop(
    file: &Writable,
    mut journal: Journal,
    jobs: &mpsc::Receiver<Job>,
    durability: Durability,
) {
    let mut last_recovery = Instant::now();
    loop {
        let wait = if file.fault().is_some() {
            Some(RECOVERY_INTERVAL)
        } else if journal.len() > 0 {
            Some(CHECKPOINT_IDLE)
        } else {
            None
        };
        let first = match wait {
            None => match jobs.recv() {
                Ok(job) => Some(job),
                Err(_) => break,
            },
            Some(wait) => match jobs.recv_timeout(wait) {
                Ok(job) => Some(job),
                Err(mpsc::RecvTimeoutError::Timeout) => None,
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            },
        };
        if file.fault().is_some() && (first.is_none() || last_recovery.elapsed() >= RECOVERY_GAP) {
            file.recover(&mut journal);
            last_recovery = Instant::now();
        }
        let Some(first) = first else {
            // Writes paused: put what the journal holds into the file.
            if file.fault().is_none()
                && journal.len() > 0
                && let Some(db) = file.current()
                && let Err(e) = checkpoint(&db, &mut journal)
            {
                file.set_fault(e);
                drop(db);
                file.recover(&mut journal);
                last_recovery = Instant::now();
            }
            continue;
        };
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match jobs.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        let started = Instant::now();
        let results = match (file.fault(), file.current()) {
            // Refused before redb sees it: applying it could eat into the room kept, or grow the
            // file past it and fail as a fault, with a reopen. `commit_group` checks again after
            // applying, for the group that used the room up.
            (None, Some(_)) if let Err(e) = file.room() => group
                .iter()
                .map(|_| Err(WriteError::Storage(e.clone())))
                .collect(),
            (None, Some(db)) => {
                let mut refused = false;
                let results = commit_group(
                    file,
                    &db,
                    &mut journal,
                    &mut group,
                    durability,
                    &mut refused,
                );
                // Before any writer is answered: a reader opened after an acknowledgement
                // must see the write.
                file.invalidate_snapshot();
                if !refused
                    && let Some(Err(WriteError::Storage(e))) = results
                        .iter()
                        .find(|r| matches!(r, Err(WriteError::Storage(_))))
                {
                    // redb refuses every later transaction on this handle: reopen it.
                    file.set_fault(e.clone());
                    drop(db);
                    file.recover(&mut journal);
                    last_recovery = Instant::now();
                }
                results
            }
            (fault, _) => {
                let e =
                    fault.unwrap_or_else(|| StorageError::msg("the database is being reopened"));
                group
                    .iter()
                    .map(|_| Err(WriteError::Storage(e.clone())))
                    .collect()
            }
        };
        // Through the `metrics` facade: free unless the application installs a recorder.
        metrics::histogram!("pathdb_commit_seconds").record(started.elapsed());
        metrics::histogram!("pathdb_commit_batches").record(group.len() as f64);
        for (job, result) in group.into_iter().zip(results) {
            match job.reply {
                // A writer that gave up waiting is not an error here.
                Reply::Blocking(reply) => {
                    let _ = reply.send(result);
                }
                Reply::Queued(completer) => completer.complete(result),
            }
        }
    }
    // Leave the file closed cleanly if space came back, so that read-only opens accept it.
    if file.fault().is_some() {
        file.recover(&mut journal);
    }
    close(file, journal);
}

/// Checkpoints and removes the journal, so that the closed database is its one file. If the
/// checkpoint fails the journal stays, and the next read-write open replays it.
fn close(file: &Writable, mut journal: Journal) {
    let Some(db) = file.current() else { return };
    if journal.len() > 0
        && let Err(e) = checkpoint(&db, &mut journal)
    {
        tracing::warn!(error = %e, "closing: the journal stays for the next open to replay");
        return;
    }
    if let Err(e) = journal.remove() {
        tracing::warn!(error = %e, "closing: cannot remove the empty journal");
    }
}

impl Writable {
    /// The current handle; `None` while it is being reopened.
    fn current(&self) -> Option<Arc<redb::Database>> {
        self.db.read().ok().and_then(|db| db.clone())
    }

    /// Whether the file can take a write and still keep the room its checkpoints need: on a
    /// disk too full for that, writes are refused before anything is written (checkpoints and
    /// the clean close go on, in the room kept).
    fn room(&self) -> Result<(), StorageError> {
        let margin = Arc::clone(&self.margin.lock().unwrap_or_else(PoisonError::into_inner));
        margin
            .check()
            .map_err(|e| StorageError::io("keep room for the checkpoints", &e))
    }

    /// Why writes fail, while they do.
    fn fault(&self) -> Option<StorageError> {
        self.health.lock().ok().and_then(|h| h.fault.clone())
    }

    fn set_fault(&self, e: StorageError) {
        metrics::counter!("pathdb_storage_faults", "kind" => e.kind().as_str()).increment(1);
        if let Ok(mut health) = self.health.lock() {
            tracing::warn!(error = %e, "a commit failed; writes fail until the file is reopened");
            health.fault = Some(e);
        }
    }

    /// Reopens the file (redb repairs it, the journal is replayed) and proves with a commit
    /// that writes work. On success the fault is cleared; on failure it is the new cause, and
    /// the file is reopened once more, since the failed probe broke the handle that readers use.
    fn recover(&self, journal: &mut Journal) {
        let outcome = match self.reopen(journal) {
            Ok(db) => probe(&db, journal).inspect_err(|_| {
                drop(db);
                let _ = self.reopen(journal);
            }),
            Err(e) => Err(e),
        };
        if let Ok(mut health) = self.health.lock() {
            match outcome {
                Ok(()) => {
                    if let Some(fault) = health.fault.take() {
                        tracing::info!(was = %fault, "writes work again");
                    }
                }
                Err(e) => health.fault = Some(e),
            }
            health.recoveries += 1;
        }
        self.recovered.notify_all();
    }

    /// Replaces the handle with a fresh open of the file. redb goes back to its last durable
    /// commit (closing a healthy handle makes its pending commits durable first; a broken one
    /// loses them), and the journal's commits after it, up to the last this process counted,
    /// are replayed before readers get the handle: they never see acknowledged writes missing,
    /// nor a write whose writers were told it failed.
    fn reopen(&self, journal: &mut Journal) -> Result<Arc<redb::Database>, StorageError> {
        // Readers now wait for the new handle (see `begin_read`); the old one closes when its
        // last read transaction ends, and only then lets go of the file's lock. The shared
        // snapshot is one of those.
        if let Ok(mut db) = self.db.write() {
            db.take();
        }
        self.invalidate_snapshot();
        let deadline = Instant::now() + REOPEN_WAIT;
        let db = loop {
            match open_writable(&self.path, self.cache_size) {
                Ok((db, margin)) => {
                    *self.margin.lock().unwrap_or_else(PoisonError::into_inner) = margin;
                    break Arc::new(db);
                }
                Err(e) if e.kind() == StorageErrorKind::InUse && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(e),
            }
        };
        let counted = journal.last();
        replay(&db, journal, Some(counted))?;
        if let Ok(mut slot) = self.db.write() {
            *slot = Some(Arc::clone(&db));
        }
        Ok(db)
    }

    /// The snapshot of the last commit, shared by the readers until the next one: a reader sees
    /// every write acknowledged before it was made, since the committer drops the shared
    /// snapshot before it answers the writers of a commit ([`Writable::invalidate_snapshot`]).
    /// A snapshot opened while a commit landed is not shared (its generation is old): it may
    /// predate the commit.
    fn snapshot(&self) -> Result<FileReader, StorageError> {
        let generation = {
            let latest = self.latest.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(shared) = &latest.snapshot {
                return Ok(shared.clone());
            }
            latest.generation
        };
        let fresh = self.open_snapshot()?;
        let mut latest = self.latest.lock().unwrap_or_else(PoisonError::into_inner);
        if latest.generation == generation && latest.snapshot.is_none() {
            latest.snapshot = Some(fresh.clone());
        }
        Ok(fresh)
    }

    /// The shared snapshot is stale: a commit landed, or the handle is being replaced.
    fn invalidate_snapshot(&self) {
        let stale = {
            let mut latest = self.latest.lock().unwrap_or_else(PoisonError::into_inner);
            latest.generation += 1;
            latest.snapshot.take()
        };
        // Dropped outside the lock: ending a read transaction takes redb's own locks.
        drop(stale);
    }

    /// A new snapshot, waiting (a little) for a recovery when the handle is broken or being
    /// replaced, so that reads go on across a write failure.
    fn open_snapshot(&self) -> Result<FileReader, StorageError> {
        let mut waited = false;
        loop {
            let seen = self.health.lock().map(|h| h.recoveries).unwrap_or(0);
            let result = match self.current() {
                Some(db) => snapshot(db.as_ref()),
                None => Err(self
                    .fault()
                    .unwrap_or_else(|| StorageError::msg("the database is being reopened"))),
            };
            match result {
                Ok(txn) => return Ok(txn),
                Err(e) if waited || self.fault().is_none() && self.current().is_some() => {
                    return Err(e);
                }
                Err(_) => {
                    waited = true;
                    let Ok(health) = self.health.lock() else {
                        continue;
                    };
                    let _ = self
                        .recovered
                        .wait_timeout_while(health, RECOVERY_INTERVAL, |h| h.recoveries == seen);
                }
            }
        }
    }
}

/// A read transaction on the data table.
fn snapshot(db: &impl ReadableDatabase) -> Result<FileReader, StorageError> {
    let txn = db
        .begin_read()
        .map_err(|e| storage("begin read")(e.into()))?;
    let table = txn
        .open_table(DATA)
        .map_err(|e| storage("open data table")(e.into()))?;
    Ok(FileReader {
        table: Arc::new(table),
    })
}

/// A durable commit of [`PROBE_BYTES`]: whether writes work on this handle. A small one is not
/// enough: on a full disk the file's own free pages take a small write, and readiness would
/// flap between a probe that fits and the writes that do not.
fn probe(db: &redb::Database, journal: &mut Journal) -> Result<(), StorageError> {
    let txn = begin_write(db)?;
    {
        let mut probe = txn
            .open_table(PROBE)
            .map_err(|e| storage("open probe table")(e.into()))?;
        // Copy-on-write: rewriting the value takes new pages each time.
        probe
            .insert("probe", vec![0u8; PROBE_BYTES].as_slice())
            .map_err(|e| storage("write")(e.into()))?;
    }
    commit_durably(txn, journal)
}

/// Applies every batch whose conditions hold in one transaction, and commits it through the
/// journal or, for a large one or a checkpoint, durably; returns one result per batch.
fn commit_group(
    file: &Writable,
    db: &redb::Database,
    journal: &mut Journal,
    group: &mut [Job],
    durability: Durability,
    refused: &mut bool,
) -> Vec<Result<(), WriteError>> {
    let size = group.len();
    let fail_all = |e: StorageError| -> Vec<Result<(), WriteError>> {
        (0..size)
            .map(|_| Err(WriteError::Storage(e.clone())))
            .collect()
    };
    let mut txn = match begin_write(db) {
        Ok(t) => t,
        Err(e) => return fail_all(e),
    };
    journal.begin();
    let mut results = Vec::with_capacity(group.len());
    {
        let mut table = match txn.open_table(DATA) {
            Ok(t) => t,
            Err(e) => return fail_all(storage("open data table")(e.into())),
        };
        for job in group.iter_mut() {
            let mut result = apply(&mut table, &job.batch, journal);
            if let (Ok(Err(WriteError::ConditionFailed { .. })), Some(replan)) =
                (&result, job.replan.as_mut())
            {
                // It lost a race to a batch before it here: plan it again on top of that one,
                // in this commit, instead of in a commit of its own.
                if let Some(batch) = replan(&TableReader(&table)) {
                    metrics::counter!("pathdb_commit_replans").increment(1);
                    result = apply(&mut table, &batch, journal);
                }
            }
            match result {
                Ok(r) => results.push(r),
                // A half-applied batch cannot be undone inside the transaction: abort all.
                Err(e) => return fail_all(e),
            }
        }
    }
    if journal.record_is_empty() {
        // Every batch's condition failed: nothing to commit.
        return results;
    }
    if let Err(e) = file.room() {
        // The group grew the file into the room kept for checkpoints: refuse it before
        // anything is committed. The handle is sound; nothing to recover.
        *refused = true;
        return fail_all(e);
    }
    let record = journal.record_len();
    let journaled = journal.len() + record as u64 <= JOURNAL_CAPACITY
        && journal.age() < CHECKPOINT_EVERY
        && (durability == Durability::Relaxed || record <= JOURNAL_RECORD_MAX);
    if !journaled {
        journal.skip();
        let committed = commit_durably(txn, journal);
        journal.settle(committed.is_ok());
        return match committed {
            Ok(()) => results,
            Err(e) => fail_all(e),
        };
    }
    if let Err(e) = number(&mut txn, journal.next(), redb::Durability::None) {
        return fail_all(e);
    }
    // The journal first: readers see the commit only once it is durable.
    if let Err(e) = journal.append(durability == Durability::Immediate) {
        drop(txn);
        // The commits before this one are in redb's memory and the journal; put them in the
        // file, so that the reopen this failure sets off has nothing to replay.
        let _ = checkpoint(db, journal);
        return fail_all(StorageError::io("write the journal", &e));
    }
    match txn.commit() {
        Ok(()) => {
            journal.tap_commit();
            results
        }
        Err(e) => {
            journal.retract();
            fail_all(storage("commit")(e.into()))
        }
    }
}

/// Checks a batch's conditions, then applies it. `Ok(Err(..))`: a condition failed, nothing written.
/// Each change goes to the journal's record too.
fn apply(
    table: &mut redb::Table<(&[u8], &[u8]), &[u8]>,
    batch: &WriteBatch,
    journal: &mut Journal,
) -> Result<Result<(), WriteError>, StorageError> {
    for (index, op) in batch.ops.iter().enumerate() {
        if let Some(expect) = op.expect() {
            let key = op.key();
            let current = table
                .get((key.partition.as_slice(), key.sort.as_slice()))
                .map_err(|e| storage("read")(e.into()))?
                .map(|g| decode_version(g.value()))
                .transpose()?;
            let holds = expect.holds(current);
            if !holds {
                return Ok(Err(WriteError::ConditionFailed { index }));
            }
        }
    }
    for op in &batch.ops {
        match op {
            WriteOp::Put { key, record, .. } => {
                let (partition, sort) = (key.partition.as_slice(), key.sort.as_slice());
                let value = encode_record(record);
                table
                    .insert((partition, sort), value.as_slice())
                    .map_err(|e| storage("write")(e.into()))?;
                journal.push(Change::Set {
                    partition,
                    sort,
                    value: &value,
                });
            }
            WriteOp::Delete { key, .. } => {
                let (partition, sort) = (key.partition.as_slice(), key.sort.as_slice());
                table
                    .remove((partition, sort))
                    .map_err(|e| storage("delete")(e.into()))?;
                journal.push(Change::Remove { partition, sort });
            }
            WriteOp::Check { .. } => {}
            WriteOp::Append { log, record } => {
                let (first, last) = super::log_bounds(&log.sort);
                let p = log.partition.as_slice();
                let n = match table
                    .range((p, first.as_slice())..=(p, last.as_slice()))
                    .map_err(|e| storage("read")(e.into()))?
                    .next_back()
                {
                    Some(entry) => {
                        let (key, _) = entry.map_err(|e| storage("read")(e.into()))?;
                        super::log_number(key.value().1).unwrap_or(0)
                    }
                    None => 0,
                };
                let sort = super::log_entry(&log.sort, n + 1);
                let value = encode_record(record);
                table
                    .insert((p, sort.as_slice()), value.as_slice())
                    .map_err(|e| storage("write")(e.into()))?;
                journal.push(Change::Set {
                    partition: p,
                    sort: &sort,
                    value: &value,
                });
            }
        }
    }
    Ok(Ok(()))
}

impl Backend for FileBackend {
    type Reader<'a> = FileReader;

    fn read_only(&self) -> bool {
        self.is_read_only()
    }

    fn reader(&self) -> Result<FileReader, StorageError> {
        match &self.db {
            Engine::ReadWrite(file) => file.snapshot(),
            Engine::ReadOnly(db) => snapshot(db),
        }
    }

    /// A snapshot and, read in the same transaction, the number of its last commit.
    fn backup_reader(&self) -> Result<(FileReader, BackupPoint), StorageError> {
        let read = |db: &dyn Fn() -> Result<redb::ReadTransaction, redb::TransactionError>| {
            let txn = db().map_err(|e| storage("begin read")(e.into()))?;
            let meta = txn
                .open_table(META)
                .map_err(|e| storage("open meta table")(e.into()))?;
            let value = |key: &str| -> Result<Option<u64>, StorageError> {
                Ok(meta
                    .get(key)
                    .map_err(|e| storage("read meta")(e.into()))?
                    .map(|g| g.value()))
            };
            let point = BackupPoint {
                commit: Some(value(JOURNALED)?.unwrap_or(0)),
                snapshot: true,
                database: value(JOURNAL_ID)?,
            };
            let table = txn
                .open_table(DATA)
                .map_err(|e| storage("open data table")(e.into()))?;
            Ok((
                FileReader {
                    table: Arc::new(table),
                },
                point,
            ))
        };
        match &self.db {
            Engine::ReadWrite(file) => {
                let db = file.current().ok_or_else(|| {
                    file.fault()
                        .unwrap_or_else(|| StorageError::msg("the database is being reopened"))
                })?;
                read(&|| db.begin_read())
            }
            Engine::ReadOnly(db) => read(&|| db.begin_read()),
        }
    }

    /// A redb read transaction and one B-tree lookup: microseconds, lock-free against the
    /// committer (MVCC); a page not in redb's cache is one read from the OS page cache or disk.
    fn fast_point_reads(&self) -> bool {
        true
    }

    /// Not ready while writes fail (a full disk, an I/O error): the cause, until a commit
    /// succeeds again.
    fn ready(&self) -> Result<(), StorageError> {
        if let Engine::ReadWrite(file) = &self.db {
            if let Some(fault) = file.fault() {
                return Err(fault.context("writes are failing"));
            }
            file.room().map_err(|e| e.context("writes are refused"))?;
        }
        self.reader().map(|_| ())
    }

    fn write(&self, batch: WriteBatch) -> Result<(), WriteError> {
        self.write_blocking(batch, None)
    }

    fn write_replanning(&self, batch: WriteBatch, replan: Replan) -> Result<(), WriteError> {
        self.write_blocking(batch, Some(replan))
    }

    /// Sending to the committer's queue never blocks (it is unbounded).
    fn queues_writes(&self) -> bool {
        true
    }

    fn write_queued(&self, batch: WriteBatch) -> Result<PendingWrite, WriteBatch> {
        if batch.ops.is_empty() {
            return Ok(PendingWrite::ready(Ok(())));
        }
        let (pending, completer) = PendingWrite::new();
        Ok(match self.enqueue(batch, None, Reply::Queued(completer)) {
            Ok(()) => pending,
            Err(e) => PendingWrite::ready(Err(e.into())),
        })
    }
}

impl FileBackend {
    /// Hands a batch to the committer thread and waits for its commit.
    fn write_blocking(&self, batch: WriteBatch, replan: Option<Replan>) -> Result<(), WriteError> {
        if batch.ops.is_empty() {
            return Ok(());
        }
        let (reply, answer) = mpsc::sync_channel(1);
        self.enqueue(batch, replan, Reply::Blocking(reply))?;
        answer
            .recv()
            .map_err(|_| StorageError::msg("commit thread stopped"))?
    }

    /// Hands a non-empty batch to the committer thread.
    fn enqueue(
        &self,
        batch: WriteBatch,
        replan: Option<Replan>,
        reply: Reply,
    ) -> Result<(), StorageError> {
        if self.is_read_only() {
            return Err(StorageError::msg("the database is open read-only")
                .with_kind(StorageErrorKind::ReadOnly));
        }
        let sent = self
            .queue
            .lock()
            .map_err(|_| StorageError::msg("commit queue poisoned"))?
            .as_ref()
            .map(|q| {
                q.send(Job {
                    batch,
                    replan,
                    reply,
                })
                .is_ok()
            })
            .unwrap_or(false);
        if sent {
            Ok(())
        } else {
            Err(StorageError::msg("database is closed"))
        }
    }
}
