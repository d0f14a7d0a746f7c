//! `pathdb ns`: namespace definitions (a JSON Schema checked on every write, history, a
//! description, migration steps between versions), on a local file or through `--server`,
//! with the same output. See docs/namespaces.md and docs/migrations.md.

use super::output::{bar, rfc3339, write_table};
use crate::db::Db;
use crate::exit::Failure;
use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use pathdb_store::{
    AliasBuild, AliasDefinition, AliasState, Condition, MigrationStep, NamespaceDefinition,
    ViolatingItem,
};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

#[derive(Subcommand, Debug)]
pub enum NsCommand {
    /// List the namespace definitions.
    Ls,
    /// Print a namespace's definition (its schema as JSON).
    Get(NsArgs),
    /// Create or change a namespace's definition: the members given replace the stored ones,
    /// the others stay. Applies to every write from then on; stored items are not checked
    /// again (`ns check` first says which would fail).
    Set(SetArgs),
    /// Remove a namespace's definition; its items stay.
    Rm(NsArgs),
    /// Dry run: what a schema would say about the namespace's stored items, without storing
    /// it. Reads every item of the database.
    Check(CheckArgs),
    /// List the namespace's stored items that its schema refuses. Reads every item of the
    /// database.
    Violations(NsArgs),
    /// Show the namespace's alias templates and their builds; wait for builds under way, with
    /// a progress bar (docs/aliases.md).
    Aliases(AliasesArgs),
    /// Start an alias build that stopped in conflict again (fix the items it listed first),
    /// and wait for it.
    Retry(RetryArgs),
    /// List the kept versions of a namespace's definition, with the migration steps from each
    /// version to the next (docs/migrations.md).
    Versions(NsArgs),
}

#[derive(Args, Debug)]
pub struct AliasesArgs {
    /// The namespace.
    namespace: String,
    /// Show where the builds stand and return, without waiting.
    #[arg(long)]
    no_wait: bool,
}

impl AliasesArgs {
    /// Whether the command waits for (and on a local file runs) the builds.
    pub fn waits(&self) -> bool {
        !self.no_wait
    }
}

#[derive(Args, Debug)]
pub struct RetryArgs {
    /// The namespace.
    namespace: String,
    /// The template whose build stopped in conflict (`/email-{email}`).
    template: String,
}

#[derive(Args, Debug)]
pub struct NsArgs {
    /// The namespace (`post` for items like /user-7/post-2).
    namespace: String,
}

#[derive(Args, Debug)]
pub struct SetArgs {
    /// The namespace.
    namespace: String,
    /// A JSON Schema file (draft 2020-12 unless its `$schema` names another); `-` for stdin.
    #[arg(long, value_name = "FILE")]
    schema: Option<PathBuf>,
    /// Remove the schema: any JSON is accepted again.
    #[arg(long, conflicts_with = "schema")]
    no_schema: bool,
    /// Revisions kept per item (history on).
    #[arg(long, value_name = "N")]
    history: Option<u32>,
    /// Turn history off (only puts that ask for it keep revisions).
    #[arg(long, conflicts_with = "history")]
    no_history: bool,
    /// A description, for people.
    #[arg(long, value_name = "TEXT")]
    description: Option<String>,
    /// An alias template (repeat for several, at most 8): a key path whose ids may be
    /// `{member}`, `{!member}` (descending) or `{@namespace}`, e.g. `/email-{email}`. The
    /// templates given replace the stored ones; aliases of stored items are built (see
    /// docs/aliases.md).
    #[arg(long = "alias", value_name = "TEMPLATE")]
    aliases: Vec<String>,
    /// Remove every alias template.
    #[arg(long, conflicts_with = "aliases")]
    no_aliases: bool,
    /// Do not wait for alias builds (`pathdb ns aliases NS` shows them).
    #[arg(long)]
    no_wait: bool,
    /// The migration steps from the current version's values to the new one's: a JSON array
    /// of steps (`[{"op": "rename", "from": "/name", "to": "/full_name"}]`; docs/migrations.md);
    /// `-` for stdin. Without it the new version has none.
    #[arg(long, value_name = "FILE")]
    migrate: Option<PathBuf>,
    /// Store a version that breaks stored items or clients of older versions (refused
    /// otherwise, naming each problem).
    #[arg(long)]
    force: bool,
    /// Whether the schema's `format` keywords are checked: `assert`, or `annotate` (never);
    /// without it, as the schema's draft says (not checked in 2020-12).
    #[arg(long, value_name = "MODE", value_parser = ["assert", "annotate"])]
    formats: Option<String>,
    /// The groups of this namespace (paths whose first element is of it) keep no change log:
    /// a write there is the item alone, and the group has no change feed, listing
    /// `changes_token` or listing checks. Cannot be undone (docs/changes.md, "Groups without
    /// a change log").
    #[arg(long)]
    no_changes: bool,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The namespace.
    namespace: String,
    /// The JSON Schema to try; `-` for stdin.
    #[arg(long, value_name = "FILE")]
    schema: PathBuf,
    /// The migration steps the new version would carry (`ns set --migrate`): each stored item
    /// is brought through them before the schema reads it.
    #[arg(long, value_name = "FILE")]
    migrate: Option<PathBuf>,
}

pub fn run(db: &dyn Db, cmd: NsCommand, out: super::Output) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match cmd {
        NsCommand::Ls => {
            let all = db.namespaces()?;
            if out.json {
                for d in &all {
                    writeln!(stdout, "{}", definition_json(d))?;
                }
                return Ok(());
            }
            let rows: Vec<[String; 5]> = all
                .iter()
                .map(|d| {
                    let def = &d.definition;
                    [
                        d.namespace.clone(),
                        d.version.to_string(),
                        if def.schema.is_some() { "yes" } else { "no" }.to_owned(),
                        def.history.map_or("-".to_owned(), |n| n.to_string()),
                        def.description.clone().unwrap_or_default(),
                    ]
                })
                .collect();
            write_table(
                &mut stdout,
                ["NAMESPACE", "VERSION", "SCHEMA", "HISTORY", "DESCRIPTION"],
                &rows,
                &[1],
            )?;
        }
        NsCommand::Get(args) => {
            let d = db
                .namespace(&args.namespace)?
                .ok_or_else(|| no_definition(&args.namespace))?;
            print_definition(&mut stdout, &d, out.json)?;
        }
        NsCommand::Set(args) => {
            let current = db.namespace(&args.namespace)?;
            let condition = Some(match &current {
                Some(c) => Condition::IfVersion(c.version),
                None => Condition::MustNotExist,
            });
            let mut definition = current.map(|c| c.definition).unwrap_or_default();
            if let Some(file) = &args.schema {
                definition.schema = Some(read_json(file)?);
            }
            if args.no_schema {
                definition.schema = None;
            }
            if let Some(n) = args.history {
                definition.history = Some(n);
            }
            if args.no_history {
                definition.history = None;
            }
            if let Some(text) = args.description {
                definition.description = Some(text).filter(|t| !t.is_empty());
            }
            // A new version: only the steps given lead into it.
            definition.migrate = match &args.migrate {
                Some(file) => read_steps(file)?,
                None => Vec::new(),
            };
            if let Some(mode) = &args.formats {
                definition.formats =
                    serde_json::from_value(serde_json::Value::String(mode.clone()))?;
            }
            if args.no_changes {
                definition.changes = Some(false);
            }
            if !args.aliases.is_empty() || args.no_aliases {
                definition.aliases = args
                    .aliases
                    .iter()
                    .map(|t| AliasDefinition { path: t.clone() })
                    .collect();
            }
            let (stored, created) =
                db.define_namespace(&args.namespace, definition, condition, args.force)?;
            if out.json {
                writeln!(stdout, "{}", definition_json(&stored))?;
            } else {
                let verb = if created { "defined" } else { "changed" };
                writeln!(
                    stdout,
                    "{verb} namespace {} (version {})",
                    stored.namespace, stored.version
                )?;
            }
            if !args.no_wait {
                wait_for_builds(db, &args.namespace, &mut stdout, out.json)?;
            }
        }
        NsCommand::Versions(args) => {
            let versions = db.namespace_versions(&args.namespace)?;
            if versions.is_empty() {
                return Err(no_definition(&args.namespace));
            }
            if out.json {
                for d in &versions {
                    writeln!(stdout, "{}", definition_json(d))?;
                }
                return Ok(());
            }
            let rows: Vec<[String; 3]> = versions
                .iter()
                .map(|d| {
                    let steps: Vec<String> =
                        d.definition.migrate.iter().map(describe_step).collect();
                    [
                        d.version.to_string(),
                        rfc3339(d.modified_at),
                        if steps.is_empty() {
                            "-".to_owned()
                        } else {
                            steps.join("; ")
                        },
                    ]
                })
                .collect();
            write_table(
                &mut stdout,
                ["VERSION", "DEFINED", "STEPS FROM THE VERSION BEFORE"],
                &rows,
                &[0],
            )?;
        }
        NsCommand::Aliases(args) => {
            if args.no_wait {
                print_builds(&mut stdout, &db.alias_builds(&args.namespace)?, out.json)?;
            } else {
                wait_for_builds(db, &args.namespace, &mut stdout, out.json)?;
            }
        }
        NsCommand::Retry(args) => {
            db.retry_alias_build(&args.namespace, &args.template)?;
            wait_for_builds(db, &args.namespace, &mut stdout, out.json)?;
        }
        NsCommand::Rm(args) => {
            let removed = db
                .delete_namespace(&args.namespace)?
                .ok_or_else(|| no_definition(&args.namespace))?;
            if out.json {
                writeln!(stdout, "{}", definition_json(&removed))?;
            } else {
                writeln!(
                    stdout,
                    "removed the definition of namespace {} (its items stay)",
                    removed.namespace
                )?;
            }
        }
        NsCommand::Check(args) => {
            let schema = read_json(&args.schema)?;
            // Through a server the dry run is one request: the spinner shows it is under way.
            let bar = bar("{spinner} read {pos} records ({elapsed})");
            bar.enable_steady_tick(std::time::Duration::from_millis(120));
            let steps = match &args.migrate {
                Some(file) => read_steps(file)?,
                None => Vec::new(),
            };
            let result = db.check_schema(&args.namespace, &schema, &steps, &mut |n| {
                bar.set_position(n)
            });
            bar.finish_and_clear();
            let check = result?;
            if out.json {
                let first: Vec<_> = check.first.iter().map(violating_json).collect();
                let line = serde_json::json!({
                    "checked": check.checked, "violating": check.violating, "first": first
                });
                writeln!(stdout, "{line}")?;
                return Ok(());
            }
            writeln!(
                stdout,
                "{} of {} stored {} items would violate this schema",
                check.violating, check.checked, args.namespace
            )?;
            for item in &check.first {
                print_violating(&mut stdout, item)?;
            }
            if check.violating > check.first.len() as u64 {
                writeln!(
                    stdout,
                    "(the first {} shown; `pathdb ns violations {}` lists all once the schema is set)",
                    check.first.len(),
                    args.namespace
                )?;
            }
        }
        NsCommand::Violations(args) => {
            let bar = bar("{spinner} checked {pos} items, {msg} refused");
            let (mut cursor, mut checked, mut refused) = (None, 0u64, 0u64);
            loop {
                let page = db.namespace_violations(&args.namespace, cursor, 100)?;
                checked += page.checked;
                refused += page.items.len() as u64;
                bar.set_position(checked);
                bar.set_message(refused.to_string());
                for item in &page.items {
                    if out.json {
                        writeln!(stdout, "{}", violating_json(item))?;
                    } else {
                        bar.suspend(|| print_violating(&mut stdout, item))?;
                    }
                }
                match page.cursor {
                    Some(next) => cursor = Some(next),
                    None => break,
                }
            }
            bar.finish_and_clear();
            if !out.json {
                writeln!(
                    stdout,
                    "{refused} of {checked} stored {} items violate its schema",
                    args.namespace
                )?;
            }
        }
    }
    Ok(())
}

/// Waits for the namespace's alias builds with a progress bar, then prints where they stand;
/// a build in conflict fails the command (exit status 3) after listing its items.
fn wait_for_builds(db: &dyn Db, namespace: &str, out: &mut impl Write, json: bool) -> Result<()> {
    let bar =
        bar("{spinner} building aliases: {pos} items checked, {msg} aliases written ({elapsed})");
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    let builds = loop {
        let builds = db.alias_builds(namespace)?;
        let pending = builds
            .iter()
            .filter(|b| matches!(b.state, AliasState::Building | AliasState::Removing));
        let (checked, written) = pending
            .clone()
            .fold((0, 0), |(c, w), b| (c + b.checked, w + b.written));
        bar.set_position(checked);
        bar.set_message(written.to_string());
        if pending.count() == 0 || builds.iter().any(|b| b.state == AliasState::Conflict) {
            break builds;
        }
        db.step_alias_builds()?;
    };
    bar.finish_and_clear();
    print_builds(out, &builds, json)?;
    if let Some(stuck) = builds.iter().find(|b| b.state == AliasState::Conflict) {
        return Err(Failure::AliasConflict(format!(
            "the build of alias {} stopped: {} items share an alias; change them, then `pathdb ns retry {namespace} '{}'`",
            stuck.template,
            stuck.conflicts.iter().map(|c| c.items.len()).sum::<usize>(),
            stuck.template
        ))
        .into());
    }
    Ok(())
}

/// One line per template: its state and counts, then any conflict's items.
fn print_builds(out: &mut impl Write, builds: &[AliasBuild], json: bool) -> Result<()> {
    for b in builds {
        if json {
            writeln!(out, "{}", build_json(b))?;
            continue;
        }
        writeln!(
            out,
            "{}  {}  ({} items checked, {} aliases written)",
            b.template, b.state, b.checked, b.written
        )?;
        for c in &b.conflicts {
            let items: Vec<String> = c.items.iter().map(ToString::to_string).collect();
            writeln!(out, "  {} is wanted by {}", c.alias, items.join(" and "))?;
        }
    }
    Ok(())
}

fn build_json(b: &AliasBuild) -> serde_json::Value {
    let conflicts: Vec<serde_json::Value> = b
        .conflicts
        .iter()
        .map(|c| {
            let items: Vec<String> = c.items.iter().map(ToString::to_string).collect();
            serde_json::json!({"alias": c.alias.to_string(), "items": items})
        })
        .collect();
    serde_json::json!({
        "path": b.template, "state": b.state.as_str(), "checked": b.checked,
        "written": b.written, "conflicts": conflicts
    })
}

fn no_definition(namespace: &str) -> anyhow::Error {
    Failure::NotFound(format!("namespace {namespace} has no definition")).into()
}

/// A JSON file (`-`: stdin).
/// A file of migration steps: a JSON array of them.
fn read_steps(file: &Path) -> Result<Vec<MigrationStep>> {
    let value = read_json(file)?;
    serde_json::from_value(value)
        .with_context(|| format!("{}: not a JSON array of migration steps", file.display()))
}

/// A step as people read it: `rename /name -> /full_name`.
fn describe_step(step: &MigrationStep) -> String {
    match step {
        MigrationStep::Rename { from, to } => format!("rename {from} -> {to}"),
        MigrationStep::Add { path, default } => format!("add {path} (default {default})"),
        MigrationStep::Remove {
            path,
            read_default: Some(d),
        } => format!("remove {path} (older readers see {d})"),
        MigrationStep::Remove { path, .. } => format!("remove {path}"),
        MigrationStep::RenameValue { path, from, to } => {
            format!("rename value {from:?} -> {to:?} at {path}")
        }
    }
}

fn read_json(file: &Path) -> Result<serde_json::Value> {
    let mut text = String::new();
    if file.as_os_str() == "-" {
        std::io::stdin().read_to_string(&mut text)?;
    } else {
        text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    }
    match serde_json::from_str(&text) {
        Ok(value) => Ok(value),
        Err(e) => bail!("{} is not JSON: {e}", file.display()),
    }
}

/// A definition as the server answers it.
pub fn definition_json(d: &NamespaceDefinition) -> serde_json::Value {
    serde_json::json!({
        "namespace": d.namespace,
        "version": d.version,
        "created_at": d.created_at.micros(),
        "modified_at": d.modified_at.micros(),
        "schema": d.definition.schema,
        "history": d.definition.history,
        "description": d.definition.description,
        "aliases": d.definition.aliases,
        "migrate": d.definition.migrate,
        "formats": d.definition.formats,
        "changes": d.definition.changes,
    })
}

fn print_definition(out: &mut impl Write, d: &NamespaceDefinition, json: bool) -> Result<()> {
    if json {
        writeln!(out, "{}", definition_json(d))?;
        return Ok(());
    }
    let def = &d.definition;
    writeln!(out, "namespace:   {}", d.namespace)?;
    writeln!(out, "version:     {}", d.version)?;
    writeln!(out, "modified:    {}", rfc3339(d.modified_at))?;
    let history = def
        .history
        .map_or("off".to_owned(), |n| format!("{n} revisions"));
    writeln!(out, "history:     {history}")?;
    if !def.keeps_changes() {
        writeln!(out, "changes:     none (its groups keep no change log)")?;
    }
    if let Some(text) = &def.description {
        writeln!(out, "description: {text}")?;
    }
    for (i, alias) in def.aliases.iter().enumerate() {
        let label = if i == 0 { "aliases:" } else { "" };
        writeln!(out, "{label:<13}{}", alias.path)?;
    }
    for (i, step) in def.migrate.iter().enumerate() {
        let label = if i == 0 { "migrate:" } else { "" };
        writeln!(out, "{label:<13}{}", describe_step(step))?;
    }
    match &def.schema {
        Some(schema) => writeln!(
            out,
            "schema:\n{}",
            serde_json::to_string_pretty(schema).unwrap_or_default()
        )?,
        None => writeln!(out, "schema:      none (any JSON)")?,
    }
    Ok(())
}

fn violating_json(item: &ViolatingItem) -> serde_json::Value {
    serde_json::json!({
        "path": item.path.to_string(), "version": item.version, "violations": item.violations
    })
}

fn print_violating(out: &mut impl Write, item: &ViolatingItem) -> std::io::Result<()> {
    writeln!(out, "{} (version {})", item.path, item.version)?;
    for v in &item.violations {
        writeln!(out, "{}", crate::exit::violation_line(v))?;
    }
    Ok(())
}
