//! Listing checks ([`TxOp::CheckList`](pathdb_store::TxOp::CheckList)) and interactive
//! transactions ([`Store::transaction`]): a decision made on what was read commits only if
//! none of it changed, listings included (docs/transactions.md).

use super::concurrency::race;
use super::{Harness, Rng, open_manual, path, put, value};
use pathdb_keys::KeyPath;
use pathdb_store::backend::Backend;
use pathdb_store::{
    Error, Expiry, Item, Json, ListCheck, ListRequest, MAX_TRANSACTION_ATTEMPTS, Patch, PutOptions,
    Store, Transaction, TxResult,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Longer than the margin a listing token starts back on a backend without snapshots
/// (DynamoDB, docs/changes.md): advanced before a listing, the token is exact there too.
const PAST_THE_MARGIN: Duration = Duration::from_secs(11);

fn no_progress(_: u64) {}

/// The check of `request`'s listing as of now.
fn listed<B: Backend>(store: &Store<B>, request: &ListRequest) -> ListCheck {
    let page = store.list(request).unwrap();
    request.check(
        page.changes_token
            .expect("a first page has a changes token"),
    )
}

/// Commits a transaction of `check` alone.
fn commit<B: Backend>(store: &Store<B>, check: &ListCheck) -> Result<(), Error> {
    store
        .transact(Transaction::new().check_list(check.clone()))
        .map(|results| assert_eq!(results, [TxResult::Checked]))
}

#[track_caller]
fn assert_changed(result: Result<(), Error>, changed: &str) {
    match result {
        Err(Error::ListChanged { index: 0, path, .. }) => assert_eq!(path.to_string(), changed),
        other => panic!("expected the listing check to fail on {changed}, got {other:?}"),
    }
}

/// A listing's check fails on every kind of change in the listing's range after its token (a
/// put, a patch, a delete, an expiry, a move or copy into it, a move out of it, a change below
/// an item), and on none outside it: another namespace of the group, outside its bounds, another
/// group. A transaction's own writes in the range do not fail its check. A failed check writes
/// nothing and names its operation's index.
pub fn list_checks_are_exact<H: Harness>(harness: &H) {
    let (clock, store) = open_manual(harness);
    let store: &Store<H::Backend> = &store;
    for text in [
        "/user-1/order-1",
        "/user-1/order-2",
        "/user-1/order-1/line-1",
        "/user-1/profile-1",
        "/user-1/draft-1",
        "/user-1/draft-2",
        "/user-2/order-1",
    ] {
        put(store, text, 1);
    }
    let orders = ListRequest::new(path("/user-1/order"));
    clock.advance(PAST_THE_MARGIN);

    // Outside the range: the check holds.
    let check = listed(store, &orders);
    put(store, "/user-1/profile-1", 2);
    put(store, "/user-1/orderly-1", 2);
    put(store, "/user-2/order-1", 2);
    commit(store, &check).expect("changes outside the range");
    // The transaction's own write in the range is not a change after the listing; a later
    // check of the same listing sees it.
    let results = store
        .transact(
            Transaction::new()
                .put(path("/user-1/order-9"), value(9), PutOptions::default())
                .check_list(check.clone()),
        )
        .expect("the transaction's own write");
    assert_eq!(results.len(), 2);
    assert_changed(commit(store, &check), "/user-1/order-9");
    // A failed check names its index and writes nothing.
    let failed = store.transact(
        Transaction::new()
            .put(path("/user-3/x-1"), value(1), PutOptions::default())
            .check_list(check.clone()),
    );
    match failed {
        Err(Error::ListChanged { index: 1, .. }) => {}
        other => panic!("expected the check at index 1 to fail, got {other:?}"),
    }
    assert_eq!(store.get(&path("/user-3/x-1")).unwrap(), None);

    // Every kind of change in the range fails the check.
    let patch = Patch::Merge(serde_json::json!({"m": 1}));
    let expiring = PutOptions {
        expires: Some(Expiry::After(Duration::from_secs(20))),
        ..PutOptions::default()
    };
    store
        .put(&path("/user-1/order-5"), value(5), expiring)
        .unwrap();
    type Change<'a, B> = (&'a str, Box<dyn Fn(&Store<B>) + 'a>);
    let changes: Vec<Change<'_, H::Backend>> = vec![
        (
            "/user-1/order-1",
            Box::new(|s| drop(put(s, "/user-1/order-1", 3))),
        ),
        (
            "/user-1/order-2",
            Box::new(|s| {
                s.patch(
                    &path("/user-1/order-2"),
                    patch.clone(),
                    PutOptions::default(),
                    false,
                )
                .unwrap();
            }),
        ),
        (
            "/user-1/order-9",
            Box::new(|s| drop(s.delete(&path("/user-1/order-9"), None).unwrap())),
        ),
        (
            "/user-1/order-1/line-2",
            Box::new(|s| drop(put(s, "/user-1/order-1/line-2", 1))),
        ),
        (
            "/user-1/order-5",
            Box::new(|s| {
                clock.advance(Duration::from_secs(10));
                assert_eq!(s.sweep_expired().unwrap(), 1);
            }),
        ),
        (
            "/user-1/order-7",
            Box::new(|s| {
                s.move_subtree(
                    &path("/user-1/draft-1"),
                    &path("/user-1/order-7"),
                    &mut no_progress,
                )
                .unwrap();
            }),
        ),
        (
            "/user-1/order-8",
            Box::new(|s| {
                s.copy_subtree(
                    &path("/user-1/draft-2"),
                    &path("/user-1/order-8"),
                    &mut no_progress,
                )
                .unwrap();
            }),
        ),
        (
            "/user-1/order-2",
            Box::new(|s| {
                s.move_subtree(
                    &path("/user-1/order-2"),
                    &path("/user-1/archive-2"),
                    &mut no_progress,
                )
                .unwrap();
            }),
        ),
    ];
    for (changed, change) in changes {
        clock.advance(PAST_THE_MARGIN);
        let check = listed(store, &orders);
        change(store);
        assert_changed(commit(store, &check), changed);
    }

    // Bounds: only changes within them count; a children listing counts changes below its
    // children.
    let bounded = ListRequest {
        gte: Some(path("/user-1/order-3")),
        lt: Some(path("/user-1/order-8")),
        ..ListRequest::new(path("/user-1/order"))
    };
    let children = ListRequest {
        children_only: true,
        lt: Some(path("/user-1/order-3")),
        ..ListRequest::new(path("/user-1/order"))
    };
    clock.advance(PAST_THE_MARGIN);
    let (bounded_check, children_check) = (listed(store, &bounded), listed(store, &children));
    put(store, "/user-1/order-8", 4);
    put(store, "/user-1/order-20/line-1", 4);
    commit(store, &bounded_check).expect("changes outside the bounds");
    commit(store, &children_check).expect("changes below children outside the bounds");
    put(store, "/user-1/order-4", 4);
    assert_changed(commit(store, &bounded_check), "/user-1/order-4");
    put(store, "/user-1/order-1/line-3", 4);
    assert_changed(commit(store, &children_check), "/user-1/order-1/line-3");

    // A token is a position in its own group's feed only.
    let mut elsewhere = listed(store, &orders);
    elsewhere.range.prefix = path("/user-2/order");
    match commit(store, &elsewhere) {
        Err(Error::InvalidChangeToken(_)) => {}
        other => panic!("a token of another group must be refused, got {other:?}"),
    }
}

fn n(item: &Option<Item>) -> i64 {
    item.as_ref()
        .and_then(|i| i.value.to_value()["n"].as_i64())
        .unwrap_or(0)
}

/// [`Store::transaction`]: reads see the transaction's own writes, an error from the closure
/// writes nothing, a change to what it read (an item, an item's absence, a listing's range)
/// runs it again and the result rests on what it read last, a change elsewhere does not, and
/// after [`MAX_TRANSACTION_ATTEMPTS`] runs the failed condition is returned.
pub fn interactive_transactions<H: Harness>(harness: &H) {
    let (clock, store) = open_manual(harness);
    let store: &Store<H::Backend> = &store;
    let (a, b, missing) = (
        path("/acct-1/a-1"),
        path("/acct-1/b-1"),
        path("/acct-1/c-1"),
    );
    put(store, "/acct-1/a-1", 10);
    put(store, "/acct-1/b-1", 20);
    clock.advance(PAST_THE_MARGIN);

    // Reads see the transaction's own writes, listings included.
    let all = ListRequest::new(path("/acct-1"));
    let ((), results) = store
        .transaction_results(|tx| {
            assert_eq!(n(&tx.get(&a)?), 10);
            tx.put(&a, value(11));
            let seen = tx.get(&a)?.expect("its own put");
            assert_eq!((n(&Some(seen.clone())), seen.version), (11, 2));
            tx.delete(&b);
            assert_eq!(tx.get(&b)?, None);
            assert_eq!(
                tx.get_many(&[a.clone(), b.clone(), missing.clone()])?.len(),
                3
            );
            tx.put(&missing, value(30));
            let paths: Vec<String> = tx
                .list(&all)?
                .items
                .iter()
                .map(|e| e.path().to_string())
                .collect();
            assert_eq!(paths, ["/acct-1/a-1", "/acct-1/c-1"]);
            let created = tx.create(
                Some(&path("/acct-1")),
                "log",
                pathdb_store::IdKind::Uuid,
                value(0),
            );
            assert_eq!(created, 0);
            Ok(())
        })
        .unwrap();
    match &results[0] {
        TxResult::Put(item) => assert_eq!(item.path.parent(), Some(path("/acct-1"))),
        other => panic!("the create's result comes first: {other:?}"),
    }
    assert_eq!(n(&store.get(&a).unwrap()), 11);
    assert_eq!(store.get(&b).unwrap(), None);
    assert_eq!(n(&store.get(&missing).unwrap()), 30);

    // An error from the closure writes nothing.
    let refused: Result<(), Error> = store.transaction(|tx| {
        tx.put(&a, value(0));
        Err(Error::InvalidRequest("refused".into()))
    });
    assert!(matches!(refused, Err(Error::InvalidRequest(_))));
    assert_eq!(n(&store.get(&a).unwrap()), 11);

    // A change to an item read, or to an absence read, runs the closure again.
    for (read, other) in [(&a, 100), (&b, 200)] {
        let runs = AtomicUsize::new(0);
        let got = store
            .transaction(|tx| {
                let run = runs.fetch_add(1, Ordering::SeqCst);
                let seen = n(&tx.get(read)?);
                if run == 0 {
                    store.put(read, value(other), PutOptions::default())?;
                }
                tx.put(&missing, value(seen));
                Ok(seen)
            })
            .unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 2, "{read}");
        assert_eq!(got, other, "the second run read the change");
        assert_eq!(n(&store.get(&missing).unwrap()), other);
    }

    // A listing: a change in its range runs the closure again, one outside does not.
    let orders = ListRequest::new(path("/acct-1/order"));
    for (outside, changed, runs_wanted) in [
        ("/acct-1/profile-1", "/acct-1/order-1", 2),
        ("/acct-1/orderly-1", "/acct-1/profile-1", 1),
    ] {
        clock.advance(PAST_THE_MARGIN);
        let runs = AtomicUsize::new(0);
        store
            .transaction(|tx| {
                let run = runs.fetch_add(1, Ordering::SeqCst);
                let count = tx.list(&orders)?.items.len();
                if run == 0 {
                    put(store, outside, 1);
                    put(store, changed, 1);
                }
                tx.put(&path("/acct-1/summary-1"), value(count as i64));
                Ok(())
            })
            .unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), runs_wanted, "{changed}");
    }

    // Runs out of attempts: the failed condition is returned.
    let untouched = path("/acct-1/d-1");
    let runs = AtomicUsize::new(0);
    let result = store.transaction(|tx| {
        runs.fetch_add(1, Ordering::SeqCst);
        let seen = n(&tx.get(&a)?);
        store.put(&a, value(seen + 1), PutOptions::default())?;
        tx.put(&untouched, value(seen));
        Ok(())
    });
    match result {
        Err(e) if e.is_condition_failed() => {}
        other => panic!("expected a failed condition, got {other:?}"),
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        MAX_TRANSACTION_ATTEMPTS as usize
    );
    assert_eq!(store.get(&untouched).unwrap(), None, "no run wrote");
}

fn balance(value: &Json) -> i64 {
    value.to_value()["n"].as_i64().unwrap_or(i64::MIN)
}

/// Interactive transactions under 8 concurrent clients (docs/transactions.md):
/// transfers between accounts of several groups keep the total and never overdraw, and commit
/// exactly the feed's writes; two doctors on call are never both taken off (write skew); orders
/// added only while a listing shows fewer than 3 never exceed 3 (phantoms).
pub fn interactive_transactions_under_contention<H: Harness>(harness: &H) {
    let (_clock, store) = open_manual(harness);
    let store: &Store<H::Backend> = &store;
    const GROUPS: usize = 2;
    const PER_GROUP: usize = 5;
    const TRANSFERS: usize = 8;
    let account = |i: usize| path(&format!("/bank-{}/account-{}", i % GROUPS, i / GROUPS));
    let accounts: Vec<KeyPath> = (0..GROUPS * PER_GROUP).map(account).collect();
    for a in &accounts {
        store.put(a, value(100), PutOptions::default()).unwrap();
    }
    let tokens: Vec<_> = (0..GROUPS)
        .map(|g| store.changes_token(&path(&format!("/bank-{g}"))).unwrap())
        .collect();
    let committed = race(|client| {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (client as u64 + 1));
        let mut moved = 0;
        for _ in 0..TRANSFERS {
            let from = &accounts[rng.next() as usize % accounts.len()];
            let to = &accounts[rng.next() as usize % accounts.len()];
            let amount = (rng.next() % 60) as i64 + 1;
            if from == to {
                continue;
            }
            let done = store.transaction(|tx| {
                let (have, other) = (tx.get(from)?, tx.get(to)?);
                let (have, other) = (
                    balance(&have.unwrap().value),
                    balance(&other.unwrap().value),
                );
                if have < amount {
                    return Ok(false);
                }
                tx.put(from, value(have - amount));
                tx.put(to, value(other + amount));
                Ok(true)
            });
            match done {
                Ok(true) => moved += 1,
                Ok(false) => {}
                // Gave up after its attempts: wrote nothing, which the audit checks.
                Err(e) if e.is_condition_failed() => {}
                Err(e) => panic!("transfer failed: {e}"),
            }
        }
        moved
    });
    let committed: usize = committed.iter().sum();
    let balances: Vec<i64> = store
        .get_many(&accounts)
        .unwrap()
        .iter()
        .map(|i| balance(&i.value))
        .collect();
    assert_eq!(balances.iter().sum::<i64>(), 100 * accounts.len() as i64);
    assert!(balances.iter().all(|&b| b >= 0), "{balances:?}");
    assert!(committed > 0, "no transfer committed");
    let mut puts = 0;
    for (g, token) in tokens.iter().enumerate() {
        let page = store
            .changes(&path(&format!("/bank-{g}")), Some(token), 1000)
            .unwrap();
        puts += page
            .changes
            .iter()
            .filter(|c| matches!(c.change, pathdb_store::Change::Put(_)))
            .count();
    }
    assert_eq!(puts, committed * 2, "each transfer writes two accounts");

    // Write skew: each client takes one doctor off call if the other is still on.
    let doctors = [path("/hospital-1/doctor-1"), path("/hospital-1/doctor-2")];
    let on_call = |item: &Option<Item>| {
        item.as_ref()
            .is_some_and(|i| i.value.to_value()["on_call"] == serde_json::json!(true))
    };
    let off = Json::parse(r#"{"on_call": false}"#).unwrap();
    for round in 0..6 {
        for d in &doctors {
            store
                .put(
                    d,
                    Json::parse(r#"{"on_call": true}"#).unwrap(),
                    PutOptions::default(),
                )
                .unwrap();
        }
        race(|client| {
            let (me, other) = (&doctors[client % 2], &doctors[1 - client % 2]);
            let result = store.transaction(|tx| {
                if on_call(&tx.get(me)?) && on_call(&tx.get(other)?) {
                    tx.put(me, off.clone());
                }
                Ok(())
            });
            if let Err(e) = result
                && !e.is_condition_failed()
            {
                panic!("round {round}: {e}");
            }
        });
        let on = store
            .get_many(&doctors)
            .unwrap()
            .into_iter()
            .filter(|d| on_call(&Some(d.clone())))
            .count();
        assert_eq!(on, 1, "round {round}: exactly one doctor stays on call");
    }

    // Phantoms: each client adds an order while the listing shows fewer than 3.
    let orders = ListRequest::new(path("/user-1/order"));
    for round in 0..6 {
        match store.delete_subtree(&path("/user-1"), &mut no_progress) {
            Ok(_) | Err(Error::NothingBelow { .. }) => {}
            Err(e) => panic!("clear the orders: {e}"),
        }
        race(|client| {
            let result = store.transaction(|tx| {
                if tx.list(&orders)?.items.len() < 3 {
                    tx.put(&path(&format!("/user-1/order-{client}")), value(round));
                }
                Ok(())
            });
            if let Err(e) = result
                && !e.is_condition_failed()
            {
                panic!("round {round}: {e}");
            }
        });
        let count = store.list(&orders).unwrap().items.len();
        assert!(
            (1..=3).contains(&count),
            "round {round}: {count} orders, the listing allowed at most 3"
        );
    }
}
