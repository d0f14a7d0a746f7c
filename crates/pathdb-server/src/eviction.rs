//! Making room at the connection cap (issue 37): when every slot is taken, a new connection
//! closes the open connection that has waited longest for a request, so that a client that talks
//! is served in milliseconds however many silent sockets hold the server's slots.
//!
//! Before, at the cap the accept loop stopped accepting: a flood of sockets that connect and
//! send nothing (1,100 under `ulimit -n 1024`, a cap of 768) kept a real client in the listen
//! backlog until the header timeout (10 s) closed some of them.
//!
//! Only a connection that is waiting for a request and has received no byte of it is closed:
//! never one whose request is being read (a slow upload), answered (a long poll, an event
//! stream) or has begun to arrive (`timeouts::Activity::idle_since`). It is closed as at
//! shutdown, with hyper's graceful shutdown, which closes a connection in that state at once and
//! lets any request that slipped in meanwhile finish. Each such close counts in
//! `pathdb_connections_evicted_total`. When no connection is idle, the new one waits for a slot
//! as before (held by the accept loop: one connection beyond the cap at most).

use crate::timeouts::Activity;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;

/// The open connections, as the accept loop sees them.
#[derive(Default)]
pub(crate) struct Connections {
    open: Mutex<HashMap<u64, Open>>,
    next_id: AtomicU64,
}

/// One open connection.
struct Open {
    activity: Arc<Activity>,
    evict: Arc<Eviction>,
}

/// Asks one connection to close.
#[derive(Default)]
pub(crate) struct Eviction {
    /// Set once: a connection is chosen at most once.
    chosen: AtomicBool,
    notify: Notify,
}

impl Eviction {
    /// Completes when the accept loop chose this connection to make room.
    pub(crate) async fn chosen(&self) {
        self.notify.notified().await;
    }
}

/// A connection's place in [`Connections`], given up when dropped (the connection ended).
pub(crate) struct Registration {
    id: u64,
    connections: Arc<Connections>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.connections.lock().remove(&self.id);
    }
}

impl Connections {
    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Open>> {
        // The map is whole after any panic elsewhere: keep using it.
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Adds a connection whose socket and timer report to `activity`.
    pub(crate) fn register(
        self: &Arc<Self>,
        activity: Arc<Activity>,
    ) -> (Registration, Arc<Eviction>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let evict = Arc::new(Eviction::default());
        self.lock().insert(
            id,
            Open {
                activity,
                evict: Arc::clone(&evict),
            },
        );
        let registration = Registration {
            id,
            connections: Arc::clone(self),
        };
        (registration, evict)
    }

    /// Asks the connection that has waited longest for a request, without a byte of it, to
    /// close; answers whether there was one. A scan of the open connections: it runs only at the
    /// cap, once per connection accepted there.
    pub(crate) fn close_longest_idle(&self) -> bool {
        let open = self.lock();
        let longest = open
            .values()
            .filter(|c| !c.evict.chosen.load(Ordering::Relaxed))
            .filter_map(|c| c.activity.idle_since().map(|since| (since, c)))
            .min_by_key(|(since, _)| *since);
        match longest {
            Some((_, connection)) => {
                connection.evict.chosen.store(true, Ordering::Relaxed);
                // A permit is kept if the connection is not waiting on it yet.
                connection.evict.notify.notify_one();
                metrics::counter!("pathdb_connections_evicted_total").increment(1);
                true
            }
            None => false,
        }
    }
}
