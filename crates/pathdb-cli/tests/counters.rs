//! Counter contention through HTTP (issue 21): 8 clients each increment one counter with
//! `PATCH` and an `increment` operation, 1,000 times on the file backend and, when
//! `PATHDB_DYNAMODB_ENDPOINT` names a local DynamoDB-compatible server, 50 times on DynamoDB
//! (`PATHDB_DYNAMODB_INCREMENTS` sets it: moto is one Python process that answers a request at a
//! time, so 8 x 1,000 there takes many minutes).
//! No client sees an error, the counter ends at exactly 8 x that, and the group's change feed
//! holds as many puts of it with versions 1..=the total, each holding its own count.

use crate::Served;
#[cfg(feature = "dynamodb")]
use crate::ok;
use serde_json::{Value, json};

const CLIENTS: u64 = 8;

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into()
}

fn get_json(agent: &ureq::Agent, url: &str) -> Value {
    let mut response = agent.get(url).call().expect("GET");
    assert_eq!(response.status(), 200, "{url}");
    response.body_mut().read_json().expect("a JSON answer")
}

/// Has each client increment `{group}/counter-1` `each` times on the server at `url`, then
/// checks the counter and the feed.
fn increments_lose_nothing(url: &str, group: &str, each: u64) {
    let counter = format!("{url}/v1/items{group}/counter-1?create=true");
    let feed = format!("{url}/v1/changes{group}");
    let mut token = get_json(&agent(), &feed)["next_token"]
        .as_str()
        .expect("the feed's position")
        .to_owned();
    let increment = json!([{"op": "increment", "path": "/n", "value": 1}]).to_string();
    let created: u64 = std::thread::scope(|s| {
        let clients: Vec<_> = (0..CLIENTS)
            .map(|_| {
                s.spawn(|| {
                    let agent = agent();
                    let mut created = 0;
                    for _ in 0..each {
                        let mut response = agent
                            .patch(&counter)
                            .header("Content-Type", "application/json-patch+json")
                            .send(&increment)
                            .expect("the server answers");
                        let status = response.status().as_u16();
                        let body = response.body_mut().read_to_string().expect("a body");
                        assert!(matches!(status, 200 | 201), "{status}: {body}");
                        created += u64::from(status == 201);
                    }
                    created
                })
            })
            .collect();
        clients
            .into_iter()
            .map(|c| c.join().expect("a client"))
            .sum()
    });
    assert_eq!(created, 1, "exactly one increment created the counter");
    let item = get_json(&agent(), &format!("{url}/v1/items{group}/counter-1"));
    let total = CLIENTS * each;
    assert_eq!(item["value"], json!({"n": total}));
    assert_eq!(item["version"], total);

    let mut versions = Vec::new();
    loop {
        let page = get_json(&agent(), &format!("{feed}?since={token}&limit=1000"));
        let changes = page["changes"].as_array().expect("changes");
        if changes.is_empty() {
            break;
        }
        for change in changes {
            assert_eq!(change["op"], "put", "{change}");
            let item = &change["item"];
            assert_eq!(item["value"]["n"], item["version"], "{change}");
            versions.push(item["version"].as_u64().expect("a version"));
        }
        token = page["next_token"].as_str().expect("next_token").to_owned();
    }
    assert_eq!(versions, (1..=total).collect::<Vec<_>>());
}

#[test]
fn eight_clients_increment_one_counter_on_a_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Served::file(&dir.path().join("counters.pathdb"));
    increments_lose_nothing(&server.url, "/hits-1", 1000);
}

#[cfg(feature = "dynamodb")]
#[test]
fn eight_clients_increment_one_counter_on_dynamodb() {
    let Ok(endpoint) = std::env::var("PATHDB_DYNAMODB_ENDPOINT") else {
        eprintln!("skipped: PATHDB_DYNAMODB_ENDPOINT is not set");
        return;
    };
    let table = format!("pathdb-counters-{}", std::process::id());
    let where_ = [
        "--table",
        &table,
        "--endpoint",
        &endpoint,
        "--region",
        "us-east-1",
    ];
    ok(&[&["dynamodb", "create-table"][..], &where_].concat());
    let server = Served::dynamodb(&where_);
    let each = std::env::var("PATHDB_DYNAMODB_INCREMENTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(50);
    increments_lose_nothing(&server.url, "/hits-1", each);
}
