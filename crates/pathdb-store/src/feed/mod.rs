//! The change feed: the waiters a commit wakes (one event per group) and the reader of a
//! group's change log (pages, positions, waiting, a listing's token). It reads; it never writes
//! (write/stages/changelog.rs appends to the log).

pub(crate) mod waiters;
pub(crate) mod reader;
