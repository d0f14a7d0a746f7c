//! Runs alias builds and removals (aliases/builds.rs) step by step (write/alias_builds.rs):
//! in the background (jobs/background.rs) and when asked (`Store::run_alias_builds`).

use crate::aliases::builds::{AliasState, Builds, read_all};
use crate::backend::Backend;
use crate::model::error::Error;
use crate::write::alias_builds::{Step, step};
use crate::write::commit::Db;
use std::time::{Duration, Instant};

/// Runs steps of the pending alias builds and removals for about `budget`; returns the steps
/// run. `fresh`: look for them in what is stored now; otherwise in the store's copy of the
/// definitions (a build another server started shows up when this one next reads them, before
/// a write, at most once a second), so that an idle store reads nothing.
///
/// # Errors
/// Storage failures.
pub(crate) fn build_aliases<B: Backend>(
    db: &Db<B>,
    budget: Duration,
    fresh: bool,
) -> Result<usize, Error> {
    let started = Instant::now();
    let mut steps = 0;
    let mut todo = if fresh {
        pending(&read_all(&db.backend.reader()?)?)
    } else {
        pending(&*db.namespaces.builds_cached()?)
    };
    while let Some((namespace, template)) = todo.pop() {
        loop {
            let step = step(db, &namespace, &template)?;
            steps += 1;
            match step {
                Step::More if started.elapsed() < budget => continue,
                Step::More => return Ok(steps),
                Step::Done => break,
                Step::Changed => {
                    reload_definitions(db)?;
                    break;
                }
            }
        }
    }
    Ok(steps)
}

/// The builds and removals not done, by namespace and template.
fn pending(builds: &Builds) -> Vec<(String, String)> {
    builds
        .iter()
        .filter(|(_, b)| matches!(b.state, AliasState::Building | AliasState::Removing))
        .map(|((ns, t), _)| (ns.clone(), t.clone()))
        .collect()
}

/// Brings the store's copy of the definitions up to what is stored, after a change: it applies
/// to the writes that start after the change returns.
///
/// # Errors
/// Storage failures.
pub(crate) fn reload_definitions<B: Backend>(db: &Db<B>) -> Result<(), Error> {
    db.namespaces
        .reload(|| db.backend.reader().map_err(Error::from))
}
