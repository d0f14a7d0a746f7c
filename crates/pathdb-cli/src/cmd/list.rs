//! `ls`: a subtree or the direct children of a path, one page at a time.

use super::Output;
use super::output::print_items;
use crate::db::Db;
use anyhow::Result;
use clap::Args;
use pathdb_keys::KeyPath;
use pathdb_store::{DEFAULT_LIST_LIMIT, ListRequest};
use std::io::Write;

#[derive(Args, Debug)]
pub struct LsArgs {
    /// The item at PREFIX (if any), then its subtree in key order.
    prefix: KeyPath,
    /// Only the direct children of PREFIX.
    #[arg(long)]
    children: bool,
    /// Descending key order.
    #[arg(long)]
    reverse: bool,
    /// Items per page (1..=1000).
    #[arg(long, default_value_t = DEFAULT_LIST_LIMIT)]
    limit: usize,
    /// Only keys after this path.
    #[arg(long)]
    gt: Option<KeyPath>,
    /// Only keys at or after this path.
    #[arg(long)]
    gte: Option<KeyPath>,
    /// Only keys before this path.
    #[arg(long)]
    lt: Option<KeyPath>,
    /// Only keys at or before this path.
    #[arg(long)]
    lte: Option<KeyPath>,
    /// Continue from a previous page (either direction).
    #[arg(long)]
    page_token: Option<String>,
}

pub fn ls(store: &dyn Db, args: LsArgs, out: Output) -> Result<()> {
    let request = ListRequest {
        prefix: args.prefix,
        children_only: args.children,
        gt: args.gt,
        gte: args.gte,
        lt: args.lt,
        lte: args.lte,
        reverse: args.reverse,
        limit: args.limit,
        page_token: args.page_token,
    };
    let page = store.list(&request)?;
    let mut stdout = std::io::stdout().lock();
    print_items(&mut stdout, &page.items, out.json)?;
    if let Some(token) = page.next_page_token {
        if out.json {
            writeln!(
                stdout,
                "{}",
                serde_json::json!({ "next_page_token": token })
            )?;
        } else {
            writeln!(stdout, "next page: --page-token {token}")?;
        }
    }
    Ok(())
}
