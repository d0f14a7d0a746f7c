//! `--filter` (docs/filters.md): compiled before anything is read, on a local file and before
//! a request to a server alike, so that a filter that does not compile fails the same way both
//! ways: exit status 2, the filter shown with a caret under where it went wrong.

use crate::exit::Failure;
use anyhow::Result;
use pathdb_store::Filter;

/// Compiles `--filter`'s text.
pub fn compile(text: Option<&str>) -> Result<Option<Filter>> {
    text.map(|text| Filter::compile(text).map_err(|e| explain(e.into(), text)))
        .transpose()
}

/// `result`, where an invalid-filter error of the store or of the server (which compiles the
/// same filter) names `filter` as [`Failure::InvalidFilter`] does.
pub fn checked<T>(result: Result<T>, filter: Option<&Filter>) -> Result<T> {
    match filter {
        Some(filter) => result.map_err(|e| explain(e, filter.source())),
        None => result,
    }
}

/// An invalid-filter error about `text` as [`Failure::InvalidFilter`]; any other error as it is.
fn explain(error: anyhow::Error, text: &str) -> anyhow::Error {
    let found = error
        .chain()
        .find_map(|cause| match cause.downcast_ref::<pathdb_store::Error>() {
            Some(pathdb_store::Error::InvalidFilter { position, reason }) => {
                Some((*position, reason.clone()))
            }
            _ => None,
        });
    match found {
        Some((position, reason)) => Failure::InvalidFilter {
            filter: text.to_owned(),
            position,
            reason,
        }
        .into(),
        None => error,
    }
}
