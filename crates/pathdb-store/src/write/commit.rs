//! The one way a batch reaches the backend: [`send`] writes it and wakes the change feeds of the
//! groups whose logs it appended to; [`Db::until_committed`] plans and sends again while a batch
//! meets a concurrent change; [`execute`] and [`execute_queued`] do so for operations, planned
//! again inside a group commit where the backend offers it. Every writer of the store (the
//! operations, definitions, the sweeper, imports, subtree jobs, alias builds, the set-up an open
//! writes) commits here: this is the only module that calls `Backend::write`.

use crate::backend::{Backend, Key, Reader, Record, Replan, WriteBatch, WriteError, WriteOp};
use crate::encoding::changelog::TrimSchedule;
use crate::encoding::token::TokenKey;
use crate::feed::waiters::{ChangedGroups, Waiters};
use crate::model::error::{Error, StorageError};
use crate::model::options::{DEFAULT_KNOWN_RECORDS, StoreOptions};
use crate::namespaces::definitions::Namespaces;
use crate::write::known::{Guessed, Known, guessable, single_item};
use crate::write::ops::{TxOp, TxResult};
use crate::write::pipeline::{backoff, check_batch_size, check_ops, plan};
use crate::write::plan::{Plan, Settings};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, PoisonError};

/// How a sent batch ended, when storage did not fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sent {
    /// It committed.
    Committed,
    /// A condition of its operation `index` did not hold: something changed since the read.
    Changed {
        /// The operation whose condition failed.
        index: usize,
    },
}

/// Sends `batch`; after it commits, wakes the feeds that wait on the groups it logged changes
/// in (`waiters`: none while a store opens, before any feed can wait).
///
/// # Errors
/// Storage failures.
pub(crate) fn send<B: Backend + ?Sized>(
    backend: &B,
    waiters: Option<&Waiters>,
    batch: WriteBatch,
) -> Result<Sent, Error> {
    let wake = waiters.map(|waiters| (waiters, ChangedGroups::of(&batch)));
    sent(backend.write(batch), wake)
}

/// What a write answered, the waiters of the groups in `wake` woken if it committed.
fn sent(
    written: Result<(), WriteError>,
    wake: Option<(&Waiters, ChangedGroups)>,
) -> Result<Sent, Error> {
    match written {
        Ok(()) => {
            if let Some((waiters, groups)) = wake {
                waiters.notify(&groups);
            }
            Ok(Sent::Committed)
        }
        Err(WriteError::ConditionFailed { index }) => Ok(Sent::Changed { index }),
        Err(WriteError::Storage(e)) => Err(e.into()),
    }
}

/// One attempt of [`Db::until_committed`].
pub(crate) enum Attempt<T> {
    /// Send this batch; if it commits, the answer is `T`.
    Send(WriteBatch, T),
    /// Nothing to send: the answer is `T`.
    Done(T),
}

/// One open database: the backend and what every writer of it shares. The store holds it in an
/// `Arc`; the jobs (sweeper, alias builds) hold a weak reference.
pub(crate) struct Db<B> {
    /// Where records are stored.
    pub(crate) backend: B,
    /// The store's options.
    pub(crate) options: StoreOptions,
    /// The namespace definitions, schemas compiled (namespaces/).
    pub(crate) namespaces: Namespaces,
    /// The change feeds waiting for a commit, per group; woken after each commit.
    pub(crate) waiters: Waiters,
    /// Seals the tokens this database hands out (encoding/token.rs).
    pub(crate) tokens: TokenKey,
    /// Plans made, to spread the removal of expired log entries (stages/changelog.rs).
    plans: AtomicU64,
    /// When each group's change log next needs trimming (stages/changelog.rs).
    trims: TrimSchedule,
    /// The records writes in groups without a change log are planned on (write/known.rs).
    pub(crate) known: Known,
    /// This database is marked for compact change log entries (jobs/open.rs).
    compact_log: bool,
}

impl<B: Backend> Db<B> {
    /// The shared state of a store over `backend`.
    pub(crate) fn new(
        backend: B,
        options: StoreOptions,
        namespaces: Namespaces,
        tokens: TokenKey,
        compact_log: bool,
    ) -> Db<B> {
        let known = Known::new(
            options
                .known_records
                .unwrap_or(if backend.fast_point_reads() {
                    0
                } else {
                    DEFAULT_KNOWN_RECORDS
                }),
        );
        Db {
            backend,
            known,
            options,
            namespaces,
            waiters: Waiters::new(),
            tokens,
            plans: AtomicU64::new(0),
            trims: TrimSchedule::default(),
            compact_log,
        }
    }

    /// The time now, by the store's clock, in microseconds.
    pub(crate) fn now(&self) -> i64 {
        self.options.clock.now().0
    }

    /// What every plan of this store needs besides a snapshot.
    pub(crate) fn settings(&self) -> Settings<'_> {
        Settings {
            namespaces: &self.namespaces,
            max_batch_ops: self.backend.max_batch_ops(),
            change_retention: self.options.change_retention,
            plans: &self.plans,
            trims: &self.trims,
            tokens: &self.tokens,
            compact_log: self.compact_log,
        }
    }

    /// [`send`], waking this store's feeds.
    ///
    /// # Errors
    /// Storage failures.
    pub(crate) fn send(&self, batch: WriteBatch) -> Result<Sent, Error> {
        send(&self.backend, Some(&self.waiters), batch)
    }

    /// Runs `attempt` and sends the batch it plans until one commits (or it has nothing to
    /// send); a batch that met a concurrent change is planned again, from a new read.
    ///
    /// # Errors
    /// What `attempt` returns; storage failures.
    pub(crate) fn until_committed<T>(
        &self,
        mut attempt: impl FnMut() -> Result<Attempt<T>, Error>,
    ) -> Result<T, Error> {
        loop {
            match attempt()? {
                Attempt::Done(answer) => return Ok(answer),
                Attempt::Send(batch, answer) => {
                    if self.send(batch)? == Sent::Committed {
                        return Ok(answer);
                    }
                }
            }
        }
    }

    /// Plans `ops` on the state `reader` shows (a snapshot, or a group commit's state when
    /// planned again there), within the backend's batch size.
    fn plan_on<R: Reader + ?Sized>(&self, reader: &R, ops: &[TxOp]) -> Result<Plan, Error> {
        let plan = plan(&self.settings().context(reader, self.now()), ops)?;
        check_batch_size(&plan, self.backend.max_batch_ops())?;
        Ok(plan)
    }

    /// Plans `ops` from a new snapshot.
    fn plan(&self, ops: &[TxOp]) -> Result<Plan, Error> {
        self.plan_on(&self.backend.reader()?, ops)
    }

    /// The item `ops` may be planned on what is known at ([`guessable`]), if this store plans
    /// on what it knows.
    fn guessable(&self, ops: &[TxOp]) -> Result<Option<Key>, Error> {
        // Transactions and other operations need no definitions read here.
        if !self.known.enabled() || single_item(ops).is_none() {
            return Ok(None);
        }
        let definitions = self.namespaces.current(&self.backend.reader()?)?;
        Ok(guessable(ops, &definitions))
    }

    /// Plans `ops` with the read of `key` answered by what is known. A plan the guess fails
    /// (the caller's condition, a delete of what it guessed absent) is made again on a read: a
    /// guess never answers for the store.
    fn plan_guessing(&self, ops: &[TxOp], key: &Key) -> Result<Plan, Error> {
        let reader = self.backend.reader()?;
        let guessed = Guessed {
            inner: &reader,
            key,
            guess: self.known.guess(key),
        };
        match self.plan_on(&guessed, ops) {
            // Only a write the backend checks against the guess rests on it: a plan that writes
            // nothing there (a delete of what it guessed absent) would answer from the guess.
            Ok(plan) if checks(&plan.batch, key) => Ok(plan),
            _ => self.plan_on(&reader, ops),
        }
    }
}

/// Whether `batch` writes at `key` on a condition (the backend checks what the plan read).
fn checks(batch: &WriteBatch, key: &Key) -> bool {
    batch.ops.iter().any(|op| match op {
        WriteOp::Put {
            key: at, expect, ..
        }
        | WriteOp::Delete { key: at, expect } => at == key && expect.is_some(),
        _ => false,
    })
}

/// The record `batch` puts at `key` (a tombstone too), if it does.
fn written_at(batch: &WriteBatch, key: &Key) -> Option<Record> {
    batch.ops.iter().find_map(|op| match op {
        WriteOp::Put {
            key: at, record, ..
        } if at == key => Some(record.clone()),
        _ => None,
    })
}

/// Results per operation, and whether each found a live item at its path.
pub(crate) type Outcome = (Vec<TxResult>, Vec<bool>);

/// What a plan decided: an [`Outcome`], or why the operations cannot be written.
type Planned = Result<Outcome, Error>;

/// What the plans made inside a group commit ([`replan`]) left for the caller.
#[derive(Default)]
struct Replanned {
    /// What the last of them decided.
    decided: Option<Planned>,
    /// The groups of their batches' change log entries: one of them may be what committed.
    groups: ChangedGroups,
}

/// Reads, checks and commits `ops`, re-running after a concurrent change until the write
/// commits or the caller's own condition fails.
///
/// The retry is unbounded on purpose: a batch fails only when a key it read changed, that is,
/// when another write committed in between (to the same item, or to the group of a listing it
/// checks), so every lost race is someone else's progress (lock-free). A bound turned
/// contention into an [`Error::Conflict`] from a put or delete that has no condition, which
/// callers neither expect nor can act on: with eight writers on one item and group commit (all
/// but one batch of a group lose), 16 attempts ran out within a dozen puts each. Transactions
/// retry the same way, so their failed conditions are always [`Error::ConditionFailed`] or
/// [`Error::ListChanged`], never a conflict.
///
/// # Errors
/// The operations' own failures (conditions, limits, schemas); storage failures.
pub(crate) fn execute<B: Backend>(db: &Arc<Db<B>>, ops: &[TxOp]) -> Result<Outcome, Error> {
    check_ops(ops, db.now())?;
    let mut attempt = 0u32;
    // The item a plan may take from what is known (write/known.rs). Only the first attempt
    // guesses (once a guess met another state, every plan reads), and what any attempt
    // commits there is known after.
    let known_item = db.guessable(ops)?;
    let mut guessing = known_item.is_some();
    loop {
        let plan = match &known_item {
            Some(key) if std::mem::take(&mut guessing) => db.plan_guessing(ops, key)?,
            _ => db.plan(ops)?,
        };
        let learned = known_item
            .as_ref()
            .map(|key| (key, written_at(&plan.batch, key)));
        let mut groups = ChangedGroups::of(&plan.batch);
        let replanned = Arc::new(Mutex::new(Replanned::default()));
        let written = db
            .backend
            .write_replanning(plan.batch, replan(db, ops, Arc::clone(&replanned)));
        // What a plan made inside the commit decided, if the backend made one.
        let Replanned {
            decided: replanned,
            groups: replanned_groups,
        } = std::mem::take(&mut *replanned.lock().unwrap_or_else(PoisonError::into_inner));
        // Either the first plan's batch or a replanned one committed: wake both's groups (a
        // replanned create may have picked another new group).
        groups.merge(replanned_groups);
        if let Some((key, record)) = &learned {
            match (&written, &replanned, record) {
                // Committed as planned: what it wrote is known.
                (Ok(()), None, Some(record)) => db.known.learn(key, record),
                // Anything else (a failed condition, a plan made again inside the commit, a
                // write whose outcome is unknown): forget, and read next time.
                _ => db.known.forget(key),
            }
        }
        match sent(written, Some((&db.waiters, groups)))? {
            Sent::Committed => {
                return Ok(match replanned {
                    Some(Ok(outcome)) => outcome,
                    _ => (plan.results, plan.found),
                });
            }
            Sent::Changed { index } => {
                // Planned again on the state it met, it failed the caller's condition or patch.
                if let Some(Err(e)) = replanned {
                    return Err(e);
                }
                // A generated id, a sequence or a change log's end that someone else took
                // meanwhile: racers for one all read the same state, and a short random pause
                // spreads them out instead of replanning in lockstep.
                if plan.generated.get(index).copied().unwrap_or(false) {
                    attempt += 1;
                    backoff(attempt);
                }
            }
        }
    }
}

/// For [`Backend::write_replanning`]: plans `ops` again on the state a batch met inside a group
/// commit, leaving what that plan decided (its results, or why it cannot be written) and the
/// groups its batch logs changes in, in `outcome`.
fn replan<B: Backend>(db: &Arc<Db<B>>, ops: &[TxOp], outcome: Arc<Mutex<Replanned>>) -> Replan {
    // Weak: the committer thread may drop the closure after the caller (and the store) are
    // gone, and the last owner of the store must not be the thread it joins on drop. While the
    // closure runs, the caller waits for its commit, holding the store.
    let db = Arc::downgrade(db);
    let ops = ops.to_vec();
    Box::new(move |reader: &dyn Reader| {
        let db = db.upgrade()?;
        let (batch, decided) = match db.plan_on(reader, &ops) {
            Ok(plan) => (Some(plan.batch), Ok((plan.results, plan.found))),
            Err(e) => (None, Err(e)),
        };
        let mut outcome = outcome.lock().unwrap_or_else(PoisonError::into_inner);
        outcome.decided = Some(decided);
        if let Some(batch) = &batch {
            outcome.groups.merge(ChangedGroups::of(batch));
        }
        batch
    })
}

/// [`execute`] for a caller on an async runtime, when the backend reads without blocking and
/// queues writes: it plans on the calling thread and awaits the commit instead of blocking a
/// thread until the commit is durable. Elsewhere it blocks like `execute`.
///
/// # Errors
/// As [`execute`].
pub(crate) async fn execute_queued<B: Backend>(db: &Db<B>, ops: &[TxOp]) -> Result<Outcome, Error> {
    check_ops(ops, db.now())?;
    // The same loop as `execute`: only the wait for the commit differs.
    loop {
        // The reader is let go before the commit is awaited: it pins a snapshot.
        let (queued, results, found, groups) = {
            let reader = db.backend.reader()?;
            let Plan {
                batch,
                results,
                found,
                ..
            } = db.plan_on(&reader, ops)?;
            let groups = ChangedGroups::of(&batch);
            // Every expectation of the plan is a read of `reader`: the backend may spare
            // reading again a key nothing wrote since.
            let queued = db.backend.write_queued_planned_on(batch, &reader);
            (queued, results, found, groups)
        };
        let written = match queued {
            Ok(pending) => pending.await,
            Err(batch) => db.backend.write(batch),
        };
        if sent(written, Some((&db.waiters, groups)))? == Sent::Committed {
            return Ok((results, found));
        }
    }
}

/// The single result of an outcome of one operation.
///
/// # Errors
/// A storage error if the plan left none (a bug).
pub(crate) fn only_result((mut results, mut found): Outcome) -> Result<(TxResult, bool), Error> {
    match (results.pop(), found.pop()) {
        (Some(result), Some(found)) => Ok((result, found)),
        _ => Err(StorageError::msg("a write returned no result").into()),
    }
}
