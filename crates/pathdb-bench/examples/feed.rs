//! What the change feed costs on the embedded backend (docs/changes.md), in one run:
//!
//! 1. A durable write with and without its change log entry, through the file backend, on the
//!    same file, alternating in rounds so load changes hit both alike: the item's conditional put
//!    alone (what a put committed before the feed), and the same with the entry appended (what it
//!    commits now). The whole `Store::put` is timed too, for context.
//! 2. The latency from a commit to a client waiting in `Store::wait_changes`, durable and relaxed:
//!    the time from the writer's `put` returning (the commit is acknowledged) to the waiter's
//!    `wait_changes` returning with the change, and from before the `put` (an upper bound that
//!    includes the commit itself).
//!
//! `cargo run --release -p pathdb-bench --example feed -- [writes per row, default 1000]`

use pathdb_keys::KeyPath;
use pathdb_store::backend::{
    Backend, Durability, Expect, FileBackend, FileOptions, Key, Reader, Record, WriteBatch, WriteOp,
};
use pathdb_store::{Json, PutOptions, Store, StoreOptions};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const ROUNDS: usize = 10;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(1000);
    let dir = tempfile::tempdir()?;
    println!("change feed cost, {n} writes per row, {ROUNDS} alternating rounds");
    durable_writes(&dir.path().join("writes.redb"), n)?;
    for durability in [Durability::Immediate, Durability::Relaxed] {
        let file = dir.path().join(format!("wait-{durability:?}.redb"));
        commit_to_waiter(&file, durability, n)?;
    }
    Ok(())
}

fn value(i: usize) -> String {
    format!(r#"{{"title":"post number {i}","body":"some text of a typical small item","n":{i}}}"#)
}

/// Rows 1: the backend's durable write without and with the entry, and the store's put.
fn durable_writes(file: &std::path::Path, n: usize) -> Result<(), Box<dyn std::error::Error>> {
    let store = Store::open(file, FileOptions::default(), StoreOptions::default())?;
    let paths: Vec<KeyPath> = (0..100)
        .map(|i| format!("/user-7/post-{i}").parse())
        .collect::<Result<_, _>>()?;
    for p in &paths {
        store.put(p, Json::parse(&value(0))?, PutOptions::default())?;
    }
    let backend: &FileBackend = store.backend();
    let mut times: [Vec<Duration>; 3] = Default::default();
    let per_round = n / ROUNDS;
    for round in 0..ROUNDS {
        for (row, samples) in times.iter_mut().enumerate() {
            for i in 0..per_round {
                let k = round * per_round + i;
                let path = &paths[k % paths.len()];
                let text = value(k);
                let started = Instant::now();
                if row == 2 {
                    store.put(path, Json::parse(&text)?, PutOptions::default())?;
                } else {
                    write_raw(backend, path, &text, row == 1)?;
                }
                samples.push(started.elapsed());
            }
        }
    }
    let names = [
        "durable write, item only (before the feed)",
        "durable write, item + change log entry",
        "Store::put (durable, with the feed)",
    ];
    let base = mean(&times[0]);
    for (name, samples) in names.iter().zip(&mut times) {
        samples.sort();
        println!(
            "{name:<45} mean {:>9.1?}  p50 {:>9.1?}  p99 {:>9.1?}  vs item only {:+.1}%",
            mean(samples),
            samples[samples.len() / 2],
            samples[samples.len() * 99 / 100],
            (mean(samples).as_secs_f64() / base.as_secs_f64() - 1.0) * 100.0
        );
    }
    Ok(())
}

/// What a put commits: the item, conditional on the version read, and (with `entry`) an entry
/// of the size the store logs for it.
fn write_raw(
    backend: &FileBackend,
    path: &KeyPath,
    text: &str,
    entry: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    let key = Key {
        partition: path.partition_key(),
        sort: path.sort_key(),
    };
    let current = backend.reader()?.get(&key)?;
    let version = current.as_ref().map_or(1, |r| r.version + 1);
    let now = 1_700_000_000_000_000;
    let mut ops = vec![WriteOp::Put {
        key: key.clone(),
        record: Record {
            version,
            created_at: now,
            modified_at: now,
            expires_at: None,
            value: text.as_bytes().to_vec(),
        },
        expect: Some(current.map_or(Expect::Absent, |r| Expect::Version(r.version))),
    }];
    if entry {
        // The entry as changes.rs writes it: the change with its path, metadata and value.
        let logged = format!(
            r#"{{"changes":[{{"op":"put","path":"{path}","version":{version},"created_at":{now},"modified_at":{now},"value":{text}}}],"end":true}}"#
        );
        ops.push(WriteOp::Append {
            log: Key {
                partition: key.partition.clone(),
                sort: vec![0xff, 0xfd],
            },
            record: Record {
                version: 1,
                created_at: now,
                modified_at: now,
                expires_at: None,
                value: logged.into_bytes(),
            },
        });
    }
    backend.write(WriteBatch { ops })?;
    Ok(())
}

/// Row 2: commit to waiting reader.
fn commit_to_waiter(
    file: &std::path::Path,
    durability: Durability,
    n: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let store = Store::open(
        file,
        FileOptions {
            durability,
            ..FileOptions::default()
        },
        StoreOptions::default(),
    )?;
    let group: KeyPath = "/feed-1".parse()?;
    let start = store.changes_token(&group)?;
    let (acks, acked) = mpsc::channel::<(Instant, Instant)>();
    let writer = {
        let store = store.clone();
        std::thread::spawn(move || -> Result<(), pathdb_store::Error> {
            for i in 0..n {
                // Let the waiter get back to waiting: this measures a waiting client.
                std::thread::sleep(Duration::from_micros(1500 + (i as u64 * 7919) % 1500));
                let path: KeyPath = format!("/feed-1/e-{i}").parse().expect("valid path");
                let before = Instant::now();
                store.put(&path, Json::parse(&value(i))?, PutOptions::default())?;
                let _ = acks.send((before, Instant::now()));
            }
            Ok(())
        })
    };
    let mut after_ack = Vec::with_capacity(n);
    let mut after_start = Vec::with_capacity(n);
    let mut token = start;
    let mut seen = 0;
    while seen < n {
        let page = store.wait_changes(&group, &token, 1000, Duration::from_secs(10))?;
        let arrived = Instant::now();
        for _ in &page.changes {
            let (before, acked_at) = acked.recv()?;
            after_ack.push(arrived.saturating_duration_since(acked_at));
            after_start.push(arrived.saturating_duration_since(before));
            seen += 1;
        }
        token = page.next_token;
    }
    writer.join().map_err(|_| "writer panicked")??;
    for (name, samples) in [
        ("after the put returned", &mut after_ack),
        ("after the put started", &mut after_start),
    ] {
        samples.sort();
        println!(
            "commit to waiter ({durability:?}), {name:<24} p50 {:>9.1?}  p99 {:>9.1?}  max {:>9.1?}",
            samples[samples.len() / 2],
            samples[samples.len() * 99 / 100],
            samples[samples.len() - 1]
        );
    }
    Ok(())
}

fn mean(samples: &[Duration]) -> Duration {
    samples.iter().sum::<Duration>() / samples.len().max(1) as u32
}
