//! The writes of alias builds (aliases/builds.rs says what a build is): the build records a
//! definition change starts, a retry after a conflict, and one step of a build or removal, each
//! committed through write/commit.rs. jobs/alias_builds.rs runs the steps.

use crate::aliases::builds::{AliasState, MAX_CONFLICTS, Stored, record_of, stored_of};
use crate::aliases::template::Template;
use crate::backend::{Backend, Expect, Key, Reader, Record, WriteBatch, WriteOp};
use crate::encoding::alias::{is_alias, parse_alias};
use crate::encoding::layout;
use crate::encoding::limits::next_version;
use crate::encoding::record::{Kind, alias_record, classify, is_live, tombstone};
use crate::model::error::{Error, StorageError};
use crate::namespaces::definitions::Definitions;
use crate::write::commit::{Db, Sent};
use crate::write::stages::aliases::newest_value;
use pathdb_keys::KeyPath;
use std::collections::BTreeMap;

/// Records one step reads at most.
const STEP_SCAN: usize = 1000;

/// The build records a definition change from `old` to `new` templates writes, in the same
/// batch as the definition: `building` for an added template, `removing` for a removed one.
pub(crate) fn definition_changed<R: Reader + ?Sized>(
    reader: &R,
    namespace: &str,
    old: &[&str],
    new: &[&str],
    now: i64,
) -> Result<Vec<WriteOp>, Error> {
    let mut ops = Vec::new();
    let added = new
        .iter()
        .filter(|a| !old.contains(a))
        .map(|a| (a, AliasState::Building));
    let removed = old
        .iter()
        .filter(|a| !new.contains(a))
        .map(|a| (a, AliasState::Removing));
    for (template, state) in added.chain(removed) {
        let key = layout::alias_build_key(namespace, template);
        let read = reader.get(&key)?;
        let was = read
            .as_ref()
            .filter(|r| !r.value.is_empty())
            .map(stored_of)
            .transpose()?
            .map(|s| s.state);
        // Its old aliases are still being deleted: a build now would take them for its own.
        if state == AliasState::Building && was == Some(AliasState::Removing) {
            return Err(Error::InvalidRequest(format!(
                "alias {template} of namespace {namespace} was removed and its aliases are still                  being deleted; add it again once it is gone from the namespace's aliases"
            )));
        }
        ops.push(WriteOp::Put {
            key,
            record: record_of(&Stored::start(state), read.as_ref(), now),
            expect: Some(Expect::as_read(read.as_ref())),
        });
    }
    Ok(ops)
}

/// Starts the build of a template in `conflict` again from the beginning.
///
/// # Errors
/// [`Error::InvalidRequest`] if it is not in conflict; storage failures.
pub(crate) fn retry<B: Backend>(db: &Db<B>, namespace: &str, template: &str) -> Result<(), Error> {
    let now = db.now();
    let key = layout::alias_build_key(namespace, template);
    let read = db.backend.reader()?.get(&key)?;
    let state = read.as_ref().map(stored_of).transpose()?.map(|s| s.state);
    if state != Some(AliasState::Conflict) {
        return Err(Error::InvalidRequest(format!(
            "alias {template} of namespace {namespace} is not in conflict ({})",
            state.map_or_else(|| "no build".to_owned(), |s| s.to_string())
        )));
    }
    let op = WriteOp::Put {
        key,
        record: record_of(&Stored::start(AliasState::Building), read.as_ref(), now),
        expect: Some(Expect::as_read(read.as_ref())),
    };
    // A concurrent change (another retry) leaves it building too.
    db.send(WriteBatch { ops: vec![op] }).map(|_| ())
}

/// What one step did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Committed; more to do.
    More,
    /// Nothing (left) to do: the build is ready, in conflict or gone.
    Done,
    /// The state changed (ready, conflict, removed): the store's copy needs reading again.
    Changed,
}

/// Runs one step of the build (or removal) of `template` of `namespace`, in batches the
/// backend takes.
pub(crate) fn step<B: Backend>(db: &Db<B>, namespace: &str, template: &str) -> Result<Step, Error> {
    let (now, max_ops) = (db.now(), db.backend.max_batch_ops());
    let reader = db.backend.reader()?;
    let key = layout::alias_build_key(namespace, template);
    let Some(read) = reader.get(&key)?.filter(|r| !r.value.is_empty()) else {
        return Ok(Step::Done);
    };
    let mut stored = stored_of(&read)?;
    // Each alias costs its record and a check of its item; one op for the build record.
    let most = (max_ops.saturating_sub(1) / 2).clamp(1, 500);
    let (ops, finished) = match stored.state {
        AliasState::Ready | AliasState::Conflict => return Ok(Step::Done),
        AliasState::Building => {
            let parsed = Template::parse(template)?;
            let definitions = db.namespaces.current(&reader)?;
            match build_ops(
                &reader,
                &definitions,
                &mut stored,
                namespace,
                &parsed,
                now,
                most,
            )? {
                Some(found) => found,
                None => {
                    // Conflict: only the build record changes.
                    let op = WriteOp::Put {
                        key,
                        record: record_of(&stored, Some(&read), now),
                        expect: Some(Expect::Version(read.version)),
                    };
                    return commit(db, vec![op])
                        .map(|ok| if ok { Step::Changed } else { Step::More });
                }
            }
        }
        AliasState::Removing => removal_ops(&reader, &mut stored, namespace, template, now, most)?,
    };
    drop(reader);
    let mut ops = ops;
    let state_changes = finished;
    if finished && stored.state == AliasState::Removing {
        ops.push(WriteOp::Delete {
            key,
            expect: Some(Expect::Version(read.version)),
        });
    } else {
        if finished {
            stored.state = AliasState::Ready;
            stored.cursor = None;
        }
        ops.push(WriteOp::Put {
            key,
            record: record_of(&stored, Some(&read), now),
            expect: Some(Expect::Version(read.version)),
        });
    }
    Ok(match commit(db, ops)? {
        true if state_changes => Step::Changed,
        _ => Step::More,
    })
}

/// Commits `ops`; `false` if a condition failed (the step runs again from what is stored).
fn commit<B: Backend>(db: &Db<B>, ops: Vec<WriteOp>) -> Result<bool, Error> {
    Ok(db.send(WriteBatch { ops })? == Sent::Committed)
}

/// The live items after the cursor, up to `most` that get an alias (or the scan's end); moves
/// the cursor past them. Calls `each` with each live item of `namespace`.
fn scan_items<R: Reader + ?Sized>(
    reader: &R,
    stored: &mut Stored,
    now: i64,
    mut each: impl FnMut(Kind<'_>, &Key, &Record) -> Result<bool, Error>,
) -> Result<bool, Error> {
    let mut after = stored.cursor()?;
    let batch = reader.scan_all(after.as_ref(), STEP_SCAN)?;
    let exhausted = batch.len() < STEP_SCAN;
    for (key, record) in &batch {
        let kind = classify(key, record, now);
        let live = matches!(kind, Kind::Item | Kind::Alias { live: true });
        if live && !each(kind, key, record)? {
            // `each` is full: resume at this record.
            stored.set_cursor(after);
            return Ok(false);
        }
        after = Some(key.clone());
    }
    stored.set_cursor(after);
    Ok(exhausted)
}

/// The writes of one build step, and whether the scan is over; `None` when it found a
/// conflict (recorded in `stored`).
fn build_ops<R: Reader + ?Sized>(
    reader: &R,
    definitions: &Definitions,
    stored: &mut Stored,
    namespace: &str,
    template: &Template,
    now: i64,
    most: usize,
) -> Result<Option<(Vec<WriteOp>, bool)>, Error> {
    // (item, its version and expiry, its alias)
    let mut found: Vec<(KeyPath, u64, Option<i64>, KeyPath)> = Vec::new();
    let mut checked = 0;
    let finished = scan_items(reader, stored, now, |kind, key, record| {
        if kind != Kind::Item {
            return Ok(true);
        }
        let Ok(path) = KeyPath::from_partition_and_sort(&key.partition, &key.sort) else {
            return Ok(true);
        };
        if path.last().namespace().as_str() != namespace {
            return Ok(true);
        }
        if found.len() == most {
            return Ok(false);
        }
        checked += 1;
        let value = newest_value(
            definitions,
            &path,
            &record.value,
            std::slice::from_ref(template),
        );
        // A member of the wrong type, or an alias path over the key limits, gives no alias
        // here; the item's next write is refused until it is fixed (docs/aliases.md).
        if let Ok(Some(alias)) = template.render(&path, &value)
            && crate::encoding::limits::check_key(&alias).is_ok()
        {
            found.push((path, record.version, record.expires_at, alias));
        }
        Ok(true)
    })?;
    // Read each alias key once (two items may want one; a batch read refuses duplicates).
    let mut keys: Vec<Key> = found
        .iter()
        .map(|(_, _, _, a)| layout::item_key(a))
        .collect();
    keys.sort();
    keys.dedup();
    let records = match keys.len() {
        0 => Vec::new(),
        1 => vec![reader.get(&keys[0])?],
        _ => reader.get_batch(&keys)?,
    };
    let read: BTreeMap<Key, Option<Record>> = keys.into_iter().zip(records).collect();
    let slots: Vec<&Option<Record>> = found
        .iter()
        .map(|(_, _, _, a)| &read[&layout::item_key(a)])
        .collect();
    let mut ops = Vec::new();
    let mut conflicts: Vec<(String, Vec<String>)> = Vec::new();
    let mut taken: BTreeMap<&KeyPath, &KeyPath> = BTreeMap::new();
    let mut written = 0;
    for ((item, version, expires_at, alias), read) in found.iter().zip(slots) {
        // Who holds it, and whether by this template.
        let holder = match read.as_ref().filter(|r| is_live(r, now)) {
            Some(r) => Some(match parse_alias(&r.value)? {
                Some(of) => (of.template == template.as_str(), of.item),
                None => (false, alias.clone()),
            }),
            None => taken.get(alias).map(|h| (true, (*h).clone())),
        };
        match holder {
            // Written already, by a write since the template was added.
            Some((true, h)) if h == *item => continue,
            // The item's by another template that gives the same path (a template renamed
            // a member): written again, naming this one.
            Some((false, h)) if h == *item && read.as_ref().is_some_and(is_alias_record) => {}
            Some((_, h)) => {
                if conflicts.len() < MAX_CONFLICTS {
                    conflicts.push((alias.to_string(), vec![h.to_string(), item.to_string()]));
                }
                continue;
            }
            None => {}
        }
        taken.insert(alias, item);
        ops.push(WriteOp::Put {
            key: layout::item_key(alias),
            record: alias_record(
                alias,
                template.as_str(),
                item,
                *expires_at,
                read.as_ref(),
                now,
            )?,
            expect: Some(Expect::as_read(read.as_ref())),
        });
        // Only for the item as read: a write since has written its alias itself.
        ops.push(WriteOp::Check {
            key: layout::item_key(item),
            expect: Expect::Version(*version),
        });
        written += 1;
    }
    if !conflicts.is_empty() {
        stored.state = AliasState::Conflict;
        stored.conflicts = conflicts;
        stored.cursor = None;
        return Ok(None);
    }
    stored.checked += checked;
    stored.written += written;
    Ok(Some((ops, finished)))
}

fn is_alias_record(record: &Record) -> bool {
    is_alias(&record.value)
}

/// The writes of one removal step: tombstones over the template's alias records.
fn removal_ops<R: Reader + ?Sized>(
    reader: &R,
    stored: &mut Stored,
    namespace: &str,
    template: &str,
    now: i64,
    most: usize,
) -> Result<(Vec<WriteOp>, bool), Error> {
    let mut ops = Vec::new();
    let mut checked = 0;
    let finished = scan_items(reader, stored, now, |_, key, record| {
        let Some(of) = parse_alias(&record.value)? else {
            return Ok(true);
        };
        if of.template != template || of.item.last().namespace().as_str() != namespace {
            return Ok(true);
        }
        if ops.len() == most {
            return Ok(false);
        }
        checked += 1;
        let path = KeyPath::from_partition_and_sort(&key.partition, &key.sort)
            .map_err(|e| StorageError::new("corrupt alias key", e))?;
        ops.push(WriteOp::Put {
            key: key.clone(),
            record: tombstone(record, next_version(&path, record.version)?, now),
            expect: Some(Expect::Version(record.version)),
        });
        Ok(true)
    })?;
    stored.checked += checked;
    stored.written += checked;
    Ok((ops, finished))
}
