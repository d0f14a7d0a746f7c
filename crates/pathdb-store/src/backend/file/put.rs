//! Rows into redb's data table, as a checkpoint, a direct commit or a close puts them: sorted,
//! each replacing the row under its key, and runs of new keys packed into full pages.
//!
//! A change log grows at its end: every entry a commit appends is a new key, one past the log's
//! last. Inserted one by one, such a run fills the log's last leaf and then splits it in half,
//! over and over: a checkpoint of a put load allocated about one new 4 KiB page a put, and its
//! branch pages were rebuilt at every split, which was most of the checkpoint thread's work
//! (docs/benchmarks.md). redb's cursor takes a run of keys that all fall into one gap between
//! the table's rows, buffers them, and builds the pages around the gap once, packed full. So a
//! row whose key was new, followed by the next entry of the same log, opens a cursor at the gap
//! after it, and the rows that follow go in through it while they fall into that gap. Any other
//! row (an overwrite, a removal) goes in with one `insert` or `remove`, as before.

use super::{Rows, storage};
use crate::backend::overlay::NewestRow;
use crate::model::error::StorageError;
use std::cmp::Ordering;
use std::iter::Peekable;
use std::ops::Bound;

type Table<'t> = redb::Table<'t, (&'static [u8], &'static [u8]), &'static [u8]>;

/// Puts `rows`, in key order, into `table`: each row's value replaces the one under its key, a
/// `None` removes it. Rows out of order go in too, one by one.
// Kept out of line: a profile finds a checkpoint's inserts by this name
// (scripts/profile-put-split.py); it is called once a checkpoint.
#[inline(never)]
pub(in crate::backend) fn put_sorted<'r>(
    table: &mut Table<'_>,
    rows: impl Iterator<Item = NewestRow<'r>>,
) -> Result<(), StorageError> {
    let mut rows = rows.peekable();
    while let Some((partition, sort, value)) = rows.next() {
        let Some(value) = value else {
            Rows::remove(table, partition, sort)?;
            continue;
        };
        let replaced = table
            .insert((partition, sort), &**value)
            .map_err(|e| storage("write")(e.into()))?
            .is_some();
        let appending = !replaced
            && rows
                .peek()
                .is_some_and(|&(p, s, v)| v.is_some() && p == partition && next_entry(sort, s));
        if appending {
            put_gap(table, (partition, sort), &mut rows)?;
        }
    }
    Ok(())
}

/// Whether `next` is the entry after `sort` in one log: the same prefix, and a number one
/// greater in the last 8 bytes (see [`crate::backend::log_entry`]).
fn next_entry(sort: &[u8], next: &[u8]) -> bool {
    let Some(at) = sort.len().checked_sub(8) else {
        return false;
    };
    next.len() == sort.len()
        && sort[..at] == next[..at]
        && crate::backend::log_number(sort)
            .and_then(|n| n.checked_add(1))
            .is_some_and(|n| crate::backend::log_number(next) == Some(n))
}

/// Puts the rows that follow `after` and fall, like it, into one gap of `table` (none of their
/// keys is there: they lie between `after` and the next key the table holds), through a
/// cursor: redb builds the pages around the gap once they are all in.
fn put_gap<'r, I: Iterator<Item = NewestRow<'r>>>(
    table: &mut Table<'_>,
    after: (&[u8], &[u8]),
    rows: &mut Peekable<I>,
) -> Result<(), StorageError> {
    let mut cursor = table
        .upper_bound_mut(Bound::Included(after))
        .map_err(|e| storage("write")(e.into()))?;
    let end: Option<(Vec<u8>, Vec<u8>)> = cursor
        .peek_next()
        .map_err(|e| storage("read")(e.into()))?
        .map(|(key, _)| {
            let (partition, sort) = key.value();
            (partition.to_vec(), sort.to_vec())
        });
    let mut last = after;
    while let Some(&(partition, sort, Some(value))) = rows.peek() {
        let key = (partition, sort);
        let in_gap = key.cmp(&last) == Ordering::Greater
            && end
                .as_ref()
                .is_none_or(|(p, s)| key.cmp(&(p.as_slice(), s.as_slice())) == Ordering::Less);
        if !in_gap {
            break;
        }
        match cursor.insert_before(key, &**value) {
            Ok(()) => {}
            // Not reached for a key in the gap; the caller puts it in as any other row.
            Err(redb::CursorError::UnorderedKey) => break,
            Err(e) => return Err(storage("write")(e.into())),
        }
        last = key;
        rows.next();
    }
    cursor.close().map_err(|e| storage("write")(e.into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use redb::{ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};
    use std::collections::BTreeMap;
    use std::sync::Arc;

    const TABLE: TableDefinition<(&[u8], &[u8]), &[u8]> = TableDefinition::new("t");

    /// Rows of one transaction: key and value (`None`: removed).
    type Batch = Vec<((Vec<u8>, Vec<u8>), Option<Vec<u8>>)>;

    fn entry(n: u64) -> Vec<u8> {
        crate::backend::log_entry(&[0xff, 0xff], n)
    }

    /// Puts each batch in its own transaction through `put_sorted`, and the same batches into
    /// a map; the table must hold what the map holds.
    fn check(batches: &[Batch]) {
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("db")).unwrap();
        let mut model = BTreeMap::new();
        for batch in batches {
            let values: Vec<Option<Arc<[u8]>>> = batch
                .iter()
                .map(|(_, v)| v.as_deref().map(Arc::from))
                .collect();
            let txn = db.begin_write().unwrap();
            {
                let mut table = txn.open_table(TABLE).unwrap();
                let rows = batch
                    .iter()
                    .zip(&values)
                    .map(|(((p, s), _), v)| (p.as_slice(), s.as_slice(), v));
                put_sorted(&mut table, rows).unwrap();
            }
            txn.commit().unwrap();
            for (key, value) in batch {
                match value {
                    Some(v) => model.insert(key.clone(), v.clone()),
                    None => model.remove(key),
                };
            }
        }
        let txn = db.begin_read().unwrap();
        let table = txn.open_table(TABLE).unwrap();
        let stored: Vec<_> = table
            .iter()
            .unwrap()
            .map(|row| {
                let (k, v) = row.unwrap();
                let (p, s) = k.value();
                ((p.to_vec(), s.to_vec()), v.value().to_vec())
            })
            .collect();
        let expected: Vec<_> = model.into_iter().collect();
        assert_eq!(stored, expected);
    }

    #[test]
    fn a_log_appended_over_checkpoints_reads_back_whole() {
        // Three groups, each with items and a log, over a few transactions: the runs of
        // entries go through the cursor, next to items before them and groups after them.
        let mut batches = Vec::new();
        let mut next = [1u64; 3];
        for round in 0..4u8 {
            let mut batch = Vec::new();
            for (g, n) in next.iter_mut().enumerate() {
                let partition = vec![b'g', g as u8];
                batch.push((
                    (partition.clone(), vec![b'i', round]),
                    Some(vec![round; 40]),
                ));
                for _ in 0..(50 + 30 * g) {
                    batch.push(((partition.clone(), entry(*n)), Some(vec![g as u8; 300])));
                    *n += 1;
                }
            }
            batch.sort_by(|a, b| a.0.cmp(&b.0));
            batches.push(batch);
        }
        check(&batches);
    }

    #[test]
    fn a_log_appended_in_runs_fills_its_pages() {
        // 20 checkpoints of 100 entries of 300 bytes each in 4 groups: one by one, each log's
        // last leaf splits in half again and again, leaving pages about half full; through the
        // cursor, a run is packed into full pages.
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("db")).unwrap();
        let value: Option<Arc<[u8]>> = Some(Arc::from(vec![7u8; 300]));
        for round in 0..20u64 {
            let mut rows = Vec::new();
            for g in 0..4u8 {
                for n in 0..100 {
                    rows.push((vec![b'g', g], entry(round * 100 + n + 1)));
                }
            }
            let txn = db.begin_write().unwrap();
            {
                let mut table = txn.open_table(TABLE).unwrap();
                let rows = rows
                    .iter()
                    .map(|(p, s)| (p.as_slice(), s.as_slice(), &value));
                put_sorted(&mut table, rows).unwrap();
            }
            txn.commit().unwrap();
        }
        let txn = db.begin_read().unwrap();
        let stats = txn.open_table(TABLE).unwrap().stats().unwrap();
        let full = stats.stored_bytes().div_ceil(4096);
        assert!(
            stats.leaf_pages() <= full + full / 5 + 4,
            "{} leaf pages for {} pages of rows",
            stats.leaf_pages(),
            full
        );
    }

    #[test]
    fn entries_the_table_already_holds_are_replaced() {
        // A checkpoint that redb committed but whose journal was not yet let go is put again
        // after a crash: its entries are there already, with the same or other values.
        let p = b"g".to_vec();
        let first: Vec<_> = (1..=40)
            .map(|n| ((p.clone(), entry(n)), Some(vec![1; 200])))
            .collect();
        let again: Vec<_> = (20..=80)
            .map(|n| ((p.clone(), entry(n)), Some(vec![2; 200])))
            .collect();
        check(&[first, again]);
    }

    #[test]
    fn a_run_stops_at_the_next_row_the_table_holds() {
        // Entries 1, 2 and 5 are there; a run from 3 to 9 must go around 5.
        let p = b"g".to_vec();
        let row = |n: u64, v: u8| ((p.clone(), entry(n)), Some(vec![v; 100]));
        let held = vec![row(1, 1), row(2, 1), row(5, 1)];
        let run = (3..=9).map(|n| row(n, 2)).collect();
        check(&[held, run]);
    }

    fn key() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
        // Few partitions and sort keys that are often log entries, so runs, gaps and keys
        // already held all come up.
        (
            prop::sample::select(vec![b"a".to_vec(), b"b".to_vec()]),
            prop_oneof![
                (0u64..40).prop_map(entry),
                prop::collection::vec(0u8..4, 0..3),
            ],
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn the_table_holds_what_the_rows_say(
            batches in prop::collection::vec(
                prop::collection::btree_map(
                    key(),
                    prop::option::weighted(0.85, prop::collection::vec(any::<u8>(), 0..600)),
                    0..120,
                ),
                1..5,
            ),
        ) {
            let batches: Vec<Vec<_>> = batches.into_iter().map(|b| b.into_iter().collect()).collect();
            check(&batches);
        }
    }
}
