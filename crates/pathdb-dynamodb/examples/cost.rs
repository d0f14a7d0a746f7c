//! What PathDB's store operations cost on DynamoDB, and how big its keys are next to a
//! hand-written single-table design with zero-padded string keys (seed 004).
//!
//! ```sh
//! port=$(bash scripts/dynamodb-local.sh start moto | sed -n 's/^PORT=//p')
//! PATHDB_DYNAMODB_ENDPOINT=http://127.0.0.1:$port cargo run --release -p pathdb-dynamodb --example cost
//! ```

use pathdb_dynamodb::{Counts, DynamoBackend, DynamoOptions, create_table};
use pathdb_keys::KeyPath;
use pathdb_store::{Json, ListRequest, PutOptions, Store, StoreOptions, Transaction};

const USER: &str = "4c9d36e5-6b19-4e6a-828c-226ed667458a";

fn delta(before: Counts, after: Counts) -> String {
    format!(
        "{} GetItem, {} Query, {} PutItem/DeleteItem, {} Transact*, {:.1} read units",
        after.gets - before.gets,
        after.queries - before.queries,
        after.writes - before.writes,
        after.transactions - before.transactions,
        after.read_units - before.read_units
    )
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let endpoint =
        std::env::var("PATHDB_DYNAMODB_ENDPOINT").map_err(|_| "set PATHDB_DYNAMODB_ENDPOINT")?;
    for (k, v) in [
        ("AWS_ACCESS_KEY_ID", "pathdb"),
        ("AWS_SECRET_ACCESS_KEY", "pathdb"),
    ] {
        if std::env::var_os(k).is_none() {
            // SAFETY: single-threaded at this point.
            unsafe { std::env::set_var(k, v) };
        }
    }
    let table = format!("pathdb-cost-{}", std::process::id());
    let backend = DynamoBackend::connect(&DynamoOptions {
        table,
        endpoint: Some(endpoint),
        region: Some("us-east-1".into()),
        ..DynamoOptions::default()
    })?;
    create_table(&backend)?;
    let metrics = backend.metrics();
    let store = Store::new(backend, StoreOptions::default())?;

    // 300 posts of one user, 3 comments under each of the first 50.
    let mut pathdb_bytes = 0usize;
    let mut string_bytes = 0usize;
    let mut n_keys = 0usize;
    let value = Json::parse(r#"{"text":"hello"}"#)?;
    let mut tx = Vec::new();
    for post in 1..=300u64 {
        let path: KeyPath = format!("/user-{USER}/post-{post}").parse()?;
        tx.push(path.clone());
        pathdb_bytes += path.partition_key().len() + path.sort_key().len();
        string_bytes += format!("USER#{USER}").len() + format!("POST#{post:010}").len();
        n_keys += 1;
        if post <= 50 {
            for comment in [1678901234u64, 1678905678, 1678909999] {
                let child: KeyPath =
                    format!("/user-{USER}/post-{post}/comment-{comment}").parse()?;
                pathdb_bytes += child.partition_key().len() + child.sort_key().len();
                string_bytes += format!("USER#{USER}").len()
                    + format!("POST#{post:010}#COMMENT#{comment:010}").len();
                n_keys += 1;
                store.put(&child, value.clone(), PutOptions::default())?;
            }
        }
        store.put(&path, value.clone(), PutOptions::default())?;
    }

    let group: KeyPath = format!("/user-{USER}").parse()?;
    let post: KeyPath = format!("/user-{USER}/post-7").parse()?;
    let mut rows = Vec::new();
    let mut measure = |name: &str,
                       f: &mut dyn FnMut() -> Result<usize, pathdb_store::Error>|
     -> Result<(), pathdb_store::Error> {
        let before = metrics.counts();
        let n = f()?;
        rows.push(format!(
            "| {name} | {n} | {} |",
            delta(before, metrics.counts())
        ));
        Ok(())
    };
    measure("get", &mut || Ok(store.get(&post)?.map_or(0, |_| 1)))?;
    measure("get_many (10 paths)", &mut || {
        let paths: Vec<KeyPath> = tx.iter().take(10).cloned().collect();
        Ok(store.get_many(&paths)?.len())
    })?;
    measure("list page of 100, forward", &mut || {
        let mut r = ListRequest::new(group.clone());
        r.limit = 100;
        Ok(store.list(&r)?.items.len())
    })?;
    measure("list page of 100, reverse", &mut || {
        let mut r = ListRequest::new(group.clone());
        r.limit = 100;
        r.reverse = true;
        Ok(store.list(&r)?.items.len())
    })?;
    measure(
        "children page of 100 (posts 1-50 have 3 comments each)",
        &mut || {
            let mut r = ListRequest::new(group.clone());
            r.limit = 100;
            r.children_only = true;
            Ok(store.list(&r)?.items.len())
        },
    )?;
    measure("put (unconditional)", &mut || {
        store.put(&post, value.clone(), PutOptions::default())?;
        Ok(1)
    })?;
    measure("transaction of 10 puts", &mut || {
        let mut t = Transaction::new();
        for p in tx.iter().skip(100).take(10) {
            t = t.put(p.clone(), value.clone(), PutOptions::default());
        }
        Ok(store.transact(t)?.len())
    })?;
    let since = store.changes_token(&group)?;
    for p in tx.iter().skip(200).take(10) {
        store.put(p, value.clone(), PutOptions::default())?;
    }
    measure("change feed: poll returning 10 changes", &mut || {
        Ok(store.changes(&group, Some(&since), 100)?.changes.len())
    })?;
    let end = store.changes_token(&group)?;
    measure("change feed: poll finding nothing", &mut || {
        Ok(store.changes(&group, Some(&end), 100)?.changes.len())
    })?;

    println!("| operation | items | DynamoDB requests |\n| --- | --- | --- |");
    for row in rows {
        println!("{row}");
    }
    println!();
    println!("| key design | bytes per key (pk + sk), mean over {n_keys} keys |\n| --- | --- |");
    println!(
        "| PathDB binary key paths | {:.1} |",
        pathdb_bytes as f64 / n_keys as f64
    );
    println!(
        "| zero-padded strings (`USER#<uuid>`, `POST#0000001234#COMMENT#...`) | {:.1} |",
        string_bytes as f64 / n_keys as f64
    );
    Ok(())
}
