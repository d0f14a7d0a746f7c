//! One hot group on DynamoDB (issue 23, docs/dynamodb.md "Sizing"): many writers to the items of
//! one group, through the proxy (fault_proxy.rs) adding 10 ms to every request, as a client in
//! another zone or region would see. Every write to a group appends to the group's change log,
//! so writes to one group are ordered by the log's entry numbers; the backend's group commit
//! sends the writes that arrive while a commit is in flight together, in one
//! `TransactWriteItems`.
//!
//! The test checks that concurrent writes share transactions, that each write is acknowledged
//! only once its own commit is done (a second client reads it at once, straight from the
//! server), and that the feed has each write exactly once. It prints writes/s and the requests
//! they cost: `cargo test -p pathdb-dynamodb --test tests hot_group -- --nocapture`, sized by
//! `PATHDB_HOT_GROUP_WRITERS` (default 32), `PATHDB_HOT_GROUP_WRITES` (per writer, default 8)
//! and `PATHDB_HOT_GROUP_LATENCY_MS` (default 10).
//!
//! Each writer creates its own item in the group, then replaces it: the puts an application
//! that updates a group's items makes (a new path also reads its newest revision, docs/versions.md).

use crate::fault_proxy::FaultProxy;
use crate::{Dynamo, endpoint};
use pathdb_dynamodb::{DynamoBackend, DynamoOptions};
use pathdb_keys::KeyPath;
use pathdb_store::{Change, Json, PutOptions, Store, StoreOptions};
use std::collections::HashMap;
use std::time::{Duration, Instant};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn store_on(table: &str, endpoint: String) -> Store<DynamoBackend> {
    let backend = DynamoBackend::connect(&DynamoOptions {
        table: table.to_owned(),
        endpoint: Some(endpoint),
        region: Some("us-east-1".into()),
        ..DynamoOptions::default()
    })
    .expect("client starts");
    let options = StoreOptions {
        sweep_interval: None,
        ..StoreOptions::default()
    };
    Store::new(backend, options).expect("store opens")
}

#[test]
fn writes_to_one_hot_group_share_transactions() {
    let Some((url, _)) = endpoint() else {
        return;
    };
    // It keeps moto busy for seconds: the tests with short retry budgets wait (faults.rs).
    let _busy = crate::busy_moto();
    let writers = env_usize("PATHDB_HOT_GROUP_WRITERS", 32);
    let per_writer = env_usize("PATHDB_HOT_GROUP_WRITES", 8);
    let latency = Duration::from_millis(env_usize("PATHDB_HOT_GROUP_LATENCY_MS", 10) as u64);
    let table = Dynamo::new(url.clone()).backend().table_name().to_owned();
    let proxy = FaultProxy::start(&url);
    proxy.set_latency(latency);
    let store = store_on(&table, proxy.endpoint());
    // Straight to the server: what another process sees.
    let checker = store_on(&table, url);
    let metrics = store.backend().metrics();
    let group: KeyPath = "/hot-1".parse().expect("path");
    let token = store.changes_token(&group).expect("token");
    // The first write to a group in a process reads where its log ends; not what is measured.
    store
        .put(
            &"/hot-1/warm-1".parse().expect("path"),
            Json::parse("{}").expect("json"),
            PutOptions::default(),
        )
        .expect("put");

    let before = metrics.counts();
    let started = Instant::now();
    std::thread::scope(|s| {
        for w in 0..writers {
            let (store, checker) = (&store, &checker);
            s.spawn(move || {
                let path: KeyPath = format!("/hot-1/w-{w}").parse().expect("path");
                for i in 0..per_writer {
                    let value = Json::parse(&format!(r#"{{"w":{w},"i":{i}}}"#)).expect("json");
                    let item = store.put(&path, value, PutOptions::default()).expect("put");
                    // Acknowledged only after its own commit: another client reads it now.
                    let read = checker.get(&path).expect("get").unwrap_or_else(|| {
                        panic!("{path} was acknowledged but another client does not see it")
                    });
                    assert_eq!(read.version, item.version, "{path}");
                    assert_eq!(item.version, i as u64 + 1, "{path}");
                }
            });
        }
    });
    let elapsed = started.elapsed();
    let spent = metrics.counts();
    let writes = (writers * per_writer) as u64;
    let transactions = spent.transactions - before.transactions;
    eprintln!(
        "hot group, {writers} writers, {writes} writes, {} ms added per request: {:.0} writes/s \
         ({:.2} s); {transactions} TransactWriteItems ({:.1} writes each), {} GetItem, {} Query, \
         {} PutItem/DeleteItem, {} retries",
        latency.as_millis(),
        writes as f64 / elapsed.as_secs_f64(),
        elapsed.as_secs_f64(),
        writes as f64 / transactions.max(1) as f64,
        spent.gets - before.gets,
        spent.queries - before.queries,
        spent.writes - before.writes,
        spent.retries - before.retries,
    );

    // The feed has every write exactly once, in version order per item.
    let mut seen: HashMap<String, Vec<u64>> = HashMap::new();
    let mut next = token;
    loop {
        let page = checker.changes(&group, Some(&next), 1000).expect("changes");
        if page.changes.is_empty() {
            break;
        }
        for entry in &page.changes {
            if let Change::Put(item) = &entry.change {
                seen.entry(item.path.to_string())
                    .or_default()
                    .push(item.version);
            }
        }
        next = page.next_token;
    }
    assert_eq!(seen.remove("/hot-1/warm-1"), Some(vec![1]));
    assert_eq!(seen.len(), writers, "every writer's item is in the feed");
    let expected: Vec<u64> = (1..=per_writer as u64).collect();
    for (path, versions) in &seen {
        assert_eq!(versions, &expected, "{path}: each write once, in order");
    }
    // One change log entry per round, not per write: the entries are the table's keys under
    // the log's prefix (`ff ff`, docs/changes.md) in the group's partition.
    let partition = group.partition_key();
    let entries = {
        use pathdb_store::backend::{Backend, Reader};
        let reader = checker.backend().reader().expect("reader");
        let mut entries = 0u64;
        let mut after = None;
        loop {
            let page = reader.scan_all(after.as_ref(), 1000).expect("scan");
            let Some((last, _)) = page.last() else { break };
            after = Some(last.clone());
            entries += page
                .iter()
                .filter(|(key, _)| {
                    key.partition == partition && key.sort.starts_with(&[0xff, 0xff])
                })
                .count() as u64;
        }
        entries
    };
    eprintln!("{entries} change log entries for {} writes", writes + 1);
    assert!(
        entries <= transactions + 1,
        "{entries} log entries for {transactions} transactions: a round logs one"
    );
    // Writers that arrive while a commit is in flight go together in the next one.
    assert!(
        transactions * 2 <= writes,
        "{writes} writes to one group took {transactions} transactions: they should share them"
    );
}

/// Two processes (two clients) writing one group in turn: each one's remembered end of the log
/// is stale after the other wrote, so its next entry's condition fails; it reads the log's end
/// and goes again. Nothing is lost or logged twice.
#[test]
fn a_stale_log_end_is_read_again() {
    let Some((url, _)) = endpoint() else {
        return;
    };
    let table = Dynamo::new(url.clone()).backend().table_name().to_owned();
    let stores = [store_on(&table, url.clone()), store_on(&table, url)];
    let group: KeyPath = "/turns-1".parse().expect("path");
    let token = stores[0].changes_token(&group).expect("token");
    for i in 0..6u64 {
        let store = &stores[(i % 2) as usize];
        let before = store.backend().metrics().counts();
        let item = store
            .put(
                &"/turns-1/a-1".parse().expect("path"),
                Json::parse(&format!(r#"{{"i":{i}}}"#)).expect("json"),
                PutOptions::default(),
            )
            .expect("put");
        assert_eq!(item.version, i + 1);
        let spent = store.backend().metrics().counts();
        if i >= 2 {
            // The other client wrote since: the entry's condition failed once, then the log's
            // end was read (and maybe trimmed: one more query).
            assert_eq!(spent.transactions - before.transactions, 2, "write {i}");
            assert!(spent.queries - before.queries >= 1, "write {i}");
        }
    }
    let page = stores[1]
        .changes(&group, Some(&token), 100)
        .expect("changes");
    let versions: Vec<u64> = page
        .changes
        .iter()
        .map(|e| match &e.change {
            Change::Put(item) => item.version,
            other => panic!("unexpected change {other:?}"),
        })
        .collect();
    assert_eq!(versions, [1, 2, 3, 4, 5, 6]);
}
