//! What every engine does for the benchmark, and the record bytes the raw peers store.

use pathdb_keys::KeyPath;

/// Items per list page.
pub const PAGE: usize = 100;

/// One engine, preloaded; shared by the writer threads.
pub trait Engine: Sync {
    /// Short name for the tables.
    fn name(&self) -> &'static str;

    /// A per-thread handle (SQLite: its own connection).
    ///
    /// # Errors
    /// The engine cannot serve another handle.
    fn session(&self) -> anyhow::Result<Box<dyn Session + '_>>;

    /// Which rows the engine takes part in.
    fn role(&self) -> Role {
        Role::All
    }

    /// Reads every entry once, so the engine's page cache holds what fits of the data (as after
    /// a while of serving); returns the entries read. The scale run calls it before measuring.
    ///
    /// # Errors
    /// Engine failures.
    fn warm(&self) -> anyhow::Result<u64> {
        Ok(0)
    }
}

/// Which rows an engine takes part in: variants of another engine only run where they differ.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Role {
    /// Every row.
    All,
    /// The durable write rows (put, concurrent put, transaction).
    Writes,
    /// The concurrent put row.
    ConcurrentWrites,
}

/// The measured operations. Each takes the request as the application has it (a [`KeyPath`]
/// and JSON text) and does everything needed to answer it, key encoding included.
pub trait Session {
    /// Writes `value` at `path`, durably (returns once it survives a power loss).
    fn put(&mut self, path: &KeyPath, value: &str) -> anyhow::Result<()>;

    /// Reads the value at `path`; returns its length (0 when absent).
    fn get(&mut self, path: &KeyPath) -> anyhow::Result<usize>;

    /// The first (or with `reverse` the last) [`PAGE`] items of `prefix`'s subtree, and whether
    /// more follow; returns the number of items on the page.
    fn list(&mut self, prefix: &KeyPath, reverse: bool) -> anyhow::Result<usize>;

    /// The first [`PAGE`] direct children of `prefix`, and whether more follow; returns the
    /// number of items on the page.
    fn children(&mut self, prefix: &KeyPath) -> anyhow::Result<usize>;

    /// Writes all of `items` atomically and durably.
    fn transact(&mut self, items: &[(KeyPath, String)]) -> anyhow::Result<()>;
}

/// The bytes PathDB's file backend stores for an item (`backend/file.rs`):
/// `[version u64][created i64][modified i64][has_expiry u8][expires i64][JSON...]`, little endian.
/// The raw peers store exactly this much per item, so all three engines hold the same bytes.
pub fn record_bytes(value: &str, now_micros: i64) -> Vec<u8> {
    let mut out = Vec::with_capacity(33 + value.len());
    out.extend_from_slice(&1u64.to_le_bytes());
    out.extend_from_slice(&now_micros.to_le_bytes());
    out.extend_from_slice(&now_micros.to_le_bytes());
    out.push(0);
    out.extend_from_slice(&0i64.to_le_bytes());
    out.extend_from_slice(value.as_bytes());
    out
}

/// Microseconds since the Unix epoch.
pub fn now_micros() -> i64 {
    pathdb_store::Timestamp::now().micros()
}
