//! Writes planned on what the store knows, not on a read: a put or delete of one item in a group
//! without a change log ([`Definition::changes`](crate::Definition::changes)).
//!
//! Planning a write reads the item first: its version is the condition the write commits on
//! and the new version is one more. On DynamoDB that read is a request and a read unit of its
//! own. Where the write needs nothing else of the old item (no log entry with its before image,
//! no aliases to free, no history), the record this process last wrote at the path says the
//! same, and a path it never wrote is most often new. [`Known`] keeps those records, and
//! [`guessable`] says which operations may be planned on them; the plan reads through
//! [`Guessed`], which answers the item's read from what is known ("no record" when nothing
//! is).
//!
//! A guess never decides anything: the write commits only on the condition the guess implies
//! (the version it saw, or no record at all), so a wrong guess fails that condition, writes
//! nothing, and the operation is planned again on a real read (write/commit.rs). A plan that
//! fails on a guess (its caller's own condition, say) is likewise made again on a read before
//! it answers.

use crate::backend::{Direction, Key, Reader, Record, SortRange};
use crate::model::error::StorageError;
use crate::namespaces::definitions::{Definitions, group_logged};
use crate::write::ops::TxOp;
use pathdb_keys::KeyPath;
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// The records a store remembers, up to a budget of bytes.
pub(crate) struct Known {
    budget: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    records: HashMap<Key, Record>,
    bytes: usize,
}

/// What a remembered record costs the budget besides its value.
const OVERHEAD: usize = 96;

impl Known {
    /// Remembers up to `budget` bytes of records; 0: none (every write reads first).
    pub(crate) fn new(budget: usize) -> Known {
        Known {
            budget,
            state: Mutex::new(State::default()),
        }
    }

    /// Whether writes may be planned on what is known.
    pub(crate) fn enabled(&self) -> bool {
        self.budget > 0
    }

    /// What is known at `key`: the record last written there, or `None` (a guess of no record).
    pub(crate) fn guess(&self, key: &Key) -> Option<Record> {
        self.lock().records.get(key).cloned()
    }

    /// `record` was committed at `key`.
    pub(crate) fn learn(&self, key: &Key, record: &Record) {
        let size = cost(key, record);
        // An expiring record is left to a read: the sweeper replaces it with a tombstone of
        // the same version, which a guess could not tell from it.
        if record.expires_at.is_some() || size > self.budget / 64 {
            // One large record would push out many small ones: leave it to a read.
            self.forget(key);
            return;
        }
        let mut state = self.lock();
        if state.bytes + size > self.budget {
            // Crude but bounded: start over. A forgotten record costs one read, never a wrong
            // answer.
            state.records.clear();
            state.bytes = 0;
        }
        if let Some(old) = state.records.insert(key.clone(), record.clone()) {
            state.bytes -= cost(key, &old);
        }
        state.bytes += size;
    }

    /// What is known at `key` is no longer true (or never was).
    pub(crate) fn forget(&self, key: &Key) {
        let mut state = self.lock();
        if let Some(old) = state.records.remove(key) {
            state.bytes -= cost(key, &old);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn cost(key: &Key, record: &Record) -> usize {
    key.partition.len() + key.sort.len() + record.value.len() + OVERHEAD
}

/// The item `ops` writes, when they may be planned on what is known: one put (not asking for
/// history) or one delete, of an item in a group without a change log, whose namespace has no
/// aliases, keeps no history and has no migration steps (a namespace's rewrite to its newest
/// version rewrites items in place at the same version: write/rewrite.rs).
pub(crate) fn guessable(ops: &[TxOp], definitions: &Definitions) -> Option<Key> {
    let path = single_item(ops)?;
    if group_logged(definitions, path) {
        return None;
    }
    if let Some(compiled) = definitions.get(path.last().namespace().as_str())
        && (!compiled.aliases.is_empty()
            || compiled.stored.definition.history.is_some()
            || compiled.chain.has_steps())
    {
        return None;
    }
    Some(Key {
        partition: path.partition_key(),
        sort: path.sort_key(),
    })
}

/// The path of the one item `ops` write, when they are a put (not asking for history) or a
/// delete of it: what [`guessable`] looks at before it needs the definitions.
pub(crate) fn single_item(ops: &[TxOp]) -> Option<&KeyPath> {
    match ops {
        [TxOp::Put { path, options, .. }] if !options.history => Some(path),
        [TxOp::Delete { path, .. }] => Some(path),
        _ => None,
    }
}

/// A reader whose read of one key answers a guess; every other read goes to `inner`. The
/// reads of several keys at once take the trait's defaults, one `get` each: a plan of one put
/// or delete without aliases reads only its item.
pub(crate) struct Guessed<'a, R: ?Sized> {
    pub(crate) inner: &'a R,
    pub(crate) key: &'a Key,
    pub(crate) guess: Option<Record>,
}

impl<R: Reader + ?Sized> Reader for Guessed<'_, R> {
    fn get(&self, key: &Key) -> Result<Option<Record>, StorageError> {
        if key == self.key {
            Ok(self.guess.clone())
        } else {
            self.inner.get(key)
        }
    }

    fn scan(
        &self,
        partition: &[u8],
        range: &SortRange,
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Record)>, StorageError> {
        self.inner.scan(partition, range, direction, limit)
    }

    fn scan_all(
        &self,
        after: Option<&Key>,
        limit: usize,
    ) -> Result<Vec<(Key, Record)>, StorageError> {
        self.inner.scan_all(after, limit)
    }

    fn partitions(&self, after: Option<&[u8]>, limit: usize) -> Result<Vec<Vec<u8>>, StorageError> {
        self.inner.partitions(after, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u8) -> Key {
        Key {
            partition: vec![1],
            sort: vec![n],
        }
    }

    fn record(version: u64, bytes: usize) -> Record {
        Record {
            version,
            created_at: 1,
            modified_at: 1,
            expires_at: None,
            value: vec![b'x'; bytes],
        }
    }

    #[test]
    fn what_is_learned_is_guessed_until_forgotten() {
        let known = Known::new(1 << 20);
        assert_eq!(known.guess(&key(1)), None);
        known.learn(&key(1), &record(3, 10));
        assert_eq!(known.guess(&key(1)).map(|r| r.version), Some(3));
        known.learn(&key(1), &record(4, 10));
        assert_eq!(known.guess(&key(1)).map(|r| r.version), Some(4));
        known.forget(&key(1));
        assert_eq!(known.guess(&key(1)), None);
        assert_eq!(known.lock().bytes, 0);
    }

    #[test]
    fn the_budget_bounds_what_is_kept() {
        let known = Known::new(64 * 1024);
        for n in 0..=255u8 {
            known.learn(&key(n), &record(1, 500));
            assert!(known.lock().bytes <= 64 * 1024);
        }
        // A record above a 64th of the budget is not kept, and replaces nothing stale.
        known.learn(&key(7), &record(2, 1));
        known.learn(&key(7), &record(3, 2000));
        assert_eq!(known.guess(&key(7)), None);
        // Nor is an expiring one.
        known.learn(&key(8), &record(2, 1));
        known.learn(
            &key(8),
            &Record {
                expires_at: Some(5),
                ..record(3, 1)
            },
        );
        assert_eq!(known.guess(&key(8)), None);
        assert!(!Known::new(0).enabled());
    }
}
