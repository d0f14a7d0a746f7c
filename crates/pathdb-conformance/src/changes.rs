//! The change feed and generated ids (docs/changes.md): a follower that applies the feed to a
//! listing ends with the final listing; order, resumption, expiry of tokens, restarts; sequences
//! under concurrent creators.

use super::{Harness, Rng, json, manual_options, path, value};
use pathdb_keys::KeyPath;
use pathdb_store::backend::Backend;
use pathdb_store::{
    Change, ChangeToken, Error, Expiry, IdKind, Item, Json, ListRequest, Parent, PutOptions, Store,
    StoreOptions, Transaction, TxResult,
};
use std::collections::{BTreeMap, HashSet};
use std::sync::Barrier;
use std::time::Duration;

/// What a follower holds: path → (version, value text).
type Replica = BTreeMap<KeyPath, (u64, String)>;

/// Lists the subtree of `prefix` in pages of `page`; returns the items and the first page's
/// changes token.
fn listing_in_pages<B: Backend>(
    store: &Store<B>,
    prefix: &KeyPath,
    page: usize,
) -> (Replica, Option<ChangeToken>) {
    let mut request = ListRequest::new(prefix.clone());
    request.limit = page;
    let mut replica = Replica::new();
    let mut token = None;
    loop {
        let page = store.list(&request).expect("list");
        token = token.or(page.changes_token);
        for item in super::items_of(page.items) {
            replica.insert(item.path.clone(), (item.version, item.value.to_string()));
        }
        match page.next_page_token {
            Some(t) => request.page_token = Some(t),
            None => return (replica, token),
        }
    }
}

fn listing<B: Backend>(store: &Store<B>, prefix: &KeyPath) -> (Replica, Option<ChangeToken>) {
    listing_in_pages(store, prefix, 1000)
}

/// Applies a change the way docs/changes.md tells clients to: only if it is not older than what
/// the replica holds (a listing on a backend without snapshots may already show it).
fn apply(replica: &mut Replica, change: &Change) {
    match change {
        Change::Put(item) => {
            if replica
                .get(&item.path)
                .is_none_or(|(v, _)| *v <= item.version)
            {
                replica.insert(item.path.clone(), (item.version, item.value.to_string()));
            }
        }
        Change::Delete { path, version, .. } => {
            if replica.get(path).is_some_and(|(v, _)| v <= version) {
                replica.remove(path);
            }
        }
    }
}

/// Reads the feed to its end from `token`; returns the changes and the final token.
fn drain<B: Backend>(
    store: &Store<B>,
    prefix: &KeyPath,
    mut token: ChangeToken,
    limit: usize,
) -> (Vec<(Change, ChangeToken)>, ChangeToken) {
    let mut all = Vec::new();
    loop {
        let page = store
            .changes(prefix, Some(&token), limit)
            .expect("read changes");
        let done = page.changes.is_empty() && page.next_token == token;
        all.extend(page.changes.into_iter().map(|c| (c.change, c.token)));
        token = page.next_token;
        if done {
            return (all, token);
        }
    }
}

/// The values the feed workloads write: mostly `{"n": n}`, and every JSON value that a
/// serializer might confuse with "no value" (`null`, empty containers, `""`, `0`, `false`).
fn feed_value(n: i64) -> Json {
    match n.rem_euclid(8) {
        0 => json("null"),
        1 => json("[]"),
        2 => json("{}"),
        3 => json(r#""""#),
        4 => json("0"),
        5 => json("false"),
        _ => value(n),
    }
}

fn ttl(seconds: u64) -> PutOptions {
    PutOptions {
        expires: Some(Expiry::After(Duration::from_secs(seconds))),
        ..PutOptions::default()
    }
}

/// For many seeds, writers put (with and without history and TTL), delete and run transactions
/// in one group while the clock moves and expired items are swept; a follower that listed the
/// subtree first and applies the feed (polled in between, with small pages) ends equal to a
/// final listing, for the group and for a prefix inside it. The feed delivers each path's changes
/// in increasing version order.
pub fn change_feed_completeness<H: Harness>(harness: &H) {
    for seed in 1..=12u64 {
        let (clock, store) = {
            let (clock, options) = manual_options();
            (clock, harness.open(options))
        };
        let store: &Store<H::Backend> = &store;
        let group = path("/feed-1");
        let inner = path("/feed-1/a-1");
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let paths: Vec<KeyPath> = (0..6)
            .map(|i| {
                path(match i {
                    0 => "/feed-1",
                    1 => "/feed-1/a-1",
                    2 => "/feed-1/a-1/b-1",
                    3 => "/feed-1/a-2",
                    4 => "/feed-1/c-x",
                    _ => "/feed-1/a-1/b-2",
                })
            })
            .collect();
        // Something before the follower starts.
        store.put(&paths[1], feed_value(0), ttl(30)).expect("put");
        let (mut whole, whole_token) = listing(store, &group);
        let (mut part, part_token) = listing(store, &inner);
        let (mut whole_token, mut part_token) = (
            whole_token.expect("a first page has a changes token"),
            part_token.expect("a first page has a changes token"),
        );
        let mut last_seen: BTreeMap<KeyPath, u64> = BTreeMap::new();
        for step in 0..40 {
            let p = &paths[rng.below(paths.len() as u64) as usize];
            let n = step as i64;
            let _ = match rng.below(8) {
                0 | 1 => store.put(p, feed_value(n), PutOptions::default()).map(drop),
                2 => store
                    .put(
                        p,
                        feed_value(n),
                        PutOptions {
                            history: true,
                            ..PutOptions::default()
                        },
                    )
                    .map(drop),
                3 => store
                    .put(p, feed_value(n), ttl(1 + rng.below(20)))
                    .map(drop),
                4 => store.delete(p, None).map(drop),
                5 => {
                    let q = &paths[(paths.iter().position(|x| x == p).unwrap_or(0) + 1) % 6];
                    store
                        .transact(
                            Transaction::new()
                                .put(p.clone(), feed_value(n), PutOptions::default())
                                .delete(q.clone(), None),
                        )
                        .map(drop)
                }
                6 => {
                    clock.advance(Duration::from_secs(rng.below(15)));
                    store.sweep_expired().map(drop)
                }
                _ => Ok(()),
            };
            if rng.below(4) == 0 {
                let limit = 1 + rng.below(3) as usize;
                for (replica, prefix, token) in [
                    (&mut whole, &group, &mut whole_token),
                    (&mut part, &inner, &mut part_token),
                ] {
                    let page = store.changes(prefix, Some(token), limit).expect("changes");
                    for entry in &page.changes {
                        let c = &entry.change;
                        let version = match c {
                            Change::Put(item) => item.version,
                            Change::Delete { version, .. } => *version,
                        };
                        if std::ptr::eq(prefix, &group) {
                            let before = last_seen.insert(c.path().clone(), version);
                            assert!(
                                before.is_none_or(|b| b <= version),
                                "seed {seed}: {} went from version {before:?} to {version}",
                                c.path()
                            );
                        }
                        apply(replica, c);
                    }
                    *token = page.next_token;
                }
            }
        }
        // Whatever is due is swept (and so logged) before the final comparison.
        store.sweep_expired().expect("sweep");
        for (replica, prefix, token) in [
            (&mut whole, &group, whole_token),
            (&mut part, &inner, part_token),
        ] {
            let (changes, _) = drain(store, prefix, token, 2);
            for (c, _) in &changes {
                assert!(prefix.covers(c.path()), "{} is outside {prefix}", c.path());
                apply(replica, c);
            }
            let (expected, _) = listing(store, prefix);
            assert_eq!(*replica, expected, "seed {seed}: follower of {prefix}");
        }
    }
}

/// Concurrent writers (puts, puts with a TTL, deletes, transactions) in one group while the clock
/// moves and a sweeper replaces expired items; a follower lists the group in small pages while
/// the writers run, then waits for changes: for every seed it ends equal to the final listing.
pub fn change_feed_with_concurrent_writers<H: Harness>(harness: &H) {
    const WRITERS: u64 = 4;
    const WRITES: u64 = 12;
    for seed in 1..=3u64 {
        let (clock, options) = manual_options();
        let store = harness.open(options);
        let store: &Store<H::Backend> = &store;
        let group = path("/live-1");
        let written = std::sync::atomic::AtomicU64::new(0);
        let origin = store.changes_token(&group).expect("token");
        let barrier = Barrier::new(WRITERS as usize + 1);
        let (mut replica, token, token_text) = std::thread::scope(|s| {
            for w in 0..WRITERS {
                let (barrier, written, clock) = (&barrier, &written, &clock);
                s.spawn(move || {
                    barrier.wait();
                    let mut rng = Rng(seed * 100 + w + 1);
                    for i in 0..WRITES {
                        let p = path(&format!("/live-1/k-{}", rng.below(5)));
                        let q = path(&format!("/live-1/k-{}/x-{w}", rng.below(5)));
                        let result = match rng.below(5) {
                            0 => store
                                .put(&p, feed_value(i as i64), PutOptions::default())
                                .map(drop),
                            1 => store
                                .put(&p, feed_value(i as i64), ttl(1 + rng.below(3)))
                                .map(drop),
                            2 => store.delete(&p, None).map(drop),
                            3 => {
                                clock.advance(Duration::from_secs(1));
                                store.sweep_expired().map(drop)
                            }
                            _ => store
                                .transact(
                                    Transaction::new()
                                        .put(p, feed_value(i as i64), PutOptions::default())
                                        .put(q, feed_value(i as i64), PutOptions::default()),
                                )
                                .map(drop),
                        };
                        match result {
                            Ok(()) | Err(Error::Conflict { .. }) => {}
                            Err(e) => panic!("writer {w}: {e}"),
                        }
                        written.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                });
            }
            // The follower lists while the writers run, in pages of 3, then follows.
            barrier.wait();
            while written.load(std::sync::atomic::Ordering::Relaxed) < WRITERS * WRITES / 3 {
                std::thread::yield_now();
            }
            let (mut replica, token) = listing_in_pages(store, &group, 3);
            let mut token = token.expect("a changes token");
            let token_text = format!("{token:?}");
            while written.load(std::sync::atomic::Ordering::Relaxed) < WRITERS * WRITES {
                let page = store
                    .wait_changes(&group, &token, 5, Duration::from_millis(20))
                    .expect("wait for changes");
                for entry in &page.changes {
                    apply(&mut replica, &entry.change);
                }
                token = page.next_token;
            }
            (replica, token, token_text)
        });
        // Whatever is due is swept (and so logged) before the final comparison.
        store.sweep_expired().expect("sweep");
        let (rest, _) = drain(store, &group, token, 7);
        for (c, _) in &rest {
            apply(&mut replica, c);
        }
        let final_listing = listing(store, &group).0;
        if replica != final_listing {
            let (history, _) = drain(store, &group, origin, 1000);
            for (path, held) in &replica {
                if final_listing.get(path) != Some(held) {
                    eprintln!(
                        "DIFF {path}: follower {held:?}, listing {:?}",
                        final_listing.get(path)
                    );
                    for (c, t) in &history {
                        if c.path() == path {
                            eprintln!(
                                "  {} {:?}",
                                t,
                                match c {
                                    Change::Put(i) => (i.version, i.expires_at),
                                    Change::Delete { version, .. } => (*version, None),
                                }
                            );
                        }
                    }
                    eprintln!(
                        "  raw: {:?}",
                        pathdb_store::backend::Reader::get(
                            &store.backend().reader().unwrap(),
                            &crate::item_key(path)
                        )
                    );
                    eprintln!("  now: {:?}", pathdb_store::Clock::now(&*clock));
                    eprintln!("  token was {token_text}");
                }
            }
        }
        assert_eq!(replica, final_listing, "seed {seed}");
    }
}

/// Changes come in commit order with every change's token resuming right after it; a
/// transaction's changes in the group come together on one page even with a limit of 1; no
/// `since` answers the current position and no changes; a waiting read returns as soon as a
/// commit lands.
pub fn change_feed_order_and_resume<H: Harness>(harness: &H) {
    let (_clock, options) = manual_options();
    let store = harness.open(options);
    let store: &Store<H::Backend> = &store;
    let group = path("/ord-1");
    let start = store.changes(&group, None, 10).expect("position");
    assert!(start.changes.is_empty());
    assert_eq!(
        start.next_token,
        store.changes_token(&group).expect("token")
    );
    let p = |s: &str| path(&format!("/ord-1/{s}"));
    store
        .put(&p("a-1"), value(1), PutOptions::default())
        .unwrap();
    store
        .put(&p("a-2"), value(2), PutOptions::default())
        .unwrap();
    store
        .transact(
            Transaction::new()
                .put(p("a-3"), value(3), PutOptions::default())
                .delete(p("a-1"), None)
                .put(path("/other-1"), value(0), PutOptions::default())
                .put(p("a-2"), value(4), PutOptions::default()),
        )
        .unwrap();
    store.delete(&p("a-9"), None).unwrap(); // Nothing to delete: no change.
    store
        .put(&p("a-1"), value(5), PutOptions::default())
        .unwrap();
    let describe = |c: &Change| match c {
        Change::Put(item) => format!("put {} v{}", item.path, item.version),
        Change::Delete { path, version, .. } => format!("delete {path} v{version}"),
    };
    let expected = [
        "put /ord-1/a-1 v1",
        "put /ord-1/a-2 v1",
        "put /ord-1/a-3 v1",
        "delete /ord-1/a-1 v1",
        "put /ord-1/a-2 v2",
        "put /ord-1/a-1 v3",
    ];
    let (all, end) = drain(store, &group, start.next_token, 1);
    assert_eq!(
        all.iter().map(|(c, _)| describe(c)).collect::<Vec<_>>(),
        expected
    );
    // The transaction's three changes in this group come on one page even with limit 1.
    let page = store
        .changes(&group, Some(&all[1].1), 1)
        .expect("after the second put");
    assert_eq!(
        page.changes.len(),
        3,
        "a transaction's changes come together"
    );
    // Resuming from each change's token gives exactly what follows it.
    for (i, (_, token)) in all.iter().enumerate() {
        let (rest, rest_end) = drain(store, &group, *token, 2);
        assert_eq!(
            rest.iter().map(|(c, _)| describe(c)).collect::<Vec<_>>(),
            expected[i + 1..],
            "resuming after change {i}"
        );
        assert_eq!(rest_end, end);
    }
    // A token survives its string form.
    let text = end.to_string();
    assert_eq!(text.parse::<ChangeToken>().expect("parses"), end);
    // A waiting read returns the commit that wakes it.
    std::thread::scope(|s| {
        let waiter = s.spawn(|| {
            store
                .wait_changes(&group, &end, 10, Duration::from_secs(60))
                .expect("wait")
        });
        std::thread::sleep(Duration::from_millis(50));
        store
            .put(&p("a-4"), value(6), PutOptions::default())
            .unwrap();
        let page = waiter.join().expect("waiter");
        assert_eq!(page.changes.len(), 1);
        assert_eq!(page.changes[0].change.path(), &p("a-4"));
    });
    // A wait with nothing to deliver times out empty, at the same position.
    let now = store.changes_token(&group).unwrap();
    let page = store
        .wait_changes(&group, &now, 10, Duration::from_millis(30))
        .unwrap();
    assert!(page.changes.is_empty());
    assert_eq!(page.next_token, now);
}

/// A token whose next change is older than the retention window answers
/// [`Error::ChangesExpired`]; a caught-up token stays valid however old; a token of another
/// group is refused; a malformed one too; a restart keeps tokens (where the backend keeps data).
pub fn change_feed_tokens_expire_and_survive_restarts<H: Harness>(harness: &H) {
    let (clock, mut options) = manual_options();
    options.change_retention = Duration::from_secs(3600);
    let store = harness.open(options.clone());
    let group = path("/ret-1");
    let p = path("/ret-1/a-1");
    let early = store.changes_token(&group).unwrap();
    store.put(&p, value(1), PutOptions::default()).unwrap();
    let caught_up = store.changes_token(&group).unwrap();
    clock.advance(Duration::from_secs(2 * 3600));
    match store.changes(&group, Some(&early), 10) {
        Err(Error::ChangesExpired(_)) => {}
        other => panic!("an expired token must say so, got {other:?}"),
    }
    // Nothing was missed after the caught-up token: it stays valid.
    let page = store.changes(&group, Some(&caught_up), 10).unwrap();
    assert!(page.changes.is_empty());
    // Later writes remove the old entries; the early token stays expired.
    for i in 0..20 {
        store.put(&p, value(i), PutOptions::default()).unwrap();
    }
    assert!(matches!(
        store.changes(&group, Some(&early), 10),
        Err(Error::ChangesExpired(_))
    ));
    let (changes, end) = drain(&store, &group, caught_up, 100);
    assert_eq!(changes.len(), 20);
    match store.changes(&path("/ret-2"), Some(&caught_up), 10) {
        Err(Error::InvalidChangeToken(_)) => {}
        other => panic!("a token of another group must be refused, got {other:?}"),
    }
    assert!(matches!(
        "not-a-token".parse::<ChangeToken>(),
        Err(Error::InvalidChangeToken(_))
    ));
    if let Some(store) = harness.reopen(store, options) {
        let page = store.changes(&group, Some(&end), 10).unwrap();
        assert!(page.changes.is_empty(), "nothing after the end");
        store.put(&p, value(99), PutOptions::default()).unwrap();
        let page = store.changes(&group, Some(&end), 10).unwrap();
        assert_eq!(
            page.changes.len(),
            1,
            "a token from before the restart resumes"
        );
        let (again, _) = drain(&store, &group, changes[5].1, 100);
        assert_eq!(again.len(), 15, "14 from before the restart and 1 after");
    }
}

fn created(results: Vec<TxResult>) -> Vec<Item> {
    results
        .into_iter()
        .filter_map(|r| match r {
            TxResult::Put(item) => Some(item),
            _ => None,
        })
        .collect()
}

fn int_id(path: &KeyPath) -> u64 {
    match path.last().id() {
        Some(pathdb_keys::Id::Int(n)) => n.magnitude(),
        other => panic!("{path}: expected an integer id, got {other:?}"),
    }
}

/// Eight creators racing on one sequence (children and new groups) get distinct ids, each
/// creator's increasing; deleting the newest does not make its id come back; uuid and rand53
/// ids are of their kind; a transaction creates an item and a child under it.
pub fn generated_ids<H: Harness>(harness: &H) {
    let (_clock, options) = manual_options();
    let store = harness.open(options);
    let store: &Store<H::Backend> = &store;
    let parent = path("/seq-1");
    const CREATORS: usize = 8;
    const EACH: usize = 4;
    let barrier = Barrier::new(CREATORS);
    let ids: Vec<Vec<(u64, u64)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..CREATORS)
            .map(|c| {
                let (barrier, parent) = (&barrier, &parent);
                s.spawn(move || {
                    barrier.wait();
                    (0..EACH)
                        .map(|i| {
                            let child = store
                                .create(
                                    Some(parent),
                                    "post",
                                    IdKind::Sequence,
                                    value(i as i64),
                                    PutOptions::default(),
                                )
                                .expect("create a child");
                            let group = store
                                .create(
                                    None,
                                    "seqgroup",
                                    IdKind::Sequence,
                                    value(c as i64),
                                    PutOptions::default(),
                                )
                                .expect("create a group");
                            (int_id(&child.path), int_id(&group.path))
                        })
                        .collect()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("creator"))
            .collect()
    });
    for column in [0, 1] {
        let mut all = HashSet::new();
        for creator in &ids {
            let mine: Vec<u64> = creator
                .iter()
                .map(|p| if column == 0 { p.0 } else { p.1 })
                .collect();
            assert!(mine.windows(2).all(|w| w[0] < w[1]), "{mine:?}");
            for id in mine {
                assert!(all.insert(id), "id {id} issued twice");
            }
        }
        let expected: HashSet<u64> = (1..=(CREATORS * EACH) as u64).collect();
        assert_eq!(all, expected, "ids 1..=32 without gaps");
    }
    let newest = path(&format!("/seq-1/post-{}", CREATORS * EACH));
    store.delete(&newest, None).unwrap();
    let next = store
        .create(
            Some(&parent),
            "post",
            IdKind::Sequence,
            value(0),
            PutOptions::default(),
        )
        .unwrap();
    assert_eq!(int_id(&next.path), (CREATORS * EACH) as u64 + 1);
    // An id written by hand ahead of the sequence is skipped, never overwritten.
    let ahead = path(&format!("/seq-1/post-{}", CREATORS * EACH + 2));
    store.put(&ahead, value(7), PutOptions::default()).unwrap();
    let a = store
        .create(
            Some(&parent),
            "post",
            IdKind::Sequence,
            value(0),
            PutOptions::default(),
        )
        .unwrap();
    let b = store
        .create(
            Some(&parent),
            "post",
            IdKind::Sequence,
            value(0),
            PutOptions::default(),
        )
        .unwrap();
    assert_eq!(
        (int_id(&a.path), int_id(&b.path)),
        ((CREATORS * EACH) as u64 + 3, (CREATORS * EACH) as u64 + 4)
    );
    assert_eq!(store.get(&ahead).unwrap().map(|i| i.version), Some(1));
    let uuid = store
        .create(
            Some(&parent),
            "doc",
            IdKind::Uuid,
            value(1),
            PutOptions::default(),
        )
        .unwrap();
    assert!(matches!(
        uuid.path.last().id(),
        Some(pathdb_keys::Id::Uuid(u)) if u.get_version_num() == 4
    ));
    let r = store
        .create(
            Some(&parent),
            "r",
            IdKind::Rand53,
            value(1),
            PutOptions::default(),
        )
        .unwrap();
    assert!((1..1 << 53).contains(&int_id(&r.path)));
    // A transaction creates a post and a comment under it, and puts a fixed path.
    let items = created(
        store
            .transact(
                Transaction::new()
                    .create(
                        Parent::Path(parent.clone()),
                        "post",
                        IdKind::Sequence,
                        value(1),
                    )
                    .create(Parent::Created(0), "comment", IdKind::Sequence, value(2))
                    .put(path("/seq-1/index-1"), value(3), PutOptions::default()),
            )
            .unwrap(),
    );
    assert_eq!(items.len(), 3);
    assert_eq!(items[1].path.parent(), Some(items[0].path.clone()));
    assert_eq!(int_id(&items[1].path), 1);
    for item in &items {
        assert_eq!(store.get(&item.path).unwrap().as_ref(), Some(item));
    }
    // Creates are changes like any put.
    let token = store.changes_token(&parent).unwrap();
    let c = store
        .create(
            Some(&parent),
            "post",
            IdKind::Sequence,
            value(9),
            PutOptions::default(),
        )
        .unwrap();
    let page = store.changes(&parent, Some(&token), 10).unwrap();
    assert_eq!(page.changes.len(), 1);
    assert_eq!(page.changes[0].change, Change::Put(c));
    // A reference to something that is not an earlier create is refused.
    assert!(matches!(
        store.transact(Transaction::new().create(Parent::Created(0), "x", IdKind::Uuid, value(1))),
        Err(Error::InvalidRequest(_))
    ));
}

/// Every row a backend holds in the group of `group` (items, tombstones, change log entries).
fn rows_in_group<B: Backend>(store: &Store<B>, group: &str) -> usize {
    use pathdb_store::backend::{Direction, Reader, SortRange};
    use std::ops::Bound;
    let all = SortRange {
        start: Bound::Unbounded,
        end: Bound::Unbounded,
    };
    store
        .backend()
        .reader()
        .expect("reader")
        .scan(
            &path(group).partition_key(),
            &all,
            Direction::Forward,
            10_000,
        )
        .expect("scan")
        .len()
}

#[track_caller]
fn assert_no_change_log<T: std::fmt::Debug>(result: Result<T, Error>, what: &str) {
    match result {
        Err(Error::InvalidRequest(message)) if message.contains("keeps no change log") => {}
        other => {
            panic!("{what}: expected the refusal of a group without a change log, got {other:?}")
        }
    }
}

/// A namespace defined with `"changes": false` (docs/changes.md, "Groups without a change
/// log"): its groups' writes append no log entry, and keep every other guarantee (versions
/// never reused, conditions, all-or-nothing transactions with logged groups, expiry); the
/// group has no feed, no listing token, no listing checks; a logged group beside it, and a
/// path of that namespace below another group, stay exact; the setting cannot be undone.
///
/// Writes there are planned on what the store knows (write/known.rs), here on every backend: a
/// guess the store got wrong (a transaction wrote the item meanwhile, other writers race) costs
/// a second try, never a wrong version or a wrong answer to a condition.
pub fn groups_without_a_change_log<H: Harness>(harness: &H) {
    let (clock, mut options) = manual_options();
    options.known_records = Some(1 << 20);
    let store = harness.open(options);
    let store: &Store<H::Backend> = &store;
    let put_as = |at: &str, n: i64, condition: Option<pathdb_store::Condition>| {
        store.put(
            &path(at),
            value(n),
            PutOptions {
                condition,
                ..PutOptions::default()
            },
        )
    };
    // A group written while it still logged: its feed's token, taken before the definition.
    put_as("/session-9/a-1", 1, None).unwrap();
    let old_token = store.changes_token(&path("/session-9")).unwrap();
    let unlogged = pathdb_store::Definition {
        changes: Some(false),
        ..pathdb_store::Definition::default()
    };
    store.define_namespace("session", unlogged, None).unwrap();
    let logged_rows = rows_in_group(store, "/session-9");

    // Versions go on across puts, a delete and a re-create; conditions hold as anywhere.
    for n in 1..=3 {
        assert_eq!(put_as("/session-1/a-1", n, None).unwrap().version, n as u64);
    }
    store.delete(&path("/session-1/a-1"), None).unwrap();
    assert_eq!(store.get(&path("/session-1/a-1")).unwrap(), None);
    let created = put_as(
        "/session-1/a-1",
        5,
        Some(pathdb_store::Condition::MustNotExist),
    )
    .unwrap();
    assert_eq!(
        created.version, 5,
        "a re-created item continues its versions"
    );
    super::assert_condition_failed(
        put_as(
            "/session-1/a-1",
            6,
            Some(pathdb_store::Condition::IfVersion(3)),
        ),
        "/session-1/a-1",
        pathdb_store::Condition::IfVersion(3),
        Some(5),
    );
    super::assert_condition_failed(
        put_as(
            "/session-1/a-1",
            6,
            Some(pathdb_store::Condition::MustNotExist),
        ),
        "/session-1/a-1",
        pathdb_store::Condition::MustNotExist,
        Some(5),
    );
    // What the store knows goes stale: a transaction of two items (planned on a read, and
    // teaching the store nothing) writes the item. A put then guessing version 5 fails that
    // guess and tries again on a read; a condition the guess fails but the item meets holds.
    let behind_its_back = |n: i64| {
        store
            .transact(
                Transaction::new()
                    .put(path("/session-1/a-1"), value(n), PutOptions::default())
                    .put(path("/session-4/x-1"), value(n), PutOptions::default()),
            )
            .unwrap();
    };
    behind_its_back(7);
    assert_eq!(put_as("/session-1/a-1", 8, None).unwrap().version, 7);
    behind_its_back(9);
    let held = put_as(
        "/session-1/a-1",
        10,
        Some(pathdb_store::Condition::IfVersion(8)),
    )
    .unwrap();
    assert_eq!(held.version, 9);
    assert_eq!(
        store.get(&path("/session-1/a-1")).unwrap().unwrap().value,
        value(10)
    );
    // Racing writers, each knowing only its own writes: every put takes a version of its own.
    let racers = super::concurrency::race(|w| {
        (0..5)
            .map(|i| {
                put_as("/session-1/a-1", (w * 10 + i) as i64, None)
                    .unwrap()
                    .version
            })
            .collect::<Vec<u64>>()
    });
    let mut versions: Vec<u64> = racers.into_iter().flatten().collect();
    versions.sort_unstable();
    let first = 10;
    let expected: Vec<u64> = (first..first + versions.len() as u64).collect();
    assert_eq!(versions, expected, "every racing put took its own version");
    // Read-modify-write under contention stays linearizable: each writer reads the counter
    // and puts it back one higher on the version it read (its own guess is often stale).
    put_as("/session-1/counter-1", 0, None).unwrap();
    super::concurrency::race(|_| {
        for _ in 0..5 {
            loop {
                let read = store.get(&path("/session-1/counter-1")).unwrap().unwrap();
                let n =
                    serde_json::from_str::<serde_json::Value>(read.value.as_str()).unwrap()["n"]
                        .as_i64()
                        .unwrap();
                match put_as(
                    "/session-1/counter-1",
                    n + 1,
                    Some(pathdb_store::Condition::IfVersion(read.version)),
                ) {
                    Ok(_) => break,
                    Err(Error::ConditionFailed { .. }) => continue,
                    Err(e) => panic!("increment: {e}"),
                }
            }
        }
    });
    let counter = store.get(&path("/session-1/counter-1")).unwrap().unwrap();
    let writers = super::concurrency::WRITERS as i64;
    assert_eq!(counter.value, value(5 * writers), "no increment lost");
    assert_eq!(
        counter.version,
        1 + 5 * writers as u64,
        "one version per increment"
    );
    // A delete of an item this store did not write (a transaction did) is not answered from
    // the guess that it is absent.
    store
        .transact(
            Transaction::new()
                .put(path("/session-3/b-1"), value(1), PutOptions::default())
                .put(path("/session-4/x-2"), value(1), PutOptions::default()),
        )
        .unwrap();
    assert!(
        store
            .delete(&path("/session-3/b-1"), None)
            .unwrap()
            .is_some(),
        "it was there"
    );
    assert_eq!(store.get(&path("/session-3/b-1")).unwrap(), None);
    assert_eq!(put_as("/session-3/b-1", 2, None).unwrap().version, 3);
    // Deletes are planned on what is known too; versions go on after them.
    store.delete(&path("/session-1/a-1"), None).unwrap();
    let next = expected.last().copied().unwrap_or(first) + 2;
    assert_eq!(put_as("/session-1/a-1", 1, None).unwrap().version, next);
    put_as("/session-1/a-2", 1, None).unwrap();
    // Three items, and nothing else: no log entry was written.
    assert_eq!(rows_in_group(store, "/session-1"), 3, "rows of /session-1");

    // No feed, no token, no listing check; the listing itself is served, without a token.
    let group = path("/session-1");
    assert_no_change_log(store.changes(&group, None, 10), "changes");
    assert_no_change_log(store.changes_token(&group), "changes_token");
    assert_no_change_log(
        store.wait_changes(
            &path("/session-9"),
            &old_token,
            10,
            Duration::from_millis(1),
        ),
        "a token taken while the group logged",
    );
    let page = store.list(&ListRequest::new(group.clone())).unwrap();
    assert_eq!(page.items.len(), 3);
    assert_eq!(
        page.changes_token, None,
        "a listing of a group without a log"
    );
    assert_no_change_log(
        store.transaction(|tx| tx.list(&ListRequest::new(group.clone()))),
        "a listing inside a transaction",
    );
    // A write to the old group after the definition adds no row either.
    put_as("/session-9/a-1", 2, None).unwrap();
    assert_eq!(rows_in_group(store, "/session-9"), logged_rows);

    // A transaction across a logged and an unlogged group: all or nothing, and the logged
    // group's feed has exactly its change.
    let user = path("/user-1");
    let since = store.changes_token(&user).unwrap();
    let failed = store.transact(
        Transaction::new()
            .put(path("/user-1/a-1"), value(1), PutOptions::default())
            .put(
                path("/session-1/a-2"),
                value(2),
                PutOptions {
                    condition: Some(pathdb_store::Condition::IfVersion(7)),
                    ..PutOptions::default()
                },
            ),
    );
    assert!(
        matches!(&failed, Err(Error::ConditionFailed { path: p, .. }) if p.to_string() == "/session-1/a-2"),
        "{failed:?}"
    );
    assert_eq!(store.get(&path("/user-1/a-1")).unwrap(), None);
    store
        .transact(
            Transaction::new()
                .put(path("/user-1/a-1"), value(1), PutOptions::default())
                .put(path("/session-1/a-2"), value(2), PutOptions::default())
                // A path of the namespace below a logged group is logged with its group.
                .put(path("/user-1/session-3"), value(3), PutOptions::default()),
        )
        .unwrap();
    assert_eq!(
        store.get(&path("/session-1/a-2")).unwrap().unwrap().version,
        2
    );
    let page = store.changes(&user, Some(&since), 100).unwrap();
    let changed: Vec<String> = page
        .changes
        .iter()
        .map(|c| c.change.path().to_string())
        .collect();
    assert_eq!(changed, ["/user-1/a-1", "/user-1/session-3"]);

    // Expiry: swept like any item, and the version survives the sweep.
    let expiring = PutOptions {
        expires: Some(Expiry::After(Duration::from_secs(1))),
        ..PutOptions::default()
    };
    store
        .put(&path("/session-2/t-1"), value(1), expiring)
        .unwrap();
    clock.advance(Duration::from_secs(2));
    assert_eq!(store.sweep_expired().unwrap(), 1);
    assert_eq!(store.get(&path("/session-2/t-1")).unwrap(), None);
    // The sweep's tombstone keeps version 1 (an expiry is not a write of its own).
    assert_eq!(put_as("/session-2/t-1", 2, None).unwrap().version, 2);

    // Once off, the log stays off: neither a definition that logs nor a removal is stored.
    let current = store.namespace("session").unwrap().expect("defined");
    assert_no_change_log_kept(store.define_namespace(
        "session",
        pathdb_store::Definition::default(),
        None,
    ));
    assert_no_change_log_kept(store.delete_namespace("session", None));
    // Any other change keeps it off.
    let described = pathdb_store::Definition {
        description: Some("sessions".into()),
        changes: Some(false),
        ..pathdb_store::Definition::default()
    };
    store
        .define_namespace(
            "session",
            described,
            Some(pathdb_store::Condition::IfVersion(current.version)),
        )
        .unwrap();
    put_as("/session-1/a-3", 1, None).unwrap();
    assert_eq!(rows_in_group(store, "/session-1"), 4, "rows of /session-1");
}

#[track_caller]
fn assert_no_change_log_kept<T: std::fmt::Debug>(result: Result<T, Error>) {
    match result {
        Err(Error::InvalidRequest(message)) if message.contains("cannot be undone") => {}
        other => panic!("expected the log to stay off, got {other:?}"),
    }
}

/// The change log's two forms (docs/changes.md, "How the log is stored"): a store asked for
/// JSON entries writes JSON, a database no store opened before is marked for compact ones, and
/// one feed reads a log written in both, in order, with the before images a filtered feed
/// decides on from either form. Where the data outlives a store, the forms alternate over
/// reopens within one log: a database once written in JSON stays so until asked, and a marked
/// one stays compact until asked for JSON.
pub fn change_log_in_both_forms<H: Harness>(harness: &H) {
    let (_, options) = manual_options();
    let with = |form: Option<bool>| StoreOptions {
        compact_change_log: form,
        ..options.clone()
    };
    let group = path("/logform-1");
    // A fresh database, each way: compact unless asked for JSON.
    for (form, compact) in [(Some(false), false), (None, true), (Some(true), true)] {
        let store = harness.open(with(form));
        let start = store.changes_token(&group).expect("a token");
        let mut expected = Expected::default();
        log_form_round(&store, 0, &mut expected);
        let (json, compact_entries) = log_forms(&store, &group);
        assert_eq!(
            (json > 0, compact_entries > 0),
            (!compact, compact),
            "{form:?}"
        );
        expected.read_back(&store, &group, &start);
    }
    // One log over reopens: JSON, JSON (not new: stays), compact (asked), compact (marked),
    // JSON (asked).
    let mut store = harness.open(with(Some(false)));
    let start = store.changes_token(&group).expect("a token");
    let mut expected = Expected::default();
    log_form_round(&store, 0, &mut expected);
    let mut seen = (true, false);
    for (round, (form, compact)) in [
        (None, false),
        (Some(true), true),
        (None, true),
        (Some(false), false),
    ]
    .into_iter()
    .enumerate()
    {
        store = match harness.reopen(store, with(form)) {
            Some(store) => store,
            None => return,
        };
        let before = log_forms(&store, &group);
        log_form_round(&store, round + 1, &mut expected);
        let after = log_forms(&store, &group);
        let wrote = (after.0 > before.0, after.1 > before.1);
        assert_eq!(wrote, (!compact, compact), "round {round}: {form:?}");
        seen = (seen.0 || wrote.0, seen.1 || wrote.1);
        expected.read_back(&store, &group, &start);
    }
    assert_eq!(seen, (true, true), "one log holds both forms");
}

/// Entries of `group`'s change log in each form: (JSON, compact). The log's rows sort last in
/// their group (`[0xff, 0xff]` and the entry's number, encoding/layout.rs).
fn log_forms<B: Backend>(store: &Store<B>, group: &KeyPath) -> (usize, usize) {
    use pathdb_store::backend::{Direction, Reader, SortRange};
    use std::ops::Bound;
    let log = SortRange {
        start: Bound::Included(vec![0xff, 0xff]),
        end: Bound::Unbounded,
    };
    let rows = store
        .backend()
        .reader()
        .expect("reader")
        .scan(&group.partition_key(), &log, Direction::Forward, 10_000)
        .expect("scan");
    let json = rows
        .iter()
        .filter(|(_, r)| r.value.starts_with(b"{\"changes\""))
        .count();
    let compact = rows
        .iter()
        .filter(|(_, r)| r.value.first() == Some(&1))
        .count();
    assert_eq!(
        json + compact,
        rows.len(),
        "every entry is in one of the forms"
    );
    (json, compact)
}

/// The changes a feed of the log should deliver: every change, and those a filter of open items
/// (`value.s == "open"`) should.
#[derive(Default)]
struct Expected {
    all: Vec<(KeyPath, u64, bool)>,
    open: Vec<(KeyPath, u64, bool, bool)>,
}

impl Expected {
    /// Reads the whole feed from `start`, unfiltered and filtered, and compares.
    fn read_back<B: Backend>(&self, store: &Store<B>, group: &KeyPath, start: &ChangeToken) {
        let filter = pathdb_store::Filter::compile("value.s == \"open\"").expect("compiles");
        let read = |filter: Option<&pathdb_store::Filter>| {
            let mut out = Vec::new();
            let mut token = *start;
            loop {
                let page = store
                    .changes_filtered(group, Some(&token), 3, filter.map(|f| (f, None)))
                    .expect("a page");
                if page.next_token == token {
                    return out;
                }
                token = page.next_token;
                out.extend(page.changes.into_iter().map(|c| match c.change {
                    Change::Put(item) => (item.path, item.version, true, c.left),
                    Change::Delete { path, version, .. } => (path, version, false, c.left),
                }));
            }
        };
        let all: Vec<_> = read(None)
            .into_iter()
            .map(|(p, v, put, _)| (p, v, put))
            .collect();
        assert_eq!(all, self.all, "every change, in order");
        assert_eq!(
            read(Some(&filter)),
            self.open,
            "the filtered feed, from the images"
        );
    }
}

/// Writes round `n` into `/logform-1`: an item that leaves the filter by a put, one that leaves
/// it by a delete, and one that never matches (skipped only if its images are read).
fn log_form_round<B: Backend>(store: &Store<B>, n: usize, expected: &mut Expected) {
    let put = |at: &str, s: &str| {
        let item = store
            .put(
                &path(at),
                Json::parse(&format!(r#"{{"s":"{s}","n":{n}}}"#)).expect("json"),
                PutOptions::default(),
            )
            .expect("put");
        (item.path, item.version)
    };
    let (a, b, c) = (
        format!("/logform-1/a-{n}"),
        format!("/logform-1/b-{n}"),
        format!("/logform-1/c-{n}"),
    );
    let (p, v) = put(&a, "open");
    expected.all.push((p.clone(), v, true));
    expected.open.push((p, v, true, false));
    let (p, v) = put(&a, "shut");
    expected.all.push((p.clone(), v, true));
    expected.open.push((p, v, false, true));
    let (p, v) = put(&b, "open");
    expected.all.push((p.clone(), v, true));
    expected.open.push((p.clone(), v, true, false));
    store.delete(&p, None).expect("delete");
    expected.all.push((p.clone(), v, false));
    expected.open.push((p, v, false, true));
    for _ in 0..2 {
        let (p, v) = put(&c, "shut");
        expected.all.push((p, v, true));
    }
}
