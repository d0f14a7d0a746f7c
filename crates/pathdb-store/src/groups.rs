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

/// Up to `limit` groups of `backend` in key order ([`Store::groups`](crate::Store::groups)).
pub(crate) fn groups<B: Backend>(
    backend: &B,
    tokens: &TokenKey,
    limit: usize,
    page_token: Option<&str>,
) -> Result<GroupPage, Error> {
    if !(1..=MAX_GROUPS_LIMIT).contains(&limit) {
        return Err(Error::InvalidRequest(format!(
            "limit must be 1..={MAX_GROUPS_LIMIT}, got {limit}"
        )));
    }
    let mut after = page_token
        .map(|token| {
            tokens
                .open(Kind::GroupsPage, &[], token)
                .filter(|partition| !partition.is_empty())
                .ok_or(Error::InvalidPageToken(
                    "not a groups page token (altered, or from another call or database)",
                ))
        })
        .transpose()?;
    let reader = backend.reader()?;
    let mut groups = Vec::with_capacity(limit.min(128));
    loop {
        // One more than needed tells whether another page follows without an extra call.
        let want = limit + 1 - groups.len();
        let batch = reader.partitions(after.as_deref(), want)?;
        let exhausted = batch.len() < want;
        for partition in batch {
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
            .map(|(_, partition)| tokens.seal(Kind::GroupsPage, &[], partition))
    } else {
        None
    };
    Ok(GroupPage {
        groups: groups.into_iter().map(|(group, _)| group).collect(),
        next_page_token,
    })
}
