//! The write operations a caller asks for ([`TxOp`], [`Transaction`]) and their outcomes
//! ([`TxResult`]). The write pipeline (write/) turns them into a batch.

use crate::model::error::Condition;
use crate::model::error::Error;
use crate::model::item::Item;
use crate::model::item::Json;
use crate::model::options::PutOptions;
use crate::model::patch::Patch;
use crate::read::list_check::ListCheck;
use pathdb_keys::KeyPath;
use std::collections::HashMap;

/// One operation of a [`Transaction`].
#[derive(Clone, Debug)]
pub enum TxOp {
    /// Replace or create an item.
    Put {
        /// Where.
        path: KeyPath,
        /// The value.
        value: Json,
        /// Condition, history, expiry.
        options: PutOptions,
    },
    /// Delete an item.
    Delete {
        /// Where.
        path: KeyPath,
        /// Delete only if this holds.
        condition: Option<Condition>,
    },
    /// Change part of an item's value: the patch applies to the value the write reads, and
    /// the result is written as a put (with `options`' condition, history and expiry).
    Patch {
        /// Where.
        path: KeyPath,
        /// What to change.
        patch: Patch,
        /// Condition, history, expiry.
        options: PutOptions,
        /// Apply the patch to `{}` when no item is there, instead of failing with
        /// [`Error::ItemNotFound`].
        create: bool,
    },
    /// Write nothing; fail the transaction unless the condition holds.
    Check {
        /// Where.
        path: KeyPath,
        /// What must hold.
        condition: Condition,
    },
    /// Write nothing; fail the transaction if anything in a listing's range changed after the
    /// listing whose first page returned the check's token (docs/transactions.md).
    CheckList(ListCheck),
    /// Create an item at `{parent}/{namespace}-{id}` with a generated id, at a path never used
    /// before (its result holds the path).
    Create {
        /// Under what.
        parent: Parent,
        /// The new element's namespace.
        namespace: String,
        /// How the id is generated.
        id: IdKind,
        /// The value.
        value: Json,
        /// History and expiry (a condition is refused: the path is new by construction).
        options: PutOptions,
    },
}

/// Where [`TxOp::Create`] creates its item.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Parent {
    /// Nowhere: the item is a new group (`/user-{id}`).
    Root,
    /// Under this path.
    Path(KeyPath),
    /// Under the item created by the transaction's operation at this index (an earlier
    /// [`TxOp::Create`]), so one transaction can create an item and its children.
    Created(usize),
}

impl TxOp {
    /// The path the operation names, `None` for a create (its path is generated).
    pub fn path(&self) -> Option<&KeyPath> {
        match self {
            TxOp::Put { path, .. }
            | TxOp::Delete { path, .. }
            | TxOp::Check { path, .. }
            | TxOp::Patch { path, .. } => Some(path),
            TxOp::Create { .. } | TxOp::CheckList(_) => None,
        }
    }
}

/// Puts, deletes and checks on any paths, applied all or nothing.
#[derive(Clone, Default, Debug)]
pub struct Transaction {
    /// The operations, at most [`MAX_TRANSACTION_OPS`](crate::MAX_TRANSACTION_OPS), each on a different path.
    pub ops: Vec<TxOp>,
}

impl Transaction {
    /// An empty transaction.
    pub fn new() -> Transaction {
        Transaction::default()
    }

    /// Adds a put.
    pub fn put(mut self, path: KeyPath, value: Json, options: PutOptions) -> Self {
        self.ops.push(TxOp::Put {
            path,
            value,
            options,
        });
        self
    }

    /// Adds a delete.
    pub fn delete(mut self, path: KeyPath, condition: Option<Condition>) -> Self {
        self.ops.push(TxOp::Delete { path, condition });
        self
    }

    /// Adds a patch of an existing item.
    pub fn patch(mut self, path: KeyPath, patch: Patch, options: PutOptions) -> Self {
        self.ops.push(TxOp::Patch {
            path,
            patch,
            options,
            create: false,
        });
        self
    }

    /// Adds a condition check.
    pub fn check(mut self, path: KeyPath, condition: Condition) -> Self {
        self.ops.push(TxOp::Check { path, condition });
        self
    }

    /// Adds a check that nothing in a listing's range changed after its token.
    pub fn check_list(mut self, check: ListCheck) -> Self {
        self.ops.push(TxOp::CheckList(check));
        self
    }

    /// Adds a create with a generated id; refer to it with `Parent::Created(index)`, where
    /// `index` is [`Transaction::ops`]' length before this call.
    pub fn create(mut self, parent: Parent, namespace: &str, id: IdKind, value: Json) -> Self {
        self.ops.push(TxOp::Create {
            parent,
            namespace: namespace.to_owned(),
            id,
            value,
            options: PutOptions::default(),
        });
        self
    }
}

/// The outcome of one transaction operation.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum TxResult {
    /// The item as written.
    Put(Item),
    /// The item that was deleted, if one existed.
    Deleted(Option<Item>),
    /// The check (of an item or of a listing) held.
    Checked,
}

/// How [`TxOp::Create`] chooses the new item's id.
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

/// Reads where a create goes from text: `/{parent}/{namespace}` (a path and a namespace without
/// id), `/{namespace}` (a new group) or, in a transaction, `$N/{namespace}` (under the item that
/// operation `N` creates). A trailing `-` is allowed (`/user-7/post-`). The HTTP API and the CLI
/// share this reading.
///
/// # Errors
/// [`Error::InvalidRequest`] naming what is wrong.
pub fn parse_create_target(text: &str) -> Result<(Parent, String), Error> {
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

/// A transaction's operations with each patch of a path that an earlier put of the same
/// transaction writes folded into that put, so the patch sees the value put before it; and,
/// for each operation given, the index of the folded operation whose result is its result.
///
/// Folding keeps a transaction one batch with one write per key (DynamoDB forbids a key twice)
/// and gives the item one new version, as it is one atomic change.
///
/// # Errors
/// [`Error::InvalidRequest`] for a path named twice otherwise, or a folded patch with a
/// condition other than `must_exist` (it would be about a version the transaction itself
/// writes); the patch's own failures.
pub(crate) fn fold_into_puts(ops: &[TxOp]) -> Result<(Vec<TxOp>, Vec<usize>), Error> {
    let mut folded: Vec<TxOp> = Vec::with_capacity(ops.len());
    let mut result_of = Vec::with_capacity(ops.len());
    let mut written: HashMap<&KeyPath, usize> = HashMap::new();
    for op in ops {
        let Some(path) = op.path() else {
            result_of.push(folded.len());
            folded.push(op.clone());
            continue;
        };
        let Some(&earlier) = written.get(path) else {
            written.insert(path, folded.len());
            result_of.push(folded.len());
            folded.push(op.clone());
            continue;
        };
        let twice = || Error::InvalidRequest(format!("{path} appears twice in one transaction"));
        let (
            TxOp::Patch {
                patch, options: o, ..
            },
            Some(TxOp::Put { value, options, .. }),
        ) = (op, folded.get_mut(earlier))
        else {
            return Err(twice());
        };
        if !matches!(o.condition, None | Some(Condition::MustExist)) {
            return Err(Error::InvalidRequest(format!(
                "{path}: a patch of an item put earlier in the same transaction takes no \
                 if_version or must_not_exist"
            )));
        }
        *value = patch.apply(value).map_err(|e| e.at(path))?;
        // As if applied in turn: the later write sets the expiry, and either may keep history.
        options.history |= o.history;
        options.expires = o.expires;
        result_of.push(earlier);
    }
    Ok((folded, result_of))
}
