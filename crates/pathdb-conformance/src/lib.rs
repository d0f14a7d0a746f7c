#![deny(missing_docs)]

//! The backend-agnostic conformance suite: every operation, option and error of the data API,
//! written once against [`Store`] and run by every backend with one line:
//!
//! ```text
//! // In a backend's integration tests (pathdb-conformance as a dev-dependency):
//! pathdb_conformance::conformance_tests!(pathdb_conformance::InMemory);
//! pathdb_conformance::conformance_tests!(pathdb_conformance::TempFile::default());
//! pathdb_conformance::conformance_tests!(|options: pathdb_store::StoreOptions| {
//!     pathdb_store::Store::new(MyBackend::connect(), options).unwrap()
//! });
//! ```
//!
//! The macro expands to one `#[test]` per workload. A workload takes a [`Harness`], which opens a
//! fresh, empty store with the [`StoreOptions`] the workload needs (a [`ManualClock`] and no
//! background sweeper where time matters, so no workload sleeps). Workloads assert behaviour
//! through the public API only, plus, for backends without native expiry, the raw records that
//! [`Backend::reader`] exposes after an expiry sweep.
//!
//! Workloads:
//! - [`put_get_delete`], [`conditions`], [`bad_input`] (`basic`);
//! - [`prefix_is_segment_bounded`], [`typed_order`], [`aliased_ids`],
//!   [`children_only_deep_subtrees`], [`bounds_in_both_directions`], [`page_tokens_stitch`],
//!   [`page_tokens_with_writes_between_pages`], [`page_token_errors`],
//!   [`dead_entries_between_pages`] (`listing`);
//! - [`groups_in_key_order`] (`groups`);
//! - [`racing_must_not_exist`], [`racing_if_version_counter`], [`racing_unconditional_puts`],
//!   [`racing_queued_puts`], [`racing_transfers`], [`racing_deletes_and_updates`],
//!   [`reads_follow_acknowledged_writes`] (`concurrency`);
//! - [`transaction_results`], [`failed_transactions_leave_nothing`], [`history_retention`],
//!   [`ttl_expiry`], [`scan_and_import`], [`versions_never_reused`],
//!   [`import_never_goes_backwards`], [`import_keeps_history_consistent`] (`lifecycle`);
//! - [`change_feed_completeness`], [`change_feed_with_concurrent_writers`],
//!   [`change_feed_order_and_resume`], [`change_feed_tokens_expire_and_survive_restarts`],
//!   [`generated_ids`], [`groups_without_a_change_log`], [`change_log_in_both_forms`]
//!   (`changes`);
//! - [`emptyish_values_round_trip`], [`altered_tokens_are_refused`] (`values`);
//! - [`subtree_delete`], [`subtree_move`], [`subtree_copy`], [`subtree_errors`],
//!   [`large_move_resumes`] (`tree`);
//! - [`json_patch_rfc6902_examples`], [`merge_patch_rfc7396_examples`],
//!   [`increments_and_missing_items`], [`patches_in_transactions`], [`racing_increments`],
//!   [`patches_after_puts_in_transactions`] (`patch`), [`random_patches_against_a_model`] (`patch_model`);
//! - [`list_checks_are_exact`], [`interactive_transactions`],
//!   [`interactive_transactions_under_contention`] (`transactions`);
//! - [`namespace_definitions`], [`schema_checked_on_every_write`],
//!   [`schema_changes_and_violations`], [`history_setting_of_an_earlier_build`] (`namespaces`);
//! - [`alias_paths`], [`alias_change_feeds`], [`aliases_against_a_model`],
//!   [`racing_for_aliases`], [`alias_builds`], [`alias_corner_cases`] (`aliases`);
//! - [`roles_are_versioned_records`], [`tokens_are_issued_and_revoked`] (`access`);
//! - [`backups_restore_every_row`] (`backups`).
//!
//! Outside the macro, because it wraps the backend rather than opening a store:
//! [`fault_injection`] (`faults`), which each backend's tests call with a fresh backend.

use pathdb_keys::KeyPath;
use pathdb_store::backend::{Backend, FileBackend, FileOptions, InMemoryBackend};
use pathdb_store::{
    Error, ExportRecord, Item, Json, ListEntry, ListRequest, ManualClock, PutOptions, Store,
    StoreOptions, Timestamp,
};
use std::sync::Arc;

mod access;
mod aliases;
mod backups;
mod basic;
mod changes;
mod concurrency;
pub mod disk;
mod faults;
mod filters;
mod groups;
mod lifecycle;
mod listing;
mod migrations;
mod namespaces;
mod patch;
mod patch_model;
mod transactions;
mod tree;
mod values;

pub use access::{roles_are_versioned_records, tokens_are_issued_and_revoked};
pub use aliases::{
    alias_builds, alias_change_feeds, alias_corner_cases, alias_paths, aliases_against_a_model,
    racing_for_aliases,
};
pub use backups::backups_restore_every_row;
pub use basic::{bad_input, conditions, put_get_delete};
pub use changes::{
    change_feed_completeness, change_feed_order_and_resume,
    change_feed_tokens_expire_and_survive_restarts, change_feed_with_concurrent_writers,
    change_log_in_both_forms, generated_ids, groups_without_a_change_log,
};
pub use concurrency::{
    racing_deletes_and_updates, racing_if_version_counter, racing_must_not_exist,
    racing_queued_puts, racing_transfers, racing_unconditional_puts,
    reads_follow_acknowledged_writes,
};
pub use faults::{
    FaultRates, FaultReport, FaultWorkload, Faulty, FaultyReader, Injected, fault_injection,
};
pub use filters::{
    filtered_checks_admit_no_phantom, filtered_feeds_against_a_model, filtered_list_checks,
    filtered_listings_against_a_model,
};
pub use groups::groups_in_key_order;
pub use lifecycle::{
    failed_transactions_leave_nothing, history_retention, import_keeps_history_consistent,
    import_never_goes_backwards, scan_and_import, transaction_results, ttl_expiry,
    versions_never_reused,
};
pub use listing::{
    aliased_ids, bounds_in_both_directions, children_only_deep_subtrees,
    dead_entries_between_pages, page_token_errors, page_tokens_stitch,
    page_tokens_with_writes_between_pages, prefix_is_segment_bounded, typed_order,
};
pub use migrations::{incompatible_definitions_are_refused, migrations_against_a_model};
pub use namespaces::{
    history_setting_of_an_earlier_build, namespace_definitions, schema_changes_and_violations,
    schema_checked_on_every_write,
};
pub use patch::{
    increments_and_missing_items, json_patch_rfc6902_examples, merge_patch_rfc7396_examples,
    patches_after_puts_in_transactions, patches_in_transactions, racing_increments,
};
pub use patch_model::random_patches_against_a_model;
pub use transactions::{
    interactive_transactions, interactive_transactions_under_contention, list_checks_are_exact,
};
pub use tree::{large_move_resumes, subtree_copy, subtree_delete, subtree_errors, subtree_move};
pub use values::{altered_tokens_are_refused, emptyish_values_round_trip};

/// Expands to one `#[test]` per conformance workload, each running it against the [`Harness`]
/// the expression evaluates to (evaluated once per test), unless [`Harness::skip`] gives a
/// reason. A closure harness needs its argument type spelled out:
/// `|options: StoreOptions| Store::new(backend, options).unwrap()`.
#[macro_export]
macro_rules! conformance_tests {
    ($harness:expr) => {
        $crate::conformance_tests!(@each $harness;
            put_get_delete,
            migrations_against_a_model,
            incompatible_definitions_are_refused,
            conditions,
            bad_input,
            prefix_is_segment_bounded,
            typed_order,
            aliased_ids,
            children_only_deep_subtrees,
            bounds_in_both_directions,
            page_tokens_stitch,
            page_tokens_with_writes_between_pages,
            page_token_errors,
            dead_entries_between_pages,
            groups_in_key_order,
            racing_must_not_exist,
            racing_if_version_counter,
            racing_unconditional_puts,
            racing_queued_puts,
            reads_follow_acknowledged_writes,
            racing_transfers,
            racing_deletes_and_updates,
            transaction_results,
            failed_transactions_leave_nothing,
            history_retention,
            ttl_expiry,
            scan_and_import,
            versions_never_reused,
            import_never_goes_backwards,
            import_keeps_history_consistent,
            change_feed_completeness,
            change_feed_with_concurrent_writers,
            change_feed_order_and_resume,
            change_feed_tokens_expire_and_survive_restarts,
            generated_ids,
            groups_without_a_change_log,
            change_log_in_both_forms,
            emptyish_values_round_trip,
            altered_tokens_are_refused,
            subtree_delete,
            subtree_move,
            subtree_copy,
            subtree_errors,
            large_move_resumes,
            json_patch_rfc6902_examples,
            merge_patch_rfc7396_examples,
            increments_and_missing_items,
            patches_in_transactions,
            racing_increments,
            patches_after_puts_in_transactions,
            random_patches_against_a_model,
            list_checks_are_exact,
            interactive_transactions,
            interactive_transactions_under_contention,
            namespace_definitions,
            schema_checked_on_every_write,
            schema_changes_and_violations,
            history_setting_of_an_earlier_build,
            alias_paths,
            alias_change_feeds,
            aliases_against_a_model,
            racing_for_aliases,
            alias_builds,
            alias_corner_cases,
            roles_are_versioned_records,
            tokens_are_issued_and_revoked,
            backups_restore_every_row,
            filtered_listings_against_a_model,
            filtered_feeds_against_a_model,
            filtered_list_checks,
            filtered_checks_admit_no_phantom,
        );
    };
    (@each $harness:expr; $($workload:ident),* $(,)?) => {
        $(
            #[test]
            fn $workload() {
                let harness = $harness;
                if let Some(reason) = $crate::Harness::skip(&harness, stringify!($workload)) {
                    eprintln!("skipped {}: {reason}", stringify!($workload));
                    return;
                }
                $crate::$workload(&harness);
            }
        )*
    };
}

/// A small deterministic generator: workloads need no `rand` dependency to vary by seed.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Opens fresh, empty stores for the workloads (one or more per workload).
pub trait Harness {
    /// The backend under test.
    type Backend: Backend;

    /// A new store over a new, empty backend, with `options`.
    fn open(&self, options: StoreOptions) -> TestStore<Self::Backend>;

    /// Why `workload` cannot run here, if it cannot: a backend that needs an outside service
    /// returns `Some` when the environment does not name one, and a stand-in server that lacks
    /// a feature (dynalite has no transactions) names the workloads that need it. Skipped tests
    /// pass, saying so (style.md: skip at runtime, not with `cfg`).
    fn skip(&self, workload: &str) -> Option<String> {
        let _ = workload;
        None
    }

    /// The same data in a new store with `options`, as after a restart, or `None` where a
    /// store's data does not outlive it (memory); workloads then check the rest without.
    fn reopen(
        &self,
        store: TestStore<Self::Backend>,
        options: StoreOptions,
    ) -> Option<TestStore<Self::Backend>> {
        let _ = (store, options);
        None
    }
}

/// Any `Fn(StoreOptions) -> Store<B>` is a harness whose stores need no cleanup.
impl<B: Backend, F: Fn(StoreOptions) -> Store<B>> Harness for F {
    type Backend = B;

    fn open(&self, options: StoreOptions) -> TestStore<B> {
        TestStore::new(self(options))
    }
}

/// A store under test, with whatever must outlive it (a temporary directory, a server).
/// Dereferences to the [`Store`].
pub struct TestStore<B: Backend> {
    // Declared first: dropped (and its files closed) before the guard.
    store: Store<B>,
    _guard: Option<Box<dyn std::any::Any + Send + Sync>>,
}

impl<B: Backend> TestStore<B> {
    /// A store that needs no cleanup.
    pub fn new(store: Store<B>) -> Self {
        TestStore {
            store,
            _guard: None,
        }
    }

    /// A store and something dropped right after it.
    pub fn with_guard(store: Store<B>, guard: impl std::any::Any + Send + Sync) -> Self {
        TestStore {
            store,
            _guard: Some(Box::new(guard)),
        }
    }
}

impl<B: Backend> std::ops::Deref for TestStore<B> {
    type Target = Store<B>;

    fn deref(&self) -> &Store<B> {
        &self.store
    }
}

/// The harness of [`InMemoryBackend`].
#[derive(Clone, Copy, Debug, Default)]
pub struct InMemory;

impl Harness for InMemory {
    type Backend = InMemoryBackend;

    fn open(&self, options: StoreOptions) -> TestStore<InMemoryBackend> {
        TestStore::new(Store::new(InMemoryBackend::new(), options).expect("open in-memory store"))
    }
}

/// The harness of [`FileBackend`]: each store is a new file in its own temporary directory,
/// removed when the store is dropped.
#[derive(Clone, Debug, Default)]
pub struct TempFile {
    /// Options of every file opened.
    pub file: FileOptions,
}

impl Harness for TempFile {
    type Backend = FileBackend;

    fn open(&self, options: StoreOptions) -> TestStore<FileBackend> {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let store = Store::open(dir.path().join("pathdb.redb"), self.file.clone(), options)
            .expect("open a database file");
        TestStore::with_guard(store, dir)
    }

    fn reopen(
        &self,
        store: TestStore<FileBackend>,
        options: StoreOptions,
    ) -> Option<TestStore<FileBackend>> {
        let TestStore { store, _guard } = store;
        // Closes the file (and its lock) before opening it again.
        drop(store);
        let guard = _guard?;
        let dir = guard.downcast_ref::<tempfile::TempDir>()?;
        let store = Store::open(dir.path().join("pathdb.redb"), self.file.clone(), options)
            .expect("reopen the database file");
        Some(TestStore {
            store,
            _guard: Some(guard),
        })
    }
}

/// The embedded backend with the continuous archive on (docs/backups.md): every workload runs
/// with each commit also going to an archive in the same temporary directory, and when the
/// store is dropped, the archive restored at its latest commit must hold exactly the file's
/// rows. A reopen starts a new archiver over the same archive, as a restarted server does.
#[derive(Clone, Copy, Debug, Default)]
pub struct ArchivedTempFile;

/// What an [`ArchivedTempFile`] store keeps: its directory and archive, checked on drop.
struct ArchiveGuard {
    dir: Option<tempfile::TempDir>,
    archive: pathdb_store::backup::Archive,
}

impl ArchivedTempFile {
    fn open_in(
        dir: &std::path::Path,
        options: StoreOptions,
    ) -> (Store<FileBackend>, pathdb_store::backup::Archive) {
        use pathdb_store::backup::{Archive, ArchiveOptions, DirTarget};
        let db = dir.join("pathdb.redb");
        let archive = Archive::new(
            Arc::new(DirTarget::new(dir.join("archive"))),
            Archive::spool_for(&db),
            ArchiveOptions {
                delay: std::time::Duration::from_millis(20),
                ..ArchiveOptions::default()
            },
        );
        let file = FileOptions {
            tap: Some(archive.tap()),
            ..FileOptions::default()
        };
        let store = Store::open(&db, file, options).expect("open a database file");
        let base = store.clone();
        archive
            .start(Box::new(move |file| base.backup(file)))
            .expect("start the archive");
        (store, archive)
    }
}

impl Harness for ArchivedTempFile {
    type Backend = FileBackend;

    fn open(&self, options: StoreOptions) -> TestStore<FileBackend> {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let (store, archive) = ArchivedTempFile::open_in(dir.path(), options);
        TestStore::with_guard(
            store,
            ArchiveGuard {
                dir: Some(dir),
                archive,
            },
        )
    }

    fn reopen(
        &self,
        store: TestStore<FileBackend>,
        options: StoreOptions,
    ) -> Option<TestStore<FileBackend>> {
        let TestStore { store, _guard } = store;
        drop(store);
        let mut guard = _guard?.downcast::<ArchiveGuard>().ok()?;
        // The old archiver lets go of the store (and so of the file) when it stops.
        guard.archive.stop();
        let dir = guard.dir.take()?;
        let (store, archive) = ArchivedTempFile::open_in(dir.path(), options);
        Some(TestStore::with_guard(
            store,
            ArchiveGuard {
                dir: Some(dir),
                archive,
            },
        ))
    }
}

impl Drop for ArchiveGuard {
    fn drop(&mut self) {
        // Uploads every commit, then lets go of the store: the file closes.
        self.archive.stop();
        let Some(dir) = self.dir.as_ref() else { return };
        if std::thread::panicking() {
            return;
        }
        let restored = dir.path().join("restored.redb");
        let report = pathdb_store::backup::restore_archive(
            self.archive.target().as_ref(),
            &restored,
            pathdb_store::backup::RestoreUntil::Latest,
        )
        .expect("restore the archive");
        assert_eq!(report.stopped, None, "the archive has a gap");
        let rows = |path: &std::path::Path| {
            let options = StoreOptions {
                sweep_interval: None,
                ..StoreOptions::default()
            };
            let store = Store::open_read_only(path, FileOptions::default(), options)
                .expect("open read-only");
            backups::rows(&store)
        };
        assert!(
            rows(&dir.path().join("pathdb.redb")) == rows(&restored),
            "the archive restored at its latest commit differs from the database"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers shared by the workloads.

/// The time every workload's [`ManualClock`] starts at.
pub(crate) const T0: Timestamp = Timestamp(1_700_000_000_000_000);

/// Polls a future to completion on this thread, parking it while the future waits (the store
/// and its tests have no async runtime; a queued write wakes the thread when it commits).
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut context = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(out) = future.as_mut().poll(&mut context) {
            return out;
        }
        std::thread::park();
    }
}

/// A clock at [`T0`] and options that use it, with no background sweeper.
pub(crate) fn manual_options() -> (Arc<ManualClock>, StoreOptions) {
    let clock = Arc::new(ManualClock::new(T0));
    let options = StoreOptions {
        clock: clock.clone(),
        default_history_retention: 3,
        sweep_interval: None,
        ..Default::default()
    };
    (clock, options)
}

/// A fresh store with a manual clock.
pub(crate) fn open_manual<H: Harness>(harness: &H) -> (Arc<ManualClock>, TestStore<H::Backend>) {
    let (clock, options) = manual_options();
    (clock, harness.open(options))
}

/// Where a backend stores the item at `path` (the store's key layout, docs/key-format.md): for
/// the workloads that check raw records.
pub(crate) fn item_key(path: &KeyPath) -> pathdb_store::backend::Key {
    pathdb_store::backend::Key {
        partition: path.partition_key(),
        sort: path.sort_key(),
    }
}

pub(crate) fn path(text: &str) -> KeyPath {
    text.parse()
        .unwrap_or_else(|e| panic!("bad test path {text}: {e}"))
}

pub(crate) fn json(text: &str) -> Json {
    Json::parse(text).unwrap_or_else(|e| panic!("bad test JSON {text}: {e}"))
}

/// `{"n": n}`.
pub(crate) fn value(n: i64) -> Json {
    json(&format!(r#"{{"n":{n}}}"#))
}

/// Puts `{"n": n}` at `text` without options.
pub(crate) fn put<B: Backend>(store: &Store<B>, text: &str, n: i64) -> Item {
    store
        .put(&path(text), value(n), PutOptions::default())
        .unwrap_or_else(|e| panic!("put {text}: {e}"))
}

/// The paths of a listing's entries; a node's with a trailing `/`, as the CLI prints it.
pub(crate) fn texts(entries: &[ListEntry]) -> Vec<String> {
    entries
        .iter()
        .map(|e| match e {
            ListEntry::Item(item) => item.path.to_string(),
            ListEntry::Node(path) => format!("{path}/"),
        })
        .collect()
}

/// The paths of items.
pub(crate) fn item_texts(items: &[Item]) -> Vec<String> {
    items.iter().map(|i| i.path.to_string()).collect()
}

/// The items of a listing, which must hold no node.
pub(crate) fn items_of(entries: Vec<ListEntry>) -> Vec<Item> {
    entries
        .into_iter()
        .map(|e| match e {
            ListEntry::Item(item) => item,
            ListEntry::Node(path) => panic!("unexpected node {path}"),
        })
        .collect()
}

/// Checks that [`Store::list_encoded`] returns `page`, which [`Store::list`] returned for
/// `request`, with the paths kept encoded: the same entries in the same order, each path
/// decoding to the same `KeyPath` and writing the same text, and the same page token. (The
/// changes token only where the store returns one: on a shared backend it depends on the time.)
pub(crate) fn assert_same_encoded<B: Backend>(
    store: &Store<B>,
    request: &ListRequest,
    page: &pathdb_store::ListPage,
) {
    let encoded = store
        .list_encoded(request)
        .unwrap_or_else(|e| panic!("list_encoded {request:?}: {e}"));
    let texts: Vec<String> = encoded.items.iter().map(|e| e.path().to_string()).collect();
    let want: Vec<String> = page.items.iter().map(|e| e.path().to_string()).collect();
    assert_eq!(texts, want, "encoded paths' text, {request:?}");
    assert_eq!(
        encoded.next_page_token, page.next_page_token,
        "encoded page's token, {request:?}"
    );
    assert_eq!(
        encoded.changes_token.is_some(),
        page.changes_token.is_some(),
        "encoded page's changes token, {request:?}"
    );
    assert_eq!(
        encoded.into_page().items,
        page.items,
        "encoded page decoded, {request:?}"
    );
}

/// Every page of a listing, checking the page invariants: no page is longer than the limit,
/// every page but the last is full and has a token, the last has none.
pub(crate) fn list_all<B: Backend>(store: &Store<B>, request: &ListRequest) -> Vec<ListEntry> {
    let mut request = request.clone();
    let mut out = Vec::new();
    for _ in 0..100_000 {
        let page = store
            .list(&request)
            .unwrap_or_else(|e| panic!("list {request:?}: {e}"));
        assert_same_encoded(store, &request, &page);
        assert!(page.items.len() <= request.limit, "page over its limit");
        out.extend(page.items.iter().cloned());
        match page.next_page_token {
            Some(token) => {
                assert_eq!(
                    page.items.len(),
                    request.limit,
                    "a page followed by a token is full"
                );
                request.page_token = Some(token);
            }
            None => return out,
        }
    }
    panic!("listing never ended: {request:?}");
}

/// Everything the store holds (items and revisions), through the resumable scan.
pub(crate) fn dump<B: Backend>(store: &Store<B>) -> Vec<ExportRecord> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = store
            .scan(cursor.as_deref(), 7)
            .unwrap_or_else(|e| panic!("scan: {e}"));
        out.extend(page.records);
        match page.cursor {
            Some(c) => cursor = Some(c),
            None => return out,
        }
    }
}

/// Panics unless `result` failed the condition `condition` on `at` with `current`.
#[track_caller]
pub(crate) fn assert_condition_failed<T: std::fmt::Debug>(
    result: Result<T, Error>,
    at: &str,
    condition: pathdb_store::Condition,
    current: Option<u64>,
) {
    match result {
        Err(Error::ConditionFailed {
            path: p,
            condition: c,
            current: v,
        }) => {
            assert_eq!(p, path(at), "ConditionFailed names the path");
            assert_eq!(c, condition, "ConditionFailed names the condition");
            assert_eq!(v, current, "ConditionFailed names the current version");
        }
        other => panic!("expected ConditionFailed on {at} ({condition}), got {other:?}"),
    }
}
