//! `pathdb bench dynamodb-cost`'s measurement (src/dynamodb_cost.rs) against the local
//! DynamoDB-compatible server started by `scripts/dynamodb-local.sh`. Set
//! `PATHDB_DYNAMODB_ENDPOINT` (e.g. `http://127.0.0.1:8000`) and `PATHDB_DYNAMODB_FLAVOR`
//! (`moto`, the default, or `dynalite`); without the endpoint the test returns at once, saying so
//! (as the DynamoDB backend's own tests do: crates/pathdb-dynamodb/tests/tests.rs).

use pathdb_bench::dynamodb_cost;
use pathdb_dynamodb::{DynamoBackend, DynamoOptions, create_table};
use pathdb_store::Store;

/// The configured endpoint, or `None` (and a note on stderr) when unset or dynalite.
fn endpoint() -> Option<String> {
    let Ok(endpoint) = std::env::var("PATHDB_DYNAMODB_ENDPOINT") else {
        eprintln!(
            "skipped: PATHDB_DYNAMODB_ENDPOINT is not set (scripts/dynamodb-local.sh starts a server)"
        );
        return None;
    };
    if std::env::var("PATHDB_DYNAMODB_FLAVOR").as_deref() == Ok("dynalite") {
        // Every PathDB write commits its item and its change log entry together
        // (TransactWriteItems), which dynalite does not implement (docs/changes.md).
        eprintln!("skipped: dynalite has no transactions, and every PathDB write is one");
        return None;
    }
    Some(endpoint)
}

/// A store with the measurement's options on a new, empty table of `endpoint`.
fn store(endpoint: String) -> Store<DynamoBackend> {
    // Local servers still want credentials to be present.
    for (k, v) in [
        ("AWS_ACCESS_KEY_ID", "pathdb-test"),
        ("AWS_SECRET_ACCESS_KEY", "pathdb-test"),
    ] {
        if std::env::var_os(k).is_none() {
            // SAFETY: set before any thread of this test reads the environment (it is the only
            // test of this binary).
            unsafe { std::env::set_var(k, v) };
        }
    }
    let options = DynamoOptions {
        table: format!("pathdb-bench-cost-{}", std::process::id()),
        endpoint: Some(endpoint),
        region: Some("us-east-1".into()),
        ..DynamoOptions::default()
    };
    let backend = DynamoBackend::connect(&options).expect("client starts");
    create_table(&backend).expect("table created");
    Store::new(backend, dynamodb_cost::store_options()).expect("store opens")
}

/// On moto: in the steady state a put of a new or an existing path and a create are 2 requests,
/// a get is 1, and a listing page reads one unit more than its items (the change log's newest
/// entry, for its `changes_token`).
#[test]
fn what_operations_cost() {
    let Some(endpoint) = endpoint() else {
        return;
    };
    let store = store(endpoint);
    let rows = dynamodb_cost::measure(&store, 10, 1).expect("measured");
    let row = |name: &str| {
        rows.iter()
            .find(|r| r.operation == name)
            .unwrap_or_else(|| panic!("no row {name}"))
    };
    for name in ["put of a new path", "put of an existing path (update)"] {
        let r = row(name);
        assert_eq!(
            (r.requests_per_op(), r.by_kind().as_str()),
            (2.0, "1 GetItem + 1 TransactWriteItems"),
            "{name}"
        );
        // 1 unit for the consistent read; 2 per KB for the item and for its log entry, whose
        // change to an existing item also holds the item as it was (its before image: 2 KB).
        let log_kb = if name.contains("update") { 2 } else { 1 };
        assert_eq!(
            (r.spent.model_read_units, r.spent.model_write_units),
            (10.0, 10 * (2 + 2 * log_kb)),
            "{name}"
        );
    }
    // In a group without a change log a put, new or not, and a delete are one conditional
    // write of the item alone: no read, no transaction, no log entry (the process wrote each
    // path before it updates or deletes it, so it knows the version).
    for name in [
        "put of a new path in a group without a change log",
        "put of an existing path in a group without a change log (update)",
        "delete in a group without a change log",
    ] {
        let r = row(name);
        assert_eq!(
            (r.requests_per_op(), r.by_kind().as_str()),
            (1.0, "1 PutItem/DeleteItem"),
            "{name}"
        );
        assert_eq!(
            (r.spent.model_read_units, r.spent.model_write_units),
            (0.0, 10),
            "{name}"
        );
    }
    // A guess gone stale (another writer changed the item): the failed write, a read, the
    // write again; the process knows the item after.
    let wrong = row(
        "put of a path another writer changed since (a wrong guess) in a group without a change log",
    );
    assert_eq!(
        (wrong.requests_per_op(), wrong.by_kind().as_str()),
        (3.0, "1 GetItem + 2 PutItem/DeleteItem")
    );
    assert_eq!(
        (wrong.spent.model_read_units, wrong.spent.model_write_units),
        (10.0, 20)
    );
    let create = row("create with a generated id (uuid)");
    assert_eq!(
        (create.requests_per_op(), create.by_kind().as_str()),
        (2.0, "1 Query + 1 TransactWriteItems")
    );
    let tx = row("transaction of 10 puts");
    assert_eq!(
        (tx.requests_per_op(), tx.by_kind().as_str()),
        (2.0, "1 BatchGetItem + 1 TransactWriteItems")
    );
    let get = row("get");
    assert_eq!(
        (get.requests_per_op(), get.by_kind().as_str()),
        (1.0, "1 GetItem")
    );
    let list = row("list page of 100, forward");
    assert_eq!(list.requests_per_op(), 2.0);
    let per_page = list.spent.model_read_units / list.ops as f64;
    assert!(
        per_page <= list.hand_built.read_units + 1.0,
        "a page of 100 read {per_page} units"
    );
    let table = dynamodb_cost::render(&rows);
    assert!(
        table.contains("| put of a new path | 10 | 2 | 1 GetItem + 1 TransactWriteItems | 1 | 4 |"),
        "{table}"
    );
    assert!(
        table.contains("| change feed poll finding nothing | 1 | 1 | 1 Query | 1 | 0 | none (no feed), 0, 0 | 1 GetRecords, 0, 0 |"),
        "{table}"
    );

    // The bill is the measured update and get at 100 updates and 1,000 gets a second: 6 write
    // units an update is 262.8 M updates x 6 units x $0.625 per million, and so on.
    let bills = dynamodb_cost::bills(&rows).expect("the update and get rows");
    let dollars = |design: &str| {
        bills
            .iter()
            .find(|b| b.design.starts_with(design))
            .unwrap_or_else(|| panic!("no bill {design}"))
            .dollars
    };
    let month = 730.0 * 3600.0;
    let expected = 100.0 * month * 6.0 * 0.625 / 1e6 + (100.0 + 1000.0) * month * 0.125 / 1e6;
    assert!((dollars("PathDB") - expected).abs() < 0.01, "{bills:?}");
    let streams = dollars("hand-built with");
    let without = dollars("hand-built without");
    assert!((without - 492.75).abs() < 0.01, "{bills:?}");
    // The feed's consumer: 4 GetRecords a second, $0.02 per 100,000.
    assert!(
        (streams - without - 4.0 * month * 0.2 / 1e6).abs() < 0.01,
        "{bills:?}"
    );
    assert!(dynamodb_cost::render_bills(&bills).contains("| PathDB | 6 | 1, 1 |"));
    // Without a change log an update is the hand-built design's one write unit, and no read.
    let quiet = dollars("PathDB, in groups without");
    assert!((quiet - without).abs() < 0.01, "{bills:?}");

    // A group's small writes: group commit shares rounds among 4 writers, and every unit is
    // counted, the log's apart. Today each item is written in a transaction (2 units), and the
    // round's entry adds its share.
    let ceiling = dynamodb_cost::ceiling(&store, 4, 4, 1, true).expect("measured");
    assert_eq!(ceiling.writes, 16);
    assert!(
        (1..=16).contains(&ceiling.requests),
        "{} requests",
        ceiling.requests
    );
    assert!(
        ceiling.log_units > 0 && ceiling.units >= 2 * 16 + ceiling.log_units,
        "{ceiling:?}"
    );
    assert!(
        (ceiling.writes_per_second() - 1000.0 / ceiling.units_per_write()).abs() < 1e-9,
        "{ceiling:?}"
    );

    // Without a change log each small write is its item's one unit, in a request of its own.
    let quiet = dynamodb_cost::ceiling(&store, 4, 4, 1, false).expect("measured");
    assert_eq!(
        (quiet.writes, quiet.requests, quiet.units, quiet.log_units),
        (16, 16, 16, 0),
        "{quiet:?}"
    );
    assert!((quiet.writes_per_second() - 1000.0).abs() < 1e-9);
}
