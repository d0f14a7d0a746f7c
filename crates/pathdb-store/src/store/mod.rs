//! [`Store`]: the data API over any [`Backend`], a facade whose files only delegate, one per
//! kind of call: `items.rs` (point reads and single writes), `transactions.rs`, `listings.rs`,
//! `feeds.rs`, `namespaces.rs`, `migrations.rs` (definition versions), `bulk.rs` (expiry, export, import, subtree jobs), `backups.rs`. Reads run in
//! read/, writes are planned in write/ and committed by write/commit.rs, background and
//! resumable work is in jobs/. Nothing below this module knows `Store`.

mod access;
mod backups;
mod bulk;
mod feeds;
mod items;
mod listings;
mod migrations;
mod namespaces;
mod transactions;

use crate::backend::{Backend, FileBackend, FileOptions};
use crate::jobs::background::Threads;
use crate::jobs::open::open;
use crate::model::error::Error;
use crate::model::options::StoreOptions;
use crate::write::commit::Db;
use std::path::Path;
use std::sync::Arc;

/// PathDB's data API over a backend. Cheap to clone; clones share the backend.
pub struct Store<B: Backend> {
    db: Arc<Db<B>>,
    /// The upkeep threads, stopped when the last clone is dropped.
    _threads: Threads,
}

impl<B: Backend> Clone for Store<B> {
    fn clone(&self) -> Self {
        Store {
            db: Arc::clone(&self.db),
            _threads: self._threads.clone(),
        }
    }
}

impl Store<FileBackend> {
    /// Opens (or creates) a database file with the embedded backend.
    ///
    /// # Errors
    /// The file cannot be opened.
    pub fn open(
        path: impl AsRef<Path>,
        file: FileOptions,
        options: StoreOptions,
    ) -> Result<Self, Error> {
        Store::new(FileBackend::open(path, file)?, options)
    }

    /// Opens an existing database file for reading only ([`FileBackend::open_read_only`]):
    /// the file is never written, writes fail with [`Error::ReadOnly`], and there is no expiry
    /// sweeper whatever `options` say (expired items stay hidden from reads).
    ///
    /// # Errors
    /// The file cannot be opened read-only (see [`FileBackend::open_read_only`]).
    pub fn open_read_only(
        path: impl AsRef<Path>,
        file: FileOptions,
        options: StoreOptions,
    ) -> Result<Self, Error> {
        let options = StoreOptions {
            sweep_interval: None,
            ..options
        };
        Store::new(FileBackend::open_read_only(path, file)?, options)
    }
}

impl<B: Backend> Store<B> {
    /// A store over `backend`; starts the expiry sweeper unless disabled.
    ///
    /// # Errors
    /// The backend cannot be read.
    pub fn new(backend: B, options: StoreOptions) -> Result<Self, Error> {
        let (db, threads) = open(backend, options)?;
        Ok(Store {
            db,
            _threads: threads,
        })
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.db.backend
    }
}
