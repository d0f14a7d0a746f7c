//! The embedded backend's reads: a snapshot of the redb table ([`FileReader`]), the reader over a
//! write transaction's table that the committer checks conditions with, and the record's bytes
//! in the table.

use super::file_record::{decode_record, view_record};
use super::overlay::{Merged, View};
use super::{Direction, Key, Reader, Record, RecordView, SortRange};
use crate::model::error::{StorageError, StorageErrorKind};
use redb::ReadableTable;
use std::ops::{Bound, ControlFlow};
use std::sync::Arc;

pub(super) fn storage(context: &'static str) -> impl Fn(redb::Error) -> StorageError {
    move |e| match e {
        redb::Error::Io(io) => StorageError::io(context, &io),
        // The handle is broken by an earlier failure, which the committer is repairing.
        redb::Error::PreviousIo => StorageError::msg(format!(
            "{context}: the file is being reopened after an I/O error"
        ))
        .with_kind(StorageErrorKind::Io),
        e => StorageError::new(context, e),
    }
}

/// A key of the table, borrowed from redb.
pub(super) type KeyGuard<'a> = redb::AccessGuard<'a, (&'static [u8], &'static [u8])>;
/// A value of the table, borrowed from redb.
pub(super) type ValueGuard<'a> = redb::AccessGuard<'a, &'static [u8]>;

/// A snapshot of a [`FileBackend`](crate::backend::FileBackend): a redb read transaction's data table, shared by the
/// readers opened between two commits.
#[derive(Clone)]
pub struct FileReader {
    pub(super) table: Arc<DataTable>,
    /// The commits journaled but not yet in redb that this snapshot lacks
    /// ([`super::overlay`]).
    pub(super) overlay: Option<View>,
}

impl FileReader {
    /// Runs `read` on the snapshot, with the overlay merged over it where there is one.
    #[inline]
    fn with<T>(&self, read: impl FnOnce(&dyn Reader) -> T) -> T {
        let table = TableReader(&*self.table);
        match &self.overlay {
            None => read(&table),
            Some(view) => read(&Merged { base: &table, view }),
        }
    }
}

/// The data table as a read transaction opened it.
pub(super) type DataTable = redb::ReadOnlyTable<(&'static [u8], &'static [u8]), &'static [u8]>;

impl Reader for FileReader {
    fn get(&self, key: &Key) -> Result<Option<Record>, StorageError> {
        self.with(|r| r.get(key))
    }

    fn scan(
        &self,
        partition: &[u8],
        range: &SortRange,
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Record)>, StorageError> {
        self.with(|r| r.scan(partition, range, direction, limit))
    }

    fn scan_each(
        &self,
        partition: &[u8],
        range: &SortRange,
        direction: Direction,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], RecordView<'_>) -> ControlFlow<()>,
    ) -> Result<(), StorageError> {
        self.with(|r| r.scan_each(partition, range, direction, limit, visit))
    }

    fn scan_all(
        &self,
        after: Option<&Key>,
        limit: usize,
    ) -> Result<Vec<(Key, Record)>, StorageError> {
        self.with(|r| r.scan_all(after, limit))
    }

    fn partitions(&self, after: Option<&[u8]>, limit: usize) -> Result<Vec<Vec<u8>>, StorageError> {
        self.with(|r| r.partitions(after, limit))
    }
}

/// Reads through any redb data table: a read transaction's (a [`FileReader`]) or, for a batch
/// planned again inside a group commit, the write transaction's.
pub(super) struct TableReader<'t, T>(pub(super) &'t T);

impl<T: ReadableTable<(&'static [u8], &'static [u8]), &'static [u8]>> Reader
    for TableReader<'_, T>
{
    fn get(&self, key: &Key) -> Result<Option<Record>, StorageError> {
        self.0
            .get((key.partition.as_slice(), key.sort.as_slice()))
            .map_err(|e| storage("read")(e.into()))?
            .map(|g| decode_record(g.value()))
            .transpose()
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
        // The partition's keys lie in [(p, []), (p ++ 00, [])): p ++ 00 is the next partition key.
        let next_partition: Vec<u8> = [partition, &[0]].concat();
        let start: Bound<(&[u8], &[u8])> = match &range.start {
            Bound::Included(s) => Bound::Included((partition, s.as_slice())),
            Bound::Excluded(s) => Bound::Excluded((partition, s.as_slice())),
            Bound::Unbounded => Bound::Included((partition, &[][..])),
        };
        let end: Bound<(&[u8], &[u8])> = match &range.end {
            Bound::Included(e) => Bound::Included((partition, e.as_slice())),
            Bound::Excluded(e) => Bound::Excluded((partition, e.as_slice())),
            Bound::Unbounded => Bound::Excluded((next_partition.as_slice(), &[][..])),
        };
        let iter = self
            .0
            .range::<(&[u8], &[u8])>((start, end))
            .map_err(|e| storage("scan")(e.into()))?;
        let mut each = |entry: Result<(KeyGuard<'_>, ValueGuard<'_>), redb::StorageError>| {
            let (k, v) = entry.map_err(|e| storage("scan")(e.into()))?;
            let record = view_record(v.value())?;
            Ok::<_, StorageError>(visit(k.value().1, record))
        };
        // Two loops rather than a boxed iterator: each direction's `next` inlines.
        match direction {
            Direction::Forward => {
                for entry in iter.take(limit) {
                    if each(entry)?.is_break() {
                        break;
                    }
                }
            }
            Direction::Reverse => {
                for entry in iter.rev().take(limit) {
                    if each(entry)?.is_break() {
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    fn scan_all(
        &self,
        after: Option<&Key>,
        limit: usize,
    ) -> Result<Vec<(Key, Record)>, StorageError> {
        let start: Bound<(&[u8], &[u8])> = match after {
            Some(k) => Bound::Excluded((k.partition.as_slice(), k.sort.as_slice())),
            None => Bound::Unbounded,
        };
        let iter = self
            .0
            .range::<(&[u8], &[u8])>((start, Bound::Unbounded))
            .map_err(|e| storage("scan")(e.into()))?;
        let mut out = Vec::with_capacity(limit.min(1024));
        for entry in iter.take(limit) {
            let (k, v) = entry.map_err(|e| storage("scan")(e.into()))?;
            let (partition, sort) = k.value();
            out.push((
                Key {
                    partition: partition.to_vec(),
                    sort: sort.to_vec(),
                },
                decode_record(v.value())?,
            ));
        }
        Ok(out)
    }

    fn partitions(&self, after: Option<&[u8]>, limit: usize) -> Result<Vec<Vec<u8>>, StorageError> {
        let mut out: Vec<Vec<u8>> = Vec::new();
        // One seek per partition: the first key at or after (p ++ 00, []) is in the next one.
        let mut next: Option<Vec<u8>> = after.map(|p| [p, &[0]].concat());
        while out.len() < limit {
            let start: Bound<(&[u8], &[u8])> = match &next {
                Some(p) => Bound::Included((p.as_slice(), &[][..])),
                None => Bound::Unbounded,
            };
            let mut iter = self
                .0
                .range::<(&[u8], &[u8])>((start, Bound::Unbounded))
                .map_err(|e| storage("scan")(e.into()))?;
            let Some(entry) = iter.next() else { break };
            let (k, _) = entry.map_err(|e| storage("scan")(e.into()))?;
            let partition = k.value().0.to_vec();
            next = Some([partition.as_slice(), &[0]].concat());
            out.push(partition);
        }
        Ok(out)
    }
}
