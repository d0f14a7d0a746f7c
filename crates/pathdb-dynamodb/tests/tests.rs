//! The DynamoDB backend against a DynamoDB-compatible server started by
//! `scripts/dynamodb-local.sh`. Set `PATHDB_DYNAMODB_ENDPOINT` (e.g. `http://127.0.0.1:8000`) and
//! `PATHDB_DYNAMODB_FLAVOR` (`moto`, the default, or `dynalite`); without the endpoint every test
//! here returns at once, saying so (the tests need no outside resources unless asked).

mod compare;
mod conformance;
mod fault_proxy;
mod faults;
mod foreign;
mod hot_group;

use pathdb_conformance::{Harness, TestStore};
use pathdb_dynamodb::{DynamoBackend, DynamoOptions, create_table};
use pathdb_store::{Json, PutOptions, Store, StoreOptions};
use std::sync::atomic::{AtomicU64, Ordering};

/// Which local server the endpoint is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Flavor {
    /// moto: implements transactions.
    Moto,
    /// dynalite: no transactions.
    Dynalite,
}

/// The configured endpoint and flavor, or `None` (and a note on stderr) when unset.
pub fn endpoint() -> Option<(String, Flavor)> {
    let Ok(endpoint) = std::env::var("PATHDB_DYNAMODB_ENDPOINT") else {
        eprintln!(
            "skipped: PATHDB_DYNAMODB_ENDPOINT is not set (scripts/dynamodb-local.sh starts a server)"
        );
        return None;
    };
    let flavor = match std::env::var("PATHDB_DYNAMODB_FLAVOR").as_deref() {
        Ok("dynalite") => Flavor::Dynalite,
        _ => Flavor::Moto,
    };
    if flavor == Flavor::Dynalite {
        // Every PathDB write commits its item and its change log entry together
        // (TransactWriteItems), which dynalite does not implement (docs/changes.md).
        eprintln!("skipped: dynalite has no transactions, and every PathDB write is one");
        return None;
    }
    Some((endpoint, flavor))
}

/// Tests that load moto for seconds (hot_group.rs) and tests whose retry budgets allow a few
/// hundred milliseconds per request (faults.rs) do not run at the same time: a busy moto answers
/// the latter past their timeouts. The rest run alongside either.
static MOTO_LOAD: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Held by a test with short timeouts.
pub fn quiet_moto() -> std::sync::RwLockReadGuard<'static, ()> {
    MOTO_LOAD
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Held by a test that loads moto heavily.
pub fn busy_moto() -> std::sync::RwLockWriteGuard<'static, ()> {
    MOTO_LOAD
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Local servers still want credentials to be present.
fn dummy_credentials() {
    for (k, v) in [
        ("AWS_ACCESS_KEY_ID", "pathdb-test"),
        ("AWS_SECRET_ACCESS_KEY", "pathdb-test"),
    ] {
        if std::env::var_os(k).is_none() {
            // SAFETY: set before any thread of this test reads the environment; every test sets
            // the same values, so a race is between identical writes.
            unsafe { std::env::set_var(k, v) };
        }
    }
}

/// A fresh table per store, so tests are independent.
pub struct Dynamo {
    endpoint: String,
}

impl Dynamo {
    /// A harness for `endpoint`.
    pub fn new(endpoint: String) -> Dynamo {
        dummy_credentials();
        Dynamo { endpoint }
    }

    /// The endpoint's URL.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// A backend on a new, empty table.
    pub fn backend(&self) -> DynamoBackend {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let table = format!(
            "pathdb-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let options = DynamoOptions {
            table,
            endpoint: Some(self.endpoint.clone()),
            region: Some("us-east-1".into()),
            ..DynamoOptions::default()
        };
        let backend = DynamoBackend::connect(&options).expect("client starts");
        create_table(&backend).expect("table created");
        backend
    }
}

impl Harness for Dynamo {
    type Backend = DynamoBackend;

    fn open(&self, options: StoreOptions) -> TestStore<DynamoBackend> {
        TestStore::new(Store::new(self.backend(), options).expect("store opens"))
    }

    /// A new client and store on the same table.
    fn reopen(
        &self,
        store: TestStore<DynamoBackend>,
        options: StoreOptions,
    ) -> Option<TestStore<DynamoBackend>> {
        let table = store.backend().table_name().to_owned();
        drop(store);
        let backend = DynamoBackend::connect(&DynamoOptions {
            table,
            endpoint: Some(self.endpoint.clone()),
            region: Some("us-east-1".into()),
            ..DynamoOptions::default()
        })
        .expect("client starts");
        Some(TestStore::new(
            Store::new(backend, options).expect("store opens"),
        ))
    }
}

/// Readiness is one `DescribeTable`: an existing table is ready, a missing one is not.
#[test]
fn ready_means_the_table_is_reachable_and_active() {
    let Some((endpoint, _)) = endpoint() else {
        return;
    };
    use pathdb_store::backend::Backend;
    let dynamo = Dynamo::new(endpoint.clone());
    dynamo.backend().ready().expect("a new table is ready");
    let missing = DynamoBackend::connect(&DynamoOptions {
        table: format!("pathdb-missing-{}", std::process::id()),
        endpoint: Some(endpoint),
        region: Some("us-east-1".into()),
        ..DynamoOptions::default()
    })
    .expect("client starts");
    let error = missing.ready().expect_err("no such table");
    assert!(error.to_string().contains("DescribeTable"), "{error}");
}

/// What the change feed costs in DynamoDB requests (docs/changes.md's cost table, docs/dynamodb.md):
/// a write is one `TransactWriteItems` (the item and its change log entry) plus the reads that
/// plan it; the log's last number is read only by a process's first write to a group (group.rs
/// remembers it), and until a process has read a group's oldest log entries, about one commit in
/// eight does (trimming). A poll is one `Query`. So replacing or deleting an item is 2 requests.
/// (What every store operation costs, `pathdb bench dynamodb-cost`, is measured in pathdb-bench:
/// its tests/dynamodb_cost.rs.)
#[test]
fn requests_per_write_and_per_poll() {
    let Some((endpoint, _)) = endpoint() else {
        return;
    };
    let backend = Dynamo::new(endpoint).backend();
    let metrics = backend.metrics();
    let store = Store::new(backend, measuring_options()).expect("store opens");
    let group: pathdb_keys::KeyPath = "/cost-1".parse().expect("path");
    let item: pathdb_keys::KeyPath = "/cost-1/a-1".parse().expect("path");
    let value = || pathdb_store::Json::parse(r#"{"n":1}"#).expect("json");
    let mut last = metrics.counts();
    let mut step = |what: &str| {
        let now = metrics.counts();
        let diff = (
            now.gets - last.gets,
            now.queries - last.queries,
            now.writes - last.writes,
            now.transactions - last.transactions,
        );
        eprintln!(
            "{what}: {} GetItem, {} Query, {} PutItem/DeleteItem, {} TransactWriteItems",
            diff.0, diff.1, diff.2, diff.3
        );
        last = now;
        diff
    };
    let token = store.changes_token(&group).expect("token");
    assert_eq!(step("changes token"), (0, 1, 0, 0));
    // About one commit in eight per group also queries the log's oldest entries (trimming),
    // chosen by a keyed hash: it may add one Query to any write.
    let write = |diff: (u64, u64, u64, u64), base_queries: u64| {
        assert_eq!((diff.0, diff.2, diff.3), (1, 0, 1), "{diff:?}");
        assert!(
            diff.1 == base_queries || diff.1 == base_queries + 1,
            "{diff:?}"
        );
    };
    store
        .put(&item, value(), pathdb_store::PutOptions::default())
        .expect("put");
    // The item's record and the log's last number (the first write to the group in this
    // process). A path with no record was never used (pathdb-store's jobs/upgrade.rs): nothing more.
    write(step("first put of a new item"), 1);
    for _ in 0..3 {
        store
            .put(&item, value(), pathdb_store::PutOptions::default())
            .expect("put");
        // The item's record, then the transaction.
        write(step("put replacing an item"), 0);
    }
    store.delete(&item, None).expect("delete");
    write(step("delete"), 0);
    let page = store.changes(&group, Some(&token), 100).expect("poll");
    assert_eq!(page.changes.len(), 5);
    assert_eq!(step("poll returning 5 changes"), (0, 1, 0, 0));
    let page = store
        .changes(&group, Some(&page.next_token), 100)
        .expect("poll");
    assert!(page.changes.is_empty());
    assert_eq!(step("poll finding nothing"), (0, 1, 0, 0));
}

/// How precise a listing check is on DynamoDB, measured (docs/transactions.md): a listing's
/// token starts a margin back (docs/changes.md), so a check given only the token counts every
/// change in its range of the 10 s before the listing, a false conflict when nothing changed
/// after it; given what the listing showed (`seen`, which `Store::transaction` and the clients
/// send) it counts none of them. A write outside the range never fails it.
#[test]
fn listing_checks_are_exact_given_what_the_listing_showed() {
    let Some((endpoint, _)) = endpoint() else {
        return;
    };
    let store = without_sweeper(endpoint);
    const ROUNDS: usize = 10;
    let path = |text: &str| text.parse::<pathdb_keys::KeyPath>().expect("path");
    let orders = pathdb_store::ListRequest::new(path("/shop-1/order"));
    let commit = |check: pathdb_store::ListCheck| {
        store.transact(pathdb_store::Transaction::new().check_list(check))
    };
    let (mut blind, mut seen, mut outside) = (0, 0, 0);
    for round in 0..ROUNDS {
        let value = pathdb_store::Json::parse("{}").expect("json");
        store
            .put(
                &path(&format!("/shop-1/order-{round}")),
                value.clone(),
                Default::default(),
            )
            .expect("put");
        let page = store.list(&orders).expect("list");
        let token = page.changes_token.expect("a first page's token");
        let mut shown = orders.check(token);
        shown.seen = Some(
            page.items
                .iter()
                .filter_map(|e| e.item())
                .map(|i| (i.path.clone(), i.version))
                .collect(),
        );
        // Nothing in the range changes after the listing: every failure is a false conflict.
        blind += usize::from(commit(orders.check(token)).is_err());
        seen += usize::from(commit(shown.clone()).is_err());
        store
            .put(&path("/shop-1/profile-1"), value, Default::default())
            .expect("put");
        outside += usize::from(commit(shown).is_err());
    }
    eprintln!(
        "listing checks, {ROUNDS} rounds, each listing right after a change in its range: \
         false conflicts with the token alone {blind}, with seen {seen}, with seen and a write \
         outside the range {outside}"
    );
    assert_eq!((seen, outside), (0, 0));
    assert_eq!(blind, ROUNDS, "the token alone counts its margin's changes");
}

/// `get_many` (`POST /v1/get`) of more keys than one `TransactGetItems` of the endpoint takes
/// (moto: 25) is still one snapshot: under concurrent transfers, every read of all accounts
/// sums to the total. A read that finds no snapshot answers unavailable (retry), never a torn
/// one; on a slow machine that may be every read made during the transfers, so the reads after
/// them must succeed.
#[test]
fn get_many_of_several_requests_is_one_snapshot() {
    let Some((endpoint, _)) = endpoint() else {
        return;
    };
    let store = without_sweeper(endpoint);
    const ACCOUNTS: usize = 60;
    let json = |n: i64| pathdb_store::Json::parse(&format!(r#"{{"n": {n}}}"#)).expect("json");
    let n = |item: &pathdb_store::Item| item.value.to_value()["n"].as_i64().expect("n");
    let accounts: Vec<pathdb_keys::KeyPath> = (0..ACCOUNTS)
        .map(|i| {
            format!("/snap-{}/account-{i}", i % 3)
                .parse()
                .expect("path")
        })
        .collect();
    for a in &accounts {
        store.put(a, json(100), Default::default()).expect("put");
    }
    let total = |items: &[pathdb_store::Item]| -> i64 { items.iter().map(n).sum() };
    let done = std::sync::atomic::AtomicBool::new(false);
    let (snapshots, unavailable) = std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..30 {
                let (from, to) = (&accounts[i % ACCOUNTS], &accounts[(i * 7 + 1) % ACCOUNTS]);
                store
                    .transaction(|tx| {
                        let (a, b) = (tx.get(from)?, tx.get(to)?);
                        let (a, b) = (n(&a.expect("a")), n(&b.expect("b")));
                        tx.put(from, json(a - 10));
                        tx.put(to, json(b + 10));
                        Ok(())
                    })
                    .expect("a transfer");
            }
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        let (mut snapshots, mut unavailable) = (0, 0);
        while !done.load(std::sync::atomic::Ordering::SeqCst) {
            match store.get_many(&accounts) {
                Ok(items) => {
                    assert_eq!(items.len(), ACCOUNTS);
                    assert_eq!(total(&items), 100 * ACCOUNTS as i64, "a torn snapshot");
                    snapshots += 1;
                }
                Err(pathdb_store::Error::Storage(e))
                    if e.kind() == pathdb_store::StorageErrorKind::Unavailable =>
                {
                    unavailable += 1;
                }
                Err(e) => panic!("get_many: {e}"),
            }
        }
        (snapshots, unavailable)
    });
    eprintln!("{snapshots} snapshots during the transfers, {unavailable} reads found none");
    let items = store
        .get_many(&accounts)
        .expect("a quiet read is a snapshot");
    assert_eq!(total(&items), 100 * ACCOUNTS as i64);
}

/// Two stores on one table, as two servers: a definition one of them writes applies to the
/// other's writes once its copy is older than `definitions_refresh` (here 200 ms), and the
/// other reads it back at once (reads of definitions are not cached).
#[test]
fn a_definition_written_by_one_store_applies_in_another() {
    let Some((endpoint, flavor)) = endpoint() else {
        return;
    };
    if flavor == Flavor::Dynalite {
        return;
    }
    let _quiet = quiet_moto();
    let refresh = std::time::Duration::from_millis(200);
    let options = || StoreOptions {
        sweep_interval: None,
        definitions_refresh: refresh,
        ..StoreOptions::default()
    };
    let dynamo = Dynamo::new(endpoint);
    let a = Store::new(dynamo.backend(), options()).expect("store opens");
    let b = dynamo
        .reopen(pathdb_conformance::TestStore::new(a.clone()), options())
        .expect("a second client");
    let person = |text: &str| Json::parse(text).expect("json");
    let path: pathdb_keys::KeyPath = "/person-1".parse().expect("path");
    b.put(&path, person(r#"{"age": "x"}"#), PutOptions::default())
        .expect("no schema yet");
    let schema = serde_json::json!({"properties": {"age": {"type": "integer"}}});
    let definition = pathdb_store::Definition {
        schema: Some(schema),
        ..Default::default()
    };
    a.define_namespace("person", definition, None)
        .expect("defined");
    assert!(b.namespace("person").expect("read").is_some());
    std::thread::sleep(refresh + std::time::Duration::from_millis(50));
    match b.put(&path, person(r#"{"age": "y"}"#), PutOptions::default()) {
        Err(pathdb_store::Error::SchemaViolation { .. }) => {}
        other => panic!("the other store must refuse it by now, got {other:?}"),
    }
    b.put(&path, person(r#"{"age": 7}"#), PutOptions::default())
        .expect("a value that fits");
    // And back: a removal reaches the first store the same way.
    b.delete_namespace("person", None).expect("removed");
    std::thread::sleep(refresh + std::time::Duration::from_millis(50));
    a.put(&path, person(r#"{"age": "z"}"#), PutOptions::default())
        .expect("no schema any more");
}

/// A store on a fresh table of `endpoint`, without the expiry sweeper or the per-second
/// re-reading of definitions (whose reads the measurements here must not count).
fn without_sweeper(endpoint: String) -> Store<DynamoBackend> {
    Store::new(Dynamo::new(endpoint).backend(), measuring_options()).expect("store opens")
}

/// Store options under which every request is an operation's: no expiry sweeper, and no
/// re-reading of the namespace definitions (one `Query` a second while writing) during a test.
/// The same as `pathdb bench dynamodb-cost`'s (pathdb-bench's `dynamodb_cost::store_options`).
fn measuring_options() -> StoreOptions {
    StoreOptions {
        sweep_interval: None,
        definitions_refresh: std::time::Duration::from_secs(24 * 3600),
        ..StoreOptions::default()
    }
}
