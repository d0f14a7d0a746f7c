//! The planning context: what every stage reads from ([`Context`]) and what the stages build
//! together ([`Plan`]). Stages depend on this module and the layers below, never on `Store`.

use crate::backend::Reader;
use crate::backend::{Key, Record, WriteBatch, WriteOp};
use crate::encoding::changelog::{Change, TrimSchedule};
use crate::encoding::token::TokenKey;
use crate::model::error::Error;
use crate::model::item::Item;
use crate::model::options::PutOptions;
use crate::namespaces::definitions::{Definitions, Namespaces};
use crate::write::ops::TxResult;
use pathdb_keys::KeyPath;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The store's settings that every plan needs; [`Settings::context`] adds a snapshot and a time.
pub(crate) struct Settings<'a> {
    /// The namespace definitions (history settings, schemas).
    pub(crate) namespaces: &'a Namespaces,
    /// Operations the backend takes in one atomic batch.
    pub(crate) max_batch_ops: usize,
    /// How long the change log keeps entries.
    pub(crate) change_retention: Duration,
    /// Plans made so far (numbers them).
    pub(crate) plans: &'a AtomicU64,
    /// When each group's change log next needs trimming.
    pub(crate) trims: &'a TrimSchedule,
    /// The database's key for tokens (a listing check reads a change token).
    pub(crate) tokens: &'a TokenKey,
    /// Change log entries are written in the compact form (jobs/open.rs).
    pub(crate) compact_log: bool,
}

impl<'a> Settings<'a> {
    /// The context of one plan read from `reader` at `now`.
    pub(crate) fn context<'r, R: ?Sized>(&self, reader: &'r R, now: i64) -> Context<'r, R>
    where
        'a: 'r,
    {
        Context {
            reader,
            now,
            namespaces: self.namespaces,
            definitions: std::cell::OnceCell::new(),
            max_batch_ops: self.max_batch_ops,
            change_retention: self.change_retention,
            commit: self.plans.fetch_add(1, Ordering::Relaxed),
            trims: self.trims,
            tokens: self.tokens,
            compact_log: self.compact_log,
        }
    }
}

/// What a batch is planned from: one snapshot, one time, the store's settings.
pub(crate) struct Context<'a, R: ?Sized> {
    /// The snapshot every stage reads.
    pub(crate) reader: &'a R,
    /// The time of the write, in microseconds.
    pub(crate) now: i64,
    /// The namespace definitions.
    pub(crate) namespaces: &'a Namespaces,
    /// The definitions this plan reads, taken once ([`Context::definitions`]).
    definitions: std::cell::OnceCell<std::sync::Arc<Definitions>>,
    /// Operations the backend takes in one atomic batch.
    pub(crate) max_batch_ops: usize,
    /// How long the change log keeps entries.
    pub(crate) change_retention: Duration,
    /// This plan's number among the store's commits (spreads the change log's trimming).
    pub(crate) commit: u64,
    /// When each group's change log next needs trimming.
    pub(crate) trims: &'a TrimSchedule,
    /// The database's key for tokens.
    pub(crate) tokens: &'a TokenKey,
    /// Change log entries are written in the compact form (jobs/open.rs).
    pub(crate) compact_log: bool,
}

impl<R: Reader + ?Sized> Context<'_, R> {
    /// The namespace definitions, the same for the whole plan (read again first where others
    /// write the database and the store's copy is old: namespaces/mod.rs).
    pub(crate) fn definitions(&self) -> Result<&Definitions, Error> {
        if let Some(d) = self.definitions.get() {
            return Ok(d);
        }
        let d = self.namespaces.current(self.reader)?;
        Ok(self.definitions.get_or_init(|| d))
    }
}

impl<R: ?Sized> Context<'_, R> {
    /// [`Context::change_retention`] in microseconds.
    pub(crate) fn change_retention_micros(&self) -> i64 {
        i64::try_from(self.change_retention.as_micros()).unwrap_or(i64::MAX)
    }
}

/// What the stages decided: the batch and what it will mean once it commits.
#[derive(Default)]
pub(crate) struct Plan {
    /// The writes, committed all or nothing.
    pub(crate) batch: WriteBatch,
    /// For each batch operation, the path it belongs to (to name a conflict).
    pub(crate) owners: Vec<KeyPath>,
    /// For each batch operation, whether it writes a generated id, a sequence or the change
    /// log: a failed condition there is not the caller's conflict (plan again).
    pub(crate) generated: Vec<bool>,
    /// One result per operation, as it will be once the batch commits.
    pub(crate) results: Vec<TxResult>,
    /// For each operation, whether a live item was at its path.
    pub(crate) found: Vec<bool>,
    /// The changes the batch makes, in operation order, for the change log.
    pub(crate) changes: Vec<PlannedChange>,
    /// The alias keys the alias stage read, and what the batch does to them. Hashed with
    /// foldhash (seeded per map): each alias a put gains is looked up here several times.
    pub(crate) aliases: std::collections::HashMap<Key, AliasSlot, foldhash::fast::RandomState>,
}

/// An alias key as the alias stage (stages/aliases.rs) read it and as the plan leaves it.
pub(crate) struct AliasSlot {
    /// The record read.
    pub(crate) read: Option<Record>,
    /// Whose path it is once the batch commits (as read, until the plan writes it; an expired
    /// record's holder too).
    pub(crate) holder: Option<KeyPath>,
    /// Whether the holder is an item stored at the key (only ever as read).
    pub(crate) is_item: bool,
    /// Whether the holder's record is live (an expired one names its holder, but holds
    /// nothing).
    pub(crate) live: bool,
    /// The batch operation that writes it, if the plan does.
    pub(crate) op: Option<usize>,
}

impl Plan {
    /// The record that the batch operation at `index` puts, if it is a put.
    pub(crate) fn put_record(&self, index: usize) -> Option<&Record> {
        match self.batch.ops.get(index)? {
            WriteOp::Put { record, .. } => Some(record),
            _ => None,
        }
    }

    /// Adds a write that belongs to `owner` (`generated`: see [`Plan::generated`]).
    pub(crate) fn push(&mut self, op: WriteOp, owner: &KeyPath, generated: bool) {
        self.batch.ops.push(op);
        self.owners.push(owner.clone());
        self.generated.push(generated);
    }
}

/// What the item stage wrote for one operation, for the stages after it.
pub(crate) struct Written<'a> {
    /// The item's path.
    pub(crate) path: KeyPath,
    /// The item's key.
    pub(crate) key: Key,
    /// Whether the path was generated (a create).
    pub(crate) fresh: bool,
    /// For a put or a create: where in the batch its record is, and the put's options.
    pub(crate) put: Option<(usize, &'a PutOptions)>,
    /// The live item before the write (a put, a patch or a delete), for the alias stage.
    pub(crate) before: Option<Record>,
}

impl Written<'_> {
    /// What a delete or a check wrote: no put.
    pub(crate) fn without_put(path: KeyPath, key: Key, fresh: bool) -> Self {
        Written {
            path,
            key,
            fresh,
            put: None,
            before: None,
        }
    }
}

/// A change a plan logs, and the item as it was right before it (`None`: there was none, or it
/// was not live): filtered feeds and listing checks tell an item entering, changing in or
/// leaving a filter's result by it (docs/filters.md).
#[derive(Clone, Debug)]
pub(crate) struct PlannedChange {
    pub(crate) change: Change,
    pub(crate) before: Option<Item>,
}
