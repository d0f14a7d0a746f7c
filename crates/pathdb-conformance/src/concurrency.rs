//! Conditions and transactions under concurrent writers. Outcomes are checked, never timings.

use super::{Harness, open_manual, path, value};
use pathdb_keys::KeyPath;
use pathdb_store::backend::Backend;
use pathdb_store::{Condition, Error, Item, PutOptions, Store, Transaction, TxResult};
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

pub(crate) const WRITERS: usize = 8;

fn must_not_exist() -> PutOptions {
    PutOptions {
        condition: Some(Condition::MustNotExist),
        ..PutOptions::default()
    }
}

fn number(item: &Item) -> i64 {
    item.value.to_value()["n"]
        .as_i64()
        .unwrap_or_else(|| panic!("{} holds no number: {}", item.path, item.value))
}

/// Runs `work(writer)` on [`WRITERS`] threads released together; returns their results.
pub(crate) fn race<T: Send>(work: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let barrier = Barrier::new(WRITERS);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..WRITERS)
            .map(|writer| {
                let (barrier, work) = (&barrier, &work);
                s.spawn(move || {
                    barrier.wait();
                    work(writer)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("writer panicked"))
            .collect()
    })
}

/// Of N writers racing `must_not_exist` puts on one path, exactly one wins and the others get
/// [`Error::ConditionFailed`] naming version 1; the same for transactions that create the path
/// and another item of their own, where a loser's own item is not written either.
pub fn racing_must_not_exist<H: Harness>(harness: &H) {
    let (_clock, store) = open_manual(harness);
    let store: &Store<H::Backend> = &store;
    for round in 0..10 {
        let contested = path(&format!("/race-1/r-{round}"));
        let outcomes = race(|writer| store.put(&contested, value(writer as i64), must_not_exist()));
        let winners: Vec<usize> = (0..WRITERS).filter(|&w| outcomes[w].is_ok()).collect();
        assert_eq!(winners.len(), 1, "round {round}: {outcomes:?}");
        let winner = winners[0];
        for (writer, outcome) in outcomes.iter().enumerate() {
            match outcome {
                Ok(item) => {
                    assert_eq!(item.version, 1);
                    assert_eq!(store.get(&contested).unwrap().as_ref(), Some(item));
                }
                Err(Error::ConditionFailed {
                    path: p,
                    condition: Condition::MustNotExist,
                    current: Some(1),
                }) if *p == contested => {}
                Err(e) => panic!("writer {writer} lost with {e:?}, not ConditionFailed"),
            }
        }
        assert_eq!(
            store.get(&contested).unwrap().unwrap().value,
            value(winner as i64)
        );
    }
    for round in 0..10 {
        let contested = path(&format!("/race-2/r-{round}"));
        let own = |writer: usize| path(&format!("/race-2/r-{round}/w-{writer}"));
        let outcomes = race(|writer| {
            loop {
                let tx = Transaction::new()
                    .put(contested.clone(), value(writer as i64), must_not_exist())
                    .put(own(writer), value(writer as i64), PutOptions::default());
                match store.transact(tx) {
                    // A conflict is retryable: the retry sees the winner and fails its condition.
                    Err(e) if e.is_retryable() => continue,
                    other => break other,
                }
            }
        });
        let winners: Vec<usize> = (0..WRITERS).filter(|&w| outcomes[w].is_ok()).collect();
        assert_eq!(winners.len(), 1, "round {round}: {outcomes:?}");
        for (writer, outcome) in outcomes.iter().enumerate() {
            let own_item = store.get(&own(writer)).unwrap();
            match outcome {
                Ok(_) => assert_eq!(own_item.unwrap().value, value(writer as i64)),
                Err(Error::ConditionFailed {
                    current: Some(1), ..
                }) => {
                    assert_eq!(own_item, None, "a failed transaction wrote its other item");
                }
                Err(e) => panic!("writer {writer} lost with {e:?}"),
            }
        }
    }
}

/// N writers increment one counter with read, then `if_version` put, retrying on
/// [`Error::ConditionFailed`]: no increment is lost and every success has its own version.
pub fn racing_if_version_counter<H: Harness>(harness: &H) {
    let (_clock, store) = open_manual(harness);
    let store: &Store<H::Backend> = &store;
    let counter = path("/count-1");
    store
        .put(&counter, value(0), PutOptions::default())
        .unwrap();
    const INCREMENTS: usize = 12;
    let versions = race(|_| {
        let mut mine = Vec::new();
        for _ in 0..INCREMENTS {
            loop {
                let current = store.get(&counter).unwrap().unwrap();
                let options = PutOptions {
                    condition: Some(Condition::IfVersion(current.version)),
                    ..PutOptions::default()
                };
                match store.put(&counter, value(number(&current) + 1), options) {
                    Ok(item) => {
                        assert_eq!(item.version, current.version + 1);
                        mine.push(item.version);
                        break;
                    }
                    Err(Error::ConditionFailed { .. }) => continue,
                    Err(e) => panic!("increment failed: {e:?}"),
                }
            }
        }
        mine
    });
    let mut all: Vec<u64> = versions.into_iter().flatten().collect();
    all.sort_unstable();
    let total = (WRITERS * INCREMENTS) as u64;
    assert_eq!(all, (2..=total + 1).collect::<Vec<u64>>());
    let last = store.get(&counter).unwrap().unwrap();
    assert_eq!((number(&last), last.version), (total as i64, total + 1));
}

/// N writers put to one path with no condition: every put succeeds (a put without a condition
/// never fails because of concurrency), each gets its own version, and the item ends at the
/// last version with that put's value.
pub fn racing_unconditional_puts<H: Harness>(harness: &H) {
    let (_clock, store) = open_manual(harness);
    let store: &Store<H::Backend> = &store;
    let contested = path("/blind-1");
    const PUTS: usize = 12;
    let items = race(|writer| {
        (0..PUTS)
            .map(|i| {
                let n = (writer * PUTS + i) as i64;
                store
                    .put(&contested, value(n), PutOptions::default())
                    .unwrap_or_else(|e| panic!("unconditional put failed: {e:?}"))
            })
            .collect::<Vec<Item>>()
    });
    let mut all: Vec<Item> = items.into_iter().flatten().collect();
    all.sort_by_key(|i| i.version);
    let total = (WRITERS * PUTS) as u64;
    assert_eq!(
        all.iter().map(|i| i.version).collect::<Vec<_>>(),
        (1..=total).collect::<Vec<u64>>()
    );
    assert_eq!(store.get(&contested).unwrap().as_ref(), all.last());
}

/// Unconditional puts awaited the way the HTTP server awaits them ([`Store::put_created_queued`]),
/// from N writers on two paths, half of them through [`Store::put`] meanwhile: each put gets
/// its own version, and the items end at the last. A backend that commits in groups may take a
/// queued put's expectation as holding when nothing wrote its key since the snapshot it was
/// planned on (backend/file.rs): with checkpoints changing that snapshot under the writers, a
/// version given twice would show here.
pub fn racing_queued_puts<H: Harness>(harness: &H) {
    let (_clock, store) = open_manual(harness);
    let store: &Store<H::Backend> = &store;
    let contested = [path("/queued-1"), path("/queued-1/q-1")];
    const PUTS: usize = 40;
    let items = race(|writer| {
        (0..PUTS)
            .map(|i| {
                let n = (writer * PUTS + i) as i64;
                let at = &contested[(writer + i) % 2];
                let put = if writer % 2 == 0 {
                    crate::block_on(store.put_created_queued(at, value(n), PutOptions::default()))
                        .map(|(item, _)| item)
                } else {
                    store.put(at, value(n), PutOptions::default())
                };
                put.unwrap_or_else(|e| panic!("unconditional put failed: {e:?}"))
            })
            .collect::<Vec<Item>>()
    });
    let all: Vec<Item> = items.into_iter().flatten().collect();
    for at in &contested {
        let mut versions: Vec<u64> = all
            .iter()
            .filter(|i| &i.path == at)
            .map(|i| i.version)
            .collect();
        versions.sort_unstable();
        let total = versions.len() as u64;
        assert_eq!(versions, (1..=total).collect::<Vec<u64>>(), "{at}");
        let last = store.get(at).unwrap().expect("the item");
        assert_eq!(last.version, total, "{at}");
        assert!(all.contains(&last), "{at}: {last:?} is no put's answer");
    }
}

/// Transfers between accounts in transactions conditional on the versions read, retried on
/// conflict or failed condition, while a reader checks that every snapshot (get_many, list)
/// shows the same total: transactions are atomic and reads see one snapshot.
pub fn racing_transfers<H: Harness>(harness: &H) {
    let (_clock, store) = open_manual(harness);
    let store: &Store<H::Backend> = &store;
    const ACCOUNTS: usize = 4;
    const TRANSFERS: usize = 5;
    let accounts: Vec<KeyPath> = (0..ACCOUNTS)
        .map(|a| path(&format!("/bank-1/acct-{a}")))
        .collect();
    for a in &accounts {
        store.put(a, value(100), PutOptions::default()).unwrap();
    }
    let total = 100 * ACCOUNTS as i64;
    let done = AtomicBool::new(false);
    let audits = std::thread::scope(|s| {
        let auditor = s.spawn(|| audit(store, &accounts, total, &done));
        race(|writer| {
            for i in 0..TRANSFERS {
                let from = &accounts[(writer + i) % ACCOUNTS];
                let to = &accounts[(writer + i + 1) % ACCOUNTS];
                transfer(store, from, to, 1 + i as i64);
            }
        });
        done.store(true, Ordering::SeqCst);
        auditor.join().expect("auditor panicked")
    });
    assert!(audits > 0);
    let balances = store.get_many(&accounts).unwrap();
    assert_eq!(balances.iter().map(number).sum::<i64>(), total);
    let writes: u64 = balances.iter().map(|i| i.version - 1).sum();
    assert_eq!(writes, 2 * (WRITERS * TRANSFERS) as u64);
}

fn transfer<B: Backend>(store: &Store<B>, from: &KeyPath, to: &KeyPath, amount: i64) {
    loop {
        let read = store.get_many(&[from.clone(), to.clone()]).unwrap();
        let [a, b] = &read[..] else {
            panic!("accounts vanished")
        };
        let if_version = |item: &Item| PutOptions {
            condition: Some(Condition::IfVersion(item.version)),
            ..PutOptions::default()
        };
        let tx = Transaction::new()
            .put(from.clone(), value(number(a) - amount), if_version(a))
            .put(to.clone(), value(number(b) + amount), if_version(b));
        match store.transact(tx) {
            Ok(results) => {
                assert!(matches!(&results[..], [TxResult::Put(_), TxResult::Put(_)]));
                return;
            }
            Err(Error::ConditionFailed { .. } | Error::Conflict { .. }) => continue,
            Err(e) => panic!("transfer failed: {e:?}"),
        }
    }
}

fn audit<B: Backend>(
    store: &Store<B>,
    accounts: &[KeyPath],
    total: i64,
    done: &AtomicBool,
) -> usize {
    let mut audits = 0;
    loop {
        let finished = done.load(Ordering::SeqCst);
        let balances = store.get_many(accounts).unwrap();
        assert_eq!(balances.iter().map(number).sum::<i64>(), total, "get_many");
        let listed = store
            .list(&pathdb_store::ListRequest::new(path("/bank-1")))
            .unwrap();
        assert_eq!(
            super::items_of(listed.items)
                .iter()
                .map(number)
                .sum::<i64>(),
            total,
            "list"
        );
        audits += 1;
        if finished {
            return audits;
        }
        std::thread::yield_now();
    }
}

/// Of N writers racing deletes and puts that all hold `If-Match` the same version, exactly one
/// wins: a delete is a write (its tombstone takes the next version), so a delete that committed
/// first makes every other writer's condition fail, as a put that committed first does.
pub fn racing_deletes_and_updates<H: Harness>(harness: &H) {
    let (_clock, store) = open_manual(harness);
    let store: &Store<H::Backend> = &store;
    let at_version_1 = || Some(Condition::IfVersion(1));
    for round in 0..10 {
        let contested = path(&format!("/race-5/r-{round}"));
        store
            .put(&contested, value(-1), PutOptions::default())
            .unwrap();
        let outcomes = race(|writer| {
            if writer % 2 == 0 {
                store.delete(&contested, at_version_1()).map(|_| writer)
            } else {
                let options = PutOptions {
                    condition: at_version_1(),
                    ..PutOptions::default()
                };
                store
                    .put(&contested, value(writer as i64), options)
                    .map(|_| writer)
            }
        });
        let winners: Vec<usize> = outcomes
            .iter()
            .filter_map(|o| o.as_ref().ok())
            .copied()
            .collect();
        assert_eq!(winners.len(), 1, "round {round}: {outcomes:?}");
        for outcome in &outcomes {
            assert!(
                matches!(
                    outcome,
                    Ok(_)
                        | Err(Error::ConditionFailed {
                            condition: Condition::IfVersion(1),
                            ..
                        })
                ),
                "round {round}: {outcome:?}"
            );
        }
        let now = store.get(&contested).unwrap();
        match winners[0] {
            w if w % 2 == 0 => assert_eq!(now, None, "round {round}: the delete won"),
            w => assert_eq!(
                now.map(|i| (i.version, i.value)),
                Some((2, value(w as i64))),
                "round {round}: the put won"
            ),
        }
    }
}

/// A get made after a put was acknowledged sees that put (or a later one), whichever thread
/// makes it: half the threads put their own item over and over and publish each acknowledged
/// version; the other half keep reading every item and never find one older than what was
/// published before their read began. (The file backend shares one snapshot between the reads
/// of two commits; it must drop it before a commit's writers are answered.)
pub fn reads_follow_acknowledged_writes<H: Harness>(harness: &H) {
    let (_clock, store) = open_manual(harness);
    let store: &Store<H::Backend> = &store;
    const PUTS: i64 = 25;
    let item = |writer: usize| path(&format!("/seen-1/w-{writer}"));
    let writers: Vec<usize> = (0..WRITERS).step_by(2).collect();
    let acknowledged: Vec<AtomicU64> = (0..WRITERS).map(|_| AtomicU64::new(0)).collect();
    let finished = AtomicUsize::new(0);
    let reads = race(|worker| {
        if worker % 2 == 0 {
            for n in 1..=PUTS {
                let put = store
                    .put(&item(worker), value(n), PutOptions::default())
                    .unwrap();
                acknowledged[worker].store(put.version, Ordering::SeqCst);
                let read = store.get(&item(worker)).unwrap().map(|i| i.version);
                assert_eq!(read, Some(put.version), "writer {worker}, put {n}");
            }
            finished.fetch_add(1, Ordering::SeqCst);
            return 0;
        }
        let mut reads = 0u64;
        while finished.load(Ordering::SeqCst) < writers.len() {
            for &writer in &writers {
                let before = acknowledged[writer].load(Ordering::SeqCst);
                let read = store.get(&item(writer)).unwrap().map_or(0, |i| i.version);
                assert!(
                    read >= before,
                    "reader {worker} saw version {read} of writer {writer}'s item after \
                     version {before} was acknowledged"
                );
                reads += 1;
            }
        }
        reads
    });
    assert!(reads.iter().sum::<u64>() > 0, "the readers read");
    for &writer in &writers {
        let last = store.get(&item(writer)).unwrap().unwrap();
        assert_eq!(number(&last), PUTS);
    }
}
