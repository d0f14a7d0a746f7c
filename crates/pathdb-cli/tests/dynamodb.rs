//! `pathdb dynamodb create-table` and `pathdb serve --backend dynamodb` against the local
//! DynamoDB-compatible server named by `PATHDB_DYNAMODB_ENDPOINT` (scripts/test.sh starts one);
//! without it the test returns at once, saying so.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn pathdb_env() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pathdb"));
    cmd.env("AWS_ACCESS_KEY_ID", "pathdb-test")
        .env("AWS_SECRET_ACCESS_KEY", "pathdb-test");
    cmd
}

fn run(args: &[&str]) -> String {
    let out = pathdb_env().args(args).output().expect("pathdb runs");
    assert!(
        out.status.success(),
        "pathdb {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Stops the server even when an assertion fails.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn serve_on_dynamodb_with_the_same_output() {
    let Ok(endpoint) = std::env::var("PATHDB_DYNAMODB_ENDPOINT") else {
        eprintln!("skipped: PATHDB_DYNAMODB_ENDPOINT is not set");
        return;
    };
    let table = format!("pathdb-cli-{}", std::process::id());
    let where_ = [
        "--table",
        &table,
        "--endpoint",
        &endpoint,
        "--region",
        "us-east-1",
    ];
    let created = run(&[&["dynamodb", "create-table"][..], &where_].concat());
    assert_eq!(created.trim(), format!("created table {table}"));
    let again = run(&[&["dynamodb", "create-table"][..], &where_].concat());
    assert_eq!(again.trim(), format!("table {table} already exists"));

    let mut child = pathdb_env()
        .args(
            [
                &["serve", "--backend", "dynamodb", "--addr", "127.0.0.1:0"][..],
                &where_,
            ]
            .concat(),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("server starts");
    let stdout = child.stdout.take().expect("stdout");
    let server = Server(child);
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("listening line");
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .expect("listening on ...")
        .to_owned();

    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("local.pathdb");
    let db = db.to_str().expect("utf-8");
    for (path, value) in [
        ("/u-1/p-2", "2"),
        ("/u-1/p-10", r#"{"n":10}"#),
        ("/u-1/p-1/c-1", "true"),
        ("/u-10/p-1", "null"),
    ] {
        run(&["--server", &url, "put", path, value]);
        run(&["--db", db, "put", path, value]);
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
        let remote = strip(run(&[&["--json", "--server", &url][..], args].concat()));
        let local = strip(run(&[&["--json", "--db", db][..], args].concat()));
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
    let out = pathdb_env()
        .args(["--server", &url, "import", file.to_str().expect("utf-8")])
        .output()
        .expect("pathdb runs");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("imported 10000 records (0 unchanged"),
        "{said}"
    );
    let exported = run(&["--server", &url, "export"]);
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
    drop(server);
}
