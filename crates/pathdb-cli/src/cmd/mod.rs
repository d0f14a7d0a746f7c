//! The subcommands: one module each, dispatched from [`Command`].

mod bench;
mod demo;
mod dynamodb;
mod item;
mod key;
mod list;
mod output;
mod serve;
mod storekey;
mod transfer;

use crate::client::Client;
use crate::db::Db;
use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use pathdb_store::backend::{FileBackend, FileOptions};
use pathdb_store::{Store, StoreOptions};
use std::path::PathBuf;

/// PathDB: a document database addressed by typed key paths that sort the way people mean them.
#[derive(Parser, Debug)]
#[command(name = "pathdb", version, about, long_about = None)]
pub struct Cli {
    /// The database file, created if missing [default: pathdb.db; `demo`: a temporary file].
    #[arg(long, global = true, env = "PATHDB_DB")]
    db: Option<PathBuf>,
    /// Print JSON: one object per item, one per line.
    #[arg(long, global = true)]
    json: bool,
    /// Send item commands to this server (e.g. http://127.0.0.1:7070) instead of a local file.
    #[arg(long, global = true, env = "PATHDB_SERVER")]
    server: Option<String>,
    /// Bearer token for --server.
    #[arg(long, global = true, env = "PATHDB_TOKEN", hide_env_values = true)]
    token: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Encode, decode and explain key paths.
    #[command(subcommand)]
    Key(key::KeyCommand),
    /// Create or replace the item at PATH with a JSON value.
    Put(item::PutArgs),
    /// Print the item at PATH.
    Get(item::GetArgs),
    /// Delete the item at PATH.
    Rm(item::RmArgs),
    /// List PREFIX's item and subtree in key order, or only its direct children.
    Ls(list::LsArgs),
    /// Print an item's revisions, newest first.
    History(item::HistoryArgs),
    /// Write every item and revision as JSON lines to stdout.
    Export,
    /// Read JSON lines (as written by export) from FILE or stdin.
    Import(transfer::ImportArgs),
    /// Administer a DynamoDB table for `serve --backend dynamodb`.
    #[command(subcommand)]
    Dynamodb(dynamodb::DynamoCommand),
    /// Run the HTTP/JSON server.
    Serve(serve::ServeArgs),
    /// Load generators: `bench http` measures a server's requests/s and latency.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Load the four seed scenarios into a database and show what key paths return next to a
    /// string sort key.
    Demo,
}

/// The database file when `--db` and `PATHDB_DB` are not given.
pub const DEFAULT_DB: &str = "pathdb.db";

/// Output settings shared by the commands.
#[derive(Clone, Copy, Debug)]
pub struct Output {
    /// JSON lines instead of a table.
    pub json: bool,
}

/// Runs the parsed command.
pub fn run(cli: Cli) -> Result<()> {
    let out = Output { json: cli.json };
    let db = cli.db.clone().unwrap_or_else(|| PathBuf::from(DEFAULT_DB));
    match cli.command {
        Command::Key(cmd) => key::run(cmd),
        Command::Serve(args) => serve::run(args, cli.db),
        Command::Bench(cmd) => bench::run(cmd, cli.token, out),
        Command::Dynamodb(cmd) => dynamodb::run(cmd),
        Command::Demo => demo::run(cli.db.as_deref()),
        Command::Put(args) => item::put(&*connect(&cli.server, cli.token, &db)?, args, out),
        Command::Get(args) => item::get(&*connect(&cli.server, cli.token, &db)?, args, out),
        Command::Rm(args) => item::rm(&*connect(&cli.server, cli.token, &db)?, args, out),
        Command::Ls(args) => list::ls(&*connect(&cli.server, cli.token, &db)?, args, out),
        Command::History(args) => item::history(&*connect(&cli.server, cli.token, &db)?, args, out),
        Command::Export => transfer::export(&*connect(&cli.server, cli.token, &db)?),
        Command::Import(args) => transfer::import(&*connect(&cli.server, cli.token, &db)?, args),
    }
}

/// The server named by `--server`, else the local database file.
fn connect(
    server: &Option<String>,
    token: Option<String>,
    db: &std::path::Path,
) -> Result<Box<dyn Db>> {
    Ok(match server {
        Some(url) => Box::new(Client::new(url, token)),
        None => Box::new(open(db)?),
    })
}

/// Opens the database file for a one-shot command.
pub fn open(path: &std::path::Path) -> Result<Store<FileBackend>> {
    // A one-shot command does not need the background expiry sweeper; reads hide expired items.
    let options = StoreOptions {
        sweep_interval: None,
        ..StoreOptions::default()
    };
    Store::open(path, FileOptions::default(), options)
        .with_context(|| format!("opening {}", path.display()))
}
