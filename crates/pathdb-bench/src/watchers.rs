//! Change-feed followers held open during `pathdb bench http` (`--sse`, `--long-polls`), each on
//! a group of its own that the load never writes: what they cost the load is the cost of being
//! followed at all (issue 22 measured PUT p99 going from 1 ms to 186 ms with 4,000 of them,
//! when every commit woke every follower).

use crate::transport::{Body, HttpClient, send};
use anyhow::{Context, Result, anyhow, bail};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Method, Request, header};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::task::JoinSet;

/// How long a long poll waits for a change (the server's most).
const POLL_WAIT_SECS: u64 = 60;
/// Followers opened at once: a burst of thousands of connects overflows the server's listen
/// backlog, and the connects beyond it wait a second to retry.
const OPENING: usize = 100;

/// The open followers; they end when this is dropped.
pub(crate) struct Watchers {
    tasks: JoinSet<()>,
    /// Requests that failed after the followers were open (an event stream that ended, a long
    /// poll that was refused).
    failures: Arc<AtomicU64>,
}

impl Watchers {
    /// Opens `sse` event streams and `long_polls` long polls under `base` (a server's URL),
    /// each on a group `bench-watch-{n}`, and returns once every stream has its answer's head
    /// and every long poll its first token.
    ///
    /// # Errors
    /// A follower could not be opened (the server refused it, or is unreachable).
    pub(crate) async fn open(
        base: &str,
        auth: Option<&str>,
        sse: usize,
        long_polls: usize,
    ) -> Result<Watchers> {
        // Connections of their own, out of the load's pool.
        let client = crate::transport::client(sse + long_polls);
        let failures = Arc::new(AtomicU64::new(0));
        let mut tasks = JoinSet::new();
        let mut opening = JoinSet::new();
        for n in 0..sse + long_polls {
            let group = format!("{base}/v1/changes/bench-watch-{n}");
            let (client, auth) = (client.clone(), auth.map(str::to_owned));
            let failures = Arc::clone(&failures);
            let (opened, open) = tokio::sync::oneshot::channel::<Result<()>>();
            if n < sse {
                tasks.spawn(event_stream(client, group, auth, opened, failures));
            } else {
                tasks.spawn(long_poll(client, group, auth, opened, failures));
            }
            opening.spawn(async move {
                open.await
                    .unwrap_or_else(|_| Err(anyhow!("a follower ended before it opened")))
            });
            if opening.len() >= OPENING
                && let Some(done) = opening.join_next().await
            {
                done.context("a follower task failed")??;
            }
        }
        while let Some(done) = opening.join_next().await {
            done.context("a follower task failed")??;
        }
        Ok(Watchers { tasks, failures })
    }

    /// Requests that failed since the followers opened.
    pub(crate) fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Closes every follower.
    pub(crate) async fn close(mut self) {
        self.tasks.abort_all();
        while self.tasks.join_next().await.is_some() {}
    }
}

fn get(uri: &str, auth: Option<&str>, accept: Option<&str>) -> Result<Request<Body>> {
    let mut request = Request::builder().method(Method::GET).uri(uri);
    if let Some(auth) = auth {
        request = request.header(header::AUTHORIZATION, format!("Bearer {auth}"));
    }
    if let Some(accept) = accept {
        request = request.header(header::ACCEPT, accept);
    }
    Ok(request.body(Full::new(Bytes::new()))?)
}

/// One event stream: reports when its answer's head arrived, then reads it until aborted.
async fn event_stream(
    client: HttpClient,
    uri: String,
    auth: Option<String>,
    opened: tokio::sync::oneshot::Sender<Result<()>>,
    failures: Arc<AtomicU64>,
) {
    let request = match get(&uri, auth.as_deref(), Some("text/event-stream")) {
        Ok(request) => request,
        Err(e) => {
            let _ = opened.send(Err(e));
            return;
        }
    };
    let response = match client.request(request).await {
        Ok(response) if response.status().is_success() => response,
        Ok(response) => {
            let _ = opened.send(Err(anyhow!("event stream {uri}: {}", response.status())));
            return;
        }
        Err(e) => {
            let _ = opened.send(Err(anyhow!("event stream {uri}: {e}")));
            return;
        }
    };
    let _ = opened.send(Ok(()));
    let mut body = response.into_body();
    // Keep-alive comments, and nothing else: no one writes these groups.
    while let Some(frame) = body.frame().await {
        if frame.is_err() {
            break;
        }
    }
    failures.fetch_add(1, Ordering::Relaxed);
}

/// One long poll after another: reports when the first token was read, then polls until
/// aborted.
async fn long_poll(
    client: HttpClient,
    uri: String,
    auth: Option<String>,
    opened: tokio::sync::oneshot::Sender<Result<()>>,
    failures: Arc<AtomicU64>,
) {
    let token = match position(&client, &uri, auth.as_deref()).await {
        Ok(token) => token,
        Err(e) => {
            let _ = opened.send(Err(e));
            return;
        }
    };
    let _ = opened.send(Ok(()));
    let mut token = token;
    loop {
        let poll = format!("{uri}?since={token}&wait={POLL_WAIT_SECS}");
        let answer = match get(&poll, auth.as_deref(), None) {
            Ok(request) => send(&client, request).await,
            Err(e) => Err(e),
        };
        match answer.and_then(|(status, body)| next_token(status, &body)) {
            Ok(next) => token = next,
            Err(_) => {
                failures.fetch_add(1, Ordering::Relaxed);
                // Do not spin on a server that refuses.
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// The current position of a group's feed.
async fn position(client: &HttpClient, uri: &str, auth: Option<&str>) -> Result<String> {
    let (status, body) = send(client, get(uri, auth, None)?).await?;
    next_token(status, &body).with_context(|| format!("the position of {uri}"))
}

fn next_token(status: hyper::StatusCode, body: &Bytes) -> Result<String> {
    if !status.is_success() {
        bail!("{status}: {}", String::from_utf8_lossy(body));
    }
    let page: serde_json::Value = serde_json::from_slice(body)?;
    page["next_token"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("no next_token in {page}"))
}
