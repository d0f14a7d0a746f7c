//! Reads, each from one snapshot where the backend has them: the alias read policy every read
//! asks, point reads and history, listings (with their checks for transactions), groups, the
//! full scan and export, and schema checks of stored items. Nothing here writes.

pub(crate) mod aliases;
pub(crate) mod get;
pub(crate) mod list_check;
pub(crate) mod list;
pub(crate) mod listed;
pub(crate) mod groups;
pub(crate) mod export;
pub(crate) mod violations;
