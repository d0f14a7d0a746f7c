//! Schema migrations (docs/migrations.md): items written in random definition versions, read
//! in every version through every read (get, get_many, listings, the change feed) against a
//! model that translates on its own, the rewrite to the newest version (resumed after a
//! restart where the backend outlives its store), and the definition changes that are refused.

use super::{Harness, Rng, open_manual, path};
use pathdb_keys::KeyPath;
use pathdb_store::backend::Backend;
use pathdb_store::{
    Definition, Json, ListEntry, ListRequest, PutOptions, SchemaVersions, Store, StoreOptions,
};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

/// Version 1: `{name, legacy, status}`, `name` required.
fn v1() -> Definition {
    serde_json::from_value(json!({"schema": {
        "type": "object", "required": ["name"],
        "properties": {"name": {"type": "string"}, "legacy": {"type": "integer"},
                       "status": {"type": "string"}}}}))
    .expect("a definition")
}

/// Version 2: `name` renamed `full_name`, `tier` added with a default.
fn v2() -> Definition {
    serde_json::from_value(json!({"schema": {
        "type": "object", "required": ["full_name"],
        "properties": {"full_name": {"type": "string"}, "tier": {"type": "string"},
                       "legacy": {"type": "integer"}, "status": {"type": "string"}}},
        "migrate": [{"op": "rename", "from": "/name", "to": "/full_name"},
                    {"op": "add", "path": "/tier", "default": "free"}]}))
    .expect("a definition")
}

/// Version 3: `legacy` removed (older readers see 0), `shipped` renamed `sent`.
fn v3() -> Definition {
    serde_json::from_value(json!({"schema": {
        "type": "object", "required": ["full_name"],
        "properties": {"full_name": {"type": "string"}, "tier": {"type": "string"},
                       "status": {"type": "string"}}},
        "migrate": [{"op": "remove", "path": "/legacy", "read_default": 0},
                    {"op": "rename_value", "path": "/status", "from": "shipped", "to": "sent"}]}))
    .expect("a definition")
}

/// The model's own translation: `value` in version `from` to version `to`, forward to `newest`
/// then back, one hand-written function per step.
fn translate(value: &Value, from: u64, to: u64, newest: u64) -> Value {
    let mut v = value.as_object().cloned().unwrap_or_default();
    if from < 2 && newest >= 2 {
        if let Some(name) = v.shift_remove("name") {
            v.insert("full_name".into(), name);
        }
        v.entry("tier").or_insert(json!("free"));
    }
    if from < 3 && newest >= 3 {
        v.shift_remove("legacy");
        if v.get("status") == Some(&json!("shipped")) {
            v.insert("status".into(), json!("sent"));
        }
    }
    if to < 3 && newest >= 3 {
        v.entry("legacy").or_insert(json!(0));
        if v.get("status") == Some(&json!("sent")) {
            v.insert("status".into(), json!("shipped"));
        }
    }
    if to < 2 && newest >= 2 {
        v.shift_remove("tier");
        if let Some(name) = v.shift_remove("full_name") {
            v.insert("name".into(), name);
        }
    }
    Value::Object(v)
}

/// A value a client of version `version` writes.
fn value_in(rng: &mut Rng, version: u64, n: u64) -> Value {
    let status = ["open", "shipped", "sent"][rng.below(3) as usize];
    let mut v = serde_json::Map::new();
    let name = if version == 1 { "name" } else { "full_name" };
    v.insert(name.into(), json!(format!("user {n}")));
    if version < 3 && rng.below(2) == 0 {
        v.insert("legacy".into(), json!(rng.below(100)));
    }
    if version >= 2 && rng.below(2) == 0 {
        v.insert("tier".into(), json!(["pro", "team"][rng.below(2) as usize]));
    }
    if rng.below(4) != 0 {
        v.insert("status".into(), json!(status));
    }
    Value::Object(v)
}

fn speaking(version: u64) -> SchemaVersions {
    SchemaVersions::newest().with("acct", version)
}

fn define<B: Backend>(store: &Store<B>, definition: Definition) {
    store
        .define_namespace("acct", definition, None)
        .unwrap_or_else(|e| panic!("define: {e}"));
}

/// The items of a listing page (its nodes left out).
fn items_of(page: &pathdb_store::ListPage) -> Vec<&pathdb_store::Item> {
    page.items
        .iter()
        .filter_map(|e| match e {
            ListEntry::Item(item) => Some(item),
            ListEntry::Node(_) => None,
        })
        .collect()
}

/// Every item of `model` read in every version through a get, get_many, a listing and the
/// feed equals the model's translation of what was written.
fn check_reads<B: Backend>(
    store: &Store<B>,
    model: &BTreeMap<KeyPath, (Value, u64)>,
    newest: u64,
    feed: &pathdb_store::ChangeToken,
) {
    let paths: Vec<KeyPath> = model.keys().cloned().collect();
    for asked in 1..=newest {
        let versions = speaking(asked);
        let want = |p: &KeyPath| {
            let (value, at) = &model[p];
            translate(value, *at, asked, newest)
        };
        for p in &paths {
            let mut item = store.get(p).expect("get").expect("present");
            store.in_versions(&mut item, &versions).expect("in version");
            assert_eq!(
                item.value.to_value(),
                want(p),
                "{p} read in version {asked}"
            );
            assert_eq!(item.schema_version, asked, "{p}");
        }
        let mut many = store.get_many(&paths).expect("get_many");
        store
            .all_in_versions(&mut many, &versions)
            .expect("in version");
        for item in &many {
            assert_eq!(
                item.value.to_value(),
                want(&item.path),
                "get_many {}",
                item.path
            );
        }
        let mut request = ListRequest::new(path("/org-1"));
        request.versions = versions.clone();
        request.limit = 1000;
        let page = store.list(&request).expect("list");
        let listed = items_of(&page);
        assert_eq!(listed.len(), paths.len());
        for item in listed {
            assert_eq!(
                item.value.to_value(),
                want(&item.path),
                "listed {}",
                item.path
            );
        }
        // A filter reads the newest version, whatever version the page is answered in: items
        // stamped before a step match by what the step made of them.
        let (text, member, wanted) = match newest {
            1 => ("has(value.name)", "name", None),
            2 => ("value.tier == 'free'", "tier", Some(json!("free"))),
            _ => ("value.status == 'sent'", "status", Some(json!("sent"))),
        };
        let mut request = ListRequest::new(path("/org-1"))
            .filter(pathdb_store::Filter::compile(text).expect("a filter"));
        request.versions = versions.clone();
        request.limit = 1000;
        let page = store.list(&request).expect("filtered list");
        let mut matched = Vec::new();
        for item in items_of(&page) {
            assert_eq!(
                item.value.to_value(),
                want(&item.path),
                "filtered {}",
                item.path
            );
            matched.push(item.path.clone());
        }
        let expected: Vec<KeyPath> = paths
            .iter()
            .filter(|p| {
                let (value, at) = &model[*p];
                let current = translate(value, *at, newest, newest);
                match &wanted {
                    None => current.get(member).is_some(),
                    Some(v) => current.get(member) == Some(v),
                }
            })
            .cloned()
            .collect();
        assert_eq!(matched, expected, "filter {text} read in version {asked}");
        // The feed: the last put of each path, in the version asked.
        let mut last: BTreeMap<KeyPath, pathdb_store::Item> = BTreeMap::new();
        let mut since = *feed;
        loop {
            let page = store
                .changes(&path("/org-1"), Some(&since), 1000)
                .expect("changes");
            for entry in page.changes {
                if let pathdb_store::Change::Put(item) = entry.change {
                    last.insert(item.path.clone(), item);
                }
            }
            if page.next_token == since {
                break;
            }
            since = page.next_token;
        }
        for (p, mut item) in last {
            store.in_versions(&mut item, &versions).expect("in version");
            assert_eq!(
                item.value.to_value(),
                want(&p),
                "fed {p} in version {asked}"
            );
        }
    }
}

/// Items written in random versions while the definition goes from version 1 to 3, read in
/// every version against the model, then rewritten to version 3 (one step, a restart where the
/// backend outlives the store, then the rest) and read the same.
pub fn migrations_against_a_model<H: Harness>(harness: &H) {
    // A real clock: the feed's positions are times.
    let mut store = harness.open(StoreOptions::default());
    let mut rng = Rng(0x5c4e_3a11);
    let mut model: BTreeMap<KeyPath, (Value, u64)> = BTreeMap::new();
    let mut written = 0;
    let feed = store.changes_token(&path("/org-1")).expect("a token");
    for (newest, definition) in [(1u64, v1()), (2, v2()), (3, v3())] {
        define(&store, definition);
        for _ in 0..30 {
            written += 1;
            let at = path(&format!("/org-1/acct-{}", 1 + rng.below(40)));
            let speaks = 1 + rng.below(newest);
            let value = value_in(&mut rng, speaks, written);
            let options = PutOptions {
                schema_version: (speaks != newest || rng.below(2) == 0).then_some(speaks),
                ..PutOptions::default()
            };
            let item = store
                .put(&at, Json::from_value(&value), options)
                .unwrap_or_else(|e| panic!("{at} written in version {speaks}: {e}"));
            // Stamped with the newest version once a version has steps (encoding/stamp.rs).
            let stamp = if newest > 1 { newest } else { 0 };
            assert_eq!(item.schema_version, stamp, "stored in the newest version");
            // What is stored: the value brought forward to the newest version then.
            model.insert(at, (translate(&value, speaks, newest, newest), newest));
        }
        check_reads(&store, &model, newest, &feed);
    }
    // A patch in version 1 applies to the item as version 1 reads it.
    let first = model.keys().next().cloned().expect("an item");
    let patch = pathdb_store::Patch::Merge(json!({"name": "patched", "legacy": 7}));
    store
        .patch(
            &first,
            patch,
            PutOptions {
                schema_version: Some(1),
                ..PutOptions::default()
            },
            false,
        )
        .expect("patch in version 1");
    let mut as_v1 = translate(&model[&first].0, model[&first].1, 1, 3);
    as_v1["name"] = json!("patched");
    as_v1["legacy"] = json!(7);
    model.insert(first.clone(), (translate(&as_v1, 1, 3, 3), 3));
    check_reads(&store, &model, 3, &feed);

    // The rewrite: one step, a restart, the rest.
    let before: Vec<_> = model
        .keys()
        .map(|p| store.get(p).expect("get").expect("present"))
        .collect();
    store.step_rewrites(Duration::ZERO).expect("one step");
    // Halfway: every read the same.
    check_reads(&store, &model, 3, &feed);
    // Where the backend outlives its store, the rest runs after a restart (the cursor is in
    // the database); in memory, nothing outlives it.
    match harness.reopen(store, StoreOptions::default()) {
        Some(reopened) => store = reopened,
        None => return,
    }
    store.run_rewrites().expect("rewrites");
    let rewrite = store.rewrite("acct").expect("read").expect("a rewrite");
    assert!(rewrite.done, "{rewrite:?}");
    assert_eq!(rewrite.to, 3);
    for old in before {
        let now = store.get(&old.path).expect("get").expect("present");
        assert_eq!(now.schema_version, 3, "{} rewritten", old.path);
        assert_eq!(now.version, old.version, "a rewrite is no write");
    }
    check_reads(&store, &model, 3, &feed);
}

/// Each kind of incompatible change is refused (naming it) and accepted when forced; a value
/// written in an older version that a rename cannot bring forward is refused; a version that
/// does not exist is refused.
pub fn incompatible_definitions_are_refused<H: Harness>(harness: &H) {
    let (_clock, store) = open_manual(harness);
    define(&store, v1());
    let refused = |definition: Value, names: &str| {
        let definition: Definition = serde_json::from_value(definition).expect("a definition");
        let current = store
            .namespace("acct")
            .expect("read")
            .expect("defined")
            .version;
        match store.define_namespace("acct", definition.clone(), None) {
            Err(pathdb_store::Error::IncompatibleSchema {
                problems, version, ..
            }) => {
                assert_eq!(version, current);
                assert!(
                    problems.iter().any(|p| p.contains(names)),
                    "{problems:?} names {names}"
                );
            }
            other => panic!("{names}: {other:?}"),
        }
        // Nothing stored.
        assert_eq!(
            store
                .namespace("acct")
                .expect("read")
                .expect("defined")
                .version,
            current
        );
        definition
    };
    let object = |required: Value, properties: Value| json!({"type": "object", "required": required, "properties": properties});
    // A new required member without a default.
    refused(
        json!({"schema": object(json!(["name", "tier"]), json!({"name": {"type": "string"}, "tier": {"type": "string"}}))}),
        "/tier is required",
    );
    // A member still required by version 1, dropped.
    refused(
        json!({"schema": object(json!([]), json!({"full_name": {"type": "string"}}))}),
        "/name is required by version 1",
    );
    // A type change.
    let forced = refused(
        json!({"schema": object(json!(["name"]), json!({"name": {"type": "string"}, "legacy": {"type": "string"}}))}),
        "/legacy changes type",
    );
    // Forced, it is stored.
    let (stored, _) = store
        .define_namespace_with("acct", forced, None, true)
        .expect("forced");
    assert_eq!(stored.version, 2);
    store
        .define_namespace_with("acct", v1(), None, true)
        .expect("forced back");
    // Steps where there is no previous version.
    let steps: Definition =
        serde_json::from_value(json!({"migrate": [{"op": "add", "path": "/a", "default": 1}]}))
            .expect("ok");
    assert!(matches!(
        store.define_namespace("fresh", steps, None),
        Err(pathdb_store::Error::InvalidRequest(_))
    ));
    // A rename onto a member the old version declares.
    refused(
        json!({"schema": object(json!(["name"]), json!({"name": {"type": "string"}, "legacy": {"type": "integer"}})),
               "migrate": [{"op": "rename", "from": "/name", "to": "/legacy"}]}),
        "rename from /name to /legacy",
    );
    define(&store, v2());
    // A version-1 write with both names: the rename cannot make them one.
    let both = Json::from_value(&json!({"name": "a", "full_name": "b"}));
    let options = PutOptions {
        schema_version: Some(1),
        ..PutOptions::default()
    };
    assert!(matches!(
        store.put(&path("/org-1/acct-1"), both, options),
        Err(pathdb_store::Error::MigrationFailed { .. })
    ));
    assert!(store.get(&path("/org-1/acct-1")).expect("read").is_none());
    // A version that does not exist.
    let options = PutOptions {
        schema_version: Some(9),
        ..PutOptions::default()
    };
    assert!(matches!(
        store.put(
            &path("/org-1/acct-1"),
            Json::from_value(&json!({"full_name": "a"})),
            options
        ),
        Err(pathdb_store::Error::UnknownSchemaVersion { version: 9, .. })
    ));
    assert!(matches!(
        store.check_versions(&speaking(9)),
        Err(pathdb_store::Error::UnknownSchemaVersion { .. })
    ));
    store
        .check_versions(&speaking(1))
        .expect("version 1 is kept");
    assert!(
        store
            .check_versions(&SchemaVersions::newest().with("nodef", 1))
            .is_err()
    );
}
