//! The schema version an item's value was written at (docs/migrations.md): an item written
//! into a namespace whose definition versions have migration steps stores, before its JSON
//! text, the mark `0x01` and the definition's version as an unsigned LEB128 number. JSON text
//! never starts with a byte below `0x20`, and an alias record's value starts with `0x00`
//! (encoding/alias.rs), so the first byte tells the three apart. A value without the mark was
//! written before any step existed (where the namespace had no definition, or none with
//! steps, or by a build before this one): it is at version 0, before every migration step.

/// The first byte of a stamped value.
const STAMP_MARK: u8 = 0x01;
/// The longest LEB128 form of a `u64`.
const MAX_VARINT: usize = 10;

/// An item's stored value: `json` at definition version `version` (0: no stamp).
pub(crate) fn stamped(version: u64, json: &str) -> Vec<u8> {
    if version == 0 {
        return json.as_bytes().to_vec();
    }
    let mut out = Vec::with_capacity(1 + MAX_VARINT + json.len());
    out.push(STAMP_MARK);
    let mut rest = version;
    loop {
        let byte = (rest & 0x7f) as u8;
        rest >>= 7;
        if rest == 0 {
            out.push(byte);
            break;
        }
        out.push(byte | 0x80);
    }
    out.extend_from_slice(json.as_bytes());
    out
}

/// The definition version of a stored item value (0 without a stamp) and its JSON text;
/// `None` for a stamp that does not end within ten bytes (a corrupt record).
pub(crate) fn split(value: &[u8]) -> Option<(u64, &[u8])> {
    let Some(rest) = value.strip_prefix(&[STAMP_MARK]) else {
        return Some((0, value));
    };
    let mut version = 0u64;
    for (i, byte) in rest.iter().take(MAX_VARINT).enumerate() {
        version |= u64::from(byte & 0x7f).checked_shl(7 * i as u32)?;
        if byte & 0x80 == 0 {
            return Some((version, &rest[i + 1..]));
        }
    }
    None
}

/// [`split`] as the store reads a record: a corrupt stamp is a storage error.
pub(crate) fn split_stored(value: &[u8]) -> Result<(u64, &[u8]), crate::model::error::Error> {
    split(value).ok_or_else(|| {
        crate::model::error::StorageError::msg("corrupt schema version stamp in an item record")
            .into()
    })
}

/// The JSON text of a stored item value, stamped or not (corrupt stamps give the bytes as they
/// are, which then fail to parse as JSON where they are read).
pub(crate) fn json_of(value: &[u8]) -> &[u8] {
    split(value).map_or(value, |(_, json)| json)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn unstamped_values_are_version_zero() {
        assert_eq!(split(b"{\"a\":1}"), Some((0, &b"{\"a\":1}"[..])));
        assert_eq!(stamped(0, "[]"), b"[]".to_vec());
    }

    #[test]
    fn a_stamp_that_never_ends_is_corrupt() {
        assert_eq!(split(&[STAMP_MARK, 0x80, 0x80]), None);
        let mut long = vec![STAMP_MARK];
        long.extend_from_slice(&[0xff; 11]);
        assert_eq!(split(&long), None);
    }

    proptest! {
        #[test]
        fn stamps_round_trip(version in 1u64.., json in "[\\[\\]{}\"a-z0-9,:]{0,40}") {
            let value = stamped(version, &json);
            prop_assert_eq!(value[0], STAMP_MARK);
            prop_assert_eq!(split(&value), Some((version, json.as_bytes())));
            prop_assert_eq!(json_of(&value), json.as_bytes());
        }
    }
}
