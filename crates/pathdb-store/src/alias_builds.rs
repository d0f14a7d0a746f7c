//! Alias builds (docs/aliases.md): a template added to a namespace that already has items gets
//! its aliases written by a build, and a template removed gets them removed; both resumable.
//!
//! A definition write that adds a template stores, in the same batch, the template's build
//! record (layout.rs) in state `building`; one that removes a template, a record in state
//! `removing`. From then on every write maintains the added template like any other (the alias
//! stage reads the definition), so a build only has to catch up with the items written before:
//! it walks the whole database (the full scan behind export; the namespace of an item is only
//! known from its path) a step at a time. Each step commits the aliases it writes together with
//! the build record's new cursor and counts, each conditional on the item being as read and the
//! alias key as read, so a crash or a concurrent writer costs at most one step again.
//!
//! A build that finds an alias held by another item (two users with one email) stops in state
//! `conflict` with those items listed, writes nothing more, and starts again from the beginning
//! when retried. A removal deletes the template's alias records (they name their template), then
//! its build record. Reads through a template that is not `ready` fail with
//! [`Error::AliasBuilding`] (store.rs).

use crate::aliases::{Template, parse_alias};
use crate::backend::{Backend, Expect, Key, Reader, Record, WriteBatch, WriteError, WriteOp};
use crate::limits::next_version;
use crate::record::{alias_record, is_live, tombstone};
use crate::{Error, StorageError, layout};
use pathdb_keys::KeyPath;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Records one step reads at most.
const STEP_SCAN: usize = 1000;
/// Items an alias conflict lists at most.
pub const MAX_CONFLICTS: usize = 20;

/// Where a template's aliases stand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AliasState {
    /// Writes maintain it; a build is writing the aliases of the items stored before.
    Building,
    /// Every item has its alias: reads through it are served.
    Ready,
    /// The build found an alias held by two items; it waits for a retry.
    Conflict,
    /// The template was removed; its aliases are being deleted.
    Removing,
}

impl AliasState {
    /// Whether reads through the template wait: its build is under way or stopped.
    pub(crate) fn is_unbuilt(self) -> bool {
        matches!(self, AliasState::Building | AliasState::Conflict)
    }

    /// Its name: `building`, `ready`, `conflict` or `removing`.
    pub fn as_str(self) -> &'static str {
        match self {
            AliasState::Building => "building",
            AliasState::Ready => "ready",
            AliasState::Conflict => "conflict",
            AliasState::Removing => "removing",
        }
    }
}

impl std::fmt::Display for AliasState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Two or more items that a template gives the same alias.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AliasConflict {
    /// The alias path.
    pub alias: KeyPath,
    /// The items it would name.
    pub items: Vec<KeyPath>,
}

/// The state of one template's aliases ([`Store::alias_builds`](crate::Store::alias_builds)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AliasBuild {
    /// The template.
    pub template: String,
    /// Where it stands.
    pub state: AliasState,
    /// Items of the namespace the build (or removal) has checked.
    pub checked: u64,
    /// Alias records it wrote (or removed).
    pub written: u64,
    /// For [`AliasState::Conflict`]: what stopped it, at most [`MAX_CONFLICTS`].
    pub conflicts: Vec<AliasConflict>,
}

/// A build record's value.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Stored {
    state: AliasState,
    #[serde(default)]
    checked: u64,
    #[serde(default)]
    written: u64,
    /// The last key scanned (hex partition, hex sort); `None`: from the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cursor: Option<(String, String)>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    conflicts: Vec<(String, Vec<String>)>,
}

impl Stored {
    fn start(state: AliasState) -> Stored {
        Stored {
            state,
            checked: 0,
            written: 0,
            cursor: None,
            conflicts: Vec::new(),
        }
    }

    fn cursor(&self) -> Result<Option<Key>, Error> {
        let Some((partition, sort)) = &self.cursor else {
            return Ok(None);
        };
        let bytes = |h: &str| {
            hex::decode(h).map_err(|e| StorageError::new("corrupt alias build cursor", e))
        };
        Ok(Some(Key {
            partition: bytes(partition)?,
            sort: bytes(sort)?,
        }))
    }

    /// Resume after `key` (`None`: from the start).
    fn set_cursor(&mut self, key: Option<Key>) {
        self.cursor = key.map(|k| (hex::encode(&k.partition), hex::encode(&k.sort)));
    }

    fn public(&self, template: &str) -> AliasBuild {
        AliasBuild {
            template: template.to_owned(),
            state: self.state,
            checked: self.checked,
            written: self.written,
            conflicts: self
                .conflicts
                .iter()
                .filter_map(|(alias, items)| {
                    Some(AliasConflict {
                        alias: alias.parse().ok()?,
                        items: items.iter().filter_map(|i| i.parse().ok()).collect(),
                    })
                })
                .collect(),
        }
    }
}

fn stored_of(record: &Record) -> Result<Stored, Error> {
    serde_json::from_slice(&record.value)
        .map_err(|e| StorageError::new("corrupt alias build record", e).into())
}

fn record_of(stored: &Stored, read: Option<&Record>, now: i64) -> Record {
    Record {
        version: read.map_or(1, |r| r.version + 1),
        created_at: read.map_or(now, |r| r.created_at),
        modified_at: now,
        expires_at: None,
        // Plain numbers and strings always serialize.
        value: serde_json::to_vec(stored).unwrap_or_default(),
    }
}

/// Every build record, by namespace and template.
pub(crate) type Builds = BTreeMap<(String, String), AliasBuild>;

/// The build record of `template` of `namespace`, as stored now.
pub(crate) fn read_one<R: Reader + ?Sized>(
    reader: &R,
    namespace: &str,
    template: &str,
) -> Result<Option<AliasBuild>, Error> {
    match reader.get(&layout::alias_build_key(namespace, template))? {
        Some(record) if !record.value.is_empty() => Ok(Some(stored_of(&record)?.public(template))),
        _ => Ok(None),
    }
}

/// Reads every build record.
pub(crate) fn read_all<R: Reader + ?Sized>(reader: &R) -> Result<Builds, Error> {
    let mut out = Builds::new();
    for (sort, record) in reader.scan(
        layout::SYSTEM_PARTITION,
        &layout::alias_build_range(),
        crate::backend::Direction::Forward,
        usize::MAX,
    )? {
        if record.value.is_empty() {
            continue;
        }
        if let Some((namespace, template)) = layout::parse_alias_build_key(&sort) {
            let build = stored_of(&record)?.public(&template);
            out.insert((namespace, template), build);
        }
    }
    Ok(out)
}

/// Where each of `templates`, those of `namespace`, stands (`ready` without a build record),
/// then its templates being removed; taken out of `builds`.
pub(crate) fn of_namespace<'t>(
    namespace: &str,
    templates: impl Iterator<Item = &'t str>,
    builds: &mut Builds,
) -> Vec<AliasBuild> {
    let mut out: Vec<AliasBuild> = templates
        .map(|template| {
            builds
                .remove(&(namespace.to_owned(), template.to_owned()))
                .unwrap_or(AliasBuild {
                    template: template.to_owned(),
                    state: AliasState::Ready,
                    checked: 0,
                    written: 0,
                    conflicts: Vec::new(),
                })
        })
        .collect();
    let removing: Vec<(String, String)> = builds
        .iter()
        .filter(|((ns, _), b)| ns == namespace && b.state == AliasState::Removing)
        .map(|(k, _)| k.clone())
        .collect();
    out.extend(removing.iter().filter_map(|k| builds.remove(k)));
    out
}

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
pub(crate) fn retry<B: Backend>(
    backend: &B,
    namespace: &str,
    template: &str,
    now: i64,
) -> Result<(), Error> {
    let key = layout::alias_build_key(namespace, template);
    let read = backend.reader()?.get(&key)?;
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
    match backend.write(WriteBatch { ops: vec![op] }) {
        Ok(()) | Err(WriteError::ConditionFailed { .. }) => Ok(()),
        Err(WriteError::Storage(e)) => Err(e.into()),
    }
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

/// Runs one step of the build (or removal) of `template` of `namespace`; `max_ops`: the most
/// operations one batch may hold.
pub(crate) fn step<B: Backend>(
    backend: &B,
    namespace: &str,
    template: &str,
    now: i64,
    max_ops: usize,
) -> Result<Step, Error> {
    let reader = backend.reader()?;
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
            match build_ops(&reader, &mut stored, namespace, &parsed, now, most)? {
                Some(found) => found,
                None => {
                    // Conflict: only the build record changes.
                    let op = WriteOp::Put {
                        key,
                        record: record_of(&stored, Some(&read), now),
                        expect: Some(Expect::Version(read.version)),
                    };
                    return commit(backend, vec![op])
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
    Ok(match commit(backend, ops)? {
        true if state_changes => Step::Changed,
        _ => Step::More,
    })
}

/// Commits `ops`; `false` if a condition failed (the step runs again from what is stored).
fn commit<B: Backend>(backend: &B, ops: Vec<WriteOp>) -> Result<bool, Error> {
    match backend.write(WriteBatch { ops }) {
        Ok(()) => Ok(true),
        Err(WriteError::ConditionFailed { .. }) => Ok(false),
        Err(WriteError::Storage(e)) => Err(e.into()),
    }
}

/// The live items after the cursor, up to `most` that get an alias (or the scan's end); moves
/// the cursor past them. Calls `each` with each live item of `namespace`.
fn scan_items<R: Reader + ?Sized>(
    reader: &R,
    stored: &mut Stored,
    now: i64,
    mut each: impl FnMut(&Key, &Record) -> Result<bool, Error>,
) -> Result<bool, Error> {
    let mut after = stored.cursor()?;
    let batch = reader.scan_all(after.as_ref(), STEP_SCAN)?;
    let exhausted = batch.len() < STEP_SCAN;
    for (key, record) in &batch {
        let internal = key.partition == layout::SYSTEM_PARTITION
            || layout::is_group_internal(&key.sort)
            || layout::is_revision(&key.sort);
        if !internal && is_live(record, now) && !each(key, record)? {
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
    stored: &mut Stored,
    namespace: &str,
    template: &Template,
    now: i64,
    most: usize,
) -> Result<Option<(Vec<WriteOp>, bool)>, Error> {
    // (item, its version and expiry, its alias)
    let mut found: Vec<(KeyPath, u64, Option<i64>, KeyPath)> = Vec::new();
    let mut checked = 0;
    let finished = scan_items(reader, stored, now, |key, record| {
        if parse_alias(&record.value)?.is_some() {
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
        let value: serde_json::Value = serde_json::from_slice(&record.value).unwrap_or_default();
        // A member of the wrong type, or an alias path over the key limits, gives no alias
        // here; the item's next write is refused until it is fixed (docs/aliases.md).
        if let Ok(Some(alias)) = template.render(&path, &value)
            && crate::limits::check_key(&alias).is_ok()
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
    crate::aliases::is_alias(&record.value)
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
    let finished = scan_items(reader, stored, now, |key, record| {
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
