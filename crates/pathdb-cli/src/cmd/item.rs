//! `put`, `get`, `rm` and `history`: one item at a time.

use super::Output;
use super::output::print_items;
use crate::db::Db;
use crate::exit::Failure;
use anyhow::{Context, Result};
use clap::Args;
use pathdb_keys::KeyPath;
use pathdb_store::{Condition, Expiry, Json, PutOptions};
use std::io::Write;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct PutArgs {
    /// Key path in text form, e.g. /user-7/post-1; with --id, the parent and the namespace of
    /// the new item, e.g. /user-7/post (or /user-7/post-), or /user for a new group.
    path: String,
    /// The value: any JSON document, or `-` to read it from stdin (for values too long for a
    /// command line).
    #[arg(value_name = "JSON")]
    value: String,
    /// Fail if the item already exists.
    #[arg(long, conflicts_with = "if_version")]
    must_not_exist: bool,
    /// Fail unless the item exists at this version (optimistic locking).
    #[arg(long)]
    if_version: Option<u64>,
    /// Keep this version in the item's history.
    #[arg(long)]
    history: bool,
    /// Expire the item this many seconds from now.
    #[arg(long)]
    ttl: Option<u64>,
    /// Create a new item with a generated id: uuid, rand53 (a random integer below 2^53) or
    /// sequence (the next integer for this parent and namespace, never reused).
    #[arg(long, value_name = "KIND", conflicts_with_all = ["must_not_exist", "if_version"])]
    id: Option<pathdb_store::IdKind>,
}

#[derive(Args, Debug)]
pub struct GetArgs {
    /// Key path in text form.
    path: KeyPath,
    /// A past version from the item's history (versions start at 1).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    version: Option<u64>,
}

#[derive(Args, Debug)]
pub struct RmArgs {
    /// Key path in text form.
    path: KeyPath,
    /// Fail unless the item exists at this version.
    #[arg(long)]
    if_version: Option<u64>,
    /// Delete the item, if any, and every item below it (each leaves its tombstone; history
    /// stays).
    #[arg(short, long, conflicts_with = "if_version")]
    recursive: bool,
}

#[derive(Args, Debug)]
pub struct HistoryArgs {
    /// Key path in text form.
    path: KeyPath,
    /// At most this many revisions.
    #[arg(long, default_value_t = 100)]
    limit: usize,
}

pub fn put(store: &dyn Db, args: PutArgs, out: Output) -> Result<()> {
    let condition = match (args.must_not_exist, args.if_version) {
        (true, _) => Some(Condition::MustNotExist),
        (false, Some(v)) => Some(Condition::IfVersion(v)),
        (false, None) => None,
    };
    let options = PutOptions {
        condition,
        history: args.history,
        expires: args.ttl.map(|s| Expiry::After(Duration::from_secs(s))),
    };
    let text = if args.value == "-" {
        std::io::read_to_string(std::io::stdin().lock()).context("reading the value from stdin")?
    } else {
        args.value
    };
    let value = Json::parse(&text)?;
    let item = match args.id {
        Some(id) => {
            let (parent, namespace) = pathdb_store::parse_create_target(&args.path)?;
            let parent = match parent {
                pathdb_store::Parent::Root => None,
                pathdb_store::Parent::Path(p) => Some(p),
                pathdb_store::Parent::Created(_) => {
                    anyhow::bail!("`$N` paths are for transactions")
                }
            };
            store.create(parent.as_ref(), &namespace, id, value, options)?
        }
        None => {
            let path: KeyPath = args.path.parse()?;
            store.put(&path, value, options)?
        }
    };
    print_items(&mut std::io::stdout().lock(), &[item], out.json)?;
    Ok(())
}

pub fn get(store: &dyn Db, args: GetArgs, out: Output) -> Result<()> {
    let item = store.get(&args.path, args.version)?;
    let Some(item) = item else {
        return Err(Failure::NotFound(match args.version {
            Some(v) => format!("{} has no version {v}", args.path),
            None => format!("{} not found", args.path),
        })
        .into());
    };
    print_items(&mut std::io::stdout().lock(), &[item], out.json)?;
    Ok(())
}

pub fn rm(store: &dyn Db, args: RmArgs, out: Output) -> Result<()> {
    if args.recursive {
        return super::tree::run(store, pathdb_store::SubtreeJob::delete(args.path), out);
    }
    let deleted = store.delete(&args.path, args.if_version.map(Condition::IfVersion))?;
    // Deleting what is not there is reported (exit status 1) rather than silently done, so a
    // script learns that its path was wrong; `|| [ $? -eq 1 ]` makes it idempotent.
    let Some(item) = deleted else {
        return Err(Failure::NotFound(format!("{} not found", args.path)).into());
    };
    let mut stdout = std::io::stdout().lock();
    if out.json {
        writeln!(
            stdout,
            "{}",
            serde_json::json!({"deleted": item.path, "version": item.version})
        )?;
    } else {
        writeln!(stdout, "deleted {} (version {})", item.path, item.version)?;
    }
    Ok(())
}

pub fn history(store: &dyn Db, args: HistoryArgs, out: Output) -> Result<()> {
    let items = store.history(&args.path, args.limit)?;
    print_items(&mut std::io::stdout().lock(), &items, out.json)?;
    Ok(())
}
