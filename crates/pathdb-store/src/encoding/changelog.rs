//! The change log's contents: the changes a feed delivers ([`Change`], [`ChangeEntry`],
//! [`ChangePage`]), the positions it hands out ([`ChangeToken`], sealed by encoding/token.rs), and
//! the JSON form of a log entry, one commit's changes in one group (docs/changes.md). The compact
//! form is encoding/compact_log.rs; encoding/log_entry.rs writes and reads either.
//!
//! A log entry is one commit's changes in one group, in operation order: puts with the item as
//! written, deletes and expiries with the path and the version that was removed. Entries are
//! numbered by the backend at commit ([`WriteOp::Append`](crate::backend::WriteOp::Append)), so
//! concurrent writers never conflict over the log and entries become visible in number order: a
//! reader that sees entry `n` has seen every entry before it. A token is a position: an entry
//! number and how many of that entry's changes were already delivered.
//!
//! The write pipeline's change-log stage (write/stages/changelog.rs) appends entries; the feed
//! (feed/reader.rs) reads them. This module does neither.

use crate::backend::Record;
use crate::encoding::record::to_item;
use crate::encoding::token::{Kind, TAG_BYTES, TokenKey};
use crate::model::error::Error;
use crate::model::item::Item;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use pathdb_keys::KeyPath;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// Changes per page when the request does not say.
pub const DEFAULT_CHANGES_LIMIT: usize = 100;
/// Most changes per page (a page may exceed it to finish a transaction: see
/// [`Store::changes`](crate::store::Store::changes)).
pub const MAX_CHANGES_LIMIT: usize = 1000;
/// The longest [`Store::wait_changes`](crate::store::Store::wait_changes) a server should grant.
pub const MAX_CHANGES_WAIT: Duration = Duration::from_secs(60);
/// Bytes of a token: the kind byte, the payload and the tag.
const TOKEN_BYTES: usize = 1 + PAYLOAD_BYTES + TAG_BYTES;
/// Entry, offset, the previous entry's time.
const PAYLOAD_BYTES: usize = 8 + 4 + 8;
/// The first change token format (unsealed: version 1, group hash, entry, offset, previous).
const LEGACY_TOKEN: (u8, usize) = (1, 29);

/// Groups whose trimming time a [`TrimSchedule`] remembers before it forgets them all at once.
const MAX_SCHEDULED_GROUPS: usize = 100_000;

/// When each group's change log may next hold an expired entry, as far as this store has read: a
/// commit skips reading the log's oldest entries (a `Query` on DynamoDB) until then
/// (write/stages/changelog.rs). Entries are only ever appended newer and removed oldest first, by
/// any process, so once the oldest entry's time is read, nothing in the log expires before that
/// time plus the retention.
#[derive(Default)]
pub(crate) struct TrimSchedule {
    /// Read on every commit: foldhash, seeded at random per map (see backend/log_ends.rs).
    due: Mutex<Due>,
}

type Due = HashMap<Vec<u8>, i64, foldhash::fast::RandomState>;

impl TrimSchedule {
    /// From when (microseconds) the log of `partition` may hold an expired entry; `None`:
    /// unknown.
    pub(crate) fn due(&self, partition: &[u8]) -> Option<i64> {
        self.lock().get(partition).copied()
    }

    /// Nothing in the log of `partition` expires before `at`.
    pub(crate) fn set(&self, partition: &[u8], at: i64) {
        let mut due = self.lock();
        if due.len() >= MAX_SCHEDULED_GROUPS && !due.contains_key(partition) {
            due.clear();
        }
        due.insert(partition.to_vec(), at);
    }

    /// The log of `partition` may have changed in ways this store has not read.
    pub(crate) fn forget(&self, partition: &[u8]) {
        self.lock().remove(partition);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Due> {
        // Held for single map operations that cannot panic half-way.
        self.due.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A position in one group's change feed. Opaque outside the store: pass back what
/// [`Store::changes`](crate::store::Store::changes),
/// [`Store::changes_token`](crate::store::Store::changes_token) or a listing returned, as its
/// string form.
///
/// Tokens are sealed for their group with the database's key (encoding/token.rs): parsing checks
/// only the shape, and [`Store::changes`](crate::store::Store::changes) refuses a token it did not
/// issue for that group.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ChangeToken {
    /// The first log entry not fully delivered.
    pub(crate) entry: u64,
    /// Changes of that entry already delivered.
    pub(crate) offset: u32,
    /// When the entry before `entry` was written (0: unknown, or there is none): a reader
    /// checks it, so that a token from another history of the group (a database restored from
    /// an older backup, or imported afresh, whose entries are numbered anew) is refused rather
    /// than read at a position that means something else there. A listing token (`listing`)
    /// also delivers the entries written in the 10 s up to that one (feed/reader.rs).
    pub(crate) previous: i64,
    /// A listing's token on a backend without snapshots, which a reader resolves first
    /// (feed/reader.rs, `listing_token`).
    pub(crate) listing: bool,
    /// The MAC over the fields, the kind and the group.
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
    pub(crate) fn mint(
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
            listing: false,
            tag: tokens.tag(Kind::Change, &[partition], &payload),
        }
    }

    /// A listing's token: the changes from entry `entry` on, and those of the entries before
    /// it written in the margin up to entry `entry - 1`, which was written at `previous`
    /// (feed/reader.rs, `listing_token`).
    pub(crate) fn mint_listing(
        tokens: &TokenKey,
        partition: &[u8],
        entry: u64,
        previous: i64,
    ) -> ChangeToken {
        let payload = ChangeToken::payload(entry, 0, previous);
        ChangeToken {
            entry,
            offset: 0,
            previous,
            listing: true,
            tag: tokens.tag(Kind::ListingChange, &[partition], &payload),
        }
    }

    fn kind(&self) -> Kind {
        if self.listing {
            Kind::ListingChange
        } else {
            Kind::Change
        }
    }

    /// Whether the database's key sealed this token for `partition`'s feed.
    pub(crate) fn is_sealed_for(&self, tokens: &TokenKey, partition: &[u8]) -> bool {
        let payload = ChangeToken::payload(self.entry, self.offset, self.previous);
        tokens.verify(self.kind(), &[partition], &payload, &self.tag)
    }

    /// Whether a key the database had before it was restored sealed this token for
    /// `partition`'s feed: a position in a history the restore replaced.
    pub(crate) fn was_sealed_before_restore(&self, tokens: &TokenKey, partition: &[u8]) -> bool {
        tokens
            .retired()
            .iter()
            .any(|old| self.is_sealed_for(old, partition))
    }
}

impl std::fmt::Display for ChangeToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut raw = [0; TOKEN_BYTES];
        raw[0] = self.kind() as u8;
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

    /// Checks the shape only; [`Store::changes`](crate::store::Store::changes) checks that the
    /// token is the store's own.
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
        let listing = match raw.first() {
            Some(&kind) if kind == Kind::Change as u8 => false,
            Some(&kind) if kind == Kind::ListingChange as u8 => true,
            _ => return Err(invalid()),
        };
        if raw.len() != TOKEN_BYTES {
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
            listing,
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
        /// The alias path the item left (docs/aliases.md); `None`: the change at its own path.
        alias: Option<KeyPath>,
    },
}

impl Change {
    /// The item's path.
    pub fn path(&self) -> &KeyPath {
        match self {
            Change::Put(item) => &item.path,
            Change::Delete { path, .. } => path,
        }
    }

    /// Where the change happened in the key space: the alias path for a change through an
    /// alias (an item entering, changing under or leaving it), else the item's path. The log
    /// and the feeds file the change there.
    pub fn key(&self) -> &KeyPath {
        match self {
            Change::Put(item) => item.alias.as_ref().unwrap_or(&item.path),
            Change::Delete { path, alias, .. } => alias.as_ref().unwrap_or(path),
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
    /// In a filtered feed, a [`Change::Delete`] that is an item leaving the filter's result: it
    /// matched before this change and does not after (it may still exist, at `version`).
    pub left: bool,
    /// The item right before this change: how a filter tells entering, changing and leaving.
    pub(crate) before: Before,
}

/// What [`Store::changes`](crate::store::Store::changes) returns.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ChangePage {
    /// The changes under the prefix, in commit order.
    pub changes: Vec<ChangeEntry>,
    /// Where to continue: after every change this page read, including those outside the prefix.
    pub next_token: ChangeToken,
}

impl ChangePage {
    /// The items of its puts, to change in place (to put them in another definition version:
    /// [`Store::all_in_versions`](crate::store::Store::all_in_versions)).
    pub fn puts_mut(&mut self) -> impl Iterator<Item = &mut Item> {
        self.changes
            .iter_mut()
            .filter_map(|entry| match &mut entry.change {
                Change::Put(item) => Some(item),
                Change::Delete { .. } => None,
            })
    }
}

/// Bytes of changes per log entry before a commit's changes continue in another entry: one
/// entry must stay under DynamoDB's 400 KB item limit. A single change is never split (an item
/// fits in 400 KB, and so does its change with a path and a few numbers more).
pub(crate) const ENTRY_BUDGET: usize = 200_000;

/// A log entry read back, in either form: its changes in order, each with the item as it was
/// right before (when asked for), and whether the commit ends with it.
pub(crate) struct ReadEntry {
    pub(crate) changes: Vec<(Change, Before)>,
    pub(crate) end: bool,
}

/// A change as the log stores it: a put has the item's metadata and value, a delete neither.
/// (A plain struct: serde's internally tagged enums cannot hold a borrowed `RawValue`.)
#[derive(Serialize, Deserialize)]
pub(crate) struct Logged<'a> {
    op: Op,
    path: String,
    version: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    created_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    modified_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<i64>,
    /// The alias path of a change through an alias.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    alias: Option<String>,
    /// A put's value, `null` included: present means a value (a put), absent means none (a
    /// delete). Entries written before this distinction read a put of `null` as absent, so a
    /// put without a value is a put of `null` (see `unlogged`).
    #[serde(
        borrow,
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::model::item::present"
    )]
    value: Option<&'a RawValue>,
    /// The item as it was right before the change (its before image), when it was live and
    /// both fit the entry budget. A member that PathDB before issue 49 ignores, so that an older
    /// server reads a newer log.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    was: Option<Was<'a>>,
    /// The item was live before the change, but its image did not fit (a large old value with a
    /// large new one): a filter cannot tell whether it matched.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    was_unknown: bool,
    /// The definition version a put's value is in (encoding/stamp.rs); absent: 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    sv: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A before image: the item's metadata and value as they were (its path is the change's).
#[derive(Serialize, Deserialize)]
pub(crate) struct Was<'a> {
    version: u64,
    created_at: i64,
    modified_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<i64>,
    #[serde(borrow)]
    value: &'a RawValue,
    /// The definition version the value is in; absent: 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    sv: u64,
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
pub(crate) struct Entry<'a> {
    #[serde(borrow)]
    pub(crate) changes: Vec<Logged<'a>>,
    pub(crate) end: bool,
    /// Every change of the entry whose item was live before has its before image (`was`), or
    /// says it has none (`was_unknown`): a change with neither made its item. Entries written
    /// before images were logged lack this.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) images: bool,
}

/// What an item was right before a change ([`ChangeEntry::before`]).
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) enum Before {
    /// Not known: the change was logged before PathDB logged before images, or the image did
    /// not fit its entry beside the change.
    Unknown,
    /// There was no live item.
    Absent,
    /// The item as it was.
    Item(Item),
}

impl<'a> Logged<'a> {
    /// Adds the before image `item` (the item as it was; `None`: there was none live), or, when
    /// `fits` is false, says that it was live but is not kept. The write path uses
    /// [`EntryWriter`]; the tests check it against this.
    #[cfg(test)]
    pub(crate) fn with_before(mut self, item: Option<&'a Item>, fits: bool) -> Result<Self, Error> {
        match item {
            Some(item) if fits => {
                self.was = Some(Was {
                    version: item.version,
                    created_at: item.created_at.0,
                    modified_at: item.modified_at.0,
                    expires_at: item.expires_at.map(|t| t.0),
                    value: serde_json::from_str(item.value.as_str()).map_err(corrupt)?,
                    sv: item.schema_version,
                });
            }
            Some(_) => self.was_unknown = true,
            None => {}
        }
        Ok(self)
    }

    /// The item right before this change, in an entry that logs before images (`images`).
    pub(crate) fn before(&self, images: bool) -> Result<Before, Error> {
        if !images || self.was_unknown {
            return Ok(Before::Unknown);
        }
        let Some(was) = &self.was else {
            return Ok(Before::Absent);
        };
        let path = self.path.parse::<KeyPath>().map_err(corrupt)?;
        let alias = self
            .alias
            .as_deref()
            .map(str::parse::<KeyPath>)
            .transpose()
            .map_err(corrupt)?;
        let record = Record {
            version: was.version,
            created_at: was.created_at,
            modified_at: was.modified_at,
            expires_at: was.expires_at,
            value: was.value.get().as_bytes().to_vec(),
        };
        Ok(Before::Item(Item {
            alias,
            schema_version: was.sv,
            ..to_item(path, record)?
        }))
    }
}

/// `change` as the log stores it. The write path uses [`EntryWriter`]; the tests check it
/// against this.
#[cfg(test)]
pub(crate) fn logged(change: &Change) -> Result<Logged<'_>, Error> {
    Ok(match change {
        Change::Put(item) => Logged {
            op: Op::Put,
            path: item.path.to_string(),
            version: item.version,
            created_at: Some(item.created_at.0),
            modified_at: Some(item.modified_at.0),
            expires_at: item.expires_at.map(|t| t.0),
            alias: item.alias.as_ref().map(ToString::to_string),
            value: Some(serde_json::from_str(item.value.as_str()).map_err(corrupt)?),
            was: None,
            was_unknown: false,
            sv: item.schema_version,
        },
        Change::Delete {
            path,
            version,
            alias,
        } => Logged {
            op: Op::Delete,
            path: path.to_string(),
            version: *version,
            created_at: None,
            modified_at: None,
            expires_at: None,
            alias: alias.as_ref().map(ToString::to_string),
            value: None,
            was: None,
            was_unknown: false,
            sv: 0,
        },
    })
}

pub(crate) fn unlogged(logged: &Logged<'_>) -> Result<Change, Error> {
    let path = logged.path.parse::<KeyPath>().map_err(corrupt)?;
    let alias = logged
        .alias
        .as_deref()
        .map(str::parse::<KeyPath>)
        .transpose()
        .map_err(corrupt)?;
    Ok(match logged.op {
        Op::Put => Change::Put(Item {
            alias,
            schema_version: logged.sv,
            ..to_item(
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
            )?
        }),
        Op::Delete => Change::Delete {
            path,
            version: logged.version,
            alias,
        },
    })
}

pub(crate) fn corrupt(e: impl std::error::Error + Send + Sync + 'static) -> Error {
    crate::model::error::StorageError::new("corrupt change log entry", e).into()
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
                created_at: crate::model::item::Timestamp(1),
                modified_at: crate::model::item::Timestamp(2),
                expires_at: None,
                value: crate::model::item::Json::parse(text).unwrap(),
                alias: None,
                schema_version: 0,
            };
            let change = Change::Put(item);
            let entry = Entry {
                changes: vec![logged(&change).unwrap()],
                end: true,
                images: true,
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
        let key = crate::encoding::token::tests_key();
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

    #[test]
    fn a_change_carries_its_before_image_where_it_fits() {
        let item = |version: u64, text: &str| Item {
            path: "/u-1/o-2".parse().unwrap(),
            version,
            created_at: crate::model::item::Timestamp(1),
            modified_at: crate::model::item::Timestamp(version as i64),
            expires_at: None,
            value: crate::model::item::Json::parse(text).unwrap(),
            alias: None,
            schema_version: 0,
        };
        let (old, new) = (item(1, r#"{"s": "open"}"#), item(2, r#"{"s": "closed"}"#));
        let change = Change::Put(new);
        let entry = |l: Logged<'_>| {
            serde_json::to_string(&Entry {
                changes: vec![l],
                end: true,
                images: true,
            })
            .unwrap()
        };
        let before = |text: &str| {
            let entry: Entry<'_> = serde_json::from_str(text).unwrap();
            entry.changes[0].before(entry.images).unwrap()
        };
        let kept = entry(
            logged(&change)
                .unwrap()
                .with_before(Some(&old), true)
                .unwrap(),
        );
        assert_eq!(before(&kept), Before::Item(old.clone()));
        // The change reads as before, for a reader that knows nothing of images.
        assert_eq!(read(&kept), std::slice::from_ref(&change));
        let unknown = entry(
            logged(&change)
                .unwrap()
                .with_before(Some(&old), false)
                .unwrap(),
        );
        assert_eq!(before(&unknown), Before::Unknown);
        let created = entry(logged(&change).unwrap().with_before(None, true).unwrap());
        assert_eq!(before(&created), Before::Absent);
        // An entry from before images: not known.
        let older = kept.replace(r#","images":true"#, "");
        assert_eq!(before(&older), Before::Unknown);
        // An older reader's shape ignores what it does not know (no deny_unknown_fields), as
        // PathDB's own does with a member added later.
        let later = kept.replace(r#""op":"put""#, r#""op":"put","later":{"x":1}"#);
        assert_eq!(read(&later), [change]);
    }
}
