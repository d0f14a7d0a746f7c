//! The store over wrapper backends: one counts what listings read (children are found by
//! seeking, not by reading subtrees), one injects storage failures (they surface as
//! `Error::Storage`, write nothing, and the store works again once the backend does).

use pathdb_keys::KeyPath;
use pathdb_store::backend::{
    Backend, Direction, InMemoryBackend, Key, Reader, Record, SortRange, WriteBatch, WriteError,
    WriteOp,
};
use pathdb_store::{
    Condition, Error, Expiry, ExportRecord, Json, ListRequest, ManualClock, PutOptions,
    StorageError, Store, StoreOptions, Timestamp, Transaction, TxResult,
};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// An [`InMemoryBackend`] that counts the entries its readers return and can be told to fail.
#[derive(Default)]
struct Wrapped {
    inner: InMemoryBackend,
    entries_read: AtomicUsize,
    /// Reads of single keys, and of several keys together (`Reader::get_batch`).
    gets: AtomicUsize,
    batch_gets: AtomicUsize,
    fail_reads: AtomicBool,
    fail_writes: AtomicBool,
    /// Before the next write, a concurrent writer bumps this item's version.
    interfere: Mutex<Option<KeyPath>>,
    /// Says it is written by other processes too, as a DynamoDB table is (listing tokens then
    /// start a margin back).
    shared: bool,
}

struct WrappedReader<'a> {
    inner: <InMemoryBackend as Backend>::Reader<'a>,
    entries_read: &'a AtomicUsize,
    gets: &'a AtomicUsize,
    batch_gets: &'a AtomicUsize,
}

impl Backend for Wrapped {
    type Reader<'a> = WrappedReader<'a>;

    fn reader(&self) -> Result<WrappedReader<'_>, StorageError> {
        if self.fail_reads.load(Ordering::SeqCst) {
            return Err(StorageError::msg("injected read failure"));
        }
        Ok(WrappedReader {
            inner: self.inner.reader()?,
            entries_read: &self.entries_read,
            gets: &self.gets,
            batch_gets: &self.batch_gets,
        })
    }

    fn write(&self, batch: WriteBatch) -> Result<(), WriteError> {
        if self.fail_writes.load(Ordering::SeqCst) {
            return Err(StorageError::msg("injected write failure").into());
        }
        if let Some(p) = self.interfere.lock().unwrap().take() {
            let key = Key {
                partition: p.partition_key(),
                sort: p.sort_key(),
            };
            let mut record = self
                .inner
                .reader()?
                .get(&key)?
                .expect("interfere with an item");
            record.version += 1;
            let op = WriteOp::Put {
                key,
                record,
                expect: None,
            };
            self.inner.write(WriteBatch { ops: vec![op] })?;
        }
        self.inner.write(batch)
    }

    fn shared(&self) -> bool {
        self.shared
    }
}

impl Reader for WrappedReader<'_> {
    fn get(&self, key: &Key) -> Result<Option<Record>, StorageError> {
        self.entries_read.fetch_add(1, Ordering::SeqCst);
        self.gets.fetch_add(1, Ordering::SeqCst);
        self.inner.get(key)
    }

    fn get_batch(&self, keys: &[Key]) -> Result<Vec<Option<Record>>, StorageError> {
        self.entries_read.fetch_add(keys.len(), Ordering::SeqCst);
        self.batch_gets.fetch_add(1, Ordering::SeqCst);
        keys.iter().map(|k| self.inner.get(k)).collect()
    }

    fn scan(
        &self,
        partition: &[u8],
        range: &SortRange,
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Record)>, StorageError> {
        let entries = self.inner.scan(partition, range, direction, limit)?;
        self.entries_read.fetch_add(entries.len(), Ordering::SeqCst);
        Ok(entries)
    }

    fn scan_all(
        &self,
        after: Option<&Key>,
        limit: usize,
    ) -> Result<Vec<(Key, Record)>, StorageError> {
        let entries = self.inner.scan_all(after, limit)?;
        self.entries_read.fetch_add(entries.len(), Ordering::SeqCst);
        Ok(entries)
    }

    fn partitions(&self, after: Option<&[u8]>, limit: usize) -> Result<Vec<Vec<u8>>, StorageError> {
        let partitions = self.inner.partitions(after, limit)?;
        self.entries_read
            .fetch_add(partitions.len(), Ordering::SeqCst);
        Ok(partitions)
    }
}

fn path(text: &str) -> KeyPath {
    text.parse().unwrap()
}

fn value(n: usize) -> Json {
    Json::parse(&format!(r#"{{"n":{n}}}"#)).unwrap()
}

fn store() -> Store<Wrapped> {
    let options = StoreOptions {
        sweep_interval: None,
        ..StoreOptions::default()
    };
    Store::new(Wrapped::default(), options).unwrap()
}

const CHILDREN: usize = 20;
const BELOW_EACH: usize = 200;

#[test]
fn children_are_found_by_seeking_not_by_reading_subtrees() {
    let store = store();
    let mut paths = Vec::new();
    for c in 0..CHILDREN {
        paths.push(path(&format!("/g-1/c-{c}")));
        for d in 0..BELOW_EACH {
            paths.push(path(&format!("/g-1/c-{c}/d-{d}")));
        }
    }
    for chunk in paths.chunks(100) {
        let tx = chunk.iter().fold(Transaction::new(), |tx, p| {
            tx.put(p.clone(), value(0), PutOptions::default())
        });
        store.transact(tx).unwrap();
    }
    let read = |request: &ListRequest| {
        let before = store.backend().entries_read.load(Ordering::SeqCst);
        let mut request = request.clone();
        let mut items = Vec::new();
        loop {
            let page = store.list(&request).unwrap();
            items.extend(page.items);
            match page.next_page_token {
                Some(t) => request.page_token = Some(t),
                None => break,
            }
        }
        let after = store.backend().entries_read.load(Ordering::SeqCst);
        (items.len(), after - before)
    };
    let total = CHILDREN * (BELOW_EACH + 1);
    for reverse in [false, true] {
        for limit in [1000, 3] {
            let mut children = ListRequest::new(path("/g-1"));
            children.children_only = true;
            children.reverse = reverse;
            children.limit = limit;
            let (listed, entries) = read(&children);
            assert_eq!(listed, CHILDREN);
            // A few entries per child (one scan batch), nowhere near its 200 descendants.
            assert!(
                entries < CHILDREN * 40,
                "children listing (reverse {reverse}, limit {limit}) read {entries} of {total} entries"
            );
        }
    }
    // The counter does count: a subtree listing reads every entry.
    let (listed, entries) = read(&ListRequest {
        limit: 1000,
        ..ListRequest::new(path("/g-1"))
    });
    assert_eq!(listed, total);
    assert!(entries >= total);
}

#[test]
fn storage_failures_surface_and_write_nothing() {
    let store = store();
    store
        .put(&path("/f-1/a-1"), value(1), PutOptions::default())
        .unwrap();
    let before = store.scan(None, 1000).unwrap().records;
    store.backend().fail_writes.store(true, Ordering::SeqCst);
    let history = PutOptions {
        history: true,
        ..PutOptions::default()
    };
    let failures: Vec<Result<(), Error>> = vec![
        store
            .put(&path("/f-1/a-1"), value(2), history.clone())
            .map(drop),
        store.delete(&path("/f-1/a-1"), None).map(drop),
        store
            .transact(
                Transaction::new()
                    .put(path("/f-1/b-1"), value(1), history)
                    .delete(path("/f-1/a-1"), None),
            )
            .map(drop),
        store.set_namespace_history("f", Some(3)),
    ];
    for result in failures {
        match result {
            Err(error @ Error::Storage(_)) => {
                assert!(!error.is_retryable());
                assert!(
                    error.to_string().contains("injected write failure"),
                    "{error}"
                );
            }
            other => panic!("expected a storage error, got {other:?}"),
        }
    }
    store.backend().fail_writes.store(false, Ordering::SeqCst);
    assert_eq!(store.scan(None, 1000).unwrap().records, before);
    store.backend().fail_reads.store(true, Ordering::SeqCst);
    assert!(matches!(
        store.get(&path("/f-1/a-1")),
        Err(Error::Storage(_))
    ));
    assert!(matches!(
        store.list(&ListRequest::new(path("/f-1"))),
        Err(Error::Storage(_))
    ));
    assert!(matches!(
        store.put(&path("/f-1/a-1"), value(3), PutOptions::default()),
        Err(Error::Storage(_))
    ));
    store.backend().fail_reads.store(false, Ordering::SeqCst);
    let item = store
        .put(&path("/f-1/a-1"), value(3), PutOptions::default())
        .unwrap();
    assert_eq!(item.version, 2);
}

/// Every raw record of the backend, system entries included.
fn raw_len(store: &Store<Wrapped>) -> usize {
    store
        .backend()
        .inner
        .reader()
        .unwrap()
        .scan_all(None, usize::MAX)
        .unwrap()
        .len()
}

fn expiring_in(seconds: u64) -> PutOptions {
    PutOptions {
        expires: Some(Expiry::After(Duration::from_secs(seconds))),
        ..PutOptions::default()
    }
}

#[test]
fn the_background_sweeper_removes_expired_items() {
    let clock = Arc::new(ManualClock::new(Timestamp(1_700_000_000_000_000)));
    let options = StoreOptions {
        clock: clock.clone(),
        sweep_interval: Some(Duration::from_millis(5)),
        ..StoreOptions::default()
    };
    let store = Store::new(Wrapped::default(), options).unwrap();
    store
        .put(&path("/s-1/a-1"), value(1), expiring_in(10))
        .unwrap();
    store
        .put(&path("/s-1/b-1"), value(1), PutOptions::default())
        .unwrap();
    assert_eq!(
        raw_len(&store),
        8,
        "the token key, the upgrade mark, the compact log's mark, two items, one expiry entry, \
         two change log entries"
    );
    let token = store.changes_token(&path("/s-1")).unwrap();
    clock.advance(Duration::from_secs(10));
    assert_eq!(store.get(&path("/s-1/a-1")).unwrap(), None);
    // Waits for the thread, whatever the machine's load; asserts nothing about how long.
    let page = store
        .wait_changes(&path("/s-1"), &token, 10, Duration::from_secs(120))
        .unwrap();
    assert_eq!(
        page.changes.iter().map(|c| &c.change).collect::<Vec<_>>(),
        [&pathdb_store::Change::Delete {
            path: path("/s-1/a-1"),
            version: 1,
            alias: None,
        }],
        "the sweeper logs the expiry"
    );
    // The expiry entry is gone and the item replaced by its tombstone; the expiry is logged.
    assert_eq!(raw_len(&store), 8);
    assert!(store.get(&path("/s-1/b-1")).unwrap().is_some());
    let again = store
        .put(&path("/s-1/a-1"), value(2), PutOptions::default())
        .unwrap();
    assert_eq!(again.version, 2, "the swept item's version was used again");
    drop(store); // Joins the sweeper thread; hangs here if it does not stop.
}

/// A concurrent change between a write's plan and its commit makes it plan again, a
/// transaction as well as a single write: a condition that held at the plan but not at the
/// commit fails as `ConditionFailed` naming the changed path (never a `Conflict`), and a write
/// without one commits over the new version.
#[test]
fn a_concurrent_change_makes_a_write_plan_again_and_fails_only_a_condition() {
    let store = store();
    let both = PutOptions {
        history: true,
        expires: Some(Expiry::After(Duration::from_secs(3600))),
        ..PutOptions::default()
    };
    for p in ["/c-1/a-1", "/c-1/b-1"] {
        store.put(&path(p), value(1), both.clone()).unwrap();
    }
    let before = store.scan(None, 1000).unwrap().records;
    let interfere = |p: &str| *store.backend().interfere.lock().unwrap() = Some(path(p));
    let at = |p: &str| PutOptions {
        condition: Some(Condition::IfVersion(
            store.get(&path(p)).unwrap().unwrap().version,
        )),
        ..both.clone()
    };
    // The batch holds revision and expiry entries before each item's own operation; the
    // failure still names the item that changed.
    for changed in ["/c-1/a-1", "/c-1/b-1"] {
        let tx = Transaction::new()
            .put(path("/c-1/a-1"), value(2), at("/c-1/a-1"))
            .put(path("/c-1/b-1"), value(2), at("/c-1/b-1"));
        interfere(changed);
        match store.transact(tx) {
            Err(Error::ConditionFailed {
                path: ref p,
                current: Some(2),
                ..
            }) => assert_eq!(*p, path(changed)),
            other => panic!("expected ConditionFailed on {changed}, got {other:?}"),
        }
        // The interference changes versions, not values: compare those.
        let after: Vec<(KeyPath, Option<Json>, bool)> = store
            .scan(None, 1000)
            .unwrap()
            .records
            .into_iter()
            .map(record_summary)
            .collect();
        let expected: Vec<(KeyPath, Option<Json>, bool)> =
            before.iter().cloned().map(record_summary).collect();
        assert_eq!(after, expected, "a failed transaction wrote something");
    }
    // Without conditions, the transaction plans again on the changed items and commits.
    interfere("/c-1/a-1");
    let results = store
        .transact(
            Transaction::new()
                .put(path("/c-1/a-1"), value(3), both.clone())
                .put(path("/c-1/b-1"), value(3), both.clone()),
        )
        .unwrap();
    let versions: Vec<u64> = results
        .iter()
        .map(|r| match r {
            TxResult::Put(item) => item.version,
            other => panic!("not a put: {other:?}"),
        })
        .collect();
    // a-1: 1, bumped by the first round, then here, then written; b-1: 1, bumped, written.
    assert_eq!(versions, [4, 3]);
    // A single put and delete do the same.
    interfere("/c-1/a-1");
    let item = store
        .put(&path("/c-1/a-1"), value(4), both.clone())
        .unwrap();
    assert_eq!(item.version, 6, "written over the concurrent version 5");
    interfere("/c-1/b-1");
    let deleted = store.delete(&path("/c-1/b-1"), None).unwrap().unwrap();
    assert_eq!(
        deleted.version, 4,
        "the delete returns what it deleted: the concurrent version"
    );
}

/// Path, value and whether it is a revision: what a conflicting write must leave as it was.
fn record_summary(r: ExportRecord) -> (KeyPath, Option<Json>, bool) {
    match r {
        ExportRecord::Item(i) => (i.path, Some(i.value), false),
        ExportRecord::Revision(i) => (i.path, Some(i.value), true),
        ExportRecord::Tombstone { path, .. } => (path, None, false),
    }
}

/// On a backend without snapshots (DynamoDB), a listing's first page reads its items and the
/// newest change log entry only; following its token delivers the changes of the last 10 s before
/// the listing too (the margin), then what came after; after 10 quiet seconds the token is the
/// exact position.
#[test]
fn a_shared_listing_reads_one_log_entry_and_its_token_covers_the_margin() {
    let clock = Arc::new(ManualClock::new(Timestamp(1_700_000_000_000_000)));
    let options = StoreOptions {
        clock: clock.clone(),
        sweep_interval: None,
        ..StoreOptions::default()
    };
    let backend = Wrapped {
        shared: true,
        ..Wrapped::default()
    };
    let store = Store::new(backend, options).unwrap();
    let group = path("/l-1");
    // 20 writes a second apart; the newest, a-19, at t + 19 s: the 10 s up to it hold a-9..a-19.
    for i in 0..20 {
        store
            .put(
                &path(&format!("/l-1/a-{i}")),
                value(i),
                PutOptions::default(),
            )
            .unwrap();
        clock.advance(Duration::from_secs(1));
    }
    let mut request = ListRequest::new(group.clone());
    request.limit = 5;
    store.backend().entries_read.store(0, Ordering::SeqCst);
    let page = store.list(&request).unwrap();
    assert_eq!(page.items.len(), 5);
    assert_eq!(
        store.backend().entries_read.load(Ordering::SeqCst),
        5 + 1 + 1,
        "the page, the item that says another page follows, the newest log entry"
    );
    let token = page.changes_token.expect("a first page has a token");
    let listed = token;
    store
        .put(&path("/l-1/b-1"), value(0), PutOptions::default())
        .unwrap();
    let followed = store.changes(&group, Some(&token), 100).unwrap();
    let paths: Vec<String> = followed
        .changes
        .iter()
        .map(|c| c.change.path().to_string())
        .collect();
    let mut expected: Vec<String> = (9..20).map(|i| format!("/l-1/a-{i}")).collect();
    expected.push("/l-1/b-1".into());
    assert_eq!(paths, expected);
    // The token survives its text form, and a later page needs no resolving again.
    let again: pathdb_store::ChangeToken = token.to_string().parse().unwrap();
    assert_eq!(store.changes(&group, Some(&again), 100).unwrap(), followed);
    assert!(
        store
            .changes(&group, Some(&followed.next_token), 100)
            .unwrap()
            .changes
            .is_empty()
    );
    // Quiet for longer than the margin: the token is the position after the newest entry.
    clock.advance(Duration::from_secs(11));
    let token = store.list(&request).unwrap().changes_token.unwrap();
    assert!(
        store
            .changes(&group, Some(&token), 100)
            .unwrap()
            .changes
            .is_empty()
    );
    // A listing token is sealed for its group like any other.
    assert!(matches!(
        store.changes(&path("/l-2"), Some(&listed), 100),
        Err(Error::InvalidChangeToken(_))
    ));
}

/// A transaction plans from one read of all the paths it names (`Reader::get_batch`: one
/// request on DynamoDB), each path once; a single write reads its own path.
#[test]
fn a_transaction_reads_the_paths_it_names_together() {
    let store = store();
    let backend = store.backend();
    store
        .put(&path("/r-1/a-1"), value(0), PutOptions::default())
        .unwrap();
    let counts = || {
        (
            backend.gets.swap(0, Ordering::SeqCst),
            backend.batch_gets.swap(0, Ordering::SeqCst),
        )
    };
    counts();
    let tx = Transaction::new()
        .put(path("/r-1/a-1"), value(1), PutOptions::default())
        .put(path("/r-1/a-2"), value(2), PutOptions::default())
        .delete(path("/r-2/a-1"), None);
    let results = store.transact(tx).unwrap();
    assert_eq!(results.len(), 3);
    assert_eq!(counts(), (0, 1), "one batched read, no single gets");
    assert_eq!(store.get(&path("/r-1/a-1")).unwrap().unwrap().version, 2);
    counts();
    store
        .put(&path("/r-1/a-1"), value(3), PutOptions::default())
        .unwrap();
    assert_eq!(counts(), (1, 0), "a single write reads its own path");
}

/// On a backend whose listing tokens start a margin back (DynamoDB), a listing check counts a
/// change of the margin that the listing already shows only when it does not know what the
/// listing showed: with `seen` (what `Store::transaction` sends) the check is exact again. A
/// change after the listing fails the check either way.
#[test]
fn a_listing_check_on_a_shared_backend_ignores_the_margin_it_has_seen() {
    let clock = Arc::new(ManualClock::new(Timestamp(1_700_000_000_000_000)));
    let options = StoreOptions {
        sweep_interval: None,
        clock: clock.clone(),
        ..StoreOptions::default()
    };
    let backend = Wrapped {
        shared: true,
        ..Wrapped::default()
    };
    let store = Store::new(backend, options).unwrap();
    let orders = ListRequest::new(path("/u-1/order"));
    for i in 1..=2 {
        store
            .put(
                &path(&format!("/u-1/order-{i}")),
                value(i),
                PutOptions::default(),
            )
            .unwrap();
        clock.advance(Duration::from_secs(1));
    }
    // Listed 1 s after order-2: both are in the listing's margin.
    let page = store.list(&orders).unwrap();
    let token = page.changes_token.unwrap();
    let blind = orders.check(token);
    let mut seen = orders.check(token);
    seen.seen = Some(
        page.items
            .iter()
            .filter_map(|e| e.item())
            .map(|i| (i.path.clone(), i.version))
            .collect(),
    );
    let check = |check: &pathdb_store::ListCheck| {
        store.transact(Transaction::new().check_list(check.clone()))
    };
    assert!(
        matches!(check(&blind), Err(Error::ListChanged { .. })),
        "without seen, a change in the margin counts"
    );
    check(&seen).expect("the listing shows both changes of the margin");
    // A delete of the margin that the listing shows the item after would count too.
    store
        .put(&path("/u-1/profile-1"), value(1), PutOptions::default())
        .unwrap();
    check(&seen).expect("a change outside the range is not one");
    store
        .put(&path("/u-1/order-1"), value(7), PutOptions::default())
        .unwrap();
    match check(&seen) {
        Err(Error::ListChanged {
            index: 0, path: p, ..
        }) => assert_eq!(p, path("/u-1/order-1")),
        other => panic!("a change after the listing must fail the check: {other:?}"),
    }
    // Store::transaction records what it listed: a decision on a listing of the margin commits
    // at its first run.
    let page = store.list(&orders).unwrap();
    assert!(page.changes_token.is_some());
    let mut runs = 0;
    store
        .transaction(|tx| {
            runs += 1;
            let n = tx.list(&orders)?.items.len();
            tx.put(&path(&format!("/u-1/order-{}", n + 1)), value(0));
            Ok::<_, Error>(())
        })
        .unwrap();
    assert_eq!(runs, 1);
    assert!(store.get(&path("/u-1/order-3")).unwrap().is_some());
}

/// One in-memory database that two stores write, as two servers write one DynamoDB table
/// (`shared`), each with a copy of the namespace definitions it reads again only hourly here.
struct TwoServers(Arc<InMemoryBackend>);

impl Backend for TwoServers {
    type Reader<'a> = <InMemoryBackend as Backend>::Reader<'a>;

    fn reader(&self) -> Result<Self::Reader<'_>, StorageError> {
        self.0.reader()
    }

    fn write(&self, batch: WriteBatch) -> Result<(), WriteError> {
        self.0.write(batch)
    }

    fn shared(&self) -> bool {
        true
    }
}

/// A server whose copy of the definitions predates `"changes": false` (docs/changes.md, "Groups
/// without a change log") still lists the group in a transaction, but its commit reads the
/// definition as stored and refuses the listing check: the other server's writes there, which
/// no log entry shows, cannot slip past it.
#[test]
fn a_listing_check_is_refused_by_a_server_whose_copy_still_logs() {
    let shared = Arc::new(InMemoryBackend::new());
    let open = || {
        let options = StoreOptions {
            sweep_interval: None,
            definitions_refresh: Duration::from_secs(3600),
            ..StoreOptions::default()
        };
        Store::new(TwoServers(Arc::clone(&shared)), options).unwrap()
    };
    let (a, b) = (open(), open());
    a.put(&path("/acct-1/a-1"), value(1), PutOptions::default())
        .unwrap();
    // b reads the definitions (none) with its first write.
    b.put(&path("/other-1/x-1"), value(1), PutOptions::default())
        .unwrap();
    let switched = AtomicBool::new(false);
    let result = b.transaction(|tx| {
        let page = tx.list(&ListRequest::new(path("/acct-1")))?;
        if !switched.swap(true, Ordering::SeqCst) {
            // Meanwhile, on the other server: the group stops logging, and is written.
            let off = pathdb_store::Definition {
                changes: Some(false),
                ..pathdb_store::Definition::default()
            };
            a.define_namespace("acct", off, None).unwrap();
            a.put(&path("/acct-1/a-2"), value(2), PutOptions::default())
                .unwrap();
        }
        Ok(page.items.len())
    });
    match result {
        Err(Error::InvalidRequest(message)) if message.contains("keeps no change log") => {}
        other => panic!("expected the listing check refused, got {other:?}"),
    }
}
