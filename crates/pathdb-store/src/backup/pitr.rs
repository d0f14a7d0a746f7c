//! Point-in-time restore from an archive, and what an archive holds (`pathdb archive ls`).
//!
//! A restore takes the newest base backup at or before the point asked for, then applies the
//! segments' commits after it, in number order, up to the last commit at or before that point.
//! Commits are consecutive, so a missing or damaged segment shows as a missing number: the
//! restore stops there and says which commits are missing and where it stopped; it never skips
//! to later commits.

use super::BackupError;
use super::archive::{MARKER, parse_base_name};
use super::format;
use super::restore::{NewDatabase, RestoreReport, refuse_existing};
use super::segment::{Segment, parse_name};
use super::target::ArchiveTarget;
use crate::backend::commit_time;
use std::path::Path;

/// How far a restore goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RestoreUntil {
    /// Every commit the archive holds.
    Latest,
    /// Up to and including this commit.
    Commit(u64),
    /// Up to the last commit made at or before this time (microseconds since the Unix epoch).
    Time(i64),
}

/// A segment of an archive, from its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentInfo {
    /// Its name in the target.
    pub name: String,
    /// Its first commit.
    pub first: u64,
    /// Its last commit.
    pub last: u64,
    /// The time of its last commit (microseconds since the Unix epoch).
    pub last_time: i64,
    /// Its size.
    pub bytes: u64,
}

/// A base backup of an archive, from its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BaseInfo {
    /// Its name in the target.
    pub name: String,
    /// The commit it holds everything up to.
    pub commit: u64,
    /// When it was taken (microseconds since the Unix epoch).
    pub taken_at: i64,
    /// Its size.
    pub bytes: u64,
}

/// What an archive holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArchiveListing {
    /// The target.
    pub target: String,
    /// The archive's marker: whose database it is.
    pub marker: Option<String>,
    /// Base backups, oldest first.
    pub bases: Vec<BaseInfo>,
    /// Segments, by first commit.
    pub segments: Vec<SegmentInfo>,
    /// Commits missing after the oldest base backup, as inclusive ranges: a restore stops
    /// before each.
    pub gaps: Vec<(u64, u64)>,
    /// The restorable window: from when the oldest base backup was taken to the time of the
    /// last commit reachable without a gap from the newest base before it (microseconds).
    pub window: Option<(i64, i64)>,
    /// The last commit that window reaches.
    pub last_commit: Option<u64>,
}

/// Lists what the archive in `target` holds.
///
/// # Errors
/// The target cannot be listed.
pub fn list_archive(target: &dyn ArchiveTarget) -> Result<ArchiveListing, BackupError> {
    let marker = match target.get(MARKER) {
        Ok(bytes) => Some(String::from_utf8_lossy(&bytes).trim().to_string()),
        Err(e) if e.not_found => None,
        Err(e) => return Err(e.into()),
    };
    let bases = bases(target)?;
    let segments = segments(target)?;
    let mut gaps = Vec::new();
    let mut window = None;
    let mut last_commit = None;
    if let Some(oldest) = bases.first() {
        let mut next = oldest.commit + 1;
        let mut end = (oldest.commit, oldest.taken_at);
        let mut contiguous = true;
        for segment in &segments {
            if segment.last < next {
                continue;
            }
            // A base backup after a gap starts the window again.
            let rebased = bases
                .iter()
                .filter(|b| b.commit + 1 >= next && b.commit < segment.first)
                .max_by_key(|b| b.commit);
            if segment.first > next {
                if let Some(base) = rebased {
                    if base.commit + 1 > next {
                        gaps.push((next, base.commit));
                    }
                    contiguous = true;
                    end = end.max((base.commit, base.taken_at));
                    if base.commit + 1 < segment.first {
                        gaps.push((base.commit + 1, segment.first - 1));
                        contiguous = false;
                    }
                } else {
                    gaps.push((next, segment.first - 1));
                    contiguous = false;
                }
            }
            if contiguous {
                end = (segment.last, segment.last_time);
            }
            next = segment.last + 1;
        }
        if let Some(newest) = bases.last()
            && newest.commit >= end.0
        {
            end = (newest.commit, newest.taken_at.max(end.1));
        }
        window = Some((oldest.taken_at, end.1));
        last_commit = Some(end.0);
    }
    Ok(ArchiveListing {
        target: target.describe(),
        marker,
        bases,
        segments,
        gaps,
        window,
        last_commit,
    })
}

fn bases(target: &dyn ArchiveTarget) -> Result<Vec<BaseInfo>, BackupError> {
    let mut out: Vec<_> = target
        .list("base/")?
        .into_iter()
        .filter_map(|(name, bytes)| {
            let (commit, taken_at) = parse_base_name(name.rsplit('/').next()?)?;
            Some(BaseInfo {
                name,
                commit,
                taken_at,
                bytes,
            })
        })
        .collect();
    out.sort_by_key(|b| (b.commit, b.taken_at));
    Ok(out)
}

fn segments(target: &dyn ArchiveTarget) -> Result<Vec<SegmentInfo>, BackupError> {
    let mut out: Vec<_> = target
        .list("segments/")?
        .into_iter()
        .filter_map(|(name, bytes)| {
            let (first, last, last_time) = parse_name(name.rsplit('/').next()?)?;
            Some(SegmentInfo {
                name,
                first,
                last,
                last_time,
                bytes,
            })
        })
        .collect();
    out.sort_by_key(|s| (s.first, s.last));
    Ok(out)
}

/// Rebuilds, at `db` (which must not exist), the database the archive in `target` holds, as of
/// `until`; see the module. A gap or a damaged segment stops the restore there: the database is
/// written up to the last commit before it, and [`RestoreReport::stopped`] says why.
///
/// # Errors
/// `db` exists; nothing in the archive is at or before `until`; the base backup is damaged;
/// the target or the new file fails.
pub fn restore_archive(
    target: &dyn ArchiveTarget,
    db: &Path,
    until: RestoreUntil,
) -> Result<RestoreReport, BackupError> {
    refuse_existing(db)?;
    let base = base_for(target, until)?;
    let mut new = NewDatabase::create(db)?;
    let rows = load_base(target, &base, db, &mut new)?.rows;
    let mut replay = Replay {
        next: base.commit + 1,
        time: base.taken_at,
        applied: 0,
        stopped: None,
        reached: false,
    };
    for segment in segments(target)? {
        if segment.last >= replay.next && !replay.apply(target, &segment, until, &mut new)? {
            break;
        }
    }
    let last = replay.next - 1;
    if let (None, false, RestoreUntil::Commit(n)) = (&replay.stopped, replay.reached, until)
        && last < n
    {
        replay.stopped = Some(format!(
            "the archive ends at commit {last}: commit {n} is not in it"
        ));
    }
    let report = new.finish(Some(last), replay.time, replay.applied, replay.stopped)?;
    Ok(RestoreReport { rows, ..report })
}

/// The newest base backup at or before `until`.
fn base_for(target: &dyn ArchiveTarget, until: RestoreUntil) -> Result<BaseInfo, BackupError> {
    let bases = bases(target)?;
    bases
        .iter()
        .filter(|b| match until {
            RestoreUntil::Latest => true,
            RestoreUntil::Commit(n) => b.commit <= n,
            RestoreUntil::Time(t) => b.taken_at <= t,
        })
        .max_by_key(|b| (b.commit, b.taken_at))
        .cloned()
        .ok_or_else(|| {
            BackupError::NothingToRestore(match bases.first() {
                None => format!("the archive at {} holds no base backup", target.describe()),
                Some(oldest) => format!(
                    "the archive at {} starts at commit {} (its oldest base backup): nothing in \
                     it is at or before the point asked for; `pathdb archive ls {}` shows its \
                     window",
                    target.describe(),
                    oldest.commit,
                    target.describe()
                ),
            })
        })
}

/// Downloads `base` beside `db`, verifies it and loads its rows into `new`.
fn load_base(
    target: &dyn ArchiveTarget,
    base: &BaseInfo,
    db: &Path,
    new: &mut NewDatabase,
) -> Result<format::BackupInfo, BackupError> {
    let mut download = db.as_os_str().to_owned();
    download.push(".base");
    let download = std::path::PathBuf::from(download);
    let loaded = (|| {
        target.get_file(&base.name, &download)?;
        let name = format!("{}/{}", target.describe(), base.name);
        let open = || std::fs::File::open(&download).map_err(|e| BackupError::io(&name, e));
        format::verify(&name, open()?)?;
        new.load(&name, open()?)
    })();
    let _ = std::fs::remove_file(&download);
    loaded
}

/// Where a restore's replay of segments stands.
struct Replay {
    /// The next commit to apply.
    next: u64,
    /// The time of the last commit applied (the base backup's, before any).
    time: i64,
    applied: u64,
    /// Why it stopped short, at a gap or a damaged segment.
    stopped: Option<String>,
    /// Whether it reached the point asked for.
    reached: bool,
}

impl Replay {
    /// Applies `segment`'s commits from `next` on, up to `until`; `false` when the replay
    /// ends here (a gap, a damaged segment, or the point asked for).
    fn apply(
        &mut self,
        target: &dyn ArchiveTarget,
        segment: &SegmentInfo,
        until: RestoreUntil,
        new: &mut NewDatabase,
    ) -> Result<bool, BackupError> {
        let next = self.next;
        if segment.first > next {
            self.stopped = Some(format!(
                "the archive has a gap: commits {next} to {} are missing (no segment holds \
                 them); restored up to commit {}",
                segment.first - 1,
                next - 1
            ));
            return Ok(false);
        }
        let name = format!("{}/{}", target.describe(), segment.name);
        let decoded = target
            .get(&segment.name)
            .map_err(BackupError::from)
            .and_then(|bytes| Segment::decode(&name, &bytes));
        let commits = match decoded {
            Ok(s) => s.commits,
            Err(e) => {
                self.stopped = Some(format!(
                    "{e}; its commits {} to {} cannot be applied: restored up to commit {}",
                    segment.first,
                    segment.last,
                    next - 1
                ));
                return Ok(false);
            }
        };
        for (number, payload) in commits.into_iter().filter(|(n, _)| *n >= next) {
            let at = commit_time(&payload).unwrap_or(self.time);
            self.reached = match until {
                RestoreUntil::Latest => false,
                RestoreUntil::Commit(n) => number > n,
                RestoreUntil::Time(t) => at > t,
            };
            if self.reached {
                return Ok(false);
            }
            new.loader()?.apply(&payload)?;
            self.next = number + 1;
            self.time = at;
            self.applied += 1;
        }
        Ok(true)
    }
}
