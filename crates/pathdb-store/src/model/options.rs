//! What a store is opened with ([`StoreOptions`], its [`Clock`]) and what a put is asked with
//! ([`PutOptions`], [`Expiry`]). Plain settings: nothing here reads or writes.

use crate::model::error::Condition;
use crate::model::item::Timestamp;
use std::sync::Arc;
use std::time::Duration;

/// Where the store gets the time; tests substitute a [`ManualClock`].
pub trait Clock: Send + Sync + 'static {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// The system clock.
#[derive(Default, Debug, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock that moves only when told: for tests of expiry.
#[derive(Default, Debug)]
pub struct ManualClock(std::sync::atomic::AtomicI64);

impl ManualClock {
    /// A clock showing `t`.
    pub fn new(t: Timestamp) -> ManualClock {
        ManualClock(std::sync::atomic::AtomicI64::new(t.0))
    }

    /// Moves the clock forward.
    pub fn advance(&self, d: Duration) {
        let micros = i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
        self.0
            .fetch_add(micros, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.0.load(std::sync::atomic::Ordering::SeqCst))
    }
}

/// Store settings.
#[derive(Clone)]
pub struct StoreOptions {
    /// The time source.
    pub clock: Arc<dyn Clock>,
    /// Revisions kept per item when history is on and its namespace sets no retention.
    pub default_history_retention: u32,
    /// How often expired items are removed in the background; `None` disables the sweeper
    /// (expired items are invisible regardless).
    pub sweep_interval: Option<Duration>,
    /// How long the change feed keeps changes: a token whose next change is older answers
    /// [`Error::ChangesExpired`](crate::Error::ChangesExpired) (docs/changes.md).
    pub change_retention: Duration,
    /// Where others write the same database too ([`Backend::shared`](crate::backend::Backend::shared):
    /// several servers on one DynamoDB table), how old this store's copy of the namespace
    /// definitions may be when a write starts: a definition another server changed applies
    /// here within this time. Where this store is the only writer, its copy is always current.
    pub definitions_refresh: Duration,
    /// Bytes of records this store remembers to plan a put or delete in a group without a
    /// change log without reading the item first (write/known.rs: on DynamoDB one request and
    /// no read unit instead of two requests); 0: always read. `None`:
    /// [`DEFAULT_KNOWN_RECORDS`] unless the backend's point reads are known to be fast
    /// ([`Backend::fast_point_reads`](crate::backend::Backend::fast_point_reads): the embedded
    /// file, where a read costs less than remembering), so on DynamoDB and on the in-memory
    /// reference.
    pub known_records: Option<usize>,
    /// Which form the change log's entries are written in (docs/changes.md, "Two forms of an
    /// entry"). `None`: the compact form where the database is marked for it, and a database
    /// no store has opened before is marked; JSON otherwise. `Some(true)`: marks the database
    /// (for good: builds before the compact form cannot read its feeds) and writes compact
    /// entries. `Some(false)`: JSON entries, which every build reads, while builds before the
    /// compact form share the database (compact entries already written stay until the
    /// retention removes them).
    pub compact_change_log: Option<bool>,
}

/// [`StoreOptions::known_records`] where point reads are requests: 32 MiB.
pub const DEFAULT_KNOWN_RECORDS: usize = 32 << 20;

/// [`StoreOptions::definitions_refresh`] by default: 1 second.
pub const DEFAULT_DEFINITIONS_REFRESH: Duration = Duration::from_secs(1);

/// [`StoreOptions::change_retention`] by default: 7 days.
pub const DEFAULT_CHANGE_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            clock: Arc::new(SystemClock),
            default_history_retention: 100,
            sweep_interval: Some(Duration::from_secs(1)),
            change_retention: DEFAULT_CHANGE_RETENTION,
            definitions_refresh: DEFAULT_DEFINITIONS_REFRESH,
            known_records: None,
            compact_change_log: None,
        }
    }
}

impl std::fmt::Debug for StoreOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreOptions")
            .field("default_history_retention", &self.default_history_retention)
            .field("sweep_interval", &self.sweep_interval)
            .field("change_retention", &self.change_retention)
            .field("definitions_refresh", &self.definitions_refresh)
            .field("known_records", &self.known_records)
            .field("compact_change_log", &self.compact_change_log)
            .finish_non_exhaustive()
    }
}

/// How an item expires.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Expiry {
    /// At this time.
    At(Timestamp),
    /// This long after the write.
    After(Duration),
}

/// Options of [`Store::put`](crate::Store::put).
#[derive(Clone, Default, Debug)]
pub struct PutOptions {
    /// Write only if this holds.
    pub condition: Option<Condition>,
    /// Keep this version as a revision (also on when the namespace has history on).
    pub history: bool,
    /// When the item expires; `None` never.
    pub expires: Option<Expiry>,
    /// The definition version of the item's namespace the value (or patch) is written in
    /// (docs/migrations.md); `None`: the newest. It is brought forward to the newest before
    /// it is checked and stored.
    pub schema_version: Option<u64>,
}
