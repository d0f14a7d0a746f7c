//! The write of a namespace definition (or its removal): one record in the system partition,
//! conditional on the one read, with the alias build records its template changes start
//! (write/alias_builds.rs), the kept copy of the version (namespaces/versions.rs) and, for a
//! version with migration steps, the start of the rewrite of stored items (write/rewrite.rs),
//! in one batch.

use crate::backend::{Backend, WriteOp};
use crate::encoding::layout;
use crate::model::error::{Condition, Error};
use crate::namespaces::definitions::{NamespaceDefinition, from_record, log_stays_off};
use crate::write::alias_builds::definition_changed;
use crate::write::commit::Db;
use crate::write::rewrite::start_op;
use crate::write::system::{self, Next};

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
    let refused = |condition, current| Error::DefinitionConditionFailed {
        namespace: namespace.to_owned(),
        condition,
        current,
    };
    let written = system::write(
        db,
        &layout::namespace_key(namespace),
        condition,
        &refused,
        &mut |_| {
            Ok(match &value {
                Some(value) => Next::Put(value.clone()),
                None => Next::Delete,
            })
        },
        // A template added or removed starts its build or removal, in the same batch.
        &mut |reader, before, after_record| {
            let before = before
                .map(|r| from_record(namespace, r))
                .transpose()?
                .flatten();
            let after = after_record
                .map(|r| from_record(namespace, r))
                .transpose()?
                .flatten();
            if let Some(before) = &before {
                log_stays_off(
                    namespace,
                    &before.definition,
                    after.as_ref().map(|a| &a.definition),
                )?;
            }
            let (old, new) = (templates(before.as_ref()), templates(after.as_ref()));
            let mut ops = definition_changed(reader, namespace, &old, &new, db.now())?;
            // Every version is kept, so that it stays readable and its steps apply; one with
            // steps starts the rewrite of the stored items to it (write/rewrite.rs).
            if let (Some(after), Some(record)) = (&after, after_record) {
                ops.push(WriteOp::Put {
                    key: layout::definition_version_key(namespace, after.version),
                    record: record.clone(),
                    expect: None,
                });
                if !after.definition.migrate.is_empty() {
                    ops.push(start_op(reader, namespace, after.version, db.now())?);
                }
            }
            Ok(ops)
        },
    )?;
    let created = written.before.is_none();
    let answer = if value.is_some() {
        written.after
    } else {
        written.before
    };
    let answer = answer
        .map(|r| from_record(namespace, &r))
        .transpose()?
        .flatten();
    Ok((answer, created))
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
