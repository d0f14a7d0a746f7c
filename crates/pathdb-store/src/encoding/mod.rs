//! How PathDB's records sit in a backend that only knows ordered byte keys: where each kind of
//! record lives in the key space (`layout`) and what kind a key holds (`record::classify`), key
//! and size limits, the sealed tokens, the alias record, the schema version stamp of an item's value, item records and tombstones, and the
//! change log's entries (JSON, and the compact form in `compact_log`). It describes bytes; it never plans a write.

pub(crate) mod layout;
pub(crate) mod limits;
pub(crate) mod token;
pub(crate) mod alias;
pub(crate) mod stamp;
pub(crate) mod record;
pub(crate) mod changelog;
pub(crate) mod compact_log;
pub(crate) mod log_entry;
