//! The stages of the write pipeline, ranked in the order a plan runs them (`pipeline.rs`): each
//! reads the plan's `Context` and adds to its `Plan`; none calls a later stage or `Store`.

pub(crate) mod ids;
pub(crate) mod migrate;
pub(crate) mod items;
pub(crate) mod listing;
pub(crate) mod schema;
pub(crate) mod aliases;
pub(crate) mod history;
pub(crate) mod expiry;
pub(crate) mod changelog;
pub(crate) mod relocate;
