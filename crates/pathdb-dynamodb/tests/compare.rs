//! Hundreds of random typed paths put through DynamoDB and the embedded store: every listing
//! (subtree and children, both directions, bounds, pages of 7) returns the same paths in the
//! same order.

use crate::{Dynamo, endpoint};
use pathdb_keys::{Desc, Id, Int, KeyPath};
use pathdb_store::backend::{Backend, InMemoryBackend};
use pathdb_store::{Json, ListRequest, PutOptions, Store, StoreOptions};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

fn id() -> impl Strategy<Value = Id> {
    let int = prop_oneof![
        -300i128..300,
        Just(i128::from(u64::MAX)),
        Just(-i128::from(u64::MAX)),
        any_int(),
    ]
    .prop_map(|v| Int::new(v).expect("in range"));
    prop_oneof![
        4 => int.clone().prop_map(Id::Int),
        3 => "[a-c/%~!é -]{1,4}".prop_map(Id::String),
        1 => proptest::prelude::any::<u128>().prop_map(|u| Id::Uuid(uuid::Uuid::from_u128(u % 4 + (u >> 64 << 64)))),
        1 => int.clone().prop_map(Id::DescInt),
        1 => "[a-c]{1,3}".prop_map(|s| Id::from(Desc(s))),
    ]
}

fn any_int() -> impl Strategy<Value = i128> {
    (-i128::from(u64::MAX))..=i128::from(u64::MAX)
}

use proptest::prelude::{Just, prop_oneof};

fn path() -> impl Strategy<Value = KeyPath> {
    (0..3u8, proptest::collection::vec((0..3usize, id()), 0..4)).prop_map(|(group, rest)| {
        let mut b = KeyPath::builder().push("g", i64::from(group));
        for (ns, id) in rest {
            b = b.push(["a", "b", "ab"][ns], id);
        }
        b.build().expect("valid path")
    })
}

fn all_pages<B: Backend>(store: &Store<B>, mut request: ListRequest) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        let page = store.list(&request).expect("list");
        out.extend(page.items.iter().map(|i| i.path().to_string()));
        match page.next_page_token {
            Some(t) => request.page_token = Some(t),
            None => return out,
        }
    }
}

#[test]
fn random_typed_paths_list_the_same_as_the_embedded_store() {
    let Some((url, _)) = endpoint() else { return };
    let dynamo = Store::new(Dynamo::new(url).backend(), StoreOptions::default()).expect("store");
    let embedded = Store::new(InMemoryBackend::new(), StoreOptions::default()).expect("store");
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]),
    );
    let mut paths = Vec::new();
    while paths.len() < 300 {
        let p = path().new_tree(&mut runner).expect("generates").current();
        if !paths.contains(&p) {
            paths.push(p);
        }
    }
    for (i, p) in paths.iter().enumerate() {
        let value = Json::parse(&i.to_string()).expect("json");
        dynamo
            .put(p, value.clone(), PutOptions::default())
            .expect("dynamo put");
        embedded
            .put(p, value, PutOptions::default())
            .expect("embedded put");
    }
    let mut prefixes: Vec<KeyPath> = paths
        .iter()
        .flat_map(|p| {
            (1..=p.len())
                .map(|n| KeyPath::from_elements(p.elements()[..n].to_vec()).expect("prefix"))
        })
        .collect();
    prefixes.sort();
    prefixes.dedup();
    let mut compared = 0;
    for (n, prefix) in prefixes.iter().enumerate() {
        for (children_only, reverse) in [(false, false), (false, true), (true, false), (true, true)]
        {
            let mut request = ListRequest::new(prefix.clone());
            request.children_only = children_only;
            request.reverse = reverse;
            request.limit = 7;
            // Every third listing also gets bounds taken from the paths themselves.
            if n % 3 == 0 {
                let same_group: Vec<&KeyPath> = paths
                    .iter()
                    .filter(|p| p.group() == prefix.group())
                    .collect();
                request.gt = same_group
                    .get(n % same_group.len().max(1))
                    .map(|p| (*p).clone());
                request.lte = same_group
                    .get((n * 7) % same_group.len().max(1))
                    .map(|p| (*p).clone());
            }
            let expected = all_pages(&embedded, request.clone());
            let got = all_pages(&dynamo, request.clone());
            assert_eq!(
                got,
                expected,
                "listing {prefix} children={children_only} reverse={reverse} gt={:?} lte={:?}",
                request.gt.map(|p| p.to_string()),
                request.lte.map(|p| p.to_string())
            );
            compared += expected.len();
        }
    }
    assert!(
        compared > 1000,
        "the listings compared only {compared} items"
    );
}
