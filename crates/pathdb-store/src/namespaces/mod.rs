//! Namespace definitions: what a user declared about the items of one namespace (their JSON
//! Schema, how many revisions they keep, a description, alias templates), kept in the database
//! at `00 02` + namespace (encoding/layout.rs), and the store's compiled copy of them. It reads
//! and checks definitions; it never writes (write/definition.rs does).
//!
//! The namespace of an item is its path's last element's (`/user-7/post-2` is a `post`).
//!
//! A definition is a record like an item's: its version counts its writes, a delete leaves a
//! tombstone (so an `If-Match` held from before a delete never matches a new definition). An
//! earlier build stored only the history setting there, as a bare number: it reads back as a
//! definition with just `history`.
//!
//! [`Namespaces`] keeps every definition in memory with its schema compiled once per version. Where
//! this process is the database's only writer (redb, memory), its own writes keep the copy current.
//! Where others write too ([`Backend::shared`](crate::backend::Backend::shared): several servers on
//! one DynamoDB table), a plan that finds the copy older than
//! [`StoreOptions::definitions_refresh`](crate::model::options::StoreOptions::definitions_refresh)
//! reads the definitions again (one query of the system partition) first.
//!
//! Files, ranked bottom up: `migrate.rs` (migration steps and the chain of a namespace's
//! versions), `compat.rs` (what a new version would break), `versions.rs` (the versions a
//! request speaks), `rewrites.rs` (the record of a rewrite to the newest version),
//! `definitions.rs` (definitions, their schemas and the store's copy).

pub(crate) mod migrate;
pub(crate) mod compat;
pub(crate) mod versions;
pub(crate) mod rewrites;
pub(crate) mod definitions;
