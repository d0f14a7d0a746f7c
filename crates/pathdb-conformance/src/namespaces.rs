//! Namespace definitions: stored, versioned and conditional like items; their schemas checked
//! on every way a value enters a namespace, with nothing written when one does not fit; the
//! dry run and the listing of stored items a schema refuses; a history setting of an earlier
//! build read back as a definition.

use crate::{Harness, json, manual_options, open_manual, path, value};
use pathdb_keys::KeyPath;
use pathdb_store::backend::{Backend, Key, Record, WriteBatch, WriteOp};
use pathdb_store::{
    Condition, Definition, Error, ExportRecord, IdKind, ImportRecord, OnExisting, Patch,
    PutOptions, Schema, Store, Transaction, TxOp,
};
use serde_json::json as j;

/// A person: `name` (a string) and `age` (an integer from 0), nothing else.
fn person_schema() -> serde_json::Value {
    j!({
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
        "required": ["name"],
        "additionalProperties": false
    })
}

fn with_schema(schema: serde_json::Value) -> Definition {
    Definition {
        schema: Some(schema),
        ..Definition::default()
    }
}

/// What a refused write must leave as it was: the item at a path, its history, no other item
/// of the test (`note-1` beside it) and its group's change feed.
struct Unchanged {
    path: KeyPath,
    group: KeyPath,
    item: Option<pathdb_store::Item>,
    revisions: usize,
    token: pathdb_store::ChangeToken,
}

impl Unchanged {
    fn now<B: Backend>(store: &Store<B>, path: &KeyPath, group: &KeyPath) -> Unchanged {
        Unchanged {
            path: path.clone(),
            group: group.clone(),
            item: store.get(path).unwrap(),
            revisions: store.history(path, 100).unwrap().len(),
            token: store.changes_token(group).unwrap(),
        }
    }

    fn check<B: Backend>(&self, store: &Store<B>) {
        assert_eq!(store.get(&self.path).unwrap(), self.item);
        assert_eq!(
            store.history(&self.path, 100).unwrap().len(),
            self.revisions
        );
        let note = self.path.parent().unwrap().child("note", 1u64).unwrap();
        assert!(store.get(&note).unwrap().is_none());
        let page = store.changes(&self.group, Some(&self.token), 100).unwrap();
        assert!(
            page.changes.is_empty(),
            "a refused write logged {:?}",
            page.changes
        );
    }
}

/// The violation list of a refused write, which must be a schema violation at `at`.
fn refused<T: std::fmt::Debug>(result: Result<T, Error>, at: &str) -> Vec<pathdb_store::Violation> {
    match result {
        Err(Error::SchemaViolation {
            path: refused,
            violations,
            ..
        }) => {
            assert_eq!(refused.to_string(), at);
            assert!(!violations.is_empty());
            violations
        }
        other => {
            panic!("a value that does not fit the schema must be refused at {at}, got {other:?}")
        }
    }
}

/// Definitions are stored, listed in name order, versioned, conditional, and deleted without
/// touching items; a re-created definition continues the numbering; bad ones are refused.
pub fn namespace_definitions<H: Harness>(harness: &H) {
    let (_clock, options) = manual_options();
    let store = harness.open(options.clone());
    assert_eq!(store.namespace("person").unwrap(), None);
    let (first, created) = store
        .define_namespace("person", with_schema(person_schema()), None)
        .unwrap();
    assert!(created);
    assert_eq!((first.namespace.as_str(), first.version), ("person", 1));
    assert_eq!(store.namespace("person").unwrap().as_ref(), Some(&first));
    // A change takes the version read; a stale one fails and changes nothing.
    let described = Definition {
        description: Some("people".into()),
        history: Some(2),
        ..with_schema(person_schema())
    };
    let (second, created) = store
        .define_namespace("person", described.clone(), Some(Condition::IfVersion(1)))
        .unwrap();
    assert!(!created);
    assert_eq!(second.version, 2);
    assert_eq!(second.definition, described);
    match store.define_namespace(
        "person",
        Definition::default(),
        Some(Condition::IfVersion(1)),
    ) {
        Err(Error::DefinitionConditionFailed { current, .. }) => assert_eq!(current, Some(2)),
        other => panic!("a stale version must fail, got {other:?}"),
    }
    assert!(matches!(
        store.define_namespace(
            "person",
            Definition::default(),
            Some(Condition::MustNotExist)
        ),
        Err(Error::DefinitionConditionFailed { .. })
    ));
    for ns in ["zeta", "alpha", "mid"] {
        store
            .define_namespace(ns, Definition::default(), None)
            .unwrap();
    }
    let names = |after: Option<&str>, limit| -> Vec<String> {
        store
            .namespaces(after, limit)
            .unwrap()
            .into_iter()
            .map(|d| d.namespace)
            .collect()
    };
    assert_eq!(names(None, 10), ["alpha", "mid", "person", "zeta"]);
    assert_eq!(names(None, 2), ["alpha", "mid"]);
    assert_eq!(names(Some("mid"), 2), ["person", "zeta"]);
    // A delete keeps the items, leaves a gap in the listing, and a new definition continues
    // the version numbers (an If-Match held from before cannot match it).
    store
        .put(
            &path("/person-1"),
            json(r#"{"name":"Ada"}"#),
            PutOptions::default(),
        )
        .unwrap();
    let removed = store
        .delete_namespace("mid", Some(Condition::IfVersion(1)))
        .unwrap();
    assert_eq!(removed.map(|d| d.version), Some(1));
    assert_eq!(store.delete_namespace("mid", None).unwrap(), None);
    assert_eq!(names(None, 10), ["alpha", "person", "zeta"]);
    assert_eq!(names(Some("alpha"), 1), ["person"]);
    let (again, created) = store
        .define_namespace("mid", Definition::default(), Some(Condition::MustNotExist))
        .unwrap();
    assert!(created);
    assert_eq!(again.version, 3);
    store.delete_namespace("person", None).unwrap();
    assert!(store.get(&path("/person-1")).unwrap().is_some());
    // What is not a definition is refused, and nothing is stored.
    for bad in [
        j!({"type": 12}),
        j!({"properties": {"a": {"minimum": "zero"}}}),
        j!([1, 2]),
        j!({"$ref": "https://example.com/schemas/person.json"}),
    ] {
        match store.define_namespace("bad", with_schema(bad.clone()), None) {
            Err(Error::InvalidSchema(_)) => {}
            other => panic!("{bad} must be refused as a schema, got {other:?}"),
        }
    }
    assert!(matches!(
        store.define_namespace(
            "bad",
            Definition {
                history: Some(0),
                ..Definition::default()
            },
            None
        ),
        Err(Error::InvalidRequest(_))
    ));
    assert!(matches!(
        store.define_namespace("no-such", Definition::default(), None),
        Err(Error::InvalidRequest(_))
    ));
    assert_eq!(store.namespace("bad").unwrap(), None);
    // A reference inside the schema is fine, as are other drafts.
    store
        .define_namespace(
            "reffed",
            with_schema(j!({"$defs": {"n": {"type": "integer"}}, "properties": {"n": {"$ref": "#/$defs/n"}}})),
            None,
        )
        .unwrap();
    store
        .define_namespace(
            "seven",
            with_schema(j!({"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}]})),
            None,
        )
        .unwrap();
    refused(
        store.put(
            &path("/reffed-1"),
            json(r#"{"n":"x"}"#),
            PutOptions::default(),
        ),
        "/reffed-1",
    );
    refused(
        store.put(&path("/seven-1"), json("[1]"), PutOptions::default()),
        "/seven-1",
    );
    // Definitions changed from several threads at once: the store's own copy ends as what is
    // stored (a later change is never undone by an earlier one's bookkeeping).
    std::thread::scope(|scope| {
        for t in 0..4u64 {
            let store = &*store;
            scope.spawn(move || {
                for i in 0..10u64 {
                    if (t + i) % 3 == 0 {
                        store.delete_namespace("race", None).unwrap();
                    } else {
                        let required = j!({"required": [format!("m{t}")]});
                        // Forced: each replaces a required member with one older items lack
                        // (docs/migrations.md); the race is what this checks.
                        store
                            .define_namespace_with("race", with_schema(required), None, true)
                            .unwrap();
                    }
                }
            });
        }
    });
    let stored = store.namespace("race").unwrap();
    let put = store.put(&path("/race-1"), json("{}"), PutOptions::default());
    match (&stored, put) {
        (None, Ok(_)) => {}
        (Some(_), Err(Error::SchemaViolation { violations, .. })) => {
            let member = stored.unwrap().definition.schema.unwrap()["required"][0].clone();
            assert!(violations[0].message.contains(member.as_str().unwrap()));
        }
        (stored, put) => panic!("stored {stored:?}, but the put answered {put:?}"),
    }
    store.delete_namespace("race", None).unwrap();
    // Definitions outlive the store.
    if let Some(store) = harness.reopen(store, options) {
        let names: Vec<String> = store
            .namespaces(None, 10)
            .unwrap()
            .into_iter()
            .map(|d| d.namespace)
            .collect();
        assert_eq!(names, ["alpha", "mid", "reffed", "seven", "zeta"]);
        refused(
            store.put(
                &path("/reffed-1"),
                json(r#"{"n":"x"}"#),
                PutOptions::default(),
            ),
            "/reffed-1",
        );
    }
}

/// Every way a value enters a namespace is checked; a refused one writes nothing: not the
/// item, not its history, not a change, and no other operation of its transaction or import.
pub fn schema_checked_on_every_write<H: Harness>(harness: &H) {
    let (_clock, store) = open_manual(harness);
    store
        .define_namespace(
            "person",
            Definition {
                history: Some(5),
                ..with_schema(person_schema())
            },
            None,
        )
        .unwrap();
    let p = path("/team-1/person-1");
    let group = path("/team-1");
    let good = json(r#"{"name":"Ada","age":36}"#);
    let bad = json(r#"{"name":"Ada","age":"old"}"#);
    store.put(&p, good.clone(), PutOptions::default()).unwrap();
    let unchanged = Unchanged::now(&store, &p, &group);

    // A put: the violation names the member and the keyword.
    let violations = refused(
        store.put(&p, bad.clone(), PutOptions::default()),
        "/team-1/person-1",
    );
    assert_eq!(violations[0].instance_path, "/age");
    assert!(
        violations[0].schema_path.ends_with("/type"),
        "{violations:?}"
    );
    let extra = refused(
        store.put(&p, json(r#"{"age":-1,"x":1}"#), PutOptions::default()),
        "/team-1/person-1",
    );
    assert!(extra.len() >= 3, "every failure is listed: {extra:?}");
    unchanged.check(&store);
    // A create with a generated id.
    assert!(matches!(
        store.create(
            Some(&group),
            "person",
            IdKind::Sequence,
            bad.clone(),
            PutOptions::default()
        ),
        Err(Error::SchemaViolation { index: 0, .. })
    ));
    // A patch: the patched result is checked, not the patch.
    let patch = Patch::Merge(j!({"age": "old"}));
    refused(
        store.patch(&p, patch, PutOptions::default(), false),
        "/team-1/person-1",
    );
    // A patch whose result fits passes, although the patch alone would not.
    let fits = Patch::Merge(j!({"age": 37}));
    store.patch(&p, fits, PutOptions::default(), false).unwrap();
    store.put(&p, good.clone(), PutOptions::default()).unwrap();
    let unchanged = Unchanged::now(&store, &p, &group);
    // A transaction: one bad operation, named by its index, and none written.
    let mut tx = Transaction::new();
    tx.ops.push(TxOp::Put {
        path: path("/team-1/note-1"),
        value: value(1),
        options: PutOptions::default(),
    });
    tx.ops.push(TxOp::Put {
        path: p.clone(),
        value: bad.clone(),
        options: PutOptions::default(),
    });
    match store.transact(tx) {
        Err(Error::SchemaViolation { index, .. }) => assert_eq!(index, 1),
        other => panic!("the transaction must be refused, got {other:?}"),
    }
    let mut tx = Transaction::new();
    tx.ops.push(TxOp::Create {
        parent: pathdb_store::Parent::Path(group.clone()),
        namespace: "person".into(),
        id: IdKind::Uuid,
        value: json(r#"{"nom":"x"}"#),
        options: PutOptions::default(),
    });
    assert!(matches!(
        store.transact(tx),
        Err(Error::SchemaViolation { index: 0, .. })
    ));
    // An interactive transaction.
    let result = store.transaction(|tx| {
        tx.put(&path("/team-1/note-1"), value(2));
        tx.patch(&p, &Patch::Merge(j!({"name": null})))?;
        Ok(())
    });
    refused(result, "/team-1/person-1");
    unchanged.check(&store);
    // An import: the bad line is named, and no line is written.
    let records = vec![
        ImportRecord::Value {
            path: path("/team-1/note-1"),
            value: value(3),
        },
        ImportRecord::Value {
            path: p.clone(),
            value: bad.clone(),
        },
    ];
    match store.import(&records, OnExisting::Replace, &mut |_| {}) {
        Err(e) => match e.error {
            Error::SchemaViolation { index, .. } => assert_eq!(index, 1),
            other => panic!("the import must be refused, got {other:?}"),
        },
        Ok(report) => panic!("the import must be refused, got {report:?}"),
    }
    // An exported item line is checked too; revisions (history) are not.
    let exported = ExportRecord::Item(pathdb_store::Item {
        value: bad.clone(),
        ..store.get(&p).unwrap().unwrap()
    });
    let refused_import = store.import(
        &[ImportRecord::Exported(exported)],
        OnExisting::Replace,
        &mut |_| {},
    );
    assert!(
        matches!(refused_import, Err(e) if matches!(e.error, Error::SchemaViolation { index: 0, .. }))
    );
    unchanged.check(&store);
    // A move or copy whose root changes namespace: the root is checked against its new one.
    let team = path("/team-2");
    store
        .put(&team, json(r#"{"name":7}"#), PutOptions::default())
        .unwrap();
    store
        .put(
            &path("/team-2/person-9"),
            good.clone(),
            PutOptions::default(),
        )
        .unwrap();
    // Nothing of a refused move or copy is written: not the items, their history, the
    // source's tombstones, nor a change on either side.
    let sources = Unchanged::now(&store, &path("/team-2/person-9"), &team);
    let feeds: Vec<_> = ["/person-2", "/person-3"]
        .iter()
        .map(|g| (path(g), store.changes_token(&path(g)).unwrap()))
        .collect();
    refused(
        store.move_subtree(&team, &path("/person-2"), &mut |_| {}),
        "/person-2",
    );
    refused(
        store.copy_subtree(&team, &path("/person-3"), &mut |_| {}),
        "/person-3",
    );
    assert!(store.get(&team).unwrap().is_some());
    sources.check(&store);
    for (group, token) in &feeds {
        assert!(
            store
                .changes(group, Some(token), 10)
                .unwrap()
                .changes
                .is_empty()
        );
    }
    for gone in ["/person-2", "/person-3", "/person-2/person-9"] {
        assert!(store.get(&path(gone)).unwrap().is_none(), "{gone}");
    }
    // Within one namespace nothing is checked again; a root that fits moves.
    store
        .move_subtree(&team, &path("/team-3"), &mut |_| {})
        .unwrap();
    store
        .put(
            &path("/team-3"),
            json(r#"{"name":"Bo"}"#),
            PutOptions::default(),
        )
        .unwrap();
    store
        .move_subtree(&path("/team-3"), &path("/person-4"), &mut |_| {})
        .unwrap();
    assert!(store.get(&path("/person-4/person-9")).unwrap().is_some());
    // What fits is written on every path.
    store
        .create(
            Some(&group),
            "person",
            IdKind::Sequence,
            good.clone(),
            PutOptions::default(),
        )
        .unwrap();
    let records = vec![ImportRecord::Value {
        path: path("/team-1/person-5"),
        value: good,
    }];
    store
        .import(&records, OnExisting::Replace, &mut |_| {})
        .unwrap();
    // The schema is the value's last element's namespace only: a `person` elsewhere in the
    // path does not matter.
    store
        .put(&path("/person-1/note-1"), json("[]"), PutOptions::default())
        .unwrap();
}

/// A new schema applies to writes from then on; stored items are not rewritten, and the dry
/// run and the violations listing say which of them it refuses.
pub fn schema_changes_and_violations<H: Harness>(harness: &H) {
    let (_clock, store) = open_manual(harness);
    for (i, age) in [
        (1, "30"),
        (2, "\"old\""),
        (3, "40"),
        (4, "\"young\""),
        (5, "50"),
    ] {
        let text = format!(r#"{{"name":"p{i}","age":{age}}}"#);
        store
            .put(
                &path(&format!("/org-1/person-{i}")),
                json(&text),
                PutOptions::default(),
            )
            .unwrap();
    }
    // Another namespace with a failing value does not count.
    store
        .put(
            &path("/org-1/pet-1"),
            json(r#"{"age":"x"}"#),
            PutOptions::default(),
        )
        .unwrap();
    let schema = Schema::compile(&person_schema()).unwrap();
    let mut progress = Vec::new();
    let check = store
        .check_schema("person", &schema, &mut |n| progress.push(n))
        .unwrap();
    assert_eq!((check.checked, check.violating), (5, 2));
    let paths: Vec<String> = check.first.iter().map(|v| v.path.to_string()).collect();
    assert_eq!(paths, ["/org-1/person-2", "/org-1/person-4"]);
    assert_eq!(check.first[0].violations[0].instance_path, "/age");
    assert!(!progress.is_empty());
    // The dry run stored nothing: writes are not checked yet.
    store
        .put(
            &path("/org-1/person-6"),
            json(r#"{"age":"x"}"#),
            PutOptions::default(),
        )
        .unwrap();
    assert!(matches!(
        store.namespace_violations("person", None, 10),
        Err(Error::NamespaceNotFound(_))
    ));
    store
        .define_namespace("person", with_schema(person_schema()), None)
        .unwrap();
    // The items stay as they were.
    assert!(store.get(&path("/org-1/person-2")).unwrap().is_some());
    // Paged: one refused item per page at most, in key order.
    let mut found = Vec::new();
    let mut cursor = None;
    let mut checked = 0;
    loop {
        let page = store.namespace_violations("person", cursor, 1).unwrap();
        assert!(page.items.len() <= 1);
        checked += page.checked;
        found.extend(page.items.into_iter().map(|v| v.path.to_string()));
        match page.cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(
        found,
        ["/org-1/person-2", "/org-1/person-4", "/org-1/person-6"]
    );
    assert_eq!(checked, 6);
    // Fixed, an item leaves the listing; a namespace without a schema has no violations.
    store
        .put(
            &path("/org-1/person-2"),
            json(r#"{"name":"p2","age":2}"#),
            PutOptions::default(),
        )
        .unwrap();
    let page = store.namespace_violations("person", None, 10).unwrap();
    assert_eq!(page.items.len(), 2);
    store
        .define_namespace("pet", Definition::default(), None)
        .unwrap();
    let page = store.namespace_violations("pet", None, 10).unwrap();
    assert!(page.items.is_empty() && page.cursor.is_none());
    assert!(matches!(
        store.namespace_violations("person", Some("not a cursor".into()), 10),
        Err(Error::InvalidPageToken(_))
    ));
}

/// A history setting written by an earlier build (a bare number under the definition's key)
/// reads back as a definition with `history`, and keeps applying; `set_namespace_history` keeps
/// the rest of a definition.
pub fn history_setting_of_an_earlier_build<H: Harness>(harness: &H) {
    let (_clock, options) = manual_options();
    let store = harness.open(options.clone());
    let legacy = Record {
        version: 1,
        created_at: crate::T0.0,
        modified_at: crate::T0.0,
        expires_at: None,
        value: b"2".to_vec(),
    };
    let mut sort = vec![0x02];
    sort.extend_from_slice(b"log");
    let key = Key {
        partition: vec![0x00],
        sort,
    };
    store
        .backend()
        .write(WriteBatch {
            ops: vec![WriteOp::Put {
                key,
                record: legacy,
                expect: None,
            }],
        })
        .unwrap();
    let read = store
        .namespace("log")
        .unwrap()
        .expect("the earlier setting reads back");
    assert_eq!(read.definition.history, Some(2));
    assert_eq!((read.definition.schema, read.version), (None, 1));
    let Some(store) = harness.reopen(store, options) else {
        return;
    };
    let p = path("/log-1");
    for n in 0..4 {
        store.put(&p, value(n), PutOptions::default()).unwrap();
    }
    assert_eq!(store.history(&p, 10).unwrap().len(), 2);
    // The history member of a definition is the same setting.
    store
        .define_namespace(
            "log",
            Definition {
                history: Some(3),
                ..with_schema(j!({"type": "object"}))
            },
            Some(Condition::IfVersion(1)),
        )
        .unwrap();
    store.set_namespace_history("log", Some(1)).unwrap();
    let read = store.namespace("log").unwrap().unwrap();
    assert_eq!(read.definition.history, Some(1));
    assert!(read.definition.schema.is_some(), "the schema stays");
    assert_eq!(read.version, 3);
    store.put(&p, value(9), PutOptions::default()).unwrap();
    assert_eq!(store.history(&p, 10).unwrap().len(), 1);
    refused(store.put(&p, json("[]"), PutOptions::default()), "/log-1");
}
