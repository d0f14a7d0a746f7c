//! The backend under faults (issue 22, docs/reliability.md "DynamoDB faults"): the fault proxy
//! (fault_proxy.rs) sits between the backend and moto and throttles, answers 500, answers late,
//! holds requests, and resets connections before and after forwarding.
//!
//! - Transient faults are retried within the budget and each write lands once.
//! - Past the budget: faults that did nothing end in `Unavailable`; a write whose answers were
//!   lost after it committed is reported committed (settled by reading); one that reading cannot
//!   settle is `OutcomeUnknown`, never a failure.
//! - A workload of concurrent writers under random faults: every acknowledged write reads back
//!   and is in the feed exactly once, no failed write is visible, no transaction is partly
//!   visible. It prints its counts.
//! - The shared `pathdb_conformance::fault_injection` run (the one memory and file pass) on
//!   moto, directly and through the proxy: zero acknowledged writes lost, zero partial
//!   transactions, an exact feed.
//! - An endpoint too slow for a large `Scan` or `Query` page: pages that time out are asked
//!   again with fewer items, so an export and a listing complete, byte for byte.
//! - An endpoint without `TransactWriteItems` is refused when the backend connects.

use crate::fault_proxy::{Fault, FaultProxy};
use crate::{Dynamo, endpoint};
use pathdb_conformance::{FaultReport, FaultWorkload, fault_injection};
use pathdb_dynamodb::{DynamoBackend, DynamoOptions, Metrics, RetryBudget};
use pathdb_keys::KeyPath;
use pathdb_store::{
    Change, ChangeToken, Error, Json, PutOptions, StorageErrorKind, Store, StoreOptions,
    Transaction,
};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Short timeouts, so that slow answers cost a test seconds, not minutes. The budget's shape is
/// the default's: a few attempts, exponential backoff, per-attempt timeout.
fn test_budget() -> RetryBudget {
    RetryBudget {
        max_attempts: 4,
        initial_backoff: Duration::from_millis(5),
        max_backoff: Duration::from_millis(40),
        connect_timeout: Duration::from_secs(1),
        attempt_timeout: Duration::from_millis(300),
        operation_timeout: Duration::from_secs(5),
    }
}

/// Longer than the test budget's attempt timeout.
const SLOW: Duration = Duration::from_millis(500);

/// The faults every test goes through.
fn every_fault() -> [Fault; 6] {
    [
        Fault::Throttling,
        Fault::ProvisionedThroughputExceeded,
        Fault::InternalError,
        Fault::SlowAnswer(SLOW),
        Fault::ResetBeforeForward,
        Fault::ResetAfterForward,
    ]
}

fn path(text: &str) -> KeyPath {
    text.parse().expect("test path")
}

fn json(text: &str) -> Json {
    Json::parse(text).expect("test JSON")
}

/// A store on a new table, reached through a fault proxy in front of moto.
struct Faulty {
    proxy: FaultProxy,
    store: Store<DynamoBackend>,
    metrics: Arc<Metrics>,
}

fn faulty(budget: RetryBudget) -> Option<Faulty> {
    let (url, _) = endpoint()?;
    // Made straight on moto, without faults.
    let table = Dynamo::new(url.clone()).backend().table_name().to_owned();
    let proxy = FaultProxy::start(&url);
    let backend = DynamoBackend::connect(&DynamoOptions {
        table,
        endpoint: Some(proxy.endpoint()),
        region: Some("us-east-1".into()),
        retry: budget,
    })
    .expect("connects through the proxy");
    let metrics = backend.metrics();
    let options = StoreOptions {
        sweep_interval: None,
        ..StoreOptions::default()
    };
    let store = Store::new(backend, options).expect("store opens");
    Some(Faulty {
        proxy,
        store,
        metrics,
    })
}

/// Every change in `group`'s feed after `since`: (path, version, value; "<deleted>" for a
/// delete).
fn feed(
    store: &Store<DynamoBackend>,
    group: &KeyPath,
    since: &ChangeToken,
) -> Vec<(String, u64, String)> {
    let mut out = Vec::new();
    let mut token = *since;
    loop {
        let page = store
            .changes(group, Some(&token), 1000)
            .expect("feed reads");
        if page.changes.is_empty() {
            return out;
        }
        for entry in page.changes {
            out.push(match entry.change {
                Change::Put(item) => (
                    item.path.to_string(),
                    item.version,
                    item.value.as_str().to_owned(),
                ),
                Change::Delete { path, version, .. } => {
                    (path.to_string(), version, "<deleted>".to_owned())
                }
            });
        }
        token = page.next_token;
    }
}

fn value_at(store: &Store<DynamoBackend>, at: &str) -> Option<String> {
    store
        .get(&path(at))
        .expect("reads after the faults")
        .map(|item| item.value.as_str().to_owned())
}

fn storage_kind(error: &Error) -> Option<StorageErrorKind> {
    match error {
        Error::Storage(e) => Some(e.kind()),
        _ => None,
    }
}

/// Two faults on each request kind a write sends, for each fault kind: the write succeeds, and
/// its change is in the feed once. Lost answers after a commit are settled by reading.
#[test]
fn transient_faults_are_retried_and_each_write_lands_once() {
    // Short retry budgets: no heavy load on moto meanwhile (hot_group.rs).
    let _quiet = crate::quiet_moto();
    let Some(f) = faulty(test_budget()) else {
        return;
    };
    for (i, fault) in every_fault().into_iter().enumerate() {
        let name = fault.name();
        let group = path(&format!("/t-{i}"));
        let other = path(&format!("/u-{i}"));
        let since = f.store.changes_token(&group).expect("token");
        let since_other = f.store.changes_token(&other).expect("token");
        let before = f.proxy.injected().faults.get(name).copied().unwrap_or(0);

        // A put: its TransactWriteItems (the item with its change log entry) fails twice.
        f.proxy.fail_next("TransactWriteItems", 2, fault);
        let put = |at: &str, value: &str| {
            f.store
                .put(&path(at), json(value), PutOptions::default())
                .unwrap_or_else(|e| panic!("{name}: put {at}: {e}"))
        };
        put(&format!("/t-{i}/a-1"), r#"{"a":1}"#);
        // A transaction over two groups (two change log entries) fails twice.
        f.proxy.fail_next("TransactWriteItems", 2, fault);
        f.store
            .transact(
                Transaction::new()
                    .put(
                        path(&format!("/t-{i}/b-1")),
                        json(r#"{"b":1}"#),
                        PutOptions::default(),
                    )
                    .put(
                        path(&format!("/u-{i}/b-1")),
                        json(r#"{"b":2}"#),
                        PutOptions::default(),
                    ),
            )
            .unwrap_or_else(|e| panic!("{name}: transaction: {e}"));
        // The read that plans a write (the item's record: a path with no record needs no
        // other) fails twice.
        f.proxy.fail_next("GetItem", 2, fault);
        put(&format!("/t-{i}/c-1"), r#"{"c":1}"#);
        f.proxy.clear();

        let injected = f.proxy.injected().faults.get(name).copied().unwrap_or(0) - before;
        assert_eq!(injected, 6, "{name}: every scheduled fault was met");
        let changes = feed(&f.store, &group, &since);
        let expected = [
            (format!("/t-{i}/a-1"), 1, r#"{"a":1}"#.to_owned()),
            (format!("/t-{i}/b-1"), 1, r#"{"b":1}"#.to_owned()),
            (format!("/t-{i}/c-1"), 1, r#"{"c":1}"#.to_owned()),
        ];
        assert_eq!(changes, expected, "{name}: each write once, in order");
        assert_eq!(
            feed(&f.store, &other, &since_other),
            [(format!("/u-{i}/b-1"), 1, r#"{"b":2}"#.to_owned())],
            "{name}"
        );
        for (at, _, value) in &expected {
            assert_eq!(value_at(&f.store, at).as_ref(), Some(value), "{name}: {at}");
        }
    }
    let counts = f.metrics.counts();
    eprintln!(
        "transient faults: {} retries, {} lost answers settled by reading",
        counts.retries, counts.settled
    );
    // Reset-after-forward and slow answers lose answers of writes that committed: 2 each.
    assert!(counts.settled >= 4, "{counts:?}");
}

/// An endpoint that cannot answer a large page within the attempt timeout: every `Scan` and
/// `Query` asking for more than 40 items is answered after 1.5 s, past the 1 s timeout (long
/// enough for a small page from a moto busy with the other tests on a slow machine). The
/// backend asks again with half the `Limit` each time (paging.rs) instead of retrying the same
/// page until its budget runs out, so an export of 400 records completes through the proxy and
/// equals, byte for byte, the export read straight from moto; so does a listing page of 150.
#[test]
fn an_export_completes_when_large_pages_time_out() {
    // Short retry budgets: no heavy load on moto meanwhile (hot_group.rs).
    let _quiet = crate::quiet_moto();
    let budget = RetryBudget::default()
        .with_attempt_timeout(Duration::from_secs(1))
        .with_operation_timeout(Duration::from_secs(10));
    let Some(f) = faulty(budget) else {
        return;
    };
    // 400 items in 4 groups, 100 per transaction (one change log entry each, so 99 puts).
    for g in 0..4 {
        let mut tx = Transaction::new();
        for i in 0..99 {
            tx = tx.put(
                path(&format!("/slow-{g}/item-{i}")),
                json(&format!(r#"{{"n":{i},"pad":"{}"}}"#, "x".repeat(64))),
                PutOptions::default(),
            );
        }
        f.store.transact(tx).expect("transaction commits");
    }
    let direct = Dynamo::new(endpoint().expect("endpoint").0);
    let straight = Store::new(
        DynamoBackend::connect(
            &DynamoOptions::new(f.store.backend().table_name())
                .with_endpoint(direct.endpoint())
                .with_region("us-east-1"),
        )
        .expect("connects"),
        StoreOptions {
            sweep_interval: None,
            ..StoreOptions::default()
        },
    )
    .expect("store opens");
    let export = |store: &Store<DynamoBackend>| {
        let mut out = Vec::new();
        let end = store
            .export(&mut out, &mut |_| {})
            .expect("export completes");
        (String::from_utf8(out).expect("utf-8"), end.records)
    };
    let (expected, records) = export(&straight);
    assert!(records >= 396, "{records} records");

    f.proxy.slow_pages("Scan", 40, Duration::from_millis(1500));
    let before = f.metrics.counts();
    let (through_proxy, _) = export(&f.store);
    assert!(through_proxy == expected, "the export differs");
    let counts = f.metrics.counts();
    let shrinks = counts.page_shrinks - before.page_shrinks;
    // 1000 -> 500 -> 250 -> 125 -> 62 -> 31: at least five timeouts answered by smaller pages.
    assert!(shrinks >= 5, "{counts:?}");
    assert!(f.proxy.injected().faults["slow_answer"] >= 5);

    // A listing page of 150 items: its Query pages time out above 40 items too.
    f.proxy.clear();
    f.proxy.slow_pages("Query", 40, Duration::from_millis(1500));
    let mut request = pathdb_store::ListRequest::new(path("/slow-2"));
    request.limit = 150;
    let listed: Vec<String> = f
        .store
        .list(&request)
        .expect("listing completes")
        .items
        .iter()
        .map(|entry| format!("{entry:?}"))
        .collect();
    let straight_listed: Vec<String> = straight
        .list(&request)
        .expect("listing")
        .items
        .iter()
        .map(|entry| format!("{entry:?}"))
        .collect();
    assert_eq!(listed.len(), 99);
    assert_eq!(listed, straight_listed);
    assert!(f.metrics.counts().page_shrinks > counts.page_shrinks);
    f.proxy.clear();
}

/// Every attempt of a write meets the fault. Faults that did nothing end in `Unavailable`
/// (nothing written); lost answers of a write that committed are settled as committed; lost
/// answers of a write that never reached the table are `OutcomeUnknown`, since the client cannot
/// tell. Faults on the reads that plan a write end in `Unavailable`, whatever the fault.
#[test]
fn faults_past_the_budget_never_report_a_committed_write_as_failed() {
    // Short retry budgets: no heavy load on moto meanwhile (hot_group.rs).
    let _quiet = crate::quiet_moto();
    let Some(f) = faulty(test_budget()) else {
        return;
    };
    for (i, fault) in every_fault().into_iter().enumerate() {
        let name = fault.name();
        let group = path(&format!("/x-{i}"));
        let since = f.store.changes_token(&group).expect("token");
        let item = format!("/x-{i}/a-1");

        f.proxy.fail_next("TransactWriteItems", 1000, fault);
        let result = f
            .store
            .put(&path(&item), json(r#"{"x":1}"#), PutOptions::default());
        f.proxy.clear();
        let committed = value_at(&f.store, &item).is_some();
        match fault {
            Fault::Throttling | Fault::ProvisionedThroughputExceeded => {
                let error = result.expect_err(name);
                assert_eq!(
                    storage_kind(&error),
                    Some(StorageErrorKind::Unavailable),
                    "{name}: {error}"
                );
                assert!(
                    error.to_string().contains("gave up after 4 attempts"),
                    "{error}"
                );
                assert!(!committed, "{name}: nothing was written");
            }
            // Sent, never applied, no answer: the client cannot know it was not applied.
            Fault::InternalError | Fault::ResetBeforeForward => {
                let error = result.expect_err(name);
                assert_eq!(
                    storage_kind(&error),
                    Some(StorageErrorKind::OutcomeUnknown),
                    "{name}: {error}"
                );
                assert!(!committed, "{name}: the proxy forwarded nothing");
            }
            // Applied by the first attempt, every answer lost: reading finds the write's entry.
            _ => {
                result.unwrap_or_else(|e| panic!("{name}: committed, so reported committed: {e}"));
                assert!(committed, "{name}");
            }
        }
        let changes = feed(&f.store, &group, &since);
        assert_eq!(changes.len(), usize::from(committed), "{name}: {changes:?}");

        // The read that plans the next write fails every time: nothing is sent.
        f.proxy.fail_next("GetItem", 1000, fault);
        let error = f
            .store
            .put(
                &path(&format!("/x-{i}/b-1")),
                json("1"),
                PutOptions::default(),
            )
            .expect_err(name);
        f.proxy.clear();
        assert_eq!(
            storage_kind(&error),
            Some(StorageErrorKind::Unavailable),
            "{name}: {error}"
        );
        assert_eq!(value_at(&f.store, &format!("/x-{i}/b-1")), None, "{name}");
    }
}

/// A write whose every attempt is held by the network past its timeout, then delivered: reading
/// right after the retries finds nothing, so the write is `OutcomeUnknown`, not failed. The
/// held attempts land later; the first commits and the others fail their conditions, so the
/// write is in the feed exactly once.
#[test]
fn a_write_held_past_its_retries_is_outcome_unknown_and_lands_once() {
    // Short retry budgets: no heavy load on moto meanwhile (hot_group.rs).
    let _quiet = crate::quiet_moto();
    let budget = RetryBudget {
        max_attempts: 3,
        ..test_budget()
    };
    let Some(f) = faulty(budget) else {
        return;
    };
    let hold = Duration::from_millis(2000);
    let group = path("/held-1");
    let since = f.store.changes_token(&group).expect("token");
    f.proxy
        .fail_next("TransactWriteItems", 1000, Fault::HeldRequest(hold));
    let started = Instant::now();
    let error = f
        .store
        .put(
            &path("/held-1/a-1"),
            json(r#"{"held":1}"#),
            PutOptions::default(),
        )
        .expect_err("no answer came");
    let gave_up = started.elapsed();
    f.proxy.clear();
    assert_eq!(
        storage_kind(&error),
        Some(StorageErrorKind::OutcomeUnknown),
        "{error}"
    );
    assert!(
        gave_up < hold,
        "settled before the held attempts land: {gave_up:?}"
    );
    // Every held attempt has reached moto by then.
    std::thread::sleep(
        (hold + gave_up + Duration::from_millis(500)).saturating_sub(started.elapsed()),
    );
    assert_eq!(
        value_at(&f.store, "/held-1/a-1").as_deref(),
        Some(r#"{"held":1}"#)
    );
    assert_eq!(feed(&f.store, &group, &since).len(), 1, "exactly once");
}

/// What happened to one write of the workload.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Outcome {
    Acknowledged,
    Failed,
    Unknown,
}

/// One write of the workload: the paths it writes, all with `value`.
struct Written {
    paths: Vec<String>,
    value: String,
    outcome: Outcome,
}

/// Writers doing puts (new items, and overwrites of one item each) and two-group transactions
/// while the proxy injects every fault kind at random. Afterwards, with the faults off: every
/// acknowledged write reads back and is in the feed exactly once; no failed write is visible;
/// a write of unknown outcome is there at most once, never in part; versions of the overwritten
/// items never repeat or skip.
#[test]
fn random_faults_lose_nothing_and_duplicate_nothing() {
    // Short retry budgets: no heavy load on moto meanwhile (hot_group.rs).
    let _quiet = crate::quiet_moto();
    const WRITERS: usize = 4;
    const OPS: usize = 15;
    const GROUPS: usize = 3;
    let Some(f) = faulty(test_budget()) else {
        return;
    };
    let seed = std::env::var("PATHDB_FAULT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(22);
    let groups: Vec<KeyPath> = (0..GROUPS).map(|g| path(&format!("/w-{g}"))).collect();
    let tokens: Vec<ChangeToken> = groups
        .iter()
        .map(|g| f.store.changes_token(g).expect("token"))
        .collect();
    let mut faults = every_fault().to_vec();
    faults.push(Fault::HeldRequest(SLOW));
    // A high rate, so that some writes run out of attempts: failures and unknown outcomes are
    // part of what is checked.
    f.proxy.fail_randomly(seed, 0.3, &faults, None);
    let started = Instant::now();

    let written: Vec<Written> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..WRITERS)
            .map(|w| {
                let store = &f.store;
                scope.spawn(move || {
                    let mut out = Vec::new();
                    for i in 0..OPS {
                        let id = w * 1000 + i;
                        let value = format!(r#"{{"w":{w},"i":{i}}}"#);
                        let (paths, result) = match i % 3 {
                            // A new item.
                            0 => {
                                let at = format!("/w-{}/p-{id}", (w + i) % GROUPS);
                                let r = store.put(&path(&at), json(&value), PutOptions::default());
                                (vec![at], r.map(|_| ()))
                            }
                            // The writer's own item, again: versions must advance by one.
                            1 => {
                                let at = format!("/w-{}/latest-{w}", w % GROUPS);
                                let r = store.put(&path(&at), json(&value), PutOptions::default());
                                (vec![at], r.map(|_| ()))
                            }
                            // Two new items in two groups, atomically.
                            _ => {
                                let a = format!("/w-{}/t-{id}", (w + i) % GROUPS);
                                let b = format!("/w-{}/t-{id}", (w + i + 1) % GROUPS);
                                let tx = Transaction::new()
                                    .put(path(&a), json(&value), PutOptions::default())
                                    .put(path(&b), json(&value), PutOptions::default());
                                (vec![a, b], store.transact(tx).map(|_| ()))
                            }
                        };
                        let outcome = match &result {
                            Ok(()) => Outcome::Acknowledged,
                            Err(e) if storage_kind(e) == Some(StorageErrorKind::OutcomeUnknown) => {
                                Outcome::Unknown
                            }
                            Err(_) => Outcome::Failed,
                        };
                        out.push(Written {
                            paths,
                            value,
                            outcome,
                        });
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("writer finishes"))
            .collect()
    });
    let elapsed = started.elapsed();
    f.proxy.clear();
    let injected = f.proxy.injected();
    // Held requests still on their way reach moto within SLOW.
    std::thread::sleep(SLOW + Duration::from_millis(300));

    // (path, value) -> times in the feed; path -> versions in feed order.
    let mut in_feed: HashMap<(String, String), usize> = HashMap::new();
    let mut versions: HashMap<String, Vec<u64>> = HashMap::new();
    for (group, since) in groups.iter().zip(&tokens) {
        for (at, version, value) in feed(&f.store, group, since) {
            *in_feed.entry((at.clone(), value)).or_default() += 1;
            versions.entry(at).or_default().push(version);
        }
    }
    let (mut acknowledged, mut failed, mut unknown, mut unknown_landed) = (0, 0, 0, 0);
    let (mut lost, mut phantom, mut partial, mut duplicated) = (0, 0, 0, 0);
    for write in &written {
        let counts: Vec<usize> = write
            .paths
            .iter()
            .map(|at| {
                in_feed
                    .get(&(at.clone(), write.value.clone()))
                    .copied()
                    .unwrap_or(0)
            })
            .collect();
        if counts.iter().any(|&n| n > 1) {
            duplicated += 1;
        }
        if counts.iter().any(|&n| n != counts[0]) {
            partial += 1;
        }
        match write.outcome {
            Outcome::Acknowledged => {
                acknowledged += 1;
                if counts.contains(&0) {
                    lost += 1;
                }
            }
            Outcome::Failed => {
                failed += 1;
                if counts.iter().any(|&n| n > 0) {
                    phantom += 1;
                }
            }
            Outcome::Unknown => {
                unknown += 1;
                if counts[0] > 0 {
                    unknown_landed += 1;
                }
            }
        }
        // New items are written once: what the feed says is what a read finds.
        if !write.paths[0].contains("/latest-") {
            for (at, &n) in write.paths.iter().zip(&counts) {
                let found = value_at(&f.store, at);
                if n == 1 && found.as_ref() != Some(&write.value) {
                    lost += 1;
                }
                if n == 0 && found.is_some() {
                    // Visible without its change in the feed.
                    lost += 1;
                }
            }
        }
    }
    // The overwritten items: versions 1, 2, 3, ... in the feed, and a read finds the last.
    for w in 0..WRITERS {
        let at = format!("/w-{}/latest-{w}", w % GROUPS);
        let seen = versions.get(&at).cloned().unwrap_or_default();
        let expected: Vec<u64> = (1..=seen.len() as u64).collect();
        assert_eq!(seen, expected, "{at}: versions never repeat or skip");
    }
    eprintln!(
        "fault workload (seed {seed}, {WRITERS} writers, {} writes in {:.1} s; faults injected: {} of {} requests, {:?}): acknowledged {acknowledged}, failed {failed}, unknown {unknown} (landed {unknown_landed}), lost {lost}, phantom {phantom}, partial {partial}, duplicated {duplicated}; backend: {} retries, {} lost answers settled by reading",
        written.len(),
        elapsed.as_secs_f64(),
        injected.total_faults(),
        injected.total_faults() + injected.clean,
        injected.faults,
        f.metrics.counts().retries,
        f.metrics.counts().settled,
    );
    assert_eq!(
        (lost, phantom, partial, duplicated),
        (0, 0, 0, 0),
        "lost, phantom, partial, duplicated"
    );
    assert!(acknowledged > written.len() / 2, "most writes get through");
    assert!(injected.total_faults() > 0);
}

/// Puts in a group without a change log, planned on what the store knows (one `PutItem`
/// each, no read first), while the proxy injects every fault kind: each writer overwrites its
/// own item and creates new ones. A put answered "committed" took exactly the version after
/// the last one it saw; none is applied twice (a version never skips past what the writes
/// explain), and every acknowledged new item reads back.
#[test]
fn lost_answers_without_a_change_log_are_never_applied_twice() {
    let _quiet = crate::quiet_moto();
    const WRITERS: usize = 3;
    const OPS: usize = 16;
    let Some(f) = faulty(test_budget()) else {
        return;
    };
    let quiet = pathdb_store::Definition {
        changes: Some(false),
        ..pathdb_store::Definition::default()
    };
    f.store
        .define_namespace("quiet", quiet, None)
        .expect("defined");
    f.proxy.fail_randomly(23, 0.3, &every_fault(), None);
    type Report = (usize, usize, usize, Vec<u64>, Vec<String>);
    let results: Vec<Report> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..WRITERS)
            .map(|w| {
                let store = &f.store;
                scope.spawn(move || {
                    let own = path(&format!("/quiet-1/own-{w}"));
                    let (mut applied_at_most, mut unknown, mut failed) = (0, 0, 0);
                    let (mut versions, mut created) = (Vec::new(), Vec::new());
                    for i in 0..OPS {
                        let value = json(&format!(r#"{{"w":{w},"i":{i}}}"#));
                        let at = if i % 2 == 0 {
                            own.clone()
                        } else {
                            path(&format!("/quiet-1/new-{w}-{i}"))
                        };
                        match store.put(&at, value, PutOptions::default()) {
                            Ok(item) => {
                                if at == own {
                                    applied_at_most += 1;
                                    versions.push(item.version);
                                } else {
                                    created.push(at.to_string());
                                }
                            }
                            Err(e)
                                if storage_kind(&e) == Some(StorageErrorKind::OutcomeUnknown) =>
                            {
                                if at == own {
                                    applied_at_most += 1;
                                }
                                unknown += 1;
                            }
                            Err(_) => failed += 1,
                        }
                    }
                    (applied_at_most, unknown, failed, versions, created)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("writer finishes"))
            .collect()
    });
    f.proxy.clear();
    std::thread::sleep(SLOW + Duration::from_millis(300));
    for (w, (applied_at_most, unknown, failed, versions, _)) in results.iter().enumerate() {
        // Acknowledged puts of the writer's own item took increasing versions, and the item's
        // version now counts no more puts than were acknowledged or left unknown.
        assert!(
            versions.windows(2).all(|v| v[0] < v[1]),
            "writer {w}: {versions:?}"
        );
        let now = f
            .store
            .get(&path(&format!("/quiet-1/own-{w}")))
            .expect("read")
            .map_or(0, |item| item.version);
        assert!(
            now >= versions.last().copied().unwrap_or(0) && now <= *applied_at_most as u64,
            "writer {w}: version {now}, acknowledged {versions:?}, at most {applied_at_most} applied"
        );
        eprintln!(
            "writer {w}: own item at version {now}, acknowledged versions {versions:?}, {unknown} unknown, {failed} failed"
        );
    }
    // Every acknowledged new item is there, with its value.
    for (w, (.., created)) in results.iter().enumerate() {
        for at in created {
            let i = at.rsplit('-').next().unwrap_or_default();
            assert_eq!(
                value_at(&f.store, at),
                Some(format!(r#"{{"w":{w},"i":{i}}}"#)),
                "{at}"
            );
        }
    }
    let injected = f.proxy.injected();
    let settled = f.metrics.counts().settled;
    eprintln!(
        "faults injected: {} ({:?}); lost answers settled by reading: {settled}",
        injected.total_faults(),
        injected.faults
    );
    assert!(injected.total_faults() > 0);
    assert!(
        settled > 0,
        "some answers were lost, and settled by reading the item"
    );
}

/// The shared fault-injection run (`pathdb_conformance::fault_injection`, the one memory and
/// file pass in pathdb-store's tests/faults.rs) on DynamoDB: `Faulty` refuses writes before they
/// reach the backend, loses the answers of writes that committed, and fails reads; the run
/// panics on a lost acknowledged write, a visible refused write, a half-applied transaction or
/// a feed that is not exact. Smaller than the default workload (moto serves one request at a
/// time), still with refused writes and lost answers.
#[test]
fn conformance_fault_injection_on_moto() {
    // Short retry budgets: no heavy load on moto meanwhile (hot_group.rs).
    let _quiet = crate::quiet_moto();
    let Some((url, _)) = endpoint() else {
        return;
    };
    let backend = Dynamo::new(url).backend();
    let report = fault_injection(backend, conformance_workload());
    eprintln!("dynamodb (moto): {report}");
    assert_conformance_report(&report);
}

/// The same run with the DynamoDB backend behind the fault proxy: besides `Faulty`'s faults,
/// one request in ten meets a network fault of any kind (throttling, 500, a slow answer, a held
/// request, a reset before or after forwarding), which the backend retries, settles by reading,
/// or reports as `Unavailable` / `OutcomeUnknown`. The run's checks are the same.
#[test]
fn conformance_fault_injection_through_the_fault_proxy() {
    // Short retry budgets: no heavy load on moto meanwhile (hot_group.rs).
    let _quiet = crate::quiet_moto();
    let Some((url, _)) = endpoint() else {
        return;
    };
    let table = Dynamo::new(url.clone()).backend().table_name().to_owned();
    let proxy = FaultProxy::start(&url);
    let budget = RetryBudget {
        // Six attempts: the reads that check the run afterwards (the faults go on) all but
        // never exhaust them at this rate.
        max_attempts: 6,
        ..test_budget()
    };
    let backend = DynamoBackend::connect(&DynamoOptions {
        table,
        endpoint: Some(proxy.endpoint()),
        region: Some("us-east-1".into()),
        retry: budget,
    })
    .expect("connects through the proxy");
    let metrics = backend.metrics();
    let faults = [
        Fault::Throttling,
        Fault::ProvisionedThroughputExceeded,
        Fault::InternalError,
        Fault::SlowAnswer(SLOW),
        Fault::HeldRequest(SLOW),
        Fault::ResetBeforeForward,
        Fault::ResetAfterForward,
    ];
    proxy.fail_randomly(22, 0.1, &faults, None);
    let report = fault_injection(backend, conformance_workload());
    proxy.clear();
    let injected = proxy.injected();
    let counts = metrics.counts();
    eprintln!(
        "dynamodb (moto, through the fault proxy): {report}; network faults: {} of {} requests \
         {:?}; backend: {} retries, {} lost answers settled by reading",
        injected.total_faults(),
        injected.total_faults() + injected.clean,
        injected.faults,
        counts.retries,
        counts.settled,
    );
    assert_conformance_report(&report);
    assert!(injected.total_faults() > 0, "{injected:?}");
}

fn conformance_workload() -> FaultWorkload {
    FaultWorkload {
        writers: 4,
        ops: 25,
        ..FaultWorkload::default()
    }
}

fn assert_conformance_report(report: &FaultReport) {
    assert_eq!((report.lost, report.partial), (0, 0), "{report}");
    assert!(
        report.injected.refused_writes > 0 && report.injected.lost_answers > 0,
        "{report}"
    );
    assert!(
        report.acknowledged > 0 && report.failed > 0 && report.unknown > 0,
        "{report}"
    );
}

/// An endpoint that answers `TransactWriteItems` with `UnknownOperationException` (what dynalite
/// does; here the proxy says it in front of moto, so that CI needs no dynalite) is refused when
/// the backend connects, with a message that names the operation.
#[test]
fn an_endpoint_without_transact_write_items_is_refused() {
    // Short retry budgets: no heavy load on moto meanwhile (hot_group.rs).
    let _quiet = crate::quiet_moto();
    let Some((url, _)) = endpoint() else {
        return;
    };
    // Placeholder credentials, as every test here has.
    Dynamo::new(url.clone());
    let proxy = FaultProxy::start(&url);
    proxy.fail_next("TransactWriteItems", 1000, Fault::UnknownOperation);
    let refused = DynamoBackend::connect(&DynamoOptions {
        table: "pathdb-probe".into(),
        endpoint: Some(proxy.endpoint()),
        region: Some("us-east-1".into()),
        retry: test_budget(),
    });
    let Err(error) = refused else {
        panic!("an endpoint without TransactWriteItems was accepted")
    };
    let text = error.to_string();
    assert!(
        text.contains("does not implement TransactWriteItems"),
        "{text}"
    );
    assert_eq!(
        proxy.injected().faults.get("unknown_operation"),
        Some(&1),
        "asked once"
    );
}

/// The same against dynalite itself, when `PATHDB_DYNALITE_ENDPOINT` names one
/// (scripts/test.sh starts it; `scripts/dynamodb-local.sh start dynalite` prints its port).
#[test]
fn dynalite_is_refused_naming_transact_write_items() {
    // Short retry budgets: no heavy load on moto meanwhile (hot_group.rs).
    let _quiet = crate::quiet_moto();
    let Ok(url) = std::env::var("PATHDB_DYNALITE_ENDPOINT") else {
        eprintln!("skipped: PATHDB_DYNALITE_ENDPOINT is not set");
        return;
    };
    Dynamo::new(url.clone());
    let refused = DynamoBackend::connect(&DynamoOptions {
        table: "pathdb-probe".into(),
        endpoint: Some(url),
        region: Some("us-east-1".into()),
        ..DynamoOptions::default()
    });
    let Err(error) = refused else {
        panic!("dynalite was accepted")
    };
    assert!(
        error
            .to_string()
            .contains("does not implement TransactWriteItems"),
        "{error}"
    );
}
