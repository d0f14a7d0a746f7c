//! `--json`: every command's output is JSON, and a failure is one JSON object on stderr,
//! `{"error": {"code", "message", "exit"}}`, whatever failed (usage, input, the database, the
//! server).

use crate::{db_args, fails_with, ok};
use serde_json::{Value, json};

/// Runs a failing `pathdb` and returns its one JSON error object (after checking the exit
/// status is the object's `exit`).
fn json_error(code: i32, args: &[&str]) -> Value {
    let stderr = fails_with(code, args);
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    let error: Value = serde_json::from_str(&stderr).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert_eq!(error["error"]["exit"], code, "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{error}"
    );
    error["error"].clone()
}

#[test]
fn key_commands_print_json() {
    let explained: Value =
        serde_json::from_str(&ok(&["--json", "key", "explain", "/user-7/post-2"])).expect("JSON");
    assert_eq!(explained["path"], "/user-7/post-2");
    assert_eq!(
        explained["encoded_hex"],
        "7573657201080701706f73740108020020122012"
    );
    assert_eq!(explained["segments"][1]["kind"], "integer");
    assert_eq!(explained["segments"][1]["bytes_hex"], "0807");
    assert_eq!(explained["sizes"]["encoded"], 20);
    let encoded: Value =
        serde_json::from_str(&ok(&["--json", "key", "encode", "/p-10"])).expect("JSON");
    assert_eq!(
        encoded,
        json!({"path": "/p-10", "format": "hex", "encoded": "7001080a000812"})
    );
    let decoded: Value =
        serde_json::from_str(&ok(&["key", "decode", "7001080a000812", "--json"])).expect("JSON");
    assert_eq!(decoded, json!({"path": "/p-10"}));
}

#[test]
fn errors_are_one_json_object_on_stderr() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("json.pathdb");
    // Invalid input: a key path.
    let error = json_error(2, &["--json", "key", "explain", "/user-01"]);
    assert_eq!(error["code"], "invalid_path");
    // Usage: clap's own errors too.
    let error = json_error(2, &["--json", "get"]);
    assert_eq!(error["code"], "usage");
    // The demo, a comparison for reading, refuses --json rather than print text.
    let error = json_error(2, &["--json", "demo"]);
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("--json")),
        "{error}"
    );
    // Not found, from a file.
    ok(&db_args(&db, &["put", "/u-1", "1"]));
    let error = json_error(1, &db_args(&db, &["--json", "get", "/u-2"]));
    assert_eq!(error["code"], "not_found");
    // A failed condition.
    let error = json_error(
        3,
        &db_args(&db, &["--json", "put", "/u-1", "2", "--must-not-exist"]),
    );
    assert_eq!(error["code"], "condition_failed");
    // Without --json, the same failure is text.
    let stderr = fails_with(1, &db_args(&db, &["get", "/u-2"]));
    assert!(stderr.starts_with("error: "), "{stderr}");
    // Through a server: its own code.
    let server = crate::Served::file(&db);
    let error = json_error(
        2,
        &[
            "--json",
            "--server",
            &server.url,
            "ls",
            "/u-1",
            "--page-token",
            "nope",
        ],
    );
    assert_eq!(error["code"], "invalid_page_token");
    drop(server);
    // A server that is not there.
    let error = json_error(4, &["--json", "--server", "127.0.0.1:9", "get", "/u-1"]);
    assert_eq!(error["code"], "unreachable");
}
