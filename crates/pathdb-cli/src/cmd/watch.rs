//! `pathdb watch`: follows the change feed of a prefix (or of a filter's result) and prints
//! changes as they happen.

use super::Output;
use super::filter;
use crate::db::{Db, FeedChange};
use anyhow::Result;
use clap::Args;
use pathdb_keys::KeyPath;
use pathdb_store::Change;
use std::io::Write;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct WatchArgs {
    /// The subtree to follow (at least a group), e.g. /user-7.
    prefix: KeyPath,
    /// Start after this token (a `token` printed earlier, a listing's changes_token); without
    /// it, start now.
    #[arg(long)]
    since: Option<String>,
    /// Stop once this many changes were printed, at the end of the page that reached it
    /// (default: run until interrupted).
    #[arg(long)]
    count: Option<u64>,
    /// Follow the result of this CEL expression (docs/filters.md) instead: an item entering
    /// it or changing in it prints as a put, an item leaving it (changed so that it no longer
    /// matches, deleted, expired or moved away) as `left PATH vN` (with --json, a delete with
    /// "left": true); changes to items it matches neither before nor after are skipped.
    #[arg(long, value_name = "EXPR")]
    filter: Option<String>,
}

/// How long each long poll waits on a server (and each wait on a local file).
const WAIT: Duration = Duration::from_secs(30);

pub fn watch(db: &dyn Db, args: WatchArgs, out: Output) -> Result<()> {
    let filter = filter::compile(args.filter.as_deref())?;
    let filter = filter.as_ref();
    let changes = |since: Option<&str>| {
        filter::checked(db.changes(&args.prefix, since, WAIT, filter), filter)
    };
    let mut token = match args.since {
        Some(t) => t,
        None => changes(None)?.next_token,
    };
    let mut printed = 0;
    loop {
        let page = changes(Some(&token))?;
        let mut stdout = std::io::stdout().lock();
        // A whole page, even past --count: each line's token is the page's end, so stopping
        // inside a page would make a resume skip its rest.
        for change in &page.changes {
            print_change(&mut stdout, change, &page.next_token, out.json)?;
            printed += 1;
        }
        stdout.flush()?;
        token = page.next_token;
        if args.count.is_some_and(|n| printed >= n) {
            return Ok(());
        }
    }
}

/// One line per change: `put PATH vN VALUE`, `delete PATH vN` or (a filtered feed's leave)
/// `left PATH vN`; with --json, the change as the HTTP API gives it plus `token`, from which
/// `--since` resumes after the page it came in.
fn print_change(out: &mut dyn Write, change: &FeedChange, token: &str, json: bool) -> Result<()> {
    let FeedChange { change, left } = change;
    if json {
        let line = match change {
            Change::Put(item) => serde_json::json!({
                "op": "put",
                "item": {
                    "path": item.path.to_string(),
                    "version": item.version,
                    "created_at": item.created_at.0,
                    "modified_at": item.modified_at.0,
                    "expires_at": item.expires_at.map(|t| t.0),
                    "value": item.value.to_value(),
                },
                "token": token,
            }),
            Change::Delete { path, version, .. } if *left => serde_json::json!({
                "op": "delete", "path": path.to_string(), "version": version, "left": true,
                "token": token,
            }),
            Change::Delete { path, version, .. } => serde_json::json!({
                "op": "delete", "path": path.to_string(), "version": version, "token": token,
            }),
        };
        writeln!(out, "{line}")?;
    } else {
        match change {
            Change::Put(item) => {
                writeln!(out, "put {} v{} {}", item.path, item.version, item.value)?
            }
            Change::Delete { path, version, .. } if *left => {
                writeln!(out, "left {path} v{version}")?
            }
            Change::Delete { path, version, .. } => writeln!(out, "delete {path} v{version}")?,
        }
    }
    Ok(())
}
