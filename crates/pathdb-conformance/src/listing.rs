//! Listing: subtrees at segment boundaries, typed order, children by seeking, bounds, reverse,
//! and page tokens.

use super::{Harness, list_all, open_manual, path, texts, value};
use pathdb_keys::{Id, KeyPath, Uuid};
use pathdb_store::backend::Backend;
use pathdb_store::{Error, Item, ListRequest, MAX_LIST_LIMIT, PutOptions, Store};
use std::collections::BTreeMap;

/// Writes `{"n": i}` at each path, one put each: workloads that are not about transactions
/// must also run where a stand-in server has none (dynalite).
fn put_all<B: Backend>(store: &Store<B>, paths: &[KeyPath]) {
    for (n, p) in paths.iter().enumerate() {
        store
            .put(p, value(n as i64), PutOptions::default())
            .unwrap();
    }
}

fn paths_of(texts: &[&str]) -> Vec<KeyPath> {
    texts.iter().map(|t| path(t)).collect()
}

/// What a listing must return, from the full set of live items: the typed meaning of the
/// request. A children listing holds each child that is an item or has items below it (a
/// node), at the child's own position.
pub(crate) fn expected_listing(all: &[KeyPath], request: &ListRequest) -> Vec<KeyPath> {
    let prefix = &request.prefix;
    let depth = prefix.len() + usize::from(prefix.last().id().is_some());
    let mut out: Vec<KeyPath> = all
        .iter()
        .filter(|p| p.group() == prefix.group() && prefix.covers(p))
        .filter_map(|p| match request.children_only {
            false => Some(p.clone()),
            true if p.len() < depth || p == prefix => None,
            true => Some(KeyPath::from_elements(p.elements()[..depth].to_vec()).unwrap()),
        })
        .filter(|p| request.gt.as_ref().is_none_or(|b| p > b))
        .filter(|p| request.gte.as_ref().is_none_or(|b| p >= b))
        .filter(|p| request.lt.as_ref().is_none_or(|b| p < b))
        .filter(|p| request.lte.as_ref().is_none_or(|b| p <= b))
        .collect();
    out.sort();
    out.dedup();
    if request.reverse {
        out.reverse();
    }
    out
}

fn request(prefix: &str, children_only: bool, reverse: bool, limit: usize) -> ListRequest {
    let mut r = ListRequest::new(path(prefix));
    r.children_only = children_only;
    r.reverse = reverse;
    r.limit = limit;
    r
}

fn listed_paths<B: Backend>(store: &Store<B>, request: &ListRequest) -> Vec<KeyPath> {
    list_all(store, request)
        .into_iter()
        .map(|e| e.path().clone())
        .collect()
}

/// Checks a request in both directions at several page sizes against [`expected_listing`].
fn check_listing<B: Backend>(store: &Store<B>, all: &[KeyPath], base: &ListRequest) {
    for reverse in [false, true] {
        for limit in [1, 2, 3, 1000] {
            let mut r = base.clone();
            r.reverse = reverse;
            r.limit = limit;
            assert_eq!(
                listed_paths(store, &r),
                expected_listing(all, &r),
                "listing {r:?}"
            );
        }
    }
}

/// A prefix lists its subtree at segment boundaries: `/u-1/p-1` never returns `/u-1/p-10`'s
/// items, `/u-1/p` is not `/u-1/posts`, `/u-1` is not `/u-10`; a path with no items lists
/// nothing.
pub fn prefix_is_segment_bounded<H: Harness>(harness: &H) {
    let (_clock, store) = open_manual(harness);
    let all = paths_of(&[
        "/u-1",
        "/u-1/p",
        "/u-1/p-1",
        "/u-1/p-1/c-1",
        "/u-1/p-1/c-1/d-1",
        "/u-1/p-1/c-10",
        "/u-1/p-2",
        "/u-1/p-10",
        "/u-1/p-10/c-1",
        "/u-1/p-100",
        "/u-1/p-1x",
        "/u-1/posts-1",
        "/u-10",
        "/u-10/p-1",
        "/u-11/p-1",
    ]);
    put_all(&store, &all);
    let cases: &[(&str, bool, &[&str])] = &[
        (
            "/u-1/p-1",
            false,
            &[
                "/u-1/p-1",
                "/u-1/p-1/c-1",
                "/u-1/p-1/c-1/d-1",
                "/u-1/p-1/c-10",
            ],
        ),
        ("/u-1/p-10", false, &["/u-1/p-10", "/u-1/p-10/c-1"]),
        ("/u-1/p-100", false, &["/u-1/p-100"]),
        ("/u-1/p-1/c-1", false, &["/u-1/p-1/c-1", "/u-1/p-1/c-1/d-1"]),
        (
            "/u-1/p",
            false,
            &[
                "/u-1/p",
                "/u-1/p-1",
                "/u-1/p-1/c-1",
                "/u-1/p-1/c-1/d-1",
                "/u-1/p-1/c-10",
                "/u-1/p-2",
                "/u-1/p-10",
                "/u-1/p-10/c-1",
                "/u-1/p-100",
                "/u-1/p-1x",
            ],
        ),
        (
            "/u-1",
            false,
            &[
                "/u-1",
                "/u-1/p",
                "/u-1/p-1",
                "/u-1/p-1/c-1",
                "/u-1/p-1/c-1/d-1",
                "/u-1/p-1/c-10",
                "/u-1/p-2",
                "/u-1/p-10",
                "/u-1/p-10/c-1",
                "/u-1/p-100",
                "/u-1/p-1x",
                "/u-1/posts-1",
            ],
        ),
        ("/u-10", false, &["/u-10", "/u-10/p-1"]),
        ("/u-1/posts", false, &["/u-1/posts-1"]),
        ("/u-1/p-3", false, &[]),
        ("/u-1/zz-1", false, &[]),
        ("/u-2", false, &[]),
        ("/u-1/p-1", true, &["/u-1/p-1/c-1", "/u-1/p-1/c-10"]),
        ("/u-1/p-10", true, &["/u-1/p-10/c-1"]),
        (
            "/u-1",
            true,
            &[
                "/u-1/p",
                "/u-1/p-1",
                "/u-1/p-2",
                "/u-1/p-10",
                "/u-1/p-100",
                "/u-1/p-1x",
                "/u-1/posts-1",
            ],
        ),
        (
            "/u-1/p",
            true,
            &[
                "/u-1/p-1",
                "/u-1/p-2",
                "/u-1/p-10",
                "/u-1/p-100",
                "/u-1/p-1x",
            ],
        ),
    ];
    for (prefix, children_only, expected) in cases {
        for reverse in [false, true] {
            let r = request(prefix, *children_only, reverse, 1000);
            let mut want: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
            if reverse {
                want.reverse();
            }
            let page = store.list(&r).unwrap();
            assert_eq!(texts(&page.items), want, "listing {r:?}");
            assert_eq!(page.next_page_token, None);
        }
    }
    check_listing(&store, &all, &request("/u-1", false, false, 1));
}

/// Items list in typed order: integers numerically (negative, zero, up to 2^64-1), descending
/// ids in reverse, strings by bytes, every integer before every string; the order of any mix of
/// types is the key paths' order.
pub fn typed_order<H: Harness>(harness: &H) {
    let (_clock, store) = open_manual(harness);
    let ordered: &[&[&str]] = &[
        &[
            "/o-1/n--18446744073709551615",
            "/o-1/n--5",
            "/o-1/n-0",
            "/o-1/n-7",
            "/o-1/n-300",
            "/o-1/n-18446744073709551615",
        ],
        &["/o-1/score-!1500", "/o-1/score-!20", "/o-1/score-!3"],
        &["/o-1/s-%1", "/o-1/s-a", "/o-1/s-ab", "/o-1/s-b"],
        &["/o-1/ds-!b", "/o-1/ds-!ab", "/o-1/ds-!a"],
        &["/o-1/m-2", "/o-1/m-10", "/o-1/m-a"],
    ];
    let mut all: Vec<KeyPath> = ordered.iter().flat_map(|g| paths_of(g)).collect();
    // Mixed types under one namespace: whatever the order, it is the key paths' order.
    all.extend(paths_of(&[
        "/o-1/x-2",
        "/o-1/x-a",
        "/o-1/x-~CgsM",
        "/o-1/x-!~CgsM",
        "/o-1/x-!4",
        "/o-1/x-!z",
        "/o-1/x-4c9d36e5-6b19-4e6a-828c-226ed667458a",
    ]));
    // Written in reverse, so the store's order owes nothing to insertion order.
    let mut shuffled = all.clone();
    shuffled.reverse();
    put_all(&store, &shuffled);
    for group in ordered {
        let first = path(group[0]);
        let namespace = first.last().namespace().as_str();
        let prefix = first.parent().unwrap().child_without_id(namespace).unwrap();
        let listed = store.list(&ListRequest::new(prefix)).unwrap();
        assert_eq!(texts(&listed.items), *group);
    }
    check_listing(&store, &all, &request("/o-1", false, false, 1));
    check_listing(&store, &all, &request("/o-1/x", false, false, 1));
}

/// Bytes and UUID ids can encode to the same segment bytes as an integer, a string or each
/// other; listings still return exactly the typed subtree or children of the prefix.
pub fn aliased_ids<H: Harness>(harness: &H) {
    let (_clock, store) = open_manual(harness);
    let uuid = Uuid::parse_str("4c9d36e5-6b19-4e6a-828c-226ed667458a").unwrap();
    let with_id = |ns: &str, id: Id| {
        KeyPath::builder()
            .push("a", 1)
            .push(ns, id)
            .build()
            .unwrap()
    };
    let uuid_path = with_id("p", Id::Uuid(uuid));
    let uuid_bytes_path = with_id("p", Id::Bytes(uuid.as_bytes().to_vec()));
    let mut all = paths_of(&[
        // int 3 encodes as 08 03, like the bytes [08, 03] (`~CAM`).
        "/a-1/p-3",
        "/a-1/p-3/c-1",
        "/a-1/p-~CAM",
        "/a-1/p-~CAM/c-1",
        "/a-1/p-~CAM/c-2",
        // The string "abc" and the bytes "abc" (`~YWJj`).
        "/a-1/p-abc",
        "/a-1/p-abc/x-1",
        "/a-1/p-~YWJj",
        "/a-1/p-~YWJj/x-2",
        // A child with no item of its own next to an aliased one that has one.
        "/a-1/q-3/c-1",
        "/a-1/q-~CAM",
        "/a-1/q-~CAM/c-1",
        "/a-1/r-~CAM",
        "/a-1/r-3/c-1",
        "/a-1/r-3/c-2",
    ]);
    all.push(uuid_path.clone());
    all.push(uuid_path.child("u", 1).unwrap());
    all.push(uuid_bytes_path.clone());
    all.push(uuid_bytes_path.child("u", 2).unwrap());
    put_all(&store, &all);
    for (n, p) in all.iter().enumerate() {
        let item = store.get(p).unwrap().unwrap();
        assert_eq!(item.value, value(n as i64), "{p}");
    }
    let mut prefixes = paths_of(&[
        "/a-1",
        "/a-1/p",
        "/a-1/q",
        "/a-1/r",
        "/a-1/p-3",
        "/a-1/p-~CAM",
        "/a-1/p-abc",
        "/a-1/p-~YWJj",
        "/a-1/q-3",
        "/a-1/q-~CAM",
        "/a-1/r-3",
    ]);
    prefixes.push(uuid_path.clone());
    prefixes.push(uuid_bytes_path.clone());
    for prefix in &prefixes {
        check_listing(&store, &all, &ListRequest::new(prefix.clone()));
        // Children: every item exactly. Aliased children that only have items below them share
        // one descendants range, which the listing seeks over after the first: it may show one
        // node for them (docs/tree.md), never a node that is not expected, never out of order.
        let mut r = ListRequest::new(prefix.clone());
        r.children_only = true;
        for reverse in [false, true] {
            for limit in [1, 2, 3, 1000] {
                r.reverse = reverse;
                r.limit = limit;
                let got = list_all(&store, &r);
                let expected = expected_listing(&all, &r);
                let items: Vec<&KeyPath> = got
                    .iter()
                    .filter_map(|e| e.item())
                    .map(|i| &i.path)
                    .collect();
                let want_items: Vec<&KeyPath> =
                    expected.iter().filter(|p| all.contains(p)).collect();
                assert_eq!(items, want_items, "items of {r:?}");
                let mut rest = expected.iter();
                for entry in &got {
                    assert!(
                        rest.any(|p| p == entry.path()),
                        "{entry:?} is not expected, or out of order, in {r:?}"
                    );
                }
            }
        }
    }
    store.delete(&path("/a-1/p-3"), None).unwrap();
    assert!(store.get(&path("/a-1/p-~CAM")).unwrap().is_some());
}

/// `children_only` returns the direct children of the prefix and nothing deeper, on a tree
/// whose children have deep and wide subtrees, children without an item of their own (not
/// listed), elements without id, for group, deeper and namespace-only prefixes, with bounds,
/// both directions and every page size.
pub fn children_only_deep_subtrees<H: Harness>(harness: &H) {
    let (_clock, store) = open_manual(harness);
    let mut all = paths_of(&[
        "/t-1",
        "/t-1/c",
        "/t-1/settings",
        "/t-1/c-x",
        "/t-1/r-!1",
        "/t-1/r-!2",
        "/t-1/c-5/d-0/e-0/f-0/g-0/h-0",
        "/t-1/c-5/d-0/e-0/f-0/g-0/h-0/settings",
        "/t-1/c-6/settings",
    ]);
    for child in 0..8 {
        if child != 3 {
            all.push(path(&format!("/t-1/c-{child}")));
        }
        for d in 0..child * 5 {
            all.push(path(&format!("/t-1/c-{child}/d-{d}")));
            if d % 2 == 0 {
                for e in 0..3 {
                    all.push(path(&format!("/t-1/c-{child}/d-{d}/e-{e}")));
                }
            }
        }
    }
    put_all(&store, &all);
    for prefix in [
        "/t-1",
        "/t-1/c",
        "/t-1/c-4",
        "/t-1/c-3",
        "/t-1/c-5/d-0",
        "/t-1/c-5/d-0/e-0",
        "/t-1/c-5/d-0/e-0/f-0/g-0/h-0",
        "/t-1/c-0",
        "/t-1/c-9",
        "/t-1/r",
    ] {
        check_listing(&store, &all, &request(prefix, true, false, 1));
    }
    let direct = listed_paths(&store, &request("/t-1", true, false, 1000));
    assert_eq!(
        direct.iter().map(ToString::to_string).collect::<Vec<_>>(),
        [
            "/t-1/c",
            "/t-1/c-0",
            "/t-1/c-1",
            "/t-1/c-2",
            // No item of its own, items below it: a node.
            "/t-1/c-3",
            "/t-1/c-4",
            "/t-1/c-5",
            "/t-1/c-6",
            "/t-1/c-7",
            "/t-1/c-x",
            "/t-1/r-!2",
            "/t-1/r-!1",
            "/t-1/settings",
        ]
    );
    let bounded = [
        (Some("/t-1/c-2/d-1"), None, None, Some("/t-1/c-6")),
        (None, Some("/t-1/c-2"), Some("/t-1/c-5/d-3"), None),
        (Some("/t-1/c-4"), None, Some("/t-1/c-7"), None),
        (None, Some("/t-1/c-3/d-0"), None, Some("/t-1/c-3/d-9")),
    ];
    for (gt, gte, lt, lte) in bounded {
        for prefix in ["/t-1", "/t-1/c", "/t-1/c-3"] {
            let mut r = request(prefix, true, false, 1);
            r.gt = gt.map(path);
            r.gte = gte.map(path);
            r.lt = lt.map(path);
            r.lte = lte.map(path);
            check_listing(&store, &all, &r);
        }
    }
}

/// Every combination of `gt`/`gte`/`lt`/`lte` (existing and absent paths, inside and outside
/// the prefix, deeper and shallower) gives the same items forward and, reversed, in reverse,
/// for subtree and children listings.
pub fn bounds_in_both_directions<H: Harness>(harness: &H) {
    let (_clock, store) = open_manual(harness);
    let mut all = paths_of(&["/b-1", "/b-1/k", "/b-1/z-1", "/b-1/a-1"]);
    for k in 0..12 {
        all.push(path(&format!("/b-1/k-{k}")));
        if k % 2 == 0 {
            all.push(path(&format!("/b-1/k-{k}/s-1")));
        }
    }
    put_all(&store, &all);
    let candidates = paths_of(&[
        "/b-1/k-3",
        "/b-1/k-4",
        "/b-1/k-4/s-1",
        "/b-1/k-4/s-0",
        "/b-1/k--1",
        "/b-1/k-100",
        "/b-1/k",
        "/b-1",
        "/b-1/zz-1",
    ]);
    let mut lowers: Vec<(Option<KeyPath>, Option<KeyPath>)> = vec![(None, None)];
    let mut uppers = lowers.clone();
    for c in &candidates {
        lowers.push((Some(c.clone()), None));
        lowers.push((None, Some(c.clone())));
        uppers.push((Some(c.clone()), None));
        uppers.push((None, Some(c.clone())));
    }
    // Both kinds at once: the tighter one applies.
    lowers.push((Some(path("/b-1/k-3")), Some(path("/b-1/k-5"))));
    uppers.push((Some(path("/b-1/k-9")), Some(path("/b-1/k-6"))));
    for (prefix, children_only) in [
        ("/b-1", false),
        ("/b-1", true),
        ("/b-1/k", false),
        ("/b-1/k", true),
        ("/b-1/k-4", false),
    ] {
        for (gt, gte) in &lowers {
            for (lt, lte) in &uppers {
                for reverse in [false, true] {
                    let mut r = request(prefix, children_only, reverse, 1000);
                    r.gt = gt.clone();
                    r.gte = gte.clone();
                    r.lt = lt.clone();
                    r.lte = lte.clone();
                    let page = store.list(&r).unwrap();
                    let got: Vec<KeyPath> = page.items.iter().map(|e| e.path().clone()).collect();
                    assert_eq!(got, expected_listing(&all, &r), "listing {r:?}");
                }
            }
        }
    }
}

/// Following page tokens stitches exactly the full result, forward and reverse, for subtree and
/// children listings with and without bounds, at every page size, also when the page size
/// changes between pages; a token continues in the other direction too, from the same position.
pub fn page_tokens_stitch<H: Harness>(harness: &H) {
    let (_clock, store) = open_manual(harness);
    let mut all = paths_of(&["/s-1", "/s-1/a", "/s-1/b-1", "/s-1/b-x"]);
    for a in 0..8 {
        all.push(path(&format!("/s-1/a-{a}")));
        for c in 0..(a % 4) {
            all.push(path(&format!("/s-1/a-{a}/c-{c}")));
            all.push(path(&format!("/s-1/a-{a}/c-{c}/d-!{c}")));
        }
    }
    all.push(path("/s-1/a-9/c-1"));
    put_all(&store, &all);
    let mut requests = vec![
        request("/s-1", false, false, 1),
        request("/s-1", true, false, 1),
        request("/s-1/a-2", false, false, 1),
        request("/s-1/a-3", true, false, 1),
        request("/s-1/a", true, false, 1),
    ];
    let mut bounded = request("/s-1", false, false, 1);
    bounded.gte = Some(path("/s-1/a-2/c-0"));
    bounded.lt = Some(path("/s-1/a-6"));
    requests.push(bounded.clone());
    bounded.children_only = true;
    requests.push(bounded);
    for base in &requests {
        let mut forward = base.clone();
        forward.limit = MAX_LIST_LIMIT;
        let full = listed_paths(&store, &forward);
        assert_eq!(full, expected_listing(&all, &forward));
        assert!(!full.is_empty());
        for reverse in [false, true] {
            let mut order = full.clone();
            if reverse {
                order.reverse();
            }
            for limit in 1..=6 {
                let mut r = base.clone();
                r.reverse = reverse;
                r.limit = limit;
                assert_eq!(listed_paths(&store, &r), order, "paging {r:?}");
            }
            // Page sizes that change from page to page, and a turn at every token.
            let mut r = base.clone();
            r.reverse = reverse;
            let mut seen: Vec<KeyPath> = Vec::new();
            for step in 0.. {
                r.limit = 1 + step % 3;
                let page = store.list(&r).unwrap();
                seen.extend(page.items.iter().map(|e| e.path().clone()));
                let Some(token) = page.next_page_token else {
                    break;
                };
                let mut turned = r.clone();
                turned.reverse = !reverse;
                turned.limit = MAX_LIST_LIMIT;
                turned.page_token = Some(token.clone());
                let back: Vec<KeyPath> = store
                    .list(&turned)
                    .unwrap()
                    .items
                    .iter()
                    .map(|e| e.path().clone())
                    .collect();
                let mut expected_back = seen[..seen.len() - 1].to_vec();
                expected_back.reverse();
                assert_eq!(back, expected_back, "turning {turned:?}");
                r.page_token = Some(token);
            }
            assert_eq!(seen, order, "paging with changing limits {r:?}");
        }
    }
}

fn int_id(p: &KeyPath) -> i64 {
    match p.last().id() {
        Some(Id::Int(v)) => i64::try_from(v.get()).unwrap(),
        other => panic!("{p} has no integer id: {other:?}"),
    }
}

/// Pages stay exact while writes happen between them: each page is the first `limit` items
/// after the token's position in the state at the time of that page (items inserted ahead
/// appear, items inserted behind do not, deleted items vanish, updates show), and the stitched
/// result never repeats an item or goes backwards.
pub fn page_tokens_with_writes_between_pages<H: Harness>(harness: &H) {
    for (prefix, children_only) in [("/w-1/i", false), ("/w-1", true)] {
        for reverse in [false, true] {
            let (_clock, store) = open_manual(harness);
            let mut model: BTreeMap<KeyPath, i64> = BTreeMap::new();
            let mut write = |store: &Store<_>, p: KeyPath, n: Option<i64>| {
                match n {
                    Some(n) => {
                        store.put(&p, value(n), PutOptions::default()).unwrap();
                        model.insert(p, n);
                    }
                    None => {
                        store.delete(&p, None).unwrap();
                        model.remove(&p);
                    }
                }
                model.clone()
            };
            let mut state = BTreeMap::new();
            for i in (0..40).step_by(2) {
                state = write(&store, path(&format!("/w-1/i-{i}")), Some(i));
            }
            let mut r = request(prefix, children_only, reverse, 3);
            let mut cursor: Option<KeyPath> = None;
            let mut stitched: Vec<KeyPath> = Vec::new();
            loop {
                let page = store.list(&r).unwrap();
                let listed: Vec<KeyPath> = state.keys().cloned().collect();
                let after: Vec<KeyPath> = expected_listing(&listed, &r)
                    .into_iter()
                    .filter(|p| {
                        cursor
                            .as_ref()
                            .is_none_or(|c| if reverse { p < c } else { p > c })
                    })
                    .collect();
                let got: Vec<(KeyPath, Item)> = page
                    .items
                    .iter()
                    .map(|e| (e.path().clone(), e.item().expect("no node here").clone()))
                    .collect();
                let want: Vec<KeyPath> = after.iter().take(3).cloned().collect();
                assert_eq!(
                    got.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>(),
                    want,
                    "page of {r:?}"
                );
                for (p, item) in &got {
                    assert_eq!(item.value, value(state[p]), "value of {p}");
                }
                stitched.extend(want);
                let Some(token) = page.next_page_token else {
                    assert!(after.len() <= 3, "a page ended the listing early");
                    break;
                };
                let last = got.last().unwrap().0.clone();
                let c = int_id(&last);
                let step = if reverse { -1 } else { 1 };
                // Ahead and behind the position, a delete and an update ahead, and (for a
                // children listing) a grandchild under the last child, which is no child.
                write(
                    &store,
                    path(&format!("/w-1/i-{}", c + step)),
                    Some(1000 + c),
                );
                write(
                    &store,
                    path(&format!("/w-1/i-{}", c - step)),
                    Some(2000 + c),
                );
                let ahead: Vec<KeyPath> = after.iter().skip(3).take(3).cloned().collect();
                if let Some(p) = ahead.first() {
                    write(&store, p.clone(), None);
                }
                if let Some(p) = ahead.get(1) {
                    write(&store, p.clone(), Some(3000 + c));
                }
                state = write(&store, last.child("g", 1).unwrap(), Some(4000 + c));
                r.page_token = Some(token);
                cursor = Some(last);
            }
            let mut sorted = stitched.clone();
            sorted.sort();
            if reverse {
                sorted.reverse();
            }
            sorted.dedup();
            assert_eq!(stitched, sorted, "stitched pages repeat or go backwards");
        }
    }
}

/// Deleted items leave tombstones that a listing reads and drops: a run of them longer than
/// one backend read (a page of n items reads n + 1 entries at a time, up to 256) is stepped
/// over, in both directions and at any page size, including a page that ends just before it.
pub fn dead_entries_between_pages<H: Harness>(harness: &H) {
    let (_clock, store) = open_manual(harness);
    let dead: Vec<KeyPath> = (2..14).map(|i| path(&format!("/t-1/a-{i}"))).collect();
    let live = paths_of(&["/t-1/a-0", "/t-1/a-1", "/t-1/a-14", "/t-1/a-15/b-1"]);
    put_all(&store, &live);
    put_all(&store, &dead);
    for p in &dead {
        store.delete(p, None).unwrap();
    }
    check_listing(&store, &live, &request("/t-1", false, false, 1));
    check_listing(&store, &live, &request("/t-1", true, false, 1));
}

/// Malformed tokens and tokens of another listing (prefix, group, children flag, bounds) are
/// [`Error::InvalidPageToken`]; a token survives a change of limit or direction; limits outside
/// 1..=[`MAX_LIST_LIMIT`] and bounds in another group are [`Error::InvalidRequest`]; a
/// malformed scan cursor is [`Error::InvalidPageToken`].
pub fn page_token_errors<H: Harness>(harness: &H) {
    let (_clock, store) = open_manual(harness);
    let all = paths_of(&[
        "/e-1/a-1",
        "/e-1/a-1/b-1",
        "/e-1/a-2",
        "/e-1/a-3",
        "/e-2/a-1",
    ]);
    put_all(&store, &all);
    let base = request("/e-1", false, false, 1);
    let token = store.list(&base).unwrap().next_page_token.unwrap();
    let invalid_token = |r: &ListRequest| {
        assert!(
            matches!(store.list(r), Err(Error::InvalidPageToken(_))),
            "{r:?} should fail with InvalidPageToken"
        );
    };
    use base64::Engine as _;
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let mut raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(&token)
        .unwrap();
    let mut tampered = raw.clone();
    tampered[3] ^= 0x40;
    raw[0] = raw[0].wrapping_add(1);
    for garbage in [
        String::new(),
        "!!!".to_owned(),
        "AAAA".to_owned(),
        b64(&[1, 0, 0, 0, 0, 0, 0, 0, 0]),
        b64(&raw),
        b64(&tampered),
        format!("{token}="),
        format!("{token} "),
    ] {
        let mut r = base.clone();
        r.page_token = Some(garbage);
        invalid_token(&r);
    }
    let other_listings = [
        request("/e-1/a-1", false, false, 1),
        request("/e-2", false, false, 1),
        request("/e-1", true, false, 1),
        {
            let mut r = base.clone();
            r.gt = Some(path("/e-1/a-1"));
            r
        },
        {
            let mut r = base.clone();
            r.lte = Some(path("/e-1/a-3"));
            r
        },
    ];
    for mut r in other_listings {
        r.page_token = Some(token.clone());
        invalid_token(&r);
    }
    let mut more = base.clone();
    more.page_token = Some(token.clone());
    more.limit = 10;
    assert_eq!(
        texts(&store.list(&more).unwrap().items),
        ["/e-1/a-1/b-1", "/e-1/a-2", "/e-1/a-3"]
    );
    more.reverse = true;
    assert_eq!(store.list(&more).unwrap().items, Vec::new());

    for limit in [0, MAX_LIST_LIMIT + 1, usize::MAX] {
        let r = request("/e-1", false, false, limit);
        assert!(matches!(store.list(&r), Err(Error::InvalidRequest(_))));
    }
    assert_eq!(
        store
            .list(&request("/e-1", false, false, MAX_LIST_LIMIT))
            .unwrap()
            .items
            .len(),
        4
    );
    for bound in ["/e-2/a-1", "/e-10", "/f-1/a-1"] {
        for kind in 0..4 {
            let mut r = base.clone();
            let b = Some(path(bound));
            match kind {
                0 => r.gt = b,
                1 => r.gte = b,
                2 => r.lt = b,
                _ => r.lte = b,
            }
            assert!(
                matches!(store.list(&r), Err(Error::InvalidRequest(_))),
                "bound {bound} in another group"
            );
        }
    }
    for cursor in ["", "!!!", "AP8", "AAE"] {
        assert!(
            matches!(
                store.scan(Some(cursor), 10),
                Err(Error::InvalidPageToken(_))
            ),
            "scan cursor {cursor:?}"
        );
    }
    // Errors wrote nothing.
    let everything = listed_paths(&store, &request("/e-1", false, false, 1000));
    assert_eq!(everything.len(), 4);
}
