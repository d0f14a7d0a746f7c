//! Issued access tokens: a role, the variables its rules are bound to, an optional expiry, kept
//! at `00 09` + id (encoding/layout.rs). The secret is shown once, when the token is made, and
//! only its SHA-256 is stored: a copy of the database hands out no working token.
//!
//! A token reads `pdb_<id>_<secret>`: the id (20 hex digits) finds the record in one point read,
//! the secret is 32 random bytes (base64url). A secret this long needs no slow hash: SHA-256 of
//! it cannot be reversed, and comparing hashes tells a guesser nothing about the secret.

use crate::backend::{Direction, Reader, Record};
use crate::encoding::layout;
use crate::model::error::{Error, StorageError};
use crate::model::item::Timestamp;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// What begins every issued token.
const PREFIX: &str = "pdb_";
/// Bytes of a token id.
const ID_BYTES: usize = 10;
/// Bytes of a token's secret.
const SECRET_BYTES: usize = 32;
/// Most variables of one token.
const MAX_VARS: usize = 32;
/// The longest description.
const MAX_DESCRIPTION_BYTES: usize = 1024;

/// What a new token is for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NewToken {
    /// The role whose rules it has.
    pub role: String,
    /// The values of the rules' variables (`{"team": 7}`): integers or strings.
    pub vars: Map<String, Value>,
    /// When it stops working; `None`: when revoked.
    pub expires_at: Option<Timestamp>,
    /// For people.
    pub description: Option<String>,
}

/// A token as listed: everything but its secret.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenInfo {
    /// Its id: the part of the token that names it, safe to show and log.
    pub id: String,
    /// Its role.
    pub role: String,
    /// The values of its role's variables.
    pub vars: Map<String, Value>,
    /// For people.
    pub description: Option<String>,
    /// When it was made.
    pub created_at: Timestamp,
    /// When it stops working.
    pub expires_at: Option<Timestamp>,
    /// When it was last presented, to the minute (`None`: never).
    pub last_used_at: Option<Timestamp>,
}

impl TokenInfo {
    /// Whether it has expired at `now`.
    pub fn expired(&self, now: Timestamp) -> bool {
        self.expires_at.is_some_and(|t| t.0 <= now.0)
    }
}

/// A token's stored value.
#[derive(Serialize, Deserialize)]
struct Stored {
    role: String,
    #[serde(default)]
    vars: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_used_at: Option<i64>,
    /// SHA-256 of the whole token, hex.
    hash: String,
}

/// [`Error::InvalidRequest`] unless `token` can be stored: variables that are ids (integers or
/// strings), a description of a sensible size.
///
/// # Errors
/// As above.
pub fn check(token: &NewToken) -> Result<(), Error> {
    if token.vars.len() > MAX_VARS {
        return Err(Error::InvalidRequest(format!(
            "a token has at most {MAX_VARS} variables"
        )));
    }
    for (name, value) in &token.vars {
        if crate::access::rules::id_of_value(value).is_none() {
            return Err(Error::InvalidRequest(format!(
                "variable {name:?}: its value is an id, an integer or a string that is one"
            )));
        }
    }
    if token
        .description
        .as_ref()
        .is_some_and(|d| d.len() > MAX_DESCRIPTION_BYTES)
    {
        return Err(Error::InvalidRequest(format!(
            "a token's description takes at most {MAX_DESCRIPTION_BYTES} bytes"
        )));
    }
    Ok(())
}

/// A new token's id, the whole token, and its stored value.
pub(crate) fn issue(token: &NewToken) -> Result<(String, String, Vec<u8>), Error> {
    let mut bytes = [0u8; ID_BYTES + SECRET_BYTES];
    getrandom::fill(&mut bytes)
        .map_err(|e| StorageError::msg(format!("no random bytes for a token: {e}")))?;
    let id = hex::encode(&bytes[..ID_BYTES]);
    let secret = URL_SAFE_NO_PAD.encode(&bytes[ID_BYTES..]);
    let whole = format!("{PREFIX}{id}_{secret}");
    let stored = Stored {
        role: token.role.clone(),
        vars: token.vars.clone(),
        description: token.description.clone(),
        expires_at: token.expires_at.map(|t| t.0),
        last_used_at: None,
        hash: hash(&whole),
    };
    Ok((id, whole, to_value(&stored)))
}

fn to_value(stored: &Stored) -> Vec<u8> {
    // Strings, numbers and JSON values always serialize.
    serde_json::to_vec(stored).unwrap_or_default()
}

fn hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// The id of a presented token that has the form of an issued one.
///
/// Only the form is looked at (the prefix, the `_` after the id's 20 characters, a secret): it
/// runs on every request; an id that is not hex is simply never found ([`find`] looks).
pub fn id_of(token: &str) -> Option<&str> {
    let rest = token.strip_prefix(PREFIX)?;
    let underscore = rest.as_bytes().get(2 * ID_BYTES) == Some(&b'_');
    if !underscore || rest.len() <= 2 * ID_BYTES + 1 {
        return None;
    }
    rest.get(..2 * ID_BYTES)
}

fn parse(record: &Record) -> Result<Option<Stored>, Error> {
    if record.value.is_empty() {
        return Ok(None);
    }
    serde_json::from_slice(&record.value)
        .map(Some)
        .map_err(|e| StorageError::new("corrupt access token record", e).into())
}

fn info(id: &str, record: &Record, stored: Stored) -> TokenInfo {
    TokenInfo {
        id: id.to_owned(),
        role: stored.role,
        vars: stored.vars,
        description: stored.description,
        created_at: Timestamp(record.created_at),
        expires_at: stored.expires_at.map(Timestamp),
        last_used_at: stored.last_used_at.map(Timestamp),
    }
}

/// The token stored in `record` (`None`: revoked, a tombstone).
pub(crate) fn from_record(id: &str, record: &Record) -> Result<Option<TokenInfo>, Error> {
    Ok(parse(record)?.map(|stored| info(id, record, stored)))
}

/// The token `id` (`None`: none, or revoked).
///
/// # Errors
/// Storage failures.
pub(crate) fn read<R: Reader + ?Sized>(reader: &R, id: &str) -> Result<Option<TokenInfo>, Error> {
    match reader.get(&layout::access_token_key(id))? {
        Some(record) => from_record(id, &record),
        None => Ok(None),
    }
}

/// The token whose whole text is `presented`, if one is stored under its id with its hash.
/// (Expiry is the caller's to judge: see [`TokenInfo::expired`].)
///
/// # Errors
/// Storage failures.
pub(crate) fn find<R: Reader + ?Sized>(
    reader: &R,
    presented: &str,
) -> Result<Option<TokenInfo>, Error> {
    let Some(id) = id_of(presented).filter(|id| id.bytes().all(|b| b.is_ascii_hexdigit())) else {
        return Ok(None);
    };
    let Some(record) = reader.get(&layout::access_token_key(id))? else {
        return Ok(None);
    };
    let Some(stored) = parse(&record)? else {
        return Ok(None);
    };
    // Equal hashes: the bytes compared are a hash's, so their timing tells nothing of a secret.
    if stored.hash != hash(presented) {
        return Ok(None);
    }
    Ok(Some(info(id, &record, stored)))
}

/// The stored value of `record`'s token with its last use set to `minute`, if that is later than
/// the one stored (`None`: nothing to write).
pub(crate) fn touched(record: &Record, minute: Timestamp) -> Result<Option<Vec<u8>>, Error> {
    let Some(mut stored) = parse(record)? else {
        return Ok(None);
    };
    if stored.last_used_at.is_some_and(|t| t >= minute.0) {
        return Ok(None);
    }
    stored.last_used_at = Some(minute.0);
    Ok(Some(to_value(&stored)))
}

/// Every live token, by id.
///
/// # Errors
/// Storage failures.
pub(crate) fn list<R: Reader + ?Sized>(reader: &R) -> Result<Vec<TokenInfo>, Error> {
    let mut out = Vec::new();
    for (sort, record) in reader.scan(
        layout::SYSTEM_PARTITION,
        &layout::access_token_range(),
        Direction::Forward,
        usize::MAX,
    )? {
        let id = String::from_utf8_lossy(&sort[1..]).into_owned();
        out.extend(from_record(&id, &record)?);
    }
    Ok(out)
}
