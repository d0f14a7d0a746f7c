//! Filters and projections (docs/filters.md): which items a listing, a feed or a transaction's
//! listing check keeps, and which members of a value a read sends.
//!
//! A filter is a [CEL](https://cel.dev) expression over one item: `value` (its JSON value),
//! `path` (the canonical text of where it is listed), `ids` (each namespace of that path to its
//! id), `version`, `created_at` and `modified_at` (microseconds). An item matches when the
//! expression is `true`; an error (a missing member, a type mismatch) is never a match.
//!
//! This layer knows items only as [`Subject`]s: it reads nothing and writes nothing.

/// The `visit_*` methods of a serde visitor whose `Value` is an `Option`, for every JSON value
/// but an object: each answers `Ok(None)` (skipping an array's elements unread). The visitors
/// that read only some members of an object use it (eval.rs, fields.rs).
macro_rules! not_an_object {
    () => {
        fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            Ok(None)
        }
    };
}

mod compile;
mod eval;
mod fields;

pub use compile::{Filter, MAX_FILTER_BYTES, MAX_FILTER_DEPTH};
pub use eval::Subject;
pub use fields::{Fields, MAX_FIELDS};

use pathdb_keys::KeyPath;
use std::sync::Arc;

/// Whether the caller may read a path: a filter must not decide on an item its caller may not
/// read (a listing, feed or check that would evaluate one fails with
/// [`Error::Unreadable`](crate::Error::Unreadable) instead).
#[derive(Clone)]
pub struct Readable(pub Arc<dyn Fn(&KeyPath) -> bool + Send + Sync>);

impl std::fmt::Debug for Readable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Readable(..)")
    }
}

impl PartialEq for Readable {
    fn eq(&self, other: &Readable) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Readable {}
