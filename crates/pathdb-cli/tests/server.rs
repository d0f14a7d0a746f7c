//! `pathdb serve` as a process: kill -9 under write load and SIGTERM with requests in flight
//! lose no acknowledged write, and the item commands print the same through `--server` as on
//! a local file.

use crate::{ok, pathdb};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A running `pathdb serve` on a loopback port of its choosing.
pub(crate) struct Server {
    child: Child,
    pub(crate) addr: SocketAddr,
    stderr: PathBuf,
    _stdout: BufReader<ChildStdout>,
}

impl Server {
    /// Starts the server on `db` and waits for its "listening on" line.
    pub(crate) fn start(db: &Path) -> Server {
        Server::start_with(db, &[])
    }

    /// [`Server::start`] with more `serve` arguments.
    pub(crate) fn start_with(db: &Path, extra: &[&str]) -> Server {
        static STARTED: AtomicUsize = AtomicUsize::new(0);
        let n = STARTED.fetch_add(1, Ordering::SeqCst);
        let stderr = db.with_extension(format!("{n}.log"));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&stderr)
            .expect("log file");
        let mut child = Command::new(env!("CARGO_BIN_EXE_pathdb"))
            .args([
                "--db",
                db.to_str().expect("utf-8"),
                "serve",
                "--addr",
                "127.0.0.1:0",
            ])
            .args(extra)
            .env_remove("PATHDB_TOKENS")
            // An archive in moto's S3 needs some credentials (any).
            .env("AWS_ACCESS_KEY_ID", "pathdb-test")
            .env("AWS_SECRET_ACCESS_KEY", "pathdb-test")
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("pathdb serve starts");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("read stdout");
        let Some(addr) = line.trim().strip_prefix("listening on http://") else {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "no 'listening on' line ({line:?}); stderr:\n{}",
                std::fs::read_to_string(&stderr).unwrap_or_default()
            );
        };
        Server {
            addr: addr.parse().expect("socket address"),
            child,
            stderr,
            _stdout: stdout,
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// SIGKILL, and reap the process.
    pub(crate) fn kill_9(mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reaped");
    }

    /// SIGTERM, then waits (bounded) for the exit code.
    fn terminate(mut self) -> Option<i32> {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -TERM failed");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status.code();
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the server did not stop within 60 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// One HTTP/1.1 request on its own connection, never retried: `Ok((status, body))` only when a
/// complete response arrived.
pub(crate) fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: &str,
) -> std::io::Result<(u16, String)> {
    http_with(addr, method, path, &[], body)
}

/// [`http`] with more header lines (`("Schema-Version", "user=1")`).
pub(crate) fn http_with(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    let extra: String = headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes())?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let text = String::from_utf8_lossy(&response);
    let incomplete =
        || std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "incomplete response");
    let (head, body) = text.split_once("\r\n\r\n").ok_or_else(incomplete)?;
    let status: u16 = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(incomplete)?;
    let length = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().to_owned())
        })
        .and_then(|v| v.parse::<usize>().ok());
    if length.is_some_and(|n| n != body.len()) {
        return Err(incomplete());
    }
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    if chunked {
        return dechunk(body).map(|b| (status, b)).ok_or_else(incomplete);
    }
    Ok((status, body.to_owned()))
}

/// The payload of a chunked body, if it is complete.
fn dechunk(mut body: &str) -> Option<String> {
    let mut out = String::new();
    loop {
        let (size, rest) = body.split_once("\r\n")?;
        let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
        if size == 0 {
            return Some(out);
        }
        out.push_str(rest.get(..size)?);
        body = rest.get(size..)?.strip_prefix("\r\n")?;
    }
}

/// A write the server acknowledged with a 2xx: the item it said it stored.
#[derive(Clone, Debug)]
struct Ack {
    path: String,
    version: u64,
    value: Value,
}

/// Every item on the server: path → (version, value), via GET /v1/export.
fn items(addr: SocketAddr) -> HashMap<String, (u64, Value)> {
    let (status, body) = http(addr, "GET", "/v1/export", "").expect("export");
    assert_eq!(status, 200, "{body}");
    body.lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("export line"))
        // Current items only: not revisions, tombstones or the export's last line.
        .filter(|r| r.get("value").is_some() && r.get("revision").is_none())
        .map(|r| {
            let path = r["path"].as_str().expect("path").to_owned();
            (
                path,
                (r["version"].as_u64().expect("version"), r["value"].clone()),
            )
        })
        .collect()
}

/// Each acknowledged write is there: unique paths at their version, and each writer's counter
/// at its last acknowledged version or the one write after it that may have committed
/// without an answer.
fn verify(addr: SocketAddr, unique: &[Ack], counters: &HashMap<String, Ack>) {
    let stored = items(addr);
    for ack in unique {
        let (version, value) = stored
            .get(&ack.path)
            .unwrap_or_else(|| panic!("acknowledged write lost: {ack:?}"));
        assert_eq!((*version, value), (ack.version, &ack.value), "{}", ack.path);
    }
    for ack in counters.values() {
        let (version, value) = stored
            .get(&ack.path)
            .unwrap_or_else(|| panic!("acknowledged counter lost: {ack:?}"));
        assert!(
            *version == ack.version && *value == ack.value || *version == ack.version + 1,
            "{}: stored version {version} {value}, acknowledged {ack:?}",
            ack.path
        );
    }
}

/// Writers that run until their server stops answering: each writes new items and bumps its
/// counter, recording every acknowledged write. Returns once `stop_after` writes were
/// acknowledged (plus whatever was in flight) and `stop` has taken the server away.
fn write_until_stopped(
    addr: SocketAddr,
    round: usize,
    stop_after: usize,
    stop: impl FnOnce(),
    unique: &mut Vec<Ack>,
    counters: &mut HashMap<String, Ack>,
) {
    const WRITERS: usize = 4;
    let acked = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let results = Mutex::new(Vec::new());
    let next_seq = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for writer in 0..WRITERS {
            let (acked, failed, results, next_seq) = (&acked, &failed, &results, &next_seq);
            s.spawn(move || {
                let mut mine = Vec::new();
                // Bounded: the server stops after `stop_after` acknowledgements.
                for n in 0..100_000 {
                    let (path, body) = if n % 2 == 0 {
                        (format!("/r-{round}/w-{writer}/n-{n}"), json!({"n": n}))
                    } else {
                        let seq = next_seq.fetch_add(1, Ordering::SeqCst);
                        (format!("/counter-{writer}"), json!({"seq": seq}))
                    };
                    match http(addr, "PUT", &format!("/v1/items{path}"), &body.to_string()) {
                        Ok((200 | 201, reply)) => {
                            let item: Value = serde_json::from_str(&reply).expect("item");
                            assert_eq!(item["value"], body);
                            mine.push(Ack {
                                path,
                                version: item["version"].as_u64().expect("version"),
                                value: body,
                            });
                            acked.fetch_add(1, Ordering::SeqCst);
                        }
                        Ok((status, reply)) => panic!("PUT {path}: {status} {reply}"),
                        // The server is gone: this write may or may not have committed.
                        Err(_) => break,
                    }
                    if failed.load(Ordering::SeqCst) {
                        break;
                    }
                }
                results.lock().expect("results").push(mine);
            });
        }
        let deadline = Instant::now() + Duration::from_secs(120);
        while acked.load(Ordering::SeqCst) < stop_after {
            if Instant::now() > deadline {
                failed.store(true, Ordering::SeqCst);
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        stop();
    });
    assert!(
        !failed.load(Ordering::SeqCst),
        "only {} writes acknowledged in 120 s",
        acked.load(Ordering::SeqCst)
    );
    for ack in results.into_inner().expect("results").into_iter().flatten() {
        if ack.path.starts_with("/counter-") {
            let newer = counters
                .get(&ack.path)
                .is_none_or(|a| a.version < ack.version);
            if newer {
                counters.insert(ack.path.clone(), ack);
            }
        } else {
            unique.push(ack);
        }
    }
}

#[test]
fn kill_9_under_write_load_loses_no_acknowledged_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("crash.pathdb");
    let mut unique = Vec::new();
    let mut counters = HashMap::new();
    for (round, stop_after) in [25, 120, 60].into_iter().enumerate() {
        let server = Server::start(&db);
        verify(server.addr, &unique, &counters);
        let addr = server.addr;
        let before = unique.len();
        write_until_stopped(
            addr,
            round,
            stop_after,
            || server.kill_9(),
            &mut unique,
            &mut counters,
        );
        assert!(unique.len() > before, "round {round} acknowledged nothing");
    }
    let server = Server::start(&db);
    verify(server.addr, &unique, &counters);
    assert!(unique.len() >= 80, "{} writes checked", unique.len());
}

#[test]
fn sigterm_finishes_in_flight_writes_and_exits_0() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("term.pathdb");
    let mut unique = Vec::new();
    let mut counters = HashMap::new();
    for round in 0..2 {
        let server = Server::start(&db);
        verify(server.addr, &unique, &counters);
        let addr = server.addr;
        let stderr = server.stderr.clone();
        let code = Mutex::new(None);
        let terminate = || *code.lock().expect("code") = Some(server.terminate());
        write_until_stopped(addr, round, 40, terminate, &mut unique, &mut counters);
        assert_eq!(
            code.into_inner().expect("code"),
            Some(Some(0)),
            "exit code after SIGTERM"
        );
        let log = std::fs::read_to_string(&stderr).unwrap_or_default();
        assert!(
            log.contains("shut down: in-flight requests finished"),
            "the log says the shutdown was graceful:\n{log}"
        );
    }
    let server = Server::start(&db);
    verify(server.addr, &unique, &counters);
}

/// Sets the timestamps of JSON lines to 0 and masks RFC 3339 times in tables: the two runs
/// happen at different times.
pub(crate) fn normalize(output: &str) -> String {
    output
        .lines()
        .map(|line| match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(mut o)) => {
                for key in ["created_at", "modified_at", "deleted_at"] {
                    if o.contains_key(key) {
                        o.insert(key.to_owned(), json!(0));
                    }
                }
                if o.get("expires_at").is_some_and(Value::is_i64) {
                    o.insert("expires_at".to_owned(), json!(1));
                }
                // Tokens are sealed with each database's own key.
                if o.get("next_page_token").is_some_and(Value::is_string) {
                    o.insert("next_page_token".to_owned(), json!("<token>"));
                }
                Value::Object(o).to_string()
            }
            _ => match line.strip_prefix("next page: --page-token ") {
                Some(_) => "next page: --page-token <token>".to_owned(),
                None => mask_times(line),
            },
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `2026-11-21T23:05:01.123456Z` → `<time>` padded to the same width.
fn mask_times(line: &str) -> String {
    let bytes = line.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < bytes.len() {
        let candidate = &bytes[i..(i + 27).min(bytes.len())];
        let is_time = candidate.len() == 27
            && candidate.iter().enumerate().all(|(k, &b)| match k {
                4 | 7 => b == b'-',
                10 => b == b'T',
                13 | 16 => b == b':',
                19 => b == b'.',
                26 => b == b'Z',
                _ => b.is_ascii_digit(),
            });
        if is_time {
            out.push_str(&format!("{:<27}", "<time>"));
            i += 27;
        } else {
            let c = line[i..].chars().next().expect("char");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

#[test]
fn item_commands_print_the_same_through_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let local = dir.path().join("local.pathdb");
    let server = Server::start(&dir.path().join("served.pathdb"));
    let url = server.url();
    let local_args = ["--db", local.to_str().expect("utf-8")];
    let remote_args = ["--server", url.as_str()];

    // Writes once (their output compared as JSON lines), then reads in both output modes.
    let writes: &[&[&str]] = &[
        &["put", "/u-1/p-1", r#"{"n": 1, "f": 2.50}"#, "--history"],
        &[
            "put",
            "/u-1/p-1",
            r#"{"n": 2}"#,
            "--history",
            "--if-version",
            "1",
        ],
        &["put", "/u-1/p-2", r#""x""#, "--must-not-exist"],
        &["put", "/u-1/p-3", "3"],
        &["put", "/u-1/p-10", "[1, 2]"],
        &["put", "/u-1/folder-1/file-1", "1"],
        &["put", "/u-1/p-1/c-1", "null"],
        &["put", "/u-10/p-1", "true"],
        // A whole group moved: `ls /` lists `/u-11`, never `/u-10` (only its tombstone is left).
        &["mv", "/u-10", "/u-11"],
        &["put", "/file-a%/b", r#""slash in an id""#],
        &["put", "/user-café/doc-a b", "1"],
        &["put", "/s-1/t-1", "1", "--ttl", "3600"],
        &["rm", "/u-1/p-3", "--if-version", "1"],
        &["put", "/u-1/q", r#"{"generated": 1}"#, "--id", "sequence"],
        &["put", "/u-1/q-", r#"{"generated": 2}"#, "--id", "sequence"],
        &["cp", "/u-1/p-1", "/u-1/folder-2"],
        &["mv", "/u-1/folder-2", "/u-1/folder-3"],
        &["rm", "-r", "/u-1/folder-1"],
        &[
            "put",
            "/u-1/doc-1",
            r#"{"title": "a", "tags": ["x"], "draft": true}"#,
        ],
        &[
            "patch",
            "/u-1/doc-1",
            r#"{"title": "b", "draft": null}"#,
            "--history",
        ],
        &[
            "patch",
            "/u-1/doc-1",
            "--json-patch",
            r#"[{"op": "test", "path": "/title", "value": "b"}, {"op": "add", "path": "/tags/-", "value": "y"}]"#,
            "--if-version",
            "2",
        ],
        &["patch", "/u-1/doc-2", r#"{"new": true}"#, "--create"],
        &["incr", "/u-1/counter-1", "/views"],
        &["incr", "/u-1/counter-1", "/views", "41"],
        &["incr", "/u-1/counter-1", "/stats/likes", "-2"],
    ];
    let reads: &[&[&str]] = &[
        &["get", "/u-1/p-1"],
        &["get", "/u-1/p-1", "--version", "1"],
        &["get", "/file-a%/b"],
        &["get", "/user-café/doc-a b"],
        &["get", "/s-1/t-1"],
        &["ls", "/u-1"],
        &["ls", "/u-1/p-1"],
        &["ls", "/u-1", "--children", "--reverse"],
        &["ls", "/u-1", "--children"],
        &["ls", "/u-1", "--limit", "2"],
        &[
            "ls",
            "/u-1",
            "--gt",
            "/u-1/p-1",
            "--lte",
            "/u-1/p-10",
            "--reverse",
        ],
        &["history", "/u-1/p-1"],
        &["ls", "/"],
        &["ls", "/", "--limit", "2"],
        &["ls", "/", "--limit", "2", "--all"],
        &["export"],
    ];
    let runs = writes
        .iter()
        .map(|c| (*c, true))
        .chain(reads.iter().flat_map(|c| [(*c, true), (*c, false)]));
    for (command, json) in runs {
        let mut local_cmd: Vec<&str> = local_args.to_vec();
        let mut remote_cmd: Vec<&str> = remote_args.to_vec();
        if json {
            local_cmd.push("--json");
            remote_cmd.push("--json");
        }
        local_cmd.extend_from_slice(command);
        remote_cmd.extend_from_slice(command);
        let (local_out, remote_out) = (ok(&local_cmd), ok(&remote_cmd));
        assert!(!local_out.is_empty(), "{command:?}");
        assert_eq!(
            normalize(&remote_out),
            normalize(&local_out),
            "pathdb {command:?} (json: {json})"
        );
    }
    for args in [&local_args[..], &remote_args[..]] {
        let groups = ok(&[args, &["--json", "ls", "/"]].concat());
        assert!(groups.contains(r#"{"group":"/u-11"}"#), "{groups}");
        assert!(
            !groups.contains(r#"{"group":"/u-10"}"#),
            "a group moved away: {groups}"
        );
    }
    // The subtree commands' failures have the same exit status both ways, and print the
    // count without --json.
    for args in [&local_args[..], &remote_args[..]] {
        crate::fails_with(1, &[args, &["rm", "-r", "/u-1/folder-1"]].concat());
        crate::fails_with(
            1,
            &[args, &["mv", "/u-1/folder-9", "/u-1/folder-8"]].concat(),
        );
        crate::fails_with(3, &[args, &["cp", "/u-1/p-2", "/u-1/folder-3"]].concat());
        crate::fails_with(2, &[args, &["mv", "/u-1/p-1", "/u-1/p-1/c-2"]].concat());
        assert_eq!(
            ok(&[args, &["cp", "/u-1/folder-3", "/u-1/folder-5"]].concat()),
            "copied 2 items from /u-1/folder-3 to /u-1/folder-5\n"
        );
        assert_eq!(
            ok(&[args, &["rm", "-r", "/u-1/folder-5"]].concat()),
            "deleted 2 items at and below /u-1/folder-5\n"
        );
    }
    // `ls /`: the groups in key order (integers numerically), one page at a time, the same
    // from the file and through the server.
    for args in [&local_args[..], &remote_args[..]] {
        assert_eq!(
            ok(&[args, &["ls", "/", "--all", "--limit", "1"]].concat()),
            "/file-a%/b\n/s-1\n/u-1\n/u-11\n/user-café\n"
        );
    }
    // `ls / --prefix`: the groups whose namespace starts with it, paged, both ways; a prefix
    // that is not the start of a namespace, or --prefix on a subtree, is a usage error.
    for args in [&local_args[..], &remote_args[..]] {
        assert_eq!(
            ok(&[args, &["ls", "/", "--prefix", "u", "--all", "--limit", "1"]].concat()),
            "/u-1\n/u-11\n/user-café\n"
        );
        assert_eq!(
            ok(&[args, &["ls", "/", "--prefix", "us"]].concat()),
            "/user-café\n"
        );
        assert_eq!(ok(&[args, &["ls", "/", "--prefix", "zz"]].concat()), "");
        let stderr = crate::fails(&[args, &["ls", "/", "--prefix", "u-1"]].concat());
        assert!(stderr.contains("namespace"), "{stderr}");
        let stderr = crate::fails(&[args, &["ls", "/u-1", "--prefix", "u"]].concat());
        assert!(stderr.contains("ls /"), "{stderr}");
    }
    // A page token continues the listing, through the server as locally; in both modes it is
    // the one line on stderr. Each database seals its own tokens, so each mode uses its own.
    let second_page = |args: &[&str]| {
        let page = pathdb(&[args, &["--json", "ls", "/u-1", "--limit", "2"]].concat());
        let stderr = String::from_utf8(page.stderr).expect("utf-8");
        let last: Value = serde_json::from_str(stderr.trim()).expect("one JSON line on stderr");
        let token = last["next_page_token"].as_str().expect("token line");
        let rest = [
            "--json",
            "ls",
            "/u-1",
            "--limit",
            "2",
            "--page-token",
            token,
        ];
        normalize(&ok(&[args, &rest].concat()))
    };
    assert_eq!(second_page(&remote_args[..]), second_page(&local_args[..]));
    // A token of one database is refused by the other.
    let page = pathdb(&[&remote_args[..], &["--json", "ls", "/u-1", "--limit", "2"]].concat());
    let stderr = String::from_utf8(page.stderr).expect("utf-8");
    let last: Value = serde_json::from_str(stderr.trim()).expect("one JSON line on stderr");
    let foreign = last["next_page_token"].as_str().expect("token line");
    let refused = pathdb(&[&local_args[..], &["ls", "/u-1", "--page-token", foreign]].concat());
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("invalid page token"));

    // Failures fail the same way: the same exit status, nothing on stdout, the same cause on
    // stderr.
    let failing: &[(&[&str], i32, &str)] = &[
        (&["get", "/u-1/p-3"], 1, "not found"),
        (&["get", "/u-1/p-1", "--version", "7"], 1, "no version 7"),
        (&["rm", "/u-1/p-3"], 1, "not found"),
        (
            &["put", "/u-1/p-1", "{}", "--must-not-exist"],
            3,
            "condition failed",
        ),
        (
            &["put", "/u-1/p-1", "{}", "--if-version", "9"],
            3,
            "condition failed",
        ),
        (
            &["rm", "/u-1/p-1", "--if-version", "9"],
            3,
            "condition failed",
        ),
        (&["ls", "/u-1", "--gt", "/u-2/x-1"], 2, "not in the group"),
        (&["ls", "/u-1", "--page-token", "garbage!"], 2, "page token"),
        (&["put", "/u-3", "{not json"], 2, "JSON"),
        (&["ls", "/u-1", "--limit", "0"], 2, "limit"),
        (&["patch", "/u-1/nothing-1", "{}"], 1, "not found"),
        (
            &["patch", "/u-1/doc-1", "{}", "--if-version", "1"],
            3,
            "condition failed",
        ),
        (
            &[
                "patch",
                "/u-1/doc-1",
                "--json-patch",
                r#"[{"op": "test", "path": "/title", "value": "zzz"}]"#,
            ],
            3,
            "did not match",
        ),
        (&["incr", "/u-1/doc-1", "/title"], 3, "not a number"),
        (
            &["patch", "/u-1/doc-1", "--json-patch", r#"[{"op": "jump"}]"#],
            2,
            "operation 0",
        ),
        (&["incr", "/u-1/doc-1", "views"], 2, "JSON Pointer"),
    ];
    for (command, code, cause) in failing {
        for args in [&local_args[..], &remote_args[..]] {
            let out = pathdb(&[args, command].concat());
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(*code),
                "{args:?} {command:?}: {stderr}"
            );
            assert!(out.stdout.is_empty(), "{args:?} {command:?}");
            assert!(
                stderr.to_lowercase().contains(&cause.to_lowercase()),
                "{args:?} {command:?}: {stderr}"
            );
        }
    }

    // Export from the server, import into a fresh file: the same records.
    let dump = ok(&[&remote_args[..], &["export"]].concat());
    let file = dir.path().join("dump.jsonl");
    std::fs::write(&file, &dump).expect("write dump");
    let copy = dir.path().join("copy.pathdb");
    ok(&[
        "--db",
        copy.to_str().expect("utf-8"),
        "import",
        file.to_str().expect("utf-8"),
    ]);
    assert_eq!(ok(&["--db", copy.to_str().expect("utf-8"), "export"]), dump);
    assert_eq!(
        normalize(&dump),
        normalize(&ok(&[&local_args[..], &["export"]].concat()))
    );
}

/// `--server HOST:PORT` (no scheme) reaches the server; the same listing pages the same way
/// through it; once it is gone, commands exit with status 4.
/// `watch` prints what a server commits while it runs, as JSON lines with a token from which
/// `--since` resumes; `put --id` creates with generated ids through the server.
#[test]
fn watch_prints_changes_as_they_commit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(&dir.path().join("watched.pathdb"));
    let url = server.url();
    let watcher = Command::new(env!("CARGO_BIN_EXE_pathdb"))
        .args([
            "--server", &url, "--json", "watch", "/feed-1", "--count", "3",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("watch starts");
    // The watcher takes its starting position when it starts; give it a moment.
    std::thread::sleep(Duration::from_millis(500));
    let created = ok(&[
        "--server",
        &url,
        "--json",
        "put",
        "/feed-1/post",
        "1",
        "--id",
        "sequence",
    ]);
    let created: Value = serde_json::from_str(created.trim()).expect("JSON");
    assert_eq!(created["path"], "/feed-1/post-1");
    ok(&["--server", &url, "put", "/feed-2/other-1", "0"]);
    ok(&["--server", &url, "rm", "/feed-1/post-1"]);
    ok(&["--server", &url, "put", "/feed-1/post-1/c-1", r#""again""#]);
    let out = watcher
        .wait_with_output()
        .expect("watch ends after --count");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(lines[0]["op"], "put");
    assert_eq!(lines[0]["item"]["path"], "/feed-1/post-1");
    assert_eq!(lines[0]["item"]["value"], 1);
    assert_eq!(lines[1]["op"], "delete");
    assert_eq!(lines[1]["path"], "/feed-1/post-1");
    assert_eq!(lines[1]["version"], 1);
    assert_eq!(lines[2]["item"]["path"], "/feed-1/post-1/c-1");
    // Resuming from the first line's token prints the rest.
    let token = lines[0]["token"].as_str().expect("a token");
    let rest = ok(&[
        "--server", &url, "watch", "/feed-1", "--since", token, "--count", "2",
    ]);
    assert_eq!(
        rest.lines().collect::<Vec<_>>(),
        [
            "delete /feed-1/post-1 v1",
            r#"put /feed-1/post-1/c-1 v1 "again""#
        ]
    );
    // A deleted sequence id is not issued again; a group gets a generated UUID.
    let next = ok(&[
        "--server",
        &url,
        "--json",
        "put",
        "/feed-1/post-",
        "2",
        "--id",
        "sequence",
    ]);
    assert!(next.contains(r#""path":"/feed-1/post-2""#), "{next}");
    let group = ok(&[
        "--server", &url, "--json", "put", "/feed", "{}", "--id", "uuid",
    ]);
    assert!(group.contains(r#""path":"/feed-"#), "{group}");
    server.kill_9();
}

#[test]
fn host_port_addresses_the_server_and_a_stopped_server_is_status_4() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(&dir.path().join("served.pathdb"));
    let host_port = server.addr.to_string();
    let localhost = format!("localhost:{}", server.addr.port());
    for id in 1..=3 {
        ok(&["--server", &host_port, "put", &format!("/u-1/p-{id}"), "1"]);
    }
    let all = ok(&[
        "--server", &localhost, "--json", "ls", "/u-1", "--all", "--limit", "1",
    ]);
    assert_eq!(all.lines().count(), 3, "{all}");
    let page = pathdb(&[
        "--server", &localhost, "--json", "ls", "/u-1", "--limit", "2",
    ]);
    assert_eq!(String::from_utf8_lossy(&page.stdout).lines().count(), 2);
    assert!(String::from_utf8_lossy(&page.stderr).starts_with(r#"{"next_page_token":"#));
    server.kill_9();
    let out = pathdb(&["--server", &host_port, "get", "/u-1/p-1"]);
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The killed server left the file needing crash recovery, which writes it: a read (which
    // never writes) says so, and after one read-write open reads work again.
    let db = dir.path().join("served.pathdb");
    let db_text = db.to_str().expect("utf-8");
    let before = std::fs::read(&db).expect("read");
    let out = pathdb(&["--db", db_text, "get", "/u-1/p-1"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("not closed cleanly") && stderr.contains("read-write"),
        "{stderr}"
    );
    assert!(
        std::fs::read(&db).expect("read") == before,
        "a read changed the file"
    );
    ok(&["--db", db_text, "put", "/u-1/p-4", "4"]);
    assert!(ok(&["--db", db_text, "get", "/u-1/p-1"]).contains("/u-1/p-1"));
}

/// `serve --read-only`: reads work, writes answer 403 `read_only` (exit status 5 in the CLI),
/// and the file is byte-for-byte what it was.
#[test]
fn serve_read_only_refuses_writes_and_leaves_the_file_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("ro.pathdb");
    let db_text = db.to_str().expect("utf-8");
    ok(&["--db", db_text, "put", "/u-1/p-1", r#"{"n": 1}"#]);
    let before = std::fs::read(&db).expect("read");
    let server = Server::start_with(&db, &["--read-only"]);
    let url = server.url();
    assert!(ok(&["--server", &url, "get", "/u-1/p-1"]).contains(r#"{"n":1}"#));
    let (status, body) = http(server.addr, "PUT", "/v1/items/u-1/p-2", "2").expect("answer");
    assert_eq!(status, 403, "{body}");
    assert!(body.contains(r#""code":"read_only""#), "{body}");
    for write in [&["put", "/u-1/p-2", "2"][..], &["rm", "/u-1/p-1"]] {
        let out = pathdb(&[&["--server", url.as_str()][..], write].concat());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(5), "{write:?}: {stderr}");
        assert!(stderr.contains("read-only"), "{stderr}");
    }
    // Other read-only handles may share the file with a read-only server.
    assert!(ok(&["--db", db_text, "get", "/u-1/p-1"]).contains(r#"{"n":1}"#));
    assert_eq!(server.terminate(), Some(0));
    assert!(
        std::fs::read(&db).expect("read") == before,
        "the file changed"
    );
}

/// A file held by `pathdb serve` is locked: the CLI says so and names the address the server
/// really listens on (here a port of its choosing, not the default 7070), which `serve` records
/// beside the file and removes at a clean exit.
#[test]
fn a_file_held_by_a_server_names_its_real_address() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("held.pathdb");
    let db_text = db.to_str().expect("utf-8");
    let server = Server::start(&db);
    let url = server.url();
    assert_ne!(server.addr.port(), 7070);
    for command in [&["get", "/u-1"][..], &["put", "/u-1", "1"], &["ls", "/u-1"]] {
        let out = pathdb(&[&["--db", db_text][..], command].concat());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{command:?}: {stderr}");
        assert!(
            stderr.contains("held.pathdb is in use by `pathdb serve`")
                && stderr.contains(&format!("--server {url} ")),
            "{command:?}: {stderr}"
        );
    }
    let recorded = dir.path().join("held.pathdb.server");
    assert!(recorded.exists(), "the address is recorded beside the file");
    assert_eq!(server.terminate(), Some(0));
    assert!(!recorded.exists(), "a clean exit removes the address");
}

/// A local `pathdb watch` also holds the file: the error then names no server, and a stale
/// address (a server killed with -9) is not believed either.
#[test]
fn a_file_held_by_a_watch_does_not_blame_a_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("watched.pathdb");
    let db_text = db.to_str().expect("utf-8");
    ok(&["--db", db_text, "put", "/u-1", "1"]);
    // A stale address, as a killed server leaves it.
    let server = Server::start(&db);
    let url = server.url();
    server.kill_9();
    assert!(dir.path().join("watched.pathdb.server").exists());
    // A read-write open recovers the killed server's file, which the watch reads read-only.
    ok(&["--db", db_text, "put", "/u-1", "2"]);
    let spawn_watch = || {
        Command::new(env!("CARGO_BIN_EXE_pathdb"))
            .args(["--db", db_text, "watch", "/u-1"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("pathdb watch starts")
    };
    // Nothing tells when the watch holds the file: give it time, and start again a watch that
    // lost the race to the put (both fail on a file held by the other).
    let mut watch = spawn_watch();
    let deadline = Instant::now() + Duration::from_secs(30);
    let stderr = loop {
        std::thread::sleep(Duration::from_millis(300));
        assert!(Instant::now() < deadline, "the watch never held the file");
        if watch.try_wait().expect("try_wait").is_some() {
            watch = spawn_watch();
            continue;
        }
        let out = pathdb(&["--db", db_text, "put", "/u-1", "2"]);
        if out.status.code() == Some(4) {
            break String::from_utf8_lossy(&out.stderr).into_owned();
        }
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let _ = watch.kill();
    let _ = watch.wait();
    assert!(
        stderr.contains("watched.pathdb is in use by another pathdb process")
            && stderr.contains("pathdb watch")
            && !stderr.contains(&url)
            && !stderr.contains("`pathdb serve`"),
        "{stderr}"
    );
}

/// Every item at or below `prefix`, path to value, read with `pathdb ls --all`.
fn subtree(args: &[&str], prefix: &str) -> HashMap<String, Value> {
    let out = ok(&[args, &["--json", "ls", prefix, "--all", "--limit", "1000"]].concat());
    crate::json_lines(&out)
        .into_iter()
        .map(|item| {
            (
                item["path"].as_str().expect("path").to_owned(),
                item["value"].clone(),
            )
        })
        .collect()
}

#[test]
fn kill_9_in_the_middle_of_a_large_move_loses_no_item() {
    const N: usize = 20_000;
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("move.pathdb");
    let db_args = ["--db", db.to_str().expect("utf-8")];
    // N items, loaded as an export's records (without its last line).
    let records: String = (0..N)
        .map(|i| {
            json!({"path": format!("/drive-a91/folder-big/file-{i}"), "version": 1,
                "created_at": 1, "modified_at": 1, "expires_at": null, "value": {"n": i}})
            .to_string()
                + "\n"
        })
        .collect();
    let input = dir.path().join("items.jsonl");
    std::fs::write(&input, records).expect("write records");
    ok(&[
        &db_args[..],
        &["import", "--partial", input.to_str().expect("utf-8")],
    ]
    .concat());

    let server = Server::start(&db);
    let addr = server.addr;
    let body = r#"{"from": "/drive-a91/folder-big", "to": "/drive-b22/folder-big"}"#;
    let mover = std::thread::spawn(move || http(addr, "POST", "/v1/move", body));
    // Killed as soon as the first batch has committed.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (status, listing) = http(addr, "GET", "/v1/list/drive-b22/folder-big?limit=1", "")
            .expect("list the destination");
        assert_eq!(status, 200, "{listing}");
        if listing.contains("file-") {
            break;
        }
        assert!(Instant::now() < deadline, "no batch committed within 120 s");
        std::thread::sleep(Duration::from_millis(2));
    }
    server.kill_9();
    let answer = mover.join().expect("the mover thread");
    assert!(
        !matches!(answer, Ok((200, _))),
        "the move finished before the kill: {answer:?}"
    );

    // Every item is in one place or the other, with its value; some are in each. (A write
    // first: after a crash, redb recovers the file on a read-write open only.)
    ok(&[&db_args[..], &["put", "/probe-1", "{}"]].concat());
    let source = subtree(&db_args, "/drive-a91/folder-big");
    let target = subtree(&db_args, "/drive-b22/folder-big");
    assert!(!source.is_empty() && !target.is_empty());
    for i in 0..N {
        let from = format!("/drive-a91/folder-big/file-{i}");
        let to = format!("/drive-b22/folder-big/file-{i}");
        let found = source.get(&from).or_else(|| target.get(&to));
        assert_eq!(found, Some(&json!({"n": i})), "file-{i}");
    }

    // Restarted, the server finishes the job by itself; the request sent again then has
    // nothing left to move.
    let server = Server::start(&db);
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (_, listing) = http(
            server.addr,
            "GET",
            "/v1/list/drive-a91/folder-big?limit=1",
            "",
        )
        .expect("list the source");
        if !listing.contains("file-") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the job did not finish within 120 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let url = server.url();
    let target = subtree(&["--server", url.as_str()], "/drive-b22/folder-big");
    assert_eq!(target.len(), N);
    for i in 0..N {
        let to = format!("/drive-b22/folder-big/file-{i}");
        assert_eq!(target.get(&to), Some(&json!({"n": i})), "file-{i}");
    }
    let (status, _) = http(server.addr, "POST", "/v1/move", body).expect("move again");
    assert_eq!(status, 404);
}
