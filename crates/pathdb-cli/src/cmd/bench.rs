//! `pathdb bench http` and `pathdb bench counter`: the HTTP load generators of `pathdb-bench` (`pathdb_bench::http`), where
//! they live beside the other benchmarks; these are only their subcommands. `pathdb bench
//! dynamodb-cost` runs `pathdb_bench::dynamodb_cost` (cmd/dynamodb.rs).

use super::Output;
use anyhow::Result;
use clap::Subcommand;
use pathdb_bench::http::HttpArgs;

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Load an HTTP server with a get/put/list mix; print requests/s and latency percentiles.
    Http(HttpArgs),
    /// Increment one hot counter from many clients: PATCH increments against a get/If-Match
    /// loop, in the same run; print increments/s and the ratio.
    Counter(pathdb_bench::counter::CounterArgs),
    /// What each store operation costs on DynamoDB: requests and capacity units per operation,
    /// beside a hand-built single-table design (docs/dynamodb.md). Makes the table if it does
    /// not exist, and then deletes it after.
    DynamodbCost(super::dynamodb::CostArgs),
}

pub fn run(cmd: BenchCommand, token: Option<String>, out: Output) -> Result<()> {
    // Thousands of connections (`--concurrency`, `--sse`, `--long-polls`) need more than the
    // usual soft limit of 1,024 open files; the hard limit is the real one.
    if let Err(e) = pathdb_server::raise_open_file_limit() {
        eprintln!("warning: could not raise the open-file limit: {e}");
    }
    match cmd {
        BenchCommand::Http(args) => pathdb_bench::http::run(args, token, out.json),
        BenchCommand::Counter(args) => pathdb_bench::counter::run(args, token, out.json),
        BenchCommand::DynamodbCost(args) => super::dynamodb::cost(args),
    }
}
