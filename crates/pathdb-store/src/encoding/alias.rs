//! The alias record's format: what a key holds when it is an alias of an item (docs/aliases.md).
//! An item's value is JSON text, never empty and never starting with a 0 byte, so the first byte
//! tells the two apart.

use crate::model::error::{Error, StorageError};
use pathdb_keys::KeyPath;

/// The first byte of an alias record's value.
const ALIAS_MARK: u8 = 0x00;

/// An alias record's value: the mark, the template's length and text, the item's encoded path.
pub(crate) fn alias_value(template: &str, item: &KeyPath) -> Vec<u8> {
    let encoded = item.encode();
    let mut out = Vec::with_capacity(3 + template.len() + encoded.len());
    out.push(ALIAS_MARK);
    // Templates are short (checked when defined); u16 is plenty.
    out.extend_from_slice(&(template.len() as u16).to_be_bytes());
    out.extend_from_slice(template.as_bytes());
    out.extend_from_slice(&encoded);
    out
}

/// Whether a stored value is an alias record's.
pub(crate) fn is_alias(value: &[u8]) -> bool {
    value.first() == Some(&ALIAS_MARK)
}

/// What an alias record holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AliasOf {
    /// The template that made it.
    pub(crate) template: String,
    /// The item's path.
    pub(crate) item: KeyPath,
}

/// The template and item of an alias record's value (`None`: not an alias record).
pub(crate) fn parse_alias(value: &[u8]) -> Result<Option<AliasOf>, Error> {
    let Some(rest) = value.strip_prefix(&[ALIAS_MARK]) else {
        return Ok(None);
    };
    let corrupt = || Error::Storage(StorageError::msg("corrupt alias record"));
    let len = usize::from(u16::from_be_bytes(
        rest.get(..2)
            .ok_or_else(corrupt)?
            .try_into()
            .map_err(|_| corrupt())?,
    ));
    let template = std::str::from_utf8(rest.get(2..2 + len).ok_or_else(corrupt)?)
        .map_err(|_| corrupt())?
        .to_owned();
    let item = KeyPath::decode(rest.get(2 + len..).ok_or_else(corrupt)?).map_err(|_| corrupt())?;
    Ok(Some(AliasOf { template, item }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(s: &str) -> KeyPath {
        s.parse().unwrap()
    }

    #[test]
    fn alias_records_round_trip_and_are_never_json() {
        let item = path("/user-4/post-9");
        let value = alias_value("/title-{title}", &item);
        assert!(is_alias(&value));
        let of = parse_alias(&value).unwrap().unwrap();
        assert_eq!((of.template.as_str(), of.item), ("/title-{title}", item));
        assert_eq!(parse_alias(br#"{"a":1}"#).unwrap(), None);
    }
}
