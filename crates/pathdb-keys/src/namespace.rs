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

thread_local! {
    /// Namespaces this thread decoded lately, most recent at `next - 1` (round robin).
    static RECENT_NAMESPACES: std::cell::RefCell<([Option<Namespace>; RECENT], usize)> =
        const { std::cell::RefCell::new(([const { None }; RECENT], 0)) };
}

impl Namespace {
    /// A namespace with these bytes that this thread decoded lately, shared: applications use a
    /// handful of namespaces, so decoding keys mostly finds them here instead of validating and
    /// allocating each again. At most [`RECENT`] namespaces (64 bytes each at most) are kept.
    pub(crate) fn recent(bytes: &[u8]) -> Option<Namespace> {
        RECENT_NAMESPACES.with_borrow(|(recent, _)| {
            recent
                .iter()
                .flatten()
                .find(|ns| ns.0.as_bytes() == bytes)
                .cloned()
        })
    }

    /// Keeps `ns` for [`Namespace::recent`], replacing the oldest.
    pub(crate) fn remember(&self) {
        RECENT_NAMESPACES.with_borrow_mut(|(recent, next)| {
            recent[*next] = Some(self.clone());
            *next = (*next + 1) % RECENT;
        });
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
