//! Transactions: one list of operations (write/transact.rs) and interactive ones (tx/).

use crate::backend::Backend;
use crate::model::error::Error;
use crate::model::item::Item;
use crate::read::list::{ListPage, ListRequest};
use crate::store::Store;
use crate::tx::{Reads, Tx};
use crate::write::ops::{Transaction, TxResult};
use crate::write::transact::transact;
use pathdb_keys::KeyPath;

impl<B: Backend> Store<B> {
    /// Applies a transaction all or nothing; one result per operation.
    ///
    /// A concurrent write to what the transaction reads makes it plan again on the new state,
    /// as a single write does, so a condition that fails is reported as
    /// [`Error::ConditionFailed`] (or [`Error::ListChanged`]) whenever it fails, before the
    /// commit or in a race with it.
    ///
    /// # Errors
    /// [`Error::ConditionFailed`], [`Error::ListChanged`] (nothing written);
    /// [`Error::InvalidRequest`] for an empty
    /// transaction, more than [`MAX_TRANSACTION_OPS`](crate::MAX_TRANSACTION_OPS) operations or a path used twice (except a
    /// patch after a put of its path, which applies to the value put).
    pub fn transact(&self, tx: Transaction) -> Result<Vec<TxResult>, Error> {
        transact(&self.db, tx)
    }

    /// Runs `f` as an interactive transaction and returns its value: `f` reads and writes through
    /// its [`Tx`]; its writes commit all or nothing, and only if nothing it read (items, their
    /// absence, listings) changed meanwhile. When something did, `f` runs again, on what is
    /// there now, after a short random pause, up to [`MAX_TRANSACTION_ATTEMPTS`](crate::MAX_TRANSACTION_ATTEMPTS) runs in all;
    /// then the failed condition is returned. So `f` may run more than once: it must have no
    /// effects outside its `Tx`. An error from `f` writes nothing and is returned as is.
    /// See docs/transactions.md.
    ///
    /// ```
    /// use pathdb_store::backend::InMemoryBackend;
    /// use pathdb_store::{Error, Json, PutOptions, Store, StoreOptions};
    ///
    /// let store = Store::new(InMemoryBackend::new(), StoreOptions::default())?;
    /// let (a, b) = ("/account-1".parse()?, "/account-2".parse()?);
    /// for path in [&a, &b] {
    ///     store.put(path, Json::parse(r#"{"balance": 100}"#)?, PutOptions::default())?;
    /// }
    /// let balance = |item: Option<pathdb_store::Item>| -> i64 {
    ///     item.and_then(|i| i.value.to_value()["balance"].as_i64()).unwrap_or(0)
    /// };
    /// let moved = store.transaction(|tx| {
    ///     let (from, to) = (balance(tx.get(&a)?), balance(tx.get(&b)?));
    ///     if from < 30 {
    ///         return Ok(false); // refused: nothing is written
    ///     }
    ///     tx.put(&a, Json::parse(&format!(r#"{{"balance": {}}}"#, from - 30))?);
    ///     tx.put(&b, Json::parse(&format!(r#"{{"balance": {}}}"#, to + 30))?);
    ///     Ok::<_, Error>(true)
    /// })?;
    /// assert!(moved);
    /// assert_eq!(balance(store.get(&b)?), 130);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::ConditionFailed`] or [`Error::ListChanged`] when what `f` read kept changing for
    /// [`MAX_TRANSACTION_ATTEMPTS`](crate::MAX_TRANSACTION_ATTEMPTS) runs; what `f` returned; [`Store::transact`]'s errors (more
    /// than [`MAX_TRANSACTION_OPS`](crate::MAX_TRANSACTION_OPS) reads and writes together, size limits, storage failures).
    pub fn transaction<T>(
        &self,
        f: impl FnMut(&mut Tx<'_>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        self.transaction_results(f).map(|(value, _)| value)
    }

    /// [`Store::transaction`], also returning the commit's results: first one per
    /// [`Tx::create`] (at the index it returned), then one per write, then one per check; empty
    /// when `f` neither read nor wrote.
    ///
    /// # Errors
    /// As [`Store::transaction`].
    pub fn transaction_results<T>(
        &self,
        f: impl FnMut(&mut Tx<'_>) -> Result<T, Error>,
    ) -> Result<(T, Vec<TxResult>), Error> {
        crate::tx::run(self, f)
    }
}

impl<B: Backend> Reads for Store<B> {
    fn get(&self, path: &KeyPath) -> Result<Option<Item>, Error> {
        Store::get(self, path)
    }

    fn get_many(&self, paths: &[KeyPath]) -> Result<Vec<Item>, Error> {
        Store::get_many(self, paths)
    }

    fn list(&self, request: &ListRequest) -> Result<ListPage, Error> {
        Store::list(self, request)
    }

    fn now(&self) -> i64 {
        self.db.now()
    }

    fn transact(&self, tx: Transaction) -> Result<Vec<TxResult>, Error> {
        Store::transact(self, tx)
    }
}
