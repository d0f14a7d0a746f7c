//! Filters (docs/filters.md): filtered listings, counts and feeds against a model that evaluates
//! each generated filter itself, and listing checks that fail only when a filter's result
//! changed.

use super::{Harness, Rng, open_manual, path};
use pathdb_keys::{Id, KeyPath};
use pathdb_store::backend::Backend;
use pathdb_store::{
    Change, Error, Expiry, Fields, Filter, Json, ListEntry, ListRequest, PutOptions, Store,
    Transaction, TxResult,
};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

/// A CEL value's fate in the model: CEL's errors (a missing member, a type mismatch) are
/// values of their own, which `&&` and `||` absorb where the other side decides.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tri {
    True,
    False,
    Error,
}

impl Tri {
    fn of(b: bool) -> Tri {
        if b { Tri::True } else { Tri::False }
    }
}

/// An item as the model's filters see it.
struct Seen<'a> {
    path: &'a KeyPath,
    value: &'a Value,
    version: u64,
}

/// A generated filter: its CEL text and the model's own evaluation of it.
struct Generated {
    text: String,
    eval: Box<dyn Fn(&Seen<'_>) -> Tri>,
}

fn member<'a>(value: &'a Value, name: &str) -> Option<&'a Value> {
    value.as_object()?.get(name)
}

/// CEL's `==` between a JSON member and a literal: numbers by value, other types never equal.
fn cel_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// One comparison, membership or function on the item: the leaves of the filters.
fn leaf(rng: &mut Rng) -> Generated {
    let statuses = ["open", "closed", "held"];
    match rng.below(12) {
        0 => {
            let s = statuses[rng.below(3) as usize];
            Generated {
                text: format!("value.status == \"{s}\""),
                eval: Box::new(move |i| match member(i.value, "status") {
                    None => Tri::Error,
                    Some(v) => Tri::of(cel_eq(v, &json!(s))),
                }),
            }
        }
        1 | 2 => {
            let n = rng.below(300) as i64;
            let (op, cmp): (&str, fn(f64, f64) -> bool) = match rng.below(4) {
                0 => (">", |a, b| a > b),
                1 => ("<", |a, b| a < b),
                2 => (">=", |a, b| a >= b),
                _ => ("<=", |a, b| a <= b),
            };
            Generated {
                text: format!("value.total {op} {n}"),
                eval: Box::new(move |i| match member(i.value, "total") {
                    Some(Value::Number(x)) => {
                        Tri::of(cmp(x.as_f64().unwrap_or(f64::NAN), n as f64))
                    }
                    // A string, null or a missing member cannot be ordered against a number.
                    _ => Tri::Error,
                }),
            }
        }
        3 => {
            let (a, b) = (
                statuses[rng.below(3) as usize],
                statuses[rng.below(3) as usize],
            );
            Generated {
                text: format!("value.status in [\"{a}\", \"{b}\"]"),
                eval: Box::new(move |i| match member(i.value, "status") {
                    None => Tri::Error,
                    Some(v) => Tri::of(cel_eq(v, &json!(a)) || cel_eq(v, &json!(b))),
                }),
            }
        }
        4 => {
            let name = ["tags", "status", "total", "author"][rng.below(4) as usize];
            Generated {
                text: format!("has(value.{name})"),
                eval: Box::new(move |i| Tri::of(member(i.value, name).is_some())),
            }
        }
        5 => {
            let tag = ["a", "b", "c"][rng.below(3) as usize];
            Generated {
                text: format!("\"{tag}\" in value.tags"),
                eval: Box::new(move |i| match member(i.value, "tags") {
                    Some(Value::Array(tags)) => Tri::of(tags.iter().any(|t| t == tag)),
                    _ => Tri::Error,
                }),
            }
        }
        6 => {
            let start = format!("t{}", 1 + rng.below(3));
            Generated {
                text: format!("value.title.startsWith(\"{start}\")"),
                eval: Box::new(move |i| match member(i.value, "title") {
                    Some(Value::String(t)) => Tri::of(t.starts_with(&start)),
                    _ => Tri::Error,
                }),
            }
        }
        7 => {
            let part = format!("{}", rng.below(10));
            Generated {
                text: format!("value.title.contains(\"{part}\")"),
                eval: Box::new(move |i| match member(i.value, "title") {
                    Some(Value::String(t)) => Tri::of(t.contains(&part)),
                    _ => Tri::Error,
                }),
            }
        }
        8 => {
            let n = rng.below(3);
            Generated {
                text: format!("size(value.tags) > {n}"),
                eval: Box::new(move |i| match member(i.value, "tags") {
                    Some(Value::Array(tags)) => Tri::of(tags.len() as u64 > n),
                    Some(Value::String(s)) => Tri::of(s.chars().count() as u64 > n),
                    _ => Tri::Error,
                }),
            }
        }
        9 => {
            let k = rng.below(40) as i64;
            Generated {
                text: format!("ids.o > {k}"),
                eval: Box::new(move |i| match id_of(i.path, "o") {
                    Some(id) => Tri::of(id > k),
                    None => Tri::Error,
                }),
            }
        }
        10 => {
            let name = format!("n{}", rng.below(4));
            Generated {
                text: format!("value.author.name == \"{name}\""),
                eval: Box::new(move |i| match member(i.value, "author") {
                    Some(author @ Value::Object(_)) => match member(author, "name") {
                        Some(v) => Tri::of(cel_eq(v, &json!(name))),
                        None => Tri::Error,
                    },
                    // A member of a value that is not a map: no such overload.
                    _ => Tri::Error,
                }),
            }
        }
        _ => {
            let v = 1 + rng.below(3);
            Generated {
                text: format!("version > {v}"),
                eval: Box::new(move |i| Tri::of(i.version > v)),
            }
        }
    }
}

/// The deepest id of namespace `ns` in `path`, if an integer.
fn id_of(path: &KeyPath, ns: &str) -> Option<i64> {
    path.elements()
        .iter()
        .rev()
        .find(|e| e.namespace().as_str() == ns)
        .and_then(|e| match e.id() {
            Some(Id::Int(n)) => i64::try_from(n.get()).ok(),
            _ => None,
        })
}

/// A filter of leaves joined by `&&`, `||` and `!`, up to `depth` levels.
fn generate(rng: &mut Rng, depth: u32) -> Generated {
    if depth == 0 || rng.below(3) == 0 {
        return leaf(rng);
    }
    match rng.below(3) {
        0 => {
            let inner = generate(rng, depth - 1);
            Generated {
                text: format!("!({})", inner.text),
                eval: Box::new(move |i| match (inner.eval)(i) {
                    Tri::True => Tri::False,
                    Tri::False => Tri::True,
                    Tri::Error => Tri::Error,
                }),
            }
        }
        and => {
            let (a, b) = (generate(rng, depth - 1), generate(rng, depth - 1));
            let and = and == 1;
            Generated {
                text: format!(
                    "({}) {} ({})",
                    a.text,
                    if and { "&&" } else { "||" },
                    b.text
                ),
                eval: Box::new(move |i| {
                    let (x, y) = ((a.eval)(i), (b.eval)(i));
                    let (absorbing, other) = if and {
                        (Tri::False, Tri::True)
                    } else {
                        (Tri::True, Tri::False)
                    };
                    if x == absorbing || y == absorbing {
                        absorbing
                    } else if x == Tri::Error || y == Tri::Error {
                        Tri::Error
                    } else {
                        other
                    }
                }),
            }
        }
    }
}

/// A random order: a status, a total of any JSON type, tags, a title and an author, each
/// sometimes missing.
fn random_order(rng: &mut Rng) -> Value {
    let mut v = serde_json::Map::new();
    if rng.below(6) > 0 {
        let s = ["open", "closed", "held"][rng.below(3) as usize];
        v.insert("status".into(), s.into());
    } else if rng.below(2) == 0 {
        v.insert("status".into(), json!(7));
    }
    match rng.below(8) {
        0 => {}
        1 => {
            v.insert("total".into(), json!("lots"));
        }
        2 => {
            v.insert("total".into(), Value::Null);
        }
        3 => {
            v.insert("total".into(), json!(rng.below(300) as f64 + 0.5));
        }
        _ => {
            v.insert("total".into(), json!(rng.below(300)));
        }
    }
    match rng.below(4) {
        0 => {}
        1 => {
            v.insert("tags".into(), json!("ab"));
        }
        _ => {
            let tags: Vec<&str> = ["a", "b", "c"]
                .into_iter()
                .filter(|_| rng.below(2) == 0)
                .collect();
            v.insert("tags".into(), json!(tags));
        }
    }
    if rng.below(5) > 0 {
        v.insert("title".into(), format!("t{}", rng.below(40)).into());
    }
    match rng.below(4) {
        0 => {}
        1 => {
            v.insert("author".into(), json!("anonymous"));
        }
        _ => {
            v.insert(
                "author".into(),
                json!({"name": format!("n{}", rng.below(4))}),
            );
        }
    }
    Value::Object(v)
}

fn put_value<B: Backend>(
    store: &Store<B>,
    at: &KeyPath,
    value: &Value,
    options: PutOptions,
) -> u64 {
    store
        .put(at, Json::from_value(value), options)
        .unwrap_or_else(|e| panic!("put {at}: {e}"))
        .version
}

/// The items of a listing paged to its end, checking each page against its limits.
fn page_through<B: Backend>(store: &Store<B>, request: &ListRequest) -> Vec<ListEntry> {
    let mut request = request.clone();
    let mut out = Vec::new();
    for _ in 0..100_000 {
        let page = store
            .list(&request)
            .unwrap_or_else(|e| panic!("list {request:?}: {e}"));
        assert!(page.items.len() <= request.limit, "a page over its limit");
        assert!(
            page.scanned <= request.max_scan,
            "a page read past max_scan"
        );
        assert!(page.items.len() <= page.scanned, "more items than read");
        out.extend(page.items);
        match page.next_page_token {
            Some(token) => request.page_token = Some(token),
            None => return out,
        }
    }
    panic!("a listing that never ends");
}

/// A filtered listing, paged by small limits and small scan budgets in both directions, of a
/// subtree and of children, with bounds, holds exactly the items the model's evaluation of 60
/// generated filters keeps, in key order; a count agrees; a filtered page token is refused with
/// another filter; a projection keeps only its members.
pub fn filtered_listings_against_a_model<H: Harness>(harness: &H) {
    let (_clock, store) = open_manual(harness);
    let store: &Store<H::Backend> = &store;
    let mut rng = Rng(0xf117_e125);
    let mut model: BTreeMap<KeyPath, (Value, u64)> = BTreeMap::new();
    let mut write = |at: KeyPath, rng: &mut Rng| {
        let value = random_order(rng);
        let version = put_value(store, &at, &value, PutOptions::default());
        model.insert(at, (value, version));
    };
    write(path("/u-1"), &mut rng);
    for _ in 0..48 {
        let o = 1 + rng.below(40);
        let at = if rng.below(4) == 0 {
            path(&format!("/u-1/o-{o}/l-{}", 1 + rng.below(3)))
        } else {
            path(&format!("/u-1/o-{o}"))
        };
        write(at, &mut rng);
    }
    // Outside the listings: never listed, never counted.
    write(path("/u-2/o-1"), &mut rng);
    write(path("/u-1/p-1"), &mut rng);

    let prefix = path("/u-1/o");
    for n in 0..60 {
        let generated = generate(&mut rng, 3);
        let filter =
            Filter::compile(&generated.text).unwrap_or_else(|e| panic!("{}: {e}", generated.text));
        let children = n % 4 == 3;
        let reverse = rng.below(2) == 0;
        let bound = (rng.below(3) == 0).then(|| path(&format!("/u-1/o-{}", 1 + rng.below(40))));
        let mut request = ListRequest::new(prefix.clone()).filter(filter.clone());
        request.children_only = children;
        request.reverse = reverse;
        request.limit = 1 + rng.below(4) as usize;
        request.max_scan = [1, 2, 3, 5, 50][rng.below(5) as usize];
        request.gte = bound.clone();
        let expected: Vec<String> = model
            .iter()
            .filter(|(at, _)| prefix.covers(at) && (!children || at.len() == 2))
            .filter(|(at, _)| bound.as_ref().is_none_or(|b| *at >= b))
            .filter(|(at, (value, version))| {
                let seen = Seen {
                    path: at,
                    value,
                    version: *version,
                };
                (generated.eval)(&seen) == Tri::True
            })
            .map(|(at, _)| at.to_string())
            .collect();
        let mut expected = expected;
        if reverse {
            expected.reverse();
        }
        let listed: Vec<String> = page_through(store, &request)
            .iter()
            .map(|e| match e {
                ListEntry::Item(item) => item.path.to_string(),
                ListEntry::Node(node) => panic!("a filtered listing holds node {node}"),
            })
            .collect();
        assert_eq!(
            listed, expected,
            "filter {:?} (children {children}, reverse {reverse}, limit {}, max_scan {}, gte {bound:?})",
            generated.text, request.limit, request.max_scan
        );
        // A count of the same range, in budgets of a few items.
        let mut counting = request.clone();
        counting.max_scan = 7;
        let mut count = 0;
        loop {
            let page = store.count(&counting).expect("count");
            assert!(page.scanned <= counting.max_scan);
            count += page.count;
            match page.next_page_token {
                Some(token) => counting.page_token = Some(token),
                None => break,
            }
        }
        assert_eq!(count, expected.len(), "count of {:?}", generated.text);
    }

    // A page token is the filter's: another filter, or none, refuses it.
    let mut request = ListRequest::new(prefix.clone())
        .filter(Filter::compile("has(value.status)").expect("compiles"));
    request.limit = 1;
    let token = store
        .list(&request)
        .expect("list")
        .next_page_token
        .expect("more than one order has a status");
    for other in [Some("has(value.total)"), None] {
        let mut next = ListRequest::new(prefix.clone());
        next.filter = other.map(|f| Filter::compile(f).expect("compiles"));
        next.page_token = Some(token.clone());
        match store.list(&next) {
            Err(Error::InvalidPageToken(_)) => {}
            r => panic!("a token of another filter ({other:?}) must be refused, got {r:?}"),
        }
    }
    // A projection keeps the members asked for, and no others.
    let mut request = ListRequest::new(prefix.clone())
        .filter(Filter::compile("has(value.author) && has(value.author.name)").expect("compiles"))
        .fields(Fields::parse("author.name,missing").expect("fields"));
    request.limit = 1000;
    for entry in page_through(store, &request) {
        let item = entry.into_item().expect("an item");
        let value = item.value.to_value();
        let name = &model[&item.path].0["author"]["name"];
        assert_eq!(value, json!({"author": {"name": name}}), "{}", item.path);
    }
}

/// What a filtered feed must tell of one write, given the item's value before and after it.
fn expected_event(
    filter: &Generated,
    at: &KeyPath,
    before: Option<&(Value, u64)>,
    after: Option<&(Value, u64)>,
) -> Option<String> {
    let matches = |state: Option<&(Value, u64)>| {
        state.is_some_and(|(value, version)| {
            let seen = Seen {
                path: at,
                value,
                version: *version,
            };
            (filter.eval)(&seen) == Tri::True
        })
    };
    match (matches(before), matches(after)) {
        (_, true) => Some(format!("put {at} v{}", after.map_or(0, |a| a.1))),
        (true, false) => Some(format!("left {at}")),
        (false, false) => None,
    }
}

/// A filtered feed through random puts, patches, deletes, moves and expiries tells each item
/// entering, changing in and leaving the filter's result exactly once, in commit order, and
/// nothing of an item the filter matched neither before nor after a change; read in small
/// pages, resumed by token.
pub fn filtered_feeds_against_a_model<H: Harness>(harness: &H) {
    let (clock, store) = open_manual(harness);
    let mut rng = Rng(0xfeed_f11e);
    let group = path("/u-1");
    let filters: Vec<Generated> = (0..12).map(|_| generate(&mut rng, 2)).collect();
    let compiled: Vec<Filter> = filters
        .iter()
        .map(|g| Filter::compile(&g.text).expect("compiles"))
        .collect();
    let start = store.changes_token(&group).expect("a token");
    // The model: live items, and the writes in commit order (path, before, after).
    let mut live: BTreeMap<KeyPath, (Value, u64)> = BTreeMap::new();
    type Step = (KeyPath, Option<(Value, u64)>, Option<(Value, u64)>);
    let mut steps: Vec<Step> = Vec::new();
    let at = |o: u64| path(&format!("/u-1/o-{o}"));
    for _ in 0..90 {
        let o = 1 + rng.below(10);
        let target = at(o);
        let before = live.get(&target).cloned();
        match rng.below(6) {
            0 | 1 => {
                let value = random_order(&mut rng);
                let version = put_value(&store, &target, &value, PutOptions::default());
                live.insert(target.clone(), (value, version));
            }
            2 if before.is_some() => {
                let status = ["open", "held"][rng.below(2) as usize];
                let patch = json!({"total": rng.below(300), "status": status});
                let item = store
                    .patch(
                        &target,
                        pathdb_store::Patch::Merge(patch.clone()),
                        PutOptions::default(),
                        false,
                    )
                    .expect("patch");
                let mut value = before.clone().expect("live").0;
                if let (Some(v), Some(p)) = (value.as_object_mut(), patch.as_object()) {
                    for (k, x) in p {
                        v.insert(k.clone(), x.clone());
                    }
                }
                live.insert(target.clone(), (value, item.version));
            }
            3 if before.is_some() => {
                store.delete(&target, None).expect("delete");
                live.remove(&target);
            }
            4 if before.is_some() => {
                let Some(free) = (11..20).map(at).find(|p| !live.contains_key(p)) else {
                    continue;
                };
                store
                    .move_subtree(&target, &free, &mut |_| {})
                    .expect("move");
                let (value, _) = live.remove(&target).expect("live");
                // A moved item keeps its version (above any the destination used: never here).
                let moved = store.get(&free).expect("get").expect("moved");
                steps.push((target.clone(), before.clone(), None));
                live.insert(free.clone(), (value, moved.version));
                steps.push((free.clone(), None, live.get(&free).cloned()));
                continue;
            }
            5 => {
                // A put that expires, then time passes and the sweeper removes it.
                let value = random_order(&mut rng);
                let expiring = PutOptions {
                    expires: Some(Expiry::After(Duration::from_secs(1))),
                    ..PutOptions::default()
                };
                let version = put_value(&store, &target, &value, expiring);
                steps.push((target.clone(), before, Some((value.clone(), version))));
                clock.advance(Duration::from_secs(2));
                store.sweep_expired().expect("sweep");
                live.remove(&target);
                steps.push((target.clone(), Some((value, version)), None));
                continue;
            }
            _ => continue,
        }
        steps.push((target.clone(), before, live.get(&target).cloned()));
    }
    for (filter, generated) in compiled.iter().zip(&filters) {
        let expected: Vec<String> = steps
            .iter()
            .filter_map(|(at, before, after)| {
                expected_event(generated, at, before.as_ref(), after.as_ref())
            })
            .collect();
        let mut told = Vec::new();
        let mut since = start;
        let limit = 1 + (rng.below(3) as usize);
        loop {
            let page = store
                .changes_filtered(&group, Some(&since), limit, Some((filter, None)))
                .unwrap_or_else(|e| panic!("feed of {:?}: {e}", generated.text));
            for entry in &page.changes {
                told.push(match (&entry.change, entry.left) {
                    (Change::Put(item), false) => format!("put {} v{}", item.path, item.version),
                    (Change::Delete { path, .. }, true) => format!("left {path}"),
                    (other, left) => panic!("a filtered feed told {other:?} (left: {left})"),
                });
            }
            if page.changes.is_empty() && page.next_token == since {
                break;
            }
            since = page.next_token;
        }
        assert_eq!(told, expected, "the feed of {:?}", generated.text);
    }
}

/// A filtered listing's check: a write to an item the filter matches neither before nor after
/// does not fail it; an item entering, changing in or leaving the result does, each.
pub fn filtered_list_checks<H: Harness>(harness: &H) {
    let (clock, store) = open_manual(harness);
    let store: &Store<H::Backend> = &store;
    let open = |total: i64| json!({"status": "open", "total": total});
    let closed = |total: i64| json!({"status": "closed", "total": total});
    for (o, value) in [
        (1, open(10)),
        (2, closed(20)),
        (3, open(30)),
        (4, closed(40)),
    ] {
        put_value(
            store,
            &path(&format!("/u-1/o-{o}")),
            &value,
            PutOptions::default(),
        );
    }
    let request = ListRequest::new(path("/u-1/o"))
        .filter(Filter::compile(r#"value.status == "open""#).expect("compiles"));
    // Past the margin a listing token starts back on DynamoDB (docs/changes.md).
    clock.advance(Duration::from_secs(11));
    let check = || {
        let page = store.list(&request).expect("list");
        request.check(page.changes_token.expect("a first page's token"))
    };
    let commit = |check: &pathdb_store::ListCheck| {
        store
            .transact(Transaction::new().check_list(check.clone()))
            .map(|r| assert_eq!(r, [TxResult::Checked]))
    };
    let changed = |result: Result<(), Error>, at: &str| match result {
        Err(Error::ListChanged { path, .. }) => assert_eq!(path.to_string(), at),
        other => panic!("the check must fail on {at}, got {other:?}"),
    };
    let put = |o: u64, value: Value| {
        put_value(
            store,
            &path(&format!("/u-1/o-{o}")),
            &value,
            PutOptions::default(),
        );
    };

    // Writes that leave the result as it was: no conflict.
    let held = check();
    put(2, closed(21));
    put(5, closed(50));
    store.delete(&path("/u-1/o-4"), None).expect("delete");
    put(4, json!({"total": "none"}));
    commit(&held).expect("no matching item entered, changed or left");
    // The same check without the filter fails on the first of those writes.
    let mut unfiltered = held.clone();
    unfiltered.filter = None;
    changed(commit(&unfiltered), "/u-1/o-2");

    // Entering.
    let held = check();
    put(2, open(22));
    changed(commit(&held), "/u-1/o-2");
    // Changing while it matches.
    let held = check();
    put(3, open(31));
    changed(commit(&held), "/u-1/o-3");
    // Leaving, by a write.
    let held = check();
    put(1, closed(11));
    changed(commit(&held), "/u-1/o-1");
    // Leaving, by a delete.
    let held = check();
    store.delete(&path("/u-1/o-3"), None).expect("delete");
    changed(commit(&held), "/u-1/o-3");
    // Leaving, by expiry.
    let expiring = PutOptions {
        expires: Some(Expiry::After(Duration::from_secs(1))),
        ..PutOptions::default()
    };
    put_value(store, &path("/u-1/o-6"), &open(60), expiring);
    clock.advance(Duration::from_secs(11));
    let held = check();
    clock.advance(Duration::from_secs(2));
    store.sweep_expired().expect("sweep");
    changed(commit(&held), "/u-1/o-6");
}

/// Transactions stay exact with filters on: clients race to open an item while fewer than 3
/// are open, each deciding on a filtered listing inside its transaction (a filtered
/// `check_list` at commit), while others write items the filter does not match. No phantom gets
/// in: at most 3 are open at the end, each one a client was told it opened, and the feed holds every committed write once, each at a
/// version never used before at its path.
pub fn filtered_checks_admit_no_phantom<H: Harness>(harness: &H) {
    let (_clock, store) = open_manual(harness);
    let store: &Store<H::Backend> = &store;
    let group = path("/u-1");
    let token = store.changes_token(&group).expect("a token");
    let open = Filter::compile(r#"value.status == "open""#).expect("compiles");
    let request = ListRequest::new(path("/u-1/o")).filter(open.clone());
    let attempts = super::concurrency::race(|client| {
        let mut opened = 0;
        for round in 0..3u64 {
            let at = path(&format!("/u-1/o-{}", client as u64 * 10 + round));
            let done = store.transaction(|tx| {
                let page = tx.list(&request)?;
                let status = if page.items.len() < 3 {
                    "open"
                } else {
                    "closed"
                };
                tx.put(&at, Json::from_value(&json!({ "status": status })));
                Ok(status == "open")
            });
            match done {
                Ok(true) => opened += 1,
                Ok(false) => {}
                Err(e) if e.is_condition_failed() => {}
                Err(e) => panic!("a transaction failed: {e}"),
            }
        }
        opened
    });
    let mut all = ListRequest::new(path("/u-1/o")).filter(open);
    all.limit = 1000;
    let listed = page_through(store, &all);
    // Never more than 3 (no phantom), and each open a client was told committed is there.
    assert!((1..=3).contains(&listed.len()), "open items: {listed:?}");
    assert_eq!(
        attempts.iter().sum::<usize>(),
        listed.len(),
        "opened: {attempts:?}"
    );
    // Every committed write is in the feed once, at a version new at its path.
    let mut versions: BTreeMap<String, u64> = BTreeMap::new();
    let mut since = token;
    loop {
        let page = store.changes(&group, Some(&since), 1000).expect("feed");
        for entry in &page.changes {
            if let Change::Put(item) = &entry.change {
                let last = versions.insert(item.path.to_string(), item.version);
                assert!(
                    last.is_none_or(|v| v < item.version),
                    "{} reused a version",
                    item.path
                );
            }
        }
        if page.next_token == since {
            break;
        }
        since = page.next_token;
    }
}
