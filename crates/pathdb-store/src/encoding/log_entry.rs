//! A change log entry's bytes, in either form: the writer a commit's change-log stage fills
//! ([`EntryWriter`]), the reader a feed reads them with ([`read_entry`]), and the join a backend's
//! group commit makes of several ([`join_log_entries`]). The JSON form's shape is in
//! encoding/changelog.rs, the compact one's in encoding/compact_log.rs; docs/changes.md, "Two
//! forms of an entry", says which a database writes.

use crate::backend::Record;
use crate::encoding::changelog::{
    Before, Change, ENTRY_BUDGET, Entry, ReadEntry, corrupt, unlogged,
};
use crate::encoding::compact_log;
use crate::model::error::Error;
use crate::model::item::Item;
use pathdb_keys::KeyPath;

/// Joins the change log entries that several batches append to one log into one entry, for a
/// backend that commits those batches in one atomic write (DynamoDB's group commit): their
/// changes in the order given, as if one commit had made them all. `None` when they cannot be
/// joined (an entry that continues its commit in another, or a joined entry over the entry
/// budget); the backend then stores them as separate entries.
///
/// Only the store's own change log entries can be joined: the records of
/// [`WriteOp::Append`](crate::backend::WriteOp::Append)s the store planned.
pub fn join_log_entries(records: &[&Record]) -> Option<Record> {
    let value = if records
        .iter()
        .all(|r| compact_log::flags(&r.value).is_some())
    {
        join_compact(records)?
    } else {
        join_json(records)?
    };
    Some(Record {
        version: 1,
        // The entry's age decides when it is trimmed: the newest commit's, so no change is
        // dropped before its retention is over.
        created_at: records.iter().map(|r| r.created_at).max()?,
        modified_at: records.iter().map(|r| r.modified_at).max()?,
        expires_at: None,
        value,
    })
}

/// [`join_log_entries`] for compact entries: their changes one after another behind one header.
fn join_compact(records: &[&Record]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    compact_log::start(&mut out);
    let mut images = true;
    for record in records {
        let (end, logged_images) = compact_log::flags(&record.value)?;
        if !end {
            return None;
        }
        images &= logged_images;
        out.extend_from_slice(record.value.get(compact_log::HEADER..)?);
        if out.len() > ENTRY_BUDGET {
            return None;
        }
    }
    compact_log::set_flags(&mut out, true, images);
    Some(out)
}

/// [`join_log_entries`] for JSON entries.
fn join_json(records: &[&Record]) -> Option<Vec<u8>> {
    let mut changes = Vec::new();
    let mut size = 0;
    let mut images = true;
    for record in records {
        let entry: Entry<'_> = serde_json::from_slice(&record.value).ok()?;
        size += record.value.len();
        if !entry.end || size > ENTRY_BUDGET {
            return None;
        }
        images &= entry.images;
        changes.extend(entry.changes);
    }
    serde_json::to_vec(&Entry {
        changes,
        end: true,
        images,
    })
    .ok()
}

/// Reads a log entry's stored bytes, compact or JSON. Before images are read only when `images`
/// asks for them (a filtered feed); otherwise each is [`Before::Unknown`].
///
/// # Errors
/// Bytes the store would not write: a corrupt change log entry.
pub(crate) fn read_entry(bytes: &[u8], images: bool) -> Result<ReadEntry, Error> {
    read_entry_with(bytes, &|_, _| images)
}

/// [`read_entry`], with the before images made into items only where `images` (the change's
/// index in the entry, the change) asks for them: a filtered feed needs those of the changes it
/// decides on, not of those it skips.
///
/// # Errors
/// Bytes the store would not write: a corrupt change log entry.
pub(crate) fn read_entry_with(
    bytes: &[u8],
    images: &dyn Fn(usize, &Change) -> bool,
) -> Result<ReadEntry, Error> {
    if bytes.first() == Some(&compact_log::FORM) {
        return compact_log::read(bytes, images);
    }
    let entry: Entry<'_> = serde_json::from_slice(bytes).map_err(corrupt)?;
    let changes = entry
        .changes
        .iter()
        .enumerate()
        .map(|(i, logged)| {
            let change = unlogged(logged)?;
            let before = if images(i, &change) {
                logged.before(entry.images)?
            } else {
                Before::Unknown
            };
            Ok((change, before))
        })
        .collect::<Result<_, Error>>()?;
    Ok(ReadEntry {
        changes,
        end: entry.end,
    })
}

/// The changes a change log entry's stored bytes hold, in either form (the fuzz target
/// `log_entries` reads arbitrary bytes through this, before images included).
///
/// # Errors
/// Bytes the store would not write: a corrupt change log entry.
pub fn decode_log_entry(value: &[u8]) -> Result<Vec<Change>, Error> {
    Ok(read_entry(value, true)?
        .changes
        .into_iter()
        .map(|(change, _)| change)
        .collect())
}

/// Writes a log entry's bytes for the changes pushed to it: the bytes `serde_json` writes for an
/// [`Entry`] of the same changes (`images` on), without parsing each value again into a
/// `RawValue` first. A [`Json`](crate::model::item::Json) is valid JSON text already, so it goes
/// in as it is; that parse and the struct walk were most of a put's change log entry (about
/// 11,000 instructions of a put's 235,000 under callgrind, docs/benchmarks.md).
pub(crate) struct EntryWriter {
    out: Vec<u8>,
    empty: bool,
    /// A path's text, written here and then into `out`: one buffer for every path of the entry.
    text: String,
    /// Writes the compact form (encoding/compact_log.rs) instead of JSON.
    compact: bool,
}

impl EntryWriter {
    /// A writer of one entry; `compact`: in the compact form, which the database must be marked
    /// for (jobs/open.rs).
    pub(crate) fn new(compact: bool) -> Self {
        let mut out = Vec::with_capacity(512);
        if compact {
            compact_log::start(&mut out);
        } else {
            out.extend_from_slice(br#"{"changes":["#);
        }
        EntryWriter {
            out,
            empty: true,
            text: String::new(),
            compact,
        }
    }

    /// Whether no change was pushed yet.
    pub(crate) fn is_empty(&self) -> bool {
        self.empty
    }

    /// Adds `change` with its before image `before` (the item as it was; `None`: there was
    /// none live), or, when `fits` is false, the mark that it was live but is not kept.
    pub(crate) fn push(&mut self, change: &Change, before: Option<&Item>, fits: bool) {
        if self.compact {
            self.empty = false;
            compact_log::push(&mut self.out, change, before, fits);
            return;
        }
        if !self.empty {
            self.out.push(b',');
        }
        self.empty = false;
        let (out, text) = (&mut self.out, &mut self.text);
        match change {
            Change::Put(item) => {
                out.extend_from_slice(br#"{"op":"put","path":"#);
                path_string(out, text, &item.path);
                number(out, r#","version":"#, item.version);
                number(out, r#","created_at":"#, item.created_at.0);
                number(out, r#","modified_at":"#, item.modified_at.0);
                if let Some(at) = item.expires_at {
                    number(out, r#","expires_at":"#, at.0);
                }
                if let Some(alias) = &item.alias {
                    out.extend_from_slice(br#","alias":"#);
                    path_string(out, text, alias);
                }
                out.extend_from_slice(br#","value":"#);
                out.extend_from_slice(item.value.as_str().as_bytes());
            }
            Change::Delete {
                path,
                version,
                alias,
            } => {
                out.extend_from_slice(br#"{"op":"delete","path":"#);
                path_string(out, text, path);
                number(out, r#","version":"#, *version);
                if let Some(alias) = alias {
                    out.extend_from_slice(br#","alias":"#);
                    path_string(out, text, alias);
                }
            }
        }
        match before {
            Some(was) if fits => {
                out.extend_from_slice(br#","was":{"version":"#);
                out.extend_from_slice(itoa::Buffer::new().format(was.version).as_bytes());
                number(out, r#","created_at":"#, was.created_at.0);
                number(out, r#","modified_at":"#, was.modified_at.0);
                if let Some(at) = was.expires_at {
                    number(out, r#","expires_at":"#, at.0);
                }
                out.extend_from_slice(br#","value":"#);
                out.extend_from_slice(was.value.as_str().as_bytes());
                if was.schema_version != 0 {
                    number(out, r#","sv":"#, was.schema_version);
                }
                out.push(b'}');
            }
            Some(_) => out.extend_from_slice(br#","was_unknown":true"#),
            None => {}
        }
        if let Change::Put(item) = change
            && item.schema_version != 0
        {
            number(out, r#","sv":"#, item.schema_version);
        }
        out.push(b'}');
    }

    /// The entry's bytes; `end`: the commit's last entry in this group.
    pub(crate) fn finish(mut self, end: bool) -> Vec<u8> {
        if self.compact {
            compact_log::finish(&mut self.out, end);
            return self.out;
        }
        self.out.extend_from_slice(if end {
            br#"],"end":true,"images":true}"#
        } else {
            br#"],"end":false,"images":true}"#
        });
        self.out
    }
}

/// `,"name":n`, from `member` (`,"name":`) written whole: each write into the entry is a call.
fn number(out: &mut Vec<u8>, member: &str, n: impl itoa::Integer) {
    out.extend_from_slice(member.as_bytes());
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// `path`'s text as a JSON string, written through `scratch`.
fn path_string(out: &mut Vec<u8>, scratch: &mut String, path: &KeyPath) {
    scratch.clear();
    // Writing into a `String` cannot fail.
    let _ = path.write_text(scratch);
    string(out, scratch);
}

/// A JSON string, escaped as serde_json escapes it: only `"`, `\` and control characters, so
/// text without them (nearly every path) goes in between quotes as it is.
fn string(out: &mut Vec<u8>, text: &str) {
    if text.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        // Writing a string to a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, text);
    } else {
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::changelog::logged;
    use crate::model::item::{Json, Timestamp};
    use proptest::prelude::*;

    fn put_value(change: &Change) -> &str {
        match change {
            Change::Put(item) => item.value.as_str(),
            Change::Delete { .. } => panic!("expected a put, got {change:?}"),
        }
    }

    fn record(value: &str, created_at: i64) -> Record {
        Record {
            version: 1,
            created_at,
            modified_at: created_at,
            expires_at: None,
            value: value.as_bytes().to_vec(),
        }
    }

    /// Whole commits' entries join into one with their changes in order and the newest time;
    /// an entry that continues in another, or a join past the budget, is refused.
    #[test]
    fn whole_commits_join_into_one_entry() {
        let a = record(
            r#"{"changes":[{"op":"put","path":"/n-1/a-1","version":1,"created_at":5,"modified_at":5,"value":1}],"end":true}"#,
            5,
        );
        let b = record(
            r#"{"changes":[{"op":"delete","path":"/n-1/a-2","version":4},{"op":"put","path":"/n-1/a-3","version":2,"created_at":3,"modified_at":7,"value":null}],"end":true}"#,
            7,
        );
        let joined = join_log_entries(&[&a, &b]).expect("joined");
        assert_eq!((joined.created_at, joined.modified_at), (7, 7));
        let changes = decode_log_entry(&joined.value).unwrap();
        let paths: Vec<String> = changes.iter().map(|c| c.path().to_string()).collect();
        assert_eq!(paths, ["/n-1/a-1", "/n-1/a-2", "/n-1/a-3"]);
        assert_eq!(put_value(&changes[0]), "1");
        assert!(matches!(changes[1], Change::Delete { version: 4, .. }));
        assert_eq!(put_value(&changes[2]), "null");

        let part = record(r#"{"changes":[],"end":false}"#, 5);
        assert!(join_log_entries(&[&a, &part]).is_none());
        let big = record(
            &format!(
                r#"{{"changes":[{{"op":"put","path":"/n-1/a-9","version":1,"created_at":5,"modified_at":5,"value":"{}"}}],"end":true}}"#,
                "x".repeat(ENTRY_BUDGET / 2)
            ),
            5,
        );
        assert!(join_log_entries(&[&big, &a]).is_some());
        assert!(join_log_entries(&[&big, &big]).is_none());
        assert!(join_log_entries(&[&a, &record("not json", 5)]).is_none());
    }

    fn path() -> impl Strategy<Value = KeyPath> {
        (
            0u64..1000,
            "[a-z]{1,6}",
            prop::option::of("[a-z\\\\\"é ]{0,6}"),
            any::<bool>(),
        )
            .prop_map(|(n, kind, text, quoted)| {
                let text = match text {
                    // A string id, quoted: its characters need escaping in JSON.
                    Some(text) if quoted => {
                        format!("/n-{n}/{kind}-{}", serde_json::to_string(&text).unwrap())
                    }
                    // As it is: a `\\` or a `\"` alone.
                    Some(text) => format!("/n-{n}/{kind}-s{text}"),
                    None => format!("/n-{n}/{kind}-{n}"),
                };
                text.parse().unwrap()
            })
    }

    fn json() -> impl Strategy<Value = Json> {
        crate::model::item::minify_tests::json().prop_map(|v| Json::from_value(&v))
    }

    fn item() -> impl Strategy<Value = Item> {
        (
            path(),
            1u64..u64::MAX,
            any::<i64>(),
            any::<i64>(),
            prop::option::of(any::<i64>()),
            json(),
            prop::option::of(path()),
            prop_oneof![Just(0u64), 1u64..5],
        )
            .prop_map(
                |(path, version, created, modified, expires, value, alias, sv)| Item {
                    path,
                    version,
                    created_at: Timestamp(created),
                    modified_at: Timestamp(modified),
                    expires_at: expires.map(Timestamp),
                    value,
                    alias,
                    schema_version: sv,
                },
            )
    }

    fn change() -> impl Strategy<Value = Change> {
        prop_oneof![
            item().prop_map(Change::Put),
            (path(), 1u64..u64::MAX, prop::option::of(path())).prop_map(
                |(path, version, alias)| Change::Delete {
                    path,
                    version,
                    alias,
                }
            ),
        ]
    }

    /// What a writer is given: changes, each with its before image (if the item was live) and
    /// whether that fits.
    fn pushes() -> impl Strategy<Value = Vec<(Change, Option<Item>, bool)>> {
        prop::collection::vec((change(), prop::option::of(item()), any::<bool>()), 1..4)
    }

    proptest! {
        /// The writer writes the bytes serde_json writes for the same entry, so that every
        /// reader (this server's, an older one's) reads what it always read.
        #[test]
        fn writes_what_serde_json_writes(
            changes in pushes(),
            end in any::<bool>(),
        ) {
            let mut writer = EntryWriter::new(false);
            let mut logged_changes = Vec::new();
            for (change, before, fits) in &changes {
                writer.push(change, before.as_ref(), *fits);
                logged_changes.push(
                    logged(change).unwrap().with_before(before.as_ref(), *fits).unwrap(),
                );
            }
            let written = writer.finish(end);
            let expected = serde_json::to_vec(&Entry {
                changes: logged_changes,
                end,
                images: true,
            })
            .unwrap();
            prop_assert_eq!(
                String::from_utf8(written).unwrap(),
                String::from_utf8(expected).unwrap()
            );
        }

        /// Both forms of an entry read back as the same changes, before images and end,
        /// and the compact one joins with others as the JSON one does.
        #[test]
        fn both_forms_read_back_the_same(
            changes in pushes(),
            end in any::<bool>(),
        ) {
            let write = |compact: bool| {
                let mut writer = EntryWriter::new(compact);
                for (change, before, fits) in &changes {
                    writer.push(change, before.as_ref(), *fits);
                }
                writer.finish(end)
            };
            let (json, compact) = (write(false), write(true));
            prop_assert_eq!(compact[0], compact_log::FORM);
            let pairs = |entry: ReadEntry| {
                (entry.changes, entry.end)
            };
            let from_json = pairs(read_entry(&json, true).unwrap());
            prop_assert_eq!(&pairs(read_entry(&compact, true).unwrap()), &from_json);
            // The images as the writer was given them, at the change's path and alias.
            for ((_, before), (change, image, fits)) in from_json.0.iter().zip(&changes) {
                let alias = match change {
                    Change::Put(item) => item.alias.clone(),
                    Change::Delete { alias, .. } => alias.clone(),
                };
                let expected = match image {
                    Some(item) if *fits => Before::Item(Item {
                        path: change.path().clone(),
                        alias,
                        ..item.clone()
                    }),
                    Some(_) => Before::Unknown,
                    None => Before::Absent,
                };
                prop_assert_eq!(before, &expected);
            }
            // Not asked for: not read.
            let unread = read_entry(&compact, false).unwrap();
            prop_assert!(unread.changes.iter().all(|(_, b)| *b == Before::Unknown));
            prop_assert_eq!(
                decode_log_entry(&compact).unwrap(),
                from_json.0.iter().map(|(c, _)| c.clone()).collect::<Vec<_>>()
            );
            if end {
                let (a, b) = (record_of(json.clone()), record_of(compact.clone()));
                let joined_json = join_log_entries(&[&a, &a]).unwrap();
                let joined_compact = join_log_entries(&[&b, &b]).unwrap();
                prop_assert_eq!(joined_compact.value[0], compact_log::FORM);
                prop_assert_eq!(
                    pairs(read_entry(&joined_compact.value, true).unwrap()),
                    pairs(read_entry(&joined_json.value, true).unwrap())
                );
                // The forms are not mixed in one entry.
                prop_assert!(join_log_entries(&[&a, &b]).is_none());
            } else {
                let b = record_of(compact.clone());
                prop_assert!(join_log_entries(&[&b]).is_none());
            }
        }

        /// Whatever bytes a compact entry holds, reading them fails or gives changes: it
        /// never panics, and a cut entry is refused unless it ends between changes.
        #[test]
        fn compact_bytes_never_panic(
            bytes in prop::collection::vec(any::<u8>(), 0..200),
            (change, before, fits) in (change(), prop::option::of(item()), any::<bool>()),
        ) {
            let mut input = vec![compact_log::FORM];
            input.extend_from_slice(&bytes);
            let _ = read_entry(&input, true);
            let mut writer = EntryWriter::new(true);
            writer.push(&change, before.as_ref(), fits);
            let whole = writer.finish(true);
            for cut in compact_log::HEADER + 1..whole.len() {
                prop_assert!(read_entry(&whole[..cut], true).is_err(), "cut at {}", cut);
            }
            let mut flipped = whole.clone();
            for at in 0..whole.len() {
                flipped[at] ^= 0x5a;
                let _ = read_entry(&flipped, true);
                flipped[at] ^= 0x5a;
            }
        }
    }

    fn record_of(value: Vec<u8>) -> Record {
        Record {
            version: 1,
            created_at: 5,
            modified_at: 5,
            expires_at: None,
            value,
        }
    }
}
