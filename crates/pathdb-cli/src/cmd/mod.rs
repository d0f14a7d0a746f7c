//! The subcommands: one module each, dispatched from [`Command`].

mod access;
mod backup;
mod bench;
mod codegen;
mod demo;
mod dynamodb;
mod filter;
mod item;
mod key;
mod list;
mod ns;
mod output;
mod serve;
mod storekey;
mod transfer;
mod tree;
mod watch;

use crate::client::Client;
use crate::db::{Db, Local};
use crate::exit::Failure;
use anyhow::Result;
use clap::{CommandFactory, Parser, Subcommand};
use pathdb_store::backend::{FileBackend, FileOptions};
use pathdb_store::{SchemaVersions, StorageErrorKind, Store, StoreOptions};
use std::path::{Path, PathBuf};

/// PathDB: a document database addressed by typed key paths that sort the way people mean them.
#[derive(Parser, Debug)]
#[command(name = "pathdb", version, about, long_about = None, after_help = crate::exit::HELP)]
// Under their own heading in every subcommand's help, not interleaved with its options.
#[command(next_help_heading = "Global options")]
pub struct Cli {
    /// The database file, created by a write if missing [default: pathdb.db; `demo`: a temporary
    /// file]. Reads (get, ls, history, export) open it read-only and never change it.
    #[arg(long, global = true, env = "PATHDB_DB")]
    db: Option<PathBuf>,
    /// Print JSON: one object per item, one per line (every command's output is JSON), and
    /// an error as one JSON object on stderr: {"error": {"code", "message", "exit"}}.
    #[arg(long, global = true)]
    json: bool,
    /// Send item commands to this server instead of a local file: a URL
    /// (http://127.0.0.1:7070) or HOST:PORT (http is meant).
    #[arg(long, global = true, env = "PATHDB_SERVER", value_parser = parse_server)]
    server: Option<String>,
    /// Bearer token for --server.
    #[arg(long, global = true, env = "PATHDB_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// The definition version item commands speak, per namespace: `user=1,order=3`. Values
    /// are read in it and written in it (brought forward to the newest); a namespace not
    /// named is spoken in its newest version (docs/migrations.md).
    #[arg(long, global = true, env = "PATHDB_SCHEMA_VERSION", value_name = "NS=V,...",
        value_parser = parse_versions)]
    schema_version: Option<SchemaVersions>,
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
    /// Change part of the item at PATH: a JSON Merge Patch, or a JSON Patch with --json-patch.
    Patch(item::PatchArgs),
    /// Add N (default 1) to the number at POINTER in the item at PATH, atomically; a missing
    /// item or member starts at 0.
    Incr(item::IncrArgs),
    /// Print the item at PATH.
    Get(item::GetArgs),
    /// Delete the item at PATH; with -r, also every item below it.
    Rm(item::RmArgs),
    /// Move the item at FROM and every item below it to TO (a rename): values, times and
    /// history go along, FROM becomes empty.
    Mv(tree::MoveArgs),
    /// Copy the item at FROM and every item below it to TO.
    Cp(tree::MoveArgs),
    /// List PREFIX's item and subtree in key order, or only its direct children; --filter keeps
    /// the items a CEL expression matches, --fields some members of each value.
    Ls(list::LsArgs),
    /// Count the items of PREFIX's subtree (or its direct children), or those --filter matches.
    Count(list::CountArgs),
    /// Print an item's revisions, newest first.
    History(item::HistoryArgs),
    /// Print the changes under PREFIX as they happen (JSON lines with --json), or with --filter
    /// those of a filter's result; use --server to follow a database that a server is writing.
    Watch(watch::WatchArgs),
    /// Write every item and revision as JSON lines to stdout.
    Export,
    /// Read JSON lines (as written by export) from FILE or stdin.
    Import(transfer::ImportArgs),
    /// Namespace definitions: a JSON Schema checked on every write, history, a description.
    #[command(subcommand)]
    Ns(ns::NsCommand),
    /// Generate typed clients (TypeScript, Python) from the namespace definitions.
    #[command(subcommand)]
    Codegen(codegen::CodegenCommand),
    /// Roles: path rules saying who may read, write or administer where (docs/access.md).
    #[command(subcommand)]
    Role(access::RoleCommand),
    /// Issued access tokens: create (the secret is shown once), list, revoke.
    #[command(subcommand)]
    Token(access::TokenCommand),
    /// Write a backup of the database (--db, or a server's with --server) to a new FILE;
    /// `backup ls DIR` lists scheduled backups, `backup verify FILE` checks one.
    Backup(backup::BackupArgs),
    /// Restore a backup FILE, or an archive (--archive) as of a commit or instant, into a new
    /// database (--db NEW, which must not exist).
    Restore(backup::RestoreArgs),
    /// Inspect a continuous archive (`serve --archive`): its restorable window and segments.
    #[command(subcommand)]
    Archive(backup::ArchiveCommand),
    /// Administer a DynamoDB table for `serve --backend dynamodb`.
    #[command(subcommand)]
    Dynamodb(dynamodb::DynamoCommand),
    /// Run the HTTP/JSON server.
    Serve(Box<serve::ServeArgs>),
    /// Load generators: `bench http` measures a server's requests/s and latency.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Load the four seed scenarios into a database (--db, --server, or a temporary file) and
    /// show what key paths return next to a string sort key.
    Demo,
    /// Print a shell completion script (`completions --help` says where it goes).
    ///
    /// For bash (the folder may not exist yet on a fresh account):
    /// `mkdir -p ~/.local/share/bash-completion/completions && pathdb completions bash >
    /// ~/.local/share/bash-completion/completions/pathdb`, then open a new shell.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// The command line as `pathdb` parses it: [`Cli`], where `serve` does not list the global
/// options that mean nothing to it (`--json`, `--server`, `--token`, `--schema-version`: it is
/// the server) in its
/// help or completions. clap has no per-subcommand exception to a global option, but copies a
/// global only to subcommands without an argument of that id: `serve` gets hidden ones, which
/// it accepts (so that `PATHDB_SERVER` in the environment does not stop a server) and ignores.
pub fn command() -> clap::Command {
    use clap::{Arg, ArgAction};
    Cli::command().mut_subcommand("serve", |serve| {
        serve
            .arg(
                Arg::new("json")
                    .long("json")
                    .action(ArgAction::SetTrue)
                    .hide(true),
            )
            .arg(Arg::new("server").long("server").hide(true))
            .arg(Arg::new("token").long("token").hide(true))
            .arg(
                Arg::new("schema_version")
                    .long("schema-version")
                    .value_parser(parse_versions)
                    .hide(true),
            )
    })
}

/// Parses the process's arguments with [`command`].
///
/// # Errors
/// clap's: a usage error, or `--help`/`--version` (which clap prints and exits for).
pub fn parse() -> Result<Cli, clap::Error> {
    let matches = command().try_get_matches()?;
    <Cli as clap::FromArgMatches>::from_arg_matches(&matches)
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
    use Access::{Read, Write};
    let out = Output { json: cli.json };
    let db = cli.db.clone().unwrap_or_else(|| PathBuf::from(DEFAULT_DB));
    let speaks = cli.schema_version.clone().unwrap_or_default();
    let connect = |access| connect(&cli.server, cli.token.clone(), &speaks, &db, access);
    match cli.command {
        Command::Key(cmd) => key::run(cmd, out),
        Command::Serve(args) => serve::run(*args, cli.db),
        Command::Bench(cmd) => bench::run(cmd, cli.token, out),
        Command::Dynamodb(cmd) => dynamodb::run(cmd),
        Command::Backup(args) => {
            backup::backup(args, &db, cli.server.as_deref(), cli.token.clone(), out)
        }
        Command::Restore(args) => backup::restore(args, cli.db.as_deref(), out),
        Command::Archive(cmd) => backup::archive(cmd, out),
        // A side-by-side comparison for reading: refused rather than printed as text.
        Command::Demo if out.json => anyhow::bail!(
            "demo has no --json form: it prints a side-by-side comparison for reading"
        ),
        Command::Demo => demo::run(match &cli.server {
            Some(url) => demo::Target::Server(url, cli.token.clone()),
            None => demo::Target::File(cli.db.as_deref()),
        }),
        Command::Completions { shell } => {
            // clap_complete panics on a write error; writing the script ourselves turns a
            // closed pipe (`pathdb completions bash | head`) into the usual quiet exit.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut command(), "pathdb", &mut script);
            std::io::Write::write_all(&mut std::io::stdout().lock(), &script)?;
            Ok(())
        }
        Command::Put(args) => item::put(&*connect(Write)?, args, out),
        Command::Patch(args) => item::patch(&*connect(Write)?, args, out),
        Command::Incr(args) => item::incr(&*connect(Write)?, args, out),
        Command::Get(args) => item::get(&*connect(Read)?, args, out),
        Command::Rm(args) => item::rm(&*connect(Write)?, args, out),
        Command::Mv(args) => tree::run(&*connect(Write)?, args.relocate(), out),
        Command::Cp(args) => tree::run(&*connect(Write)?, args.copy(), out),
        Command::Ls(args) => list::ls(&*connect(Read)?, args, out),
        Command::Count(args) => list::count(&*connect(Read)?, args, out),
        Command::History(args) => item::history(&*connect(Read)?, args, out),
        Command::Watch(args) => watch::watch(&*connect(Read)?, args, out),
        Command::Export => transfer::export(&*connect(Read)?, out),
        Command::Import(args) => transfer::import(&*connect(Write)?, args, out),
        Command::Ns(cmd) => {
            let access = match cmd {
                // `ns aliases` runs the pending builds of a local file, unless told not to wait.
                ns::NsCommand::Set(_) | ns::NsCommand::Rm(_) | ns::NsCommand::Retry(_) => Write,
                ns::NsCommand::Aliases(ref args) if args.waits() => Write,
                _ => Read,
            };
            ns::run(&*connect(access)?, cmd, out)
        }
        Command::Codegen(cmd) => codegen::run(&*connect(Read)?, cmd, &speaks),
        Command::Role(cmd) => {
            let access = match cmd {
                access::RoleCommand::Set(_) | access::RoleCommand::Rm(_) => Write,
                _ => Read,
            };
            access::role(&*connect(access)?, cmd, out)
        }
        Command::Token(cmd) => {
            let access = match cmd {
                access::TokenCommand::Ls => Read,
                _ => Write,
            };
            access::token(&*connect(access)?, cmd, out)
        }
    }
}

/// What a command does to a local database file.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Access {
    /// Only reads: open read-only, so the file is never modified (and may be read-only).
    Read,
    /// May write: open (or create) it read-write.
    Write,
}

/// The server named by `--server`, else the local database file.
fn connect(
    server: &Option<String>,
    token: Option<String>,
    speaks: &SchemaVersions,
    db: &Path,
    access: Access,
) -> Result<Box<dyn Db>> {
    Ok(match (server, access) {
        (Some(url), _) => Box::new(Client::new(url, token).speaking(speaks)),
        (None, Access::Read) => Box::new(Local::new(open_read_only(db)?, speaks.clone())),
        (None, Access::Write) => Box::new(Local::new(open(db)?, speaks.clone())),
    })
}

/// `--schema-version`'s text.
fn parse_versions(text: &str) -> Result<SchemaVersions, String> {
    text.parse().map_err(|e: pathdb_store::Error| e.to_string())
}

/// Options for a one-shot command: it does not need the background expiry sweeper; reads hide
/// expired items anyway.
fn one_shot() -> StoreOptions {
    StoreOptions {
        sweep_interval: None,
        ..StoreOptions::default()
    }
}

/// Opens (or creates) the database file for a one-shot command that writes.
pub fn open(path: &Path) -> Result<Store<FileBackend>> {
    Store::open(path, FileOptions::default(), one_shot()).map_err(|e| open_error(path, e))
}

/// Opens the database file for a command that only reads. A read-write open would commit to
/// the file (format record, quick-repair state) even for a `get`, changing its bytes and failing
/// on a read-only file; this one never writes.
pub fn open_read_only(path: &Path) -> Result<Store<FileBackend>> {
    if !path.exists() {
        return Err(Failure::NoDatabase {
            path: path.to_owned(),
        }
        .into());
    }
    Store::open_read_only(path, FileOptions::default(), one_shot()).map_err(|e| open_error(path, e))
}

/// A file held by another process is worth a hint (the server to go through, when one
/// recorded its address); other failures keep their cause.
fn open_error(path: &Path, error: pathdb_store::Error) -> anyhow::Error {
    match &error {
        pathdb_store::Error::Storage(e) if e.kind() == StorageErrorKind::InUse => {
            anyhow::Error::new(error).context(Failure::InUse {
                path: path.to_owned(),
                server: crate::address_file::live_server(path),
            })
        }
        _ => anyhow::Error::new(error).context(format!("opening {}", path.display())),
    }
}

/// `--server`: an http(s) URL, or `HOST:PORT` without a scheme, which means http. Anything else
/// is a usage error (exit status 2) before any command runs.
fn parse_server(text: &str) -> Result<String, String> {
    let url = if text.contains("://") {
        text.to_owned()
    } else {
        format!("http://{text}")
    };
    let expected = "expected http://HOST:PORT, https://HOST or HOST:PORT";
    let uri: ureq::http::Uri = url
        .parse()
        .map_err(|e| format!("{text:?} is not a server address ({e}); {expected}"))?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) {
        return Err(format!(
            "{text:?}: the scheme must be http or https; {expected}"
        ));
    }
    let Some(authority) = uri.authority() else {
        return Err(format!("{text:?} names no host; {expected}"));
    };
    if authority.host().is_empty() {
        return Err(format!("{text:?} names no host; {expected}"));
    }
    if authority.as_str().contains('@') {
        return Err(format!(
            "{text:?}: no user in the address (a token goes in --token); {expected}"
        ));
    }
    // The `http` crate accepts any text after the colon and fails only at connect time.
    let port = authority.as_str().rsplit_once(':').map(|(_, p)| p);
    if let Some(port) = port.filter(|p| !p.contains(']') && p.parse::<u16>().is_err()) {
        return Err(format!(
            "{text:?}: the port {port:?} is not a number; {expected}"
        ));
    }
    if uri.query().is_some() || url.contains('#') {
        return Err(format!(
            "{text:?}: a server address has no query or fragment"
        ));
    }
    Ok(url.trim_end_matches('/').to_owned())
}
