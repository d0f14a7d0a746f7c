//! `pathdb backup`, `pathdb restore` and `pathdb archive` (docs/backups.md): a backup of a
//! database file or of a server's database, checked before it is called written; a restore into
//! a new file, from a backup or from an archive as of a commit or an instant; and what an
//! archive holds.

use super::Output;
use crate::exit::Failure;
use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use pathdb_store::backup::{
    ArchiveTarget, BackupInfo, DirTarget, RestoreReport, RestoreUntil, list_archive, list_backups,
    restore_archive, restore_backup, verify_backup,
};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `pathdb backup`.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BackupArgs {
    #[command(subcommand)]
    command: Option<BackupCommand>,
    /// Where to write the backup: a new file (refused if it exists), checked before it is
    /// given this name.
    file: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
enum BackupCommand {
    /// List the backups in DIR (`serve --backup-dir`), oldest first.
    Ls {
        /// The directory.
        dir: PathBuf,
    },
    /// Check a backup file's checksum and show what it holds.
    Verify {
        /// The backup file.
        file: PathBuf,
    },
}

/// `pathdb restore`.
#[derive(Args, Debug)]
pub struct RestoreArgs {
    /// The backup file to restore (or --archive).
    #[arg(conflicts_with = "archive", required_unless_present = "archive")]
    file: Option<PathBuf>,
    /// Restore from this archive (a directory or s3://bucket/prefix) instead of a backup file.
    #[arg(long, value_name = "DIR_OR_URL")]
    archive: Option<String>,
    /// With --archive: the database as it was after the last commit at or before this instant
    /// (RFC 3339, e.g. 2026-11-28T18:00:00Z or with fractions of a second) [default: the
    /// latest the archive holds].
    #[arg(long, value_name = "TIME", requires = "archive", conflicts_with = "commit", value_parser = parse_instant)]
    at: Option<i64>,
    /// With --archive: the database as it was after this commit.
    #[arg(long, value_name = "N", requires = "archive")]
    commit: Option<u64>,
}

/// `pathdb archive`.
#[derive(Subcommand, Debug)]
pub enum ArchiveCommand {
    /// Show an archive's restorable window, its base backups and segments, and any gap.
    Ls {
        /// The archive: a directory or s3://bucket/prefix.
        target: String,
    },
}

/// Parses an RFC 3339 instant (`Z` or an offset such as `+01:00`) into microseconds since the
/// Unix epoch.
fn parse_instant(text: &str) -> Result<i64, String> {
    let bad = |e: &dyn std::fmt::Display| {
        format!("{text:?} is not an RFC 3339 time such as 2026-11-28T18:00:00Z ({e})")
    };
    // humantime reads UTC only: an offset is taken off and applied here.
    let split = text
        .len()
        .checked_sub(6)
        .and_then(|at| Some((text.get(..at)?, text.get(at..)?)));
    let (utc, offset) = match split {
        Some((time, zone))
            if (zone.starts_with('+') || zone.starts_with('-')) && zone.get(3..4) == Some(":") =>
        {
            let hours: i64 = zone[1..3].parse().map_err(|e| bad(&e))?;
            let minutes: i64 = zone[4..].parse().map_err(|e| bad(&e))?;
            let sign = if zone.starts_with('-') { -1 } else { 1 };
            (
                format!("{time}Z"),
                sign * (hours * 3600 + minutes * 60) * 1_000_000,
            )
        }
        _ => (text.to_string(), 0),
    };
    let time = humantime::parse_rfc3339_weak(&utc).map_err(|e| bad(&e))?;
    let micros = time
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|_| format!("{text:?} is before 1970"))?
        .as_micros();
    let micros = i64::try_from(micros).map_err(|_| format!("{text:?} is too far ahead"))?;
    Ok(micros - offset)
}

/// A time for people: RFC 3339, UTC, microseconds.
fn time(micros: i64) -> String {
    super::output::rfc3339(pathdb_store::Timestamp(micros))
}

/// The archive target a user named: `s3://bucket/prefix`, or a directory.
pub fn target(text: &str) -> Result<Arc<dyn ArchiveTarget>> {
    if text.starts_with("s3://") {
        #[cfg(feature = "s3")]
        {
            let options = pathdb_s3::S3Options {
                endpoint: std::env::var("PATHDB_S3_ENDPOINT").ok(),
                region: std::env::var("AWS_REGION").ok(),
            };
            let target = pathdb_s3::S3Target::connect(text, options)
                .with_context(|| format!("connecting to {text}"))?;
            return Ok(Arc::new(target));
        }
        #[cfg(not(feature = "s3"))]
        bail!(
            "{text}: this build has no S3 support; build with `--features s3` \
             (cargo install --path crates/pathdb-cli --features s3)"
        );
    }
    Ok(Arc::new(DirTarget::new(text)))
}

/// `pathdb backup FILE`, of `db` or of the server.
pub fn backup(
    args: BackupArgs,
    db: &Path,
    server: Option<&str>,
    token: Option<String>,
    out: Output,
) -> Result<()> {
    match (args.command, args.file) {
        (Some(BackupCommand::Ls { dir }), _) => ls(&dir, out),
        (Some(BackupCommand::Verify { file }), _) => {
            let info = verify_backup(&file)?;
            print_info(&file, &info, out)
        }
        (None, Some(file)) => {
            let info = write_new(&file, |f| match server {
                Some(url) => crate::client::Client::new(url, token).backup(f),
                None => {
                    let store = super::open_read_only(db)?;
                    store.backup(f)?;
                    Ok(())
                }
            })?;
            print_info(&file, &info, out)
        }
        (None, None) => bail!("pathdb backup FILE: name the file to write (or `backup ls DIR`)"),
    }
}

/// Writes `file` (which must not exist) with `write` under a temporary name, checks it, and
/// only then gives it its name: a backup cut short never looks whole.
fn write_new(
    file: &Path,
    write: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> Result<()>,
) -> Result<BackupInfo> {
    if file.exists() {
        return Err(pathdb_store::backup::BackupError::Exists(file.to_owned()).into());
    }
    let mut partial = file.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    let result = (|| {
        let created = std::fs::File::create(&partial)
            .with_context(|| format!("creating {}", partial.display()))?;
        let mut buffered = std::io::BufWriter::with_capacity(1 << 20, created);
        write(&mut buffered)?;
        let created = buffered
            .into_inner()
            .map_err(|e| e.into_error())
            .with_context(|| format!("writing {}", partial.display()))?;
        created
            .sync_all()
            .with_context(|| format!("writing {}", partial.display()))?;
        let info = verify_backup(&partial)?;
        std::fs::hard_link(&partial, file).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                anyhow::Error::new(pathdb_store::backup::BackupError::Exists(file.to_owned()))
            } else {
                anyhow::Error::new(e).context(format!("writing {}", file.display()))
            }
        })?;
        Ok(info)
    })();
    let _ = std::fs::remove_file(&partial);
    result
}

fn print_info(file: &Path, info: &BackupInfo, out: Output) -> Result<()> {
    let consistency = if info.snapshot {
        "one snapshot"
    } else {
        "item by item (not one snapshot: DynamoDB)"
    };
    if out.json {
        println!(
            "{}",
            serde_json::json!({
                "file": file.display().to_string(),
                "format": info.format,
                "commit": info.commit,
                "snapshot": info.snapshot,
                "taken_at": time(info.taken_at),
                "rows": info.rows,
                "bytes": info.bytes,
            })
        );
    } else {
        let commit = info
            .commit
            .map_or_else(|| "no commit number".to_string(), |c| format!("commit {c}"));
        println!(
            "{}: {commit}, taken {} ({consistency}), {} rows, {} bytes, checksum verified",
            file.display(),
            time(info.taken_at),
            info.rows,
            info.bytes
        );
    }
    Ok(())
}

fn ls(dir: &Path, out: Output) -> Result<()> {
    let backups = list_backups(dir)?;
    let mut stdout = std::io::stdout().lock();
    for backup in &backups {
        if out.json {
            writeln!(
                stdout,
                "{}",
                serde_json::json!({
                    "file": backup.path.display().to_string(),
                    "taken_at": time(backup.taken_at),
                    "commit": backup.commit,
                    "bytes": backup.bytes,
                })
            )?;
        } else {
            writeln!(
                stdout,
                "{}  commit {:<10} {:>12} bytes  {}",
                time(backup.taken_at),
                backup.commit,
                backup.bytes,
                backup.path.display()
            )?;
        }
    }
    if backups.is_empty() && !out.json {
        eprintln!("no backups in {}", dir.display());
    }
    Ok(())
}

/// `pathdb restore`, into the new database `db`.
pub fn restore(args: RestoreArgs, db: Option<&Path>, out: Output) -> Result<()> {
    let Some(db) = db else {
        bail!("pathdb restore writes a new database: name it with --db NEW (it must not exist)");
    };
    let report = match (&args.archive, &args.file) {
        (Some(archive), _) => {
            let until = match (args.at, args.commit) {
                (Some(at), _) => RestoreUntil::Time(at),
                (None, Some(commit)) => RestoreUntil::Commit(commit),
                (None, None) => RestoreUntil::Latest,
            };
            restore_archive(target(archive)?.as_ref(), db, until)?
        }
        (None, Some(file)) => restore_backup(file, db)?,
        (None, None) => bail!("pathdb restore FILE --db NEW, or --archive DIR_OR_URL"),
    };
    print_report(&report, out)?;
    match report.stopped {
        Some(why) => Err(Failure::RestoreIncomplete(why).into()),
        None => Ok(()),
    }
}

fn print_report(report: &RestoreReport, out: Output) -> Result<()> {
    if out.json {
        println!(
            "{}",
            serde_json::json!({
                "db": report.path.display().to_string(),
                "commit": report.commit,
                "time": time(report.time),
                "rows": report.rows,
                "commits_applied": report.commits,
                "stopped": report.stopped,
            })
        );
    } else {
        let commit = report.commit.map_or_else(
            || "a backup without a commit number (DynamoDB)".to_string(),
            |c| format!("commit {c}"),
        );
        let commits = match report.commits {
            1 => "1 commit".to_string(),
            n => format!("{n} commits"),
        };
        println!(
            "restored {} as of {commit} ({}): {} rows from the backup, {commits} from the archive",
            report.path.display(),
            time(report.time),
            report.rows,
        );
    }
    Ok(())
}

/// `pathdb archive`.
pub fn archive(command: ArchiveCommand, out: Output) -> Result<()> {
    let ArchiveCommand::Ls { target: name } = command;
    let listing = list_archive(target(&name)?.as_ref())?;
    if out.json {
        println!(
            "{}",
            serde_json::json!({
                "target": listing.target,
                "database": listing.marker,
                "window": listing.window.map(|(from, to)| serde_json::json!({"from": time(from), "to": time(to)})),
                "last_commit": listing.last_commit,
                "bases": listing.bases.iter().map(|b| serde_json::json!({
                    "name": b.name, "commit": b.commit, "taken_at": time(b.taken_at), "bytes": b.bytes,
                })).collect::<Vec<_>>(),
                "segments": listing.segments.iter().map(|s| serde_json::json!({
                    "name": s.name, "first": s.first, "last": s.last, "last_time": time(s.last_time), "bytes": s.bytes,
                })).collect::<Vec<_>>(),
                "gaps": listing.gaps.iter().map(|(a, b)| serde_json::json!([a, b])).collect::<Vec<_>>(),
            })
        );
        return Ok(());
    }
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "archive {}", listing.target)?;
    match (listing.window, listing.last_commit) {
        (Some((from, to)), Some(last)) => writeln!(
            stdout,
            "restorable: {} to {} (up to commit {last})",
            time(from),
            time(to)
        )?,
        _ => writeln!(stdout, "restorable: nothing yet (no base backup)")?,
    }
    for (from, to) in &listing.gaps {
        writeln!(
            stdout,
            "GAP: commits {from} to {to} are missing; a restore stops before them"
        )?;
    }
    writeln!(stdout, "base backups:")?;
    for base in &listing.bases {
        writeln!(
            stdout,
            "  {}  commit {:<10} {:>12} bytes  {}",
            time(base.taken_at),
            base.commit,
            base.bytes,
            base.name
        )?;
    }
    let bytes: u64 = listing.segments.iter().map(|s| s.bytes).sum();
    writeln!(
        stdout,
        "segments: {} ({bytes} bytes){}",
        listing.segments.len(),
        match (listing.segments.first(), listing.segments.last()) {
            (Some(first), Some(last)) => format!(
                ", commits {} to {}, the last at {}",
                first.first,
                last.last,
                time(last.last_time)
            ),
            _ => String::new(),
        }
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn instants_with_offsets() {
        let utc = super::parse_instant("2026-11-28T18:00:00Z").unwrap();
        assert_eq!(
            super::parse_instant("2026-11-28T19:30:00+01:30").unwrap(),
            utc
        );
        assert_eq!(
            super::parse_instant("2026-11-28T13:00:00-05:00").unwrap(),
            utc
        );
        assert_eq!(
            super::parse_instant("2026-11-28T18:00:00.5Z").unwrap(),
            utc + 500_000
        );
        assert!(super::parse_instant("yesterday").is_err());
        assert!(super::parse_instant("2026-11-28T18:00:00+xx:00").is_err());
        assert!(super::parse_instant("2026-11-28T18:00:00é+01:00").is_err());
        assert!(super::parse_instant("ééé").is_err());
    }
}
