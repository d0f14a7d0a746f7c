//! `/v1/backup` and `/v1/archive` (docs/backups.md), admin only: a backup streamed while the
//! database serves, and where the continuous archive stands. The scheduled backups of
//! `serve --backup-dir` run here too ([`schedule`]).

use crate::AppState;
use crate::auth::Access;
use crate::error::{ApiError, ErrorBody};
use crate::extract::NoQuery;
use crate::handlers::ChannelWriter;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use pathdb_store::backend::Backend;
use pathdb_store::backup::{list_archive, take_scheduled};
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;
use utoipa::ToSchema;

/// A backup of the whole database, streamed: on the embedded backend one snapshot as of one
/// commit, which writers never wait for; on DynamoDB each item as of its own read.
#[utoipa::path(get, path = "/v1/backup", tag = "backups", operation_id = "takeBackup",
    responses((status = 200, description = "The backup file (docs/backups.md): a header with its commit, \
        the rows, and a SHA-256 trailer. A stream cut short fails `pathdb restore`'s check.",
        content_type = "application/octet-stream", body = Vec<u8>),
        (status = 400, description = "A query parameter (this route takes none)", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, description = "Needs admin", body = ErrorBody),
        (status = 503, body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn backup<B: Backend>(
    _: NoQuery,
    access: Access,
    axum::extract::State(state): axum::extract::State<AppState<B>>,
) -> Response {
    if let Err(e) = access.need_admin() {
        return e.into_response();
    }
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(4);
    let failed = tx.clone();
    tokio::task::spawn_blocking(move || {
        let out = ChannelWriter {
            buffer: Vec::new(),
            tx,
        };
        match state.store.backup(out) {
            Ok(info) => tracing::info!(
                commit = info.commit,
                rows = info.rows,
                bytes = info.bytes,
                "backup taken"
            ),
            Err(e) => {
                // The body ends in an error: the client sees a cut stream, which fails its
                // checksum, rather than a file that looks whole.
                tracing::warn!(error = %e, "backup ended early");
                let _ = failed.blocking_send(Err(std::io::Error::other(e.to_string())));
            }
        }
    });
    let name = format!(
        "attachment; filename=\"pathdb-{}.pdbbackup\"",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    );
    let body = axum::body::Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx));
    (
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_string()),
            (header::CONTENT_DISPOSITION, name),
        ],
        body,
    )
        .into_response()
}

/// Where the continuous archive stands.
#[derive(Serialize, ToSchema, Default)]
pub struct ArchiveOut {
    /// Whether this server keeps an archive (`serve --archive`).
    pub enabled: bool,
    /// The archive's target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The database's last commit.
    pub last_commit: u64,
    /// The last commit the target holds.
    pub archived_commit: u64,
    /// Commits not yet in the target.
    pub lag_commits: u64,
    /// How long the oldest commit not yet in the target has waited.
    pub lag_seconds: f64,
    /// The newest base backup.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_base: Option<BaseOut>,
    /// Failed uploads and base backups since the server started.
    pub failures: u64,
    /// The last failure, while the archive is failing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The restorable window, in microseconds since the epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<WindowOut>,
    /// The last commit a restore can reach.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restorable_commit: Option<u64>,
    /// Base backups in the target.
    pub bases: usize,
    /// Segments in the target.
    pub segments: usize,
    /// Commits missing from the target (inclusive ranges): a restore stops before each.
    pub gaps: Vec<[u64; 2]>,
}

/// A base backup.
#[derive(Serialize, ToSchema)]
pub struct BaseOut {
    /// The commit it holds everything up to.
    pub commit: u64,
    /// When it was taken, in microseconds since the epoch.
    pub taken_at: i64,
}

/// A restorable window.
#[derive(Serialize, ToSchema)]
pub struct WindowOut {
    /// From (microseconds since the epoch).
    pub from: i64,
    /// To (microseconds since the epoch).
    pub to: i64,
}

/// Where the continuous archive stands: lag, last base backup, failures, and the restorable
/// window as the target holds it.
#[utoipa::path(get, path = "/v1/archive", tag = "backups", operation_id = "archiveStatus",
    responses((status = 200, body = ArchiveOut),
        (status = 400, description = "A query parameter (this route takes none)", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, description = "Needs admin", body = ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn archive<B: Backend>(
    _: NoQuery,
    access: Access,
    axum::extract::State(state): axum::extract::State<AppState<B>>,
) -> Result<axum::Json<ArchiveOut>, ApiError> {
    access.need_admin()?;
    let Some(archive) = state.archive else {
        return Ok(axum::Json(ArchiveOut::default()));
    };
    // Listing the target is I/O (a network, for S3).
    let out = tokio::task::spawn_blocking(move || {
        let status = archive.status();
        let listing = list_archive(archive.target().as_ref());
        let mut out = ArchiveOut {
            enabled: true,
            target: Some(status.target),
            last_commit: status.last_commit,
            archived_commit: status.archived_commit,
            lag_commits: status.lag_commits,
            lag_seconds: status.lag_seconds,
            last_base: status
                .last_base
                .map(|(commit, taken_at)| BaseOut { commit, taken_at }),
            failures: status.failures,
            error: status.error,
            ..ArchiveOut::default()
        };
        match listing {
            Ok(listing) => {
                out.window = listing.window.map(|(from, to)| WindowOut { from, to });
                out.restorable_commit = listing.last_commit;
                out.bases = listing.bases.len();
                out.segments = listing.segments.len();
                out.gaps = listing.gaps.iter().map(|&(a, b)| [a, b]).collect();
            }
            Err(e) => {
                out.error.get_or_insert_with(|| e.to_string());
            }
        }
        out
    })
    .await
    .map_err(|e| {
        ApiError::new(
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            format!("archive status: {e}"),
        )
    })?;
    Ok(axum::Json(out))
}

/// Takes a backup into `dir` every `every`, keeping the `keep` newest (`serve --backup-dir`).
/// Runs on its own thread for as long as the process does; a failure is logged and counted,
/// and the next one is tried on schedule.
pub fn schedule_backups<B: Backend>(
    state: &AppState<B>,
    dir: PathBuf,
    every: Duration,
    keep: usize,
) {
    let store = state.store.clone();
    let spawned = std::thread::Builder::new()
        .name("pathdb-backups".into())
        .spawn(move || {
            loop {
                std::thread::sleep(every);
                match take_scheduled(&dir, keep, |file| store.backup(file)) {
                    Ok((path, info)) => {
                        metrics::gauge!("pathdb_backup_last_timestamp_seconds")
                            .set(info.taken_at as f64 / 1e6);
                        tracing::info!(file = %path.display(), commit = info.commit, bytes = info.bytes, "scheduled backup");
                    }
                    Err(e) => {
                        metrics::counter!("pathdb_backup_failures_total").increment(1);
                        tracing::error!(error = %e, dir = %dir.display(), "scheduled backup failed");
                    }
                }
            }
        });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "cannot start the scheduled backups");
    }
}
