//! A closed-loop HTTP load generator: `pathdb bench http` and the `bench-http` binary.
//!
//! It preloads `--keys` items spread over `--groups` groups, then runs `--concurrency` workers
//! for `--duration` seconds. Each worker sends one request, waits for the whole response, records
//! its latency and sends the next (closed loop), picking get, put or list by `--mix`. Gets and
//! puts hit a random preloaded key (puts overwrite unconditionally), lists read the first page of
//! a random group. The report gives requests/s and p50/p99/p999 latency overall and per
//! operation; any non-2xx answer (or a transport error, or a get that finds nothing) is an error.
//!
//! With `--sse N` and `--long-polls N`, the load runs twice against the same server: first
//! alone, then with that many change-feed followers (event streams, long polls) open, each on a
//! group the load never writes; both reports are printed, and the p50/p99 of each operation side
//! by side (docs/reliability.md: what followers cost writes).
//!
//! `--header NAME:VALUE` (repeatable) adds a header to every PathDB request, the preload's
//! included: e.g. `Schema-Version: user=1` to read and write as a client of an older namespace
//! definition version (docs/migrations.md).
//!
//! `--target pathdb` speaks PathDB's `/v1` API. `--target dynamodb` sends the same logical mix
//! to a DynamoDB-compatible server (e.g. dynalite, `scripts/dynalite.sh`) in the DynamoDB JSON
//! protocol, on a single-table design: partition key `pk = "BENCH#<group>"`, sort key
//! `sk = "ITEM#<zero-padded i>"`; get = GetItem, put = PutItem, list = Query on `pk` with a
//! Limit. The requests carry a well-formed SigV4 `Authorization` header with a dummy signature:
//! enough for local servers, which do not verify signatures, not for AWS itself.

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, ValueEnum};
use hdrhistogram::Histogram;
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Method, Request, StatusCode, Uri, header};
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::transport::{Body, HttpClient, client, send};

/// Which API the server speaks.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A `pathdb serve`.
    Pathdb,
    /// A DynamoDB-compatible server (DynamoDB JSON protocol 1.0), e.g. dynalite.
    Dynamodb,
}

impl Target {
    fn name(self) -> &'static str {
        match self {
            Target::Pathdb => "pathdb",
            Target::Dynamodb => "dynamodb",
        }
    }
}

/// The load generator's arguments (`pathdb bench http --help`).
#[derive(Args, Debug)]
pub struct HttpArgs {
    /// The server's base URL, e.g. http://127.0.0.1:7070 (plain HTTP/1.1).
    #[arg(long)]
    url: String,
    /// The API the server speaks.
    #[arg(long, value_enum, default_value_t = Target::Pathdb)]
    target: Target,
    /// Concurrent workers, each with one request in flight.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// How long to run, in seconds (after the preload).
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Operation weights.
    #[arg(long, default_value = "get=70,put=20,list=10", value_parser = parse_mix)]
    mix: Mix,
    /// Items to preload; gets and puts pick one of them at random.
    #[arg(long, default_value_t = 10_000)]
    keys: u64,
    /// Groups the items are spread over (item i is in group i % groups); a list reads one group.
    #[arg(long, default_value_t = 100)]
    groups: u64,
    /// Items per list page.
    #[arg(long, default_value_t = 100)]
    list_limit: u32,
    /// Size of the string payload in each item, in bytes.
    #[arg(long, default_value_t = 100)]
    value_bytes: usize,
    /// Members of each item's value (at least 2: `n` and `payload`; the others are
    /// `m2`, `m3`, ...: integers, strings and booleans in turn), e.g. 10 to measure a
    /// namespace schema of 10 members (docs/benchmarks.md) (--target pathdb).
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u16).range(2..))]
    members: u16,
    /// Where the workers' random picks start: runs with the same seed pick the same items in
    /// the same order. Give each run of a series its own seed when its puts should create new
    /// items (with a large --keys and --no-preload) rather than replace the last run's.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Skip the preload (the items are already there from an earlier run).
    #[arg(long)]
    no_preload: bool,
    /// Read each item through an alias: a get asks for PREFIX + the item's path
    /// (`/by-1/bench-3/item-7` for `--get-prefix /by-1`), which a namespace's alias template
    /// `/by-1/bench-{@bench}/item-{@item}` gives every item (docs/aliases.md) (--target pathdb).
    #[arg(long, value_name = "PREFIX")]
    get_prefix: Option<String>,
    /// A header sent with every request, the preload's included (repeat for several), e.g.
    /// `--header 'Schema-Version: user=1'` to speak an older namespace definition version
    /// (docs/migrations.md) (--target pathdb).
    #[arg(long = "header", value_name = "NAME:VALUE", value_parser = parse_header)]
    headers: Vec<(HeaderName, HeaderValue)>,
    /// DynamoDB table, created if missing (--target dynamodb).
    #[arg(long, default_value = "pathdb-bench")]
    table: String,
    /// DynamoDB region named in the request credential scope (--target dynamodb).
    #[arg(long, default_value = "us-east-1")]
    region: String,
    /// Change event streams (Server-Sent Events) held open during a second run of the load
    /// (after one without), each on a group of its own that the load does not write (--target
    /// pathdb).
    #[arg(long, value_name = "N", default_value_t = 0)]
    sse: usize,
    /// Long polls (`wait=60`, polled again as each ends) held open during the second run, each
    /// on a group of its own that the load does not write (--target pathdb).
    #[arg(long, value_name = "N", default_value_t = 0)]
    long_polls: usize,
}

/// Operation weights, e.g. `get=70,put=20,list=10`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mix {
    get: u32,
    put: u32,
    list: u32,
}

impl Mix {
    fn total(self) -> u32 {
        self.get + self.put + self.list
    }

    fn pick(self, r: u64) -> Op {
        let x = (r % u64::from(self.total())) as u32;
        if x < self.get {
            Op::Get
        } else if x < self.get + self.put {
            Op::Put
        } else {
            Op::List
        }
    }
}

impl std::fmt::Display for Mix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "get={},put={},list={}", self.get, self.put, self.list)
    }
}

/// `Name: value` (`--header`): the name before the first colon, the value after it, each
/// trimmed.
fn parse_header(text: &str) -> Result<(HeaderName, HeaderValue), String> {
    let (name, value) = text
        .split_once(':')
        .ok_or_else(|| format!("expected NAME:VALUE, got {text:?}"))?;
    let name = HeaderName::from_bytes(name.trim().as_bytes())
        .map_err(|_| format!("{:?} is not a header name", name.trim()))?;
    let value = HeaderValue::from_str(value.trim())
        .map_err(|_| format!("{:?} is not a header value", value.trim()))?;
    Ok((name, value))
}

fn parse_mix(text: &str) -> Result<Mix, String> {
    let mut mix = Mix {
        get: 0,
        put: 0,
        list: 0,
    };
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, weight) = part
            .split_once('=')
            .ok_or_else(|| format!("expected op=weight, got {part:?}"))?;
        let weight: u32 = weight
            .trim()
            .parse()
            .map_err(|_| format!("weight of {name} must be a whole number, got {weight:?}"))?;
        match name.trim() {
            "get" => mix.get = weight,
            "put" => mix.put = weight,
            "list" => mix.list = weight,
            other => return Err(format!("unknown operation {other:?}: use get, put, list")),
        }
    }
    if mix.total() == 0 {
        return Err("the weights add up to 0".to_owned());
    }
    if mix.total() > 1_000_000 {
        return Err("the weights add up to more than 1000000".to_owned());
    }
    Ok(mix)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Get,
    Put,
    List,
}

const OPS: [Op; 3] = [Op::Get, Op::Put, Op::List];

impl Op {
    fn index(self) -> usize {
        self as usize
    }

    fn name(self) -> &'static str {
        match self {
            Op::Get => "get",
            Op::Put => "put",
            Op::List => "list",
        }
    }
}

/// SplitMix64: a small, fast generator; each worker gets its own seed.
struct Rng(u64);

impl Rng {
    /// Worker `w`'s generator in a run given `seed` (`--seed`; 0 is the sequence every run used
    /// before the option).
    fn of_worker(seed: u64, w: usize) -> Rng {
        Rng((0x5EED_0000_u64 + w as u64).wrapping_add(seed << 32))
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// How to phrase the logical operations for one server API.
enum Api {
    Pathdb {
        base: String,
        auth: Option<String>,
        /// What gets put before an item's path (`--get-prefix`), or nothing.
        get_prefix: String,
        /// Sent with every request (`--header`).
        headers: Vec<(HeaderName, HeaderValue)>,
    },
    Dynamodb {
        uri: Uri,
        table: String,
        date: String,
        auth: String,
    },
}

impl Api {
    fn new(args: &HttpArgs, token: Option<String>) -> Result<Api> {
        let base = args.url.trim_end_matches('/').to_owned();
        let uri: Uri = base
            .parse()
            .with_context(|| format!("--url {:?} is not a URL", args.url))?;
        if uri.scheme_str() != Some("http") {
            bail!("--url must be a plain http:// URL, got {:?}", args.url);
        }
        Ok(match args.target {
            Target::Pathdb => Api::Pathdb {
                base,
                auth: token.map(|t| format!("Bearer {t}")),
                get_prefix: args
                    .get_prefix
                    .as_deref()
                    .map(|p| p.trim_end_matches('/').to_owned())
                    .unwrap_or_default(),
                headers: args.headers.clone(),
            },
            Target::Dynamodb => {
                let (date, day) = amz_date(SystemTime::now());
                let key = "AKIDPATHDBBENCH";
                Api::Dynamodb {
                    uri: format!("{base}/").parse()?,
                    table: args.table.clone(),
                    auth: format!(
                        "AWS4-HMAC-SHA256 Credential={key}/{day}/{region}/dynamodb/aws4_request, \
                         SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature={sig}",
                        region = args.region,
                        sig = "0".repeat(64)
                    ),
                    date,
                }
            }
        })
    }

    /// The request for `op` on item `i` (group `i % groups`); a list reads group `group`.
    fn request(&self, op: Op, i: u64, group: u64, value: &Value) -> Request<Body> {
        match self {
            Api::Pathdb {
                base,
                auth,
                get_prefix,
                headers,
            } => {
                let (method, uri, body) = match op {
                    Op::Get => (
                        Method::GET,
                        format!("{base}/v1/items{get_prefix}/bench-{group}/item-{i}"),
                        Bytes::new(),
                    ),
                    Op::Put => (
                        Method::PUT,
                        format!("{base}/v1/items/bench-{group}/item-{i}"),
                        Bytes::from(format!(
                            r#"{{"n":{i},"payload":"{payload}"{members}}}"#,
                            payload = value.payload,
                            members = value.members
                        )),
                    ),
                    Op::List => (
                        Method::GET,
                        format!("{base}/v1/list/bench-{group}?limit={}", value.list_limit),
                        Bytes::new(),
                    ),
                };
                let mut request = Request::builder().method(method).uri(uri);
                if op == Op::Put {
                    request = request.header(header::CONTENT_TYPE, "application/json");
                }
                if let Some(auth) = auth {
                    request = request.header(header::AUTHORIZATION, auth);
                }
                for (name, value) in headers {
                    request = request.header(name, value);
                }
                request
                    .body(Full::new(body))
                    .expect("a valid request (the URL was checked)")
            }
            Api::Dynamodb { table, .. } => {
                let key = format!(r#""pk":{{"S":"BENCH#{group}"}},"sk":{{"S":"ITEM#{i:010}"}}"#);
                let (action, body) = match op {
                    Op::Get => (
                        "GetItem",
                        format!(r#"{{"TableName":"{table}","Key":{{{key}}}}}"#),
                    ),
                    Op::Put => (
                        "PutItem",
                        format!(
                            r#"{{"TableName":"{table}","Item":{{{key},"n":{{"N":"{i}"}},"payload":{{"S":"{payload}"}}}}}}"#,
                            payload = value.payload
                        ),
                    ),
                    Op::List => (
                        "Query",
                        format!(
                            r#"{{"TableName":"{table}","KeyConditionExpression":"pk = :pk","ExpressionAttributeValues":{{":pk":{{"S":"BENCH#{group}"}}}},"Limit":{}}}"#,
                            value.list_limit
                        ),
                    ),
                };
                self.dynamodb(action, body)
            }
        }
    }

    /// A DynamoDB JSON-protocol request (`--target dynamodb` only).
    fn dynamodb(&self, action: &str, body: String) -> Request<Body> {
        let Api::Dynamodb {
            uri, date, auth, ..
        } = self
        else {
            unreachable!("a DynamoDB request for a PathDB server")
        };
        Request::builder()
            .method(Method::POST)
            .uri(uri.clone())
            .header(header::CONTENT_TYPE, "application/x-amz-json-1.0")
            .header("x-amz-target", format!("DynamoDB_20120810.{action}"))
            .header("x-amz-date", date.as_str())
            .header(header::AUTHORIZATION, auth.as_str())
            .body(Full::new(Bytes::from(body)))
            .expect("a valid request (the URL was checked)")
    }

    /// Whether a response is a success for `op`.
    fn success(&self, op: Op, status: StatusCode, body: &[u8]) -> bool {
        if !status.is_success() {
            return false;
        }
        match (self, op) {
            // DynamoDB answers a GetItem for a missing key with 200 and `{}`; PathDB with 404.
            (Api::Dynamodb { .. }, Op::Get) => contains(body, b"\"Item\""),
            _ => true,
        }
    }

    /// Creates the table if missing and waits until it is active (`--target dynamodb`).
    async fn prepare(&self, client: &HttpClient) -> Result<()> {
        let Api::Dynamodb { table, .. } = self else {
            return Ok(());
        };
        let create = format!(
            r#"{{"TableName":"{table}","AttributeDefinitions":[{{"AttributeName":"pk","AttributeType":"S"}},{{"AttributeName":"sk","AttributeType":"S"}}],"KeySchema":[{{"AttributeName":"pk","KeyType":"HASH"}},{{"AttributeName":"sk","KeyType":"RANGE"}}],"BillingMode":"PAY_PER_REQUEST"}}"#
        );
        let (status, body) = send(client, self.dynamodb("CreateTable", create)).await?;
        if !status.is_success() && !contains(&body, b"ResourceInUseException") {
            bail!(
                "CreateTable {table}: {status}: {}",
                String::from_utf8_lossy(&body)
            );
        }
        let describe = format!(r#"{{"TableName":"{table}"}}"#);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let (status, body) =
                send(client, self.dynamodb("DescribeTable", describe.clone())).await?;
            if status.is_success() && contains(&body, b"\"TableStatus\":\"ACTIVE\"") {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "table {table} is not ACTIVE after 60 s: {status}: {}",
                    String::from_utf8_lossy(&body)
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// What every request shares.
struct Value {
    payload: String,
    /// The members after `payload`, as JSON text starting with a comma (or nothing).
    members: String,
    list_limit: u32,
}

/// `,"m2":2,"m3":"m3","m4":true,...` up to `members` members in all (2 are `n` and `payload`).
fn extra_members(members: u16) -> String {
    (2..members)
        .map(|k| match k % 3 {
            2 => format!(r#","m{k}":{k}"#),
            0 => format!(r#","m{k}":"m{k}""#),
            _ => format!(r#","m{k}":true"#),
        })
        .collect()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// `X-Amz-Date` (`20250102T030405Z`) and its day (`20250102`) for `now`.
fn amz_date(now: SystemTime) -> (String, String) {
    let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let day = format!("{y:04}{m:02}{d:02}");
    let time = format!(
        "{day}T{:02}{:02}{:02}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    );
    (time, day)
}

/// One worker's (or, merged, the run's) counts and latencies, per operation.
struct Stats {
    latency: [Histogram<u64>; 3],
    requests: [u64; 3],
    errors: [u64; 3],
    first_error: Option<String>,
}

/// Latencies are recorded in microseconds, from 1 µs to 10 min, 3 significant digits.
pub(crate) fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 600_000_000, 3).expect("valid histogram bounds")
}

impl Stats {
    fn new() -> Stats {
        Stats {
            latency: [histogram(), histogram(), histogram()],
            requests: [0; 3],
            errors: [0; 3],
            first_error: None,
        }
    }

    fn merge(&mut self, other: Stats) {
        for i in 0..3 {
            self.latency[i]
                .add(&other.latency[i])
                .expect("histograms with the same bounds");
            self.requests[i] += other.requests[i];
            self.errors[i] += other.errors[i];
        }
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }

    fn error(&mut self, op: Op, message: impl FnOnce() -> String) {
        self.errors[op.index()] += 1;
        if self.first_error.is_none() {
            self.first_error = Some(message());
        }
    }
}

/// Runs the bench command.
/// Preloads, runs the load and prints the report (a table, or JSON lines with `json`); `token`
/// is sent as a bearer token to a PathDB server.
///
/// # Errors
/// Bad arguments, an unreachable server, a failed preload.
pub fn run(args: HttpArgs, token: Option<String>, json: bool) -> Result<()> {
    if args.concurrency == 0 {
        bail!("--concurrency must be at least 1");
    }
    if !(args.duration > 0.0 && args.duration.is_finite()) {
        bail!("--duration must be a positive number of seconds");
    }
    if args.keys == 0 || args.groups == 0 {
        bail!("--keys and --groups must be at least 1");
    }
    if args.list_limit == 0 {
        bail!("--list-limit must be at least 1");
    }
    let followers = args.sse + args.long_polls;
    if followers > 0 && args.target != Target::Pathdb {
        bail!("--sse and --long-polls follow a PathDB server's change feed (--target pathdb)");
    }
    let base = args.url.trim_end_matches('/').to_owned();
    let follower_token = token.clone();
    let api = Arc::new(Api::new(&args, token)?);
    if args.get_prefix.is_some() && args.target != Target::Pathdb {
        bail!("--get-prefix reads a PathDB item through an alias (--target pathdb)");
    }
    if args.members != 2 && args.target != Target::Pathdb {
        bail!("--members shapes a PathDB item's value (--target pathdb)");
    }
    if !args.headers.is_empty() && args.target != Target::Pathdb {
        bail!("--header is sent to a PathDB server (--target pathdb)");
    }
    let value = Arc::new(Value {
        payload: "x".repeat(args.value_bytes),
        members: extra_members(args.members),
        list_limit: args.list_limit,
    });
    let client = client(args.concurrency);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        api.prepare(&client).await?;
        let preload = if args.no_preload {
            None
        } else {
            eprintln!(
                "preloading {} items over {} connections...",
                args.keys, args.concurrency
            );
            let started = Instant::now();
            preload(&client, &api, &value, &args).await?;
            Some(started.elapsed())
        };

        // With followers, the same load first without them: the two reports compare what
        // being followed costs the load, in one run against one server.
        let baseline = if followers > 0 {
            eprintln!(
                "running {} workers for {} s without followers...",
                args.concurrency, args.duration
            );
            Some(load(&client, &api, &value, &args).await?)
        } else {
            None
        };
        let watchers = if followers > 0 {
            eprintln!(
                "opening {} event streams and {} long polls on other groups...",
                args.sse, args.long_polls
            );
            let watchers = crate::watchers::Watchers::open(
                &base,
                follower_token.as_deref(),
                args.sse,
                args.long_polls,
            )
            .await?;
            // The long polls' first requests are on their way: let the server take them in.
            tokio::time::sleep(Duration::from_secs(1)).await;
            Some(watchers)
        } else {
            None
        };
        eprintln!(
            "running {} workers for {} s...",
            args.concurrency, args.duration
        );
        let (stats, elapsed) = load(&client, &api, &value, &args).await?;
        let follower_failures = match watchers {
            Some(watchers) => {
                let failures = watchers.failures();
                watchers.close().await;
                Some(failures)
            }
            None => None,
        };
        let report = Report {
            args: &args,
            preload,
            elapsed,
            stats: &stats,
            follower_failures,
        };
        let baseline = baseline.as_ref().map(|(stats, elapsed)| Report {
            args: &args,
            preload: None,
            elapsed: *elapsed,
            stats,
            follower_failures: None,
        });
        if json {
            let mut out = report.json();
            if let (Some(b), Some(out)) = (&baseline, out.as_object_mut()) {
                out.insert("baseline".to_owned(), b.json());
            }
            println!("{out}");
        } else {
            if let Some(b) = &baseline {
                print!("without followers:\n{}\nwith followers:\n", b.text());
            }
            print!("{}", report.text());
            if let Some(b) = &baseline {
                print!("{}", compare(b, &report));
            }
        }
        for stats in baseline.iter().map(|b| b.stats).chain([&stats]) {
            if let Some(e) = &stats.first_error {
                eprintln!("first error: {e}");
            }
        }
        anyhow::Ok(())
    })
}

/// Runs `args.concurrency` workers for `args.duration`: their stats and how long they ran.
async fn load(
    client: &HttpClient,
    api: &Arc<Api>,
    value: &Arc<Value>,
    args: &HttpArgs,
) -> Result<(Stats, Duration)> {
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(args.duration);
    let mut workers = Vec::with_capacity(args.concurrency);
    for w in 0..args.concurrency {
        let (client, api, value) = (client.clone(), api.clone(), value.clone());
        let (mix, keys, groups) = (args.mix, args.keys, args.groups);
        let rng = Rng::of_worker(args.seed, w);
        workers.push(tokio::spawn(async move {
            worker(&client, &api, &value, mix, keys, groups, rng, deadline).await
        }));
    }
    let mut stats = Stats::new();
    for w in workers {
        stats.merge(w.await.context("a worker failed")?);
    }
    Ok((stats, started.elapsed()))
}

/// One line per operation: its p50 and p99 without followers and with them, and the ratio of
/// the p99s.
fn compare(without: &Report<'_>, with: &Report<'_>) -> String {
    let mut s = String::from("\nwithout -> with followers:\n");
    for (a, b) in without.rows().iter().zip(with.rows()) {
        if let (Some([a50, a99, ..]), Some([b50, b99, ..])) = (a.latency, b.latency) {
            let _ = writeln!(
                s,
                "{:<5} p50 {a50:.3} -> {b50:.3} ms, p99 {a99:.3} -> {b99:.3} ms ({:.2}x)",
                a.name,
                b99 / a99
            );
        }
    }
    s
}

/// Writes items 0..keys with `concurrency` connections; any failure stops the run.
async fn preload(
    client: &HttpClient,
    api: &Arc<Api>,
    value: &Arc<Value>,
    args: &HttpArgs,
) -> Result<()> {
    let mut tasks = Vec::new();
    let step = args.concurrency as u64;
    for w in 0..step.min(args.keys) {
        let (client, api, value) = (client.clone(), api.clone(), value.clone());
        let (keys, groups) = (args.keys, args.groups);
        tasks.push(tokio::spawn(async move {
            let mut i = w;
            while i < keys {
                let request = api.request(Op::Put, i, i % groups, &value);
                let (status, body) = send(&client, request)
                    .await
                    .with_context(|| format!("preloading item {i}"))?;
                if !api.success(Op::Put, status, &body) {
                    return Err(anyhow!(
                        "preloading item {i}: {status}: {}",
                        String::from_utf8_lossy(&body)
                    ));
                }
                i += step;
            }
            Ok(())
        }));
    }
    for task in tasks {
        task.await.context("a preload task failed")??;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
async fn worker(
    client: &HttpClient,
    api: &Api,
    value: &Value,
    mix: Mix,
    keys: u64,
    groups: u64,
    mut rng: Rng,
    deadline: Instant,
) -> Stats {
    let mut stats = Stats::new();
    while Instant::now() < deadline {
        let op = mix.pick(rng.next());
        let i = rng.next() % keys;
        let group = match op {
            Op::List => rng.next() % groups,
            _ => i % groups,
        };
        let request = api.request(op, i, group, value);
        let sent = Instant::now();
        let result = send(client, request).await;
        let took = sent.elapsed();
        stats.requests[op.index()] += 1;
        match result {
            Ok((status, body)) if api.success(op, status, &body) => {
                let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX).max(1);
                stats.latency[op.index()].saturating_record(micros);
            }
            Ok((status, body)) => stats.error(op, || {
                let body = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
                format!("{} {status}: {body}", op.name())
            }),
            Err(e) => {
                stats.error(op, || format!("{}: {e:#}", op.name()));
                // Do not spin on a server that is gone.
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
    stats
}

struct Report<'a> {
    args: &'a HttpArgs,
    preload: Option<Duration>,
    elapsed: Duration,
    stats: &'a Stats,
    /// With followers open (`--sse`, `--long-polls`): their requests that failed during the
    /// run; `None` for a run without them.
    follower_failures: Option<u64>,
}

/// Requests, errors, requests/s and latency (ms) of one row.
struct Row {
    name: &'static str,
    requests: u64,
    errors: u64,
    per_second: f64,
    /// p50, p99, p999, max in milliseconds; `None` without a successful request.
    latency: Option<[f64; 4]>,
}

impl Report<'_> {
    fn rows(&self) -> Vec<Row> {
        let secs = self.elapsed.as_secs_f64();
        let latency = |h: &Histogram<u64>| {
            (!h.is_empty()).then(|| {
                [0.50, 0.99, 0.999]
                    .map(|q| h.value_at_quantile(q) as f64 / 1000.0)
                    .into_iter()
                    .chain([h.max() as f64 / 1000.0])
                    .collect::<Vec<_>>()
                    .try_into()
                    .expect("four values")
            })
        };
        let mut all = histogram();
        for h in &self.stats.latency {
            all.add(h).expect("histograms with the same bounds");
        }
        let requests: u64 = self.stats.requests.iter().sum();
        let mut rows = vec![Row {
            name: "all",
            requests,
            errors: self.stats.errors.iter().sum(),
            per_second: requests as f64 / secs,
            latency: latency(&all),
        }];
        for op in OPS {
            let i = op.index();
            rows.push(Row {
                name: op.name(),
                requests: self.stats.requests[i],
                errors: self.stats.errors[i],
                per_second: self.stats.requests[i] as f64 / secs,
                latency: latency(&self.stats.latency[i]),
            });
        }
        rows
    }

    fn text(&self) -> String {
        let a = self.args;
        let rows = self.rows();
        let mut s = String::new();
        let _ = writeln!(s, "target:      {} at {}", a.target.name(), a.url);
        let _ = writeln!(
            s,
            "load:        {} workers for {:.1} s, mix {}, {} items in {} groups, list limit {}, payload {} B",
            a.concurrency,
            self.elapsed.as_secs_f64(),
            a.mix,
            a.keys,
            a.groups,
            a.list_limit,
            a.value_bytes
        );
        if let Some(p) = self.preload {
            let _ = writeln!(
                s,
                "preload:     {} puts in {:.2} s ({:.0} puts/s)",
                a.keys,
                p.as_secs_f64(),
                a.keys as f64 / p.as_secs_f64()
            );
        }
        if let Some(failed) = self.follower_failures {
            let _ = writeln!(
                s,
                "followers:   {} event streams, {} long polls on other groups ({failed} failed)",
                a.sse, a.long_polls
            );
        }
        let _ = writeln!(s, "requests:    {}", rows[0].requests);
        let _ = writeln!(s, "errors:      {}", rows[0].errors);
        let _ = writeln!(s, "requests/s:  {:.1}", rows[0].per_second);
        let _ = writeln!(
            s,
            "\n{:<5} {:>10} {:>7} {:>10} {:>9} {:>9} {:>9} {:>9}",
            "op", "requests", "errors", "req/s", "p50 ms", "p99 ms", "p999 ms", "max ms"
        );
        for r in rows.iter().filter(|r| r.name == "all" || r.requests > 0) {
            let _ = write!(
                s,
                "{:<5} {:>10} {:>7} {:>10.1}",
                r.name, r.requests, r.errors, r.per_second
            );
            match r.latency {
                Some([p50, p99, p999, max]) => {
                    let _ = writeln!(s, " {p50:>9.3} {p99:>9.3} {p999:>9.3} {max:>9.3}");
                }
                None => {
                    let _ = writeln!(s, " {:>9} {:>9} {:>9} {:>9}", "-", "-", "-", "-");
                }
            }
        }
        s
    }

    fn json(&self) -> serde_json::Value {
        let a = self.args;
        let row = |r: &Row| {
            let latency = r.latency.map(|[p50, p99, p999, max]| {
                serde_json::json!({ "p50": p50, "p99": p99, "p999": p999, "max": max })
            });
            serde_json::json!({
                "requests": r.requests,
                "errors": r.errors,
                "requests_per_s": r.per_second,
                "latency_ms": latency,
            })
        };
        let rows = self.rows();
        let mut report = row(&rows[0]);
        let ops: serde_json::Map<String, serde_json::Value> = rows[1..]
            .iter()
            .map(|r| (r.name.to_owned(), row(r)))
            .collect();
        let extra = serde_json::json!({
            "target": a.target.name(),
            "url": a.url,
            "concurrency": a.concurrency,
            "duration_s": self.elapsed.as_secs_f64(),
            "mix": { "get": a.mix.get, "put": a.mix.put, "list": a.mix.list },
            "keys": a.keys,
            "groups": a.groups,
            "list_limit": a.list_limit,
            "value_bytes": a.value_bytes,
            "members": a.members,
            "headers": a.headers.iter().map(|(n, v)| {
                format!("{n}: {}", String::from_utf8_lossy(v.as_bytes()))
            }).collect::<Vec<_>>(),
            "preload_s": self.preload.map(|p| p.as_secs_f64()),
            "sse": if self.follower_failures.is_some() { a.sse } else { 0 },
            "long_polls": if self.follower_failures.is_some() { a.long_polls } else { 0 },
            "follower_failures": self.follower_failures,
            "ops": ops,
        });
        if let (Some(report), serde_json::Value::Object(extra)) = (report.as_object_mut(), extra) {
            report.extend(extra);
        }
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_seed_picks_other_items() {
        let picks = |seed: u64, w: usize| -> Vec<u64> {
            let mut rng = Rng::of_worker(seed, w);
            (0..1000).map(|_| rng.next() % 100_000_000).collect()
        };
        // Seed 0 keeps the sequence runs had before the option.
        let mut before = Rng(0x5EED_0000 + 3);
        assert_eq!(
            picks(0, 3)[..2],
            [before.next() % 100_000_000, before.next() % 100_000_000]
        );
        assert_eq!(picks(1, 3), picks(1, 3));
        // Across seeds and workers, 4,000 picks from 10^8 hardly ever meet.
        let mut all: Vec<u64> = [(1, 0), (1, 1), (2, 0), (2, 1)]
            .into_iter()
            .flat_map(|(seed, w)| picks(seed, w))
            .collect();
        all.sort_unstable();
        all.dedup();
        assert!(all.len() > 3_990, "{} distinct picks", all.len());
    }

    #[test]
    fn mix_parses_and_picks_by_weight() {
        let mix = parse_mix("get=70, put=20,list=10").expect("valid mix");
        assert_eq!(
            mix,
            Mix {
                get: 70,
                put: 20,
                list: 10
            }
        );
        assert_eq!(mix.pick(69), Op::Get);
        assert_eq!(mix.pick(70), Op::Put);
        assert_eq!(mix.pick(90), Op::List);
        assert_eq!(parse_mix("put=1").expect("valid").pick(12345), Op::Put);
        assert!(parse_mix("get=0").is_err());
        assert!(parse_mix("scan=5").is_err());
        assert!(parse_mix("get=x").is_err());
    }

    #[test]
    fn headers_parse_and_go_with_every_request() {
        let (name, value) = parse_header(" Schema-Version : user=1 ").expect("a header");
        assert_eq!(name.as_str(), "schema-version");
        assert_eq!(value, "user=1");
        assert_eq!(
            parse_header("x-a:b:c").expect("a header").1,
            "b:c",
            "split at the first colon"
        );
        assert!(parse_header("no colon").is_err());
        assert!(parse_header("bad name: v").is_err());
        assert!(parse_header("x-a: line\nbreak").is_err());

        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            args: HttpArgs,
        }
        let mut args = <Cli as clap::Parser>::try_parse_from([
            "bench",
            "--url",
            "http://127.0.0.1:1",
            "--header",
            "Schema-Version: user=1",
            "--header",
            "x-other: 2",
        ])
        .expect("valid args")
        .args;
        let api = Api::new(&args, None).expect("an API");
        let value = Value {
            payload: String::new(),
            members: String::new(),
            list_limit: 1,
        };
        for op in OPS {
            let request = api.request(op, 3, 3, &value);
            assert_eq!(request.headers()["schema-version"], "user=1", "{op:?}");
            assert_eq!(request.headers()["x-other"], "2", "{op:?}");
        }
        args.headers.clear();
        let api = Api::new(&args, None).expect("an API");
        let request = api.request(Op::Get, 3, 3, &value);
        assert!(request.headers().get("schema-version").is_none());
    }

    #[test]
    fn amz_date_is_iso_basic() {
        let t = UNIX_EPOCH + Duration::from_secs(1_709_251_199); // 2024-02-29T23:59:59Z
        assert_eq!(
            amz_date(t),
            ("20240229T235959Z".to_owned(), "20240229".to_owned())
        );
        assert_eq!(amz_date(UNIX_EPOCH).0, "19700101T000000Z");
    }
}
