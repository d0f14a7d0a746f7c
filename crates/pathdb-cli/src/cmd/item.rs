//! `put`, `patch`, `incr`, `get`, `rm` and `history`: one item at a time.

use super::Output;
use super::output::print_items;
use crate::db::{Db, Projection};
use crate::exit::Failure;
use anyhow::{Context, Result};
use clap::Args;
use pathdb_keys::KeyPath;
use pathdb_store::{Condition, Expiry, Json, Patch, PutOptions};
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
    #[command(flatten)]
    write: WriteFlags,
    /// Create a new item with a generated id: uuid, rand53 (a random integer below 2^53) or
    /// sequence (the next integer for this parent and namespace, never reused).
    #[arg(long, value_name = "KIND", conflicts_with_all = ["must_not_exist", "if_version"])]
    id: Option<pathdb_store::IdKind>,
}

/// The condition and options of a write that puts a value (put, patch).
#[derive(Args, Debug)]
struct WriteFlags {
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
}

impl WriteFlags {
    fn options(&self) -> PutOptions {
        let condition = match (self.must_not_exist, self.if_version) {
            (true, _) => Some(Condition::MustNotExist),
            (false, Some(v)) => Some(Condition::IfVersion(v)),
            (false, None) => None,
        };
        PutOptions {
            condition,
            history: self.history,
            expires: self.ttl.map(|s| Expiry::After(Duration::from_secs(s))),
            schema_version: None,
        }
    }
}

#[derive(Args, Debug)]
pub struct PatchArgs {
    /// Key path in text form.
    path: KeyPath,
    /// A JSON Merge Patch (RFC 7396): members merge into the item's value, `null` removes one,
    /// e.g. '{"title": "new", "draft": null}'; `-` reads it from stdin.
    #[arg(value_name = "MERGE_PATCH", required_unless_present = "json_patch")]
    merge: Option<String>,
    /// A JSON Patch (RFC 6902) instead: an array of add, remove, replace, move, copy, test and
    /// increment operations, e.g. '[{"op": "increment", "path": "/views", "value": 1}]'; `-`
    /// reads it from stdin.
    #[arg(long, value_name = "OPERATIONS", conflicts_with = "merge")]
    json_patch: Option<String>,
    /// Apply the patch to {} when there is no item, instead of failing (exit status 1).
    #[arg(long)]
    create: bool,
    #[command(flatten)]
    write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct IncrArgs {
    /// Key path in text form. A missing item is created as {}.
    path: KeyPath,
    /// JSON Pointer to the number, e.g. /views or /stats/likes; a missing member starts at 0.
    pointer: String,
    /// What to add: an integer (negative to subtract) or a decimal.
    #[arg(default_value = "1", allow_negative_numbers = true)]
    by: serde_json::Number,
    #[command(flatten)]
    write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct GetArgs {
    /// Key path in text form.
    path: KeyPath,
    /// A past version from the item's history (versions start at 1).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    version: Option<u64>,
    /// Only these members of the value: comma-separated dotted paths (total,author.name);
    /// missing ones are left out.
    #[arg(long, value_name = "MEMBERS")]
    fields: Option<Projection>,
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

/// A JSON argument, or stdin for `-`.
fn argument_or_stdin(text: String, what: &str) -> Result<String> {
    if text == "-" {
        std::io::read_to_string(std::io::stdin().lock())
            .with_context(|| format!("reading the {what} from stdin"))
    } else {
        Ok(text)
    }
}

pub fn put(store: &dyn Db, args: PutArgs, out: Output) -> Result<()> {
    let options = args.write.options();
    let value = Json::parse(&argument_or_stdin(args.value, "value")?)?;
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

pub fn patch(store: &dyn Db, args: PatchArgs, out: Output) -> Result<()> {
    let (text, json_patch) = match (args.merge, args.json_patch) {
        (_, Some(operations)) => (argument_or_stdin(operations, "patch")?, true),
        (Some(merge), None) => (argument_or_stdin(merge, "patch")?, false),
        (None, None) => anyhow::bail!("a patch needs MERGE_PATCH or --json-patch"),
    };
    let document: serde_json::Value =
        serde_json::from_str(&text).context("the patch is not valid JSON")?;
    let patch = if json_patch {
        Patch::json_patch(&document).map_err(|e| anyhow::anyhow!("invalid JSON Patch: {e}"))?
    } else {
        Patch::Merge(document)
    };
    let item = store.patch(&args.path, patch, args.write.options(), args.create)?;
    print_items(&mut std::io::stdout().lock(), &[item], out.json)?;
    Ok(())
}

pub fn incr(store: &dyn Db, args: IncrArgs, out: Output) -> Result<()> {
    let document = serde_json::json!([{"op": "increment", "path": args.pointer, "value": args.by}]);
    let patch =
        Patch::json_patch(&document).map_err(|e| anyhow::anyhow!("invalid increment: {e}"))?;
    let item = store.patch(&args.path, patch, args.write.options(), true)?;
    print_items(&mut std::io::stdout().lock(), &[item], out.json)?;
    Ok(())
}

pub fn get(store: &dyn Db, args: GetArgs, out: Output) -> Result<()> {
    let item = store.get(&args.path, args.version, args.fields.as_ref())?;
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
