//! Ids generated on write ([`TxOp::Create`](crate::TxOp::Create)): random UUIDs, random 53-bit
//! integers, and per-parent sequences (docs/changes.md, "Generated ids").
//!
//! A generated path is always one that was never used: no item, tombstone or descendant is
//! stored under it when the batch is planned, and the item's put is conditional on its key being
//! absent, so a racing creator makes the batch fail and the store plans again with a new id.
//!
//! A sequence keeps its last id in a record (layout.rs): under the parent's group for children,
//! in the system partition for new groups. Every create of the sequence writes that record
//! conditionally on the value it read, so two creators never issue one id, and the record
//! outlives deletes, so an id is never issued twice. Without a record yet (a new namespace, or
//! a database filled by an import), a sequence starts after the largest integer id it finds
//! under the parent (children) or at the first unused id (groups).

use crate::backend::{Direction, Expect, Key, Reader, Record, SortRange, WriteOp};
use crate::{Error, layout};
use pathdb_keys::{Id, Int, KeyPath, Uuid};
use std::collections::{HashMap, HashSet};
use std::ops::Bound;

/// How [`TxOp::Create`](crate::TxOp::Create) chooses the new item's id.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum IdKind {
    /// A random (version 4) UUID.
    Uuid,
    /// A random integer in `[1, 2^53)`: exact in every JSON client, unordered.
    Rand53,
    /// The next integer of the parent's sequence for the namespace: 1, 2, 3, ... strictly
    /// increasing, never issued twice, even after deletes.
    Sequence,
}

impl IdKind {
    /// The name used by the API and the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            IdKind::Uuid => "uuid",
            IdKind::Rand53 => "rand53",
            IdKind::Sequence => "sequence",
        }
    }
}

impl std::str::FromStr for IdKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<IdKind, Error> {
        match s {
            "uuid" => Ok(IdKind::Uuid),
            "rand53" => Ok(IdKind::Rand53),
            "sequence" => Ok(IdKind::Sequence),
            other => Err(Error::InvalidRequest(format!(
                "id must be uuid, rand53 or sequence, got {other:?}"
            ))),
        }
    }
}

/// Candidates tried before giving up: only ids already taken by other means (written directly,
/// or imported) are skipped, so this is reached only by a namespace full of them.
const MAX_PROBES: u64 = 10_000;
/// Entries read backwards to find the largest integer id under a parent.
const FLOOR_SCAN: usize = 64;

/// The ids one plan generates: sequences advanced so far, paths taken.
#[derive(Default)]
pub(crate) struct Generator {
    /// Sequence record → (version read, last id issued in this plan).
    sequences: HashMap<Key, (Option<u64>, u64)>,
    taken: HashSet<KeyPath>,
}

impl Generator {
    /// A generator that never issues one of `fixed` (paths the same transaction names).
    pub(crate) fn new<'a>(fixed: impl IntoIterator<Item = &'a KeyPath>) -> Generator {
        Generator {
            sequences: HashMap::new(),
            taken: fixed.into_iter().cloned().collect(),
        }
    }

    /// A new, never used path `{parent}/{namespace}-{id}`.
    pub(crate) fn generate<R: Reader>(
        &mut self,
        reader: &R,
        parent: Option<&KeyPath>,
        namespace: &str,
        kind: IdKind,
    ) -> Result<KeyPath, Error> {
        let path_for = |id: Id| -> Result<KeyPath, Error> {
            match parent {
                Some(p) => p.child(namespace, id),
                None => KeyPath::builder().push(namespace, id).build(),
            }
            .map_err(|e| Error::InvalidRequest(e.to_string()))
        };
        let mut next = match kind {
            IdKind::Sequence => Some(self.sequence_start(reader, parent, namespace)?),
            _ => None,
        };
        for _ in 0..MAX_PROBES {
            let id: Id = match (kind, next) {
                (IdKind::Uuid, _) => Uuid::new_v4().into(),
                (IdKind::Rand53, _) => random53().into(),
                (IdKind::Sequence, Some(n)) => n.into(),
                (IdKind::Sequence, None) => unreachable!("a sequence starts from a number"),
            };
            let path = path_for(id)?;
            crate::store::check_key(&path)?;
            if !self.taken.contains(&path) && !used(reader, &path)? {
                if let Some(n) = next {
                    let key = layout::sequence_key(parent, namespace);
                    if let Some(entry) = self.sequences.get_mut(&key) {
                        entry.1 = n;
                    }
                }
                self.taken.insert(path.clone());
                return Ok(path);
            }
            next = next
                .map(|n| n.checked_add(1).ok_or_else(exhausted))
                .transpose()?;
        }
        Err(Error::InvalidRequest(format!(
            "no unused {} id found for {namespace} after {MAX_PROBES} tries",
            kind.as_str()
        )))
    }

    /// The first id to try for a sequence, reading its record once per plan.
    fn sequence_start<R: Reader>(
        &mut self,
        reader: &R,
        parent: Option<&KeyPath>,
        namespace: &str,
    ) -> Result<u64, Error> {
        let key = layout::sequence_key(parent, namespace);
        if let Some((_, last)) = self.sequences.get(&key) {
            return last.checked_add(1).ok_or_else(exhausted);
        }
        let stored = reader.get(&key)?.map(|r| r.version);
        let last = match (stored, parent) {
            (Some(last), _) => last,
            (None, Some(parent)) => largest_int_child(reader, parent, namespace)?,
            (None, None) => first_unused_group(reader, namespace)? - 1,
        };
        self.sequences.insert(key, (stored, last));
        last.checked_add(1).ok_or_else(exhausted)
    }

    /// The writes that advance the sequences this plan used, each conditional on the record it
    /// read.
    pub(crate) fn sequence_writes(self, now: i64) -> Vec<WriteOp> {
        self.sequences
            .into_iter()
            .map(|(key, (read, last))| WriteOp::Put {
                key,
                record: Record {
                    // The record's version is the last id issued: conditions compare it.
                    version: last,
                    created_at: now,
                    modified_at: now,
                    expires_at: None,
                    value: b"{}".to_vec(),
                },
                expect: Some(read.map_or(Expect::Absent, Expect::Version)),
            })
            .collect()
    }
}

/// Reads where a create goes from text: `/{parent}/{namespace}` (a path and a namespace without
/// id), `/{namespace}` (a new group) or, in a transaction, `$N/{namespace}` (under the item that
/// operation `N` creates). A trailing `-` is allowed (`/user-7/post-`). The HTTP API and the CLI
/// share this reading.
///
/// # Errors
/// [`Error::InvalidRequest`] naming what is wrong.
pub fn parse_create_target(text: &str) -> Result<(crate::Parent, String), Error> {
    use crate::Parent;
    let text = text.strip_suffix('-').unwrap_or(text);
    let bad = |why: &str| Error::InvalidRequest(format!("{text}: {why}"));
    let (parent, namespace) = text
        .rsplit_once('/')
        .ok_or_else(|| bad("expected a parent path and a namespace"))?;
    // An escaped `/` (`%/`) belongs to a string id: the namespace must follow a real one.
    let escapes = parent.bytes().rev().take_while(|&b| b == b'%').count();
    let valid = namespace
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && namespace
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_');
    if escapes % 2 == 1 || !valid {
        return Err(bad(
            "the last element must be a namespace without an id (letters, digits, '_')",
        ));
    }
    let parent = match parent.trim_start_matches('/') {
        "" => Parent::Root,
        reference if reference.starts_with('$') => Parent::Created(
            reference[1..]
                .parse()
                .map_err(|_| bad("`$N` needs an operation index and stands for a whole path"))?,
        ),
        _ => Parent::Path(parent.parse::<KeyPath>().map_err(|e| bad(&e.to_string()))?),
    };
    Ok((parent, namespace.to_owned()))
}

fn exhausted() -> Error {
    Error::InvalidRequest("the sequence has reached the largest integer id".into())
}

/// A random integer in `[1, 2^53)`, from the operating system's randomness (as UUIDs).
fn random53() -> u64 {
    loop {
        // The low 64 bits of a v4 UUID hold 62 random bits (the top two mark the variant).
        let n = (Uuid::new_v4().as_u128() as u64) & ((1 << 53) - 1);
        if n != 0 {
            return n;
        }
    }
}

/// Whether anything is stored at `path` or below it: an item, a tombstone, a descendant (for a
/// group, any record of its partition).
fn used<R: Reader>(reader: &R, path: &KeyPath) -> Result<bool, Error> {
    let partition = path.partition_key();
    let range = if path.len() == 1 {
        SortRange {
            start: Bound::Unbounded,
            end: Bound::Unbounded,
        }
    } else {
        let r = path.sort_key_subtree_range();
        SortRange {
            start: Bound::Included(r.start),
            end: r.end.map_or(Bound::Unbounded, Bound::Excluded),
        }
    };
    Ok(!reader
        .scan(&partition, &range, Direction::Forward, 1)?
        .is_empty())
}

/// A group id of `namespace` with nothing stored at it, found in O(log n) probes (1, 2, 4, ...
/// until one is unused, then a binary search below it), for a group sequence without its
/// record: the groups of a namespace cannot be read in order without a full scan. Ids are
/// assumed to be used from 1 up; a gap below the largest may be found, which is still an unused
/// id, and the creates after it skip what is taken.
fn first_unused_group<R: Reader>(reader: &R, namespace: &str) -> Result<u64, Error> {
    let group_used = |n: u64| -> Result<bool, Error> {
        let path = KeyPath::builder()
            .push(namespace, n)
            .build()
            .map_err(|e| Error::InvalidRequest(e.to_string()))?;
        used(reader, &path)
    };
    let mut high = 1u64;
    while group_used(high)? {
        high = high.checked_mul(2).ok_or_else(exhausted)?;
    }
    // `high` is unused; everything probed below it was used.
    let mut low = high / 2; // used, or 0
    while high - low > 1 {
        let mid = low + (high - low) / 2;
        if group_used(mid)? {
            low = mid;
        } else {
            high = mid;
        }
    }
    Ok(high)
}

/// The largest positive integer id of `namespace` among `parent`'s children (0 when none is
/// found among the last entries of the range).
fn largest_int_child<R: Reader>(
    reader: &R,
    parent: &KeyPath,
    namespace: &str,
) -> Result<u64, Error> {
    let bound = |id: u64| -> Result<KeyPath, Error> {
        parent
            .child(namespace, id)
            .map_err(|e| Error::InvalidRequest(e.to_string()))
    };
    let first = bound(1)?.sort_key_subtree_range();
    let last = bound(u64::MAX)?.sort_key_subtree_range();
    let range = SortRange {
        start: Bound::Included(first.start),
        end: last.end.map_or(Bound::Unbounded, Bound::Excluded),
    };
    let depth = parent.len();
    for (sort, _) in reader.scan(
        &parent.partition_key(),
        &range,
        Direction::Reverse,
        FLOOR_SCAN,
    )? {
        let Ok(path) = parent.with_sort_key(&sort) else {
            continue;
        };
        let Some(element) = path.elements().get(depth) else {
            continue;
        };
        if element.namespace().as_str() != namespace {
            continue;
        }
        if let Some(Id::Int(n)) = element.id()
            && !n.is_negative()
            && *n != Int::from(0u64)
        {
            return Ok(n.magnitude());
        }
    }
    Ok(0)
}
