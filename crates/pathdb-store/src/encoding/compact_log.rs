//! The change log's compact entry: the same changes as the JSON entry (encoding/changelog.rs),
//! in about half the bytes, which is most of what a put's log costs (docs/benchmarks.md, "The
//! change log's compact entry"). Paths are their binary keys, numbers are varints or fixed
//! little-endian words, and a value is its JSON text behind its length (docs/changes.md, "Two
//! forms of an entry").
//!
//! ```text
//! entry   = FORM flags change*            flags: bit 0 the commit ends here, bit 1 images
//! change  = tag path version [put] [alias] [was]
//! put     = created modified [expires] [sv] value
//! was     = version created modified [expires] [sv] value
//! path    = varint length, then the key path's binary form (docs/key-format.md)
//! value   = varint length, then JSON text
//! ```
//!
//! `tag` says which optional parts follow ([`tag`]). A store writes this form only to a database
//! marked for it (jobs/open.rs), since builds before it read only JSON entries. Readers take both.

use crate::encoding::changelog::{Before, Change, ReadEntry, corrupt};
use crate::encoding::record::to_item;
use crate::model::error::{Error, StorageError};
use crate::model::item::Item;
use pathdb_keys::KeyPath;
use serde_json::value::RawValue;

/// The first byte of a compact entry. A JSON entry starts with `{`.
pub(crate) const FORM: u8 = 0x01;
/// Bytes before the first change: the form and the flags.
pub(crate) const HEADER: usize = 2;
/// [`HEADER`]'s flags: the commit's last entry in its group.
const END: u8 = 1;
/// [`HEADER`]'s flags: every change whose item was live has its image, or says it has none.
const IMAGES: u8 = 2;

/// The bits of a change's tag byte.
mod tag {
    /// A put (the item as written follows); clear: a delete.
    pub(super) const PUT: u8 = 1;
    /// The put's item expires (its time follows).
    pub(super) const EXPIRES: u8 = 1 << 1;
    /// The change was made through an alias (its path follows).
    pub(super) const ALIAS: u8 = 1 << 2;
    /// The put's value is in a definition version other than 0 (the version follows).
    pub(super) const SV: u8 = 1 << 3;
    /// The item's before image follows.
    pub(super) const WAS: u8 = 1 << 4;
    /// The item was live, but its image did not fit the entry.
    pub(super) const WAS_UNKNOWN: u8 = 1 << 5;
    /// The before image's item expired at a time (it follows).
    pub(super) const WAS_EXPIRES: u8 = 1 << 6;
    /// The before image's value is in a definition version other than 0.
    pub(super) const WAS_SV: u8 = 1 << 7;
}

/// A new entry's bytes before its first change.
pub(crate) fn start(out: &mut Vec<u8>) {
    out.extend_from_slice(&[FORM, 0]);
}

/// Ends the entry begun in `out` by [`start`]; `end`: the commit's last entry in this group.
pub(crate) fn finish(out: &mut [u8], end: bool) {
    out[1] = IMAGES | if end { END } else { 0 };
}

/// Adds `change` with its before image `before` (`None`: no item was live), or, when `fits` is
/// false, the mark that it was live but is not kept.
pub(crate) fn push(out: &mut Vec<u8>, change: &Change, before: Option<&Item>, fits: bool) {
    let image = before.filter(|_| fits);
    let mut bits = match before {
        Some(_) if !fits => tag::WAS_UNKNOWN,
        Some(was) => {
            tag::WAS
                | if was.expires_at.is_some() {
                    tag::WAS_EXPIRES
                } else {
                    0
                }
                | if was.schema_version != 0 {
                    tag::WAS_SV
                } else {
                    0
                }
        }
        None => 0,
    };
    let (path, version, alias) = match change {
        Change::Put(item) => {
            bits |= tag::PUT
                | if item.expires_at.is_some() {
                    tag::EXPIRES
                } else {
                    0
                }
                | if item.schema_version != 0 { tag::SV } else { 0 };
            (&item.path, item.version, item.alias.as_ref())
        }
        Change::Delete {
            path,
            version,
            alias,
        } => (path, *version, alias.as_ref()),
    };
    if alias.is_some() {
        bits |= tag::ALIAS;
    }
    out.push(bits);
    key(out, path);
    varint(out, version);
    if let Change::Put(item) = change {
        item_body(out, item);
    }
    if let Some(alias) = alias {
        key(out, alias);
    }
    if let Some(was) = image {
        varint(out, was.version);
        item_body(out, was);
    }
}

/// An item's times, definition version and value (the tag says which are there).
fn item_body(out: &mut Vec<u8>, item: &Item) {
    out.extend_from_slice(&item.created_at.0.to_le_bytes());
    out.extend_from_slice(&item.modified_at.0.to_le_bytes());
    if let Some(at) = item.expires_at {
        out.extend_from_slice(&at.0.to_le_bytes());
    }
    if item.schema_version != 0 {
        varint(out, item.schema_version);
    }
    let value = item.value.as_str().as_bytes();
    varint(out, value.len() as u64);
    out.extend_from_slice(value);
}

/// A path: its binary key behind the key's length.
fn key(out: &mut Vec<u8>, path: &KeyPath) {
    // The length goes in front once it is known: one byte for nearly every key, a second one
    // made room for when the key is longer (at most 2 KB, encoding/limits.rs).
    let at = out.len();
    out.push(0);
    path.encode_into(out);
    let len = out.len() - at - 1;
    if let Ok(short @ 0..0x80) = u8::try_from(len) {
        out[at] = short;
    } else {
        let mut prefix = Vec::with_capacity(3);
        varint(&mut prefix, len as u64);
        out.splice(at..=at, prefix);
    }
}

fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Reads a compact entry (`bytes` starts with [`FORM`]). A change's before image is made into
/// an item only where `images` (the change's index, the change) asks for it; otherwise it is
/// [`Before::Unknown`].
///
/// # Errors
/// Bytes this module would not write: a corrupt change log entry.
pub(crate) fn read(
    bytes: &[u8],
    images: &dyn Fn(usize, &Change) -> bool,
) -> Result<ReadEntry, Error> {
    let mut input = Input { bytes, at: HEADER };
    let flags = match bytes {
        [FORM, flags, ..] if flags & !(END | IMAGES) == 0 => *flags,
        _ => return Err(malformed("a compact entry's header")),
    };
    let logged_images = flags & IMAGES != 0;
    let mut changes = Vec::new();
    while input.at < bytes.len() {
        let bits = input.byte()?;
        let path = input.key()?;
        let version = input.varint()?;
        let put = if bits & tag::PUT != 0 {
            Some(input.item_body(bits & tag::EXPIRES != 0, bits & tag::SV != 0)?)
        } else if bits & (tag::EXPIRES | tag::SV) != 0 {
            return Err(malformed("a delete with a put's parts"));
        } else {
            None
        };
        let alias = if bits & tag::ALIAS != 0 {
            Some(input.key()?)
        } else {
            None
        };
        let was = if bits & tag::WAS != 0 {
            if bits & tag::WAS_UNKNOWN != 0 {
                return Err(malformed("an image both kept and not"));
            }
            let version = input.varint()?;
            Some((
                version,
                input.item_body(bits & tag::WAS_EXPIRES != 0, bits & tag::WAS_SV != 0)?,
            ))
        } else if bits & (tag::WAS_EXPIRES | tag::WAS_SV) != 0 {
            return Err(malformed("an image's parts without the image"));
        } else {
            None
        };
        let change = match put {
            Some(body) => Change::Put(body.into_item(path, version, alias)?),
            None => Change::Delete {
                path,
                version,
                alias,
            },
        };
        let before = match was {
            _ if !logged_images || bits & tag::WAS_UNKNOWN != 0 => Before::Unknown,
            _ if !images(changes.len(), &change) => Before::Unknown,
            None => Before::Absent,
            Some((version, body)) => {
                let alias = match &change {
                    Change::Put(item) => item.alias.clone(),
                    Change::Delete { alias, .. } => alias.clone(),
                };
                Before::Item(body.into_item(change.path().clone(), version, alias)?)
            }
        };
        changes.push((change, before));
    }
    Ok(ReadEntry {
        changes,
        end: flags & END != 0,
    })
}

/// Whether `bytes` are a compact entry that ends its commit, and whether it logs images.
pub(crate) fn flags(bytes: &[u8]) -> Option<(bool, bool)> {
    match bytes {
        [FORM, flags, ..] if flags & !(END | IMAGES) == 0 => {
            Some((flags & END != 0, flags & IMAGES != 0))
        }
        _ => None,
    }
}

/// Sets the flags of the compact entry `out` (joined from others).
pub(crate) fn set_flags(out: &mut [u8], end: bool, images: bool) {
    out[1] = if end { END } else { 0 } | if images { IMAGES } else { 0 };
}

/// An item's parts as an entry holds them.
struct Body<'a> {
    created_at: i64,
    modified_at: i64,
    expires_at: Option<i64>,
    sv: u64,
    value: &'a str,
}

impl Body<'_> {
    fn into_item(self, path: KeyPath, version: u64, alias: Option<KeyPath>) -> Result<Item, Error> {
        let record = crate::backend::Record {
            version,
            created_at: self.created_at,
            modified_at: self.modified_at,
            expires_at: self.expires_at,
            value: self.value.as_bytes().to_vec(),
        };
        Ok(Item {
            alias,
            schema_version: self.sv,
            ..to_item(path, record)?
        })
    }
}

/// The bytes of an entry being read, and where the next part begins.
struct Input<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Input<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| malformed("an entry cut short"))?;
        let part = &self.bytes[self.at..end];
        self.at = end;
        Ok(part)
    }

    fn byte(&mut self) -> Result<u8, Error> {
        Ok(self.take(1)?[0])
    }

    fn word(&mut self) -> Result<i64, Error> {
        let mut raw = [0; 8];
        raw.copy_from_slice(self.take(8)?);
        Ok(i64::from_le_bytes(raw))
    }

    /// A LEB128 number: at most ten bytes, the last one holding what is left of 64 bits, and
    /// none with a needless zero byte at its end (each number has one encoding).
    fn varint(&mut self) -> Result<u64, Error> {
        let mut n = 0u64;
        for i in 0..10 {
            let b = self.byte()?;
            if i == 9 && b > 1 {
                return Err(malformed("a number over 64 bits"));
            }
            n |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                if b == 0 && i > 0 {
                    return Err(malformed("a number with a needless byte"));
                }
                return Ok(n);
            }
        }
        Err(malformed("a number over 64 bits"))
    }

    fn len(&mut self) -> Result<usize, Error> {
        usize::try_from(self.varint()?).map_err(|_| malformed("a length beyond memory"))
    }

    fn key(&mut self) -> Result<KeyPath, Error> {
        let len = self.len()?;
        KeyPath::decode(self.take(len)?).map_err(corrupt)
    }

    fn item_body(&mut self, expires: bool, sv: bool) -> Result<Body<'a>, Error> {
        let created_at = self.word()?;
        let modified_at = self.word()?;
        let expires_at = if expires { Some(self.word()?) } else { None };
        let sv = if sv { self.varint()? } else { 0 };
        let len = self.len()?;
        let raw = self.take(len)?;
        // A value is checked as the JSON form's parse checks it: answers write it out as it is.
        let value: &RawValue = serde_json::from_slice(raw).map_err(corrupt)?;
        Ok(Body {
            created_at,
            modified_at,
            expires_at,
            sv,
            value: value.get(),
        })
    }
}

fn malformed(what: &str) -> Error {
    StorageError::msg(format!("corrupt change log entry: {what}")).into()
}
