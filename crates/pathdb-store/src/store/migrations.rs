//! Definition versions and migrations (docs/migrations.md): the versions a request may speak,
//! values translated into them, each kept version, and the background rewrite of stored items
//! to the newest (write/rewrite.rs, run by jobs/rewrites.rs).

use crate::backend::Backend;
use crate::jobs::alias_builds::reload_definitions;
use crate::jobs::rewrites::run_rewrites;
use crate::model::error::Error;
use crate::model::item::Item;
use crate::namespaces::definitions::{
    Definitions, NamespaceDefinition, item_in, read_version, read_versions,
};
use crate::namespaces::rewrites::{Rewrite, read_rewrite};
use crate::namespaces::versions::SchemaVersions;
use crate::store::Store;
use std::sync::Arc;
use std::time::Duration;

impl<B: Backend> Store<B> {
    /// The store's copy of the definitions, as fresh as a write's.
    pub(crate) fn definitions(&self) -> Result<Arc<Definitions>, Error> {
        // A reader only if the copy must be read again (a redb read transaction per get
        // otherwise: 11% of a get's instructions).
        self.db
            .namespaces
            .current_opening(|| Ok(Box::new(self.db.backend.reader()?)))
    }

    /// Fails with [`Error::UnknownSchemaVersion`] unless every namespace `versions` names has
    /// the version named (a kept one, or its newest). A version this store's copy of the
    /// definitions does not know yet (another server defined it) is looked for in the
    /// database before it is refused.
    ///
    /// # Errors
    /// As above; storage failures.
    pub fn check_versions(&self, versions: &SchemaVersions) -> Result<(), Error> {
        let known = |definitions: &Definitions| {
            versions
                .iter()
                .try_for_each(|(namespace, version)| match definitions.get(namespace) {
                    Some(compiled) => compiled.speaks(version).map(|_| ()),
                    None => Err(Error::UnknownSchemaVersion {
                        namespace: namespace.to_owned(),
                        version,
                        newest: 0,
                    }),
                })
        };
        if versions.is_empty() {
            return Ok(());
        }
        let definitions = self.definitions()?;
        match known(&definitions) {
            Ok(()) => Ok(()),
            Err(_) => {
                reload_definitions(&self.db)?;
                let definitions = self.definitions()?;
                known(&definitions)
            }
        }
    }

    /// `item`, as the store returned it, in the version `versions` names for its namespace
    /// (the newest if none): brought forward from the version it was written at, then back
    /// (docs/migrations.md). [`Item::schema_version`] says the version it is in after.
    ///
    /// # Errors
    /// [`Error::UnknownSchemaVersion`]; a corrupt stored value.
    pub fn in_versions(&self, item: &mut Item, versions: &SchemaVersions) -> Result<(), Error> {
        let definitions = self.definitions()?;
        item_in(&definitions, item, versions)
    }

    /// [`Store::in_versions`] for many items, with one look at the definitions.
    ///
    /// # Errors
    /// As [`Store::in_versions`].
    pub fn all_in_versions<'i>(
        &self,
        items: impl IntoIterator<Item = &'i mut Item>,
        versions: &SchemaVersions,
    ) -> Result<(), Error> {
        let definitions = self.definitions()?;
        items
            .into_iter()
            .try_for_each(|item| item_in(&definitions, item, versions))
    }

    /// Version `version` of `namespace`'s definition: its schema and the steps from the one
    /// before. `None` when it was never stored, or stored before versions were kept.
    ///
    /// # Errors
    /// Storage failures.
    pub fn namespace_version(
        &self,
        namespace: &str,
        version: u64,
    ) -> Result<Option<NamespaceDefinition>, Error> {
        let reader = self.db.backend.reader()?;
        if let Some(kept) = read_version(&reader, namespace, version)? {
            return Ok(Some(kept));
        }
        // The current definition, stored by a build that kept no versions.
        Ok(self
            .namespace(namespace)?
            .filter(|current| current.version == version))
    }

    /// Every kept version of `namespace`'s definition, oldest first (the current one last, if
    /// it is live).
    ///
    /// # Errors
    /// Storage failures.
    pub fn namespace_versions(&self, namespace: &str) -> Result<Vec<NamespaceDefinition>, Error> {
        let mut kept = read_versions(&self.db.backend.reader()?, Some(namespace))?;
        if let Some(current) = self.namespace(namespace)?
            && kept.last().is_none_or(|k| k.version < current.version)
        {
            kept.push(current);
        }
        Ok(kept)
    }

    /// Where the rewrite of `namespace`'s items to its newest version stands; `None` if no
    /// version with migration steps was ever stored.
    ///
    /// # Errors
    /// Storage failures.
    pub fn rewrite(&self, namespace: &str) -> Result<Option<Rewrite>, Error> {
        Ok(read_rewrite(&self.db.backend.reader()?, namespace)?.map(|(r, _)| r))
    }

    /// Runs the pending rewrites to the end (a background thread does so too, where alias
    /// builds run); returns the steps run.
    ///
    /// # Errors
    /// Storage failures.
    pub fn run_rewrites(&self) -> Result<usize, Error> {
        let mut total = 0;
        loop {
            let steps = run_rewrites(&self.db, Duration::from_secs(3600), true)?;
            total += steps;
            if steps == 0 {
                return Ok(total);
            }
        }
    }

    /// Runs steps of the pending rewrites for about `budget`; returns the steps run, 0 when
    /// none is pending.
    ///
    /// # Errors
    /// Storage failures.
    pub fn step_rewrites(&self, budget: Duration) -> Result<usize, Error> {
        run_rewrites(&self.db, budget, true)
    }
}
