//! The text form (keypath-format.md §1): `/ns-id/ns-id/...`, with `%` escapes, `~` base64url
//! bytes and `!` descending ids. Formatting emits the one canonical spelling; parsing accepts any
//! valid escaping and names the byte offset and rule of the first problem.

use crate::id::{is_forbidden_control, validate_string};
use crate::{Element, Id, Int, KeyPath, Namespace, ParseError, Rule, namespace};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use std::fmt;
use uuid::Uuid;

fn err(offset: usize, rule: Rule) -> ParseError {
    ParseError { offset, rule }
}

/// Parses the text form of a key path.
pub(crate) fn parse(text: &str) -> Result<KeyPath, ParseError> {
    let elements = parse_elements(text)?;
    if elements[0].id().is_none() {
        return Err(err(1, Rule::GroupWithoutId));
    }
    Ok(KeyPath::from_checked(elements))
}

/// Parses `/ns[-id]...` into elements, checking every rule but the group's id.
fn parse_elements(text: &str) -> Result<Vec<Element>, ParseError> {
    let bytes = text.as_bytes();
    if bytes.is_empty() {
        return Err(err(0, Rule::EmptyPath));
    }
    if bytes[0] != b'/' {
        return Err(err(0, Rule::MissingLeadingSlash));
    }
    let mut elements = Vec::new();
    let mut pos = 1;
    loop {
        let ns_start = pos;
        while pos < bytes.len() && (bytes[pos].is_ascii_alphanumeric() || bytes[pos] == b'_') {
            pos += 1;
        }
        let ns = &text[ns_start..pos];
        match bytes.get(pos) {
            None | Some(b'/') | Some(b'-') => {}
            Some(_) => {
                let c = text[pos..].chars().next().unwrap_or('\u{fffd}');
                return Err(err(
                    pos,
                    if ns.is_empty() {
                        Rule::NamespaceStart(c)
                    } else {
                        Rule::NamespaceChar(c)
                    },
                ));
            }
        }
        namespace::validate(ns).map_err(|(at, rule)| err(ns_start + at, rule))?;
        let namespace = Namespace::new_unchecked(ns);
        let id = if bytes.get(pos) == Some(&b'-') {
            let id_start = pos + 1;
            pos = id_end(bytes, id_start);
            Some(parse_id(&text[id_start..pos], id_start)?)
        } else {
            None
        };
        elements.push(Element::new_unchecked(namespace, id));
        if pos == bytes.len() {
            return Ok(elements);
        }
        // At a '/': another element follows, so this one needs an id.
        if elements.last().is_some_and(|e| e.id().is_none()) {
            return Err(err(pos, Rule::MissingId));
        }
        pos += 1;
    }
}

/// The end of an id starting at `start`: the next `/` not escaped by `%`.
fn id_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start;
    while i < bytes.len() {
        match bytes[i] {
            b'/' => return i,
            // Skip the escaped character; '/' is ASCII, so skipping one byte suffices (a UTF-8
            // continuation byte is never '/').
            b'%' => i += 2,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// Parses an id's text; `at` is its byte offset in the whole path.
fn parse_id(raw: &str, at: usize) -> Result<Id, ParseError> {
    if raw.is_empty() {
        return Err(err(at, Rule::EmptyId));
    }
    if let Some(rest) = raw.strip_prefix('~') {
        return parse_bytes(rest, at + 1).map(Id::Bytes);
    }
    if let Some(rest) = raw.strip_prefix('!') {
        let at = at + 1;
        return if rest.is_empty() {
            Err(err(at, Rule::EmptyId))
        } else if let Some(b64) = rest.strip_prefix('~') {
            parse_bytes(b64, at + 1).map(Id::DescBytes)
        } else if rest.starts_with('!') {
            Err(err(at, Rule::DoubleDescending))
        } else if is_int_shaped(rest) {
            parse_int(rest, at).map(Id::DescInt)
        } else if is_uuid_shaped(rest) {
            Err(err(at, Rule::DescendingUuid))
        } else {
            unescape(rest, at).map(Id::DescString)
        };
    }
    if is_int_shaped(raw) {
        return parse_int(raw, at).map(Id::Int);
    }
    if is_uuid_shaped(raw) {
        // Shape checked: 32 hex digits and four hyphens, which `try_parse` accepts.
        return Uuid::try_parse(raw)
            .map(Id::Uuid)
            .map_err(|_| err(at, Rule::NonCanonical("UUID")));
    }
    unescape(raw, at).map(Id::String)
}

/// `-?[0-9]+`: text that reads as an integer (and so, as a string, needs an escape).
fn is_int_shaped(s: &str) -> bool {
    let digits = s.strip_prefix('-').unwrap_or(s);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// `8-4-4-4-12` hex digits, either case.
fn is_uuid_shaped(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, &c)| match i {
            8 | 13 | 18 | 23 => c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

fn parse_int(s: &str, at: usize) -> Result<Int, ParseError> {
    let (negative, digits) = match s.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, s),
    };
    let digits_at = at + usize::from(negative);
    if digits.len() > 1 && digits.starts_with('0') {
        return Err(err(digits_at, Rule::LeadingZero(s.to_owned())));
    }
    if negative && digits == "0" {
        return Err(err(at, Rule::NegativeZero));
    }
    let magnitude: u64 = digits
        .parse()
        .map_err(|_| err(digits_at, Rule::IntegerOutOfRange))?;
    Ok(Int::from_sign_magnitude(negative, magnitude))
}

fn parse_bytes(b64: &str, at: usize) -> Result<Vec<u8>, ParseError> {
    if b64.is_empty() {
        return Err(err(at, Rule::EmptyBytes));
    }
    URL_SAFE_NO_PAD.decode(b64).map_err(|e| {
        let offset = match e {
            base64::DecodeError::InvalidByte(i, _)
            | base64::DecodeError::InvalidLastSymbol(i, _) => at + i,
            _ => at,
        };
        err(offset, Rule::Base64(e.to_string()))
    })
}

/// Removes `%` escapes from a string id and checks the string rules.
fn unescape(raw: &str, at: usize) -> Result<String, ParseError> {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.char_indices();
    while let Some((i, c)) = chars.next() {
        let (i, c) = if c == '%' {
            chars.next().ok_or(err(at + i, Rule::DanglingEscape))?
        } else {
            (i, c)
        };
        if is_forbidden_control(c) {
            return Err(err(at + i, Rule::ControlCharacter(c)));
        }
        out.push(c);
    }
    validate_string(&out).map_err(|(_, rule)| err(at, rule))?;
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Formatting

/// Writes the canonical text form.
pub(crate) fn format_elements(elements: &[Element], f: &mut impl fmt::Write) -> fmt::Result {
    for e in elements {
        f.write_char('/')?;
        f.write_str(e.namespace().as_str())?;
        if let Some(id) = e.id() {
            f.write_char('-')?;
            format_id(id, f)?;
        }
    }
    Ok(())
}

/// Writes an id's canonical text (without the leading `-`).
pub fn format_id(id: &Id, f: &mut impl fmt::Write) -> fmt::Result {
    match id {
        // itoa, not `write!`: a path's text is written on every answer of an item.
        Id::Int(v) => f.write_str(itoa::Buffer::new().format(v.get())),
        Id::Uuid(u) => write!(f, "{}", u.hyphenated()),
        Id::Bytes(b) => write!(f, "~{}", URL_SAFE_NO_PAD.encode(b)),
        Id::String(s) => escape(s, f),
        Id::DescInt(v) => {
            f.write_char('!')?;
            f.write_str(itoa::Buffer::new().format(v.get()))
        }
        Id::DescString(s) => {
            f.write_char('!')?;
            escape(s, f)
        }
        Id::DescBytes(b) => write!(f, "!~{}", URL_SAFE_NO_PAD.encode(b)),
    }
}

/// The shortest escaping: `/` and `%` always, and the first character when the string would
/// otherwise read as another type (integer, UUID, `~` bytes, `!` descending).
fn escape(s: &str, f: &mut impl fmt::Write) -> fmt::Result {
    let escape_first = s.starts_with(['~', '!']) || is_int_shaped(s) || is_uuid_shaped(s);
    // Written in runs between escapes, not a character at a time: each write through a
    // `Formatter` is a call through its writer.
    let mut run = 0;
    for (i, c) in s.char_indices() {
        if c == '/' || c == '%' || (i == 0 && escape_first) {
            f.write_str(&s[run..i])?;
            f.write_char('%')?;
            run = i;
        }
    }
    f.write_str(&s[run..])
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        format_elements(self.elements(), f)
    }
}

impl KeyPath {
    /// Writes the canonical text form (what `Display` writes) into `out`, straight, not
    /// through a `Formatter` (whose every write is a call through its writer): for code that
    /// writes paths on every request, as an item's answer and a put's change log entry do.
    ///
    /// # Errors
    /// Only those of `out` (writing into a `String` never fails).
    pub fn write_text(&self, out: &mut impl fmt::Write) -> fmt::Result {
        format_elements(self.elements(), out)
    }
}

impl std::str::FromStr for KeyPath {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<KeyPath, ParseError> {
        parse(s)
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        format_id(self, f)
    }
}
