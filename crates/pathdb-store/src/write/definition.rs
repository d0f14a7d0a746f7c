//! The write of a namespace definition (or its removal): one record in the system partition,
//! conditional on the one read, with the alias build records its template changes start
//! (write/alias_builds.rs), in one batch.

use crate::backend::Backend;
use crate::encoding::layout;
use crate::model::error::{Condition, Error};
use crate::namespaces::{NamespaceDefinition, from_record};
use crate::write::alias_builds::definition_changed;
use crate::write::commit::Db;
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
        &mut |reader, before, after| {
            let before = before
                .map(|r| from_record(namespace, r))
                .transpose()?
                .flatten();
            let after = after
                .map(|r| from_record(namespace, r))
                .transpose()?
                .flatten();
            let (old, new) = (templates(before.as_ref()), templates(after.as_ref()));
            definition_changed(reader, namespace, &old, &new, db.now())
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
