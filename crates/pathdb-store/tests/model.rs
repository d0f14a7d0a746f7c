//! Model-based property test: random sequences of operations give the same results from the
//! store as from a simple model (`BTreeMap`s over typed key paths), on every backend.
//!
//! The paths share prefixes (`/m-1/p-1`, `/m-1/p-10`, `/m-1/p`, `/m-1/pp-1`) and mix id types,
//! including descending ids and bytes ids that encode like an integer or a string. Listings use
//! random prefixes, children, bounds, direction and page size, and follow every page token to
//! the end (sometimes turning around at a token). Time is a `ManualClock` the sequence moves;
//! expired items are swept only by an explicit operation, so the model knows what is stored.
//!
//! Three invariants beyond equality with the model: a path never gets a version it had before
//! (deleted, expired or not); a follower of each group's change feed from the start, applying
//! every change, ends with the final listing; and the final state exported and imported into an
//! empty store gives a store whose get, list, history and export equal the original's.
//!
//! Values include `null`, `[]`, `{}`, `""`, `0` and `false`, which a serializer may take for
//! "no value".

use pathdb_conformance::{Harness, InMemory, TempFile};
use pathdb_keys::KeyPath;
use pathdb_store::backend::Backend;
use pathdb_store::{
    Change, ChangeToken, Condition, Error, Expiry, ExportRecord, Item, Json, ListEntry,
    ListRequest, ListedPage, MAX_LIST_LIMIT, ManualClock, OnExisting, PutOptions, Store,
    StoreOptions, Timestamp, Transaction, TxOp, TxResult, parse_import,
};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

const PATHS: &[&str] = &[
    "/m-1",
    "/m-1/p",
    "/m-1/p-1",
    "/m-1/p-3",
    "/m-1/p-~CAM", // bytes 08 03: the encoding of the integer 3
    "/m-1/p-10",
    "/m-1/p--1",
    "/m-1/p-abc",
    "/m-1/p-~YWJj", // bytes "abc"
    "/m-1/p-!3",
    "/m-1/p-!30",
    "/m-1/p-1/c-1",
    "/m-1/p-1/c-2",
    "/m-1/p-1/c-1/d-!5",
    "/m-1/p-1/c-1/d-!50",
    "/m-1/p-3/c-1",
    // (No `/m-1/p-~CAM/c-1`: aliasing children with only descendants show one node, docs/tree.md.)
    "/m-1/p-10/c-1",
    "/m-1/p-1/settings",
    "/m-1/pp-1",
    "/m-1/c-1",
    "/m-2",
    "/m-2/p-1",
];

const PREFIXES: &[&str] = &[
    "/m-1",
    "/m-1/p",
    "/m-1/p-1",
    "/m-1/p-3",
    "/m-1/p-~CAM",
    "/m-1/p-1/c-1",
    "/m-1/p-1/c",
    "/m-1/p-10",
    "/m-1/c",
    "/m-1/zz-1",
    "/m-2",
];

/// Bounds: the paths above plus some that are never written. Bounds in `/m-2` are errors for
/// `/m-1` listings and the other way round.
const BOUNDS: &[&str] = &[
    "/m-1/p-5",
    "/m-1/p-1/c-1/d-!10",
    "/m-1/a-1",
    "/m-1/zz-1",
    "/m-1/p-1",
    "/m-1/p-3",
    "/m-1/p-~CAM",
    "/m-1/p-10",
    "/m-1/p-!3",
    "/m-1/p-1/c-2",
    "/m-1/p",
    "/m-1",
    "/m-2/p-1",
];

const NAMESPACES: &[&str] = &["p", "c", "d", "m"];

const T0: Timestamp = Timestamp(1_700_000_000_000_000);

fn path(text: &str) -> KeyPath {
    text.parse().unwrap()
}

/// Mostly `{"n": n}`, and the values a serializer may confuse with "no value".
fn value(n: u8) -> Json {
    let text = match n % 10 {
        0 => "null".to_owned(),
        1 => "[]".to_owned(),
        2 => "{}".to_owned(),
        3 => r#""""#.to_owned(),
        4 => "0".to_owned(),
        5 => "false".to_owned(),
        _ => format!(r#"{{"n":{n}}}"#),
    };
    Json::parse(&text).unwrap()
}

// ---------------------------------------------------------------------------------------------
// Operations

#[derive(Clone, Copy, Debug)]
enum Cond {
    MustNotExist,
    MustExist,
    IfVersion(u64),
}

impl Cond {
    fn condition(self) -> Condition {
        match self {
            Cond::MustNotExist => Condition::MustNotExist,
            Cond::MustExist => Condition::MustExist,
            Cond::IfVersion(v) => Condition::IfVersion(v),
        }
    }
}

#[derive(Clone, Debug)]
struct PutGen {
    path: usize,
    n: u8,
    condition: Option<Cond>,
    history: bool,
    ttl: Option<u64>,
}

impl PutGen {
    fn options(&self) -> PutOptions {
        PutOptions {
            condition: self.condition.map(Cond::condition),
            history: self.history,
            expires: self.ttl.map(|s| Expiry::After(Duration::from_secs(s))),
            schema_version: None,
        }
    }
}

#[derive(Clone, Debug)]
enum TxGen {
    Put(PutGen),
    Delete(usize, Option<Cond>),
    Check(usize, Cond),
}

#[derive(Clone, Debug)]
struct ListGen {
    prefix: usize,
    children_only: bool,
    gt: Option<usize>,
    gte: Option<usize>,
    lt: Option<usize>,
    lte: Option<usize>,
    reverse: bool,
    limit: usize,
    /// Turn around at the token after this many pages.
    turn_after: Option<usize>,
}

impl ListGen {
    fn request(&self) -> ListRequest {
        let bound = |i: Option<usize>| i.map(|i| path(BOUNDS[i]));
        let mut r = ListRequest::new(path(PREFIXES[self.prefix]));
        r.children_only = self.children_only;
        r.gt = bound(self.gt);
        r.gte = bound(self.gte);
        r.lt = bound(self.lt);
        r.lte = bound(self.lte);
        r.reverse = self.reverse;
        r.limit = self.limit;
        r
    }
}

#[derive(Clone, Debug)]
enum Op {
    Put(PutGen),
    Delete(usize, Option<Cond>),
    Transact(Vec<TxGen>),
    Get(usize),
    GetMany(Vec<usize>),
    List(ListGen),
    History(usize, usize),
    GetVersion(usize, u64),
    Advance(u64),
    Sweep,
    SetHistory(usize, Option<u32>),
    Scan(usize),
}

fn cond() -> impl Strategy<Value = Option<Cond>> {
    prop_oneof![
        4 => Just(None),
        1 => Just(Some(Cond::MustNotExist)),
        1 => Just(Some(Cond::MustExist)),
        2 => (1..5u64).prop_map(|v| Some(Cond::IfVersion(v))),
    ]
}

fn path_index() -> impl Strategy<Value = usize> {
    0..PATHS.len()
}

fn put_gen() -> impl Strategy<Value = PutGen> {
    (
        path_index(),
        any::<u8>(),
        cond(),
        prop::bool::weighted(0.3),
        // 0 is refused: a put dead on arrival.
        prop::option::weighted(0.25, 0..6u64),
    )
        .prop_map(|(path, n, condition, history, ttl)| PutGen {
            path,
            n,
            condition,
            history,
            ttl,
        })
}

fn list_gen() -> impl Strategy<Value = ListGen> {
    let bound = || prop::option::weighted(0.2, 0..BOUNDS.len());
    (
        0..PREFIXES.len(),
        any::<bool>(),
        (bound(), bound(), bound(), bound()),
        any::<bool>(),
        1..5usize,
        prop::option::weighted(0.3, 0..3usize),
    )
        .prop_map(
            |(prefix, children_only, (gt, gte, lt, lte), reverse, limit, turn_after)| ListGen {
                prefix,
                children_only,
                gt,
                gte,
                lt,
                lte,
                reverse,
                limit,
                turn_after,
            },
        )
}

fn tx_gen() -> impl Strategy<Value = TxGen> {
    prop_oneof![
        3 => put_gen().prop_map(TxGen::Put),
        1 => (path_index(), cond()).prop_map(|(p, c)| TxGen::Delete(p, c)),
        1 => (path_index(), cond()).prop_map(|(p, c)| {
            TxGen::Check(p, c.unwrap_or(Cond::MustExist))
        }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => put_gen().prop_map(Op::Put),
        3 => (path_index(), cond()).prop_map(|(p, c)| Op::Delete(p, c)),
        3 => prop::collection::vec(tx_gen(), 0..5).prop_map(Op::Transact),
        2 => path_index().prop_map(Op::Get),
        1 => prop::collection::vec(path_index(), 0..6).prop_map(Op::GetMany),
        6 => list_gen().prop_map(Op::List),
        2 => (path_index(), 0..5usize).prop_map(|(p, l)| Op::History(p, l)),
        1 => (path_index(), 0..8u64).prop_map(|(p, v)| Op::GetVersion(p, v)),
        2 => (1..4u64).prop_map(Op::Advance),
        1 => Just(Op::Sweep),
        1 => (0..NAMESPACES.len(), prop::option::of(1..5u32))
            .prop_map(|(n, r)| Op::SetHistory(n, r)),
        1 => (1..6usize).prop_map(Op::Scan),
    ]
}

// ---------------------------------------------------------------------------------------------
// The model

/// Errors as the model predicts them.
#[derive(Clone, PartialEq, Eq, Debug)]
enum Failure {
    ConditionFailed(KeyPath, Condition, Option<u64>),
    InvalidRequest,
}

fn failure(e: Error) -> Failure {
    match e {
        Error::ConditionFailed {
            path,
            condition,
            current,
        } => Failure::ConditionFailed(path, condition, current),
        Error::InvalidRequest(_) => Failure::InvalidRequest,
        other => panic!("unexpected error from the store: {other:?}"),
    }
}

struct Model {
    now: i64,
    /// What is stored, expired or not (the sweep removes expired items).
    items: BTreeMap<KeyPath, Item>,
    /// Revisions by version.
    revisions: BTreeMap<KeyPath, BTreeMap<u64, Item>>,
    /// Deleted or swept paths: the last version each used, and when it went (tombstones).
    tombstones: BTreeMap<KeyPath, (u64, i64)>,
    /// The highest version each path was ever given.
    highest: BTreeMap<KeyPath, u64>,
    /// Expiry entries `(expires_at, path)`, left behind by overwrites and deletes until swept.
    expiry_index: BTreeSet<(i64, KeyPath)>,
    namespaces: HashMap<String, u32>,
    default_retention: u32,
}

impl Model {
    fn new(default_retention: u32) -> Model {
        Model {
            now: T0.0,
            items: BTreeMap::new(),
            revisions: BTreeMap::new(),
            tombstones: BTreeMap::new(),
            highest: BTreeMap::new(),
            expiry_index: BTreeSet::new(),
            namespaces: HashMap::new(),
            default_retention,
        }
    }

    fn visible(&self, path: &KeyPath) -> Option<&Item> {
        self.items
            .get(path)
            .filter(|i| i.expires_at.is_none_or(|t| t.0 > self.now))
    }

    fn execute(&mut self, ops: &[TxOp]) -> Result<Vec<TxResult>, Failure> {
        if ops.is_empty() {
            return Err(Failure::InvalidRequest);
        }
        let distinct: BTreeSet<&KeyPath> = ops.iter().filter_map(TxOp::path).collect();
        if distinct.len() != ops.len() {
            return Err(Failure::InvalidRequest);
        }
        let dead_on_arrival = |op: &TxOp| {
            matches!(op, TxOp::Put { options, .. }
                if options.expires == Some(Expiry::After(Duration::ZERO)))
        };
        if ops.iter().any(dead_on_arrival) {
            return Err(Failure::InvalidRequest);
        }
        for op in ops {
            let condition = match op {
                TxOp::Put { options, .. } => options.condition,
                TxOp::Delete { condition, .. } => *condition,
                TxOp::Check { condition, .. } => Some(*condition),
                TxOp::Create { .. } | TxOp::Patch { .. } | TxOp::CheckList(_) => {
                    unreachable!("the model generates no creates, patches or listing checks")
                }
            };
            let version = self.visible(fixed_path(op)).map(|i| i.version);
            let holds = match condition {
                None => true,
                Some(Condition::MustNotExist) => version.is_none(),
                Some(Condition::MustExist) => version.is_some(),
                Some(Condition::IfVersion(v)) => version == Some(v),
            };
            if !holds {
                return Err(Failure::ConditionFailed(
                    fixed_path(op).clone(),
                    condition.unwrap(),
                    version,
                ));
            }
        }
        // Paths are distinct, so every result can come from the state before the transaction.
        let mut results = Vec::new();
        let mut puts = Vec::new();
        let mut deletes = Vec::new();
        for op in ops {
            let current = self.visible(fixed_path(op)).cloned();
            match op {
                TxOp::Put {
                    path,
                    value,
                    options,
                } => {
                    let version = match (self.items.get(path), self.tombstones.get(path)) {
                        (Some(stored), _) => stored.version + 1,
                        (None, Some((last, _))) => last + 1,
                        (None, None) => self
                            .revisions
                            .get(path)
                            .and_then(|r| r.keys().next_back())
                            .map_or(1, |v| v + 1),
                    };
                    let highest = self.highest.entry(path.clone()).or_default();
                    assert!(version > *highest, "{path}: version {version} given twice");
                    *highest = version;
                    let item = Item {
                        path: path.clone(),
                        version,
                        created_at: current.map_or(Timestamp(self.now), |c| c.created_at),
                        modified_at: Timestamp(self.now),
                        expires_at: options.expires.map(|e| match e {
                            Expiry::After(d) => Timestamp(self.now).plus(d),
                            Expiry::At(t) => t,
                        }),
                        value: value.clone(),
                        alias: None,
                        // Definitions here have no migration steps: values are not stamped.
                        schema_version: 0,
                    };
                    let namespace = path.last().namespace().as_str();
                    let retention = self
                        .namespaces
                        .get(namespace)
                        .copied()
                        .or(options.history.then_some(self.default_retention));
                    results.push(TxResult::Put(item.clone()));
                    puts.push((item, retention));
                }
                TxOp::Delete { path, .. } => {
                    // Only a live item leaves a tombstone; an expired one waits for the sweep.
                    if current.is_some() {
                        deletes.push(path.clone());
                    }
                    results.push(TxResult::Deleted(current));
                }
                TxOp::Check { .. } => results.push(TxResult::Checked),
                TxOp::Create { .. } | TxOp::Patch { .. } | TxOp::CheckList(_) => {
                    unreachable!("the model generates no creates, patches or listing checks")
                }
            }
        }
        for (item, retention) in puts {
            if let Some(t) = item.expires_at {
                self.expiry_index.insert((t.0, item.path.clone()));
            }
            if let Some(keep) = retention {
                let revisions = self.revisions.entry(item.path.clone()).or_default();
                revisions.insert(item.version, item.clone());
                while revisions.len() > keep as usize {
                    revisions.pop_first();
                }
            }
            self.tombstones.remove(&item.path);
            self.items.insert(item.path.clone(), item);
        }
        for p in deletes {
            if let Some(item) = self.items.remove(&p) {
                // A delete is a write: its tombstone takes the next version.
                let version = item.version + 1;
                let highest = self.highest.entry(p.clone()).or_default();
                assert!(version > *highest, "{p}: version {version} given twice");
                *highest = version;
                self.tombstones.insert(p, (version, self.now));
            }
        }
        Ok(results)
    }

    fn sweep(&mut self) -> usize {
        let due: Vec<(i64, KeyPath)> = self
            .expiry_index
            .iter()
            .take_while(|(t, _)| *t <= self.now)
            .cloned()
            .collect();
        for entry in &due {
            self.expiry_index.remove(entry);
            let (t, p) = entry;
            if self
                .items
                .get(p)
                .is_some_and(|i| i.expires_at == Some(Timestamp(*t)))
            {
                let item = self.items.remove(p).unwrap();
                self.tombstones.insert(p.clone(), (item.version, *t));
            }
        }
        due.len()
    }

    fn list(&self, request: &ListRequest) -> Result<Vec<ListEntry>, Failure> {
        let prefix = &request.prefix;
        let bounds = [&request.gt, &request.gte, &request.lt, &request.lte];
        if bounds
            .iter()
            .any(|b| b.as_ref().is_some_and(|b| b.group() != prefix.group()))
        {
            return Err(Failure::InvalidRequest);
        }
        let depth = prefix.len() + usize::from(prefix.last().id().is_some());
        // A children listing shows each child at its own position: its item, or a node when
        // only items below it are live.
        let mut entries: BTreeMap<KeyPath, ListEntry> = BTreeMap::new();
        for item in self.items.keys().filter_map(|p| self.visible(p)) {
            if item.path.group() != prefix.group() || !prefix.covers(&item.path) {
                continue;
            }
            if !request.children_only || (item.path.len() == depth && item.path != *prefix) {
                entries.insert(item.path.clone(), ListEntry::Item(item.clone()));
            } else if item.path.len() > depth {
                let child = KeyPath::from_elements(item.path.elements()[..depth].to_vec()).unwrap();
                entries
                    .entry(child.clone())
                    .or_insert(ListEntry::Node(child));
            }
        }
        let mut out: Vec<ListEntry> = entries
            .into_iter()
            .filter(|(p, _)| request.gt.as_ref().is_none_or(|b| p > b))
            .filter(|(p, _)| request.gte.as_ref().is_none_or(|b| p >= b))
            .filter(|(p, _)| request.lt.as_ref().is_none_or(|b| p < b))
            .filter(|(p, _)| request.lte.as_ref().is_none_or(|b| p <= b))
            .map(|(_, e)| e)
            .collect();
        if request.reverse {
            out.reverse();
        }
        Ok(out)
    }

    fn history(&self, path: &KeyPath, limit: usize) -> Vec<Item> {
        self.revisions
            .get(path)
            .map(|r| r.values().rev().take(limit).cloned().collect())
            .unwrap_or_default()
    }

    fn get_version(&self, path: &KeyPath, version: u64) -> Option<Item> {
        if let Some(r) = self.revisions.get(path).and_then(|r| r.get(&version)) {
            return Some(r.clone());
        }
        self.visible(path).filter(|i| i.version == version).cloned()
    }

    /// Items and tombstones, then each group's revisions, in the store's key order. An expired
    /// item not swept yet is exported as the tombstone the sweep will leave; revisions outlive
    /// their item.
    fn scan(&self) -> Vec<ExportRecord> {
        let live = |i: &Item| i.expires_at.is_none_or(|t| t.0 > self.now);
        // (partition key, is a revision, item sort key, newest first): the stored key order.
        type Order = (Vec<u8>, bool, Vec<u8>, u64);
        let mut records: Vec<(Order, ExportRecord)> = Vec::new();
        for item in self.items.values() {
            let p = &item.path;
            let order = (p.partition_key(), false, p.sort_key(), 0);
            let record = match item.expires_at {
                Some(t) if !live(item) => ExportRecord::Tombstone {
                    path: p.clone(),
                    version: item.version,
                    deleted_at: t,
                },
                _ => ExportRecord::Item(item.clone()),
            };
            records.push((order, record));
        }
        for (p, (version, at)) in &self.tombstones {
            let order = (p.partition_key(), false, p.sort_key(), 0);
            let record = ExportRecord::Tombstone {
                path: p.clone(),
                version: *version,
                deleted_at: Timestamp(*at),
            };
            records.push((order, record));
        }
        for revisions in self.revisions.values() {
            for item in revisions.values() {
                let p = &item.path;
                let order = (
                    p.partition_key(),
                    true,
                    p.sort_key(),
                    u64::MAX - item.version,
                );
                records.push((order, ExportRecord::Revision(item.clone())));
            }
        }
        records.sort_by(|a, b| a.0.cmp(&b.0));
        records.into_iter().map(|r| r.1).collect()
    }
}

fn tx_op(g: &TxGen) -> TxOp {
    match g {
        TxGen::Put(p) => TxOp::Put {
            path: path(PATHS[p.path]),
            value: value(p.n),
            options: p.options(),
        },
        TxGen::Delete(p, c) => TxOp::Delete {
            path: path(PATHS[*p]),
            condition: c.map(Cond::condition),
        },
        TxGen::Check(p, c) => TxOp::Check {
            path: path(PATHS[*p]),
            condition: c.condition(),
        },
    }
}

// ---------------------------------------------------------------------------------------------
// Running a sequence

fn pages<B: Backend>(store: &Store<B>, listing: &ListGen) -> Result<Vec<ListEntry>, Failure> {
    let mut request = listing.request();
    let mut out = Vec::new();
    for page_number in 0.. {
        let page = store.list(&request).map_err(failure)?;
        // The same page with its paths kept encoded (`Store::list_encoded`).
        let encoded = store.list_encoded(&request).map_err(failure)?;
        let texts: Vec<String> = encoded.items.iter().map(|e| e.path().to_string()).collect();
        let want: Vec<String> = page.items.iter().map(|e| e.path().to_string()).collect();
        assert_eq!(texts, want);
        assert_eq!(encoded.clone().into_page(), page);
        assert_eq!(ListedPage::from(page.clone()), encoded);
        assert!(page.items.len() <= request.limit);
        out.extend(page.items.iter().cloned());
        let Some(token) = page.next_page_token else {
            return Ok(out);
        };
        assert_eq!(
            page.items.len(),
            request.limit,
            "a page with a token is full"
        );
        if listing.turn_after == Some(page_number) {
            // Turn around: the items before the position, nearest first.
            let mut turned = request.clone();
            turned.reverse = !turned.reverse;
            turned.limit = MAX_LIST_LIMIT;
            turned.page_token = Some(token.clone());
            let back = store.list(&turned).map_err(failure)?;
            assert_eq!(back.next_page_token, None);
            let mut expected: Vec<ListEntry> = out[..out.len() - 1].to_vec();
            expected.reverse();
            assert_eq!(
                back.items, expected,
                "turned at page {page_number}: {turned:?}"
            );
        }
        request.page_token = Some(token);
    }
    unreachable!()
}

fn scan_all<B: Backend>(store: &Store<B>, limit: usize) -> Vec<ExportRecord> {
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let page = store.scan(cursor.as_deref(), limit).unwrap();
        assert!(page.records.len() <= limit);
        out.extend(page.records);
        match page.cursor {
            Some(c) => cursor = Some(c),
            None => return out,
        }
    }
}

fn run<H: Harness>(harness: &H, ops: &[Op]) -> Result<(), TestCaseError> {
    let clock = Arc::new(ManualClock::new(T0));
    let store = harness.open(StoreOptions {
        clock: clock.clone(),
        default_history_retention: 3,
        sweep_interval: None,
        ..Default::default()
    });
    let mut model = Model::new(3);
    let groups = [path("/m-1"), path("/m-2")];
    let feeds: Vec<ChangeToken> = groups
        .iter()
        .map(|g| store.changes_token(g).unwrap())
        .collect();
    for (step, op) in ops.iter().enumerate() {
        let at = || format!("step {step}: {op:?}");
        match op {
            Op::Put(g) => {
                let p = path(PATHS[g.path]);
                let got = store.put(&p, value(g.n), g.options()).map_err(failure);
                let want = model
                    .execute(&[tx_op(&TxGen::Put(g.clone()))])
                    .map(|mut r| match r.pop() {
                        Some(TxResult::Put(item)) => item,
                        other => panic!("model put returned {other:?}"),
                    });
                prop_assert_eq!(got, want, "{}", at());
            }
            Op::Delete(i, c) => {
                let p = path(PATHS[*i]);
                let got = store.delete(&p, c.map(Cond::condition)).map_err(failure);
                let want = model
                    .execute(&[tx_op(&TxGen::Delete(*i, *c))])
                    .map(|mut r| match r.pop() {
                        Some(TxResult::Deleted(item)) => item,
                        other => panic!("model delete returned {other:?}"),
                    });
                prop_assert_eq!(got, want, "{}", at());
            }
            Op::Transact(gens) => {
                let ops: Vec<TxOp> = gens.iter().map(tx_op).collect();
                let got = store
                    .transact(Transaction { ops: ops.clone() })
                    .map_err(failure);
                prop_assert_eq!(got, model.execute(&ops), "{}", at());
            }
            Op::Get(i) => {
                let p = path(PATHS[*i]);
                prop_assert_eq!(
                    store.get(&p).unwrap(),
                    model.visible(&p).cloned(),
                    "{}",
                    at()
                );
            }
            Op::GetMany(indexes) => {
                let paths: Vec<KeyPath> = indexes.iter().map(|i| path(PATHS[*i])).collect();
                let want: Vec<Item> = paths
                    .iter()
                    .filter_map(|p| model.visible(p).cloned())
                    .collect();
                prop_assert_eq!(store.get_many(&paths).unwrap(), want, "{}", at());
            }
            Op::List(g) => {
                let want = model.list(&g.request());
                prop_assert_eq!(pages(&store, g), want, "{}", at());
            }
            Op::History(i, limit) => {
                let p = path(PATHS[*i]);
                prop_assert_eq!(
                    store.history(&p, *limit).unwrap(),
                    model.history(&p, *limit),
                    "{}",
                    at()
                );
            }
            Op::GetVersion(i, v) => {
                let p = path(PATHS[*i]);
                prop_assert_eq!(
                    store.get_version(&p, *v).unwrap(),
                    model.get_version(&p, *v),
                    "{}",
                    at()
                );
            }
            Op::Advance(secs) => {
                clock.advance(Duration::from_secs(*secs));
                model.now += i64::try_from(secs * 1_000_000).unwrap();
            }
            Op::Sweep => {
                prop_assert_eq!(store.sweep_expired().unwrap(), model.sweep(), "{}", at());
            }
            Op::SetHistory(n, retention) => {
                let namespace = NAMESPACES[*n];
                store.set_namespace_history(namespace, *retention).unwrap();
                match retention {
                    Some(r) => model.namespaces.insert(namespace.to_owned(), *r),
                    None => model.namespaces.remove(namespace),
                };
            }
            Op::Scan(limit) => {
                prop_assert_eq!(scan_all(&store, *limit), model.scan(), "{}", at());
            }
        }
    }
    // Finally everything: every path, its history, the full scan.
    for text in PATHS {
        let p = path(text);
        prop_assert_eq!(store.get(&p).unwrap(), model.visible(&p).cloned());
        prop_assert_eq!(store.history(&p, 10).unwrap(), model.history(&p, 10));
    }
    prop_assert_eq!(scan_all(&store, 1000), model.scan());
    round_trip(harness, &store, &clock)?;
    // Expiries reach the feed when swept: sweep, then each follower equals the live items.
    store.sweep_expired().unwrap();
    for (group, token) in groups.iter().zip(feeds) {
        prop_assert_eq!(follow(&store, group, token), live_items(&store, group));
    }
    Ok(())
}

/// path → (version, value text).
type Replica = BTreeMap<KeyPath, (u64, String)>;

/// Every change of `group`'s feed after `token`, applied to an empty replica.
fn follow<B: Backend>(store: &Store<B>, group: &KeyPath, mut token: ChangeToken) -> Replica {
    let mut replica = Replica::new();
    loop {
        let page = store.changes(group, Some(&token), 7).unwrap();
        if page.changes.is_empty() && page.next_token == token {
            return replica;
        }
        for entry in page.changes {
            match entry.change {
                Change::Put(item) => {
                    replica.insert(item.path, (item.version, item.value.to_string()));
                }
                Change::Delete { path, .. } => {
                    replica.remove(&path);
                }
            }
        }
        token = page.next_token;
    }
}

fn live_items<B: Backend>(store: &Store<B>, group: &KeyPath) -> Replica {
    let mut request = ListRequest::new(group.clone());
    request.limit = MAX_LIST_LIMIT;
    let page = store.list(&request).unwrap();
    assert_eq!(page.next_page_token, None);
    page.items
        .into_iter()
        .filter_map(ListEntry::into_item)
        .map(|i| (i.path, (i.version, i.value.to_string())))
        .collect()
}

/// Export, then import into an empty store: get, list, history and export are the original's.
fn round_trip<H: Harness>(
    harness: &H,
    store: &Store<H::Backend>,
    clock: &Arc<ManualClock>,
) -> Result<(), TestCaseError> {
    let mut text = Vec::new();
    store.export(&mut text, &mut |_| {}).unwrap();
    let text = String::from_utf8(text).unwrap();
    let records = parse_import(text.lines().map(|l| Ok::<_, String>(l.to_owned())), false).unwrap();
    let copy = harness.open(StoreOptions {
        clock: clock.clone(),
        default_history_retention: 3,
        sweep_interval: None,
        ..Default::default()
    });
    copy.import(&records, OnExisting::Replace, &mut |_| {})
        .unwrap();
    let mut again = Vec::new();
    copy.export(&mut again, &mut |_| {}).unwrap();
    prop_assert_eq!(
        String::from_utf8(again).unwrap(),
        text,
        "export of the copy"
    );
    for text in PATHS {
        let p = path(text);
        prop_assert_eq!(copy.get(&p).unwrap(), store.get(&p).unwrap(), "get {}", p);
        prop_assert_eq!(
            copy.history(&p, 10).unwrap(),
            store.history(&p, 10).unwrap()
        );
        let mut request = ListRequest::new(p.clone());
        request.limit = MAX_LIST_LIMIT;
        prop_assert_eq!(
            copy.list(&request).unwrap().items,
            store.list(&request).unwrap().items,
            "list {}",
            p
        );
    }
    Ok(())
}

fn cases(default: u32) -> u32 {
    std::env::var("PATHDB_MODEL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(256)))]

    #[test]
    fn in_memory_matches_model(ops in prop::collection::vec(op(), 1..60)) {
        run(&InMemory, &ops)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(256) / 12))]

    #[test]
    fn file_matches_model(ops in prop::collection::vec(op(), 1..60)) {
        run(&TempFile::default(), &ops)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(256) / 12))]

    /// A checkpoint every few commits: most operations meet one running beside the committer,
    /// and read and write through its overlay (backend/overlay.rs).
    #[test]
    fn file_checkpointing_often_matches_model(ops in prop::collection::vec(op(), 1..60)) {
        let harness = TempFile {
            file: pathdb_store::backend::FileOptions {
                checkpoint_bytes: Some(1 << 10),
                ..pathdb_store::backend::FileOptions::default()
            },
        };
        run(&harness, &ops)?;
    }
}

/// The model generates no creates: every operation names its path.
fn fixed_path(op: &TxOp) -> &KeyPath {
    op.path().expect("the model generates no creates")
}
