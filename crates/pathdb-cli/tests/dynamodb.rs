//! `pathdb dynamodb create-table` and `pathdb serve --backend dynamodb` against the local
//! DynamoDB-compatible server named by `PATHDB_DYNAMODB_ENDPOINT` (scripts/test.sh starts one);
//! without it the test returns at once, saying so.

use crate::{Served, ok, pathdb_command};

/// The table flags for a table named `name` plus this process's id, on the endpoint the
/// environment names; `None` (saying so) without one.
pub(crate) fn table_flags(name: &str) -> Option<(String, Vec<String>)> {
    let Ok(endpoint) = std::env::var("PATHDB_DYNAMODB_ENDPOINT") else {
        eprintln!("skipped: PATHDB_DYNAMODB_ENDPOINT is not set");
        return None;
    };
    let table = format!("{name}-{}", std::process::id());
    let flags = [
        "--table",
        &table,
        "--endpoint",
        &endpoint,
        "--region",
        "us-east-1",
    ];
    Some((table.clone(), flags.map(str::to_owned).to_vec()))
}

#[test]
fn serve_on_dynamodb_with_the_same_output() {
    let Some((table, flags)) = table_flags("pathdb-cli") else {
        return;
    };
    let where_: Vec<&str> = flags.iter().map(String::as_str).collect();
    let where_ = where_.as_slice();
    let created = ok(&[&["dynamodb", "create-table"][..], where_].concat());
    assert_eq!(created.trim(), format!("created table {table}"));
    let again = ok(&[&["dynamodb", "create-table"][..], where_].concat());
    assert_eq!(again.trim(), format!("table {table} already exists"));

    let server = Served::dynamodb(where_);
    let url = server.url.clone();

    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("local.pathdb");
    let db = db.to_str().expect("utf-8");
    for (path, value) in [
        ("/u-1/p-2", "2"),
        ("/u-1/p-10", r#"{"n":10}"#),
        ("/u-1/p-1/c-1", "true"),
        ("/u-10/p-1", "null"),
    ] {
        ok(&["--server", &url, "put", path, value]);
        ok(&["--db", db, "put", path, value]);
    }
    let strip = |text: String| -> Vec<String> {
        // Timestamps differ between the two stores; compare everything else.
        text.lines()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).expect("json line");
                if let Some(o) = v.as_object_mut() {
                    o.remove("created_at");
                    o.remove("modified_at");
                    o.remove("next_page_token");
                }
                v.to_string()
            })
            .collect()
    };
    for args in [
        &["ls", "/u-1"][..],
        &["ls", "/u-1", "--children", "--reverse"],
        &["get", "/u-1/p-10"],
        &["ls", "/u-1", "--limit", "2"],
    ] {
        let remote = strip(ok(&[&["--json", "--server", &url][..], args].concat()));
        let local = strip(ok(&[&["--json", "--db", db][..], args].concat()));
        assert_eq!(remote, local, "{args:?}");
        assert!(!remote.is_empty());
    }

    // 10,000 records through the server into DynamoDB: one request, past the 30 s request
    // timeout if it needs to, and an export that gives them back byte for byte.
    let mut input = String::new();
    for g in 0..10 {
        for i in 0..1000 {
            input.push_str(&format!(
                r#"{{"path":"/bulk-{g}/item-{i}","version":2,"created_at":1,"modified_at":2,"expires_at":null,"value":{{"n":{i}}}}}"#
            ));
            input.push('\n');
        }
    }
    let file = dir.path().join("bulk.jsonl");
    let end = "{\"export\":\"complete\",\"records\":10000,\"skipped\":0}\n";
    std::fs::write(&file, format!("{input}{end}")).expect("write input");
    let out = pathdb_command()
        .args(["--server", &url, "import", file.to_str().expect("utf-8")])
        .output()
        .expect("pathdb runs");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("imported 10000 records (0 unchanged"),
        "{said}"
    );
    let exported = ok(&["--server", &url, "export"]);
    let bulk: String = exported
        .lines()
        .filter(|l| l.starts_with(r#"{"path":"/bulk-"#))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(bulk == input, "the export differs from the import");
    assert!(exported.ends_with(&format!(
        "{{\"export\":\"complete\",\"records\":{},\"skipped\":0}}\n",
        exported.lines().count() - 1
    )));

    // A backup through the server (docs/backups.md): item by item, not one snapshot, and it
    // restores into a file that exports the same.
    let backup = dir.path().join("table.pdbbackup");
    let shown = ok(&[
        "--json",
        "--server",
        &url,
        "backup",
        backup.to_str().expect("utf-8"),
    ]);
    let info: serde_json::Value = serde_json::from_str(shown.trim()).expect("json");
    assert_eq!(info["snapshot"], false, "{shown}");
    let restored = dir.path().join("restored.pathdb");
    let restored = restored.to_str().expect("utf-8");
    ok(&["restore", backup.to_str().expect("utf-8"), "--db", restored]);
    assert!(
        ok(&["--db", restored, "export"]) == exported,
        "the restored table exports differently"
    );
    drop(server);
}

/// `pathdb bench dynamodb-cost` on a table that does not exist: makes it, prints the cost table
/// (a put of a new path is 2 requests), and deletes it after.
#[test]
fn bench_dynamodb_cost_prints_the_table_and_removes_its_table() {
    let Some((table, flags)) = table_flags("pathdb-cli-cost") else {
        return;
    };
    let where_: Vec<&str> = flags.iter().map(String::as_str).collect();
    let where_ = where_.as_slice();
    let out = ok(&[&["bench", "dynamodb-cost", "--ops", "10"][..], where_].concat());
    assert!(
        out.contains("| put of a new path | 10 | 2 | 1 GetItem + 1 TransactWriteItems |"),
        "{out}"
    );
    assert!(out.contains("| get | 10 | 1 | 1 GetItem |"), "{out}");
    assert!(!out.contains("they are left there"), "{out}");
    // The run's table is gone: making it again makes a new one.
    let created = ok(&[&["dynamodb", "create-table"][..], where_].concat());
    assert_eq!(created.trim(), format!("created table {table}"));
}

/// Two servers on one table: a definition one of them accepts reaches the other within its
/// refresh interval (StoreOptions::definitions_refresh, 1 s): after that, the other refuses a
/// value the new schema refuses, and it lists the definition at once (reads are not cached).
#[test]
fn a_definition_set_through_one_server_applies_on_another() {
    let Some((_, flags)) = table_flags("pathdb-ns") else {
        return;
    };
    let where_: Vec<&str> = flags.iter().map(String::as_str).collect();
    let where_ = where_.as_slice();
    ok(&[&["dynamodb", "create-table"][..], where_].concat());
    let (a, b) = (Served::dynamodb(where_), Served::dynamodb(where_));
    // b has written before: its copy of the definitions (none) is loaded.
    ok(&["--server", &b.url, "put", "/person-1", r#"{"age": "x"}"#]);
    let dir = tempfile::tempdir().expect("tempdir");
    let schema = dir.path().join("person.json");
    std::fs::write(&schema, r#"{"properties": {"age": {"type": "integer"}}}"#).expect("write");
    let schema = schema.to_str().expect("utf-8");
    ok(&[
        "--server", &a.url, "ns", "set", "person", "--schema", schema,
    ]);
    assert!(ok(&["--server", &b.url, "ns", "ls"]).contains("person"));
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let refused = pathdb_command()
        .args(["--server", &b.url, "put", "/person-2", r#"{"age": "x"}"#])
        .output()
        .expect("pathdb runs");
    assert_eq!(refused.status.code(), Some(6), "{refused:?}");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("/age"));
    let violations = ok(&["--server", &b.url, "ns", "violations", "person"]);
    assert!(violations.contains("/person-1 (version 1)"), "{violations}");
    ok(&["--server", &b.url, "put", "/person-2", r#"{"age": 2}"#]);
}
