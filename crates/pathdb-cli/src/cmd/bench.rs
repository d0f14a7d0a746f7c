//! `pathdb bench http`: the HTTP load generator of `pathdb-bench` (`pathdb_bench::http`), where
//! it lives beside the other benchmarks; this is only its subcommand.

use super::Output;
use anyhow::Result;
use clap::Subcommand;
use pathdb_bench::http::HttpArgs;

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Load an HTTP server with a get/put/list mix; print requests/s and latency percentiles.
    Http(HttpArgs),
}

pub fn run(cmd: BenchCommand, token: Option<String>, out: Output) -> Result<()> {
    match cmd {
        BenchCommand::Http(args) => pathdb_bench::http::run(args, token, out.json),
    }
}
