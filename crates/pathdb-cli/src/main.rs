//! `pathdb`: PathDB's command-line tool. `main` only parses arguments and maps the outcome to an
//! exit status (`exit.rs`); each subcommand lives in `cmd/`.

mod client;
mod cmd;
mod db;
mod exit;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    // clap's own usage errors exit with 2 (`exit::Status::Usage`) before we get here.
    let cli = cmd::Cli::parse();
    match cmd::run(cli) {
        Ok(()) => exit::Status::Ok.into(),
        Err(err) if is_broken_pipe(&err) => exit::Status::Ok.into(),
        Err(err) => {
            eprintln!("error: {err:#}");
            exit::status_of(&err).into()
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
