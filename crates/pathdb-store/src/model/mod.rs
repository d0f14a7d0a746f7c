//! The vocabulary every layer speaks: errors, items and their JSON values, the options of a
//! write, patches, and the strict reading of JSON text. Nothing here reads or writes storage.

pub(crate) mod error;
pub(crate) mod strict;
pub(crate) mod item;
pub(crate) mod options;
pub(crate) mod patch;
