//! Stage: the item's alias paths (aliases/template.rs, docs/aliases.md). From the item as it was
//! and as it will be, the aliases its namespace's templates give each: an alias it loses becomes a
//! tombstone, one it gains is written (conditional on the record read, so a racing writer fails the
//! batch instead of both taking it), one it keeps is rewritten only if the item moved or its expiry
//! changed. A gained alias held by another item, or where an item is stored, fails the plan with
//! [`Error::AliasTaken`]. Every alias the item is under after the write gets a change (the item,
//! filed at the alias: a feed of the alias's prefix sees it enter and change), every alias it
//! leaves a delete.
//!
//! The records an operation needs are read together (one request on a remote backend), and only
//! when its alias set or expiry changes: a write that keeps its aliases reads nothing more.
//! Within one plan, a key is written once: a later operation that takes an alias an earlier one
//! freed (a move, a transaction that hands an email on) replaces that write.

use crate::aliases::template::{Template, read_members};
use crate::backend::{Expect, Key, Reader, Record, WriteOp};
use crate::encoding::alias::parse_alias;
use crate::encoding::changelog::Change;
use crate::encoding::layout;
use crate::encoding::limits::next_version;
use crate::encoding::record::{alias_record, is_live, to_item, tombstone};
use crate::encoding::stamp::split;
use crate::model::error::Error;
use crate::model::item::Item;
use crate::namespaces::definitions::{Definitions, newest_text};
use crate::write::plan::{AliasSlot, Context, Plan, PlannedChange, Written};
use pathdb_keys::KeyPath;

/// An item as one side of a write: its path and record (a live one).
pub(crate) type Side<'a> = Option<(&'a KeyPath, &'a Record)>;

/// [`stage`] for what the item stage wrote (`index`: the operation's).
pub(crate) fn stage_written<R: Reader + ?Sized>(
    ctx: &Context<'_, R>,
    plan: &mut Plan,
    index: usize,
    written: &Written<'_>,
) -> Result<(), Error> {
    let namespace = written.path.last().namespace().as_str();
    if ctx
        .definitions()?
        .get(namespace)
        .is_none_or(|c| c.aliases.is_empty())
    {
        return Ok(());
    }
    let after = match written.put {
        Some((at, _)) => plan.put_record(at).cloned(),
        // A delete of a live item leaves none; a check (which carries no item before) and a
        // delete of nothing change no alias.
        None if written.before.is_some() => None,
        None => return Ok(()),
    };
    let before = written.before.as_ref().map(|r| (&written.path, r));
    stage(
        ctx,
        plan,
        index,
        before,
        after.as_ref().map(|r| (&written.path, r)),
    )
}

/// Plans the alias records for an item going from `before` to `after` (operation `index`):
/// a put (both), a create (`after` only), a delete (`before` only), a move's two halves.
pub(crate) fn stage<R: Reader + ?Sized>(
    ctx: &Context<'_, R>,
    plan: &mut Plan,
    index: usize,
    before: Side<'_>,
    after: Side<'_>,
) -> Result<(), Error> {
    let definitions = ctx.definitions()?;
    let templates = |side: Side<'_>| {
        side.and_then(|(path, _)| definitions.get(path.last().namespace().as_str()))
            .map_or(&[][..], |c| &c.aliases[..])
    };
    let (old_templates, new_templates) = (templates(before), templates(after));
    if old_templates.is_empty() && new_templates.is_empty() {
        return Ok(());
    }
    // The aliases it had: from a value the store accepted, so a member that does not fit a
    // template (one added since) gave none for that template; the others it had.
    let old = match before {
        Some((path, record)) => old_templates
            .iter()
            .filter_map(|t| {
                aliases_of(definitions, std::slice::from_ref(t), path, record)
                    .ok()?
                    .pop()
            })
            .collect(),
        None => Vec::new(),
    };
    let new = match after {
        Some((path, record)) => {
            aliases_of(definitions, new_templates, path, record).map_err(|(_, unfit)| {
                Error::AliasInvalid {
                    path: path.clone(),
                    member: unfit.member.into(),
                    kind: unfit.kind,
                    index,
                }
            })?
        }
        None => Vec::new(),
    };
    let moved = match (before, after) {
        (Some((a, ra)), Some((b, rb))) => a != b || ra.expires_at != rb.expires_at,
        _ => true,
    };
    // The keys this operation writes, and which of them need reading first.
    let writes: Vec<(&KeyPath, Option<&Template>)> = old
        .iter()
        .filter(|(_, alias)| !new.iter().any(|(_, a)| a == alias))
        .map(|(_, alias)| (alias, None))
        .chain(
            // Kept means the same path from the same template: a path another template gave
            // before is written again, so that its record names the template that keeps it.
            new.iter()
                .filter(|(t, alias)| {
                    moved
                        || !old
                            .iter()
                            .any(|(ot, a)| a == alias && ot.as_str() == t.as_str())
                })
                .map(|(t, alias)| (alias, Some(*t))),
        )
        .collect();
    let keys: Vec<Key> = writes
        .iter()
        .map(|(alias, _)| layout::item_key(alias))
        .collect();
    read_slots(ctx, plan, &keys)?;
    for ((alias, template), key) in writes.into_iter().zip(keys) {
        match template {
            None => free(ctx, plan, key, alias, before)?,
            Some(template) => {
                let (path, record) = after.expect("a gained alias has an item after the write");
                take(ctx, plan, index, key, alias, template, path, record, before)?;
            }
        }
    }
    // The item as it was under `alias`, if it was there: a change's before image.
    let was_under = |alias: &KeyPath| -> Result<Option<Item>, Error> {
        match before {
            Some((path, record)) if old.iter().any(|(_, a)| a == alias) => {
                let mut item = to_item(path.clone(), record.clone())?;
                item.alias = Some(alias.clone());
                Ok(Some(item))
            }
            _ => Ok(None),
        }
    };
    if let Some((path, record)) = after {
        for (_, alias) in &new {
            let mut item = to_item(path.clone(), record.clone())?;
            item.alias = Some(alias.clone());
            plan.changes.push(PlannedChange {
                change: Change::Put(item),
                before: was_under(alias)?,
            });
        }
    }
    if let Some((path, record)) = before {
        for (_, alias) in old.iter().filter(|(_, a)| !new.iter().any(|(_, n)| n == a)) {
            plan.changes.push(PlannedChange {
                change: Change::Delete {
                    path: path.clone(),
                    version: record.version,
                    alias: Some(alias.clone()),
                },
                before: was_under(alias)?,
            });
        }
    }
    Ok(())
}

/// The aliases `templates` give the item at `path` stored as `record`, each with its template.
///
/// # Errors
/// The template whose member does not fit, and why.
fn aliases_of<'t>(
    definitions: &Definitions,
    templates: &'t [Template],
    path: &KeyPath,
    record: &Record,
) -> Result<Vec<(&'t Template, KeyPath)>, (&'t Template, crate::aliases::template::Unfit)> {
    if templates.is_empty() {
        return Ok(Vec::new());
    }
    // Stored values are valid JSON text.
    let value = newest_value(definitions, path, &record.value, templates);
    let mut out: Vec<(&Template, KeyPath)> = Vec::new();
    for template in templates {
        if let Some(alias) = template.render(path, &value).map_err(|u| (template, u))?
            && !out.iter().any(|(_, a)| *a == alias)
        {
            out.push((template, alias));
        }
    }
    Ok(out)
}

/// Reads the records of `keys` this plan has not read yet (together).
fn read_slots<R: Reader + ?Sized>(
    ctx: &Context<'_, R>,
    plan: &mut Plan,
    keys: &[Key],
) -> Result<(), Error> {
    let mut unread: Vec<Key> = keys
        .iter()
        .filter(|k| !plan.aliases.contains_key(*k))
        .cloned()
        .collect();
    unread.sort();
    unread.dedup();
    let records = match unread.len() {
        0 => return Ok(()),
        1 => vec![ctx.reader.get(&unread[0])?],
        _ => ctx.reader.get_batch(&unread)?,
    };
    for (key, read) in unread.into_iter().zip(records) {
        // An expired record still names its holder: the sweeper frees an expired item's
        // aliases, which expired with it; anyone else may take them.
        let (holder, is_item) = match &read {
            Some(r) if !r.value.is_empty() => {
                let (holder, is_item) = holder_of(&key, r)?;
                (Some(holder), is_item)
            }
            _ => (None, false),
        };
        let live = read.as_ref().is_some_and(|r| is_live(r, ctx.now));
        plan.aliases.insert(
            key,
            AliasSlot {
                read,
                holder,
                is_item,
                live,
                op: None,
            },
        );
    }
    Ok(())
}

/// Who holds a live record's path, and whether that is an item stored there (not an alias).
fn holder_of(key: &Key, record: &Record) -> Result<(KeyPath, bool), Error> {
    match parse_alias(&record.value)? {
        Some(of) => Ok((of.item, false)),
        None => KeyPath::from_partition_and_sort(&key.partition, &key.sort)
            .map(|path| (path, true))
            .map_err(|e| crate::model::error::StorageError::new("corrupt item key", e).into()),
    }
}

/// What the key holds as read, as a condition.
/// The alias at `key` is no longer `before`'s: a tombstone, if the record is still its alias.
fn free<R: Reader + ?Sized>(
    ctx: &Context<'_, R>,
    plan: &mut Plan,
    key: Key,
    alias: &KeyPath,
    before: Side<'_>,
) -> Result<(), Error> {
    let Some((item, _)) = before else {
        return Ok(());
    };
    let slot = &plan.aliases[&key];
    if slot.is_item || slot.holder.as_ref() != Some(item) {
        // Another item's, or nothing (a template still being built had not reached it).
        return Ok(());
    }
    // Whatever this plan wrote there before, the key ends with no alias: a tombstone over the
    // record read, or (nothing was there) the key as read.
    let write = match slot.read.as_ref().filter(|r| !r.value.is_empty()) {
        Some(read) => WriteOp::Put {
            key: key.clone(),
            record: tombstone(read, next_version(alias, read.version)?, ctx.now),
            expect: Some(Expect::Version(read.version)),
        },
        None => WriteOp::Check {
            key: key.clone(),
            expect: Expect::as_read(slot.read.as_ref()),
        },
    };
    place(plan, key, alias, write, None);
    Ok(())
}

/// The alias at `key` becomes the item's at `path`, or the plan fails if someone else holds it.
#[allow(clippy::too_many_arguments)]
fn take<R: Reader + ?Sized>(
    ctx: &Context<'_, R>,
    plan: &mut Plan,
    index: usize,
    key: Key,
    alias: &KeyPath,
    template: &Template,
    path: &KeyPath,
    record: &Record,
    before: Side<'_>,
) -> Result<(), Error> {
    // An alias path is a key like an item's: the same limits (every backend takes it).
    crate::encoding::limits::check_key_sizes(alias, &key)?;
    // An item this plan writes at the alias path (the item's own path, or another operation's)
    // holds it, though the store does not have it yet.
    let slot = &plan.aliases[&key];
    if let Some(at) = plan
        .batch
        .ops
        .iter()
        .enumerate()
        .position(|(i, op)| Some(i) != slot.op && *op.key() == key)
    {
        return Err(Error::AliasTaken {
            alias: alias.clone(),
            holder: plan.owners[at].clone(),
            index,
        });
    }
    if let Some(holder) = slot.holder.as_ref().filter(|_| slot.live) {
        // The item keeps its own alias (a put, a move taking it along); anyone else's, or an
        // item stored at the path, stops the write.
        let own = holder == path || before.is_some_and(|(b, _)| b == holder);
        if slot.is_item || !own {
            return Err(Error::AliasTaken {
                alias: alias.clone(),
                holder: holder.clone(),
                index,
            });
        }
    }
    let read = slot.read.as_ref();
    let write = WriteOp::Put {
        key: key.clone(),
        record: alias_record(
            alias,
            template.as_str(),
            path,
            record.expires_at,
            read,
            ctx.now,
        )?,
        expect: Some(Expect::as_read(read)),
    };
    place(plan, key, alias, write, Some(path.clone()));
    Ok(())
}

/// Adds `write` for the alias at `key`, or replaces this plan's earlier write of it; `holder`:
/// whose alias the key is once the batch commits.
fn place(plan: &mut Plan, key: Key, alias: &KeyPath, write: WriteOp, holder: Option<KeyPath>) {
    let op = match plan.aliases[&key].op {
        Some(op) => {
            plan.batch.ops[op] = write;
            op
        }
        None => {
            plan.push(write, alias, false);
            plan.batch.ops.len() - 1
        }
    };
    if let Some(slot) = plan.aliases.get_mut(&key) {
        slot.op = Some(op);
        slot.live = holder.is_some();
        slot.holder = holder;
        slot.is_item = false;
    }
}

/// A stored item value, as `templates` read it: in its namespace's newest version
/// (docs/migrations.md), and only the top-level members they name
/// ([`read_members`]); `null` for bytes that are not (never written by this store).
pub(crate) fn newest_value(
    definitions: &Definitions,
    path: &KeyPath,
    stored: &[u8],
    templates: &[Template],
) -> serde_json::Value {
    let wanted: Vec<&str> = templates.iter().flat_map(Template::members_read).collect();
    if wanted.is_empty() {
        // Templates that fill ids only from the path read nothing of the value.
        return serde_json::Value::Null;
    }
    let Some((stamp, json)) = split(stored) else {
        return serde_json::Value::Null;
    };
    let text = std::str::from_utf8(json).unwrap_or("null");
    match newest_text(definitions, path, text, stamp) {
        Ok(Some(newest)) => read_members(newest.as_str(), &wanted),
        _ => read_members(text, &wanted),
    }
}
