//! Sealed tokens: every position the store hands out (list and groups page tokens, scan cursors,
//! change tokens) carries a MAC keyed per database, so a token the store did not issue is
//! refused instead of being read as some other position.
//!
//! A token is `kind byte | payload | tag`, URL-safe base64 without padding. The tag is the first
//! [`TAG_BYTES`] of HMAC-SHA256 over the kind, the context the token is valid in (the listing's
//! parameters, the feed's group) and the payload. So a flipped bit, a truncated or extended
//! token, a token of another listing, another group, another kind or another database all fail
//! the same check. The kind byte also versions the format: a new layout takes a new byte.
//!
//! The key is 32 random bytes kept in the system partition (encoding/layout.rs), made by the first
//! store that opens the database and read by every later one, so tokens survive restarts and are
//! shared by every server of one DynamoDB table. A database opened read-only before any writer made
//! a key uses [`FALLBACK_KEY`]: its tokens are still checked for damage, and a writer's key later
//! replaces it (tokens issued before then are refused once, as from another database).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Bytes of MAC in a token: 96 bits, short enough to keep tokens short, far beyond guessing.
pub(crate) const TAG_BYTES: usize = 12;
/// Bytes of a database's token key.
pub(crate) const KEY_BYTES: usize = 32;
/// The key of a database that no writer has opened since tokens were sealed (read-only opens).
pub(crate) const FALLBACK_KEY: [u8; KEY_BYTES] = [0; KEY_BYTES];

/// What a token is a position in; each kind's byte is also its format version.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    /// A [`crate::store::Store::list`] page token: the sort key of the last item returned.
    ListPage = 0x12,
    /// A [`crate::store::Store::groups`] page token: the last group's partition.
    GroupsPage = 0x22,
    /// A [`crate::store::Store::scan`] cursor: the last key read.
    ScanCursor = 0x32,
    /// A [`crate::encoding::changelog::ChangeToken`]: entry, offset and the previous entry's time.
    Change = 0x42,
    /// A [`crate::encoding::changelog::ChangeToken`] of a listing on a backend without snapshots:
    /// the entry after the newest and the newest's time; the entries written in the 10 s up to it
    /// are delivered too (feed/reader.rs).
    ListingChange = 0x52,
}

/// A database's token key, keyed once (the HMAC state after the key is cloned per token), and
/// the keys it had before a restore (backup/restore.rs), which no longer seal anything but tell
/// a token from before the restore from one that was never issued.
#[derive(Clone)]
pub(crate) struct TokenKey(Hmac<Sha256>, std::sync::Arc<Vec<TokenKey>>);

impl std::fmt::Debug for TokenKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenKey(..)")
    }
}

impl TokenKey {
    /// The key whose bytes are `key`.
    pub(crate) fn new(key: &[u8]) -> TokenKey {
        // HMAC takes a key of any length.
        TokenKey(
            Hmac::new_from_slice(key).unwrap_or_else(|_| unreachable!("HMAC takes any key")),
            std::sync::Arc::default(),
        )
    }

    /// The key whose bytes are `key`, which replaced the keys in `retired` (each
    /// [`KEY_BYTES`] long, oldest first) when the database was restored.
    pub(crate) fn with_retired(key: &[u8], retired: &[u8]) -> TokenKey {
        let old = retired.chunks(KEY_BYTES).map(TokenKey::new).collect();
        TokenKey(TokenKey::new(key).0, std::sync::Arc::new(old))
    }

    /// The keys this one replaced.
    pub(crate) fn retired(&self) -> &[TokenKey] {
        &self.1
    }

    fn mac(&self, kind: Kind, context: &[&[u8]], payload: &[u8]) -> Hmac<Sha256> {
        let mut mac = self.0.clone();
        mac.update(&[kind as u8]);
        for part in context {
            // Length-prefixed, so that no two contexts hash alike.
            mac.update(&(part.len() as u64).to_be_bytes());
            mac.update(part);
        }
        mac.update(payload);
        mac
    }

    /// The tag of `payload` in `context`.
    pub(crate) fn tag(&self, kind: Kind, context: &[&[u8]], payload: &[u8]) -> [u8; TAG_BYTES] {
        let full = self.mac(kind, context, payload).finalize().into_bytes();
        let mut tag = [0; TAG_BYTES];
        tag.copy_from_slice(&full[..TAG_BYTES]);
        tag
    }

    /// Whether `tag` is the tag of `payload` in `context` (compared in constant time).
    pub(crate) fn verify(&self, kind: Kind, context: &[&[u8]], payload: &[u8], tag: &[u8]) -> bool {
        tag.len() == TAG_BYTES
            && self
                .mac(kind, context, payload)
                .verify_truncated_left(tag)
                .is_ok()
    }

    /// `payload` as a token valid in `context`.
    pub(crate) fn seal(&self, kind: Kind, context: &[&[u8]], payload: &[u8]) -> String {
        let mut raw = Vec::with_capacity(1 + payload.len() + TAG_BYTES);
        raw.push(kind as u8);
        raw.extend_from_slice(payload);
        raw.extend_from_slice(&self.tag(kind, context, payload));
        URL_SAFE_NO_PAD.encode(raw)
    }

    /// The payload of a token this database sealed for `context`, or `None` for anything else.
    pub(crate) fn open(&self, kind: Kind, context: &[&[u8]], token: &str) -> Option<Vec<u8>> {
        let mut raw = URL_SAFE_NO_PAD.decode(token).ok()?;
        if raw.len() < 1 + TAG_BYTES || raw[0] != kind as u8 {
            return None;
        }
        let tag = raw.split_off(raw.len() - TAG_BYTES);
        let payload = &raw[1..];
        self.verify(kind, context, payload, &tag)
            .then(|| payload.to_vec())
    }
}

/// A fixed key for unit tests elsewhere in the crate.
#[cfg(test)]
pub(crate) fn tests_key() -> TokenKey {
    TokenKey::new(&[7; KEY_BYTES])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> TokenKey {
        tests_key()
    }

    #[test]
    fn a_sealed_token_opens_only_in_its_context_kind_and_database() {
        let token = key().seal(Kind::ListPage, &[b"/a-1"], b"cursor");
        assert_eq!(
            key().open(Kind::ListPage, &[b"/a-1"], &token).as_deref(),
            Some(&b"cursor"[..])
        );
        assert_eq!(key().open(Kind::ListPage, &[b"/a-2"], &token), None);
        assert_eq!(key().open(Kind::ScanCursor, &[b"/a-1"], &token), None);
        let other = TokenKey::new(&[8; KEY_BYTES]);
        assert_eq!(other.open(Kind::ListPage, &[b"/a-1"], &token), None);
        // Context parts are length-prefixed: splitting them differently is another context.
        assert_eq!(key().open(Kind::ListPage, &[b"/a", b"-1"], &token), None);
    }

    #[test]
    fn every_bit_flip_truncation_and_extension_is_refused() {
        let token = key().seal(Kind::ListPage, &[b"ctx"], b"some cursor bytes");
        let bytes = token.as_bytes();
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut altered = bytes.to_vec();
                altered[i] ^= 1 << bit;
                let Ok(altered) = String::from_utf8(altered) else {
                    continue;
                };
                assert_eq!(key().open(Kind::ListPage, &[b"ctx"], &altered), None);
            }
        }
        for len in 0..bytes.len() {
            assert_eq!(key().open(Kind::ListPage, &[b"ctx"], &token[..len]), None);
        }
        for tail in ["A", "AA", "AAA", "AAAA", "_", "x-1"] {
            let extended = format!("{token}{tail}");
            assert_eq!(key().open(Kind::ListPage, &[b"ctx"], &extended), None);
        }
    }
}
