//! The write of a namespace definition (or its removal): one record in the system partition,
//! conditional on the one read, with the alias build records its template changes start
//! (write/alias_builds.rs), in one batch.

use crate::backend::{Backend, Expect, Reader, Record, WriteBatch, WriteOp};
use crate::encoding::layout;
use crate::encoding::record::tombstone;
use crate::model::error::{Condition, Error};
use crate::namespaces::{NamespaceDefinition, from_record};
use crate::write::alias_builds::definition_changed;
use crate::write::commit::{Attempt, Db};

/// Writes `value` as the definition of `namespace` (`None`: its tombstone) over the record
/// read, if `condition` holds; again on a concurrent change. Returns the definition written
/// (for a delete: the one removed) and whether none was live before.
///
/// # Errors
/// An invalid namespace, [`Error::DefinitionConditionFailed`], a template re-added while its
/// removal runs, storage failures.
pub(crate) fn write_definition<B: Backend>(
    db: &Db<B>,
    namespace: &str,
    condition: Option<Condition>,
    value: Option<Vec<u8>>,
) -> Result<(Option<NamespaceDefinition>, bool), Error> {
    pathdb_keys::Namespace::new(namespace)
        .map_err(|rule| Error::InvalidRequest(format!("namespace {namespace:?}: {rule}")))?;
    let key = layout::namespace_key(namespace);
    db.until_committed(|| {
        let now = db.now();
        let reader = db.backend.reader()?;
        let stored = reader.get(&key)?;
        let live = stored.as_ref().filter(|r| !r.value.is_empty());
        let version = live.map(|r| r.version);
        if let Some(condition) = condition
            && !condition.holds(version)
        {
            return Err(Error::DefinitionConditionFailed {
                namespace: namespace.to_owned(),
                condition,
                current: version,
            });
        }
        let next = stored.as_ref().map_or(1, |r| r.version + 1);
        let record = match (&value, live) {
            (Some(value), _) => Record {
                version: next,
                created_at: live.map_or(now, |r| r.created_at),
                modified_at: now,
                expires_at: None,
                value: value.clone(),
            },
            // Nothing to delete.
            (None, None) => return Ok(Attempt::Done((None, true))),
            (None, Some(r)) => tombstone(r, next, now),
        };
        let before = live
            .map(|r| from_record(namespace, r))
            .transpose()?
            .flatten();
        let after = match &value {
            Some(_) => from_record(namespace, &record)?,
            None => None,
        };
        // A template added or removed starts its build or removal, in the same batch.
        let (old, new) = (templates(before.as_ref()), templates(after.as_ref()));
        let mut ops = definition_changed(&reader, namespace, &old, &new, now)?;
        ops.push(WriteOp::Put {
            key: key.clone(),
            record,
            expect: Some(Expect::as_read(stored.as_ref())),
        });
        let answer = if value.is_some() { after } else { before };
        Ok(Attempt::Send(WriteBatch { ops }, (answer, live.is_none())))
    })
}

/// The alias templates of a definition (none without one).
fn templates(definition: Option<&NamespaceDefinition>) -> Vec<&str> {
    definition.map_or_else(Vec::new, |d| {
        d.definition
            .aliases
            .iter()
            .map(|a| a.path.as_str())
            .collect()
    })
}
