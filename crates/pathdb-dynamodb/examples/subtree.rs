//! Subtree move and delete of N items, on the file backend and (with an endpoint) on DynamoDB,
//! next to the loop a client wrote before PathDB had them: list a page, then one transaction of
//! a put and a delete per item (a move) or of deletes (a delete). Prints items/s and, on
//! DynamoDB, requests per item from the backend's own counters.
//!
//! ```sh
//! cargo run --release -p pathdb-dynamodb --example subtree -- 10000
//! port=$(bash scripts/dynamodb-local.sh start moto | sed -n 's/^PORT=//p')
//! PATHDB_DYNAMODB_ENDPOINT=http://127.0.0.1:$port cargo run --release -p pathdb-dynamodb --example subtree -- 10000
//! ```

use pathdb_dynamodb::{Counts, DynamoBackend, DynamoOptions, create_table};
use pathdb_keys::KeyPath;
use pathdb_store::backend::Backend;
use pathdb_store::{
    ImportRecord, Item, Json, ListEntry, ListRequest, OnExisting, PutOptions, Store, StoreOptions,
    Transaction,
};
use std::time::Instant;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Items per page and per transaction of the hand-written loop: a move writes 2 operations per
/// item, and DynamoDB takes 100 per transaction (less the change log's entries).
const LOOP_PAGE: usize = 45;

fn main() -> Result<()> {
    let n: usize = std::env::args().nth(1).map_or(Ok(10_000), |a| a.parse())?;
    let dir = tempfile::tempdir()?;
    let file = Store::open(
        dir.path().join("subtree.pathdb"),
        Default::default(),
        options(),
    )?;
    println!("| backend | operation | items | seconds | items/s | requests | requests per item |");
    println!("| --- | --- | ---: | ---: | ---: | --- | ---: |");
    run("file", &file, n, &|| None)?;
    drop(file);
    if let Ok(endpoint) = std::env::var("PATHDB_DYNAMODB_ENDPOINT") {
        let backend = connect(endpoint)?;
        let metrics = backend.metrics();
        let store = Store::new(backend, options())?;
        run("DynamoDB (moto)", &store, n, &|| Some(metrics.counts()))?;
    }
    Ok(())
}

fn options() -> StoreOptions {
    StoreOptions {
        sweep_interval: None,
        ..Default::default()
    }
}

fn connect(endpoint: String) -> Result<DynamoBackend> {
    for (k, v) in [
        ("AWS_ACCESS_KEY_ID", "pathdb"),
        ("AWS_SECRET_ACCESS_KEY", "pathdb"),
    ] {
        if std::env::var_os(k).is_none() {
            // SAFETY: single-threaded at this point.
            unsafe { std::env::set_var(k, v) };
        }
    }
    let backend = DynamoBackend::connect(&DynamoOptions {
        table: format!("pathdb-subtree-{}", std::process::id()),
        endpoint: Some(endpoint),
        region: Some("us-east-1".into()),
        ..DynamoOptions::default()
    })?;
    create_table(&backend)?;
    Ok(backend)
}

/// Moves and deletes `n` items with the store's operations and with the hand-written loop.
fn run<B: Backend>(
    name: &str,
    store: &Store<B>,
    n: usize,
    counts: &dyn Fn() -> Option<Counts>,
) -> Result<()> {
    let drive = |id: &str, folder: &str| -> Result<KeyPath> {
        Ok(format!("/drive-{id}/folder-{folder}").parse()?)
    };
    load(store, &drive("a91", "docs")?, n)?;
    let row = |operation: &str, f: &mut dyn FnMut() -> Result<u64>| -> Result<()> {
        let before = counts();
        let started = Instant::now();
        let done = f()?;
        let seconds = started.elapsed().as_secs_f64();
        assert_eq!(done as usize, n, "{operation}");
        let (requests, per_item) = match (before, counts()) {
            (Some(b), Some(a)) => {
                let total = a.gets - b.gets + a.queries - b.queries + a.writes - b.writes
                    + a.transactions
                    - b.transactions;
                let detail = format!(
                    "{} GetItem, {} Query, {} Transact*",
                    a.gets - b.gets,
                    a.queries - b.queries,
                    a.transactions - b.transactions
                );
                (detail, format!("{:.3}", total as f64 / n as f64))
            }
            _ => ("-".to_owned(), "-".to_owned()),
        };
        println!(
            "| {name} | {operation} | {n} | {seconds:.2} | {:.0} | {requests} | {per_item} |",
            n as f64 / seconds
        );
        Ok(())
    };
    let (a, b, c) = (
        drive("a91", "docs")?,
        drive("b22", "docs")?,
        drive("c33", "docs")?,
    );
    row("move (`move_subtree`)", &mut || {
        Ok(store.move_subtree(&a, &b, &mut |_| {})?)
    })?;
    row("move (list-then-transact loop)", &mut || {
        hand_move(store, &b, &c)
    })?;
    row("delete (`delete_subtree`)", &mut || {
        Ok(store.delete_subtree(&c, &mut |_| {})?)
    })?;
    load(store, &a, n)?;
    row("delete (list-then-transact loop)", &mut || {
        hand_delete(store, &a)
    })?;
    Ok(())
}

/// `n` items `{"n": i, "text": ...}` at `prefix/file-<i>`, imported in batches.
fn load<B: Backend>(store: &Store<B>, prefix: &KeyPath, n: usize) -> Result<()> {
    let text = "a value of about a hundred bytes, like a small document's metadata";
    let lines = (0..n).map(|i| -> std::result::Result<String, String> {
        let path = prefix.child("file", i as u64).map_err(|e| e.to_string())?;
        Ok(serde_json::json!({
            "path": path.to_string(), "version": 1, "created_at": 1, "modified_at": 1,
            "expires_at": null, "value": {"n": i, "text": text},
        })
        .to_string())
    });
    let records: Vec<ImportRecord> = pathdb_store::parse_import(lines, true)?;
    store.import(&records, OnExisting::Replace, &mut |_| {})?;
    Ok(())
}

/// The next page of items below `prefix`, after the page that returned `token`.
fn page<B: Backend>(
    store: &Store<B>,
    prefix: &KeyPath,
    token: &mut Option<String>,
) -> Result<Vec<Item>> {
    let mut request = ListRequest::new(prefix.clone());
    request.limit = LOOP_PAGE;
    request.page_token = token.take();
    let page = store.list(&request)?;
    *token = page.next_page_token;
    Ok(page
        .items
        .into_iter()
        .filter_map(ListEntry::into_item)
        .collect())
}

fn moved(item: &Item, from: &KeyPath, to: &KeyPath) -> Result<KeyPath> {
    let mut elements = to.elements().to_vec();
    elements.extend_from_slice(&item.path.elements()[from.len()..]);
    Ok(KeyPath::from_elements(elements)?)
}

fn hand_move<B: Backend>(store: &Store<B>, from: &KeyPath, to: &KeyPath) -> Result<u64> {
    let (mut done, mut token) = (0, None);
    loop {
        let items = page(store, from, &mut token)?;
        if items.is_empty() {
            return Ok(done);
        }
        let mut tx = Transaction::new();
        for item in &items {
            let value = Json::parse(item.value.as_str())?;
            tx = tx
                .put(moved(item, from, to)?, value, PutOptions::default())
                .delete(item.path.clone(), None);
        }
        store.transact(tx)?;
        done += items.len() as u64;
        if token.is_none() {
            return Ok(done);
        }
    }
}

fn hand_delete<B: Backend>(store: &Store<B>, prefix: &KeyPath) -> Result<u64> {
    let (mut done, mut token) = (0, None);
    loop {
        let items = page(store, prefix, &mut token)?;
        if items.is_empty() {
            return Ok(done);
        }
        let tx = items
            .iter()
            .fold(Transaction::new(), |tx, i| tx.delete(i.path.clone(), None));
        store.transact(tx)?;
        done += items.len() as u64;
        if token.is_none() {
            return Ok(done);
        }
    }
}
