//! Namespace definitions (namespaces/, written by write/definition.rs), their alias builds
//! (aliases/builds.rs, run by jobs/alias_builds.rs) and schema checks of stored items
//! (read/violations.rs).

use crate::aliases::builds::{AliasBuild, of_namespace, read_all};
use crate::backend::Backend;
use crate::jobs::alias_builds::{build_aliases, reload_definitions};
use crate::model::error::{Condition, Error, StorageError};
use crate::namespaces::definitions::{
    Definition, NamespaceDefinition, Schema, check, check_change, check_size, compile_steps, list,
    read_one, to_value,
};
use crate::namespaces::migrate::Step;
use crate::read::violations::{SchemaCheck, Shape, ViolationPage, check_all, violations_of};
use crate::store::Store;
use crate::write::alias_builds::retry;
use crate::write::definition::write_definition;
use std::time::Duration;

impl<B: Backend> Store<B> {
    /// Turns history on for every item whose last element has `namespace`, keeping `retention`
    /// revisions each, or off with `None`: the `history` member of its definition
    /// ([`Store::define_namespace`]), the rest of the definition kept.
    ///
    /// # Errors
    /// Invalid namespace, zero retention, storage failures.
    pub fn set_namespace_history(
        &self,
        namespace: &str,
        retention: Option<u32>,
    ) -> Result<(), Error> {
        loop {
            let current = self.namespace(namespace)?;
            let condition = Some(match &current {
                Some(c) => Condition::IfVersion(c.version),
                None => Condition::MustNotExist,
            });
            let mut definition = current.map(|c| c.definition).unwrap_or_default();
            definition.history = retention;
            // A new version: the steps into the current one are not steps into it.
            definition.migrate.clear();
            let written = if definition == Definition::default() {
                self.delete_namespace(namespace, condition).map(|_| ())
            } else {
                self.define_namespace(namespace, definition, condition)
                    .map(|_| ())
            };
            match written {
                // Someone changed the definition between the read and the write.
                Err(Error::DefinitionConditionFailed { .. }) => continue,
                other => return other,
            }
        }
    }

    /// The definition of `namespace`, as stored now.
    ///
    /// # Errors
    /// Storage failures.
    pub fn namespace(&self, namespace: &str) -> Result<Option<NamespaceDefinition>, Error> {
        read_one(&self.db.backend.reader()?, namespace)
    }

    /// Up to `limit` definitions in namespace order, after the namespace `after`; the page
    /// holds fewer than `limit` only at the end.
    ///
    /// # Errors
    /// Storage failures.
    pub fn namespaces(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<NamespaceDefinition>, Error> {
        list(&self.db.backend.reader()?, after, limit)
    }

    /// Creates or replaces the definition of `namespace`, if `condition` holds for the one
    /// stored (`IfVersion`, `MustNotExist`, `MustExist`, as for items). It applies to every
    /// write that starts after this returns (on a store that shares its database with others,
    /// theirs within [`StoreOptions::definitions_refresh`](crate::StoreOptions::definitions_refresh)); items stored already are not
    /// checked again (see [`Store::check_schema`]). Returns the definition stored and whether
    /// it is new.
    ///
    /// # Errors
    /// [`Error::InvalidSchema`], [`Error::InvalidRequest`] (namespace, zero history),
    /// [`Error::DefinitionConditionFailed`], storage failures.
    pub fn define_namespace(
        &self,
        namespace: &str,
        definition: Definition,
        condition: Option<Condition>,
    ) -> Result<(NamespaceDefinition, bool), Error> {
        self.define_namespace_with(namespace, definition, condition, false)
    }

    /// [`Store::define_namespace`]; `force`: store a version that breaks stored items or
    /// clients of older versions (docs/migrations.md) instead of refusing it.
    ///
    /// # Errors
    /// As [`Store::define_namespace`], and [`Error::IncompatibleSchema`] (unless forced),
    /// naming each problem.
    pub fn define_namespace_with(
        &self,
        namespace: &str,
        definition: Definition,
        condition: Option<Condition>,
        force: bool,
    ) -> Result<(NamespaceDefinition, bool), Error> {
        check(namespace, &definition)?;
        if !force {
            self.compatible(namespace, &definition)?;
        }
        let value = to_value(&definition);
        check_size(&value)?;
        let (stored, created) = write_definition(&self.db, namespace, condition, Some(value))?;
        let stored = NamespaceDefinition {
            definition,
            ..stored.ok_or_else(|| StorageError::msg("definition write returned nothing"))?
        };
        reload_definitions(&self.db)?;
        Ok((stored, created))
    }

    /// What [`Store::define_namespace`] would refuse `definition` for, without storing it: an
    /// invalid namespace or history, a schema that does not compile, or `condition` not
    /// holding for the definition stored now. Returns the compiled schema, for
    /// [`Store::check_schema`] (a dry run).
    ///
    /// # Errors
    /// As [`Store::define_namespace`].
    pub fn check_definition(
        &self,
        namespace: &str,
        definition: &Definition,
        condition: Option<Condition>,
    ) -> Result<Option<Schema>, Error> {
        let schema = check(namespace, definition)?;
        if let Some(condition) = condition {
            let current = self.namespace(namespace)?.map(|d| d.version);
            if !condition.holds(current) {
                return Err(Error::DefinitionConditionFailed {
                    namespace: namespace.to_owned(),
                    condition,
                    current,
                });
            }
        }
        Ok(schema)
    }

    /// What replacing `namespace`'s current definition with `definition` breaks
    /// (docs/migrations.md, "What is refused"), one sentence each; empty: nothing.
    ///
    /// # Errors
    /// [`Error::InvalidRequest`]: migration steps where there is no previous version, a bad
    /// step; storage failures.
    pub fn incompatibilities(
        &self,
        namespace: &str,
        definition: &Definition,
    ) -> Result<Vec<String>, Error> {
        check_change(self.namespace(namespace)?.as_ref(), definition)
    }

    /// [`Error::IncompatibleSchema`] when [`Store::incompatibilities`] finds any.
    fn compatible(&self, namespace: &str, definition: &Definition) -> Result<(), Error> {
        let current = self.namespace(namespace)?;
        let problems = check_change(current.as_ref(), definition)?;
        if problems.is_empty() {
            return Ok(());
        }
        Err(Error::IncompatibleSchema {
            namespace: namespace.to_owned(),
            version: current.map_or(0, |c| c.version),
            problems,
        })
    }

    /// Removes the definition of `namespace` (its items stay), if `condition` holds; returns
    /// the definition removed, `None` if there was none.
    ///
    /// # Errors
    /// [`Error::DefinitionConditionFailed`], storage failures.
    pub fn delete_namespace(
        &self,
        namespace: &str,
        condition: Option<Condition>,
    ) -> Result<Option<NamespaceDefinition>, Error> {
        let (removed, _) = write_definition(&self.db, namespace, condition, None)?;
        if removed.is_some() {
            reload_definitions(&self.db)?;
        }
        Ok(removed)
    }

    /// Where each alias template of `namespace` stands (docs/aliases.md): the templates of its
    /// definition, each `ready` unless a build is under way or stopped, then the templates
    /// being removed. Read from the database, not the store's copy.
    ///
    /// # Errors
    /// Storage failures.
    pub fn alias_builds(&self, namespace: &str) -> Result<Vec<AliasBuild>, Error> {
        let definition = self.namespace(namespace)?;
        let aliases = definition.map(|d| d.definition.aliases).unwrap_or_default();
        let mut builds = read_all(&self.db.backend.reader()?)?;
        let templates = aliases.iter().map(|a| a.path.as_str());
        Ok(of_namespace(namespace, templates, &mut builds))
    }

    /// [`Store::alias_builds`] of each of `definitions` (a page of [`Store::namespaces`]),
    /// reading the builds once.
    ///
    /// # Errors
    /// Storage failures.
    pub fn alias_builds_of(
        &self,
        definitions: &[NamespaceDefinition],
    ) -> Result<Vec<Vec<AliasBuild>>, Error> {
        let mut builds = read_all(&self.db.backend.reader()?)?;
        Ok(definitions
            .iter()
            .map(|d| {
                let templates = d.definition.aliases.iter().map(|a| a.path.as_str());
                of_namespace(&d.namespace, templates, &mut builds)
            })
            .collect())
    }

    /// Runs the pending alias builds and removals to the end (a background thread does so too,
    /// where the store sweeps expired items: [`StoreOptions::sweep_interval`](crate::StoreOptions::sweep_interval)); returns the
    /// steps run. A build that meets a conflict stops there ([`Store::retry_alias_build`]).
    ///
    /// # Errors
    /// Storage failures.
    pub fn run_alias_builds(&self) -> Result<usize, Error> {
        let mut total = 0;
        loop {
            let steps = build_aliases(&self.db, Duration::from_secs(3600), true)?;
            total += steps;
            if steps == 0 {
                return Ok(total);
            }
        }
    }

    /// Runs steps of the pending alias builds and removals for about `budget` (the CLI shows
    /// progress between calls); returns the steps run, 0 when none is pending.
    ///
    /// # Errors
    /// Storage failures.
    pub fn step_alias_builds(&self, budget: Duration) -> Result<usize, Error> {
        build_aliases(&self.db, budget, true)
    }

    /// Starts the build of `template` of `namespace` again from the beginning, after a
    /// conflict (fix the items it listed first).
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] if that build is not in conflict; storage failures.
    pub fn retry_alias_build(&self, namespace: &str, template: &str) -> Result<(), Error> {
        retry(&self.db, namespace, template)?;
        reload_definitions(&self.db)
    }

    /// What `schema` would say about the items of `namespace` stored now: how many it reads,
    /// how many it refuses and the first of those. Reads every item of the database (the
    /// namespace of an item is only known from its path); `progress` gets the records read so
    /// far after each scan request.
    ///
    /// # Errors
    /// Storage failures.
    pub fn check_schema(
        &self,
        namespace: &str,
        schema: &Schema,
        progress: &mut dyn FnMut(u64),
    ) -> Result<SchemaCheck, Error> {
        self.check_schema_after(namespace, schema, &[], progress)
    }

    /// [`Store::check_schema`] of a new definition version: each item is read in the newest
    /// version stored, then brought through `migrate`, the new version's steps (the dry run
    /// of a definition with steps; docs/migrations.md).
    ///
    /// # Errors
    /// A bad step; storage failures.
    pub fn check_schema_after(
        &self,
        namespace: &str,
        schema: &Schema,
        migrate: &[Step],
        progress: &mut dyn FnMut(u64),
    ) -> Result<SchemaCheck, Error> {
        let then = compile_steps(migrate)?;
        let definitions = self.definitions()?;
        let db = &self.db;
        check_all(
            &db.backend,
            &db.tokens,
            db.now(),
            namespace,
            schema,
            &Shape {
                definitions: &definitions,
                then: &then,
            },
            progress,
        )
    }

    /// A page of the stored items of `namespace` that its current schema refuses, from
    /// `cursor` (a page's [`ViolationPage::cursor`]); at most `limit` items, and fewer (even
    /// none, with a cursor) when the page has read its share of the database.
    ///
    /// # Errors
    /// [`Error::NamespaceNotFound`]; a cursor this database did not issue; storage failures.
    pub fn namespace_violations(
        &self,
        namespace: &str,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<ViolationPage, Error> {
        let Some(stored) = self.namespace(namespace)? else {
            return Err(Error::NamespaceNotFound(namespace.to_owned()));
        };
        let db = &self.db;
        violations_of(
            &db.namespaces,
            &db.backend,
            &db.tokens,
            db.now(),
            &stored,
            cursor,
            limit,
        )
    }
}
