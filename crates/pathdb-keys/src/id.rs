//! Ids: the typed values that name one element among its siblings (`7` in `/user-7`).

use crate::{Int, Rule};
use uuid::Uuid;

/// An element's id. Its variant is its type; the type is part of the key and of its order.
///
/// Construct through the `From` impls (`7`, `"name"`, a [`Uuid`], [`Desc`]`(1500)`) or the
/// variants; [`crate::KeyPathBuilder`] validates the contents (strings non-empty and free of
/// control characters, bytes non-empty).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Id {
    /// An integer, sorted numerically.
    Int(Int),
    /// A UUID, sorted by its 16 bytes.
    Uuid(Uuid),
    /// Arbitrary bytes (1 or more), sorted as unsigned bytes.
    Bytes(Vec<u8>),
    /// A UTF-8 string without control characters, sorted by its bytes.
    String(String),
    /// An integer sorted in descending order.
    DescInt(Int),
    /// A string sorted in descending order.
    DescString(String),
    /// Bytes sorted in descending order.
    DescBytes(Vec<u8>),
}

/// The type code of a segment in the binary form's metadata (keypath-format.md §2).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[repr(u8)]
pub enum SegmentType {
    /// Code 0: a string; every namespace has this type.
    String = 0,
    /// Code 1: bytes.
    Bytes = 1,
    /// Code 2: integer.
    Int = 2,
    /// Code 3: UUID.
    Uuid = 3,
    /// Code 4: descending integer.
    DescInt = 4,
    /// Code 5: descending string.
    DescString = 5,
    /// Code 6: descending bytes.
    DescBytes = 6,
}

impl SegmentType {
    /// The type for a metadata type code; code 7 is reserved.
    pub fn from_code(code: u8) -> Option<SegmentType> {
        Some(match code {
            0 => SegmentType::String,
            1 => SegmentType::Bytes,
            2 => SegmentType::Int,
            3 => SegmentType::Uuid,
            4 => SegmentType::DescInt,
            5 => SegmentType::DescString,
            6 => SegmentType::DescBytes,
            _ => return None,
        })
    }

    /// A short lowercase name, as `pathdb key explain` prints it.
    pub fn name(self) -> &'static str {
        match self {
            SegmentType::String => "string",
            SegmentType::Bytes => "bytes",
            SegmentType::Int => "integer",
            SegmentType::Uuid => "uuid",
            SegmentType::DescInt => "desc integer",
            SegmentType::DescString => "desc string",
            SegmentType::DescBytes => "desc bytes",
        }
    }
}

impl Id {
    /// The segment type this id encodes as.
    pub fn segment_type(&self) -> SegmentType {
        match self {
            Id::Int(_) => SegmentType::Int,
            Id::Uuid(_) => SegmentType::Uuid,
            Id::Bytes(_) => SegmentType::Bytes,
            Id::String(_) => SegmentType::String,
            Id::DescInt(_) => SegmentType::DescInt,
            Id::DescString(_) => SegmentType::DescString,
            Id::DescBytes(_) => SegmentType::DescBytes,
        }
    }

    /// Whether this id sorts in descending order.
    pub fn is_descending(&self) -> bool {
        matches!(self, Id::DescInt(_) | Id::DescString(_) | Id::DescBytes(_))
    }

    /// Checks the content rules of the id's type.
    ///
    /// # Errors
    /// An empty string or bytes id, or a control character in a string.
    pub fn validate(&self) -> Result<(), Rule> {
        match self {
            Id::Int(_) | Id::DescInt(_) | Id::Uuid(_) => Ok(()),
            Id::Bytes(b) | Id::DescBytes(b) => {
                if b.is_empty() {
                    Err(Rule::EmptyBytes)
                } else {
                    Ok(())
                }
            }
            Id::String(s) | Id::DescString(s) => validate_string(s).map_err(|(_, rule)| rule),
        }
    }
}

/// String id rules: non-empty (an empty segment would sort among integer bytes, see
/// docs/key-format.md), no control characters. Returns the byte offset of a violation.
pub(crate) fn validate_string(s: &str) -> Result<(), (usize, Rule)> {
    if s.is_empty() {
        return Err((0, Rule::EmptyId));
    }
    // The forbidden characters are all ASCII, so a byte scan finds them (UTF-8 continuation
    // and lead bytes are >= 0x80 and never match). Most strings have none: test 8 bytes at a
    // time first, and look for the offset only when there is one.
    if !has_control_byte(s.as_bytes()) {
        return Ok(());
    }
    match s.bytes().position(is_control_byte) {
        Some(i) => Err((i, Rule::ControlCharacter(char::from(s.as_bytes()[i])))),
        None => Ok(()),
    }
}

fn is_control_byte(b: u8) -> bool {
    b < 0x20 || b == 0x7f
}

/// Whether any byte is `< 0x20` or `0x7f`, 8 bytes at a time: a byte below 0x20 makes
/// `(w - 0x20 per byte) & !w` set that byte's high bit (exact for a threshold up to 0x80), and a
/// `0x7f` is a zero byte of `w ^ 0x7f..`, found the same way. Borrows between bytes can set
/// high bits above the first hit, never without one, so the test is exact.
pub(crate) fn has_control_byte(bytes: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut chunks = bytes.chunks_exact(8);
    let mut hits = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        let del = w ^ (ONES * 0x7f);
        hits |= (w.wrapping_sub(ONES * 0x20) & !w & HIGH) | (del.wrapping_sub(ONES) & !del & HIGH);
    }
    hits != 0 || chunks.remainder().iter().any(|&b| is_control_byte(b))
}

/// The spec forbids U+0000..U+001F and U+007F. Not `char::is_control`: that also covers C1
/// (U+0080..U+009F), which the spec allows.
pub(crate) fn is_forbidden_control(c: char) -> bool {
    (c as u32) < 0x20 || c as u32 == 0x7f
}

/// Wraps an id value to make it sort in descending order: `push("score", Desc(1500))`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Desc<T>(pub T);

macro_rules! id_from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Id {
            fn from(v: $t) -> Id {
                Id::Int(Int::from(v))
            }
        }
        impl From<Desc<$t>> for Id {
            fn from(v: Desc<$t>) -> Id {
                Id::DescInt(Int::from(v.0))
            }
        }
    )*};
}
id_from_int!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize);

impl From<Int> for Id {
    fn from(v: Int) -> Id {
        Id::Int(v)
    }
}
impl From<Desc<Int>> for Id {
    fn from(v: Desc<Int>) -> Id {
        Id::DescInt(v.0)
    }
}
impl From<Uuid> for Id {
    fn from(v: Uuid) -> Id {
        Id::Uuid(v)
    }
}
impl From<&str> for Id {
    fn from(v: &str) -> Id {
        Id::String(v.to_owned())
    }
}
impl From<String> for Id {
    fn from(v: String) -> Id {
        Id::String(v)
    }
}
impl From<Desc<&str>> for Id {
    fn from(v: Desc<&str>) -> Id {
        Id::DescString(v.0.to_owned())
    }
}
impl From<Desc<String>> for Id {
    fn from(v: Desc<String>) -> Id {
        Id::DescString(v.0)
    }
}
impl From<&[u8]> for Id {
    fn from(v: &[u8]) -> Id {
        Id::Bytes(v.to_vec())
    }
}
impl From<Vec<u8>> for Id {
    fn from(v: Vec<u8>) -> Id {
        Id::Bytes(v)
    }
}
impl From<Desc<&[u8]>> for Id {
    fn from(v: Desc<&[u8]>) -> Id {
        Id::DescBytes(v.0.to_vec())
    }
}
impl From<Desc<Vec<u8>>> for Id {
    fn from(v: Desc<Vec<u8>>) -> Id {
        Id::DescBytes(v.0)
    }
}
