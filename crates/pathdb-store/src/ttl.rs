//! Expiry: expired items are invisible at once (every read checks `expires_at`) and replaced by
//! tombstones (layout.rs) in the background by a sweeper that walks the expiry index in time
//! order. Expiry is the store's on every backend: a backend that deleted expired records by
//! itself (DynamoDB's TTL) would take the path's last version with them, and a re-created item
//! would reuse version numbers.

use crate::backend::{Backend, Direction, Expect, Reader, WriteBatch, WriteError, WriteOp};
use crate::changes::{Change, log_changes};
use crate::store::{Inner, now_of, tombstone};
use crate::{Error, Store, layout};
use std::sync::mpsc;
use std::sync::{Mutex, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

/// Index entries handled per sweep.
const SWEEP_BATCH: usize = 1000;

/// The background thread; stops when dropped.
pub(crate) struct Sweeper {
    stop: Mutex<Option<mpsc::Sender<()>>>,
    handle: Mutex<Option<JoinHandle<()>>>,
}

impl Sweeper {
    pub(crate) fn start<B: Backend>(inner: Weak<Inner<B>>, interval: Duration) -> Sweeper {
        let (stop, stopped) = mpsc::channel::<()>();
        let handle = std::thread::Builder::new()
            .name("pathdb-expiry".into())
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(interval) {
                    let Some(inner) = inner.upgrade() else { break };
                    if let Err(e) = sweep(&inner, SWEEP_BATCH) {
                        tracing::warn!(error = %e, "expiry sweep failed; will retry");
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

/// Removes up to `limit` expired items; returns how many index entries it handled.
fn sweep<B: Backend>(inner: &Inner<B>, limit: usize) -> Result<usize, Error> {
    let now = now_of(inner);
    let reader = inner.backend.reader()?;
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
                    expect: stored
                        .as_ref()
                        .map_or(Expect::Absent, |r| Expect::Version(r.version)),
                });
                match inner.backend.write(batch) {
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
                    path,
                    version: record.version,
                };
                let mut owners = Vec::new();
                log_changes(inner, &reader, &mut batch, &mut owners, &[change], now)?;
            }
        }
        match inner.backend.write(batch) {
            Ok(()) => {
                inner.commits.notify(usize::MAX);
            }
            // A concurrent write replaced the item; its own index entry handles it.
            Err(WriteError::ConditionFailed { .. }) => {}
            Err(WriteError::Storage(e)) => return Err(e.into()),
        };
    }
    Ok(handled)
}

impl<B: Backend> Store<B> {
    /// Removes expired items now rather than waiting for the background sweeper; returns how
    /// many expiry entries it processed.
    ///
    /// # Errors
    /// Storage failures.
    pub fn sweep_expired(&self) -> Result<usize, Error> {
        let mut total = 0;
        loop {
            let n = sweep(&self.inner, SWEEP_BATCH)?;
            total += n;
            if n < SWEEP_BATCH {
                return Ok(total);
            }
        }
    }
}
