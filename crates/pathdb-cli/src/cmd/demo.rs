//! `pathdb demo`: the four seed scenarios, each query's answer next to what a hand-built string
//! sort key (the seeds' `USER#..#POST#..` designs) returns for the same data.

use crate::db::Db;
use anyhow::{Context, Result};
use pathdb_keys::KeyPath;
use pathdb_store::{Json, ListRequest, PutOptions};
use std::io::Write;
use std::path::Path;

/// Where the demo writes: a server (`--server`), the file `--db` names, or a temporary file
/// removed afterwards.
pub enum Target<'a> {
    /// `--server URL`, with its token.
    Server(&'a str, Option<String>),
    /// `--db FILE`, or a temporary file without it.
    File(Option<&'a Path>),
}

/// Runs the demo on `target`.
pub fn run(target: Target<'_>) -> Result<()> {
    let temp = tempfile::tempdir().context("creating a temporary directory")?;
    let (store, place): (Box<dyn Db>, String) = match target {
        Target::Server(url, token) => (
            Box::new(crate::client::Client::new(url, token)),
            format!("server {url}"),
        ),
        Target::File(db) => {
            let db = db.map_or_else(|| temp.path().join("demo.pathdb"), Path::to_path_buf);
            let kept = if db.starts_with(temp.path()) {
                " (temporary, removed at exit)"
            } else {
                ""
            };
            (
                Box::new(crate::db::Local::new(
                    super::open(&db)?,
                    pathdb_store::SchemaVersions::newest(),
                )),
                format!("database {}{kept}", db.display()),
            )
        }
    };
    let mut out = std::io::stdout().lock();
    writeln!(out, "PathDB demo: {place}\n")?;
    timeline(&*store, &mut out)?;
    file_tree(&*store, &mut out)?;
    leaderboard(&*store, &mut out)?;
    audits(&*store, &mut out)?;
    Ok(())
}

fn path(text: &str) -> Result<KeyPath> {
    text.parse().with_context(|| format!("demo path {text}"))
}

fn put(store: &dyn Db, text: &str, value: serde_json::Value, history: bool) -> Result<()> {
    let options = PutOptions {
        history,
        ..PutOptions::default()
    };
    store.put(&path(text)?, Json::from_value(&value), options)?;
    Ok(())
}

fn list(store: &dyn Db, request: ListRequest) -> Result<Vec<String>> {
    Ok(store
        .list(&request, None)?
        .items
        .iter()
        .map(|i| i.path().to_string())
        .collect())
}

/// What each answer row of PathDB is under the string design: its sort key there.
type Keys = std::collections::HashMap<String, String>;

/// Prints two answers side by side, one item per row: PathDB's answer in its order, each next
/// to the same item's string key and that key's rank in the string design's answer; then what
/// only the string design returned, at its ranks. So a row reads across, and the ranks show
/// how the two orders differ.
fn compare(
    out: &mut impl Write,
    query: &str,
    pathdb: &[String],
    label: &str,
    strings: &[String],
    keys: &Keys,
) -> Result<()> {
    let ranked = |rank: usize, text: &str| format!("{:>2}. {text}", rank + 1);
    let mut rows: Vec<(String, String)> = Vec::new();
    let mut shown = vec![false; strings.len()];
    for (i, item) in pathdb.iter().enumerate() {
        let rank = keys
            .get(item)
            .and_then(|key| strings.iter().position(|s| s == key));
        let right = match rank {
            Some(j) => {
                shown[j] = true;
                ranked(j, &strings[j])
            }
            None => "  -  (not returned)".to_owned(),
        };
        rows.push((ranked(i, item), right));
    }
    for (j, key) in strings.iter().enumerate() {
        if !shown[j] {
            rows.push((String::new(), ranked(j, key)));
        }
    }
    writeln!(out, "  query: {query}")?;
    // Paths and keys are ASCII here, but count characters as a terminal does.
    let width = rows
        .iter()
        .map(|(left, _)| left.chars().count())
        .max()
        .unwrap_or(0)
        .max(14);
    writeln!(out, "    {:<width$}  | {label}", "PathDB")?;
    for (left, right) in rows {
        writeln!(out, "    {left:<width$}  | {right}")?;
    }
    writeln!(out)?;
    Ok(())
}

/// String sort keys as DynamoDB orders them: by UTF-8 bytes.
fn byte_sorted(mut keys: Vec<String>) -> Vec<String> {
    keys.sort();
    keys
}

fn timeline(store: &dyn Db, out: &mut impl Write) -> Result<()> {
    writeln!(
        out,
        "1. Social timeline (seed 002): users, posts, comments, reactions in one group"
    )?;
    let user = "/user-4c9d36e5-6b19-4e6a-828c-226ed667458a";
    let mut strings = Vec::new();
    let mut keys = Keys::new();
    for post in [1, 2, 9, 10, 100] {
        put(
            store,
            &format!("{user}/post-{post}"),
            serde_json::json!({"title": format!("post {post}")}),
            false,
        )?;
        strings.push(format!("POST#{post}"));
        keys.insert(format!("{user}/post-{post}"), format!("POST#{post}"));
    }
    for (comment, react) in [(1678901234, 42), (1678905678, 7)] {
        put(
            store,
            &format!("{user}/post-10/comment-{comment}"),
            serde_json::json!({"text": "nice"}),
            false,
        )?;
        put(
            store,
            &format!("{user}/post-10/comment-{comment}/react-{react}"),
            serde_json::json!({"emoji": "+1"}),
            false,
        )?;
        strings.push(format!("POST#10#COMMENT#{comment}"));
        strings.push(format!("POST#10#COMMENT#{comment}#REACT#{react}"));
        keys.insert(
            format!("{user}/post-10/comment-{comment}"),
            format!("POST#10#COMMENT#{comment}"),
        );
        keys.insert(
            format!("{user}/post-10/comment-{comment}/react-{react}"),
            format!("POST#10#COMMENT#{comment}#REACT#{react}"),
        );
    }
    let all = list(store, ListRequest::new(path(user)?))?;
    compare(
        out,
        &format!("ls {user}  (the whole timeline, one range read)"),
        &all,
        "string SK, begins_with(\"\")",
        &byte_sorted(strings.clone()),
        &keys,
    )?;
    let post1 = list(store, ListRequest::new(path(&format!("{user}/post-1"))?))?;
    let naive: Vec<String> = byte_sorted(strings)
        .into_iter()
        .filter(|s| s.starts_with("POST#1"))
        .collect();
    compare(
        out,
        &format!("ls {user}/post-1  (one post and its subtree)"),
        &post1,
        "begins_with(SK, \"POST#1\")",
        &naive,
        &keys,
    )?;
    Ok(())
}

fn file_tree(store: &dyn Db, out: &mut impl Write) -> Result<()> {
    writeln!(
        out,
        "2. File tree (seed 003): subtree and direct-children listing"
    )?;
    let files = [
        ("/drive-a91/dir-root", "root/"),
        ("/drive-a91/dir-root/dir-photos", "root/photos/"),
        (
            "/drive-a91/dir-root/dir-photos/dir-2026",
            "root/photos/2026/",
        ),
        (
            "/drive-a91/dir-root/dir-photos/dir-2026/file-beach.jpg",
            "root/photos/2026/beach.jpg",
        ),
        (
            "/drive-a91/dir-root/dir-photos/dir-2026/file-sunset.jpg",
            "root/photos/2026/sunset.jpg",
        ),
        (
            "/drive-a91/dir-root/dir-photos/file-a%/b.png",
            "root/photos/a/b.png",
        ),
        ("/drive-a91/dir-root/dir-photos2", "root/photos2/"),
        ("/drive-a91/dir-root/dir-docs", "root/docs/"),
        (
            "/drive-a91/dir-root/dir-docs/file-taxes.pdf",
            "root/docs/taxes.pdf",
        ),
    ];
    for (p, _) in files {
        put(
            store,
            p,
            serde_json::json!({"bytes": p.len() * 1000}),
            false,
        )?;
    }
    let strings: Vec<String> = files.iter().map(|(_, s)| (*s).to_owned()).collect();
    let keys: Keys = files
        .iter()
        .map(|(p, s)| ((*p).to_owned(), (*s).to_owned()))
        .collect();
    let photos = list(
        store,
        ListRequest::new(path("/drive-a91/dir-root/dir-photos")?),
    )?;
    let naive: Vec<String> = byte_sorted(strings.clone())
        .into_iter()
        .filter(|s| s.starts_with("root/photos"))
        .collect();
    compare(
        out,
        "ls /drive-a91/dir-root/dir-photos  (subtree; a file named \"a/b.png\" stays one file)",
        &photos,
        "begins_with(SK, \"root/photos\")",
        &naive,
        &keys,
    )?;
    let mut children = ListRequest::new(path("/drive-a91/dir-root")?);
    children.children_only = true;
    let kids = list(store, children)?;
    let one_level: Vec<String> = byte_sorted(strings)
        .into_iter()
        .filter(|s| s.strip_prefix("root/").is_some_and(|r| !r.is_empty()))
        .collect();
    compare(
        out,
        "ls --children /drive-a91/dir-root  (seeks over each child's subtree)",
        &kids,
        "begins_with(SK, \"root/\"): every level",
        &one_level,
        &keys,
    )?;
    Ok(())
}

fn leaderboard(store: &dyn Db, out: &mut impl Write) -> Result<()> {
    writeln!(
        out,
        "3. Leaderboard (seed 004): descending score, ascending timestamp tie-break"
    )?;
    let runs = [
        (9, 1719100900, "quickdraw"),
        (10, 1719100800, "ace_pilot"),
        (1500, 1719100800, "nightowl"),
        (240, 1719100700, "bytecrash"),
        (1500, 1719100500, "p_8842"),
    ];
    let mut strings = Vec::new();
    let mut keys = Keys::new();
    for (score, ts, player) in runs {
        put(
            store,
            &format!("/season-2026-spring/score-!{score}/ts-{ts}/player-{player}"),
            serde_json::json!({"player": player}),
            false,
        )?;
        strings.push(format!("{score}#{ts}#{player}"));
        keys.insert(
            format!("/season-2026-spring/score-!{score}/ts-{ts}/player-{player}"),
            format!("{score}#{ts}#{player}"),
        );
    }
    let mut top = ListRequest::new(path("/season-2026-spring")?);
    top.limit = 10;
    let board: Vec<String> = list(store, top)?;
    compare(
        out,
        "ls /season-2026-spring  (top scores first, no maxValue-score padding)",
        &board,
        "unpadded rankKey \"<score>#<ts>#<player>\"",
        &byte_sorted(strings),
        &keys,
    )?;
    Ok(())
}

fn audits(store: &dyn Db, out: &mut impl Write) -> Result<()> {
    writeln!(
        out,
        "4. Equipment audits (seed 001): full history without v0_/vN copies"
    )?;
    let audit = "/equipment-1/audit";
    for (auditor, status) in [("Smith", "pass"), ("Jones", "fail"), ("Lee", "pass")] {
        put(
            store,
            audit,
            serde_json::json!({"auditor": auditor, "status": status}),
            true,
        )?;
    }
    let latest = store
        .get(&path(audit)?, None, None)?
        .map(|i| format!("v{} {}", i.version, i.value))
        .unwrap_or_default();
    let history: Vec<String> = store
        .history(&path(audit)?, 10)?
        .iter()
        .map(|i| format!("v{} {}", i.version, i.value))
        .collect();
    writeln!(out, "  get {audit}  (latest: one read)\n    {latest}")?;
    // Revision vN is the item vN_Audit of seed 001.
    let keys: Keys = history
        .iter()
        .filter_map(|row| {
            let version = row.split(' ').next()?;
            Some((row.clone(), format!("{version}_Audit")))
        })
        .collect();
    compare(
        out,
        &format!("history {audit}  (newest first: one range read)"),
        &history,
        "seed 001: v0_Audit + v1_..vN_ items, two writes per update",
        &[
            "v0_Audit (copy of the latest)".to_owned(),
            "v1_Audit".to_owned(),
            "v2_Audit".to_owned(),
            "v3_Audit".to_owned(),
        ],
        &keys,
    )?;
    Ok(())
}
