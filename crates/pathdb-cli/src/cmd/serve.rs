//! `pathdb serve`: the HTTP/JSON server on the embedded store.

use anyhow::{Context, Result, bail};
use clap::Args;
use pathdb_server::{
    AllowedOrigins, AppState, Auth, ChangeStreams, ConnectionLimits, Console, DEFAULT_ADDR,
    Imports, ServerConfig, app,
};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Listen address [default: 127.0.0.1:7070, or the config file's].
    #[arg(long)]
    addr: Option<SocketAddr>,
    /// TOML settings: addr, db, cors_origins, [[tokens]] (token, and scope "read",
    /// "read-write" or "admin", or role and vars), [[roles]] made at start if missing (name,
    /// rules, description) and [jwt] (docs/access.md).
    #[arg(long)]
    config: Option<PathBuf>,
    #[command(flatten)]
    jwt: JwtArgs,
    #[command(flatten)]
    backups: BackupFlags,
    /// A web origin (scheme://host[:port]) whose pages may call the API from a browser;
    /// repeatable, added to the config file's cors_origins. Other origins get 403.
    #[arg(long = "cors-origin", value_name = "ORIGIN")]
    cors_origins: Vec<String>,
    /// Where the data lives.
    #[arg(long, value_enum, default_value_t = BackendKind::Embedded)]
    backend: BackendKind,
    #[command(flatten)]
    dynamodb: super::dynamodb::TableArgs,
    /// Open the database file read-only: it is never modified, and writes answer 403
    /// `read_only` (embedded backend only).
    #[arg(long)]
    read_only: bool,
    /// Do not serve the web console (by default at /ui/, with / redirecting there).
    #[arg(long)]
    no_ui: bool,
    /// How long the change feed keeps changes: a token whose next change is older answers 410
    /// token_expired (docs/changes.md).
    #[arg(long, value_name = "DAYS", default_value_t = 7, value_parser = clap::value_parser!(u64).range(1..=3650))]
    change_retention_days: u64,
    /// The form the change log's entries are written in (docs/changes.md, "Two forms of an
    /// entry"). `compact` marks the database for it, for good: builds older than the compact
    /// form cannot read its feeds. `json` while such builds share the database (a DynamoDB
    /// table). By default, compact where the database is marked; a new database is.
    #[arg(long, value_enum, value_name = "FORM")]
    change_log_form: Option<ChangeLogForm>,
    /// Open connections at most; more wait in the listen backlog until one closes. At start the
    /// server raises its open-file limit to the hard limit; the default is that limit less a
    /// quarter kept for the database and other files (64 to 4,096 of them), at most 16,384, and
    /// a larger value is lowered to it [default: 768 under `ulimit -n 1024`].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    max_connections: Option<u64>,
    /// Change streams (Server-Sent Events) and long polls (`wait`) open at once, at most; more
    /// answer 503 unavailable with Retry-After [default: half the connection cap].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    max_streams: Option<u64>,
    /// Imports (`POST /v1/import`) running at once, at most; more answer 503 unavailable with
    /// Retry-After. Each holds its parsed records in memory until its last line (a body is at
    /// most 256 MiB).
    #[arg(long, value_name = "N", default_value_t = pathdb_server::DEFAULT_MAX_IMPORTS as u64, value_parser = clap::value_parser!(u64).range(1..=1024))]
    max_imports: u64,
    /// Seconds a connection has to send a request's complete headers, from its start or from
    /// the first byte of a later request; a slower one (slowloris) is closed.
    #[arg(long, value_name = "SECONDS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    header_timeout: u64,
    /// Seconds a kept-alive connection may wait for its next request before it is closed.
    #[arg(long, value_name = "SECONDS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    idle_timeout: u64,
    /// The database file's page cache (redb's), in MiB: a ceiling that fills as pages are read,
    /// so a server's memory reaches it only once it has read that much of a larger database
    /// (embedded backend only).
    #[arg(long, value_name = "MIB", default_value_t = DEFAULT_CACHE_MIB, value_parser = clap::value_parser!(u64).range(1..=1_048_576))]
    cache_size: u64,
    /// Threads that serve HTTP requests. The embedded store commits and checkpoints on two
    /// threads of its own, so on a small machine under writes fewer HTTP threads can leave
    /// them a core (docs/benchmarks.md, "HTTP threads") [default: one per core].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1024))]
    http_threads: Option<u64>,
}

/// Backups on a schedule and the continuous archive (docs/backups.md).
#[derive(Args, Debug)]
struct BackupFlags {
    /// Keep a continuous archive in this directory or s3://bucket/prefix: a base backup and
    /// every commit after it, so that `pathdb restore --archive` rebuilds the database as of
    /// any commit or instant (embedded backend only; DynamoDB has point-in-time recovery).
    #[arg(long, value_name = "DIR_OR_URL")]
    archive: Option<String>,
    /// The longest a commit waits before its segment goes to the archive: what a lost disk
    /// costs at most.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration)]
    archive_delay: Duration,
    /// How often the archive takes a new base backup (a restore replays the commits after one).
    #[arg(long, value_name = "DURATION", default_value = "24h", value_parser = parse_duration)]
    archive_base_every: Duration,
    /// How long the archive keeps base backups and segments (`forever`: never removes any).
    #[arg(long, value_name = "DURATION", default_value = "7days", value_parser = parse_keep)]
    archive_keep: Keep,
    /// Take a backup into this directory every --backup-every, keeping the --backup-keep newest
    /// (`pathdb backup ls DIR` lists them).
    #[arg(long, value_name = "DIR")]
    backup_dir: Option<PathBuf>,
    /// How often --backup-dir gets a backup.
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = parse_duration, requires = "backup_dir")]
    backup_every: Duration,
    /// How many backups --backup-dir keeps.
    #[arg(long, value_name = "N", default_value_t = 24, value_parser = clap::value_parser!(u64).range(1..=100_000), requires = "backup_dir")]
    backup_keep: u64,
}

/// A retention: a duration, or forever.
#[derive(Clone, Copy, Debug)]
struct Keep(Option<Duration>);

fn parse_duration(text: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(text)
        .map_err(|e| format!("{text:?} is not a duration such as 500ms, 1s, 1h or 7days ({e})"))?;
    if d.is_zero() {
        return Err(format!("{text:?}: must be more than zero"));
    }
    Ok(d)
}

fn parse_keep(text: &str) -> Result<Keep, String> {
    if text == "forever" {
        return Ok(Keep(None));
    }
    parse_duration(text).map(|d| Keep(Some(d)))
}

/// What the server runs beside the requests: the archive and scheduled backups.
struct Upkeep {
    archive: Option<pathdb_store::backup::Archive>,
    backups: Option<(PathBuf, Duration, usize)>,
}

impl BackupFlags {
    /// The archive `--archive` asks for, for the database file `db`.
    fn archive(&self, db: &std::path::Path) -> Result<Option<pathdb_store::backup::Archive>> {
        let Some(target) = &self.archive else {
            return Ok(None);
        };
        let options = pathdb_store::backup::ArchiveOptions {
            delay: self.archive_delay,
            base_every: self.archive_base_every,
            keep: self.archive_keep.0,
        };
        Ok(Some(pathdb_store::backup::Archive::new(
            super::backup::target(target)?,
            pathdb_store::backup::Archive::spool_for(db),
            options,
        )))
    }

    fn scheduled(&self) -> Option<(PathBuf, Duration, usize)> {
        let keep = usize::try_from(self.backup_keep).unwrap_or(usize::MAX);
        self.backup_dir
            .clone()
            .map(|dir| (dir, self.backup_every, keep))
    }
}

/// Signed tokens (JWTs) from an identity provider (docs/access.md); each flag overrides the config
/// file's `[jwt]`.
#[derive(Args, Debug)]
struct JwtArgs {
    /// Accept JWTs signed by the keys of this JWK Set: a file (re-read every --jwt-refresh
    /// seconds) or an http(s) URL (fetched again as often, and on an unknown key id).
    #[arg(long = "jwt-jwks", value_name = "FILE_OR_URL")]
    jwks: Option<String>,
    /// Accept HS256 JWTs signed with the secret in this file (for development).
    #[arg(long = "jwt-secret-file", value_name = "FILE")]
    secret_file: Option<PathBuf>,
    /// The issuer (`iss`) a JWT must name.
    #[arg(long = "jwt-issuer", value_name = "ISS")]
    issuer: Option<String>,
    /// The audience (`aud`) a JWT must name.
    #[arg(long = "jwt-audience", value_name = "AUD")]
    audience: Option<String>,
    /// The claim that names the role [default: role].
    #[arg(long = "jwt-role-claim", value_name = "CLAIM")]
    role_claim: Option<String>,
    /// Seconds between reloads of the JWK Set [default: 60].
    #[arg(long = "jwt-refresh", value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    refresh: Option<u64>,
}

impl JwtArgs {
    /// The config file's `[jwt]` with these flags over it.
    fn over(
        &self,
        file: Option<pathdb_server::config::JwtSettings>,
    ) -> pathdb_server::config::JwtSettings {
        let file = file.unwrap_or_default();
        pathdb_server::config::JwtSettings {
            jwks: self.jwks.clone().or(file.jwks),
            secret_file: self.secret_file.clone().or(file.secret_file),
            issuer: self.issuer.clone().or(file.issuer),
            audience: self.audience.clone().or(file.audience),
            role_claim: self.role_claim.clone().or(file.role_claim),
            refresh_seconds: self.refresh.or(file.refresh_seconds),
        }
    }
}

/// `--cache-size`'s default: redb's own, 1 GiB.
const DEFAULT_CACHE_MIB: u64 = 1024;

/// The [`pathdb_store::backend::FileOptions`] `args` ask for.
fn file_options(args: &ServeArgs) -> pathdb_store::backend::FileOptions {
    let bytes = args.cache_size.saturating_mul(1 << 20);
    pathdb_store::backend::FileOptions {
        cache_size: Some(usize::try_from(bytes).unwrap_or(usize::MAX)),
        ..Default::default()
    }
}

/// The connection and stream limits `args` ask for, within the open-file limit `file_limit`.
struct Limits {
    connections: ConnectionLimits,
    streams: usize,
    imports: u64,
    /// Threads serving HTTP (`--http-threads`); `None`: one per core.
    http_threads: Option<usize>,
    /// A `--max-connections` above what the file limit leaves room for, lowered.
    lowered_from: Option<usize>,
}

fn limits(args: &ServeArgs, file_limit: Option<u64>) -> Limits {
    let within = pathdb_server::connections_within(file_limit);
    let asked = args
        .max_connections
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    let max_connections = match asked {
        // More connections than files would fail accepts with "Too many open files".
        Some(n) => n.min(within),
        None => pathdb_server::default_max_connections(file_limit),
    };
    let streams = match args.max_streams {
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
        // The other half stays for writes, reads and probes.
        None => (max_connections / 2).max(1),
    };
    Limits {
        connections: ConnectionLimits {
            max_connections,
            header_timeout: Duration::from_secs(args.header_timeout),
            idle_timeout: Duration::from_secs(args.idle_timeout),
        },
        streams,
        imports: args.max_imports,
        http_threads: args
            .http_threads
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        lowered_from: asked.filter(|n| *n > within),
    }
}

/// The form of the change log's entries (`--change-log-form`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeLogForm {
    /// Paths as binary keys, numbers as binary: about half the bytes of JSON.
    Compact,
    /// JSON, which every build reads.
    Json,
}

/// The storage engine behind the server.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    /// One redb file (`--db`).
    Embedded,
    /// A DynamoDB table (`--table`, `--endpoint`, `--region`).
    Dynamodb,
}

pub fn run(args: ServeArgs, db: Option<PathBuf>) -> Result<()> {
    let mut config = match &args.config {
        Some(path) => ServerConfig::from_file(path)?,
        None => ServerConfig::default(),
    };
    if let Ok(tokens) = std::env::var("PATHDB_TOKENS") {
        config.add_env_tokens(&tokens)?;
    }
    let addr = args.addr.or(config.addr).unwrap_or_else(|| {
        DEFAULT_ADDR
            .parse()
            .unwrap_or(SocketAddr::from(([127, 0, 0, 1], 7070)))
    });
    let db = db
        .or_else(|| config.db.clone())
        .unwrap_or_else(|| PathBuf::from(super::DEFAULT_DB));
    config
        .cors_origins
        .extend(args.cors_origins.iter().cloned());
    let origins = config.allowed_origins()?;
    let jwt = args.jwt.over(config.jwt.clone()).verifier()?;
    let auth = Auth::configured(config.configured_tokens()?, jwt);
    if !auth.enabled() && !addr.ip().is_loopback() {
        bail!(
            "no access tokens configured: refusing to listen on {addr}; configure tokens (--config or PATHDB_TOKENS) or JWTs (--jwt-jwks), or bind a loopback address"
        );
    }
    let roles = config.roles.clone();

    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();

    let file_limit = match pathdb_server::raise_open_file_limit() {
        Ok(limit) => Some(limit),
        Err(e) => {
            tracing::warn!(error = %e, "could not raise the open-file limit");
            pathdb_server::open_file_limit()
        }
    };
    let limits = limits(&args, file_limit);
    if let Some(asked) = limits.lowered_from {
        tracing::warn!(
            asked,
            max_connections = limits.connections.max_connections,
            file_limit,
            "--max-connections lowered to what the open-file limit leaves room for"
        );
    }
    tracing::info!(
        max_connections = limits.connections.max_connections,
        max_streams = limits.streams,
        header_timeout_s = args.header_timeout,
        idle_timeout_s = args.idle_timeout,
        cache_mib = args.cache_size,
        http_threads = limits.http_threads,
        file_limit,
        "limits"
    );

    let console = if args.no_ui {
        Console::Off
    } else {
        Console::Served
    };
    let options = pathdb_store::StoreOptions {
        change_retention: std::time::Duration::from_secs(args.change_retention_days * 24 * 3600),
        compact_change_log: args
            .change_log_form
            .map(|form| form == ChangeLogForm::Compact),
        ..Default::default()
    };
    match args.backend {
        BackendKind::Embedded => {
            let mut file = file_options(&args);
            if args.read_only && args.backups.archive.is_some() {
                bail!(
                    "--archive keeps the commits of a database that is written: not with --read-only"
                );
            }
            let archive = args.backups.archive(&db)?;
            file.tap = archive.as_ref().map(|a| a.tap());
            let store = if args.read_only {
                pathdb_store::Store::open_read_only(&db, file, options)
            } else {
                pathdb_store::Store::open(&db, file, options)
            }
            .with_context(|| format!("opening {}", db.display()))?;
            if !args.read_only {
                pathdb_server::resume_subtree_jobs(store.clone());
            }
            let mode = if args.read_only { " (read-only)" } else { "" };
            if !args.read_only {
                seed(&store, &roles)?;
            }
            if let Some(archive) = &archive {
                let base = store.clone();
                archive
                    .start(Box::new(move |file| base.backup(file)))
                    .context("starting the archive")?;
                tracing::info!(target = %archive.status().target, "archiving every commit");
            }
            let upkeep = Upkeep {
                archive,
                backups: args.backups.scheduled(),
            };
            serve(
                store,
                addr,
                Access { auth, origins },
                console,
                (&limits, upkeep),
                &format!("{}{mode}", db.display()),
                Some(&db),
            )
        }
        BackendKind::Dynamodb => {
            if args.read_only {
                bail!(
                    "--read-only applies to the embedded backend; for DynamoDB, give clients read-scoped tokens"
                );
            }
            if args.backups.archive.is_some() {
                bail!(
                    "--archive is for the embedded backend; a DynamoDB table has point-in-time \
                     recovery of its own (docs/backups.md shows how to turn it on and restore)"
                );
            }
            let store = super::dynamodb::open_store(&args.dynamodb, options)?;
            pathdb_server::resume_subtree_jobs(store.clone());
            seed(&store, &roles)?;
            let upkeep = Upkeep {
                archive: None,
                backups: args.backups.scheduled(),
            };
            serve(
                store,
                addr,
                Access { auth, origins },
                console,
                (&limits, upkeep),
                &format!("dynamodb table {}", args.dynamodb.table_name()?),
                None,
            )
        }
    }
}

/// Makes the config file's roles that the database lacks.
fn seed<B: pathdb_store::backend::Backend>(
    store: &pathdb_store::Store<B>,
    roles: &[pathdb_server::config::RoleConfig],
) -> Result<()> {
    let made = pathdb_server::config::seed_roles(store, roles)
        .context("seeding the config file's roles")?;
    if !made.is_empty() {
        tracing::info!(roles = ?made, "made the config file's roles");
    }
    Ok(())
}

/// Who may call the server.
struct Access {
    auth: Auth,
    origins: AllowedOrigins,
}

/// Serves `store` on `addr` until a shutdown signal. With `file` (the embedded backend's
/// database), records the address beside it for the commands that find the file locked.
fn serve<B: pathdb_store::backend::Backend>(
    store: pathdb_store::Store<B>,
    addr: SocketAddr,
    access: Access,
    console: Console,
    (limits, upkeep): (&Limits, Upkeep),
    data: &str,
    file: Option<&std::path::Path>,
) -> Result<()> {
    let Access { auth, origins } = access;
    let Upkeep { archive, backups } = upkeep;
    let stop_archive = archive.clone();
    let data = data.to_owned();
    let (connections, streams) = (limits.connections, limits.streams);
    let imports = usize::try_from(limits.imports).unwrap_or(usize::MAX);
    // As `Runtime::new` builds it, with the number of workers if one was asked for.
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all();
    if let Some(threads) = limits.http_threads {
        builder.worker_threads(threads);
    }
    let runtime = builder.build().context("starting the async runtime")?;
    runtime.block_on(async move {
        let listener = listen(addr).with_context(|| format!("binding {addr}"))?;
        let local = listener.local_addr()?;
        if auth.enabled() {
            tracing::info!(%local, %data, "PathDB listening; bearer tokens required");
        } else {
            tracing::warn!(%local, %data, "PathDB listening in local-only mode: no tokens configured, loopback only");
        }
        // Recorded before the line below, so that whoever waits for it finds the file. Removed
        // when this block ends: a clean exit leaves no address behind.
        let _recorded = file.and_then(|db| {
            crate::address_file::record(db, &format!("http://{local}"))
                .map_err(|e| tracing::warn!(error = %e, "could not record the address beside the database"))
                .ok()
        });
        // Before the line below: a script may send SIGTERM as soon as it reads it.
        let signal = pathdb_server::shutdown_signal();
        // Printed for scripts that bind port 0.
        println!("listening on http://{local}");
        let state = AppState {
            store,
            change_streams: ChangeStreams::new(streams),
            imports: Imports::new(imports),
            archive,
        };
        if let Some((dir, every, keep)) = backups {
            tracing::info!(dir = %dir.display(), every_s = every.as_secs(), keep, "scheduled backups");
            pathdb_server::schedule_backups(&state, dir, every, keep);
        }
        let app = app(state, auth, origins, console);
        let shutdown = async {
            signal.await;
            // Open event streams and long polls would hold the graceful shutdown up.
            pathdb_server::close_change_streams();
        };
        pathdb_server::serve_with(listener, app, shutdown, connections).await?;
        tracing::info!("shut down: in-flight requests finished");
        if let Some(archive) = stop_archive {
            // The last commits go to the archive before the process exits.
            tokio::task::spawn_blocking(move || archive.stop()).await?;
        }
        anyhow::Ok(())
    })
}

/// Connections the kernel completes and queues for the server beyond its cap (the kernel takes
/// at most `net.core.somaxconn`). std's and tokio's 128 made clients beyond it wait a second for
/// a retried handshake; the queue is where connections wait while the server is at its cap.
const LISTEN_BACKLOG: u32 = 1024;

/// A listener on `addr` with [`LISTEN_BACKLOG`].
fn listen(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    // As std and tokio do: a restarted server can bind while its old connections linger.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}
