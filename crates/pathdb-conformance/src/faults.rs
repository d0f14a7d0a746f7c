//! Fault injection: [`Faulty`] wraps any backend and fails its reads and writes at random
//! points, and [`fault_injection`] runs writers through it and checks what a database promises
//! when storage fails:
//!
//! - nothing acknowledged is lost: each item ends as its last acknowledged write left it, or as
//!   a later write whose outcome was unknown;
//! - nothing refused is visible: a write that failed with a storage error other than
//!   [`StorageErrorKind::OutcomeUnknown`] left no trace, in the items or in the change feed;
//! - nothing is half-written: both items of every two-group transaction agree;
//! - the change feed holds each applied write exactly once, in order;
//! - once the faults stop, the same store works, without a reopen.
//!
//! A write fails in one of two ways: refused before it reaches the backend
//! ([`StorageErrorKind::Unavailable`]: nothing was written), or applied and then answered with an
//! error ([`StorageErrorKind::OutcomeUnknown`]: the answer was lost). Reads fail when the reader
//! is opened or at any of its calls.

use crate::{Rng, path};
use pathdb_keys::KeyPath;
use pathdb_store::backend::{
    Backend, Direction, Key, Reader, Record, RecordView, Replan, SortRange, WriteBatch, WriteError,
};
use pathdb_store::{
    Change, ChangeToken, Error, Json, PutOptions, StorageError, StorageErrorKind, Store,
    StoreOptions, Transaction, TxOp,
};
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// How often [`Faulty`] fails each kind of call while on: one call in `n` (0: never).
#[derive(Clone, Copy, Debug)]
pub struct FaultRates {
    /// Opening a reader, and each of its calls.
    pub read: u64,
    /// A write refused before it reaches the backend.
    pub refuse_write: u64,
    /// A write applied, then answered with an error.
    pub lose_answer: u64,
}

impl Default for FaultRates {
    fn default() -> Self {
        FaultRates {
            read: 40,
            refuse_write: 8,
            lose_answer: 12,
        }
    }
}

/// What [`Faulty`] injected.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Injected {
    /// Failed reader opens and reader calls.
    pub reads: u64,
    /// Writes refused before the backend.
    pub refused_writes: u64,
    /// Writes applied whose answer was replaced by an error.
    pub lost_answers: u64,
}

/// A backend that fails reads and writes at random (seeded) points while [`Faulty::set_on`].
///
/// The first write while on is refused and the first one applied after that loses its answer,
/// whatever the dice say: the writers' interleaving decides which roll meets which call (the
/// store may also gather several writes into one backend write), so a short run could
/// otherwise meet neither kind.
pub struct Faulty<B> {
    inner: B,
    rates: FaultRates,
    on: AtomicBool,
    refused_once: AtomicBool,
    lost_once: AtomicBool,
    rng: Mutex<Rng>,
    reads: AtomicU64,
    refused: AtomicU64,
    lost: AtomicU64,
}

impl<B: Backend> Faulty<B> {
    /// Wraps `inner`, off until [`Faulty::set_on`].
    pub fn new(inner: B, rates: FaultRates, seed: u64) -> Self {
        Faulty {
            inner,
            rates,
            on: AtomicBool::new(false),
            refused_once: AtomicBool::new(false),
            lost_once: AtomicBool::new(false),
            rng: Mutex::new(Rng(seed | 1)),
            reads: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            lost: AtomicU64::new(0),
        }
    }

    /// Starts or stops injecting.
    pub fn set_on(&self, on: bool) {
        self.on.store(on, Ordering::SeqCst);
    }

    /// What was injected so far.
    pub fn injected(&self) -> Injected {
        Injected {
            reads: self.reads.load(Ordering::SeqCst),
            refused_writes: self.refused.load(Ordering::SeqCst),
            lost_answers: self.lost.load(Ordering::SeqCst),
        }
    }

    /// The wrapped backend.
    pub fn inner(&self) -> &B {
        &self.inner
    }

    /// Whether to fail this call, one in `rate`.
    fn roll(&self, rate: u64) -> bool {
        rate > 0
            && self.on.load(Ordering::SeqCst)
            && self
                .rng
                .lock()
                .map(|mut r| r.below(rate) == 0)
                .unwrap_or(false)
    }

    /// True once, for the first call while on, if this kind of fault is injected at all.
    fn first_time(&self, once: &AtomicBool, rate: u64) -> bool {
        rate > 0 && self.on.load(Ordering::SeqCst) && !once.swap(true, Ordering::SeqCst)
    }

    fn read_fault(&self) -> Result<(), StorageError> {
        if self.roll(self.rates.read) {
            self.reads.fetch_add(1, Ordering::SeqCst);
            return Err(
                StorageError::msg("injected read failure").with_kind(StorageErrorKind::Unavailable)
            );
        }
        Ok(())
    }

    /// Refuses the write, or runs it and then loses its answer, or just runs it.
    fn faulty_write(
        &self,
        write: impl FnOnce() -> Result<(), WriteError>,
    ) -> Result<(), WriteError> {
        if self.first_time(&self.refused_once, self.rates.refuse_write)
            || self.roll(self.rates.refuse_write)
        {
            self.refused.fetch_add(1, Ordering::SeqCst);
            return Err(StorageError::msg("injected: the write was refused")
                .with_kind(StorageErrorKind::Unavailable)
                .into());
        }
        let result = write();
        if result.is_ok()
            && (self.first_time(&self.lost_once, self.rates.lose_answer)
                || self.roll(self.rates.lose_answer))
        {
            self.lost.fetch_add(1, Ordering::SeqCst);
            return Err(
                StorageError::msg("injected: the answer to a committed write was lost")
                    .with_kind(StorageErrorKind::OutcomeUnknown)
                    .into(),
            );
        }
        result
    }
}

/// A reader of a [`Faulty`] backend.
pub struct FaultyReader<'a, B: Backend + 'a> {
    inner: B::Reader<'a>,
    faults: &'a Faulty<B>,
}

impl<B: Backend> Backend for Faulty<B> {
    type Reader<'a> = FaultyReader<'a, B>;

    fn reader(&self) -> Result<FaultyReader<'_, B>, StorageError> {
        self.read_fault()?;
        Ok(FaultyReader {
            inner: self.inner.reader()?,
            faults: self,
        })
    }

    fn write(&self, batch: WriteBatch) -> Result<(), WriteError> {
        self.faulty_write(|| self.inner.write(batch))
    }

    fn write_replanning(&self, batch: WriteBatch, replan: Replan) -> Result<(), WriteError> {
        self.faulty_write(|| self.inner.write_replanning(batch, replan))
    }

    fn max_batch_ops(&self) -> usize {
        self.inner.max_batch_ops()
    }

    fn ready(&self) -> Result<(), StorageError> {
        self.inner.ready()
    }

    fn shared(&self) -> bool {
        self.inner.shared()
    }
}

impl<B: Backend> Reader for FaultyReader<'_, B> {
    fn get(&self, key: &Key) -> Result<Option<Record>, StorageError> {
        self.faults.read_fault()?;
        self.inner.get(key)
    }

    fn get_many(&self, keys: &[Key]) -> Result<Vec<Option<Record>>, StorageError> {
        self.faults.read_fault()?;
        self.inner.get_many(keys)
    }

    fn scan(
        &self,
        partition: &[u8],
        range: &SortRange,
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Record)>, StorageError> {
        self.faults.read_fault()?;
        self.inner.scan(partition, range, direction, limit)
    }

    fn scan_each(
        &self,
        partition: &[u8],
        range: &SortRange,
        direction: Direction,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], RecordView<'_>) -> ControlFlow<()>,
    ) -> Result<(), StorageError> {
        self.faults.read_fault()?;
        self.inner
            .scan_each(partition, range, direction, limit, visit)
    }

    fn scan_all(
        &self,
        after: Option<&Key>,
        limit: usize,
    ) -> Result<Vec<(Key, Record)>, StorageError> {
        self.faults.read_fault()?;
        self.inner.scan_all(after, limit)
    }

    fn partitions(&self, after: Option<&[u8]>, limit: usize) -> Result<Vec<Vec<u8>>, StorageError> {
        self.faults.read_fault()?;
        self.inner.partitions(after, limit)
    }
}

/// The size of a [`fault_injection`] run.
#[derive(Clone, Copy, Debug)]
pub struct FaultWorkload {
    /// Concurrent writers.
    pub writers: usize,
    /// Operations per writer.
    pub ops: usize,
    /// The seed of the faults and of the writers' choices.
    pub seed: u64,
    /// How often each kind of fault happens.
    pub rates: FaultRates,
}

impl Default for FaultWorkload {
    fn default() -> Self {
        FaultWorkload {
            writers: 4,
            ops: 150,
            seed: 22,
            rates: FaultRates::default(),
        }
    }
}

/// What a [`fault_injection`] run did and found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultReport {
    /// Writes acknowledged.
    pub acknowledged: u64,
    /// Writes that failed with a storage error saying nothing was written.
    pub failed: u64,
    /// Writes that failed with [`StorageErrorKind::OutcomeUnknown`].
    pub unknown: u64,
    /// Reads that failed.
    pub failed_reads: u64,
    /// What the backend injected.
    pub injected: Injected,
    /// Acknowledged writes not found afterwards (always 0: the run panics otherwise).
    pub lost: u64,
    /// Transactions found half-applied (always 0: the run panics otherwise).
    pub partial: u64,
}

impl std::fmt::Display for FaultReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} writes acknowledged, {} failed (nothing written), {} with unknown outcome, {} \
             reads failed; injected {} read faults, {} refused writes, {} lost answers; lost {}, \
             partial {}",
            self.acknowledged,
            self.failed,
            self.unknown,
            self.failed_reads,
            self.injected.reads,
            self.injected.refused_writes,
            self.injected.lost_answers,
            self.lost,
            self.partial
        )
    }
}

/// How a write ended, as its writer saw it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Outcome {
    Acknowledged,
    /// Failed, and says that nothing was written.
    Failed,
    /// Failed, and may or may not have been written.
    Unknown,
}

/// One write of a writer's history: the value it wrote (`None`: a delete) and how it ended.
#[derive(Clone, Debug)]
struct Attempt {
    seq: u64,
    value: Option<u64>,
    outcome: Outcome,
}

/// Runs `workload.writers` writers through a [`Faulty`] wrapper of `backend` and checks the
/// promises in the module's documentation; panics on a broken one. Each writer owns a group of
/// single items (puts and deletes) and two groups that only its transactions write, always
/// together.
pub fn fault_injection<B: Backend>(backend: B, workload: FaultWorkload) -> FaultReport {
    let options = StoreOptions {
        sweep_interval: None,
        ..StoreOptions::default()
    };
    let faulty = Faulty::new(backend, workload.rates, workload.seed);
    let store = Store::new(faulty, options).expect("open the store");
    let tokens: Vec<[ChangeToken; 3]> = (0..workload.writers)
        .map(|w| groups(w).map(|g| store.changes_token(&g).expect("feed position")))
        .collect();
    store.backend().set_on(true);
    let histories: Vec<(HashMap<String, Vec<Attempt>>, u64)> = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..workload.writers)
            .map(|w| {
                let store = &store;
                scope.spawn(move || write_with_faults(store, w, workload))
            })
            .collect();
        writers
            .into_iter()
            .map(|h| h.join().expect("a writer panicked"))
            .collect()
    });
    store.backend().set_on(false);

    let mut report = FaultReport {
        injected: store.backend().injected(),
        ..FaultReport::default()
    };
    for (w, (history, failed_reads)) in histories.iter().enumerate() {
        report.failed_reads += failed_reads;
        for attempts in history.values() {
            for a in attempts {
                match a.outcome {
                    Outcome::Acknowledged => report.acknowledged += 1,
                    Outcome::Failed => report.failed += 1,
                    Outcome::Unknown => report.unknown += 1,
                }
            }
        }
        check_items(&store, history);
        check_pairs(&store, w);
        for (group, token) in groups(w).iter().zip(&tokens[w]) {
            check_feed(&store, group, *token, history);
        }
    }
    // The same store writes again once the faults stop: no reopen.
    for w in 0..workload.writers {
        let at = path(&format!("/fault-{w}/after-1"));
        store
            .put(&at, number(1), PutOptions::default())
            .unwrap_or_else(|e| panic!("a put after the faults stopped failed: {e}"));
        assert!(store.get(&at).expect("read after faults").is_some());
    }
    report
}

/// A writer's three groups: its single items, and the two halves of its transactions.
fn groups(w: usize) -> [KeyPath; 3] {
    [
        path(&format!("/fault-{w}")),
        path(&format!("/pair-{w}")),
        path(&format!("/mate-{w}")),
    ]
}

fn number(n: u64) -> Json {
    Json::parse(&format!(r#"{{"n":{n}}}"#)).expect("a number is JSON")
}

fn number_of(value: &Json) -> u64 {
    value.to_value()["n"]
        .as_u64()
        .unwrap_or_else(|| panic!("not a workload value: {value}"))
}

fn outcome(result: &Result<impl Sized, Error>, what: &str) -> Outcome {
    match result {
        Ok(_) => Outcome::Acknowledged,
        Err(Error::Storage(e)) if e.kind() == StorageErrorKind::OutcomeUnknown => Outcome::Unknown,
        Err(Error::Storage(_)) => Outcome::Failed,
        Err(e) => panic!("{what}: only storage errors are expected, got {e}"),
    }
}

/// One writer: puts, deletes and two-group transactions, each value unique (`seq`), with
/// reads in between that must never see a refused write.
fn write_with_faults<B: Backend>(
    store: &Store<Faulty<B>>,
    w: usize,
    workload: FaultWorkload,
) -> (HashMap<String, Vec<Attempt>>, u64) {
    let mut rng = Rng(workload.seed.wrapping_mul(31).wrapping_add(w as u64 + 1));
    let mut history: HashMap<String, Vec<Attempt>> = HashMap::new();
    let mut failed_reads = 0;
    let pair = path(&format!("/pair-{w}/p-1"));
    let mate = path(&format!("/mate-{w}/p-1"));
    for i in 0..workload.ops {
        let seq = (w * workload.ops + i) as u64 + 1;
        match rng.below(10) {
            0..=5 => {
                let at = path(&format!("/fault-{w}/k-{}", rng.below(4)));
                let result = store.put(&at, number(seq), PutOptions::default());
                let outcome = outcome(&result, "put");
                push(&mut history, &at, seq, Some(seq), outcome);
            }
            6 => {
                let at = path(&format!("/fault-{w}/k-{}", rng.below(4)));
                let result = store.delete(&at, None);
                let outcome = outcome(&result, "delete");
                push(&mut history, &at, seq, None, outcome);
            }
            7 | 8 => {
                let mut tx = Transaction::new();
                for at in [&pair, &mate] {
                    tx.ops.push(TxOp::Put {
                        path: at.clone(),
                        value: number(seq),
                        options: PutOptions::default(),
                    });
                }
                let result = store.transact(tx);
                let outcome = outcome(&result, "transaction");
                for at in [&pair, &mate] {
                    push(&mut history, at, seq, Some(seq), outcome);
                }
            }
            _ => {
                let at = path(&format!("/fault-{w}/k-{}", rng.below(4)));
                match store.get(&at) {
                    Ok(item) => {
                        let seen = item.map(|i| number_of(&i.value));
                        let attempts = history.get(&at.to_string()).map_or(&[][..], |a| a);
                        assert!(
                            possible(attempts).contains(&seen),
                            "{at} reads {seen:?}, which no acknowledged or unknown write left \
                             there: {attempts:?}"
                        );
                    }
                    Err(Error::Storage(_)) => failed_reads += 1,
                    Err(e) => panic!("get {at}: {e}"),
                }
            }
        }
    }
    (history, failed_reads)
}

fn push(
    history: &mut HashMap<String, Vec<Attempt>>,
    at: &KeyPath,
    seq: u64,
    value: Option<u64>,
    outcome: Outcome,
) {
    history.entry(at.to_string()).or_default().push(Attempt {
        seq,
        value,
        outcome,
    });
}

/// The values an item may hold after `attempts`: its last acknowledged write's (nothing before
/// any), or any later write with an unknown outcome.
fn possible(attempts: &[Attempt]) -> Vec<Option<u64>> {
    let last_ack = attempts
        .iter()
        .rposition(|a| a.outcome == Outcome::Acknowledged);
    let mut out = vec![last_ack.and_then(|i| attempts[i].value)];
    let after = last_ack.map_or(0, |i| i + 1);
    out.extend(
        attempts[after..]
            .iter()
            .filter(|a| a.outcome == Outcome::Unknown)
            .map(|a| a.value),
    );
    out
}

fn check_items<B: Backend>(store: &Store<B>, history: &HashMap<String, Vec<Attempt>>) {
    for (at, attempts) in history {
        let item = store.get(&path(at)).expect("read after faults");
        let found = item.map(|i| number_of(&i.value));
        assert!(
            possible(attempts).contains(&found),
            "{at} holds {found:?} after the faults; its writes were {attempts:?}"
        );
    }
}

/// Both halves of every transaction agree: none is half-applied.
fn check_pairs<B: Backend>(store: &Store<B>, w: usize) {
    let items = store
        .get_many(&[
            path(&format!("/pair-{w}/p-1")),
            path(&format!("/mate-{w}/p-1")),
        ])
        .expect("read pairs");
    let values: Vec<u64> = items.iter().map(|i| number_of(&i.value)).collect();
    assert!(
        values.is_empty() || values.len() == 2 && values[0] == values[1],
        "a transaction is half-applied in writer {w}'s groups: {values:?}"
    );
}

/// The group's feed holds each applied write once, in order: every acknowledged one, no failed
/// one, and unknown ones only if they were applied.
fn check_feed<B: Backend>(
    store: &Store<B>,
    group: &KeyPath,
    mut token: ChangeToken,
    history: &HashMap<String, Vec<Attempt>>,
) {
    let mut seen: HashMap<String, Vec<Option<u64>>> = HashMap::new();
    loop {
        let page = store
            .changes(group, Some(&token), 100)
            .expect("read the feed");
        let done = page.changes.is_empty() && page.next_token == token;
        for entry in page.changes {
            let (at, value) = match &entry.change {
                Change::Put(item) => (item.path.to_string(), Some(number_of(&item.value))),
                Change::Delete { path, .. } => (path.to_string(), None),
            };
            seen.entry(at).or_default().push(value);
        }
        token = page.next_token;
        if done {
            break;
        }
    }
    for (at, attempts) in history {
        if !group.covers(&path(at)) {
            continue;
        }
        let logged = seen.remove(at).unwrap_or_default();
        // Walk the attempts in order: each acknowledged write must be the next logged change
        // (a delete of a missing item logs nothing), a failed one must not be, an unknown one
        // may be.
        let mut next = logged.iter().peekable();
        for a in attempts {
            let here = next.peek().is_some_and(|v| **v == a.value);
            match a.outcome {
                Outcome::Acknowledged | Outcome::Unknown if here => {
                    next.next();
                }
                Outcome::Acknowledged => assert!(
                    a.value.is_none(),
                    "{at}: acknowledged write {} is missing from the feed {logged:?}",
                    a.seq
                ),
                Outcome::Failed => assert!(
                    a.value.is_none() || !logged.contains(&a.value),
                    "{at}: failed write {} is in the feed {logged:?}",
                    a.seq
                ),
                Outcome::Unknown => {}
            }
        }
        assert!(
            next.next().is_none(),
            "{at}: the feed holds changes no write explains: {logged:?} for {attempts:?}"
        );
    }
    assert!(
        seen.is_empty(),
        "the feed of {group} holds paths nobody wrote: {seen:?}"
    );
}
