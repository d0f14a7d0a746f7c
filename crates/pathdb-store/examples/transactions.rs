//! Interactive transactions under load, through the Rust API on a database file
//! (docs/transactions.md, "What was shown"): transfers, write skew and phantoms, each with 8
//! threads, checking the invariants as it goes. Exits non-zero when one breaks.
//!
//! ```sh
//! cargo run --release -p pathdb-store --example transactions -- [SECONDS] [ROUNDS]
//! ```
//!
//! Defaults: 30 seconds of transfers, 1,000 rounds of write skew and of phantoms.

use pathdb_keys::KeyPath;
use pathdb_store::backend::FileOptions;
use pathdb_store::{Change, Error, Json, ListRequest, PutOptions, Store, StoreOptions};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

const CLIENTS: usize = 8;
const GROUPS: usize = 10;
const ACCOUNTS: usize = 100;

type Failure = Box<dyn std::error::Error>;

fn main() -> Result<(), Failure> {
    let mut args = std::env::args().skip(1);
    let seconds: u64 = args.next().map_or(Ok(30), |a| a.parse())?;
    let rounds: usize = args.next().map_or(Ok(1000), |a| a.parse())?;
    let dir = tempfile::tempdir()?;
    let store = Store::open(
        dir.path().join("transactions.redb"),
        FileOptions::default(),
        StoreOptions::default(),
    )?;
    transfers(&store, Duration::from_secs(seconds))?;
    write_skew(&store, rounds)?;
    phantoms(&store, rounds)?;
    println!("all invariants held");
    Ok(())
}

fn path(text: &str) -> KeyPath {
    text.parse().expect("a valid path")
}

fn number(value: &Json, member: &str) -> i64 {
    value.to_value()[member].as_i64().unwrap_or(i64::MIN)
}

/// A small xorshift generator per thread.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// Runs `work(client)` on [`CLIENTS`] threads released together.
fn race<T: Send>(work: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let barrier = Barrier::new(CLIENTS);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..CLIENTS)
            .map(|client| {
                let (barrier, work) = (&barrier, &work);
                s.spawn(move || {
                    barrier.wait();
                    work(client)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("client panicked"))
            .collect()
    })
}

/// Runs per commit, counted by the closures.
struct Runs {
    runs: AtomicUsize,
    commits: AtomicUsize,
    most: AtomicUsize,
}

impl Runs {
    fn new() -> Runs {
        Runs {
            runs: AtomicUsize::new(0),
            commits: AtomicUsize::new(0),
            most: AtomicUsize::new(0),
        }
    }

    fn done(&self, runs: usize) {
        self.commits.fetch_add(1, Ordering::Relaxed);
        self.most.fetch_max(runs, Ordering::Relaxed);
    }

    fn summary(&self) -> String {
        let (runs, commits) = (
            self.runs.load(Ordering::Relaxed),
            self.commits.load(Ordering::Relaxed),
        );
        format!(
            "{commits} transactions, {:.3} runs each on average, at most {}",
            runs as f64 / commits.max(1) as f64,
            self.most.load(Ordering::Relaxed)
        )
    }
}

fn transfers<B: pathdb_store::backend::Backend>(
    store: &Store<B>,
    duration: Duration,
) -> Result<(), Failure> {
    let account = |i: usize| path(&format!("/bank-{}/account-{}", i % GROUPS, i / GROUPS));
    let accounts: Vec<KeyPath> = (0..ACCOUNTS).map(account).collect();
    for a in &accounts {
        store.put(
            a,
            Json::parse(r#"{"balance": 100}"#)?,
            PutOptions::default(),
        )?;
    }
    let tokens = (0..GROUPS)
        .map(|g| store.changes_token(&path(&format!("/bank-{g}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let stop = Arc::new(AtomicBool::new(false));
    let (runs, refused, snapshots) = (Runs::new(), AtomicUsize::new(0), AtomicUsize::new(0));
    let started = Instant::now();
    std::thread::scope(|s| -> Result<(), Failure> {
        let checker = s.spawn(|| -> Result<(), String> {
            while !stop.load(Ordering::Relaxed) {
                let items = store.get_many(&accounts).map_err(|e| e.to_string())?;
                let balances: Vec<i64> =
                    items.iter().map(|i| number(&i.value, "balance")).collect();
                let total: i64 = balances.iter().sum();
                if items.len() != ACCOUNTS || total != 100 * ACCOUNTS as i64 {
                    return Err(format!(
                        "a snapshot sums to {total} over {} accounts",
                        items.len()
                    ));
                }
                if let Some(b) = balances.iter().find(|&&b| b < 0) {
                    return Err(format!("a snapshot holds a negative balance {b}"));
                }
                snapshots.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        });
        race(|client| {
            let mut state = 0x9E37_79B9_7F4A_7C15 ^ (client as u64 + 1);
            while started.elapsed() < duration {
                let from = &accounts[next(&mut state) as usize % ACCOUNTS];
                let to = &accounts[next(&mut state) as usize % ACCOUNTS];
                let amount = (next(&mut state) % 100) as i64 + 1;
                if from == to {
                    continue;
                }
                let mut mine = 0;
                let moved = store
                    .transaction(|tx| {
                        mine += 1;
                        runs.runs.fetch_add(1, Ordering::Relaxed);
                        let (a, b) = (tx.get(from)?, tx.get(to)?);
                        let missing = || Error::InvalidRequest("an account is missing".into());
                        let have = number(&a.ok_or_else(missing)?.value, "balance");
                        let other = number(&b.ok_or_else(missing)?.value, "balance");
                        if have < amount {
                            return Ok(false);
                        }
                        tx.put(
                            from,
                            Json::parse(&format!(r#"{{"balance": {}}}"#, have - amount))?,
                        );
                        tx.put(
                            to,
                            Json::parse(&format!(r#"{{"balance": {}}}"#, other + amount))?,
                        );
                        Ok(true)
                    })
                    .expect("a transfer");
                runs.done(mine);
                if !moved {
                    refused.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        stop.store(true, Ordering::Relaxed);
        checker.join().expect("checker panicked")?;
        Ok(())
    })?;
    let mut puts = 0;
    for (g, token) in tokens.iter().enumerate() {
        let mut since = *token;
        loop {
            let page = store.changes(&path(&format!("/bank-{g}")), Some(&since), 1000)?;
            puts += page
                .changes
                .iter()
                .filter(|c| matches!(c.change, Change::Put(_)))
                .count();
            if page.next_token == since {
                break;
            }
            since = page.next_token;
        }
    }
    let committed = runs.commits.load(Ordering::Relaxed) - refused.load(Ordering::Relaxed);
    println!(
        "transfers: {} in {:.1} s, {committed} moved money ({:.0}/s), {} refused as overdrafts; \
         {} snapshots all summed to {}; change feed puts {puts} = 2 x {committed}",
        runs.summary(),
        started.elapsed().as_secs_f64(),
        committed as f64 / started.elapsed().as_secs_f64(),
        refused.load(Ordering::Relaxed),
        snapshots.load(Ordering::Relaxed),
        100 * ACCOUNTS
    );
    if puts != 2 * committed {
        return Err(format!("the feed holds {puts} puts for {committed} transfers").into());
    }
    Ok(())
}

fn write_skew<B: pathdb_store::backend::Backend>(
    store: &Store<B>,
    rounds: usize,
) -> Result<(), Failure> {
    let doctors = [path("/hospital-1/doctor-1"), path("/hospital-1/doctor-2")];
    let on = Json::parse(r#"{"on_call": true}"#)?;
    let off = Json::parse(r#"{"on_call": false}"#)?;
    let is_on = |value: &Json| value.to_value()["on_call"] == serde_json::Value::Bool(true);
    let on_call =
        |item: &Option<pathdb_store::Item>| item.as_ref().is_some_and(|i| is_on(&i.value));
    let runs = Runs::new();
    for round in 0..rounds {
        for d in &doctors {
            store.put(d, on.clone(), PutOptions::default())?;
        }
        race(|client| {
            let (me, other) = (&doctors[client % 2], &doctors[1 - client % 2]);
            let mut mine = 0;
            store
                .transaction(|tx| {
                    mine += 1;
                    runs.runs.fetch_add(1, Ordering::Relaxed);
                    if on_call(&tx.get(me)?) && on_call(&tx.get(other)?) {
                        tx.put(me, off.clone());
                    }
                    Ok(())
                })
                .expect("a doctor's transaction");
            runs.done(mine);
        });
        let still_on = store
            .get_many(&doctors)?
            .into_iter()
            .filter(|d| is_on(&d.value))
            .count();
        if still_on != 1 {
            return Err(format!("round {round}: {still_on} doctors on call").into());
        }
    }
    println!(
        "write skew: {rounds} rounds, exactly one doctor on call after each; {}",
        runs.summary()
    );
    Ok(())
}

fn phantoms<B: pathdb_store::backend::Backend>(
    store: &Store<B>,
    rounds: usize,
) -> Result<(), Failure> {
    let orders = ListRequest::new(path("/user-1/order"));
    let runs = Runs::new();
    let mut most = 0;
    for round in 0..rounds {
        match store.delete_subtree(&path("/user-1"), &mut |_| {}) {
            Ok(_) | Err(Error::NothingBelow { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        race(|client| {
            let mut mine = 0;
            store
                .transaction(|tx| {
                    mine += 1;
                    runs.runs.fetch_add(1, Ordering::Relaxed);
                    if tx.list(&orders)?.items.len() < 3 {
                        let order = path(&format!("/user-1/order-{}", round * CLIENTS + client));
                        tx.put(&order, Json::parse("{}")?);
                    }
                    Ok(())
                })
                .expect("an order's transaction");
            runs.done(mine);
        });
        let count = store.list(&orders)?.items.len();
        most = most.max(count);
        if count != 3 {
            return Err(format!("round {round}: {count} orders, wanted exactly 3").into());
        }
    }
    println!(
        "phantoms: {rounds} rounds, exactly 3 orders after each (most seen {most}); {}",
        runs.summary()
    );
    Ok(())
}
