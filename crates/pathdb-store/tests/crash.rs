//! Crash safety of the embedded backend: a child process (this test binary, re-executed with
//! [`CHILD_ENV`] set) commits writes from several threads and prints each write once it is
//! acknowledged; the parent SIGKILLs it at a random moment, reopens the file and finds every
//! acknowledged write with its acknowledged version and value, each transaction whole or absent,
//! and nothing else. [`ROUNDS_ENV`] sets the number of rounds (default 20).

use pathdb_keys::KeyPath;
use pathdb_store::backend::{Durability, FileBackend, FileOptions};
use pathdb_store::{
    Condition, Item, Json, ListEntry, ListRequest, PutOptions, Store, StoreOptions, Transaction,
};
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{BuildHasher, Hasher};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Set in the child's environment to the database file; the child writer runs only then.
const CHILD_ENV: &str = "PATHDB_CRASH_CHILD";
/// Number of kill-and-reopen rounds.
const ROUNDS_ENV: &str = "PATHDB_CRASH_ROUNDS";
/// Set in the child's environment on every other round: it checkpoints every few commits, so
/// that the kill often lands while a checkpoint runs beside the committer.
const CHECKPOINT_ENV: &str = "PATHDB_CRASH_CHECKPOINT_BYTES";
const WRITERS: u64 = 4;
/// Single puts of one writer rotate over this many items, so most are overwrites.
const KEYS: u64 = 4;

fn random() -> u64 {
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
}

fn single(writer: u64, key: u64) -> KeyPath {
    format!("/crash-1/w-{writer}/single-{key}").parse().unwrap()
}

fn pair(writer: u64, seq: u64) -> [KeyPath; 2] {
    [
        format!("/crash-1/w-{writer}/txa-{seq}").parse().unwrap(),
        format!("/crash-1/w-{writer}/txb-{seq}").parse().unwrap(),
    ]
}

fn value(seq: u64) -> Json {
    Json::parse(&format!(r#"{{"seq":{seq}}}"#)).unwrap()
}

fn options() -> StoreOptions {
    StoreOptions {
        sweep_interval: None,
        ..StoreOptions::default()
    }
}

/// The child: does nothing unless [`CHILD_ENV`] is set. Each writer thread alternates a single
/// put (even sequence numbers; writer 1 awaits `put_created_queued`) and a two-item transaction
/// (odd ones) and prints `P writer seq version` or `T writer seq` (after [`ACK`]) once the store
/// acknowledged it.
#[test]
fn child_writer() {
    let Some(db) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let file = FileOptions {
        checkpoint_bytes: std::env::var(CHECKPOINT_ENV)
            .ok()
            .and_then(|v| v.parse().ok()),
        ..FileOptions::default()
    };
    let store = Store::open(&db, file, options()).expect("child: open");
    let stdout = Mutex::new(std::io::stdout());
    let started = Instant::now();
    std::thread::scope(|s| {
        for writer in 0..WRITERS {
            let (store, stdout) = (&store, &stdout);
            s.spawn(move || {
                for seq in 0u64.. {
                    // A guard against a parent that never kills us; not part of the test.
                    if started.elapsed() > Duration::from_secs(120) {
                        std::process::exit(3);
                    }
                    let line = if seq.is_multiple_of(2) {
                        let key = single(writer, (seq / 2) % KEYS);
                        // Writer 1 takes the server's path for a PUT: the commit awaited, not
                        // blocked on.
                        let item = if writer == 1 {
                            let put =
                                store.put_created_queued(&key, value(seq), PutOptions::default());
                            crate::block_on(put).map(|(item, _)| item)
                        } else {
                            store.put(&key, value(seq), PutOptions::default())
                        }
                        .expect("child: put");
                        format!("{ACK}P {writer} {seq} {}", item.version)
                    } else {
                        let create = PutOptions {
                            condition: Some(Condition::MustNotExist),
                            ..PutOptions::default()
                        };
                        let [a, b] = pair(writer, seq);
                        store
                            .transact(Transaction::new().put(a, value(seq), create.clone()).put(
                                b,
                                value(seq),
                                create,
                            ))
                            .expect("child: transact");
                        format!("{ACK}T {writer} {seq}")
                    };
                    let mut out = stdout.lock().unwrap();
                    // The parent closed the pipe: it has what it needs.
                    if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
                        std::process::exit(0);
                    }
                }
            });
        }
    });
}

/// Marks the child's lines among libtest's own output (which may share the first line).
const ACK: &str = "pathdb-ack ";

/// One acknowledged write: `(writer, seq, version)`, version 0 for a transaction.
type Ack = (u64, u64, u64);

fn parse_ack(line: &str) -> Option<Ack> {
    let mut words = line[line.find(ACK)? + ACK.len()..].split_whitespace();
    let kind = words.next()?;
    let mut number = || words.next()?.parse::<u64>().ok();
    match kind {
        "P" => Some((number()?, number()?, number()?)),
        "T" => Some((number()?, number()?, 0)),
        _ => None,
    }
}

#[test]
fn acknowledged_writes_survive_sigkill() {
    let rounds: usize = std::env::var(ROUNDS_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let mut verified = 0;
    for round in 0..rounds {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("crash.redb");
        let acks = run_and_kill(&db, round % 2 == 1);
        verify(&db, &acks).unwrap_or_else(|e| panic!("round {round}: {e}"));
        verified += acks.len();
    }
    // The figure docs/reliability.md records (`-- --nocapture` shows it).
    eprintln!("{rounds} SIGKILLs: {verified} acknowledged writes, every one found after reopening");
}

/// Starts the child, lets it acknowledge a random number of writes, then SIGKILLs it a random
/// moment later (mid-commit, mostly); returns every acknowledgement it printed.
fn run_and_kill(db: &Path, checkpointing: bool) -> Vec<Ack> {
    let mut child = Command::new(std::env::current_exe().unwrap());
    child.args([
        "crash::child_writer",
        "--exact",
        "--nocapture",
        "--test-threads=1",
    ]);
    if checkpointing {
        child.env(CHECKPOINT_ENV, "2048");
    }
    let mut child = child
        .env(CHILD_ENV, db)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the child");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let target = 1 + (random() % 100) as usize;
    let mut acks = Vec::new();
    while acks.len() < target {
        match lines.next() {
            Some(line) => acks.extend(parse_ack(&line.unwrap())),
            None => panic!("the child stopped early: {:?}", child.wait()),
        }
    }
    std::thread::sleep(Duration::from_micros(random() % 5000));
    // `Child::kill` is SIGKILL on Unix: no destructor, no flush, no commit gets to finish.
    child.kill().unwrap();
    child.wait().unwrap();
    // What the child printed before it died was acknowledged too.
    for line in lines {
        acks.extend(parse_ack(&line.unwrap()));
    }
    acks
}

fn seq_of(item: &Item) -> u64 {
    item.value.to_value()["seq"].as_u64().unwrap()
}

fn verify(db: &Path, acks: &[Ack]) -> Result<(), String> {
    let store = Store::open(db, FileOptions::default(), options())
        .map_err(|e| format!("reopen after the crash failed: {e}"))?;
    let mut request = ListRequest::new("/crash-1".parse().unwrap());
    request.limit = 1000;
    let mut stored: BTreeMap<KeyPath, Item> = BTreeMap::new();
    loop {
        let page = store.list(&request).map_err(|e| e.to_string())?;
        stored.extend(
            page.items
                .into_iter()
                .filter_map(ListEntry::into_item)
                .map(|i| (i.path.clone(), i)),
        );
        match page.next_page_token {
            Some(t) => request.page_token = Some(t),
            None => break,
        }
    }
    let mut accounted: BTreeSet<KeyPath> = BTreeSet::new();
    for writer in 0..WRITERS {
        let mine: Vec<&Ack> = acks.iter().filter(|a| a.0 == writer).collect();
        // A writer is sequential: its acknowledgements are 0, 1, 2, … and at most the next
        // write was in flight when the child died.
        for (expected, ack) in mine.iter().enumerate() {
            if ack.1 != expected as u64 {
                return Err(format!("writer {writer}: acks out of order: {mine:?}"));
            }
        }
        let in_flight = mine.len() as u64;
        for key in 0..KEYS {
            let p = single(writer, key);
            let acked: Vec<&&Ack> = mine
                .iter()
                .filter(|a| a.1.is_multiple_of(2) && (a.1 / 2) % KEYS == key)
                .collect();
            let last = acked.last().map(|a| (a.1, a.2));
            if let Some((_, version)) = last
                && version != acked.len() as u64
            {
                return Err(format!(
                    "{p}: acknowledged version {version} is not the write count"
                ));
            }
            let racing = in_flight.is_multiple_of(2) && (in_flight / 2) % KEYS == key;
            let found = stored.get(&p).map(|i| (seq_of(i), i.version));
            let next_version = last.map_or(1, |(_, v)| v + 1);
            let ok = found == last || (racing && found == Some((in_flight, next_version)));
            if !ok {
                return Err(format!(
                    "{p}: found (seq, version) {found:?}, acknowledged {last:?}, in flight {in_flight}"
                ));
            }
            accounted.insert(p);
        }
        for seq in (1..=in_flight).step_by(2) {
            let [a, b] = pair(writer, seq);
            let found = [stored.get(&a), stored.get(&b)];
            match found {
                [Some(x), Some(y)] => {
                    if seq_of(x) != seq || seq_of(y) != seq || x.version != 1 || y.version != 1 {
                        return Err(format!("transaction {seq} of writer {writer}: {x:?} {y:?}"));
                    }
                }
                [None, None] if seq == in_flight => {}
                _ => {
                    return Err(format!(
                        "transaction {seq} of writer {writer} (in flight: {in_flight}): {found:?}"
                    ));
                }
            }
            accounted.insert(a);
            accounted.insert(b);
        }
    }
    let strays: Vec<&KeyPath> = stored.keys().filter(|p| !accounted.contains(*p)).collect();
    if !strays.is_empty() {
        return Err(format!("items no write explains: {strays:?}"));
    }
    // The recovered database takes writes again.
    let after = "/crash-1/after-1".parse().unwrap();
    store
        .put(&after, value(0), PutOptions::default())
        .map_err(|e| format!("write after recovery: {e}"))?;
    if store.get(&after).map_err(|e| e.to_string())?.is_none() {
        return Err("a write after recovery is missing".into());
    }
    Ok(())
}

/// Dropping a store closes its file before `drop` returns, also while its expiry sweeper is
/// busy, so the file reopens at once, with everything written and the namespace settings.
#[test]
fn reopens_right_after_drop() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("reopen.redb");
    let busy_sweeper = StoreOptions {
        sweep_interval: Some(Duration::from_millis(1)),
        ..StoreOptions::default()
    };
    let soon = PutOptions {
        expires: Some(pathdb_store::Expiry::After(Duration::from_millis(1))),
        ..PutOptions::default()
    };
    for round in 0..30u64 {
        let store = Store::open(&db, FileOptions::default(), busy_sweeper.clone())
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        if round == 0 {
            store.set_namespace_history("kept", Some(2)).unwrap();
        }
        let kept: KeyPath = "/r-1/kept-1".parse().unwrap();
        let previous = store.get(&kept).unwrap().map_or(0, |i| i.version);
        assert_eq!(
            previous, round,
            "round {round}: an earlier write is missing"
        );
        store
            .put(&kept, value(round), PutOptions::default())
            .unwrap();
        let history = store.history(&kept, 10).unwrap();
        assert_eq!(history.len(), (round as usize + 1).min(2));
        for i in 0..5 {
            let p: KeyPath = format!("/r-1/tmp-{i}").parse().unwrap();
            store.put(&p, value(round), soon.clone()).unwrap();
        }
    }
}

/// Small commits go through the journal beside the file; closing checkpoints it into the file
/// and removes it, so a closed database is one file, which a read-only open reads whole.
#[test]
fn a_closed_database_is_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("one.redb");
    let store = Store::open(&db, FileOptions::default(), options()).unwrap();
    for seq in 0..20 {
        store
            .put(&single(0, seq), value(seq), PutOptions::default())
            .unwrap();
    }
    let journal = dir.path().join("one.redb-journal");
    assert!(journal.exists(), "an open database journals its commits");
    drop(store);
    let files: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(files, ["one.redb"]);
    let read_only = Store::open_read_only(&db, FileOptions::default(), options()).unwrap();
    for seq in 0..20 {
        assert_eq!(
            read_only.get(&single(0, seq)).unwrap().map(|i| i.value),
            Some(value(seq))
        );
    }
}

/// A commit too large for the journal (over 1 MiB: an import's batch) is a durable redb commit
/// of its own, at either durability. The journaled commits before it are in the overlay, not
/// yet in redb: it is checked against them and lands after them, and the file then holds both.
#[test]
fn a_commit_too_large_for_the_journal_lands_after_the_journaled_ones() {
    for durability in [Durability::Immediate, Durability::Relaxed] {
        large_commit_after_journaled_ones(FileOptions {
            durability,
            ..FileOptions::default()
        });
    }
}

fn large_commit_after_journaled_ones(file: FileOptions) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("big.redb");
    let store = Store::open(&db, file, options()).unwrap();
    for seq in 0..5 {
        store
            .put(&single(2, seq), value(seq), PutOptions::default())
            .unwrap();
    }
    store
        .put(&single(2, 0), value(100), PutOptions::default())
        .unwrap();
    let pad = Json::parse(&format!(r#"{{"pad":"{}"}}"#, "x".repeat(300_000))).unwrap();
    let mut tx = Transaction::new().put(
        single(2, 0),
        value(200),
        PutOptions {
            condition: Some(Condition::IfVersion(2)),
            ..PutOptions::default()
        },
    );
    for n in 0..4 {
        tx = tx.put(single(3, n), pad.clone(), PutOptions::default());
    }
    store.transact(tx).unwrap();
    let check = |store: &Store<FileBackend>| {
        let first = store.get(&single(2, 0)).unwrap().unwrap();
        assert_eq!((first.version, first.value), (3, value(200)));
        for seq in 1..5 {
            let item = store.get(&single(2, seq)).unwrap().unwrap();
            assert_eq!(item.value, value(seq));
        }
        for n in 0..4 {
            assert_eq!(store.get(&single(3, n)).unwrap().unwrap().value, pad);
        }
    };
    check(&store);
    store
        .put(&single(2, 9), value(9), PutOptions::default())
        .unwrap();
    drop(store);
    let read_only = Store::open_read_only(&db, FileOptions::default(), options()).unwrap();
    check(&read_only);
    assert_eq!(
        read_only.get(&single(2, 9)).unwrap().map(|i| i.value),
        Some(value(9))
    );
}

/// The file and its journal copied while the store is open are what a crash leaves: a
/// read-only open refuses them (it cannot replay), a read-write open replays every
/// acknowledged commit.
#[test]
fn a_copy_taken_while_open_replays_its_journal() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("live.redb");
    let store = Store::open(&db, FileOptions::default(), options()).unwrap();
    for seq in 0..20 {
        store
            .put(&single(1, seq), value(seq), PutOptions::default())
            .unwrap();
    }
    let copy = dir.path().join("copy.redb");
    std::fs::copy(&db, &copy).unwrap();
    // Both journal files: commits made while a checkpoint ran are in the second.
    for suffix in ["-journal", "-journal2"] {
        std::fs::copy(
            dir.path().join(format!("live.redb{suffix}")),
            dir.path().join(format!("copy.redb{suffix}")),
        )
        .unwrap();
    }
    drop(store);
    let refused = Store::open_read_only(&copy, FileOptions::default(), options())
        .err()
        .expect("a read-only open cannot replay the journal");
    assert!(
        refused.to_string().contains("open it read-write once"),
        "{refused}"
    );
    let store = Store::open(&copy, FileOptions::default(), options()).unwrap();
    for seq in 0..20 {
        assert_eq!(
            store.get(&single(1, seq)).unwrap().map(|i| i.value),
            Some(value(seq)),
            "write {seq} is missing after the replay"
        );
    }
}
