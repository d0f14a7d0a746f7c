//! The resumable full scan behind export, and import of what it produced. Records travel with
//! their metadata, so an export imported into an empty store reproduces it exactly.

use crate::backend::{Backend, Key, Reader, Record, WriteBatch, WriteError, WriteOp};
use crate::list::decode_path;
use crate::store::{check_item_size, check_key, to_item};
use crate::{Error, Item, Json, Store, Timestamp, layout};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use pathdb_keys::KeyPath;

/// One exported record: an item, or one of its history revisions.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ExportRecord {
    /// The item (for a revision: as it was at that version).
    #[serde(flatten)]
    pub item: Item,
    /// Whether this is a history revision rather than the current item.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub revision: bool,
}

/// A page of the full scan.
#[derive(Clone, Debug)]
pub struct ScanPage {
    /// Records in key order: each group's items, then its revisions.
    pub records: Vec<ExportRecord>,
    /// Present when more follow.
    pub cursor: Option<String>,
}

fn encode_cursor(key: &Key) -> String {
    let mut raw = Vec::with_capacity(2 + key.partition.len() + key.sort.len());
    raw.extend_from_slice(&(key.partition.len() as u16).to_be_bytes());
    raw.extend_from_slice(&key.partition);
    raw.extend_from_slice(&key.sort);
    URL_SAFE_NO_PAD.encode(raw)
}

fn decode_cursor(cursor: &str) -> Result<Key, Error> {
    let invalid = || Error::InvalidPageToken("not a scan cursor");
    let raw = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| invalid())?;
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

impl<B: Backend> Store<B> {
    /// Up to `limit` records of everything, in key order, after `cursor`; expired items are
    /// left out.
    ///
    /// # Errors
    /// A malformed cursor; storage failures.
    pub fn scan(&self, cursor: Option<&str>, limit: usize) -> Result<ScanPage, Error> {
        let mut after = cursor.map(decode_cursor).transpose()?;
        let reader = self.inner.backend.reader()?;
        let now = self.now();
        let mut records = Vec::new();
        let limit = limit.max(1);
        loop {
            let batch = reader.scan_all(after.as_ref(), limit - records.len() + 1)?;
            let exhausted = batch.len() <= limit - records.len();
            for (key, record) in batch {
                if records.len() == limit {
                    return Ok(ScanPage {
                        records,
                        cursor: after.as_ref().map(encode_cursor),
                    });
                }
                let current = after.insert(key);
                if current.partition == layout::SYSTEM_PARTITION
                    || record.expires_at.is_some_and(|t| t <= now)
                {
                    continue;
                }
                let (sort, revision) = match layout::revision_item_sort(&current.sort) {
                    Some(item_sort) if layout::is_revision(&current.sort) => (item_sort, true),
                    _ => (current.sort.as_slice(), false),
                };
                let path = decode_path(&current.partition, sort)?;
                records.push(ExportRecord {
                    item: to_item(path, record)?,
                    revision,
                });
            }
            if exhausted {
                return Ok(ScanPage {
                    records,
                    cursor: None,
                });
            }
        }
    }

    /// Writes exported records back verbatim (versions and timestamps included), overwriting
    /// what is there. All records are checked before anything is written; the writes then go in
    /// batches, and importing the same records again gives the same state.
    ///
    /// # Errors
    /// A record breaking a size limit or with version 0 (nothing written); storage failures.
    pub fn import(&self, records: &[ExportRecord]) -> Result<usize, Error> {
        for r in records {
            check_key(&r.item.path)?;
            check_item_size(&r.item.path, &r.item.value)?;
            if r.item.version == 0 {
                return Err(Error::InvalidRequest(format!(
                    "{}: version must be at least 1",
                    r.item.path
                )));
            }
        }
        for chunk in records.chunks(64) {
            let mut ops = Vec::with_capacity(chunk.len() * 2);
            for r in chunk {
                let item_key = layout::item_key(&r.item.path);
                let record = Record {
                    version: r.item.version,
                    created_at: r.item.created_at.0,
                    modified_at: r.item.modified_at.0,
                    expires_at: r.item.expires_at.map(|t| t.0),
                    value: r.item.value.as_str().as_bytes().to_vec(),
                };
                if let (Some(t), false, false) = (
                    record.expires_at,
                    r.revision,
                    self.inner.backend.native_expiry(),
                ) {
                    ops.push(WriteOp::Put {
                        key: layout::expiry_key(t, &item_key),
                        record: record_stub(&record),
                        expect: None,
                    });
                }
                let key = if r.revision {
                    layout::revision_key(&item_key, r.item.version)
                } else {
                    item_key
                };
                ops.push(WriteOp::Put {
                    key,
                    record,
                    expect: None,
                });
            }
            // Two records for one key in a chunk: the later wins, as it would one by one.
            dedup_keep_last(&mut ops);
            self.inner
                .backend
                .write(WriteBatch { ops })
                .map_err(|e| match e {
                    // `into`: a read-only backend's refusal becomes `Error::ReadOnly`.
                    WriteError::Storage(s) => s.into(),
                    WriteError::ConditionFailed { .. } => Error::Storage(crate::StorageError::msg(
                        "unconditional write failed a condition",
                    )),
                })?;
        }
        Ok(records.len())
    }
}

fn record_stub(r: &Record) -> Record {
    Record {
        version: 1,
        created_at: r.modified_at,
        modified_at: r.modified_at,
        expires_at: None,
        value: Vec::new(),
    }
}

fn dedup_keep_last(ops: &mut Vec<WriteOp>) {
    let mut seen = std::collections::HashSet::new();
    let mut kept: Vec<WriteOp> = ops
        .drain(..)
        .rev()
        .filter(|op| seen.insert(op.key().clone()))
        .collect();
    kept.reverse();
    *ops = kept;
}

/// An export line as read back: the item fields plus the revision flag.
#[derive(serde::Deserialize)]
struct ExportLine {
    path: KeyPath,
    version: u64,
    created_at: Timestamp,
    modified_at: Timestamp,
    #[serde(default)]
    expires_at: Option<Timestamp>,
    value: Box<serde_json::value::RawValue>,
    #[serde(default)]
    revision: bool,
}

impl ExportRecord {
    /// Parses one export line (JSON).
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] naming what is wrong.
    pub fn from_json_line(line: &str) -> Result<ExportRecord, Error> {
        let l: ExportLine = serde_json::from_str(line)
            .map_err(|e| Error::InvalidRequest(format!("not an export record: {e}")))?;
        Ok(ExportRecord {
            item: Item {
                path: l.path,
                version: l.version,
                created_at: l.created_at,
                modified_at: l.modified_at,
                expires_at: l.expires_at,
                value: Json::parse(l.value.get())?,
            },
            revision: l.revision,
        })
    }
}
