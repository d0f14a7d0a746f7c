//! PathDB: `Store<FileBackend>` with the defaults (durable writes, group commit, quick-repair,
//! expiry sweeper on).

use crate::dataset::Dataset;
use crate::engine::{Engine, PAGE, Session, now_micros};
use anyhow::Context as _;
use pathdb_keys::KeyPath;
use pathdb_store::backend::{
    Backend, Durability, FileBackend, FileOptions, Key, Reader as _, Record, WriteBatch, WriteOp,
};
use pathdb_store::{Json, ListRequest, PutOptions, Store, StoreOptions, Transaction};
use std::path::Path;

/// The store under test.
pub struct PathDb {
    store: Store<FileBackend>,
}

impl PathDb {
    /// Creates the file, loads `data` through the backend with relaxed durability in big
    /// batches (the records `Store::put` would write), then reopens it as a default `Store`.
    ///
    /// # Errors
    /// Storage failures.
    pub fn preload(path: &Path, data: &Dataset, batch: usize) -> anyhow::Result<PathDb> {
        PathDb::load(path, data, 0..data.n_users(), batch, None)
    }

    /// Opens (or creates) the file, adds the items of `users` the same way, then opens it as a
    /// default `Store` with redb's page cache at `cache_size` bytes (`None`: redb's default).
    ///
    /// # Errors
    /// Storage failures.
    pub fn load(
        path: &Path,
        data: &Dataset,
        users: std::ops::Range<u64>,
        batch: usize,
        cache_size: Option<usize>,
    ) -> anyhow::Result<PathDb> {
        {
            let backend = FileBackend::open(
                path,
                FileOptions {
                    durability: Durability::Relaxed,
                    ..FileOptions::default()
                },
            )?;
            let now = now_micros();
            data.for_each_batch_of(users, batch, |items| {
                let ops = items
                    .iter()
                    .map(|(path, value)| WriteOp::Put {
                        key: Key {
                            partition: path.partition_key(),
                            sort: path.sort_key(),
                        },
                        record: Record {
                            version: 1,
                            created_at: now,
                            modified_at: now,
                            expires_at: None,
                            value: value.as_bytes().to_vec(),
                        },
                        expect: None,
                    })
                    .collect();
                backend
                    .write(WriteBatch { ops })
                    .context("pathdb preload batch")
            })?;
        }
        let options = FileOptions {
            cache_size,
            ..FileOptions::default()
        };
        let store = Store::open(path, options, StoreOptions::default())?;
        Ok(PathDb { store })
    }
}

impl Engine for PathDb {
    fn name(&self) -> &'static str {
        "PathDB"
    }

    fn session(&self) -> anyhow::Result<Box<dyn Session + '_>> {
        Ok(Box::new(PathDbSession { store: &self.store }))
    }

    fn warm(&self) -> anyhow::Result<u64> {
        let reader = self.store.backend().reader()?;
        let mut after: Option<Key> = None;
        let mut n = 0;
        loop {
            let batch = reader.scan_all(after.as_ref(), 10_000)?;
            let Some((last, _)) = batch.last() else {
                return Ok(n);
            };
            n += batch.len() as u64;
            after = Some(last.clone());
        }
    }
}

struct PathDbSession<'a> {
    store: &'a Store<FileBackend>,
}

impl PathDbSession<'_> {
    /// One page through `Store::list_encoded`, what the server and the CLI use: entries keep
    /// their paths encoded (the key bytes, as raw redb copies them out), and this reads each
    /// item's value, decoding no path.
    fn page(&self, request: &ListRequest) -> anyhow::Result<usize> {
        let page = self.store.list_encoded(request)?;
        let bytes: usize = page
            .items
            .iter()
            .filter_map(|e| e.item())
            .map(|i| i.value.as_str().len())
            .sum();
        std::hint::black_box((bytes, page.next_page_token.is_some()));
        Ok(page.items.len())
    }
}

impl Session for PathDbSession<'_> {
    fn put(&mut self, path: &KeyPath, value: &str) -> anyhow::Result<()> {
        self.store
            .put(path, Json::parse(value)?, PutOptions::default())?;
        Ok(())
    }

    fn get(&mut self, path: &KeyPath) -> anyhow::Result<usize> {
        Ok(self
            .store
            .get(path)?
            .map_or(0, |item| item.value.as_str().len()))
    }

    fn list(&mut self, prefix: &KeyPath, reverse: bool) -> anyhow::Result<usize> {
        let mut request = ListRequest::new(prefix.clone());
        request.limit = PAGE;
        request.reverse = reverse;
        self.page(&request)
    }

    fn children(&mut self, prefix: &KeyPath) -> anyhow::Result<usize> {
        let mut request = ListRequest::new(prefix.clone());
        request.limit = PAGE;
        request.children_only = true;
        self.page(&request)
    }

    fn transact(&mut self, items: &[(KeyPath, String)]) -> anyhow::Result<()> {
        let mut tx = Transaction::new();
        for (path, value) in items {
            tx = tx.put(path.clone(), Json::parse(value)?, PutOptions::default());
        }
        self.store.transact(tx)?;
        Ok(())
    }
}
