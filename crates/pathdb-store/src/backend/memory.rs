//! The in-memory reference backend: a `BTreeMap` behind a lock. It is the simplest correct
//! implementation of the contract, used to check the data API logic and as the model's twin.

use super::{Backend, Direction, Key, Reader, Record, SortRange, WriteBatch, WriteError, WriteOp};
use crate::model::error::StorageError;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, RwLock};

type Map = BTreeMap<Key, Record>;

/// A backend that keeps everything in memory; snapshots share the map until the next write.
#[derive(Default)]
pub struct InMemoryBackend {
    map: RwLock<Arc<Map>>,
}

impl InMemoryBackend {
    /// An empty store.
    pub fn new() -> InMemoryBackend {
        InMemoryBackend::default()
    }
}

/// A snapshot of an [`InMemoryBackend`].
pub struct MemoryReader {
    map: Arc<Map>,
}

impl Backend for InMemoryBackend {
    type Reader<'a> = MemoryReader;

    fn reader(&self) -> Result<MemoryReader, StorageError> {
        let map = self
            .map
            .read()
            .map_err(|_| StorageError::msg("lock poisoned"))?;
        Ok(MemoryReader {
            map: Arc::clone(&map),
        })
    }

    // `fast_point_reads` stays false: a reader waits for the lock while a write copies the
    // whole map (copy on write), which takes as long as the map is large.

    fn write(&self, batch: WriteBatch) -> Result<(), WriteError> {
        let mut guard = self
            .map
            .write()
            .map_err(|_| StorageError::msg("lock poisoned"))?;
        for (index, op) in batch.ops.iter().enumerate() {
            if let Some(expect) = op.expect() {
                let current = guard.get(op.key()).map(|r| r.version);
                let holds = expect.holds(current);
                if !holds {
                    return Err(WriteError::ConditionFailed { index });
                }
            }
        }
        // Copy on write: readers keep their snapshot.
        let map = Arc::make_mut(&mut guard);
        for op in batch.ops {
            match op {
                WriteOp::Put { key, record, .. } => {
                    map.insert(key, record);
                }
                WriteOp::Delete { key, .. } => {
                    map.remove(&key);
                }
                WriteOp::Check { .. } => {}
                WriteOp::Append { log, record } => {
                    let (first, last) = super::log_bounds(&log.sort);
                    let bound = |sort| Key {
                        partition: log.partition.clone(),
                        sort,
                    };
                    let n = map
                        .range(bound(first)..=bound(last))
                        .next_back()
                        .and_then(|(k, _)| super::log_number(&k.sort))
                        .unwrap_or(0);
                    let key = bound(super::log_entry(&log.sort, n + 1));
                    map.insert(key, record);
                }
            }
        }
        Ok(())
    }
}

impl Reader for MemoryReader {
    fn get(&self, key: &Key) -> Result<Option<Record>, StorageError> {
        Ok(self.map.get(key).cloned())
    }

    fn scan(
        &self,
        partition: &[u8],
        range: &SortRange,
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Record)>, StorageError> {
        if range.is_empty() {
            return Ok(Vec::new());
        }
        let key = |sort: &Vec<u8>| Key {
            partition: partition.to_vec(),
            sort: sort.clone(),
        };
        let start = match &range.start {
            Bound::Included(s) => Bound::Included(key(s)),
            Bound::Excluded(s) => Bound::Excluded(key(s)),
            Bound::Unbounded => Bound::Included(key(&Vec::new())),
        };
        let end = match &range.end {
            Bound::Included(e) => Bound::Included(key(e)),
            Bound::Excluded(e) => Bound::Excluded(key(e)),
            Bound::Unbounded => Bound::Excluded(Key {
                partition: [partition, &[0]].concat(),
                sort: Vec::new(),
            }),
        };
        let iter = self
            .map
            .range((start, end))
            .map(|(k, r)| (k.sort.clone(), r.clone()));
        Ok(match direction {
            Direction::Forward => iter.take(limit).collect(),
            Direction::Reverse => iter.rev().take(limit).collect(),
        })
    }

    fn scan_all(
        &self,
        after: Option<&Key>,
        limit: usize,
    ) -> Result<Vec<(Key, Record)>, StorageError> {
        let start = after.map_or(Bound::Unbounded, |k| Bound::Excluded(k.clone()));
        Ok(self
            .map
            .range((start, Bound::Unbounded))
            .take(limit)
            .map(|(k, r)| (k.clone(), r.clone()))
            .collect())
    }

    fn partitions(&self, after: Option<&[u8]>, limit: usize) -> Result<Vec<Vec<u8>>, StorageError> {
        let mut out: Vec<Vec<u8>> = Vec::new();
        // The smallest key of a partition after `p` is (p ++ 00, []): seek there each time, so
        // a partition costs one seek however many records it holds.
        let mut from = match after {
            Some(p) => Bound::Included(Key {
                partition: [p, &[0]].concat(),
                sort: Vec::new(),
            }),
            None => Bound::Unbounded,
        };
        while out.len() < limit {
            let Some((key, _)) = self.map.range((from, Bound::Unbounded)).next() else {
                break;
            };
            from = Bound::Included(Key {
                partition: [key.partition.as_slice(), &[0]].concat(),
                sort: Vec::new(),
            });
            out.push(key.partition.clone());
        }
        Ok(out)
    }
}
