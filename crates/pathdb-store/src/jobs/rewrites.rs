//! Runs namespaces' rewrites to their newest definition version (write/rewrite.rs) step by
//! step: in the background (jobs/background.rs, beside the alias builds) and when asked
//! (`Store::run_rewrites`).

use crate::backend::Backend;
use crate::model::error::Error;
use crate::namespaces::rewrites::pending;
use crate::write::commit::Db;
use crate::write::rewrite::{Step, step};
use std::time::{Duration, Instant};

/// Runs steps of the pending rewrites for about `budget`; returns the steps run. `fresh`: look
/// for them in what is stored now; otherwise only when the store's copy of the definitions
/// says some namespace has steps (an idle store without migrations reads nothing).
///
/// # Errors
/// Storage failures.
pub(crate) fn run_rewrites<B: Backend>(
    db: &Db<B>,
    budget: Duration,
    fresh: bool,
) -> Result<usize, Error> {
    if !fresh && !db.namespaces.rewrites_pending()? {
        return Ok(0);
    }
    let started = Instant::now();
    let mut steps = 0;
    let todo = pending(&db.backend.reader()?)?;
    if todo.is_empty() {
        db.namespaces.set_rewrites_pending(false)?;
    }
    for namespace in todo {
        loop {
            let step = step(db, &namespace)?;
            steps += 1;
            match step {
                Step::More if started.elapsed() < budget => continue,
                Step::More => return Ok(steps),
                Step::Done => break,
            }
        }
    }
    Ok(steps)
}
