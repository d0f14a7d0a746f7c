//! Interactive transactions ([`Store::transaction`](crate::store::Store::transaction)): a closure reads,
//! decides and writes through a [`Tx`]; its writes commit as one [`Transaction`] together with a
//! check of everything it read, so the commit fails if any of it changed (docs/transactions.md).
//!
//! A [`Tx`] records what the closure read (each path's version or its absence, each listing's
//! range and changes token) and buffers its writes, which its own reads then see. [`Tx::finish`]
//! turns both into operations: a write of a path that was read carries the read as its
//! condition, every other read becomes a check, every listing a [`ListCheck`]. The store's
//! transaction plans them in one snapshot and commits them in one batch, so the closure's
//! decisions hold at the commit: serializable for what was read through the [`Tx`].
//!
//! This module reads and commits only through [`Reads`], which the store implements (its reads
//! and `Store::transact`); it plans no write itself.

use crate::model::error::Condition;
use crate::model::error::Error;
use crate::model::item::Item;
use crate::model::item::Json;
use crate::model::item::Timestamp;
use crate::model::options::PutOptions;
use crate::model::patch::Patch;
use crate::read::list::{ListEntry, ListPage, ListRequest};
use crate::read::list_check::ListCheck;
use crate::write::ops::{IdKind, Parent, Transaction, TxOp, TxResult};
use crate::write::pipeline::backoff;
use pathdb_keys::KeyPath;
use std::collections::{BTreeMap, HashMap};

/// How many times [`Store::transaction`](crate::store::Store::transaction) runs its closure at most: a
/// commit that fails because something read changed runs it again, after a random pause that
/// grows with each attempt (at most 64 ms), up to this many runs in all; then the failure is
/// returned.
pub const MAX_TRANSACTION_ATTEMPTS: u32 = 16;

/// The reads a [`Tx`] makes: the store's own, each from a fresh snapshot.
pub(crate) trait Reads {
    /// The item at `path`, if live.
    fn get(&self, path: &KeyPath) -> Result<Option<Item>, Error>;
    /// The live items among `paths`.
    fn get_many(&self, paths: &[KeyPath]) -> Result<Vec<Item>, Error>;
    /// A page of a listing.
    fn list(&self, request: &ListRequest) -> Result<ListPage, Error>;
    /// The time now, in microseconds.
    fn now(&self) -> i64;
    /// Commits a transaction all or nothing.
    fn transact(&self, tx: Transaction) -> Result<Vec<TxResult>, Error>;
}

/// Runs `f` as an interactive transaction on `store` (`Store::transaction_results`): commits what
/// it wrote and checks what it read, and runs it again, after a short random pause, when what it
/// read changed, up to [`MAX_TRANSACTION_ATTEMPTS`] runs.
///
/// # Errors
/// The failed condition after the last run; what `f` returned; the commit's errors.
pub(crate) fn run<T>(
    store: &dyn Reads,
    mut f: impl FnMut(&mut Tx<'_>) -> Result<T, Error>,
) -> Result<(T, Vec<TxResult>), Error> {
    let mut attempt = 1;
    loop {
        let mut tx = Tx::new(store);
        let value = f(&mut tx)?;
        let Some(transaction) = tx.finish() else {
            return Ok((value, Vec::new()));
        };
        match store.transact(transaction) {
            Ok(results) => return Ok((value, results)),
            Err(e) if e.is_condition_failed() && attempt < MAX_TRANSACTION_ATTEMPTS => {
                attempt += 1;
                backoff(attempt);
            }
            Err(e) => return Err(e),
        }
    }
}

/// A write the closure made, not yet committed.
#[derive(Clone, Debug)]
enum Pending {
    Put(Json),
    Delete,
}

/// The closure's handle in [`Store::transaction`](crate::store::Store::transaction): reads that become
/// checks of the commit, and writes that commit together, all or nothing.
pub struct Tx<'a> {
    store: &'a dyn Reads,
    /// What each path read held: the item, or `None` for no item.
    reads: HashMap<KeyPath, Option<Item>>,
    /// The listings read, by their first page.
    lists: Vec<ListCheck>,
    /// Writes in the order made (a path once: a later write replaces an earlier one).
    writes: Vec<(KeyPath, Pending)>,
    creates: Vec<TxOp>,
}

impl<'a> Tx<'a> {
    pub(crate) fn new(store: &'a dyn Reads) -> Tx<'a> {
        Tx {
            store,
            reads: HashMap::new(),
            lists: Vec::new(),
            writes: Vec::new(),
            creates: Vec::new(),
        }
    }

    /// The item at `path` as this transaction sees it: its own write if it wrote the path, else
    /// the item read (the first read of a path is the one the commit checks; later reads
    /// repeat it).
    ///
    /// # Errors
    /// An invalid path; storage failures.
    pub fn get(&mut self, path: &KeyPath) -> Result<Option<Item>, Error> {
        let read = self.read(path)?;
        Ok(match self.pending(path) {
            Some(pending) => self.view(path, read.as_ref(), pending),
            None => read,
        })
    }

    /// The items at `paths` (at most [`MAX_GET_MANY`](crate::encoding::limits::MAX_GET_MANY)), `None` where
    /// there is none, in the order asked; paths not read before are read together.
    ///
    /// # Errors
    /// As [`Tx::get`].
    pub fn get_many(&mut self, paths: &[KeyPath]) -> Result<Vec<Option<Item>>, Error> {
        let unread: Vec<KeyPath> = paths
            .iter()
            .filter(|p| !self.reads.contains_key(*p))
            .cloned()
            .collect();
        if !unread.is_empty() {
            let mut found: HashMap<KeyPath, Item> = self
                .store
                .get_many(&unread)?
                .into_iter()
                // Read through an alias, an item is found under the alias asked for.
                .map(|item| {
                    (
                        item.alias.clone().unwrap_or_else(|| item.path.clone()),
                        item,
                    )
                })
                .collect();
            for path in unread {
                let item = found.remove(&path);
                self.reads.insert(path, item);
            }
        }
        paths.iter().map(|p| self.get(p)).collect()
    }

    /// A page of a listing, with this transaction's writes in its range applied. The commit
    /// fails if anything in the listing's range changes after its first page
    /// ([`TxOp::CheckList`]): list the first page inside the transaction, then continue with
    /// its page tokens (all pages are covered by the first page's check).
    ///
    /// A children listing shows a child this transaction deleted as gone, even when items
    /// remain below it.
    ///
    /// # Errors
    /// A page token of a listing whose first page this transaction did not read, or a listing
    /// in a group that keeps no change log ([`Error::InvalidRequest`]); as [`Store::list`](crate::store::Store::list).
    pub fn list(&mut self, request: &ListRequest) -> Result<ListPage, Error> {
        let mut page = self.store.list(request)?;
        let range = request.range();
        // The same range under another filter is another listing, with a check of its own.
        let known = self
            .lists
            .iter()
            .position(|c| c.range == range && c.filter == request.filter);
        let check = match (known, &request.page_token, page.changes_token) {
            // A listing read again keeps its first token: the older one checks more.
            (Some(known), _, _) => &mut self.lists[known],
            // The commit's check reads the group's change log: a first page without a token is
            // a group without one, which a transaction cannot list (never left unchecked).
            (None, None, None) => {
                return Err(crate::namespaces::definitions::no_change_log_error(
                    &request.prefix,
                ));
            }
            (None, None, Some(token)) => {
                let mut check = request.check(token);
                check.seen = Some(BTreeMap::new());
                self.lists.push(check);
                self.lists.last_mut().expect("just pushed")
            }
            (None, _, _) => {
                return Err(Error::InvalidRequest(format!(
                    "list {}'s first page in the transaction before its next pages: the \
                     commit checks the listing from its first page's changes token",
                    request.prefix
                )));
            }
        };
        if let Some(seen) = &mut check.seen {
            for (at, item) in page
                .items
                .iter()
                .filter_map(|e| Some((e.path(), e.item()?)))
            {
                let version = seen.entry(at.clone()).or_insert(item.version);
                // Shown twice (read again): the older version is what a decision may rest on.
                *version = (*version).min(item.version);
            }
        }
        self.overlay(request, &mut page)?;
        Ok(page)
    }

    /// Writes `value` at `path` when the transaction commits.
    pub fn put(&mut self, path: &KeyPath, value: Json) {
        self.write(path, Pending::Put(value));
    }

    /// Changes the item at `path` as this transaction sees it (a read, then a put of the
    /// result); returns the item as it will be.
    ///
    /// # Errors
    /// [`Error::ItemNotFound`] for no item; the patch's own failures; as [`Tx::get`].
    pub fn patch(&mut self, path: &KeyPath, patch: &Patch) -> Result<Item, Error> {
        let current = self
            .get(path)?
            .ok_or_else(|| Error::ItemNotFound { path: path.clone() })?;
        let value = patch.apply(&current.value).map_err(|e| e.at(path))?;
        self.put(path, value);
        self.get(path)?
            .ok_or_else(|| crate::model::error::StorageError::msg("a patched item vanished").into())
    }

    /// Deletes the item at `path` when the transaction commits (nothing if there is none).
    pub fn delete(&mut self, path: &KeyPath) {
        self.write(path, Pending::Delete);
    }

    /// Creates an item with a generated id under `parent` (a new group for `None`) when the
    /// transaction commits; its path is in the commit's results
    /// ([`Store::transaction_results`](crate::store::Store::transaction_results)), at the index this
    /// returns.
    pub fn create(
        &mut self,
        parent: Option<&KeyPath>,
        namespace: &str,
        id: IdKind,
        value: Json,
    ) -> usize {
        self.creates.push(TxOp::Create {
            parent: parent.map_or(Parent::Root, |p| Parent::Path(p.clone())),
            namespace: namespace.to_owned(),
            id,
            value,
            options: PutOptions::default(),
        });
        self.creates.len() - 1
    }

    /// The transaction to commit: the creates, the writes (in the order made), each
    /// conditional on what was read at its path, then a check per other path read and per
    /// listing. `None` when the closure neither read nor wrote.
    pub(crate) fn finish(self) -> Option<Transaction> {
        let condition = |read: &Option<Item>| match read {
            Some(item) => Condition::IfVersion(item.version),
            None => Condition::MustNotExist,
        };
        let mut tx = Transaction::new();
        tx.ops.extend(self.creates);
        for (path, pending) in &self.writes {
            let read = self.reads.get(path).map(condition);
            tx.ops.push(match pending {
                Pending::Put(value) => TxOp::Put {
                    path: path.clone(),
                    value: value.clone(),
                    options: PutOptions {
                        condition: read,
                        ..PutOptions::default()
                    },
                },
                Pending::Delete => TxOp::Delete {
                    path: path.clone(),
                    condition: read,
                },
            });
        }
        let mut checks: Vec<(&KeyPath, &Option<Item>)> = self
            .reads
            .iter()
            .filter(|(path, _)| !self.writes.iter().any(|(p, _)| p == *path))
            .collect();
        // In path order: the same reads give the same transaction.
        checks.sort_by(|a, b| a.0.cmp(b.0));
        for (path, read) in checks {
            tx.ops.push(TxOp::Check {
                path: path.clone(),
                condition: condition(read),
            });
        }
        tx.ops.extend(self.lists.into_iter().map(TxOp::CheckList));
        (!tx.ops.is_empty()).then_some(tx)
    }

    /// The item read at `path`, reading it the first time.
    fn read(&mut self, path: &KeyPath) -> Result<Option<Item>, Error> {
        if let Some(read) = self.reads.get(path) {
            return Ok(read.clone());
        }
        let read = self.store.get(path)?;
        self.reads.insert(path.clone(), read.clone());
        Ok(read)
    }

    fn pending(&self, path: &KeyPath) -> Option<&Pending> {
        self.writes.iter().find(|(p, _)| p == path).map(|(_, w)| w)
    }

    fn write(&mut self, path: &KeyPath, write: Pending) {
        match self.writes.iter_mut().find(|(p, _)| p == path) {
            Some((_, pending)) => *pending = write,
            None => self.writes.push((path.clone(), write)),
        }
    }

    /// The item a pending write makes of `read`.
    fn view(&self, path: &KeyPath, read: Option<&Item>, pending: &Pending) -> Option<Item> {
        let Pending::Put(value) = pending else {
            return None;
        };
        let now = Timestamp(self.store.now());
        Some(Item {
            path: path.clone(),
            version: read.map_or(1, |item| item.version + 1),
            created_at: read.map_or(now, |item| item.created_at),
            modified_at: now,
            expires_at: None,
            value: value.clone(),
            alias: None,
            schema_version: 0,
        })
    }

    /// Applies this transaction's writes in `request`'s range to `page`: written items replace
    /// or join the entries, deleted ones leave. On a page that more pages follow, only writes
    /// up to its last entry join it (later ones belong to later pages).
    fn overlay(&mut self, request: &ListRequest, page: &mut ListPage) -> Result<(), Error> {
        if self.writes.is_empty() {
            return Ok(());
        }
        let range = request.range();
        let last = page
            .next_page_token
            .as_ref()
            .and_then(|_| page.items.last().map(|e| e.path().clone()));
        let within = |path: &KeyPath| match &last {
            None => true,
            Some(last) if request.reverse => path >= last,
            Some(last) => path <= last,
        };
        let writes: Vec<(KeyPath, Pending)> = self
            .writes
            .iter()
            .filter(|(path, _)| range.covers(path))
            .cloned()
            .collect();
        for (path, pending) in writes {
            // A filtered listing has no nodes: only a child's own item can be on it.
            if request.filter.is_some()
                && request.children_only
                && path.len() > request.prefix.len() + 1
            {
                continue;
            }
            let entry_path = if request.children_only && path.len() > request.prefix.len() + 1 {
                // A write below a child: the child is at least a node.
                let Some(child) = range.child_of(&path) else {
                    continue;
                };
                if matches!(pending, Pending::Put(_))
                    && within(&child)
                    && !page.items.iter().any(|e| e.path() == &child)
                {
                    insert_sorted(&mut page.items, ListEntry::Node(child), request.reverse);
                }
                continue;
            } else {
                path
            };
            page.items.retain(|e| e.path() != &entry_path);
            if matches!(pending, Pending::Put(_)) && within(&entry_path) {
                let read = self.read(&entry_path)?;
                if let Some(mut item) = self.view(&entry_path, read.as_ref(), &pending) {
                    // As the listing would show it once written: only if it matches, and only
                    // the members asked for.
                    if request.filter.as_ref().is_none_or(|f| item.matches(f)) {
                        if let Some(fields) = &request.fields {
                            item.value = fields.project(&item.value);
                        }
                        insert_sorted(&mut page.items, ListEntry::Item(item), request.reverse);
                    }
                }
            }
        }
        Ok(())
    }
}

fn insert_sorted(entries: &mut Vec<ListEntry>, entry: ListEntry, reverse: bool) {
    let at = entries.partition_point(|e| {
        if reverse {
            e.path() > entry.path()
        } else {
            e.path() < entry.path()
        }
    });
    entries.insert(at, entry);
}
