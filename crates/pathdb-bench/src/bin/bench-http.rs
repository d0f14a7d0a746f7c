//! `bench-http`: the HTTP load generator (`pathdb_bench::http`) as a binary of its own, with the
//! same arguments as `pathdb bench http`.
//!
//!   cargo run --release -p pathdb-bench --bin bench-http -- --url http://127.0.0.1:7070

use clap::Parser;
use pathdb_bench::http::HttpArgs;

/// Load an HTTP server with a get/put/list mix; print requests/s and latency percentiles.
#[derive(Parser, Debug)]
#[command(name = "bench-http", version)]
struct Cli {
    #[command(flatten)]
    args: HttpArgs,
    /// Bearer token for a PathDB server.
    #[arg(long, env = "PATHDB_TOKEN")]
    token: Option<String>,
    /// Print JSON lines instead of a table.
    #[arg(long)]
    json: bool,
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    match pathdb_bench::http::run(cli.args, cli.token, cli.json) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
