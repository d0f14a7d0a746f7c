//! The embedded backend: one redb file, with group commit.
//!
//! redb allows one write transaction at a time and a durable commit costs about two fsyncs, so
//! concurrent writers hand their batches to one committer thread, which checks and applies every
//! batch waiting in the queue as one commit and acknowledges them all after it. Each batch's
//! conditions are checked against the state that includes the batches before it in the same
//! commit, and a batch whose condition fails writes nothing, so grouping changes throughput,
//! never outcomes.
//!
//! A small commit is made durable by the commit journal ([`super::journal`]): one append and one
//! `fdatasync` of the rows it changed. redb runs behind the journal: the rows go to an overlay
//! that readers merge over their redb snapshot ([`super::overlay`]), and a checkpoint on a
//! thread of its own puts them into redb in one durable commit when a journal file is full (or
//! after a while, or when writes stop for a moment), while the committer goes on into the
//! journal's other file. Large commits (imports) are durable redb commits of their own, after
//! the overlay's rows. Opening the file replays the journal's commits that redb's last durable
//! commit lacks; a clean close puts the overlay into redb and removes the journal, so a closed
//! database is one file.
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
    CHECKPOINT_EVERY, CHECKPOINT_IDLE, CHECKPOINT_POLL, DATA, JOURNAL_CAPACITY, JOURNAL_ID,
    JOURNAL_RECORD_MAX, JOURNALED, MAX_GROUP, META, PROBE, PROBE_BYTES, RECOVERY_GAP,
    RECOVERY_INTERVAL, REOPEN_WAIT, begin_write, check_format_read_only, check_journal_read_only,
    checkpoint, commit_durably, init, journal_capacity, meta_value, number, open_error,
    open_writable, replay,
};
use super::file_read::{DataTable, FileReader, TableReader, storage};
use super::file_record::{decode_version, encode_record};
use super::journal::{self, Change, Journal};
use super::log_ends::LogEnds;
use super::overlay::{Layer, Merged, Overlay, Row, View};
use super::reserved::{Margin, margin_for};
use super::tap::CommitTap;
use super::{
    Backend, BackupPoint, Expect, PendingWrite, Reader, Replan, WriteBatch, WriteCompleter,
    WriteError, WriteOp,
};
use crate::model::error::StorageError;
use crate::model::error::StorageErrorKind;
use redb::{ReadableDatabase, ReadableTable};
use std::cell::OnceCell;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, PoisonError, RwLock, Weak};
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
    /// acknowledged writes (they are durable after the next checkpoint). A commit too large for
    /// the journal (over 1 MiB, an import's batch) is a durable commit of the file either way:
    /// redb, not the journal, is where it is written once.
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
    /// How many bytes of commits the journal takes before a checkpoint puts them into the
    /// file; `None` sizes it to the disk when the file opens: 16 MiB where the file system has
    /// 1 GiB free, 4 MiB otherwise. Smaller: shorter checkpoints, more of them. The journal's
    /// two files and the space kept past the file for checkpoints take four times this.
    pub checkpoint_bytes: Option<u64>,
}

impl FileOptions {
    fn checkpoint_bytes(&self) -> u64 {
        self.checkpoint_bytes.unwrap_or(JOURNAL_CAPACITY)
    }
}

struct Job {
    batch: WriteBatch,
    /// The snapshot of redb the batch was planned on, when every expectation in it is that
    /// snapshot's read ([`Backend::write_queued_planned_on`]). Weak: a queued job must not keep
    /// a snapshot, and with it the redb handle, open (a reopen after a failure waits for every
    /// holder); it only keeps the allocation, so the address is not another snapshot's.
    planned_on: Option<Weak<DataTable>>,
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
    /// The checkpoint thread's queue, once the committer has started it.
    checkpoints: Mutex<Option<mpsc::Sender<Task>>>,
}

/// The shared snapshot: opening a read transaction and its table costs more than the B-tree
/// lookup of a get (about 4,000 instructions and 14 allocations, issue 23), and every reader
/// between two commits would see the same state anyway.
#[derive(Default)]
struct Latest {
    /// Counts the commits and reopens that made the shared snapshot stale.
    generation: u64,
    snapshot: Option<FileReader>,
    /// While a checkpoint runs beside the committer: the commits made meanwhile, and the last
    /// of them that writers were answered for (readers see up to it).
    overlay: Option<(Arc<Overlay>, u64)>,
    /// The committer's snapshot of redb under that overlay, and the last commit it holds: a
    /// reader pairs it with the overlay instead of opening a snapshot of its own, since redb
    /// changes only at checkpoints. `None` while redb may hold commits the overlay lacks.
    base: Option<(Arc<DataTable>, u64)>,
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
        let mut options = options;
        let checkpoint_bytes = *options
            .checkpoint_bytes
            .get_or_insert_with(|| journal_capacity(path));
        let (db, margin) = open_writable(path, options.cache_size, margin_for(checkpoint_bytes))?;
        let id = init(&db)?;
        let mut journal = Journal::open(path, id, options.durability == Durability::Immediate)
            .map_err(|e| {
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
            checkpoints: Mutex::new(None),
        });
        let (queue, jobs) = mpsc::channel::<Job>();
        let committer_file = Arc::clone(&writable);
        let committer = std::thread::Builder::new()
            .name("pathdb-commit".into())
            .spawn(move || committer_loop(&committer_file, journal, &jobs, &options))
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
    journal: Journal,
    jobs: &mpsc::Receiver<Job>,
    options: &FileOptions,
) {
    let mut state = State {
        journal,
        running: None,
        behind: None,
        last_recovery: Instant::now(),
    };
    loop {
        let wait = if state.running.is_some() {
            // Poll: the checkpoint's rows leave the overlay as soon as it is done.
            Some(CHECKPOINT_POLL)
        } else if file.fault().is_some() {
            Some(RECOVERY_INTERVAL)
        } else if state.journal.len() > 0 {
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
        if state.running.as_ref().is_some_and(Running::is_done)
            && let Err(e) = state.finish_checkpoint(file)
        {
            state.fail(file, e);
        }
        if file.fault().is_some()
            && (first.is_none() || state.last_recovery.elapsed() >= RECOVERY_GAP)
        {
            state.recover(file);
        }
        let Some(first) = first else {
            // Writes paused: put what the journal holds into the file.
            if state.running.is_none()
                && file.fault().is_none()
                && state.journal.len() > 0
                && let Some(db) = file.current()
            {
                state.checkpoint(file, db);
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
            // Refused before anything is journaled: its rows could eat into the room kept for
            // the checkpoint that puts them into redb.
            (None, Some(_)) if let Err(e) = file.room() => all_failed(group.len(), &e),
            (None, Some(db)) => {
                let mut refused = false;
                let results = state.commit(file, &db, &mut group, options, &mut refused);
                // Before any writer is answered: a reader opened after an acknowledgement
                // must see the write.
                file.invalidate_snapshot();
                let failed = results
                    .iter()
                    .find_map(|r| match r {
                        Err(WriteError::Storage(e)) => Some(e.clone()),
                        _ => None,
                    })
                    .filter(|_| !refused);
                if let Some(e) = failed {
                    // The handle goes first: the reopen waits for every holder to let go.
                    drop(db);
                    state.fail(file, e);
                } else if state.running.is_none()
                    && (state.journal.len() >= options.checkpoint_bytes()
                        || state.journal.age() >= CHECKPOINT_EVERY)
                {
                    state.checkpoint(file, db);
                }
                results
            }
            (fault, _) => {
                let e =
                    fault.unwrap_or_else(|| StorageError::msg("the database is being reopened"));
                all_failed(group.len(), &e)
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
    if state.running.is_some()
        && let Err(e) = state.finish_checkpoint(file)
    {
        file.set_fault(e);
    }
    // Leave the file closed cleanly if space came back, so that read-only opens accept it.
    if file.fault().is_some() {
        state.recover(file);
    }
    close(file, state.journal, state.behind.as_ref());
}

/// What the committer keeps from one group to the next.
struct State {
    journal: Journal,
    /// A checkpoint running beside the committer, if one is.
    running: Option<Running>,
    /// The commits journaled that redb does not hold yet; `None` until the handle is sound.
    behind: Option<Behind>,
    last_recovery: Instant,
}

impl State {
    /// Reopens the file after a failure `e`.
    fn fail(&mut self, file: &Writable, e: StorageError) {
        file.set_fault(e);
        self.recover(file);
    }

    /// Reopens the file: its replay puts every journaled commit into redb, so the overlay
    /// starts over.
    fn recover(&mut self, file: &Writable) {
        abandon(self.running.take());
        self.behind = None;
        file.recover(&mut self.journal);
        self.last_recovery = Instant::now();
    }

    /// Starts a checkpoint beside the committer; a failure is a fault like a failed commit's.
    /// Takes the handle, which must be let go before a reopen.
    fn checkpoint(&mut self, file: &Writable, db: Arc<redb::Database>) {
        let started = start_checkpoint(file, &db, &mut self.journal, &mut self.behind);
        drop(db);
        match started {
            Ok(started) => self.running = started,
            Err(e) => self.fail(file, e),
        }
    }

    /// Waits for the running checkpoint, if one is, and drops the layer it put into redb.
    fn finish_checkpoint(&mut self, file: &Writable) -> Result<(), StorageError> {
        match self.running.take() {
            Some(done) => finish_checkpoint(file, &mut self.journal, done, &mut self.behind),
            None => Ok(()),
        }
    }

    /// Commits a group: through the journal into the overlay ([`commit_beside`]), or, for a
    /// group too large for the journal, durably into redb itself ([`commit_direct`]).
    fn commit(
        &mut self,
        file: &Writable,
        db: &Arc<redb::Database>,
        group: &mut [Job],
        options: &FileOptions,
        refused: &mut bool,
    ) -> Vec<Result<(), WriteError>> {
        let size = group.len();
        let fail_all = |e: StorageError| all_failed(size, &e);
        if self.journal.len() >= options.checkpoint_bytes() {
            // The journal's file is full, and so the overlay: the checkpoint of the other file
            // must be done before this one's can begin.
            if let Err(e) = self.finish_checkpoint(file) {
                return fail_all(e);
            }
            match start_checkpoint(file, db, &mut self.journal, &mut self.behind) {
                Ok(started) => self.running = started,
                Err(e) => return fail_all(e),
            }
        }
        let current = match &mut self.behind {
            Some(current) => current,
            None => match Behind::new(file, db, &mut self.journal) {
                Ok(fresh) => self.behind.insert(fresh),
                Err(e) => return fail_all(e),
            },
        };
        let durability = options.durability;
        if let Some(results) =
            commit_beside(file, current, &mut self.journal, group, durability, refused)
        {
            return results;
        }
        // Too large for the journal: into redb, after the overlay's rows.
        if let Err(e) = self.finish_checkpoint(file) {
            return fail_all(e);
        }
        let Some(current) = self.behind.as_ref() else {
            return fail_all(StorageError::msg("the database is being reopened"));
        };
        let (results, committed) =
            commit_direct(file, db, &mut self.journal, group, current, refused);
        if committed {
            // redb holds the overlay's rows now, and the group's: start a new overlay, and let
            // no reader pair the old snapshot with the old one, which lacks the group.
            self.behind = None;
            file.unpair_base();
        }
        results
    }
}

/// The commits journaled and answered that redb does not hold yet: an overlay over a snapshot
/// of redb, which new commits are checked against, and which a checkpoint puts into redb.
struct Behind {
    overlay: Arc<Overlay>,
    /// redb as of commit `holds`.
    base: FileReader,
    holds: u64,
    /// Where the logs end, through the overlay over redb: it outlives checkpoints, which only
    /// move rows from the one to the other.
    log_ends: LogEnds,
}

impl Behind {
    /// Takes back the rows commit `seq` wrote, which will not be journaled: where the logs end
    /// is found again.
    fn retract(&mut self, seq: u64) {
        self.overlay.retract(seq);
        self.log_ends.clear();
    }

    /// An empty overlay over redb as it is, which then holds every journaled commit; readers
    /// pair their snapshots with it from now on.
    fn new(
        file: &Writable,
        db: &redb::Database,
        journal: &mut Journal,
    ) -> Result<Behind, StorageError> {
        if !journal.can_rotate() {
            // A replay left commits in both files: one durable commit frees both, so that
            // checkpoints can turn the journal from file to file again.
            checkpoint(db, journal)?;
        }
        let holds = journal.last();
        let (base, _) = snapshot(db, None)?;
        let behind = Behind {
            overlay: Arc::new(Overlay::default()),
            base,
            holds,
            log_ends: LogEnds::default(),
        };
        file.pair_with(&behind, holds);
        Ok(behind)
    }
}

/// A checkpoint running on the checkpoint thread: the overlay's rows of the journal's other
/// file, put into redb in one durable commit.
struct Running {
    result: mpsc::Receiver<Result<(), StorageError>>,
    /// The result, once [`Running::is_done`] has seen it.
    outcome: OnceCell<Result<(), StorageError>>,
    /// The last commit the checkpoint holds.
    covers: u64,
    started: Instant,
}

impl Running {
    fn is_done(&self) -> bool {
        if self.outcome.get().is_some() {
            return true;
        }
        let outcome = match self.result.try_recv() {
            Ok(outcome) => outcome,
            Err(mpsc::TryRecvError::Empty) => return false,
            Err(mpsc::TryRecvError::Disconnected) => Err(stopped()),
        };
        let _ = self.outcome.set(outcome);
        true
    }

    /// Waits for the checkpoint's result.
    fn wait(self) -> Result<(), StorageError> {
        match self.outcome.into_inner() {
            Some(outcome) => outcome,
            None => self.result.recv().unwrap_or_else(|_| Err(stopped())),
        }
    }
}

fn stopped() -> StorageError {
    StorageError::msg("the checkpoint thread stopped")
}

/// A checkpoint for the checkpoint thread to make.
struct Task {
    db: Arc<redb::Database>,
    layer: Arc<Layer>,
    covers: u64,
    result: mpsc::SyncSender<Result<(), StorageError>>,
}

/// Starts the thread that makes checkpoints, one after another. One thread for the life of the
/// file rather than one per checkpoint: a new thread's allocator starts from fresh pages, and
/// the kernel zeroing them cost 2.5 us of a put's CPU (docs/benchmarks.md).
fn checkpoint_thread() -> Result<mpsc::Sender<Task>, StorageError> {
    let (tasks, queue) = mpsc::channel::<Task>();
    std::thread::Builder::new()
        .name("pathdb-checkpoint".into())
        .spawn(move || {
            for task in queue {
                let outcome = put_layer(&task.db, &task.layer, task.covers);
                // The handle goes before the answer: a reopen after it must find the file free.
                let Task {
                    db, layer, result, ..
                } = task;
                drop((db, layer));
                let _ = result.send(outcome);
            }
        })
        .map_err(|e| StorageError::new("cannot start the checkpoint thread", e))?;
    Ok(tasks)
}

/// A checkpoint: the rows of `layer` into redb, in one durable commit that holds every commit
/// up to `covers`.
fn put_layer(db: &redb::Database, layer: &Layer, covers: u64) -> Result<(), StorageError> {
    let mut txn = begin_write(db)?;
    {
        let mut table = txn
            .open_table(DATA)
            .map_err(|e| storage("open data table")(e.into()))?;
        // Read in place: nothing writes a checkpoint's layer, and readers only read it.
        layer.read_newest(|rows| put::put_sorted(&mut table, rows))?;
    }
    number(&mut txn, covers, redb::Durability::Immediate)?;
    txn.set_quick_repair(true);
    txn.commit().map_err(|e| storage("checkpoint")(e.into()))
}

/// The same failure for each of a group's `size` batches.
fn all_failed(size: usize, e: &StorageError) -> Vec<Result<(), WriteError>> {
    (0..size)
        .map(|_| Err(WriteError::Storage(e.clone())))
        .collect()
}

/// Starts a checkpoint beside the committer: appends turn to the journal's other file, and a
/// thread puts the overlay's rows of the file left into redb, durably. `None`: nothing to put.
fn start_checkpoint(
    file: &Writable,
    db: &Arc<redb::Database>,
    journal: &mut Journal,
    behind: &mut Option<Behind>,
) -> Result<Option<Running>, StorageError> {
    let current = match behind {
        Some(current) => current,
        None => behind.insert(Behind::new(file, db, journal)?),
    };
    if journal.len() == 0 || !journal.can_rotate() {
        return Ok(None);
    }
    // The tap must hold every commit durably before the journal can let them go.
    journal.sync_tap();
    let covers = journal.rotate();
    let (overlay, layer) = current.overlay.rotated();
    current.overlay = Arc::new(overlay);
    file.pair_with(current, covers);
    let (answer, result) = mpsc::sync_channel(1);
    let task = Task {
        db: Arc::clone(db),
        layer,
        covers,
        result: answer,
    };
    let mut thread = file
        .checkpoints
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    // A thread that stopped (it panicked) is started again.
    let unsent = match thread.as_ref() {
        Some(queue) => queue.send(task).err().map(|mpsc::SendError(task)| task),
        None => Some(task),
    };
    if let Some(task) = unsent {
        let fresh = checkpoint_thread()?;
        fresh.send(task).map_err(|_| stopped())?;
        *thread = Some(fresh);
    }
    Ok(Some(Running {
        result,
        outcome: OnceCell::new(),
        covers,
        started: Instant::now(),
    }))
}

/// Writes rows of the overlay into redb's data table.
fn put_rows(
    table: &mut redb::Table<'_, (&'static [u8], &'static [u8]), &'static [u8]>,
    rows: Vec<Row>,
) -> Result<(), StorageError> {
    let rows = rows
        .iter()
        .map(|((partition, sort), value)| (partition.as_slice(), sort.as_slice(), value));
    put::put_sorted(table, rows)
}

/// Waits for a running checkpoint; then the overlay drops the layer it put into redb (readers
/// with an older snapshot keep the overlay they hold).
fn finish_checkpoint(
    file: &Writable,
    journal: &mut Journal,
    running: Running,
    behind: &mut Option<Behind>,
) -> Result<(), StorageError> {
    let (covers, started) = (running.covers, running.started);
    running.wait()?;
    metrics::histogram!("pathdb_checkpoint_seconds").record(started.elapsed());
    journal.checkpointed(covers);
    let db = file
        .current()
        .ok_or_else(|| StorageError::msg("the database is being reopened"))?;
    let Some(current) = behind.as_mut() else {
        return Ok(());
    };
    // A snapshot taken now holds every commit up to `covers`.
    let (base, _) = snapshot(db.as_ref(), None)?;
    *current = Behind {
        overlay: Arc::new(current.overlay.settled()),
        base,
        holds: covers,
        log_ends: std::mem::take(&mut current.log_ends),
    };
    file.pair_with(current, covers);
    Ok(())
}

/// Lets a checkpoint go after a failure: the reopen that follows replays what it covered and
/// what was committed beside it. The overlay stays until then: readers on the old handle
/// still need it to see the commits it holds (the reopen drops it with the handle).
fn abandon(running: Option<Running>) {
    if let Some(running) = running {
        let _ = running.wait();
    }
}

/// Commits a group through the journal alone: checked against the overlay over redb's
/// snapshot, applied to the overlay, made durable by the journal, and published to readers
/// before its writers are answered. `None`: the group is too large for the journal (nothing of
/// it was kept).
fn commit_beside(
    file: &Writable,
    behind: &mut Behind,
    journal: &mut Journal,
    group: &mut [Job],
    durability: Durability,
    refused: &mut bool,
) -> Option<Vec<Result<(), WriteError>>> {
    let size = group.len();
    let fail_all = |e: StorageError| all_failed(size, &e);
    let seq = journal.next();
    let mut rows = Beside {
        base: &behind.base,
        view: View {
            overlay: Arc::clone(&behind.overlay),
            after: behind.holds,
            upto: u64::MAX,
        },
        seq,
        log_ends: &mut behind.log_ends,
    };
    journal.begin();
    let applied = apply_group(&mut rows, group, journal);
    let results = match applied {
        Ok(results) => results,
        Err(e) => {
            behind.retract(seq);
            return Some(fail_all(e));
        }
    };
    if journal.record_is_empty() {
        return Some(results);
    }
    if journal.record_len() > JOURNAL_RECORD_MAX {
        behind.retract(seq);
        return None;
    }
    if let Err(e) = file.room() {
        behind.retract(seq);
        *refused = true;
        return Some(fail_all(e));
    }
    if let Err(e) = journal.append(durability == Durability::Immediate) {
        behind.retract(seq);
        return Some(fail_all(StorageError::io("write the journal", &e)));
    }
    file.publish(seq);
    journal.tap_commit();
    Some(results)
}

/// Commits a group too large for the journal (an import) durably in redb itself, after the
/// overlay's rows, in the same transaction: no checkpoint may be running. Also whether it
/// committed (and so redb holds the overlay's rows).
fn commit_direct(
    file: &Writable,
    db: &redb::Database,
    journal: &mut Journal,
    group: &mut [Job],
    behind: &Behind,
    refused: &mut bool,
) -> (Vec<Result<(), WriteError>>, bool) {
    let size = group.len();
    let fail_all = |e: StorageError| (all_failed(size, &e), false);
    let txn = match begin_write(db) {
        Ok(t) => t,
        Err(e) => return fail_all(e),
    };
    journal.begin();
    let results = {
        let mut table = match txn.open_table(DATA) {
            Ok(t) => t,
            Err(e) => return fail_all(storage("open data table")(e.into())),
        };
        if let Err(e) = put_rows(&mut table, behind.overlay.newest()) {
            return fail_all(e);
        }
        match apply_group(&mut table, group, journal) {
            Ok(results) => results,
            // A half-applied batch cannot be undone inside the transaction: abort all.
            Err(e) => return fail_all(e),
        }
    };
    if journal.record_is_empty() {
        // Every batch's condition failed: nothing to commit.
        return (results, false);
    }
    if let Err(e) = file.room() {
        *refused = true;
        return fail_all(e);
    }
    journal.skip();
    let committed = commit_durably(txn, journal);
    journal.settle(committed.is_ok());
    match committed {
        Ok(()) => (results, true),
        Err(e) => fail_all(e),
    }
}

/// Checkpoints and removes the journal, so that the closed database is its one file. If the
/// checkpoint fails the journal stays, and the next read-write open replays it.
fn close(file: &Writable, mut journal: Journal, behind: Option<&Behind>) {
    let Some(db) = file.current() else { return };
    let flushed = begin_write(&db).and_then(|txn| {
        if let Some(behind) = behind {
            let mut table = txn
                .open_table(DATA)
                .map_err(|e| storage("open data table")(e.into()))?;
            put_rows(&mut table, behind.overlay.newest())?;
            drop(table);
        }
        if journal.len() > 0
            || !journal.can_rotate()
            || behind.is_some_and(|b| !b.overlay.is_empty())
        {
            commit_durably(txn, &mut journal)?;
        }
        Ok(())
    });
    if let Err(e) = flushed {
        tracing::warn!(error = %e, "closing: the journal stays for the next open to replay");
        return;
    }
    if let Err(e) = journal.remove() {
        tracing::warn!(error = %e, "closing: cannot remove the empty journal");
    }
    file.margin
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .release_on_close();
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
        // The replay below puts whatever an overlay held into redb.
        self.update_latest(|latest| {
            latest.overlay = None;
            latest.base.take()
        });
        let deadline = Instant::now() + REOPEN_WAIT;
        // The same room as before: the journal's capacity has not changed.
        let margin_bytes = self
            .margin
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .bytes();
        let db = loop {
            match open_writable(&self.path, self.cache_size, margin_bytes) {
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
    /// predate the commit. While the committer's snapshot of redb is paired with its overlay
    /// ([`Writable::pair_with`]), a new snapshot is that pair: no redb transaction is opened.
    fn snapshot(&self) -> Result<FileReader, StorageError> {
        let (generation, overlay) = {
            let mut latest = self.latest.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(shared) = &latest.snapshot {
                return Ok(shared.clone());
            }
            if let (Some((overlay, upto)), Some((table, holds))) = (&latest.overlay, &latest.base) {
                let paired = FileReader {
                    table: Arc::clone(table),
                    overlay: View::over(Arc::clone(overlay), *holds, *upto),
                };
                latest.snapshot = Some(paired.clone());
                return Ok(paired);
            }
            (latest.generation, latest.overlay.clone())
        };
        let fresh = self.open_snapshot(overlay)?;
        let mut latest = self.latest.lock().unwrap_or_else(PoisonError::into_inner);
        if latest.generation == generation && latest.snapshot.is_none() {
            latest.snapshot = Some(fresh.clone());
        }
        Ok(fresh)
    }

    /// The shared snapshot is stale: a commit landed, or the handle is being replaced.
    fn invalidate_snapshot(&self) {
        self.update_latest(|_| {});
    }

    /// Changes what readers pair their snapshots with, and makes the shared one stale. What
    /// `change` returns is dropped after the lock is let go: ending a read transaction takes
    /// redb's own locks.
    fn update_latest<T>(&self, change: impl FnOnce(&mut Latest) -> T) {
        let stale = {
            let mut latest = self.latest.lock().unwrap_or_else(PoisonError::into_inner);
            let replaced = change(&mut latest);
            latest.generation += 1;
            (latest.snapshot.take(), replaced)
        };
        drop(stale);
    }

    /// Readers pair the committer's snapshot of redb with its overlay from now on; they see
    /// the overlay's commits published so far, and at least those up to `published`.
    fn pair_with(&self, behind: &Behind, published: u64) {
        let table = Arc::clone(&behind.base.table);
        self.update_latest(|latest| {
            let seen = latest.overlay.as_ref().map_or(0, |&(_, seen)| seen);
            latest.overlay = Some((Arc::clone(&behind.overlay), seen.max(published)));
            latest.base.replace((table, behind.holds))
        });
    }

    /// redb holds commits that the overlay readers pair with lacks (a group committed into it
    /// directly): readers open snapshots of their own until the next [`Self::pair_with`].
    fn unpair_base(&self) {
        self.update_latest(|latest| latest.base.take());
    }

    /// Readers see the overlay's commits up to `seq` (its writers are about to be answered).
    fn publish(&self, seq: u64) {
        self.update_latest(|latest| {
            if let Some((_, published)) = &mut latest.overlay {
                *published = seq;
            }
        });
    }

    /// The overlay and its last published commit, for a reader pairing them with a snapshot.
    fn overlay(&self) -> Option<(Arc<Overlay>, u64)> {
        let latest = self.latest.lock().unwrap_or_else(PoisonError::into_inner);
        latest.overlay.clone()
    }

    /// A new snapshot, waiting (a little) for a recovery when the handle is broken or being
    /// replaced, so that reads go on across a write failure.
    fn open_snapshot(
        &self,
        overlay: Option<(Arc<Overlay>, u64)>,
    ) -> Result<FileReader, StorageError> {
        let mut waited = false;
        loop {
            let seen = self.health.lock().map(|h| h.recoveries).unwrap_or(0);
            let result = match self.current() {
                Some(db) => snapshot(db.as_ref(), overlay.clone()).map(|(reader, _)| reader),
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

/// A read transaction on the data table, with `overlay` (the commits redb does not hold yet,
/// up to the last published) merged over it where the snapshot lacks them.
/// Also the number of the last commit the reader sees, where it was read (with an overlay, or
/// for `backup`).
fn snapshot(
    db: &impl ReadableDatabase,
    overlay: Option<(Arc<Overlay>, u64)>,
) -> Result<(FileReader, Option<u64>), StorageError> {
    let txn = db
        .begin_read()
        .map_err(|e| storage("begin read")(e.into()))?;
    let table = txn
        .open_table(DATA)
        .map_err(|e| storage("open data table")(e.into()))?;
    let Some((overlay, upto)) = overlay else {
        return Ok((
            FileReader {
                table: Arc::new(table),
                overlay: None,
            },
            None,
        ));
    };
    // Paired by number: a snapshot taken after the overlay's commits reached redb holds them.
    let holds = txn
        .open_table(META)
        .map_err(|e| storage("open meta table")(e.into()))?
        .get(JOURNALED)
        .map_err(|e| storage("read meta")(e.into()))?
        .map_or(0, |g| g.value());
    Ok((
        FileReader {
            table: Arc::new(table),
            overlay: View::over(overlay, holds, upto),
        },
        Some(holds.max(upto)),
    ))
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

/// Where a group's batches are applied: the overlay over a snapshot of redb ([`Beside`]), or,
/// for a group too large for the journal, redb's write transaction.
trait Rows {
    /// Whether `expect` holds for the record under `key`, for a batch planned on the snapshot
    /// `planned_on` (see [`Job::planned_on`]).
    fn holds(
        &self,
        key: &super::Key,
        expect: Expect,
        planned_on: Option<&Weak<DataTable>>,
    ) -> Result<bool, StorageError>;
    /// The number of the newest entry of the log at `prefix` (its entries lie within
    /// [`super::log_bounds`]); 0: none.
    fn log_end(&mut self, partition: &[u8], prefix: &[u8]) -> Result<u64, StorageError>;
    fn set(&mut self, partition: &[u8], sort: &[u8], value: &[u8]) -> Result<(), StorageError>;
    fn remove(&mut self, partition: &[u8], sort: &[u8]) -> Result<(), StorageError>;
    /// Plans a batch again on what these rows hold now.
    fn replan(&self, replan: &mut Replan) -> Option<WriteBatch>;
}

/// The version of the record under `key` in `table`, if any: from the record's head, with no
/// copy of the value.
fn stored_version(
    table: &impl ReadableTable<(&'static [u8], &'static [u8]), &'static [u8]>,
    key: &super::Key,
) -> Result<Option<u64>, StorageError> {
    table
        .get((key.partition.as_slice(), key.sort.as_slice()))
        .map_err(|e| storage("read")(e.into()))?
        .map(|g| decode_version(g.value()))
        .transpose()
}

impl Rows for redb::Table<'_, (&'static [u8], &'static [u8]), &'static [u8]> {
    /// A direct commit's rows: the table is the state itself, read every time.
    fn holds(
        &self,
        key: &super::Key,
        expect: Expect,
        _: Option<&Weak<DataTable>>,
    ) -> Result<bool, StorageError> {
        Ok(expect.holds(stored_version(self, key)?))
    }

    fn log_end(&mut self, partition: &[u8], prefix: &[u8]) -> Result<u64, StorageError> {
        let (first, last) = super::log_bounds(prefix);
        match self
            .range((partition, first.as_slice())..=(partition, last.as_slice()))
            .map_err(|e| storage("read")(e.into()))?
            .next_back()
        {
            Some(entry) => {
                let (key, _) = entry.map_err(|e| storage("read")(e.into()))?;
                Ok(super::log_number(key.value().1).unwrap_or(0))
            }
            None => Ok(0),
        }
    }

    fn set(&mut self, partition: &[u8], sort: &[u8], value: &[u8]) -> Result<(), StorageError> {
        self.insert((partition, sort), value)
            .map(drop)
            .map_err(|e| storage("write")(e.into()))
    }

    fn remove(&mut self, partition: &[u8], sort: &[u8]) -> Result<(), StorageError> {
        redb::Table::remove(self, (partition, sort))
            .map(drop)
            .map_err(|e| storage("delete")(e.into()))
    }

    fn replan(&self, replan: &mut Replan) -> Option<WriteBatch> {
        replan(&TableReader(self))
    }
}

/// The rows of commit `seq`: read through the overlay over a snapshot of redb, written to the
/// overlay.
struct Beside<'a> {
    base: &'a FileReader,
    view: View,
    seq: u64,
    /// Kept up to date with every row written or removed.
    log_ends: &'a mut LogEnds,
}

impl Beside<'_> {
    fn reader(&self) -> Merged<'_, FileReader> {
        Merged {
            base: self.base,
            view: &self.view,
        }
    }
}

impl Rows for Beside<'_> {
    /// A key the overlay lacks is as redb's snapshot has it. When that snapshot is the one the
    /// batch was planned on, the plan read the key there and expected what it read: it holds,
    /// and the key is not looked up in redb again (a fifth of the commit thread's instructions
    /// under a put load, docs/benchmarks.md). The snapshot only changes when a checkpoint or a
    /// direct commit has put rows into redb, which makes a new one; and the overlay only loses
    /// rows then, or rows of a commit that failed before any reader saw it.
    fn holds(
        &self,
        key: &super::Key,
        expect: Expect,
        planned_on: Option<&Weak<DataTable>>,
    ) -> Result<bool, StorageError> {
        let current = match self.view.get(&key.partition, &key.sort) {
            Some(Some(bytes)) => Some(decode_version(&bytes)?),
            Some(None) => None,
            None if planned_on
                .is_some_and(|t| std::ptr::eq(t.as_ptr(), Arc::as_ptr(&self.base.table))) =>
            {
                return Ok(true);
            }
            None => stored_version(&*self.base.table, key)?,
        };
        Ok(expect.holds(current))
    }

    fn log_end(&mut self, partition: &[u8], prefix: &[u8]) -> Result<u64, StorageError> {
        if let Some(end) = self.log_ends.get(partition, prefix) {
            return Ok(end);
        }
        let mut found = None;
        let (first, last) = super::log_bounds(prefix);
        let range = super::SortRange {
            start: std::ops::Bound::Included(first),
            end: std::ops::Bound::Included(last),
        };
        self.reader().scan_each(
            partition,
            &range,
            super::Direction::Reverse,
            1,
            &mut |sort, _| {
                found = Some(sort.to_vec());
                std::ops::ControlFlow::Break(())
            },
        )?;
        Ok(self.log_ends.learn(partition, prefix, found.as_deref()))
    }

    fn set(&mut self, partition: &[u8], sort: &[u8], value: &[u8]) -> Result<(), StorageError> {
        self.log_ends.set(partition, sort);
        self.view
            .overlay
            .set(self.seq, partition, sort, Some(Arc::from(value)));
        Ok(())
    }

    fn remove(&mut self, partition: &[u8], sort: &[u8]) -> Result<(), StorageError> {
        self.log_ends.remove(partition, sort);
        self.view.overlay.set(self.seq, partition, sort, None);
        Ok(())
    }

    fn replan(&self, replan: &mut Replan) -> Option<WriteBatch> {
        replan(&self.reader())
    }
}

/// Checks a batch's conditions, then applies it. `Ok(Err(..))`: a condition failed, nothing written.
/// Each change goes to the journal's record too.
fn apply(
    rows: &mut impl Rows,
    batch: &WriteBatch,
    planned_on: Option<&Weak<DataTable>>,
    journal: &mut Journal,
) -> Result<Result<(), WriteError>, StorageError> {
    for (index, op) in batch.ops.iter().enumerate() {
        if let Some(expect) = op.expect()
            && !rows.holds(op.key(), expect, planned_on)?
        {
            return Ok(Err(WriteError::ConditionFailed { index }));
        }
    }
    for op in &batch.ops {
        match op {
            WriteOp::Put { key, record, .. } => {
                let (partition, sort) = (key.partition.as_slice(), key.sort.as_slice());
                let value = encode_record(record);
                rows.set(partition, sort, &value)?;
                journal.push(Change::Set {
                    partition,
                    sort,
                    value: &value,
                });
            }
            WriteOp::Delete { key, .. } => {
                let (partition, sort) = (key.partition.as_slice(), key.sort.as_slice());
                rows.remove(partition, sort)?;
                journal.push(Change::Remove { partition, sort });
            }
            WriteOp::Check { .. } => {}
            WriteOp::Append { log, record } => {
                let p = log.partition.as_slice();
                let n = rows.log_end(p, &log.sort)?;
                let sort = super::log_entry(&log.sort, n + 1);
                let value = encode_record(record);
                rows.set(p, &sort, &value)?;
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

/// Applies every batch of a group, one after another, to `rows`; a batch that loses a race to
/// one before it is planned again on top of it, in this commit, instead of in a commit of its
/// own. `Err`: a batch was half applied, which nothing inside the commit can undo.
fn apply_group(
    rows: &mut impl Rows,
    group: &mut [Job],
    journal: &mut Journal,
) -> Result<Vec<Result<(), WriteError>>, StorageError> {
    let mut results = Vec::with_capacity(group.len());
    for job in group.iter_mut() {
        let mut result = apply(rows, &job.batch, job.planned_on.as_ref(), journal)?;
        if let (Err(WriteError::ConditionFailed { .. }), Some(replan)) =
            (&result, job.replan.as_mut())
            && let Some(batch) = rows.replan(replan)
        {
            metrics::counter!("pathdb_commit_replans").increment(1);
            // Planned on this group's state, not on a snapshot.
            result = apply(rows, &batch, None, journal)?;
        }
        results.push(result);
    }
    Ok(results)
}

impl Backend for FileBackend {
    type Reader<'a> = FileReader;

    fn read_only(&self) -> bool {
        self.is_read_only()
    }

    fn reader(&self) -> Result<FileReader, StorageError> {
        match &self.db {
            Engine::ReadWrite(file) => file.snapshot(),
            Engine::ReadOnly(db) => snapshot(db, None).map(|(reader, _)| reader),
        }
    }

    /// A snapshot and the number of its last commit, read in the same transaction (with the
    /// commits redb does not hold yet merged in, up to the last answered).
    fn backup_reader(&self) -> Result<(FileReader, BackupPoint), StorageError> {
        fn read(
            db: &impl ReadableDatabase,
            overlay: Option<(Arc<Overlay>, u64)>,
        ) -> Result<(FileReader, BackupPoint), StorageError> {
            // An empty overlay when there is none: the snapshot's number is read all the same.
            let overlay = overlay.unwrap_or_else(|| (Arc::new(Overlay::default()), 0));
            let (reader, commit) = snapshot(db, Some(overlay))?;
            let point = BackupPoint {
                commit: Some(commit.unwrap_or(0)),
                snapshot: true,
                database: meta_value(db, JOURNAL_ID)?,
            };
            Ok((reader, point))
        }
        match &self.db {
            Engine::ReadWrite(file) => {
                // The overlay before the handle, as readers take them: a reopen in between
                // replays every commit the overlay holds into the new handle, while the other
                // order could pair the old handle with no overlay.
                let overlay = file.overlay();
                let db = file.current().ok_or_else(|| {
                    file.fault()
                        .unwrap_or_else(|| StorageError::msg("the database is being reopened"))
                })?;
                read(db.as_ref(), overlay)
            }
            Engine::ReadOnly(db) => read(db, None),
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
        self.queue_write(batch, None)
    }

    /// The committer checks an expectation without reading redb again where the batch's
    /// snapshot is still its own (see [`Job::planned_on`]).
    fn write_queued_planned_on(
        &self,
        batch: WriteBatch,
        planned_on: &FileReader,
    ) -> Result<PendingWrite, WriteBatch> {
        self.queue_write(batch, Some(Arc::downgrade(&planned_on.table)))
    }
}

impl FileBackend {
    /// [`Backend::write_queued`], for a batch planned on `planned_on` if that is known.
    fn queue_write(
        &self,
        batch: WriteBatch,
        planned_on: Option<Weak<DataTable>>,
    ) -> Result<PendingWrite, WriteBatch> {
        if batch.ops.is_empty() {
            return Ok(PendingWrite::ready(Ok(())));
        }
        let (pending, completer) = PendingWrite::new();
        let job = Job {
            batch,
            planned_on,
            replan: None,
            reply: Reply::Queued(completer),
        };
        Ok(match self.enqueue(job) {
            Ok(()) => pending,
            Err(e) => PendingWrite::ready(Err(e.into())),
        })
    }

    /// Hands a batch to the committer thread and waits for its commit.
    fn write_blocking(&self, batch: WriteBatch, replan: Option<Replan>) -> Result<(), WriteError> {
        if batch.ops.is_empty() {
            return Ok(());
        }
        let (reply, answer) = mpsc::sync_channel(1);
        self.enqueue(Job {
            batch,
            planned_on: None,
            replan,
            reply: Reply::Blocking(reply),
        })?;
        answer
            .recv()
            .map_err(|_| StorageError::msg("commit thread stopped"))?
    }

    /// Hands a job with a non-empty batch to the committer thread.
    fn enqueue(&self, job: Job) -> Result<(), StorageError> {
        if self.is_read_only() {
            return Err(StorageError::msg("the database is open read-only")
                .with_kind(StorageErrorKind::ReadOnly));
        }
        let sent = self
            .queue
            .lock()
            .map_err(|_| StorageError::msg("commit queue poisoned"))?
            .as_ref()
            .map(|q| q.send(job).is_ok())
            .unwrap_or(false);
        if sent {
            Ok(())
        } else {
            Err(StorageError::msg("database is closed"))
        }
    }
}

mod put;
#[cfg(test)]
mod tests;
