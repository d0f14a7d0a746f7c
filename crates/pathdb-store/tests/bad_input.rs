//! Bad input through the API, beyond the conformance suite's `bad_input` workload (which every
//! backend runs): the durable state of a database file after every kind of rejected request,
//! files that are not databases or are already open, export lines, and error messages that say
//! what is wrong and where.

use pathdb_keys::KeyPath;
use pathdb_store::backend::{FileBackend, FileOptions};
use pathdb_store::{
    Condition, Error, Expiry, ExportRecord, Json, ListRequest, MAX_GET_MANY, MAX_ITEM_BYTES,
    MAX_SORT_KEY_BYTES, MAX_TRANSACTION_OPS, PutOptions, Store, StoreOptions, Transaction,
};
use std::error::Error as _;
use std::path::Path;
use std::time::Duration;

fn path(text: &str) -> KeyPath {
    text.parse().unwrap()
}

fn value(n: i64) -> Json {
    Json::parse(&format!(r#"{{"n":{n}}}"#)).unwrap()
}

fn open(db: &Path) -> Store<FileBackend> {
    let options = StoreOptions {
        sweep_interval: None,
        ..StoreOptions::default()
    };
    Store::open(db, FileOptions::default(), options).unwrap()
}

fn dump(store: &Store<FileBackend>) -> Vec<ExportRecord> {
    let page = store.scan(None, 100_000).unwrap();
    assert_eq!(page.cursor, None);
    page.records
}

#[track_caller]
fn refused<T: std::fmt::Debug>(result: Result<T, Error>, what: &str) {
    let error = result.expect_err(what);
    assert!(
        !matches!(error, Error::Storage(_)),
        "{what}: refused as a storage failure: {error}"
    );
}

fn history() -> PutOptions {
    PutOptions {
        history: true,
        ..PutOptions::default()
    }
}

#[test]
fn rejected_requests_leave_the_file_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.redb");
    {
        let store = open(&db);
        store.set_namespace_history("log", Some(2)).unwrap();
        for n in 0..3 {
            store.put(&path("/b-1/doc-1"), value(n), history()).unwrap();
            store
                .put(&path("/b-1/log-1"), value(n), PutOptions::default())
                .unwrap();
        }
        let later = PutOptions {
            expires: Some(Expiry::After(Duration::from_secs(86_400))),
            ..PutOptions::default()
        };
        store.put(&path("/b-1/tmp-1"), value(1), later).unwrap();
        store
            .put(&path("/b-2"), value(2), PutOptions::default())
            .unwrap();
    }
    let before = dump(&open(&db));
    assert_eq!(before.len(), (1 + 3) + (1 + 2) + 1 + 1);
    {
        let store = open(&db);
        let long_key = path(&format!("/b-1/k-{}", "k".repeat(MAX_SORT_KEY_BYTES)));
        let huge = Json::parse(&format!("\"{}\"", "z".repeat(MAX_ITEM_BYTES))).unwrap();
        refused(
            store.put(&long_key, value(1), PutOptions::default()),
            "long key",
        );
        refused(
            store.put(&path("/b-1/doc-1"), huge.clone(), history()),
            "huge item",
        );
        let stale = PutOptions {
            condition: Some(Condition::IfVersion(1)),
            ..history()
        };
        refused(
            store.put(&path("/b-1/doc-1"), value(9), stale),
            "stale version",
        );
        refused(
            store.delete(&path("/b-1/doc-1"), Some(Condition::MustNotExist)),
            "delete condition",
        );
        let mut many = Transaction::new();
        for i in 0..=MAX_TRANSACTION_OPS {
            many = many.put(path(&format!("/b-1/n-{i}")), value(1), history());
        }
        refused(store.transact(many), "too many operations");
        refused(store.transact(Transaction::new()), "empty transaction");
        refused(
            store.transact(
                Transaction::new()
                    .put(path("/b-1/new-1"), value(1), history())
                    .delete(path("/b-1/new-1"), None),
            ),
            "a path twice",
        );
        refused(
            store.transact(
                Transaction::new()
                    .put(path("/b-1/new-1"), value(1), history())
                    .put(path("/b-1/log-1"), huge, PutOptions::default()),
            ),
            "huge item in a transaction",
        );
        refused(
            store.transact(
                Transaction::new()
                    .put(path("/b-1/new-1"), value(1), history())
                    .check(path("/b-2"), Condition::MustNotExist),
            ),
            "failed check",
        );
        let mut request = ListRequest::new(path("/b-1"));
        request.page_token = Some("nope".into());
        refused(store.list(&request), "page token");
        request.page_token = None;
        request.limit = 0;
        refused(store.list(&request), "limit");
        request.limit = 10;
        request.gt = Some(path("/b-2/a-1"));
        refused(store.list(&request), "bound in another group");
        refused(store.scan(Some("nope"), 10), "scan cursor");
        let paths: Vec<KeyPath> = (0..=MAX_GET_MANY)
            .map(|i| path(&format!("/b-1/n-{i}")))
            .collect();
        refused(store.get_many(&paths), "get_many");
        refused(store.set_namespace_history("log", Some(0)), "retention 0");
        refused(store.set_namespace_history("no-ns", Some(1)), "namespace");
        let lines = [
            r#"{"path":"/b-1/imported-1","version":1,"created_at":1,"modified_at":1,"value":1}"#,
            r#"{"path":"/b-1/imported-2","version":0,"created_at":1,"modified_at":1,"value":1}"#,
        ];
        refused(
            pathdb_store::parse_import(lines.map(|l| Ok::<_, String>(l.to_owned())), true),
            "import with version 0",
        );
    }
    let store = open(&db);
    assert_eq!(dump(&store), before, "rejected input changed the file");
    // The namespace setting survived too: a put in it still keeps two revisions.
    store
        .put(&path("/b-1/log-1"), value(3), PutOptions::default())
        .unwrap();
    let versions: Vec<u64> = store
        .history(&path("/b-1/log-1"), 10)
        .unwrap()
        .iter()
        .map(|i| i.version)
        .collect();
    assert_eq!(versions, [4, 3]);
}

#[test]
fn a_file_that_is_not_a_database_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in [
        ("text", b"hello, this is not a database\n".repeat(100)),
        (
            "noise",
            (0..65_536u32).map(|i| (i * 7919 % 251) as u8).collect(),
        ),
    ] {
        let file = dir.path().join(name);
        std::fs::write(&file, &bytes).unwrap();
        let error = match FileBackend::open(&file, FileOptions::default()) {
            Ok(_) => panic!("{name}: opened a file that is not a database"),
            Err(e) => e,
        };
        assert!(
            error.to_string().contains(&file.display().to_string()),
            "{name}: the error names the file: {error}"
        );
        assert_eq!(
            std::fs::read(&file).unwrap(),
            bytes,
            "{name}: the file changed"
        );
    }
}

#[test]
fn a_file_open_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.redb");
    let store = open(&db);
    store
        .put(&path("/o-1"), value(1), PutOptions::default())
        .unwrap();
    assert!(FileBackend::open(&db, FileOptions::default()).is_err());
    assert_eq!(
        store.get(&path("/o-1")).unwrap().unwrap().value,
        value(1),
        "the open database still works"
    );
}

#[test]
fn export_lines_say_what_is_wrong() {
    let cases = [
        ("{", "EOF"),
        ("{}", "no path"),
        (
            r#"{"path":"/a-1","created_at":1,"modified_at":1,"value":1}"#,
            "version",
        ),
        (
            r#"{"path":"a-1","version":1,"created_at":1,"modified_at":1,"value":1}"#,
            "starts with '/'",
        ),
        (
            r#"{"path":"/a-1","version":-1,"created_at":1,"modified_at":1,"value":1}"#,
            "-1",
        ),
        (
            r#"{"path":"/a-1","version":1,"created_at":1,"modified_at":1,"value":tru}"#,
            "line 1",
        ),
    ];
    for (line, mentions) in cases {
        match pathdb_store::ExportLine::parse(line) {
            Err(Error::InvalidRequest(message)) => {
                assert!(message.contains(mentions), "{line}: {message}");
            }
            other => panic!("{line}: expected InvalidRequest, got {other:?}"),
        }
    }
}

#[test]
fn errors_say_what_and_where() {
    let store = Store::new(
        pathdb_store::backend::InMemoryBackend::new(),
        StoreOptions::default(),
    )
    .unwrap();
    let long = format!("/g-1/k-{}", "k".repeat(MAX_SORT_KEY_BYTES));
    let message = store.get(&path(&long)).unwrap_err().to_string();
    assert!(
        message.contains("sort key") && message.contains(&MAX_SORT_KEY_BYTES.to_string()),
        "{message}"
    );
    let huge = Json::parse(&format!("\"{}\"", "z".repeat(MAX_ITEM_BYTES))).unwrap();
    let message = store
        .put(&path("/g-1/big-1"), huge, PutOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("/g-1/big-1") && message.contains(&MAX_ITEM_BYTES.to_string()),
        "{message}"
    );
    let error = Json::parse("{\"a\": [1, 2,]}").unwrap_err();
    assert!(error.to_string().contains("line 1 column"), "{error}");
    assert!(
        error.source().is_some(),
        "the serde_json error is the source"
    );
    store
        .put(&path("/g-1/a-1"), value(1), PutOptions::default())
        .unwrap();
    let when = |condition| PutOptions {
        condition: Some(condition),
        ..PutOptions::default()
    };
    let message = store
        .put(&path("/g-1/a-1"), value(2), when(Condition::IfVersion(7)))
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("/g-1/a-1") && message.contains('7') && message.contains("version 1"),
        "{message}"
    );
    let message = store
        .put(&path("/g-1/b-1"), value(2), when(Condition::MustExist))
        .unwrap_err()
        .to_string();
    assert!(message.contains("does not exist"), "{message}");
    let mut request = ListRequest::new(path("/g-1"));
    request.page_token = Some("zzz".into());
    let message = store.list(&request).unwrap_err().to_string();
    assert!(message.contains("page token"), "{message}");
}

/// JSON-like text: valid values with odd numbers, escapes (lone surrogates included) and
/// whitespace, sometimes cut short.
fn json_text() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let number = "-?(0|[1-9][0-9]{0,3})(\\.[0-9]{1,3})?([eE][+-]?[0-9]{1,3})?";
    let string =
        "\"([a-z ]|\\\\[nt\"\\\\/]|\\\\u[0-9a-fA-F]{4}|\\\\u[dD][89a-fA-F][0-9a-f]{2}){0,4}\"";
    let leaf = prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("false".to_owned()),
        number.prop_map(|s| s),
        string.prop_map(|s| s),
    ];
    let value = leaf.prop_recursive(4, 32, 4, move |inner| {
        let key = "\"[a-z]{0,3}\"";
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec((key, inner), 0..4).prop_map(|v| {
                let fields: Vec<String> =
                    v.into_iter().map(|(k, v)| format!("{k} : {v}")).collect();
                format!("{{ {} }}", fields.join(" ,\n"))
            }),
        ]
    });
    (value, any::<u8>()).prop_map(|(text, cut)| {
        if cut < 200 || text.is_empty() {
            text
        } else {
            let at = usize::from(cut) % text.len();
            text.char_indices()
                .map(|(i, _)| i)
                .take_while(|i| *i <= at)
                .last()
                .map_or(text.clone(), |i| text[..i].to_owned())
        }
    })
}

/// A JSON value that keeps every object member as written, repeated names included (the test's
/// oracle for duplicates, independent of the store's checker).
enum Members {
    Leaf,
    List(Vec<Members>),
    Object(Vec<(String, Members)>),
}

impl Members {
    fn repeats_a_name(&self) -> bool {
        match self {
            Members::Leaf => false,
            Members::List(items) => items.iter().any(Members::repeats_a_name),
            Members::Object(members) => {
                let names: std::collections::HashSet<&str> =
                    members.iter().map(|(name, _)| name.as_str()).collect();
                names.len() < members.len() || members.iter().any(|(_, v)| v.repeats_a_name())
            }
        }
    }
}

impl<'de> serde::Deserialize<'de> for Members {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Members, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Members;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_bool<E>(self, _: bool) -> Result<Members, E> {
                Ok(Members::Leaf)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Members, E> {
                Ok(Members::Leaf)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Members, E> {
                Ok(Members::Leaf)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Members, E> {
                Ok(Members::Leaf)
            }
            fn visit_str<E>(self, _: &str) -> Result<Members, E> {
                Ok(Members::Leaf)
            }
            fn visit_unit<E>(self) -> Result<Members, E> {
                Ok(Members::Leaf)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Members, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Members::List(items))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Members, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry()? {
                    members.push(member);
                }
                Ok(Members::Object(members))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

proptest::proptest! {
    /// `Json::parse` accepts exactly what serde_json reads into a `Value` with no repeated
    /// object name, and `to_value` gives
    /// that value back; the kept text parses to itself.
    #[test]
    fn json_parse_agrees_with_serde_json(text in json_text()) {
        let ours = Json::parse(&text);
        // I-JSON (RFC 7493): a value serde_json reads is refused when an object repeats a name.
        let theirs = serde_json::from_str::<serde_json::Value>(&text).and_then(|value| {
            let members: Members = serde_json::from_str(&text)?;
            if members.repeats_a_name() {
                Err(serde::de::Error::custom("duplicate name"))
            } else {
                Ok(value)
            }
        });
        proptest::prop_assert_eq!(ours.is_ok(), theirs.is_ok(), "{}: {:?}", text, ours);
        if let (Ok(json), Ok(value)) = (ours, theirs) {
            proptest::prop_assert_eq!(json.to_value(), value);
            proptest::prop_assert_eq!(Json::parse(json.as_str()).unwrap(), json);
        }
    }
}

#[test]
fn history_refuses_a_sort_key_whose_revision_key_would_exceed_the_limit() {
    use pathdb_store::backend::InMemoryBackend;
    use pathdb_store::{Error, Json, MAX_SORT_KEY_BYTES, PutOptions, Store, StoreOptions};
    let store = Store::new(InMemoryBackend::new(), StoreOptions::default()).unwrap();
    // `/g-1/s-<n x "k">`: sort key = "s" 01 <n> 00 08 <meta>, i.e. n + 5 bytes (2-byte meta past 15).
    let path =
        |n: usize| -> pathdb_keys::KeyPath { format!("/g-1/s-{}", "k".repeat(n)).parse().unwrap() };
    let at_limit = (1..MAX_SORT_KEY_BYTES)
        .rev()
        .find(|&n| path(n).sort_key().len() <= MAX_SORT_KEY_BYTES)
        .unwrap();
    let with_history = PutOptions {
        history: true,
        ..PutOptions::default()
    };
    // Without history the longest sort key is fine; with history its revision key would not be.
    store
        .put(
            &path(at_limit),
            Json::parse("1").unwrap(),
            PutOptions::default(),
        )
        .unwrap();
    let err = store
        .put(
            &path(at_limit),
            Json::parse("2").unwrap(),
            with_history.clone(),
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::KeyTooLarge {
                part: "sort key with history",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        store.get(&path(at_limit)).unwrap().unwrap().version,
        1,
        "nothing written"
    );
    let fits = (1..MAX_SORT_KEY_BYTES)
        .rev()
        .find(|&n| path(n).sort_key().len() + 9 <= MAX_SORT_KEY_BYTES)
        .unwrap();
    store
        .put(&path(fits), Json::parse("1").unwrap(), with_history)
        .unwrap();
    assert_eq!(store.history(&path(fits), 10).unwrap().len(), 1);
}
