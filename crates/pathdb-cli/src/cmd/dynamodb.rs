//! `pathdb dynamodb create-table` and the table options of `serve --backend dynamodb`.

use anyhow::{Result, bail};
use clap::{Args, Subcommand};

/// Which DynamoDB table, where.
#[derive(Args, Debug, Clone)]
pub struct TableArgs {
    /// DynamoDB table name.
    #[arg(long, env = "PATHDB_DYNAMODB_TABLE")]
    table: Option<String>,
    /// Endpoint URL other than AWS's (a local DynamoDB-compatible server).
    #[arg(long, env = "PATHDB_DYNAMODB_ENDPOINT")]
    endpoint: Option<String>,
    /// AWS region [default: from the AWS configuration, else us-east-1].
    #[arg(long)]
    region: Option<String>,
    /// How long one request attempt may take, from sending to the whole answer; a Scan or Query
    /// page that takes longer is asked again for fewer items [default: 3000].
    #[arg(long, value_name = "MS", env = "PATHDB_DYNAMODB_ATTEMPT_TIMEOUT_MS",
          value_parser = clap::value_parser!(u64).range(1..=600_000))]
    attempt_timeout_ms: Option<u64>,
    /// No new attempt of a request starts this long after its first [default: 10000].
    #[arg(long, value_name = "MS", env = "PATHDB_DYNAMODB_OPERATION_TIMEOUT_MS",
          value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    operation_timeout_ms: Option<u64>,
    /// How long opening a connection to the endpoint may take [default: 2000].
    #[arg(long, value_name = "MS", env = "PATHDB_DYNAMODB_CONNECT_TIMEOUT_MS",
          value_parser = clap::value_parser!(u64).range(1..=600_000))]
    connect_timeout_ms: Option<u64>,
    /// Attempts per request, the first included [default: 6].
    #[arg(long, value_name = "N", env = "PATHDB_DYNAMODB_MAX_ATTEMPTS",
          value_parser = clap::value_parser!(u32).range(1..=100))]
    max_attempts: Option<u32>,
}

impl TableArgs {
    pub fn table_name(&self) -> Result<&str> {
        match &self.table {
            Some(t) => Ok(t),
            None => bail!("--table is required for the DynamoDB backend"),
        }
    }
}

/// `pathdb bench dynamodb-cost`: which table, and how many runs of each operation.
#[derive(Args, Debug, Clone)]
pub struct CostArgs {
    #[command(flatten)]
    table: TableArgs,
    /// Runs of each single-item operation (a tenth as many of the 10-item ones), at least 10.
    #[arg(long, default_value_t = 100)]
    ops: usize,
    /// Concurrent writers of the group write ceiling measurement (0 leaves it out).
    #[arg(long, default_value_t = 16)]
    writers: usize,
    /// Writes of each of those writers.
    #[arg(long, default_value_t = 16)]
    writes: usize,
}

#[derive(Subcommand, Debug)]
pub enum DynamoCommand {
    /// Create the table (Binary pk HASH, Binary sk RANGE, on-demand).
    CreateTable(TableArgs),
    /// Mark a table restored to a point in time (docs/backups.md) as a new history, before it
    /// is served: change tokens issued before answer 410 instead of resuming on it.
    Restored(TableArgs),
}

#[cfg(feature = "dynamodb")]
mod enabled {
    use super::*;
    use anyhow::Context;
    use pathdb_dynamodb::{DynamoBackend, DynamoOptions, RetryBudget, create_table};
    use pathdb_store::{Store, StoreOptions};
    use std::time::Duration;

    /// The retry budget: the defaults (docs/dynamodb.md, "Faults and retries"), with the
    /// timeouts and attempts the flags give.
    fn retry(args: &TableArgs) -> RetryBudget {
        let mut budget = RetryBudget::default();
        if let Some(ms) = args.attempt_timeout_ms {
            budget = budget.with_attempt_timeout(Duration::from_millis(ms));
        }
        if let Some(ms) = args.operation_timeout_ms {
            budget = budget.with_operation_timeout(Duration::from_millis(ms));
        }
        if let Some(ms) = args.connect_timeout_ms {
            budget = budget.with_connect_timeout(Duration::from_millis(ms));
        }
        if let Some(n) = args.max_attempts {
            budget = budget.with_max_attempts(n);
        }
        budget
    }

    fn backend(args: &TableArgs) -> Result<DynamoBackend> {
        let mut options = DynamoOptions::new(args.table_name()?).with_retry(retry(args));
        if let Some(endpoint) = &args.endpoint {
            options = options.with_endpoint(endpoint);
        }
        if let Some(region) = &args.region {
            options = options.with_region(region);
        }
        Ok(DynamoBackend::connect(&options)?)
    }

    pub fn run(cmd: DynamoCommand) -> Result<()> {
        match cmd {
            DynamoCommand::CreateTable(args) => {
                let backend = backend(&args)?;
                let created = create_table(&backend).context("creating the table")?;
                let table = args.table_name()?;
                println!(
                    "{}",
                    if created {
                        format!("created table {table}")
                    } else {
                        format!("table {table} already exists")
                    }
                );
                Ok(())
            }
            DynamoCommand::Restored(args) => {
                let options = StoreOptions {
                    sweep_interval: None,
                    ..StoreOptions::default()
                };
                open_store(&args, options)?
                    .mark_restored()
                    .context("replacing the table's token key")?;
                println!(
                    "table {} marked restored: change tokens issued before answer 410",
                    args.table_name()?
                );
                Ok(())
            }
        }
    }

    pub fn open_store(args: &TableArgs, options: StoreOptions) -> Result<Store<DynamoBackend>> {
        Ok(Store::new(backend(args)?, options)?)
    }

    /// Measures what each operation costs on the table (made for the run, and deleted after,
    /// when it does not exist) and prints the table of docs/dynamodb.md.
    pub fn cost(args: CostArgs) -> Result<()> {
        let made = create_table(&backend(&args.table)?).context("creating the table")?;
        let store = open_store(&args.table, pathdb_bench::dynamodb_cost::store_options())?;
        let nonce = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let measured =
            pathdb_bench::dynamodb_cost::measure(&store, args.ops, nonce).and_then(|rows| {
                let ceilings = if args.writers > 0 {
                    [true, false]
                        .into_iter()
                        .map(|logged| {
                            pathdb_bench::dynamodb_cost::ceiling(
                                &store,
                                args.writers,
                                args.writes.max(1),
                                nonce,
                                logged,
                            )
                        })
                        .collect::<Result<Vec<_>, _>>()?
                } else {
                    Vec::new()
                };
                Ok((rows, ceilings))
            });
        let table = args.table.table_name()?;
        if made {
            drop(store);
            pathdb_dynamodb::delete_table(&backend(&args.table)?)
                .with_context(|| format!("deleting the table {table} made for the run"))?;
        }
        let (rows, ceilings) = measured.context("measuring")?;
        print!("{}", pathdb_bench::dynamodb_cost::render(&rows));
        let bills = pathdb_bench::dynamodb_cost::bills(&rows)?;
        print!("{}", pathdb_bench::dynamodb_cost::render_bills(&bills));
        if !ceilings.is_empty() {
            print!(
                "{}",
                pathdb_bench::dynamodb_cost::render_ceilings(&ceilings)
            );
        }
        if !made {
            println!(
                "\nThe run wrote under the groups /cost-{nonce}, /cost-{nonce}-N, /ceiling-{nonce}, \
                 /nolog{nonce}-1 and /nologc{nonce}-1 of table {table}, and defined the namespaces \
                 acct{nonce}, user{nonce}, nolog{nonce} and nologc{nonce}; they are left there \
                 (nolog{nonce} and nologc{nonce} keep no change log, a definition that cannot be \
                 deleted)."
            );
        }
        Ok(())
    }
}

#[cfg(feature = "dynamodb")]
pub use enabled::{cost, open_store, run};

/// What a build without the `dynamodb` feature answers to the DynamoDB commands: the AWS SDK
/// is a build of its own (minutes on a small machine), left out of the default build so that a
/// first `pathdb serve` does not wait for it (docs/dynamodb.md, "Building for DynamoDB").
#[cfg_attr(feature = "dynamodb", allow(dead_code))]
fn not_built() -> anyhow::Error {
    anyhow::anyhow!(
        "this pathdb was built without DynamoDB support; build it with the `dynamodb` feature: \
         `cargo install --path crates/pathdb-cli --features dynamodb`, or \
         `cargo run --release -p pathdb-cli --features dynamodb -- serve --backend dynamodb ...` \
         (docs/dynamodb.md, \"Building for DynamoDB\")"
    )
}

#[cfg(not(feature = "dynamodb"))]
pub fn run(_: DynamoCommand) -> Result<()> {
    Err(not_built())
}

#[cfg(not(feature = "dynamodb"))]
pub fn cost(_: CostArgs) -> Result<()> {
    Err(not_built())
}

#[cfg(not(feature = "dynamodb"))]
pub fn open_store(
    _: &TableArgs,
    _: pathdb_store::StoreOptions,
) -> Result<pathdb_store::Store<pathdb_store::backend::InMemoryBackend>> {
    Err(not_built())
}

#[cfg(test)]
mod test {
    #[test]
    fn a_build_without_dynamodb_says_how_to_get_it() {
        let message = super::not_built().to_string();
        assert!(
            message.contains("cargo install --path crates/pathdb-cli --features dynamodb"),
            "{message}"
        );
        assert!(message.contains("--features dynamodb -- serve --backend dynamodb"));
        assert_eq!(
            crate::exit::status_of(&super::not_built()),
            crate::exit::Status::Usage
        );
    }
}
