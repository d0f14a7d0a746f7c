//! Conditional requests (RFC 9110 section 13): `If-Match` and `If-None-Match` on items.
//!
//! An item's entity tag is its version, strong and quoted: `"3"`. Writes compare strongly, so a
//! weak tag (`W/"3"`) never satisfies `If-Match`; a `GET` with `If-None-Match` compares weakly.
//! A bare version (`If-Match: 3`) is still read as `"3"`: clients written before entity tags
//! were quoted send that.

use crate::error::ApiError;
use axum::http::{HeaderMap, HeaderName, header};
use pathdb_store::Condition;

/// One entity tag of a list.
#[derive(Clone, Debug, PartialEq, Eq)]
struct EntityTag {
    weak: bool,
    /// Between the quotes.
    opaque: String,
}

/// The value of `If-Match` or `If-None-Match`.
#[derive(Clone, Debug, PartialEq, Eq)]
enum TagList {
    /// `*`: any current representation.
    Any,
    /// One or more entity tags.
    Tags(Vec<EntityTag>),
}

/// Reads `*` or a comma-separated list of entity tags; `None` if the text is neither.
fn parse_tag_list(text: &str) -> Option<TagList> {
    let text = text.trim();
    if text == "*" {
        return Some(TagList::Any);
    }
    let mut tags = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            break;
        }
        let (weak, after) = match rest.strip_prefix("W/") {
            Some(after) => (true, after),
            None => (false, rest),
        };
        if let Some(quoted) = after.strip_prefix('"') {
            let end = quoted.find('"')?;
            tags.push(EntityTag {
                weak,
                opaque: quoted[..end].to_owned(),
            });
            rest = &quoted[end + 1..];
        } else {
            // A bare version, as older clients send it.
            let end = after.find([',', ' ', '\t']).unwrap_or(after.len());
            let bare = &after[..end];
            if weak || bare.is_empty() || !bare.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            tags.push(EntityTag {
                weak: false,
                opaque: bare.to_owned(),
            });
            rest = &after[end..];
        }
        // Tags are separated by commas (and optional whitespace), nothing else.
        let next = rest.trim_start_matches([' ', '\t']);
        if !next.is_empty() && !next.starts_with(',') {
            return None;
        }
    }
    if tags.is_empty() {
        None
    } else {
        Some(TagList::Tags(tags))
    }
}

fn header_list(headers: &HeaderMap, name: HeaderName) -> Result<Option<TagList>, ApiError> {
    let values: Vec<_> = headers.get_all(&name).iter().collect();
    if values.is_empty() {
        return Ok(None);
    }
    // Several header lines are one comma-separated list (RFC 9110 section 5.3).
    let mut joined = String::new();
    for value in values {
        let text = value.to_str().map_err(|_| {
            ApiError::bad_request(format!("{name} must be * or a list of entity tags"))
        })?;
        if !joined.is_empty() {
            joined.push(',');
        }
        joined.push_str(text);
    }
    match parse_tag_list(&joined) {
        Some(list) => Ok(Some(list)),
        None => Err(ApiError::bad_request(format!(
            "{name} must be * or a list of entity tags such as \"3\", got {joined:?}"
        ))),
    }
}

/// What a write must find before it applies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WritePrecondition {
    /// No condition.
    None,
    /// One condition the store checks atomically with the write.
    Store(Condition),
    /// `If-Match` with several versions: the item must be at one of them.
    AnyVersion(Vec<u64>),
    /// Can never hold: `If-Match` with no tag that can match (only weak or non-version tags),
    /// or `If-Match` together with `If-None-Match: *`.
    Never,
}

impl WritePrecondition {
    /// Resolves to a single store condition, given the item's current version. `Err` means the
    /// precondition already failed.
    pub fn resolve(
        self,
        current: impl FnOnce() -> Result<Option<u64>, ApiError>,
    ) -> Result<Option<Condition>, ApiError> {
        match self {
            WritePrecondition::None => Ok(None),
            WritePrecondition::Store(condition) => Ok(Some(condition)),
            WritePrecondition::Never => Err(precondition_failed(
                "the precondition can never hold: If-Match names no strong entity tag of a version (weak tags never match a write), or comes with If-None-Match: *",
            )),
            WritePrecondition::AnyVersion(versions) => match current()? {
                // The write is then conditional on the version just read, so a concurrent
                // change between the read and the write still fails it.
                Some(v) if versions.contains(&v) => Ok(Some(Condition::IfVersion(v))),
                Some(v) => Err(precondition_failed(format!(
                    "the item is at version {v}, not one of {versions:?}"
                ))),
                None => Err(precondition_failed("the item does not exist")),
            },
        }
    }
}

/// The precondition of a `DELETE` (of an item or a definition): [`write_precondition`]'s,
/// without `If-None-Match: *` (400: there is nothing to create).
pub fn for_delete(precondition: WritePrecondition) -> Result<WritePrecondition, ApiError> {
    if precondition == WritePrecondition::Store(Condition::MustNotExist) {
        return Err(ApiError::bad_request(
            "If-None-Match does not apply to DELETE",
        ));
    }
    Ok(precondition)
}

/// 412 `condition_failed`: an HTTP precondition (`If-Match`, `If-None-Match`) did not hold.
pub fn precondition_failed(message: impl Into<String>) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::PRECONDITION_FAILED,
        "condition_failed",
        message,
    )
}

/// The precondition of a `PUT` or `DELETE`: `If-None-Match: *` (must not exist), `If-Match: *`
/// (must exist) or `If-Match: "3"` / a list of versions.
///
/// # Errors
/// 400 for a malformed header, or `If-None-Match` other than `*`.
pub fn write_precondition(headers: &HeaderMap) -> Result<WritePrecondition, ApiError> {
    let if_match = header_list(headers, header::IF_MATCH)?;
    let if_none_match = header_list(headers, header::IF_NONE_MATCH)?;
    match (if_match, if_none_match) {
        // If-Match holds only for an existing item, If-None-Match: * only for a missing one:
        // together they always fail (RFC 9110 section 13.2.2 evaluates both).
        (Some(_), Some(TagList::Any)) => Ok(WritePrecondition::Never),
        (Some(_), Some(TagList::Tags(_))) => Err(ApiError::bad_request(
            "on a write, If-None-Match supports only *",
        )),
        (None, None) => Ok(WritePrecondition::None),
        (None, Some(TagList::Any)) => Ok(WritePrecondition::Store(Condition::MustNotExist)),
        (None, Some(TagList::Tags(_))) => Err(ApiError::bad_request(
            "on a write, If-None-Match supports only *",
        )),
        (Some(TagList::Any), None) => Ok(WritePrecondition::Store(Condition::MustExist)),
        (Some(TagList::Tags(tags)), None) => {
            // Strong comparison: weak tags, and tags that are no version, never match.
            let mut versions: Vec<u64> = tags
                .iter()
                .filter(|t| !t.weak)
                .filter_map(|t| t.opaque.parse().ok())
                .collect();
            versions.sort_unstable();
            versions.dedup();
            Ok(match versions.as_slice() {
                [] => WritePrecondition::Never,
                [v] => WritePrecondition::Store(Condition::IfVersion(*v)),
                _ => WritePrecondition::AnyVersion(versions),
            })
        }
    }
}

/// Whether a `GET`'s `If-None-Match` matches the item at `version` (weak comparison), so the
/// answer is 304 Not Modified.
///
/// # Errors
/// 400 for a malformed header.
pub fn not_modified(headers: &HeaderMap, version: u64) -> Result<bool, ApiError> {
    Ok(match header_list(headers, header::IF_NONE_MATCH)? {
        None => false,
        Some(TagList::Any) => true,
        Some(TagList::Tags(tags)) => {
            let current = version.to_string();
            tags.iter().any(|t| t.opaque == current)
        }
    })
}

/// The 304 Not Modified answer to a `GET` whose `If-None-Match` matches `version` (see
/// [`not_modified`]), carrying the validator and no body (RFC 9110 section 15.4.5); `None`
/// when the full answer is due.
///
/// # Errors
/// 400 for a malformed header.
pub fn not_modified_answer(
    headers: &HeaderMap,
    version: u64,
) -> Result<Option<axum::response::Response>, ApiError> {
    use axum::response::IntoResponse;
    if !not_modified(headers, version)? {
        return Ok(None);
    }
    let etag = axum::http::HeaderValue::from_str(&etag(version))
        .map_err(|_| ApiError::bad_request("unrepresentable version"))?;
    Ok(Some(
        (axum::http::StatusCode::NOT_MODIFIED, [(header::ETAG, etag)]).into_response(),
    ))
}

/// The entity tag of an item version: `"3"`.
pub fn etag(version: u64) -> String {
    // Not `format!`: on every answer of an item.
    let mut tag = String::with_capacity(22);
    tag.push('"');
    tag.push_str(itoa::Buffer::new().format(version));
    tag.push('"');
    tag
}

#[cfg(test)]
mod test;
