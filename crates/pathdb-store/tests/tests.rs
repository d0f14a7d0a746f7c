//! Store tests: one integration binary (style.md), one module per concern.
//!
//! - `conformance`: the backend-agnostic suite (`pathdb_store::conformance`) on every backend;
//! - `model`: random operation sequences against a `BTreeMap` model;
//! - `crash`: SIGKILL a writer process, reopen, find every acknowledged write;
//! - `faults`: injected storage faults on memory and file, and a real full disk (tmpfs);
//! - `bad_input`: rejected requests leave the database file unchanged, errors say why;
//! - `read_only`: read-only opens never change the file and refuse writes;
//! - `wrappers`: children listing reads little (seeks); injected storage failures;
//! - `upgrade`: a database written before tombstones continues its paths' numbering;
//! - `backups`: backups and the archive restore every row as of every commit; damage is refused;
//! - `false_conflicts`: listing checks with and without a filter, counted on a mixed workload.

mod backups;
mod bad_input;
mod conformance;
mod crash;
mod faults;
mod false_conflicts;
mod model;
mod read_only;
mod upgrade;
mod wrappers;

/// Polls a future to completion on this thread (the store crate has no async runtime).
pub use pathdb_conformance::block_on;
