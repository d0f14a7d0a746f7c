//! Who waits for which group's next commit: the change feed's wake-ups, per group.
//!
//! A waiting feed (a long poll, an event stream, [`Store::wait_changes`](crate::store::Store::wait_changes))
//! reads one group's change log, so only a commit that appends to that log can give it
//! something to read. A single event for the whole store woke every waiter at every commit:
//! with 4,000 open streams, each put woke 4,000 tasks that each read the log again for nothing,
//! and the puts' p99 went from 1 ms to 186 ms (issue 22). Here each group that has waiters has
//! an event of its own, and a commit wakes the groups whose logs it appended to, no others.
//!
//! The map only holds groups with waiters: a commit removes the events it notifies (their
//! listeners are woken all the same, and the next listener of the group makes a new one), and
//! the events whose listeners all went away without a commit are swept out as the map grows.

use crate::backend::{WriteBatch, WriteOp};
use crate::encoding::layout;
use event_listener::{Event, EventListener};
use std::collections::HashMap;
use std::hash::BuildHasher as _;
use std::sync::{Mutex, PoisonError};

/// Independent locks over the groups, so that commits and listeners of different groups
/// rarely meet on one.
const SHARDS: usize = 16;
/// A shard sweeps out events without listeners when it holds this many more than after its
/// last sweep (so a sweep costs O(1) per insertion, amortized).
const SWEEP_SLACK: usize = 64;

/// The groups a batch appends change log entries to: whose waiters its commit wakes.
#[derive(Debug, Default)]
pub(crate) struct ChangedGroups(Vec<Vec<u8>>);

impl ChangedGroups {
    /// The groups of `batch`'s change log appends (each once).
    pub(crate) fn of(batch: &WriteBatch) -> ChangedGroups {
        let mut groups: Vec<Vec<u8>> = Vec::new();
        for op in &batch.ops {
            if let WriteOp::Append { log, .. } = op
                && layout::is_change_log(log)
                && !groups.contains(&log.partition)
            {
                groups.push(log.partition.clone());
            }
        }
        ChangedGroups(groups)
    }

    /// These groups and `other`'s.
    pub(crate) fn merge(&mut self, other: ChangedGroups) {
        for group in other.0 {
            if !self.0.contains(&group) {
                self.0.push(group);
            }
        }
    }
}

/// One lock's share of the groups.
#[derive(Default)]
struct Shard {
    events: HashMap<Vec<u8>, Event, foldhash::fast::RandomState>,
    /// How many events the last sweep left.
    swept_to: usize,
}

/// The events of the groups that have waiters.
pub(crate) struct Waiters {
    shards: [Mutex<Shard>; SHARDS],
    /// Picks a group's shard (keyed per process, so that no one can aim many groups at one).
    /// foldhash, as the events' maps, seeded at random: every commit that logs hashes its
    /// groups here twice.
    hasher: foldhash::fast::RandomState,
}

impl Waiters {
    pub(crate) fn new() -> Waiters {
        Waiters {
            shards: std::array::from_fn(|_| Mutex::new(Shard::default())),
            hasher: foldhash::fast::RandomState::default(),
        }
    }

    fn shard(&self, partition: &[u8]) -> std::sync::MutexGuard<'_, Shard> {
        let index = (self.hasher.hash_one(partition) % SHARDS as u64) as usize;
        // A panic while a shard was locked left no half-done change: each step is one map
        // operation.
        self.shards[index]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// A listener that completes at the next commit that appends to the change log of the group
    /// whose partition key is `partition`. Create it before reading the log, so that no commit
    /// falls between.
    pub(crate) fn listen(&self, partition: &[u8]) -> EventListener {
        let mut shard = self.shard(partition);
        if let Some(event) = shard.events.get(partition) {
            return event.listen();
        }
        if shard.events.len() >= shard.swept_to + SWEEP_SLACK {
            // Groups whose waiters all left (a closed stream, a finished poll) before any commit
            // removed their event.
            shard.events.retain(|_, event| event.total_listeners() > 0);
            shard.swept_to = shard.events.len();
        }
        let event = Event::new();
        let listener = event.listen();
        shard.events.insert(partition.to_vec(), event);
        listener
    }

    /// Wakes the waiters of `groups`, after their commit.
    pub(crate) fn notify(&self, groups: &ChangedGroups) {
        for partition in &groups.0 {
            // Out of the map under the lock, notified outside it: waking thousands of listeners
            // must not hold up the group's other commits and listeners.
            let event = {
                let mut shard = self.shard(partition);
                let event = shard.events.remove(partition.as_slice());
                shard.swept_to = shard.swept_to.min(shard.events.len());
                event
            };
            if let Some(event) = event {
                event.notify(usize::MAX);
            }
        }
    }
}

#[cfg(test)]
mod test;
