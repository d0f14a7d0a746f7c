//! Alias builds (docs/aliases.md): a template added to a namespace that already has items gets
//! its aliases written by a build, and a template removed gets them removed; both resumable.
//!
//! A definition write that adds a template stores, in the same batch, the template's build
//! record (encoding/layout.rs) in state `building`; one that removes a template, a record in state
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
//! [`Error::AliasBuilding`] (read/aliases.rs).
//!
//! This module is the build record and what it says; write/alias_builds.rs plans and commits
//! the steps, jobs/alias_builds.rs runs them.

use crate::backend::{Key, Reader, Record};
use crate::encoding::layout;
use crate::model::error::Error;
use crate::model::error::StorageError;
use pathdb_keys::KeyPath;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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

/// The state of one template's aliases
/// ([`Store::alias_builds`](crate::store::Store::alias_builds)).
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
pub(crate) struct Stored {
    pub(crate) state: AliasState,
    #[serde(default)]
    pub(crate) checked: u64,
    #[serde(default)]
    pub(crate) written: u64,
    /// The last key scanned (hex partition, hex sort); `None`: from the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cursor: Option<(String, String)>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) conflicts: Vec<(String, Vec<String>)>,
}

impl Stored {
    pub(crate) fn start(state: AliasState) -> Stored {
        Stored {
            state,
            checked: 0,
            written: 0,
            cursor: None,
            conflicts: Vec::new(),
        }
    }

    pub(crate) fn cursor(&self) -> Result<Option<Key>, Error> {
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
    pub(crate) fn set_cursor(&mut self, key: Option<Key>) {
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

/// A build record's value, read.
pub(crate) fn stored_of(record: &Record) -> Result<Stored, Error> {
    serde_json::from_slice(&record.value)
        .map_err(|e| StorageError::new("corrupt alias build record", e).into())
}

/// The build record of `stored`, written over `read`.
pub(crate) fn record_of(stored: &Stored, read: Option<&Record>, now: i64) -> Record {
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
