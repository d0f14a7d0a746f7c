//! The raw engine: redb 4.5 with PathDB's table layout (`(partition key, sort key) -> record`),
//! doing each operation's logical work directly, with nothing of the store above it.
//!
//! - put: one write transaction with one insert, durability `Immediate` and quick-repair on
//!   (the commit settings the store's file backend uses; the `redb-noqr` engine turns it off to
//!   measure its cost). No read before the write, no version, no conditions.
//! - get: one read transaction, one lookup, the value copied out.
//! - list: one range over the partition's items (`[00, ff)` like the store), 101 entries (the
//!   page and one more to know whether a next page exists), keys and values copied out.
//! - children: one range over the partition's descendants (`[01, ff)`), keeping the entries
//!   whose sort key is a single element (checked with the zero-copy `KeyPathRef::decode`) until
//!   101 are found: a plain scan, no seeking (for this dataset's subtrees of 0-30 entries a
//!   scan beats a B-tree descent per child).
//! - transaction: one write transaction with every insert, `Immediate`, quick-repair on.

use crate::dataset::Dataset;
use crate::engine::{Engine, PAGE, Role, Session, now_micros, record_bytes};
use pathdb_keys::{KeyPath, KeyPathRef};
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use std::ops::Bound;
use std::path::Path;

const DATA: TableDefinition<(&[u8], &[u8]), &[u8]> = TableDefinition::new("pathdb_data");

/// Above every item sort key (the store keeps revisions at `ff...`).
const ITEMS_END: &[u8] = &[0xff];

/// Raw redb.
pub struct RawRedb {
    db: Database,
    quick_repair: bool,
}

impl RawRedb {
    /// Creates the file and loads `data` in big non-durable transactions, then commits durably.
    ///
    /// # Errors
    /// redb failures.
    pub fn preload(
        path: &Path,
        data: &Dataset,
        batch: usize,
        quick_repair: bool,
    ) -> anyhow::Result<RawRedb> {
        RawRedb::load(path, data, 0..data.n_users(), batch, quick_repair, None)
    }

    /// Opens (or creates) the file with redb's page cache at `cache_size` bytes (`None`: redb's
    /// default) and adds the items of `users` the same way.
    ///
    /// # Errors
    /// redb failures.
    pub fn load(
        path: &Path,
        data: &Dataset,
        users: std::ops::Range<u64>,
        batch: usize,
        quick_repair: bool,
        cache_size: Option<usize>,
    ) -> anyhow::Result<RawRedb> {
        let mut builder = Database::builder();
        if let Some(bytes) = cache_size {
            builder.set_cache_size(bytes);
        }
        let db = builder.create(path)?;
        let now = now_micros();
        data.for_each_batch_of(users, batch, |items| {
            let mut txn = db.begin_write()?;
            txn.set_durability(redb::Durability::None)?;
            {
                let mut table = txn.open_table(DATA)?;
                for (path, value) in items {
                    table.insert(
                        (path.partition_key().as_slice(), path.sort_key().as_slice()),
                        record_bytes(value, now).as_slice(),
                    )?;
                }
            }
            txn.commit()?;
            Ok(())
        })?;
        let mut txn = db.begin_write()?;
        txn.set_durability(redb::Durability::Immediate)?;
        txn.commit()?;
        Ok(RawRedb { db, quick_repair })
    }

    fn write<'a>(
        &self,
        items: impl IntoIterator<Item = (&'a KeyPath, &'a str)>,
    ) -> anyhow::Result<()> {
        let now = now_micros();
        let mut txn = self.db.begin_write()?;
        txn.set_durability(redb::Durability::Immediate)?;
        txn.set_quick_repair(self.quick_repair);
        {
            let mut table = txn.open_table(DATA)?;
            for (path, value) in items {
                table.insert(
                    (path.partition_key().as_slice(), path.sort_key().as_slice()),
                    record_bytes(value, now).as_slice(),
                )?;
            }
        }
        txn.commit()?;
        Ok(())
    }
}

impl Engine for RawRedb {
    fn name(&self) -> &'static str {
        if self.quick_repair {
            "redb"
        } else {
            "redb, no quick-repair"
        }
    }

    fn session(&self) -> anyhow::Result<Box<dyn Session + '_>> {
        Ok(Box::new(RawSession { engine: self }))
    }

    fn warm(&self) -> anyhow::Result<u64> {
        let txn = self.db.begin_read()?;
        let table = txn.open_table(DATA)?;
        let mut n = 0;
        for entry in table.iter()? {
            let (k, v) = entry?;
            std::hint::black_box((k.value(), v.value()));
            n += 1;
        }
        Ok(n)
    }

    fn role(&self) -> Role {
        // Quick-repair changes commits only.
        if self.quick_repair {
            Role::All
        } else {
            Role::Writes
        }
    }
}

struct RawSession<'a> {
    engine: &'a RawRedb,
}

type Entries = Vec<(Vec<u8>, Vec<u8>)>;
type Entry<'a> = (
    redb::AccessGuard<'a, (&'static [u8], &'static [u8])>,
    redb::AccessGuard<'a, &'static [u8]>,
);

/// The first `PAGE + 1` entries (a page and whether more follow), sort keys and values copied.
fn first_entries<'a>(
    entries: impl Iterator<Item = Result<Entry<'a>, redb::StorageError>>,
) -> anyhow::Result<Entries> {
    let mut page = Vec::with_capacity(PAGE + 1);
    for entry in entries.take(PAGE + 1) {
        let (k, v) = entry?;
        page.push((k.value().1.to_vec(), v.value().to_vec()));
    }
    Ok(page)
}

impl Session for RawSession<'_> {
    fn put(&mut self, path: &KeyPath, value: &str) -> anyhow::Result<()> {
        self.engine.write([(path, value)])
    }

    fn get(&mut self, path: &KeyPath) -> anyhow::Result<usize> {
        let partition = path.partition_key();
        let sort = path.sort_key();
        let txn = self.engine.db.begin_read()?;
        let table = txn.open_table(DATA)?;
        let value = table
            .get((partition.as_slice(), sort.as_slice()))?
            .map(|guard| guard.value().to_vec());
        Ok(value.map_or(0, |v| v.len()))
    }

    fn list(&mut self, prefix: &KeyPath, reverse: bool) -> anyhow::Result<usize> {
        let partition = prefix.partition_key();
        let range = prefix.sort_key_subtree_range();
        let end = range.end.unwrap_or_else(|| ITEMS_END.to_vec());
        let txn = self.engine.db.begin_read()?;
        let table = txn.open_table(DATA)?;
        let iter = table.range::<(&[u8], &[u8])>((
            Bound::Included((partition.as_slice(), range.start.as_slice())),
            Bound::Excluded((partition.as_slice(), end.as_slice())),
        ))?;
        let page = if reverse {
            first_entries(iter.rev())?
        } else {
            first_entries(iter)?
        };
        let more = page.len() > PAGE;
        std::hint::black_box((&page[..page.len().min(PAGE)], more));
        Ok(page.len().min(PAGE))
    }

    fn children(&mut self, prefix: &KeyPath) -> anyhow::Result<usize> {
        let partition = prefix.partition_key();
        let range = prefix.sort_key_descendants_range();
        let end = range.end.unwrap_or_else(|| ITEMS_END.to_vec());
        // A child of a path with `d` elements has `d` elements in its sort key (the group is
        // in the partition key).
        let depth = prefix.len();
        let txn = self.engine.db.begin_read()?;
        let table = txn.open_table(DATA)?;
        let iter = table.range::<(&[u8], &[u8])>((
            Bound::Included((partition.as_slice(), range.start.as_slice())),
            Bound::Excluded((partition.as_slice(), end.as_slice())),
        ))?;
        let mut page: Entries = Vec::with_capacity(PAGE + 1);
        for entry in iter {
            let (k, v) = entry?;
            let sort = k.value().1;
            if KeyPathRef::decode(sort)?.elements().len() == depth {
                page.push((sort.to_vec(), v.value().to_vec()));
                if page.len() > PAGE {
                    break;
                }
            }
        }
        let more = page.len() > PAGE;
        page.truncate(PAGE);
        std::hint::black_box((&page, more));
        Ok(page.len())
    }

    fn transact(&mut self, items: &[(KeyPath, String)]) -> anyhow::Result<()> {
        self.engine
            .write(items.iter().map(|(path, value)| (path, value.as_str())))
    }
}
