//! Listing groups: the first elements of the stored paths (`/user-7`, `/season-2026-spring`),
//! in key order, a page at a time. What a console or `pathdb ls /` shows at the root.
//!
//! A group is listed when its partition holds any record: a live item, a tombstone or a
//! revision. So a group whose items were all deleted is still listed (until nothing of it is
//! stored), because its history is still readable and because deciding liveness would cost a
//! read of the partition per group (on DynamoDB a Query each, on top of the Scan). The system
//! partition `00` is never a group, and a partition that is not an encoded group (a row another
//! tool wrote) is skipped with a warning, as listings skip such keys.

use crate::backend::{Backend, Reader};
use crate::token::{Kind, TokenKey};
use crate::{Error, layout};
use pathdb_keys::KeyPath;

/// Groups per page when the request does not say.
pub const DEFAULT_GROUPS_LIMIT: usize = 100;
/// Most groups per page.
pub const MAX_GROUPS_LIMIT: usize = 1000;

/// One page of [`Store::groups`](crate::Store::groups).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupPage {
    /// The groups, each a one-element path, in ascending key order.
    pub groups: Vec<KeyPath>,
    /// Present when more groups may follow; pass it back to continue.
    pub next_page_token: Option<String>,
}

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
/// `""`), in key order ([`Store::groups_with_prefix`](crate::Store::groups_with_prefix)).
pub(crate) fn groups<B: Backend>(
    backend: &B,
    tokens: &TokenKey,
    prefix: &str,
    limit: usize,
    page_token: Option<&str>,
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
    loop {
        // One more than needed tells whether another page follows without an extra call.
        let want = limit + 1 - groups.len();
        let batch = reader.partitions(after.as_deref(), want)?;
        let mut exhausted = batch.len() < want;
        for partition in batch {
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
                Ok(group) if group.len() == 1 => groups.push((group, partition)),
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
