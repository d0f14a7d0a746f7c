//! SQLite (bundled), what a user would otherwise pick: one `WITHOUT ROWID` table keyed by
//! `KeyPath::encode()` as a BLOB, WAL mode, `synchronous=FULL` (a commit fsyncs the WAL before
//! it returns), a 1 GiB page cache per connection (redb's default cache size), one connection
//! per thread with cached prepared statements and a 30 s busy timeout.
//!
//! - put: an autocommit upsert (`INSERT .. ON CONFLICT(k) DO UPDATE`).
//! - get: `SELECT v FROM items WHERE k = ?`.
//! - list: `WHERE k >= ? AND k < ? ORDER BY k [DESC] LIMIT 101` over the subtree's key range.
//! - children: `WHERE k >= ? AND k < ? ORDER BY k` over the descendants' range, keeping rows
//!   whose key has one element more than the prefix (zero-copy `KeyPathRef::decode`) until 101:
//!   the same plain scan as the raw redb peer.
//! - transaction: `BEGIN IMMEDIATE`, the upserts, `COMMIT`.
//!
//! Values are the same record bytes the raw redb peer stores.
//!
//! With several writers, each connection waits for SQLite's write lock in its busy handler,
//! which sleeps (1, 2, 5, 10, ... ms) between attempts. [`SharedSqlite`] is what an application
//! would do instead: one connection behind a mutex, writers queueing in the process.

use crate::dataset::Dataset;
use crate::engine::{Engine, PAGE, Role, Session, now_micros, record_bytes};
use pathdb_keys::{KeyPath, KeyPathRef};
use rusqlite::{Connection, TransactionBehavior, params};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

const UPSERT: &str =
    "INSERT INTO items (k, v) VALUES (?1, ?2) ON CONFLICT(k) DO UPDATE SET v = excluded.v";

/// SQLite.
pub struct Sqlite {
    path: PathBuf,
}

fn connect(path: &Path) -> anyhow::Result<Connection> {
    let conn = Connection::open(path)?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    anyhow::ensure!(mode.eq_ignore_ascii_case("wal"), "journal_mode is {mode}");
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "cache_size", -1_048_576)?;
    conn.busy_timeout(Duration::from_secs(30))?;
    conn.set_prepared_statement_cache_capacity(16);
    Ok(conn)
}

impl Sqlite {
    /// Creates the database and loads `data` with `synchronous=OFF` in big transactions, then
    /// checkpoints the WAL into the database file.
    ///
    /// # Errors
    /// SQLite failures.
    pub fn preload(path: &Path, data: &Dataset, batch: usize) -> anyhow::Result<Sqlite> {
        let mut conn = connect(path)?;
        conn.execute_batch(
            "CREATE TABLE items (k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID;
             PRAGMA synchronous = OFF;",
        )?;
        let now = now_micros();
        data.for_each_batch(batch, |items| {
            let tx = conn.transaction()?;
            {
                let mut insert = tx.prepare_cached("INSERT INTO items (k, v) VALUES (?1, ?2)")?;
                for (path, value) in items {
                    insert.execute(params![path.encode(), record_bytes(value, now)])?;
                }
            }
            tx.commit()?;
            Ok(())
        })?;
        conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA wal_checkpoint(TRUNCATE);")?;
        Ok(Sqlite {
            path: path.to_owned(),
        })
    }
}

impl Engine for Sqlite {
    fn name(&self) -> &'static str {
        "SQLite"
    }

    fn session(&self) -> anyhow::Result<Box<dyn Session + '_>> {
        Ok(Box::new(SqliteSession {
            conn: connect(&self.path)?,
        }))
    }
}

struct SqliteSession {
    conn: Connection,
}

impl Session for SqliteSession {
    fn put(&mut self, path: &KeyPath, value: &str) -> anyhow::Result<()> {
        let mut upsert = self.conn.prepare_cached(UPSERT)?;
        upsert.execute(params![path.encode(), record_bytes(value, now_micros())])?;
        Ok(())
    }

    fn get(&mut self, path: &KeyPath) -> anyhow::Result<usize> {
        let mut select = self
            .conn
            .prepare_cached("SELECT v FROM items WHERE k = ?1")?;
        let mut rows = select.query(params![path.encode()])?;
        Ok(match rows.next()? {
            Some(row) => row.get::<_, Vec<u8>>(0)?.len(),
            None => 0,
        })
    }

    fn list(&mut self, prefix: &KeyPath, reverse: bool) -> anyhow::Result<usize> {
        let range = prefix.subtree_range();
        let sql = if reverse {
            "SELECT k, v FROM items WHERE k >= ?1 AND k < ?2 ORDER BY k DESC LIMIT ?3"
        } else {
            "SELECT k, v FROM items WHERE k >= ?1 AND k < ?2 ORDER BY k LIMIT ?3"
        };
        let mut select = self.conn.prepare_cached(sql)?;
        let end = range.end.expect("a path's subtree is bounded");
        let mut rows = select.query(params![range.start, end, (PAGE + 1) as i64])?;
        let mut page: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(PAGE + 1);
        while let Some(row) = rows.next()? {
            page.push((row.get(0)?, row.get(1)?));
        }
        let more = page.len() > PAGE;
        page.truncate(PAGE);
        std::hint::black_box((&page, more));
        Ok(page.len())
    }

    fn children(&mut self, prefix: &KeyPath) -> anyhow::Result<usize> {
        let range = prefix.descendants_range();
        let depth = prefix.len() + 1;
        let mut select = self
            .conn
            .prepare_cached("SELECT k, v FROM items WHERE k >= ?1 AND k < ?2 ORDER BY k")?;
        let end = range.end.expect("a path's descendants are bounded");
        let mut rows = select.query(params![range.start, end])?;
        let mut page: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(PAGE + 1);
        while let Some(row) = rows.next()? {
            let key = row.get_ref(0)?.as_blob()?;
            if KeyPathRef::decode(key)?.elements().len() == depth {
                page.push((key.to_vec(), row.get(1)?));
                if page.len() > PAGE {
                    break;
                }
            }
        }
        let more = page.len() > PAGE;
        page.truncate(PAGE);
        std::hint::black_box((&page, more));
        Ok(page.len())
    }

    fn transact(&mut self, items: &[(KeyPath, String)]) -> anyhow::Result<()> {
        let now = now_micros();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        {
            let mut upsert = tx.prepare_cached(UPSERT)?;
            for (path, value) in items {
                upsert.execute(params![path.encode(), record_bytes(value, now)])?;
            }
        }
        tx.commit()?;
        Ok(())
    }
}

/// The SQLite file of [`Sqlite`] through one connection behind a mutex, for the concurrent put
/// row: writers wait on the mutex instead of in SQLite's sleeping busy handler.
pub struct SharedSqlite {
    session: Mutex<SqliteSession>,
}

impl SharedSqlite {
    /// Opens a connection to an already loaded file.
    ///
    /// # Errors
    /// SQLite failures.
    pub fn open(path: &Path) -> anyhow::Result<SharedSqlite> {
        Ok(SharedSqlite {
            session: Mutex::new(SqliteSession {
                conn: connect(path)?,
            }),
        })
    }

    fn with<T>(
        &self,
        f: impl FnOnce(&mut SqliteSession) -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        let mut session = self
            .session
            .lock()
            .map_err(|_| anyhow::anyhow!("poisoned"))?;
        f(&mut session)
    }
}

impl Engine for SharedSqlite {
    fn name(&self) -> &'static str {
        "SQLite, 1 shared connection"
    }

    fn session(&self) -> anyhow::Result<Box<dyn Session + '_>> {
        Ok(Box::new(SharedSession { shared: self }))
    }

    fn role(&self) -> Role {
        Role::ConcurrentWrites
    }
}

struct SharedSession<'a> {
    shared: &'a SharedSqlite,
}

impl Session for SharedSession<'_> {
    fn put(&mut self, path: &KeyPath, value: &str) -> anyhow::Result<()> {
        self.shared.with(|s| s.put(path, value))
    }

    fn get(&mut self, path: &KeyPath) -> anyhow::Result<usize> {
        self.shared.with(|s| s.get(path))
    }

    fn list(&mut self, prefix: &KeyPath, reverse: bool) -> anyhow::Result<usize> {
        self.shared.with(|s| s.list(prefix, reverse))
    }

    fn children(&mut self, prefix: &KeyPath) -> anyhow::Result<usize> {
        self.shared.with(|s| s.children(prefix))
    }

    fn transact(&mut self, items: &[(KeyPath, String)]) -> anyhow::Result<()> {
        self.shared.with(|s| s.transact(items))
    }
}
