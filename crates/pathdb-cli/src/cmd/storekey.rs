//! What a stored key means: `pathdb key decode` on the partition and sort keys that the store
//! writes besides items (a DynamoDB `pk`/`sk` pair, a redb key), so that someone looking at a
//! table with other tools can read every key in it.
//!
//! This re-derives the layout of `crates/pathdb-store/src/encoding/layout.rs` (kept private there so
//! that the store can change it with a format version); change both together:
//!
//! | what | partition | sort key |
//! | --- | --- | --- |
//! | item | encoded group | encoded rest of the path, `00` for the group's own item |
//! | revision | encoded group | `ff` + item sort key + big-endian `u64::MAX - version` |
//! | expiry index entry | `00` | `01` + expiry (big-endian i64, sign bit flipped) + `u16` partition length + partition + item sort key |
//! | namespace definition | `00` | `02` + namespace |
//!
//! A deleted or expired item's tombstone lives under the item's own key (an empty value holding
//! the last version), so its key decodes as the item's path.

use super::output::rfc3339;
use anyhow::{Context, Result, anyhow, bail};
use pathdb_keys::KeyPath;
use pathdb_store::Timestamp;

const SYSTEM_PARTITION: &[u8] = &[0x00];
const GROUP_SORT_KEY: &[u8] = &[0x00];
const EXPIRY_INDEX: u8 = 0x01;
const NAMESPACE_DEFINITION: u8 = 0x02;
const REVISION: u8 = 0xff;

/// What the key `partition` + `sort` holds, in one line: an item's path alone (so that scripts
/// can use it), anything else described.
pub fn explain(partition: &[u8], sort: &[u8]) -> Result<String> {
    if partition == SYSTEM_PARTITION {
        return explain_system(sort);
    }
    let group = KeyPath::decode(partition).context("the partition key is not an encoded group")?;
    if group.len() != 1 {
        bail!("the partition key is {group}, not a group (one element)");
    }
    explain_sort(Some(&group), sort)
}

/// What a sort key holds without its partition: system keys are whole, item keys are shown
/// relative to `<group>`. `None` if it is none of the store's own key kinds.
pub fn explain_sort_only(sort: &[u8]) -> Option<String> {
    if sort == GROUP_SORT_KEY {
        return Some(
            "00: the sort key of a group's own item (pass --partition PK to name the group); \
             as a partition key, 00 is the store's system partition"
                .to_owned(),
        );
    }
    match sort.first() {
        Some(&(EXPIRY_INDEX | NAMESPACE_DEFINITION)) => explain_system(sort).ok(),
        Some(&REVISION) => explain_sort(None, sort)
            .ok()
            .map(|text| format!("{text} (pass --partition PK to name the group)")),
        _ => None,
    }
}

/// A sort key inside a group's partition; `group` unknown shows the path relative to `<group>`.
fn explain_sort(group: Option<&KeyPath>, sort: &[u8]) -> Result<String> {
    match sort.first() {
        Some(&REVISION) => {
            let (item_sort, inverted) = sort[1..]
                .split_last_chunk::<8>()
                .filter(|(item, _)| !item.is_empty())
                .ok_or_else(|| anyhow!("a revision key is ff, an item sort key and 8 bytes"))?;
            let version = u64::MAX - u64::from_be_bytes(*inverted);
            Ok(format!(
                "revision {version} of {}",
                item_path(group, item_sort)?
            ))
        }
        _ => item_path(group, sort),
    }
}

/// The path of an item sort key: in `group`, or after a `<group>` placeholder.
fn item_path(group: Option<&KeyPath>, item_sort: &[u8]) -> Result<String> {
    match group {
        Some(group) => Ok(group
            .with_sort_key(item_sort)
            .context("not an item sort key")?
            .to_string()),
        None => {
            // Any group will do to decode the rest of the path; its text is then cut off.
            let placeholder: KeyPath = "/g-0".parse().context("placeholder group")?;
            let path = placeholder
                .with_sort_key(item_sort)
                .context("not an item sort key")?
                .to_string();
            Ok(format!("<group>{}", &path["/g-0".len()..]))
        }
    }
}

/// A sort key in the system partition `00`.
fn explain_system(sort: &[u8]) -> Result<String> {
    match sort.split_first() {
        Some((&EXPIRY_INDEX, rest)) => {
            let parse = || -> Option<(i64, &[u8], &[u8])> {
                let t = u64::from_be_bytes(rest.get(..8)?.try_into().ok()?) ^ (1 << 63);
                let len = usize::from(u16::from_be_bytes(rest.get(8..10)?.try_into().ok()?));
                Some((t as i64, rest.get(10..10 + len)?, rest.get(10 + len..)?))
            };
            let (expires_at, partition, item_sort) =
                parse().ok_or_else(|| anyhow!("truncated expiry index entry"))?;
            Ok(format!(
                "expiry index entry: {} expires at {}",
                explain(partition, item_sort)?,
                rfc3339(Timestamp(expires_at))
            ))
        }
        Some((&NAMESPACE_DEFINITION, namespace)) => Ok(format!(
            "definition of namespace {}",
            String::from_utf8_lossy(namespace)
        )),
        _ => bail!(
            "in the system partition 00, a sort key starts with 01 (expiry index) or 02 \
             (namespace definition)"
        ),
    }
}
