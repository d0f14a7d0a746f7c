//! `pathdb serve`'s connection limits (issue 22): idle sockets beyond the open-file limit,
//! the connection cap, the header and idle timeouts, and the cap on change streams. The
//! timeouts are set to a second here so that each test takes a few.

use crate::Served;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// A file for `--db` in a new temporary directory (kept alive by the returned guard).
fn db() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.pathdb");
    (dir, path.to_str().expect("utf-8 temp path").to_owned())
}

/// `pathdb serve` on a new database with `extra` arguments.
fn serve(db: &str, extra: &[&str]) -> Served {
    Served::start(&[&["serve", "--addr", "127.0.0.1:0", "--db", db], extra].concat())
}

/// Sends a GET of `path` with `headers` (lines without their CRLF) on `stream`.
fn send_get(stream: &mut TcpStream, path: &str, headers: &[&str]) {
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    for h in headers {
        request.push_str(h);
        request.push_str("\r\n");
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).expect("send");
}

/// A response's status line and headers (names in lower case), read up to the blank line.
struct Head {
    status: u16,
    headers: Vec<(String, String)>,
}

impl Head {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Reads a response head from `stream` (one byte at a time: nothing after it is consumed).
fn read_head(stream: &mut TcpStream) -> std::io::Result<Head> {
    let mut raw = Vec::new();
    let mut byte = [0u8];
    while !raw.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte)? == 0 {
            return Err(std::io::Error::new(
                ErrorKind::UnexpectedEof,
                format!("closed after {:?}", String::from_utf8_lossy(&raw)),
            ));
        }
        raw.push(byte[0]);
    }
    let text = String::from_utf8(raw).expect("an ASCII head");
    let mut lines = text.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("a status line in {text:?}"));
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Ok(Head { status, headers })
}

/// Reads a response with a `Content-Length` body: its status and body.
fn read_response(stream: &mut TcpStream) -> (Head, String) {
    let head = read_head(stream).expect("a response");
    let length: usize = head
        .header("content-length")
        .and_then(|v| v.parse().ok())
        .expect("a Content-Length");
    let mut body = vec![0; length];
    stream.read_exact(&mut body).expect("the body");
    (head, String::from_utf8(body).expect("a UTF-8 body"))
}

/// `GET /healthz` on a new connection, waiting at most `limit` for the answer.
fn healthz(addr: SocketAddr, limit: Duration) -> std::io::Result<u16> {
    let mut stream = TcpStream::connect_timeout(&addr, limit)?;
    stream.set_read_timeout(Some(limit))?;
    send_get(&mut stream, "/healthz", &["Connection: close"]);
    Ok(read_head(&mut stream)?.status)
}

/// How long after `since` the server closed `stream` (reading and dropping whatever it sent),
/// or `None` if it was still open at `since + limit`.
fn closed_after(stream: &mut TcpStream, since: Instant, limit: Duration) -> Option<Duration> {
    let mut buffer = [0u8; 1024];
    loop {
        let left = (since + limit).checked_duration_since(Instant::now())?;
        stream
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .expect("set a read timeout");
        match stream.read(&mut buffer) {
            Ok(0) => return Some(since.elapsed()),
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return None;
            }
            // A reset is a close too.
            Err(_) => return Some(since.elapsed()),
        }
    }
}

/// A client in the middle of an upload: the headers of a PUT of `{"n":1234567}` at `path` and
/// the first half of its body, sent; [`finish_upload`] sends the rest.
fn start_upload(addr: SocketAddr, path: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr).expect("connect");
    let head = format!(
        "PUT /v1/items{path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: 13\r\nConnection: close\r\n\r\n{{\"n\":"
    );
    stream.write_all(head.as_bytes()).expect("send the head");
    stream
}

/// Sends the rest of [`start_upload`]'s body and answers the status of the response.
fn finish_upload(mut stream: TcpStream) -> u16 {
    stream
        .write_all(b"1234567}")
        .expect("send the rest of the body");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("set a read timeout");
    read_head(&mut stream)
        .expect("the upload is answered")
        .status
}

/// The file descriptors `pid` has open (Linux's /proc).
fn open_files(pid: u32) -> Option<usize> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count())
}

/// The acceptance tests of issues 22 and 37: under `ulimit -n 1024` (soft and hard, so the
/// server cannot raise it) and the default timeouts, 1,100 sockets that send nothing do not stop
/// the server: it keeps its open files under the limit (the cap, 768, leaves room), a new client
/// closes the socket idle longest to make room (eviction.rs), so `/healthz` answers within a
/// second, a client in the middle of an upload is not cut off, and the header timeout closes
/// the rest.
#[test]
fn idle_sockets_beyond_the_file_limit_leave_healthz_answering() {
    const SOCKETS: usize = 1100;
    // This process holds the sockets: it needs more files than the usual soft limit of 1,024.
    let own_limit = pathdb_server::raise_open_file_limit().expect("raise the open-file limit");
    if own_limit < SOCKETS as u64 + 100 {
        eprintln!(
            "skipped: the hard open-file limit, {own_limit}, is too low for {SOCKETS} sockets"
        );
        return;
    }
    let (_dir, db) = db();
    let served =
        Served::start_with_file_limit(1024, &["serve", "--addr", "127.0.0.1:0", "--db", &db]);
    let addr = served.addr();
    let upload = start_upload(addr, "/up-1/file-1");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    // Connected at once, as fast as the kernel lets them (those beyond the backlog retry their
    // handshake), and kept open without a byte sent.
    let sockets = runtime.block_on(async {
        let mut connecting = tokio::task::JoinSet::new();
        for _ in 0..SOCKETS {
            connecting.spawn(tokio::net::TcpStream::connect(addr));
        }
        let mut sockets = Vec::new();
        while let Some(connected) = connecting.join_next().await {
            sockets.push(connected.expect("a connect task").expect("connects"));
        }
        sockets
    });
    assert_eq!(sockets.len(), SOCKETS);
    let most_files = open_files(served.pid());
    let started = Instant::now();
    let status = healthz(addr, Duration::from_secs(10)).expect("/healthz answers");
    assert_eq!(status, 200);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "/healthz took {:?}",
        started.elapsed()
    );
    if let Some(files) = most_files {
        assert!(files < 1024, "the server had {files} files open");
    }
    assert_eq!(finish_upload(upload), 201, "the upload was not cut off");
    // The idle sockets are all closed by the server: the oldest to make room, the rest a
    // header timeout (10 s) after they were accepted.
    let since = Instant::now();
    for socket in sockets {
        let mut socket = socket.into_std().expect("a std socket");
        socket.set_nonblocking(false).expect("blocking");
        assert!(
            closed_after(&mut socket, since, Duration::from_secs(20)).is_some(),
            "an idle socket still open 20 s later"
        );
    }
    assert_eq!(
        healthz(addr, Duration::from_secs(5)).expect("/healthz"),
        200
    );
}

/// At the cap, a new connection closes the connection that has waited longest for a request
/// without sending a byte of it, and is served at once; connections in the middle of a request
/// are never closed for it. When every open connection is inside a request, a new one waits
/// (in the listen backlog) until one ends, and is then served.
#[test]
fn at_the_connection_cap_a_new_connection_closes_the_longest_idle_one() {
    let (_dir, db) = db();
    let served = serve(&db, &["--max-connections", "3", "--header-timeout", "60"]);
    let addr = served.addr();
    let mut oldest = TcpStream::connect(addr).expect("connect");
    std::thread::sleep(Duration::from_millis(200));
    let upload = start_upload(addr, "/up-1/file-1");
    std::thread::sleep(Duration::from_millis(200));
    let mut newer = TcpStream::connect(addr).expect("connect");
    // Let the server accept them: the cap is full.
    std::thread::sleep(Duration::from_millis(300));

    let started = Instant::now();
    assert_eq!(
        healthz(addr, Duration::from_secs(5)).expect("/healthz"),
        200
    );
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "/healthz took {:?}",
        started.elapsed()
    );
    assert!(
        closed_after(&mut oldest, Instant::now(), Duration::from_secs(2)).is_some(),
        "the connection idle longest was not closed"
    );
    assert!(
        closed_after(&mut newer, Instant::now(), Duration::from_millis(300)).is_none(),
        "a newer idle connection was closed too"
    );
    // The cap full again, with a third idle connection: the next new one takes the slot of the
    // idle one that is now the oldest; the upload is never chosen.
    let third = TcpStream::connect(addr).expect("connect");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        healthz(addr, Duration::from_secs(5)).expect("/healthz"),
        200
    );
    assert!(closed_after(&mut newer, Instant::now(), Duration::from_secs(2)).is_some());
    drop(third);

    // Every slot inside a request: a new connection waits until one ends.
    let uploads = [
        start_upload(addr, "/up-1/file-2"),
        start_upload(addr, "/up-1/file-3"),
    ];
    std::thread::sleep(Duration::from_millis(300));
    let (answered, answer) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = answered.send(healthz(addr, Duration::from_secs(20)).map_err(|e| e.to_string()));
    });
    assert!(
        answer.recv_timeout(Duration::from_millis(700)).is_err(),
        "a connection inside a request was closed to make room"
    );
    assert_eq!(
        finish_upload(upload),
        201,
        "the first upload was not cut off"
    );
    let status = answer
        .recv_timeout(Duration::from_secs(5))
        .expect("served once a connection closed");
    assert_eq!(status, Ok(200));
    for upload in uploads {
        assert_eq!(finish_upload(upload), 201);
    }
}

/// A connection that sends its headers a byte a second (slowloris) is closed by the header
/// timeout, on its first request and on a later one of a kept-alive connection (the idle
/// timeout, 30 s here, does not apply once the request's first byte came); and so is one that
/// sends nothing.
#[test]
fn slowloris_connections_are_closed_by_the_header_timeout() {
    let (_dir, db) = db();
    let served = serve(&db, &["--header-timeout", "1", "--idle-timeout", "30"]);
    let addr = served.addr();
    let drip = |stream: &TcpStream| {
        let mut writer = stream.try_clone().expect("clone the socket");
        std::thread::spawn(move || {
            for byte in b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" {
                if writer.write_all(&[*byte]).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_secs(1));
            }
        });
    };
    let window = Duration::from_millis(900)..Duration::from_secs(4);

    let mut slow = TcpStream::connect(addr).expect("connect");
    let started = Instant::now();
    drip(&slow);
    let closed = closed_after(&mut slow, started, Duration::from_secs(10));
    assert!(
        closed.is_some_and(|t| window.contains(&t)),
        "a first request dripping: closed after {closed:?}"
    );

    let mut kept = TcpStream::connect(addr).expect("connect");
    send_get(&mut kept, "/healthz", &[]);
    let (head, _) = read_response(&mut kept);
    assert_eq!(head.status, 200);
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    drip(&kept);
    let closed = closed_after(&mut kept, started, Duration::from_secs(10));
    assert!(
        closed.is_some_and(|t| window.contains(&t)),
        "a later request dripping: closed after {closed:?}"
    );

    let mut silent = TcpStream::connect(addr).expect("connect");
    let closed = closed_after(&mut silent, Instant::now(), Duration::from_secs(10));
    assert!(
        closed.is_some_and(|t| window.contains(&t)),
        "a silent connection: closed after {closed:?}"
    );
}

/// A kept-alive connection idle for the idle timeout after an answer is closed; one that sends
/// its next request in time is served.
#[test]
fn idle_keep_alive_connections_are_closed() {
    let (_dir, db) = db();
    let served = serve(&db, &["--header-timeout", "10", "--idle-timeout", "1"]);
    let addr = served.addr();
    let mut stream = TcpStream::connect(addr).expect("connect");
    for _ in 0..3 {
        send_get(&mut stream, "/healthz", &[]);
        let (head, body) = read_response(&mut stream);
        assert_eq!(head.status, 200, "{body}");
        std::thread::sleep(Duration::from_millis(300));
    }
    let started = Instant::now();
    let closed = closed_after(&mut stream, started, Duration::from_secs(10));
    assert!(
        closed.is_some_and(|t| t >= Duration::from_millis(500) && t < Duration::from_secs(4)),
        "closed {closed:?} after the last answer (idle timeout 1 s)"
    );
}

/// Opens an event stream of `/v1/changes/{group}` and reads its head.
fn event_stream(addr: SocketAddr, group: &str) -> (TcpStream, Head) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("set a read timeout");
    send_get(
        &mut stream,
        &format!("/v1/changes/{group}"),
        &["Accept: text/event-stream"],
    );
    let head = read_head(&mut stream).expect("a response head");
    (stream, head)
}

/// Beyond `--max-streams`, an event stream or a long poll answers 503 `unavailable` with
/// `Retry-After`; a page read without `wait` is not a stream; when a stream closes, a new one
/// is admitted. (A small `--cache-size` on the side: the server opens its file with it.)
#[test]
fn change_streams_beyond_the_cap_get_503_with_retry_after() {
    let (_dir, db) = db();
    let served = serve(&db, &["--max-streams", "2", "--cache-size", "8"]);
    let addr = served.addr();
    let (first, head) = event_stream(addr, "g-1");
    assert_eq!(head.status, 200);
    let (_second, head) = event_stream(addr, "g-2");
    assert_eq!(head.status, 200);

    let (mut third, head) = event_stream(addr, "g-3");
    assert_eq!(head.status, 503);
    assert_eq!(head.header("retry-after"), Some("5"));
    let length: usize = head
        .header("content-length")
        .and_then(|v| v.parse().ok())
        .expect("Content-Length");
    let mut body = vec![0; length];
    third.read_exact(&mut body).expect("the error body");
    let error: serde_json::Value = serde_json::from_slice(&body).expect("a JSON error");
    assert_eq!(error["error"]["code"], "unavailable", "{error}");

    let mut poll = TcpStream::connect(addr).expect("connect");
    send_get(&mut poll, "/v1/changes/g-1", &[]);
    let (head, body) = read_response(&mut poll);
    assert_eq!(head.status, 200, "a page read is not a stream: {body}");
    let page: serde_json::Value = serde_json::from_str(&body).expect("a page");
    let token = page["next_token"].as_str().expect("a token");
    send_get(
        &mut poll,
        &format!("/v1/changes/g-1?since={token}&wait=30"),
        &[],
    );
    let (head, body) = read_response(&mut poll);
    assert_eq!(head.status, 503, "a long poll beyond the cap: {body}");
    assert_eq!(head.header("retry-after"), Some("5"));

    drop(first);
    // The server frees the slot when it sees the client gone.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_stream, head) = event_stream(addr, "g-4");
        if head.status == 200 {
            break;
        }
        assert_eq!(head.status, 503);
        assert!(
            Instant::now() < deadline,
            "no stream admitted after one closed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The worker threads of the process `pid` (tokio names them `tokio-rt-worker`).
#[cfg(target_os = "linux")]
fn http_threads_of(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("the server's threads")
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim() == "tokio-rt-worker")
        .count()
}

/// `--http-threads N` runs the server's requests on N threads, and a put and get load on one
/// thread is answered without errors; 0 is refused before anything starts.
#[cfg(target_os = "linux")]
#[test]
fn http_threads_sets_the_request_threads() {
    let (_dir, db) = db();
    for threads in [1, 3] {
        let served = serve(&db, &["--http-threads", &threads.to_string()]);
        let report = crate::ok(&[
            "bench",
            "http",
            "--url",
            &served.url,
            "--duration",
            "0.5",
            "--concurrency",
            "4",
            "--keys",
            "50",
            "--groups",
            "2",
            "--mix",
            "put=50,get=50",
        ]);
        let errors = report
            .lines()
            .find_map(|l| l.strip_prefix("errors:"))
            .map(str::trim);
        assert_eq!(errors, Some("0"), "{report}");
        // A thread takes its name once it runs, which on a busy machine may come after the
        // server's first answers.
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut seen = http_threads_of(served.pid());
        while seen != threads && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            seen = http_threads_of(served.pid());
        }
        assert_eq!(seen, threads);
    }
    let refused = crate::fails(&["serve", "--db", &db, "--http-threads", "0"]);
    assert!(refused.contains("--http-threads"), "{refused}");
}
