//! Namespaces: the typed names of key path elements (`user` in `/user-7`).

use crate::Rule;
use std::borrow::Borrow;
use std::fmt;
use std::sync::Arc;

/// The longest namespace, in bytes.
pub const MAX_NAMESPACE_LEN: usize = 64;

/// A validated namespace: an ASCII letter or `_`, then letters, digits and `_`; 1..=64 bytes.
///
/// It has no `-`, so the first `-` of an element always ends the namespace.
///
/// Cloning is cheap (a shared, reference-counted string): every path of a listed page repeats
/// its group's namespace and mostly the same few others, and decoders share them (see
/// [`crate::KeyPath::with_sort_key_like`]) instead of allocating each again.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Namespace(Arc<str>);

impl Namespace {
    /// Validates `name` as a namespace.
    ///
    /// # Errors
    /// The rule `name` breaks; the offset of the offending byte is `validate`'s.
    pub fn new(name: &str) -> Result<Namespace, Rule> {
        validate(name).map_err(|(_, rule)| rule)?;
        Ok(Namespace(name.into()))
    }

    /// For names a decoder or parser has already validated.
    pub(crate) fn new_unchecked(name: &str) -> Namespace {
        debug_assert!(validate(name).is_ok());
        Namespace(name.into())
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Checks the namespace rules; on failure returns the byte offset within `name` and the rule.
pub(crate) fn validate(name: &str) -> Result<(), (usize, Rule)> {
    let bytes = name.as_bytes();
    let Some(&first) = bytes.first() else {
        return Err((0, Rule::EmptyNamespace));
    };
    if !(first.is_ascii_alphabetic() || first == b'_') {
        return Err((0, Rule::NamespaceStart(first_char(name, 0))));
    }
    if let Some(i) = bytes
        .iter()
        .position(|&b| !(b.is_ascii_alphanumeric() || b == b'_'))
    {
        return Err((i, Rule::NamespaceChar(first_char(name, i))));
    }
    if bytes.len() > MAX_NAMESPACE_LEN {
        return Err((MAX_NAMESPACE_LEN, Rule::NamespaceTooLong(bytes.len())));
    }
    Ok(())
}

/// How many recently decoded namespaces each thread keeps for [`Namespace::recent`].
const RECENT: usize = 8;

/// Namespaces this thread decoded lately, with a key of each for comparing without `memcmp`.
pub(crate) struct Recent {
    /// `keys[i]` is [`NsKey::of`] `names[i]`'s bytes; an empty slot's key has length 0.
    keys: [NsKey; RECENT],
    names: [Option<Namespace>; RECENT],
    /// The slot to fill next (round robin).
    next: usize,
}

/// A namespace's length and two words of its bytes (the first and the last 8, overlapping for
/// shorter ones): equal keys mean equal bytes for namespaces up to 16 bytes, and two integer
/// compares replace a `memcmp` call. Longer namespaces are compared in full when keys match.
#[derive(Clone, Copy, PartialEq, Eq)]
struct NsKey {
    len: usize,
    first: u64,
    last: u64,
}

impl NsKey {
    const EMPTY: NsKey = NsKey {
        len: 0,
        first: 0,
        last: 0,
    };

    /// The key of `b`: for n >= 2 bytes, fixed-size loads of the first and last
    /// `min(n, 8)`-ish bytes that between them cover every byte up to 16.
    #[inline]
    fn of(b: &[u8]) -> NsKey {
        let (first, last) = if let (Some(f), Some(l)) = (b.first_chunk::<8>(), b.last_chunk::<8>())
        {
            (u64::from_le_bytes(*f), u64::from_le_bytes(*l))
        } else if let (Some(f), Some(l)) = (b.first_chunk::<4>(), b.last_chunk::<4>()) {
            (
                u64::from(u32::from_le_bytes(*f)),
                u64::from(u32::from_le_bytes(*l)),
            )
        } else if let (Some(f), Some(l)) = (b.first_chunk::<2>(), b.last_chunk::<2>()) {
            (
                u64::from(u16::from_le_bytes(*f)),
                u64::from(u16::from_le_bytes(*l)),
            )
        } else {
            (b.first().map_or(0, |&x| u64::from(x)), 0)
        };
        NsKey {
            len: b.len(),
            first,
            last,
        }
    }
}

thread_local! {
    static RECENT_NAMESPACES: std::cell::RefCell<Recent> = const {
        std::cell::RefCell::new(Recent {
            keys: [NsKey::EMPTY; RECENT],
            names: [const { None }; RECENT],
            next: 0,
        })
    };
}

impl Namespace {
    /// Runs `f` with the namespaces this thread decoded lately: applications use a handful of
    /// namespaces, so decoding keys mostly finds them there instead of validating and
    /// allocating each again. At most [`RECENT`] namespaces (64 bytes each at most) are kept.
    /// `f` must not call this again (the set is borrowed mutably).
    pub(crate) fn with_recent<R>(f: impl FnOnce(&mut Recent) -> R) -> R {
        RECENT_NAMESPACES.with_borrow_mut(f)
    }
}

impl Recent {
    /// A namespace with these bytes, shared.
    #[inline]
    pub(crate) fn find(&self, bytes: &[u8]) -> Option<Namespace> {
        let key = NsKey::of(bytes);
        let i = self.keys.iter().position(|k| *k == key)?;
        // Up to 16 bytes the key is the bytes; beyond, compare them all.
        if let Some(ns) = &self.names[i]
            && (bytes.len() <= 16 || ns.0.as_bytes() == bytes)
        {
            return Some(ns.clone());
        }
        // A longer namespace with the same key: another slot may hold these bytes.
        self.names
            .iter()
            .flatten()
            .find(|ns| ns.0.as_bytes() == bytes)
            .cloned()
    }

    /// Keeps `ns` for [`Recent::find`], replacing the oldest.
    pub(crate) fn remember(&mut self, ns: &Namespace) {
        let next = self.next;
        self.keys[next] = NsKey::of(ns.0.as_bytes());
        self.names[next] = Some(ns.clone());
        self.next = (next + 1) % RECENT;
    }
}

/// [`validate`] as a yes or no, on bytes: the decoder's fast path, which asks [`validate`] for
/// the error only when this says no.
#[inline]
pub(crate) fn is_valid(bytes: &[u8]) -> bool {
    let Some(&first) = bytes.first() else {
        return false;
    };
    bytes.len() <= MAX_NAMESPACE_LEN
        && (first.is_ascii_alphabetic() || first == b'_')
        && bytes
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'_')
}

fn first_char(s: &str, at: usize) -> char {
    s.get(at..)
        .and_then(|t| t.chars().next())
        .unwrap_or('\u{fffd}')
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl AsRef<str> for Namespace {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Namespace {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl TryFrom<&str> for Namespace {
    type Error = Rule;
    fn try_from(s: &str) -> Result<Namespace, Rule> {
        Namespace::new(s)
    }
}
