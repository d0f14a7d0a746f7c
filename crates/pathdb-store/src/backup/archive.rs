//! The continuous archive of an embedded database: every commit, kept in segments beside base
//! backups in a target, so that the database can be rebuilt as of any commit (backup/pitr.rs).
//!
//! How a commit travels: the file's committer hands it to the archive ([`CommitTap`]), which
//! only copies it into memory. The archiver thread, every [`ArchiveOptions::delay`], writes what
//! it holds as one segment into the *spool* (a directory beside the database file, on the same
//! disk as its journal), synced, then uploads the spool's segments to the target in order and
//! removes them. So at most `delay` of acknowledged commits (plus an upload) are only on the
//! database's own disk. A target that is down leaves segments in the spool, and the archive
//! catches up when it returns; readiness never depends on it (metrics and the log say so).
//!
//! Why nothing is lost when the process is killed: a commit is always in the journal or in the
//! spool. The journal holds every commit since the file's last durable commit, and before each
//! durable commit (after which the journal starts over) the file asks the archive to sync
//! ([`CommitTap::sync`]), which writes what it holds to the spool. At open the journal's
//! commits are handed over again ([`CommitTap::resume`]); those the target has are dropped.
//!
//! A new base backup is taken at start when the archive has none, every
//! [`ArchiveOptions::base_every`], and when the archive lacks commits it can no longer get (it
//! was off while the database was written): the gap is then logged and named by a restore.
//! Retention ([`ArchiveOptions::keep`]) removes base backups older than the window, except the
//! newest of them (a restore to the window's start needs it), and the segments before it.

use super::BackupError;
use super::format::{BACKUP_EXTENSION, BackupInfo};
use super::segment::{Segment, parse_name};
use super::target::{ArchiveTarget, sync_dir};
use crate::backend::{CommitTap, commit_time};
use crate::model::item::Timestamp;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The file at the root of an archive that says whose it is.
pub(crate) const MARKER: &str = "pathdb-archive.json";

/// How an archive runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArchiveOptions {
    /// The longest a commit waits in memory and the spool before its segment is uploaded (when
    /// the target is up): what a lost disk costs at most.
    pub delay: Duration,
    /// How often a new base backup is taken: a restore replays the segments after one.
    pub base_every: Duration,
    /// How long base backups and segments are kept; `None`: forever.
    pub keep: Option<Duration>,
}

impl Default for ArchiveOptions {
    fn default() -> ArchiveOptions {
        ArchiveOptions {
            delay: Duration::from_secs(1),
            base_every: Duration::from_secs(24 * 3600),
            keep: Some(Duration::from_secs(7 * 24 * 3600)),
        }
    }
}

/// Writes a base backup of the database to a file and says what it holds: the store's backup,
/// which the server hands over once the store is open ([`Archive::start`]).
pub type BaseTaker =
    Box<dyn Fn(&mut std::fs::File) -> Result<BackupInfo, BackupError> + Send + Sync>;

/// Where an archive stands, for `/v1/archive`, the console and metrics.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ArchiveStatus {
    /// The target, as the user named it.
    pub target: String,
    /// The last commit the database made.
    pub last_commit: u64,
    /// The last commit the target holds.
    pub archived_commit: u64,
    /// Commits not yet in the target.
    pub lag_commits: u64,
    /// How long the oldest commit not yet in the target has waited, in seconds.
    pub lag_seconds: f64,
    /// The newest base backup in the target: its commit and when it was taken (microseconds).
    pub last_base: Option<(u64, i64)>,
    /// Failed uploads and base backups since start.
    pub failures: u64,
    /// The last failure, while the archive is failing.
    pub error: Option<String>,
}

/// The archive of one database; see the module. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Archive {
    inner: Arc<Inner>,
}

struct Inner {
    target: Arc<dyn ArchiveTarget>,
    spool: PathBuf,
    options: ArchiveOptions,
    state: Mutex<State>,
    /// Held by whoever turns the buffer into a spool segment, so that a sync waits for a
    /// segment the archiver is writing.
    spooling: Mutex<()>,
    wake: Condvar,
    base: Mutex<Option<BaseTaker>>,
    stop: AtomicBool,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Archive")
            .field("target", &self.target)
            .field("spool", &self.spool)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct State {
    database: Option<u64>,
    /// Commits not yet in a spool segment, in order.
    buffer: Vec<(u64, Vec<u8>)>,
    /// The last commit received.
    last: u64,
    /// Commits up to this one are made; one after it is prepared, not yet settled.
    settled: u64,
    /// The spool segment that holds a prepared commit, when a sync wrote one.
    spooled_unsettled: Option<PathBuf>,
    /// The file's last durable commit at open: the archive must hold every commit up to it.
    applied_at_open: u64,
    /// The last commit the target holds (`None`: not yet listed).
    uploaded: Option<u64>,
    /// The time of the oldest commit not in the target.
    pending_since: Option<i64>,
    need_base: bool,
    last_base: Option<(u64, i64)>,
    failures: u64,
    error: Option<String>,
    /// Why the archive cannot run at all (it belongs to another database).
    fatal: Option<String>,
}

impl Archive {
    /// The archive in `target`, spooling in `spool` (a directory beside the database file).
    /// Nothing runs until the database opens with [`Archive::tap`] and [`Archive::start`] is
    /// called.
    pub fn new(target: Arc<dyn ArchiveTarget>, spool: PathBuf, options: ArchiveOptions) -> Archive {
        Archive {
            inner: Arc::new(Inner {
                target,
                spool,
                options,
                state: Mutex::new(State::default()),
                spooling: Mutex::new(()),
                wake: Condvar::new(),
                base: Mutex::new(None),
                stop: AtomicBool::new(false),
                thread: Mutex::new(None),
            }),
        }
    }

    /// The spool directory for the database file at `db`.
    pub fn spool_for(db: &Path) -> PathBuf {
        let mut name = db.as_os_str().to_owned();
        name.push("-archive");
        PathBuf::from(name)
    }

    /// What the file backend hands its commits to (`FileOptions::tap`).
    pub fn tap(&self) -> Arc<dyn CommitTap> {
        Arc::new(self.clone())
    }

    /// Starts the archiver, once the database is open: `base` takes its base backups. Checks
    /// first that the target is this database's archive (or a new one).
    ///
    /// # Errors
    /// The target is another database's archive, or the spool cannot be used.
    pub fn start(&self, base: BaseTaker) -> Result<(), BackupError> {
        if let Some(fatal) = self.state().fatal.clone() {
            return Err(BackupError::WrongArchive(fatal));
        }
        match self.claim_target() {
            Ok(()) => {}
            Err(Claim::Refused(why)) => {
                self.state().fatal = Some(why.clone());
                return Err(BackupError::WrongArchive(why));
            }
            // The target is down: the archiver checks again before its first upload.
            Err(Claim::Unreachable(e)) => self.failed(&e),
        }
        *self
            .inner
            .base
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(base);
        let archive = self.clone();
        let thread = std::thread::Builder::new()
            .name("pathdb-archive".into())
            .spawn(move || archive.run())
            .map_err(|e| BackupError::io("the archive thread", e))?;
        *self
            .inner
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(thread);
        Ok(())
    }

    /// Uploads what the archive holds now and stops the archiver (a clean shutdown: the last
    /// commits reach the target before the process exits, if it is up).
    pub fn stop(&self) {
        self.inner.stop.store(true, Ordering::SeqCst);
        self.inner.wake.notify_all();
        let thread = self
            .inner
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(thread) = thread {
            let _ = thread.join();
        }
        // The base taker holds the store, whose file holds this archive: let both go.
        self.inner
            .base
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }

    /// The archive's target.
    pub fn target(&self) -> Arc<dyn ArchiveTarget> {
        Arc::clone(&self.inner.target)
    }

    /// Where the archive stands.
    pub fn status(&self) -> ArchiveStatus {
        let state = self.state();
        let archived = state.uploaded.unwrap_or(0);
        ArchiveStatus {
            target: self.inner.target.describe(),
            last_commit: state.last,
            archived_commit: archived,
            lag_commits: state.settled.saturating_sub(archived),
            lag_seconds: state
                .pending_since
                .map_or(0.0, |t| (Timestamp::now().micros() - t).max(0) as f64 / 1e6),
            last_base: state.last_base,
            failures: state.failures,
            error: state.fatal.clone().or_else(|| state.error.clone()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn failed(&self, e: &dyn std::fmt::Display) {
        metrics::counter!("pathdb_archive_failures_total").increment(1);
        tracing::warn!(error = %e, target = %self.inner.target.describe(), "archive: failed");
        let mut state = self.state();
        state.failures += 1;
        state.error = Some(e.to_string());
    }

    /// The archiver: spool, upload, base backups, retention, every `delay` until stopped.
    fn run(&self) {
        let mut last_retention: Option<Instant> = None;
        loop {
            let stopping = self.inner.stop.load(Ordering::SeqCst);
            self.pass(&mut last_retention);
            if stopping {
                return;
            }
            let state = self.state();
            let _ = self
                .inner
                .wake
                .wait_timeout(state, self.inner.options.delay)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// One round of the archiver's work.
    fn pass(&self, last_retention: &mut Option<Instant>) {
        if self.state().fatal.is_some() {
            return;
        }
        if self.state().uploaded.is_none()
            && let Err(e) = self.first_contact()
        {
            self.failed(&e);
        }
        if let Err(e) = self.spool(false) {
            self.failed(&e);
        }
        if self.state().uploaded.is_none() {
            return;
        }
        match self.upload() {
            Ok(()) => {
                if self.base_due()
                    && let Err(e) = self.take_base()
                {
                    self.failed(&e);
                }
            }
            Err(e) => self.failed(&e),
        }
        if self.inner.options.keep.is_some()
            && last_retention.is_none_or(|t| t.elapsed() >= Duration::from_secs(60))
        {
            *last_retention = Some(Instant::now());
            if let Err(e) = self.retain() {
                self.failed(&e);
            }
        }
        self.gauges();
    }

    /// Claims the target for this database and learns what it holds.
    fn first_contact(&self) -> Result<(), BackupError> {
        match self.claim_target() {
            Ok(()) => {}
            Err(Claim::Refused(why)) => {
                tracing::error!(%why, "archive: stopped");
                self.state().fatal = Some(why);
                return Ok(());
            }
            Err(Claim::Unreachable(e)) => return Err(e.into()),
        }
        let target = &self.inner.target;
        let segments = target.list("segments/")?;
        let uploaded = segments
            .iter()
            .filter_map(|(name, _)| parse_name(name.rsplit('/').next()?))
            .map(|(_, last, _)| last)
            .max()
            .unwrap_or(0);
        let bases = target.list("base/")?;
        let last_base = bases
            .iter()
            .filter_map(|(name, _)| parse_base_name(name.rsplit('/').next()?))
            .max();
        let mut state = self.state();
        state.last_base = last_base;
        let held = uploaded.max(last_base.map_or(0, |b| b.0));
        // Commits the target holds need not go again.
        state.buffer.retain(|(n, _)| *n > uploaded);
        let spooled = spool_segments(&self.inner.spool)
            .iter()
            .map(|s| s.1)
            .max()
            .unwrap_or(0);
        if held.max(spooled) < state.applied_at_open {
            if held > 0 {
                tracing::warn!(
                    from = held + 1,
                    to = state.applied_at_open,
                    "archive: commits the archive lacks and can no longer get (was it off?); a \
                     new base backup starts its window again"
                );
            }
            state.need_base = true;
        }
        if last_base.is_none() {
            state.need_base = true;
        }
        state.uploaded = Some(uploaded);
        Ok(())
    }

    fn claim_target(&self) -> Result<(), Claim> {
        let Some(database) = self.state().database else {
            return Ok(());
        };
        let target = &self.inner.target;
        let mine = format!("{{\"format\":1,\"database\":\"{database:016x}\"}}\n");
        match target.get(MARKER) {
            Ok(bytes) if bytes == mine.as_bytes() => Ok(()),
            Ok(bytes) => Err(Claim::Refused(format!(
                "the archive at {} belongs to another database ({}), not to this one \
                 ({database:016x}): give each database an archive of its own (a restored \
                 database is a new one)",
                target.describe(),
                String::from_utf8_lossy(&bytes).trim()
            ))),
            Err(e) if e.not_found => target
                .put(MARKER, mine.as_bytes())
                .map_err(Claim::Unreachable),
            Err(e) => Err(Claim::Unreachable(e)),
        }
    }

    /// Writes the buffered commits as one spool segment, synced: all of them (`all`, for a sync
    /// before the file's durable commit), or those settled.
    fn spool(&self, all: bool) -> Result<(), BackupError> {
        let _spooling = self
            .inner
            .spooling
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let (segment, unsettled) = {
            let mut state = self.state();
            let settled = state.settled;
            let take = if all {
                state.buffer.len()
            } else {
                state
                    .buffer
                    .iter()
                    .take_while(|(n, _)| *n <= settled)
                    .count()
            };
            if take == 0 {
                return Ok(());
            }
            let commits: Vec<_> = state.buffer.drain(..take).collect();
            let unsettled = commits.last().is_some_and(|(n, _)| *n > settled);
            (
                Segment {
                    database: state.database.unwrap_or(0),
                    commits,
                },
                unsettled,
            )
        };
        let path = self.inner.spool.join(segment.name());
        let written = write_synced(&self.inner.spool, &path, &segment.encode());
        let mut state = self.state();
        match written {
            Ok(()) => {
                if unsettled {
                    state.spooled_unsettled = Some(path);
                }
                Ok(())
            }
            Err(e) => {
                // Back to the buffer, in front: the next round tries again.
                let mut commits = segment.commits;
                commits.append(&mut state.buffer);
                state.buffer = commits;
                Err(BackupError::io(path.display(), e))
            }
        }
    }

    /// Uploads the spool's settled segments in order, removing each once the target has it.
    fn upload(&self) -> Result<(), BackupError> {
        for (_, last, name) in spool_segments(&self.inner.spool) {
            let settled = self.state().settled;
            if last > settled {
                break;
            }
            // Not read back here: the spool wrote and synced it a moment ago, opening the
            // database drops a spooled segment a crash damaged, and a restore checks every
            // segment's checksum, naming one the disk damaged since.
            let path = self.inner.spool.join(&name);
            self.inner
                .target
                .put_file(&format!("segments/{name}"), &path)?;
            let _ = std::fs::remove_file(&path);
            let mut state = self.state();
            state.uploaded = Some(state.uploaded.unwrap_or(0).max(last));
            state.error = None;
            // The next commit is no older than this segment's last: a lag that errs long.
            state.pending_since = (last < state.settled)
                .then(|| parse_name(&name).map(|(_, _, time)| time))
                .flatten();
        }
        Ok(())
    }

    fn base_due(&self) -> bool {
        let state = self.state();
        state.need_base
            || state.last_base.is_none_or(|(_, taken)| {
                Timestamp::now().micros() - taken
                    >= i64::try_from(self.inner.options.base_every.as_micros()).unwrap_or(i64::MAX)
            })
    }

    /// Takes a base backup into the spool and uploads it.
    fn take_base(&self) -> Result<(), BackupError> {
        let base = self
            .inner
            .base
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let Some(take) = base.as_ref() else {
            return Ok(());
        };
        let path = self
            .inner
            .spool
            .join(format!("base.{BACKUP_EXTENSION}.tmp"));
        std::fs::create_dir_all(&self.inner.spool)
            .map_err(|e| BackupError::io(self.inner.spool.display(), e))?;
        let mut file =
            std::fs::File::create(&path).map_err(|e| BackupError::io(path.display(), e))?;
        let info = take(&mut file)?;
        // Synced here: a directory target may link this file rather than copy it.
        file.sync_all()
            .map_err(|e| BackupError::io(path.display(), e))?;
        drop(file);
        drop(base);
        let name = base_name(info.commit.unwrap_or(0), info.taken_at);
        let uploaded = self.inner.target.put_file(&name, &path);
        let _ = std::fs::remove_file(&path);
        uploaded?;
        tracing::info!(
            commit = info.commit,
            bytes = info.bytes,
            "archive: base backup"
        );
        let mut state = self.state();
        state.last_base = Some((info.commit.unwrap_or(0), info.taken_at));
        state.need_base = false;
        Ok(())
    }

    /// Removes what is older than the retention window, keeping the newest base backup before
    /// it and everything after that base.
    fn retain(&self) -> Result<(), BackupError> {
        let Some(keep) = self.inner.options.keep else {
            return Ok(());
        };
        let cutoff =
            Timestamp::now().micros() - i64::try_from(keep.as_micros()).unwrap_or(i64::MAX);
        let target = &self.inner.target;
        let mut bases: Vec<_> = target
            .list("base/")?
            .into_iter()
            .filter_map(|(name, _)| Some((parse_base_name(name.rsplit('/').next()?)?, name)))
            .collect();
        bases.sort();
        // The newest base taken before the cutoff is where the window starts.
        let Some(start) = bases.iter().rposition(|((_, taken), _)| *taken <= cutoff) else {
            return Ok(());
        };
        let floor = bases[start].0.0;
        for (_, name) in &bases[..start] {
            target.delete(name)?;
        }
        for (name, _) in target.list("segments/")? {
            if let Some((_, last, _)) = parse_name(name.rsplit('/').next().unwrap_or(""))
                && last <= floor
            {
                target.delete(&name)?;
            }
        }
        Ok(())
    }

    fn gauges(&self) {
        let status = self.status();
        metrics::gauge!("pathdb_archive_lag_seconds").set(status.lag_seconds);
        metrics::gauge!("pathdb_archive_lag_commits").set(status.lag_commits as f64);
        if let Some((_, taken)) = status.last_base {
            metrics::gauge!("pathdb_archive_last_base_timestamp_seconds").set(taken as f64 / 1e6);
        }
    }

    /// Forgets a prepared commit that was not made: out of the buffer, or out of the spool
    /// segment a sync wrote it to.
    fn forget(&self, number: u64) {
        let mut state = self.state();
        state.last = number - 1;
        if state.buffer.last().is_some_and(|(n, _)| *n == number) {
            state.buffer.pop();
            return;
        }
        if let Some(path) = state.spooled_unsettled.take() {
            drop(state);
            if let Err(e) = truncate_segment(&self.inner.spool, &path, number - 1) {
                self.failed(&e);
            }
        }
    }
}

enum Claim {
    Refused(String),
    Unreachable(super::target::TargetError),
}

impl CommitTap for Archive {
    fn resume(&self, database: u64, applied: u64, replayed: &[Vec<u8>]) {
        let spool = &self.inner.spool;
        if let Err(e) = std::fs::create_dir_all(spool) {
            self.failed(&BackupError::io(spool.display(), e));
        }
        let newest = applied + replayed.len() as u64;
        let mut spooled = 0;
        for (_, last, name) in spool_segments(spool) {
            let path = spool.join(&name);
            let sound = std::fs::read(&path)
                .ok()
                .is_some_and(|bytes| Segment::decode(&name, &bytes).is_ok());
            if !sound {
                // Cut short by a crash before its rename completed, or damaged: its commits
                // are in the journal if they were never made durable in the file.
                tracing::warn!(segment = %name, "archive: a damaged spool segment is dropped");
                let _ = std::fs::remove_file(&path);
                continue;
            }
            if last > newest {
                // A prepared commit the file never made (killed before it): drop it.
                if let Err(e) = truncate_segment(spool, &path, newest) {
                    self.failed(&e);
                }
            }
            spooled = spooled.max(last.min(newest));
        }
        remove_temporaries(spool);
        let mut state = self.state();
        state.database = Some(database);
        state.applied_at_open = applied;
        state.last = newest;
        state.settled = newest;
        for (i, payload) in replayed.iter().enumerate() {
            let number = applied + 1 + i as u64;
            if number > spooled {
                state.buffer.push((number, payload.clone()));
            }
        }
    }

    fn commit(&self, number: u64, payload: &[u8]) {
        let mut state = self.state();
        if state.pending_since.is_none() {
            state.pending_since = commit_time(payload);
        }
        state.buffer.push((number, payload.to_vec()));
        state.last = number;
        state.settled = number;
    }

    fn prepare(&self, number: u64, payload: &[u8]) {
        let mut state = self.state();
        state.buffer.push((number, payload.to_vec()));
        state.last = number;
    }

    fn settle(&self, number: u64, committed: bool) {
        if committed {
            let mut state = self.state();
            state.settled = number;
            state.spooled_unsettled = None;
        } else {
            self.forget(number);
        }
    }

    fn sync(&self) {
        if let Err(e) = self.spool(true) {
            self.failed(&e);
        }
    }
}

/// The name of a base backup: its commit and when it was taken.
pub(crate) fn base_name(commit: u64, taken_at: i64) -> String {
    format!("base/{commit:020}-{taken_at}.{BACKUP_EXTENSION}")
}

/// What a base backup's name says: its commit and when it was taken.
pub(crate) fn parse_base_name(name: &str) -> Option<(u64, i64)> {
    let stem = name.strip_suffix(&format!(".{BACKUP_EXTENSION}"))?;
    let (commit, taken) = stem.split_once('-')?;
    Some((commit.parse().ok()?, taken.parse().ok()?))
}

/// The spool's segments, by first commit: (first, last, file name).
fn spool_segments(spool: &Path) -> Vec<(u64, u64, String)> {
    let Ok(entries) = std::fs::read_dir(spool) else {
        return Vec::new();
    };
    let mut out: Vec<_> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let (first, last, _) = parse_name(&name)?;
            Some((first, last, name))
        })
        .collect();
    out.sort();
    out
}

fn remove_temporaries(spool: &Path) {
    if let Ok(entries) = std::fs::read_dir(spool) {
        for entry in entries.filter_map(|e| e.ok()) {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".tmp") {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Writes `bytes` to `path` whole: a temporary file, synced, renamed, the directory synced.
fn write_synced(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    let temporary = PathBuf::from(temporary);
    {
        use std::io::Write;
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(bytes)?;
        file.sync_data()?;
    }
    std::fs::rename(&temporary, path)?;
    sync_dir(dir)
}

/// Rewrites the spool segment at `path` without its commits after `last` (removing it if none
/// is left).
fn truncate_segment(spool: &Path, path: &Path, last: u64) -> Result<(), BackupError> {
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let bytes = std::fs::read(path).map_err(|e| BackupError::io(path.display(), e))?;
    let mut segment = Segment::decode(&name, &bytes)?;
    segment.commits.retain(|(n, _)| *n <= last);
    std::fs::remove_file(path).map_err(|e| BackupError::io(path.display(), e))?;
    if segment.commits.is_empty() {
        return Ok(());
    }
    let fresh = spool.join(segment.name());
    write_synced(spool, &fresh, &segment.encode()).map_err(|e| BackupError::io(fresh.display(), e))
}
