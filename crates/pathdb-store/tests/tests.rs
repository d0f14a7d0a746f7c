//! Store tests: one integration binary (style.md), one module per concern.
//!
//! - `conformance`: the backend-agnostic suite (`pathdb_store::conformance`) on every backend;
//! - `model`: random operation sequences against a `BTreeMap` model;
//! - `crash`: SIGKILL a writer process, reopen, find every acknowledged write;
//! - `bad_input`: rejected requests leave the database file unchanged, errors say why;
//! - `read_only`: read-only opens never change the file and refuse writes;
//! - `wrappers`: children listing reads little (seeks); injected storage failures.

mod bad_input;
mod conformance;
mod crash;
mod model;
mod read_only;
mod wrappers;
