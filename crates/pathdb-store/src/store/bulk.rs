//! Whole-database and whole-subtree work: expiry now, the full scan and export (read/export.rs),
//! import (write/import.rs), and subtree delete, move and copy (jobs/subtree.rs).

use crate::backend::Backend;
use crate::jobs::subtree::{PendingJob, Relocator, SubtreeJob, pending};
use crate::model::error::Error;
use crate::namespaces::versions::SchemaVersions;
use crate::read::export::{ExportEnd, ExportError, Exporter, ScanPage, scan};
use crate::read::list::migrations;
use crate::store::Store;
use crate::write::import::{ImportError, ImportRecord, ImportReport, Importer, OnExisting};
use crate::write::sweep::{SWEEP_BATCH, sweep};
use pathdb_keys::KeyPath;

impl<B: Backend> Store<B> {
    /// Removes expired items now rather than waiting for the background sweeper; returns how
    /// many expiry entries it processed.
    ///
    /// # Errors
    /// Storage failures.
    pub fn sweep_expired(&self) -> Result<usize, Error> {
        let mut total = 0;
        loop {
            let n = sweep(&self.db, SWEEP_BATCH)?;
            total += n;
            if n < SWEEP_BATCH {
                return Ok(total);
            }
        }
    }

    /// Up to `limit` records of everything, in key order, after `cursor`. Entries that are not
    /// PathDB records (written by another tool) are left out and counted in
    /// [`ScanPage::skipped`].
    ///
    /// # Errors
    /// A cursor this database did not issue; storage failures.
    pub fn scan(&self, cursor: Option<&str>, limit: usize) -> Result<ScanPage, Error> {
        scan(
            &self.db.backend,
            &self.db.tokens,
            self.db.now(),
            cursor,
            limit,
        )
    }

    /// Writes every record as JSON lines to `out`, then the [`ExportEnd`] line; `progress` is
    /// called after each page with the records written so far.
    ///
    /// The whole export reads one snapshot where the backend has them (redb): a write that
    /// commits meanwhile is either all in it or not at all, so an item is never older than its
    /// revisions. DynamoDB has no snapshot across requests (docs/export.md).
    ///
    /// If the scan fails, the last line says `incomplete` with the error, and the error is
    /// returned: no consumer can take a truncated export for a whole one.
    ///
    /// # Errors
    /// Storage failures; `out` failing.
    pub fn export(
        &self,
        out: &mut dyn std::io::Write,
        progress: &mut dyn FnMut(u64),
    ) -> Result<ExportEnd, ExportError> {
        self.export_in(out, progress, &SchemaVersions::newest())
    }

    /// [`Store::export`] with each value in the version `versions` names for its namespace,
    /// the newest where it names none (docs/migrations.md); each line says its
    /// `schema_version`, which an import brings forward from.
    ///
    /// # Errors
    /// As [`Store::export`]; [`Error::UnknownSchemaVersion`](crate::Error::UnknownSchemaVersion)
    /// before anything is written.
    pub fn export_in(
        &self,
        out: &mut dyn std::io::Write,
        progress: &mut dyn FnMut(u64),
        versions: &SchemaVersions,
    ) -> Result<ExportEnd, ExportError> {
        self.check_versions(versions).map_err(ExportError::Store)?;
        let definitions = self.definitions().map_err(ExportError::Store)?;
        let exporter = Exporter {
            backend: &self.db.backend,
            now: self.db.now(),
            versions: migrations(&definitions, versions).map(|d| (d, versions)),
        };
        exporter.export(out, progress)
    }

    /// Deletes the item at `path`, if any, and every live item below it; returns how many.
    /// Each leaves its tombstone, and history stays. `/a/p-1` never touches `/a/p-10`.
    ///
    /// Atomic when the subtree fits in one write; a larger one is a job done in batches (see
    /// [`Store::run_subtree_job`]). `progress` gets the count so far after each batch.
    ///
    /// # Errors
    /// [`Error::NothingBelow`] when there is nothing to delete; as
    /// [`Store::run_subtree_job`].
    pub fn delete_subtree(
        &self,
        path: &KeyPath,
        progress: &mut dyn FnMut(u64),
    ) -> Result<u64, Error> {
        self.run_subtree_job(&SubtreeJob::delete(path.clone()), progress)
    }

    /// Re-keys every live item at or below `from` to the same place below `to` (its elements
    /// replace `from`'s), with its value, times, expiry and history; the sources become
    /// tombstones. Returns how many items moved. `to` may be in another group, and `from` a
    /// whole group. Atomic when it fits in one write, otherwise a job ([`Store::run_subtree_job`]).
    ///
    /// # Errors
    /// [`Error::DestinationNotEmpty`], [`Error::NothingBelow`], [`Error::InvalidRequest`] when
    /// one path is inside the other; as [`Store::run_subtree_job`].
    pub fn move_subtree(
        &self,
        from: &KeyPath,
        to: &KeyPath,
        progress: &mut dyn FnMut(u64),
    ) -> Result<u64, Error> {
        self.run_subtree_job(&SubtreeJob::relocate(from.clone(), to.clone()), progress)
    }

    /// [`Store::move_subtree`] that leaves the sources as they are; returns how many items it
    /// copied.
    ///
    /// # Errors
    /// As [`Store::move_subtree`].
    pub fn copy_subtree(
        &self,
        from: &KeyPath,
        to: &KeyPath,
        progress: &mut dyn FnMut(u64),
    ) -> Result<u64, Error> {
        self.run_subtree_job(&SubtreeJob::copy(from.clone(), to.clone()), progress)
    }

    /// Runs a subtree delete, move or copy to the end, or finishes it if an earlier run of the
    /// same job stopped part-way ([`Store::subtree_jobs`]); returns the items done in all.
    ///
    /// A subtree that fits in one write of the backend is done atomically. A larger one is done in
    /// batches, each atomic with the job's record in the system partition, so that at every
    /// moment each item is at its source, its destination or both, and running the job again
    /// continues after the last batch that committed (docs/tree.md says what concurrent
    /// readers and writers see meanwhile). A destination is checked to be empty when a job
    /// starts, not when it resumes. `progress` gets the count so far after each batch.
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] for a path without id at its end, a delete with a destination
    /// or a move without one, or paths inside each other; [`Error::NothingBelow`] when a new job
    /// finds no live item; [`Error::DestinationNotEmpty`] when a live item is in the
    /// destination (at the start, or where an item goes); key size limits for a destination
    /// path; storage failures (the job stays, to run again).
    pub fn run_subtree_job(
        &self,
        job: &SubtreeJob,
        progress: &mut dyn FnMut(u64),
    ) -> Result<u64, Error> {
        Relocator { db: &self.db }.run(job, progress)
    }

    /// The subtree jobs that stopped part-way (a crash, a lost connection, a storage error):
    /// run each with [`Store::run_subtree_job`] to finish it.
    ///
    /// # Errors
    /// Storage failures.
    pub fn subtree_jobs(&self) -> Result<Vec<PendingJob>, Error> {
        pending(&self.db.backend.reader()?)
    }

    /// Writes records (as [`parse_import`](crate::parse_import) reads them) in atomic batches
    /// of at most [`IMPORT_BATCH`](crate::IMPORT_BATCH) (fewer where the backend takes fewer
    /// operations per write), calling `progress` after each. A version never goes backwards: a
    /// record whose version is not above the stored one's is written with the stored version
    /// plus 1, and a tombstone never lowers one. A record already stored with the same content
    /// is left alone, so importing the same input again changes nothing.
    ///
    /// # Errors
    /// [`ImportError`] with what was applied before the failing batch.
    pub fn import(
        &self,
        records: &[ImportRecord],
        on_existing: OnExisting,
        progress: &mut dyn FnMut(&ImportReport),
    ) -> Result<ImportReport, ImportError> {
        Importer { db: &self.db }.import(records, on_existing, progress)
    }
}
