//! The write pipeline: how a list of operations ([`TxOp`]) becomes one atomic batch.
//!
//! [`plan`] reads one snapshot and runs the stages; each stage is a module that adds its writes
//! to the [`Plan`], in this order:
//!
//! | stage | per | writes |
//! | --- | --- | --- |
//! | `items` | plan | nothing yet: one read of the records at every path the operations name, together (one request on a remote backend) |
//! | `ids` | operation | nothing yet: a create's path (a generated id) |
//! | `listing` | listing check | nothing but a check: the listing's range has no change in the log after its token (else the caller's condition fails), and the log no entry after the newest one read |
//! | `items` | operation | the item record, its tombstone, or a check, conditional on what was read (a patch: the put of the patched value); the result and the change |
//! | `schema` | put | nothing: the value must fit its namespace's schema, or the plan fails |
//! | `aliases` | put, delete | the alias records the item gains (each conditional on what was read: a taken alias fails the plan), the tombstones of those it loses; their changes |
//! | `history` | put | the revision, and the removal of revisions beyond the retention |
//! | `expiry` | put | the expiry index entry |
//! | `ids` | plan | the records of the sequences the creates advanced |
//! | `changelog` | plan | one change-log entry per group changed, and now and then the removal of expired entries |
//!
//! A subtree delete, move or copy (subtree.rs) is planned by [`plan_subtree`] from items it read
//! itself: the `relocate` stage per item, its job record, then the same `changelog` stage.
//!
//! The rule that keeps it one-way: a stage depends on [`plan`](self::plan) (its [`Context`] and
//! [`Plan`]) and on the layers below the pipeline (records, layout, limits, the change log's
//! format), never on `Store` and never on a later stage. `Store` opens the snapshot, calls
//! [`plan`] and commits the batch. A new kind of write is a new stage module plus one line here.

pub(crate) mod ops;
pub(crate) mod plan;
pub(crate) mod stages;
pub(crate) mod pipeline;
pub(crate) mod commit;
pub(crate) mod transact;
pub(crate) mod alias_builds;
pub(crate) mod definition;
pub(crate) mod sweep;
pub(crate) mod import;
