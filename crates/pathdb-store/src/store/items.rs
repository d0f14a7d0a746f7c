//! Items: point reads (read/get.rs) and single writes (write/commit.rs's `execute`).

use crate::backend::Backend;
use crate::model::error::{Condition, Error, StorageError};
use crate::model::item::{Item, Json};
use crate::model::options::PutOptions;
use crate::model::patch::Patch;
use crate::read::get;
use crate::store::Store;
use crate::write::commit::{Outcome, execute, execute_queued, only_result};
use crate::write::ops::{IdKind, Parent, TxOp, TxResult};
use pathdb_keys::KeyPath;

impl<B: Backend> Store<B> {
    /// The item at `path`, if it exists and has not expired.
    ///
    /// # Errors
    /// Storage failures.
    pub fn get(&self, path: &KeyPath) -> Result<Option<Item>, Error> {
        get::get(&self.db.namespaces, &self.db.backend, self.db.now(), path)
    }

    /// The items that exist among `paths`, in the order asked, read from one snapshot.
    ///
    /// # Errors
    /// More than [`MAX_GET_MANY`](crate::MAX_GET_MANY) paths; storage failures.
    pub fn get_many(&self, paths: &[KeyPath]) -> Result<Vec<Item>, Error> {
        get::get_many(&self.db.namespaces, &self.db.backend, self.db.now(), paths)
    }

    /// Creates or replaces the item at `path`.
    ///
    /// # Errors
    /// [`Error::ConditionFailed`], size limits, storage failures.
    pub fn put(&self, path: &KeyPath, value: Json, options: PutOptions) -> Result<Item, Error> {
        self.put_created(path, value, options).map(|(item, _)| item)
    }

    /// [`Store::put`], also telling whether it created the item (`true`: no live item was at
    /// `path` in the state the put applied to) or replaced one, from the same read and commit.
    /// The version cannot tell: a re-created item continues its history's numbering.
    ///
    /// # Errors
    /// As [`Store::put`].
    pub fn put_created(
        &self,
        path: &KeyPath,
        value: Json,
        options: PutOptions,
    ) -> Result<(Item, bool), Error> {
        let op = TxOp::Put {
            path: path.clone(),
            value,
            options,
        };
        put_outcome(execute(&self.db, &[op])?)
    }

    /// [`Store::put_created`] for a caller on an async runtime, when the backend reads without
    /// blocking ([`Backend::fast_point_reads`]) and queues writes ([`Backend::queues_writes`]):
    /// it plans on the calling thread and awaits the commit instead of blocking a thread until
    /// the commit is durable. On another backend it blocks like `put_created`: call it from an
    /// async task only when both hold.
    ///
    /// # Errors
    /// As [`Store::put`].
    pub async fn put_created_queued(
        &self,
        path: &KeyPath,
        value: Json,
        options: PutOptions,
    ) -> Result<(Item, bool), Error> {
        let op = TxOp::Put {
            path: path.clone(),
            value,
            options,
        };
        put_outcome(execute_queued(&self.db, &[op]).await?)
    }

    /// Creates an item at `{parent}/{namespace}-{id}` (a new group without `parent`) with an id
    /// generated as `id` says, at a path never used before; returns it.
    ///
    /// # Errors
    /// An invalid namespace, a condition in `options`, size limits, storage failures.
    pub fn create(
        &self,
        parent: Option<&KeyPath>,
        namespace: &str,
        id: IdKind,
        value: Json,
        options: PutOptions,
    ) -> Result<Item, Error> {
        let op = TxOp::Create {
            parent: parent.map_or(Parent::Root, |p| Parent::Path(p.clone())),
            namespace: namespace.to_owned(),
            id,
            value,
            options,
        };
        match only_result(execute(&self.db, &[op])?)?.0 {
            TxResult::Put(item) => Ok(item),
            _ => Err(StorageError::msg("create returned no item").into()),
        }
    }

    /// Changes part of the item at `path` (see [`Patch`]) and returns the item as written: the
    /// patch applies to the value read, and the result is written conditionally on that read,
    /// so a concurrent write makes it read and apply again rather than fail. `options` are a
    /// put's (condition, history, expiry); with `create`, a patch of a missing item applies
    /// to `{}`.
    ///
    /// # Errors
    /// [`Error::ItemNotFound`] (no item, without `create`), [`Error::PatchTestFailed`],
    /// [`Error::PatchConflict`], [`Error::ConditionFailed`], size limits, storage failures.
    pub fn patch(
        &self,
        path: &KeyPath,
        patch: Patch,
        options: PutOptions,
        create: bool,
    ) -> Result<Item, Error> {
        self.patch_created(path, patch, options, create)
            .map(|(item, _)| item)
    }

    /// [`Store::patch`], also telling whether it created the item (`create`, and no live item
    /// was there), as [`Store::put_created`] does.
    ///
    /// # Errors
    /// As [`Store::patch`].
    pub fn patch_created(
        &self,
        path: &KeyPath,
        patch: Patch,
        options: PutOptions,
        create: bool,
    ) -> Result<(Item, bool), Error> {
        let op = TxOp::Patch {
            path: path.clone(),
            patch,
            options,
            create,
        };
        put_outcome(execute(&self.db, &[op])?)
    }

    /// Deletes the item at `path`; returns it, or `None` if it did not exist.
    ///
    /// # Errors
    /// [`Error::ConditionFailed`], storage failures.
    pub fn delete(
        &self,
        path: &KeyPath,
        condition: Option<Condition>,
    ) -> Result<Option<Item>, Error> {
        let op = TxOp::Delete {
            path: path.clone(),
            condition,
        };
        match only_result(execute(&self.db, &[op])?)?.0 {
            TxResult::Deleted(item) => Ok(item),
            _ => Err(StorageError::msg("delete returned no result").into()),
        }
    }

    /// Revisions of `path`, newest first, at most `limit`.
    ///
    /// # Errors
    /// Storage failures.
    pub fn history(&self, path: &KeyPath, limit: usize) -> Result<Vec<Item>, Error> {
        get::history(
            &self.db.namespaces,
            &self.db.backend,
            self.db.now(),
            path,
            limit,
        )
    }

    /// The revision of `path` at `version`, from its history or, if that is the current
    /// version, the item itself.
    ///
    /// # Errors
    /// Storage failures.
    pub fn get_version(&self, path: &KeyPath, version: u64) -> Result<Option<Item>, Error> {
        get::get_version(
            &self.db.namespaces,
            &self.db.backend,
            self.db.now(),
            path,
            version,
        )
    }
}

/// A single put's item, and whether it created the item (no live item was found).
fn put_outcome(outcome: Outcome) -> Result<(Item, bool), Error> {
    match only_result(outcome)? {
        (TxResult::Put(item), found) => Ok((item, !found)),
        _ => Err(StorageError::msg("put returned no item").into()),
    }
}
