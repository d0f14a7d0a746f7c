//! Store benchmark: PathDB's `Store<FileBackend>` against the raw engine under it (redb 4.5 with
//! the same table layout: our overhead) and against SQLite (bundled, a `WITHOUT ROWID` table with
//! a BLOB key: what a user would otherwise pick), all three in one process run on the same
//! dataset, one row at a time with the engines back to back.
//!
//! Rows: durable put (1 thread), durable put with N concurrent writers (group commit), get of a
//! random existing path, list page of 100 forward and reverse, children listing (page of 100),
//! and a durable 10-item transaction. Each row prints ops/s, items/s, p50 and p99 latency, and on
//! PathDB's lines the ratio to raw redb and to SQLite. Preloading is not measured. Each row's
//! operations are split into rounds in which the engines take turns, so a change in the machine's
//! load (other processes, the shared disk) hits every engine alike.
//!
//! Two variants run only where they differ: raw redb without quick-repair (write rows: what the
//! store's quick-repair costs) and SQLite through one connection shared behind a mutex
//! (concurrent puts: SQLite's own busy handler sleeps between lock attempts).
//!
//! ```text
//! cargo run --release -p pathdb-bench --bin store-bench -- --items 1000000
//! cargo run --release -p pathdb-bench --bin store-bench -- --large      # 10M items
//! # Latency against item count (PNG), growing one dataset through the sizes:
//! cargo run --release -p pathdb-bench --bin store-bench -- --large \
//!     --scale 100000,1000000,10000000 --plot docs/store-scale.png
//! ```
//!
//! See `docs/benchmarks.md` ("Store") for results and `--help` for the op counts.

mod dataset;
mod engine;
mod pathdb;
mod raw_redb;
mod scale;
mod sqlite;
mod stats;

use anyhow::Context as _;
use clap::Parser;
use dataset::{Dataset, Rng};
use engine::{Engine, PAGE, Role};
use stats::Measurement;
use std::path::PathBuf;
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// Items above which `--large` is required.
const DEFAULT_ITEMS: u64 = 1_000_000;
const LARGE_ITEMS: u64 = 10_000_000;
/// Items per preload transaction.
const PRELOAD_BATCH: usize = 50_000;
/// Items per transaction row operation.
const TX_ITEMS: usize = 10;

/// PathDB store vs raw redb vs SQLite.
#[derive(Parser, Debug)]
#[command(name = "store-bench", version, about)]
struct Args {
    /// Items in the dataset (rounded up to whole users of 293 items); more than 1M needs --large.
    #[arg(long, default_value_t = DEFAULT_ITEMS)]
    items: u64,
    /// Run at 10M items (preloading takes several minutes and ~10 GB of disk).
    #[arg(long)]
    large: bool,
    /// Directory for the database files (a fresh temporary directory inside it is used).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Keep the database files instead of deleting them at exit.
    #[arg(long)]
    keep: bool,
    /// Engines to run, comma-separated: pathdb, redb, sqlite, and two variants: redb-noqr (raw
    /// redb without quick-repair, write rows only, to show what quick-repair costs) and
    /// sqlite-shared (after sqlite: its file through one connection behind a mutex, concurrent
    /// put row only).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "pathdb,redb,redb-noqr,sqlite,sqlite-shared"
    )]
    engines: Vec<String>,
    /// Rows to run, comma-separated: put, put-concurrent, get, list, list-rev, children, tx.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "put,put-concurrent,get,list,list-rev,children,tx"
    )]
    rows: Vec<String>,
    /// Timed single-threaded durable puts per engine.
    #[arg(long, default_value_t = 1000)]
    put_ops: usize,
    /// Concurrent writer threads.
    #[arg(long, default_value_t = 8)]
    writers: usize,
    /// Timed durable puts per writer thread.
    #[arg(long, default_value_t = 200)]
    concurrent_put_ops: usize,
    /// Timed gets per engine.
    #[arg(long, default_value_t = 200_000)]
    get_ops: usize,
    /// Timed list pages per engine and direction.
    #[arg(long, default_value_t = 20_000)]
    list_ops: usize,
    /// Timed children pages per engine.
    #[arg(long, default_value_t = 20_000)]
    children_ops: usize,
    /// Timed 10-item transactions per engine.
    #[arg(long, default_value_t = 500)]
    tx_ops: usize,
    /// Each row's operations are split into this many rounds, the engines taking turns.
    #[arg(long, default_value_t = 10)]
    rounds: usize,
    /// Seed of the dataset and of the random choices.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Instead of the table: grow one dataset through these item counts (comma-separated; over
    /// 1M needs --large), measuring get, list and durable put on pathdb and redb at each, then
    /// at the largest with a --small-cache-mb page cache; writes the plot to --plot.
    #[arg(long, value_delimiter = ',')]
    scale: Option<Vec<u64>>,
    /// redb page cache (MiB) for the scale run's last measurement, smaller than the data; 0
    /// skips it.
    #[arg(long, default_value_t = 64)]
    small_cache_mb: u64,
    /// Where the scale run writes its PNG.
    #[arg(long, default_value = "store-scale.png")]
    plot: PathBuf,
    /// A TrueType font for the plot's text.
    #[arg(
        long,
        default_value = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
    )]
    plot_font: PathBuf,
}

/// The operation of a row, on one engine session.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Row {
    Put,
    PutConcurrent,
    Get,
    List,
    ListReverse,
    Children,
    Tx,
}

impl Row {
    const ALL: [Row; 7] = [
        Row::Put,
        Row::PutConcurrent,
        Row::Get,
        Row::List,
        Row::ListReverse,
        Row::Children,
        Row::Tx,
    ];

    fn flag(self) -> &'static str {
        match self {
            Row::Put => "put",
            Row::PutConcurrent => "put-concurrent",
            Row::Get => "get",
            Row::List => "list",
            Row::ListReverse => "list-rev",
            Row::Children => "children",
            Row::Tx => "tx",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Row::Put => "durable put, 1 thread",
            Row::PutConcurrent => "durable put, concurrent writers",
            Row::Get => "get (random existing path)",
            Row::List => "list page of 100, forward",
            Row::ListReverse => "list page of 100, reverse",
            Row::Children => "children page of 100",
            Row::Tx => "10-item transaction (durable)",
        }
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let items = if args.large { LARGE_ITEMS } else { args.items };
    anyhow::ensure!(
        items <= DEFAULT_ITEMS || args.large,
        "more than {DEFAULT_ITEMS} items needs --large"
    );
    for row in &args.rows {
        anyhow::ensure!(
            Row::ALL.iter().any(|r| r.flag() == row),
            "unknown row {row:?}"
        );
    }
    let rows: Vec<Row> = Row::ALL
        .into_iter()
        .filter(|r| args.rows.iter().any(|f| f == r.flag()))
        .collect();

    let base = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&base)?;
    let dir = tempfile::Builder::new()
        .prefix("store-bench-")
        .tempdir_in(&base)?;
    let dir_path = if args.keep {
        dir.keep()
    } else {
        dir.path().to_owned()
    };

    if let Some(sizes) = &args.scale {
        let result = scale::run(&args, sizes, &dir_path);
        if !args.keep {
            std::fs::remove_dir_all(&dir_path).ok();
        }
        return result;
    }

    let data = Dataset::new(items, args.seed);
    println!(
        "dataset: {} items ({} users x {} items: 1 profile, 100 posts, 192 comments); files in {}",
        data.n_items(),
        data.n_users(),
        data.items_per_user(),
        dir_path.display()
    );

    let mut engines: Vec<Box<dyn Engine>> = Vec::new();
    for name in &args.engines {
        let started = Instant::now();
        let engine: Box<dyn Engine> = match name.as_str() {
            "pathdb" => Box::new(pathdb::PathDb::preload(
                &dir_path.join("pathdb.redb"),
                &data,
                PRELOAD_BATCH,
            )?),
            "redb" => Box::new(raw_redb::RawRedb::preload(
                &dir_path.join("raw.redb"),
                &data,
                PRELOAD_BATCH,
                true,
            )?),
            "redb-noqr" => Box::new(raw_redb::RawRedb::preload(
                &dir_path.join("raw-noqr.redb"),
                &data,
                PRELOAD_BATCH,
                false,
            )?),
            "sqlite" => Box::new(sqlite::Sqlite::preload(
                &dir_path.join("sqlite.db"),
                &data,
                PRELOAD_BATCH,
            )?),
            // The same file as `sqlite` (list it after), for the concurrent row only.
            "sqlite-shared" => Box::new(sqlite::SharedSqlite::open(&dir_path.join("sqlite.db"))?),
            other => {
                anyhow::bail!(
                    "unknown engine {other:?} (pathdb, redb, redb-noqr, sqlite, sqlite-shared)"
                )
            }
        };
        println!(
            "preloaded {} in {:.1} s",
            engine.name(),
            started.elapsed().as_secs_f64()
        );
        engines.push(engine);
    }
    for entry in std::fs::read_dir(&dir_path)? {
        let entry = entry?;
        println!(
            "  {}: {:.0} MB",
            entry.file_name().to_string_lossy(),
            entry.metadata()?.len() as f64 / 1e6
        );
    }
    for engine in engines.iter().filter(|e| e.role() == Role::All) {
        check(engine.as_ref(), &data).with_context(|| format!("checking {}", engine.name()))?;
    }

    // Rounds interleave the engines, so load from other processes (and the disk's mood) drifts
    // over all of them alike rather than favouring whichever ran at a quiet moment.
    let rounds = args.rounds.max(1);
    let mut results = Vec::new();
    for &row in &rows {
        let mut samples: Vec<Sample> = engines.iter().map(|_| Sample::default()).collect();
        for round in 0..rounds {
            for (engine, sample) in engines.iter().zip(&mut samples) {
                let takes_part = match engine.role() {
                    Role::All => true,
                    Role::Writes => matches!(row, Row::Put | Row::PutConcurrent | Row::Tx),
                    Role::ConcurrentWrites => row == Row::PutConcurrent,
                };
                if !takes_part {
                    continue;
                }
                // Every engine sees the same random choices in a round.
                let seed = args.seed ^ (row as u64 + 1).wrapping_mul(0x9e37_79b9) ^ round as u64;
                let part = run_row(engine.as_ref(), row, &args, &data, seed, round == 0, rounds)
                    .with_context(|| format!("{} on {}", row.flag(), engine.name()))?;
                sample.merge(part);
            }
        }
        for (engine, sample) in engines.iter().zip(samples) {
            if sample.latencies.is_empty() {
                continue;
            }
            let label = match row {
                Row::PutConcurrent => format!("durable put, {} writers", args.writers),
                _ => row.label().to_owned(),
            };
            let m = Measurement::new(
                label,
                engine.name(),
                sample.latencies,
                sample.items,
                sample.wall,
            );
            println!(
                "{:<32} {:<28} {:>10} ops/s  p50 {:>10}  p99 {:>10}",
                m.row,
                m.engine,
                stats::fmt_rate(m.ops_per_sec()),
                stats::fmt_latency(m.p50),
                stats::fmt_latency(m.p99)
            );
            results.push(m);
        }
    }

    println!();
    println!(
        "{}",
        stats::table(&results, "PathDB", "redb", "SQLite").trim_end()
    );
    drop(engines);
    if !args.keep {
        std::fs::remove_dir_all(&dir_path).ok();
    }
    Ok(())
}

/// Every engine answers the same logical questions the same way before anything is timed.
fn check(engine: &dyn Engine, data: &Dataset) -> anyhow::Result<()> {
    let mut session = engine.session()?;
    let mut rng = Rng::new(1);
    for _ in 0..100 {
        let (user, slot) = data.random_item(&mut rng);
        let len = session.get(&data.path(user, slot))?;
        // Raw peers store the 33-byte record header before the JSON.
        let expected = data.value(user, slot, 0).len();
        anyhow::ensure!(
            len == expected || len == expected + 33,
            "get returned {len} bytes, expected {expected}"
        );
        let user_path = data.user_path(user);
        anyhow::ensure!(session.list(&user_path, false)? == PAGE, "list forward");
        anyhow::ensure!(session.list(&user_path, true)? == PAGE, "list reverse");
        anyhow::ensure!(session.children(&user_path)? == PAGE, "children");
    }
    Ok(())
}

/// Latencies, items and wall time of some operations of one row on one engine.
#[derive(Default)]
struct Sample {
    latencies: Vec<u64>,
    items: usize,
    wall: Duration,
}

impl Sample {
    fn merge(&mut self, other: Sample) {
        self.latencies.extend(other.latencies);
        self.items += other.items;
        self.wall += other.wall;
    }
}

/// Times one round (1/`rounds` of the row's operations) of one row on one engine; the first
/// round runs untimed warm-up operations first.
fn run_row(
    engine: &dyn Engine,
    row: Row,
    args: &Args,
    data: &Dataset,
    seed: u64,
    first_round: bool,
    rounds: usize,
) -> anyhow::Result<Sample> {
    if row == Row::PutConcurrent {
        return run_concurrent_puts(engine, args, data, seed, rounds);
    }
    let (total, warmup) = match row {
        Row::Put => (args.put_ops, 5),
        Row::Get => (args.get_ops, args.get_ops / 10),
        Row::List | Row::ListReverse => (args.list_ops, args.list_ops / 10),
        Row::Children => (args.children_ops, args.children_ops / 10),
        Row::Tx => (args.tx_ops, 5),
        Row::PutConcurrent => unreachable!(),
    };
    let ops = total.div_ceil(rounds);
    let warmup = if first_round { warmup } else { 0 };
    let mut session = engine.session()?;
    let mut rng = Rng::new(seed);
    let mut sample = Sample {
        latencies: Vec::with_capacity(ops),
        ..Sample::default()
    };
    for i in 0..warmup + ops {
        // Inputs are built outside the timed section: every engine gets the same KeyPaths.
        let elapsed;
        let n;
        match row {
            Row::Put => {
                let (path, value) = data.random_put(&mut rng);
                let t = Instant::now();
                session.put(&path, &value)?;
                elapsed = t.elapsed();
                n = 1;
            }
            Row::Get => {
                let (user, slot) = data.random_item(&mut rng);
                let path = data.path(user, slot);
                let t = Instant::now();
                let len = session.get(&path)?;
                elapsed = t.elapsed();
                anyhow::ensure!(len > 0, "{path} not found");
                n = 1;
            }
            Row::List | Row::ListReverse | Row::Children => {
                let prefix = data.user_path(rng.below(data.n_users()));
                let t = Instant::now();
                n = match row {
                    Row::List => session.list(&prefix, false)?,
                    Row::ListReverse => session.list(&prefix, true)?,
                    _ => session.children(&prefix)?,
                };
                elapsed = t.elapsed();
            }
            Row::Tx => {
                let puts = data.random_tx(&mut rng, TX_ITEMS);
                let t = Instant::now();
                session.transact(&puts)?;
                elapsed = t.elapsed();
                n = TX_ITEMS;
            }
            Row::PutConcurrent => unreachable!(),
        }
        if i >= warmup {
            sample.latencies.push(elapsed.as_nanos() as u64);
            sample.items += n;
            sample.wall += elapsed;
        }
    }
    Ok(sample)
}

/// `args.writers` threads, each with its own session, each doing its share of
/// `args.concurrent_put_ops` durable puts of random existing paths; the wall time is from the
/// common start to the last writer's finish.
fn run_concurrent_puts(
    engine: &dyn Engine,
    args: &Args,
    data: &Dataset,
    seed: u64,
    rounds: usize,
) -> anyhow::Result<Sample> {
    let writers = args.writers.max(1);
    let per_writer = args.concurrent_put_ops.div_ceil(rounds);
    let barrier = Barrier::new(writers + 1);
    std::thread::scope(|scope| -> anyhow::Result<Sample> {
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                let barrier = &barrier;
                scope.spawn(move || -> anyhow::Result<Vec<u64>> {
                    let mut session = engine.session();
                    let mut rng = Rng::new(seed.wrapping_add(w as u64 * 7919));
                    let puts: Vec<_> = (0..per_writer).map(|_| data.random_put(&mut rng)).collect();
                    // Wait even if the session failed, or the others would wait forever.
                    barrier.wait();
                    let session = session.as_mut().map_err(|e| anyhow::anyhow!("{e:#}"))?;
                    let mut latencies = Vec::with_capacity(puts.len());
                    for (path, value) in &puts {
                        let t = Instant::now();
                        session.put(path, value)?;
                        latencies.push(t.elapsed().as_nanos() as u64);
                    }
                    Ok(latencies)
                })
            })
            .collect();
        barrier.wait();
        let started = Instant::now();
        let mut latencies = Vec::new();
        for handle in handles {
            latencies.extend(
                handle
                    .join()
                    .map_err(|_| anyhow::anyhow!("writer panicked"))??,
            );
        }
        let wall = started.elapsed();
        Ok(Sample {
            items: latencies.len(),
            latencies,
            wall,
        })
    })
}
