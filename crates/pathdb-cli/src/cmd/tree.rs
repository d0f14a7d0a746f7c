//! `rm -r`, `mv` and `cp`: a whole subtree at once, with a progress bar on a terminal.

use super::Output;
use super::output::bar;
use crate::db::Db;
use anyhow::Result;
use clap::Args;
use pathdb_keys::KeyPath;
use pathdb_store::SubtreeJob;
use std::io::Write;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct MoveArgs {
    /// The subtree: FROM's item, if any, and every item below it.
    from: KeyPath,
    /// Where it goes: FROM's elements are replaced by TO's. Must hold no item, and neither may
    /// be inside the other.
    to: KeyPath,
}

impl MoveArgs {
    /// The move of these paths.
    pub fn relocate(self) -> SubtreeJob {
        SubtreeJob::relocate(self.from, self.to)
    }

    /// The copy of these paths.
    pub fn copy(self) -> SubtreeJob {
        SubtreeJob::copy(self.from, self.to)
    }
}

/// Runs `job` to the end (or finishes an earlier run of it) and prints the count.
pub fn run(store: &dyn Db, job: SubtreeJob, out: Output) -> Result<()> {
    let done = job.op.past_tense();
    let bar = bar(&format!("{{spinner}} {done} {{pos}} items ({{per_sec}})"));
    bar.enable_steady_tick(Duration::from_millis(120));
    let result = store.subtree(&job, &mut |n| bar.set_position(n));
    bar.finish_and_clear();
    let count = result?;
    let mut stdout = std::io::stdout().lock();
    if out.json {
        writeln!(stdout, "{}", serde_json::json!({ done: count }))?;
        return Ok(());
    }
    let items = if count == 1 { "item" } else { "items" };
    match &job.to {
        Some(to) => writeln!(stdout, "{done} {count} {items} from {} to {to}", job.from)?,
        None => writeln!(stdout, "{done} {count} {items} at and below {}", job.from)?,
    }
    Ok(())
}
