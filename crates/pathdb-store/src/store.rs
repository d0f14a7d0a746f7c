//! [`Store`]: the data API over any [`Backend`]. Reads use one snapshot per call; writes read
//! the current records, check the caller's conditions, and commit a batch that is conditional on
//! the versions read, so a concurrent change makes the batch fail instead of being overwritten.

use crate::backend::{
    Backend, Direction, Expect, FileBackend, FileOptions, Key, Reader, Record, RecordView,
    WriteBatch, WriteError, WriteOp,
};
use crate::changes::Change;
use crate::ids::IdKind;
use crate::layout;
use crate::{Condition, Error, Item, Json, StorageError, Timestamp};
use pathdb_keys::KeyPath;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// Longest encoded group (DynamoDB's partition key limit).
pub const MAX_GROUP_BYTES: usize = 2048;
/// Longest encoded sort key (DynamoDB's sort key limit).
pub const MAX_SORT_KEY_BYTES: usize = 1024;
/// Largest item: value, keys and metadata, under DynamoDB's 400 KB with room for its attribute names.
pub const MAX_ITEM_BYTES: usize = 400_000;
/// Metadata bytes counted against [`MAX_ITEM_BYTES`] besides the value and the keys.
const ITEM_OVERHEAD: usize = 64;
/// Most operations in one transaction (DynamoDB's TransactWriteItems limit).
pub const MAX_TRANSACTION_OPS: usize = 100;
/// Most paths in one `get_many`.
pub const MAX_GET_MANY: usize = 100;
/// The largest version: 2^53 - 1, so that every JSON client (JavaScript's numbers) holds it
/// exactly. Import refuses larger ones; a write past it is refused rather than wrapping.
pub const MAX_VERSION: u64 = (1 << 53) - 1;

/// Where the store gets the time; tests substitute a [`ManualClock`].
pub trait Clock: Send + Sync + 'static {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// The system clock.
#[derive(Default, Debug, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock that moves only when told: for tests of expiry.
#[derive(Default, Debug)]
pub struct ManualClock(std::sync::atomic::AtomicI64);

impl ManualClock {
    /// A clock showing `t`.
    pub fn new(t: Timestamp) -> ManualClock {
        ManualClock(std::sync::atomic::AtomicI64::new(t.0))
    }

    /// Moves the clock forward.
    pub fn advance(&self, d: Duration) {
        let micros = i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
        self.0
            .fetch_add(micros, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.0.load(std::sync::atomic::Ordering::SeqCst))
    }
}

/// Store settings.
#[derive(Clone)]
pub struct StoreOptions {
    /// The time source.
    pub clock: Arc<dyn Clock>,
    /// Revisions kept per item when history is on and its namespace sets no retention.
    pub default_history_retention: u32,
    /// How often expired items are removed in the background; `None` disables the sweeper
    /// (expired items are invisible regardless).
    pub sweep_interval: Option<Duration>,
    /// How long the change feed keeps changes: a token whose next change is older answers
    /// [`Error::ChangesExpired`] (docs/changes.md).
    pub change_retention: Duration,
}

/// [`StoreOptions::change_retention`] by default: 7 days.
pub const DEFAULT_CHANGE_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            clock: Arc::new(SystemClock),
            default_history_retention: 100,
            sweep_interval: Some(Duration::from_secs(1)),
            change_retention: DEFAULT_CHANGE_RETENTION,
        }
    }
}

impl std::fmt::Debug for StoreOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreOptions")
            .field("default_history_retention", &self.default_history_retention)
            .field("sweep_interval", &self.sweep_interval)
            .field("change_retention", &self.change_retention)
            .finish_non_exhaustive()
    }
}

/// How an item expires.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Expiry {
    /// At this time.
    At(Timestamp),
    /// This long after the write.
    After(Duration),
}

/// Options of [`Store::put`].
#[derive(Clone, Default, Debug)]
pub struct PutOptions {
    /// Write only if this holds.
    pub condition: Option<Condition>,
    /// Keep this version as a revision (also on when the namespace has history on).
    pub history: bool,
    /// When the item expires; `None` never.
    pub expires: Option<Expiry>,
}

/// One operation of a [`Transaction`].
#[derive(Clone, Debug)]
pub enum TxOp {
    /// Replace or create an item.
    Put {
        /// Where.
        path: KeyPath,
        /// The value.
        value: Json,
        /// Condition, history, expiry.
        options: PutOptions,
    },
    /// Delete an item.
    Delete {
        /// Where.
        path: KeyPath,
        /// Delete only if this holds.
        condition: Option<Condition>,
    },
    /// Write nothing; fail the transaction unless the condition holds.
    Check {
        /// Where.
        path: KeyPath,
        /// What must hold.
        condition: Condition,
    },
    /// Create an item at `{parent}/{namespace}-{id}` with a generated id, at a path never used
    /// before (its result holds the path).
    Create {
        /// Under what.
        parent: Parent,
        /// The new element's namespace.
        namespace: String,
        /// How the id is generated.
        id: IdKind,
        /// The value.
        value: Json,
        /// History and expiry (a condition is refused: the path is new by construction).
        options: PutOptions,
    },
}

/// Where [`TxOp::Create`] creates its item.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Parent {
    /// Nowhere: the item is a new group (`/user-{id}`).
    Root,
    /// Under this path.
    Path(KeyPath),
    /// Under the item created by the transaction's operation at this index (an earlier
    /// [`TxOp::Create`]), so one transaction can create an item and its children.
    Created(usize),
}

impl TxOp {
    /// The path the operation names, `None` for a create (its path is generated).
    pub fn path(&self) -> Option<&KeyPath> {
        match self {
            TxOp::Put { path, .. } | TxOp::Delete { path, .. } | TxOp::Check { path, .. } => {
                Some(path)
            }
            TxOp::Create { .. } => None,
        }
    }
}

/// Puts, deletes and checks on any paths, applied all or nothing.
#[derive(Clone, Default, Debug)]
pub struct Transaction {
    /// The operations, at most [`MAX_TRANSACTION_OPS`], each on a different path.
    pub ops: Vec<TxOp>,
}

impl Transaction {
    /// An empty transaction.
    pub fn new() -> Transaction {
        Transaction::default()
    }

    /// Adds a put.
    pub fn put(mut self, path: KeyPath, value: Json, options: PutOptions) -> Self {
        self.ops.push(TxOp::Put {
            path,
            value,
            options,
        });
        self
    }

    /// Adds a delete.
    pub fn delete(mut self, path: KeyPath, condition: Option<Condition>) -> Self {
        self.ops.push(TxOp::Delete { path, condition });
        self
    }

    /// Adds a condition check.
    pub fn check(mut self, path: KeyPath, condition: Condition) -> Self {
        self.ops.push(TxOp::Check { path, condition });
        self
    }

    /// Adds a create with a generated id; refer to it with `Parent::Created(index)`, where
    /// `index` is [`Transaction::ops`]' length before this call.
    pub fn create(mut self, parent: Parent, namespace: &str, id: IdKind, value: Json) -> Self {
        self.ops.push(TxOp::Create {
            parent,
            namespace: namespace.to_owned(),
            id,
            value,
            options: PutOptions::default(),
        });
        self
    }
}

/// The outcome of one transaction operation.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum TxResult {
    /// The item as written.
    Put(Item),
    /// The item that was deleted, if one existed.
    Deleted(Option<Item>),
    /// The check held.
    Checked,
}

pub(crate) struct Inner<B> {
    pub(crate) backend: B,
    pub(crate) options: StoreOptions,
    /// Namespace → revisions kept, for namespaces with history on.
    namespace_history: RwLock<HashMap<String, u32>>,
    /// Notified after every commit, for change feeds waiting for one.
    pub(crate) commits: event_listener::Event,
    /// Commits that logged changes, to spread the removal of expired log entries.
    pub(crate) commits_logged: std::sync::atomic::AtomicU64,
    /// Seals the tokens this database hands out (token.rs).
    pub(crate) tokens: crate::token::TokenKey,
}

/// Sleeps a random time below `2^attempt` ms (at most 64 ms), from the second attempt on.
pub(crate) fn backoff(attempt: u32) {
    if attempt < 2 {
        return;
    }
    let ceiling_us = 1000u64 << attempt.min(6);
    let random = std::hash::BuildHasher::hash_one(
        &std::collections::hash_map::RandomState::new(),
        (attempt, std::time::Instant::now()),
    );
    std::thread::sleep(Duration::from_micros(random % ceiling_us));
}

/// PathDB's data API over a backend. Cheap to clone; clones share the backend.
pub struct Store<B: Backend> {
    pub(crate) inner: Arc<Inner<B>>,
    _sweeper: Option<Arc<crate::ttl::Sweeper>>,
}

impl<B: Backend> Clone for Store<B> {
    fn clone(&self) -> Self {
        Store {
            inner: Arc::clone(&self.inner),
            _sweeper: self._sweeper.clone(),
        }
    }
}

impl Store<FileBackend> {
    /// Opens (or creates) a database file with the embedded backend.
    ///
    /// # Errors
    /// The file cannot be opened.
    pub fn open(
        path: impl AsRef<Path>,
        file: FileOptions,
        options: StoreOptions,
    ) -> Result<Self, Error> {
        Store::new(FileBackend::open(path, file)?, options)
    }

    /// Opens an existing database file for reading only ([`FileBackend::open_read_only`]):
    /// the file is never written, writes fail with [`Error::ReadOnly`], and there is no expiry
    /// sweeper whatever `options` say (expired items stay hidden from reads).
    ///
    /// # Errors
    /// The file cannot be opened read-only (see [`FileBackend::open_read_only`]).
    pub fn open_read_only(
        path: impl AsRef<Path>,
        file: FileOptions,
        options: StoreOptions,
    ) -> Result<Self, Error> {
        let options = StoreOptions {
            sweep_interval: None,
            ..options
        };
        Store::new(FileBackend::open_read_only(path, file)?, options)
    }
}

pub(crate) fn now_of<B>(inner: &Inner<B>) -> i64 {
    inner.options.clock.now().0
}

/// Whether an item key's record is an item a read should see: not a tombstone (layout.rs), not
/// expired.
pub(crate) fn is_live(record: &Record, now: i64) -> bool {
    is_live_view(record.as_view(), now)
}

/// [`is_live`] for a borrowed record.
pub(crate) fn is_live_view(record: RecordView<'_>, now: i64) -> bool {
    !record.value.is_empty() && record.expires_at.is_none_or(|t| t > now)
}

fn visible(record: Option<Record>, now: i64) -> Option<Record> {
    record.filter(|r| is_live(r, now))
}

/// The tombstone that replaces `record` when its item is deleted or expires, at `version`, so
/// the path's next write continues the numbering (layout.rs).
///
/// A delete is a write: its tombstone takes the next version. Were it to keep the deleted
/// version, a write planned against the live item (`If-Match` that version, or a second delete)
/// would still find "that version" stored after the delete and succeed over it. An expiry keeps
/// the item's version: no one wrote.
pub(crate) fn tombstone(record: &Record, version: u64, at: i64) -> Record {
    Record {
        version,
        created_at: record.created_at,
        modified_at: at,
        expires_at: None,
        value: Vec::new(),
    }
}

/// [`to_item`] for a borrowed record: the value is copied once, into the item.
pub(crate) fn item_from_view(path: KeyPath, record: RecordView<'_>) -> Result<Item, Error> {
    Ok(item_with(
        path,
        record,
        Json::from_stored_slice(record.value)?,
    ))
}

pub(crate) fn to_item(path: KeyPath, mut record: Record) -> Result<Item, Error> {
    // The value moves into the item; only the metadata is read through the view.
    let value = Json::from_stored(std::mem::take(&mut record.value))?;
    Ok(item_with(path, record.as_view(), value))
}

/// An item from a record's metadata and its already converted value.
fn item_with(path: KeyPath, record: RecordView<'_>, value: Json) -> Item {
    Item {
        path,
        version: record.version,
        created_at: Timestamp(record.created_at),
        modified_at: Timestamp(record.modified_at),
        expires_at: record.expires_at.map(Timestamp),
        value,
    }
}

impl<B: Backend> Store<B> {
    /// A store over `backend`; starts the expiry sweeper unless disabled.
    ///
    /// # Errors
    /// The backend cannot be read.
    pub fn new(backend: B, options: StoreOptions) -> Result<Self, Error> {
        let reader = backend.reader()?;
        let mut namespace_history = HashMap::new();
        for (sort, record) in reader.scan(
            layout::SYSTEM_PARTITION,
            &layout::namespace_history_range(),
            Direction::Forward,
            usize::MAX,
        )? {
            let ns = String::from_utf8_lossy(&sort[1..]).into_owned();
            let retention: u32 = serde_json::from_slice(&record.value)
                .map_err(|e| StorageError::new("corrupt namespace setting", e))?;
            namespace_history.insert(ns, retention);
        }
        drop(reader);
        let tokens = crate::token::TokenKey::load_or_create(&backend)?;
        let sweep = options.sweep_interval;
        let inner = Arc::new(Inner {
            backend,
            options,
            namespace_history: RwLock::new(namespace_history),
            commits: event_listener::Event::new(),
            commits_logged: std::sync::atomic::AtomicU64::new(0),
            tokens,
        });
        let sweeper = sweep
            .map(|interval| Arc::new(crate::ttl::Sweeper::start(Arc::downgrade(&inner), interval)));
        Ok(Store {
            inner,
            _sweeper: sweeper,
        })
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.inner.backend
    }

    pub(crate) fn now(&self) -> i64 {
        now_of(&self.inner)
    }

    /// The item at `path`, if it exists and has not expired.
    ///
    /// # Errors
    /// Storage failures.
    pub fn get(&self, path: &KeyPath) -> Result<Option<Item>, Error> {
        let key = checked_item_key(path)?;
        let reader = self.inner.backend.reader()?;
        let record = visible(reader.get(&key)?, self.now());
        record.map(|r| to_item(path.clone(), r)).transpose()
    }

    /// The items that exist among `paths`, in the order asked, read from one snapshot.
    ///
    /// # Errors
    /// More than [`MAX_GET_MANY`] paths; storage failures.
    pub fn get_many(&self, paths: &[KeyPath]) -> Result<Vec<Item>, Error> {
        if paths.len() > MAX_GET_MANY {
            return Err(Error::InvalidRequest(format!(
                "get_many takes at most {MAX_GET_MANY} paths, got {}",
                paths.len()
            )));
        }
        paths.iter().try_for_each(check_key)?;
        let reader = self.inner.backend.reader()?;
        let now = self.now();
        let keys: Vec<_> = paths.iter().map(layout::item_key).collect();
        let mut items = Vec::new();
        for (path, record) in paths.iter().zip(reader.get_many(&keys)?) {
            if let Some(r) = visible(record, now) {
                items.push(to_item(path.clone(), r)?);
            }
        }
        Ok(items)
    }

    /// Creates or replaces the item at `path`.
    ///
    /// # Errors
    /// [`Error::ConditionFailed`], size limits, storage failures.
    pub fn put(&self, path: &KeyPath, value: Json, options: PutOptions) -> Result<Item, Error> {
        self.put_created(path, value, options).map(|(item, _)| item)
    }

    /// [`Store::put`], also telling whether it created the item (`true`: no live item was at
    /// `path` in the state the put applied to) or replaced one, from the same read and commit.
    /// The version cannot tell: a re-created item continues its history's numbering.
    ///
    /// # Errors
    /// As [`Store::put`].
    pub fn put_created(
        &self,
        path: &KeyPath,
        value: Json,
        options: PutOptions,
    ) -> Result<(Item, bool), Error> {
        let op = TxOp::Put {
            path: path.clone(),
            value,
            options,
        };
        let (results, found) = self.execute(&[op], true)?;
        put_outcome(results, found)
    }

    /// [`Store::put_created`] for a caller on an async runtime, when the backend reads without
    /// blocking ([`Backend::fast_point_reads`]) and queues writes ([`Backend::queues_writes`]):
    /// it plans on the calling thread and awaits the commit instead of blocking a thread until
    /// the commit is durable. On another backend it blocks like `put_created`: call it from an
    /// async task only when both hold.
    ///
    /// # Errors
    /// As [`Store::put`].
    pub async fn put_created_queued(
        &self,
        path: &KeyPath,
        value: Json,
        options: PutOptions,
    ) -> Result<(Item, bool), Error> {
        let ops = [TxOp::Put {
            path: path.clone(),
            value,
            options,
        }];
        self.check_ops(&ops)?;
        // The same loop as `execute` with retry: only the wait for the commit differs.
        loop {
            let Plan {
                batch,
                results,
                found,
                ..
            } = self.plan(&ops)?;
            let written = match self.inner.backend.write_queued(batch) {
                Ok(pending) => pending.await,
                Err(batch) => self.inner.backend.write(batch),
            };
            match written {
                Ok(()) => {
                    // Change feeds waiting for a commit (as `execute` does).
                    self.inner.commits.notify(usize::MAX);
                    return put_outcome(results, found);
                }
                Err(WriteError::ConditionFailed { .. }) => {}
                Err(WriteError::Storage(e)) => return Err(e.into()),
            }
        }
    }

    /// Creates an item at `{parent}/{namespace}-{id}` (a new group without `parent`) with an id
    /// generated as `id` says, at a path never used before; returns it.
    ///
    /// # Errors
    /// An invalid namespace, a condition in `options`, size limits, storage failures.
    pub fn create(
        &self,
        parent: Option<&KeyPath>,
        namespace: &str,
        id: IdKind,
        value: Json,
        options: PutOptions,
    ) -> Result<Item, Error> {
        let op = TxOp::Create {
            parent: parent.map_or(Parent::Root, |p| Parent::Path(p.clone())),
            namespace: namespace.to_owned(),
            id,
            value,
            options,
        };
        match self.execute(&[op], true)?.0.pop() {
            Some(TxResult::Put(item)) => Ok(item),
            _ => Err(StorageError::msg("create returned no item").into()),
        }
    }

    /// Deletes the item at `path`; returns it, or `None` if it did not exist.
    ///
    /// # Errors
    /// [`Error::ConditionFailed`], storage failures.
    pub fn delete(
        &self,
        path: &KeyPath,
        condition: Option<Condition>,
    ) -> Result<Option<Item>, Error> {
        let op = TxOp::Delete {
            path: path.clone(),
            condition,
        };
        match self.execute(&[op], true)?.0.pop() {
            Some(TxResult::Deleted(item)) => Ok(item),
            _ => Err(StorageError::msg("delete returned no result").into()),
        }
    }

    /// Applies a transaction all or nothing; one result per operation.
    ///
    /// # Errors
    /// [`Error::ConditionFailed`] (nothing written); [`Error::Conflict`] when a concurrent write
    /// changed a path it read (nothing written; retry); [`Error::InvalidRequest`] for an empty
    /// transaction, more than [`MAX_TRANSACTION_OPS`] operations or a path used twice.
    pub fn transact(&self, tx: Transaction) -> Result<Vec<TxResult>, Error> {
        if tx.ops.is_empty() {
            return Err(Error::InvalidRequest(
                "a transaction needs at least one operation".into(),
            ));
        }
        if tx.ops.len() > MAX_TRANSACTION_OPS {
            return Err(Error::InvalidRequest(format!(
                "a transaction has at most {MAX_TRANSACTION_OPS} operations, got {}",
                tx.ops.len()
            )));
        }
        let mut seen = HashSet::new();
        if let Some(dup) = tx
            .ops
            .iter()
            .filter_map(TxOp::path)
            .find(|p| !seen.insert(*p))
        {
            return Err(Error::InvalidRequest(format!(
                "{dup} appears twice in one transaction"
            )));
        }
        self.execute(&tx.ops, false).map(|(results, _)| results)
    }

    /// Reads, checks and commits `ops`; with `retry`, re-runs after a concurrent change until
    /// the write commits or the caller's own condition fails.
    ///
    /// The retry is unbounded on purpose: a batch fails only when a key it read changed, that
    /// is, when another write to the same item committed in between, so every lost race is
    /// someone else's progress (lock-free). A bound turned contention into a
    /// [`Error::Conflict`] from a put or delete that has no condition, which callers neither
    /// expect nor can act on: with eight writers on one item and group commit (all but one
    /// batch of a group lose), 16 attempts ran out within a dozen puts each.
    ///
    /// Also returns, per operation, whether the committed plan found a live item at its path.
    fn execute(&self, ops: &[TxOp], retry: bool) -> Result<(Vec<TxResult>, Vec<bool>), Error> {
        self.check_ops(ops)?;
        let mut attempt = 0u32;
        loop {
            let plan = self.plan(ops)?;
            self.check_batch_size(&plan)?;
            match self.inner.backend.write(plan.batch) {
                Ok(()) => {
                    self.inner.commits.notify(usize::MAX);
                    return Ok((plan.results, plan.found));
                }
                Err(WriteError::ConditionFailed { .. }) if retry => {}
                // A generated id or a sequence someone else took meanwhile: not the caller's
                // conflict, and the next plan generates another.
                Err(WriteError::ConditionFailed { index })
                    if plan.generated.get(index).copied().unwrap_or(false) =>
                {
                    // Creators racing for one sequence all read the same next id; a short
                    // random pause spreads them out instead of replanning in lockstep.
                    attempt += 1;
                    backoff(attempt);
                }
                Err(WriteError::ConditionFailed { index }) => {
                    let path = plan
                        .owners
                        .get(index)
                        .cloned()
                        .or_else(|| ops.iter().find_map(TxOp::path).cloned())
                        .ok_or_else(|| StorageError::msg("a failed batch names no path"))?;
                    return Err(Error::Conflict { path });
                }
                Err(WriteError::Storage(e)) => return Err(e.into()),
            }
        }
    }

    /// The limits every write checks before reading anything.
    fn check_ops(&self, ops: &[TxOp]) -> Result<(), Error> {
        let now = self.now();
        for (index, op) in ops.iter().enumerate() {
            if let Some(path) = op.path() {
                check_key(path)?;
            }
            match op {
                TxOp::Put {
                    path,
                    value,
                    options,
                } => {
                    check_item_size(path, value)?;
                    check_expiry(path, options.expires, now)?;
                }
                TxOp::Create {
                    parent,
                    namespace,
                    options,
                    ..
                } => {
                    // The path is not known yet; the expiry rules do not depend on it.
                    let probe = KeyPath::builder()
                        .push(namespace, 1u64)
                        .build()
                        .map_err(|e| Error::InvalidRequest(e.to_string()))?;
                    check_expiry(&probe, options.expires, now)?;
                    if options.condition.is_some() {
                        return Err(Error::InvalidRequest(
                            "a create takes no condition: its path is new by construction".into(),
                        ));
                    }
                    if let Parent::Created(earlier) = parent
                        && (*earlier >= index || !matches!(ops[*earlier], TxOp::Create { .. }))
                    {
                        return Err(Error::InvalidRequest(format!(
                            "operation {index} creates under operation {earlier}, which is not an earlier create"
                        )));
                    }
                }
                TxOp::Delete { .. } | TxOp::Check { .. } => {}
            }
        }
        Ok(())
    }

    /// A planned batch the backend cannot take in one atomic write is the caller's to split.
    fn check_batch_size(&self, plan: &Plan) -> Result<(), Error> {
        let max = self.inner.backend.max_batch_ops();
        if plan.batch.ops.len() > max {
            return Err(Error::InvalidRequest(format!(
                "this transaction needs {} storage operations (with history, expiry and the change log), more than the backend's {max}: split it",
                plan.batch.ops.len()
            )));
        }
        Ok(())
    }

    /// Builds the batch for `ops` from one snapshot: the batch, the results it will have, and
    /// for each batch operation the path it belongs to (to name a conflict) and whether it
    /// writes a generated id or a sequence.
    fn plan(&self, ops: &[TxOp]) -> Result<Plan, Error> {
        let reader = self.inner.backend.reader()?;
        let now = self.now();
        let mut batch = WriteBatch::default();
        let mut owners = Vec::new();
        let mut generated = Vec::new();
        let mut results = Vec::with_capacity(ops.len());
        let mut found = Vec::with_capacity(ops.len());
        let mut changes = Vec::new();
        let mut ids = crate::ids::Generator::new(ops.iter().filter_map(TxOp::path));
        let mut created: Vec<Option<KeyPath>> = vec![None; ops.len()];
        for (index, op) in ops.iter().enumerate() {
            let (path, fresh) = match op {
                TxOp::Create {
                    parent,
                    namespace,
                    id,
                    value,
                    ..
                } => {
                    let parent = match parent {
                        Parent::Root => None,
                        Parent::Path(p) => {
                            check_key(p)?;
                            Some(p.clone())
                        }
                        Parent::Created(earlier) => created[*earlier].clone(),
                    };
                    let path = ids.generate(&reader, parent.as_ref(), namespace, *id)?;
                    check_item_size(&path, value)?;
                    created[index] = Some(path.clone());
                    (path, true)
                }
                _ => match op.path() {
                    Some(path) => (path.clone(), false),
                    None => return Err(StorageError::msg("an operation without a path").into()),
                },
            };
            let path = &path;
            let key = layout::item_key(path);
            let stored = reader.get(&key)?;
            let current = visible(stored.clone(), now);
            found.push(current.is_some());
            let condition = match op {
                TxOp::Put { options, .. } => options.condition,
                TxOp::Delete { condition, .. } => *condition,
                TxOp::Check { condition, .. } => Some(*condition),
                TxOp::Create { .. } => None,
            };
            if let Some(condition) = condition {
                check_condition(path, condition, current.as_ref())?;
            }
            // Whatever happens, the batch only applies to the record this plan saw.
            let expect = stored
                .as_ref()
                .map_or(Expect::Absent, |r| Expect::Version(r.version));
            let mark = batch.ops.len();
            match op {
                TxOp::Put { value, options, .. } | TxOp::Create { value, options, .. } => {
                    let version = match &stored {
                        Some(r) => next_version(path, r.version)?,
                        None => match latest_revision(&reader, &key)? {
                            Some(v) => next_version(path, v)?,
                            None => 1,
                        },
                    };
                    let expires_at = options.expires.map(|e| match e {
                        Expiry::At(t) => t.0,
                        Expiry::After(d) => Timestamp(now).plus(d).0,
                    });
                    let record = Record {
                        version,
                        created_at: current.as_ref().map_or(now, |r| r.created_at),
                        modified_at: now,
                        expires_at,
                        value: value.as_str().as_bytes().to_vec(),
                    };
                    if let Some(retention) = self.history_retention(path, options.history) {
                        revision_key_fits(path, key.sort.len())?;
                        for old in old_revisions(&reader, &key, retention)? {
                            batch.ops.push(WriteOp::Delete {
                                key: old,
                                expect: None,
                            });
                        }
                        batch.ops.push(WriteOp::Put {
                            key: layout::revision_key(&key, version),
                            record: record.clone(),
                            expect: None,
                        });
                    }
                    if let Some(t) = expires_at {
                        batch.ops.push(WriteOp::Put {
                            key: layout::expiry_key(t, &key),
                            record: index_record(now),
                            expect: None,
                        });
                    }
                    let item = to_item(path.clone(), record.clone())?;
                    changes.push(Change::Put(item.clone()));
                    results.push(TxResult::Put(item));
                    batch.ops.push(WriteOp::Put {
                        key,
                        record,
                        expect: Some(expect),
                    });
                }
                TxOp::Delete { .. } => {
                    match (&current, &stored) {
                        // The key keeps a tombstone, never nothing: see layout.rs.
                        (Some(live), Some(r)) => {
                            changes.push(Change::Delete {
                                path: path.clone(),
                                version: live.version,
                            });
                            batch.ops.push(WriteOp::Put {
                                key,
                                record: tombstone(r, next_version(path, r.version)?, now),
                                expect: Some(expect),
                            });
                        }
                        // Nothing to delete: only the state this plan saw must still hold.
                        _ => batch.ops.push(WriteOp::Check { key, expect }),
                    }
                    results.push(TxResult::Deleted(
                        current.map(|r| to_item(path.clone(), r)).transpose()?,
                    ));
                }
                TxOp::Check { .. } => {
                    results.push(TxResult::Checked);
                    batch.ops.push(WriteOp::Check { key, expect });
                }
            }
            for _ in mark..batch.ops.len() {
                owners.push(path.clone());
                generated.push(fresh);
            }
        }
        for op in ids.sequence_writes(now) {
            owners.push(owners.last().cloned().unwrap_or_else(|| {
                created
                    .iter()
                    .flatten()
                    .next()
                    .cloned()
                    .expect("a sequence belongs to a create")
            }));
            generated.push(true);
            batch.ops.push(op);
        }
        let mark = batch.ops.len();
        crate::changes::log_changes(&self.inner, &reader, &mut batch, &mut owners, &changes, now)?;
        // The change log's own operations are never the caller's conflict: an append is numbered
        // at commit, and two commits removing the same expired entries just plan again.
        generated.resize(mark.max(batch.ops.len()), true);
        Ok(Plan {
            batch,
            results,
            owners,
            generated,
            found,
        })
    }

    /// Revisions to keep for a put of `path`, or `None` when it keeps none.
    fn history_retention(&self, path: &KeyPath, asked: bool) -> Option<u32> {
        let ns = path.last().namespace().as_str();
        let configured = self
            .inner
            .namespace_history
            .read()
            .ok()
            .and_then(|m| m.get(ns).copied());
        match configured {
            Some(n) => Some(n),
            None if asked => Some(self.inner.options.default_history_retention),
            None => None,
        }
    }

    /// Turns history on for every item whose last element has `namespace`, keeping `retention`
    /// revisions each, or off with `None`.
    ///
    /// # Errors
    /// Invalid namespace, zero retention, storage failures.
    pub fn set_namespace_history(
        &self,
        namespace: &str,
        retention: Option<u32>,
    ) -> Result<(), Error> {
        pathdb_keys::Namespace::new(namespace)
            .map_err(|rule| Error::InvalidRequest(format!("namespace {namespace:?}: {rule}")))?;
        let key = layout::namespace_history_key(namespace);
        let op = match retention {
            Some(0) => {
                return Err(Error::InvalidRequest(
                    "history retention must be at least 1".into(),
                ));
            }
            Some(n) => WriteOp::Put {
                key,
                record: setting_record(n, self.now()),
                expect: None,
            },
            None => WriteOp::Delete { key, expect: None },
        };
        self.inner
            .backend
            .write(WriteBatch { ops: vec![op] })
            .map_err(|e| match e {
                WriteError::Storage(s) => Error::Storage(s),
                WriteError::ConditionFailed { .. } => {
                    Error::Storage(StorageError::msg("unconditional write failed a condition"))
                }
            })?;
        let mut map = self
            .inner
            .namespace_history
            .write()
            .map_err(|_| StorageError::msg("lock poisoned"))?;
        match retention {
            Some(n) => map.insert(namespace.to_owned(), n),
            None => map.remove(namespace),
        };
        Ok(())
    }

    /// Revisions of `path`, newest first, at most `limit`.
    ///
    /// # Errors
    /// Storage failures.
    pub fn history(&self, path: &KeyPath, limit: usize) -> Result<Vec<Item>, Error> {
        let key = checked_item_key(path)?;
        let reader = self.inner.backend.reader()?;
        let mut out = Vec::new();
        for (sort, record) in reader.scan(
            &key.partition,
            &layout::revision_range(&key),
            Direction::Forward,
            limit,
        )? {
            if layout::is_revision_of(&key, &sort) {
                out.push(to_item(path.clone(), record)?);
            }
        }
        Ok(out)
    }

    /// The revision of `path` at `version`, from its history or, if that is the current
    /// version, the item itself.
    ///
    /// # Errors
    /// Storage failures.
    pub fn get_version(&self, path: &KeyPath, version: u64) -> Result<Option<Item>, Error> {
        let key = checked_item_key(path)?;
        let reader = self.inner.backend.reader()?;
        if let Some(r) = reader.get(&layout::revision_key(&key, version))? {
            return to_item(path.clone(), r).map(Some);
        }
        match visible(reader.get(&key)?, self.now()) {
            Some(r) if r.version == version => to_item(path.clone(), r).map(Some),
            _ => Ok(None),
        }
    }
}

/// A single put's item, and whether it created the item (no live item was found).
fn put_outcome(mut results: Vec<TxResult>, mut found: Vec<bool>) -> Result<(Item, bool), Error> {
    match (results.pop(), found.pop()) {
        (Some(TxResult::Put(item)), Some(found)) => Ok((item, !found)),
        _ => Err(StorageError::msg("put returned no item").into()),
    }
}

/// What [`Store::plan`] builds from one snapshot.
struct Plan {
    batch: WriteBatch,
    /// The results the operations will have once the batch commits.
    results: Vec<TxResult>,
    /// For each batch operation, the path it belongs to (to name a conflict).
    owners: Vec<KeyPath>,
    /// For each batch operation, whether it writes a generated id, a sequence or the change
    /// log: a failed condition there is not the caller's conflict (plan again).
    generated: Vec<bool>,
    /// For each operation, whether a live item was at its path.
    found: Vec<bool>,
}

fn check_condition(
    path: &KeyPath,
    condition: Condition,
    current: Option<&Record>,
) -> Result<(), Error> {
    let version = current.map(|r| r.version);
    let holds = match condition {
        Condition::MustNotExist => version.is_none(),
        Condition::MustExist => version.is_some(),
        Condition::IfVersion(v) => version == Some(v),
    };
    if holds {
        Ok(())
    } else {
        Err(Error::ConditionFailed {
            path: path.clone(),
            condition,
            current: version,
        })
    }
}

/// The newest revision's version, so a re-created item continues its history's numbering.
fn latest_revision<R: Reader>(reader: &R, key: &Key) -> Result<Option<u64>, Error> {
    let newest = reader.scan(
        &key.partition,
        &layout::revision_range(key),
        Direction::Forward,
        1,
    )?;
    Ok(newest
        .into_iter()
        .find(|(sort, _)| layout::is_revision_of(key, sort))
        .map(|(_, r)| r.version))
}

/// Revisions beyond the newest `retention - 1` (the put adds one more).
fn old_revisions<R: Reader>(reader: &R, key: &Key, retention: u32) -> Result<Vec<Key>, Error> {
    let keep = retention.saturating_sub(1) as usize;
    // Trimming on every write keeps the excess at one revision, so reading a few beyond `keep`
    // finds it. A full read means the retention was lowered since the last write: read them all,
    // or the excess would shrink by only a batch per write.
    let range = layout::revision_range(key);
    let mut entries = reader.scan(&key.partition, &range, Direction::Forward, keep + 16)?;
    if entries.len() == keep + 16 {
        entries = reader.scan(&key.partition, &range, Direction::Forward, usize::MAX)?;
    }
    Ok(entries
        .into_iter()
        .filter(|(sort, _)| layout::is_revision_of(key, sort))
        .skip(keep)
        .map(|(sort, _)| Key {
            partition: key.partition.clone(),
            sort,
        })
        .collect())
}

pub(crate) fn index_record(now: i64) -> Record {
    Record {
        version: 1,
        created_at: now,
        modified_at: now,
        expires_at: None,
        value: Vec::new(),
    }
}

fn setting_record(retention: u32, now: i64) -> Record {
    Record {
        version: 1,
        created_at: now,
        modified_at: now,
        expires_at: None,
        value: retention.to_string().into_bytes(),
    }
}

/// An expiry must lie in the future: a put that is dead on arrival is a mistake (use delete).
fn check_expiry(path: &KeyPath, expires: Option<Expiry>, now: i64) -> Result<(), Error> {
    match expires {
        Some(Expiry::After(d)) if d.is_zero() => Err(Error::InvalidRequest(format!(
            "{path}: a time to live must be at least 1 second, not 0 (to remove the item, delete it)"
        ))),
        Some(Expiry::At(t)) if t.0 <= now => Err(Error::InvalidRequest(format!(
            "{path}: the expiry time {} is not in the future (to remove the item, delete it)",
            t.0
        ))),
        _ => Ok(()),
    }
}

/// A revision's sort key is the item's plus 9 bytes, and must fit the same limit (DynamoDB
/// refuses longer keys).
fn revision_key_fits(path: &KeyPath, item_sort_len: usize) -> Result<(), Error> {
    let size = item_sort_len + layout::REVISION_OVERHEAD;
    if size > MAX_SORT_KEY_BYTES {
        return Err(Error::KeyTooLarge {
            path: path.clone(),
            part: "sort key with history",
            size,
            max: MAX_SORT_KEY_BYTES,
        });
    }
    Ok(())
}

/// [`revision_key_fits`] for a path.
pub(crate) fn check_revision_key(path: &KeyPath) -> Result<(), Error> {
    revision_key_fits(path, path.sort_key().len())
}

/// The version after `version`, refused past [`MAX_VERSION`] rather than overflowing.
pub(crate) fn next_version(path: &KeyPath, version: u64) -> Result<u64, Error> {
    version
        .checked_add(1)
        .filter(|v| *v <= MAX_VERSION)
        .ok_or_else(|| {
            Error::InvalidRequest(format!(
                "{path} is at version {version}, the largest a version can be"
            ))
        })
}

/// The key size limits.
pub(crate) fn check_key(path: &KeyPath) -> Result<(), Error> {
    checked_item_key(path).map(drop)
}

/// The item's key, after checking the size limits on it (each key encoded once).
pub(crate) fn checked_item_key(path: &KeyPath) -> Result<crate::backend::Key, Error> {
    let key = layout::item_key(path);
    if key.partition.len() > MAX_GROUP_BYTES {
        return Err(Error::KeyTooLarge {
            path: path.clone(),
            part: "group",
            size: key.partition.len(),
            max: MAX_GROUP_BYTES,
        });
    }
    if key.sort.len() > MAX_SORT_KEY_BYTES {
        return Err(Error::KeyTooLarge {
            path: path.clone(),
            part: "sort key",
            size: key.sort.len(),
            max: MAX_SORT_KEY_BYTES,
        });
    }
    Ok(key)
}

pub(crate) fn check_item_size(path: &KeyPath, value: &Json) -> Result<(), Error> {
    let size =
        value.as_str().len() + path.partition_key().len() + path.sort_key().len() + ITEM_OVERHEAD;
    if size > MAX_ITEM_BYTES {
        return Err(Error::ItemTooLarge {
            path: path.clone(),
            size,
            max: MAX_ITEM_BYTES,
        });
    }
    Ok(())
}
