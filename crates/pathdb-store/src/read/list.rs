//! Listing a subtree or the direct children of a path: typed bounds, either direction, limits
//! and page tokens. One snapshot per page; a page token is the position after the last item
//! returned, bound to the listing it came from, so a listing resumes in either direction.

use crate::backend::{Backend, Direction, Reader, RecordView, SortRange};
use crate::encoding::changelog::ChangeToken;
use crate::encoding::layout;
use crate::encoding::limits::check_key;
use crate::encoding::record::{
    aliased_item, is_live, is_live_view, is_unresolved, item_from_view, to_item,
};
use crate::encoding::token::{Kind, TokenKey};
use crate::filter::{Fields, Filter, Readable, Subject};
use crate::model::error::Error;
use crate::model::item::Item;
use crate::namespaces::definitions::{Definitions, group_logged, item_in, newest_text};
use crate::namespaces::versions::SchemaVersions;
use crate::read::list_check::{ListCheck, ListRange};
use pathdb_keys::KeyPath;
use std::ops::{Bound, ControlFlow};

/// Items per page when the request does not say.
pub const DEFAULT_LIST_LIMIT: usize = 100;
/// Most items per page.
pub const MAX_LIST_LIMIT: usize = 1000;
/// Items a page reads at most when the request does not say (`max_scan`).
pub const DEFAULT_MAX_SCAN: usize = 1000;
/// The most items a page may read (`max_scan`).
pub const MAX_SCAN: usize = 100_000;
/// Entries a filtered page reads before it filters them (aliases among them are resolved
/// together): a page stops on its limit or its scan budget within one such read.
const FILTER_CHUNK: usize = 128;
/// Entries read per backend call when listing children: enough to step over shallow subtrees
/// without a seek each, few enough not to read deep subtrees.
const CHILDREN_BATCH: usize = 16;

/// What [`Store::list`](crate::store::Store::list) returns.
#[derive(Clone, Debug)]
pub struct ListRequest {
    /// The subtree to list: the item at this path (if any), then everything below it in key order.
    pub prefix: KeyPath,
    /// Only the direct children of `prefix` (found by seeking over each child's subtree): the
    /// item of each child, or a [`ListEntry::Node`] for a child that only has items below it.
    pub children_only: bool,
    /// Only keys after this path.
    pub gt: Option<KeyPath>,
    /// Only keys at or after this path.
    pub gte: Option<KeyPath>,
    /// Only keys before this path.
    pub lt: Option<KeyPath>,
    /// Only keys at or before this path.
    pub lte: Option<KeyPath>,
    /// Descending key order.
    pub reverse: bool,
    /// Items per page, 1..=[`MAX_LIST_LIMIT`].
    pub limit: usize,
    /// Continue after the page that returned this token.
    pub page_token: Option<String>,
    /// Only the items this filter matches (docs/filters.md); a children listing's nodes never
    /// match. The page token binds it: a token is refused with another filter.
    pub filter: Option<Filter>,
    /// Only these members of each value.
    pub fields: Option<Fields>,
    /// Items a page reads at most, 1..=[`MAX_SCAN`]: a page stops after `limit` matches or
    /// `max_scan` items read, whichever comes first, and may be empty with a next page.
    pub max_scan: usize,
    /// Who may read what: a listing that reads an item for which this is false (at its path or
    /// at the alias it is listed under) fails with [`Error::Unreadable`], whether or not the
    /// item would be on the page. `None`: every item may be read.
    pub readable: Option<Readable>,
    /// The definition version of each namespace the values are answered in
    /// (docs/migrations.md); a namespace not named: its newest. Filters always see the newest.
    pub versions: SchemaVersions,
}

impl ListRequest {
    /// Lists the subtree of `prefix`, [`DEFAULT_LIST_LIMIT`] items per page.
    pub fn new(prefix: KeyPath) -> ListRequest {
        ListRequest {
            prefix,
            children_only: false,
            gt: None,
            gte: None,
            lt: None,
            lte: None,
            reverse: false,
            limit: DEFAULT_LIST_LIMIT,
            page_token: None,
            filter: None,
            fields: None,
            max_scan: DEFAULT_MAX_SCAN,
            readable: None,
            versions: SchemaVersions::newest(),
        }
    }

    /// Only the items `filter` matches.
    pub fn filter(mut self, filter: Filter) -> ListRequest {
        self.filter = Some(filter);
        self
    }

    /// Only these members of each value.
    pub fn fields(mut self, fields: Fields) -> ListRequest {
        self.fields = Some(fields);
        self
    }

    /// The paths this listing covers.
    pub fn range(&self) -> ListRange {
        ListRange {
            prefix: self.prefix.clone(),
            children_only: self.children_only,
            gt: self.gt.clone(),
            gte: self.gte.clone(),
            lt: self.lt.clone(),
            lte: self.lte.clone(),
        }
    }

    /// The check that nothing in this listing's range changed after `changes_token`, the token of
    /// its first page, for a transaction that decided on the listing
    /// ([`TxOp::CheckList`](crate::write::ops::TxOp::CheckList)). A listing of several pages is one
    /// check.
    pub fn check(&self, changes_token: ChangeToken) -> ListCheck {
        ListCheck {
            range: self.range(),
            changes_token,
            seen: None,
            filter: self.filter.clone(),
            readable: self.readable.clone(),
        }
    }
}

/// One entry of a listing: an item, or (in a children listing only) a node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListEntry {
    /// The item stored at this path.
    Item(Item),
    /// A child path with no live item of its own but live items below it (an S3 "common
    /// prefix", a folder): the listing implies it.
    Node(KeyPath),
}

impl ListEntry {
    /// Where the entry is: for an item listed under an alias, the alias.
    pub fn path(&self) -> &KeyPath {
        match self {
            ListEntry::Item(item) => item.alias.as_ref().unwrap_or(&item.path),
            ListEntry::Node(path) => path,
        }
    }

    /// The item, unless this is a node.
    pub fn item(&self) -> Option<&Item> {
        match self {
            ListEntry::Item(item) => Some(item),
            ListEntry::Node(_) => None,
        }
    }

    /// The item, unless this is a node.
    pub fn into_item(self) -> Option<Item> {
        match self {
            ListEntry::Item(item) => Some(item),
            ListEntry::Node(_) => None,
        }
    }

    /// Whether this is a node (no item of its own).
    pub fn is_node(&self) -> bool {
        matches!(self, ListEntry::Node(_))
    }
}

/// One page of a listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListPage {
    /// The entries, in the requested order: items, and in a children listing also nodes.
    pub items: Vec<ListEntry>,
    /// Present when more items follow; pass it back to continue.
    pub next_page_token: Option<String>,
    /// On a first page (no page token): the change feed's position at this page's snapshot.
    /// Following [`Store::changes`](crate::store::Store::changes) from it, applied to this listing,
    /// gives what follows.
    pub changes_token: Option<ChangeToken>,
    /// Items this page read: those on it and those the filter left out.
    pub scanned: usize,
}

/// What [`Store::count`](crate::store::Store::count) returns: how many entries of a listing's
/// range match, within one scan budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CountPage {
    /// Entries that match (every entry, without a filter).
    pub count: usize,
    /// Items read.
    pub scanned: usize,
    /// Present when the range goes on past the scan budget: count on from it and add.
    pub next_page_token: Option<String>,
}

fn tighten_start(range: &mut SortRange, bound: Bound<Vec<u8>>) {
    let tighter = match (&range.start, &bound) {
        (_, Bound::Unbounded) => false,
        (Bound::Unbounded, _) => true,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b)) => b > a,
        (Bound::Included(a), Bound::Excluded(b)) => b >= a,
        (Bound::Excluded(a), Bound::Excluded(b)) => b > a,
    };
    if tighter {
        range.start = bound;
    }
}

fn tighten_end(range: &mut SortRange, bound: Bound<Vec<u8>>) {
    let tighter = match (&range.end, &bound) {
        (_, Bound::Unbounded) => false,
        (Bound::Unbounded, _) => true,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b)) => b < a,
        (Bound::Included(a), Bound::Excluded(b)) => b <= a,
        (Bound::Excluded(a), Bound::Excluded(b)) => b < a,
    };
    if tighter {
        range.end = bound;
    }
}

/// Moves the range past `sort` in the scan direction.
fn step_past(range: &mut SortRange, sort: Vec<u8>, direction: Direction) {
    match direction {
        Direction::Forward => range.start = Bound::Excluded(sort),
        Direction::Reverse => range.end = Bound::Excluded(sort),
    }
}

/// What a listing's page holds: owned entries ([`ListEntry`],
/// [`Store::list`](crate::store::Store::list)) or entries that keep their keys encoded
/// (`ListedEntry`, [`Store::list_encoded`](crate::store::Store::list_encoded)). One listing
/// algorithm serves both; only turning a subtree's stored entry into a page entry differs.
pub(crate) trait PageEntry: Sized {
    /// What a page's subtree scan needs to make its entries.
    type Subtree<'a>;

    /// The subtree scan of `prefix`, whose partition key is `partition`.
    fn subtree<'a>(prefix: &'a KeyPath, partition: &'a [u8]) -> Result<Self::Subtree<'a>, Error>;

    /// The entry for the live record under `sort` in a subtree scan, or `None` for a key outside
    /// the prefix's typed subtree or one that is not a key path. `found` is the page so far.
    fn from_subtree(
        scan: &mut Self::Subtree<'_>,
        found: &[Self],
        sort: &[u8],
        record: RecordView<'_>,
    ) -> Result<Option<Self>, Error>;

    /// Completes the entries that the subtree scan found, once it is over.
    fn finish(scan: Self::Subtree<'_>, found: &mut [Self]);

    /// The entries of a children listing, which finds them as owned ones (its seeks need the
    /// typed paths).
    fn from_owned(entries: Vec<ListEntry>) -> Result<Vec<Self>, Error>;

    /// The sort key that a page ending with this entry continues after.
    fn sort_key(&self) -> Vec<u8>;

    /// The path of the item this entry names, if it is an alias not resolved yet
    /// (encoding/record.rs).
    fn unresolved(&self) -> Option<KeyPath>;

    /// Makes an unresolved alias the item it names (read), listed under the alias.
    fn resolve(&mut self, item: Item);

    /// Whether `filter` matches this entry (a node never does), its value seen in its
    /// namespace's newest version (`migrations`: the definitions, when any namespace has
    /// migration steps; docs/migrations.md).
    fn matches(&self, filter: &Filter, migrations: Option<&Definitions>) -> bool;

    /// Whether `readable` allows this entry's paths: its own and the alias it is listed under.
    fn readable(&self, readable: &Readable) -> bool;

    /// Keeps only `fields` of the entry's value.
    fn project(&mut self, fields: &Fields);

    /// The entry's value in the version `versions` names for its namespace (namespaces/).
    fn in_versions(
        &mut self,
        definitions: &Definitions,
        versions: &SchemaVersions,
    ) -> Result<(), Error>;

    /// The entry as a page shows it: in the versions `request` names (when `migrations`, the
    /// definitions, are given), then only its `fields`.
    fn present(
        &mut self,
        request: &ListRequest,
        migrations: Option<&Definitions>,
    ) -> Result<(), Error> {
        if let Some(definitions) = migrations {
            self.in_versions(definitions, &request.versions)?;
        }
        if let Some(fields) = &request.fields {
            self.project(fields);
        }
        Ok(())
    }
}

impl PageEntry for ListEntry {
    type Subtree<'a> = &'a KeyPath;

    fn subtree<'a>(prefix: &'a KeyPath, _partition: &'a [u8]) -> Result<&'a KeyPath, Error> {
        Ok(prefix)
    }

    fn from_subtree(
        prefix: &mut &KeyPath,
        found: &[ListEntry],
        sort: &[u8],
        record: RecordView<'_>,
    ) -> Result<Option<ListEntry>, Error> {
        let like = found.last().map_or(*prefix, ListEntry::path);
        let Some(path) = path_in_group(prefix, sort, like) else {
            return Ok(None);
        };
        // Exact results even where bytes ids alias other types (docs/key-format.md).
        if !prefix.covers(&path) {
            return Ok(None);
        }
        item_from_view(path, record).map(|item| Some(ListEntry::Item(item)))
    }

    fn finish(_prefix: &KeyPath, _found: &mut [ListEntry]) {}

    fn from_owned(entries: Vec<ListEntry>) -> Result<Vec<ListEntry>, Error> {
        Ok(entries)
    }

    fn sort_key(&self) -> Vec<u8> {
        // Stored keys are canonical (decoding checks it), so the path encodes back to the sort
        // key it was read from; a node is at its path's own key.
        self.path().sort_key()
    }

    fn unresolved(&self) -> Option<KeyPath> {
        match self {
            ListEntry::Item(item) if is_unresolved(item) => Some(item.path.clone()),
            _ => None,
        }
    }

    fn resolve(&mut self, item: Item) {
        if let ListEntry::Item(listed) = self {
            let alias = listed.alias.take();
            *listed = Item { alias, ..item };
        }
    }

    fn matches(&self, filter: &Filter, migrations: Option<&Definitions>) -> bool {
        match self {
            ListEntry::Item(item) => item.matches_newest(filter, migrations),
            ListEntry::Node(_) => false,
        }
    }

    fn readable(&self, readable: &Readable) -> bool {
        match self {
            ListEntry::Item(item) => {
                (readable.0)(&item.path) && item.alias.as_ref().is_none_or(|a| (readable.0)(a))
            }
            ListEntry::Node(path) => (readable.0)(path),
        }
    }

    fn project(&mut self, fields: &Fields) {
        if let ListEntry::Item(item) = self {
            item.value = fields.project(&item.value);
        }
    }

    fn in_versions(
        &mut self,
        definitions: &Definitions,
        versions: &SchemaVersions,
    ) -> Result<(), Error> {
        match self {
            ListEntry::Item(item) => item_in(definitions, item, versions),
            ListEntry::Node(_) => Ok(()),
        }
    }
}

impl Item {
    /// Whether `filter` matches this item, seen where it is listed (its alias, if any).
    pub fn matches(&self, filter: &Filter) -> bool {
        let path = || self.alias.as_ref().unwrap_or(&self.path).clone();
        filter.matches(&Subject {
            path: &path,
            value: self.value.as_str(),
            version: self.version,
            created_at: self.created_at.micros(),
            modified_at: self.modified_at.micros(),
        })
    }

    /// [`Item::matches`] on the item's value in its namespace's newest version (`migrations`:
    /// the definitions, when any namespace has migration steps); a value that cannot be
    /// brought forward matches nothing.
    pub(crate) fn matches_newest(&self, filter: &Filter, migrations: Option<&Definitions>) -> bool {
        let Some(definitions) = migrations else {
            return self.matches(filter);
        };
        match newest_text(
            definitions,
            &self.path,
            self.value.as_str(),
            self.schema_version,
        ) {
            Ok(None) => self.matches(filter),
            Ok(Some(newest)) => Item {
                value: newest,
                ..self.clone()
            }
            .matches(filter),
            Err(_) => false,
        }
    }
}

/// Replaces the aliases among `found` (read through `reader` at `now`) by the items they name,
/// read together; an alias whose item is gone (only where reads are not snapshots) leaves the
/// page.
fn resolve_entries<R: Reader, E: PageEntry>(
    reader: &R,
    now: i64,
    found: &mut Vec<E>,
) -> Result<(), Error> {
    let targets: Vec<(usize, KeyPath)> = found
        .iter()
        .enumerate()
        .filter_map(|(i, e)| e.unresolved().map(|t| (i, t)))
        .collect();
    if targets.is_empty() {
        return Ok(());
    }
    // Read together, each key once (a batch read refuses a key twice). Not at one moment on
    // a backend without snapshots: the page itself was not either.
    let mut keys: Vec<_> = targets.iter().map(|(_, t)| layout::item_key(t)).collect();
    keys.sort();
    keys.dedup();
    let records: std::collections::HashMap<_, _> = match keys.len() {
        1 => vec![reader.get(&keys[0])?],
        _ => reader.get_batch(&keys)?,
    }
    .into_iter()
    .zip(&keys)
    .map(|(record, key)| (key.clone(), record))
    .collect();
    let mut gone = Vec::new();
    for (i, target) in targets {
        let record = records.get(&layout::item_key(&target)).cloned().flatten();
        match aliased_item(target, record, now)? {
            Some(item) => found[i].resolve(item),
            None => gone.push(i),
        }
    }
    for i in gone.into_iter().rev() {
        found.remove(i);
    }
    Ok(())
}

/// A page of entries of type `E`, before it becomes a [`ListPage`] or a `ListedPage`.
pub(crate) struct Page<E> {
    pub(crate) items: Vec<E>,
    pub(crate) next_page_token: Option<String>,
    pub(crate) changes_token: Option<ChangeToken>,
    pub(crate) scanned: usize,
    /// Entries that matched: the page's, or a count's.
    pub(crate) count: usize,
}

/// What a page is for: its entries, or only how many match.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Want {
    Entries,
    Count,
}

/// One page of a listing ([`Store::list`](crate::store::Store::list)) of `backend` at `now`, its
/// page tokens sealed with `tokens`.
pub(crate) fn list<B: Backend>(
    backend: &B,
    tokens: &TokenKey,
    now: i64,
    request: &ListRequest,
    definitions: &Definitions,
) -> Result<ListPage, Error> {
    let page =
        list_with::<B, ListEntry>(backend, tokens, now, request, Want::Entries, definitions)?;
    Ok(ListPage {
        items: page.items,
        next_page_token: page.next_page_token,
        changes_token: page.changes_token,
        scanned: page.scanned,
    })
}

/// One page of a listing of `backend` at `now` with entries of type `E`, its page tokens sealed
/// with `tokens`.
pub(crate) fn list_with<B: Backend, E: PageEntry>(
    backend: &B,
    tokens: &TokenKey,
    now: i64,
    request: &ListRequest,
    want: Want,
    definitions: &Definitions,
) -> Result<Page<E>, Error> {
    let prefix = &request.prefix;
    let migrations = migrations(definitions, &request.versions);
    check_key(prefix)?;
    if !(1..=MAX_LIST_LIMIT).contains(&request.limit) {
        return Err(Error::InvalidRequest(format!(
            "limit must be 1..={MAX_LIST_LIMIT}, got {}",
            request.limit
        )));
    }
    if !(1..=MAX_SCAN).contains(&request.max_scan) {
        return Err(Error::InvalidRequest(format!(
            "max_scan must be 1..={MAX_SCAN}, got {}",
            request.max_scan
        )));
    }
    let mut range = if request.children_only {
        let base = prefix.sort_key_descendants_range();
        SortRange {
            start: Bound::Included(base.start),
            end: base
                .end
                .map_or_else(layout::items_upper_bound, Bound::Excluded),
        }
    } else {
        layout::subtree_items(prefix)
    };
    // What the listing is: a page token is sealed for it and refused by any other.
    let mut listing: Vec<Vec<u8>> = vec![prefix.encode(), vec![u8::from(request.children_only)]];
    let bounds = [
        (&request.gt, 0u8),
        (&request.gte, 1),
        (&request.lt, 2),
        (&request.lte, 3),
    ];
    for (bound, kind) in bounds {
        let Some(bound) = bound else { continue };
        if bound.group() != prefix.group() {
            return Err(Error::InvalidRequest(format!(
                "bound {bound} is not in the group of {prefix}"
            )));
        }
        check_key(bound)?;
        let sort = bound.sort_key();
        listing.push([&[kind][..], &bound.encode()].concat());
        match kind {
            0 => tighten_start(&mut range, Bound::Excluded(sort)),
            1 => tighten_start(&mut range, Bound::Included(sort)),
            2 => tighten_end(&mut range, Bound::Excluded(sort)),
            _ => tighten_end(&mut range, Bound::Included(sort)),
        }
    }
    if let Some(filter) = &request.filter {
        // A page of one filter is no position in another's pages.
        listing.push([&[4u8][..], filter.source().as_bytes()].concat());
    }
    let listing: Vec<&[u8]> = listing.iter().map(Vec::as_slice).collect();
    let direction = if request.reverse {
        Direction::Reverse
    } else {
        Direction::Forward
    };
    let partition = prefix.partition_key();

    if let Some(token) = &request.page_token {
        let cursor =
            tokens
                .open(Kind::ListPage, &listing, token)
                .ok_or(Error::InvalidPageToken(
                    "not a page token of this listing (altered, or from another listing, filter or \
                 database)",
                ))?;
        if !range.contains(&cursor) {
            return Err(Error::InvalidPageToken(
                "the token points outside this listing",
            ));
        }
        // Continue right after the cursor. For a children listing the next keys may be the
        // cursor child's descendants, which `collect_children` seeks over, or another child
        // whose key shares the cursor's body (see `collect_children`).
        let past = Bound::Excluded(cursor);
        match direction {
            Direction::Forward => tighten_start(&mut range, past),
            Direction::Reverse => tighten_end(&mut range, past),
        }
    }

    let reader = backend.reader()?;
    // Read first, and on a backend without snapshots from a margin back (changes.rs):
    // following from this token may repeat a change the listing already shows, never miss
    // one.
    let changes_token = match (&request.page_token, want) {
        // A group without a change log has nothing to follow the listing by.
        (None, Want::Entries) if !group_logged(definitions, prefix) => None,
        (None, Want::Entries) => Some(crate::feed::reader::listing_token(
            backend.shared(),
            tokens,
            &reader,
            &partition,
            now,
        )?),
        _ => None,
    };
    let scan = Scan {
        reader: &reader,
        prefix,
        partition: &partition,
        children_only: request.children_only,
        direction,
        now,
        migrations,
    };
    if request.filter.is_none() && request.readable.is_none() && want == Want::Entries {
        // Every entry read is on the page: one more than asked tells whether another follows.
        let limit = request.limit.min(request.max_scan);
        let mut found: Vec<E> = scan.collect(range, limit + 1)?;
        let next_page_token = if found.len() > limit {
            found.truncate(limit);
            found
                .last()
                .map(|entry| tokens.seal(Kind::ListPage, &listing, &entry.sort_key()))
        } else {
            None
        };
        resolve_entries(&reader, now, &mut found)?;
        for entry in &mut found {
            entry.present(request, migrations)?;
        }
        return Ok(Page {
            scanned: found.len(),
            count: found.len(),
            items: found,
            next_page_token,
            changes_token,
        });
    }
    let page = Filter::on_stack(|| scan.filtered::<E>(range, request, want))?;
    Ok(Page {
        items: page.items,
        next_page_token: page
            .next
            .map(|key| tokens.seal(Kind::ListPage, &listing, &key)),
        changes_token,
        scanned: page.scanned,
        count: page.count,
    })
}

/// What a page reads: a subtree or a children listing of `prefix`, in `direction`, at `now`.
struct Scan<'a, R> {
    reader: &'a R,
    prefix: &'a KeyPath,
    partition: &'a [u8],
    children_only: bool,
    direction: Direction,
    now: i64,
    /// The definitions, when values need translating (see [`migrations`]).
    migrations: Option<&'a Definitions>,
}

impl<R: Reader> Scan<'_, R> {
    /// Up to `want` entries in `range` (aliases not resolved yet).
    fn collect<E: PageEntry>(&self, range: SortRange, want: usize) -> Result<Vec<E>, Error> {
        let (prefix, partition) = (self.prefix, self.partition);
        if self.children_only {
            let mut owned = Vec::with_capacity(want.min(1024));
            let children = Children::new(prefix, partition, &range, self.now);
            let scan = children.widen(range.clone());
            children.collect(self.reader, scan, self.direction, want, &mut owned)?;
            E::from_owned(owned)
        } else {
            let mut found = Vec::with_capacity(want.min(1024));
            let mut scan = E::subtree(prefix, partition)?;
            collect_subtree::<_, E>(
                self.reader,
                &mut scan,
                partition,
                range,
                self.direction,
                self.now,
                want,
                &mut found,
            )?;
            E::finish(scan, &mut found);
            Ok(found)
        }
    }

    /// A filtered page (or a count): reads entries a chunk at a time until `limit` match
    /// (a count has none) or `max_scan` were read.
    fn filtered<E: PageEntry>(
        &self,
        mut range: SortRange,
        request: &ListRequest,
        want: Want,
    ) -> Result<Filtered<E>, Error> {
        let limit = match want {
            Want::Entries => request.limit,
            Want::Count => usize::MAX,
        };
        let mut page = Filtered {
            items: Vec::new(),
            count: 0,
            scanned: 0,
            next: None,
        };
        loop {
            let asked = (request.max_scan - page.scanned).min(FILTER_CHUNK);
            let mut chunk: Vec<E> = self.collect(range.clone(), asked)?;
            let full = chunk.len() == asked;
            let chunk_end = chunk.last().map(E::sort_key);
            resolve_entries(self.reader, self.now, &mut chunk)?;
            let mut chunk = chunk.into_iter();
            let mut stopped = None;
            for mut entry in chunk.by_ref() {
                page.scanned += 1;
                if let Some(readable) = &request.readable
                    && !entry.readable(readable)
                {
                    return Err(Error::Unreadable {
                        path: self.prefix.clone(),
                    });
                }
                let matches = request
                    .filter
                    .as_ref()
                    .is_none_or(|f| entry.matches(f, self.migrations));
                let last =
                    page.count + usize::from(matches) == limit || page.scanned == request.max_scan;
                // The position a next page continues after: this entry, kept or not.
                let position = last.then(|| entry.sort_key());
                if matches {
                    page.count += 1;
                    if want == Want::Entries {
                        entry.present(request, self.migrations)?;
                        page.items.push(entry);
                    }
                }
                if position.is_some() {
                    stopped = position;
                    break;
                }
            }
            match stopped {
                Some(position) => {
                    let more = chunk.len() > 0
                        || (full && {
                            let mut after = range.clone();
                            if let Some(end) = chunk_end {
                                step_past(&mut after, end, self.direction);
                            }
                            !self.collect::<E>(after, 1)?.is_empty()
                        });
                    page.next = more.then_some(position);
                    return Ok(page);
                }
                None => match chunk_end {
                    Some(end) if full => step_past(&mut range, end, self.direction),
                    _ => return Ok(page),
                },
            }
        }
    }
}

/// A filtered page: its entries (none for a count), how many matched and were read, and the
/// sort key a next page continues after, if more follow.
pub(crate) struct Filtered<E> {
    pub(crate) items: Vec<E>,
    pub(crate) count: usize,
    pub(crate) scanned: usize,
    pub(crate) next: Option<Vec<u8>>,
}

/// A children listing: the direct children of `prefix` whose keys lie in `bounds`, each as its
/// item or, when it has no live item but live items below it, as a node.
///
/// Children are found by seeking: below a child, the scan jumps over the child's descendants
/// (`[B 01, B 02)`, B the child's segment body) instead of reading them, after reading only as
/// far as the first live one (one entry, unless tombstones come first) to know the node exists.
///
/// Only descendants are skipped, never a child's own key (`B 00 …`): several children can
/// share one body, because a bytes or UUID id can encode to the same bytes as an integer or
/// string id (they differ only in the metadata after `00`), and an element without id
/// (`/u-1/p`) has the body that its namespace's ids (`/u-1/p-7`) extend. So own keys are
/// read one by one, and a child's subtree range is never used as "this child and below".
/// (Where ids alias, a node sorts after its aliases' own items: docs/tree.md.)
struct Children<'a> {
    prefix: &'a KeyPath,
    partition: &'a [u8],
    /// The keys an entry may have: the typed bounds and the page token.
    bounds: &'a SortRange,
    /// The depth of a child: a bare last element (`/u-1/post`) lists its namespace's ids, at
    /// its own depth.
    depth: usize,
    now: i64,
}

impl<'a> Children<'a> {
    fn new(prefix: &'a KeyPath, partition: &'a [u8], bounds: &'a SortRange, now: i64) -> Self {
        Children {
            prefix,
            partition,
            bounds,
            depth: prefix.len() + usize::from(prefix.last().id().is_some()),
            now,
        }
    }

    /// The child of the prefix that `path` is or lies below, if it lies below the prefix.
    fn child_of(&self, path: &KeyPath) -> Result<Option<KeyPath>, Error> {
        if !self.prefix.covers(path) || path.len() < self.depth {
            return Ok(None);
        }
        if path.len() == self.depth {
            return Ok(Some(path.clone()));
        }
        KeyPath::from_elements(path.elements()[..self.depth].to_vec())
            .map(Some)
            .map_err(|e| {
                crate::model::error::StorageError::msg(format!(
                    "stored key has an invalid prefix: {e}"
                ))
                .into()
            })
    }

    /// `range` widened so that a bound inside a child's subtree still finds that child: a node
    /// at the child's key is discovered through its descendants, which may lie outside the
    /// bounds (`lte=/a/p-1` with items only below `/a/p-1`).
    fn widen(&self, mut range: SortRange) -> SortRange {
        let widened = |sort: &Vec<u8>| -> Option<KeyPath> {
            let path = self.prefix.with_sort_key_like(sort, self.prefix).ok()?;
            self.child_of(&path).ok().flatten()
        };
        if let Bound::Included(s) | Bound::Excluded(s) = &range.start
            && let Some(child) = widened(s)
            && child.sort_key() != *s
        {
            range.start = Bound::Included(child.sort_key_subtree_range().start);
        }
        if let Bound::Included(e) | Bound::Excluded(e) = &range.end
            && let Some(child) = widened(e)
        {
            range.end = child
                .sort_key_subtree_range()
                .end
                .map_or_else(layout::items_upper_bound, Bound::Excluded);
        }
        range
    }

    fn collect<R: Reader>(
        &self,
        reader: &R,
        mut range: SortRange,
        direction: Direction,
        want: usize,
        found: &mut Vec<ListEntry>,
    ) -> Result<(), Error> {
        let (prefix, partition, now) = (self.prefix, self.partition, self.now);
        // The entries found since the last seek: a child whose own live item is among them is
        // never also a node. A body's own keys come right before its descendants, and a node's
        // key after a page token's position has its own key after it too, so this call reads
        // that key. (An index, not a list of paths: no copy per child.)
        let mut since_seek = found.len();
        while found.len() < want {
            let batch = reader.scan(partition, &range, direction, CHILDREN_BATCH)?;
            if batch.is_empty() {
                break;
            }
            for (sort, record) in batch {
                if found.len() >= want {
                    break;
                }
                // An earlier entry of this batch may have moved the range past this one.
                if !range.contains(&sort) {
                    continue;
                }
                let like = found.last().map_or(prefix, ListEntry::path);
                let path = path_in_group(prefix, &sort, like)
                    .filter(|path| prefix.covers(path) && path.len() >= self.depth);
                let Some(path) = path else {
                    step_past(&mut range, sort, direction);
                    continue;
                };
                if path.len() == self.depth {
                    // A child's own item.
                    if is_live(&record, now) && self.bounds.contains(&sort) {
                        found.push(ListEntry::Item(to_item(path, record)?));
                    }
                    step_past(&mut range, sort, direction);
                    continue;
                }
                // Below a child: is a node there, then seek over the child's descendants.
                let Some(child) = self.child_of(&path)? else {
                    step_past(&mut range, sort, direction);
                    continue;
                };
                let child_sort = child.sort_key();
                let descendants = child.sort_key_descendants_range(); // [B 01, B 02)
                let node = self.bounds.contains(&child_sort)
                    && (is_live(&record, now)
                        || self.live_below(reader, &child, &descendants, &sort, direction)?);
                match direction {
                    // Own keys (`B 00 …`) sort before descendants: already read.
                    Direction::Forward => {
                        let own_live = found[since_seek..]
                            .iter()
                            .rev()
                            .any(|entry| !entry.is_node() && *entry.path() == child);
                        if node && !own_live {
                            found.push(ListEntry::Node(child));
                        }
                        since_seek = found.len();
                        range.start = descendants.end.map_or(Bound::Unbounded, Bound::Included);
                    }
                    // Own keys sort after descendants in reverse: read them now, then go below.
                    Direction::Reverse => {
                        let own_start = child.sort_key_subtree_range().start; // B 00
                        let mut own = range.clone();
                        tighten_start(&mut own, Bound::Included(own_start.clone()));
                        tighten_end(&mut own, Bound::Excluded(descendants.start));
                        let node = node.then_some((child, child_sort));
                        self.own_in_reverse(reader, &own, node, want, found)?;
                        range.end = Bound::Excluded(own_start);
                    }
                }
            }
        }
        Ok(())
    }

    /// In reverse, the own items in `own` (one body's `B 00 …` keys), with `node` (a child
    /// that has live items below it, and its key) at its place unless its item is live.
    fn own_in_reverse<R: Reader>(
        &self,
        reader: &R,
        own: &SortRange,
        mut node: Option<(KeyPath, Vec<u8>)>,
        want: usize,
        found: &mut Vec<ListEntry>,
    ) -> Result<(), Error> {
        for (sort, record) in reader.scan(self.partition, own, Direction::Reverse, usize::MAX)? {
            if found.len() >= want {
                return Ok(());
            }
            let Some(path) = path_in_group(self.prefix, &sort, self.prefix) else {
                continue;
            };
            if !(self.prefix.covers(&path) && path.len() == self.depth) {
                continue;
            }
            let live = is_live(&record, self.now) && self.bounds.contains(&sort);
            // The node's place: its own key (a tombstone there), or where that key would be.
            if let Some((child, node_sort)) = node.take_if(|(_, at)| sort <= *at) {
                if sort == node_sort {
                    found.push(if live {
                        ListEntry::Item(to_item(path, record)?)
                    } else {
                        ListEntry::Node(child)
                    });
                    continue;
                }
                found.push(ListEntry::Node(child));
                if found.len() >= want {
                    return Ok(());
                }
            }
            if live {
                found.push(ListEntry::Item(to_item(path, record)?));
            }
        }
        if let Some((child, _)) = node
            && found.len() < want
        {
            found.push(ListEntry::Node(child));
        }
        Ok(())
    }

    /// Whether `child` has a live item below it after `from` (a dead entry below it), in
    /// `direction`: reads on over tombstones and expired items until the first live one.
    fn live_below<R: Reader>(
        &self,
        reader: &R,
        child: &KeyPath,
        descendants: &pathdb_keys::KeyRange,
        from: &[u8],
        direction: Direction,
    ) -> Result<bool, Error> {
        let mut rest = SortRange {
            start: Bound::Included(descendants.start.clone()),
            end: descendants
                .end
                .clone()
                .map_or_else(layout::items_upper_bound, Bound::Excluded),
        };
        step_past(&mut rest, from.to_vec(), direction);
        let mut live = false;
        loop {
            let mut last = None;
            let mut seen = 0;
            reader.scan_each(self.partition, &rest, direction, 64, &mut |sort, record| {
                seen += 1;
                if seen == 64 {
                    // Only the batch's last key is needed, to continue after it.
                    last = Some(sort.to_vec());
                }
                if is_live_view(record, self.now)
                    && let Ok(path) = self.prefix.with_sort_key_like(sort, child)
                    && child.is_prefix_of(&path)
                {
                    live = true;
                    return ControlFlow::Break(());
                }
                ControlFlow::Continue(())
            })?;
            match last {
                Some(last) if !live => step_past(&mut rest, last, direction),
                _ => return Ok(live),
            }
        }
    }
}

/// The live items of the subtree that `scan` lists in `range`, read with the backend's borrowing
/// scan: each entry is copied once, into the entry it becomes (a page is dominated by per-entry
/// work).
#[allow(clippy::too_many_arguments)]
fn collect_subtree<R: Reader, E: PageEntry>(
    reader: &R,
    scan: &mut E::Subtree<'_>,
    partition: &[u8],
    mut range: SortRange,
    direction: Direction,
    now: i64,
    want: usize,
    found: &mut Vec<E>,
) -> Result<(), Error> {
    while found.len() < want {
        let mut last: Option<Vec<u8>> = None;
        let mut failed: Option<Error> = None;
        let batch = (want - found.len()).min(256);
        let mut seen = 0;
        reader.scan_each(partition, &range, direction, batch, &mut |sort, record| {
            seen += 1;
            if seen == batch {
                // Only the batch's last key is needed, to continue after it.
                last = Some(sort.to_vec());
            }
            if !is_live_view(record, now) {
                return ControlFlow::Continue(());
            }
            match E::from_subtree(scan, found, sort, record) {
                Ok(Some(entry)) => found.push(entry),
                Ok(None) => {}
                Err(e) => {
                    failed = Some(e);
                    return ControlFlow::Break(());
                }
            }
            if found.len() >= want {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })?;
        if let Some(e) = failed {
            return Err(e);
        }
        // Fewer entries than asked for: the range is exhausted (or the page is full).
        match last {
            Some(last) if found.len() < want => step_past(&mut range, last, direction),
            _ => break,
        }
    }
    Ok(())
}

/// The path stored under `sort` in `prefix`'s partition (the group is not decoded again), or
/// `None`, with a warning, for a key that is not a key path: a row another tool wrote into a
/// DynamoDB table must not fail every listing of its group.
///
/// `like` is a path decoded just before (the previous entry, or the prefix): the new path shares
/// its namespaces where they are the same, instead of allocating them again for every entry.
pub(crate) fn path_in_group(prefix: &KeyPath, sort: &[u8], like: &KeyPath) -> Option<KeyPath> {
    match prefix.with_sort_key_like(sort, like) {
        Ok(path) => Some(path),
        Err(e) => {
            tracing::warn!(prefix = %prefix, sort = %hex::encode(sort), error = %e,
                "listing: skipped an entry that is not a PathDB record");
            None
        }
    }
}

pub(crate) fn decode_path(partition: &[u8], sort: &[u8]) -> Result<KeyPath, Error> {
    KeyPath::from_partition_and_sort(partition, sort).map_err(|e| {
        crate::model::error::StorageError::new("stored key is not a valid key path", e).into()
    })
}

/// How many entries of `request`'s range match its filter within its scan budget
/// ([`Store::count`](crate::store::Store::count)); its limit does not apply.
pub(crate) fn count<B: Backend>(
    backend: &B,
    tokens: &TokenKey,
    now: i64,
    request: &ListRequest,
    definitions: &Definitions,
) -> Result<CountPage, Error> {
    let page = list_with::<B, ListEntry>(backend, tokens, now, request, Want::Count, definitions)?;
    Ok(CountPage {
        count: page.count,
        scanned: page.scanned,
        next_page_token: page.next_page_token,
    })
}

/// The definitions, when a listing's values need a look (docs/migrations.md): some namespace
/// has migration steps (filters see the newest version), or the request names versions.
pub(crate) fn migrations<'d>(
    definitions: &'d Definitions,
    versions: &SchemaVersions,
) -> Option<&'d Definitions> {
    (!versions.is_empty() || definitions.values().any(|c| c.chain.has_steps()))
        .then_some(definitions)
}
