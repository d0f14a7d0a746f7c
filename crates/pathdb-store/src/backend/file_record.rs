//! A record's bytes in the embedded backend's table (and its journal, and the overlay of the
//! commits redb does not hold yet): a fixed header, then the value.

use super::{Record, RecordView};
use crate::model::error::StorageError;

/// `[version u64][created i64][modified i64][has_expiry u8][expires i64][value...]`, little endian.
const HEADER: usize = 8 + 8 + 8 + 1 + 8;

pub(crate) fn encode_record(r: &Record) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + r.value.len());
    out.extend_from_slice(&r.version.to_le_bytes());
    out.extend_from_slice(&r.created_at.to_le_bytes());
    out.extend_from_slice(&r.modified_at.to_le_bytes());
    out.push(u8::from(r.expires_at.is_some()));
    out.extend_from_slice(&r.expires_at.unwrap_or(0).to_le_bytes());
    out.extend_from_slice(&r.value);
    out
}

pub(super) fn field(bytes: &[u8], at: usize) -> [u8; 8] {
    let mut f = [0; 8];
    f.copy_from_slice(&bytes[at..at + 8]);
    f
}

pub(super) fn decode_version(bytes: &[u8]) -> Result<u64, StorageError> {
    if bytes.len() < HEADER {
        return Err(StorageError::msg("corrupt record: too short"));
    }
    Ok(u64::from_le_bytes(field(bytes, 0)))
}

pub(crate) fn decode_record(bytes: &[u8]) -> Result<Record, StorageError> {
    view_record(bytes).map(|r| r.to_record())
}

pub(super) fn view_record(bytes: &[u8]) -> Result<RecordView<'_>, StorageError> {
    let version = decode_version(bytes)?;
    Ok(RecordView {
        version,
        created_at: i64::from_le_bytes(field(bytes, 8)),
        modified_at: i64::from_le_bytes(field(bytes, 16)),
        expires_at: match bytes[24] {
            0 => None,
            1 => Some(i64::from_le_bytes(field(bytes, 25))),
            _ => return Err(StorageError::msg("corrupt record: bad expiry flag")),
        },
        value: &bytes[HEADER..],
    })
}
