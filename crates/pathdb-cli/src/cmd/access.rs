//! `pathdb role` and `pathdb token`: roles (path rules) and issued tokens (docs/access.md), on a
//! local file or through `--server` (which needs an admin token), with the same output.

use super::output::{rfc3339, write_table};
use crate::db::Db;
use crate::exit::Failure;
use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use pathdb_store::{NewToken, Op, Role, Rule, StoredRole, Timestamp, TokenInfo};
use serde_json::{Map, Value, json};
use std::io::Write;

#[derive(Subcommand, Debug)]
pub enum RoleCommand {
    /// List the roles, the built-in ones (read, read-write, admin) included.
    Ls,
    /// Print a role's rules.
    Get(RoleName),
    /// Create or replace a role: `pathdb role set member --rule '/team-{team}/**=read,write'`.
    Set(RoleSetArgs),
    /// Delete a role; its tokens stay and allow nothing while no role has the name.
    Rm(RoleName),
}

#[derive(Args, Debug)]
pub struct RoleName {
    /// The role.
    name: String,
}

#[derive(Args, Debug)]
pub struct RoleSetArgs {
    /// The role.
    name: String,
    /// A rule: a key path template, `=`, and what it allows (`read`, `write`, `admin`, comma
    /// separated): `/team-{team}/**=read,write`, `/public-1/doc-*=read`. Repeatable; the rules
    /// given replace the stored ones.
    #[arg(long = "rule", value_name = "TEMPLATE=OPS", required = true)]
    rules: Vec<String>,
    /// For people.
    #[arg(long)]
    description: Option<String>,
    /// Only if the role is at this version (else exit status 3).
    #[arg(long, value_name = "N")]
    if_version: Option<u64>,
}

#[derive(Subcommand, Debug)]
pub enum TokenCommand {
    /// Issue a token; its secret is printed once, and stored only as a hash.
    Create(TokenCreateArgs),
    /// List the issued tokens (no secrets).
    Ls,
    /// Revoke a token: refused from the next request on.
    Rm(TokenId),
}

#[derive(Args, Debug)]
pub struct TokenCreateArgs {
    /// The role whose rules it has.
    #[arg(long)]
    role: String,
    /// A variable of the role's rules: `team=7` (an integer), `sub=alice` (a string).
    /// Repeatable.
    #[arg(long = "var", value_name = "NAME=VALUE")]
    vars: Vec<String>,
    /// Seconds until it stops working (default: never, until revoked).
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    expires_in: Option<u64>,
    /// For people.
    #[arg(long)]
    description: Option<String>,
}

#[derive(Args, Debug)]
pub struct TokenId {
    /// The token's id (as `token ls` shows it).
    id: String,
}

/// Runs a `role` command.
pub fn role(db: &dyn Db, cmd: RoleCommand, out: super::Output) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match cmd {
        RoleCommand::Ls => {
            let roles = db.roles()?;
            if out.json {
                for r in &roles {
                    writeln!(stdout, "{}", role_json(r))?;
                }
                return Ok(());
            }
            let rows: Vec<[String; 4]> = roles
                .iter()
                .map(|r| {
                    [
                        r.name.clone(),
                        if r.builtin {
                            "built in".to_owned()
                        } else {
                            r.version.to_string()
                        },
                        r.role
                            .rules
                            .iter()
                            .map(rule_text)
                            .collect::<Vec<_>>()
                            .join("  "),
                        r.role.description.clone().unwrap_or_default(),
                    ]
                })
                .collect();
            write_table(
                &mut stdout,
                ["ROLE", "VERSION", "RULES", "DESCRIPTION"],
                &rows,
                &[],
            )?;
        }
        RoleCommand::Get(RoleName { name }) => {
            let role = db
                .role(&name)?
                .ok_or_else(|| Failure::NotFound(format!("there is no role {name}")))?;
            print_role(&mut stdout, &role, out.json)?;
        }
        RoleCommand::Set(args) => {
            let rules = args
                .rules
                .iter()
                .map(|r| parse_rule(r))
                .collect::<Result<_>>()?;
            let role = Role {
                rules,
                description: args.description,
            };
            let condition = args.if_version.map(pathdb_store::Condition::IfVersion);
            let (stored, created) = db.put_role(&args.name, &role, condition)?;
            if out.json {
                writeln!(stdout, "{}", role_json(&stored))?;
            } else {
                let verb = if created { "created" } else { "changed" };
                writeln!(
                    stdout,
                    "{verb} role {} (version {})",
                    stored.name, stored.version
                )?;
            }
        }
        RoleCommand::Rm(RoleName { name }) => {
            let removed = db
                .delete_role(&name)?
                .ok_or_else(|| Failure::NotFound(format!("there is no role {name}")))?;
            if out.json {
                writeln!(stdout, "{}", role_json(&removed))?;
            } else {
                writeln!(stdout, "deleted role {name}")?;
            }
        }
    }
    Ok(())
}

/// Runs a `token` command.
pub fn token(db: &dyn Db, cmd: TokenCommand, out: super::Output) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match cmd {
        TokenCommand::Create(args) => {
            let mut vars = Map::new();
            for var in &args.vars {
                let (name, value) = var
                    .split_once('=')
                    .with_context(|| format!("--var {var:?}: write NAME=VALUE"))?;
                // An integer where it reads as one, else a string: as a key path reads an id.
                let value = value
                    .parse::<i64>()
                    .map_or_else(|_| Value::String(value.to_owned()), Value::from);
                vars.insert(name.to_owned(), value);
            }
            let expires_at = args.expires_in.map(|s| {
                let micros = i64::try_from(s.saturating_mul(1_000_000)).unwrap_or(i64::MAX);
                Timestamp(Timestamp::now().0.saturating_add(micros))
            });
            let token = NewToken {
                role: args.role,
                vars,
                expires_at,
                description: args.description,
            };
            let (info, secret) = db.create_token(&token)?;
            if out.json {
                let mut line = token_json(&info);
                line["token"] = Value::String(secret);
                writeln!(stdout, "{line}")?;
            } else {
                writeln!(stdout, "{secret}")?;
                eprintln!(
                    "token {} ({}): shown only now; it is stored only as a hash",
                    info.id, info.role
                );
            }
        }
        TokenCommand::Ls => {
            let tokens = db.tokens()?;
            if out.json {
                for t in &tokens {
                    writeln!(stdout, "{}", token_json(t))?;
                }
                return Ok(());
            }
            let when = |t: Option<Timestamp>| t.map_or_else(|| "-".to_owned(), rfc3339);
            let rows: Vec<[String; 7]> = tokens
                .iter()
                .map(|t| {
                    [
                        t.id.clone(),
                        t.role.clone(),
                        Value::Object(t.vars.clone()).to_string(),
                        rfc3339(t.created_at),
                        when(t.expires_at),
                        when(t.last_used_at),
                        t.description.clone().unwrap_or_default(),
                    ]
                })
                .collect();
            write_table(
                &mut stdout,
                [
                    "ID",
                    "ROLE",
                    "VARS",
                    "CREATED",
                    "EXPIRES",
                    "LAST USED",
                    "DESCRIPTION",
                ],
                &rows,
                &[],
            )?;
        }
        TokenCommand::Rm(TokenId { id }) => {
            if !db.revoke_token(&id)? {
                return Err(Failure::NotFound(format!("there is no token {id}")).into());
            }
            if !out.json {
                writeln!(stdout, "revoked token {id}")?;
            }
        }
    }
    Ok(())
}

/// `TEMPLATE=read,write`.
fn parse_rule(text: &str) -> Result<Rule> {
    let Some((path, ops)) = text.rsplit_once('=') else {
        bail!("--rule {text:?}: write TEMPLATE=OPS, e.g. '/team-{{team}}/**=read,write'");
    };
    let allow = ops
        .split(',')
        .map(|op| match op.trim() {
            "read" => Ok(Op::Read),
            "write" => Ok(Op::Write),
            "admin" => Ok(Op::Admin),
            other => bail!("--rule {text:?}: unknown operation {other:?} (read, write, admin)"),
        })
        .collect::<Result<_>>()?;
    Ok(Rule {
        path: path.to_owned(),
        allow,
    })
}

fn rule_text(rule: &Rule) -> String {
    let ops: Vec<&str> = rule.allow.iter().map(|o| o.as_str()).collect();
    format!("{}={}", rule.path, ops.join(","))
}

fn print_role(out: &mut impl Write, role: &StoredRole, json: bool) -> Result<()> {
    if json {
        writeln!(out, "{}", role_json(role))?;
        return Ok(());
    }
    writeln!(out, "role {}", role.name)?;
    if role.builtin {
        writeln!(out, "built in")?;
    } else {
        writeln!(out, "version {}", role.version)?;
        writeln!(out, "modified {}", rfc3339(role.modified_at))?;
    }
    if let Some(d) = &role.role.description {
        writeln!(out, "description {d}")?;
    }
    for rule in &role.role.rules {
        writeln!(out, "rule {}", rule_text(rule))?;
    }
    Ok(())
}

fn role_json(role: &StoredRole) -> Value {
    json!({
        "name": role.name,
        "rules": role.role.rules,
        "description": role.role.description,
        "version": role.version,
        "created_at": role.created_at.micros(),
        "modified_at": role.modified_at.micros(),
        "builtin": role.builtin,
    })
}

fn token_json(t: &TokenInfo) -> Value {
    json!({
        "id": t.id,
        "role": t.role,
        "vars": t.vars,
        "description": t.description,
        "created_at": t.created_at.micros(),
        "expires_at": t.expires_at.map(Timestamp::micros),
        "last_used_at": t.last_used_at.map(Timestamp::micros),
    })
}
