//! `export` and `import`: every item and revision as JSON lines, metadata included, so a round
//! trip through a file is lossless.

use crate::db::Db;
use anyhow::{Context, Result};
use clap::Args;
use pathdb_store::ExportRecord;
use std::io::{BufRead, Write};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// JSON lines file; `-` or nothing for stdin.
    file: Option<PathBuf>,
}

pub fn export(store: &dyn Db) -> Result<()> {
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    store.export(&mut stdout)?;
    stdout.flush()?;
    Ok(())
}

pub fn import(store: &dyn Db, args: ImportArgs) -> Result<()> {
    let reader: Box<dyn BufRead> = match &args.file {
        Some(p) if p.as_os_str() != "-" => Box::new(std::io::BufReader::new(
            std::fs::File::open(p).with_context(|| format!("opening {}", p.display()))?,
        )),
        _ => Box::new(std::io::stdin().lock()),
    };
    // Parse and check everything before writing anything.
    let mut records = Vec::new();
    for (n, line) in reader.lines().enumerate() {
        let line = line.context("reading input")?;
        if line.trim().is_empty() {
            continue;
        }
        records
            .push(ExportRecord::from_json_line(&line).with_context(|| format!("line {}", n + 1))?);
    }
    let n = store.import(&records)?;
    eprintln!("imported {n} records");
    Ok(())
}
