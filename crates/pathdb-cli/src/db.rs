//! What the item commands need from a database, so that they print the same output whether
//! they run on a local file or against a server (`--server URL`).

use anyhow::Result;
use pathdb_keys::KeyPath;
use pathdb_store::backend::Backend;
use pathdb_store::{
    AliasBuild, Change, ChangePage, ChangeToken, Condition, CountPage, Definition, ExportEnd,
    Fields, Filter, GroupPage, IdKind, ImportReport, Item, Json, ListRequest, ListedPage,
    MigrationStep, NamespaceDefinition, NewToken, OnExisting, Patch, PutOptions, Role, SchemaCheck,
    SchemaVersions, Store, StoredRole, SubtreeJob, TokenInfo, ViolationPage,
};
use std::time::Duration;

/// Changes read by [`Db::changes`], and where to continue.
pub struct Changes {
    /// In commit order.
    pub changes: Vec<FeedChange>,
    /// The token after them, as text (the server's `next_token`).
    pub next_token: String,
}

/// One change of a feed.
pub struct FeedChange {
    /// What changed.
    pub change: Change,
    /// In a filtered feed: a [`Change::Delete`] that is the item leaving the filter's result
    /// (it may still exist).
    pub left: bool,
}

/// The members of a value a read keeps (`--fields`): parsed, and as typed, which is what a
/// server is sent.
#[derive(Clone, Debug)]
pub struct Projection {
    /// The comma-separated list as given (`title,author.name`).
    pub text: String,
    /// The same, parsed.
    pub fields: Fields,
}

impl std::str::FromStr for Projection {
    type Err = pathdb_store::Error;

    fn from_str(text: &str) -> Result<Projection, Self::Err> {
        Ok(Projection {
            fields: Fields::parse(text)?,
            text: text.to_owned(),
        })
    }
}

/// How `import` treats what is there and what it reads.
#[derive(Clone, Copy, Debug)]
pub struct ImportMode {
    /// A record whose path holds another live item: replace, skip or fail.
    pub on_existing: OnExisting,
    /// Accept export records without the export's last line (a deliberate part of an export).
    pub partial: bool,
}

/// The data API as the CLI uses it.
pub trait Db {
    /// The item, or a past version of it; with `fields`, its value has only those members.
    fn get(
        &self,
        path: &KeyPath,
        version: Option<u64>,
        fields: Option<&Projection>,
    ) -> Result<Option<Item>>;
    /// Create or replace.
    fn put(&self, path: &KeyPath, value: Json, options: PutOptions) -> Result<Item>;
    /// Change part of the item (applied to `{}` when there is none and `create`); the item
    /// as written.
    fn patch(
        &self,
        path: &KeyPath,
        patch: Patch,
        options: PutOptions,
        create: bool,
    ) -> Result<Item>;
    /// Create at `{parent}/{namespace}-{generated id}` (a new group without a parent).
    fn create(
        &self,
        parent: Option<&KeyPath>,
        namespace: &str,
        id: IdKind,
        value: Json,
        options: PutOptions,
    ) -> Result<Item>;
    /// Changes under `prefix` after `since` (none, and the current position, without it),
    /// waiting up to `wait` for one; with `filter`, only those that matter to its result (an
    /// item entering or changing in it, and an item leaving it, [`FeedChange::left`]).
    fn changes(
        &self,
        prefix: &KeyPath,
        since: Option<&str>,
        wait: Duration,
        filter: Option<&Filter>,
    ) -> Result<Changes>;
    /// Delete; the deleted item, if there was one.
    fn delete(&self, path: &KeyPath, condition: Option<Condition>) -> Result<Option<Item>>;
    /// Runs a subtree delete, move or copy to the end (or finishes an earlier run of it); the
    /// items done in all. `progress` gets the count so far where the database tells it (a local
    /// file reports each batch; a server answers once, at the end).
    fn subtree(&self, job: &SubtreeJob, progress: &mut dyn FnMut(u64)) -> Result<u64>;
    /// One page of a listing, its paths kept encoded (decoded only to be printed as text); with
    /// `fields`, each value has only those members (`request.fields` is not read).
    fn list(&self, request: &ListRequest, fields: Option<&Projection>) -> Result<ListedPage>;
    /// How many entries of the listing's range match its filter, reading at most its
    /// `max_scan` items: with a page token to count on from when the range goes on.
    fn count(&self, request: &ListRequest) -> Result<CountPage>;
    /// One page of the groups whose namespace starts with `prefix` (`""`: every group), in key
    /// order.
    fn groups(&self, prefix: &str, limit: usize, page_token: Option<&str>) -> Result<GroupPage>;
    /// Revisions, newest first.
    fn history(&self, path: &KeyPath, limit: usize) -> Result<Vec<Item>>;
    /// Writes every record as a JSON line, then the line that says the export is complete;
    /// `progress` gets the records written so far. An export that did not complete is an error.
    fn export(
        &self,
        out: &mut dyn std::io::Write,
        progress: &mut dyn FnMut(u64),
    ) -> Result<ExportEnd>;
    /// Imports JSON lines (all checked before anything is written); `progress` gets the work
    /// done and the work in all (records here, bytes sent to a server).
    fn import(
        &self,
        input: &str,
        mode: ImportMode,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<ImportReport>;
    /// Every namespace definition, in namespace order.
    fn namespaces(&self) -> Result<Vec<NamespaceDefinition>>;
    /// One namespace's definition.
    fn namespace(&self, namespace: &str) -> Result<Option<NamespaceDefinition>>;
    /// The kept versions of a namespace's definition, oldest first (docs/migrations.md).
    fn namespace_versions(&self, namespace: &str) -> Result<Vec<NamespaceDefinition>>;
    /// One kept version of a namespace's definition.
    fn namespace_version(
        &self,
        namespace: &str,
        version: u64,
    ) -> Result<Option<NamespaceDefinition>>;
    /// Creates or replaces a definition if `condition` holds; the definition stored and
    /// whether it is new.
    fn define_namespace(
        &self,
        namespace: &str,
        definition: Definition,
        condition: Option<Condition>,
        force: bool,
    ) -> Result<(NamespaceDefinition, bool)>;
    /// Removes a definition; the one removed, if there was one.
    fn delete_namespace(&self, namespace: &str) -> Result<Option<NamespaceDefinition>>;
    /// Where each alias template of the namespace stands (docs/aliases.md).
    fn alias_builds(&self, namespace: &str) -> Result<Vec<AliasBuild>>;
    /// Moves the pending alias builds on: a local file runs some of their steps, a server
    /// builds by itself (this waits a moment).
    fn step_alias_builds(&self) -> Result<()>;
    /// Starts a build stopped in conflict again.
    fn retry_alias_build(&self, namespace: &str, template: &str) -> Result<()>;
    /// What `schema` would say about the namespace's stored items (nothing is stored);
    /// `progress` gets the records read so far where the database tells it (a local file).
    fn check_schema(
        &self,
        namespace: &str,
        schema: &serde_json::Value,
        migrate: &[MigrationStep],
        progress: &mut dyn FnMut(u64),
    ) -> Result<SchemaCheck>;
    /// One page of the stored items the namespace's schema refuses.
    fn namespace_violations(
        &self,
        namespace: &str,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<ViolationPage>;
    /// Every role, the built-in ones included (docs/access.md).
    fn roles(&self) -> Result<Vec<StoredRole>>;
    /// One role.
    fn role(&self, name: &str) -> Result<Option<StoredRole>>;
    /// Creates or replaces a role if `condition` holds; the role stored and whether it is new.
    fn put_role(
        &self,
        name: &str,
        role: &Role,
        condition: Option<Condition>,
    ) -> Result<(StoredRole, bool)>;
    /// Deletes a role; the one removed, if there was one.
    fn delete_role(&self, name: &str) -> Result<Option<StoredRole>>;
    /// Issues a token: its listing and its whole text (shown only now).
    fn create_token(&self, token: &NewToken) -> Result<(TokenInfo, String)>;
    /// Every issued token, without secrets.
    fn tokens(&self) -> Result<Vec<TokenInfo>>;
    /// Revokes a token; whether there was one.
    fn revoke_token(&self, id: &str) -> Result<bool>;
}

/// A local database file as the commands see it: the store, and the definition version of
/// each namespace the commands speak (`--schema-version`, docs/migrations.md).
pub struct Local<B: Backend> {
    store: Store<B>,
    speaks: SchemaVersions,
}

impl<B: Backend> Local<B> {
    /// `store`, spoken to in `speaks`.
    pub fn new(store: Store<B>, speaks: SchemaVersions) -> Local<B> {
        Local { store, speaks }
    }

    /// A write's options with the version it speaks for `namespace`.
    fn options(&self, namespace: &str, options: PutOptions) -> PutOptions {
        PutOptions {
            schema_version: self.speaks.get(namespace),
            ..options
        }
    }

    /// A written item, answered in the version spoken.
    fn spoken(&self, mut item: Item) -> Result<Item> {
        self.store.in_versions(&mut item, &self.speaks)?;
        Ok(item)
    }
}

impl<B: Backend> Db for Local<B> {
    fn get(
        &self,
        path: &KeyPath,
        version: Option<u64>,
        fields: Option<&Projection>,
    ) -> Result<Option<Item>> {
        let item = match version {
            Some(v) => self.store.get_version(path, v)?,
            None => Store::get(&self.store, path)?,
        };
        let Some(mut item) = item else {
            return Ok(None);
        };
        // In the version asked, then projected: fields are named as that version names them.
        self.store.in_versions(&mut item, &self.speaks)?;
        if let Some(p) = fields {
            item.value = p.fields.project(&item.value);
        }
        Ok(Some(item))
    }

    fn put(&self, path: &KeyPath, value: Json, options: PutOptions) -> Result<Item> {
        let options = self.options(path.last().namespace().as_str(), options);
        self.spoken(Store::put(&self.store, path, value, options)?)
    }

    fn patch(
        &self,
        path: &KeyPath,
        patch: Patch,
        options: PutOptions,
        create: bool,
    ) -> Result<Item> {
        let options = self.options(path.last().namespace().as_str(), options);
        self.spoken(Store::patch(&self.store, path, patch, options, create)?)
    }

    fn delete(&self, path: &KeyPath, condition: Option<Condition>) -> Result<Option<Item>> {
        Ok(Store::delete(&self.store, path, condition)?)
    }

    fn create(
        &self,
        parent: Option<&KeyPath>,
        namespace: &str,
        id: IdKind,
        value: Json,
        options: PutOptions,
    ) -> Result<Item> {
        let options = self.options(namespace, options);
        self.spoken(Store::create(
            &self.store,
            parent,
            namespace,
            id,
            value,
            options,
        )?)
    }

    fn changes(
        &self,
        prefix: &KeyPath,
        since: Option<&str>,
        wait: Duration,
        filter: Option<&Filter>,
    ) -> Result<Changes> {
        const LIMIT: usize = pathdb_store::DEFAULT_CHANGES_LIMIT;
        // A local file: everything may be read.
        let filter = filter.map(|f| (f, None));
        let mut page: ChangePage = match since {
            None => Store::changes_filtered(&self.store, prefix, None, LIMIT, filter)?,
            Some(text) => {
                let token: ChangeToken = text.parse()?;
                Store::wait_changes_filtered(&self.store, prefix, &token, LIMIT, wait, filter)?
            }
        };
        self.store.all_in_versions(page.puts_mut(), &self.speaks)?;
        Ok(Changes {
            changes: page
                .changes
                .into_iter()
                .map(|c| FeedChange {
                    change: c.change,
                    left: c.left,
                })
                .collect(),
            next_token: page.next_token.to_string(),
        })
    }

    fn subtree(&self, job: &SubtreeJob, progress: &mut dyn FnMut(u64)) -> Result<u64> {
        Ok(self.store.run_subtree_job(job, progress)?)
    }

    fn list(&self, request: &ListRequest, fields: Option<&Projection>) -> Result<ListedPage> {
        let request = ListRequest {
            fields: fields.map(|p| p.fields.clone()).or(request.fields.clone()),
            versions: self.speaks.clone(),
            ..request.clone()
        };
        self.store.check_versions(&self.speaks)?;
        Ok(Store::list_encoded(&self.store, &request)?)
    }

    fn count(&self, request: &ListRequest) -> Result<CountPage> {
        Ok(Store::count(&self.store, request)?)
    }

    fn groups(&self, prefix: &str, limit: usize, page_token: Option<&str>) -> Result<GroupPage> {
        Ok(Store::groups_with_prefix(
            &self.store,
            prefix,
            limit,
            page_token,
        )?)
    }

    fn history(&self, path: &KeyPath, limit: usize) -> Result<Vec<Item>> {
        let mut items = Store::history(&self.store, path, limit)?;
        self.store.all_in_versions(&mut items, &self.speaks)?;
        Ok(items)
    }

    fn export(
        &self,
        out: &mut dyn std::io::Write,
        progress: &mut dyn FnMut(u64),
    ) -> Result<ExportEnd> {
        // The store's error itself, so that the exit status can tell what failed.
        Store::export_in(&self.store, out, progress, &self.speaks).map_err(|e| match e {
            pathdb_store::ExportError::Store(e) => anyhow::Error::from(e),
            // The output failing (a full disk) is unavailable storage, not bad input.
            pathdb_store::ExportError::Output(e) => {
                pathdb_store::StorageError::new("writing the export", e).into()
            }
        })
    }

    fn import(
        &self,
        input: &str,
        mode: ImportMode,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<ImportReport> {
        let records = pathdb_store::parse_import(
            input
                .lines()
                .map(|l| Ok::<_, std::convert::Infallible>(l.to_owned())),
            mode.partial,
        )?;
        let total = records.len() as u64;
        Store::import(&self.store, &records, mode.on_existing, &mut |r| {
            progress(r.imported + r.unchanged + r.skipped, total)
        })
        .map_err(|e| {
            // A refused value names its line, as a server's answer does (blank lines count).
            let line = match &e.error {
                pathdb_store::Error::SchemaViolation { index, .. } => input
                    .lines()
                    .enumerate()
                    .filter(|(_, l)| !l.trim().is_empty())
                    .nth(*index)
                    .map(|(n, _)| n + 1),
                _ => None,
            };
            match line {
                Some(line) => anyhow::Error::new(e).context(format!("line {line}")),
                None => e.into(),
            }
        })
    }

    fn namespaces(&self) -> Result<Vec<NamespaceDefinition>> {
        let mut all = Vec::new();
        loop {
            let after = all
                .last()
                .map(|d: &NamespaceDefinition| d.namespace.clone());
            let page = Store::namespaces(&self.store, after.as_deref(), 1000)?;
            let done = page.len() < 1000;
            all.extend(page);
            if done {
                return Ok(all);
            }
        }
    }

    fn namespace(&self, namespace: &str) -> Result<Option<NamespaceDefinition>> {
        Ok(Store::namespace(&self.store, namespace)?)
    }

    fn namespace_versions(&self, namespace: &str) -> Result<Vec<NamespaceDefinition>> {
        Ok(self.store.namespace_versions(namespace)?)
    }

    fn namespace_version(
        &self,
        namespace: &str,
        version: u64,
    ) -> Result<Option<NamespaceDefinition>> {
        Ok(self.store.namespace_version(namespace, version)?)
    }

    fn define_namespace(
        &self,
        namespace: &str,
        definition: Definition,
        condition: Option<Condition>,
        force: bool,
    ) -> Result<(NamespaceDefinition, bool)> {
        Ok(Store::define_namespace_with(
            &self.store,
            namespace,
            definition,
            condition,
            force,
        )?)
    }

    fn delete_namespace(&self, namespace: &str) -> Result<Option<NamespaceDefinition>> {
        Ok(Store::delete_namespace(&self.store, namespace, None)?)
    }

    fn alias_builds(&self, namespace: &str) -> Result<Vec<AliasBuild>> {
        Ok(Store::alias_builds(&self.store, namespace)?)
    }

    fn step_alias_builds(&self) -> Result<()> {
        Store::step_alias_builds(&self.store, Duration::from_millis(200))?;
        Ok(())
    }

    fn retry_alias_build(&self, namespace: &str, template: &str) -> Result<()> {
        Ok(Store::retry_alias_build(&self.store, namespace, template)?)
    }

    fn check_schema(
        &self,
        namespace: &str,
        schema: &serde_json::Value,
        migrate: &[MigrationStep],
        progress: &mut dyn FnMut(u64),
    ) -> Result<SchemaCheck> {
        let schema = pathdb_store::Schema::compile(schema)?;
        Ok(Store::check_schema_after(
            &self.store,
            namespace,
            &schema,
            migrate,
            progress,
        )?)
    }

    fn namespace_violations(
        &self,
        namespace: &str,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<ViolationPage> {
        Ok(Store::namespace_violations(
            &self.store,
            namespace,
            cursor,
            limit,
        )?)
    }

    fn roles(&self) -> Result<Vec<StoredRole>> {
        Ok(Store::roles(&self.store)?)
    }

    fn role(&self, name: &str) -> Result<Option<StoredRole>> {
        Ok(Store::role(&self.store, name)?)
    }

    fn put_role(
        &self,
        name: &str,
        role: &Role,
        condition: Option<Condition>,
    ) -> Result<(StoredRole, bool)> {
        Ok(Store::put_role(&self.store, name, role, condition)?)
    }

    fn delete_role(&self, name: &str) -> Result<Option<StoredRole>> {
        Ok(Store::delete_role(&self.store, name, None)?)
    }

    fn create_token(&self, token: &NewToken) -> Result<(TokenInfo, String)> {
        Ok(Store::create_token(&self.store, token)?)
    }

    fn tokens(&self) -> Result<Vec<TokenInfo>> {
        Ok(Store::tokens(&self.store)?)
    }

    fn revoke_token(&self, id: &str) -> Result<bool> {
        Ok(Store::revoke_token(&self.store, id)?)
    }
}
