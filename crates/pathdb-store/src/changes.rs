//! The change feed: every commit appends what it changed in each group to that group's change
//! log, and [`Store::changes`] reads the log after a token (docs/changes.md).
//!
//! A log entry is one commit's changes in one group, in operation order: puts with the item as
//! written, deletes and expiries with the path and the version that was removed. Entries are
//! numbered by the backend at commit ([`WriteOp::Append`]), so concurrent writers never conflict
//! over the log and entries become visible in number order: a reader that sees entry `n` has
//! seen every entry before it. A token is a position: an entry number and how many of that
//! entry's changes were already delivered.
//!
//! Retention: a token can be resumed while the first change it has not delivered is younger than
//! [`StoreOptions::change_retention`](crate::StoreOptions); after that it answers
//! [`Error::ChangesExpired`] (resync: list again and follow from the listing's token), whether or
//! not the old entries were removed yet. Writers remove expired entries as they go.

use crate::backend::{Backend, Direction, Key, Reader, Record, WriteBatch, WriteOp};
use crate::store::{Inner, to_item};
use crate::token::{Kind, TAG_BYTES, TokenKey};
use crate::{Error, Item, Store, layout};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use event_listener::Listener as _;
use pathdb_keys::KeyPath;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Changes per page when the request does not say.
pub const DEFAULT_CHANGES_LIMIT: usize = 100;
/// Most changes per page (a page may exceed it to finish a transaction: see [`Store::changes`]).
pub const MAX_CHANGES_LIMIT: usize = 1000;
/// The longest [`Store::wait_changes`] a server should grant.
pub const MAX_CHANGES_WAIT: Duration = Duration::from_secs(60);
/// Log entries read per poll at most, so that following a narrow prefix in a busy group returns
/// (with an advanced token) instead of reading the whole log.
const MAX_ENTRIES_PER_POLL: usize = 1000;
/// Bytes of changes per log entry before a commit's changes continue in another entry: one
/// entry must stay under DynamoDB's 400 KB item limit. A single change is never split (an item
/// fits in 400 KB, and so does its change with a path and a few numbers more).
const ENTRY_BUDGET: usize = 200_000;
/// One commit in this many also removes expired log entries (reading the log's oldest entries
/// costs a query on DynamoDB; every commit paying it would be waste).
const TRIM_EVERY: u64 = 8;
/// The keyed hash that spreads trimming over commits and groups.
static TRIM_HASHER: std::sync::LazyLock<std::collections::hash_map::RandomState> =
    std::sync::LazyLock::new(std::collections::hash_map::RandomState::new);
/// Expired entries removed per trim, at most.
const TRIM_BATCH: usize = 16;
/// How often a waiting feed reads again on a backend other processes write too.
const SHARED_POLL: Duration = Duration::from_millis(200);
/// Bytes of a token: the kind byte, the payload and the tag.
const TOKEN_BYTES: usize = 1 + PAYLOAD_BYTES + TAG_BYTES;
/// Entry, offset, the previous entry's time.
const PAYLOAD_BYTES: usize = 8 + 4 + 8;
/// The first change token format (unsealed: version 1, group hash, entry, offset, previous).
const LEGACY_TOKEN: (u8, usize) = (1, 29);

/// A position in one group's change feed. Opaque outside the store: pass back what
/// [`Store::changes`], [`Store::changes_token`] or a listing returned, as its string form.
///
/// Tokens are sealed for their group with the database's key (token.rs): parsing checks only
/// the shape, and [`Store::changes`] refuses a token it did not issue for that group.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ChangeToken {
    /// The first log entry not fully delivered.
    entry: u64,
    /// Changes of that entry already delivered.
    offset: u32,
    /// When the entry before `entry` was written (0: unknown, or there is none): a reader
    /// checks it, so that a token from another history of the group (a database restored from
    /// an older backup, or imported afresh, whose entries are numbered anew) is refused rather
    /// than read at a position that means something else there.
    previous: i64,
    /// The MAC over the fields and the group.
    tag: [u8; TAG_BYTES],
}

impl ChangeToken {
    fn payload(entry: u64, offset: u32, previous: i64) -> [u8; PAYLOAD_BYTES] {
        let mut raw = [0; PAYLOAD_BYTES];
        raw[..8].copy_from_slice(&entry.to_be_bytes());
        raw[8..12].copy_from_slice(&offset.to_be_bytes());
        raw[12..].copy_from_slice(&previous.to_be_bytes());
        raw
    }

    /// A token of `partition`'s feed, sealed with the database's key.
    fn mint(
        tokens: &TokenKey,
        partition: &[u8],
        entry: u64,
        offset: u32,
        previous: i64,
    ) -> ChangeToken {
        let payload = ChangeToken::payload(entry, offset, previous);
        ChangeToken {
            entry,
            offset,
            previous,
            tag: tokens.tag(Kind::Change, &[partition], &payload),
        }
    }

    /// Whether the database's key sealed this token for `partition`'s feed.
    fn is_sealed_for(&self, tokens: &TokenKey, partition: &[u8]) -> bool {
        let payload = ChangeToken::payload(self.entry, self.offset, self.previous);
        tokens.verify(Kind::Change, &[partition], &payload, &self.tag)
    }
}

impl std::fmt::Display for ChangeToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut raw = [0; TOKEN_BYTES];
        raw[0] = Kind::Change as u8;
        raw[1..1 + PAYLOAD_BYTES].copy_from_slice(&ChangeToken::payload(
            self.entry,
            self.offset,
            self.previous,
        ));
        raw[1 + PAYLOAD_BYTES..].copy_from_slice(&self.tag);
        f.write_str(&URL_SAFE_NO_PAD.encode(raw))
    }
}

impl std::str::FromStr for ChangeToken {
    type Err = Error;

    /// Checks the shape only; [`Store::changes`] checks that the token is the store's own.
    ///
    /// A token of the first, unsealed format is [`Error::ChangesExpired`]: its follower lists
    /// again and follows from the new token, as after any lost position.
    fn from_str(s: &str) -> Result<ChangeToken, Error> {
        let invalid = || Error::InvalidChangeToken("not a change token".into());
        let raw = URL_SAFE_NO_PAD.decode(s).map_err(|_| invalid())?;
        if (raw.first().copied(), raw.len()) == (Some(LEGACY_TOKEN.0), LEGACY_TOKEN.1) {
            return Err(Error::ChangesExpired(
                "the token was issued by an earlier version of PathDB, whose tokens are no longer \
                 accepted; list again and follow from the listing's changes_token"
                    .into(),
            ));
        }
        if raw.len() != TOKEN_BYTES || raw[0] != Kind::Change as u8 {
            return Err(invalid());
        }
        fn field<const N: usize>(raw: &[u8], at: usize) -> [u8; N] {
            let mut out = [0; N];
            out.copy_from_slice(&raw[at..at + N]);
            out
        }
        // The length is checked: every field is there.
        let entry = u64::from_be_bytes(field(&raw, 1));
        let offset = u32::from_be_bytes(field(&raw, 9));
        let previous = i64::from_be_bytes(field(&raw, 13));
        let tag = field(&raw, 1 + PAYLOAD_BYTES);
        if entry == 0 {
            return Err(invalid());
        }
        Ok(ChangeToken {
            entry,
            offset,
            previous,
            tag,
        })
    }
}

impl serde::Serialize for ChangeToken {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// One change to an item.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Change {
    /// The item was created or replaced; this is the item as written.
    Put(Item),
    /// The item was deleted or expired; `version` is the version it had.
    Delete {
        /// The item's path.
        path: KeyPath,
        /// The version that was removed.
        version: u64,
    },
}

impl Change {
    /// The path the change is about.
    pub fn path(&self) -> &KeyPath {
        match self {
            Change::Put(item) => &item.path,
            Change::Delete { path, .. } => path,
        }
    }
}

/// A change and the position right after it (an SSE event id: resuming from it delivers what
/// follows).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ChangeEntry {
    /// The change.
    pub change: Change,
    /// The position after this change.
    pub token: ChangeToken,
}

/// What [`Store::changes`] returns.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ChangePage {
    /// The changes under the prefix, in commit order.
    pub changes: Vec<ChangeEntry>,
    /// Where to continue: after every change this page read, including those outside the prefix.
    pub next_token: ChangeToken,
}

/// A change as the log stores it: a put has the item's metadata and value, a delete neither.
/// (A plain struct: serde's internally tagged enums cannot hold a borrowed `RawValue`.)
#[derive(Serialize, Deserialize)]
struct Logged<'a> {
    op: Op,
    path: String,
    version: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    created_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    modified_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<i64>,
    /// A put's value, `null` included: present means a value (a put), absent means none (a
    /// delete). Entries written before this distinction read a put of `null` as absent, so a
    /// put without a value is a put of `null` (see `unlogged`).
    #[serde(
        borrow,
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::item::present"
    )]
    value: Option<&'a RawValue>,
}

#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Op {
    Put,
    Delete,
}

/// A log entry: changes of one commit in one group; `end` is false when the commit continues in
/// the next entry.
#[derive(Serialize, Deserialize)]
struct Entry<'a> {
    #[serde(borrow)]
    changes: Vec<Logged<'a>>,
    end: bool,
}

fn logged(change: &Change) -> Result<Logged<'_>, Error> {
    Ok(match change {
        Change::Put(item) => Logged {
            op: Op::Put,
            path: item.path.to_string(),
            version: item.version,
            created_at: Some(item.created_at.0),
            modified_at: Some(item.modified_at.0),
            expires_at: item.expires_at.map(|t| t.0),
            value: Some(serde_json::from_str(item.value.as_str()).map_err(corrupt)?),
        },
        Change::Delete { path, version } => Logged {
            op: Op::Delete,
            path: path.to_string(),
            version: *version,
            created_at: None,
            modified_at: None,
            expires_at: None,
            value: None,
        },
    })
}

fn unlogged(logged: &Logged<'_>) -> Result<Change, Error> {
    let path = logged.path.parse::<KeyPath>().map_err(corrupt)?;
    Ok(match logged.op {
        Op::Put => Change::Put(to_item(
            path,
            Record {
                version: logged.version,
                created_at: logged.created_at.unwrap_or_default(),
                modified_at: logged.modified_at.unwrap_or_default(),
                expires_at: logged.expires_at,
                // Before `present`, a logged `null` read back as no value: it is a put of null.
                value: logged
                    .value
                    .map_or("null", RawValue::get)
                    .as_bytes()
                    .to_vec(),
            },
        )?),
        Op::Delete => Change::Delete {
            path,
            version: logged.version,
        },
    })
}

fn corrupt(e: impl std::error::Error + Send + Sync + 'static) -> Error {
    crate::StorageError::new("corrupt change log entry", e).into()
}

/// Adds to `batch` the log entries for `changes` (in order, grouped by group) and, now and then,
/// the removal of expired entries. `owners` gets one path per added operation.
pub(crate) fn log_changes<B: Backend, R: Reader>(
    inner: &Inner<B>,
    reader: &R,
    batch: &mut WriteBatch,
    owners: &mut Vec<KeyPath>,
    changes: &[Change],
    now: i64,
) -> Result<(), Error> {
    let mut groups: Vec<(Vec<u8>, Vec<&Change>)> = Vec::new();
    for change in changes {
        let partition = change.path().partition_key();
        match groups.iter_mut().find(|(p, _)| *p == partition) {
            Some((_, list)) => list.push(change),
            None => groups.push((partition, vec![change])),
        }
    }
    let commit = inner.commits_logged.fetch_add(1, Ordering::Relaxed);
    for (partition, list) in groups {
        // One commit in TRIM_EVERY per group, chosen by a hash with a per-process random key
        // rather than by the commit counter alone: a counter shared by the groups would trim a
        // group whose writes always land on the same residue never.
        let trim = std::hash::BuildHasher::hash_one(&*TRIM_HASHER, (commit, &partition))
            .is_multiple_of(TRIM_EVERY);
        let owner = list[0].path().clone();
        let mut parts: Vec<Vec<Logged<'_>>> = vec![Vec::new()];
        let mut size = 0;
        for change in list {
            let l = logged(change)?;
            let bytes = change_size(change);
            let current = parts.last_mut().expect("parts is never empty");
            if !current.is_empty() && size + bytes > ENTRY_BUDGET {
                parts.push(Vec::new());
                size = 0;
            }
            size += bytes;
            parts.last_mut().expect("parts is never empty").push(l);
        }
        let count = parts.len();
        for (i, changes) in parts.into_iter().enumerate() {
            let entry = Entry {
                changes,
                end: i + 1 == count,
            };
            batch.ops.push(WriteOp::Append {
                log: layout::change_log(&partition),
                record: Record {
                    version: 1,
                    created_at: now,
                    modified_at: now,
                    expires_at: None,
                    value: serde_json::to_vec(&entry).map_err(corrupt)?,
                },
            });
            owners.push(owner.clone());
        }
        if trim {
            let horizon = now.saturating_sub(retention_micros(inner));
            let room = inner
                .backend
                .max_batch_ops()
                .saturating_sub(batch.ops.len());
            for (sort, record) in reader.scan(
                &partition,
                &layout::change_range(1),
                Direction::Forward,
                TRIM_BATCH.min(room),
            )? {
                if record.created_at >= horizon {
                    break;
                }
                batch.ops.push(WriteOp::Delete {
                    key: Key {
                        partition: partition.clone(),
                        sort,
                    },
                    expect: None,
                });
                owners.push(owner.clone());
            }
        }
    }
    Ok(())
}

fn change_size(change: &Change) -> usize {
    match change {
        Change::Put(item) => item.value.as_str().len() + 128 + 2 * item.path.encode().len(),
        Change::Delete { path, .. } => 64 + 2 * path.encode().len(),
    }
}

fn retention_micros<B>(inner: &Inner<B>) -> i64 {
    i64::try_from(inner.options.change_retention.as_micros()).unwrap_or(i64::MAX)
}

impl<B: Backend> Store<B> {
    /// The current position of the change feed of `prefix`'s group: following from it delivers
    /// every change committed after this call.
    ///
    /// # Errors
    /// Storage failures.
    pub fn changes_token(&self, prefix: &KeyPath) -> Result<ChangeToken, Error> {
        let reader = self.backend().reader()?;
        current_token(&self.inner.tokens, &reader, &prefix.partition_key())
    }

    /// The changes under `prefix` (the path and its subtree) after `since`, at most about
    /// `limit` of them, in commit order. Without `since`, no changes and the current position.
    ///
    /// A page never ends inside a commit, so a transaction's changes in this group arrive
    /// together (a page may hold more than `limit` changes to finish one). Changes in the group
    /// but outside `prefix` are read and skipped: `next_token` moves past them.
    ///
    /// # Errors
    /// [`Error::ChangesExpired`] when changes after `since` are older than the retention window
    /// (or the token is ahead of this database); [`Error::InvalidChangeToken`] for a token of
    /// another group; [`Error::InvalidRequest`] for a bad limit; storage failures.
    pub fn changes(
        &self,
        prefix: &KeyPath,
        since: Option<&ChangeToken>,
        limit: usize,
    ) -> Result<ChangePage, Error> {
        if !(1..=MAX_CHANGES_LIMIT).contains(&limit) {
            return Err(Error::InvalidRequest(format!(
                "limit must be 1..={MAX_CHANGES_LIMIT}, got {limit}"
            )));
        }
        let partition = prefix.partition_key();
        let reader = self.backend().reader()?;
        let Some(since) = since else {
            return Ok(ChangePage {
                changes: Vec::new(),
                next_token: current_token(&self.inner.tokens, &reader, &partition)?,
            });
        };
        let tokens = &self.inner.tokens;
        if !since.is_sealed_for(tokens, &partition) {
            return Err(Error::InvalidChangeToken(format!(
                "the token is not a position in the changes of the group of {prefix} (altered, \
                 or issued for another group or database)"
            )));
        }
        let expired = |why: &str| {
            Error::ChangesExpired(format!(
                "{why}; list again and follow from the listing's changes_token (retention: {} s)",
                self.inner.options.change_retention.as_secs()
            ))
        };
        let horizon = self.now().saturating_sub(retention_micros(&self.inner));
        // Read from the entry before the token's: finding it proves nothing between was removed
        // (writers never remove a log's newest entry, which they just wrote after it).
        let mut cursor = since.entry.saturating_sub(1).max(1);
        let mut changes = Vec::new();
        let mut next = *since;
        let mut entries_read = 0;
        let mut found_any = false;
        let mut checked_age = false;
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
                    .ok_or_else(|| crate::StorageError::msg("corrupt change log key"))?;
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
                let entry: Entry<'_> = serde_json::from_slice(&record.value).map_err(corrupt)?;
                let total = entry.changes.len();
                let skip = if n == since.entry {
                    since.offset as usize
                } else {
                    0
                };
                if skip > 0 && skip >= total {
                    // Never issued: a position inside an entry is before its last change.
                    return Err(Error::InvalidChangeToken(
                        "the token points past the end of its change log entry".into(),
                    ));
                }
                for (i, logged) in entry.changes.iter().enumerate().skip(skip) {
                    let change = unlogged(logged)?;
                    if !prefix.covers(change.path()) {
                        continue;
                    }
                    let token = if i + 1 < total {
                        let offset = u32::try_from(i + 1).unwrap_or(u32::MAX);
                        ChangeToken::mint(tokens, &partition, n, offset, previous)
                    } else {
                        ChangeToken::mint(tokens, &partition, n + 1, 0, record.created_at)
                    };
                    changes.push(ChangeEntry { change, token });
                }
                next = ChangeToken::mint(tokens, &partition, n + 1, 0, record.created_at);
                previous = record.created_at;
                if entry.end && (changes.len() >= limit || entries_read >= MAX_ENTRIES_PER_POLL) {
                    break 'read;
                }
            }
            if exhausted {
                break;
            }
        }
        if !found_any && since.entry > 1 {
            // Not even the entry before the token exists: the token is ahead of this log.
            return Err(expired(
                "the token is ahead of this database's changes (was it restored from a backup?)",
            ));
        }
        Ok(ChangePage {
            changes,
            next_token: next,
        })
    }

    /// [`Store::changes`], waiting up to `timeout` for at least one change: woken by this
    /// process's commits (no polling) and, on a backend other processes write too
    /// ([`Backend::shared`]), also reading again every 200 ms.
    ///
    /// # Errors
    /// As [`Store::changes`].
    pub fn wait_changes(
        &self,
        prefix: &KeyPath,
        since: &ChangeToken,
        limit: usize,
        timeout: Duration,
    ) -> Result<ChangePage, Error> {
        let deadline = Instant::now() + timeout;
        let mut since = *since;
        loop {
            // Listen before reading: a commit between the read and the wait still wakes it.
            let listener = self.commit_listener();
            let page = self.changes(prefix, Some(&since), limit)?;
            let now = Instant::now();
            if !page.changes.is_empty() || now >= deadline {
                return Ok(page);
            }
            if page.next_token != since {
                // Read past entries outside the prefix: more may be there already.
                since = page.next_token;
                continue;
            }
            let wake = if self.backend().shared() {
                deadline.min(now + SHARED_POLL)
            } else {
                deadline
            };
            let _ = listener.wait_deadline(wake);
        }
    }

    /// A listener that completes at this store's next commit (of any group): for async callers
    /// that wait for changes without a thread each (await it, then call [`Store::changes`]).
    /// Create it before reading, so that no commit falls between.
    pub fn commit_listener(&self) -> event_listener::EventListener {
        self.inner.commits.listen()
    }

    /// How often a waiting feed must read again because other processes write (`None`: this
    /// process's commits are every change, so waiting on [`Store::commit_listener`] suffices).
    pub fn changes_poll_interval(&self) -> Option<Duration> {
        self.backend().shared().then_some(SHARED_POLL)
    }
}

/// How far back a listing's token starts on a backend whose reads are not snapshots.
const LISTING_MARGIN: Duration = Duration::from_secs(10);
/// Entries looked at for that margin, at most.
const LISTING_MARGIN_ENTRIES: usize = 64;

/// The token a first listing page returns. On a snapshot reader, the position after the newest
/// entry. On a backend whose reads are not snapshots (DynamoDB's Query is read-committed per
/// item: it may see a transaction's log entry before the same transaction's item), the position
/// before the entries of the last [`LISTING_MARGIN`] (at most 64 of them): a follower then
/// repeats a few changes the listing may already show, which the version rule makes harmless,
/// instead of skipping one the listing did not show yet.
pub(crate) fn listing_token<B: Backend, R: Reader>(
    backend: &B,
    tokens: &TokenKey,
    reader: &R,
    partition: &[u8],
    now: i64,
) -> Result<ChangeToken, Error> {
    if !backend.shared() {
        return current_token(tokens, reader, partition);
    }
    let recent = reader.scan(
        partition,
        &layout::change_range(1),
        Direction::Reverse,
        LISTING_MARGIN_ENTRIES + 1,
    )?;
    let margin = i64::try_from(LISTING_MARGIN.as_micros()).unwrap_or(i64::MAX);
    let mut start = None;
    for (i, (sort, record)) in recent.iter().enumerate() {
        let Some(n) = layout::change_number(sort) else {
            continue;
        };
        if record.created_at < now.saturating_sub(margin) || i == LISTING_MARGIN_ENTRIES {
            break;
        }
        // The entry before this one, if read, is the token's check.
        let previous = recent.get(i + 1).map_or(0, |(_, r)| r.created_at);
        start = Some((n, previous));
    }
    Ok(match start {
        Some((entry, previous)) => ChangeToken::mint(tokens, partition, entry, 0, previous),
        None => current_token(tokens, reader, partition)?,
    })
}

/// The position after the newest entry of `partition`'s log, as `reader` sees it.
pub(crate) fn current_token<R: Reader>(
    tokens: &TokenKey,
    reader: &R,
    partition: &[u8],
) -> Result<ChangeToken, Error> {
    let newest = reader.scan(partition, &layout::change_range(1), Direction::Reverse, 1)?;
    let (last, previous) = newest
        .first()
        .and_then(|(sort, record)| Some((layout::change_number(sort)?, record.created_at)))
        .unwrap_or((0, 0));
    Ok(ChangeToken::mint(tokens, partition, last + 1, 0, previous))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(entry: &str) -> Vec<Change> {
        let entry: Entry<'_> = serde_json::from_str(entry).expect("an entry");
        entry
            .changes
            .iter()
            .map(unlogged)
            .collect::<Result<_, _>>()
            .expect("changes")
    }

    fn put_value(change: &Change) -> &str {
        match change {
            Change::Put(item) => item.value.as_str(),
            Change::Delete { .. } => panic!("expected a put, got {change:?}"),
        }
    }

    /// Entries as the first log format wrote them: a put of `null` logged `"value":null`, which
    /// that format read back as "no value" and refused. Both shapes are puts of `null` now.
    #[test]
    fn entries_in_the_old_shape_read_back() {
        let old = r#"{"changes":[
            {"op":"put","path":"/n-1/a-1","version":1,"created_at":5,"modified_at":5,"value":null},
            {"op":"put","path":"/n-1/a-2","version":3,"created_at":5,"modified_at":6},
            {"op":"put","path":"/n-1/a-3","version":1,"created_at":5,"modified_at":5,"value":{"x":[]}},
            {"op":"delete","path":"/n-1/a-4","version":2}
        ],"end":true}"#;
        let changes = read(old);
        assert_eq!(put_value(&changes[0]), "null");
        assert_eq!(put_value(&changes[1]), "null");
        assert_eq!(changes[1].path().to_string(), "/n-1/a-2");
        assert_eq!(put_value(&changes[2]), r#"{"x":[]}"#);
        assert!(matches!(changes[3], Change::Delete { version: 2, .. }));
    }

    #[test]
    fn every_json_value_round_trips_through_an_entry() {
        for text in ["null", "[]", "{}", r#""""#, "0", "false", r#"{"a":null}"#] {
            let item = Item {
                path: "/n-1/a-1".parse().unwrap(),
                version: 7,
                created_at: crate::Timestamp(1),
                modified_at: crate::Timestamp(2),
                expires_at: None,
                value: crate::Json::parse(text).unwrap(),
            };
            let change = Change::Put(item);
            let entry = Entry {
                changes: vec![logged(&change).unwrap()],
                end: true,
            };
            let bytes = serde_json::to_string(&entry).unwrap();
            assert_eq!(read(&bytes), [change], "{bytes}");
        }
    }

    /// The first token format (29 bytes, version 1) asks the follower to resync; any other
    /// shape is not a token.
    #[test]
    fn token_shapes() {
        let mut legacy = vec![1u8];
        legacy.extend_from_slice(&[0; 8]); // group hash
        legacy.extend_from_slice(&5u64.to_be_bytes());
        legacy.extend_from_slice(&[0; 12]);
        let legacy = URL_SAFE_NO_PAD.encode(legacy);
        assert!(matches!(
            legacy.parse::<ChangeToken>(),
            Err(Error::ChangesExpired(_))
        ));
        let key = crate::token::tests_key();
        let token = ChangeToken::mint(&key, b"group", 3, 1, 42);
        let text = token.to_string();
        assert_eq!(text.len(), 44, "33 bytes in base64");
        assert_eq!(text.parse::<ChangeToken>().unwrap(), token);
        assert!(token.is_sealed_for(&key, b"group"));
        assert!(!token.is_sealed_for(&key, b"other"));
        for bad in ["", "AAAA", &text[..43], &format!("{text}A")] {
            assert!(matches!(
                bad.parse::<ChangeToken>(),
                Err(Error::InvalidChangeToken(_))
            ));
        }
    }
}
