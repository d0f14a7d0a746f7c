//! Group commit per change log. Every store write appends to its group's change log, and the
//! entries of one log are numbered one after another, so two writes to one group cannot commit
//! at once: before, each read the log's end (a `Query`) and raced the others for the next number,
//! and under load most `TransactWriteItems` lost that race and went again.
//!
//! Now a process commits the writes to one log one round at a time. The first write to arrive
//! leads: it sends its batch alone. Writes that arrive meanwhile queue; when the round is done,
//! the leader answers its own caller and hands the lead to the first queued write, which sends
//! everything queued that fits into one request (at most [`MAX_TRANSACTION_ITEMS`] operations,
//! [`ROUND_BYTES`] of records, no key twice) as one `TransactWriteItems`, with one log entry
//! holding all their changes (the store's [`join_log_entries`]; separate entries when a write's
//! own changes span several). A write is answered only once the request holding it was answered
//! (or settled, write.rs), so nothing is acknowledged before its own commit.
//!
//! Each log also remembers the last entry number this process committed: the next round numbers
//! from it without reading, and the entries' condition (the number is free) is the check. Another
//! process that appended meanwhile makes it fail; the round then reads the log's end and goes
//! again. So a write costs its plan's reads and one `TransactWriteItems`.

use crate::{DynamoBackend, MAX_TRANSACTION_ITEMS, retry};
use pathdb_store::backend::{Expect, Key, Record, WriteBatch, WriteError, WriteOp};
use pathdb_store::{StorageError, join_log_entries};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Mutex, MutexGuard};
use tokio::sync::oneshot;

/// A round stops taking writes at this many bytes of keys and records: a `TransactWriteItems`
/// request may hold at most 4 MB.
const ROUND_BYTES: usize = 3 << 20;
/// Idle logs remembered (their last entry number, for the next write's numbering) before they
/// are forgotten all at once; a forgotten log costs its next write one `Query`.
const MAX_IDLE_LOGS: usize = 100_000;

/// The logs this process writes to.
#[derive(Default)]
pub(crate) struct Logs {
    state: Mutex<HashMap<Key, Log>>,
}

#[derive(Default)]
struct Log {
    /// The greatest entry number this process saw committed; `None`: unknown, read the log.
    last: Option<u64>,
    /// A round is in flight; new writes queue.
    busy: bool,
    queue: VecDeque<Waiter>,
}

/// A queued write.
struct Waiter {
    batch: WriteBatch,
    turn: oneshot::Sender<Turn>,
}

/// What a queued write is told.
enum Turn {
    /// Its round was answered.
    Done(Result<(), WriteError>),
    /// Lead the next round: `own` (its own batch) first, then `others`.
    Lead {
        own: WriteBatch,
        others: Vec<Waiter>,
    },
}

impl Logs {
    fn lock(&self) -> MutexGuard<'_, HashMap<Key, Log>> {
        // Held only for queue and number updates that cannot panic half-way.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The last entry number of `log` this process committed, if known.
    pub(crate) fn last(&self, log: &Key) -> Option<u64> {
        self.lock().get(log).and_then(|l| l.last)
    }

    /// Entry `n` of `log` committed.
    pub(crate) fn committed(&self, log: &Key, n: u64) {
        let mut state = self.lock();
        if state.len() >= MAX_IDLE_LOGS && !state.contains_key(log) {
            state.retain(|_, l| l.busy);
        }
        let entry = state.entry(log.clone()).or_default();
        entry.last = Some(entry.last.map_or(n, |last| last.max(n)));
    }

    /// Answers now, without sending them, the writes queued for `log` whose condition the puts
    /// in `written` (key and new version) have made false: a condition on a put key expecting
    /// another version, or expecting it absent. Versions only grow, so the condition can never
    /// hold again; the store plans such a write anew. Without this, writers racing for one item
    /// (a counter) queue behind each other and each stale one costs a round of its own.
    pub(crate) fn fail_stale(&self, log: &Key, written: &HashMap<&Key, u64>) {
        let mut state = self.lock();
        let Some(entry) = state.get_mut(log) else {
            return;
        };
        let queue = std::mem::take(&mut entry.queue);
        for waiter in queue {
            let stale = waiter.batch.ops.iter().position(|op| {
                written.get(op.key()).is_some_and(|&version| {
                    op.expect()
                        .is_some_and(|expect| !expect.holds(Some(version)))
                })
            });
            match stale {
                Some(index) => {
                    let failed = Err(WriteError::ConditionFailed { index });
                    // A writer that is gone has nobody to tell.
                    let _ = waiter.turn.send(Turn::Done(failed));
                }
                None => entry.queue.push_back(waiter),
            }
        }
    }

    /// What this process knows of `log`'s end may be stale (another writer appended, or a
    /// write's outcome is unknown): read it again before numbering.
    pub(crate) fn forget(&self, log: &Key) {
        if let Some(entry) = self.lock().get_mut(log) {
            entry.last = None;
        }
    }
}

/// The log a batch appends to, when it appends to exactly one: such batches are group committed.
pub(crate) fn single_log(batch: &WriteBatch) -> Option<&Key> {
    let mut logs = batch.ops.iter().filter_map(|op| match op {
        WriteOp::Append { log, .. } => Some(log),
        _ => None,
    });
    let first = logs.next()?;
    logs.all(|log| log == first).then_some(first)
}

/// The keys and size of a round being built.
#[derive(Default)]
struct Round {
    keys: HashSet<Key>,
    ops: usize,
    bytes: usize,
}

impl Round {
    /// Takes `batch` into the round if it fits; the first batch always does.
    fn take(&mut self, batch: &WriteBatch) -> bool {
        let bytes: usize = batch
            .ops
            .iter()
            .map(|op| {
                let key = op.key();
                key.partition.len()
                    + key.sort.len()
                    + match op {
                        WriteOp::Put { record, .. } | WriteOp::Append { record, .. } => {
                            record.value.len()
                        }
                        WriteOp::Delete { .. } | WriteOp::Check { .. } => 0,
                    }
            })
            .sum();
        // Appends are numbered apart; any other key may appear once per request.
        let keys = || {
            batch
                .ops
                .iter()
                .filter(|op| !matches!(op, WriteOp::Append { .. }))
                .map(WriteOp::key)
        };
        let first = self.ops == 0;
        if !first
            && (self.ops + batch.ops.len() > MAX_TRANSACTION_ITEMS
                || self.bytes + bytes > ROUND_BYTES
                || keys().any(|k| self.keys.contains(k)))
        {
            return false;
        }
        self.keys.extend(keys().cloned());
        self.ops += batch.ops.len();
        self.bytes += bytes;
        true
    }
}

/// Takes from `queue` the queued writes that fit in one round, in order (a write that does not
/// fit waits for a later round, ahead of the writes after it).
fn take_round(queue: &mut VecDeque<Waiter>) -> Vec<Waiter> {
    let mut round = Round::default();
    let mut taken = Vec::new();
    let mut kept = VecDeque::new();
    while let Some(waiter) = queue.pop_front() {
        if round.ops >= MAX_TRANSACTION_ITEMS {
            queue.push_front(waiter);
            break;
        }
        if round.take(&waiter.batch) {
            taken.push(waiter);
        } else {
            kept.push_back(waiter);
        }
    }
    kept.append(queue);
    *queue = kept;
    taken
}

/// While a round is in flight: when dropped (the round answered, or its future dropped), hands
/// the lead to the next queued write, or marks the log idle.
struct Leading<'a> {
    logs: &'a Logs,
    log: &'a Key,
}

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        let mut state = self.logs.lock();
        let Some(entry) = state.get_mut(self.log) else {
            return;
        };
        loop {
            let mut round = take_round(&mut entry.queue);
            if round.is_empty() {
                entry.busy = false;
                return;
            }
            let first = round.remove(0);
            let lead = Turn::Lead {
                own: first.batch,
                others: round,
            };
            match first.turn.send(lead) {
                Ok(()) => return,
                // Its writer is gone (its future was dropped): the round's first write is
                // dropped unanswered, as if never sent; the others lead in its place.
                Err(Turn::Lead { others, .. }) => {
                    for waiter in others.into_iter().rev() {
                        entry.queue.push_front(waiter);
                    }
                }
                Err(Turn::Done(_)) => return,
            }
        }
    }
}

impl DynamoBackend {
    /// Commits `batch`, whose appends all go to `log`, in the log's next round (module docs).
    pub(crate) async fn group_commit(
        &self,
        log: &Key,
        batch: WriteBatch,
    ) -> Result<(), WriteError> {
        let queued = {
            let mut state = self.logs.lock();
            let entry = state.entry(log.clone()).or_default();
            if entry.busy {
                let (turn, wait) = oneshot::channel();
                entry.queue.push_back(Waiter { batch, turn });
                Err(wait)
            } else {
                entry.busy = true;
                Ok(batch)
            }
        };
        let (own, others) = match queued {
            Ok(batch) => (batch, Vec::new()),
            Err(wait) => match wait.await {
                Ok(Turn::Done(result)) => return result,
                Ok(Turn::Lead { own, others }) => (own, others),
                Err(_) => {
                    return Err(StorageError::msg(
                        "internal error: a group commit dropped a queued write",
                    )
                    .into());
                }
            },
        };
        let _leading = Leading {
            logs: &self.logs,
            log,
        };
        let (batches, turns): (Vec<_>, Vec<_>) = std::iter::once((own, None))
            .chain(others.into_iter().map(|w| (w.batch, Some(w.turn))))
            .unzip();
        let mut own = Ok(());
        let results = self.commit_appending(&batches).await;
        // Before the lead is handed on: queued writes that this round's puts have made fail.
        let written: HashMap<&Key, u64> = batches
            .iter()
            .zip(&results)
            .filter(|(_, result)| result.is_ok())
            .flat_map(|(batch, _)| &batch.ops)
            .filter_map(|op| match op {
                WriteOp::Put { key, record, .. } => Some((key, record.version)),
                _ => None,
            })
            .collect();
        if !written.is_empty() {
            self.logs.fail_stale(log, &written);
        }
        for (turn, result) in turns.into_iter().zip(results) {
            match turn {
                None => own = result,
                // A writer that is gone has nobody to tell.
                Some(turn) => drop(turn.send(Turn::Done(result))),
            }
        }
        own
    }

    /// Commits `batches` (each with appends) in one `TransactWriteItems`, each append becoming a
    /// put at the next number of its log, conditional on that number being free; one result per
    /// batch. A batch whose own condition fails is answered so and the others go again without
    /// it; when only an entry's condition fails, another writer appended first: read the log's
    /// end and go again. Entries become visible in number order, as [`WriteOp::Append`]
    /// promises: a round numbers after entries that committed (read, or committed by this
    /// process).
    pub(crate) async fn commit_appending(
        &self,
        batches: &[WriteBatch],
    ) -> Vec<Result<(), WriteError>> {
        let mut results: Vec<Option<Result<(), WriteError>>> =
            batches.iter().map(|_| None).collect();
        let mut attempt = 0u32;
        loop {
            let pending: Vec<usize> = (0..batches.len())
                .filter(|&b| results[b].is_none())
                .collect();
            if pending.is_empty() {
                break;
            }
            let numbered = match self.number(batches, &pending).await {
                Ok(numbered) => numbered,
                Err(e) => {
                    for &b in &pending {
                        results[b] = Some(Err(e.clone().into()));
                    }
                    break;
                }
            };
            let Numbered {
                ops,
                entries,
                owners,
                ends,
            } = numbered;
            match self.transact(ops, &entries).await {
                Ok(()) => {
                    for (log, n) in &ends {
                        self.logs.committed(log, *n);
                    }
                    for &b in &pending {
                        results[b] = Some(Ok(()));
                    }
                }
                Err(WriteError::ConditionFailed { index }) if entries.contains(&index) => {
                    // Another writer took the number: read the log's end again. A short random
                    // pause spreads racing processes out.
                    for (log, _) in &ends {
                        self.logs.forget(log);
                    }
                    attempt += 1;
                    let jitter = retry::random_u64() % (1000 << attempt.min(6));
                    tokio::time::sleep(std::time::Duration::from_micros(jitter)).await;
                }
                Err(WriteError::ConditionFailed { index }) => {
                    let Some(&(b, local)) = owners.get(index) else {
                        let e = StorageError::msg("a failed condition names no operation");
                        for &b in &pending {
                            results[b] = Some(Err(e.clone().into()));
                        }
                        break;
                    };
                    results[b] = Some(Err(WriteError::ConditionFailed { index: local }));
                }
                Err(WriteError::Storage(e)) => {
                    // Whether it committed may be unknown: number from the log itself next time.
                    for (log, _) in &ends {
                        self.logs.forget(log);
                    }
                    for &b in &pending {
                        results[b] = Some(Err(e.clone().into()));
                    }
                }
            }
        }
        results.into_iter().map(|r| r.unwrap_or(Ok(()))).collect()
    }

    /// The request for the `pending` batches: their operations in order, appends numbered. When
    /// each batch is one whole commit logged in the same log (a round's usual shape), their
    /// entries are joined into one ([`join_log_entries`]): one entry per round, not per write,
    /// which saves the log's partition a write per batch.
    async fn number(
        &self,
        batches: &[WriteBatch],
        pending: &[usize],
    ) -> Result<Numbered, StorageError> {
        let mut numbered = Numbered::default();
        let joined = joined_entry(batches, pending);
        let mut first_append = None;
        for &b in pending {
            for (local, op) in batches[b].ops.iter().enumerate() {
                let WriteOp::Append { log, record } = op else {
                    numbered.owners.push((b, local));
                    numbered.ops.push(op.clone());
                    continue;
                };
                if joined.is_some() {
                    first_append.get_or_insert((b, local));
                    continue;
                }
                numbered.owners.push((b, local));
                self.push_entry(&mut numbered, log, record).await?;
            }
        }
        if let (Some((log, record)), Some(owner)) = (&joined, first_append) {
            numbered.owners.push(owner);
            self.push_entry(&mut numbered, log, record).await?;
        }
        numbered.drop_checks_of_entries();
        Ok(numbered)
    }

    /// Adds the put of `record` at the next number of `log`.
    async fn push_entry(
        &self,
        numbered: &mut Numbered,
        log: &Key,
        record: &Record,
    ) -> Result<(), StorageError> {
        let n = match numbered.ends.iter_mut().find(|(l, _)| l == log) {
            Some((_, n)) => {
                *n += 1;
                *n
            }
            None => {
                let last = match self.logs.last(log) {
                    Some(last) => last,
                    None => self.last_log_number(log).await?,
                };
                numbered.ends.push((log.clone(), last + 1));
                last + 1
            }
        };
        numbered.entries.push(numbered.ops.len());
        numbered.ops.push(WriteOp::Put {
            key: Key {
                partition: log.partition.clone(),
                sort: pathdb_store::backend::log_entry(&log.sort, n),
            },
            record: record.clone(),
            expect: Some(Expect::Absent),
        });
        Ok(())
    }
}

/// The one entry for the `pending` batches' appends, when there are several batches, each
/// appends exactly once, all to the same log, and their entries join.
fn joined_entry(batches: &[WriteBatch], pending: &[usize]) -> Option<(Key, Record)> {
    if pending.len() < 2 {
        return None;
    }
    let mut log: Option<&Key> = None;
    let mut records = Vec::with_capacity(pending.len());
    for &b in pending {
        let mut appends = batches[b].ops.iter().filter_map(|op| match op {
            WriteOp::Append { log, record } => Some((log, record)),
            _ => None,
        });
        let (this, record) = appends.next()?;
        if appends.next().is_some() || log.is_some_and(|l| l != this) {
            return None;
        }
        log = Some(this);
        records.push(record);
    }
    Some((log?.clone(), join_log_entries(&records)?))
}

/// One request's operations, built from several batches.
#[derive(Default)]
struct Numbered {
    ops: Vec<WriteOp>,
    /// Indexes into `ops` of the change log entries.
    entries: Vec<usize>,
    /// Per operation: its batch and its index there.
    owners: Vec<(usize, usize)>,
    /// Per log: the number of its last entry in this request.
    ends: Vec<(Key, u64)>,
}

impl Numbered {
    /// Removes the checks that an entry this request puts is absent (a listing check's: the log
    /// has no entry after the last one it read, [`WriteOp::Check`]). The entry's put is
    /// conditional on that very thing, and a request may name a key once. A check of an entry
    /// numbered otherwise stays, and fails if another writer took that number.
    fn drop_checks_of_entries(&mut self) {
        let entry_keys: HashSet<Key> = self
            .entries
            .iter()
            .map(|&i| self.ops[i].key().clone())
            .collect();
        let covered = |op: &WriteOp| matches!(op, WriteOp::Check { key, expect: Expect::Absent } if entry_keys.contains(key));
        if !self.ops.iter().any(covered) {
            return;
        }
        let ops = std::mem::take(&mut self.ops);
        let owners = std::mem::take(&mut self.owners);
        let entries: HashSet<usize> = self.entries.drain(..).collect();
        for (i, (op, owner)) in ops.into_iter().zip(owners).enumerate() {
            if covered(&op) {
                continue;
            }
            if entries.contains(&i) {
                self.entries.push(self.ops.len());
            }
            self.ops.push(op);
            self.owners.push(owner);
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn key(sort: &str) -> Key {
        Key {
            partition: b"g".to_vec(),
            sort: sort.as_bytes().to_vec(),
        }
    }

    fn record(size: usize) -> Record {
        Record {
            version: 1,
            created_at: 0,
            modified_at: 0,
            expires_at: None,
            value: vec![b'x'; size],
        }
    }

    /// A write of `item` logged in `log`, with `size` bytes of value.
    fn write(item: &str, size: usize) -> WriteBatch {
        WriteBatch {
            ops: vec![
                WriteOp::Put {
                    key: key(item),
                    record: record(size),
                    expect: None,
                },
                WriteOp::Append {
                    log: key("log"),
                    record: record(10),
                },
            ],
        }
    }

    fn queue(batches: Vec<WriteBatch>) -> VecDeque<Waiter> {
        batches
            .into_iter()
            .map(|batch| Waiter {
                batch,
                turn: oneshot::channel().0,
            })
            .collect()
    }

    fn items(waiters: &[Waiter]) -> Vec<String> {
        waiters
            .iter()
            .map(|w| String::from_utf8_lossy(&w.batch.ops[0].key().sort).into_owned())
            .collect()
    }

    #[test]
    fn a_round_takes_what_fits_in_order_and_leaves_the_rest_in_order() {
        // Two writes of one item cannot share a request; the second waits, ahead of later ones.
        let mut q = queue(vec![
            write("a", 1),
            write("b", 1),
            write("a", 1),
            write("c", 1),
        ]);
        assert_eq!(items(&take_round(&mut q)), ["a", "b", "c"]);
        assert_eq!(items(&take_round(&mut q)), ["a"]);
    }

    #[test]
    fn a_round_stays_within_the_request_limits() {
        // 2 operations each: 50 writes fill a request.
        let mut q = queue((0..60).map(|i| write(&format!("i{i}"), 1)).collect());
        assert_eq!(take_round(&mut q).len(), 50);
        assert_eq!(q.len(), 10);
        assert_eq!(items(&take_round(&mut q))[0], "i50");
        // 1.2 MB each: two fit under the byte budget; the first always goes, however large.
        let mut q = queue((0..4).map(|i| write(&format!("b{i}"), 1_200_000)).collect());
        assert_eq!(take_round(&mut q).len(), 2);
        let mut q = queue(vec![write("huge", 5_000_000), write("small", 1)]);
        assert_eq!(items(&take_round(&mut q)), ["huge"]);
    }

    #[test]
    fn only_batches_appending_to_one_log_are_grouped() {
        assert_eq!(single_log(&write("a", 1)), Some(&key("log")));
        let mut two = write("a", 1);
        two.ops.push(WriteOp::Append {
            log: key("other"),
            record: record(1),
        });
        assert_eq!(single_log(&two), None);
        let none = WriteBatch {
            ops: vec![write("a", 1).ops.remove(0)],
        };
        assert_eq!(single_log(&none), None);
    }

    /// A write to `item` expecting `expect`, logged in the test log.
    fn conditional(item: &str, expect: Expect) -> WriteBatch {
        let mut batch = write(item, 1);
        if let WriteOp::Put { expect: e, .. } = &mut batch.ops[0] {
            *e = Some(expect);
        }
        batch
    }

    #[test]
    fn queued_writes_a_round_made_stale_are_answered_at_once() {
        let logs = Logs::default();
        let log = key("log");
        let mut receivers = Vec::new();
        {
            let mut state = logs.lock();
            let entry = state.entry(log.clone()).or_default();
            for batch in [
                conditional("a", Expect::Version(3)), // stale: "a" is at 4 now
                conditional("a", Expect::Version(4)), // holds
                conditional("a", Expect::Absent),     // stale
                conditional("b", Expect::Version(3)), // another item
                write("a", 1),                        // no condition
            ] {
                let (turn, wait) = oneshot::channel();
                entry.queue.push_back(Waiter { batch, turn });
                receivers.push(wait);
            }
        }
        let a = key("a");
        logs.fail_stale(&log, &HashMap::from([(&a, 4)]));
        let kept = {
            let mut state = logs.lock();
            let queue = &mut state.get_mut(&log).expect("the log").queue;
            items(queue.make_contiguous())
        };
        assert_eq!(kept, ["a", "b", "a"]);
        for (i, mut wait) in receivers.into_iter().enumerate() {
            let answered = wait.try_recv();
            match i {
                0 | 2 => assert!(matches!(
                    answered,
                    Ok(Turn::Done(Err(WriteError::ConditionFailed { index: 0 })))
                )),
                _ => assert!(answered.is_err(), "write {i} was answered"),
            }
        }
    }

    #[test]
    fn the_last_number_only_grows_and_can_be_forgotten() {
        let logs = Logs::default();
        let log = key("log");
        assert_eq!(logs.last(&log), None);
        logs.committed(&log, 5);
        logs.committed(&log, 3);
        assert_eq!(logs.last(&log), Some(5));
        logs.forget(&log);
        assert_eq!(logs.last(&log), None);
    }

    #[test]
    fn a_check_of_the_entry_the_request_puts_is_left_to_the_entry() {
        let put = |sort: &str, expect| WriteOp::Put {
            key: key(sort),
            record: record(1),
            expect,
        };
        let check = |sort: &str| WriteOp::Check {
            key: key(sort),
            expect: Expect::Absent,
        };
        let mut numbered = Numbered {
            ops: vec![
                put("a", None),
                check("log-5"),
                check("log-4"),
                put("log-5", Some(Expect::Absent)),
            ],
            entries: vec![3],
            owners: vec![(0, 0), (0, 1), (0, 2), (0, 3)],
            ends: Vec::new(),
        };
        numbered.drop_checks_of_entries();
        // The check of entry 5 goes (the entry's put is conditional on the same); the check of
        // entry 4, another writer's number, stays and fails if it was taken.
        assert_eq!(
            numbered.ops,
            [
                put("a", None),
                check("log-4"),
                put("log-5", Some(Expect::Absent))
            ]
        );
        assert_eq!(numbered.entries, [2]);
        assert_eq!(numbered.owners, [(0, 0), (0, 2), (0, 3)]);
    }
}
