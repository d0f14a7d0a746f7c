//! Listing pages whose entries keep their key paths encoded
//! ([`Store::list_encoded`](crate::store::Store::list_encoded)): a path is decoded only when its
//! caller asks for it. Decoding every listed key into an owned `KeyPath` (an element `Vec`, owned
//! ids, shared namespaces' reference counts) and dropping it again was over 40% of a page's time
//! (docs/benchmarks.md, "Store"), while the server and the CLI only turn each path into text and an
//! application may read only the values.

use crate::backend::{Backend, RecordView};
use crate::encoding::alias::parse_alias;
use crate::encoding::changelog::ChangeToken;
use crate::encoding::record::item_from_view;
use crate::encoding::stamp::split_stored;
use crate::encoding::token::TokenKey;
use crate::filter::{Fields, Filter, Readable, Subject};
use crate::model::error::Error;
use crate::model::item::Item;
use crate::model::item::Json;
use crate::model::item::Timestamp;
use crate::namespaces::definitions::{Definitions, newest_text, text_in};
use crate::namespaces::versions::SchemaVersions;
use crate::read::list::ListEntry;
use crate::read::list::ListPage;
use crate::read::list::ListRequest;
use crate::read::list::{Page, PageEntry, Want, list_with, path_in_group};
use pathdb_keys::sort_key_body_len;
use pathdb_keys::{DecodeError, IdRef, KeyPath, KeyPathRef, SEPARATOR, TERMINATOR, format_id};
use serde::{Serialize, Serializer};
use smallvec::SmallVec;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// A valid key path in its binary form ([`KeyPath::encode`]), decoded when asked for.
///
/// Only valid encodings are held (every constructor checks, or starts from a `KeyPath`), so the
/// decoding methods cannot fail. Equality and order are those of the bytes, which are those of
/// the paths (`KeyPath`'s order is its encoding's byte order).
///
/// The paths of a [`ListedPage`] share one buffer of the page's keys (one allocation per page
/// instead of one per entry): an `EncodedPath` kept from a page, or a clone of it, keeps that
/// buffer (the page's key bytes, a few KiB) alive.
#[derive(Clone)]
pub struct EncodedPath(Repr);

#[derive(Clone)]
enum Repr {
    /// Bytes of its own.
    Own(Box<[u8]>),
    /// `len` bytes at `start` of a listed page's keys.
    Page {
        keys: Arc<Vec<u8>>,
        start: u32,
        len: u32,
    },
    /// `len` bytes at `start` of the keys of a page being listed, which become its `Page` when
    /// the scan is over (`finish`): only ever inside `Store::list_encoded`.
    Pending { start: u32, len: u32 },
}

impl EncodedPath {
    /// Encodes `path`.
    pub fn new(path: &KeyPath) -> EncodedPath {
        // Encoded on the stack first, so that the box is allocated once and at its exact size.
        let mut bytes = SmallVec::<[u8; 128]>::new();
        path.encode_into(&mut bytes);
        EncodedPath(Repr::Own(Box::from(&bytes[..])))
    }

    /// Checks that `bytes` are a canonical encoded key path and keeps them.
    ///
    /// # Errors
    /// What [`KeyPath::decode`] refuses, with the offset and the rule broken.
    pub fn from_bytes(bytes: &[u8]) -> Result<EncodedPath, DecodeError> {
        KeyPathRef::decode(bytes)?;
        Ok(EncodedPath(Repr::Own(Box::from(bytes))))
    }

    /// A path of a page being listed, checked to be a canonical encoded key path, at
    /// `start..end` of its keys: it has no bytes until [`EncodedPath::finish`].
    fn pending(start: usize, end: usize) -> Result<EncodedPath, Error> {
        // Far shorter than 4 GiB: at most `MAX_LIST_LIMIT` + 1 keys within the key size limits.
        let offset = |n: usize| {
            u32::try_from(n)
                .map_err(|_| crate::model::error::StorageError::msg("a listed page over 4 GiB"))
        };
        Ok(EncodedPath(Repr::Pending {
            start: offset(start)?,
            len: offset(end - start)?,
        }))
    }

    /// A pending path's bytes, now that its page's `keys` are complete.
    fn finish(&mut self, keys: &Arc<Vec<u8>>) {
        if let Repr::Pending { start, len } = self.0 {
            self.0 = Repr::Page {
                keys: Arc::clone(keys),
                start,
                len,
            };
            debug_assert!(
                KeyPathRef::decode(self.as_bytes()).is_ok(),
                "not a key path: {:x?}",
                self.as_bytes()
            );
        }
    }

    /// The encoded bytes: what [`KeyPath::encode`] returns for the path.
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Own(bytes) => bytes,
            Repr::Page { keys, start, len } => {
                let start = *start as usize;
                &keys[start..start + *len as usize]
            }
            // Never seen outside the listing that completes it.
            Repr::Pending { .. } => &[],
        }
    }

    /// The path as an owned [`KeyPath`] (decoded now, each time).
    pub fn decode(&self) -> KeyPath {
        let bytes = self.as_bytes();
        KeyPath::decode(bytes).unwrap_or_else(|e| invalid(bytes, &e))
    }

    /// The path decoded without copying: elements that borrow namespaces and ids from the bytes
    /// (decoded now, each time).
    pub fn view(&self) -> KeyPathRef<'_> {
        let bytes = self.as_bytes();
        KeyPathRef::decode(bytes).unwrap_or_else(|e| invalid(bytes, &e))
    }
}

impl PartialEq for EncodedPath {
    fn eq(&self, other: &EncodedPath) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for EncodedPath {}

impl Hash for EncodedPath {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

impl PartialOrd for EncodedPath {
    fn partial_cmp(&self, other: &EncodedPath) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for EncodedPath {
    fn cmp(&self, other: &EncodedPath) -> std::cmp::Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

/// An `EncodedPath` that does not decode: only a bug in this module can make one.
#[cold]
fn invalid(bytes: &[u8], e: &DecodeError) -> ! {
    unreachable!("an EncodedPath holds an invalid key path {bytes:x?}: {e}")
}

impl From<&KeyPath> for EncodedPath {
    fn from(path: &KeyPath) -> EncodedPath {
        EncodedPath::new(path)
    }
}

impl From<KeyPath> for EncodedPath {
    fn from(path: KeyPath) -> EncodedPath {
        EncodedPath::new(&path)
    }
}

impl From<&EncodedPath> for KeyPath {
    fn from(path: &EncodedPath) -> KeyPath {
        path.decode()
    }
}

impl PartialEq<KeyPath> for EncodedPath {
    fn eq(&self, other: &KeyPath) -> bool {
        // Compared as encodings (equal paths encode alike), without decoding or allocating.
        let mut bytes = SmallVec::<[u8; 128]>::new();
        other.encode_into(&mut bytes);
        self.as_bytes() == &bytes[..]
    }
}

/// The canonical text form, the same as the decoded [`KeyPath`]'s, written from the zero-copy
/// decoding: no owned path is built.
impl fmt::Display for EncodedPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_text(&self.view(), f)
    }
}

impl fmt::Debug for EncodedPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("EncodedPath")
            .field(&format_args!("{self}"))
            .finish()
    }
}

/// Its canonical text form, as a [`KeyPath`] serializes.
impl Serialize for EncodedPath {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Writes the text form of a decoded path (`/ns-id/...`), as `KeyPath`'s `Display` does.
fn write_text(path: &KeyPathRef<'_>, out: &mut impl fmt::Write) -> fmt::Result {
    for element in path.elements() {
        out.write_char('/')?;
        out.write_str(element.namespace)?;
        let Some(id) = &element.id else { continue };
        out.write_char('-')?;
        match id {
            // The common ids, written as `format_id` writes them.
            IdRef::Int(v) => write!(out, "{v}")?,
            IdRef::DescInt(v) => write!(out, "!{v}")?,
            IdRef::Uuid(u) => write!(out, "{}", u.hyphenated())?,
            // Strings and bytes have escaping and base64 rules that pathdb-keys owns: written
            // through an owned `Id` (one small allocation) rather than with a copy of the rules.
            other => format_id(&other.to_id(), out)?,
        }
    }
    Ok(())
}

/// An item as [`Store::list_encoded`](crate::store::Store::list_encoded) returns it: an [`Item`]
/// whose path is kept encoded. Serializes as an `Item` does.
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
pub struct ListedItem {
    /// Where it lives.
    pub path: EncodedPath,
    /// 1 on creation, +1 on every write.
    pub version: u64,
    /// When the item was created.
    pub created_at: Timestamp,
    /// When the item was last written.
    pub modified_at: Timestamp,
    /// When the item expires, if it does.
    pub expires_at: Option<Timestamp>,
    /// The JSON value.
    pub value: Json,
    /// The alias path it is listed under (docs/aliases.md); `None`: listed at its own path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alias: Option<EncodedPath>,
    /// See [`Item::schema_version`].
    #[serde(skip_serializing_if = "is_zero")]
    pub schema_version: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ListedItem {
    /// The item with its path decoded.
    pub fn into_item(self) -> Item {
        Item {
            path: self.path.decode(),
            version: self.version,
            created_at: self.created_at,
            modified_at: self.modified_at,
            expires_at: self.expires_at,
            value: self.value,
            alias: self.alias.as_ref().map(EncodedPath::decode),
            schema_version: self.schema_version,
        }
    }
}

impl From<Item> for ListedItem {
    fn from(item: Item) -> ListedItem {
        ListedItem {
            path: EncodedPath::new(&item.path),
            version: item.version,
            created_at: item.created_at,
            modified_at: item.modified_at,
            expires_at: item.expires_at,
            value: item.value,
            alias: item.alias.as_ref().map(EncodedPath::new),
            schema_version: item.schema_version,
        }
    }
}

impl From<ListedItem> for Item {
    fn from(item: ListedItem) -> Item {
        item.into_item()
    }
}

/// One entry of a [`ListedPage`]: an item, or (in a children listing only) a node. The
/// counterpart of [`ListEntry`], which converts to and from it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum ListedEntry {
    /// The item stored at this path.
    Item(ListedItem),
    /// A child path with no live item of its own but live items below it.
    Node(EncodedPath),
}

impl ListedEntry {
    /// Where the entry is: for an item listed under an alias, the alias.
    pub fn path(&self) -> &EncodedPath {
        match self {
            ListedEntry::Item(item) => item.alias.as_ref().unwrap_or(&item.path),
            ListedEntry::Node(path) => path,
        }
    }

    /// The item, unless this is a node.
    pub fn item(&self) -> Option<&ListedItem> {
        match self {
            ListedEntry::Item(item) => Some(item),
            ListedEntry::Node(_) => None,
        }
    }

    /// The item, unless this is a node.
    pub fn into_item(self) -> Option<ListedItem> {
        match self {
            ListedEntry::Item(item) => Some(item),
            ListedEntry::Node(_) => None,
        }
    }

    /// Whether this is a node (no item of its own).
    pub fn is_node(&self) -> bool {
        matches!(self, ListedEntry::Node(_))
    }
}

/// One page of a listing, its paths kept encoded: what
/// [`Store::list_encoded`](crate::store::Store::list_encoded) returns. The same entries, order and
/// tokens as the [`ListPage`] of [`Store::list`](crate::store::Store::list), which
/// converts to and from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedPage {
    /// The entries, in the requested order: items, and in a children listing also nodes.
    pub items: Vec<ListedEntry>,
    /// Present when more items follow; pass it back to continue.
    pub next_page_token: Option<String>,
    /// On a first page (no page token): the change feed's position at this page's snapshot.
    pub changes_token: Option<ChangeToken>,
    /// Items this page read: those on it and those the filter left out.
    pub scanned: usize,
}

impl ListedPage {
    /// The page with every path decoded: what [`Store::list`](crate::store::Store::list) returns.
    pub fn into_page(self) -> ListPage {
        ListPage {
            items: self.items.into_iter().map(ListEntry::from).collect(),
            next_page_token: self.next_page_token,
            changes_token: self.changes_token,
            scanned: self.scanned,
        }
    }
}

impl From<ListedPage> for ListPage {
    fn from(page: ListedPage) -> ListPage {
        page.into_page()
    }
}

impl From<ListPage> for ListedPage {
    fn from(page: ListPage) -> ListedPage {
        ListedPage {
            items: page.items.into_iter().map(ListedEntry::from).collect(),
            next_page_token: page.next_page_token,
            changes_token: page.changes_token,
            scanned: page.scanned,
        }
    }
}

impl From<ListedEntry> for ListEntry {
    fn from(entry: ListedEntry) -> ListEntry {
        match entry {
            ListedEntry::Item(item) => ListEntry::Item(item.into_item()),
            ListedEntry::Node(path) => ListEntry::Node(path.decode()),
        }
    }
}

impl From<ListEntry> for ListedEntry {
    fn from(entry: ListEntry) -> ListedEntry {
        match entry {
            ListEntry::Item(item) => ListedEntry::Item(item.into()),
            ListEntry::Node(path) => ListedEntry::Node(EncodedPath::new(&path)),
        }
    }
}

/// One page of a listing ([`Store::list_encoded`](crate::store::Store::list_encoded)) of `backend`
/// at `now`, its page tokens sealed with `tokens`.
pub(crate) fn list_encoded<B: Backend>(
    backend: &B,
    tokens: &TokenKey,
    now: i64,
    request: &ListRequest,
    definitions: &Definitions,
) -> Result<ListedPage, Error> {
    let Page {
        items,
        next_page_token,
        changes_token,
        scanned,
        ..
    } = list_with::<B, ListedEntry>(backend, tokens, now, request, Want::Entries, definitions)?;
    Ok(ListedPage {
        items,
        next_page_token,
        changes_token,
        scanned,
    })
}

/// A subtree scan that keeps keys encoded. A stored entry has the partition key `Bp 00 Mp` (the
/// group: body, terminator, metadata) and the sort key `Bs 00 Ms` (the rest), and its path's
/// encoding is `Bp 01 Bs 00 Mp Ms`: spliced from the two without decoding either into elements,
/// into one buffer for the whole page.
pub(crate) struct EncodedSubtree<'a> {
    prefix: &'a KeyPath,
    partition: &'a [u8],
    /// The length of `Bp`.
    partition_body: usize,
    /// The prefix's `Bs` and `Ms` (both empty for a group).
    prefix_body: Vec<u8>,
    prefix_meta: Vec<u8>,
    /// The found entries' keys, one after another.
    keys: Vec<u8>,
}

impl EncodedSubtree<'_> {
    /// Whether the entry whose sort key has the body `body` and the metadata `meta` is in the
    /// prefix's typed subtree ([`KeyPath::covers`]; exact even where bytes ids alias other types,
    /// docs/key-format.md): the prefix's segments are the entry's first ones, with the same types,
    /// lengths and bytes. Metadata varints are self-delimiting, so equal leading varints are a
    /// byte prefix of the metadata; with equal lengths, equal segments are a byte prefix of the
    /// body.
    fn covers(&self, body: &[u8], meta: &[u8]) -> bool {
        // (A group covers its whole partition: no comparison, no `memcmp` call, per entry.)
        self.prefix_meta.is_empty()
            || (meta.starts_with(&self.prefix_meta) && body.starts_with(&self.prefix_body))
    }

    /// Appends the encoded path of the entry whose sort key has the body `body` and the
    /// metadata `meta` to the page's keys.
    fn push_key(&mut self, body: &[u8], meta: &[u8]) {
        let (group_body, group_meta) = (
            &self.partition[..self.partition_body],
            &self.partition[self.partition_body + 1..],
        );
        let key = &mut self.keys;
        key.extend_from_slice(group_body);
        key.push(SEPARATOR);
        key.extend_from_slice(body);
        key.push(TERMINATOR);
        key.extend_from_slice(group_meta);
        key.extend_from_slice(meta);
    }
}

impl PageEntry for ListedEntry {
    type Subtree<'a> = EncodedSubtree<'a>;

    fn subtree<'a>(prefix: &'a KeyPath, partition: &'a [u8]) -> Result<EncodedSubtree<'a>, Error> {
        // A partition key is one element, `ns 01 id 00 meta`: the lean check knows most.
        let partition_body = match sort_key_body_len(partition) {
            Some(len) => len,
            None => KeyPathRef::decode(partition)
                .map_err(|e| {
                    crate::model::error::StorageError::new("a partition key does not decode", e)
                })?
                .body()
                .len(),
        };
        // `Bs 00` is where the prefix's subtree starts; a group has neither `Bs` nor `Ms`.
        let (prefix_body, prefix_meta) = if prefix.len() == 1 {
            (Vec::new(), Vec::new())
        } else {
            let mut body = prefix.sort_key_subtree_range().start;
            body.pop();
            let meta = prefix.sort_key()[body.len() + 1..].to_vec();
            (body, meta)
        };
        Ok(EncodedSubtree {
            prefix,
            partition,
            partition_body,
            prefix_body,
            prefix_meta,
            // About what a page of the benchmark's keys takes; it grows if need be.
            keys: Vec::with_capacity(crate::read::list::DEFAULT_LIST_LIMIT * 64),
        })
    }

    fn from_subtree(
        scan: &mut EncodedSubtree<'_>,
        _found: &[ListedEntry],
        sort: &[u8],
        record: RecordView<'_>,
    ) -> Result<Option<ListedEntry>, Error> {
        if let Some(of) = parse_alias(record.value)? {
            // An alias: its item is read once the page is complete (read/list.rs); its own path
            // is decoded here, as few entries are aliases.
            return Ok(match path_in_group(scan.prefix, sort, scan.prefix) {
                Some(at) if scan.prefix.covers(&at) => {
                    let item = item_from_view(at, record)?;
                    debug_assert_eq!(item.path, of.item);
                    Some(ListedEntry::Item(item.into()))
                }
                _ => None,
            });
        }
        let (schema_version, json) = split_stored(record.value)?;
        let start = scan.keys.len();
        match sort_key_body_len(sort) {
            Some(len) => {
                let (body, meta) = (&sort[..len], &sort[len + 1..]);
                if !scan.covers(body, meta) {
                    return Ok(None);
                }
                scan.push_key(body, meta);
            }
            // What the lean check leaves to the decoder (descending string and bytes ids, long
            // segments), the group's own key (`00`), and keys that are not key paths (skipped,
            // with a warning): the owned decoder, as `Store::list` does.
            None => match path_in_group(scan.prefix, sort, scan.prefix) {
                Some(path) if scan.prefix.covers(&path) => path.encode_into(&mut scan.keys),
                _ => return Ok(None),
            },
        }
        Ok(Some(ListedEntry::Item(ListedItem {
            path: EncodedPath::pending(start, scan.keys.len())?,
            version: record.version,
            created_at: Timestamp(record.created_at),
            modified_at: Timestamp(record.modified_at),
            expires_at: record.expires_at.map(Timestamp),
            value: Json::from_stored_slice(json)?,
            alias: None,
            schema_version,
        })))
    }

    fn finish(scan: EncodedSubtree<'_>, found: &mut [ListedEntry]) {
        // One buffer for the page's keys, shared by its paths (moved, not copied).
        let keys = Arc::new(scan.keys);
        for entry in found {
            if let ListedEntry::Item(item) = entry {
                item.path.finish(&keys);
            }
        }
    }

    fn from_owned(entries: Vec<ListEntry>) -> Result<Vec<ListedEntry>, Error> {
        // Encoded one after another into one buffer, shared as a subtree page's keys are.
        let mut keys = Vec::with_capacity(entries.len() * 64);
        let mut spans = Vec::with_capacity(entries.len());
        for entry in &entries {
            let start = keys.len();
            entry.path().encode_into(&mut keys);
            spans.push((start, keys.len()));
        }
        let keys = Arc::new(keys);
        entries
            .into_iter()
            .zip(spans)
            .map(|(entry, (start, end))| {
                let path = |start, end| {
                    let mut path = EncodedPath::pending(start, end)?;
                    path.finish(&keys);
                    Ok::<_, Error>(path)
                };
                Ok(match entry {
                    // Listed under an alias: the key is the alias, the item's path its own.
                    ListEntry::Item(item) if item.alias.is_some() => {
                        ListedEntry::Item(ListedItem {
                            alias: Some(path(start, end)?),
                            ..ListedItem::from(item)
                        })
                    }
                    ListEntry::Item(item) => ListedEntry::Item(ListedItem {
                        path: path(start, end)?,
                        version: item.version,
                        created_at: item.created_at,
                        modified_at: item.modified_at,
                        expires_at: item.expires_at,
                        value: item.value,
                        alias: None,
                        schema_version: item.schema_version,
                    }),
                    ListEntry::Node(_) => ListedEntry::Node(path(start, end)?),
                })
            })
            .collect()
    }

    fn sort_key(&self) -> Vec<u8> {
        // Once per page: decoding is simpler than splitting the key again.
        self.path().decode().sort_key()
    }

    fn unresolved(&self) -> Option<KeyPath> {
        match self {
            ListedEntry::Item(item) if item.version == 0 && item.alias.is_some() => {
                Some(item.path.decode())
            }
            _ => None,
        }
    }

    fn resolve(&mut self, item: Item) {
        if let ListedEntry::Item(listed) = self {
            let alias = listed.alias.take();
            *listed = ListedItem {
                alias,
                ..ListedItem::from(item)
            };
        }
    }

    fn matches(&self, filter: &Filter, migrations: Option<&Definitions>) -> bool {
        let ListedEntry::Item(item) = self else {
            return false;
        };
        // The filter reads the newest version; only an item stamped before it is translated
        // (rare: stored before a migration and not rewritten yet), the rest is read as stored.
        let newest = match migrations {
            Some(definitions) => match newest_text(
                definitions,
                &item.path.decode(),
                item.value.as_str(),
                item.schema_version,
            ) {
                Ok(newest) => newest,
                Err(_) => return false,
            },
            None => None,
        };
        let path = || item.alias.as_ref().unwrap_or(&item.path).decode();
        filter.matches(&Subject {
            path: &path,
            value: newest.as_ref().unwrap_or(&item.value).as_str(),
            version: item.version,
            created_at: item.created_at.micros(),
            modified_at: item.modified_at.micros(),
        })
    }

    fn readable(&self, readable: &Readable) -> bool {
        match self {
            ListedEntry::Item(item) => {
                (readable.0)(&item.path.decode())
                    && item
                        .alias
                        .as_ref()
                        .is_none_or(|a| (readable.0)(&a.decode()))
            }
            ListedEntry::Node(path) => (readable.0)(&path.decode()),
        }
    }

    fn in_versions(
        &mut self,
        definitions: &Definitions,
        versions: &SchemaVersions,
    ) -> Result<(), Error> {
        let ListedEntry::Item(listed) = self else {
            return Ok(());
        };
        // The value alone is translated: the rest of the entry stays where it is.
        if let Some((json, asked)) = text_in(
            definitions,
            &listed.path.decode(),
            listed.value.as_str(),
            listed.schema_version,
            versions,
        )? {
            if let Some(json) = json {
                listed.value = json;
            }
            listed.schema_version = asked;
        }
        Ok(())
    }

    fn project(&mut self, fields: &Fields) {
        if let ListedEntry::Item(item) = self {
            item.value = fields.project(&item.value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(text: &str) -> KeyPath {
        text.parse().unwrap()
    }

    #[test]
    fn text_and_decode_match_the_path() {
        for text in [
            "/u-1",
            "/u-1/settings",
            "/u-1/p-2/c-!-30",
            "/user-7f0c7ad8-0bd7-4f7e-9a53-2d4c2a6d1e11/post-0",
            "/s-hello/t-%12/w-%~x/v-a%/b%%c/d-!desc/e-~AAEC/f-!~_w",
            "/u-18446744073709551615/n--9223372036854775808",
        ] {
            let p = path(text);
            let encoded = EncodedPath::new(&p);
            assert_eq!(encoded.to_string(), text);
            assert_eq!(encoded.decode(), p);
            assert_eq!(encoded.view().to_key_path(), p);
            assert_eq!(encoded.as_bytes(), &p.encode()[..]);
            assert_eq!(encoded, p);
            assert_eq!(EncodedPath::from_bytes(&p.encode()).unwrap(), encoded);
            assert_eq!(format!("{encoded:?}"), format!("EncodedPath({text})"));
            assert_eq!(
                serde_json::to_string(&encoded).unwrap(),
                serde_json::to_string(&p).unwrap()
            );
        }
        assert!(EncodedPath::from_bytes(b"not a key").is_err());
        assert!(EncodedPath::from_bytes(&[]).is_err());
    }

    /// Every path in the groups of `GROUPS` below, `RESTS` after each.
    fn paths() -> Vec<KeyPath> {
        const GROUPS: &[&str] = &[
            "/u-1",
            "/user-7f0c7ad8-0bd7-4f7e-9a53-2d4c2a6d1e11",
            "/g-~AAEC",
            "/g-!x%2Fy",
            "/ggg-hello",
        ];
        const RESTS: &[&str] = &[
            "",
            "/p",
            "/p-1",
            "/p-10",
            "/p-~CAE",
            "/p-~CAo",
            "/p-!1",
            "/p-abc",
            "/p-~YWJj",
            "/p-1/c",
            "/p-1/c-!-5",
            "/p-1/c-!-5/d-00000000-0000-0000-0000-000000000001",
            "/p-~CAE/settings",
            "/pp-1",
            "/p_x-1/c-%2a/d-!~AAEC/e-18446744073709551615",
        ];
        GROUPS
            .iter()
            .flat_map(|g| RESTS.iter().map(move |r| path(&format!("{g}{r}"))))
            .collect()
    }

    /// Splicing a sort key into its group's partition key gives the path's encoding, and the
    /// byte test of coverage agrees with the typed one, for every pair of paths of one group
    /// (aliases included: `p-~CAE` has the bytes of `p-1`'s integer).
    #[test]
    fn spliced_keys_and_coverage_match_the_typed_path() {
        let paths = paths();
        for prefix in &paths {
            let partition = prefix.partition_key();
            let mut scan = ListedEntry::subtree(prefix, &partition).unwrap();
            for entry in paths.iter().filter(|p| p.group() == prefix.group()) {
                let sort = entry.sort_key();
                let Some(len) = sort_key_body_len(&sort) else {
                    // The group's own key, descending string or bytes ids: the owned decoder's
                    // (tested below).
                    continue;
                };
                let (body, meta) = (&sort[..len], &sort[len + 1..]);
                let start = scan.keys.len();
                scan.push_key(body, meta);
                assert_eq!(scan.keys[start..], entry.encode(), "{entry} spliced");
                assert_eq!(
                    scan.covers(body, meta),
                    prefix.covers(entry),
                    "{prefix} covers {entry}"
                );
            }
        }
    }

    /// A subtree scan turns each stored entry into the entry `Store::list` makes, decoded: also
    /// the group's own key and one-element keys without id, which take the owned decoder, and it
    /// skips what the owned listing skips.
    #[test]
    fn entries_from_the_scan_match_the_owned_ones() {
        let record = crate::backend::Record {
            version: 2,
            created_at: 5,
            modified_at: 6,
            expires_at: Some(7),
            value: br#"{"a":1}"#.to_vec(),
        };
        let paths = paths();
        for prefix in &paths {
            let partition = prefix.partition_key();
            let entries = paths.iter().filter(|p| p.group() == prefix.group());
            let sorts: Vec<Vec<u8>> = entries.map(KeyPath::sort_key).collect();
            // Each entry alone, and all in one page (keys one after another in its buffer).
            let (mut scan, mut all) = (ListedEntry::subtree(prefix, &partition).unwrap(), vec![]);
            let mut owned_scan = ListEntry::subtree(prefix, &partition).unwrap();
            let mut want = vec![];
            for sort in sorts.iter().cloned().chain([b"junk".to_vec()]) {
                let found = |scan: &mut EncodedSubtree<'_>| {
                    ListedEntry::from_subtree(scan, &[], &sort, record.as_view()).unwrap()
                };
                let mut alone = ListedEntry::subtree(prefix, &partition).unwrap();
                let listed = found(&mut alone).map(|entry| {
                    let mut page = [entry];
                    ListedEntry::finish(alone, &mut page);
                    let [entry] = page;
                    entry
                });
                all.extend(found(&mut scan));
                let owned =
                    ListEntry::from_subtree(&mut owned_scan, &[], &sort, record.as_view()).unwrap();
                assert_eq!(listed.clone().map(ListEntry::from), owned);
                if let Some(listed) = listed {
                    assert_eq!(listed.sort_key(), sort);
                }
                want.extend(owned);
            }
            ListedEntry::finish(scan, &mut all);
            let page: Vec<ListEntry> = all.into_iter().map(ListEntry::from).collect();
            assert_eq!(page, want, "the page of {prefix}");
        }
    }

    #[test]
    fn order_is_the_paths_order() {
        let mut paths: Vec<KeyPath> = ["/u-1/p-10", "/u-1/p-2", "/u-1", "/u-1/p-2/c-1", "/u-1/p"]
            .iter()
            .map(|t| path(t))
            .collect();
        let mut encoded: Vec<EncodedPath> = paths.iter().map(EncodedPath::new).collect();
        paths.sort();
        encoded.sort();
        let decoded: Vec<KeyPath> = encoded.iter().map(EncodedPath::decode).collect();
        assert_eq!(decoded, paths);
    }

    #[test]
    fn a_listed_item_serializes_and_converts_as_an_item() {
        let item = Item {
            path: path("/u-1/p-%7"),
            version: 3,
            created_at: Timestamp(1),
            modified_at: Timestamp(2),
            expires_at: Some(Timestamp(9)),
            value: Json::parse(r#"{"a": [1, "x"]}"#).unwrap(),
            alias: None,
            schema_version: 0,
        };
        let listed = ListedItem::from(item.clone());
        assert_eq!(
            serde_json::to_string(&listed).unwrap(),
            serde_json::to_string(&item).unwrap()
        );
        assert_eq!(listed.into_item(), item);
    }
}
