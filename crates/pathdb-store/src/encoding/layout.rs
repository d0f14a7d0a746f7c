//! Where the data API puts things in the backend's key space.
//!
//! | what | partition | sort key |
//! | --- | --- | --- |
//! | item | encoded group | encoded rest of the path (`00` for the group's own item) |
//! | tombstone of a deleted or expired item | the item's | the item's (a record with an empty value) |
//! | revision | encoded group | `ff` + item sort key + big-endian `u64::MAX - version` |
//! | expiry index entry | `00` | `01` + big-endian expiry + `u16` partition length + partition + sort |
//! | namespace definition (namespaces/mod.rs; an earlier build: its history setting, a number) | `00` | `02` + namespace |
//! | sequence of a namespace of groups | `00` | `03` + namespace |
//! | the key that seals tokens (encoding/token.rs) | `00` | `04` |
//! | an unfinished subtree delete, move or copy (jobs/subtree.rs) | `00` | `05` + operation + `u16` length of `from` + encoded `from` + encoded `to` |
//! | the mark that every used path keeps a record (jobs/upgrade.rs) | `00` | `06` |
//! | the build (or removal) of a namespace's alias template (aliases/builds.rs) | `00` | `07` + namespace + `00` + template |
//! | a role (access/roles.rs) | `00` | `08` + role name |
//! | an issued access token (access/tokens.rs): its hash, role and variables | `00` | `09` + token id |
//! | an alias path (aliases/template.rs): a record whose value starts with `00`, naming its item | the alias's group | the alias's sort key |
//! | sequence of a namespace under a parent | the parent's group | `ff fe` + `u16` length of the parent's sort key + that sort key + namespace |
//! | change log entry (changes.rs) | the group | `ff ff` + big-endian entry number |
//!
//! Item sort keys start with `00` or a namespace byte (`A-Z`, `_`, `a-z`), so revisions (`ff`)
//! never collide with or sort among items, and a partition's items are `[00, ff)`. A revision's
//! second byte is its item's first (below `80`), so `ff fe` and `ff ff` are free for the group's
//! sequences and change log, after every revision. No group
//! encoding starts with `00`, so the system partition is never a group. Revisions of one item are
//! contiguous and newest first.
//!
//! A deleted or expired item leaves a tombstone under its own key: a record with an empty value
//! (an item's value is JSON text, never empty) whose version is the last one the path used. The
//! next write of the path continues from it, so a version number is never used twice for one path
//! (an `If-Match` held from before a delete cannot match a re-created item), and every write of a
//! used path stays conditional on the version stored under its key. Reads treat a tombstone as
//! absent. Tombstones are kept: one small record per deleted path (docs/versions.md).

use crate::backend::{Key, SortRange};
use pathdb_keys::KeyPath;
use std::ops::Bound;

pub(crate) const SYSTEM_PARTITION: &[u8] = &[0x00];
const EXPIRY_INDEX: u8 = 0x01;
/// A namespace's definition (namespaces/mod.rs); an earlier build kept only its history setting
/// here, as a bare number.
const NAMESPACE: u8 = 0x02;
const GROUP_SEQUENCE: u8 = 0x03;
const TOKEN_KEY: u8 = 0x04;
const SUBTREE_JOB: u8 = 0x05;
const USED_PATHS_RECORDED: u8 = 0x06;
const ALIAS_BUILD: u8 = 0x07;
const ROLE: u8 = 0x08;
const ACCESS_TOKEN: u8 = 0x09;
const RETIRED_TOKEN_KEYS: u8 = 0x0a;
const DEFINITION_VERSION: u8 = 0x0b;
const REWRITE: u8 = 0x0c;
const COMPACT_LOG: u8 = 0x0d;
const REVISION: u8 = 0xff;
const SEQUENCE: [u8; 2] = [0xff, 0xfe];
const CHANGE_LOG: [u8; 2] = [0xff, 0xff];

pub(crate) fn item_key(path: &KeyPath) -> Key {
    Key {
        partition: path.partition_key(),
        sort: path.sort_key(),
    }
}

/// All item sort keys of a partition.
pub(crate) fn items_upper_bound() -> Bound<Vec<u8>> {
    Bound::Excluded(vec![REVISION])
}

/// The item sort keys of `path` and its subtree, within its partition (a group's subtree is
/// every item of the partition, never its revisions, sequences or change log).
pub(crate) fn subtree_items(path: &KeyPath) -> SortRange {
    let range = path.sort_key_subtree_range();
    SortRange {
        start: Bound::Included(range.start),
        end: range.end.map_or_else(items_upper_bound, Bound::Excluded),
    }
}

/// The revisions of every item whose sort key lies in `[first, last]`.
pub(crate) fn revisions_between(first: &[u8], last: &[u8]) -> SortRange {
    let revision = |sort: &[u8], version: [u8; 8]| [&[REVISION][..], sort, &version].concat();
    SortRange {
        start: Bound::Included(revision(first, [0; 8])),
        end: Bound::Included(revision(last, [0xff; 8])),
    }
}

/// Bytes a revision's sort key adds to its item's: the `ff` mark and the version.
pub(crate) const REVISION_OVERHEAD: usize = 9;

pub(crate) fn revision_key(item: &Key, version: u64) -> Key {
    let mut sort = Vec::with_capacity(item.sort.len() + 9);
    sort.push(REVISION);
    sort.extend_from_slice(&item.sort);
    sort.extend_from_slice(&(u64::MAX - version).to_be_bytes());
    Key {
        partition: item.partition.clone(),
        sort,
    }
}

/// The revisions of one item, newest first when scanned forward.
pub(crate) fn revision_range(item: &Key) -> SortRange {
    let mut start = Vec::with_capacity(item.sort.len() + 9);
    start.push(REVISION);
    start.extend_from_slice(&item.sort);
    let mut end = start.clone();
    start.extend_from_slice(&[0; 8]);
    end.extend_from_slice(&[0xff; 8]);
    SortRange {
        start: Bound::Included(start),
        end: Bound::Included(end),
    }
}

/// Whether `sort` is a revision of `item` (and not of an item whose sort key extends it).
pub(crate) fn is_revision_of(item: &Key, sort: &[u8]) -> bool {
    sort.len() == item.sort.len() + 9 && sort[1..1 + item.sort.len()] == item.sort[..]
}

/// Microseconds to a big-endian key that sorts like the signed value.
fn order_preserving(t: i64) -> [u8; 8] {
    ((t as u64) ^ (1 << 63)).to_be_bytes()
}

pub(crate) fn expiry_key(expires_at: i64, item: &Key) -> Key {
    let mut sort = Vec::with_capacity(11 + item.partition.len() + item.sort.len());
    sort.push(EXPIRY_INDEX);
    sort.extend_from_slice(&order_preserving(expires_at));
    // Partition keys are at most 2048 bytes (checked before any write).
    sort.extend_from_slice(&(item.partition.len() as u16).to_be_bytes());
    sort.extend_from_slice(&item.partition);
    sort.extend_from_slice(&item.sort);
    Key {
        partition: SYSTEM_PARTITION.to_vec(),
        sort,
    }
}

/// Index entries that expired at or before `now`.
pub(crate) fn expired_range(now: i64) -> SortRange {
    let mut end = vec![EXPIRY_INDEX];
    end.extend_from_slice(&order_preserving(now));
    end.push(0xff);
    SortRange {
        start: Bound::Included(vec![EXPIRY_INDEX]),
        end: Bound::Excluded(end),
    }
}

/// `(expires_at, item key)` of an expiry index entry.
pub(crate) fn parse_expiry_key(sort: &[u8]) -> Option<(i64, Key)> {
    let rest = sort.strip_prefix(&[EXPIRY_INDEX])?;
    let t = u64::from_be_bytes(rest.get(..8)?.try_into().ok()?) ^ (1 << 63);
    let len = usize::from(u16::from_be_bytes(rest.get(8..10)?.try_into().ok()?));
    let partition = rest.get(10..10 + len)?.to_vec();
    let sort = rest.get(10 + len..)?.to_vec();
    Some((t as i64, Key { partition, sort }))
}

/// Where `namespace`'s definition is kept.
pub(crate) fn namespace_key(namespace: &str) -> Key {
    let mut sort = vec![NAMESPACE];
    sort.extend_from_slice(namespace.as_bytes());
    Key {
        partition: SYSTEM_PARTITION.to_vec(),
        sort,
    }
}

/// The database's token key (encoding/token.rs).
pub(crate) fn token_key() -> Key {
    Key {
        partition: SYSTEM_PARTITION.to_vec(),
        sort: vec![TOKEN_KEY],
    }
}

/// The token keys the database had before each restore (backup/restore.rs), oldest first.
pub(crate) fn retired_token_keys() -> Key {
    Key {
        partition: SYSTEM_PARTITION.to_vec(),
        sort: vec![RETIRED_TOKEN_KEYS],
    }
}

/// The mark that every path ever written keeps a record under its key (jobs/upgrade.rs).
pub(crate) fn used_paths_recorded_key() -> Key {
    Key {
        partition: SYSTEM_PARTITION.to_vec(),
        sort: vec![USED_PATHS_RECORDED],
    }
}

/// The mark that the database's change log may hold compact entries (jobs/open.rs).
pub(crate) fn compact_log_key() -> Key {
    Key {
        partition: SYSTEM_PARTITION.to_vec(),
        sort: vec![COMPACT_LOG],
    }
}

/// The record of an unfinished subtree job: `operation` (one byte) from `from` to `to`.
pub(crate) fn subtree_job_key(operation: u8, from: &KeyPath, to: Option<&KeyPath>) -> Key {
    let from = from.encode();
    let to = to.map(KeyPath::encode).unwrap_or_default();
    let mut sort = Vec::with_capacity(4 + from.len() + to.len());
    sort.extend_from_slice(&[SUBTREE_JOB, operation]);
    // Paths are at most 2048 + 1024 bytes encoded (checked before any write).
    sort.extend_from_slice(&(from.len() as u16).to_be_bytes());
    sort.extend_from_slice(&from);
    sort.extend_from_slice(&to);
    Key {
        partition: SYSTEM_PARTITION.to_vec(),
        sort,
    }
}

/// Every unfinished subtree job.
pub(crate) fn subtree_job_range() -> SortRange {
    SortRange {
        start: Bound::Included(vec![SUBTREE_JOB]),
        end: Bound::Excluded(vec![SUBTREE_JOB + 1]),
    }
}

/// Every namespace definition, after `after` when given (in name order).
pub(crate) fn namespace_range(after: Option<&str>) -> SortRange {
    SortRange {
        start: match after {
            Some(name) => Bound::Excluded(namespace_key(name).sort),
            None => Bound::Included(vec![NAMESPACE]),
        },
        end: Bound::Excluded(vec![NAMESPACE + 1]),
    }
}

/// Where the role `name` is kept (access/roles.rs).
pub(crate) fn role_key(name: &str) -> Key {
    system_key(ROLE, name)
}

/// Every role.
pub(crate) fn role_range() -> SortRange {
    system_range(ROLE)
}

/// Where the issued token `id` is kept (access/tokens.rs).
pub(crate) fn access_token_key(id: &str) -> Key {
    system_key(ACCESS_TOKEN, id)
}

/// Every issued token.
pub(crate) fn access_token_range() -> SortRange {
    system_range(ACCESS_TOKEN)
}

/// A key of the system partition: `kind` + `name`.
fn system_key(kind: u8, name: &str) -> Key {
    let mut sort = Vec::with_capacity(1 + name.len());
    sort.push(kind);
    sort.extend_from_slice(name.as_bytes());
    Key {
        partition: SYSTEM_PARTITION.to_vec(),
        sort,
    }
}

/// Every key of the system partition of `kind`.
fn system_range(kind: u8) -> SortRange {
    SortRange {
        start: Bound::Included(vec![kind]),
        end: Bound::Excluded(vec![kind + 1]),
    }
}

/// The build record of `template` of `namespace` (aliases/builds.rs). A namespace has no `00`.
pub(crate) fn alias_build_key(namespace: &str, template: &str) -> Key {
    let mut sort = Vec::with_capacity(2 + namespace.len() + template.len());
    sort.push(ALIAS_BUILD);
    sort.extend_from_slice(namespace.as_bytes());
    sort.push(0);
    sort.extend_from_slice(template.as_bytes());
    Key {
        partition: SYSTEM_PARTITION.to_vec(),
        sort,
    }
}

/// Every alias build record.
pub(crate) fn alias_build_range() -> SortRange {
    system_range(ALIAS_BUILD)
}

/// The kept copy of version `version` of `namespace`'s definition (namespaces/versions.rs).
/// A namespace has no `00`; the version is big-endian, so a namespace's versions sort in order.
pub(crate) fn definition_version_key(namespace: &str, version: u64) -> Key {
    let mut sort = Vec::with_capacity(10 + namespace.len());
    sort.push(DEFINITION_VERSION);
    sort.extend_from_slice(namespace.as_bytes());
    sort.push(0);
    sort.extend_from_slice(&version.to_be_bytes());
    Key {
        partition: SYSTEM_PARTITION.to_vec(),
        sort,
    }
}

/// Every kept definition version, or those of `namespace`.
pub(crate) fn definition_version_range(namespace: Option<&str>) -> SortRange {
    match namespace {
        None => system_range(DEFINITION_VERSION),
        Some(namespace) => {
            let mut start = vec![DEFINITION_VERSION];
            start.extend_from_slice(namespace.as_bytes());
            start.push(0);
            let mut end = start.clone();
            end.pop();
            end.push(1);
            SortRange {
                start: Bound::Included(start),
                end: Bound::Excluded(end),
            }
        }
    }
}

/// The namespace and version of a kept definition version's sort key.
pub(crate) fn parse_definition_version(sort: &[u8]) -> Option<(String, u64)> {
    let rest = sort.strip_prefix(&[DEFINITION_VERSION])?;
    let at = rest.iter().position(|b| *b == 0)?;
    let namespace = std::str::from_utf8(&rest[..at]).ok()?.to_owned();
    let version = u64::from_be_bytes(rest.get(at + 1..)?.try_into().ok()?);
    Some((namespace, version))
}

/// The record of `namespace`'s background rewrite to its newest version (write/rewrite.rs).
pub(crate) fn rewrite_key(namespace: &str) -> Key {
    system_key(REWRITE, namespace)
}

/// Every rewrite record.
pub(crate) fn rewrite_range() -> SortRange {
    system_range(REWRITE)
}

/// The namespace and template of an alias build record's sort key.
pub(crate) fn parse_alias_build_key(sort: &[u8]) -> Option<(String, String)> {
    let rest = sort.strip_prefix(&[ALIAS_BUILD])?;
    let at = rest.iter().position(|b| *b == 0)?;
    let namespace = std::str::from_utf8(&rest[..at]).ok()?.to_owned();
    let template = std::str::from_utf8(&rest[at + 1..]).ok()?.to_owned();
    Some((namespace, template))
}

pub(crate) fn is_revision(sort: &[u8]) -> bool {
    sort.first() == Some(&REVISION) && sort.get(1).is_some_and(|b| *b < 0x80)
}

/// Whether a sort key in a group's partition is the store's own (a sequence or the change log),
/// neither an item, a tombstone nor a revision.
pub(crate) fn is_group_internal(sort: &[u8]) -> bool {
    sort.starts_with(&SEQUENCE) || sort.starts_with(&CHANGE_LOG)
}

/// The change log of a group: the [`crate::backend::WriteOp::Append`] target.
pub(crate) fn change_log(partition: &[u8]) -> Key {
    Key {
        partition: partition.to_vec(),
        sort: CHANGE_LOG.to_vec(),
    }
}

/// Whether `log` is a group's change log (an [`crate::backend::WriteOp::Append`] target).
pub(crate) fn is_change_log(log: &Key) -> bool {
    log.sort == CHANGE_LOG
}

/// Change log entries numbered `from` and later.
pub(crate) fn change_range(from: u64) -> SortRange {
    let (_, last) = crate::backend::log_bounds(&CHANGE_LOG);
    SortRange {
        start: Bound::Included(crate::backend::log_entry(&CHANGE_LOG, from)),
        end: Bound::Included(last),
    }
}

/// Change log entries numbered 1 to `last`.
pub(crate) fn change_range_through(last: u64) -> SortRange {
    SortRange {
        start: Bound::Included(crate::backend::log_entry(&CHANGE_LOG, 1)),
        end: Bound::Included(crate::backend::log_entry(&CHANGE_LOG, last)),
    }
}

/// The number of a change log entry.
pub(crate) fn change_number(sort: &[u8]) -> Option<u64> {
    sort.strip_prefix(&CHANGE_LOG)
        .filter(|rest| rest.len() == 8)
        .and_then(crate::backend::log_number)
}

/// Where the last id of a sequence is kept: the system partition for new groups, the parent's
/// group otherwise.
pub(crate) fn sequence_key(parent: Option<&KeyPath>, namespace: &str) -> Key {
    match parent {
        None => {
            let mut sort = vec![GROUP_SEQUENCE];
            sort.extend_from_slice(namespace.as_bytes());
            Key {
                partition: SYSTEM_PARTITION.to_vec(),
                sort,
            }
        }
        Some(parent) => {
            let parent_sort = parent.sort_key();
            let mut sort = SEQUENCE.to_vec();
            // Sort keys are at most 1024 bytes (checked before any write).
            sort.extend_from_slice(&(parent_sort.len() as u16).to_be_bytes());
            sort.extend_from_slice(&parent_sort);
            sort.extend_from_slice(namespace.as_bytes());
            Key {
                partition: parent.partition_key(),
                sort,
            }
        }
    }
}

/// The item sort key inside a revision sort key.
pub(crate) fn revision_item_sort(sort: &[u8]) -> Option<&[u8]> {
    sort.strip_prefix(&[REVISION])?
        .get(..sort.len().checked_sub(9)?)
}
