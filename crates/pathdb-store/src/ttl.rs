//! Expiry: expired items are invisible at once (every read checks `expires_at`) and replaced by
//! tombstones (layout.rs) in the background by a sweeper that walks the expiry index in time
//! order. Expiry is the store's on every backend: a backend that deleted expired records by
//! itself (DynamoDB's TTL) would take the path's last version with them, and a re-created item
//! would reuse version numbers.

//!
//! The sweeper writes through the same lower layers as the write pipeline (records, layout, the
//! change-log stage), not through `Store`: `Store` starts it and calls [`sweep`].

use crate::backend::{Backend, Direction, Expect, Reader, WriteBatch, WriteError, WriteOp};
use crate::changelog::Change;
use crate::record::tombstone;
use crate::waiters::{ChangedGroups, Waiters};
use crate::write::{Plan, Settings, alias_stage, log_changes};
use crate::{Error, layout};
use std::sync::Mutex;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Index entries handled per sweep.
pub(crate) const SWEEP_BATCH: usize = 1000;

/// The background thread; stops when dropped.
pub(crate) struct Sweeper {
    stop: Mutex<Option<mpsc::Sender<()>>>,
    handle: Mutex<Option<JoinHandle<()>>>,
}

impl Sweeper {
    /// Calls `sweep` every `interval` until dropped, or until `sweep` returns `None` (the store
    /// is gone).
    pub(crate) fn start(
        interval: Duration,
        sweep: impl Fn() -> Option<Result<usize, Error>> + Send + 'static,
    ) -> Sweeper {
        Sweeper::start_named("pathdb-expiry", "expiry sweep", interval, sweep)
    }

    /// [`Sweeper::start`] for another kind of upkeep: `name` names the thread, `what` the
    /// work in its warnings.
    pub(crate) fn start_named(
        name: &str,
        what: &'static str,
        interval: Duration,
        sweep: impl Fn() -> Option<Result<usize, Error>> + Send + 'static,
    ) -> Sweeper {
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
        Sweeper {
            stop: Mutex::new(Some(stop)),
            handle: Mutex::new(handle.ok()),
        }
    }
}

impl Drop for Sweeper {
    fn drop(&mut self) {
        if let Ok(mut stop) = self.stop.lock() {
            stop.take();
        }
        if let Some(handle) = self.handle.lock().ok().and_then(|mut h| h.take()) {
            let _ = handle.join();
        }
    }
}

/// Removes up to `limit` items expired at `now`, each in a batch of its own with its change-log
/// entry, waking the waiters of its group (`waiters`) after each; returns how many index entries it handled.
pub(crate) fn sweep<B: Backend>(
    backend: &B,
    settings: &Settings<'_>,
    waiters: &Waiters,
    now: i64,
    limit: usize,
) -> Result<usize, Error> {
    let reader = backend.reader()?;
    let entries = reader.scan(
        layout::SYSTEM_PARTITION,
        &layout::expired_range(now),
        Direction::Forward,
        limit,
    )?;
    let handled = entries.len();
    for (sort, _) in entries {
        let index_key = crate::backend::Key {
            partition: layout::SYSTEM_PARTITION.to_vec(),
            sort,
        };
        let mut batch = WriteBatch {
            ops: vec![WriteOp::Delete {
                key: index_key.clone(),
                expect: None,
            }],
        };
        if let Some((expires_at, item_key)) = layout::parse_expiry_key(&index_key.sort) {
            let stored = reader.get(&item_key)?;
            // Only if the item still carries this expiry: a later write may have changed it.
            let Some(record) = stored.as_ref().filter(|r| r.expires_at == Some(expires_at)) else {
                // The entry is stale for the item as read, so it goes, but only if the item is
                // still as read: a put that committed since may have set this same expiry again
                // (same time, same key) and rewritten this very entry, which it then needs.
                batch.ops.push(WriteOp::Check {
                    key: item_key,
                    expect: Expect::as_read(stored.as_ref()),
                });
                match backend.write(batch) {
                    Ok(()) | Err(WriteError::ConditionFailed { .. }) => {}
                    Err(WriteError::Storage(e)) => return Err(e.into()),
                }
                continue;
            };
            {
                let path = pathdb_keys::KeyPath::from_partition_and_sort(
                    &item_key.partition,
                    &item_key.sort,
                )
                .map_err(|e| crate::StorageError::new("corrupt expiry index entry", e))?;
                // A tombstone, not nothing: the path's next version continues from this one.
                batch.ops.push(WriteOp::Put {
                    record: tombstone(record, record.version, expires_at),
                    key: item_key,
                    expect: Some(Expect::Version(record.version)),
                });
                let change = Change::Delete {
                    path: path.clone(),
                    version: record.version,
                    alias: None,
                };
                // Its aliases expired with it (they carry its expiry): they go in this batch.
                let ctx = settings.context(&reader, now);
                let mut plan = Plan {
                    owners: vec![path.clone(); batch.ops.len()],
                    batch,
                    changes: vec![change],
                    ..Plan::default()
                };
                alias_stage(&ctx, &mut plan, 0, Some((&path, record)), None)?;
                batch = plan.batch;
                log_changes(&ctx, &mut batch, &mut plan.owners, &plan.changes)?;
            }
        }
        let groups = ChangedGroups::of(&batch);
        match backend.write(batch) {
            Ok(()) => {
                waiters.notify(&groups);
            }
            // A concurrent write replaced the item; its own index entry handles it.
            Err(WriteError::ConditionFailed { .. }) => {}
            Err(WriteError::Storage(e)) => return Err(e.into()),
        };
    }
    Ok(handled)
}
