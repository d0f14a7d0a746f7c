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
}

impl TableArgs {
    pub fn table_name(&self) -> Result<&str> {
        match &self.table {
            Some(t) => Ok(t),
            None => bail!("--table is required for the DynamoDB backend"),
        }
    }
}

#[derive(Subcommand, Debug)]
pub enum DynamoCommand {
    /// Create the table (Binary pk HASH, Binary sk RANGE, on-demand).
    CreateTable(TableArgs),
}

#[cfg(feature = "dynamodb")]
mod enabled {
    use super::*;
    use anyhow::Context;
    use pathdb_dynamodb::{DynamoBackend, DynamoOptions, create_table};
    use pathdb_store::{Store, StoreOptions};

    fn backend(args: &TableArgs) -> Result<DynamoBackend> {
        let options = DynamoOptions {
            table: args.table_name()?.to_owned(),
            endpoint: args.endpoint.clone(),
            region: args.region.clone(),
            // The default budget (docs/dynamodb.md, "Faults and retries").
            ..DynamoOptions::default()
        };
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
        }
    }

    pub fn open_store(args: &TableArgs, options: StoreOptions) -> Result<Store<DynamoBackend>> {
        Ok(Store::new(backend(args)?, options)?)
    }
}

#[cfg(feature = "dynamodb")]
pub use enabled::{open_store, run};

#[cfg(not(feature = "dynamodb"))]
pub fn run(_: DynamoCommand) -> Result<()> {
    bail!("this pathdb was built without the dynamodb feature")
}

#[cfg(not(feature = "dynamodb"))]
pub fn open_store(
    _: &TableArgs,
    _: pathdb_store::StoreOptions,
) -> Result<pathdb_store::Store<pathdb_store::backend::InMemoryBackend>> {
    bail!("this pathdb was built without the dynamodb feature")
}
