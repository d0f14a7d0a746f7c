//! `pathdb`: PathDB's command-line tool. `main` only parses arguments and maps the outcome to an
//! exit code; each subcommand lives in `cmd/`.

mod client;
mod cmd;
mod db;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cmd::Cli::parse();
    match cmd::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}

/// `pathdb ... | head` closes our stdout early; that is not a failure.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
