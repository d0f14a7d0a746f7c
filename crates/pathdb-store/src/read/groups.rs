//! Listing groups: the first elements of the stored paths (`/user-7`, `/season-2026-spring`),
//! in key order, a page at a time. What a console or `pathdb ls /` shows at the root.
//!
//! A group is listed when it holds a live item. A group whose items were all deleted, expired or
//! moved away keeps records a user cannot list (tombstones, revisions, its change log: see
//! encoding/layout.rs), so its partition still exists; it is not listed. The backend names the
//! partitions in key order ([`Reader::partitions`]), and for each one this module reads the
//! partition's items, from both ends in turn, until it meets a live item ([`has_live_item`]): one
//! short range read per listed group (a B-tree seek on the file backend, one `Query` on DynamoDB),
//! a few more for a group whose items begin and end with long runs of tombstones. No count is kept
//! beside the items: a counter every create and delete of a group updated would make each group's
//! writes conflict with each other. The system partition `00` is never a group, and a partition
//! that is not an encoded group (a row another tool wrote) is skipped with a warning, as listings
//! skip such keys.

use crate::backend::{Backend, Direction, Reader, SortRange};
use crate::encoding::layout;
use crate::encoding::record::is_live;
use crate::encoding::token::{Kind, TokenKey};
use crate::model::error::Error;
use pathdb_keys::KeyPath;
use std::ops::Bound;

/// Groups per page when the request does not say.
pub const DEFAULT_GROUPS_LIMIT: usize = 100;
/// Most groups per page.
pub const MAX_GROUPS_LIMIT: usize = 1000;

/// One page of [`Store::groups`](crate::store::Store::groups).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupPage {
    /// The groups, each a one-element path, in ascending key order.
    pub groups: Vec<KeyPath>,
    /// Present when more groups may follow; pass it back to continue.
    pub next_page_token: Option<String>,
}

/// Most partitions asked of the backend in one call.
const MAX_PARTITIONS_PER_CALL: usize = 64 * MAX_GROUPS_LIMIT;

/// Most characters in a groups prefix: a namespace's length.
const MAX_PREFIX_CHARS: usize = 64;

/// Checks a groups prefix: the start of a namespace, so only namespace characters.
fn check_prefix(prefix: &str) -> Result<(), Error> {
    if prefix.len() > MAX_PREFIX_CHARS {
        return Err(Error::InvalidRequest(format!(
            "prefix is the start of a namespace: at most {MAX_PREFIX_CHARS} characters"
        )));
    }
    if let Some(c) = prefix
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_'))
    {
        return Err(Error::InvalidRequest(format!(
            "prefix is the start of a namespace (letters, digits, '_'), not a key path: \
             {c:?} is not allowed"
        )));
    }
    Ok(())
}

/// Up to `limit` groups of `backend` whose namespace starts with `prefix` (every group for
/// `""`), in key order ([`Store::groups_with_prefix`](crate::store::Store::groups_with_prefix)).
pub(crate) fn groups<B: Backend>(
    backend: &B,
    tokens: &TokenKey,
    prefix: &str,
    limit: usize,
    page_token: Option<&str>,
    now: i64,
) -> Result<GroupPage, Error> {
    if !(1..=MAX_GROUPS_LIMIT).contains(&limit) {
        return Err(Error::InvalidRequest(format!(
            "limit must be 1..={MAX_GROUPS_LIMIT}, got {limit}"
        )));
    }
    check_prefix(prefix)?;
    // A group's encoding starts with its namespace's bytes (docs/key-format.md), and namespace
    // bytes are never the separator `01`: the groups of a prefix are exactly the partitions
    // that start with its bytes, one contiguous run. The prefix's own bytes are never a
    // partition (a group always has an id), so "strictly after them" starts the run.
    let prefix = prefix.as_bytes();
    // The token is bound to the prefix, so a token of one prefix is refused for another; the
    // empty prefix's binding is the one tokens had before prefixes.
    let bound = [prefix];
    let context: &[&[u8]] = if prefix.is_empty() { &[] } else { &bound };
    let mut after = page_token
        .map(|token| {
            tokens
                .open(Kind::GroupsPage, context, token)
                .filter(|partition| !partition.is_empty())
                .ok_or(Error::InvalidPageToken(
                    "not a groups page token (altered, or from another call, prefix or database)",
                ))
        })
        .transpose()?;
    if after.is_none() && !prefix.is_empty() {
        after = Some(prefix.to_vec());
    }
    let reader = backend.reader()?;
    let mut groups = Vec::with_capacity(limit.min(128));
    // One more than needed tells whether another page follows without an extra call. Groups with
    // nothing live are passed over, so a batch can fall short: each further batch asks for twice
    // as many partitions, since on DynamoDB every call reads the whole table (a Scan).
    let mut want = limit + 1;
    loop {
        let batch = reader.partitions(after.as_deref(), want)?;
        let mut exhausted = batch.len() < want;
        want = want.saturating_mul(2).min(MAX_PARTITIONS_PER_CALL);
        for partition in batch {
            if groups.len() > limit {
                // The page and the sign that more follow are found: probe no further groups.
                break;
            }
            if !partition.starts_with(prefix) {
                // Past the prefix's run: nothing after it matches.
                exhausted = true;
                break;
            }
            after = Some(partition.clone());
            if partition == layout::SYSTEM_PARTITION {
                continue;
            }
            match KeyPath::decode(&partition) {
                Ok(group) if group.len() == 1 => {
                    if has_live_item(&reader, &group, &partition, now)? {
                        groups.push((group, partition));
                    }
                }
                Ok(_) | Err(_) => {
                    tracing::warn!(partition = %hex::encode(&partition),
                            "skipped a partition that is not a group");
                }
            }
        }
        if exhausted || groups.len() > limit {
            break;
        }
    }
    let next_page_token = if groups.len() > limit {
        groups.truncate(limit);
        groups
            .last()
            .map(|(_, partition)| tokens.seal(Kind::GroupsPage, context, partition))
    } else {
        None
    };
    Ok(GroupPage {
        groups: groups.into_iter().map(|(group, _)| group).collect(),
        next_page_token,
    })
}

/// Records read by the first probe of a group; each further read takes four times as many (up
/// to [`MAX_PROBE`]), so a group that starts with a long run of tombstones costs a few reads, not
/// one per tombstone.
const FIRST_PROBE: usize = 8;
/// Most records one probe read takes.
const MAX_PROBE: usize = 1024;

/// Whether `group` (stored as `partition`) holds an item a read would see: one of its item
/// records that is neither a tombstone nor expired at `now`. Reads alternate between the two
/// ends of the group's items, each a little longer than the last, so a group whose deleted
/// items sit at one end (a queue: added at the back, deleted from the front) costs a read or
/// two, and one that holds no live item is read once through.
fn has_live_item<R: Reader>(
    reader: &R,
    group: &KeyPath,
    partition: &[u8],
    now: i64,
) -> Result<bool, Error> {
    // What is not read yet: reads from the front raise its start, from the back lower its end.
    let mut unread: SortRange = layout::subtree_items(group);
    let mut probe = FIRST_PROBE;
    let mut direction = Direction::Forward;
    loop {
        let records = reader.scan(partition, &unread, direction, probe)?;
        if records.iter().any(|(_, record)| is_live(record, now)) {
            return Ok(true);
        }
        let past = match records.last() {
            Some((sort, _)) if records.len() == probe => Bound::Excluded(sort.clone()),
            // Short: nothing is left unread.
            _ => return Ok(false),
        };
        direction = match direction {
            Direction::Forward => {
                unread.start = past;
                Direction::Reverse
            }
            Direction::Reverse => {
                unread.end = past;
                probe = (probe * 4).min(MAX_PROBE);
                Direction::Forward
            }
        };
    }
}
