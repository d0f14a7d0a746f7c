//! The canonical vectors that the Python and TypeScript clients test against, so that the three
//! implementations cannot drift apart: `clients/vectors/keypath-text.json` for the text syntax,
//! `clients/vectors/keypath-covers.json` for the subtree test (`KeyPath::covers`). These tests
//! fail when a committed file differs from what the codec says today;
//! `PATHDB_UPDATE_VECTORS=1 cargo test -p pathdb-keys --test tests vectors` rewrites them.
//!
//! Each text case is an input text and either its canonical text, typed elements and binary
//! encoding (hex), or the byte offset and rule of the parse error (`rule` is the `Rule` variant's
//! name). Each covers case is two valid texts, `prefix` and `path`, and whether `prefix` covers
//! `path`.

use pathdb_keys::{Id, KeyPath};
use serde_json::{Value, json};
use std::path::PathBuf;

/// Inputs: valid texts in canonical and non-canonical spellings, and invalid ones.
fn inputs() -> Vec<String> {
    let mut texts: Vec<String> = [
        // integers
        "/i-0",
        "/i-1",
        "/i--1",
        "/i-7/post-2",
        "/i-1234",
        "/i-18446744073709551615",
        "/i--18446744073709551615",
        "/i-18446744073709551616",
        "/i--18446744073709551616",
        "/i-9007199254740993",
        "/i--9007199254740993",
        "/i-72057594037927936",
        "/i--0",
        "/i-00",
        "/i-01",
        "/i--01",
        "/i-!0",
        "/i-!1500",
        "/i-!-1500",
        "/i-!-0",
        "/i-!01",
        "/i-!18446744073709551615",
        "/i-!-18446744073709551615",
        "/i-!18446744073709551616",
        // strings and escapes
        "/s-abc",
        "/s-a-b-c",
        "/s--",
        "/s---",
        "/s-%-",
        "/s-%-1",
        "/s-%-0",
        "/s-%0",
        "/s-%01",
        "/s-%7",
        "/s-%1234",
        "/s-%%",
        "/s-100%25",
        "/s-a%/b",
        "/s-%/",
        "/s-a%/b/t-1",
        "/s-%~x",
        "/s-%!x",
        "/s-a~b",
        "/s-a!b",
        "/s-%a%b%c",
        "/s-%%%/",
        "/s-%",
        "/s-a%",
        "/s-x%\u{e9}",
        "/s-\u{e9}t\u{e9}",
        "/s-\u{65e5}\u{672c}",
        "/s-\u{1f600}",
        "/s-%\u{1f600}",
        "/s-a b",
        "/s-\u{80}",
        "/s-\u{9f}",
        "/s-tab\there",
        "/s-nl\nhere",
        "/s-%\u{1}",
        "/s-del\u{7f}",
        "/s-\u{0}",
        "/s-a?b#c&d=e+f",
        "/s-.",
        "/s-..",
        "/s-%4c9d36e5-6b19-4e6a-828c-226ed667458a",
        "/s-4c9d36e5-6b19-4e6a-828c-226ed667458",
        "/s-4c9d36e5-6b19-4e6a-828c-226ed667458ag",
        "/s-4c9d36e5x6b19-4e6a-828c-226ed667458a",
        "/s-",
        // descending strings
        "/s-!abc",
        "/s-!%!abc",
        "/s-!!abc",
        "/s-!%~x",
        "/s-!%7",
        "/s-!%-7",
        "/s-!a%/b",
        "/s-!",
        "/s-!%",
        "/s-!%4c9d36e5-6b19-4e6a-828c-226ed667458a",
        "/s-!4c9d36e5-6b19-4e6a-828c-226ed667458a",
        "/s-!\u{e9}",
        // UUIDs
        "/u-4c9d36e5-6b19-4e6a-828c-226ed667458a",
        "/u-4C9D36E5-6B19-4E6A-828C-226ED667458A",
        "/u-00000000-0000-0000-0000-000000000000",
        "/u-ffffffff-ffff-ffff-ffff-ffffffffffff",
        "/user-4c9d36e5-6b19-4e6a-828c-226ed667458a/post-1234/comment-1678901234/react-42",
        // bytes
        "/b-~AAEC",
        "/b-~YWJj",
        "/b-~_w",
        "/b-~-_8",
        "/b-~AA",
        "/b-~AAA",
        "/b-~AAAA",
        "/b-~",
        "/b-~A",
        "/b-~AB",
        "/b-~AAB",
        "/b-~YQ==",
        "/b-~YW+j",
        "/b-~YW/j",
        "/b-~Y%Q",
        "/b-!~YQ",
        "/b-!~AP8",
        "/b-!~",
        "/b-!~AB",
        "/b-~CQ/c-1",
        // namespaces and structure
        "/user-7/post",
        "/user-7/settings",
        "/user-7/post-1/comment",
        "/x-1/y",
        "/_-1",
        "/_a_1-1/B-2",
        "/user",
        "/user/post-1",
        "/user-7/post/comment-1",
        "/user-7/",
        "/user-7//post-1",
        "user-7",
        "",
        "/",
        "/-1",
        "/1a-1",
        "/a.b-1",
        "/a b-1",
        "/\u{e9}-1",
        "/user-7/p\u{e9}-1",
        "/user-7/post-1?x",
        "/a-1/b-%2F",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    texts.push(format!("/{}-1", "n".repeat(64)));
    texts.push(format!("/{}-1", "n".repeat(65)));
    texts.push(format!("/a-1/{}", "N".repeat(64)));
    texts
}

fn id_json(id: &Id) -> Value {
    let (kind, desc, value) = match id {
        Id::Int(v) => ("int", false, json!(v.to_string())),
        Id::DescInt(v) => ("int", true, json!(v.to_string())),
        Id::String(s) => ("string", false, json!(s)),
        Id::DescString(s) => ("string", true, json!(s)),
        Id::Bytes(b) => ("bytes", false, json!(hex::encode(b))),
        Id::DescBytes(b) => ("bytes", true, json!(hex::encode(b))),
        Id::Uuid(u) => ("uuid", false, json!(u.hyphenated().to_string())),
    };
    json!({"type": kind, "desc": desc, "value": value})
}

fn case(text: &str) -> Value {
    match text.parse::<KeyPath>() {
        Ok(path) => {
            let elements: Vec<Value> = path
                .elements()
                .iter()
                .map(|e| json!({"namespace": e.namespace().as_str(), "id": e.id().map(id_json)}))
                .collect();
            json!({
                "text": text,
                "canonical": path.to_string(),
                "elements": elements,
                "encoded": hex::encode(path.encode()),
            })
        }
        Err(e) => {
            let debug = format!("{:?}", e.rule);
            let rule = debug
                .split(|c: char| !c.is_ascii_alphanumeric())
                .next()
                .unwrap_or_default();
            json!({
                "text": text,
                "error": {"offset": e.offset, "rule": rule, "message": e.to_string()},
            })
        }
    }
}

fn vectors() -> String {
    let cases: Vec<Value> = inputs().iter().map(|t| case(t)).collect();
    let document = json!({
        "about": "Key path text vectors generated by crates/pathdb-keys/tests/vectors.rs from the \
                  Rust codec: PATHDB_UPDATE_VECTORS=1 cargo test -p pathdb-keys --test tests vectors. \
                  offset is in UTF-8 bytes; rule is the Rule variant; encoded is the binary form in hex.",
        "cases": cases,
    });
    pretty(&document)
}

/// Pairs of valid texts for the covers vectors; each is tested both ways round, and each text
/// against itself.
fn covers_pairs() -> Vec<(&'static str, &'static str)> {
    vec![
        // a parent and its subtree; siblings whose texts share bytes
        ("/u-1/p-1", "/u-1/p-1/c-2"),
        ("/u-1/p-1", "/u-1/p-1/c-2/d-3"),
        ("/u-1/p-1", "/u-1/p-10"),
        ("/u-1/p-1", "/u-1/p-10/c-2"),
        ("/u-1/p-1", "/u-1/p-2"),
        ("/u-1", "/u-1/p-1"),
        ("/u-1", "/u-10"),
        ("/u-1", "/u-10/p-1"),
        ("/u-1", "/u-2/p-1"),
        ("/u-1/p-1/c-2", "/u-1/p-2/c-2"),
        ("/a-1/b-2/c-3", "/a-1/b-2/c-3/d-4/e-5"),
        ("/a-1/b-2/c-3", "/a-1/b-3/c-3/d-4"),
        ("/a-1/b-2", "/a-1/bb-2"),
        ("/a-1/b-2", "/a-1/b-2/b-2"),
        // a last element without id stands for its namespace
        ("/u-1/p", "/u-1/p-1"),
        ("/u-1/p", "/u-1/p-1/c-2"),
        ("/u-1/p", "/u-1/p-1/c"),
        ("/u-1/p", "/u-1/pp-1"),
        ("/u-1/p", "/u-1/post-1"),
        ("/u-1/post", "/u-1/p-1"),
        ("/u-1/p", "/u-1/q"),
        ("/u-1/p", "/u-2/p-1"),
        ("/u-1/p", "/u-1/p-!1"),
        ("/u-1/p", "/u-1/p-%1"),
        ("/a-1/b", "/a-1/b-2/c"),
        // one id, another type: int, string, descending
        ("/a-1", "/a-%1"),
        ("/a-1/b-1", "/a-%1/b-1"),
        ("/a-1/b-1", "/a-!1/b-1"),
        ("/i-!5", "/i-5"),
        ("/i-!5/x-1", "/i-!5/x-1/y-2"),
        ("/i--5/x-1", "/i-5/x-1/y-2"),
        ("/i--5/x-1", "/i--5/x-1/y-2"),
        ("/i-!-5/x-1", "/i-!-5/x-1/y-2"),
        (
            "/i-18446744073709551615/x-1",
            "/i-18446744073709551615/x-1/y-2",
        ),
        ("/i-9007199254740993", "/i-9007199254740992/x-1"),
        ("/i-9007199254740993", "/i-9007199254740993/x-1"),
        ("/i--18446744073709551615", "/i--18446744073709551615/x-1"),
        ("/i--18446744073709551615", "/i-18446744073709551615/x-1"),
        // strings and escapes
        ("/s-abc", "/s-abc/t-1"),
        ("/s-abc", "/s-abcd/t-1"),
        ("/s-!abc", "/s-!abc/t-1"),
        ("/s-!abc", "/s-abc/t-1"),
        ("/s-a%/b", "/s-a%/b/t-1"),
        ("/s-a", "/s-a%/b"),
        ("/s-a", "/s-a/b-1"),
        ("/s-a%/b", "/s-a/b-1"),
        ("/s-100%25", "/s-100%25/t-1"),
        ("/s-%%", "/s-%%/t-1"),
        ("/s-%%", "/s-%/t-1"),
        ("/s-%7", "/s-7/t-1"),
        ("/s-%-1", "/s--1/t-1"),
        ("/s-a-b-c", "/s-a-b-c/t-1"),
        ("/s-a-b", "/s-a-b-c/t-1"),
        ("/s-\u{e9}t\u{e9}", "/s-\u{e9}t\u{e9}/x-1"),
        ("/s-e", "/s-\u{e9}"),
        ("/s-\u{1f600}", "/s-\u{1f600}/x-1"),
        ("/s--", "/s--/x-1"),
        ("/s--", "/s-%-/x-1"),
        ("/s-!%!abc", "/s-!abc/x-1"),
        ("/s-!%!abc", "/s-%!abc/x-1"),
        // UUIDs (any case), and the string of a UUID's text
        (
            "/u-4c9d36e5-6b19-4e6a-828c-226ed667458a",
            "/u-4C9D36E5-6B19-4E6A-828C-226ED667458A/x-1",
        ),
        (
            "/u-4c9d36e5-6b19-4e6a-828c-226ed667458a",
            "/u-%4c9d36e5-6b19-4e6a-828c-226ed667458a/x-1",
        ),
        (
            "/u-4c9d36e5-6b19-4e6a-828c-226ed667458a",
            "/u-4c9d36e5-6b19-4e6a-828c-226ed667458b",
        ),
        (
            "/user-4c9d36e5-6b19-4e6a-828c-226ed667458a/post",
            "/user-4c9d36e5-6b19-4e6a-828c-226ed667458a/post-1234/comment-1678901234",
        ),
        // bytes
        ("/b-~AAEC", "/b-~AAEC/c-1"),
        ("/b-~AA", "/b-~AAEC"),
        ("/b-~AA", "/b-~AA/c-1"),
        ("/b-~AA", "/b-!~AA/c-1"),
        ("/b-!~AP8", "/b-~AP8"),
        ("/b-!~AP8", "/b-!~AP8/c-1"),
        ("/b-~YWJj", "/b-abc"),
        ("/b-~YWJj", "/b-~YWJj/c-1"),
    ]
}

fn covers_case(prefix: &str, path: &str) -> Value {
    let parse = |text: &str| -> KeyPath {
        text.parse()
            .unwrap_or_else(|e| panic!("covers vector {text:?} does not parse: {e}"))
    };
    json!({"prefix": prefix, "path": path, "covers": parse(prefix).covers(&parse(path))})
}

fn covers_vectors() -> String {
    let mut cases: Vec<Value> = Vec::new();
    let mut texts: Vec<&str> = Vec::new();
    for (a, b) in covers_pairs() {
        cases.push(covers_case(a, b));
        cases.push(covers_case(b, a));
        for text in [a, b] {
            if !texts.contains(&text) {
                texts.push(text);
            }
        }
    }
    cases.extend(texts.iter().map(|t| covers_case(t, t)));
    let document = json!({
        "about": "Key path covers vectors generated by crates/pathdb-keys/tests/vectors.rs from \
                  KeyPath::covers: PATHDB_UPDATE_VECTORS=1 cargo test -p pathdb-keys --test tests \
                  vectors. covers: path is prefix or lies below it, compared element by element \
                  (typed ids, not text), where a last element of prefix without id stands for \
                  every id of its namespace.",
        "cases": cases,
    });
    pretty(&document)
}

fn pretty(document: &Value) -> String {
    let mut text = serde_json::to_string_pretty(&sorted(document)).expect("serializable");
    text.push('\n');
    text
}

/// `value` with every object's members in name order, whichever order serde_json keeps (its
/// `preserve_order` feature, which another crate of the workspace may turn on, keeps the
/// order they were written in): the file is the same however the test is built.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(members) => {
            let mut names: Vec<&String> = members.keys().collect();
            names.sort();
            Value::Object(
                names
                    .into_iter()
                    .map(|name| (name.clone(), sorted(&members[name])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// Compares `expected` with the committed file `clients/vectors/{name}` (or writes it, with
/// `PATHDB_UPDATE_VECTORS` set).
fn check_current(name: &str, expected: &str) {
    let file: PathBuf = [env!("CARGO_MANIFEST_DIR"), "../../clients/vectors", name]
        .iter()
        .collect();
    if std::env::var_os("PATHDB_UPDATE_VECTORS").is_some() {
        std::fs::write(&file, expected).expect("write the vectors file");
        return;
    }
    let found = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(
        found == expected,
        "{} is stale: run PATHDB_UPDATE_VECTORS=1 cargo test -p pathdb-keys --test tests vectors",
        file.display()
    );
}

#[test]
fn vectors_file_is_current() {
    check_current("keypath-text.json", &vectors());
}

#[test]
fn covers_vectors_file_is_current() {
    check_current("keypath-covers.json", &covers_vectors());
}
