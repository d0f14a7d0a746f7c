//! `pathdb ns` and `pathdb codegen schemas`: the same output on a local file and through
//! `--server`, and a refused value's exit status 6 with its JSON pointers.

use crate::{Served, pathdb};
use serde_json::{Value, json};
use std::path::Path;

/// Sets every `created_at` and `modified_at` in `value` to 0.
fn mask(value: &mut Value) {
    match value {
        Value::Object(o) => {
            for (key, v) in o.iter_mut() {
                if key == "created_at" || key == "modified_at" {
                    *v = json!(0);
                } else {
                    mask(v);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(mask),
        _ => {}
    }
}

/// Times differ between two databases: masked, in JSON (a document or lines) and in `ns
/// get`'s text.
fn normalize(output: &str) -> String {
    if let Ok(mut document) = serde_json::from_str::<Value>(output) {
        mask(&mut document);
        return document.to_string();
    }
    output
        .lines()
        .map(|line| match serde_json::from_str::<Value>(line) {
            Ok(mut value) => {
                mask(&mut value);
                value.to_string()
            }
            _ if line.starts_with("modified:") => "modified: <time>".to_owned(),
            _ => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs `args` after `target` (`--db FILE` or `--server URL`): exit status, stdout, stderr.
fn run(target: &[&str], args: &[&str]) -> (i32, String, String) {
    let out = pathdb(&[target, args].concat());
    (
        out.status.code().unwrap_or(-1),
        normalize(&String::from_utf8_lossy(&out.stdout)),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn session(target: &[&str], dir: &Path) -> Vec<(i32, String, String)> {
    let schema = dir.join("person.json");
    std::fs::write(
        &schema,
        r#"{"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name"]}"#,
    )
    .unwrap();
    let strict = dir.join("strict.json");
    std::fs::write(&strict, r#"{"required": ["age"]}"#).unwrap();
    let (schema, strict) = (schema.to_str().unwrap(), strict.to_str().unwrap());
    let steps: &[&[&str]] = &[
        &["--json", "put", "/org-1/person-1", r#"{"name": "Ada"}"#],
        &[
            "--json",
            "put",
            "/org-1/person-2",
            r#"{"name": "Bo", "age": "x"}"#,
        ],
        &[
            "ns",
            "set",
            "person",
            "--schema",
            schema,
            "--history",
            "2",
            "--description",
            "people",
        ],
        &["ns", "ls"],
        &["--json", "ns", "ls"],
        &["ns", "get", "person"],
        &["--json", "ns", "get", "person"],
        &["put", "/org-1/person-3", r#"{"name": 3, "age": "x"}"#],
        &["--json", "put", "/org-1/person-3", r#"{"age": 1.5}"#],
        &["get", "/org-1/person-3"],
        &["ns", "check", "person", "--schema", strict],
        &["--json", "ns", "check", "person", "--schema", strict],
        &["ns", "violations", "person"],
        &["--json", "ns", "violations", "person"],
        &["ns", "set", "person", "--no-schema"],
        &["--json", "put", "/org-1/person-3", r#"{"age": "x"}"#],
        &["codegen", "schemas"],
        &["ns", "set", "person", "--schema", "/no/such/file.json"],
        &["ns", "get", "nobody"],
        &["ns", "rm", "person"],
        &["ns", "rm", "person"],
        &["ns", "ls"],
        // A namespace whose groups keep no change log (docs/changes.md).
        &["ns", "set", "session", "--no-changes"],
        &["ns", "get", "session"],
        &["--json", "ns", "get", "session"],
        &["--json", "put", "/session-1/a-1", r#"{"a": 1}"#],
        &["watch", "/session-1", "--count", "1"],
        &["ns", "rm", "session"],
        &["ns", "set", "session", "--description", "sessions"],
    ];
    steps.iter().map(|args| run(target, args)).collect()
}

#[test]
fn ns_commands_print_the_same_on_a_file_and_through_a_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let local = dir.path().join("local.pathdb");
    let server = Served::file(&dir.path().join("served.pathdb"));
    let local = session(&["--db", local.to_str().unwrap()], dir.path());
    let remote = session(&["--server", server.url.as_str()], dir.path());
    for (i, (l, r)) in local.iter().zip(&remote).enumerate() {
        assert_eq!(l.0, r.0, "step {i}: exit status (file {l:?}, server {r:?})");
        assert_eq!(l.1, r.1, "step {i}: stdout");
    }
    let status = |i: usize| local[i].0;
    // Without a change log: shown, written, not followed, not undone.
    assert_eq!(status(22), 0, "{:?}", local[22]);
    assert!(local[23].1.contains("changes:     none"), "{}", local[23].1);
    assert!(
        local[24].1.contains(r#""changes":false"#),
        "{}",
        local[24].1
    );
    assert_eq!(status(25), 0, "{:?}", local[25]);
    for refused in [&local[26], &remote[26]] {
        assert_ne!(refused.0, 0, "{refused:?}");
        assert!(refused.2.contains("keeps no change log"), "{refused:?}");
    }
    for refused in [&local[27], &remote[27]] {
        assert_ne!(refused.0, 0, "{refused:?}");
        assert!(refused.2.contains("cannot be undone"), "{refused:?}");
    }
    assert_eq!(status(28), 0, "{:?}", local[28]);
    assert_eq!(status(2), 0, "{:?}", local[2]);
    assert!(local[2].1.contains("defined namespace person (version 1)"));
    assert!(
        local[3]
            .1
            .contains("person           1  yes     2        people"),
        "{}",
        local[3].1
    );
    assert!(local[5].1.contains("\"required\""), "{}", local[5].1);
    // A refused put: status 6, nothing on stdout, each failure with its pointer on stderr.
    for refused in [&local[7], &remote[7]] {
        assert_eq!(refused.0, 6, "{refused:?}");
        assert!(refused.1.is_empty());
        assert!(
            refused.2.contains("  /name: 3 is not of type \"string\""),
            "{}",
            refused.2
        );
        assert!(
            refused
                .2
                .contains("  /age: \"x\" is not of type \"integer\" [schema /properties/age/type]"),
            "{}",
            refused.2
        );
    }
    for refused in [&local[8], &remote[8]] {
        assert_eq!(refused.0, 6);
        let error: Value = serde_json::from_str(refused.2.trim()).expect("one JSON error line");
        assert_eq!(error["error"]["code"], "schema_violation");
        assert_eq!(error["error"]["exit"], 6);
        let pointers: Vec<&str> = error["error"]["violations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["instance_path"].as_str().unwrap())
            .collect();
        assert_eq!(pointers, ["", "/age"], "{error}");
    }
    assert_eq!(status(9), 1, "nothing was written: {:?}", local[9]);
    // The dry run and the listing.
    assert!(local[10].1.starts_with("1 of 2 stored person items would violate this schema\n/org-1/person-1 (version 1)\n  (the value): \"age\" is a required property"), "{}", local[10].1);
    let check: Value = serde_json::from_str(&local[11].1).unwrap();
    assert_eq!(
        (check["checked"].clone(), check["violating"].clone()),
        (json!(2), json!(1))
    );
    assert!(
        local[12]
            .1
            .contains("/org-1/person-2 (version 1)\n  /age: \"x\" is not of type \"integer\""),
        "{}",
        local[12].1
    );
    assert!(
        local[12]
            .1
            .ends_with("1 of 2 stored person items violate its schema"),
        "{}",
        local[12].1
    );
    assert_eq!(super::json_lines(&local[13].1).len(), 1);
    // Without its schema, anything goes again.
    assert_eq!(
        (status(14), status(15)),
        (0, 0),
        "{:?} {:?}",
        local[14],
        local[15]
    );
    let bundle: Value = serde_json::from_str(&local[16].1).unwrap();
    assert_eq!(bundle["pathdb_namespaces"], 1);
    assert_eq!(bundle["namespaces"][0]["namespace"], "person");
    assert_eq!(bundle["namespaces"][0]["history"], 2);
    assert_eq!(status(17), 2, "{:?}", local[17]);
    assert_eq!(status(18), 1, "{:?}", local[18]);
    assert_eq!((status(19), status(20)), (0, 1));
    assert_eq!(
        local[21].1,
        "NAMESPACE  VERSION  SCHEMA  HISTORY  DESCRIPTION"
    );
}

fn alias_session(target: &[&str]) -> Vec<(i32, String, String)> {
    let steps: &[&[&str]] = &[
        &["put", "/user-1", r#"{"email": "ada@x.org"}"#],
        &["ns", "set", "user", "--alias", "/email-{email}"],
        &["get", "/email-ada@x.org"],
        &["--json", "get", "/email-ada@x.org"],
        &["put", "/user-2", r#"{"email": "ada@x.org"}"#],
        &["put", "/email-ada@x.org", "{}"],
        &["put", "/user-3", r#"{"email": true}"#],
        &["ls", "/email-ada@x.org"],
        &["ns", "aliases", "user"],
        &["--json", "ns", "aliases", "user"],
        &["ns", "retry", "user", "/email-{email}"],
        &["patch", "/email-ada@x.org", r#"{"n": 1}"#],
        &["rm", "/email-ada@x.org"],
        &["get", "/user-1"],
        &["put", "/team-1", r#"{"name": "a"}"#],
        &["put", "/team-2", r#"{"name": "a"}"#],
        &["ns", "set", "team", "--alias", "/name-{name}"],
        &["put", "/team-2", r#"{"name": "b"}"#],
        &["ns", "retry", "team", "/name-{name}"],
        &["get", "/name-a"],
        &["ns", "get", "team"],
    ];
    steps.iter().map(|args| run(target, args)).collect()
}

#[test]
fn alias_commands_print_the_same_on_a_file_and_through_a_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let local = dir.path().join("local.pathdb");
    let server = Served::file(&dir.path().join("served.pathdb"));
    let local = alias_session(&["--db", local.to_str().unwrap()]);
    let remote = alias_session(&["--server", server.url.as_str()]);
    // Tables hold times: compare the columns that are not.
    let strip = |text: &str| -> String {
        text.lines()
            .map(|l| {
                l.split("  ")
                    .filter(|c| !c.contains("T") || c.starts_with('/'))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    for (i, (l, r)) in local.iter().zip(&remote).enumerate() {
        assert_eq!(l.0, r.0, "step {i}: exit status (file {l:?}, server {r:?})");
        assert_eq!(strip(&l.1), strip(&r.1), "step {i}: stdout");
    }
    let status: Vec<i32> = local.iter().map(|s| s.0).collect();
    assert_eq!(
        status,
        [
            0, 0, 0, 0, 3, 3, 6, 0, 0, 0, 2, 0, 0, 1, 0, 0, 3, 0, 0, 0, 0
        ],
        "{local:#?}"
    );
    assert!(
        local[1]
            .1
            .contains("/email-{email}  ready  (1 items checked, 1 aliases written)"),
        "{}",
        local[1].1
    );
    assert!(
        local[2].1.contains("/email-ada@x.org -> /user-1"),
        "{}",
        local[2].1
    );
    let read: Value = serde_json::from_str(local[3].1.trim()).unwrap();
    assert_eq!(
        (&read["path"], &read["alias"]),
        (&json!("/user-1"), &json!("/email-ada@x.org"))
    );
    for (i, needle) in [
        (4, "alias /email-ada@x.org is taken: /user-1 holds it"),
        (5, "/email-ada@x.org is an alias of /user-1"),
        (6, "member email is a boolean"),
        (10, "not in conflict"),
    ] {
        assert!(local[i].2.contains(needle), "step {i}: {}", local[i].2);
        assert!(remote[i].2.contains(needle), "step {i}: {}", remote[i].2);
    }
    // The conflict: both items named, exit 3; fixed and retried, the alias is there.
    assert!(
        local[16]
            .1
            .contains("/name-a is wanted by /team-1 and /team-2"),
        "{}",
        local[16].1
    );
    assert!(
        local[16].2.contains("pathdb ns retry team '/name-{name}'"),
        "{}",
        local[16].2
    );
    assert!(
        local[18].1.contains("/name-{name}  ready"),
        "{}",
        local[18].1
    );
    assert!(
        local[19].1.contains("/name-a -> /team-1"),
        "{}",
        local[19].1
    );
    assert!(
        local[20].1.contains("aliases:     /name-{name}"),
        "{}",
        local[20].1
    );
}
