//! Definitions: what a user declared about a namespace, checked and compiled, and the store's
//! copy of all of them (see the folder's documentation). Every definition written also keeps a
//! copy of itself under `00 0b`, namespace, `00`, version (encoding/layout.rs), in the same
//! batch, so that each version's schema and steps stay readable
//! (`GET /v1/namespaces/{ns}/versions/{v}`) and the store can build each namespace's
//! [`Chain`](crate::namespaces::migrate::Chain).

use crate::aliases::builds::Builds;
use crate::aliases::template::{MAX_ALIASES, Template};
use crate::backend::{Direction, Reader, Record};
use crate::encoding::layout;
use crate::encoding::limits::MAX_ITEM_BYTES;
use crate::model::error::Error;
use crate::model::error::StorageError;
use crate::model::error::Violation;
use crate::model::item::{Item, Json, Timestamp};
use crate::namespaces::migrate::{Chain, OnConflict, Step};
use crate::namespaces::versions::SchemaVersions;
use pathdb_keys::KeyPath;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// Most violations a refused value reports (the first ones the validator finds).
pub const MAX_VIOLATIONS: usize = 20;

/// What a user declares about the items of a namespace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Definition {
    /// The JSON Schema every value written into the namespace must satisfy (draft 2020-12
    /// unless it names another draft with `$schema`); `None`: any JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<serde_json::Value>,
    /// Revisions kept per item (history on); `None`: history only for puts that ask for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<u32>,
    /// For people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// More paths for each item, filled from its value (docs/aliases.md), at most
    /// [`MAX_ALIASES`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<AliasDefinition>,
    /// The steps from the previous version's values to this one's (docs/migrations.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub migrate: Vec<Step>,
    /// Whether `format` keywords are checked; `None`: as the schema's draft says (an
    /// annotation in 2020-12 and 2019-09, checked in drafts 7, 6 and 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub formats: Option<Formats>,
    /// Whether the groups of this namespace (the paths whose first element is of it, such as
    /// `/session-7/...` for `session`) keep a change log; `None`: they do. `Some(false)`: a
    /// write there appends no log entry, so it is the item alone (one conditional `PutItem` on
    /// DynamoDB), and the group has no change feed, no listing `changes_token` and no listing
    /// checks (docs/changes.md, "Groups without a change log"). Once `false`, it stays: logging
    /// again would leave a gap that no token could see.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<bool>,
}

impl Definition {
    /// Whether the groups of this namespace keep a change log ([`Definition::changes`]).
    pub fn keeps_changes(&self) -> bool {
        self.changes != Some(false)
    }
}

/// What a definition's schema does with `format` ([`Definition::formats`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Formats {
    /// Checked: `{"format": "email"}` refuses `"notanemail"` (the validator's format checks;
    /// a format it does not know is not checked).
    Assert,
    /// Never checked, whatever the draft.
    Annotate,
}

/// One alias template of a namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AliasDefinition {
    /// The template: a key path whose ids may be `{member}`, `{!member}` or `{@namespace}`
    /// ([`Template::parse`]).
    pub path: String,
}

/// A stored definition and its metadata.
#[derive(Clone, Debug, PartialEq)]
pub struct NamespaceDefinition {
    /// The namespace.
    pub namespace: String,
    /// 1 when first defined, +1 on every change.
    pub version: u64,
    /// When first defined.
    pub created_at: Timestamp,
    /// When last changed.
    pub modified_at: Timestamp,
    /// What it declares.
    pub definition: Definition,
}

/// A definition's schema, compiled.
pub struct Schema {
    validator: jsonschema::Validator,
}

impl Schema {
    /// Compiles `schema`, refusing what is not a valid schema and any `$ref` outside it (no
    /// schema is ever fetched).
    ///
    /// # Errors
    /// [`Error::InvalidSchema`], naming what is wrong.
    pub fn compile(schema: &serde_json::Value) -> Result<Schema, Error> {
        Schema::compile_with(schema, None)
    }

    /// [`Schema::compile`], with `format` checked or not as `formats` says.
    ///
    /// # Errors
    /// As [`Schema::compile`].
    pub fn compile_with(
        schema: &serde_json::Value,
        formats: Option<Formats>,
    ) -> Result<Schema, Error> {
        if !(schema.is_object() || schema.is_boolean()) {
            return Err(Error::InvalidSchema(
                "a schema is a JSON object or a boolean".into(),
            ));
        }
        let mut options = jsonschema::options().offline();
        if let Some(formats) = formats {
            options = options.should_validate_formats(formats == Formats::Assert);
        }
        options
            .build(schema)
            .map(|validator| Schema { validator })
            .map_err(|e| {
                let at = e.instance_path().to_string();
                let text = e.to_string();
                let text = if text.contains("etriev") {
                    format!(
                        "{text} (PathDB never fetches a schema: a `$ref` must point inside the schema)"
                    )
                } else {
                    text
                };
                Error::InvalidSchema(if at.is_empty() {
                    text
                } else {
                    format!("at {at}: {text}")
                })
            })
    }

    /// What `value` breaks, at most [`MAX_VIOLATIONS`]; empty when it fits.
    pub fn violations(&self, value: &serde_json::Value) -> Vec<Violation> {
        if self.validator.is_valid(value) {
            return Vec::new();
        }
        self.validator
            .iter_errors(value)
            .take(MAX_VIOLATIONS)
            .map(|e| Violation {
                instance_path: e.instance_path().to_string(),
                schema_path: e.schema_path().to_string(),
                message: e.to_string(),
            })
            .collect()
    }

    /// What the stored JSON text `value` breaks (see [`Schema::violations`]).
    pub(crate) fn violations_of_text(&self, value: &[u8]) -> Result<Vec<Violation>, Error> {
        let value: serde_json::Value = serde_json::from_slice(value).map_err(Error::InvalidJson)?;
        Ok(self.violations(&value))
    }
}

impl std::fmt::Debug for Schema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Schema").finish_non_exhaustive()
    }
}

/// A definition as the store uses it: stored, with its schema compiled.
#[derive(Debug)]
pub(crate) struct Compiled {
    pub(crate) stored: NamespaceDefinition,
    /// Its schema; `Err`: a stored schema that no longer compiles (a newer validator is
    /// stricter), which refuses every write into the namespace rather than letting values by.
    pub(crate) schema: Result<Option<Schema>, String>,
    /// Its alias templates, compiled (checked when stored).
    pub(crate) aliases: Vec<Template>,
    /// The migration steps of its versions (namespaces/migrate.rs).
    pub(crate) chain: Chain,
    /// The versions a request may speak: the kept ones and this one.
    pub(crate) versions: BTreeSet<u64>,
}

impl Compiled {
    /// The newest version: the one stored.
    pub(crate) fn newest(&self) -> u64 {
        self.stored.version
    }

    /// The stamp a value written now is stored with (encoding/stamp.rs): the newest version
    /// once any version has migration steps, else none (0), so that a database that never
    /// uses migrations stores its values exactly as builds before them did (and servers of
    /// both can share a DynamoDB table). An unstamped value was written before every step.
    pub(crate) fn stamp(&self) -> u64 {
        if self.chain.has_steps() {
            self.newest()
        } else {
            0
        }
    }

    /// `version`, if a request may speak it.
    ///
    /// # Errors
    /// [`Error::UnknownSchemaVersion`].
    pub(crate) fn speaks(&self, version: u64) -> Result<u64, Error> {
        if self.versions.contains(&version) {
            Ok(version)
        } else {
            Err(Error::UnknownSchemaVersion {
                namespace: self.stored.namespace.clone(),
                version,
                newest: self.newest(),
            })
        }
    }

    /// The JSON text `json`, stored at version `stored`, in version `asked` (`None`: the
    /// newest); `None` when it reads the same (no work).
    ///
    /// # Errors
    /// [`Error::MigrationFailed`] under [`OnConflict::Refuse`] (`path`: the item's).
    pub(crate) fn translate(
        &self,
        path: &KeyPath,
        json: &str,
        stored: u64,
        asked: Option<u64>,
        on_conflict: OnConflict,
    ) -> Result<Option<Json>, Error> {
        let newest = self.newest();
        let asked = asked.unwrap_or(newest);
        if self.chain.is_identity(stored, asked, newest) {
            return Ok(None);
        }
        // Members no step touches stay as their text (migrate.rs, `translate_text`).
        let text = self
            .chain
            .translate_text(json, stored, asked, newest, on_conflict)
            .map_err(|c| Error::MigrationFailed {
                path: path.clone(),
                reason: c.0,
            })?;
        Ok(text.map(Json::from_string))
    }
}

/// Whether any namespace has migration steps.
fn has_steps(definitions: &Definitions) -> bool {
    definitions.values().any(|c| c.chain.has_steps())
}

/// The definition of the namespace of `path`, if it has one.
pub(crate) fn of_path<'d>(definitions: &'d Definitions, path: &KeyPath) -> Option<&'d Compiled> {
    definitions
        .get(path.last().namespace().as_str())
        .map(Arc::as_ref)
}

/// `item` (as stored: [`Item::schema_version`] its stamp) in the version `versions` names for
/// its namespace, the newest if none; an item of a namespace without a definition as it is.
///
/// # Errors
/// [`Error::UnknownSchemaVersion`]; a corrupt stored value.
pub(crate) fn item_in(
    definitions: &Definitions,
    item: &mut Item,
    versions: &SchemaVersions,
) -> Result<(), Error> {
    if let Some((json, asked)) = text_in(
        definitions,
        &item.path,
        item.value.as_str(),
        item.schema_version,
        versions,
    )? {
        if let Some(json) = json {
            item.value = json;
        }
        item.schema_version = asked;
    }
    Ok(())
}

/// [`item_in`] on the parts of an item: the value `json` of the item at `path`, stamped
/// `stored`, in the version `versions` asks of its namespace. `None`: no definition covers the
/// path; else the value's new text (`None`: unchanged) and that version.
///
/// # Errors
/// As [`item_in`].
pub(crate) fn text_in(
    definitions: &Definitions,
    path: &KeyPath,
    json: &str,
    stored: u64,
    versions: &SchemaVersions,
) -> Result<Option<(Option<Json>, u64)>, Error> {
    let Some(compiled) = of_path(definitions, path) else {
        return Ok(None);
    };
    let asked = match versions.get(compiled.stored.namespace.as_str()) {
        Some(v) => compiled.speaks(v)?,
        None => compiled.newest(),
    };
    let json = compiled.translate(path, json, stored, Some(asked), OnConflict::Replace)?;
    Ok(Some((json, asked)))
}

/// Stored JSON text of the item at `path`, stamped `stored`, in its namespace's newest version
/// (what aliases, filters and schema checks read); `None`: it is in that version already.
///
/// # Errors
/// A corrupt stored value.
pub(crate) fn newest_text(
    definitions: &Definitions,
    path: &KeyPath,
    json: &str,
    stored: u64,
) -> Result<Option<Json>, Error> {
    match of_path(definitions, path) {
        Some(compiled) => compiled.translate(path, json, stored, None, OnConflict::Replace),
        None => Ok(None),
    }
}

/// Every definition, by namespace.
pub(crate) type Definitions = BTreeMap<String, Arc<Compiled>>;

/// Fails with [`Error::InvalidRequest`] when `new` (`None`: the definition's removal) would
/// log again the groups of `namespace`, whose definition `current` keeps no change log: that
/// would leave a gap in their logs that no token could see.
pub(crate) fn log_stays_off(
    namespace: &str,
    current: &Definition,
    new: Option<&Definition>,
) -> Result<(), Error> {
    if current.keeps_changes() || new.is_some_and(|n| !n.keeps_changes()) {
        return Ok(());
    }
    Err(Error::InvalidRequest(format!(
        "namespace {namespace:?} keeps no change log (\"changes\": false), and that cannot be \
         undone: its groups' writes since have no log entries, so a feed or a listing check \
         resumed across them would miss changes unseen (docs/changes.md, \"Groups without a \
         change log\")"
    )))
}

/// Fails with [`Error::InvalidRequest`] when the group of `path` keeps no change log
/// ([`group_logged`]): what a change feed, its token or a listing check needs.
pub(crate) fn no_change_log(definitions: &Definitions, path: &KeyPath) -> Result<(), Error> {
    if group_logged(definitions, path) {
        Ok(())
    } else {
        Err(no_change_log_error(path))
    }
}

/// The refusal of [`no_change_log`].
pub(crate) fn no_change_log_error(path: &KeyPath) -> Error {
    Error::InvalidRequest(format!(
        "the group of {path} keeps no change log (its namespace {:?} is defined with \
         \"changes\": false): it has no change feed and no listing checks",
        path.group().namespace().as_str()
    ))
}

/// Whether the group of `path` (its first element) keeps a change log: its namespace's
/// [`Definition::changes`].
pub(crate) fn group_logged(definitions: &Definitions, path: &KeyPath) -> bool {
    definitions
        .get(path.group().namespace().as_str())
        .is_none_or(|c| c.stored.definition.keeps_changes())
}

/// The store's copy of the definitions (see the module's documentation).
pub(crate) struct Namespaces {
    state: RwLock<State>,
    /// Held while the definitions are read into a new copy, so that copies replace each other
    /// in the order they were read.
    reading: Mutex<()>,
    /// History kept by a put that asks for it in a namespace without a setting.
    default_retention: u32,
    /// How old the copy may get before a plan reads it again (others write the database).
    refresh: Option<Duration>,
}

struct State {
    definitions: Arc<Definitions>,
    /// The alias build records (aliases/builds.rs), read with the definitions.
    builds: Arc<Builds>,
    /// Whether a rewrite (write/rewrite.rs) may be under way: some definition has migration
    /// steps, until a run finds none pending.
    rewrites: bool,
    read_at: Instant,
}

impl Namespaces {
    /// The definitions stored in the database `reader` reads; `refresh`: see
    /// [`Namespaces::current`].
    pub(crate) fn load<R: Reader + ?Sized>(
        reader: &R,
        default_retention: u32,
        refresh: Option<Duration>,
    ) -> Result<Self, Error> {
        let definitions = read_all(reader, &Definitions::new())?;
        let builds = crate::aliases::builds::read_all(reader)?;
        Ok(Namespaces {
            state: RwLock::new(State {
                rewrites: has_steps(&definitions),
                definitions: Arc::new(definitions),
                builds: Arc::new(builds),
                read_at: Instant::now(),
            }),
            reading: Mutex::new(()),
            default_retention,
            refresh,
        })
    }

    /// The definitions, read again through `reader` first if the copy is older than the
    /// refresh interval (only where others write the database). One thread reads them again
    /// while the others wait for its copy: at most one read per interval.
    pub(crate) fn current<R: Reader + ?Sized>(
        &self,
        reader: &R,
    ) -> Result<Arc<Definitions>, Error> {
        self.current_opening(|| Ok(reader))
    }

    /// [`Namespaces::current`] with a reader `open` makes only if the copy must be read again:
    /// a point read that needs no other reader (the definitions for a translation) opens none
    /// where the copy is never stale (this process the only writer).
    pub(crate) fn current_opening<R: Reader + ?Sized, O: std::ops::Deref<Target = R>>(
        &self,
        open: impl FnOnce() -> Result<O, Error>,
    ) -> Result<Arc<Definitions>, Error> {
        let Some(every) = self.refresh else {
            return self.copy();
        };
        if self.read_at()?.elapsed() < every {
            return self.copy();
        }
        let _reading = self.reading.lock().map_err(|_| poisoned())?;
        // Another thread may have read them while this one waited.
        if self.read_at()?.elapsed() < every {
            return self.copy();
        }
        self.replace(&*open()?)
    }

    /// The alias build records as this store last read them (no read): what the background
    /// builder looks at, so that an idle server reads nothing.
    pub(crate) fn builds_cached(&self) -> Result<Arc<Builds>, Error> {
        Ok(Arc::clone(
            &self.state.read().map_err(|_| poisoned())?.builds,
        ))
    }

    /// The alias build records, as fresh as [`Namespaces::current`]'s definitions.
    pub(crate) fn builds<R: Reader + ?Sized>(&self, reader: &R) -> Result<Arc<Builds>, Error> {
        self.current(reader)?;
        Ok(Arc::clone(
            &self.state.read().map_err(|_| poisoned())?.builds,
        ))
    }

    /// Reads the definitions again after this store changed one, through a reader `open`
    /// makes once no other reading is under way: every such read starts after the commits
    /// before it, so the copy never goes back to an older state than one it held.
    pub(crate) fn reload<R: Reader>(
        &self,
        open: impl FnOnce() -> Result<R, Error>,
    ) -> Result<(), Error> {
        let _reading = self.reading.lock().map_err(|_| poisoned())?;
        self.replace(&open()?).map(|_| ())
    }

    /// Reads every definition through `reader` and makes it the copy (the caller holds
    /// `reading`).
    fn replace<R: Reader + ?Sized>(&self, reader: &R) -> Result<Arc<Definitions>, Error> {
        let known = self.copy()?;
        let read_at = Instant::now();
        let definitions = Arc::new(read_all(reader, &known)?);
        let builds = Arc::new(crate::aliases::builds::read_all(reader)?);
        let mut state = self.state.write().map_err(|_| poisoned())?;
        state.rewrites = state.rewrites
            || definitions.iter().any(|(name, c)| {
                c.chain.has_steps()
                    && state
                        .definitions
                        .get(name)
                        .is_none_or(|old| old.stored.version != c.stored.version)
            });
        state.definitions = Arc::clone(&definitions);
        state.builds = builds;
        state.read_at = read_at;
        Ok(definitions)
    }

    /// Whether a rewrite may be pending (see [`State::rewrites`]).
    pub(crate) fn rewrites_pending(&self) -> Result<bool, Error> {
        Ok(self.state.read().map_err(|_| poisoned())?.rewrites)
    }

    /// Records that no rewrite is pending, or that one may be.
    pub(crate) fn set_rewrites_pending(&self, pending: bool) -> Result<(), Error> {
        self.state.write().map_err(|_| poisoned())?.rewrites = pending;
        Ok(())
    }

    /// The most alias templates any namespace has (in the store's copy).
    pub(crate) fn most_aliases(&self) -> usize {
        self.copy()
            .map(|d| d.values().map(|c| c.aliases.len()).max().unwrap_or(0))
            .unwrap_or(MAX_ALIASES)
    }

    fn copy(&self) -> Result<Arc<Definitions>, Error> {
        Ok(Arc::clone(
            &self.state.read().map_err(|_| poisoned())?.definitions,
        ))
    }

    fn read_at(&self) -> Result<Instant, Error> {
        Ok(self.state.read().map_err(|_| poisoned())?.read_at)
    }

    /// Revisions to keep for a put of `path` (`asked`: the put asked for history), or `None`
    /// when it keeps none.
    pub(crate) fn retention(
        &self,
        definitions: &Definitions,
        path: &KeyPath,
        asked: bool,
    ) -> Option<u32> {
        let configured = definitions
            .get(path.last().namespace().as_str())
            .and_then(|c| c.stored.definition.history);
        match configured {
            Some(n) => Some(n),
            None if asked => Some(self.default_retention),
            None => None,
        }
    }
}

/// The compiled schema that values at `path` must fit, if its namespace has one.
///
/// # Errors
/// The namespace's stored schema does not compile.
fn schema_for<'d>(
    definitions: &'d Definitions,
    path: &KeyPath,
) -> Result<Option<&'d Schema>, Error> {
    let Some(compiled) = definitions.get(path.last().namespace().as_str()) else {
        return Ok(None);
    };
    compiled.schema.as_ref().map(Option::as_ref).map_err(|e| {
        StorageError::msg(format!(
            "the stored schema of namespace {:?} does not compile: {e}",
            compiled.stored.namespace
        ))
        .into()
    })
}

/// Fails with [`Error::SchemaViolation`] (`index`: the operation's, or an import's record's)
/// when `value`, stored JSON text for the item at `path`, does not fit its namespace's schema.
pub(crate) fn check_value(
    definitions: &Definitions,
    path: &KeyPath,
    index: usize,
    value: &[u8],
) -> Result<(), Error> {
    let Some(schema) = schema_for(definitions, path)? else {
        return Ok(());
    };
    let violations = schema.violations_of_text(value)?;
    if violations.is_empty() {
        return Ok(());
    }
    Err(Error::SchemaViolation {
        path: path.clone(),
        index,
        violations,
    })
}

fn poisoned() -> Error {
    StorageError::msg("namespace definitions: lock poisoned").into()
}

/// Checks a definition before it is stored: a valid namespace, a retention of at least 1, a
/// schema that compiles.
///
/// # Errors
/// [`Error::InvalidRequest`], [`Error::InvalidSchema`].
pub(crate) fn check(namespace: &str, definition: &Definition) -> Result<Option<Schema>, Error> {
    pathdb_keys::Namespace::new(namespace)
        .map_err(|rule| Error::InvalidRequest(format!("namespace {namespace:?}: {rule}")))?;
    if definition.history == Some(0) {
        return Err(Error::InvalidRequest(
            "history retention must be at least 1".into(),
        ));
    }
    check_aliases(&definition.aliases)?;
    compile_steps(&definition.migrate)?;
    definition
        .schema
        .as_ref()
        .map(|schema| Schema::compile_with(schema, definition.formats))
        .transpose()
}

/// The most migration steps one version declares.
pub const MAX_STEPS: usize = 256;

/// `steps`, compiled.
///
/// # Errors
/// [`Error::InvalidRequest`]: more than [`MAX_STEPS`], a bad step.
pub(crate) fn compile_steps(
    steps: &[Step],
) -> Result<Vec<crate::namespaces::migrate::Compiled>, Error> {
    if steps.len() > MAX_STEPS {
        return Err(Error::InvalidRequest(format!(
            "a definition version has at most {MAX_STEPS} migration steps, not {}",
            steps.len()
        )));
    }
    steps.iter().map(Step::compile).collect()
}

/// What replacing `current` (`None`: there is none) with `new` breaks
/// (namespaces/compat.rs), one sentence each.
///
/// # Errors
/// [`Error::InvalidRequest`]: steps with no previous version to migrate from, a bad step.
pub(crate) fn check_change(
    current: Option<&NamespaceDefinition>,
    new: &Definition,
) -> Result<Vec<String>, Error> {
    if let Some(current) = current {
        log_stays_off(&current.namespace, &current.definition, Some(new))?;
    }
    let steps = compile_steps(&new.migrate)?;
    let Some(current) = current else {
        if steps.is_empty() {
            return Ok(Vec::new());
        }
        return Err(Error::InvalidRequest(
            "`migrate` gives the steps from the previous definition version, and this namespace \
             has none"
                .into(),
        ));
    };
    // A namespace whose previous version had no schema promised no shape: the dry run says
    // what stored items would break.
    Ok(match (&current.definition.schema, &new.schema) {
        (Some(old), Some(new_schema)) => {
            crate::namespaces::compat::problems(old, new_schema, &steps, current.version)
        }
        _ => Vec::new(),
    })
}

/// At most [`MAX_ALIASES`] templates, each valid, none twice.
fn check_aliases(aliases: &[AliasDefinition]) -> Result<(), Error> {
    if aliases.len() > MAX_ALIASES {
        return Err(Error::InvalidRequest(format!(
            "a namespace has at most {MAX_ALIASES} aliases, not {}",
            aliases.len()
        )));
    }
    for (i, alias) in aliases.iter().enumerate() {
        if alias.path.len() > MAX_TEMPLATE_BYTES {
            return Err(Error::InvalidRequest(format!(
                "alias template {:?} is longer than {MAX_TEMPLATE_BYTES} bytes",
                alias.path
            )));
        }
        Template::parse(&alias.path)?;
        if aliases[..i].iter().any(|a| a.path == alias.path) {
            return Err(Error::InvalidRequest(format!(
                "alias template {:?} is listed twice",
                alias.path
            )));
        }
    }
    Ok(())
}

/// The longest alias template.
const MAX_TEMPLATE_BYTES: usize = 1024;

/// The stored form of `definition`.
pub(crate) fn to_value(definition: &Definition) -> Vec<u8> {
    // A struct of JSON values and numbers always serializes.
    serde_json::to_vec(definition).unwrap_or_default()
}

/// The definition stored in `record` (`None`: a tombstone).
pub(crate) fn from_record(
    namespace: &str,
    record: &Record,
) -> Result<Option<NamespaceDefinition>, Error> {
    if record.value.is_empty() {
        return Ok(None);
    }
    let corrupt =
        |e| StorageError::new(format!("corrupt definition of namespace {namespace:?}"), e);
    // An earlier build's history setting: a bare number.
    let definition = match serde_json::from_slice::<u32>(&record.value) {
        Ok(history) => Definition {
            history: Some(history),
            ..Definition::default()
        },
        Err(_) => serde_json::from_slice(&record.value).map_err(corrupt)?,
    };
    Ok(Some(NamespaceDefinition {
        namespace: namespace.to_owned(),
        version: record.version,
        created_at: Timestamp(record.created_at),
        modified_at: Timestamp(record.modified_at),
        definition,
    }))
}

/// Compiles a stored definition (see [`Compiled::schema`]).
pub(crate) fn compile(stored: NamespaceDefinition, kept: &[NamespaceDefinition]) -> Compiled {
    let schema = match &stored.definition.schema {
        Some(schema) => Schema::compile_with(schema, stored.definition.formats)
            .map(Some)
            .map_err(|e| e.to_string()),
        None => Ok(None),
    };
    let mut chain = Chain::default();
    let mut versions = BTreeSet::new();
    // Versions kept before a re-creation of the namespace count too: an item keeps its stamp.
    for version in kept
        .iter()
        .filter(|k| k.version < stored.version)
        .chain([&stored])
    {
        // Checked when stored; a step this build cannot read is left out.
        let steps = version
            .definition
            .migrate
            .iter()
            .filter_map(|s| s.compile().ok())
            .collect();
        chain.insert(version.version, steps);
        versions.insert(version.version);
    }
    let aliases = stored
        .definition
        .aliases
        .iter()
        .filter_map(|a| Template::parse(&a.path).ok())
        .collect();
    Compiled {
        stored,
        schema,
        aliases,
        chain,
        versions,
    }
}

/// Every stored definition, compiled; a definition whose version `known` holds already keeps
/// its compiled schema.
fn read_all<R: Reader + ?Sized>(reader: &R, known: &Definitions) -> Result<Definitions, Error> {
    let mut out = Definitions::new();
    // Read only when some definition changed: a copy refreshed with nothing new reads one
    // range, as before versions were kept.
    let mut kept: Option<BTreeMap<String, Vec<NamespaceDefinition>>> = None;
    for (sort, record) in reader.scan(
        layout::SYSTEM_PARTITION,
        &layout::namespace_range(None),
        Direction::Forward,
        usize::MAX,
    )? {
        let namespace = String::from_utf8_lossy(&sort[1..]).into_owned();
        if let Some(old) = known.get(&namespace)
            && old.stored.version == record.version
            && old.stored.modified_at.0 == record.modified_at
        {
            out.insert(namespace, Arc::clone(old));
            continue;
        }
        if let Some(stored) = from_record(&namespace, &record)? {
            if kept.is_none() {
                let mut by_namespace: BTreeMap<String, Vec<NamespaceDefinition>> = BTreeMap::new();
                for version in read_versions(reader, None)? {
                    by_namespace
                        .entry(version.namespace.clone())
                        .or_default()
                        .push(version);
                }
                kept = Some(by_namespace);
            }
            let versions = kept
                .as_ref()
                .and_then(|k| k.get(&namespace))
                .map_or(&[][..], Vec::as_slice);
            out.insert(namespace, Arc::new(compile(stored, versions)));
        }
    }
    Ok(out)
}

/// The definition of `namespace`, as `reader` shows it.
///
/// # Errors
/// Storage failures.
pub(crate) fn read_one<R: Reader + ?Sized>(
    reader: &R,
    namespace: &str,
) -> Result<Option<NamespaceDefinition>, Error> {
    match reader.get(&layout::namespace_key(namespace))? {
        Some(record) => from_record(namespace, &record),
        None => Ok(None),
    }
}

/// Up to `limit` definitions in namespace order, after the namespace `after`; the page holds
/// fewer than `limit` only at the end.
///
/// # Errors
/// Storage failures.
pub(crate) fn list<R: Reader + ?Sized>(
    reader: &R,
    after: Option<&str>,
    limit: usize,
) -> Result<Vec<NamespaceDefinition>, Error> {
    let mut out = Vec::new();
    let mut after = after.map(str::to_owned);
    // Tombstones take no place in a page: read on past them.
    while out.len() < limit {
        let entries = reader.scan(
            layout::SYSTEM_PARTITION,
            &layout::namespace_range(after.as_deref()),
            Direction::Forward,
            limit - out.len(),
        )?;
        let Some((last, _)) = entries.last() else {
            break;
        };
        after = Some(String::from_utf8_lossy(&last[1..]).into_owned());
        for (sort, record) in &entries {
            let namespace = String::from_utf8_lossy(&sort[1..]);
            out.extend(from_record(&namespace, record)?);
        }
    }
    Ok(out)
}

/// [`Error::InvalidRequest`] for a definition too large to store: it is one record, like an
/// item (DynamoDB's 400 KB).
///
/// # Errors
/// As above.
pub(crate) fn check_size(value: &[u8]) -> Result<(), Error> {
    let most = MAX_ITEM_BYTES - 1000;
    if value.len() > most {
        return Err(Error::InvalidRequest(format!(
            "a namespace definition takes at most {most} bytes as JSON, this one {}",
            value.len()
        )));
    }
    Ok(())
}

/// The kept versions of `namespace`, oldest first (`namespace: None`: of every namespace), as
/// `reader` shows them.
///
/// # Errors
/// Storage failures, a corrupt record.
pub(crate) fn read_versions<R: Reader + ?Sized>(
    reader: &R,
    namespace: Option<&str>,
) -> Result<Vec<NamespaceDefinition>, Error> {
    let mut out = Vec::new();
    for (sort, record) in reader.scan(
        layout::SYSTEM_PARTITION,
        &layout::definition_version_range(namespace),
        Direction::Forward,
        usize::MAX,
    )? {
        let Some((name, _)) = layout::parse_definition_version(&sort) else {
            continue;
        };
        out.extend(from_record(&name, &record)?);
    }
    Ok(out)
}

/// Version `version` of `namespace`, if kept.
///
/// # Errors
/// Storage failures, a corrupt record.
pub(crate) fn read_version<R: Reader + ?Sized>(
    reader: &R,
    namespace: &str,
    version: u64,
) -> Result<Option<NamespaceDefinition>, Error> {
    match reader.get(&layout::definition_version_key(namespace, version))? {
        Some(record) => from_record(namespace, &record),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::Schema;
    use serde_json::json;

    /// docs/namespaces.md, "The schema language": `format` is an annotation in 2020-12 (the
    /// default) and 2019-09, and checked in drafts 7, 6 and 4.
    #[test]
    fn format_is_checked_as_each_draft_says() {
        let refused = |draft: Option<&str>| {
            let mut schema = json!({"type": "string", "format": "email"});
            if let Some(draft) = draft {
                schema["$schema"] = json!(draft);
            }
            let schema = Schema::compile(&schema).expect("a schema");
            assert!(schema.violations(&json!("ada@example.com")).is_empty());
            !schema.violations(&json!("notanemail")).is_empty()
        };
        assert!(!refused(None));
        assert!(!refused(Some(
            "https://json-schema.org/draft/2020-12/schema"
        )));
        assert!(!refused(Some(
            "https://json-schema.org/draft/2019-09/schema"
        )));
        assert!(refused(Some("http://json-schema.org/draft-07/schema#")));
        assert!(refused(Some("http://json-schema.org/draft-04/schema#")));
    }
}
