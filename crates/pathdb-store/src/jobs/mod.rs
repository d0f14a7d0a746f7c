//! The work a store does besides answering calls, ranked bottom up: the one-time upgrade of an
//! older database, the runs of alias builds and of rewrites to a new definition version, the upkeep threads, what an open does, and subtree
//! jobs. Jobs plan through write/ and commit through write/commit.rs; none calls the backend's
//! `write`.

pub(crate) mod upgrade;
pub(crate) mod alias_builds;
pub(crate) mod rewrites;
pub(crate) mod background;
pub(crate) mod open;
pub(crate) mod subtree;
