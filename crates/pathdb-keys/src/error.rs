//! Errors: every invalid key path names the rule it breaks and where.

use std::fmt;

/// A rule of the key path format (keypath-format.md) that an input broke.
///
/// Shared by the text parser, the binary decoder and the builder so that the same mistake reads
/// the same way wherever it is made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Rule {
    /// A key path needs at least one element.
    #[error("a key path needs at least one element")]
    EmptyPath,
    /// The text form starts with `/`.
    #[error("a key path starts with '/'")]
    MissingLeadingSlash,
    /// A namespace is 1..=64 bytes.
    #[error("a namespace cannot be empty")]
    EmptyNamespace,
    /// A namespace is at most 64 bytes.
    #[error("a namespace is at most 64 bytes, this one is {0}")]
    NamespaceTooLong(usize),
    /// A namespace starts with an ASCII letter or `_`.
    #[error("a namespace starts with an ASCII letter or '_', not {0:?}")]
    NamespaceStart(char),
    /// A namespace holds only ASCII letters, digits and `_`.
    #[error(
        "a namespace holds only ASCII letters, digits and '_', not {0:?} (use '-' before the id)"
    )]
    NamespaceChar(char),
    /// After `-` comes an id.
    #[error("an id cannot be empty (leave out the '-' for an element without id)")]
    EmptyId,
    /// Only the last element may omit its id.
    #[error("only the last element may omit its id")]
    MissingId,
    /// The group (first element) must have an id.
    #[error("the first element (the group) must have an id")]
    GroupWithoutId,
    /// Integers are written without leading zeros.
    #[error("an integer has no leading zeros (write a string id as %{0})")]
    LeadingZero(String),
    /// Zero has no sign.
    #[error("zero has no sign: write 0")]
    NegativeZero,
    /// Integers span -(2^64-1) ..= 2^64-1.
    #[error("an integer id lies in -(2^64-1) ..= 2^64-1")]
    IntegerOutOfRange,
    /// Bytes ids are `~` then unpadded, canonical base64url.
    #[error("bytes ids are '~' then unpadded base64url: {0}")]
    Base64(String),
    /// Bytes ids hold at least one byte.
    #[error("a bytes id holds at least one byte")]
    EmptyBytes,
    /// `%` escapes the character after it, so it cannot end an id.
    #[error("'%' must be followed by the character it escapes")]
    DanglingEscape,
    /// Strings cannot hold control characters.
    #[error("ids cannot hold control characters ({0:?})")]
    ControlCharacter(char),
    /// UUID ids have no descending form.
    #[error("UUID ids have no descending form (escape the first character for a string: !%...)")]
    DescendingUuid,
    /// `!!` is not a type; a descending string that starts with `!` escapes it.
    #[error("a descending string starting with '!' escapes it: !%!...")]
    DoubleDescending,

    // Binary-form rules.
    /// The binary form is segments, `0x00`, then one metadata varint per segment.
    #[error("the key ends before its metadata is complete")]
    Truncated,
    /// Metadata varints are minimal LEB128 of at most 10 bytes.
    #[error("a metadata varint is not canonical")]
    BadVarint,
    /// Type code 7 is reserved.
    #[error("segment type code {0} is reserved")]
    ReservedType(u8),
    /// The metadata lengths must account for the key exactly.
    #[error("the metadata lengths do not account for the key's bytes")]
    LengthMismatch,
    /// Segments are separated by `0x01` and end with `0x00`.
    #[error("expected the separator 0x{expected:02x}, found 0x{found:02x}")]
    Separator {
        /// The byte the layout requires here.
        expected: u8,
        /// The byte found.
        found: u8,
    },
    /// Namespaces are encoded as strings (type 0).
    #[error("a namespace segment must have type 0 (string), not {0}")]
    NamespaceType(u8),
    /// Segment bytes must be what the encoder produces for some value.
    #[error("segment is not canonical: {0}")]
    NonCanonical(&'static str),
    /// Strings are UTF-8.
    #[error("string segment is not valid UTF-8")]
    InvalidUtf8,
}

/// The text form of a key path broke a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// Byte offset into the input where the problem starts.
    pub offset: usize,
    /// What is wrong there.
    pub rule: Rule,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid key path at byte {}: {}", self.offset, self.rule)
    }
}

impl std::error::Error for ParseError {}

/// Bytes are not a canonical binary key path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// Byte offset into the encoded key where the problem was found.
    pub offset: usize,
    /// What is wrong there.
    pub rule: Rule,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid encoded key path at byte {}: {}",
            self.offset, self.rule
        )
    }
}

impl std::error::Error for DecodeError {}

/// A key path assembled in code broke a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError {
    /// Index of the offending element (0 = the group).
    pub element: usize,
    /// What is wrong with it.
    pub rule: Rule,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid key path element {}: {}",
            self.element, self.rule
        )
    }
}

impl std::error::Error for BuildError {}
