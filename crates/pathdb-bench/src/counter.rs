//! `pathdb bench counter`: one hot counter, incremented by `--connections` concurrent clients,
//! two ways in the same run against the same server:
//! - `patch`: `PATCH` with `[{"op": "increment", "path": "/n", "value": 1}]`, one request per
//!   increment; the server applies it to whatever version it reads and retries its own races;
//! - `loop`: what a client does without it: `GET` the counter, `PUT` n + 1 with `If-Match` of
//!   the version read, and on `412` start over.
//!
//! Each way runs `--duration` seconds on its own counter. The report gives increments/s,
//! latency per increment (p50/p99, from the first request of an attempt to its success), the
//! requests sent and, for the loop, the 412s. Afterwards each counter is read back: its value
//! must equal the increments acknowledged, or the run fails.

use crate::http::histogram;
use crate::transport::{Body, HttpClient, client, send};
use anyhow::{Context, Result, bail};
use clap::Args;
use hdrhistogram::Histogram;
use hyper::body::Bytes;
use hyper::{Method, Request, StatusCode, header};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `pathdb bench counter --help`.
#[derive(Args, Debug)]
pub struct CounterArgs {
    /// The server's base URL, e.g. http://127.0.0.1:7070.
    #[arg(long)]
    url: String,
    /// Concurrent clients, each with one request in flight.
    #[arg(long, default_value_t = 32)]
    connections: usize,
    /// Seconds per way.
    #[arg(long, default_value_t = 5.0)]
    duration: f64,
}

/// How a client increments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Way {
    Patch,
    Loop,
}

impl Way {
    fn name(self) -> &'static str {
        match self {
            Way::Patch => "patch",
            Way::Loop => "get/If-Match loop",
        }
    }
}

/// One client's (or, merged, one way's) counts.
struct Tally {
    increments: u64,
    requests: u64,
    conflicts: u64,
    latency: Histogram<u64>,
}

impl Tally {
    fn merge(&mut self, other: Tally) -> Result<()> {
        self.increments += other.increments;
        self.requests += other.requests;
        self.conflicts += other.conflicts;
        self.latency.add(&other.latency)?;
        Ok(())
    }
}

/// What one way achieved.
struct Outcome {
    way: Way,
    tally: Tally,
    elapsed: Duration,
}

impl Outcome {
    fn per_second(&self) -> f64 {
        self.tally.increments as f64 / self.elapsed.as_secs_f64()
    }
}

struct Server {
    base: String,
    auth: Option<String>,
}

impl Server {
    fn request(
        &self,
        method: Method,
        uri: &str,
        content_type: &str,
        body: String,
    ) -> Request<Body> {
        let mut request = Request::builder()
            .method(method)
            .uri(format!("{}{uri}", self.base))
            .header(header::CONTENT_TYPE, content_type);
        if let Some(auth) = &self.auth {
            request = request.header(header::AUTHORIZATION, auth);
        }
        request
            .body(Body::new(Bytes::from(body)))
            .expect("a valid request")
    }

    /// The counter's version and value of `n`, or `None` if it does not exist.
    async fn read(&self, client: &HttpClient, item: &str) -> Result<Option<(u64, u64)>> {
        let (status, body) = send(
            client,
            self.request(Method::GET, item, "application/json", String::new()),
        )
        .await?;
        match status {
            StatusCode::NOT_FOUND => Ok(None),
            StatusCode::OK => {
                let item: serde_json::Value = serde_json::from_slice(&body)?;
                let version = item["version"].as_u64().context("no version")?;
                let n = item["value"]["n"].as_u64().context("no counter")?;
                Ok(Some((version, n)))
            }
            other => bail!("GET {item}: {other}: {}", String::from_utf8_lossy(&body)),
        }
    }
}

/// One client of `way` until `deadline`.
async fn client_loop(
    client: HttpClient,
    server: Arc<Server>,
    way: Way,
    item: String,
    deadline: Instant,
) -> Result<Tally> {
    let mut tally = Tally {
        increments: 0,
        requests: 0,
        conflicts: 0,
        latency: histogram(),
    };
    let increment = serde_json::json!([{"op": "increment", "path": "/n", "value": 1}]).to_string();
    while Instant::now() < deadline {
        let started = Instant::now();
        match way {
            Way::Patch => {
                let uri = format!("{item}?create=true");
                let request = server.request(
                    Method::PATCH,
                    &uri,
                    "application/json-patch+json",
                    increment.clone(),
                );
                let (status, body) = send(&client, request).await?;
                tally.requests += 1;
                if !status.is_success() {
                    bail!("PATCH {item}: {status}: {}", String::from_utf8_lossy(&body));
                }
            }
            Way::Loop => loop {
                let current = server.read(&client, &item).await?;
                tally.requests += 1;
                let (method, condition, n) = match current {
                    Some((version, n)) => (Method::PUT, ("if-match", format!("\"{version}\"")), n),
                    None => (Method::PUT, ("if-none-match", "*".to_owned()), 0),
                };
                let mut request = server.request(
                    method,
                    &item,
                    "application/json",
                    format!("{{\"n\":{}}}", n + 1),
                );
                request
                    .headers_mut()
                    .insert(condition.0, condition.1.parse()?);
                let (status, body) = send(&client, request).await?;
                tally.requests += 1;
                match status {
                    s if s.is_success() => break,
                    StatusCode::PRECONDITION_FAILED => tally.conflicts += 1,
                    other => bail!("PUT {item}: {other}: {}", String::from_utf8_lossy(&body)),
                }
            },
        }
        tally.increments += 1;
        let micros = u64::try_from(started.elapsed().as_micros())
            .unwrap_or(u64::MAX)
            .max(1);
        tally.latency.saturating_record(micros);
    }
    Ok(tally)
}

async fn run_way(
    client: &HttpClient,
    server: &Arc<Server>,
    args: &CounterArgs,
    way: Way,
    item: String,
) -> Result<Outcome> {
    let before = server.read(client, &item).await?.map_or(0, |(_, n)| n);
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(args.duration);
    let tasks: Vec<_> = (0..args.connections)
        .map(|_| {
            tokio::spawn(client_loop(
                client.clone(),
                server.clone(),
                way,
                item.clone(),
                deadline,
            ))
        })
        .collect();
    let mut tally = Tally {
        increments: 0,
        requests: 0,
        conflicts: 0,
        latency: histogram(),
    };
    for task in tasks {
        tally.merge(task.await.context("a client failed")??)?;
    }
    let elapsed = started.elapsed();
    let after = server.read(client, &item).await?.map_or(0, |(_, n)| n);
    if after - before != tally.increments {
        bail!(
            "{}: {} increments acknowledged, but the counter went from {before} to {after}",
            way.name(),
            tally.increments
        );
    }
    Ok(Outcome {
        way,
        tally,
        elapsed,
    })
}

/// Runs both ways and prints the report (JSON with `json`).
///
/// # Errors
/// Bad arguments, an unreachable server, a failed request, or a counter that does not hold
/// what was acknowledged.
pub fn run(args: CounterArgs, token: Option<String>, json: bool) -> Result<()> {
    if args.connections == 0 || !(args.duration > 0.0 && args.duration.is_finite()) {
        bail!("--connections and --duration must be positive");
    }
    let server = Arc::new(Server {
        base: args.url.trim_end_matches('/').to_owned(),
        auth: token.map(|t| format!("Bearer {t}")),
    });
    let client = client(args.connections);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let run_id = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    let outcomes = runtime.block_on(async {
        let mut outcomes = Vec::new();
        for (way, name) in [(Way::Patch, "patch"), (Way::Loop, "loop")] {
            eprintln!(
                "{} clients, {} s: {}...",
                args.connections,
                args.duration,
                way.name()
            );
            let item = format!("/v1/items/bench_counter-{run_id}/{name}-1");
            outcomes.push(run_way(&client, &server, &args, way, item).await?);
        }
        anyhow::Ok(outcomes)
    })?;
    let ratio = outcomes[0].per_second() / outcomes[1].per_second().max(f64::MIN_POSITIVE);
    for o in &outcomes {
        let (p50, p99) = (
            o.tally.latency.value_at_quantile(0.5) as f64 / 1000.0,
            o.tally.latency.value_at_quantile(0.99) as f64 / 1000.0,
        );
        if json {
            println!(
                "{}",
                serde_json::json!({
                    "way": o.way.name(), "connections": args.connections,
                    "seconds": o.elapsed.as_secs_f64(), "increments": o.tally.increments,
                    "increments_per_second": o.per_second(), "requests": o.tally.requests,
                    "conflicts_412": o.tally.conflicts, "p50_ms": p50, "p99_ms": p99,
                })
            );
        } else {
            println!(
                "{:<18} {:>9.0} increments/s  {:>8} increments  {:>8} requests  {:>8} 412s  p50 {:>7.2} ms  p99 {:>7.2} ms",
                o.way.name(),
                o.per_second(),
                o.tally.increments,
                o.tally.requests,
                o.tally.conflicts,
                p50,
                p99
            );
        }
    }
    if json {
        println!("{}", serde_json::json!({"patch_vs_loop": ratio}));
    } else {
        println!("patch / loop: {ratio:.1}x");
    }
    Ok(())
}
