//! [`Store`]: the data API over any [`Backend`], as a thin facade over the layers below it.
//! Reads use one snapshot per call (list.rs, groups.rs, feed.rs, export.rs read; this module
//! opens the snapshot). Writes go through the write pipeline (write/): this module opens a
//! snapshot, lets the stages plan a batch that is conditional on the versions read, and commits
//! it, so a concurrent change makes the batch fail instead of being overwritten.
//!
//! Nothing below this module knows `Store`: it is the only module that ties the backend, the
//! settings and the pipeline together.

use crate::alias_builds::{AliasBuild, AliasState, Step as AliasStep};
use crate::backend::{
    Backend, Direction, FileBackend, FileOptions, Reader, Replan, WriteBatch, WriteError,
};
use crate::changelog::{ChangePage, ChangeToken};
use crate::export::{
    ExportEnd, ExportError, Exporter, ImportError, ImportRecord, ImportReport, Importer,
    OnExisting, ScanPage,
};
use crate::groups::GroupPage;
use crate::interactive::{MAX_TRANSACTION_ATTEMPTS, Reads, Tx};
use crate::limits::{MAX_GET_MANY, MAX_TRANSACTION_OPS, check_key, checked_item_key};
use crate::list::{ListPage, ListRequest};
use crate::listed::ListedPage;
use crate::namespace_scan::{SchemaCheck, ViolationPage};
use crate::namespaces::{Definition, NamespaceDefinition, Namespaces, Schema};
use crate::ops::{IdKind, Parent, Transaction, TxOp, TxResult};
use crate::options::{PutOptions, StoreOptions};
use crate::patch::Patch;
use crate::record::{resolve, resolve_many, to_item, visible};
use crate::subtree::{PendingJob, Relocator, SubtreeJob};
use crate::token::TokenKey;
use crate::waiters::{ChangedGroups, Waiters};
use crate::write::{self, Plan, Settings};
use crate::{Condition, Error, Item, Json, StorageError, layout};
use pathdb_keys::KeyPath;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What a plan decided: one result per operation and whether each found a live item, or why
/// the operations cannot be written.
type Planned = Result<(Vec<TxResult>, Vec<bool>), Error>;

/// What the plans made inside a group commit ([`Store::replan`]) left for the caller.
#[derive(Default)]
struct Replanned {
    /// What the last of them decided.
    decided: Option<Planned>,
    /// The groups of their batches' change log entries: one of them may be what committed.
    groups: ChangedGroups,
}

struct Inner<B> {
    backend: B,
    options: StoreOptions,
    /// The namespace definitions, schemas compiled (namespaces.rs).
    namespaces: Namespaces,
    /// The change feeds waiting for a commit, per group; woken after each commit.
    waiters: Waiters,
    /// Plans made, to spread the removal of expired log entries (write/changelog.rs).
    plans: AtomicU64,
    /// Seals the tokens this database hands out (token.rs).
    tokens: TokenKey,
    /// When each group's change log next needs trimming (write/changelog.rs).
    trims: crate::changelog::TrimSchedule,
}

impl<B: Backend> Inner<B> {
    fn now(&self) -> i64 {
        self.options.clock.now().0
    }

    /// What every plan of this store needs besides a snapshot.
    fn settings(&self) -> Settings<'_> {
        Settings {
            namespaces: &self.namespaces,
            max_batch_ops: self.backend.max_batch_ops(),
            change_retention: self.options.change_retention,
            plans: &self.plans,
            trims: &self.trims,
            tokens: &self.tokens,
        }
    }

    /// Plans `ops` on the state `reader` shows (a snapshot, or a group commit's state when
    /// planned again there), within the backend's batch size.
    fn plan_on<R: Reader + ?Sized>(&self, reader: &R, ops: &[TxOp]) -> Result<Plan, Error> {
        let plan = write::plan(&self.settings().context(reader, self.now()), ops)?;
        write::check_batch_size(&plan, self.backend.max_batch_ops())?;
        Ok(plan)
    }

    /// Whether a read of `path`, where `record` is stored, is served: `Ok(false)` for an alias
    /// of a template its namespace no longer has (being removed: as if gone), and
    /// [`Error::AliasBuilding`] for an alias, or a path that could be one, of a template whose
    /// build is not done.
    fn alias_served<R: Reader>(
        &self,
        reader: &R,
        path: &KeyPath,
        record: Option<&crate::backend::Record>,
    ) -> Result<bool, Error> {
        let of = record
            .map(|r| crate::aliases::parse_alias(&r.value))
            .transpose()?
            .flatten();
        // The common case, an item: nothing to look up.
        if of.is_none() && record.is_some() {
            return Ok(true);
        }
        let builds = self.namespaces.builds(reader)?;
        match of {
            Some(of) => {
                let namespace = of.item.last().namespace().as_str();
                let definitions = self.namespaces.current(reader)?;
                let current = definitions
                    .get(namespace)
                    .is_some_and(|c| c.aliases.iter().any(|t| t.as_str() == of.template));
                if !current {
                    return Ok(false);
                }
                match builds.get(&(namespace.to_owned(), of.template)) {
                    Some(build) if build.state != AliasState::Ready => {
                        self.still_building(reader, namespace, build).map(|()| true)
                    }
                    _ => Ok(true),
                }
            }
            // Nothing (or an item) here: a build under way may not have written it yet.
            None if record.is_none() => {
                self.refuse_unbuilt(reader, &builds, |t| t.could_make(path))?;
                Ok(true)
            }
            None => Ok(true),
        }
    }

    /// [`Error::AliasBuilding`] for `build`, unless the database says it is done by now: the
    /// store's copy is read again after a build ends, but a reader may come in between (and on
    /// a shared backend another server may have finished it).
    fn still_building<R: Reader + ?Sized>(
        &self,
        reader: &R,
        namespace: &str,
        build: &AliasBuild,
    ) -> Result<(), Error> {
        let stored = crate::alias_builds::read_one(reader, namespace, &build.template)?;
        match stored {
            Some(now) if now.state != AliasState::Ready => Err(Error::AliasBuilding {
                namespace: namespace.to_owned(),
                template: now.template,
                state: now.state.as_str(),
                checked: now.checked,
            }),
            _ => Ok(()),
        }
    }

    /// [`Error::AliasBuilding`] if a listing of `prefix` may meet aliases of a template whose
    /// build is not done.
    fn alias_prefix_served(&self, prefix: &KeyPath) -> Result<(), Error> {
        // The common case, every template ready as last read: no reader for this.
        let cached = self.namespaces.builds_cached()?;
        if !cached.values().any(|b| b.state.is_unbuilt()) && !self.backend.shared() {
            return Ok(());
        }
        let reader = self.backend.reader()?;
        let builds = self.namespaces.builds(&reader)?;
        self.refuse_unbuilt(&reader, &builds, |t| t.may_lie_under(prefix))
    }

    /// [`Error::AliasBuilding`] for the first template of `builds` whose build is not done
    /// (confirmed against the database, [`Inner::still_building`]) and that `meets` the read.
    fn refuse_unbuilt<R: Reader + ?Sized>(
        &self,
        reader: &R,
        builds: &crate::alias_builds::Builds,
        meets: impl Fn(&crate::aliases::Template) -> bool,
    ) -> Result<(), Error> {
        for ((namespace, template), build) in builds {
            if build.state.is_unbuilt()
                && crate::aliases::Template::parse(template).is_ok_and(|t| meets(&t))
            {
                self.still_building(reader, namespace, build)?;
            }
        }
        Ok(())
    }

    /// Runs steps of the pending alias builds and removals (alias_builds.rs) for about
    /// `budget`; returns the steps run.
    fn build_aliases(&self, budget: Duration, fresh: bool) -> Result<usize, Error> {
        let started = std::time::Instant::now();
        let mut steps = 0;
        let pending = |builds: &crate::alias_builds::Builds| {
            builds
                .iter()
                .filter(|(_, b)| matches!(b.state, AliasState::Building | AliasState::Removing))
                .map(|((ns, t), _)| (ns.clone(), t.clone()))
                .collect::<Vec<_>>()
        };
        // In the background, the store's copy: a build another server started shows up when
        // this one next reads the definitions (before a write, at most once a second), and an
        // idle store reads nothing. Asked for (`fresh`), what is stored now.
        let mut todo = if fresh {
            pending(&crate::alias_builds::read_all(&self.backend.reader()?)?)
        } else {
            pending(&*self.namespaces.builds_cached()?)
        };
        while let Some((namespace, template)) = todo.pop() {
            loop {
                let step = crate::alias_builds::step(
                    &self.backend,
                    &namespace,
                    &template,
                    self.now(),
                    self.backend.max_batch_ops(),
                )?;
                steps += 1;
                match step {
                    AliasStep::More if started.elapsed() < budget => continue,
                    AliasStep::More => return Ok(steps),
                    AliasStep::Done => break,
                    AliasStep::Changed => {
                        let backend = &self.backend;
                        self.namespaces
                            .reload(|| backend.reader().map_err(Error::from))?;
                        break;
                    }
                }
            }
        }
        Ok(steps)
    }

    /// Removes up to one batch of expired items.
    fn sweep(&self) -> Result<usize, Error> {
        crate::ttl::sweep(
            &self.backend,
            &self.settings(),
            &self.waiters,
            self.now(),
            crate::ttl::SWEEP_BATCH,
        )
    }
}

/// How often the background builder looks for pending alias builds (in the store's copy of the
/// definitions: no read when there are none).
const ALIAS_BUILD_TICK: Duration = Duration::from_millis(100);
/// How long it builds before it lets the thread stop if the store is dropped.
const ALIAS_BUILD_SLICE: Duration = Duration::from_secs(1);

/// PathDB's data API over a backend. Cheap to clone; clones share the backend.
pub struct Store<B: Backend> {
    inner: Arc<Inner<B>>,
    _sweeper: Option<Arc<crate::ttl::Sweeper>>,
    _builder: Option<Arc<crate::ttl::Sweeper>>,
}

impl<B: Backend> Clone for Store<B> {
    fn clone(&self) -> Self {
        Store {
            inner: Arc::clone(&self.inner),
            _sweeper: self._sweeper.clone(),
            _builder: self._builder.clone(),
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

impl<B: Backend> Store<B> {
    /// A store over `backend`; starts the expiry sweeper unless disabled.
    ///
    /// # Errors
    /// The backend cannot be read.
    pub fn new(backend: B, options: StoreOptions) -> Result<Self, Error> {
        crate::upgrade::record_used_paths(&backend)?;
        let reader = backend.reader()?;
        let refresh = backend.shared().then_some(options.definitions_refresh);
        let namespaces = Namespaces::load(&reader, options.default_history_retention, refresh)?;
        drop(reader);
        let tokens = TokenKey::load_or_create(&backend)?;
        let sweep = options.sweep_interval;
        let inner = Arc::new(Inner {
            backend,
            options,
            namespaces,
            waiters: Waiters::new(),
            plans: AtomicU64::new(0),
            tokens,
            trims: Default::default(),
        });
        let sweeper = sweep.map(|interval| {
            let inner = Arc::downgrade(&inner);
            let sweep = move || inner.upgrade().map(|inner| inner.sweep());
            Arc::new(crate::ttl::Sweeper::start(interval, sweep))
        });
        // Alias builds are background upkeep too: they run where the sweeper does (not on a
        // read-only store, nor where a test drives time), and otherwise when asked
        // (`Store::run_alias_builds`).
        let builder = sweep.map(|_| {
            let inner = Arc::downgrade(&inner);
            let build = move || {
                inner
                    .upgrade()
                    .map(|inner| inner.build_aliases(ALIAS_BUILD_SLICE, false))
            };
            Arc::new(crate::ttl::Sweeper::start_named(
                "pathdb-aliases",
                "alias build",
                ALIAS_BUILD_TICK,
                build,
            ))
        });
        Ok(Store {
            inner,
            _sweeper: sweeper,
            _builder: builder,
        })
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.inner.backend
    }

    fn now(&self) -> i64 {
        self.inner.now()
    }

    /// The item at `path`, if it exists and has not expired.
    ///
    /// # Errors
    /// Storage failures.
    pub fn get(&self, path: &KeyPath) -> Result<Option<Item>, Error> {
        let key = checked_item_key(path)?;
        let reader = self.inner.backend.reader()?;
        let now = self.now();
        let record = visible(reader.get(&key)?, now);
        if !self.inner.alias_served(&reader, path, record.as_ref())? {
            return Ok(None);
        }
        let Some(record) = record else {
            return Ok(None);
        };
        resolve(&reader, now, to_item(path.clone(), record)?)
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
            let record = visible(record, now);
            if !self.inner.alias_served(&reader, path, record.as_ref())? {
                continue;
            }
            if let Some(r) = record {
                items.push(to_item(path.clone(), r)?);
            }
        }
        Ok(resolve_many(&reader, now, items)?
            .into_iter()
            .flatten()
            .collect())
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
        let (results, found) = self.execute(&[op])?;
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
            let groups = ChangedGroups::of(&batch);
            let written = match self.inner.backend.write_queued(batch) {
                Ok(pending) => pending.await,
                Err(batch) => self.inner.backend.write(batch),
            };
            match written {
                Ok(()) => {
                    // Change feeds waiting for a commit (as `execute` does).
                    self.inner.waiters.notify(&groups);
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
        match self.execute(&[op])?.0.pop() {
            Some(TxResult::Put(item)) => Ok(item),
            _ => Err(StorageError::msg("create returned no item").into()),
        }
    }

    /// Changes part of the item at `path` (see [`Patch`]) and returns the item as written: the
    /// patch applies to the value read, and the result is written conditionally on that read,
    /// so a concurrent write makes it read and apply again rather than fail. `options` are a
    /// put's (condition, history, expiry); with `create`, a patch of a missing item applies
    /// to `{}`.
    ///
    /// # Errors
    /// [`Error::ItemNotFound`] (no item, without `create`), [`Error::PatchTestFailed`],
    /// [`Error::PatchConflict`], [`Error::ConditionFailed`], size limits, storage failures.
    pub fn patch(
        &self,
        path: &KeyPath,
        patch: Patch,
        options: PutOptions,
        create: bool,
    ) -> Result<Item, Error> {
        self.patch_created(path, patch, options, create)
            .map(|(item, _)| item)
    }

    /// [`Store::patch`], also telling whether it created the item (`create`, and no live item
    /// was there), as [`Store::put_created`] does.
    ///
    /// # Errors
    /// As [`Store::patch`].
    pub fn patch_created(
        &self,
        path: &KeyPath,
        patch: Patch,
        options: PutOptions,
        create: bool,
    ) -> Result<(Item, bool), Error> {
        let op = TxOp::Patch {
            path: path.clone(),
            patch,
            options,
            create,
        };
        let (results, found) = self.execute(&[op])?;
        put_outcome(results, found)
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
        match self.execute(&[op])?.0.pop() {
            Some(TxResult::Deleted(item)) => Ok(item),
            _ => Err(StorageError::msg("delete returned no result").into()),
        }
    }

    /// Applies a transaction all or nothing; one result per operation.
    ///
    /// A concurrent write to what the transaction reads makes it plan again on the new state,
    /// as a single write does, so a condition that fails is reported as
    /// [`Error::ConditionFailed`] (or [`Error::ListChanged`]) whenever it fails, before the
    /// commit or in a race with it.
    ///
    /// # Errors
    /// [`Error::ConditionFailed`], [`Error::ListChanged`] (nothing written);
    /// [`Error::InvalidRequest`] for an empty
    /// transaction, more than [`MAX_TRANSACTION_OPS`] operations or a path used twice (except a
    /// patch after a put of its path, which applies to the value put).
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
        let (ops, result_of) = crate::ops::fold_into_puts(&tx.ops)?;
        let (results, _) = self.execute(&ops).map_err(|e| match e {
            // Planned on the folded operations: name the caller's.
            Error::ListChanged {
                index,
                prefix,
                path,
            } => Error::ListChanged {
                index: result_of.iter().position(|&i| i == index).unwrap_or(index),
                prefix,
                path,
            },
            other => other,
        })?;
        result_of
            .into_iter()
            .map(|i| {
                results
                    .get(i)
                    .cloned()
                    .ok_or_else(|| StorageError::msg("a transaction lost a result").into())
            })
            .collect()
    }

    /// Runs `f` as an interactive transaction and returns its value: `f` reads and writes through
    /// its [`Tx`]; its writes commit all or nothing, and only if nothing it read (items, their
    /// absence, listings) changed meanwhile. When something did, `f` runs again, on what is
    /// there now, after a short random pause, up to [`MAX_TRANSACTION_ATTEMPTS`] runs in all;
    /// then the failed condition is returned. So `f` may run more than once: it must have no
    /// effects outside its `Tx`. An error from `f` writes nothing and is returned as is.
    /// See docs/transactions.md.
    ///
    /// ```
    /// use pathdb_store::backend::InMemoryBackend;
    /// use pathdb_store::{Error, Json, PutOptions, Store, StoreOptions};
    ///
    /// let store = Store::new(InMemoryBackend::new(), StoreOptions::default())?;
    /// let (a, b) = ("/account-1".parse()?, "/account-2".parse()?);
    /// for path in [&a, &b] {
    ///     store.put(path, Json::parse(r#"{"balance": 100}"#)?, PutOptions::default())?;
    /// }
    /// let balance = |item: Option<pathdb_store::Item>| -> i64 {
    ///     item.and_then(|i| i.value.to_value()["balance"].as_i64()).unwrap_or(0)
    /// };
    /// let moved = store.transaction(|tx| {
    ///     let (from, to) = (balance(tx.get(&a)?), balance(tx.get(&b)?));
    ///     if from < 30 {
    ///         return Ok(false); // refused: nothing is written
    ///     }
    ///     tx.put(&a, Json::parse(&format!(r#"{{"balance": {}}}"#, from - 30))?);
    ///     tx.put(&b, Json::parse(&format!(r#"{{"balance": {}}}"#, to + 30))?);
    ///     Ok::<_, Error>(true)
    /// })?;
    /// assert!(moved);
    /// assert_eq!(balance(store.get(&b)?), 130);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::ConditionFailed`] or [`Error::ListChanged`] when what `f` read kept changing for
    /// [`MAX_TRANSACTION_ATTEMPTS`] runs; what `f` returned; [`Store::transact`]'s errors (more
    /// than [`MAX_TRANSACTION_OPS`] reads and writes together, size limits, storage failures).
    pub fn transaction<T>(
        &self,
        f: impl FnMut(&mut Tx<'_>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        self.transaction_results(f).map(|(value, _)| value)
    }

    /// [`Store::transaction`], also returning the commit's results: first one per
    /// [`Tx::create`] (at the index it returned), then one per write, then one per check; empty
    /// when `f` neither read nor wrote.
    ///
    /// # Errors
    /// As [`Store::transaction`].
    pub fn transaction_results<T>(
        &self,
        mut f: impl FnMut(&mut Tx<'_>) -> Result<T, Error>,
    ) -> Result<(T, Vec<TxResult>), Error> {
        let mut attempt = 1;
        loop {
            let mut tx = Tx::new(self);
            let value = f(&mut tx)?;
            let Some(transaction) = tx.finish() else {
                return Ok((value, Vec::new()));
            };
            match self.transact(transaction) {
                Ok(results) => return Ok((value, results)),
                Err(e) if e.is_condition_failed() && attempt < MAX_TRANSACTION_ATTEMPTS => {
                    attempt += 1;
                    write::backoff(attempt);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Reads, checks and commits `ops`, re-running after a concurrent change until the write
    /// commits or the caller's own condition fails.
    ///
    /// The retry is unbounded on purpose: a batch fails only when a key it read changed, that
    /// is, when another write committed in between (to the same item, or to the group of a
    /// listing it checks), so every lost race is someone else's progress (lock-free). A bound
    /// turned contention into an [`Error::Conflict`] from a put or delete that has no
    /// condition, which callers neither expect nor can act on: with eight writers on one item
    /// and group commit (all but one batch of a group lose), 16 attempts ran out within a dozen
    /// puts each. Transactions retry the same way, so their failed conditions are always
    /// [`Error::ConditionFailed`] or [`Error::ListChanged`], never a conflict.
    ///
    /// Also returns, per operation, whether the committed plan found a live item at its path.
    fn execute(&self, ops: &[TxOp]) -> Result<(Vec<TxResult>, Vec<bool>), Error> {
        self.check_ops(ops)?;
        let mut attempt = 0u32;
        loop {
            let plan = self.plan(ops)?;
            let mut groups = ChangedGroups::of(&plan.batch);
            let replanned = Arc::new(Mutex::new(Replanned::default()));
            let replan = self.replan(ops, Arc::clone(&replanned));
            let written = self.inner.backend.write_replanning(plan.batch, replan);
            // What a plan made inside the commit decided, if the backend made one.
            let Replanned {
                decided: replanned,
                groups: replanned_groups,
            } = std::mem::take(
                &mut *replanned
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            );
            match written {
                Ok(()) => {
                    // Either the first plan's batch or a replanned one committed: wake both's
                    // groups (a replanned create may have picked another new group).
                    groups.merge(replanned_groups);
                    self.inner.waiters.notify(&groups);
                    return Ok(match replanned {
                        Some(Ok(outcome)) => outcome,
                        _ => (plan.results, plan.found),
                    });
                }
                Err(WriteError::ConditionFailed { index }) => {
                    // Planned again on the state it met, it failed the caller's condition or
                    // patch.
                    if let Some(Err(e)) = replanned {
                        return Err(e);
                    }
                    // A generated id, a sequence or a change log's end that someone else took
                    // meanwhile: racers for one all read the same state, and a short random
                    // pause spreads them out instead of replanning in lockstep.
                    if plan.generated.get(index).copied().unwrap_or(false) {
                        attempt += 1;
                        write::backoff(attempt);
                    }
                }
                Err(WriteError::Storage(e)) => return Err(e.into()),
            }
        }
    }

    /// For [`Backend::write_replanning`]: plans `ops` again on the state a batch met inside a
    /// group commit, leaving what that plan decided (its results, or why it cannot be written)
    /// and the groups its batch logs changes in, in `outcome`.
    fn replan(&self, ops: &[TxOp], outcome: Arc<Mutex<Replanned>>) -> Replan {
        // Weak: the committer thread may drop the closure after the caller (and the store)
        // are gone, and the last owner of the store must not be the thread it joins on drop.
        // While the closure runs, the caller waits for its commit, holding the store.
        let inner = Arc::downgrade(&self.inner);
        let ops = ops.to_vec();
        Box::new(move |reader: &dyn Reader| {
            let inner = inner.upgrade()?;
            let (batch, decided) = match inner.plan_on(reader, &ops) {
                Ok(plan) => (Some(plan.batch), Ok((plan.results, plan.found))),
                Err(e) => (None, Err(e)),
            };
            let mut outcome = outcome
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            outcome.decided = Some(decided);
            if let Some(batch) = &batch {
                outcome.groups.merge(ChangedGroups::of(batch));
            }
            batch
        })
    }

    /// Plans `ops` from a new snapshot.
    fn plan(&self, ops: &[TxOp]) -> Result<Plan, Error> {
        self.inner.plan_on(&self.inner.backend.reader()?, ops)
    }

    /// The limits every write checks before reading anything.
    fn check_ops(&self, ops: &[TxOp]) -> Result<(), Error> {
        write::check_ops(ops, self.now())
    }

    /// Turns history on for every item whose last element has `namespace`, keeping `retention`
    /// revisions each, or off with `None`: the `history` member of its definition
    /// ([`Store::define_namespace`]), the rest of the definition kept.
    ///
    /// # Errors
    /// Invalid namespace, zero retention, storage failures.
    pub fn set_namespace_history(
        &self,
        namespace: &str,
        retention: Option<u32>,
    ) -> Result<(), Error> {
        loop {
            let current = self.namespace(namespace)?;
            let condition = Some(match &current {
                Some(c) => Condition::IfVersion(c.version),
                None => Condition::MustNotExist,
            });
            let mut definition = current.map(|c| c.definition).unwrap_or_default();
            definition.history = retention;
            let written = if definition == Definition::default() {
                self.delete_namespace(namespace, condition).map(|_| ())
            } else {
                self.define_namespace(namespace, definition, condition)
                    .map(|_| ())
            };
            match written {
                // Someone changed the definition between the read and the write.
                Err(Error::DefinitionConditionFailed { .. }) => continue,
                other => return other,
            }
        }
    }

    /// The definition of `namespace`, as stored now.
    ///
    /// # Errors
    /// Storage failures.
    pub fn namespace(&self, namespace: &str) -> Result<Option<NamespaceDefinition>, Error> {
        let reader = self.inner.backend.reader()?;
        match reader.get(&layout::namespace_key(namespace))? {
            Some(record) => crate::namespaces::from_record(namespace, &record),
            None => Ok(None),
        }
    }

    /// Up to `limit` definitions in namespace order, after the namespace `after`; the page
    /// holds fewer than `limit` only at the end.
    ///
    /// # Errors
    /// Storage failures.
    pub fn namespaces(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<NamespaceDefinition>, Error> {
        let reader = self.inner.backend.reader()?;
        let mut out = Vec::new();
        let mut after = after.map(str::to_owned);
        // Tombstones take no place in a page: read on past them.
        while out.len() < limit {
            let entries = reader.scan(
                layout::SYSTEM_PARTITION,
                &layout::namespace_range(after.as_deref()),
                Direction::Forward,
                limit - out.len(),
            )?;
            let Some((last, _)) = entries.last() else {
                break;
            };
            after = Some(String::from_utf8_lossy(&last[1..]).into_owned());
            for (sort, record) in &entries {
                let namespace = String::from_utf8_lossy(&sort[1..]);
                out.extend(crate::namespaces::from_record(&namespace, record)?);
            }
        }
        Ok(out)
    }

    /// Creates or replaces the definition of `namespace`, if `condition` holds for the one
    /// stored (`IfVersion`, `MustNotExist`, `MustExist`, as for items). It applies to every
    /// write that starts after this returns (on a store that shares its database with others,
    /// theirs within [`StoreOptions::definitions_refresh`]); items stored already are not
    /// checked again (see [`Store::check_schema`]). Returns the definition stored and whether
    /// it is new.
    ///
    /// # Errors
    /// [`Error::InvalidSchema`], [`Error::InvalidRequest`] (namespace, zero history),
    /// [`Error::DefinitionConditionFailed`], storage failures.
    pub fn define_namespace(
        &self,
        namespace: &str,
        definition: Definition,
        condition: Option<Condition>,
    ) -> Result<(NamespaceDefinition, bool), Error> {
        crate::namespaces::check(namespace, &definition)?;
        let value = crate::namespaces::to_value(&definition);
        // A definition is one record, like an item (DynamoDB's 400 KB).
        if value.len() > crate::MAX_ITEM_BYTES - 1000 {
            return Err(Error::InvalidRequest(format!(
                "a namespace definition takes at most {} bytes as JSON, this one {}",
                crate::MAX_ITEM_BYTES - 1000,
                value.len()
            )));
        }
        let (stored, created) = self.write_definition(namespace, condition, Some(value))?;
        let stored = NamespaceDefinition {
            definition,
            ..stored.ok_or_else(|| StorageError::msg("definition write returned nothing"))?
        };
        self.reload_definitions()?;
        Ok((stored, created))
    }

    /// What [`Store::define_namespace`] would refuse `definition` for, without storing it: an
    /// invalid namespace or history, a schema that does not compile, or `condition` not
    /// holding for the definition stored now. Returns the compiled schema, for
    /// [`Store::check_schema`] (a dry run).
    ///
    /// # Errors
    /// As [`Store::define_namespace`].
    pub fn check_definition(
        &self,
        namespace: &str,
        definition: &Definition,
        condition: Option<Condition>,
    ) -> Result<Option<Schema>, Error> {
        let schema = crate::namespaces::check(namespace, definition)?;
        if let Some(condition) = condition {
            let current = self.namespace(namespace)?.map(|d| d.version);
            if !condition.holds(current) {
                return Err(Error::DefinitionConditionFailed {
                    namespace: namespace.to_owned(),
                    condition,
                    current,
                });
            }
        }
        Ok(schema)
    }

    /// Removes the definition of `namespace` (its items stay), if `condition` holds; returns
    /// the definition removed, `None` if there was none.
    ///
    /// # Errors
    /// [`Error::DefinitionConditionFailed`], storage failures.
    pub fn delete_namespace(
        &self,
        namespace: &str,
        condition: Option<Condition>,
    ) -> Result<Option<NamespaceDefinition>, Error> {
        let (removed, _) = self.write_definition(namespace, condition, None)?;
        if removed.is_some() {
            self.reload_definitions()?;
        }
        Ok(removed)
    }

    /// Where each alias template of `namespace` stands (docs/aliases.md): the templates of its
    /// definition, each `ready` unless a build is under way or stopped, then the templates
    /// being removed. Read from the database, not the store's copy.
    ///
    /// # Errors
    /// Storage failures.
    pub fn alias_builds(&self, namespace: &str) -> Result<Vec<AliasBuild>, Error> {
        let definition = self.namespace(namespace)?;
        let aliases = definition.map(|d| d.definition.aliases).unwrap_or_default();
        let mut builds = crate::alias_builds::read_all(&self.inner.backend.reader()?)?;
        let templates = aliases.iter().map(|a| a.path.as_str());
        Ok(crate::alias_builds::of_namespace(
            namespace,
            templates,
            &mut builds,
        ))
    }

    /// [`Store::alias_builds`] of each of `definitions` (a page of [`Store::namespaces`]),
    /// reading the builds once.
    ///
    /// # Errors
    /// Storage failures.
    pub fn alias_builds_of(
        &self,
        definitions: &[NamespaceDefinition],
    ) -> Result<Vec<Vec<AliasBuild>>, Error> {
        let mut builds = crate::alias_builds::read_all(&self.inner.backend.reader()?)?;
        Ok(definitions
            .iter()
            .map(|d| {
                let templates = d.definition.aliases.iter().map(|a| a.path.as_str());
                crate::alias_builds::of_namespace(&d.namespace, templates, &mut builds)
            })
            .collect())
    }

    /// Runs the pending alias builds and removals to the end (a background thread does so too,
    /// where the store sweeps expired items: [`StoreOptions::sweep_interval`]); returns the
    /// steps run. A build that meets a conflict stops there ([`Store::retry_alias_build`]).
    ///
    /// # Errors
    /// Storage failures.
    pub fn run_alias_builds(&self) -> Result<usize, Error> {
        let mut total = 0;
        loop {
            let steps = self.inner.build_aliases(Duration::from_secs(3600), true)?;
            total += steps;
            if steps == 0 {
                return Ok(total);
            }
        }
    }

    /// Runs steps of the pending alias builds and removals for about `budget` (the CLI shows
    /// progress between calls); returns the steps run, 0 when none is pending.
    ///
    /// # Errors
    /// Storage failures.
    pub fn step_alias_builds(&self, budget: Duration) -> Result<usize, Error> {
        self.inner.build_aliases(budget, true)
    }

    /// Starts the build of `template` of `namespace` again from the beginning, after a
    /// conflict (fix the items it listed first).
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] if that build is not in conflict; storage failures.
    pub fn retry_alias_build(&self, namespace: &str, template: &str) -> Result<(), Error> {
        crate::alias_builds::retry(&self.inner.backend, namespace, template, self.now())?;
        self.reload_definitions()
    }

    /// Brings the store's copy of the definitions up to what is stored, after this store
    /// changed one: it applies to the writes that start after the change returns.
    fn reload_definitions(&self) -> Result<(), Error> {
        let backend = &self.inner.backend;
        self.inner
            .namespaces
            .reload(|| backend.reader().map_err(Error::from))
    }

    /// Writes `value` as the definition of `namespace` (`None`: its tombstone) over the record
    /// read, if `condition` holds; again on a concurrent change. Returns the definition written
    /// (for a delete: the one removed) and whether none was live before.
    fn write_definition(
        &self,
        namespace: &str,
        condition: Option<Condition>,
        value: Option<Vec<u8>>,
    ) -> Result<(Option<NamespaceDefinition>, bool), Error> {
        pathdb_keys::Namespace::new(namespace)
            .map_err(|rule| Error::InvalidRequest(format!("namespace {namespace:?}: {rule}")))?;
        let key = layout::namespace_key(namespace);
        loop {
            let now = self.now();
            let stored = self.inner.backend.reader()?.get(&key)?;
            let live = stored.as_ref().filter(|r| !r.value.is_empty());
            let version = live.map(|r| r.version);
            if let Some(condition) = condition
                && !condition.holds(version)
            {
                return Err(Error::DefinitionConditionFailed {
                    namespace: namespace.to_owned(),
                    condition,
                    current: version,
                });
            }
            let expect = crate::backend::Expect::as_read(stored.as_ref());
            let next = stored.as_ref().map_or(1, |r| r.version + 1);
            let record = match (&value, live) {
                (Some(value), _) => crate::backend::Record {
                    version: next,
                    created_at: live.map_or(now, |r| r.created_at),
                    modified_at: now,
                    expires_at: None,
                    value: value.clone(),
                },
                // Nothing to delete.
                (None, None) => return Ok((None, true)),
                (None, Some(r)) => crate::record::tombstone(r, next, now),
            };
            let answer = match &value {
                Some(_) => crate::namespaces::from_record(namespace, &record)?,
                None => live
                    .map(|r| crate::namespaces::from_record(namespace, r))
                    .transpose()?
                    .flatten(),
            };
            // A template added or removed starts its build or removal, in the same batch.
            let templates = |d: Option<&NamespaceDefinition>| {
                d.map(|d| {
                    d.definition
                        .aliases
                        .iter()
                        .map(|a| a.path.clone())
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
            };
            let before = live
                .map(|r| crate::namespaces::from_record(namespace, r))
                .transpose()?
                .flatten();
            let after = match &value {
                Some(_) => answer.clone(),
                None => None,
            };
            let (old, new) = (templates(before.as_ref()), templates(after.as_ref()));
            let old: Vec<&str> = old.iter().map(String::as_str).collect();
            let new: Vec<&str> = new.iter().map(String::as_str).collect();
            let mut ops = crate::alias_builds::definition_changed(
                &self.inner.backend.reader()?,
                namespace,
                &old,
                &new,
                now,
            )?;
            ops.push(crate::backend::WriteOp::Put {
                key: key.clone(),
                record,
                expect: Some(expect),
            });
            match self.inner.backend.write(WriteBatch { ops }) {
                Ok(()) => return Ok((answer, live.is_none())),
                // Changed since the read: read again (the caller's condition decides).
                Err(WriteError::ConditionFailed { .. }) => continue,
                Err(WriteError::Storage(e)) => return Err(e.into()),
            }
        }
    }

    /// What `schema` would say about the items of `namespace` stored now: how many it reads,
    /// how many it refuses and the first of those. Reads every item of the database (the
    /// namespace of an item is only known from its path); `progress` gets the records read so
    /// far after each scan request.
    ///
    /// # Errors
    /// Storage failures.
    pub fn check_schema(
        &self,
        namespace: &str,
        schema: &Schema,
        progress: &mut dyn FnMut(u64),
    ) -> Result<SchemaCheck, Error> {
        let inner = &self.inner;
        crate::namespace_scan::check_all(
            &inner.backend,
            &inner.tokens,
            self.now(),
            namespace,
            schema,
            progress,
        )
    }

    /// A page of the stored items of `namespace` that its current schema refuses, from
    /// `cursor` (a page's [`ViolationPage::cursor`]); at most `limit` items, and fewer (even
    /// none, with a cursor) when the page has read its share of the database.
    ///
    /// # Errors
    /// [`Error::NamespaceNotFound`]; a cursor this database did not issue; storage failures.
    pub fn namespace_violations(
        &self,
        namespace: &str,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<ViolationPage, Error> {
        let Some(stored) = self.namespace(namespace)? else {
            return Err(Error::NamespaceNotFound(namespace.to_owned()));
        };
        let Some(schema) = &stored.definition.schema else {
            // Without a schema every value fits.
            return Ok(ViolationPage {
                items: Vec::new(),
                checked: 0,
                cursor: None,
            });
        };
        // The copy compiled for writes, when it is of this version (it usually is); else a
        // compile of the stored one.
        let definitions = self
            .inner
            .namespaces
            .current(&self.inner.backend.reader()?)?;
        let cached = definitions
            .get(namespace)
            .filter(|c| c.stored.version == stored.version)
            .and_then(|c| c.schema.as_ref().ok())
            .and_then(Option::as_ref);
        let compiled;
        let schema = match cached {
            Some(schema) => schema,
            None => {
                compiled = Schema::compile(schema)?;
                &compiled
            }
        };
        let inner = &self.inner;
        crate::namespace_scan::violations(
            &inner.backend,
            &inner.tokens,
            self.now(),
            namespace,
            schema,
            cursor,
            limit.max(1),
        )
    }

    /// Revisions of `path`, newest first, at most `limit`.
    ///
    /// # Errors
    /// Storage failures.
    pub fn history(&self, path: &KeyPath, limit: usize) -> Result<Vec<Item>, Error> {
        checked_item_key(path)?;
        let reader = self.inner.backend.reader()?;
        let path = &own_path(&reader, path, self.now())?;
        let key = layout::item_key(path);
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
        checked_item_key(path)?;
        let reader = self.inner.backend.reader()?;
        let path = &own_path(&reader, path, self.now())?;
        let key = layout::item_key(path);
        if let Some(r) = reader.get(&layout::revision_key(&key, version))? {
            return to_item(path.clone(), r).map(Some);
        }
        match visible(reader.get(&key)?, self.now()) {
            Some(r) if r.version == version => to_item(path.clone(), r).map(Some),
            _ => Ok(None),
        }
    }

    /// One page of a listing inside the group of `request.prefix`.
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] for a limit outside 1..=[`MAX_LIST_LIMIT`](crate::MAX_LIST_LIMIT)
    /// or a bound in another group; [`Error::InvalidPageToken`] for a token from another
    /// listing; storage failures.
    pub fn list(&self, request: &ListRequest) -> Result<ListPage, Error> {
        self.inner.alias_prefix_served(&request.prefix)?;
        crate::list::list(&self.inner.backend, &self.inner.tokens, self.now(), request)
    }

    /// [`Store::list`] with each entry's path kept in its binary form ([`EncodedPath`](crate::EncodedPath)) and
    /// decoded only when asked for: the same entries, order and tokens, without building an owned
    /// `KeyPath` per entry. For callers that read the values, write paths as text
    /// (`EncodedPath` is `Display` and serializes as a `KeyPath` does) or decode only some paths;
    /// [`ListedPage::into_page`](crate::ListedPage::into_page) gives the `ListPage`.
    ///
    /// ```
    /// use pathdb_store::backend::InMemoryBackend;
    /// use pathdb_store::{Json, ListRequest, PutOptions, Store, StoreOptions};
    ///
    /// let store = Store::new(InMemoryBackend::new(), StoreOptions::default())?;
    /// let path = "/user-7/post-1".parse()?;
    /// store.put(&path, Json::parse(r#"{"title": "hi"}"#)?, PutOptions::default())?;
    /// let page = store.list_encoded(&ListRequest::new("/user-7".parse()?))?;
    /// let item = page.items[0].item().ok_or("not an item")?;
    /// assert_eq!(item.path.to_string(), "/user-7/post-1"); // text, from the key's bytes
    /// assert_eq!(item.path.decode(), path); // an owned `KeyPath`, when asked for
    /// assert_eq!(item.value.as_str(), r#"{"title":"hi"}"#);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Store::list`].
    pub fn list_encoded(&self, request: &ListRequest) -> Result<ListedPage, Error> {
        self.inner.alias_prefix_served(&request.prefix)?;
        crate::listed::list_encoded(&self.inner.backend, &self.inner.tokens, self.now(), request)
    }

    /// Up to `limit` groups in key order, after the page that returned `page_token`.
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] for a limit outside
    /// 1..=[`MAX_GROUPS_LIMIT`](crate::MAX_GROUPS_LIMIT); [`Error::InvalidPageToken`] for a
    /// token that did not come from this call; storage failures.
    pub fn groups(&self, limit: usize, page_token: Option<&str>) -> Result<GroupPage, Error> {
        self.groups_with_prefix("", limit, page_token)
    }

    /// Up to `limit` groups whose namespace starts with `prefix` (`"user"` lists `/user-7`,
    /// `/users-2` and `/user_old-1`; `""` lists every group), in key order, after the page that
    /// returned `page_token`. The prefix is the start of a namespace, compared byte for byte
    /// (so case-sensitive), never an id.
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] for a limit outside
    /// 1..=[`MAX_GROUPS_LIMIT`](crate::MAX_GROUPS_LIMIT) or a prefix with a character no
    /// namespace has (or longer than a namespace); [`Error::InvalidPageToken`] for a token that
    /// did not come from this call with this prefix; storage failures.
    pub fn groups_with_prefix(
        &self,
        prefix: &str,
        limit: usize,
        page_token: Option<&str>,
    ) -> Result<GroupPage, Error> {
        crate::groups::groups(
            &self.inner.backend,
            &self.inner.tokens,
            prefix,
            limit,
            page_token,
            self.now(),
        )
    }

    /// The current position of the change feed of `prefix`'s group: following from it delivers
    /// every change committed after this call.
    ///
    /// # Errors
    /// Storage failures.
    pub fn changes_token(&self, prefix: &KeyPath) -> Result<ChangeToken, Error> {
        let reader = self.inner.backend.reader()?;
        crate::feed::position(&self.inner.tokens, &reader, &prefix.partition_key())
    }

    /// The changes under `prefix` (the path and its subtree) after `since`, at most about
    /// `limit` of them, in commit order. Without `since`, no changes and the current position.
    ///
    /// A page never ends inside a commit, so a transaction's changes in this group arrive
    /// together (a page may hold more than `limit` changes to finish one). Changes in the group
    /// but outside `prefix` are read and skipped: `next_token` moves past them.
    ///
    /// # Errors
    /// [`Error::ChangesExpired`] when changes after `since` are older than the retention window
    /// (or the token is ahead of this database); [`Error::InvalidChangeToken`] for a token of
    /// another group or database, or an altered one; [`Error::InvalidRequest`] for a limit
    /// outside 1..=[`MAX_CHANGES_LIMIT`](crate::MAX_CHANGES_LIMIT); storage failures.
    pub fn changes(
        &self,
        prefix: &KeyPath,
        since: Option<&ChangeToken>,
        limit: usize,
    ) -> Result<ChangePage, Error> {
        let reader = self.inner.backend.reader()?;
        crate::feed::read(
            &reader,
            &self.inner.tokens,
            self.inner.options.change_retention,
            self.now(),
            prefix,
            since,
            limit,
        )
    }

    /// [`Store::changes`], waiting up to `timeout` for at least one change: woken by this
    /// process's commits (no polling) and, on a backend other processes write too
    /// ([`Backend::shared`]), also reading again every 200 ms.
    ///
    /// # Errors
    /// As [`Store::changes`].
    pub fn wait_changes(
        &self,
        prefix: &KeyPath,
        since: &ChangeToken,
        limit: usize,
        timeout: Duration,
    ) -> Result<ChangePage, Error> {
        crate::feed::wait(
            |since| self.changes(prefix, Some(since), limit),
            || self.commit_listener(prefix),
            self.changes_poll_interval(),
            since,
            timeout,
        )
    }

    /// A listener that completes at this store's next commit that changes the group of
    /// `prefix` (commits of other groups leave it waiting): for async callers that wait for
    /// changes without a thread each (await it, then call [`Store::changes`]). Create it before
    /// reading, so that no commit falls between. A feed follows one group, so this is every
    /// commit it can see; other processes' commits do not complete it (see
    /// [`Store::changes_poll_interval`]).
    pub fn commit_listener(&self, prefix: &KeyPath) -> event_listener::EventListener {
        self.inner.waiters.listen(&prefix.partition_key())
    }

    /// How often a waiting feed must read again because other processes write (`None`: this
    /// process's commits are every change, so waiting on [`Store::commit_listener`] suffices).
    pub fn changes_poll_interval(&self) -> Option<Duration> {
        self.inner
            .backend
            .shared()
            .then_some(crate::feed::SHARED_POLL)
    }

    /// Removes expired items now rather than waiting for the background sweeper; returns how
    /// many expiry entries it processed.
    ///
    /// # Errors
    /// Storage failures.
    pub fn sweep_expired(&self) -> Result<usize, Error> {
        let mut total = 0;
        loop {
            let n = self.inner.sweep()?;
            total += n;
            if n < crate::ttl::SWEEP_BATCH {
                return Ok(total);
            }
        }
    }

    /// Up to `limit` records of everything, in key order, after `cursor`. Entries that are not
    /// PathDB records (written by another tool) are left out and counted in
    /// [`ScanPage::skipped`].
    ///
    /// # Errors
    /// A cursor this database did not issue; storage failures.
    pub fn scan(&self, cursor: Option<&str>, limit: usize) -> Result<ScanPage, Error> {
        let inner = &self.inner;
        crate::export::scan(&inner.backend, &inner.tokens, self.now(), cursor, limit)
    }

    /// Writes every record as JSON lines to `out`, then the [`ExportEnd`] line; `progress` is
    /// called after each page with the records written so far.
    ///
    /// The whole export reads one snapshot where the backend has them (redb): a write that
    /// commits meanwhile is either all in it or not at all, so an item is never older than its
    /// revisions. DynamoDB has no snapshot across requests (docs/export.md).
    ///
    /// If the scan fails, the last line says `incomplete` with the error, and the error is
    /// returned: no consumer can take a truncated export for a whole one.
    ///
    /// # Errors
    /// Storage failures; `out` failing.
    pub fn export(
        &self,
        out: &mut dyn std::io::Write,
        progress: &mut dyn FnMut(u64),
    ) -> Result<ExportEnd, ExportError> {
        let exporter = Exporter {
            backend: &self.inner.backend,
            now: self.now(),
        };
        exporter.export(out, progress)
    }

    /// Deletes the item at `path`, if any, and every live item below it; returns how many.
    /// Each leaves its tombstone, and history stays. `/a/p-1` never touches `/a/p-10`.
    ///
    /// Atomic when the subtree fits in one write; a larger one is a job done in batches (see
    /// [`Store::run_subtree_job`]). `progress` gets the count so far after each batch.
    ///
    /// # Errors
    /// [`Error::NothingBelow`] when there is nothing to delete; as
    /// [`Store::run_subtree_job`].
    pub fn delete_subtree(
        &self,
        path: &KeyPath,
        progress: &mut dyn FnMut(u64),
    ) -> Result<u64, Error> {
        self.run_subtree_job(&SubtreeJob::delete(path.clone()), progress)
    }

    /// Re-keys every live item at or below `from` to the same place below `to` (its elements
    /// replace `from`'s), with its value, times, expiry and history; the sources become
    /// tombstones. Returns how many items moved. `to` may be in another group, and `from` a
    /// whole group. Atomic when it fits in one write, otherwise a job ([`Store::run_subtree_job`]).
    ///
    /// # Errors
    /// [`Error::DestinationNotEmpty`], [`Error::NothingBelow`], [`Error::InvalidRequest`] when
    /// one path is inside the other; as [`Store::run_subtree_job`].
    pub fn move_subtree(
        &self,
        from: &KeyPath,
        to: &KeyPath,
        progress: &mut dyn FnMut(u64),
    ) -> Result<u64, Error> {
        self.run_subtree_job(&SubtreeJob::relocate(from.clone(), to.clone()), progress)
    }

    /// [`Store::move_subtree`] that leaves the sources as they are; returns how many items it
    /// copied.
    ///
    /// # Errors
    /// As [`Store::move_subtree`].
    pub fn copy_subtree(
        &self,
        from: &KeyPath,
        to: &KeyPath,
        progress: &mut dyn FnMut(u64),
    ) -> Result<u64, Error> {
        self.run_subtree_job(&SubtreeJob::copy(from.clone(), to.clone()), progress)
    }

    /// Runs a subtree delete, move or copy to the end, or finishes it if an earlier run of the
    /// same job stopped part-way ([`Store::subtree_jobs`]); returns the items done in all.
    ///
    /// A subtree that fits in one backend write is done atomically. A larger one is done in
    /// batches, each atomic with the job's record in the system partition, so that at every
    /// moment each item is at its source, its destination or both, and running the job again
    /// continues after the last batch that committed (docs/tree.md says what concurrent
    /// readers and writers see meanwhile). A destination is checked to be empty when a job
    /// starts, not when it resumes. `progress` gets the count so far after each batch.
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] for a path without id at its end, a delete with a destination
    /// or a move without one, or paths inside each other; [`Error::NothingBelow`] when a new job
    /// finds no live item; [`Error::DestinationNotEmpty`] when a live item is in the
    /// destination (at the start, or where an item goes); key size limits for a destination
    /// path; storage failures (the job stays, to run again).
    pub fn run_subtree_job(
        &self,
        job: &SubtreeJob,
        progress: &mut dyn FnMut(u64),
    ) -> Result<u64, Error> {
        let relocator = Relocator {
            backend: &self.inner.backend,
            settings: self.inner.settings(),
            waiters: &self.inner.waiters,
            clock: &*self.inner.options.clock,
        };
        relocator.run(job, progress)
    }

    /// The subtree jobs that stopped part-way (a crash, a lost connection, a storage error):
    /// run each with [`Store::run_subtree_job`] to finish it.
    ///
    /// # Errors
    /// Storage failures.
    pub fn subtree_jobs(&self) -> Result<Vec<PendingJob>, Error> {
        crate::subtree::pending(&self.inner.backend.reader()?)
    }

    /// Writes records (as [`parse_import`](crate::parse_import) reads them) in atomic batches
    /// of at most [`IMPORT_BATCH`](crate::IMPORT_BATCH) (fewer where the backend takes fewer
    /// operations per write), calling `progress` after each. A version never goes backwards: a
    /// record whose version is not above the stored one's is written with the stored version
    /// plus 1, and a tombstone never lowers one. A record already stored with the same content
    /// is left alone, so importing the same input again changes nothing.
    ///
    /// # Errors
    /// [`ImportError`] with what was applied before the failing batch.
    pub fn import(
        &self,
        records: &[ImportRecord],
        on_existing: OnExisting,
        progress: &mut dyn FnMut(&ImportReport),
    ) -> Result<ImportReport, ImportError> {
        let importer = Importer {
            backend: &self.inner.backend,
            settings: self.inner.settings(),
            waiters: &self.inner.waiters,
            clock: &*self.inner.options.clock,
        };
        importer.import(records, on_existing, progress)
    }
}

/// A single put's item, and whether it created the item (no live item was found).
fn put_outcome(mut results: Vec<TxResult>, mut found: Vec<bool>) -> Result<(Item, bool), Error> {
    match (results.pop(), found.pop()) {
        (Some(TxResult::Put(item)), Some(found)) => Ok((item, !found)),
        _ => Err(StorageError::msg("put returned no item").into()),
    }
}

impl<B: Backend> Reads for Store<B> {
    fn get(&self, path: &KeyPath) -> Result<Option<Item>, Error> {
        Store::get(self, path)
    }

    fn get_many(&self, paths: &[KeyPath]) -> Result<Vec<Item>, Error> {
        Store::get_many(self, paths)
    }

    fn list(&self, request: &ListRequest) -> Result<ListPage, Error> {
        Store::list(self, request)
    }

    fn now(&self) -> i64 {
        Store::now(self)
    }
}

/// The path of the item `path` names: `path` itself, or the item of the alias stored there.
fn own_path<R: Reader>(reader: &R, path: &KeyPath, now: i64) -> Result<KeyPath, Error> {
    let record = visible(reader.get(&layout::item_key(path))?, now);
    match record
        .map(|r| crate::aliases::parse_alias(&r.value))
        .transpose()?
    {
        Some(Some(of)) => Ok(of.item),
        _ => Ok(path.clone()),
    }
}
