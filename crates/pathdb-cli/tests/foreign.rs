//! `--server` pointed at an HTTP server that is not PathDB: every command says so, exit 4,
//! instead of "not found", "an invalid page" or the other server's HTML.

use crate::{fails_with, pathdb};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;

/// A web server that answers every request with `status` and an HTML page, until the test
/// ends (its thread is left blocked in `accept`).
fn html_server(status: &'static str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            // Read the head and any body (Content-Length), then answer and close.
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let page = "<!DOCTYPE html>\n<html><body><h1>Welcome to nginx!</h1></body></html>\n";
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                page.len()
            );
        }
    });
    url
}

#[test]
fn a_server_that_is_not_pathdb_is_named_as_such() {
    for status in ["404 Not Found", "200 OK", "500 Internal Server Error"] {
        let url = html_server(status);
        let commands: [&[&str]; 6] = [
            &["get", "/x-1"],
            &["ls", "/"],
            &["ls", "/x-1"],
            &["put", "/x-1", "1"],
            &["rm", "/x-1"],
            &["export"],
        ];
        for command in commands {
            let stderr = fails_with(4, &[&["--server", url.as_str()][..], command].concat());
            assert!(
                stderr.contains(&format!(
                    "{url} is not a PathDB server (it answered HTTP {}",
                    &status[..3]
                )),
                "{status} {command:?}: {stderr}"
            );
            assert!(stderr.contains("text/html"), "{stderr}");
            assert!(
                stderr.lines().count() == 1,
                "one line, not the page: {stderr}"
            );
        }
    }
}

/// PathDB's own 404 (with its JSON error body) still means not found.
#[test]
fn a_pathdb_not_found_is_still_not_found() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("real.pathdb");
    let server = crate::Served::file(&db);
    let out = pathdb(&["--server", &server.url, "get", "/x-1"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
