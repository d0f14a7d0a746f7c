//! Filters and projections (docs/filters.md): which items a listing, a feed or a transaction's
//! listing check keeps, and which members of a value a read sends.
//!
//! A filter is a [CEL](https://cel.dev) expression over one item: `value` (its JSON value),
//! `path` (the canonical text of where it is listed), `ids` (each namespace of that path to its
//! id), `version`, `created_at` and `modified_at` (microseconds). An item matches when the
//! expression is `true`; an error (a missing member, a type mismatch) is never a match.
//!
//! This layer knows items only as [`Subject`]s: it reads nothing and writes nothing.

mod compile;
mod eval;
mod fields;

pub use compile::{Filter, MAX_FILTER_BYTES, MAX_FILTER_DEPTH};
pub use eval::Subject;
pub use fields::{Fields, MAX_FIELDS};
