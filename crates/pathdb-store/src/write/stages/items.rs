//! Stage: the item record. Reads what is stored at the operation's path, checks the caller's
//! condition, and writes the item (a put), its tombstone (a delete) or only a check; every one
//! of them conditional on the record this plan read, so a concurrent write fails the batch
//! instead of being overwritten. Records the operation's result and its change.

use crate::backend::{Expect, Key, Reader, Record, WriteOp};
use crate::encoding::alias::parse_alias;
use crate::encoding::changelog::Change;
use crate::encoding::layout;
use crate::encoding::limits::check_item_size;
use crate::encoding::limits::next_version;
use crate::encoding::record::{is_live, to_item, tombstone, visible};
use crate::model::error::Condition;
use crate::model::error::Error;
use crate::model::item::Json;
use crate::model::item::Timestamp;
use crate::model::options::Expiry;
use crate::model::patch::Patch;
use crate::write::ops::{TxOp, TxResult};
use crate::write::plan::{Context, Plan, PlannedChange, Written};
use crate::write::stages::migrate;
use pathdb_keys::KeyPath;
use std::collections::HashMap;

/// The records stored at the paths `ops` name, read together when there are several (one
/// request on a remote backend, [`Reader::get_batch`]); a single operation reads its own in
/// [`stage`].
pub(crate) fn read_named<R: Reader + ?Sized>(
    ctx: &Context<'_, R>,
    ops: &[TxOp],
) -> Result<HashMap<Key, Option<Record>>, Error> {
    // The common case, one operation, allocates nothing here.
    if ops.len() < 2 {
        return Ok(HashMap::new());
    }
    let mut keys: Vec<Key> = ops
        .iter()
        .filter_map(TxOp::path)
        .map(layout::item_key)
        .collect();
    keys.sort();
    keys.dedup();
    if keys.len() < 2 {
        return Ok(HashMap::new());
    }
    let records = ctx.reader.get_batch(&keys)?;
    Ok(keys.into_iter().zip(records).collect())
}

/// Plans the item record of `op` at `path`; `read` holds the records [`read_named`] read.
pub(crate) fn stage<'a, R: Reader + ?Sized>(
    ctx: &Context<'_, R>,
    plan: &mut Plan,
    read: &HashMap<Key, Option<Record>>,
    op: &'a TxOp,
    path: KeyPath,
    fresh: bool,
) -> Result<Written<'a>, Error> {
    let now = ctx.now;
    let mut path = path;
    let mut key = layout::item_key(&path);
    let stored_at = |key: &Key| -> Result<Option<Record>, Error> {
        // A generated path was read already: nothing is stored at it or below (ids.rs).
        Ok(match read.get(key) {
            _ if fresh => None,
            Some(record) => record.clone(),
            None => ctx.reader.get(key)?,
        })
    };
    let mut stored = stored_at(&key)?;
    // An alias path (aliases/template.rs): a put cannot take it; anything else acts on its item.
    if let Some(of) = stored
        .as_ref()
        .filter(|r| is_live(r, now))
        .map(|r| parse_alias(&r.value))
        .transpose()?
        .flatten()
    {
        if matches!(op, TxOp::Put { .. } | TxOp::Create { .. }) {
            return Err(Error::PathIsAlias {
                path,
                item: of.item,
            });
        }
        path = of.item;
        key = layout::item_key(&path);
        stored = stored_at(&key)?;
    }
    let current = visible(stored.clone(), now);
    let condition = match op {
        TxOp::Put { options, .. } | TxOp::Patch { options, .. } => options.condition,
        TxOp::Delete { condition, .. } => *condition,
        TxOp::Check { condition, .. } => Some(*condition),
        TxOp::Create { .. } | TxOp::CheckList(_) => None,
    };
    if let Some(condition) = condition {
        check_condition(&path, condition, current.as_ref())?;
    }
    plan.found.push(current.is_some());
    // Whatever happens, the batch only applies to the record this plan saw.
    let expect = Expect::as_read(stored.as_ref());
    // A key this plan writes already: only through an alias can an operation reach it (a path
    // named twice is refused before planning), and a batch holds a key once.
    let mut replaces = None;
    if let Some(at) = plan.batch.ops.iter().position(|w| *w.key() == key) {
        if plan
            .aliases
            .get(&key)
            .is_some_and(|slot| slot.op == Some(at))
        {
            // An earlier operation gave another item this path as its alias.
            return Err(Error::PathIsAlias {
                item: plan.owners[at].clone(),
                path,
            });
        }
        match (op, &plan.batch.ops[at]) {
            // Checked against the record the earlier write is conditional on: the same one.
            (TxOp::Check { .. }, _) => {
                plan.results.push(TxResult::Checked);
                return Ok(Written::without_put(path, key, fresh));
            }
            // An earlier check of the item (a read through an alias): this write takes its
            // place, under the same condition.
            (_, WriteOp::Check { .. }) => replaces = Some(at),
            _ => {
                return Err(Error::InvalidRequest(format!(
                    "{path} is written twice in one transaction (once through an alias)"
                )));
            }
        }
    }
    // A patch is a put of the value it makes of the one read.
    let patched;
    let (value, options) = match op {
        TxOp::Put { value, options, .. } | TxOp::Create { value, options, .. } => (value, options),
        TxOp::Patch {
            patch,
            create,
            options,
            ..
        } => {
            let base = current
                .as_ref()
                .map(|r| migrate::patch_base(ctx, &path, r, options.schema_version))
                .transpose()?;
            patched = apply_patch(&path, base.as_deref(), patch, *create)?;
            (&patched, options)
        }
        TxOp::Delete { .. } => {
            let write = match (&current, &stored) {
                // The key keeps a tombstone, never nothing: see encoding/layout.rs.
                (Some(_), Some(r)) => {
                    let version = next_version(&path, r.version)?;
                    delete_write(plan, &path, key.clone(), r, version, now, expect)
                }
                // Nothing to delete: only the state this plan saw must still hold.
                _ => WriteOp::Check {
                    key: key.clone(),
                    expect,
                },
            };
            plan.results.push(TxResult::Deleted(
                current
                    .clone()
                    .map(|r| to_item(path.clone(), r))
                    .transpose()?,
            ));
            place(plan, replaces, write, &path, fresh);
            return Ok(Written {
                before: current,
                ..Written::without_put(path, key, fresh)
            });
        }
        // A listing's check is its own stage (listing.rs): treated as an item's check here.
        TxOp::Check { .. } | TxOp::CheckList(_) => {
            plan.results.push(TxResult::Checked);
            let write = WriteOp::Check {
                key: key.clone(),
                expect,
            };
            plan.push(write, &path, fresh);
            return Ok(Written::without_put(path, key, fresh));
        }
    };
    // A path with no record was never used (jobs/upgrade.rs): nothing else to read.
    let version = match &stored {
        Some(r) => next_version(&path, r.version)?,
        None => 1,
    };
    let expires_at = options.expires.map(|e| match e {
        Expiry::At(t) => t.0,
        Expiry::After(d) => Timestamp(now).plus(d).0,
    });
    let (value, _) = migrate::stored_value(ctx, &path, value, options.schema_version)?;
    let record = Record {
        version,
        created_at: current.as_ref().map_or(now, |r| r.created_at),
        modified_at: now,
        expires_at,
        value,
    };
    let item = to_item(path.clone(), record.clone())?;
    let before = current
        .as_ref()
        .map(|c| to_item(path.clone(), c.clone()))
        .transpose()?;
    plan.changes.push(PlannedChange {
        change: Change::Put(item.clone()),
        before,
    });
    plan.results.push(TxResult::Put(item));
    let write = WriteOp::Put {
        key: key.clone(),
        record,
        expect: Some(expect),
    };
    let put = Some((place(plan, replaces, write, &path, fresh), options));
    Ok(Written {
        path,
        key,
        fresh,
        put,
        before: current,
    })
}

/// Adds `write` to the plan, or puts it in place of this plan's earlier check of the same key
/// (`replaces`); returns where it is in the batch.
fn place(
    plan: &mut Plan,
    replaces: Option<usize>,
    write: WriteOp,
    path: &KeyPath,
    fresh: bool,
) -> usize {
    match replaces {
        Some(at) => {
            plan.batch.ops[at] = write;
            plan.owners[at] = path.clone();
            at
        }
        None => {
            plan.push(write, path, fresh);
            plan.batch.ops.len() - 1
        }
    }
}

fn check_condition(
    path: &KeyPath,
    condition: Condition,
    current: Option<&Record>,
) -> Result<(), Error> {
    let version = current.map(|r| r.version);
    if condition.holds(version) {
        Ok(())
    } else {
        Err(Error::ConditionFailed {
            path: path.clone(),
            condition,
            current: version,
        })
    }
}

/// The value `patch` makes of the live item's value `current` (of `{}` when there is none and
/// `create` allows it), within the item size limit.
fn apply_patch(
    path: &KeyPath,
    current: Option<&str>,
    patch: &Patch,
    create: bool,
) -> Result<Json, Error> {
    let base = match current {
        Some(text) => Json::from_stored_slice(text.as_bytes())?,
        None if create => Json::from_value(&serde_json::Value::Object(Default::default())),
        None => return Err(Error::ItemNotFound { path: path.clone() }),
    };
    let value = patch.apply(&base).map_err(|e| e.at(path))?;
    check_item_size(path, &value)?;
    Ok(value)
}

/// What a delete writes, whoever deletes (an operation, the sweeper): the key keeps a tombstone at
/// `version` over the `stored` record (never nothing: see encoding/layout.rs), and the item's
/// change is a delete of the stored version. The `aliases` and `changelog` stages add the rest.
pub(crate) fn delete_write(
    plan: &mut Plan,
    path: &KeyPath,
    key: Key,
    stored: &Record,
    version: u64,
    at: i64,
    expect: Expect,
) -> WriteOp {
    // The before image: what a filter decides a leaving item by. A stored record that cannot be
    // read as an item (never written by this store) has none.
    let before = to_item(path.clone(), stored.clone()).ok();
    plan.changes.push(PlannedChange {
        change: Change::Delete {
            path: path.clone(),
            version: stored.version,
            alias: None,
        },
        before,
    });
    WriteOp::Put {
        key,
        record: tombstone(stored, version, at),
        expect: Some(expect),
    }
}
