//! The commits journaled and answered that redb does not hold yet.
//!
//! redb stays behind the journal: a commit is checked against a snapshot of redb with this
//! overlay merged over it, its rows go here (numbered by their journal commit) and into the
//! journal, whose `fdatasync` makes it durable, and readers merge the rows over their redb
//! snapshot. Nothing goes into redb per commit. A redb commit costs its pages, checksums and
//! freed-page lists whether it holds one put or a hundred, and a durable one (a checkpoint)
//! held redb's only write transaction for 20-30 ms, which every write queued behind it used to
//! wait (the tail of a put, docs/benchmarks.md). Instead, when a journal file is full, a
//! checkpoint on a thread of its own puts the overlay's rows of that file into redb in one
//! durable commit, while the committer goes on into the other file; once it is done the
//! overlay drops that file's layer ([`Overlay`]).
//!
//! A reader pairs the overlay with a snapshot by commit number: it takes the rows numbered
//! after the last commit the snapshot holds and up to the last commit published when the reader
//! was made. The snapshot is the committer's own (redb changes only at checkpoints, and the
//! committer hands readers its snapshot with the overlay over it); after a group went into redb
//! directly, until the next overlay, a reader opens one and reads that number (`META`'s
//! `journal`) in the snapshot's own transaction. So a snapshot from before the rows reached
//! redb sees them here, one from after sees them in redb and nothing here, and a reader never
//! sees a commit made after it, wherever it reads.

mod key;

use super::file_record::view_record;
use super::{Direction, Key, Reader, Record, RecordView, SortRange};
use crate::model::error::StorageError;
use key::{Bytes, Slice};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::{Bound, ControlFlow};
use std::sync::{Arc, PoisonError, RwLock};

/// A row's value: the record's bytes, or `None` where the commit removed the row.
type Value = Option<Arc<[u8]>>;
/// A row of the data table: partition and sort key.
type RowKey = (Vec<u8>, Vec<u8>);
/// A row and its newest value, as redb takes it.
pub(super) type Row = (RowKey, Value);
/// A row's partition, sort key and newest value, borrowed from the layer.
pub(super) type NewestRow<'r> = (&'r [u8], &'r [u8], &'r Value);
/// Every value commits gave a row, oldest first, each with its commit's number.
type Versions = Vec<(u64, Value)>;
/// A layer's rows: by partition, then by sort key. Two levels, so that a row is found with the
/// caller's slices (no key is copied to look one up) and a partition's rows are one map.
type Partitions = BTreeMap<Bytes, BTreeMap<Bytes, Versions>>;

/// The rows redb lacks: the commits since the last checkpoint began (`newer`), and, while one
/// runs, those it puts into redb (`older`). A checkpoint's layer is not written to once it
/// begins, so the checkpoint reads it without holding up the commits going into the newer one,
/// and once it is done the overlay drops the layer whole, without copying what is left.
/// Readers that paired an older snapshot with the two layers keep both.
#[derive(Default)]
pub(super) struct Overlay {
    newer: Arc<Layer>,
    older: Option<Arc<Layer>>,
}

impl Overlay {
    /// Commit `seq` (the newest, or the same as the newest) set the row to `value`.
    pub(super) fn set(&self, seq: u64, partition: &[u8], sort: &[u8], value: Value) {
        self.newer.set(seq, partition, sort, value);
    }

    /// Takes back every row commit `seq` set: it was not journaled, and nobody saw it.
    pub(super) fn retract(&self, seq: u64) {
        self.newer.retract(seq);
    }

    /// The overlay as a checkpoint of its commits so far begins: those in a layer of their own,
    /// which the checkpoint reads, and a new one for the commits after them.
    pub(super) fn rotated(&self) -> (Overlay, Arc<Layer>) {
        debug_assert!(self.older.is_none(), "one checkpoint at a time");
        let overlay = Overlay {
            newer: Arc::default(),
            older: Some(Arc::clone(&self.newer)),
        };
        (overlay, Arc::clone(&self.newer))
    }

    /// The overlay once the checkpoint is done: redb holds the older layer's rows.
    pub(super) fn settled(&self) -> Overlay {
        Overlay {
            newer: Arc::clone(&self.newer),
            older: None,
        }
    }

    /// The newest value of every row, in key order: what redb takes to hold every commit here.
    pub(super) fn newest(&self) -> Vec<Row> {
        let newer = self.newer.newest();
        match &self.older {
            None => newer,
            Some(older) => merge(newer, older.newest(), Direction::Forward, usize::MAX),
        }
    }

    /// Whether no commit set a row.
    pub(super) fn is_empty(&self) -> bool {
        self.newer.is_empty() && self.older.as_ref().is_none_or(|l| l.is_empty())
    }
}

/// Two layers' rows in `direction`'s order, the newer layer's value where both have a row, up to
/// the `limit`-th that holds a record.
fn merge<K: Ord>(
    newer: Vec<(K, Value)>,
    older: Vec<(K, Value)>,
    direction: Direction,
    limit: usize,
) -> Vec<(K, Value)> {
    let mut out = Vec::with_capacity(newer.len() + older.len());
    let mut newer = newer.into_iter().peekable();
    let mut older = older.into_iter().peekable();
    let mut records = 0;
    while records < limit {
        let take_newer = match (newer.peek(), older.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some((a, _)), Some((b, _))) => match direction {
                Direction::Forward => a <= b,
                Direction::Reverse => a >= b,
            },
        };
        let row = if take_newer {
            let Some(row) = newer.next() else { break };
            if older.peek().is_some_and(|(k, _)| *k == row.0) {
                older.next();
            }
            row
        } else {
            let Some(row) = older.next() else { break };
            row
        };
        records += usize::from(row.1.is_some());
        out.push(row);
    }
    out
}

/// Rows of commits, each with every value a commit gave it.
#[derive(Default)]
pub(super) struct Layer {
    /// No partition is left without rows.
    rows: RwLock<Partitions>,
}

impl Layer {
    /// Commit `seq` (the newest, or the same as the newest) set the row to `value`.
    fn set(&self, seq: u64, partition: &[u8], sort: &[u8], value: Value) {
        let mut rows = self.rows.write().unwrap_or_else(PoisonError::into_inner);
        // A partition's key is copied only for one the layer does not hold yet. A row's is
        // copied every time, and the row found in one search: most rows a commit sets are new
        // to the layer (every change log entry), and a search costs more than the copy.
        let sorts = match rows.get_mut(Slice::new(partition)) {
            Some(sorts) => sorts,
            None => rows.entry(Bytes(partition.to_vec())).or_default(),
        };
        let versions = sorts.entry(Bytes(sort.to_vec())).or_default();
        match versions.last_mut() {
            // A later batch of the same commit: only the commit's last value is ever read.
            Some((last, old)) if *last == seq => *old = value,
            _ => versions.push((seq, value)),
        }
    }

    /// Takes back every row commit `seq` set: it was not journaled, and nobody saw it.
    fn retract(&self, seq: u64) {
        let mut rows = self.rows.write().unwrap_or_else(PoisonError::into_inner);
        rows.retain(|_, sorts| {
            sorts.retain(|_, versions| {
                versions.retain(|(s, _)| *s < seq);
                !versions.is_empty()
            });
            !sorts.is_empty()
        });
    }

    /// The newest value of every row, in key order.
    fn newest(&self) -> Vec<Row> {
        self.read_newest(|rows| {
            rows.map(|(partition, sort, value)| {
                ((partition.to_vec(), sort.to_vec()), value.clone())
            })
            .collect()
        })
    }

    /// Runs `read` over the newest value of every row, in key order, with the layer's own keys
    /// (a checkpoint puts them into redb without copying them).
    pub(super) fn read_newest<T>(
        &self,
        read: impl FnOnce(&mut dyn Iterator<Item = NewestRow<'_>>) -> T,
    ) -> T {
        let rows = self.rows.read().unwrap_or_else(PoisonError::into_inner);
        let mut newest = rows.iter().flat_map(|(partition, sorts)| {
            sorts.iter().filter_map(move |(sort, versions)| {
                let (_, value) = versions.last()?;
                Some((partition.0.as_slice(), sort.0.as_slice(), value))
            })
        });
        read(&mut newest)
    }

    /// Whether no commit set a row.
    fn is_empty(&self) -> bool {
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
    /// What a reader sees of `overlay` over a snapshot holding the commits up to `holds`, when
    /// it sees those up to `upto`; `None` when the snapshot holds every one.
    pub(super) fn over(overlay: Arc<Overlay>, holds: u64, upto: u64) -> Option<View> {
        (holds < upto).then_some(View {
            overlay,
            after: holds,
            upto,
        })
    }

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
    pub(super) fn get(&self, partition: &[u8], sort: &[u8]) -> Option<Value> {
        let in_layer = |layer: &Layer| {
            let rows = layer.rows.read().unwrap_or_else(PoisonError::into_inner);
            let versions = rows.get(Slice::new(partition))?.get(Slice::new(sort))?;
            self.pick(versions)
        };
        in_layer(&self.overlay.newer).or_else(|| self.overlay.older.as_deref().and_then(in_layer))
    }

    /// The rows the view decides in `partition` within `range`, in `direction`, up to the
    /// `limit`-th that holds a record (the rows a merged scan of `limit` can reach: each of
    /// them comes out before any later row). Reads only the rows in the range, so that the
    /// newest entry of a log the overlay holds thousands of is one step away.
    fn range(
        &self,
        partition: &[u8],
        range: &SortRange,
        direction: Direction,
        limit: usize,
    ) -> Vec<(Vec<u8>, Value)> {
        let newer = self.layer_range(&self.overlay.newer, partition, range, direction, limit);
        match &self.overlay.older {
            None => newer,
            Some(older) => {
                // Each of the newer layer's rows hides at most one of the older's.
                let wanted = limit.saturating_add(newer.len());
                let older = self.layer_range(older, partition, range, direction, wanted);
                merge(newer, older, direction, limit)
            }
        }
    }

    /// [`View::range`] in one layer.
    fn layer_range(
        &self,
        layer: &Layer,
        partition: &[u8],
        range: &SortRange,
        direction: Direction,
        limit: usize,
    ) -> Vec<(Vec<u8>, Value)> {
        let rows = layer.rows.read().unwrap_or_else(PoisonError::into_inner);
        let Some(sorts) = rows.get(Slice::new(partition)) else {
            return Vec::new();
        };
        let within = sorts.range::<Slice, _>((
            range.start.as_ref().map(|s| Slice::new(s)),
            range.end.as_ref().map(|s| Slice::new(s)),
        ));
        let picked =
            |(s, versions): (&Bytes, &Versions)| self.pick(versions).map(|v| (s.0.clone(), v));
        let mut out = Vec::new();
        let mut records = 0;
        let mut keep = |row: (Vec<u8>, Value)| {
            records += usize::from(row.1.is_some());
            out.push(row);
            records < limit
        };
        match direction {
            Direction::Forward => {
                for row in within.filter_map(picked) {
                    if !keep(row) {
                        break;
                    }
                }
            }
            Direction::Reverse => {
                for row in within.rev().filter_map(picked) {
                    if !keep(row) {
                        break;
                    }
                }
            }
        }
        out
    }

    /// The rows the view decides after `after`, in key order, up to the `limit`-th that holds a
    /// record (as in [`View::range`]).
    fn rows_after(&self, after: Option<&Key>, limit: usize) -> Vec<(Key, Value)> {
        let newer = self.layer_rows_after(&self.overlay.newer, after, limit);
        match &self.overlay.older {
            None => newer,
            Some(older) => {
                let wanted = limit.saturating_add(newer.len());
                let older = self.layer_rows_after(older, after, wanted);
                merge(newer, older, Direction::Forward, limit)
            }
        }
    }

    /// [`View::rows_after`] in one layer.
    fn layer_rows_after(
        &self,
        layer: &Layer,
        after: Option<&Key>,
        limit: usize,
    ) -> Vec<(Key, Value)> {
        let rows = layer.rows.read().unwrap_or_else(PoisonError::into_inner);
        let first = after.map_or(Bound::Unbounded, |k| {
            Bound::Included(Slice::new(&k.partition))
        });
        let mut out = Vec::new();
        let mut records = 0;
        'partitions: for (p, sorts) in rows.range::<Slice, _>((first, Bound::Unbounded)) {
            // Within `after`'s own partition, only the rows past it.
            let start = match after {
                Some(k) if k.partition == p.0 => Bound::Excluded(Slice::new(&k.sort)),
                _ => Bound::Unbounded,
            };
            for (s, versions) in sorts.range::<Slice, _>((start, Bound::Unbounded)) {
                if records == limit {
                    break 'partitions;
                }
                if let Some(v) = self.pick(versions) {
                    records += usize::from(v.is_some());
                    let key = Key {
                        partition: p.0.clone(),
                        sort: s.0.clone(),
                    };
                    out.push((key, v));
                }
            }
        }
        out
    }

    /// The partitions after `after` in which the overlay holds a row (one step per partition,
    /// not per row).
    fn partitions_after(&self, after: Option<&[u8]>) -> BTreeSet<Vec<u8>> {
        let mut out = BTreeSet::new();
        for layer in std::iter::once(&self.overlay.newer).chain(&self.overlay.older) {
            let rows = layer.rows.read().unwrap_or_else(PoisonError::into_inner);
            let start = after.map_or(Bound::Unbounded, |p| Bound::Excluded(Slice::new(p)));
            out.extend(
                rows.range::<Slice, _>((start, Bound::Unbounded))
                    .map(|(p, _)| p.0.clone()),
            );
        }
        out
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
        let mine = self.view.range(partition, range, direction, limit);
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
        let mine = self.view.rows_after(after, limit);
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
        let touched = self.view.partitions_after(after);
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
        // Commits up to this one in the older layer (a checkpoint running), the rest in the newer.
        Option<u64>,
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
            prop::option::of(0u64..9),
        )
    }

    /// The base rows in a memory backend, the overlay, and what the merge must read: the base
    /// with every row the view decides replaced (or removed).
    fn build(
        (base, overlay, (after, upto), rotate): &Case,
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
        let mut rows = Overlay::default();
        let mut sorted = overlay.clone();
        sorted.sort_by_key(|(_, seq, _)| *seq);
        let mut decided: BTreeMap<Key, Option<Record>> = BTreeMap::new();
        let mut rotated = false;
        for (k, seq, value) in &sorted {
            if rotate.is_some_and(|r| *seq > r) && !rotated {
                rows = rows.rotated().0;
                rotated = true;
            }
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
        if rotate.is_some() && !rotated {
            rows = rows.rotated().0;
        }
        let view = View {
            overlay: Arc::new(rows),
            after: *after,
            upto: *upto,
        };
        (backend, view, model)
    }

    #[test]
    fn a_row_the_newer_layer_removes_does_not_cut_a_scan_short() {
        // The older layer (a running checkpoint's) holds two rows; the newer removes the first.
        // A scan of one must read past the removal into the older layer's second row.
        let case: Case = (
            vec![],
            vec![
                ((0, 1), 1, Some(1)),
                ((0, 2), 2, Some(2)),
                ((0, 1), 3, None),
            ],
            (0, 8),
            Some(2),
        );
        let (backend, view, _) = build(&case);
        let base = backend.reader().unwrap();
        let merged = Merged {
            base: &base,
            view: &view,
        };
        let all = SortRange {
            start: Bound::Unbounded,
            end: Bound::Unbounded,
        };
        let first = merged
            .scan(&key((0, 0)).partition, &all, Direction::Forward, 1)
            .unwrap();
        assert_eq!(first, vec![(key((0, 2)).sort, record(2))]);
        let rows = merged.scan_all(None, 1).unwrap();
        assert_eq!(rows, vec![(key((0, 2)), record(2))]);
    }

    #[test]
    fn a_partition_the_overlay_empties_is_not_listed() {
        let case: Case = (
            vec![((0, 1), 1), ((1, 1), 2)],
            vec![((0, 1), 1, None)],
            (0, 1),
            None,
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
