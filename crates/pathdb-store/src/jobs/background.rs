//! The store's background upkeep: a thread that removes expired items (write/sweep.rs) and one
//! that runs alias builds (jobs/alias_builds.rs) and rewrites (jobs/rewrites.rs), each holding the database weakly, so that they
//! stop when the store is dropped.
//!
//! Expiry: expired items are invisible at once (every read checks `expires_at`) and replaced by
//! tombstones (encoding/layout.rs) in the background. Expiry is the store's on every backend: a
//! backend that deleted expired records by itself (DynamoDB's TTL) would take the path's last
//! version with them, and a re-created item would reuse version numbers.

use crate::backend::Backend;
use crate::jobs::alias_builds::build_aliases;
use crate::jobs::rewrites::run_rewrites;
use crate::model::error::Error;
use crate::write::commit::Db;
use crate::write::sweep::{SWEEP_BATCH, sweep};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the background builder looks for pending alias builds (in the store's copy of the
/// definitions: no read when there are none).
const ALIAS_BUILD_TICK: Duration = Duration::from_millis(100);
/// How long it builds before it lets the thread stop if the store is dropped.
const ALIAS_BUILD_SLICE: Duration = Duration::from_secs(1);

/// The upkeep threads of one store, stopped when the last clone of the store is dropped.
#[derive(Clone, Default)]
pub(crate) struct Threads {
    _sweeper: Option<Arc<Upkeep>>,
    _builder: Option<Arc<Upkeep>>,
}

/// Starts the sweeper every `interval`, and the alias builder beside it: background upkeep runs
/// where the sweeper does (not on a read-only store, nor where a test drives time), and
/// otherwise when asked (`Store::sweep_expired`, `Store::run_alias_builds`).
pub(crate) fn start<B: Backend>(db: &Arc<Db<B>>, interval: Option<Duration>) -> Threads {
    let Some(interval) = interval else {
        return Threads::default();
    };
    let weak = Arc::downgrade(db);
    let sweeper = Upkeep::start(interval, move || {
        weak.upgrade().map(|db| sweep(&db, SWEEP_BATCH))
    });
    let weak = Arc::downgrade(db);
    let builder = Upkeep::start_named(
        "pathdb-aliases",
        "alias build",
        ALIAS_BUILD_TICK,
        move || {
            weak.upgrade().map(|db| {
                let built = build_aliases(&db, ALIAS_BUILD_SLICE, false)?;
                Ok(built + run_rewrites(&db, ALIAS_BUILD_SLICE, false)?)
            })
        },
    );
    Threads {
        _sweeper: Some(Arc::new(sweeper)),
        _builder: Some(Arc::new(builder)),
    }
}

/// The background thread; stops when dropped.
pub(crate) struct Upkeep {
    stop: Mutex<Option<mpsc::Sender<()>>>,
    handle: Mutex<Option<JoinHandle<()>>>,
}

impl Upkeep {
    /// Calls `sweep` every `interval` until dropped, or until `sweep` returns `None` (the store
    /// is gone).
    pub(crate) fn start(
        interval: Duration,
        sweep: impl Fn() -> Option<Result<usize, Error>> + Send + 'static,
    ) -> Upkeep {
        Upkeep::start_named("pathdb-expiry", "expiry sweep", interval, sweep)
    }

    /// [`Upkeep::start`] for another kind of upkeep: `name` names the thread, `what` the
    /// work in its warnings.
    pub(crate) fn start_named(
        name: &str,
        what: &'static str,
        interval: Duration,
        sweep: impl Fn() -> Option<Result<usize, Error>> + Send + 'static,
    ) -> Upkeep {
        let (stop, stopped) = mpsc::channel::<()>();
        let handle = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(interval) {
                    match sweep() {
                        None => break,
                        Some(Err(e)) => {
                            tracing::warn!(error = %e, "{what} failed; will retry")
                        }
                        Some(Ok(_)) => {}
                    }
                }
            });
        Upkeep {
            stop: Mutex::new(Some(stop)),
            handle: Mutex::new(handle.ok()),
        }
    }
}

impl Drop for Upkeep {
    fn drop(&mut self) {
        if let Ok(mut stop) = self.stop.lock() {
            stop.take();
        }
        if let Some(handle) = self.handle.lock().ok().and_then(|mut h| h.take()) {
            let _ = handle.join();
        }
    }
}
