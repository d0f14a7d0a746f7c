//! The canonical text vectors that the Python and TypeScript clients test against
//! (`clients/vectors/keypath-text.json`), so that the three implementations of the text syntax
//! cannot drift apart. This test fails when the committed file differs from what the codec says
//! today; `PATHDB_UPDATE_VECTORS=1 cargo test -p pathdb-keys --test tests vectors` rewrites it.
//!
//! Each case is an input text and either its canonical text, typed elements and binary encoding
//! (hex), or the byte offset and rule of the parse error (`rule` is the `Rule` variant's name).

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
    let mut text = serde_json::to_string_pretty(&document).expect("serializable");
    text.push('\n');
    text
}

#[test]
fn vectors_file_is_current() {
    let file: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "../../clients/vectors/keypath-text.json",
    ]
    .iter()
    .collect();
    let expected = vectors();
    if std::env::var_os("PATHDB_UPDATE_VECTORS").is_some() {
        std::fs::write(&file, &expected).expect("write the vectors file");
        return;
    }
    let found = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(
        found == expected,
        "{} is stale: run PATHDB_UPDATE_VECTORS=1 cargo test -p pathdb-keys --test tests vectors",
        file.display()
    );
}
