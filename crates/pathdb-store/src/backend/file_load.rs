//! Building a new database file from a backup and the archived commits after it: what a
//! restore writes. Rows go straight into redb's table, in large non-durable commits, and the
//! file is made durable once, at the end, with the number of the last commit it holds, so that
//! its commits go on from there.
//!
//! A loader writes to a file of its own that nothing serves; the restore renames it into place
//! only when it is complete, so a failed restore leaves nothing a server could open.

use super::file_format::{DATA, begin_write, init, number, open_writable};
use super::file_read::storage;
use super::file_record::{decode_record, encode_record};
use super::journal::{self, Change};
use super::reserved::MARGIN;
use super::{Key, Record};
use crate::model::error::StorageError;
use redb::ReadableDatabase;
use std::path::{Path, PathBuf};

/// Rows written per redb transaction: bounds the pages a transaction holds in memory.
const ROWS_PER_COMMIT: usize = 20_000;

/// A row set (`Some` value) or removed (`None`): partition, sort key, value.
type Row = (Vec<u8>, Vec<u8>, Option<Vec<u8>>);

/// Writes a new database file; see the module.
pub struct FileLoader {
    db: Option<redb::Database>,
    path: PathBuf,
    /// Rows set (`Some`) and removed (`None`) since the last flush, in order.
    rows: Vec<Row>,
}

impl std::fmt::Debug for FileLoader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileLoader")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl FileLoader {
    /// Creates the database file at `path`, which must not exist.
    ///
    /// # Errors
    /// `path` exists, or it cannot be created.
    pub fn create(path: impl AsRef<Path>) -> Result<FileLoader, StorageError> {
        let path = path.as_ref();
        // `create_new` is the check and the claim in one step: two restores never share a file.
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| StorageError::io(format!("cannot create {}", path.display()), &e))?;
        let (db, _) = open_writable(path, None, MARGIN)?;
        init(&db)?;
        Ok(FileLoader {
            db: Some(db),
            path: path.to_owned(),
            rows: Vec::new(),
        })
    }

    /// Stores `record` under `key`.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn put(&mut self, key: &Key, record: &Record) -> Result<(), StorageError> {
        self.put_encoded(&key.partition, &key.sort, &encode_record(record))
    }

    /// Stores a row whose value is a record as the file backend encodes it.
    ///
    /// # Errors
    /// The value is not such a record; the file cannot be written.
    pub fn put_encoded(
        &mut self,
        partition: &[u8],
        sort: &[u8],
        value: &[u8],
    ) -> Result<(), StorageError> {
        decode_record(value)?;
        self.rows
            .push((partition.to_vec(), sort.to_vec(), Some(value.to_vec())));
        self.flush_if_full()
    }

    /// Applies a commit's payload (see [`super::tap`]): its rows set and removed.
    ///
    /// # Errors
    /// The payload is malformed; the file cannot be written.
    pub fn apply(&mut self, payload: &[u8]) -> Result<(), StorageError> {
        let changes = journal::changes(payload)
            .ok_or_else(|| StorageError::msg("a commit's changes are malformed"))?;
        for change in changes {
            self.rows.push(match change {
                Change::Set {
                    partition,
                    sort,
                    value,
                } => {
                    decode_record(value)?;
                    (partition.to_vec(), sort.to_vec(), Some(value.to_vec()))
                }
                Change::Remove { partition, sort } => (partition.to_vec(), sort.to_vec(), None),
            });
        }
        self.flush_if_full()
    }

    /// The record stored under `key`, as loaded so far.
    ///
    /// # Errors
    /// The file cannot be read.
    pub fn get(&mut self, key: &Key) -> Result<Option<Record>, StorageError> {
        self.flush()?;
        let db = self
            .db
            .as_ref()
            .ok_or_else(|| StorageError::msg("closed"))?;
        let txn = db
            .begin_read()
            .map_err(|e| storage("begin read")(e.into()))?;
        let table = txn
            .open_table(DATA)
            .map_err(|e| storage("open data table")(e.into()))?;
        table
            .get((key.partition.as_slice(), key.sort.as_slice()))
            .map_err(|e| storage("read")(e.into()))?
            .map(|g| decode_record(g.value()))
            .transpose()
    }

    /// Makes the file durable, holding every commit up to `commit`, and closes it.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn finish(mut self, commit: u64) -> Result<PathBuf, StorageError> {
        let db = self.db.take().ok_or_else(|| StorageError::msg("closed"))?;
        let mut txn = begin_write(&db)?;
        write_rows(&txn, &mut self.rows)?;
        number(&mut txn, commit, redb::Durability::Immediate)?;
        txn.commit().map_err(|e| storage("commit")(e.into()))?;
        drop(db);
        Ok(self.path.clone())
    }

    fn flush_if_full(&mut self) -> Result<(), StorageError> {
        if self.rows.len() < ROWS_PER_COMMIT {
            return Ok(());
        }
        self.flush()
    }

    fn flush(&mut self) -> Result<(), StorageError> {
        let db = self
            .db
            .as_ref()
            .ok_or_else(|| StorageError::msg("closed"))?;
        let mut txn = begin_write(db)?;
        write_rows(&txn, &mut self.rows)?;
        // Not durable: `finish` makes everything durable at once.
        txn.set_durability(redb::Durability::None)
            .map_err(|e| StorageError::new("set durability", e))?;
        txn.commit().map_err(|e| storage("commit")(e.into()))
    }
}

/// Writes `rows` in order, and empties it.
fn write_rows(txn: &redb::WriteTransaction, rows: &mut Vec<Row>) -> Result<(), StorageError> {
    let mut table = txn
        .open_table(DATA)
        .map_err(|e| storage("open data table")(e.into()))?;
    for (partition, sort, value) in rows.drain(..) {
        let key = (partition.as_slice(), sort.as_slice());
        match value {
            Some(value) => table.insert(key, value.as_slice()).map(drop),
            None => table.remove(key).map(drop),
        }
        .map_err(|e| storage("write")(e.into()))?;
    }
    Ok(())
}
