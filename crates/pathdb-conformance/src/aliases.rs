//! Alias paths (docs/aliases.md): kept exact with their items by every write, unique, read and
//! listed like any path, fed to the alias prefix's change feed; checked against a model of
//! random writes, and under racing writers.

use crate::{Harness, Rng, json, open_manual, path};
use pathdb_store::backend::Backend;
use pathdb_store::{
    AliasDefinition, AliasState, Change, Definition, Error, Expiry, Item, ListEntry, ListRequest,
    Patch, PutOptions, Store, Transaction, TxOp,
};
use std::collections::BTreeMap;
use std::time::Duration;

/// A definition with these alias templates.
pub(crate) fn with_aliases(templates: &[&str]) -> Definition {
    Definition {
        aliases: templates
            .iter()
            .map(|t| AliasDefinition {
                path: (*t).to_owned(),
            })
            .collect(),
        ..Definition::default()
    }
}

fn define<B: Backend>(store: &Store<B>, namespace: &str, templates: &[&str]) {
    store
        .define_namespace(namespace, with_aliases(templates), None)
        .unwrap();
    wait_ready(store, namespace);
}

/// Runs the alias builds of `namespace` to the end; they must end ready.
pub(crate) fn wait_ready<B: Backend>(store: &Store<B>, namespace: &str) {
    store.run_alias_builds().unwrap();
    let builds = store.alias_builds(namespace).unwrap();
    assert!(
        builds.iter().all(|b| b.state == AliasState::Ready),
        "{builds:?}"
    );
}

fn put<B: Backend>(store: &Store<B>, at: &str, value: &str) -> Result<Item, Error> {
    store.put(&path(at), json(value), PutOptions::default())
}

fn listed(entries: &[ListEntry]) -> Vec<String> {
    entries
        .iter()
        .map(|e| match e.item() {
            Some(item) => format!("{} -> {}", e.path(), item.path),
            None => format!("{} (node)", e.path()),
        })
        .collect()
}

fn list_all<B: Backend>(store: &Store<B>, prefix: &str, reverse: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut request = ListRequest::new(path(prefix));
    request.reverse = reverse;
    request.limit = 2;
    loop {
        let page = store.list(&request).unwrap();
        out.extend(listed(&page.items));
        match page.next_page_token {
            Some(token) => request.page_token = Some(token),
            None => return out,
        }
    }
}

/// Unique and per-item aliases: written with the item, read, listed and paged like paths,
/// moved off and on by changes of the member, refused where taken, never written over.
pub fn alias_paths<H: Harness>(harness: &H) {
    let (_clock, store) = open_manual(harness);
    define(&store, "user", &["/email-{email}"]);
    define(&store, "order", &["/status-{status}/order-{@order}"]);
    define(
        &store,
        "player",
        &["/board-1/score-{!points}/player-{@player}"],
    );

    // A unique alias: get through it, with the item's own path and version.
    let ada = put(&store, "/user-1", r#"{"email":"ada@x.org","n":1}"#).unwrap();
    let read = store.get(&path("/email-ada@x.org")).unwrap().unwrap();
    assert_eq!(read.path, path("/user-1"));
    assert_eq!(read.alias, Some(path("/email-ada@x.org")));
    assert_eq!((read.version, &read.value), (ada.version, &ada.value));
    assert_eq!(store.get(&path("/user-1")).unwrap().unwrap().alias, None);

    // Taken: by another item's put, a create, a transaction; nothing is written.
    match put(&store, "/user-2", r#"{"email":"ada@x.org"}"#) {
        Err(Error::AliasTaken { alias, holder, .. }) => {
            assert_eq!((alias, holder), (path("/email-ada@x.org"), path("/user-1")));
        }
        other => panic!("expected alias_taken, got {other:?}"),
    }
    assert!(store.get(&path("/user-2")).unwrap().is_none());
    let mut tx = Transaction::new();
    tx.ops.push(TxOp::Put {
        path: path("/user-3"),
        value: json(r#"{"email":"b@x.org"}"#),
        options: PutOptions::default(),
    });
    tx.ops.push(TxOp::Put {
        path: path("/user-4"),
        value: json(r#"{"email":"ada@x.org"}"#),
        options: PutOptions::default(),
    });
    assert!(matches!(
        store.transact(tx),
        Err(Error::AliasTaken { index: 1, .. })
    ));
    assert!(store.get(&path("/user-3")).unwrap().is_none());
    assert!(store.get(&path("/email-b@x.org")).unwrap().is_none());

    // An item cannot be stored at an alias path, nor an alias take an item's path.
    assert!(matches!(
        put(&store, "/email-ada@x.org", "{}"),
        Err(Error::PathIsAlias { item, .. }) if item == path("/user-1")
    ));
    put(&store, "/email-taken@x.org", "{}").unwrap();
    assert!(matches!(
        put(&store, "/user-5", r#"{"email":"taken@x.org"}"#),
        Err(Error::AliasTaken { holder, .. }) if holder == path("/email-taken@x.org")
    ));

    // A member of the wrong type is refused; a missing or null one gives no alias.
    assert!(matches!(
        put(&store, "/user-5", r#"{"email":true}"#),
        Err(Error::AliasInvalid { member, .. }) if &*member == "email"
    ));
    put(&store, "/user-5", r#"{"email":null}"#).unwrap();
    put(&store, "/user-6", "{}").unwrap();

    // A change of the member moves the alias, atomically; the old one is free again.
    put(&store, "/user-1", r#"{"email":"ada@y.org"}"#).unwrap();
    assert!(store.get(&path("/email-ada@x.org")).unwrap().is_none());
    assert_eq!(
        store.get(&path("/email-ada@y.org")).unwrap().unwrap().path,
        path("/user-1")
    );
    put(&store, "/user-2", r#"{"email":"ada@x.org"}"#).unwrap();

    // Patch and delete through an alias act on the item; history and versions follow it.
    let patch = Patch::Merge(serde_json::json!({"n": 2}));
    let patched = store
        .patch(
            &path("/email-ada@y.org"),
            patch,
            PutOptions::default(),
            false,
        )
        .unwrap();
    assert_eq!(patched.path, path("/user-1"));
    assert_eq!(
        store
            .get(&path("/user-1"))
            .unwrap()
            .unwrap()
            .value
            .to_value()["n"],
        2
    );
    let deleted = store.delete(&path("/email-ada@x.org"), None).unwrap();
    assert_eq!(deleted.map(|i| i.path), Some(path("/user-2")));
    assert!(store.get(&path("/user-2")).unwrap().is_none());
    assert!(store.get(&path("/email-ada@x.org")).unwrap().is_none());

    // Per-item aliases list in alias order, in both directions, in pages.
    for (n, status) in [(1, "open"), (2, "done"), (3, "open"), (10, "open")] {
        put(
            &store,
            &format!("/order-{n}"),
            &format!(r#"{{"status":"{status}"}}"#),
        )
        .unwrap();
    }
    let open = [
        "/status-open/order-1 -> /order-1",
        "/status-open/order-3 -> /order-3",
        "/status-open/order-10 -> /order-10",
    ];
    assert_eq!(list_all(&store, "/status-open", false), open);
    let mut reversed = open.to_vec();
    reversed.reverse();
    assert_eq!(list_all(&store, "/status-open", true), reversed);
    let mut children = ListRequest::new(path("/status-open"));
    children.children_only = true;
    assert_eq!(store.list(&children).unwrap().items.len(), 3);

    // A descending id: the highest score first.
    for (n, points) in [(1, 50), (2, 1500), (3, 700)] {
        put(
            &store,
            &format!("/player-{n}"),
            &format!(r#"{{"points":{points}}}"#),
        )
        .unwrap();
    }
    let mut top = ListRequest::new(path("/board-1"));
    top.limit = 2;
    assert_eq!(
        listed(&store.list(&top).unwrap().items),
        [
            "/board-1/score-!1500/player-2 -> /player-2",
            "/board-1/score-!700/player-3 -> /player-3"
        ]
    );

    // Reading several, history and versions through an alias.
    let many = store
        .get_many(&[path("/email-ada@y.org"), path("/status-open/order-3")])
        .unwrap();
    assert_eq!(
        many.iter().map(|i| i.path.to_string()).collect::<Vec<_>>(),
        ["/user-1", "/order-3"]
    );
    assert_eq!(
        store
            .get_version(&path("/email-ada@y.org"), patched.version)
            .unwrap()
            .map(|i| i.path),
        Some(path("/user-1"))
    );

    // Moves and copies carry their aliases; a copy cannot duplicate a unique one.
    store
        .move_subtree(&path("/order-3"), &path("/order-4"), &mut |_| {})
        .unwrap();
    assert_eq!(
        list_all(&store, "/status-open", false),
        [
            "/status-open/order-1 -> /order-1",
            "/status-open/order-4 -> /order-4",
            "/status-open/order-10 -> /order-10",
        ]
    );
    store
        .copy_subtree(&path("/order-4"), &path("/order-5"), &mut |_| {})
        .unwrap();
    assert_eq!(list_all(&store, "/status-open", false).len(), 4);
    assert!(matches!(
        store.copy_subtree(&path("/user-1"), &path("/user-9"), &mut |_| {}),
        Err(Error::AliasTaken { .. })
    ));
    store
        .delete_subtree(&path("/order-5"), &mut |_| {})
        .unwrap();
    assert_eq!(list_all(&store, "/status-open", false).len(), 3);

    // An alias is nobody's item: a subtree delete of its prefix finds nothing to delete; a
    // move onto it finds the destination taken.
    assert!(matches!(
        store.delete_subtree(&path("/status-open"), &mut |_| {}),
        Err(Error::NothingBelow { .. })
    ));
    assert_eq!(list_all(&store, "/status-open", false).len(), 3);
    assert!(
        store
            .move_subtree(&path("/order-2"), &path("/status-open"), &mut |_| {})
            .is_err()
    );
}

/// The change feed of an alias prefix shows items entering it, changing in it and leaving it
/// (by a change of the member, a delete or an expiry), in commit order.
pub fn alias_change_feeds<H: Harness>(harness: &H) {
    let (clock, store) = open_manual(harness);
    define(&store, "order", &["/status-{status}/order-{@order}"]);
    let token = store.changes_token(&path("/status-open")).unwrap();
    put(&store, "/order-1", r#"{"status":"open"}"#).unwrap();
    put(&store, "/order-2", r#"{"status":"open"}"#).unwrap();
    put(&store, "/order-1", r#"{"status":"open","n":1}"#).unwrap();
    put(&store, "/order-1", r#"{"status":"done"}"#).unwrap();
    store.delete(&path("/order-2"), None).unwrap();
    let options = PutOptions {
        expires: Some(Expiry::After(Duration::from_secs(10))),
        ..PutOptions::default()
    };
    store
        .put(&path("/order-3"), json(r#"{"status":"open"}"#), options)
        .unwrap();
    clock.advance(Duration::from_secs(11));
    assert!(store.get(&path("/status-open/order-3")).unwrap().is_none());
    store.sweep_expired().unwrap();
    let page = store
        .changes(&path("/status-open"), Some(&token), 100)
        .unwrap();
    let seen: Vec<String> = page
        .changes
        .iter()
        .map(|c| match &c.change {
            Change::Put(item) => format!("put {} at {}", item.path, item.alias.as_ref().unwrap()),
            Change::Delete { path, alias, .. } => {
                format!("delete {path} at {}", alias.as_ref().unwrap())
            }
        })
        .collect();
    assert_eq!(
        seen,
        [
            "put /order-1 at /status-open/order-1",
            "put /order-2 at /status-open/order-2",
            "put /order-1 at /status-open/order-1",
            "delete /order-1 at /status-open/order-1",
            "delete /order-2 at /status-open/order-2",
            "put /order-3 at /status-open/order-3",
            "delete /order-3 at /status-open/order-3",
        ]
    );
    // The item's own feed is unchanged by its aliases.
    let own = store.changes_token(&path("/order-1")).unwrap();
    put(&store, "/order-1", r#"{"status":"open"}"#).unwrap();
    let page = store.changes(&path("/order-1"), Some(&own), 100).unwrap();
    assert_eq!(page.changes.len(), 1);
    assert_eq!(page.changes[0].change.key(), &path("/order-1"));
}

/// Random puts, patches, deletes, moves, copies, expiries and transactions over items with
/// random `email`, `status` and `points`; after every step each alias resolves to exactly the
/// item whose value names it, no other alias exists, and listings through alias prefixes
/// follow the model's order both ways.
pub fn aliases_against_a_model<H: Harness>(harness: &H) {
    let (clock, store) = open_manual(harness);
    define(
        &store,
        "acct",
        &[
            "/emails-1/email-{email}",
            "/status-{status}/acct-{@acct}",
            "/top-1/points-{!points}/acct-{@acct}",
        ],
    );
    let mut rng = Rng(0x5eed_a11a5);
    // The model: live items by id, with their value and expiry.
    let mut model: BTreeMap<u64, (serde_json::Value, Option<i64>)> = BTreeMap::new();
    let steps = 120;
    let random_value = |rng: &mut Rng| {
        let mut v = serde_json::Map::new();
        if rng.below(4) > 0 {
            v.insert("email".into(), format!("e{}", rng.below(6)).into());
        }
        if rng.below(4) > 0 {
            v.insert(
                "status".into(),
                ["open", "done"][rng.below(2) as usize].into(),
            );
        }
        if rng.below(3) > 0 {
            v.insert("points".into(), (rng.below(5) as i64 * 10).into());
        }
        serde_json::Value::Object(v)
    };
    let at = |id: u64| path(&format!("/acct-{id}"));
    for step in 0..steps {
        let now = clock_now(&clock);
        // The model's live view at this time.
        model.retain(|_, (_, exp)| exp.is_none_or(|t| t > now));
        let id = 1 + rng.below(8);
        let value = random_value(&mut rng);
        let taken = |model: &BTreeMap<u64, (serde_json::Value, Option<i64>)>,
                     id: u64,
                     value: &serde_json::Value| {
            value.get("email").is_some_and(|e| {
                model
                    .iter()
                    .any(|(other, (v, _))| *other != id && v.get("email") == Some(e))
            })
        };
        match rng.below(7) {
            0 | 1 => {
                let result = store.put(&at(id), json(&value.to_string()), PutOptions::default());
                if taken(&model, id, &value) {
                    assert!(
                        matches!(result, Err(Error::AliasTaken { .. })),
                        "{result:?}"
                    );
                } else {
                    result.unwrap();
                    model.insert(id, (value, None));
                }
            }
            2 => {
                // A merge patch through the unique alias, if the item has one.
                let Some((_, (v, _))) = model.iter().find(|(i, _)| **i == id) else {
                    continue;
                };
                let Some(email) = v.get("email").and_then(|e| e.as_str()) else {
                    continue;
                };
                let points = serde_json::json!({"points": rng.below(5) * 10});
                let result = store.patch(
                    &path(&format!("/emails-1/email-{email}")),
                    Patch::Merge(points.clone()),
                    PutOptions::default(),
                    false,
                );
                assert_eq!(result.unwrap().path, at(id));
                let entry = model.get_mut(&id).unwrap();
                entry.0["points"] = points["points"].clone();
            }
            3 => {
                store.delete(&at(id), None).unwrap();
                model.remove(&id);
            }
            4 => {
                // Move or copy to a free id.
                let Some((v, exp)) = model.get(&id).cloned() else {
                    continue;
                };
                let to = 1 + rng.below(8);
                if model.contains_key(&to) || to == id {
                    continue;
                }
                if rng.below(2) == 0 {
                    store.move_subtree(&at(id), &at(to), &mut |_| {}).unwrap();
                    model.remove(&id);
                    model.insert(to, (v, exp));
                } else {
                    let result = store.copy_subtree(&at(id), &at(to), &mut |_| {});
                    if v.get("email").is_some() {
                        assert!(
                            matches!(result, Err(Error::AliasTaken { .. })),
                            "{result:?}"
                        );
                    } else {
                        result.unwrap();
                        model.insert(to, (v, exp));
                    }
                }
            }
            5 => {
                // A put that expires soon, then time passes (and sometimes the sweeper runs).
                let options = PutOptions {
                    expires: Some(Expiry::After(Duration::from_secs(1 + rng.below(3)))),
                    ..PutOptions::default()
                };
                let result = store.put(&at(id), json(&value.to_string()), options);
                if taken(&model, id, &value) {
                    assert!(
                        matches!(result, Err(Error::AliasTaken { .. })),
                        "{result:?}"
                    );
                } else {
                    let item = result.unwrap();
                    model.insert(id, (value, item.expires_at.map(|t| t.0)));
                }
                clock.advance(Duration::from_secs(1 + rng.below(2)));
                if rng.below(2) == 0 {
                    store.sweep_expired().unwrap();
                }
            }
            _ => {
                // A transaction handing an email from one item to another: the first drops
                // it, the second takes it, in one commit.
                let other = 1 + rng.below(8);
                let Some((v, _)) = model.get(&id).cloned() else {
                    continue;
                };
                let Some(email) = v.get("email").cloned() else {
                    continue;
                };
                if other == id {
                    continue;
                }
                let mut dropped = v.clone();
                dropped.as_object_mut().unwrap().remove("email");
                let mut took = random_value(&mut rng);
                took["email"] = email;
                let mut tx = Transaction::new();
                tx.ops.push(TxOp::Put {
                    path: at(id),
                    value: json(&dropped.to_string()),
                    options: PutOptions::default(),
                });
                tx.ops.push(TxOp::Put {
                    path: at(other),
                    value: json(&took.to_string()),
                    options: PutOptions::default(),
                });
                store.transact(tx).unwrap();
                model.insert(id, (dropped, None));
                model.insert(other, (took, None));
            }
        }
        check_model(&store, &model, clock_now(&clock), step);
    }
}

fn clock_now(clock: &pathdb_store::ManualClock) -> i64 {
    use pathdb_store::Clock;
    clock.now().0
}

/// Every alias of the model's live items, and nothing else, under the three alias prefixes.
fn check_model<B: Backend>(
    store: &Store<B>,
    model: &BTreeMap<u64, (serde_json::Value, Option<i64>)>,
    now: i64,
    step: usize,
) {
    let live = model
        .iter()
        .filter(|(_, (_, exp))| exp.is_none_or(|t| t > now));
    let mut emails = Vec::new();
    let mut statuses: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut top = Vec::new();
    for (id, (v, _)) in live {
        if let Some(e) = v.get("email").and_then(|e| e.as_str()) {
            emails.push((e.to_owned(), *id));
        }
        if let Some(s) = v.get("status").and_then(|s| s.as_str()) {
            statuses.entry(s.to_owned()).or_default().push(*id);
        }
        if let Some(p) = v.get("points").and_then(serde_json::Value::as_i64) {
            top.push((p, *id));
        }
    }
    emails.sort();
    let expected: Vec<String> = emails
        .iter()
        .map(|(e, id)| format!("/emails-1/email-{e} -> /acct-{id}"))
        .collect();
    assert_eq!(list_all(store, "/emails-1", false), expected, "step {step}");
    for status in ["open", "done"] {
        let ids = statuses.get(status).cloned().unwrap_or_default();
        let expected: Vec<String> = ids
            .iter()
            .map(|id| format!("/status-{status}/acct-{id} -> /acct-{id}"))
            .collect();
        let prefix = format!("/status-{status}");
        assert_eq!(list_all(store, &prefix, false), expected, "step {step}");
        let mut reversed = expected.clone();
        reversed.reverse();
        assert_eq!(list_all(store, &prefix, true), reversed, "step {step}");
    }
    // Highest points first, then ascending ids.
    top.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let expected: Vec<String> = top
        .iter()
        .map(|(p, id)| format!("/top-1/points-!{p}/acct-{id} -> /acct-{id}"))
        .collect();
    assert_eq!(list_all(store, "/top-1", false), expected, "step {step}");
    // Each alias resolves to its item's current value.
    for (e, id) in &emails {
        let item = store
            .get(&path(&format!("/emails-1/email-{e}")))
            .unwrap()
            .unwrap();
        assert_eq!(item.path, path(&format!("/acct-{id}")), "step {step}");
        assert_eq!(item.value.to_value(), model[id].0, "step {step}");
    }
}

/// Eight writers taking one unique alias: exactly one succeeds, the others find it taken.
/// Eight writers changing one item's aliased member: the alias set ends as its value says.
pub fn racing_for_aliases<H: Harness>(harness: &H) {
    let store = harness.open(crate::manual_options().1);
    define(&store, "user", &["/email-{email}"]);
    define(&store, "order", &["/status-{status}/order-{@order}"]);
    let store = &*store;
    let results: Vec<Result<Item, Error>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|n| {
                s.spawn(move || put(store, &format!("/user-{n}"), r#"{"email":"race@x.org"}"#))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let won: Vec<&Item> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(won.len(), 1, "{results:?}");
    assert!(
        results
            .iter()
            .filter_map(|r| r.as_ref().err())
            .all(|e| matches!(e, Error::AliasTaken { .. })),
        "{results:?}"
    );
    let holder = store.get(&path("/email-race@x.org")).unwrap().unwrap();
    assert_eq!(holder.path, won[0].path);

    put(store, "/order-1", r#"{"status":"s0"}"#).unwrap();
    std::thread::scope(|s| {
        for n in 0..8 {
            s.spawn(move || {
                for round in 0..3 {
                    put(
                        store,
                        "/order-1",
                        &format!(r#"{{"status":"s{}"}}"#, (n + round) % 4),
                    )
                    .unwrap();
                }
            });
        }
    });
    let item = store.get(&path("/order-1")).unwrap().unwrap();
    let status = item.value.to_value()["status"].as_str().unwrap().to_owned();
    for s in 0..4 {
        let alias = path(&format!("/status-s{s}/order-1"));
        let found = store.get(&alias).unwrap();
        assert_eq!(
            found.is_some(),
            format!("s{s}") == status,
            "{alias} with status {status}"
        );
    }
}

/// A template added to a namespace with items is built: reads through it wait (503) while
/// writes already keep it (gets, listings, history and versions alike); a duplicate stops the build in conflict, listing both items, until
/// it is fixed and retried; a removed template's aliases go.
pub fn alias_builds<H: Harness>(harness: &H) {
    let (_clock, store) = open_manual(harness);
    for n in 1..=30 {
        put(
            &store,
            &format!("/user-{n}"),
            &format!(r#"{{"email":"u{n}@x.org"}}"#),
        )
        .unwrap();
    }
    put(&store, "/user-31", r#"{"email":"u1@x.org"}"#).unwrap();
    put(&store, "/note-1", r#"{"email":"not a user"}"#).unwrap();
    store
        .define_namespace("user", with_aliases(&["/email-{email}"]), None)
        .unwrap();
    let builds = store.alias_builds("user").unwrap();
    assert_eq!(
        (builds.len(), builds[0].state, builds[0].template.as_str()),
        (1, AliasState::Building, "/email-{email}")
    );
    // Reading through it waits; writing keeps it already.
    assert!(matches!(
        store.get(&path("/email-u2@x.org")),
        Err(Error::AliasBuilding { .. })
    ));
    assert!(matches!(
        store.list(&ListRequest::new(path("/email-u2@x.org"))),
        Err(Error::AliasBuilding { .. })
    ));
    // History and a version through it answer as a get does.
    assert!(matches!(
        store.history(&path("/email-u2@x.org"), 10),
        Err(Error::AliasBuilding { .. })
    ));
    assert!(matches!(
        store.get_version(&path("/email-u2@x.org"), 1),
        Err(Error::AliasBuilding { .. })
    ));
    put(&store, "/user-40", r#"{"email":"new@x.org"}"#).unwrap();
    assert!(put(&store, "/user-41", r#"{"email":"new@x.org"}"#).is_err());
    // Two users share u1@x.org: the build stops, naming both.
    store.run_alias_builds().unwrap();
    let build = &store.alias_builds("user").unwrap()[0];
    assert_eq!(build.state, AliasState::Conflict, "{build:?}");
    assert_eq!(build.conflicts.len(), 1);
    let mut items: Vec<String> = build.conflicts[0]
        .items
        .iter()
        .map(ToString::to_string)
        .collect();
    items.sort();
    assert_eq!(items, ["/user-1", "/user-31"]);
    assert_eq!(build.conflicts[0].alias, path("/email-u1@x.org"));
    // Fixed and retried: ready, every alias right.
    put(&store, "/user-31", r#"{"email":"u31@x.org"}"#).unwrap();
    store.retry_alias_build("user", "/email-{email}").unwrap();
    store.run_alias_builds().unwrap();
    let build = &store.alias_builds("user").unwrap()[0];
    assert_eq!(build.state, AliasState::Ready, "{build:?}");
    assert_eq!(build.checked, 32);
    for n in (1..=31).chain([40]) {
        let item = store
            .get(&path(&format!("/email-u{n}@x.org")))
            .unwrap()
            .map(|i| i.path);
        let expected = (n != 40).then(|| path(&format!("/user-{n}")));
        assert_eq!(item, expected, "u{n}");
    }
    assert_eq!(
        store.get(&path("/email-new@x.org")).unwrap().unwrap().path,
        path("/user-40")
    );
    let through = store.get_version(&path("/email-u2@x.org"), 1).unwrap();
    assert_eq!(through.map(|i| i.path), Some(path("/user-2")));
    assert!(store.get(&path("/email-not a user")).unwrap().is_none());
    // Removed: its aliases are gone (reads at once, records when the removal has run).
    store
        .define_namespace("user", with_aliases(&[]), None)
        .unwrap();
    assert!(store.get(&path("/email-u2@x.org")).unwrap().is_none());
    // Its alias records are still there: history and versions through them find nothing, as
    // a get does.
    assert_eq!(
        store.get_version(&path("/email-u2@x.org"), 1).unwrap(),
        None
    );
    assert!(
        store
            .history(&path("/email-u2@x.org"), 10)
            .unwrap()
            .is_empty()
    );
    store.run_alias_builds().unwrap();
    assert!(store.alias_builds("user").unwrap().is_empty());
    assert!(store.get(&path("/email-u2@x.org")).unwrap().is_none());
    put(&store, "/email-u2@x.org", "{}").unwrap();
    // A removed and re-added template is built again.
    store
        .define_namespace("user", with_aliases(&["/mail-{email}"]), None)
        .unwrap();
    store.run_alias_builds().unwrap();
    assert_eq!(
        store.get(&path("/mail-u3@x.org")).unwrap().unwrap().path,
        path("/user-3")
    );
}

/// The corners: an item whose member does not fit a template added later still loses its
/// other aliases when deleted; two operations that meet on one item through an alias; an
/// alias that would land on an item written in the same commit, or on the item's own path; a
/// template that replaces another giving the same paths; a template added again while its
/// removal runs.
pub fn alias_corner_cases<H: Harness>(harness: &H) {
    let (_clock, store) = open_manual(harness);
    define(&store, "user", &["/email-{email}"]);
    put(
        &store,
        "/user-1",
        r#"{"email": "a@x.org", "tag": ["not", "an", "id"]}"#,
    )
    .unwrap();
    define(&store, "user", &["/email-{email}", "/tag-{tag}"]);
    // Its tag fits no alias, but its email alias goes with it.
    store.delete(&path("/user-1"), None).unwrap();
    assert!(store.get(&path("/email-a@x.org")).unwrap().is_none());
    put(&store, "/user-2", r#"{"email": "a@x.org"}"#).unwrap();
    define(&store, "user", &["/email-{email}"]);

    // Two operations on one item, one through its alias: refused whole.
    let mut tx = Transaction::new();
    tx.ops.push(TxOp::Patch {
        path: path("/email-a@x.org"),
        patch: Patch::Merge(serde_json::json!({"email": "b@x.org"})),
        create: false,
        options: PutOptions::default(),
    });
    tx.ops.push(TxOp::Delete {
        path: path("/user-2"),
        condition: None,
    });
    assert!(matches!(store.transact(tx), Err(Error::InvalidRequest(_))));
    assert_eq!(
        store.get(&path("/email-a@x.org")).unwrap().unwrap().path,
        path("/user-2")
    );
    // A read through the alias, then a write of the item: one commit.
    let written = store
        .transaction(|tx| {
            let item = tx
                .get(&path("/email-a@x.org"))?
                .expect("read through the alias");
            tx.put(&item.path, json(r#"{"email": "a@x.org", "n": 1}"#));
            Ok(item.path)
        })
        .unwrap();
    assert_eq!(written, path("/user-2"));
    assert_eq!(store.get(&path("/user-2")).unwrap().unwrap().version, 2);

    // An alias where the same commit stores an item, either way round; nothing is written.
    let mut tx = Transaction::new();
    tx.ops.push(TxOp::Put {
        path: path("/email-c@x.org"),
        value: json("{}"),
        options: PutOptions::default(),
    });
    tx.ops.push(TxOp::Put {
        path: path("/user-3"),
        value: json(r#"{"email": "c@x.org"}"#),
        options: PutOptions::default(),
    });
    assert!(matches!(
        store.transact(tx),
        Err(Error::AliasTaken { index: 1, .. })
    ));
    let mut tx = Transaction::new();
    tx.ops.push(TxOp::Put {
        path: path("/user-3"),
        value: json(r#"{"email": "c@x.org"}"#),
        options: PutOptions::default(),
    });
    tx.ops.push(TxOp::Put {
        path: path("/email-c@x.org"),
        value: json("{}"),
        options: PutOptions::default(),
    });
    assert!(matches!(store.transact(tx), Err(Error::PathIsAlias { .. })));
    assert!(store.get(&path("/user-3")).unwrap().is_none());
    assert!(store.get(&path("/email-c@x.org")).unwrap().is_none());
    // A template that gives an item its own path.
    define(&store, "self", &["/self-{@self}"]);
    assert!(matches!(
        put(&store, "/self-1", "{}"),
        Err(Error::AliasTaken { holder, .. }) if holder == path("/self-1")
    ));
    assert!(store.get(&path("/self-1")).unwrap().is_none());

    // A template renamed its member but gives the same paths: the alias stays, naming it.
    put(
        &store,
        "/user-4",
        r#"{"email": "d@x.org", "mail": "d@x.org"}"#,
    )
    .unwrap();
    store
        .define_namespace("user", with_aliases(&["/email-{mail}"]), None)
        .unwrap();
    // Added again while its removal runs: refused.
    assert!(matches!(
        store.define_namespace("user", with_aliases(&["/email-{email}"]), None),
        Err(Error::InvalidRequest(_))
    ));
    store.run_alias_builds().unwrap();
    assert_eq!(
        store.get(&path("/email-d@x.org")).unwrap().unwrap().path,
        path("/user-4")
    );
    put(&store, "/user-4", r#"{"mail": "e@x.org"}"#).unwrap();
    assert!(store.get(&path("/email-d@x.org")).unwrap().is_none());
    assert_eq!(
        store.get(&path("/email-e@x.org")).unwrap().unwrap().path,
        path("/user-4")
    );
    // An alias path over the key limits is refused like a key.
    let long = "x".repeat(3000);
    assert!(matches!(
        put(&store, "/user-5", &format!(r#"{{"mail": "{long}"}}"#)),
        Err(Error::KeyTooLarge { .. })
    ));
}
