//! Using `pathdb` from scripts: documented exit statuses, `ls --json` with only items on
//! stdout, `ls --all`, `--server HOST:PORT`, shell completions.

use crate::{db_args, fails, fails_with, json_lines, ok, pathdb};

#[test]
fn help_documents_the_exit_statuses() {
    let help = ok(&["--help"]);
    for line in [
        "0  success",
        "1  not found",
        "2  usage or invalid input",
        "3  condition failed",
        "4  unavailable",
        "5  refused",
    ] {
        assert!(help.contains(line), "--help lacks {line:?}:\n{help}");
    }
}

#[test]
fn exit_statuses_tell_local_failures_apart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("t.pathdb");
    ok(&db_args(&db, &["put", "/u-1", "1"]));
    fails_with(1, &db_args(&db, &["get", "/u-2"]));
    fails_with(1, &db_args(&db, &["get", "/u-1", "--version", "4"]));
    fails_with(1, &db_args(&db, &["rm", "/u-2"]));
    fails_with(3, &db_args(&db, &["put", "/u-1", "2", "--must-not-exist"]));
    fails_with(3, &db_args(&db, &["rm", "/u-1", "--if-version", "2"]));
    fails(&db_args(&db, &["put", "/u-1", "{"]));
    fails(&db_args(&db, &["get", "/u-01"]));
    fails(&db_args(&db, &["frobnicate"]));
    fails(&db_args(&db, &["key", "decode", "zz"]));
    // Nothing listens on port 1: the server is unavailable.
    let err = fails_with(4, &["--server", "127.0.0.1:1", "get", "/u-1"]);
    assert!(err.contains("cannot reach the server"), "{err}");
}

#[test]
fn server_addresses_without_a_scheme_mean_http_and_nonsense_is_a_usage_error() {
    for bad in [
        "ftp://host:1",
        "http://",
        "a b",
        ":7070",
        "localhost:port",
        "http://u@h:1",
    ] {
        let err = fails(&["--server", bad, "get", "/u-1"]);
        assert!(err.contains("--server"), "{bad}: {err}");
    }
    // A valid address is taken (and then not reached: status 4, not 2).
    for good in ["127.0.0.1:1", "localhost:1", "http://127.0.0.1:1/"] {
        fails_with(4, &["--server", good, "get", "/u-1"]);
    }
}

#[test]
fn ls_json_prints_only_items_on_stdout_and_the_token_on_stderr() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("t.pathdb");
    for id in 1..=5 {
        ok(&db_args(
            &db,
            &["put", &format!("/u-1/p-{id}"), &id.to_string()],
        ));
    }
    let out = pathdb(&db_args(&db, &["--json", "ls", "/u-1", "--limit", "2"]));
    assert!(out.status.success());
    let items = json_lines(&String::from_utf8(out.stdout).expect("utf-8"));
    assert_eq!(items.len(), 2);
    assert!(
        items
            .iter()
            .all(|i| i["path"].is_string() && i.get("next_page_token").is_none())
    );
    let stderr = json_lines(&String::from_utf8(out.stderr).expect("utf-8"));
    assert_eq!(stderr.len(), 1);
    assert!(stderr[0]["next_page_token"].is_string(), "{stderr:?}");

    // --all follows every page and prints no token.
    let out = pathdb(&db_args(
        &db,
        &["--json", "ls", "/u-1", "--all", "--limit", "2"],
    ));
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let paths: Vec<String> = json_lines(&String::from_utf8(out.stdout).expect("utf-8"))
        .iter()
        .map(|i| i["path"].as_str().expect("path").to_owned())
        .collect();
    assert_eq!(
        paths,
        ["/u-1/p-1", "/u-1/p-2", "/u-1/p-3", "/u-1/p-4", "/u-1/p-5"]
    );
    let reversed = ok(&db_args(
        &db,
        &["--json", "ls", "/u-1", "--all", "--limit", "2", "--reverse"],
    ));
    assert_eq!(json_lines(&reversed)[0]["path"], "/u-1/p-5");

    // The human output keeps its table and token line; with --all, one table.
    let table = ok(&db_args(&db, &["ls", "/u-1", "--limit", "2"]));
    assert!(
        table.starts_with("PATH") && table.contains("next page: --page-token "),
        "{table}"
    );
    let table = ok(&db_args(&db, &["ls", "/u-1", "--all", "--limit", "2"]));
    assert_eq!(
        table.lines().filter(|l| l.starts_with("PATH")).count(),
        1,
        "{table}"
    );
    assert_eq!(table.lines().count(), 6, "{table}");
    assert!(!table.contains("next page"), "{table}");
}

#[test]
fn completions_for_bash_zsh_and_fish() {
    let bash = ok(&["completions", "bash"]);
    assert!(
        bash.contains("_pathdb()") && bash.contains("complete -F _pathdb"),
        "{bash}"
    );
    assert!(bash.contains("history") && bash.contains("--page-token"));
    let zsh = ok(&["completions", "zsh"]);
    assert!(zsh.starts_with("#compdef pathdb"), "{zsh}");
    let fish = ok(&["completions", "fish"]);
    assert!(fish.contains("complete -c pathdb"), "{fish}");
    fails(&["completions", "tcsh"]);
}

#[test]
fn completions_into_a_closed_pipe_exit_quietly() {
    for shell in ["bash", "zsh", "fish"] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_pathdb"))
            .args(["completions", shell])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("pathdb runs");
        // The reader goes away before pathdb writes, like `| head -0`.
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("pathdb finishes");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{shell}: {stderr}");
        assert!(!stderr.contains("panicked"), "{shell}: {stderr}");
    }
}

/// `pathdb COMMAND --table t --endpoint http://127.0.0.1:1` (where nothing listens): its exit
/// status and stderr.
fn on_port_1(command: &[&str]) -> (Option<i32>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pathdb"))
        .args(command)
        .args(["--table", "t", "--endpoint", "http://127.0.0.1:1"])
        .envs([
            ("AWS_ACCESS_KEY_ID", "test"),
            ("AWS_SECRET_ACCESS_KEY", "test"),
            ("AWS_REGION", "us-east-1"),
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("pathdb runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Nothing listens on port 1: DynamoDB is unreachable, for `create-table` and for `serve`.
#[cfg(feature = "dynamodb")]
#[test]
fn unreachable_dynamodb_is_status_4() {
    for command in [
        &["dynamodb", "create-table"][..],
        &["serve", "--backend", "dynamodb", "--addr", "127.0.0.1:0"],
    ] {
        let (status, stderr) = on_port_1(command);
        assert_eq!(status, Some(4), "{command:?}: {stderr}");
        assert!(
            stderr.contains("Connection refused"),
            "{command:?}: {stderr}"
        );
    }
}

/// A build without the `dynamodb` feature (the default) answers the DynamoDB commands with exit
/// status 2 and the command that builds one with it, before trying to reach anything.
#[cfg(not(feature = "dynamodb"))]
#[test]
fn a_build_without_dynamodb_says_how_to_get_it() {
    for command in [
        &["dynamodb", "create-table"][..],
        &["serve", "--backend", "dynamodb", "--addr", "127.0.0.1:0"],
    ] {
        let (status, stderr) = on_port_1(command);
        assert_eq!(status, Some(2), "{command:?}: {stderr}");
        assert!(
            stderr.contains("cargo install --path crates/pathdb-cli --features dynamodb"),
            "{command:?}: {stderr}"
        );
    }
}
