//! The record of a namespace's background rewrite to its newest definition version
//! (write/rewrite.rs runs it; docs/migrations.md): at `00 0c` + namespace (encoding/layout.rs).

use crate::backend::{Key, Reader, Record};
use crate::encoding::layout;
use crate::model::error::{Error, StorageError};
use serde::{Deserialize, Serialize};

/// Where a namespace's rewrite stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rewrite {
    /// The definition version it brings items to.
    pub to: u64,
    /// Items of the namespace read so far.
    pub checked: u64,
    /// Items rewritten so far.
    pub rewritten: u64,
    /// Whether every item has been read.
    pub done: bool,
    /// When it started (microseconds since the epoch).
    pub started_at: i64,
    /// The last key read, hex (`partition`, `sort`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cursor: Option<(String, String)>,
}

impl Rewrite {
    /// A rewrite to `to`, from the start.
    pub(crate) fn start(to: u64, now: i64) -> Rewrite {
        Rewrite {
            to,
            checked: 0,
            rewritten: 0,
            done: false,
            started_at: now,
            cursor: None,
        }
    }

    pub(crate) fn cursor(&self) -> Result<Option<Key>, Error> {
        let Some((partition, sort)) = &self.cursor else {
            return Ok(None);
        };
        let bytes =
            |h: &str| hex::decode(h).map_err(|e| StorageError::new("corrupt rewrite cursor", e));
        Ok(Some(Key {
            partition: bytes(partition)?,
            sort: bytes(sort)?,
        }))
    }

    pub(crate) fn set_cursor(&mut self, key: Option<&Key>) {
        self.cursor = key.map(|k| (hex::encode(&k.partition), hex::encode(&k.sort)));
    }

    /// The record's stored value.
    pub(crate) fn to_value(&self) -> Vec<u8> {
        // Numbers and strings: always serializes.
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// The rewrite record of `namespace`, as `reader` shows it.
///
/// # Errors
/// Storage failures, a corrupt record.
pub(crate) fn read_rewrite<R: Reader + ?Sized>(
    reader: &R,
    namespace: &str,
) -> Result<Option<(Rewrite, Record)>, Error> {
    let Some(record) = reader.get(&layout::rewrite_key(namespace))? else {
        return Ok(None);
    };
    if record.value.is_empty() {
        return Ok(None);
    }
    let rewrite = serde_json::from_slice(&record.value)
        .map_err(|e| StorageError::new(format!("corrupt rewrite record of {namespace}"), e))?;
    Ok(Some((rewrite, record)))
}

/// The namespaces whose rewrite is not done.
///
/// # Errors
/// Storage failures.
pub(crate) fn pending<R: Reader + ?Sized>(reader: &R) -> Result<Vec<String>, Error> {
    let mut out = Vec::new();
    for (sort, record) in reader.scan(
        layout::SYSTEM_PARTITION,
        &layout::rewrite_range(),
        crate::backend::Direction::Forward,
        usize::MAX,
    )? {
        let Ok(rewrite) = serde_json::from_slice::<Rewrite>(&record.value) else {
            continue;
        };
        if !rewrite.done {
            out.push(String::from_utf8_lossy(&sort[1..]).into_owned());
        }
    }
    Ok(out)
}
