//! Per-namespace settings kept in the database: which namespaces keep history, and how many
//! revisions each (`00 02` + namespace, layout.rs). Read once when a store opens, then kept in
//! memory; the write pipeline's history stage asks [`NamespaceHistory::retention`].

use crate::backend::{Direction, Reader, Record, WriteOp};
use crate::{Error, StorageError, layout};
use pathdb_keys::KeyPath;
use std::collections::HashMap;
use std::sync::RwLock;

/// Revisions kept per namespace, for namespaces with history on, and the retention of a put
/// that asks for history in a namespace without a setting.
pub(crate) struct NamespaceHistory {
    namespaces: RwLock<HashMap<String, u32>>,
    default_retention: u32,
}

impl NamespaceHistory {
    /// The settings stored in the database `reader` reads.
    pub(crate) fn load<R: Reader>(reader: &R, default_retention: u32) -> Result<Self, Error> {
        let mut namespaces = HashMap::new();
        for (sort, record) in reader.scan(
            layout::SYSTEM_PARTITION,
            &layout::namespace_history_range(),
            Direction::Forward,
            usize::MAX,
        )? {
            let ns = String::from_utf8_lossy(&sort[1..]).into_owned();
            let retention: u32 = serde_json::from_slice(&record.value)
                .map_err(|e| StorageError::new("corrupt namespace setting", e))?;
            namespaces.insert(ns, retention);
        }
        Ok(NamespaceHistory {
            namespaces: RwLock::new(namespaces),
            default_retention,
        })
    }

    /// Revisions to keep for a put of `path` (`asked`: the put asked for history), or `None`
    /// when it keeps none.
    pub(crate) fn retention(&self, path: &KeyPath, asked: bool) -> Option<u32> {
        let ns = path.last().namespace().as_str();
        let configured = self.namespaces.read().ok().and_then(|m| m.get(ns).copied());
        match configured {
            Some(n) => Some(n),
            None if asked => Some(self.default_retention),
            None => None,
        }
    }

    /// The write that stores `namespace`'s setting (`None`: history off), after checking it.
    ///
    /// # Errors
    /// An invalid namespace, a retention of 0.
    pub(crate) fn setting_write(
        namespace: &str,
        retention: Option<u32>,
        now: i64,
    ) -> Result<WriteOp, Error> {
        pathdb_keys::Namespace::new(namespace)
            .map_err(|rule| Error::InvalidRequest(format!("namespace {namespace:?}: {rule}")))?;
        let key = layout::namespace_history_key(namespace);
        Ok(match retention {
            Some(0) => {
                return Err(Error::InvalidRequest(
                    "history retention must be at least 1".into(),
                ));
            }
            Some(n) => WriteOp::Put {
                key,
                record: Record {
                    version: 1,
                    created_at: now,
                    modified_at: now,
                    expires_at: None,
                    value: n.to_string().into_bytes(),
                },
                expect: None,
            },
            None => WriteOp::Delete { key, expect: None },
        })
    }

    /// Applies a setting that was written.
    pub(crate) fn set(&self, namespace: &str, retention: Option<u32>) -> Result<(), Error> {
        let mut map = self
            .namespaces
            .write()
            .map_err(|_| StorageError::msg("lock poisoned"))?;
        match retention {
            Some(n) => map.insert(namespace.to_owned(), n),
            None => map.remove(namespace),
        };
        Ok(())
    }
}
