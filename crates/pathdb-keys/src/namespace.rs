//! Namespaces: the typed names of key path elements (`user` in `/user-7`).

use crate::Rule;
use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// The longest namespace, in bytes.
pub const MAX_NAMESPACE_LEN: usize = 64;

/// A validated namespace: an ASCII letter or `_`, then letters, digits and `_`; 1..=64 bytes.
///
/// It has no `-`, so the first `-` of an element always ends the namespace.
///
/// Cloning and dropping are cheap, and for the first [`INTERN_CAP`] distinct namespaces of the
/// process free of atomic operations: those are interned once for the life of the process (an
/// application uses a handful of namespaces, and every path and listed entry repeats them), so a
/// namespace is then a `&'static str`. Past the cap, a namespace is a shared, reference-counted
/// string. Equality, order and hash are those of the name, whichever the representation.
#[derive(Clone)]
pub struct Namespace(Repr);

#[derive(Clone)]
enum Repr {
    /// From the process-wide [`Interner`]: copied and dropped without reference counts.
    Interned(&'static str),
    /// Past the interner's cap. `Arc<Box<str>>` rather than `Arc<str>`: a thin pointer beside
    /// the other variant's fat one keeps `Namespace` at 16 bytes (and `Element` at 48).
    Shared(Arc<Box<str>>),
}

impl Namespace {
    /// Validates `name` as a namespace.
    ///
    /// # Errors
    /// The rule `name` breaks; the offset of the offending byte is `validate`'s.
    pub fn new(name: &str) -> Result<Namespace, Rule> {
        validate(name).map_err(|(_, rule)| rule)?;
        Ok(Namespace::interned_or_shared(name))
    }

    /// For names a decoder or parser has already validated.
    pub(crate) fn new_unchecked(name: &str) -> Namespace {
        debug_assert!(validate(name).is_ok());
        Namespace::interned_or_shared(name)
    }

    /// The interned name, or a reference-counted copy once the interner is full.
    fn interned_or_shared(name: &str) -> Namespace {
        match INTERNER.intern(name) {
            Some(interned) => Namespace(Repr::Interned(interned)),
            None => Namespace::shared(name),
        }
    }

    /// The reference-counted representation, whether or not the interner has room: the
    /// interner's fallback, and for tests that compare the two representations.
    pub(crate) fn shared(name: &str) -> Namespace {
        Namespace(Repr::Shared(Arc::new(name.into())))
    }

    /// The interned representation from `interner` rather than the process's (tests).
    #[cfg(test)]
    pub(crate) fn interned_in<const SLOTS: usize>(
        interner: &Interner<SLOTS>,
        name: &str,
    ) -> Option<Namespace> {
        interner
            .intern(name)
            .map(|interned| Namespace(Repr::Interned(interned)))
    }

    /// Whether this is the interned representation (tests).
    #[cfg(test)]
    pub(crate) fn is_interned(&self) -> bool {
        matches!(self.0, Repr::Interned(_))
    }

    /// The name.
    #[inline]
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Interned(name) => name,
            Repr::Shared(name) => name,
        }
    }
}

impl PartialEq for Namespace {
    #[inline]
    fn eq(&self, other: &Namespace) -> bool {
        let (a, b) = (self.as_str(), other.as_str());
        // The same interned or shared string (the common case) needs no byte comparison.
        std::ptr::eq(a, b) || a == b
    }
}

impl Eq for Namespace {}

impl PartialOrd for Namespace {
    fn partial_cmp(&self, other: &Namespace) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Namespace {
    fn cmp(&self, other: &Namespace) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Hash for Namespace {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

/// How many distinct namespaces the process interns at most: the bound on what interning leaks
/// (64 bytes each at most, 64 KiB in all). Keys from untrusted input can use it up; namespaces
/// after that are reference-counted, which is slower but otherwise the same.
pub const INTERN_CAP: usize = 1024;

/// The process's interned namespaces; twice as many slots as the cap keeps probes short.
static INTERNER: Interner<{ 2 * INTERN_CAP }> = Interner::new(INTERN_CAP);

/// A set of strings leaked once each and never freed, up to a cap: an open-addressing table of
/// `SLOTS` write-once slots (a power of two, above the cap, so a probe always meets an empty
/// slot). Lookups are atomic loads only; inserting takes one slot's initialisation.
pub(crate) struct Interner<const SLOTS: usize> {
    slots: [OnceLock<&'static str>; SLOTS],
    /// Strings leaked, plus insertions under way (each reserves one before leaking), so the
    /// strings leaked never exceed `cap`.
    count: AtomicUsize,
    cap: usize,
}

impl<const SLOTS: usize> Interner<SLOTS> {
    /// An empty interner that leaks at most `cap` strings.
    pub(crate) const fn new(cap: usize) -> Interner<SLOTS> {
        assert!(SLOTS.is_power_of_two() && cap < SLOTS);
        Interner {
            slots: [const { OnceLock::new() }; SLOTS],
            count: AtomicUsize::new(0),
            cap,
        }
    }

    /// The interned string equal to `name`, interning it if there is room; `None` when it is
    /// not interned and the cap is reached. Two calls with equal names return the same string.
    pub(crate) fn intern(&self, name: &str) -> Option<&'static str> {
        let mut i = fnv1a(name.as_bytes()) as usize & (SLOTS - 1);
        loop {
            let slot = &self.slots[i];
            // Slots are only ever filled, never emptied or changed, so a name is either in
            // the first empty slot of its probe sequence or before it.
            match slot.get() {
                Some(&interned) if interned == name => return Some(interned),
                Some(_) => {}
                None => {
                    // Reserve one of the cap's strings before leaking one; a plain load first,
                    // so that once full a miss writes nothing shared.
                    if self.count.load(Ordering::Relaxed) >= self.cap {
                        return None;
                    }
                    if self.count.fetch_add(1, Ordering::Relaxed) >= self.cap {
                        self.count.fetch_sub(1, Ordering::Relaxed);
                        return None;
                    }
                    let mut leaked = false;
                    let interned = *slot.get_or_init(|| {
                        leaked = true;
                        Box::leak(Box::<str>::from(name))
                    });
                    if !leaked {
                        // Another thread filled the slot first: give the reservation back.
                        self.count.fetch_sub(1, Ordering::Relaxed);
                    }
                    if interned == name {
                        return Some(interned);
                    }
                }
            }
            i = (i + 1) & (SLOTS - 1);
        }
    }

    /// Strings leaked so far (tests).
    #[cfg(test)]
    pub(crate) fn leaked(&self) -> usize {
        self.slots.iter().filter(|s| s.get().is_some()).count()
    }
}

/// FNV-1a over the name's bytes (at most 64): only for the interner's slot, so any spread will
/// do, and a miss of the thread's recent namespaces is the only hot caller.
fn fnv1a(bytes: &[u8]) -> u64 {
    let h = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    h ^ (h >> 32)
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
            && (bytes.len() <= 16 || ns.as_str().as_bytes() == bytes)
        {
            return Some(ns.clone());
        }
        // A longer namespace with the same key: another slot may hold these bytes.
        self.names
            .iter()
            .flatten()
            .find(|ns| ns.as_str().as_bytes() == bytes)
            .cloned()
    }

    /// Keeps `ns` for [`Recent::find`], replacing the oldest.
    pub(crate) fn remember(&mut self, ns: &Namespace) {
        let next = self.next;
        self.keys[next] = NsKey::of(ns.as_str().as_bytes());
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
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl AsRef<str> for Namespace {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Namespace {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl TryFrom<&str> for Namespace {
    type Error = Rule;
    fn try_from(s: &str) -> Result<Namespace, Rule> {
        Namespace::new(s)
    }
}
