//! A fault-injecting HTTP proxy between the DynamoDB backend and a DynamoDB-compatible server
//! (moto), for the fault tests in `faults.rs` (docs/reliability.md, "DynamoDB faults").
//!
//! It listens on a loopback port ([`FaultProxy::endpoint`]: give it to the backend as its
//! endpoint) and forwards every request to the server, one fresh upstream connection per
//! request, unless the test scheduled a [`Fault`] for it. Requests are DynamoDB's JSON protocol
//! over HTTP/1.1: the operation is the `X-Amz-Target` header (`DynamoDB_20120810.PutItem`), so
//! faults can aim at one operation. What each fault does:
//!
//! | fault | forwarded? | the client sees |
//! | --- | --- | --- |
//! | [`Fault::Throttling`] | no | 400 `ThrottlingException` |
//! | [`Fault::ProvisionedThroughputExceeded`] | no | 400 `ProvisionedThroughputExceededException` |
//! | [`Fault::InternalError`] | no | 500 `InternalServerError` |
//! | [`Fault::SlowAnswer`] | yes, at once (applied) | the answer only after the delay: past its timeout |
//! | [`Fault::HeldRequest`] | yes, after the delay (applied late) | nothing in time: past its timeout |
//! | [`Fault::ResetBeforeForward`] | no | the connection reset (TCP RST) after sending |
//! | [`Fault::ResetAfterForward`] | yes (applied) | the connection reset instead of the answer |
//! | [`Fault::UnknownOperation`] | no | 400 `UnknownOperationException`, as dynalite answers `TransactWriteItems` |
//!
//! [`FaultProxy::set_latency`] adds a delay before every forwarded request, as a network farther
//! away would (the hot-group benchmark in `hot_group.rs`). [`FaultProxy::slow_pages`] holds the
//! answer of every request of one operation that asks for more than a number of items (its
//! `Limit`, or no `Limit`), as an endpoint whose answer time grows with the page would.
//!
//! A test controls it with a schedule ([`FaultProxy::fail_next`]: the next `n` requests of an
//! operation get a fault) and a seeded random rate ([`FaultProxy::fail_randomly`]); scheduled
//! faults come first. [`FaultProxy::injected`] counts what was done. Blocking std threads, one per
//! client connection: the proxy needs no runtime and serves while the backend blocks on its own.

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// What the proxy does to one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Answers HTTP 400 `ThrottlingException` without forwarding.
    Throttling,
    /// Answers HTTP 400 `ProvisionedThroughputExceededException` without forwarding.
    ProvisionedThroughputExceeded,
    /// Answers HTTP 500 `InternalServerError` without forwarding.
    InternalError,
    /// Forwards at once (the server applies the request), then holds the answer this long.
    SlowAnswer(Duration),
    /// Holds the request this long, then forwards it (the server applies it late, after the
    /// client has given up on it) and sends the answer to a client that is no longer there.
    HeldRequest(Duration),
    /// Resets the connection once the whole request arrived, without forwarding it.
    ResetBeforeForward,
    /// Forwards the request (the server applies it), then resets the connection instead of
    /// answering.
    ResetAfterForward,
    /// Answers HTTP 400 `UnknownOperationException` without forwarding: an endpoint that does
    /// not implement the operation (dynalite's answer to `TransactWriteItems`).
    UnknownOperation,
}

impl Fault {
    /// A short name, for counts and messages.
    pub fn name(self) -> &'static str {
        match self {
            Fault::Throttling => "throttling",
            Fault::ProvisionedThroughputExceeded => "provisioned_throughput_exceeded",
            Fault::InternalError => "internal_error_500",
            Fault::SlowAnswer(_) => "slow_answer",
            Fault::HeldRequest(_) => "held_request",
            Fault::ResetBeforeForward => "reset_before_forward",
            Fault::ResetAfterForward => "reset_after_forward",
            Fault::UnknownOperation => "unknown_operation",
        }
    }
}

/// The next `remaining` requests of `operation` (`None`: any) get `fault`.
struct Rule {
    operation: Option<String>,
    remaining: u64,
    fault: Fault,
}

/// A fault for each request with probability `rate`, drawn from a seeded generator.
struct Random {
    state: u64,
    rate: f64,
    faults: Vec<Fault>,
    operations: Option<Vec<String>>,
}

impl Random {
    /// splitmix64: small, seedable, good enough to spread faults.
    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn pick(&mut self, operation: &str) -> Option<Fault> {
        if self
            .operations
            .as_ref()
            .is_some_and(|ops| !ops.iter().any(|o| o == operation))
            || self.faults.is_empty()
        {
            return None;
        }
        let draw = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        if draw >= self.rate {
            return None;
        }
        let index = usize::try_from(self.next() % self.faults.len() as u64).unwrap_or(0);
        Some(self.faults[index])
    }
}

#[derive(Default)]
struct Plan {
    rules: VecDeque<Rule>,
    random: Option<Random>,
}

/// What the proxy did so far.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Injected {
    /// Requests forwarded without a fault.
    pub clean: u64,
    /// Faults injected, by [`Fault::name`].
    pub faults: BTreeMap<&'static str, u64>,
}

impl Injected {
    /// Every fault injected.
    pub fn total_faults(&self) -> u64 {
        self.faults.values().sum()
    }
}

struct Shared {
    upstream: SocketAddr,
    plan: Mutex<Plan>,
    injected: Mutex<Injected>,
    /// Added before forwarding each request, in microseconds.
    latency_us: AtomicU64,
    /// Pages of an operation over a size, answered late: (operation, most items, delay).
    slow_pages: Mutex<Option<(String, u64, Duration)>>,
    stopped: AtomicBool,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A handler thread that panicked leaves plain data behind: keep using it.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Shared {
    /// The slow answer a page of [`FaultProxy::slow_pages`] gets, if this request is one.
    fn slow_page(&self, request: &Request) -> Option<Fault> {
        let (operation, most, delay) = lock(&self.slow_pages).clone()?;
        if request.operation != operation {
            return None;
        }
        let limit = serde_json::from_slice::<serde_json::Value>(&request.body)
            .ok()
            .and_then(|body| body.get("Limit").and_then(serde_json::Value::as_u64));
        if limit.is_some_and(|n| n <= most) {
            return None;
        }
        let fault = Fault::SlowAnswer(delay);
        *lock(&self.injected).faults.entry(fault.name()).or_default() += 1;
        Some(fault)
    }

    fn pick(&self, operation: &str) -> Option<Fault> {
        let mut plan = lock(&self.plan);
        let scheduled = plan.rules.iter_mut().find(|rule| {
            rule.remaining > 0 && rule.operation.as_deref().is_none_or(|op| op == operation)
        });
        let fault = match scheduled {
            Some(rule) => {
                rule.remaining -= 1;
                Some(rule.fault)
            }
            None => plan.random.as_mut().and_then(|r| r.pick(operation)),
        };
        plan.rules.retain(|rule| rule.remaining > 0);
        let mut injected = lock(&self.injected);
        match fault {
            Some(f) => *injected.faults.entry(f.name()).or_default() += 1,
            None => injected.clean += 1,
        }
        fault
    }
}

/// The proxy; it stops accepting connections when dropped.
pub struct FaultProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl FaultProxy {
    /// Starts a proxy on a free loopback port in front of `upstream` (`http://127.0.0.1:PORT`).
    pub fn start(upstream: &str) -> FaultProxy {
        let upstream: SocketAddr = upstream
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .parse()
            .expect("the upstream endpoint is http://IP:PORT");
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free loopback port");
        let addr = listener.local_addr().expect("bound address");
        let shared = Arc::new(Shared {
            upstream,
            plan: Mutex::default(),
            injected: Mutex::default(),
            latency_us: AtomicU64::new(0),
            slow_pages: Mutex::default(),
            stopped: AtomicBool::new(false),
        });
        let accepting = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("fault-proxy".into())
            .spawn(move || {
                for stream in listener.incoming() {
                    if accepting.stopped.load(Ordering::Relaxed) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let shared = Arc::clone(&accepting);
                    let _ = std::thread::Builder::new()
                        .name("fault-proxy-conn".into())
                        .spawn(move || serve(&shared, stream));
                }
            })
            .expect("proxy thread starts");
        FaultProxy { addr, shared }
    }

    /// The endpoint URL to give the backend.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The next `n` requests of `operation` (`"TransactWriteItems"`, `"GetItem"`, …; `"*"` for
    /// any) get `fault`, after the faults scheduled before it for the same requests.
    pub fn fail_next(&self, operation: &str, n: u64, fault: Fault) {
        lock(&self.shared.plan).rules.push_back(Rule {
            operation: (operation != "*").then(|| operation.to_owned()),
            remaining: n,
            fault,
        });
    }

    /// From now on, each request of `operations` (`None`: any) gets a fault with probability
    /// `rate`, drawn evenly from `faults` by a generator seeded with `seed`.
    pub fn fail_randomly(
        &self,
        seed: u64,
        rate: f64,
        faults: &[Fault],
        operations: Option<&[&str]>,
    ) {
        lock(&self.shared.plan).random = Some(Random {
            state: seed,
            rate,
            faults: faults.to_vec(),
            operations: operations.map(|ops| ops.iter().map(|&o| o.to_owned()).collect()),
        });
    }

    /// Every request forwarded from now on waits `latency` first (one way: a request costs the
    /// client this much more than the server's own time).
    pub fn set_latency(&self, latency: Duration) {
        let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.shared.latency_us.store(us, Ordering::Relaxed);
    }

    /// From now on, every request of `operation` that asks for more than `most` items (its
    /// `Limit` member, or none) is forwarded at once and answered after `delay`, counted as a
    /// [`Fault::SlowAnswer`]; smaller pages pass untouched.
    pub fn slow_pages(&self, operation: &str, most: u64, delay: Duration) {
        *lock(&self.shared.slow_pages) = Some((operation.to_owned(), most, delay));
    }

    /// No more faults: scheduled and random ones, and slow pages, are dropped.
    pub fn clear(&self) {
        *lock(&self.shared.plan) = Plan::default();
        *lock(&self.shared.slow_pages) = None;
    }

    /// What the proxy did so far.
    pub fn injected(&self) -> Injected {
        lock(&self.shared.injected).clone()
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shared.stopped.store(true, Ordering::Relaxed);
        // Wakes the accept loop so that it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

/// One HTTP request as read from the client.
struct Request {
    /// The request line and the headers, without their line ends.
    head: Vec<String>,
    body: Vec<u8>,
    operation: String,
}

/// An HTTP answer.
struct Answer {
    status: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// Serves one client connection, request after request, until it closes or a fault resets it.
fn serve(shared: &Shared, client: TcpStream) {
    let Ok(reading) = client.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(reading);
    let mut client = client;
    loop {
        let request = match read_request(&mut reader) {
            Ok(Some(request)) => request,
            Ok(None) | Err(_) => return,
        };
        let latency = shared.latency_us.load(Ordering::Relaxed);
        if latency > 0 {
            std::thread::sleep(Duration::from_micros(latency));
        }
        let answer = match shared
            .slow_page(&request)
            .or_else(|| shared.pick(&request.operation))
        {
            None => forward(shared.upstream, &request),
            Some(Fault::Throttling) => Ok(error_answer(
                "400 Bad Request",
                "ThrottlingException",
                "Rate of requests exceeds the allowed throughput (injected by the fault proxy).",
            )),
            Some(Fault::ProvisionedThroughputExceeded) => Ok(error_answer(
                "400 Bad Request",
                "ProvisionedThroughputExceededException",
                "The level of configured provisioned throughput for the table was exceeded \
                 (injected by the fault proxy).",
            )),
            Some(Fault::InternalError) => Ok(error_answer(
                "500 Internal Server Error",
                "InternalServerError",
                "Internal server error (injected by the fault proxy).",
            )),
            Some(Fault::UnknownOperation) => Ok(error_answer(
                "400 Bad Request",
                "UnknownOperationException",
                "",
            )),
            Some(Fault::SlowAnswer(delay)) => {
                let answer = forward(shared.upstream, &request);
                std::thread::sleep(delay);
                answer
            }
            Some(Fault::HeldRequest(delay)) => {
                std::thread::sleep(delay);
                forward(shared.upstream, &request)
            }
            Some(Fault::ResetBeforeForward) => return reset(&client),
            Some(Fault::ResetAfterForward) => {
                let _ = forward(shared.upstream, &request);
                return reset(&client);
            }
        };
        let written = match answer {
            Ok(answer) => write_answer(&mut client, &answer),
            // The server is gone: tell the client as a gateway would.
            Err(e) => write_answer(
                &mut client,
                &error_answer(
                    "502 Bad Gateway",
                    "InternalServerError",
                    &format!("the fault proxy could not reach the server: {e}"),
                ),
            ),
        };
        if written.is_err() {
            return;
        }
    }
}

/// Closes the connection with a TCP RST (SO_LINGER 0) rather than a FIN: the client's read
/// fails with "connection reset", as when a load balancer or the network drops it.
fn reset(client: &TcpStream) {
    let _ = socket2::SockRef::from(client).set_linger(Some(Duration::ZERO));
}

fn read_head(reader: &mut impl BufRead) -> std::io::Result<Option<Vec<String>>> {
    let mut head = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return if head.is_empty() {
                Ok(None)
            } else {
                Err(std::io::ErrorKind::UnexpectedEof.into())
            };
        }
        let line = line.trim_end_matches(['\r', '\n']).to_owned();
        if line.is_empty() {
            return Ok(Some(head));
        }
        head.push(line);
    }
}

fn header<'a>(head: &'a [String], name: &str) -> Option<&'a str> {
    head.iter().skip(1).find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim()
            .eq_ignore_ascii_case(name)
            .then_some(value.trim())
    })
}

fn content_length(head: &[String]) -> std::io::Result<Option<usize>> {
    header(head, "content-length")
        .map(|v| {
            v.parse()
                .map_err(|_| std::io::Error::other("bad Content-Length"))
        })
        .transpose()
}

fn read_request(reader: &mut impl BufRead) -> std::io::Result<Option<Request>> {
    let Some(head) = read_head(reader)? else {
        return Ok(None);
    };
    if header(&head, "transfer-encoding").is_some() {
        return Err(std::io::Error::other("chunked requests are not supported"));
    }
    let mut body = vec![0; content_length(&head)?.unwrap_or(0)];
    reader.read_exact(&mut body)?;
    let operation = header(&head, "x-amz-target")
        .and_then(|t| t.rsplit('.').next())
        .unwrap_or("")
        .to_owned();
    Ok(Some(Request {
        head,
        body,
        operation,
    }))
}

/// Sends the request to the server on a new connection that it closes after answering.
fn forward(upstream: SocketAddr, request: &Request) -> std::io::Result<Answer> {
    let mut server = TcpStream::connect(upstream)?;
    let mut out = Vec::with_capacity(request.body.len() + 1024);
    for (i, line) in request.head.iter().enumerate() {
        let name = line.split(':').next().unwrap_or("").trim();
        if i > 0
            && (name.eq_ignore_ascii_case("connection") || name.eq_ignore_ascii_case("keep-alive"))
        {
            continue;
        }
        out.extend_from_slice(line.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    out.extend_from_slice(&request.body);
    server.write_all(&out)?;
    let mut reader = BufReader::new(server);
    let head = read_head(&mut reader)?.ok_or(std::io::ErrorKind::UnexpectedEof)?;
    let status = head
        .first()
        .and_then(|line| line.split_once(' '))
        .map(|(_, status)| status.to_owned())
        .ok_or_else(|| std::io::Error::other("no status line"))?;
    let chunked = header(&head, "transfer-encoding").is_some_and(|v| v.contains("chunked"));
    let body = if chunked {
        read_chunked(&mut reader)?
    } else if let Some(n) = content_length(&head)? {
        let mut body = vec![0; n];
        reader.read_exact(&mut body)?;
        body
    } else {
        let mut body = Vec::new();
        reader.read_to_end(&mut body)?;
        body
    };
    let headers = head
        .iter()
        .skip(1)
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    Ok(Answer {
        status,
        headers,
        body,
    })
}

fn read_chunked(reader: &mut impl BufRead) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        reader.read_line(&mut size)?;
        let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or(""), 16)
            .map_err(|_| std::io::Error::other("bad chunk size"))?;
        if size == 0 {
            // Trailers, if any, up to the empty line.
            read_head(reader)?;
            return Ok(body);
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..])?;
        let mut end = [0; 2];
        reader.read_exact(&mut end)?;
    }
}

/// DynamoDB's JSON error answer.
fn error_answer(status: &str, error_type: &str, message: &str) -> Answer {
    let body = serde_json::json!({
        "__type": format!("com.amazonaws.dynamodb.v20120810#{error_type}"),
        "message": message,
    });
    Answer {
        status: status.to_owned(),
        headers: vec![(
            "Content-Type".to_owned(),
            "application/x-amz-json-1.0".to_owned(),
        )],
        body: body.to_string().into_bytes(),
    }
}

/// Writes an answer on the kept-alive client connection: HTTP/1.1 framed by Content-Length,
/// whatever framing the server used.
fn write_answer(client: &mut TcpStream, answer: &Answer) -> std::io::Result<()> {
    let mut out = format!("HTTP/1.1 {}\r\n", answer.status).into_bytes();
    for (name, value) in &answer.headers {
        if [
            "connection",
            "keep-alive",
            "content-length",
            "transfer-encoding",
        ]
        .iter()
        .any(|skip| name.eq_ignore_ascii_case(skip))
        {
            continue;
        }
        out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", answer.body.len()).as_bytes());
    out.extend_from_slice(&answer.body);
    client.write_all(&out)?;
    client.flush()
}
