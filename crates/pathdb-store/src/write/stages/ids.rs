//! Stage: generated ids ([`TxOp::Create`]). A create's path gets a random
//! UUID, a random 53-bit integer, or the next id of a per-parent sequence (docs/changes.md,
//! "Generated ids"); after every operation, the sequences advanced write their records.
//!
//! A generated path is always one that was never used: no item, tombstone or descendant is
//! stored under it when the batch is planned, and the item's put is conditional on its key being
//! absent, so a racing creator makes the batch fail and the store plans again with a new id.
//! That one read of the path's subtree also tells the item stage that nothing is stored at it:
//! a create reads no more (on DynamoDB, one `Query` instead of a `Query` and a `GetItem`).
//!
//! A sequence keeps its last id in a record (encoding/layout.rs): under the parent's group for
//! children, in the system partition for new groups. Every create of the sequence writes that
//! record conditionally on the value it read, so two creators never issue one id, and the record
//! outlives deletes, so an id is never issued twice. Without a record yet (a new namespace, or a
//! database filled by an import), a sequence starts after the largest integer id it finds under the
//! parent (children) or at the first unused id (groups).

use crate::backend::{Direction, Expect, Key, Reader, Record, SortRange, WriteOp};
use crate::encoding::layout;
use crate::encoding::limits::{check_item_size, check_key};
use crate::model::error::Error;
use crate::model::error::StorageError;
use crate::write::ops::{IdKind, Parent, TxOp};
use crate::write::plan::{Context, Plan};
use pathdb_keys::{Id, Int, KeyPath, Uuid};
use std::collections::{HashMap, HashSet};
use std::ops::Bound;

/// Candidates tried before giving up: only ids already taken by other means (written directly,
/// or imported) are skipped, so this is reached only by a namespace full of them.
const MAX_PROBES: u64 = 10_000;
/// Entries read backwards to find the largest integer id under a parent.
const FLOOR_SCAN: usize = 64;

/// The stage's state over one plan: the generator, and the paths earlier creates made (for
/// [`Parent::Created`]).
pub(crate) struct Ids {
    /// `None` for a plan without creates (most of them): nothing to generate, and the paths the
    /// plan names need not be copied and hashed.
    generator: Option<Generator>,
    created: Vec<Option<KeyPath>>,
}

impl Ids {
    /// For the operations of one plan: generated paths avoid the paths they name.
    pub(crate) fn new(ops: &[TxOp]) -> Ids {
        let creates = ops.iter().any(|op| matches!(op, TxOp::Create { .. }));
        Ids {
            generator: creates.then(|| Generator::new(ops.iter().filter_map(TxOp::path))),
            created: vec![None; ops.len()],
        }
    }

    /// The path operation `index` writes, and whether it was generated: a create's new path,
    /// or the path the operation names.
    pub(crate) fn target<R: Reader + ?Sized>(
        &mut self,
        ctx: &Context<'_, R>,
        index: usize,
        op: &TxOp,
    ) -> Result<(KeyPath, bool), Error> {
        let TxOp::Create {
            parent,
            namespace,
            id,
            value,
            ..
        } = op
        else {
            return match op.path() {
                Some(path) => Ok((path.clone(), false)),
                None => Err(StorageError::msg("an operation without a path").into()),
            };
        };
        let parent = match parent {
            Parent::Root => None,
            Parent::Path(p) => {
                check_key(p)?;
                Some(p.clone())
            }
            Parent::Created(earlier) => self.created.get(*earlier).cloned().flatten(),
        };
        let generator = self
            .generator
            .as_mut()
            .ok_or_else(|| StorageError::msg("a create in a plan without creates"))?;
        let path = generator.generate(ctx.reader, parent.as_ref(), namespace, *id)?;
        check_item_size(&path, value)?;
        self.created[index] = Some(path.clone());
        Ok((path, true))
    }

    /// After every operation: the writes that advance the sequences the plan used.
    pub(crate) fn stage<R: Reader + ?Sized>(
        self,
        ctx: &Context<'_, R>,
        plan: &mut Plan,
    ) -> Result<(), Error> {
        let Some(generator) = self.generator else {
            return Ok(());
        };
        for op in generator.sequence_writes(ctx.now) {
            // A sequence belongs to a create, so a plan that advanced one owns writes already.
            let owner = plan
                .owners
                .last()
                .cloned()
                .ok_or_else(|| StorageError::msg("a sequence write without a create"))?;
            plan.push(op, &owner, true);
        }
        Ok(())
    }
}

/// The ids one plan generates: sequences advanced so far, paths taken.
#[derive(Default)]
struct Generator {
    /// Sequence record → (version read, last id issued in this plan).
    sequences: HashMap<Key, (Option<u64>, u64)>,
    taken: HashSet<KeyPath>,
}

impl Generator {
    /// A generator that never issues one of `fixed` (paths the same transaction names).
    fn new<'a>(fixed: impl IntoIterator<Item = &'a KeyPath>) -> Generator {
        Generator {
            sequences: HashMap::new(),
            taken: fixed.into_iter().cloned().collect(),
        }
    }

    /// A new, never used path `{parent}/{namespace}-{id}`.
    fn generate<R: Reader + ?Sized>(
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
            check_key(&path)?;
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
    fn sequence_start<R: Reader + ?Sized>(
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
    fn sequence_writes(self, now: i64) -> Vec<WriteOp> {
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
fn used<R: Reader + ?Sized>(reader: &R, path: &KeyPath) -> Result<bool, Error> {
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
fn first_unused_group<R: Reader + ?Sized>(reader: &R, namespace: &str) -> Result<u64, Error> {
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
fn largest_int_child<R: Reader + ?Sized>(
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
