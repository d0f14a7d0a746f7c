//! `pathdb serve`: the HTTP/JSON server on the embedded store.

use anyhow::{Context, Result, bail};
use clap::Args;
use pathdb_server::{AllowedOrigins, AppState, Auth, Console, DEFAULT_ADDR, ServerConfig, app};
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Listen address [default: 127.0.0.1:7070, or the config file's].
    #[arg(long)]
    addr: Option<SocketAddr>,
    /// TOML settings: addr, db, cors_origins, and [[tokens]] with token and scope ("read" or
    /// "read-write").
    #[arg(long)]
    config: Option<PathBuf>,
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
    let auth = Auth::new(config.token_map()?);
    if !auth.enabled() && !addr.ip().is_loopback() {
        bail!(
            "no access tokens configured: refusing to listen on {addr}; configure tokens (--config or PATHDB_TOKENS) or bind a loopback address"
        );
    }

    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();

    let console = if args.no_ui {
        Console::Off
    } else {
        Console::Served
    };
    let options = pathdb_store::StoreOptions {
        change_retention: std::time::Duration::from_secs(args.change_retention_days * 24 * 3600),
        ..Default::default()
    };
    match args.backend {
        BackendKind::Embedded => {
            let store = if args.read_only {
                pathdb_store::Store::open_read_only(&db, Default::default(), options)
            } else {
                pathdb_store::Store::open(&db, Default::default(), options)
            }
            .with_context(|| format!("opening {}", db.display()))?;
            if !args.read_only {
                pathdb_server::resume_subtree_jobs(store.clone());
            }
            let mode = if args.read_only { " (read-only)" } else { "" };
            serve(
                store,
                addr,
                auth,
                origins,
                console,
                &format!("{}{mode}", db.display()),
            )
        }
        BackendKind::Dynamodb => {
            if args.read_only {
                bail!(
                    "--read-only applies to the embedded backend; for DynamoDB, give clients read-scoped tokens"
                );
            }
            let store = super::dynamodb::open_store(&args.dynamodb, options)?;
            pathdb_server::resume_subtree_jobs(store.clone());
            serve(
                store,
                addr,
                auth,
                origins,
                console,
                &format!("dynamodb table {}", args.dynamodb.table_name()?),
            )
        }
    }
}

fn serve<B: pathdb_store::backend::Backend>(
    store: pathdb_store::Store<B>,
    addr: SocketAddr,
    auth: Auth,
    origins: AllowedOrigins,
    console: Console,
    data: &str,
) -> Result<()> {
    let data = data.to_owned();
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("binding {addr}"))?;
        let local = listener.local_addr()?;
        if auth.enabled() {
            tracing::info!(%local, %data, "PathDB listening; bearer tokens required");
        } else {
            tracing::warn!(%local, %data, "PathDB listening in local-only mode: no tokens configured, loopback only");
        }
        // Printed for scripts that bind port 0.
        println!("listening on http://{local}");
        let app = app(AppState { store }, auth, origins, console);
        let shutdown = async {
            pathdb_server::shutdown_signal().await;
            // Open event streams and long polls would hold the graceful shutdown up.
            pathdb_server::close_change_streams();
        };
        pathdb_server::serve(listener, app, shutdown).await?;
        tracing::info!("shut down: in-flight requests finished");
        anyhow::Ok(())
    })
}
