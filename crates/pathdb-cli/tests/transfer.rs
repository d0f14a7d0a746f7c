//! Export and import at scale: 100,000 records round-trip through files byte for byte, an
//! import killed with SIGKILL half-way converges when re-run, and a truncated export is refused.

use super::{fails, ok, pathdb};
use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Records in the large round trip.
const RECORDS: usize = 101_000;

/// An export of 100 groups, in the order export writes it: per group 990 items and tombstones
/// in key order, then the revisions of every 99th item, newest first; then the last line.
fn large_export() -> String {
    let mut out = String::new();
    let t = 1_700_000_000_000_000_i64;
    for g in 0..100 {
        let mut revised = Vec::new();
        for i in 0..990 {
            let path = format!("/bulk-{g}/item-{i}");
            if i % 97 == 5 {
                let _ = writeln!(
                    out,
                    r#"{{"path":"{path}","version":3,"deleted_at":{},"deleted":true}}"#,
                    t + i
                );
                continue;
            }
            let version = if i % 99 == 0 { 2 } else { 1 };
            let _ = writeln!(
                out,
                r#"{{"path":"{path}","version":{version},"created_at":{t},"modified_at":{},"expires_at":null,"value":{{"n":{i},"text":"{}"}}}}"#,
                t + version,
                "x".repeat(40)
            );
            if version == 2 {
                revised.push((path, i));
            }
        }
        for (path, i) in revised {
            for version in [2, 1] {
                let _ = writeln!(
                    out,
                    r#"{{"path":"{path}","version":{version},"created_at":{t},"modified_at":{},"expires_at":null,"value":{{"n":{i},"text":"{}"}},"revision":true}}"#,
                    t + version,
                    "x".repeat(40)
                );
            }
        }
    }
    let _ = writeln!(
        out,
        r#"{{"export":"complete","records":{RECORDS},"skipped":0}}"#
    );
    out
}

fn db(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

#[test]
fn large_round_trip_and_a_killed_import_that_converges() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = large_export();
    assert_eq!(input.lines().count(), RECORDS + 1);
    let file = dir.path().join("in.jsonl");
    std::fs::write(&file, &input).expect("write input");
    let file = file.display().to_string();

    // A clean import, and its export: the input, last line included.
    let a = db(dir.path(), "a.pathdb");
    let out = pathdb(&["--db", &a, "import", &file]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!("imported {RECORDS} records")),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let exported = ok(&["--db", &a, "export"]);
    assert!(exported == input, "the export is not the input");
    // The export imports into another file and exports identically.
    let exported_file = dir.path().join("out.jsonl");
    std::fs::write(&exported_file, &exported).expect("write export");
    let b = db(dir.path(), "b.pathdb");
    ok(&["--db", &b, "import", &exported_file.display().to_string()]);
    assert!(
        ok(&["--db", &b, "export"]) == exported,
        "the copy exports differently"
    );

    // Kill an import half-way (by the file's growth: a third of the clean import's size), then
    // run it again: it finishes what is missing and the result is the same.
    let full_size = std::fs::metadata(&a).expect("a.pathdb").len();
    let c = db(dir.path(), "c.pathdb");
    let mut child = Command::new(env!("CARGO_BIN_EXE_pathdb"))
        .args(["--db", &c, "import", &file])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the importer");
    let deadline = Instant::now() + Duration::from_secs(120);
    while std::fs::metadata(&c).map_or(0, |m| m.len()) < full_size / 3 {
        assert!(
            Instant::now() < deadline,
            "the importer never got a third of the way"
        );
        assert!(
            child.try_wait().expect("importer status").is_none(),
            "the importer finished before it could be killed"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().expect("SIGKILL the importer");
    child.wait().expect("reap the importer");
    let rerun = pathdb(&["--db", &c, "import", &file]);
    let said = String::from_utf8_lossy(&rerun.stderr).into_owned();
    assert!(rerun.status.success(), "{said}");
    // Some records were already there from the killed run; together they are all.
    // "imported N records (U unchanged, S skipped); ...": the number before a word.
    let words: Vec<&str> = said.split_whitespace().collect();
    let count = |word: &str| -> usize {
        let at = words
            .iter()
            .position(|w| w.starts_with(word))
            .unwrap_or_else(|| panic!("no {word:?} in {said:?}"));
        words[at - 1]
            .trim_matches(|c: char| !c.is_ascii_digit())
            .parse()
            .unwrap_or_else(|_| panic!("no count before {word:?} in {said:?}"))
    };
    let (imported, unchanged) = (count("records"), count("unchanged"));
    assert!(unchanged > 0, "the killed run applied nothing: {said}");
    assert_eq!(imported + unchanged, RECORDS, "{said}");
    assert!(
        ok(&["--db", &c, "export"]) == exported,
        "the re-run did not converge"
    );
}

#[test]
fn a_truncated_or_failed_export_is_refused_whole() {
    let dir = tempfile::tempdir().expect("temp dir");
    let a = db(dir.path(), "a.pathdb");
    for id in 1..=3 {
        ok(&["--db", &a, "put", &format!("/t-{id}"), "1"]);
    }
    let exported = ok(&["--db", &a, "export"]);
    let lines: Vec<&str> = exported.lines().collect();
    assert_eq!(
        lines.last(),
        Some(&r#"{"export":"complete","records":3,"skipped":0}"#)
    );
    let b = db(dir.path(), "b.pathdb");
    for (bad, why) in [
        (format!("{}\n{}\n", lines[0], lines[3]), "records"),
        (
            format!(
                "{}\n{}\n",
                lines[0], r#"{"export":"incomplete","records":1,"error":"disk"}"#
            ),
            "incomplete",
        ),
    ] {
        let file = dir.path().join("bad.jsonl");
        std::fs::write(&file, bad).expect("write");
        let message = fails(&["--db", &b, "import", &file.display().to_string()]);
        assert!(message.contains(why), "{message}");
    }
    assert_eq!(
        ok(&["--db", &b, "export"]),
        "{\"export\":\"complete\",\"records\":0,\"skipped\":0}\n",
        "a refused import wrote"
    );
}

#[test]
fn an_export_stream_cut_short_is_an_error() {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    // A server that sends two records and hangs up: no last line.
    let server = std::thread::spawn(move || {
        let (stream, _) = listener.accept().expect("accept");
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let mut line = String::new();
        while reader.read_line(&mut line).expect("request") > 2 {
            line.clear();
        }
        let mut stream = stream;
        let body = concat!(
            r#"{"path":"/t-1","version":1,"created_at":1,"modified_at":1,"expires_at":null,"value":1}"#,
            "\n",
            r#"{"path":"/t-2","version":1,"created_at":1,"modified_at":1,"expires_at":null,"value":1}"#,
            "\n"
        );
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\nconnection: close\r\n\r\n{body}"
        );
    });
    let out = pathdb(&["--server", &format!("http://{addr}"), "export"]);
    server.join().expect("server thread");
    assert_eq!(
        out.status.code(),
        Some(4),
        "a cut export is unavailable data"
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("incomplete"), "{said}");
}

#[test]
fn an_export_into_a_full_disk_is_unavailable() {
    let dir = tempfile::tempdir().expect("temp dir");
    let a = db(dir.path(), "a.pathdb");
    ok(&["--db", &a, "put", "/t-1", "1"]);
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("skipped: no /dev/full here");
        return;
    };
    let out = Command::new(env!("CARGO_BIN_EXE_pathdb"))
        .args(["--db", &a, "export"])
        .stdout(full)
        .output()
        .expect("pathdb runs");
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // And a version 0 is bad input, as over HTTP.
    let zero = pathdb(&["--db", &a, "get", "/t-1", "--version", "0"]);
    assert_eq!(zero.status.code(), Some(2));
}

/// `serve --max-imports 1`: while one import's body is still arriving, a second is refused
/// with 503 and Retry-After before its body is read; once the first ends, imports run again.
/// An import's body is parsed as it arrives, so a bad line is answered with its number.
#[test]
fn imports_at_once_are_capped() {
    use std::io::{Read as _, Write as _};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("imports.pathdb");
    let server = crate::Served::start(&[
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--db",
        db.to_str().unwrap(),
        "--max-imports",
        "1",
    ]);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let import = |body: &str| {
        let mut response = agent
            .post(format!("{}/v1/import", server.url))
            .header("Content-Type", "application/x-ndjson")
            .send(body.to_owned())
            .unwrap();
        let retry_after = response.headers().get("retry-after").is_some();
        let closes = response
            .headers()
            .get("connection")
            .is_some_and(|c| c == "close");
        let body: serde_json::Value = response.body_mut().read_json().unwrap();
        (response.status().as_u16(), body, (retry_after, closes))
    };
    // The first import: headers and one line of a body announced as much longer.
    let line = "{\"path\":\"/imp-1/a-1\",\"value\":1}\n";
    let start_first = || {
        let mut first = std::net::TcpStream::connect(server.addr()).unwrap();
        write!(
            first,
            "POST /v1/import HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\n\
             Content-Length: 1000000\r\n\r\n{line}"
        )
        .unwrap();
        first.flush().unwrap();
        first
            .set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        first
    };
    let mut first = start_first();
    let deadline = Instant::now() + Duration::from_secs(10);
    let (status, body, headers) = loop {
        let answer = import(line);
        // The first request may not have reached the handler yet.
        if answer.0 != 200 || Instant::now() > deadline {
            break answer;
        }
        // Or it came while this probe held the one slot, and was refused: start it again.
        let mut byte = [0u8; 1];
        if first.read(&mut byte).is_ok() {
            first = start_first();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "unavailable", "{body}");
    let (retry_after, closes) = headers;
    assert!(retry_after, "a refused import says when to retry");
    // Its body was never read, so hyper drops the connection after the answer: the answer
    // says so, or this agent would send the next import on a connection already gone (CI
    // saw that failure once).
    assert!(closes, "a refused import closes its connection");
    drop(first);
    // A line no probe above wrote, so that what the import writes shows.
    let after = "{\"path\":\"/imp-1/a-2\",\"value\":2}\n";
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, body, _) = import(after);
        if status == 200 {
            assert_eq!(body["imported"], 1, "{body}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the slot was never given back: {body}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let (status, body, _) = import(&format!("{line}{line}not json\n"));
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("line 3: invalid JSON"),
        "{body}"
    );
}
