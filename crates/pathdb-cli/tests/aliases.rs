//! Alias paths through `pathdb serve` killed with SIGKILL: a build over 100,000 items resumes
//! where it stopped and finishes with every alias right, and the change feed of an alias
//! prefix delivers each order's entering and leaving exactly once, in order, through 20 kills
//! under write load (docs/aliases.md).

use crate::ok;
use crate::server::{Server, http};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Items the build test stores (the issue's figure; `PATHDB_ALIAS_BUILD_ITEMS` to change it).
fn build_items() -> usize {
    std::env::var("PATHDB_ALIAS_BUILD_ITEMS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000)
}

fn get(addr: SocketAddr, path: &str) -> (u16, Value) {
    let (status, body) = http(addr, "GET", path, "").expect("GET");
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

/// The namespace's first alias build, as GET answers it.
fn build_state(addr: SocketAddr, namespace: &str) -> Value {
    let (status, definition) = get(addr, &format!("/v1/namespaces/{namespace}"));
    assert_eq!(status, 200, "{definition}");
    definition["aliases"][0].clone()
}

#[test]
fn an_alias_build_killed_halfway_resumes_and_finishes_with_every_alias_right() {
    let n = build_items();
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("build.pathdb");
    let mut lines = String::new();
    for i in 0..n {
        // Spread over 100 groups, as users of many tenants would be.
        let _ = writeln!(
            lines,
            r#"{{"path":"/tenant-{}/user-{i}","value":{{"email":"u{i}@example.org","n":{i}}}}}"#,
            i % 100
        );
    }
    let file = dir.path().join("users.jsonl");
    std::fs::write(&file, lines).expect("write");
    let db_text = db.display().to_string();
    ok(&["--db", &db_text, "import", &file.display().to_string()]);

    let server = Server::start(&db);
    let definition = json!({"aliases": [{"path": "/emails-1/email-{email}"}]}).to_string();
    let (status, body) = http(server.addr, "PUT", "/v1/namespaces/user", &definition).expect("PUT");
    assert_eq!(status, 201, "{body}");
    // Kill it half-way through.
    let deadline = Instant::now() + Duration::from_secs(600);
    let at_kill = loop {
        let build = build_state(server.addr, "user");
        assert_eq!(
            build["state"], "building",
            "the build ended before half-way: {build}"
        );
        if build["checked"].as_u64().unwrap_or(0) >= n as u64 / 2 {
            break build;
        }
        // Reads through it wait for the build.
        let (status, _) = get(server.addr, "/v1/items/emails-1/email-u1@example.org");
        assert_eq!(status, 503);
        assert!(
            Instant::now() < deadline,
            "the build did not get half-way in 600 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    server.kill_9();

    // Another server on the file goes on from what the killed one committed.
    let server = Server::start(&db);
    let resumed = build_state(server.addr, "user");
    assert!(
        resumed["checked"].as_u64() >= at_kill["checked"].as_u64(),
        "the build went back: {at_kill} then {resumed}"
    );
    let deadline = Instant::now() + Duration::from_secs(600);
    let done = loop {
        let build = build_state(server.addr, "user");
        if build["state"] == "ready" {
            break build;
        }
        assert_eq!(build["state"], "building", "{build}");
        assert!(
            Instant::now() < deadline,
            "the build did not finish in 600 s: {build}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    // Each item counted once, whatever the kill cut short.
    assert_eq!(done["checked"], json!(n), "{done}");
    assert_eq!(done["written"], json!(n), "{done}");

    // Every alias right, and no other: the listing of the alias group, page by page.
    let mut found: BTreeMap<String, String> = BTreeMap::new();
    let mut token: Option<String> = None;
    loop {
        let query = match &token {
            Some(t) => format!("/v1/list/emails-1?limit=1000&page_token={t}"),
            None => "/v1/list/emails-1?limit=1000".to_owned(),
        };
        let (status, page) = get(server.addr, &query);
        assert_eq!(status, 200, "{page}");
        for item in page["items"].as_array().expect("items") {
            let alias = item["alias"].as_str().expect("alias").to_owned();
            let path = item["path"].as_str().expect("path").to_owned();
            assert_eq!(
                alias,
                format!(
                    "/emails-1/email-{}",
                    item["value"]["email"].as_str().expect("email")
                ),
                "{item}"
            );
            assert!(found.insert(alias, path).is_none(), "listed twice: {item}");
        }
        match page["next_page_token"].as_str() {
            Some(t) => token = Some(t.to_owned()),
            None => break,
        }
    }
    assert_eq!(found.len(), n);
    for i in [0, 1, n / 2, n - 1] {
        let (status, item) = get(
            server.addr,
            &format!("/v1/items/emails-1/email-u{i}@example.org"),
        );
        assert_eq!(status, 200, "{item}");
        assert_eq!(item["path"], format!("/tenant-{}/user-{i}", i % 100));
    }
}

/// What the follower saw of one order in the feed of `/status-open`.
#[derive(Default, Debug)]
struct Seen {
    entered: usize,
    left: usize,
    /// The feed positions of its events, in the order they came.
    order: Vec<&'static str>,
}

#[test]
fn the_feed_of_an_alias_prefix_is_exact_through_20_kill_9s_under_load() {
    const ROUNDS: usize = 20;
    const WRITERS: usize = 3;
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("feed.pathdb");
    let server = Server::start(&db);
    let definition = json!({"aliases": [{"path": "/status-{status}/order-{@order}"}]}).to_string();
    let (status, body) =
        http(server.addr, "PUT", "/v1/namespaces/order", &definition).expect("PUT");
    assert_eq!(status, 201, "{body}");
    let (_, start) = get(server.addr, "/v1/changes/status-open");
    let token = start["next_token"].as_str().expect("token").to_owned();

    // Acknowledged writes per order: opened, then shipped.
    let opened: Mutex<HashMap<u64, bool>> = Mutex::new(HashMap::new());
    let shipped: Mutex<HashMap<u64, bool>> = Mutex::new(HashMap::new());
    let next = AtomicUsize::new(0);
    let mut server = Some(server);
    for round in 0..ROUNDS {
        let current = server.take().unwrap_or_else(|| Server::start(&db));
        let addr = current.addr;
        let acked = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            for _ in 0..WRITERS {
                s.spawn(|| {
                    while !stop.load(Ordering::SeqCst) {
                        let id = next.fetch_add(1, Ordering::SeqCst) as u64;
                        let path = format!("/v1/items/order-{id}");
                        // Unanswered (killed): it may or may not have committed.
                        opened.lock().expect("lock").insert(id, false);
                        match http(addr, "PUT", &path, r#"{"status":"open"}"#) {
                            Ok((200 | 201, _)) => {
                                opened.lock().expect("lock").insert(id, true);
                            }
                            Ok((code, body)) => panic!("PUT {path}: {code} {body}"),
                            Err(_) => return,
                        }
                        acked.fetch_add(1, Ordering::SeqCst);
                        shipped.lock().expect("lock").insert(id, false);
                        match http(addr, "PUT", &path, r#"{"status":"shipped"}"#) {
                            Ok((200 | 201, _)) => {
                                shipped.lock().expect("lock").insert(id, true);
                            }
                            Ok((code, body)) => panic!("PUT {path}: {code} {body}"),
                            Err(_) => return,
                        }
                        acked.fetch_add(1, Ordering::SeqCst);
                    }
                });
            }
            let deadline = Instant::now() + Duration::from_secs(120);
            // A few writes per round, then the kill lands among those in flight.
            while acked.load(Ordering::SeqCst) < 10 + round % 7 {
                assert!(
                    Instant::now() < deadline,
                    "round {round}: no progress in 120 s"
                );
                std::thread::sleep(Duration::from_millis(2));
            }
            current.kill_9();
            stop.store(true, Ordering::SeqCst);
        });
    }

    // After the last kill, a server reads the whole feed from the first token.
    let server = Server::start(&db);
    let mut seen: BTreeMap<u64, Seen> = BTreeMap::new();
    let mut token = token;
    loop {
        let (status, page) = get(
            server.addr,
            &format!("/v1/changes/status-open?since={token}&limit=1000"),
        );
        assert_eq!(status, 200, "{page}");
        let changes = page["changes"].as_array().expect("changes");
        for change in changes {
            let path = change
                .pointer("/item/path")
                .or_else(|| change.get("path"))
                .and_then(Value::as_str)
                .expect("path");
            let id: u64 = path
                .trim_start_matches("/order-")
                .parse()
                .expect("order id");
            let entry = seen.entry(id).or_default();
            match change["op"].as_str() {
                Some("put") => {
                    assert_eq!(change["item"]["alias"], format!("/status-open/order-{id}"));
                    entry.entered += 1;
                    entry.order.push("entered");
                }
                Some("delete") => {
                    assert_eq!(change["alias"], format!("/status-open/order-{id}"));
                    entry.left += 1;
                    entry.order.push("left");
                }
                other => panic!("unexpected change {other:?}: {change}"),
            }
        }
        token = page["next_token"].as_str().expect("next_token").to_owned();
        if changes.is_empty() {
            break;
        }
    }
    let opened = opened.into_inner().expect("opened");
    let shipped = shipped.into_inner().expect("shipped");
    let acknowledged_pairs = shipped.values().filter(|acked| **acked).count();
    assert!(
        acknowledged_pairs >= ROUNDS * 4,
        "only {acknowledged_pairs} orders went through"
    );
    for (id, what) in &seen {
        assert!(
            what.entered <= 1 && what.left <= 1,
            "order {id} twice: {what:?}"
        );
        assert!(
            opened.contains_key(id),
            "order {id} was never written: {what:?}"
        );
        if what.left == 1 {
            assert_eq!(what.order, ["entered", "left"], "order {id}");
        }
    }
    for (id, acked) in &opened {
        if *acked {
            assert_eq!(
                seen.get(id).map(|s| s.entered),
                Some(1),
                "order {id} opened, not fed"
            );
        }
    }
    for (id, acked) in &shipped {
        if *acked {
            assert_eq!(
                seen.get(id).map(|s| s.left),
                Some(1),
                "order {id} shipped, not fed"
            );
        }
    }
    // And the alias listing agrees with the feed: exactly the orders that are still open.
    let still_open: Vec<u64> = seen
        .iter()
        .filter(|(_, s)| s.entered == 1 && s.left == 0)
        .map(|(id, _)| *id)
        .collect();
    let (status, page) = get(server.addr, "/v1/list/status-open?limit=1000");
    assert_eq!(status, 200);
    let mut listed: Vec<u64> = page["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| {
            i["path"]
                .as_str()
                .expect("path")
                .trim_start_matches("/order-")
                .parse()
                .expect("id")
        })
        .collect();
    listed.sort_unstable();
    assert_eq!(listed, still_open);
}
