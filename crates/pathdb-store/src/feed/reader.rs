//! The change feed's readers (docs/changes.md): the position of a group's feed, the changes
//! after a token, a wait for the next ones, and the token a listing's first page carries. They
//! read the log that the write pipeline's change-log stage appends; they write nothing.
//!
//! Retention: a token can be resumed while the first change it has not delivered is younger than
//! [`StoreOptions::change_retention`](crate::model::options::StoreOptions); after that it answers
//! [`Error::ChangesExpired`] (resync: list again and follow from the listing's token), whether or
//! not the old entries were removed yet. Writers remove expired entries as they go.

use crate::backend::{Direction, Reader};
use crate::encoding::changelog::{
    Before, Change, ChangeEntry, ChangePage, ChangeToken, MAX_CHANGES_LIMIT,
};
use crate::encoding::layout;
use crate::encoding::log_entry::read_entry_with;
use crate::encoding::token::TokenKey;
use crate::filter::{Filter, Readable};
use crate::model::error::Error;
use crate::namespaces::definitions::Definitions;
use event_listener::{EventListener, Listener as _};
use pathdb_keys::KeyPath;
use std::time::{Duration, Instant};

/// Log entries read per poll at most, so that following a narrow prefix in a busy group returns
/// (with an advanced token) instead of reading the whole log.
const MAX_ENTRIES_PER_POLL: usize = 1000;
/// How often a waiting feed reads again on a backend other processes write too.
pub(crate) const SHARED_POLL: Duration = Duration::from_millis(200);

/// A feed's filter: what a change is decided on.
#[derive(Clone, Copy)]
pub(crate) struct Filtered<'a> {
    /// The filter.
    pub(crate) filter: &'a Filter,
    /// Who may read what (a change to an item the caller may not read fails the read).
    pub(crate) readable: Option<&'a Readable>,
    /// The definitions, when values are seen in their newest version (read/list.rs's
    /// `migrations`).
    pub(crate) migrations: Option<&'a Definitions>,
}

/// The changes under `prefix` after `since` ([`Store::changes`](crate::store::Store::changes)), read
/// from `reader` at `now`, with tokens sealed by `tokens`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn read<R: Reader + ?Sized>(
    reader: &R,
    tokens: &TokenKey,
    retention: Duration,
    now: i64,
    prefix: &KeyPath,
    since: Option<&ChangeToken>,
    limit: usize,
    filter: Option<Filtered<'_>>,
) -> Result<ChangePage, Error> {
    read_to(reader, tokens, retention, now, prefix, since, limit, filter).map(|(page, _)| page)
}

/// [`read`], also telling whether the page reached the log's end (as `reader` sees it): then its
/// `next_token` is the position after the newest entry.
///
/// With `filter`, only the changes that matter to its result, each with its before image: an
/// item entering or changing in it (the change itself) and an item leaving it (a delete with
/// `left`); `limit` counts those. With its `Readable`, a change to an item the caller may not
/// read fails the read ([`Error::Unreadable`]) rather than be decided on.
#[allow(clippy::too_many_arguments)]
pub(crate) fn read_to<R: Reader + ?Sized>(
    reader: &R,
    tokens: &TokenKey,
    retention: Duration,
    now: i64,
    prefix: &KeyPath,
    since: Option<&ChangeToken>,
    limit: usize,
    filter: Option<Filtered<'_>>,
) -> Result<(ChangePage, bool), Error> {
    if !(1..=MAX_CHANGES_LIMIT).contains(&limit) {
        return Err(Error::InvalidRequest(format!(
            "limit must be 1..={MAX_CHANGES_LIMIT}, got {limit}"
        )));
    }
    let partition = prefix.partition_key();
    let Some(since) = since else {
        let page = ChangePage {
            changes: Vec::new(),
            next_token: position(tokens, reader, &partition)?,
        };
        return Ok((page, true));
    };
    if !since.is_sealed_for(tokens, &partition) {
        if since.was_sealed_before_restore(tokens, &partition) {
            return Err(Error::ChangesExpired(
                "the database was restored from a backup since this token was issued; list again \
                 and follow from the listing's changes_token"
                    .into(),
            ));
        }
        return Err(Error::InvalidChangeToken(format!(
            "the token is not a position in the changes of the group of {prefix} (altered, \
             or issued for another group or database)"
        )));
    }
    let expired = |why: &str| {
        Error::ChangesExpired(format!(
            "{why}; list again and follow from the listing's changes_token (retention: {} s)",
            retention.as_secs()
        ))
    };
    let resolved;
    let since = if since.listing {
        resolved = resolve_listing(tokens, reader, &partition, since)?.ok_or_else(|| {
            expired(
                "the token is from another history of this group (a database restored or imported anew)",
            )
        })?;
        &resolved
    } else {
        since
    };
    let horizon = now.saturating_sub(i64::try_from(retention.as_micros()).unwrap_or(i64::MAX));
    // Read from the entry before the token's: finding it proves nothing between was removed
    // (writers never remove a log's newest entry, which they just wrote after it).
    let mut cursor = since.entry.saturating_sub(1).max(1);
    let mut changes = Vec::new();
    // The entry after the last one read, and when that one was written: `next_token`, sealed
    // once at the end rather than for every entry read.
    let mut next = None;
    let mut entries_read = 0;
    let mut found_any = false;
    let mut checked_age = false;
    let mut at_end = false;
    // When the entry before the one being read was written, for the tokens minted here.
    let mut previous = 0;
    'read: loop {
        let want = (limit + 2).min(MAX_ENTRIES_PER_POLL.saturating_sub(entries_read).max(2));
        let batch = reader.scan(
            &partition,
            &layout::change_range(cursor),
            Direction::Forward,
            want,
        )?;
        let exhausted = batch.len() < want;
        for (sort, record) in batch {
            let n = layout::change_number(&sort)
                .ok_or_else(|| crate::model::error::StorageError::msg("corrupt change log key"))?;
            if !found_any {
                found_any = true;
                if n + 1 == since.entry {
                    if since.previous != 0 && record.created_at != since.previous {
                        return Err(expired(
                            "the token is from another history of this group (a database restored or imported anew)",
                        ));
                    }
                    cursor = n + 1;
                    previous = record.created_at;
                    continue;
                }
                if n > since.entry {
                    return Err(expired("changes after the token were removed"));
                }
            } else if n != cursor {
                // Entries are numbered without gaps; a missing one was removed between two
                // reads of this poll (a reader that is not a snapshot).
                return Err(expired("changes after the token were removed"));
            }
            cursor = n + 1;
            if !checked_age {
                checked_age = true;
                if record.created_at < horizon {
                    return Err(expired(
                        "changes after the token are older than the retention window",
                    ));
                }
            }
            entries_read += 1;
            let skip = if n == since.entry {
                since.offset as usize
            } else {
                0
            };
            // A filter decides on the images of the changes it delivers from, no others.
            let images = |i: usize, change: &Change| {
                filter.is_some() && i >= skip && prefix.covers(change.key())
            };
            let entry = read_entry_with(&record.value, &images)?;
            let total = entry.changes.len();
            if skip > 0 && skip >= total {
                // Never issued: a position inside an entry is before its last change.
                return Err(Error::InvalidChangeToken(
                    "the token points past the end of its change log entry".into(),
                ));
            }
            for (i, (change, was)) in entry.changes.into_iter().enumerate().skip(skip) {
                if !prefix.covers(change.key()) {
                    continue;
                }
                let (change, before, left) = match filter {
                    None => (change, Before::Unknown, false),
                    Some(Filtered {
                        filter,
                        readable,
                        migrations,
                    }) => {
                        if readable.is_some_and(|r| !(r.0)(change.path())) {
                            return Err(Error::Unreadable {
                                path: prefix.clone(),
                            });
                        }
                        match matters(filter, migrations, change, was) {
                            Some(delivered) => delivered,
                            None => continue,
                        }
                    }
                };
                let token = if i + 1 < total {
                    let offset = u32::try_from(i + 1).unwrap_or(u32::MAX);
                    ChangeToken::mint(tokens, &partition, n, offset, previous)
                } else {
                    ChangeToken::mint(tokens, &partition, n + 1, 0, record.created_at)
                };
                changes.push(ChangeEntry {
                    change,
                    token,
                    left,
                    before,
                });
            }
            next = Some((n + 1, record.created_at));
            previous = record.created_at;
            if entry.end && (changes.len() >= limit || entries_read >= MAX_ENTRIES_PER_POLL) {
                break 'read;
            }
        }
        if exhausted {
            at_end = true;
            break;
        }
    }
    if !found_any && since.entry > 1 {
        // Not even the entry before the token exists: the token is ahead of this log.
        return Err(expired(
            "the token is ahead of this database's changes (was it restored from a backup?)",
        ));
    }
    let next_token = match next {
        Some((entry, previous)) => ChangeToken::mint(tokens, &partition, entry, 0, previous),
        None => *since,
    };
    let page = ChangePage {
        changes,
        next_token,
    };
    Ok((page, at_end))
}

/// What a change is to `filter`'s result, given the item `before` it: the change itself if the
/// item matches after it (entering or changing), a delete marked `left` if it matched before
/// and not after, `None` if it matched neither. An unknown before image (an entry logged without
/// images) counts as a match before: a leave may be told of an item that never matched, never
/// missed.
pub(crate) fn matters(
    filter: &Filter,
    migrations: Option<&Definitions>,
    change: Change,
    before: Before,
) -> Option<(Change, Before, bool)> {
    let now = match &change {
        Change::Put(item) => item.matches_newest(filter, migrations),
        Change::Delete { .. } => false,
    };
    if now {
        return Some((change, before, false));
    }
    let was = match &before {
        Before::Item(item) => item.matches_newest(filter, migrations),
        Before::Absent => false,
        Before::Unknown => true,
    };
    if !was {
        return None;
    }
    let left = match change {
        Change::Put(item) => Change::Delete {
            path: item.path,
            version: item.version,
            alias: item.alias,
        },
        delete @ Change::Delete { .. } => delete,
    };
    Some((left, before, true))
}

/// Reads with `read` until it returns a change or `timeout` passes: woken by `listen`'s
/// notifications (commits of this process) and, with `poll`, also reading that often.
pub(crate) fn wait(
    mut read: impl FnMut(&ChangeToken) -> Result<ChangePage, Error>,
    listen: impl Fn() -> EventListener,
    poll: Option<Duration>,
    since: &ChangeToken,
    timeout: Duration,
) -> Result<ChangePage, Error> {
    let deadline = Instant::now() + timeout;
    let mut since = *since;
    loop {
        // Listen before reading: a commit between the read and the wait still wakes it.
        let listener = listen();
        let page = read(&since)?;
        let now = Instant::now();
        if !page.changes.is_empty() || now >= deadline {
            return Ok(page);
        }
        if page.next_token != since {
            // Read past entries outside the prefix: more may be there already.
            since = page.next_token;
            continue;
        }
        let wake = match poll {
            Some(every) => deadline.min(now + every),
            None => deadline,
        };
        let _ = listener.wait_deadline(wake);
    }
}

/// How far back a listing's token starts on a backend whose reads are not snapshots.
const LISTING_MARGIN: Duration = Duration::from_secs(10);
/// [`LISTING_MARGIN`] in microseconds, as entries' times are.
fn listing_margin_micros() -> i64 {
    i64::try_from(LISTING_MARGIN.as_micros()).unwrap_or(i64::MAX)
}

/// Entries looked at for that margin, at most.
const LISTING_MARGIN_ENTRIES: usize = 64;

/// The token a first listing page returns. On a snapshot reader, the position after the newest
/// entry. On a backend whose reads are not snapshots (DynamoDB's Query is read-committed per
/// item: it may see a transaction's log entry before the same transaction's item), the position
/// before the entries of the last [`LISTING_MARGIN`] (at most 64 of them): a follower then
/// repeats a few changes the listing may already show, which the version rule makes harmless,
/// instead of skipping one the listing did not show yet.
///
/// The listing reads only the newest entry (a read unit on DynamoDB, where reading the margin's
/// entries would cost their whole size for every first page). When that entry is older than the
/// margin, the token is that position; otherwise it is a listing token (the newest entry's
/// successor and that entry's time), which the first read of the feed resolves into a position
/// by reading those entries back ([`resolve_listing`]): only a listing that is followed pays
/// for them, and a follower reads them anyway.
pub(crate) fn listing_token<R: Reader>(
    shared: bool,
    tokens: &TokenKey,
    reader: &R,
    partition: &[u8],
    now: i64,
) -> Result<ChangeToken, Error> {
    let newest = newest_entry(reader, partition)?;
    let margin = listing_margin_micros();
    let from = now.saturating_sub(margin);
    Ok(match newest {
        Some((n, written)) if shared && written >= from => {
            ChangeToken::mint_listing(tokens, partition, n + 1, written)
        }
        Some((n, written)) => ChangeToken::mint(tokens, partition, n + 1, 0, written),
        None => ChangeToken::mint(tokens, partition, 1, 0, 0),
    })
}

/// The position a listing token stands for: before the entries before `since.entry` written in
/// the [`LISTING_MARGIN`] up to the newest of them, entry `since.entry - 1` (at most
/// [`LISTING_MARGIN_ENTRIES`]), else at `since.entry`. The token holds when that entry was
/// written (`previous`, the check every token carries), which anchors the margin too: it starts
/// no later than the listing's own margin, since the entry was written before the listing.
/// `None`: that entry was written at another time, so the log is another history (a database
/// restored or imported anew).
fn resolve_listing<R: Reader + ?Sized>(
    tokens: &TokenKey,
    reader: &R,
    partition: &[u8],
    since: &ChangeToken,
) -> Result<Option<ChangeToken>, Error> {
    let Some(last) = since.entry.checked_sub(1).filter(|n| *n > 0) else {
        return Ok(Some(ChangeToken::mint(
            tokens,
            partition,
            since.entry,
            0,
            0,
        )));
    };
    let margin = listing_margin_micros();
    let from = since.previous.saturating_sub(margin);
    let recent = reader.scan(
        partition,
        &layout::change_range_through(last),
        Direction::Reverse,
        LISTING_MARGIN_ENTRIES + 1,
    )?;
    // Without entry `last` (removed as expired), the position itself is checked by the read.
    let mut start = (since.entry, since.previous);
    for (i, (sort, record)) in recent.iter().enumerate() {
        let Some(n) = layout::change_number(sort) else {
            continue;
        };
        if n == last && record.created_at != since.previous {
            return Ok(None);
        }
        if record.created_at < from || i == LISTING_MARGIN_ENTRIES {
            break;
        }
        // The entry before this one, if read, is the token's check.
        let previous = recent.get(i + 1).map_or(0, |(_, r)| r.created_at);
        start = (n, previous);
    }
    Ok(Some(ChangeToken::mint(
        tokens, partition, start.0, 0, start.1,
    )))
}

/// The position after the newest entry of `partition`'s log, as `reader` sees it.
pub(crate) fn position<R: Reader + ?Sized>(
    tokens: &TokenKey,
    reader: &R,
    partition: &[u8],
) -> Result<ChangeToken, Error> {
    let (last, previous) = newest_entry(reader, partition)?.unwrap_or((0, 0));
    Ok(ChangeToken::mint(tokens, partition, last + 1, 0, previous))
}

/// The number of the newest entry of `partition`'s log and when it was written, if any.
fn newest_entry<R: Reader + ?Sized>(
    reader: &R,
    partition: &[u8],
) -> Result<Option<(u64, i64)>, Error> {
    // Borrowed: only the newest entry's number and time are needed, not a copy of its record
    // (every first page of a listing reads this).
    let mut newest = None;
    reader.scan_each(
        partition,
        &layout::change_range(1),
        Direction::Reverse,
        1,
        &mut |sort, record| {
            newest = layout::change_number(sort).map(|n| (n, record.created_at));
            std::ops::ControlFlow::Break(())
        },
    )?;
    Ok(newest)
}
