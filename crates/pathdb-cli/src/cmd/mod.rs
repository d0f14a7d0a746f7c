//! The subcommands: one module each, dispatched from [`Command`].

mod key;

use clap::{Parser, Subcommand};

/// PathDB: a document database addressed by typed key paths that sort the way people mean them.
#[derive(Parser, Debug)]
#[command(name = "pathdb", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Encode, decode and explain key paths.
    #[command(subcommand)]
    Key(key::KeyCommand),
}

/// Runs the parsed command.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Key(cmd) => key::run(cmd),
    }
}
