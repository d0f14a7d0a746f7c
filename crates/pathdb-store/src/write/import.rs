//! Import: the JSON-lines records an export wrote (or plain `{"path", "value"}` lines), written
//! in atomic batches that never lower a path's version and are idempotent: a record already
//! stored with the same content is left alone, so a re-run of the same input after any failure
//! converges to the state a single clean run gives. See docs/export.md.

use crate::backend::{Backend, Expect, Key, Reader, Record, WriteOp};
use crate::encoding::alias::parse_alias;
use crate::encoding::changelog::Change;
use crate::encoding::layout;
use crate::encoding::limits::{
    MAX_VERSION, check_item_size, check_key, check_revision_key, next_version,
};
use crate::encoding::record::{index_record, is_live, to_item};
use crate::encoding::stamp::{json_of, stamped};
use crate::model::error::Condition;
use crate::model::error::Error;
use crate::model::item::Item;
use crate::model::item::Json;
use crate::model::item::Timestamp;
use crate::namespaces::definitions::of_path;
use crate::read::export::{ExportEnd, ExportRecord, ExportStatus, record_of};
use crate::write::commit::{Attempt, Db};
use crate::write::plan::{Plan, PlannedChange};
use crate::write::stages::aliases::stage as alias_stage;
use crate::write::stages::changelog::log_changes;
use pathdb_keys::KeyPath;
use serde::Serialize;
use std::collections::HashSet;
/// One line of import input, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImportRecord {
    /// A record as export writes it, metadata included: written verbatim where that never
    /// lowers a version.
    Exported(ExportRecord),
    /// Only `{"path", "value"}`: written as a put would (the path's next version, the time of
    /// the import).
    Value {
        /// Where.
        path: KeyPath,
        /// The value.
        value: Json,
    },
}

impl ImportRecord {
    /// The record's path.
    pub fn path(&self) -> &KeyPath {
        match self {
            ImportRecord::Exported(r) => r.path(),
            ImportRecord::Value { path, .. } => path,
        }
    }
}

/// A parsed line of an export.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExportLine {
    /// A record.
    Record(ImportRecord),
    /// The export's last line.
    End(ExportEnd),
}

/// A line as read back: every field any kind of line has (the value kept as written, so key
/// order and number spelling survive a round trip).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLine {
    #[serde(default)]
    path: Option<KeyPath>,
    #[serde(default)]
    version: Option<u64>,
    #[serde(default)]
    created_at: Option<Timestamp>,
    #[serde(default)]
    modified_at: Option<Timestamp>,
    #[serde(default)]
    expires_at: Option<Timestamp>,
    /// `Some` whenever present, `null` included.
    #[serde(default, deserialize_with = "crate::model::item::present")]
    value: Option<Box<serde_json::value::RawValue>>,
    #[serde(default)]
    revision: bool,
    #[serde(default)]
    deleted: bool,
    #[serde(default)]
    deleted_at: Option<Timestamp>,
    /// The definition version the value is in (docs/migrations.md); absent: the newest.
    #[serde(default)]
    schema_version: Option<u64>,
    // The fields of the export's last line.
    #[serde(default)]
    export: Option<ExportStatus>,
    #[serde(default)]
    records: Option<u64>,
    #[serde(default)]
    skipped: Option<u64>,
    #[serde(default)]
    error: Option<String>,
}

impl ExportLine {
    /// Parses one line of an export (or of hand-written import input: `{"path", "value"}`).
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] naming what is wrong.
    pub fn parse(line: &str) -> Result<ExportLine, Error> {
        let invalid = |what: String| Error::InvalidRequest(what);
        let l: RawLine = serde_json::from_str(line)
            .map_err(|e| invalid(format!("not an export record: {e}")))?;
        let end_fields =
            l.export.is_some() || l.records.is_some() || l.skipped.is_some() || l.error.is_some();
        let path = match (l.path, l.export, l.records) {
            (None, Some(export), Some(records)) => {
                let record_fields =
                    l.version.is_some() || l.value.is_some() || l.deleted || l.revision;
                if record_fields || l.created_at.is_some() || l.modified_at.is_some() {
                    return Err(invalid(
                        "an export's last line has only export, records, skipped and error".into(),
                    ));
                }
                return Ok(ExportLine::End(ExportEnd {
                    export,
                    records,
                    skipped: l.skipped.unwrap_or(0),
                    error: l.error,
                }));
            }
            (Some(path), ..) if !end_fields => path,
            (None, None, _) => return Err(invalid("not an export record: no path".into())),
            _ => {
                return Err(invalid(
                    "neither an export record nor an export's last line (export and records)"
                        .into(),
                ));
            }
        };
        if l.version == Some(0) {
            return Err(invalid(format!("{path}: version must be at least 1")));
        }
        let record = match (
            l.deleted,
            l.revision,
            l.version,
            l.value,
            l.created_at,
            l.modified_at,
        ) {
            (true, false, Some(version), None, None, None) if l.expires_at.is_none() => {
                ExportRecord::Tombstone {
                    deleted_at: l.deleted_at.ok_or_else(|| {
                        invalid(format!("{path}: a deleted record needs deleted_at"))
                    })?,
                    path,
                    version,
                }
            }
            (true, ..) => {
                return Err(invalid(format!(
                    "{path}: a deleted record has only path, version, deleted_at and deleted"
                )));
            }
            _ if l.deleted_at.is_some() => {
                return Err(invalid(format!("{path}: deleted_at without deleted")));
            }
            (false, false, None, Some(value), None, None) if l.expires_at.is_none() => {
                return Ok(ExportLine::Record(ImportRecord::Value {
                    value: Json::parse(value.get())?,
                    path,
                }));
            }
            (false, revision, Some(version), Some(value), Some(created_at), Some(modified_at)) => {
                let item = Item {
                    path,
                    version,
                    created_at,
                    modified_at,
                    expires_at: l.expires_at,
                    value: Json::parse(value.get())?,
                    alias: None,
                    schema_version: l.schema_version.unwrap_or(0),
                };
                if revision {
                    ExportRecord::Revision(item)
                } else {
                    ExportRecord::Item(item)
                }
            }
            (_, _, _, None, ..) => return Err(invalid(format!("{path}: no value"))),
            _ => {
                return Err(invalid(format!(
                    "{path}: give either path and value, or path, version, created_at, modified_at and value"
                )));
            }
        };
        Ok(ExportLine::Record(ImportRecord::Exported(record)))
    }
}

/// Parses import input: JSON lines as export writes them, blank lines and a leading byte-order
/// mark ignored. A last line that says the export is incomplete, or that counts other than the
/// lines before it, is an error, and so is a line after it: a truncated export is never taken
/// for a whole one. Input with export records (lines with a version) must end with that line
/// unless `partial` is set (a deliberate part of an export); input of only `{"path", "value"}`
/// lines needs none.
///
/// # Errors
/// [`Error::InvalidRequest`] naming the line; the input's own read errors.
pub fn parse_import<E: std::fmt::Display>(
    lines: impl IntoIterator<Item = Result<String, E>>,
    partial: bool,
) -> Result<Vec<ImportRecord>, Error> {
    let mut records = Vec::new();
    let mut end: Option<(usize, ExportEnd)> = None;
    let mut exported = false;
    for (n, line) in lines.into_iter().enumerate() {
        let n = n + 1;
        let line = line.map_err(|e| Error::InvalidRequest(format!("line {n}: {e}")))?;
        let line = if n == 1 {
            line.trim_start_matches('\u{feff}')
        } else {
            &line
        };
        if line.trim().is_empty() {
            continue;
        }
        if let Some((at, _)) = end {
            return Err(Error::InvalidRequest(format!(
                "line {n}: a record after the export's last line (line {at})"
            )));
        }
        let at_line = |e: Error| match e {
            Error::InvalidRequest(m) => Error::InvalidRequest(format!("line {n}: {m}")),
            other => Error::InvalidRequest(format!("line {n}: {other}")),
        };
        // The whole line, not only its value: `{"path": .., "path": ..}` is refused too.
        crate::model::strict::check(line).map_err(|e| at_line(Error::InvalidJson(e)))?;
        match ExportLine::parse(line).map_err(at_line)? {
            ExportLine::Record(r) => {
                check_import_record(&r).map_err(at_line)?;
                exported |= matches!(r, ImportRecord::Exported(_));
                records.push(r);
            }
            ExportLine::End(e) => {
                if e.export == ExportStatus::Incomplete {
                    return Err(Error::InvalidRequest(format!(
                        "line {n}: the export is incomplete ({}); nothing imported",
                        e.error.as_deref().unwrap_or("no reason given")
                    )));
                }
                if e.records != records.len() as u64 {
                    return Err(Error::InvalidRequest(format!(
                        "line {n}: the export's last line counts {} records but {} precede it; nothing imported",
                        e.records,
                        records.len()
                    )));
                }
                end = Some((n, e));
            }
        }
    }
    if exported && end.is_none() && !partial {
        return Err(Error::InvalidRequest(format!(
            "the input ends after {} records without the export's last line \
             ({{\"export\": \"complete\", ...}}): it may be cut short; nothing imported \
             (to import part of an export on purpose, ask for a partial import)",
            records.len()
        )));
    }
    Ok(records)
}

/// The limits a record must meet before anything is written: keys, item size, a version a
/// client can hold (at most [`MAX_VERSION`]), and for a revision, its longer sort key.
fn check_import_record(r: &ImportRecord) -> Result<(), Error> {
    check_key(r.path())?;
    let version = match r {
        ImportRecord::Exported(e) => Some(e.version()),
        ImportRecord::Value { .. } => None,
    };
    if let Some(v) = version.filter(|v| *v > MAX_VERSION) {
        return Err(Error::InvalidRequest(format!(
            "{}: version {v} is above the largest a version can be ({MAX_VERSION})",
            r.path()
        )));
    }
    match r {
        ImportRecord::Exported(ExportRecord::Item(item)) => {
            check_item_size(&item.path, &item.value)
        }
        ImportRecord::Exported(ExportRecord::Revision(item)) => {
            check_item_size(&item.path, &item.value)?;
            check_revision_key(&item.path)
        }
        ImportRecord::Value { path, value } => check_item_size(path, value),
        ImportRecord::Exported(ExportRecord::Tombstone { .. }) => Ok(()),
    }
}

/// What [`Store::import`](crate::store::Store::import) does with a record whose path holds a live item with other content.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnExisting {
    /// Write the record; its version becomes the larger of its own and the stored one plus 1,
    /// so a version never goes backwards.
    #[default]
    Replace,
    /// Leave the stored item; count the record as skipped.
    Skip,
    /// Stop with [`Error::ConditionFailed`]; what earlier batches wrote stays.
    Fail,
}

impl OnExisting {
    /// The mode's name, as [`FromStr`](std::str::FromStr) reads it and HTTP's `on_existing`.
    pub fn as_str(self) -> &'static str {
        match self {
            OnExisting::Replace => "replace",
            OnExisting::Skip => "skip",
            OnExisting::Fail => "fail",
        }
    }
}

impl std::str::FromStr for OnExisting {
    type Err = Error;
    fn from_str(s: &str) -> Result<OnExisting, Error> {
        match s {
            "replace" => Ok(OnExisting::Replace),
            "skip" => Ok(OnExisting::Skip),
            "fail" => Ok(OnExisting::Fail),
            other => Err(Error::InvalidRequest(format!(
                "on_existing is replace, skip or fail, not {other:?}"
            ))),
        }
    }
}

/// What an import did, record by record.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ImportReport {
    /// Records written: distinct keys (an item, a revision or a tombstone), however many lines
    /// named them.
    pub imported: u64,
    /// Records already stored with the same content.
    pub unchanged: u64,
    /// Records left out because their path held another live item ([`OnExisting::Skip`]).
    pub skipped: u64,
    /// The path of the last record applied, in input order.
    pub last_path: Option<KeyPath>,
}

/// A failed [`Store::import`](crate::store::Store::import): the error, and what the batches before it applied (atomically
/// each; a re-run of the same input finishes the job). Its message says where the import
/// stopped; the cause is its source (so that a chain of messages names it once).
#[derive(Debug, thiserror::Error)]
#[error("import stopped after {} records{}", .applied.imported,
    .applied.last_path.as_ref().map(|p| format!(" (the last at {p})")).unwrap_or_default())]
pub struct ImportError {
    /// What was applied before the failure.
    pub applied: ImportReport,
    /// Why the import stopped.
    #[source]
    pub error: Error,
}

/// Most records per import batch (one commit each). A record may add an expiry-index entry, so
/// a backend that takes at most N operations per write gets batches of N / 2.
pub const IMPORT_BATCH: usize = 1000;

/// What one record of an import batch does.
enum Outcome {
    /// Store this record.
    Write(Record),
    /// The key already holds the same content.
    Unchanged,
    /// The key holds another live item and the import skips those.
    Skipped,
}

/// What an import writes with.
pub(crate) struct Importer<'a, B> {
    /// The database.
    pub(crate) db: &'a Db<B>,
}

impl<B: Backend> Importer<'_, B> {
    /// The import ([`Store::import`](crate::store::Store::import)).
    pub(crate) fn import(
        &self,
        records: &[ImportRecord],
        on_existing: OnExisting,
        progress: &mut dyn FnMut(&ImportReport),
    ) -> Result<ImportReport, ImportError> {
        let mut report = ImportReport::default();
        // Every value before anything is written: one that does not fit its namespace's schema
        // stops the import with nothing written.
        self.check_schemas(records).map_err(|error| ImportError {
            applied: report.clone(),
            error,
        })?;
        let mut written: HashSet<Key> = HashSet::new();
        // Paths whose item this import left alone: their revisions are left alone too.
        let mut skipped_items: HashSet<KeyPath> = HashSet::new();
        // Per record at most: the item, its expiry entry, a change log entry for its group.
        let batch_size = (self.db.backend.max_batch_ops() / 3).clamp(1, IMPORT_BATCH);
        // One record per key, the last, as writing them one by one would leave it; it also
        // makes a re-run find every record as it left it (idempotent).
        let records = last_per_key(records);
        let mut start = 0;
        while start < records.len() {
            // A key appears once per batch, so each record is planned against what the ones
            // before it wrote.
            let mut keys = HashSet::new();
            let mut end = start;
            while end < records.len()
                && end - start < batch_size
                && keys.insert(import_key(records[end]))
            {
                end += 1;
            }
            let batch = &records[start..end];
            let outcomes = self
                .import_batch(batch, on_existing, &mut written, &mut skipped_items)
                .map_err(|error| ImportError {
                    applied: report.clone(),
                    error,
                })?;
            for outcome in &outcomes {
                match outcome {
                    Outcome::Write(_) => {}
                    Outcome::Unchanged => report.unchanged += 1,
                    Outcome::Skipped => report.skipped += 1,
                }
            }
            report.last_path = batch.last().map(|r| r.path().clone());
            report.imported = written.len() as u64;
            progress(&report);
            start = end;
        }
        Ok(report)
    }

    /// Fails with [`Error::SchemaViolation`] (`index`: the record's) at the first item record
    /// whose value does not fit its namespace's schema. Revisions are history: not checked.
    fn check_schemas(&self, records: &[ImportRecord]) -> Result<(), Error> {
        let reader = self.db.backend.reader()?;
        let definitions = self.db.namespaces.current(&reader)?;
        for (index, record) in records.iter().enumerate() {
            let (path, value) = match record {
                ImportRecord::Exported(ExportRecord::Item(item)) => (&item.path, &item.value),
                ImportRecord::Value { path, value } => (path, value),
                ImportRecord::Exported(_) => continue,
            };
            crate::namespaces::definitions::check_value(
                &definitions,
                path,
                index,
                value.as_str().as_bytes(),
            )?;
        }
        Ok(())
    }

    /// Plans and commits one batch, re-planning after a concurrent change.
    fn import_batch(
        &self,
        batch: &[&ImportRecord],
        on_existing: OnExisting,
        written: &mut HashSet<Key>,
        skipped_items: &mut HashSet<KeyPath>,
    ) -> Result<Vec<Outcome>, Error> {
        let settings = self.db.settings();
        let (outcomes, keys_written, batch_skipped) = self.db.until_committed(|| {
            let reader = self.db.backend.reader()?;
            let definitions = self.db.namespaces.current(&reader)?;
            let now = self.db.now();
            let keys: Vec<Key> = batch.iter().map(|r| import_key(r)).collect();
            // A revision needs its item's version too: history never gets ahead of its item.
            let item_keys: Vec<Key> = batch
                .iter()
                .filter(|r| matches!(r, ImportRecord::Exported(ExportRecord::Revision(_))))
                .map(|r| layout::item_key(r.path()))
                .collect();
            let mut stored = reader.get_many(&[keys.as_slice(), &item_keys].concat())?;
            let item_records: std::collections::HashMap<Key, Option<Record>> = item_keys
                .into_iter()
                .zip(stored.split_off(keys.len()))
                .collect();
            // What this batch leaves at each item key (or finds there), for its revisions.
            let mut item_versions: std::collections::HashMap<KeyPath, u64> = Default::default();
            let mut batch_skipped: HashSet<KeyPath> = HashSet::new();
            let ctx = settings.context(&reader, now);
            let mut plan = Plan::default();
            let mut outcomes = Vec::with_capacity(batch.len());
            for (index, ((&record, key), current)) in
                batch.iter().zip(&keys).zip(stored).enumerate()
            {
                let record_now = as_of(record, now);
                let record: &ImportRecord = &record_now;
                let outcome = match record {
                    ImportRecord::Exported(ExportRecord::Revision(item)) => {
                        let path = &item.path;
                        let item_version = item_versions.get(path).copied().or_else(|| {
                            item_records
                                .get(&layout::item_key(path))
                                .and_then(|r| r.as_ref().map(|r| r.version))
                        });
                        if skipped_items.contains(path) || batch_skipped.contains(path) {
                            Outcome::Skipped
                        } else {
                            revision_outcome(item, current.as_ref(), item_version, on_existing)?
                        }
                    }
                    _ => {
                        let outcome = import_outcome(record, current.as_ref(), on_existing, now)?;
                        let version = match &outcome {
                            Outcome::Write(target) => Some(target.version),
                            _ => current.as_ref().map(|c| c.version),
                        };
                        if let Some(v) = version {
                            item_versions.insert(record.path().clone(), v);
                        }
                        if let Outcome::Skipped = outcome {
                            batch_skipped.insert(record.path().clone());
                        }
                        outcome
                    }
                };
                // Imported values are in their namespace's newest version (an export's are,
                // unless it asked for another): stored stamped with it (docs/migrations.md).
                let outcome = match outcome {
                    Outcome::Write(mut target) if !target.value.is_empty() => {
                        target.value = imported_value(&definitions, record, &target.value)?;
                        Outcome::Write(target)
                    }
                    other => other,
                };
                if let Outcome::Write(target) = &outcome {
                    let path = record.path();
                    let is_item =
                        !matches!(record, ImportRecord::Exported(ExportRecord::Revision(_)));
                    if is_item {
                        let was_live = current.as_ref().filter(|c| is_live(c, now));
                        // An alias path is its item's: an import cannot write over it.
                        if let Some(of) = was_live
                            .map(|c| parse_alias(&c.value))
                            .transpose()?
                            .flatten()
                        {
                            return Err(Error::PathIsAlias {
                                path: path.clone(),
                                item: of.item,
                            });
                        }
                        let now_live = Some(target).filter(|t| is_live(t, now));
                        let before = was_live
                            .map(|live| to_item(path.clone(), live.clone()))
                            .transpose()?;
                        if now_live.is_some() {
                            plan.changes.push(PlannedChange {
                                change: Change::Put(to_item(path.clone(), target.clone())?),
                                before,
                            });
                        } else if let Some(live) = was_live {
                            plan.changes.push(PlannedChange {
                                change: Change::Delete {
                                    path: path.clone(),
                                    version: live.version,
                                    alias: None,
                                },
                                before,
                            });
                        }
                        alias_stage(
                            &ctx,
                            &mut plan,
                            index,
                            was_live.map(|r| (path, r)),
                            now_live.map(|r| (path, r)),
                        )?;
                    }
                    if let (Some(t), true) = (target.expires_at, is_item) {
                        let entry = WriteOp::Put {
                            key: layout::expiry_key(t, key),
                            record: index_record(now),
                            expect: None,
                        };
                        plan.push(entry, path, false);
                    }
                    let write = WriteOp::Put {
                        key: key.clone(),
                        record: target.clone(),
                        // Only over the state this plan saw.
                        expect: Some(Expect::as_read(current.as_ref())),
                    };
                    plan.push(write, path, false);
                }
                outcomes.push(outcome);
            }
            let keys_written: Vec<Key> = plan
                .batch
                .ops
                .iter()
                .map(WriteOp::key)
                // The records' own keys, not the expiry index's or the aliases'.
                .filter(|k| keys.contains(k))
                .cloned()
                .collect();
            let mut batch = plan.batch;
            let mut owners = plan.owners;
            log_changes(&ctx, &mut batch, &mut owners, &plan.changes)?;
            let planned = (outcomes, keys_written, batch_skipped);
            Ok(if batch.ops.is_empty() {
                Attempt::Done(planned)
            } else {
                Attempt::Send(batch, planned)
            })
        })?;
        written.extend(keys_written);
        skipped_items.extend(batch_skipped);
        Ok(outcomes)
    }
}

/// The last record for each key, in input order.
fn last_per_key(records: &[ImportRecord]) -> Vec<&ImportRecord> {
    let mut seen = HashSet::new();
    let mut kept: Vec<&ImportRecord> = records
        .iter()
        .rev()
        .filter(|r| seen.insert(import_key(r)))
        .collect();
    kept.reverse();
    kept
}

/// An item line that has expired by now stands for the tombstone its expiry leaves (as export
/// writes an expired item), so importing it again later finds it unchanged.
fn as_of(record: &ImportRecord, now: i64) -> std::borrow::Cow<'_, ImportRecord> {
    match record {
        ImportRecord::Exported(ExportRecord::Item(item))
            if item.expires_at.is_some_and(|t| t.0 <= now) =>
        {
            std::borrow::Cow::Owned(ImportRecord::Exported(ExportRecord::Tombstone {
                path: item.path.clone(),
                version: item.version,
                deleted_at: item.expires_at.unwrap_or(item.modified_at),
            }))
        }
        _ => std::borrow::Cow::Borrowed(record),
    }
}

/// What to do with a revision: history is never rewritten and never gets ahead of its item.
/// A revision above the version its item key holds is skipped (the next write of the path
/// would take that number); one whose key holds another revision is skipped, or fails the
/// import with [`OnExisting::Fail`].
fn revision_outcome(
    item: &Item,
    current: Option<&Record>,
    item_version: Option<u64>,
    on_existing: OnExisting,
) -> Result<Outcome, Error> {
    let wanted = record_of(item);
    match current {
        Some(c) if *c == wanted => Ok(Outcome::Unchanged),
        Some(c) if on_existing == OnExisting::Fail => Err(Error::ConditionFailed {
            path: item.path.clone(),
            condition: Condition::MustNotExist,
            current: Some(c.version),
        }),
        Some(_) => Ok(Outcome::Skipped),
        None if item_version.is_none_or(|v| v < item.version) => Ok(Outcome::Skipped),
        None => Ok(Outcome::Write(wanted)),
    }
}

fn import_key(record: &ImportRecord) -> Key {
    match record {
        ImportRecord::Exported(r) => r.stored().0,
        ImportRecord::Value { path, .. } => layout::item_key(path),
    }
}

/// Whether `current` already holds what `record` would write (versions aside: an import that
/// had to raise a version wrote the same content).
fn same_content(record: &ImportRecord, current: Option<&Record>, now: i64) -> bool {
    let Some(current) = current else { return false };
    match record {
        ImportRecord::Exported(ExportRecord::Tombstone { version, .. }) => {
            !is_live(current, now) && current.version >= *version
        }
        ImportRecord::Exported(r) => {
            let (_, wanted) = r.stored();
            current.version >= wanted.version
                && (
                    current.created_at,
                    current.modified_at,
                    current.expires_at,
                    json_of(&current.value),
                ) == (
                    wanted.created_at,
                    wanted.modified_at,
                    wanted.expires_at,
                    &wanted.value,
                )
        }
        ImportRecord::Value { value, .. } => {
            is_live(current, now) && json_of(&current.value) == value.as_str().as_bytes()
        }
    }
}

/// What to do with `record` over `current`, the record stored under its key.
fn import_outcome(
    record: &ImportRecord,
    current: Option<&Record>,
    on_existing: OnExisting,
    now: i64,
) -> Result<Outcome, Error> {
    if same_content(record, current, now) {
        return Ok(Outcome::Unchanged);
    }
    if current.is_some_and(|c| is_live(c, now)) {
        match on_existing {
            OnExisting::Replace => {}
            OnExisting::Skip => return Ok(Outcome::Skipped),
            OnExisting::Fail => {
                return Err(Error::ConditionFailed {
                    path: record.path().clone(),
                    condition: Condition::MustNotExist,
                    current: current.map(|c| c.version),
                });
            }
        }
    }
    let floor = current.map_or(0, |c| c.version);
    let above = |v: u64| next_version(record.path(), v);
    Ok(Outcome::Write(match record {
        ImportRecord::Exported(ExportRecord::Revision(item)) => record_of(item),
        ImportRecord::Exported(r @ (ExportRecord::Item(_) | ExportRecord::Tombstone { .. })) => {
            let (_, mut wanted) = r.stored();
            // Never backwards, and a write over a live item (a delete, by a tombstone) goes
            // above it; a tombstone over a tombstone keeps the larger version.
            let live = current.is_some_and(|c| is_live(c, now));
            wanted.version = match r {
                ExportRecord::Tombstone { .. } if !live => wanted.version.max(floor),
                _ if wanted.version > floor => wanted.version,
                _ => above(floor)?,
            };
            wanted
        }
        ImportRecord::Value { value, .. } => {
            let live = current.filter(|c| is_live(c, now));
            Record {
                version: above(floor)?,
                created_at: live.map_or(now, |c| c.created_at),
                modified_at: now,
                expires_at: None,
                value: value.as_str().as_bytes().to_vec(),
            }
        }
    }))
}

/// The stored bytes of an imported value (`json`): in its namespace's newest version, stamped
/// with it (docs/migrations.md). A line that names the version its value is in (an export
/// does) is brought forward from it; one that names none is taken to be in the newest. Where
/// the namespace has no definition, the value keeps the version the line names.
///
/// # Errors
/// [`Error::UnknownSchemaVersion`] for a version the namespace does not have;
/// [`Error::MigrationFailed`].
fn imported_value(
    definitions: &crate::namespaces::definitions::Definitions,
    record: &ImportRecord,
    json: &[u8],
) -> Result<Vec<u8>, Error> {
    let text = std::str::from_utf8(json)
        .map_err(|e| crate::model::error::StorageError::new("an imported value is not UTF-8", e))?;
    let path = record.path();
    let named = match record {
        ImportRecord::Exported(ExportRecord::Item(item) | ExportRecord::Revision(item)) => {
            item.schema_version
        }
        _ => 0,
    };
    let Some(compiled) = of_path(definitions, path) else {
        // No definition here: the value keeps the version it names (an export into a new
        // database, before its definitions; a round trip gives the same export).
        return Ok(stamped(named, text));
    };
    let speaks = match named {
        0 => compiled.newest(),
        named => compiled.speaks(named)?,
    };
    let forward = compiled.translate(
        path,
        text,
        speaks,
        None,
        crate::namespaces::migrate::OnConflict::Replace,
    )?;
    Ok(stamped(
        compiled.stamp(),
        forward.as_ref().map_or(text, Json::as_str),
    ))
}
