//! `ls`: a subtree or the direct children of a path, or (`ls /`) the groups, one page at a time
//! or (`--all`) every page, filtered (`--filter`) and projected (`--fields`); `count`: how many
//! entries of such a listing there are.

use super::Output;
use super::filter;
use super::output::print_entries;
use crate::db::{Db, Projection};
use anyhow::{Result, bail};
use clap::Args;
use pathdb_keys::KeyPath;
use pathdb_store::{DEFAULT_LIST_LIMIT, DEFAULT_MAX_SCAN, ListRequest, MAX_SCAN};
use std::io::Write;

#[derive(Args, Debug)]
pub struct LsArgs {
    /// The item at PREFIX (if any), then its subtree in key order; `/` lists the groups (the
    /// first elements of the stored paths) in key order. A trailing `/` is ignored
    /// (`/user-7/` is `/user-7`).
    prefix: Target,
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
    /// Follow every page to the end (--limit is then the page size); prints no page token.
    #[arg(long)]
    all: bool,
    /// With `ls /`: only the groups whose namespace starts with this (`--prefix user` lists
    /// /user-7, /users-2 and /user_old-1; case-sensitive; namespace characters only).
    #[arg(long = "prefix", value_name = "NAMESPACE_START")]
    group_prefix: Option<String>,
    /// Only the items this CEL expression matches (docs/filters.md), e.g.
    /// 'value.total > 100 && value.status == "open"'; it sees value, path, ids, version,
    /// created_at and modified_at. A page may then hold fewer items than --limit, even none,
    /// and still have a next one.
    #[arg(long, value_name = "EXPR")]
    filter: Option<String>,
    /// Only these members of each value: comma-separated dotted paths (total,author.name).
    #[arg(long, value_name = "MEMBERS")]
    fields: Option<Projection>,
    /// Items a page reads at most, 1..=100000: a filtered page stops after --limit matches or
    /// this many items read, whichever comes first.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_SCAN, value_parser = max_scan())]
    max_scan: usize,
}

#[derive(Args, Debug)]
pub struct CountArgs {
    /// The subtree to count: the item at PREFIX (if any) and every item below it (a trailing
    /// `/` is ignored).
    prefix: Target,
    /// Count only the direct children of PREFIX (a child with items below it and none of its
    /// own counts too, unless filtered out).
    #[arg(long)]
    children: bool,
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
    /// Count only the items this CEL expression matches (docs/filters.md).
    #[arg(long, value_name = "EXPR")]
    filter: Option<String>,
    /// Items read per request, 1..=100000: a longer range is counted in several requests,
    /// added up.
    #[arg(long, value_name = "N", default_value_t = MAX_SCAN, value_parser = max_scan())]
    max_scan: usize,
}

/// `--max-scan`: 1..=[`MAX_SCAN`], checked before anything is read.
fn max_scan() -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::new().range(1..=MAX_SCAN as u64)
}

/// What `ls` lists.
#[derive(Clone, Debug)]
pub enum Target {
    /// `/`: the groups.
    Root,
    /// A subtree.
    Path(KeyPath),
}

impl std::str::FromStr for Target {
    type Err = pathdb_keys::ParseError;

    /// `/` is the root; any other text is a key path, where `ls` also takes a trailing `/`
    /// (`/user-7/`, as a shell completes folders) as the same path. Only here: the key path
    /// grammar itself has no trailing slash (an empty namespace).
    fn from_str(text: &str) -> Result<Target, Self::Err> {
        if text == "/" {
            return Ok(Target::Root);
        }
        match (text.parse(), without_trailing_slash(text)) {
            (Ok(path), _) => Ok(Target::Path(path)),
            (Err(_), Some(shorter)) => shorter.parse().map(Target::Path),
            (Err(e), None) => Err(e),
        }
    }
}

/// `text` without its last character when that is a `/` that is not escaped (`%/` is the
/// character `/` inside an id; `%%/` an escaped `%` and then a separator).
fn without_trailing_slash(text: &str) -> Option<&str> {
    let rest = text.strip_suffix('/')?;
    let percents = rest.chars().rev().take_while(|c| *c == '%').count();
    (percents % 2 == 0 && !rest.is_empty()).then_some(rest)
}

pub fn ls(store: &dyn Db, args: LsArgs, out: Output) -> Result<()> {
    let prefix = match args.prefix {
        Target::Path(prefix) => prefix,
        Target::Root => return ls_groups(store, &args, out),
    };
    if args.group_prefix.is_some() {
        // A subtree is already narrowed by its path: say so rather than ignore the flag.
        bail!("--prefix selects groups: it goes with `ls /` (to narrow a subtree, use --gte/--lt)");
    }
    let filter = filter::compile(args.filter.as_deref())?;
    let filtered = filter.is_some();
    let mut request = ListRequest {
        prefix: prefix.clone(),
        children_only: args.children,
        gt: args.gt,
        gte: args.gte,
        lt: args.lt,
        lte: args.lte,
        reverse: args.reverse,
        limit: args.limit,
        page_token: args.page_token,
        filter,
        max_scan: args.max_scan,
        ..ListRequest::new(prefix.clone())
    };
    let mut stdout = std::io::stdout().lock();
    // A table needs every row for its column widths; JSON lines stream page by page.
    let mut table_rows = Vec::new();
    // Items read, over every page: a filtered table says how many it looked at.
    let mut scanned = 0;
    loop {
        let listed = store.list(&request, args.fields.as_ref());
        let page = filter::checked(listed, request.filter.as_ref())?;
        scanned += page.scanned;
        if out.json {
            print_entries(&mut stdout, &page.items, true)?;
        } else {
            table_rows.extend(page.items);
        }
        // A filtered page may be empty and still have a next one: --all follows it.
        match page.next_page_token {
            Some(token) if args.all => request.page_token = Some(token),
            Some(token) if out.json => {
                // stdout holds only items, one per line, so that `| jq` or a line reader sees
                // one shape; the token goes to stderr as one JSON line of its own.
                stdout.flush()?;
                eprintln!("{}", serde_json::json!({ "next_page_token": token }));
                return Ok(());
            }
            Some(token) => {
                print_entries(&mut stdout, &table_rows, false)?;
                if filtered {
                    writeln!(stdout, "{}", scanned_line(table_rows.len(), scanned))?;
                }
                writeln!(stdout, "next page: --page-token {token}")?;
                return Ok(());
            }
            None if out.json => return Ok(()),
            None => {
                print_entries(&mut stdout, &table_rows, false)?;
                if filtered {
                    writeln!(stdout, "{}", scanned_line(table_rows.len(), scanned))?;
                }
                return Ok(());
            }
        }
    }
}

/// Under a filtered table: `3 matched, scanned 40`.
fn scanned_line(matched: usize, scanned: usize) -> String {
    format!("{matched} matched, scanned {scanned}")
}

/// `count`: the entries of a listing's range that match its filter (every entry without one),
/// counted a page of up to --max-scan items at a time and added up.
pub fn count(store: &dyn Db, args: CountArgs, out: Output) -> Result<()> {
    let Target::Path(prefix) = args.prefix else {
        bail!("count counts a subtree: give a path such as /user-7 (`ls /` lists the groups)");
    };
    let mut request = ListRequest {
        children_only: args.children,
        gt: args.gt,
        gte: args.gte,
        lt: args.lt,
        lte: args.lte,
        filter: filter::compile(args.filter.as_deref())?,
        max_scan: args.max_scan,
        ..ListRequest::new(prefix)
    };
    let (mut count, mut scanned) = (0, 0);
    loop {
        let page = filter::checked(store.count(&request), request.filter.as_ref())?;
        count += page.count;
        scanned += page.scanned;
        match page.next_page_token {
            Some(token) => request.page_token = Some(token),
            None => break,
        }
    }
    let mut stdout = std::io::stdout().lock();
    if out.json {
        writeln!(
            stdout,
            "{}",
            serde_json::json!({ "count": count, "scanned": scanned })
        )?;
    } else {
        writeln!(stdout, "{count}")?;
    }
    Ok(())
}

/// `ls /`: one group per line (`--json`: `{"group": "/user-7"}` per line), in key order.
fn ls_groups(store: &dyn Db, args: &LsArgs, out: Output) -> Result<()> {
    let bounded =
        args.gt.is_some() || args.gte.is_some() || args.lt.is_some() || args.lte.is_some();
    let shaped =
        args.filter.is_some() || args.fields.is_some() || args.max_scan != DEFAULT_MAX_SCAN;
    if args.children || args.reverse || bounded || shaped {
        // Groups are always the root's children, listed forward: say so rather than ignore.
        bail!("ls / takes only --prefix, --limit, --page-token and --all");
    }
    let prefix = args.group_prefix.as_deref().unwrap_or("");
    let mut stdout = std::io::stdout().lock();
    let mut token = args.page_token.clone();
    loop {
        let page = store.groups(prefix, args.limit, token.as_deref())?;
        for group in &page.groups {
            if out.json {
                writeln!(
                    stdout,
                    "{}",
                    serde_json::json!({ "group": group.to_string() })
                )?;
            } else {
                writeln!(stdout, "{group}")?;
            }
        }
        match page.next_page_token {
            Some(next) if args.all => token = Some(next),
            Some(next) if out.json => {
                stdout.flush()?;
                eprintln!("{}", serde_json::json!({ "next_page_token": next }));
                return Ok(());
            }
            Some(next) => {
                writeln!(stdout, "next page: --page-token {next}")?;
                return Ok(());
            }
            None => return Ok(()),
        }
    }
}
