//! Values and tokens a careless or hostile client sends: JSON values that a serializer may take
//! for "no value" (`null`, `[]`, `{}`, `""`, `0`, `false`) survive every path a value takes, and
//! a token altered in any way is refused, never answered with a page.

use super::{Harness, json, open_manual, path};
use pathdb_store::{
    Change, ChangeToken, Error, ExportRecord, IdKind, ListRequest, OnExisting, Parent, PutOptions,
    Store, Transaction, TxResult,
};

/// The values that an `Option` or a truthiness check confuses with absence.
const EMPTYISH: [&str; 7] = ["null", "[]", "{}", r#""""#, "0", "false", r#"{"a":null}"#];

/// Every empty-ish value through put, get, list, history, transactions, creates, the change feed
/// (a follower of the group and of a narrower prefix, also after a restart) and export/import.
pub fn emptyish_values_round_trip<H: Harness>(harness: &H) {
    let (_clock, store) = open_manual(harness);
    let group = path("/n-1");
    let narrow = path("/n-1/b-1");
    let start = store.changes_token(&group).expect("token");
    let narrow_start = store.changes_token(&narrow).expect("token");
    let mut expected = Vec::new();
    for (i, text) in EMPTYISH.iter().enumerate() {
        let value = json(text);
        let p = path(&format!("/n-1/a-{i}"));
        let history = PutOptions {
            history: true,
            ..PutOptions::default()
        };
        let put = store.put(&p, value.clone(), history).expect("put");
        assert_eq!(put.value, value);
        assert_eq!(store.get(&p).unwrap().map(|i| i.value), Some(value.clone()));
        assert_eq!(
            store.history(&p, 10).unwrap().first().map(|i| &i.value),
            Some(&value),
            "history of {text}"
        );
        expected.push(Change::Put(put));
        // The same value written by a transaction and by a create.
        let q = path(&format!("/n-1/b-1/c-{i}"));
        let results = store
            .transact(
                Transaction::new()
                    .put(q.clone(), value.clone(), PutOptions::default())
                    .create(
                        Parent::Path(narrow.clone()),
                        "d",
                        IdKind::Sequence,
                        value.clone(),
                    ),
            )
            .expect("transaction");
        for result in results {
            match result {
                TxResult::Put(item) => {
                    assert_eq!(item.value, value, "transaction result of {text}");
                    expected.push(Change::Put(item));
                }
                other => panic!("a put's result is the item, got {other:?}"),
            }
        }
    }
    let listed: Vec<_> = store
        .list(&ListRequest::new(group.clone()))
        .unwrap()
        .items
        .into_iter()
        .map(|e| e.into_item().expect("no node here").value.to_string())
        .collect();
    assert_eq!(listed.len(), 3 * EMPTYISH.len());
    for text in EMPTYISH {
        assert_eq!(listed.iter().filter(|v| *v == text).count(), 3, "{text}");
    }
    // Followers of the group and of a narrower prefix read every change.
    let changes = |store: &Store<H::Backend>, prefix, token| -> Vec<Change> {
        let page = store.changes(prefix, Some(token), 1000).expect("changes");
        page.changes.into_iter().map(|c| c.change).collect()
    };
    assert_eq!(changes(&store, &group, &start), expected);
    let inside: Vec<Change> = expected
        .iter()
        .filter(|c| narrow.covers(c.path()))
        .cloned()
        .collect();
    assert_eq!(changes(&store, &narrow, &narrow_start), inside);
    // Export and import into another store: the same records.
    let mut text = Vec::new();
    store.export(&mut text, &mut |_| {}).expect("export");
    let text = String::from_utf8(text).expect("UTF-8 export");
    let records =
        pathdb_store::parse_import(text.lines().map(|l| Ok::<_, String>(l.to_owned())), false)
            .expect("parse the export");
    let (_clock, copy) = open_manual(harness);
    copy.import(&records, OnExisting::Replace, &mut |_| {})
        .expect("import");
    let exported = |store: &Store<H::Backend>| -> Vec<ExportRecord> {
        store.scan(None, 1000).expect("scan").records
    };
    assert_eq!(exported(&copy), exported(&store));
    let copy_start = copy.changes_token(&group).expect("token");
    copy.put(&path("/n-1/z-1"), json("null"), PutOptions::default())
        .expect("put");
    let after_import = changes(&copy, &group, &copy_start);
    assert!(
        matches!(&after_import[..], [Change::Put(item)] if item.value.as_str() == "null"),
        "{after_import:?}"
    );
}

/// Alterations of a valid token: every single-bit flip of its text that is still text, every
/// truncation, and extensions.
fn altered(token: &str) -> Vec<String> {
    let mut out = Vec::new();
    for i in 0..token.len() {
        for bit in 0..8 {
            let mut bytes = token.as_bytes().to_vec();
            bytes[i] ^= 1 << bit;
            if let Ok(text) = String::from_utf8(bytes) {
                out.push(text);
            }
        }
    }
    out.extend((0..token.len()).map(|len| token[..len].to_owned()));
    for tail in ["A", "AA", "AAA", "AAAA", "_", "-", "0", token] {
        out.push(format!("{token}{tail}"));
    }
    out
}

/// A list page token (subtree, children, reverse), a groups page token, a scan cursor and change
/// tokens (at an entry boundary and inside a transaction's entry), each altered in every way
/// [`altered`] lists: refused with [`Error::InvalidPageToken`] or [`Error::InvalidChangeToken`],
/// never answered. The unaltered token still works.
pub fn altered_tokens_are_refused<H: Harness>(harness: &H) {
    let (_clock, store) = open_manual(harness);
    for text in ["/t-1/a-1", "/t-1/a-1/b-1", "/t-1/a-2", "/t-1/a-10", "/t-2"] {
        store
            .put(&path(text), json("1"), PutOptions::default())
            .unwrap();
    }
    let group = path("/t-1");
    let mut requests = Vec::new();
    for (children, reverse) in [(false, false), (true, false), (false, true)] {
        let mut request = ListRequest::new(group.clone());
        request.children_only = children;
        request.reverse = reverse;
        request.limit = 1;
        requests.push(request);
    }
    for request in requests {
        let token = store.list(&request).unwrap().next_page_token.unwrap();
        let mut next = request.clone();
        next.page_token = Some(token.clone());
        store.list(&next).expect("the unaltered token works");
        for bad in altered(&token) {
            next.page_token = Some(bad.clone());
            assert!(
                matches!(store.list(&next), Err(Error::InvalidPageToken(_))),
                "altered page token {bad:?} of {token:?} must be refused"
            );
        }
    }
    let token = store.groups(1, None).unwrap().next_page_token.unwrap();
    store
        .groups(1, Some(&token))
        .expect("the unaltered token works");
    for bad in altered(&token) {
        assert!(
            matches!(store.groups(1, Some(&bad)), Err(Error::InvalidPageToken(_))),
            "altered groups token {bad:?} must be refused"
        );
    }
    let cursor = store.scan(None, 1).unwrap().cursor.unwrap();
    store
        .scan(Some(&cursor), 1)
        .expect("the unaltered cursor works");
    for bad in altered(&cursor) {
        assert!(
            matches!(store.scan(Some(&bad), 1), Err(Error::InvalidPageToken(_))),
            "altered scan cursor {bad:?} must be refused"
        );
    }
    // Change tokens: one between entries, one inside a transaction's entry.
    let start = store.changes_token(&group).unwrap();
    store
        .transact(
            Transaction::new()
                .put(path("/t-1/a-1"), json("2"), PutOptions::default())
                .put(path("/t-1/a-2"), json("2"), PutOptions::default()),
        )
        .unwrap();
    let inside = store.changes(&group, Some(&start), 1).unwrap().changes[0].token;
    for token in [start, inside] {
        let text = token.to_string();
        assert_eq!(text.parse::<ChangeToken>().unwrap(), token);
        store
            .changes(&group, Some(&token), 10)
            .expect("the unaltered token works");
        for bad in altered(&text) {
            let outcome = bad
                .parse::<ChangeToken>()
                .and_then(|t| store.changes(&group, Some(&t), 10));
            assert!(
                matches!(outcome, Err(Error::InvalidChangeToken(_))),
                "altered change token {bad:?} of {text:?} must be refused, got {outcome:?}"
            );
        }
    }
    // A token of the feed of another group is refused too.
    assert!(matches!(
        store.changes(&path("/t-2"), Some(&start), 10),
        Err(Error::InvalidChangeToken(_))
    ));
}
