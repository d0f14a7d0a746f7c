//! What each store operation costs on DynamoDB, measured: the requests it sends and the capacity
//! units they take (the backend's counters, [`pathdb_dynamodb::Metrics`]), beside what a
//! hand-built single-table design spends for the same result. `pathdb bench dynamodb-cost` runs
//! [`measure`] against a table and prints [`render`]; docs/dynamodb.md ("What an operation
//! costs") records a run. Built with this crate's `dynamodb` feature, which the CLI's turns on.
//!
//! Every operation runs `ops` times, one at a time, on items of about [`VALUE_BYTES`] bytes in a
//! group of its own that this process has written before (warmed up), so that the rows show the
//! steady state; the first write of a process to a group has a row of its own.

use pathdb_dynamodb::{Counts, DynamoBackend};
use pathdb_keys::KeyPath;
use pathdb_store::{
    Error, IdKind, Json, ListRequest, Patch, PutOptions, Store, StoreOptions, Transaction, TxResult,
};

/// The size of the JSON value each measured write puts, in bytes.
pub const VALUE_BYTES: usize = 500;
/// Writes to the measured group before measuring: the first write of a process to a group reads
/// its change log's end, and until one of its commits has read the log's oldest entries (one in
/// eight, chosen at random), a commit may; after this many the chance that none has is 1e-7.
const WARM_UP: usize = 128;

/// The row of a put of a new path in a group without a change log.
const UNLOGGED_NEW: &str = "put of a new path in a group without a change log";
/// The row of an update in a group without a change log: its bill is measured from it.
const UNLOGGED_UPDATE: &str = "put of an existing path in a group without a change log (update)";
/// What a write in a group without a change log buys over the hand-built design.
const UNLOGGED_BUYS: &str = "versions and ETags that are never reused, conditions; no change feed, listing token or listing check in the group (its namespace is defined with \"changes\": false)";

/// The definition of a namespace whose groups keep no change log.
fn unlogged_definition() -> pathdb_store::Definition {
    pathdb_store::Definition {
        changes: Some(false),
        ..pathdb_store::Definition::default()
    }
}

/// The cost of one operation, `ops` times.
#[derive(Clone, Debug)]
pub struct Row {
    /// What was done.
    pub operation: &'static str,
    /// How many times.
    pub ops: u64,
    /// The requests and units the runs took together.
    pub spent: Counts,
    /// The same result in a hand-built design: requests, read units, write units per operation.
    pub hand_built: HandBuilt,
    /// What PathDB's extra cost buys, if any.
    pub buys: &'static str,
}

/// A hand-built single-table design's cost for one operation (ElectroDB-style: one item per
/// entity, conditional `PutItem`, no change log, no history).
#[derive(Clone, Copy, Debug)]
pub struct HandBuilt {
    /// What it sends.
    pub requests: &'static str,
    /// Read units (consistent reads, as PathDB's).
    pub read_units: f64,
    /// Write units.
    pub write_units: f64,
    /// What the same design with a change feed from DynamoDB Streams sends instead, where it
    /// differs. Streams cost a write nothing (the table's stream keeps old and new images for
    /// 24 hours); a consumer pays per `GetRecords` (up to 1,000 records each), $0.02 per
    /// 100,000, and nothing from Lambda.
    pub streams: Option<&'static str>,
}

impl Row {
    /// Requests per operation, every kind together.
    pub fn requests_per_op(&self) -> f64 {
        let s = &self.spent;
        (s.gets + s.batch_gets + s.queries + s.scans + s.writes + s.transactions + s.transact_gets)
            as f64
            / self.ops as f64
    }

    /// Requests per operation by kind, e.g. `1 GetItem + 1 TransactWriteItems`.
    pub fn by_kind(&self) -> String {
        let s = &self.spent;
        let kinds = [
            (s.gets, "GetItem"),
            (s.batch_gets, "BatchGetItem"),
            (s.queries, "Query"),
            (s.scans, "Scan"),
            (s.writes, "PutItem/DeleteItem"),
            (s.transactions, "TransactWriteItems"),
            (s.transact_gets, "TransactGetItems"),
        ];
        let parts: Vec<String> = kinds
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, kind)| format!("{} {kind}", trim(*n as f64 / self.ops as f64)))
            .collect();
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join(" + ")
        }
    }
}

fn trim(x: f64) -> String {
    let text = format!("{x:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// A value of about [`VALUE_BYTES`] bytes.
fn value(n: usize) -> Result<Json, Error> {
    let text = "x".repeat(VALUE_BYTES - 40);
    Json::parse(&format!(r#"{{"n":{n},"text":"{text}"}}"#))
}

fn path(text: String) -> Result<KeyPath, Error> {
    text.parse()
        .map_err(|e| Error::InvalidRequest(format!("{text}: {e}")))
}

/// The options of a store to measure with: no expiry sweeper, whose reads are no operation's,
/// and no re-reading of the namespace definitions during the run: that is one `Query` per
/// second per writing server whatever the operations (docs/namespaces.md), which [`render`]
/// states apart, not a share of the operations that happen to fall in that second.
pub fn store_options() -> StoreOptions {
    StoreOptions {
        sweep_interval: None,
        definitions_refresh: std::time::Duration::from_secs(24 * 3600),
        ..StoreOptions::default()
    }
}

/// Runs every operation `ops` times (at least 10) against `store`, under new groups named from
/// `nonce`, and returns their costs.
///
/// # Errors
/// A store operation failed.
pub fn measure(store: &Store<DynamoBackend>, ops: usize, nonce: u64) -> Result<Vec<Row>, Error> {
    let ops = ops.max(10);
    let tenth = ops / 10;
    let metrics = store.backend().metrics();
    let group = path(format!("/cost-{nonce}"))?;
    let items: Vec<KeyPath> = (0..ops)
        .map(|i| path(format!("{group}/item-{i}")))
        .collect::<Result<_, _>>()?;
    for i in 0..WARM_UP {
        store.put(
            &path(format!("{group}/warm-{i}"))?,
            value(i)?,
            PutOptions::default(),
        )?;
    }
    let mut rows = Vec::new();
    let mut run = |operation: &'static str,
                   count: usize,
                   hand_built: HandBuilt,
                   buys: &'static str,
                   f: &mut dyn FnMut(usize) -> Result<(), Error>|
     -> Result<(), Error> {
        let before = metrics.counts();
        for i in 0..count {
            f(i)?;
        }
        rows.push(Row {
            operation,
            ops: count as u64,
            spent: metrics.counts().since(&before),
            hand_built,
            buys,
        });
        Ok(())
    };
    let put_item = HandBuilt {
        requests: "1 PutItem",
        read_units: 0.0,
        write_units: 1.0,
        streams: None,
    };
    const WRITE_BUYS: &str = "versions and ETags that are never reused, an exact change feed (the log entry, written in the same transaction, with the item as it was for filtered feeds), history where kept";

    run("put of a new path", ops, put_item, WRITE_BUYS, &mut |i| {
        store
            .put(&items[i], value(i)?, PutOptions::default())
            .map(drop)
    })?;
    run(
        "put of an existing path (update)",
        ops,
        put_item,
        WRITE_BUYS,
        &mut |i| {
            store
                .put(&items[i], value(i + 1)?, PutOptions::default())
                .map(drop)
        },
    )?;
    // A group whose namespace keeps no change log (docs/changes.md, "Groups without a change
    // log"): a write is its item alone.
    let unlogged = format!("nolog{nonce}");
    store.define_namespace(&unlogged, unlogged_definition(), None)?;
    let quiet: Vec<KeyPath> = (0..ops)
        .map(|i| path(format!("/{unlogged}-1/item-{i}")))
        .collect::<Result<_, _>>()?;
    run(UNLOGGED_NEW, ops, put_item, UNLOGGED_BUYS, &mut |i| {
        store
            .put(&quiet[i], value(i)?, PutOptions::default())
            .map(drop)
    })?;
    run(UNLOGGED_UPDATE, ops, put_item, UNLOGGED_BUYS, &mut |i| {
        store
            .put(&quiet[i], value(i + 1)?, PutOptions::default())
            .map(drop)
    })?;
    // Another writer (here a transaction of two items, which is planned on a read and teaches
    // this process nothing) changes each item: what this process knows is stale, and its next
    // put guesses wrong once.
    let elsewhere = path(format!("/{unlogged}-2/item-0"))?;
    for (i, at) in quiet.iter().enumerate() {
        store.transact(
            Transaction::new()
                .put(at.clone(), value(i + 2)?, PutOptions::default())
                .put(elsewhere.clone(), value(i)?, PutOptions::default()),
        )?;
    }
    run(
        "put of a path another writer changed since (a wrong guess) in a group without a change log",
        ops,
        put_item,
        "as an update; the failed conditional write (1 write unit) and a read before the second",
        &mut |i| {
            store
                .put(&quiet[i], value(i + 3)?, PutOptions::default())
                .map(drop)
        },
    )?;
    run(
        "delete in a group without a change log",
        ops,
        HandBuilt {
            requests: "1 DeleteItem",
            read_units: 0.0,
            write_units: 1.0,
            streams: None,
        },
        "the tombstone that keeps the path's last version (a conditional PutItem)",
        &mut |i| store.delete(&quiet[i], None).map(drop),
    )?;
    run(
        "patch (merge patch of one member)",
        ops,
        HandBuilt {
            requests: "1 UpdateItem",
            read_units: 0.0,
            write_units: 1.0,
            streams: None,
        },
        "as a put; the patched value is the whole new item, read and written conditionally",
        &mut |i| {
            let patch = Patch::Merge(serde_json::json!({ "n": i + 2 }));
            store
                .patch(&items[i], patch, PutOptions::default(), false)
                .map(drop)
        },
    )?;
    run(
        "create with a generated id (uuid)",
        ops,
        put_item,
        "as a put; the id is checked unused: no item, tombstone or descendant",
        &mut |i| {
            store
                .create(
                    Some(&group),
                    "note",
                    IdKind::Uuid,
                    value(i)?,
                    PutOptions::default(),
                )
                .map(drop)
        },
    )?;
    run(
        "get",
        ops,
        HandBuilt {
            requests: "1 GetItem",
            read_units: 1.0,
            write_units: 0.0,
            streams: None,
        },
        "the same (PathDB's reads are consistent)",
        &mut |i| store.get(&items[i]).map(drop),
    )?;
    run(
        "get_many of 10 paths",
        tenth,
        HandBuilt {
            requests: "1 BatchGetItem",
            read_units: 10.0,
            write_units: 0.0,
            streams: None,
        },
        "one atomic snapshot of the 10 (TransactGetItems bills 2 units per item)",
        &mut |i| {
            let paths = &items[(i * 10) % (ops - 9)..][..10];
            store.get_many(paths).map(drop)
        },
    )?;
    let page = |reverse: bool, children_only: bool| {
        let mut request = ListRequest::new(group.clone());
        request.limit = 100;
        request.reverse = reverse;
        request.children_only = children_only;
        request
    };
    // 100 items of the value and their keys, read together: 1 unit per 4 KB.
    let list_hand_built = HandBuilt {
        requests: "1 Query",
        read_units: (100 * (VALUE_BYTES + 60)).div_ceil(4096) as f64,
        write_units: 0.0,
        streams: None,
    };
    run(
        "list page of 100, forward",
        tenth,
        list_hand_built,
        "a changes_token to follow the listing from (a Query of the change log's newest entry: 1 unit); the 101st item read tells whether another page follows",
        &mut |_| store.list(&page(false, false)).map(drop),
    )?;
    run(
        "list page of 100, reverse",
        tenth,
        list_hand_built,
        "as forward",
        &mut |_| store.list(&page(true, false)).map(drop),
    )?;
    run(
        "children page of 100",
        tenth,
        list_hand_built,
        "as a listing; children with descendants are each skipped over by a new Query (a hand-built design needs an item per child to list them in one)",
        &mut |_| store.list(&page(false, true)).map(drop),
    )?;
    run(
        "transaction of 10 puts",
        tenth,
        HandBuilt {
            requests: "1 TransactWriteItems",
            read_units: 0.0,
            write_units: 20.0,
            streams: None,
        },
        "a consistent read of the 10 items (conditions on what was read), one log entry for the 10",
        &mut |i| {
            let mut tx = Transaction::new();
            for p in &items[(i * 10) % (ops - 9)..][..10] {
                tx = tx.put(p.clone(), value(i)?, PutOptions::default());
            }
            match store.transact(tx)?.first() {
                Some(TxResult::Put(_)) => Ok(()),
                other => Err(Error::InvalidRequest(format!(
                    "a transaction of puts answered {other:?}"
                ))),
            }
        },
    )?;
    let since = store.changes_token(&group)?;
    for (i, p) in items.iter().take(10).enumerate() {
        store.put(p, value(i)?, PutOptions::default())?;
    }
    run(
        "change feed poll returning 10 changes",
        tenth,
        HandBuilt {
            requests: "none (no feed)",
            read_units: 0.0,
            write_units: 0.0,
            streams: Some("1 GetRecords, 0, 0"),
        },
        "exact, ordered, resumable changes of one group, kept 7 days (Streams: 24 hours, billed per GetRecords apart)",
        &mut |_| store.changes(&group, Some(&since), 100).map(drop),
    )?;
    let end = store.changes_token(&group)?;
    run(
        "change feed poll finding nothing",
        tenth,
        HandBuilt {
            requests: "none (no feed)",
            read_units: 0.0,
            write_units: 0.0,
            streams: Some("1 GetRecords, 0, 0"),
        },
        "as above",
        &mut |_| store.changes(&group, Some(&end), 100).map(drop),
    )?;
    run(
        "move of one item (subtree move)",
        tenth,
        HandBuilt {
            requests: "1 GetItem + 1 TransactWriteItems",
            read_units: 1.0,
            write_units: 4.0,
            streams: None,
        },
        "the source's tombstone, the history moved along, the change logged in both places, a job record for moves too large for one transaction",
        &mut |i| {
            let to = path(format!("{group}/moved-{i}"))?;
            store.move_subtree(&items[i], &to, &mut |_| {}).map(drop)
        },
    )?;
    run(
        "delete",
        ops - tenth,
        HandBuilt {
            requests: "1 DeleteItem",
            read_units: 0.0,
            write_units: 1.0,
            streams: None,
        },
        "the tombstone that keeps the path's last version (a re-created item continues it), the change logged",
        &mut |i| store.delete(&items[tenth + i], None).map(drop),
    )?;
    // Aliases (docs/aliases.md): an order with two per-item aliases in groups of their own
    // (by status, and a leaderboard by points), warmed up like the rest.
    let aliased = format!("acct{nonce}");
    let definition = pathdb_store::Definition {
        aliases: [
            format!("/costs{nonce}-open/points-{{!points}}/{aliased}-{{@{aliased}}}"),
            format!("/costs{nonce}-status/status-{{status}}/{aliased}-{{@{aliased}}}"),
        ]
        .into_iter()
        .map(|path| pathdb_store::AliasDefinition { path })
        .collect(),
        ..pathdb_store::Definition::default()
    };
    store.define_namespace(&aliased, definition, None)?;
    store.run_alias_builds()?;
    let order = |i: usize, status: &str, points: usize| -> Result<(KeyPath, Json), Error> {
        let text = "x".repeat(VALUE_BYTES - 70);
        let value = format!(r#"{{"status":"{status}","points":{points},"text":"{text}"}}"#);
        Ok((
            path(format!("{group}/{aliased}-{i}"))?,
            Json::parse(&value)?,
        ))
    };
    for i in 0..WARM_UP {
        let (p, v) = order(ops + i, "open", i)?;
        store.put(&p, v, PutOptions::default())?;
    }
    run(
        "put of a new path with two aliases",
        ops,
        put_item,
        "both aliases written in the item's transaction, each conditional on being free (one BatchGetItem reads them), each alias's feed logged",
        &mut |i| {
            let (p, v) = order(i, "open", i)?;
            store.put(&p, v, PutOptions::default()).map(drop)
        },
    )?;
    run(
        "put of an existing path keeping its two aliases",
        ops,
        put_item,
        "as a put without aliases, plus the change logged in each alias's feed",
        &mut |i| {
            let (p, v) = order(i, "open", i)?;
            store.put(&p, v, PutOptions::default()).map(drop)
        },
    )?;
    run(
        "put changing both aliases (status and points)",
        ops,
        put_item,
        "the old aliases removed and the new ones taken in the item's transaction (one BatchGetItem reads the four)",
        &mut |i| {
            let (p, v) = order(i, "shipped", i + 1)?;
            store.put(&p, v, PutOptions::default()).map(drop)
        },
    )?;
    let unique = format!("user{nonce}");
    let definition = pathdb_store::Definition {
        aliases: vec![pathdb_store::AliasDefinition {
            path: format!("/mail{nonce}-{{email}}"),
        }],
        ..pathdb_store::Definition::default()
    };
    store.define_namespace(&unique, definition, None)?;
    store.run_alias_builds()?;
    run(
        "put of a new path with a unique alias in a group of its own (/email-{email})",
        ops,
        put_item,
        "the alias written in the item's transaction if free; each new email is a new group, whose change log end this process reads once",
        &mut |i| {
            let p = path(format!("{group}/{unique}-{i}"))?;
            let text = "x".repeat(VALUE_BYTES - 60);
            let v = Json::parse(&format!(
                r#"{{"email":"u{i}@example.org","text":"{text}"}}"#
            ))?;
            store.put(&p, v, PutOptions::default()).map(drop)
        },
    )?;
    run(
        "get through an alias",
        ops,
        HandBuilt {
            requests: "1 Query (a GSI)",
            read_units: 1.0,
            write_units: 0.0,
            streams: None,
        },
        "a consistent read of the alias, then of its item (a GSI read is eventually consistent)",
        &mut |i| {
            let alias = path(format!("/costs{nonce}-status/status-shipped/{aliased}-{i}"))?;
            store.get(&alias).map(drop)
        },
    )?;
    run(
        "put, the first of this process to its group",
        tenth,
        put_item,
        "as a put, plus reading the group's change log end (and, one time in eight, its oldest entries)",
        &mut |i| {
            let first = path(format!("/cost-{nonce}-{i}/item-1"))?;
            store
                .put(&first, value(i)?, PutOptions::default())
                .map(drop)
        },
    )?;
    Ok(rows)
}

/// The rows as a Markdown table, with the units the endpoint reported over the run.
pub fn render(rows: &[Row]) -> String {
    let mut out = String::from(
        "| operation | runs | requests per op | requests per op, by kind | read units per op | write units per op | hand-built design: requests, read units, write units | the same with a change feed (DynamoDB Streams) | what the difference buys |\n\
         | --- | ---: | ---: | --- | ---: | ---: | --- | --- | --- |\n",
    );
    let mut reported = (0.0, 0.0);
    for row in rows {
        let ops = row.ops as f64;
        let h = &row.hand_built;
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {}, {}, {} | {} | {} |\n",
            row.operation,
            row.ops,
            trim(row.requests_per_op()),
            row.by_kind(),
            trim(row.spent.model_read_units / ops),
            trim(row.spent.model_write_units as f64 / ops),
            h.requests,
            trim(h.read_units),
            trim(h.write_units),
            h.streams.unwrap_or("the same"),
            row.buys,
        ));
        reported.0 += row.spent.read_units;
        reported.1 += row.spent.write_units;
    }
    out.push_str(&format!(
        "\nUnits by DynamoDB's pricing rules from the items' sizes (values of {VALUE_BYTES} bytes). \
         The endpoint reported {} read and {} write units over these runs (ReturnConsumedCapacity: \
         DynamoDB's bill; moto reports fixed placeholders, and none for transactions). \
         Apart from these, a server on a table that others write too reads the namespace \
         definitions and alias builds again at most once a second while it writes: two Queries \
         of the store's partition (docs/namespaces.md).\n",
        trim(reported.0),
        trim(reported.1)
    ));
    out
}

/// On-demand prices in US East (N. Virginia) since the 1 November 2024 cut, in dollars per
/// million: write request units, read request units, and DynamoDB Streams read requests
/// (`GetRecords`, $0.02 per 100,000).
const PRICES: (f64, f64, f64) = (0.625, 0.125, 0.2);
/// The bill's workload: updates of [`VALUE_BYTES`]-byte items and consistent gets per second,
/// for a month of 730 hours.
const WORKLOAD: (f64, f64) = (100.0, 1000.0);
const MONTH_SECONDS: f64 = 730.0 * 3600.0;
/// `GetRecords` per second of the hand-built design's feed consumer: Lambda polls a shard 4
/// times a second, and this workload fits one shard.
const STREAMS_POLLS: f64 = 4.0;

/// One design's monthly bill for the [`WORKLOAD`].
#[derive(Clone, Debug)]
pub struct Bill {
    /// Whose.
    pub design: &'static str,
    /// Write request units per write, read request units per write and per get.
    pub per_op: (f64, f64, f64),
    /// Millions of write units, read units and Streams read requests a month.
    pub millions: (f64, f64, f64),
    /// Dollars a month.
    pub dollars: f64,
}

impl Bill {
    fn new(design: &'static str, per_op: (f64, f64, f64), streams_reads: f64) -> Bill {
        let (writes, gets) = (WORKLOAD.0 * MONTH_SECONDS, WORKLOAD.1 * MONTH_SECONDS);
        let millions = (
            per_op.0 * writes / 1e6,
            (per_op.1 * writes + per_op.2 * gets) / 1e6,
            streams_reads * MONTH_SECONDS / 1e6,
        );
        let dollars = millions.0 * PRICES.0 + millions.1 * PRICES.1 + millions.2 * PRICES.2;
        Bill {
            design,
            per_op,
            millions,
            dollars,
        }
    }
}

/// The monthly bills of PathDB (its measured update and get) and of the hand-built design
/// without a feed and with one from DynamoDB Streams.
///
/// # Errors
/// `rows` has no update or get row.
pub fn bills(rows: &[Row]) -> Result<Vec<Bill>, Error> {
    let per_op = |name: &str| -> Result<(f64, f64), Error> {
        let row = rows
            .iter()
            .find(|r| r.operation == name)
            .ok_or_else(|| Error::InvalidRequest(format!("no row {name}")))?;
        let ops = row.ops as f64;
        Ok((
            row.spent.model_write_units as f64 / ops,
            row.spent.model_read_units / ops,
        ))
    };
    let (update_writes, update_reads) = per_op("put of an existing path (update)")?;
    let (quiet_writes, quiet_reads) = per_op(UNLOGGED_UPDATE)?;
    let (_, get_reads) = per_op("get")?;
    Ok(vec![
        Bill::new("PathDB", (update_writes, update_reads, get_reads), 0.0),
        Bill::new(
            "PathDB, in groups without a change log",
            (quiet_writes, quiet_reads, get_reads),
            0.0,
        ),
        Bill::new(
            "hand-built with a change feed (DynamoDB Streams)",
            (1.0, 0.0, 1.0),
            STREAMS_POLLS,
        ),
        Bill::new("hand-built without a change feed", (1.0, 0.0, 1.0), 0.0),
    ])
}

/// The bills as a Markdown table, each against the hand-built design with Streams.
pub fn render_bills(bills: &[Bill]) -> String {
    let mut out = format!(
        "\nA month of {} updates and {} consistent gets a second (730 hours, on-demand, US East: \
         ${} per million write units, ${} per million read units, ${} per million Streams read \
         requests; the Streams consumer polls its shard {} times a second, as Lambda does, which \
         would make them free):\n\n\
         | design | write units per update | read units per update, per get | write units a month | read units a month | Streams reads a month | per month | against hand-built with Streams |\n\
         | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |\n",
        WORKLOAD.0, WORKLOAD.1, PRICES.0, PRICES.1, PRICES.2, STREAMS_POLLS
    );
    let base = bills
        .iter()
        .find(|b| b.design.contains("Streams"))
        .map_or(f64::NAN, |b| b.dollars);
    for b in bills {
        out.push_str(&format!(
            "| {} | {} | {}, {} | {:.1} M | {:.1} M | {:.1} M | ${:.2} | {:.2}x |\n",
            b.design,
            trim(b.per_op.0),
            trim(b.per_op.1),
            trim(b.per_op.2),
            b.millions.0,
            b.millions.1,
            b.millions.2,
            b.dollars,
            b.dollars / base,
        ));
    }
    out
}

/// What one group's small writes take of its partition, measured under concurrency.
#[derive(Clone, Copy, Debug)]
pub struct Ceiling {
    /// Whether the group keeps a change log.
    pub logged: bool,
    /// Concurrent writers, each updating an item of its own in the one group.
    pub writers: usize,
    /// Writes committed.
    pub writes: u64,
    /// Write requests they took (`PutItem`, `DeleteItem` and `TransactWriteItems`).
    pub requests: u64,
    /// Write units by the pricing rules, all of them in the group's partition.
    pub units: u64,
    /// The part of `units` that went to change log entries.
    pub log_units: u64,
}

/// The write units a partition serves per second.
pub const PARTITION_WRITE_UNITS: f64 = 1000.0;

impl Ceiling {
    /// Write units per write.
    pub fn units_per_write(&self) -> f64 {
        self.units as f64 / self.writes as f64
    }

    /// The group's writes per second before its partition's [`PARTITION_WRITE_UNITS`] run out.
    pub fn writes_per_second(&self) -> f64 {
        PARTITION_WRITE_UNITS / self.units_per_write()
    }
}

/// A group's write ceiling by the capacity model: `writers` threads each update an item of
/// their own `writes` times, all in one new group named from `nonce`, with values of about 100
/// bytes (a small write: under 1 KB with its change). Group commit shares rounds among them.
/// `logged`: a group that keeps a change log; otherwise one whose namespace is defined with
/// `"changes": false` ([`measure`] defines it).
///
/// # Errors
/// A write failed.
pub fn ceiling(
    store: &Store<DynamoBackend>,
    writers: usize,
    writes: usize,
    nonce: u64,
    logged: bool,
) -> Result<Ceiling, Error> {
    let small = |n: usize| Json::parse(&format!(r#"{{"n":{n},"text":"{}"}}"#, "x".repeat(80)));
    let group = if logged {
        format!("/ceiling-{nonce}")
    } else {
        store.define_namespace(&format!("nologc{nonce}"), unlogged_definition(), None)?;
        format!("/nologc{nonce}-1")
    };
    let paths: Vec<KeyPath> = (0..writers)
        .map(|w| path(format!("{group}/item-{w}")))
        .collect::<Result<_, _>>()?;
    for p in &paths {
        store.put(p, small(0)?, PutOptions::default())?;
    }
    let metrics = store.backend().metrics();
    let before = metrics.counts();
    std::thread::scope(|scope| {
        let threads: Vec<_> = paths
            .iter()
            .map(|p| {
                scope.spawn(move || -> Result<(), Error> {
                    for i in 1..=writes {
                        store.put(p, small(i)?, PutOptions::default())?;
                    }
                    Ok(())
                })
            })
            .collect();
        threads.into_iter().try_for_each(|t| {
            t.join()
                .map_err(|_| Error::InvalidRequest("a writer panicked".into()))?
        })
    })?;
    let spent = metrics.counts().since(&before);
    Ok(Ceiling {
        logged,
        writers,
        writes: (writers * writes) as u64,
        requests: spent.writes + spent.transactions,
        units: spent.model_write_units,
        log_units: spent.model_log_write_units,
    })
}

/// The ceilings as a Markdown table, a row each.
pub fn render_ceilings(ceilings: &[Ceiling]) -> String {
    let writers = ceilings.first().map_or(0, |c| c.writers);
    let mut out = format!(
        "\nOne group's small writes ({writers} writers, each updating its own item, about 100-byte values), \
         by the capacity model:\n\n\
         | group | writes | write requests | writes per request | write units per write | of which the change log's | the group's writes per second at {PARTITION_WRITE_UNITS} units |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n"
    );
    for c in ceilings {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {:.0} |\n",
            if c.logged {
                "with a change log"
            } else {
                "without a change log"
            },
            c.writes,
            c.requests,
            trim(c.writes as f64 / c.requests.max(1) as f64),
            trim(c.units_per_write()),
            trim(c.log_units as f64 / c.writes as f64),
            c.writes_per_second(),
        ));
    }
    out
}
