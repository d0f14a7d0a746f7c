//! The commits made while redb checkpoints: rows journaled and acknowledged, not in redb yet.
//!
//! A checkpoint (a durable redb commit of every page dirtied since the last one) holds redb's
//! only write transaction for as long as the pages take to reach the disk: 20-30 ms under load
//! on this project's machine, and every write queued behind it used to wait that long (the
//! tail of a put, docs/benchmarks.md). So the committer runs the checkpoint on a thread of its
//! own and goes on committing through the journal alone: each such commit's rows go here,
//! numbered by their journal commit, and readers merge them over their redb snapshot. When the
//! checkpoint is done the committer writes the rows into redb in one commit and the overlay is
//! dropped.
//!
//! A reader pairs the overlay with its snapshot by commit number: it takes the rows numbered
//! after the last commit its snapshot holds (`META`'s `journal`, read in the snapshot's own
//! transaction) and up to the last commit published when it was made. So a snapshot opened
//! before the rows reached redb sees them here, one opened after sees them in redb and nothing
//! here, and a reader never sees a commit made after it, wherever it reads.

use super::file_record::view_record;
use super::{Direction, Key, Reader, Record, RecordView, SortRange};
use crate::model::error::StorageError;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::{Bound, ControlFlow};
use std::sync::{Arc, PoisonError, RwLock};

/// A row's value: the record's bytes, or `None` where the commit removed the row.
type Value = Option<Arc<[u8]>>;
/// A row of the data table: partition and sort key.
type RowKey = (Vec<u8>, Vec<u8>);
/// Every value commits gave a row, oldest first, each with its commit's number.
type Versions = Vec<(u64, Value)>;

/// Rows committed since the checkpoint began, each with every value a commit gave it.
#[derive(Default)]
pub(super) struct Overlay {
    rows: RwLock<BTreeMap<RowKey, Versions>>,
}

impl Overlay {
    /// Commit `seq` (the newest, or the same as the newest) set the row to `value`.
    pub(super) fn set(&self, seq: u64, partition: &[u8], sort: &[u8], value: Value) {
        let mut rows = self.rows.write().unwrap_or_else(PoisonError::into_inner);
        let versions = rows.entry((partition.to_vec(), sort.to_vec())).or_default();
        match versions.last_mut() {
            // A later batch of the same commit: only the commit's last value is ever read.
            Some((last, old)) if *last == seq => *old = value,
            _ => versions.push((seq, value)),
        }
    }

    /// Takes back every row commit `seq` set: it was not journaled, and nobody saw it.
    pub(super) fn retract(&self, seq: u64) {
        let mut rows = self.rows.write().unwrap_or_else(PoisonError::into_inner);
        rows.retain(|_, versions| {
            versions.retain(|(s, _)| *s < seq);
            !versions.is_empty()
        });
    }

    /// The newest value of every row, in key order: what redb must take once the checkpoint is
    /// done.
    pub(super) fn newest(&self) -> Vec<(RowKey, Value)> {
        let rows = self.rows.read().unwrap_or_else(PoisonError::into_inner);
        rows.iter()
            .filter_map(|(key, versions)| versions.last().map(|(_, v)| (key.clone(), v.clone())))
            .collect()
    }

    /// Whether no commit set a row.
    pub(super) fn is_empty(&self) -> bool {
        self.rows
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty()
    }
}

/// The overlay as one reader sees it: commits numbered in `(after, upto]`.
#[derive(Clone)]
pub(super) struct View {
    pub(super) overlay: Arc<Overlay>,
    /// The last commit the reader's redb snapshot holds.
    pub(super) after: u64,
    /// The last commit made before the reader.
    pub(super) upto: u64,
}

impl View {
    /// The row's newest value this view sees, if a commit it sees set it.
    fn pick(&self, versions: &[(u64, Value)]) -> Option<Value> {
        versions
            .iter()
            .rev()
            .find(|(seq, _)| *seq > self.after && *seq <= self.upto)
            .map(|(_, v)| v.clone())
    }

    /// `Some(value)` where the view decides the row (`Some(None)`: removed), `None` where the
    /// snapshot does.
    fn get(&self, partition: &[u8], sort: &[u8]) -> Option<Value> {
        let rows = self
            .overlay
            .rows
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        rows.get(&(partition.to_vec(), sort.to_vec()))
            .and_then(|versions| self.pick(versions))
    }

    /// The rows the view decides in `partition` within `range`, in `direction`.
    fn range(
        &self,
        partition: &[u8],
        range: &SortRange,
        direction: Direction,
    ) -> Vec<(Vec<u8>, Value)> {
        let rows = self
            .overlay
            .rows
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let from = (partition.to_vec(), Vec::new());
        let mut out: Vec<(Vec<u8>, Value)> = rows
            .range(from..)
            .take_while(|((p, _), _)| p.as_slice() == partition)
            .filter(|((_, s), _)| range.contains(s))
            .filter_map(|((_, s), versions)| self.pick(versions).map(|v| (s.clone(), v)))
            .collect();
        if direction == Direction::Reverse {
            out.reverse();
        }
        out
    }

    /// Every row the view decides after `after`, in key order.
    fn rows_after(&self, after: Option<&Key>) -> Vec<(Key, Value)> {
        let rows = self
            .overlay
            .rows
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let start = match after {
            Some(k) => Bound::Excluded((k.partition.clone(), k.sort.clone())),
            None => Bound::Unbounded,
        };
        rows.range((start, Bound::Unbounded))
            .filter_map(|((p, s), versions)| {
                self.pick(versions).map(|v| {
                    (
                        Key {
                            partition: p.clone(),
                            sort: s.clone(),
                        },
                        v,
                    )
                })
            })
            .collect()
    }
}

/// A reader of a redb table (a snapshot's, or the one a checkpoint began from) with the
/// overlay merged over it.
pub(super) struct Merged<'a, R> {
    pub(super) base: &'a R,
    pub(super) view: &'a View,
}

impl<R: Reader> Reader for Merged<'_, R> {
    fn get(&self, key: &Key) -> Result<Option<Record>, StorageError> {
        match self.view.get(&key.partition, &key.sort) {
            Some(Some(bytes)) => Ok(Some(view_record(&bytes)?.to_record())),
            Some(None) => Ok(None),
            None => self.base.get(key),
        }
    }

    fn scan(
        &self,
        partition: &[u8],
        range: &SortRange,
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Record)>, StorageError> {
        super::scan_by_each(self, partition, range, direction, limit)
    }

    fn scan_each(
        &self,
        partition: &[u8],
        range: &SortRange,
        direction: Direction,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], RecordView<'_>) -> ControlFlow<()>,
    ) -> Result<(), StorageError> {
        if limit == 0 || range.is_empty() {
            return Ok(());
        }
        let mine = self.view.range(partition, range, direction);
        if mine.is_empty() {
            return self
                .base
                .scan_each(partition, range, direction, limit, visit);
        }
        // `first(a, b)`: a comes before b in this scan's order.
        let first = |a: &[u8], b: &[u8]| match direction {
            Direction::Forward => a < b,
            Direction::Reverse => a > b,
        };
        let mut next = 0;
        let mut left = limit;
        let mut failed = None;
        // Visits one entry; `Break` once the scan is over (the visitor's word, or the limit).
        let mut emit = |sort: &[u8], record: RecordView<'_>| {
            left -= 1;
            if visit(sort, record).is_break() || left == 0 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let mut over = false;
        self.base.scan_each(
            partition,
            range,
            direction,
            usize::MAX,
            &mut |sort, record| {
                while next < mine.len() && first(&mine[next].0, sort) {
                    next += 1;
                    if emit_mine(&mine[next - 1], &mut emit, &mut failed).is_break() {
                        over = true;
                        return ControlFlow::Break(());
                    }
                }
                if next < mine.len() && mine[next].0.as_slice() == sort {
                    // The overlay's value replaces the snapshot's.
                    next += 1;
                    let flow = emit_mine(&mine[next - 1], &mut emit, &mut failed);
                    over = flow.is_break();
                    return flow;
                }
                let flow = emit(sort, record);
                over = flow.is_break();
                flow
            },
        )?;
        if let Some(e) = failed {
            return Err(e);
        }
        if !over {
            for entry in &mine[next..] {
                if emit_mine(entry, &mut emit, &mut failed).is_break() {
                    break;
                }
            }
        }
        failed.map_or(Ok(()), Err)
    }

    fn scan_all(
        &self,
        after: Option<&Key>,
        limit: usize,
    ) -> Result<Vec<(Key, Record)>, StorageError> {
        let mine = self.view.rows_after(after);
        // Each of the overlay's rows hides at most one of the snapshot's.
        let theirs = self
            .base
            .scan_all(after, limit.saturating_add(mine.len()))?;
        let complete = theirs.len() < limit.saturating_add(mine.len());
        let mut out = Vec::with_capacity(limit.min(1024));
        let mut mine = mine.into_iter().peekable();
        let mut theirs = theirs.into_iter().peekable();
        while out.len() < limit {
            let take_mine = match (mine.peek(), theirs.peek()) {
                (None, None) => break,
                // Past the snapshot's last row read: only if the snapshot has no more.
                (Some(_), None) if !complete => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some((a, _)), Some((b, _))) => a <= b,
            };
            if take_mine {
                let Some((key, value)) = mine.next() else {
                    break;
                };
                if theirs.peek().is_some_and(|(k, _)| *k == key) {
                    theirs.next();
                }
                if let Some(bytes) = value {
                    out.push((key, view_record(&bytes)?.to_record()));
                }
            } else if let Some(entry) = theirs.next() {
                out.push(entry);
            }
        }
        Ok(out)
    }

    fn partitions(&self, after: Option<&[u8]>, limit: usize) -> Result<Vec<Vec<u8>>, StorageError> {
        // The partitions after `after` that the overlay touches.
        let touched: BTreeSet<Vec<u8>> = self
            .view
            .rows_after(None)
            .into_iter()
            .map(|(k, _)| k.partition)
            .filter(|p| after.is_none_or(|a| p.as_slice() > a))
            .collect();
        // Each touched partition may be emptied: read that many more of the snapshot's.
        let wanted = limit.saturating_add(touched.len());
        let theirs = self.base.partitions(after, wanted)?;
        let bound = (theirs.len() == wanted)
            .then(|| theirs.last().cloned())
            .flatten();
        let mut candidates: BTreeSet<Vec<u8>> = theirs.into_iter().collect();
        candidates.extend(
            touched
                .iter()
                .filter(|p| bound.as_ref().is_none_or(|b| *p <= b))
                .cloned(),
        );
        let mut out = Vec::new();
        for partition in candidates {
            if out.len() == limit {
                break;
            }
            let holds = !touched.contains(&partition) || {
                let mut any = false;
                self.scan_each(
                    &partition,
                    &SortRange {
                        start: Bound::Unbounded,
                        end: Bound::Unbounded,
                    },
                    Direction::Forward,
                    1,
                    &mut |_, _| {
                        any = true;
                        ControlFlow::Break(())
                    },
                )?;
                any
            };
            if holds {
                out.push(partition);
            }
        }
        Ok(out)
    }
}

/// Visits one of the overlay's rows, unless the commit removed it.
fn emit_mine(
    (sort, value): &(Vec<u8>, Value),
    emit: &mut dyn FnMut(&[u8], RecordView<'_>) -> ControlFlow<()>,
    failed: &mut Option<StorageError>,
) -> ControlFlow<()> {
    let Some(bytes) = value else {
        return ControlFlow::Continue(());
    };
    match view_record(bytes) {
        Ok(record) => emit(sort, record),
        Err(e) => {
            *failed = Some(e);
            ControlFlow::Break(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::file_record::encode_record;
    use crate::backend::{Backend, InMemoryBackend, WriteBatch, WriteOp};
    use proptest::prelude::*;

    fn record(n: u8) -> Record {
        Record {
            version: u64::from(n) + 1,
            created_at: 1,
            modified_at: 2,
            expires_at: n.is_multiple_of(3).then_some(i64::from(n)),
            value: vec![n; usize::from(n % 5)],
        }
    }

    fn key((p, s): (u8, u8)) -> Key {
        // Partitions of one or two bytes, sort keys of zero to two: prefixes of each other, the
        // shapes the merge must keep apart.
        Key {
            partition: if p < 3 { vec![b'p', p] } else { vec![b'p'] },
            sort: match s % 4 {
                0 => vec![],
                1 => vec![s],
                _ => vec![s, s % 7],
            },
        }
    }

    fn bound(b: Option<(bool, u8)>) -> Bound<Vec<u8>> {
        match b {
            None => Bound::Unbounded,
            Some((true, s)) => Bound::Included(vec![s]),
            Some((false, s)) => Bound::Excluded(vec![s]),
        }
    }

    type Case = (
        Vec<((u8, u8), u8)>,
        Vec<((u8, u8), u64, Option<u8>)>,
        (u64, u64),
    );

    fn case() -> impl Strategy<Value = Case> {
        // Few keys, so that the overlay often removes every row of a partition.
        let row = (0u8..4, 0u8..6);
        (
            prop::collection::vec((row.clone(), any::<u8>()), 0..10),
            prop::collection::vec(
                (row, 1u64..8, prop::option::weighted(0.5, any::<u8>())),
                0..24,
            ),
            (0u64..8, 0u64..9),
        )
    }

    /// The base rows in a memory backend, the overlay, and what the merge must read: the base
    /// with every row the view decides replaced (or removed).
    fn build(
        (base, overlay, (after, upto)): &Case,
    ) -> (InMemoryBackend, View, BTreeMap<Key, Record>) {
        let backend = InMemoryBackend::new();
        let mut model = BTreeMap::new();
        let ops = base
            .iter()
            .map(|(k, n)| {
                model.insert(key(*k), record(*n));
                WriteOp::Put {
                    key: key(*k),
                    record: record(*n),
                    expect: None,
                }
            })
            .collect::<Vec<_>>();
        // One batch may not name a key twice; later values win, as in the model.
        for op in ops {
            backend.write(WriteBatch { ops: vec![op] }).unwrap();
        }
        let rows = Arc::new(Overlay::default());
        let mut sorted = overlay.clone();
        sorted.sort_by_key(|(_, seq, _)| *seq);
        let mut decided: BTreeMap<Key, Option<Record>> = BTreeMap::new();
        for (k, seq, value) in &sorted {
            let k2 = key(*k);
            let bytes = value.map(|n| Arc::from(encode_record(&record(n)).as_slice()));
            rows.set(*seq, &k2.partition, &k2.sort, bytes);
            if *seq > *after && *seq <= *upto {
                decided.insert(k2, value.map(record));
            }
        }
        for (k, v) in decided {
            match v {
                Some(r) => model.insert(k, r),
                None => model.remove(&k),
            };
        }
        let view = View {
            overlay: rows,
            after: *after,
            upto: *upto,
        };
        (backend, view, model)
    }

    #[test]
    fn a_partition_the_overlay_empties_is_not_listed() {
        let case: Case = (
            vec![((0, 1), 1), ((1, 1), 2)],
            vec![((0, 1), 1, None)],
            (0, 1),
        );
        let (backend, view, _) = build(&case);
        let base = backend.reader().unwrap();
        let merged = Merged {
            base: &base,
            view: &view,
        };
        assert_eq!(
            merged.partitions(None, 1).unwrap(),
            vec![key((1, 0)).partition]
        );
    }

    proptest! {
        #[test]
        fn the_merge_reads_what_the_overlay_over_the_snapshot_holds(
            c in case(),
            p in 0u8..4,
            start in prop::option::of((any::<bool>(), 0u8..12)),
            end in prop::option::of((any::<bool>(), 0u8..12)),
            reverse in any::<bool>(),
            limit in 0usize..8,
            after in prop::option::of((0u8..4, 0u8..12)),
        ) {
            let (backend, view, model) = build(&c);
            let base = backend.reader().unwrap();
            let merged = Merged { base: &base, view: &view };
            for k in model.keys() {
                prop_assert_eq!(merged.get(k).unwrap(), model.get(k).cloned());
            }
            for (k, _, _) in &c.1 {
                let k = key(*k);
                prop_assert_eq!(merged.get(&k).unwrap(), model.get(&k).cloned());
            }
            let partition = key((p, 0)).partition;
            let range = SortRange { start: bound(start), end: bound(end) };
            let direction = if reverse { Direction::Reverse } else { Direction::Forward };
            let mut expected: Vec<(Vec<u8>, Record)> = model
                .iter()
                .filter(|(k, _)| k.partition == partition && range.contains(&k.sort))
                .map(|(k, r)| (k.sort.clone(), r.clone()))
                .collect();
            if reverse {
                expected.reverse();
            }
            expected.truncate(limit);
            prop_assert_eq!(merged.scan(&partition, &range, direction, limit).unwrap(), expected.clone());
            // A visitor that stops early stops the scan there.
            let mut seen = Vec::new();
            merged.scan_each(&partition, &range, direction, limit, &mut |s, _| {
                seen.push(s.to_vec());
                if seen.len() == 2 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
            }).unwrap();
            let first_two: Vec<Vec<u8>> = expected.iter().take(2).map(|(s, _)| s.clone()).collect();
            prop_assert_eq!(seen, first_two);

            let after = after.map(key);
            let all: Vec<(Key, Record)> = model
                .iter()
                .filter(|(k, _)| after.as_ref().is_none_or(|a| *k > a))
                .take(limit)
                .map(|(k, r)| (k.clone(), r.clone()))
                .collect();
            prop_assert_eq!(merged.scan_all(after.as_ref(), limit).unwrap(), all);
            let mut partitions: Vec<Vec<u8>> = model
                .keys()
                .map(|k| k.partition.clone())
                .filter(|q| after.as_ref().is_none_or(|a| *q > a.partition))
                .collect();
            partitions.dedup();
            partitions.truncate(limit);
            let after_partition = after.as_ref().map(|a| a.partition.as_slice());
            prop_assert_eq!(merged.partitions(after_partition, limit).unwrap(), partitions);
        }
    }
}
