//! A namespace's rewrite to a new definition version through `pathdb serve` killed with
//! SIGKILL halfway (docs/migrations.md): another server on the file goes on from what the
//! killed one committed, and ends with every stored item at the newest version, each counted
//! once, and every item reading in every version as it did before the rewrite.

use crate::ok;
use crate::server::{Server, http, http_with};
use pathdb_store::backend::FileOptions;
use pathdb_store::{Store, StoreOptions};
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Items the test stores (`PATHDB_REWRITE_ITEMS` to change it).
fn items() -> usize {
    std::env::var("PATHDB_REWRITE_ITEMS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000)
}

/// Item `i` as version 1 wrote it.
fn v1(i: usize) -> Value {
    let status = if i.is_multiple_of(3) {
        "shipped"
    } else {
        "new"
    };
    json!({"name": format!("u{i}"), "status": status, "legacy": i % 7})
}

/// Item `i` read in `version` (the model: the steps of version 2, by hand).
fn read_in(i: usize, version: u64) -> Value {
    let mut value = v1(i);
    if version == 2 {
        let object = value.as_object_mut().expect("an object");
        let name = object.shift_remove("name").expect("a name");
        object.insert("full_name".into(), name);
        object.insert("tier".into(), json!("free"));
        if object["status"] == "shipped" {
            object.insert("status".into(), json!("sent"));
        }
    }
    value
}

fn rewrite(addr: SocketAddr) -> Value {
    let (status, body) = http(addr, "GET", "/v1/namespaces/user", "").expect("GET");
    assert_eq!(status, 200, "{body}");
    let definition: Value = serde_json::from_str(&body).expect("JSON");
    definition["rewrite"].clone()
}

/// Every item of group `g`, read in `version`, as the listing answers.
fn group_in(addr: SocketAddr, g: usize, version: u64) -> Vec<Value> {
    let speaks = format!("user={version}");
    let uri = format!("/v1/list/tenant-{g}?limit=1000");
    let (status, body) =
        http_with(addr, "GET", &uri, &[("Schema-Version", &speaks)], "").expect("GET");
    assert_eq!(status, 200, "{body}");
    let page: Value = serde_json::from_str(&body).expect("JSON");
    assert!(page["next_page_token"].is_null(), "one page per group");
    page["items"].as_array().expect("items").clone()
}

#[test]
fn a_rewrite_killed_halfway_resumes_and_every_version_reads_the_same() {
    let n = items();
    let groups = 20;
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("rewrite.pathdb");
    let db_text = db.display().to_string();
    let v1_schema = json!({"type": "object", "required": ["name"],
        "properties": {"name": {"type": "string"}, "status": {"enum": ["new", "shipped"]},
                       "legacy": {"type": "integer"}}});
    let schema_file = dir.path().join("v1.json");
    std::fs::write(&schema_file, v1_schema.to_string()).expect("write");
    ok(&[
        "--db",
        &db_text,
        "ns",
        "set",
        "user",
        "--schema",
        &schema_file.display().to_string(),
    ]);
    let mut lines = String::new();
    for i in 0..n {
        let _ = writeln!(
            lines,
            r#"{{"path":"/tenant-{}/user-{i}","value":{}}}"#,
            i % groups,
            v1(i)
        );
    }
    let file = dir.path().join("users.jsonl");
    std::fs::write(&file, lines).expect("write");
    ok(&["--db", &db_text, "import", &file.display().to_string()]);

    let server = Server::start(&db);
    let v2 = json!({"schema": {"type": "object", "required": ["full_name", "tier"],
        "properties": {"full_name": {"type": "string"}, "tier": {"type": "string"},
                       "status": {"enum": ["new", "sent"]}, "legacy": {"type": "integer"}}},
        "migrate": [{"op": "rename", "from": "/name", "to": "/full_name"},
                    {"op": "add", "path": "/tier", "default": "free"},
                    {"op": "rename_value", "path": "/status", "from": "shipped", "to": "sent"}]});
    let (status, body) =
        http(server.addr, "PUT", "/v1/namespaces/user", &v2.to_string()).expect("PUT");
    assert_eq!(status, 200, "{body}");
    // Kill it partway: some items rewritten, not all.
    let deadline = Instant::now() + Duration::from_secs(600);
    let at_kill = loop {
        let rewrite = rewrite(server.addr);
        assert_eq!(
            rewrite["done"], false,
            "the rewrite ended before the kill: {rewrite}"
        );
        if rewrite["rewritten"].as_u64().unwrap_or(0) >= n as u64 / 10 {
            break rewrite;
        }
        assert!(Instant::now() < deadline, "no progress in 600 s: {rewrite}");
        std::thread::sleep(Duration::from_millis(5));
    };
    server.kill_9();

    // Another server on the file goes on from what the killed one committed.
    let server = Server::start(&db);
    let resumed = rewrite(server.addr);
    assert!(
        resumed["rewritten"].as_u64() >= at_kill["rewritten"].as_u64(),
        "the rewrite went back: {at_kill} then {resumed}"
    );
    // Reads during the rewrite are the model's, in both versions.
    for version in [1, 2] {
        for item in group_in(server.addr, 0, version) {
            let i: usize = item["path"].as_str().expect("path")["/tenant-0/user-".len()..]
                .parse()
                .expect("an id");
            assert_eq!(item["value"], read_in(i, version), "{item}");
        }
    }
    let deadline = Instant::now() + Duration::from_secs(600);
    let done = loop {
        let rewrite = rewrite(server.addr);
        if rewrite["done"] == true {
            break rewrite;
        }
        assert!(Instant::now() < deadline, "not done in 600 s: {rewrite}");
        std::thread::sleep(Duration::from_millis(50));
    };
    // Each item counted once, whatever the kill cut short.
    assert_eq!(done["checked"], json!(n), "{done}");
    assert_eq!(done["rewritten"], json!(n), "{done}");
    // Every item, in every version, reads as before the rewrite.
    let mut seen = 0;
    for g in 0..groups {
        for version in [1, 2] {
            for item in group_in(server.addr, g, version) {
                let path = item["path"].as_str().expect("path");
                let i: usize = path.rsplit('-').next().expect("id").parse().expect("an id");
                assert_eq!(item["value"], read_in(i, version), "{item}");
                assert_eq!(item["schema_version"], version, "{item}");
                assert_eq!(item["version"], 1, "a rewrite is no write: {item}");
                seen += usize::from(version == 1);
            }
        }
    }
    assert_eq!(seen, n);
    drop(server);

    // On the file (opened read-write: the server was killed, the file needs its recovery):
    // every item stored at version 2.
    let options = StoreOptions {
        sweep_interval: None,
        ..StoreOptions::default()
    };
    let store = Store::open(&db, FileOptions::default(), options).expect("open");
    for i in 0..n {
        let path = format!("/tenant-{}/user-{i}", i % groups)
            .parse()
            .expect("path");
        let item = store.get(&path).expect("get").expect("an item");
        assert_eq!(
            item.schema_version, 2,
            "{path} still at {}",
            item.schema_version
        );
    }
}
