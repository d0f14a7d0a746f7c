//! Export: the resumable full scan and the JSON-lines format it is written in (write/import.rs
//! reads it back).
//!
//! An export is one JSON object per line: current items, history revisions (`"revision": true`)
//! and tombstones (`"deleted": true`: a deleted or expired path and the last version it used),
//! then one last line that says whether the export is complete and how many records it holds:
//! `{"export": "complete", "records": N, "skipped": K}`, or `"incomplete"` with an `"error"`.
//! A consumer that does not find a complete last line knows it holds a truncated export.
//!
//! Import never lowers a path's version and is idempotent: a record already present with the
//! same content is left alone, so a re-run of the same input after any failure converges to
//! the state a single clean run gives. See docs/export.md.

use crate::backend::{Backend, Key, Reader, Record};
use crate::encoding::layout;
use crate::encoding::record::{Kind as Found, classify, to_item};
use crate::encoding::token::{Kind, TokenKey};
use crate::model::error::{Error, StorageError};
use crate::model::item::Item;
use crate::model::item::Timestamp;
use crate::namespaces::definitions::{Definitions, item_in};
use crate::namespaces::versions::SchemaVersions;
use crate::read::list::decode_path;
use pathdb_keys::KeyPath;
use serde::Serialize;

/// One exported record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExportRecord {
    /// A current item.
    Item(Item),
    /// A history revision: the item as it was at its version.
    Revision(Item),
    /// What a deleted or expired item leaves: the last version its path used, so that a copy
    /// never uses that version again either.
    Tombstone {
        /// The deleted path.
        path: KeyPath,
        /// The last version the path used.
        version: u64,
        /// When it was deleted or expired.
        deleted_at: Timestamp,
    },
}

impl ExportRecord {
    /// The record's path.
    pub fn path(&self) -> &KeyPath {
        match self {
            ExportRecord::Item(item) | ExportRecord::Revision(item) => &item.path,
            ExportRecord::Tombstone { path, .. } => path,
        }
    }

    /// The record's version.
    pub fn version(&self) -> u64 {
        match self {
            ExportRecord::Item(item) | ExportRecord::Revision(item) => item.version,
            ExportRecord::Tombstone { version, .. } => *version,
        }
    }

    /// The key it is stored under, and the record stored there.
    pub(crate) fn stored(&self) -> (Key, Record) {
        match self {
            ExportRecord::Item(item) => (layout::item_key(&item.path), record_of(item)),
            ExportRecord::Revision(item) => (
                layout::revision_key(&layout::item_key(&item.path), item.version),
                record_of(item),
            ),
            ExportRecord::Tombstone {
                path,
                version,
                deleted_at,
            } => (
                layout::item_key(path),
                Record {
                    version: *version,
                    created_at: deleted_at.0,
                    modified_at: deleted_at.0,
                    expires_at: None,
                    value: Vec::new(),
                },
            ),
        }
    }
}

pub(crate) fn record_of(item: &Item) -> Record {
    Record {
        version: item.version,
        created_at: item.created_at.0,
        modified_at: item.modified_at.0,
        expires_at: item.expires_at.map(|t| t.0),
        value: item.value.as_str().as_bytes().to_vec(),
    }
}

impl Serialize for ExportRecord {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Revision<'a> {
            #[serde(flatten)]
            item: &'a Item,
            revision: bool,
        }
        #[derive(Serialize)]
        struct Tombstone<'a> {
            path: &'a KeyPath,
            version: u64,
            deleted_at: Timestamp,
            deleted: bool,
        }
        match self {
            ExportRecord::Item(item) => item.serialize(serializer),
            ExportRecord::Revision(item) => Revision {
                item,
                revision: true,
            }
            .serialize(serializer),
            ExportRecord::Tombstone {
                path,
                version,
                deleted_at,
            } => Tombstone {
                path,
                version: *version,
                deleted_at: *deleted_at,
                deleted: true,
            }
            .serialize(serializer),
        }
    }
}

/// The last line of an export.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ExportEnd {
    /// `complete`, or `incomplete` when the export stopped at an error.
    pub export: ExportStatus,
    /// Record lines before this one.
    pub records: u64,
    /// Stored entries that are not PathDB records (written by another tool), left out.
    #[serde(default)]
    pub skipped: u64,
    /// Why the export stopped, when incomplete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Whether an export holds everything.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExportStatus {
    /// Every record was written.
    Complete,
    /// The export stopped at an error: what precedes is a prefix of the data.
    Incomplete,
}

/// A page of the full scan.
#[derive(Clone, Debug)]
pub struct ScanPage {
    /// Records in key order: each group's items and tombstones, then its revisions.
    pub records: Vec<ExportRecord>,
    /// Stored entries in this page that are not PathDB records (their keys do not decode).
    pub skipped: u64,
    /// Present when more follow.
    pub cursor: Option<String>,
}

/// A scan cursor that continues after `key`.
pub(crate) fn encode_cursor(tokens: &TokenKey, key: &Key) -> String {
    let mut raw = Vec::with_capacity(2 + key.partition.len() + key.sort.len());
    raw.extend_from_slice(&(key.partition.len() as u16).to_be_bytes());
    raw.extend_from_slice(&key.partition);
    raw.extend_from_slice(&key.sort);
    tokens.seal(Kind::ScanCursor, &[], &raw)
}

fn decode_cursor(tokens: &TokenKey, cursor: &str) -> Result<Key, Error> {
    let invalid = || Error::InvalidPageToken("not a scan cursor of this database");
    let raw = tokens
        .open(Kind::ScanCursor, &[], cursor)
        .ok_or_else(invalid)?;
    let len = usize::from(u16::from_be_bytes(
        raw.get(..2)
            .ok_or_else(invalid)?
            .try_into()
            .map_err(|_| invalid())?,
    ));
    let partition = raw.get(2..2 + len).ok_or_else(invalid)?.to_vec();
    let sort = raw.get(2 + len..).ok_or_else(invalid)?.to_vec();
    Ok(Key { partition, sort })
}

/// What the full scan makes of one stored entry; `None` for the store's own entries.
fn export_record(key: &Key, record: Record, now: i64) -> Option<Result<ExportRecord, Error>> {
    let found = classify(key, &record, now);
    let item_sort = match found {
        // The store's own records are rebuilt by the writes an import makes: the change log
        // records the import's changes, sequences restart after the largest ids they find
        // (write/stages/ids.rs). Alias records are the items' too: an import writes them from its
        // namespace's templates.
        Found::Internal | Found::Alias { .. } => return None,
        Found::Foreign => {
            return Some(Err(
                StorageError::msg("a revision key without its item's").into()
            ));
        }
        Found::Revision(item_sort) => item_sort,
        Found::Item | Found::Gone => &key.sort[..],
    };
    let path = match decode_path(&key.partition, item_sort) {
        Ok(path) => path,
        Err(e) => return Some(Err(e)),
    };
    Some(match found {
        // History outlives its item, deleted or expired (docs/export.md).
        Found::Revision(_) => to_item(path, record).map(ExportRecord::Revision),
        Found::Item => to_item(path, record).map(ExportRecord::Item),
        // A tombstone, or an expired item the sweeper has not reached yet: what it will leave.
        _ => Ok(ExportRecord::Tombstone {
            path,
            version: record.version,
            deleted_at: Timestamp(record.expires_at.unwrap_or(record.modified_at)),
        }),
    })
}

/// A page of the full scan of `backend` at `now` ([`Store::scan`](crate::store::Store::scan)).
pub(crate) fn scan<B: Backend>(
    backend: &B,
    tokens: &TokenKey,
    now: i64,
    cursor: Option<&str>,
    limit: usize,
) -> Result<ScanPage, Error> {
    let after = cursor.map(|c| decode_cursor(tokens, c)).transpose()?;
    let reader = backend.reader()?;
    let (records, skipped, next) = scan_page(&reader, after, limit, now)?;
    Ok(ScanPage {
        records,
        skipped: skipped + reader.skipped(),
        cursor: next.as_ref().map(|key| encode_cursor(tokens, key)),
    })
}

impl<B: Backend> Exporter<'_, B> {
    /// The export ([`Store::export`](crate::store::Store::export)).
    pub(crate) fn export(
        &self,
        out: &mut dyn std::io::Write,
        progress: &mut dyn FnMut(u64),
    ) -> Result<ExportEnd, ExportError> {
        let mut end = ExportEnd {
            export: ExportStatus::Complete,
            records: 0,
            skipped: 0,
            error: None,
        };
        let fail = |end: &mut ExportEnd, out: &mut dyn std::io::Write, e: Error| {
            tracing::error!(error = %e, records = end.records, "export failed");
            end.export = ExportStatus::Incomplete;
            end.error = Some(e.to_string());
            write_line(out, &*end)?;
            out.flush()?;
            Err(ExportError::Store(e))
        };
        let reader = match self.backend.reader() {
            Ok(reader) => reader,
            Err(e) => return fail(&mut end, out, e.into()),
        };
        let now = self.now;
        let mut after: Option<Key> = None;
        loop {
            let (records, skipped, next) = match scan_page(&reader, after.take(), EXPORT_PAGE, now)
            {
                Ok(page) => page,
                Err(e) => return fail(&mut end, out, e),
            };
            end.skipped += skipped;
            let mut records = records;
            if let Some((definitions, versions)) = self.versions {
                for record in &mut records {
                    if let ExportRecord::Item(item) | ExportRecord::Revision(item) = record
                        && let Err(e) = item_in(definitions, item, versions)
                    {
                        return fail(&mut end, out, e);
                    }
                }
            }
            for record in &records {
                // Serialized whole before a byte is written: a record that cannot be (a value
                // another tool wrote that is not JSON) is left out, never half a line.
                match serde_json::to_string(record) {
                    Ok(line) => {
                        out.write_all(line.as_bytes())?;
                        out.write_all(b"\n")?;
                        end.records += 1;
                    }
                    Err(e) => {
                        tracing::warn!(path = %record.path(), error = %e,
                            "export: skipped a record whose value is not JSON");
                        end.skipped += 1;
                    }
                }
            }
            out.flush()?;
            progress(end.records);
            match next {
                Some(key) => after = Some(key),
                None => break,
            }
        }
        end.skipped += reader.skipped();
        write_line(out, &end)?;
        out.flush()?;
        if end.skipped > 0 {
            tracing::warn!(
                skipped = end.skipped,
                "export left out entries that are not PathDB records"
            );
        }
        Ok(end)
    }
}

/// What an export reads.
pub(crate) struct Exporter<'a, B> {
    /// The database.
    pub(crate) backend: &'a B,
    /// The time expiry is judged at.
    pub(crate) now: i64,
    /// The definitions and the versions values are written in (docs/migrations.md), when
    /// values need translating (read/list.rs's `migrations`).
    pub(crate) versions: Option<(&'a Definitions, &'a SchemaVersions)>,
}

/// Up to `limit` records after `after` from `reader`: the records, how many entries were not
/// PathDB records, and the key to continue after (`None`: the end).
fn scan_page<R: Reader>(
    reader: &R,
    mut after: Option<Key>,
    limit: usize,
    now: i64,
) -> Result<(Vec<ExportRecord>, u64, Option<Key>), Error> {
    let mut records = Vec::new();
    let mut skipped = 0;
    let limit = limit.max(1);
    loop {
        let batch = reader.scan_all(after.as_ref(), limit - records.len() + 1)?;
        let exhausted = batch.len() <= limit - records.len();
        for (key, record) in batch {
            if records.len() == limit {
                return Ok((records, skipped, after));
            }
            let current = after.insert(key);
            match export_record(current, record, now) {
                None => {}
                Some(Ok(r)) => records.push(r),
                Some(Err(e)) => {
                    tracing::warn!(error = %e, partition = %hex::encode(&current.partition),
                        sort = %hex::encode(&current.sort), "export: skipped an entry that is not a PathDB record");
                    skipped += 1;
                }
            }
        }
        if exhausted {
            return Ok((records, skipped, None));
        }
    }
}

/// Records read per page of an export.
const EXPORT_PAGE: usize = 1000;

fn write_line(out: &mut dyn std::io::Write, value: &impl Serialize) -> Result<(), ExportError> {
    serde_json::to_writer(&mut *out, value).map_err(std::io::Error::from)?;
    out.write_all(b"\n")?;
    Ok(())
}

/// A failed [`Store::export`](crate::store::Store::export).
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The store failed; the export ends with an `incomplete` line.
    #[error(transparent)]
    Store(#[from] Error),
    /// The output could not be written (the reader went away).
    #[error("writing the export: {0}")]
    Output(#[from] std::io::Error),
}
