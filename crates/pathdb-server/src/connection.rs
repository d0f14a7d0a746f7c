//! Accepting connections (issue 22): an accept loop with a cap on open connections kept below
//! the process's open-file limit, each connection served by hyper's HTTP/1.1 with the header
//! and idle timeouts of [`crate::timeouts`], and a graceful shutdown.
//!
//! `axum::serve` had neither timeouts nor a cap: 1,050 idle sockets under the usual limit of
//! 1,024 open files left the server failing every `accept` ("Too many open files") while
//! `/healthz` timed out. Here the cap keeps the listener from running the process out of files,
//! and at the cap a new connection makes room by closing the connection that has waited longest
//! for a request (eviction.rs); when none is waiting, it waits until an open one ends (an
//! answered `Connection: close`, a client gone, a timeout), and the connections after it wait in
//! the listen backlog.

use crate::App;
use crate::eviction::Connections;
use crate::timeouts::{self, Timeouts};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use pathdb_store::backend::Backend;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Semaphore, watch};

/// The default header timeout: time for a request's headers (plenty for any client but one
/// that sends them a byte at a time).
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// The default idle timeout for a kept-alive connection between requests: longer than the
/// pools of most HTTP clients keep an idle connection, so that a client rarely sends a request
/// on a connection the server is closing.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// The most connections the default cap allows, whatever the file limit: beyond this, memory
/// (about 12 KiB per idle connection, 20 KiB per change stream: docs/reliability.md) matters
/// more than descriptors.
pub const MAX_DEFAULT_CONNECTIONS: usize = 16_384;

/// How many connections the server keeps open, and how long it waits for them.
#[derive(Clone, Copy, Debug)]
pub struct ConnectionLimits {
    /// Open connections at most; at the cap, new ones wait in the listen backlog.
    pub max_connections: usize,
    /// How long a connection has to send a request's complete headers: from its start, or from
    /// the first byte of a later request.
    pub header_timeout: Duration,
    /// How long a kept-alive connection may wait for its next request after an answer.
    pub idle_timeout: Duration,
}

impl Default for ConnectionLimits {
    /// The default timeouts and a cap sized from the process's current open-file limit
    /// ([`default_max_connections`]).
    fn default() -> ConnectionLimits {
        ConnectionLimits {
            max_connections: default_max_connections(open_file_limit()),
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
        }
    }
}

/// The process's soft limit on open files (`ulimit -n`), or `None` where there is none to read.
pub fn open_file_limit() -> Option<u64> {
    rlimit::Resource::NOFILE.get().ok().map(|(soft, _)| soft)
}

/// Raises the process's soft limit on open files to its hard limit, as servers do at start (the
/// usual soft limit, 1,024, is far below what a server needs; the hard one is the
/// administrator's real limit). Returns the new soft limit.
///
/// # Errors
/// The limit cannot be read or set.
pub fn raise_open_file_limit() -> std::io::Result<u64> {
    rlimit::increase_nofile_limit(u64::MAX)
}

/// Descriptors kept free of connections under an open-file limit of `limit`: for the database
/// file, the listener, the runtime's own, logs, and a DynamoDB backend's HTTPS connections (one
/// per request in flight, up to the blocking pool's 512 threads). A quarter of the limit, at
/// least 64 and at most 4,096.
pub fn reserved_files(limit: u64) -> u64 {
    (limit / 4).clamp(64, 4096)
}

/// The connection cap for an open-file limit (`None`: unknown, taken as 1,024): the limit less
/// [`reserved_files`], at least 1, at most [`MAX_DEFAULT_CONNECTIONS`].
pub fn default_max_connections(file_limit: Option<u64>) -> usize {
    connections_within(file_limit).min(MAX_DEFAULT_CONNECTIONS)
}

/// The most connections an open-file limit leaves room for (the limit less
/// [`reserved_files`], at least 1).
pub fn connections_within(file_limit: Option<u64>) -> usize {
    let limit = file_limit.unwrap_or(1024);
    let room = limit.saturating_sub(reserved_files(limit)).max(1);
    usize::try_from(room).unwrap_or(usize::MAX)
}

/// Serves `app` on `listener` within `limits` until `shutdown` completes; then stops accepting,
/// lets every open connection finish its request in flight (idle ones close at once) and
/// returns when all are closed.
///
/// # Errors
/// None so far: accept errors are logged and retried (see `accept_failed`); the type leaves
/// room for listeners that can fail for good.
pub async fn serve_with<B: Backend>(
    listener: tokio::net::TcpListener,
    app: App<B>,
    shutdown: impl Future<Output = ()> + Send + 'static,
    limits: ConnectionLimits,
) -> std::io::Result<()> {
    // A semaphore's permits are u32 when taken all at once (at shutdown, below).
    let cap = u32::try_from(limits.max_connections.max(1)).unwrap_or(u32::MAX);
    let slots = Arc::new(Semaphore::new(cap as usize));
    let timeouts = Timeouts {
        header: limits.header_timeout,
        idle: limits.idle_timeout,
    };
    let (closing, close) = watch::channel(false);
    let connections = Arc::new(Connections::default());
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    accept_failed(e).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let slot = match Arc::clone(&slots).try_acquire_owned() {
            Ok(slot) => slot,
            // At the cap: close the connection idle longest, and take its slot when it ends
            // (or any slot, if none was idle). Meanwhile later connections wait in the backlog.
            Err(_) => {
                connections.close_longest_idle();
                tokio::select! {
                    slot = Arc::clone(&slots).acquire_owned() => match slot {
                        Ok(slot) => slot,
                        // Never closed; but if it were, stop accepting rather than spin.
                        Err(_) => break,
                    },
                    () = &mut shutdown => break,
                }
            }
        };
        let (app, close, connections) = (app.clone(), close.clone(), Arc::clone(&connections));
        tokio::spawn(async move {
            // Held while the connection is open: its slot.
            let _slot = slot;
            serve_connection(stream, app, timeouts, close, connections).await;
        });
    }
    drop(listener);
    let _ = closing.send(true);
    // Every slot back: every connection closed.
    let _ = slots.acquire_many(cap).await;
    Ok(())
}

/// One connection, until it closes or, after `close` turns true or the accept loop chose it to
/// make room, until its request in flight is answered.
async fn serve_connection<B: Backend>(
    stream: tokio::net::TcpStream,
    app: App<B>,
    timeouts: Timeouts,
    mut close: watch::Receiver<bool>,
    connections: Arc<Connections>,
) {
    let open = metrics::gauge!("pathdb_connections_open");
    open.increment(1.0);
    let (io, timer) = timeouts::watch(stream, timeouts);
    let (_registration, eviction) = connections.register(timer.activity());
    let mut http = hyper::server::conn::http1::Builder::new();
    // `writev(false)`: an answer's head and body go out in one buffer, one `write`, rather than
    // a vectored write of both. Most answers are a few hundred bytes, where the copy costs less
    // than the kernel's handling of a second slice (server CPU per get 6% lower, wrk 2x32 on
    // two cores, docs/benchmarks.md); a large page or an export is copied once more.
    http.timer(timer)
        .header_read_timeout(timeouts.header)
        .writev(false);
    let connection = http.serve_connection(TokioIo::new(io), TowerToHyperService::new(app));
    let mut connection = std::pin::pin!(connection);
    tokio::select! {
        served = connection.as_mut() => {
            if let Err(e) = served {
                // A header or idle timeout, a client gone, a malformed request: the
                // connection's end, nothing to answer.
                tracing::debug!(error = %e, "connection ended");
            }
        }
        // A closed sender (the accept loop's future dropped) is a shutdown too. (The `Ref`
        // it returns is dropped at once: it holds a lock.) Chosen to make room at the cap: the
        // same graceful close, which ends an idle connection at once.
        () = async {
            tokio::select! {
                _ = close.wait_for(|closing| *closing) => {}
                () = eviction.chosen() => {}
            }
        } => {
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        }
    }
    open.decrement(1.0);
}

/// After a failed accept: a connection that went away before it was accepted is nothing; any
/// other error (out of files or memory, which the cap should prevent) is logged, and the loop
/// waits a second rather than spin on it, as `axum::serve` does.
async fn accept_failed(e: std::io::Error) {
    use std::io::ErrorKind as K;
    if matches!(
        e.kind(),
        K::ConnectionRefused | K::ConnectionAborted | K::ConnectionReset
    ) {
        return;
    }
    tracing::error!(error = %e, "accept error");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

#[cfg(test)]
mod test;
