//! `pathdb codegen`: typed clients from the namespace definitions. The CLI only exports the
//! definitions as one bundle; the types come from each ecosystem's own generator, run from the
//! client packages (json-schema-to-typescript behind `pathdb-codegen` in @pathdb/client,
//! datamodel-code-generator behind `python -m pathdb.codegen`). See docs/namespaces.md.

use super::ns::definition_json;
use crate::db::Db;
use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use pathdb_store::SchemaVersions;
use std::path::{Path, PathBuf};

/// The bundle's format version (`pathdb_namespaces`).
const BUNDLE_VERSION: u32 = 1;
/// The bundle's name in a generator's output directory.
const BUNDLE_FILE: &str = "pathdb-namespaces.json";

#[derive(Subcommand, Debug)]
pub enum CodegenCommand {
    /// Write every namespace definition as one JSON bundle, the generators' input.
    Schemas {
        /// The file to write; stdout without it.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// TypeScript: a value type per namespace with a schema and a key path builder per
    /// namespace, in DIR/index.ts (run by @pathdb/client's `pathdb-codegen`).
    Typescript(GenerateArgs),
    /// Python: TypedDicts per namespace with a schema and key path builders, in a package DIR
    /// (run by the pathdb package's `python -m pathdb.codegen`, with its `codegen` extra).
    Python(GenerateArgs),
}

#[derive(Args, Debug)]
pub struct GenerateArgs {
    /// The directory to write (created if missing).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// The generator to run with the bundle and DIR as its two last arguments, through `sh`
    /// [default: `npx --no-install pathdb-codegen` for typescript, `python3 -m
    /// pathdb.codegen` for python].
    #[arg(long, value_name = "COMMAND")]
    generator: Option<String>,
}

/// Runs a codegen command; `versions`: the definition version to generate each namespace's
/// types from (`--schema-version`; the newest where none is named).
pub fn run(db: &dyn Db, cmd: CodegenCommand, versions: &SchemaVersions) -> Result<()> {
    let bundle = bundle(db, versions)?;
    let (args, default) = match cmd {
        CodegenCommand::Schemas { out: None } => {
            use std::io::Write as _;
            writeln!(std::io::stdout().lock(), "{bundle}")?;
            return Ok(());
        }
        CodegenCommand::Schemas { out: Some(file) } => {
            return write(&file, &bundle);
        }
        CodegenCommand::Typescript(args) => (args, "npx --no-install pathdb-codegen"),
        CodegenCommand::Python(args) => (args, "python3 -m pathdb.codegen"),
    };
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let file = args.out.join(BUNDLE_FILE);
    write(&file, &bundle)?;
    let generator = args.generator.as_deref().unwrap_or(default);
    // Through the shell, so that the generator may be a command with arguments of its own; the
    // bundle and the directory follow as "$@", never interpolated into the command's text.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{generator} \"$@\""))
        .arg("sh")
        .arg(&file)
        .arg(&args.out)
        .status()
        .with_context(|| format!("running {generator}"))?;
    if !status.success() {
        bail!(
            "the generator `{generator}` failed ({status}); the bundle is in {} (see docs/namespaces.md for installing the generators)",
            file.display()
        );
    }
    Ok(())
}

/// Every definition, in namespace order, as `{"pathdb_namespaces": 1, "namespaces": [...]}`:
/// each at the version `versions` names (its `version` says which: the generated clients send
/// it as their `Schema-Version`, docs/migrations.md).
fn bundle(db: &dyn Db, versions: &SchemaVersions) -> Result<String> {
    let mut namespaces = Vec::new();
    let current = db.namespaces()?;
    for (name, _) in versions.iter() {
        if !current.iter().any(|d| d.namespace == name) {
            bail!("--schema-version names {name}, which has no definition");
        }
    }
    for definition in current {
        let chosen = match versions.get(&definition.namespace) {
            Some(v) => db
                .namespace_version(&definition.namespace, v)?
                .with_context(|| {
                    format!(
                        "namespace {} has no version {v} kept (`pathdb ns versions {}` lists them)",
                        definition.namespace, definition.namespace
                    )
                })?,
            None => definition,
        };
        namespaces.push(definition_json(&chosen));
    }
    let bundle = serde_json::json!({
        "pathdb_namespaces": BUNDLE_VERSION,
        "namespaces": namespaces,
    });
    Ok(serde_json::to_string_pretty(&bundle)?)
}

fn write(file: &Path, text: &str) -> Result<()> {
    std::fs::write(file, format!("{text}\n")).with_context(|| format!("writing {}", file.display()))
}
