//! What opening a store does before it serves: the one-time upgrade of an older database
//! (jobs/upgrade.rs), the form its change log is written in, the key that seals its tokens (made
//! once, by the first store that opens the database), the namespace definitions, and the upkeep
//! threads.

use crate::backend::{Backend, Expect, Reader, Record, WriteBatch, WriteOp};
use crate::encoding::layout;
use crate::encoding::token::{FALLBACK_KEY, KEY_BYTES, TokenKey};
use crate::jobs::background::{self, Threads};
use crate::jobs::upgrade::{mark_write, put_mark, record_used_paths};
use crate::model::error::{Error, StorageError};
use crate::model::options::StoreOptions;
use crate::namespaces::definitions::Namespaces;
use crate::write::commit::{Db, Sent, send};
use std::sync::Arc;

/// Opens the database behind `backend`: upgrades it if it is older, loads its token key and
/// definitions, and starts the upkeep `options` ask for.
///
/// # Errors
/// The backend cannot be read (or, not read-only, written).
pub(crate) fn open<B: Backend>(
    backend: B,
    options: StoreOptions,
) -> Result<(Arc<Db<B>>, Threads), Error> {
    record_used_paths(&backend)?;
    let asked = options.compact_change_log;
    let marked = compact_log_marked(&backend, asked)?;
    let reader = backend.reader()?;
    let refresh = backend.shared().then_some(options.definitions_refresh);
    let namespaces = Namespaces::load(&reader, options.default_history_retention, refresh)?;
    drop(reader);
    // A database no store has opened yet is marked with its token key, in the same write: only
    // the store that makes the key decides, so stores racing to open a new database agree.
    let (tokens, made_marked) = token_key(&backend, asked != Some(false) && !marked)?;
    let compact_log = asked.unwrap_or(marked || made_marked);
    let sweep = options.sweep_interval;
    let db = Arc::new(Db::new(backend, options, namespaces, tokens, compact_log));
    let threads = background::start(&db, sweep);
    Ok((db, threads))
}

/// Whether the database behind `backend` is marked for compact change log entries
/// (encoding/compact_log.rs), which builds before them cannot read; `asked` `Some(true)` marks
/// it now. (A database no store has opened yet is marked with its token key: [`token_key`].)
///
/// # Errors
/// Storage failures.
fn compact_log_marked<B: Backend>(backend: &B, asked: Option<bool>) -> Result<bool, Error> {
    if asked != Some(true) || backend.read_only() {
        return Ok(backend.reader()?.get(&layout::compact_log_key())?.is_some());
    }
    put_mark(backend, layout::compact_log_key(), "compact change log")?;
    Ok(true)
}

/// The key of the database behind `backend`, made (once, whichever store is first) if it has
/// none yet, and whether this store made it with the compact change log's mark (`mark`): a
/// database without a key is new, and no build before the compact form has written it.
///
/// # Errors
/// Storage failures; random bytes cannot be had.
fn token_key<B: Backend>(backend: &B, mark: bool) -> Result<(TokenKey, bool), Error> {
    let key = layout::token_key();
    for _ in 0..3 {
        if let Some(record) = backend.reader()?.get(&key)? {
            if record.value.len() != KEY_BYTES {
                return Err(StorageError::msg("corrupt token key").into());
            }
            let retired = backend.reader()?.get(&layout::retired_token_keys())?;
            let tokens = TokenKey::with_retired(
                &record.value,
                retired.as_ref().map_or(&[][..], |r| &r.value),
            );
            return Ok((tokens, false));
        }
        let mut bytes = [0u8; KEY_BYTES];
        getrandom::fill(&mut bytes)
            .map_err(|e| StorageError::msg(format!("no random bytes for the token key: {e}")))?;
        let put = WriteOp::Put {
            key: key.clone(),
            record: Record {
                version: 1,
                created_at: 0,
                modified_at: 0,
                expires_at: None,
                value: bytes.to_vec(),
            },
            // Another store may be making it at the same moment: one key wins.
            expect: Some(Expect::Absent),
        };
        let mut ops = vec![put];
        if mark {
            ops.push(mark_write(layout::compact_log_key()));
        }
        match send(backend, None, WriteBatch { ops }) {
            Ok(Sent::Committed) => return Ok((TokenKey::new(&bytes), mark)),
            // Another store made it first: read theirs.
            Ok(Sent::Changed { .. }) => continue,
            Err(Error::ReadOnly) => return Ok((TokenKey::new(&FALLBACK_KEY), false)),
            Err(e) => return Err(e),
        }
    }
    Err(StorageError::msg("the token key could neither be read nor made").into())
}

/// Marks the database behind `backend` as a new history (a restore): a new token key, the old
/// one kept among the retired keys, so that a change token issued before answers 410 rather
/// than being read at a position that may mean something else now (docs/backups.md). A store
/// opened after this uses the new key; one already open keeps the old one until it reopens.
///
/// # Errors
/// Storage failures; random bytes cannot be had.
pub(crate) fn retire_token_key<B: Backend>(backend: &B) -> Result<(), Error> {
    let (key, retired_key) = (layout::token_key(), layout::retired_token_keys());
    for _ in 0..3 {
        let reader = backend.reader()?;
        let Some(current) = reader.get(&key)? else {
            // No store ever opened it: the first to open makes a key, as for a new database.
            return Ok(());
        };
        let retired = reader.get(&retired_key)?;
        drop(reader);
        let mut old = retired.as_ref().map_or(Vec::new(), |r| r.value.clone());
        old.extend_from_slice(&current.value);
        let mut fresh = [0u8; KEY_BYTES];
        getrandom::fill(&mut fresh)
            .map_err(|e| StorageError::msg(format!("no random bytes for the token key: {e}")))?;
        let batch = WriteBatch {
            ops: vec![
                WriteOp::Put {
                    key: retired_key.clone(),
                    record: Record {
                        version: retired.as_ref().map_or(1, |r| r.version + 1),
                        created_at: 0,
                        modified_at: 0,
                        expires_at: None,
                        value: old,
                    },
                    expect: Some(Expect::as_read(retired.as_ref())),
                },
                WriteOp::Put {
                    key: key.clone(),
                    record: Record {
                        version: current.version + 1,
                        value: fresh.to_vec(),
                        ..current.clone()
                    },
                    expect: Some(Expect::Version(current.version)),
                },
            ],
        };
        match send(backend, None, batch)? {
            Sent::Committed => return Ok(()),
            // Another did the same at the same moment: read again.
            Sent::Changed { .. } => continue,
        }
    }
    Err(StorageError::msg("the token key could not be replaced").into())
}
