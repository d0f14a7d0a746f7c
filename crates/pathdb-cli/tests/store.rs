//! `put get rm ls history export import demo` on a local database file.

use crate::{db_args, fails, fails_with, fails_with_stdin, json_lines, ok, pathdb};

#[test]
fn put_get_ls_rm_round_trip_with_json_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("t.pathdb");
    for id in [1, 2, 10] {
        ok(&db_args(
            &db,
            &["put", &format!("/u-1/p-{id}"), &format!(r#"{{"n": {id}}}"#)],
        ));
    }
    ok(&db_args(&db, &["put", "/u-1/p-1/c-5", r#""deep""#]));
    ok(&db_args(&db, &["put", "/u-10/p-1", "null"]));

    let got = json_lines(&ok(&db_args(&db, &["--json", "get", "/u-1/p-10"])));
    assert_eq!(got.len(), 1);
    let item = &got[0];
    assert_eq!(item["path"], "/u-1/p-10");
    assert_eq!(item["version"], 1);
    assert_eq!(item["value"], serde_json::json!({"n": 10}));
    assert!(item["created_at"].is_i64() && item["modified_at"].is_i64());
    assert!(item["expires_at"].is_null());

    let listed = json_lines(&ok(&db_args(&db, &["--json", "ls", "/u-1"])));
    let paths: Vec<&str> = listed
        .iter()
        .map(|v| v["path"].as_str().expect("path"))
        .collect();
    assert_eq!(paths, ["/u-1/p-1", "/u-1/p-1/c-5", "/u-1/p-2", "/u-1/p-10"]);
    let p1 = json_lines(&ok(&db_args(&db, &["--json", "ls", "/u-1/p-1"])));
    assert_eq!(p1.len(), 2, "/u-1/p-1 never returns /u-1/p-10: {p1:?}");
    let children = json_lines(&ok(&db_args(
        &db,
        &["--json", "ls", "/u-1", "--children", "--reverse"],
    )));
    let paths: Vec<&str> = children
        .iter()
        .map(|v| v["path"].as_str().expect("path"))
        .collect();
    assert_eq!(paths, ["/u-1/p-10", "/u-1/p-2", "/u-1/p-1"]);

    // A child with items below it and none of its own is a node: a trailing `/` in the
    // table, the API's object with `--json`.
    ok(&db_args(&db, &["put", "/u-10/folder-2/file-1", "1"]));
    let table = ok(&db_args(&db, &["ls", "/u-10", "--children"]));
    let rows: Vec<&str> = table.lines().skip(1).map(|l| l.trim_end()).collect();
    assert!(rows[0].starts_with("/u-10/folder-2/"), "{table}");
    assert!(rows[1].starts_with("/u-10/p-1 "), "{table}");
    let nodes = json_lines(&ok(&db_args(&db, &["--json", "ls", "/u-10", "--children"])));
    assert_eq!(
        nodes[0],
        serde_json::json!({"path": "/u-10/folder-2", "node": true})
    );
    assert_eq!(nodes[1]["path"], "/u-10/p-1");

    // Paging: stdout has only the items, stderr the token; following it yields the rest.
    let page = pathdb(&db_args(&db, &["--json", "ls", "/u-1", "--limit", "3"]));
    assert!(page.status.success());
    let first = json_lines(&String::from_utf8(page.stdout).expect("utf-8"));
    assert_eq!(first.len(), 3);
    assert!(
        first.iter().all(|item| item["path"].is_string()),
        "{first:?}"
    );
    let token_line = json_lines(&String::from_utf8(page.stderr).expect("utf-8"));
    assert_eq!(token_line.len(), 1, "{token_line:?}");
    let token = token_line[0]["next_page_token"]
        .as_str()
        .expect("token line");
    let rest = json_lines(&ok(&db_args(
        &db,
        &[
            "--json",
            "ls",
            "/u-1",
            "--limit",
            "3",
            "--page-token",
            token,
        ],
    )));
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0]["path"], "/u-1/p-10");

    let table = ok(&db_args(&db, &["get", "/u-1/p-1"]));
    assert!(
        table.starts_with("PATH") && table.contains("/u-1/p-1") && table.contains(r#"{"n":1}"#),
        "{table}"
    );

    ok(&db_args(&db, &["rm", "/u-1/p-2", "--if-version", "1"]));
    let err = fails_with(1, &db_args(&db, &["get", "/u-1/p-2"]));
    assert!(err.contains("not found"), "{err}");
}

#[test]
fn conditions_and_history() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("t.pathdb");
    ok(&db_args(
        &db,
        &[
            "put",
            "/e-1/audit",
            r#"{"s":"pass"}"#,
            "--history",
            "--must-not-exist",
        ],
    ));
    let err = fails_with(
        3,
        &db_args(&db, &["put", "/e-1/audit", "{}", "--must-not-exist"]),
    );
    assert!(
        err.contains("condition failed") && err.contains("version 1"),
        "{err}"
    );
    let err = fails_with(
        3,
        &db_args(&db, &["put", "/e-1/audit", "{}", "--if-version", "7"]),
    );
    assert!(err.contains("condition failed"), "{err}");
    ok(&db_args(
        &db,
        &[
            "put",
            "/e-1/audit",
            r#"{"s":"fail"}"#,
            "--history",
            "--if-version",
            "1",
        ],
    ));
    let history = json_lines(&ok(&db_args(&db, &["--json", "history", "/e-1/audit"])));
    let versions: Vec<u64> = history
        .iter()
        .map(|v| v["version"].as_u64().expect("version"))
        .collect();
    assert_eq!(versions, [2, 1]);
    let v1 = json_lines(&ok(&db_args(
        &db,
        &["--json", "get", "/e-1/audit", "--version", "1"],
    )));
    assert_eq!(v1[0]["value"], serde_json::json!({"s": "pass"}));
}

#[test]
fn bad_input_is_an_error_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("t.pathdb");
    ok(&db_args(&db, &["put", "/u-1", "1"]));
    let before = ok(&db_args(&db, &["export"]));

    let err = fails(&db_args(&db, &["put", "/u-01", "1"]));
    assert!(err.contains("leading zeros"), "{err}");
    let err = fails(&db_args(&db, &["put", "/u-2", "{not json"]));
    assert!(err.contains("invalid JSON"), "{err}");
    let big = format!("\"{}\"", "x".repeat(400_001));
    let err = fails_with_stdin(&db_args(&db, &["put", "/u-3", "-"]), &big);
    assert!(err.contains("too large"), "{err}");
    let long_key = format!("/u-1/s-{}", "k".repeat(1100));
    let err = fails(&db_args(&db, &["put", &long_key, "1"]));
    assert!(err.contains("key path too long"), "{err}");
    let err = fails(&db_args(&db, &["ls", "/u-1", "--page-token", "garbage!"]));
    assert!(err.contains("page token"), "{err}");
    let err = fails(&db_args(&db, &["ls", "/u-1", "--limit", "0"]));
    assert!(err.contains("limit"), "{err}");
    let err = fails(&db_args(&db, &["ls", "/u-1", "--gt", "/u-2/x-1"]));
    assert!(err.contains("not in the group"), "{err}");

    assert_eq!(
        ok(&db_args(&db, &["export"])),
        before,
        "failed commands changed the database"
    );
}

#[test]
fn export_import_is_lossless() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = (dir.path().join("a.pathdb"), dir.path().join("b.pathdb"));
    ok(&db_args(
        &a,
        &[
            "put",
            "/g-1/x-!5",
            r#"{"k": [1, 2.50, "é\n"], "z": 1, "a": 2}"#,
            "--history",
        ],
    ));
    ok(&db_args(
        &a,
        &["put", "/g-1/x-!5", r#"{"v": 2}"#, "--history"],
    ));
    ok(&db_args(
        &a,
        &["put", "/g-2/y-~AAEC", "true", "--ttl", "3600"],
    ));
    let dump = ok(&db_args(&a, &["export"]));
    assert_eq!(
        dump.lines().count(),
        5,
        "2 items + 2 revisions + the last line: {dump}"
    );
    assert_eq!(
        dump.lines().last(),
        Some(r#"{"export":"complete","records":4,"skipped":0}"#)
    );
    assert!(
        dump.contains(r#""k":[1,2.50,"é\n"],"z":1,"a":2"#),
        "key order and number spelling kept: {dump}"
    );
    let file = dir.path().join("dump.jsonl");
    std::fs::write(&file, &dump).expect("write dump");
    ok(&db_args(&b, &["import", file.to_str().expect("utf-8")]));
    assert_eq!(ok(&db_args(&b, &["export"])), dump);

    std::fs::write(&file, "{\"path\": \"/bad\"}\n").expect("write");
    let err = fails(&db_args(&b, &["import", file.to_str().expect("utf-8")]));
    assert!(err.contains("line 1"), "{err}");
    assert_eq!(ok(&db_args(&b, &["export"])), dump);
}

#[test]
fn demo_runs_on_a_temporary_database() {
    let out = pathdb(&["demo"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert!(
        text.contains("/season-2026-spring/score-!1500/ts-1719100500/player-p_8842"),
        "{text}"
    );
    assert!(
        text.contains("v3 {\"auditor\":\"Lee\",\"status\":\"pass\"}"),
        "{text}"
    );
    // One item per row: each PathDB path next to its own string key (with that key's rank).
    let row = text
        .lines()
        .find(|l| l.contains("/post-2 "))
        .expect("a row for post 2");
    assert!(row.trim_end().ends_with(" 8. POST#2"), "{row}");
    let row = text
        .lines()
        .find(|l| l.contains("player-ace_pilot"))
        .expect("a row for ace_pilot");
    assert!(
        row.trim_end().ends_with(" 1. 10#1719100800#ace_pilot"),
        "{row}"
    );
}

/// `--server URL demo` loads the scenarios into that server, not a temporary file.
#[test]
fn demo_uses_the_server_when_given() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = crate::Served::file(&dir.path().join("served.pathdb"));
    let text = ok(&["--server", &server.url, "demo"]);
    assert!(
        text.starts_with(&format!("PathDB demo: server {}\n", server.url)),
        "{text}"
    );
    assert_eq!(
        ok(&["--server", &server.url, "ls", "/", "--prefix", "season"]),
        "/season-2026-spring\n"
    );
}

/// `ls` takes a trailing slash as the same path (a shell completes folders that way); an
/// escaped `%/` stays part of the id, and other commands keep the key path grammar.
#[test]
fn ls_takes_a_trailing_slash() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("slash.pathdb");
    ok(&db_args(&db, &["put", "/user-7/post-1", "1"]));
    ok(&db_args(&db, &["put", "/file-a%//x-1", "2"]));
    assert_eq!(
        ok(&db_args(&db, &["--json", "ls", "/user-7/"])),
        ok(&db_args(&db, &["--json", "ls", "/user-7"]))
    );
    assert_eq!(
        ok(&db_args(&db, &["ls", "/user-7/", "--children"])),
        ok(&db_args(&db, &["ls", "/user-7", "--children"]))
    );
    // `/file-a%/` is the group whose id is "a/", not `/file-a` with a slash.
    let listed = json_lines(&ok(&db_args(&db, &["--json", "ls", "/file-a%/"])));
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["path"], "/file-a%//x-1");
    let stderr = fails(&db_args(&db, &["ls", "/user-7//"]));
    assert!(stderr.contains("namespace"), "{stderr}");
    let stderr = fails(&db_args(&db, &["get", "/user-7/"]));
    assert!(stderr.contains("namespace"), "{stderr}");
}
