//! `export` and `import`: every item, tombstone and revision as JSON lines, metadata included,
//! so a round trip through a file is lossless; the export's last line says it is complete.
//! Both show a progress bar when stderr is a terminal, and end with a count on stderr.

use super::output::bar;
use crate::db::{Db, ImportMode};
use anyhow::{Context, Result};
use clap::Args;
use pathdb_store::OnExisting;
use std::io::{Read, Write};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// JSON lines file; `-` or nothing for stdin.
    file: Option<PathBuf>,
    /// What to do with a record whose path holds another live item: replace it (written above
    /// the stored version, never below), skip it, or fail.
    #[arg(long, value_name = "MODE", default_value = "replace", value_parser = ["replace", "skip", "fail"])]
    on_existing: String,
    /// Accept export records without the export's last line: import part of an export on
    /// purpose (without it, such input is refused as possibly cut short).
    #[arg(long)]
    partial: bool,
}

pub fn export(store: &dyn Db, out: super::Output) -> Result<()> {
    let bar = bar("{spinner} exported {pos} records ({per_sec})");
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    let result = store.export(&mut stdout, &mut |n| bar.set_position(n));
    bar.finish_and_clear();
    let end = result?;
    stdout
        .flush()
        .map_err(|e| pathdb_store::StorageError::new("writing the export", e))?;
    if out.json {
        // stdout is the export itself: the count goes to stderr, as one JSON line.
        eprintln!(
            "{}",
            serde_json::json!({"exported": end.records, "skipped": end.skipped})
        );
        return Ok(());
    }
    eprint!("exported {} records", end.records);
    if end.skipped > 0 {
        eprint!(
            " ({} entries that are not PathDB records left out)",
            end.skipped
        );
    }
    eprintln!();
    Ok(())
}

pub fn import(store: &dyn Db, args: ImportArgs, out: super::Output) -> Result<()> {
    let mut input = String::new();
    match &args.file {
        Some(p) if p.as_os_str() != "-" => std::fs::File::open(p)
            .with_context(|| format!("opening {}", p.display()))?
            .read_to_string(&mut input),
        _ => std::io::stdin().lock().read_to_string(&mut input),
    }
    .context("reading the input (JSON lines, UTF-8)")?;
    let mode = ImportMode {
        on_existing: args.on_existing.parse::<OnExisting>()?,
        partial: args.partial,
    };
    let bar = bar("{bar:40} {pos}/{len} {msg}");
    let result = store.import(&input, mode, &mut |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    });
    bar.finish_and_clear();
    let report = result?;
    if out.json {
        let last = report.last_path.as_ref().map(ToString::to_string);
        eprintln!(
            "{}",
            serde_json::json!({"imported": report.imported, "unchanged": report.unchanged,
                "skipped": report.skipped, "last_path": last})
        );
        return Ok(());
    }
    eprint!(
        "imported {} records ({} unchanged, {} skipped)",
        report.imported, report.unchanged, report.skipped
    );
    if let Some(last) = &report.last_path {
        eprint!("; the last at {last}");
    }
    eprintln!();
    Ok(())
}
