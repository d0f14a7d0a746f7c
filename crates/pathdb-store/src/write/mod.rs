//! Writes: every kind of write the store makes is planned here and committed by one module.
//!
//! - `ops`: the operations a caller asks for (`TxOp`, `Transaction`), `plan`: what a plan reads
//!   from (`Context`) and builds (`Plan`);
//! - `stages/`: the stages, each adding its writes for one concern to the `Plan`, and
//!   `pipeline`: [`pipeline::plan`] runs them in their order for a list of operations (and
//!   `plan_subtree` for a batch of a subtree job), with the limits every write checks first;
//! - `known`: the records a write in a group without a change log may be planned on instead
//!   of a read (`Known`), and which operations may;
//! - `commit`: the only caller of `Backend::write`; it sends a batch, wakes the feeds it
//!   changed, and plans again after a concurrent change (`execute` for operations);
//! - the writes that are not one list of operations, each planned on the same stages and sent
//!   through `commit`: `transact` (a transaction's folding and results), `alias_builds` (build
//!   steps, retries, the build records a definition starts), `rewrite` (the steps of a
//!   namespace's rewrite to its newest definition version), `definition`, `sweep` (expiry),
//!   `import`.
//!
//! The rule that keeps it one-way: a stage depends on `plan` and on the layers below `write/`,
//! never on a later stage; nothing here knows `Store` or starts a thread (jobs/ runs what takes
//! time). A new kind of write is a new stage module plus one line in `pipeline`.

pub(crate) mod ops;
pub(crate) mod plan;
pub(crate) mod stages;
pub(crate) mod pipeline;
pub(crate) mod known;
pub(crate) mod commit;
pub(crate) mod system;
pub(crate) mod transact;
pub(crate) mod alias_builds;
pub(crate) mod rewrite;
pub(crate) mod definition;
pub(crate) mod access;
pub(crate) mod sweep;
pub(crate) mod import;
