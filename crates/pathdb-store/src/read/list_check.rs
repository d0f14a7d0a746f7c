//! What a listing covers, kept for a transaction's check that it did not change
//! (docs/transactions.md): the listing's range and where its change feed stood.

use crate::encoding::changelog::{Change, ChangeToken};
use crate::filter::{Filter, Readable};
use pathdb_keys::KeyPath;
use std::collections::BTreeMap;

/// A listing that a transaction depends on: its range, and the position of the change feed its
/// first page returned ([`ListPage::changes_token`](crate::read::list::ListPage::changes_token)). The
/// operation [`TxOp::CheckList`](crate::TxOp::CheckList); build one from the listing's request with
/// [`ListRequest::check`](crate::read::list::ListRequest::check).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ListCheck {
    /// What the listing covers.
    pub range: ListRange,
    /// The token the listing's first page returned.
    pub changes_token: ChangeToken,
    /// The items the listing's pages showed, each path's version, if known. On a backend whose
    /// reads are not snapshots (DynamoDB), a listing's token starts a margin before the listing
    /// (docs/changes.md), and a change in that margin that the listing already shows is not a
    /// change after it: with `seen`, the check ignores it; without, it counts it. Unused where
    /// tokens have no margin (the embedded store).
    pub seen: Option<BTreeMap<KeyPath, u64>>,
    /// The listing's filter: only a change that makes an item enter, change in or leave its
    /// result counts, so a write to an item it matched neither before nor after does not fail
    /// the check.
    pub filter: Option<Filter>,
    /// Who may read what: with a filter, a change to an item its caller may not read fails the
    /// check with [`Error::Unreadable`](crate::Error::Unreadable) rather than be decided on.
    pub readable: Option<Readable>,
}

impl ListCheck {
    /// Whether the listing already shows `change`, the last change of its path in its token's
    /// margin: a put at a version it shows or older, a delete of a path it does not show or
    /// shows newer.
    /// A change below a child of a children listing is never known to be shown.
    pub(crate) fn shows(&self, change: &Change) -> bool {
        let Some(seen) = &self.seen else {
            return false;
        };
        let at = change.key();
        if self.range.children_only && at.len() > self.range.prefix.len() + 1 {
            return false;
        }
        match change {
            Change::Put(item) => seen.get(at).is_some_and(|&v| v >= item.version),
            Change::Delete { version, .. } => seen.get(at).is_none_or(|&v| v > *version),
        }
    }
}

/// The paths a listing covers: a prefix's subtree or its children, within bounds
/// ([`ListRequest::range`](crate::read::list::ListRequest::range)).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ListRange {
    /// The listing's prefix.
    pub prefix: KeyPath,
    /// A children listing: its entries are the prefix's children, so a change anywhere below
    /// a child in range counts (it may make a node appear or go).
    pub children_only: bool,
    /// Only paths after this one.
    pub gt: Option<KeyPath>,
    /// Only paths at or after this one.
    pub gte: Option<KeyPath>,
    /// Only paths before this one.
    pub lt: Option<KeyPath>,
    /// Only paths at or before this one.
    pub lte: Option<KeyPath>,
}

impl ListRange {
    /// Whether a change at `path` changes what the listing shows, or may: `path` is in the
    /// listing's range (for a children listing, the child it lies under is).
    pub fn covers(&self, path: &KeyPath) -> bool {
        if !self.prefix.covers(path) {
            return false;
        }
        let entry = if self.children_only {
            match self.child_of(path) {
                Some(child) => child,
                None => return false,
            }
        } else {
            path.clone()
        };
        self.gt.as_ref().is_none_or(|b| entry > *b)
            && self.gte.as_ref().is_none_or(|b| entry >= *b)
            && self.lt.as_ref().is_none_or(|b| entry < *b)
            && self.lte.as_ref().is_none_or(|b| entry <= *b)
    }

    /// The prefix's child that `path` is or lies under; `None` for the prefix itself.
    pub fn child_of(&self, path: &KeyPath) -> Option<KeyPath> {
        let depth = self.prefix.len() + 1;
        if path.len() < depth {
            return None;
        }
        // A path's ancestors are paths.
        KeyPath::from_elements(path.elements()[..depth].to_vec()).ok()
    }
}
