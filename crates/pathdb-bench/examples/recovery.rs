//! What quick-repair buys and costs the file backend: how long reopening a redb file takes after
//! a crash, with and without it, next to what a durable single-insert commit costs in each mode.
//!
//! ```text
//! cargo build --release -p pathdb-bench --example recovery
//! target/release/examples/recovery DIR ITEMS [cold]
//! ```
//!
//! For each mode (quick-repair on, off) it creates `DIR/<mode>.redb` with `ITEMS` items in
//! PathDB's table layout (about 160 bytes each), starts a child process (this binary again)
//! that commits single durable inserts in that mode, SIGKILLs it after 500 commits (mid-commit,
//! as a crash would), then times the reopen (`Database::create`, which repairs the file) and
//! prints it with the child's commits per second and the file size. The files are deleted.
//! With `cold`, the file's pages are first dropped from the OS page cache (GNU `dd iflag=nocache
//! count=0`), as after a power loss, so the repair reads the file from disk.

use redb::{Database, Durability, TableDefinition};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

const DATA: TableDefinition<(&[u8], &[u8]), &[u8]> = TableDefinition::new("pathdb_data");
/// Set in the child's environment to `<file>:<on|off>`.
const CHILD_ENV: &str = "PATHDB_RECOVERY_CHILD";
const COMMITS_BEFORE_KILL: u64 = 500;

fn key(i: u64) -> (Vec<u8>, Vec<u8>) {
    (
        format!("user-{}", i / 293).into_bytes(),
        format!("item-{i}").into_bytes(),
    )
}

fn value(i: u64) -> Vec<u8> {
    format!("{i:>120}").into_bytes()
}

/// The child: durable single-insert commits until killed; says `ready <commits/s>` after
/// [`COMMITS_BEFORE_KILL`].
fn child(spec: &str) -> Result<(), Box<dyn std::error::Error>> {
    let (file, mode) = spec.rsplit_once(':').ok_or("bad child spec")?;
    let quick_repair = mode == "on";
    let db = Database::create(file)?;
    let started = Instant::now();
    let mut stdout = std::io::stdout();
    for n in 0.. {
        let mut txn = db.begin_write()?;
        txn.set_durability(Durability::Immediate)?;
        txn.set_quick_repair(quick_repair);
        {
            let mut table = txn.open_table(DATA)?;
            let (p, s) = key(n % 1000);
            table.insert((p.as_slice(), s.as_slice()), value(n).as_slice())?;
        }
        txn.commit()?;
        if n + 1 == COMMITS_BEFORE_KILL {
            let rate = COMMITS_BEFORE_KILL as f64 / started.elapsed().as_secs_f64();
            writeln!(stdout, "ready {rate:.0}")?;
            stdout.flush()?;
        }
    }
    Ok(())
}

fn preload(file: &Path, items: u64, quick_repair: bool) -> Result<(), Box<dyn std::error::Error>> {
    let db = Database::create(file)?;
    let mut next = 0;
    while next < items {
        let mut txn = db.begin_write()?;
        txn.set_durability(Durability::None)?;
        {
            let mut table = txn.open_table(DATA)?;
            for i in next..(next + 50_000).min(items) {
                let (p, s) = key(i);
                table.insert((p.as_slice(), s.as_slice()), value(i).as_slice())?;
            }
        }
        txn.commit()?;
        next += 50_000;
    }
    let mut txn = db.begin_write()?;
    txn.set_durability(Durability::Immediate)?;
    txn.set_quick_repair(quick_repair);
    txn.commit()?;
    Ok(())
}

fn round(dir: &Path, items: u64, mode: &str, cold: bool) -> Result<(), Box<dyn std::error::Error>> {
    let file: PathBuf = dir.join(format!("recovery-{mode}.redb"));
    let _ = std::fs::remove_file(&file);
    preload(&file, items, mode == "on")?;
    let mut child = Command::new(std::env::current_exe()?)
        .env(CHILD_ENV, format!("{}:{mode}", file.display()))
        .stdout(Stdio::piped())
        .spawn()?;
    let mut line = String::new();
    let stdout = child.stdout.take().ok_or("no child stdout")?;
    BufReader::new(stdout).read_line(&mut line)?;
    child.kill()?; // SIGKILL: the child is inside some commit
    child.wait()?;
    let rate = line
        .trim()
        .strip_prefix("ready ")
        .ok_or("the child failed")?;
    let size = std::fs::metadata(&file)?.len();
    if cold {
        let dropped = Command::new("dd")
            .arg(format!("if={}", file.display()))
            .args(["iflag=nocache", "count=0", "status=none"])
            .status()?;
        if !dropped.success() {
            return Err("dd could not drop the file's cached pages".into());
        }
    }
    let started = Instant::now();
    let db = Database::create(&file)?;
    let reopen = started.elapsed();
    drop(db);
    println!(
        "quick-repair {mode:<3}  {items} items, {:.0} MB: durable single inserts {rate}/s; reopen after SIGKILL ({}) {:.1} ms",
        size as f64 / 1e6,
        if cold { "cold cache" } else { "warm cache" },
        reopen.as_secs_f64() * 1000.0
    );
    std::fs::remove_file(&file)?;
    Ok(())
}

fn main() -> ExitCode {
    if let Ok(spec) = std::env::var(CHILD_ENV) {
        return match child(&spec) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("child: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(dir), Some(items)) = (args.first(), args.get(1).and_then(|n| n.parse().ok())) else {
        eprintln!("usage: recovery DIR ITEMS");
        return ExitCode::from(2);
    };
    let cold = args.get(2).is_some_and(|a| a == "cold");
    for mode in ["on", "off"] {
        if let Err(e) = round(Path::new(dir), items, mode, cold) {
            eprintln!("recovery: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
